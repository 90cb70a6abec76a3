/*
 * relagent: a misbehaving agent for the rel-* regress scripts.
 *
 * It reads and writes at the same time (one poll loop, non-blocking
 * output queue), so it can flood corral while corral answers it with
 * notices.  What it does with a request depends on the request's task:
 *
 *   ok (or anything else)  reply at once: a finalize envelope whose
 *                          trace.parents names the request
 *   sleep:MS               reply after MS milliseconds
 *   wait:FILE              reply once FILE exists (looked for every 20 ms),
 *                          so a script holds the agent busy until it has
 *                          seen what it waits for
 *   hang                   never reply
 *   crash                  exit 3 at once
 *   crash-once:FILE        exit 3 if FILE does not exist yet (creating it),
 *                          else reply
 *   exit:N                 exit N at once
 *   dup                    reply twice
 *   invalid                write every line of the hostile catalogue
 *                          (relcat.h), then reply
 *   garbage:N              write N random bytes (newlines among them),
 *                          then a newline and the reply
 *   big:N                  write a line of N bytes, then the reply
 *   endless                write 'a' for ever without a newline
 *   endless:N              write N bytes without a newline, then a
 *                          newline and the reply
 *   flood:N                write N lines "{}", then the reply
 *   flood-deaf:N           write N lines "{}", then stop reading stdin
 *                          (and never reply)
 *   closeout               close stdout, keep running and reading
 *   deaf                   stop reading stdin (and never reply)
 *   script                 write the next line of --script FILE, with
 *                          @ID@ replaced by the request's trace.id
 *
 * Options:
 *   --record FILE   append "start PID AGENT", "req AGENT ID TASK
 *                   RETRY", "notice AGENT CODE", "crash AGENT", "eof
 *                   AGENT" lines (one write each, O_APPEND)
 *   --dump DIR      at start, copy /proc/self/{status,limits,stat} and the
 *                   environment into DIR, and its pid into DIR/pid
 *   --script FILE   replies for the "script" task, one a line
 *   --deaf          never read stdin at all
 *   --read-rate B   read stdin at about B bytes a second at most (a slow
 *                   consumer, for backpressure)
 *   --linger        keep running after EOF on stdin
 *   --no-pings      do not answer heartbeat pings
 *
 * Pids are as /proc names them (tool_pid in tool.h), as in testagent.
 */

#include <sys/stat.h>
#include <sys/types.h>

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

#include "relcat.h"

#include "tool.h"

extern char **environ;

struct chunk {
	struct chunk	*next;
	char		*data;		/* NULL: a fill of byte */
	size_t		 len, off;
	long long	 fill;		/* bytes left to fill; -1 for ever */
	char		 byte;
	int		 garbage;
};

struct timer {
	double	 due;
	char	 id[128];
	char	 path[512];	/* "wait:": reply once this exists */
};

static const char	*record_path;
static const char	*dump_dir;
static const char	*script_path;
static FILE		*script;
static int		 deaf, linger, no_pings;
static double		 read_rate;
static double		 read_start;
static double		 read_total;
static const char	*aid = "?";
static long		 selfpid;

static struct chunk	*qhead, *qtail;
static struct timer	 timers[1024];
static size_t		 ntimers;
static char		*inbuf;
static size_t		 inlen, incap;
static int		 out_closed;
static unsigned int	 gseed = 7;

static void
usage(void)
{
	fprintf(stderr, "usage: relagent [--record FILE] [--dump DIR] "
	    "[--script FILE] [--deaf] [--read-rate BYTES] [--linger] "
	    "[--no-pings]\n");
	exit(64);
}

/*
 * Append one line to the record file.  Lines are buffered and written
 * whole (O_APPEND) when the agent is about to wait, when the buffer is
 * full, and at exit, so a flood of notices does not cost a write each.
 */
static char	recbuf[65536];
static size_t	reclen;
static int	recfd = -1;

static void
record_flush(void)
{
	if (reclen == 0 || recfd == -1)
		return;
	if (write(recfd, recbuf, reclen) == -1)
		recfd = -1;	/* give up recording */
	reclen = 0;
}

static void __attribute__((format(printf, 1, 2)))
record(const char *fmt, ...)
{
	va_list		ap;
	char		buf[1024];
	int		n;

	if (record_path == NULL)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof buf - 2)
		n = (int)sizeof buf - 2;
	buf[n++] = '\n';
	if (recfd == -1 && (recfd = open(record_path, O_WRONLY | O_CREAT |
	    O_APPEND | O_CLOEXEC, 0600)) == -1)
		return;
	if (reclen + (size_t)n > sizeof recbuf)
		record_flush();
	memcpy(recbuf + reclen, buf, (size_t)n);
	reclen += (size_t)n;
}

/* Copy a file into DIR/name. */
static void
copy_file(const char *from, const char *name)
{
	char	path[4096], buf[65536];
	ssize_t	n;
	int	in, o;

	snprintf(path, sizeof path, "%s/%s", dump_dir, name);
	if ((in = open(from, O_RDONLY | O_CLOEXEC)) == -1)
		return;
	if ((o = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) ==
	    -1) {
		close(in);
		return;
	}
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(o, buf, (size_t)n) != n)
			break;
	close(in);
	close(o);
}

/* Write what the process looks like from inside into dump_dir. */
static void
dump(void)
{
	char	path[4096];
	FILE	*f;
	char	**e;

	copy_file("/proc/self/status", "status.tmp");
	copy_file("/proc/self/limits", "limits.tmp");
	copy_file("/proc/self/stat", "stat.tmp");
	snprintf(path, sizeof path, "%s/env.tmp", dump_dir);
	if ((f = fopen(path, "w")) != NULL) {
		for (e = environ; *e != NULL; e++)
			fprintf(f, "%s\n", *e);
		fclose(f);
	}
	snprintf(path, sizeof path, "%s/pid.tmp", dump_dir);
	if ((f = fopen(path, "w")) != NULL) {
		fprintf(f, "%ld\n", selfpid);
		fclose(f);
	}
	/* Publish each file whole. */
	{
		static const char *names[] = { "status", "limits", "stat",
		    "env", "pid", NULL };
		char	from[4096];
		int	i;

		for (i = 0; names[i] != NULL; i++) {
			snprintf(from, sizeof from, "%s/%s.tmp", dump_dir,
			    names[i]);
			snprintf(path, sizeof path, "%s/%s", dump_dir,
			    names[i]);
			(void)rename(from, path);
		}
	}
}

/* Queue bytes (copied) for stdout. */
static void
queue_bytes(const char *data, size_t len)
{
	struct chunk	*c;

	if (out_closed || len == 0)
		return;
	if ((c = calloc(1, sizeof *c)) == NULL || (c->data = malloc(len)) ==
	    NULL)
		exit(70);
	memcpy(c->data, data, len);
	c->len = len;
	if (qtail != NULL)
		qtail->next = c;
	else
		qhead = c;
	qtail = c;
}

/* Queue a fill of n bytes of b (n -1: for ever), or random garbage. */
static void
queue_fill(char b, long long n, int garbage)
{
	struct chunk	*c;

	if (out_closed)
		return;
	if ((c = calloc(1, sizeof *c)) == NULL)
		exit(70);
	c->byte = b;
	c->fill = n;
	c->garbage = garbage;
	if (qtail != NULL)
		qtail->next = c;
	else
		qhead = c;
	qtail = c;
}

/* Write what stdout takes now. */
static void
flush_some(void)
{
	static char	fillbuf[65536];
	struct chunk	*c;
	ssize_t		 n;
	size_t		 want, i;

	while ((c = qhead) != NULL) {
		if (c->data != NULL) {
			n = write(1, c->data + c->off, c->len - c->off);
		} else {
			want = sizeof fillbuf;
			if (c->fill >= 0 && (long long)want > c->fill)
				want = (size_t)c->fill;
			if (want == 0)
				n = 0;
			else if (c->garbage) {
				for (i = 0; i < want; i++) {
					gseed = gseed * 1103515245u + 12345u;
					fillbuf[i] = (char)((gseed >> 16) &
					    0xff);
				}
				n = write(1, fillbuf, want);
			} else {
				memset(fillbuf, c->byte, want);
				n = write(1, fillbuf, want);
			}
		}
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			exit(0);	/* corral is gone */
		}
		if (c->data != NULL) {
			c->off += (size_t)n;
			if (c->off < c->len)
				continue;
		} else {
			if (c->fill > 0)
				c->fill -= n;
			if (c->fill != 0)
				continue;
		}
		qhead = c->next;
		if (qhead == NULL)
			qtail = NULL;
		free(c->data);
		free(c);
	}
}

/* Find "key":"value" at or after p and copy value to out. */
static int
find_str(const char *p, const char *key, char *out, size_t outlen)
{
	const char	*q;
	size_t		 i;

	if ((q = strstr(p, key)) == NULL)
		return -1;
	q += strlen(key);
	for (i = 0; *q != '\0' && *q != '"' && i + 1 < outlen; q++)
		out[i++] = *q;
	out[i] = '\0';
	return 0;
}

/* The request's trace.id. */
static void
trace_id(const char *line, char *out, size_t outlen)
{
	const char	*t;

	out[0] = '\0';
	if ((t = strstr(line, "\"trace\":{")) != NULL)
		(void)find_str(t, "\"id\":\"", out, outlen);
}

static void
reply(const char *id)
{
	char	buf[1024];
	int	n;

	n = snprintf(buf, sizeof buf, "{\"protocol\":\"multiagent-1.0\","
	    "\"role\":\"agent\",\"intent\":\"finalize\",\"task\":\"reply\","
	    "\"content\":{\"type\":\"text\",\"text\":\"ok %s\"},"
	    "\"confidence\":{\"score\":0.9}", aid);
	if (id[0] != '\0')
		n += snprintf(buf + n, sizeof buf - (size_t)n, ",\"trace\":"
		    "{\"parents\":[\"%s\"]}}\n", id);
	else
		n += snprintf(buf + n, sizeof buf - (size_t)n, "}\n");
	queue_bytes(buf, (size_t)n);
}

/* Write the next line of the script, @ID@ replaced by id. */
static void
script_reply(const char *id)
{
	char	*line = NULL, *p, *at;
	size_t	 cap = 0;
	ssize_t	 n;

	if (script == NULL && (script_path == NULL ||
	    (script = fopen(script_path, "r")) == NULL)) {
		reply(id);
		return;
	}
	if ((n = getline(&line, &cap, script)) <= 0) {
		free(line);
		reply(id);
		return;
	}
	for (p = line; (at = strstr(p, "@ID@")) != NULL; p = at + 4) {
		queue_bytes(p, (size_t)(at - p));
		queue_bytes(id, strlen(id));
	}
	queue_bytes(p, strlen(p));
	if (n > 0 && line[n - 1] != '\n')
		queue_bytes("\n", 1);
	free(line);
}

/* Reply to id after some seconds, or once path exists (if not NULL). */
static void
add_timer(double after, const char *id, const char *path)
{
	if (ntimers == sizeof timers / sizeof timers[0])
		return;
	timers[ntimers].due = tool_mono() + after;
	snprintf(timers[ntimers].id, sizeof timers[ntimers].id, "%s", id);
	snprintf(timers[ntimers].path, sizeof timers[ntimers].path, "%s",
	    path != NULL ? path : "");
	ntimers++;
}

/* Answer a ping. */
static void
control(const char *line)
{
	char	out[160];
	int	n;

	if (!no_pings && (n = tool_ping_response(line, out, sizeof out)) > 0)
		queue_bytes(out, (size_t)n);
}

/* Handle one request according to its task. */
static void
request(const char *line)
{
	char		 id[128], task[512], retry[32] = "0", *arg;
	const char	*r;
	size_t		 i;
	int		 fd;

	trace_id(line, id, sizeof id);
	if (find_str(line, "\"task\":\"", task, sizeof task) != 0)
		snprintf(task, sizeof task, "ok");
	if ((r = strstr(line, "\"retry_count\":")) != NULL)
		snprintf(retry, sizeof retry, "%ld", strtol(r + 14, NULL, 10));
	record("req %s %s %s %s", aid, id[0] ? id : "-", task, retry);
	arg = strchr(task, ':');
	if (arg != NULL)
		*arg++ = '\0';
	if (strcmp(task, "sleep") == 0 && arg != NULL)
		add_timer(atof(arg) / 1000.0, id, NULL);
	else if (strcmp(task, "wait") == 0 && arg != NULL)
		add_timer(0, id, arg);
	else if (strcmp(task, "hang") == 0)
		;
	else if (strcmp(task, "crash") == 0) {
		record("crash %s", aid);
		exit(3);
	} else if (strcmp(task, "crash-once") == 0 && arg != NULL) {
		if ((fd = open(arg, O_WRONLY | O_CREAT | O_EXCL, 0600)) != -1) {
			close(fd);
			record("crash %s", aid);
			exit(3);
		}
		reply(id);
	} else if (strcmp(task, "exit") == 0 && arg != NULL)
		exit(atoi(arg));
	else if (strcmp(task, "dup") == 0) {
		reply(id);
		reply(id);
	} else if (strcmp(task, "invalid") == 0) {
		relcat_init();
		for (i = 0; i < relcat_n; i++) {
			queue_bytes(relcat[i].data, relcat[i].len);
			queue_bytes("\n", 1);
		}
		reply(id);
	} else if (strcmp(task, "garbage") == 0 && arg != NULL) {
		queue_fill(0, atoll(arg), 1);
		queue_bytes("\n", 1);
		reply(id);
	} else if (strcmp(task, "big") == 0 && arg != NULL) {
		queue_fill('a', atoll(arg), 0);
		queue_bytes("\n", 1);
		reply(id);
	} else if (strcmp(task, "endless") == 0) {
		if (arg == NULL)
			queue_fill('a', -1, 0);
		else {
			queue_fill('a', atoll(arg), 0);
			queue_bytes("\n", 1);
			reply(id);
		}
	} else if ((strcmp(task, "flood") == 0 ||
	    strcmp(task, "flood-deaf") == 0) && arg != NULL) {
		long	n = atol(arg), k;
		char	*b;

		if ((b = malloc((size_t)n * 3 + 1)) == NULL)
			exit(70);
		for (k = 0; k < n; k++)
			memcpy(b + k * 3, "{}\n", 3);
		queue_bytes(b, (size_t)n * 3);
		free(b);
		if (strcmp(task, "flood-deaf") == 0) {
			record("deaf %s", aid);
			deaf = 1;
		} else
			reply(id);
	} else if (strcmp(task, "closeout") == 0) {
		record("closeout %s", aid);
		close(1);
		out_closed = 1;
	} else if (strcmp(task, "deaf") == 0) {
		record("deaf %s", aid);
		deaf = 1;
	} else if (strcmp(task, "script") == 0)
		script_reply(id);
	else
		reply(id);
}

/* Handle one line read on stdin. */
static void
handle(const char *line)
{
	char	code[64];

	if (*line == '\0')
		return;
	if (strstr(line, "\"jsonrpc\"") != NULL) {
		control(line);
		return;
	}
	if (strstr(line, "\"kind\":\"notice\"") != NULL) {
		if (find_str(line, "\"code\":\"", code, sizeof code) != 0)
			snprintf(code, sizeof code, "?");
		record("notice %s %s", aid, code);
		return;
	}
	if (strstr(line, "\"kind\":\"message\"") != NULL ||
	    strstr(line, "\"kind\":\"child_result\"") != NULL)
		return;
	request(line);
}

/* Read what stdin has; returns 0 at EOF. */
static int
read_some(void)
{
	ssize_t	 n;
	char	*nl, *start;

	size_t	 want;

	if (incap - inlen < 65536) {
		incap = incap ? incap * 2 : 131072;
		if ((inbuf = realloc(inbuf, incap)) == NULL)
			exit(70);
	}
	want = incap - inlen - 1;
	if (read_rate > 0) {
		/* At most 16 KiB a read, no faster than read_rate on average. */
		double	due = read_start + read_total / read_rate, d;

		if ((d = due - tool_mono()) > 0) {
			struct timespec ts = { (time_t)d,
			    (long)((d - (double)(time_t)d) * 1e9) };
			nanosleep(&ts, NULL);
		}
		if (want > 16384)
			want = 16384;
	}
	n = read(0, inbuf + inlen, want);
	if (n > 0)
		read_total += (double)n;
	if (n == -1)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return 0;
	inlen += (size_t)n;
	start = inbuf;
	while ((nl = memchr(start, '\n', inlen - (size_t)(start - inbuf))) !=
	    NULL) {
		*nl = '\0';
		handle(start);
		if (deaf)
			return 1;
		start = nl + 1;
	}
	inlen -= (size_t)(start - inbuf);
	memmove(inbuf, start, inlen);
	return 1;
}

int
main(int argc, char **argv)
{
	struct pollfd	 pfd[2];
	double		 now;
	size_t		 i;
	int		 n, timeout, eof = 0;
	const char	*e;

	for (n = 1; n < argc; n++) {
		if (strcmp(argv[n], "--record") == 0 && n + 1 < argc)
			record_path = argv[++n];
		else if (strcmp(argv[n], "--dump") == 0 && n + 1 < argc)
			dump_dir = argv[++n];
		else if (strcmp(argv[n], "--script") == 0 && n + 1 < argc)
			script_path = argv[++n];
		else if (strcmp(argv[n], "--deaf") == 0)
			deaf = 1;
		else if (strcmp(argv[n], "--read-rate") == 0 && n + 1 < argc)
			read_rate = atof(argv[++n]);
		else if (strcmp(argv[n], "--linger") == 0)
			linger = 1;
		else if (strcmp(argv[n], "--no-pings") == 0)
			no_pings = 1;
		else
			usage();
	}
	if ((e = getenv("CORRAL_AGENT_ID")) != NULL)
		aid = e;
	selfpid = tool_pid();
	read_start = tool_mono();
	if (dump_dir != NULL)
		dump();
	atexit(record_flush);
	record("start %ld %s", selfpid, aid);
	record_flush();
	(void)fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);

	for (;;) {
		now = tool_mono();
		for (i = 0; i < ntimers;) {
			if (timers[i].due <= now && timers[i].path[0] != '\0' &&
			    access(timers[i].path, F_OK) != 0) {
				timers[i].due = now + 0.02;	/* look again */
				i++;
			} else if (timers[i].due <= now) {
				reply(timers[i].id);
				timers[i] = timers[--ntimers];
			} else
				i++;
		}
		flush_some();
		if (eof && qhead == NULL && !linger) {
			record("eof %s", aid);
			return 0;
		}
		timeout = -1;
		for (i = 0; i < ntimers; i++) {
			int ms = (int)((timers[i].due - now) * 1000) + 1;
			if (timeout < 0 || ms < timeout)
				timeout = ms;
		}
		pfd[0].fd = (deaf || eof) ? -1 : 0;
		pfd[0].events = POLLIN;
		pfd[1].fd = qhead != NULL && !out_closed ? 1 : -1;
		pfd[1].events = POLLOUT;
		if (pfd[0].fd == -1 && pfd[1].fd == -1 && timeout < 0)
			timeout = 1000;
		record_flush();
		if (poll(pfd, 2, timeout) == -1) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (pfd[0].fd != -1 && (pfd[0].revents & (POLLIN | POLLHUP |
		    POLLERR)) && !read_some())
			eof = 1;
	}
}
