/*
 * Unit tests of the JSON scanner (src/jscan.c).
 *
 * corral promises (docs/protocol.md) that a line is accepted exactly when
 * jansson's json_loadb(..., JSON_REJECT_DUPLICATES) accepts it.  Every
 * table case states the expected verdict and is also run through jansson,
 * so a case fails when either side disagrees.  A differential test then
 * compares the two on tens of thousands of generated and mutated
 * documents, and checks the token tape of every accepted one against the
 * tree jansson builds.
 *
 * Every test runs once per path the machine has (the reference scanner,
 * byte by byte; SSE2; AVX2): verdicts come from that path alone, without
 * the reference scanner's second look at a refused line, and every tape a
 * SIMD path records is compared with the reference scanner's.
 *
 * One known difference is excluded from the differential test: jansson
 * 2.14 silently skips a NUL byte that directly follows a number or a
 * literal ("[1\0]" loads as [1]; its stream_unget loses the NUL).  corral
 * never hands such a line to the scanner (the line reader rejects NUL
 * bytes first) and the scanner rejects it, which the tests assert.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "corral.h"

#define TAPE_LEVEL	64	/* deep enough to record every test document */

static enum jscan_path	test_path;	/* the path under test */

/* A growable byte buffer for building documents. */
struct buf {
	char	*p;
	size_t	 n;
	size_t	 cap;
};

/* Append n bytes to a buffer. */
static void
buf_add(struct buf *b, const void *data, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		b->cap = (b->n + n + 1) * 2;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	memcpy(b->p + b->n, data, n);
	b->n += n;
	b->p[b->n] = '\0';
}

/* Append a C string to a buffer. */
static void
buf_str(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

/* Append one byte, repeated count times. */
static void
buf_rep(struct buf *b, char c, size_t count)
{
	while (count-- > 0)
		buf_add(b, &c, 1);
}

/* Return 1 if jansson accepts the bytes the way corral configures it. */
static int
jansson_accepts(const char *s, size_t n)
{
	json_error_t	 e;
	json_t		*j;

	j = json_loadb(s, n, JSON_REJECT_DUPLICATES, &e);
	if (j == NULL)
		return 0;
	json_decref(j);
	return 1;
}

/*
 * Return nonzero if the reference scanner, given the same bytes, refuses
 * them too or records exactly js's tape.
 */
static int
same_as_reference(struct jscan *js, const char *s, size_t n, int got)
{
	static struct jscan	*ref;
	uint32_t		 i;

	if (test_path == JSCAN_SCALAR)
		return 1;
	if (ref == NULL || ref->maxlevel != js->maxlevel) {
		jscan_free(ref);
		ref = jscan_create(js->maxlevel);
	}
	if ((jscan_run_path(ref, s, n, JSCAN_SCALAR) == 0) != got)
		return 0;
	if (!got)
		return 1;
	if (ref->ntok != js->ntok || ref->nvals != js->nvals)
		return 0;
	for (i = 0; i < js->ntok; i++) {
		if (ref->tok[i].off != js->tok[i].off ||
		    ref->tok[i].len != js->tok[i].len ||
		    ref->tok[i].next != js->tok[i].next ||
		    ref->tok[i].type != js->tok[i].type ||
		    ref->tok[i].flags != js->tok[i].flags)
			return 0;
	}
	return 1;
}

/*
 * Return 1 if the path under test accepts the bytes; fail the test if its
 * verdict or tape differs from the reference scanner's.
 */
static int
jscan_accepts(struct jscan *js, const char *s, size_t n)
{
	int	got = jscan_run_path(js, s, n, test_path) == 0;

	if (!same_as_reference(js, s, n, got))
		fail_msg("the %s path %s %zu bytes unlike the reference "
		    "scanner: \"%.*s\"", jscan_path_name(test_path), got ?
		    "accepts" : "rejects", n, (int)(n < 200 ? n : 200), s);
	return got;
}

/* Print bytes in hex (and printable form) for a failure report. */
static void
print_hex(const char *what, const char *s, size_t n)
{
	size_t	i;

	print_message("%s (%zu bytes):\n", what, n);
	for (i = 0; i < n; i++) {
		print_message("%02x%s", (unsigned char)s[i],
		    (i % 32 == 31 || i + 1 == n) ? "\n" : " ");
	}
	print_message("as text: ");
	for (i = 0; i < n && i < 400; i++) {
		unsigned char c = (unsigned char)s[i];
		print_message("%c", c >= 0x20 && c < 0x7f ? c : '.');
	}
	print_message("\n");
}

/* One table case: bytes and whether they are valid JSON for corral. */
struct jcase {
	const char	*name;
	const char	*text;
	size_t		 len;
	int		 valid;
};
#define OK(name, lit)	{ name, lit, sizeof(lit) - 1, 1 }
#define BAD(name, lit)	{ name, lit, sizeof(lit) - 1, 0 }

static const struct jcase jcases[] = {
	/* Structure and whitespace. */
	OK("empty object", "{}"),
	OK("empty array", "[]"),
	OK("whitespace everywhere", " \t\r\n{ \"a\" \t: [ 1 ,\r\n 2 ] } \n"),
	OK("CRLF after the value", "[1]\r\n"),
	OK("nested containers", "{\"a\":[{\"b\":[[],{}]},null]}"),
	OK("literals", "[true,false,null]"),
	BAD("nothing", ""),
	BAD("only whitespace", " \t\r\n"),
	BAD("form feed is not whitespace", "[1]\f"),
	BAD("vertical tab is not whitespace", "\v[1]"),
	BAD("byte order mark", "\xef\xbb\xbf[1]"),
	BAD("unclosed object", "{"),
	BAD("unclosed array", "["),
	BAD("array cut after comma", "[1,"),
	BAD("object cut after key", "{\"a\""),
	BAD("object cut after colon", "{\"a\":"),
	BAD("object cut after value", "{\"a\":1"),
	BAD("trailing comma in array", "[1,]"),
	BAD("leading comma in array", "[,1]"),
	BAD("lone comma in object", "{,}"),
	BAD("trailing comma in object", "{\"a\":1,}"),
	BAD("missing colon", "{\"a\" 1}"),
	BAD("number as key", "{1:2}"),
	BAD("bare word key", "{a:2}"),
	BAD("missing comma between members", "{\"a\":1 \"b\":2}"),
	BAD("missing comma between elements", "[1 2]"),
	BAD("trailing garbage", "[1]x"),
	BAD("two documents", "[1] [2]"),
	BAD("extra closing brace", "{}}"),
	BAD("extra closing bracket", "[]]"),
	BAD("mismatched brackets", "[}"),
	BAD("mismatched braces", "{]"),
	BAD("single quotes", "['a']"),
	BAD("comment", "[1 /* c */]"),
	/* Top-level scalars are refused, as without JSON_DECODE_ANY. */
	BAD("top-level number", "1"),
	BAD("top-level string", "\"a\""),
	BAD("top-level true", "true"),
	BAD("top-level null", " null "),
	/* Escapes. */
	OK("all simple escapes", "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"]"),
	OK("unicode escapes", "[\"\\u00e9\\u20AC\\uFFFF\"]"),
	OK("escaped control character", "[\"\\u0001\\u001f\"]"),
	OK("surrogate pair", "[\"\\ud83d\\ude00\"]"),
	OK("surrogate pair upper case", "[\"\\uD83D\\uDE00\"]"),
	OK("highest surrogate pair", "[\"\\udbff\\udfff\"]"),
	BAD("unknown escape", "[\"\\x41\"]"),
	BAD("escaped single quote", "[\"\\'\"]"),
	BAD("escape a", "[\"\\a\"]"),
	BAD("capital U escape", "[\"\\U0041\"]"),
	BAD("short unicode escape", "[\"\\u12\"]"),
	BAD("non-hex unicode escape", "[\"\\u12G4\"]"),
	BAD("unicode escape cut by end", "[\"\\u00"),
	BAD("backslash before end quote only", "[\"\\\"]"),
	BAD("lone high surrogate", "[\"\\ud800\"]"),
	BAD("lone low surrogate", "[\"\\udc00\"]"),
	BAD("high surrogate then letter", "[\"\\ud800x\"]"),
	BAD("high surrogate then BMP escape", "[\"\\ud800\\u0041\"]"),
	BAD("two high surrogates", "[\"\\ud800\\ud800\"]"),
	BAD("reversed surrogate pair", "[\"\\ude00\\ud83d\"]"),
	BAD("high surrogate then simple escape", "[\"\\ud800\\n\"]"),
	BAD("high surrogate then bad escape", "[\"\\ud800\\uzzzz\"]"),
	BAD("escaped NUL", "[\"\\u0000\"]"),
	BAD("escaped NUL in key", "{\"\\u0000\":1}"),
	BAD("escaped NUL after text", "[\"ab\\u0000\"]"),
	/* UTF-8. */
	OK("two-byte UTF-8", "[\"\xc3\xa9\"]"),
	OK("three-byte UTF-8", "[\"\xe2\x82\xac\"]"),
	OK("four-byte UTF-8", "[\"\xf0\x9f\x98\x80\"]"),
	OK("U+D7FF", "[\"\xed\x9f\xbf\"]"),
	OK("U+E000", "[\"\xee\x80\x80\"]"),
	OK("U+FFFF", "[\"\xef\xbf\xbf\"]"),
	OK("U+10FFFF", "[\"\xf4\x8f\xbf\xbf\"]"),
	OK("DEL is allowed raw", "[\"\x7f\"]"),
	OK("UTF-8 key", "{\"\xc3\xa9\":1}"),
	BAD("lone continuation byte", "[\"\x80\"]"),
	BAD("continuation byte BF", "[\"\xbf\"]"),
	BAD("overlong slash C0 AF", "[\"\xc0\xaf\"]"),
	BAD("overlong C1 BF", "[\"\xc1\xbf\"]"),
	BAD("overlong three bytes", "[\"\xe0\x80\xaf\"]"),
	BAD("overlong three bytes max", "[\"\xe0\x9f\xbf\"]"),
	BAD("overlong four bytes", "[\"\xf0\x80\x80\xaf\"]"),
	BAD("overlong four bytes max", "[\"\xf0\x8f\xbf\xbf\"]"),
	BAD("UTF-8 surrogate D800", "[\"\xed\xa0\x80\"]"),
	BAD("UTF-8 surrogate DFFF", "[\"\xed\xbf\xbf\"]"),
	BAD("UTF-8 surrogate pair", "[\"\xed\xa0\xbd\xed\xb8\x80\"]"),
	BAD("beyond U+10FFFF", "[\"\xf4\x90\x80\x80\"]"),
	BAD("F5 lead byte", "[\"\xf5\x80\x80\x80\"]"),
	BAD("FE byte", "[\"\xfe\"]"),
	BAD("FF byte", "[\"\xff\"]"),
	BAD("truncated two-byte", "[\"\xc3\"]"),
	BAD("truncated three-byte", "[\"\xe2\x82\"]"),
	BAD("truncated four-byte", "[\"\xf0\x9f\x98\"]"),
	BAD("truncated at end of input", "[\"\xc3"),
	BAD("bad second byte", "[\"\xc3\x28\"]"),
	BAD("bad third byte", "[\"\xe2\x82\x28\"]"),
	BAD("invalid UTF-8 in key", "{\"\x80\":1}"),
	BAD("UTF-8 outside a string", "[\xc3\xa9]"),
	BAD("UTF-8 after the value", "[1]\xc3\xa9"),
	BAD("invalid UTF-8 after the value", "[1]\xff"),
	/* Control characters. */
	BAD("raw 0x01 in string", "[\"\x01\"]"),
	BAD("raw 0x1f in string", "[\"\x1f\"]"),
	BAD("raw newline in string", "[\"a\nb\"]"),
	BAD("raw tab in string", "[\"\t\"]"),
	BAD("raw tab in key", "{\"a\tb\":1}"),
	/* Numbers. */
	OK("zero", "[0]"),
	OK("negative zero", "[-0]"),
	OK("fraction", "[0.5]"),
	OK("exponent", "[1e5]"),
	OK("exponent with plus", "[1E+5]"),
	OK("negative exponent", "[-1.5e-10]"),
	OK("zero with exponent", "[0e5]"),
	OK("zero with huge exponent", "[0e999999]"),
	OK("real with integral value", "[1.0]"),
	OK("long real", "[100000000000000000000.0]"),
	OK("long mantissa with exponent", "[12345678901234567890e-5]"),
	OK("INT64_MAX", "[9223372036854775807]"),
	OK("INT64_MIN", "[-9223372036854775808]"),
	OK("DBL_MAX", "[1.7976931348623157e308]"),
	OK("minus DBL_MAX", "[-1.7976931348623157e308]"),
	OK("rounds down to DBL_MAX", "[1.7976931348623158e308]"),
	OK("DBL_MAX spelled 0.1e309", "[0.17976931348623157e309]"),
	OK("DBL_MAX spelled with many digits",
	    "[179769313486231570000000000000000000000000000000000000000000000000"
	    "00000000000000000000000000000000000000000000000000000000000000000000"
	    "00000000000000000000000000000000000000000000000000000000000000000000"
	    "00000000000000000000000000000000000000000000000000000000000000000000"
	    "00000000000000000000000000000000000000.0]"),
	OK("underflow is fine", "[1e-400]"),
	OK("tiny with many zeros",
	    "[0.00000000000000000000000000000000000000000000000000000001]"),
	OK("huge exponent on tiny value",
	    "[0.000000000000000000000000000000000000001e340]"),
	BAD("leading zero", "[01]"),
	BAD("negative leading zero", "[-01]"),
	BAD("double zero", "[00]"),
	BAD("minus alone", "[-]"),
	BAD("minus then letter", "[-a]"),
	BAD("dot without fraction", "[1.]"),
	BAD("exponent without digits", "[1e]"),
	BAD("exponent sign without digits", "[1e+]"),
	BAD("fraction then bare exponent", "[1.5e]"),
	BAD("dot before exponent", "[1.e5]"),
	BAD("leading dot", "[.5]"),
	BAD("leading plus", "[+1]"),
	BAD("hexadecimal", "[0x10]"),
	BAD("Infinity", "[Infinity]"),
	BAD("minus Infinity", "[-Infinity]"),
	BAD("NaN", "[NaN]"),
	BAD("digits then letter", "[1a]"),
	BAD("double minus", "[--1]"),
	BAD("two dots", "[1..2]"),
	BAD("double exponent", "[1ee5]"),
	BAD("INT64_MAX + 1", "[9223372036854775808]"),
	BAD("INT64_MIN - 1", "[-9223372036854775809]"),
	BAD("twenty-digit integer", "[99999999999999999999]"),
	BAD("just above DBL_MAX", "[1.7976931348623159e308]"),
	BAD("1e309", "[1e309]"),
	BAD("-1e309", "[-1e309]"),
	BAD("1.8e308", "[1.8e308]"),
	BAD("0.1e310", "[0.1e310]"),
	BAD("enormous exponent", "[1e99999999999999999999]"),
	BAD("tiny value times huge exponent",
	    "[0.000000000000000000000000000000000000001e400]"),
	BAD("four hundred digit integer part",
	    "[1000000000000000000000000000000000000000000000000000000000000000000"
	    "00000000000000000000000000000000000000000000000000000000000000000000"
	    "00000000000000000000000000000000000000000000000000000000000000000000"
	    "00000000000000000000000000000000000000000000000000000000000000000000"
	    "00000000000000000000000000000000000000000000000000000000000000000000"
	    "000000000000000000000000000000000000000000000000000000000000000.5]"),
	/* Literals. */
	BAD("literal run into letters", "[truex]"),
	BAD("short literal", "[tru]"),
	BAD("capitalised literal", "[True]"),
	BAD("truncated null", "[nul]"),
	BAD("null with extra l", "[nulll]"),
	BAD("falsey", "[falsey]"),
	BAD("literal then digit", "[true1]"),
	BAD("two literals", "[nullnull]"),
	BAD("literal then underscore", "[true_]"),
	BAD("t alone", "[t]"),
	BAD("fals", "{\"a\":fals}"),
	/* Duplicate keys. */
	OK("same key in sibling objects", "[{\"a\":1},{\"a\":1}]"),
	OK("same key at two depths", "{\"a\":{\"a\":1}}"),
	OK("key reused after inner object closed",
	    "{\"x\":{\"a\":1,\"b\":2},\"a\":3,\"b\":4}"),
	OK("keys differ by case", "{\"a\":1,\"A\":2}"),
	OK("keys differ by a space", "{\"a\":1,\"a \":2}"),
	OK("prefix keys", "{\"ab\":1,\"a\":2,\"b\":3}"),
	OK("escaped prefix key", "{\"\\u0061b\":1,\"a\":2}"),
	OK("escaped quote vs backslash", "{\"a\\\"\":1,\"a\\\\\":2}"),
	BAD("duplicate key", "{\"a\":1,\"a\":2}"),
	BAD("duplicate key, escaped second", "{\"a\":1,\"\\u0061\":2}"),
	BAD("duplicate key, escaped first", "{\"\\u0061\":1,\"a\":2}"),
	BAD("duplicate key, both escaped", "{\"\\u0061\":1,\"\\u0061\":2}"),
	BAD("duplicate key, different escapes", "{\"\\u0041\":1,\"\\u0041\":2}"),
	BAD("duplicate non-ASCII key", "{\"\xc3\xa9\":1,\"\\u00e9\":2}"),
	BAD("duplicate slash key", "{\"\\/\":1,\"/\":2}"),
	BAD("duplicate astral key", "{\"\xf0\x9f\x98\x80\":1,"
	    "\"\\ud83d\\ude00\":2}"),
	BAD("duplicate empty key", "{\"\":1,\"\":2}"),
	BAD("duplicate in nested object", "{\"x\":{\"a\":1,\"a\":2}}"),
	BAD("duplicate deep in array", "[[[{\"k\":[{\"z\":1,\"z\":2}]}]]]"),
	BAD("duplicate after nested object", "{\"a\":{\"b\":1},\"a\":2}"),
};

/* Each table case gets the stated verdict from jansson and from jscan. */
static void
test_table_matches_jansson(void **state)
{
	struct jscan	*js = jscan_create(TAPE_LEVEL);
	size_t		 i;
	int		 bad = 0, j, s;

	for (i = 0; i < sizeof jcases / sizeof jcases[0]; i++) {
		const struct jcase *c = &jcases[i];

		j = jansson_accepts(c->text, c->len);
		s = jscan_accepts(js, c->text, c->len);
		if (j != c->valid || s != c->valid) {
			print_message("case \"%s\": expected %s, jansson %s, "
			    "jscan %s (%s)\n", c->name, c->valid ? "valid" :
			    "invalid", j ? "accepts" : "rejects", s ?
			    "accepts" : "rejects", js->err ? js->err : "");
			print_hex("input", c->text, c->len);
			bad++;
		}
	}
	jscan_free(js);
	assert_int_equal(bad, 0);
}

/* A NUL byte anywhere makes a document invalid, even where jansson skips it. */
static void
test_nul_bytes_rejected(void **state)
{
	static const struct jcase nuls[] = {
		BAD("NUL after number", "[1\0]"),
		BAD("NUL after literal", "[true\0]"),
		BAD("NUL after value in object", "{\"a\":1\0}"),
		BAD("NUL in string", "[\"a\0\"]"),
		BAD("NUL in key", "{\"a\0\":1}"),
		BAD("NUL before the value", "\0[1]"),
		BAD("NUL after the value", "[1]\0"),
		BAD("NUL as a value", "[\0]"),
	};
	struct jscan	*js = jscan_create(TAPE_LEVEL);
	size_t		 i;

	for (i = 0; i < sizeof nuls / sizeof nuls[0]; i++) {
		if (jscan_accepts(js, nuls[i].text, nuls[i].len))
			fail_msg("jscan accepts %s", nuls[i].name);
	}
	jscan_free(js);
}

/* Build n containers nested around an optional scalar. */
static void
nest(struct buf *b, size_t n, int obj, const char *inner)
{
	size_t	i;

	b->n = 0;
	for (i = 0; i < n; i++)
		buf_str(b, obj ? "{\"k\":" : "[");
	buf_str(b, inner);
	for (i = 0; i < n; i++)
		buf_str(b, obj ? "}" : "]");
}

/*
 * Nesting: jansson counts every value's depth, so 2048 nested containers
 * are fine but a scalar inside them is value number 2049.
 */
static void
test_nesting_limit(void **state)
{
	static const struct {
		size_t		 n;
		int		 obj;
		const char	*inner;
		int		 valid;
	} cases[] = {
		{ 2047, 0, "", 1 }, { 2048, 0, "", 1 }, { 2049, 0, "", 0 },
		{ 2047, 0, "1", 1 }, { 2048, 0, "1", 0 }, { 2049, 0, "1", 0 },
		{ 2047, 0, "[]", 1 }, { 2048, 0, "[]", 0 },
		{ 2047, 1, "{}", 1 }, { 2048, 1, "{}", 0 },
		{ 2047, 1, "1", 1 }, { 2048, 1, "1", 0 },
		{ 2047, 1, "\"s\"", 1 }, { 2048, 1, "\"s\"", 0 },
		{ 100000, 0, "", 0 },
	};
	struct jscan	*js = jscan_create(TAPE_LEVEL);
	struct buf	 b = { 0 };
	size_t		 i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		nest(&b, cases[i].n, cases[i].obj, cases[i].inner);
		if (jansson_accepts(b.p, b.n) != cases[i].valid)
			fail_msg("jansson disagrees at %zu %s around '%s'",
			    cases[i].n, cases[i].obj ? "objects" : "arrays",
			    cases[i].inner);
		if (jscan_accepts(js, b.p, b.n) != cases[i].valid)
			fail_msg("jscan %s %zu %s around '%s'",
			    cases[i].valid ? "rejects" : "accepts", cases[i].n,
			    cases[i].obj ? "objects" : "arrays",
			    cases[i].inner);
	}
	/* Mixed nesting: 1024 arrays of objects, then one more value. */
	b.n = 0;
	for (i = 0; i < 1024; i++)
		buf_str(&b, "[{\"k\":");
	buf_str(&b, "[]");
	for (i = 0; i < 1024; i++)
		buf_str(&b, "}]");
	assert_int_equal(jansson_accepts(b.p, b.n), 0);
	assert_int_equal(jscan_accepts(js, b.p, b.n), 0);
	free(b.p);
	jscan_free(js);
}

/* Build "[" pre, count copies of fill, post "]". */
static void
long_number(struct buf *b, const char *pre, char fill, size_t count,
    const char *post)
{
	b->n = 0;
	buf_str(b, "[");
	buf_str(b, pre);
	buf_rep(b, fill, count);
	buf_str(b, post);
	buf_str(b, "]");
}

/*
 * Reals whose mantissa has very many digits: the magnitude is digits plus
 * exponent, so a huge exponent must not be cut short.  A 200 kB number
 * fits easily in a 1 MiB line.
 */
static void
test_long_mantissa_with_large_exponent(void **state)
{
	static const struct {
		const char	*pre;
		char		 fill;
		size_t		 count;
		const char	*post;
		int		 valid;
	} cases[] = {
		/* 1e200000 * 1e-1000000 underflows to 0: valid. */
		{ "1", '0', 200000, "e-1000000", 1 },
		/* 1e-200001 * 1e1000000 overflows. */
		{ "0.", '0', 200000, "1e1000000", 0 },
		/* 1e-400001 * 1e4000000 overflows. */
		{ "0.", '0', 400000, "1e4000000", 0 },
		/* 1e-200001 * 1e200100 is 1e99: valid. */
		{ "0.", '0', 200000, "1e200100", 1 },
		/* 1e400 * 1e-100 is 1e300: valid. */
		{ "1", '0', 400, ".0e-100", 1 },
		/* 1e400 * 1e-50 is 1e350: overflows. */
		{ "1", '0', 400, ".0e-50", 0 },
		/* Exponent written with many leading zeros. */
		{ "1e", '0', 100000, "309", 0 },
		{ "1e-", '0', 100000, "309", 1 },
		{ "1e", '0', 100000, "308", 1 },
		/*
		 * No exponent: a real of at most 308 characters is below
		 * 1e308 and takes a shorter way; longer ones the full check.
		 */
		{ "9", '9', 305, ".9", 1 },		/* 308 characters */
		{ "-9", '9', 305, ".9", 1 },
		{ "1", '0', 308, ".5", 1 },		/* 1e308 */
		{ "1", '7', 308, ".0", 1 },		/* 1.77e308 */
		{ "1", '8', 308, ".0", 0 },		/* 1.88e308 */
		{ "2", '0', 308, ".0", 0 },		/* 2e308 */
		{ "-2", '0', 308, ".0", 0 },
		{ "0.", '0', 400, "1", 1 },
	};
	struct jscan	*js = jscan_create(4);
	struct buf	 b = { 0 };
	size_t		 i;
	int		 bad = 0;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		long_number(&b, cases[i].pre, cases[i].fill, cases[i].count,
		    cases[i].post);
		assert_int_equal(jansson_accepts(b.p, b.n), cases[i].valid);
		if (jscan_accepts(js, b.p, b.n) != cases[i].valid) {
			print_message("jscan %s [%s<%zu x '%c'>%s] (%s)\n",
			    cases[i].valid ? "rejects" : "accepts",
			    cases[i].pre, cases[i].count, cases[i].fill,
			    cases[i].post, js->err ? js->err : "");
			bad++;
		}
	}
	free(b.p);
	jscan_free(js);
	assert_int_equal(bad, 0);
}

/* Build an object of n distinct keys, then maybe one repeated spelling. */
static void
many_keys(struct buf *b, size_t n, const char *extra)
{
	char	key[64];
	size_t	i;

	b->n = 0;
	buf_str(b, "{");
	for (i = 0; i < n; i++) {
		snprintf(key, sizeof key, "%s\"key%zu\":%zu", i ? "," : "", i, i);
		buf_str(b, key);
	}
	if (extra != NULL) {
		buf_str(b, ",");
		buf_str(b, extra);
	}
	buf_str(b, "}");
}

/* Objects with more than 12 keys take the hash path; it must find duplicates. */
static void
test_duplicate_keys_in_large_objects(void **state)
{
	static const struct {
		size_t		 n;
		const char	*extra;
		int		 valid;
	} cases[] = {
		{ 12, NULL, 1 },
		{ 13, NULL, 1 },
		{ 1000, NULL, 1 },
		{ 12, "\"key0\":0", 0 },		/* 13 keys: first hashed */
		{ 13, "\"key12\":0", 0 },
		{ 40, "\"key39\":0", 0 },
		{ 40, "\"key0\":0", 0 },
		{ 40, "\"\\u006bey7\":0", 0 },		/* escaped k */
		{ 40, "\"key\\u0031\\u0035\":0", 0 },	/* key15 */
		{ 40, "\"key40\":0", 1 },
		{ 40, "\"\\u006bey40\":0", 1 },
		{ 40, "\"key\":0", 1 },
		{ 40, "\"key1 \":0", 1 },
		{ 5000, "\"key4321\":0", 0 },
	};
	struct jscan	*js = jscan_create(TAPE_LEVEL);
	struct buf	 b = { 0 }, outer = { 0 };
	size_t		 i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		many_keys(&b, cases[i].n, cases[i].extra);
		assert_int_equal(jansson_accepts(b.p, b.n), cases[i].valid);
		if (jscan_accepts(js, b.p, b.n) != cases[i].valid)
			fail_msg("jscan %s %zu keys plus %s",
			    cases[i].valid ? "rejects" : "accepts", cases[i].n,
			    cases[i].extra);
		/* The same object deep inside an array, beyond the tape. */
		outer.n = 0;
		buf_str(&outer, "[[[[[[");
		buf_add(&outer, b.p, b.n);
		buf_str(&outer, "]]]]]]");
		{
			struct jscan *shallow = jscan_create(1);

			if (jscan_accepts(shallow, outer.p, outer.n) !=
			    cases[i].valid)
				fail_msg("jscan (shallow tape) %s nested %zu "
				    "keys plus %s", cases[i].valid ? "rejects" :
				    "accepts", cases[i].n, cases[i].extra);
			jscan_free(shallow);
		}
	}
	free(b.p);
	free(outer.p);
	jscan_free(js);
}

/* Errors point at the offending byte: corral reports "at byte N". */
static void
test_error_offsets(void **state)
{
	static const struct {
		const char	*text;
		size_t		 off;
	} cases[] = {
		{ "[1,]", 3 },
		{ "[1] x", 4 },
		{ "{\"a\":1,\"a\":2}", 7 },
		{ "[\"ab\\x\"]", 4 },
		{ "{\"a\" 1}", 5 },
		{ "[truex]", 1 },
		{ "  7", 2 },
		/* An object's compact members, past the first. */
		{ "{\"a\":\"b\",\"c\":\"d\",\"a\":\"e\"}", 17 },
		{ "{\"a\":\"b\",}", 9 },
		{ "{\"a\":\"b\"\"c\"}", 8 },
		{ "{\"a\":\"b\"", 8 },
		{ "{\"a\":\"b\",\"c\"\"d\"}", 12 },
		{ "{\"a\":\"b\",\"c\":\"d\x01\"}", 15 },
		{ "{\"a\":\"b\",\"c\":}", 13 },
		{ "{\"a\":{\"b\":\"c\"}x}", 14 },
	};
	struct jscan	*js = jscan_create(4);
	size_t		 i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		assert_int_equal(jscan_run(js, cases[i].text,
		    strlen(cases[i].text)), -1);
		assert_non_null(js->err);
		if (js->err_off != cases[i].off)
			fail_msg("%s: error at %zu (%s), expected %zu",
			    cases[i].text, js->err_off, js->err, cases[i].off);
	}
	jscan_free(js);
}

/* The scanner reads exactly n bytes: what follows in memory is ignored. */
static void
test_length_is_respected(void **state)
{
	struct jscan	*js = jscan_create(4);
	const char	*s = "{\"a\":1}garbage";
	const char	*t = "[12345]";

	assert_int_equal(jscan_accepts(js, s, 7), 1);
	assert_int_equal(jscan_accepts(js, s, 8), 0);
	/* A document cut short by the length is incomplete. */
	assert_int_equal(jscan_accepts(js, t, 4), 0);
	assert_int_equal(jscan_accepts(js, "[12]", 4), 1);
	jscan_free(js);
}

/*
 * What the SIMD paths carry from one 64-byte block to the next (inside a
 * string or not, an escape pending, a number or literal going on, a UTF-8
 * character begun) works wherever the block ends: each fragment, after
 * every shift from 0 to 140 bytes, gets jansson's verdict and the
 * reference scanner's tape.
 */
static void
test_block_boundaries(void **state)
{
	static const char *const frags[] = { "\"a\\\\\"", "\"\\\"\"",
	    "\"\\\\\\\"\"", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"",
	    "\"\xc3\"", "\"\xe2\x82\"", "\"\xed\xa0\x80\"", "\"\\u0041\"",
	    "\"\\ud83d\\ude00\"", "\"\\ud83d\"", "\"\\ud83d\\u0041\"",
	    "\"\\u0000\"", "\"\\x\"", "12345678901234567890",
	    "9223372036854775807", "1.5e10", "-0", "1e400", "true", "truex",
	    "false", "null", "nul", "\"a\x01b\"", "\"a\tb\"", "1 2",
	    "{\"a\":1,\"a\":2}", "{\"ab\":1,\"ba\":2}", "{\"a\" : [ ] }",
	    "\xc3\xa9", "\\", "\"x\\\"", "\"unterminated", "[1,]", "[]",
	    "{}", "\x7f", "\"\x7f\"" };
	struct jscan	*js = jscan_create(TAPE_LEVEL);
	struct buf	 b = { 0 };
	size_t		 i, k, m;
	int		 failures = 0;

	for (i = 0; i < sizeof frags / sizeof frags[0]; i++) {
		for (k = 0; k <= 140; k++) {
			for (m = 0; m < 3; m++) {
				b.n = 0;
				buf_str(&b, "[");
				if (m == 0) {
					buf_str(&b, "\"");
					buf_rep(&b, 'x', k);
					buf_str(&b, "\",");
				} else if (m == 1)
					buf_rep(&b, ' ', k);
				else {
					buf_rep(&b, '\\', k);
					buf_str(&b, "\"");
				}
				buf_str(&b, frags[i]);
				buf_str(&b, "]");
				if (jscan_accepts(js, b.p, b.n) !=
				    jansson_accepts(b.p, b.n)) {
					print_hex("verdict differs", b.p, b.n);
					failures++;
				}
			}
		}
	}
	/* Runs of backslashes of every length, across a block's end. */
	for (k = 0; k <= 140; k++) {
		b.n = 0;
		buf_str(&b, "[\"");
		buf_rep(&b, '\\', k);
		buf_str(&b, "\",\"\\\\\"]");
		if (jscan_accepts(js, b.p, b.n) != jansson_accepts(b.p, b.n)) {
			print_hex("verdict differs", b.p, b.n);
			failures++;
		}
	}
	free(b.p);
	jscan_free(js);
	assert_int_equal(failures, 0);
}

/*
 * Scan the n bytes at s, copied to a buffer of exactly n bytes (so that
 * the sanitizers catch a read past the line), on the path under test and
 * on the portable path, which keeps no block: both must give jansson's
 * verdict, and the same tape or the same error at the same offset.
 * Returns the number of differences, each printed.
 */
static int
blocks_agree(struct jscan *js, struct jscan *ref, const char *s, size_t n)
{
	char	*copy = malloc(n ? n : 1);
	int	 got, want, bad = 0;

	assert_non_null(copy);
	memcpy(copy, s, n);
	got = jscan_accepts(js, copy, n);
	want = jscan_run_path(ref, copy, n, JSCAN_SCALAR) == 0;
	if (got != jansson_accepts(copy, n) || got != want) {
		print_hex("verdict differs", copy, n);
		bad++;
	} else if (!got && (js->err_off != ref->err_off ||
	    strcmp(js->err, ref->err) != 0)) {
		print_message("%s path: %s at %zu, portable: %s at %zu\n",
		    jscan_path_name(test_path), js->err, js->err_off, ref->err,
		    ref->err_off);
		print_hex("error differs", copy, n);
		bad++;
	}
	free(copy);
	return bad;
}

/*
 * The SIMD paths keep the 64-byte block they read last, a bit for each
 * byte that ends a run of plain string bytes, and take the strings that
 * follow in it from those bits; an object's members of plain strings,
 * compact or with a blank after ':' and ',', take a shortcut through the
 * grammar.  Every member below, after a first value
 * of every length from 0 to 140 bytes (so that each of its bytes falls
 * on every offset of a block, the block's last and first included), and
 * at every length of the line around a multiple of 64 (the line's end
 * read from its tail), gets jansson's verdict and the portable path's
 * tape or error and offset.
 */
static void
test_block_cache(void **state)
{
	static const char *const members[] = { "\"a\":\"b\"",
	    "\"a\":\"b\",\"c\":\"d\",\"e\":\"f\"", "\"a\":\"\\\"\"",
	    "\"a\\n\":\"b\"", "\"\xc3\xa9\":\"\xe2\x82\xac\"",
	    "\"a\":\"\xf0\x9f\x98\x80x\"", "\"a\":\"\xc3\"", "\"a\":\"\x01\"",
	    "\"a\":1,\"b\":\"c\"", "\"a\":{\"b\":\"c\"},\"d\":\"e\"",
	    "\"a\":[\"b\",\"c\"]", "\"a\" :\"b\"", "\"a\": \"b\"",
	    "\"a\":\"b\" ,\"c\":\"d\"", "\"a\":\"b\",\"a\":\"c\"",
	    "\"ab\":\"x\",\"ba\":\"y\",\"ab\":\"z\"", "\"a\":\"b\",",
	    "\"a\":\"b\"\"c\"", "\"a\"\"b\"", "\"a\":", "\"a\":\"b",
	    "\"a\":\"b\\", "\"a\":\"b\",\"c", "\"a\":\"b\"}x", "\"a\":\"\"",
	    "\"\":\"\"", "\"a\":true,\"b\":\"c\"", "\"a\":\"\\u00e9\"",
	    "\"a\": \"b\", \"c\": \"d\"", "\"a\": \"\\n\", \"c\": \"\xc3\xa9\"",
	    "\"a\": {\"b\": \"c\"}, \"d\": [1, 2]", "\"a\": \"b\", }",
	    "\"a\": \"b\",  \"c\":  \"d\"", "\"a\": \"b\", \"a\": \"c\"",
	    "\"a\": \"b\" \"c\"", "\"a\": ", "\"a\": \"b\", " };
	struct jscan	*js = jscan_create(4), *ref = jscan_create(4);
	struct buf	 b = { 0 };
	size_t		 i, k, cut;
	int		 failures = 0;

	for (i = 0; i < sizeof members / sizeof members[0]; i++) {
		for (k = 0; k <= 140; k++) {
			b.n = 0;
			buf_str(&b, "{\"p\":\"");
			buf_rep(&b, 'x', k);
			buf_str(&b, "\",");
			buf_str(&b, members[i]);
			buf_str(&b, "}");
			failures += blocks_agree(js, ref, b.p, b.n);
			/* Cut short: every end of the line near the member. */
			for (cut = k + 6; cut < b.n; cut++)
				failures += blocks_agree(js, ref, b.p, cut);
		}
	}
	/* Short strings filling a line of 60 to 200 bytes, every length. */
	for (k = 60; k <= 200; k++) {
		b.n = 0;
		buf_str(&b, "{");
		for (i = 0; b.n + 12 < k; i++) {
			char	m[32];

			snprintf(m, sizeof m, "%s\"k%zu\":\"v\"", i ? "," : "",
			    i);
			buf_str(&b, m);
		}
		buf_rep(&b, ' ', k - 1 - b.n);
		buf_str(&b, "}");
		failures += blocks_agree(js, ref, b.p, b.n);
		failures += blocks_agree(js, ref, b.p, b.n - 1);
	}
	free(b.p);
	jscan_free(js);
	jscan_free(ref);
	assert_int_equal(failures, 0);
}

/* Copy a decoded string token out of the scanner's scratch space. */
static char *
tok_text(struct jscan *js, const char *s, int t, size_t *lenp)
{
	const char	*v;
	char		*copy;

	v = jscan_text(js, s, t, lenp);
	copy = malloc(*lenp + 1);
	assert_non_null(copy);
	memcpy(copy, v, *lenp);
	copy[*lenp] = '\0';
	return copy;
}

/* Parse a token's raw bytes alone with jansson. */
static json_t *
raw_value(const struct jscan *js, const char *s, int t)
{
	json_error_t	e;

	return json_loadb(s + js->tok[t].off, js->tok[t].len,
	    JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &e);
}

/*
 * Check that the tape from token t describes jansson's value j: types,
 * sizes, keys, decoded strings, numbers, and raw extents.  Returns 0 when
 * it does.
 */
static int
tape_matches(struct jscan *js, const char *s, int t, json_t *j,
    unsigned int level)
{
	const struct jtok	*k = &js->tok[t];
	json_t			*raw, *member;
	char			*key, *text;
	size_t			 len, n;
	int			 e, i, same;

	raw = raw_value(js, s, t);
	same = raw != NULL && json_equal(raw, j);
	json_decref(raw);
	if (!same)
		return -1;
	switch (k->type) {
	case JT_OBJECT:
		if (!json_is_object(j))
			return -1;
		if (level == js->maxlevel)
			return (k->flags & JT_OPAQUE) &&
			    jscan_count(js, t) == 0 &&
			    jscan_first(js, t) == -1 &&
			    jscan_get(js, s, t, "k") == -1 ? 0 : -1;
		if ((k->flags & JT_OPAQUE) ||
		    jscan_count(js, t) != json_object_size(j))
			return -1;
		for (i = t + 1; (uint32_t)i < k->next;
		    i = (int)js->tok[i + 1].next) {
			if (js->tok[i].type != JT_STRING)
				return -1;
			key = tok_text(js, s, i, &len);
			member = json_object_get(j, key);
			e = jscan_get(js, s, t, key);
			free(key);
			if (member == NULL || e != i + 1 ||
			    tape_matches(js, s, i + 1, member, level + 1) != 0)
				return -1;
		}
		return 0;
	case JT_ARRAY:
		if (!json_is_array(j))
			return -1;
		if (level == js->maxlevel)
			return (k->flags & JT_OPAQUE) &&
			    jscan_first(js, t) == -1 ? 0 : -1;
		if ((k->flags & JT_OPAQUE) ||
		    jscan_count(js, t) != json_array_size(j))
			return -1;
		n = 0;
		for (e = jscan_first(js, t); e != -1; e = jscan_next(js, t, e)) {
			if (n >= json_array_size(j) || tape_matches(js, s, e,
			    json_array_get(j, n), level + 1) != 0)
				return -1;
			n++;
		}
		return n == json_array_size(j) ? 0 : -1;
	case JT_STRING:
		if (!json_is_string(j))
			return -1;
		text = tok_text(js, s, t, &len);
		same = len == json_string_length(j) &&
		    memcmp(text, json_string_value(j), len) == 0;
		free(text);
		return same ? 0 : -1;
	case JT_NUMBER:
		if (json_is_integer(j))
			return (k->flags & JT_INTEGER) && jscan_number(js, s, t) ==
			    (double)json_integer_value(j) ? 0 : -1;
		return json_is_real(j) && !(k->flags & JT_INTEGER) &&
		    jscan_number(js, s, t) == json_real_value(j) ? 0 : -1;
	case JT_TRUE:
		return json_is_true(j) ? 0 : -1;
	case JT_FALSE:
		return json_is_false(j) ? 0 : -1;
	case JT_NULL:
		return json_is_null(j) ? 0 : -1;
	default:
		return -1;
	}
}

/* A small deterministic PRNG (xorshift64*), so failures reproduce. */
static uint64_t rng_state;

/* Seed the PRNG. */
static void
rng_seed(uint64_t seed)
{
	rng_state = seed * 2654435761u + 0x9e3779b97f4a7c15ULL;
}

/* Return a random number below n (n > 0). */
static size_t
rng(size_t n)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (size_t)((rng_state * 2685821657736338717ULL) >> 11) % n;
}

/* Append random JSON whitespace. */
static void
gen_ws(struct buf *b)
{
	static const char *const ws[] = { "", "", "", " ", "\t", "\n", "\r\n",
	    "  " };

	buf_str(b, ws[rng(sizeof ws / sizeof ws[0])]);
}

/* Append a random valid string body piece (no quotes). */
static void
gen_string_piece(struct buf *b)
{
	static const char *const pieces[] = { "a", "key", "b", "x y", "\\n",
	    "\\\"", "\\\\", "\\/", "\\b\\f\\r\\t", "\\u0041", "\\u00e9",
	    "\\u20ac", "\\ud83d\\ude00", "\\uDBFF\\uDFFF", "\xc3\xa9",
	    "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf", "\x7f",
	    "\\u0001", "0", "\\u0061" };
	char	esc[8];

	if (rng(8) == 0) {
		/* A random BMP escape that is neither NUL nor a surrogate. */
		unsigned int v = 1 + (unsigned int)rng(0xD7FF);
		snprintf(esc, sizeof esc, "\\u%04x", v);
		buf_str(b, esc);
		return;
	}
	buf_str(b, pieces[rng(sizeof pieces / sizeof pieces[0])]);
}

/* Append a random string literal. */
static void
gen_string(struct buf *b)
{
	size_t	n = rng(4);

	buf_str(b, "\"");
	while (n-- > 0)
		gen_string_piece(b);
	buf_str(b, "\"");
}

/* Append a random key: a small pool, so duplicates happen sometimes. */
static void
gen_key(struct buf *b)
{
	static const char *const keys[] = { "\"a\"", "\"b\"", "\"c\"",
	    "\"\\u0061\"", "\"id\"", "\"trace\"", "\"intent\"", "\"k1\"",
	    "\"k2\"", "\"k3\"", "\"k4\"", "\"k5\"", "\"k6\"", "\"k7\"",
	    "\"k8\"", "\"k9\"", "\"\\u006b1\"", "\"\xc3\xa9\"", "\"\\u00e9\"",
	    "\"\"" };
	char	k[32];

	if (rng(3) == 0) {
		/* Mostly-unique keys keep many objects valid. */
		snprintf(k, sizeof k, "\"u%zu\"", rng(1000000));
		buf_str(b, k);
		return;
	}
	buf_str(b, keys[rng(sizeof keys / sizeof keys[0])]);
}

/* Append a random number literal, valid or at a boundary. */
static void
gen_number(struct buf *b)
{
	static const char *const nums[] = { "0", "-0", "1", "-1", "42",
	    "0.5", "-0.25", "1e5", "1E-5", "2.5e+10", "0e0", "123456789",
	    "9223372036854775807", "-9223372036854775808",
	    "9223372036854775806", "1.7976931348623157e308",
	    "1.7976931348623158e308", "4.9e-324", "1e308", "0.9", "0.78",
	    "100000000000000000000", "1e-400", "17976931348623157e292",
	    "0.017976931348623157e310", "1.7976931348623159e308" };
	char	n[64];

	switch (rng(3)) {
	case 0:
		snprintf(n, sizeof n, "%s%zu", rng(2) ? "-" : "", rng(100000));
		break;
	case 1:
		snprintf(n, sizeof n, "%zu.%zue%s%zu", rng(100), rng(1000),
		    rng(2) ? "-" : "", rng(320));
		break;
	default:
		buf_str(b, nums[rng(sizeof nums / sizeof nums[0])]);
		return;
	}
	buf_str(b, n);
}

/* Append a random JSON value of at most depth levels. */
static void
gen_value(struct buf *b, int depth)
{
	size_t	n, i;

	switch (depth > 0 ? rng(8) : 2 + rng(6)) {
	case 0:
		n = rng(5) == 0 ? rng(30) : rng(5);
		buf_str(b, "{");
		for (i = 0; i < n; i++) {
			if (i > 0)
				buf_str(b, ",");
			gen_ws(b);
			gen_key(b);
			gen_ws(b);
			buf_str(b, ":");
			gen_ws(b);
			gen_value(b, depth - 1);
			gen_ws(b);
		}
		buf_str(b, "}");
		break;
	case 1:
		n = rng(5);
		buf_str(b, "[");
		for (i = 0; i < n; i++) {
			if (i > 0)
				buf_str(b, ",");
			gen_ws(b);
			gen_value(b, depth - 1);
			gen_ws(b);
		}
		buf_str(b, "]");
		break;
	case 2:
	case 3:
		gen_string(b);
		break;
	case 4:
	case 5:
		gen_number(b);
		break;
	case 6:
		buf_str(b, rng(2) ? "true" : "false");
		break;
	default:
		buf_str(b, "null");
		break;
	}
}

/* Envelopes to mutate: seed 000's examples and corral's own kinds. */
static const char *const corpus[] = {
	("{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\",\"agent\":{\"id\":"
	"\"gpt5.plan\",\"name\":\"Planner\",\"model\":\"gpt-5\"},\"timestamp\":"
	"\"2025-10-10T12:40:00Z\",\"intent\":\"plan\",\"task\":\"Outline steps "
	"to scrape prices and store in CSV\",\"inputs\":{\"context\":\"User "
	"sells items; wants daily price tracker\"},\"content\":{\"type\":"
	"\"text\",\"text\":\"I propose a 3\xe2\x80\x91step plan.\"},\"outputs\":"
	"{\"artifacts\":[{\"kind\":\"plan\",\"name\":\"price_tracker_plan\","
	"\"inline\":\"1) Collect URLs 2) Scrape daily 3) Save CSV + notify\"}],"
	"\"next_actions\":[{\"intent\":\"decompose\",\"task\":\"Turn plan into "
	"executable tasks\"},{\"intent\":\"retrieve\",\"task\":\"Load target "
	"URL list from drive\"}]},\"confidence\":{\"score\":0.78,\"rationale\":"
	"\"Common workflow; low complexity\"}}"),
	("{\"protocol\":\"multiagent-1.0\",\"role\":\"tool\",\"agent\":{\"id\":"
	"\"gemini.exec\",\"name\":\"Executor\",\"model\":\"gemini-2.5-pro\"},"
	"\"timestamp\":\"2025-10-10T12:43:10Z\",\"intent\":\"tool.call\","
	"\"task\":\"Scrape pages and extract prices\",\"content\":{\"type\":"
	"\"tool_result\",\"data\":{\"ok\": true,\"rows_appended\": 147,"
	"\"csv_path\": \"data/prices.csv\"}},\"outputs\":{\"artifacts\":[{"
	"\"kind\":\"dataset\",\"name\":\"prices_csv\",\"uri\":\"data/prices.csv"
	"\"}],\"next_actions\":[{\"intent\":\"summarize\",\"task\":\"Produce "
	"daily change summary\"}]},\"confidence\":{\"score\":0.86,\"rationale\":"
	"\"Selectors matched 93% of pages\",\"risks\":[\"anti\xe2\x80\x91"
	"bot on 7%\"]},\"trace\":{\"parents\":[\"msg_002\"],\"id\":\"msg_003\","
	"\"cost\":{\"input_tokens\":2100,\"output_tokens\":380}}}"),
	("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"map/agents/spawn\","
	"\"params\":{\"agent\":\"worker\",\"task\":\"do \\\"it\\\"\\n\","
	"\"limits\":{\"depth\":2,\"budget\":{\"tokens\":1e6,\"cost\":0.5}}}}"),
	("{\"corral\":{\"kind\":\"notice\"},\"content\":{\"type\":\"error\","
	"\"text\":\"\\u00e9\\ud83d\\ude00\",\"data\":[1,-2.5e-3,true,false,"
	"null,{},[]]}}"),
	("[{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,"
	"\"i\":9,\"j\":10,\"k\":11,\"l\":12,\"m\":13,\"n\":14}]"),
};

/* Insert fragments that provoke the scanner's edge cases. */
static const char *const fragments[] = { "\"", "\\", "{", "}", "[", "]",
	",", ":", "\\u", "\\ud800", "\\udc00", "\\ud83d\\ude00", "\\u0000",
	"\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80", "\xc3", "\xe2\x82",
	"1e309", "9223372036854775808", "-9223372036854775809", "0", "-",
	".", "e", "E+", "true", "x", " ", "\n", "\t", "\x01", "\x1f", "\xff",
	"\"a\":1,", "\"a\":", ",\"\\u0061\":2", "00", "1.", "nul", "truex",
	"{\"a\":1,\"a\":2}" };

/* Apply one random mutation to the document in b. */
static void
mutate(struct buf *b, const struct buf *donor)
{
	static const unsigned char bytes[] = { '"', '\\', '{', '}', '[', ']',
	    ',', ':', '0', '1', '9', '-', '+', '.', 'e', 'E', 'u', 'x', 't',
	    'n', 'f', 'a', ' ', '\n', '\r', '\t', 0x80, 0xbf, 0xc0, 0xc3, 0xe0,
	    0xed, 0xf0, 0xf4, 0xf5, 0xff, 0x1f, 0x7f, 0x01 };
	struct buf	 out = { 0 };
	const char	*f;
	size_t		 pos, len, from;
	unsigned char	 c;

	pos = b->n > 0 ? rng(b->n + 1) : 0;
	switch (rng(7)) {
	case 0:		/* flip a byte */
		if (b->n == 0)
			return;
		pos = rng(b->n);
		c = rng(3) == 0 ? (unsigned char)(1 + rng(255)) :
		    bytes[rng(sizeof bytes)];
		b->p[pos] = (char)c;
		return;
	case 1:		/* delete a range */
		if (b->n == 0)
			return;
		pos = rng(b->n);
		len = 1 + rng(b->n - pos < 8 ? b->n - pos : 8);
		memmove(b->p + pos, b->p + pos + len, b->n - pos - len);
		b->n -= len;
		return;
	case 2:		/* truncate */
		b->n = pos;
		return;
	case 3:		/* insert a fragment */
		f = fragments[rng(sizeof fragments / sizeof fragments[0])];
		buf_add(&out, b->p, pos);
		buf_str(&out, f);
		buf_add(&out, b->p + pos, b->n - pos);
		break;
	case 4:		/* splice in a slice of another document */
		if (donor->n == 0)
			return;
		from = rng(donor->n);
		len = rng(donor->n - from + 1);
		buf_add(&out, b->p, pos);
		buf_add(&out, donor->p + from, len);
		len = b->n - pos > 0 ? rng(b->n - pos + 1) : 0;
		buf_add(&out, b->p + pos + len, b->n - pos - len);
		break;
	case 5:		/* repeat a slice of itself */
		if (b->n == 0)
			return;
		from = rng(b->n);
		len = rng(b->n - from + 1);
		buf_add(&out, b->p, from + len);
		buf_add(&out, b->p + from, b->n - from);
		break;
	default:	/* insert a random byte */
		c = (unsigned char)(1 + rng(255));
		buf_add(&out, b->p, pos);
		buf_add(&out, &c, 1);
		buf_add(&out, b->p + pos, b->n - pos);
		break;
	}
	free(b->p);
	*b = out;
}

/*
 * Compare the scanner with jansson on one document; for accepted ones,
 * also check the tape.  Returns 0 when all agree.
 */
static int
differential_one(struct jscan *js, const char *s, size_t n, uint64_t iter)
{
	json_error_t	 e;
	json_t		*j;
	int		 got;

	got = jscan_accepts(js, s, n);
	if (memchr(s, '\0', n) != NULL) {
		/* See the comment at the top: jansson may skip a NUL. */
		if (got) {
			print_message("iteration %llu: jscan accepts a NUL "
			    "byte\n", (unsigned long long)iter);
			print_hex("input", s, n);
			return -1;
		}
		return 0;
	}
	j = json_loadb(s, n, JSON_REJECT_DUPLICATES, &e);
	if ((j != NULL) != got) {
		print_message("iteration %llu: jansson %s (%s), jscan %s "
		    "(%s at %zu)\n", (unsigned long long)iter, j ? "accepts" :
		    "rejects", j ? "" : e.text, got ? "accepts" : "rejects",
		    js->err ? js->err : "", js->err_off);
		print_hex("input", s, n);
		json_decref(j);
		return -1;
	}
	if (j != NULL && tape_matches(js, s, 0, j, 0) != 0) {
		print_message("iteration %llu: tape differs from jansson's "
		    "tree (maxlevel %u)\n", (unsigned long long)iter,
		    js->maxlevel);
		print_hex("input", s, n);
		json_decref(j);
		return -1;
	}
	json_decref(j);
	return 0;
}

/*
 * Generated and mutated documents: jscan and jansson agree on every one,
 * and every accepted document's tape matches jansson's tree.
 */
static void
test_differential_random(void **state)
{
	struct jscan	*deep = jscan_create(TAPE_LEVEL);
	struct jscan	*shallow = jscan_create(2);
	struct buf	 doc = { 0 }, donor = { 0 };
	size_t		 iters = 30000, accepted = 0, rejected = 0, k, m;
	uint64_t	 i, seed = 20261122;
	const char	*env;
	int		 failures = 0;

	/* Longer or different runs: CORRAL_JSCAN_ITERATIONS, CORRAL_JSCAN_SEED. */
	if ((env = getenv("CORRAL_JSCAN_ITERATIONS")) != NULL)
		iters = (size_t)strtoul(env, NULL, 10);
	if ((env = getenv("CORRAL_JSCAN_SEED")) != NULL)
		seed = strtoull(env, NULL, 10);
	rng_seed(seed);
	for (i = 0; i < iters && failures < 5; i++) {
		doc.n = 0;
		if (rng(3) == 0)
			buf_str(&doc, corpus[rng(sizeof corpus /
			    sizeof corpus[0])]);
		else {
			gen_ws(&doc);
			if (rng(2)) {
				buf_str(&doc, "{");
				gen_key(&doc);
				buf_str(&doc, ":");
				gen_value(&doc, 1 + (int)rng(6));
				buf_str(&doc, "}");
			} else {
				buf_str(&doc, "[");
				gen_value(&doc, 1 + (int)rng(6));
				buf_str(&doc, "]");
			}
			gen_ws(&doc);
		}
		donor.n = 0;
		gen_value(&donor, 3);
		/* A third stay intact; the rest get one to four mutations. */
		if (rng(3) != 0) {
			m = 1 + rng(4);
			for (k = 0; k < m; k++)
				mutate(&doc, &donor);
		}
		if (doc.p == NULL)
			buf_str(&doc, "");
		if (differential_one(rng(2) ? deep : shallow, doc.p, doc.n,
		    i) != 0)
			failures++;
		if (jscan_run_path(deep, doc.p, doc.n, test_path) == 0)
			accepted++;
		else
			rejected++;
	}
	print_message("differential: %zu documents, %zu valid, %zu invalid\n",
	    (size_t)i, accepted, rejected);
	/* The generator must exercise both verdicts in earnest. */
	assert_true(iters < 1000 || accepted > iters / 10);
	assert_true(iters < 1000 || rejected > iters / 10);
	free(doc.p);
	free(donor.p);
	jscan_free(deep);
	jscan_free(shallow);
	assert_int_equal(failures, 0);
}

/*
 * The SIMD paths find the bytes that end a run of plain string bytes with
 * two comparisons (a byte with its bit 1 flipped below 0x21, or '\\'):
 * every byte value, at every offset of a block, in a key and in a value,
 * gets the portable path's verdict, error and offset, and jansson's
 * verdict.  The byte after it, 'z', is no escape's: a plain byte taken
 * for a backslash is refused.
 */
static void
test_every_byte_in_strings(void **state)
{
	struct jscan	*js = jscan_create(4), *ref = jscan_create(4);
	struct buf	 b = { 0 };
	size_t		 k;
	int		 c, key, failures = 0;
	char		 ch;

	for (c = 0; c < 256; c++) {
		ch = (char)c;
		for (k = 0; k <= 70; k++) {
			for (key = 0; key < 2; key++) {
				b.n = 0;
				buf_str(&b, "{\"p\":\"");
				buf_rep(&b, 'x', k);
				buf_str(&b, key ? "\",\"" : "\",\"q\":\"a");
				buf_rep(&b, ch, 1);
				buf_str(&b, key ? "z\":\"v\"}" : "z\"}");
				failures += blocks_agree(js, ref, b.p, b.n);
			}
		}
	}
	free(b.p);
	jscan_free(js);
	jscan_free(ref);
	assert_int_equal(failures, 0);
}

/*
 * Envelopes as agents write them, compact and spaced as Python's
 * json.dumps spaces them, with escapes, a UTF-8 character, numbers,
 * literals and nested containers.  The SIMD paths read a block from
 * where a string's search begins, so k bytes more in the first string
 * (at the '@', k from 0 to 64) put each later byte on every offset of a
 * block: every such line, and every prefix of those with k 0, 1 and 63
 * (the line ending on every byte), gets jansson's verdict and the
 * portable path's tape or error and offset.
 */
static void
test_envelope_prefixes(void **state)
{
	static const char *const lines[] = {
	    "{\"protocol\":\"@multiagent-1.0\",\"role\":\"agent\",\"agent\":"
	    "{\"id\":\"echo.1\",\"name\":\"echo\",\"model\":\"echo\"},"
	    "\"timestamp\":\"2026-11-27T11:23:52Z\",\"intent\":\"execute\","
	    "\"task\":\"echo\",\"content\":{\"type\":\"text\",\"text\":"
	    "\"#1 a\\\"b\\\\\\u00e9 \xc3\xa9\\n\"},\"confidence\":{\"score\":"
	    "0.9},\"trace\":{\"parents\":[\"b-1\",\"b-2\"],\"id\":\"e-1\"},"
	    "\"ttl_ms\":-12e3,\"x\":[true,false,null,[],{}]}",
	    "{\"protocol\": \"@multiagent-1.0\", \"role\": \"agent\", "
	    "\"agent\": {\"id\": \"echo.1\", \"name\": \"echo\"}, \"content\": "
	    "{\"type\": \"text\", \"text\": \"a\\tb \\ud83d\\ude00\"}, "
	    "\"confidence\": {\"score\": 0.9}, \"trace\": {\"parents\": "
	    "[\"b-1\", \"b-2\"]}, \"n\": [1, -2.5e-3, 0, 9223372036854775807], "
	    "\"k\": \"v\"}",
	    "[\"@a\",{\"b\":[[[\"c\"]]],\"d\":{}},1234567890123,\"\\\\\\\\\","
	    "null , true\t,\n\"e\"\r]" };
	struct jscan	*js = jscan_create(4), *ref = jscan_create(4);
	struct buf	 b = { 0 };
	const char	*at;
	size_t		 i, k, cut;
	int		 failures = 0;

	for (i = 0; i < sizeof lines / sizeof lines[0]; i++) {
		at = strchr(lines[i], '@');
		for (k = 0; k <= 64; k++) {
			b.n = 0;
			buf_add(&b, lines[i], (size_t)(at - lines[i]));
			buf_rep(&b, 'x', k);
			buf_str(&b, at + 1);
			assert_true(jansson_accepts(b.p, b.n));
			failures += blocks_agree(js, ref, b.p, b.n);
			if (k != 0 && k != 1 && k != 63)
				continue;
			for (cut = 1; cut < b.n; cut++)
				failures += blocks_agree(js, ref, b.p, cut);
		}
	}
	free(b.p);
	jscan_free(js);
	jscan_free(ref);
	assert_int_equal(failures, 0);
}

/*
 * An envelope's keys have bloom bits of their own, so that their objects
 * skip the search for a repeated key; a repeated one is still refused,
 * wherever it comes, with the offset of its second occurrence.
 */
static void
test_envelope_keys_repeated(void **state)
{
	static const char *const keys[] = { "protocol", "role", "agent",
	    "timestamp", "intent", "task", "content", "trace", "confidence",
	    "priority", "routing", "metadata", "ttl_ms", "session", "cost",
	    "artifacts", "corral", "error", "context", "id", "name", "model",
	    "parents", "type", "text", "data", "score" };
	const size_t	 nk = sizeof keys / sizeof keys[0];
	struct jscan	*js = jscan_create(4), *ref = jscan_create(4);
	struct buf	 b = { 0 };
	size_t		 i, j, at;
	int		 failures = 0;

	for (i = 0; i <= nk; i++) {
		b.n = 0;
		at = 0;
		buf_str(&b, "{");
		for (j = 0; j < nk; j++) {
			buf_str(&b, j ? ",\"" : "\"");
			buf_str(&b, keys[j]);
			buf_str(&b, "\":\"v\"");
		}
		if (i < nk) {
			at = b.n + 1;
			buf_str(&b, ",\"");
			buf_str(&b, keys[i]);
			buf_str(&b, "\":\"w\"");
		}
		buf_str(&b, "}");
		failures += blocks_agree(js, ref, b.p, b.n);
		if (i == nk) {
			assert_int_equal(jscan_run_path(js, b.p, b.n, test_path),
			    0);
			continue;
		}
		assert_int_equal(jscan_run_path(js, b.p, b.n, test_path), -1);
		assert_string_equal(js->err, "duplicate key");
		assert_int_equal(js->err_off, at);
	}
	free(b.p);
	jscan_free(js);
	jscan_free(ref);
	assert_int_equal(failures, 0);
}

/* jscan_get finds members by decoded name, escaped spellings included. */
static void
test_get_members(void **state)
{
	const char	*s = "{\"plain\":1,\"\\u0065sc\":2,\"tab\\t\":3,"
	    "\"\xc3\xa9\":4,\"\\u00e9x\":5,\"obj\":{\"in\":6},\"\":7}";
	struct jscan	*js = jscan_create(4);
	int		 t, obj;

	assert_int_equal(jscan_run(js, s, strlen(s)), 0);
	t = jscan_get(js, s, 0, "plain");
	assert_true(t > 0);
	assert_int_equal(js->tok[t].type, JT_NUMBER);
	assert_memory_equal(s + js->tok[t].off, "1", 1);
	t = jscan_get(js, s, 0, "esc");
	assert_true(t > 0);
	assert_memory_equal(s + js->tok[t].off, "2", 1);
	t = jscan_get(js, s, 0, "tab\t");
	assert_true(t > 0);
	assert_memory_equal(s + js->tok[t].off, "3", 1);
	t = jscan_get(js, s, 0, "\xc3\xa9");
	assert_true(t > 0);
	assert_memory_equal(s + js->tok[t].off, "4", 1);
	t = jscan_get(js, s, 0, "\xc3\xa9x");
	assert_true(t > 0);
	assert_memory_equal(s + js->tok[t].off, "5", 1);
	t = jscan_get(js, s, 0, "");
	assert_true(t > 0);
	assert_memory_equal(s + js->tok[t].off, "7", 1);
	/* Missing names, prefixes and the raw escaped spelling do not match. */
	assert_int_equal(jscan_get(js, s, 0, "missing"), -1);
	assert_int_equal(jscan_get(js, s, 0, "pla"), -1);
	assert_int_equal(jscan_get(js, s, 0, "plainx"), -1);
	assert_int_equal(jscan_get(js, s, 0, "\\u0065sc"), -1);
	assert_int_equal(jscan_get(js, s, 0, "tab"), -1);
	/* Members of a nested object are found only through it. */
	assert_int_equal(jscan_get(js, s, 0, "in"), -1);
	obj = jscan_get(js, s, 0, "obj");
	assert_true(obj > 0);
	assert_int_equal(js->tok[obj].type, JT_OBJECT);
	t = jscan_get(js, s, obj, "in");
	assert_true(t > 0);
	assert_memory_equal(s + js->tok[t].off, "6", 1);
	/* Not an object, or not a token at all. */
	assert_int_equal(jscan_get(js, s, t, "in"), -1);
	assert_int_equal(jscan_get(js, s, -1, "plain"), -1);
	assert_int_equal(jscan_get(js, s, (int)js->ntok, "plain"), -1);
	assert_int_equal(jscan_count(js, 0), 7);
	jscan_free(js);
}

/* jscan_count, jscan_first and jscan_next walk arrays, skipping subtrees. */
static void
test_array_walk(void **state)
{
	const char	*s = "[1,[2,[3,4]],{\"a\":[5]},\"six\",[],{}]";
	static const char *const want[] = { "1", "[2,[3,4]]", "{\"a\":[5]}",
	    "\"six\"", "[]", "{}" };
	struct jscan	*js = jscan_create(8);
	size_t		 n = 0;
	int		 e, inner;

	assert_int_equal(jscan_run(js, s, strlen(s)), 0);
	assert_int_equal(js->tok[0].type, JT_ARRAY);
	assert_int_equal(jscan_count(js, 0), 6);
	for (e = jscan_first(js, 0); e != -1; e = jscan_next(js, 0, e)) {
		assert_true(n < 6);
		assert_int_equal(js->tok[e].len, strlen(want[n]));
		assert_memory_equal(s + js->tok[e].off, want[n], strlen(want[n]));
		n++;
	}
	assert_int_equal(n, 6);
	/* The second element is an array of two. */
	inner = jscan_next(js, 0, jscan_first(js, 0));
	assert_int_equal(jscan_count(js, inner), 2);
	e = jscan_next(js, inner, jscan_first(js, inner));
	assert_int_equal(jscan_count(js, e), 2);
	assert_int_equal(jscan_next(js, inner, e), -1);
	/* Empty containers have no first element. */
	e = jscan_first(js, 0);
	while (js->tok[e].len != 2 || s[js->tok[e].off] != '[')
		e = jscan_next(js, 0, e);
	assert_int_equal(jscan_count(js, e), 0);
	assert_int_equal(jscan_first(js, e), -1);
	jscan_free(js);
}

/* jscan_text decodes every escape to UTF-8; plain strings come back raw. */
static void
test_text_decoding(void **state)
{
	static const struct {
		const char	*json;
		const char	*text;
		size_t		 len;
	} cases[] = {
		{ "[\"plain\"]", "plain", 5 },
		{ "[\"\"]", "", 0 },
		{ "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"]", "\"\\/\b\f\n\r\t", 8 },
		{ "[\"\\u0041\\u00e9\"]", "A\xc3\xa9", 3 },
		{ "[\"\\u07ff\\u0800\"]", "\xdf\xbf\xe0\xa0\x80", 5 },
		{ "[\"\\u20ac\\uffff\"]", "\xe2\x82\xac\xef\xbf\xbf", 6 },
		{ "[\"\\ud83d\\ude00\"]", "\xf0\x9f\x98\x80", 4 },
		{ "[\"\\udbff\\udfff\"]", "\xf4\x8f\xbf\xbf", 4 },
		{ "[\"\\ud800\\udc00\"]", "\xf0\x90\x80\x80", 4 },
		{ "[\"a\\u0001b\"]", "a\x01" "b", 3 },
		{ "[\"\xc3\xa9\\n\"]", "\xc3\xa9\n", 3 },
	};
	struct jscan	*js = jscan_create(4);
	const char	*v;
	size_t		 i, len;
	int		 t;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		assert_int_equal(jscan_run(js, cases[i].json,
		    strlen(cases[i].json)), 0);
		t = jscan_first(js, 0);
		assert_int_equal(js->tok[t].type, JT_STRING);
		v = jscan_text(js, cases[i].json, t, &len);
		if (len != cases[i].len || memcmp(v, cases[i].text, len) != 0)
			fail_msg("%s decodes wrongly (%zu bytes)", cases[i].json,
			    len);
		assert_true(jscan_str_equal(js, cases[i].json + js->tok[t].off,
		    js->tok[t].len, js->tok[t].flags & JT_ESCAPED,
		    cases[i].text, cases[i].len));
	}
	/* Unescaped strings point into the line itself. */
	assert_int_equal(jscan_run(js, "[\"abc\"]", 7), 0);
	assert_int_equal(js->tok[1].flags & JT_ESCAPED, 0);
	jscan_free(js);
}

/* Containers at the tape depth are opaque but keep their full extent. */
static void
test_opaque_beyond_maxlevel(void **state)
{
	const char	*s = "{\"a\":{\"b\":{\"c\":[1,2,{\"d\":4}]}},\"z\":true}";
	struct jscan	*js = jscan_create(2);
	int		 a, b, z;

	assert_int_equal(jscan_run(js, s, strlen(s)), 0);
	a = jscan_get(js, s, 0, "a");
	assert_true(a > 0);
	assert_int_equal(js->tok[a].flags & JT_OPAQUE, 0);
	b = jscan_get(js, s, a, "b");
	assert_true(b > 0);
	assert_int_equal(js->tok[b].type, JT_OBJECT);
	assert_true(js->tok[b].flags & JT_OPAQUE);
	assert_int_equal(js->tok[b].len, strlen("{\"c\":[1,2,{\"d\":4}]}"));
	assert_memory_equal(s + js->tok[b].off, "{\"c\":[1,2,{\"d\":4}]}",
	    js->tok[b].len);
	assert_int_equal(jscan_get(js, s, b, "c"), -1);
	assert_int_equal(jscan_count(js, b), 0);
	assert_int_equal(jscan_first(js, b), -1);
	/* Nothing inside was recorded: "z" follows right after. */
	z = jscan_get(js, s, 0, "z");
	assert_true(z > 0);
	assert_int_equal(js->tok[z].type, JT_TRUE);
	assert_int_equal(js->ntok, 7);
	/* maxlevel 0: the whole document is one opaque token. */
	jscan_free(js);
	js = jscan_create(0);
	assert_int_equal(jscan_run(js, s, strlen(s)), 0);
	assert_int_equal(js->ntok, 1);
	assert_true(js->tok[0].flags & JT_OPAQUE);
	assert_int_equal(js->tok[0].len, strlen(s));
	/* Errors deep inside an opaque container are still found. */
	assert_int_equal(jscan_run(js, "[[[[\"\\ud800\"]]]]", 16), -1);
	jscan_free(js);
}

/* jscan_number converts numbers as strtod does, long ones too. */
static void
test_numbers(void **state)
{
	struct jscan	*js = jscan_create(4);
	struct buf	 b = { 0 };
	const char	*s = "[0.9,-1e3,9223372036854775807,-0,1.5E-2,7]";
	int		 e;

	assert_int_equal(jscan_run(js, s, strlen(s)), 0);
	e = jscan_first(js, 0);
	assert_true(jscan_number(js, s, e) == 0.9);
	assert_int_equal(js->tok[e].flags & JT_INTEGER, 0);
	e = jscan_next(js, 0, e);
	assert_true(jscan_number(js, s, e) == -1000.0);
	assert_int_equal(js->tok[e].flags & JT_INTEGER, 0);
	e = jscan_next(js, 0, e);
	assert_true(jscan_number(js, s, e) == 9223372036854775807.0);
	assert_true(js->tok[e].flags & JT_INTEGER);
	e = jscan_next(js, 0, e);
	assert_true(jscan_number(js, s, e) == 0.0);
	e = jscan_next(js, 0, e);
	assert_true(jscan_number(js, s, e) == 0.015);
	e = jscan_next(js, 0, e);
	assert_true(jscan_number(js, s, e) == 7.0);
	assert_true(js->tok[e].flags & JT_INTEGER);
	/* A number longer than any stack buffer. */
	buf_str(&b, "[0.");
	buf_rep(&b, '0', 200);
	buf_str(&b, "5e201]");
	assert_int_equal(jscan_run(js, b.p, b.n), 0);
	assert_true(jscan_number(js, b.p, 1) == 5.0);
	free(b.p);
	jscan_free(js);
}

/* After a huge document, jscan_trim gives memory back and scanning works. */
static void
test_trim_after_huge_document(void **state)
{
	struct jscan	*js = jscan_create(4);
	struct buf	 b = { 0 };
	size_t		 i;
	char		 item[32];

	buf_str(&b, "{");
	for (i = 0; i < 20000; i++) {
		snprintf(item, sizeof item, "%s\"k%zu\":[%zu]", i ? "," : "", i,
		    i);
		buf_str(&b, item);
	}
	buf_str(&b, "}");
	assert_int_equal(jscan_run(js, b.p, b.n), 0);
	assert_int_equal(jscan_count(js, 0), 20000);
	assert_true(js->tokcap > 4096);
	jscan_trim(js);
	assert_true(js->tokcap <= 4096);
	assert_true(js->keycap <= 4096);
	assert_true(js->tablecap <= 4096);
	assert_int_equal(jscan_run(js, "{\"a\":[1,2]}", 11), 0);
	assert_int_equal(jscan_count(js, jscan_get(js, "{\"a\":[1,2]}", 0,
	    "a")), 2);
	/* And it can scan the huge one again. */
	assert_int_equal(jscan_run(js, b.p, b.n), 0);
	assert_int_equal(jscan_count(js, 0), 20000);
	free(b.p);
	jscan_free(js);
}

/*
 * Scan s with memo m on the path under test (js), and alone (plain):
 * return 1 unless the verdict, error, offset or tape differ.
 */
static int
memo_agrees(struct jscan *js, struct jscan *plain, struct jscan_memo *m,
    const char *s, size_t n)
{
	int		 rm, rp;
	uint32_t	 i;

	rm = jscan_run_memo_path(js, s, n, m, test_path);
	rp = jscan_run_path(plain, s, n, test_path);
	if (rm != rp || (rm != 0 && (js->err_off != plain->err_off ||
	    strcmp(js->err, plain->err) != 0)) || (rm == 0 &&
	    (js->ntok != plain->ntok || js->nvals != plain->nvals)))
		goto differ;
	for (i = 0; rm == 0 && i < js->ntok; i++)
		if (js->tok[i].off != plain->tok[i].off ||
		    js->tok[i].len != plain->tok[i].len ||
		    js->tok[i].next != plain->tok[i].next ||
		    js->tok[i].type != plain->tok[i].type ||
		    js->tok[i].flags != plain->tok[i].flags)
			goto differ;
	return 1;
differ:
	print_message("with a memo, the %s path scans %zu bytes otherwise: "
	    "%d/%d \"%.*s\"\n", jscan_path_name(test_path), n, rm, rp,
	    (int)(n < 300 ? n : 300), s);
	return 0;
}

/*
 * A stream's memo lets a line's first members be taken from the last
 * line kept, where the two begin alike: the verdict, the error and its
 * offset, and the tape are what a scan of the line alone gives, whatever
 * byte differs (the memo's line's then each of its bytes changed to each
 * of a few, or dropped, or the line cut there), with keys repeated after
 * the shared part, escaped keys, containers below the tape, and scanners
 * of another depth sharing the memo.
 */
static void
test_memo(void **state)
{
	static const char *const lines[] = {
	    "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\",\"agent\":"
	    "{\"id\":\"echo.1\",\"name\":\"echo\",\"model\":\"echo\"},"
	    "\"timestamp\":\"2026-11-27T11:23:52Z\",\"intent\":\"execute\","
	    "\"task\":\"echo\",\"content\":{\"type\":\"text\",\"text\":"
	    "\"#1 a\"},\"confidence\":{\"score\":0.9},\"trace\":{\"id\":\"e\"}}",
	    "{\"protocol\": \"multiagent-1.0\", \"role\": \"user\", "
	    "\"n\": -12.5e3, \"t\": true, \"f\" : false, \"z\":null ,\t\"a\": "
	    "[1, {\"x\": []}, \"\\u00e9\xc3\xa9\"], \"k\": \"v\",\n\"task\": "
	    "\"a\\\"b\", \"w\": {}, \"content\": {\"type\": \"text\"}}",
	    "{\"a\":{\"b\":{\"c\":{\"d\":{\"e\":1}}}},\"f\":\"g\",\"h\":[[[[1]]]],"
	    "\"i\":\"j\",\"k\":\"l\",\"m\":\"n\"}",
	    "{\"a\":\"1\",\"b\":\"2\",\"\\u0063\":\"3\",\"d\":\"4\",\"e\":\"5\"}",
	    "{\"content\":\"1\",\"x\":\"2\",\"context\":\"3\",\"y\":\"4\","
	    "\"z\":\"5\",\"w\":\"6\"}",
	    "{\"a\":\"1\",\"b\":\"2\",\"c\":\"3\",\"d\":\"4\",\"e\":\"5\","
	    "\"f\":\"6\",\"g\":\"7\",\"h\":\"8\",\"i\":\"9\",\"j\":\"10\","
	    "\"k\":\"11\",\"l\":\"12\",\"m\":\"13\",\"n\":\"14\",\"o\":\"15\","
	    "\"p\":\"16\",\"q\":\"17\",\"r\":\"18\",\"s\":\"19\"}",
	    "[\"a\",\"b\",\"c\"]",
	    /* The members of a top-level member's object (a walk resumes there). */
	    "{\"p\":\"x\",\"o\":{\"a\":\"1\",\"b\":\"2\",\"\\u0063\":\"3\","
	    "\"d\":\"4\",\"e\":\"5\"},\"z\":\"6\"}",
	    "{\"p\":\"x\",\"o\":{\"content\":\"1\",\"x\":\"2\",\"context\":"
	    "\"3\",\"y\":\"4\",\"z\":\"5\"},\"q\":{\"a\":\"7\",\"b\":\"8\"}}",
	    "{\"p\":\"x\",\"o\":{\"a\":{\"b\":{\"c\":{\"d\":1}}},\"e\":\"5\","
	    "\"f\":\"6\"},\"g\":{\"h\":[1,{\"i\":{\"j\":[2]}}],\"k\":\"l\"}}",
	    "{\"p\":\"x\",\"o\":{},\"q\":{ \"a\" : \"1\" ,\t\"b\": 2.5, \"c\":"
	    "[true], \"d\":\"4\"}, \"r\" :{\"s\":\"t\"}}" };
	/* Repeats of earlier keys, after the part a memo may share. */
	static const char *const repeated[] = {
	    "{\"a\":\"1\",\"b\":\"2\",\"c\":\"3\",\"d\":\"4\",\"a\":\"5\"}",
	    "{\"a\":\"1\",\"b\":\"2\",\"c\":\"3\",\"d\":\"4\",\"\\u0061\":\"5\"}",
	    "{\"a\":\"1\",\"b\":\"2\",\"c\":\"3\",\"d\":\"4\",\"e\":\"5\","
	    "\"c\":6}",
	    "{\"a\":\"1\",\"b\":\"2\",\"\\u0063\":\"3\",\"d\":\"4\",\"c\":\"5\"}",
	    /* In a top-level member's object. */
	    "{\"p\":\"x\",\"o\":{\"a\":\"1\",\"b\":\"2\",\"\\u0063\":\"3\","
	    "\"d\":\"4\",\"c\":\"5\"},\"z\":\"6\"}",
	    "{\"p\":\"x\",\"o\":{\"content\":\"1\",\"x\":\"2\",\"context\":"
	    "\"3\",\"y\":\"4\",\"content\":\"5\"},\"q\":{\"a\":\"7\"}}",
	    "{\"p\":\"x\",\"o\":{\"a\":\"1\",\"b\":\"2\",\"a\":\"3\"}}",
	    "{\"p\":\"x\",\"o\":{\"a\":\"1\"},\"p\":\"y\"}" };
	static const char subst[] = { 'x', '"', '\\', ',', ':', '}', ']', '{',
	    ' ', '0', '\n', '\x01', '\x80' };
	struct jscan		*js = jscan_create(4), *plain = jscan_create(4);
	struct jscan		*shallow = jscan_create(1), *plain1 = jscan_create(1);
	struct jscan		*mid = jscan_create(2), *plain2 = jscan_create(2);
	struct jscan_memo	*m = jscan_memo_create(), *m2 = jscan_memo_create();
	struct buf		 b = { 0 };
	size_t			 i, k, c, n;
	int			 failures = 0;

	(void)state;
	jscan_memo_reset(m);
	for (i = 0; i < sizeof lines / sizeof lines[0]; i++) {
		n = strlen(lines[i]);
		assert_true(jansson_accepts(lines[i], n));
		for (k = 0; k <= n; k++) {
			/* The line kept, then the line changed at k. */
			failures += !memo_agrees(js, plain, m, lines[i], n);
			failures += !memo_agrees(js, plain, m, lines[i], k);
			for (c = 0; k < n && c < sizeof subst; c++) {
				b.n = 0;
				buf_add(&b, lines[i], n);
				b.p[k] = subst[c];
				failures += !memo_agrees(js, plain, m, b.p, b.n);
				failures += !memo_agrees(js, plain, m, lines[i], n);
				/* A depth of 2: an object's members, not below. */
				failures += !memo_agrees(mid, plain2, m2, lines[i],
				    n);
				failures += !memo_agrees(mid, plain2, m2, b.p, b.n);
			}
			if (k < n) {
				b.n = 0;
				buf_add(&b, lines[i], k);
				buf_str(&b, lines[i] + k + 1);
				failures += !memo_agrees(js, plain, m, b.p, b.n);
			}
			/* A scanner of another depth between. */
			failures += !memo_agrees(shallow, plain1, m, lines[i], n);
		}
	}
	/* Each line kept, then each repeat: still refused. */
	for (i = 0; i < sizeof repeated / sizeof repeated[0]; i++)
		for (k = 0; k < sizeof lines / sizeof lines[0]; k++) {
			failures += !memo_agrees(js, plain, m, lines[k],
			    strlen(lines[k]));
			assert_int_not_equal(jscan_run_memo_path(js, repeated[i],
			    strlen(repeated[i]), m, test_path), 0);
			failures += !memo_agrees(js, plain, m, lines[k],
			    strlen(lines[k]));
			failures += !memo_agrees(js, plain, m, repeated[i],
			    strlen(repeated[i]));
			failures += !memo_agrees(mid, plain2, m2, lines[k],
			    strlen(lines[k]));
			assert_int_not_equal(jscan_run_memo_path(mid, repeated[i],
			    strlen(repeated[i]), m2, test_path), 0);
		}
	free(b.p);
	jscan_memo_free(m);
	jscan_memo_free(m2);
	jscan_free(js);
	jscan_free(plain);
	jscan_free(shallow);
	jscan_free(plain1);
	jscan_free(mid);
	jscan_free(plain2);
	assert_int_equal(failures, 0);
}

/*
 * A memo's tokens are copied onto the tape only when the scanner's tape
 * does not hold them already: the lines of one stream after each other on
 * one scanner take them from it.  Whatever ran on the scanner between
 * (a walk without a memo, a walk with another memo, a line that resumed
 * earlier and wrote its own tokens past that point, a memo freed and
 * another made, maybe at its address, kept from another scanner) the
 * tape is what a scan of the line alone gives.
 */
static void
test_memo_tape(void **state)
{
#define MT_HEAD	"{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\"," \
	    "\"agent\":{\"id\":\"echo.1\",\"name\":\"echo\"}," \
	    "\"timestamp\":\"2026-11-27T11:23:52Z\",\"intent\":\"execute\","
#define MT_TAIL	"\"content\":{\"type\":\"text\",\"text\":\"#1\"}," \
	    "\"trace\":{\"id\":\"e\"}}"
	static const char a[] = MT_HEAD "\"task\":\"echo\"," MT_TAIL;
	/* Resumes at content. */
	static const char a2[] = MT_HEAD "\"task\":\"echo\"," "\"content\":"
	    "{\"type\":\"text\",\"text\":\"#2 b\"},\"trace\":{\"id\":\"f\"}}";
	/* Resumes at task, its tokens of another length from there. */
	static const char a3[] = MT_HEAD "\"task\":\"echoes\"," MT_TAIL;
	/* Fails after the resume. */
	static const char a4[] = MT_HEAD "\"task\":\"echo\"," "\"content\":"
	    "{\"type\":\"text\",\"text\":\"#3\"},\"trace\":{\"id\":}}";
	/*
	 * The memo keeps a new line on another scanner, then comes back to
	 * a scanner whose tape still holds the older line's tokens (each
	 * line takes a scanner from the pool, so this happens).
	 */
#define MT_ROLE(r, z) "{\"protocol\":\"multiagent-1.0\",\"role\":\"" r "\"," \
	    "\"intent\":\"plan\",\"task\":\"t\",\"content\":{\"type\":" \
	    "\"text\"},\"z\":" z "}"
	static const char b1[] = MT_ROLE("agent", "1");
	static const char b2[] = MT_ROLE("user", "2");
	static const char b3[] = MT_ROLE("user", "3");
	/* Other lines on the same scanner. */
	static const char x[] = "{\"w\":[1,2,{\"v\":\"u\"}],\"a\":\"b\","
	    "\"c\":\"d\",\"e\":\"f\",\"g\":\"h\",\"i\":{\"j\":\"k\"}}";
	static const char x2[] = "{\"w\":[1,2,{\"v\":\"u\"}],\"a\":\"b\","
	    "\"c\":\"d\",\"e\":\"f\",\"g\":\"h\",\"i\":{\"j\":\"l\"}}";
	struct jscan		*js = jscan_create(4), *other = jscan_create(4);
	struct jscan		*plain = jscan_create(4);
	struct jscan_memo	*m = jscan_memo_create(), *m2 = jscan_memo_create();
	struct jscan_memo	*m3 = jscan_memo_create();
	int			 failures = 0, round;

	(void)state;
#define MT(sc, memo, s)	(failures += !memo_agrees((sc), plain, (memo), (s), \
	    sizeof(s) - 1))
	for (round = 0; round < 3; round++) {
		MT(js, m, a);
		MT(js, m, a2);
		MT(js, m, a2);
		/* A walk without a memo wrote the tape. */
		assert_int_equal(jscan_run_path(js, x, sizeof x - 1, test_path),
		    0);
		MT(js, m, a2);
		/* A walk with another memo. */
		MT(js, m2, x);
		MT(js, m2, x2);
		MT(js, m, a2);
		/* One that resumed earlier, then one that resumes later. */
		MT(js, m, a3);
		MT(js, m, a2);
		/* One refused after its resume. */
		MT(js, m, a4);
		MT(js, m, a2);
		/* The memo moves on with another scanner, then comes back. */
		jscan_memo_free(m3);
		m3 = jscan_memo_create();
		MT(js, m3, b1);
		MT(other, m3, b2);
		MT(js, m3, b3);
		/* The memo given up, another made, kept from another scanner. */
		jscan_memo_free(m);
		m = jscan_memo_create();
		MT(other, m, x);
		MT(other, m, x2);
		MT(js, m, x2);
		jscan_memo_free(m2);
		m2 = jscan_memo_create();
	}
#undef MT
#undef MT_HEAD
#undef MT_TAIL
#undef MT_ROLE
	jscan_memo_free(m);
	jscan_memo_free(m2);
	jscan_memo_free(m3);
	jscan_free(js);
	jscan_free(other);
	jscan_free(plain);
	assert_int_equal(failures, 0);
}

/*
 * A walk resumes inside a top-level member's object when the line's first
 * difference is there: at the bench's input's trace id, at its reply's
 * content text (after their type), its tape and its answer the line's
 * alone.
 */
static void
test_memo_nested(void **state)
{
#define MN_IN(id, text) "{\"protocol\":\"multiagent-1.0\",\"role\":\"user\"," \
	    "\"timestamp\":\"2026-11-22T12:40:00Z\",\"intent\":\"execute\"," \
	    "\"task\":\"bench\",\"trace\":{\"id\":\"" id "\"},\"content\":" \
	    "{\"type\":\"text\",\"text\":\"" text "\"}}"
#define MN_OUT(text, id) "{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\"," \
	    "\"agent\":{\"id\":\"echo.1\",\"name\":\"echo\",\"model\":\"echo\"}," \
	    "\"timestamp\":\"2026-11-27T22:28:52Z\",\"intent\":\"execute\"," \
	    "\"task\":\"echo\",\"content\":{\"type\":\"text\",\"text\":\"" \
	    text "\"},\"confidence\":{\"score\":0.9},\"trace\":{\"parents\":" \
	    "[\"b-0\"],\"id\":\"" id "\"}}"
	static const char *const lines[] = {
	    MN_IN("b-0000000000", "#0 xxxx"), MN_IN("b-0000000001", "#1 xxxx"),
	    MN_IN("b-0000000002", "#2 xxxx"),
	    MN_OUT("#0 xxxx", "echo.1-1"), MN_OUT("#4 xxxx", "echo.1-2"),
	    MN_OUT("#8 xxxx", "echo.1-3") };
	struct jscan		*js = jscan_create(4), *plain = jscan_create(4);
	struct jscan_memo	*m = jscan_memo_create();
	uint64_t		 from, now;
	size_t			 i, n;
	int			 t, key, failures = 0;

	(void)state;
	for (i = 0; i < sizeof lines / sizeof lines[0]; i++) {
		n = strlen(lines[i]);
		failures += !memo_agrees(js, plain, m, lines[i], n);
		if (i == 0 || i == 3)
			continue;
		/* The key of the first member that differs, in its object. */
		if (i < 3) {
			t = jscan_get(js, lines[i], 0, "trace");
			key = jscan_get(js, lines[i], t, "id") - 1;
		} else {
			t = jscan_get(js, lines[i], 0, "content");
			key = jscan_get(js, lines[i], t, "text") - 1;
		}
		assert_int_equal(js->memo_ntok, key);
		/* The top-level member it is in, for envelope_check_memo. */
		assert_int_equal(jscan_memo_resumed(m, &from, &now), i < 3 ? 5 : 6);
	}
#undef MN_IN
#undef MN_OUT
	jscan_memo_free(m);
	jscan_free(js);
	jscan_free(plain);
	assert_int_equal(failures, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_matches_jansson),
		cmocka_unit_test(test_nul_bytes_rejected),
		cmocka_unit_test(test_nesting_limit),
		cmocka_unit_test(test_long_mantissa_with_large_exponent),
		cmocka_unit_test(test_duplicate_keys_in_large_objects),
		cmocka_unit_test(test_error_offsets),
		cmocka_unit_test(test_length_is_respected),
		cmocka_unit_test(test_differential_random),
		cmocka_unit_test(test_block_boundaries),
		cmocka_unit_test(test_block_cache),
		cmocka_unit_test(test_every_byte_in_strings),
		cmocka_unit_test(test_envelope_prefixes),
		cmocka_unit_test(test_envelope_keys_repeated),
		cmocka_unit_test(test_get_members),
		cmocka_unit_test(test_array_walk),
		cmocka_unit_test(test_text_decoding),
		cmocka_unit_test(test_opaque_beyond_maxlevel),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_trim_after_huge_document),
		cmocka_unit_test(test_memo),
		cmocka_unit_test(test_memo_tape),
		cmocka_unit_test(test_memo_nested),
	};

	char	name[64];
	int	p, rc = 0;

	for (p = JSCAN_SCALAR; p <= JSCAN_AVX2; p++) {
		test_path = (enum jscan_path)p;
		snprintf(name, sizeof name, "jscan, %s path",
		    jscan_path_name(test_path));
		if (!jscan_path_has(test_path)) {
			print_message("%s: this machine has none\n", name);
			continue;
		}
		/* jscan_run takes the path too, its fallback included. */
		assert_int_equal(jscan_path_set(test_path), 0);
		rc |= _cmocka_run_group_tests(name, tests,
		    sizeof tests / sizeof tests[0], NULL, NULL);
	}
	return rc;
}
