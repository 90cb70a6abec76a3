/*
 * What the scanner's files share: jscan.c (the pool, the paths, the tape's
 * readers, the portable path), jscan-sse2.c and jscan-avx2.c (the SIMD
 * paths), and the grammar they all compile, jscan-walk.h.  Nothing else
 * includes this file.
 */

#ifndef JSCAN_INT_H
#define JSCAN_INT_H

#define JSCAN_MAX_DEPTH	2048	/* jansson's JSON_PARSER_MAX_DEPTH */

struct jscan_frame {
	uint32_t	tok;	/* tape index, or UINT32_MAX when not recorded */
	uint32_t	keys;	/* first key of this object in the key stack */
	uint64_t	bloom;	/* one bit per key tag seen */
	uint8_t		obj;
	uint8_t		dup;	/* the keys need the full check */
	uint8_t		ontape;	/* its members are recorded on the tape */
};

struct jscan_key {
	uint32_t	off;	/* offset of the opening quote */
	uint32_t	len;	/* raw length, quotes included */
	uint32_t	tag;	/* length and end bytes; 0 when escaped */
	uint8_t		esc;
};

/*
 * A line's last bytes, then NULs: a finder that would read past the line
 * reads here instead, and stops at the first NUL, the line's end.
 */
#define JSCAN_TAIL	64
struct jscan_tail {
	size_t		base;	/* the line's offset of b[0] */
	unsigned char	b[JSCAN_TAIL + 64];
};

/*
 * The SIMD finders' constants (0x02, '\\', 0x21 in every byte), defined
 * in jscan.c: the finders read them from memory, where a compiler that
 * saw their values would build them again at every string.  A byte ends
 * a run of plain string bytes when it is '\\' or when, with its bit 1
 * flipped, it is below 0x21 as a signed byte: '"' (0x20 flipped), the
 * control characters (they stay below 0x20) and the bytes above 0x7F
 * (negative); no other byte comes below 0x21.  Two comparisons, not
 * three.
 */
extern const unsigned char jscan_k[3][32];
#define JSCAN_K(i)	((const void *)jscan_k[(i)])

/* jscan.c */
int	 jscan_fail(struct jscan *, size_t, const char *);
long	 jscan_hex4(const unsigned char *, size_t);
size_t	 jscan_string_special(struct jscan *, const unsigned char *, size_t,
	    size_t);
size_t	 jscan_scan_number(struct jscan *, const unsigned char *, size_t,
	    size_t);
int	 jscan_check_keys(struct jscan *, const char *, struct jscan_key *,
	    uint32_t);
int	 jscan_walk_scalar(struct jscan *, const char *, size_t);
int	 jscan_walk_memo_scalar(struct jscan *, const char *, size_t,
	    struct jscan_memo *);

/* jscan-sse2.c, jscan-avx2.c: on x86-64 only. */
int	 jscan_walk_sse2(struct jscan *, const char *, size_t);
int	 jscan_walk_memo_sse2(struct jscan *, const char *, size_t,
	    struct jscan_memo *);
int	 jscan_walk_avx2(struct jscan *, const char *, size_t);
int	 jscan_walk_memo_avx2(struct jscan *, const char *, size_t,
	    struct jscan_memo *);

/* Keep the line's last bytes for the finders. */
static inline void
jscan_tail_init(struct jscan_tail *t, const unsigned char *s, size_t n)
{
	size_t	k = n < JSCAN_TAIL ? n : JSCAN_TAIL;

	t->base = n - k;
	/* Most lines are longer than the tail: copies of a known size. */
	if (k == JSCAN_TAIL) {
		memcpy(t->b, s + t->base, JSCAN_TAIL);
		memset(t->b + JSCAN_TAIL, 0, sizeof t->b - JSCAN_TAIL);
		return;
	}
	memcpy(t->b, s + t->base, k);
	memset(t->b + k, 0, sizeof t->b - k);
}

/*
 * The w (at most 64) bytes at pos: in place, or from the tail when they
 * would run past the line's end.
 */
static inline const unsigned char *
jscan_at(const struct jscan_tail *t, const unsigned char *s, size_t n,
    size_t pos, size_t w)
{
	return pos + w <= n ? s + pos : t->b + (pos - t->base);
}

/* The two bytes at p, to compare with a JSCAN_PAIR in one go. */
static inline uint16_t
jscan_pair(const unsigned char *p)
{
	uint16_t	v;

	memcpy(&v, p, sizeof v);
	return v;
}
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define JSCAN_PAIR(a, b)	((uint16_t)((a) | (b) << 8))
#else
#define JSCAN_PAIR(a, b)	((uint16_t)((a) << 8 | (b)))
#endif

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
 * The memo of a stream of lines: the first bytes of a line it scanned,
 * the tokens of its top-level object's first members, and for each of
 * these members, and for each member of an object that is such a
 * member's value, the walk's state at its key (where the key starts, the
 * tokens before it, the blooms of the objects open there).  A line whose
 * bytes up to such a key, its quote included, are the kept line's has,
 * there, the state the walk had: the walk's every step before it read
 * only those bytes (the last it looks at is the quote, after the ',' or
 * the '{' and a blank at most), and each check of the line's length
 * there passes in both lines.  Only members before anything that would
 * make the state hold more are kept: a key with escapes or whose bloom
 * bit repeats (the object's full check), a value holding a container
 * below the tape (values counted off it); in an object below the top
 * level, only up to such a member of its own.  A stream keeps a memo of
 * its own (an agent's in its dialect part): streams that shared one
 * would take turns, each paying to keep its line for a next line the
 * other's replaced.
 */
#define JSCAN_MEMO_BYTES	256	/* a line's bytes kept */
#define JSCAN_MEMO_TOKS		32	/* its tokens kept */
#define JSCAN_MEMO_MEMBERS	16	/* its members a walk may resume at */

struct jscan_memo {
	uint64_t	stamp;		/* what it keeps, new at every change */
	uint64_t	hitstamp;	/* stamp when the last walk resumed */
	uint32_t	hit;		/* the top-level member it resumed in */
	uint32_t	nb;		/* bytes kept */
	uint32_t	nm;		/* members kept, the objects' included */
	uint32_t	ntop;		/* of them top-level members */
	unsigned int	maxlevel;	/* of the scanner that kept them */
	struct {
		uint32_t	off;	/* its key's opening quote */
		uint16_t	ntok;	/* the tokens before its key */
		uint8_t		top;	/* the top-level member it is or is in */
		uint8_t		obj;	/* its object's token, 0 at the top */
		uint64_t	bloom;	/* its object's bloom before its key */
		uint64_t	tbloom;	/* in an object: the top level's then */
	}		m[JSCAN_MEMO_MEMBERS];
	struct jtok	tok[JSCAN_MEMO_TOKS];
	unsigned char	b[JSCAN_MEMO_BYTES];
};

/*
 * A walk's state (jscan-walk.h): the tape's counters, kept here rather
 * than in the scanner so that the compiler holds them in registers (no
 * function outside the walk gets its address).  What only values below
 * the tape use, the key stack and their count, stays in the scanner, to
 * leave the registers to the common case.
 */
struct jscan_w {
	struct jscan		*js;
	const unsigned char	*s;
	size_t			 n;
	struct jtok		*tok;
	uint32_t		 ntok, tokcap;
	uint32_t		 maxlevel;
	const struct jscan_tail	*tail;
	size_t			 bpos;	/* the block the SIMD paths last read */
	uint64_t		 bmask;	/* its bytes that end a string run */
};

/* jscan.c */
void	 jscan_memo_store(struct jscan_memo *, struct jscan *,
	    const unsigned char *, size_t, uint32_t);
struct jtok *jscan_grow_tok(struct jscan *, uint32_t);
struct jscan_key *jscan_grow_keys(struct jscan *, uint32_t);
int	 jscan_w_dup(struct jscan *, const unsigned char *, const struct jtok *,
	    uint32_t, const struct jscan_frame *);

/*
 * Begin a scan of n bytes: no error yet.  Returns -1 (the scan failed)
 * for a document of 4 GiB or more, whose offsets the tape cannot hold.
 */
static inline int
jscan_w_begin(struct jscan *js, size_t n)
{
	js->err = NULL;
	js->err_off = 0;
	/* The walk writes the tape anew unless it resumes (JW(restore)). */
	js->memo_ntok = 0;
	if (n < UINT32_MAX)
		return 0;
	js->ntok = js->nkeys = 0;
	js->nvals = 0;
	return jscan_fail(js, 0, "document too large");
}

/* Start a walk of the n bytes at p, whose last bytes are in tail. */
static inline void
jscan_w_start(struct jscan_w *w, struct jscan *js, const char *p, size_t n,
    struct jscan_tail *tail)
{
	w->js = js;
	w->s = (const unsigned char *)p;
	w->n = n;
	w->tok = js->tok;
	w->ntok = 0;
	w->tokcap = js->tokcap;
	js->nkeys = 0;
	w->maxlevel = js->maxlevel;
	/* The values below the tape; those on it are its tokens. */
	js->nvals = 0;
	jscan_tail_init(tail, w->s, n);
	w->tail = tail;
	/* No block yet: the first search reads one. */
	w->bpos = SIZE_MAX - 64;
	w->bmask = 0;
}

/* End a walk: the scanner's tape is what it recorded. */
static inline void
jscan_w_end(const struct jscan_w *w)
{
	w->js->ntok = w->ntok;
	w->js->nvals += w->ntok;
}

/* Make room on the tape for two more tokens (it has 64 or more: one growth). */
static inline __attribute__((always_inline)) void
jscan_w_room2(struct jscan_w *w)
{
	if (__builtin_expect(w->ntok + 2 > w->tokcap, 0)) {
		w->tok = jscan_grow_tok(w->js, w->ntok);
		w->tokcap = w->js->tokcap;
	}
}

/* Append a token to the tape, which has room, and return its index. */
static inline __attribute__((always_inline)) uint32_t
jscan_w_put(struct jscan_w *w, uint8_t type, uint8_t flags, size_t off,
    size_t len)
{
	w->tok[w->ntok] = (struct jtok){ .off = (uint32_t)off,
	    .len = (uint32_t)len, .next = w->ntok + 1, .type = type,
	    .flags = flags };
	return w->ntok++;
}

/* Append a token to the tape and return its index. */
static inline __attribute__((always_inline)) uint32_t
jscan_w_tok(struct jscan_w *w, uint8_t type, uint8_t flags, size_t off,
    size_t len)
{
	if (__builtin_expect(w->ntok == w->tokcap, 0)) {
		w->tok = jscan_grow_tok(w->js, w->ntok);
		w->tokcap = w->js->tokcap;
	}
	return jscan_w_put(w, type, flags, off, len);
}

/*
 * A key tag's bit in its object's bloom: the tag times this constant, the
 * top six bits.  The constant gives the keys of an envelope's objects
 * (protocol, role, agent, timestamp, intent, task, content, trace,
 * confidence, priority, routing, metadata, ttl_ms, session, cost, ...;
 * id, name, model; id, parents; type, text, data; score, rationale;
 * JSON-RPC's) bits of their own: a shared bit sends the key to a search
 * of the object's earlier keys.  Only keys whose tags are equal
 * ("content", "context") still share one.
 */
#define JSCAN_BLOOM_K	0x5C6E4337u

/* A key's tag: two plain keys can be equal only if their tags are. */
static inline uint32_t
jscan_tag(const unsigned char *s, size_t off, size_t len)
{
	return ((uint32_t)len << 16) ^ ((uint32_t)s[off + 1] << 8) ^
	    s[off + len - 2];
}

/*
 * Note an object's key for its duplicate check: the frame's bloom has a
 * bit per tag, and only when a tag repeats, or a key has escapes, does the
 * object get the full check when it closes.  The keys of an object on the
 * tape are found there; those of one that is not are kept on the key
 * stack.
 */
static inline __attribute__((always_inline)) void
jscan_w_key(struct jscan_w *w, struct jscan_frame *f, size_t off,
    size_t len, uint8_t esc)
{
	struct jscan		*js = w->js;
	struct jscan_key	*k;
	uint64_t		 bit;
	uint32_t		 tag, i;

	tag = esc ? 0 : jscan_tag(w->s, off, len);
	bit = 1ULL << ((tag * JSCAN_BLOOM_K) >> 26);
	if (esc)
		f->dup = 1;
	else if ((f->bloom & bit) && !f->dup) {
		/* The earlier keys whose tag has that bit. */
		if (f->ontape) {
			for (i = f->tok + 1; i < w->ntok; i = w->tok[i + 1].next)
				if (jscan_tag(w->s, w->tok[i].off,
				    w->tok[i].len) == tag)
					f->dup = 1;
		} else {
			for (i = f->keys; i < js->nkeys; i++)
				if (js->keys[i].tag == tag)
					f->dup = 1;
		}
	}
	f->bloom |= bit;
	if (f->ontape)
		return;
	if (__builtin_expect(js->nkeys == js->keycap, 0))
		jscan_grow_keys(js, js->nkeys);
	k = &js->keys[js->nkeys++];
	k->off = (uint32_t)off;
	k->len = (uint32_t)len;
	k->esc = esc;
	k->tag = tag;
}

/*
 * Close the innermost container, its frame f, whose closing bracket is at
 * pos: the keys of an object that may repeat one are checked.
 */
static inline __attribute__((always_inline)) int
jscan_w_close(struct jscan_w *w, size_t pos, const struct jscan_frame *f)
{
	int	rc;

	if (f->obj) {
		if (__builtin_expect(f->dup, 0)) {
			rc = jscan_w_dup(w->js, w->s, w->tok, w->ntok, f);
			if (rc != 0)
				return -1;
		}
		w->js->nkeys = f->keys;
	}
	if (f->tok != UINT32_MAX) {
		w->tok[f->tok].len = (uint32_t)(pos + 1 - w->tok[f->tok].off);
		w->tok[f->tok].next = w->ntok;
	}
	return 0;
}

#endif
