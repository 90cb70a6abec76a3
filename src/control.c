/*
 * Control frames on an agent's pipes: JSON-RPC 2.0 with MAP method names.
 *
 * Control frames are rare next to envelopes, so they are parsed with
 * jansson.  An agent may send map/connect (its handshake), ping,
 * map/disconnect, and the sub-agent methods map/agents/spawn, map/send,
 * map/agents/stop, map/agents/list and map/agents/get; corral sends ping
 * for heartbeats.  A request gets exactly one response, with its id echoed
 * as the same JSON type; a bad frame gets a JSON-RPC error and the next
 * line is read as usual.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

/* Write a JSON-RPC frame to an agent. */
void
control_send(struct agent *a, json_t *frame)
{
	char	*s;

	if (frame == NULL || (s = json_dumps(frame, CORRAL_JSON_FLAGS)) == NULL) {
		log_warnx("agent %s: a control frame could not be built",
		    a->id);
		return;
	}
	agent_send(a, s, strlen(s));
	free(s);
}

/* Answer request id with a result (stolen reference). */
void
control_reply(struct agent *a, json_t *id, json_t *result)
{
	json_t	*f;

	if (id == NULL) {
		json_decref(result);
		return;		/* a notification gets no answer */
	}
	f = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result",
	    result);
	control_send(a, f);
	if (f != NULL)
		json_decref(f);
}

/*
 * Answer request id with an error: a code, a message, and data naming the
 * category (seed 001) and whether a retry may help.
 */
void
control_reply_error(struct agent *a, json_t *id, int code, const char *msg,
    const char *category)
{
	json_t	*f;
	int	 retryable = category != NULL &&
	    (strcmp(category, "TIMEOUT") == 0 ||
	    strcmp(category, "UNAVAILABLE") == 0);

	if (id == NULL)
		return;
	/* msg may quote the peer's bytes, cut anywhere: keep it valid. */
	f = json_pack("{s:s, s:O, s:{s:i, s:o, s:{s:s, s:b}}}", "jsonrpc",
	    "2.0", "id", id, "error", "code", code, "message",
	    util_json_text(msg, strlen(msg)), "data", "category",
	    category != NULL ? category : "REJECTED", "retryable", retryable);
	control_send(a, f);
	if (f != NULL)
		json_decref(f);
}

/* Send a heartbeat ping. */
void
control_ping(struct agent *a)
{
	char	buf[96];
	int	n;

	if (a->io.wfd == -1)
		return;
	if (a->adapter != NULL) {
		/* Only the adapter knows how its tool is pinged, if at all. */
		if (a->adapter->ops->ping != NULL)
			a->adapter->ops->ping(a);
		return;
	}
	n = snprintf(buf, sizeof buf, "{\"jsonrpc\":\"2.0\",\"id\":%llu,"
	    "\"method\":\"ping\"}", (unsigned long long)++a->hb_seq);
	agent_send(a, buf, (size_t)n);
}

/* Answer map/connect: the agent's handshake. */
static void
control_connect(struct agent *a, json_t *id, json_t *params)
{
	json_t	*res;

	res = json_pack("{s:i, s:s, s:s, s:{s:b, s:b, s:b, s:b}, "
	    "s:{s:s, s:s, s:s}}",
	    "protocolVersion", CORRAL_PROTOCOL_VERSION,
	    "sessionId", protocol_run_id(),
	    "participantId", a->id,
	    "capabilities", "canSpawn", 1, "canSend", 1, "canReceive", 1,
	    "canQuery", 1,
	    "systemInfo", "name", "corral", "version", CORRAL_VERSION,
	    "agentName", a->conf->name);
	control_reply(a, id, res);
	if (a->flags & AGENT_NOT_READY) {
		/* Recorded first: becoming ready dispatches queued work. */
		auditlog_event("handshake", a->id, NULL, NULL);
		a->flags &= ~AGENT_NOT_READY;
		lifecycle_event(a, AE_HANDSHAKE, "handshake");
		/* Heartbeats count from readiness: a slow start is no miss. */
		lifecycle_heartbeat_start(a);
	}
}

/* Handle one JSON-RPC frame from an agent. */
void
control_agent_frame(struct agent *a, const char *line, size_t len)
{
	json_error_t	 e;
	json_t		*j, *id, *method, *params, *ver;
	const char	*m;

	if ((j = json_loadb(line, len, CORRAL_JSON_LOAD, &e)) == NULL) {
		/* The scanner accepted it; jansson must too. */
		log_warnx("agent %s: control frame: %s", a->id, e.text);
		return;
	}
	id = json_object_get(j, "id");
	method = json_object_get(j, "method");
	params = json_object_get(j, "params");
	ver = json_object_get(j, "jsonrpc");
	if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0) {
		control_reply_error(a, id, CORRAL_E_INVALID, "jsonrpc must be "
		    "\"2.0\"", "REJECTED");
		goto out;
	}
	if (method == NULL) {
		if (json_object_get(j, "result") != NULL ||
		    json_object_get(j, "error") != NULL) {
			/* A response: to our ping, or to an adapter's call. */
			if (a->adapter != NULL)
				adapter_response(a, j);
			goto out;
		}
		control_reply_error(a, id, CORRAL_E_INVALID, "a request needs "
		    "a method", "REJECTED");
		goto out;
	}
	if (!json_is_string(method)) {
		control_reply_error(a, id, CORRAL_E_INVALID, "method must be a "
		    "string", "REJECTED");
		goto out;
	}
	if (id != NULL && !json_is_string(id) && !json_is_integer(id) &&
	    !json_is_real(id) && !json_is_null(id)) {
		/* JSON-RPC: an id we cannot echo is answered with null. */
		json_t *nul = json_null();
		control_reply_error(a, nul, CORRAL_E_INVALID, "id must be a "
		    "string, a number or null", "REJECTED");
		json_decref(nul);
		goto out;
	}
	if (params != NULL && !json_is_object(params) &&
	    !json_is_array(params)) {
		control_reply_error(a, id, CORRAL_E_PARAMS, "params must be an "
		    "object", "REJECTED");
		goto out;
	}
	m = json_string_value(method);
	if (strcmp(m, CORRAL_M_CONNECT) == 0)
		control_connect(a, id, params);
	else if (strcmp(m, CORRAL_M_PING) == 0)
		control_reply(a, id, json_object());
	else if (strcmp(m, CORRAL_M_DISCONNECT) == 0) {
		control_reply(a, id, json_object());
		lifecycle_stop(a, "map/disconnect");
	} else if (subagent_method(a, m, id, params) == 0)
		;
	else if (id != NULL) {
		char msg[160];

		snprintf(msg, sizeof msg, "method not found: %.100s", m);
		control_reply_error(a, id, CORRAL_E_NOMETHOD, msg, "REJECTED");
	}
out:
	json_decref(j);
}
