/*
 * The lines agents write on stdout: each is sorted into an adapted tool's
 * line, a control frame or an envelope; bad ones (too long, a NUL byte,
 * not JSON, not a valid envelope) are counted, warned about at a bounded
 * rate, and answered with notices, and an agent that writes nothing but
 * bad lines is failed.  A part of the engine (engine.c).
 */

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "engine-int.h"

static void	engine_notices_summary(struct agent *, const char *);

/* Send an agent (NULL: serve's stdin) an error notice about its output. */
void
engine_notice(struct agent *a, const char *code, const char *path,
    const char *message, const char *parent)
{
	char	*e;
	size_t	 len;

	engine_stats.rejected++;
	auditlog_event("rejected", a != NULL ? a->id : "stdin", parent, "code",
	    code, "path", path != NULL ? path : "", "reason", message, NULL);
	if (a == NULL) {
		/* corral serve: the error is that input's one result. */
		e = envelope_error(code, "REJECTED", path, message, parent,
		    NULL, &len);
		engine_out(e, len);
		free(e);
		return;
	}
	if (agent_full(a) || a->work.env_streak > ENGINE_ENV_STREAK) {
		/*
		 * It does not read what we send, or it answers every notice
		 * with another bad envelope: more notices would only grow
		 * our memory, or loop with it for ever.  The line is still
		 * counted and audited, and one summary follows once it
		 * reads again or sends a valid envelope.
		 */
		engine_stats.notices_dropped++;
		a->work.notices_dropped++;
		return;
	}
	e = envelope_error(code, "REJECTED", path, message, parent,
	    CORRAL_KIND_NOTICE, &len);
	agent_send(a, e, len);
	free(e);
}

/*
 * The trace.id of a line that scanned but is not a valid envelope, if it
 * has a usable one, so the error can name what it answers.
 */
const char *
engine_raw_trace_id(struct jscan *js, const char *line, char *buf, size_t len)
{
	const char	*v;
	size_t		 l;
	int		 t, x;

	if (js->tok[0].type != JT_OBJECT ||
	    (t = JSCAN_GET(js, line, 0, "trace")) == -1 ||
	    js->tok[t].type != JT_OBJECT ||
	    (x = JSCAN_GET(js, line, t, "id")) == -1 ||
	    js->tok[x].type != JT_STRING)
		return NULL;
	v = jscan_text(js, line, x, &l);
	if (l == 0 || l >= len)
		return NULL;
	memcpy(buf, v, l);
	buf[l] = '\0';
	return buf;
}

/*
 * Log a warning about an agent's bad output, at most ten a second per
 * agent: a flood of bad lines must not turn into a flood of log lines.
 * Every line is still counted and recorded in the audit log.
 */
void __attribute__((format(printf, 2, 3)))
engine_warn_agent(struct agent *a, const char *fmt, ...)
{
	static ev_tstamp	 stdin_at;
	static unsigned int	 stdin_count, stdin_dropped;
	ev_tstamp		 now = ev_now(LOOP), *at;
	unsigned int		*count, *dropped;
	va_list			 ap;
	char			 buf[512], who[96];

	/* NULL: corral serve's stdin, limited the same way. */
	at = a != NULL ? &a->work.warn_at : &stdin_at;
	count = a != NULL ? &a->work.warn_count : &stdin_count;
	dropped = a != NULL ? &a->work.warn_dropped : &stdin_dropped;
	snprintf(who, sizeof who, a != NULL ? "agent %s" : "stdin",
	    a != NULL ? a->id : "");
	if (now - *at >= 1.0) {
		if (*dropped > 0)
			log_warnx("%s: %u more warnings like these were not "
			    "logged", who, *dropped);
		*at = now;
		*count = 0;
		*dropped = 0;
	}
	if (++*count > 10) {
		++*dropped;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	log_warnx("%s: %s", who, buf);
}

/*
 * An agent's stdin drained: if notices were dropped while it did not
 * read, tell it how many, once.
 */
void
engine_agent_drained(struct agent *a)
{
	engine_notices_summary(a, "while you were not reading your stdin");
}

/* Tell an agent how many notices it was not sent, once, and why. */
static void
engine_notices_summary(struct agent *a, const char *when)
{
	char		 why[200];
	unsigned int	 n = a->work.notices_dropped;

	if (n == 0 || agent_full(a))
		return;
	a->work.notices_dropped = 0;
	snprintf(why, sizeof why, "%u notices about your output were not sent "
	    "%s", n, when);
	engine_notice(a, "notices_dropped", NULL, why, NULL);
	engine_stats.rejected--;	/* the summary is not a rejected line */
}

/*
 * Count an invalid envelope from agent a (or one that answers nothing).
 * An agent that answers every notice with another such envelope would
 * loop with corral for ever: after ENGINE_ENV_STREAK in a row it is sent
 * no more notices (a flood of them gets the same), until it writes a
 * valid envelope that answers something.
 */
static void
engine_bad_envelope(struct agent *a)
{
	if (++a->work.env_streak != ENGINE_ENV_STREAK + 1)
		return;
	log_warnx("agent %s: %u invalid envelopes in a row: no more notices "
	    "until it writes a valid one (does it answer every notice?)",
	    a->id, ENGINE_ENV_STREAK);
}

/* A valid envelope from agent a ends a streak of invalid ones. */
static void
engine_good_envelope(struct agent *a)
{
	int	muted = a->work.env_streak > ENGINE_ENV_STREAK;

	a->work.env_streak = 0;
	if (muted)
		engine_notices_summary(a, "after many invalid envelopes in a "
		    "row");
}

/* Describe a scan failure for a person. */
static void
engine_scan_error(char *buf, size_t len, const struct jscan *js)
{
	snprintf(buf, len, "invalid JSON at byte %zu: %s", js->err_off,
	    js->err != NULL ? js->err : "syntax error");
}

/*
 * Handle a bad line (too long, NUL byte, not JSON) from an agent (a) or
 * serve's stdin (NULL).  Returns nonzero when the line was bad.
 */
int
engine_bad_line(struct agent *a, size_t max, struct jscan *js,
    const char *line, size_t len, enum ndjson_kind kind, size_t extra)
{
	char	why[256];

	switch (kind) {
	case NDJSON_TOOLONG:
		if (a != NULL)
			snprintf(why, sizeof why, "a line of %zu bytes exceeds "
			    "max_line (%zu bytes) and was dropped", extra, max);
		else
			snprintf(why, sizeof why, "a line of %zu bytes exceeds "
			    "the maximum (%zu bytes, the largest max_line of the "
			    "workflow's agents) and was dropped", extra, max);
		/* Not rate-limited: each costs max_line bytes to send. */
		if (a != NULL)
			log_warnx("agent %s: %s", a->id, why);
		else
			log_warnx("stdin: %s", why);
		engine_notice(a, "line_too_long", NULL, why, NULL);
		return 1;
	case NDJSON_NUL:
		snprintf(why, sizeof why, "the line holds a NUL byte at offset "
		    "%zu and was dropped", extra);
		engine_warn_agent(a, "%s", why);
		engine_notice(a, "nul_byte", NULL, why, NULL);
		return 1;
	default:
		break;
	}
	if (jscan_run(js, line, len) != 0) {
		engine_scan_error(why, sizeof why, js);
		engine_warn_agent(a, "%s", why);
		engine_notice(a, "invalid_json", NULL, why, NULL);
		return 1;
	}
	return 0;
}

/*
 * Count a line from agent a that is not JSON.  An agent that prints plain
 * text for every line it reads, notices included, would loop with corral
 * for ever; after ENGINE_BAD_STREAK such lines in a row, with nothing
 * valid between them, it is failed, with a cause that quotes the first.
 * A burst of garbage (some megabytes of it) stays below that.
 */
static void
engine_bad(struct agent *a, const char *line, size_t len)
{
	char	why[400], q[200];
	size_t	n;

	if (a->work.bad_streak++ == 0) {
		if (a->work.bad_first == NULL)
			a->work.bad_first = xmalloc(ENGINE_BAD_FIRST);
		n = util_utf8_cut(line, len, ENGINE_BAD_FIRST - 1);
		if (n > 0)
			memcpy(a->work.bad_first, line, n);
		a->work.bad_first[n] = '\0';
	}
	if (a->work.bad_streak < ENGINE_BAD_STREAK || !lifecycle_alive(a) ||
	    lifecycle_stopping(a))
		return;
	log_escape(q, sizeof q, a->work.bad_first, strlen(a->work.bad_first));
	snprintf(why, sizeof why, "it writes non-JSON to stdout (%u bad lines "
	    "in a row, the first: \"%s\"); log to stderr instead",
	    a->work.bad_streak, q);
	a->work.bad_streak = 0;
	lifecycle_fail(a, why);
}

/* A line an agent wrote on its stdout, scanned with js. */
static void
engine_agent_scanned(struct agent *a, struct jscan *js, char *line,
    size_t len, enum ndjson_kind kind, size_t extra)
{
	struct env		 env;
	struct env_error	 err;
	struct msg		*req;
	char			 id[CORRAL_ID_MAX];

	if (engine_bad_line(a, a->conf->max_line, js, line, len, kind,
	    extra)) {
		engine_bad(a, line, len);
		return;
	}
	a->work.bad_streak = 0;
	if (js->tok[0].type == JT_OBJECT &&
	    JSCAN_GET(js, line, 0, "jsonrpc") != -1) {
		a->work.bad_streak = 0;
		/* The control plane scans it again: let the tape go first. */
		jscan_trim(js);
		if (engine_hooks.control != NULL)
			engine_hooks.control(&a->peer, line, len);
		return;
	}
	if (envelope_check(js, line, len, &env, &err) != 0 ||
	    engine_check_ttls(js, line, &env, &err) != 0) {
		engine_warn_agent(a, "invalid envelope: %s", err.msg);
		engine_bad_envelope(a);
		engine_notice(a, err.code, err.path, err.msg,
		    engine_raw_trace_id(js, line, id, sizeof id));
		/*
		 * A reply whose next_actions cannot be followed (an unknown
		 * intent, a missing task) fails its request now, not at its
		 * timeout: it is the agent's answer, and it is wrong.
		 */
		if (strncmp(err.path, "outputs.next_actions", 20) == 0 &&
		    (req = engine_raw_match(a, js, line)) != NULL &&
		    req->kind != MSG_TASK) {
			engine_undispatch(req);
			req->agent = a;
			engine_fail(req, "REJECTED", err.code, "agent %s replied "
			    "with an invalid envelope: %s", a->id, err.msg);
			route_kick(a);
		}
		return;
	}
	a->proc.msgs_out++;
	req = engine_match(a, js, line, &env);
	if (req == NULL && env.parents == -1 && env.ctype != CT_ERROR) {
		/* Answering the notice with another such one would loop. */
		engine_bad_envelope(a);
		log_warnx("agent %s: an envelope with no request outstanding "
		    "was dropped", a->id);
		engine_notice(a, "unsolicited", NULL, "no request is "
		    "outstanding for this envelope; replies answer requests, "
		    "new work goes through outputs.next_actions or map/send",
		    NULL);
		return;
	}
	engine_good_envelope(a);
	if (req != NULL &&
	    (req->kind == MSG_TASK || req->kind == MSG_SEND)) {
		if (engine_task.reply != NULL)
			engine_task.reply(a, req, js, line, len, &env);
		return;
	}
	if (req == NULL) {
		/* A late reply, or a duplicate: its request is done. */
		engine_stats.late++;
		log_info("agent %s: late or duplicate reply dropped", a->id);
		auditlog_envelope("late", a->id, NULL, line, len);
		return;
	}
	engine_reply(a, req, js, line, len, &env);
}

/* A line an agent wrote on its stdout. */
void
engine_agent_line(struct agent *a, char *line, size_t len,
    enum ndjson_kind kind, size_t extra)
{
	struct jscan	*js;

	lifecycle_activity(a);
	if (a->adapter != NULL) {
		/* An adapted tool's lines belong to its adapter. */
		if (kind == NDJSON_LINE)
			(void)adapter_line(a, line, len);
		else
			log_warnx("agent %s: a bad line (%s, %zu) was dropped",
			    a->id, kind == NDJSON_NUL ? "NUL byte" : "too long",
			    extra);
		return;
	}
	js = jscan_take();
	engine_agent_scanned(a, js, line, len, kind, extra);
	jscan_give(js);
}
