/*
 * map: the dialect of an agent that speaks nothing but MAP's JSON-RPC
 * (the SDK's AgentConnection).  Declared with protocol: map, or switched
 * to when an agent's map/connect says participantType "agent".  Whatever
 * corral writes to it as an envelope (requests, its task, child results,
 * messages, notices, cancels, progress) goes as MAP's Message in a
 * map/message notification; its JSON-RPC frames go as they are.  It reads
 * what multiagent-1.0 reads: its map/send with meta.isResult is its
 * reply (message.c).  Built with jansson: MAP agents are not the
 * per-message path.
 */

#include <string.h>

#include "corral.h"
#include "dialect-int.h"

static int	dialect_map_encode(struct agent *, void *, const char *, size_t,
		    enum dialect_kind);

const struct dialect dialect_map = {
	.name = "map",
	.noun = "envelope",
	.decode = dialect_multiagent_decode,
	.encode = dialect_map_encode,
};

/* Build MAP's Message (a new reference); its id is written to mid. */
json_t *
dialect_map_message(const char *from, json_t *to, json_t *payload,
    json_t *meta, char *mid)
{
	json_t	*m;

	event_new_id(mid);
	m = json_pack("{s:s, s:s, s:O, s:I}", "id", mid, "from", from, "to",
	    to, "timestamp", (json_int_t)event_now_ms());
	if (payload != NULL)
		json_object_set(m, "payload", payload);
	if (json_is_object(meta))
		json_object_set_new(m, "meta", json_deep_copy(meta));
	return m;
}

/*
 * The Message's sender and meta for an envelope of a kind, from its
 * corral member (cm) and trace.id (tid).  Returns the Message's id, when
 * it is not a new one.
 */
static const char *
dialect_map_meta(enum dialect_kind kind, json_t *cm, const char *tid,
    json_t *meta, const char **from)
{
	switch (kind) {
	case DK_REQUEST:
	case DK_TASK:
		/* Work to answer: its id is what the reply correlates to. */
		json_object_set_new(meta, "expectsResponse", json_true());
		if (tid != NULL)
			json_object_set_new(meta, "correlationId",
			    json_string(tid));
		if (kind == DK_TASK) {
			*from = json_string_value(json_object_get(cm, "parent"));
			json_object_set_new(meta, "relationship",
			    json_string("parent-to-child"));
		}
		return tid;
	case DK_CHILD_RESULT:
		*from = json_string_value(json_object_get(cm, "child"));
		json_object_set_new(meta, "isResult", json_true());
		json_object_set(meta, "correlationId", json_object_get(cm,
		    "spawn"));
		json_object_set_new(meta, "relationship",
		    json_string("child-to-parent"));
		return NULL;
	case DK_MESSAGE:
		*from = json_string_value(json_object_get(cm, "from"));
		return json_string_value(json_object_get(cm, "messageId"));
	case DK_RESULT:
		*from = json_string_value(json_object_get(cm, "from"));
		json_object_set_new(meta, "isResult", json_true());
		json_object_set(meta, "correlationId", json_object_get(cm,
		    "correlationId"));
		return NULL;
	case DK_CANCEL:
		/* Not a result: it names the request it cancels. */
		json_object_set_new(meta, "cancel", json_true());
		json_object_set(meta, "correlationId", json_object_get(cm,
		    "request"));
		return NULL;
	case DK_PROGRESS:
		*from = json_string_value(json_object_get(cm, "child"));
		json_object_set_new(meta, "progress", json_true());
		json_object_set(meta, "correlationId", json_object_get(cm,
		    "request"));
		json_object_set_new(meta, "relationship",
		    json_string("child-to-parent"));
		return NULL;
	default:
		return NULL;	/* a notice: from corral, nothing to answer */
	}
}

/*
 * Write an envelope to agent a as a map/message.  Returns 0 for what is
 * no envelope to wrap (a JSON-RPC frame, or bytes jansson cannot read):
 * it goes as it is.
 */
static int
dialect_map_encode(struct agent *a, void *state, const char *line,
    size_t len, enum dialect_kind kind)
{
	json_t		*env, *meta, *msg, *to;
	const char	*tid, *from = "corral", *id;
	char		 mid[EVENT_ID_LEN + 1];

	if (kind == DK_RPC || (env = json_loadb(line, len, 0, NULL)) == NULL)
		return 0;
	tid = json_string_value(json_object_get(json_object_get(env, "trace"),
	    "id"));
	meta = json_object();
	id = dialect_map_meta(kind, json_object_get(env, "corral"), tid, meta,
	    &from);
	to = json_pack("{s:s}", "agent", a->id);
	msg = dialect_map_message(from != NULL ? from : "corral", to, env, meta,
	    mid);
	if (id != NULL)
		json_object_set_new(msg, "id", json_string(id));
	rpc_notify(agent_peer(a), CORRAL_M_MESSAGE, json_pack("{s:o}",
	    "message", msg));
	json_decref(to);
	json_decref(meta);
	json_decref(env);
	return 1;
}
