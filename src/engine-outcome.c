/*
 * The engine's outcomes: a request ends in its one outcome, a branch of a
 * job ends with its last line, the branches come together (join), and a
 * job ends with its result, or at a limit.  A part of the engine
 * (engine.c): it owns jobs and requests.
 */

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "engine-int.h"

static uint64_t	engine_job_seq;
/* Jobs made and freed for every input: a window's worth kept for reuse. */
static struct xpool	engine_job_pool = XPOOL_INITIALIZER(struct job, 1024);

static void	engine_job_deadline_cb(struct ev_loop *, ev_timer *, int);

/* Start a job. */
struct job *
engine_job_create(int origin)
{
	struct job	*j;

	j = xpool_get(&engine_job_pool);
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
void
engine_out(const char *line, size_t len)
{
	if (engine_hooks.out != NULL)
		engine_hooks.out(line, len);
}

/* Free a job once it is done and nothing of it is outstanding. */
void
engine_job_release(struct job *j)
{
	size_t	i;

	if (!j->done || j->pending > 0)
		return;

	if (ev_is_active(&j->deadline_w))
		ev_timer_stop(LOOP, &j->deadline_w);
	TAILQ_REMOVE(&engine_jobs, j, entry);
	engine_njobs--;
	for (i = 0; i < j->nends; i++) {
		engine_stats.bytes -= j->ends[i].len;
		free(j->ends[i].line);
	}
	xfree(j->ends);
	json_decref(j->reports);
	xfree(j->session);
	xpool_put(&engine_job_pool, j);
	/* Only a pause the engine asked for is lifted: not a call a job. */
	if (engine_jobs_held && engine_njobs < engine_wf->max_inflight &&
	    engine_hooks.pause) {
		engine_jobs_held = 0;
		engine_hooks.pause(STDIN_P_JOBS, 0);
	}
	if (engine_hooks.idle != NULL)
		engine_hooks.idle();
}

/*
 * A job has its result: write it (serve), or hand it to corral run, and
 * stop whatever of the job is still waiting.  tape and tenv, when given,
 * are line's scan and check, which then need not be made again.
 */
void
engine_job_finish(struct job *j, const char *line, size_t len, int is_error,
    int linked, struct jscan *tape, const struct env *tenv)
{
	struct env		 env;
	struct env_error	 err;
	struct jscan		*js;
	char			*relinked = NULL, *marked = NULL;
	size_t			 llen;
	char			 summary[1024], risk[2048];

	if (j->done)
		return;
	j->done = 1;
	j->failed = is_error;
	if (ev_is_active(&j->deadline_w))
		ev_timer_stop(LOOP, &j->deadline_w);
	/* The errors its agents reported on the way go with its result. */
	if (j->reports != NULL && (marked = engine_report_mark(j->reports,
	    line, len, &llen)) != NULL) {
		line = marked;
		len = llen;
		tape = NULL;	/* the tape is the unmarked line's */
	}
	if (engine_step.done != NULL)
		engine_step.done(j);
	if (auditlog_enabled())	/* not even the call without it */
		auditlog_job_end_q(j->id, j->idq, is_error,
		    ENGINE_RISK(j, risk));
	if (is_error) {
		/* One line for every failed job: what happened, and a hint. */
		join_summary(line, len, summary, sizeof summary);
		log_warnx("job %s failed: %s", j->id, summary);
	}
	if (j->origin != JOB_SERVE) {
		if (engine_hooks.result != NULL)
			engine_hooks.result(line, len, is_error);
		free(marked);
		return;
	}
	/*
	 * The caller matches results to its inputs by trace.parents: make
	 * sure the input's id is there, however many steps the job took.  A
	 * direct answer to the input has it already (linked), and costs no
	 * second scan.
	 */
	if (!linked && tape != NULL) {
		/* A reply's own tape, still valid: no second scan either. */
		if (!envelope_has_parent(tape, line, tenv, j->id))
			relinked = envelope_add_parent(tape, line, len, tenv,
			    j->id, &llen);
	} else if (!linked) {
		js = jscan_take();
		if (jscan_run(js, line, len) == 0 &&
		    envelope_check(js, line, len, &env, &err) == 0 &&
		    !envelope_has_parent(js, line, &env, j->id))
			relinked = envelope_add_parent(js, line, len, &env,
			    j->id, &llen);
		jscan_give(js);
	}
	if (relinked != NULL) {
		engine_out(relinked, llen);
		free(relinked);
	} else
		engine_out(line, len);
	xfree(marked);
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
	engine_job_finish(j, e, len, 1, 1, NULL, NULL);
	free(e);
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
	struct engine_end	e;
	char			risk[2048];

	engine_stats.replied++;
	auditlog_replied(a != NULL ? a->id : NULL, m->id, reply_id, reason,
	    ENGINE_RISK(m, risk));
	if (engine_hooks.outcome != NULL)
		engine_hooks.outcome(m, "replied", NULL, NULL, reason);
	if (engine_hooks.ended != NULL) {
		memset(&e, 0, sizeof e);
		e.outcome = "replied";
		e.replied = 1;
		e.agent = a;
		e.line = line;
		e.len = len;
		e.is_error = is_error;
		e.why = reason;
		engine_hooks.ended(m, &e);
	}
	if (engine_hooks.replied != NULL)
		engine_hooks.replied(m, reply_id);
	if (m->job != NULL && m->job->session != NULL &&
	    engine_hooks.session != NULL)
		engine_hooks.session(m->job->session, "result", m, a != NULL ?
		    a->id : "corral", line, len);
	engine_request_done(m, line, len, is_error);
}

/* Add up what a reply says it cost, for the run, the job and the tree. */
void
engine_account(struct agent *a, const struct env *env)
{
	budget_account(a, env->tokens_in, env->tokens_out, env->cost);
}

/* Remember how a branch of job j ended: its last request, and the line. */
void
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
	memcpy(e->id, m->id, sizeof e->id);	/* both CORRAL_ID_MAX */
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
void
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
		engine_start(m);
		return;
	}
	line = join_result(j, &len, &is_error, &linked);
	if (j->nends > 1)
		auditlog_envelope("join", NULL, j->id, line, len);
	engine_job_finish(j, line, len, is_error, linked, NULL, NULL);
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
void
engine_request_end(struct msg *m, const char *line, size_t len, int is_error,
    int end)
{
	engine_request_end_tape(m, line, len, is_error, end, NULL, NULL);
}

/*
 * engine_request_end, for a line whose scan (js) and check (env) the
 * caller holds: a job it ends needs neither again.  Nothing between the
 * caller's engine_follow and the job's end may scan into js again: each
 * callee that scans takes a scanner of its own from the pool.
 */
void
engine_request_end_tape(struct msg *m, const char *line, size_t len,
    int is_error, int end, struct jscan *js, const struct env *env)
{
	struct job	*j;
	struct agent	*a = NULL;
	char		*marked = NULL;
	size_t		 mlen;
	int		 kind, direct, linked;

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
	    engine_task.done != NULL) {
		/* Who asked gets the errors its agent reported on the way. */
		if (m->reports != NULL && (marked = engine_report_mark(
		    m->reports, line, len, &mlen)) != NULL) {
			line = marked;
			len = mlen;
			js = NULL;	/* the tape is the unmarked line's */
		}
		engine_task.done(m, line, len, is_error);
	}
	j = engine_msg_detach(m);
	/*
	 * The job's one branch ends here: its line is the job's result as
	 * it is (join.c would copy it), with no copy kept.
	 */
	direct = j != NULL && end && m->kind != MSG_TASK && !j->done &&
	    j->nends == 0 && j->open == 1;
	if (j != NULL && end && m->kind != MSG_TASK && !j->done && !direct)
		engine_branch_end(j, m, line, len, is_error, end == END_FINAL);
	kind = m->kind;
	linked = (kind == MSG_INPUT || kind == MSG_GOAL);
	engine_msg_free(m);
	if (a != NULL)
		route_kick(a);
	if (j == NULL) {
		free(marked);
		return;
	}
	if (j->pending > 0)
		j->pending--;
	if (kind != MSG_TASK && j->open > 0)
		j->open--;
	if (j->open == 0 && !j->done) {
		if (direct)
			engine_job_finish(j, line, len, is_error != 0, linked,
			    js, env);
		else
			engine_join(j);
	}
	engine_job_release(j);
	xfree(marked);
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
size_t
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
		    adapter_attached(m->agent))
			adapter_cancel(m->agent, m);
		if (m->where == MSG_RETRYING)
			engine_unhold(engine_unretry(m));
		n++;
		engine_fail(m, category, code, "%s", why);
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
	e = envelope_error(code, "REJECTED", NULL, why, j->id, NULL, &len);
	auditlog_envelope("error", NULL, j->id, e, len);
	engine_job_finish(j, e, len, 1, 1, NULL, NULL);
	free(e);
}

/* The run's budget is spent: every job ends. */
void
engine_run_budget(const char *why)
{
	struct job	*j, *next;

	TAILQ_FOREACH_SAFE(j, &engine_jobs, entry, next)
		engine_limit(j, "budget_exceeded", "%s", why);
}

/* End every unfinished job at a limit (the run's time budget). */
void
engine_limit_all(const char *code, const char *why)
{
	struct job	*j, *next;

	TAILQ_FOREACH_SAFE(j, &engine_jobs, entry, next)
		engine_limit(j, code, "%s", why);
}
