/*
 * Control frames: JSON-RPC 2.0 with MAP method names, from an agent on
 * its pipes or from a client (corral serve's stdin).
 *
 * Control frames are rare next to envelopes, so they are parsed with
 * jansson.  One table names every method, who may call it, and its
 * handler; a request gets exactly one response, a bad frame gets a
 * JSON-RPC error, and the next line is read as usual.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

static void	control_connect(struct peer *, json_t *, json_t *);
static void	control_ping(struct peer *, json_t *, json_t *);
static void	control_disconnect(struct peer *, json_t *, json_t *);

#define BOTH	(PEER_AGENT | PEER_CLIENT)

static const struct control_method control_methods[] = {
	{ CORRAL_M_CONNECT,	BOTH,		control_connect },
	{ CORRAL_M_PING,	BOTH,		control_ping },
	{ CORRAL_M_DISCONNECT,	PEER_AGENT,	control_disconnect },
	{ CORRAL_M_SPAWN,	PEER_AGENT,	subagent_spawn },
	{ CORRAL_M_SEND,	PEER_AGENT,	subagent_send },
	{ CORRAL_M_STOP,	PEER_AGENT,	subagent_stop },
	{ CORRAL_M_SUSPEND,	PEER_AGENT,	subagent_suspend },
	{ CORRAL_M_RESUME,	PEER_AGENT,	subagent_resume },
	{ CORRAL_M_LIST,	PEER_AGENT,	subagent_list },
	{ CORRAL_M_GET,		PEER_AGENT,	subagent_get },
};

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

/* Answer map/connect: an agent's handshake, or a client's greeting. */
static void
control_connect(struct peer *p, json_t *id, json_t *params)
{
	struct agent	*a = p->agent;
	json_t		*res;

	res = json_pack("{s:i, s:s, s:s, s:{s:b, s:b, s:b, s:b}, "
	    "s:{s:s, s:s}}",
	    "protocolVersion", CORRAL_PROTOCOL_VERSION,
	    "sessionId", protocol_run_id(),
	    "participantId", p->name,
	    "capabilities", "canSpawn", a != NULL, "canSend", a != NULL,
	    "canReceive", 1, "canQuery", a != NULL,
	    "systemInfo", "name", "corral", "version", CORRAL_VERSION);
	if (a != NULL)
		json_object_set_new(json_object_get(res, "systemInfo"),
		    "agentName", json_string(a->conf->name));
	rpc_reply(p, id, res);
	if (a != NULL && lifecycle_handshaking(a)) {
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

/* map/disconnect: the agent is done and stops. */
static void
control_disconnect(struct peer *p, json_t *id, json_t *params)
{
	rpc_reply(p, id, json_object());
	lifecycle_stop(p->agent, "map/disconnect");
}

/*
 * Check a frame's envelope: jsonrpc "2.0", a method that is a string, an
 * id we can echo, params an object.  Returns 0, or -1 after answering.
 */
static int
control_valid(struct peer *p, json_t *j, json_t *id, json_t *method)
{
	json_t	*params = json_object_get(j, "params");
	json_t	*ver = json_object_get(j, "jsonrpc");

	if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0) {
		rpc_error(p, id, CORRAL_E_INVALID, "jsonrpc must be \"2.0\"",
		    "REJECTED");
		return -1;
	}
	if (method == NULL) {
		rpc_error(p, id, CORRAL_E_INVALID, "a request needs a method",
		    "REJECTED");
		return -1;
	}
	if (!json_is_string(method)) {
		rpc_error(p, id, CORRAL_E_INVALID, "method must be a string",
		    "REJECTED");
		return -1;
	}
	if (id != NULL && !json_is_string(id) && !json_is_integer(id) &&
	    !json_is_real(id) && !json_is_null(id)) {
		/* JSON-RPC: an id we cannot echo is answered with null. */
		json_t *nul = json_null();

		rpc_error(p, nul, CORRAL_E_INVALID, "id must be a string, a "
		    "number or null", "REJECTED");
		json_decref(nul);
		return -1;
	}
	if (params != NULL && !json_is_object(params) &&
	    !json_is_array(params)) {
		rpc_error(p, id, CORRAL_E_PARAMS, "params must be an object",
		    "REJECTED");
		return -1;
	}
	return 0;
}

/* Handle one JSON-RPC frame from a peer (the scanner accepted it). */
void
control_frame(struct peer *p, const char *line, size_t len)
{
	const struct control_method	*cm;
	json_error_t			 e;
	json_t				*j, *id, *method;
	char				 msg[160];

	if ((j = json_loadb(line, len, CORRAL_JSON_LOAD, &e)) == NULL) {
		log_warnx("%s: control frame: %s", p->name, e.text);
		return;
	}
	id = json_object_get(j, "id");
	method = json_object_get(j, "method");
	if (method == NULL && (json_object_get(j, "result") != NULL ||
	    json_object_get(j, "error") != NULL))
		goto out;	/* a response: to our ping, say */
	if (control_valid(p, j, id, method) != 0)
		goto out;
	cm = control_find(json_string_value(method));
	if (cm == NULL || !(cm->who & p->role)) {
		snprintf(msg, sizeof msg, "method not found: %.100s",
		    json_string_value(method));
		rpc_error(p, id, CORRAL_E_NOMETHOD, msg, "REJECTED");
		goto out;
	}
	cm->fn(p, id, json_object_get(j, "params"));
out:
	json_decref(j);
}
