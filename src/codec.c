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
 * with.  Translation is done with jansson: these agents are not the hot
 * path, and the multiagent-1.0 path does not come here.
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

/* A codec's state for one agent. */
struct codec_state *
codec_create(const struct codec_ops *ops, const char *agent)
{
	struct codec_state	*cs;

	cs = xcalloc(1, sizeof *cs);
	cs->ops = ops;
	strlcpy(cs->agent, agent, sizeof cs->agent);
	return cs;
}

/* Free a codec's state. */
void
codec_free(struct codec_state *cs)
{
	if (cs->risks != NULL)
		json_decref(cs->risks);
	free(cs);
}

/* Remember a request delivered to the agent, or made by it. */
void
codec_remember(struct codec_state *cs, const char *id, const char *intent,
    const char *kind)
{
	struct codec_entry	*e;

	if (id == NULL)
		return;
	e = &cs->ring[cs->next++ % CODEC_RING];
	strlcpy(e->id, id, sizeof e->id);
	strlcpy(e->intent, intent != NULL ? intent : "", sizeof e->intent);
	strlcpy(e->kind, kind != NULL ? kind : "", sizeof e->kind);
}

/*
 * What the codec remembers last of request id (of that kind, when kind
 * is given), or NULL.
 */
const struct codec_entry *
codec_recall_kind(const struct codec_state *cs, const char *id,
    const char *kind)
{
	const struct codec_entry	*e;
	size_t				 i;

	if (id == NULL)
		return NULL;
	for (i = 1; i <= CODEC_RING; i++) {
		e = &cs->ring[(cs->next - i) % CODEC_RING];
		if (e->id[0] != '\0' && strcmp(e->id, id) == 0 &&
		    (kind == NULL || strcmp(e->kind, kind) == 0))
			return e;
	}
	return NULL;
}

/* What the codec remembers last of request id, or NULL. */
const struct codec_entry *
codec_recall(const struct codec_state *cs, const char *id)
{
	return codec_recall_kind(cs, id, NULL);
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
 * A new multiagent-1.0 envelope (a new reference): role agent, the given
 * intent and task, content of the given type.
 */
json_t *
codec_envelope(const char *agent, const char *intent, const char *task,
    const char *ctype)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:s, s:s, s:{s:s}}",
	    "protocol", CORRAL_ENVELOPE_PROTOCOL, "role", "agent",
	    "agent", "id", agent, "name", agent, "model", "n/a",
	    "intent", intent, "task", task, "content", "type", ctype);
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
 * Translate a line the agent wrote into corral's lines (out, a list of
 * strings).  Returns 1 when the line goes on as it is (not JSON, or a
 * JSON-RPC frame: the usual checks answer it), 0 when translated (out
 * may be empty: a heartbeat), -1 with err when refused.
 */
int
codec_decode_line(struct codec_state *cs, const char *line, size_t len,
    json_t *out, struct codec_error *err)
{
	json_t		*msg, *frames, *f;
	json_error_t	 jerr;
	size_t		 i;
	char		*s;
	int		 rc;

	if ((msg = json_loadb(line, len, CORRAL_JSON_LOAD, &jerr)) == NULL)
		return 1;
	if (!json_is_object(msg) || json_object_get(msg, "jsonrpc") != NULL) {
		json_decref(msg);
		return 1;
	}
	frames = json_array();
	memset(err, 0, sizeof *err);
	err->code = "invalid_envelope";
	rc = cs->ops->decode(cs, msg, frames, err);
	if (rc == 0)
		json_array_foreach(frames, i, f)
			if ((s = json_dumps(f, CORRAL_JSON_FLAGS)) != NULL) {
				json_array_append_new(out, json_string(s));
				free(s);
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
	json_t	*frame, *msg;
	char	*s;

	if ((frame = json_loadb(line, len, 0, NULL)) == NULL)
		return NULL;
	msg = cs->ops->encode(cs, frame);
	json_decref(frame);
	if (msg == NULL)
		return NULL;
	s = json_dumps(msg, CORRAL_JSON_FLAGS);
	json_decref(msg);
	if (s != NULL)
		*outlen = strlen(s);
	return s;
}
