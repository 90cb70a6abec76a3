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
 * timestamp are copied, to splice those in.
 */

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

static uint64_t	engine_job_seq;

static void	engine_msg_timer_cb(struct ev_loop *, ev_timer *, int);
static void	engine_job_deadline_cb(struct ev_loop *, ev_timer *, int);
static void	engine_branch_done(struct job *, const char *, size_t, int,
		    int);
static struct agent *engine_undispatch_static(struct msg *, int);
static void	engine_notice(struct agent *, const char *, const char *,
		    const char *, const char *);

/* Prepare the engine. */
void
engine_init(void)
{
	TAILQ_INIT(&cr->jobs);
	TAILQ_INIT(&cr->retrying);
	cr->js = jscan_create(4);
}


/* Start a job. */
struct job *
engine_job_create(int origin)
{
	struct job	*j;

	j = xcalloc(1, sizeof *j);
	j->seq = ++engine_job_seq;
	j->origin = origin;
	j->started = ev_now(cr->loop);
	ev_timer_init(&j->deadline_w, engine_job_deadline_cb, 0, 0);
	j->deadline_w.data = j;
	if (cr->wf->deadline > 0) {
		ev_timer_set(&j->deadline_w, cr->wf->deadline, 0);
		ev_timer_start(cr->loop, &j->deadline_w);
	}
	TAILQ_INSERT_TAIL(&cr->jobs, j, entry);
	cr->njobs++;
	return j;
}

/*
 * Write one line on corral serve's stdout.  When stdout is full, whoever
 * produced the line stops: an agent until stdout drains, stdin likewise
 * (stdin and stdout are one channel, so it pauses itself).
 */
void
engine_stdout(const char *line, size_t len)
{
	chan_write_line(&cr->stdio, line, len);
	if (!chan_full(&cr->stdio))
		return;
	if (cr->source != NULL && cr->source != &cr->stdio)
		chan_block(cr->source, &cr->stdio);
	else
		supervisor_stdin_pause(STDIN_P_STDOUT, 1);
}

/* Free a job once it is done and nothing of it is outstanding. */
static void
engine_job_release(struct job *j)
{
	if (!j->done || j->pending > 0)
		return;
	ev_timer_stop(cr->loop, &j->deadline_w);
	TAILQ_REMOVE(&cr->jobs, j, entry);
	cr->njobs--;
	free(j->result);
	free(j->last);
	free(j);
	if (cr->njobs < cr->wf->max_inflight)
		supervisor_stdin_pause(STDIN_P_JOBS, 0);
	supervisor_check_done();
}

/*
 * A job has its result: write it (serve), or keep it for corral run to
 * print, and stop whatever of the job is still waiting.
 */
static void
engine_job_finish(struct job *j, const char *line, size_t len, int is_error,
    int linked)
{
	struct env		env;
	struct env_error	err;

	if (j->done)
		return;
	j->done = 1;
	j->failed = is_error;
	ev_timer_stop(cr->loop, &j->deadline_w);
	if (auditlog_enabled())
		auditlog_event("job_end", NULL, j->id, "status", is_error ?
		    "failed" : "ok", NULL);
	if (j->origin == JOB_SERVE) {
		char	*relinked = NULL;
		size_t	 llen;

		/*
		 * The caller matches results to its inputs by trace.parents:
		 * make sure the input's id is there, however many steps the
		 * job took.  A direct answer to the input has it already
		 * (linked), and costs no second scan.
		 */
		if (!linked && jscan_run(cr->js, line, len) == 0 &&
		    envelope_check(cr->js, line, len, &env, &err) == 0 &&
		    !envelope_has_parent(cr->js, line, &env, j->id))
			relinked = envelope_add_parent(cr->js, line, len, &env,
			    j->id, &llen);
		if (relinked != NULL) {
			line = relinked;
			len = llen;
		}
		engine_stdout(line, len);
		free(relinked);
	} else {
		free(cr->result);
		cr->result = xmemdup0(line, len);
		cr->resultlen = len;
		cr->result_error = is_error;
		supervisor_run_done();
	}
	progress_update();
}

/* The run's or a job's deadline passed. */
static void
engine_job_deadline_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct job	*j = w->data;
	char		 msg[128], *e;
	size_t		 len;

	snprintf(msg, sizeof msg, "the workflow's deadline of %gs passed",
	    cr->wf->deadline);
	log_warnx("job %s: %s", j->id, msg);
	e = envelope_error("deadline", "TIMEOUT", NULL, msg, j->id, &len);
	if (auditlog_enabled())
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
	m->accepted = ev_now(cr->loop);
	ev_timer_init(&m->timer, engine_msg_timer_cb, 0, 0);
	m->timer.data = m;
	if (j != NULL)
		j->pending++;
	cr->accepted++;
	cr->live_msgs++;
	return m;
}

/* Free a request (its outcome has been recorded). */
void
engine_msg_free(struct msg *m)
{
	ev_timer_stop(cr->loop, &m->timer);
	free(m->line);
	free(m);
	cr->live_msgs--;
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
	ev_timer_stop(cr->loop, &m->timer);
	if (m->timeout > 0) {
		/* The envelope's own deadline counts from acceptance. */
		wait = m->accepted + m->timeout - ev_now(cr->loop);
		if (wait < 0.001)
			wait = 0.001;
	}
	if (wait <= 0)
		return;
	m->deadline = ev_now(cr->loop) + wait;
	ev_timer_set(&m->timer, wait, 0);
	ev_timer_start(cr->loop, &m->timer);
}

/* A request was queued: bound its wait. */
void
engine_queued(struct msg *m)
{
	engine_msg_arm(m, engine_route_timeout(m->route));
	if (cr->queued >= cr->wf->max_queue / 2 && cr->source == &cr->stdio)
		supervisor_stdin_pause(STDIN_P_QUEUE, 1);
}

/* A request left a queue. */
void
engine_unqueued(void)
{
	if (cr->queued < cr->wf->max_queue / 4)
		supervisor_stdin_pause(STDIN_P_QUEUE, 0);
}

/* A request was written to agent a: it is outstanding there. */
void
engine_dispatched(struct msg *m, struct agent *a)
{
	m->agent = a;
	m->where = MSG_INFLIGHT;
	m->attempts++;
	TAILQ_INSERT_TAIL(&a->inflight, m, entry);
	if (a->outstanding++ == 0)
		lifecycle_event(a, AE_WORK, NULL);
	engine_msg_arm(m, a->conf->timeout);
	progress_update();
}

/*
 * Give an outstanding request back to its target's own queue: the target
 * is restarting and gets it again when ready.
 */
void
engine_redirect(struct msg *m)
{
	struct agent	*a = m->agent;

	engine_undispatch_static(m, 0);
	m->target = a;
	route_direct(m);
}

/*
 * Take a request off its agent's outstanding list; with kick, give the
 * freed slot the most urgent waiting message.  Callers that still have an
 * outcome to record kick afterwards, so the audit log stays in order.
 */
static struct agent *
engine_undispatch_static(struct msg *m, int kick)
{
	struct agent	*a = m->agent;

	if (m->where != MSG_INFLIGHT)
		return NULL;
	TAILQ_REMOVE(&a->inflight, m, entry);
	m->where = MSG_NOWHERE;
	m->agent = NULL;
	if (--a->outstanding == 0)
		lifecycle_event(a, AE_IDLE, NULL);
	if (kick)
		route_kick(a);
	return a;
}

/* Return the retry delay before attempt n (1-based). */
static double
engine_retry_delay(unsigned int n)
{
	double	d = cr->wf->retry_initial * pow(cr->wf->retry_factor,
	    (double)(n > 0 ? n - 1 : 0));

	if (d > cr->wf->retry_max)
		d = cr->wf->retry_max;
	return util_jitter(d, 0.25);
}

/* The retry timer of a request fired: route it again. */
static void
engine_retry(struct msg *m)
{
	TAILQ_REMOVE(&cr->retrying, m, entry);
	m->where = MSG_NOWHERE;
	if (cr->shutting_down) {
		engine_fail(m, "UNAVAILABLE", "shutdown", "corral is shutting "
		    "down");
		return;
	}
	(void)route_submit(m);
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
	if (cr->shutting_down || m->attempts > cr->wf->retries)
		return 0;
	if (m->retries >= cr->wf->retries)
		return 0;
	if (strcmp(category, "TIMEOUT") != 0 &&
	    strcmp(category, "UNAVAILABLE") != 0)
		return 0;
	if (m->prio >= PRIO_HIGH)
		return 1;
	return m->attempts == 0;
}

/* Schedule a retry with backoff; the count travels in the envelope. */
static void
engine_schedule_retry(struct msg *m, const char *category, const char *why)
{
	struct env		env;
	struct env_error	err;
	char			member[64], *line;
	size_t			len;
	double			delay;

	m->retries++;
	delay = engine_retry_delay(m->retries);
	snprintf(member, sizeof member, "%u", m->retries);
	if (jscan_run(cr->js, m->line, m->len) == 0 &&
	    envelope_check(cr->js, m->line, m->len, &env, &err) == 0) {
		line = envelope_corral_set(cr->js, m->line, m->len, &env,
		    "retry_count", member, &len);
		free(m->line);
		m->line = line;
		m->len = len;
	}
	log_info("request %s: %s (%s); retry %u in %.1fs", m->id, category, why,
	    m->retries, delay);
	auditlog_event("retry", m->agent != NULL ? m->agent->id : NULL, m->id,
	    "category", category, "reason", why, NULL);
	cr->retried++;
	m->where = MSG_RETRYING;
	TAILQ_INSERT_TAIL(&cr->retrying, m, entry);
	ev_timer_stop(cr->loop, &m->timer);
	ev_timer_set(&m->timer, delay, 0);
	ev_timer_start(cr->loop, &m->timer);
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
	char	 why[512], *e;
	size_t	 len;
	int	 expired = (strcmp(category, "TIMEOUT") == 0);

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);

	if (engine_should_retry(m, category, code)) {
		engine_schedule_retry(m, category, why);
		return;
	}
	if (expired)
		cr->expired++;
	else
		cr->errored++;
	log_info("request %s: %s: %s", m->id, category, why);
	auditlog_event("outcome", m->agent != NULL ? m->agent->id : NULL,
	    m->id, "outcome", expired ? "expired" : "error", "category",
	    category, "code", code, "reason", why, NULL);
	e = envelope_error(code, category, NULL, why, m->id, &len);
	if (auditlog_enabled())
		auditlog_envelope("error", NULL, m->id, e, len);
	engine_request_done(m, e, len, 1);
	free(e);
}

/* The timer of a request fired: its wait is over, or its retry is due. */
static void
engine_msg_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct msg	*m = w->data;
	struct agent	*a;
	double		 waited = ev_now(loop) - m->accepted;

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
		engine_undispatch_static(m, 0);
		m->agent = a;
		a->timeouts++;
		route_breaker_failure(a);
		if (a->timeouts >= 3 && a->state != AS_UNAVAILABLE) {
			a->flags |= AGENT_TIMEDOUT;
			lifecycle_event(a, AE_TIMEOUTS, "%u consecutive "
			    "timeouts", a->timeouts);
			/*
			 * It gets no work now, and maybe no pings: without a
			 * way back it would stay out for good.  After the
			 * circuit's reset time it is given work again.
			 */
			lifecycle_probation(a);
		}
		engine_fail(m, "TIMEOUT", "timeout", "agent %s did not reply "
		    "within %.3gs", a->id, m->timeout > 0 ? m->timeout :
		    a->conf->timeout);
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
	struct agent	*p;
	double		 tokens = env->tokens_in + env->tokens_out;

	if (tokens == 0 && env->cost == 0)
		return;
	cr->tokens_in += env->tokens_in;
	cr->tokens_out += env->tokens_out;
	cr->cost += env->cost;
	for (p = a; p != NULL; p = p->parent) {
		p->tokens += tokens;
		p->cost += env->cost;
	}
	subagent_check_budget(a);
}

/*
 * One branch of a job ended with a terminal envelope: remember it as the
 * job's latest, and end the job when nothing of it is left.
 */
static void
engine_branch_done(struct job *j, const char *line, size_t len, int is_error,
    int linked)
{
	if (j == NULL)
		return;
	if (j->pending > 0)
		j->pending--;
	if (!j->done) {
		if (j->pending == 0)
			engine_job_finish(j, line, len, is_error, linked);
		else {
			free(j->last);
			j->last = xmemdup0(line, len);
			j->lastlen = len;
			j->last_error = is_error;
			j->last_linked = linked;
		}
	}
	engine_job_release(j);
}

/*
 * A request reached its outcome with envelope line (a reply, or an error
 * corral made).  Requests that belong to a job end a branch; a spawned
 * child's task and map/send requests report to their agent instead.
 */
void
engine_request_done(struct msg *m, const char *line, size_t len, int is_error)
{
	struct job	*j = m->job;

	/* The answer to the job's own input names that input already. */
	if (m->where == MSG_QUEUED)
		route_dequeue(m);
	if (m->where == MSG_INFLIGHT)
		(void)engine_undispatch_static(m, 1);
	int		 linked = (m->kind == MSG_INPUT || m->kind == MSG_GOAL);

	subagent_request_done(m, line, len, is_error);
	m->job = NULL;
	engine_msg_free(m);
	engine_branch_done(j, line, len, is_error, linked);
}

/* Ask for a reflection on a weak reply.  Returns 0 if one was sent. */
static int
engine_reflect(struct msg *req, struct agent *a, const char *line, size_t len,
    const struct env *env, const char *reply_id)
{
	struct route	*r;
	struct msg	*m;
	char		 id[CORRAL_ID_MAX], *rl;
	size_t		 rlen;

	if (req->round >= cr->wf->refl_max_rounds)
		return -1;
	if ((r = route_for(INTENT_REFLECT)) == NULL)
		return -1;
	protocol_new_id(id, sizeof id);
	rl = envelope_reflect(cr->js, line, len, env, id, reply_id, &rlen);
	{
		/* Tell the critic what it reflects on: "corral":{"reflect":..}. */
		char		 member[256], *marked;
		size_t		 mlen;
		struct env	 renv;
		struct env_error rerr;

		snprintf(member, sizeof member, "{\"reflect\":{\"of\":\"%s\","
		    "\"intent\":\"%s\",\"round\":%u}}", reply_id,
		    protocol_intent_name(env->intent), req->round + 1);
		if (jscan_run(cr->js, rl, rlen) != 0 ||
		    envelope_check(cr->js, rl, rlen, &renv, &rerr) != 0)
			fatalx("envelope_reflect produced an invalid envelope");
		marked = envelope_mark(cr->js, rl, rlen, member, &mlen);
		free(rl);
		rl = marked;
		rlen = mlen;
	}
	m = engine_msg_create(req->job, rl, rlen, MSG_REFLECT, INTENT_REFLECT);
	strlcpy(m->id, id, sizeof m->id);
	m->round = req->round + 1;
	m->depth = req->depth;
	m->prio = req->prio;
	m->timeout = req->timeout;	/* the reflection serves the same need */
	m->exclude = a;
	m->parent_agent = req->parent_agent;
	/* A reflection stands in for the reply it reflects on. */
	m->orig_intent = (uint8_t)(req->kind == MSG_REFLECT ? req->orig_intent :
	    env->intent);
	cr->reflections++;
	log_info("request %s: reply %s from %s has confidence %s; reflecting "
	    "(round %u)", req->id, reply_id, a->id, env->has_score ? "below "
	    "the threshold" : "missing", m->round);
	if (auditlog_enabled()) {
		char score[32];
		if (env->has_score)
			snprintf(score, sizeof score, "%g", env->score);
		else
			snprintf(score, sizeof score, "none");
		auditlog_event("reflect", a->id, id, "of", reply_id, "score",
		    score, NULL);
		auditlog_envelope("env", NULL, id, rl, rlen);
	}
	(void)route_submit(m);
	return 0;
}

/* Follow a reply's next_actions.  Returns how many requests were made. */
static int
engine_actions(struct msg *req, const char *line, const struct env *env,
    const char *reply_id)
{
	struct job	*j = req->job;
	struct msg	*m;
	char		 id[CORRAL_ID_MAX], *al;
	const char	*ctx = NULL;
	size_t		 alen, ctxlen = 0;
	int		 e, t, n = 0, intent, c;

	if (env->next_actions == -1 || j == NULL || j->done)
		return 0;
	if (env->content != -1 && (c = jscan_get(cr->js, line, env->content,
	    "text")) != -1) {
		ctx = line + cr->js->tok[c].off;
		ctxlen = cr->js->tok[c].len;
	}
	for (e = jscan_first(cr->js, env->next_actions); e != -1;
	    e = jscan_next(cr->js, env->next_actions, e)) {
		if (j->steps >= cr->wf->max_steps) {
			engine_limit(j, "max_steps", "the workflow reached "
			    "max_steps (%u) requests", cr->wf->max_steps);
			return n;
		}
		if (req->depth + 1 > cr->wf->max_depth) {
			engine_limit(j, "max_depth", "next_actions would go "
			    "deeper than max_depth (%u)", cr->wf->max_depth);
			return n;
		}
		t = JSCAN_GET(cr->js, line, e, "intent");
		{
			size_t il;
			const char *iv = jscan_text(cr->js, line, t, &il);
			intent = protocol_intent(iv, il);
		}
		protocol_new_id(id, sizeof id);
		al = envelope_action(cr->js, line, e, id, reply_id, ctx, ctxlen,
		    &alen);
		m = engine_msg_create(j, al, alen, MSG_ACTION, intent);
		strlcpy(m->id, id, sizeof m->id);
		m->depth = req->depth + 1;
		m->prio = req->prio;
		m->parent_agent = req->parent_agent;
		{
			/* args.ttl_ms becomes the new request's deadline. */
			int args = JSCAN_GET(cr->js, line, e, "args"), ttl;

			if (args != -1 && (ttl = JSCAN_GET(cr->js, line, args,
			    "ttl_ms")) != -1 && cr->js->tok[ttl].type ==
			    JT_NUMBER && jscan_number(cr->js, line, ttl) >= 0)
				m->timeout = jscan_number(cr->js, line, ttl) /
				    1000.0;
		}
		j->steps++;
		cr->steps++;
		n++;
		if (auditlog_enabled())
			auditlog_envelope("env", NULL, id, al, alen);
		(void)route_submit(m);
	}
	return n;
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
	e = envelope_error(code, "REJECTED", NULL, why, j->id, &len);
	if (auditlog_enabled())
		auditlog_envelope("error", NULL, j->id, e, len);
	engine_job_finish(j, e, len, 1, 1);
	free(e);
}

/*
 * Handle a valid reply from agent a to request req: account for it, then
 * reflect, finish the job, or follow its next_actions.
 */
static void
engine_reply_body(struct agent *a, struct msg *req, const char *line,
    size_t len, struct env *env)
{
	struct job	*j = req->job;
	char		 reply_id[CORRAL_ID_MAX], *filled = NULL;
	size_t		 flen;
	int		 weak;

	a->timeouts = 0;
	a->flags &= ~AGENT_TIMEDOUT;
	route_breaker_success(a);
	cr->replied++;

	/* Fill in trace.id, trace.parents and timestamp when missing. */
	if (envelope_trace_id(cr->js, line, env, reply_id,
	    sizeof reply_id) != 0) {
		protocol_new_id(reply_id, sizeof reply_id);
		filled = envelope_fill(cr->js, line, len, env, reply_id,
		    req->id, &flen);
	} else
		filled = envelope_fill(cr->js, line, len, env, NULL, req->id,
		    &flen);
	if (filled != NULL) {
		struct env_error err;

		line = filled;
		len = flen;
		if (jscan_run(cr->js, line, len) != 0 ||
		    envelope_check(cr->js, line, len, env, &err) != 0)
			fatalx("envelope_fill produced an invalid envelope");
	}
	if (auditlog_enabled()) {
		auditlog_envelope("reply", a->id, reply_id, line, len);
		auditlog_event("outcome", a->id, req->id, "outcome", "replied",
		    "reply", reply_id, NULL);
	}
	/* Only now may the freed slot take other work (engine_reply). */
	(void)engine_undispatch_static(req, 0);
	engine_account(a, env);
	if (workspace_enabled()) {
		char why[320];

		if (workspace_artifacts(a, cr->js, line, env, why,
		    sizeof why) >= 0 && why[0] != '\0')
			engine_notice(a, "artifact_refused", "outputs.artifacts",
			    why, reply_id);
	}

	if (j != NULL && j->done) {
		/* The job already has its result; nothing follows. */
		engine_request_done(req, line, len, env->ctype == CT_ERROR);
		free(filled);
		return;
	}
	weak = env->ctype != CT_ERROR && (env->has_score ?
	    env->score < cr->wf->refl_below :
	    cr->wf->refl_missing == MISSING_REFLECT);
	if (weak && engine_reflect(req, a, line, len, env, reply_id) == 0) {
		/* The reflection carries the job on; this branch ends. */
		if (j != NULL)
			j->pending--;
		req->job = NULL;
		subagent_reply_forwarded(req);
		engine_msg_free(req);
		free(filled);
		return;
	}
	if ((env->intent == INTENT_FINALIZE || (req->kind == MSG_REFLECT &&
	    req->orig_intent == INTENT_FINALIZE)) && env->ctype != CT_ERROR &&
	    j != NULL && req->kind != MSG_TASK) {
		engine_job_finish(j, line, len, 0, req->kind == MSG_INPUT);
		engine_request_done(req, line, len, 0);
		free(filled);
		return;
	}
	if (env->ctype != CT_ERROR && req->kind != MSG_TASK &&
	    req->kind != MSG_SEND && engine_actions(req, line, env,
	    reply_id) > 0) {
		/* This branch goes on in its next actions. */
		if (j != NULL) {
			free(j->last);
			j->last = xmemdup0(line, len);
			j->lastlen = len;
			j->last_error = 0;
			j->last_linked = (req->kind == MSG_INPUT);
		}
		engine_request_done(req, line, len, 0);
		free(filled);
		return;
	}
	engine_request_done(req, line, len, env->ctype == CT_ERROR);
	free(filled);
}

/*
 * Handle a valid reply from agent a to request req, then give the slot
 * it freed to the most urgent waiting message.
 */
static void
engine_reply(struct agent *a, struct msg *req, const char *line, size_t len,
    struct env *env)
{
	engine_reply_body(a, req, line, len, env);
	route_kick(a);
}

/* Send an agent an error notice about its own output. */
static void
engine_notice(struct agent *a, const char *code, const char *path,
    const char *message, const char *parent)
{
	char	*e, *marked;
	size_t	 len, mlen;

	cr->rejected++;
	auditlog_event("rejected", a != NULL ? a->id : "stdin", parent, "code",
	    code, "path", path != NULL ? path : "", "reason", message, NULL);
	e = envelope_error(code, "REJECTED", path, message, parent, &len);
	if (a == NULL) {
		/* corral serve: the error is that input's one result. */
		engine_stdout(e, len);
		free(e);
		return;
	}
	if (chan_full(&a->io)) {
		/*
		 * It does not read what we send: more notices would only
		 * grow our memory.  The line is still counted and audited,
		 * and one summary follows once it reads again.
		 */
		cr->notices_dropped++;
		a->notices_dropped++;
		free(e);
		return;
	}
	if (jscan_run(cr->js, e, len) != 0)
		fatalx("envelope_error produced invalid JSON");
	marked = envelope_mark(cr->js, e, len, "{\"kind\":\"notice\"}", &mlen);
	agent_send(a, marked, mlen);
	free(marked);
	free(e);
}

/*
 * The trace.id of a line that scanned but is not a valid envelope, if it
 * has a usable one, so the error can name what it answers.
 */
static const char *
engine_raw_trace_id(const char *line, char *buf, size_t len)
{
	const char	*v;
	size_t		 l;
	int		 t, x;

	if (cr->js->tok[0].type != JT_OBJECT ||
	    (t = JSCAN_GET(cr->js, line, 0, "trace")) == -1 ||
	    cr->js->tok[t].type != JT_OBJECT ||
	    (x = JSCAN_GET(cr->js, line, t, "id")) == -1 ||
	    cr->js->tok[x].type != JT_STRING)
		return NULL;
	v = jscan_text(cr->js, line, x, &l);
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
	ev_tstamp		 now = ev_now(cr->loop), *at;
	unsigned int		*count, *dropped;
	va_list			 ap;
	char			 buf[512], who[96];

	/* NULL: corral serve's stdin, limited the same way. */
	at = a != NULL ? &a->warn_at : &stdin_at;
	count = a != NULL ? &a->warn_count : &stdin_count;
	dropped = a != NULL ? &a->warn_dropped : &stdin_dropped;
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
void
engine_agent_drained(struct agent *a)
{
	char		 why[160];
	unsigned int	 n = a->notices_dropped;

	if (n == 0)
		return;
	a->notices_dropped = 0;
	snprintf(why, sizeof why, "%u notices about your output were not sent "
	    "while you were not reading your stdin", n);
	engine_notice(a, "notices_dropped", NULL, why, NULL);
	cr->rejected--;		/* the summary is not a rejected line */
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
engine_match(struct agent *a, const char *line, const struct env *env)
{
	struct msg	*m;

	if (env->parents != -1) {
		TAILQ_FOREACH(m, &a->inflight, entry)
			if (envelope_has_parent(cr->js, line, env, m->id))
				return m;
		return NULL;
	}
	return TAILQ_FIRST(&a->inflight);
}

/* A line an agent wrote on its stdout. */
void
engine_agent_line(struct agent *a, char *line, size_t len,
    enum ndjson_kind kind, size_t extra)
{
	struct env		 env;
	struct env_error	 err;
	struct msg		*req;
	char			 why[256], id[CORRAL_ID_MAX];

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
	switch (kind) {
	case NDJSON_TOOLONG:
		snprintf(why, sizeof why, "a line of %zu bytes exceeds max_line "
		    "(%zu bytes) and was dropped", extra, a->conf->max_line);
		/* Not rate-limited: each costs max_line bytes to send. */
		log_warnx("agent %s: %s", a->id, why);
		engine_notice(a, "line_too_long", NULL, why, NULL);
		return;
	case NDJSON_NUL:
		snprintf(why, sizeof why, "the line holds a NUL byte at offset "
		    "%zu and was dropped", extra);
		engine_warn_agent(a, "%s", why);
		engine_notice(a, "nul_byte", NULL, why, NULL);
		return;
	default:
		break;
	}
	if (jscan_run(cr->js, line, len) != 0) {
		engine_scan_error(why, sizeof why, cr->js);
		engine_warn_agent(a, "%s", why);
		engine_notice(a, "invalid_json", NULL, why, NULL);
		jscan_trim(cr->js);
		return;
	}
	if (cr->js->tok[0].type == JT_OBJECT &&
	    JSCAN_GET(cr->js, line, 0, "jsonrpc") != -1) {
		control_agent_frame(a, line, len);
		return;
	}
	if (envelope_check(cr->js, line, len, &env, &err) != 0) {
		engine_warn_agent(a, "invalid envelope: %s", err.msg);
		engine_notice(a, err.code, err.path, err.msg,
		    engine_raw_trace_id(line, id, sizeof id));
		return;
	}
	a->msgs_out++;
	if ((req = engine_match(a, line, &env)) != NULL &&
	    req->kind == MSG_TASK) {
		(void)subagent_task_envelope(a, req, line, len, &env);
		return;
	}
	if (req == NULL) {
		if (env.parents != -1 || env.ctype == CT_ERROR) {
			/* A late reply, or a duplicate: its request is done. */
			cr->late++;
			log_info("agent %s: late or duplicate reply dropped",
			    a->id);
			if (auditlog_enabled())
				auditlog_envelope("late", a->id, NULL, line, len);
			return;
		}
		log_warnx("agent %s: an envelope with no request outstanding "
		    "was dropped", a->id);
		engine_notice(a, "unsolicited", NULL, "no request is "
		    "outstanding for this envelope; replies answer requests, "
		    "new work goes through outputs.next_actions or map/send",
		    NULL);
		return;
	}
	engine_reply(a, req, line, len, &env);
}

/*
 * A reply an adapter made for request m of agent a (a valid envelope,
 * built with jansson).  Ignored if m was given up meanwhile.
 */
void
engine_adapter_reply(struct agent *a, struct msg *m, const char *line,
    size_t len)
{
	struct env		env;
	struct env_error	err;

	if (m->where != MSG_INFLIGHT || m->agent != a)
		return;
	lifecycle_activity(a);
	if (jscan_run(cr->js, line, len) != 0 ||
	    envelope_check(cr->js, line, len, &env, &err) != 0)
		fatalx("adapter %s built an invalid envelope: %s",
		    a->conf->adapter, err.msg);
	a->msgs_out++;
	engine_reply(a, m, line, len, &env);
}

/* Answer a JSON-RPC frame that arrived on corral serve's stdin. */
static void
engine_input_control(char *line, size_t len)
{
	json_error_t	 e;
	json_t		*j, *id, *method, *res;
	char		*out;
	const char	*m;

	if ((j = json_loadb(line, len, CORRAL_JSON_LOAD, &e)) == NULL)
		return;
	id = json_object_get(j, "id");
	method = json_object_get(j, "method");
	if (id == NULL || !json_is_string(method)) {
		json_decref(j);
		return;	/* a notification or a response: nothing to say */
	}
	m = json_string_value(method);
	if (strcmp(m, CORRAL_M_PING) == 0)
		res = json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id", id,
		    "result");
	else if (strcmp(m, CORRAL_M_CONNECT) == 0)
		res = json_pack("{s:s, s:O, s:{s:i, s:s, s:s, s:{s:s, s:s}}}",
		    "jsonrpc", "2.0", "id", id, "result", "protocolVersion",
		    CORRAL_PROTOCOL_VERSION, "sessionId", protocol_run_id(),
		    "participantId", "corral-serve", "systemInfo", "name",
		    "corral", "version", CORRAL_VERSION);
	else
		res = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0",
		    "id", id, "error", "code", CORRAL_E_NOMETHOD, "message",
		    "method not found");
	out = json_dumps(res, CORRAL_JSON_FLAGS);
	engine_stdout(out, strlen(out));
	free(out);
	json_decref(res);
	json_decref(j);
}

/*
 * A line on corral serve's stdin: a new job.  Whatever is wrong with it,
 * it gets exactly one line back.
 */
void
engine_input_line(char *line, size_t len, enum ndjson_kind kind, size_t extra)
{
	struct env		 env;
	struct env_error	 err;
	struct job		*j;
	struct msg		*m;
	char			 why[256], id[CORRAL_ID_MAX], *copy;
	size_t			 clen;

	switch (kind) {
	case NDJSON_TOOLONG:
		snprintf(why, sizeof why, "a line of %zu bytes exceeds the "
		    "maximum (%zu bytes, the largest max_line of the "
		    "workflow's agents) and was dropped", extra,
		    cr->stdio.rd.max);
		log_warnx("stdin: %s", why);
		engine_notice(NULL, "line_too_long", NULL, why, NULL);
		return;
	case NDJSON_NUL:
		snprintf(why, sizeof why, "the line holds a NUL byte at offset "
		    "%zu and was dropped", extra);
		engine_warn_agent(NULL, "%s", why);
		engine_notice(NULL, "nul_byte", NULL, why, NULL);
		return;
	default:
		break;
	}
	if (jscan_run(cr->js, line, len) != 0) {
		engine_scan_error(why, sizeof why, cr->js);
		engine_warn_agent(NULL, "%s", why);
		engine_notice(NULL, "invalid_json", NULL, why, NULL);
		jscan_trim(cr->js);
		return;
	}
	if (cr->js->tok[0].type == JT_OBJECT &&
	    JSCAN_GET(cr->js, line, 0, "jsonrpc") != -1) {
		engine_input_control(line, len);
		return;
	}
	if (envelope_check(cr->js, line, len, &env, &err) != 0) {
		engine_warn_agent(NULL, "invalid envelope: %s", err.msg);
		engine_notice(NULL, err.code, err.path, err.msg,
		    engine_raw_trace_id(line, id, sizeof id));
		return;
	}
	if (envelope_trace_id(cr->js, line, &env, id, sizeof id) != 0) {
		protocol_new_id(id, sizeof id);
		copy = envelope_fill(cr->js, line, len, &env, id, NULL, &clen);
	} else
		copy = envelope_fill(cr->js, line, len, &env, NULL, NULL, &clen);
	if (copy == NULL) {
		copy = xmemdup0(line, len);
		clen = len;
	}
	j = engine_job_create(JOB_SERVE);
	strlcpy(j->id, id, sizeof j->id);
	m = engine_msg_create(j, copy, clen, MSG_INPUT, env.intent);
	strlcpy(m->id, id, sizeof m->id);
	m->prio = (uint8_t)env.prio;
	m->timeout = env.ttl;
	if (auditlog_enabled())
		auditlog_envelope("input", NULL, id, copy, clen);
	if (cr->njobs >= cr->wf->max_inflight)
		supervisor_stdin_pause(STDIN_P_JOBS, 1);
	(void)route_submit(m);
}

/* Start corral run's job with the goal as its first envelope. */
int
engine_start_goal(const char *goal)
{
	struct job	*j;
	struct msg	*m;
	char		 id[CORRAL_ID_MAX], *line;
	size_t		 len;
	int		 intent;

	intent = protocol_intent(cr->wf->start, strlen(cr->wf->start));
	protocol_new_id(id, sizeof id);
	if ((line = envelope_goal(goal, cr->wf->start, id, &len)) == NULL)
		return -1;
	j = engine_job_create(JOB_RUN);
	strlcpy(j->id, id, sizeof j->id);
	m = engine_msg_create(j, line, len, MSG_GOAL, intent);
	strlcpy(m->id, id, sizeof m->id);
	if (auditlog_enabled())
		auditlog_envelope("goal", NULL, id, line, len);
	(void)route_submit(m);
	return 0;
}

/*
 * An agent stopped or can no longer answer: its outstanding requests fail
 * (or are delivered again, for HIGH and CRITICAL ones).
 */
void
engine_agent_gone(struct agent *a, const char *why)
{
	struct msg	*m;

	subagent_agent_gone(a, why);
	while ((m = TAILQ_FIRST(&a->direct)) != NULL && !lifecycle_will_restart(a)) {
		route_dequeue(m);
		engine_fail(m, "UNAVAILABLE", "agent_lost", "agent %s %s",
		    a->id, why);
	}
	while ((m = TAILQ_FIRST(&a->inflight)) != NULL) {
		engine_undispatch_static(m, 0);
		m->agent = a;
		if (cr->shutting_down) {
			/* We stopped it: not the agent's failure. */
			engine_fail(m, "UNAVAILABLE", "shutdown", "corral shut "
			    "down before agent %s replied", a->id);
			continue;
		}
		route_breaker_failure(a);
		engine_fail(m, "UNAVAILABLE", "agent_lost", "agent %s %s before "
		    "replying", a->id, why);
	}
	a->outstanding = 0;
	route_check_orphans();
}

/* An agent failed for good. */
void
engine_agent_failed(struct agent *a, const char *why)
{
	subagent_failed(a, why);
	route_check_orphans();
}

/* Fail every request waiting for its retry (shutdown). */
void
engine_fail_retrying(const char *why)
{
	struct msg	*m;

	while ((m = TAILQ_FIRST(&cr->retrying)) != NULL) {
		TAILQ_REMOVE(&cr->retrying, m, entry);
		m->where = MSG_NOWHERE;
		ev_timer_stop(cr->loop, &m->timer);
		engine_fail(m, "UNAVAILABLE", "shutdown", "%s", why);
	}
}

/* Return nonzero when no job is left. */
int
engine_idle(void)
{
	return cr->njobs == 0;
}
