/*
 * JSON-RPC 2.0 frames to a peer: an agent on its pipes, or a client.
 *
 * A request gets exactly one response, with its id echoed as the same
 * JSON type; a notification (no id) gets none.  Errors carry a code, a
 * message, and data naming MAP's category of the code and whether trying
 * again may help (the SDK's ERROR_CODES and its MAPRequestError helpers:
 * docs/protocol.md).  Frames are built with jansson: the control plane is
 * rare next to envelopes.
 *
 * A batch (an array of requests) gets one array of answers: while one is
 * handled, answers are gathered into it, and anything else for the peer
 * (events, messages) waits until the array is written, so that a
 * subscription's answer still comes before its events.
 *
 * The participants that are not agents (clients) are listed here too, so
 * that a message can be addressed to one by its participantId.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

/* A batch being handled: its answers, and the frames held for after them. */
struct peer_batch {
	struct jsonw	 answers;
	json_t		*held;
};

static TAILQ_HEAD(, peer) rpc_peers = TAILQ_HEAD_INITIALIZER(rpc_peers);
static rpc_agent_cb	 rpc_agent_hook;

/*
 * Register who writes frames for agents on their pipes (dialect.c): an
 * agent's dialect may say them its own way.
 */
void
rpc_on_agent(rpc_agent_cb cb)
{
	rpc_agent_hook = cb;
}

/* Return nonzero if the frame went to an agent through its dialect. */
static int
rpc_agent_wrote(struct peer *p, const char *s, size_t len)
{
	return p->agent != NULL && (p->role & PEER_AGENT) &&
	    rpc_agent_hook != NULL && rpc_agent_hook(p->agent, s, len);
}

/* Write a frame to a peer (a borrowed reference). */
void
rpc_send(struct peer *p, json_t *frame)
{
	char	*s;

	if (frame == NULL || (s = jsonw_dumps(frame, CORRAL_JSON_FLAGS)) ==
	    NULL) {
		log_warnx("%s: a control frame could not be built", p->name);
		return;
	}
	rpc_send_text(p, s, strlen(s));
	free(s);
}

/* Write a frame already serialized (by the JSON writer) to a peer. */
void
rpc_send_text(struct peer *p, const char *s, size_t len)
{
	int	wrote;

	if (p->batch != NULL) {
		json_array_append_new(p->batch->held, json_stringn(s, len));
		return;
	}
	/* Its dialect wrote it (and counted it): the same pressure holds. */
	wrote = rpc_agent_wrote(p, s, len);

	if (p->chan != NULL) {
		if (!wrote)
			chan_write_line(p->chan, s, len);
		/*
		 * A peer that sends requests and does not read the answers
		 * would grow our memory: stop reading it (and whoever made
		 * this answer) until it reads them.
		 */
		if (chan_full(p->chan))
			chan_block(chan_source(), p->chan);
	}
}

/*
 * Write an event notification to a peer.  Unlike an answer it never stops
 * anyone's reading: the event module drops events for a peer that does
 * not read them.
 */
void
rpc_send_event(struct peer *p, const char *s, size_t len)
{
	if (p->batch != NULL) {
		json_array_append_new(p->batch->held, json_stringn(s, len));
		return;
	}
	if (rpc_agent_wrote(p, s, len))
		return;
	if (p->chan != NULL)
		chan_write_line(p->chan, s, len);
}

/*
 * Write an answer (a stolen reference), or add it, as text, to the
 * batch's: the text is what the batch costs (rpc_batch_bytes).
 */
static void
rpc_answer(struct peer *p, json_t *f)
{
	char	*s;

	if (p->batch != NULL && f != NULL) {
		if ((s = jsonw_dumps(f, CORRAL_JSON_FLAGS)) != NULL)
			jsonw_raw(&p->batch->answers, s, strlen(s));
		else
			log_warnx("%s: a control frame could not be built",
			    p->name);
		free(s);
		json_decref(f);
		return;
	}
	rpc_send(p, f);
	json_decref(f);
}

/*
 * Write an answer already serialized (by the JSON writer: map/replay's),
 * or add it to the batch's.
 */
void
rpc_reply_text(struct peer *p, const char *s, size_t len)
{
	if (p->batch != NULL)
		jsonw_raw(&p->batch->answers, s, len);
	else
		rpc_send_text(p, s, len);
}

/* A peer's connection record, to write: made now if it had none. */
struct peer_conn *
rpc_conn(struct peer *p)
{
	if (p->conn == NULL)
		p->conn = xcalloc(1, sizeof *p->conn);
	return p->conn;
}

/* Forget a peer's connection record: the peer goes. */
void
rpc_conn_free(struct peer *p)
{
	if (p->conn == NULL)
		return;
	free(p->conn->cname);
	free(p->conn);
	p->conn = NULL;
}

/* Whose processes a connection comes from, or NULL. */
struct agent *
rpc_origin(const struct peer *p)
{
	return p->conn != NULL ? p->conn->origin : NULL;
}

/* A delegate's own participantId, or NULL. */
const char *
rpc_own_name(const struct peer *p)
{
	return p->conn != NULL ? p->conn->own_name : NULL;
}

/* A batch begins: its answers are gathered, other frames held. */
void
rpc_batch_begin(struct peer *p)
{
	p->batch = xcalloc(1, sizeof *p->batch);
	jsonw_init(&p->batch->answers);
	jsonw_array(&p->batch->answers);
	p->batch->held = json_array();
}

/* Is a batch of this peer's being handled (its answers gathered)? */
int
rpc_batching(const struct peer *p)
{
	return p->batch != NULL;
}

/* How many bytes the answers of the batch being handled take so far. */
size_t
rpc_batch_bytes(const struct peer *p)
{
	return p->batch != NULL ?
	    ndjson_writer_queued(&p->batch->answers.w) : 0;
}

/*
 * The batch is done: its answers go as one array (nothing when it held
 * only notifications, as JSON-RPC says), then what was held.
 */
void
rpc_batch_end(struct peer *p)
{
	struct peer_batch	*batch = p->batch;
	json_t			*held = batch->held, *v;
	char			*s;
	size_t			 i, len;

	p->batch = NULL;
	jsonw_array_end(&batch->answers);
	s = jsonw_finish(&batch->answers, &len);
	if (len > 2)	/* more than "[]" */
		rpc_send_text(p, s, len);
	free(s);
	free(batch);
	json_array_foreach(held, i, v)
		rpc_send_text(p, json_string_value(v), json_string_length(v));
	json_decref(held);
}

/* Frames held for after the batch are dropped: the peer said goodbye. */
void
rpc_batch_drop_held(struct peer *p)
{
	if (p->batch != NULL)
		json_array_clear(p->batch->held);
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
	rpc_answer(p, f);
}

/* MAP's category of an error code (the SDK's ErrorCategory). */
const char *
rpc_category(int code)
{
	if (code == CORRAL_E_INTERNAL)
		return "internal";
	if (code <= -32000 && code >= -32768)
		return "protocol";
	if (code >= 1000 && code < 2000)
		return "auth";
	if (code >= 2000 && code < 3000)
		return "routing";
	if (code >= 3000 && code < 4000)
		return "agent";
	if (code >= 4000 && code < 5000)
		return "resource";
	if (code >= 5000 && code < 6000)
		return "federation";
	return "internal";
}

/*
 * Whether trying again may help, as the SDK's helpers say for each code:
 * TOKEN_EXPIRED, DELIVERY_FAILED, NOT_RESPONDING, EXHAUSTED and
 * RATE_LIMITED.
 */
int
rpc_retryable(int code)
{
	return code == 1002 || code == CORRAL_E_DELIVERY || code == 3002 ||
	    code == CORRAL_E_EXHAUSTED || code == 4001;
}

/*
 * Answer request id with an error: a code, a message (which may quote
 * the peer's bytes, cut anywhere: it is made valid UTF-8), and data
 * naming the category and whether a retry may help, with corral's own
 * details (a stolen reference, or NULL).
 */
void
rpc_error(struct peer *p, json_t *id, int code, const char *msg,
    json_t *details)
{
	json_t	*f, *data;

	if (id == NULL) {
		json_decref(details);
		return;
	}
	data = json_pack("{s:s, s:b}", "category", rpc_category(code),
	    "retryable", rpc_retryable(code));
	if (details != NULL)
		json_object_set_new(data, "details", details);
	f = json_pack("{s:s, s:O, s:{s:i, s:o, s:o}}", "jsonrpc", "2.0", "id",
	    id, "error", "code", code, "message", jsonw_text(msg, strlen(msg)),
	    "data", data);
	rpc_answer(p, f);
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

/* List a participant that is not an agent (a client). */
void
rpc_peer_add(struct peer *p)
{
	if (p->flags & PEER_LISTED)
		return;
	TAILQ_INSERT_TAIL(&rpc_peers, p, entry);
	p->flags |= PEER_LISTED;
}

/* Take a participant off the list: it is going away. */
void
rpc_peer_remove(struct peer *p)
{
	if (!(p->flags & PEER_LISTED))
		return;
	TAILQ_REMOVE(&rpc_peers, p, entry);
	p->flags &= ~PEER_LISTED;
}

/*
 * Find a listed participant by its participantId.  A delegate, named
 * after its agent, is not found: a message to the agent goes to the agent.
 */
struct peer *
rpc_peer_find(const char *name)
{
	struct peer	*p;

	TAILQ_FOREACH(p, &rpc_peers, entry)
		if (!(p->role & PEER_DELEGATE) && strcmp(p->name, name) == 0)
			return p;
	return NULL;
}

/* The first listed participant (then rpc_peer_next), or NULL. */
struct peer *
rpc_peer_first(void)
{
	return TAILQ_FIRST(&rpc_peers);
}

/* The listed participant after p, or NULL. */
struct peer *
rpc_peer_next(struct peer *p)
{
	return TAILQ_NEXT(p, entry);
}

/* Return nonzero if frames written to p now would only pile up. */
int
rpc_full(const struct peer *p)
{
	return p->chan == NULL || p->chan->wfd == -1 ||
	    (p->chan->flags & CHAN_WCLOSED) || chan_full(p->chan);
}

/* Return nonzero if nothing written to p now would reach it. */
int
rpc_deaf(const struct peer *p)
{
	return p->chan == NULL || p->chan->wfd == -1 ||
	    (p->chan->flags & CHAN_WCLOSED);
}

/* Skip white space; returns the next position. */
static size_t
rpc_ws(const char *p, size_t i, size_t len)
{
	while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' ||
	    p[i] == '\r'))
		i++;
	return i;
}

/* Skip a string that starts at i (a '"'); returns its end, or len. */
static size_t
rpc_skip_string(const char *p, size_t i, size_t len)
{
	for (i++; i < len; i++) {
		if (p[i] == '\\')
			i++;
		else if (p[i] == '"')
			return i + 1;
	}
	return len;
}

/* Skip a value that starts at i; returns its end, or len if cut off. */
static size_t
rpc_skip_value(const char *p, size_t i, size_t len)
{
	int	depth = 0;

	if (i < len && p[i] == '"')
		return rpc_skip_string(p, i, len);
	for (; i < len; i++) {
		if (p[i] == '"') {
			i = rpc_skip_string(p, i, len) - 1;
			continue;
		}
		if (p[i] == '{' || p[i] == '[')
			depth++;
		else if (p[i] == '}' || p[i] == ']') {
			if (depth == 0)
				return i;
			if (--depth == 0)
				return i + 1;
		} else if (depth == 0 && (p[i] == ',' || p[i] == ' ' ||
		    p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
			return i;
	}
	return len;
}

/*
 * The id of a JSON-RPC frame known only by its first bytes (a line too
 * long, dropped): its top-level member "id", when that is a string, a
 * number or null and lies whole within them.  A new reference, or NULL.
 * So a refusal can still be matched to its request.
 */
json_t *
rpc_prefix_id(const char *p, size_t len)
{
	size_t	 i, k, kend, v;
	json_t	*id;

	if ((i = rpc_ws(p, 0, len)) >= len || p[i] != '{')
		return NULL;
	for (i++;;) {
		if ((i = rpc_ws(p, i, len)) >= len || p[i] != '"')
			return NULL;
		k = i;
		if ((kend = i = rpc_skip_string(p, i, len)) >= len)
			return NULL;
		if ((i = rpc_ws(p, i, len)) >= len || p[i] != ':')
			return NULL;
		v = rpc_ws(p, i + 1, len);
		if ((i = rpc_skip_value(p, v, len)) >= len)
			return NULL;
		if (kend - k != 4 || memcmp(p + k, "\"id\"", 4) != 0)
			goto next;
		id = json_loadb(p + v, i - v, JSON_DECODE_ANY, NULL);
		if (json_is_string(id) || json_is_number(id) || json_is_null(id))
			return id;
		json_decref(id);
		return NULL;
next:
		if ((i = rpc_ws(p, i, len)) >= len || p[i] != ',')
			return NULL;
		i++;
	}
}
