/*
 * Messages between participants: map/send with MAP's addresses, requests
 * that expect a response, and corral's _corral/route.
 *
 * A message goes to agents and to clients.  An agent on its pipes gets
 * the payload as an envelope marked {"corral":{"kind":"message",...}};
 * a client gets MAP's Message in a map/message notification.  Every
 * send is two events, message_sent and message_delivered (with the
 * Message itself), and message_failed for targets that could not take
 * it.
 *
 * A client's message that expects a response, to one agent, becomes a
 * request to that agent (MSG_SEND): corral delivers the payload as an
 * ordinary request envelope whose trace.id is the message id, and the
 * agent's reply comes back to the client as a Message with meta.isResult
 * and the correlation id, and as a message_delivered event carrying that
 * correlation id, which is what the SDK's ClientConnection.request()
 * waits for.  _corral/route does the same with the routing table
 * choosing the agent by the envelope's intent.  Such a request is one
 * request, not a job: its reply's next_actions are not followed.
 *
 * An agent that speaks the map dialect (the SDK's AgentConnection, which
 * reads nothing but JSON-RPC: declared with protocol: map, or connected
 * as MAP's participantType "agent") gets whatever corral would write to
 * it as an envelope as a map/message instead (dialect-map.c), and its
 * map/send with meta.isResult naming one of its requests (or its task)
 * is its reply, as AgentConnection.reply() sends it (SPEC.md 11).
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

#define MESSAGE_TARGETS		256	/* targets of one map/send */
#define MESSAGE_PENDING		1024	/* requests awaiting their reply */

/* One target of a message: an agent, or a client. */
struct message_target {
	struct agent	*agent;
	struct peer	*peer;
	const char	*id;
};

/* A request sent through the control plane, awaiting its reply. */
struct message_req {
	char			 id[CORRAL_ID_MAX];	/* the request's */
	char			*requester;	/* participantId */
	char			*corr;		/* correlation id of the reply */
	char			 responder[CORRAL_ID_MAX];	/* who replied */
	TAILQ_ENTRY(message_req) entry;
};

static TAILQ_HEAD(, message_req) message_reqs =
				    TAILQ_HEAD_INITIALIZER(message_reqs);
/* The scope the address being resolved named, or NULL. */
static const char		*message_scope_id;
static unsigned int		 message_nreqs;
static uint64_t			 message_sent;
static message_task_cb		 message_task_hook;

static int	message_live(struct agent *);
static void	message_add(struct message_target *, size_t *, struct agent *,
		    struct peer *, struct peer *);
static void	message_result_agent(struct agent *, struct agent *,
		    const char *, const char *, size_t, const char *);

/*
 * Register who knows a spawned child's open task (the sub-agent module):
 * a child may answer it with a map/send result, too.
 */
void
message_on_task(message_task_cb cb)
{
	message_task_hook = cb;
}

/* Forget pending requests (set up again: the tests do). */
void
message_init(void)
{
	struct message_req	*r;

	while ((r = TAILQ_FIRST(&message_reqs)) != NULL) {
		TAILQ_REMOVE(&message_reqs, r, entry);
		free(r->requester);
		free(r->corr);
		free(r);
	}
	message_nreqs = 0;
	message_sent = 0;
}

/* How many deliveries map/send made. */
uint64_t
message_count(void)
{
	return message_sent;
}

/*
 * Remember who awaits the reply to request id.  The list is bounded: a
 * request that never ends (its agent went away meanwhile) is forgotten
 * once MESSAGE_PENDING newer ones wait.
 */
static void
message_req_add(const char *id, const char *requester, const char *corr)
{
	struct message_req	*r;

	if (message_nreqs >= MESSAGE_PENDING) {
		r = TAILQ_FIRST(&message_reqs);
		log_warnx("request %s: forgotten, %u newer requests wait",
		    r->id, message_nreqs);
		TAILQ_REMOVE(&message_reqs, r, entry);
		free(r->requester);
		free(r->corr);
		free(r);
		message_nreqs--;
	}
	r = xcalloc(1, sizeof *r);
	strlcpy(r->id, id, sizeof r->id);
	r->requester = xstrdup(requester);
	r->corr = xstrdup(corr);
	TAILQ_INSERT_TAIL(&message_reqs, r, entry);
	message_nreqs++;
}

/* Take the record of request id off the list (the caller frees it). */
static struct message_req *
message_req_take(const char *id)
{
	struct message_req	*r;

	TAILQ_FOREACH(r, &message_reqs, entry)
		if (strcmp(r->id, id) == 0) {
			TAILQ_REMOVE(&message_reqs, r, entry);
			message_nreqs--;
			return r;
		}
	return NULL;
}

/* Emit a message event whose data was built with the JSON writer. */
static void
message_emit(const char *type, const char *source, const char *corr,
    struct jsonw *j)
{
	struct event_info	 ei;
	struct agent		*a = agent_find(source);
	char			*s;
	size_t			 len;

	s = jsonw_finish(j, &len);
	memset(&ei, 0, sizeof ei);
	ei.type = type;
	ei.source = source;
	ei.source_role = a != NULL ? a->conf->role : NULL;
	ei.corr = corr;
	ei.audit = 1;
	event_emit(&ei, s, len);
	free(s);
}

/* Write a JSON value held by jansson with the JSON writer. */
static void
message_json(struct jsonw *j, json_t *v)
{
	char	*s;

	if ((s = jsonw_dumps(v, JSON_ENCODE_ANY | CORRAL_JSON_FLAGS)) == NULL) {
		jsonw_raw(j, "null", 4);
		return;
	}
	jsonw_raw(j, s, strlen(s));
	free(s);
}

/*
 * The events of one send: message_sent, then message_delivered to the
 * targets that took it, and message_failed when some did not.  The
 * correlation id is given only for results (the SDK's request() takes
 * the first message_delivered carrying its own).
 */
static void
message_events(json_t *msg, json_t *delivered, const char *failed_why,
    const char *corr)
{
	struct jsonw	 j;
	const char	*mid = json_string_value(json_object_get(msg, "id"));
	const char	*from = json_string_value(json_object_get(msg, "from"));
	json_t		*ts = json_object_get(msg, "timestamp");
	json_t		*prio = json_object_get(json_object_get(msg, "meta"),
			    "priority");

	jsonw_init(&j);
	jsonw_object(&j);
	jsonw_key(&j, "messageId");
	jsonw_str(&j, mid);
	jsonw_key(&j, "from");
	jsonw_str(&j, from);
	jsonw_key(&j, "to");
	message_json(&j, json_object_get(msg, "to"));
	jsonw_key(&j, "timestamp");
	message_json(&j, ts);
	if (corr != NULL) {
		jsonw_key(&j, "correlationId");
		jsonw_str(&j, corr);
	}
	if (json_is_string(prio)) {
		jsonw_key(&j, "priority");
		jsonw_str(&j, json_string_value(prio));
	}
	jsonw_object_end(&j);
	message_emit("message_sent", from, corr, &j);

	if (json_array_size(delivered) > 0) {
		jsonw_init(&j);
		jsonw_object(&j);
		jsonw_key(&j, "messageId");
		jsonw_str(&j, mid);
		jsonw_key(&j, "from");
		jsonw_str(&j, from);
		jsonw_key(&j, "deliveredTo");
		message_json(&j, delivered);
		jsonw_key(&j, "timestamp");
		message_json(&j, ts);
		jsonw_key(&j, "message");
		message_json(&j, msg);
		if (corr != NULL) {
			jsonw_key(&j, "correlationId");
			jsonw_str(&j, corr);
		}
		jsonw_object_end(&j);
		message_emit("message_delivered", from, corr, &j);
	}
	if (failed_why != NULL) {
		jsonw_init(&j);
		jsonw_object(&j);
		jsonw_key(&j, "messageId");
		jsonw_str(&j, mid);
		jsonw_key(&j, "from");
		jsonw_str(&j, from);
		jsonw_key(&j, "to");
		message_json(&j, json_object_get(msg, "to"));
		jsonw_key(&j, "reason");
		jsonw_str(&j, failed_why);
		jsonw_key(&j, "code");
		jsonw_u64(&j, CORRAL_E_DELIVERY);
		jsonw_object_end(&j);
		message_emit("message_failed", from, corr, &j);
	}
}

/*
 * The envelope an agent on its pipes gets for a payload: the payload
 * itself when it is an envelope, or a string made an execute envelope.
 * trace_id, when given, becomes its trace.id (a request's).  Returns the
 * line and fills env, or NULL with why.
 */
static char *
message_envelope(json_t *payload, const char *role, const char *trace_id,
    size_t *lenp, struct env *env, char *why, size_t whylen)
{
	struct env_error	 err;
	struct jscan		*js;
	json_t			*t, *trace;
	char			*s, ts[40];

	if (json_is_string(payload)) {
		util_rfc3339(ts, sizeof ts);
		t = json_pack("{s:s, s:s, s:s, s:s, s:O, s:{s:s, s:O}}",
		    "protocol", CORRAL_ENVELOPE_PROTOCOL, "role", role,
		    "timestamp", ts, "intent", "execute", "task", payload,
		    "content", "type", "text", "text", payload);
	} else if (json_is_object(payload))
		t = json_deep_copy(payload);
	else {
		snprintf(why, whylen, "params.payload must be an envelope or a "
		    "string for an agent");
		return NULL;
	}
	if (trace_id != NULL) {
		if (!json_is_object(trace = json_object_get(t, "trace"))) {
			trace = json_object();
			json_object_set_new(t, "trace", trace);
		}
		json_object_set_new(trace, "id", json_string(trace_id));
	}
	s = jsonw_dumps(t, CORRAL_JSON_FLAGS);
	json_decref(t);
	if (s == NULL) {
		snprintf(why, whylen, "params.payload could not be serialized");
		return NULL;
	}
	*lenp = strlen(s);
	js = jscan_take();
	err.msg[0] = '\0';
	if (jscan_run(js, s, *lenp) != 0 ||
	    envelope_check(js, s, *lenp, env, &err) != 0) {
		snprintf(why, whylen, "params.payload is not a valid envelope: "
		    "%s", err.msg[0] ? err.msg : "invalid JSON");
		jscan_give(js);
		free(s);
		return NULL;
	}
	jscan_give(js);
	return s;
}

/* Add one target, unless it is the sender or already there. */
static void
message_add(struct message_target *out, size_t *n, struct agent *a,
    struct peer *p, struct peer *from)
{
	size_t	i;

	if ((a != NULL && a == from->agent) || (p != NULL && p == from) ||
	    *n >= MESSAGE_TARGETS)
		return;
	for (i = 0; i < *n; i++)
		if ((a != NULL && out[i].agent == a) ||
		    (p != NULL && out[i].peer == p))
			return;
	out[*n].agent = a;
	out[*n].peer = p;
	out[*n].id = a != NULL ? a->id : p->name;
	(*n)++;
}

/* Is an agent there to take a message (started, not on its way out)? */
static int
message_live(struct agent *a)
{
	return !(a->flags & AGENT_DEAD) && lifecycle_alive(a) &&
	    !lifecycle_stopping(a);
}

/* What message_scope's callback needs: the sender, the targets so far. */
struct message_scope_walk {
	struct peer		*from;
	const char		*role;
	struct message_target	*out;
	size_t			*n;
};

/* One member of a scope: a target if it is live and the sender reaches it. */
static void
message_scope_member(struct agent *a, void *arg)
{
	struct message_scope_walk	*w = arg;

	if (message_live(a) && (w->from->agent == NULL ||
	    mapview_may_reach(w->from->agent, a)) && (w->role == NULL ||
	    (a->conf->role != NULL && strcmp(a->conf->role, w->role) == 0)))
		message_add(w->out, w->n, a, NULL, w->from);
}

/*
 * The members of a scope (a topic), with role R when given, in the order
 * they joined.  A scope with no member to take it is no error: what is
 * published to a topic nobody reads goes nowhere.  2002 when there is no
 * such scope.
 */
static int
message_scope(struct peer *from, const char *scope, const char *role,
    struct message_target *out, size_t *n, char *why, size_t whylen)
{
	struct message_scope_walk	w = { from, role, out, n };

	if (scope_each(scope, message_scope_member, &w) < 0) {
		snprintf(why, whylen, "no scope '%.64s'", scope);
		return CORRAL_E_NOSCOPE;
	}
	message_scope_id = scope;
	return 0;
}

/*
 * The live agents with a capability the sender may reach (for a request,
 * the caller keeps the one least busy).  2000 when there is none.
 */
static int
message_capability(struct peer *from, const char *cap,
    struct message_target *out, size_t *n, char *why, size_t whylen)
{
	struct agent	*a;

	for (a = agent_first(); a != NULL; a = agent_next(a))
		if (message_live(a) && (from->agent == NULL ||
		    mapview_may_reach(from->agent, a)) &&
		    mapview_has_capability(a, cap))
			message_add(out, n, a, NULL, from);
	if (*n == 0) {
		snprintf(why, whylen, "no agent has the capability '%.64s'",
		    cap);
		return CORRAL_E_NOADDRESS;
	}
	return 0;
}

/*
 * Resolve one participant id: an agent the sender may reach, or a
 * client.  Returns 0, or an error code with why.
 */
static int
message_one(struct peer *from, const char *id, struct message_target *out,
    size_t *n, char *why, size_t whylen)
{
	struct agent	*t;
	struct peer	*p;

	if (strncmp(id, "agent:", 6) == 0)
		id += 6;
	else if (strncmp(id, "scope:", 6) == 0 || strncmp(id, "topic:", 6) == 0)
		return message_scope(from, id + 6, NULL, out, n, why, whylen);
	else if (strncmp(id, "capability:", 11) == 0)
		return message_capability(from, id + 11, out, n, why, whylen);
	if ((t = agent_find(id)) != NULL && from->agent != NULL &&
	    t != from->agent && (t->flags & AGENT_HIDDEN) &&
	    !mapview_may_reach(from->agent, t))
		t = NULL;	/* hidden from it: it does not exist for it */
	if (t != NULL) {
		if (from->agent != NULL && t != from->agent &&
		    !mapview_may_reach(from->agent, t)) {
			snprintf(why, whylen, "%s may not address %s",
			    from->name, t->id);
			return CORRAL_E_DENIED;
		}
		if (!message_live(t)) {
			snprintf(why, whylen, "agent %s is %s", t->id,
			    mapview_state(lifecycle_state(t)));
			return CORRAL_E_TERMINATED;
		}
		message_add(out, n, t, NULL, from);
		return 0;
	}
	if ((p = rpc_peer_find(id)) != NULL) {
		message_add(out, n, NULL, p, from);
		return 0;
	}
	snprintf(why, whylen, "no agent '%.64s'", id);
	return CORRAL_E_NOTFOUND;
}

/* Does agent a answer a hierarchical address relative to agent from? */
static int
message_related(struct agent *from, struct agent *a, json_t *to)
{
	return (json_is_true(json_object_get(to, "parent")) &&
	    from->parent == a) ||
	    (json_is_true(json_object_get(to, "children")) &&
	    a->parent == from) ||
	    (json_is_true(json_object_get(to, "descendants")) &&
	    agent_is_descendant(a, from)) ||
	    (json_is_true(json_object_get(to, "siblings")) &&
	    a->parent == from->parent && a != from) ||
	    (json_is_true(json_object_get(to, "ancestors")) &&
	    agent_is_descendant(from, a));
}

/*
 * Resolve an address to a group: a scope ({scope}, {role, within}) or a
 * capability.
 */
static int
message_resolve_group(struct peer *from, json_t *to,
    struct message_target *out, size_t *n, char *why, size_t whylen)
{
	json_t	*v;

	if ((v = json_object_get(to, "capability")) != NULL) {
		if (!json_is_string(v)) {
			snprintf(why, whylen, "a capability address names a "
			    "capability");
			return CORRAL_E_PARAMS;
		}
		return message_capability(from, json_string_value(v), out, n,
		    why, whylen);
	}
	if ((v = json_object_get(to, "scope")) == NULL)
		v = json_object_get(to, "within");
	if (!json_is_string(v)) {
		snprintf(why, whylen, "a scope address names a scope id");
		return CORRAL_E_PARAMS;
	}
	return message_scope(from, json_string_value(v),
	    json_string_value(json_object_get(to, "role")), out, n, why,
	    whylen);
}

/*
 * Resolve a MAP address to its targets (SPEC.md 6).  Returns 0, or an
 * error code with why: 2001 for a named agent that does not exist, 2000
 * for an address that matches nobody, 1003 for one the sender may not
 * reach, 2002 for scopes, 3003 for a stopped agent, -32602 for forms
 * corral does not serve.
 */
static int
message_resolve(struct peer *from, json_t *to, struct message_target *out,
    size_t *n, char *why, size_t whylen)
{
	struct agent	*a;
	struct peer	*p;
	json_t		*v, *x;
	const char	*role, *who;
	size_t		 i;
	int		 code;

	*n = 0;
	message_scope_id = NULL;
	if (json_is_string(to))
		return message_one(from, json_string_value(to), out, n, why,
		    whylen);
	if (!json_is_object(to)) {
		snprintf(why, whylen, "params.to must be an address");
		return CORRAL_E_PARAMS;
	}
	if ((v = json_object_get(to, "agent")) != NULL ||
	    (v = json_object_get(to, "participant")) != NULL) {
		if (json_object_get(to, "system") != NULL) {
			snprintf(why, whylen, "corral is not federated");
			return CORRAL_E_PARAMS;
		}
		if (!json_is_string(v)) {
			snprintf(why, whylen, "an address names an id");
			return CORRAL_E_PARAMS;
		}
		return message_one(from, json_string_value(v), out, n, why,
		    whylen);
	}
	if (json_object_get(to, "scope") != NULL ||
	    json_object_get(to, "within") != NULL ||
	    json_object_get(to, "capability") != NULL)
		return message_resolve_group(from, to, out, n, why, whylen);
	if (json_object_get(to, "system") != NULL) {
		snprintf(why, whylen, "corral itself has no mailbox");
		return CORRAL_E_PARAMS;
	}
	if ((v = json_object_get(to, "agents")) != NULL) {
		if (!json_is_array(v)) {
			snprintf(why, whylen, "to.agents must be a list of ids");
			return CORRAL_E_PARAMS;
		}
		json_array_foreach(v, i, x) {
			if (!json_is_string(x))
				continue;
			code = message_one(from, json_string_value(x), out, n,
			    why, whylen);
			if (code == CORRAL_E_DENIED)
				return code;
		}
		goto done;
	}
	if ((v = json_object_get(to, "participants")) != NULL) {
		who = json_string_value(v);
		if (who == NULL || (strcmp(who, "all") != 0 &&
		    strcmp(who, "agents") != 0 && strcmp(who, "clients") != 0)) {
			snprintf(why, whylen, "to.participants must be all, "
			    "agents or clients");
			return CORRAL_E_PARAMS;
		}
		if (strcmp(who, "clients") != 0)
			for (a = agent_first(); a != NULL; a = agent_next(a))
				if (message_live(a) && (from->agent == NULL ||
				    mapview_may_reach(from->agent, a)))
					message_add(out, n, a, NULL, from);
		if (strcmp(who, "agents") != 0)
			for (p = rpc_peer_first(); p != NULL;
			    p = rpc_peer_next(p))
				if (!(p->role & PEER_DELEGATE))
					message_add(out, n, NULL, p, from);
		goto done;
	}
	role = json_string_value(json_object_get(to, "role"));
	if (role != NULL || json_is_true(json_object_get(to, "broadcast"))) {
		for (a = agent_first(); a != NULL; a = agent_next(a))
			if (message_live(a) && (role == NULL ||
			    (a->conf->role != NULL && strcmp(a->conf->role,
			    role) == 0)) && (from->agent == NULL ||
			    mapview_may_reach(from->agent, a)))
				message_add(out, n, a, NULL, from);
		goto done;
	}
	if (json_object_get(to, "parent") != NULL ||
	    json_object_get(to, "children") != NULL ||
	    json_object_get(to, "siblings") != NULL ||
	    json_object_get(to, "ancestors") != NULL ||
	    json_object_get(to, "descendants") != NULL) {
		if (from->agent == NULL) {
			snprintf(why, whylen, "a client has no parent, children "
			    "or siblings: name agents");
			return CORRAL_E_PARAMS;
		}
		if (json_is_true(json_object_get(to, "parent")) &&
		    from->agent->parent == NULL && json_object_size(to) == 1) {
			snprintf(why, whylen, "%s has no parent",
			    from->agent->id);
			return CORRAL_E_NOADDRESS;
		}
		for (a = agent_first(); a != NULL; a = agent_next(a))
			if (message_live(a) && message_related(from->agent, a,
			    to))
				message_add(out, n, a, NULL, from);
		goto done;
	}
	snprintf(why, whylen, "params.to is not an address corral knows");
	return CORRAL_E_PARAMS;
done:
	if (*n == 0) {
		snprintf(why, whylen, "the address matches no agent");
		return CORRAL_E_NOADDRESS;
	}
	return 0;
}

/* corral's old code for a refusal, kept in error.data.details. */
static int
message_old_code(int code)
{
	switch (code) {
	case CORRAL_E_DENIED:
		return CORRAL_E_OLD_DENIED;
	case CORRAL_E_NOTFOUND:
	case CORRAL_E_NOADDRESS:
	case CORRAL_E_TERMINATED:
		return CORRAL_E_OLD_NOTFOUND;
	default:
		return code;
	}
}

/*
 * Register a request in the task registry, assigned to its agent when
 * it has one already.
 */
static void
message_task(const char *mid, const char *line, size_t len, const char *from,
    struct agent *t)
{
	json_t	*env;

	if ((env = json_loadb(line, len, 0, NULL)) == NULL)
		return;
	taskreg_add(mid, env, from, NULL);
	if (t != NULL)
		taskreg_assign(mid, t->id, "assigned");
	json_decref(env);
}

/*
 * A request an agent makes while it works on another names that one in
 * its trace.parents: what caused it (the trace a viewer draws).
 */
static char *
message_caused_by(char *line, size_t *lenp, const char *cause)
{
	json_t	*env, *trace;
	char	*s;

	if ((env = json_loadb(line, *lenp, 0, NULL)) == NULL)
		return line;
	if (!json_is_object(trace = json_object_get(env, "trace"))) {
		trace = json_object();
		json_object_set_new(env, "trace", trace);
	}
	json_object_set_new(trace, "parents", json_pack("[s]", cause));
	s = jsonw_dumps(env, CORRAL_JSON_FLAGS);
	json_decref(env);
	if (s == NULL)
		return line;
	free(line);
	*lenp = strlen(s);
	return s;
}

/*
 * Make a request of an envelope payload: to agent t, or, when t is NULL,
 * to whichever agent the routing table picks for its intent.  The reply
 * goes to the requester with correlation id corr.  Returns 0, or -1 with
 * why (-2 when it would hold more than limits.memory: such a request is
 * an envelope corral holds, like any other).
 */
static int
message_request(struct peer *from, struct agent *t, json_t *payload,
    const char *mid, const char *corr, char *why, size_t whylen)
{
	struct env	 env;
	struct msg	*m, *cur;
	char		*line;
	size_t		 len;

	if ((line = message_envelope(payload, from->agent != NULL ? "agent" :
	    "user", mid, &len, &env, why, whylen)) == NULL)
		return -1;
	if (from->agent != NULL && env.parents == -1 &&
	    (cur = engine_inflight_first(from->agent)) != NULL)
		line = message_caused_by(line, &len, cur->id);
	if (!engine_has_room(len)) {
		free(line);
		snprintf(why, whylen, "memory_limit: corral holds as many "
		    "envelopes as limits.memory allows; send this again later");
		return -2;
	}
	m = engine_msg_create(NULL, line, len, MSG_SEND, env.intent);
	engine_msg_setup(m, mid, t, NULL, env.prio, env.ttl);
	if (from->agent != NULL)
		engine_inherit(from->agent, m);
	message_req_add(mid, from->name, corr);
	auditlog_envelope("request", t != NULL ? t->id : NULL, mid, line, len);
	session_note_line(line, len, "request", mid, from->name, t != NULL ?
	    t->id : NULL);
	message_task(mid, line, len, from->name, t);
	if (t != NULL)
		route_direct(m);
	else
		(void)route_submit(m);
	return 0;
}

/*
 * The member corral adds to a message it delivers as an envelope; via
 * names the topic it was published to, when it was.
 */
static char *
message_member(const char *from, const char *mid, const char *via)
{
	struct jsonw	j;
	size_t		len;

	jsonw_init(&j);
	jsonw_object(&j);
	jsonw_key(&j, "kind");
	jsonw_str(&j, CORRAL_KIND_MESSAGE);
	jsonw_key(&j, "from");
	jsonw_str(&j, from);
	jsonw_key(&j, "messageId");
	jsonw_str(&j, mid);
	if (via != NULL) {
		/* The topic it came through. */
		jsonw_key(&j, "via");
		jsonw_str(&j, via);
	}
	jsonw_object_end(&j);
	return jsonw_finish(&j, &len);
}

/*
 * A map/send from an agent that is its reply to one of its requests or
 * its task (meta.isResult, meta.correlationId naming it), as the SDK's
 * reply() sends it: the payload, an envelope (or wrapped in a finalize
 * envelope when it is not one), goes to the engine as if the agent had
 * written it.  Returns 0 when the send is not such a reply.
 */
static int
message_agent_reply(struct peer *from, json_t *id, json_t *payload,
    json_t *meta)
{
	struct agent		*a = from->agent;
	struct msg		*hit;
	struct env		 env;
	struct env_error	 err;
	struct jscan		*js;
	json_t			*e, *trace;
	const char		*corr, *task;
	char			*line, mid[EVENT_ID_LEN + 1];
	int			 valid;

	corr = json_string_value(json_object_get(meta, "correlationId"));
	if (a == NULL || !json_is_true(json_object_get(meta, "isResult")) ||
	    corr == NULL)
		return 0;
	hit = engine_inflight_find(a, corr, 0);
	if (hit == NULL && (message_task_hook == NULL ||
	    (task = message_task_hook(a)) == NULL || strcmp(task, corr) != 0))
		return 0;
	valid = 0;
	if (json_is_object(payload) && (line = jsonw_dumps(payload,
	    CORRAL_JSON_FLAGS)) != NULL) {
		js = jscan_take();
		valid = jscan_run(js, line, strlen(line)) == 0 &&
		    envelope_check(js, line, strlen(line), &env, &err) == 0;
		jscan_give(js);
		free(line);
	}
	if (valid)
		e = json_deep_copy(payload);
	else
		e = json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:O*}}", "protocol",
		    CORRAL_ENVELOPE_PROTOCOL, "role", "agent", "intent",
		    "finalize", "task", "reply", "content", "type", "json",
		    "data", payload);
	if (!json_is_object(trace = json_object_get(e, "trace"))) {
		trace = json_object();
		json_object_set_new(e, "trace", trace);
	}
	if (json_object_get(trace, "parents") == NULL)
		json_object_set_new(trace, "parents", json_pack("[s]", corr));
	line = jsonw_dumps(e, CORRAL_JSON_FLAGS);
	json_decref(e);
	event_new_id(mid);
	rpc_reply(from, id, json_pack("{s:s, s:[s]}", "messageId", mid,
	    "delivered", hit != NULL || a->parent == NULL ? "corral" :
	    a->parent->id));
	if (line != NULL) {
		agent_input(a, line, strlen(line), NDJSON_LINE, 0);
		free(line);
	}
	return 1;
}

/* Does an address name a capability? */
static int
message_is_capability(json_t *to)
{
	return (json_is_string(to) && strncmp(json_string_value(to),
	    "capability:", 11) == 0) || json_object_get(to, "capability") !=
	    NULL;
}

/*
 * Keep the one target of a request that is least busy: ready before
 * busy, then the fewest requests outstanding, then the first found.
 */
static void
message_pick(struct message_target *t, size_t *n)
{
	size_t	i, best = SIZE_MAX;

	for (i = 0; i < *n; i++) {
		if (t[i].agent == NULL)
			continue;
		if (best == SIZE_MAX ||
		    (lifecycle_routable(t[i].agent) &&
		    !lifecycle_routable(t[best].agent)) ||
		    (lifecycle_routable(t[i].agent) ==
		    lifecycle_routable(t[best].agent) &&
		    lifecycle_outstanding(t[i].agent) <
		    lifecycle_outstanding(t[best].agent)))
			best = i;
	}
	if (best != SIZE_MAX) {
		t[0] = t[best];
		*n = 1;
	}
}

/* Answer a map/send whose address could not be resolved. */
static void
message_refused(struct peer *from, json_t *id, int code, const char *why)
{
	if (code == CORRAL_E_DENIED) {
		log_info("%s%s: map/send refused: %s", from->agent != NULL ?
		    "agent " : "", from->name, why);
		auditlog_event("send_refused", from->name, NULL, "reason", why,
		    NULL);
	}
	rpc_error(from, id, code, why, code == CORRAL_E_PARAMS ? NULL :
	    json_pack("{s:i}", "corralCode", message_old_code(code)));
}

/*
 * A map/send that is a request to one agent t: made, and answered with
 * the message id (its result comes later), or refused.
 */
static void
message_send_request(struct peer *from, json_t *id, struct message_target t,
    json_t *payload, json_t *msg, const char *mid, const char *corrid,
    const char *corr)
{
	json_t	*ids;
	char	 why[256];
	int	 code;

	if ((code = message_request(from, t.agent, payload, mid, corrid, why,
	    sizeof why)) != 0) {
		rpc_error(from, id, code == -2 ? CORRAL_E_EXHAUSTED :
		    CORRAL_E_PARAMS, why, NULL);
		return;
	}
	ids = json_pack("[s]", t.id);
	message_sent++;
	message_events(msg, ids, NULL, corr);
	rpc_reply(from, id, json_pack("{s:s, s:o}", "messageId", mid,
	    "delivered", ids));
}

/*
 * map/send: deliver a payload to the participants an address names.  A
 * client's message that expects a response, to one agent, is a request
 * to it (see the top of this file).
 */
void
message_send(struct peer *from, json_t *id, json_t *params)
{
	struct message_target	 targets[MESSAGE_TARGETS];
	struct env		 env;
	struct env_error	 err;
	json_t			*to, *payload, *meta, *msg, *ids, *corrj;
	char			 why[256], mid[EVENT_ID_LEN + 1], *line = NULL;
	char			*member = NULL, *marked = NULL, *failed = NULL;
	const char		*corr = NULL;
	size_t			 n, i, len = 0, mlen = 0;
	int			 code, agents = 0;
	struct jscan		*js;

	to = json_object_get(params, "to");
	payload = json_object_get(params, "payload");
	if (payload == NULL)
		payload = json_object_get(params, "envelope");
	if (payload == NULL)
		payload = json_object_get(params, "message");
	meta = json_object_get(params, "meta");
	if (to == NULL || payload == NULL || (meta != NULL &&
	    !json_is_object(meta))) {
		rpc_error(from, id, CORRAL_E_PARAMS, "params needs to (an "
		    "address) and payload (an envelope, or a string)", NULL);
		return;
	}
	if (message_agent_reply(from, id, payload, meta))
		return;
	if ((code = message_resolve(from, to, targets, &n, why,
	    sizeof why)) != 0) {
		message_refused(from, id, code, why);
		return;
	}
	for (i = 0; i < n; i++) {
		/* An agent that speaks map takes the Message, as a client does. */
		if (targets[i].agent != NULL &&
		    dialect_is(targets[i].agent, "map")) {
			targets[i].peer = agent_peer(targets[i].agent);
			targets[i].agent = NULL;
		}
		if (targets[i].agent != NULL)
			agents++;
	}
	msg = dialect_map_message(from->name, to, payload, meta, mid);
	corrj = json_object_get(meta, "correlationId");
	if (json_is_true(json_object_get(meta, "isResult")) &&
	    json_is_string(corrj))
		corr = json_string_value(corrj);

	/*
	 * A request to one agent (or to a capability: the one least busy
	 * that has it): the agent's reply comes back to the sender.
	 */
	if (json_is_true(json_object_get(meta, "expectsResponse")) &&
	    agents >= 1 && (n == 1 || message_is_capability(to))) {
		message_pick(targets, &n);
		message_send_request(from, id, targets[0], payload, msg, mid,
		    json_is_string(corrj) ? json_string_value(corrj) : mid,
		    corr);
		json_decref(msg);
		return;
	}

	if (agents > 0) {
		if ((line = message_envelope(payload, from->agent != NULL ?
		    "agent" : "user", NULL, &len, &env, why,
		    sizeof why)) == NULL) {
			rpc_error(from, id, CORRAL_E_PARAMS, why, NULL);
			json_decref(msg);
			return;
		}
		member = message_member(from->name, mid, message_scope_id);
		session_note_line(line, len, "message", mid, from->name,
		    message_scope_id);
		js = jscan_take();
		if (jscan_run(js, line, len) == 0 &&
		    envelope_check(js, line, len, &env, &err) == 0)
			marked = envelope_mark(js, line, len, member, &mlen);
		jscan_give(js);
	}
	ids = json_array();
	for (i = 0; i < n; i++) {
		if (targets[i].agent != NULL) {
			if (marked == NULL || agent_full(targets[i].agent) ||
			    !agent_writable(targets[i].agent)) {
				failed = "a target is not reading its stdin";
				if (message_scope_id != NULL)
					scope_count_delivery(message_scope_id,
					    targets[i].agent, 1);
				continue;
			}
			if (message_scope_id != NULL)
				scope_count_delivery(message_scope_id,
				    targets[i].agent, 0);
			dialect_send(targets[i].agent, marked, mlen,
			    DK_MESSAGE);
			auditlog_envelope("send", targets[i].agent->id, mid,
			    marked, mlen);
		} else {
			if (rpc_full(targets[i].peer)) {
				failed = "a client is not reading";
				continue;
			}
			rpc_notify(targets[i].peer, CORRAL_M_MESSAGE,
			    json_pack("{s:O}", "message", msg));
		}
		json_array_append_new(ids, json_string(targets[i].id));
		message_sent++;
	}
	message_events(msg, ids, failed, corr);
	if (json_array_size(ids) == 0 && (n > 0 || message_scope_id == NULL))
		rpc_error(from, id, CORRAL_E_DELIVERY, failed != NULL ? failed :
		    "no target took the message", NULL);
	else
		rpc_reply(from, id, json_pack("{s:s, s:O}", "messageId", mid,
		    "delivered", ids));
	json_decref(ids);
	json_decref(msg);
	free(line);
	free(member);
	free(marked);
}

/*
 * _corral/route: an envelope through the routing table, as a request
 * whose reply comes back to the caller (corral send INTENT).
 */
void
message_route(struct peer *from, json_t *id, json_t *params)
{
	json_t	*payload = json_object_get(params, "payload"), *corrj;
	char	 why[256], mid[EVENT_ID_LEN + 1];

	if (payload == NULL)
		payload = json_object_get(params, "envelope");
	if (!json_is_object(payload) && !json_is_string(payload)) {
		rpc_error(from, id, CORRAL_E_PARAMS, "params.payload must be an "
		    "envelope or a string", NULL);
		return;
	}
	corrj = json_object_get(params, "correlationId");
	event_new_id(mid);
	/* Answered first: routing may fail the request at once. */
	rpc_reply(from, id, json_pack("{s:s}", "messageId", mid));
	if (message_request(from, NULL, payload, mid, json_is_string(corrj) ?
	    json_string_value(corrj) : mid, why, sizeof why) != 0)
		message_result(from->name, NULL, mid, NULL, 0, why);
}

/*
 * The member corral adds to a result it delivers to the agent that made
 * the request: {"kind":"result","from","correlationId","ok"}.
 */
static char *
message_result_member(const char *from, const char *corr, int ok)
{
	struct jsonw	j;
	size_t		len;

	jsonw_init(&j);
	jsonw_object(&j);
	jsonw_key(&j, "kind");
	jsonw_str(&j, CORRAL_KIND_RESULT);
	jsonw_key(&j, "from");
	jsonw_str(&j, from);
	jsonw_key(&j, "correlationId");
	jsonw_str(&j, corr);
	jsonw_key(&j, "ok");
	jsonw_bool(&j, ok);
	jsonw_object_end(&j);
	return jsonw_finish(&j, &len);
}

/* The events of a result delivered to an agent (or not). */
static void
message_result_events(const char *to, const char *sender, const char *corr,
    const char *line, size_t len, json_t *ids)
{
	json_t	*payload, *meta, *addr, *msg;
	char	 mid[EVENT_ID_LEN + 1];

	if ((payload = json_loadb(line, len, 0, NULL)) == NULL)
		payload = json_null();
	meta = json_pack("{s:b, s:s}", "isResult", 1, "correlationId", corr);
	addr = json_pack("{s:s}", "agent", to);
	msg = dialect_map_message(sender, addr, payload, meta, mid);
	message_events(msg, ids, json_array_size(ids) == 0 ?
	    "the requester is gone or not reading" : NULL, corr);
	json_decref(msg);
	json_decref(addr);
	json_decref(meta);
	json_decref(payload);
}

/*
 * Deliver the result of an agent's request to it: the reply envelope (or
 * an error envelope saying why) marked as a result.  An agent in MAP mode
 * gets it as a map/message with meta.isResult (message_wrap).
 */
static void
message_result_agent(struct agent *a, struct agent *from, const char *corr,
    const char *line, size_t len, const char *why)
{
	struct env		 env;
	struct env_error	 err;
	struct jscan		*js;
	char			*member, *marked = NULL, *e = NULL;
	const char		*sender = from != NULL ? from->id : "corral";
	size_t			 mlen;
	json_t			*ids;
	int			 ok;

	if (line == NULL) {
		e = envelope_error("request_failed", "UNAVAILABLE", NULL, why,
		    corr, NULL, &len);
		line = e;
	}
	js = jscan_take();
	ok = jscan_run(js, line, len) == 0 &&
	    envelope_check(js, line, len, &env, &err) == 0;
	if (ok) {
		member = message_result_member(sender, corr, e == NULL &&
		    env.ctype != CT_ERROR);
		marked = envelope_mark(js, line, len, member, &mlen);
		free(member);
	}
	jscan_give(js);
	ids = json_array();
	if (marked != NULL && message_live(a) && !agent_full(a) &&
	    agent_writable(a)) {
		dialect_send(a, marked, mlen, DK_RESULT);
		auditlog_envelope("result", a->id, corr, marked, mlen);
		json_array_append_new(ids, json_string(a->id));
	} else
		log_info("result %s for agent %s not delivered: %s", corr,
		    a->id, marked == NULL ? "it is not an envelope" :
		    "it is not reading");
	message_result_events(a->id, sender, corr, line, len, ids);
	json_decref(ids);
	free(marked);
	free(e);
}

/*
 * Deliver a result to participant to: an envelope line (the reply to a
 * request, or a client's agent's task result), or, when line is NULL,
 * an error saying why.  It is a Message with meta.isResult and the
 * correlation id, and a message_delivered event carrying that id.
 */
void
message_result(const char *to, struct agent *from, const char *corr,
    const char *line, size_t len, const char *why)
{
	struct peer	*p = rpc_peer_find(to);
	json_t		*payload, *msg, *ids, *meta, *addr;
	char		 mid[EVENT_ID_LEN + 1];
	const char	*sender = from != NULL ? from->id : "corral";
	struct agent	*ra;

	if (p == NULL && (ra = agent_find(to)) != NULL) {
		message_result_agent(ra, from, corr, line, len, why);
		return;
	}

	if (line != NULL)
		payload = json_loadb(line, len, 0, NULL);
	else
		payload = json_pack("{s:s, s:s}", "error", "request_failed",
		    "message", why);
	if (payload == NULL)
		payload = json_null();
	meta = json_pack("{s:b, s:s}", "isResult", 1, "correlationId", corr);
	if (from != NULL && from->parent == NULL && mapview_owner(from) !=
	    NULL && strcmp(mapview_owner(from), to) == 0)
		json_object_set_new(meta, "relationship",
		    json_string("child-to-parent"));
	addr = json_pack("{s:s}", "participant", to);
	msg = dialect_map_message(sender, addr, payload, meta, mid);
	json_decref(addr);
	ids = json_array();
	if (p != NULL && !rpc_full(p)) {
		rpc_notify(p, CORRAL_M_MESSAGE, json_pack("{s:O}", "message",
		    msg));
		json_array_append_new(ids, json_string(to));
	} else
		log_info("result %s for %s not delivered: %s", corr, to,
		    p == NULL ? "it is gone" : "it is not reading");
	message_events(msg, ids, json_array_size(ids) == 0 ?
	    "the requester is gone or not reading" : NULL, corr);
	json_decref(ids);
	json_decref(msg);
	json_decref(meta);
	json_decref(payload);
}

/*
 * An envelope from agent a about request m (MSG_SEND): it is the reply,
 * whatever its intent.  Filled in as any reply is (trace.id, parents).
 */
void
message_reply(struct agent *a, struct msg *m, struct jscan *js,
    const char *line, size_t len, struct env *env)
{
	struct env_error	 err;
	struct message_req	*r;
	char			 id[CORRAL_ID_MAX], *filled;
	size_t			 flen;

	if (envelope_trace_id(js, line, env, id, sizeof id) < 0) {
		protocol_new_id(id, sizeof id);
		filled = envelope_fill(js, line, len, env, id, m->id, &flen);
	} else
		filled = envelope_fill(js, line, len, env, NULL, m->id, &flen);
	if (filled != NULL) {
		if (jscan_run(js, filled, flen) != 0 ||
		    envelope_check(js, filled, flen, env, &err) != 0) {
			log_warnx("agent %s: the reply to request %s could not "
			    "be completed; dropped", a->id, m->id);
			free(filled);
			return;
		}
		line = filled;
		len = flen;
	}
	engine_account(a, env);
	auditlog_envelope("reply", a->id, id, line, len);
	TAILQ_FOREACH(r, &message_reqs, entry)
		if (strcmp(r->id, m->id) == 0)
			strlcpy(r->responder, a->id, sizeof r->responder);
	engine_replied(m, a, id, NULL, line, len, env->ctype == CT_ERROR);
	free(filled);
}

/* A request made through the control plane has its outcome. */
void
message_done(struct msg *m, const char *line, size_t len, int is_error)
{
	struct message_req	*r;
	struct agent		*a;
	char			 why[300] = "the request failed";

	if ((r = message_req_take(m->id)) == NULL) {
		log_info("request %s: its requester was forgotten", m->id);
		return;
	}
	/* Who answered: the agent that replied, or was to. */
	if ((a = m->agent) == NULL && (r->responder[0] == '\0' ||
	    (a = agent_find(r->responder)) == NULL))
		a = m->target;
	session_note_line(m->line, m->len, "result", m->id, a != NULL ? a->id :
	    "corral", r->requester);
	if (taskreg_end(m->id, a != NULL ? a->id : "corral", line, len,
	    is_error, why, sizeof why)) {
		/* Over its budget: the answer is recorded, the task failed. */
		log_warnx("%s", why);
		message_result(r->requester, a, r->corr, NULL, 0, why);
	} else
		message_result(r->requester, a, r->corr, line, len, NULL);
	free(r->requester);
	free(r->corr);
	free(r);
}

/*
 * Deliver a child's result (line: the envelope marked as a child result)
 * to the MCP session that spawned it (via, a delegate's own participantId)
 * or, if that one is gone, to every delegate of parent p: a Message from
 * the child with meta.isResult and the task id as correlation id.
 * Returns how many took it; 0 means the result must go another way.
 */
int
message_delegates(struct agent *p, const char *via, struct agent *c,
    const char *task, const char *line, size_t len)
{
	struct peer	*d;
	json_t		*payload, *msg, *meta, *addr, *ids;
	char		 mid[EVENT_ID_LEN + 1];
	int		 n = 0, mine = 0;

	for (d = rpc_peer_first(); d != NULL; d = rpc_peer_next(d))
		if ((d->role & PEER_DELEGATE) && d->agent == p &&
		    via != NULL && strcmp(rpc_own_name(d), via) == 0 &&
		    !rpc_full(d))
			mine = 1;
	if ((payload = json_loadb(line, len, 0, NULL)) == NULL)
		return 0;
	meta = json_pack("{s:b, s:s, s:s}", "isResult", 1, "correlationId",
	    task, "relationship", "child-to-parent");
	addr = json_pack("{s:s}", "agent", p->id);
	msg = dialect_map_message(c != NULL ? c->id : "corral", addr, payload, meta,
	    mid);
	ids = json_array();
	for (d = rpc_peer_first(); d != NULL; d = rpc_peer_next(d)) {
		if (!(d->role & PEER_DELEGATE) || d->agent != p ||
		    rpc_full(d) || (mine && strcmp(rpc_own_name(d), via) != 0))
			continue;
		rpc_notify(d, CORRAL_M_MESSAGE, json_pack("{s:O}", "message",
		    msg));
		json_array_append_new(ids, json_string(rpc_own_name(d)));
		n++;
	}
	if (n > 0) {
		message_sent++;
		message_events(msg, ids, NULL, task);
	}
	json_decref(ids);
	json_decref(msg);
	json_decref(addr);
	json_decref(meta);
	json_decref(payload);
	return n;
}

/*
 * The agent a handoff goes to: the one named (params.to), or the least
 * busy live agent with the capability (params.capability), never the
 * agent handing off.  NULL with why.
 */
static struct agent *
message_handoff_target(struct agent *from, json_t *params, char *why,
    size_t whylen)
{
	struct agent	*a, *best = NULL;
	const char	*to = json_string_value(json_object_get(params, "to"));
	const char	*cap = json_string_value(json_object_get(params,
			    "capability"));

	if (to != NULL) {
		if (strncmp(to, "agent:", 6) == 0)
			to += 6;
		if ((a = agent_find(to)) == NULL || a == from ||
		    !message_live(a) || !mapview_may_reach(from, a)) {
			snprintf(why, whylen, "no agent '%.64s' to hand off to",
			    to);
			return NULL;
		}
		return a;
	}
	if (cap == NULL) {
		snprintf(why, whylen, "params names the new agent in to, or a "
		    "capability");
		return NULL;
	}
	for (a = agent_first(); a != NULL; a = agent_next(a))
		if (a != from && message_live(a) &&
		    mapview_may_reach(from, a) &&
		    mapview_has_capability(a, cap) && (best == NULL ||
		    lifecycle_outstanding(a) < lifecycle_outstanding(best)))
			best = a;
	if (best == NULL)
		snprintf(why, whylen, "no other agent has the capability "
		    "'%.64s'", cap);
	return best;
}

/*
 * The request's envelope with the handoff added: {"handoff": {from,
 * reason, context, constraints, history}}, history growing by one entry
 * at each handoff.  NULL when it cannot be made.
 */
static char *
message_handoff_line(struct msg *m, struct agent *from, struct agent *to,
    json_t *params, size_t *lenp)
{
	json_t	*env, *ho, *old, *hist;
	char	 ts[40], *s;

	if ((env = json_loadb(m->line, m->len, 0, NULL)) == NULL)
		return NULL;
	old = json_object_get(env, "handoff");
	hist = json_is_array(json_object_get(old, "history")) ?
	    json_deep_copy(json_object_get(old, "history")) : json_array();
	util_rfc3339(ts, sizeof ts);
	json_array_append_new(hist, json_pack("{s:s, s:s, s:s, s:{s:s, s:s}}",
	    "timestamp", ts, "event_type", "handoff", "agent_id", from->id,
	    "details", "to", to->id, "reason", json_string_value(
	    json_object_get(params, "reason")) != NULL ? json_string_value(
	    json_object_get(params, "reason")) : "unspecified"));
	ho = json_pack("{s:s, s:s, s:o}", "from", from->id, "reason",
	    json_string_value(json_object_get(params, "reason")) != NULL ?
	    json_string_value(json_object_get(params, "reason")) :
	    "unspecified", "history", hist);
	if (json_object_get(params, "context") != NULL)
		json_object_set(ho, "context", json_object_get(params,
		    "context"));
	if (json_object_get(params, "constraints") != NULL)
		json_object_set(ho, "constraints", json_object_get(params,
		    "constraints"));
	json_object_set_new(env, "handoff", ho);
	s = jsonw_dumps(env, CORRAL_JSON_FLAGS);
	json_decref(env);
	if (s != NULL)
		*lenp = strlen(s);
	return s;
}

/*
 * _corral/handoff: an agent hands the request it works on to another
 * agent, named or found by capability, with its context and the history
 * of its handoffs.  The request moves; its one outcome is still to come,
 * from the new agent.
 */
void
message_handoff(struct peer *p, json_t *id, json_t *params)
{
	struct agent	*a = p->agent, *t;
	struct msg	*m;
	const char	*rid = json_string_value(json_object_get(params,
			    "requestId"));
	char		 why[200], *line;
	size_t		 len;

	if (rid == NULL || (m = engine_find(rid)) == NULL ||
	    m->where != MSG_INFLIGHT || m->agent != a || m->kind == MSG_TASK) {
		rpc_error(p, id, CORRAL_E_NOTFOUND, "params.requestId names no "
		    "request this agent works on (a spawned child's own task "
		    "cannot be handed off)", json_pack("{s:s}", "reason",
		    "request"));
		return;
	}
	if ((t = message_handoff_target(a, params, why, sizeof why)) == NULL) {
		rpc_error(p, id, CORRAL_E_NOADDRESS, why, NULL);
		return;
	}
	if ((line = message_handoff_line(m, a, t, params, &len)) == NULL ||
	    !engine_has_room(len)) {
		free(line);
		rpc_error(p, id, CORRAL_E_EXHAUSTED, "the handed-off request "
		    "does not fit under limits.memory", NULL);
		return;
	}
	log_info("request %s: handed off by %s to %s (%s)", m->id, a->id,
	    t->id, json_string_value(json_object_get(params, "reason")) !=
	    NULL ? json_string_value(json_object_get(params, "reason")) :
	    "no reason given");
	auditlog_event("handoff", a->id, m->id, "to", t->id, "reason",
	    json_string_value(json_object_get(params, "reason")) != NULL ?
	    json_string_value(json_object_get(params, "reason")) :
	    "unspecified", NULL);
	rpc_reply(p, id, json_pack("{s:b, s:s, s:s}", "handedOff", 1,
	    "requestId", m->id, "agentId", t->id));
	taskreg_assign(m->id, t->id, "handoff");
	engine_handoff(m, t, line, len);
}

/*
 * _corral/progress: an agent says how far it is with a request it works
 * on; it goes where an adapted CLI's progress goes (docs/protocol.md,
 * Progress).
 */
void
message_progress(struct peer *p, json_t *id, json_t *params)
{
	struct msg	*m;
	const char	*rid = json_string_value(json_object_get(params,
			    "requestId"));
	const char	*text = json_string_value(json_object_get(params,
			    "text"));

	if (rid == NULL || text == NULL || (m = engine_find(rid)) == NULL ||
	    m->where != MSG_INFLIGHT || m->agent != p->agent) {
		rpc_error(p, id, CORRAL_E_NOTFOUND, "params needs requestId, a "
		    "request this agent works on, and text", NULL);
		return;
	}
	engine_progress(p->agent, m, text, 0);
	rpc_reply(p, id, json_object());
}

/*
 * _corral/report: an agent reports an error on a request it works on,
 * typed, with a severity, without giving up on it (an agent that cannot
 * go on answers with an error instead).  The report goes with the
 * request's outcome and its job's result, and is the agent's
 * metadata.lastErrorReport.
 */
void
message_report(struct peer *p, json_t *id, json_t *params)
{
	struct msg	*m;
	json_t		*md;
	char		 why[256];
	const char	*rid = json_string_value(json_object_get(params,
			    "requestId"));
	const char	*type = json_string_value(json_object_get(params,
			    "errorType"));
	const char	*sev = json_string_value(json_object_get(params,
			    "severity"));
	const char	*text = json_string_value(json_object_get(params,
			    "message"));

	if (sev == NULL)
		sev = "medium";
	if (type == NULL || *type == '\0' || strlen(type) > 64 ||
	    engine_severity(sev) < 0) {
		rpc_error(p, id, CORRAL_E_PARAMS, "params needs errorType (1 to "
		    "64 bytes) and a severity of low, medium, high or "
		    "critical", NULL);
		return;
	}
	if (rid == NULL || (m = engine_find(rid)) == NULL ||
	    m->where != MSG_INFLIGHT || m->agent != p->agent) {
		rpc_error(p, id, CORRAL_E_NOTFOUND, "params.requestId names no "
		    "request this agent works on", NULL);
		return;
	}
	engine_report(p->agent, m, type, sev, text != NULL ? text : "",
	    json_string_value(json_object_get(params, "errorId")));
	/* Shown in its metadata when that stays within its bound. */
	md = json_pack("{s:O}", "lastErrorReport", params);
	(void)mapview_merge(p->agent, md, why, sizeof why);
	json_decref(md);
	rpc_reply(p, id, json_object());
}

/*
 * map/tasks/assign: a task of the registry becomes a request to an agent
 * (its title the task, its description the text), whose reply is the
 * task's result; the caller gets it as a result too.
 */
void
message_task_assign(struct peer *p, json_t *id, json_t *params)
{
	const char	*tid = json_string_value(json_object_get(params,
			    "taskId"));
	const char	*aid = json_string_value(json_object_get(params,
			    "agentId"));
	const char	*title, *desc;
	struct agent	*a;
	json_t		*env;
	char		 why[256];

	if (tid == NULL || taskreg_text_of(tid, &title, &desc) != 0) {
		rpc_error(p, id, CORRAL_E_PARAMS, "params.taskId names no task",
		    NULL);
		return;
	}
	if (aid == NULL || (a = agent_find(aid)) == NULL || !message_live(a) ||
	    (p->agent != NULL && !mapview_may_reach(p->agent, a))) {
		rpc_error(p, id, CORRAL_E_NOTFOUND, "params.agentId names no "
		    "agent that can take it", NULL);
		return;
	}
	env = json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s}}", "protocol",
	    CORRAL_ENVELOPE_PROTOCOL, "role", p->agent != NULL ? "agent" :
	    "user", "intent", "execute", "task", title != NULL ? title : tid,
	    "content", "type", "text", "text", desc != NULL ? desc : (title !=
	    NULL ? title : tid));
	if (engine_find(tid) != NULL || message_request(p, a, env, tid, tid,
	    why, sizeof why) != 0) {
		json_decref(env);
		rpc_error(p, id, CORRAL_E_PARAMS, engine_find(tid) != NULL ?
		    "the task is being worked on" : why, NULL);
		return;
	}
	json_decref(env);
	taskreg_assign(tid, a->id, "assigned");
	rpc_reply(p, id, json_pack("{s:o}", "task", taskreg_describe(tid)));
}
