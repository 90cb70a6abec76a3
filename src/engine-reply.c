/*
 * Agents' envelopes and replies: an envelope an agent wrote (handed over
 * by dialect.c) is the reply to a request, to its task, or a late one;
 * the reply is made honest (only corral writes the corral member, an
 * agent names only itself) and completed (trace.id, trace.parents,
 * timestamp), then counted and followed; an invalid reply may fail its
 * request at once.  The replies adapters make for their tools come here
 * too.  A part of the engine (engine.c): it owns requests.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "engine-int.h"

/*
 * Make a line from an agent (a) or a client honest: only corral writes
 * the corral member, and an agent's reply names the agent that wrote it.
 * Returns the line to use (*copy set when it is a new one, js then holding
 * its tape), or NULL when the copy could not be scanned.
 */
const char *
engine_unforge_copy(struct jscan *js, struct agent *a, const char *line,
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
    size_t *len, struct env *env, char *reply_id, uint8_t *rq, char **filled)
{
	struct env_error	err;
	size_t			flen;
	int			n;

	*filled = NULL;
	if (env->trace_id != -1 && env->parents != -1 && env->timestamp != -1) {
		/* Nothing is missing: the usual reply. */
		n = envelope_trace_id(js, line, env, reply_id, CORRAL_ID_MAX);
		*rq = n >= 0 && auditlog_enabled() ?
		    jsonw_idq(reply_id, (size_t)n) : 0;
		return line;
	}
	*rq = 0;
	if (envelope_trace_id(js, line, env, reply_id, CORRAL_ID_MAX) < 0) {
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

/*
 * Tell the hooks what a request ended with: its reply, and the session
 * it is a message of (its job's; the one the reply names joins the job
 * that has none).
 */
static void
engine_reply_ended(struct msg *req, struct agent *a, struct jscan *js,
    const char *line, size_t len, const struct env *env)
{
	struct engine_end	 e;
	char			 sid[129];
	size_t			 n;
	const char		*t;

	if (engine_hooks.ended != NULL) {
		memset(&e, 0, sizeof e);
		e.outcome = "replied";
		e.replied = 1;
		e.agent = a;
		e.line = line;
		e.len = len;
		e.js = js;
		e.env = env;
		e.is_error = env->ctype == CT_ERROR;
		engine_hooks.ended(req, &e);
	}
	if (engine_hooks.session == NULL)
		return;
	if (env->session != -1) {
		t = jscan_text(js, line, env->session, &n);
		if (n > 0 && n < sizeof sid) {
			memcpy(sid, t, n);
			sid[n] = '\0';
			if (req->job != NULL)
				engine_job_session(req->job, js, line,
				    env->session);
			if (req->job == NULL || req->job->session == NULL ||
			    strcmp(req->job->session, sid) != 0)
				engine_hooks.session(sid, "result", req, a->id,
				    line, len);
		}
	}
	if (req->job != NULL && req->job->session != NULL)
		engine_hooks.session(req->job->session, "result", req, a->id,
		    line, len);
}

/*
 * A reply that takes its request over the budget of a task
 * (limits.task_budget: tokens, cost) is counted, and the request fails
 * with budget_exceeded instead.  Returns nonzero when it did.
 */
static int
engine_over_task_budget(struct agent *a, struct msg *req,
    const struct env *env)
{
	double	tokens = env->tokens_in + env->tokens_out;

	if (!((engine_wf->task_tokens > 0 && tokens > engine_wf->task_tokens) ||
	    (engine_wf->task_cost > 0 && env->cost > engine_wf->task_cost)))
		return 0;
	engine_stats.replied--;
	engine_account(a, env);
	engine_fail(req, "REJECTED", "budget_exceeded", "task %s went over its "
	    "budget: %.0f tokens of %.0f, %.4f USD of %.4f (limits.task_budget)",
	    req->id, tokens, engine_wf->task_tokens, env->cost,
	    engine_wf->task_cost);
	return 1;
}

/*
 * Handle a valid reply from agent a to request req: account for it, then
 * reflect, finish the job, or follow its next_actions.  The reply's tape
 * is js's, and stays so throughout.
 */
void
engine_reply(struct agent *a, struct msg *req, struct jscan *js,
    const char *line, size_t len, struct env *env)
{
	char		 reply_id[CORRAL_ID_MAX], *filled, *unforged;
	char		 risk[2048];
	uint8_t		 rq;

	lifecycle_replied(a);
	breaker_success(a);
	engine_stats.replied++;
	if ((line = engine_unforge(js, a, line, &len, env, &unforged)) ==
	    NULL || (line = engine_fill(js, req, line, &len, env, reply_id,
	    &rq, &filled)) == NULL) {
		free(unforged);
		engine_stats.replied--;
		engine_fail(req, "INTERNAL", "bad_reply", "the reply of agent %s "
		    "could not be completed with a trace id", a->id);
		return;
	}
	if (engine_wf->task_tokens > 0 || engine_wf->task_cost > 0) {
		auditlog_envelope("reply", a->id, reply_id, line, len);
		if (engine_over_task_budget(a, req, env)) {
			free(filled);
			free(unforged);
			return;
		}
		auditlog_replied(a->id, req->id, reply_id, NULL,
		    ENGINE_RISK(req, risk));
	} else if (auditlog_enabled())
		/* The reply's line and the outcome's, at once. */
		auditlog_reply_q(a->id, agent_idq(a), req->id, req->idq,
		    reply_id, rq, line, len, ENGINE_RISK(req, risk));
	if (engine_hooks.outcome != NULL)
		engine_hooks.outcome(req, "replied", NULL, NULL, NULL);
	engine_reply_ended(req, a, js, line, len, env);
	if (engine_hooks.replied != NULL)
		engine_hooks.replied(req, reply_id);
	/* Only after the outcome may the freed slot take other work. */
	lifecycle_answered(a, ev_now(LOOP) - req->sent);
	engine_undispatch(req);
	engine_account(a, env);
	/* A step's artifacts are the step module's: it waits for them. */
	if (workspace_enabled() && req->kind != MSG_STEP)
		(void)workspace_artifacts(a->id, reply_id, js, line);

	engine_follow(req, a, js, line, len, env, reply_id, 1);
	xfree(filled);
	xfree(unforged);
	route_kick(a);
}

/*
 * Return nonzero if a reply's trace.parents names request m: what
 * envelope_has_parent says, without measuring the id.  A plain string
 * of n bytes names m when m's id, an array of CORRAL_ID_MAX bytes, has
 * its NUL at n and the n bytes before it: a string holds no NUL byte.
 */
static int
engine_names(struct jscan *js, const char *line, const struct env *env,
    const struct msg *m)
{
	const struct jtok	*k;
	size_t			 n;
	int			 e;

	for (e = jscan_first(js, env->parents); e != -1;
	    e = jscan_next(js, env->parents, e)) {
		k = &js->tok[e];
		if (k->flags & JT_ESCAPED) {
			if (jscan_str_equal(js, line + k->off, k->len, 1, m->id,
			    strlen(m->id)))
				return 1;
			continue;
		}
		n = k->len - 2;
		if (n < sizeof m->id && m->id[n] == '\0' &&
		    memcmp(line + k->off + 1, m->id, n) == 0)
			return 1;
	}
	return 0;
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
		TAILQ_FOREACH(m, engine_queue(a), entry)
			if (engine_names(js, line, env, m))
				return m;
		return NULL;
	}
	return TAILQ_FIRST(engine_queue(a));
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
		return TAILQ_FIRST(engine_queue(a));
	if (js->tok[t].type != JT_OBJECT ||
	    (p = JSCAN_GET(js, line, t, "parents")) == -1 ||
	    js->tok[p].type != JT_ARRAY)
		return NULL;
	for (e = jscan_first(js, p); e != -1; e = jscan_next(js, p, e)) {
		if (js->tok[e].type != JT_STRING)
			continue;
		TAILQ_FOREACH(m, engine_queue(a), entry)
			if (jscan_str_equal(js, line + js->tok[e].off,
			    js->tok[e].len, js->tok[e].flags & JT_ESCAPED,
			    m->id, strlen(m->id)))
				return m;
	}
	return NULL;
}

/*
 * An invalid envelope from agent a, after its notice (dialect.c): a reply
 * whose next_actions cannot be followed (an unknown intent, a missing
 * task) fails its request now, not at its timeout: it is the agent's
 * answer, and it is wrong.
 */
void
engine_agent_invalid(struct agent *a, struct dialect_frame *f)
{
	struct msg	*req;

	/*
	 * Next actions that cannot be followed, or an output envelope that
	 * breaks a rule of its protocol (ADR-007), are the agent's answer.
	 */
	if (strcmp(f->err.code, "invalid_output") == 0)
		req = TAILQ_FIRST(engine_queue(a));	/* it names none */
	else if (strncmp(f->err.path, "outputs.next_actions", 20) == 0)
		req = engine_raw_match(a, f->js, f->line);
	else
		return;
	if (req == NULL || req->kind == MSG_TASK)
		return;
	engine_undispatch(req);
	req->agent = a;
	engine_fail(req, "REJECTED", f->err.code, "agent %s replied with an "
	    "invalid %s: %s", a->id, strcmp(f->err.code, "invalid_output") ==
	    0 ? "output envelope" : "envelope", f->err.msg);
	route_kick(a);
}

/*
 * A valid envelope from agent a (read by dialect.c): the reply to one of
 * its requests, or to its task, or a late one; one that answers nothing
 * gets a notice.
 */
void
engine_agent_envelope(struct agent *a, struct dialect_frame *f)
{
	struct jscan	*js = f->js;
	struct msg	*req;
	const char	*line = f->line;
	size_t		 len = f->len;

	agent_count_out(a);
	if (trace_on())
		trace_envelope(a->id, "corral", line, len);
	req = engine_match(a, js, line, &f->env);
	if (req == NULL && f->env.parents == -1 && f->env.ctype != CT_ERROR) {
		/* Answering the notice with another such one would loop. */
		dialect_bad_message(a);
		/* sort and cat echo the request back at the end of input. */
		log_warnx("agent %s: an envelope with no request outstanding "
		    "was dropped%s", a->id, dialect_has_answered(a) ? "" :
		    " (did it echo what it read? a program that is not an "
		    "agent needs adapter: exec)");
		dialect_notice(a, "unsolicited", NULL, "no request is "
		    "outstanding for this envelope; replies answer requests, "
		    "new work goes through outputs.next_actions or map/send",
		    NULL);
		return;
	}
	dialect_good_message(a);
	if (req != NULL)
		dialect_answered(a);
	if (req != NULL &&
	    (req->kind == MSG_TASK || req->kind == MSG_SEND)) {
		if (engine_task.reply != NULL)
			engine_task.reply(a, req, js, line, len, &f->env);
		return;
	}
	if (req == NULL) {
		/* A late reply, or a duplicate: its request is done. */
		engine_stats.late++;
		log_info("agent %s: late or duplicate reply dropped", a->id);
		auditlog_envelope("late", a->id, NULL, line, len);
		return;
	}
	engine_reply(a, req, js, line, len, &f->env);
}

/*
 * A reply an adapter made for request m of agent a (built with jansson).
 * Ignored if m was given up meanwhile.
 */
void
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
	js = jscan_take();
	if (jscan_run(js, line, len) != 0 ||
	    envelope_check(js, line, len, &env, &err) != 0) {
		log_warnx("agent %s: adapter %s made an invalid reply: %s",
		    a->id, a->conf->adapter, js->err != NULL ? js->err :
		    err.msg);
		engine_fail(m, "INTERNAL", "bad_reply", "adapter %s made an "
		    "invalid reply", a->conf->adapter);
		jscan_give(js);
		return;
	}
	agent_count_out(a);
	if (trace_on())
		trace_envelope(a->id, "corral", line, len);
	engine_reply(a, m, js, line, len, &env);
	jscan_give(js);
}
