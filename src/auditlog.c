/*
 * The audit log: one JSON object per line for every event that matters,
 * in the order corral saw them.  Envelopes are embedded as the bytes that
 * travelled, so the log doubles as the replay record (seed 000: "log the
 * envelope as your only audit format").  docs/auditlog.md has the format.
 *
 * Lines are built by hand, not with jansson: the log is on the message
 * path.  They are queued and written once per loop iteration, and at exit.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"

#define AUDIT_FLUSH	(1024 * 1024)

static int			audit_fd = -1;
static struct ndjson_writer	audit_w;
static uint64_t			audit_seq;
static double			audit_t0;

/* Open the audit log for appending; returns -1 with errno set. */
int
auditlog_open(const char *path)
{
	char	ts[40];

	audit_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (audit_fd == -1)
		return -1;
	ndjson_writer_init(&audit_w, 0, AUDIT_FLUSH);
	audit_t0 = util_mono();
	util_rfc3339(ts, sizeof ts);
	auditlog_event("run_start", NULL, NULL, "run", cr != NULL ?
	    cr->run_id : "", "time", ts, "version", CORRAL_VERSION,
	    "workflow", cr != NULL && cr->wf != NULL ? cr->wf->path : "",
	    NULL);
	return 0;
}

/* Return nonzero if an audit log is being written. */
int
auditlog_enabled(void)
{
	return audit_fd != -1;
}

/* Write everything queued. */
void
auditlog_flush(void)
{
	size_t	 left;
	ssize_t	 n;
	char	*p;

	if (audit_fd == -1)
		return;
	p = audit_w.buf + audit_w.head;
	left = audit_w.tail - audit_w.head;
	while (left > 0) {
		n = write(audit_fd, p, left);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			log_warn("audit log write");
			break;
		}
		p += n;
		left -= (size_t)n;
	}
	audit_w.head = audit_w.tail = 0;
}

/* Close the audit log. */
void
auditlog_close(void)
{
	if (audit_fd == -1)
		return;
	auditlog_flush();
	close(audit_fd);
	audit_fd = -1;
	ndjson_writer_free(&audit_w);
}

/* Start a line: sequence, monotonic time, event, agent, id. */
static void
auditlog_begin(const char *ev, const char *agent, const char *id)
{
	char	buf[96];
	int	n;

	n = snprintf(buf, sizeof buf, "{\"seq\":%llu,\"t\":%.6f,\"ev\":",
	    (unsigned long long)++audit_seq, util_mono() - audit_t0);
	ndjson_writer_add(&audit_w, buf, (size_t)n);
	util_json_string(&audit_w, ev, strlen(ev));
	if (agent != NULL) {
		ndjson_writer_add(&audit_w, ",\"agent\":", 9);
		util_json_string(&audit_w, agent, strlen(agent));
	}
	if (id != NULL) {
		ndjson_writer_add(&audit_w, ",\"id\":", 6);
		util_json_string(&audit_w, id, strlen(id));
	}
}

/* End a line; flush early if a lot is queued. */
static void
auditlog_end(void)
{
	ndjson_writer_add(&audit_w, "}\n", 2);
	if (audit_w.tail - audit_w.head >= AUDIT_FLUSH)
		auditlog_flush();
}

/*
 * Record an event with string fields given as key, value pairs ending
 * with NULL.  A NULL value is skipped.
 */
void
auditlog_event(const char *ev, const char *agent, const char *id, ...)
{
	va_list		 ap;
	const char	*k, *v;

	if (audit_fd == -1)
		return;
	auditlog_begin(ev, agent, id);
	va_start(ap, id);
	while ((k = va_arg(ap, const char *)) != NULL) {
		v = va_arg(ap, const char *);
		if (v == NULL)
			continue;
		ndjson_writer_add(&audit_w, ",", 1);
		util_json_string(&audit_w, k, strlen(k));
		ndjson_writer_add(&audit_w, ":", 1);
		util_json_string(&audit_w, v, strlen(v));
	}
	va_end(ap);
	auditlog_end();
}

/* Record an envelope as it travelled (valid JSON, embedded as is). */
void
auditlog_envelope(const char *ev, const char *agent, const char *id,
    const char *line, size_t len)
{
	if (audit_fd == -1)
		return;
	auditlog_begin(ev, agent, id);
	ndjson_writer_add(&audit_w, ",\"env\":", 7);
	ndjson_writer_add(&audit_w, line, len);
	auditlog_end();
}

/* Record an event with a JSON object of fields (a stolen reference). */
void
auditlog_json(const char *ev, const char *agent, json_t *fields)
{
	char	*s;

	if (audit_fd == -1) {
		json_decref(fields);
		return;
	}
	auditlog_begin(ev, agent, NULL);
	if (fields != NULL && json_object_size(fields) > 0 &&
	    (s = json_dumps(fields, CORRAL_JSON_FLAGS)) != NULL) {
		/* Splice the object's members after ours. */
		ndjson_writer_add(&audit_w, ",", 1);
		ndjson_writer_add(&audit_w, s + 1, strlen(s) - 2);
		free(s);
	}
	json_decref(fields);
	auditlog_end();
}
