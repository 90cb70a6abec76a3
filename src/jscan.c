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
 * change a field; nothing is ever re-serialized.  A stream of lines that
 * begin alike (an agent's envelopes) may keep a memo of its last line's
 * first members, which the next line's walk takes instead of scanning
 * them again (jscan_run_memo).
 */

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "jscan-int.h"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#define JSCAN_POOL	8	/* scanners kept for reuse; more are made */
#define JSCAN_POOL_LEVEL 4	/* what the pool's scanners record */

static struct jscan	*jscan_pool[JSCAN_POOL];
static size_t		 jscan_npool;

#define JSCAN_K8(c)	(c), (c), (c), (c), (c), (c), (c), (c)
#define JSCAN_K32(c)	{ JSCAN_K8(c), JSCAN_K8(c), JSCAN_K8(c), JSCAN_K8(c) }
const unsigned char	 jscan_k[3][32] __attribute__((aligned(32))) = {
	JSCAN_K32(0x02), JSCAN_K32('\\'), JSCAN_K32(0x21)
};

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
 * The full duplicate check of an object whose key tags repeat (frame f,
 * closing): its keys from the tape (tok, ntok tokens), or from the key
 * stack when it is not on the tape.  It takes the walk's counters rather
 * than the walk, whose address must not escape: the compiler then keeps
 * them in registers.
 */
int
jscan_w_dup(struct jscan *js, const unsigned char *s, const struct jtok *tok,
    uint32_t ntok, const struct jscan_frame *f)
{
	struct jscan_key	*k;
	uint32_t		 i, nk = 0;

	if (!f->ontape)
		return jscan_check_keys(js, (const char *)s, js->keys + f->keys,
		    js->nkeys - f->keys);
	/* Nested objects are closed: the stack above f->keys is free. */
	for (i = f->tok + 1; i < ntok; i = tok[i + 1].next) {
		if (f->keys + nk == js->keycap)
			jscan_grow_keys(js, js->keycap);
		k = &js->keys[f->keys + nk++];
		k->off = tok[i].off;
		k->len = tok[i].len;
		k->esc = (tok[i].flags & JT_ESCAPED) != 0;
		k->tag = k->esc ? 0 : jscan_tag(s, k->off, k->len);
	}
	return jscan_check_keys(js, (const char *)s, js->keys + f->keys, nk);
}

/* Make room on the tape for more than ntok tokens. */
struct jtok *
jscan_grow_tok(struct jscan *js, uint32_t ntok)
{
	js->tokcap *= 2;
	js->tok = xreallocarray(js->tok, js->tokcap, sizeof *js->tok);
	return js->tok;
}

/* Make room on the key stack for more than nkeys keys. */
struct jscan_key *
jscan_grow_keys(struct jscan *js, uint32_t nkeys)
{
	js->keycap *= 2;
	js->keys = xreallocarray(js->keys, js->keycap, sizeof *js->keys);
	return js->keys;
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
int
jscan_fail(struct jscan *js, size_t off, const char *msg)
{
	js->err_off = off;
	js->err = msg;
	return -1;
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
long
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
 * The byte at *posp ends a run of plain string bytes without closing the
 * string: the end of the line, a byte above 0x7F (a UTF-8 character, which
 * is checked), a control character, or a backslash (an escape, checked).
 * Returns the offset after it, or SIZE_MAX when the string is invalid
 * there.  Every path shares this, so they name the same errors.
 */
size_t
jscan_string_special(struct jscan *js, const unsigned char *s, size_t n,
    size_t pos)
{
	const char	*why;
	size_t		 k, at = pos;
	long		 v, v2;

	if (pos >= n) {
		jscan_fail(js, n, "unterminated string");
		return SIZE_MAX;
	}
	if (s[pos] >= 0x80) {
		if ((k = util_utf8_len(s + pos, n - pos)) == 0) {
			why = "invalid UTF-8";
			goto fail;
		}
		return pos + k;
	}
	if (s[pos] < 0x20) {
		why = s[pos] == 0 ? "NUL byte" : "control character in string";
		goto fail;
	}
	/* A backslash. */
	why = "unterminated string";
	if (pos + 1 >= n)
		goto fail;
	switch (s[pos + 1]) {
	case '"': case '\\': case '/': case 'b': case 'f': case 'n':
	case 'r': case 't':
		return pos + 2;
	case 'u':
		break;
	default:
		why = "invalid escape";
		goto fail;
	}
	why = "invalid \\u escape";
	if ((v = jscan_hex4(s + pos + 2, n - pos - 2)) < 0)
		goto fail;
	if (v == 0 || (v >= 0xDC00 && v <= 0xDFFF)) {
		why = v == 0 ? "\\u0000 in string" : "lone low surrogate";
		goto fail;
	}
	pos += 6;
	if (v >= 0xD800 && v <= 0xDBFF) {
		why = "lone high surrogate";
		if (pos + 1 >= n || s[pos] != '\\' || s[pos + 1] != 'u')
			goto fail;
		at = pos;
		why = "invalid \\u escape";
		if ((v2 = jscan_hex4(s + pos + 2, n - pos - 2)) < 0)
			goto fail;
		why = "invalid surrogate pair";
		if (v2 < 0xDC00 || v2 > 0xDFFF)
			goto fail;
		pos += 6;
	}
	return pos;
fail:
	jscan_fail(js, at, why);
	return SIZE_MAX;
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

/* A number refused at start: msg, and SIZE_MAX. */
static __attribute__((noinline, cold)) size_t
jscan_number_fail(struct jscan *js, size_t start, const char *msg)
{
	jscan_fail(js, start, msg);
	return SIZE_MAX;
}

/*
 * An integer of 19 digits or more at start (neg: after its '-'), ending
 * at pos: jscan_scan_number's answer, SIZE_MAX when out of range.
 */
static __attribute__((noinline, cold)) size_t
jscan_number_big(struct jscan *js, const unsigned char *s, size_t start,
    size_t pos, int neg)
{
	static const char	max[] = "9223372036854775807";
	static const char	min[] = "9223372036854775808";
	size_t			digits = pos - start - (size_t)neg;

	if (digits > 19 || (digits == 19 && memcmp(s + start + neg,
	    neg ? min : max, 19) > 0))
		return jscan_number_fail(js, start, "integer out of range");
	return pos << 1 | 1;
}

/*
 * A real number from start to pos with an exponent or more than 308
 * digits: jscan_scan_number's answer, SIZE_MAX when it overflows.
 */
static __attribute__((noinline)) size_t
jscan_number_real(struct jscan *js, const unsigned char *s, size_t start,
    size_t pos)
{
	if (jscan_real_overflows(js, s + start, pos - start))
		return jscan_number_fail(js, start, "real number overflow");
	return pos << 1;
}

/*
 * Scan the number at start: returns the offset after it, shifted left by
 * one, with the low bit set when it has no fraction or exponent; SIZE_MAX
 * when it is invalid.  What calls a function here does so last, so that
 * the usual number (a score, a count) costs no saved registers.
 */
size_t
jscan_scan_number(struct jscan *js, const unsigned char *s, size_t n,
    size_t start)
{
	size_t	pos = start;
	int	neg = 0;

	if (s[pos] == '-') {
		neg = 1;
		pos++;
	}
	if (pos >= n || s[pos] < '0' || s[pos] > '9')
		goto invalid;
	if (s[pos] == '0') {
		pos++;
		if (pos < n && s[pos] >= '0' && s[pos] <= '9')
			goto invalid;
	} else {
		while (pos < n && s[pos] >= '0' && s[pos] <= '9')
			pos++;
	}
	if (pos >= n || (s[pos] != '.' && s[pos] != 'e' && s[pos] != 'E')) {
		if (pos - start - (size_t)neg >= 19)
			return jscan_number_big(js, s, start, pos, neg);
		return pos << 1 | 1;
	}
	if (s[pos] == '.') {
		pos++;
		if (pos >= n || s[pos] < '0' || s[pos] > '9')
			goto invalid;
		while (pos < n && s[pos] >= '0' && s[pos] <= '9')
			pos++;
	}
	if (pos < n && (s[pos] == 'e' || s[pos] == 'E')) {
		pos++;
		if (pos < n && (s[pos] == '+' || s[pos] == '-'))
			pos++;
		if (pos >= n || s[pos] < '0' || s[pos] > '9')
			goto invalid;
		while (pos < n && s[pos] >= '0' && s[pos] <= '9')
			pos++;
	} else if (pos - start <= 308)
		/* No exponent and at most 308 digits: below 1e308. */
		return pos << 1;
	return jscan_number_real(js, s, start, pos);
invalid:
	return jscan_number_fail(js, start, "invalid number");
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

/* Check the nkeys keys k of one closed object for duplicates. */
int
jscan_check_keys(struct jscan *js, const char *s, struct jscan_key *k,
    uint32_t nkeys)
{
	uint32_t	 i, j, mask, h, slot;
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

/*
 * Does any of the eight bytes at p end a run of plain string bytes (a
 * quote, a backslash, a control character or a byte above 0x7F)?  Returns
 * a mask whose lowest set bit is the high bit of the first such byte (the
 * byte tricks' carries only reach bytes after it).
 */
static inline uint64_t
jscan_special8(const unsigned char *p)
{
	const uint64_t	ones = 0x0101010101010101ULL, high = ones * 0x80;
	uint64_t	x, q, b;

	memcpy(&x, p, 8);
	q = x ^ (ones * '"');
	b = x ^ (ones * '\\');
	return ((x - ones * 0x20) | (q - ones) | (b - ones) | x) & high;
}

/*
 * The portable finder (jscan-walk.h), eight bytes at a time; *c is the
 * byte found (NUL at the line's end).
 */
static inline size_t
jscan_find_scalar(const struct jscan_tail *t, const unsigned char *s,
    size_t n, size_t pos, unsigned char *c)
{
	const unsigned char	*at;
	uint64_t		 m;

	for (;; pos += 8) {
		at = jscan_at(t, s, n, pos, 8);
		if ((m = jscan_special8(at)) == 0)
			continue;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		*c = at[__builtin_ctzll(m) >> 3];
		return pos + (size_t)(__builtin_ctzll(m) >> 3);
#else
		break;
#endif
	}
	for (; pos < n && s[pos] >= 0x20 && s[pos] < 0x80 && s[pos] != '"' &&
	    s[pos] != '\\'; pos++)
		;
	*c = pos < n ? s[pos] : 0;
	return pos;
}

#define JW(name)	jscan_##name##_scalar
#define JW_FIND		jscan_find_scalar
#include "jscan-walk.h"
#undef JW
#undef JW_FIND

/* The path jscan_run takes; chosen at the first scan. */
static int	jscan_path = -1;

/* Is path available on this machine? */
int
jscan_path_has(enum jscan_path path)
{
#if defined(__x86_64__)
	static int	avx2 = -1;

	if (path == JSCAN_SSE2)
		return 1;
	if (path == JSCAN_AVX2) {
		if (avx2 < 0) {
			__builtin_cpu_init();
			avx2 = __builtin_cpu_supports("avx2") != 0;
		}
		return avx2;
	}
#endif
	return path == JSCAN_SCALAR;
}

/* The name of a path, as CORRAL_JSCAN names it. */
const char *
jscan_path_name(enum jscan_path path)
{
	switch (path) {
	case JSCAN_SSE2:
		return "sse2";
	case JSCAN_AVX2:
		return "avx2";
	default:
		return "scalar";
	}
}

/*
 * The path jscan_run takes: the widest this machine has, or the one the
 * environment's CORRAL_JSCAN names (scalar, sse2, avx2), to compare them.
 */
enum jscan_path
jscan_path_get(void)
{
	const char	*want;
	int		 p;

	if (jscan_path >= 0)
		return (enum jscan_path)jscan_path;
	jscan_path = JSCAN_SCALAR;
	for (p = JSCAN_AVX2; p > JSCAN_SCALAR; p--) {
		if (jscan_path_has((enum jscan_path)p)) {
			jscan_path = p;
			break;
		}
	}
	if ((want = getenv("CORRAL_JSCAN")) != NULL) {
		for (p = JSCAN_SCALAR; p <= JSCAN_AVX2; p++)
			if (strcmp(want, jscan_path_name((enum jscan_path)p)) ==
			    0 && jscan_path_has((enum jscan_path)p))
				jscan_path = p;
	}
	return (enum jscan_path)jscan_path;
}

/* Make jscan_run take path; -1 if this machine lacks it. */
int
jscan_path_set(enum jscan_path path)
{
	if (!jscan_path_has(path))
		return -1;
	jscan_path = path;
	return 0;
}

/* Scan n bytes at p on path with memo m (or NULL). */
static int
jscan_walk(struct jscan *js, const char *p, size_t n, struct jscan_memo *m,
    enum jscan_path path)
{
#if defined(__x86_64__)
	if (path == JSCAN_AVX2)
		return m != NULL ? jscan_walk_memo_avx2(js, p, n, m) :
		    jscan_walk_avx2(js, p, n);
	if (path == JSCAN_SSE2)
		return m != NULL ? jscan_walk_memo_sse2(js, p, n, m) :
		    jscan_walk_sse2(js, p, n);
#endif
	return m != NULL ? jscan_walk_memo_scalar(js, p, n, m) :
	    jscan_walk_scalar(js, p, n);
}

/* The path jscan_run takes. */
static inline enum jscan_path
jscan_path_now(void)
{
	return jscan_path >= 0 ? (enum jscan_path)jscan_path :
	    jscan_path_get();
}

/* Scan n bytes at p on path, as jscan_run does on its own. */
int
jscan_run_path(struct jscan *js, const char *p, size_t n,
    enum jscan_path path)
{
	if (!jscan_path_has(path))
		path = JSCAN_SCALAR;
	return jscan_walk(js, p, n, NULL, path);
}

/*
 * Scan n bytes at p.  Returns 0 and fills the tape when the bytes are one
 * JSON object or array that jansson would accept; otherwise -1 with
 * js->err and js->err_off set.  Every path scans the same grammar and
 * names the same errors; they differ in how many bytes they look at at
 * once.
 */
int
jscan_run(struct jscan *js, const char *p, size_t n)
{
	return jscan_walk(js, p, n, NULL, jscan_path_now());
}

/*
 * jscan_run for a line of a stream whose lines begin alike (an agent's
 * envelopes: the same protocol, role, agent and, within a second, the
 * same timestamp), with the stream's memo (jscan_memo_create): the same
 * verdict, error and tape as jscan_run, the line's first members taken
 * from the memo when they are byte for byte the last kept line's.
 */
int
jscan_run_memo(struct jscan *js, const char *p, size_t n,
    struct jscan_memo *m)
{
	return jscan_walk(js, p, n, m, jscan_path_now());
}

/* jscan_run_memo on path. */
int
jscan_run_memo_path(struct jscan *js, const char *p, size_t n,
    struct jscan_memo *m, enum jscan_path path)
{
	if (!jscan_path_has(path))
		path = JSCAN_SCALAR;
	return jscan_walk(js, p, n, m, path);
}

/*
 * A stamp no memo has had: one counter for all memos, so that a memo
 * freed and another made at its address are not taken for each other
 * (by a scanner's tape, or by envelope_check's findings).
 */
static uint64_t
jscan_memo_stamp(void)
{
	static uint64_t	stamps;

	return __atomic_add_fetch(&stamps, 1, __ATOMIC_RELAXED);
}

/* Make an empty memo for a stream of lines (jscan_run_memo). */
struct jscan_memo *
jscan_memo_create(void)
{
	struct jscan_memo	*m = xcalloc(1, sizeof *m);

	m->stamp = jscan_memo_stamp();
	return m;
}

/* Free a memo. */
void
jscan_memo_free(struct jscan_memo *m)
{
	free(m);
}

/* Forget what the memo keeps. */
void
jscan_memo_reset(struct jscan_memo *m)
{
	m->nm = m->ntop = 0;
	m->nb = 0;
	m->hit = 0;
	m->stamp = jscan_memo_stamp();
}

/*
 * After jscan_run_memo with m returned 0: the top-level member the walk
 * resumed at or in (0: it scanned the line from its start), with m's
 * stamp then (*from) and now (*now).  Members before the one it resumed at
 * are, bytes and tokens, those of the line m kept under stamp *from; m
 * keeps this line (its stamp moved) or still the older one.
 */
uint32_t
jscan_memo_resumed(const struct jscan_memo *m, uint64_t *from, uint64_t *now)
{
	*from = m->hitstamp;
	*now = m->stamp;
	return m->hit;
}

/* The bit in its object's bloom of the key at token i of js. */
static uint64_t
jscan_memo_bit(const struct jscan *js, const unsigned char *s, uint32_t i)
{
	return 1ULL << ((jscan_tag(s, js->tok[i].off, js->tok[i].len) *
	    JSCAN_BLOOM_K) >> 26);
}

/* Whether the value at token v of js holds a container below the tape. */
static int
jscan_memo_opaque(const struct jscan *js, uint32_t v)
{
	uint32_t	t;

	for (t = v; t < js->tok[v].next; t++)
		if (js->tok[t].flags & JT_OPAQUE)
			return 1;
	return 0;
}

/*
 * Keep line s (n bytes), whose tape js holds, in the memo, unless the
 * memo served it well (hit: the top-level member its walk resumed in)
 * and may serve the next line as well.
 */
void
jscan_memo_store(struct jscan_memo *m, struct jscan *js,
    const unsigned char *s, size_t n, uint32_t hit)
{
	const struct jtok	*k;
	uint64_t		 bloom = 0, ob, bit;
	uint32_t		 i, j, v, end, nm = 0, ntop = 0, ntok = 0;

	if (hit > 0 && 2 * hit >= m->ntop)
		return;
	m->nm = m->ntop = 0;
	/* What it keeps changes: a stamp no scanner's tape has. */
	m->stamp = jscan_memo_stamp();
	/* The top-level object must be on the tape, and its members. */
	if (js->maxlevel == 0 || js->ntok == 0 || js->tok[0].type != JT_OBJECT)
		return;
	m->nb = n < JSCAN_MEMO_BYTES ? (uint32_t)n : JSCAN_MEMO_BYTES;
	m->maxlevel = js->maxlevel;
	end = js->tok[0].next;
	for (i = 1; i < end && nm < JSCAN_MEMO_MEMBERS; i = js->tok[i + 1].next) {
		k = &js->tok[i];
		if (k->off >= m->nb || i > JSCAN_MEMO_TOKS)
			break;
		m->m[nm].off = k->off;
		m->m[nm].ntok = (uint16_t)i;
		m->m[nm].top = (uint8_t)ntop;
		m->m[nm].obj = 0;
		m->m[nm].bloom = bloom;
		m->m[nm].tbloom = 0;
		nm++;
		ntop++;
		ntok = i;
		/* What would make the walk's state past this key hold more. */
		if (k->flags & JT_ESCAPED)
			break;
		bit = jscan_memo_bit(js, s, i);
		if (bloom & bit)
			break;
		bloom |= bit;
		/*
		 * An object's members too (none on the tape when the object is
		 * below it): the walk may resume inside it, the line's first
		 * difference often in a value there (a reply's content text,
		 * an input's trace id).
		 */
		v = i + 1;
		if (js->tok[v].type == JT_OBJECT) {
			ob = 0;
			for (j = v + 1; j < js->tok[v].next &&
			    nm < JSCAN_MEMO_MEMBERS; j = js->tok[j + 1].next) {
				if (js->tok[j].off >= m->nb || j > JSCAN_MEMO_TOKS)
					break;
				m->m[nm].off = js->tok[j].off;
				m->m[nm].ntok = (uint16_t)j;
				m->m[nm].top = (uint8_t)(ntop - 1);
				m->m[nm].obj = (uint8_t)v;
				m->m[nm].bloom = ob;
				m->m[nm].tbloom = bloom;
				nm++;
				ntok = j;
				if (js->tok[j].flags & JT_ESCAPED)
					break;
				bit = jscan_memo_bit(js, s, j);
				if (ob & bit)
					break;
				ob |= bit;
				if (jscan_memo_opaque(js, j + 1))
					break;
			}
		}
		if (jscan_memo_opaque(js, v))
			break;
	}
	memcpy(m->tok, js->tok, ntok * sizeof *m->tok);
	memcpy(m->b, s, m->nb);
	m->nm = nm;
	m->ntop = ntop;
	js->memo_stamp = m->stamp;
	js->memo_ntok = ntok;
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
