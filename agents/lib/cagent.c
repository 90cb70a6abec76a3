/*
 * The agent library (include/corral/agent.h): read corral's lines, answer
 * its pings, sort envelopes by kind, build and write replies, and make
 * the few control calls an agent needs.
 *
 * It is deliberately blocking and single-threaded: an agent is a loop
 * around cagent_next.  Control calls (the handshake, spawning a child,
 * map/send) wait for their response; whatever envelopes arrive meanwhile
 * are queued in arrival order, so nothing corral sends is lost or
 * reordered.  stdin is read with read(2) into our own buffer rather than
 * through stdio, so poll(2) can bound those waits.
 */

#include <sys/queue.h>

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "corral/agent.h"

#define CAGENT_JSON_DUMP	(JSON_COMPACT | JSON_REAL_PRECISION(15))
#define CAGENT_READ_CHUNK	65536

/* An envelope that arrived while the agent was busy waiting. */
struct cagent_pending {
	json_t				*env;
	enum cagent_kind		 kind;
	TAILQ_ENTRY(cagent_pending)	 entry;
};
TAILQ_HEAD(cagent_queue, cagent_pending);

/* A child this agent spawned. */
struct cagent_child {
	char	*id;
	char	*task;
};

struct cagent {
	char			*name;		/* agent.name of replies */
	char			*id;		/* CORRAL_AGENT_ID */
	char			*run_id;
	char			*workspace;
	unsigned long long	 seq;		/* trace ids */
	json_int_t		 rpc_seq;	/* control request ids */
	char			 err[512];
	int			 err_code;	/* JSON-RPC error code */

	char			*buf;		/* stdin bytes not yet used */
	size_t			 start;
	size_t			 end;
	size_t			 cap;
	size_t			 scanned;	/* no newline before here */
	size_t			 discarded;	/* bytes of an overlong line */
	int			 discarding;
	int			 eof;

	struct cagent_queue	 queue;
	struct cagent_child	*children;
	size_t			 nchildren;
};

static json_t	*cagent_empty_object;
static json_t	*cagent_empty_array;

/* Copy a string, or exit: an agent that cannot allocate cannot answer. */
static char *
cagent_strdup(const char *s)
{
	char	*p;

	if ((p = strdup(s)) == NULL) {
		fprintf(stderr, "cagent: out of memory\n");
		exit(1);
	}
	return p;
}

/* Return the monotonic clock in seconds. */
static double
cagent_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Record the last error for cagent_error. */
static void __attribute__((format(printf, 2, 3)))
cagent_set_error(struct cagent *ca, const char *fmt, ...)
{
	va_list	ap;

	ca->err_code = 0;
	va_start(ap, fmt);
	vsnprintf(ca->err, sizeof ca->err, fmt, ap);
	va_end(ap);
}

/* Create an agent handle; name is the agent.name its replies carry. */
struct cagent *
cagent_open(const char *name)
{
	struct cagent	*ca;
	const char	*s;

	if ((ca = calloc(1, sizeof *ca)) == NULL)
		return NULL;
	ca->name = cagent_strdup(name);
	s = getenv("CORRAL_AGENT_ID");
	ca->id = cagent_strdup(s != NULL && *s != '\0' ? s : name);
	s = getenv("CORRAL_RUN_ID");
	ca->run_id = cagent_strdup(s != NULL ? s : "");
	s = getenv("CORRAL_WORKSPACE");
	ca->workspace = s != NULL && *s != '\0' ? cagent_strdup(s) : NULL;
	TAILQ_INIT(&ca->queue);
	if (cagent_empty_object == NULL) {
		cagent_empty_object = json_object();
		cagent_empty_array = json_array();
	}
	return ca;
}

/* Free an agent handle and whatever it still holds. */
void
cagent_close(struct cagent *ca)
{
	struct cagent_pending	*p;
	size_t			 i;

	if (ca == NULL)
		return;
	while ((p = TAILQ_FIRST(&ca->queue)) != NULL) {
		TAILQ_REMOVE(&ca->queue, p, entry);
		json_decref(p->env);
		free(p);
	}
	for (i = 0; i < ca->nchildren; i++) {
		free(ca->children[i].id);
		free(ca->children[i].task);
	}
	free(ca->children);
	free(ca->buf);
	free(ca->name);
	free(ca->id);
	free(ca->run_id);
	free(ca->workspace);
	free(ca);
}

/* The agent's id in the run (CORRAL_AGENT_ID, else its name). */
const char *
cagent_id(const struct cagent *ca)
{
	return ca->id;
}

/* The run's id, "" outside corral. */
const char *
cagent_run_id(const struct cagent *ca)
{
	return ca->run_id;
}

/* The workflow's workspace directory, or NULL when it has none. */
const char *
cagent_workspace(const struct cagent *ca)
{
	return ca->workspace;
}

/* Describe the last failure of a control call or a wait. */
const char *
cagent_error(const struct cagent *ca)
{
	return ca->err;
}

/*
 * The JSON-RPC error code of the last failed control call (such as
 * CORRAL_E_EXHAUSTED when a spawn hit the fan-out limit), or 0 for other
 * failures.
 */
int
cagent_error_code(const struct cagent *ca)
{
	return ca->err_code;
}

/* Log a line on stderr, which corral relays with the agent's id. */
void
cagent_log(const struct cagent *ca, const char *fmt, ...)
{
	va_list	ap;

	if (getenv("CORRAL_AGENT_ID") == NULL)
		fprintf(stderr, "%s: ", ca->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Write one compact JSON line to stdout and flush it. */
static int
cagent_write_json(struct cagent *ca, json_t *j)
{
	char	*s;
	size_t	 len;
	int	 rc = 0;

	if ((s = json_dumps(j, CAGENT_JSON_DUMP)) == NULL) {
		cagent_set_error(ca, "the JSON could not be serialized");
		return -1;
	}
	len = strlen(s);
	if (fwrite(s, 1, len, stdout) != len || putchar('\n') == EOF ||
	    fflush(stdout) == EOF) {
		cagent_set_error(ca, "stdout: %s", strerror(errno));
		rc = -1;
	}
	free(s);
	return rc;
}

/*
 * Take the next complete line from the buffer, or return NULL.  A line
 * longer than CAGENT_MAX_LINE is dropped whole: the buffer is emptied and
 * everything up to the next newline is skipped.
 */
static char *
cagent_take_line(struct cagent *ca, size_t *lenp)
{
	char	*nl, *line;
	size_t	 len;

	if (ca->buf == NULL)
		return NULL;	/* nothing read yet */
	for (;;) {
		nl = memchr(ca->buf + ca->start + ca->scanned, '\n',
		    ca->end - ca->start - ca->scanned);
		if (nl == NULL) {
			ca->scanned = ca->end - ca->start;
			if (ca->scanned > CAGENT_MAX_LINE) {
				ca->discarded += ca->scanned;
				ca->discarding = 1;
				ca->start = ca->end = ca->scanned = 0;
			}
			if (ca->eof && ca->end > ca->start && !ca->discarding) {
				/* The last line may lack its newline. */
				line = ca->buf + ca->start;
				*lenp = ca->end - ca->start;
				line[*lenp] = '\0';
				ca->start = ca->end = ca->scanned = 0;
				return line;
			}
			return NULL;
		}
		line = ca->buf + ca->start;
		len = (size_t)(nl - line);
		ca->start += len + 1;
		ca->scanned = 0;
		if (ca->discarding) {
			cagent_log(ca, "a line of %zu bytes exceeds %lu bytes "
			    "and was skipped", ca->discarded + len,
			    (unsigned long)CAGENT_MAX_LINE);
			ca->discarding = 0;
			ca->discarded = 0;
			continue;
		}
		if (len > 0 && line[len - 1] == '\r')
			len--;
		line[len] = '\0';
		*lenp = len;
		return line;
	}
}

/*
 * Read more of stdin, waiting at most until deadline (a cagent_now time;
 * negative: forever).  Returns 1 when bytes arrived, 0 at EOF, -2 when the
 * deadline passed.
 */
static int
cagent_fill(struct cagent *ca, double deadline)
{
	struct pollfd	 pfd;
	ssize_t		 n;
	double		 left;
	size_t		 want;
	char		*nb;
	int		 ms, r;

	if (ca->eof)
		return 0;
	if (ca->start > 0) {
		memmove(ca->buf, ca->buf + ca->start, ca->end - ca->start);
		ca->end -= ca->start;
		ca->start = 0;
	}
	want = ca->end + CAGENT_READ_CHUNK + 1;
	if (want > ca->cap) {
		while (ca->cap < want)
			ca->cap = ca->cap ? ca->cap * 2 : 2 * CAGENT_READ_CHUNK;
		if ((nb = realloc(ca->buf, ca->cap)) == NULL) {
			fprintf(stderr, "cagent: out of memory\n");
			exit(1);
		}
		ca->buf = nb;
	}
	for (;;) {
		if (deadline >= 0) {
			left = deadline - cagent_now();
			if (left <= 0)
				return -2;
			ms = (int)(left * 1000) + 1;
			pfd.fd = STDIN_FILENO;
			pfd.events = POLLIN;
			r = poll(&pfd, 1, ms);
			if (r == -1 && errno == EINTR)
				continue;
			if (r == 0)
				return -2;
		}
		n = read(STDIN_FILENO, ca->buf + ca->end, ca->cap - ca->end - 1);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == -1)
				cagent_log(ca, "stdin: %s", strerror(errno));
			ca->eof = 1;
			return 0;
		}
		ca->end += (size_t)n;
		return 1;
	}
}

/* Return the string member key of obj, or "" when it is missing. */
static const char *
cagent_str(json_t *obj, const char *key)
{
	const char	*s = json_string_value(json_object_get(obj, key));

	return s != NULL ? s : "";
}

/* Answer a JSON-RPC request from corral: ping, or "method not found". */
static void
cagent_control_request(struct cagent *ca, json_t *frame)
{
	json_t		*id = json_object_get(frame, "id"), *out;
	const char	*method = cagent_str(frame, "method");

	if (id == NULL)
		return;		/* a notification: nothing to answer */
	if (strcmp(method, CORRAL_M_PING) == 0)
		out = json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id", id,
		    "result");
	else
		out = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0",
		    "id", id, "error", "code", CORRAL_E_NOMETHOD, "message",
		    "method not found");
	if (out != NULL) {
		(void)cagent_write_json(ca, out);
		json_decref(out);
	}
}

/* Sort an envelope by its "corral" member (docs/protocol.md). */
static enum cagent_kind
cagent_classify(json_t *env)
{
	const char	*kind;

	kind = cagent_str(json_object_get(env, "corral"), "kind");
	if (strcmp(kind, "task") == 0)
		return CAGENT_TASK;
	if (strcmp(kind, CORRAL_KIND_NOTICE) == 0)
		return CAGENT_NOTICE;
	if (strcmp(kind, CORRAL_KIND_CHILD_RESULT) == 0)
		return CAGENT_CHILD_RESULT;
	if (strcmp(kind, CORRAL_KIND_MESSAGE) == 0)
		return CAGENT_MESSAGE;
	if (strcmp(kind, CORRAL_KIND_CANCEL) == 0)
		return CAGENT_CANCEL;
	if (strcmp(kind, CORRAL_KIND_PROGRESS) == 0)
		return CAGENT_PROGRESS;
	return CAGENT_REQUEST;
}

/*
 * Read and handle one line: queue an envelope, answer a ping, or hand a
 * response whose id is want to the caller through resp.  Returns 1 when a
 * line was handled, 0 at EOF, -2 when the deadline passed.
 */
static int
cagent_pump(struct cagent *ca, double deadline, json_int_t want,
    json_t **resp)
{
	struct cagent_pending	*p;
	json_error_t		 e;
	json_t			*j, *id;
	char			*line;
	size_t			 len;
	int			 r;

	while ((line = cagent_take_line(ca, &len)) == NULL) {
		if ((r = cagent_fill(ca, deadline)) != 1) {
			if (r == 0 && (line = cagent_take_line(ca, &len)) != NULL)
				break;
			return r;
		}
	}
	if (len == 0)
		return 1;
	if ((j = json_loadb(line, len, JSON_REJECT_DUPLICATES, &e)) == NULL) {
		cagent_log(ca, "skipped an invalid line (%s at byte %d)",
		    e.text, e.position);
		return 1;
	}
	if (!json_is_object(j)) {
		cagent_log(ca, "skipped a line that is not a JSON object");
		json_decref(j);
		return 1;
	}
	if (json_object_get(j, "jsonrpc") != NULL) {
		if (json_object_get(j, "method") != NULL) {
			cagent_control_request(ca, j);
			json_decref(j);
			return 1;
		}
		id = json_object_get(j, "id");
		if (resp != NULL && json_is_integer(id) &&
		    json_integer_value(id) == want) {
			*resp = j;
			return 1;
		}
		cagent_log(ca, "dropped a response nobody waits for");
		json_decref(j);
		return 1;
	}
	if ((p = calloc(1, sizeof *p)) == NULL) {
		fprintf(stderr, "cagent: out of memory\n");
		exit(1);
	}
	p->env = j;
	p->kind = cagent_classify(j);
	TAILQ_INSERT_TAIL(&ca->queue, p, entry);
	return 1;
}

/* Release what a message holds. */
void
cagent_msg_free(struct cagent_msg *m)
{
	if (m->env != NULL)
		json_decref(m->env);
	memset(m, 0, sizeof *m);
}

/* Fill a message from an envelope (the reference is taken over). */
static void
cagent_msg_fill(struct cagent_msg *m, json_t *env, enum cagent_kind kind)
{
	json_t	*inputs, *content, *outputs, *conf, *mark, *v;

	cagent_msg_free(m);
	m->kind = kind;
	m->env = env;
	inputs = json_object_get(env, "inputs");
	content = json_object_get(env, "content");
	outputs = json_object_get(env, "outputs");
	conf = json_object_get(env, "confidence");
	mark = json_object_get(env, "corral");
	m->id = cagent_str(json_object_get(env, "trace"), "id");
	m->intent = cagent_str(env, "intent");
	m->task = cagent_str(env, "task");
	m->text = cagent_str(content, "text");
	m->context = cagent_str(inputs, "context");
	v = json_object_get(inputs, "parameters");
	m->params = json_is_object(v) ? v : cagent_empty_object;
	v = json_object_get(content, "data");
	m->data = v != NULL ? v : json_null();
	v = json_object_get(outputs, "next_actions");
	m->actions = json_is_array(v) ? v : cagent_empty_array;
	v = json_object_get(conf, "score");
	m->score = json_is_number(v) ? json_number_value(v) : -1;
	m->is_error = strcmp(cagent_str(content, "type"), "error") == 0;
	m->from = cagent_str(mark, "from");
	m->child = cagent_str(mark, "child");
	m->spawn = cagent_str(mark, "spawn");
	m->ok = json_is_true(json_object_get(mark, "ok"));
}

/*
 * Wait for the next envelope for the agent.  Returns 1 with m filled, 0
 * at end of input.
 */
int
cagent_next(struct cagent *ca, struct cagent_msg *m)
{
	struct cagent_pending	*p;

	while ((p = TAILQ_FIRST(&ca->queue)) == NULL) {
		if (cagent_pump(ca, -1, 0, NULL) == 0) {
			cagent_msg_free(m);
			return 0;
		}
	}
	TAILQ_REMOVE(&ca->queue, p, entry);
	cagent_msg_fill(m, p->env, p->kind);
	free(p);
	return 1;
}

/*
 * The whole main loop of a simple agent: answer every request and task
 * with what the handler returns; log notices, messages, cancellations and
 * stray child results, which are never answered; ignore children's
 * progress.  Returns 0 at end of input, -1 when
 * stdout failed.
 */
int
cagent_run(struct cagent *ca, cagent_handler fn, void *arg)
{
	struct cagent_msg	 m;
	json_t			*reply;

	memset(&m, 0, sizeof m);
	while (cagent_next(ca, &m)) {
		switch (m.kind) {
		case CAGENT_REQUEST:
		case CAGENT_TASK:
			if ((reply = fn(ca, &m, arg)) == NULL)
				reply = cagent_reply_error(ca, &m, "%s could "
				    "not handle this %s request", ca->id,
				    m.intent);
			if (cagent_send(ca, reply) != 0) {
				cagent_msg_free(&m);
				return -1;
			}
			break;
		case CAGENT_NOTICE:
			cagent_log(ca, "corral reports a problem with our "
			    "output: %s", m.text);
			break;
		case CAGENT_MESSAGE:
			cagent_log(ca, "message from %s ignored: %s", m.from,
			    m.task);
			break;
		case CAGENT_CHILD_RESULT:
			cagent_log(ca, "result of child %s ignored", m.child);
			break;
		case CAGENT_CANCEL:
			/* Handlers run to the end; the reply is dropped. */
			cagent_log(ca, "cancelled: %s", m.text);
			break;
		case CAGENT_PROGRESS:
			break;
		}
	}
	cagent_msg_free(&m);
	return 0;
}

/* Format the current time as RFC 3339 in UTC. */
static void
cagent_timestamp(char *buf, size_t len)
{
	struct timespec	ts;
	struct tm	tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Make a trace id unique in the run: agent id, process id, a counter. */
static void
cagent_new_id(struct cagent *ca, char *buf, size_t len)
{
	snprintf(buf, len, "%.32s-%ld-%llu", ca->id, (long)getpid(),
	    ++ca->seq);
}

/*
 * Build a fresh envelope from this agent, with no lineage: for map/send,
 * for a child's task, or as the base of a reply.
 */
json_t *
cagent_envelope(struct cagent *ca, const char *intent, const char *task,
    const char *text)
{
	char	ts[40], id[64];

	cagent_timestamp(ts, sizeof ts);
	cagent_new_id(ca, id, sizeof id);
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:s, s:s, s:s, "
	    "s:{s:s, s:s}, s:{s:s}}",
	    "protocol", CORRAL_ENVELOPE_PROTOCOL,
	    "role", "agent",
	    "agent", "id", ca->id, "name", ca->name, "model", CAGENT_MODEL,
	    "version", CAGENT_VERSION,
	    "timestamp", ts,
	    "intent", intent,
	    "task", task != NULL ? task : "",
	    "content", "type", "text", "text", text != NULL ? text : "",
	    "trace", "id", id);
}

/*
 * Start the reply to req.  A NULL intent picks the natural one: finalize
 * for a task, the request's own intent otherwise.
 */
json_t *
cagent_reply(struct cagent *ca, const struct cagent_msg *req,
    const char *intent, const char *text)
{
	json_t	*env, *trace;

	if (intent == NULL)
		intent = req->kind == CAGENT_TASK || *req->intent == '\0' ?
		    "finalize" : req->intent;
	env = cagent_envelope(ca, intent, req->task, text);
	if (env != NULL && *req->id != '\0') {
		trace = json_object_get(env, "trace");
		json_object_set_new(trace, "parents", json_pack("[s]",
		    req->id));
	}
	return env;
}

/*
 * Build an error reply to req (content.type "error"): it ends a task as
 * failed and is never sent for reflection.
 */
json_t *
cagent_reply_error(struct cagent *ca, const struct cagent_msg *req,
    const char *fmt, ...)
{
	va_list	 ap;
	char	 msg[1024];
	json_t	*env;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	env = cagent_reply(ca, req, NULL, msg);
	json_object_set_new(env, "content", json_pack("{s:s, s:s, s:{s:s, "
	    "s:s, s:s, s:b}}", "type", "error", "text", msg, "data", "code",
	    "agent_error", "category", "INTERNAL", "message", msg, "retryable",
	    0));
	return env;
}

/* Return env's member key as an object, creating it when missing. */
static json_t *
cagent_member(json_t *env, const char *key)
{
	json_t	*o = json_object_get(env, key);

	if (!json_is_object(o)) {
		o = json_object();
		json_object_set_new(env, key, o);
	}
	return o;
}

/* Return obj's member key as an array, creating it when missing. */
static json_t *
cagent_array(json_t *obj, const char *key)
{
	json_t	*a = json_object_get(obj, key);

	if (!json_is_array(a)) {
		a = json_array();
		json_object_set_new(obj, key, a);
	}
	return a;
}

/* Replace content.text, printf-style. */
void
cagent_set_text(json_t *env, const char *fmt, ...)
{
	va_list	 ap;
	char	*s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) == -1)
		s = NULL;
	va_end(ap);
	if (s == NULL)
		return;
	json_object_set_new(cagent_member(env, "content"), "text",
	    json_string(s));
	free(s);
}

/* Attach structured results (stolen) as content.data, of type json. */
void
cagent_set_data(json_t *env, json_t *data)
{
	json_t	*c = cagent_member(env, "content");

	json_object_set_new(c, "data", data);
	json_object_set_new(c, "type", json_string("json"));
}

/* Report how sure the agent is, and why; risks already added stay. */
void
cagent_set_confidence(json_t *env, double score, const char *rationale)
{
	json_t	*c = cagent_member(env, "confidence");

	if (score < 0)
		score = 0;
	if (score > 1)
		score = 1;
	json_object_set_new(c, "score", json_real(score));
	if (rationale != NULL)
		json_object_set_new(c, "rationale", json_string(rationale));
}

/* Add one line to confidence.risks, printf-style. */
void
cagent_add_risk(json_t *env, const char *fmt, ...)
{
	va_list	 ap;
	char	*s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) == -1)
		s = NULL;
	va_end(ap);
	if (s == NULL)
		return;
	json_array_append_new(cagent_array(cagent_member(env, "confidence"),
	    "risks"), json_string(s));
	free(s);
}

/* Propose further work: outputs.next_actions gets {intent, task, args}. */
void
cagent_add_action(json_t *env, const char *intent, const char *task,
    json_t *args)
{
	json_t	*a;

	a = json_pack("{s:s, s:s}", "intent", intent, "task", task);
	if (args != NULL)
		json_object_set_new(a, "args", args);
	json_array_append_new(cagent_array(cagent_member(env, "outputs"),
	    "next_actions"), a);
}

/* Record something produced: outputs.artifacts gets {kind, name, ...}. */
void
cagent_add_artifact(json_t *env, const char *kind, const char *name,
    const char *uri, const char *inline_text)
{
	json_t	*a;

	a = json_pack("{s:s, s:s, s:o}", "kind", kind, "name", name, "uri",
	    uri != NULL ? json_string(uri) : json_null());
	if (inline_text != NULL)
		json_object_set_new(a, "inline", json_string(inline_text));
	json_array_append_new(cagent_array(cagent_member(env, "outputs"),
	    "artifacts"), a);
}

/* Add a tag to trace.tags. */
void
cagent_add_tag(json_t *env, const char *tag)
{
	json_array_append_new(cagent_array(cagent_member(env, "trace"),
	    "tags"), json_string(tag));
}

/* Report what the work cost: trace.cost (usd only when nonzero). */
void
cagent_set_cost(json_t *env, double in, double out, double usd)
{
	json_t	*c = json_object();

	json_object_set_new(c, "input_tokens", json_real(in));
	json_object_set_new(c, "output_tokens", json_real(out));
	if (usd > 0)
		json_object_set_new(c, "usd", json_real(usd));
	json_object_set_new(cagent_member(env, "trace"), "cost", c);
}

/*
 * Write an envelope (stolen) as one line.  A confidence object without a
 * score would be refused by corral, so it gets an explicit neutral 0.5
 * and a warning rather than losing the reply.
 */
int
cagent_send(struct cagent *ca, json_t *env)
{
	json_t	*conf;
	int	 rc;

	if (env == NULL) {
		cagent_set_error(ca, "no envelope to send");
		return -1;
	}
	conf = json_object_get(env, "confidence");
	if (conf != NULL && json_object_get(conf, "score") == NULL) {
		cagent_log(ca, "confidence without a score; sending 0.5");
		json_object_set_new(conf, "score", json_real(0.5));
	}
	rc = cagent_write_json(ca, env);
	json_decref(env);
	return rc;
}

/*
 * Make a JSON-RPC call to corral (params stolen) and wait up to timeout
 * seconds (<= 0: CAGENT_CALL_TIMEOUT) for its response.  Returns the
 * result (a new reference) or NULL with cagent_error set.
 */
json_t *
cagent_call(struct cagent *ca, const char *method, json_t *params,
    double timeout)
{
	json_t		*frame, *resp = NULL, *err, *res;
	json_int_t	 id = ++ca->rpc_seq;
	double		 deadline;
	int		 r;

	frame = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", id,
	    "method", method);
	if (params != NULL)
		json_object_set_new(frame, "params", params);
	r = cagent_write_json(ca, frame);
	json_decref(frame);
	if (r != 0)
		return NULL;
	deadline = cagent_now() + (timeout > 0 ? timeout : CAGENT_CALL_TIMEOUT);
	while (resp == NULL) {
		r = cagent_pump(ca, deadline, id, &resp);
		if (r == 0) {
			cagent_set_error(ca, "%s: corral closed our input",
			    method);
			return NULL;
		}
		if (r == -2) {
			cagent_set_error(ca, "%s: no response in %gs", method,
			    timeout > 0 ? timeout : CAGENT_CALL_TIMEOUT);
			return NULL;
		}
	}
	if ((err = json_object_get(resp, "error")) != NULL) {
		cagent_set_error(ca, "%s: %s (code %lld)", method,
		    cagent_str(err, "message"),
		    (long long)json_integer_value(json_object_get(err, "code")));
		ca->err_code = (int)json_integer_value(json_object_get(err,
		    "code"));
		json_decref(resp);
		return NULL;
	}
	res = json_incref(json_object_get(resp, "result"));
	json_decref(resp);
	if (res == NULL)
		cagent_set_error(ca, "%s: a response without a result", method);
	return res;
}

/* Send map/connect and wait for corral's answer: 0, or -1 on failure. */
int
cagent_handshake(struct cagent *ca)
{
	json_t	*res;

	res = cagent_call(ca, CORRAL_M_CONNECT, json_pack("{s:s, s:{s:b, "
	    "s:b}}", "name", ca->name, "capabilities", "canSpawn", 1,
	    "canSend", 1), 0);
	if (res == NULL)
		return -1;
	json_decref(res);
	return 0;
}

/*
 * Spawn a child from the workflow's catalogue entry agent with a task (an
 * envelope, or a string taken as an execute task; stolen).  Returns the
 * child's id, valid until cagent_close, or NULL with cagent_error set.
 */
const char *
cagent_spawn(struct cagent *ca, const char *agent, json_t *task,
    const struct cagent_spawn_opts *o)
{
	struct cagent_child	*c;
	json_t			*params, *res, *limits;
	const char		*id, *tid;

	params = json_pack("{s:s, s:o}", "agent", agent, "task", task);
	if (params == NULL) {
		cagent_set_error(ca, "spawn %s: no task", agent);
		return NULL;
	}
	if (o != NULL) {
		if (o->timeout > 0)
			json_object_set_new(params, "timeout",
			    json_real(o->timeout));
		if (o->visible)
			json_object_set_new(params, "visible", json_true());
		if (o->keep)
			json_object_set_new(params, "keep", json_true());
		if (o->depth > 0 || o->children > 0) {
			limits = json_object();
			if (o->depth > 0)
				json_object_set_new(limits, "depth",
				    json_integer(o->depth));
			if (o->children > 0)
				json_object_set_new(limits, "children",
				    json_integer(o->children));
			json_object_set_new(params, "limits", limits);
		}
	}
	if ((res = cagent_call(ca, CORRAL_M_SPAWN, params, 0)) == NULL)
		return NULL;
	id = cagent_str(json_object_get(res, "agent"), "id");
	tid = cagent_str(res, "messageId");
	if (*id == '\0') {
		cagent_set_error(ca, "spawn %s: the response names no agent",
		    agent);
		json_decref(res);
		return NULL;
	}
	c = reallocarray(ca->children, ca->nchildren + 1, sizeof *c);
	if (c == NULL) {
		fprintf(stderr, "cagent: out of memory\n");
		exit(1);
	}
	ca->children = c;
	c = &ca->children[ca->nchildren++];
	c->id = cagent_strdup(id);
	c->task = cagent_strdup(tid);
	json_decref(res);
	return c->id;
}

/* Move queued child results into out[*have..n). */
static void
cagent_take_results(struct cagent *ca, struct cagent_msg *out, size_t n,
    size_t *have)
{
	struct cagent_pending	*p, *next;

	for (p = TAILQ_FIRST(&ca->queue); p != NULL && *have < n; p = next) {
		next = TAILQ_NEXT(p, entry);
		if (p->kind != CAGENT_CHILD_RESULT)
			continue;
		TAILQ_REMOVE(&ca->queue, p, entry);
		cagent_msg_fill(&out[(*have)++], p->env, p->kind);
		free(p);
	}
}

/*
 * Wait up to timeout seconds (<= 0: forever) for n child results and put
 * them in out[0..n) in arrival order; other envelopes stay queued for
 * cagent_next.  Returns how many arrived (fewer than n after a timeout or
 * at end of input, with cagent_error set).
 */
int
cagent_await_children(struct cagent *ca, struct cagent_msg *out, size_t n,
    double timeout)
{
	double	deadline = timeout > 0 ? cagent_now() + timeout : -1;
	size_t	have = 0;
	int	r;

	for (;;) {
		cagent_take_results(ca, out, n, &have);
		if (have == n)
			break;
		r = cagent_pump(ca, deadline, 0, NULL);
		if (r == 0) {
			cagent_set_error(ca, "input ended with %zu of %zu child "
			    "results", have, n);
			break;
		}
		if (r == -2) {
			cagent_set_error(ca, "%zu of %zu child results after "
			    "%gs", have, n, timeout);
			break;
		}
	}
	return (int)have;
}

/*
 * Send an envelope (stolen) to an address (stolen; see docs/protocol.md)
 * with map/send.  Returns how many agents it reached, or -1.
 */
int
cagent_send_to(struct cagent *ca, json_t *to, json_t *env)
{
	json_t	*res;
	int	 n;

	res = cagent_call(ca, CORRAL_M_SEND, json_pack("{s:o, s:o}", "to", to,
	    "envelope", env), 0);
	if (res == NULL)
		return -1;
	n = (int)json_array_size(json_object_get(res, "delivered"));
	json_decref(res);
	return n;
}

/* Send an envelope (stolen) to this agent's parent. */
int
cagent_send_to_parent(struct cagent *ca, json_t *env)
{
	return cagent_send_to(ca, json_pack("{s:b}", "parent", 1), env);
}

/* Return a string parameter of the request, or dflt. */
const char *
cagent_param_str(const struct cagent_msg *m, const char *key, const char *dflt)
{
	const char	*s = json_string_value(json_object_get(m->params, key));

	return s != NULL ? s : dflt;
}

/* Return a numeric parameter of the request, or dflt. */
double
cagent_param_num(const struct cagent_msg *m, const char *key, double dflt)
{
	json_t	*v = json_object_get(m->params, key);

	return json_is_number(v) ? json_number_value(v) : dflt;
}

/*
 * Read a whole file of at most max bytes into a NUL-terminated buffer
 * (the caller frees it).  Returns NULL with errno set; EFBIG when the file
 * is larger than max, so agents never load unbounded input.
 */
char *
cagent_read_file(const char *path, size_t max, size_t *lenp)
{
	FILE	*f;
	char	*buf;
	size_t	 len;
	int	 saved;

	if ((f = fopen(path, "rb")) == NULL)
		return NULL;
	if ((buf = malloc(max + 2)) == NULL) {
		fclose(f);
		errno = ENOMEM;
		return NULL;
	}
	len = fread(buf, 1, max + 1, f);
	saved = ferror(f) ? EIO : 0;
	fclose(f);
	if (saved == 0 && len > max)
		saved = EFBIG;
	if (saved != 0) {
		free(buf);
		errno = saved;
		return NULL;
	}
	buf[len] = '\0';
	if (lenp != NULL)
		*lenp = len;
	return buf;
}
