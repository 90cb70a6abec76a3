/*
 * What follows a valid reply: a reflection on a weak one (and the weak
 * reply standing when the reflection fails), the end of the job at a
 * finalize, or new requests from outputs.next_actions, each within the
 * workflow's limits and with its ttl_ms.  A part of the engine
 * (engine.c): it owns jobs and requests.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "engine-int.h"

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
	/* protocol_new_id made it: it fits, copied by its length. */
	memcpy(m->id, id, strlen(id) + 1);
	engine_title(m, js, line, env->task);
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
	auditlog_reflect(a != NULL ? a->id : NULL, id, reply_id,
	    env->has_score, env->score);
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
void
engine_unreflected(struct msg *m, const char *why)
{
	struct env		 env;
	struct env_error	 err;
	struct jscan		*js;
	struct jsonw		 w;
	char			 reply_id[CORRAL_ID_MAX], risk[600], *member;
	char			*line;
	size_t			 mlen, len;

	js = jscan_take();
	if (jscan_run(js, m->weak, m->weaklen) != 0 ||
	    envelope_check(js, m->weak, m->weaklen, &env, &err) != 0 ||
	    envelope_trace_id(js, m->weak, &env, reply_id, sizeof reply_id) <
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
	jscan_give(js);
}

/*
 * The ttl_ms of a next action's args (raw JSON), in seconds, or 0.  The
 * args sit deeper than the reply's tape records, so they get a scan of
 * their own.
 */
static double
engine_action_ttl(const char *args, size_t len)
{
	struct jscan	*js = jscan_take();
	double		 ttl = 0;
	int		 t;

	if (jscan_run(js, args, len) == 0 && js->tok[0].type == JT_OBJECT &&
	    (t = JSCAN_GET(js, args, 0, "ttl_ms")) != -1 &&
	    js->tok[t].type == JT_NUMBER && jscan_number(js, args, t) >= 0)
		ttl = jscan_number(js, args, t) / 1000.0;
	jscan_give(js);
	return ttl;
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
		engine_title(m, js, line, JSCAN_GET(js, line, e, "task"));
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
	    req->kind == MSG_INPUT && marked == NULL, NULL, NULL);
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
void
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
		engine_request_end_tape(req, line, len, ctype_error, END_BRANCH,
		    js, env);
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
		engine_request_end_tape(req, line, len, 0, END_NONE, js,
		    env);
		engine_start(m);
		return;
	}
	finalize = (env->intent == INTENT_FINALIZE || (req->kind ==
	    MSG_REFLECT && req->orig_intent == INTENT_FINALIZE)) &&
	    !ctype_error && req->kind != MSG_TASK;
	if (finalize && engine_wf->join_first) {
		engine_first(j, req, js, line, len);
		engine_request_end_tape(req, line, len, 0, END_BRANCH, js,
		    env);
		return;
	}
	if (finalize) {
		engine_request_end_tape(req, line, len, 0, END_FINAL, js,
		    env);
		return;
	}
	if (!ctype_error && req->kind != MSG_TASK &&
	    engine_actions(req, js, line, env, reply_id, &next) > 0) {
		/* This branch goes on in its next actions. */
		engine_request_end_tape(req, line, len, 0, END_NONE, js,
		    env);
		while ((m = TAILQ_FIRST(&next)) != NULL) {
			TAILQ_REMOVE(&next, m, entry);
			engine_start(m);
		}
		return;
	}
	engine_request_end_tape(req, line, len, ctype_error, END_BRANCH, js,
	    env);
}
