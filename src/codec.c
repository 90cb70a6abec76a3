/*
 * Codecs for agents that speak another envelope than multiagent-1.0: the
 * collaboration bus (codec-bus.c) and AgentMessage (codec-agentmessage.c),
 * chosen per entry with protocol: (docs/dialects.md).
 *
 * A codec translates whole lines, both ways, and nothing else: a line the
 * agent writes becomes zero or more lines in corral's own terms
 * (multiagent-1.0 envelopes and JSON-RPC control frames), which then take
 * the path every agent's lines take, with the same checks, limits and
 * notices; a line corral writes to the agent (a request, a notice, a
 * result, a ping...) becomes the agent's own.  So routing, reflection,
 * budgets, the audit log and the control plane never know which dialect
 * an agent speaks.
 *
 * What a codec must remember between lines is small and bounded: the
 * last CODEC_RING requests it delivered or made for its agent (their ids,
 * intents and kinds), so that an answer can name the intent of what it
 * answers, and a result come back as the kind of message the agent asked
 * with; and the ids of the last CODEC_RING messages it accepted from the
 * agent, so that a message delivered again (at least once, as senders of
 * critical and high messages do) is dropped, once for every dialect.
 *
 * Every line is scanned first (jscan.c, the grammar jansson accepts).  The
 * kinds every message of a dialect agent passes through (a request to it,
 * its answer) are then translated from the scanner's tape and written with
 * jsonw, copying the agent's values as they are, without building a tree:
 * each dialect's tape_decode and tape_encode.  Everything else (and a
 * request of an unusual shape, which those decline) is translated with
 * jansson by decode and encode.  Both ways must make the same lines: the
 * codec unit test and fuzz target hold them to each other.
 */

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

/* A frame that is only a sign of life: a response nobody waits for. */
json_t *
codec_alive(void)
{
	return json_pack("{s:s, s:s, s:{}}", "jsonrpc", "2.0", "id",
	    "heartbeat", "result");
}

/* Empty a ring. */
static void
codec_ring_init(struct codec_ring *r)
{
	size_t	i;

	for (i = 0; i < CODEC_BUCKETS; i++)
		r->buckets[i] = -1;
	for (i = 0; i < CODEC_RING; i++)
		r->e[i].chain = -1;
}

/* A codec's state for one agent. */
struct codec_state *
codec_create(const struct codec_ops *ops, const char *agent)
{
	struct codec_state	*cs;

	cs = xcalloc(1, sizeof *cs);
	cs->ops = ops;
	strlcpy(cs->agent, agent, sizeof cs->agent);
	codec_ring_init(&cs->reqs);
	codec_ring_init(&cs->seen);
	return cs;
}

/* Free a codec's state. */
void
codec_free(struct codec_state *cs)
{
	free(cs);
}

/* The hash of an id (FNV-1a), for the index of what a codec remembers. */
static uint32_t
codec_hash(const char *id, size_t *len)
{
	const unsigned char	*p = (const unsigned char *)id;
	uint32_t		 h = 2166136261u;

	for (; *p != '\0'; p++)
		h = (h ^ *p) * 16777619u;
	*len = (size_t)(p - (const unsigned char *)id);
	return h;
}

/* Take ring entry i out of its bucket, before it is used again. */
static void
codec_unlink(struct codec_ring *r, int16_t i)
{
	int16_t	*pp = &r->buckets[r->e[i].hash % CODEC_BUCKETS];

	while (*pp != -1 && *pp != i)
		pp = &r->e[*pp].chain;
	if (*pp == i)
		*pp = r->e[i].chain;
	r->e[i].chain = -1;
}

/*
 * Put an id (with an intent and a kind) in a ring, over its oldest
 * entry.  The index by id finds one without a walk over all of them,
 * which every answer and every message id would otherwise cost.
 */
static void
codec_ring_put(struct codec_ring *r, const char *id, const char *intent,
    const char *kind)
{
	struct codec_entry	*e;
	int16_t			 i;
	size_t			 len;

	i = (int16_t)(r->next++ % CODEC_RING);
	e = &r->e[i];
	if (e->id[0] != '\0')
		codec_unlink(r, i);
	strlcpy(e->id, id, sizeof e->id);
	strlcpy(e->intent, intent != NULL ? intent : "", sizeof e->intent);
	strlcpy(e->kind, kind != NULL ? kind : "", sizeof e->kind);
	if (e->id[0] == '\0')
		return;
	e->hash = codec_hash(e->id, &len);
	e->chain = r->buckets[e->hash % CODEC_BUCKETS];
	r->buckets[e->hash % CODEC_BUCKETS] = i;
}

/* The newest entry of a ring with id (and kind, when given), or NULL. */
static const struct codec_entry *
codec_ring_get(const struct codec_ring *r, const char *id, const char *kind)
{
	const struct codec_entry	*e;
	uint32_t			 h;
	int16_t				 i;
	size_t				 len;

	if (id == NULL)
		return NULL;
	h = codec_hash(id, &len);
	if (len == 0 || len >= CORRAL_ID_MAX)
		return NULL;	/* remembered ids are 1 to 63 bytes */
	for (i = r->buckets[h % CODEC_BUCKETS]; i != -1; i = e->chain) {
		e = &r->e[i];
		if (e->hash == h && strcmp(e->id, id) == 0 &&
		    (kind == NULL || strcmp(e->kind, kind) == 0))
			return e;
	}
	return NULL;
}

/* Remember a request delivered to the agent, or made by it. */
void
codec_remember(struct codec_state *cs, const char *id, const char *intent,
    const char *kind)
{
	if (id != NULL)
		codec_ring_put(&cs->reqs, id, intent, kind);
}

/*
 * What the codec remembers last of request id (of that kind, when kind
 * is given), or NULL.
 */
const struct codec_entry *
codec_recall_kind(const struct codec_state *cs, const char *id,
    const char *kind)
{
	return codec_ring_get(&cs->reqs, id, kind);
}

/* What the codec remembers last of request id, or NULL. */
const struct codec_entry *
codec_recall(const struct codec_state *cs, const char *id)
{
	return codec_ring_get(&cs->reqs, id, NULL);
}

/* Say why a line is refused, and where. */
int
codec_refuse(struct codec_error *err, const char *path, const char *fmt, ...)
{
	va_list	ap;

	strlcpy(err->path, path != NULL ? path : "", sizeof err->path);
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	return -1;
}

/* The intent a word names, or NULL when it names none. */
const char *
codec_intent(const char *word)
{
	int	i;

	if (word == NULL || (i = protocol_intent(word, strlen(word))) < 0)
		return NULL;
	return protocol_intent_name(i);
}

/*
 * A new multiagent-1.0 envelope (a new reference): role agent, the time,
 * the given intent and task, content of the given type.
 */
json_t *
codec_envelope(const char *agent, const char *intent, const char *task,
    const char *ctype)
{
	char	ts[40];

	/* Stamped when read, so the engine need not splice a time in. */
	util_rfc3339(ts, sizeof ts);
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:s, s:s, s:s, "
	    "s:{s:s}}", "protocol", CORRAL_ENVELOPE_PROTOCOL, "role", "agent",
	    "agent", "id", agent, "name", agent, "model", "n/a", "timestamp",
	    ts, "intent", intent, "task", task, "content", "type", ctype);
}

/* Set trace.id and trace.parents (when given) of an envelope. */
void
codec_trace(json_t *env, const char *id, const char *parent)
{
	json_t	*t = json_object();

	if (id != NULL && *id != '\0' && strlen(id) < CORRAL_ID_MAX)
		json_object_set_new(t, "id", json_string(id));
	if (parent != NULL)
		json_object_set_new(t, "parents", json_pack("[s]", parent));
	json_object_set_new(env, "trace", t);
}

/* A JSON-RPC request frame from the agent (a new reference). */
json_t *
codec_call(const char *method, const char *kind, const char *id,
    json_t *params)
{
	char	rid[CORRAL_ID_MAX + 32];

	snprintf(rid, sizeof rid, "%s:%s", kind, id != NULL ? id : "");
	return json_pack("{s:s, s:s, s:s, s:o}", "jsonrpc", "2.0", "id", rid,
	    "method", method, "params", params);
}

/*
 * Split the id of a response to a call codec_call made: its kind and the
 * id of the agent's message.  Returns -1 when the id is not one of ours.
 */
int
codec_call_id(json_t *frame, char *kind, size_t klen, const char **mid)
{
	const char	*id = json_string_value(json_object_get(frame, "id"));
	const char	*colon;

	if (id == NULL || (colon = strchr(id, ':')) == NULL ||
	    (size_t)(colon - id) >= klen)
		return -1;
	memcpy(kind, id, colon - id);
	kind[colon - id] = '\0';
	*mid = colon + 1;
	return 0;
}

/* A priority of an envelope (a number 0-4 or a name) as a number. */
int
codec_prio(json_t *p)
{
	if (json_is_integer(p) && json_integer_value(p) >= 0 &&
	    json_integer_value(p) < PRIO_COUNT)
		return (int)json_integer_value(p);
	return codec_prio_name(json_string_value(p));
}

/* A priority's name (batch, low, normal, high, critical) as a number. */
int
codec_prio_name(const char *s)
{
	int	i;

	for (i = 0; s != NULL && i < PRIO_COUNT; i++)
		if (strcmp(s, protocol_priority_name(i)) == 0)
			return i;
	return PRIO_NORMAL;
}

/* A string member of an object, or a default. */
const char *
codec_str(json_t *o, const char *key, const char *dflt)
{
	const char	*s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : dflt;
}

/*
 * What corral writes is a result, a notice... : its corral member's kind,
 * "" for a request, NULL for a line that is no envelope.
 */
const char *
codec_kind(json_t *frame)
{
	json_t	*cm;

	if (json_object_get(frame, "jsonrpc") != NULL ||
	    json_object_get(frame, "protocol") == NULL)
		return NULL;
	cm = json_object_get(frame, "corral");
	return codec_str(cm, "kind", "");
}

/* The first of trace.parents of an envelope, or NULL. */
const char *
codec_parent(json_t *env)
{
	return json_string_value(json_array_get(json_object_get(
	    json_object_get(env, "trace"), "parents"), 0));
}

/* The body of an envelope's content: its data, else its text, else null. */
json_t *
codec_content(json_t *env)
{
	json_t	*c = json_object_get(env, "content"), *v;

	if ((v = json_object_get(c, "data")) != NULL && !json_is_null(v))
		return json_incref(v);
	if ((v = json_object_get(c, "text")) != NULL)
		return json_incref(v);
	return json_null();
}

/*
 * A string token's text, unescaped, in buf: 1; 0 when tok is absent or
 * no string; -1 when it is longer than buf holds.
 */
int
codec_tape_text(struct jscan *js, const char *s, int tok, char *buf,
    size_t size)
{
	const char	*t;
	size_t		 n;

	if (tok < 0 || js->tok[tok].type != JT_STRING)
		return 0;
	t = jscan_text(js, s, tok, &n);
	if (n >= size)
		return -1;
	memcpy(buf, t, n);
	buf[n] = '\0';
	return 1;
}

/* Write a token's value as the line has it. */
void
codec_tape_raw(struct jsonw *j, struct jscan *js, const char *s, int tok)
{
	if (tok < 0)
		jsonw_raw(j, "null", 4);
	else
		jsonw_raw(j, s + js->tok[tok].off, js->tok[tok].len);
}

/* codec_prio of a token (-1: none). */
int
codec_tape_prio(struct jscan *js, const char *s, int tok)
{
	char	name[16];
	double	v;

	if (tok < 0)
		return PRIO_NORMAL;
	if (js->tok[tok].type == JT_NUMBER && (js->tok[tok].flags &
	    JT_INTEGER)) {
		v = jscan_number(js, s, tok);
		return v >= 0 && v < PRIO_COUNT ? (int)v : PRIO_NORMAL;
	}
	if (codec_tape_text(js, s, tok, name, sizeof name) == 1)
		return codec_prio_name(name);
	return PRIO_NORMAL;
}

/*
 * codec_content of an envelope's content token: its data, else its
 * text; -1 for null.
 */
int
codec_tape_content(struct jscan *js, const char *s, int content)
{
	int	v;

	if ((v = JSCAN_GET(js, s, content, "data")) >= 0 &&
	    js->tok[v].type != JT_NULL)
		return v;
	return JSCAN_GET(js, s, content, "text");
}

/*
 * Open the envelope codec_envelope makes, written: role agent, the time,
 * the intent, the task (a token, else the text task), and content of the
 * token data (a string is text).  The caller adds the rest and closes it.
 */
void
codec_tape_envelope(struct jsonw *j, const char *agent, const char *intent,
    const char *task, struct jscan *js, const char *s, int task_tok,
    int data)
{
	int	text = data >= 0 && js->tok[data].type == JT_STRING;
	char	ts[40];

	util_rfc3339(ts, sizeof ts);
	jsonw_object(j);
	JSONW_KEY(j, "protocol");
	jsonw_str(j, CORRAL_ENVELOPE_PROTOCOL);
	JSONW_KEY(j, "role");
	jsonw_str(j, "agent");
	JSONW_KEY(j, "agent");
	jsonw_object(j);
	JSONW_KEY(j, "id");
	jsonw_str(j, agent);
	JSONW_KEY(j, "name");
	jsonw_str(j, agent);
	JSONW_KEY(j, "model");
	jsonw_str(j, "n/a");
	jsonw_object_end(j);
	JSONW_KEY(j, "timestamp");
	jsonw_str(j, ts);
	JSONW_KEY(j, "intent");
	jsonw_str(j, intent);
	JSONW_KEY(j, "task");
	if (task_tok >= 0)
		codec_tape_raw(j, js, s, task_tok);
	else
		jsonw_str(j, task);
	JSONW_KEY(j, "content");
	jsonw_object(j);
	JSONW_KEY(j, "type");
	jsonw_str(j, text ? "text" : "json");
	if (data >= 0 && js->tok[data].type != JT_NULL) {
		jsonw_key(j, text ? "text" : "data");
		codec_tape_raw(j, js, s, data);
	}
	jsonw_object_end(j);
}

/*
 * Write the trace of an envelope made of an answer: its id (the token of
 * the message's id, when it is one: 1 to 63 bytes) and the request it
 * answers as its parent.
 */
void
codec_tape_trace(struct jsonw *j, struct jscan *js, const char *s, int id,
    int parent)
{
	char	buf[CORRAL_ID_MAX];

	JSONW_KEY(j, "trace");
	jsonw_object(j);
	if (codec_tape_text(js, s, id, buf, sizeof buf) == 1 &&
	    buf[0] != '\0') {
		JSONW_KEY(j, "id");
		codec_tape_raw(j, js, s, id);
	}
	JSONW_KEY(j, "parents");
	jsonw_array(j);
	codec_tape_raw(j, js, s, parent);
	jsonw_array_end(j);
	jsonw_object_end(j);
}

/*
 * Write what the envelope of a message takes from it, of the tokens that
 * are there: its priority (as a number), a TTL that is a number of 0 or
 * more, a session id that is a string.
 */
void
codec_tape_common(struct jsonw *j, struct jscan *js, const char *s, int prio,
    int ttl, int session)
{
	if (prio >= 0) {
		JSONW_KEY(j, "priority");
		jsonw_u64(j, (uint64_t)codec_tape_prio(js, s, prio));
	}
	if (ttl >= 0 && js->tok[ttl].type == JT_NUMBER &&
	    jscan_number(js, s, ttl) >= 0) {
		JSONW_KEY(j, "ttl_ms");
		codec_tape_raw(j, js, s, ttl);
	}
	if (session >= 0 && js->tok[session].type == JT_STRING) {
		JSONW_KEY(j, "session");
		codec_tape_raw(j, js, s, session);
	}
}

/* Write a string token as it is, or the text dflt when it is none. */
void
codec_tape_str_or(struct jsonw *j, struct jscan *js, const char *s, int tok,
    const char *dflt)
{
	if (tok >= 0 && js->tok[tok].type == JT_STRING)
		codec_tape_raw(j, js, s, tok);
	else
		jsonw_str(j, dflt);
}

/* Write a member whose value is a token's, when there is the token. */
void
codec_tape_member(struct jsonw *j, const char *key, struct jscan *js,
    const char *s, int tok)
{
	if (tok < 0)
		return;
	jsonw_key(j, key);
	codec_tape_raw(j, js, s, tok);
}

/* Write confidence.score of a number token (an answer's confidence). */
void
codec_tape_score(struct jsonw *j, struct jscan *js, const char *s, int tok)
{
	if (tok < 0 || js->tok[tok].type != JT_NUMBER)
		return;
	JSONW_KEY(j, "confidence");
	jsonw_object(j);
	JSONW_KEY(j, "score");
	codec_tape_raw(j, js, s, tok);
	jsonw_object_end(j);
}

/*
 * The kind of one of corral's lines (codec_kind) in buf: 1 when it is an
 * envelope whose kind fits, else 0.
 */
int
codec_tape_kind(struct jscan *js, const char *s, char *buf, size_t size)
{
	if (JSCAN_GET(js, s, 0, "jsonrpc") >= 0 ||
	    JSCAN_GET(js, s, 0, "protocol") < 0)
		return 0;
	buf[0] = '\0';
	return codec_tape_text(js, s, JSCAN_GET(js, s, JSCAN_GET(js, s, 0,
	    "corral"), "kind"), buf, size) >= 0;
}

/*
 * A message's id (the token id) in buf, for codec_ops' tape_id: 1 when
 * it is a string of 1 to 63 bytes and the message (of type the token
 * type) is no heartbeat, whose ids need not be unique.
 */
int
codec_tape_message_id(struct jscan *js, const char *s, int id, int type,
    char *buf, size_t size)
{
	char	t[16];

	if (codec_tape_text(js, s, type, t, sizeof t) == 1 &&
	    strcmp(t, "HEARTBEAT") == 0)
		return 0;
	if (size > CORRAL_ID_MAX)
		size = CORRAL_ID_MAX;
	return codec_tape_text(js, s, id, buf, size) == 1 && buf[0] != '\0';
}

/* Remember the id of a message the codec accepted ("" for none). */
static void
codec_seen(struct codec_state *cs, const char *mid)
{
	if (mid[0] != '\0')
		codec_ring_put(&cs->seen, mid, NULL, NULL);
}

/*
 * The key the ring knows an agent's own JSON-RPC id by: the id, or for
 * one too long for the ring, its head and two hashes of it all.
 */
static const char *
codec_rpc_key(const char *id, char *buf, size_t size)
{
	const unsigned char	*p;
	uint32_t		 h1, h2 = 5381;
	size_t			 len;

	h1 = codec_hash(id, &len);
	if (len < CORRAL_ID_MAX)
		return id;
	for (p = (const unsigned char *)id; *p != '\0'; p++)
		h2 = h2 * 33 + *p;
	snprintf(buf, size, "%.40s#%08x%08x", id, (unsigned int)h1,
	    (unsigned int)h2);
	return buf;
}

/*
 * An agent's own JSON-RPC request whose id has the form of the codec's
 * calls (KIND:ID): remember it, so its response goes back to the agent
 * as it is and is not taken for the answer to one of the codec's calls.
 */
static void
codec_own_rpc(struct codec_state *cs, const char *line, size_t len)
{
	json_t		*f = json_loadb(line, len, 0, NULL), *m;
	const char	*mid;
	char		 kind[16], key[CORRAL_ID_MAX];
	size_t		 i;

	if (json_is_object(f))
		f = json_pack("[o]", f);
	json_array_foreach(f, i, m)
		if (json_object_get(m, "method") != NULL &&
		    codec_call_id(m, kind, sizeof kind, &mid) == 0)
			codec_ring_put(&cs->reqs, codec_rpc_key(
			    json_string_value(json_object_get(m, "id")), key,
			    sizeof key), NULL, "rpc");
	json_decref(f);
}

/*
 * Whether a JSON-RPC frame corral writes goes to the agent as it is: a
 * batch's answers, a response to a request of the agent's own (not to a
 * call the codec made for it), and a notification (the map/events of a
 * subscription it made).  A request (ping) is the dialect's to translate.
 */
static int
codec_passes(const struct codec_state *cs, json_t *f)
{
	const char	*mid;
	char		 kind[16], key[CORRAL_ID_MAX];

	if (json_is_array(f))
		return 1;
	if (json_object_get(f, "jsonrpc") == NULL)
		return 0;
	if (json_object_get(f, "method") != NULL)
		return json_object_get(f, "id") == NULL;
	return codec_call_id(f, kind, sizeof kind, &mid) != 0 ||
	    codec_ring_get(&cs->reqs, codec_rpc_key(json_string_value(
	    json_object_get(f, "id")), key, sizeof key), "rpc") != NULL;
}

/*
 * Translate a line the agent wrote into one of corral's lines (made, to
 * be freed).  Returns 1 when the line goes on as it is (not JSON, or a
 * JSON-RPC frame: the usual checks answer it), 0 when translated, -1
 * with err when refused, CODEC_REDELIVERY with err (its message id in
 * parent) when it repeats a message accepted before.
 */
int
codec_decode_line(struct codec_state *cs, const char *line, size_t len,
    char **made, size_t *madelen, struct codec_error *err)
{
	struct jscan	*js;
	struct jsonw	 j;
	json_t		*msg, *frames;
	const char	*idpath = "";
	char		 mid[CORRAL_ID_MAX];
	int		 rc;

	*made = NULL;
	memset(err, 0, sizeof *err);
	err->code = "invalid_envelope";
	/* The scanner accepts what jansson does: what it refuses is no JSON. */
	js = jscan_take();
	if ((rc = jscan_run(js, line, len)) != 0 ||
	    js->tok[0].type != JT_OBJECT ||
	    JSCAN_GET(js, line, 0, "jsonrpc") >= 0) {
		/* A JSON-RPC frame (or a batch) of the agent's own. */
		if (rc == 0)
			codec_own_rpc(cs, line, len);
		jscan_give(js);
		return 1;
	}
	/*
	 * At-least-once senders repeat themselves: a message id accepted
	 * before (among the last CODEC_RING) is a redelivery.
	 */
	mid[0] = '\0';
	if (cs->ops->tape_id != NULL &&
	    cs->ops->tape_id(js, line, mid, sizeof mid, &idpath) == 1 &&
	    codec_ring_get(&cs->seen, mid, NULL) != NULL) {
		jscan_give(js);
		err->code = "redelivery";
		strlcpy(err->parent, mid, sizeof err->parent);
		codec_refuse(err, idpath, "%s was accepted before: a "
		    "redelivery, dropped", idpath);
		return CODEC_REDELIVERY;
	}
	if (cs->ops->tape_decode != NULL && !cs->slow) {
		jsonw_init(&j);
		if (cs->ops->tape_decode(cs, js, line, &j)) {
			jscan_give(js);
			*made = jsonw_finish(&j, madelen);
			codec_seen(cs, mid);
			return 0;
		}
		jsonw_free(&j);
	}
	jscan_give(js);
	if ((msg = json_loadb(line, len, CORRAL_JSON_LOAD, NULL)) == NULL)
		return 1;
	frames = json_array();
	rc = cs->ops->decode(cs, msg, frames, err);
	if (rc == 0 && json_array_size(frames) != 1)
		rc = codec_refuse(err, "", "the message made no frame");
	if (rc == 0 && (*made = jsonw_dumps(json_array_get(frames, 0),
	    CORRAL_JSON_FLAGS)) == NULL)
		rc = codec_refuse(err, "", "the message could not be written");
	if (rc == 0) {
		*madelen = strlen(*made);
		codec_seen(cs, mid);
	}
	if (rc != 0 && err->parent[0] == '\0' && cs->ops->message_id != NULL)
		strlcpy(err->parent, cs->ops->message_id(msg),
		    sizeof err->parent);
	json_decref(frames);
	json_decref(msg);
	return rc;
}

/*
 * Translate a line corral writes to the agent into the agent's.  Returns
 * the new line (free it), or NULL when the agent gets nothing of it.
 */
char *
codec_encode_line(struct codec_state *cs, const char *line, size_t len,
    size_t *outlen)
{
	struct jscan	*js;
	struct jsonw	 j;
	json_t		*frame, *msg;
	char		*s;

	if (cs->ops->tape_encode != NULL && !cs->slow) {
		js = jscan_take();
		if (jscan_run(js, line, len) == 0 &&
		    js->tok[0].type == JT_OBJECT) {
			jsonw_init(&j);
			if (cs->ops->tape_encode(cs, js, line, &j)) {
				jscan_give(js);
				return jsonw_finish(&j, outlen);
			}
			jsonw_free(&j);
		}
		jscan_give(js);
	}
	if ((frame = json_loadb(line, len, 0, NULL)) == NULL)
		return NULL;
	if (codec_passes(cs, frame)) {
		json_decref(frame);
		*outlen = len;
		return xmemdup0(line, len);
	}
	msg = cs->ops->encode(cs, frame);
	json_decref(frame);
	if (msg == NULL)
		return NULL;
	s = jsonw_dumps(msg, CORRAL_JSON_FLAGS);
	json_decref(msg);
	if (s != NULL)
		*outlen = strlen(s);
	return s;
}
