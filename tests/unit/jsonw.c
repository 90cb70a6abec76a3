/*
 * Unit tests of every JSON text corral composes, fed the worst strings.
 *
 * The strings: quotes, backslashes, every control character, DEL,
 * characters of 2, 3 and 4 bytes, invalid UTF-8 (lone continuation
 * bytes, sequences cut short at the very end, overlong forms, surrogates,
 * code points above U+10FFFF, 0xfe and 0xff), NUL, and strings of 64 KB.
 * They go into every field of every message that can carry such text:
 * the JSON writer (src/jsonw.c: jsonw_string, jsonw_text, the builder),
 * the numbers adapters write (adapter_number),
 * the envelopes of src/envelope.c (error, fill, reflect, action, mark,
 * add_parent, corral_set, goal), JSON-RPC frames (src/rpc.c, through a
 * peer whose channel writes to a pipe read here) and the audit log
 * (src/auditlog.c, a temporary file).
 *
 * Every output must load with jansson and JSON_REJECT_DUPLICATES (as
 * corral reads JSON), envelopes must pass corral's own scanner and
 * validator, and each string must read back as it went in when it was
 * valid UTF-8, with U+FFFD for each byte of an invalid sequence
 * otherwise (ref_repair, written here without corral's decoder).
 *
 * Some parameters are not text from a peer, by contract; their callers
 * pass literals or corral's own names, and the tests say so where they
 * feed them only such strings.
 */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "corral.h"

#define LONG_LEN	(64 * 1024)

/* A string to feed: bytes and length (NUL allowed). */
struct hostile {
	const char	*s;
	size_t		 n;
};
#define H(lit)	{ lit, sizeof(lit) - 1 }

static const struct hostile fixed[] = {
	H(""), H("plain"), H("\""), H("\\"), H("\"\\\"\\"), H("say \"hi\" \\o/"),
	H("\x7f"), H("a\x7f" "b"), H("caf\xc3\xa9"), H("\xe2\x82\xac"),
	H("\xf0\x9f\x98\x80"), H("\xef\xbf\xbd"), H("\xf4\x8f\xbf\xbf"),
	H("\xef\xbb\xbf"), H("\xe2\x80\xa8\xe2\x80\xa9"), H("\xc2\x80"),
	H("\\u0000"), H("\\ud800"), H("</script>"), H("{\"a\":[1]}"),
	/* Lone continuation bytes. */
	H("\x80"), H("\xbf"), H("a\x80z"),
	/* Cut short, also at the very end. */
	H("\xc3"), H("ab\xc3"), H("ab\xe2\x82"), H("ab\xf0\x9f\x98"),
	H("\xe2\x82z"), H("\xf0\x9f\x98z"),
	/* Overlong forms. */
	H("\xc0\xaf"), H("\xc1\xbf"), H("\xe0\x80\xaf"), H("\xe0\x9f\xbf"),
	H("\xf0\x80\x80\xaf"), H("\xf0\x8f\xbf\xbf"),
	/* Surrogates, and beyond U+10FFFF. */
	H("\xed\xa0\x80"), H("\xed\xbf\xbf"), H("\xed\xa0\xbd\xed\xb8\x80"),
	H("\xf4\x90\x80\x80"), H("\xf5\x80\x80\x80"),
	/* Bytes that never appear in UTF-8. */
	H("\xff"), H("\xfe"), H("\xf8\x88\x80\x80\x80"),
	H("ok\xffok\xc3\xa9\x80\"\n"),
	/* NUL, which only the length-taking functions can see. */
	H("a\0b"), H("\0"), H("\xff\0\xc3"),
};

/* Every string of a test: the fixed ones and those made at start. */
static struct hostile	*all;
static size_t		 nall;
static struct jscan	*js;

/* Add a string (copied) to the list. */
static void
add(const char *s, size_t n)
{
	char	*copy = malloc(n + 1);

	assert_non_null(copy);
	memcpy(copy, s, n);
	copy[n] = '\0';
	all = realloc(all, (nall + 1) * sizeof *all);
	assert_non_null(all);
	all[nall].s = copy;
	all[nall].n = n;
	nall++;
}

/* Make the list: the fixed strings, each control byte, all 256 bytes, long. */
static int
setup(void **state)
{
	static const char pattern[] = "x\"\\\n\xc3\xa9\xff\x01<\xe2\x82\xac";
	char	*buf;
	size_t	 i;

	for (i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
		add(fixed[i].s, fixed[i].n);
	buf = malloc(LONG_LEN);
	assert_non_null(buf);
	for (i = 0; i < 0x20; i++) {
		buf[0] = 'a';
		buf[1] = (char)i;
		buf[2] = 'z';
		add(buf + 1, 1);
		add(buf, 3);
	}
	for (i = 0; i < 0x20; i++)
		buf[i] = (char)i;
	add(buf, 0x20);
	for (i = 0; i < 256; i++)
		buf[i] = (char)i;
	add(buf, 256);
	/* Long: hostile all along, and valid UTF-8 all along. */
	for (i = 0; i < LONG_LEN; i++)
		buf[i] = pattern[i % (sizeof pattern - 1)];
	add(buf, LONG_LEN);
	for (i = 0; i + 3 <= LONG_LEN; i += 3)
		memcpy(buf + i, "\xe2\x82\xac", 3);
	add(buf, i);
	/* The long one cut inside its last character. */
	add(buf, i - 1);
	free(buf);
	js = jscan_create(4);
	ev_default_loop(0);
	log_init(0);
	return 0;
}

static int
teardown(void **state)
{
	size_t	i;

	for (i = 0; i < nall; i++)
		free((char *)all[i].s);
	free(all);
	all = NULL;
	nall = 0;
	jscan_free(js);
	return 0;
}

/* ---- The reference: what each string must read as. ---- */

/* Length of the valid UTF-8 character at s (RFC 3629), or 0. */
static size_t
ref_utf8(const unsigned char *s, size_t n)
{
	unsigned char	lo, hi;

	if (n == 0)
		return 0;
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return n >= 2 && (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		lo = s[0] == 0xe0 ? 0xa0 : 0x80;
		hi = s[0] == 0xed ? 0x9f : 0xbf;
		return n >= 3 && s[1] >= lo && s[1] <= hi &&
		    (s[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		lo = s[0] == 0xf0 ? 0x90 : 0x80;
		hi = s[0] == 0xf4 ? 0x8f : 0xbf;
		return n >= 4 && s[1] >= lo && s[1] <= hi &&
		    (s[2] & 0xc0) == 0x80 && (s[3] & 0xc0) == 0x80 ? 4 : 0;
	}
	return 0;
}

/* Return nonzero if s is valid UTF-8 (NUL counts as valid here). */
static int
ref_valid(const char *s, size_t n)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 i = 0, l;

	while (i < n) {
		if ((l = ref_utf8(p + i, n - i)) == 0)
			return 0;
		i += l;
	}
	return 1;
}

/*
 * What s must read as once corral wrote it: valid characters as they
 * are, U+FFFD for each byte that does not start one (and for NUL too
 * when nul_bad).  Returns a new buffer of *outn bytes.
 */
static char *
ref_repair(const char *s, size_t n, int nul_bad, size_t *outn)
{
	const unsigned char	*p = (const unsigned char *)s;
	char			*out = malloc(n * 3 + 1);
	size_t			 i = 0, o = 0, l;

	assert_non_null(out);
	while (i < n) {
		l = ref_utf8(p + i, n - i);
		if (l == 0 || (nul_bad && p[i] == 0)) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(out + o, s + i, l);
		o += l;
		i += l;
	}
	out[o] = '\0';
	*outn = o;
	return out;
}

/* Return nonzero if the string has no NUL (it can go where C strings go). */
static int
cstr(const struct hostile *h)
{
	return memchr(h->s, '\0', h->n) == NULL;
}

/* ---- Checking output. ---- */

/*
 * Load JSON text as corral reads it; fail with the text if it does not
 * load, or if a raw control byte made it into the text.
 */
static json_t *
load(const char *s, size_t n, size_t flags)
{
	json_error_t	 e;
	json_t		*j;
	size_t		 i;

	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20)
			fail_msg("raw byte 0x%02x at %zu in: %.300s",
			    (unsigned char)s[i], i, s);
	if ((j = json_loadb(s, n, JSON_REJECT_DUPLICATES | flags, &e)) ==
	    NULL)
		fail_msg("jansson refuses (%s at %d): %.300s", e.text,
		    e.position, s);
	return j;
}

/* Load an envelope corral wrote: JSON, and valid to corral's validator. */
static json_t *
load_envelope(const char *s, size_t n)
{
	struct env		env;
	struct env_error	err;

	if (jscan_run(js, s, n) != 0)
		fail_msg("jscan refuses (%s): %.300s", js->err, s);
	if (envelope_check(js, s, n, &env, &err) != 0)
		fail_msg("not a valid envelope (%s: %s): %.300s", err.path,
		    err.msg, s);
	return load(s, n, 0);
}

/* Assert that a JSON value is the string want. */
static void
assert_jstr(json_t *v, const char *want, size_t n, const char *what)
{
	if (!json_is_string(v))
		fail_msg("%s: not a string", what);
	if (json_string_length(v) != n ||
	    memcmp(json_string_value(v), want, n) != 0)
		fail_msg("%s: got %zu bytes \"%.60s\", want %zu bytes \"%.60s\"",
		    what, json_string_length(v), json_string_value(v), n, want);
}

/* Assert that a JSON value reads as h once repaired. */
static void
assert_repaired(json_t *v, const struct hostile *h, int nul_bad,
    const char *what)
{
	char	*want;
	size_t	 n;

	want = ref_repair(h->s, h->n, nul_bad, &n);
	assert_jstr(v, want, n, what);
	free(want);
}

/* A path into a JSON value: "a.b.0.c". */
static json_t *
jget(json_t *j, const char *path)
{
	char	 buf[256], *p, *dot;

	snprintf(buf, sizeof buf, "%s", path);
	for (p = buf; j != NULL && p != NULL; p = dot) {
		if ((dot = strchr(p, '.')) != NULL)
			*dot++ = '\0';
		if (json_is_array(j))
			j = json_array_get(j, (size_t)atoi(p));
		else
			j = json_object_get(j, p);
	}
	return j;
}

/* ---- jsonw_string and jsonw_plain (from tests/unit/util.c). ---- */

/* Escape s with jsonw_string, and parse it back with jansson. */
static void
assert_json_string_round_trip(const char *s, size_t n)
{
	struct ndjson_writer	 w;
	json_error_t		 e;
	json_t			*j;
	char			*doc;
	size_t			 len, i;

	ndjson_writer_init(&w, 0, 1);
	ndjson_writer_add(&w, "[", 1);
	jsonw_string(&w, s, n);
	ndjson_writer_add(&w, "]", 1);
	len = ndjson_writer_queued(&w);
	doc = w.buf + w.head;
	/* No raw control character survives. */
	for (i = 0; i < len; i++)
		if ((unsigned char)doc[i] < 0x20)
			fail_msg("raw byte 0x%02x in output", doc[i]);
	j = json_loadb(doc, len, JSON_ALLOW_NUL, &e);
	if (j == NULL)
		fail_msg("jansson rejects %.*s: %s", (int)len, doc, e.text);
	assert_int_equal(json_string_length(json_array_get(j, 0)), n);
	assert_memory_equal(json_string_value(json_array_get(j, 0)), s, n);
	json_decref(j);
	ndjson_writer_free(&w);
}

/* Quotes, backslashes and every control character are escaped. */
static void
test_json_string_escaping(void **state)
{
	char	chars[32];
	int	i;

	assert_json_string_round_trip("", 0);
	assert_json_string_round_trip("plain", 5);
	assert_json_string_round_trip("say \"hi\"", 8);
	assert_json_string_round_trip("C:\\path\\", 8);
	assert_json_string_round_trip("\"\\\"\\", 4);
	assert_json_string_round_trip("line\nbreak\r\ttab", 15);
	assert_json_string_round_trip("\x01\x1f\x7f", 3);
	assert_json_string_round_trip("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
	    14);
	assert_json_string_round_trip("a\0b", 3);
	for (i = 0; i < 32; i++)
		chars[i] = (char)i;
	assert_json_string_round_trip(chars, 32);
}

/* The exact escapes: short forms for common ones, \u00XX for the rest. */
static void
test_json_string_exact_output(void **state)
{
	struct ndjson_writer	w;
	const char		*want = "\"a\\\"b\\\\c\\nd\\re\\tf\\u0001g\\u001f\"";

	ndjson_writer_init(&w, 0, 1);
	jsonw_string(&w, "a\"b\\c\nd\re\tf\x01g\x1f", 14);
	assert_int_equal(ndjson_writer_queued(&w), strlen(want));
	assert_memory_equal(w.buf + w.head, want, strlen(want));
	ndjson_writer_free(&w);
}

/*
 * jsonw_plain finds the first byte that needs an escape wherever it
 * sits: the sixteen- and eight-byte steps must not miss one or stop
 * early.
 */
static void
test_json_plain_every_byte(void **state)
{
	/* Three sixteen-byte steps: the blocks, the tail, the short forms. */
	char	buf[48];
	size_t	pos, len;
	int	c, needs;

	(void)state;
	for (len = 0; len <= sizeof buf; len++) {
		memset(buf, 'a', sizeof buf);
		assert_int_equal(jsonw_plain(buf, len), len);
	}
	for (c = 0; c < 256; c++) {
		/* Bytes from 0x80 on start multi-byte characters, which
		 * are checked one by one. */
		needs = (c < 0x20 || c == '"' || c == '\\' || c >= 0x80);
		for (pos = 0; pos < sizeof buf; pos++) {
			/* Bytes around it that come close to the special ones. */
			memset(buf, 0x20, sizeof buf);
			buf[sizeof buf - 1] = (char)0x7f;
			buf[pos] = (char)c;
			if (pos == sizeof buf - 1 && !needs) {
				assert_int_equal(jsonw_plain(buf,
				    sizeof buf), sizeof buf);
				continue;
			}
			assert_int_equal(jsonw_plain(buf, sizeof buf),
			    needs ? pos : sizeof buf);
			/* A shorter length stops before it. */
			assert_int_equal(jsonw_plain(buf, pos), pos);
		}
	}
}

/*
 * jsonw_string with every hostile string: valid UTF-8 as it is, U+FFFD
 * for each invalid byte.  A NUL is escaped as \u0000, which is JSON but
 * which jansson reads only with JSON_ALLOW_NUL; no caller passes one
 * (they all pass C strings), so that is the contract here.
 */
static void
test_string_hostile(void **state)
{
	struct ndjson_writer	 w;
	json_t			*j;
	size_t			 i;

	for (i = 0; i < nall; i++) {
		ndjson_writer_init(&w, 0, 1);
		ndjson_writer_add(&w, "[", 1);
		jsonw_string(&w, all[i].s, all[i].n);
		ndjson_writer_add(&w, "]", 1);
		j = load(w.buf + w.head, ndjson_writer_queued(&w),
		    cstr(&all[i]) ? 0 : JSON_ALLOW_NUL);
		assert_repaired(json_array_get(j, 0), &all[i], 0,
		    "jsonw_string");
		json_decref(j);
		ndjson_writer_free(&w);
		/* Valid UTF-8 passes as it is: the fast path and the slow. */
		if (ref_valid(all[i].s, all[i].n))
			assert_true(jsonw_plain(all[i].s, all[i].n) <=
			    all[i].n);
	}
}

/*
 * jsonw_text makes jansson strings of any bytes (a tool's output, a
 * peer's message): serialized as corral serializes and loaded as corral
 * loads, every string reads back repaired, NUL included (its own loop
 * makes NUL U+FFFD, and corral refuses \u0000 when it reads).
 */
static void
test_text_hostile(void **state)
{
	json_t	*v, *j;
	char	*s;
	size_t	 i;

	for (i = 0; i < nall; i++) {
		v = jsonw_text(all[i].s, all[i].n);
		assert_non_null(v);
		j = json_pack("{s:o}", "v", v);
		assert_non_null(j);
		s = json_dumps(j, CORRAL_JSON_FLAGS);
		assert_non_null(s);
		json_decref(j);
		j = load(s, strlen(s), 0);
		assert_repaired(json_object_get(j, "v"), &all[i], 1,
		    "jsonw_text");
		json_decref(j);
		free(s);
	}
}

/* ---- The builder. ---- */

/*
 * Every hostile string as a value (jsonw_strn, jsonw_str), as a key
 * (jsonw_key: C strings), in arrays and nested objects.  Keys a caller
 * gives are distinct by contract, so none here repairs to another.
 */
static void
test_builder_hostile(void **state)
{
	struct jsonw	 w;
	json_t		*j, *o;
	char		*s, *key;
	size_t		 i, len, kn;

	for (i = 0; i < nall; i++) {
		jsonw_init(&w);
		jsonw_object(&w);
		jsonw_key(&w, "value");
		jsonw_strn(&w, all[i].s, all[i].n);
		jsonw_key(&w, "list");
		jsonw_array(&w);
		jsonw_strn(&w, all[i].s, all[i].n);
		if (cstr(&all[i]))
			jsonw_str(&w, all[i].s);
		else
			jsonw_str(&w, NULL);
		jsonw_u64(&w, i);
		jsonw_object(&w);
		jsonw_object_end(&w);
		jsonw_array(&w);
		jsonw_array_end(&w);
		jsonw_bool(&w, 1);
		jsonw_array_end(&w);
		key = ref_repair(all[i].s, all[i].n, 0, &kn);
		if (cstr(&all[i]) && strcmp(key, "value") != 0 &&
		    strcmp(key, "list") != 0 && strcmp(key, "raw") != 0) {
			jsonw_key(&w, all[i].s);
			jsonw_object(&w);
			jsonw_key(&w, all[i].s);
			jsonw_raw(&w, "[1,{\"a\":null}]", 14);
			jsonw_object_end(&w);
		}
		jsonw_key(&w, "raw");
		jsonw_raw(&w, "{\"x\":\"\\ud83d\\ude00\"}", 20);
		jsonw_object_end(&w);
		s = jsonw_finish(&w, &len);
		assert_int_equal(strlen(s), len);
		j = load(s, len, cstr(&all[i]) ? 0 : JSON_ALLOW_NUL);
		assert_repaired(json_object_get(j, "value"), &all[i], 0,
		    "value");
		assert_repaired(jget(j, "list.0"), &all[i], 0, "list.0");
		if (cstr(&all[i]))
			assert_repaired(jget(j, "list.1"), &all[i], 0,
			    "list.1");
		else
			assert_true(json_is_null(jget(j, "list.1")));
		assert_int_equal(json_integer_value(jget(j, "list.2")), i);
		assert_true(json_is_true(jget(j, "list.5")));
		if (cstr(&all[i]) && strcmp(key, "value") != 0 &&
		    strcmp(key, "list") != 0 && strcmp(key, "raw") != 0) {
			assert_int_equal(json_object_size(j), 4);
			o = json_object_get(j, key);
			assert_non_null(o);
			assert_true(json_is_array(json_object_get(o, key)));
		}
		json_decref(j);
		free(key);
		free(s);
	}
}

/*
 * Numbers: 15 significant digits (0.9 reads 0.9), whole numbers as
 * integers, NaN and infinities (which JSON cannot hold) as null.
 * jsonw_u64 writes counts; beyond INT64_MAX jansson (and corral's
 * scanner) would refuse them, and no count of corral gets there.
 */
static void
test_builder_numbers(void **state)
{
	static const double nums[] = { 0, -0.0, 0.9, 0.1, 1.0 / 3, -1,
	    -0.5, 1e308, -1e308, 4.9e-324, 1e-300, 9e15, -9e15, 9e15 + 2,
	    9007199254740993.0, 123456789.125, 1e21, 2.5e-7, DBL_MAX,
	    -DBL_MIN, NAN, INFINITY, -INFINITY };
	static const uint64_t u[] = { 0, 1, 9, 10, 99, 100, 4294967296ULL,
	    9007199254740993ULL, INT64_MAX };
	struct jsonw	 w;
	json_t		*j, *v;
	char		*s, want[64];
	size_t		 i, len;

	jsonw_init(&w);
	jsonw_array(&w);
	for (i = 0; i < sizeof nums / sizeof nums[0]; i++)
		jsonw_num(&w, nums[i]);
	for (i = 0; i < sizeof u / sizeof u[0]; i++)
		jsonw_u64(&w, u[i]);
	jsonw_array_end(&w);
	s = jsonw_finish(&w, &len);
	j = load(s, len, 0);
	for (i = 0; i < sizeof nums / sizeof nums[0]; i++) {
		v = json_array_get(j, i);
		if (!isfinite(nums[i])) {
			assert_true(json_is_null(v));
			continue;
		}
		assert_true(json_is_number(v));
		/* 15 digits, unless they would read as infinity. */
		snprintf(want, sizeof want, "%.15g", nums[i]);
		if (!isfinite(strtod(want, NULL)))
			snprintf(want, sizeof want, "%.17g", nums[i]);
		if (json_number_value(v) != strtod(want, NULL))
			fail_msg("%.17g wrote %s, read back %.17g", nums[i], s,
			    json_number_value(v));
	}
	assert_memory_equal(s, "[0,0,0.9,0.1,0.333333333333333,-1,-0.5,", 39);
	for (i = 0; i < sizeof u / sizeof u[0]; i++) {
		v = json_array_get(j, sizeof nums / sizeof nums[0] + i);
		assert_true(json_is_integer(v));
		assert_true((uint64_t)json_integer_value(v) == u[i]);
	}
	json_decref(j);
	free(s);
}

/*
 * Numbers with a few decimals (scores, costs) are written without printf:
 * byte for byte what "%.15g" writes, for every decimal of up to six
 * places and for the numbers next to them, which that path refuses.
 */
static void
test_builder_numbers_decimal(void **state)
{
	static const double scale[] = { 1e-4, 1e-3, 0.01, 0.1, 1, 10, 1e3,
	    1e5, 1e8, 999999999.0 };
	struct jsonw	 w;
	char		*s, want[64];
	double		 v, near[3];
	size_t		 i, k, len;
	uint64_t	 r = 88172645463325252ULL;

	(void)state;
	for (i = 0; i < 200000; i++) {
		/* xorshift: the same values every run. */
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		switch (i % 4) {
		case 0:
			v = (double)(r % 1000000) / 1e6;
			break;
		case 1:
			v = (double)(r % 1000000000000000ULL) / 1e6;
			break;
		case 2:
			v = scale[r % 10] * (double)(r >> 40) / 16777216.0;
			break;
		default:
			v = -(double)(r % 100000000) / pow(10, (double)(r % 8));
		}
		near[0] = v;
		near[1] = nextafter(v, INFINITY);
		near[2] = nextafter(v, -INFINITY);
		for (k = 0; k < 3; k++) {
			if (near[k] == (double)(int64_t)near[k])
				continue;
			jsonw_init(&w);
			jsonw_num(&w, near[k]);
			s = jsonw_finish(&w, &len);
			snprintf(want, sizeof want, "%.15g", near[k]);
			if (strcmp(s, want) != 0)
				fail_msg("%.17g: wrote %s, %%.15g writes %s",
				    near[k], s, want);
			free(s);
		}
	}
}

/*
 * adapter_number: token counts and prices from a tool's output (any
 * number JSON holds, and their sums), as JSON numbers: whole ones as
 * integers, the rest as reals.  Huge ones must not go through an integer
 * conversion (undefined: clang's -fsanitize=float-cast-overflow stops).
 */
static void
test_adapter_number(void **state)
{
	static const double reals[] = { 0.25, -0.5, 1e300, -1e300, 9.3e18,
	    -9.3e18, 1e16, 1.7976931348623157e308 };
	json_t	*v;
	size_t	 i;

	v = adapter_number(12);
	assert_true(json_is_integer(v));
	assert_int_equal(json_integer_value(v), 12);
	json_decref(v);
	v = adapter_number(-4096);
	assert_true(json_is_integer(v));
	assert_int_equal(json_integer_value(v), -4096);
	json_decref(v);
	for (i = 0; i < sizeof reals / sizeof reals[0]; i++) {
		v = adapter_number(reals[i]);
		assert_true(json_is_real(v));
		assert_true(json_real_value(v) == reals[i]);
		json_decref(v);
	}
}

/* ---- Envelopes. ---- */

#define BASE	"\"protocol\":\"multiagent-1.0\",\"role\":\"agent\"," \
	"\"intent\":\"plan\",\"task\":\"t\",\"content\":{\"type\":\"text\"," \
	"\"text\":\"x\"}"

/* Valid envelopes of every shape the splicing code handles. */
static const char *const bases[] = {
	"{" BASE "}",
	"{" BASE ",\"trace\":{}}",
	"{" BASE ",\"trace\":{\"tags\":[\"a\"]}}",
	"{" BASE ",\"trace\":{\"parents\":[]}}",
	"{" BASE ",\"trace\":{\"id\":\"have\",\"parents\":[\"p0\"]},"
	    "\"timestamp\":\"2025-10-10T12:34:56Z\"}",
	"{" BASE ",\"corral\":{}}",
	"{" BASE ",\"corral\":{\"kind\":\"task\",\"retry_count\":1}}",
	"{\"tr\\u0061ce\":{\"p\\u0061rents\":[\"a\"]},\"corr\\u0061l\":{},"
	    BASE "}",
	"{ \"trace\" : { } , " BASE " , \"corral\" : { \"x\" : 1 } }",
};
#define NBASES	(sizeof bases / sizeof bases[0])

/* Long strings go into the first two shapes only: they cost time. */
#define SHAPES(h)	((h)->n > 4096 ? 2 : NBASES)

/* Scan and validate a base envelope (the callers' contract). */
static void
scan(const char *s, struct env *env)
{
	struct env_error	err;

	assert_int_equal(jscan_run(js, s, strlen(s)), 0);
	if (envelope_check(js, s, strlen(s), env, &err) != 0)
		fail_msg("base %s: %s", s, err.msg);
}

/*
 * Return nonzero if h may be a trace id in a valid envelope: 1 to 63
 * bytes once repaired, as corral's ids and the ids it reads are.  Other
 * strings still make valid JSON; the tests check that much for them.
 */
static int
id_ok(const struct hostile *h)
{
	char	*r;
	size_t	 n;

	if (!cstr(h))
		return 0;
	r = ref_repair(h->s, h->n, 0, &n);
	free(r);
	return n > 0 && n < CORRAL_ID_MAX;
}

/* Load what a splice made: a valid envelope when ok, JSON at least. */
static json_t *
load_spliced(const char *s, size_t n, int ok)
{
	return ok ? load_envelope(s, n) : load(s, n, 0);
}

/*
 * envelope_error: message, path and parent may quote a peer's bytes cut
 * anywhere (C strings); code, category and kind are corral's literals
 * (json_pack takes them as they are, so they must be UTF-8), here fed
 * hostile but valid UTF-8.
 */
static void
test_envelope_error_hostile(void **state)
{
	static const char *const cats[] = { "TIMEOUT", "UNAVAILABLE",
	    "REJECTED", "INTERNAL" };
	json_t	*j;
	char	*e;
	size_t	 i, len;

	for (i = 0; i < nall; i++) {
		if (!cstr(&all[i]))
			continue;
		e = envelope_error("agent_lost", cats[i % 4], all[i].s,
		    all[i].s, all[i].s, CORRAL_KIND_NOTICE, &len);
		assert_int_equal(strlen(e), len);
		j = load_envelope(e, len);
		assert_string_equal(json_string_value(jget(j,
		    "content.type")), "error");
		assert_repaired(jget(j, "content.text"), &all[i], 0, "text");
		assert_repaired(jget(j, "content.data.message"), &all[i], 0,
		    "message");
		if (all[i].n > 0) {
			assert_repaired(jget(j, "content.data.path"), &all[i],
			    0, "path");
			assert_repaired(jget(j, "trace.parents.0"), &all[i], 0,
			    "parent");
		} else {
			assert_null(jget(j, "content.data.path"));
			assert_null(jget(j, "trace.parents"));
		}
		assert_string_equal(json_string_value(jget(j,
		    "content.data.category")), cats[i % 4]);
		assert_true(json_is_boolean(jget(j, "content.data.retryable")));
		assert_string_equal(json_string_value(jget(j, "corral.kind")),
		    CORRAL_KIND_NOTICE);
		json_decref(j);
		free(e);
		if (!ref_valid(all[i].s, all[i].n))
			continue;
		/* Hostile but valid UTF-8 in the literal parameters. */
		e = envelope_error(all[i].s, all[i].s, NULL, "m", NULL,
		    all[i].s, &len);
		j = load(e, len, 0);
		assert_repaired(jget(j, "content.data.code"), &all[i], 0,
		    "code");
		assert_repaired(jget(j, "content.data.category"), &all[i], 0,
		    "category");
		assert_repaired(jget(j, "corral.kind"), &all[i], 0, "kind");
		json_decref(j);
		free(e);
	}
}

/*
 * envelope_fill: the id and the parent (corral's own ids, or ids read
 * from envelopes: C strings) into every shape of trace.
 */
static void
test_envelope_fill_hostile(void **state)
{
	struct env	 env;
	json_t		*j;
	char		*out;
	size_t		 i, b, len;
	int		 has_id, has_parents;

	for (b = 0; b < NBASES; b++) {
		for (i = 0; i < nall; i++) {
			if (!cstr(&all[i]) || b >= SHAPES(&all[i]))
				continue;
			scan(bases[b], &env);
			has_id = env.trace_id != -1;
			has_parents = env.parents != -1;
			out = envelope_fill(js, bases[b], strlen(bases[b]), &env,
			    all[i].s, all[i].s, &len);
			if (has_id && has_parents && env.timestamp != -1) {
				/* Nothing missing: nothing copied. */
				assert_null(out);
				continue;
			}
			assert_non_null(out);
			j = load_spliced(out, len, id_ok(&all[i]));
			if (!has_id)
				assert_repaired(jget(j, "trace.id"), &all[i], 0,
				    "trace.id");
			if (!has_parents)
				assert_repaired(jget(j, "trace.parents.0"),
				    &all[i], 0, "trace.parents");
			assert_true(json_is_string(jget(j, "timestamp")));
			json_decref(j);
			free(out);
		}
	}
}

/*
 * envelope_reflect: the new id, the reply's id and its intent (corral
 * passes an intent name; fed hostile here all the same).
 */
static void
test_envelope_reflect_hostile(void **state)
{
	struct env	 env;
	json_t		*j;
	char		*out;
	size_t		 i, b, len;

	for (b = 0; b < NBASES; b++) {
		for (i = 0; i < nall; i++) {
			if (!cstr(&all[i]) || b >= SHAPES(&all[i]))
				continue;
			scan(bases[b], &env);
			out = envelope_reflect(js, bases[b], strlen(bases[b]),
			    &env, all[i].s, all[i].s, all[i].s, 7, &len);
			j = load_spliced(out, len, id_ok(&all[i]));
			assert_string_equal(json_string_value(json_object_get(j,
			    "intent")), "reflect");
			assert_repaired(jget(j, "trace.id"), &all[i], 0,
			    "trace.id");
			assert_repaired(jget(j, "trace.parents.0"), &all[i], 0,
			    "trace.parents");
			assert_int_equal(json_array_size(jget(j,
			    "trace.parents")), 1);
			assert_repaired(jget(j, "corral.reflect.of"), &all[i],
			    0, "reflect.of");
			assert_repaired(jget(j, "corral.reflect.intent"),
			    &all[i], 0, "reflect.intent");
			assert_int_equal(json_integer_value(jget(j,
			    "corral.reflect.round")), 7);
			json_decref(j);
			free(out);
		}
	}
}

/*
 * envelope_action: a request from one next_actions entry.  The task,
 * args and context are spans of a reply that passed the scanner (so its
 * strings are valid JSON; the reply is built here with the writer, from
 * hostile text), the ids are C strings.
 */
static void
test_envelope_action_hostile(void **state)
{
	struct env	 env;
	struct jsonw	 w;
	json_t		*j;
	char		*reply, *out;
	const char	*ctx;
	size_t		 i, len, rlen;
	int		 act, c;

	for (i = 0; i < nall; i++) {
		if (!cstr(&all[i]))
			continue;
		jsonw_init(&w);
		jsonw_object(&w);
		jsonw_key(&w, "protocol");
		jsonw_str(&w, "multiagent-1.0");
		jsonw_key(&w, "role");
		jsonw_str(&w, "agent");
		jsonw_key(&w, "intent");
		jsonw_str(&w, "plan");
		jsonw_key(&w, "task");
		jsonw_strn(&w, all[i].s, all[i].n);
		jsonw_key(&w, "content");
		jsonw_object(&w);
		jsonw_key(&w, "type");
		jsonw_str(&w, "text");
		jsonw_key(&w, "text");
		jsonw_strn(&w, all[i].s, all[i].n);
		jsonw_object_end(&w);
		jsonw_key(&w, "outputs");
		jsonw_object(&w);
		jsonw_key(&w, "next_actions");
		jsonw_array(&w);
		jsonw_object(&w);
		jsonw_key(&w, "intent");
		jsonw_str(&w, "execute");
		jsonw_key(&w, "task");
		jsonw_strn(&w, all[i].s, all[i].n);
		jsonw_key(&w, "args");
		jsonw_object(&w);
		jsonw_key(&w, "q");
		jsonw_strn(&w, all[i].s, all[i].n);
		jsonw_object_end(&w);
		jsonw_object_end(&w);
		jsonw_array_end(&w);
		jsonw_object_end(&w);
		jsonw_object_end(&w);
		reply = jsonw_finish(&w, &rlen);
		scan(reply, &env);
		act = jscan_first(js, env.next_actions);
		c = jscan_get(js, reply, env.content, "text");
		ctx = reply + js->tok[c].off;
		out = envelope_action(js, reply, act, all[i].s, all[i].s, ctx,
		    js->tok[c].len, &len);
		j = load_spliced(out, len, id_ok(&all[i]));
		assert_repaired(json_object_get(j, "task"), &all[i], 0,
		    "task");
		assert_repaired(jget(j, "content.text"), &all[i], 0,
		    "content.text");
		assert_repaired(jget(j, "inputs.context"), &all[i], 0,
		    "inputs.context");
		assert_repaired(jget(j, "inputs.parameters.q"), &all[i], 0,
		    "inputs.parameters.q");
		assert_repaired(jget(j, "trace.id"), &all[i], 0, "trace.id");
		assert_repaired(jget(j, "trace.parents.0"), &all[i], 0,
		    "trace.parents");
		json_decref(j);
		free(out);
		free(reply);
	}
}

/*
 * envelope_mark, envelope_add_parent and envelope_corral_set.  The
 * member of envelope_mark and the raw value of envelope_corral_set are
 * JSON the caller built with the writer (from hostile text, here); the
 * key of envelope_corral_set is corral's literal (valid UTF-8, fed
 * hostile here); the parent id is a C string.
 */
static void
test_envelope_splices_hostile(void **state)
{
	struct env	 env;
	struct jsonw	 w;
	json_t		*j;
	char		*member, *out, *key;
	size_t		 i, b, len, mlen, kn;

	for (i = 0; i < nall; i++) {
		if (!cstr(&all[i]))
			continue;
		jsonw_init(&w);
		jsonw_object(&w);
		jsonw_key(&w, "kind");
		jsonw_str(&w, CORRAL_KIND_MESSAGE);
		jsonw_key(&w, "from");
		jsonw_strn(&w, all[i].s, all[i].n);
		jsonw_object_end(&w);
		member = jsonw_finish(&w, &mlen);
		key = ref_repair(all[i].s, all[i].n, 0, &kn);
		for (b = 0; b < SHAPES(&all[i]); b++) {
			scan(bases[b], &env);
			out = envelope_mark(js, bases[b], strlen(bases[b]),
			    member, &len);
			j = load_envelope(out, len);
			assert_repaired(jget(j, "corral.from"), &all[i], 0,
			    "corral.from");
			json_decref(j);
			free(out);

			scan(bases[b], &env);
			out = envelope_add_parent(js, bases[b],
			    strlen(bases[b]), &env, all[i].s, &len);
			j = load_spliced(out, len, id_ok(&all[i]) ||
			    all[i].n > 0);
			assert_repaired(jget(j, "trace.parents.0"), &all[i], 0,
			    "trace.parents.0");
			json_decref(j);
			free(out);

			/* A key already in "corral" is replaced, not doubled. */
			if (!ref_valid(all[i].s, all[i].n) || kn == 0 ||
			    strcmp(key, "x") == 0 || strcmp(key, "kind") == 0)
				continue;
			scan(bases[b], &env);
			out = envelope_corral_set(js, bases[b],
			    strlen(bases[b]), &env, all[i].s, member, &len);
			j = load_envelope(out, len);
			assert_repaired(json_object_get(json_object_get(
			    json_object_get(j, "corral"), key), "from"),
			    &all[i], 0, "corral.KEY.from");
			json_decref(j);
			free(out);
		}
		free(key);
		free(member);
	}
}

/*
 * envelope_goal: the goal comes from the command line, any bytes; one
 * that is not UTF-8 is refused (corral run says so and exits).  The
 * intent is the workflow's start: and the id corral's.
 */
static void
test_envelope_goal_hostile(void **state)
{
	json_t	*j;
	char	*g, why[256];
	size_t	 i, len;

	for (i = 0; i < nall; i++) {
		if (!cstr(&all[i]))
			continue;
		g = envelope_goal(all[i].s, NULL, NULL, "plan", &len, why,
		    sizeof why);
		if (!ref_valid(all[i].s, all[i].n)) {
			assert_null(g);
			continue;
		}
		assert_non_null(g);
		j = load_envelope(g, len);
		assert_repaired(json_object_get(j, "task"), &all[i], 0, "task");
		assert_repaired(jget(j, "content.text"), &all[i], 0,
		    "content.text");
		json_decref(j);
		free(g);
	}
}

/* ---- JSON-RPC frames. ---- */

/* Read every line written to fd; each must be one JSON-RPC frame. */
static json_t *
read_frames(int fd, struct chan *c)
{
	static char	 buf[1 << 20];
	size_t		 len = 0;
	ssize_t		 n;
	json_t		*frames = json_array();
	char		*p, *nl;

	chan_flush_all();
	while ((n = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
		len += (size_t)n;
	assert_true(c->wr == NULL || ndjson_queue_len(c->wr) == 0);
	for (p = buf; (nl = memchr(p, '\n', (size_t)(buf + len - p))) != NULL;
	    p = nl + 1) {
		json_array_append_new(frames, load(p, (size_t)(nl - p), 0));
	}
	assert_ptr_equal(p, buf + len);
	return frames;
}

/*
 * rpc_error's message may quote a peer's bytes (a C string), and so may
 * its details (built with jsonw_text); the category follows from the
 * code; the id is whatever JSON the peer sent, echoed as it came.
 * rpc_reply's result is built by the caller with jansson (strings from
 * peers through jsonw_text).
 */
static void
test_rpc_hostile(void **state)
{
	struct chan	 c;
	struct peer	 p;
	json_t		*frames, *id, *f;
	int		 fds[2];
	size_t		 i;

	assert_int_equal(pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
	(void)fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);
	chan_init(&c, "test", -1, fds[1], 1 << 20, NULL);
	memset(&p, 0, sizeof p);
	p.name = "test";
	p.chan = &c;
	p.role = PEER_CLIENT;
	for (i = 0; i < nall; i++) {
		if (!cstr(&all[i]))
			continue;
		switch (i % 4) {
		case 0:
			id = jsonw_text(all[i].s, all[i].n);
			break;
		case 1:
			id = json_integer((json_int_t)i - 1000);
			break;
		case 2:
			id = json_real(0.5 + (double)i);
			break;
		default:
			id = json_null();
			break;
		}
		rpc_error(&p, id, CORRAL_E_PARAMS, all[i].s, json_pack("{s:o}",
		    "reason", jsonw_text(all[i].s, all[i].n)));
		rpc_reply(&p, id, json_pack("{s:o, s:[o]}", "text",
		    jsonw_text(all[i].s, all[i].n), "list",
		    jsonw_text(all[i].s, all[i].n)));
		frames = read_frames(fds[0], &c);
		assert_int_equal(json_array_size(frames), 2);
		f = json_array_get(frames, 0);
		assert_string_equal(json_string_value(json_object_get(f,
		    "jsonrpc")), "2.0");
		assert_true(json_equal(json_object_get(f, "id"), id));
		assert_int_equal(json_integer_value(jget(f, "error.code")),
		    CORRAL_E_PARAMS);
		assert_repaired(jget(f, "error.message"), &all[i], 0,
		    "error.message");
		assert_string_equal(json_string_value(jget(f,
		    "error.data.category")), "protocol");
		assert_repaired(jget(f, "error.data.details.reason"), &all[i],
		    1, "error.data.details.reason");
		f = json_array_get(frames, 1);
		assert_true(json_equal(json_object_get(f, "id"), id));
		assert_repaired(jget(f, "result.text"), &all[i], 1,
		    "result.text");
		assert_repaired(jget(f, "result.list.0"), &all[i], 1,
		    "result.list.0");
		json_decref(frames);
		json_decref(id);
	}
	chan_close(&c);
	close(fds[0]);
}

/* ---- The audit log. ---- */

/*
 * Every kind of audit line with hostile ids and values: auditlog_event
 * (values: C strings), auditlog_envelope (a line that passed the
 * scanner), auditlog_fields (an object built with the writer),
 * auditlog_json (jansson), and the workflow path of run_start (a file
 * name: any bytes).  Event names and keys are literals, and agent ids
 * are workflow names (letters, digits, '_', '-') with an instance or
 * child number: the log writes those unescaped, by contract.
 */
static void
test_auditlog_hostile(void **state)
{
	struct jsonw	 w;
	json_t		*j;
	FILE		*f;
	char		 path[] = "/tmp/corral-unit-jsonw.XXXXXX", *line = NULL;
	char		*obj, *env;
	size_t		 i, cap = 0, nlines = 0, len, ev, elen;
	ssize_t		 n;
	int		 fd;
	const struct hostile *h;

	assert_true((fd = mkstemp(path)) != -1);
	close(fd);
	assert_int_equal(auditlog_open(path, "/work/wf\xff\n\"\\.yaml"), 0);
	for (i = 0; i < nall; i++) {
		h = &all[i];
		if (!cstr(h))
			continue;
		auditlog_event("outcome", "worker.1", h->s, "outcome",
		    "replied", "reason", h->s, "skipped", NULL, "after", h->s,
		    NULL);
		jsonw_init(&w);
		jsonw_object(&w);
		jsonw_key(&w, "path");
		jsonw_strn(&w, h->s, h->n);
		jsonw_key(&w, "depth");
		jsonw_u64(&w, i);
		jsonw_object_end(&w);
		obj = jsonw_finish(&w, &len);
		auditlog_fields("edge", "helper-7", h->s, obj, len);
		free(obj);
		env = envelope_error("x", "INTERNAL", h->s, h->s, h->s, NULL,
		    &elen);
		auditlog_envelope("error", NULL, h->s, env, elen);
		free(env);
		auditlog_json("spawn", "planner", json_pack("{s:o}", "why",
		    jsonw_text(h->s, h->n)));
	}
	auditlog_close();

	assert_non_null(f = fopen(path, "r"));
	ev = 0;
	while ((n = getline(&line, &cap, f)) > 0) {
		assert_int_equal(line[n - 1], '\n');
		j = load(line, (size_t)n - 1, 0);
		assert_true(json_is_integer(json_object_get(j, "seq")));
		assert_true(json_is_number(json_object_get(j, "t")));
		if (nlines == 0) {
			assert_string_equal(json_string_value(json_object_get(j,
			    "ev")), "run_start");
			assert_string_equal(json_string_value(json_object_get(j,
			    "workflow")), "/work/wf\xef\xbf\xbd\n\"\\.yaml");
		} else {
			/* Four lines per string, in order. */
			while (!cstr(&all[ev]))
				ev++;
			h = &all[ev];
			assert_repaired(json_object_get(j, "id") != NULL ?
			    json_object_get(j, "id") : jget(j, "why"), h, 0,
			    "id");
			switch ((nlines - 1) % 4) {
			case 0:
				assert_repaired(json_object_get(j, "reason"), h,
				    0, "reason");
				assert_repaired(json_object_get(j, "after"), h,
				    0, "after");
				assert_null(json_object_get(j, "skipped"));
				break;
			case 1:
				assert_repaired(json_object_get(j, "path"), h,
				    0, "path");
				break;
			case 2:
				assert_repaired(jget(j, "env.content.data."
				    "message"), h, 0, "env message");
				break;
			default:
				assert_repaired(json_object_get(j, "why"), h,
				    0, "why");
				ev++;
				break;
			}
		}
		json_decref(j);
		nlines++;
	}
	free(line);
	fclose(f);
	unlink(path);
	for (i = 0, len = 0; i < nall; i++)
		len += cstr(&all[i]);
	assert_int_equal(nlines, 1 + 4 * len);
}

/*
 * A tree holding the largest doubles (a peer's, copied whole) dumps as
 * JSON that reads back, each real within 15 digits, and is unchanged.
 */
static void
test_dumps_largest_reals(void **state)
{
	static const char	 in[] = "{\"a\":1.7976931348623157e308,"
	    "\"b\":[-1.7976931348623157e308,0.9],\"c\":{\"d\":1e308}}";
	json_t			*j, *back;
	json_error_t		 e;
	char			*s, buf[256];
	size_t			 n;
	int			 fd[2];
	ssize_t			 r;

	(void)state;
	j = json_loads(in, 0, &e);
	assert_non_null(j);
	/* jansson alone writes a number past DBL_MAX, which it refuses. */
	s = json_dumps(j, CORRAL_JSON_FLAGS);
	assert_null(json_loads(s, 0, &e));
	free(s);
	s = jsonw_dumps(j, CORRAL_JSON_FLAGS);
	back = json_loads(s, CORRAL_JSON_LOAD, &e);
	assert_non_null(back);
	assert_true(json_real_value(json_object_get(back, "a")) > 1.7976e308);
	assert_true(json_real_value(json_array_get(json_object_get(back,
	    "b"), 0)) < -1.7976e308);
	assert_non_null(strstr(s, "0.9]"));
	assert_non_null(strstr(s, "\"d\":1e308"));
	json_decref(back);
	/* The tree itself keeps what the peer sent. */
	assert_true(json_real_value(json_object_get(j, "a")) == DBL_MAX);
	n = jsonw_dumpb(j, buf, sizeof buf, CORRAL_JSON_FLAGS);
	assert_true(n > 0 && n < sizeof buf);
	assert_int_equal(n, strlen(s));
	assert_memory_equal(buf, s, n);
	assert_int_equal(pipe(fd), 0);
	assert_int_equal(jsonw_dumpfd(j, fd[1], CORRAL_JSON_FLAGS), 0);
	close(fd[1]);
	r = read(fd[0], buf, sizeof buf);
	close(fd[0]);
	assert_int_equal((size_t)r, n);
	assert_memory_equal(buf, s, n);
	free(s);
	/* With all 17 digits nothing rounds past DBL_MAX: nothing clamped. */
	s = jsonw_dumps(j, JSON_COMPACT);
	back = json_loads(s, 0, &e);
	assert_non_null(back);
	assert_true(json_real_value(json_object_get(back, "a")) == DBL_MAX);
	json_decref(back);
	free(s);
	json_decref(j);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_string_escaping),
		cmocka_unit_test(test_json_string_exact_output),
		cmocka_unit_test(test_json_plain_every_byte),
		cmocka_unit_test(test_string_hostile),
		cmocka_unit_test(test_text_hostile),
		cmocka_unit_test(test_builder_hostile),
		cmocka_unit_test(test_builder_numbers),
		cmocka_unit_test(test_builder_numbers_decimal),
		cmocka_unit_test(test_adapter_number),
		cmocka_unit_test(test_envelope_error_hostile),
		cmocka_unit_test(test_envelope_fill_hostile),
		cmocka_unit_test(test_envelope_reflect_hostile),
		cmocka_unit_test(test_envelope_action_hostile),
		cmocka_unit_test(test_envelope_splices_hostile),
		cmocka_unit_test(test_envelope_goal_hostile),
		cmocka_unit_test(test_rpc_hostile),
		cmocka_unit_test(test_auditlog_hostile),
		cmocka_unit_test(test_dumps_largest_reals),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
