/*
 * Unit tests of the audit log (src/auditlog.c).
 *
 * What is held: every line is one valid JSON object whatever bytes the
 * agent, id and string members carry (quotes, backslashes, control
 * characters, invalid UTF-8, which becomes U+FFFD), seq counts 1, 2, 3,
 * seq and t are numbers and so are the numbers given through
 * auditlog_fields and auditlog_json; a log that ends in a torn line gets
 * a newline before the first new line; and a write that fails (/dev/full)
 * is reported once through the error callback with its errno, after which
 * nothing more is queued and auditlog_close returns that errno.  And the
 * reader (src/auditlog-read.c): whole lines only, a torn last line left
 * out and counted, a newer format refused; --log-sync's values.  The
 * writers of the lines every request makes (route, outcome, job_end, a
 * reply's two lines, an envelope's, a reflection's) write what
 * auditlog_event and auditlog_fields write, and these bytes exactly.
 */

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "corral.h"

static char	dir[64];
static char	path[128];
static int	errors_seen;
static int	error_seen;

/* A fresh directory and log path for each test. */
static int
setup(void **state)
{
	strlcpy(dir, "/tmp/corral-unit-audit.XXXXXX", sizeof dir);
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(path, sizeof path, "%s/audit.ndjson", dir);
	if (ev_default_loop(0) == NULL)
		return -1;
	errors_seen = 0;
	error_seen = 0;
	auditlog_on_error(NULL);
	return 0;
}

static int
teardown(void **state)
{
	unlink(path);
	rmdir(dir);
	return 0;
}

/* Read a whole file; *len gets its size. */
static char *
slurp(const char *p, size_t *len)
{
	FILE	*f;
	char	*buf;
	size_t	 cap = 1 << 20;

	assert_non_null(f = fopen(p, "r"));
	buf = xmalloc(cap);
	*len = fread(buf, 1, cap - 1, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

/*
 * Parse every line of the log: each must be a JSON object ending with a
 * newline, with seq 1, 2, 3 ... and a number t.  Returns the lines parsed,
 * in out (at most max).
 */
static size_t
parse_log(json_t **out, size_t max)
{
	json_error_t	 e;
	char		*buf, *p, *nl;
	size_t		 len, n = 0;

	buf = slurp(path, &len);
	assert_true(len > 0);
	assert_int_equal(buf[len - 1], '\n');
	for (p = buf; *p != '\0'; p = nl + 1) {
		assert_non_null(nl = strchr(p, '\n'));
		out[n] = json_loadb(p, (size_t)(nl - p),
		    JSON_REJECT_DUPLICATES, &e);
		if (out[n] == NULL)
			fail_msg("line %zu is not JSON (%s): %.*s", n + 1,
			    e.text, (int)(nl - p), p);
		assert_true(json_is_object(out[n]));
		assert_true(json_is_integer(json_object_get(out[n], "seq")));
		assert_int_equal(json_integer_value(json_object_get(out[n],
		    "seq")), n + 1);
		assert_true(json_is_number(json_object_get(out[n], "t")));
		n++;
		assert_true(n <= max);
	}
	free(buf);
	return n;
}

static const char *
str(json_t *line, const char *key)
{
	return json_string_value(json_object_get(line, key));
}

/* Hostile bytes in every place a string goes. */
static void
test_hostile_strings(void **state)
{
	static const char	*hostile[] = {
		"plain",
		"quote\" and \\backslash",
		"\",\"forged\":\"member",
		"new\nline\ttab\r\x01\x1f",
		"caf\xc3\xa9 \xe2\x80\xa8",	/* valid UTF-8, U+2028 */
		"bad \xff\xfe utf8 \xc3",	/* invalid UTF-8 */
		"}\n{\"seq\":0}",
	};
	static const char	*env = "{\"a\":\"b\\\"\"}";
	json_t		*lines[64], *fields;
	struct jsonw	 j;
	char		*s;
	size_t		 i, n, len, k = 0;

	assert_int_equal(auditlog_open(path, "wf \"x\".yaml"), 0);
	for (i = 0; i < sizeof hostile / sizeof hostile[0]; i++)
		auditlog_event("state", hostile[i], hostile[i], "from",
		    hostile[i], "to", "READY", "reason", NULL, NULL);
	jsonw_init(&j);
	jsonw_object(&j);
	jsonw_key(&j, "path");
	jsonw_str(&j, hostile[3]);
	jsonw_key(&j, "bytes");
	jsonw_u64(&j, 12345);
	jsonw_object_end(&j);
	s = jsonw_finish(&j, &len);
	auditlog_fields("artifact", hostile[1], hostile[2], s, len);
	free(s);
	fields = json_pack("{s:i, s:s}", "count", 7, "what", hostile[2]);
	auditlog_json("adapter_event", hostile[6], fields);
	auditlog_envelope("reply", hostile[5], hostile[5], env, strlen(env));
	assert_int_equal(auditlog_close(), 0);

	n = parse_log(lines, 64);
	assert_int_equal(n, 1 + 7 + 3);
	assert_string_equal(str(lines[0], "ev"), "run_start");
	assert_string_equal(str(lines[0], "workflow"), "wf \"x\".yaml");
	/* The format readers check: a number, in the run's first line. */
	assert_true(json_is_integer(json_object_get(lines[0], "format")));
	assert_int_equal(json_integer_value(json_object_get(lines[0],
	    "format")), AUDITLOG_FORMAT);
	for (i = 0; i < 7; i++) {
		json_t	*l = lines[1 + i];

		assert_string_equal(str(l, "ev"), "state");
		if (i == 5) {
			/* Bytes that are not UTF-8 are U+FFFD each. */
			assert_string_equal(str(l, "agent"),
			    "bad \xef\xbf\xbd\xef\xbf\xbd utf8 \xef\xbf\xbd");
			assert_string_equal(str(l, "from"), str(l, "agent"));
		} else {
			assert_string_equal(str(l, "agent"), hostile[i]);
			assert_string_equal(str(l, "id"), hostile[i]);
			assert_string_equal(str(l, "from"), hostile[i]);
		}
		assert_null(json_object_get(l, "forged"));
		assert_null(json_object_get(l, "reason"));
	}
	k = 8;
	assert_string_equal(str(lines[k], "agent"), hostile[1]);
	assert_string_equal(str(lines[k], "id"), hostile[2]);
	assert_string_equal(str(lines[k], "path"), hostile[3]);
	assert_true(json_is_integer(json_object_get(lines[k], "bytes")));
	assert_int_equal(json_integer_value(json_object_get(lines[k],
	    "bytes")), 12345);
	k++;
	assert_string_equal(str(lines[k], "agent"), hostile[6]);
	assert_true(json_is_integer(json_object_get(lines[k], "count")));
	assert_string_equal(str(lines[k], "what"), hostile[2]);
	k++;
	assert_string_equal(str(json_object_get(lines[k], "env"), "a"),
	    "b\"");
	for (i = 0; i < n; i++)
		json_decref(lines[i]);
}

/*
 * Compare the log's lines past run_start in pairs, each pair the same
 * after "ev"; returns how many pairs there were.
 */
static size_t
t_pairs(const char *buf, const char *what)
{
	const char	*p, *nl, *a, *b;
	size_t		 n, na, nb;

	assert_non_null(p = strchr(buf, '\n'));
	for (p++, n = 0; *p != '\0'; p = nl + 1, n++) {
		assert_non_null(nl = strchr(p, '\n'));
		a = strstr(p, ",\"ev\":");
		na = (size_t)(nl - a);
		p = nl + 1;
		assert_non_null(nl = strchr(p, '\n'));
		b = strstr(p, ",\"ev\":");
		nb = (size_t)(nl - b);
		if (na != nb || memcmp(a, b, na) != 0)
			fail_msg("%s pair %zu differs:\n%.*s\n%.*s", what, n,
			    (int)na, a, (int)nb, b);
	}
	return n;
}

/*
 * The lines written for every request (route, outcome replied, job_end)
 * have writers of their own: each line is byte for byte what
 * auditlog_event writes for the same members, whatever bytes the strings
 * carry, with every optional member there or not.
 */
static void
test_request_lines(void **state)
{
	static const char	*v[] = {
		"echo.1",
		"quote\" and \\backslash",
		"\",\"forged\":\"member",
		"new\nline\x01",
		"bad \xff utf8",
		"an id of more than thirty-two bytes, to be copied whole",
	};
	static const char	*opt[] = { NULL, "a reason", "risk \"x\"" };
	char	*buf;
	size_t	 i, j, len;
	int	 lines = 0;

	assert_int_equal(auditlog_open(path, "wf.yaml"), 0);
	for (i = 0; i < sizeof v / sizeof v[0]; i++) {
		const char	*w = v[(i + 1) % (sizeof v / sizeof v[0])];

		auditlog_route(v[i], w, v[i], "fewest outstanding");
		auditlog_event("route", v[i], w, "intent", v[i], "reason",
		    "fewest outstanding", NULL);
		for (j = 0; j < 3; j++) {
			auditlog_replied(j == 0 ? NULL : v[i], w,
			    j == 1 ? NULL : v[i], opt[j], opt[2 - j]);
			auditlog_event("outcome", j == 0 ? NULL : v[i], w,
			    "outcome", "replied", "reply", j == 1 ? NULL : v[i],
			    "reason", opt[j], "risk", opt[2 - j], NULL);
			auditlog_job_end(w, j == 1, opt[j]);
			auditlog_event("job_end", NULL, w, "status", j == 1 ?
			    "failed" : "ok", "risk", opt[j], NULL);
		}
	}
	assert_int_equal(auditlog_close(), 0);
	buf = slurp(path, &len);
	/* Past run_start: pairs of lines, the same after "ev". */
	lines = 2 * (int)t_pairs(buf, "line");
	assert_int_equal(lines, 2 * 6 * (1 + 2 * 3));
	free(buf);
}

/*
 * An envelope's line, written in one pass when its agent and id need no
 * escape, is what the generic writer makes of the same members (the
 * envelope spliced as auditlog_fields splices an object's members), for
 * hostile agents and ids, none, and at --log-level decisions; and the
 * request's lines are these bytes exactly.
 */
static void
test_request_bytes(void **state)
{
	static const char	*v[] = {
		"echo.1", "b-0000000000", "x", "", "quote\" and \\backslash",
		"new\nline\x01", "bad \xff utf8", NULL,
		"an id of more than thirty-two bytes, to be copied whole",
	};
	static const char	 env[] = "{\"intent\":\"execute\",\"n\":[1,2]}";
	static const char	 obj[] = "{\"env\":{\"intent\":\"execute\","
	    "\"n\":[1,2]}}";
	static const char	*want[] = {
		",\"ev\":\"route\",\"agent\":\"echo.1\",\"id\":\"b-1\","
		    "\"intent\":\"execute\",\"reason\":\"fewest outstanding\"}",
		",\"ev\":\"outcome\",\"agent\":\"echo.1\",\"id\":\"b-1\","
		    "\"outcome\":\"replied\",\"reply\":\"echo.1-1\"}",
		",\"ev\":\"job_end\",\"id\":\"b-1\",\"status\":\"ok\"}",
		",\"ev\":\"input\",\"id\":\"b-1\",\"env\":{\"intent\":"
		    "\"execute\",\"n\":[1,2]}}",
		",\"ev\":\"route\",\"agent\":\"a\\\"b\",\"id\":\"\\u0001\","
		    "\"intent\":\"\\\\\",\"reason\":\"addressed\"}",
		",\"ev\":\"reply\",\"agent\":\"echo.1\",\"id\":\"\xef\xbf\xbd\","
		    "\"env\":{\"intent\":\"execute\",\"n\":[1,2]}}",
		",\"ev\":\"reply\",\"agent\":\"echo.1\",\"id\":\"echo.1-1\"}",
		",\"ev\":\"reply\",\"agent\":\"echo.1\",\"id\":\"echo.1-1\"}",
		",\"ev\":\"outcome\",\"agent\":\"echo.1\",\"id\":\"b-1\","
		    "\"outcome\":\"replied\",\"reply\":\"echo.1-1\"}",
		",\"ev\":\"reply\",\"agent\":\"echo.1\",\"id\":\"echo.1-1\","
		    "\"env\":{\"intent\":\"execute\",\"n\":[1,2]}}",
		",\"ev\":\"outcome\",\"agent\":\"echo.1\",\"id\":\"b-1\","
		    "\"outcome\":\"replied\",\"reply\":\"echo.1-1\","
		    "\"risk\":\"high\"}",
		",\"ev\":\"reflect\",\"agent\":\"echo.1\",\"id\":\"b-1-r1\","
		    "\"of\":\"echo.1-1\",\"score\":0.4}",
		",\"ev\":\"reflect\",\"id\":\"b-1-r1\",\"of\":\"echo.1-1\","
		    "\"score\":null}",
	};
	char	*buf, *p, *nl, *a;
	size_t	 i, j, len, n = 0;

	assert_int_equal(auditlog_open(path, "wf.yaml"), 0);
	for (i = 0; i < sizeof v / sizeof v[0]; i++)
		for (j = 0; j < sizeof v / sizeof v[0]; j++) {
			auditlog_envelope("reply", v[i], v[j], env,
			    sizeof env - 1);
			auditlog_fields("reply", v[i], v[j], obj,
			    sizeof obj - 1);
		}
	assert_int_equal(auditlog_close(), 0);
	buf = slurp(path, &len);
	n = t_pairs(buf, "line");
	assert_int_equal(n, (sizeof v / sizeof v[0]) * (sizeof v / sizeof v[0]));
	free(buf);

	/*
	 * A reply's two lines at once: what auditlog_fields and
	 * auditlog_event write for them, in fours (two and two).
	 */
	unlink(path);
	assert_int_equal(auditlog_open(path, "wf.yaml"), 0);
	for (i = 0; i < sizeof v / sizeof v[0]; i++)
		for (j = 0; j < sizeof v / sizeof v[0]; j++) {
			const char	*w = v[(i + j) % (sizeof v / sizeof v[0])];
			const char	*r = j % 3 == 0 ? NULL : v[j];

			auditlog_reply(v[i], v[j], w, env, sizeof env - 1, r);
			auditlog_fields("reply", v[i], w, obj, sizeof obj - 1);
			auditlog_event("outcome", v[i], v[j], "outcome",
			    "replied", "reply", w, "risk", r, NULL);
		}
	assert_int_equal(auditlog_close(), 0);
	buf = slurp(path, &len);
	assert_non_null(p = strchr(buf, '\n'));
	for (p++, n = 0; *p != '\0'; n++) {
		const char	*l[4];
		size_t		 ln[4];

		for (j = 0; j < 4; j++) {
			assert_non_null(nl = strchr(p, '\n'));
			assert_non_null(l[j] = strstr(p, ",\"ev\":"));
			ln[j] = (size_t)(nl - l[j]);
			p = nl + 1;
		}
		for (j = 0; j < 2; j++)
			if (ln[j] != ln[j + 2] || memcmp(l[j], l[j + 2],
			    ln[j]) != 0)
				fail_msg("group %zu line %zu differs:\n%.*s\n"
				    "%.*s", n, j, (int)ln[j], l[j],
				    (int)ln[j + 2], l[j + 2]);
	}
	assert_int_equal(n, (sizeof v / sizeof v[0]) * (sizeof v / sizeof v[0]));
	free(buf);

	/* A reflection's line: what auditlog_fields writes for its object. */
	unlink(path);
	assert_int_equal(auditlog_open(path, "wf.yaml"), 0);
	for (i = 0; i < sizeof v / sizeof v[0]; i++)
		for (j = 0; j < sizeof v / sizeof v[0]; j++) {
			static const double	 sc[] = { 0.4, 0.95, 1, -2.5,
			    1e-7, 123456.789012, 1e300 };
			const char	*w = v[(i + j) % (sizeof v / sizeof v[0])];
			struct jsonw	 o;
			double		 x = sc[(i + j) % 7];
			char		*f;
			size_t		 fl;

			auditlog_reflect(v[i], v[j], w, j % 4 != 0, x);
			jsonw_init(&o);
			jsonw_object(&o);
			jsonw_key(&o, "of");
			jsonw_str(&o, w);
			jsonw_key(&o, "score");
			if (j % 4 != 0)
				jsonw_num(&o, x);
			else
				jsonw_raw(&o, "null", 4);
			jsonw_object_end(&o);
			f = jsonw_finish(&o, &fl);
			auditlog_fields("reflect", v[i], v[j], f, fl);
			free(f);
		}
	assert_int_equal(auditlog_close(), 0);
	buf = slurp(path, &len);
	n = t_pairs(buf, "reflect");
	assert_int_equal(n, (sizeof v / sizeof v[0]) * (sizeof v / sizeof v[0]));
	free(buf);

	unlink(path);
	assert_int_equal(auditlog_open(path, "wf.yaml"), 0);
	auditlog_route("echo.1", "b-1", "execute", "fewest outstanding");
	auditlog_replied("echo.1", "b-1", "echo.1-1", NULL, NULL);
	auditlog_job_end("b-1", 0, NULL);
	auditlog_envelope("input", NULL, "b-1", env, sizeof env - 1);
	auditlog_route("a\"b", "\x01", "\\", "addressed");
	auditlog_envelope("reply", "echo.1", "\xff", env, sizeof env - 1);
	assert_int_equal(auditlog_level("decisions"), 0);
	auditlog_envelope("reply", "echo.1", "echo.1-1", env, sizeof env - 1);
	auditlog_reply("echo.1", "b-1", "echo.1-1", env, sizeof env - 1,
	    NULL);
	assert_int_equal(auditlog_level("full"), 0);
	auditlog_reply("echo.1", "b-1", "echo.1-1", env, sizeof env - 1,
	    "high");
	auditlog_reflect("echo.1", "b-1-r1", "echo.1-1", 1, 0.4);
	auditlog_reflect(NULL, "b-1-r1", "echo.1-1", 0, 0);
	assert_int_equal(auditlog_close(), 0);
	buf = slurp(path, &len);
	assert_non_null(p = strchr(buf, '\n'));
	for (p++, i = 0; *p != '\0'; p = nl + 1, i++) {
		assert_non_null(nl = strchr(p, '\n'));
		assert_true(i < sizeof want / sizeof want[0]);
		assert_non_null(a = strstr(p, ",\"ev\":"));
		if ((size_t)(nl - a) != strlen(want[i]) ||
		    memcmp(a, want[i], strlen(want[i])) != 0)
			fail_msg("line %zu:\n%.*s\nwanted\n%s", i,
			    (int)(nl - a), a, want[i]);
	}
	assert_int_equal(i, sizeof want / sizeof want[0]);
	free(buf);
}

/* What the engine keeps of an id: jsonw_idq of it, 0 for none. */
static unsigned
known(const char *s)
{
	return s != NULL ? jsonw_idq(s, strlen(s)) : 0;
}

/*
 * Write a request's lines for every pair of hostile and usual ids, told
 * what is known of them (known) or nothing (0).
 */
static void
known_lines(int told)
{
	static const char	*v[] = {
		"echo.1", "b-0000000000", "x", "", "quote\" and \\backslash",
		"new\nline\x01", "bad \xff utf8", NULL,
		"an id of more than thirty-two bytes, to be copied whole",
		"an id of more than a hundred and twenty-seven bytes, whose "
		    "length does not fit beside the bit that says it is plain "
		    "in one byte",
	};
	static const char	 env[] = "{\"intent\":\"execute\"}";
	size_t			 i, j, nv = sizeof v / sizeof v[0];

	for (i = 0; i < nv; i++)
		for (j = 0; j < nv; j++) {
			const char	*w = v[(i + j) % nv], *r;
			unsigned	 qi, qj, qw;

			r = j % 3 == 0 ? NULL : v[j];
			qi = told ? known(v[i]) : 0;
			qj = told ? known(v[j]) : 0;
			qw = told ? known(w) : 0;
			auditlog_envelope_q("input", 5, v[i], qi, v[j], qj, env,
			    sizeof env - 1);
			/* The intent: any string but none. */
			auditlog_route_q(v[i], qi, v[j], qj, w != NULL ? w :
			    "execute", w != NULL ? qw : 0, "addressed", 9);
			auditlog_reply_q(v[i], qi, v[j], qj, w, qw, env,
			    sizeof env - 1, r);
			auditlog_job_end_q(v[j], qj, (int)(j & 1), r);
		}
}

/*
 * The request's lines are the same bytes whether the writers are told
 * the ids' lengths and that they need no escape, or measure and check
 * them: for ids of every kind, and those too long to be told.
 */
static void
test_known_ids(void **state)
{
	char	*buf[2], *p[2], *nl[2], *a[2];
	size_t	 len, n, k, na[2];

	(void)state;
	assert_int_equal(jsonw_idq("echo.1", 6), 6 | JSONW_PLAIN);
	assert_int_equal(jsonw_idq("", 0), JSONW_PLAIN);
	assert_int_equal(jsonw_idq("a\"b", 3), 0);
	assert_int_equal(jsonw_idq("bad \xff", 5), 0);
	/* The intents' names, as the route line is told them. */
	assert_int_equal(protocol_intent_q(INTENT_EXECUTE), 7 | JSONW_PLAIN);
	assert_int_equal(protocol_intent_q(INTENT_TOOL_CALL), 9 | JSONW_PLAIN);
	assert_int_equal(protocol_intent_q(-1), 1 | JSONW_PLAIN);
	for (k = 0; k < 2; k++) {
		unlink(path);
		assert_int_equal(auditlog_open(path, "wf.yaml"), 0);
		known_lines(k == 0);
		assert_int_equal(auditlog_close(), 0);
		buf[k] = slurp(path, &len);
		assert_non_null(p[k] = strchr(buf[k], '\n'));
		p[k]++;
	}
	for (n = 0; *p[0] != '\0' || *p[1] != '\0'; n++) {
		for (k = 0; k < 2; k++) {
			assert_non_null(nl[k] = strchr(p[k], '\n'));
			assert_non_null(a[k] = strstr(p[k], ",\"ev\":"));
			na[k] = (size_t)(nl[k] - a[k]);
			p[k] = nl[k] + 1;
		}
		if (na[0] != na[1] || memcmp(a[0], a[1], na[0]) != 0)
			fail_msg("line %zu differs:\n%.*s\n%.*s", n,
			    (int)na[0], a[0], (int)na[1], a[1]);
	}
	/* Five lines a pair: input, route, reply, outcome, job_end. */
	assert_int_equal(n, 10 * 10 * 5);
	free(buf[0]);
	free(buf[1]);
}

/*
 * t's milliseconds and seconds are kept as text and written again only
 * when they change: lines a tenth of a millisecond apart, over more than
 * a millisecond, each have six decimals and a t that never goes back and
 * goes on by at least the time slept.
 */
static void
test_t_digits(void **state)
{
	struct timespec	 d = { 0, 100000 };
	json_t		*lines[64];
	double		 t, last = 0;
	char		*buf, *p;
	size_t		 i, n, len;

	assert_int_equal(auditlog_open(path, "wf.yaml"), 0);
	for (i = 0; i < 40; i++) {
		nanosleep(&d, NULL);
		auditlog_job_end("b-1", 0, NULL);
	}
	assert_int_equal(auditlog_close(), 0);
	n = parse_log(lines, 64);
	assert_int_equal(n, 1 + 40);
	for (i = 1; i < n; i++) {
		t = json_real_value(json_object_get(lines[i], "t"));
		if (i > 1 && t < last + 0.0001 - 0.0000011)
			fail_msg("line %zu: t %.6f after %.6f", i + 1, t, last);
		last = t;
	}
	for (i = 0; i < n; i++)
		json_decref(lines[i]);
	buf = slurp(path, &len);
	for (p = buf, i = 0; (p = strstr(p, ",\"t\":")) != NULL; p++, i++) {
		assert_non_null(p = strchr(p, '.'));
		assert_int_equal(strspn(p + 1, "0123456789"), 6);
		assert_int_equal(p[7], ',');
	}
	assert_int_equal(i, 1 + 40);
	free(buf);
}

/*
 * seq is counted as text: it goes on past 9, 99 and 999 without a gap,
 * starts again at 1 in the next run of the same process, and t keeps
 * six decimals and never goes back.
 */
static void
test_seq_counts(void **state)
{
	json_error_t	 e;
	json_t		*l;
	char		*buf, *p, *nl, *t;
	size_t		 len, n = 0, want;
	double		 last = 0;
	int		 run;

	for (run = 0; run < 2; run++) {
		assert_int_equal(auditlog_open(path, "wf.yaml"), 0);
		for (want = 0; want < (run == 0 ? 1200 : 3); want++)
			auditlog_event("state", "a", NULL, "to", "READY", NULL);
		assert_int_equal(auditlog_close(), 0);
	}
	buf = slurp(path, &len);
	for (p = buf; *p != '\0'; p = nl + 1, n++) {
		assert_non_null(nl = strchr(p, '\n'));
		if ((l = json_loadb(p, (size_t)(nl - p), 0, &e)) == NULL)
			fail_msg("line %zu is not JSON: %.*s", n + 1,
			    (int)(nl - p), p);
		/* 1,201 lines in the first run, then 4 from 1 again. */
		want = n < 1201 ? n + 1 : n - 1201 + 1;
		assert_int_equal(json_integer_value(json_object_get(l, "seq")),
		    want);
		if (want == 1)
			last = 0;
		assert_true(json_real_value(json_object_get(l, "t")) >= last);
		last = json_real_value(json_object_get(l, "t"));
		assert_non_null(t = strstr(p, ",\"t\":"));
		assert_non_null(t = strchr(t, '.'));
		assert_int_equal(strspn(t + 1, "0123456789"), 6);
		json_decref(l);
	}
	assert_int_equal(n, 1201 + 4);
	free(buf);
}

/*
 * Names, ids and values of every length from 0 to 40 read back as they
 * were: short ones are copied in fixed-size moves that overlap.
 */
static void
test_lengths(void **state)
{
	json_t	*lines[48];
	char	 s[41];
	size_t	 i, n;

	assert_int_equal(auditlog_open(path, "wf.yaml"), 0);
	for (i = 0; i <= 40; i++) {
		for (n = 0; n < i; n++)
			s[n] = (char)('a' + n % 26);
		s[i] = '\0';
		auditlog_event(i % 2 ? "e" : "an_event_name", s, s, "k", s,
		    "a_longer_key_of_more_than_16", s, NULL);
	}
	assert_int_equal(auditlog_close(), 0);
	n = parse_log(lines, 48);
	assert_int_equal(n, 1 + 41);
	for (i = 0; i <= 40; i++) {
		json_t	*l = lines[1 + i];

		for (n = 0; n < i; n++)
			s[n] = (char)('a' + n % 26);
		s[i] = '\0';
		assert_string_equal(str(l, "ev"), i % 2 ? "e" : "an_event_name");
		assert_string_equal(str(l, "agent"), s);
		assert_string_equal(str(l, "id"), s);
		assert_string_equal(str(l, "k"), s);
		assert_string_equal(str(l, "a_longer_key_of_more_than_16"), s);
	}
	n = 1 + 41;
	for (i = 0; i < n; i++)
		json_decref(lines[i]);
}

/* A log whose last line was torn gets a newline before ours. */
static void
test_torn_tail(void **state)
{
	char	*buf;
	size_t	 len;
	int	 fd;

	assert_true((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) >= 0);
	assert_int_equal(write(fd, "{\"seq\":1,\"t\":0.1", 16), 16);
	close(fd);
	assert_int_equal(auditlog_open(path, "wf.yaml"), 0);
	assert_int_equal(auditlog_close(), 0);
	buf = slurp(path, &len);
	assert_true(strncmp(buf, "{\"seq\":1,\"t\":0.1\n{\"seq\":1,", 26) == 0);
	assert_int_equal(buf[len - 1], '\n');
	free(buf);
}

static void
on_error(const char *p, int error)
{
	errors_seen++;
	error_seen = error;
	assert_string_equal(p, "/dev/full");
}

/* A failed write is reported once, and nothing more is queued. */
static void
test_write_error(void **state)
{
	int	i;

	auditlog_on_error(on_error);
	assert_int_equal(auditlog_open("/dev/full", "wf.yaml"), 0);
	for (i = 0; i < 100; i++)
		auditlog_event("state", "a", NULL, "to", "READY", NULL);
	auditlog_flush();
	/* The writer has failed; the loop hears of it through ev_async. */
	for (i = 0; i < 100 && errors_seen == 0; i++)
		ev_run(LOOP, EVRUN_NOWAIT);
	assert_int_equal(errors_seen, 1);
	assert_int_equal(error_seen, ENOSPC);
	assert_false(auditlog_enabled());
	for (i = 0; i < 100; i++)
		auditlog_event("state", "a", NULL, "to", "READY", NULL);
	auditlog_flush();
	ev_run(LOOP, EVRUN_NOWAIT);
	assert_int_equal(auditlog_close(), ENOSPC);
	assert_int_equal(errors_seen, 1);
	auditlog_on_error(NULL);
}

/* A failure found only by the last flush is reported by close. */
static void
test_write_error_at_close(void **state)
{
	auditlog_on_error(on_error);
	assert_int_equal(auditlog_open("/dev/full", "wf.yaml"), 0);
	auditlog_event("state", "a", NULL, "to", "READY", NULL);
	assert_int_equal(auditlog_close(), ENOSPC);
	assert_int_equal(errors_seen, 1);
	assert_int_equal(error_seen, ENOSPC);
	auditlog_on_error(NULL);
}

/* Write text as the whole of the log file. */
static void
put(const char *text)
{
	int	fd;

	assert_true((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/*
 * The reader gives the whole lines, skips and counts those that do not
 * parse, leaves out a torn last line and counts its bytes, and reads a
 * run_start without a format as the first format.
 */
static void
test_read_torn(void **state)
{
	struct auditlog_reader	 r;
	json_t			*j;
	char			 buf[1024];
	FILE			*mem;

	put("{\"seq\":1,\"t\":0,\"ev\":\"run_start\",\"version\":\"0.0.9\"}\n"
	    "{\"seq\":2,\"t\":0.1,\"ev\":\"spawn\",\"agent\":\"a\"}\n"
	    "not json\n"
	    "{\"seq\":4,\"t\":0.2,\"ev\":\"state\"}\n"
	    "{\"seq\":5,\"t\":0.3,\"ev\":\"st");
	assert_int_equal(auditlog_read_open(&r, path), 0);
	assert_int_equal(auditlog_read_next(&r, &j), 1);
	assert_string_equal(str(j, "ev"), "run_start");
	json_decref(j);
	assert_int_equal(r.format, 1);
	assert_int_equal(auditlog_read_next(&r, &j), 1);
	assert_string_equal(str(j, "ev"), "spawn");
	json_decref(j);
	assert_int_equal(auditlog_read_next(&r, &j), 1);
	assert_string_equal(str(j, "ev"), "state");
	json_decref(j);
	assert_int_equal(auditlog_read_next(&r, &j), 0);
	assert_null(j);
	assert_int_equal(r.bad, 1);
	assert_int_equal(r.first_bad, 3);
	assert_int_equal(r.torn, 25);
	assert_int_equal(r.lineno, 5);
	assert_non_null(mem = fmemopen(buf, sizeof buf, "w"));
	auditlog_read_report(&r, mem);
	fclose(mem);
	assert_non_null(strstr(buf, "line 3 is not JSON (1 such line in "
	    "all)"));
	assert_non_null(strstr(buf, "the last line is cut short (it has no "
	    "newline): the log ends mid-write; line 5 (25 bytes) is left "
	    "out"));
	auditlog_read_close(&r);
}

/* A run in a newer format is refused, saying which; an older one is not. */
static void
test_read_newer(void **state)
{
	struct auditlog_reader	 r;
	json_t			*j;

	put("{\"seq\":1,\"t\":0,\"ev\":\"run_start\",\"format\":1}\n"
	    "{\"seq\":2,\"t\":0,\"ev\":\"run_end\"}\n"
	    "{\"seq\":1,\"t\":0,\"ev\":\"run_start\",\"format\":2,"
	    "\"version\":\"9.0.0\"}\n");
	assert_int_equal(auditlog_read_open(&r, path), 0);
	assert_int_equal(auditlog_read_next(&r, &j), 1);
	json_decref(j);
	assert_int_equal(auditlog_read_next(&r, &j), 1);
	json_decref(j);
	assert_true(r.ended);
	assert_int_equal(auditlog_read_next(&r, &j), -1);
	assert_null(j);
	assert_non_null(strstr(r.why, "line 3: the log is in format 2 "
	    "(written by corral 9.0.0); this corral"));
	assert_non_null(strstr(r.why, "reads format 1 and older"));
	auditlog_read_close(&r);

	put("{\"seq\":1,\"t\":0,\"ev\":\"run_start\",\"format\":\"2\"}\n");
	assert_int_equal(auditlog_read_open(&r, path), 0);
	assert_int_equal(auditlog_read_next(&r, &j), -1);
	assert_non_null(strstr(r.why, "not a format number"));
	auditlog_read_close(&r);
}

/* --log-sync's values, and a log written under each is the same log. */
static void
test_sync(void **state)
{
	static const char	*bad[] = { "", "0", "-1", "12s", "ms", "1e3",
				    "3600001", "99999999999999999999", "Always" };
	json_t	*lines[64];
	size_t	 i, n;
	int	 ms, modes[] = { 0, 1, -1, AUDITLOG_SYNC_DEFAULT };

	assert_int_equal(auditlog_sync_parse("always", &ms), 0);
	assert_int_equal(ms, 0);
	assert_int_equal(auditlog_sync_parse("never", &ms), 0);
	assert_int_equal(ms, -1);
	assert_int_equal(auditlog_sync_parse("250", &ms), 0);
	assert_int_equal(ms, 250);
	assert_int_equal(auditlog_sync_parse("250ms", &ms), 0);
	assert_int_equal(ms, 250);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(auditlog_sync_parse(bad[i], &ms), -1);
	for (i = 0; i < sizeof modes / sizeof modes[0]; i++) {
		unlink(path);
		auditlog_set_sync(modes[i]);
		assert_int_equal(auditlog_open(path, "wf.yaml"), 0);
		auditlog_event("state", "a", NULL, "to", "READY", NULL);
		auditlog_flush();
		/* A sync every 1 ms: the writer's timed wait runs. */
		usleep(3000);
		auditlog_event("state", "a", NULL, "to", "BUSY", NULL);
		assert_int_equal(auditlog_close(), 0);
		n = parse_log(lines, 64);
		assert_int_equal(n, 3);
		while (n > 0)
			json_decref(lines[--n]);
	}
	auditlog_set_sync(AUDITLOG_SYNC_DEFAULT);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hostile_strings, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_lengths, setup, teardown),
		cmocka_unit_test_setup_teardown(test_request_lines, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_request_bytes, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_known_ids, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_t_digits, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_seq_counts, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_torn_tail, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_write_error, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_write_error_at_close,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_torn, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_read_newer, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_sync, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
