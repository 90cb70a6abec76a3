/*
 * The far end of a launched agent: corral host runs the agent's command
 * on the machine a launcher (ssh, srun, a container engine) reached, and
 * keeps there the promises corral keeps for a local agent.
 *
 *   corral (local) -- ssh -T beta -- corral host -- ./agent   (on beta)
 *
 * It runs the command in a pid namespace of its own where it can (the
 * same waiter and init as corral's, pidns.c), and relays its three pipes.
 * The relay is what lets it notice that corral is gone: a launcher's
 * client killed with SIGKILL may leave the far end running (podman's
 * conmon and Slurm's step daemon keep the pipes open; ssh leaves a
 * command that ignores EOF running), so it listens to the link itself:
 *
 * - corral writes a keepalive line, one byte 0x1e and a newline, on the
 *   agent's stdin every interval; corral host drops it.  No byte for the
 *   lost time (-x) while corral host reads means the link or corral is
 *   gone.  While the agent does not read its stdin, corral host stops
 *   reading too (backpressure), and the clock stops with it.
 * - it writes its own lines on stderr, each beginning with 0x1e: hello
 *   (where the agent runs) at the start, tick every interval (-a), bye
 *   (how the agent ended) at the end.  A line of the agent's own stderr
 *   that begins with 0x1e gets a '?' instead, so none can be forged.
 *
 * The agent's stdin at EOF is corral's stop: the agent's stdin closes,
 * and SIGTERM follows after the grace (-g), SIGKILL after the timeout
 * (-t), as corral's own stop sequence does, whether or not corral is
 * still there to escalate.  A lost link sends SIGTERM at once and
 * SIGKILL after the timeout.  When the agent's process ends, whatever
 * it left holding its pipes is killed after the grace.  Then every
 * process of the namespace dies with corral host.
 */

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "corral.h"

#define HOST_BUF	(256 * 1024)
#define HOST_ERRLINE	4096
#define HOST_MARK	HOST_LINK_MARK

/* Bytes on their way from one descriptor to another. */
struct host_buf {
	char	*b;
	size_t	 len;
	size_t	 cap;
};

static struct {
	const struct host_opts	*o;
	pid_t			 cmd;		/* the agent; 0 once reaped */
	int			 status;
	int			 reaped;
	int			 in, cin, cout, cerr;	/* -1: closed */
	int			 out, err;	/* our stdout, stderr */
	int			 sigfd;
	struct host_buf		 tocmd, toout, toerr;
	char			 line[HOST_ERRLINE];	/* the agent's partial */
	size_t			 linelen;		/* stderr line */
	int			 in_start;	/* stdin at a line's start */
	int			 in_drop;	/* in a keepalive line */
	int			 in_eof;
	int			 pidns;		/* init of our namespace */
	pid_t			 waiter;	/* ours, outside it; 0: none */
	int			 killed;	/* SIGKILL sent after the end */
	char			*lost;		/* why the link is gone */
	double			 last_in;
	double			 next_tick;
	double			 term_at;	/* 0: not due */
	double			 kill_at;
} h;

/* Seconds on the monotonic clock. */
static double
host_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Append bytes to a buffer (the caller checked the room). */
static void
host_put(struct host_buf *b, const char *s, size_t n)
{
	if (b->b == NULL)
		b->b = xmalloc(b->cap);
	if (n > b->cap - b->len)
		n = b->cap - b->len;
	memcpy(b->b + b->len, s, n);
	b->len += n;
}

/* Room left in a buffer. */
static size_t
host_room(const struct host_buf *b)
{
	return b->cap - b->len;
}

/*
 * A line of corral host's own on stderr (mark, then the text), when the
 * buffer has room: the agent's partial line is ended first.
 */
static void
host_say(const char *s, size_t n)
{
	if (h.err == -1 || h.lost != NULL || host_room(&h.toerr) < n +
	    HOST_ERRLINE + 3)
		return;
	if (h.linelen > 0) {
		host_put(&h.toerr, h.line, h.linelen);
		host_put(&h.toerr, "\n", 1);
		h.linelen = 0;
	}
	host_put(&h.toerr, &(char){ HOST_MARK }, 1);
	host_put(&h.toerr, s, n);
	host_put(&h.toerr, "\n", 1);
}

/* Write what a descriptor takes; -1 when it is broken. */
static int
host_flush(int fd, struct host_buf *b)
{
	ssize_t	n;

	while (b->len > 0) {
		n = write(fd, b->b, b->len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			return -1;
		memmove(b->b, b->b + n, b->len - (size_t)n);
		b->len -= (size_t)n;
	}
	return 0;
}

/* Close a descriptor we own and mark it closed. */
static void
host_close(int *fd)
{
	if (*fd != -1) {
		close(*fd);
		*fd = -1;
	}
}

/*
 * Signal the agent and everything it started: every process of our
 * namespace, or, without one, the agent's process group (what left it is
 * swept at the end).
 */
static void
host_signal_all(int sig)
{
	/* -1 is every process but us: only ever as init of our own. */
	if (h.pidns && getpid() == 1)
		(void)kill(-1, sig);
	else if (h.cmd > 0)
		(void)kill(-h.cmd, sig);
}

/* SIGTERM (and SIGCONT) now, SIGKILL after the timeout. */
static void
host_terminate(double now)
{
	host_signal_all(SIGTERM);
	host_signal_all(SIGCONT);
	h.term_at = 0;
	if (h.kill_at == 0 || h.kill_at > now + h.o->timeout)
		h.kill_at = now + h.o->timeout;
}

/*
 * corral is gone, or cannot be reached: nobody reads the agent's output
 * any more.  It is discarded from now on, so that the agent is not held
 * up on a full pipe while it acts on SIGTERM.
 */
static void
host_lost(const char *why, double now)
{
	if (h.lost != NULL)
		return;
	h.lost = xstrdup(why);
	h.toout.len = h.toerr.len = 0;
	host_close(&h.out);
	host_close(&h.err);
	host_terminate(now);
}

/*
 * Bytes from corral for the agent: keepalive lines (0x1e first) are
 * dropped, the rest queued for the agent's stdin.
 */
static void
host_from_corral(const char *p, size_t n)
{
	const char	*nl;
	size_t		 k;

	while (n > 0) {
		if (h.in_start && *p == HOST_MARK)
			h.in_drop = 1;
		nl = memchr(p, '\n', n);
		k = nl != NULL ? (size_t)(nl - p) + 1 : n;
		if (!h.in_drop && h.cin != -1)
			host_put(&h.tocmd, p, k);
		h.in_start = nl != NULL;
		if (nl != NULL)
			h.in_drop = 0;
		p += k;
		n -= k;
	}
}

/* Read corral's stdin; at EOF the agent's stdin closes and its stop begins. */
static void
host_read_in(double now)
{
	char	buf[16384];
	ssize_t	n;
	size_t	want = sizeof buf;

	if (want > host_room(&h.tocmd))
		want = host_room(&h.tocmd);
	n = read(h.in, buf, want);
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n > 0) {
		h.last_in = now;
		host_from_corral(buf, (size_t)n);
		return;
	}
	h.in_eof = 1;
	host_close(&h.in);
	if (h.tocmd.len == 0)
		host_close(&h.cin);
	if (h.term_at == 0 && h.kill_at == 0)
		h.term_at = now + h.o->grace;
}

/*
 * The agent's stderr: whole lines relayed, a line of its own that begins
 * like ours neutralized, a partial line kept until its newline (or sent
 * when it fills the line buffer, or before a line of ours).
 */
static void
host_from_agent_err(const char *p, size_t n)
{
	size_t	k;
	const char *nl;

	while (n > 0) {
		nl = memchr(p, '\n', n);
		k = nl != NULL ? (size_t)(nl - p) : n;
		if (k > sizeof h.line - h.linelen)
			k = sizeof h.line - h.linelen;
		memcpy(h.line + h.linelen, p, k);
		if (h.linelen == 0 && k > 0 && h.line[0] == HOST_MARK)
			h.line[0] = '?';
		h.linelen += k;
		p += k;
		n -= k;
		if (nl != NULL && n > 0 && *p == '\n') {
			p++;
			n--;
		} else if (h.linelen < sizeof h.line)
			continue;
		if (h.err != -1 && h.lost == NULL) {
			host_put(&h.toerr, h.line, h.linelen);
			host_put(&h.toerr, "\n", 1);
		}
		h.linelen = 0;
	}
}

/*
 * Read one of the agent's output pipes into its buffer (or discard it
 * once the link is lost); at EOF the pipe is closed.
 */
static void
host_read_agent(int *fd, struct host_buf *b, int is_err)
{
	char	buf[16384];
	ssize_t	n;
	size_t	want = sizeof buf;

	if (!is_err && h.lost == NULL && want > host_room(b))
		want = host_room(b);
	/* A line cut, or a partial one ended, adds bytes: room for them. */
	if (is_err && h.lost == NULL && want > host_room(b) - HOST_ERRLINE -
	    64)
		want = host_room(b) - HOST_ERRLINE - 64;
	n = read(*fd, buf, want);
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		host_close(fd);
		if (is_err && h.linelen > 0 && h.lost == NULL &&
		    h.err != -1) {
			host_put(b, h.line, h.linelen);
			host_put(b, "\n", 1);
		}
		h.linelen = is_err ? 0 : h.linelen;
		return;
	}
	if (h.lost != NULL)
		return;
	if (is_err)
		host_from_agent_err(buf, (size_t)n);
	else
		host_put(b, buf, (size_t)n);
}

/* Reap every child; the agent's status is kept. */
static void
host_reap(double now)
{
	pid_t	pid;
	int	st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		if (pid != h.cmd)
			continue;
		h.status = st;
		h.reaped = 1;
		/* What it left holding its pipes goes after the grace. */
		if (h.kill_at == 0 || h.kill_at > now + h.o->grace)
			h.kill_at = now + h.o->grace;
	}
}

/*
 * Signals: forwarded to the agent's process group.  In a namespace the
 * waiter's forwards (PIDNS_SIGNAL) count, and what the kernel sent; a
 * signal sent to us directly from outside also reached the waiter.
 */
static void
host_read_signals(double now)
{
	struct signalfd_siginfo	si;
	int			sig;

	while (read(h.sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
		sig = (int)si.ssi_signo;
		if (sig == SIGCHLD) {
			host_reap(now);
			continue;
		}
		if (sig == PIDNS_SIGNAL) {
			if (si.ssi_code != SI_QUEUE)
				continue;
			sig = si.ssi_int;
		} else if (h.waiter != 0 && si.ssi_code != SI_KERNEL)
			continue;
		if (h.cmd > 0 && !h.reaped)
			(void)kill(-h.cmd, sig);
	}
}

/*
 * The agent's process: its own session, the pipes on 0, 1 and 2, its
 * directory, limits and variables, then exec.  A failure is said on its
 * stderr, which corral shows as the agent's.
 */
static void __attribute__((noreturn))
host_child(const struct host_opts *o, char **argv, int in, int out, int err)
{
	struct rlimit	 rl;
	sigset_t	 none;
	size_t		 i;
	char		 msg[512];
	int		 sig;

	for (sig = 1; sig < NSIG; sig++)
		(void)signal(sig, SIG_DFL);
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	(void)setsid();
	if (dup2(in, 0) == -1 || dup2(out, 1) == -1 || dup2(err, 2) == -1)
		_exit(127);
	closefrom(3);
	for (i = 0; i < o->nenv; i++)
		(void)putenv(o->env[i]);
	for (i = 0; i < o->nlimits; i++) {
		rl.rlim_cur = rl.rlim_max = (rlim_t)o->limits[i].value;
		if (setrlimit(o->limits[i].resource, &rl) == -1) {
			snprintf(msg, sizeof msg, "corral host: setrlimit: %s\n",
			    strerror(errno));
			(void)!write(2, msg, strlen(msg));
			_exit(127);
		}
	}
	if (o->cwd != NULL && chdir(o->cwd) == -1) {
		snprintf(msg, sizeof msg, "corral host: cd %s: %s\n", o->cwd,
		    strerror(errno));
		(void)!write(2, msg, strlen(msg));
		_exit(127);
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execvp(argv[0], argv);
	snprintf(msg, sizeof msg, "corral host: exec %s: %s\n", argv[0],
	    strerror(errno));
	(void)!write(2, msg, strlen(msg));
	_exit(127);
}

/* Start the agent with three new pipes; -1 on failure (said on stderr). */
static int
host_start(const struct host_opts *o, char **argv)
{
	int	in[2], out[2], err[2];

	if (pipe2(in, O_CLOEXEC) == -1 || pipe2(out, O_CLOEXEC) == -1 ||
	    pipe2(err, O_CLOEXEC) == -1) {
		log_warn("corral host: pipe");
		return -1;
	}
	if ((h.cmd = fork()) == -1) {
		log_warn("corral host: fork");
		return -1;
	}
	if (h.cmd == 0)
		host_child(o, argv, in[0], out[1], err[1]);
	close(in[0]);
	close(out[1]);
	close(err[1]);
	h.cin = in[1];
	h.cout = out[0];
	h.cerr = err[0];
	util_set_nonblock(h.cin, 1);
	util_set_nonblock(h.cout, 1);
	util_set_nonblock(h.cerr, 1);
	return 0;
}

/* Return nonzero if s is n lowercase hex digits. */
static int
host_hex(const char *s, size_t n)
{
	return strlen(s) == n && strspn(s, "0123456789abcdef") == n;
}

/*
 * The container the agent runs in, if any: podman's id from
 * /run/.containerenv (or its host name, which podman sets to the short
 * id); docker's host name when it is a short id and /.dockerenv is there.
 */
static int
host_container(char *buf, size_t len, const char *nodename)
{
	char	 line[256];
	FILE	*f;

	if ((f = fopen("/run/.containerenv", "r")) != NULL) {
		while (fgets(line, sizeof line, f) != NULL) {
			line[strcspn(line, "\n")] = '\0';
			if (strncmp(line, "id=\"", 4) == 0 && line[4] != '"') {
				snprintf(buf, len, "%.*s", (int)strcspn(line + 4,
				    "\""), line + 4);
				fclose(f);
				return 1;
			}
		}
		fclose(f);
	} else if (access("/.dockerenv", F_OK) != 0 ||
	    !host_hex(nodename, 12))
		return 0;
	snprintf(buf, len, "%s", nodename);
	return 1;
}

/*
 * hello: where the agent runs, for corral's views and its log: the host
 * name, corral host's pid as the machine's ps shows it, whether the pid
 * namespace holds the agent, Slurm's job and step, the container.
 */
static void
host_hello(pid_t pid)
{
	struct utsname	 u;
	struct jsonw	 j;
	const char	*v;
	char		*s, *msg, ctr[128];
	size_t		 len;

	if (uname(&u) == -1)
		snprintf(u.nodename, sizeof u.nodename, "?");
	jsonw_init(&j);
	jsonw_object(&j);
	jsonw_key(&j, "v");
	jsonw_u64(&j, 1);
	jsonw_key(&j, "host");
	jsonw_str(&j, u.nodename);
	jsonw_key(&j, "pid");
	jsonw_u64(&j, (uint64_t)pid);
	jsonw_key(&j, "pidns");
	jsonw_bool(&j, h.pidns);
	if ((v = getenv("SLURM_JOB_ID")) != NULL) {
		jsonw_key(&j, "slurm_job");
		jsonw_str(&j, v);
		if ((v = getenv("SLURM_STEP_ID")) != NULL) {
			jsonw_key(&j, "slurm_step");
			jsonw_str(&j, v);
		}
	}
	if (host_container(ctr, sizeof ctr, u.nodename)) {
		jsonw_key(&j, "container");
		jsonw_str(&j, ctr);
	}
	jsonw_object_end(&j);
	s = jsonw_finish(&j, &len);
	xasprintf(&msg, "hello %s", s);
	host_say(msg, strlen(msg));
	free(msg);
	free(s);
}

/* bye: how the agent ended, and why, when corral host ended it. */
static void
host_bye(void)
{
	struct jsonw	 j;
	char		*s, *msg;
	size_t		 len;

	jsonw_init(&j);
	jsonw_object(&j);
	if (WIFEXITED(h.status)) {
		jsonw_key(&j, "code");
		jsonw_u64(&j, (uint64_t)WEXITSTATUS(h.status));
	} else if (WIFSIGNALED(h.status)) {
		jsonw_key(&j, "signal");
		jsonw_str(&j, util_signame(WTERMSIG(h.status)));
		jsonw_key(&j, "signo");
		jsonw_u64(&j, (uint64_t)WTERMSIG(h.status));
		jsonw_key(&j, "core");
		jsonw_bool(&j, WCOREDUMP(h.status));
	}
	jsonw_object_end(&j);
	s = jsonw_finish(&j, &len);
	xasprintf(&msg, "bye %s", s);
	host_say(msg, strlen(msg));
	free(msg);
	free(s);
}

/* Indexes of the descriptors polled. */
enum { HP_SIG, HP_IN, HP_CIN, HP_COUT, HP_OUT, HP_CERR, HP_ERR, HP_N };

/* Set one poll slot: fd with events, or nothing (-1). */
static void
host_slot(struct pollfd *p, int fd, short events, int on)
{
	p->fd = on ? fd : -1;
	p->events = events;
	p->revents = 0;
}

/*
 * What to wait for now.  Stdin is read only while the agent's queue has
 * room (its silence then is no sign of a lost link: the clock stops);
 * our stdout and stderr are always polled, so that a reader that went
 * away is seen even when there is nothing to write.
 */
static void
host_poll_set(struct pollfd *p, double now)
{
	int	room_in = host_room(&h.tocmd) > 0;

	if (!room_in)
		h.last_in = now;
	host_slot(&p[HP_SIG], h.sigfd, POLLIN, 1);
	host_slot(&p[HP_IN], h.in, POLLIN, h.in != -1 && room_in);
	host_slot(&p[HP_CIN], h.cin, POLLOUT, h.cin != -1 && h.tocmd.len > 0);
	host_slot(&p[HP_COUT], h.cout, POLLIN, h.cout != -1 &&
	    (h.lost != NULL || host_room(&h.toout) > 0));
	host_slot(&p[HP_OUT], h.out, h.toout.len > 0 ? POLLOUT : 0,
	    h.out != -1);
	host_slot(&p[HP_CERR], h.cerr, POLLIN, h.cerr != -1 &&
	    (h.lost != NULL || host_room(&h.toerr) > HOST_ERRLINE + 64));
	host_slot(&p[HP_ERR], h.err, h.toerr.len > 0 ? POLLOUT : 0,
	    h.err != -1);
}

/* How long poll may wait: until the next deadline, in milliseconds. */
static int
host_poll_wait(double now)
{
	double	next = h.next_tick;

	if (h.term_at != 0 && h.term_at < next)
		next = h.term_at;
	if (h.kill_at != 0 && h.kill_at < next)
		next = h.kill_at;
	if (!h.in_eof && h.lost == NULL && h.last_in + h.o->lost < next)
		next = h.last_in + h.o->lost;
	if (next <= now)
		return 0;
	return (int)((next - now) * 1000.0) + 1;
}

/* The deadlines that passed: ticks, the stop steps, a silent link. */
static void
host_timers(double now)
{
	char	why[128];

	if (now >= h.next_tick) {
		host_say("tick", 4);
		h.next_tick = now + h.o->alive;
	}
	if (h.term_at != 0 && now >= h.term_at)
		host_terminate(now);
	if (h.kill_at != 0 && now >= h.kill_at) {
		host_signal_all(SIGKILL);
		h.kill_at = 0;
		if (h.reaped && h.killed++ > 0) {
			/* A second time: beyond our reach (no namespace). */
			host_close(&h.cout);
			host_close(&h.cerr);
		} else if (h.reaped)
			h.kill_at = now + 1.0;
	}
	if (!h.in_eof && h.lost == NULL && now - h.last_in >= h.o->lost) {
		snprintf(why, sizeof why, "no word from corral for %.1fs",
		    now - h.last_in);
		host_lost(why, now);
	}
}

/* Our stdout or stderr failed: nobody reads it, so corral is gone. */
static void
host_output(struct pollfd *p, int *fd, struct host_buf *b, const char *what,
    double now)
{
	char	why[64];

	if (*fd == -1 || p->fd == -1)
		return;
	if ((p->revents & POLLOUT) && host_flush(*fd, b) == 0)
		return;
	if (!(p->revents & (POLLERR | POLLHUP | POLLOUT)))
		return;
	snprintf(why, sizeof why, "its %s is closed", what);
	host_lost(why, now);
}

/* Handle what poll reported. */
static void
host_poll_done(struct pollfd *p, double now)
{
	if (p[HP_SIG].revents)
		host_read_signals(now);
	if (p[HP_IN].revents)
		host_read_in(now);
	if (p[HP_CIN].revents && host_flush(h.cin, &h.tocmd) == -1) {
		/* The agent closed its stdin: what corral sends is dropped. */
		h.tocmd.len = 0;
		host_close(&h.cin);
	}
	if (h.in_eof && h.tocmd.len == 0)
		host_close(&h.cin);
	if (p[HP_COUT].revents)
		host_read_agent(&h.cout, &h.toout, 0);
	if (p[HP_CERR].revents)
		host_read_agent(&h.cerr, &h.toerr, 1);
	host_output(&p[HP_OUT], &h.out, &h.toout, "stdout", now);
	host_output(&p[HP_ERR], &h.err, &h.toerr, "stderr", now);
	/* The agent's stdout ended: so does ours, once written. */
	if (h.cout == -1 && h.toout.len == 0)
		host_close(&h.out);
}

/* Return nonzero once the agent is reaped and its output all written. */
static int
host_done(void)
{
	return h.reaped && h.cout == -1 && h.cerr == -1 &&
	    (h.out == -1 || h.toout.len == 0) &&
	    (h.err == -1 || h.toerr.len == 0);
}

/*
 * Into a pid namespace of our own (as corral's supervisor goes: pidns.c),
 * unless we are the init of one already (a container) or were told not
 * to; without one, a child subreaper.  The waiter never returns.
 */
static void
host_contain(const struct host_opts *o)
{
	pid_t	outer = getpid();

	if (outer == 1) {
		h.pidns = 1;
		return;
	}
	if (!o->nopidns && pidns_enter()) {
		h.pidns = 1;
		h.waiter = outer;
		return;
	}
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
}

/* Set up the relay: buffers, descriptors, signals. */
static int
host_setup(const struct host_opts *o)
{
	sigset_t	set;

	memset(&h, 0, sizeof h);
	h.o = o;
	h.in = 0;
	h.out = 1;
	h.err = 2;
	h.cin = h.cout = h.cerr = h.sigfd = -1;
	h.in_start = 1;
	h.tocmd.cap = h.toout.cap = HOST_BUF;
	h.toerr.cap = HOST_BUF / 4;
	signal(SIGPIPE, SIG_IGN);
	host_contain(o);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, PIDNS_SIGNAL);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if ((h.sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) == -1) {
		log_warn("corral host: signalfd");
		return -1;
	}
	util_set_nonblock(0, 1);
	util_set_nonblock(1, 1);
	util_set_nonblock(2, 1);
	return 0;
}

/*
 * Run argv as a launched agent's far end (corral host -- CMD) and return
 * the exit status to end with: the agent's, or 128 + the signal that
 * killed it.
 */
int
host_run(const struct host_opts *o, char **argv)
{
	struct pollfd	p[HP_N];
	double		now;
	pid_t		outer = getpid();

	if (host_setup(o) != 0)
		return 70;
	if (h.waiter != 0)
		outer = h.waiter;
	if (host_start(o, argv) != 0)
		return 70;
	now = host_now();
	h.last_in = now;
	h.next_tick = now + o->alive;
	host_hello(outer);
	while (!host_done()) {
		now = host_now();
		host_timers(now);
		host_poll_set(p, now);
		if (poll(p, HP_N, host_poll_wait(now)) == -1) {
			if (errno == EINTR)
				continue;
			log_warn("corral host: poll");
			break;
		}
		host_poll_done(p, host_now());
	}
	/* Nothing the agent started outlives it. */
	host_signal_all(SIGKILL);
	if (!h.pidns)
		pidns_sweep();
	if (h.err != -1) {
		host_bye();
		util_set_nonblock(h.err, 0);
		(void)host_flush(h.err, &h.toerr);
	}
	free(h.tocmd.b);
	free(h.toout.b);
	free(h.toerr.b);
	free(h.lost);
	if (WIFSIGNALED(h.status))
		return 128 + WTERMSIG(h.status);
	return WEXITSTATUS(h.status);
}
