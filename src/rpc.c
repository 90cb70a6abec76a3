/*
 * JSON-RPC 2.0 frames to a peer: an agent on its pipes, or a client.
 *
 * A request gets exactly one response, with its id echoed as the same
 * JSON type; a notification (no id) gets none.  Errors carry a code, a
 * message, and data naming the category (TIMEOUT, UNAVAILABLE, REJECTED,
 * INTERNAL) and whether trying again may help.  Frames are built with
 * jansson: the control plane is rare next to envelopes.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

/* Write a frame to a peer (a borrowed reference). */
void
rpc_send(struct peer *p, json_t *frame)
{
	char	*s;

	if (frame == NULL || (s = json_dumps(frame, CORRAL_JSON_FLAGS)) ==
	    NULL) {
		log_warnx("%s: a control frame could not be built", p->name);
		return;
	}
	if (p->chan != NULL) {
		chan_write_line(p->chan, s, strlen(s));
		/*
		 * A peer that sends requests and does not read the answers
		 * would grow our memory: stop reading it (and whoever made
		 * this answer) until it reads them.
		 */
		if (chan_full(p->chan))
			chan_block(chan_source(), p->chan);
	}
	if (p->agent != NULL)
		p->agent->proc.msgs_in++;
	free(s);
}

/* Answer request id with a result (stolen reference). */
void
rpc_reply(struct peer *p, json_t *id, json_t *result)
{
	json_t	*f;

	if (id == NULL) {
		json_decref(result);
		return;		/* a notification gets no answer */
	}
	f = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result",
	    result);
	rpc_send(p, f);
	json_decref(f);
}

/*
 * Answer request id with an error: a code, a message (which may quote
 * the peer's bytes, cut anywhere: it is made valid UTF-8), and data
 * naming the category and whether a retry may help.
 */
void
rpc_error(struct peer *p, json_t *id, int code, const char *msg,
    const char *category)
{
	json_t	*f;
	int	 retryable;

	if (id == NULL)
		return;
	if (category == NULL)
		category = "REJECTED";
	retryable = strcmp(category, "TIMEOUT") == 0 ||
	    strcmp(category, "UNAVAILABLE") == 0;
	f = json_pack("{s:s, s:O, s:{s:i, s:o, s:{s:s, s:b}}}", "jsonrpc",
	    "2.0", "id", id, "error", "code", code, "message",
	    jsonw_text(msg, strlen(msg)), "data", "category", category,
	    "retryable", retryable);
	rpc_send(p, f);
	json_decref(f);
}

/* Send a notification (params: a stolen reference, or NULL). */
void
rpc_notify(struct peer *p, const char *method, json_t *params)
{
	json_t	*f;

	f = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", method);
	if (params != NULL)
		json_object_set_new(f, "params", params);
	rpc_send(p, f);
	json_decref(f);
}

/* Send a heartbeat ping; its answer is any sign of life. */
void
rpc_ping(struct peer *p)
{
	json_t	*f;

	if (p->chan == NULL || p->chan->wfd == -1)
		return;
	f = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id",
	    (json_int_t)++p->ping_seq, "method", CORRAL_M_PING);
	rpc_send(p, f);
	json_decref(f);
}
