/*
 * Unit tests of the ADR-007 codec (src/adr007.c): the agent protocol's own
 * input and output envelopes (tests/fixtures/adr007) round-trip through
 * corral, and every rule of the protocol's field tables is a test.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "corral.h"

static const struct adr007_defaults dflt = { "specify", NULL };

/* Load a fixture of tests/fixtures/adr007. */
static json_t *
fixture(const char *name)
{
	const char	*data = getenv("CORRAL_TEST_DATA");
	char		 path[1024];
	json_error_t	 e;
	json_t		*j;

	if (data == NULL)
		skip();
	snprintf(path, sizeof path, "%s/fixtures/adr007/%s", data, name);
	if ((j = json_load_file(path, CORRAL_JSON_LOAD, &e)) == NULL)
		fail_msg("%s:%d: %s", path, e.line, e.text);
	return j;
}

/* Parse a line corral made; it must be one JSON object. */
static json_t *
parse(const char *line, size_t len)
{
	json_error_t	 e;
	json_t		*j;

	if ((j = json_loadb(line, len, CORRAL_JSON_LOAD, &e)) == NULL)
		fail_msg("not JSON: %s: %.*s", e.text, (int)len, line);
	assert_true(json_is_object(j));
	return j;
}

/* Assert two JSON values are equal, showing both when not. */
static void
assert_json_equal(json_t *got, json_t *want)
{
	char	*g, *w;

	if (json_equal(got, want))
		return;
	g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
	w = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS);
	fail_msg("got  %s\nwant %s", g, w);
}

/*
 * A step's request (as the step module makes it) whose step member says
 * what the fixture's input envelope says, turned into an input envelope.
 */
static char *
request_for(json_t *input, size_t *len)
{
	json_t	*req, *ctx = json_object_get(input, "context");
	char	*s;

	req = json_pack("{s:s, s:s, s:s, s:O, s:{s:O}, s:{s:s}, s:{s:{s:O, "
	    "s:O, s:O, s:O, s:O, s:s}}}",
	    "protocol", CORRAL_ENVELOPE_PROTOCOL, "role", "user",
	    "intent", "execute",
	    "task", json_object_get(json_object_get(input, "task"), "action"),
	    "inputs", "parameters", json_object_get(json_object_get(input,
	    "task"), "params"),
	    "content", "type", "text",
	    "corral", "step",
	    "feature_id", json_object_get(ctx, "feature_id"),
	    "workflow", json_object_get(ctx, "workflow"),
	    "iteration", json_object_get(ctx, "iteration"),
	    "paths", json_object_get(input, "paths"),
	    "prior_context", json_object_get(input, "prior_context"),
	    "name", "validate");
	assert_non_null(req);
	s = json_dumps(req, CORRAL_JSON_FLAGS);
	*len = strlen(s);
	json_decref(req);
	return s;
}

/* The protocol's input example comes out of a step's request as it is. */
static void
test_input_round_trip(void **state)
{
	json_t	*want = fixture("input.json"), *got;
	char	*req, *in, why[256];
	size_t	 rlen, ilen;

	req = request_for(want, &rlen);
	in = adr007_input(req, rlen, &dflt, &ilen, why, sizeof why);
	if (in == NULL)
		fail_msg("%s", why);
	assert_null(memchr(in, '\n', ilen));
	got = parse(in, ilen);
	assert_json_equal(got, want);
	json_decref(got);
	free(in);
	free(req);
	json_decref(want);
}

/*
 * The protocol's output example becomes a multiagent-1.0 reply that
 * corral's validator accepts, and that reply read back is the example.
 */
static void
test_output_round_trip(void **state)
{
	struct adr007_error	 err;
	struct env		 env;
	struct env_error	 eerr;
	struct jscan		*js;
	json_t			*want = fixture("output.json"), *r, *got;
	char			*text, *reply;
	size_t			 len;

	text = json_dumps(want, JSON_COMPACT);
	reply = adr007_reply(text, strlen(text), "validator", "execute",
	    "validate", &len, &err);
	if (reply == NULL)
		fail_msg("refused: %s: %s", err.field, err.msg);
	js = jscan_create(4);
	assert_int_equal(jscan_run(js, reply, len), 0);
	if (envelope_check(js, reply, len, &env, &eerr) != 0)
		fail_msg("not a valid envelope: %s\n%s", eerr.msg, reply);
	assert_int_equal(env.ctype, CT_TEXT);
	assert_int_equal(env.intent, INTENT_EXECUTE);
	assert_int_equal(env.parents, -1);	/* the oldest request */
	jscan_free(js);
	r = parse(reply, len);
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    r, "agent"), "id")), "validator");
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    r, "content"), "text")), json_string_value(json_object_get(want,
	    "summary")));
	assert_json_equal(json_object_get(json_object_get(r, "outputs"),
	    "artifacts"), json_object_get(want, "artifacts"));
	json_decref(r);
	got = adr007_read(reply, len, &err);
	assert_non_null(got);
	assert_json_equal(got, want);
	json_decref(got);
	free(reply);
	free(text);
	json_decref(want);
}

/*
 * The input table: every required field is there with its type, whatever
 * the request; prior_context, optional in the protocol, is always sent;
 * feature_id is null when there is none.
 */
static void
test_input_fields(void **state)
{
	static const char plain[] = "{\"protocol\":\"multiagent-1.0\","
	    "\"role\":\"user\",\"intent\":\"analyze\",\"task\":\"classify_gaps\","
	    "\"inputs\":{\"context\":\"earlier text\"},"
	    "\"content\":{\"type\":\"text\"}}";
	const struct adr007_defaults	 d = { "plan", "007-x" };
	json_t				*in, *ctx;
	char				*out, why[256];
	size_t				 len;

	out = adr007_input(plain, sizeof plain - 1, &dflt, &len, why,
	    sizeof why);
	assert_non_null(out);
	in = parse(out, len);
	ctx = json_object_get(in, "context");
	assert_true(json_is_object(ctx));
	assert_true(json_is_null(json_object_get(ctx, "feature_id")));
	assert_string_equal(json_string_value(json_object_get(ctx,
	    "workflow")), "specify");
	assert_int_equal(json_integer_value(json_object_get(ctx,
	    "iteration")), 1);
	assert_true(json_is_object(json_object_get(in, "paths")));
	assert_int_equal(json_object_size(json_object_get(in, "paths")), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    in, "task"), "action")), "classify_gaps");
	assert_true(json_is_object(json_object_get(json_object_get(in, "task"),
	    "params")));
	assert_int_equal(json_array_size(json_object_get(in,
	    "prior_context")), 1);
	assert_string_equal(json_string_value(json_array_get(json_object_get(
	    in, "prior_context"), 0)), "earlier text");
	assert_int_equal(json_object_size(in), 4);	/* nothing else */
	json_decref(in);
	free(out);

	out = adr007_input(plain, sizeof plain - 1, &d, &len, why, sizeof why);
	in = parse(out, len);
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    in, "context"), "feature_id")), "007-x");
	json_decref(in);
	free(out);

	assert_null(adr007_input("[1]", 3, &dflt, &len, why, sizeof why));
	assert_non_null(strstr(why, "not a JSON object"));
}

/* One broken rule of the output table, and the field it must name. */
struct bad_output {
	const char	*text;
	const char	*field;
	const char	*msg;
};

static const struct bad_output bad_outputs[] = {
	{ "[]", "", "must be a JSON object" },
	{ "{\"summary\":\"s\",\"artifacts\":[],\"recommendation\":\"proceed\"}",
	    "success", "success is required" },
	{ "{\"success\":\"yes\",\"summary\":\"s\",\"artifacts\":[],"
	    "\"recommendation\":\"proceed\"}", "success",
	    "success must be true or false" },
	{ "{\"success\":true,\"artifacts\":[],\"recommendation\":\"proceed\"}",
	    "summary", "summary is required" },
	{ "{\"success\":true,\"summary\":3,\"artifacts\":[],"
	    "\"recommendation\":\"proceed\"}", "summary",
	    "summary must be a string" },
	{ "{\"success\":true,\"summary\":\"s\",\"recommendation\":\"proceed\"}",
	    "artifacts", "artifacts is required (an empty array" },
	{ "{\"success\":true,\"summary\":\"s\",\"artifacts\":{},"
	    "\"recommendation\":\"proceed\"}", "artifacts",
	    "artifacts must be an array" },
	{ "{\"success\":true,\"summary\":\"s\",\"artifacts\":[\"a.md\"],"
	    "\"recommendation\":\"proceed\"}", "artifacts[0]",
	    "artifacts[0] must be an object" },
	{ "{\"success\":true,\"summary\":\"s\",\"artifacts\":[{\"operation\":"
	    "\"create\",\"content\":\"\"}],\"recommendation\":\"proceed\"}",
	    "artifacts[0].path", "artifacts[0].path is required" },
	{ "{\"success\":true,\"summary\":\"s\",\"artifacts\":[{\"path\":\"\","
	    "\"operation\":\"create\",\"content\":\"\"}],\"recommendation\":"
	    "\"proceed\"}", "artifacts[0].path", "must be a non-empty string" },
	{ "{\"success\":true,\"summary\":\"s\",\"artifacts\":[{\"path\":\"a\","
	    "\"operation\":\"create\",\"content\":\"\"},{\"path\":\"b\","
	    "\"content\":\"\"}],\"recommendation\":\"proceed\"}",
	    "artifacts[1].operation", "artifacts[1].operation is required" },
	{ "{\"success\":true,\"summary\":\"s\",\"artifacts\":[{\"path\":\"a\","
	    "\"operation\":\"delete\",\"content\":\"\"}],\"recommendation\":"
	    "\"proceed\"}", "artifacts[0].operation", "must be create or update" },
	{ "{\"success\":true,\"summary\":\"s\",\"artifacts\":[{\"path\":\"a\","
	    "\"operation\":\"update\"}],\"recommendation\":\"proceed\"}",
	    "artifacts[0].content", "artifacts[0].content is required" },
	{ "{\"success\":true,\"summary\":\"s\",\"artifacts\":[{\"path\":\"a\","
	    "\"operation\":\"update\",\"content\":null}],\"recommendation\":"
	    "\"proceed\"}", "artifacts[0].content", "must be a string" },
	{ "{\"success\":true,\"summary\":\"s\",\"artifacts\":[],\"notes\":\"n\","
	    "\"recommendation\":\"proceed\"}", "notes",
	    "notes must be an array of strings" },
	{ "{\"success\":true,\"summary\":\"s\",\"artifacts\":[],\"notes\":"
	    "[\"a\",\"b\",7],\"recommendation\":\"proceed\"}", "notes[2]",
	    "notes[2] must be a string" },
	{ "{\"success\":true,\"summary\":\"s\",\"artifacts\":[]}",
	    "recommendation", "recommendation is required" },
	{ "{\"success\":true,\"summary\":\"s\",\"artifacts\":[],"
	    "\"recommendation\":\"skip\"}", "recommendation",
	    "must be proceed, retry or escalate" },
	{ "{\"success\":true,\"summary\":\"s\",\"artifacts\":[],"
	    "\"recommendation\":\"proceed\"", "", "invalid JSON" },
};

/* Every rule of the output table: a refusal naming its field. */
static void
test_output_rules(void **state)
{
	struct adr007_error	 err;
	const struct bad_output	*b;
	char			*r;
	size_t			 i, len;
	int			 bad = 0;

	for (i = 0; i < sizeof bad_outputs / sizeof bad_outputs[0]; i++) {
		b = &bad_outputs[i];
		r = adr007_reply(b->text, strlen(b->text), "a", "execute", "t",
		    &len, &err);
		if (r != NULL || strcmp(err.field, b->field) != 0 ||
		    strstr(err.msg, b->msg) == NULL) {
			print_message("%s\n  got %s: %s\n  want %s: %s\n",
			    b->text, r != NULL ? "(accepted)" : err.field,
			    err.msg, b->field, b->msg);
			bad++;
		}
		free(r);
	}
	assert_int_equal(bad, 0);
}

/*
 * What the output table allows: notes may be left out (none), artifacts
 * may be empty, other members are ignored; success: false becomes an
 * error reply that still says what the agent recommends.
 */
static void
test_output_allowed(void **state)
{
	static const char out[] = "{\"success\":false,\"summary\":\"no spec\","
	    "\"artifacts\":[],\"recommendation\":\"retry\",\"extra\":[1]}";
	struct adr007_error	 err;
	json_t			*r, *o;
	char			*line;
	size_t			 len;

	line = adr007_reply(out, sizeof out - 1, "w", "plan", "create", &len,
	    &err);
	assert_non_null(line);
	r = parse(line, len);
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    r, "content"), "type")), "error");
	assert_null(json_object_get(r, "extra"));
	assert_true(json_is_false(json_object_get(json_object_get(r, "step"),
	    "success")));
	json_decref(r);
	o = adr007_read(line, len, &err);
	assert_true(json_is_false(json_object_get(o, "success")));
	assert_int_equal(json_array_size(json_object_get(o, "notes")), 0);
	assert_string_equal(json_string_value(json_object_get(o,
	    "recommendation")), "retry");
	json_decref(o);
	free(line);
}

/*
 * A multiagent-1.0 reply read as an output envelope: a text reply is a
 * success that proceeds with its text as the one note, an error reply a
 * failure that retries; its step member says otherwise, and is checked.
 */
static void
test_read_multiagent(void **state)
{
	static const char ok[] = "{\"protocol\":\"multiagent-1.0\",\"role\":"
	    "\"agent\",\"intent\":\"execute\",\"task\":\"t\",\"content\":"
	    "{\"type\":\"text\",\"text\":\"done\"},\"outputs\":{\"artifacts\":"
	    "[{\"kind\":\"k\",\"name\":\"n\"},{\"path\":\"a.md\",\"content\":"
	    "\"A\"}]}}";
	static const char fail[] = "{\"protocol\":\"multiagent-1.0\",\"role\":"
	    "\"agent\",\"intent\":\"execute\",\"task\":\"t\",\"content\":"
	    "{\"type\":\"error\",\"text\":\"broke\"}}";
	static const char says[] = "{\"protocol\":\"multiagent-1.0\",\"role\":"
	    "\"agent\",\"intent\":\"execute\",\"task\":\"t\",\"content\":"
	    "{\"type\":\"text\",\"text\":\"hm\"},\"step\":{\"recommendation\":"
	    "\"escalate\",\"notes\":[\"ask\"]}}";
	static const char bad[] = "{\"protocol\":\"multiagent-1.0\",\"role\":"
	    "\"agent\",\"intent\":\"execute\",\"task\":\"t\",\"content\":"
	    "{\"type\":\"text\"},\"step\":{\"recommendation\":\"later\"}}";
	struct adr007_error	 err;
	json_t			*o;

	o = adr007_read(ok, sizeof ok - 1, &err);
	assert_true(json_is_true(json_object_get(o, "success")));
	assert_string_equal(json_string_value(json_object_get(o, "summary")),
	    "done");
	assert_string_equal(json_string_value(json_object_get(o,
	    "recommendation")), "proceed");
	assert_int_equal(json_array_size(json_object_get(o, "notes")), 1);
	assert_int_equal(json_array_size(json_object_get(o, "artifacts")), 1);
	assert_null(json_object_get(json_array_get(json_object_get(o,
	    "artifacts"), 0), "operation"));
	json_decref(o);
	o = adr007_read(fail, sizeof fail - 1, &err);
	assert_true(json_is_false(json_object_get(o, "success")));
	assert_string_equal(json_string_value(json_object_get(o,
	    "recommendation")), "retry");
	json_decref(o);
	o = adr007_read(says, sizeof says - 1, &err);
	assert_string_equal(json_string_value(json_object_get(o,
	    "recommendation")), "escalate");
	assert_string_equal(json_string_value(json_array_get(json_object_get(
	    o, "notes"), 0)), "ask");
	json_decref(o);
	assert_null(adr007_read(bad, sizeof bad - 1, &err));
	assert_string_equal(err.field, "step.recommendation");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_input_round_trip),
		cmocka_unit_test(test_output_round_trip),
		cmocka_unit_test(test_input_fields),
		cmocka_unit_test(test_output_rules),
		cmocka_unit_test(test_output_allowed),
		cmocka_unit_test(test_read_multiagent),
	};

	protocol_set_intents(NULL, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
