/*
 * The scanner's grammar: one pass over a line's bytes that checks exactly
 * what jansson accepts with JSON_REJECT_DUPLICATES and records the tape
 * (jscan.c says what).  It is written once and compiled once per path:
 * jscan.c includes it for the portable path, jscan-sse2.c and jscan-avx2.c
 * (built with -mavx2) for theirs, each after defining
 *
 *   JW(name)	its name for a function of this file
 *   JW_BLOCK	its block reader: (64 bytes) -> a bit for each byte that
 *		ends a run of plain string bytes ('"', '\\', a byte below
 *		0x20 or above 0x7F), the first byte the lowest bit
 *
 * or, for the portable path, instead of JW_BLOCK
 *
 *   JW_FIND	its finder: (tail, s, n, pos, &c) -> the first byte at or
 *		after pos that ends a run of plain string bytes, or n, and
 *		that byte in c (a NUL at n); it may read the tail's padding,
 *		never past the line
 *
 * The paths differ only in how they find where a run of plain string
 * bytes ends, so they accept, record and refuse alike, with the same
 * errors at the same offsets.  The walk keeps the tape's counters in a struct jscan_w on its
 * stack, which the compiler holds in registers, and writes them back to
 * the scanner when it ends.  Everything else the paths share is in
 * jscan.c and jscan-int.h.
 */

#ifdef JW_BLOCK
/*
 * The first byte at or after pos that ends a run of plain string bytes,
 * or n; that byte in *c (a NUL at n).  The 64-byte block read last keeps
 * a bit for each such byte, so that the strings that share a block, an
 * envelope's short keys and values, cost a shift and a count each rather
 * than a search of their own.
 */
static inline __attribute__((always_inline)) size_t
JW(strend)(struct jscan_w *w, size_t pos, unsigned char *c)
{
	size_t		d = pos - w->bpos;
	uint64_t	m;

	if (__builtin_expect(d < 64, 1)) {
		if ((m = w->bmask >> d) != 0)
			goto found;
		/* The rest of the block is plain. */
		pos = w->bpos + 64;
	}
	for (;; pos += 64) {
		w->bpos = pos;
		w->bmask = m = JW_BLOCK(jscan_at(w->tail, w->s, w->n, pos, 64));
		if (m != 0)
			break;
	}
found:
	pos += (size_t)__builtin_ctzll(m);
	*c = pos < w->n ? w->s[pos] : 0;
	return pos;
}
#else
/* The same with the portable path's finder, which keeps no block. */
static inline __attribute__((always_inline)) size_t
JW(strend)(struct jscan_w *w, size_t pos, unsigned char *c)
{
	return JW_FIND(w->tail, w->s, w->n, pos, c);
}
#endif

/*
 * Scan a string whose opening quote is at *posp; leave *posp after the
 * closing quote.  Sets *esc when the string holds escapes.
 */
static inline __attribute__((always_inline)) int
JW(string)(struct jscan_w *w, size_t *posp, uint8_t *esc)
{
	const unsigned char	*s = w->s;
	size_t			 pos = *posp + 1;
	unsigned char		 c;

	*esc = 0;
	for (;;) {
		pos = JW(strend)(w, pos, &c);
		if (__builtin_expect(c == '"', 1)) {
			*posp = pos + 1;
			return 0;
		}
		if (c == '\\')
			*esc = 1;
		if ((pos = jscan_string_special(w->js, s, w->n, pos)) ==
		    SIZE_MAX)
			return -1;
	}
}

/* A literal (true, false, null) at *pos: its type, or 0 when it is not. */
static inline __attribute__((always_inline)) uint8_t
JW(literal)(struct jscan_w *w, size_t *pos)
{
	const unsigned char	*s = w->s + *pos;
	size_t			 left = w->n - *pos, len;
	uint8_t			 type;

	if (s[0] == 't' && left >= 4 && memcmp(s, "true", 4) == 0) {
		len = 4;
		type = JT_TRUE;
	} else if (s[0] == 'f' && left >= 5 && memcmp(s, "false", 5) == 0) {
		len = 5;
		type = JT_FALSE;
	} else if (s[0] == 'n' && left >= 4 && memcmp(s, "null", 4) == 0) {
		len = 4;
		type = JT_NULL;
	} else
		return 0;
	/* Literals run into letters in jansson's lexer ("truex"). */
	if (len < left && ((s[len] | 0x20) >= 'a' && (s[len] | 0x20) <= 'z'))
		return 0;
	*pos += len;
	return type;
}

/*
 * Scan the scalar value at *pos (a string, literal or number) and record
 * it when depth is within the tape; *pos moves past it.
 */
static inline __attribute__((always_inline)) int
JW(scalar)(struct jscan_w *w, size_t *pos, uint32_t depth)
{
	const unsigned char	*s = w->s;
	size_t			 start = *pos, end;
	uint8_t			 type, flag = 0;

	if (s[start] == '"') {
		if (JW(string)(w, pos, &flag) != 0)
			return -1;
		type = JT_STRING;
		flag = flag ? JT_ESCAPED : 0;
	} else if (s[start] == '-' || (s[start] >= '0' && s[start] <= '9')) {
		if ((end = jscan_scan_number(w->js, s, w->n, start)) == SIZE_MAX)
			return -1;
		*pos = end >> 1;
		type = JT_NUMBER;
		flag = (end & 1) ? JT_INTEGER : 0;
	} else if ((type = JW(literal)(w, pos)) == 0) {
		if (s[start] == 't' || s[start] == 'f' || s[start] == 'n')
			return jscan_fail(w->js, start, "invalid literal");
		if (s[start] == 0)
			return jscan_fail(w->js, start, "NUL byte");
		return jscan_fail(w->js, start, "unexpected character");
	}
	if (depth <= w->maxlevel)
		jscan_w_tok(w, type, flag, start, *pos - start);
	else
		w->js->nvals++;
	return 0;
}

/* After a member's key at *pos: its ':', and past it. */
static inline __attribute__((always_inline)) int
JW(colon)(struct jscan_w *w, size_t *pos)
{
	const unsigned char	*s = w->s;

	/* Compact JSON: the ':' right after the key. */
	if (__builtin_expect(*pos < w->n && s[*pos] == ':', 1)) {
		*pos = jscan_ws(s, w->n, *pos + 1);
		return 0;
	}
	*pos = jscan_ws(s, w->n, *pos);
	if (*pos >= w->n || s[*pos] != ':')
		return jscan_fail(w->js, *pos, "':' expected");
	*pos = jscan_ws(s, w->n, *pos + 1);
	return 0;
}

/* Where JW(members) leaves the grammar to go on. */
enum { JW_KEY, JW_COLON, JW_VALUE, JW_OBJECT, JW_AFTER, JW_CLOSE };

/*
 * The members of the object f, on the tape, from the key at *pos while
 * they are "key":"value" pairs of plain strings (most of an envelope):
 * the grammar's steps for them, in its order, without the checks that
 * cannot fail there, compact JSON first.  Returns the step the grammar goes on
 * with at *pos: a key, the ':' after a recorded key, a value (an
 * object's '{' told apart), what follows a recorded value, or the
 * object's closing brace right after one.
 */
static inline __attribute__((always_inline)) int
JW(members)(struct jscan_w *w, size_t *posp, struct jscan_frame *f)
{
	const unsigned char	*s = w->s;
	const size_t		 n = w->n;
	size_t			 pos = *posp, e;
	uint64_t		 bloom = f->bloom, bit;
	uint32_t		 tag, i;
	unsigned char		 c;
	int			 to;

	if (pos >= n || s[pos] != '"')
		return JW_KEY;
	/* At a key's opening quote. */
	for (;;) {
		*posp = pos;
		e = JW(strend)(w, pos + 1, &c);
		if (c != '"') {
			to = JW_KEY;
			break;
		}
		e++;
		/* jscan_w_key's bloom, kept in a register here. */
		tag = jscan_tag(s, pos, e - pos);
		bit = 1ULL << ((tag * JSCAN_BLOOM_K) >> 26);
		if ((bloom & bit) && !f->dup) {
			for (i = f->tok + 1; i < w->ntok; i = w->tok[i + 1].next)
				if (jscan_tag(s, w->tok[i].off, w->tok[i].len) ==
				    tag)
					f->dup = 1;
		}
		bloom |= bit;
		/* The key's token and its value's. */
		jscan_w_room2(w);
		jscan_w_put(w, JT_STRING, 0, pos, e - pos);
		*posp = e;
		if (e + 1 < n && jscan_pair(s + e) == JSCAN_PAIR(':', '"'))
			pos = e + 1;
		else if (__builtin_expect(e + 2 < n &&
		    jscan_pair(s + e) == JSCAN_PAIR(':', ' ') && s[e + 2] == '"',
		    0))
			/* Python's json.dumps: a blank after each ':'. */
			pos = e + 2;
		else {
			/* Another value right after the ':'. */
			if (e + 1 < n && s[e] == ':' && s[e + 1] > ' ') {
				*posp = e + 1;
				to = s[e + 1] == '{' ? JW_OBJECT : JW_VALUE;
				break;
			}
			to = JW_COLON;
			break;
		}
		*posp = pos;
		e = JW(strend)(w, pos + 1, &c);
		if (c != '"') {
			to = JW_VALUE;
			break;
		}
		e++;
		/* f on the tape: its values are (depth <= maxlevel). */
		jscan_w_put(w, JT_STRING, 0, pos, e - pos);
		*posp = e;
		if (e + 1 < n && jscan_pair(s + e) == JSCAN_PAIR(',', '"'))
			pos = e + 1;
		else if (__builtin_expect(e + 2 < n &&
		    jscan_pair(s + e) == JSCAN_PAIR(',', ' ') && s[e + 2] == '"',
		    0))
			pos = e + 2;
		else {
			to = e < n && s[e] == '}' ? JW_CLOSE : JW_AFTER;
			break;
		}
	}
	f->bloom = bloom;
	return to;
}

/*
 * Scan an object member's key at *pos, up to and past its ':', keeping
 * it for the duplicate check and, when the object is on the tape,
 * recording it there.
 */
static inline __attribute__((always_inline)) int
JW(key)(struct jscan_w *w, size_t *pos, struct jscan_frame *f)
{
	const unsigned char	*s = w->s;
	size_t			 start = *pos, len;
	uint8_t			 esc;

	if (__builtin_expect(start >= w->n || s[start] != '"', 0)) {
		if (start < w->n && s[start] == 0)
			return jscan_fail(w->js, start, "NUL byte");
		return jscan_fail(w->js, start, "string key expected");
	}
	if (JW(string)(w, pos, &esc) != 0)
		return -1;
	len = *pos - start;
	jscan_w_key(w, f, start, len, esc);
	if (f->ontape)
		jscan_w_tok(w, JT_STRING, esc ? JT_ESCAPED : 0, start, len);
	else
		w->js->nvals++;
	return JW(colon)(w, pos);
}

/* Open the object (obj) or array at pos, depth containers around it. */
static inline __attribute__((always_inline)) struct jscan_frame *
JW(open)(struct jscan_w *w, size_t pos, uint32_t depth, uint8_t obj)
{
	struct jscan_frame	*f = &w->js->frames[depth];
	uint32_t		 tok = UINT32_MAX;

	if (depth <= w->maxlevel)
		tok = jscan_w_tok(w, obj ? JT_OBJECT : JT_ARRAY,
		    depth == w->maxlevel ? JT_OPAQUE : 0, pos, 0);
	else
		w->js->nvals++;
	/* One literal: the compiler merges its stores. */
	*f = (struct jscan_frame){ .tok = tok, .keys = w->js->nkeys,
	    .obj = obj, .ontape = depth < w->maxlevel };
	return f;
}

/*
 * The walk itself; jscan_w_end writes its counters back.  A walk resumed
 * (resume, not 0) starts at that key of the innermost of the rdepth
 * objects open there, whose frames and earlier tokens JW(restore) has
 * set as the walk would have.
 */
static inline __attribute__((always_inline)) int
JW(grammar)(struct jscan_w *w, size_t resume, uint32_t rdepth)
{
	const unsigned char	*s = w->s;
	const size_t		 n = w->n;
	struct jscan_frame	*f = NULL;
	size_t			 pos, start;
	uint32_t		 depth = 0;
	uint8_t			 esc;

	if (resume != 0) {
		depth = rdepth;
		f = &w->js->frames[rdepth - 1];
		pos = resume;
		goto key;
	}
	pos = jscan_ws(s, n, 0);
	if (pos >= n || (s[pos] != '{' && s[pos] != '['))
		return jscan_fail(w->js, pos, "'{' or '[' expected");
value:
	/* Parse one value at pos; depth containers are open around it. */
	if (__builtin_expect(pos < n && s[pos] == '"', 1) &&
	    depth < JSCAN_MAX_DEPTH) {
		/* Most values are strings: the checks below in their order. */
		start = pos;
		if (JW(string)(w, &pos, &esc) != 0)
			return -1;
		if (depth <= w->maxlevel)
			jscan_w_tok(w, JT_STRING, esc ? JT_ESCAPED : 0, start,
			    pos - start);
		else
			w->js->nvals++;
		goto after;
	}
	if (__builtin_expect(depth + 1 > JSCAN_MAX_DEPTH, 0))
		return jscan_fail(w->js, pos, "nesting too deep");
	if (__builtin_expect(pos >= n, 0))
		return jscan_fail(w->js, pos, "value expected");
	if (s[pos] == '{') {
object:
		/* pos < n at a '{', depth + 1 <= JSCAN_MAX_DEPTH. */
		f = JW(open)(w, pos, depth++, 1);
		/* Compact JSON: the first key right after the '{'. */
		if (pos + 1 < n && s[pos + 1] == '"') {
			pos++;
			goto key;
		}
		pos = jscan_ws(s, n, pos + 1);
		if (pos < n && s[pos] == '}')
			goto close;
		goto key;
	}
	if (s[pos] == '[') {
		f = JW(open)(w, pos, depth++, 0);
		pos = jscan_ws(s, n, pos + 1);
		if (pos < n && s[pos] == ']')
			goto close;
		goto value;
	}
	if (JW(scalar)(w, &pos, depth) != 0)
		return -1;
after:
	/* A value ended at pos; f is the innermost open container. */
	if (__builtin_expect(pos < n && s[pos] == ',', 1) && depth > 0) {
		/* Compact JSON: the ',' right after the value. */
		pos = jscan_ws(s, n, pos + 1);
		if (f->obj)
			goto key;
		goto value;
	}
	pos = jscan_ws(s, n, pos);
	if (depth == 0) {
		if (pos != n)
			return jscan_fail(w->js, pos, "trailing characters");
		return 0;
	}
	if (__builtin_expect(pos >= n, 0))
		return jscan_fail(w->js, pos, f->obj ? "'}' expected" :
		    "']' expected");
	if (s[pos] == ',') {
		pos = jscan_ws(s, n, pos + 1);
		if (f->obj)
			goto key;
		goto value;
	}
	if (s[pos] != (f->obj ? '}' : ']'))
		return jscan_fail(w->js, pos, f->obj ? "',' or '}' expected" :
		    "',' or ']' expected");
close:
	/* pos is at the closing bracket of the innermost container. */
	if (jscan_w_close(w, pos, f) != 0)
		return -1;
	depth--;
	f = depth > 0 ? f - 1 : NULL;
	pos++;
	goto after;
key:
	/* Inside an object, at the start of a member. */
	if (__builtin_expect(f->ontape, 1) && depth < JSCAN_MAX_DEPTH) {
		switch (JW(members)(w, &pos, f)) {
		case JW_COLON:
			if (JW(colon)(w, &pos) != 0)
				return -1;
			goto value;
		case JW_VALUE:
			goto value;
		case JW_OBJECT:
			/* The checks at value that a '{' passes. */
			if (__builtin_expect(depth + 1 > JSCAN_MAX_DEPTH, 0))
				goto value;
			goto object;
		case JW_AFTER:
			goto after;
		case JW_CLOSE:
			goto close;
		}
	}
	if (JW(key)(w, &pos, f) != 0)
		return -1;
	goto value;
}

/*
 * How many of the first n bytes of a and b are equal: 64 at a time where
 * the file is built for AVX2, 16 on any other x86-64, 8 elsewhere; each
 * step's last one overlapping the bytes before it.
 */
static inline __attribute__((always_inline)) size_t
JW(same)(const unsigned char *a, const unsigned char *b, size_t n)
{
	size_t		i = 0;
#if defined(__x86_64__)
	unsigned int	eq;

#if defined(__AVX2__)
	uint64_t	e;

	/* 64 a step: what an envelope's first members take is two or three. */
	if (n >= 64) {
		for (;; i += 64) {
			if (i + 64 > n)
				i = n - 64;
			e = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(
			    _mm256_loadu_si256((const __m256i *)(const void *)
			    (a + i)), _mm256_loadu_si256((const __m256i *)
			    (const void *)(b + i))));
			e |= (uint64_t)(uint32_t)_mm256_movemask_epi8(
			    _mm256_cmpeq_epi8(_mm256_loadu_si256(
			    (const __m256i *)(const void *)(a + i + 32)),
			    _mm256_loadu_si256((const __m256i *)(const void *)
			    (b + i + 32)))) << 32;
			if (e != UINT64_MAX)
				return i + (size_t)__builtin_ctzll(~e);
			if (i + 64 == n)
				return n;
		}
	}
	if (n >= 32) {
		for (;; i += 32) {
			if (i + 32 > n)
				i = n - 32;
			eq = (unsigned int)_mm256_movemask_epi8(
			    _mm256_cmpeq_epi8(_mm256_loadu_si256(
			    (const __m256i *)(const void *)(a + i)),
			    _mm256_loadu_si256(
			    (const __m256i *)(const void *)(b + i))));
			if (eq != 0xFFFFFFFFu)
				return i + (size_t)__builtin_ctz(~eq);
			if (i + 32 == n)
				return n;
		}
	}
#endif
	/* SSE2 is on every x86-64. */
	if (n < 16)
		goto bytes;
	for (;; i += 16) {
		if (i + 16 > n)
			i = n - 16;
		eq = (unsigned int)_mm_movemask_epi8(_mm_cmpeq_epi8(
		    _mm_loadu_si128((const __m128i *)(const void *)(a + i)),
		    _mm_loadu_si128((const __m128i *)(const void *)(b + i))));
		if (eq != 0xFFFF)
			return i + (size_t)__builtin_ctz(~eq);
		if (i + 16 == n)
			return n;
	}
bytes:
#else
	uint64_t	x, y;

	for (; i + 8 <= n; i += 8) {
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if (x != y)
			break;
	}
#endif
	while (i < n && a[i] == b[i])
		i++;
	return i;
}

/*
 * Set scanner js's tape and frames for line s (n bytes) as a walk would
 * have them at the last kept member whose key's quote lies in the bytes
 * the line shares with the memo's, and return that quote's offset, with
 * the tape's tokens in *ntokp, the objects open there in *depthp (1 at
 * the top level, 2 in a top-level member's object) and the top-level
 * member it is or is in in *hit; 0 (scan from the start) when no member
 * is shared.  The tape's first have tokens are already the memo's (its
 * last walk on js was with m).  In the walk's own file, not out of line:
 * its path's comparison, and no call.
 */
static inline __attribute__((always_inline)) size_t
JW(restore)(struct jscan_memo *m, struct jscan *js, const unsigned char *s,
    size_t n, uint32_t have, uint32_t *ntokp, uint32_t *depthp, uint32_t *hit)
{
	struct jscan_frame	*f = &js->frames[0];
	size_t			 same, lim;
	uint32_t		 j, ntok, obj;

	*hit = *depthp = 0;
	/* For jscan_memo_resumed: where this walk resumed, from what. */
	m->hit = 0;
	m->hitstamp = m->stamp;
	if (m->nm < 2 || m->maxlevel != js->maxlevel)
		return 0;
	/* Past the last kept member's quote, what the lines share is moot. */
	lim = m->m[m->nm - 1].off + 1;
	same = JW(same)(m->b, s, lim < n ? lim : n);
	for (j = m->nm - 1; j > 0 && m->m[j].off >= same; j--)
		;
	/* The first member: nothing to take. */
	if (j == 0)
		return 0;
	ntok = m->m[j].ntok;
	/*
	 * A stream's lines often come one after the other on one scanner:
	 * its tape still holds them (no walk writes below the member it
	 * resumed at), all but the open objects' own tokens, which their
	 * closes set.
	 */
	if (ntok <= have)
		js->tok[0] = m->tok[0];
	else {
		if (ntok > js->tokcap)
			return 0;
		memcpy(js->tok, m->tok, ntok * sizeof *js->tok);
	}
	js->memo_stamp = m->stamp;
	js->memo_ntok = ntok;
	/* The objects open, as JW(open) leaves them. */
	js->tok[0].len = 0;
	js->tok[0].next = 1;
	*ntokp = ntok;
	if ((obj = m->m[j].obj) == 0) {
		*f = (struct jscan_frame){ .tok = 0, .keys = 0,
		    .bloom = m->m[j].bloom, .obj = 1, .ontape = 1 };
		*depthp = 1;
	} else {
		js->tok[obj].len = 0;
		js->tok[obj].next = obj + 1;
		f[0] = (struct jscan_frame){ .tok = 0, .keys = 0,
		    .bloom = m->m[j].tbloom, .obj = 1, .ontape = 1 };
		f[1] = (struct jscan_frame){ .tok = obj, .keys = 0,
		    .bloom = m->m[j].bloom, .obj = 1,
		    .ontape = 1 < js->maxlevel };
		*depthp = 2;
	}
	*hit = m->hit = m->m[j].top;
	return m->m[j].off;
}

/*
 * JW(walk) with memo m: the line's first members, when they are byte for
 * byte those of the line m keeps, are taken from it instead of scanned
 * again, and m keeps this line's when they were not.
 */
int
JW(walk_memo)(struct jscan *js, const char *p, size_t n,
    struct jscan_memo *m)
{
	struct jscan_tail	tail;
	struct jscan_w		w;
	size_t			resume;
	uint32_t		hit, ntok, depth, have;
	int			rc;

	/* What of the tape the last walk on js left the memo's. */
	have = js->memo_stamp == m->stamp ? js->memo_ntok : 0;
	if (jscan_w_begin(js, n) != 0)
		return -1;
	jscan_w_start(&w, js, p, n, &tail);
	/* Not w's address: the walk's counters stay in registers. */
	if ((resume = JW(restore)(m, js, w.s, n, have, &ntok, &depth,
	    &hit)) != 0)
		w.ntok = ntok;
	rc = JW(grammar)(&w, resume, depth);
	jscan_w_end(&w);
	/* jscan_memo_store's first test here: most lines keep no call. */
	if (rc == 0 && (hit == 0 || 2 * hit < m->ntop))
		jscan_memo_store(m, js, w.s, n, hit);
	return rc;
}

/*
 * Scan n bytes at p.  Returns 0 and fills the tape when the bytes are one
 * JSON object or array that jansson would accept; otherwise -1 with
 * js->err and js->err_off set.
 */
int
JW(walk)(struct jscan *js, const char *p, size_t n)
{
	struct jscan_tail	tail;
	struct jscan_w		w;
	int			rc;

	if (jscan_w_begin(js, n) != 0)
		return -1;
	jscan_w_start(&w, js, p, n, &tail);
	/* Its own copy of the grammar, without a resume's entry. */
	rc = JW(grammar)(&w, 0, 0);
	jscan_w_end(&w);
	return rc;
}
