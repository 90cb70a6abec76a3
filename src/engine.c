/*
 * The workflow engine: jobs, requests and their outcomes.
 *
 * A job is corral run's goal, or one envelope read by corral serve.  It
 * owns the requests made on its behalf: its first envelope, the requests
 * built from each reply's outputs.next_actions, and reflections on weak
 * replies.  Every request ends in exactly one outcome, counted and written
 * to the audit log: replied, errored (an error envelope), or expired
 * (TIMEOUT).  A job ends when a reply with intent finalize arrives (that
 * reply is its result) or when none of its requests is left (the latest
 * terminal envelope is its result), or when a limit stops it.
 *
 * The per-message path is: the agent's dialect scans the line once
 * (dialect.c, jscan.c) and validates the tape (envelope.c); the engine
 * matches the reply to its request and forwards the bytes as they came.
 * Only envelopes that lack trace.id, trace.parents or a timestamp are
 * copied, to splice those in.  A scan's tape belongs to the
 * handler that made it: anything that must scan another line meanwhile (a
 * retry, a child's result, a reply an adapter makes while a request is
 * being routed) takes a scanner of its own from a small pool.
 *
 * The engine sits above routing and the lifecycle and hears from them
 * through callbacks; what it has to say to the supervisor (a result, a
 * line for serve's stdout, stdin pressure) and to the sub-agent module
 * (a task's reply and end) goes through the hooks they registered.
 *
 * This file keeps the engine's state, its requests and their dispatch,
 * and what an agent's lifecycle means for its work.  The other concerns
 * are parts of their own, sharing engine-int.h: engine-retry.c (retries,
 * failures, cancelling), engine-outcome.c (outcomes, joins, jobs' ends),
 * engine-flow.c (reflection, next_actions), engine-reply.c (agents'
 * envelopes; matching and completing replies), engine-progress.c
 * (progress).  It hears nothing but envelopes from an agent's pipe:
 * dialect.c reads the lines and hands them over.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "engine-int.h"

const struct workflow		*engine_wf;
struct engine_hooks		 engine_hooks;
struct engine_task_hooks	 engine_task;
struct engine_step_hooks	 engine_step;
struct engine_jobq		 engine_jobs = TAILQ_HEAD_INITIALIZER(engine_jobs);
struct msgq			 engine_retrying =
				    TAILQ_HEAD_INITIALIZER(engine_retrying);
unsigned int			 engine_njobs;
/* The engine asked to pause stdin at max_inflight jobs, not since resumed. */
int				 engine_jobs_held;
int				 engine_join_then = -1;
struct engine_stats		 engine_stats;
int				 engine_stopping;
static TAILQ_HEAD(, msg)	 engine_live =
				    TAILQ_HEAD_INITIALIZER(engine_live);
static uint64_t			 engine_msg_seq;
/*
 * Requests made and freed for every envelope: as many kept for reuse as
 * a full window of corral serve's inputs has (1,024, about 430 KiB), so
 * that a steady stream allocates none.
 */
static struct xpool		 engine_msg_pool =
				     XPOOL_INITIALIZER(struct msg, 1024);
/*
 * The copies of inputs of ENGINE_LINE_MIN to ENGINE_LINE_BLOCK - 1 bytes
 * (a typical envelope) are blocks of one size from a pool, charged to
 * limits.memory as the whole block (at most twice the line), so that the
 * limit still bounds what they take.
 */
#define ENGINE_LINE_BLOCK	1024
#define ENGINE_LINE_MIN		512
static struct xpool		 engine_line_pool = { NULL, ENGINE_LINE_BLOCK,
				     0, 512 };
/*
 * An input of ENGINE_LINE_SHARED bytes or more is kept in a shared line
 * (struct ndjson_buf): the reader's own buffer when the line was read in
 * place, and its agent's queue refers to it instead of copying it.  It
 * is charged to limits.memory as the buffer's capacity (at most twice
 * the line).  Below, a copy costs less than the reference's upkeep.
 */
#define ENGINE_LINE_SHARED	(16 * 1024)
#ifndef CORRAL_SANITIZE
#define ENGINE_LINE_SHARED_P(len)	((len) >= ENGINE_LINE_SHARED)
#else
/*
 * In the sanitizers' and the fuzzers' builds, also every input of an odd
 * length: the lifetime of a line its agent's queue still holds is what
 * they must see, their tests and fuzzers send mostly short lines, and
 * the copies (pooled or not) of the even ones stay covered too.
 */
#define ENGINE_LINE_SHARED_P(len)	(((len) & 1) || \
				    (len) >= ENGINE_LINE_SHARED)
#endif
/*
 * Timers of requests.  A request waits (in a queue, or at its agent) for
 * a time its row or its agent sets, and requests that wait as long,
 * armed one after another, expire in the order they were armed: each
 * such wait is a class, a list in that order under one timer armed for
 * its oldest request, so that a request's start and end are list
 * operations, not two on libev's heap.  A request whose envelope has a
 * TTL (it counts from acceptance), a retry's delay, and the waits beyond
 * ENGINE_TCLASSES distinct ones keep a timer of their own.
 */
#define ENGINE_TCLASSES		16
struct engine_tclass {
	double		 wait;
	struct msgq	 q;
	ev_timer	 timer;
};
static struct engine_tclass	 engine_tclass[ENGINE_TCLASSES];
static size_t			 engine_ntclass;

static void	engine_dispatched(struct msg *, struct agent *);
static const char *engine_trace_from(const struct msg *);
static void	engine_queued(struct msg *, double);
static void	engine_unqueued(struct msg *, int);
static void	engine_lifecycle(struct agent *, enum agent_state,
		    enum agent_state, enum agent_event, const char *);
static void	engine_new_agent(struct agent *);
static void	engine_forget_agent(struct agent *);

/*
 * The workspace wrote or refused an artifact, after the reply that carried
 * it went on: the first refusal of a reply earns its author a notice.
 */
static void
engine_artifact(const struct workspace_result *r)
{
	struct agent	*a;
	char		 why[320];

	if (r->why == NULL || !r->first_refusal ||
	    (a = agent_find(r->agent)) == NULL)
		return;
	snprintf(why, sizeof why, "artifact %s refused: %s", r->path, r->why);
	dialect_notice(a, "artifact_refused", "outputs.artifacts", why,
	    r->reply);
}

/*
 * Set the engine up for a workflow, with the supervisor's hooks, and
 * below it the routing table.
 */
void
engine_init(const struct workflow *wf, const struct engine_hooks *hooks)
{
	static const struct route_hooks rh = {
		engine_dispatched, engine_queued, engine_unqueued,
		engine_route_fail
	};

	engine_wf = wf;
	engine_hooks = *hooks;
	while (engine_ntclass > 0)
		ev_timer_stop(LOOP, &engine_tclass[--engine_ntclass].timer);
	engine_join_then = wf->join_then != NULL ? protocol_intent(wf->join_then,
	    strlen(wf->join_then)) : -1;
	memset(&engine_task, 0, sizeof engine_task);
	memset(&engine_step, 0, sizeof engine_step);
	memset(&engine_stats, 0, sizeof engine_stats);
	engine_njobs = 0;
	engine_jobs_held = 0;
	engine_stopping = 0;
	lifecycle_init();
	route_init(wf, &rh);
	lifecycle_observe(engine_lifecycle);
	agent_on_create(engine_new_agent);
	agent_on_free(engine_forget_agent);
	adapter_on_reply(engine_adapter_reply);
	adapter_on_progress(engine_progress);
	adapter_on_find(engine_inflight_find);
	budget_init(wf);
	budget_on_run(engine_run_budget);
	workspace_on_result(engine_artifact);
}

/* Register the sub-agent module's part in tasks. */
void
engine_on_task(const struct engine_task_hooks *hooks)
{
	engine_task = *hooks;
}

/* Register the step module's part in jobs (docs/steps.md). */
void
engine_on_step(const struct engine_step_hooks *hooks)
{
	engine_step = *hooks;
}

/* The outcome counters (docs/reliability.md). */
const struct engine_stats *
engine_stats_get(void)
{
	return &engine_stats;
}

/* What a request's line is charged to limits.memory. */
static size_t
engine_line_cost(const struct msg *m)
{
	if (m->lbuf != NULL)
		return m->lbuf->cap;
	return m->pooled ? ENGINE_LINE_BLOCK : m->len;
}

/* Free a request's line, wherever it came from. */
static void
engine_line_free(struct msg *m)
{
	if (m->lbuf != NULL) {
		/* A queue may still hold it: the last to let go frees it. */
		ndjson_buf_put(m->lbuf);
		m->lbuf = NULL;
	} else if (m->pooled)
		xpool_put(&engine_line_pool, m->line);
	else
		free(m->line);
	m->line = NULL;
	m->pooled = 0;
}

/*
 * Give a request a new line (taken over), the same envelope with what a
 * handoff, a retry or a step adds.
 */
void
engine_msg_line(struct msg *m, char *line, size_t len)
{
	engine_stats.bytes -= engine_line_cost(m);
	engine_line_free(m);
	m->line = line;
	m->len = len;
	engine_stats.bytes += len;
}

/* Create a request for job j from an envelope line (taken over). */
struct msg *
engine_msg_create(struct job *j, char *line, size_t len, int kind, int intent)
{
	struct msg	*m;

	m = xpool_get(&engine_msg_pool);
	m->line = line;
	m->len = len;
	m->kind = (uint8_t)kind;
	m->intent = (uint8_t)intent;
	m->prio = PRIO_NORMAL;
	m->job = j;
	m->accepted = ev_now(LOOP);
	m->seq = ++engine_msg_seq;
	ev_timer_init(&m->timer, engine_msg_timer_cb, 0, 0);
	m->timer.data = m;
	/* Its bookkeeping counts too: a small envelope costs more in it. */
	engine_stats.bytes += len + sizeof *m;
	if (j != NULL) {
		/* A child's task is the child's work, not a branch of the job. */
		j->pending++;
		if (kind != MSG_TASK)
			j->open++;
		TAILQ_INSERT_TAIL(&j->msgs, m, job_entry);
	}
	TAILQ_INSERT_TAIL(&engine_live, m, live_entry);
	engine_stats.accepted++;
	engine_stats.live_msgs++;
	return m;
}

/*
 * The live request with this trace id (the first, should a client have
 * sent one id twice), or NULL: it ended, or never was.  Cancelling is
 * rare, so a walk over the live requests is enough.
 */
struct msg *
engine_find(const char *id)
{
	struct msg	*m;

	TAILQ_FOREACH(m, &engine_live, live_entry)
		if (strcmp(m->id, id) == 0)
			return m;
	return NULL;
}

/*
 * Fill in what a request made elsewhere (a task, a client's message)
 * says of itself: its id, the agent it is addressed to (or NULL), the
 * agent its result goes to (or NULL), its priority and its TTL.
 */
void
engine_msg_setup(struct msg *m, const char *id, struct agent *target,
    struct agent *parent, int prio, double timeout)
{
	strlcpy(m->id, id, sizeof m->id);
	m->target = target;
	m->parent_agent = parent;
	m->prio = (uint8_t)prio;
	m->timeout = timeout;
}

/* The agent's requests part, made now if it had none. */
struct work_busy *
engine_busy(struct agent *a)
{
	if (a->work.busy == NULL) {
		a->work.busy = xcalloc(1, sizeof *a->work.busy);
		TAILQ_INIT(&a->work.busy->inflight);
	}
	return a->work.busy;
}

/*
 * The requests agent a works on, to read: an empty list shared by every
 * agent that never had one.
 */
struct msgq *
engine_queue(struct agent *a)
{
	static struct msgq	none = TAILQ_HEAD_INITIALIZER(none);

	return a->work.busy != NULL ? &a->work.busy->inflight : &none;
}

/* The oldest request agent a works on, or NULL. */
struct msg *
engine_inflight_first(struct agent *a)
{
	return TAILQ_FIRST(engine_queue(a));
}

/* The request its agent got after m, or NULL. */
struct msg *
engine_inflight_next(struct msg *m)
{
	return TAILQ_NEXT(m, entry);
}

/*
 * The request of this id that agent a works on on this attempt (0: any),
 * or NULL.
 */
struct msg *
engine_inflight_find(struct agent *a, const char *id, unsigned int attempts)
{
	struct msg	*m;

	TAILQ_FOREACH(m, engine_queue(a), entry)
		if (strcmp(m->id, id) == 0 && (attempts == 0 ||
		    m->attempts == attempts))
			return m;
	return NULL;
}

/*
 * The latest progress agent a reported on its work, with the request it
 * is about and when it came; NULL when it has none.
 */
const char *
engine_progress_latest(struct agent *a, const char **req, ev_tstamp *at)
{
	const struct work_progress	*p;

	if (a->work.busy == NULL || (p = a->work.busy->progress) == NULL) {
		*req = "";
		*at = 0;
		return NULL;
	}
	*req = p->req;
	*at = p->at;
	return p->text;
}

/* Forget the latest progress of an agent. */
static void
engine_progress_drop(struct agent *a)
{
	if (a->work.busy == NULL || a->work.busy->progress == NULL)
		return;
	free(a->work.busy->progress->text);
	free(a->work.busy->progress);
	a->work.busy->progress = NULL;
}

/* The live request after prev (NULL: the first), in acceptance order. */
struct msg *
engine_live_next(struct msg *prev)
{
	return prev == NULL ? TAILQ_FIRST(&engine_live) :
	    TAILQ_NEXT(prev, live_entry);
}

/*
 * Return nonzero if n more bytes of envelopes fit under limits.memory.
 */
int
engine_room(size_t n)
{
	return engine_stats.bytes + n <= engine_wf->max_memory;
}

/*
 * Return nonzero if a request of len bytes made elsewhere (a client's
 * message) fits under limits.memory.
 */
int
engine_has_room(size_t len)
{
	return engine_room(len + sizeof(struct msg));
}

/* Take a request out of its job: the job no longer waits for it. */
struct job *
engine_msg_detach(struct msg *m)
{
	struct job	*j = m->job;

	if (j != NULL) {
		TAILQ_REMOVE(&j->msgs, m, job_entry);
		m->job = NULL;
	}
	return j;
}

/* Free a request (its outcome has been recorded). */
void
engine_msg_free(struct msg *m)
{
	engine_msg_detach(m);
	TAILQ_REMOVE(&engine_live, m, live_entry);
	engine_progress_forget(m);
	engine_msg_disarm(m);
	engine_stats.bytes -= engine_line_cost(m) + m->weaklen + sizeof *m;
	engine_line_free(m);
	xfree(m->weak);
	json_decref(m->reports);
	xpool_put(&engine_msg_pool, m);
	engine_stats.live_msgs--;
}

/* (Re)start a class's timer for the time its oldest request has left. */
static void
engine_tclass_start(struct engine_tclass *c, double left)
{
	if (ev_is_active(&c->timer))
		ev_timer_stop(LOOP, &c->timer);
	ev_timer_set(&c->timer, left, 0);
	ev_timer_start(LOOP, &c->timer);
}

/*
 * A class's timer fired: the requests at its head whose wait is over
 * expire, in the order they were armed; the timer is set again for the
 * next one.
 */
static void
engine_tclass_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct engine_tclass	*c = w->data;
	struct msg		*m;
	double			 left;

	while ((m = TAILQ_FIRST(&c->q)) != NULL) {
		/*
		 * libev fires on time; a rounding of a float is not early.
		 * The monotonic clock: a step of the wall clock (ev_now)
		 * moves no request's expiry, as with a timer of its own.
		 */
		if ((left = m->due - util_mono()) > 1e-4) {
			engine_tclass_start(c, left);
			return;
		}
		engine_msg_disarm(m);
		engine_msg_timer_cb(loop, &m->timer, revents);
	}
}

/* The class of requests that wait this long, or NULL: all are taken. */
static struct engine_tclass *
engine_tclass_find(double wait)
{
	struct engine_tclass	*c;
	size_t			 i;

	for (i = 0; i < engine_ntclass; i++)
		if (engine_tclass[i].wait == wait)
			return &engine_tclass[i];
	if (engine_ntclass == ENGINE_TCLASSES)
		return NULL;
	c = &engine_tclass[engine_ntclass++];
	c->wait = wait;
	TAILQ_INIT(&c->q);
	ev_timer_init(&c->timer, engine_tclass_cb, 0, 0);
	c->timer.data = c;
	return c;
}

/* Stop a request's timer, whichever it is. */
void
engine_msg_disarm(struct msg *m)
{
	struct engine_tclass	*c;

	if (m->tclass == 0) {
		if (ev_is_active(&m->timer))
			ev_timer_stop(LOOP, &m->timer);
		return;
	}
	c = &engine_tclass[m->tclass - 1];
	TAILQ_REMOVE(&c->q, m, timer_entry);
	m->tclass = 0;
	/* A timer left armed for none would keep the loop from ending. */
	if (TAILQ_EMPTY(&c->q))
		ev_timer_stop(LOOP, &c->timer);
}

/* Arm a request's timer for the time it may still wait. */
static void
engine_msg_arm(struct msg *m, double wait)
{
	struct engine_tclass	*c = NULL;

	engine_msg_disarm(m);
	if (m->timeout > 0) {
		/* The envelope's own deadline counts from acceptance. */
		wait = m->accepted + m->timeout - ev_now(LOOP);
		if (wait < 0.001)
			wait = 0.001;
	}
	if (wait <= 0)
		return;
	m->deadline = ev_now(LOOP) + wait;
	if (m->timeout > 0 || (c = engine_tclass_find(wait)) == NULL) {
		ev_timer_set(&m->timer, wait, 0);
		ev_timer_start(LOOP, &m->timer);
		return;
	}
	/* Its deadline is the latest of its class: it goes last. */
	m->due = util_mono() + wait;
	TAILQ_INSERT_TAIL(&c->q, m, timer_entry);
	m->tclass = (uint8_t)(c - engine_tclass + 1);
	if (!ev_is_active(&c->timer))
		engine_tclass_start(c, wait);
}

/* A request was queued: bound its wait. */
static void
engine_queued(struct msg *m, double wait)
{
	m->where = MSG_QUEUED;
	engine_msg_arm(m, wait);
	/* Less urgent work must not hold it up while it waits. */
	engine_prio_waiting(m);
	/* The supervisor pauses stdin if that is where the work comes from. */
	if (route_queued_count() >= engine_wf->max_queue / 2 &&
	    engine_hooks.pause != NULL)
		engine_hooks.pause(STDIN_P_QUEUE, 1);
}

/* A request left a queue: a row's may let stdin be read again. */
static void
engine_unqueued(struct msg *m, int row)
{
	m->where = MSG_NOWHERE;
	if (row && route_queued_count() < engine_wf->max_queue / 4 &&
	    engine_hooks.pause != NULL)
		engine_hooks.pause(STDIN_P_QUEUE, 0);
}

/* A request was written to agent a: it is outstanding there. */
static void
engine_dispatched(struct msg *m, struct agent *a)
{
	if (trace_on())
		trace_envelope(engine_trace_from(m), a->id, m->line, m->len);
	m->agent = a;
	m->where = MSG_INFLIGHT;
	m->attempts++;
	m->sent = ev_now(LOOP);
	TAILQ_INSERT_TAIL(&engine_busy(a)->inflight, m, entry);
	a->work.busy->by_prio[m->prio]++;
	lifecycle_work(a, 1);
	engine_msg_arm(m, a->conf->timeout);
}

/* Who a request comes from, for corral run --trace. */
static const char *
engine_trace_from(const struct msg *m)
{
	switch (m->kind) {
	case MSG_GOAL:
		return "user";
	case MSG_INPUT:
		return "stdin";
	case MSG_TASK:
		return m->parent_agent != NULL ? m->parent_agent->id : "corral";
	case MSG_SEND:
		return "client";
	default:
		return "corral";	/* next actions, reflections */
	}
}

/* Route a request, or fail it (its outcome is recorded either way). */
void
engine_submit(struct msg *m)
{
	(void)route_submit(m);
}

/*
 * Route a new request of a job: a message of its job's session, when the
 * job has one.
 */
void
engine_start(struct msg *m)
{
	if (m->job != NULL && m->job->session != NULL &&
	    engine_hooks.session != NULL)
		engine_hooks.session(m->job->session, "request", m,
		    engine_trace_from(m), m->line, m->len);
	(void)route_submit(m);
}

/* Keep the start of a request's task (len bytes at s), for the views. */
void
engine_set_title(struct msg *m, const char *s, size_t len)
{
	len = util_utf8_cut(s, len, sizeof m->title - 1);
	memcpy(m->title, s, len);
	m->title[len] = '\0';
}

/*
 * A job belongs to the session a string token of a scanned line names
 * (1 to 128 bytes), unless it belongs to one already.
 */
void
engine_job_session(struct job *j, struct jscan *js, const char *s, int tok)
{
	const char	*t;
	size_t		 len;

	if (j->session != NULL || tok < 0 || js->tok[tok].type != JT_STRING)
		return;
	t = jscan_text(js, s, tok, &len);
	if (len > 0 && len <= 128)
		j->session = xmemdup0(t, len);
}

/* Keep a request's task from a string token of a scanned line, if one. */
void
engine_title(struct msg *m, struct jscan *js, const char *s, int tok)
{
	const char	*t;
	size_t		 len;

	if (tok < 0 || js->tok[tok].type != JT_STRING)
		return;
	t = jscan_text(js, s, tok, &len);
	engine_set_title(m, t, len);
}

/*
 * Take a request off its agent's outstanding list.  The slot it frees
 * goes to waiting work only when the caller kicks the route, once the
 * request's outcome is recorded, so the audit log stays in order.
 */
void
engine_undispatch(struct msg *m)
{
	struct agent	*a = m->agent;

	if (m->where != MSG_INFLIGHT)
		return;
	/* In flight there: its part is made. */
	TAILQ_REMOVE(&a->work.busy->inflight, m, entry);
	a->work.busy->by_prio[m->prio]--;
	m->where = MSG_NOWHERE;
	m->agent = NULL;
	if (TAILQ_EMPTY(&a->work.busy->inflight))
		/* Its progress was about work it no longer has. */
		engine_progress_drop(a);
	lifecycle_work(a, -1);
}

/*
 * Give an outstanding request back to its target's own queue: the target
 * is restarting and gets it again when ready.
 */
void
engine_redirect(struct msg *m)
{
	struct agent	*a = m->agent;

	engine_undispatch(m);
	m->target = a;
	route_direct(m);
}

/*
 * Hand an outstanding request over to agent t (a handoff): it leaves its
 * agent, takes the new line (the same envelope, with what the handoff
 * adds), and waits for t alone; its outcome is still the one it will
 * have.
 */
void
engine_handoff(struct msg *m, struct agent *t, char *line, size_t len)
{
	struct agent	*a = m->agent;

	engine_undispatch(m);
	engine_msg_line(m, line, len);
	m->target = t;
	route_direct(m);
	if (a != NULL)
		route_kick(a);
}

/* Return nonzero if an agent will take work again (it is not leaving). */
int
engine_will_serve(const struct agent *a)
{
	return !(a->flags & AGENT_DEAD) && !lifecycle_done(a) &&
	    !lifecycle_leaving(a);
}

/*
 * Make a new job from a checked envelope (scanned in js): a serve input
 * or run's goal.  Its trace.id, or a new one when it names none, is the
 * job's id; the request is recorded but not yet routed.
 */
static struct msg *
engine_job_start(struct jscan *js, const char *line, size_t len,
    struct env *env, int origin)
{
	struct job		*j;
	struct msg		*m;
	struct ndjson_buf	*lb = NULL;
	char			 id[CORRAL_ID_MAX] = { 0 }, *copy;
	size_t			 clen;
	int			 pooled = 0, n;
	uint8_t			 idq;

	if ((n = envelope_trace_id(js, line, env, id, sizeof id)) < 0) {
		protocol_new_id(id, sizeof id);
		n = (int)strlen(id);
		copy = envelope_fill(js, line, len, env, id, NULL, &clen);
	} else if (env->timestamp == -1)
		copy = envelope_fill(js, line, len, env, NULL, NULL, &clen);
	else
		copy = NULL;	/* nothing is missing: the usual input */
	if (copy != NULL && ENGINE_LINE_SHARED_P(clen))
		lb = ndjson_buf_wrap(copy, clen);	/* shared as it is */
	else if (copy == NULL && ENGINE_LINE_SHARED_P(len)) {
		/*
		 * A long line as it came: the reader's buffer if it was read
		 * in place, shared with its agent's queue, not copied again.
		 */
		lb = ndjson_buf_new(line, len);
		copy = lb->p;
		clen = len;
	} else if (copy == NULL) {
		/* The line as it came: a typical one fits a pool's block. */
		pooled = len >= ENGINE_LINE_MIN && len < ENGINE_LINE_BLOCK;
		copy = pooled ? xpool_alloc(&engine_line_pool) :
		    xmalloc(len + 1);
		memcpy(copy, line, len);
		copy[len] = '\0';
		clen = len;
	}
	/*
	 * The id fits the job's and the request's (CORRAL_ID_MAX each):
	 * copied whole, a few stores, without measuring it (id was zeroed).
	 */
	/* For the audit log's lines: checked once here, not in each. */
	idq = auditlog_enabled() ? jsonw_idq(id, (size_t)n) : 0;
	j = engine_job_create(origin);
	_Static_assert(sizeof j->id == sizeof id && sizeof m->id == sizeof id,
	    "a job's and a request's ids are CORRAL_ID_MAX bytes");
	memcpy(j->id, id, sizeof j->id);
	j->idq = idq;
	m = engine_msg_create(j, copy, clen, origin == JOB_RUN ? MSG_GOAL :
	    MSG_INPUT, env->intent);
	if (pooled) {
		m->pooled = 1;
		engine_stats.bytes += ENGINE_LINE_BLOCK - clen;
	} else if (lb != NULL) {
		m->lbuf = lb;
		engine_stats.bytes += lb->cap - clen;
	}
	memcpy(m->id, id, sizeof m->id);
	m->idq = idq;
	m->prio = (uint8_t)env->prio;
	m->timeout = env->ttl;
	engine_title(m, js, line, env->task);
	if (env->session != -1)
		engine_job_session(j, js, line, env->session);
	if (origin == JOB_RUN)
		auditlog_envelope_q("goal", 4, NULL, 0, id, idq, copy, clen);
	else
		auditlog_envelope_q("input", 5, NULL, 0, id, idq, copy, clen);
	if (engine_step_first(m) != 0)
		return NULL;	/* it failed at once: nothing to route */
	return m;
}

/*
 * An envelope on corral serve's stdin, from peer (read by dialect.c): a
 * new job.  Whatever stops it, it gets exactly one line back.
 */
void
engine_input(struct peer *from, struct dialect_frame *f)
{
	struct jscan	*js = f->js;
	struct msg	*m;
	const char	*line = f->line;
	size_t		 len = f->len;
	char		 id[CORRAL_ID_MAX], *stripped = NULL;

	if (!engine_room(len + 256)) {
		dialect_warn(NULL, "refused: limits.memory is reached");
		dialect_notice(NULL, "memory_limit", NULL, "corral holds as many "
		    "envelopes as limits.memory allows; send this again later",
		    envelope_raw_id(js, line, id, sizeof id));
		return;
	}
	if (budget_run_spent()) {
		/* The run's budget is spent: no new work is taken. */
		dialect_notice(NULL, "budget_exceeded", NULL, "the run's budget "
		    "is spent; no new work is taken",
		    envelope_raw_id(js, line, id, sizeof id));
		return;
	}
	/* Only corral says what a line is: nobody may forge that. */
	if ((line = engine_unforge(js, NULL, line, &len, &f->env,
	    &stripped)) == NULL) {
		dialect_notice(NULL, "invalid_envelope", "corral", "the input "
		    "could not be read without its corral member", NULL);
		return;
	}
	m = engine_job_start(js, line, len, &f->env, JOB_SERVE);
	if (engine_njobs >= engine_wf->max_inflight && engine_hooks.pause) {
		engine_jobs_held = 1;
		engine_hooks.pause(STDIN_P_JOBS, 1);
	}
	if (m != NULL)
		engine_start(m);
	xfree(stripped);
}

/*
 * Start corral run's job with its first envelope, built and checked by
 * envelope_goal: the trace.id it names (else a new one) is the job's.
 */
int
engine_start_goal(const char *line, size_t len)
{
	struct env_error	 err;
	struct env		 env;
	struct jscan		*js;
	struct msg		*m;

	js = jscan_take();
	if (jscan_run(js, line, len) != 0 ||
	    envelope_check(js, line, len, &env, &err) != 0) {
		jscan_give(js);
		return -1;
	}
	m = engine_job_start(js, line, len, &env, JOB_RUN);
	jscan_give(js);
	if (m != NULL)
		engine_start(m);
	return 0;
}

/*
 * An agent stopped or can no longer answer: its outstanding requests fail
 * (or are delivered again, for HIGH and CRITICAL ones).
 */
static void
engine_agent_gone(struct agent *a, const char *why, const char *note,
    int failed)
{
	struct msg	*m;

	if (engine_task.gone != NULL)
		engine_task.gone(a, why);
	while ((m = route_direct_first(a)) != NULL &&
	    !lifecycle_will_restart(a)) {
		route_dequeue(m);
		engine_fail(m, "UNAVAILABLE", "agent_lost", "agent %s %s",
		    a->id, why);
	}
	while ((m = TAILQ_FIRST(engine_queue(a))) != NULL) {
		if (!engine_stopping && lifecycle_will_restart(a) &&
		    adapter_keeps(a, m)) {
			/* Its adapter restarted it for this request. */
			engine_redirect(m);
			continue;
		}
		if (!engine_stopping)
			engine_pin(m, a, "UNAVAILABLE", "agent_lost");
		engine_undispatch(m);
		m->agent = a;
		if (engine_stopping) {
			/* We stopped it: not the agent's failure. */
			engine_fail(m, "UNAVAILABLE", "shutdown", "corral shut "
			    "down before agent %s replied", a->id);
			continue;
		}
		breaker_failure(a);
		/* Failed for its output, it is alive: say what happened. */
		engine_fail(m, "UNAVAILABLE", "agent_lost", "agent %s %s "
		    "before replying: %s%s", a->id, failed ? "failed" : "ended",
		    note, dialect_failed_output(a) ? "; hint: stdout is for "
		    "envelopes, one JSON object a line; a program that is not "
		    "an agent needs adapter: exec" : "");
	}
	route_check_orphans();
}

/*
 * An agent changed state: work at an agent that exited, broke or failed
 * ends now, and so does work waiting for a restart that was called off
 * (BACKOFF -> STOPPED).
 */
static void
engine_lifecycle(struct agent *a, enum agent_state from, enum agent_state to,
    enum agent_event ev, const char *why)
{
	/* How it ended, with its last stderr lines: the cause of the error. */
	if (ev == AE_EXITED && to == AS_STOPPED)
		engine_agent_gone(a, why, lifecycle_last_exit(a) != NULL ?
		    lifecycle_last_exit(a) : why, 0);
	else if (ev == AE_BROKEN || (from == AS_BACKOFF && to == AS_STOPPED))
		engine_agent_gone(a, why, why, 0);
	else if (to == AS_FAILED) {
		if (lifecycle_cause(a) != NULL)
			why = lifecycle_cause(a);
		engine_agent_gone(a, why, why, 1);
		if (engine_task.failed != NULL)
			engine_task.failed(a, why);
		route_check_orphans();
	}
}

/* A new agent: it works on nothing yet (its part comes with the first). */
static void
engine_new_agent(struct agent *a)
{
	a->work.busy = NULL;
}

/* An agent is about to be freed: requests must not point at it. */
static void
engine_forget_agent(struct agent *a)
{
	struct msg	*m;

	engine_progress_drop(a);
	TAILQ_FOREACH(m, &engine_live, live_entry) {
		if (m->exclude == a)
			m->exclude = NULL;
		if (m->parent_agent == a)
			m->parent_agent = NULL;
		if (m->requester == a)
			m->requester = NULL;
		if (m->agent == a && m->where != MSG_INFLIGHT)
			m->agent = NULL;
		if (m->target == a && m->holds) {
			m->target = NULL;
			m->holds = 0;
		}
	}
	free(a->work.busy);
	a->work.busy = NULL;
}

/*
 * corral is shutting down: no retries, and every request that waits in a
 * queue or for its retry fails now.
 */
void
engine_shutdown(const char *why)
{
	struct msg	*m;

	engine_stopping = 1;
	route_fail_all(why);
	while ((m = TAILQ_FIRST(&engine_retrying)) != NULL) {
		engine_unhold(engine_unretry(m));
		engine_fail(m, "UNAVAILABLE", "shutdown", "%s", why);
	}
}

/*
 * corral was interrupted: routing stops at once.  Every unfinished job
 * ends with an error that says so, and what it still had in flight or
 * waiting is cancelled; nothing that finishes during the shutdown is
 * followed or becomes a result.
 */
void
engine_interrupt(const char *why)
{
	struct job	*j, *next;

	engine_stopping = 1;
	TAILQ_FOREACH_SAFE(j, &engine_jobs, entry, next) {
		if (!j->done)
			engine_limit(j, "shutdown", "%s", why);
		(void)engine_cancel_rest(j, "UNAVAILABLE", "shutdown", why,
		    NULL);
	}
}

/* Return nonzero when no job is left. */
int
engine_idle(void)
{
	return engine_njobs == 0;
}
