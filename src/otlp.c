/*
 * Traces in OpenTelemetry's OTLP/JSON format (corral run/serve --otlp
 * FILE): one span per request, from its acceptance to its outcome, in the
 * trace of its job, its parent the request whose reply made it (a
 * reflection's, the weak reply's request), so a run opens in any viewer
 * that reads OTLP.
 *
 * The file has one ExportTraceServiceRequest per line, as the
 * OpenTelemetry collector's file exporter writes them: spans are written
 * in batches of OTLP_BATCH, and the rest when the run ends.
 *
 * A slow disk must not stall the loop, so the loop never writes the file:
 * each batch's line goes to a queue that a writer thread empties.  The
 * queue holds at most OTLP_QUEUE bytes; a batch that does not fit is
 * dropped, its spans counted (and said once in the log, and at the end).
 * When the run ends the writer is given the time it needs while it makes
 * progress, and at most OTLP_STUCK seconds without any: a file nobody
 * drains (a FIFO whose reader stopped, a hung mount) does not keep corral
 * from exiting, and what was left is counted as dropped.  Ids are
 * hashes of corral's own: the trace id of the run's id and the job's
 * (or, for a request outside any job, its own), the span id of the run's
 * id and the request's.  What a request's parent is comes from the
 * trace.parents of its envelope: a reply's id, which the last
 * OTLP_REPLIES replies map back to the request they answered.
 *
 * --otlp http://HOST:PORT/PATH posts each batch to an OTLP/HTTP collector
 * instead (otlp-http.c), from the same writer thread and queue: a POST
 * that fails loses its batch, counted, and the next batch is tried.
 *
 * Nothing here runs unless --otlp was given.
 */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "corral.h"
#include "otlp-int.h"

#define OTLP_BATCH	512	/* spans per line of the file */
#define OTLP_REPLIES	4096	/* reply ids mapped to their requests */
#define OTLP_QUEUE	(8 * 1024 * 1024)	/* bytes waiting for the disk */
#define OTLP_STUCK	2	/* seconds without progress at the end */

struct otlp_reply {
	char	reply[CORRAL_ID_MAX];
	char	request[CORRAL_ID_MAX];
};

/* A batch's line, waiting for the writer. */
struct otlp_line {
	char			*line;
	size_t			 len;
	unsigned int		 spans;
	TAILQ_ENTRY(otlp_line)	 entry;
};

static char			*otlp_path;
static int			 otlp_on;	/* exporting: the file is open */
static int			 otlp_fd = -1;
static int			 otlp_http;	/* posting to otlp_url instead */
static struct otlp_url		 otlp_url;
static struct jsonw		 otlp_spans;	/* the batch, a JSON array */
static unsigned int		 otlp_nspans;
static uint64_t			 otlp_total;
static uint64_t			 otlp_dropped;	/* the loop's count */
static struct otlp_reply	*otlp_replies;	/* a ring */
static size_t			 otlp_next;

/* The queue, shared with the writer thread under otlp_mu. */
static pthread_t		 otlp_thread;
static int			 otlp_threaded;
static pthread_mutex_t		 otlp_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t		 otlp_cv = PTHREAD_COND_INITIALIZER;
static TAILQ_HEAD(, otlp_line)	 otlp_queue =
				    TAILQ_HEAD_INITIALIZER(otlp_queue);
static size_t			 otlp_queued;	/* bytes */
static uint64_t			 otlp_written;	/* bytes, ever */
static uint64_t			 otlp_done;	/* lines written or lost */
static uint64_t			 otlp_lost;	/* spans the writer lost */
static unsigned int		 otlp_busy;	/* spans being written */
static int			 otlp_error;	/* errno of a failed write */
static int			 otlp_quit;
static int			 otlp_said;	/* the loop said the error */
static uint64_t			 otlp_failed;	/* POSTs that failed */
static char			 otlp_why[256];	/* why the last one did */

/* Export traces to path (before the run starts), or not (NULL). */
void
otlp_configure(const char *path)
{
	free(otlp_path);
	otlp_path = path != NULL ? xstrdup(path) : NULL;
}

/* Was --otlp given? */
int
otlp_configured(void)
{
	return otlp_path != NULL;
}

/* Write a line and its newline; 0, or an errno. */
static int
otlp_write(const char *p, size_t len)
{
	ssize_t	n;

	while (len > 0) {
		if ((n = write(otlp_fd, p, len)) == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 ? EIO : errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Free a queued line (a cleanup handler of the writer thread too). */
static void
otlp_line_free(void *arg)
{
	struct otlp_line	*l = arg;

	free(l->line);
	free(l);
}

/*
 * Write a queued line.  Cancelled in a write nobody drains, the thread
 * frees it on the way out.
 */
static int
otlp_write_line(struct otlp_line *l, char *why, size_t len)
{
	volatile int	error;	/* set between setjmp and a cancel */

	pthread_cleanup_push(otlp_line_free, l);
	if (otlp_http)
		/* The body without the line's newline. */
		error = otlp_http_post(&otlp_url, l->line, l->len - 1, why,
		    len) == 0 ? 0 : -1;
	else
		error = otlp_write(l->line, l->len);
	pthread_cleanup_pop(0);
	return error;
}

/*
 * The writer thread: write each queued line, until told to quit and the
 * queue is empty.  After a failed write the rest is dropped, counted; a
 * POST that failed loses its own batch only.
 */
static void *
otlp_writer(void *arg)
{
	struct otlp_line	*l;
	sigset_t		 all;
	char			 why[256];
	int			 error;

	/* Signals are the loop's business, never this thread's. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	pthread_mutex_lock(&otlp_mu);
	for (;;) {
		while ((l = TAILQ_FIRST(&otlp_queue)) == NULL && !otlp_quit)
			pthread_cond_wait(&otlp_cv, &otlp_mu);
		if (l == NULL)
			break;
		TAILQ_REMOVE(&otlp_queue, l, entry);
		otlp_queued -= l->len;
		otlp_busy = l->spans;
		error = otlp_error;
		pthread_mutex_unlock(&otlp_mu);
		if (error == 0)
			error = otlp_write_line(l, why, sizeof why);
		pthread_mutex_lock(&otlp_mu);
		otlp_busy = 0;
		otlp_done++;
		if (error == -1) {
			otlp_failed++;
			strlcpy(otlp_why, why, sizeof otlp_why);
			otlp_lost += l->spans;
		} else if (error != 0) {
			otlp_error = error;
			otlp_lost += l->spans;
		} else
			otlp_written += l->len;
		pthread_cond_broadcast(&otlp_cv);
		free(l->line);
		free(l);
	}
	pthread_mutex_unlock(&otlp_mu);
	return NULL;
}

/*
 * Open the file (or read the collector's URL) and start its writer; 0,
 * or -1 with errno.
 */
int
otlp_open(void)
{
	char	why[128];

	if (otlp_path == NULL)
		return 0;
	otlp_http = strncmp(otlp_path, "http://", 7) == 0;
	if (otlp_http) {
		if (otlp_http_parse(otlp_path, &otlp_url, why,
		    sizeof why) != 0) {
			log_warnx("--otlp %s: %s", otlp_path, why);
			errno = EINVAL;
			return -1;
		}
	} else if ((otlp_fd = open(otlp_path, O_WRONLY | O_CREAT | O_TRUNC |
	    O_CLOEXEC | O_NONBLOCK, 0666)) == -1)
		/* Not blocking in open: a FIFO without a reader is an error. */
		return -1;
	else
		(void)fcntl(otlp_fd, F_SETFL, 0);	/* the writer may wait */
	otlp_on = 1;
	otlp_failed = 0;
	otlp_why[0] = '\0';
	otlp_replies = xcalloc(OTLP_REPLIES, sizeof *otlp_replies);
	jsonw_init(&otlp_spans);
	jsonw_array(&otlp_spans);
	otlp_error = otlp_quit = otlp_said = 0;
	otlp_lost = otlp_written = otlp_done = otlp_dropped = otlp_total = 0;
	otlp_threaded = pthread_create(&otlp_thread, NULL, otlp_writer,
	    NULL) == 0;
	return 0;
}

/* FNV-1a, 64 bits, of a string after a seed. */
static uint64_t
otlp_hash(uint64_t h, const char *s)
{
	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* A span id of a request id: 16 hex digits, never all zero. */
static void
otlp_span_id(const char *id, char *out)
{
	uint64_t	h;

	h = otlp_hash(otlp_hash(0xcbf29ce484222325ULL, protocol_run_id()), id);
	snprintf(out, 17, "%016llx", (unsigned long long)(h != 0 ? h : 1));
}

/* A trace id of a job (or request) id: 32 hex digits. */
static void
otlp_trace_id(const char *id, char *out)
{
	uint64_t	a, b;

	a = otlp_hash(otlp_hash(0xcbf29ce484222325ULL, protocol_run_id()), id);
	b = otlp_hash(otlp_hash(0x84222325cbf29ce4ULL, id), protocol_run_id());
	snprintf(out, 33, "%016llx%016llx", (unsigned long long)a,
	    (unsigned long long)(b != 0 ? b : 1));
}

/* A request was answered by reply: remembered for its children's spans. */
void
otlp_replied(const struct msg *m, const char *reply)
{
	struct otlp_reply	*r;

	if (!otlp_on || reply == NULL)
		return;
	r = &otlp_replies[otlp_next++ % OTLP_REPLIES];
	strlcpy(r->reply, reply, sizeof r->reply);
	strlcpy(r->request, m->id, sizeof r->request);
}

/*
 * The request a request comes from: the one whose reply its envelope's
 * trace.parents names, or, when that names a request (a task, a client's
 * request), that one.  NULL for a first request.
 */
static const char *
otlp_parent(const struct msg *m, char *buf, size_t len)
{
	json_t		*env, *p;
	const char	*id;
	size_t		 i;

	if ((env = json_loadb(m->line, m->len, 0, NULL)) == NULL)
		return NULL;
	p = json_array_get(json_object_get(json_object_get(env, "trace"),
	    "parents"), 0);
	if ((id = json_string_value(p)) == NULL || strcmp(id, m->id) == 0) {
		json_decref(env);
		return NULL;
	}
	strlcpy(buf, id, len);
	json_decref(env);
	for (i = 1; i <= OTLP_REPLIES && i <= otlp_next; i++)
		if (strcmp(otlp_replies[(otlp_next - i) % OTLP_REPLIES].reply,
		    buf) == 0) {
			strlcpy(buf, otlp_replies[(otlp_next - i) %
			    OTLP_REPLIES].request, len);
			break;
		}
	return buf;
}

/* One attribute {key, value: {stringValue}}. */
static void
otlp_attr(struct jsonw *j, const char *key, const char *value)
{
	if (value == NULL)
		return;
	jsonw_object(j);
	jsonw_key(j, "key");
	jsonw_str(j, key);
	jsonw_key(j, "value");
	jsonw_object(j);
	jsonw_key(j, "stringValue");
	jsonw_str(j, value);
	jsonw_object_end(j);
	jsonw_object_end(j);
}

/* A time in nanoseconds since the epoch, as OTLP/JSON's decimal string. */
static void
otlp_time(struct jsonw *j, const char *key, ev_tstamp t)
{
	char	buf[32];

	snprintf(buf, sizeof buf, "%llu", (unsigned long long)(t * 1e9));
	jsonw_key(j, key);
	jsonw_str(j, buf);
}

/*
 * Hand a batch's line to the writer, or drop it (counted) when the queue
 * is full: the disk is slower than the run, and the loop does not wait.
 */
static void
otlp_queue_line(char *line, size_t len, unsigned int spans)
{
	struct otlp_line	*l;
	int			 error;

	pthread_mutex_lock(&otlp_mu);
	error = otlp_error;
	if (otlp_failed > 0 && !otlp_said) {
		/* Said once; the next batches are tried all the same. */
		log_warnx("--otlp %s: a POST failed (%s); the spans of a batch "
		    "that cannot be posted are dropped, and counted", otlp_path,
		    otlp_why);
		otlp_said = 1;
	}
	if (!otlp_threaded || error != 0 || otlp_queued + len > OTLP_QUEUE) {
		pthread_mutex_unlock(&otlp_mu);
		if (otlp_dropped == 0 && !otlp_said)
			log_warnx("--otlp %s: %s; spans are dropped, and counted",
			    otlp_path, error != 0 ? strerror(error) :
			    "the file is written slower than spans come");
		otlp_said = 1;
		otlp_dropped += spans;
		free(line);
		return;
	}
	l = xcalloc(1, sizeof *l);
	l->line = line;
	l->len = len;
	l->spans = spans;
	TAILQ_INSERT_TAIL(&otlp_queue, l, entry);
	otlp_queued += len;
	pthread_cond_broadcast(&otlp_cv);
	pthread_mutex_unlock(&otlp_mu);
}

/* Write the spans of the batch as one ExportTraceServiceRequest line. */
static void
otlp_flush(void)
{
	struct jsonw	 j;
	char		*spans, *line;
	size_t		 slen, len;

	if (!otlp_on || otlp_nspans == 0)
		return;
	jsonw_array_end(&otlp_spans);
	spans = jsonw_finish(&otlp_spans, &slen);
	jsonw_init(&j);
	jsonw_object(&j);
	jsonw_key(&j, "resourceSpans");
	jsonw_array(&j);
	jsonw_object(&j);
	jsonw_key(&j, "resource");
	jsonw_object(&j);
	jsonw_key(&j, "attributes");
	jsonw_array(&j);
	otlp_attr(&j, "service.name", "corral");
	otlp_attr(&j, "service.version", CORRAL_VERSION);
	otlp_attr(&j, "corral.run.id", protocol_run_id());
	jsonw_array_end(&j);
	jsonw_object_end(&j);
	jsonw_key(&j, "scopeSpans");
	jsonw_array(&j);
	jsonw_object(&j);
	jsonw_key(&j, "scope");
	jsonw_object(&j);
	jsonw_key(&j, "name");
	jsonw_str(&j, "corral");
	jsonw_key(&j, "version");
	jsonw_str(&j, CORRAL_VERSION);
	jsonw_object_end(&j);
	jsonw_key(&j, "spans");
	jsonw_raw(&j, spans, slen);
	jsonw_object_end(&j);
	jsonw_array_end(&j);
	jsonw_object_end(&j);
	jsonw_array_end(&j);
	jsonw_object_end(&j);
	jsonw_raw(&j, "\n", 1);
	line = jsonw_finish(&j, &len);
	free(spans);
	otlp_queue_line(line, len, otlp_nspans);
	otlp_nspans = 0;
	jsonw_init(&otlp_spans);
	jsonw_array(&otlp_spans);
}

/* A request had its outcome: its span. */
void
otlp_outcome(const struct msg *m, const char *outcome, const char *code,
    const char *why)
{
	struct jsonw	*j = &otlp_spans;
	struct agent	*a = m->agent != NULL ? m->agent : m->target;
	struct msg	*p;
	char		 tid[33], sid[17], pid[17], pbuf[CORRAL_ID_MAX];
	const char	*parent;
	int		 ok;

	if (!otlp_on)
		return;
	ok = strcmp(outcome, "replied") == 0;
	parent = otlp_parent(m, pbuf, sizeof pbuf);
	/* A request an agent made joins the trace of the one it works on. */
	if (m->job == NULL && parent != NULL && (p = engine_find(parent)) !=
	    NULL && p->job != NULL)
		otlp_trace_id(p->job->id, tid);
	else
		otlp_trace_id(m->job != NULL ? m->job->id : m->id, tid);
	otlp_span_id(m->id, sid);
	jsonw_object(j);
	jsonw_key(j, "traceId");
	jsonw_str(j, tid);
	jsonw_key(j, "spanId");
	jsonw_str(j, sid);
	if (parent != NULL) {
		otlp_span_id(parent, pid);
		jsonw_key(j, "parentSpanId");
		jsonw_str(j, pid);
	}
	jsonw_key(j, "name");
	jsonw_str(j, protocol_intent_name(m->intent));
	jsonw_key(j, "kind");
	jsonw_u64(j, 1);	/* SPAN_KIND_INTERNAL */
	otlp_time(j, "startTimeUnixNano", m->accepted);
	otlp_time(j, "endTimeUnixNano", ev_now(LOOP));
	jsonw_key(j, "attributes");
	jsonw_array(j);
	otlp_attr(j, "corral.request.id", m->id);
	otlp_attr(j, "corral.agent", a != NULL ? a->id : NULL);
	otlp_attr(j, "corral.outcome", outcome);
	otlp_attr(j, "corral.error.code", code);
	otlp_attr(j, "corral.priority", protocol_priority_name(m->prio));
	jsonw_array_end(j);
	jsonw_key(j, "status");
	jsonw_object(j);
	jsonw_key(j, "code");
	jsonw_u64(j, ok ? 1 : 2);	/* STATUS_CODE_OK, STATUS_CODE_ERROR */
	if (!ok && why != NULL) {
		jsonw_key(j, "message");
		jsonw_str(j, why);
	}
	jsonw_object_end(j);
	jsonw_object_end(j);
	otlp_total++;
	if (++otlp_nspans >= OTLP_BATCH)
		otlp_flush();
}

/*
 * Wait for the writer to empty the queue while it makes progress, at most
 * OTLP_STUCK seconds without any; then stop it.  What it did not write is
 * counted as dropped.
 */
static void
otlp_stop_writer(void)
{
	struct otlp_line	*l;
	struct timespec		 until;
	uint64_t		 seen = 0;
	unsigned int		 stuck = 0;

	pthread_mutex_lock(&otlp_mu);
	otlp_quit = 1;
	pthread_cond_broadcast(&otlp_cv);
	while (!TAILQ_EMPTY(&otlp_queue) || otlp_busy > 0) {
		seen = otlp_done;	/* a failed POST is progress too */
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += OTLP_STUCK;
		while (otlp_done == seen && (!TAILQ_EMPTY(&otlp_queue) ||
		    otlp_busy > 0) && pthread_cond_timedwait(&otlp_cv,
		    &otlp_mu, &until) != ETIMEDOUT)
			;
		if (otlp_done == seen && otlp_busy > 0) {
			stuck = otlp_busy;	/* nobody drains the file */
			break;
		}
	}
	while ((l = TAILQ_FIRST(&otlp_queue)) != NULL) {
		TAILQ_REMOVE(&otlp_queue, l, entry);
		otlp_queued -= l->len;
		otlp_lost += l->spans;
		free(l->line);
		free(l);
	}
	pthread_mutex_unlock(&otlp_mu);
	/*
	 * A write that does not return is cut short (write(2) is where the
	 * writer can be cancelled; it holds no lock there).
	 */
	if (stuck > 0)
		pthread_cancel(otlp_thread);
	pthread_join(otlp_thread, NULL);
	if (stuck > 0 && otlp_done == seen)
		otlp_lost += stuck;	/* its write was cut short */
}

/* The run ends: the last spans are written and the file closed. */
void
otlp_close(void)
{
	uint64_t	dropped;

	if (!otlp_on)
		return;
	otlp_flush();
	jsonw_free(&otlp_spans);
	if (otlp_threaded)
		otlp_stop_writer();
	if (otlp_error != 0)
		log_warnx("--otlp %s: %s", otlp_path, strerror(otlp_error));
	if (otlp_failed > 0)
		log_warnx("--otlp %s: %llu POSTs failed, the last: %s",
		    otlp_path, (unsigned long long)otlp_failed, otlp_why);
	if (otlp_fd != -1 && close(otlp_fd) != 0)
		log_warn("--otlp %s", otlp_path);
	otlp_fd = -1;
	otlp_on = 0;
	free(otlp_replies);
	otlp_replies = NULL;
	dropped = otlp_dropped + otlp_lost;
	if (dropped > 0)
		log_warnx("--otlp %s: %llu spans, %llu of them dropped",
		    otlp_path, (unsigned long long)otlp_total,
		    (unsigned long long)dropped);
	else
		log_info("--otlp %s: %llu spans", otlp_path,
		    (unsigned long long)otlp_total);
}
