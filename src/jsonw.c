/*
 * The one writer of JSON text that corral composes by hand.
 *
 * Every string that goes between quotes passes through jsonw_string,
 * which escapes quotes, backslashes and control bytes and replaces bytes
 * that are not UTF-8 with U+FFFD, so the output is always valid JSON,
 * whatever an agent put into an id, a path or a message.  A builder
 * (struct jsonw) places the commas and colons of objects and arrays, so
 * callers never write punctuation themselves.  Values that are already
 * JSON (spans of a scanned line) go in with jsonw_raw.
 *
 * Cold paths may use jansson's json_dumps instead; strings from peers go
 * into jansson through jsonw_text, which does the same UTF-8 repair.
 * Nothing composes JSON with printf.
 */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

/* Bytes that need an escape inside a JSON string. */
static const unsigned char jsonw_escape[256] = {
	[0x00] = 1, [0x01] = 1, [0x02] = 1, [0x03] = 1, [0x04] = 1,
	[0x05] = 1, [0x06] = 1, [0x07] = 1, [0x08] = 1, [0x09] = 1,
	[0x0a] = 1, [0x0b] = 1, [0x0c] = 1, [0x0d] = 1, [0x0e] = 1,
	[0x0f] = 1, [0x10] = 1, [0x11] = 1, [0x12] = 1, [0x13] = 1,
	[0x14] = 1, [0x15] = 1, [0x16] = 1, [0x17] = 1, [0x18] = 1,
	[0x19] = 1, [0x1a] = 1, [0x1b] = 1, [0x1c] = 1, [0x1d] = 1,
	[0x1e] = 1, [0x1f] = 1, ['"'] = 1, ['\\'] = 1,
};

#ifdef __SSE2__
/*
 * Return how many bytes at the start of s are plain ASCII that needs no
 * escape inside a JSON string.  Sixteen bytes at a time with SSE2 (always
 * there on x86-64): every audit record and every string corral writes
 * passes through here, most of them short ids.
 */
size_t
jsonw_plain(const char *s, size_t n)
{
	const unsigned char	*p = (const unsigned char *)s;
	unsigned		 m;
	uint64_t		 x, y;
	uint32_t		 a, b;
	size_t			 i = 0;

	if (n >= 16) {
		for (; i + 16 <= n; i += 16)
			if ((m = jsonw_special16(_mm_loadu_si128(
			    (const __m128i *)(p + i)))) != 0)
				return i + (size_t)__builtin_ctz(m);
		if (i == n)
			return n;
		/* The last sixteen, overlapping those already seen. */
		if ((m = jsonw_special16(_mm_loadu_si128(
		    (const __m128i *)(p + n - 16)))) == 0)
			return n;
		return n - 16 + (size_t)__builtin_ctz(m);
	}
	if (n >= 8) {
		/* The first eight bytes and the last eight, at once. */
		memcpy(&x, p, 8);
		memcpy(&y, p + n - 8, 8);
		if (jsonw_special16(_mm_set_epi64x((long long)y,
		    (long long)x)) == 0)
			return n;
	} else if (n >= 4) {
		memcpy(&a, p, 4);
		memcpy(&b, p + n - 4, 4);
		if (jsonw_special16(_mm_set_epi32(0x20202020, 0x20202020,
		    (int)b, (int)a)) == 0)
			return n;
	}
	for (; i < n; i++)
		if (jsonw_escape[p[i]] || p[i] >= 0x80)
			break;
	return i;
}
#else
/*
 * Return nonzero if one of the eight bytes in x needs a closer look: an
 * escape, or a byte of a multi-byte character that must be checked.
 */
static inline int
jsonw_special8(uint64_t x)
{
	const uint64_t	ones = 0x0101010101010101ULL;
	uint64_t	q = x ^ (ones * '"'), b = x ^ (ones * '\\');

	/* Below 0x20, equal to '"' or '\\', or 0x80 and above. */
	return ((((x - ones * 0x20) & ~x) | ((q - ones) & ~q) |
	    ((b - ones) & ~b) | x) & 0x8080808080808080ULL) != 0;
}

/*
 * Return how many bytes at the start of s are plain ASCII that needs no
 * escape inside a JSON string.  Eight bytes at a time: every audit record
 * and every string corral writes passes through here.
 */
size_t
jsonw_plain(const char *s, size_t n)
{
	const unsigned char	*p = (const unsigned char *)s;
	uint64_t		 x;
	size_t			 i = 0;

	if (n >= 8) {
		for (; i + 8 <= n; i += 8) {
			memcpy(&x, p + i, 8);
			if (jsonw_special8(x))
				goto bytes;
		}
		/* The last eight bytes, overlapping those already seen. */
		memcpy(&x, p + n - 8, 8);
		if (!jsonw_special8(x))
			return n;
	} else if (n >= 4) {
		/* Short ids: the first four bytes and the last four, at once. */
		uint32_t	a, b;

		memcpy(&a, p, 4);
		memcpy(&b, p + n - 4, 4);
		if (!jsonw_special8((uint64_t)a | (uint64_t)b << 32))
			return n;
	}
bytes:
	for (; i < n; i++)
		if (jsonw_escape[p[i]] || p[i] >= 0x80)
			break;
	return i;
}
#endif

/*
 * Append s as a JSON string literal to a byte queue: quotes, escapes, and
 * U+FFFD for every byte that does not start a valid UTF-8 character.
 */
void
jsonw_string(struct ndjson_writer *w, const char *s, size_t n)
{
	static const char	hex[] = "0123456789abcdef";
	const unsigned char	*p = (const unsigned char *)s;
	char			 esc[6];
	size_t			 i, run, len;

	/* Most strings need nothing: one copy. */
	if ((i = jsonw_plain(s, n)) == n) {
		ndjson_writer_reserve(w, n + 2);
		w->buf[w->tail++] = '"';
		memcpy(w->buf + w->tail, s, n);
		w->tail += n;
		w->buf[w->tail++] = '"';
		return;
	}
	ndjson_writer_add(w, "\"", 1);
	for (run = 0; i < n; ) {
		if (p[i] >= 0x80) {
			if ((len = util_utf8_len(p + i, n - i)) != 0) {
				i += len;
				continue;
			}
			ndjson_writer_add(w, s + run, i - run);
			ndjson_writer_add(w, "\xef\xbf\xbd", 3);
			run = ++i;
			continue;
		}
		if (!jsonw_escape[p[i]]) {
			i++;
			continue;
		}
		ndjson_writer_add(w, s + run, i - run);
		switch (p[i]) {
		case '"':  ndjson_writer_add(w, "\\\"", 2); break;
		case '\\': ndjson_writer_add(w, "\\\\", 2); break;
		case '\n': ndjson_writer_add(w, "\\n", 2); break;
		case '\r': ndjson_writer_add(w, "\\r", 2); break;
		case '\t': ndjson_writer_add(w, "\\t", 2); break;
		default:
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[p[i] >> 4];
			esc[5] = hex[p[i] & 15];
			ndjson_writer_add(w, esc, 6);
		}
		run = ++i;
	}
	ndjson_writer_add(w, s + run, n - run);
	ndjson_writer_add(w, "\"", 1);
}

/*
 * Make a jansson string from bytes that may not be valid UTF-8 (a tool's
 * output, a message that quotes a peer): invalid bytes and NUL become
 * U+FFFD, so nothing is silently lost and no reader refuses it.
 */
json_t *
jsonw_text(const char *s, size_t n)
{
	const unsigned char	*p = (const unsigned char *)s;
	struct ndjson_writer	 w;
	json_t			*j;
	size_t			 i = 0, len;

	/* jansson takes a NUL, but corral refuses \u0000 when it reads. */
	if (memchr(s, '\0', n) == NULL && (j = json_stringn(s, n)) != NULL)
		return j;
	ndjson_writer_init(&w, 0, 1);
	while (i < n) {
		len = p[i] == 0 ? 0 : util_utf8_len(p + i, n - i);
		if (len == 0) {
			ndjson_writer_add(&w, "\xef\xbf\xbd", 3);
			i++;
			continue;
		}
		ndjson_writer_add(&w, s + i, len);
		i += len;
	}
	j = json_stringn(w.buf != NULL ? w.buf : "", w.tail);
	ndjson_writer_free(&w);
	return j != NULL ? j : json_string("");
}

/* Start a builder. */
void
jsonw_init(struct jsonw *j)
{
	memset(j, 0, sizeof *j);
	ndjson_writer_init(&j->w, 0, 1);
}

/* Free a builder's buffer. */
void
jsonw_free(struct jsonw *j)
{
	ndjson_writer_free(&j->w);
}

/* Write the comma a new element needs, if it is not the first. */
static void
jsonw_sep(struct jsonw *j)
{
	if (j->after_key) {
		j->after_key = 0;
		return;
	}
	if (j->depth > 0 && j->count[j->depth - 1]++ > 0)
		ndjson_writer_add(&j->w, ",", 1);
}

/* Open an object or array. */
static void
jsonw_open(struct jsonw *j, const char *c)
{
	jsonw_sep(j);
	ndjson_writer_add(&j->w, c, 1);
	if (j->depth >= JSONW_DEPTH)
		fatalx("jsonw: nested deeper than %d", JSONW_DEPTH);
	j->count[j->depth++] = 0;
}

/* Close what jsonw_open opened. */
static void
jsonw_close(struct jsonw *j, const char *c)
{
	if (j->depth == 0)
		fatalx("jsonw: close without open");
	j->depth--;
	ndjson_writer_add(&j->w, c, 1);
}

/* Open an object. */
void
jsonw_object(struct jsonw *j)
{
	jsonw_open(j, "{");
}

/* Close an object. */
void
jsonw_object_end(struct jsonw *j)
{
	jsonw_close(j, "}");
}

/* Open an array. */
void
jsonw_array(struct jsonw *j)
{
	jsonw_open(j, "[");
}

/* Close an array. */
void
jsonw_array_end(struct jsonw *j)
{
	jsonw_close(j, "]");
}

/* Write a member's key; its value comes next. */
void
jsonw_key(struct jsonw *j, const char *key)
{
	jsonw_sep(j);
	jsonw_string(&j->w, key, strlen(key));
	ndjson_writer_add(&j->w, ":", 1);
	j->after_key = 1;
}

/* Write a member's key that is JSON already (a key of a scanned line). */
void
jsonw_key_raw(struct jsonw *j, const char *json, size_t n)
{
	jsonw_sep(j);
	ndjson_writer_add(&j->w, json, n);
	ndjson_writer_add(&j->w, ":", 1);
	j->after_key = 1;
}

/* Write a string value of n bytes. */
void
jsonw_strn(struct jsonw *j, const char *s, size_t n)
{
	jsonw_sep(j);
	jsonw_string(&j->w, s, n);
}

/* Write a NUL-terminated string value (NULL writes null). */
void
jsonw_str(struct jsonw *j, const char *s)
{
	if (s == NULL) {
		jsonw_raw(j, "null", 4);
		return;
	}
	jsonw_strn(j, s, strlen(s));
}

/* Write an unsigned integer value. */
void
jsonw_u64(struct jsonw *j, uint64_t v)
{
	char	buf[24];

	jsonw_sep(j);
	ndjson_writer_add(&j->w, buf, util_u64(buf, v));
}

/*
 * Write v the way "%.15g" does when it is a number of at most six
 * decimals between 1e-4 and 1e9 (a score, a cost: 0.4, 0.95), without
 * printf, which costs thousands of instructions.  Returns the length, or
 * 0 for any other number.  When m / 1e6 rounds to v, v is the double
 * nearest to that decimal, which has at most 15 digits, so "%.15g"
 * writes exactly it, in fixed notation in that range.
 */
static int
jsonw_decimal(char *buf, double v)
{
	double		a = fabs(v);
	uint64_t	m;
	size_t		n = 0, k;
	char		frac[6];

	if (!(a >= 1e-4 && a < 1e9))
		return 0;
	m = (uint64_t)llround(a * 1e6);
	if ((double)m / 1e6 != a || m % 1000000 == 0)
		return 0;
	if (v < 0)
		buf[n++] = '-';
	n += util_u64(buf + n, m / 1000000);
	buf[n++] = '.';
	m %= 1000000;
	for (k = 6; k-- > 0; m /= 10)
		frac[k] = (char)('0' + m % 10);
	/* Not all six are zeros: m was not a whole number of millions. */
	for (k = 6; frac[k - 1] == '0'; k--)
		;
	memcpy(buf + n, frac, k);
	return (int)(n + k);
}

/*
 * Write a number value: 15 significant digits, as jansson writes them
 * for corral, so 0.9 reads 0.9; not-a-number and infinities, which JSON
 * cannot hold, become null.
 */
void
jsonw_num(struct jsonw *j, double v)
{
	char	buf[JSONW_NUMBER_MAX];

	jsonw_raw(j, buf, jsonw_number(buf, v));
}

/*
 * Write number v as jsonw_num writes it (null when not finite) to buf, of
 * JSONW_NUMBER_MAX bytes; returns the length.
 */
size_t
jsonw_number(char *buf, double v)
{
	int	n;

	if (!isfinite(v)) {
		memcpy(buf, "null", 4);
		return 4;
	}
	if (v > -9e15 && v < 9e15 && v == (double)(int64_t)v)
		n = snprintf(buf, JSONW_NUMBER_MAX, "%lld", (long long)v);
	else if ((n = jsonw_decimal(buf, v)) > 0)
		;
	else if (fabs(v) > 1.79769313486231e308)
		/* 15 digits would round the largest doubles past DBL_MAX. */
		n = snprintf(buf, JSONW_NUMBER_MAX, "%.17g", v);
	else
		n = snprintf(buf, JSONW_NUMBER_MAX, "%.15g", v);
	return (size_t)n;
}

/* Write true or false. */
void
jsonw_bool(struct jsonw *j, int v)
{
	if (v)
		jsonw_raw(j, "true", 4);
	else
		jsonw_raw(j, "false", 5);
}

/* Write a value that is JSON already (a span of a scanned line). */
void
jsonw_raw(struct jsonw *j, const char *json, size_t n)
{
	jsonw_sep(j);
	ndjson_writer_add(&j->w, json, n);
}

/* Return what was built (NUL-terminated, owned by the caller). */
char *
jsonw_finish(struct jsonw *j, size_t *len)
{
	char	*out;

	if (j->depth != 0)
		fatalx("jsonw: %d containers left open", j->depth);
	*len = j->w.tail - j->w.head;
	out = xmemdup0(j->w.buf != NULL ? j->w.buf + j->w.head : "", *len);
	jsonw_free(j);
	return out;
}

/*
 * A number agents reported, fit for jansson: they report what they like,
 * so totals can reach the largest doubles or overflow to infinity.
 * jansson cannot hold infinity or NaN, and writes numbers above
 * 1.79769313486231e308 with 15 digits as more than DBL_MAX, which no
 * reader takes: those become the largest number it writes back exactly.
 */
double
jsonw_finite(double v)
{
	if (isnan(v))
		return 0;
	if (v > 1.79769313486231e308)
		return 1.79769313486231e308;
	if (v < -1.79769313486231e308)
		return -1.79769313486231e308;
	return v;
}

/* A real of a tree being dumped, and the value it goes back to after. */
struct jsonw_real {
	json_t	*v;
	double	 was;
};

/*
 * Clamp every real of j that jansson would write past DBL_MAX (one a
 * peer sent, copied into a tree whole), remembering each in *saved.
 */
static void
jsonw_tame(json_t *j, struct jsonw_real **saved, size_t *n, size_t *cap)
{
	const char	*k;
	json_t		*v;
	size_t		 i;
	double		 d;

	if (json_is_real(j)) {
		d = json_real_value(j);
		if (d == jsonw_finite(d))
			return;
		if (*n == *cap) {
			*cap = *cap == 0 ? 4 : *cap * 2;
			*saved = xreallocarray(*saved, *cap, sizeof **saved);
		}
		(*saved)[*n].v = j;
		(*saved)[(*n)++].was = d;
		json_real_set(j, jsonw_finite(d));
	} else if (json_is_object(j)) {
		json_object_foreach(j, k, v)
			jsonw_tame(v, saved, n, cap);
	} else if (json_is_array(j)) {
		json_array_foreach(j, i, v)
			jsonw_tame(v, saved, n, cap);
	}
}

/* Put back what jsonw_tame clamped. */
static void
jsonw_untame(struct jsonw_real *saved, size_t n)
{
	while (n-- > 0)
		json_real_set(saved[n].v, saved[n].was);
	free(saved);
}

/*
 * Clamp what needs it for a dump with these flags: only fewer than 17
 * digits (JSON_REAL_PRECISION) round the largest doubles past DBL_MAX.
 */
static void
jsonw_tame_for(const json_t *j, size_t flags, struct jsonw_real **saved,
    size_t *n, size_t *cap)
{
	size_t	digits = (flags >> 11) & 0x1f;

	if (digits > 0 && digits < 17)
		jsonw_tame((json_t *)j, saved, n, cap);
}

/*
 * json_dumps, except that no real comes out as a number no reader takes:
 * corral writes reals with 15 digits, which rounds the largest doubles
 * past DBL_MAX.  The tree is as it was on return.
 */
char *
jsonw_dumps(const json_t *j, size_t flags)
{
	struct jsonw_real	*saved = NULL;
	size_t			 n = 0, cap = 0;
	char			*s;

	jsonw_tame_for(j, flags, &saved, &n, &cap);
	s = json_dumps(j, flags);
	jsonw_untame(saved, n);
	return s;
}

/* json_dumpb, with reals as jsonw_dumps writes them. */
size_t
jsonw_dumpb(const json_t *j, char *buf, size_t size, size_t flags)
{
	struct jsonw_real	*saved = NULL;
	size_t			 n = 0, cap = 0, len;

	jsonw_tame_for(j, flags, &saved, &n, &cap);
	len = json_dumpb(j, buf, size, flags);
	jsonw_untame(saved, n);
	return len;
}

/* json_dumpfd, with reals as jsonw_dumps writes them. */
int
jsonw_dumpfd(const json_t *j, int fd, size_t flags)
{
	struct jsonw_real	*saved = NULL;
	size_t			 n = 0, cap = 0;
	int			 rc;

	jsonw_tame_for(j, flags, &saved, &n, &cap);
	rc = json_dumpfd(j, fd, flags);
	jsonw_untame(saved, n);
	return rc;
}
