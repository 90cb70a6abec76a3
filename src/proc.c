/*
 * Child processes: an agent's (agent.c) and a per-call adapter's, one per
 * request (struct proc_call, for exec, codex, gemini), are the same thing
 * here.
 *
 * A proc is spawned with spawn.c's hygiene and has three pipes.  Its
 * stderr is read here: every line is logged with its owner's name, and
 * its first and last lines are kept (the head: a tool that refuses its
 * command line says why first, then prints pages of usage; the tail: what
 * it said last).  Its owner reads stdout (an agent's channel, a call's
 * buffer) and says when it reached EOF.  A proc has ended only when its
 * exit status is reaped AND stdout and stderr reached EOF, in either
 * order (tmux's JOB_DEAD and JOB_CLOSED), so its last lines are never
 * lost; should something it left behind hold its pipes past the grace
 * time, or a pipe close while it runs on, its owner hears of it.  Signals
 * go to its process group.
 *
 * A call is fed its stdin, which is then closed (many tools wait for EOF),
 * and its stdout is kept up to a bound or handed out line by line.  Its
 * stop sequence is an agent's: the lifecycle's rules say which step comes
 * next (proc_on_stop), these steps take it on the call's process: SIGINT
 * and stdin closed (a person's ^C), SIGTERM after the grace, SIGKILL after
 * the stop timeout, and a second later its pipes are let go.
 */

#include <sys/epoll.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"

#define PROC_HEAD	1024	/* bytes of stderr's first lines kept */
#define PROC_TAIL	2048	/* and of its last lines */
#define PROC_LINE	240	/* bytes of each line proc_stderr_lines gives */
#define PROC_ERR_BATCH	64	/* stderr reads before the loop's next turn */

/*
 * A proc's stderr: its reader, and what it said first and last (made at
 * its first byte: most agents never write to stderr).  The reader's
 * buffers go when stderr closes; what it said stays until proc_free.
 */
struct proc_stderr {
	struct ndjson_reader rd;
	char		 head[PROC_HEAD];
	size_t		 hlen;
	int		 headfull;
	char		 tail[PROC_TAIL];
	size_t		 tlen;
};

static void	proc_errs_cb(struct ev_loop *, ev_io *, int);
static void	proc_child_cb(struct ev_loop *, ev_child *, int);
static void	proc_pipe_cb(struct ev_loop *, ev_timer *, int);
static void	proc_call_in_cb(struct ev_loop *, ev_io *, int);
static void	proc_call_out_cb(struct ev_loop *, ev_io *, int);
static void	proc_call_stop_cb(struct ev_loop *, ev_timer *, int);
static void	proc_call_step(struct proc_call *, enum agent_event);

/*
 * The processes whose pids are not reaped yet, by pid, chained through
 * hnext: one child watcher for them all (libev's for any pid, which it
 * calls once for each child it reaps) finds the process here.  A watcher
 * in each process cost 56 bytes an agent.
 */
static struct proc	**proc_tab;
static size_t		  proc_tabsz;	/* a power of two, or 0 */
static size_t		  proc_n;
static ev_child		  proc_child_w;

/*
 * Every process's stderr in one epoll set, which one watcher of the loop
 * watches: a watcher in each process cost 48 bytes an agent, and most
 * agents seldom write to stderr.
 */
static int		  proc_epfd = -1;
static ev_io		  proc_errs_w;
static size_t		  proc_nerr;	/* descriptors in the set */

/* What the stop sequence of a call does next: the lifecycle's rules. */
static proc_stop_cb	proc_stop_next;

/* The chain of the table where a pid goes. */
static struct proc **
proc_chain(pid_t pid)
{
	return &proc_tab[((size_t)pid * 2654435761U) & (proc_tabsz - 1)];
}

/* Double the table (it never holds more processes than chains). */
static void
proc_grow(void)
{
	struct proc	**old = proc_tab, *p, *next, **c;
	size_t		  oldsz = proc_tabsz, i;

	proc_tabsz = oldsz != 0 ? oldsz * 2 : 64;
	proc_tab = xcalloc(proc_tabsz, sizeof *proc_tab);
	for (i = 0; i < oldsz; i++)
		for (p = old[i]; p != NULL; p = next) {
			next = p->hnext;
			c = proc_chain(p->pid);
			p->hnext = *c;
			*c = p;
		}
	free(old);
}

/*
 * Put a process that was just spawned on the live table; the child
 * watcher runs while any is there, as each process's own did.
 */
static void
proc_list(struct proc *p)
{
	struct proc	**c;

	if (proc_n + 1 > proc_tabsz)
		proc_grow();
	c = proc_chain(p->pid);
	p->hnext = *c;
	*c = p;
	p->flags |= PROC_LIVE;
	if (proc_n++ == 0) {
		/* Stops and continues too: PROC_TRACE says who hears them. */
		ev_child_init(&proc_child_w, proc_child_cb, 0, 1);
		ev_child_start(LOOP, &proc_child_w);
	}
}

/* Take a process off the live table: its pid is reaped, or it is freed. */
static void
proc_unlist(struct proc *p)
{
	struct proc	**c;

	if (!(p->flags & PROC_LIVE))
		return;
	for (c = proc_chain(p->pid); *c != p; c = &(*c)->hnext)
		;
	*c = p->hnext;
	p->hnext = NULL;
	p->flags &= ~PROC_LIVE;
	if (--proc_n == 0)
		ev_child_stop(LOOP, &proc_child_w);
}

/* The live process with this pid (as corral sees it), or NULL. */
static struct proc *
proc_by_pid(pid_t pid)
{
	struct proc	*p;

	if (proc_tabsz == 0)
		return NULL;
	for (p = *proc_chain(pid); p != NULL; p = p->hnext)
		if (p->pid == pid)
			return p;
	return NULL;
}

/* Set up a process record that has no process yet. */
void
proc_init(struct proc *p)
{
	memset(p, 0, sizeof *p);
	p->pid = -1;
	p->errfd = -1;
}

/*
 * Read fd, a process's stderr, from now on: it joins the shared epoll set.
 * Should the set refuse it (the system's limit on watched descriptors),
 * stderr is closed, with a warning, rather than left to fill.
 */
void
proc_err_watch(struct proc *p, int fd)
{
	struct epoll_event	ev;

	if (proc_epfd == -1 &&
	    (proc_epfd = epoll_create1(EPOLL_CLOEXEC)) != -1)
		ev_io_init(&proc_errs_w, proc_errs_cb, proc_epfd, EV_READ);
	memset(&ev, 0, sizeof ev);
	ev.events = EPOLLIN;
	ev.data.ptr = p;
	if (proc_epfd == -1 ||
	    epoll_ctl(proc_epfd, EPOLL_CTL_ADD, fd, &ev) == -1) {
		log_warn("%s: its stderr cannot be watched; closed", p->name);
		close(fd);
		p->errfd = -1;
		p->flags |= PROC_ERR_EOF;
		return;
	}
	p->errfd = fd;
	if (proc_nerr++ == 0)
		ev_io_start(LOOP, &proc_errs_w);
}

/* Return nonzero while the process's stderr is open. */
int
proc_err_open(const struct proc *p)
{
	return p->errfd != -1;
}

/* Start the pipe timer to run out after secs (made on first use). */
static void
proc_pipe_arm(struct proc *p, double secs)
{
	if (p->pipe_w == NULL) {
		p->pipe_w = xcalloc(1, sizeof *p->pipe_w);
		ev_timer_init(&p->pipe_w->w, proc_pipe_cb, 0, 0);
		p->pipe_w->w.data = p;
	}
	ev_timer_stop(LOOP, &p->pipe_w->w);
	ev_timer_set(&p->pipe_w->w, secs, 0);
	ev_timer_start(LOOP, &p->pipe_w->w);
}

/* Stop the pipe timer. */
static void
proc_pipe_stop(struct proc *p)
{
	if (p->pipe_w != NULL)
		ev_timer_stop(LOOP, &p->pipe_w->w);
}

/*
 * Spawn argv for the workflow entry ac, as agent id with credential token,
 * env (NAME=value, or NULL) added to its environment; flags PROC_QUIET
 * and PROC_TRACE.  Its stderr is read here; sr gives the owner stdin and
 * stdout.  Returns 0, or -1 with sr's error and step.
 */
int
proc_spawn(struct proc *p, const struct agent_conf *ac, char *const *argv,
    const char *id, const char *token, char *const *env, int flags,
    const struct proc_hooks *hooks, void *owner, struct spawn_result *sr)
{
	if (spawn_argv(ac, argv, id, token, env, sr) != 0) {
		/* As if it had started and exited as a shell does. */
		p->status = 127 << 8;
		return -1;
	}
	p->pid = sr->pid;
	p->hostpid = sr->hostpid;
	p->status = 0;
	/* A spawn from a stderr line's hook: its reader is still feeding. */
	p->flags = (p->flags & PROC_FEEDING) | (flags & (PROC_QUIET |
	    PROC_TRACE));
	p->grace = ac->stop_grace;
	p->name = id;
	p->hooks = hooks;
	p->owner = owner;
	proc_list(p);
	/* The stderr of this process only. */
	if (p->err != NULL) {
		p->err->hlen = p->err->tlen = 0;
		p->err->headfull = 0;
	}
	proc_err_watch(p, sr->err);
	sr->err = -1;
	return 0;
}

/* Who the process is for (its owner, as proc_spawn was told). */
void *
proc_owner(const struct proc *p)
{
	return p->owner;
}

/* Return nonzero if its exit status has been reaped. */
int
proc_exited(const struct proc *p)
{
	return (p->flags & PROC_EXITED) != 0;
}

/* Its exit status, as waitpid gave it. */
int
proc_status(const struct proc *p)
{
	return p->status;
}

/* Its pid, as corral sees it (0: none). */
pid_t
proc_pid(const struct proc *p)
{
	return p->pid;
}

/* Its pid as the user's shell sees it. */
pid_t
proc_hostpid(const struct proc *p)
{
	return p->hostpid;
}

/*
 * Return nonzero if the process has this pid as /proc names pids and is
 * not reaped yet: until corral reaps it, no other process can have it.
 */
int
proc_has_pid(const struct proc *p, pid_t pid)
{
	return (p->flags & PROC_LIVE) && pidns_proc_pid(p->pid,
	    p->hostpid) == pid;
}

/* Send a signal to the process group. */
void
proc_signal(struct proc *p, int sig)
{
	if (p->pid <= 0)
		return;
	/*
	 * The group outlives its leader while members remain, and its id is
	 * not reused meanwhile.  The pid alone is used only before the
	 * leader is reaped: after that it may name another process.
	 */
	if (kill(-p->pid, sig) == -1 && errno == ESRCH &&
	    !(p->flags & PROC_EXITED))
		(void)kill(p->pid, sig);
}

/* Tell the owner once the process is reaped and both pipes are at EOF. */
static void
proc_check_done(struct proc *p)
{
	if ((p->flags & (PROC_EXITED | PROC_OUT_EOF | PROC_ERR_EOF)) !=
	    (PROC_EXITED | PROC_OUT_EOF | PROC_ERR_EOF) ||
	    (p->flags & PROC_DONE))
		return;
	p->flags |= PROC_DONE;
	proc_pipe_stop(p);
	p->hooks->done(p);
}

/* The owner read stdout to its EOF. */
void
proc_out_eof(struct proc *p)
{
	p->flags |= PROC_OUT_EOF;
	proc_check_done(p);
}

/*
 * A pipe closed (what says which) while the process may still run: look
 * again a moment later before judging, since EOF on a pipe usually comes
 * just before the exit status.
 */
void
proc_pipe_closed(struct proc *p, const char *what)
{
	siginfo_t	si;

	if (p->flags & PROC_EXITED)
		return;
	memset(&si, 0, sizeof si);
	if (waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) ==
	    0 && si.si_pid == p->pid)
		return;		/* a zombie: libev reaps it right away */
	if (p->pipe_w == NULL || !ev_is_active(&p->pipe_w->w)) {
		proc_pipe_arm(p, 0.2);
		p->pipe_w->what = what;
	}
}

/*
 * The pipe timer ran out.  After the process exited: something it left
 * behind still holds its pipes.  Before: a pipe closed and the process
 * really runs on.
 */
static void
proc_pipe_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct proc	*p = w->data;

	if (p->flags & PROC_EXITED) {
		if ((p->flags & (PROC_OUT_EOF | PROC_ERR_EOF)) !=
		    (PROC_OUT_EOF | PROC_ERR_EOF) && p->hooks->held != NULL)
			p->hooks->held(p);
		return;
	}
	if (p->hooks->broken != NULL)
		p->hooks->broken(p, p->pipe_w->what);
}

/* Close stderr's read end. */
static void
proc_close_err(struct proc *p)
{
	if (p->errfd == -1)
		return;
	(void)epoll_ctl(proc_epfd, EPOLL_CTL_DEL, p->errfd, NULL);
	close(p->errfd);
	p->errfd = -1;
	if (--proc_nerr == 0)
		ev_io_stop(LOOP, &proc_errs_w);
	/* Closed by one of its lines: what the read left goes after them. */
	if (p->err != NULL)
		ndjson_reader_free(&p->err->rd);
}

/*
 * Stop waiting for EOF on pipes a descendant in another session holds:
 * stderr's end closes here (the owner closes stdout's), and the process
 * counts as ended.
 */
void
proc_abandon_pipes(struct proc *p)
{
	proc_close_err(p);
	p->flags |= PROC_OUT_EOF | PROC_ERR_EOF;
	proc_check_done(p);
}

/* Release the watchers and descriptors; what stderr said is kept. */
void
proc_release(struct proc *p)
{
	proc_unlist(p);
	proc_close_err(p);
	proc_pipe_stop(p);
}

/* Release the process and forget what its stderr said. */
void
proc_free(struct proc *p)
{
	proc_release(p);
	free(p->err);
	p->err = NULL;
	free(p->pipe_w);
	p->pipe_w = NULL;
}

/* Append a line to the end of the tail, dropping its oldest lines. */
static void
proc_keep_tail(struct proc_stderr *e, const char *line, size_t len)
{
	size_t	keep, drop;

	keep = len + 1 > PROC_TAIL - 1 ? PROC_TAIL - 2 : len;
	if (e->tlen + keep + 1 > PROC_TAIL - 1) {
		drop = e->tlen + keep + 1 - (PROC_TAIL - 1);
		if (drop > e->tlen)
			drop = e->tlen;
		memmove(e->tail, e->tail + drop, e->tlen - drop);
		e->tlen -= drop;
	}
	memcpy(e->tail + e->tlen, line, keep);
	e->tlen += keep;
	e->tail[e->tlen++] = '\n';
	e->tail[e->tlen] = '\0';
}

/* Log one stderr line with its owner's name, and keep it. */
static void
proc_err_line(void *arg, enum ndjson_kind kind, char *line, size_t len,
    size_t extra)
{
	struct proc		*p = arg;
	struct proc_stderr	*e;

	if (kind == NDJSON_TOOLONG)
		return;
	if (kind == NDJSON_LINE && p->hooks != NULL &&
	    p->hooks->errline != NULL && p->hooks->errline(p, line, len))
		return;
	if (p->flags & PROC_QUIET)
		log_debug("%s: %.*s", p->name, (int)(len > 200 ? 200 : len),
		    line);
	else
		log_agent_line(p->name, line, len, kind == NDJSON_CUT ?
		    extra : 0);
	e = p->err;		/* the reader's: made at the first byte */
	if (e->hlen + len + 2 > sizeof e->head)
		e->headfull = 1;
	if (!e->headfull) {
		memcpy(e->head + e->hlen, line, len);
		e->hlen += len;
		e->head[e->hlen++] = '\n';
		e->head[e->hlen] = '\0';
	}
	proc_keep_tail(e, line, len);
}

/*
 * The stderr reader handed out its lines (PROC_FEEDING was set around
 * it).  One of them may have closed stderr: the reader, kept while it
 * ran, goes now.
 */
static void
proc_err_fed(struct proc *p)
{
	p->flags &= ~PROC_FEEDING;
	if (p->errfd == -1 && p->err != NULL)
		/* The rest of the read may have started a line since. */
		ndjson_reader_free(&p->err->rd);
}

/*
 * Some processes' stderr can be read: one at a time, each event asked of
 * the set just before its process is read, since a line's hook may end
 * or free another process.  The set is level-triggered: what is left of
 * a busy stderr comes round again, after the others.
 */
static void
proc_errs_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct epoll_event	ev;
	int			i;

	for (i = 0; i < PROC_ERR_BATCH; i++) {
		if (epoll_wait(proc_epfd, &ev, 1, 0) != 1)
			return;
		proc_err_read(ev.data.ptr);
	}
}

/* Drain stderr into the log (it can be read); it must never block. */
void
proc_err_read(struct proc *p)
{
	char		*buf;
	size_t		 size;
	ssize_t		 n;

	if (p->errfd == -1)
		return;
	buf = chan_read_buffer(&size);
	n = read(p->errfd, buf, size);
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		if (p->err != NULL) {
			p->flags |= PROC_FEEDING;
			ndjson_finish(&p->err->rd, proc_err_line, p);
			proc_err_fed(p);
		}
		proc_close_err(p);
		p->flags |= PROC_ERR_EOF;
		proc_check_done(p);
		return;
	}
	if (p->err == NULL) {
		p->err = xcalloc(1, sizeof *p->err);
		ndjson_reader_init(&p->err->rd, 4096, 1);
	}
	p->flags |= PROC_FEEDING;
	ndjson_feed(&p->err->rd, buf, (size_t)n, proc_err_line, p);
	proc_err_fed(p);
}

/*
 * libev reaped, stopped or continued a child: one of ours, or one nobody
 * waits for (a process released, a spawn that failed, an orphan).
 */
static void
proc_child_cb(struct ev_loop *loop, ev_child *w, int revents)
{
	proc_waited(w->rpid, w->rstatus);
}

/* A child's status as waitpid gave it (the fuzzers' processes give theirs). */
void
proc_waited(pid_t pid, int st)
{
	struct proc	*p;

	if ((p = proc_by_pid(pid)) == NULL)
		return;
	if (WIFSTOPPED(st) || WIFCONTINUED(st)) {
		if ((p->flags & PROC_TRACE) && p->hooks->stopped != NULL)
			p->hooks->stopped(p, WIFSTOPPED(st) ? WSTOPSIG(st) : 0);
		return;
	}
	p->status = st;
	p->flags |= PROC_EXITED;
	proc_unlist(p);
	proc_pipe_stop(p);
	if ((p->flags & (PROC_OUT_EOF | PROC_ERR_EOF)) !=
	    (PROC_OUT_EOF | PROC_ERR_EOF))
		/* EOF comes any moment, unless a descendant holds the pipes. */
		proc_pipe_arm(p, p->grace);
	if (p->hooks->exited != NULL)
		p->hooks->exited(p);
	proc_check_done(p);
}

/*
 * The last n (at most 3) non-empty lines the process wrote on stderr,
 * oldest first, each escaped (util_vis: they reach the log, corral ps and
 * a terminal), cut to PROC_LINE bytes, quoted and joined, into buf;
 * returns the length (0: none).  Text for people: it reaches JSON only
 * through the JSON writer.
 */
size_t
proc_stderr_lines(const struct proc *p, char *buf, size_t len,
    unsigned int n)
{
	const char	*start[3], *end[3], *t, *e, *s;
	unsigned int	 have = 0, i;
	size_t		 o = 0, l;
	char		*esc;

	buf[0] = '\0';
	if (p->err == NULL)
		return 0;
	if (n > 3)
		n = 3;
	/* From the end: each line without its '\r's and trailing blanks. */
	t = p->err->tail;
	e = t + p->err->tlen;
	while (e > t && have < n) {
		e--;		/* its newline */
		for (s = e; s > t && s[-1] != '\n'; s--)
			;
		for (l = (size_t)(e - s); l > 0 && (s[l - 1] == '\r' ||
		    s[l - 1] == ' '); l--)
			;
		if (l > 0) {
			start[have] = s;
			end[have++] = s + l;
		}
		e = s;
	}
	for (i = have; i > 0 && o < len; i--) {
		esc = util_vis(start[i - 1], (size_t)(end[i - 1] -
		    start[i - 1]));
		l = util_utf8_cut(esc, strlen(esc), PROC_LINE - 1);
		o += (size_t)snprintf(buf + o, len - o, "%s\"%.*s\"",
		    i < have ? ", " : "", (int)l, esc);
		free(esc);
	}
	return o < len ? o : len - 1;
}

/* What stderr said first (its first lines, each ending in '\n'). */
const char *
proc_stderr_head(const struct proc *p, size_t *len)
{
	*len = p->err != NULL ? p->err->hlen : 0;
	return p->err != NULL ? p->err->head : "";
}

/* What stderr said last (its last lines, each ending in '\n'). */
const char *
proc_stderr_tail(const struct proc *p, size_t *len)
{
	*len = p->err != NULL ? p->err->tlen : 0;
	return p->err != NULL ? p->err->tail : "";
}

/* The hooks of every call's process. */
static void	proc_call_done(struct proc *);
static void	proc_call_exited(struct proc *);
static void	proc_call_held(struct proc *);
static const struct proc_hooks proc_call_hooks = {
	proc_call_done, proc_call_exited, proc_call_held, NULL, NULL, NULL
};

/*
 * The call whose process has this pid, as /proc names pids, that is not
 * reaped yet, or NULL.
 */
struct proc_call *
proc_call_find(pid_t pid)
{
	struct proc	*p;
	size_t		 i;

	for (i = 0; i < proc_tabsz; i++)
		for (p = proc_tab[i]; p != NULL; p = p->hnext)
			if (p->hooks == &proc_call_hooks &&
			    proc_has_pid(p, pid))
				return p->owner;
	return NULL;
}

/* Register what moves a call's stop sequence on: the lifecycle's rules. */
void
proc_on_stop(proc_stop_cb cb)
{
	proc_stop_next = cb;
}

/* Close the write end of a call's stdin. */
static void
proc_call_close_in(struct proc_call *c)
{
	if (c->in == -1)
		return;
	ev_io_stop(LOOP, &c->in_w);
	close(c->in);
	c->in = -1;
}

/* Close the read end of a call's stdout. */
static void
proc_call_close_out(struct proc_call *c)
{
	if (c->out == -1)
		return;
	ev_io_stop(LOOP, &c->out_w);
	close(c->out);
	c->out = -1;
}

/*
 * Start the call's process: argv for the entry ac, as agent id with its
 * credential token, with env (NAME=value, or NULL) added to the agent's
 * environment, and data on its
 * stdin (NULL: stdin closed at once).  stdout is kept up to max bytes.
 * Returns 0, or -1 with why filled (and nothing to stop).
 */
int
proc_call_start(struct proc_call *c, const struct agent_conf *ac,
    char *const *argv, const char *id, const char *token, char *const *env,
    const char *data, size_t len, size_t max, char *why, size_t whylen)
{
	struct spawn_result	sr;

	proc_init(&c->proc);
	c->in = c->out = -1;
	c->stop = AS_STOPPED;	/* nothing to stop */
	ev_timer_init(&c->stop_w, proc_call_stop_cb, 0, 0);
	c->stop_w.data = c;
	if (proc_spawn(&c->proc, ac, argv, id, token, env, c->quiet ?
	    PROC_QUIET : 0, &proc_call_hooks, c, &sr) != 0) {
		snprintf(why, whylen, "%s: %s", sr.what, strerror(sr.error));
		return -1;
	}
	c->stop = AS_BUSY;	/* at work */
	c->in = sr.in;
	c->out = sr.out;
	c->out_max = max;
	if (data != NULL && len > 0) {
		c->stdin_data = xmemdup0(data, len);
		c->stdin_len = len;
		ev_io_init(&c->in_w, proc_call_in_cb, c->in, EV_WRITE);
		c->in_w.data = c;
		ev_io_start(LOOP, &c->in_w);
	} else
		proc_call_close_in(c);
	ev_io_init(&c->out_w, proc_call_out_cb, c->out, EV_READ);
	c->out_w.data = c;
	ev_io_start(LOOP, &c->out_w);
	log_info("agent %s: started %s (pid %ld)", id, argv[0],
	    (long)c->proc.hostpid);
	return 0;
}

/* Feed stdin; close it when all is written (the tool may wait for EOF). */
static void
proc_call_in_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct proc_call	*c = w->data;
	ssize_t			 n;

	n = write(c->in, c->stdin_data + c->stdin_off,
	    c->stdin_len - c->stdin_off);
	if (n == -1) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		/* It closed stdin: it will not read the rest. */
		log_debug("agent %s: pid %ld stdin: %s", c->proc.name,
		    (long)c->proc.hostpid, strerror(errno));
		proc_call_close_in(c);
		return;
	}
	c->stdin_off += (size_t)n;
	if (c->stdin_off == c->stdin_len) {
		proc_call_close_in(c);
		free(c->stdin_data);
		c->stdin_data = NULL;
	}
}

/* Append to the stdout buffer (bounded by the caller). */
static void
proc_call_append(struct proc_call *c, const char *data, size_t n)
{
	size_t	cap;

	if (n == 0)
		return;
	if (c->line_cb != NULL && c->out_len + n > c->out_max) {
		/* An endless line in line mode: drop it, say so once. */
		c->out_dropped += n;
		return;
	}
	if (c->out_len + n > c->out_cap) {
		cap = c->out_cap != 0 ? c->out_cap : 4096;
		while (cap < c->out_len + n)
			cap *= 2;
		c->out_buf = xreallocarray(c->out_buf, cap, 1);
		c->out_cap = cap;
	}
	memcpy(c->out_buf + c->out_len, data, n);
	c->out_len += n;
}

/* Hand out the complete lines of a read, keep its partial last one. */
static void
proc_call_lines(struct proc_call *c, const char *buf, size_t n)
{
	size_t	i, start = 0;

	for (i = 0; i < n; i++) {
		if (buf[i] != '\n')
			continue;
		if (c->out_len > 0) {
			proc_call_append(c, buf + start, i - start);
			c->line_cb(c, c->out_buf, c->out_len);
			c->out_len = 0;
		} else
			c->line_cb(c, buf + start, i - start);
		start = i + 1;
	}
	if (start < n)
		proc_call_append(c, buf + start, n - start);
}

/* Keep stdout, up to the bound (beyond it, count and drop), or its lines. */
static void
proc_call_out_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct proc_call	*c = w->data;
	char			*buf;
	size_t			 size, keep;
	ssize_t			 n;

	buf = chan_read_buffer(&size);
	n = read(c->out, buf, size);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		proc_call_close_out(c);
		if (c->line_cb != NULL && c->out_len > 0)
			c->line_cb(c, c->out_buf, c->out_len);
		proc_out_eof(&c->proc);
		return;
	}
	if (c->line_cb != NULL) {
		proc_call_lines(c, buf, (size_t)n);
		return;
	}
	keep = (size_t)n;
	if (c->out_len + keep > c->out_max) {
		keep = c->out_max > c->out_len ? c->out_max - c->out_len : 0;
		c->out_dropped += (size_t)n - keep;
	}
	proc_call_append(c, buf, keep);
}

/* The call's process exited: nothing more goes to its stdin. */
static void
proc_call_exited(struct proc *p)
{
	proc_call_close_in(p->owner);
}

/* Something the call's process left holds its pipes: stop it. */
static void
proc_call_held(struct proc *p)
{
	proc_call_step(p->owner, AE_REAPED);
}

/* Everything of the call's process is in: its adapter takes it. */
static void
proc_call_done(struct proc *p)
{
	struct proc_call	*c = p->owner;

	ev_timer_stop(LOOP, &c->stop_w);
	c->stop = AS_STOPPED;
	c->done(c);
}

/* Arm the stop sequence's timer. */
static void
proc_call_arm(struct proc_call *c, double after)
{
	ev_timer_stop(LOOP, &c->stop_w);
	ev_timer_set(&c->stop_w, after, 0);
	ev_timer_start(LOOP, &c->stop_w);
}

/*
 * Move the call's stop sequence on for event ev: the lifecycle's rules
 * say where it goes (as for an agent), and each step is taken on the
 * call's process.  KILLING a second on: its pipes are let go once it has
 * exited.
 */
static void
proc_call_step(struct proc_call *c, enum agent_event ev)
{
	enum agent_state	 from = (enum agent_state)c->stop, to;

	if (from == AS_STOPPED || proc_stop_next == NULL)
		return;
	to = proc_stop_next(from, ev);
	c->stop = to;
	if (to == from) {
		if (to == AS_KILLING && ev == AE_TIMER) {
			if (c->proc.flags & PROC_EXITED) {
				proc_call_close_out(c);
				proc_abandon_pipes(&c->proc);
			} else
				proc_call_arm(c, 1.0);
		}
		return;
	}
	switch (to) {
	case AS_STOPPING:
		proc_signal(&c->proc, SIGINT);
		proc_signal(&c->proc, SIGCONT);
		proc_call_close_in(c);
		proc_call_arm(c, c->grace);
		break;
	case AS_TERMINATING:
		proc_signal(&c->proc, SIGTERM);
		proc_signal(&c->proc, SIGCONT);
		proc_call_close_in(c);
		proc_call_arm(c, c->timeout);
		break;
	case AS_KILLING:
		proc_signal(&c->proc, SIGKILL);
		proc_signal(&c->proc, SIGCONT);
		proc_call_arm(c, 1.0);
		break;
	default:
		break;
	}
}

/* The stop sequence's timer ran out: its next step. */
static void
proc_call_stop_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	proc_call_step(w->data, AE_TIMER);
}

/*
 * End the call's process group: SIGTERM now (or, when an interrupt's
 * grace runs, its end now), SIGKILL after the stop timeout.
 */
void
proc_call_kill(struct proc_call *c)
{
	proc_call_step(c, c->stop == AS_STOPPING ? AE_TIMER : AE_BROKEN);
}

/*
 * Interrupt the call's process group as a person's ^C would, so that a
 * tool may end its work cleanly: SIGINT now, SIGTERM after the grace,
 * SIGKILL after the stop timeout.
 */
void
proc_call_interrupt(struct proc_call *c)
{
	if (c->proc.flags & PROC_EXITED) {
		proc_call_kill(c);
		return;
	}
	proc_call_step(c, AE_STOP);
}

/* Release a finished (or never started) call's resources. */
void
proc_call_free(struct proc_call *c)
{
	ev_timer_stop(LOOP, &c->stop_w);
	proc_call_close_in(c);
	proc_call_close_out(c);
	proc_free(&c->proc);
	free(c->stdin_data);
	free(c->out_buf);
	free(c);
}
