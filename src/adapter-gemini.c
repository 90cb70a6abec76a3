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
 * of stderr.  A request that names a session (inputs.parameters.session)
 * resumes it; the text as it streams and the tool calls are its progress.
 * Gemini re-launches itself as a child node process, so a request that
 * times out or is cancelled has its whole process group interrupted.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

#define GEMINI_AUDIT_MAX 400	/* bytes of a text kept in an audit event */

struct gemini_state {
	struct adapter_cli	 cli;		/* first: adapter-cli.c's */
	int			 json;		/* output: json */
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
static void	adapter_gemini_line(struct proc_call *, const char *, size_t);
static void	adapter_gemini_done(struct proc_call *);
static void	adapter_gemini_call_free(void *);

static const struct adapter_cli_tool adapter_gemini_tool = {
	.name = "gemini",
	.conversation = "session",
	.key = "session_id",
	.run = adapter_gemini_run,
	.line = adapter_gemini_line,
	.done = adapter_gemini_done,
	.call_free = adapter_gemini_call_free,
};

/* Check the gemini settings at load time. */
static int
adapter_gemini_check(const struct agent_conf *ac, char *why, size_t len)
{
	static const char *keys[] = { "conversation", "output", "prompt",
	    "confidence", "intent", "then", "price", "stderr", NULL };
	json_t		*c = ac->adapter_conf;
	const char	*k;
	size_t		 i;

	if (adapter_check_keys(c, "gemini", keys, why, len) != 0 ||
	    adapter_check_word(c, "conversation", "one", "each",
	    "adapter.conversation must be one (resume one session) or each "
	    "(a new session per request)", why, len) != 0 ||
	    adapter_check_word(c, "output", "stream-json", "json",
	    "adapter.output must be stream-json or json", why, len) != 0 ||
	    adapter_check_common(c, why, len) != 0 ||
	    adapter_cli_check(c, why, len) != 0)
		return -1;
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
	json_t			*v;

	if (a->adapter->state != NULL)
		return 0;
	st = adapter_cli_start(a, &adapter_gemini_tool, sizeof *st);
	v = json_object_get(a->conf->adapter_conf, "output");
	st->json = v != NULL && strcmp(json_string_value(v), "json") == 0;
	return 0;
}

/* Free what a call collected. */
static void
adapter_gemini_call_free(void *arg)
{
	struct gemini_call	*c = arg;

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
adapter_gemini_audit(struct proc_call *p, const char *kind, json_t *j)
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
	if ((s = jsonw_dumps(json_object_get(j, strcmp(kind, "tool_use") == 0 ?
	    "parameters" : "output"), CORRAL_JSON_FLAGS | JSON_ENCODE_ANY)) !=
	    NULL) {
		n = strlen(s);
		json_object_set_new(f, strcmp(kind, "tool_use") == 0 ?
		    "parameters" : "output", jsonw_text(s,
		    n > GEMINI_AUDIT_MAX ? GEMINI_AUDIT_MAX : n));
		free(s);
	}
	auditlog_json("adapter_event", p->agent->id, f);
}

/* A tool call or its result, as progress of the request. */
static void
adapter_gemini_progress(struct proc_call *p, const char *kind, json_t *j)
{
	char	*s;

	s = jsonw_dumps(json_object_get(j, strcmp(kind, "tool_use") == 0 ?
	    "parameters" : "output"), CORRAL_JSON_FLAGS | JSON_ENCODE_ANY);
	if (strcmp(kind, "tool_use") == 0)
		adapter_progressf(p->agent, p->msg, "%s %.200s",
		    json_string_value(json_object_get(j, "tool_name")) != NULL ?
		    json_string_value(json_object_get(j, "tool_name")) : "tool",
		    s != NULL ? s : "");
	else
		adapter_progressf(p->agent, p->msg, "tool %s: %.200s",
		    json_string_value(json_object_get(j, "status")) != NULL ?
		    json_string_value(json_object_get(j, "status")) : "result",
		    json_is_string(json_object_get(j, "output")) ?
		    json_string_value(json_object_get(j, "output")) :
		    s != NULL ? s : "");
	free(s);
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
adapter_gemini_event(struct proc_call *p, json_t *j)
{
	struct gemini_call	*c = p->arg;
	struct agent		*a = p->agent;
	json_t			*err;
	const char		*type, *s;

	type = json_string_value(json_object_get(j, "type"));
	if (type == NULL) {
		/* The json format: {session_id, response, stats} or {error}. */
		adapter_cli_set(&c->session, json_string_value(
		    json_object_get(j, "session_id")));
		if ((err = json_object_get(j, "error")) != NULL) {
			s = json_string_value(json_object_get(err, "message"));
			adapter_cli_set(&c->error, s != NULL ? s :
			    "gemini reported an error");
			c->result = -1;
		} else if ((s = json_string_value(json_object_get(j,
		    "response"))) != NULL) {
			adapter_cli_set(&c->final, s);
			c->result = 1;
		}
		adapter_gemini_stats(c, json_object_get(j, "stats"));
		return;
	}
	if (strcmp(type, "init") == 0) {
		adapter_cli_set(&c->session, json_string_value(
		    json_object_get(j, "session_id")));
		adapter_cli_set(&c->model, json_string_value(
		    json_object_get(j, "model")));
	} else if (strcmp(type, "message") == 0) {
		s = json_string_value(json_object_get(j, "role"));
		if (s == NULL || strcmp(s, "assistant") != 0)
			return;
		s = json_string_value(json_object_get(j, "content"));
		adapter_append(&c->text, s, json_is_true(
		    json_object_get(j, "delta")) ? "" : "\n");
		adapter_append(&c->final, s, json_is_true(
		    json_object_get(j, "delta")) ? "" : "\n");
		/* The text as it streams in is the request's progress. */
		adapter_progress(a, p->msg, s, json_is_true(
		    json_object_get(j, "delta")));
	} else if (strcmp(type, "tool_use") == 0 ||
	    strcmp(type, "tool_result") == 0) {
		/* The answer is what it says after its last tool. */
		free(c->final);
		c->final = NULL;
		adapter_gemini_audit(p, type, j);
		adapter_gemini_progress(p, type, j);
	} else if (strcmp(type, "error") == 0) {
		s = json_string_value(json_object_get(j, "message"));
		if (s == NULL)
			s = "gemini reported an error";
		log_info("agent %s: gemini: %.300s", a->id, s);
		if (!json_is_string(json_object_get(j, "severity")) ||
		    strcmp(json_string_value(json_object_get(j, "severity")),
		    "error") == 0)
			adapter_cli_set(&c->error, s);
	} else if (strcmp(type, "result") == 0) {
		s = json_string_value(json_object_get(j, "status"));
		c->result = s != NULL && strcmp(s, "success") == 0 ? 1 : -1;
		err = json_object_get(j, "error");
		if ((s = json_string_value(json_object_get(err, "message"))) !=
		    NULL)
			adapter_cli_set(&c->error, s);
		adapter_gemini_stats(c, json_object_get(j, "stats"));
	}
}

/*
 * Gather a line that is not a JSON object on its own into a document;
 * once a line closes it ("}" alone), parse the document as one event.
 */
static void
adapter_gemini_gather(struct proc_call *p, const char *line, size_t len)
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
adapter_gemini_line(struct proc_call *p, const char *line, size_t len)
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
adapter_gemini_stderr_json(struct proc_call *p)
{
	json_error_t	 e;
	json_t		*j;
	const char	*tail, *s, *start = NULL;
	size_t		 tlen;

	s = tail = proc_stderr_tail(&p->proc, &tlen);
	for (; (s = strstr(s, "{\n")) != NULL; s += 2)
		if (s == tail || s[-1] == '\n')
			start = s;
	if (start == NULL)
		return;
	if ((j = json_loadb(start, tlen - (size_t)(start - tail), 0, &e)) !=
	    NULL) {
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

/*
 * The line in which gemini refused its command line (yargs: "Unknown
 * arguments: ...", "Invalid values: ..."), found among the first lines of
 * its stderr, with its length in *len; NULL when there is none.
 */
static const char *
adapter_gemini_usage_error(const struct proc_call *p, int *len)
{
	static const char *const starts[] = { "Unknown argument",
	    "Invalid values:", "Missing required argument",
	    "Not enough arguments", "Not enough non-option arguments",
	    "Too many non-option arguments", "Unknown command", NULL };
	const char	*s, *e;
	size_t		 i, hlen;

	s = proc_stderr_head(&p->proc, &hlen);

	for (; *s != '\0'; s = *e == '\n' ? e + 1 : e) {
		e = strchrnul(s, '\n');
		for (i = 0; starts[i] != NULL; i++) {
			if (strncmp(s, starts[i], strlen(starts[i])) == 0) {
				*len = (int)(e - s);
				return s;
			}
		}
	}
	return NULL;
}

/* Answer a request from a finished call. */
static void
adapter_gemini_answer(struct proc_call *p, struct gemini_call *c)
{
	struct gemini_state	*st = p->agent->adapter->state;
	const char		*last;
	int			 n;

	if (c->result == 0 && st->json)
		adapter_gemini_stderr_json(p);
	if (c->result == 1) {
		adapter_cli_reply(p, c->final != NULL ? c->final : c->text,
		    c->session, c->model, c->in, c->out);
		return;
	}
	if (c->result == -1 || c->error != NULL) {
		adapter_cli_fail(p, c->error, "the run failed",
		    adapter_gemini_category(c->error != NULL ? c->error : ""),
		    c->session);
		return;
	}
	/*
	 * It ended without a result: killed, crashed, cut short, or it
	 * refused its command line, which it says first, before its usage.
	 */
	if ((last = adapter_gemini_usage_error(p, &n)) == NULL)
		last = adapter_stderr_line(p, &n);
	adapter_cli_exited(p, "without a result", last, n);
}

/* A process ended: answer its request (unless it was given up). */
static void
adapter_gemini_done(struct proc_call *p)
{
	struct gemini_call	*c = p->arg;
	json_error_t		 e;
	json_t			*j;

	if (c->doc != NULL) {
		/* An object still open at EOF: it may be complete anyway. */
		if ((j = json_loadb(c->doc, c->doclen, 0, &e)) != NULL) {
			if (json_is_object(j))
				adapter_gemini_event(p, j);
			json_decref(j);
		}
	}
	/*
	 * A resume that did not even start (exit 42, "Error resuming
	 * session") means the session is gone: the next request starts anew.
	 */
	adapter_cli_conversation(p, c->session, c->resumed);
	if (p->msg != NULL)
		adapter_gemini_answer(p, c);
	adapter_cli_done(p);
}

/* Run gemini for one request. */
static void
adapter_gemini_run(struct agent *a, struct msg *m)
{
	struct gemini_state	*st = a->adapter->state;
	struct agent_conf	*ac = a->conf;
	struct gemini_call	*c;
	char			**argv, *prompt, *want;
	size_t			 i, n = 0;

	if ((prompt = adapter_prompt(a, m, st->cli.settings.prompt)) == NULL)
		return;
	/* corral's tools, if any: settings in a home of its own (env). */
	adapter_free_argv(adapter_tools_args(a, "gemini"));
	argv = xcalloc(ac->argc + 8, sizeof *argv);
	for (i = 0; i < ac->argc; i++)
		argv[n++] = ac->argv[i];
	argv[n++] = "-p";
	argv[n++] = "";		/* the prompt comes on stdin */
	argv[n++] = "--output-format";
	argv[n++] = st->json ? "json" : "stream-json";
	c = xcalloc(1, sizeof *c);
	/* The session the request names, else the one conversation's. */
	if ((want = adapter_request_session(m)) != NULL ||
	    (st->cli.one && st->cli.conversation != NULL)) {
		argv[n++] = "--resume";
		argv[n++] = want != NULL ? want : st->cli.conversation;
		c->resumed = 1;
	}
	argv[n] = NULL;
	adapter_cli_spawn(a, m, argv, prompt, c);
	free(argv);
	free(want);
	free(prompt);
}

const struct adapter_ops adapter_gemini_ops = {
	.name = "gemini",
	.per_call = 1,
	.check = adapter_gemini_check,
	.start = adapter_gemini_start,
	.request = adapter_cli_request,
	.cancel = adapter_cli_cancel,
	.stop = adapter_cli_stop,
	.free = adapter_cli_free,
	.ordered = adapter_cli_ordered,
	.resume_session = adapter_cli_resume_session,
};
