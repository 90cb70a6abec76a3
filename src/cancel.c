/*
 * _corral/cancel: a client, or the agent a request was made for, cancels
 * a request by its trace id (docs/protocol.md).  _corral/requests lists
 * the requests one may cancel, so that their ids are at hand (corral ps,
 * top).
 *
 * The request ends at once in its one outcome, an error with code
 * cancelled, wherever it was: waiting in a queue, waiting for a retry, or
 * at an agent, which is told to stop (engine_cancel).  A client may
 * cancel any request, as it may stop any agent.  An agent may cancel what
 * it asked for (a child's task, and what follows from it) and what its
 * descendants work on or wait for, as it may stop only its descendants.
 */

#include <float.h>
#include <math.h>
#include <string.h>

#include "corral.h"

/* Return nonzero if peer p may cancel request m. */
static int
cancel_allowed(struct peer *p, struct msg *m)
{
	struct agent	*a = p->agent;

	if (a == NULL)
		return 1;
	if (m->parent_agent == a)
		return 1;
	if (m->where == MSG_INFLIGHT && m->agent != NULL && m->agent != a &&
	    agent_is_descendant(m->agent, a))
		return 1;
	return m->target != NULL && m->target != a &&
	    agent_is_descendant(m->target, a);
}

/* Where a request is, as _corral/requests and _corral/cancel say it. */
static const char *
cancel_where(const struct msg *m)
{
	switch (m->where) {
	case MSG_INFLIGHT:
		return "inflight";
	case MSG_RETRYING:
		return "retrying";
	default:
		return "queued";	/* or between two places */
	}
}

/*
 * _corral/cancel {"requestId": ID, "reason"?: TEXT}: answers
 * {"cancelled": true, "requestId", "agentId" (where it was, or null),
 * "was": "inflight", "queued" or "retrying"}.
 */
void
cancel_request(struct peer *from, json_t *id, json_t *params)
{
	struct msg	*m;
	json_t		*v, *res;
	const char	*rid, *was, *reason;
	char		 why[512];

	v = json_object_get(params, "requestId");
	if (v == NULL)
		v = json_object_get(params, "id");
	if (!json_is_string(v) || json_string_length(v) == 0) {
		rpc_error(from, id, CORRAL_E_PARAMS, "params.requestId must "
		    "name a request (its trace id)", NULL);
		return;
	}
	rid = json_string_value(v);
	reason = json_string_value(json_object_get(params, "reason"));
	if ((m = engine_find(rid)) == NULL) {
		snprintf(why, sizeof why, "request %s not found: it has "
		    "ended, or never was", rid);
		rpc_error(from, id, CORRAL_E_NOTFOUND, why, json_pack("{s:s}",
		    "reason", "request"));
		return;
	}
	if (!cancel_allowed(from, m)) {
		snprintf(why, sizeof why, "%s may cancel only what it asked "
		    "for and what its descendants work on", from->name);
		rpc_error(from, id, CORRAL_E_DENIED, why, NULL);
		return;
	}
	was = cancel_where(m);
	res = json_pack("{s:b, s:s, s:o, s:s}", "cancelled", 1, "requestId",
	    rid, "agentId", m->where == MSG_INFLIGHT && m->agent != NULL ?
	    json_string(m->agent->id) : m->target != NULL ?
	    json_string(m->target->id) : json_null(), "was", was);
	snprintf(why, sizeof why, "cancelled by %s%s%s", from->name,
	    reason != NULL ? ": " : "", reason != NULL ? reason : "");
	/* The answer first: the outcome may reach this client too. */
	rpc_reply(from, id, res);
	engine_cancel(m, why);
}

/* One request as _corral/requests lists it (a new reference). */
static json_t *
cancel_describe(struct msg *m, double now)
{
	static const char *const kinds[] = { "goal", "input", "action",
	    "reflect", "task", "send" };
	struct agent	*a;
	json_t		*o, *env;

	a = m->where == MSG_INFLIGHT && m->agent != NULL ? m->agent :
	    m->target;
	o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:I, s:f, s:i}", "requestId",
	    m->id, "intent", protocol_intent_name(m->intent), "state",
	    cancel_where(m), "kind", m->kind < sizeof kinds / sizeof kinds[0] ?
	    kinds[m->kind] : "request", "agentId", a != NULL ?
	    json_string(a->id) : json_null(), "acceptedAt",
	    (json_int_t)llround(m->accepted * 1000.0), "age",
	    round((now - m->accepted) * 1000.0) / 1000.0, "attempts",
	    (int)m->attempts);
	/* Its task, for a person to tell requests apart. */
	if ((env = json_loadb(m->line, m->len, 0, NULL)) != NULL &&
	    json_is_string(json_object_get(env, "task")))
		json_object_set(o, "task", json_object_get(env, "task"));
	json_decref(env);
	return o;
}

/*
 * _corral/requests {"agentId"?: ID, "limit"?: N}: the live requests the
 * caller may cancel (a client: all), oldest first, at most limit (1000):
 * {"requests": [{requestId, intent, state, kind, agentId, acceptedAt,
 * age, attempts, task}], "total": N}.
 */
void
cancel_list(struct peer *from, json_t *id, json_t *params)
{
	struct msg	*m;
	json_t		*list, *lim = json_object_get(params, "limit"), *v;
	const char	*only = NULL;
	struct agent	*a;
	json_int_t	 limit;
	double		 want = 1000;
	size_t		 total = 0;
	double		 now = ev_now(LOOP);

	if ((lim != NULL && !json_is_integer(lim)) || protocol_number(params,
	    "limit", 1, DBL_MAX, 0, &want) < 0) {
		rpc_error(from, id, CORRAL_E_PARAMS, "params.limit must be a "
		    "whole number of at least 1", NULL);
		return;
	}
	limit = want < 10000 ? (json_int_t)want : 10000;
	v = json_object_get(params, "agentId");
	if (v != NULL && !json_is_string(v)) {
		rpc_error(from, id, CORRAL_E_PARAMS, "params.agentId must be "
		    "an agent's id", NULL);
		return;
	}
	only = json_string_value(v);
	list = json_array();
	for (m = engine_live_next(NULL); m != NULL; m = engine_live_next(m)) {
		a = m->where == MSG_INFLIGHT ? m->agent : m->target;
		if (!cancel_allowed(from, m) || (only != NULL && (a == NULL ||
		    strcmp(a->id, only) != 0)))
			continue;
		if ((json_int_t)total++ < limit)
			json_array_append_new(list, cancel_describe(m, now));
	}
	rpc_reply(from, id, json_pack("{s:o, s:I}", "requests", list, "total",
	    (json_int_t)total));
}
