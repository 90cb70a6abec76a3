/*
 * Newline-delimited framing: a bounded line reader and a queued writer.
 *
 * The reader takes bytes in whatever chunks the pipe gives and hands out
 * complete lines.  Lines that sit wholly inside a chunk are handed out in
 * place; only the tail of a chunk is copied.  A line longer than the
 * reader's maximum is never handed out: the reader drops what it holds,
 * switches to discarding until the next newline (as tmux's input parser
 * does), then reports the line's full size once.  Nothing here knows about
 * libev, so the unit tests can feed it any chunking they like.
 *
 * A line too long is reported with its first NDJSON_HEAD bytes, so that
 * its owner can say which request it was (a JSON-RPC id is near the
 * start), and nothing more of it is kept.
 *
 * The owner may stop a chunk between two lines (ndjson_reader_stop, from
 * its callback): the rest of the chunk is kept, at most one read, and
 * handed out by ndjson_resume.  A peer whose lines make corral write
 * (answers, say) is stopped this way the moment the writer is full, not
 * a whole chunk of lines later.
 *
 * A reader whose partial line is long offers room at its end for the
 * next read (ndjson_reader_room, ndjson_feed_room): the line is put
 * together where it is read, and lent, while it is handed out, to a
 * queue that may take the buffer over (ndjson-int.h).
 *
 * The writer is a byte queue with high and low watermarks, a builder for
 * jsonw and the audit log; a channel's queue is ndjson-queue.c's.  Its
 * owner pauses producers when ndjson_writer_full() says so and resumes
 * them when ndjson_writer_drained() does.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"
#include "ndjson-int.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/*
 * A partial line of NDJSON_ROOM_FROM bytes or more (or half the longest
 * line) is read into, with room for NDJSON_ROOM_MIN more at least (a
 * pipe's worth).
 */
#define NDJSON_ROOM_FROM	(32 * 1024)
#define NDJSON_ROOM_MIN		(64 * 1024)

/*
 * The buffers of long lines handed out, kept for the next long line of
 * any channel (at most NDJSON_SPARES of them, NDJSON_SPARE_BYTES in
 * all): a stream of 1 MiB lines is put together in buffers of its size,
 * not in one grown from 64 KiB by doubling, copied at each step, for
 * every line.  Only the channels' reads use them (the loop's thread).
 */
#define NDJSON_SPARES		4
#define NDJSON_SPARE_BYTES	(16 * 1024 * 1024)
static struct {
	char		*buf;
	uint32_t	 cap;
} ndjson_spares[NDJSON_SPARES];
static size_t	ndjson_spare_bytes;

/*
 * The long line being handed out by ndjson_feed_room, whose buffer the
 * reader lets go of: a queue it is written to may take the buffer over
 * (ndjson_take) rather than copy the line, and gives it back once it is
 * written (ndjson_give_back).  Given back while the line is still being
 * handled (a queue dropped), it is kept until the callback returns.
 */
#define NDJSON_LENT	1	/* the callback may take it */
#define NDJSON_TAKEN	2	/* a queue took it */
#define NDJSON_BACK	3	/* given back before the callback returned */
struct ndjson_lent {
	char		*buf;
	size_t		 len;
	uint32_t	 cap;
	int		 state;
};
static struct ndjson_lent	ndjson_lent;

/* Initialize a reader for lines of at most max bytes. */
void
ndjson_reader_init(struct ndjson_reader *r, size_t max, int truncate)
{
	memset(r, 0, sizeof *r);
	r->max = max < NDJSON_MAX ? (uint32_t)max : NDJSON_MAX;
	r->truncate = truncate != 0;
}

/* Release a reader's buffers. */
void
ndjson_reader_free(struct ndjson_reader *r)
{
	free(r->head);
	r->head = NULL;
	r->headlen = 0;
	free(r->buf);
	r->buf = NULL;
	r->len = r->cap = 0;
	r->stop = r->held = r->discarding = r->last_cr = r->nul_held = 0;
	r->discarded = 0;
}

/*
 * The first newline or NUL byte in [p, end), or end, by two searches:
 * the path where the CPU has no AVX2.
 */
static const char *
ndjson_stop_mem(const char *p, const char *end)
{
	const char	*nl, *nul;

	if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
		nl = end;
	if ((nul = memchr(p, '\0', (size_t)(nl - p))) != NULL)
		return nul;
	return nl;
}

#if defined(__x86_64__)
/*
 * Each byte of the 32 at p, or 0 where it is a newline or a NUL byte:
 * the smaller of the byte and the byte xor '\n', which is 0 only for
 * those two.  Such vectors are combined by their minimum, one test for
 * all of them, where a comparison for each byte sought would take two
 * comparisons and an or for each vector.
 */
__attribute__((target("avx2"))) static inline __m256i
ndjson_stopv(const char *p)
{
	__m256i	v = _mm256_loadu_si256((const __m256i *)(const void *)p);

	return _mm256_min_epu8(v, _mm256_xor_si256(v, _mm256_set1_epi8('\n')));
}

/* Where a vector of ndjson_stopv holds a 0: a bit for each. */
__attribute__((target("avx2"))) static inline uint32_t
ndjson_stopm(__m256i v)
{
	return (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v,
	    _mm256_setzero_si256()));
}

/*
 * The same in one pass, 128 bytes at a time: a line is searched once
 * for its end and for a NUL byte, instead of once for each.  The block
 * that holds one is not searched again: its four vectors give where.
 */
__attribute__((target("avx2"))) static const char *
ndjson_stop_avx2(const char *p, const char *end)
{
	const char	*last;
	__m256i		 a, b, c, d;
	uint64_t	 m;

	if (end - p < 32) {
		for (; p < end; p++)
			if (*p == '\n' || *p == '\0')
				return p;
		return end;
	}
	if (end - p >= 128) {
		last = end - 128;
		do {
			a = ndjson_stopv(p);
			b = ndjson_stopv(p + 32);
			c = ndjson_stopv(p + 64);
			d = ndjson_stopv(p + 96);
			if (ndjson_stopm(_mm256_min_epu8(_mm256_min_epu8(a, b),
			    _mm256_min_epu8(c, d))) != 0) {
				m = ndjson_stopm(a) |
				    (uint64_t)ndjson_stopm(b) << 32;
				if (m != 0)
					return p + __builtin_ctzll(m);
				m = ndjson_stopm(c) |
				    (uint64_t)ndjson_stopm(d) << 32;
				return p + 64 + __builtin_ctzll(m);
			}
			p += 128;
		} while (p <= last);
	}
	for (; end - p >= 32; p += 32)
		if ((m = ndjson_stopm(ndjson_stopv(p))) != 0)
			return p + __builtin_ctzll(m);
	/* The last 32 bytes: those before p were searched already. */
	if (p < end && (m = ndjson_stopm(ndjson_stopv(end - 32))) != 0)
		return end - 32 + __builtin_ctzll(m);
	return end;
}
#endif

/*
 * The first newline or NUL byte in [p, end), or end, by the path this
 * CPU has.  Asked each time (a flag the C runtime set at start): no
 * state that threads reading lines would share.
 */
static const char *
ndjson_stop(const char *p, const char *end)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx2"))
		return ndjson_stop_avx2(p, end);
#endif
	return ndjson_stop_mem(p, end);
}

/*
 * Hand one complete line (without its newline) to the callback.  nul is
 * where its first NUL byte is when the caller searched the line for one
 * (scanned), else the line is searched here.  Inlined: every line goes
 * through it, and its tests cost less than the call and its arguments.
 */
static inline __attribute__((always_inline)) void
ndjson_emit(struct ndjson_reader *r, char *line, size_t len,
    ndjson_line_cb cb, void *arg, int scanned, char *nul)
{

	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len == 0)
		return;		/* empty lines are ignored */
	if (len > r->max) {
		if (r->truncate)
			cb(arg, NDJSON_CUT, line, r->max, len - r->max);
		else
			cb(arg, NDJSON_TOOLONG, line, len < NDJSON_HEAD ? len :
			    NDJSON_HEAD, len);
		return;
	}
	if (!scanned)
		nul = memchr(line, '\0', len);
	if (!r->truncate && nul != NULL) {
		cb(arg, NDJSON_NUL, line, len, (size_t)(nul - line));
		return;
	}
	cb(arg, NDJSON_LINE, line, len, 0);
}

/* Append bytes to the partial-line buffer, growing it geometrically. */
static void
ndjson_hold(struct ndjson_reader *r, const char *data, size_t n)
{
	size_t	need = r->len + n, cap;

	if (need > r->cap) {
		/* Start big enough for typical lines; double from there. */
		cap = r->cap != 0 ? r->cap : (need > 4096 ? 65536 : 256);
		while (cap < need)
			cap *= 2;
		r->buf = xreallocarray(r->buf, cap, 1);
		r->cap = cap;
	}
	memcpy(r->buf + r->len, data, n);
	r->len = need;
}

/* Keep a long line's buffer for the next one, if there is room. */
static void
ndjson_spare_put(char *buf, uint32_t cap)
{
	int	i, small = -1;

	for (i = 0; i < NDJSON_SPARES; i++)
		if (small == -1 || ndjson_spares[i].cap <
		    ndjson_spares[small].cap)
			small = i;
	/* Make room by the smallest one, if it is smaller. */
	if (ndjson_spares[small].cap < cap && ndjson_spare_bytes -
	    ndjson_spares[small].cap + cap <= NDJSON_SPARE_BYTES) {
		ndjson_spare_bytes -= ndjson_spares[small].cap;
		free(ndjson_spares[small].buf);
		ndjson_spares[small].buf = buf;
		ndjson_spares[small].cap = cap;
		ndjson_spare_bytes += cap;
		return;
	}
	free(buf);
}

/*
 * Take the biggest kept buffer bigger than cap and no bigger than this
 * reader can use (limit), else NULL.
 */
static char *
ndjson_spare_get(size_t cap, size_t limit, uint32_t *got)
{
	char	*buf;
	int	 i, best = -1;

	for (i = 0; i < NDJSON_SPARES; i++)
		if (ndjson_spares[i].buf != NULL &&
		    ndjson_spares[i].cap > cap &&
		    ndjson_spares[i].cap <= limit && (best == -1 ||
		    ndjson_spares[i].cap > ndjson_spares[best].cap))
			best = i;
	if (best == -1)
		return NULL;
	buf = ndjson_spares[best].buf;
	*got = ndjson_spares[best].cap;
	ndjson_spare_bytes -= *got;
	ndjson_spares[best].buf = NULL;
	ndjson_spares[best].cap = 0;
	return buf;
}

/*
 * Take over the buffer of the line being handed out, if line is that line
 * and no one took it yet: the caller owns the buffer (its capacity in
 * *cap, the byte after the line its own) and gives it back with
 * ndjson_give_back.  NULL otherwise, and for a buffer more than twice the
 * line: a queue counts the line, and the memory bound allows it double.
 */
char *
ndjson_take(const void *line, size_t len, uint32_t *cap)
{
	if (line != ndjson_lent.buf || len != ndjson_lent.len ||
	    ndjson_lent.state != NDJSON_LENT ||
	    ndjson_lent.cap / 2 > len + 1)	/* queued, it counts len + 1 */
		return NULL;
	ndjson_lent.state = NDJSON_TAKEN;
	*cap = ndjson_lent.cap;
	return ndjson_lent.buf;
}

/* Give back a buffer ndjson_take gave: kept for the next long line. */
void
ndjson_give_back(char *buf, uint32_t cap)
{
	if (buf == ndjson_lent.buf && ndjson_lent.state == NDJSON_TAKEN) {
		/* Its line is still being handled: freed after. */
		ndjson_lent.state = NDJSON_BACK;
		return;
	}
	ndjson_spare_put(buf, cap);
}

/*
 * A long line's buffer, handed out: keep it if the next line is under
 * way (what the reader holds of it is moved there), else give it back.
 * A stream of big lines is put together in one buffer, not in one grown
 * from 64 KiB for each.
 */
static void
ndjson_keep_buffer(struct ndjson_reader *r, char *buf, uint32_t cap)
{
	if (r->len > 0 && cap > r->cap && !r->discarding) {
		memcpy(buf, r->buf, r->len);
		free(r->buf);
		r->buf = buf;
		r->cap = cap;
		return;
	}
	ndjson_spare_put(buf, cap);
}

/* Drop the held partial line to bound memory. */
static void
ndjson_drop(struct ndjson_reader *r)
{
	free(r->buf);
	r->buf = NULL;
	r->len = r->cap = 0;
	r->nul_held = 0;
}

/* Forget the head of a line too long, once it was reported. */
static void
ndjson_drop_head(struct ndjson_reader *r)
{
	free(r->head);
	r->head = NULL;
	r->headlen = 0;
}

/*
 * A line turned out too long: keep the first NDJSON_HEAD bytes of the
 * part held (the discarding that follows adds from the chunks).  The
 * head is allocated here, not in every reader: an idle agent's readers
 * never need it.
 */
static void
ndjson_keep_head(struct ndjson_reader *r)
{
	if (r->head == NULL)
		r->head = xmalloc(NDJSON_HEAD);
	r->headlen = r->len < NDJSON_HEAD ? r->len : NDJSON_HEAD;
	if (r->headlen > 0)
		memcpy(r->head, r->buf, r->headlen);
}

/* Feed n bytes of a stream; complete lines go to cb. */
void
ndjson_feed(struct ndjson_reader *r, char *data, size_t n, ndjson_line_cb cb,
    void *arg)
{
	char	*nl, *nul, *end = data + n;
	size_t	 chunk, take, at;

	while (data < end) {
		/* The line's end, and its first NUL byte if it has one. */
		nl = (char *)ndjson_stop(data, end);
		nul = NULL;
		if (nl < end && *nl == '\0') {
			nul = nl;
			nl = memchr(nl, '\n', (size_t)(end - nl));
		} else if (nl == end)
			nl = NULL;
		chunk = (nl != NULL ? (size_t)(nl - data) : (size_t)(end - data));

		if (r->discarding) {
			if (!r->truncate && r->headlen < NDJSON_HEAD) {
				/* The start of the line, still coming. */
				take = NDJSON_HEAD - (size_t)r->headlen;
				if (chunk < take)
					take = chunk;
				memcpy(r->head + r->headlen, data, take);
				r->headlen += take;
			}
			r->discarded += chunk;
			if (chunk > 0)
				r->last_cr = (data[chunk - 1] == '\r');
			if (nl == NULL)
				return;
			/* The '\r' of a "\r\n" ending does not count. */
			if (r->last_cr && r->discarded > 0)
				r->discarded--;
			r->last_cr = 0;
			if (r->truncate)
				cb(arg, NDJSON_CUT, r->buf, r->len, r->discarded);
			else
				cb(arg, NDJSON_TOOLONG, r->head, r->headlen <
				    r->discarded ? r->headlen : r->discarded,
				    r->discarded);
			r->discarding = 0;
			r->discarded = 0;
			ndjson_drop(r);
			ndjson_drop_head(r);
			data = nl + 1;
			if (r->stop)
				break;
			continue;
		}

		if (r->len + chunk > r->max + 1) {
			/*
			 * Too long even allowing for a '\r': never forward
			 * it.  stderr (truncate mode) keeps the first max bytes
			 * to log with the count of the rest; otherwise the
			 * count is the whole line's size.
			 */
			if (r->truncate) {
				size_t keep = r->len < r->max ? r->max - r->len :
				    0;

				ndjson_hold(r, data, keep);
				r->discarding = 1;
				r->discarded = r->len - r->max;	/* 0 or 1 */
				r->len = r->max;
				r->last_cr = 0;
				/* Count the rest of this chunk in the branch above. */
				data += keep;
				continue;
			}
			r->discarding = 1;
			r->discarded = r->len;
			r->last_cr = r->len > 0 && r->buf[r->len - 1] == '\r';
			ndjson_keep_head(r);
			ndjson_drop(r);
			continue;	/* the discarding branch counts chunk */
		}

		if (nl == NULL) {
			ndjson_hold(r, data, chunk);
			if (nul != NULL)
				r->nul_held = 1;
			return;
		}
		if (r->len == 0)
			ndjson_emit(r, data, chunk, cb, arg, 1, nul);
		else {
			/* Each part was searched for a NUL byte once. */
			at = r->len;
			ndjson_hold(r, data, chunk);
			if (r->nul_held)
				nul = memchr(r->buf, '\0', at);
			else if (nul != NULL)
				nul = r->buf + at + (nul - data);
			r->nul_held = 0;
			ndjson_emit(r, r->buf, r->len, cb, arg, 1, nul);
			r->len = 0;
			if (r->cap > 65536)
				ndjson_drop(r);
		}
		data = nl + 1;
		if (r->stop)
			break;
	}
	if (r->stop) {
		/* Between two lines: nothing is held, keep the rest. */
		r->stop = 0;
		if (data < end) {
			ndjson_hold(r, data, (size_t)(end - data));
			r->held = 1;
		}
	}
}

/*
 * Room at the end of a long partial line for the next read, of at most
 * want bytes, or NULL when reading into the shared buffer is better: the
 * rest of a line of many reads is read where the line is put together,
 * not into a chunk it is then copied from.  A line of a few hundred
 * bytes is read whole with its neighbours and handed out in place.
 */
char *
ndjson_reader_room(struct ndjson_reader *r, size_t want, size_t *room)
{
	size_t		 need, cap;
	char		*buf;
	uint32_t	 got;

	if ((r->len < NDJSON_ROOM_FROM && r->len * 2 < r->max) ||
	    r->discarding || r->held || r->truncate)
		return NULL;
	/* Enough for a pipe's worth, but not much past the longest line. */
	need = (size_t)r->len + NDJSON_ROOM_MIN;
	if (need > (size_t)r->max + 2)
		need = (size_t)r->max + 2;
	if (need > r->cap) {
		if ((buf = ndjson_spare_get(r->cap, 2 * ((size_t)r->max + 2),
		    &got)) != NULL) {
			/* A buffer that held such a line: no growing. */
			memcpy(buf, r->buf, r->len);
			free(r->buf);
			r->buf = buf;
			r->cap = got;
		}
		cap = r->cap;
		while (cap < need)
			cap *= 2;
		if (cap != r->cap) {
			r->buf = xreallocarray(r->buf, cap, 1);
			r->cap = (uint32_t)cap;
		}
	}
	*room = r->cap - r->len;
	if (*room > want)
		*room = want;
	return r->buf + r->len;
}

/*
 * Hand out what n bytes read into ndjson_reader_room's room complete.
 * Most such reads only add to the line; the one that ends it hands the
 * line out from where it was put together, and what follows it is fed
 * as a chunk of its own.
 */
void
ndjson_feed_room(struct ndjson_reader *r, size_t n, ndjson_line_cb cb,
    void *arg)
{
	char		*p = r->buf + r->len, *end = p + n, *nl, *buf, *tmp;
	char		*nul;
	size_t		 len;
	uint32_t	 cap;
	int		 state;
	struct ndjson_lent saved;

	nl = (char *)ndjson_stop(p, end);
	if (nl == end && r->len + n <= (size_t)r->max + 1) {
		r->len += (uint32_t)n;	/* the line goes on */
		return;
	}
	if (nl == end || *nl == '\0' || r->len + (size_t)(nl - p) >
	    (size_t)r->max + 1) {
		/* Too long, or a NUL byte: the ordinary path's business. */
		tmp = xmalloc(n);
		memcpy(tmp, p, n);
		ndjson_feed(r, tmp, n, cb, arg);
		free(tmp);
		return;
	}
	/* The line ends: hand it out from a buffer the reader lets go. */
	buf = r->buf;
	cap = r->cap;
	len = r->len + (size_t)(nl - p);
	/* Its parts were searched for a NUL byte as they came. */
	nul = r->nul_held ? memchr(buf, '\0', r->len) : NULL;
	r->buf = NULL;
	r->len = r->cap = 0;
	r->nul_held = 0;
	saved = ndjson_lent;
	ndjson_lent.buf = buf;
	/* The length the callback sees: without a "\r" before the newline. */
	ndjson_lent.len = len > 0 && buf[len - 1] == '\r' ? len - 1 : len;
	ndjson_lent.cap = cap;
	ndjson_lent.state = NDJSON_LENT;
	ndjson_emit(r, buf, len, cb, arg, 1, nul);
	/*
	 * What follows the line is in buf too, taken or not: buf stays lent
	 * (so not freed, if given back) until that is handed out.
	 */
	p = nl + 1;
	if (r->stop) {
		r->stop = 0;
		if (p < end) {
			ndjson_hold(r, p, (size_t)(end - p));
			r->held = 1;
		}
	} else if (p < end)
		ndjson_feed(r, p, (size_t)(end - p), cb, arg);
	state = ndjson_lent.state;
	ndjson_lent = saved;
	/* A queue that took buf gives it back when it is written. */
	if (state != NDJSON_TAKEN)
		ndjson_keep_buffer(r, buf, cap);
}

/*
 * Hand out no more lines of the chunk being fed (called from the line
 * callback); ndjson_resume hands out the rest.
 */
void
ndjson_reader_stop(struct ndjson_reader *r)
{
	r->stop = 1;
}

/* Return nonzero if the rest of a stopped chunk waits. */
int
ndjson_reader_held(const struct ndjson_reader *r)
{
	return r->held;
}

/* Hand out the rest of a stopped chunk (which may stop again). */
void
ndjson_resume(struct ndjson_reader *r, ndjson_line_cb cb, void *arg)
{
	char	*buf = r->buf;
	size_t	 len = r->len;

	if (!r->held)
		return;
	r->buf = NULL;
	r->len = r->cap = 0;
	r->held = 0;
	ndjson_feed(r, buf, len, cb, arg);
	free(buf);
}

/*
 * At end of stream, hand out a last line that had no newline, or report a
 * line that was being discarded.
 */
void
ndjson_finish(struct ndjson_reader *r, ndjson_line_cb cb, void *arg)
{
	if (r->discarding) {
		/* A last '\r' does not count, as before a newline. */
		if (r->last_cr && r->discarded > 0)
			r->discarded--;
		if (r->truncate)
			cb(arg, NDJSON_CUT, r->buf, r->len, r->discarded);
		else
			cb(arg, NDJSON_TOOLONG, r->head, r->headlen <
			    r->discarded ? r->headlen : r->discarded,
			    r->discarded);
		r->discarding = 0;
		r->discarded = 0;
	} else if (r->len > 0)
		ndjson_emit(r, r->buf, r->len, cb, arg, 0, NULL);
	ndjson_drop(r);
	ndjson_drop_head(r);
	r->stop = r->held = 0;
}

/* Return nonzero if the reader holds a partial line. */
int
ndjson_reader_pending(const struct ndjson_reader *r)
{
	return r->len > 0 || r->discarding;
}

/* Initialize a writer with watermarks. */
void
ndjson_writer_init(struct ndjson_writer *w, size_t low, size_t high)
{
	memset(w, 0, sizeof *w);
	w->low = low;
	w->high = high;
}

/* Release a writer's buffer. */
void
ndjson_writer_free(struct ndjson_writer *w)
{
	free(w->buf);
	w->buf = NULL;
	w->head = w->tail = w->cap = 0;
}

/* Return the number of bytes queued. */
size_t
ndjson_writer_queued(const struct ndjson_writer *w)
{
	return w->tail - w->head;
}

/* Return nonzero when the queue is at or above its high watermark. */
int
ndjson_writer_full(const struct ndjson_writer *w)
{
	return w->tail - w->head >= w->high;
}

/* Return nonzero when the queue has drained to its low watermark. */
int
ndjson_writer_drained(const struct ndjson_writer *w)
{
	return w->tail - w->head <= w->low;
}

/* Make room for n more bytes at the tail (moving or growing the buffer). */
void
ndjson_writer_reserve(struct ndjson_writer *w, size_t n)
{
	size_t	used = w->tail - w->head, cap;

	if (w->tail + n <= w->cap)
		return;
	if (used + n <= w->cap && w->head >= used) {
		/* Cheap to slide down: the live part is small. */
		memmove(w->buf, w->buf + w->head, used);
		w->head = 0;
		w->tail = used;
		return;
	}
	if (w->head > 0) {
		memmove(w->buf, w->buf + w->head, used);
		w->head = 0;
		w->tail = used;
		if (used + n <= w->cap)
			return;
	}
	/*
	 * A builder's few bytes (jsonw, a splice's pieces, made and freed
	 * for every envelope) come from the allocator's per-size cache,
	 * which does not keep blocks of 4 KiB.
	 */
	cap = w->cap != 0 ? w->cap : used + n <= 256 ? 256 : 4096;
	while (cap < used + n)
		cap *= 2;
	w->buf = xreallocarray(w->buf, cap, 1);
	w->cap = cap;
}

/* Queue bytes as they are. */
void
ndjson_writer_add(struct ndjson_writer *w, const void *data, size_t n)
{
	if (n == 0)
		return;
	ndjson_writer_reserve(w, n);
	memcpy(w->buf + w->tail, data, n);
	w->tail += n;
}

/* Queue one line and its newline. */
void
ndjson_writer_line(struct ndjson_writer *w, const void *line, size_t n)
{
	ndjson_writer_reserve(w, n + 1);
	memcpy(w->buf + w->tail, line, n);
	w->tail += n;
	w->buf[w->tail++] = '\n';
}

/*
 * Write as much as the descriptor takes.  Returns 0 when the queue is
 * empty, 1 when bytes remain (EAGAIN), -1 on a write error (errno set).
 */
int
ndjson_writer_flush(struct ndjson_writer *w, int fd)
{
	ssize_t	n;

	while (w->tail > w->head) {
		n = write(fd, w->buf + w->head, w->tail - w->head);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 1;
			return -1;
		}
		w->head += (size_t)n;
		w->written += (size_t)n;
	}
	w->head = w->tail = 0;
	if (w->cap > 1024 * 1024) {
		/* Give back what a burst of big lines took. */
		free(w->buf);
		w->buf = NULL;
		w->cap = 0;
	}
	return 0;
}
