/*
 * A channel's outgoing queue: lines waiting for a pipe, in a list of
 * chunks written with writev.  A part of the framing module (ndjson.c).
 *
 * A flat buffer had to move its unwritten part to the front whenever a
 * pipe took only part of it and more was queued: under backpressure, a
 * queue near its high watermark moved about a byte for every byte that
 * went through it.  Chunks are never moved: a line goes at the end of
 * the last chunk (and on into a new one when it does not fit), a write
 * takes from the first, and a chunk written whole is freed.
 *
 * An empty queue holds no memory.  Its first chunk is as small as what
 * is queued allows (1 KiB: a ping, a notice, an envelope), the ones
 * after are bigger up to NDJSON_CHUNK bytes, all from free lists, or
 * exactly a line's rest when it is bigger: a queue of n bytes takes n
 * plus at most one partly filled chunk, not twice n as a doubling
 * buffer did.
 *
 * A long line its owner keeps anyway (a request's, which a retry may
 * send again) is not copied at all: the queue holds a reference to it
 * (struct ndjson_buf), and its newline is written from a constant.
 */

#include <sys/uio.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"
#include "ndjson-int.h"

#define NDJSON_CHUNK	(64 * 1024)	/* a pipe's worth */
#define NDJSON_IOV	128		/* iovecs given to one writev */
#define NDJSON_TAKE_MIN	1024		/* shorter lines are not asked for */

struct ndjson_chunk {
	struct ndjson_chunk	*next;
	char			*p;	/* data, or a long line's own buffer */
	uint32_t		 off;	/* written so far */
	uint32_t		 len;	/* bytes queued at p */
	uint32_t		 cap;	/* room at p */
	uint16_t		 pool;	/* its pool + 1, or 0 */
	uint16_t		 taken;	/* p is a buffer ndjson_take gave */
	uint32_t		 bufcap;	/* its capacity, to give back */
	struct ndjson_buf	*ref;	/* p is its line, then a newline */
	char			 data[];
};

/*
 * Chunks come in three sizes, each from a free list of 1 MiB at most: a
 * queue starts with the smallest that holds what it is given (most
 * agents get a line or two between flushes), and the next chunk is of
 * the next size, up to a pipe's worth.
 */
#define NDJSON_POOLS	3
#define NDJSON_CHUNK_CAP(size)	((size) - sizeof(struct ndjson_chunk))
static struct xpool	ndjson_pools[NDJSON_POOLS] = {
	{ NULL, 1024, 0, 1024 },
	{ NULL, 8192, 0, 128 },
	{ NULL, sizeof(struct ndjson_chunk) + NDJSON_CHUNK, 0, 16 },
};

/* The shared line the next ndjson_queue_line of its bytes refers to. */
static struct ndjson_buf	*ndjson_offered;

/*
 * A shared copy of a long line (len bytes at line, a NUL after them):
 * the reader's own buffer when line is the long line it is handing out
 * (ndjson_take), else a copy.  Its owner holds the one reference.
 */
struct ndjson_buf *
ndjson_buf_new(const char *line, size_t len)
{
	struct ndjson_buf	*b;

	b = xmalloc(sizeof *b);
	b->len = len;
	b->refs = 1;
	if ((b->p = ndjson_take(line, len, &b->cap)) != NULL)
		b->taken = 1;
	else {
		b->p = xmalloc(len + 1);
		memcpy(b->p, line, len);
		b->cap = (uint32_t)(len + 1);
		b->taken = 0;
	}
	/* The byte after the line (its newline, or a "\r") is its own. */
	b->p[len] = '\0';
	return b;
}

/*
 * A shared line of len bytes at p (allocated, a NUL after them), taken
 * over.  Its owner holds the one reference.
 */
struct ndjson_buf *
ndjson_buf_wrap(char *p, size_t len)
{
	struct ndjson_buf	*b;

	b = xmalloc(sizeof *b);
	b->p = p;
	b->len = len;
	b->cap = (uint32_t)(len + 1);
	b->refs = 1;
	b->taken = 0;
	return b;
}

/* Let go of a reference to a shared line: the last frees it. */
void
ndjson_buf_put(struct ndjson_buf *b)
{
	if (b == NULL || --b->refs > 0)
		return;
	if (b->taken)
		ndjson_give_back(b->p, b->cap);
	else
		free(b->p);
	free(b);
}

/*
 * Offer shared line b to the queues (on nonzero) or no longer: while
 * offered, a queue given exactly its bytes refers to it.
 */
void
ndjson_buf_offer(struct ndjson_buf *b, int on)
{
	ndjson_offered = on ? b : NULL;
}

/* Initialize a queue with watermarks. */
void
ndjson_queue_init(struct ndjson_queue *q, size_t low, size_t high)
{
	memset(q, 0, sizeof *q);
	q->low = low < UINT32_MAX ? (uint32_t)low : UINT32_MAX;
	q->high = high < UINT32_MAX ? (uint32_t)high : UINT32_MAX;
}

/* The bytes a queue's chunks hold, written or not: its memory. */
size_t
ndjson_queue_held(const struct ndjson_queue *q)
{
	const struct ndjson_chunk	*c;
	size_t				 n = 0;

	for (c = q->first; c != NULL; c = c->next)
		n += sizeof *c + (c->taken ? c->bufcap : c->ref != NULL ?
		    c->ref->cap : c->cap);
	return n;
}

/* Free one chunk, wherever it came from. */
static void
ndjson_chunk_free(struct ndjson_chunk *c)
{
	if (c->taken)
		ndjson_give_back(c->p, c->bufcap);
	ndjson_buf_put(c->ref);
	if (c->pool != 0)
		xpool_put(&ndjson_pools[c->pool - 1], c);
	else
		free(c);
}

/* Drop everything queued. */
void
ndjson_queue_free(struct ndjson_queue *q)
{
	struct ndjson_chunk	*c;

	while ((c = q->first) != NULL) {
		q->first = c->next;
		ndjson_chunk_free(c);
	}
	q->last = NULL;
	q->queued = 0;
}

/* Return the number of bytes queued. */
size_t
ndjson_queue_len(const struct ndjson_queue *q)
{
	return q->queued;
}

/* Return nonzero when the queue is at or above its high watermark. */
int
ndjson_queue_full(const struct ndjson_queue *q)
{
	return q->queued >= q->high;
}

/* Return nonzero when the queue has drained to its low watermark. */
int
ndjson_queue_drained(const struct ndjson_queue *q)
{
	return q->queued <= q->low;
}

/*
 * Add a chunk at the tail for at least need bytes: from the smallest pool
 * that holds them and is not smaller than the last chunk's next, or one
 * that holds a big line's rest whole.
 */
static struct ndjson_chunk *
ndjson_chunk_add(struct ndjson_queue *q, size_t need)
{
	struct ndjson_chunk	*c;
	int			 i;

	i = q->last != NULL && q->last->pool != 0 ? q->last->pool : 0;
	if (i >= NDJSON_POOLS)
		i = NDJSON_POOLS - 1;
	while (i < NDJSON_POOLS && NDJSON_CHUNK_CAP(ndjson_pools[i].size) <
	    need)
		i++;
	if (i < NDJSON_POOLS) {
		c = xpool_alloc(&ndjson_pools[i]);
		c->cap = (uint32_t)NDJSON_CHUNK_CAP(ndjson_pools[i].size);
		c->pool = (uint16_t)(i + 1);
	} else {
		c = xmalloc(sizeof *c + need);
		c->cap = (uint32_t)need;
		c->pool = 0;
	}
	c->next = NULL;
	c->p = c->data;
	c->off = c->len = 0;
	c->taken = 0;
	c->ref = NULL;
	if (q->last != NULL)
		q->last->next = c;
	else
		q->first = c;
	q->last = c;
	return c;
}

/* Queue n bytes, filling the last chunk first. */
static void
ndjson_queue_add(struct ndjson_queue *q, const char *p, size_t n)
{
	struct ndjson_chunk	*c = q->last;
	size_t			 room, take;

	q->queued += n;
	while (n > 0) {
		room = c != NULL ? c->cap - c->len : 0;
		if (room == 0) {
			c = ndjson_chunk_add(q, n);
			room = c->cap;
		}
		take = n < room ? n : room;
		memcpy(c->p + c->len, p, take);
		c->len += (uint32_t)take;
		p += take;
		n -= take;
	}
}

/*
 * Queue a long line whose buffer was taken over (ndjson_take): a chunk
 * of its own, which ends with the line's newline.
 */
static void
ndjson_queue_taken(struct ndjson_queue *q, char *buf, size_t n,
    uint32_t bufcap)
{
	struct ndjson_chunk	*c;

	c = xmalloc(sizeof *c);
	c->next = NULL;
	c->p = buf;
	c->p[n] = '\n';	/* where its '\r' or newline was */
	c->off = 0;
	c->len = c->cap = (uint32_t)(n + 1);	/* nothing after it */
	c->pool = 0;
	c->taken = 1;
	c->bufcap = bufcap;
	c->ref = NULL;
	if (q->last != NULL)
		q->last->next = c;
	else
		q->first = c;
	q->last = c;
	q->queued += n + 1;
}

/*
 * Queue a reference to shared line b: a chunk of its own, its newline
 * not stored (ndjson_queue_flush writes it).  After a partly filled
 * chunk: that chunk is closed off, at most a chunk per such line.
 */
static void
ndjson_queue_ref(struct ndjson_queue *q, struct ndjson_buf *b)
{
	struct ndjson_chunk	*c;

	c = xmalloc(sizeof *c);
	c->next = NULL;
	c->p = b->p;
	c->off = 0;
	c->len = c->cap = (uint32_t)(b->len + 1);
	c->pool = 0;
	c->taken = 0;
	c->ref = b;
	b->refs++;
	if (q->last != NULL)
		q->last->next = c;
	else
		q->first = c;
	q->last = c;
	q->queued += b->len + 1;
}

/*
 * Queue one line and its newline: a reference when it is the shared line
 * offered (ndjson_buf_offer); copied, or, when it is the long line being
 * read (ndjson_feed_room), its buffer taken over.
 */
void
ndjson_queue_line(struct ndjson_queue *q, const void *line, size_t n)
{
	struct ndjson_chunk	*c = q->last;
	char			*buf;
	uint32_t		 bufcap;

	if (ndjson_offered != NULL && line == ndjson_offered->p &&
	    n == ndjson_offered->len) {
		ndjson_queue_ref(q, ndjson_offered);
		return;
	}
	/*
	 * A long line read in place (only those are) is not copied, if the
	 * queue is empty: behind a partly filled chunk, taking it would close
	 * that chunk off, and a queue could hold many half-empty chunks.
	 */
	if (n >= NDJSON_TAKE_MIN && q->first == NULL &&
	    (buf = ndjson_take(line, n, &bufcap)) != NULL) {
		ndjson_queue_taken(q, buf, n, bufcap);
		return;
	}
	if ((c == NULL || c->len == c->cap) && n < NDJSON_CHUNK) {
		/* The first line since a flush, say: a chunk that holds it. */
		c = ndjson_chunk_add(q, n + 1);
	}
	/* The usual case: the line and its newline fit the last chunk. */
	if (c != NULL && c->cap - c->len > n) {
		memcpy(c->p + c->len, line, n);
		c->len += (uint32_t)n;
		c->p[c->len++] = '\n';
		q->queued += n + 1;
		return;
	}
	ndjson_queue_add(q, line, n);
	ndjson_queue_add(q, "\n", 1);
}

/* Take n written bytes off the head, freeing the chunks written whole. */
static void
ndjson_queue_consume(struct ndjson_queue *q, size_t n)
{
	struct ndjson_chunk	*c;
	size_t			 left;

	q->queued -= n;
	while (n > 0 && (c = q->first) != NULL) {
		left = c->len - c->off;
		if (n < left) {
			c->off += (uint32_t)n;
			return;
		}
		n -= left;
		q->first = c->next;
		if (q->first == NULL)
			q->last = NULL;
		ndjson_chunk_free(c);
	}
}

/*
 * Write as much as the descriptor takes, up to NDJSON_IOV chunks a call.
 * Returns 0 when the queue is empty, 1 when bytes remain (EAGAIN), -1 on
 * a write error (errno set; what is queued stays).
 */
int
ndjson_queue_flush(struct ndjson_queue *q, int fd)
{
	static char		 nl = '\n';
	struct iovec		 iov[NDJSON_IOV];
	struct ndjson_chunk	*c;
	ssize_t			 n;
	uint32_t		 end;
	int			 i;

	while (q->first != NULL) {
		for (i = 0, c = q->first; c != NULL && i < NDJSON_IOV - 1;
		    c = c->next) {
			/* A shared line's newline is not in its chunk. */
			end = c->ref != NULL ? c->len - 1 : c->len;
			if (c->off < end) {
				iov[i].iov_base = c->p + c->off;
				iov[i++].iov_len = end - c->off;
			}
			if (c->ref != NULL) {
				iov[i].iov_base = &nl;
				iov[i++].iov_len = 1;
			}
		}
		n = writev(fd, iov, i);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 1;
			return -1;
		}
		ndjson_queue_consume(q, (size_t)n);
	}
	return 0;
}
