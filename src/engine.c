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
 * The per-message path is: scan the line once (jscan.c), validate the tape
 * (envelope.c), match the reply to its request, and forward the bytes as
 * they came.  Only envelopes that lack trace.id, trace.parents or a
 * timestamp are copied, to splice those in.  A scan's tape belongs to the
 * handler that made it: anything that must scan another line meanwhile (a
 * retry, a child's result, a reply an adapter makes while a request is
 * being routed) takes a scanner of its own from a small pool.
 *
 * The engine sits above routing and the lifecycle and hears from them
 * through callbacks; what it has to say to the supervisor (a result, a
 * line for serve's stdout, stdin pressure) and to the sub-agent module
 * (a task's reply and end) goes through the hooks they registered.
 */

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

#define ENGINE_SCANNERS	8	/* kept for reuse; more are made as needed */
#define ENGINE_BAD_STREAK 10000	/* non-JSON lines in a row: failed */
#define ENGINE_BAD_FIRST 160	/* bytes kept of the first of them */
#define ENGINE_ENV_STREAK 10000	/* invalid envelopes in a row: no notices */

/* How a request's end bears on its job (engine_request_end). */
#define END_NONE	0	/* the branch goes on in other requests */
#define END_BRANCH	1	/* the line ends its branch */
#define END_FINAL	2	/* ... and is a finalize */

static const struct workflow	*engine_wf;
static struct engine_hooks	 engine_hooks;
static struct engine_task_hooks	 engine_task;
static struct engine_step_hooks	 engine_step;
static TAILQ_HEAD(, job)	 engine_jobs = TAILQ_HEAD_INITIALIZER(engine_jobs);
static struct msgq		 engine_retrying =
				    TAILQ_HEAD_INITIALIZER(engine_retrying);
static TAILQ_HEAD(, msg)	 engine_live =
				    TAILQ_HEAD_INITIALIZER(engine_live);
static unsigned int		 engine_njobs;
static uint64_t			 engine_job_seq;
static uint64_t			 engine_msg_seq;
static int			 engine_join_then = -1;
static struct engine_stats	 engine_stats;
static struct jscan		*engine_pool[ENGINE_SCANNERS];
static size_t			 engine_npool;
static int			 engine_stopping;

static void	engine_msg_timer_cb(struct ev_loop *, ev_timer *, int);
static void	engine_job_deadline_cb(struct ev_loop *, ev_timer *, int);
static void	engine_request_end(struct msg *, const char *, size_t, int,
		    int);
static void	engine_follow(struct msg *, struct agent *, struct jscan *,
		    const char *, size_t, struct env *, const char *, int);
static void	engine_unreflected(struct msg *, const char *);
static size_t	engine_cancel_rest(struct job *, const char *, const char *,
		    const char *, struct msg *);
static void	engine_undispatch(struct msg *);
static void	engine_notice(struct agent *, const char *, const char *,
		    const char *, const char *);
static void	engine_dispatched(struct msg *, struct agent *);
static void	engine_queued(struct msg *);
static void	engine_unqueued(unsigned int);
static void	engine_route_fail(struct msg *, const char *, const char *,
		    const char *);
static void	engine_lifecycle(struct agent *, enum agent_state,
		    enum agent_state, enum agent_event, const char *);
static void	engine_agent_line(struct agent *, char *, size_t,
		    enum ndjson_kind, size_t);
static void	engine_agent_drained(struct agent *);
static void	engine_notices_summary(struct agent *, const char *);
static void	engine_adapter_reply(struct agent *, struct msg *,
		    const char *, size_t);
static void	engine_run_budget(const char *);
static void	engine_forget_agent(struct agent *);
static void	engine_step_first(struct msg *);
static void	engine_step_ended(struct msg *, struct agent *, const char *,
		    const char *, const char *, size_t);

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
	engine_notice(a, "artifact_refused", "outputs.artifacts", why,
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
	engine_join_then = wf->join_then != NULL ? protocol_intent(wf->join_then,
	    strlen(wf->join_then)) : -1;
	memset(&engine_task, 0, sizeof engine_task);
	memset(&engine_step, 0, sizeof engine_step);
	memset(&engine_stats, 0, sizeof engine_stats);
	engine_njobs = 0;
	engine_stopping = 0;
	lifecycle_init();
	route_init(wf, &rh);
	lifecycle_observe(engine_lifecycle);
	agent_on_line(engine_agent_line, engine_agent_drained);
	agent_on_free(engine_forget_agent);
	adapter_on_reply(engine_adapter_reply);
	adapter_on_progress(engine_progress);
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

/* Take a scanner for one line; give it back with engine_scan_give. */
struct jscan *
engine_scan_take(void)
{
	if (engine_npool > 0)
		return engine_pool[--engine_npool];
	return jscan_create(4);
}

/* Give a scanner back to the pool. */
void
engine_scan_give(struct jscan *js)
{
	if (js == NULL)
		return;
	jscan_trim(js);
	if (engine_npool < ENGINE_SCANNERS)
		engine_pool[engine_npool++] = js;
	else
		jscan_free(js);
}

/* Free the pool (corral is exiting, or a test is over). */
void
engine_scan_drain(void)
{
	while (engine_npool > 0)
		jscan_free(engine_pool[--engine_npool]);
}

/* Start a job. */
struct job *
engine_job_create(int origin)
{
	struct job	*j;

	j = xcalloc(1, sizeof *j);
	j->seq = ++engine_job_seq;
	j->origin = origin;
	TAILQ_INIT(&j->msgs);
	j->started = ev_now(LOOP);
	ev_timer_init(&j->deadline_w, engine_job_deadline_cb, 0, 0);
	j->deadline_w.data = j;
	if (engine_wf->deadline > 0) {
		ev_timer_set(&j->deadline_w, engine_wf->deadline, 0);
		ev_timer_start(LOOP, &j->deadline_w);
	}
	TAILQ_INSERT_TAIL(&engine_jobs, j, entry);
	engine_njobs++;
	return j;
}

/* Return how many jobs are unfinished or still hold requests. */
unsigned int
engine_jobs_count(void)
{
	return engine_njobs;
}

/* Write one line on corral serve's stdout (the supervisor's business). */
static void
engine_out(const char *line, size_t len)
{
	if (engine_hooks.out != NULL)
		engine_hooks.out(line, len);
}

/* Free a job once it is done and nothing of it is outstanding. */
static void
engine_job_release(struct job *j)
{
	size_t	i;

	if (!j->done || j->pending > 0)
		return;

	ev_timer_stop(LOOP, &j->deadline_w);
	TAILQ_REMOVE(&engine_jobs, j, entry);
	engine_njobs--;
	for (i = 0; i < j->nends; i++) {
		engine_stats.bytes -= j->ends[i].len;
		free(j->ends[i].line);
	}
	free(j->ends);
	free(j);
	if (engine_njobs < engine_wf->max_inflight && engine_hooks.pause)
		engine_hooks.pause(STDIN_P_JOBS, 0);
	if (engine_hooks.idle != NULL)
		engine_hooks.idle();
}

/*
 * A job has its result: write it (serve), or hand it to corral run, and
 * stop whatever of the job is still waiting.
 */
static void
engine_job_finish(struct job *j, const char *line, size_t len, int is_error,
    int linked)
{
	struct env		 env;
	struct env_error	 err;
	struct jscan		*js;
	char			*relinked = NULL;
	size_t			 llen;

	char			 summary[1024];

	if (j->done)
		return;
	j->done = 1;
	j->failed = is_error;
	ev_timer_stop(LOOP, &j->deadline_w);
	if (engine_step.done != NULL)
		engine_step.done(j);
	auditlog_event("job_end", NULL, j->id, "status", is_error ? "failed" :
	    "ok", NULL);
	if (is_error) {
		/* One line for every failed job: what happened, and a hint. */
		join_summary(line, len, summary, sizeof summary);
		log_warnx("job %s failed: %s", j->id, summary);
	}
	if (j->origin != JOB_SERVE) {
		if (engine_hooks.result != NULL)
			engine_hooks.result(line, len, is_error);
		return;
	}
	/*
	 * The caller matches results to its inputs by trace.parents: make
	 * sure the input's id is there, however many steps the job took.  A
	 * direct answer to the input has it already (linked), and costs no
	 * second scan.
	 */
	if (!linked) {
		js = engine_scan_take();
		if (jscan_run(js, line, len) == 0 &&
		    envelope_check(js, line, len, &env, &err) == 0 &&
		    !envelope_has_parent(js, line, &env, j->id))
			relinked = envelope_add_parent(js, line, len, &env,
			    j->id, &llen);
		engine_scan_give(js);
	}
	if (relinked != NULL) {
		engine_out(relinked, llen);
		free(relinked);
	} else
		engine_out(line, len);
}

/* The run's or a job's deadline passed. */
static void
engine_job_deadline_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct job	*j = w->data;
	char		 msg[128], *e;
	size_t		 len;

	snprintf(msg, sizeof msg, "the workflow's deadline of %gs passed",
	    engine_wf->deadline);
	log_warnx("job %s: %s", j->id, msg);
	e = envelope_error("deadline", "TIMEOUT", NULL, msg, j->id, NULL, &len);
	auditlog_envelope("error", NULL, j->id, e, len);
	engine_job_finish(j, e, len, 1, 1);
	free(e);
}

/* Create a request for job j from an envelope line (taken over). */
struct msg *
engine_msg_create(struct job *j, char *line, size_t len, int kind, int intent)
{
	struct msg	*m;

	m = xcalloc(1, sizeof *m);
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
 * Return nonzero if n more bytes of envelopes fit under limits.memory.
 */
static int
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
static struct job *
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
static void
engine_msg_free(struct msg *m)
{
	engine_msg_detach(m);
	TAILQ_REMOVE(&engine_live, m, live_entry);
	engine_progress_forget(m);
	ev_timer_stop(LOOP, &m->timer);
	engine_stats.bytes -= m->len + m->weaklen + sizeof *m;
	free(m->line);
	free(m->weak);
	free(m);
	engine_stats.live_msgs--;
}

/* The longest per-message timeout among a row's agents. */
static double
engine_route_timeout(const struct route *r)
{
	double	t = 0;
	size_t	i;

	for (i = 0; r != NULL && i < r->nconfs; i++) {
		if (r->confs[i]->timeout == 0)
			return 0;	/* one of them waits forever */
		if (r->confs[i]->timeout > t)
			t = r->confs[i]->timeout;
	}
	return t > 0 ? t : 30.0;
}

/* Arm a request's timer for the time it may still wait. */
static void
engine_msg_arm(struct msg *m, double wait)
{
	ev_timer_stop(LOOP, &m->timer);
	if (m->timeout > 0) {
		/* The envelope's own deadline counts from acceptance. */
		wait = m->accepted + m->timeout - ev_now(LOOP);
		if (wait < 0.001)
			wait = 0.001;
	}
	if (wait <= 0)
		return;
	m->deadline = ev_now(LOOP) + wait;
	ev_timer_set(&m->timer, wait, 0);
	ev_timer_start(LOOP, &m->timer);
}

/* A request was queued: bound its wait. */
static void
engine_queued(struct msg *m)
{
	engine_msg_arm(m, engine_route_timeout(m->route));
	/* The supervisor pauses stdin if that is where the work comes from. */
	if (route_queued_count() >= engine_wf->max_queue / 2 &&
	    engine_hooks.pause != NULL)
		engine_hooks.pause(STDIN_P_QUEUE, 1);
}

/* A request left a queue. */
static void
engine_unqueued(unsigned int queued)
{
	if (queued < engine_wf->max_queue / 4 && engine_hooks.pause != NULL)
		engine_hooks.pause(STDIN_P_QUEUE, 0);
}

/* A request was written to agent a: it is outstanding there. */
static void
engine_dispatched(struct msg *m, struct agent *a)
{
	m->agent = a;
	m->where = MSG_INFLIGHT;
	m->attempts++;
	TAILQ_INSERT_TAIL(&a->work.inflight, m, entry);
	if (a->work.outstanding++ == 0)
		lifecycle_feed(a, AE_WORK, NULL);
	engine_msg_arm(m, a->conf->timeout);
}

/* Route a request, or fail it (its outcome is recorded either way). */
static void
engine_submit(struct msg *m)
{
	(void)route_submit(m);
}

/*
 * Take a request off its agent's outstanding list.  The slot it frees
 * goes to waiting work only when the caller kicks the route, once the
 * request's outcome is recorded, so the audit log stays in order.
 */
static void
engine_undispatch(struct msg *m)
{
	struct agent	*a = m->agent;

	if (m->where != MSG_INFLIGHT)
		return;
	TAILQ_REMOVE(&a->work.inflight, m, entry);
	m->where = MSG_NOWHERE;
	m->agent = NULL;
	if (--a->work.outstanding == 0) {
		/* Its progress was about work it no longer has. */
		free(a->work.progress);
		a->work.progress = NULL;
		lifecycle_feed(a, AE_IDLE, NULL);
	}
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

/* Return nonzero if an agent will take work again (it is not leaving). */
static int
engine_will_serve(const struct agent *a)
{
	return !(a->flags & AGENT_DEAD) && !lifecycle_done(a) &&
	    !lifecycle_leaving(a);
}

/* Return the retry delay before attempt n (1-based). */
static double
engine_retry_delay(unsigned int n)
{
	double	d = engine_wf->retry_initial * pow(engine_wf->retry_factor,
	    (double)(n > 0 ? n - 1 : 0));

	if (d > engine_wf->retry_max)
		d = engine_wf->retry_max;
	return util_jitter(d, 0.25);
}

/*
 * A request leaves the retry list.  Returns the agent whose turns it held
 * (see engine_schedule_retry), for the caller to let go once the request
 * is where it goes next; the request is unpinned from an agent that will
 * not serve again.
 */
static struct agent *
engine_unretry(struct msg *m)
{
	struct agent	*t = m->target;

	TAILQ_REMOVE(&engine_retrying, m, entry);
	m->where = MSG_NOWHERE;
	ev_timer_stop(LOOP, &m->timer);
	if (!m->holds)
		return NULL;
	m->holds = 0;
	/* A task or a message belongs to its agent: engine_retry fails it. */
	if (t != NULL && !engine_will_serve(t) && m->kind != MSG_TASK &&
	    m->kind != MSG_SEND)
		m->target = NULL;
	return t;
}

/* Let an agent's turns go (the result of engine_unretry). */
static void
engine_unhold(struct agent *t)
{
	if (t != NULL)
		route_hold(t, -1);
}

/*
 * The retry timer of a request fired: route it again; a turn of one
 * conversation goes back to its agent before it takes any other.
 */
static void
engine_retry(struct msg *m)
{
	struct agent	*held;

	held = engine_unretry(m);
	if (engine_stopping) {
		engine_unhold(held);
		engine_fail(m, "UNAVAILABLE", "shutdown", "corral is shutting "
		    "down");
		return;
	}
	/*
	 * A request pinned to its agent (a task: a hidden child is in no
	 * route; a turn of a conversation) goes back to that agent's own
	 * queue, or fails if the agent will never run again.
	 */
	if (m->target != NULL) {
		if ((m->target->flags & AGENT_DEAD) ||
		    lifecycle_leaving(m->target) ||
		    (!lifecycle_alive(m->target) &&
		    !lifecycle_will_restart(m->target))) {
			engine_unhold(held);
			engine_fail(m, "UNAVAILABLE", "agent_lost", "agent %s "
			    "is gone; %s cannot be tried again", m->target->id,
			    m->id);
			return;
		}
		route_direct(m);
	} else
		engine_submit(m);
	engine_unhold(held);
}

/*
 * Return nonzero for failures corral itself tries again.  An open circuit
 * is transient too, but its point is to fail fast: the caller may retry.
 */
static int
engine_retried(const char *code)
{
	return strcmp(code, "timeout") == 0 || strcmp(code, "agent_lost") == 0;
}

/*
 * Decide whether a failed request is tried again (docs/reliability.md):
 * only TIMEOUT and UNAVAILABLE; HIGH and CRITICAL requests always (at
 * least once), others only when no agent had been given them (at most
 * once).
 */
static int
engine_should_retry(struct msg *m, const char *category, const char *code)
{
	if (!engine_retried(code))
		return 0;
	if (engine_stopping || m->attempts > engine_wf->retries)
		return 0;
	if (m->retries >= engine_wf->retries)
		return 0;
	if (strcmp(category, "TIMEOUT") != 0 &&
	    strcmp(category, "UNAVAILABLE") != 0)
		return 0;
	if (m->prio >= PRIO_HIGH)
		return 1;
	return m->attempts == 0;
}

/*
 * A request in flight at agent a fails and will be retried: if it is a
 * turn of a's one conversation, pin it to a and hold a's turns until the
 * retry is given to it (engine_retry), so that no later turn overtakes
 * it.  Called before the request leaves a, whose freed slot would
 * otherwise take the next turn at once.
 */
static void
engine_pin(struct msg *m, struct agent *a, const char *category,
    const char *code)
{
	if (m->holds || !adapter_ordered(a) || !engine_will_serve(a) ||
	    !engine_should_retry(m, category, code))
		return;
	m->target = a;
	m->holds = 1;
	route_hold(a, 1);
}

/* Schedule a retry with backoff; the count travels in the envelope. */
static void
engine_schedule_retry(struct msg *m, const char *category, const char *why,
    const char *code)
{
	struct env		 env;
	struct env_error	 err;
	struct jscan		*js;
	char			 member[24], *line;
	size_t			 len;
	double			 delay;

	m->retries++;
	delay = engine_retry_delay(m->retries);
	member[util_u64(member, m->retries)] = '\0';
	js = engine_scan_take();
	if (jscan_run(js, m->line, m->len) == 0 &&
	    envelope_check(js, m->line, m->len, &env, &err) == 0) {
		line = envelope_corral_set(js, m->line, m->len, &env,
		    "retry_count", member, &len);
		free(m->line);
		engine_stats.bytes += len - m->len;
		m->line = line;
		m->len = len;
	}
	engine_scan_give(js);
	if (m->agent != NULL)
		engine_pin(m, m->agent, category, code);
	log_info("request %s: %s (%s); retry %u in %.1fs", m->id, category, why,
	    m->retries, delay);
	auditlog_event("retry", m->agent != NULL ? m->agent->id : NULL, m->id,
	    "category", category, "reason", why, NULL);
	engine_stats.retried++;
	m->where = MSG_RETRYING;
	TAILQ_INSERT_TAIL(&engine_retrying, m, entry);
	ev_timer_stop(LOOP, &m->timer);
	ev_timer_set(&m->timer, delay, 0);
	ev_timer_start(LOOP, &m->timer);
}

/* Fail a request with a message made already (see engine_fail). */
static void
engine_fail_why(struct msg *m, const char *category, const char *code,
    const char *why)
{
	char	*e;
	size_t	 len;
	int	 expired = (strcmp(category, "TIMEOUT") == 0);

	if (engine_should_retry(m, category, code)) {
		engine_schedule_retry(m, category, why, code);
		return;
	}
	if (m->holds) {
		/* Pinned for a retry that is not to be after all. */
		m->holds = 0;
		engine_unhold(m->target);
	}
	if (expired)
		engine_stats.expired++;
	else
		engine_stats.errored++;
	log_info("request %s: %s: %s", m->id, category, why);
	auditlog_event("outcome", m->agent != NULL ? m->agent->id : NULL,
	    m->id, "outcome", expired ? "expired" : "error", "category",
	    category, "code", code, "reason", why, NULL);
	if (engine_hooks.outcome != NULL)
		engine_hooks.outcome(m, expired ? "expired" : "error", category,
		    code, why);
	e = envelope_error(code, category, NULL, why, m->id, NULL, &len);
	auditlog_envelope("error", NULL, m->id, e, len);
	if (m->kind == MSG_REFLECT && m->weak != NULL && !engine_stopping &&
	    m->job != NULL && !m->job->done)
		engine_unreflected(m, why);
	else if (m->kind == MSG_STEP && engine_step.failed != NULL &&
	    m->job != NULL && !m->job->done && !engine_stopping)
		engine_step_ended(m, NULL, code, why, e, len);
	else
		engine_request_done(m, e, len, 1);
	free(e);
}

/*
 * A request failed without a reply: record the outcome (errored, or
 * expired for TIMEOUT), retry it when the policy says so, else give its
 * job an error envelope.
 */
void
engine_fail(struct msg *m, const char *category, const char *code,
    const char *fmt, ...)
{
	va_list	 ap;
	char	 why[512];

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	engine_fail_why(m, category, code, why);
}

/*
 * Tell the agent a request was cancelled, if it reads: an adapted tool
 * through its adapter (an interrupt, a signal), an agent that speaks
 * envelopes with a cancel notice it may honour (docs/protocol.md).
 */
static void
engine_cancel_tell(struct agent *a, struct msg *m, const char *why)
{
	char	*e;
	size_t	 len;

	if (a->adapter != NULL) {
		adapter_cancel(a, m);
		return;
	}
	if (!lifecycle_alive(a) || !agent_writable(a) || agent_full(a))
		return;
	e = envelope_cancel(m->id, protocol_intent_name(m->intent), why,
	    &len);
	agent_send(a, e, len);
	free(e);
}

/*
 * Cancel a request wherever it is: waiting in a queue, waiting for its
 * retry, or at an agent, which is told (engine_cancel_tell).  It ends at
 * once in its one outcome, an error with code cancelled; whatever its
 * agent says of it later is dropped as late.
 */
void
engine_cancel(struct msg *m, const char *why)
{
	struct agent	*a = NULL;

	switch (m->where) {
	case MSG_QUEUED:
		route_dequeue(m);
		break;
	case MSG_RETRYING:
		engine_unhold(engine_unretry(m));
		break;
	case MSG_INFLIGHT:
		a = m->agent;
		engine_cancel_tell(a, m, why);
		engine_undispatch(m);
		m->agent = a;
		break;
	default:
		break;
	}
	log_info("request %s: cancelled: %s", m->id, why);
	auditlog_event("cancel", a != NULL ? a->id : NULL, m->id, "reason",
	    why, NULL);
	engine_fail(m, "REJECTED", "cancelled", "%s", why);
	if (a != NULL)
		route_kick(a);
}

/*
 * Cancel what agent a and its descendants work on, and what waits for
 * them alone (a task not yet taken): it is being stopped on purpose, so
 * its work is cancelled, not lost.  Returns how many requests.
 */
unsigned int
engine_cancel_agent(struct agent *a, const char *why)
{
	struct agent	*c, *next;
	struct msg	*m;
	unsigned int	 n = 0;

	TAILQ_FOREACH_SAFE(c, &a->children, sibling, next)
		n += engine_cancel_agent(c, why);
	while ((m = TAILQ_FIRST(&a->work.inflight)) != NULL) {
		engine_cancel(m, why);
		n++;
	}
	while ((m = TAILQ_FIRST(&a->slot.direct)) != NULL) {
		engine_cancel(m, why);
		n++;
	}
	return n;
}

/*
 * A request got its reply and no more is to come of it (a child's
 * finalize, or its last envelope when it stopped): count the outcome,
 * record it with the reason, and end the request with line.
 */
void
engine_replied(struct msg *m, struct agent *a, const char *reply_id,
    const char *reason, const char *line, size_t len, int is_error)
{
	engine_stats.replied++;
	auditlog_event("outcome", a != NULL ? a->id : NULL, m->id, "outcome",
	    "replied", "reply", reply_id, "reason", reason, NULL);
	if (engine_hooks.outcome != NULL)
		engine_hooks.outcome(m, "replied", NULL, NULL, reason);
	engine_request_done(m, line, len, is_error);
}

/* Routing could not place a request. */
static void
engine_route_fail(struct msg *m, const char *category, const char *code,
    const char *why)
{
	engine_fail_why(m, category, code, why);
}

/* The timer of a request fired: its wait is over, or its retry is due. */
static void
engine_msg_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct msg	*m = w->data;
	struct agent	*a;
	double		 waited = ev_now(loop) - m->accepted;
	char		 tail[300], last[320];

	switch (m->where) {
	case MSG_RETRYING:
		engine_retry(m);
		return;
	case MSG_QUEUED:
		route_dequeue(m);
		engine_fail(m, "TIMEOUT", "timeout", "no agent took the %s "
		    "request within %.3gs", protocol_intent_name(m->intent),
		    waited);
		return;
	case MSG_INFLIGHT:
		a = m->agent;
		if (a->adapter != NULL)
			adapter_cancel(a, m);
		engine_pin(m, a, "TIMEOUT", "timeout");
		engine_undispatch(m);
		m->agent = a;
		breaker_failure(a);
		lifecycle_timeout(a);
		/* Its stderr often says why ("connection refused"). */
		last[0] = '\0';
		if (agent_stderr_tail(a, tail, sizeof tail, 1) > 0)
			snprintf(last, sizeof last, "; its last stderr: %s",
			    tail);
		engine_fail(m, "TIMEOUT", "timeout", "agent %s did not reply "
		    "within %.3gs%s", a->id, m->timeout > 0 ? m->timeout :
		    a->conf->timeout, last);
		route_kick(a);
		return;
	default:
		return;
	}
}

/* Add up what a reply says it cost, for the run, the job and the tree. */
void
engine_account(struct agent *a, const struct env *env)
{
	budget_account(a, env->tokens_in, env->tokens_out, env->cost);
}

/* Remember how a branch of job j ended: its last request, and the line. */
static void
engine_branch_end(struct job *j, const struct msg *m, const char *line,
    size_t len, int is_error, int finalized)
{
	struct branch_end	*e;

	if (j->nends == j->endcap) {
		j->endcap = j->endcap == 0 ? 4 : j->endcap * 2;
		j->ends = xreallocarray(j->ends, j->endcap, sizeof *j->ends);
	}
	e = &j->ends[j->nends++];
	memset(e, 0, sizeof *e);
	strlcpy(e->id, m->id, sizeof e->id);
	e->intent = m->kind == MSG_REFLECT ? m->orig_intent : m->intent;
	e->error = is_error != 0;
	e->linked = (m->kind == MSG_INPUT || m->kind == MSG_GOAL);
	e->finalized = finalized != 0;
	e->line = xmemdup0(line, len);
	e->len = len;
	engine_stats.bytes += len;
}

/*
 * Nothing of job j is left: its result comes from its branches' ends
 * (join.c), or, with join.then and several branches, one more request
 * gets them all.
 */
static void
engine_join(struct job *j)
{
	struct msg	*m;
	char		 id[CORRAL_ID_MAX], *line;
	size_t		 len;
	int		 is_error, linked;

	if (j->nends > 1 && engine_join_then >= 0 && !engine_stopping) {
		protocol_new_id(id, sizeof id);
		line = join_request(j, protocol_intent_name(engine_join_then),
		    id, &len);
		log_info("job %s: %zu branches ended; %s combines them", j->id,
		    j->nends, protocol_intent_name(engine_join_then));
		m = engine_msg_create(j, line, len, MSG_ACTION,
		    engine_join_then);
		strlcpy(m->id, id, sizeof m->id);
		auditlog_envelope("env", NULL, id, line, len);
		/* The join step's reply is the job's one branch now. */
		while (j->nends > 0) {
			engine_stats.bytes -= j->ends[--j->nends].len;
			free(j->ends[j->nends].line);
		}
		engine_submit(m);
		return;
	}
	line = join_result(j, &len, &is_error, &linked);
	if (j->nends > 1)
		auditlog_envelope("join", NULL, j->id, line, len);
	engine_job_finish(j, line, len, is_error, linked);
	free(line);
}

/*
 * Request m reached its outcome with envelope line (a reply, or an error
 * corral made).  With end, the line ends a branch of m's job (END_FINAL:
 * a finalize); without, the branch goes on in other requests (next
 * actions, a reflection).  A
 * spawned child's task reports to its parent instead, and never ends a
 * branch of the job.  The job ends when nothing of it is left.
 */
static void
engine_request_end(struct msg *m, const char *line, size_t len, int is_error,
    int end)
{
	struct job	*j;
	struct agent	*a = NULL;
	int		 kind;

	if (m->where == MSG_QUEUED)
		route_dequeue(m);
	if (m->where == MSG_RETRYING)
		/* Ended while it waited for a retry (its child failed, say). */
		engine_unhold(engine_unretry(m));
	if (m->where == MSG_INFLIGHT) {
		a = m->agent;
		engine_undispatch(m);
	}
	if ((m->kind == MSG_TASK || m->kind == MSG_SEND) &&
	    engine_task.done != NULL)
		engine_task.done(m, line, len, is_error);
	j = engine_msg_detach(m);
	if (j != NULL && end && m->kind != MSG_TASK && !j->done)
		engine_branch_end(j, m, line, len, is_error, end == END_FINAL);
	kind = m->kind;
	engine_msg_free(m);
	if (a != NULL)
		route_kick(a);
	if (j == NULL)
		return;
	if (j->pending > 0)
		j->pending--;
	if (kind != MSG_TASK && j->open > 0)
		j->open--;
	if (j->open == 0 && !j->done)
		engine_join(j);
	engine_job_release(j);
}

/* A request ended with line, which ends its branch. */
void
engine_request_done(struct msg *m, const char *line, size_t len, int is_error)
{
	engine_request_end(m, line, len, is_error, END_BRANCH);
}

/*
 * End every request job j still has but except: its result is known
 * (join: first) or corral is interrupted.  Each ends in one outcome,
 * cancelled, and a child working on one is stopped with its task.
 */
static size_t
engine_cancel_rest(struct job *j, const char *category, const char *code,
    const char *why, struct msg *except)
{
	struct msg	*m, *next;
	size_t		 n = 0;

	TAILQ_FOREACH_SAFE(m, &j->msgs, job_entry, next) {
		/* A child's task is its own work, stopped with corral. */
		if (m == except || (m->kind == MSG_TASK && !engine_stopping))
			continue;
		if (m->where == MSG_INFLIGHT && m->agent != NULL &&
		    m->agent->adapter != NULL)
			adapter_cancel(m->agent, m);
		if (m->where == MSG_RETRYING)
			engine_unhold(engine_unretry(m));
		n++;
		engine_fail(m, category, code, "%s", why);
	}
	return n;
}

/*
 * Make the reflection on a weak reply of agent a to req (not yet routed),
 * or return NULL when reflection does not apply: the rounds are used up,
 * or nothing routes reflect.  The reflection keeps the weak reply, which
 * stands if the reflection fails.
 */
static struct msg *
engine_reflection(struct msg *req, struct agent *a, struct jscan *js,
    const char *line, size_t len, const struct env *env, const char *reply_id)
{
	struct msg	*m;
	char		 id[CORRAL_ID_MAX], *rl;
	size_t		 rlen;

	if (req->round >= engine_wf->refl_max_rounds)
		return NULL;
	if (route_for(INTENT_REFLECT) == NULL)
		return NULL;
	if (!engine_room(2 * len + 256)) {
		log_warnx("request %s: no room under limits.memory to reflect "
		    "on reply %s; it stands", req->id, reply_id);
		return NULL;
	}
	protocol_new_id(id, sizeof id);
	rl = envelope_reflect(js, line, len, env, id, reply_id,
	    protocol_intent_name(env->intent), req->round + 1, &rlen);
	m = engine_msg_create(req->job, rl, rlen, MSG_REFLECT, INTENT_REFLECT);
	strlcpy(m->id, id, sizeof m->id);
	m->round = req->round + 1;
	m->depth = req->depth;
	m->prio = req->prio;
	m->timeout = req->timeout;	/* the reflection serves the same need */
	m->exclude = a;
	m->parent_agent = req->parent_agent;
	m->weak = xmemdup0(line, len);
	m->weaklen = len;
	engine_stats.bytes += len;
	/* A reflection stands in for the reply it reflects on. */
	m->orig_intent = (uint8_t)(req->kind == MSG_REFLECT ? req->orig_intent :
	    env->intent);
	engine_stats.reflections++;
	log_info("request %s: reply %s from %s has confidence %s; reflecting "
	    "(round %u)", req->id, reply_id, a != NULL ? a->id : "?",
	    env->has_score ? "below the threshold" : "missing", m->round);
	if (auditlog_enabled()) {
		struct jsonw	 w;
		char		*f;
		size_t		 flen;

		jsonw_init(&w);
		jsonw_object(&w);
		jsonw_key(&w, "of");
		jsonw_str(&w, reply_id);
		jsonw_key(&w, "score");
		if (env->has_score)
			jsonw_num(&w, env->score);
		else
			jsonw_raw(&w, "null", 4);
		jsonw_object_end(&w);
		f = jsonw_finish(&w, &flen);
		auditlog_fields("reflect", a != NULL ? a->id : NULL, id, f,
		    flen);
		free(f);
	}
	auditlog_envelope("env", NULL, id, rl, rlen);
	return m;
}

/*
 * A reflection failed (no agent serves reflect any more, or it timed out,
 * or its agent was lost): reflection is an improvement, never a point of
 * failure, so the weak reply stands, with corral's note of the risk
 * ({"corral":{"risk":"not reflected: ..."}}), and its branch goes on as
 * if it had not been weak.
 */
static void
engine_unreflected(struct msg *m, const char *why)
{
	struct env		 env;
	struct env_error	 err;
	struct jscan		*js;
	struct jsonw		 w;
	char			 reply_id[CORRAL_ID_MAX], risk[600], *member;
	char			*line;
	size_t			 mlen, len;

	js = engine_scan_take();
	if (jscan_run(js, m->weak, m->weaklen) != 0 ||
	    envelope_check(js, m->weak, m->weaklen, &env, &err) != 0 ||
	    envelope_trace_id(js, m->weak, &env, reply_id, sizeof reply_id) !=
	    0) {
		/* It was checked when it came: our own invariant. */
		fatalx("request %s: the weak reply it keeps is not an envelope",
		    m->id);
	}
	snprintf(risk, sizeof risk, "not reflected: %s", why);
	jsonw_init(&w);
	jsonw_object(&w);
	jsonw_key(&w, "risk");
	jsonw_str(&w, risk);
	jsonw_object_end(&w);
	member = jsonw_finish(&w, &mlen);
	line = envelope_mark(js, m->weak, m->weaklen, member, &len);
	free(member);
	if (jscan_run(js, line, len) != 0 ||
	    envelope_check(js, line, len, &env, &err) != 0)
		fatalx("request %s: marking the weak reply broke it", m->id);
	log_warnx("request %s: the reflection failed (%s); the weak reply %s "
	    "stands", m->id, why, reply_id);
	auditlog_event("unreflected", NULL, m->id, "reply", reply_id, "reason",
	    why, NULL);
	engine_follow(m, NULL, js, line, len, &env, reply_id, 0);
	free(line);
	engine_scan_give(js);
}

/* Stop a job at a limit, with an error envelope as its result. */
void
engine_limit(struct job *j, const char *code, const char *fmt, ...)
{
	va_list	 ap;
	char	 why[256], *e;
	size_t	 len;

	if (j->done)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	log_warnx("job %s: %s", j->id, why);
	auditlog_event("limit", NULL, j->id, "code", code, "reason", why, NULL);
	e = envelope_error(code, "REJECTED", NULL, why, j->id, NULL, &len);
	auditlog_envelope("error", NULL, j->id, e, len);
	engine_job_finish(j, e, len, 1, 1);
	free(e);
}

/* The run's budget is spent: every job ends. */
static void
engine_run_budget(const char *why)
{
	struct job	*j, *next;

	TAILQ_FOREACH_SAFE(j, &engine_jobs, entry, next)
		engine_limit(j, "budget_exceeded", "%s", why);
}

/*
 * The ttl_ms of a next action's args (raw JSON), in seconds, or 0.  The
 * args sit deeper than the reply's tape records, so they get a scan of
 * their own.
 */
static double
engine_action_ttl(const char *args, size_t len)
{
	struct jscan	*js = engine_scan_take();
	double		 ttl = 0;
	int		 t;

	if (jscan_run(js, args, len) == 0 && js->tok[0].type == JT_OBJECT &&
	    (t = JSCAN_GET(js, args, 0, "ttl_ms")) != -1 &&
	    js->tok[t].type == JT_NUMBER && jscan_number(js, args, t) >= 0)
		ttl = jscan_number(js, args, t) / 1000.0;
	engine_scan_give(js);
	return ttl;
}

/*
 * Check the ttl_ms of each next action's args, which sit below the
 * reply's tape: a number of milliseconds >= 0, or absent.  Returns 0, or
 * -1 with err filled as envelope_check fills it.
 */
static int
engine_check_ttls(struct jscan *js, const char *line, const struct env *env,
    struct env_error *err)
{
	struct jscan	*sub;
	int		 e, args, t, i = 0, bad = 0;

	if (env->next_actions == -1)
		return 0;
	for (e = jscan_first(js, env->next_actions); e != -1 && !bad;
	    e = jscan_next(js, env->next_actions, e), i++) {
		if ((args = JSCAN_GET(js, line, e, "args")) == -1)
			continue;
		sub = engine_scan_take();
		if (jscan_run(sub, line + js->tok[args].off,
		    js->tok[args].len) == 0 && (t = JSCAN_GET(sub,
		    line + js->tok[args].off, 0, "ttl_ms")) != -1 &&
		    (sub->tok[t].type != JT_NUMBER || jscan_number(sub,
		    line + js->tok[args].off, t) < 0))
			bad = 1;
		engine_scan_give(sub);
	}
	if (!bad)
		return 0;
	err->code = "invalid_envelope";
	snprintf(err->path, sizeof err->path,
	    "outputs.next_actions[%d].args.ttl_ms", i - 1);
	snprintf(err->msg, sizeof err->msg, "%s must be a number >= 0",
	    err->path);
	return -1;
}

/*
 * Make the requests of a reply's next_actions (not yet routed: the
 * caller routes them once req has ended).  Returns how many.
 */
static int
engine_actions(struct msg *req, struct jscan *js, const char *line,
    const struct env *env, const char *reply_id, struct msgq *out)
{
	struct job	*j = req->job;
	struct msg	*m;
	char		 id[CORRAL_ID_MAX], *al;
	const char	*ctx = NULL, *iv;
	size_t		 alen, ctxlen = 0, il;
	int		 e, t, n = 0, intent, c, args;

	if (env->next_actions == -1 || j == NULL || j->done)
		return 0;
	if (env->content != -1 && (c = jscan_get(js, line, env->content,
	    "text")) != -1) {
		ctx = line + js->tok[c].off;
		ctxlen = js->tok[c].len;
	}
	for (e = jscan_first(js, env->next_actions); e != -1;
	    e = jscan_next(js, env->next_actions, e)) {
		if (j->steps >= engine_wf->max_steps) {
			engine_limit(j, "max_steps", "the workflow reached "
			    "max_steps (%u) requests", engine_wf->max_steps);
			return n;
		}
		if (req->depth + 1 > engine_wf->max_depth) {
			engine_limit(j, "max_depth", "next_actions would go "
			    "deeper than max_depth (%u)", engine_wf->max_depth);
			return n;
		}
		t = JSCAN_GET(js, line, e, "intent");
		iv = jscan_text(js, line, t, &il);
		intent = protocol_intent(iv, il);
		if (!engine_room(js->tok[e].len + ctxlen + 512)) {
			engine_limit(j, "memory_limit", "the next actions of "
			    "reply %s would hold more than limits.memory (%zu "
			    "bytes) in requests", reply_id,
			    engine_wf->max_memory);
			return n;
		}
		protocol_new_id(id, sizeof id);
		al = envelope_action(js, line, e, id, reply_id, ctx, ctxlen,
		    &alen);
		m = engine_msg_create(j, al, alen, MSG_ACTION, intent);
		strlcpy(m->id, id, sizeof m->id);
		m->depth = req->depth + 1;
		m->prio = req->prio;
		m->parent_agent = req->parent_agent;
		/* args.ttl_ms becomes the new request's deadline. */
		if ((args = JSCAN_GET(js, line, e, "args")) != -1)
			m->timeout = engine_action_ttl(line + js->tok[args].off,
			    js->tok[args].len);
		j->steps++;
		engine_stats.steps++;
		n++;
		auditlog_envelope("env", NULL, id, al, alen);
		TAILQ_INSERT_TAIL(out, m, entry);
	}
	return n;
}

/*
 * Make a line from an agent (a) or a client honest: only corral writes
 * the corral member, and an agent's reply names the agent that wrote it.
 * Returns the line to use (*copy set when it is a new one, js then holding
 * its tape), or NULL when the copy could not be scanned.
 */
static const char *
engine_unforge(struct jscan *js, struct agent *a, const char *line,
    size_t *len, struct env *env, char **copy)
{
	struct env_error	err;
	size_t			clen;
	int			forged;

	*copy = envelope_own(js, line, *len, env, a != NULL ? a->id : NULL,
	    &forged, &clen);
	if (*copy == NULL)
		return line;
	if (forged & FORGED_CORRAL)
		log_info("%s%s: its corral member was dropped (only corral "
		    "writes it)", a != NULL ? "agent " : "stdin",
		    a != NULL ? a->id : "");
	if (forged & FORGED_SENDER)
		log_info("agent %s: its reply named another agent.id; it names "
		    "%s now", a->id, a->id);
	auditlog_event("unforged", a != NULL ? a->id : "stdin", NULL,
	    "corral", (forged & FORGED_CORRAL) ? "dropped" : "none",
	    "agent_id", (forged & FORGED_SENDER) ? "replaced" : "kept",
	    NULL);
	if (jscan_run(js, *copy, clen) != 0 ||
	    envelope_check(js, *copy, clen, env, &err) != 0) {
		free(*copy);
		*copy = NULL;
		return NULL;
	}
	*len = clen;
	return *copy;
}

/*
 * The reply, filled in where the agent left trace.id, trace.parents or
 * timestamp out.  Returns the line to use (*filled set when it is a copy,
 * js then holding its tape), or NULL when the copy could not be scanned.
 */
static const char *
engine_fill(struct jscan *js, struct msg *req, const char *line,
    size_t *len, struct env *env, char *reply_id, char **filled)
{
	struct env_error	err;
	size_t			flen;

	*filled = NULL;
	if (envelope_trace_id(js, line, env, reply_id, CORRAL_ID_MAX) != 0) {
		protocol_new_id(reply_id, CORRAL_ID_MAX);
		*filled = envelope_fill(js, line, *len, env, reply_id, req->id,
		    &flen);
	} else
		*filled = envelope_fill(js, line, *len, env, NULL, req->id,
		    &flen);
	if (*filled == NULL)
		return line;
	if (jscan_run(js, *filled, flen) != 0 ||
	    envelope_check(js, *filled, flen, env, &err) != 0) {
		log_warnx("request %s: the reply could not be completed",
		    req->id);
		free(*filled);
		*filled = NULL;
		return NULL;
	}
	*len = flen;
	return *filled;
}

/* Return nonzero if a reply is weak: it goes to reflection. */
static int
engine_weak(const struct env *env)
{
	if (env->ctype == CT_ERROR)
		return 0;
	if (env->has_score)
		return env->score < engine_wf->refl_below;
	return engine_wf->refl_missing == MISSING_REFLECT;
}

/*
 * Handle a valid reply from agent a to request req: account for it, then
 * reflect, finish the job, or follow its next_actions.  The reply's tape
 * is js's, and stays so throughout.
 */
static void
engine_reply(struct agent *a, struct msg *req, struct jscan *js,
    const char *line, size_t len, struct env *env)
{
	char		 reply_id[CORRAL_ID_MAX], *filled, *unforged;

	lifecycle_replied(a);
	breaker_success(a);
	engine_stats.replied++;
	if ((line = engine_unforge(js, a, line, &len, env, &unforged)) ==
	    NULL || (line = engine_fill(js, req, line, &len, env, reply_id,
	    &filled)) == NULL) {
		free(unforged);
		engine_stats.replied--;
		engine_fail(req, "INTERNAL", "bad_reply", "the reply of agent %s "
		    "could not be completed with a trace id", a->id);
		return;
	}
	auditlog_envelope("reply", a->id, reply_id, line, len);
	auditlog_event("outcome", a->id, req->id, "outcome", "replied",
	    "reply", reply_id, NULL);
	if (engine_hooks.outcome != NULL)
		engine_hooks.outcome(req, "replied", NULL, NULL, NULL);
	/* Only after the outcome may the freed slot take other work. */
	engine_undispatch(req);
	engine_account(a, env);
	/* A step's artifacts are the step module's: it waits for them. */
	if (workspace_enabled() && req->kind != MSG_STEP)
		(void)workspace_artifacts(a->id, reply_id, js, line);

	engine_follow(req, a, js, line, len, env, reply_id, 1);
	free(filled);
	free(unforged);
	route_kick(a);
}

/*
 * The first finalize of a job with join: first: it is the job's result,
 * saying how many branches were still open; those are cancelled.
 */
static void
engine_first(struct job *j, struct msg *req, struct jscan *js,
    const char *line, size_t len)
{
	struct msg	*m;
	struct jsonw	 w;
	char		*member, *marked = NULL;
	size_t		 mlen, open = 0, llen = len;

	TAILQ_FOREACH(m, &j->msgs, job_entry)
		if (m != req && m->kind != MSG_TASK)
			open++;
	if (open > 0) {
		jsonw_init(&w);
		jsonw_object(&w);
		jsonw_key(&w, "join");
		jsonw_object(&w);
		jsonw_key(&w, "wait");
		jsonw_str(&w, "first");
		jsonw_key(&w, "open");
		jsonw_u64(&w, open);
		jsonw_key(&w, "cancelled");
		jsonw_array(&w);
		TAILQ_FOREACH(m, &j->msgs, job_entry)
			if (m != req && m->kind != MSG_TASK)
				jsonw_str(&w, m->id);
		jsonw_array_end(&w);
		jsonw_object_end(&w);
		jsonw_object_end(&w);
		member = jsonw_finish(&w, &mlen);
		marked = envelope_mark(js, line, len, member, &llen);
		free(member);
		log_info("job %s: the first finalize ends it; %zu open branches "
		    "are cancelled", j->id, open);
	}
	engine_job_finish(j, marked != NULL ? marked : line, llen, 0,
	    req->kind == MSG_INPUT && marked == NULL);
	free(marked);
	(void)engine_cancel_rest(j, "REJECTED", "cancelled", "the job ended at "
	    "its first finalize (join: first)", req);
}

/*
 * What follows a valid reply to req (or a weak reply that stands after
 * its reflection failed: no reflecting then): a reflection, the end of
 * the job at the first finalize (join: first), the reply's next actions,
 * or the end of its branch.  req ends here, before anything it leads to
 * is routed.
 */
static void
engine_follow(struct msg *req, struct agent *a, struct jscan *js,
    const char *line, size_t len, struct env *env, const char *reply_id,
    int may_reflect)
{
	struct job	*j = req->job;
	struct msgq	 next = TAILQ_HEAD_INITIALIZER(next);
	struct msg	*m;
	int		 ctype_error = (env->ctype == CT_ERROR), finalize;

	if (j == NULL || j->done || engine_stopping) {
		/* The job has its result, or corral stops: nothing follows. */
		engine_request_end(req, line, len, ctype_error, END_BRANCH);
		return;
	}
	if (req->kind == MSG_STEP && engine_step.reply != NULL) {
		/* The workflow's steps decide what follows. */
		engine_step_ended(req, a, NULL, reply_id, line, len);
		return;
	}
	if (may_reflect && engine_weak(env) && (m = engine_reflection(req, a,
	    js, line, len, env, reply_id)) != NULL) {
		/* The reflection carries the branch on. */
		engine_request_end(req, line, len, 0, END_NONE);
		engine_submit(m);
		return;
	}
	finalize = (env->intent == INTENT_FINALIZE || (req->kind ==
	    MSG_REFLECT && req->orig_intent == INTENT_FINALIZE)) &&
	    !ctype_error && req->kind != MSG_TASK;
	if (finalize && engine_wf->join_first) {
		engine_first(j, req, js, line, len);
		engine_request_end(req, line, len, 0, END_BRANCH);
		return;
	}
	if (finalize) {
		engine_request_end(req, line, len, 0, END_FINAL);
		return;
	}
	if (!ctype_error && req->kind != MSG_TASK &&
	    engine_actions(req, js, line, env, reply_id, &next) > 0) {
		/* This branch goes on in its next actions. */
		engine_request_end(req, line, len, 0, END_NONE);
		while ((m = TAILQ_FIRST(&next)) != NULL) {
			TAILQ_REMOVE(&next, m, entry);
			engine_submit(m);
		}
		return;
	}
	engine_request_end(req, line, len, ctype_error, END_BRANCH);
}

/* Send an agent (NULL: serve's stdin) an error notice about its output. */
static void
engine_notice(struct agent *a, const char *code, const char *path,
    const char *message, const char *parent)
{
	char	*e;
	size_t	 len;

	engine_stats.rejected++;
	auditlog_event("rejected", a != NULL ? a->id : "stdin", parent, "code",
	    code, "path", path != NULL ? path : "", "reason", message, NULL);
	if (a == NULL) {
		/* corral serve: the error is that input's one result. */
		e = envelope_error(code, "REJECTED", path, message, parent,
		    NULL, &len);
		engine_out(e, len);
		free(e);
		return;
	}
	if (agent_full(a) || a->work.env_streak > ENGINE_ENV_STREAK) {
		/*
		 * It does not read what we send, or it answers every notice
		 * with another bad envelope: more notices would only grow
		 * our memory, or loop with it for ever.  The line is still
		 * counted and audited, and one summary follows once it
		 * reads again or sends a valid envelope.
		 */
		engine_stats.notices_dropped++;
		a->work.notices_dropped++;
		return;
	}
	e = envelope_error(code, "REJECTED", path, message, parent,
	    CORRAL_KIND_NOTICE, &len);
	agent_send(a, e, len);
	free(e);
}

/*
 * The trace.id of a line that scanned but is not a valid envelope, if it
 * has a usable one, so the error can name what it answers.
 */
static const char *
engine_raw_trace_id(struct jscan *js, const char *line, char *buf, size_t len)
{
	const char	*v;
	size_t		 l;
	int		 t, x;

	if (js->tok[0].type != JT_OBJECT ||
	    (t = JSCAN_GET(js, line, 0, "trace")) == -1 ||
	    js->tok[t].type != JT_OBJECT ||
	    (x = JSCAN_GET(js, line, t, "id")) == -1 ||
	    js->tok[x].type != JT_STRING)
		return NULL;
	v = jscan_text(js, line, x, &l);
	if (l == 0 || l >= len)
		return NULL;
	memcpy(buf, v, l);
	buf[l] = '\0';
	return buf;
}

/*
 * Log a warning about an agent's bad output, at most ten a second per
 * agent: a flood of bad lines must not turn into a flood of log lines.
 * Every line is still counted and recorded in the audit log.
 */
static void __attribute__((format(printf, 2, 3)))
engine_warn_agent(struct agent *a, const char *fmt, ...)
{
	static ev_tstamp	 stdin_at;
	static unsigned int	 stdin_count, stdin_dropped;
	ev_tstamp		 now = ev_now(LOOP), *at;
	unsigned int		*count, *dropped;
	va_list			 ap;
	char			 buf[512], who[96];

	/* NULL: corral serve's stdin, limited the same way. */
	at = a != NULL ? &a->work.warn_at : &stdin_at;
	count = a != NULL ? &a->work.warn_count : &stdin_count;
	dropped = a != NULL ? &a->work.warn_dropped : &stdin_dropped;
	snprintf(who, sizeof who, a != NULL ? "agent %s" : "stdin",
	    a != NULL ? a->id : "");
	if (now - *at >= 1.0) {
		if (*dropped > 0)
			log_warnx("%s: %u more warnings like these were not "
			    "logged", who, *dropped);
		*at = now;
		*count = 0;
		*dropped = 0;
	}
	if (++*count > 10) {
		++*dropped;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	log_warnx("%s: %s", who, buf);
}

/*
 * An agent's stdin drained: if notices were dropped while it did not
 * read, tell it how many, once.
 */
static void
engine_agent_drained(struct agent *a)
{
	engine_notices_summary(a, "while you were not reading your stdin");
}

/* Tell an agent how many notices it was not sent, once, and why. */
static void
engine_notices_summary(struct agent *a, const char *when)
{
	char		 why[200];
	unsigned int	 n = a->work.notices_dropped;

	if (n == 0 || agent_full(a))
		return;
	a->work.notices_dropped = 0;
	snprintf(why, sizeof why, "%u notices about your output were not sent "
	    "%s", n, when);
	engine_notice(a, "notices_dropped", NULL, why, NULL);
	engine_stats.rejected--;	/* the summary is not a rejected line */
}

/*
 * Count an invalid envelope from agent a (or one that answers nothing).
 * An agent that answers every notice with another such envelope would
 * loop with corral for ever: after ENGINE_ENV_STREAK in a row it is sent
 * no more notices (a flood of them gets the same), until it writes a
 * valid envelope that answers something.
 */
static void
engine_bad_envelope(struct agent *a)
{
	if (++a->work.env_streak != ENGINE_ENV_STREAK + 1)
		return;
	log_warnx("agent %s: %u invalid envelopes in a row: no more notices "
	    "until it writes a valid one (does it answer every notice?)",
	    a->id, ENGINE_ENV_STREAK);
}

/* A valid envelope from agent a ends a streak of invalid ones. */
static void
engine_good_envelope(struct agent *a)
{
	int	muted = a->work.env_streak > ENGINE_ENV_STREAK;

	a->work.env_streak = 0;
	if (muted)
		engine_notices_summary(a, "after many invalid envelopes in a "
		    "row");
}

/* Describe a scan failure for a person. */
static void
engine_scan_error(char *buf, size_t len, const struct jscan *js)
{
	snprintf(buf, len, "invalid JSON at byte %zu: %s", js->err_off,
	    js->err != NULL ? js->err : "syntax error");
}

/*
 * Find the request a reply answers: the outstanding one named in
 * trace.parents, else (no parents given) the oldest outstanding.
 */
static struct msg *
engine_match(struct agent *a, struct jscan *js, const char *line,
    const struct env *env)
{
	struct msg	*m;

	if (env->parents != -1) {
		TAILQ_FOREACH(m, &a->work.inflight, entry)
			if (envelope_has_parent(js, line, env, m->id))
				return m;
		return NULL;
	}
	return TAILQ_FIRST(&a->work.inflight);
}

/*
 * Handle a bad line (too long, NUL byte, not JSON) from an agent (a) or
 * serve's stdin (NULL).  Returns nonzero when the line was bad.
 */
static int
engine_bad_line(struct agent *a, size_t max, struct jscan *js,
    const char *line, size_t len, enum ndjson_kind kind, size_t extra)
{
	char	why[256];

	switch (kind) {
	case NDJSON_TOOLONG:
		if (a != NULL)
			snprintf(why, sizeof why, "a line of %zu bytes exceeds "
			    "max_line (%zu bytes) and was dropped", extra, max);
		else
			snprintf(why, sizeof why, "a line of %zu bytes exceeds "
			    "the maximum (%zu bytes, the largest max_line of the "
			    "workflow's agents) and was dropped", extra, max);
		/* Not rate-limited: each costs max_line bytes to send. */
		if (a != NULL)
			log_warnx("agent %s: %s", a->id, why);
		else
			log_warnx("stdin: %s", why);
		engine_notice(a, "line_too_long", NULL, why, NULL);
		return 1;
	case NDJSON_NUL:
		snprintf(why, sizeof why, "the line holds a NUL byte at offset "
		    "%zu and was dropped", extra);
		engine_warn_agent(a, "%s", why);
		engine_notice(a, "nul_byte", NULL, why, NULL);
		return 1;
	default:
		break;
	}
	if (jscan_run(js, line, len) != 0) {
		engine_scan_error(why, sizeof why, js);
		engine_warn_agent(a, "%s", why);
		engine_notice(a, "invalid_json", NULL, why, NULL);
		return 1;
	}
	return 0;
}

/*
 * The in-flight request an invalid reply names in its trace.parents, or,
 * when it names none, the oldest one (as for a valid reply).
 */
static struct msg *
engine_raw_match(struct agent *a, struct jscan *js, const char *line)
{
	struct msg	*m;
	int		 t, p, e;

	if (js->tok[0].type != JT_OBJECT)
		return NULL;
	/* No parents named: the oldest outstanding, as engine_match says. */
	if ((t = JSCAN_GET(js, line, 0, "trace")) == -1 ||
	    (js->tok[t].type == JT_OBJECT &&
	    JSCAN_GET(js, line, t, "parents") == -1))
		return TAILQ_FIRST(&a->work.inflight);
	if (js->tok[t].type != JT_OBJECT ||
	    (p = JSCAN_GET(js, line, t, "parents")) == -1 ||
	    js->tok[p].type != JT_ARRAY)
		return NULL;
	for (e = jscan_first(js, p); e != -1; e = jscan_next(js, p, e)) {
		if (js->tok[e].type != JT_STRING)
			continue;
		TAILQ_FOREACH(m, &a->work.inflight, entry)
			if (jscan_str_equal(js, line + js->tok[e].off,
			    js->tok[e].len, js->tok[e].flags & JT_ESCAPED,
			    m->id, strlen(m->id)))
				return m;
	}
	return NULL;
}

/*
 * Count a line from agent a that is not JSON.  An agent that prints plain
 * text for every line it reads, notices included, would loop with corral
 * for ever; after ENGINE_BAD_STREAK such lines in a row, with nothing
 * valid between them, it is failed, with a cause that quotes the first.
 * A burst of garbage (some megabytes of it) stays below that.
 */
static void
engine_bad(struct agent *a, const char *line, size_t len)
{
	char	why[400], q[200];
	size_t	n;

	if (a->work.bad_streak++ == 0) {
		if (a->work.bad_first == NULL)
			a->work.bad_first = xmalloc(ENGINE_BAD_FIRST);
		n = util_utf8_cut(line, len, ENGINE_BAD_FIRST - 1);
		if (n > 0)
			memcpy(a->work.bad_first, line, n);
		a->work.bad_first[n] = '\0';
	}
	if (a->work.bad_streak < ENGINE_BAD_STREAK || !lifecycle_alive(a) ||
	    lifecycle_stopping(a))
		return;
	log_escape(q, sizeof q, a->work.bad_first, strlen(a->work.bad_first));
	snprintf(why, sizeof why, "it writes non-JSON to stdout (%u bad lines "
	    "in a row, the first: \"%s\"); log to stderr instead",
	    a->work.bad_streak, q);
	a->work.bad_streak = 0;
	lifecycle_fail(a, why);
}

/* A line an agent wrote on its stdout, scanned with js. */
static void
engine_agent_scanned(struct agent *a, struct jscan *js, char *line,
    size_t len, enum ndjson_kind kind, size_t extra)
{
	struct env		 env;
	struct env_error	 err;
	struct msg		*req;
	char			 id[CORRAL_ID_MAX];

	if (engine_bad_line(a, a->conf->max_line, js, line, len, kind,
	    extra)) {
		engine_bad(a, line, len);
		return;
	}
	a->work.bad_streak = 0;
	if (js->tok[0].type == JT_OBJECT &&
	    JSCAN_GET(js, line, 0, "jsonrpc") != -1) {
		a->work.bad_streak = 0;
		/* The control plane scans it again: let the tape go first. */
		jscan_trim(js);
		if (engine_hooks.control != NULL)
			engine_hooks.control(&a->peer, line, len);
		return;
	}
	if (envelope_check(js, line, len, &env, &err) != 0 ||
	    engine_check_ttls(js, line, &env, &err) != 0) {
		engine_warn_agent(a, "invalid envelope: %s", err.msg);
		engine_bad_envelope(a);
		engine_notice(a, err.code, err.path, err.msg,
		    engine_raw_trace_id(js, line, id, sizeof id));
		/*
		 * A reply whose next_actions cannot be followed (an unknown
		 * intent, a missing task) fails its request now, not at its
		 * timeout: it is the agent's answer, and it is wrong.
		 */
		if (strncmp(err.path, "outputs.next_actions", 20) == 0 &&
		    (req = engine_raw_match(a, js, line)) != NULL &&
		    req->kind != MSG_TASK) {
			engine_undispatch(req);
			req->agent = a;
			engine_fail(req, "REJECTED", err.code, "agent %s replied "
			    "with an invalid envelope: %s", a->id, err.msg);
			route_kick(a);
		}
		return;
	}
	a->proc.msgs_out++;
	req = engine_match(a, js, line, &env);
	if (req == NULL && env.parents == -1 && env.ctype != CT_ERROR) {
		/* Answering the notice with another such one would loop. */
		engine_bad_envelope(a);
		log_warnx("agent %s: an envelope with no request outstanding "
		    "was dropped", a->id);
		engine_notice(a, "unsolicited", NULL, "no request is "
		    "outstanding for this envelope; replies answer requests, "
		    "new work goes through outputs.next_actions or map/send",
		    NULL);
		return;
	}
	engine_good_envelope(a);
	if (req != NULL &&
	    (req->kind == MSG_TASK || req->kind == MSG_SEND)) {
		if (engine_task.reply != NULL)
			engine_task.reply(a, req, js, line, len, &env);
		return;
	}
	if (req == NULL) {
		/* A late reply, or a duplicate: its request is done. */
		engine_stats.late++;
		log_info("agent %s: late or duplicate reply dropped", a->id);
		auditlog_envelope("late", a->id, NULL, line, len);
		return;
	}
	engine_reply(a, req, js, line, len, &env);
}

/* A line an agent wrote on its stdout. */
static void
engine_agent_line(struct agent *a, char *line, size_t len,
    enum ndjson_kind kind, size_t extra)
{
	struct jscan	*js;

	lifecycle_activity(a);
	if (a->adapter != NULL) {
		/* An adapted tool's lines belong to its adapter. */
		if (kind == NDJSON_LINE)
			(void)adapter_line(a, line, len);
		else
			log_warnx("agent %s: a bad line (%s, %zu) was dropped",
			    a->id, kind == NDJSON_NUL ? "NUL byte" : "too long",
			    extra);
		return;
	}
	js = engine_scan_take();
	engine_agent_scanned(a, js, line, len, kind, extra);
	engine_scan_give(js);
}

/*
 * A reply an adapter made for request m of agent a (built with jansson).
 * Ignored if m was given up meanwhile.
 */
static void
engine_adapter_reply(struct agent *a, struct msg *m, const char *line,
    size_t len)
{
	struct env		 env;
	struct env_error	 err;
	struct jscan		*js;

	if (m->where != MSG_INFLIGHT || m->agent != a)
		return;
	lifecycle_activity(a);
	engine_progress_last(m);
	js = engine_scan_take();
	if (jscan_run(js, line, len) != 0 ||
	    envelope_check(js, line, len, &env, &err) != 0) {
		log_warnx("agent %s: adapter %s made an invalid reply: %s",
		    a->id, a->conf->adapter, js->err != NULL ? js->err :
		    err.msg);
		engine_fail(m, "INTERNAL", "bad_reply", "adapter %s made an "
		    "invalid reply", a->conf->adapter);
		engine_scan_give(js);
		return;
	}
	a->proc.msgs_out++;
	engine_reply(a, m, js, line, len, &env);
	engine_scan_give(js);
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
	struct job	*j;
	struct msg	*m;
	char		 id[CORRAL_ID_MAX], *copy;
	size_t		 clen;

	if (envelope_trace_id(js, line, env, id, sizeof id) != 0) {
		protocol_new_id(id, sizeof id);
		copy = envelope_fill(js, line, len, env, id, NULL, &clen);
	} else
		copy = envelope_fill(js, line, len, env, NULL, NULL, &clen);
	if (copy == NULL) {
		copy = xmemdup0(line, len);
		clen = len;
	}
	j = engine_job_create(origin);
	strlcpy(j->id, id, sizeof j->id);
	m = engine_msg_create(j, copy, clen, origin == JOB_RUN ? MSG_GOAL :
	    MSG_INPUT, env->intent);
	strlcpy(m->id, id, sizeof m->id);
	m->prio = (uint8_t)env->prio;
	m->timeout = env->ttl;
	auditlog_envelope(origin == JOB_RUN ? "goal" : "input", NULL, id, copy,
	    clen);
	engine_step_first(m);
	return m;
}

/*
 * A line on corral serve's stdin, from peer: a new job.  Whatever is
 * wrong with it, it gets exactly one line back.
 */
void
engine_input_line(struct peer *from, char *line, size_t len,
    enum ndjson_kind kind, size_t extra)
{
	struct env		 env;
	struct env_error	 err;
	struct jscan		*js;
	struct msg		*m;
	char			 id[CORRAL_ID_MAX], *stripped = NULL;

	js = engine_scan_take();
	if (engine_bad_line(NULL, from->chan != NULL ? from->chan->rd.max : 0,
	    js, line, len, kind, extra))
		goto out;
	if (js->tok[0].type == JT_OBJECT &&
	    JSCAN_GET(js, line, 0, "jsonrpc") != -1) {
		/* The control plane scans it again: let the tape go first. */
		jscan_trim(js);
		if (engine_hooks.control != NULL)
			engine_hooks.control(from, line, len);
		goto out;
	}
	if (envelope_check(js, line, len, &env, &err) != 0) {
		engine_warn_agent(NULL, "invalid envelope: %s", err.msg);
		engine_notice(NULL, err.code, err.path, err.msg,
		    engine_raw_trace_id(js, line, id, sizeof id));
		goto out;
	}
	if (!engine_room(len + 256)) {
		engine_warn_agent(NULL, "refused: limits.memory is reached");
		engine_notice(NULL, "memory_limit", NULL, "corral holds as many "
		    "envelopes as limits.memory allows; send this again later",
		    engine_raw_trace_id(js, line, id, sizeof id));
		goto out;
	}
	if (budget_run_spent()) {
		/* The run's budget is spent: no new work is taken. */
		engine_notice(NULL, "budget_exceeded", NULL, "the run's budget "
		    "is spent; no new work is taken",
		    engine_raw_trace_id(js, line, id, sizeof id));
		goto out;
	}
	/* Only corral says what a line is: nobody may forge that. */
	if ((line = (char *)engine_unforge(js, NULL, line, &len, &env,
	    &stripped)) == NULL) {
		engine_notice(NULL, "invalid_envelope", "corral", "the input "
		    "could not be read without its corral member", NULL);
		goto out;
	}
	m = engine_job_start(js, line, len, &env, JOB_SERVE);
	if (engine_njobs >= engine_wf->max_inflight && engine_hooks.pause)
		engine_hooks.pause(STDIN_P_JOBS, 1);
	engine_submit(m);
out:
	free(stripped);
	engine_scan_give(js);
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

	js = engine_scan_take();
	if (jscan_run(js, line, len) != 0 ||
	    envelope_check(js, line, len, &env, &err) != 0) {
		engine_scan_give(js);
		return -1;
	}
	m = engine_job_start(js, line, len, &env, JOB_RUN);
	engine_scan_give(js);
	engine_submit(m);
	return 0;
}

/*
 * An agent stopped or can no longer answer: its outstanding requests fail
 * (or are delivered again, for HIGH and CRITICAL ones).
 */
static void
engine_agent_gone(struct agent *a, const char *why, const char *note)
{
	struct msg	*m;

	if (engine_task.gone != NULL)
		engine_task.gone(a, why);
	while ((m = TAILQ_FIRST(&a->slot.direct)) != NULL &&
	    !lifecycle_will_restart(a)) {
		route_dequeue(m);
		engine_fail(m, "UNAVAILABLE", "agent_lost", "agent %s %s",
		    a->id, why);
	}
	while ((m = TAILQ_FIRST(&a->work.inflight)) != NULL) {
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
		engine_fail(m, "UNAVAILABLE", "agent_lost", "agent %s ended "
		    "before replying: %s", a->id, note);
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
	/* A new process starts with a clean slate of bad lines. */
	if (ev == AE_SPAWNED) {
		a->work.bad_streak = 0;
		a->work.env_streak = 0;
		a->work.notices_dropped = 0;
	}
	/* How it ended, with its last stderr lines: the cause of the error. */
	if (ev == AE_EXITED && to == AS_STOPPED)
		engine_agent_gone(a, why, lifecycle_last_exit(a) != NULL ?
		    lifecycle_last_exit(a) : why);
	else if (ev == AE_BROKEN || (from == AS_BACKOFF && to == AS_STOPPED))
		engine_agent_gone(a, why, why);
	else if (to == AS_FAILED) {
		if (lifecycle_cause(a) != NULL)
			why = lifecycle_cause(a);
		engine_agent_gone(a, why, why);
		if (engine_task.failed != NULL)
			engine_task.failed(a, why);
		route_check_orphans();
	}
}

/* An agent is about to be freed: requests must not point at it. */
static void
engine_forget_agent(struct agent *a)
{
	struct msg	*m;

	free(a->work.progress);
	a->work.progress = NULL;
	TAILQ_FOREACH(m, &engine_live, live_entry) {
		if (m->exclude == a)
			m->exclude = NULL;
		if (m->parent_agent == a)
			m->parent_agent = NULL;
		if (m->agent == a && m->where != MSG_INFLIGHT)
			m->agent = NULL;
		if (m->target == a && m->holds) {
			m->target = NULL;
			m->holds = 0;
		}
	}
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

/* End every unfinished job at a limit (the run's time budget). */
void
engine_limit_all(const char *code, const char *why)
{
	struct job	*j, *next;

	TAILQ_FOREACH_SAFE(j, &engine_jobs, entry, next)
		engine_limit(j, code, "%s", why);
}

/* Return nonzero when no job is left. */
int
engine_idle(void)
{
	return engine_njobs == 0;
}

/*
 * A workflow of steps: the job's first envelope becomes its first step's
 * request, keeping its trace id (docs/steps.md).  The goal or input stays
 * recorded as it came; the request is recorded as an env line.
 */
static void
engine_step_first(struct msg *m)
{
	const struct agent_conf	*entry = NULL;
	char			*line;
	size_t			 len;
	int			 intent = m->intent;

	if (engine_step.first == NULL || (line = engine_step.first(m->job,
	    m->line, m->len, &len, &intent, &entry)) == NULL)
		return;
	engine_stats.bytes += len - m->len;
	free(m->line);
	m->line = line;
	m->len = len;
	m->kind = MSG_STEP;
	m->intent = (uint8_t)intent;
	m->to_entry = entry;
	auditlog_envelope("env", NULL, m->id, line, len);
}

/*
 * A step's request ended, with a reply from a (reply_id) or failed (code,
 * why): its branch is held while the step module decides what follows,
 * and the request ends first, so that what follows comes after it in the
 * audit log.
 */
static void
engine_step_ended(struct msg *req, struct agent *a, const char *code,
    const char *why_or_id, const char *line, size_t len)
{
	struct job	*j = req->job;
	char		 id[CORRAL_ID_MAX];

	strlcpy(id, req->id, sizeof id);
	engine_job_hold(j);
	engine_request_end(req, line, len, code != NULL, END_NONE);
	if (j->done) {
		engine_job_unhold(j);
		return;
	}
	if (code == NULL)
		engine_step.reply(j, id, a, line, len, why_or_id);
	else
		engine_step.failed(j, id, code, why_or_id, line, len);
}

/*
 * Make and route the request of a step in job j (line taken over), with
 * its trace id: to a workflow entry, or by intent when entry is NULL.  It
 * counts towards limits.max_steps.  Returns 0, or -1 when a limit ended
 * the job instead.
 */
int
engine_step_submit(struct job *j, char *line, size_t len, int intent,
    const struct agent_conf *entry, const char *id)
{
	struct msg	*m;

	if (j->steps >= engine_wf->max_steps) {
		free(line);
		engine_limit(j, "max_steps", "the workflow reached max_steps "
		    "(%u) requests", engine_wf->max_steps);
		return -1;
	}
	if (!engine_room(len + 512)) {
		free(line);
		engine_limit(j, "memory_limit", "the next step's request would "
		    "hold more than limits.memory (%zu bytes) in requests",
		    engine_wf->max_memory);
		return -1;
	}
	m = engine_msg_create(j, line, len, MSG_STEP, intent);
	strlcpy(m->id, id, sizeof m->id);
	m->to_entry = entry;
	j->steps++;
	engine_stats.steps++;
	auditlog_envelope("env", NULL, id, line, len);
	engine_submit(m);
	return 0;
}

/*
 * Hold job j open: a branch of it goes on, though no request of it is
 * out (a step's artifacts are being written, or a person is asked).
 */
void
engine_job_hold(struct job *j)
{
	j->open++;
	j->pending++;
}

/*
 * Let a hold go: the branch went on in a new request, or ended.  A job
 * with nothing left comes together, and is freed when it may be.
 */
void
engine_job_unhold(struct job *j)
{
	if (j->pending > 0)
		j->pending--;
	if (j->open > 0)
		j->open--;
	if (j->open == 0 && !j->done)
		engine_join(j);
	engine_job_release(j);
}

/*
 * End the held branch of job j with line (a reply, or an error envelope
 * corral made), which answers request id: it is the branch's end, as a
 * reply that leads nowhere further is.
 */
void
engine_job_end_branch(struct job *j, const char *id, const char *line,
    size_t len, int is_error)
{
	struct msg	 m;

	if (!j->done) {
		memset(&m, 0, sizeof m);
		strlcpy(m.id, id, sizeof m.id);
		m.kind = MSG_STEP;
		m.intent = INTENT_FINALIZE;
		engine_branch_end(j, &m, line, len, is_error, 0);
	}
	engine_job_unhold(j);
}
