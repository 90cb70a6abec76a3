/*
 * The AgentMessage dialect (protocol: agentmessage): {id, timestamp,
 * from, to, type, payload, metadata} with the types TASK_ASSIGNMENT,
 * TASK_HANDOFF, TASK_UPDATE, TASK_COMPLETE, TASK_FAILED, HELP_REQUEST,
 * HELP_RESPONSE, STATUS_UPDATE, HEARTBEAT and ERROR_REPORT, and corral's
 * REGISTRY_QUERY, SUBSCRIBE and UNSUBSCRIBE.  docs/dialects.md has the
 * mapping, field by field, both ways.
 *
 * A task corral gives the agent is a TASK_ASSIGNMENT whose task_id is
 * the request's trace.id; TASK_COMPLETE and TASK_FAILED answer it.  The
 * agent's own TASK_ASSIGNMENT and HELP_REQUEST are requests to another
 * agent (named, or found by capability: a help type CODE_REVIEW finds an
 * agent with the capability code-review), whose results come back as
 * TASK_COMPLETE / TASK_FAILED and HELP_RESPONSE.  TASK_HANDOFF moves the
 * task the agent works on to another agent (_corral/handoff), TASK_UPDATE
 * is progress (_corral/progress), STATUS_UPDATE the agent's metadata and
 * reported state (map/agents/update), ERROR_REPORT a typed error: the
 * end of the task it names when its severity is high or critical, else a
 * report on it (_corral/report) that the task's outcome carries.  A
 * message whose id the codec accepted before is a redelivery (codec.c
 * drops it).
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

/* Its error types, and corral's category for each. */
static const struct {
	const char	*type;
	const char	*category;
	int		 retryable;
} am_errors[] = {
	{ "TIMEOUT",			"TIMEOUT",	1 },
	{ "RATE_LIMIT",			"UNAVAILABLE",	1 },
	{ "VALIDATION_ERROR",		"REJECTED",	0 },
	{ "NETWORK_ERROR",		"UNAVAILABLE",	1 },
	{ "AUTHENTICATION_ERROR",	"REJECTED",	0 },
	{ "RESOURCE_EXHAUSTED",		"UNAVAILABLE",	1 },
	{ "INTERNAL_ERROR",		"INTERNAL",	0 },
	{ "EXTERNAL_SERVICE_ERROR",	"UNAVAILABLE",	1 },
};

/* corral's category of an error type (unknown ones are INTERNAL). */
static const char *
am_category(const char *type, int *retryable)
{
	size_t	i;

	for (i = 0; i < sizeof am_errors / sizeof am_errors[0]; i++)
		if (type != NULL && strcmp(am_errors[i].type, type) == 0) {
			*retryable = am_errors[i].retryable;
			return am_errors[i].category;
		}
	*retryable = 0;
	return "INTERNAL";
}

/* The error type of corral's category (a notice, a failed request). */
static const char *
am_error_type(const char *category, const char *code)
{
	if (code != NULL && strcmp(code, "timeout") == 0)
		return "TIMEOUT";
	if (code != NULL && strcmp(code, "budget_exceeded") == 0)
		return "RESOURCE_EXHAUSTED";
	if (category != NULL && strcmp(category, "REJECTED") == 0)
		return "VALIDATION_ERROR";
	if (category != NULL && strcmp(category, "TIMEOUT") == 0)
		return "TIMEOUT";
	if (category != NULL && strcmp(category, "UNAVAILABLE") == 0)
		return "RESOURCE_EXHAUSTED";
	return "INTERNAL_ERROR";
}

/* A lower-case copy of a word, for corral's error codes. */
static void
am_lower(char *dst, size_t len, const char *src)
{
	size_t	i;

	for (i = 0; src[i] != '\0' && i < len - 1; i++)
		dst[i] = src[i] >= 'A' && src[i] <= 'Z' ? src[i] - 'A' + 'a' :
		    src[i];
	dst[i] = '\0';
}

/* The id of an AgentMessage, for errors about it. */
static const char *
am_message_id(json_t *m)
{
	return codec_str(m, "id", "");
}

/* The task an answer names: payload.task_id, else the correlation id. */
static const char *
am_task_of(json_t *m)
{
	const char	*t;

	if ((t = codec_str(json_object_get(m, "payload"), "task_id",
	    NULL)) != NULL)
		return t;
	if ((t = codec_str(json_object_get(m, "payload"), "request_id",
	    NULL)) != NULL)
		return t;
	return codec_str(json_object_get(m, "metadata"), "correlation_id",
	    NULL);
}

/*
 * The envelope an AgentMessage becomes: intent and task given, content
 * of its payload (or the part given), its id, priority, TTL, session,
 * and the rest of the message kept in the envelope's "agentmessage".
 */
static json_t *
am_to_envelope(struct codec_state *cs, json_t *m, const char *intent,
    const char *task, json_t *data)
{
	json_t		*env, *md = json_object_get(m, "metadata"), *k, *v;
	json_t		*ctx;
	const char	*s;

	env = codec_envelope(cs->agent, intent, task, json_is_string(data) ?
	    "text" : "json");
	if (json_is_string(data))
		json_object_set(json_object_get(env, "content"), "text", data);
	else if (data != NULL && !json_is_null(data))
		json_object_set(json_object_get(env, "content"), "data", data);
	codec_trace(env, codec_str(m, "id", NULL), NULL);
	if ((v = json_object_get(md, "priority")) != NULL)
		json_object_set_new(env, "priority",
		    json_integer(codec_prio(v)));
	if (json_is_number(v = json_object_get(md, "ttl_ms")) &&
	    json_number_value(v) >= 0)
		json_object_set(env, "ttl_ms", v);
	ctx = json_object_get(json_object_get(m, "payload"), "context");
	if ((s = codec_str(ctx, "session_id", codec_str(md, "session_id",
	    NULL))) != NULL)
		json_object_set_new(env, "session", json_string(s));
	k = json_object();
	json_object_foreach(m, s, v)
		if (strcmp(s, "payload") != 0)
			json_object_set(k, s, v);
	json_object_set_new(env, "agentmessage", k);
	return env;
}

/* A JSON-RPC call for the agent, its id naming the message it came of. */
static void
am_call(json_t *frames, const char *method, const char *kind, json_t *m,
    json_t *params)
{
	json_array_append_new(frames, codec_call(method, kind, codec_str(m,
	    "id", NULL), params));
}

/* TASK_COMPLETE and TASK_FAILED: the answer to the task they name. */
static int
am_task_end(struct codec_state *cs, json_t *m, json_t *frames,
    struct codec_error *err, int failed)
{
	const struct codec_entry	*e;
	const char			*task = am_task_of(m), *etype, *cat;
	json_t				*p = json_object_get(m, "payload"), *env;
	json_t				*er, *c, *v;
	char				 code[64];
	int				 retry = 0;

	if (task == NULL)
		return codec_refuse(err, "payload.task_id", "a %s names its "
		    "task in payload.task_id (or metadata.correlation_id)",
		    failed ? "TASK_FAILED" : "TASK_COMPLETE");
	e = codec_recall(cs, task);
	if (!failed) {
		v = json_object_get(p, "result");
		env = am_to_envelope(cs, m, e != NULL && e->intent[0] ?
		    e->intent : "execute", "TASK_COMPLETE", v != NULL ? v : p);
		if (json_is_number(v = json_object_get(p, "confidence")))
			json_object_set_new(env, "confidence", json_pack(
			    "{s:f}", "score", json_number_value(v)));
	} else {
		er = json_object_get(p, "error");
		etype = json_is_string(er) ? NULL : codec_str(er, "error_type",
		    NULL);
		am_lower(code, sizeof code, etype != NULL ? etype :
		    "task_failed");
		env = am_to_envelope(cs, m, e != NULL && e->intent[0] ?
		    e->intent : "execute", "TASK_FAILED", NULL);
		c = json_object_get(env, "content");
		json_object_set_new(c, "type", json_string("error"));
		json_object_set_new(c, "text", json_string(json_is_string(er) ?
		    json_string_value(er) : codec_str(er, "message",
		    "the task failed")));
		cat = am_category(etype, &retry);
		json_object_set_new(c, "data", json_pack("{s:s, s:s, s:s, s:b, "
		    "s:O*}", "code", code, "category", cat, "message", json_string_value(json_object_get(c,
		    "text")), "retryable", retry, "report", er));
		if (json_is_string(v = json_object_get(er, "severity")))
			json_object_set(json_object_get(c, "data"), "severity",
			    v);
	}
	json_object_set_new(json_object_get(env, "trace"), "parents",
	    json_pack("[s]", task));
	json_array_append_new(frames, env);
	return 0;
}

/* TASK_ASSIGNMENT and HELP_REQUEST: a request to another agent. */
static int
am_request(struct codec_state *cs, json_t *m, json_t *frames,
    struct codec_error *err, int help)
{
	json_t		*p = json_object_get(m, "payload"), *env, *meta;
	const char	*to = codec_str(m, "to", ""), *type, *intent, *id;
	const char	*urg;
	char		 addr[200];

	id = codec_str(m, "id", NULL);
	type = help ? "HELP_REQUEST" : "TASK_ASSIGNMENT";
	if (help) {
		intent = "analyze";
		env = am_to_envelope(cs, m, intent, codec_str(p, "description",
		    "help"), p);
		urg = codec_str(p, "urgency", NULL);
		if (urg != NULL && json_object_get(json_object_get(m,
		    "metadata"), "priority") == NULL)
			json_object_set_new(env, "priority", json_integer(
			    codec_prio_name(strcmp(urg, "medium") == 0 ?
			    "normal" : urg)));
	} else {
		intent = codec_intent(codec_str(p, "task_type", NULL));
		if (intent == NULL)
			intent = "execute";
		env = am_to_envelope(cs, m, intent, codec_str(p, "description",
		    codec_str(p, "task_id", "task")), p);
	}
	codec_remember(cs, id, intent, type);
	if (*to == '\0' || strcmp(to, "corral") == 0) {
		if (!help) {
			am_call(frames, CORRAL_M_ROUTE, "task", m, json_pack(
			    "{s:o, s:s*}", "payload", env, "correlationId",
			    id));
			return 0;
		}
		if (codec_str(p, "help_type", NULL) == NULL) {
			json_decref(env);
			return codec_refuse(err, "payload.help_type", "a "
			    "HELP_REQUEST names its helper in to, or a "
			    "help_type to find one by capability");
		}
		snprintf(addr, sizeof addr, "capability:%s", codec_str(p,
		    "help_type", ""));
		to = addr;
	}
	meta = json_pack("{s:b, s:s*, s:s}", "expectsResponse", 1,
	    "correlationId", id, "priority", protocol_priority_name(
	    codec_prio(json_object_get(env, "priority"))));
	am_call(frames, CORRAL_M_SEND, help ? "help" : "task", m, json_pack(
	    "{s:s, s:o, s:o}", "to", to, "payload", env, "meta", meta));
	return 0;
}

/* TASK_HANDOFF: the task the agent works on goes to another agent. */
static int
am_handoff(struct codec_state *cs, json_t *m, json_t *frames,
    struct codec_error *err)
{
	json_t		*p = json_object_get(m, "payload"), *params, *caps, *f;
	const char	*task = codec_str(p, "task_id", NULL), *to;
	int		 rc;

	if (json_is_boolean(json_object_get(p, "accepted"))) {
		/* A TaskHandoffResponse: the new agent took it, or not. */
		if (json_is_true(json_object_get(p, "accepted"))) {
			json_array_append_new(frames, codec_alive());
			return 0;
		}
		f = json_pack("{s:O*, s:{s:s*, s:{s:s, s:s}}}", "id",
		    json_object_get(m, "id"), "payload", "task_id",
		    am_task_of(m), "error", "error_type", "VALIDATION_ERROR",
		    "message", codec_str(p, "error", "the handoff was "
		    "refused"));
		rc = am_task_end(cs, f, frames, err, 1);
		json_decref(f);
		return rc;
	}
	if (task == NULL)
		return codec_refuse(err, "payload.task_id", "a TASK_HANDOFF "
		    "names the task it hands off in payload.task_id");
	to = codec_str(p, "to_agent", codec_str(m, "to", NULL));
	params = json_pack("{s:s, s:s, s:O*, s:O*}", "requestId", task,
	    "reason", codec_str(p, "reason", "unspecified"), "context",
	    json_object_get(p, "context"), "constraints",
	    json_object_get(p, "constraints"));
	if (to != NULL && *to != '\0' && strcmp(to, "corral") != 0)
		json_object_set_new(params, "to", json_string(to));
	caps = json_object_get(json_object_get(p, "constraints"),
	    "required_capabilities");
	if (json_is_string(json_array_get(caps, 0)))
		json_object_set(params, "capability", json_array_get(caps, 0));
	am_call(frames, CORRAL_M_HANDOFF, "hand", m, params);
	return 0;
}

/* HELP_RESPONSE: the answer to a help request corral delivered. */
static int
am_help_response(struct codec_state *cs, json_t *m, json_t *frames,
    struct codec_error *err)
{
	json_t		*p = json_object_get(m, "payload"), *env, *c;
	const char	*req = am_task_of(m), *rt;

	if (req == NULL)
		return codec_refuse(err, "payload.request_id", "a HELP_RESPONSE "
		    "names the help request in payload.request_id");
	rt = codec_str(p, "response_type", "DIRECT_ANSWER");
	env = am_to_envelope(cs, m, "analyze", "HELP_RESPONSE", p);
	c = json_object_get(env, "content");
	if (json_is_string(json_object_get(p, "content")))
		json_object_set(c, "text", json_object_get(p, "content"));
	if (strcmp(rt, "UNABLE_TO_HELP") == 0) {
		json_object_set_new(c, "type", json_string("error"));
		json_object_set_new(c, "data", json_pack("{s:s, s:s, s:s, s:b, "
		    "s:O}", "code", "unable_to_help", "category", "REJECTED",
		    "message", codec_str(p, "content", "unable to help"),
		    "retryable", 0, "response", p));
	}
	json_object_set_new(json_object_get(env, "trace"), "parents",
	    json_pack("[s]", req));
	json_array_append_new(frames, env);
	return 0;
}

/*
 * ERROR_REPORT: a typed error.  Of high or critical severity, and naming
 * a task, it fails that task; of a lower one, a report on the task
 * (_corral/report) that its outcome and its job's result carry; naming no
 * task, the agent's metadata.lastErrorReport.
 */
static int
am_error_report(struct codec_state *cs, json_t *m, json_t *frames,
    struct codec_error *err)
{
	json_t		*p = json_object_get(m, "payload"), *f;
	const char	*sev = codec_str(p, "severity", "medium");
	const char	*task = codec_str(p, "task_id", NULL);
	int		 rc;

	if (!json_is_object(p) || codec_str(p, "error_type", NULL) == NULL)
		return codec_refuse(err, "payload.error_type", "an ERROR_REPORT "
		    "names its error_type");
	if (task != NULL && (strcmp(sev, "high") == 0 ||
	    strcmp(sev, "critical") == 0)) {
		f = json_pack("{s:O*, s:O*, s:{s:s, s:O}}", "id",
		    json_object_get(m, "id"), "metadata", json_object_get(m,
		    "metadata"), "payload", "task_id", task, "error", p);
		rc = am_task_end(cs, f, frames, err, 1);
		json_decref(f);
		return rc;
	}
	if (task != NULL) {
		/* The task goes on; its outcome and its job's carry this. */
		am_call(frames, CORRAL_M_REPORT, "err", m, json_pack("{s:s, s:O, "
		    "s:s, s:s, s:O*}", "requestId", task, "errorType",
		    json_object_get(p, "error_type"), "severity", sev, "message",
		    codec_str(p, "message", ""), "errorId", json_object_get(p,
		    "error_id")));
		return 0;
	}
	am_call(frames, CORRAL_M_UPDATE, "err", m, json_pack("{s:{s:O}}",
	    "metadata", "lastErrorReport", p));
	return 0;
}

/* SUBSCRIBE or UNSUBSCRIBE: to payload.topic, or to: topic:NAME. */
static int
am_subscribe(struct codec_state *cs, json_t *m, json_t *frames,
    struct codec_error *err, int on)
{
	const char	*to = codec_str(m, "to", ""), *topic;

	topic = codec_str(json_object_get(m, "payload"), "topic", NULL);
	if (topic == NULL && strncmp(to, "topic:", 6) == 0)
		topic = to + 6;
	if (topic == NULL || *topic == '\0')
		return codec_refuse(err, "payload.topic", "a subscription names "
		    "its topic in payload.topic");
	if (on)
		am_call(frames, CORRAL_M_SCOPE_JOIN, "sub", m, json_pack(
		    "{s:s, s:b}", "scopeId", topic, "create", 1));
	else
		am_call(frames, CORRAL_M_SCOPE_LEAVE, "unsub", m, json_pack(
		    "{s:s}", "scopeId", topic));
	return 0;
}

/* A message to topic:NAME or to everyone ("*"): published, not asked. */
static int
am_publish(struct codec_state *cs, json_t *m, json_t *frames)
{
	const char	*to = codec_str(m, "to", "");
	json_t		*env;

	env = am_to_envelope(cs, m, "execute", codec_str(m, "type",
	    "message"), json_object_get(m, "payload"));
	am_call(frames, CORRAL_M_SEND, "pub", m, json_pack("{s:o, s:o}", "to",
	    strcmp(to, "*") == 0 ? json_pack("{s:b}", "broadcast", 1) :
	    json_string(to), "payload", env));
	return 0;
}

/* Check the members every AgentMessage has the types of. */
static int
am_check(json_t *m, struct codec_error *err)
{
	static const char *const strs[] = { "id", "from", "to", "timestamp",
	    NULL };
	json_t	*md = json_object_get(m, "metadata");
	size_t	 i;

	for (i = 0; strs[i] != NULL; i++)
		if (json_object_get(m, strs[i]) != NULL &&
		    !json_is_string(json_object_get(m, strs[i])))
			return codec_refuse(err, strs[i], "%s must be a string",
			    strs[i]);
	if (md != NULL && !json_is_object(md))
		return codec_refuse(err, "metadata", "metadata must be an "
		    "object");
	if (json_object_get(md, "priority") != NULL &&
	    json_string_value(json_object_get(md, "priority")) == NULL)
		return codec_refuse(err, "metadata.priority", "metadata.priority "
		    "is low, normal, high or critical");
	if (json_string_value(json_object_get(m, "type")) == NULL)
		return codec_refuse(err, "type", "an AgentMessage needs a type: "
		    "TASK_ASSIGNMENT, TASK_HANDOFF, TASK_UPDATE, TASK_COMPLETE, "
		    "TASK_FAILED, HELP_REQUEST, HELP_RESPONSE, STATUS_UPDATE, "
		    "HEARTBEAT or ERROR_REPORT");
	return 0;
}

/* One line an AgentMessage agent wrote, as corral's frames. */
static int
am_decode(struct codec_state *cs, json_t *m, json_t *frames,
    struct codec_error *err)
{
	json_t		*p = json_object_get(m, "payload"), *st;
	const char	*type, *to, *text;

	if (am_check(m, err) != 0)
		return -1;
	type = codec_str(m, "type", "");
	to = codec_str(m, "to", "");
	if (strcmp(type, "SUBSCRIBE") == 0 || strcmp(type, "UNSUBSCRIBE") == 0)
		return am_subscribe(cs, m, frames, err, type[0] == 'S');
	if (strncmp(to, "topic:", 6) == 0 || strcmp(to, "*") == 0)
		return am_publish(cs, m, frames);
	if (strcmp(type, "TASK_COMPLETE") == 0)
		return am_task_end(cs, m, frames, err, 0);
	if (strcmp(type, "TASK_FAILED") == 0)
		return am_task_end(cs, m, frames, err, 1);
	if (strcmp(type, "TASK_ASSIGNMENT") == 0)
		return am_request(cs, m, frames, err, 0);
	if (strcmp(type, "HELP_REQUEST") == 0)
		return am_request(cs, m, frames, err, 1);
	if (strcmp(type, "HELP_RESPONSE") == 0)
		return am_help_response(cs, m, frames, err);
	if (strcmp(type, "TASK_HANDOFF") == 0)
		return am_handoff(cs, m, frames, err);
	if (strcmp(type, "TASK_UPDATE") == 0) {
		if ((text = codec_str(p, "progress", codec_str(p, "message",
		    codec_str(p, "status", NULL)))) == NULL || am_task_of(m) ==
		    NULL)
			return codec_refuse(err, "payload", "a TASK_UPDATE names "
			    "its task_id and says its progress, message or "
			    "status");
		am_call(frames, CORRAL_M_PROGRESS, "upd", m, json_pack(
		    "{s:s, s:s}", "requestId", am_task_of(m), "text", text));
		return 0;
	}
	if (strcmp(type, "STATUS_UPDATE") == 0) {
		st = json_object_get(p, "status");
		am_call(frames, CORRAL_M_UPDATE, "stat", m, json_pack(
		    "{s:s*, s:{s:O*, s:O*, s:O*, s:O*}}", "state", codec_str(st,
		    "state", NULL), "metadata", "status", st, "resource_usage",
		    json_object_get(p, "resource_usage"), "health_metrics",
		    json_object_get(p, "health_metrics"), "current_tasks",
		    json_object_get(p, "current_tasks")));
		return 0;
	}
	if (strcmp(type, "ERROR_REPORT") == 0)
		return am_error_report(cs, m, frames, err);
	if (strcmp(type, "HEARTBEAT") == 0) {
		json_array_append_new(frames, codec_alive());
		return 0;
	}
	if (strcmp(type, "REGISTRY_QUERY") == 0 &&
	    codec_str(p, "session_id", NULL) != NULL) {
		am_call(frames, CORRAL_M_SESSION_LOAD, "sess", m, json_pack(
		    "{s:s}", "sessionId", codec_str(p, "session_id", "")));
		return 0;
	}
	if (strcmp(type, "REGISTRY_QUERY") == 0) {
		am_call(frames, CORRAL_M_LIST, "find", m, json_pack("{s:{s:O*}}",
		    "filter", "capability", json_object_get(p, "capability")));
		return 0;
	}
	return codec_refuse(err, "type", "unknown type '%.40s'", type);
}

/* An AgentMessage from corral's side (a new reference). */
static json_t *
am_message(struct codec_state *cs, const char *type, const char *id,
    const char *from, const char *corr, int prio, json_t *payload)
{
	json_t	*md;
	char	 ts[40], nid[CORRAL_ID_MAX];

	util_rfc3339(ts, sizeof ts);
	if (id == NULL)
		id = protocol_new_id(nid, sizeof nid);
	md = json_pack("{s:s, s:i, s:i}", "priority", prio <= PRIO_LOW ?
	    "low" : protocol_priority_name(prio), "retry_count", 0,
	    "max_retries", 0);
	if (corr != NULL)
		json_object_set_new(md, "correlation_id", json_string(corr));
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o}", "id", id,
	    "timestamp", ts, "from", from != NULL ? from : "corral", "to",
	    cs->agent, "type", type, "payload", payload != NULL ? payload :
	    json_object(), "metadata", md);
}

/* An envelope's trace.id, or NULL. */
static const char *
am_env_id(json_t *env)
{
	return json_string_value(json_object_get(json_object_get(env,
	    "trace"), "id"));
}

/* A request: restored as the agent that made it wrote it, or a task. */
static json_t *
am_encode_request(struct codec_state *cs, json_t *env, const char *parent)
{
	json_t		*k = json_object_get(env, "agentmessage"), *p, *msg;
	json_t		*ho = json_object_get(env, "handoff"), *cm, *md;
	const char	*id = am_env_id(env), *type, *intent;
	int		 prio = codec_prio(json_object_get(env, "priority"));

	intent = codec_str(env, "intent", "execute");
	type = codec_str(k, "type", "TASK_ASSIGNMENT");
	if (strcmp(type, "HELP_REQUEST") != 0)
		type = "TASK_ASSIGNMENT";
	if (ho != NULL)
		type = "TASK_HANDOFF";
	if (k != NULL && json_is_object(json_object_get(json_object_get(env,
	    "content"), "data")))
		p = json_deep_copy(json_object_get(json_object_get(env,
		    "content"), "data"));
	else
		p = json_pack("{s:s, s:s, s:O*, s:o}", "task_type", intent,
		    "description", codec_str(env, "task", ""), "inputs",
		    json_object_get(env, "inputs"), "input",
		    codec_content(env));
	if (strcmp(type, "HELP_REQUEST") != 0)
		json_object_set_new(p, "task_id", json_string(id != NULL ? id :
		    ""));
	if (ho != NULL) {
		json_object_set(p, "from_agent", json_object_get(ho, "from"));
		json_object_set_new(p, "to_agent", json_string(cs->agent));
		json_object_set(p, "reason", json_object_get(ho, "reason"));
		if (json_object_get(ho, "context") != NULL)
			json_object_set(p, "context", json_object_get(ho,
			    "context"));
		json_object_set(p, "history", json_object_get(ho, "history"));
	}
	if (parent != NULL)
		json_object_set_new(p, "parent", json_string(parent));
	if (json_object_get(env, "session") != NULL &&
	    json_object_get(p, "context") == NULL)
		json_object_set_new(p, "context", json_pack("{s:O}",
		    "session_id", json_object_get(env, "session")));
	codec_remember(cs, id, intent, type);
	/* The sender is the agent corral knows, not the from it wrote. */
	msg = am_message(cs, type, id, codec_str(json_object_get(env, "agent"),
	    "id", "corral"), id, prio, p);
	md = json_object_get(msg, "metadata");
	if (json_is_number(json_object_get(env, "ttl_ms")))
		json_object_set(md, "ttl_ms", json_object_get(env, "ttl_ms"));
	cm = json_object_get(env, "corral");
	if (json_is_integer(json_object_get(cm, "retry_count")))
		json_object_set(md, "retry_count", json_object_get(cm,
		    "retry_count"));
	return msg;
}

/*
 * The end of a request the agent made (or of a child's task, or a
 * notice): TASK_COMPLETE / TASK_FAILED, HELP_RESPONSE for a help request,
 * ERROR_REPORT for a notice.
 */
static json_t *
am_encode_answer_env(struct codec_state *cs, json_t *env, const char *corr,
    const char *from, int notice)
{
	const struct codec_entry	*e = codec_recall(cs, corr);
	json_t				*c = json_object_get(env, "content");
	json_t				*d = json_object_get(c, "data"), *p;
	int				 error, prio;
	const char			*text;
	char				*s;

	error = strcmp(codec_str(c, "type", ""), "error") == 0;
	text = codec_str(c, "text", codec_str(d, "message", ""));
	prio = codec_prio(json_object_get(env, "priority"));
	if (notice) {
		p = json_pack("{s:s, s:s, s:s, s:s, s:s, s:{s:O*, s:O*, s:s*}, "
		    "s:[], s:[s]}", "error_id", codec_str(json_object_get(env,
		    "trace"), "id", ""), "agent_id", cs->agent, "error_type",
		    am_error_type(codec_str(d, "category", NULL), codec_str(d,
		    "code", NULL)), "severity", "medium", "message", text,
		    "context", "code", json_object_get(d, "code"), "path",
		    json_object_get(d, "path"), "message_id", corr,
		    "recovery_attempts", "suggested_actions", "fix the message "
		    "and send it again");
		return am_message(cs, "ERROR_REPORT", NULL, "corral", corr,
		    PRIO_CRITICAL, p);
	}
	if (e != NULL && strcmp(e->kind, "HELP_REQUEST") == 0) {
		p = json_pack("{s:s, s:s, s:s, s:s, s:b, s:i}", "responder_id",
		    from, "request_id", corr, "response_type", error ?
		    "UNABLE_TO_HELP" : "DIRECT_ANSWER", "content", *text != '\0'
		    ? text : "", "follow_up_required", 0, "estimated_effort", 0);
		if (*text == '\0' && d != NULL &&
		    (s = jsonw_dumps(d, CORRAL_JSON_FLAGS | JSON_ENCODE_ANY)) !=
		    NULL) {
			json_object_set_new(p, "content", json_string(s));
			free(s);
		}
		if (d != NULL)
			json_object_set(p, "data", d);
		return am_message(cs, "HELP_RESPONSE", NULL, from, corr, prio,
		    p);
	}
	if (error)
		return am_message(cs, "TASK_FAILED", NULL, from, corr, prio,
		    json_pack("{s:s, s:{s:s, s:s, s:s, s:O*, s:O*}}", "task_id",
		    corr, "error", "error_type", am_error_type(codec_str(d,
		    "category", NULL), codec_str(d, "code", NULL)), "severity",
		    "high", "message", text, "code", json_object_get(d, "code"),
		    "retryable", json_object_get(d, "retryable")));
	p = json_pack("{s:s, s:o}", "task_id", corr, "result",
	    codec_content(env));
	if (json_object_get(env, "confidence") != NULL)
		json_object_set(p, "confidence", json_object_get(
		    json_object_get(env, "confidence"), "score"));
	return am_message(cs, "TASK_COMPLETE", NULL, from, corr, prio, p);
}

/* A message another agent sent: as that agent wrote it, or an update. */
static json_t *
am_encode_message(struct codec_state *cs, json_t *env, json_t *cm)
{
	json_t		*k = json_object_get(env, "agentmessage"), *msg;
	const char	*via = codec_str(cm, "via", NULL), *type;
	char		 to[CORRAL_ID_MAX + 16];

	type = codec_str(k, "type", "TASK_UPDATE");
	msg = am_message(cs, type, codec_str(cm, "messageId", NULL),
	    codec_str(cm, "from", "corral"), NULL, codec_prio(
	    json_object_get(env, "priority")), k != NULL ? codec_content(env) :
	    json_pack("{s:s, s:o}", "message", codec_str(env, "task", ""),
	    "data", codec_content(env)));
	if (via != NULL) {
		snprintf(to, sizeof to, "topic:%s", via);
		json_object_set_new(msg, "to", json_string(to));
	}
	return msg;
}

/* The answer to a control frame the codec made for the agent. */
static json_t *
am_encode_rpc(struct codec_state *cs, json_t *f)
{
	json_t		*er = json_object_get(f, "error"), *res, *list, *a;
	const char	*mid, *msgtext;
	char		 kind[16];
	size_t		 i;

	if (codec_call_id(f, kind, sizeof kind, &mid) != 0)
		return NULL;
	res = json_object_get(f, "result");
	msgtext = codec_str(er, "message", "refused");
	if (strcmp(kind, "hand") == 0)
		return am_message(cs, "TASK_HANDOFF", NULL, "corral", mid,
		    PRIO_HIGH, er != NULL ? json_pack("{s:b, s:s}", "accepted",
		    0, "error", msgtext) : json_pack("{s:b, s:O*, s:[]}",
		    "accepted", 1, "agent_id", json_object_get(res, "agentId"),
		    "requirements"));
	if (strcmp(kind, "find") == 0 && er == NULL) {
		list = json_array();
		json_array_foreach(json_object_get(res, "agents"), i, a)
			json_array_append_new(list, json_pack("{s:O, s:O, s:O, "
			    "s:O*}", "agent_id", json_object_get(a, "id"),
			    "name", json_object_get(a, "name"), "state",
			    json_object_get(a, "state"), "capabilities",
			    json_object_get(json_object_get(a, "metadata"),
			    "capabilities")));
		return am_message(cs, "REGISTRY_RESULT", NULL, "corral", mid,
		    PRIO_NORMAL, json_pack("{s:o}", "agents", list));
	}
	if (strcmp(kind, "sess") == 0 && er == NULL)
		return am_message(cs, "REGISTRY_RESULT", NULL, "corral", mid,
		    PRIO_NORMAL, json_pack("{s:O, s:O*}", "session_id",
		    json_object_get(res, "sessionId"), "session",
		    json_object_get(json_object_get(res, "_meta"), "corral")));
	if ((strcmp(kind, "sub") == 0 || strcmp(kind, "unsub") == 0) &&
	    er == NULL)
		return am_message(cs, kind[0] == 's' ? "SUBSCRIBE" :
		    "UNSUBSCRIBE", NULL, "corral", mid, PRIO_NORMAL, json_pack(
		    "{s:O*, s:b}", "topic", json_object_get(json_object_get(res,
		    "scope"), "id"), "subscribed", kind[0] == 's'));
	if (er == NULL || (strcmp(kind, "pub") == 0
	    && json_integer_value(json_object_get(er, "code")) ==
	    CORRAL_E_NOSCOPE))
		return NULL;
	if (strcmp(kind, "help") == 0)
		return am_message(cs, "HELP_RESPONSE", NULL, "corral", mid,
		    PRIO_HIGH, json_pack("{s:s, s:s, s:s, s:s, s:b, s:i}",
		    "responder_id", "corral", "request_id", mid,
		    "response_type", "UNABLE_TO_HELP", "content", msgtext,
		    "follow_up_required", 0, "estimated_effort", 0));
	if (strcmp(kind, "task") == 0)
		return am_message(cs, "TASK_FAILED", NULL, "corral", mid,
		    PRIO_HIGH, json_pack("{s:s, s:{s:s, s:s, s:s}}", "task_id",
		    mid, "error", "error_type", "VALIDATION_ERROR", "severity",
		    "high", "message", msgtext));
	return am_message(cs, "ERROR_REPORT", NULL, "corral", mid,
	    PRIO_CRITICAL, json_pack("{s:s, s:s, s:s, s:s, s:s, s:{s:s}, s:[], "
	    "s:[]}", "error_id", mid, "agent_id", cs->agent, "error_type",
	    "VALIDATION_ERROR", "severity", "medium", "message", msgtext,
	    "context", "message_id", mid, "recovery_attempts",
	    "suggested_actions"));
}

/* One line corral writes to an AgentMessage agent, in its terms. */
static json_t *
am_encode(struct codec_state *cs, json_t *f)
{
	const char	*kind = codec_kind(f), *m;
	json_t		*cm = json_object_get(f, "corral"), *c;

	if (kind == NULL) {
		m = json_string_value(json_object_get(f, "method"));
		if (m != NULL && strcmp(m, CORRAL_M_PING) == 0)
			return am_message(cs, "HEARTBEAT", NULL, "corral", NULL,
			    PRIO_LOW, json_pack("{s:s}", "agent_id", "corral"));
		return m == NULL ? am_encode_rpc(cs, f) : NULL;
	}
	if (*kind == '\0')
		return am_encode_request(cs, f, NULL);
	if (strcmp(kind, "task") == 0)
		return am_encode_request(cs, f, codec_str(cm, "parent", NULL));
	if (strcmp(kind, CORRAL_KIND_RESULT) == 0)
		return am_encode_answer_env(cs, f, codec_str(cm,
		    "correlationId", ""), codec_str(cm, "from", "corral"), 0);
	if (strcmp(kind, CORRAL_KIND_CHILD_RESULT) == 0)
		return am_encode_answer_env(cs, f, codec_str(cm, "spawn", ""),
		    codec_str(cm, "child", "corral"), 0);
	if (strcmp(kind, CORRAL_KIND_NOTICE) == 0)
		return am_encode_answer_env(cs, f, codec_parent(f), "corral", 1);
	if (strcmp(kind, CORRAL_KIND_MESSAGE) == 0)
		return am_encode_message(cs, f, cm);
	c = json_object_get(f, "content");
	if (strcmp(kind, CORRAL_KIND_CANCEL) == 0)
		return am_message(cs, "TASK_UPDATE", NULL, "corral", NULL,
		    PRIO_HIGH, json_pack("{s:s, s:s, s:O*}", "task_id",
		    codec_str(cm, "request", ""), "status", "cancelled",
		    "reason", json_object_get(c, "text")));
	if (strcmp(kind, CORRAL_KIND_PROGRESS) == 0)
		return am_message(cs, "TASK_UPDATE", NULL, codec_str(cm, "child",
		    "corral"), NULL, PRIO_NORMAL, json_pack("{s:s, s:O*}",
		    "task_id", codec_str(cm, "request", ""), "progress",
		    json_object_get(c, "text")));
	return NULL;
}

/*
 * The tape's paths for the two kinds every message of an AgentMessage
 * agent passes through: a task corral gives it (am_encode_request, from
 * an agent of another dialect) and its TASK_COMPLETE (am_task_end).  They
 * make what those make, from the scanner's tape, and decline (0)
 * anything else.
 */

/* Does the message pass am_check?  (The tape's version.) */
static int
am_tape_check(struct jscan *js, const char *s, int md)
{
	static const char *const strs[] = { "id", "from", "to", "timestamp",
	    "type" };
	size_t	i;
	int	v;

	for (i = 0; i < sizeof strs / sizeof strs[0]; i++)
		if ((v = jscan_get(js, s, 0, strs[i])) >= 0 &&
		    js->tok[v].type != JT_STRING)
			return 0;
	if (md >= 0 && js->tok[md].type != JT_OBJECT)
		return 0;
	v = JSCAN_GET(js, s, md, "priority");
	return v < 0 || js->tok[v].type == JT_STRING;
}

/* The token of the task an answer names (am_task_of), or -1. */
static int
am_tape_task(struct jscan *js, const char *s, int p, int md)
{
	int	v;

	if ((v = JSCAN_GET(js, s, p, "task_id")) >= 0 &&
	    js->tok[v].type == JT_STRING)
		return v;
	if ((v = JSCAN_GET(js, s, p, "request_id")) >= 0 &&
	    js->tok[v].type == JT_STRING)
		return v;
	if ((v = JSCAN_GET(js, s, md, "correlation_id")) >= 0 &&
	    js->tok[v].type == JT_STRING)
		return v;
	return -1;
}

/* Write the members am_to_envelope adds after the trace. */
static void
am_tape_rest(struct jsonw *j, struct jscan *js, const char *s, int p,
    int md)
{
	uint32_t	i;
	int		 v;

	v = JSCAN_GET(js, s, JSCAN_GET(js, s, p, "context"), "session_id");
	if (v < 0 || js->tok[v].type != JT_STRING)
		v = JSCAN_GET(js, s, md, "session_id");
	codec_tape_common(j, js, s, JSCAN_GET(js, s, md, "priority"),
	    JSCAN_GET(js, s, md, "ttl_ms"), v);
	/* Everything but the payload, kept. */
	JSONW_KEY(j, "agentmessage");
	jsonw_object(j);
	for (i = 1; i < js->tok[0].next; i = js->tok[i + 1].next) {
		if (jscan_str_equal(js, s + js->tok[i].off, js->tok[i].len,
		    js->tok[i].flags & JT_ESCAPED, "payload", 7))
			continue;
		jsonw_key_raw(j, s + js->tok[i].off, js->tok[i].len);
		codec_tape_raw(j, js, s, (int)i + 1);
	}
	jsonw_object_end(j);
}

/* A TASK_COMPLETE from the tape, as am_decode and am_task_end make it. */
static int
am_tape_decode(struct codec_state *cs, struct jscan *js, const char *s,
    struct jsonw *j)
{
	const struct codec_entry	*e;
	char				 buf[256], id[256], task[256];
	int				 md, p, v, has_id, task_tok, id_tok;

	md = JSCAN_GET(js, s, 0, "metadata");
	if (!am_tape_check(js, s, md) || codec_tape_text(js, s, JSCAN_GET(js,
	    s, 0, "type"), buf, sizeof buf) != 1 ||
	    strcmp(buf, "TASK_COMPLETE") != 0)
		return 0;
	if ((v = codec_tape_text(js, s, JSCAN_GET(js, s, 0, "to"), buf,
	    sizeof buf)) < 0 || (v == 1 && (strncmp(buf, "topic:", 6) == 0 ||
	    strcmp(buf, "*") == 0)))
		return 0;
	id_tok = JSCAN_GET(js, s, 0, "id");
	if ((has_id = codec_tape_text(js, s, id_tok, id, sizeof id)) < 0)
		return 0;
	p = JSCAN_GET(js, s, 0, "payload");
	task_tok = am_tape_task(js, s, p, md);
	if (codec_tape_text(js, s, task_tok, task, sizeof task) != 1)
		return 0;
	e = codec_recall(cs, task);
	if ((v = JSCAN_GET(js, s, p, "result")) < 0)
		v = p;
	codec_tape_envelope(j, cs->agent, e != NULL && e->intent[0] ?
	    e->intent : "execute", "TASK_COMPLETE", js, s, -1, v);
	codec_tape_trace(j, js, s, id_tok, task_tok);
	am_tape_rest(j, js, s, p, md);
	codec_tape_score(j, js, s, JSCAN_GET(js, s, p, "confidence"));
	jsonw_object_end(j);
	return 1;
}

/* Write the payload of a task am_encode_request makes. */
static void
am_tape_payload(struct jsonw *j, struct jscan *js, const char *s,
    const char *intent, int it, int id_tok, int parent)
{
	int	v;

	JSONW_KEY(j, "payload");
	jsonw_object(j);
	JSONW_KEY(j, "task_type");
	codec_tape_str_or(j, js, s, it, intent);
	JSONW_KEY(j, "description");
	codec_tape_str_or(j, js, s, JSCAN_GET(js, s, 0, "task"), "");
	codec_tape_member(j, "inputs", js, s, JSCAN_GET(js, s, 0, "inputs"));
	JSONW_KEY(j, "input");
	codec_tape_raw(j, js, s, codec_tape_content(js, s, JSCAN_GET(js, s,
	    0, "content")));
	JSONW_KEY(j, "task_id");
	if (id_tok >= 0)
		codec_tape_raw(j, js, s, id_tok);
	else
		jsonw_str(j, "");
	codec_tape_member(j, "parent", js, s, parent);
	if ((v = JSCAN_GET(js, s, 0, "session")) >= 0) {
		JSONW_KEY(j, "context");
		jsonw_object(j);
		JSONW_KEY(j, "session_id");
		codec_tape_raw(j, js, s, v);
		jsonw_object_end(j);
	}
	jsonw_object_end(j);
}

/*
 * A task from the tape, as am_encode_request makes it of a request that
 * came from no AgentMessage agent and is no handoff.
 */
static int
am_tape_encode(struct codec_state *cs, struct jscan *js, const char *s,
    struct jsonw *j)
{
	char	kind[16], id[256], intent[256], ts[40], nid[CORRAL_ID_MAX];
	int	cm, id_tok, it, has_id, v, prio, parent = -1;

	if (!codec_tape_kind(js, s, kind, sizeof kind) || (kind[0] != '\0' &&
	    strcmp(kind, "task") != 0) ||
	    JSCAN_GET(js, s, 0, "agentmessage") >= 0 ||
	    JSCAN_GET(js, s, 0, "handoff") >= 0)
		return 0;
	cm = JSCAN_GET(js, s, 0, "corral");
	id_tok = JSCAN_GET(js, s, JSCAN_GET(js, s, 0, "trace"), "id");
	it = JSCAN_GET(js, s, 0, "intent");
	if ((has_id = codec_tape_text(js, s, id_tok, id, sizeof id)) < 0 ||
	    (v = codec_tape_text(js, s, it, intent, sizeof intent)) < 0)
		return 0;
	if (v == 0) {
		strlcpy(intent, "execute", sizeof intent);
		it = -1;
	}
	if (kind[0] != '\0' && (parent = JSCAN_GET(js, s, cm, "parent")) >= 0 &&
	    js->tok[parent].type != JT_STRING)
		parent = -1;
	prio = codec_tape_prio(js, s, JSCAN_GET(js, s, 0, "priority"));
	codec_remember(cs, has_id ? id : NULL, intent, "TASK_ASSIGNMENT");

	jsonw_object(j);
	JSONW_KEY(j, "id");
	if (has_id)
		codec_tape_raw(j, js, s, id_tok);
	else
		jsonw_str(j, protocol_new_id(nid, sizeof nid));
	JSONW_KEY(j, "timestamp");
	util_rfc3339(ts, sizeof ts);
	jsonw_str(j, ts);
	JSONW_KEY(j, "from");
	codec_tape_str_or(j, js, s, JSCAN_GET(js, s, JSCAN_GET(js, s, 0,
	    "agent"), "id"), "corral");
	JSONW_KEY(j, "to");
	jsonw_str(j, cs->agent);
	JSONW_KEY(j, "type");
	jsonw_str(j, "TASK_ASSIGNMENT");
	am_tape_payload(j, js, s, intent, it, has_id ? id_tok : -1, parent);
	JSONW_KEY(j, "metadata");
	jsonw_object(j);
	JSONW_KEY(j, "priority");
	jsonw_str(j, prio <= PRIO_LOW ? "low" : protocol_priority_name(prio));
	JSONW_KEY(j, "retry_count");
	if ((v = JSCAN_GET(js, s, cm, "retry_count")) >= 0 &&
	    js->tok[v].type == JT_NUMBER && (js->tok[v].flags & JT_INTEGER))
		codec_tape_raw(j, js, s, v);
	else
		jsonw_u64(j, 0);
	JSONW_KEY(j, "max_retries");
	jsonw_u64(j, 0);
	if (has_id) {
		JSONW_KEY(j, "correlation_id");
		codec_tape_raw(j, js, s, id_tok);
	}
	if ((v = JSCAN_GET(js, s, 0, "ttl_ms")) >= 0 &&
	    js->tok[v].type == JT_NUMBER) {
		JSONW_KEY(j, "ttl_ms");
		codec_tape_raw(j, js, s, v);
	}
	jsonw_object_end(j);
	jsonw_object_end(j);
	return 1;
}

/* The id of a message, for redeliveries (codec_ops' tape_id). */
static int
am_tape_id(struct jscan *js, const char *s, char *buf, size_t size,
    const char **path)
{
	*path = "id";
	return codec_tape_message_id(js, s, JSCAN_GET(js, s, 0, "id"),
	    JSCAN_GET(js, s, 0, "type"), buf, size);
}

const struct codec_ops codec_agentmessage_ops = {
	.name = "agentmessage",
	.decode = am_decode,
	.encode = am_encode,
	.message_id = am_message_id,
	.tape_decode = am_tape_decode,
	.tape_encode = am_tape_encode,
	.tape_id = am_tape_id,
};
