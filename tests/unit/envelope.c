/*
 * Unit tests of multiagent-1.0 envelopes (src/envelope.c): validation of
 * every rule docs/protocol.md lists, and the envelopes corral builds or
 * splices (fill, reflect, action, mark, error, goal).
 *
 * Every envelope corral forwards must itself be valid: the builders'
 * output is scanned and validated again, and compared with jansson's
 * reading of the input so that no byte of the producer's content changes.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "corral.h"
#include "env-diff.h"

#define TAPE_LEVEL	4	/* what engine.c gives its scanner */

/* The smallest valid envelope, and the same with extra members. */
#define BASE_MEMBERS	"\"protocol\":\"multiagent-1.0\",\"role\":\"agent\"," \
	"\"intent\":\"plan\",\"task\":\"t\",\"content\":{\"type\":\"text\"}"
#define MINIMAL		"{" BASE_MEMBERS "}"
#define WITH(extra)	"{" BASE_MEMBERS "," extra "}"

/* Seed 000's canonical examples, and its handshake message. */
static const char example_planner[] =
	"{\n"
	"  \"protocol\":\"multiagent-1.0\",\n"
	"  \"role\":\"agent\",\n"
	"  \"agent\":{\"id\":\"gpt5.plan\",\"name\":\"Planner\",\"model\":\"gpt-5\"},\n"
	"  \"timestamp\":\"2025-10-10T12:40:00Z\",\n"
	"  \"intent\":\"plan\",\n"
	"  \"task\":\"Outline steps to scrape prices and store in CSV\",\n"
	"  \"inputs\":{\"context\":\"User sells items; wants daily price tracker\"},\n"
	"  \"content\":{\"type\":\"text\",\"text\":\"I propose a 3\xe2\x80\x91step plan.\"},\n"
	"  \"outputs\":{\n"
	"    \"artifacts\":[{\"kind\":\"plan\",\"name\":\"price_tracker_plan\",\"inline\":\"1) Collect URLs 2) Scrape daily 3) Save CSV + notify\"}],\n"
	"    \"next_actions\":[\n"
	"      {\"intent\":\"decompose\",\"task\":\"Turn plan into executable tasks\"},\n"
	"      {\"intent\":\"retrieve\",\"task\":\"Load target URL list from drive\"}\n"
	"    ]\n"
	"  },\n"
	"  \"confidence\":{\"score\":0.78,\"rationale\":\"Common workflow; low complexity\"}\n"
	"}";

static const char example_decomposer[] =
	"{\n"
	"  \"protocol\":\"multiagent-1.0\",\n"
	"  \"role\":\"agent\",\n"
	"  \"agent\":{\"id\":\"claude.decompose\",\"name\":\"Decomposer\",\"model\":\"claude-3.7-sonnet\"},\n"
	"  \"timestamp\":\"2025-10-10T12:41:30Z\",\n"
	"  \"intent\":\"decompose\",\n"
	"  \"task\":\"Break plan into atomic steps\",\n"
	"  \"content\":{\"type\":\"json\",\"data\":{\n"
	"    \"tasks\":[\n"
	"      {\"id\":\"t1\",\"desc\":\"Read urls.csv\"},\n"
	"      {\"id\":\"t2\",\"desc\":\"Fetch HTML per URL\"},\n"
	"      {\"id\":\"t3\",\"desc\":\"Parse price with selector\"},\n"
	"      {\"id\":\"t4\",\"desc\":\"Append to prices.csv\"},\n"
	"      {\"id\":\"t5\",\"desc\":\"Emit summary\"}\n"
	"    ]}},\n"
	"  \"outputs\":{\"next_actions\":[{\"intent\":\"execute\",\"task\":\"Run t1..t5 via Tool.Scraper\",\"args\":{\"batch\":50}}]},\n"
	"  \"confidence\":{\"score\":0.74}\n"
	"}";

static const char example_executor[] =
	"{\n"
	"  \"protocol\":\"multiagent-1.0\",\n"
	"  \"role\":\"tool\",\n"
	"  \"agent\":{\"id\":\"gemini.exec\",\"name\":\"Executor\",\"model\":\"gemini-2.5-pro\"},\n"
	"  \"timestamp\":\"2025-10-10T12:43:10Z\",\n"
	"  \"intent\":\"tool.call\",\n"
	"  \"task\":\"Scrape pages and extract prices\",\n"
	"  \"content\":{\"type\":\"tool_result\",\"data\":{\n"
	"    \"ok\": true,\n"
	"    \"rows_appended\": 147,\n"
	"    \"csv_path\": \"data/prices.csv\"\n"
	"  }},\n"
	"  \"outputs\":{\"artifacts\":[{\"kind\":\"dataset\",\"name\":\"prices_csv\",\"uri\":\"data/prices.csv\"}],\n"
	"    \"next_actions\":[{\"intent\":\"summarize\",\"task\":\"Produce daily change summary\"}]},\n"
	"  \"confidence\":{\"score\":0.86,\"rationale\":\"Selectors matched 93% of pages\",\"risks\":[\"anti\xe2\x80\x91" "bot on 7%\"]},\n"
	"  \"trace\":{\"parents\":[\"msg_002\"],\"id\":\"msg_003\",\"cost\":{\"input_tokens\":2100,\"output_tokens\":380}}\n"
	"}";

static const char example_handshake[] =
	"{\n"
	"  \"protocol\":\"multiagent-1.0\",\n"
	"  \"role\":\"system\",\n"
	"  \"agent\":{\"id\":\"orchestrator\",\"name\":\"Mux\",\"model\":\"n/a\"},\n"
	"  \"timestamp\":\"2025-10-10T12:00:00Z\",\n"
	"  \"intent\":\"reflect\",\n"
	"  \"task\":\"Announce envelope support and capabilities\",\n"
	"  \"content\":{\"type\":\"json\",\"data\":{\"supports\":[\"text\",\"json\",\"tool_result\"],\"max_tokens\":16000}},\n"
	"  \"confidence\":{\"score\":0.9}\n"
	"}";

/* docs/protocol.md's full example, with corral's extensions. */
static const char example_protocol_md[] =
	"{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\","
	"\"agent\":{\"id\":\"planner\",\"name\":\"Planner\",\"model\":\"rules\",\"version\":\"1\"},"
	"\"timestamp\":\"2026-11-22T12:40:00Z\","
	"\"intent\":\"plan\",\"task\":\"Outline the steps\","
	"\"inputs\":{\"context\":\"...\",\"resources\":[{\"type\":\"file\",\"id\":\"urls.csv\"}],"
	"\"parameters\":{\"ttl_ms\":5000}},"
	"\"content\":{\"type\":\"text\",\"text\":\"I propose three steps.\",\"data\":{}},"
	"\"outputs\":{\"artifacts\":[{\"kind\":\"plan\",\"name\":\"p1\",\"uri\":null,\"inline\":\"...\"}],"
	"\"next_actions\":[{\"intent\":\"execute\",\"task\":\"Run step 1\",\"args\":{\"n\":1}}]},"
	"\"confidence\":{\"score\":0.78,\"rationale\":\"...\",\"risks\":[\"...\"]},"
	"\"trace\":{\"parents\":[\"msg_001\"],\"id\":\"msg_002\",\"tags\":[\"x\"],"
	"\"cost\":{\"input_tokens\":1234,\"output_tokens\":456,\"usd\":0.0021}}}";

static struct jscan	*js;

/* Create the shared scanner. */
static int
setup(void **state)
{
	js = jscan_create(TAPE_LEVEL);
	return 0;
}

/* Free the shared scanner. */
static int
teardown(void **state)
{
	jscan_free(js);
	return 0;
}

/* Scan and validate s; the JSON itself must be valid. */
static int
check(const char *s, size_t len, struct env *env, struct env_error *err)
{
	if (jscan_run(js, s, len) != 0)
		fail_msg("test input is not valid JSON (%s at %zu): %s", js->err,
		    js->err_off, s);
	return envelope_check(js, s, len, env, err);
}

/* Assert that s is a valid envelope; return its env. */
static struct env
assert_valid(const char *s)
{
	struct env		env;
	struct env_error	err;

	if (check(s, strlen(s), &env, &err) != 0)
		fail_msg("valid envelope rejected at %s: %s\n%s", err.path,
		    err.msg, s);
	return env;
}

/* Parse with jansson, which must accept it. */
static json_t *
jparse(const char *s, size_t len)
{
	json_error_t	 e;
	json_t		*j;

	j = json_loadb(s, len, JSON_REJECT_DUPLICATES, &e);
	if (j == NULL)
		fail_msg("jansson rejects (%s): %.*s", e.text, (int)len, s);
	return j;
}

/* Seed 000's examples are valid, and validation extracts what routing needs. */
static void
test_canonical_examples(void **state)
{
	struct env	env;

	env = assert_valid(example_planner);
	assert_int_equal(env.intent, INTENT_PLAN);
	assert_int_equal(env.role, 0);
	assert_int_equal(env.ctype, CT_TEXT);
	assert_true(env.has_score);
	assert_true(env.score == 0.78);
	assert_int_equal(env.prio, PRIO_NORMAL);
	assert_int_not_equal(env.next_actions, -1);
	assert_int_equal(jscan_count(js, env.next_actions), 2);
	assert_int_not_equal(env.timestamp, -1);
	assert_int_not_equal(env.content, -1);
	assert_int_equal(env.trace, -1);
	assert_int_equal(env.trace_id, -1);
	assert_int_equal(env.corral, -1);

	env = assert_valid(example_decomposer);
	assert_int_equal(env.intent, INTENT_DECOMPOSE);
	assert_int_equal(env.ctype, CT_JSON);
	assert_true(env.score == 0.74);
	assert_int_equal(jscan_count(js, env.next_actions), 1);

	env = assert_valid(example_executor);
	assert_int_equal(env.intent, INTENT_TOOL_CALL);
	assert_int_equal(env.role, 3);
	assert_int_equal(env.ctype, CT_TOOL_RESULT);
	assert_true(env.score == 0.86);
	assert_int_not_equal(env.trace, -1);
	assert_int_not_equal(env.trace_id, -1);
	assert_int_not_equal(env.parents, -1);
	assert_true(env.tokens_in == 2100);
	assert_true(env.tokens_out == 380);
	assert_true(env.cost == 0);

	env = assert_valid(example_handshake);
	assert_int_equal(env.intent, INTENT_REFLECT);
	assert_int_equal(env.role, 2);
	assert_true(env.score == 0.9);

	env = assert_valid(example_protocol_md);
	assert_true(env.ttl == 5.0);
	assert_true(env.tokens_in == 1234);
	assert_true(env.tokens_out == 456);
	assert_true(env.cost == 0.0021);
}

/* Members corral does not know are accepted, at the top and inside. */
static void
test_unknown_members_accepted(void **state)
{
	assert_valid(WITH("\"x-custom\":{\"deep\":[1,2,{\"a\":null}]},"
	    "\"note\":\"hi\",\"n\":1e300"));
	assert_valid("{\"protocol\":\"multiagent-1.0\",\"role\":\"user\","
	    "\"intent\":\"route\",\"task\":\"t\",\"content\":{\"type\":\"code\","
	    "\"lang\":\"c\",\"data\":[1]},\"agent\":{\"id\":\"a\",\"name\":\"b\","
	    "\"model\":\"c\",\"extra\":true},\"trace\":{\"custom\":{}},"
	    "\"confidence\":{\"score\":1,\"extra\":[]},\"outputs\":{\"more\":1,"
	    "\"next_actions\":[{\"intent\":\"finalize\",\"task\":\"x\","
	    "\"why\":\"y\"}]},\"inputs\":{\"other\":2}}");
}

/* Optional members may be absent, and edge values are fine. */
static void
test_optional_and_edge_values(void **state)
{
	struct env	env;
	char		buf[256];

	env = assert_valid(MINIMAL);
	assert_int_equal(env.timestamp, -1);
	assert_false(env.has_score);
	assert_true(env.ttl == 0);
	assert_valid(WITH("\"confidence\":{\"score\":0}"));
	assert_valid(WITH("\"confidence\":{\"score\":1}"));
	assert_valid(WITH("\"confidence\":{\"score\":1.0e-3}"));
	assert_valid(WITH("\"confidence\":{\"score\":0.5,\"risks\":[]}"));
	assert_valid(WITH("\"outputs\":{\"artifacts\":[{\"kind\":\"k\","
	    "\"name\":\"n\",\"uri\":null}]}"));
	assert_valid(WITH("\"outputs\":{\"artifacts\":[],\"next_actions\":[]}"));
	assert_valid(WITH("\"inputs\":{\"resources\":[{\"type\":\"url\","
	    "\"id\":\"u\",\"hint\":\"h\"},{\"type\":\"db\",\"id\":\"d\"},"
	    "{\"type\":\"tool\",\"id\":\"t\"}]}"));
	assert_valid(WITH("\"trace\":{}"));
	assert_valid(WITH("\"trace\":{\"parents\":[],\"tags\":[]}"));
	assert_valid(WITH("\"trace\":{\"cost\":{\"usd\":0}}"));
	assert_valid(WITH("\"timestamp\":\"2026-11-22T12:40:00.5+01:00\""));
	env = assert_valid(WITH("\"ttl_ms\":0"));
	assert_true(env.ttl == 0);
	env = assert_valid(WITH("\"ttl_ms\":1500"));
	assert_true(env.ttl == 1.5);
	env = assert_valid(WITH("\"inputs\":{\"parameters\":{\"ttl_ms\":250}}"));
	assert_true(env.ttl == 0.25);
	env = assert_valid(WITH("\"corral\":{\"retry_count\":1}"));
	assert_int_not_equal(env.corral, -1);
	/* A 63-byte trace id is the longest allowed. */
	snprintf(buf, sizeof buf, WITH("\"trace\":{\"id\":\"%s\"}"),
	    "012345678901234567890123456789012345678901234567890123456789012");
	env = assert_valid(buf);
	assert_int_not_equal(env.trace_id, -1);
	/* Whitespace between tokens changes nothing. */
	assert_valid(" { \"protocol\" : \"multiagent-1.0\" , \"role\":\"agent\","
	    "\t\"intent\" :\"plan\",\"task\":\"t\" , \"content\" : { \"type\" :"
	    " \"text\" } } ");
}

/* Values spelled with escapes mean the same as plain ones. */
static void
test_escaped_values(void **state)
{
	struct env	env;

	env = assert_valid("{\"protocol\":\"multiagent\\u002d1.0\","
	    "\"role\":\"\\u0061gent\",\"intent\":\"tool\\u002ecall\","
	    "\"task\":\"t\",\"content\":{\"type\":\"t\\u0065xt\"}}");
	assert_int_equal(env.intent, INTENT_TOOL_CALL);
	assert_int_equal(env.role, 0);
	assert_int_equal(env.ctype, CT_TEXT);
	env = assert_valid(WITH("\"priority\":\"h\\u0069gh\""));
	assert_int_equal(env.prio, PRIO_HIGH);
}

/* Priorities: numbers 0-4 or names; "urgent" means critical. */
static void
test_priorities(void **state)
{
	static const struct {
		const char	*json;
		int		 prio;
	} cases[] = {
		{ WITH("\"priority\":0"), PRIO_BATCH },
		{ WITH("\"priority\":1"), PRIO_LOW },
		{ WITH("\"priority\":2"), PRIO_NORMAL },
		{ WITH("\"priority\":3"), PRIO_HIGH },
		{ WITH("\"priority\":4"), PRIO_CRITICAL },
		{ WITH("\"priority\":4.0"), PRIO_CRITICAL },
		{ WITH("\"priority\":\"batch\""), PRIO_BATCH },
		{ WITH("\"priority\":\"low\""), PRIO_LOW },
		{ WITH("\"priority\":\"normal\""), PRIO_NORMAL },
		{ WITH("\"priority\":\"high\""), PRIO_HIGH },
		{ WITH("\"priority\":\"critical\""), PRIO_CRITICAL },
		{ WITH("\"priority\":\"urgent\""), PRIO_CRITICAL },
		{ MINIMAL, PRIO_NORMAL },
	};
	struct env	env;
	size_t		i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		env = assert_valid(cases[i].json);
		if (env.prio != cases[i].prio)
			fail_msg("%s: priority %d, expected %d", cases[i].json,
			    env.prio, cases[i].prio);
	}
	assert_string_equal(protocol_priority_name(PRIO_BATCH), "batch");
	assert_string_equal(protocol_priority_name(PRIO_LOW), "low");
	assert_string_equal(protocol_priority_name(PRIO_NORMAL), "normal");
	assert_string_equal(protocol_priority_name(PRIO_HIGH), "high");
	assert_string_equal(protocol_priority_name(PRIO_CRITICAL), "critical");
	assert_string_equal(protocol_priority_name(-1), "normal");
	assert_string_equal(protocol_priority_name(PRIO_COUNT), "normal");
}

/* An invalid envelope and the field path its error must name. */
struct bad {
	const char	*json;
	const char	*path;
};

static const struct bad bad_envelopes[] = {
	/* Required members. */
	{ "{\"role\":\"agent\",\"intent\":\"plan\",\"task\":\"t\","
	    "\"content\":{\"type\":\"text\"}}", "protocol" },
	{ "{\"protocol\":\"multiagent-1.0\",\"intent\":\"plan\",\"task\":\"t\","
	    "\"content\":{\"type\":\"text\"}}", "role" },
	{ "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\",\"task\":\"t\","
	    "\"content\":{\"type\":\"text\"}}", "intent" },
	{ "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\","
	    "\"intent\":\"plan\",\"content\":{\"type\":\"text\"}}", "task" },
	{ "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\","
	    "\"intent\":\"plan\",\"task\":\"t\"}", "content" },
	{ "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\","
	    "\"intent\":\"plan\",\"task\":\"t\",\"content\":{\"text\":\"x\"}}",
	    "content.type" },
	{ WITH("\"agent\":{\"name\":\"n\",\"model\":\"m\"}"), "agent.id" },
	{ WITH("\"agent\":{\"id\":\"i\",\"model\":\"m\"}"), "agent.name" },
	{ WITH("\"agent\":{\"id\":\"i\",\"name\":\"n\"}"), "agent.model" },
	{ WITH("\"confidence\":{\"rationale\":\"r\"}"), "confidence.score" },
	{ WITH("\"inputs\":{\"resources\":[{\"id\":\"x\"}]}"),
	    "inputs.resources[0].type" },
	{ WITH("\"inputs\":{\"resources\":[{\"type\":\"url\"}]}"),
	    "inputs.resources[0].id" },
	{ WITH("\"outputs\":{\"artifacts\":[{\"name\":\"n\"}]}"),
	    "outputs.artifacts[0].kind" },
	{ WITH("\"outputs\":{\"artifacts\":[{\"kind\":\"k\"}]}"),
	    "outputs.artifacts[0].name" },
	{ WITH("\"outputs\":{\"next_actions\":[{\"task\":\"x\"}]}"),
	    "outputs.next_actions[0].intent" },
	{ WITH("\"outputs\":{\"next_actions\":[{\"intent\":\"plan\"}]}"),
	    "outputs.next_actions[0].task" },
	/* Wrong types. */
	{ "{\"protocol\":1,\"role\":\"agent\",\"intent\":\"plan\",\"task\":\"t\","
	    "\"content\":{\"type\":\"text\"}}", "protocol" },
	{ "{\"protocol\":\"multiagent-1.0\",\"role\":[\"agent\"],"
	    "\"intent\":\"plan\",\"task\":\"t\",\"content\":{\"type\":\"text\"}}",
	    "role" },
	{ "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\",\"intent\":7,"
	    "\"task\":\"t\",\"content\":{\"type\":\"text\"}}", "intent" },
	{ "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\","
	    "\"intent\":\"plan\",\"task\":null,\"content\":{\"type\":\"text\"}}",
	    "task" },
	{ "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\","
	    "\"intent\":\"plan\",\"task\":\"t\",\"content\":\"hello\"}",
	    "content" },
	{ "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\","
	    "\"intent\":\"plan\",\"task\":\"t\",\"content\":{\"type\":1}}",
	    "content.type" },
	{ "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\","
	    "\"intent\":\"plan\",\"task\":\"t\",\"content\":{\"type\":\"text\","
	    "\"text\":42}}", "content.text" },
	{ WITH("\"agent\":\"planner\""), "agent" },
	{ WITH("\"agent\":{\"id\":1,\"name\":\"n\",\"model\":\"m\"}"),
	    "agent.id" },
	{ WITH("\"agent\":{\"id\":\"i\",\"name\":\"n\",\"model\":\"m\","
	    "\"version\":2}"), "agent.version" },
	{ WITH("\"timestamp\":1700000000"), "timestamp" },
	{ WITH("\"inputs\":[]"), "inputs" },
	{ WITH("\"inputs\":{\"context\":{}}"), "inputs.context" },
	{ WITH("\"inputs\":{\"resources\":{}}"), "inputs.resources" },
	{ WITH("\"inputs\":{\"resources\":[\"file\"]}"), "inputs.resources[0]" },
	{ WITH("\"inputs\":{\"resources\":[{\"type\":\"url\",\"id\":\"u\"},"
	    "{\"type\":\"file\",\"id\":\"f\",\"hint\":1}]}"),
	    "inputs.resources[1].hint" },
	{ WITH("\"inputs\":{\"resources\":[{\"type\":\"url\",\"id\":5}]}"),
	    "inputs.resources[0].id" },
	{ WITH("\"inputs\":{\"parameters\":[]}"), "inputs.parameters" },
	{ WITH("\"outputs\":\"none\""), "outputs" },
	{ WITH("\"outputs\":{\"artifacts\":{}}"), "outputs.artifacts" },
	{ WITH("\"outputs\":{\"artifacts\":[1]}"), "outputs.artifacts[0]" },
	{ WITH("\"outputs\":{\"artifacts\":[{\"kind\":\"k\",\"name\":\"n\","
	    "\"uri\":5}]}"), "outputs.artifacts[0].uri" },
	{ WITH("\"outputs\":{\"artifacts\":[{\"kind\":\"k\",\"name\":\"n\","
	    "\"uri\":{}}]}"), "outputs.artifacts[0].uri" },
	{ WITH("\"outputs\":{\"artifacts\":[{\"kind\":\"k\",\"name\":\"n\","
	    "\"inline\":[]}]}"), "outputs.artifacts[0].inline" },
	{ WITH("\"outputs\":{\"next_actions\":{}}"), "outputs.next_actions" },
	{ WITH("\"outputs\":{\"next_actions\":[{\"intent\":\"plan\","
	    "\"task\":\"a\"},\"b\"]}"), "outputs.next_actions[1]" },
	{ WITH("\"outputs\":{\"next_actions\":[{\"intent\":\"plan\","
	    "\"task\":\"a\",\"args\":[1]}]}"), "outputs.next_actions[0].args" },
	{ WITH("\"outputs\":{\"next_actions\":[{\"intent\":\"plan\","
	    "\"task\":\"a\",\"args\":\"x\"}]}"), "outputs.next_actions[0].args" },
	{ WITH("\"outputs\":{\"next_actions\":[{\"intent\":\"plan\","
	    "\"task\":7}]}"), "outputs.next_actions[0].task" },
	{ WITH("\"confidence\":\"high\""), "confidence" },
	{ WITH("\"confidence\":{\"score\":\"0.5\"}"), "confidence.score" },
	{ WITH("\"confidence\":{\"score\":null}"), "confidence.score" },
	{ WITH("\"confidence\":{\"score\":0.5,\"rationale\":1}"),
	    "confidence.rationale" },
	{ WITH("\"confidence\":{\"score\":0.5,\"risks\":\"x\"}"),
	    "confidence.risks" },
	{ WITH("\"confidence\":{\"score\":0.5,\"risks\":[\"a\",1]}"),
	    "confidence.risks[1]" },
	{ WITH("\"trace\":[]"), "trace" },
	{ WITH("\"trace\":{\"id\":5}"), "trace.id" },
	{ WITH("\"trace\":{\"parents\":\"msg_1\"}"), "trace.parents" },
	{ WITH("\"trace\":{\"parents\":[1]}"), "trace.parents[0]" },
	{ WITH("\"trace\":{\"parents\":[\"a\",2]}"), "trace.parents[1]" },
	{ WITH("\"trace\":{\"tags\":[true]}"), "trace.tags[0]" },
	{ WITH("\"trace\":{\"cost\":[]}"), "trace.cost" },
	{ WITH("\"trace\":{\"cost\":{\"input_tokens\":\"5\"}}"),
	    "trace.cost.input_tokens" },
	{ WITH("\"corral\":\"notice\""), "corral" },
	/* Enumerations. */
	{ "{\"protocol\":\"multiagent-2.0\",\"role\":\"agent\","
	    "\"intent\":\"plan\",\"task\":\"t\",\"content\":{\"type\":\"text\"}}",
	    "protocol" },
	{ "{\"protocol\":\"multiagent-1.0 \",\"role\":\"agent\","
	    "\"intent\":\"plan\",\"task\":\"t\",\"content\":{\"type\":\"text\"}}",
	    "protocol" },
	{ "{\"protocol\":\"multiagent-1.0\",\"role\":\"robot\","
	    "\"intent\":\"plan\",\"task\":\"t\",\"content\":{\"type\":\"text\"}}",
	    "role" },
	{ "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\","
	    "\"intent\":\"dance\",\"task\":\"t\",\"content\":{\"type\":\"text\"}}",
	    "intent" },
	{ "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\","
	    "\"intent\":\"Plan\",\"task\":\"t\",\"content\":{\"type\":\"text\"}}",
	    "intent" },
	{ "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\","
	    "\"intent\":\"tool\",\"task\":\"t\",\"content\":{\"type\":\"text\"}}",
	    "intent" },
	{ "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\","
	    "\"intent\":\"plan\",\"task\":\"t\",\"content\":{\"type\":\"html\"}}",
	    "content.type" },
	{ WITH("\"inputs\":{\"resources\":[{\"type\":\"http\",\"id\":\"x\"}]}"),
	    "inputs.resources[0].type" },
	{ WITH("\"outputs\":{\"next_actions\":[{\"intent\":\"plan\","
	    "\"task\":\"a\"},{\"intent\":\"dance\",\"task\":\"b\"}]}"),
	    "outputs.next_actions[1].intent" },
	/* Ranges. */
	{ WITH("\"confidence\":{\"score\":-0.1}"), "confidence.score" },
	{ WITH("\"confidence\":{\"score\":1.1}"), "confidence.score" },
	{ WITH("\"confidence\":{\"score\":1e300}"), "confidence.score" },
	{ WITH("\"timestamp\":\"2026-02-30T00:00:00Z\""), "timestamp" },
	{ WITH("\"timestamp\":\"2026-11-22T24:00:00Z\""), "timestamp" },
	{ WITH("\"timestamp\":\"2026-11-22T12:40:00\""), "timestamp" },
	{ WITH("\"timestamp\":\"\""), "timestamp" },
	{ WITH("\"trace\":{\"id\":\"\"}"), "trace.id" },
	{ WITH("\"trace\":{\"id\":\"0123456789012345678901234567890123456789"
	    "012345678901234567890123\"}"), "trace.id" },
	{ WITH("\"trace\":{\"cost\":{\"usd\":-0.01}}"), "trace.cost.usd" },
	{ WITH("\"trace\":{\"cost\":{\"output_tokens\":-1}}"),
	    "trace.cost.output_tokens" },
	{ WITH("\"priority\":\"medium\""), "priority" },
	{ WITH("\"priority\":\"URGENT\""), "priority" },
	{ WITH("\"priority\":5"), "priority" },
	{ WITH("\"priority\":-1"), "priority" },
	{ WITH("\"priority\":2.5"), "priority" },
	{ WITH("\"priority\":true"), "priority" },
	{ WITH("\"ttl_ms\":-1"), "ttl_ms" },
	{ WITH("\"ttl_ms\":\"5000\""), "ttl_ms" },
	{ WITH("\"inputs\":{\"parameters\":{\"ttl_ms\":-5}}"),
	    "inputs.parameters.ttl_ms" },
	{ WITH("\"inputs\":{\"parameters\":{\"ttl_ms\":null}}"),
	    "inputs.parameters.ttl_ms" },
};

/* Each broken rule is refused, with the field's path named in the message. */
static void
test_each_rule_refused(void **state)
{
	struct env		env;
	struct env_error	err;
	size_t			i;
	int			bad = 0;

	for (i = 0; i < sizeof bad_envelopes / sizeof bad_envelopes[0]; i++) {
		const struct bad *b = &bad_envelopes[i];

		memset(&err, 0x55, sizeof err);
		if (check(b->json, strlen(b->json), &env, &err) == 0) {
			print_message("accepted: %s\n", b->json);
			bad++;
			continue;
		}
		if (strcmp(err.path, b->path) != 0 ||
		    strstr(err.msg, b->path) == NULL ||
		    err.code == NULL ||
		    strcmp(err.code, "invalid_envelope") != 0) {
			print_message("%s\n  path \"%s\" (want \"%s\"), msg "
			    "\"%s\"\n", b->json, err.path, b->path, err.msg);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

/* An envelope, and the verdict envelope_check must give it, word for word. */
struct verdict {
	const char	*json;
	const char	*path;		/* NULL: valid */
	const char	*msg;
};

/* Check each case's verdict, path and message; count the mismatches. */
static int
check_verdicts(const struct verdict *v, size_t n)
{
	struct env		env;
	struct env_error	err;
	size_t			i;
	int			rc, bad = 0;

	for (i = 0; i < n; i++) {
		rc = check(v[i].json, strlen(v[i].json), &env, &err);
		if (v[i].path == NULL ? rc == 0 : rc != 0 &&
		    strcmp(err.path, v[i].path) == 0 &&
		    strcmp(err.msg, v[i].msg) == 0)
			continue;
		print_message("%s\n  got %s \"%s\" \"%s\", want %s \"%s\" \"%s\"\n",
		    v[i].json, rc == 0 ? "valid" : "invalid", rc == 0 ? "" :
		    err.path, rc == 0 ? "" : err.msg, v[i].path == NULL ?
		    "valid" : "invalid", v[i].path ? v[i].path : "",
		    v[i].msg ? v[i].msg : "");
		bad++;
	}
	return bad;
}

/*
 * Member names are told apart by their length and bytes: a name one byte
 * short or long of a known one, or of its length with other bytes, is an
 * unknown member (passed on, not checked), at the top and inside agent,
 * content, confidence, trace and trace.cost; the known spellings are
 * checked, escaped or not.
 */
static void
test_member_names_near_known_ones(void **state)
{
	static const struct verdict v[] = {
		/* Unknown near misses at the top: accepted as they are. */
		{ WITH("\"rol\":5,\"roles\":5,\"rolE\":5,\"tusk\":5,\"tasks\":5"),
		    NULL, NULL },
		{ WITH("\"agents\":5,\"agenT\":5,\"trac\":5,\"tracE\":5,"
		    "\"traces\":5"), NULL, NULL },
		{ WITH("\"intend\":5,\"inputz\":5,\"corrals\":5,\"ttl_mz\":5,"
		    "\"ttl_m\":5,\"inten\":5"), NULL, NULL },
		{ WITH("\"contenT\":5,\"outputz\":5,\"sessio\":5,\"jsonrp\":5,"
		    "\"contents\":5"), NULL, NULL },
		{ WITH("\"protocoL\":5,\"priorit\":5,\"priorityy\":5,"
		    "\"timestamP\":5,\"timestam\":5,\"confidencE\":5,"
		    "\"confidences\":5"), NULL, NULL },
		/* The known ones of each length are checked. */
		{ WITH("\"ttl_ms\":-1"), "ttl_ms",
		    "ttl_ms must be a number of milliseconds, 0 or more" },
		{ WITH("\"corral\":5"), "corral",
		    "corral must be an object, not a number" },
		{ WITH("\"inputs\":5"), "inputs",
		    "inputs must be an object, not a number" },
		{ WITH("\"outputs\":5"), "outputs",
		    "outputs must be an object, not a number" },
		{ WITH("\"trace\":5"), "trace",
		    "trace must be an object, not a number" },
		{ WITH("\"agent\":5"), "agent",
		    "agent must be an object, not a number" },
		{ WITH("\"priority\":9"), "priority", "priority must be 0 to 4 "
		    "or one of batch, low, normal, high, critical" },
		{ WITH("\"timestamp\":\"2026-11-27T05:00:00\""), "timestamp",
		    "timestamp must be an RFC 3339 date-time such as "
		    "2025-10-10T12:34:56Z" },
		{ WITH("\"confidence\":[]"), "confidence",
		    "confidence must be an object, not an array" },
		{ "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\","
		    "\"intent\":\"plan\",\"t\\u0061sk\":5,\"content\":{"
		    "\"type\":\"text\"}}", "task",
		    "task must be a string, not a number" },
		/* Inside agent: the three required ones by name only. */
		{ WITH("\"agent\":{\"ids\":\"i\",\"name\":\"n\",\"model\":\"m\"}"),
		    "agent.id", "agent.id is required" },
		{ WITH("\"agent\":{\"id\":\"i\",\"nam\":\"n\",\"model\":\"m\"}"),
		    "agent.name", "agent.name is required" },
		{ WITH("\"agent\":{\"id\":\"i\",\"name\":\"n\",\"modeL\":\"m\"}"),
		    "agent.model", "agent.model is required" },
		{ WITH("\"agent\":{\"id\":\"i\",\"name\":\"n\",\"model\":\"m\","
		    "\"versions\":1,\"versioN\":1}"), NULL, NULL },
		{ WITH("\"agent\":{\"id\":\"i\",\"name\":\"n\",\"model\":\"m\","
		    "\"version\":1}"), "agent.version",
		    "agent.version must be a string, not a number" },
		{ WITH("\"agent\":{\"id\":1,\"name\":\"n\"}"), "agent.id",
		    "agent.id must be a string, not a number" },
		{ WITH("\"agent\":{\"model\":\"m\",\"id\":\"i\",\"name\":[]}"),
		    "agent.name", "agent.name must be a string, not an array" },
		{ WITH("\"agent\":{\"\\u0069d\":\"i\",\"name\":\"n\","
		    "\"model\":\"m\"}"), NULL, NULL },
		/* Inside content. */
		{ "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\","
		    "\"intent\":\"plan\",\"task\":\"t\",\"content\":{\"typo\":"
		    "\"text\",\"texts\":1}}", "content.type", "content.type is "
		    "required (text, code, json, tool_result or error)" },
		{ WITH("\"x\":1") , NULL, NULL },
		{ "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\","
		    "\"intent\":\"plan\",\"task\":\"t\",\"content\":{\"type\":"
		    "\"text\",\"text\":1}}", "content.text",
		    "content.text must be a string, not a number" },
		{ "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\","
		    "\"intent\":\"plan\",\"task\":\"t\",\"content\":{\"text\":"
		    "\"x\",\"type\":\"code\",\"tex\":1,\"textt\":1}}", NULL, NULL },
		/* Inside confidence. */
		{ WITH("\"confidence\":{\"scores\":1,\"risk\":1,\"rationalE\":1}"),
		    "confidence.score",
		    "confidence.score is required when confidence is given" },
		{ WITH("\"confidence\":{\"score\":1,\"risks\":\"r\"}"),
		    "confidence.risks",
		    "confidence.risks must be an array, not a string" },
		{ WITH("\"confidence\":{\"score\":1,\"risks\":[\"a\",2]}"),
		    "confidence.risks[1]", "confidence.risks[1] must be a string" },
		{ WITH("\"confidence\":{\"rationale\":1,\"score\":1}"),
		    "confidence.rationale",
		    "confidence.rationale must be a string, not a number" },
		/* Inside trace and trace.cost. */
		{ WITH("\"trace\":{\"ids\":1,\"parent\":1,\"tag\":1,\"costs\":1,"
		    "\"tagz\":1}"), NULL, NULL },
		{ WITH("\"trace\":{\"id\":\"\"}"), "trace.id",
		    "trace.id must be 1 to 63 bytes long" },
		{ WITH("\"trace\":{\"parents\":[\"a\",1]}"), "trace.parents[1]",
		    "trace.parents[1] must be a string" },
		{ WITH("\"trace\":{\"tags\":{}}"), "trace.tags",
		    "trace.tags must be an array, not an object" },
		{ WITH("\"trace\":{\"cost\":[]}"), "trace.cost",
		    "trace.cost must be an object, not an array" },
		{ WITH("\"trace\":{\"cost\":{\"usd\":-1}}"), "trace.cost.usd",
		    "trace.cost.usd must be a number, 0 or more" },
		{ WITH("\"trace\":{\"cost\":{\"output_tokens\":\"x\"}}"),
		    "trace.cost.output_tokens",
		    "trace.cost.output_tokens must be a number, 0 or more" },
		{ WITH("\"trace\":{\"cost\":{\"input_tokens\":-1}}"),
		    "trace.cost.input_tokens",
		    "trace.cost.input_tokens must be a number, 0 or more" },
		{ WITH("\"trace\":{\"cost\":{\"usdd\":-1,\"us\":-1,"
		    "\"input_tokenz\":-1,\"output_tokenss\":-1}}"), NULL, NULL },
	};

	assert_int_equal(check_verdicts(v, sizeof v / sizeof v[0]), 0);
}

/*
 * The values of role, content.type and protocol, and confidence.score's
 * short decimals: the names of each length, escaped or not, and the
 * names just off them; the score read to the same double.
 */
static void
test_enumerated_values(void **state)
{
#define ENV_ROLE(r)	"{\"protocol\":\"multiagent-1.0\",\"role\":" r "," \
	"\"intent\":\"plan\",\"task\":\"t\",\"content\":{\"type\":\"text\"}}"
#define ENV_CTYPE(c)	"{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\"," \
	"\"intent\":\"plan\",\"task\":\"t\",\"content\":{\"type\":" c "}}"
#define ENV_PROTO(p)	"{\"protocol\":" p ",\"role\":\"agent\"," \
	"\"intent\":\"plan\",\"task\":\"t\",\"content\":{\"type\":\"text\"}}"
	static const char role_msg[] =
	    "role must be one of agent, user, system, tool";
	static const char ctype_msg[] =
	    "content.type must be one of text, code, json, tool_result, error";
	static const char proto_msg[] =
	    "protocol must be \"multiagent-1.0\"";
	static const char score_msg[] =
	    "confidence.score must be between 0 and 1";
	static const struct verdict v[] = {
		{ ENV_ROLE("\"agents\""), "role", role_msg },
		{ ENV_ROLE("\"Agent\""), "role", role_msg },
		{ ENV_ROLE("\"use\""), "role", role_msg },
		{ ENV_ROLE("\"tools\""), "role", role_msg },
		{ ENV_ROLE("\"systen\""), "role", role_msg },
		{ ENV_ROLE("\"\""), "role", role_msg },
		{ ENV_ROLE("\"user\\u0020\""), "role", role_msg },
		{ ENV_CTYPE("\"tex\""), "content.type", ctype_msg },
		{ ENV_CTYPE("\"texts\""), "content.type", ctype_msg },
		{ ENV_CTYPE("\"jsob\""), "content.type", ctype_msg },
		{ ENV_CTYPE("\"tool_resulT\""), "content.type", ctype_msg },
		{ ENV_CTYPE("\"errors\""), "content.type", ctype_msg },
		{ ENV_CTYPE("\"cod\""), "content.type", ctype_msg },
		{ ENV_PROTO("\"multiagent-1.1\""), "protocol", proto_msg },
		{ ENV_PROTO("\"multiagent-1.0 \""), "protocol", proto_msg },
		{ ENV_PROTO("\"multiagent-1\""), "protocol", proto_msg },
		{ ENV_PROTO("\"\\u006dultiagent-1.0\""), NULL, NULL },
		{ WITH("\"confidence\":{\"score\":1.1}"), "confidence.score",
		    score_msg },
		{ WITH("\"confidence\":{\"score\":9.9}"), "confidence.score",
		    score_msg },
		{ WITH("\"confidence\":{\"score\":-0.1}"), "confidence.score",
		    score_msg },
	};
	static const struct {
		const char	*json;
		int		 role;
	} roles[] = {
		{ ENV_ROLE("\"agent\""), 0 }, { ENV_ROLE("\"user\""), 1 },
		{ ENV_ROLE("\"system\""), 2 }, { ENV_ROLE("\"tool\""), 3 },
		{ ENV_ROLE("\"\\u0074ool\""), 3 },
	};
	static const struct {
		const char	*json;
		int		 ctype;
	} ctypes[] = {
		{ ENV_CTYPE("\"text\""), CT_TEXT },
		{ ENV_CTYPE("\"code\""), CT_CODE },
		{ ENV_CTYPE("\"json\""), CT_JSON },
		{ ENV_CTYPE("\"tool_result\""), CT_TOOL_RESULT },
		{ ENV_CTYPE("\"error\""), CT_ERROR },
		{ ENV_CTYPE("\"tool\\u005fresult\""), CT_TOOL_RESULT },
	};
	static const struct {
		const char	*json;
		double		 score;
	} scores[] = {
		{ WITH("\"confidence\":{\"score\":0.9}"), 0.9 },
		{ WITH("\"confidence\":{\"score\":0.3}"), 0.3 },
		{ WITH("\"confidence\":{\"score\":0.7}"), 0.7 },
		{ WITH("\"confidence\":{\"score\":1.0}"), 1.0 },
		{ WITH("\"confidence\":{\"score\":0.0}"), 0.0 },
		{ WITH("\"confidence\":{\"score\":0}"), 0.0 },
		{ WITH("\"confidence\":{\"score\":1}"), 1.0 },
		{ WITH("\"confidence\":{\"score\":0.95}"), 0.95 },
		{ WITH("\"confidence\":{\"score\":0.1e1}"), 1.0 },
		{ WITH("\"confidence\":{\"score\":-0.0}"), 0.0 },
	};
	struct env	env;
	size_t		i;

	assert_int_equal(check_verdicts(v, sizeof v / sizeof v[0]), 0);
	for (i = 0; i < sizeof roles / sizeof roles[0]; i++)
		assert_int_equal(assert_valid(roles[i].json).role,
		    roles[i].role);
	for (i = 0; i < sizeof ctypes / sizeof ctypes[0]; i++)
		assert_int_equal(assert_valid(ctypes[i].json).ctype,
		    ctypes[i].ctype);
	for (i = 0; i < sizeof scores / sizeof scores[0]; i++) {
		env = assert_valid(scores[i].json);
		assert_true(env.has_score);
		if (env.score != scores[i].score)
			fail_msg("%s: score %.17g, want %.17g", scores[i].json,
			    env.score, scores[i].score);
	}
	/* Every d.d is the double strtod reads, and past 1.0 refused. */
	for (i = 0; i < 100; i++) {
		struct env_error	err;
		char			buf[160], num[8];

		snprintf(num, sizeof num, "%zu.%zu", i / 10, i % 10);
		snprintf(buf, sizeof buf, WITH("\"confidence\":{\"score\":%s}"),
		    num);
		if (i > 10) {
			assert_int_equal(check(buf, strlen(buf), &env, &err),
			    -1);
			assert_string_equal(err.msg, score_msg);
			continue;
		}
		env = assert_valid(buf);
		assert_true(env.score == strtod(num, NULL));
	}
#undef ENV_ROLE
#undef ENV_CTYPE
#undef ENV_PROTO
}

/* A JSON array is not an envelope. */
static void
test_array_is_not_an_envelope(void **state)
{
	struct env		env;
	struct env_error	err;

	assert_int_equal(check("[" MINIMAL "]", strlen("[" MINIMAL "]"), &env,
	    &err), -1);
	assert_string_equal(err.code, "invalid_envelope");
	assert_non_null(strstr(err.msg, "object"));
}

/*
 * A member name spelled with escapes is the same member (jansson and every
 * agent decode it): it must be checked like the plain spelling, or
 * refused, never let through unchecked.
 */
static void
test_escaped_member_names_not_unchecked(void **state)
{
	static const char valid[] =
		"{\"\\u0070rotocol\":\"multiagent-1.0\",\"role\":\"agent\","
		    "\"intent\":\"plan\",\"task\":\"t\",\"content\":{\"type\":"
		    "\"text\"}}";
	static const char *const cases[] = {
		WITH("\"\\u0074race\":{\"id\":\"\"}"),
		WITH("\"\\u0074race\":[]"),
		WITH("\"confiden\\u0063e\":{\"score\":7}"),
		WITH("\"\\u006futputs\":{\"next_actions\":[{\"intent\":"
		    "\"dance\",\"task\":\"x\"}]}"),
		WITH("\"\\u0061gent\":5"),
		WITH("\"\\u0069nputs\":{\"parameters\":{\"ttl_ms\":-1}}"),
		WITH("\"\\u0070riority\":\"whenever\""),
		WITH("\"ttl\\u005fms\":-3"),
		WITH("\"\\u0063orral\":\"x\""),
	};
	struct env		env;
	struct env_error	err;
	size_t			i;
	int			bad = 0;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		if (check(cases[i], strlen(cases[i]), &env, &err) == 0) {
			print_message("invalid member let through: %s\n",
			    cases[i]);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
	/* Checked like the plain spelling: a valid envelope stays valid. */
	assert_int_equal(check(valid, strlen(valid), &env, &err), 0);
	assert_int_equal(env.intent, INTENT_PLAN);
}

/* Return 1 if small is a subsequence of big: only insertions were made. */
static int
only_insertions(const char *small, size_t slen, const char *big, size_t blen)
{
	size_t	i = 0, j = 0;

	while (i < slen && j < blen) {
		if (small[i] == big[j])
			i++;
		j++;
	}
	return i == slen;
}

/* Count the occurrences of needle in the n bytes at hay. */
static size_t
count_in(const char *hay, size_t n, const char *needle)
{
	size_t	c = 0, nl = strlen(needle), i;

	for (i = 0; i + nl <= n; i++)
		if (memcmp(hay + i, needle, nl) == 0)
			c++;
	return c;
}

/*
 * Check envelope_fill on in: the result is a valid envelope holding the
 * original members unchanged plus exactly the missing ones.
 */
static void
check_fill(const char *in, const char *id, const char *parent)
{
	struct env		 env, env2;
	struct env_error	 err;
	json_t			*jin, *jout, *tin, *tout, *v;
	size_t			 len = strlen(in), outlen;
	char			*out, *quoted;
	int			 had_ts, had_trace, had_id, had_parents;

	if (check(in, len, &env, &err) != 0)
		fail_msg("test envelope invalid: %s", err.msg);
	had_ts = env.timestamp != -1;
	had_trace = env.trace != -1;
	had_id = env.trace_id != -1;
	had_parents = env.parents != -1;
	out = envelope_fill(js, in, len, &env, id, parent, &outlen);
	if (had_ts && (had_id || id == NULL) && (had_parents || parent == NULL)) {
		assert_null(out);
		return;
	}
	assert_non_null(out);
	assert_int_equal(strlen(out), outlen);
	if (jscan_run(js, out, outlen) != 0)
		fail_msg("fill output is not valid JSON (%s at %zu): %s",
		    js->err, js->err_off, out);
	if (envelope_check(js, out, outlen, &env2, &err) != 0)
		fail_msg("fill output is not a valid envelope (%s): %s",
		    err.msg, out);
	assert_true(only_insertions(in, len, out, outlen));

	jin = jparse(in, len);
	jout = jparse(out, outlen);
	/* The timestamp: kept, or a fresh valid one. */
	v = json_object_get(jout, "timestamp");
	assert_true(json_is_string(v));
	if (had_ts)
		assert_true(json_equal(v, json_object_get(jin, "timestamp")));
	else {
		assert_true(util_rfc3339_valid(json_string_value(v),
		    json_string_length(v)));
		json_object_del(jout, "timestamp");
	}
	tout = json_object_get(jout, "trace");
	tin = json_object_get(jin, "trace");
	if (id != NULL || parent != NULL || had_trace)
		assert_true(json_is_object(tout));
	if (tout != NULL) {
		v = json_object_get(tout, "id");
		if (had_id)
			assert_true(json_equal(v, json_object_get(tin, "id")));
		else if (id != NULL) {
			assert_string_equal(json_string_value(v), id);
			v = json_string(id);
			quoted = json_dumps(v, JSON_ENCODE_ANY);
			json_decref(v);
			assert_int_equal(count_in(out, outlen, quoted),
			    count_in(in, len, quoted) + 1);
			free(quoted);
			json_object_del(tout, "id");
		} else
			assert_null(v);
		v = json_object_get(tout, "parents");
		if (had_parents)
			assert_true(json_equal(v, json_object_get(tin,
			    "parents")));
		else if (parent != NULL) {
			assert_int_equal(json_array_size(v), 1);
			assert_string_equal(json_string_value(json_array_get(v,
			    0)), parent);
			json_object_del(tout, "parents");
		} else
			assert_null(v);
		if (!had_trace) {
			assert_int_equal(json_object_size(tout), 0);
			json_object_del(jout, "trace");
		}
	}
	/* Take away what was filled in: what remains is the input. */
	if (!json_equal(jin, jout))
		fail_msg("fill changed other members:\n in: %s\nout: %s", in,
		    out);
	json_decref(jin);
	json_decref(jout);
	free(out);
}

/* envelope_fill adds trace.id, trace.parents and timestamp when missing. */
static void
test_fill(void **state)
{
	/* Nothing of it there. */
	check_fill(MINIMAL, "run-1", "run-0");
	check_fill(MINIMAL, "run-1", NULL);
	check_fill(MINIMAL, NULL, "run-0");
	check_fill(MINIMAL, NULL, NULL);
	/* A trace with other members. */
	check_fill(WITH("\"timestamp\":\"2026-11-22T12:40:00Z\","
	    "\"trace\":{\"tags\":[\"a\"],\"cost\":{\"usd\":0.5}}"), "run-2",
	    "run-1");
	check_fill(WITH("\"trace\":{\"tags\":[\"a\"]}"), "run-2", NULL);
	check_fill(WITH("\"trace\":{\"tags\":[\"a\"]}"), NULL, "run-1");
	/* An empty trace, with and without spaces. */
	check_fill(WITH("\"trace\":{}"), "run-3", "run-2");
	check_fill(WITH("\"trace\":{}"), "run-3", NULL);
	check_fill(WITH("\"trace\":{}"), NULL, "run-2");
	check_fill(WITH("\"trace\": { }"), "run-3", "run-2");
	check_fill(WITH("\"trace\":{ \t}"), "run-3", NULL);
	/* Part of it there already. */
	check_fill(WITH("\"trace\":{\"id\":\"mine\"}"), "run-4", "run-3");
	check_fill(WITH("\"trace\":{\"parents\":[\"p\"]}"), "run-4", "run-3");
	check_fill(WITH("\"trace\":{\"id\":\"mine\",\"parents\":[]}"), "run-4",
	    "run-3");
	check_fill(WITH("\"trace\":{\"id\":\"mine\",\"parents\":[\"p\"]},"
	    "\"timestamp\":\"2026-11-22T12:40:00Z\""), "run-4", "run-3");
	check_fill(WITH("\"timestamp\":\"2026-11-22T12:40:00Z\","
	    "\"trace\":{\"id\":\"mine\"}"), NULL, NULL);
	/* Whitespace around and inside the envelope. */
	check_fill("  { \"protocol\" : \"multiagent-1.0\", \"role\" : \"agent\" ,"
	    " \"intent\":\"plan\", \"task\":\"t\", \"content\":{\"type\":\"text\"}"
	    "  }  ", "run-5", "run-4");
	check_fill("{\"protocol\":\"multiagent-1.0\",\"trace\" : { \"tags\" : [ ] "
	    "} ,\"role\":\"agent\",\"intent\":\"plan\",\"task\":\"t\","
	    "\"content\":{\"type\":\"text\"}}", "run-5", "run-4");
	/* Ids that need escaping. */
	check_fill(MINIMAL, "a\"b\\c", "p\"q");
	/* Seed 000's examples. */
	check_fill(example_planner, "run-6", "run-5");
	check_fill(example_decomposer, "run-7", NULL);
	check_fill(example_executor, "run-8", "run-7");
}

/*
 * A trace spelled with escapes in its name is the trace: filling must not
 * add a second one, which would make the line invalid JSON.
 */
static void
test_fill_with_escaped_trace_name(void **state)
{
	static const char *const cases[] = {
		WITH("\"\\u0074race\":{\"tags\":[\"x\"]}"),
		WITH("\"\\u0074race\":{\"id\":\"mine\",\"parents\":[\"p\"]}"),
		WITH("\"tim\\u0065stamp\":\"2026-11-22T12:40:00Z\""),
	};
	struct env		 env;
	struct env_error	 err;
	char			*out;
	size_t			 i, outlen;
	int			 bad = 0;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		if (check(cases[i], strlen(cases[i]), &env, &err) != 0)
			continue;	/* refusing it is fine too */
		out = envelope_fill(js, cases[i], strlen(cases[i]), &env,
		    "run-9", "run-8", &outlen);
		if (out == NULL)
			continue;
		if (jscan_run(js, out, outlen) != 0) {
			print_message("fill made invalid JSON (%s): %s\n",
			    js->err, out);
			bad++;
		}
		free(out);
	}
	assert_int_equal(bad, 0);
}

/* Remove the named members from a jansson object. */
static void
del_members(json_t *o, const char *a, const char *b)
{
	json_object_del(o, a);
	if (b != NULL)
		json_object_del(o, b);
}

/*
 * envelope_reflect: intent reflect, a new trace.id, parents [the reply],
 * and everything else (content, proposals, tags, cost) kept for the critic.
 */
static void
check_reflect(const char *in)
{
	struct env		 env;
	struct env_error	 err;
	json_t			*jin, *jout, *tin, *tout, *p;
	size_t			 len = strlen(in), outlen;
	char			*out;

	if (check(in, len, &env, &err) != 0)
		fail_msg("test envelope invalid: %s", err.msg);
	out = envelope_reflect(js, in, len, &env, "run-20", "reply-7", "plan", 2,
	    &outlen);
	assert_non_null(out);
	assert_int_equal(strlen(out), outlen);
	if (jscan_run(js, out, outlen) != 0)
		fail_msg("reflect output is not valid JSON (%s): %s", js->err,
		    out);
	if (envelope_check(js, out, outlen, &env, &err) != 0)
		fail_msg("reflect output invalid (%s): %s", err.msg, out);
	assert_int_equal(env.intent, INTENT_REFLECT);
	jin = jparse(in, len);
	jout = jparse(out, outlen);
	assert_string_equal(json_string_value(json_object_get(jout, "intent")),
	    "reflect");
	tout = json_object_get(jout, "trace");
	assert_string_equal(json_string_value(json_object_get(tout, "id")),
	    "run-20");
	p = json_object_get(tout, "parents");
	assert_int_equal(json_array_size(p), 1);
	assert_string_equal(json_string_value(json_array_get(p, 0)), "reply-7");
	tin = json_object_get(jin, "trace");
	if (tin != NULL) {
		/* Tags, cost and anything else in the trace are kept. */
		del_members(tin, "id", "parents");
		del_members(tout, "id", "parents");
		if (!json_equal(tin, tout))
			fail_msg("reflect changed the trace: %s", out);
	}
	/* corral tells the critic what it reflects on, and nothing else. */
	p = json_pack("{s:{s:s, s:s, s:i}}", "reflect", "of", "reply-7",
	    "intent", "plan", "round", 2);
	if (!json_equal(json_object_get(jout, "corral"), p))
		fail_msg("reflect's corral member is wrong: %s", out);
	json_decref(p);
	del_members(jin, "intent", "trace");
	del_members(jout, "intent", "trace");
	del_members(jin, "corral", NULL);
	del_members(jout, "corral", NULL);
	if (!json_equal(jin, jout))
		fail_msg("reflect changed other members:\n in: %s\nout: %s", in,
		    out);
	json_decref(jin);
	json_decref(jout);
	free(out);
}

/* Reflection keeps the weak reply whole, under a new identity. */
static void
test_reflect(void **state)
{
	check_reflect(WITH("\"confidence\":{\"score\":0.2},\"trace\":{\"id\":"
	    "\"reply-7\",\"parents\":[\"req-1\"],\"tags\":[\"t1\",\"t2\"],"
	    "\"cost\":{\"input_tokens\":10,\"usd\":0.01}},\"outputs\":"
	    "{\"next_actions\":[{\"intent\":\"execute\",\"task\":\"go\"}]}"));
	check_reflect(WITH("\"confidence\":{\"score\":0.1}"));
	check_reflect(WITH("\"trace\":{}"));
	check_reflect(WITH("\"trace\":{\"tags\":[\"only\"]}"));
	check_reflect(WITH("\"trace\" : { \"id\" : \"reply-7\" , \"x\" : 1 }"));
	check_reflect(WITH("\"trace\":{\"\\u0069d\":\"reply-7\",\"p\\u0061rents\""
	    ":[\"q\"]}"));
	check_reflect(example_executor);
	check_reflect(example_planner);
}

/*
 * envelope_action: a proposed next action becomes a request with the
 * action's intent and task, its args as parameters and the reply's text
 * as context.
 */
static void
test_action(void **state)
{
	const char		*in = WITH("\"outputs\":{\"next_actions\":["
	    "{\"intent\":\"execute\",\"task\":\"Run \\\"x\\\"\",\"args\":"
	    "{\"n\":1,\"deep\":{\"k\":[true]}}},{\"intent\":\"summarize\","
	    "\"task\":\"Sum \\u00e9\"}]}");
	const char		*reply = "{\"protocol\":\"multiagent-1.0\","
	    "\"role\":\"agent\",\"intent\":\"plan\",\"task\":\"t\","
	    "\"content\":{\"type\":\"text\",\"text\":\"ctx \\\"q\\\"\\n\"},"
	    "\"outputs\":{\"next_actions\":[{\"intent\":\"analyze\","
	    "\"task\":\"a\"}]}}";
	struct env		 env, aenv;
	struct env_error	 err;
	json_t			*j, *args;
	char			*out;
	size_t			 outlen;
	int			 act, ctx;

	/* With args, no context. */
	assert_int_equal(check(in, strlen(in), &env, &err), 0);
	act = jscan_first(js, env.next_actions);
	out = envelope_action(js, in, act, "run-30", "reply-9", NULL, 0,
	    &outlen);
	assert_int_equal(strlen(out), outlen);
	assert_int_equal(check(out, outlen, &aenv, &err), 0);
	assert_int_equal(aenv.intent, INTENT_EXECUTE);
	j = jparse(out, outlen);
	assert_string_equal(json_string_value(json_object_get(j, "task")),
	    "Run \"x\"");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j,
	    "content"), "text")), "Run \"x\"");
	args = json_pack("{s:i, s:{s:[b]}}", "n", 1, "deep", "k", 1);
	assert_true(json_equal(json_object_get(json_object_get(j, "inputs"),
	    "parameters"), args));
	json_decref(args);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j,
	    "inputs"), "context")), "");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j,
	    "trace"), "id")), "run-30");
	assert_string_equal(json_string_value(json_array_get(json_object_get(
	    json_object_get(j, "trace"), "parents"), 0)), "reply-9");
	assert_true(util_rfc3339_valid(json_string_value(json_object_get(j,
	    "timestamp")), json_string_length(json_object_get(j, "timestamp"))));
	json_decref(j);
	free(out);

	/* No args: empty parameters; escapes in the task survive. */
	assert_int_equal(check(in, strlen(in), &env, &err), 0);
	act = jscan_next(js, env.next_actions, jscan_first(js,
	    env.next_actions));
	out = envelope_action(js, in, act, "run-31", "reply-9", NULL, 0,
	    &outlen);
	assert_int_equal(check(out, outlen, &aenv, &err), 0);
	assert_int_equal(aenv.intent, INTENT_SUMMARIZE);
	j = jparse(out, outlen);
	assert_string_equal(json_string_value(json_object_get(j, "task")),
	    "Sum \xc3\xa9");
	assert_int_equal(json_object_size(json_object_get(json_object_get(j,
	    "inputs"), "parameters")), 0);
	json_decref(j);
	free(out);

	/* The reply's content.text becomes the context, escapes and all. */
	assert_int_equal(check(reply, strlen(reply), &env, &err), 0);
	ctx = jscan_get(js, reply, env.content, "text");
	act = jscan_first(js, env.next_actions);
	out = envelope_action(js, reply, act, "run-32", "reply-10",
	    reply + js->tok[ctx].off, js->tok[ctx].len, &outlen);
	assert_int_equal(check(out, outlen, &aenv, &err), 0);
	assert_int_equal(aenv.intent, INTENT_ANALYZE);
	j = jparse(out, outlen);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j,
	    "inputs"), "context")), "ctx \"q\"\n");
	json_decref(j);
	free(out);
}

/* Check envelope_mark: the result has one "corral" member, set to member. */
static void
check_mark(const char *in, const char *member)
{
	json_t	*jin, *jout, *want;
	char	*out;
	size_t	 outlen, len = strlen(in);

	if (jscan_run(js, in, len) != 0)
		fail_msg("test input invalid: %s", in);
	out = envelope_mark(js, in, len, member, &outlen);
	assert_int_equal(strlen(out), outlen);
	if (jscan_run(js, out, outlen) != 0)
		fail_msg("mark output is not valid JSON (%s): %s", js->err, out);
	jin = jparse(in, len);
	jout = jparse(out, outlen);
	want = jparse(member, strlen(member));
	assert_true(json_equal(json_object_get(jout, "corral"), want));
	json_object_del(jin, "corral");
	json_object_del(jout, "corral");
	if (!json_equal(jin, jout))
		fail_msg("mark changed other members: %s", out);
	json_decref(jin);
	json_decref(jout);
	json_decref(want);
	free(out);
}

/* envelope_mark adds our member, or replaces the one already there. */
static void
test_mark(void **state)
{
	check_mark(MINIMAL, "{\"kind\":\"notice\"}");
	check_mark(example_planner, "{\"kind\":\"task\",\"parent\":\"run-1\"}");
	check_mark(WITH("\"corral\":{\"retry_count\":1}"),
	    "{\"kind\":\"child_result\",\"child\":\"w-1\",\"ok\":true}");
	check_mark("{\"corral\":{\"kind\":\"task\"}," BASE_MEMBERS "}",
	    "{\"kind\":\"message\",\"from\":\"a\"}");
	check_mark(WITH("\"\\u0063orral\":{\"kind\":\"task\"}"),
	    "{\"kind\":\"notice\"}");
	check_mark("{\"a\":1 }  ", "{\"kind\":\"notice\"}");
}

/* envelope_error builds the error envelope docs/protocol.md describes. */
static void
test_error_envelope(void **state)
{
	struct env		 env;
	struct env_error	 err;
	json_t			*j, *data, *trace;
	char			*out;
	size_t			 outlen;
	const char		*msg = "line 3: \"intent\" \\ bad\n\xc3\xa9";

	out = envelope_error("invalid_envelope", "REJECTED",
	    "outputs.next_actions[1].intent", msg, "msg_7", NULL, &outlen);
	assert_int_equal(strlen(out), outlen);
	assert_null(memchr(out, '\n', outlen));
	assert_int_equal(check(out, outlen, &env, &err), 0);
	assert_int_equal(env.ctype, CT_ERROR);
	assert_int_equal(env.role, 2);
	assert_int_equal(env.intent, INTENT_ROUTE);
	j = jparse(out, outlen);
	assert_string_equal(json_string_value(json_object_get(j, "protocol")),
	    "multiagent-1.0");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j,
	    "agent"), "id")), "corral");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j,
	    "content"), "type")), "error");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j,
	    "content"), "text")), msg);
	data = json_object_get(json_object_get(j, "content"), "data");
	assert_string_equal(json_string_value(json_object_get(data, "code")),
	    "invalid_envelope");
	assert_string_equal(json_string_value(json_object_get(data,
	    "category")), "REJECTED");
	assert_string_equal(json_string_value(json_object_get(data, "message")),
	    msg);
	assert_string_equal(json_string_value(json_object_get(data, "path")),
	    "outputs.next_actions[1].intent");
	assert_true(json_is_false(json_object_get(data, "retryable")));
	trace = json_object_get(j, "trace");
	assert_true(json_string_length(json_object_get(trace, "id")) > 0);
	assert_int_equal(json_array_size(json_object_get(trace, "parents")), 1);
	assert_string_equal(json_string_value(json_array_get(json_object_get(
	    trace, "parents"), 0)), "msg_7");
	json_decref(j);
	free(out);

	/* Without a path or a parent, neither member appears. */
	out = envelope_error("timeout", "TIMEOUT", NULL, "took too long", NULL,
	    NULL, &outlen);
	assert_int_equal(check(out, outlen, &env, &err), 0);
	j = jparse(out, outlen);
	data = json_object_get(json_object_get(j, "content"), "data");
	assert_null(json_object_get(data, "path"));
	assert_true(json_is_true(json_object_get(data, "retryable")));
	assert_null(json_object_get(json_object_get(j, "trace"), "parents"));
	json_decref(j);
	free(out);

	out = envelope_error("agent_lost", "UNAVAILABLE", "", "gone", "", NULL,
	    &outlen);
	j = jparse(out, outlen);
	data = json_object_get(json_object_get(j, "content"), "data");
	assert_null(json_object_get(data, "path"));
	assert_true(json_is_true(json_object_get(data, "retryable")));
	assert_null(json_object_get(json_object_get(j, "trace"), "parents"));
	json_decref(j);
	free(out);

	out = envelope_error("shutdown", "INTERNAL", NULL, "bye", NULL, NULL,
	    &outlen);
	j = jparse(out, outlen);
	data = json_object_get(json_object_get(j, "content"), "data");
	assert_true(json_is_false(json_object_get(data, "retryable")));
	json_decref(j);
	free(out);
}

/*
 * envelope_goal builds corral run's first request from the goal text, an
 * --input object (an envelope, or its inputs) and --param pairs, and
 * refuses what no input could be.
 */
static void
test_goal_envelope(void **state)
{
	struct env		 env;
	struct env_error	 err;
	json_t			*j, *in, *pm;
	char			*out, why[256];
	size_t			 outlen;
	const char		*goal = "Find \"cheap\" flights\nto Z\xc3\xbcrich";

	out = envelope_goal(goal, NULL, NULL, "plan", &outlen, why,
	    sizeof why);
	assert_non_null(out);
	assert_int_equal(check(out, outlen, &env, &err), 0);
	assert_int_equal(env.intent, INTENT_PLAN);
	assert_int_equal(env.role, 1);
	assert_int_equal(env.trace_id, -1);	/* the engine's to fill */
	j = jparse(out, outlen);
	assert_string_equal(json_string_value(json_object_get(j, "task")), goal);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j,
	    "content"), "text")), goal);
	json_decref(j);
	free(out);

	out = envelope_goal("do it", NULL, NULL, "tool.call", &outlen, why,
	    sizeof why);
	assert_int_equal(check(out, outlen, &env, &err), 0);
	assert_int_equal(env.intent, INTENT_TOOL_CALL);
	free(out);

	/* Inputs and parameters: --param wins over the file's. */
	in = json_pack("{s:s, s:{s:i, s:s}}", "context", "ctx", "parameters",
	    "n", 1, "city", "Bern");
	pm = json_pack("{s:s, s:b}", "city", "Z\xc3\xbcrich", "dry", 1);
	out = envelope_goal("go", in, pm, "plan", &outlen, why, sizeof why);
	assert_non_null(out);
	j = jparse(out, outlen);
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    j, "inputs"), "context")), "ctx");
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    json_object_get(j, "inputs"), "parameters"), "city")),
	    "Z\xc3\xbcrich");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
	    json_object_get(j, "inputs"), "parameters"), "n")), 1);
	assert_true(json_is_true(json_object_get(json_object_get(
	    json_object_get(j, "inputs"), "parameters"), "dry")));
	json_decref(j);
	free(out);
	json_decref(in);

	/* A whole envelope: its intent and trace.id stay; params merge. */
	in = json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:{s:s}}",
	    "protocol", "multiagent-1.0", "role", "user", "intent", "analyze",
	    "task", "t", "content", "type", "text", "text", "x", "trace", "id",
	    "mine-1");
	out = envelope_goal(NULL, in, pm, "plan", &outlen, why, sizeof why);
	assert_non_null(out);
	assert_int_equal(check(out, outlen, &env, &err), 0);
	assert_int_equal(env.intent, INTENT_ANALYZE);
	j = jparse(out, outlen);
	assert_true(json_is_true(json_object_get(json_object_get(
	    json_object_get(j, "inputs"), "parameters"), "dry")));
	json_decref(j);
	free(out);
	/* ... and then --goal would say it twice. */
	assert_null(envelope_goal("go", in, NULL, "plan", &outlen, why,
	    sizeof why));
	assert_non_null(strstr(why, "give one"));
	json_decref(in);
	json_decref(pm);

	/* An envelope that is not one is refused with the reason. */
	in = json_pack("{s:s, s:s, s:s}", "protocol", "multiagent-1.0",
	    "intent", "dance", "task", "t");
	assert_null(envelope_goal(NULL, in, NULL, "plan", &outlen, why,
	    sizeof why));
	assert_non_null(strstr(why, "intent"));
	json_decref(in);
	/* No goal at all. */
	assert_null(envelope_goal(NULL, NULL, NULL, "plan", &outlen, why,
	    sizeof why));
	assert_non_null(strstr(why, "--goal"));
	/* A goal that is not UTF-8 cannot become an envelope. */
	assert_null(envelope_goal("bad \xff byte", NULL, NULL, "plan", &outlen,
	    why, sizeof why));
}

/* corral's JSON prints reals with 15 digits: 0.9 stays 0.9. */
static void
test_reals_print_short(void **state)
{
	static const struct {
		double		 v;
		const char	*text;
	} cases[] = {
		{ 0.9, "[0.9]" }, { 0.78, "[0.78]" }, { 0.1 + 0.2, "[0.3]" },
		{ 0.0021, "[0.0021]" }, { 1.5, "[1.5]" },
	};
	json_t	*j;
	char	*s;
	size_t	 i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		j = json_pack("[f]", cases[i].v);
		s = json_dumps(j, CORRAL_JSON_FLAGS);
		assert_string_equal(s, cases[i].text);
		free(s);
		json_decref(j);
	}
}

/* trace.id and trace.parents lookups, escaped spellings included. */
static void
test_trace_lookups(void **state)
{
	const char	*s = WITH("\"trace\":{\"id\":\"m\\u0073g_1\","
	    "\"parents\":[\"a\",\"r\\u0065q-2\"]}");
	struct env	 env;
	char		 id[CORRAL_ID_MAX], tiny[4];

	env = assert_valid(s);
	/* Its length, unescaped. */
	assert_int_equal(envelope_trace_id(js, s, &env, id, sizeof id), 5);
	assert_string_equal(id, "msg_1");
	assert_int_equal(envelope_trace_id(js, s, &env, tiny, sizeof tiny), -1);
	assert_true(envelope_has_parent(js, s, &env, "req-2"));
	assert_true(envelope_has_parent(js, s, &env, "a"));
	assert_false(envelope_has_parent(js, s, &env, "req"));
	assert_false(envelope_has_parent(js, s, &env, "msg_1"));
	env = assert_valid(MINIMAL);
	assert_int_equal(envelope_trace_id(js, MINIMAL, &env, id, sizeof id),
	    -1);
	assert_false(envelope_has_parent(js, MINIMAL, &env, "a"));
}

/*
 * Making a line honest: the corral member dropped, agent.id made the
 * sender's; envelope_is_own, which lets the engine skip envelope_own,
 * says "nothing to change" exactly when envelope_own changes nothing,
 * and never for a line it would change.
 */
static void
test_own(void **state)
{
	static const struct {
		const char	*line;
		const char	*sender;
		int		 forged;	/* what envelope_own finds */
		int		 own;		/* envelope_is_own */
	} cases[] = {
	    { MINIMAL, NULL, 0, 1 },
	    { MINIMAL, "echo-1", 0, 1 },
	    { WITH("\"agent\":{\"id\":\"echo-1\",\"name\":\"e\","
		"\"model\":\"m\"}"), "echo-1", 0, 1 },
	    { WITH("\"agent\":{\"id\":\"echo-1\",\"name\":\"e\","
		"\"model\":\"m\"}"), NULL, 0, 1 },
	    { WITH("\"agent\":{\"id\":\"echo-2\",\"name\":\"e\","
		"\"model\":\"m\"}"), "echo-1", FORGED_SENDER, 0 },
	    { WITH("\"agent\":{\"id\":\"echo-10\",\"name\":\"e\","
		"\"model\":\"m\"}"), "echo-1", FORGED_SENDER, 0 },
	    { WITH("\"agent\":{\"id\":\"echo\",\"name\":\"e\","
		"\"model\":\"m\"}"), "echo-1", FORGED_SENDER, 0 },
	    { WITH("\"agent\":{\"id\":\"\",\"name\":\"e\","
		"\"model\":\"m\"}"), "echo-1", FORGED_SENDER, 0 },
	    /* Escaped, yet the same id: envelope_own decides (no change). */
	    { WITH("\"agent\":{\"id\":\"echo\\u002d1\",\"name\":\"e\","
		"\"model\":\"m\"}"), "echo-1", 0, 0 },
	    { WITH("\"corral\":{\"kind\":\"task\"}"), NULL, FORGED_CORRAL,
		0 },
	    { WITH("\"corral\":{},\"agent\":{\"id\":\"x\",\"name\":"
		"\"e\",\"model\":\"m\"}"), "echo-1",
		FORGED_CORRAL | FORGED_SENDER, 0 },
	};
	struct env	 env;
	size_t		 i, len, olen;
	char		*out;
	int		 forged;

	(void)state;
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		len = strlen(cases[i].line);
		env = assert_valid(cases[i].line);
		out = envelope_own(js, cases[i].line, len, &env,
		    cases[i].sender, &forged, &olen);
		if (forged != cases[i].forged)
			fail_msg("case %zu: forged %d, not %d", i, forged,
			    cases[i].forged);
		assert_int_equal(out == NULL, forged == 0);
		assert_int_equal(envelope_is_own(js, cases[i].line, &env,
		    cases[i].sender, cases[i].sender != NULL ?
		    strlen(cases[i].sender) : 0), cases[i].own);
		if (cases[i].own)
			assert_null(out);
		free(out);
	}
}

/* Intent names, as routes and envelopes spell them. */
static void
test_intent_names(void **state)
{
	static const char *const names[INTENT_COUNT] = { "plan", "decompose",
	    "execute", "route", "retrieve", "analyze", "summarize", "reflect",
	    "finalize", "tool.call" };
	int	i;

	for (i = 0; i < INTENT_COUNT; i++) {
		assert_int_equal(protocol_intent(names[i], strlen(names[i])), i);
		assert_string_equal(protocol_intent_name(i), names[i]);
	}
	assert_int_equal(protocol_intent("Plan", 4), -1);
	assert_int_equal(protocol_intent("plan", 3), -1);
	assert_int_equal(protocol_intent("planx", 5), -1);
	assert_int_equal(protocol_intent("tool", 4), -1);
	assert_int_equal(protocol_intent("*", 1), -1);
	assert_string_equal(protocol_intent_name(ROUTE_FALLBACK), "*");
}

/*
 * A workflow's own intents follow the ten, validate in envelopes and
 * next_actions, are listed in refusals, and go with the next workflow.
 */
static void
test_workflow_intents(void **state)
{
	static const char *const sa = "{\"protocol\":\"multiagent-1.0\","
	    "\"role\":\"agent\",\"intent\":\"review\",\"task\":\"t\","
	    "\"content\":{\"type\":\"text\",\"text\":\"x\"},\"outputs\":"
	    "{\"next_actions\":[{\"intent\":\"translate\",\"task\":\"t\"}]}}";
	char		*names[] = { "review", "translate" };
	struct env	 env;
	struct env_error err;
	char		 list[INTENT_MAX * (INTENT_NAME_MAX + 2)];

	assert_int_equal(check(sa, strlen(sa), &env, &err), -1);
	protocol_set_intents(names, 2);
	assert_int_equal(protocol_intent_count(), INTENT_COUNT + 2);
	assert_int_equal(protocol_intent("review", 6), INTENT_COUNT);
	assert_int_equal(protocol_intent("translate", 9), INTENT_COUNT + 1);
	assert_string_equal(protocol_intent_name(INTENT_COUNT + 1),
	    "translate");
	assert_string_equal(protocol_intent_name(ROUTE_FALLBACK), "*");
	assert_int_equal(check(sa, strlen(sa), &env, &err), 0);
	assert_int_equal(env.intent, INTENT_COUNT);
	protocol_intent_list(list, sizeof list);
	assert_non_null(strstr(list, "tool.call, review, translate"));
	assert_null(protocol_intent_check("re-view_2.x"));
	assert_non_null(protocol_intent_check("plan"));
	assert_non_null(protocol_intent_check("Review"));
	assert_non_null(protocol_intent_check("2x"));
	assert_non_null(protocol_intent_check("a b"));
	assert_non_null(protocol_intent_check(""));
	assert_non_null(protocol_intent_check(
	    "abcdefghijklmnopqrstuvwxyzabcdefg"));	/* 33 bytes */
	protocol_set_intents(NULL, 0);
	assert_int_equal(protocol_intent("review", 6), -1);
	assert_int_equal(check(sa, strlen(sa), &env, &err), -1);
}

/*
 * Scan s with memo jm on js and check it with em beside jm, and scan
 * and check it alone on plain: return 1 unless the answers differ.
 */
static int
memo_check_agrees(struct jscan *mjs, struct jscan *plain,
    struct jscan_memo *jm, struct env_memo *em, const char *s, size_t n)
{
	struct env		 a, b;
	struct env_error	 ea, eb;
	const char		*what;
	int			 rm, rp, ra = 0, rb = 0;

	rm = jscan_run_memo(mjs, s, n, jm);
	rp = jscan_run(plain, s, n);
	if (rm != rp) {
		what = "scan";
		goto differ;
	}
	if (rm != 0)
		return 1;
	ra = envelope_check_memo(mjs, s, n, &a, &ea, em, jm);

	rb = envelope_check(plain, s, n, &b, &eb);
	if ((what = env_diff(ra, &a, &ea, rb, &b, &eb)) == NULL)
		return 1;
differ:
	print_message("with a memo, %s differs (%s / %s): \"%.*s\"\n", what,
	    rm == 0 && ra != 0 ? ea.msg : "-", rm == 0 && rb != 0 ? eb.msg :
	    "-", (int)(n < 300 ? n : 300), s);
	return 0;
}

/*
 * A stream's memo of envelope_check's findings, beside its scanner's:
 * the members the scan took from the scanner's memo are not checked
 * again, and the answer (verdict, error, every finding) is what a check
 * of the line alone gives, whatever byte differs (each line's then each
 * of its bytes changed to each of a few, or dropped, or the line cut
 * there), refused lines and members in any order included, with a
 * scanner of another depth sharing the memos, and the workflow's
 * intents changed between two lines that begin alike.
 */
static void
test_memo_findings(void **state)
{
	static const char *const lines[] = {
	    /* The bench's input, an echo agent's reply, a reflection's. */
	    "{\"protocol\":\"multiagent-1.0\",\"role\":\"user\",\"timestamp\":"
	    "\"2026-11-22T12:40:00Z\",\"intent\":\"execute\",\"task\":\"bench\","
	    "\"trace\":{\"id\":\"b-000000000012\"},\"content\":{\"type\":\"text\","
	    "\"text\":\"#000000000012 1764246232123456 xxxxxxxx\"}}",
	    "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\",\"agent\":"
	    "{\"id\":\"echo.1\",\"name\":\"echo\",\"model\":\"echo\"},"
	    "\"timestamp\":\"2026-11-27T11:23:52Z\",\"intent\":\"execute\","
	    "\"task\":\"echo\",\"content\":{\"type\":\"text\",\"text\":"
	    "\"#1 a\"},\"confidence\":{\"score\":0.9},\"trace\":{\"parents\":"
	    "[\"b-1\"],\"id\":\"echo.1-1\"}}",
	    "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\",\"agent\":"
	    "{\"id\":\"critic\",\"name\":\"echo\",\"model\":\"echo\",\"version\":"
	    "\"2\"},\"timestamp\":\"2026-11-27T11:23:52.5+01:00\",\"intent\":"
	    "\"reflect\",\"task\":\"echo\",\"content\":{\"type\":\"json\"},"
	    "\"confidence\":{\"score\":0.3,\"rationale\":\"r\",\"risks\":[\"x\"]},"
	    "\"trace\":{\"parents\":[\"e-1\"],\"id\":\"c-1\",\"tags\":[\"t\"]},"
	    "\"corral\":{\"reflect\":{\"of\":\"e-1\",\"round\":1}}}",
	    example_protocol_md,
	    /* Every member that finds something, early. */
	    "{\"ttl_ms\":5000,\"priority\":\"high\",\"confidence\":{\"score\":1,"
	    "\"risks\":[]},\"trace\":{\"id\":\"x\",\"parents\":[\"p\"],\"cost\":"
	    "{\"input_tokens\":1,\"output_tokens\":2,\"usd\":0.5}},\"inputs\":"
	    "{\"parameters\":{\"ttl_ms\":7000}},\"session\":\"s\",\"corral\":"
	    "{\"kind\":\"task\"},\"protocol\":\"multiagent-1.0\",\"role\":"
	    "\"tool\",\"intent\":\"plan\",\"task\":\"t\",\"content\":{\"type\":"
	    "\"code\",\"text\":\"x\"},\"priority2\":3}",
	    "{\"priority\":3,\"outputs\":{\"artifacts\":[{\"path\":\"a\","
	    "\"operation\":\"create\"}],\"next_actions\":[{\"intent\":\"plan\","
	    "\"task\":\"t\",\"args\":{}}]},\"jsonrpc\":\"2.0\",\"protocol\":"
	    "\"multiagent-1.0\",\"role\":\"system\",\"intent\":\"route\","
	    "\"task\":\"t\",\"content\":{\"type\":\"error\"}}",
	    /* Escapes in values, and in a key. */
	    "{\"protocol\":\"multiagent-1.0\",\"role\":\"\\u0075ser\","
	    "\"timestamp\":\"2026-11-27T11:23:52.123+01:00\",\"intent\":"
	    "\"ex\\u0065cute\",\"task\":\"a\\\"b\",\"content\":{\"type\":"
	    "\"text\"}}",
	    "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\",\"\\u0074ask\":"
	    "\"t\",\"intent\":\"plan\",\"content\":{\"type\":\"tool_result\"}}",
	    /* Refused: a bad role, members missing, a bad agent. */
	    "{\"protocol\":\"multiagent-1.0\",\"role\":\"robot\",\"intent\":"
	    "\"plan\",\"task\":\"t\",\"content\":{\"type\":\"text\"}}",
	    "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\",\"agent\":"
	    "{\"id\":\"a\",\"name\":\"n\"},\"timestamp\":\"2026-11-27T11:23:52Z\","
	    "\"task\":\"t\"}",
	    "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\",\"agent\":"
	    "{\"id\":\"a\",\"name\":\"n\",\"model\":1},\"intent\":\"plan\","
	    "\"task\":\"t\",\"content\":{\"type\":\"text\"}}",
	    /* Spaced, over lines. */
	    example_planner };
	static const char subst[] = { 'x', '"', '\\', ',', ':', '}', ']', '{',
	    ' ', '0', '1', 'Z', '\x80' };
	/* Two lines that begin alike, with a workflow's intent. */
	static const char review[] = "{\"protocol\":\"multiagent-1.0\","
	    "\"role\":\"agent\",\"intent\":\"review\",\"task\":\"t\","
	    "\"content\":{\"type\":\"text\",\"text\":\"1\"}}";
	static const char review2[] = "{\"protocol\":\"multiagent-1.0\","
	    "\"role\":\"agent\",\"intent\":\"review\",\"task\":\"t\","
	    "\"content\":{\"type\":\"text\",\"text\":\"2\"}}";
	/*
	 * The scanner's memo keeps the first (the second resumes at task),
	 * whose findings past task are not the second's.
	 */
	static const char kept[] = "{\"protocol\":\"multiagent-1.0\","
	    "\"role\":\"agent\",\"intent\":\"review\",\"task\":\"a\","
	    "\"content\":{\"type\":\"text\"},\"z\":1}";
	static const char kept2[] = "{\"protocol\":\"multiagent-1.0\","
	    "\"role\":\"agent\",\"intent\":\"review\",\"task\":\"b\","
	    "\"content\":{\"type\":\"code\"},\"z\":1}";
	char		*names[] = { "review" }, *names2[] = { "x", "review" };
	struct jscan		*mjs = jscan_create(TAPE_LEVEL);
	struct jscan		*plain = jscan_create(TAPE_LEVEL);
	struct jscan		*shallow = jscan_create(1), *plain1 = jscan_create(1);
	struct jscan_memo	*jm = jscan_memo_create();
	struct env_memo		*em = envelope_memo_create();
	char			 b[2048];
	size_t			 i, k, c, n;
	int			 failures = 0;

	(void)state;
	for (i = 0; i < sizeof lines / sizeof lines[0]; i++) {
		n = strlen(lines[i]);
		assert_true(n < sizeof b);
		for (k = 0; k <= n; k++) {
			/* The line kept, then the line changed at k. */
			failures += !memo_check_agrees(mjs, plain, jm, em,
			    lines[i], n);
			failures += !memo_check_agrees(mjs, plain, jm, em,
			    lines[i], k);
			for (c = 0; k < n && c < sizeof subst; c++) {
				memcpy(b, lines[i], n);
				b[k] = subst[c];
				failures += !memo_check_agrees(mjs, plain, jm,
				    em, b, n);
				failures += !memo_check_agrees(mjs, plain, jm,
				    em, b, n);
				failures += !memo_check_agrees(mjs, plain, jm,
				    em, lines[i], n);
			}
			if (k < n) {
				memcpy(b, lines[i], k);
				memcpy(b + k, lines[i] + k + 1, n - k - 1);
				failures += !memo_check_agrees(mjs, plain, jm,
				    em, b, n - 1);
			}
			/* A scanner of another depth between. */
			failures += !memo_check_agrees(shallow, plain1, jm, em,
			    lines[i], n);
			/* Another line of another shape between. */
			if (k % 16 == 0)
				failures += !memo_check_agrees(mjs, plain, jm,
				    em, lines[(i + 1) % (sizeof lines /
				    sizeof lines[0])], strlen(lines[(i + 1) %
				    (sizeof lines / sizeof lines[0])]));
		}
	}
	/* The workflow's intents set, changed and gone between two lines. */
	protocol_set_intents(names, 1);
	failures += !memo_check_agrees(mjs, plain, jm, em, review,
	    sizeof review - 1);
	failures += !memo_check_agrees(mjs, plain, jm, em, review2,
	    sizeof review2 - 1);
	protocol_set_intents(names2, 2);
	failures += !memo_check_agrees(mjs, plain, jm, em, review,
	    sizeof review - 1);
	protocol_set_intents(NULL, 0);
	failures += !memo_check_agrees(mjs, plain, jm, em, review2,
	    sizeof review2 - 1);
	protocol_set_intents(names, 1);
	failures += !memo_check_agrees(mjs, plain, jm, em, "{}", 2);
	failures += !memo_check_agrees(mjs, plain, jm, em, kept,
	    sizeof kept - 1);
	protocol_set_intents(names2, 2);
	failures += !memo_check_agrees(mjs, plain, jm, em, kept2,
	    sizeof kept2 - 1);
	failures += !memo_check_agrees(mjs, plain, jm, em, kept,
	    sizeof kept - 1);
	protocol_set_intents(NULL, 0);
	envelope_memo_free(em);
	jscan_memo_free(jm);
	jscan_free(mjs);
	jscan_free(plain);
	jscan_free(shallow);
	jscan_free(plain1);
	assert_int_equal(failures, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_canonical_examples),
		cmocka_unit_test(test_workflow_intents),
		cmocka_unit_test(test_memo_findings),
		cmocka_unit_test(test_unknown_members_accepted),
		cmocka_unit_test(test_optional_and_edge_values),
		cmocka_unit_test(test_escaped_values),
		cmocka_unit_test(test_priorities),
		cmocka_unit_test(test_each_rule_refused),
		cmocka_unit_test(test_array_is_not_an_envelope),
		cmocka_unit_test(test_member_names_near_known_ones),
		cmocka_unit_test(test_enumerated_values),
		cmocka_unit_test(test_escaped_member_names_not_unchecked),
		cmocka_unit_test(test_fill),
		cmocka_unit_test(test_fill_with_escaped_trace_name),
		cmocka_unit_test(test_reflect),
		cmocka_unit_test(test_action),
		cmocka_unit_test(test_mark),
		cmocka_unit_test(test_error_envelope),
		cmocka_unit_test(test_goal_envelope),
		cmocka_unit_test(test_reals_print_short),
		cmocka_unit_test(test_trace_lookups),
		cmocka_unit_test(test_own),
		cmocka_unit_test(test_intent_names),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
