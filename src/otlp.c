/*
 * Traces in OpenTelemetry's OTLP/JSON format (corral run/serve --otlp
 * FILE): one span per request, from its acceptance to its outcome, in the
 * trace of its job, its parent the request whose reply made it (a
 * reflection's, the weak reply's request), so a run opens in any viewer
 * that reads OTLP.
 *
 * The file has one ExportTraceServiceRequest per line, as the
 * OpenTelemetry collector's file exporter writes them: spans are written
 * in batches of OTLP_BATCH, and the rest when the run ends.  Ids are
 * hashes of corral's own: the trace id of the run's id and the job's
 * (or, for a request outside any job, its own), the span id of the run's
 * id and the request's.  What a request's parent is comes from the
 * trace.parents of its envelope: a reply's id, which the last
 * OTLP_REPLIES replies map back to the request they answered.
 *
 * Nothing here runs unless --otlp was given.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

#define OTLP_BATCH	512	/* spans per line of the file */
#define OTLP_REPLIES	4096	/* reply ids mapped to their requests */

struct otlp_reply {
	char	reply[CORRAL_ID_MAX];
	char	request[CORRAL_ID_MAX];
};

static char			*otlp_path;
static FILE			*otlp_file;
static struct jsonw		 otlp_spans;	/* the batch, a JSON array */
static unsigned int		 otlp_nspans;
static uint64_t			 otlp_total;
static struct otlp_reply	*otlp_replies;	/* a ring */
static size_t			 otlp_next;

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

/* Open the file; 0, or -1 with errno. */
int
otlp_open(void)
{
	if (otlp_path == NULL)
		return 0;
	if ((otlp_file = fopen(otlp_path, "we")) == NULL)
		return -1;
	otlp_replies = xcalloc(OTLP_REPLIES, sizeof *otlp_replies);
	jsonw_init(&otlp_spans);
	jsonw_array(&otlp_spans);
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

	if (otlp_file == NULL || reply == NULL)
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

/* Write the spans of the batch as one ExportTraceServiceRequest line. */
static void
otlp_flush(void)
{
	struct jsonw	 j;
	char		*spans, *line;
	size_t		 slen, len;

	if (otlp_file == NULL || otlp_nspans == 0)
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
	line = jsonw_finish(&j, &len);
	if (fwrite(line, 1, len, otlp_file) != len ||
	    fputc('\n', otlp_file) == EOF)
		log_warn("--otlp %s", otlp_path);
	free(line);
	free(spans);
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
	int		 ok = strcmp(outcome, "replied") == 0;

	if (otlp_file == NULL)
		return;
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

/* The run ends: the last spans are written and the file closed. */
void
otlp_close(void)
{
	if (otlp_file == NULL)
		return;
	otlp_flush();
	jsonw_free(&otlp_spans);
	if (fclose(otlp_file) != 0)
		log_warn("--otlp %s", otlp_path);
	otlp_file = NULL;
	free(otlp_replies);
	otlp_replies = NULL;
	log_info("--otlp %s: %llu spans", otlp_path,
	    (unsigned long long)otlp_total);
}
