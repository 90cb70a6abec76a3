/*
 * Unit tests of dialects (src/dialect*.c): the table and its names, what
 * multiagent-1.0 makes of a line (no JSON, a control frame, an invalid
 * envelope naming itself, a valid one; next_actions' ttl_ms checked in an
 * agent's replies only), and docs/protocol.md's table of dialects held to
 * the table.
 */

#define CORRAL_WHITEBOX	/* frees a stack agent's memo by hand */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "corral.h"
#include "dialect-int.h"

#define ENVELOPE(extra) "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\"," \
	"\"intent\":\"analyze\",\"task\":\"t\",\"content\":{\"type\":\"text\"}" \
	extra "}"

/* Decode line as agent a (NULL: serve's stdin) would have it read. */
static int
decode(struct agent *a, const char *line, struct dialect_frame *f)
{
	f->js = jscan_take();
	f->made = NULL;
	f->id = NULL;
	dialect_multiagent_decode(a, NULL, f, line, strlen(line));
	return f->type;
}

/* Give the frame's scanner back. */
static void
done(struct dialect_frame *f)
{
	free(f->made);
	jscan_give(f->js);
}

/*
 * The default is multiagent-1.0; map, bus and agentmessage are known;
 * other names are not.
 */
static void
test_find(void **state)
{
	assert_string_equal(dialect_find(NULL)->name, "multiagent-1.0");
	assert_ptr_equal(dialect_find("multiagent-1.0"), dialect_find(NULL));
	assert_string_equal(dialect_find("map")->name, "map");
	assert_non_null(dialect_find("bus"));
	assert_non_null(dialect_find("agentmessage"));
	assert_null(dialect_find("smoke-signals"));
	assert_null(dialect_find(""));
	assert_string_equal(dialect_table_name(0), "multiagent-1.0");
	assert_string_equal(dialect_table_name(1), "map");
	assert_string_equal(dialect_table_name(2), "bus");
	assert_string_equal(dialect_table_name(3), "agentmessage");
	assert_string_equal(dialect_table_name(4), "adr-007");
	assert_null(dialect_table_name(5));
	/* Every dialect reads lines; map writes its own way. */
	assert_non_null(dialect_find("map")->decode);
	assert_non_null(dialect_find("map")->encode);
	assert_null(dialect_find(NULL)->encode);
}

/* A line that is not JSON is no frame, with the scanner's reason. */
static void
test_garbage(void **state)
{
	struct dialect_frame	f;

	assert_int_equal(decode(NULL, "hello world", &f), DF_GARBAGE);
	assert_string_equal(f.err.code, "invalid_json");
	assert_string_equal(f.err.path, "");
	assert_true(strncmp(f.err.msg, "invalid JSON at byte 0: ", 24) == 0);
	assert_int_equal(f.len, 11);
	done(&f);
}

/*
 * A top-level "jsonrpc" member makes a control frame, whatever else; so
 * does an array, or a line that begins with '[' (a batch).
 */
static void
test_control(void **state)
{
	struct dialect_frame	f;
	const char		*l = "{\"jsonrpc\":\"2.0\",\"method\":\"ping\","
	    "\"id\":1,\"intent\":\"analyze\"}";

	assert_int_equal(decode(NULL, l, &f), DF_CONTROL);
	assert_ptr_equal(f.line, l);
	assert_int_equal(f.len, strlen(l));
	done(&f);
	/* A valid envelope with the member is one too, spelt any way. */
	assert_int_equal(decode(NULL, "{\"protocol\":\"multiagent-1.0\","
	    "\"role\":\"user\",\"intent\":\"execute\",\"task\":\"t\","
	    "\"content\":{\"type\":\"text\",\"text\":\"hi\"},"
	    "\"json\\u0072pc\":\"2.0\"}", &f), DF_CONTROL);
	done(&f);
	/* Deeper down it is no control frame. */
	assert_int_equal(decode(NULL, "{\"x\":{\"jsonrpc\":\"2.0\"}}", &f),
	    DF_INVALID);
	done(&f);
	/* An array is a JSON-RPC batch (an envelope is an object), and a
	 * line that begins with '[' is one even when it is not JSON. */
	assert_int_equal(decode(NULL, "[1,2]", &f), DF_CONTROL);
	done(&f);
	assert_int_equal(decode(NULL, " [{\"jsonrpc\":", &f), DF_BADRPC);
	assert_true(strncmp(f.err.msg, "invalid JSON at byte ", 21) == 0);
	done(&f);
	assert_int_equal(decode(NULL, "{\"jsonrpc\":", &f), DF_GARBAGE);
	done(&f);
}

/* An invalid envelope says what is wrong and the id it gave itself. */
static void
test_invalid(void **state)
{
	struct dialect_frame	f;

	assert_int_equal(decode(NULL, "{\"protocol\":\"multiagent-1.0\","
	    "\"trace\":{\"id\":\"bad-1\"}}", &f), DF_INVALID);
	assert_string_equal(f.err.code, "invalid_envelope");
	assert_non_null(f.id);
	assert_string_equal(f.id, "bad-1");
	done(&f);
}

/* A valid envelope carries its fields and its tape to the engine. */
static void
test_envelope(void **state)
{
	struct dialect_frame	f;

	assert_int_equal(decode(NULL, ENVELOPE(",\"trace\":{\"id\":\"e-1\"}"),
	    &f), DF_ENVELOPE);
	assert_int_equal(f.env.intent, INTENT_ANALYZE);
	assert_int_not_equal(f.env.trace_id, -1);
	assert_int_equal(f.js->tok[0].type, JT_OBJECT);
	done(&f);
}

/*
 * next_actions' ttl_ms sits below the tape: an agent's reply with a bad
 * one is invalid; on serve's stdin (requests, never followed) it is not
 * looked at.
 */
static void
test_ttls(void **state)
{
	struct agent		a;
	struct dialect_frame	f;
	const char		*l = ENVELOPE(",\"outputs\":{\"next_actions\":["
	    "{\"intent\":\"plan\",\"task\":\"x\",\"args\":{\"ttl_ms\":-1}}]}");

	memset(&a, 0, sizeof a);
	assert_int_equal(decode(&a, l, &f), DF_INVALID);
	assert_string_equal(f.err.path, "outputs.next_actions[0].args.ttl_ms");
	done(&f);
	/* The agent's memo of its lines, which dialect_forget would free. */
	dialect_memo_free(&a);
	assert_int_equal(decode(NULL, l, &f), DF_ENVELOPE);
	done(&f);
}

/*
 * An agent's memo of its envelopes (1.9 KiB) is made at its first
 * envelope: one that only shakes hands, answers pings or writes stray
 * lines, as an idle agent does, holds none; the envelopes after it read
 * the same with it.
 */
static void
test_memo_first_envelope(void **state)
{
	struct agent		a;
	struct dialect_frame	f;

	memset(&a, 0, sizeof a);
	assert_int_equal(decode(&a, "{\"jsonrpc\":\"2.0\",\"id\":1,"
	    "\"method\":\"map/connect\",\"params\":{}}", &f), DF_CONTROL);
	done(&f);
	assert_int_equal(decode(&a, "{\"jsonrpc\":\"2.0\",\"id\":\"p\","
	    "\"result\":{}}", &f), DF_CONTROL);
	done(&f);
	assert_int_equal(decode(&a, "hello", &f), DF_GARBAGE);
	done(&f);
	assert_int_equal(decode(&a, "{\"protocol\":1}", &f), DF_INVALID);
	done(&f);
	assert_null(a.dialect.memo);
	assert_int_equal(decode(&a, ENVELOPE(""), &f), DF_ENVELOPE);
	done(&f);
	assert_non_null(a.dialect.memo);
	assert_int_equal(decode(&a, ENVELOPE(",\"trace\":{\"id\":\"e-1\"}"),
	    &f), DF_ENVELOPE);
	assert_int_equal(f.env.intent, INTENT_ANALYZE);
	assert_int_not_equal(f.env.trace_id, -1);
	done(&f);
	dialect_memo_free(&a);
}

/*
 * At most DIALECT_MEMOS memos live: the stream that sent an envelope
 * least recently gives its memo up to the next that needs one, and every
 * line still reads the same, memo or not, taken over or not.
 */
static void
test_memo_bound(void **state)
{
	struct agent		*a;
	struct dialect_frame	 f;
	const char		*l[2] = { ENVELOPE(""),
	    ENVELOPE(",\"trace\":{\"id\":\"e-1\"}") };
	size_t			 i, n = DIALECT_MEMOS + 2;

	a = xcalloc(n, sizeof *a);
	for (i = 0; i < n; i++) {
		assert_int_equal(decode(&a[i], l[i & 1], &f), DF_ENVELOPE);
		done(&f);
		assert_non_null(a[i].dialect.memo);
	}
	/* The first two sent theirs least recently: theirs went on. */
	assert_null(a[0].dialect.memo);
	assert_null(a[1].dialect.memo);
	for (i = 2; i < n; i++)
		assert_non_null(a[i].dialect.memo);
	/* Agent 2 reads again: it is now the most recent, 3 the least. */
	assert_int_equal(decode(&a[2], l[1], &f), DF_ENVELOPE);
	assert_int_not_equal(f.env.trace_id, -1);
	done(&f);
	assert_int_equal(decode(&a[0], l[1], &f), DF_ENVELOPE);
	assert_int_not_equal(f.env.trace_id, -1);
	done(&f);
	assert_non_null(a[0].dialect.memo);
	assert_non_null(a[2].dialect.memo);
	assert_null(a[3].dialect.memo);
	/* A line read with another stream's memo reads as alone. */
	assert_int_equal(decode(&a[0], l[0], &f), DF_ENVELOPE);
	assert_int_equal(f.env.trace_id, -1);
	assert_int_equal(f.env.intent, INTENT_ANALYZE);
	done(&f);
	for (i = 0; i < n; i++)
		dialect_memo_free(&a[i]);
	free(a);
}

/*
 * docs/protocol.md's table under "## Dialects" names exactly the
 * dialects of the table, in its order.
 */
static void
test_docs_match_table(void **state)
{
	const char	*data = getenv("CORRAL_TEST_DATA");
	char		 path[1024], line[2048], name[64];
	size_t		 n = 0;
	int		 in = 0;
	FILE		*f;

	if (data == NULL)
		skip();
	snprintf(path, sizeof path, "%s/../docs/protocol.md", data);
	if ((f = fopen(path, "r")) == NULL)
		fail_msg("%s: cannot open", path);
	while (fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, "## ", 3) == 0)
			in = strcmp(line, "## Dialects\n") == 0;
		if (!in || sscanf(line, "| `%63[^`]` |", name) != 1)
			continue;
		if (dialect_table_name(n) == NULL ||
		    strcmp(dialect_table_name(n), name) != 0)
			fail_msg("protocol.md names dialect %s where the table "
			    "has %s", name, dialect_table_name(n) != NULL ?
			    dialect_table_name(n) : "no more");
		n++;
	}
	fclose(f);
	if (dialect_table_name(n) != NULL)
		fail_msg("protocol.md's table of dialects lacks %s",
		    dialect_table_name(n));
	assert_true(n >= 2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_control),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_envelope),
		cmocka_unit_test(test_ttls),
		cmocka_unit_test(test_memo_first_envelope),
		cmocka_unit_test(test_memo_bound),
		cmocka_unit_test(test_docs_match_table),
	};
	int	rc;

	rc = cmocka_run_group_tests(tests, NULL, NULL);
	jscan_drain();
	return rc;
}
