/*
 * The audit log: one JSON object per line for every event that matters,
 * in the order corral saw them.  Envelopes are embedded as the bytes that
 * travelled, so the log doubles as the replay record (seed 000: "log the
 * envelope as your only audit format").  docs/auditlog.md has the format.
 *
 * Lines are built by hand, not with jansson: the log is on the message
 * path.  They are queued in one buffer while a writer thread writes the
 * other.  Each loop iteration hands the queue over if the writer is idle,
 * so a calm corral's log is current at once; under load lines gather
 * while the writer is busy, and one write takes them all.  The loop waits
 * for the writer only when 1 MiB has piled up (the log is never cut
 * short), and everything is written at exit.
 *
 * The log holds whole lines only.  A write that fails (a full disk) or
 * stops short is cut back to the end of the last whole line with
 * ftruncate, nothing more is written, and the loop hears of it once
 * (ev_async) and tells whoever registered with auditlog_on_error: the
 * supervisor, whose policy is to stop.  A record with a hole in it would
 * be worse than one that ends early.
 */

#include <sys/stat.h>

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "corral.h"

#define AUDIT_FLUSH	(1024 * 1024)	/* the loop waits beyond this */
#define AUDIT_BATCH	(256 * 1024)	/* handed over at once beyond this */
#define AUDIT_LINGER	0.001		/* the longest a line waits */

static int			audit_fd = -1;
static char			*audit_path;
static struct ndjson_writer	audit_w;
static uint64_t			audit_seq;
static ev_timer			audit_timer;
static double			audit_last;	/* the last handover */
static int			audit_decisions; /* --log-level decisions */
static uint64_t			audit_base;	/* the file's size at open */
static uint64_t			audit_handed;	/* bytes handed over since */

/* The writer thread and the buffer it owns while it writes. */
static pthread_t		audit_thread;
static pthread_mutex_t		audit_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t		audit_cv = PTHREAD_COND_INITIALIZER;
static sem_t			audit_sem;	/* wakes the writer */
static struct ndjson_writer	audit_out;
static int			audit_busy;	/* audit_out is being written */
static int			audit_quit;
static int			audit_threaded;
static int			audit_error;	/* errno of the failed write */
static int			audit_cut_error; /* errno of a failed cut */

/*
 * --log-sync: how often written lines are forced to the disk.  Only the
 * writer thread (or, without one, the loop) touches these once open.
 */
static int			audit_sync_ms = AUDITLOG_SYNC_DEFAULT;
static int			audit_dirty;	/* written, not yet synced */
static double			audit_synced;	/* the last sync */

/* The loop's view of a failure. */
static int			audit_failed;	/* nothing more is queued */
static int			audit_told;	/* the callback has heard */
static ev_async			audit_async;
static auditlog_error_cb	audit_on_error;
static auditlog_line_cb		audit_on_line;	/* corral replay's */
static size_t			audit_line;	/* where the line began */

/*
 * Every line starts {"seq":N,"t":S.mmmuuu,"ev":" (auditlog_head).  The
 * part up to t's milliseconds is kept as text: seq is counted up in its
 * digits, t's milliseconds are written again once a millisecond, its
 * whole seconds once a second.
 */
#define AUDIT_HEAD_SEQ	"{\"seq\":"
#define AUDIT_HEAD_T	",\"t\":"
#define AUDIT_HEAD_EV	",\"ev\":\""
static char			audit_head[64];	/* {"seq":N,"t":S.mmm */
static size_t			audit_headn;
static size_t			audit_seqend;	/* where N ends */
static struct timespec		audit_t0;	/* when the log opened */
static int64_t			audit_tsec;	/* S in audit_head */
static unsigned			audit_tms;	/* mmm in audit_head */
static char			*audit_resumes;	/* the run corral resume continues */

static void	auditlog_timer_cb(struct ev_loop *, ev_timer *, int);
static void	auditlog_async_cb(struct ev_loop *, ev_async *, int);
static void	*auditlog_thread(void *);
static void	 auditlog_head_seq(void);
static void	 auditlog_begin(const char *, size_t, const char *,
		    const char *);
static void	 auditlog_members(const char *, ...);

/*
 * Parse a --log-sync value: always, never, or a number of milliseconds
 * (1000, or 1000ms) from 1 to an hour.  Returns 0 and sets *ms (0 always,
 * -1 never), or -1.
 */
int
auditlog_sync_parse(const char *v, int *ms)
{
	char	*end;
	long	 n;

	if (strcmp(v, "always") == 0) {
		*ms = 0;
		return 0;
	}
	if (strcmp(v, "never") == 0) {
		*ms = -1;
		return 0;
	}
	if (*v < '0' || *v > '9')
		return -1;
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno != 0 || (*end != '\0' && strcmp(end, "ms") != 0) ||
	    n < 1 || n > 3600 * 1000)
		return -1;
	*ms = (int)n;
	return 0;
}

/* Say how often the next log opened is synced (auditlog_sync_parse). */
void
auditlog_set_sync(int ms)
{
	audit_sync_ms = ms;
}

/*
 * How much the log records (--log-level): "full", every envelope as it
 * travelled, or "decisions", the same lines without their envelopes.
 * Returns -1 for another word.
 */
int
auditlog_level(const char *level)
{
	if (strcmp(level, "full") == 0)
		audit_decisions = 0;
	else if (strcmp(level, "decisions") == 0)
		audit_decisions = 1;
	else
		return -1;
	return 0;
}

/*
 * Open the audit log for appending, for a run of the workflow at wfpath;
 * returns -1 with errno set.
 */
int
auditlog_open(const char *path, const char *wfpath)
{
	struct stat	st;
	char		ts[40], last;
	int		rfd;

	audit_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (audit_fd == -1)
		return -1;
	/*
	 * A file that ends in a torn line (a corral killed mid-write) gets
	 * a newline first, so that line does not swallow our first one.
	 */
	if (fstat(audit_fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size > 0 && (rfd = open(path, O_RDONLY | O_CLOEXEC)) != -1) {
		if (pread(rfd, &last, 1, st.st_size - 1) == 1 &&
		    last != '\n' && write(audit_fd, "\n", 1) != 1) {
			/* The first batch's write will say what is wrong. */
		}
		close(rfd);
	}
	/* Where our lines go, for readers that seek (event-log.c). */
	audit_base = UINT64_MAX;
	if (fstat(audit_fd, &st) == 0 && S_ISREG(st.st_mode))
		audit_base = (uint64_t)st.st_size;
	audit_handed = 0;
	audit_path = xstrdup(path);
	/* The first line counts this up to 1. */
	audit_seq = 0;
	audit_tsec = 0;
	auditlog_head_seq();
	audit_error = audit_cut_error = 0;
	audit_failed = audit_told = 0;
	audit_dirty = 0;
	audit_synced = util_mono();
	ev_async_init(&audit_async, auditlog_async_cb);
	ev_async_start(LOOP, &audit_async);
	ev_unref(LOOP);
	ndjson_writer_init(&audit_w, 0, AUDIT_FLUSH);
	ndjson_writer_init(&audit_out, 0, AUDIT_FLUSH);
	/* Without its semaphore or its thread, the loop writes the log. */
	audit_threaded = sem_init(&audit_sem, 0, 0) == 0;
	if (audit_threaded && pthread_create(&audit_thread, NULL,
	    auditlog_thread, NULL) != 0) {
		sem_destroy(&audit_sem);
		audit_threaded = 0;
	}
	clock_gettime(CLOCK_MONOTONIC, &audit_t0);
	util_rfc3339(ts, sizeof ts);
	auditlog_begin("run_start", 9, NULL, NULL);
	ndjson_writer_add(&audit_w, ",\"format\":" AUDITLOG_FORMAT_S, 10 +
	    strlen(AUDITLOG_FORMAT_S));
	auditlog_members("run", protocol_run_id(), "time", ts, "version",
	    CORRAL_VERSION, "workflow", wfpath, "level",
	    audit_decisions ? "decisions" : NULL, "resumes", audit_resumes,
	    NULL);
	return 0;
}

/*
 * Say that the next run opened continues run (corral resume): its
 * run_start names it, so readers take both for one run.  NULL: a run of
 * its own.
 */
void
auditlog_set_resumes(const char *run)
{
	free(audit_resumes);
	audit_resumes = run != NULL ? xstrdup(run) : NULL;
}

/*
 * The offset in the log's file where the next line will start, or
 * UINT64_MAX when it is not a regular file (a pipe, a terminal) or there
 * is no log.
 */
uint64_t
auditlog_offset(void)
{
	if (audit_fd == -1 || audit_base == UINT64_MAX)
		return UINT64_MAX;
	return audit_base + audit_handed + (audit_w.tail - audit_w.head);
}

/*
 * Register who reads each line as it is queued (corral replay, which
 * follows its own run by the same lines it reads from a recording).
 */
void
auditlog_on_line(auditlog_line_cb cb)
{
	audit_on_line = cb;
}

/* Return nonzero if an audit log is being written. */
int
auditlog_enabled(void)
{
	return audit_fd != -1 && !audit_failed;
}

/*
 * Register who hears, once, that the log could not be written: the path
 * and the errno.  Called on the loop, or from auditlog_close.
 */
void
auditlog_on_error(auditlog_error_cb cb)
{
	audit_on_error = cb;
}

/*
 * Write a batch of whole lines to the log (either thread).  When a write
 * fails or stops short, cut the file back to the end of the last whole
 * line, so no torn line stays for a later write to glue onto.  Returns 0,
 * or the errno of the failure.
 */
static int
auditlog_write(const char *p, size_t left)
{
	const char	*start = p, *nl;
	size_t		 done = 0, keep;
	ssize_t		 n;
	off_t		 end;
	int		 error;

	while (left > 0) {
		n = write(audit_fd, p, left);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			error = n == 0 ? EIO : errno;
			goto cut;
		}
		p += n;
		left -= (size_t)n;
		done += (size_t)n;
	}
	return 0;
cut:
	nl = done > 0 ? memrchr(start, '\n', done) : NULL;
	keep = nl != NULL ? (size_t)(nl - start) + 1 : 0;
	if (keep < done) {
		/* O_APPEND: the offset is where our last byte went. */
		if ((end = lseek(audit_fd, 0, SEEK_CUR)) == -1 ||
		    ftruncate(audit_fd, end - (off_t)(done - keep)) == -1)
			audit_cut_error = errno;
	}
	return error;
}

/* Take note of a failed write, once, and wake the loop to hear of it. */
static void
auditlog_fail(int error)
{
	if (audit_error == 0)
		audit_error = error;
	ev_async_send(LOOP, &audit_async);
}

/*
 * Force what was written to the disk if --log-sync says it is time (or
 * now, with force).  Writer thread, or the loop without one.  Returns 0,
 * or the errno of the failed sync.
 */
static int
auditlog_sync(int force)
{
	double	now;

	if (!audit_dirty || audit_sync_ms < 0 || audit_base == UINT64_MAX)
		return 0;
	now = util_mono();
	if (!force && (now - audit_synced) * 1000 < audit_sync_ms)
		return 0;
	audit_dirty = 0;
	audit_synced = now;
	/* Only the data: a log's size is what has to survive, not its times. */
	return fdatasync(audit_fd) == 0 ? 0 : errno;
}

/*
 * Wait for the writer's semaphore (the mutex held, and released while
 * it waits): until posted, or, with lines written and not synced, until
 * the next sync is due.  Returns nonzero when a sync is due.  Not the
 * condition variable the loop waits on: a thread woken from
 * pthread_cond_wait takes the mutex back marked contended, and its next
 * unlock is one more futex(2) a batch.
 */
static int
auditlog_wait(void)
{
	struct timespec	ts;
	double		left;
	int		rc, due;

	if (!audit_dirty || audit_sync_ms <= 0) {
		pthread_mutex_unlock(&audit_mu);
		while (sem_wait(&audit_sem) == -1 && errno == EINTR)
			;
		pthread_mutex_lock(&audit_mu);
		return 0;
	}
	left = audit_synced + audit_sync_ms / 1000.0 - util_mono();
	if (left <= 0)
		return 1;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)left;
	ts.tv_nsec += (long)((left - (double)(time_t)left) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_unlock(&audit_mu);
	while ((rc = sem_timedwait(&audit_sem, &ts)) == -1 && errno == EINTR)
		;
	due = rc == -1 && errno == ETIMEDOUT;
	pthread_mutex_lock(&audit_mu);
	return due;
}

/*
 * The writer thread: write each buffer handed over, and sync as
 * --log-sync says, until told to quit.
 */
static void *
auditlog_thread(void *arg)
{
	sigset_t	all;
	int		fail, error, busy;

	/* Signals are the loop's business, never this thread's. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	pthread_mutex_lock(&audit_mu);
	for (;;) {
		while (!audit_busy && !audit_quit)
			if (auditlog_wait())
				break;
		if (!audit_busy && audit_quit)
			break;
		busy = audit_busy;
		fail = audit_error != 0;
		pthread_mutex_unlock(&audit_mu);
		/* After a failure nothing more is written: no hole, no glue. */
		error = 0;
		if (busy && !fail && (error = auditlog_write(audit_out.buf +
		    audit_out.head, audit_out.tail - audit_out.head)) == 0)
			audit_dirty = 1;
		if (error == 0 && !fail)
			error = auditlog_sync(0);
		pthread_mutex_lock(&audit_mu);
		if (error != 0)
			auditlog_fail(error);
		if (busy) {
			audit_out.head = audit_out.tail = 0;
			audit_busy = 0;
			pthread_cond_broadcast(&audit_cv);
		}
	}
	pthread_mutex_unlock(&audit_mu);
	return NULL;
}

/*
 * Hand what is queued to the writer thread.  With wait, wait for it to
 * finish its previous batch; without, give up when it is busy.  Returns
 * nonzero when the queue was handed over.
 */
static int
auditlog_handover(int wait)
{
	struct ndjson_writer	tmp;
	int			error;

	if (audit_w.tail == audit_w.head)
		return 1;
	if (!audit_threaded) {
		audit_handed += audit_w.tail - audit_w.head;
		if (audit_error == 0) {
			error = auditlog_write(audit_w.buf + audit_w.head,
			    audit_w.tail - audit_w.head);
			audit_dirty = error == 0;
			if (error == 0)
				error = auditlog_sync(0);
			if (error != 0)
				auditlog_fail(error);
		}
		audit_w.head = audit_w.tail = 0;
		if (audit_error != 0)
			audit_failed = 1;
		return 1;
	}
	pthread_mutex_lock(&audit_mu);
	if (audit_busy && !wait) {
		pthread_mutex_unlock(&audit_mu);
		return 0;
	}
	while (audit_busy)
		pthread_cond_wait(&audit_cv, &audit_mu);
	if (audit_error != 0) {
		/* The writer failed: drop what is queued, queue no more. */
		audit_failed = 1;
		audit_w.head = audit_w.tail = 0;
		pthread_mutex_unlock(&audit_mu);
		return 1;
	}
	audit_handed += audit_w.tail - audit_w.head;
	tmp = audit_out;
	audit_out = audit_w;
	audit_w = tmp;
	audit_w.head = audit_w.tail = 0;
	audit_busy = 1;
	audit_last = util_mono();
	pthread_mutex_unlock(&audit_mu);
	/* Posted after the unlock: the writer wakes to a free mutex. */
	sem_post(&audit_sem);
	return 1;
}

/*
 * Before the loop blocks: hand the queue over if the writer is free and a
 * batch is full or AUDIT_LINGER has passed since the last handover; else
 * look again after AUDIT_LINGER.  A calm corral's log is behind by at
 * most that; under load, one handover takes many iterations' lines.
 */
void
auditlog_tick(void)
{
	if (audit_fd == -1 || audit_failed || audit_w.tail == audit_w.head)
		return;
	if ((audit_w.tail - audit_w.head >= AUDIT_BATCH ||
	    util_mono() - audit_last >= AUDIT_LINGER) && auditlog_handover(0))
		return;
	if (!ev_is_active(&audit_timer)) {
		ev_timer_init(&audit_timer, auditlog_timer_cb, AUDIT_LINGER, 0);
		ev_timer_start(LOOP, &audit_timer);
	}
}

/*
 * Tell the one who registered that the log failed (once), and log what
 * could not be repaired.  On the loop, or from auditlog_close.
 */
static void
auditlog_report(void)
{
	int	error, cut;

	pthread_mutex_lock(&audit_mu);
	error = audit_error;
	cut = audit_cut_error;
	pthread_mutex_unlock(&audit_mu);
	if (error == 0 || audit_told)
		return;
	audit_told = 1;
	audit_failed = 1;
	audit_w.head = audit_w.tail = 0;
	if (cut != 0)
		log_warnx("audit log %s: its torn last line could not be cut "
		    "off: %s", audit_path, strerror(cut));
	if (audit_on_error != NULL)
		audit_on_error(audit_path, error);
	else
		log_warnx("audit log %s: %s; nothing more is written to it",
		    audit_path, strerror(error));
}

/* The writer failed: the loop hears of it here. */
static void
auditlog_async_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	auditlog_report();
}

/* The writer may be free now: try again. */
static void
auditlog_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	auditlog_tick();
}

/* Write everything queued, and wait until it is written. */
void
auditlog_flush(void)
{
	if (audit_fd == -1)
		return;
	(void)auditlog_handover(1);
	if (!audit_threaded)
		return;
	pthread_mutex_lock(&audit_mu);
	while (audit_busy)
		pthread_cond_wait(&audit_cv, &audit_mu);
	pthread_mutex_unlock(&audit_mu);
}

/*
 * Close the audit log.  Returns 0, or the errno of the write that failed;
 * the callback has heard of it by then.
 */
int
auditlog_close(void)
{
	int	error;

	if (audit_fd == -1)
		return 0;
	ev_timer_stop(LOOP, &audit_timer);
	auditlog_flush();
	if (audit_threaded) {
		pthread_mutex_lock(&audit_mu);
		audit_quit = 1;
		pthread_mutex_unlock(&audit_mu);
		sem_post(&audit_sem);
		pthread_join(audit_thread, NULL);
		sem_destroy(&audit_sem);
		audit_threaded = 0;
		audit_quit = 0;
	}
	/* The writer is gone: the last lines are synced here, as promised. */
	if (audit_error == 0 && (error = auditlog_sync(1)) != 0)
		audit_error = error;
	auditlog_report();
	error = audit_error;
	ev_ref(LOOP);
	ev_async_stop(LOOP, &audit_async);
	close(audit_fd);
	audit_fd = -1;
	free(audit_path);
	audit_path = NULL;
	ndjson_writer_free(&audit_w);
	ndjson_writer_free(&audit_out);
	return error;
}

/*
 * Write t's whole seconds, sec, after seq in the kept head, with the dot
 * and room for the milliseconds, which the next line writes.
 */
static void
auditlog_head_sec(int64_t sec)
{
	char	*p = audit_head + audit_seqend;

	audit_tsec = sec;
	audit_tms = UINT_MAX;
	memcpy(p, AUDIT_HEAD_T, sizeof(AUDIT_HEAD_T) - 1);
	p += sizeof(AUDIT_HEAD_T) - 1;
	p += util_u64(p, (uint64_t)sec);
	*p++ = '.';
	audit_headn = (size_t)(p - audit_head) + 3;
}

/* Write v, 0 to 999, as three digits at p. */
static inline void
auditlog_digits3(char *p, unsigned v)
{
	unsigned	q = v / 100;

	p[0] = (char)('0' + q);
	memcpy(p + 1, util_pairs + 2 * (v - q * 100), 2);
}

/* Write the kept head again from audit_seq, for a new digit. */
static void
auditlog_head_seq(void)
{
	memcpy(audit_head, AUDIT_HEAD_SEQ, sizeof(AUDIT_HEAD_SEQ) - 1);
	audit_seqend = sizeof(AUDIT_HEAD_SEQ) - 1;
	audit_seqend += util_u64(audit_head + audit_seqend, audit_seq);
	auditlog_head_sec(audit_tsec);
}

/*
 * Start a line at time now in the queue, with room for more bytes after
 * its head: {"seq":N,"t":S.mmmuuu then evq, the literal ,"ev":"EV" of evql bytes.
 * Returns where the line goes on; auditlog_tail ends it.  Inlined in
 * the writers of the lines every envelope makes: the sequence number is
 * counted up in its text (only a carry past its first digit writes it
 * again), t's whole seconds are written once a second, its milliseconds
 * once a millisecond, and the head is copied at a fixed size: a line
 * writes only t's last three digits of its own.
 */
static inline __attribute__((always_inline)) char *
auditlog_head_at(const struct timespec *now, const char *evq, size_t evql,
    size_t more)
{
	int64_t			 sec;
	char			*p, *d;
	unsigned		 us, ms;
	long			 ns;

	audit_seq++;
	for (d = audit_head + audit_seqend - 1; *d == '9'; d--)
		*d = '0';
	if (*d != ':')
		(*d)++;
	else
		auditlog_head_seq();
	sec = (int64_t)now->tv_sec - (int64_t)audit_t0.tv_sec;
	if ((ns = now->tv_nsec - audit_t0.tv_nsec) < 0) {
		ns += 1000000000L;
		sec--;
	}
	if (sec != audit_tsec)
		auditlog_head_sec(sec);
	us = (unsigned)ns / 1000;
	ms = us / 1000;
	if (ms != audit_tms) {
		audit_tms = ms;
		auditlog_digits3(audit_head + audit_headn - 3, ms);
	}
	p = jsonw_room(&audit_w, sizeof audit_head + 3 + evql + more);
	audit_line = audit_w.tail;
	/* Copied whole: the bytes past the text are written over next. */
	memcpy(p, audit_head, sizeof audit_head);
	p += audit_headn;
	auditlog_digits3(p, us - ms * 1000);
	p += 3;
	memcpy(p, evq, evql);
	return p + evql;
}
#define AUDIT_EV(ev)	AUDIT_HEAD_EV ev "\"", sizeof(AUDIT_HEAD_EV ev)

/* The same, at the time it is now. */
static inline __attribute__((always_inline)) char *
auditlog_head(const char *evq, size_t evql, size_t more)
{
	struct timespec	now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return auditlog_head_at(&now, evq, evql, more);
}

/*
 * End the line that goes on to p (room made for it and two bytes more):
 * tell corral replay, and flush early if a lot is queued.
 */
static inline __attribute__((always_inline)) void
auditlog_tail(char *p)
{
	p[0] = '}';
	p[1] = '\n';
	audit_w.tail = (size_t)(p + 2 - audit_w.buf);
	if (audit_on_line != NULL)
		audit_on_line(audit_w.buf + audit_line, audit_w.tail -
		    audit_line);
	if (audit_w.tail - audit_w.head >= AUDIT_FLUSH)
		(void)auditlog_handover(1);
}

/*
 * Copy a string member that needs no escape to p: kq is the literal
 * ,"key":" (AUDIT_KEY), v of vl bytes.  Returns where the line goes on.
 */
static inline __attribute__((always_inline)) char *
auditlog_copy(char *p, const char *kq, size_t kql, const char *v, size_t vl)
{
	memcpy(p, kq, kql);
	jsonw_copy(p + kql, v, vl);
	p[kql + vl] = '"';
	return p + kql + vl + 1;
}
#define AUDIT_KEY(k)	",\"" k "\":\"", sizeof(k) + 4

/*
 * Append a string member: kq is the literal ,"key":" (AUDIT_KEY), v of vl
 * bytes.  With plain, v is a name corral spells (nothing to escape, no
 * check); else it is checked, and escaped when it needs it.
 */
static void
auditlog_put(const char *kq, size_t kql, const char *v, size_t vl, int plain)
{
	char	*p;

	if (!plain && jsonw_plain(v, vl) != vl) {
		/* The key without the value's opening quote. */
		ndjson_writer_add(&audit_w, kq, kql - 1);
		jsonw_string(&audit_w, v, vl);
		return;
	}
	p = jsonw_room(&audit_w, kql + vl + 1);
	audit_w.tail = (size_t)(auditlog_copy(p, kq, kql, v, vl) -
	    audit_w.buf);
}

/*
 * Start a line: sequence, monotonic time, event (evn bytes), agent, id
 * (NULL: none), each checked and escaped when it needs it: most are
 * names and numbers, but an adapter's sub-agents are named from an
 * agent's bytes.
 */
static void
auditlog_begin(const char *ev, size_t evn, const char *agent, const char *id)
{
	char	*p;

	p = auditlog_head(AUDIT_HEAD_EV, sizeof(AUDIT_HEAD_EV) - 1, evn + 1);
	jsonw_copy(p, ev, evn);
	p[evn] = '"';
	audit_w.tail = (size_t)(p + evn + 1 - audit_w.buf);
	if (agent != NULL)
		auditlog_put(AUDIT_KEY("agent"), agent, strlen(agent), 0);
	if (id != NULL)
		auditlog_put(AUDIT_KEY("id"), id, strlen(id), 0);
}

/* End a line; flush early if a lot is queued. */
static void
auditlog_end(void)
{
	auditlog_tail(jsonw_room(&audit_w, 2));
}

/*
 * Append a string member: key a literal, v from anywhere (NULL: none).
 * A value that needs no escape goes in with its key in one reservation.
 */
static void
auditlog_pair(const char *k, const char *v)
{
	size_t	kl, vl;
	char	*p;

	if (v == NULL)
		return;
	kl = strlen(k);
	vl = strlen(v);
	if (jsonw_plain(v, vl) != vl) {
		jsonw_put_key(&audit_w, 0, k, kl);
		jsonw_string(&audit_w, v, vl);
		return;
	}
	/* ,"k":"v" */
	p = jsonw_room(&audit_w, kl + vl + 7);
	p[0] = ',';
	p[1] = '"';
	jsonw_copy(p + 2, k, kl);
	p += kl + 2;
	memcpy(p, "\":\"", 3);
	jsonw_copy(p + 3, v, vl);
	p[vl + 3] = '"';
	audit_w.tail = (size_t)(p + vl + 4 - audit_w.buf);
}

/* Append the members key, value, ... up to a NULL key; end the line. */
static void
auditlog_vmembers(const char *k, va_list ap)
{
	const char	*v;

	for (; k != NULL; k = va_arg(ap, const char *)) {
		v = va_arg(ap, const char *);
		auditlog_pair(k, v);
	}
	auditlog_end();
}

/* Append string members (key, value, ..., NULL) and end the line. */
static void
auditlog_members(const char *k, ...)
{
	va_list	ap;

	va_start(ap, k);
	auditlog_vmembers(k, ap);
	va_end(ap);
}

/*
 * Record an event with string fields given as key, value pairs ending
 * with NULL.  Keys are literals; a NULL value is skipped.
 */
void
auditlog_event(const char *ev, const char *agent, const char *id, ...)
{
	va_list	ap;

	if (audit_fd == -1 || audit_failed)
		return;
	auditlog_begin(ev, strlen(ev), agent, id);
	va_start(ap, id);
	auditlog_vmembers(va_arg(ap, const char *), ap);
	va_end(ap);
}

/*
 * Measure s (NULL: none, 0 bytes) into *n; return nonzero when it cannot
 * go in as it is, without an escape.  The answers for a line's strings
 * are or'ed, and tested once.
 */
static inline __attribute__((always_inline)) unsigned
auditlog_special(const char *s, size_t *n)
{
	if (s == NULL) {
		*n = 0;
		return 0;
	}
	*n = strlen(s);
	return jsonw_special(s, *n);
}

/*
 * As auditlog_special, for a string whose jsonw_idq q its owner kept:
 * when q says it needs no escape, its length is q's, with no look at it.
 */
static inline __attribute__((always_inline)) unsigned
auditlog_known(const char *s, unsigned q, size_t *n)
{
	if (q & JSONW_PLAIN) {
		*n = JSONW_IDQ_LEN(q);
#ifdef CORRAL_SANITIZE
		/* Kept where the id was made: a rename that forgot it shows. */
		if (s != NULL && jsonw_idq(s, strlen(s)) != q)
			fatalx("auditlog: id \"%.64s\" kept as %zu plain bytes",
			    s, *n);
#endif
		return 0;
	}
	return auditlog_special(s, n);
}

/* Copy string member v of vl bytes to p unless v is NULL. */
#define AUDIT_COPY(p, k, v, vl) do {					\
	if ((v) != NULL)						\
		(p) = auditlog_copy((p), AUDIT_KEY(k), (v), (vl));	\
} while (0)
/* The room a member takes: ,"k":"v" */
#define AUDIT_ROOM(k, vl)	(sizeof(k) + 5 + (vl))

/*
 * Record an envelope as it travelled (valid JSON, embedded as is); at
 * --log-level decisions, the line without it.  When agent and id need
 * no escape (aq and iq may say so: jsonw_idq), the line is written in one
 * reservation.
 */
void
auditlog_envelope_q(const char *ev, size_t evn, const char *agent,
    unsigned aq, const char *id, unsigned iq, const char *line, size_t len)
{
	size_t	 an, in;
	char	*p;

	if (audit_fd == -1 || audit_failed)
		return;
	if (audit_decisions)
		len = 0;
	if (auditlog_known(agent, aq, &an) | auditlog_known(id, iq, &in)) {
		auditlog_begin(ev, evn, agent, id);
		p = jsonw_room(&audit_w, len + 9);
	} else {
		p = auditlog_head(AUDIT_HEAD_EV, sizeof(AUDIT_HEAD_EV) - 1,
		    evn + 1 + AUDIT_ROOM("agent", an) + AUDIT_ROOM("id", in) +
		    len + 9);
		jsonw_copy(p, ev, evn);
		p[evn] = '"';
		p += evn + 1;
		AUDIT_COPY(p, "agent", agent, an);
		AUDIT_COPY(p, "id", id, in);
	}
	if (!audit_decisions) {
		/* ,"env":{...}: the bytes as they are. */
		memcpy(p, ",\"env\":", 7);
		memcpy(p + 7, line, len);
		p += len + 7;
	}
	auditlog_tail(p);
}

/*
 * Record an event whose fields are the members of a JSON object built
 * with the JSON writer (numbers stay numbers).
 */
void
auditlog_fields(const char *ev, const char *agent, const char *id,
    const char *obj, size_t len)
{
	if (audit_fd == -1 || audit_failed)
		return;
	auditlog_begin(ev, strlen(ev), agent, id);
	if (len > 2) {
		/* Splice the object's members after ours. */
		jsonw_put_raw(&audit_w, ",", 1);
		jsonw_put_raw(&audit_w, obj + 1, len - 2);
	}
	auditlog_end();
}

/* Record an event with a JSON object of fields (a stolen reference). */
void
auditlog_json(const char *ev, const char *agent, json_t *fields)
{
	char	*s;

	if (audit_fd == -1 || audit_failed) {
		json_decref(fields);
		return;
	}
	auditlog_begin(ev, strlen(ev), agent, NULL);
	if (fields != NULL && json_object_size(fields) > 0 &&
	    (s = jsonw_dumps(fields, CORRAL_JSON_FLAGS)) != NULL) {
		/* Splice the object's members after ours. */
		jsonw_put_raw(&audit_w, ",", 1);
		jsonw_put_raw(&audit_w, s + 1, strlen(s) - 2);
		free(s);
	}
	json_decref(fields);
	auditlog_end();
}

/*
 * The lines written for every request, with what auditlog_event would
 * write for them, member for member, without its walk of the arguments;
 * when none of their strings needs an escape, in one reservation and
 * one pass.  "route" to agent, for intent, with reason (a phrase corral
 * spells).
 */
void
auditlog_route_q(const char *agent, unsigned aq, const char *id,
    unsigned iq, const char *intent, unsigned tq, const char *reason,
    size_t rn)
{
	size_t	 an, in, tn;
	char	*p;

	if (audit_fd == -1 || audit_failed)
		return;
	/*
	 * A workflow may name its own intents: checked like any string,
	 * unless tq says (protocol_intent_q) what it is.
	 */
	if (auditlog_known(agent, aq, &an) | auditlog_known(id, iq, &in) |
	    auditlog_known(intent, tq, &tn)) {
		auditlog_begin("route", 5, agent, id);
		auditlog_put(AUDIT_KEY("intent"), intent, tn, 0);
		auditlog_put(AUDIT_KEY("reason"), reason, rn, 1);
		auditlog_end();
		return;
	}
	p = auditlog_head(AUDIT_EV("route"), AUDIT_ROOM("agent", an) +
	    AUDIT_ROOM("id", in) + AUDIT_ROOM("intent", tn) +
	    AUDIT_ROOM("reason", rn) + 2);
	AUDIT_COPY(p, "agent", agent, an);
	AUDIT_COPY(p, "id", id, in);
	p = auditlog_copy(p, AUDIT_KEY("intent"), intent, tn);
	p = auditlog_copy(p, AUDIT_KEY("reason"), reason, rn);
	auditlog_tail(p);
}

/*
 * Record request id's outcome "replied" by agent (NULL: none), with the
 * reply's id, and reason and risk when there are (NULL: none).
 */
void
auditlog_replied(const char *agent, const char *id, const char *reply,
    const char *reason, const char *risk)
{
	size_t	 an, in, pn, rn, kn;
	char	*p;

	if (audit_fd == -1 || audit_failed)
		return;
	if (auditlog_special(agent, &an) | auditlog_special(id, &in) |
	    auditlog_special(reply, &pn) | auditlog_special(reason, &rn) |
	    auditlog_special(risk, &kn)) {
		auditlog_begin("outcome", 7, agent, id);
		auditlog_put(AUDIT_KEY("outcome"), "replied", 7, 1);
		if (reply != NULL)
			auditlog_put(AUDIT_KEY("reply"), reply, pn, 0);
		if (reason != NULL)
			auditlog_put(AUDIT_KEY("reason"), reason, rn, 0);
		if (risk != NULL)
			auditlog_put(AUDIT_KEY("risk"), risk, kn, 0);
		auditlog_end();
		return;
	}
	p = auditlog_head(AUDIT_EV("outcome"), AUDIT_ROOM("agent", an) +
	    AUDIT_ROOM("id", in) + AUDIT_ROOM("outcome", 7) +
	    AUDIT_ROOM("reply", pn) + AUDIT_ROOM("reason", rn) +
	    AUDIT_ROOM("risk", kn) + 2);
	AUDIT_COPY(p, "agent", agent, an);
	AUDIT_COPY(p, "id", id, in);
	p = auditlog_copy(p, AUDIT_KEY("outcome"), "replied", 7);
	AUDIT_COPY(p, "reply", reply, pn);
	AUDIT_COPY(p, "reason", reason, rn);
	AUDIT_COPY(p, "risk", risk, kn);
	auditlog_tail(p);
}

/*
 * Record agent's reply (its id reply, the envelope line of len bytes as
 * it travelled) to request id, and the request's outcome "replied", with
 * its risk (NULL: none): the lines auditlog_envelope and auditlog_replied
 * write, one after the other, at one reading of the clock and with the
 * strings they share measured and checked once (or not at all: aq, iq and
 * pq, jsonw_idq of agent, id and reply, may say what they are).
 */
void
auditlog_reply_q(const char *agent, unsigned aq, const char *id,
    unsigned iq, const char *reply, unsigned pq, const char *line, size_t len,
    const char *risk)
{
	struct timespec	 now;
	size_t		 an, in, pn, kn, n;
	char		*p;

	if (audit_fd == -1 || audit_failed)
		return;
	if (auditlog_known(agent, aq, &an) | auditlog_known(id, iq, &in) |
	    auditlog_known(reply, pq, &pn) | auditlog_special(risk, &kn)) {
		auditlog_envelope("reply", agent, reply, line, len);
		auditlog_replied(agent, id, reply, NULL, risk);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	n = audit_decisions ? 0 : len + 7;
	p = auditlog_head_at(&now, AUDIT_EV("reply"), AUDIT_ROOM("agent",
	    an) + AUDIT_ROOM("id", pn) + n + 2);
	AUDIT_COPY(p, "agent", agent, an);
	AUDIT_COPY(p, "id", reply, pn);
	if (n != 0) {
		/* ,"env":{...}: the bytes as they are. */
		memcpy(p, ",\"env\":", 7);
		memcpy(p + 7, line, len);
		p += n;
	}
	auditlog_tail(p);
	if (audit_failed)
		return;
	p = auditlog_head_at(&now, AUDIT_EV("outcome"), AUDIT_ROOM("agent",
	    an) + AUDIT_ROOM("id", in) + AUDIT_ROOM("outcome", 7) +
	    AUDIT_ROOM("reply", pn) + AUDIT_ROOM("risk", kn) + 2);
	AUDIT_COPY(p, "agent", agent, an);
	AUDIT_COPY(p, "id", id, in);
	p = auditlog_copy(p, AUDIT_KEY("outcome"), "replied", 7);
	AUDIT_COPY(p, "reply", reply, pn);
	AUDIT_COPY(p, "risk", risk, kn);
	auditlog_tail(p);
}

/*
 * Record that request id, made by agent (NULL: none), reflects on the
 * reply of id of, whose score is score (has_score 0: none, null): what
 * auditlog_fields writes for {"of":of,"score":score}.
 */
void
auditlog_reflect(const char *agent, const char *id, const char *of,
    int has_score, double score)
{
	char	 num[JSONW_NUMBER_MAX], *p;
	size_t	 an, in, on, nn;

	if (audit_fd == -1 || audit_failed)
		return;
	if (has_score)
		nn = jsonw_number(num, score);
	else {
		memcpy(num, "null", 4);
		nn = 4;
	}
	if (of == NULL || (auditlog_special(agent, &an) |
	    auditlog_special(id, &in) | auditlog_special(of, &on))) {
		auditlog_begin("reflect", 7, agent, id);
		if (of != NULL)
			auditlog_put(AUDIT_KEY("of"), of, strlen(of), 0);
		else
			ndjson_writer_add(&audit_w, ",\"of\":null", 10);
		p = jsonw_room(&audit_w, nn + 11);
	} else {
		p = auditlog_head(AUDIT_EV("reflect"), AUDIT_ROOM("agent", an) +
		    AUDIT_ROOM("id", in) + AUDIT_ROOM("of", on) + nn + 11);
		AUDIT_COPY(p, "agent", agent, an);
		AUDIT_COPY(p, "id", id, in);
		p = auditlog_copy(p, AUDIT_KEY("of"), of, on);
	}
	memcpy(p, ",\"score\":", 9);
	memcpy(p + 9, num, nn);
	auditlog_tail(p + 9 + nn);
}

/*
 * Record that job id (jsonw_idq iq) ended, failed or not, with its risk
 * (NULL: none).
 */
void
auditlog_job_end_q(const char *id, unsigned iq, int failed, const char *risk)
{
	size_t	 in, kn;
	char	*p;

	if (audit_fd == -1 || audit_failed)
		return;
	if (auditlog_known(id, iq, &in) | auditlog_special(risk, &kn)) {
		auditlog_begin("job_end", 7, NULL, id);
		if (failed)
			auditlog_put(AUDIT_KEY("status"), "failed", 6, 1);
		else
			auditlog_put(AUDIT_KEY("status"), "ok", 2, 1);
		if (risk != NULL)
			auditlog_put(AUDIT_KEY("risk"), risk, kn, 0);
		auditlog_end();
		return;
	}
	p = auditlog_head(AUDIT_EV("job_end"), AUDIT_ROOM("id", in) +
	    AUDIT_ROOM("status", 6) + AUDIT_ROOM("risk", kn) + 2);
	AUDIT_COPY(p, "id", id, in);
	if (failed)
		p = auditlog_copy(p, AUDIT_KEY("status"), "failed", 6);
	else
		p = auditlog_copy(p, AUDIT_KEY("status"), "ok", 2);
	AUDIT_COPY(p, "risk", risk, kn);
	auditlog_tail(p);
}
