/*
 * Control frames: JSON-RPC 2.0 with MAP's method names, from an agent on
 * its pipes or from a client (a control socket connection, corral serve's
 * stdin).
 *
 * Control frames are rare next to envelopes, so they are parsed with
 * jansson.  One table names every method, who may call it, and its
 * handler; a request gets exactly one response, a bad frame gets a
 * JSON-RPC error, and the next line is read as usual.  The handshake
 * (map/connect, map/agents/register) and the methods that describe a
 * participant are here; the others belong to the modules they act on.
 * docs/protocol.md has the conformance table: every method of the MAP
 * SDK and what corral answers.
 *
 * A connection that shows an agent's credential in map/connect (its
 * auth, method x-corral-agent: what `corral mcp` does for a CLI's model)
 * becomes that agent's delegate: every frame it sends then is handled as
 * if the agent had sent it on its pipe, with its depth, fan-out, budget
 * and visibility, but only the methods of the tools its entry offers
 * (tools:).  It is named after the agent; it loses the agent when the
 * agent is freed.
 *
 * An agent acts only as itself.  A connection from inside corral, from
 * an agent's process tree (lineage.c), is no client: the only frame it
 * may send is map/connect with the credential of the agent whose
 * processes it comes from.  A credential shown from anywhere else (from
 * outside corral, or from another agent's processes) is refused like a
 * wrong one, and so is the connection: it is closed after the answer.
 */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

static void	control_connect(struct peer *, json_t *, json_t *);
static void	control_ping(struct peer *, json_t *, json_t *);
static void	control_disconnect(struct peer *, json_t *, json_t *);
static void	control_register(struct peer *, json_t *, json_t *);
static void	control_unregister(struct peer *, json_t *, json_t *);
static void	control_update(struct peer *, json_t *, json_t *);
static void	control_shutdown(struct peer *, json_t *, json_t *);

#define BOTH	(PEER_AGENT | PEER_CLIENT)
#define ALL	(PEER_AGENT | PEER_CLIENT | PEER_DELEGATE)
#define Q	CONTROL_QUERY

/*
 * The most JSON values (and keys) a frame may hold.  jansson takes 40 to
 * 200 bytes for each, so a 1 MiB frame of empty arrays would cost 50 MiB;
 * this keeps a frame under about 13 MiB, and is far above what a message
 * or a spawn needs.
 */
#define CONTROL_MAX_VALUES	65536

/*
 * The most requests a batch may hold, and the most bytes its answers may
 * take before the rest of it is refused: they are built in memory before
 * they are written, so a batch costs its answers at once (at most
 * CONTROL_BATCH_BYTES and one answer: docs/reliability.md).
 */
#define CONTROL_MAX_BATCH	128
#define CONTROL_BATCH_BYTES	(1024 * 1024)

static const struct control_method control_methods[] = {
	{ CORRAL_M_CONNECT,	ALL,		control_connect },
	{ CORRAL_M_PING,	ALL | Q,	control_ping },
	{ CORRAL_M_DISCONNECT,	ALL,		control_disconnect },
	{ CORRAL_M_REGISTER,	ALL,		control_register },
	{ CORRAL_M_UNREGISTER,	ALL,		control_unregister },
	{ CORRAL_M_UPDATE,	ALL,		control_update },
	{ CORRAL_M_SPAWN,	ALL,		subagent_spawn },
	{ CORRAL_M_SEND,	ALL,		message_send },
	{ CORRAL_M_STOP,	ALL,		subagent_stop },
	{ CORRAL_M_SUSPEND,	BOTH,		subagent_suspend },
	{ CORRAL_M_RESUME,	BOTH,		subagent_resume },
	{ CORRAL_M_LIST,	ALL | Q,	mapview_list },
	{ CORRAL_M_GET,		ALL | Q,	mapview_get },
	{ CORRAL_M_GRAPH,	ALL | Q,	mapview_graph },
	{ CORRAL_M_SUBSCRIBE,	ALL,		event_subscribe },
	{ CORRAL_M_UNSUBSCRIBE,	ALL,		event_unsubscribe },
	{ CORRAL_M_REPLAY,	ALL | Q,	event_replay },
	{ CORRAL_M_SCOPES,	BOTH | Q,	scope_list_request },
	{ CORRAL_M_SCOPE_GET,	BOTH | Q,	scope_get_request },
	{ CORRAL_M_SCOPE_CREATE, BOTH,		scope_create_request },
	{ CORRAL_M_SCOPE_DELETE, BOTH,		scope_delete_request },
	{ CORRAL_M_SCOPE_JOIN,	BOTH,		scope_join_request },
	{ CORRAL_M_SCOPE_LEAVE,	BOTH,		scope_leave_request },
	{ CORRAL_M_SCOPE_MEMBERS, BOTH | Q,	scope_members_request },
	{ CORRAL_M_TASKS_CREATE, BOTH,		taskreg_create_request },
	{ CORRAL_M_TASKS_ASSIGN, BOTH,		message_task_assign },
	{ CORRAL_M_TASKS_UPDATE, BOTH,		taskreg_update_request },
	{ CORRAL_M_TASKS_LIST,	BOTH | Q,	taskreg_list_request },
	{ CORRAL_M_SESSION_LIST, BOTH | Q,	session_list_request },
	{ CORRAL_M_SESSION_LOAD, BOTH,		session_load_request },
	{ CORRAL_M_SESSION_CLOSE, BOTH,		session_close_request },
	{ CORRAL_M_METRICS,	BOTH | Q,	metrics_request },
	{ CORRAL_M_ROUTE,	BOTH,		message_route },
	{ CORRAL_M_HANDOFF,	PEER_AGENT,	message_handoff },
	{ CORRAL_M_PROGRESS,	PEER_AGENT,	message_progress },
	{ CORRAL_M_REPORT,	PEER_AGENT,	message_report },
	{ CORRAL_M_SHUTDOWN,	PEER_CLIENT,	control_shutdown },
	{ CORRAL_M_CANCEL,	BOTH,		cancel_request },
	{ CORRAL_M_REQUESTS,	BOTH | Q,	cancel_list },
	{ CORRAL_M_STEPS,	PEER_CLIENT | Q, step_rpc_list },
	{ CORRAL_M_ANSWER,	PEER_CLIENT,	step_rpc_answer },
};

/* The tool of tools: a delegate needs for a method (0: none). */
static const struct {
	const char	*method;
	unsigned int	 tool;
} control_tools[] = {
	{ CORRAL_M_SPAWN,	TOOL_SPAWN },
	{ CORRAL_M_SEND,	TOOL_SEND },
	{ CORRAL_M_STOP,	TOOL_STOP },
	{ CORRAL_M_LIST,	TOOL_LIST | TOOL_WAIT },
	{ CORRAL_M_GET,		TOOL_LIST | TOOL_WAIT },
	{ CORRAL_M_GRAPH,	TOOL_LIST },
	{ CORRAL_M_SUBSCRIBE,	TOOL_LIST },
	{ CORRAL_M_REPLAY,	TOOL_LIST },
};

/* What the supervisor told us about the run. */
static struct control_info	control_run;

static void	control_forget(struct agent *);
static void	control_lifecycle(struct agent *, enum agent_state,
		    enum agent_state, enum agent_event, const char *);

/* Learn about the run: its name, pid, mode, start, and how to stop it. */
void
control_init(const struct control_info *ci)
{
	control_run = *ci;
	session_init(ci->started_ms);
	taskreg_init(ci->wf);
	agent_on_free(control_forget);
	lifecycle_observe(control_lifecycle);
}

/*
 * An agent's process is gone (or it stopped for good): the sessions that
 * acted for that process lose it; its next process has a new credential.
 */
static void
control_lifecycle(struct agent *a, enum agent_state from, enum agent_state to,
    enum agent_event ev, const char *why)
{
	if (to == AS_STOPPED || to == AS_FAILED || to == AS_BACKOFF)
		control_forget(a);
}

/*
 * An agent is about to be freed, or its process is gone: its delegates
 * lose it, and may call nothing more (their connections stay until their
 * end).
 */
static void
control_forget(struct agent *a)
{
	struct peer	*p;

	for (p = rpc_peer_first(); p != NULL; p = rpc_peer_next(p)) {
		if (rpc_origin(p) == a)
			p->conn->origin = NULL;
		if (!(p->role & PEER_DELEGATE) || p->agent != a)
			continue;
		log_debug("%s: its agent %s is gone", rpc_own_name(p), a->id);
		event_peer_gone(p);	/* it saw what the agent saw */
		p->agent = NULL;
		p->name = rpc_own_name(p);
		p->role = 0;
	}
}

/* Find a method by name. */
static const struct control_method *
control_find(const char *name)
{
	size_t	i;

	for (i = 0; i < sizeof control_methods / sizeof control_methods[0];
	    i++)
		if (strcmp(control_methods[i].name, name) == 0)
			return &control_methods[i];
	return NULL;
}

/* Emit participant_connected or participant_disconnected for a client. */
static void
control_participant(struct peer *p, const char *type)
{
	struct event_info	 ei;
	struct jsonw		 j;
	char			*s;
	size_t			 len;

	const char		*pid = rpc_own_name(p) != NULL ?
				    rpc_own_name(p) : p->name;

	jsonw_init(&j);
	jsonw_object(&j);
	jsonw_key(&j, "participantId");
	jsonw_str(&j, pid);
	jsonw_key(&j, "participantType");
	jsonw_str(&j, p->agent != NULL ? "agent" : "client");
	if (p->conn != NULL && p->conn->cname != NULL) {
		jsonw_key(&j, "name");
		jsonw_str(&j, p->conn->cname);
	}
	if ((p->role & PEER_DELEGATE) && p->agent != NULL) {
		jsonw_key(&j, "agentId");
		jsonw_str(&j, p->agent->id);
	}
	jsonw_object_end(&j);
	s = jsonw_finish(&j, &len);
	memset(&ei, 0, sizeof ei);
	ei.type = type;
	ei.source = pid;
	ei.audit = 1;
	event_emit(&ei, s, len);
	free(s);
}

/*
 * A client is going: say so, and stop the agents it owns (or leave them
 * running with no owner, with the orphan policy).
 */
void
control_gone(struct peer *p)
{
	if (p->flags & PEER_CONNECTED)
		control_participant(p, "participant_disconnected");
	if (!(p->role & PEER_DELEGATE))
		mapview_owner_gone(p->name, (p->flags & PEER_ORPHAN) != 0);
	event_peer_gone(p);
	p->flags &= ~PEER_CONNECTED;
}

/*
 * Log a refused connection: at most ten lines a second, then one that
 * says how many were not logged, so that an agent connecting in a loop
 * cannot flood the log.
 */
static void __attribute__((format(printf, 1, 2)))
control_warn_refused(const char *fmt, ...)
{
	static ev_tstamp	 at;
	static unsigned int	 count, dropped;
	ev_tstamp		 now = ev_now(LOOP);
	va_list			 ap;
	char			 buf[512];

	if (now - at >= 1.0) {
		if (dropped > 0)
			log_warnx("control: %u more refusals like these were not "
			    "logged", dropped);
		at = now;
		count = dropped = 0;
	}
	if (++count > 10) {
		dropped++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	log_warnx("%s", buf);
}

/*
 * Refuse a credential: say so in the log (never the credential itself)
 * and the audit log, answer with code and msg, and close the connection.
 */
static void
control_auth_refuse(struct peer *p, json_t *id, int code, const char *msg,
    const char *why)
{
	control_warn_refused("%s: refused an agent credential: %s", p->name,
	    why);
	auditlog_event("auth_refused", NULL, NULL, "participant", p->name,
	    "reason", why, NULL);
	rpc_error(p, id, code, msg, NULL);
	p->flags |= PEER_HANGUP;
}

/*
 * map/connect with auth: make the connection the delegate of the agent
 * whose credential it shows, when it comes from that agent's processes.
 * Returns 0, or -1 after refusing it.
 */
static int
control_auth(struct peer *p, json_t *id, json_t *auth)
{
	const char	*method, *cred;
	struct agent	*a;
	char		 why[160];

	method = json_string_value(json_object_get(auth, "method"));
	cred = json_string_value(json_object_get(auth, "credential"));
	if (!(p->role & PEER_CLIENT) || !(p->flags & PEER_SOCKET)) {
		rpc_error(p, id, CORRAL_E_PARAMS, "auth is for connections to "
		    "the control socket", NULL);
		return -1;
	}
	if (method == NULL || strcmp(method, CORRAL_AUTH_AGENT) != 0) {
		control_auth_refuse(p, id, CORRAL_E_AUTHMETHOD, "auth.method "
		    "must be " CORRAL_AUTH_AGENT " (an agent's "
		    "CORRAL_AGENT_TOKEN in auth.credential)",
		    "an unknown auth.method");
		return -1;
	}
	if ((a = agent_find_token(cred)) == NULL || !lifecycle_alive(a)) {
		control_auth_refuse(p, id, CORRAL_E_CREDENTIALS, "invalid "
		    "credentials: the token names no running agent of this "
		    "corral", "it names no running agent");
		return -1;
	}
	if (!(p->flags & PEER_INSIDE) || rpc_origin(p) != a) {
		/* A stolen one: say whose it is only in the log. */
		snprintf(why, sizeof why, "agent %s's, shown from %s%s", a->id,
		    !(p->flags & PEER_INSIDE) ? "outside corral" :
		    rpc_origin(p) != NULL ? "the processes of agent " :
		    "a process of no agent", rpc_origin(p) != NULL ?
		    rpc_origin(p)->id : "");
		control_auth_refuse(p, id, CORRAL_E_CREDENTIALS, "invalid "
		    "credentials: an agent's token is valid only from the "
		    "processes of that agent", why);
		return -1;
	}
	rpc_conn(p)->own_name = p->name;
	p->name = a->id;
	p->agent = a;
	p->role = PEER_DELEGATE;
	log_info("%s: acts for agent %s", p->conn->own_name, a->id);
	return 0;
}

/*
 * A frame from inside corral on a connection that acts for no agent: the
 * only one allowed is map/connect with a credential (control_auth checks
 * whose).  Returns 0 to handle it, or -1 after refusing it and closing
 * the connection.
 */
static int
control_inside(struct peer *p, json_t *id, const char *method,
    json_t *params)
{
	char	msg[256], esc[64 * 4 + 8];

	if (strcmp(method, CORRAL_M_CONNECT) == 0 &&
	    json_object_get(params, "auth") != NULL)
		return 0;
	log_escape(esc, sizeof esc, method, strlen(method));
	control_warn_refused("%s: refused %s from %s%s: an agent reaches "
	    "corral only as itself", p->name, esc, rpc_origin(p) != NULL ?
	    "the processes of agent " : "inside corral", rpc_origin(p) !=
	    NULL ? rpc_origin(p)->id : "");
	snprintf(msg, sizeof msg, "authentication required: this connection "
	    "comes from an agent's processes, which act only as that agent: "
	    "map/connect with auth {\"method\": \"%s\", \"credential\": "
	    "$CORRAL_AGENT_TOKEN}", CORRAL_AUTH_AGENT);
	if (id == NULL)
		id = json_null();
	else
		json_incref(id);
	rpc_error(p, id, CORRAL_E_AUTHREQUIRED, msg, NULL);
	json_decref(id);
	p->flags |= PEER_HANGUP;
	return -1;
}

/* The capabilities corral offers, in the SDK's four groups. */
static json_t *
control_capabilities(struct peer *p)
{
	return json_pack("{s:{s:b, s:b}, s:{s:b, s:b, s:b}, "
	    "s:{s:b, s:b, s:b, s:b, s:b}, s:{s:b, s:b}}",
	    "observation", "canObserve", 1, "canQuery", 1,
	    "messaging", "canSend", 1, "canReceive", 1, "canBroadcast", 1,
	    "lifecycle", "canSpawn", 1, "canRegister", p->agent != NULL,
	    "canUnregister", 1, "canSteer", 0, "canStop", 1,
	    "scopes", "canCreateScopes", 1, "canManageScopes", 1);
}

/*
 * The workflow's entries, for a delegate to tell its model which agents
 * it may spawn: [{name, description?, role?}].
 */
static json_t *
control_catalogue(void)
{
	const struct workflow	*wf = control_run.wf;
	json_t			*list = json_array(), *e;
	size_t			 i;

	for (i = 0; wf != NULL && i < wf->nagents; i++) {
		e = json_pack("{s:s}", "name", wf->agents[i].name);
		if (wf->agents[i].description != NULL)
			json_object_set_new(e, "description",
			    json_string(wf->agents[i].description));
		if (wf->agents[i].role != NULL)
			json_object_set_new(e, "role",
			    json_string(wf->agents[i].role));
		json_array_append_new(list, e);
	}
	return list;
}

/*
 * Answer map/connect: an agent's handshake, or a client's greeting.  An
 * agent that connects as MAP's participantType "agent" (the SDK's
 * AgentConnection) is ready once it has registered; any other is ready
 * now.
 */
static void
control_connect(struct peer *p, json_t *id, json_t *params)
{
	struct agent	*a = p->agent;
	json_t		*res, *v, *run, *auth;
	const char	*ptype;

	v = json_object_get(params, "protocolVersion");
	if (v != NULL && (!json_is_integer(v) || json_integer_value(v) !=
	    CORRAL_PROTOCOL_VERSION)) {
		rpc_error(p, id, CORRAL_E_PARAMS, "protocolVersion must be 1",
		    NULL);
		return;
	}
	auth = json_object_get(params, "auth");
	if (auth != NULL && !(p->role & PEER_DELEGATE)) {
		if (control_auth(p, id, auth) != 0)
			return;
		a = p->agent;
	}
	ptype = json_string_value(json_object_get(params, "participantType"));
	v = json_object_get(params, "name");
	if (json_is_string(v) && (p->conn == NULL || p->conn->cname == NULL))
		rpc_conn(p)->cname = xstrndup(json_string_value(v), 128);
	v = json_object_get(json_object_get(params, "disconnectPolicy"),
	    "agentBehavior");
	if (json_is_string(v) && strcmp(json_string_value(v), "orphan") == 0)
		p->flags |= PEER_ORPHAN;
	if (a != NULL && (p->role & PEER_AGENT) && ptype != NULL &&
	    strcmp(ptype, "agent") == 0) {
		p->flags |= PEER_MAPAGENT;
		(void)dialect_switch(a, "map");
	}

	run = json_pack("{s:s, s:s, s:s, s:I, s:I}", "runId",
	    protocol_run_id(), "workflow", control_run.workflow != NULL ?
	    control_run.workflow : "", "mode", control_run.mode != NULL ?
	    control_run.mode : "", "pid", (json_int_t)control_run.pid,
	    "startedAt", (json_int_t)control_run.started_ms);
	if (control_run.path != NULL)
		json_object_set_new(run, "path", json_string(control_run.path));
	if (a != NULL)
		json_object_set_new(run, "agentName",
		    json_string(a->conf->name));
	if (p->role & PEER_DELEGATE)
		json_object_set_new(run, "catalogue", control_catalogue());
	res = json_pack("{s:i, s:s, s:s, s:o, s:{s:s, s:s}, s:{s:o}}",
	    "protocolVersion", CORRAL_PROTOCOL_VERSION,
	    "sessionId", protocol_run_id(),
	    "participantId", p->name,
	    "capabilities", control_capabilities(p),
	    "systemInfo", "name", "corral", "version", CORRAL_VERSION,
	    "_meta", "corral", run);
	if ((p->role & PEER_DELEGATE) && a != NULL)
		json_object_set_new(res, "principal", json_pack("{s:s}", "id",
		    a->id));
	rpc_reply(p, id, res);
	if (!(p->flags & PEER_CONNECTED)) {
		p->flags |= PEER_CONNECTED;
		rpc_conn(p)->since_ms = event_now_ms();
		if (!(p->role & PEER_AGENT)) {
			rpc_peer_add(p);	/* again, after a disconnect */
			control_participant(p, "participant_connected");
		}
	}
	if (a != NULL && (p->role & PEER_AGENT) && lifecycle_handshaking(a) &&
	    !(p->flags & PEER_MAPAGENT)) {
		/* Recorded first: becoming ready dispatches queued work. */
		auditlog_event("handshake", a->id, NULL, NULL);
		lifecycle_ready(a, "handshake");
	}
}

/* Answer ping. */
static void
control_ping(struct peer *p, json_t *id, json_t *params)
{
	rpc_reply(p, id, json_object());
}

/*
 * map/disconnect: a client says goodbye (it closes its side next); an
 * agent is done and stops.  Nothing follows the answer: the peer's
 * subscriptions end first (the SDK forgets them as it sends this, and
 * would warn of each event after it), a client leaves the participants
 * as if it had closed, and frames held back by a batch are dropped.
 */
static void
control_disconnect(struct peer *p, json_t *id, json_t *params)
{
	uint64_t	since = p->conn != NULL && p->conn->since_ms != 0 ?
			    p->conn->since_ms : control_run.started_ms;

	event_peer_gone(p);
	rpc_batch_drop_held(p);
	rpc_reply(p, id, json_pack("{s:{s:s, s:I, s:I}}", "session", "id",
	    protocol_run_id(), "createdAt", (json_int_t)since, "closedAt",
	    (json_int_t)event_now_ms()));
	if (p->agent != NULL && (p->role & PEER_AGENT)) {
		lifecycle_stop(p->agent, "map/disconnect");
		return;
	}
	if (!(p->role & PEER_DELEGATE))
		rpc_peer_remove(p);
	control_gone(p);
}

/*
 * map/agents/register from a delegate: the agent it acts for names
 * itself.  The SDK's AgentConnection.connect() sends it right after
 * map/connect, whatever the transport; corral adds no agent (the
 * credential already said which one it is), keeps the metadata, and
 * answers the agent as corral knows it.  As on the agent's pipe, an
 * agent that waits for its handshake is ready now.
 */
static void
control_register_delegate(struct peer *p, json_t *id, json_t *params)
{
	struct agent	*a = p->agent;
	char		 why[256];

	if (mapview_merge(a, json_object_get(params, "metadata"), why,
	    sizeof why) != 0) {
		rpc_error(p, id, CORRAL_E_PARAMS, why, NULL);
		return;
	}
	rpc_reply(p, id, json_pack("{s:o}", "agent", mapview_describe(a)));
	if (lifecycle_handshaking(a)) {
		auditlog_event("handshake", a->id, NULL, NULL);
		lifecycle_ready(a, "map/agents/register, on the control socket");
	}
}

/*
 * The capabilities an agent registers or updates: corral's list in
 * metadata.capabilities, or MAP's capabilityDescriptor.capabilities.
 * (MAP's params.capabilities are what a participant may do, not this.)
 */
static void
control_capabilities_given(struct agent *a, json_t *params)
{
	json_t	*md = json_object_get(params, "metadata");

	mapview_add_capabilities(a, json_object_get(md, "capabilities"));
	mapview_add_capabilities(a, json_object_get(json_object_get(params,
	    "capabilityDescriptor"), "capabilities"));
}

/*
 * map/agents/register: an agent process registers itself (the SDK's
 * AgentConnection does right after map/connect).  corral started it, so
 * the answer is the agent as corral knows it: its id, not one it asks
 * for.  Its metadata is kept; with ready: handshake it is ready now.
 */
static void
control_register(struct peer *p, json_t *id, json_t *params)
{
	struct agent	*a = p->agent;
	char		 why[256];

	if (p->role & PEER_DELEGATE) {
		control_register_delegate(p, id, params);
		return;
	}
	if (a == NULL) {
		rpc_error(p, id, CORRAL_E_DENIED, "clients cannot add agents: "
		    "corral starts them (map/agents/spawn)", NULL);
		return;
	}
	if (mapview_merge(a, json_object_get(params, "metadata"), why,
	    sizeof why) != 0) {
		rpc_error(p, id, CORRAL_E_PARAMS, why, NULL);
		return;
	}
	control_capabilities_given(a, params);
	rpc_reply(p, id, json_pack("{s:o}", "agent", mapview_describe(a)));
	if (lifecycle_handshaking(a)) {
		auditlog_event("handshake", a->id, NULL, NULL);
		lifecycle_ready(a, "map/agents/register");
	}
}

/*
 * map/agents/unregister: an agent unregistering itself (the SDK does
 * before map/disconnect) changes nothing; a client's unregister stops
 * that agent for good.
 */
static void
control_unregister(struct peer *p, json_t *id, json_t *params)
{
	struct agent	*t = mapview_param_agent(params);

	if (p->agent != NULL && (t == NULL || t == p->agent)) {
		rpc_reply(p, id, json_pack("{s:o}", "agent",
		    mapview_describe(p->agent)));
		return;
	}
	if (p->agent == NULL && !mapview_need_id(p, id, params))
		return;
	if (t == NULL || !mapview_sees(p, t)) {
		rpc_error(p, id, CORRAL_E_NOTFOUND, "agent not found", NULL);
		return;
	}
	if (p->agent != NULL) {
		rpc_error(p, id, CORRAL_E_DENIED, "an agent may unregister only "
		    "itself", NULL);
		return;
	}
	lifecycle_stop(t, "unregistered");
	rpc_reply(p, id, json_pack("{s:o}", "agent", mapview_describe(t)));
}

/*
 * map/agents/update: metadata is merged; a state the agent reports is
 * kept as metadata.reportedState and does not move corral's lifecycle.
 * An agent may update only itself.
 */
static void
control_update(struct peer *p, json_t *id, json_t *params)
{
	struct agent	*t = mapview_param_agent(params);
	json_t		*st;
	char		 why[256];

	if (t == NULL && p->agent != NULL &&
	    json_object_get(params, "agentId") == NULL)
		t = p->agent;
	if (p->agent == NULL && !mapview_need_id(p, id, params))
		return;
	if (t == NULL || !mapview_sees(p, t)) {
		rpc_error(p, id, CORRAL_E_NOTFOUND, "agent not found", NULL);
		return;
	}
	if (p->agent != NULL && t != p->agent) {
		rpc_error(p, id, CORRAL_E_DENIED, "an agent may update only "
		    "itself", NULL);
		return;
	}
	if (mapview_merge(t, json_object_get(params, "metadata"), why,
	    sizeof why) != 0) {
		rpc_error(p, id, CORRAL_E_PARAMS, why, NULL);
		return;
	}
	control_capabilities_given(t, params);
	st = json_object_get(params, "state");
	if (json_is_string(st))
		mapview_report(t, json_string_value(st));
	rpc_reply(p, id, json_pack("{s:o}", "agent", mapview_describe(t)));
}

/* _corral/shutdown: stop the whole run, as SIGTERM would. */
static void
control_shutdown(struct peer *p, json_t *id, json_t *params)
{
	rpc_reply(p, id, json_pack("{s:b}", "stopping", 1));
	log_info("%s: stopping the run", p->name);
	if (control_run.shutdown != NULL)
		control_run.shutdown();
}

/*
 * Check a request's shape: jsonrpc "2.0", a method that is a string, an
 * id we can echo, params structured (an object or an array) when given.
 * Returns 0, or -1 after answering -32600: with the request's id when it
 * could be read, else with null (JSON-RPC answers an invalid request even
 * when it has no id: it cannot be told from a notification).
 */
static int
control_valid(struct peer *p, json_t *j, json_t *id, json_t *method)
{
	json_t		*params = json_object_get(j, "params");
	json_t		*ver = json_object_get(j, "jsonrpc");
	json_t		*nul = json_null();
	const char	*why = NULL;

	if (id != NULL && !json_is_string(id) && !json_is_integer(id) &&
	    !json_is_real(id) && !json_is_null(id)) {
		id = NULL;
		why = "id must be a string, a number or null";
	} else if (!json_is_string(ver) ||
	    strcmp(json_string_value(ver), "2.0") != 0)
		why = "jsonrpc must be \"2.0\"";
	else if (method == NULL)
		why = "a request needs a method";
	else if (!json_is_string(method))
		why = "method must be a string";
	else if (params != NULL && !json_is_object(params) &&
	    !json_is_array(params))
		why = "params must be an object or an array";
	if (why != NULL)
		rpc_error(p, id != NULL ? id : nul, CORRAL_E_INVALID, why, NULL);
	json_decref(nul);
	return why != NULL ? -1 : 0;
}

/* Whether a delegate's agent has a tool that needs this method. */
static int
control_tool_allowed(struct peer *p, const char *method)
{
	size_t	i;

	for (i = 0; i < sizeof control_tools / sizeof control_tools[0]; i++)
		if (strcmp(control_tools[i].method, method) == 0)
			return (p->agent->conf->tools & control_tools[i].tool) !=
			    0;
	return 1;	/* connect, ping, disconnect, its own register... */
}

/*
 * Whether the peer may call a method corral has; else answer why.  A
 * delegate is told which of its agent's tools it lacks (1003); anyone
 * else, that there is no such method for it (-32601).
 */
static int
control_allowed(struct peer *p, json_t *id, const struct control_method *cm)
{
	char	msg[256];

	if (p->role == 0) {
		/* A delegate whose agent is gone (control_forget). */
		rpc_error(p, id, CORRAL_E_DENIED, "the agent this connection "
		    "acted for is gone: it may call nothing more", NULL);
		return 0;
	}
	if (!(p->role & PEER_DELEGATE)) {
		if (cm->who & p->role)
			return 1;
		snprintf(msg, sizeof msg, "Method not found: %s is for %s",
		    cm->name, (cm->who & ALL) == PEER_CLIENT ? "clients of the "
		    "control socket" : "agents");
		rpc_error(p, id, CORRAL_E_NOMETHOD, msg, NULL);
		return 0;
	}
	if (!(cm->who & PEER_DELEGATE)) {
		snprintf(msg, sizeof msg, "%s is not for a connection acting "
		    "for agent %s", cm->name, p->agent != NULL ? p->agent->id :
		    "(gone)");
		rpc_error(p, id, CORRAL_E_DENIED, msg, NULL);
		return 0;
	}
	if (p->agent != NULL && !control_tool_allowed(p, cm->name)) {
		snprintf(msg, sizeof msg, "%s is not among the tools of agent "
		    "%s (tools: %s)", cm->name, p->agent->id,
		    adapter_tools_list(p->agent));
		rpc_error(p, id, CORRAL_E_DENIED, msg, NULL);
		return 0;
	}
	return 1;
}

/*
 * Handle one request, notification or response (j, any JSON value) from
 * a peer.  In the order JSON-RPC implies: an invalid request (-32600),
 * then an unknown method (-32601), then who may call it, then positional
 * params (-32602: corral's methods take named ones).
 */
static void
control_one(struct peer *p, json_t *j)
{
	const struct control_method	*cm;
	json_t				*id, *method, *nul;
	char				 msg[256];

	if (!json_is_object(j)) {
		nul = json_null();
		rpc_error(p, nul, CORRAL_E_INVALID, "a request must be a JSON "
		    "object", NULL);
		json_decref(nul);
		return;
	}
	id = json_object_get(j, "id");
	method = json_object_get(j, "method");
	if (method == NULL && (json_object_get(j, "result") != NULL ||
	    json_object_get(j, "error") != NULL))
		return;		/* a response: to our ping, say */
	if (control_valid(p, j, id, method) != 0)
		return;
	if ((p->flags & PEER_INSIDE) && !(p->role & PEER_DELEGATE) &&
	    control_inside(p, id, json_string_value(method),
	    json_object_get(j, "params")) != 0)
		return;
	if ((cm = control_find(json_string_value(method))) == NULL) {
		/* A notification we do not know (map/subscribe.ack) gets
		 * nothing, as JSON-RPC says: rpc_error sends nothing. */
		snprintf(msg, sizeof msg, "Method not found: %.100s",
		    json_string_value(method));
		rpc_error(p, id, CORRAL_E_NOMETHOD, msg, NULL);
		return;
	}
	/*
	 * A query whose answer can no longer reach its peer (an agent whose
	 * stdin corral has closed to stop it) is not run: each answer can be
	 * as large as the run's agent list, and a stopping agent's pipe can
	 * still hold a thousand of them, all read while it drains.
	 */
	if ((cm->who & CONTROL_QUERY) && rpc_deaf(p)) {
		control_warn_refused("%s: %s not answered: corral no longer "
		    "writes to it", p->name, cm->name);
		return;
	}
	if (!control_allowed(p, id, cm))
		return;
	if (json_is_array(json_object_get(j, "params"))) {
		snprintf(msg, sizeof msg, "%s takes named params (an object), "
		    "not an array", cm->name);
		rpc_error(p, id, CORRAL_E_PARAMS, msg, NULL);
		return;
	}
	cm->fn(p, id, json_object_get(j, "params"));
}

/*
 * A request of a batch whose answers already take CONTROL_BATCH_BYTES:
 * refused as the resource it would take (4000, retryable), not run.  A
 * notification gets nothing, as ever.
 */
static void
control_batch_full(struct peer *p, json_t *v)
{
	json_t	*id = json_object_get(v, "id"), *nul = json_null();
	char	 msg[160];

	if (!json_is_object(v) || (id != NULL && !json_is_string(id) &&
	    !json_is_number(id)))
		id = nul;
	snprintf(msg, sizeof msg, "the batch's answers so far take more than "
	    "%u bytes: this request was not run; send it again in another "
	    "batch", CONTROL_BATCH_BYTES);
	rpc_error(p, id, CORRAL_E_EXHAUSTED, msg, NULL);
	json_decref(nul);
}

/*
 * A batch: each member is handled as a frame of its own, and the answers
 * go back as one array (none at all when every member was a
 * notification).  An empty batch, or one larger than CONTROL_MAX_BATCH,
 * is one invalid request.
 */
static void
control_batch(struct peer *p, json_t *j)
{
	json_t	*v, *nul;
	size_t	 i, n = json_array_size(j);
	char	 msg[128];

	if (n == 0 || n > CONTROL_MAX_BATCH) {
		if (n == 0)
			snprintf(msg, sizeof msg, "a batch must not be empty");
		else
			snprintf(msg, sizeof msg, "a batch holds %zu requests, "
			    "more than %u", n, CONTROL_MAX_BATCH);
		nul = json_null();
		rpc_error(p, nul, CORRAL_E_INVALID, msg, NULL);
		json_decref(nul);
		return;
	}
	rpc_batch_begin(p);
	json_array_foreach(j, i, v) {
		if (rpc_batch_bytes(p) <= CONTROL_BATCH_BYTES)
			control_one(p, v);
		else
			control_batch_full(p, v);
	}
	rpc_batch_end(p);
}

/*
 * The frame holds too many values to be made a tree of: -32600, with the
 * request's id when it is a plain value at the top.
 */
static void
control_too_big(struct peer *p, struct jscan *js, const char *line)
{
	json_t	*id = NULL;
	char	 msg[128];
	int	 t;

	snprintf(msg, sizeof msg, "a frame holds %zu JSON values, more than %u",
	    js->nvals, CONTROL_MAX_VALUES);
	log_warnx("%s: control frame: %s", p->name, msg);
	if (js->tok[0].type == JT_OBJECT &&
	    (t = JSCAN_GET(js, line, 0, "id")) != -1 &&
	    js->tok[t].type != JT_OBJECT && js->tok[t].type != JT_ARRAY)
		id = json_loadb(line + js->tok[t].off, js->tok[t].len,
		    JSON_DECODE_ANY, NULL);
	if (id == NULL)
		id = json_null();
	rpc_error(p, id, CORRAL_E_INVALID, msg, NULL);
	json_decref(id);
}

/*
 * Whether a line jscan refused is valid JSON all the same: a number, a
 * string, true, false or null (jscan takes only objects and arrays).
 */
static int
control_scalar(const char *line, size_t len)
{
	json_t	*v;
	size_t	 i = 0;

	while (i < len && (line[i] == ' ' || line[i] == '\t' ||
	    line[i] == '\r'))
		i++;
	if (i == len || line[i] == '{' || line[i] == '[')
		return 0;
	if ((v = json_loadb(line, len, JSON_DECODE_ANY, NULL)) == NULL)
		return 0;
	json_decref(v);
	return 1;
}

/*
 * Handle one line of JSON-RPC from a peer: a request, a notification, a
 * response, or a batch of them.  A line that is not JSON is -32700, and
 * valid JSON that is neither an object nor an array -32600, both with id
 * null.
 */
void
control_frame(struct peer *p, const char *line, size_t len)
{
	struct jscan	*js;
	json_error_t	 e;
	json_t		*j, *nul;
	char		 msg[256];

	/*
	 * Scan it before jansson builds a tree of it: jscan accepts what
	 * jansson does, without the tree, so a frame that is not JSON or
	 * holds too many values costs no more than its bytes.
	 */
	js = jscan_take();
	if (jscan_run(js, line, len) != 0 || js->nvals > CONTROL_MAX_VALUES) {
		if (js->err != NULL && control_scalar(line, len)) {
			nul = json_null();
			rpc_error(p, nul, CORRAL_E_INVALID, "a request must be a "
			    "JSON object (or a batch: an array of them)", NULL);
			json_decref(nul);
		} else if (js->err != NULL) {
			snprintf(msg, sizeof msg, "parse error: %s at byte %zu",
			    js->err, js->err_off);
			/* An agent's, and stdin's, the dialect logs (rate-limited). */
			if (p->flags & PEER_SOCKET)
				log_warnx("%s: control frame: %s", p->name, msg);
			nul = json_null();
			rpc_error(p, nul, CORRAL_E_PARSE, msg, NULL);
			json_decref(nul);
		} else
			control_too_big(p, js, line);
		jscan_give(js);
		return;
	}
	jscan_give(js);
	if ((j = json_loadb(line, len, CORRAL_JSON_LOAD | JSON_DECODE_ANY,
	    &e)) == NULL) {
		snprintf(msg, sizeof msg, "parse error: %s", e.text);
		log_warnx("%s: control frame: %s", p->name, msg);
		nul = json_null();
		rpc_error(p, nul, CORRAL_E_PARSE, msg, NULL);
		json_decref(nul);
		return;
	}
	if (json_is_array(j))
		control_batch(p, j);
	else
		control_one(p, j);
	json_decref(j);
}
