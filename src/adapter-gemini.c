/*
 * The gemini adapter: the Gemini CLI as an agent, one `gemini -p` process
 * per envelope (docs/adapters.md).
 *
 *   agents:
 *     reviewer:
 *       cmd: [gemini, -m, gemini-2.5-flash]
 *       adapter:
 *         type: gemini
 *         conversation: one       # or each (default): a new session each
 *         output: stream-json     # or json (one pretty-printed object)
 *         prompt: "{{task}}"      # a template; default: built from the
 *                                 # envelope (docs/adapters.md)
 *         confidence: 0.9
 *         intent: summarize
 *         then: [{intent: finalize, task: "..."}]
 *         price: {input: 0.3, output: 2.5}   # USD per million tokens
 *         stderr: log             # or debug
 *
 * Each request runs cmd -p "" --output-format stream-json [--resume
 * SESSION] with the prompt on stdin (Gemini reads stdin and puts -p's
 * empty text after it), stdin then closed.  The assistant's text after the
 * last tool call is the reply's text, the result line's stats its
 * trace.cost, a result with status error an error envelope.  The exit
 * status is not trusted: Gemini exits with the HTTP status & 255 on API
 * errors and 0 on some failures, so only the result line counts, and an
 * exit without one is an error.  Lines that are not JSON objects on their
 * own are gathered until they form one: that is how the json output
 * format (pretty-printed) is read, on stdout or, for errors, at the end
 * of stderr.  Gemini re-launches itself as a child node process, so a
 * request that times out has its whole process group killed.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

#define GEMINI_AUDIT_MAX 400	/* bytes of a text kept in an audit event */

/* A request waiting for its turn in the one conversation. */
struct gemini_wait {
	struct msg		*msg;
	TAILQ_ENTRY(gemini_wait) entry;
};
TAILQ_HEAD(gemini_waitq, gemini_wait);

struct gemini_state {
	/* Settings. */
	int			 one;		/* conversation: one */
	int			 json;		/* output: json */
	const char		*prompt;
	double			 confidence;
	const char		*intent;
	json_t			*then;
	double			 price_in;	/* USD per million tokens */
	double			 price_out;
	int			 quiet;
	/* The conversation. */
	char			*session;
	int			 busy;
	struct gemini_waitq	 waitq;
};

/* What one process said so far. */
struct gemini_call {
	char		*text;		/* all assistant text */
	char		*final;		/* assistant text after the last tool */
	char		*error;
	char		*session;
	char		*model;
	char		*doc;		/* lines of a multi-line JSON object */
	size_t		 doclen;
	int		 result;	/* 1 success, -1 error, 0 none yet */
	int		 resumed;	/* ran with --resume */
	int		 junk;
	double		 in;
	double		 out;
};

static void	adapter_gemini_run(struct agent *, struct msg *);

/* Check the gemini settings at load time. */
static int
adapter_gemini_check(const struct agent_conf *ac, char *why, size_t len)
{
	static const char *keys[] = { "type", "conversation", "output",
	    "prompt", "confidence", "intent", "then", "price", "stderr", NULL };
	json_t		*c = ac->adapter_conf, *v, *e;
	const char	*k;
	size_t		 i;

	json_object_foreach(c, k, v) {
		for (i = 0; keys[i] != NULL; i++)
			if (strcmp(keys[i], k) == 0)
				break;
		if (keys[i] == NULL) {
			snprintf(why, len, "unknown gemini setting '%s' "
			    "(conversation, output, prompt, confidence, intent, "
			    "then, price, stderr)", k);
			return -1;
		}
	}
	v = json_object_get(c, "conversation");
	if (v != NULL && (!json_is_string(v) || (strcmp(json_string_value(v),
	    "one") != 0 && strcmp(json_string_value(v), "each") != 0))) {
		snprintf(why, len, "adapter.conversation must be one (resume one "
		    "session) or each (a new session per request)");
		return -1;
	}
	v = json_object_get(c, "output");
	if (v != NULL && (!json_is_string(v) || (strcmp(json_string_value(v),
	    "stream-json") != 0 && strcmp(json_string_value(v), "json") != 0))) {
		snprintf(why, len, "adapter.output must be stream-json or json");
		return -1;
	}
	v = json_object_get(c, "prompt");
	if (v != NULL && !json_is_string(v)) {
		snprintf(why, len, "adapter.prompt must be a template string");
		return -1;
	}
	v = json_object_get(c, "confidence");
	if (v != NULL && (!json_is_number(v) || json_number_value(v) < 0 ||
	    json_number_value(v) > 1)) {
		snprintf(why, len, "adapter.confidence must be a number between "
		    "0 and 1");
		return -1;
	}
	v = json_object_get(c, "intent");
	if (v != NULL && (!json_is_string(v) || config_intent(
	    json_string_value(v), json_string_length(v)) < 0)) {
		snprintf(why, len, "adapter.intent must be an intent");
		return -1;
	}
	v = json_object_get(c, "then");
	if (v != NULL && !json_is_array(v)) {
		snprintf(why, len, "adapter.then must be a list of {intent, "
		    "task, args}");
		return -1;
	}
	json_array_foreach(v, i, e) {
		json_t *in = json_object_get(e, "intent");

		if (!json_is_object(e) || !json_is_string(in) || config_intent(
		    json_string_value(in), json_string_length(in)) < 0 ||
		    !json_is_string(json_object_get(e, "task"))) {
			snprintf(why, len, "adapter.then[%zu] needs an intent and "
			    "a task", i);
			return -1;
		}
	}
	v = json_object_get(c, "price");
	if (v != NULL && !json_is_object(v)) {
		snprintf(why, len, "adapter.price must be {input: USD, output: "
		    "USD} per million tokens");
		return -1;
	}
	json_object_foreach(v, k, e) {
		if ((strcmp(k, "input") != 0 && strcmp(k, "output") != 0) ||
		    !json_is_number(e) || json_number_value(e) < 0) {
			snprintf(why, len, "adapter.price takes input and output, "
			    "USD per million tokens");
			return -1;
		}
	}
	v = json_object_get(c, "stderr");
	if (v != NULL && (!json_is_string(v) || (strcmp(json_string_value(v),
	    "log") != 0 && strcmp(json_string_value(v), "debug") != 0))) {
		snprintf(why, len, "adapter.stderr must be log or debug");
		return -1;
	}
	for (i = 1; i < ac->argc; i++) {
		k = ac->argv[i];
		if (strcmp(k, "-p") == 0 || strncmp(k, "--prompt", 8) == 0 ||
		    strncmp(k, "--output-format", 15) == 0 ||
		    strcmp(k, "-o") == 0 || strncmp(k, "--resume", 8) == 0 ||
		    strcmp(k, "-r") == 0) {
			snprintf(why, len, "cmd must not give %s: the gemini "
			    "adapter sets the prompt, the output format and "
			    "--resume itself (see output: and conversation:)", k);
			return -1;
		}
	}
	return 0;
}

/* Read the settings. */
static int
adapter_gemini_start(struct agent *a)
{
	struct gemini_state	*st;
	json_t			*c = a->conf->adapter_conf, *v;

	if (a->adapter->state != NULL)
		return 0;
	st = xcalloc(1, sizeof *st);
	TAILQ_INIT(&st->waitq);
	v = json_object_get(c, "conversation");
	st->one = v != NULL && strcmp(json_string_value(v), "one") == 0;
	v = json_object_get(c, "output");
	st->json = v != NULL && strcmp(json_string_value(v), "json") == 0;
	st->prompt = json_string_value(json_object_get(c, "prompt"));
	v = json_object_get(c, "confidence");
	st->confidence = v != NULL ? json_number_value(v) : 0.9;
	st->intent = json_string_value(json_object_get(c, "intent"));
	st->then = json_object_get(c, "then");
	v = json_object_get(c, "price");
	st->price_in = json_number_value(json_object_get(v, "input"));
	st->price_out = json_number_value(json_object_get(v, "output"));
	v = json_object_get(c, "stderr");
	st->quiet = v != NULL && strcmp(json_string_value(v), "debug") == 0;
	a->adapter->state = st;
	return 0;
}

/* A JSON number: an integer when the value is whole (token counts). */
static json_t *
adapter_gemini_num(double v)
{
	if (v == (double)(json_int_t)v && v < 9e15 && v > -9e15)
		return json_integer((json_int_t)v);
	return json_real(v);
}

/* Append a string to a growing text, with a separator between parts. */
static void
adapter_gemini_append(char **text, const char *s, const char *sep)
{
	char	*n;

	if (s == NULL || *s == '\0')
		return;
	if (*text == NULL) {
		*text = xstrdup(s);
		return;
	}
	xasprintf(&n, "%s%s%s", *text, sep, s);
	free(*text);
	*text = n;
}

/*
 * The prompt for a request: the template if the entry has one, else the
 * intent, the task, content.text, inputs.context, inputs.resources and
 * content.data, each when present (docs/adapters.md).
 */
static char *
adapter_gemini_prompt(struct gemini_state *st, json_t *req, struct msg *m)
{
	json_t		*task, *text, *ctx, *res, *data, *r;
	char		*out = NULL, *s, *line;
	size_t		 i;

	if (st->prompt != NULL)
		return adapter_template(st->prompt, req, m);
	task = json_object_get(req, "task");
	text = json_object_get(json_object_get(req, "content"), "text");
	ctx = json_object_get(json_object_get(req, "inputs"), "context");
	res = json_object_get(json_object_get(req, "inputs"), "resources");
	data = json_object_get(json_object_get(req, "content"), "data");
	xasprintf(&out, "Intent: %s", config_intent_name(m->intent));
	adapter_gemini_append(&out, json_string_value(task), "\n\n");
	if (json_is_string(text) && !json_equal(text, task))
		adapter_gemini_append(&out, json_string_value(text), "\n\n");
	if (json_is_string(ctx) && json_string_length(ctx) > 0) {
		xasprintf(&s, "Context:\n%s", json_string_value(ctx));
		adapter_gemini_append(&out, s, "\n\n");
		free(s);
	}
	if (json_array_size(res) > 0) {
		adapter_gemini_append(&out, "Resources:", "\n\n");
		json_array_foreach(res, i, r) {
			const char *h = json_string_value(json_object_get(r,
			    "hint"));

			xasprintf(&line, "- %s %s%s%s", json_string_value(
			    json_object_get(r, "type")), json_string_value(
			    json_object_get(r, "id")), h != NULL ? ": " : "",
			    h != NULL ? h : "");
			adapter_gemini_append(&out, line, "\n");
			free(line);
		}
	}
	if (data != NULL && !json_is_null(data) &&
	    (s = json_dumps(data, JSON_INDENT(1) | JSON_ENCODE_ANY)) != NULL) {
		xasprintf(&line, "Data:\n%s", s);
		adapter_gemini_append(&out, line, "\n\n");
		free(line);
		free(s);
	}
	return out;
}

/* Replace a string. */
static void
adapter_gemini_set(char **field, const char *s)
{
	free(*field);
	*field = s != NULL ? xstrdup(s) : NULL;
}

/* Free what a call collected. */
static void
adapter_gemini_call_free(struct gemini_call *c)
{
	if (c == NULL)
		return;
	free(c->text);
	free(c->final);
	free(c->error);
	free(c->session);
	free(c->model);
	free(c->doc);
	free(c);
}

/* Record a tool event in the audit log, its long texts cut short. */
static void
adapter_gemini_audit(struct proc *p, const char *kind, json_t *j)
{
	json_t		*f;
	char		*s;
	size_t		 n;

	if (!auditlog_enabled())
		return;
	f = json_pack("{s:s, s:s, s:s?, s:O*, s:O*, s:O*}", "adapter", "gemini",
	    "kind", kind, "request", p->msg != NULL ? p->msg->id : NULL,
	    "tool_name", json_object_get(j, "tool_name"), "tool_id",
	    json_object_get(j, "tool_id"), "status", json_object_get(j,
	    "status"));
	if (f == NULL)
		return;
	if ((s = json_dumps(json_object_get(j, strcmp(kind, "tool_use") == 0 ?
	    "parameters" : "output"), CORRAL_JSON_FLAGS | JSON_ENCODE_ANY)) !=
	    NULL) {
		n = strlen(s);
		json_object_set_new(f, strcmp(kind, "tool_use") == 0 ?
		    "parameters" : "output", util_json_text(s,
		    n > GEMINI_AUDIT_MAX ? GEMINI_AUDIT_MAX : n));
		free(s);
	}
	auditlog_json("adapter_event", p->agent->id, f);
}

/* The stats of a result: tokens in and out, stream-json or json form. */
static void
adapter_gemini_stats(struct gemini_call *c, json_t *stats)
{
	json_t		*models, *m, *t;
	const char	*k;

	if (json_object_get(stats, "input_tokens") != NULL) {
		c->in = json_number_value(json_object_get(stats,
		    "input_tokens"));
		c->out = json_number_value(json_object_get(stats,
		    "output_tokens"));
		return;
	}
	/* The json format: per model, tokens.prompt and tokens.candidates. */
	models = json_object_get(stats, "models");
	c->in = c->out = 0;
	json_object_foreach(models, k, m) {
		t = json_object_get(m, "tokens");
		c->in += json_number_value(json_object_get(t, "prompt"));
		c->out += json_number_value(json_object_get(t, "candidates"));
	}
}

/* One event (a line, or a gathered multi-line object) from gemini. */
static void
adapter_gemini_event(struct proc *p, json_t *j)
{
	struct gemini_call	*c = p->arg;
	struct agent		*a = p->agent;
	json_t			*err;
	const char		*type, *s;

	type = json_string_value(json_object_get(j, "type"));
	if (type == NULL) {
		/* The json format: {session_id, response, stats} or {error}. */
		adapter_gemini_set(&c->session, json_string_value(
		    json_object_get(j, "session_id")));
		if ((err = json_object_get(j, "error")) != NULL) {
			s = json_string_value(json_object_get(err, "message"));
			adapter_gemini_set(&c->error, s != NULL ? s :
			    "gemini reported an error");
			c->result = -1;
		} else if ((s = json_string_value(json_object_get(j,
		    "response"))) != NULL) {
			adapter_gemini_set(&c->final, s);
			c->result = 1;
		}
		adapter_gemini_stats(c, json_object_get(j, "stats"));
		return;
	}
	if (strcmp(type, "init") == 0) {
		adapter_gemini_set(&c->session, json_string_value(
		    json_object_get(j, "session_id")));
		adapter_gemini_set(&c->model, json_string_value(
		    json_object_get(j, "model")));
	} else if (strcmp(type, "message") == 0) {
		s = json_string_value(json_object_get(j, "role"));
		if (s == NULL || strcmp(s, "assistant") != 0)
			return;
		s = json_string_value(json_object_get(j, "content"));
		adapter_gemini_append(&c->text, s, json_is_true(
		    json_object_get(j, "delta")) ? "" : "\n");
		adapter_gemini_append(&c->final, s, json_is_true(
		    json_object_get(j, "delta")) ? "" : "\n");
	} else if (strcmp(type, "tool_use") == 0 ||
	    strcmp(type, "tool_result") == 0) {
		/* The answer is what it says after its last tool. */
		free(c->final);
		c->final = NULL;
		adapter_gemini_audit(p, type, j);
	} else if (strcmp(type, "error") == 0) {
		s = json_string_value(json_object_get(j, "message"));
		if (s == NULL)
			s = "gemini reported an error";
		log_info("agent %s: gemini: %.300s", a->id, s);
		if (!json_is_string(json_object_get(j, "severity")) ||
		    strcmp(json_string_value(json_object_get(j, "severity")),
		    "error") == 0)
			adapter_gemini_set(&c->error, s);
	} else if (strcmp(type, "result") == 0) {
		s = json_string_value(json_object_get(j, "status"));
		c->result = s != NULL && strcmp(s, "success") == 0 ? 1 : -1;
		err = json_object_get(j, "error");
		if ((s = json_string_value(json_object_get(err, "message"))) !=
		    NULL)
			adapter_gemini_set(&c->error, s);
		adapter_gemini_stats(c, json_object_get(j, "stats"));
	}
}

/*
 * Gather a line that is not a JSON object on its own into a document;
 * once a line closes it ("}" alone), parse the document as one event.
 */
static void
adapter_gemini_gather(struct proc *p, const char *line, size_t len)
{
	struct gemini_call	*c = p->arg;
	json_error_t		 e;
	json_t			*j;
	char			 esc[256];

	if (c->doc == NULL && (len == 0 || line[0] != '{')) {
		if (c->junk++ == 0) {
			log_escape(esc, sizeof esc, line, len);
			log_warnx("agent %s: gemini wrote a line that is not "
			    "JSON, ignored: %s", p->agent->id, esc);
		}
		return;
	}
	if (c->doclen + len + 1 > p->agent->conf->max_line) {
		log_warnx("agent %s: gemini's output object exceeds max_line; "
		    "dropped", p->agent->id);
		free(c->doc);
		c->doc = NULL;
		c->doclen = 0;
		return;
	}
	c->doc = xreallocarray(c->doc, c->doclen + len + 2, 1);
	memcpy(c->doc + c->doclen, line, len);
	c->doclen += len;
	c->doc[c->doclen++] = '\n';
	c->doc[c->doclen] = '\0';
	if (len != 1 || line[0] != '}')
		return;
	if ((j = json_loadb(c->doc, c->doclen, 0, &e)) != NULL) {
		if (json_is_object(j))
			adapter_gemini_event(p, j);
		json_decref(j);
	}
	free(c->doc);
	c->doc = NULL;
	c->doclen = 0;
}

/* One line of gemini's stdout. */
static void
adapter_gemini_line(struct proc *p, const char *line, size_t len)
{
	struct gemini_call	*c = p->arg;
	json_error_t		 e;
	json_t			*j;

	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	if (len == 0)
		return;
	if (c->doc == NULL && (j = json_loadb(line, len, 0, &e)) != NULL) {
		if (json_is_object(j)) {
			adapter_gemini_event(p, j);
			json_decref(j);
			return;
		}
		json_decref(j);
	}
	adapter_gemini_gather(p, line, len);
}

/*
 * The json format puts an error object at the end of stderr, after a
 * stack trace: find its first line ("{" alone) and parse from there.
 */
static void
adapter_gemini_stderr_json(struct proc *p)
{
	json_error_t	 e;
	json_t		*j;
	const char	*s = p->err_tail, *start = NULL;

	for (; (s = strstr(s, "{\n")) != NULL; s += 2)
		if (s == p->err_tail || s[-1] == '\n')
			start = s;
	if (start == NULL)
		return;
	if ((j = json_loadb(start, p->err_len - (size_t)(start - p->err_tail),
	    0, &e)) != NULL) {
		if (json_is_object(j))
			adapter_gemini_event(p, j);
		json_decref(j);
	}
}

/*
 * The category of an API error message: REJECTED for a client error (a
 * 4xx code but 408 and 429), else UNAVAILABLE.
 */
static const char *
adapter_gemini_category(const char *msg)
{
	json_error_t	 e;
	json_t		*j;
	const char	*b, *end;
	json_int_t	 code = 0;

	if ((b = strchr(msg, '{')) != NULL && (end = strrchr(msg, '}')) !=
	    NULL && end > b && (j = json_loadb(b, (size_t)(end - b + 1), 0,
	    &e)) != NULL) {
		code = json_integer_value(json_object_get(json_object_get(j,
		    "error"), "code"));
		json_decref(j);
	}
	if (code >= 400 && code < 500 && code != 408 && code != 429)
		return "REJECTED";
	return "UNAVAILABLE";
}

/* Answer a request from a finished call. */
static void
adapter_gemini_answer(struct agent *a, struct proc *p, struct gemini_call *c)
{
	struct gemini_state	*st = a->adapter->state;
	struct msg		*m = p->msg;
	json_t			*env, *content, *extra;
	char			 why[768], status[64];
	const char		*last, *text;
	size_t			 n;

	if (c->result == 0 && st->json)
		adapter_gemini_stderr_json(p);
	if (c->result == 1) {
		text = c->final != NULL ? c->final : c->text != NULL ? c->text :
		    "";
		env = adapter_envelope(a, m, st->intent, 0);
		content = json_object_get(env, "content");
		json_object_set_new(content, "text", util_json_text(text,
		    strlen(text)));
		if (c->session != NULL)
			json_object_set_new(content, "data", json_pack("{s:s}",
			    "session_id", c->session));
		json_object_set_new(env, "confidence", json_pack("{s:f}",
		    "score", st->confidence));
		json_object_set_new(json_object_get(env, "trace"), "cost",
		    json_pack("{s:o, s:o, s:o}", "input_tokens",
		    adapter_gemini_num(c->in), "output_tokens",
		    adapter_gemini_num(c->out), "usd", adapter_gemini_num(
		    (c->in * st->price_in + c->out * st->price_out) / 1e6)));
		if (st->then != NULL && json_array_size(st->then) > 0)
			json_object_set_new(env, "outputs", json_pack("{s:O}",
			    "next_actions", st->then));
		adapter_reply(a, m, env);
		return;
	}
	if (c->result == -1 || c->error != NULL) {
		snprintf(why, sizeof why, "gemini: %s", c->error != NULL ?
		    c->error : "the run failed");
		adapter_reply_error(a, m, "api_error", adapter_gemini_category(
		    c->error != NULL ? c->error : ""), why, json_pack("{s:s?}",
		    "session_id", c->session));
		return;
	}
	/* It ended without a result: killed, crashed, or cut short. */
	util_describe_status(status, sizeof status, p->status);
	n = p->err_len;
	while (n > 0 && p->err_tail[n - 1] == '\n')
		n--;
	last = p->err_tail + n;
	while (last > p->err_tail && last[-1] != '\n')
		last--;
	snprintf(why, sizeof why, "gemini %s without a result%s%.*s", status,
	    last < p->err_tail + n ? ": " : "", (int)(p->err_tail + n - last),
	    last);
	extra = json_pack("{s:o}", "stderr", util_json_text(p->err_tail,
	    p->err_len));
	adapter_reply_error(a, m, "exit_status", "INTERNAL", why, extra);
}

/* Start the next waiting request of the one conversation. */
static void
adapter_gemini_next(struct agent *a)
{
	struct gemini_state	*st = a->adapter->state;
	struct gemini_wait	*w;
	struct msg		*m;

	st->busy = 0;
	if (a->state == AS_STOPPING || (w = TAILQ_FIRST(&st->waitq)) == NULL)
		return;
	TAILQ_REMOVE(&st->waitq, w, entry);
	m = w->msg;
	free(w);
	adapter_gemini_run(a, m);
}

/* A process ended: answer its request (unless it was given up). */
static void
adapter_gemini_done(struct proc *p)
{
	struct agent		*a = p->agent;
	struct gemini_state	*st = a->adapter->state;
	struct gemini_call	*c = p->arg;

	if (c->doc != NULL) {
		/* An object still open at EOF: it may be complete anyway. */
		json_error_t	 e;
		json_t		*j;

		if ((j = json_loadb(c->doc, c->doclen, 0, &e)) != NULL) {
			if (json_is_object(j))
				adapter_gemini_event(p, j);
			json_decref(j);
		}
	}
	if (c->session != NULL && st->one && (st->session == NULL ||
	    strcmp(st->session, c->session) != 0)) {
		adapter_gemini_set(&st->session, c->session);
		log_info("agent %s: gemini session %s", a->id, c->session);
	} else if (c->resumed && c->session == NULL && p->msg != NULL) {
		/*
		 * It could not even resume (exit 42, "Error resuming
		 * session"): the session is gone, so start a new one next.
		 */
		log_warnx("agent %s: gemini could not resume session %s; the "
		    "next request starts a new one", a->id, st->session);
		adapter_gemini_set(&st->session, NULL);
	}
	if (p->msg != NULL)
		adapter_gemini_answer(a, p, c);
	p->arg = NULL;
	adapter_gemini_call_free(c);
	adapter_proc_done(p);
	if (st->one)
		adapter_gemini_next(a);
}

/* Run gemini for one request. */
static void
adapter_gemini_run(struct agent *a, struct msg *m)
{
	struct gemini_state	*st = a->adapter->state;
	struct agent_conf	*ac = a->conf;
	struct gemini_call	*c;
	struct proc		*p;
	json_t			*req;
	char			**argv, *prompt, why[512];
	size_t			 i, n = 0;

	if ((req = adapter_request_json(m)) == NULL) {
		adapter_reply_error(a, m, "bad_request", "INTERNAL", "the "
		    "request is not JSON", NULL);
		return;
	}
	prompt = adapter_gemini_prompt(st, req, m);
	json_decref(req);

	argv = xcalloc(ac->argc + 8, sizeof *argv);
	for (i = 0; i < ac->argc; i++)
		argv[n++] = ac->argv[i];
	argv[n++] = "-p";
	argv[n++] = "";		/* the prompt comes on stdin */
	argv[n++] = "--output-format";
	argv[n++] = st->json ? "json" : "stream-json";
	c = xcalloc(1, sizeof *c);
	if (st->one && st->session != NULL) {
		argv[n++] = "--resume";
		argv[n++] = st->session;
		c->resumed = 1;
	}
	argv[n] = NULL;

	p = adapter_proc_new(a, m);
	p->done = adapter_gemini_done;
	p->line_cb = adapter_gemini_line;
	p->arg = c;
	p->quiet_stderr = st->quiet;
	st->busy = 1;
	if (proc_start(p, a, argv, prompt, strlen(prompt), a->conf->max_line,
	    why, sizeof why) != 0) {
		p->flags |= PROC_DONE;
		p->arg = NULL;
		adapter_gemini_call_free(c);
		adapter_reply_error(a, m, "spawn_failed", "INTERNAL", why, NULL);
		adapter_proc_done(p);
		if (st->one)
			adapter_gemini_next(a);
	}
	free(argv);
	free(prompt);
}

/* Take a request: run it, or queue it behind the conversation's turn. */
static void
adapter_gemini_request(struct agent *a, struct msg *m)
{
	struct gemini_state	*st = a->adapter->state;
	struct gemini_wait	*w;

	if (st->one && st->busy) {
		w = xcalloc(1, sizeof *w);
		w->msg = m;
		TAILQ_INSERT_TAIL(&st->waitq, w, entry);
		return;
	}
	adapter_gemini_run(a, m);
}

/* A request is given up: drop it from the queue, or kill its process. */
static void
adapter_gemini_cancel(struct agent *a, struct msg *m)
{
	struct gemini_state	*st = a->adapter->state;
	struct gemini_wait	*w;
	struct proc		*p;

	TAILQ_FOREACH(w, &st->waitq, entry) {
		if (w->msg == m) {
			TAILQ_REMOVE(&st->waitq, w, entry);
			free(w);
			return;
		}
	}
	TAILQ_FOREACH(p, &a->adapter->procs, entry) {
		if (p->msg == m) {
			/* The group: gemini runs as a relaunched child. */
			p->msg = NULL;
			log_info("agent %s: killing gemini (pid %ld): request %s "
			    "given up", a->id, (long)p->hostpid, m->id);
			proc_kill(p);
		}
	}
}

/* Stop: forget the queue, kill every process; returns how many run. */
static int
adapter_gemini_stop(struct agent *a)
{
	struct gemini_state	*st = a->adapter->state;
	struct gemini_wait	*w;
	struct proc		*p;

	while (st != NULL && (w = TAILQ_FIRST(&st->waitq)) != NULL) {
		TAILQ_REMOVE(&st->waitq, w, entry);
		free(w);
	}
	TAILQ_FOREACH(p, &a->adapter->procs, entry) {
		p->msg = NULL;
		proc_kill(p);
	}
	return (int)a->adapter->nprocs;
}

/* Free the state and what unfinished calls collected. */
static void
adapter_gemini_free(struct agent *a)
{
	struct gemini_state	*st = a->adapter->state;
	struct gemini_wait	*w;
	struct proc		*p;

	TAILQ_FOREACH(p, &a->adapter->procs, entry) {
		adapter_gemini_call_free(p->arg);
		p->arg = NULL;
	}
	if (st == NULL)
		return;
	while ((w = TAILQ_FIRST(&st->waitq)) != NULL) {
		TAILQ_REMOVE(&st->waitq, w, entry);
		free(w);
	}
	free(st->session);
	free(st);
	a->adapter->state = NULL;
}

const struct adapter_ops adapter_gemini_ops = {
	.name = "gemini",
	.per_call = 1,
	.check = adapter_gemini_check,
	.start = adapter_gemini_start,
	.request = adapter_gemini_request,
	.cancel = adapter_gemini_cancel,
	.stop = adapter_gemini_stop,
	.free = adapter_gemini_free,
};
