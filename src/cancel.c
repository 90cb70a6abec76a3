/*
 * _corral/cancel: a client, or the agent a request was made for, cancels
 * a request by its trace id (docs/protocol.md).
 *
 * The request ends at once in its one outcome, an error with code
 * cancelled, wherever it was: waiting in a queue, waiting for a retry, or
 * at an agent, which is told to stop (engine_cancel).  A client may
 * cancel any request, as it may stop any agent.  An agent may cancel what
 * it asked for (a child's task, and what follows from it) and what its
 * descendants work on or wait for, as it may stop only its descendants.
 */

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
	was = m->where == MSG_INFLIGHT ? "inflight" : m->where ==
	    MSG_RETRYING ? "retrying" : "queued";
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
