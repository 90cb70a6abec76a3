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
#include "codec-diff.h"

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

/*
 * Decode a line: the frame it made (a new reference), or NULL; rc is
 * codec_decode_line's.
 */
static json_t *
decode_line(struct codec_state *cs, const char *line, size_t len,
    struct codec_error *err, int *rc)
{
	json_t	*j = NULL;
	char	*made;
	size_t	 mlen;

	*rc = codec_decode_line(cs, line, len, &made, &mlen, err);
	if (*rc == 0) {
		assert_int_equal(strlen(made), mlen);
		j = json_loadb(made, mlen, 0, NULL);
		assert_non_null(j);
		free(made);
	}
	return j;
}

/* Decode a fixture: the frames (a new reference), or NULL if refused. */
static json_t *
decode(struct codec_state *cs, const char *name, struct codec_error *err)
{
	json_t	*frames, *f;
	char	*line;
	size_t	 len;
	int	 rc;

	line = fixture(name, &len);
	f = decode_line(cs, line, len, err, &rc);
	free(line);
	if (rc != 0)
		return NULL;
	frames = json_array();
	json_array_append_new(frames, f);
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
	/* A refusal is a bus message like any other corral writes. */
	assert_non_null(at(m, "header.messageId"));
	assert_non_null(at(m, "header.timestamp"));
	assert_string_equal(at(m, "header.correlationId"), "x");
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
	json_t			*m, *env;
	struct codec_error	 err;
	int			 rc;
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
	env = decode_line(cs, resp, strlen(resp), &err, &rc);
	assert_int_equal(rc, 0);
	assert_envelope(env);
	assert_string_equal(at(env, "intent"), "analyze");
	assert_string_equal(at(env, "content.text"), "fine");
	json_decref(env);

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
	int			 rc;
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
		assert_null(decode_line(cs, bad[i].line, strlen(bad[i].line),
		    &err, &rc));
		assert_int_equal(rc, -1);
		assert_string_equal(err.path, bad[i].path);
		assert_string_equal(err.code, "invalid_envelope");
	}
	/* Not JSON, or a control frame: they go on as they are. */
	assert_null(decode_line(cs, "nope", 4, &err, &rc));
	assert_int_equal(rc, 1);
	assert_null(decode_line(cs, "{\"jsonrpc\":\"2.0\"}", 17, &err, &rc));
	assert_int_equal(rc, 1);
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

	/* The same message id again: a redelivery, dropped. */
	assert_null(decode(cs, "agentmessage-status-update.json", &err));
	assert_string_equal(err.code, "redelivery");
	assert_string_equal(err.path, "id");
	assert_string_equal(err.parent, "7f8d2c1e-0b1a-4c2d-9e3f-000000000009");
	codec_free(cs);
}

/* A line of a template: @ becomes the id m-ID, # the number n. */
static void
fill(char *buf, size_t size, const char *tmpl, int id, int n)
{
	size_t	o = 0;

	for (; *tmpl != '\0' && o + 16 < size; tmpl++)
		if (*tmpl == '@')
			o += (size_t)snprintf(buf + o, size - o, "m-%d", id);
		else if (*tmpl == '#')
			o += (size_t)snprintf(buf + o, size - o, "%d", n);
		else
			buf[o++] = *tmpl;
	buf[o] = '\0';
}

/*
 * A message id a codec accepted before is a redelivery, in both dialects
 * and both ways of translating: dropped with its id; a refused message's
 * id and a heartbeat's are not remembered; the memory holds the last
 * CODEC_RING ids.
 */
static void
test_redelivery(void **state)
{
	static const char *const lines[2][3] = {
		{ "{\"header\":{\"messageId\":\"@\",\"type\":\"RESPONSE\","
		  "\"correlationId\":\"r-1\"},\"body\":{\"status\":\"SUCCESS\","
		  "\"result\":#}}",
		  "{\"messageId\":\"@\",\"type\":\"HEARTBEAT\",\"n\":#}",
		  "{\"header\":{\"messageId\":\"@\",\"type\":\"GOSSIP\"},"
		  "\"n\":#}" },
		{ "{\"id\":\"@\",\"type\":\"TASK_COMPLETE\",\"payload\":"
		  "{\"task_id\":\"r-1\",\"result\":#}}",
		  "{\"id\":\"@\",\"type\":\"HEARTBEAT\",\"n\":#}",
		  "{\"id\":\"@\",\"type\":\"GOSSIP\",\"n\":#}" },
	};
	const struct codec_ops	*ops[2] = { &codec_bus_ops,
				    &codec_agentmessage_ops };
	struct codec_state	*cs;
	struct codec_error	 err;
	json_t			*f;
	char			 line[256];
	int			 d, slow, i, k, rc;

	for (d = 0; d < 2; d++)
		for (slow = 0; slow < 2; slow++) {
			cs = codec_create(ops[d], "a");
			cs->slow = slow;
			for (k = 0; k < 2; k++) {
				/* An answer; the same id again, another body. */
				fill(line, sizeof line, lines[d][0], 1, k);
				f = decode_line(cs, line, strlen(line), &err,
				    &rc);
				assert_int_equal(rc, k == 0 ? 0 :
				    CODEC_REDELIVERY);
				json_decref(f);
			}
			assert_string_equal(err.code, "redelivery");
			assert_string_equal(err.parent, "m-1");
			assert_string_equal(err.path, d == 0 ?
			    "header.messageId" : "id");
			/* Heartbeats and refused lines: each time the same. */
			for (k = 0; k < 2; k++)
				for (i = 1; i < 3; i++) {
					fill(line, sizeof line, lines[d][i],
					    10 + i, k);
					json_decref(decode_line(cs, line,
					    strlen(line), &err, &rc));
					assert_int_equal(rc, i == 1 ? 0 : -1);
				}
			/* CODEC_RING newer ids push m-1 out. */
			for (i = 0; i < CODEC_RING; i++) {
				fill(line, sizeof line, lines[d][0],
				    100 + i, i);
				json_decref(decode_line(cs, line, strlen(line),
				    &err, &rc));
				assert_int_equal(rc, 0);
			}
			fill(line, sizeof line, lines[d][0], 1, 2);
			json_decref(decode_line(cs, line, strlen(line), &err,
			    &rc));
			assert_int_equal(rc, 0);
			codec_free(cs);
		}
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
	json_t			*env;
	int			 rc;

	m = encode(cs, REQ_ENVELOPE);
	assert_string_equal(at(m, "type"), "TASK_ASSIGNMENT");
	assert_string_equal(at(m, "payload.task_id"), "r-1");
	assert_string_equal(at(m, "payload.task_type"), "analyze");
	assert_string_equal(at(m, "metadata.priority"), "high");
	assert_string_equal(at(m, "to"), "c");
	json_decref(m);
	env = decode_line(cs, done, strlen(done), &err, &rc);
	assert_int_equal(rc, 0);
	assert_envelope(env);
	assert_string_equal(at(env, "intent"), "analyze");
	json_decref(env);

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

/*
 * The tape's path and jansson's make the same lines: random messages of
 * every shape the per-message kinds can take (and shapes they must
 * decline), in both directions, through a codec that may use the tape
 * and one that may not, sharing a history of requests and answers.
 */
static unsigned int	diff_seed = 20;

/* A random number below n. */
static unsigned int
rnd(unsigned int n)
{
	diff_seed = diff_seed * 1103515245u + 12345u;
	return (diff_seed >> 16) % n;
}

/* An id, sometimes one of a few (so answers find requests), or odd. */
static json_t *
rnd_id(void)
{
	static const char *const ids[] = { "r-1", "r-2", "r-3", "task-7",
	    "r\\u002d1", "", "x\"y", "\xc3\xa9t\xc3\xa9" };
	char	long_id[100];

	switch (rnd(12)) {
	case 0:
		return json_integer(7);
	case 1:
		memset(long_id, 'L', 80);
		long_id[80] = '\0';
		return json_string(long_id);
	case 2:
		memset(long_id, 'M', 63);
		long_id[63] = '\0';
		return json_string(long_id);
	default:
		return json_string(ids[rnd(sizeof ids / sizeof ids[0])]);
	}
}

/*
 * A message id of an agent: mostly new (a redelivery is dropped before
 * either way translates it), at times one seen before, or an odd one.
 */
static json_t *
rnd_msg_id(void)
{
	static unsigned int	n;

	switch (rnd(10)) {
	case 0:
		return rnd_id();
	case 1:
		return json_sprintf("m-%u", rnd(n + 1));
	default:
		return json_sprintf("m-%u", ++n);
	}
}

/* A value of any type. */
static json_t *
rnd_value(void)
{
	char	big[400];

	switch (rnd(12)) {
	case 0: return json_string("plain");
	case 1: return json_string("quote \" slash \\ line\n tab\t \xe2\x82\xac");
	case 2: return json_integer(3);
	case 3: return json_real(3.5);
	case 4: return json_real(-0.0);
	case 5: return json_true();
	case 6: return json_null();
	case 7: return json_pack("{s:i, s:{s:[i, s]}}", "k", 1, "n", "d", 2,
	    "two");
	case 8: return json_pack("[i, s, {}]", 1, "x");
	case 9:
		memset(big, 'x', sizeof big - 1);
		big[sizeof big - 1] = '\0';
		return json_string(big);
	case 10: return json_real(30000);
	default: return json_object();
	}
}

/* Set key to a random value of choices (or leave it out: -1). */
static void
rnd_set(json_t *o, const char *key, json_t *v)
{
	if (v != NULL)
		json_object_set_new(o, key, v);
}

/* Maybe (one time in n) a value, else NULL. */
static json_t *
maybe(unsigned int n, json_t *v)
{
	if (rnd(n) == 0) {
		json_decref(v);
		return NULL;
	}
	return v;
}

/* v, or one time in n a random value instead (v is dropped then). */
static json_t *
rnd_instead(unsigned int n, json_t *v)
{
	if (rnd(n) == 0) {
		json_decref(v);
		return rnd_value();
	}
	return v;
}

/* A priority of any form. */
static json_t *
rnd_prio(void)
{
	static const char *const names[] = { "high", "low", "critical",
	    "batch", "urgent", "normal" };

	switch (rnd(5)) {
	case 0: return json_integer(rnd(7) - 1);
	case 1: return json_real(2.0);
	default: return json_string(names[rnd(6)]);
	}
}

/* One of corral's lines for the agent: mostly requests and tasks. */
static json_t *
rnd_corral_line(void)
{
	static const char *const intents[] = { "analyze", "execute", "plan",
	    "dance", "\\u0061nalyze" };
	static const char *const kinds[] = { "task", "result", "notice",
	    "message", "task" };
	json_t	*e = json_pack("{s:s, s:s}", "protocol", "multiagent-1.0",
		    "role", "agent"), *c, *t, *b, *cm;

	if (rnd(20) == 0)
		json_object_del(e, "protocol");
	rnd_set(e, "intent", maybe(6, rnd(8) == 0 ? json_integer(1) :
	    json_string(intents[rnd(5)])));
	rnd_set(e, "task", maybe(4, rnd(6) == 0 ? rnd_value() :
	    json_string("do it")));
	c = json_pack("{s:s}", "type", rnd(2) ? "json" : "text");
	rnd_set(c, "data", maybe(2, rnd_value()));
	rnd_set(c, "text", maybe(2, rnd_value()));
	rnd_set(e, "content", maybe(8, rnd_instead(10, c)));
	t = json_object();
	rnd_set(t, "id", maybe(5, rnd_id()));
	rnd_set(t, "parents", maybe(2, rnd(4) == 0 ? rnd_value() :
	    json_pack("[o, s]", rnd_id(), "p2")));
	rnd_set(e, "trace", maybe(8, t));
	rnd_set(e, "priority", maybe(2, rnd_prio()));
	rnd_set(e, "ttl_ms", maybe(2, rnd(3) ? json_integer(5000) :
	    rnd_value()));
	rnd_set(e, "session", maybe(2, rnd(3) ? json_string("s-1") :
	    rnd_value()));
	rnd_set(e, "agent", maybe(3, json_pack("{s:o}", "id", rnd(4) ?
	    json_string("asker") : rnd_value())));
	rnd_set(e, "inputs", maybe(2, rnd_value()));
	b = json_object();
	rnd_set(b, "action", maybe(2, rnd(3) ? json_string("verify") :
	    rnd_value()));
	rnd_set(b, "context", maybe(2, json_pack("{s:s}", "sessionId", "s-2")));
	rnd_set(b, "trace", maybe(2, json_pack("{s:s}", "traceId", "t")));
	rnd_set(e, "bus", maybe(2, rnd_instead(6, b)));
	cm = json_object();
	rnd_set(cm, "kind", maybe(2, rnd(8) ? json_string(kinds[rnd(5)]) :
	    rnd_value()));
	rnd_set(cm, "parent", maybe(2, rnd_id()));
	rnd_set(cm, "retry_count", maybe(2, rnd(3) ? json_integer(2) :
	    rnd_value()));
	rnd_set(cm, "correlationId", maybe(2, rnd_id()));
	rnd_set(e, "corral", maybe(2, cm));
	rnd_set(e, "agentmessage", maybe(8, json_pack("{s:s}", "type",
	    rnd(2) ? "HELP_REQUEST" : "TASK_ASSIGNMENT")));
	rnd_set(e, "handoff", maybe(10, json_pack("{s:s, s:s}", "from", "a",
	    "reason", "ESCALATION")));
	return e;
}

/* A bus agent's line: mostly RESPONSEs, long and short forms. */
static json_t *
rnd_bus_line(void)
{
	static const char *const types[] = { "RESPONSE", "RESPONSE",
	    "RESPONSE", "REQUEST", "PUBLISH", "HEARTBEAT" };
	static const char *const statuses[] = { "SUCCESS", "ERROR",
	    "TIMEOUT", "SUCCESS" };
	json_t	*m = json_object(), *h = json_object(), *b = json_object();

	rnd_set(h, "type", maybe(20, rnd(10) ? json_string(types[rnd(6)]) :
	    rnd_value()));
	rnd_set(h, "correlationId", maybe(10, rnd_id()));
	rnd_set(h, "messageId", maybe(3, rnd_msg_id()));
	rnd_set(h, "priority", maybe(2, rnd_prio()));
	rnd_set(h, "ttl", maybe(2, rnd(3) ? json_integer(rnd(2) ? 30000 : -5) :
	    rnd_value()));
	rnd_set(h, "source", maybe(2, json_string("agent-analyzer")));
	rnd_set(b, "status", maybe(3, rnd(8) ? json_string(statuses[rnd(4)]) :
	    rnd_value()));
	rnd_set(b, "result", maybe(4, rnd_value()));
	rnd_set(b, "action", maybe(2, rnd(2) ? json_string(rnd(2) ?
	    "summarize" : "review") : rnd_value()));
	rnd_set(b, "confidence", maybe(2, rnd(3) ? json_real(0.75) :
	    rnd_value()));
	rnd_set(b, "context", maybe(2, json_pack("{s:o, s:[s]}", "sessionId",
	    rnd(3) ? json_string("s-1") : rnd_value(), "previousDecisions",
	    "use JSONL")));
	rnd_set(b, "event", maybe(3, json_string("Done")));
	if (rnd(3) == 0) {
		/* The short form: the header's members at the top. */
		json_object_update(m, h);
		json_decref(h);
	} else
		rnd_set(m, "header", rnd_instead(15, h));
	rnd_set(m, "body", maybe(12, rnd_instead(15, b)));
	rnd_set(m, "trace", maybe(2, json_pack("{s:s, s:s}", "traceId", "t1",
	    "spanId", "s1")));
	return m;
}

/* An AgentMessage agent's line: mostly TASK_COMPLETEs. */
static json_t *
rnd_am_line(void)
{
	static const char *const types[] = { "TASK_COMPLETE",
	    "TASK_COMPLETE", "TASK_COMPLETE", "ERROR_REPORT", "TASK_FAILED",
	    "HEARTBEAT" };
	static const char *const tos[] = { "", "planner", "topic:news", "*",
	    "corral" };
	json_t	*m = json_object(), *p = json_object(), *md = json_object();

	rnd_set(m, "id", maybe(4, rnd_msg_id()));
	rnd_set(m, "type", maybe(20, rnd(10) ? json_string(types[rnd(6)]) :
	    rnd_value()));
	rnd_set(m, "to", maybe(2, rnd(10) ? json_string(tos[rnd(5)]) :
	    rnd_value()));
	rnd_set(m, "from", maybe(2, rnd(10) ? json_string("worker") :
	    rnd_value()));
	rnd_set(m, "timestamp", maybe(2, json_string("2026-01-10T14:30:00Z")));
	rnd_set(p, "task_id", maybe(4, rnd_id()));
	rnd_set(p, "request_id", maybe(6, rnd_id()));
	rnd_set(p, "result", maybe(3, rnd_value()));
	rnd_set(p, "confidence", maybe(2, rnd(3) ? json_real(0.4) :
	    rnd_value()));
	rnd_set(p, "context", maybe(2, json_pack("{s:o}", "session_id",
	    rnd(3) ? json_string("s-3") : rnd_value())));
	rnd_set(p, "error_type", maybe(2, json_string("TIMEOUT")));
	rnd_set(p, "severity", maybe(2, json_string(rnd(2) ? "low" :
	    "high")));
	rnd_set(m, "payload", maybe(10, rnd_instead(12, p)));
	rnd_set(md, "priority", maybe(2, rnd(6) ? json_string(rnd(2) ?
	    "high" : "low") : rnd_value()));
	rnd_set(md, "correlation_id", maybe(3, rnd_id()));
	rnd_set(md, "ttl_ms", maybe(2, rnd(3) ? json_integer(100) :
	    rnd_value()));
	rnd_set(md, "session_id", maybe(3, json_string("s-4")));
	rnd_set(m, "metadata", maybe(4, rnd_instead(12, md)));
	return m;
}

/* Random lines of one dialect through both ways of translating. */
static void
diff_dialect(const struct codec_ops *ops, json_t *(*agent_line)(void))
{
	struct codec_state	*tape = codec_create(ops, "b");
	struct codec_state	*tree = codec_create(ops, "b");
	json_t			*m;
	char			*line, why[512];
	int			 i, encode;

	for (i = 0; i < 4000; i++) {
		encode = rnd(2);
		m = encode ? rnd_corral_line() : agent_line();
		line = json_dumps(m, CORRAL_JSON_FLAGS);
		json_decref(m);
		if (!codec_diff(tape, tree, line, strlen(line), encode, why,
		    sizeof why))
			fail_msg("%s %s: %s", encode ? "encoding" : "decoding",
			    line, why);
		free(line);
	}
	codec_free(tape);
	codec_free(tree);
}

/* Pass one of the agent's JSON-RPC requests through the codec. */
static void
own_request(struct codec_state *cs, const char *line)
{
	struct codec_error	 err;
	int			 rc;

	assert_null(decode_line(cs, line, strlen(line), &err, &rc));
	assert_int_equal(rc, 1);
}

/* Fail unless corral's line reaches the agent exactly as it is. */
static void
assert_passes(struct codec_state *cs, const char *line)
{
	char	*s;
	size_t	 len;

	s = codec_encode_line(cs, line, strlen(line), &len);
	if (s == NULL)
		fail_msg("dropped, not passed to the agent: %s", line);
	assert_int_equal(len, strlen(line));
	assert_string_equal(s, line);
	free(s);
}

/*
 * A dialect agent may use MAP's control frames: the responses to its
 * own requests, and a batch's answers, reach it as they are, even when
 * its id has the form of the codec's calls (KIND:ID), while the answers
 * to the codec's calls are still translated.
 */
static void
test_own_rpc(void **state)
{
	const struct codec_ops	*ops[] = { &codec_bus_ops,
	    &codec_agentmessage_ops };
	struct codec_state	*cs;
	json_t			*m;
	char			 line[512], id[128];
	size_t			 i;

	memset(id, 'x', sizeof id);
	memcpy(id, "req:", 4);
	id[100] = '\0';	/* longer than the ring's ids */
	for (i = 0; i < 2; i++) {
		cs = codec_create(ops[i], "a");
		own_request(cs, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
		    "\"map/agents/list\",\"params\":{}}");
		assert_passes(cs, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":"
		    "{\"agents\":[]}}");
		assert_passes(cs, "{\"jsonrpc\":\"2.0\",\"id\":\"mine\","
		    "\"error\":{\"code\":-32601,\"message\":\"no\"}}");
		own_request(cs, "[{\"jsonrpc\":\"2.0\",\"id\":\"pub:7\","
		    "\"method\":\"map/agents/list\"}]");
		assert_passes(cs, "[{\"jsonrpc\":\"2.0\",\"id\":\"pub:7\","
		    "\"result\":{}}]");
		assert_passes(cs, "{\"jsonrpc\":\"2.0\",\"id\":\"pub:7\","
		    "\"result\":{}}");
		snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":"
		    "\"%s\",\"method\":\"map/agents/list\"}", id);
		own_request(cs, line);
		snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":"
		    "\"%s\",\"result\":{}}", id);
		assert_passes(cs, line);
		/* Its subscription's events too; other requests are not. */
		assert_passes(cs, "{\"jsonrpc\":\"2.0\",\"method\":"
		    "\"map/event\",\"params\":{\"subscriptionId\":\"s\"}}");
		assert_null(encode(cs, "{\"jsonrpc\":\"2.0\",\"id\":3,"
		    "\"method\":\"map/agents/list\"}"));
		/* The codec's own call: translated, or (its result) nothing. */
		assert_null(encode(cs, "{\"jsonrpc\":\"2.0\",\"id\":"
		    "\"pub:8\",\"result\":{}}"));
		m = encode(cs, "{\"jsonrpc\":\"2.0\",\"id\":\"find:q\","
		    "\"result\":{\"agents\":[]}}");
		assert_non_null(m);
		assert_null(json_object_get(m, "jsonrpc"));
		json_decref(m);
		codec_free(cs);
	}
}

/* The bus: requests to the agent, its responses. */
static void
test_bus_tape(void **state)
{
	diff_dialect(&codec_bus_ops, rnd_bus_line);
}

/* AgentMessage: tasks to the agent, its TASK_COMPLETEs. */
static void
test_am_tape(void **state)
{
	diff_dialect(&codec_agentmessage_ops, rnd_am_line);
}

/*
 * An agent's number of more than 15 significant digits: the tape copies
 * its digits, jansson writes 15 of them, and the two ways agree.
 */
static void
test_am_number_digits(void **state)
{
	static const char	 line[] = "{\"id\":\"d-0\",\"type\":"
	    "\"TASK_COMPLETE\",\"from\":\"w\",\"to\":\"corral\","
	    "\"payload\":{\"task_id\":\"r-1\",\"x\":5.8222222222222220}}";
	struct codec_state	*tape = codec_create(&codec_agentmessage_ops,
				    "b");
	struct codec_state	*tree = codec_create(&codec_agentmessage_ops,
				    "b");
	struct codec_error	 e;
	char			*a = NULL, *b = NULL, why[512];
	size_t			 la = 0, lb = 0;

	assert_int_equal(codec_decode_line(tape, line, strlen(line), &a, &la,
	    &e), 0);
	assert_non_null(strstr(a, "\"x\":5.8222222222222220"));
	tree->slow = 1;
	assert_int_equal(codec_decode_line(tree, line, strlen(line), &b, &lb,
	    &e), 0);
	assert_non_null(strstr(b, "\"x\":5.82222222222222}"));
	free(a);
	free(b);
	codec_free(tape);
	codec_free(tree);
	tape = codec_create(&codec_agentmessage_ops, "b");
	tree = codec_create(&codec_agentmessage_ops, "b");
	if (!codec_diff(tape, tree, line, strlen(line), 0, why, sizeof why))
		fail_msg("%s", why);
	codec_free(tape);
	codec_free(tree);
	/* Integers are compared exactly, however long. */
	assert_true(codec_diff_lines("{\"n\":1234567890123456}",
	    "{\"n\":1234567890123456}", why, sizeof why));
	assert_false(codec_diff_lines("{\"n\":1234567890123456}",
	    "{\"n\":1234567890123457}", why, sizeof why));
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
		cmocka_unit_test(test_redelivery),
		cmocka_unit_test(test_own_rpc),
		cmocka_unit_test(test_bus_tape),
		cmocka_unit_test(test_am_tape),
		cmocka_unit_test(test_am_number_digits),
	};

	log_init(0);
	protocol_set_run("unit");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
