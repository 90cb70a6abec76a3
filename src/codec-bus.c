/*
 * The collaboration bus dialect (protocol: bus): messages of
 * {header, body, trace} with the types REQUEST, RESPONSE, PUBLISH and
 * BROADCAST, and corral's SUBSCRIBE, UNSUBSCRIBE, REGISTER and HEARTBEAT.
 * docs/dialects.md has the mapping, field by field, both ways.
 *
 * What a bus agent writes becomes envelopes (a RESPONSE is the reply to
 * the request it names in correlationId) or control frames (a REQUEST to
 * an agent or a capability is a map/send that expects a response, a
 * PUBLISH a map/send to the topic's scope, a query of the registry a
 * map/agents/list).  The control frames' ids say what they were for
 * ("find:<messageId>"), so their answers come back to the agent in its
 * own terms without any state kept.  The members of a bus message that
 * have no place in an envelope travel in its "bus" member, and come back
 * unchanged when the envelope reaches another bus agent.  A message whose
 * messageId the codec accepted before is a redelivery (codec.c drops it).
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

/* The bus's names of MAP's states, for discovery answers. */
static const struct {
	const char	*map;
	const char	*bus;
} bus_states[] = {
	{ "registered",		"INITIALIZING" },
	{ "active",		"READY" },
	{ "idle",		"READY" },
	{ "busy",		"BUSY" },
	{ "suspended",		"UNAVAILABLE" },
	{ "x-unavailable",	"UNAVAILABLE" },
	{ "stopping",		"STOPPING" },
	{ "stopped",		"STOPPED" },
	{ "failed",		"UNAVAILABLE" },
};

/* A header member: in header, or (the seed's short examples) at the top. */
static json_t *
bus_field(json_t *m, const char *key)
{
	json_t	*v = json_object_get(json_object_get(m, "header"), key);

	return v != NULL ? v : json_object_get(m, key);
}

/* A string header member, or NULL. */
static const char *
bus_sfield(json_t *m, const char *key)
{
	return json_string_value(bus_field(m, key));
}

/* The id of a bus message, for errors about it. */
static const char *
bus_message_id(json_t *m)
{
	const char	*id = bus_sfield(m, "messageId");

	return id != NULL ? id : "";
}

/* The bus's category of a refusal of the control plane (a MAP code). */
static const char *
bus_rpc_category(int code)
{
	switch (code) {
	case CORRAL_E_NOADDRESS:
	case CORRAL_E_NOTFOUND:
	case CORRAL_E_NOSCOPE:
	case CORRAL_E_DELIVERY:
	case CORRAL_E_TERMINATED:
	case CORRAL_E_EXHAUSTED:
		return "UNAVAILABLE";
	case CORRAL_E_DENIED:
	case CORRAL_E_PARAMS:
	case CORRAL_E_NOMETHOD:
	case CORRAL_E_QUOTA:
		return "REJECTED";
	default:
		return "INTERNAL";
	}
}

/* The header fields a message may have, at the top in the short form. */
static const char *const bus_header_keys[] = {
	"messageId", "correlationId", "type", "source", "destination",
	"timestamp", "priority", "ttl", NULL
};

/* The members kept in an envelope's "bus" member (a new reference). */
static json_t *
bus_keep(json_t *m)
{
	json_t	*k = json_object(), *h = json_object_get(m, "header"), *b, *v;
	size_t	 i;

	if (json_is_object(h))
		json_object_set(k, "header", h);
	else {
		/* The seed's short examples have their header at the top. */
		h = json_object();
		for (i = 0; bus_header_keys[i] != NULL; i++)
			if ((v = json_object_get(m, bus_header_keys[i])) != NULL)
				json_object_set(h, bus_header_keys[i], v);
		json_object_set_new(k, "header", h);
	}
	b = json_object_get(m, "body");
	if ((v = json_object_get(b, "context")) != NULL)
		json_object_set(k, "context", v);
	if ((v = json_object_get(b, "action")) != NULL)
		json_object_set(k, "action", v);
	if ((v = json_object_get(b, "event")) != NULL)
		json_object_set(k, "event", v);
	if ((v = json_object_get(m, "trace")) != NULL)
		json_object_set(k, "trace", v);
	return k;
}

/* corral's category of a bus error code (its four are the seed's). */
static const char *
bus_category(const char *code)
{
	static const char *const cats[] = { "TIMEOUT", "UNAVAILABLE",
	    "REJECTED", "INTERNAL", NULL };
	size_t	i;

	for (i = 0; cats[i] != NULL; i++)
		if (strcmp(code, cats[i]) == 0)
			return cats[i];
	return "INTERNAL";
}

/*
 * The envelope a bus message becomes: the intent its action names (else
 * the one given), its priority, TTL and session, and the rest kept.
 */
static json_t *
bus_to_envelope(struct codec_state *cs, json_t *m, const char *dflt_intent,
    const char *task, json_t *data)
{
	json_t		*env, *b = json_object_get(m, "body"), *v, *h;
	const char	*intent, *s;

	intent = codec_intent(codec_str(b, "action", NULL));
	env = codec_envelope(cs->agent, intent != NULL ? intent : dflt_intent,
	    task, json_is_string(data) ? "text" : "json");
	if (json_is_string(data))
		json_object_set(json_object_get(env, "content"), "text", data);
	else if (data != NULL && !json_is_null(data))
		json_object_set(json_object_get(env, "content"), "data", data);
	codec_trace(env, bus_sfield(m, "messageId"), NULL);
	if ((v = bus_field(m, "priority")) != NULL)
		json_object_set_new(env, "priority",
		    json_integer(codec_prio(v)));
	if (json_is_number(v = bus_field(m, "ttl")) && json_number_value(v) >= 0)
		json_object_set_new(env, "ttl_ms",
		    json_real(json_number_value(v)));
	if ((s = json_string_value(json_object_get(json_object_get(b,
	    "context"), "sessionId"))) != NULL)
		json_object_set_new(env, "session", json_string(s));
	h = bus_keep(m);
	json_object_set_new(env, "bus", h);
	return env;
}

/* A RESPONSE: the reply to the request it names. */
static int
bus_response(struct codec_state *cs, json_t *m, json_t *frames,
    struct codec_error *err)
{
	const struct codec_entry	*e;
	json_t				*b = json_object_get(m, "body"), *env;
	json_t				*er, *d, *v;
	const char			*corr, *st, *code;
	char				 low[64];
	size_t				 i;

	if ((corr = bus_sfield(m, "correlationId")) == NULL)
		return codec_refuse(err, "header.correlationId", "a RESPONSE "
		    "names the request it answers in header.correlationId");
	st = codec_str(b, "status", "SUCCESS");
	e = codec_recall(cs, corr);
	if (strcmp(st, "SUCCESS") == 0) {
		env = bus_to_envelope(cs, m, e != NULL && e->intent[0] ?
		    e->intent : "execute", codec_str(b, "action", "response"),
		    json_object_get(b, "result"));
		if (json_is_number(v = json_object_get(b, "confidence")))
			json_object_set_new(env, "confidence", json_pack(
			    "{s:f}", "score", json_number_value(v)));
	} else if (strcmp(st, "ERROR") == 0 || strcmp(st, "TIMEOUT") == 0) {
		er = json_object_get(b, "error");
		code = codec_str(er, "code", st);
		for (i = 0; code[i] != '\0' && i < sizeof low - 1; i++)
			low[i] = code[i] >= 'A' && code[i] <= 'Z' ?
			    code[i] - 'A' + 'a' : code[i];
		low[i] = '\0';
		env = bus_to_envelope(cs, m, e != NULL && e->intent[0] ?
		    e->intent : "execute", codec_str(b, "action", "response"),
		    NULL);
		d = json_pack("{s:s, s:s, s:s, s:b}", "code", low, "category",
		    bus_category(code), "message", codec_str(er, "message",
		    st), "retryable", json_is_true(json_object_get(er,
		    "retryable")));
		if ((v = json_object_get(er, "retryAfter")) != NULL)
			json_object_set(d, "retryAfter", v);
		json_object_set_new(json_object_get(env, "content"), "type",
		    json_string("error"));
		json_object_set_new(json_object_get(env, "content"), "text",
		    json_string(codec_str(er, "message", st)));
		json_object_set_new(json_object_get(env, "content"), "data", d);
	} else
		return codec_refuse(err, "body.status", "body.status must be "
		    "SUCCESS, ERROR or TIMEOUT");
	json_object_set_new(json_object_get(env, "trace"), "parents",
	    json_pack("[s]", corr));
	json_array_append_new(frames, env);
	return 0;
}

/* A REQUEST: to an agent, a capability, the registry, or routed. */
static int
bus_request(struct codec_state *cs, json_t *m, json_t *frames,
    struct codec_error *err)
{
	json_t		*b = json_object_get(m, "body"), *env, *p, *f;
	const char	*dest = bus_sfield(m, "destination"), *mid, *st;
	const char	*action = codec_str(b, "action", NULL);
	size_t		 i;

	mid = bus_sfield(m, "messageId");
	if (dest != NULL && (strcmp(dest, "registry") == 0)) {
		p = json_object_get(b, "payload");
		if (action != NULL && strcmp(action, "session") == 0) {
			json_array_append_new(frames, codec_call(
			    CORRAL_M_SESSION_LOAD, "sess", mid, json_pack(
			    "{s:O*}", "sessionId", json_object_get(p,
			    "sessionId"))));
			return 0;
		}
		if (action == NULL || strcmp(action, "find") != 0)
			return codec_refuse(err, "body.action", "the registry "
			    "answers the actions find and session");
		f = json_object();
		if (json_is_string(json_object_get(p, "capability")))
			json_object_set(f, "capability", json_object_get(p,
			    "capability"));
		if ((st = codec_str(p, "status", NULL)) != NULL) {
			json_object_set_new(f, "states", json_array());
			for (i = 0; i < sizeof bus_states / sizeof bus_states[0];
			    i++)
				if (strcmp(bus_states[i].bus, st) == 0)
					json_array_append_new(json_object_get(f,
					    "states"), json_string(
					    bus_states[i].map));
		}
		json_array_append_new(frames, codec_call(CORRAL_M_LIST, "find",
		    mid, json_pack("{s:o}", "filter", f)));
		return 0;
	}
	if (dest != NULL && (strcmp(dest, "*") == 0 ||
	    strncmp(dest, "topic:", 6) == 0))
		return codec_refuse(err, "header.destination", "a REQUEST goes "
		    "to one agent, a capability:NAME, the registry or corral; "
		    "use PUBLISH or BROADCAST for %s", dest);
	env = bus_to_envelope(cs, m, "execute", action != NULL ? action :
	    "request", json_object_get(b, "payload"));
	codec_remember(cs, mid, json_string_value(json_object_get(env,
	    "intent")), "request");
	if (dest == NULL || strcmp(dest, "corral") == 0) {
		json_array_append_new(frames, codec_call(CORRAL_M_ROUTE, "req",
		    mid, json_pack("{s:o, s:s*}", "payload", env,
		    "correlationId", mid)));
		return 0;
	}
	p = json_pack("{s:b}", "expectsResponse", 1);
	if (mid != NULL)
		json_object_set_new(p, "correlationId", json_string(mid));
	json_object_set_new(p, "priority", json_string(protocol_priority_name(
	    codec_prio(bus_field(m, "priority")))));
	json_array_append_new(frames, codec_call(CORRAL_M_SEND, "req", mid,
	    json_pack("{s:s, s:o, s:o}", "to", dest, "payload", env, "meta",
	    p)));
	return 0;
}

/* PUBLISH to topic:NAME, or BROADCAST to every agent the sender reaches. */
static int
bus_publish(struct codec_state *cs, json_t *m, json_t *frames,
    struct codec_error *err, int broadcast)
{
	json_t		*b = json_object_get(m, "body"), *env, *to, *data;
	const char	*dest = bus_sfield(m, "destination");

	if (broadcast)
		to = json_pack("{s:b}", "broadcast", 1);
	else if (dest != NULL && strncmp(dest, "topic:", 6) == 0 &&
	    dest[6] != '\0')
		to = json_string(dest);
	else
		return codec_refuse(err, "header.destination", "a PUBLISH goes "
		    "to topic:NAME");
	if ((data = json_object_get(b, "data")) == NULL &&
	    (data = json_object_get(b, "payload")) == NULL)
		data = b;
	env = bus_to_envelope(cs, m, "execute", codec_str(b, "event",
	    codec_str(b, "action", broadcast ? "broadcast" : "publish")),
	    data);
	json_array_append_new(frames, codec_call(CORRAL_M_SEND, "pub",
	    bus_sfield(m, "messageId"), json_pack("{s:o, s:o}", "to", to,
	    "payload", env)));
	return 0;
}

/* SUBSCRIBE or UNSUBSCRIBE to topic:NAME (or body.topic). */
static int
bus_subscribe(struct codec_state *cs, json_t *m, json_t *frames,
    struct codec_error *err, int on)
{
	const char	*dest = bus_sfield(m, "destination"), *topic;
	const char	*mid = bus_sfield(m, "messageId");

	topic = codec_str(json_object_get(m, "body"), "topic", NULL);
	if (topic == NULL && dest != NULL && strncmp(dest, "topic:", 6) == 0)
		topic = dest + 6;
	if (topic == NULL || *topic == '\0')
		return codec_refuse(err, "header.destination", "a %s names "
		    "its topic: destination topic:NAME", on ? "SUBSCRIBE" :
		    "UNSUBSCRIBE");
	if (on)
		json_array_append_new(frames, codec_call(CORRAL_M_SCOPE_JOIN,
		    "sub", mid, json_pack("{s:s, s:b}", "scopeId", topic,
		    "create", 1)));
	else
		json_array_append_new(frames, codec_call(CORRAL_M_SCOPE_LEAVE,
		    "unsub", mid, json_pack("{s:s}", "scopeId", topic)));
	return 0;
}

/* One line a bus agent wrote, as corral's frames. */
static int
bus_decode(struct codec_state *cs, json_t *m, json_t *frames,
    struct codec_error *err)
{
	const char	*type = bus_sfield(m, "type");
	json_t		*b = json_object_get(m, "body");

	if (json_object_get(m, "header") != NULL &&
	    !json_is_object(json_object_get(m, "header")))
		return codec_refuse(err, "header", "header must be an object");
	if (b != NULL && !json_is_object(b))
		return codec_refuse(err, "body", "body must be an object");
	if (type == NULL)
		return codec_refuse(err, "header.type", "a bus message needs "
		    "header.type: REQUEST, RESPONSE, PUBLISH or BROADCAST");
	if (strcmp(type, "RESPONSE") == 0)
		return bus_response(cs, m, frames, err);
	if (strcmp(type, "REQUEST") == 0)
		return bus_request(cs, m, frames, err);
	if (strcmp(type, "PUBLISH") == 0)
		return bus_publish(cs, m, frames, err, 0);
	if (strcmp(type, "BROADCAST") == 0)
		return bus_publish(cs, m, frames, err, 1);
	if (strcmp(type, "SUBSCRIBE") == 0)
		return bus_subscribe(cs, m, frames, err, 1);
	if (strcmp(type, "UNSUBSCRIBE") == 0)
		return bus_subscribe(cs, m, frames, err, 0);
	if (strcmp(type, "REGISTER") == 0) {
		json_array_append_new(frames, codec_call(CORRAL_M_REGISTER,
		    "reg", bus_sfield(m, "messageId"), json_pack("{s:{s:O*, "
		    "s:O*, s:O*}}", "metadata", "capabilities",
		    json_object_get(b, "capabilities"), "version",
		    json_object_get(b, "version"), "name",
		    json_object_get(b, "name"))));
		return 0;
	}
	if (strcmp(type, "HEARTBEAT") == 0) {
		/* A sign of life, and nothing more. */
		json_array_append_new(frames, codec_alive());
		return 0;
	}
	return codec_refuse(err, "header.type", "unknown header.type '%.40s': "
	    "REQUEST, RESPONSE, PUBLISH, BROADCAST, SUBSCRIBE, UNSUBSCRIBE, "
	    "REGISTER or HEARTBEAT", type);
}

/* A bus message from corral's side (a new reference). */
static json_t *
bus_message(struct codec_state *cs, const char *type, const char *id,
    const char *corr, const char *source, json_t *body)
{
	json_t	*h;
	char	 ts[40], nid[CORRAL_ID_MAX];

	util_rfc3339(ts, sizeof ts);
	if (id == NULL)
		id = protocol_new_id(nid, sizeof nid);
	h = json_pack("{s:s, s:s, s:s, s:s, s:s}", "messageId", id, "type",
	    type, "source", source != NULL ? source : "corral",
	    "destination", cs->agent, "timestamp", ts);
	if (corr != NULL)
		json_object_set_new(h, "correlationId", json_string(corr));
	return json_pack("{s:o, s:o}", "header", h, "body", body != NULL ?
	    body : json_object());
}

/* Put an envelope's trace, priority and TTL into a bus message. */
static void
bus_from_envelope(json_t *msg, json_t *env)
{
	json_t		*h = json_object_get(msg, "header"), *kept, *t, *v;
	const char	*id, *parent;

	kept = json_object_get(env, "bus");
	if ((v = json_object_get(env, "priority")) != NULL)
		json_object_set_new(h, "priority", json_integer(codec_prio(v)));
	if (json_is_number(v = json_object_get(env, "ttl_ms")))
		json_object_set(h, "ttl", v);
	if ((t = json_object_get(kept, "trace")) != NULL) {
		json_object_set(msg, "trace", t);
		return;
	}
	id = json_string_value(json_object_get(json_object_get(env, "trace"),
	    "id"));
	parent = codec_parent(env);
	t = json_object();
	if (id != NULL) {
		json_object_set_new(t, "traceId", json_string(id));
		json_object_set_new(t, "spanId", json_string(id));
	}
	if (parent != NULL)
		json_object_set_new(t, "parentSpan", json_string(parent));
	json_object_set_new(msg, "trace", t);
}

/* The context a bus agent gets: the one kept, or the session's. */
static void
bus_context(json_t *body, json_t *env)
{
	json_t		*ctx = json_object_get(json_object_get(env, "bus"),
			    "context");
	const char	*sess = json_string_value(json_object_get(env,
			    "session"));

	if (ctx != NULL)
		json_object_set(body, "context", ctx);
	else if (sess != NULL)
		json_object_set_new(body, "context", json_pack("{s:s}",
		    "sessionId", sess));
}

/* A request envelope as a REQUEST the agent answers with a RESPONSE. */
static json_t *
bus_encode_request(struct codec_state *cs, json_t *env, const char *parent)
{
	json_t		*body, *kept = json_object_get(env, "bus"), *msg;
	const char	*id, *intent, *action;

	id = json_string_value(json_object_get(json_object_get(env, "trace"),
	    "id"));
	intent = codec_str(env, "intent", "execute");
	action = codec_str(kept, "action", intent);
	body = json_pack("{s:s, s:o, s:b}", "action", action, "payload",
	    codec_content(env), "responseRequired", 1);
	if (kept == NULL) {
		/* From an envelope agent: its task and inputs go along. */
		json_object_set(body, "task", json_object_get(env, "task"));
		if (json_object_get(env, "inputs") != NULL)
			json_object_set(body, "inputs", json_object_get(env,
			    "inputs"));
	}
	if (parent != NULL)
		json_object_set_new(body, "parent", json_string(parent));
	bus_context(body, env);
	codec_remember(cs, id, intent, "request");
	msg = bus_message(cs, "REQUEST", id, NULL, codec_str(
	    json_object_get(env, "agent"), "id", "corral"), body);
	bus_from_envelope(msg, env);
	return msg;
}

/* A result, a child's result or a notice as a RESPONSE. */
static json_t *
bus_encode_response(struct codec_state *cs, json_t *env, const char *corr,
    const char *source, int notice)
{
	json_t		*body, *c = json_object_get(env, "content"), *d, *er;
	json_t		*msg;
	const char	*cat;

	if (strcmp(codec_str(c, "type", ""), "error") == 0) {
		d = json_object_get(c, "data");
		cat = codec_str(d, "category", "INTERNAL");
		er = json_pack("{s:s, s:s, s:b}", "code", cat, "message",
		    codec_str(d, "message", codec_str(c, "text", "error")),
		    "retryable", json_is_true(json_object_get(d, "retryable")));
		if (json_is_string(json_object_get(d, "code")))
			json_object_set(er, "corralCode", json_object_get(d,
			    "code"));
		if (json_object_get(d, "path") != NULL)
			json_object_set(er, "path", json_object_get(d, "path"));
		if (json_object_get(d, "retryAfter") != NULL)
			json_object_set(er, "retryAfter", json_object_get(d,
			    "retryAfter"));
		body = json_pack("{s:s, s:n, s:o}", "status",
		    strcmp(cat, "TIMEOUT") == 0 ? "TIMEOUT" : "ERROR",
		    "result", "error", er);
	} else
		body = json_pack("{s:s, s:o, s:n}", "status", "SUCCESS",
		    "result", codec_content(env), "error");
	if (json_object_get(env, "confidence") != NULL)
		json_object_set(body, "confidence", json_object_get(
		    json_object_get(env, "confidence"), "score"));
	bus_context(body, env);
	msg = bus_message(cs, "RESPONSE", json_string_value(json_object_get(
	    json_object_get(env, "trace"), "id")), corr, source, body);
	if (notice)
		json_object_set_new(json_object_get(msg, "header"), "notice",
		    json_true());
	bus_from_envelope(msg, env);
	return msg;
}

/* A message another agent sent: PUBLISH (or BROADCAST, as it was sent). */
static json_t *
bus_encode_message(struct codec_state *cs, json_t *env, json_t *cm)
{
	json_t		*kept = json_object_get(env, "bus"), *body, *msg;
	const char	*type, *via = codec_str(cm, "via", NULL);
	char		 dest[CORRAL_ID_MAX + 16];

	type = codec_str(json_object_get(kept, "header"), "type", "PUBLISH");
	if (strcmp(type, "BROADCAST") != 0)
		type = "PUBLISH";
	body = json_pack("{s:s, s:o}", "event", codec_str(kept, "event",
	    codec_str(env, "task", "message")), "data", codec_content(env));
	bus_context(body, env);
	msg = bus_message(cs, type, codec_str(cm, "messageId", NULL), NULL,
	    codec_str(cm, "from", "corral"), body);
	if (strcmp(type, "BROADCAST") == 0)
		snprintf(dest, sizeof dest, "*");
	else if (via != NULL)
		snprintf(dest, sizeof dest, "topic:%s", via);
	else
		snprintf(dest, sizeof dest, "%s", cs->agent);
	json_object_set_new(json_object_get(msg, "header"), "destination",
	    json_string(dest));
	bus_from_envelope(msg, env);
	return msg;
}

/* The bus's name of a MAP state. */
static const char *
bus_state(const char *map)
{
	size_t	i;

	for (i = 0; i < sizeof bus_states / sizeof bus_states[0]; i++)
		if (map != NULL && strcmp(bus_states[i].map, map) == 0)
			return bus_states[i].bus;
	return "UNAVAILABLE";
}

/* The registry's answer: {agents: [{id, name, status, capabilities}]}. */
static json_t *
bus_found(json_t *result)
{
	json_t	*list = json_array(), *a, *md;
	size_t	 i;

	json_array_foreach(json_object_get(result, "agents"), i, a) {
		md = json_object_get(a, "metadata");
		json_array_append_new(list, json_pack("{s:O, s:O, s:s, s:o}",
		    "id", json_object_get(a, "id"), "name", json_object_get(a,
		    "name"), "status", bus_state(codec_str(a, "state", NULL)),
		    "capabilities", json_object_get(md, "capabilities") != NULL ?
		    json_incref(json_object_get(md, "capabilities")) :
		    json_array()));
	}
	return json_pack("{s:o}", "agents", list);
}

/* The answer to a control frame the codec made for the agent. */
static json_t *
bus_encode_answer(struct codec_state *cs, json_t *f)
{
	json_t		*er = json_object_get(f, "error"), *res;
	const char	*mid, *topic;
	char		 kind[16];
	int		 code;

	if (codec_call_id(f, kind, sizeof kind, &mid) != 0)
		return NULL;
	if (er != NULL) {
		code = (int)json_integer_value(json_object_get(er, "code"));
		/* Publishing to a topic nobody ever subscribed to is no error. */
		if (strcmp(kind, "pub") == 0 && code == CORRAL_E_NOSCOPE)
			return NULL;
		return bus_message(cs, "RESPONSE", NULL, mid, "corral",
		    json_pack("{s:s, s:n, s:{s:s, s:s, s:b, s:i}}", "status",
		    "ERROR", "result", "error", "code", bus_rpc_category(code),
		    "message", codec_str(er, "message", "refused"), "retryable",
		    strcmp(bus_rpc_category(code), "UNAVAILABLE") == 0,
		    "rpcCode", code));
	}
	res = json_object_get(f, "result");
	if (strcmp(kind, "find") == 0)
		return bus_message(cs, "RESPONSE", NULL, mid, "registry",
		    json_pack("{s:s, s:o}", "status", "SUCCESS", "result",
		    bus_found(res)));
	if (strcmp(kind, "sub") == 0 || strcmp(kind, "unsub") == 0) {
		topic = codec_str(json_object_get(res, "scope"), "id", "");
		return bus_message(cs, "RESPONSE", NULL, mid, "registry",
		    json_pack("{s:s, s:{s:s, s:b}}", "status", "SUCCESS",
		    "result", "topic", topic, "subscribed", kind[0] == 's'));
	}
	if (strcmp(kind, "sess") == 0)
		return bus_message(cs, "RESPONSE", NULL, mid, "registry",
		    json_pack("{s:s, s:{s:O, s:O*}}", "status", "SUCCESS",
		    "result", "sessionId", json_object_get(res, "sessionId"),
		    "session", json_object_get(json_object_get(res, "_meta"),
		    "corral")));
	if (strcmp(kind, "reg") == 0)
		return bus_message(cs, "RESPONSE", NULL, mid, "registry",
		    json_pack("{s:s, s:{s:O}}", "status", "SUCCESS", "result",
		    "agent", json_object_get(res, "agent")));
	return NULL;	/* req, pub: the result, or nothing, comes later */
}

/* One line corral writes to a bus agent, in the bus's terms. */
static json_t *
bus_encode(struct codec_state *cs, json_t *f)
{
	const char	*kind = codec_kind(f), *m;
	json_t		*cm = json_object_get(f, "corral");

	if (kind == NULL) {
		m = json_string_value(json_object_get(f, "method"));
		if (m != NULL && strcmp(m, CORRAL_M_PING) == 0)
			return bus_message(cs, "HEARTBEAT", NULL, NULL, "corral",
			    NULL);
		if (m == NULL)
			return bus_encode_answer(cs, f);
		return NULL;
	}
	if (*kind == '\0')
		return bus_encode_request(cs, f, NULL);
	if (strcmp(kind, "task") == 0)
		return bus_encode_request(cs, f, codec_str(cm, "parent", NULL));
	if (strcmp(kind, CORRAL_KIND_RESULT) == 0)
		return bus_encode_response(cs, f, codec_str(cm, "correlationId",
		    NULL), codec_str(cm, "from", "corral"), 0);
	if (strcmp(kind, CORRAL_KIND_CHILD_RESULT) == 0)
		return bus_encode_response(cs, f, codec_str(cm, "spawn", NULL),
		    codec_str(cm, "child", "corral"), 0);
	if (strcmp(kind, CORRAL_KIND_NOTICE) == 0)
		return bus_encode_response(cs, f, codec_parent(f), "corral", 1);
	if (strcmp(kind, CORRAL_KIND_MESSAGE) == 0)
		return bus_encode_message(cs, f, cm);
	if (strcmp(kind, CORRAL_KIND_CANCEL) == 0)
		return bus_message(cs, "CANCEL", NULL, codec_str(cm, "request",
		    NULL), "corral", json_pack("{s:O*}", "reason",
		    json_object_get(json_object_get(f, "content"), "text")));
	if (strcmp(kind, CORRAL_KIND_PROGRESS) == 0)
		return bus_message(cs, "PROGRESS", NULL, codec_str(cm, "request",
		    NULL), codec_str(cm, "child", "corral"), json_pack(
		    "{s:O*}", "text", json_object_get(json_object_get(f,
		    "content"), "text")));
	return NULL;
}

/*
 * The tape's paths for the two kinds every message of a bus agent passes
 * through: a request to the agent (bus_encode_request) and its SUCCESS
 * RESPONSE (bus_response).  They make what those make, from the scanner's
 * tape, and decline (0) anything else.
 */

/* A header member's token: in header, else at the top (bus_field). */
static int
bus_tape_field(struct jscan *js, const char *s, int hdr, const char *key)
{
	int	v = jscan_get(js, s, hdr, key);

	return v >= 0 ? v : jscan_get(js, s, 0, key);
}

/* Write the "bus" member bus_keep makes. */
static void
bus_tape_keep(struct jsonw *j, struct jscan *js, const char *s, int hdr,
    int body)
{
	static const char *const kept[] = { "context", "action", "event" };
	size_t	i;

	JSONW_KEY(j, "bus");
	jsonw_object(j);
	JSONW_KEY(j, "header");
	if (hdr >= 0)
		codec_tape_raw(j, js, s, hdr);
	else {
		/* The short form: its header's members at the top. */
		jsonw_object(j);
		for (i = 0; bus_header_keys[i] != NULL; i++)
			codec_tape_member(j, bus_header_keys[i], js, s,
			    jscan_get(js, s, 0, bus_header_keys[i]));
		jsonw_object_end(j);
	}
	for (i = 0; i < sizeof kept / sizeof kept[0]; i++)
		codec_tape_member(j, kept[i], js, s, jscan_get(js, s, body,
		    kept[i]));
	codec_tape_member(j, "trace", js, s, JSCAN_GET(js, s, 0, "trace"));
	jsonw_object_end(j);
}

/* A SUCCESS RESPONSE from the tape, as bus_response makes it. */
static int
bus_tape_decode(struct codec_state *cs, struct jscan *js, const char *s,
    struct jsonw *j)
{
	const struct codec_entry	*e;
	char				 buf[256], corr[256];
	const char			*intent;
	int				 hdr, body, v, act, corr_tok;

	hdr = JSCAN_GET(js, s, 0, "header");
	body = JSCAN_GET(js, s, 0, "body");
	if ((hdr >= 0 && js->tok[hdr].type != JT_OBJECT) ||
	    (body >= 0 && js->tok[body].type != JT_OBJECT) ||
	    codec_tape_text(js, s, bus_tape_field(js, s, hdr, "type"), buf,
	    sizeof buf) != 1 || strcmp(buf, "RESPONSE") != 0)
		return 0;
	corr_tok = bus_tape_field(js, s, hdr, "correlationId");
	if (codec_tape_text(js, s, corr_tok, corr, sizeof corr) != 1)
		return 0;
	if ((v = codec_tape_text(js, s, JSCAN_GET(js, s, body, "status"), buf,
	    sizeof buf)) < 0 || (v == 1 && strcmp(buf, "SUCCESS") != 0))
		return 0;
	e = codec_recall(cs, corr);
	intent = e != NULL && e->intent[0] ? e->intent : "execute";
	act = JSCAN_GET(js, s, body, "action");
	if ((v = codec_tape_text(js, s, act, buf, sizeof buf)) < 0)
		return 0;
	if (v == 1 && codec_intent(buf) != NULL)
		intent = codec_intent(buf);
	codec_tape_envelope(j, cs->agent, intent, "response", js, s,
	    v == 1 ? act : -1, JSCAN_GET(js, s, body, "result"));
	codec_tape_trace(j, js, s, bus_tape_field(js, s, hdr, "messageId"),
	    corr_tok);
	codec_tape_common(j, js, s, bus_tape_field(js, s, hdr, "priority"),
	    bus_tape_field(js, s, hdr, "ttl"), JSCAN_GET(js, s, JSCAN_GET(js, s,
	    body, "context"), "sessionId"));
	bus_tape_keep(j, js, s, hdr, body);
	codec_tape_score(j, js, s, JSCAN_GET(js, s, body, "confidence"));
	jsonw_object_end(j);
	return 1;
}

/* The trace a bus agent gets (bus_from_envelope), from the tape. */
static void
bus_tape_trace(struct jsonw *j, struct jscan *js, const char *s, int kept,
    int id)
{
	int	v, trace;

	JSONW_KEY(j, "trace");
	if ((v = JSCAN_GET(js, s, kept, "trace")) >= 0) {
		codec_tape_raw(j, js, s, v);
		return;
	}
	jsonw_object(j);
	if (id >= 0) {
		JSONW_KEY(j, "traceId");
		codec_tape_raw(j, js, s, id);
		JSONW_KEY(j, "spanId");
		codec_tape_raw(j, js, s, id);
	}
	trace = JSCAN_GET(js, s, 0, "trace");
	v = JSCAN_GET(js, s, trace, "parents");
	if (v >= 0 && js->tok[v].type == JT_ARRAY &&
	    (v = jscan_first(js, v)) >= 0 && js->tok[v].type == JT_STRING) {
		JSONW_KEY(j, "parentSpan");
		codec_tape_raw(j, js, s, v);
	}
	jsonw_object_end(j);
}

/* A request (or a task) from the tape, as bus_encode_request makes it. */
static int
bus_tape_encode(struct codec_state *cs, struct jscan *js, const char *s,
    struct jsonw *j)
{
	char	kind[16], id[256], intent[256], ts[40], nid[CORRAL_ID_MAX];
	int	kept, cm, id_tok, has_id, it, v, ctx = -1, act = -1, parent = -1;

	if (!codec_tape_kind(js, s, kind, sizeof kind) || (kind[0] != '\0' &&
	    strcmp(kind, "task") != 0))
		return 0;
	cm = JSCAN_GET(js, s, 0, "corral");
	id_tok = JSCAN_GET(js, s, JSCAN_GET(js, s, 0, "trace"), "id");
	it = JSCAN_GET(js, s, 0, "intent");
	if ((has_id = codec_tape_text(js, s, id_tok, id, sizeof id)) < 0 ||
	    (v = codec_tape_text(js, s, it, intent, sizeof intent)) < 0)
		return 0;
	if (v == 0)
		strlcpy(intent, "execute", sizeof intent);
	kept = JSCAN_GET(js, s, 0, "bus");
	if (kept >= 0 && js->tok[kept].type == JT_OBJECT) {
		ctx = JSCAN_GET(js, s, kept, "context");
		if ((act = JSCAN_GET(js, s, kept, "action")) >= 0 &&
		    js->tok[act].type != JT_STRING)
			act = -1;
	}
	if (kind[0] != '\0' && (parent = JSCAN_GET(js, s, cm, "parent")) >= 0 &&
	    js->tok[parent].type != JT_STRING)
		parent = -1;
	codec_remember(cs, has_id ? id : NULL, intent, "request");

	jsonw_object(j);
	JSONW_KEY(j, "header");
	jsonw_object(j);
	JSONW_KEY(j, "messageId");
	if (has_id)
		codec_tape_raw(j, js, s, id_tok);
	else
		jsonw_str(j, protocol_new_id(nid, sizeof nid));
	JSONW_KEY(j, "type");
	jsonw_str(j, "REQUEST");
	JSONW_KEY(j, "source");
	codec_tape_str_or(j, js, s, JSCAN_GET(js, s, JSCAN_GET(js, s, 0,
	    "agent"), "id"), "corral");
	JSONW_KEY(j, "destination");
	jsonw_str(j, cs->agent);
	JSONW_KEY(j, "timestamp");
	util_rfc3339(ts, sizeof ts);
	jsonw_str(j, ts);
	if ((v = JSCAN_GET(js, s, 0, "priority")) >= 0) {
		JSONW_KEY(j, "priority");
		jsonw_u64(j, (uint64_t)codec_tape_prio(js, s, v));
	}
	if ((v = JSCAN_GET(js, s, 0, "ttl_ms")) >= 0 &&
	    js->tok[v].type == JT_NUMBER) {
		JSONW_KEY(j, "ttl");
		codec_tape_raw(j, js, s, v);
	}
	jsonw_object_end(j);

	JSONW_KEY(j, "body");
	jsonw_object(j);
	JSONW_KEY(j, "action");
	codec_tape_str_or(j, js, s, act, intent);
	JSONW_KEY(j, "payload");
	codec_tape_raw(j, js, s, codec_tape_content(js, s, JSCAN_GET(js, s,
	    0, "content")));
	JSONW_KEY(j, "responseRequired");
	jsonw_bool(j, 1);
	if (kept < 0) {
		/* From an envelope agent: its task and inputs go along. */
		codec_tape_member(j, "task", js, s, JSCAN_GET(js, s, 0, "task"));
		codec_tape_member(j, "inputs", js, s, JSCAN_GET(js, s, 0,
		    "inputs"));
	}
	codec_tape_member(j, "parent", js, s, parent);
	if (ctx >= 0) {
		JSONW_KEY(j, "context");
		codec_tape_raw(j, js, s, ctx);
	} else if ((v = JSCAN_GET(js, s, 0, "session")) >= 0 &&
	    js->tok[v].type == JT_STRING) {
		JSONW_KEY(j, "context");
		jsonw_object(j);
		JSONW_KEY(j, "sessionId");
		codec_tape_raw(j, js, s, v);
		jsonw_object_end(j);
	}
	jsonw_object_end(j);
	bus_tape_trace(j, js, s, kept >= 0 && js->tok[kept].type ==
	    JT_OBJECT ? kept : -1, has_id ? id_tok : -1);
	jsonw_object_end(j);
	return 1;
}

/* The id of a message, for redeliveries (codec_ops' tape_id). */
static int
bus_tape_id(struct jscan *js, const char *s, char *buf, size_t size,
    const char **path)
{
	int	hdr = JSCAN_GET(js, s, 0, "header");

	if (hdr >= 0 && js->tok[hdr].type != JT_OBJECT)
		return 0;
	*path = jscan_get(js, s, hdr, "messageId") >= 0 ? "header.messageId" :
	    "messageId";
	return codec_tape_message_id(js, s, bus_tape_field(js, s, hdr,
	    "messageId"), bus_tape_field(js, s, hdr, "type"), buf, size);
}

const struct codec_ops codec_bus_ops = {
	.name = "bus",
	.decode = bus_decode,
	.encode = bus_encode,
	.message_id = bus_message_id,
	.tape_decode = bus_tape_decode,
	.tape_encode = bus_tape_encode,
	.tape_id = bus_tape_id,
};
