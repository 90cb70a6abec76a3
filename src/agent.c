/*
 * Agents: the registry (a red-black tree by id, a list in start order),
 * the parent/child links, and each agent's process and pipes.
 *
 * This module does the plumbing and decides nothing.  What happens to a
 * process is news for the modules above, told through the callbacks they
 * registered: its lifecycle events (exited, a pipe closed early, stopped
 * by a signal) go to the lifecycle, its stdout lines to dialect.c.  An
 * agent's process has ended only when libev has reaped its exit status
 * AND its stdout and stderr reached EOF, in either order (tmux's JOB_DEAD
 * and JOB_CLOSED), so its last lines are never lost.  Agents are freed
 * only from agent_reap_dead, never inside one of their own callbacks.
 */

#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"

#define AGENT_FREE_HOOKS	16

static struct agents		agent_list = TAILQ_HEAD_INITIALIZER(agent_list);
static struct agent_tree	agent_tree = RB_INITIALIZER(&agent_tree);
static unsigned int		agent_ndead;
static unsigned int		agent_nrunning;
static uint64_t			agent_child_seq;

static agent_event_cb	agent_event_hook;
static agent_line_cb	agent_line_hook;
static agent_cb		agent_drain_hook;
static agent_errline_cb	agent_errline_hook;
static agent_exit_cb	agent_exit_hook;
static agent_cb		agent_free_hooks[AGENT_FREE_HOOKS];
static size_t		agent_nfree_hooks;

static void	agent_chan_line(struct chan *, enum ndjson_kind, char *, size_t,
		    size_t);
static void	agent_out_eof(struct chan *, int);
static void	agent_in_error(struct chan *, int);
static void	agent_in_drained(struct chan *, int);
static void	agent_err_cb(struct ev_loop *, ev_io *, int);
static void	agent_child_cb(struct ev_loop *, ev_child *, int);
static void	agent_pipe_cb(struct ev_loop *, ev_timer *, int);

RB_GENERATE(agent_tree, agent, by_id, agent_cmp);

/* Order agents by id. */
int
agent_cmp(struct agent *a, struct agent *b)
{
	return strcmp(a->id, b->id);
}

/* Register who hears of lifecycle events: the lifecycle. */
void
agent_on_event(agent_event_cb cb)
{
	agent_event_hook = cb;
}

/* Register who reads agents' stdout lines, and hears their stdin drain. */
void
agent_on_line(agent_line_cb line, agent_cb drained)
{
	agent_line_hook = line;
	agent_drain_hook = drained;
}

/*
 * Register who reads a process's stderr lines first, and may keep one
 * from the log (nonzero), and who may say more of how it ended: the
 * launcher's link (launch.c).
 */
void
agent_on_process(agent_errline_cb errline, agent_exit_cb exited)
{
	agent_errline_hook = errline;
	agent_exit_hook = exited;
}

/* Register one more module that must forget an agent before it is freed. */
void
agent_on_free(agent_cb cb)
{
	size_t	i;

	for (i = 0; i < agent_nfree_hooks; i++)
		if (agent_free_hooks[i] == cb)
			return;		/* set up again (the tests do) */
	if (agent_nfree_hooks == AGENT_FREE_HOOKS)
		fatalx("agent_on_free: more than %d hooks", AGENT_FREE_HOOKS);
	agent_free_hooks[agent_nfree_hooks++] = cb;
}

/* Tell the lifecycle of an event (from here, or from an adapter). */
void
agent_news(struct agent *a, enum agent_event ev, const char *why)
{
	if (agent_event_hook != NULL)
		agent_event_hook(a, ev, why);
}

/* Find an agent by id. */
struct agent *
agent_find(const char *id)
{
	struct agent	key;

	key.id = (char *)id;
	return RB_FIND(agent_tree, &agent_tree, &key);
}

/* The first agent in start order (then agent_next), or NULL. */
struct agent *
agent_first(void)
{
	return TAILQ_FIRST(&agent_list);
}

/* The agent after a in start order, or NULL. */
struct agent *
agent_next(struct agent *a)
{
	return TAILQ_NEXT(a, entry);
}

/* The most recently created agent (then agent_prev), or NULL. */
struct agent *
agent_last(void)
{
	return TAILQ_LAST(&agent_list, agents);
}

/* The agent created before a, or NULL. */
struct agent *
agent_prev(struct agent *a)
{
	return TAILQ_PREV(a, agents, entry);
}

/*
 * Give the agent a new credential: 32 random bytes as hex.  corral passes
 * it to the agent's processes (CORRAL_AGENT_TOKEN), and a connection to
 * the control socket that shows it acts as the agent (control.c).  A new
 * one at each start, so the sessions of an earlier process lose it.
 */
static void
agent_new_token(struct agent *a)
{
	static const char	hex[] = "0123456789abcdef";
	uint8_t			b[AGENT_TOKEN_LEN / 2];
	size_t			i;

	arc4random_buf(b, sizeof b);
	for (i = 0; i < sizeof b; i++) {
		a->token[2 * i] = hex[b[i] >> 4];
		a->token[2 * i + 1] = hex[b[i] & 0xf];
	}
	a->token[AGENT_TOKEN_LEN] = '\0';
	explicit_bzero(b, sizeof b);
}

/* Compare two tokens in time that does not depend on where they differ. */
static int
agent_token_differs(const char *a, const char *b)
{
	unsigned char	d = 0;
	size_t		i;

	for (i = 0; i < AGENT_TOKEN_LEN; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d != 0;
}

/*
 * The live agent whose credential is token, or NULL.  Every agent is
 * compared in constant time, so the time taken says nothing of a guess.
 */
struct agent *
agent_find_token(const char *token)
{
	struct agent	*a, *found = NULL;

	if (token == NULL || strlen(token) != AGENT_TOKEN_LEN)
		return NULL;
	TAILQ_FOREACH(a, &agent_list, entry) {
		if (!agent_token_differs(a->token, token) &&
		    !(a->flags & AGENT_DEAD))
			found = a;
	}
	return found;
}

/*
 * The agent whose process, or a per-call process of it, has this pid as
 * /proc names pids, or NULL.  Only processes not reaped yet count: until
 * corral reaps one, no other process can have its pid.
 */
struct agent *
agent_of_pid(pid_t pid)
{
	struct agent	*a;
	struct proc	*p;

	if (pid <= 0)
		return NULL;
	TAILQ_FOREACH(a, &agent_list, entry)
		if (!(a->flags & AGENT_DEAD) && a->proc.pid > 0 &&
		    (a->proc.flags & AP_RUNNING) &&
		    !(a->proc.flags & AP_EXITED) &&
		    pidns_proc_pid(a->proc.pid, a->proc.hostpid) == pid)
			return a;
	if ((p = proc_find(pid)) != NULL && p->agent != NULL &&
	    !(p->agent->flags & AGENT_DEAD))
		return p->agent;
	return NULL;
}

/*
 * Create an agent (not started).  Root agents are named after their
 * workflow entry ("planner", or "echo.2" for the second of several
 * instances); children, and instance 0 (agents a client spawned), get a
 * run-wide number ("researcher-7").
 */
struct agent *
agent_create(struct agent_conf *ac, unsigned int instance, struct agent *parent)
{
	struct agent	*a;

	a = xcalloc(1, sizeof *a);
	a->conf = ac;
	a->instance = instance;
	a->proc.pid = -1;
	a->proc.errfd = -1;
	a->proc.io.rfd = a->proc.io.wfd = -1;
	ev_timer_init(&a->proc.pipe_w, agent_pipe_cb, 0, 0);
	a->proc.pipe_w.data = a;
	TAILQ_INIT(&a->children);
	TAILQ_INIT(&a->slot.direct);
	TAILQ_INIT(&a->work.inflight);
	if (parent != NULL || instance == 0)
		/* A child, or a root agent a client spawned. */
		xasprintf(&a->id, "%s-%llu", ac->name,
		    (unsigned long long)++agent_child_seq);
	else if (ac->instances > 1)
		xasprintf(&a->id, "%s.%u", ac->name, instance);
	else
		a->id = xstrdup(ac->name);
	if (parent != NULL) {
		a->parent = parent;
		a->depth = parent->depth + 1;
		TAILQ_INSERT_TAIL(&parent->children, a, sibling);
		parent->nchildren++;
	}
	agent_new_token(a);
	a->peer.name = a->id;
	a->peer.agent = a;
	a->peer.chan = &a->proc.io;
	a->peer.role = PEER_AGENT;
	RB_INSERT(agent_tree, &agent_tree, a);
	TAILQ_INSERT_TAIL(&agent_list, a, entry);
	return a;
}

/*
 * Spawn the agent's process with argv (NULL: its entry's cmd) and set up
 * its pipes and watchers.  Returns 0, or -1 with sr's error and step.
 */
int
agent_spawn(struct agent *a, char **argv, struct spawn_result *sr)
{
	return agent_spawn_as(a, a->conf, argv, sr);
}

/*
 * agent_spawn with the settings the process starts with (ac): a
 * launcher's are the agent's but those that apply on the far end.
 */
int
agent_spawn_as(struct agent *a, const struct agent_conf *ac, char **argv,
    struct spawn_result *sr)
{
	struct agent_proc	*p = &a->proc;

	agent_new_token(a);
	if (spawn_argv(ac, argv != NULL ? argv : a->conf->argv, a->id,
	    a->token, a->adapter != NULL ? a->adapter->env : NULL, sr) != 0)
		return -1;
	p->flags = AP_RUNNING;
	p->nerr = 0;	/* the stderr of this incarnation only */
	p->pid = sr->pid;
	p->hostpid = sr->hostpid;
	p->spawned_at = ev_now(LOOP);
	agent_nrunning++;

	chan_init(&p->io, a->id, sr->out, sr->in, a->conf->max_line, a);
	p->io.on_line = agent_chan_line;
	p->io.on_eof = agent_out_eof;
	p->io.on_werror = agent_in_error;
	p->io.on_drain = agent_in_drained;
	chan_start(&p->io);

	p->errfd = sr->err;
	ndjson_reader_init(&p->err_rd, 4096, 1);
	ev_io_init(&p->err_w, agent_err_cb, p->errfd, EV_READ);
	p->err_w.data = a;
	ev_io_start(LOOP, &p->err_w);

	ev_child_init(&p->child_w, agent_child_cb, p->pid, 1);
	p->child_w.data = a;
	ev_child_start(LOOP, &p->child_w);
	log_info("agent %s: spawned (pid %ld)", a->id, (long)p->hostpid);
	return 0;
}

/* Count an agent without a process of its own (per-call) as running. */
void
agent_spawn_none(struct agent *a)
{
	a->proc.flags = AP_RUNNING;
	a->proc.spawned_at = ev_now(LOOP);
	agent_nrunning++;
}

/*
 * Hand a line of the agent's stdout to whoever reads them (dialect.c).
 * The channel does this for every line; the tests and fuzz targets too.
 */
void
agent_input(struct agent *a, char *line, size_t len, enum ndjson_kind kind,
    size_t extra)
{
	if (!(a->flags & AGENT_DEAD) && agent_line_hook != NULL)
		agent_line_hook(a, line, len, kind, extra);
}

/* A line from the agent's stdout. */
static void
agent_chan_line(struct chan *c, enum ndjson_kind kind, char *line, size_t len,
    size_t extra)
{
	agent_input(c->owner, line, len, kind, extra);
}

/*
 * Queue one line for the agent's stdin, as it is (dialect_send writes it
 * in the agent's dialect).
 */
void
agent_send(struct agent *a, const char *line, size_t len)
{
	chan_write_line(&a->proc.io, line, len);
	a->proc.msgs_in++;
}

/*
 * Queue a line of the link to a launched agent's far end for its stdin
 * (launch.c's keepalives): no message, so not counted as one.
 */
void
agent_send_link(struct agent *a, const char *line, size_t len)
{
	chan_write_line(&a->proc.io, line, len);
}

/* Return nonzero if the agent's stdin is above its high watermark. */
int
agent_full(const struct agent *a)
{
	return chan_full(&a->proc.io);
}

/* Return nonzero if lines can still be written to the agent's stdin. */
int
agent_writable(const struct agent *a)
{
	return a->proc.io.wfd != -1 && !(a->proc.io.flags & CHAN_WCLOSED);
}

/* Tell the lifecycle once both pipes are done and the process reaped. */
static void
agent_check_exited(struct agent *a)
{
	if ((a->proc.flags & (AP_EXITED | AP_OUT_EOF | AP_ERR_EOF)) ==
	    (AP_EXITED | AP_OUT_EOF | AP_ERR_EOF)) {
		char	st[256];

		ev_timer_stop(LOOP, &a->proc.pipe_w);
		util_describe_status(st, sizeof st, a->proc.status);
		if (agent_exit_hook != NULL)
			agent_exit_hook(a, st, sizeof st);
		agent_news(a, AE_EXITED, st);
	}
}

/*
 * A pipe closed while the process may still run: look again a moment
 * later before judging, since EOF on a pipe usually comes just before
 * the exit status.
 */
static void
agent_pipe_check(struct agent *a, const char *what)
{
	siginfo_t	si;

	if (a->proc.flags & AP_EXITED)
		return;
	memset(&si, 0, sizeof si);
	if (waitid(P_PID, (id_t)a->proc.pid, &si, WEXITED | WNOHANG |
	    WNOWAIT) == 0 && si.si_pid == a->proc.pid)
		return;		/* a zombie: libev reaps it right away */
	if (!ev_is_active(&a->proc.pipe_w)) {
		a->proc.pipe_what = what;
		ev_timer_set(&a->proc.pipe_w, 0.2, 0);
		ev_timer_start(LOOP, &a->proc.pipe_w);
	}
}

/*
 * The pipe timer ran out.  After the process exited: something it left
 * behind still holds its pipes (the lifecycle escalates on its group).
 * Before: a pipe closed and the process really runs on.
 */
static void
agent_pipe_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct agent	*a = w->data;

	if (a->proc.flags & AP_EXITED) {
		if ((a->proc.flags & (AP_OUT_EOF | AP_ERR_EOF)) !=
		    (AP_OUT_EOF | AP_ERR_EOF))
			agent_news(a, AE_REAPED, "exited, but something still "
			    "holds its output pipes");
		return;
	}
	log_warnx("agent %s: %s but is still running; terminating it", a->id,
	    a->proc.pipe_what);
	auditlog_event("error", a->id, NULL, "code", "pipe_closed", "reason",
	    a->proc.pipe_what, NULL);	/* the shape of every "error" event */
	agent_news(a, AE_BROKEN, a->proc.pipe_what);
}

/* The agent's stdout reached EOF. */
static void
agent_out_eof(struct chan *c, int arg)
{
	struct agent	*a = c->owner;

	a->proc.flags |= AP_OUT_EOF;
	if (a->proc.io.rfd != -1) {
		close(a->proc.io.rfd);
		a->proc.io.rfd = -1;
	}
	agent_pipe_check(a, "closed its stdout");
	agent_check_exited(a);
}

/* The agent's stdin queue drained below its low watermark. */
static void
agent_in_drained(struct chan *c, int arg)
{
	if (agent_drain_hook != NULL)
		agent_drain_hook(c->owner);
}

/* Writing to the agent's stdin failed: it closed it, or is exiting. */
static void
agent_in_error(struct chan *c, int error)
{
	struct agent	*a = c->owner;

	if (a->proc.flags & AP_EXITED)
		return;
	log_info("agent %s: writing to its stdin: %s", a->id, strerror(error));
	agent_pipe_check(a, "closed its stdin");
}

/*
 * Keep a stderr line among the last few, for the errors that quote it:
 * escaped (util_vis), as those errors reach the log, corral ps and the
 * terminal of whoever runs corral.
 */
static void
agent_err_keep(struct agent *a, const char *line, size_t len)
{
	char	*slot, *esc;

	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	if (len == 0)
		return;
	/* Most agents never write to stderr: no room kept for them. */
	if (a->proc.errtail == NULL)
		a->proc.errtail = xcalloc(AGENT_ERRTAIL, AGENT_ERRLINE);
	slot = a->proc.errtail[a->proc.nerr++ % AGENT_ERRTAIL];
	esc = util_vis(line, len);
	len = util_utf8_cut(esc, strlen(esc), AGENT_ERRLINE - 1);
	memcpy(slot, esc, len);
	slot[len] = '\0';
	free(esc);
}

/* Log one stderr line with the agent's name, and keep it. */
static void
agent_err_line(void *arg, enum ndjson_kind kind, char *line, size_t len,
    size_t extra)
{
	struct agent	*a = arg;

	if (kind == NDJSON_LINE && agent_errline_hook != NULL &&
	    agent_errline_hook(a, line, len))
		return;
	if (kind == NDJSON_CUT)
		log_agent_line(a->id, line, len, extra);
	else if (kind == NDJSON_LINE || kind == NDJSON_NUL)
		log_agent_line(a->id, line, len, 0);
	else
		return;
	agent_err_keep(a, line, len);
}

/*
 * Write the agent's last stderr lines (at most n), oldest first, quoted
 * and joined, into buf; returns the length (0: none).  This is text for
 * people (a log line, an error's message): it reaches JSON only through
 * the JSON writer, which escapes it.
 */
size_t
agent_stderr_tail(const struct agent *a, char *buf, size_t len,
    unsigned int n)
{
	unsigned int	i, have = a->proc.nerr;
	size_t		o = 0;

	buf[0] = '\0';
	if (a->proc.errtail == NULL)
		return 0;
	if (n > AGENT_ERRTAIL)
		n = AGENT_ERRTAIL;
	if (n > have)
		n = have;
	for (i = have - n; i < have && o < len; i++) {
		o += (size_t)snprintf(buf + o, len - o, "%s\"%s\"", i > have - n ?
		    ", " : "", a->proc.errtail[i % AGENT_ERRTAIL]);
	}
	return o < len ? o : len - 1;
}

/* Drain the agent's stderr into the log; it must never block the agent. */
static void
agent_err_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct agent	*a = w->data;
	char		*buf;
	size_t		 size;
	ssize_t		 n;

	buf = chan_read_buffer(&size);
	n = read(a->proc.errfd, buf, size);
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		ev_io_stop(loop, &a->proc.err_w);
		ndjson_finish(&a->proc.err_rd, agent_err_line, a);
		close(a->proc.errfd);
		a->proc.errfd = -1;
		a->proc.flags |= AP_ERR_EOF;
		agent_check_exited(a);
		return;
	}
	ndjson_feed(&a->proc.err_rd, buf, (size_t)n, agent_err_line, a);
}

/* libev reaped, stopped or continued the agent's process. */
static void
agent_child_cb(struct ev_loop *loop, ev_child *w, int revents)
{
	struct agent	*a = w->data;
	struct agent_proc *p = &a->proc;
	int		 st = w->rstatus;

	if (WIFSTOPPED(st)) {
		p->flags |= AP_SIGSTOPPED;
		agent_news(a, AE_SIGSTOP, util_signame(WSTOPSIG(st)));
		return;
	}
	if (WIFCONTINUED(st)) {
		if (p->flags & AP_SIGSTOPPED) {
			p->flags &= ~AP_SIGSTOPPED;
			agent_news(a, AE_SIGCONT, "continued");
		}
		return;
	}
	ev_child_stop(loop, &p->child_w);
	p->status = st;
	p->flags |= AP_EXITED;
	p->flags &= ~AP_SIGSTOPPED;
	p->exited_at = ev_now(loop);
	ev_timer_stop(loop, &p->pipe_w);
	if ((p->flags & (AP_OUT_EOF | AP_ERR_EOF)) !=
	    (AP_OUT_EOF | AP_ERR_EOF)) {
		/* EOF comes any moment, unless a descendant holds the pipes. */
		ev_timer_set(&p->pipe_w, a->conf->stop_grace, 0);
		ev_timer_start(loop, &p->pipe_w);
	}
	agent_check_exited(a);
}

/* Return nonzero if the process was stopped by a signal. */
int
agent_sigstopped(const struct agent *a)
{
	return (a->proc.flags & AP_SIGSTOPPED) != 0;
}

/* Return nonzero if the process's exit status has been reaped. */
int
agent_exited(const struct agent *a)
{
	return (a->proc.flags & AP_EXITED) != 0;
}

/* Send a signal to the agent's process group. */
void
agent_signal(struct agent *a, int sig)
{
	if (a->proc.pid <= 0)
		return;
	/*
	 * The group outlives its leader while members remain, and its id is
	 * not reused meanwhile.  The pid alone is used only before the
	 * leader is reaped: after that it may name another process.
	 */
	if (kill(-a->proc.pid, sig) == -1 && errno == ESRCH &&
	    !(a->proc.flags & AP_EXITED))
		(void)kill(a->proc.pid, sig);
}

/* Close the agent's stdin once what is queued is written. */
void
agent_close_stdin(struct agent *a)
{
	chan_close_write(&a->proc.io);
}

/* Close the read ends of the agent's output pipes. */
static void
agent_close_output(struct agent *a)
{
	struct agent_proc	*p = &a->proc;

	if (p->io.rfd != -1) {
		ev_io_stop(LOOP, &p->io.rw);
		close(p->io.rfd);
		p->io.rfd = -1;
	}
	if (p->errfd != -1) {
		ev_io_stop(LOOP, &p->err_w);
		close(p->errfd);
		p->errfd = -1;
	}
	ndjson_reader_free(&p->err_rd);
}

/*
 * Stop waiting for EOF on pipes a descendant in another session holds:
 * our ends close (it gets EPIPE), and the process counts as ended.
 */
void
agent_abandon_pipes(struct agent *a)
{
	log_warnx("agent %s: output pipes still open after SIGKILL; closing "
	    "them", a->id);
	agent_close_output(a);
	a->proc.flags |= AP_OUT_EOF | AP_ERR_EOF;
	agent_check_exited(a);
}

/* Release the descriptors and watchers of a process that has ended. */
void
agent_release(struct agent *a)
{
	struct agent_proc	*p = &a->proc;

	agent_close_output(a);
	chan_close(&p->io);
	ev_child_stop(LOOP, &p->child_w);
	ev_timer_stop(LOOP, &p->pipe_w);
	if (p->flags & AP_RUNNING) {
		p->flags &= ~AP_RUNNING;
		agent_nrunning--;
	}
}

/* Return nonzero if d is a descendant of a. */
int
agent_is_descendant(const struct agent *d, const struct agent *a)
{
	for (d = d->parent; d != NULL; d = d->parent)
		if (d == a)
			return 1;
	return 0;
}

/* Count agents with a running process (or a per-call one started). */
unsigned int
agent_count_running(void)
{
	return agent_nrunning;
}

/* Free an agent marked dead: every module forgets it first. */
static void
agent_free(struct agent *a)
{
	struct agent	*c;
	size_t		 i;

	for (i = 0; i < agent_nfree_hooks; i++)
		agent_free_hooks[i](a);
	while ((c = TAILQ_FIRST(&a->children)) != NULL) {
		TAILQ_REMOVE(&a->children, c, sibling);
		c->parent = NULL;
	}
	if (a->parent != NULL) {
		TAILQ_REMOVE(&a->parent->children, a, sibling);
		a->parent->nchildren--;
	}
	RB_REMOVE(agent_tree, &agent_tree, a);
	TAILQ_REMOVE(&agent_list, a, entry);
	agent_release(a);
	if (a->conf_free != NULL)
		a->conf_free(a->conf);
	free(a->proc.errtail);
	free(a->id);
	free(a);
}

/* Mark an agent to be freed once it has no process. */
void
agent_mark_dead(struct agent *a)
{
	if (a->flags & AGENT_DEAD)
		return;
	a->flags |= AGENT_DEAD;
	agent_ndead++;
}

/*
 * Free every agent marked dead whose process has ended; called outside
 * their callbacks.  With all, free every agent (corral is exiting).
 */
void
agent_reap_dead(int all)
{
	struct agent	*a, *next;

	if (agent_ndead == 0 && !all)
		return;
	TAILQ_FOREACH_SAFE(a, &agent_list, entry, next) {
		if (!all && (!(a->flags & AGENT_DEAD) ||
		    (a->proc.flags & AP_RUNNING)))
			continue;
		if (a->flags & AGENT_DEAD)
			agent_ndead--;
		agent_free(a);
	}
}
