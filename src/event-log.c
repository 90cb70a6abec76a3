/*
 * Replays of events older than the history, read back from the audit
 * log a step at a time.
 *
 * The log of a long run is large (a 275 MB log is a few hours of busy
 * agents), and a replay that read all of it before answering stopped the
 * loop for seconds: two clients replaying in a loop cut map/send from
 * 14,000 a second to 11, and a ping took 1.55 s.  So a replay that needs
 * the log does not read it at once:
 *
 *   - an index remembers where in the file the map_event lines of this
 *     run are, one entry per EVENT_LOG_SPACING bytes of log (at most
 *     EVENT_LOG_INDEX entries: when full, every other one goes and the
 *     spacing doubles), so a replay starts reading near its first event,
 *     not at the top of the file;
 *   - each loop iteration reads at most EVENT_LOG_STEP bytes for one
 *     replay, taking turns among at most EVENT_LOG_ACTIVE of them (the
 *     others wait their turn), and reading stops as soon as the answer
 *     is full;
 *   - a peer has one such replay at a time.
 *
 * A line's header (event id, type, time) is read where the writer put
 * it; the line is parsed only when the replay's filter reads more of
 * the event.  Reading stops at the first event the history still holds
 * (those come from memory: event.c) or after the newest event there was
 * when the replay was asked.  Lines not yet written wait for the audit
 * log's writer thread; the loop never waits for it.  A log that is not a
 * regular file (a pipe, a terminal) cannot be read back: replays then
 * have the history only.
 */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"
#include "event-int.h"

#define EVENT_LOG_STEP		(256 * 1024)	/* read per loop iteration */
#define EVENT_LOG_ACTIVE	2		/* replays reading at once */
#define EVENT_LOG_INDEX		4096		/* index entries at most */
#define EVENT_LOG_SPACING	(1024 * 1024)	/* of log between two, first */
#define EVENT_LOG_HEAD		128		/* where "ev" is in a line */

/* Where an event's line starts in the log. */
struct event_log_mark {
	char		id[EVENT_ID_LEN + 1];
	uint64_t	ms;
	uint64_t	off;
};

static struct {
	int			 usable;	/* a regular file, offsets known */
	char			*path;
	size_t			 maxline;	/* a line of the log, at most */
	uint64_t		 run_off;	/* where this run's lines start */
	struct event_log_mark	*index;
	size_t			 nindex;
	uint64_t		 spacing;
	uint64_t		 last;		/* offset of the last entry */
	TAILQ_HEAD(, event_replay) active;	/* reading, in turns */
	TAILQ_HEAD(, event_replay) waiting;
	unsigned int		 nactive;
	ev_timer		 step;
	char			*buf;		/* EVENT_LOG_STEP bytes */
} elog = {
	.active = TAILQ_HEAD_INITIALIZER(elog.active),
	.waiting = TAILQ_HEAD_INITIALIZER(elog.waiting),
};

static void	event_log_step_cb(struct ev_loop *, ev_timer *, int);
static void	event_log_activate(struct event_replay *);

/* Forget the log, its index and every replay reading it (a new run). */
void
event_log_init(void)
{
	struct event_replay	*rp;

	while ((rp = TAILQ_FIRST(&elog.active)) != NULL) {
		TAILQ_REMOVE(&elog.active, rp, entry);
		event_replay_free(rp);
	}
	while ((rp = TAILQ_FIRST(&elog.waiting)) != NULL) {
		TAILQ_REMOVE(&elog.waiting, rp, entry);
		event_replay_free(rp);
	}
	elog.nactive = 0;
	if (ev_is_active(&elog.step))
		ev_timer_stop(LOOP, &elog.step);
	free(elog.index);
	elog.index = NULL;
	elog.nindex = 0;
	free(elog.path);
	elog.path = NULL;
	free(elog.buf);
	elog.buf = NULL;
	elog.usable = 0;
}

/*
 * Read replays' older events from the audit log at path (NULL: none),
 * just opened for this run, whose lines are at most maxline bytes.
 */
void
event_log_set(const char *path, size_t maxline)
{
	event_log_init();
	if (path == NULL)
		return;
	elog.path = xstrdup(path);
	/* An event escapes its payload once more than the line it came in. */
	elog.maxline = 2 * maxline + 64 * 1024;
	elog.run_off = auditlog_offset();
	elog.usable = elog.run_off != UINT64_MAX;
	elog.spacing = EVENT_LOG_SPACING;
	elog.last = elog.run_off;
	ev_timer_init(&elog.step, event_log_step_cb, 0, 0);
	if (!elog.usable)
		log_info("audit log %s is not a regular file: map/replay has "
		    "the last events only", path);
}

/* Can replays read older events back from the log? */
int
event_log_usable(void)
{
	return elog.usable && auditlog_enabled();
}

/*
 * An event's line starts at off in the log: remember it in the index,
 * one every so many bytes.
 */
void
event_log_audited(const char *id, uint64_t ms, uint64_t off)
{
	struct event_log_mark	*m;
	size_t			 i;

	if (!elog.usable || off == UINT64_MAX || off - elog.last <
	    elog.spacing)
		return;
	if (elog.nindex == EVENT_LOG_INDEX) {
		/* Full: keep every other entry, twice as far apart. */
		for (i = 0; i < EVENT_LOG_INDEX / 2; i++)
			elog.index[i] = elog.index[2 * i + 1];
		elog.nindex = EVENT_LOG_INDEX / 2;
		elog.spacing *= 2;
	}
	if (elog.index == NULL)
		elog.index = xcalloc(EVENT_LOG_INDEX, sizeof *elog.index);
	m = &elog.index[elog.nindex++];
	strlcpy(m->id, id, sizeof m->id);
	m->ms = ms;
	m->off = off;
	elog.last = off;
}

/* What the index costs, in bytes. */
size_t
event_log_index_cost(void)
{
	return elog.index != NULL ? EVENT_LOG_INDEX * sizeof *elog.index : 0;
}

/*
 * Where a replay starts reading: at the last indexed event before its
 * span, else where this run's lines start.
 */
static uint64_t
event_log_start_off(const struct event_replay *rp)
{
	uint64_t	off = elog.run_off;
	size_t		i;

	for (i = 0; i < elog.nindex; i++) {
		if (rp->after[0] != '\0' ? strcmp(elog.index[i].id,
		    rp->after) > 0 : elog.index[i].ms >= rp->from)
			break;
		off = elog.index[i].off;
	}
	return off;
}

/* Does this peer have a replay reading the log? */
int
event_log_busy(const struct peer *p)
{
	struct event_replay	*rp;

	TAILQ_FOREACH(rp, &elog.active, entry)
		if (rp->peer == p)
			return 1;
	TAILQ_FOREACH(rp, &elog.waiting, entry)
		if (rp->peer == p)
			return 1;
	return 0;
}

/*
 * Begin a replay that reads the log (the replay is ours now): it reads
 * at once if fewer than EVENT_LOG_ACTIVE do, else it waits its turn.
 * Returns 0.
 */
int
event_log_start(struct event_replay *rp)
{
	if (elog.nactive >= EVENT_LOG_ACTIVE) {
		TAILQ_INSERT_TAIL(&elog.waiting, rp, entry);
		return 0;
	}
	event_log_activate(rp);
	return 0;
}

/* Open the log for a replay and give it turns. */
static void
event_log_activate(struct event_replay *rp)
{
	struct stat	st;
	char		c;

	rp->off = event_log_start_off(rp);
	rp->ours = 1;
	rp->fd = open(elog.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (rp->fd == -1 || fstat(rp->fd, &st) == -1 ||
	    !S_ISREG(st.st_mode)) {
		log_warn("map/replay: %s", elog.path);
		rp->done = 1;
	} else if (rp->off > 0 && (pread(rp->fd, &c, 1,
	    (off_t)rp->off - 1) != 1 || c != '\n')) {
		/* Not where a line starts: the file changed under us. */
		rp->off = 0;
		rp->ours = 0;
	}
	ndjson_reader_init(&rp->rd, elog.maxline, 0);
	TAILQ_INSERT_TAIL(&elog.active, rp, entry);
	elog.nactive++;
	if (!ev_is_active(&elog.step))
		ev_timer_start(LOOP, &elog.step);
}

/* A replay is done reading: answer it, and let the next one read. */
static void
event_log_done(struct event_replay *rp)
{
	struct event_replay	*next;

	TAILQ_REMOVE(&elog.active, rp, entry);
	elog.nactive--;
	if ((next = TAILQ_FIRST(&elog.waiting)) != NULL) {
		TAILQ_REMOVE(&elog.waiting, next, entry);
		event_log_activate(next);
	}
	event_replay_finish(rp);
}

/* A peer is gone: its replays end unanswered. */
void
event_log_peer_gone(struct peer *p)
{
	struct event_replay	*rp, *next;

	TAILQ_FOREACH_SAFE(rp, &elog.waiting, entry, next)
		if (rp->peer == p) {
			TAILQ_REMOVE(&elog.waiting, rp, entry);
			event_replay_free(rp);
		}
	TAILQ_FOREACH_SAFE(rp, &elog.active, entry, next)
		if (rp->peer == p) {
			TAILQ_REMOVE(&elog.active, rp, entry);
			elog.nactive--;
			event_replay_free(rp);
			if ((next = TAILQ_FIRST(&elog.waiting)) != NULL) {
				TAILQ_REMOVE(&elog.waiting, next, entry);
				event_log_activate(next);
			}
			break;	/* one at a time per peer */
		}
}

/* A run_start line: are the lines after it this run's? */
static void
event_log_run(struct event_replay *rp, const char *line, size_t len)
{
	json_t		*j;
	const char	*run;

	if ((j = json_loadb(line, len, 0, NULL)) == NULL)
		return;
	run = json_string_value(json_object_get(j, "run"));
	rp->ours = run != NULL && strcmp(run, protocol_run_id()) == 0;
	json_decref(j);
}

/*
 * Read the header of a map_event line's event, where the writer puts
 * it: {"id":"ULID","type":"T","timestamp":MS ...  Returns 0 with the id
 * (not terminated), type (copied) and ms, or -1.
 */
static int
event_log_header(const char *ev, const char *end, const char **id,
    char *type, size_t tlen, uint64_t *ms)
{
	const char	*p, *q;
	size_t		 n;

	if (end - ev < 8 + EVENT_ID_LEN || memcmp(ev, "{\"id\":\"", 7) != 0)
		return -1;
	*id = ev + 7;
	p = *id + EVENT_ID_LEN;
	if (end - p < 10 || memcmp(p, "\",\"type\":\"", 10) != 0)
		return -1;
	p += 10;
	if ((q = memchr(p, '"', (size_t)(end - p))) == NULL ||
	    (n = (size_t)(q - p)) >= tlen)
		return -1;
	memcpy(type, p, n);
	type[n] = '\0';
	p = q;
	if (end - p < 14 || memcmp(p, "\",\"timestamp\":", 14) != 0)
		return -1;
	p += 14;
	for (*ms = 0, n = 0; p < end && *p >= '0' && *p <= '9' && n < 16;
	    p++, n++)
		*ms = *ms * 10 + (uint64_t)(*p - '0');
	return n > 0 ? 0 : -1;
}

/*
 * Match one event of the log against a replay's filter, parsing its line
 * only when the filter reads more than the type.
 */
static int
event_log_match(struct event_replay *rp, const char *line, size_t len,
    const char *type, const char *ev, size_t evlen)
{
	struct event_fields	 e;
	json_t			*j = NULL, *x, *data;
	int			 ok;

	memset(&e, 0, sizeof e);
	e.type = type;
	e.text = ev;
	e.len = evlen;
	if (event_filter_fields(rp->filter) & EVENT_FIELDS_KEYS) {
		if ((j = json_loadb(line, len, 0, NULL)) == NULL)
			return 0;
		x = json_object_get(j, "event");
		data = json_object_get(x, "data");
		e.source = json_string_value(json_object_get(x, "source"));
		e.srole = json_string_value(json_object_get(j, "srole"));
		e.arole = json_string_value(json_object_get(j, "arole"));
		e.agent = json_string_value(json_object_get(data, "agentId"));
		e.corr = json_string_value(json_object_get(data,
		    "correlationId"));
	}
	ok = event_filter_match(rp->filter, &e);
	event_fields_done(&e);
	json_decref(j);
	return ok;
}

/*
 * The agent a map_event line is about (its "agent" member, before the
 * event), into buf: 0 with *agent (NULL: none), or -1 when it could not
 * be read.  Agent ids rarely need escapes; one that has them is read
 * with jansson.
 */
static int
event_log_agent(const char *line, size_t len, char *buf, size_t blen,
    const char **agent)
{
	const char	*p, *q, *ev;
	json_t		*j;

	*agent = NULL;
	if ((ev = memmem(line, len, ",\"event\":{", 10)) == NULL)
		return -1;
	if ((p = memmem(line, (size_t)(ev - line), ",\"agent\":\"", 10)) ==
	    NULL)
		return 0;
	p += 10;
	if ((q = memchr(p, '"', (size_t)(ev - p))) == NULL)
		return -1;
	if (memchr(p, '\\', (size_t)(q - p)) == NULL &&
	    (size_t)(q - p) < blen) {
		memcpy(buf, p, (size_t)(q - p));
		buf[q - p] = '\0';
		*agent = buf;
		return 0;
	}
	if ((j = json_loadb(line, len, 0, NULL)) == NULL)
		return -1;
	if (json_string_value(json_object_get(j, "agent")) != NULL) {
		strlcpy(buf, json_string_value(json_object_get(j, "agent")),
		    blen);
		*agent = buf;
	}
	json_decref(j);
	return 0;
}

/* One line of the log, for a replay. */
static void
event_log_line(void *arg, enum ndjson_kind kind, char *line, size_t len,
    size_t extra)
{
	struct event_replay	*rp = arg;
	const char		*oldest, *id, *ev, *agent, *end = line + len;
	char			 type[64], who[256];
	size_t			 head = len < EVENT_LOG_HEAD ? len :
				    EVENT_LOG_HEAD;
	uint64_t		 ms;

	if (rp->done || kind != NDJSON_LINE)
		return;
	if (memmem(line, head, "\"ev\":\"run_start\"", 16) != NULL) {
		event_log_run(rp, line, len);
		return;
	}
	if (!rp->ours || memmem(line, head, "\"ev\":\"map_event\"", 16) == NULL)
		return;
	/* The event is the line's last member: its bytes as they went out. */
	if ((ev = memmem(line, len, ",\"event\":{\"id\":\"", 16)) == NULL ||
	    len < 2 || line[len - 1] != '}')
		return;
	ev += 9;
	if (event_log_header(ev, end, &id, type, sizeof type, &ms) != 0)
		return;
	oldest = event_oldest_id();
	if ((oldest != NULL && strncmp(id, oldest, EVENT_ID_LEN) >= 0) ||
	    strncmp(id, rp->stop, EVENT_ID_LEN) > 0) {
		/* The history has the rest (or it came after the question). */
		rp->done = 1;
		ndjson_reader_stop(&rp->rd);
		return;
	}
	if (!event_replay_in(rp, id, ms) || event_log_agent(line, len, who,
	    sizeof who, &agent) != 0 || !event_sees(rp->peer, agent) ||
	    !event_log_match(rp, line, len, type, ev, (size_t)(end - 1 - ev)))
		return;
	if (event_replay_add(rp, id, ms, ev, (size_t)(end - 1 - ev)) != 0) {
		/* The answer is full: hasMore, and the count stops here. */
		rp->partial = 1;
		rp->done = 1;
		ndjson_reader_stop(&rp->rd);
	}
}

/*
 * Read the next stretch of the log for a replay.  Returns 1 when it is
 * done (its answer is full, it reached the history, or the log has
 * nothing more for it), 2 when it waits for lines the writer thread has
 * not written yet, else 0.
 */
static int
event_log_read(struct event_replay *rp)
{
	ssize_t	n;

	if (rp->done)
		return 1;
	if (elog.buf == NULL)
		elog.buf = xmalloc(EVENT_LOG_STEP);
	n = pread(rp->fd, elog.buf, EVENT_LOG_STEP, (off_t)rp->off);
	if (n == -1 && errno == EINTR)
		return 0;
	if (n == -1) {
		log_warn("map/replay: %s", elog.path);
		return 1;
	}
	if (n == 0) {
		/*
		 * The end of the file.  Lines the writer thread has not
		 * written yet are worth waiting for, a step at a time.
		 */
		return auditlog_enabled() && rp->off < auditlog_offset() ? 2 :
		    1;
	}
	rp->off += (uint64_t)n;
	ndjson_feed(&rp->rd, elog.buf, (size_t)n, event_log_line, rp);
	return rp->done;
}

/*
 * A loop iteration's step: one replay reads a stretch, then goes to the
 * back of the line.  The timer fires again after the next poll while
 * replays are reading, so the loop serves everything else in between.
 */
static void
event_log_step_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct event_replay	*rp;
	double			 after = 0;
	int			 rc;

	if ((rp = TAILQ_FIRST(&elog.active)) == NULL)
		return;
	if ((rc = event_log_read(rp)) == 1)
		event_log_done(rp);
	else {
		TAILQ_REMOVE(&elog.active, rp, entry);
		TAILQ_INSERT_TAIL(&elog.active, rp, entry);
		/* Alone and waiting for the writer: give it a moment. */
		if (rc == 2 && elog.nactive == 1)
			after = 0.002;
	}
	if (!TAILQ_EMPTY(&elog.active)) {
		ev_timer_set(&elog.step, after, 0);
		ev_timer_start(loop, &elog.step);
	}
}
