/*
 * Agents: the registry (a red-black tree by id, a list in start order), the
 * parent/child tree, and the descriptors and watchers of each process.
 *
 * An agent is STOPPED only when libev has reaped its exit status AND both
 * its stdout and stderr reached EOF, in either order (tmux's JOB_DEAD and
 * JOB_CLOSED), so its last lines are never lost.  Agents are freed only
 * from agent_reap_dead, never inside one of their own callbacks.
 */

#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"

static uint64_t	agent_child_seq;

static void	agent_line_cb(struct chan *, enum ndjson_kind, char *, size_t,
		    size_t);
static void	agent_out_eof(struct chan *, int);
static void	agent_in_error(struct chan *, int);
static void	agent_in_drained(struct chan *, int);
static void	agent_err_cb(struct ev_loop *, ev_io *, int);
static void	agent_child_cb(struct ev_loop *, ev_child *, int);

RB_GENERATE(agent_tree, agent, by_id, agent_cmp);

/* Order agents by id. */
int
agent_cmp(struct agent *a, struct agent *b)
{
	return strcmp(a->id, b->id);
}

/* Find an agent by id. */
struct agent *
agent_find(const char *id)
{
	struct agent	key;

	key.id = (char *)id;
	return RB_FIND(agent_tree, &cr->agent_tree, &key);
}

/*
 * Create an agent (not yet started).  Root agents are named after their
 * workflow entry ("planner", or "echo.2" for the second of several
 * instances); children get a run-wide number ("researcher-7").
 */
struct agent *
agent_create(struct agent_conf *ac, unsigned int instance, struct agent *parent)
{
	struct agent	*a;

	a = xcalloc(1, sizeof *a);
	a->conf = ac;
	a->instance = instance;
	a->state = AS_STOPPED;
	a->pid = -1;
	a->errfd = -1;
	a->io.rfd = a->io.wfd = -1;
	TAILQ_INIT(&a->children);
	TAILQ_INIT(&a->inflight);
	TAILQ_INIT(&a->direct);
	a->restart_override = -1;
	ev_timer_init(&a->budget_w, NULL, 0, 0);
	ev_timer_init(&a->breaker_w, NULL, 0, 0);
	ev_timer_init(&a->recover_w, NULL, 0, 0);
	if (parent != NULL)
		xasprintf(&a->id, "%s-%llu", ac->name,
		    (unsigned long long)++agent_child_seq);
	else if (ac->instances > 1)
		xasprintf(&a->id, "%s.%u", ac->name, instance);
	else
		a->id = xstrdup(ac->name);
	lifecycle_init(a);
	adapter_create(a);
	if (parent != NULL) {
		a->parent = parent;
		a->depth = parent->depth + 1;
		TAILQ_INSERT_TAIL(&parent->children, a, sibling);
		parent->nchildren++;
	}
	RB_INSERT(agent_tree, &cr->agent_tree, a);
	TAILQ_INSERT_TAIL(&cr->agents, a, entry);
	return a;
}

/* Start (or restart) the agent's process. */
int
agent_start(struct agent *a)
{
	struct spawn_result	sr;

	a->flags &= ~(AGENT_EXITED | AGENT_OUT_EOF | AGENT_ERR_EOF |
	    AGENT_STOPPED_SIG | AGENT_MISSED | AGENT_TIMEDOUT |
	    AGENT_STOP_ASKED);
	if (adapter_per_call(a)) {
		/* No process of its own: one per request, later. */
		a->start_seq = ++cr->start_seq;
		a->spawned_at = a->last_activity = ev_now(cr->loop);
		cr->nagents++;
		lifecycle_event(a, AE_SPAWNED, "%s adapter, a process per "
		    "request", a->conf->adapter);
		auditlog_event("spawn", a->id, NULL, "name", a->conf->name,
		    "adapter", a->conf->adapter, "parent", a->parent != NULL ?
		    a->parent->id : NULL, NULL);
		(void)adapter_start(a);
		lifecycle_event(a, AE_HANDSHAKE, "ready");
		return 0;
	}
	{
		char	**argv = adapter_argv(a);
		int	  rc;

		rc = spawn_argv(a->conf, argv != NULL ? argv : a->conf->argv,
		    cr->wf, a->id, &sr);
		adapter_free_argv(argv);
		if (rc != 0) {
			lifecycle_spawn_failed(a, sr.what, sr.error);
			return -1;
		}
	}
	a->pid = sr.pid;
	a->hostpid = sr.hostpid;
	a->start_seq = ++cr->start_seq;
	a->spawned_at = a->last_activity = ev_now(cr->loop);
	a->hb_missed = 0;
	a->timeouts = 0;
	a->flags |= AGENT_NOT_READY;
	cr->nagents++;

	chan_init(&a->io, a->id, sr.out, sr.in, a->conf->max_line, a);
	a->io.on_line = agent_line_cb;
	a->io.on_eof = agent_out_eof;
	a->io.on_werror = agent_in_error;
	a->io.on_drain = agent_in_drained;
	chan_start(&a->io);

	a->errfd = sr.err;
	ndjson_reader_init(&a->err_rd, 4096, 1);
	ev_io_init(&a->err_w, agent_err_cb, a->errfd, EV_READ);
	a->err_w.data = a;
	ev_io_start(cr->loop, &a->err_w);

	ev_child_init(&a->child_w, agent_child_cb, a->pid, 1);
	a->child_w.data = a;
	ev_child_start(cr->loop, &a->child_w);

	log_info("agent %s: spawned (pid %ld)", a->id, (long)a->hostpid);
	if (auditlog_enabled()) {
		char pid[24], depth[16];

		snprintf(pid, sizeof pid, "%ld", (long)a->hostpid);
		snprintf(depth, sizeof depth, "%u", a->depth);
		auditlog_event("spawn", a->id, NULL, "name", a->conf->name,
		    "pid", pid, "depth", depth, "parent", a->parent != NULL ?
		    a->parent->id : NULL, NULL);
	}
	lifecycle_event(a, AE_SPAWNED, "pid %ld", (long)a->hostpid);
	if (adapter_start(a) != 0)
		return 0;	/* the adapter says when it is ready */
	if (a->conf->ready == READY_SPAWN) {
		a->flags &= ~AGENT_NOT_READY;
		lifecycle_event(a, AE_HANDSHAKE, "ready at spawn");
		lifecycle_heartbeat_start(a);
	}
	return 0;
}

/* A line from the agent's stdout. */
static void
agent_line_cb(struct chan *c, enum ndjson_kind kind, char *line, size_t len,
    size_t extra)
{
	struct agent	*a = c->owner;

	if (!(a->flags & AGENT_DEAD))
		engine_agent_line(a, line, len, kind, extra);
}

/* Queue one line for the agent's stdin. */
void
agent_send(struct agent *a, const char *line, size_t len)
{
	chan_write_line(&a->io, line, len);
	a->msgs_in++;
}

/* Check whether both pipes are done after the process exited. */
static void
agent_check_stopped(struct agent *a)
{
	if ((a->flags & (AGENT_EXITED | AGENT_OUT_EOF | AGENT_ERR_EOF)) ==
	    (AGENT_EXITED | AGENT_OUT_EOF | AGENT_ERR_EOF))
		lifecycle_exited(a);
}

/*
 * The agent can no longer talk to us (it closed stdout, or its stdin broke)
 * while its process runs on: its work fails now and it is terminated,
 * which counts as a crash for its restart policy.
 */
static void
agent_broken(struct agent *a, const char *what)
{
	log_warnx("agent %s: %s but is still running; terminating it", a->id,
	    what);
	auditlog_event("error", a->id, NULL, "code", "pipe_closed", "reason",
	    what, NULL);	/* the shape of every "error" event */
	engine_agent_gone(a, what);
	if (a->state == AS_STOPPING)
		return;
	lifecycle_kill(a, SIGTERM);
	lifecycle_kill(a, SIGCONT);
	ev_timer_stop(cr->loop, &a->life_w);
	a->life_step = 2;
	ev_timer_set(&a->life_w, a->conf->stop_timeout, 0);
	ev_timer_start(cr->loop, &a->life_w);
}

/*
 * Decide, a moment after a pipe closed, whether the process is exiting
 * (its status is about to arrive) or really runs on without the pipe.
 * EOF on a pipe usually comes just before the exit status.
 */
static void
agent_pipe_check(struct agent *a, const char *what)
{
	siginfo_t	si;

	if (a->flags & AGENT_EXITED)
		return;
	memset(&si, 0, sizeof si);
	if (waitid(P_PID, (id_t)a->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
	    si.si_pid == a->pid)
		return;		/* a zombie: libev reaps it right away */
	if (a->life_step == 0) {
		/* Not exiting yet: look again shortly before judging. */
		a->life_step = 5;
		a->pipe_what = what;
		ev_timer_set(&a->life_w, 0.2, 0);
		ev_timer_start(cr->loop, &a->life_w);
	}
}

/* The agent's stdout reached EOF. */
static void
agent_out_eof(struct chan *c, int arg)
{
	struct agent	*a = c->owner;

	a->flags |= AGENT_OUT_EOF;
	if (a->io.rfd != -1) {
		close(a->io.rfd);
		a->io.rfd = -1;
	}
	if (a->state != AS_STOPPING)
		agent_pipe_check(a, "closed its stdout");
	agent_check_stopped(a);
}

/* The agent's stdin queue drained below its low watermark. */
static void
agent_in_drained(struct chan *c, int arg)
{
	engine_agent_drained(c->owner);
}

/* Writing to the agent's stdin failed: it closed it, or is exiting. */
static void
agent_in_error(struct chan *c, int error)
{
	struct agent	*a = c->owner;

	if (a->flags & AGENT_EXITED)
		return;
	log_info("agent %s: writing to its stdin: %s", a->id, strerror(error));
	if (a->state != AS_STOPPING)
		agent_pipe_check(a, "closed its stdin");
}

/* The grace after a pipe closed ran out and the process still runs. */
void
agent_pipe_timeout(struct agent *a)
{
	a->life_step = 0;
	if (a->flags & AGENT_EXITED)
		return;
	agent_broken(a, a->pipe_what != NULL ? a->pipe_what :
	    "closed a pipe");
}

/* Log one stderr line with the agent's name. */
static void
agent_err_line(void *arg, enum ndjson_kind kind, char *line, size_t len,
    size_t extra)
{
	struct agent	*a = arg;

	if (kind == NDJSON_CUT)
		log_agent_line(a->id, line, len, extra);
	else if (kind == NDJSON_LINE || kind == NDJSON_NUL)
		log_agent_line(a->id, line, len, 0);
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
	n = read(a->errfd, buf, size);
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		ev_io_stop(loop, &a->err_w);
		ndjson_finish(&a->err_rd, agent_err_line, a);
		close(a->errfd);
		a->errfd = -1;
		a->flags |= AGENT_ERR_EOF;
		agent_check_stopped(a);
		return;
	}
	ndjson_feed(&a->err_rd, buf, (size_t)n, agent_err_line, a);
}

/* libev reaped, stopped or continued the agent's process. */
static void
agent_child_cb(struct ev_loop *loop, ev_child *w, int revents)
{
	struct agent	*a = w->data;
	int		 st = w->rstatus;

	if (WIFSTOPPED(st)) {
		a->flags |= AGENT_STOPPED_SIG;
		lifecycle_event(a, AE_SIGSTOP, "stopped by signal %s",
		    util_signame(WSTOPSIG(st)));
		return;
	}
	if (WIFCONTINUED(st)) {
		if (a->flags & AGENT_STOPPED_SIG) {
			a->flags &= ~AGENT_STOPPED_SIG;
			a->last_activity = ev_now(loop);
			a->flags &= ~AGENT_MISSED;
			lifecycle_event(a, AE_SIGCONT, "continued");
		}
		return;
	}
	ev_child_stop(loop, &a->child_w);
	a->status = st;
	a->flags |= AGENT_EXITED;
	a->flags &= ~AGENT_STOPPED_SIG;
	a->exited_at = ev_now(loop);
	if ((a->flags & (AGENT_OUT_EOF | AGENT_ERR_EOF)) !=
	    (AGENT_OUT_EOF | AGENT_ERR_EOF) && a->state != AS_STOPPING &&
	    a->life_step == 0) {
		/* Something else holds its pipes: escalate on its group. */
		ev_timer_set(&a->life_w, a->conf->stop_grace, 0);
		a->life_step = 1;
		ev_timer_start(loop, &a->life_w);
	}
	agent_check_stopped(a);
}

/* Close the read ends of the agent's output pipes. */
void
agent_close_output(struct agent *a)
{
	if (a->io.rfd != -1) {
		ev_io_stop(cr->loop, &a->io.rw);
		close(a->io.rfd);
		a->io.rfd = -1;
	}
	if (a->errfd != -1) {
		ev_io_stop(cr->loop, &a->err_w);
		close(a->errfd);
		a->errfd = -1;
	}
	ndjson_reader_free(&a->err_rd);
}

/* Release the descriptors and watchers of a process that has stopped. */
void
agent_exited_cleanup(struct agent *a)
{
	agent_close_output(a);
	chan_close(&a->io);
	ev_child_stop(cr->loop, &a->child_w);
	ev_timer_stop(cr->loop, &a->hb_w);
	if (cr->nagents > 0)
		cr->nagents--;
}

/* Return nonzero if the agent's parent is stopping or gone. */
int
agent_parent_gone(const struct agent *a)
{
	return a->parent != NULL && (a->parent->state == AS_STOPPING ||
	    !lifecycle_alive(a->parent) || (a->parent->flags &
	    AGENT_NORESTART));
}

/* An agent failed for good: its parent (or the workflow) must hear of it. */
void
agent_escalate(struct agent *a, const char *why)
{
	engine_agent_failed(a, why);
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

/* Count agents with a live process. */
unsigned int
agent_count_alive(void)
{
	return cr->nagents;
}

/* Free an agent that is stopped and marked dead. */
void
agent_free(struct agent *a)
{
	struct agent	*c;

	while ((c = TAILQ_FIRST(&a->children)) != NULL) {
		TAILQ_REMOVE(&a->children, c, sibling);
		c->parent = NULL;
	}
	if (a->parent != NULL) {
		TAILQ_REMOVE(&a->parent->children, a, sibling);
		a->parent->nchildren--;
	}
	route_forget_agent(a);
	route_remove_agent(a);
	RB_REMOVE(agent_tree, &cr->agent_tree, a);
	TAILQ_REMOVE(&cr->agents, a, entry);
	ev_timer_stop(cr->loop, &a->budget_w);
	ev_timer_stop(cr->loop, &a->breaker_w);
	ev_timer_stop(cr->loop, &a->recover_w);
	free(a->stop_why);
	ev_timer_stop(cr->loop, &a->life_w);
	ev_timer_stop(cr->loop, &a->hb_w);
	ev_child_stop(cr->loop, &a->child_w);
	agent_close_output(a);
	chan_close(&a->io);
	adapter_free(a);
	free(a->restarts);
	free(a->spawn_id);
	free(a->last_reply);
	if (a->spawn_rpc_id != NULL)
		json_decref(a->spawn_rpc_id);
	free(a->id);
	free(a);
}

/* Mark an agent to be freed once it is stopped. */
void
agent_mark_dead(struct agent *a)
{
	if (a->flags & AGENT_DEAD)
		return;
	a->flags |= AGENT_DEAD;
	cr->ndead++;
}

/* Free every agent marked dead; called outside their callbacks. */
void
agent_reap_dead(void)
{
	struct agent	*a, *next;

	if (cr->ndead == 0)
		return;
	TAILQ_FOREACH_SAFE(a, &cr->agents, entry, next) {
		if ((a->flags & AGENT_DEAD) && (a->state == AS_STOPPED ||
		    a->state == AS_FAILED)) {
			agent_free(a);
			cr->ndead--;
		}
	}
}
