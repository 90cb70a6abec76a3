/*
 * A validating JSON scanner that builds no tree.
 *
 * corral reads every line an agent writes, so this is the hot path.  The
 * scanner makes one pass over the bytes, checks them against exactly the
 * grammar jansson accepts with JSON_REJECT_DUPLICATES (UTF-8, escapes,
 * surrogates, \u0000, integer and real overflow, nesting depth, duplicate
 * keys at every level) and records a "tape" of tokens for the values near
 * the top of the document.  Values deeper than the tape depth are checked
 * but not recorded, so a huge content.data costs no memory.  Callers walk
 * the tape with json_get and splice the original bytes when they need to
 * change a field; nothing is ever re-serialized.
 */

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "corral.h"

#define JSCAN_MAX_DEPTH	2048	/* jansson's JSON_PARSER_MAX_DEPTH */
#define JSCAN_POOL	8	/* scanners kept for reuse; more are made */
#define JSCAN_POOL_LEVEL 4	/* what the pool's scanners record */

struct jscan_frame {
	uint32_t	tok;	/* tape index, or UINT32_MAX when not recorded */
	uint32_t	keys;	/* first key of this object in the key stack */
	uint8_t		obj;
};

struct jscan_key {
	uint32_t	off;	/* offset of the opening quote */
	uint32_t	len;	/* raw length, quotes included */
	uint32_t	tag;	/* length and end bytes; 0 when escaped */
	uint8_t		esc;
};

static struct jscan	*jscan_pool[JSCAN_POOL];
static size_t		 jscan_npool;

/* Create a scanner whose tape records values up to maxlevel deep. */
struct jscan *
jscan_create(unsigned int maxlevel)
{
	struct jscan	*js;

	js = xcalloc(1, sizeof *js);
	js->maxlevel = maxlevel;
	js->tokcap = 64;
	js->tok = xcalloc(js->tokcap, sizeof *js->tok);
	js->frames = xcalloc(JSCAN_MAX_DEPTH + 1, sizeof *js->frames);
	js->keycap = 64;
	js->keys = xcalloc(js->keycap, sizeof *js->keys);
	return js;
}

/* Free a scanner. */
void
jscan_free(struct jscan *js)
{
	if (js == NULL)
		return;
	free(js->tok);
	free(js->frames);
	free(js->keys);
	free(js->table);
	free(js->tmp);
	free(js);
}

/*
 * Give back memory a single huge line made the scanner take, so that one
 * hostile line does not pin it for the life of the process.
 */
void
jscan_trim(struct jscan *js)
{
	if (js->tokcap > 4096) {
		js->tokcap = 64;
		js->tok = xreallocarray(js->tok, js->tokcap, sizeof *js->tok);
	}
	if (js->keycap > 4096) {
		js->keycap = 64;
		js->keys = xreallocarray(js->keys, js->keycap, sizeof *js->keys);
	}
	if (js->tablecap > 4096) {
		free(js->table);
		js->table = NULL;
		js->tablecap = 0;
	}
	if (js->tmpcap > 65536) {
		free(js->tmp);
		js->tmp = NULL;
		js->tmpcap = 0;
	}
}

/*
 * Take a scanner for one line, recording the top JSCAN_POOL_LEVEL levels
 * (an envelope's fields); give it back with jscan_give.  A tape belongs
 * to the handler that took it, so a handler that must scan another line
 * meanwhile takes a scanner of its own.
 */
struct jscan *
jscan_take(void)
{
	if (jscan_npool > 0)
		return jscan_pool[--jscan_npool];
	return jscan_create(JSCAN_POOL_LEVEL);
}

/* Give a scanner back to the pool. */
void
jscan_give(struct jscan *js)
{
	if (js == NULL)
		return;
	jscan_trim(js);
	if (jscan_npool < JSCAN_POOL)
		jscan_pool[jscan_npool++] = js;
	else
		jscan_free(js);
}

/* Free the pool (corral is exiting, or a test is over). */
void
jscan_drain(void)
{
	while (jscan_npool > 0)
		jscan_free(jscan_pool[--jscan_npool]);
}

/* Record an error at offset off and return -1. */
static int
jscan_fail(struct jscan *js, size_t off, const char *msg)
{
	js->err_off = off;
	js->err = msg;
	return -1;
}

/* Append a token to the tape and return its index. */
static inline uint32_t
jscan_push_tok(struct jscan *js, uint8_t type, size_t off)
{
	struct jtok	*t;

	if (js->ntok == js->tokcap) {
		js->tokcap *= 2;
		js->tok = xreallocarray(js->tok, js->tokcap, sizeof *js->tok);
	}
	t = &js->tok[js->ntok];
	t->type = type;
	t->flags = 0;
	t->off = (uint32_t)off;
	t->len = 0;
	t->next = js->ntok + 1;
	return js->ntok++;
}

/* Hexadecimal digit value, or -1. */
static int
jscan_hex(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Read four hex digits at p (n bytes available); -1 if invalid. */
static long
jscan_hex4(const unsigned char *p, size_t n)
{
	long	v = 0;
	int	i, h;

	if (n < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		if ((h = jscan_hex(p[i])) < 0)
			return -1;
		v = (v << 4) | h;
	}
	return v;
}

/*
 * Scan a string whose opening quote is at *posp; leave *posp after the
 * closing quote.  Sets *esc when the string holds escapes.
 */
static inline __attribute__((always_inline)) int
jscan_string(struct jscan *js, const unsigned char *s, size_t n,
    size_t *posp, uint8_t *esc)
{
	size_t	pos = *posp + 1, k;
	long	v, v2;

	*esc = 0;
	for (;;) {
#ifdef __SSE2__
		while (pos + 16 <= n) {
			__m128i	x = _mm_loadu_si128((const __m128i *)(s + pos));
			__m128i	q = _mm_cmpeq_epi8(x, _mm_set1_epi8('"'));
			__m128i	b = _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'));
			/* Signed compare: catches < 0x20 and >= 0x80 at once. */
			__m128i	c = _mm_cmplt_epi8(x, _mm_set1_epi8(0x20));
			int	m = _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(q,
			    b), c));
			if (m != 0) {
				pos += (size_t)__builtin_ctz((unsigned int)m);
				break;
			}
			pos += 16;
		}
#endif
		while (pos < n && s[pos] >= 0x20 && s[pos] < 0x80 &&
		    s[pos] != '"' && s[pos] != '\\')
			pos++;
		if (pos >= n)
			return jscan_fail(js, n, "unterminated string");
		if (s[pos] == '"') {
			*posp = pos + 1;
			return 0;
		}
		if (s[pos] >= 0x80) {
			if ((k = util_utf8_len(s + pos, n - pos)) == 0)
				return jscan_fail(js, pos, "invalid UTF-8");
			pos += k;
			continue;
		}
		if (s[pos] < 0x20) {
			if (s[pos] == 0)
				return jscan_fail(js, pos, "NUL byte");
			return jscan_fail(js, pos, "control character in string");
		}
		/* A backslash. */
		*esc = 1;
		if (pos + 1 >= n)
			return jscan_fail(js, pos, "unterminated string");
		switch (s[pos + 1]) {
		case '"': case '\\': case '/': case 'b': case 'f': case 'n':
		case 'r': case 't':
			pos += 2;
			continue;
		case 'u':
			break;
		default:
			return jscan_fail(js, pos, "invalid escape");
		}
		if ((v = jscan_hex4(s + pos + 2, n - pos - 2)) < 0)
			return jscan_fail(js, pos, "invalid \\u escape");
		pos += 6;
		if (v == 0)
			return jscan_fail(js, pos - 6, "\\u0000 in string");
		if (v >= 0xDC00 && v <= 0xDFFF)
			return jscan_fail(js, pos - 6, "lone low surrogate");
		if (v >= 0xD800 && v <= 0xDBFF) {
			if (pos + 1 >= n || s[pos] != '\\' || s[pos + 1] != 'u')
				return jscan_fail(js, pos - 6,
				    "lone high surrogate");
			if ((v2 = jscan_hex4(s + pos + 2, n - pos - 2)) < 0)
				return jscan_fail(js, pos, "invalid \\u escape");
			if (v2 < 0xDC00 || v2 > 0xDFFF)
				return jscan_fail(js, pos, "invalid surrogate pair");
			pos += 6;
		}
	}
}

/*
 * Decide whether a real number overflows a double, as jansson's strtod
 * check does.  Only numbers near 1e308 need strtod itself.
 */
static int
jscan_real_overflows(struct jscan *js, const unsigned char *s, size_t len)
{
	size_t		i = 0, lead = 0, intdigits = 0, fraczeros = 0;
	int		nonzero = 0, in_frac = 0, expneg = 0;
	long long	exp = 0, mag;
	char	*copy;
	double	d;

	if (s[i] == '-')
		i++;
	for (; i < len && s[i] != 'e' && s[i] != 'E'; i++) {
		if (s[i] == '.') {
			in_frac = 1;
			continue;
		}
		if (!nonzero && s[i] == '0') {
			if (in_frac)
				fraczeros++;
			else
				lead++;
			continue;
		}
		if (!nonzero) {
			nonzero = 1;
			if (in_frac)
				intdigits = 0;
		}
		if (!in_frac)
			intdigits++;
	}
	if (!nonzero)
		return 0;
	if (i < len) {
		i++;
		if (s[i] == '-' || s[i] == '+')
			expneg = (s[i++] == '-');
		for (; i < len; i++) {
			/* Saturate far beyond any digit count a line can hold. */
			if (exp < 1000000000000000LL)
				exp = exp * 10 + (s[i] - '0');
		}
		if (expneg)
			exp = -exp;
	}
	/* The value lies in [10^mag, 10^(mag+1)). */
	if (intdigits > 0)
		mag = (long long)intdigits - 1 + exp;
	else
		mag = -(long long)fraczeros - 1 + exp;
	(void)lead;
	if (mag <= 307)
		return 0;
	if (mag >= 309)
		return 1;
	if (js->tmpcap < len + 1) {
		js->tmpcap = len + 1;
		js->tmp = xreallocarray(js->tmp, js->tmpcap, 1);
	}
	copy = js->tmp;
	memcpy(copy, s, len);
	copy[len] = '\0';
	errno = 0;
	d = strtod(copy, NULL);
	return (d == HUGE_VAL || d == -HUGE_VAL) && errno == ERANGE;
}

/* Scan a number at *posp; set *integer when it has no fraction or exponent. */
static int
jscan_scan_number(struct jscan *js, const unsigned char *s, size_t n,
    size_t *posp, uint8_t *integer)
{
	size_t	start = *posp, pos = *posp, digits;
	int	neg = 0;
	static const char	max[] = "9223372036854775807";
	static const char	min[] = "9223372036854775808";

	if (s[pos] == '-') {
		neg = 1;
		pos++;
	}
	if (pos >= n || s[pos] < '0' || s[pos] > '9')
		return jscan_fail(js, start, "invalid number");
	if (s[pos] == '0') {
		pos++;
		if (pos < n && s[pos] >= '0' && s[pos] <= '9')
			return jscan_fail(js, start, "invalid number");
	} else {
		while (pos < n && s[pos] >= '0' && s[pos] <= '9')
			pos++;
	}
	digits = pos - start - (size_t)neg;
	if (pos >= n || (s[pos] != '.' && s[pos] != 'e' && s[pos] != 'E')) {
		*integer = 1;
		*posp = pos;
		if (digits > 19 || (digits == 19 && memcmp(s + start + neg,
		    neg ? min : max, 19) > 0))
			return jscan_fail(js, start, "integer out of range");
		return 0;
	}
	*integer = 0;
	if (s[pos] == '.') {
		pos++;
		if (pos >= n || s[pos] < '0' || s[pos] > '9')
			return jscan_fail(js, start, "invalid number");
		while (pos < n && s[pos] >= '0' && s[pos] <= '9')
			pos++;
	}
	if (pos < n && (s[pos] == 'e' || s[pos] == 'E')) {
		pos++;
		if (pos < n && (s[pos] == '+' || s[pos] == '-'))
			pos++;
		if (pos >= n || s[pos] < '0' || s[pos] > '9')
			return jscan_fail(js, start, "invalid number");
		while (pos < n && s[pos] >= '0' && s[pos] <= '9')
			pos++;
	}
	*posp = pos;
	if (jscan_real_overflows(js, s + start, pos - start))
		return jscan_fail(js, start, "real number overflow");
	return 0;
}

/* Hash the decoded form of a key (FNV-1a over the code units). */
static uint32_t
jscan_key_hash(struct jscan *js, const char *s, const struct jscan_key *k)
{
	const unsigned char	*p;
	size_t			 len, i;
	uint32_t		 h = 2166136261u;

	if (k->esc) {
		len = jscan_unescape(js, s + k->off, k->len);
		p = (const unsigned char *)js->tmp;
	} else {
		p = (const unsigned char *)s + k->off + 1;
		len = k->len - 2;
	}
	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h;
}

/* Compare two keys by their decoded bytes. */
static int
jscan_key_equal(struct jscan *js, const char *s, const struct jscan_key *a,
    const struct jscan_key *b)
{
	char	*copy;
	size_t	 alen;
	int	 eq;

	if (!a->esc && !b->esc)
		return a->len == b->len &&
		    memcmp(s + a->off, s + b->off, a->len) == 0;
	alen = jscan_unescape(js, s + a->off, a->len);
	copy = xmemdup0(js->tmp, alen);
	eq = jscan_str_equal(js, s + b->off, b->len, b->esc, copy, alen);
	free(copy);
	return eq;
}

/* Check the keys of one closed object for duplicates. */
static int
jscan_check_keys(struct jscan *js, const char *s, uint32_t first)
{
	uint32_t	 nkeys = js->nkeys - first, i, j, mask, h, slot;
	struct jscan_key	*k = js->keys + first;
	uint8_t		 esc;

	if (nkeys < 2)
		return 0;
	if (nkeys <= 12) {
		for (i = 0, esc = 0; i < nkeys; i++)
			esc |= k[i].esc;
		for (i = 1; i < nkeys; i++) {
			for (j = 0; j < i; j++) {
				/* Plain keys: equal tags first, then bytes. */
				if (k[i].tag != k[j].tag && (!esc ||
				    (!k[i].esc && !k[j].esc)))
					continue;
				if (jscan_key_equal(js, s, &k[i], &k[j]))
					return jscan_fail(js, k[i].off,
					    "duplicate key");
			}
		}
		return 0;
	}
	/* Open addressing over key indexes, sized to twice the keys. */
	for (mask = 1; mask < nkeys * 2; mask <<= 1)
		;
	if (js->tablecap < mask) {
		free(js->table);
		js->tablecap = mask;
		js->table = xcalloc(mask, sizeof *js->table);
	}
	memset(js->table, 0xff, mask * sizeof *js->table);
	mask--;
	for (i = 0; i < nkeys; i++) {
		h = jscan_key_hash(js, s, &k[i]);
		for (slot = h & mask;; slot = (slot + 1) & mask) {
			j = js->table[slot];
			if (j == UINT32_MAX) {
				js->table[slot] = i;
				break;
			}
			if (jscan_key_equal(js, s, &k[i], &k[j]))
				return jscan_fail(js, k[i].off, "duplicate key");
		}
	}
	return 0;
}

/* Skip JSON whitespace. */
static inline size_t
jscan_ws(const unsigned char *s, size_t n, size_t pos)
{
	/* Compact JSON has none: one comparison decides. */
	if (pos < n && s[pos] > ' ')
		return pos;
	while (pos < n && (s[pos] == ' ' || s[pos] == '\n' || s[pos] == '\t' ||
	    s[pos] == '\r'))
		pos++;
	return pos;
}

/*
 * Scan the scalar value at *pos (a string, literal or number) and record
 * it when depth is within the tape; *pos moves past it.
 */
static inline int
jscan_scalar(struct jscan *js, const unsigned char *s, size_t n, size_t *pos,
    uint32_t depth)
{
	size_t		 start = *pos;
	uint32_t	 t = UINT32_MAX;
	uint8_t		 flag;

	switch (s[start]) {
	case '"':
		if (jscan_string(js, s, n, pos, &flag) != 0)
			return -1;
		if (depth <= js->maxlevel) {
			t = jscan_push_tok(js, JT_STRING, start);
			js->tok[t].flags = flag ? JT_ESCAPED : 0;
		}
		break;
	case 't':
		if (n - start < 4 || memcmp(s + start, "true", 4) != 0)
			return jscan_fail(js, start, "invalid literal");
		*pos += 4;
		if (depth <= js->maxlevel)
			t = jscan_push_tok(js, JT_TRUE, start);
		break;
	case 'f':
		if (n - start < 5 || memcmp(s + start, "false", 5) != 0)
			return jscan_fail(js, start, "invalid literal");
		*pos += 5;
		if (depth <= js->maxlevel)
			t = jscan_push_tok(js, JT_FALSE, start);
		break;
	case 'n':
		if (n - start < 4 || memcmp(s + start, "null", 4) != 0)
			return jscan_fail(js, start, "invalid literal");
		*pos += 4;
		if (depth <= js->maxlevel)
			t = jscan_push_tok(js, JT_NULL, start);
		break;
	default:
		if (s[start] != '-' && (s[start] < '0' || s[start] > '9')) {
			if (s[start] == 0)
				return jscan_fail(js, start, "NUL byte");
			return jscan_fail(js, start, "unexpected character");
		}
		if (jscan_scan_number(js, s, n, pos, &flag) != 0)
			return -1;
		if (depth <= js->maxlevel) {
			t = jscan_push_tok(js, JT_NUMBER, start);
			js->tok[t].flags = flag ? JT_INTEGER : 0;
		}
		break;
	}
	/* Literals run into letters in jansson's lexer ("truex"). */
	if (s[start] >= 'a' && s[start] <= 'z' && *pos < n &&
	    ((s[*pos] >= 'a' && s[*pos] <= 'z') || (s[*pos] >= 'A' &&
	    s[*pos] <= 'Z')))
		return jscan_fail(js, start, "invalid literal");
	if (t != UINT32_MAX)
		js->tok[t].len = (uint32_t)(*pos - start);
	return 0;
}

/*
 * Scan an object member's key at *pos, up to and past its ':', keeping
 * it for the duplicate check and, when the object is on the tape,
 * recording it there.
 */
static inline int
jscan_key(struct jscan *js, const unsigned char *s, size_t n, size_t *pos,
    const struct jscan_frame *f)
{
	size_t		 start = *pos;
	uint32_t	 t;
	uint8_t		 flag;

	if (start >= n || s[start] != '"') {
		if (start < n && s[start] == 0)
			return jscan_fail(js, start, "NUL byte");
		return jscan_fail(js, start, "string key expected");
	}
	if (jscan_string(js, s, n, pos, &flag) != 0)
		return -1;
	if (js->nkeys == js->keycap) {
		js->keycap *= 2;
		js->keys = xreallocarray(js->keys, js->keycap, sizeof *js->keys);
	}
	js->keys[js->nkeys].off = (uint32_t)start;
	js->keys[js->nkeys].len = (uint32_t)(*pos - start);
	js->keys[js->nkeys].esc = flag;
	/* Two plain keys can be equal only if their tags are. */
	js->keys[js->nkeys].tag = flag ? 0 : ((uint32_t)(*pos - start) << 16) ^
	    ((uint32_t)s[start + 1] << 8) ^ s[*pos - 2];
	js->nkeys++;
	if (f->tok != UINT32_MAX && !(js->tok[f->tok].flags & JT_OPAQUE)) {
		t = jscan_push_tok(js, JT_STRING, start);
		js->tok[t].len = (uint32_t)(*pos - start);
		js->tok[t].flags = flag ? JT_ESCAPED : 0;
	}
	*pos = jscan_ws(s, n, *pos);
	if (*pos >= n || s[*pos] != ':')
		return jscan_fail(js, *pos, "':' expected");
	*pos = jscan_ws(s, n, *pos + 1);
	return 0;
}

/*
 * Scan n bytes at p.  Returns 0 and fills the tape when the bytes are one
 * JSON object or array that jansson would accept; otherwise -1 with
 * js->err and js->err_off set.
 */
int
jscan_run(struct jscan *js, const char *p, size_t n)
{
	const unsigned char	*s = (const unsigned char *)p;
	struct jscan_frame	*f;
	size_t			 pos;
	uint32_t		 depth = 0, t;

	js->ntok = 0;
	js->nkeys = 0;
	js->nvals = 0;
	js->err = NULL;
	js->err_off = 0;
	if (n >= UINT32_MAX)
		return jscan_fail(js, 0, "document too large");

	pos = jscan_ws(s, n, 0);
	if (pos >= n || (s[pos] != '{' && s[pos] != '['))
		return jscan_fail(js, pos, "'{' or '[' expected");

value:
	/* Parse one value at pos; depth containers are open around it. */
	if (depth + 1 > JSCAN_MAX_DEPTH)
		return jscan_fail(js, pos, "nesting too deep");
	if (pos >= n)
		return jscan_fail(js, pos, "value expected");
	js->nvals++;
	if (s[pos] == '{' || s[pos] == '[') {
		t = UINT32_MAX;
		if (depth <= js->maxlevel) {
			t = jscan_push_tok(js, s[pos] == '{' ? JT_OBJECT :
			    JT_ARRAY, pos);
			if (depth == js->maxlevel)
				js->tok[t].flags |= JT_OPAQUE;
		}
		f = &js->frames[depth++];
		f->tok = t;
		f->obj = (s[pos] == '{');
		f->keys = js->nkeys;
		pos = jscan_ws(s, n, pos + 1);
		if (f->obj) {
			if (pos < n && s[pos] == '}')
				goto close;
			goto key;
		}
		if (pos < n && s[pos] == ']')
			goto close;
		goto value;
	}
	if (jscan_scalar(js, s, n, &pos, depth) != 0)
		return -1;

after:
	/* A value ended at pos. */
	pos = jscan_ws(s, n, pos);
	if (depth == 0) {
		if (pos != n)
			return jscan_fail(js, pos, "trailing characters");
		return 0;
	}
	f = &js->frames[depth - 1];
	if (pos >= n)
		return jscan_fail(js, pos, f->obj ? "'}' expected" :
		    "']' expected");
	if (s[pos] == ',') {
		pos = jscan_ws(s, n, pos + 1);
		if (f->obj)
			goto key;
		goto value;
	}
	if (s[pos] != (f->obj ? '}' : ']'))
		return jscan_fail(js, pos, f->obj ? "',' or '}' expected" :
		    "',' or ']' expected");

close:
	/* pos is at the closing bracket of the innermost container. */
	f = &js->frames[depth - 1];
	if (f->obj) {
		if (jscan_check_keys(js, p, f->keys) != 0)
			return -1;
		js->nkeys = f->keys;
	}
	if (f->tok != UINT32_MAX) {
		js->tok[f->tok].len = (uint32_t)(pos + 1 - js->tok[f->tok].off);
		js->tok[f->tok].next = js->ntok;
	}
	depth--;
	pos++;
	goto after;

key:
	/* Inside an object, at the start of a member. */
	if (jscan_key(js, s, n, &pos, &js->frames[depth - 1]) != 0)
		return -1;
	js->nvals++;
	goto value;
}

/*
 * Decode the raw JSON string at s (quotes included, already validated)
 * into js->tmp; return the decoded length.
 */
size_t
jscan_unescape(struct jscan *js, const char *s, size_t rawlen)
{
	const unsigned char	*p = (const unsigned char *)s + 1;
	const unsigned char	*end = (const unsigned char *)s + rawlen - 1;
	char			*o;
	long			 v, v2;

	if (js->tmpcap < rawlen + 1) {
		js->tmpcap = rawlen + 1;
		js->tmp = xreallocarray(js->tmp, js->tmpcap, 1);
	}
	o = js->tmp;
	while (p < end) {
		if (*p != '\\') {
			*o++ = (char)*p++;
			continue;
		}
		p++;
		switch (*p) {
		case 'b': *o++ = '\b'; p++; continue;
		case 'f': *o++ = '\f'; p++; continue;
		case 'n': *o++ = '\n'; p++; continue;
		case 'r': *o++ = '\r'; p++; continue;
		case 't': *o++ = '\t'; p++; continue;
		case 'u': break;
		default: *o++ = (char)*p++; continue;
		}
		v = jscan_hex4(p + 1, (size_t)(end - p - 1));
		p += 5;
		if (v >= 0xD800 && v <= 0xDBFF) {
			v2 = jscan_hex4(p + 2, (size_t)(end - p - 2));
			p += 6;
			v = 0x10000 + ((v - 0xD800) << 10) + (v2 - 0xDC00);
		}
		if (v < 0x80)
			*o++ = (char)v;
		else if (v < 0x800) {
			*o++ = (char)(0xC0 | (v >> 6));
			*o++ = (char)(0x80 | (v & 0x3F));
		} else if (v < 0x10000) {
			*o++ = (char)(0xE0 | (v >> 12));
			*o++ = (char)(0x80 | ((v >> 6) & 0x3F));
			*o++ = (char)(0x80 | (v & 0x3F));
		} else {
			*o++ = (char)(0xF0 | (v >> 18));
			*o++ = (char)(0x80 | ((v >> 12) & 0x3F));
			*o++ = (char)(0x80 | ((v >> 6) & 0x3F));
			*o++ = (char)(0x80 | (v & 0x3F));
		}
	}
	*o = '\0';
	return (size_t)(o - js->tmp);
}

/* Compare a raw JSON string (quotes included) with plain bytes. */
int
jscan_str_equal(struct jscan *js, const char *raw, size_t rawlen, int esc,
    const char *want, size_t wantlen)
{
	size_t	len;

	if (!esc)
		return rawlen == wantlen + 2 &&
		    memcmp(raw + 1, want, wantlen) == 0;
	len = jscan_unescape(js, raw, rawlen);
	return len == wantlen && memcmp(js->tmp, want, wantlen) == 0;
}

/* Find member key of the object token obj; return the value's index or -1. */
int
jscan_get(struct jscan *js, const char *s, int obj, const char *key)
{
	return jscan_getn(js, s, obj, key, strlen(key));
}

/* jscan_get with the key's length given (literals: sizeof - 1). */
int
jscan_getn(struct jscan *js, const char *s, int obj, const char *key,
    size_t keylen)
{
	const struct jtok	*t;
	uint32_t		 i, end;

	if (obj < 0 || (uint32_t)obj >= js->ntok)
		return -1;
	t = &js->tok[obj];
	if (t->type != JT_OBJECT || (t->flags & JT_OPAQUE))
		return -1;
	end = t->next;
	for (i = (uint32_t)obj + 1; i < end; i = js->tok[i + 1].next) {
		t = &js->tok[i];
		/* Plain keys: compare the bytes directly, cheapest first. */
		if (!(t->flags & JT_ESCAPED)) {
			if (t->len == keylen + 2 &&
			    memcmp(s + t->off + 1, key, keylen) == 0)
				return (int)i + 1;
			continue;
		}
		if (jscan_str_equal(js, s + t->off, t->len, 1, key, keylen))
			return (int)i + 1;
	}
	return -1;
}

/* Return the number of elements of an array token (or members of an object). */
size_t
jscan_count(const struct jscan *js, int tok)
{
	const struct jtok	*t = &js->tok[tok];
	uint32_t		 i;
	size_t			 n = 0;

	if (t->flags & JT_OPAQUE)
		return 0;
	for (i = (uint32_t)tok + 1; i < t->next; i = js->tok[i].next) {
		if (t->type == JT_OBJECT)
			i++;	/* skip the key */
		n++;
	}
	return n;
}

/* Return the index of the first element of an array token, or -1. */
int
jscan_first(const struct jscan *js, int arr)
{
	const struct jtok	*t = &js->tok[arr];

	if ((t->flags & JT_OPAQUE) || (uint32_t)arr + 1 >= t->next)
		return -1;
	return arr + 1;
}

/* Return the element after elem inside the array token arr, or -1. */
int
jscan_next(const struct jscan *js, int arr, int elem)
{
	uint32_t	n = js->tok[elem].next;

	return n < js->tok[arr].next ? (int)n : -1;
}

/*
 * Return a string token's text: the raw bytes between the quotes when it
 * has no escapes, else the decoded copy in js->tmp (valid until the next
 * call that uses it).
 */
const char *
jscan_text(struct jscan *js, const char *s, int tok, size_t *lenp)
{
	const struct jtok	*t = &js->tok[tok];

	if (t->flags & JT_ESCAPED) {
		*lenp = jscan_unescape(js, s + t->off, t->len);
		return js->tmp;
	}
	*lenp = t->len - 2;
	return s + t->off + 1;
}

/* Convert a number token to a double. */
double
jscan_number(struct jscan *js, const char *s, int tok)
{
	static const double	 pow10[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5,
	    1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15 };
	const struct jtok	*t = &js->tok[tok];
	const char		*p = s + t->off, *end = p + t->len;
	char			 buf[64], *copy = buf;
	uint64_t		 m = 0;
	int			 neg = 0, digits = 0, frac = -1;
	double			 d;

	/*
	 * The common case, a plain decimal such as 0.9 or 1234 with at most
	 * 15 digits: m / 10^k is then exactly what strtod returns, since
	 * both are exact doubles and the division rounds correctly.
	 */
	if (p < end && *p == '-') {
		neg = 1;
		p++;
	}
	for (; p < end; p++) {
		if (*p == '.' && frac < 0) {
			frac = 0;
			continue;
		}
		if (*p < '0' || *p > '9' || ++digits > 15)
			break;
		m = m * 10 + (uint64_t)(*p - '0');
		if (frac >= 0)
			frac++;
	}
	if (p == end) {
		d = (double)m / pow10[frac > 0 ? frac : 0];
		return neg ? -d : d;
	}

	if (t->len >= sizeof buf)
		copy = xmalloc(t->len + 1);
	memcpy(copy, s + t->off, t->len);
	copy[t->len] = '\0';
	d = strtod(copy, NULL);
	if (copy != buf)
		free(copy);
	return d;
}
