/*
 * testagent: a configurable agent for the regress scripts.
 *
 * It answers every request envelope with a finalize reply whose
 * trace.parents names the request, answers heartbeat pings, ignores
 * notices and other kinds, and stops at EOF on stdin.  Options add the
 * misbehaviour a script wants to see supervised:
 *
 *   --record FILE      append "start PID SECONDS" at start (monotonic
 *                      clock), "recv LINE" for every line read, "early N"
 *                      and "connect" around a handshake, "eof" at EOF
 *   --pidfile FILE     write its pid (tool_pid, tool.h) to FILE
 *   --exit N           exit with status N right after starting
 *   --crash-first N    exit 1 at start while FILE (--record) holds at most
 *                      N start lines, i.e. crash in the first N runs
 *   --crash-after N    exit 3 on receiving the Nth request
 *   --die-after MS     exit 1 MS milliseconds after starting
 *   --exit-when FILE   exit 1 once FILE exists (looked for every 20 ms)
 *   --ignore-term      ignore SIGTERM (recording "term" when one comes),
 *                      and keep running after EOF
 *   --linger           keep running after EOF (SIGTERM still kills)
 *   --grandchild FILE  double-fork a grandchild that calls setsid(), puts
 *                      /dev/null on 0-2, writes its pid to FILE and
 *                      sleeps (for --grandchild-life MS, else for ever)
 *   --grandchild-keep  the grandchild keeps the agent's stdout and stderr
 *   --stderr-bytes N   write N bytes to stderr, in 1 KiB lines
 *                      "testagent-flood NNNNN xxx...", before each reply
 *   --stderr-line N    write one N-byte line "testagent-long LLL..." to
 *                      stderr before each reply (after --stderr-bytes)
 *   --oversize N       write an N-byte line and the reply in one write
 *   --fds FILE         list the open descriptors into FILE at start
 *   --env FILE         write the environment into FILE at start
 *   --no-pings         never answer pings
 *   --pause-file FILE  do not answer pings while FILE exists
 *   --handshake MS     wait MS milliseconds, or until an envelope arrives
 *                      before the handshake, record how many arrived
 *                      meanwhile ("early N"), then send map/connect
 *   --hang             read requests but never answer them
 *   --hold-file FILE   keep requests unanswered while FILE exists (looked
 *                      for every 20 ms), then answer them in order; pings
 *                      are answered meanwhile
 *   --reply-text TEXT  the reply's content.text (default "ok AGENT_ID")
 *
 * Pids are as /proc names them (tool_pid in tool.h): namespace pids in
 * corral's pid namespace, which the scripts map to host pids to kill.
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* vasprintf */
#endif

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

/* The handshake frame of --handshake. */
#define CONNECT	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"map/connect\"," \
		"\"params\":{\"name\":\"testagent\"}}\n"

extern char **environ;

static const char	*record_path;
#define record(...)	tool_record(record_path, __VA_ARGS__)
static const char	*pidfile;
static const char	*grandchild_path;
static const char	*fds_path;
static const char	*env_path;
static const char	*pause_path;
static const char	*exit_when;
static const char	*hold_path;
static char		**held;	/* requests kept while hold_path exists */
static size_t		 nheld;
static const char	*reply_text;
static int		 exit_code = -1;
static int		 crash_first = -1;
static long		 crash_after = -1;
static long		 die_after = -1;
static int		 ignore_term;
static int		 linger;
static long		 grandchild_life;
static int		 grandchild_keep;
static long		 stderr_bytes;
static long		 stderr_line;
static long		 oversize;
static int		 no_pings;
static long		 handshake_ms = -1;
static int		 hang;
static long		 requests;
static long		 early;
static int		 connected;
static int		 term_fd = -1;	/* the record file, for on_term */

static char		*inbuf;
static size_t		 inlen, incap;

static void
usage(void)
{
	fprintf(stderr, "usage: testagent [--record FILE] [--pidfile FILE] "
	    "[--exit N] [--crash-first N] [--crash-after N] [--die-after MS] "
	    "[--exit-when FILE] "
	    "[--ignore-term] [--linger] [--grandchild FILE] "
	    "[--grandchild-life MS] [--grandchild-keep] [--stderr-bytes N] "
	    "[--stderr-line N] [--oversize N] [--fds FILE] [--env FILE] [--no-pings] "
	    "[--pause-file FILE] [--handshake MS] [--hang] [--hold-file FILE] "
	    "[--reply-text TEXT]\n");
	exit(64);
}

/* Write "PID\n" to path atomically (through a temporary and rename). */
static void
write_pidfile(const char *path, long pid)
{
	char	tmp[4096], buf[32];
	int	fd, n;

	snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, pid);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1)
		return;
	n = snprintf(buf, sizeof buf, "%ld\n", pid);
	(void)tool_write_all(fd, buf, (size_t)n);
	close(fd);
	(void)rename(tmp, path);
}

/* Count the "start" lines in the record file. */
static int
count_starts(void)
{
	FILE	*f;
	char	 line[8192];
	int	 n = 0;

	if (record_path == NULL || (f = fopen(record_path, "r")) == NULL)
		return 0;
	while (fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, "start ", 6) == 0)
			n++;
	fclose(f);
	return n;
}

/* List our open descriptors ("fd N -> target") into path. */
static void
list_fds(const char *path)
{
	DIR		*d;
	struct dirent	*de;
	FILE		*f;
	char		 p[300], target[4096];
	ssize_t		 n;

	if ((d = opendir("/proc/self/fd")) == NULL)
		return;
	if ((f = fopen(path, "w")) == NULL) {
		closedir(d);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (atoi(de->d_name) == dirfd(d) || atoi(de->d_name) ==
		    fileno(f))
			continue;
		snprintf(p, sizeof p, "/proc/self/fd/%s", de->d_name);
		n = readlink(p, target, sizeof target - 1);
		target[n > 0 ? n : 0] = '\0';
		fprintf(f, "fd %s -> %s\n", de->d_name, target);
	}
	fclose(f);
	closedir(d);
}

/* Write the environment into path, one variable a line. */
static void
dump_env(const char *path)
{
	FILE	*f;
	char	**e;

	if ((f = fopen(path, "w")) == NULL)
		return;
	for (e = environ; *e != NULL; e++)
		fprintf(f, "%s\n", *e);
	fclose(f);
}

/* SIGTERM with --ignore-term: note it and carry on. */
static void
on_term(int sig)
{
	int	save = errno;

	(void)sig;
	if (term_fd != -1)
		(void)write(term_fd, "term\n", 5);
	errno = save;
}

/* Start a detached grandchild in its own session. */
static void
spawn_grandchild(void)
{
	pid_t	pid, gc;
	int	fd, st;

	if ((pid = fork()) == -1)
		return;
	if (pid == 0) {
		if (ignore_term)
			signal(SIGTERM, SIG_IGN);
		if (setsid() == -1)
			_exit(1);
		if ((gc = fork()) != 0)
			_exit(gc == -1);
		/* The grandchild. */
		if ((fd = open("/dev/null", O_RDWR)) != -1) {
			dup2(fd, 0);
			if (!grandchild_keep) {
				dup2(fd, 1);
				dup2(fd, 2);
			}
			if (fd > 2)
				close(fd);
		}
		write_pidfile(grandchild_path, tool_pid());
		if (grandchild_life > 0) {
			tool_msleep(grandchild_life);
			_exit(0);
		}
		for (;;)
			pause();
	}
	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
}

/* Find the string value of "key":"..." after p, up to end; copy to out. */
static int
find_string(const char *p, const char *end, const char *key, char *out,
    size_t outlen)
{
	size_t		 kl = strlen(key), i;
	const char	*q;

	for (q = p; q + kl < end; q++) {
		if (memcmp(q, key, kl) != 0)
			continue;
		q += kl;
		for (i = 0; q < end && *q != '"' && i + 1 < outlen; q++)
			out[i++] = *q;
		out[i] = '\0';
		return 0;
	}
	return -1;
}

/* The request's trace.id, or "" when it has none. */
static void
trace_id(const char *line, char *out, size_t outlen)
{
	const char	*t, *end;
	int		 depth = 0;

	out[0] = '\0';
	if ((t = strstr(line, "\"trace\":{")) == NULL)
		return;
	/* The end of the trace object. */
	for (end = t + 8; *end != '\0'; end++) {
		if (*end == '{')
			depth++;
		else if (*end == '}' && --depth == 0)
			break;
	}
	(void)find_string(t, end, "\"id\":\"", out, outlen);
}

/* Write the reply to a request, with whatever comes before it. */
static void
reply(const char *line)
{
	char	 id[128], text[256], *buf, *p;
	size_t	 cap, len = 0;
	long	 i, n;
	const char *aid = getenv("CORRAL_AGENT_ID");

	trace_id(line, id, sizeof id);
	if (stderr_bytes > 0) {
		char	l[1024];

		/* 1 KiB lines: 22 bytes of header, padding, newline. */
		for (i = 0, n = 0; n < stderr_bytes; i++) {
			size_t ll = sizeof l;

			if ((long)ll > stderr_bytes - n)
				ll = (size_t)(stderr_bytes - n);
			memset(l, 'x', ll);
			snprintf(text, sizeof text, "testagent-flood %05ld ", i);
			memcpy(l, text, strlen(text) < ll ? strlen(text) : ll);
			l[ll - 1] = '\n';
			if (tool_write_all(2, l, ll) == -1)
				break;
			n += (long)ll;
		}
	}
	if (stderr_line > 0) {
		char	*l;

		if ((l = malloc((size_t)stderr_line + 1)) == NULL)
			exit(70);
		memset(l, 'L', (size_t)stderr_line);
		memcpy(l, "testagent-long ", stderr_line > 15 ? 15 :
		    (size_t)stderr_line);
		l[stderr_line] = '\n';
		(void)tool_write_all(2, l, (size_t)stderr_line + 1);
		free(l);
	}
	snprintf(text, sizeof text, "%s", reply_text != NULL ? reply_text :
	    "ok");
	cap = 1024 + (oversize > 0 ? (size_t)oversize : 0);
	if ((buf = malloc(cap)) == NULL)
		exit(70);
	if (oversize > 0) {
		static const char head[] = "{\"protocol\":\"multiagent-1.0\","
		    "\"role\":\"agent\",\"intent\":\"finalize\",\"task\":"
		    "\"oversized\",\"content\":{\"type\":\"text\",\"text\":\"";
		static const char tail[] = "\"}}\n";
		long fill = oversize - (long)(sizeof head - 1) -
		    (long)(sizeof tail - 2);

		p = buf;
		memcpy(p, head, sizeof head - 1);
		p += sizeof head - 1;
		if (fill > 0) {
			memset(p, 'O', (size_t)fill);
			p += fill;
		}
		memcpy(p, tail, sizeof tail - 1);
		p += sizeof tail - 1;
		len = (size_t)(p - buf);
	}
	n = snprintf(buf + len, cap - len, "{\"protocol\":\"multiagent-1.0\","
	    "\"role\":\"agent\",\"intent\":\"finalize\",\"task\":\"reply\","
	    "\"content\":{\"type\":\"text\",\"text\":\"%s %s\"},"
	    "\"confidence\":{\"score\":0.9}", text, aid != NULL ? aid : "?");
	len += (size_t)n;
	if (id[0] != '\0')
		n = snprintf(buf + len, cap - len, ",\"trace\":{\"parents\":"
		    "[\"%s\"]}}\n", id);
	else
		n = snprintf(buf + len, cap - len, "}\n");
	len += (size_t)n;
	if (tool_write_all(1, buf, len) == -1)
		exit(0);
	free(buf);
}

/* Answer a JSON-RPC frame: pings only, unless paused or told not to. */
static void
control(const char *line)
{
	char	out[160];
	int	n;

	if (no_pings || (pause_path != NULL && access(pause_path, F_OK) == 0))
		return;
	if ((n = tool_ping_response(line, out, sizeof out)) > 0 &&
	    tool_write_all(1, out, (size_t)n) == -1)
		exit(0);
}

/* Handle one line read on stdin. */
static void
handle(const char *line)
{
	record("recv %s", line);
	if (*line == '\0')
		return;
	if (strstr(line, "\"jsonrpc\"") != NULL) {
		control(line);
		return;
	}
	if (!connected)
		early++;
	if (strstr(line, "\"kind\":\"") != NULL &&
	    (strstr(line, "\"kind\":\"notice\"") != NULL ||
	    strstr(line, "\"kind\":\"message\"") != NULL ||
	    strstr(line, "\"kind\":\"child_result\"") != NULL))
		return;
	requests++;
	if (crash_after > 0 && requests >= crash_after) {
		record("crash");
		exit(3);
	}
	if (hang)
		return;
	if (hold_path != NULL && access(hold_path, F_OK) == 0) {
		if ((held = realloc(held, (nheld + 1) * sizeof *held)) == NULL ||
		    (held[nheld] = strdup(line)) == NULL)
			exit(70);
		nheld++;
		return;
	}
	reply(line);
}

/* Answer the held requests, in order, once the hold file is gone. */
static void
release_held(void)
{
	size_t	i;

	if (nheld == 0 || access(hold_path, F_OK) == 0)
		return;
	for (i = 0; i < nheld; i++) {
		reply(held[i]);
		free(held[i]);
	}
	nheld = 0;
}

/* Read what is available on stdin and handle the complete lines. */
static int
read_some(void)
{
	ssize_t	 n;
	char	*nl, *start;

	if (incap - inlen < 65536) {
		incap = incap ? incap * 2 : 131072;
		if ((inbuf = realloc(inbuf, incap)) == NULL)
			exit(70);
	}
	n = read(0, inbuf + inlen, incap - inlen - 1);
	if (n == -1)
		return errno == EINTR || errno == EAGAIN ? 1 : 0;
	if (n == 0)
		return 0;
	inlen += (size_t)n;
	start = inbuf;
	while ((nl = memchr(start, '\n', inlen - (size_t)(start - inbuf))) !=
	    NULL) {
		*nl = '\0';
		handle(start);
		start = nl + 1;
	}
	inlen -= (size_t)(start - inbuf);
	memmove(inbuf, start, inlen);
	return 1;
}

int
main(int argc, char **argv)
{
	struct pollfd	 pfd;
	double		 until;
	long		 hp;
	int		 i, left;
	const char	*o;

	for (i = 1; i < argc; i++) {
		o = argv[i];
#define ARG() (i + 1 < argc ? argv[++i] : (usage(), (char *)NULL))
		if (strcmp(o, "--record") == 0)
			record_path = ARG();
		else if (strcmp(o, "--pidfile") == 0)
			pidfile = ARG();
		else if (strcmp(o, "--exit") == 0)
			exit_code = atoi(ARG());
		else if (strcmp(o, "--crash-first") == 0)
			crash_first = atoi(ARG());
		else if (strcmp(o, "--crash-after") == 0)
			crash_after = atol(ARG());
		else if (strcmp(o, "--die-after") == 0)
			die_after = atol(ARG());
		else if (strcmp(o, "--exit-when") == 0)
			exit_when = ARG();
		else if (strcmp(o, "--ignore-term") == 0)
			ignore_term = 1;
		else if (strcmp(o, "--linger") == 0)
			linger = 1;
		else if (strcmp(o, "--grandchild") == 0)
			grandchild_path = ARG();
		else if (strcmp(o, "--grandchild-life") == 0)
			grandchild_life = atol(ARG());
		else if (strcmp(o, "--grandchild-keep") == 0)
			grandchild_keep = 1;
		else if (strcmp(o, "--stderr-bytes") == 0)
			stderr_bytes = atol(ARG());
		else if (strcmp(o, "--stderr-line") == 0)
			stderr_line = atol(ARG());
		else if (strcmp(o, "--oversize") == 0)
			oversize = atol(ARG());
		else if (strcmp(o, "--fds") == 0)
			fds_path = ARG();
		else if (strcmp(o, "--env") == 0)
			env_path = ARG();
		else if (strcmp(o, "--no-pings") == 0)
			no_pings = 1;
		else if (strcmp(o, "--pause-file") == 0)
			pause_path = ARG();
		else if (strcmp(o, "--handshake") == 0)
			handshake_ms = atol(ARG());
		else if (strcmp(o, "--hang") == 0)
			hang = 1;
		else if (strcmp(o, "--hold-file") == 0)
			hold_path = ARG();
		else if (strcmp(o, "--reply-text") == 0)
			reply_text = ARG();
		else
			usage();
	}

	/* Before anything else can open a descriptor. */
	if (fds_path != NULL)
		list_fds(fds_path);
	hp = tool_pid();
	record("start %ld %.6f", hp, tool_mono());
	if (pidfile != NULL)
		write_pidfile(pidfile, hp);
	if (env_path != NULL)
		dump_env(env_path);
	if (ignore_term) {
		struct sigaction sa;

		if (record_path != NULL)
			term_fd = open(record_path, O_WRONLY | O_CREAT |
			    O_APPEND | O_CLOEXEC, 0600);
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_term;
		sigemptyset(&sa.sa_mask);
		sa.sa_flags = SA_RESTART;
		sigaction(SIGTERM, &sa, NULL);
	}
	if (exit_code >= 0)
		exit(exit_code);
	if (crash_first >= 0 && count_starts() <= crash_first) {
		record("crash");
		exit(1);
	}
	if (grandchild_path != NULL)
		spawn_grandchild();

	connected = handshake_ms < 0;
	if (handshake_ms >= 0) {
		/* Anything corral sends before our map/connect is early. */
		until = tool_mono() + (double)handshake_ms / 1000;
		while ((left = (int)((until - tool_mono()) * 1000)) > 0) {
			pfd.fd = 0;
			pfd.events = POLLIN;
			if (poll(&pfd, 1, left) == 1 && !read_some())
				break;
			if (early > 0)
				break;	/* seen: no need to wait longer */
		}
		record("early %ld", early);
		connected = 1;
		record("connect");
		if (tool_write_all(1, CONNECT, sizeof CONNECT - 1) == -1)
			exit(0);
	}

	until = die_after >= 0 ? tool_mono() + (double)die_after / 1000 : 0;
	for (;;) {
		pfd.fd = 0;
		pfd.events = POLLIN;
		left = -1;
		if (die_after >= 0) {
			left = (int)((until - tool_mono()) * 1000);
			if (left <= 0) {
				record("die");
				exit(1);
			}
		}
		if (exit_when != NULL) {
			if (access(exit_when, F_OK) == 0) {
				record("die");
				exit(1);
			}
			if (left < 0 || left > 20)
				left = 20;
		}
		if (hold_path != NULL) {
			release_held();
			if (left < 0 || left > 20)
				left = 20;
		}
		if (poll(&pfd, 1, left) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd.revents == 0)
			continue;
		if (!read_some())
			break;
	}
	record("eof");
	if (ignore_term || linger)
		for (;;)
			pause();
	return 0;
}
