/*
 * Dialects: what corral and an agent say to each other on its pipes.
 *
 * Every line an agent writes on stdout comes here first.  An adapted
 * tool's line goes to its adapter.  Any other line is read by the agent's
 * dialect (dialect-*.c, chosen by the workflow entry's protocol:, and
 * switched to map at a map/connect as participantType "agent"), which
 * makes it one of corral's frames: an envelope, for the engine; a
 * JSON-RPC frame, for the control plane; or a bad line, with what is
 * wrong in the agent's own terms.  Bad lines are counted, warned about at
 * a bounded rate and answered with notices here, and an agent that
 * writes nothing else is failed.  corral serve's stdin is read the same
 * way, as multiagent-1.0.
 *
 * Every line corral writes to an agent leaves through dialect_send (and
 * its JSON-RPC frames through rpc.c's hook), which lets the dialect write
 * it in the agent's terms.  multiagent-1.0 (below) writes the bytes as
 * they are.
 *
 * This module sits below the modules it hands frames to: they register
 * as its consumers (dialect_init), and it calls none of them by name.
 */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "dialect-int.h"

#define DIALECT_BAD_STREAK 10000 /* non-JSON lines in a row: failed */
#define DIALECT_BAD_FIRST 160	/* bytes kept of the first of them */
#define DIALECT_ENV_STREAK 10000 /* invalid envelopes in a row: no notices */

static struct dialect_consumers	dialect_use;
static struct dialect_stats	dialect_counts;

static void	dialect_agent_line(struct agent *, char *, size_t,
		    enum ndjson_kind, size_t);
static void	dialect_agent_drained(struct agent *);
static void	dialect_forget(struct agent *);
static int	dialect_rpc(struct agent *, const char *, size_t);
static void	dialect_notices_summary(struct agent *, const char *);

/*
 * What an agent that writes bad lines has: its streaks, the first bad
 * line, its warnings' rate limit.  Made at the first such line, so a
 * well-behaved agent holds one pointer for it.
 */
struct dialect_trouble {
	ev_tstamp	 warn_at;	/* rate limit of warnings */
	unsigned int	 warn_count;
	unsigned int	 warn_dropped;
	unsigned int	 notices_dropped;
	unsigned int	 bad_streak;	/* bad lines in a row */
	unsigned int	 env_streak;	/* invalid envelopes in a row */
	char		*bad_first;	/* the first of them, once any */
};

/* The agent's trouble record, made now if it had none. */
static struct dialect_trouble *
dialect_trouble(struct agent *a)
{
	if (a->dialect.trouble == NULL)
		a->dialect.trouble = xcalloc(1, sizeof *a->dialect.trouble);
	return a->dialect.trouble;
}

/* Its invalid envelopes in a row. */
static unsigned int
dialect_env_streak(const struct agent *a)
{
	return a->dialect.trouble != NULL ? a->dialect.trouble->env_streak : 0;
}

/* A line that is no garbage ends a streak of bad ones. */
static void
dialect_good_line(struct agent *a)
{
	if (a->dialect.trouble != NULL)
		a->dialect.trouble->bad_streak = 0;
}

/*
 * Set the module up with the consumers of what it reads (the supervisor
 * registers them), and hear of agents' lines, their stdin draining, their
 * end, and the JSON-RPC frames written to them.
 */
void
dialect_init(const struct dialect_consumers *use)
{
	dialect_use = *use;
	memset(&dialect_counts, 0, sizeof dialect_counts);
	agent_on_line(dialect_agent_line, dialect_agent_drained);
	agent_on_free(dialect_forget);
	rpc_on_agent(dialect_rpc);
}

/* The counts of bad lines and dropped notices (docs/reliability.md). */
const struct dialect_stats *
dialect_stats_get(void)
{
	return &dialect_counts;
}

/* Leave the dialect an agent speaks, with its state. */
static void
dialect_detach(struct agent *a)
{
	const struct dialect	*d = a->dialect.d;

	if (d != NULL && d->free != NULL && a->dialect.state != NULL)
		d->free(a->dialect.state);
	a->dialect.d = NULL;
	a->dialect.state = NULL;
}

/* Start speaking dialect d with agent a. */
static void
dialect_attach(struct agent *a, const struct dialect *d)
{
	dialect_detach(a);
	a->dialect.d = d;
	a->dialect.state = d->create != NULL ? d->create(a) : NULL;
}

/* The dialect agent a speaks: the one its entry declares, until switched. */
static const struct dialect *
dialect_get(struct agent *a)
{
	const struct dialect	*d;

	if (a->dialect.d == NULL) {
		/* The loader refuses a protocol: no dialect has. */
		if ((d = dialect_find(a->conf->protocol)) == NULL)
			fatalx("agent %s: no dialect %s", a->id,
			    a->conf->protocol);
		dialect_attach(a, d);
	}
	return a->dialect.d;
}

/* Return nonzero if agent a speaks the dialect named name now. */
int
dialect_is(struct agent *a, const char *name)
{
	return strcmp(dialect_get(a)->name, name) == 0;
}

/*
 * Speak another dialect with agent a from now on, until its process ends
 * (an SDK agent's map/connect switches it to map).  Returns 0, or -1 for
 * a name no dialect has.
 */
int
dialect_switch(struct agent *a, const char *name)
{
	const struct dialect	*d;

	if ((d = dialect_find(name)) == NULL)
		return -1;
	if (dialect_get(a) == d)
		return 0;
	log_info("agent %s: speaks %s from now on (was %s)", a->id, d->name,
	    a->dialect.d->name);
	dialect_attach(a, d);
	return 0;
}

/*
 * A new process of agent a starts afresh: the dialect its entry declares,
 * new state, and a clean slate of bad lines.
 */
void
dialect_spawned(struct agent *a)
{
	struct dialect_trouble	*t;

	dialect_detach(a);
	if ((t = a->dialect.trouble) != NULL) {
		t->bad_streak = 0;
		t->env_streak = 0;
		t->notices_dropped = 0;
	}
	a->dialect.failed_output = 0;
	/* Looked at once here, not for every line. */
	a->dialect.adapted = adapter_attached(a);
}

/*
 * The scanner's memos of the streams that sent an envelope most recently,
 * at most DIALECT_MEMOS (corral.h; 1,192 bytes each, and 976 for
 * envelope_check's findings beside it): an agent that has fallen idle
 * gives its memo up to the next stream that needs one, so a thousand
 * agents that once worked do not keep a thousand.  A memo holds nothing
 * of its stream that another's lines could misread: a line resumes from
 * it only where its bytes are the memo's, and the findings kept are
 * those of the line the scanner's memo keeps.
 */
struct dialect_memo {
	struct jscan_memo		*jm;
	struct env_memo			*em;		/* envelope_check's, beside */
	struct dialect_memo		**owner;	/* whose pointer to it */
	TAILQ_ENTRY(dialect_memo)	 lru;		/* the most recent first */
};
static TAILQ_HEAD(dialect_memos_head, dialect_memo) dialect_memos =
    TAILQ_HEAD_INITIALIZER(dialect_memos);
static size_t			  dialect_nmemos;

/* Give *mp a memo: a new one, or the one least recently used. */
static void
dialect_memo_take(struct dialect_memo **mp)
{
	struct dialect_memo	*dm;

	if (dialect_nmemos < DIALECT_MEMOS) {
		dm = xmalloc(sizeof *dm);
		dm->jm = jscan_memo_create();
		dm->em = envelope_memo_create();
		dialect_nmemos++;
	} else {
		dm = TAILQ_LAST(&dialect_memos, dialect_memos_head);
		TAILQ_REMOVE(&dialect_memos, dm, lru);
		*dm->owner = NULL;
	}
	dm->owner = mp;
	TAILQ_INSERT_HEAD(&dialect_memos, dm, lru);
	*mp = dm;
}

/* Free agent a's memo, if it has one (it is being freed). */
void
dialect_memo_free(struct agent *a)
{
	struct dialect_memo	*dm = a->dialect.memo;

	if (dm == NULL)
		return;
	TAILQ_REMOVE(&dialect_memos, dm, lru);
	dialect_nmemos--;
	jscan_memo_free(dm->jm);
	envelope_memo_free(dm->em);
	free(dm);
	a->dialect.memo = NULL;
}

/* An agent is about to be freed: its state and bad line go with it. */
static void
dialect_forget(struct agent *a)
{
	dialect_detach(a);
	dialect_memo_free(a);
	if (a->dialect.trouble != NULL) {
		free(a->dialect.trouble->bad_first);
		free(a->dialect.trouble);
		a->dialect.trouble = NULL;
	}
}

/* Write a line to agent a through its dialect's encoder, if it has one. */
static void __attribute__((noinline))
dialect_encode(struct agent *a, const char *line, size_t len,
    enum dialect_kind kind)
{
	const struct dialect	*d = dialect_get(a);

	if (d->encode == NULL || !d->encode(a, a->dialect.state, line, len,
	    kind))
		agent_send(a, line, len);
}

/*
 * Write a line to agent a in its dialect: an envelope whose corral member
 * says it is of kind (a request has none), or a JSON-RPC frame.
 */
void
dialect_send(struct agent *a, const char *line, size_t len,
    enum dialect_kind kind)
{
	const struct dialect	*d = a->dialect.d;

	/* A dialect without an encoder in few instructions: the hot path. */
	if (d != NULL && d->encode == NULL)
		agent_send(a, line, len);
	else
		dialect_encode(a, line, len, kind);
}

/*
 * A JSON-RPC frame for agent a (rpc.c's hook): its dialect writes it its
 * own way, or it goes as it is; counted either way.
 */
static int
dialect_rpc(struct agent *a, const char *line, size_t len)
{
	const struct dialect	*d = dialect_get(a);

	if (d->encode == NULL || !d->encode(a, a->dialect.state, line, len,
	    DK_RPC))
		agent_send(a, line, len);
	return 1;
}

/* Send an agent (NULL: serve's stdin) an error notice about its output. */
void
dialect_notice(struct agent *a, const char *code, const char *path,
    const char *message, const char *parent)
{
	char	*e;
	size_t	 len;

	dialect_counts.rejected++;
	auditlog_event("rejected", a != NULL ? a->id : "stdin", parent, "code",
	    code, "path", path != NULL ? path : "", "reason", message, NULL);
	if (a == NULL) {
		/* corral serve: the error is that input's one result. */
		e = envelope_error(code, "REJECTED", path, message, parent,
		    NULL, &len);
		if (dialect_use.out != NULL)
			dialect_use.out(e, len);
		free(e);
		return;
	}
	if (agent_full(a) || dialect_env_streak(a) > DIALECT_ENV_STREAK) {
		/*
		 * It does not read what we send, or it answers every notice
		 * with another bad envelope: more notices would only grow
		 * our memory, or loop with it for ever.  The line is still
		 * counted and audited, and one summary follows once it
		 * reads again or sends a valid envelope.
		 */
		dialect_counts.notices_dropped++;
		dialect_trouble(a)->notices_dropped++;
		return;
	}
	e = envelope_error(code, "REJECTED", path, message, parent,
	    CORRAL_KIND_NOTICE, &len);
	dialect_send(a, e, len, DK_NOTICE);
	free(e);
}

/*
 * Log a warning about an agent's bad output, at most ten a second per
 * agent: a flood of bad lines must not turn into a flood of log lines.
 * Every line is still counted and recorded in the audit log.
 */
void
dialect_warn(struct agent *a, const char *fmt, ...)
{
	static ev_tstamp	 stdin_at;
	static unsigned int	 stdin_count, stdin_dropped;
	ev_tstamp		 now = ev_now(LOOP), *at;
	unsigned int		*count, *dropped;
	va_list			 ap;
	char			 buf[512], who[96];

	/* NULL: corral serve's stdin, limited the same way. */
	at = a != NULL ? &dialect_trouble(a)->warn_at : &stdin_at;
	count = a != NULL ? &a->dialect.trouble->warn_count : &stdin_count;
	dropped = a != NULL ? &a->dialect.trouble->warn_dropped :
	    &stdin_dropped;
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
static void
dialect_agent_drained(struct agent *a)
{
	dialect_notices_summary(a, "while you were not reading your stdin");
}

/* Tell an agent how many notices it was not sent, once, and why. */
static void
dialect_notices_summary(struct agent *a, const char *when)
{
	char		 why[200];
	unsigned int	 n;

	if (a->dialect.trouble == NULL ||
	    (n = a->dialect.trouble->notices_dropped) == 0 || agent_full(a))
		return;
	a->dialect.trouble->notices_dropped = 0;
	snprintf(why, sizeof why, "%u notices about your output were not sent "
	    "%s", n, when);
	dialect_notice(a, "notices_dropped", NULL, why, NULL);
	dialect_counts.rejected--;	/* the summary is not a rejected line */
}

/*
 * Count an invalid envelope from agent a (or one that answers nothing).
 * An agent that answers every notice with another such envelope would
 * loop with corral for ever: after DIALECT_ENV_STREAK in a row it is sent
 * no more notices (a flood of them gets the same), until it writes a
 * valid envelope that answers something.
 */
void
dialect_bad_message(struct agent *a)
{
	if (++dialect_trouble(a)->env_streak != DIALECT_ENV_STREAK + 1)
		return;
	log_warnx("agent %s: %u invalid envelopes in a row: no more notices "
	    "until it writes a valid one (does it answer every notice?)",
	    a->id, DIALECT_ENV_STREAK);
}

/* A valid envelope from agent a ends a streak of invalid ones. */
void
dialect_good_message(struct agent *a)
{
	int	muted = dialect_env_streak(a) > DIALECT_ENV_STREAK;

	if (a->dialect.trouble != NULL)
		a->dialect.trouble->env_streak = 0;
	if (muted)
		dialect_notices_summary(a, "after many invalid envelopes in a "
		    "row");
}

/* Agent a answered a request: it is an agent, not a program to adapt. */
void
dialect_answered(struct agent *a)
{
	a->dialect.answered = 1;
}

/* Has agent a ever answered a request or spoken JSON-RPC? */
int
dialect_has_answered(const struct agent *a)
{
	return a->dialect.answered;
}

/* Was agent a failed for writing what is not its dialect? */
int
dialect_failed_output(const struct agent *a)
{
	return a->dialect.failed_output;
}

/*
 * A line the framing refused, from an agent (a) or serve's stdin (NULL):
 * too long, or with a NUL byte.  Returns nonzero when the line was bad.
 */
static int
dialect_framing(struct agent *a, size_t max, enum ndjson_kind kind,
    size_t extra)
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
		dialect_notice(a, "line_too_long", NULL, why, NULL);
		return 1;
	case NDJSON_NUL:
		snprintf(why, sizeof why, "the line holds a NUL byte at offset "
		    "%zu and was dropped", extra);
		dialect_warn(a, "%s", why);
		dialect_notice(a, "nul_byte", NULL, why, NULL);
		return 1;
	default:
		return 0;
	}
}

/*
 * Count a line from agent a that is not JSON.  An agent that prints plain
 * text for every line it reads, notices included, would loop with corral
 * for ever; after DIALECT_BAD_STREAK such lines in a row, with nothing
 * valid between them, it is failed, with a cause that quotes the first.
 * A burst of garbage (some megabytes of it) stays below that.
 */
static void
dialect_garbage(struct agent *a, const char *line, size_t len)
{
	struct dialect_trouble	*t = dialect_trouble(a);
	char			 why[400], q[200];
	size_t			 n;

	if (t->bad_streak++ == 0) {
		if (t->bad_first == NULL)
			t->bad_first = xmalloc(DIALECT_BAD_FIRST);
		n = util_utf8_cut(line, len, DIALECT_BAD_FIRST - 1);
		if (n > 0)
			memcpy(t->bad_first, line, n);
		t->bad_first[n] = '\0';
	}
	if (t->bad_streak < DIALECT_BAD_STREAK)
		return;
	log_escape(q, sizeof q, t->bad_first, strlen(t->bad_first));
	snprintf(why, sizeof why, "it writes non-JSON to stdout (%u bad lines "
	    "in a row, the first: \"%s\"); log to stderr instead",
	    t->bad_streak, q);
	/* Set first: the failure reaches the engine while fail() runs. */
	a->dialect.failed_output = 1;
	if (dialect_use.fail != NULL && dialect_use.fail(a, why))
		t->bad_streak = 0;
	else
		a->dialect.failed_output = 0;
}

/*
 * Whether a line that is not JSON was meant as a batch of JSON-RPC
 * frames: it begins with '['.  An envelope is an object, so an array is
 * never one.
 */
static int
dialect_is_batch(const char *line, size_t len)
{
	size_t	i = 0;

	while (i < len && (line[i] == ' ' || line[i] == '\t' ||
	    line[i] == '\r'))
		i++;
	return i < len && line[i] == '[';
}

/*
 * multiagent-1.0, corral's own dialect and the default: a line is an
 * envelope (docs/protocol.md), or a JSON-RPC frame when it has a
 * top-level "jsonrpc" member or is an array (a batch; also when it is
 * not JSON: it begins with '['); what corral writes goes as it is.  It is
 * kept here rather than in a file of its own because it is the
 * per-message path: its decoder is inlined into the readers below, and
 * the line's tape travels with the frame to the engine.
 */
const struct dialect dialect_multiagent = {
	.name = CORRAL_ENVELOPE_PROTOCOL,
	.noun = "envelope",
	.decode = dialect_multiagent_decode,
};

/*
 * Read one line as multiagent-1.0, from agent a (NULL: corral serve's
 * stdin, whose envelopes are requests: their next_actions are never
 * followed, so their ttl_ms are not checked).
 */
void
dialect_multiagent_decode(struct agent *a, void *state,
    struct dialect_frame *f, const char *line, size_t len)
{
	static struct dialect_memo	*stdin_memo;
	struct dialect_memo		**mp;
	struct jscan			*js = f->js;
	int				 rc;

	f->line = line;
	f->len = len;
	/*
	 * Each agent's envelopes, and the input's, begin alike: a memo each,
	 * made at the first envelope, so that an agent that only shakes
	 * hands or answers pings (an idle one) holds none.
	 */
	mp = a != NULL ? &a->dialect.memo : &stdin_memo;
	if (*mp != NULL && *mp != TAILQ_FIRST(&dialect_memos)) {
		TAILQ_REMOVE(&dialect_memos, *mp, lru);
		TAILQ_INSERT_HEAD(&dialect_memos, *mp, lru);
	}
	if ((*mp != NULL ? jscan_run_memo(js, line, len, (*mp)->jm) :
	    jscan_run(js, line, len)) != 0) {
		/* A batch for the control plane, which answers -32700. */
		f->type = dialect_is_batch(line, len) ? DF_BADRPC : DF_GARBAGE;
		f->err.code = "invalid_json";
		f->err.path[0] = '\0';
		snprintf(f->err.msg, sizeof f->err.msg, "invalid JSON at byte "
		    "%zu: %s", js->err_off, js->err != NULL ? js->err :
		    "syntax error");
		return;
	}
	if (js->tok[0].type == JT_ARRAY) {
		f->type = DF_CONTROL;
		return;
	}
	/*
	 * An object with a jsonrpc member is the control plane's, envelope
	 * or not: envelope_check notes the member on its one pass over the
	 * keys, and only a line it refuses is searched for it here.
	 */
	rc = *mp != NULL ? envelope_check_memo(js, line, len, &f->env,
	    &f->err, (*mp)->em, (*mp)->jm) : envelope_check(js, line, len,
	    &f->env, &f->err);
	if (rc == 0 ? f->env.jsonrpc :
	    JSCAN_GET(js, line, 0, "jsonrpc") != -1) {
		f->type = DF_CONTROL;
		return;
	}
	if (rc != 0 || (a != NULL && f->env.next_actions != -1 &&
	    envelope_check_ttls(js, line, &f->env, &f->err) != 0)) {
		f->type = DF_INVALID;
		f->id = envelope_raw_id(js, line, f->idbuf, sizeof f->idbuf);
		return;
	}
	f->type = DF_ENVELOPE;
	if (*mp == NULL)
		dialect_memo_take(mp);
}

/*
 * Describe a line that is not the dialect for a person: what the decoder
 * found, the start of the line (escaped), and, for an agent (a), what to
 * do: a stray print() is the usual cause, a program that is no agent the
 * other, until the agent has answered something.
 */
static void
dialect_garbage_why(char *buf, size_t len, struct agent *a,
    const struct dialect_frame *f)
{
	char	q[200];
	size_t	n;

	n = util_utf8_cut(f->line, f->len, 40);
	log_escape(q, sizeof q, f->line, n);
	snprintf(buf, len, "%s, in \"%s%s\"%s%s%s%s", f->err.msg, q,
	    n < f->len ? "..." : "", a != NULL ? "; stdout is for " : "",
	    a != NULL ? a->dialect.d->noun : "", a != NULL ? "s: log to "
	    "stderr" : "", a != NULL && !a->dialect.answered ? ", or give a "
	    "program that is not an agent adapter: exec" : "");
}

/* Hand a frame read from agent a to its consumer. */
static void
dialect_deliver(struct agent *a, struct dialect_frame *f)
{
	char	why[512];

	switch (f->type) {
	case DF_GARBAGE:
		dialect_garbage_why(why, sizeof why, a, f);
		dialect_warn(a, "%s", why);
		dialect_notice(a, f->err.code, NULL, why, NULL);
		dialect_garbage(a, f->line, f->len);
		return;
	case DF_BADRPC:
		/* A bad line all the same; the control plane answers it. */
		dialect_warn(a, "a batch that is not JSON: %s", f->err.msg);
		dialect_garbage(a, f->line, f->len);
		if (dialect_use.control != NULL)
			dialect_use.control(agent_peer(a), f->line, f->len);
		return;
	case DF_CONTROL:
		dialect_good_line(a);
		a->dialect.answered = 1;
		/* The control plane scans it again: let the tape go first. */
		jscan_trim(f->js);
		if (dialect_use.control != NULL)
			dialect_use.control(agent_peer(a), f->line, f->len);
		return;
	case DF_REDELIVERY:
		/*
		 * At least once, as its sender means it: the message had its
		 * effect the first time.  Audited, counted, not answered (a
		 * notice would look like the answer to a request).
		 */
		dialect_good_line(a);
		dialect_counts.redeliveries++;
		log_debug("agent %s: %s", a->id, f->err.msg);
		auditlog_event("redelivery", a->id, f->id, "path", f->err.path,
		    "reason", f->err.msg, NULL);
		return;
	case DF_INVALID:
		dialect_good_line(a);
		dialect_warn(a, "invalid %s: %s", a->dialect.d->noun,
		    f->err.msg);
		dialect_bad_message(a);
		dialect_notice(a, f->err.code, f->err.path, f->err.msg, f->id);
		if (dialect_use.invalid != NULL)
			dialect_use.invalid(a, f);
		return;
	default:
		dialect_good_line(a);
		if (dialect_use.envelope != NULL)
			dialect_use.envelope(a, f);
		return;
	}
}

/* A line an agent wrote on its stdout. */
static void
dialect_agent_line(struct agent *a, char *line, size_t len,
    enum ndjson_kind kind, size_t extra)
{
	const struct dialect	*d;
	struct dialect_frame	 f;

	if (dialect_use.activity != NULL)
		dialect_use.activity(a);
	if (a->dialect.adapted) {
		/* An adapted tool's lines belong to its adapter. */
		if (kind == NDJSON_LINE && dialect_use.tool != NULL)
			(void)dialect_use.tool(a, line, len);
		else if (kind != NDJSON_LINE)
			log_warnx("agent %s: a bad line (%s, %zu) was dropped",
			    a->id, kind == NDJSON_NUL ? "NUL byte" : "too long",
			    extra);
		return;
	}
	if (kind != NDJSON_LINE && dialect_framing(a, a->conf->max_line, kind,
	    extra)) {
		dialect_garbage(a, line, len);
		return;
	}
	d = dialect_get(a);
	f.js = jscan_take();
	f.made = NULL;
	/* The default's decoder is called directly: it is inlined. */
	if (d->decode == dialect_multiagent_decode)
		dialect_multiagent_decode(a, NULL, &f, line, len);
	else
		d->decode(a, a->dialect.state, &f, line, len);
	dialect_deliver(a, &f);
	if (f.made != NULL)
		free(f.made);
	jscan_give(f.js);
}

/*
 * A line on corral serve's stdin, from peer: an envelope for a new job, or
 * a control frame.  Whatever is wrong with it, it gets exactly one line
 * back.
 */
void
dialect_input(struct peer *from, char *line, size_t len,
    enum ndjson_kind kind, size_t extra)
{
	struct dialect_frame	 f;
	char			 why[512];

	if (kind != NDJSON_LINE && dialect_framing(NULL, from->chan != NULL ?
	    from->chan->max : 0, kind, extra))
		return;
	f.js = jscan_take();
	f.made = NULL;
	dialect_multiagent_decode(NULL, NULL, &f, line, len);
	switch (f.type) {
	case DF_GARBAGE:
		dialect_garbage_why(why, sizeof why, NULL, &f);
		dialect_warn(NULL, "%s", why);
		dialect_notice(NULL, f.err.code, NULL, why, NULL);
		break;
	case DF_BADRPC:
		dialect_warn(NULL, "a batch that is not JSON: %s", f.err.msg);
		/* FALLTHROUGH */
	case DF_CONTROL:
		jscan_trim(f.js);
		if (dialect_use.control != NULL)
			dialect_use.control(from, f.line, f.len);
		break;
	case DF_INVALID:
		dialect_warn(NULL, "invalid envelope: %s", f.err.msg);
		dialect_notice(NULL, f.err.code, f.err.path, f.err.msg, f.id);
		break;
	default:
		if (dialect_use.input != NULL)
			dialect_use.input(from, &f);
		break;
	}
	if (f.made != NULL)
		free(f.made);
	jscan_give(f.js);
}
