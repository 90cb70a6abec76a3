/*
 * A channel: the read end and the write end corral holds for one peer (an
 * agent's stdout and stdin, or corral serve's own stdin and stdout), with
 * framing on the way in and a queue on the way out.
 *
 * Writes are queued (ndjson-queue.c) and flushed once per loop iteration
 * from the supervisor's prepare watcher, so a burst of lines to one peer
 * becomes one writev(2).  The rest of a long line is read straight into
 * its line reader's buffer (ndjson_reader_room), not into the shared
 * one: the line is not copied out of each read.  Backpressure is XON/XOFF, as bgpd does it: a reader whose last
 * line went to a writer above its high watermark stops reading (chan_block)
 * and waits on that writer; when the writer drains to its low watermark,
 * every reader waiting on it reads again.  A reader stops at once, between
 * two lines: the rest of its chunk waits in its line reader.  Finishing
 * the chunk instead would let one read of 256 KiB of small requests
 * (map/agents/list, 54 bytes each) queue thousands of answers, each as
 * large as the run's agent list, so the writer overshoots its high
 * watermark by one line's answers, not by one read's.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"

#define CHAN_READ_SIZE	(256 * 1024)
#define CHAN_LOW	(256 * 1024)
#define CHAN_HIGH	(1024 * 1024)

/*
 * A channel's part in backpressure: the writer it waits for, the readers
 * that wait for it, its place on the resume list.  Made the first time it
 * blocks, is blocked on or has lines left to resume: most never do, and
 * every agent has a channel.
 */
struct chan_wait {
	struct chan		*c;		/* whose */
	struct chan		*blocked_on;	/* the writer we wait for */
	TAILQ_HEAD(, chan_wait)	 waiters;	/* readers waiting for us */
	TAILQ_ENTRY(chan_wait)	 wait_entry;
	TAILQ_ENTRY(chan_wait)	 resume_entry;
};

static char		chan_buf[CHAN_READ_SIZE];
static TAILQ_HEAD(, chan) chan_dirty = TAILQ_HEAD_INITIALIZER(chan_dirty);
static TAILQ_HEAD(, chan_wait) chan_resumes =
    TAILQ_HEAD_INITIALIZER(chan_resumes);
static ev_timer		chan_resume_w;
static struct chan	*chan_current;	/* whose line is being handled */

static void	chan_read_cb(struct ev_loop *, ev_io *, int);
static void	chan_write_cb(struct ev_loop *, ev_io *, int);
static void	chan_resume_cb(struct ev_loop *, ev_timer *, int);

/* Return the shared read buffer (for readers that are not channels). */
char *
chan_read_buffer(size_t *len)
{
	*len = sizeof chan_buf;
	return chan_buf;
}

/*
 * Set up a channel on descriptors rfd (or -1) and wfd (or -1), framing
 * lines of at most max bytes.
 */
void
chan_init(struct chan *c, const char *name, int rfd, int wfd, size_t max,
    void *owner)
{
	static const struct chan_ops	none;

	memset(c, 0, sizeof *c);
	c->ops = &none;		/* its owner sets its own */
	c->name = name;
	c->rfd = rfd;
	c->wfd = wfd;
	c->owner = owner;
	c->max = max < NDJSON_MAX ? (uint32_t)max : NDJSON_MAX;
	if (rfd != -1) {
		ev_io_init(&c->rw, chan_read_cb, rfd, EV_READ);
		c->rw.data = c;
	}
}

/*
 * The channel's line reader, made at its first byte: an idle agent's
 * stdout never has one.
 */
static struct ndjson_reader *
chan_reader(struct chan *c)
{
	if (c->rd == NULL) {
		c->rd = xmalloc(sizeof *c->rd);
		ndjson_reader_init(c->rd, c->max, 0);
	}
	return c->rd;
}

/*
 * The reader handed out its lines (CHAN_FEEDING was set around it).  One
 * of them may have closed the channel: the reader, kept while it ran,
 * goes now.
 */
static void
chan_fed(struct chan *c)
{
	c->flags &= ~CHAN_FEEDING;
	if (c->rfd == -1 && c->rd != NULL) {
		ndjson_reader_free(c->rd);
		free(c->rd);
		c->rd = NULL;
	}
}

/* Return nonzero if the reader holds the rest of a stopped chunk. */
static int
chan_rheld(const struct chan *c)
{
	return c->rd != NULL && ndjson_reader_held(c->rd);
}

/*
 * The channel's write queue, made at its first line: most agents are
 * never written to while they idle.
 */
static struct ndjson_queue *
chan_queue(struct chan *c)
{
	if (c->wr == NULL) {
		c->wr = xmalloc(sizeof *c->wr);
		/* It must hold at least one maximal line above its mark. */
		ndjson_queue_init(c->wr, CHAN_LOW, c->max > CHAN_HIGH ?
		    c->max : CHAN_HIGH);
	}
	return c->wr;
}

/*
 * The channel whose line is being handled (NULL outside one): what it
 * makes corral write may block that reader (chan_block).
 */
struct chan *
chan_source(void)
{
	return chan_current;
}

/* Start reading. */
void
chan_start(struct chan *c)
{
	if (c->rfd != -1 && !(c->flags & (CHAN_REOF | CHAN_RSTOPPED)))
		ev_io_start(LOOP, &c->rw);
}

/* The channel's backpressure part, made now if it had none. */
static struct chan_wait *
chan_wait(struct chan *c)
{
	if (c->wait == NULL) {
		c->wait = xcalloc(1, sizeof *c->wait);
		c->wait->c = c;
		TAILQ_INIT(&c->wait->waiters);
	}
	return c->wait;
}

/* The writer the channel's reader waits for, or NULL. */
static struct chan *
chan_blocked_on(const struct chan *c)
{
	return c->wait != NULL ? c->wait->blocked_on : NULL;
}

/* Return nonzero if readers wait for the channel's writer. */
static int
chan_has_waiters(const struct chan *c)
{
	return c->wait != NULL && !TAILQ_EMPTY(&c->wait->waiters);
}

/* Return nonzero if the channel's reader must not hand out lines now. */
static int
chan_held_back(const struct chan *c)
{
	return chan_blocked_on(c) != NULL || (c->flags & CHAN_RSTOPPED);
}

/* Deliver one framed line to the owner. */
static void
chan_line(void *arg, enum ndjson_kind kind, char *line, size_t len,
    size_t extra)
{
	struct chan	*c = arg;
	struct chan	*saved = chan_current;

	/* Whatever this line makes corral write may block this reader. */
	chan_current = c;
	c->ops->line(c, kind, line, len, extra);
	chan_current = saved;
	/* Lines come from the reader: it exists (kept if this one closed). */
	if (chan_held_back(c))
		ndjson_reader_stop(c->rd);
}

/* Pause reading while the reader is held back. */
static void
chan_pause(struct chan *c)
{
	if (chan_blocked_on(c) != NULL && ev_is_active(&c->rw)) {
		ev_io_stop(LOOP, &c->rw);
		c->flags |= CHAN_RPAUSED;
	}
}

/*
 * The reader may go on.  Lines left from a stopped chunk are handed out
 * by a timer that fires at once, after the loop's next poll: not inside
 * whoever let the reader go (often the flush before the poll, which
 * would leave what those lines write unflushed while the loop blocks),
 * and before anything new is read.
 */
static void
chan_go_on(struct chan *c)
{
	if (c->rfd == -1 || (c->flags & (CHAN_REOF | CHAN_RSTOPPED)))
		return;
	if (!chan_rheld(c)) {
		ev_io_start(LOOP, &c->rw);
		return;
	}
	if (!(c->flags & CHAN_RESUME)) {
		c->flags |= CHAN_RESUME;
		TAILQ_INSERT_TAIL(&chan_resumes, chan_wait(c), resume_entry);
	}
	if (!ev_is_active(&chan_resume_w)) {
		ev_timer_init(&chan_resume_w, chan_resume_cb, 0, 0);
		ev_timer_start(LOOP, &chan_resume_w);
	}
}

/* Take a channel off the resume list. */
static void
chan_resume_remove(struct chan *c)
{
	if (c->flags & CHAN_RESUME) {
		TAILQ_REMOVE(&chan_resumes, c->wait, resume_entry);
		c->flags &= ~CHAN_RESUME;
	}
}

/*
 * Hand out the lines left from stopped chunks of the readers that may go
 * on, then let them read again.  Returns nonzero if any did.
 */
int
chan_resume_pending(void)
{
	struct chan_wait	*w;
	struct chan		*c;
	int			 any = 0;

	if (ev_is_active(&chan_resume_w))
		ev_timer_stop(LOOP, &chan_resume_w);
	while ((w = TAILQ_FIRST(&chan_resumes)) != NULL) {
		c = w->c;
		chan_resume_remove(c);
		if (c->rfd == -1 || chan_held_back(c))
			continue;	/* held back again: its waker calls */
		if (c->rd != NULL) {
			c->flags |= CHAN_FEEDING;
			ndjson_resume(c->rd, chan_line, c);
			chan_fed(c);
		}
		any = 1;
		chan_pause(c);
		if (!chan_held_back(c) && !chan_rheld(c) &&
		    !(c->flags & (CHAN_REOF | CHAN_RSTOPPED)))
			ev_io_start(LOOP, &c->rw);
	}
	return any;
}

/* The resume timer fired. */
static void
chan_resume_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)chan_resume_pending();
}

/* Read what the descriptor has and hand out its lines. */
static void
chan_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct chan	*c = w->data;
	ssize_t		 n;
	char		*buf;
	size_t		 room;

	if (chan_rheld(c)) {
		/* The rest of a stopped chunk goes first (chan_go_on). */
		ev_io_stop(loop, &c->rw);
		if (!chan_held_back(c))
			chan_go_on(c);
		return;
	}
	/*
	 * A long line's rest goes where the line is put together.  A channel
	 * with no reader yet holds no line: its first bytes go the usual way.
	 */
	if (c->rd == NULL || (buf = ndjson_reader_room(c->rd, sizeof chan_buf,
	    &room)) == NULL) {
		buf = chan_buf;
		room = sizeof chan_buf;
	}
	n = read(c->rfd, buf, room);
	if (n == -1) {
		if (errno == EINTR || errno == EAGAIN)
			return;
		log_debug("%s: read: %s", c->name, strerror(errno));
		n = 0;	/* treat like EOF: nothing more will come */
	}
	if (n == 0) {
		ev_io_stop(loop, &c->rw);
		c->flags |= CHAN_REOF;
		if (c->rd != NULL) {
			c->flags |= CHAN_FEEDING;
			ndjson_finish(c->rd, chan_line, c);
			chan_fed(c);
		}
		if (c->ops->eof != NULL)
			c->ops->eof(c, 0);
		return;
	}
	c->flags |= CHAN_FEEDING;
	if (buf == chan_buf)
		ndjson_feed(chan_reader(c), chan_buf, (size_t)n, chan_line, c);
	else
		ndjson_feed_room(c->rd, (size_t)n, chan_line, c);
	chan_fed(c);
	chan_pause(c);
	if (chan_rheld(c) && ev_is_active(&c->rw)) {
		/* Not held back, yet stopped: never read past what waits. */
		ev_io_stop(loop, &c->rw);
		if (!chan_held_back(c))
			chan_go_on(c);
	}
}

/* Stop reading until chan_resume_reading (the owner's decision). */
void
chan_stop_reading(struct chan *c)
{
	c->flags |= CHAN_RSTOPPED;
	if (c->rfd != -1)
		ev_io_stop(LOOP, &c->rw);
}

/* Undo chan_stop_reading. */
void
chan_resume_reading(struct chan *c)
{
	c->flags &= ~CHAN_RSTOPPED;
	if (chan_blocked_on(c) == NULL)
		chan_go_on(c);
}

/* Wake every reader that waits for this writer. */
static void
chan_wake(struct chan *c)
{
	c->flags &= ~CHAN_WFULL;
	chan_release_waiters(c);
	if (c->ops->drain != NULL)
		c->ops->drain(c, 0);
}

/*
 * Let every reader waiting on this writer go, drained or not: its peer
 * will get no more work (it stopped answering, or is stopping), so
 * waiting on it would wait forever.
 */
void
chan_release_waiters(struct chan *c)
{
	struct chan_wait	*r;

	if (c->wait == NULL)
		return;
	while ((r = TAILQ_FIRST(&c->wait->waiters)) != NULL) {
		TAILQ_REMOVE(&c->wait->waiters, r, wait_entry);
		r->blocked_on = NULL;
		r->c->flags &= ~CHAN_RPAUSED;
		chan_go_on(r->c);
	}
}

/*
 * Make reader r wait for writer w: called by whoever just queued a line
 * from r to w and found w full.  r may be w itself: a peer whose requests
 * get answers it does not read stops being read until it reads them.
 */
void
chan_block(struct chan *r, struct chan *w)
{
	/* A closed writer never drains: waiting on it would be for good. */
	if (r == NULL || w->wfd == -1 || chan_blocked_on(r) != NULL ||
	    r->rfd == -1)
		return;
	chan_wait(r)->blocked_on = w;
	TAILQ_INSERT_TAIL(&chan_wait(w)->waiters, r->wait, wait_entry);
}

/* Return nonzero if the channel's writer is above its high watermark. */
int
chan_full(const struct chan *c)
{
	return (c->flags & CHAN_WFULL) != 0;
}

/* Queue one line for the peer; the flush happens before the loop blocks. */
void
chan_write_line(struct chan *c, const char *line, size_t len)
{
	if (c->wfd == -1 || (c->flags & CHAN_WCLOSED))
		return;
	ndjson_queue_line(chan_queue(c), line, len);
	if (!(c->flags & CHAN_DIRTY)) {
		c->flags |= CHAN_DIRTY;
		TAILQ_INSERT_TAIL(&chan_dirty, c, dirty_entry);
	}
	if (ndjson_queue_full(c->wr))
		c->flags |= CHAN_WFULL;
}

/* Write what the descriptor takes; arm the write watcher for the rest. */
static void
chan_flush(struct chan *c)
{
	int	rc, saved;

	if (c->wfd == -1)
		return;
	/* A channel never written to has no queue: nothing to write. */
	rc = c->wr != NULL ? ndjson_queue_flush(c->wr, c->wfd) : 0;
	if (rc == 1) {
		if (c->ww == NULL) {
			/* Made when first needed: most pipes never fill. */
			c->ww = xmalloc(sizeof *c->ww);
			ev_io_init(c->ww, chan_write_cb, c->wfd, EV_WRITE);
			c->ww->data = c;
		}
		if (!ev_is_active(c->ww))
			ev_io_start(LOOP, c->ww);
	} else {
		if (c->ww != NULL && ev_is_active(c->ww))
			ev_io_stop(LOOP, c->ww);
		if (rc == -1) {
			saved = errno;
			ndjson_queue_free(c->wr);
			c->flags |= CHAN_WCLOSED;
			if (c->ops->werror != NULL)
				c->ops->werror(c, saved);
		}
	}
	if (((c->flags & CHAN_WFULL) || chan_has_waiters(c)) &&
	    (c->wr == NULL || ndjson_queue_drained(c->wr)))
		chan_wake(c);
}

/* The descriptor can take more. */
static void
chan_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	chan_flush(w->data);
}

/* Flush every channel written to in this loop iteration. */
void
chan_flush_all(void)
{
	struct chan	*c;

	while ((c = TAILQ_FIRST(&chan_dirty)) != NULL) {
		TAILQ_REMOVE(&chan_dirty, c, dirty_entry);
		c->flags &= ~CHAN_DIRTY;
		chan_flush(c);
	}
}

/*
 * Close the write side once what is queued is written: the peer sees EOF
 * on its stdin.  Queued bytes are written first only if the descriptor
 * takes them now; a stuck peer does not hold up its own shutdown.
 */
void
chan_close_write(struct chan *c)
{
	if (c->wfd == -1)
		return;
	if (c->flags & CHAN_DIRTY) {
		TAILQ_REMOVE(&chan_dirty, c, dirty_entry);
		c->flags &= ~CHAN_DIRTY;
	}
	if (c->wr != NULL)
		(void)ndjson_queue_flush(c->wr, c->wfd);
	if (c->ww != NULL) {
		ev_io_stop(LOOP, c->ww);
		free(c->ww);
		c->ww = NULL;
	}
	close(c->wfd);
	c->wfd = -1;
	c->flags |= CHAN_WCLOSED;
	if (c->wr != NULL) {
		ndjson_queue_free(c->wr);
		free(c->wr);
		c->wr = NULL;
	}
	/* Nothing queued is left: a reader must never wait on it again. */
	c->flags &= ~CHAN_WFULL;
	if (chan_has_waiters(c))
		chan_wake(c);
}

/* Close both sides and detach from every list. */
void
chan_close(struct chan *c)
{
	chan_close_write(c);
	if (c->rfd != -1) {
		ev_io_stop(LOOP, &c->rw);
		close(c->rfd);
		c->rfd = -1;
	}
	if (chan_blocked_on(c) != NULL) {
		TAILQ_REMOVE(&c->wait->blocked_on->wait->waiters, c->wait,
		    wait_entry);
		c->wait->blocked_on = NULL;
	}
	chan_resume_remove(c);
	/* None wait for a channel whose write side closed; if any, they go. */
	chan_release_waiters(c);
	free(c->wait);
	c->wait = NULL;
	if (c->rd != NULL) {
		ndjson_reader_free(c->rd);
		/* Closed by one of its lines: the reader goes after (chan_fed). */
		if (!(c->flags & CHAN_FEEDING)) {
			free(c->rd);
			c->rd = NULL;
		}
	}
}
