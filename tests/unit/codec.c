/*
 * Unit tests of the dialect codecs (src/codec.c, codec-bus.c,
 * codec-agentmessage.c): every example of the two specifications
 * (tests/dialects/) decoded into corral's frames, each envelope among them
 * valid multiagent-1.0, and corral's lines (requests, results, notices,
 * messages, answers to control frames) encoded back, with the fields
 * docs/dialects.md promises.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "corral.h"

/* Read a fixture of tests/dialects/ as one line. */
static char *
fixture(const char *name, size_t *len)
{
	const char	*dir = getenv("CORRAL_TEST_DATA");
	char		 path[1024], *s;
	json_t		*j;

	snprintf(path, sizeof path, "%s/dialects/%s", dir != NULL ? dir :
	    "tests", name);
	j = json_load_file(path, CORRAL_JSON_LOAD, NULL);
	assert_non_null(j);
	s = json_dumps(j, CORRAL_JSON_FLAGS);
	json_decref(j);
	*len = strlen(s);
	return s;
}

/* Decode a fixture: the frames (a new reference), or NULL if refused. */
static json_t *
decode(struct codec_state *cs, const char *name, struct codec_error *err)
{
	json_t	*out = json_array(), *frames = json_array(), *v;
	char	*line;
	size_t	 len, i;
	int	 rc;

	line = fixture(name, &len);
	rc = codec_decode_line(cs, line, len, out, err);
	free(line);
	if (rc != 0) {
		json_decref(out);
		json_decref(frames);
		return NULL;
	}
	json_array_foreach(out, i, v)
		json_array_append_new(frames, json_loads(json_string_value(v),
		    0, NULL));
	json_decref(out);
	return frames;
}

/* Fail unless an envelope is valid multiagent-1.0. */
static void
assert_envelope(json_t *env)
{
	struct jscan		*js = jscan_create(4);
	struct env		 e;
	struct env_error	 err;
	char			*s = json_dumps(env, CORRAL_JSON_FLAGS);

	assert_int_equal(jscan_run(js, s, strlen(s)), 0);
	if (envelope_check(js, s, strlen(s), &e, &err) != 0)
		fail_msg("not a valid envelope (%s): %s", err.msg, s);
	jscan_free(js);
	free(s);
}

/* Encode one of corral's lines for the agent (a new reference or NULL). */
static json_t *
encode(struct codec_state *cs, const char *line)
{
	char	*s;
	size_t	 len;
	json_t	*j;

	if ((s = codec_encode_line(cs, line, strlen(line), &len)) == NULL)
		return NULL;
	j = json_loads(s, 0, NULL);
	free(s);
	return j;
}

/* A string at a path of object members ("a.b.c"), or NULL. */
static const char *
at(json_t *j, const char *path)
{
	char	 buf[256], *p, *dot;

	strlcpy(buf, path, sizeof buf);
	for (p = buf; j != NULL; p = dot + 1) {
		if ((dot = strchr(p, '.')) != NULL)
			*dot = '\0';
		j = json_object_get(j, p);
		if (dot == NULL)
			break;
	}
	return json_string_value(j);
}

#define REQ_ENVELOPE "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\"," \
	"\"intent\":\"analyze\",\"task\":\"check it\",\"content\":{\"type\":" \
	"\"json\",\"data\":{\"x\":1}},\"trace\":{\"id\":\"r-1\"},\"priority\":3}"

/* The bus's full envelope example: a request to another agent. */
static void
test_bus_envelope(void **state)
{
	struct codec_state	*cs = codec_create(&codec_bus_ops, "a");
	struct codec_error	 err;
	json_t			*f, *env;

	f = decode(cs, "bus-envelope.json", &err);
	assert_non_null(f);
	assert_int_equal(json_array_size(f), 1);
	assert_string_equal(at(json_array_get(f, 0), "method"), "map/send");
	assert_string_equal(at(json_array_get(f, 0), "params.to"),
	    "agent-planner");
	assert_true(json_is_true(json_object_get(json_object_get(
	    json_object_get(json_array_get(f, 0), "params"), "meta"),
	    "expectsResponse")));
	assert_string_equal(at(json_array_get(f, 0),
	    "params.meta.correlationId"), "msg_uuid_123");
	env = json_object_get(json_object_get(json_array_get(f, 0), "params"),
	    "payload");
	assert_envelope(env);
	assert_string_equal(at(env, "intent"), "analyze");
	assert_string_equal(at(env, "trace.id"), "msg_uuid_123");
	assert_string_equal(at(env, "session"), "sess_123");
	assert_string_equal(at(env, "bus.trace.traceId"), "trace_123");
	assert_int_equal(json_integer_value(json_object_get(env, "priority")),
	    1);
	json_decref(f);
	codec_free(cs);
}

/* Short forms: REQUEST, RESPONSE, PUBLISH, BROADCAST, the error body. */
static void
test_bus_short_forms(void **state)
{
	struct codec_state	*cs = codec_create(&codec_bus_ops, "a");
	struct codec_error	 err;
	json_t			*f, *env, *d;

	f = decode(cs, "bus-request.json", &err);
	assert_string_equal(at(json_array_get(f, 0), "params.payload.intent"),
	    "execute");	/* verify is no intent: the default */
	assert_string_equal(at(json_array_get(f, 0), "params.payload.task"),
	    "verify");
	assert_envelope(json_object_get(json_object_get(json_array_get(f, 0),
	    "params"), "payload"));
	json_decref(f);

	f = decode(cs, "bus-response.json", &err);
	env = json_array_get(f, 0);
	assert_envelope(env);
	assert_string_equal(json_string_value(json_array_get(json_object_get(
	    json_object_get(env, "trace"), "parents"), 0)),
	    "original_request_id");
	assert_true(json_is_true(json_object_get(json_object_get(
	    json_object_get(env, "content"), "data"), "verified")));
	json_decref(f);

	f = decode(cs, "bus-error.json", &err);
	env = json_array_get(f, 0);
	assert_envelope(env);
	d = json_object_get(json_object_get(env, "content"), "data");
	assert_string_equal(at(env, "content.type"), "error");
	assert_string_equal(at(d, "code"), "timeout");
	assert_string_equal(at(d, "category"), "TIMEOUT");
	assert_true(json_is_true(json_object_get(d, "retryable")));
	assert_int_equal(json_integer_value(json_object_get(d, "retryAfter")),
	    5000);
	json_decref(f);

	f = decode(cs, "bus-publish.json", &err);
	assert_string_equal(at(json_array_get(f, 0), "params.to"),
	    "topic:verification-complete");
	assert_string_equal(at(json_array_get(f, 0), "params.payload.task"),
	    "VerificationComplete");
	json_decref(f);

	f = decode(cs, "bus-broadcast.json", &err);
	assert_true(json_is_true(json_object_get(json_object_get(
	    json_object_get(json_array_get(f, 0), "params"), "to"),
	    "broadcast")));
	json_decref(f);

	f = decode(cs, "bus-context.json", &err);
	env = json_object_get(json_object_get(json_array_get(f, 0), "params"),
	    "payload");
	assert_string_equal(at(env, "session"), "sess_123");
	assert_int_equal(json_array_size(json_object_get(json_object_get(
	    json_object_get(env, "bus"), "context"), "previousDecisions")), 2);
	json_decref(f);
	codec_free(cs);
}

/* Subscriptions and discovery become control frames whose ids say so. */
static void
test_bus_control(void **state)
{
	struct codec_state	*cs = codec_create(&codec_bus_ops, "a");
	struct codec_error	 err;
	json_t			*f, *m;

	f = decode(cs, "bus-subscribe.json", &err);
	assert_int_equal(json_array_size(f), 1);
	assert_string_equal(at(json_array_get(f, 0), "method"),
	    "map/scopes/join");
	assert_string_equal(at(json_array_get(f, 0), "params.scopeId"),
	    "findings");
	assert_true(json_is_true(json_object_get(json_object_get(
	    json_array_get(f, 0), "params"), "create")));
	json_decref(f);
	m = encode(cs, "{\"jsonrpc\":\"2.0\",\"id\":\"sub:msg_sub_1\","
	    "\"result\":{\"scope\":{\"id\":\"findings\"}}}");
	assert_string_equal(at(m, "header.type"), "RESPONSE");
	assert_string_equal(at(m, "header.correlationId"), "msg_sub_1");
	assert_true(json_is_true(json_object_get(json_object_get(
	    json_object_get(m, "body"), "result"), "subscribed")));
	json_decref(m);

	f = decode(cs, "bus-find.json", &err);
	assert_string_equal(at(json_array_get(f, 0), "method"),
	    "map/agents/list");
	assert_string_equal(at(json_array_get(f, 0),
	    "params.filter.capability"), "verification");
	json_decref(f);
	m = encode(cs, "{\"jsonrpc\":\"2.0\",\"id\":\"find:msg_find_1\","
	    "\"result\":{\"agents\":[{\"id\":\"v\",\"name\":\"v\",\"state\":"
	    "\"idle\",\"metadata\":{\"capabilities\":[{\"name\":"
	    "\"verification\"}]}}]}}");
	assert_string_equal(at(m, "header.correlationId"), "msg_find_1");
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    json_object_get(json_object_get(json_object_get(m, "body"),
	    "result"), "agents"), 0), "status")), "READY");
	json_decref(m);
	/* A request's own answer is not news: its result comes later. */
	assert_null(encode(cs, "{\"jsonrpc\":\"2.0\",\"id\":\"req:x\","
	    "\"result\":{\"messageId\":\"m\"}}"));
	m = encode(cs, "{\"jsonrpc\":\"2.0\",\"id\":\"req:x\",\"error\":"
	    "{\"code\":2001,\"message\":\"no agent 'zz'\"}}");
	assert_string_equal(at(m, "body.status"), "ERROR");
	assert_string_equal(at(m, "body.error.code"), "UNAVAILABLE");
	assert_true(json_is_true(json_object_get(json_object_get(
	    json_object_get(m, "body"), "error"), "retryable")));
	json_decref(m);
	codec_free(cs);
}

/* A request, its RESPONSE (the intent recalled), a notice, a result. */
static void
test_bus_round_trip(void **state)
{
	struct codec_state	*cs = codec_create(&codec_bus_ops, "b");
	json_t			*m, *out = json_array(), *env;
	struct codec_error	 err;
	const char		*resp = "{\"header\":{\"type\":\"RESPONSE\","
				    "\"messageId\":\"p-1\",\"correlationId\":"
				    "\"r-1\"},\"body\":{\"status\":\"SUCCESS\","
				    "\"result\":\"fine\"}}";

	m = encode(cs, REQ_ENVELOPE);
	assert_string_equal(at(m, "header.type"), "REQUEST");
	assert_string_equal(at(m, "header.messageId"), "r-1");
	assert_string_equal(at(m, "header.destination"), "b");
	assert_string_equal(at(m, "body.action"), "analyze");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(m,
	    "header"), "priority")), 3);
	json_decref(m);
	assert_int_equal(codec_decode_line(cs, resp, strlen(resp), out, &err),
	    0);
	env = json_loads(json_string_value(json_array_get(out, 0)), 0, NULL);
	assert_envelope(env);
	assert_string_equal(at(env, "intent"), "analyze");
	assert_string_equal(at(env, "content.text"), "fine");
	json_decref(env);
	json_decref(out);

	m = encode(cs, "{\"protocol\":\"multiagent-1.0\",\"role\":\"system\","
	    "\"intent\":\"route\",\"task\":\"Report an error\",\"content\":{"
	    "\"type\":\"error\",\"text\":\"bad\",\"data\":{\"code\":"
	    "\"invalid_envelope\",\"category\":\"REJECTED\",\"message\":"
	    "\"bad\",\"retryable\":false}},\"trace\":{\"id\":\"n\",\"parents\":"
	    "[\"p-9\"]},\"corral\":{\"kind\":\"notice\"}}");
	assert_string_equal(at(m, "header.type"), "RESPONSE");
	assert_true(json_is_true(json_object_get(json_object_get(m, "header"),
	    "notice")));
	assert_string_equal(at(m, "body.error.code"), "REJECTED");
	assert_string_equal(at(m, "body.error.corralCode"), "invalid_envelope");
	json_decref(m);

	m = encode(cs, "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\","
	    "\"intent\":\"finalize\",\"task\":\"t\",\"content\":{\"type\":"
	    "\"json\",\"data\":{\"ok\":1}},\"corral\":{\"kind\":\"result\","
	    "\"from\":\"c\",\"correlationId\":\"q-7\",\"ok\":true}}");
	assert_string_equal(at(m, "header.correlationId"), "q-7");
	assert_string_equal(at(m, "header.source"), "c");
	assert_string_equal(at(m, "body.status"), "SUCCESS");
	json_decref(m);
	codec_free(cs);
}

/* A bus message that reaches another bus agent keeps what it had. */
static void
test_bus_lossless(void **state)
{
	struct codec_state	*a = codec_create(&codec_bus_ops, "a");
	struct codec_state	*b = codec_create(&codec_bus_ops, "agent-planner");
	struct codec_error	 err;
	json_t			*f, *env, *m;
	char			*s;

	f = decode(a, "bus-envelope.json", &err);
	env = json_object_get(json_object_get(json_array_get(f, 0), "params"),
	    "payload");
	s = json_dumps(env, CORRAL_JSON_FLAGS);
	m = encode(b, s);
	assert_string_equal(at(m, "body.action"), "analyze");
	assert_string_equal(at(m, "body.payload.content"), "the draft");
	assert_string_equal(at(m, "body.context.sessionId"), "sess_123");
	assert_string_equal(at(m, "trace.parentSpan"), "span_123");
	assert_string_equal(at(m, "header.source"), "a");
	free(s);
	json_decref(m);
	json_decref(f);
	codec_free(a);
	codec_free(b);
}

/* Bad bus messages are refused with the field that is wrong. */
static void
test_bus_refused(void **state)
{
	struct codec_state	*cs = codec_create(&codec_bus_ops, "a");
	struct codec_error	 err;
	json_t			*out = json_array();
	static const struct {
		const char	*line;
		const char	*path;
	} bad[] = {
		{ "{\"body\":{}}", "header.type" },
		{ "{\"header\":{\"type\":\"GOSSIP\"}}", "header.type" },
		{ "{\"header\":{\"type\":\"RESPONSE\"}}",
		    "header.correlationId" },
		{ "{\"header\":{\"type\":\"PUBLISH\",\"destination\":\"x\"}}",
		    "header.destination" },
		{ "{\"header\":{\"type\":\"REQUEST\",\"destination\":\"*\"}}",
		    "header.destination" },
		{ "{\"header\":{\"type\":\"RESPONSE\",\"correlationId\":\"c\"},"
		    "\"body\":{\"status\":\"MAYBE\"}}", "body.status" },
		{ "{\"header\":[1]}", "header" },
	};
	size_t	i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(codec_decode_line(cs, bad[i].line,
		    strlen(bad[i].line), out, &err), -1);
		assert_string_equal(err.path, bad[i].path);
		assert_string_equal(err.code, "invalid_envelope");
	}
	/* Not JSON, or a control frame: they go on as they are. */
	assert_int_equal(codec_decode_line(cs, "nope", 4, out, &err), 1);
	assert_int_equal(codec_decode_line(cs, "{\"jsonrpc\":\"2.0\"}", 17, out,
	    &err), 1);
	assert_int_equal(json_array_size(out), 0);
	json_decref(out);
	codec_free(cs);
}

/* Every AgentMessage fixture decodes into frames; envelopes are valid. */
static void
test_am_fixtures(void **state)
{
	static const struct {
		const char	*file;
		const char	*method;	/* NULL: an envelope */
	} fx[] = {
		{ "agentmessage-task-assignment.json",	"map/send" },
		{ "agentmessage-task-handoff.json",	"_corral/handoff" },
		{ "agentmessage-handoff-response.json",	"" },
		{ "agentmessage-task-update.json",	"_corral/progress" },
		{ "agentmessage-task-complete.json",	NULL },
		{ "agentmessage-task-failed.json",	NULL },
		{ "agentmessage-help-request.json",	"map/send" },
		{ "agentmessage-help-response.json",	NULL },
		{ "agentmessage-status-update.json",	"map/agents/update" },
		{ "agentmessage-heartbeat.json",	"" },
		{ "agentmessage-error-report.json",	NULL },
	};
	struct codec_state	*cs = codec_create(&codec_agentmessage_ops, "c");
	struct codec_error	 err;
	json_t			*f, *x;
	size_t			 i;

	for (i = 0; i < sizeof fx / sizeof fx[0]; i++) {
		f = decode(cs, fx[i].file, &err);
		if (f == NULL)
			fail_msg("%s refused: %s (%s)", fx[i].file, err.msg,
			    err.path);
		assert_int_equal(json_array_size(f), 1);
		x = json_array_get(f, 0);
		if (fx[i].method == NULL)
			assert_envelope(x);
		else if (*fx[i].method == '\0')
			assert_non_null(json_object_get(x, "result"));
		else
			assert_string_equal(at(x, "method"), fx[i].method);
		if (fx[i].method != NULL && strcmp(fx[i].method, "map/send") == 0)
			assert_envelope(json_object_get(json_object_get(x,
			    "params"), "payload"));
		json_decref(f);
	}
	codec_free(cs);
}

/* What each AgentMessage type means: the fields corral reads. */
static void
test_am_semantics(void **state)
{
	struct codec_state	*cs = codec_create(&codec_agentmessage_ops, "c");
	struct codec_error	 err;
	json_t			*f, *x, *d;

	f = decode(cs, "agentmessage-help-request.json", &err);
	x = json_array_get(f, 0);
	assert_string_equal(at(x, "params.to"), "capability:CODE_REVIEW");
	assert_string_equal(at(x, "params.payload.intent"), "analyze");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
	    json_object_get(x, "params"), "payload"), "priority")), PRIO_HIGH);
	json_decref(f);

	f = decode(cs, "agentmessage-task-handoff.json", &err);
	x = json_array_get(f, 0);
	assert_string_equal(at(x, "params.requestId"), "task-1");
	assert_string_equal(at(x, "params.to"), "reviewer");
	assert_string_equal(at(x, "params.capability"), "code-review");
	assert_string_equal(at(x, "params.reason"), "CAPABILITY_LIMIT");
	json_decref(f);

	f = decode(cs, "agentmessage-task-failed.json", &err);
	d = json_object_get(json_object_get(json_array_get(f, 0), "content"),
	    "data");
	assert_string_equal(at(d, "code"), "rate_limit");
	assert_string_equal(at(d, "category"), "UNAVAILABLE");
	assert_true(json_is_true(json_object_get(d, "retryable")));
	assert_string_equal(at(d, "severity"), "high");
	json_decref(f);

	/* Critical, naming a task: it fails that task. */
	f = decode(cs, "agentmessage-error-report.json", &err);
	x = json_array_get(f, 0);
	assert_string_equal(at(x, "content.type"), "error");
	assert_string_equal(at(x, "content.data.code"),
	    "external_service_error");
	assert_string_equal(at(x, "content.data.severity"), "critical");
	assert_string_equal(json_string_value(json_array_get(json_object_get(
	    json_object_get(x, "trace"), "parents"), 0)), "task-1");
	json_decref(f);

	f = decode(cs, "agentmessage-status-update.json", &err);
	x = json_array_get(f, 0);
	assert_string_equal(at(x, "params.state"), "BUSY");
	assert_non_null(json_object_get(json_object_get(json_object_get(x,
	    "params"), "metadata"), "resource_usage"));
	json_decref(f);

	/* The same message id again: a redelivery, only a sign of life. */
	f = decode(cs, "agentmessage-status-update.json", &err);
	assert_int_equal(json_array_size(f), 1);
	assert_non_null(json_object_get(json_array_get(f, 0), "result"));
	json_decref(f);
	codec_free(cs);
}

/* corral's lines to an AgentMessage agent, by kind. */
static void
test_am_encode(void **state)
{
	struct codec_state	*cs = codec_create(&codec_agentmessage_ops, "c");
	struct codec_error	 err;
	json_t			*m, *f;
	const char		*done = "{\"id\":\"d-1\",\"type\":"
				    "\"TASK_COMPLETE\",\"payload\":{\"task_id\":"
				    "\"r-1\",\"result\":42,\"confidence\":0.8}}";
	json_t			*out = json_array(), *env;

	m = encode(cs, REQ_ENVELOPE);
	assert_string_equal(at(m, "type"), "TASK_ASSIGNMENT");
	assert_string_equal(at(m, "payload.task_id"), "r-1");
	assert_string_equal(at(m, "payload.task_type"), "analyze");
	assert_string_equal(at(m, "metadata.priority"), "high");
	assert_string_equal(at(m, "to"), "c");
	json_decref(m);
	assert_int_equal(codec_decode_line(cs, done, strlen(done), out, &err),
	    0);
	env = json_loads(json_string_value(json_array_get(out, 0)), 0, NULL);
	assert_envelope(env);
	assert_string_equal(at(env, "intent"), "analyze");
	json_decref(env);
	json_decref(out);

	/* A help request it made: the result comes back as HELP_RESPONSE. */
	f = decode(cs, "agentmessage-help-request.json", &err);
	json_decref(f);
	m = encode(cs, "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\","
	    "\"intent\":\"analyze\",\"task\":\"t\",\"content\":{\"type\":"
	    "\"text\",\"text\":\"looks fine\"},\"corral\":{\"kind\":\"result\","
	    "\"from\":\"r\",\"correlationId\":"
	    "\"7f8d2c1e-0b1a-4c2d-9e3f-000000000007\",\"ok\":true}}");
	assert_string_equal(at(m, "type"), "HELP_RESPONSE");
	assert_string_equal(at(m, "payload.response_type"), "DIRECT_ANSWER");
	assert_string_equal(at(m, "payload.content"), "looks fine");
	assert_string_equal(at(m, "payload.responder_id"), "r");
	json_decref(m);
	/* No helper: UNABLE_TO_HELP from corral. */
	m = encode(cs, "{\"jsonrpc\":\"2.0\",\"id\":\"help:h-2\",\"error\":"
	    "{\"code\":2000,\"message\":\"no agent has the capability\"}}");
	assert_string_equal(at(m, "type"), "HELP_RESPONSE");
	assert_string_equal(at(m, "payload.response_type"), "UNABLE_TO_HELP");
	json_decref(m);
	/* A notice is an ERROR_REPORT; a cancel, a TASK_UPDATE. */
	m = encode(cs, "{\"protocol\":\"multiagent-1.0\",\"role\":\"system\","
	    "\"intent\":\"route\",\"task\":\"Report an error\",\"content\":{"
	    "\"type\":\"error\",\"text\":\"bad\",\"data\":{\"code\":"
	    "\"invalid_envelope\",\"category\":\"REJECTED\",\"message\":"
	    "\"bad\",\"retryable\":false,\"path\":\"type\"}},\"corral\":{"
	    "\"kind\":\"notice\"}}");
	assert_string_equal(at(m, "type"), "ERROR_REPORT");
	assert_string_equal(at(m, "payload.error_type"), "VALIDATION_ERROR");
	assert_string_equal(at(m, "payload.context.path"), "type");
	json_decref(m);
	m = encode(cs, "{\"protocol\":\"multiagent-1.0\",\"role\":\"system\","
	    "\"intent\":\"analyze\",\"task\":\"Cancel a request\",\"content\":{"
	    "\"type\":\"text\",\"text\":\"not needed\"},\"corral\":{\"kind\":"
	    "\"cancel\",\"request\":\"r-1\"}}");
	assert_string_equal(at(m, "type"), "TASK_UPDATE");
	assert_string_equal(at(m, "payload.status"), "cancelled");
	json_decref(m);
	m = encode(cs, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}");
	assert_string_equal(at(m, "type"), "HEARTBEAT");
	json_decref(m);
	codec_free(cs);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bus_envelope),
		cmocka_unit_test(test_bus_short_forms),
		cmocka_unit_test(test_bus_control),
		cmocka_unit_test(test_bus_round_trip),
		cmocka_unit_test(test_bus_lossless),
		cmocka_unit_test(test_bus_refused),
		cmocka_unit_test(test_am_fixtures),
		cmocka_unit_test(test_am_semantics),
		cmocka_unit_test(test_am_encode),
	};

	log_init(0);
	protocol_set_run("unit");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
