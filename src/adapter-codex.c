/*
 * The codex adapter: the Codex CLI as an agent, one `codex exec --json`
 * process per envelope (docs/adapters.md).
 *
 *   agents:
 *     coder:
 *       cmd: [codex, -s, workspace-write]   # flags go after "exec"
 *       adapter:
 *         type: codex
 *         conversation: one       # or each (default): a new thread each
 *         prompt: "{{task}}"      # a template; default: built from the
 *                                 # envelope (docs/adapters.md)
 *         confidence: 0.9
 *         intent: summarize
 *         then: [{intent: finalize, task: "..."}]
 *         price: {input: 1.25, output: 10}   # USD per million tokens
 *         stderr: log             # or debug
 *
 * Each request runs cmd[0] exec cmd[1..] --json --skip-git-repo-check
 * [resume THREAD] -, with the prompt on stdin (no argv size limit, not in
 * ps), stdin then closed.  The JSON lines are read as they come: item
 * events go to the audit log, the last agent_message is the reply's text,
 * turn.completed's usage its trace.cost, turn.failed (or an exit without
 * turn.completed) an error envelope.  With conversation: one every request
 * resumes the thread of the first, one at a time; Codex reports usage
 * cumulated over a thread, so a reply carries the difference.  A request
 * that times out has its process group killed.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

#define CODEX_AUDIT_MAX	400	/* bytes of a text kept in an audit event */

/* A request waiting for its turn in the one conversation. */
struct codex_wait {
	struct msg		*msg;
	TAILQ_ENTRY(codex_wait)	 entry;
};
TAILQ_HEAD(codex_waitq, codex_wait);

struct codex_state {
	/* Settings. */
	int			 one;		/* conversation: one */
	const char		*prompt;
	double			 confidence;
	const char		*intent;
	json_t			*then;
	double			 price_in;	/* USD per million tokens */
	double			 price_out;
	int			 quiet;
	/* The conversation. */
	char			*thread;
	double			 seen_in;	/* its cumulative usage */
	double			 seen_out;
	int			 busy;
	struct codex_waitq	 waitq;
};

/* What one process said so far. */
struct codex_call {
	char		*text;		/* the last agent message */
	char		*error;		/* the last error message */
	char		*thread;
	int		 resumed;	/* ran with resume THREAD */
	int		 completed;
	int		 failed;
	int		 junk;		/* lines that were not JSON */
	double		 in;
	double		 out;
};

static void	adapter_codex_run(struct agent *, struct msg *);

/* Check the codex settings at load time. */
static int
adapter_codex_check(const struct agent_conf *ac, char *why, size_t len)
{
	static const char *keys[] = { "type", "conversation", "prompt",
	    "confidence", "intent", "then", "price", "stderr", NULL };
	json_t		*c = ac->adapter_conf, *v, *e;
	const char	*k;
	size_t		 i;

	json_object_foreach(c, k, v) {
		for (i = 0; keys[i] != NULL; i++)
			if (strcmp(keys[i], k) == 0)
				break;
		if (keys[i] == NULL) {
			snprintf(why, len, "unknown codex setting '%s' "
			    "(conversation, prompt, confidence, intent, then, "
			    "price, stderr)", k);
			return -1;
		}
	}
	v = json_object_get(c, "conversation");
	if (v != NULL && (!json_is_string(v) || (strcmp(json_string_value(v),
	    "one") != 0 && strcmp(json_string_value(v), "each") != 0))) {
		snprintf(why, len, "adapter.conversation must be one (resume one "
		    "thread) or each (a new thread per request)");
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
	if (v != NULL) {
		json_object_foreach(v, k, e) {
			if ((strcmp(k, "input") != 0 && strcmp(k, "output") != 0) ||
			    !json_is_number(e) || json_number_value(e) < 0) {
				snprintf(why, len, "adapter.price takes input and "
				    "output, USD per million tokens");
				return -1;
			}
		}
		if (!json_is_object(v)) {
			snprintf(why, len, "adapter.price must be {input: USD, "
			    "output: USD} per million tokens");
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
		if (strcmp(ac->argv[i], "resume") == 0) {
			snprintf(why, len, "cmd must not name resume: set "
			    "conversation: one instead");
			return -1;
		}
	}
	return 0;
}

/* Read the settings. */
static int
adapter_codex_start(struct agent *a)
{
	struct codex_state	*st;
	json_t			*c = a->conf->adapter_conf, *v;

	if (a->adapter->state != NULL)
		return 0;
	st = xcalloc(1, sizeof *st);
	TAILQ_INIT(&st->waitq);
	v = json_object_get(c, "conversation");
	st->one = v != NULL && strcmp(json_string_value(v), "one") == 0;
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
adapter_codex_num(double v)
{
	if (v == (double)(json_int_t)v && v < 9e15 && v > -9e15)
		return json_integer((json_int_t)v);
	return json_real(v);
}

/* Append a string to a growing text, with a separator between parts. */
static void
adapter_codex_append(char **text, const char *s, const char *sep)
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
adapter_codex_prompt(struct codex_state *st, json_t *req, struct msg *m)
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
	adapter_codex_append(&out, json_string_value(task), "\n\n");
	if (json_is_string(text) && !json_equal(text, task))
		adapter_codex_append(&out, json_string_value(text), "\n\n");
	if (json_is_string(ctx) && json_string_length(ctx) > 0) {
		xasprintf(&s, "Context:\n%s", json_string_value(ctx));
		adapter_codex_append(&out, s, "\n\n");
		free(s);
	}
	if (json_array_size(res) > 0) {
		adapter_codex_append(&out, "Resources:", "\n\n");
		json_array_foreach(res, i, r) {
			const char *h = json_string_value(json_object_get(r,
			    "hint"));

			xasprintf(&line, "- %s %s%s%s", json_string_value(
			    json_object_get(r, "type")), json_string_value(
			    json_object_get(r, "id")), h != NULL ? ": " : "",
			    h != NULL ? h : "");
			adapter_codex_append(&out, line, "\n");
			free(line);
		}
	}
	if (data != NULL && !json_is_null(data) &&
	    (s = json_dumps(data, JSON_INDENT(1) | JSON_ENCODE_ANY)) != NULL) {
		xasprintf(&line, "Data:\n%s", s);
		adapter_codex_append(&out, line, "\n\n");
		free(line);
		free(s);
	}
	return out;
}

/* Free what a call collected. */
static void
adapter_codex_call_free(struct codex_call *c)
{
	if (c == NULL)
		return;
	free(c->text);
	free(c->error);
	free(c->thread);
	free(c);
}

/* Replace a string. */
static void
adapter_codex_set(char **field, const char *s)
{
	free(*field);
	*field = s != NULL ? xstrdup(s) : NULL;
}

/* Record an item event in the audit log, its long texts cut short. */
static void
adapter_codex_audit_item(struct proc *p, const char *type, json_t *item)
{
	json_t		*f;
	const char	*s;
	size_t		 n;

	if (!auditlog_enabled())
		return;
	f = json_pack("{s:s, s:s, s:s?, s:O?, s:O?, s:O?, s:O?, s:O?}",
	    "adapter", "codex", "kind", type, "request", p->msg != NULL ?
	    p->msg->id : NULL, "item_id", json_object_get(item, "id"),
	    "item_type", json_object_get(item, "type"), "command",
	    json_object_get(item, "command"), "exit_code", json_object_get(item,
	    "exit_code"), "status", json_object_get(item, "status"));
	if (f == NULL)
		return;
	if ((s = json_string_value(json_object_get(item, "text"))) != NULL) {
		n = strlen(s);
		json_object_set_new(f, "text", util_json_text(s,
		    n > CODEX_AUDIT_MAX ? CODEX_AUDIT_MAX : n));
	}
	auditlog_json("adapter_event", p->agent->id, f);
}

/* One line of codex's stdout. */
static void
adapter_codex_line(struct proc *p, const char *line, size_t len)
{
	struct codex_call	*c = p->arg;
	struct agent		*a = p->agent;
	json_error_t		 e;
	json_t			*j, *item, *u;
	const char		*type, *it, *s;
	char			 esc[256];

	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	if (len == 0)
		return;
	if ((j = json_loadb(line, len, 0, &e)) == NULL || !json_is_object(j)) {
		if (c->junk++ == 0) {
			log_escape(esc, sizeof esc, line, len);
			log_warnx("agent %s: codex wrote a line that is not a "
			    "JSON object, ignored: %s", a->id, esc);
		}
		if (j != NULL)
			json_decref(j);
		return;
	}
	type = json_string_value(json_object_get(j, "type"));
	if (type == NULL)
		type = "";
	if (strcmp(type, "thread.started") == 0)
		adapter_codex_set(&c->thread, json_string_value(
		    json_object_get(j, "thread_id")));
	else if (strncmp(type, "item.", 5) == 0) {
		item = json_object_get(j, "item");
		it = json_string_value(json_object_get(item, "type"));
		if (strcmp(type, "item.completed") == 0 && it != NULL &&
		    strcmp(it, "agent_message") == 0)
			adapter_codex_set(&c->text, json_string_value(
			    json_object_get(item, "text")));
		else if (strcmp(type, "item.completed") == 0 && it != NULL &&
		    strcmp(it, "error") == 0 && (s = json_string_value(
		    json_object_get(item, "message"))) != NULL)
			log_warnx("agent %s: codex: %.300s", a->id, s);
		adapter_codex_audit_item(p, type, item);
	} else if (strcmp(type, "turn.completed") == 0) {
		c->completed = 1;
		u = json_object_get(j, "usage");
		c->in = json_number_value(json_object_get(u, "input_tokens"));
		c->out = json_number_value(json_object_get(u, "output_tokens"));
	} else if (strcmp(type, "turn.failed") == 0) {
		c->failed = 1;
		s = json_string_value(json_object_get(json_object_get(j,
		    "error"), "message"));
		if (s != NULL)
			adapter_codex_set(&c->error, s);
	} else if (strcmp(type, "error") == 0) {
		/* Also "Reconnecting... 1/5": only the last one counts. */
		s = json_string_value(json_object_get(j, "message"));
		if (s != NULL) {
			adapter_codex_set(&c->error, s);
			log_info("agent %s: codex: %.300s", a->id, s);
		}
	}
	json_decref(j);
}

/*
 * The category of an API error message: REJECTED for a client error (a
 * 4xx status but 408 and 429, or an invalid_request body), else UNAVAILABLE.
 */
static const char *
adapter_codex_category(const char *msg)
{
	json_error_t	 e;
	json_t		*j;
	const char	*p, *t;
	int		 status = 0;

	if (msg[0] == '{' && (j = json_loads(msg, 0, &e)) != NULL) {
		t = json_string_value(json_object_get(json_object_get(j,
		    "error"), "type"));
		status = t != NULL && strstr(t, "invalid_request") != NULL;
		json_decref(j);
		if (status)
			return "REJECTED";
	}
	if ((p = strstr(msg, "status")) != NULL) {
		p += 6;
		while (*p == ':' || *p == ' ')
			p++;
		status = atoi(p);
	}
	if (status >= 400 && status < 500 && status != 408 && status != 429)
		return "REJECTED";
	return "UNAVAILABLE";
}

/* Answer a request from a finished call. */
static void
adapter_codex_answer(struct agent *a, struct proc *p, struct codex_call *c)
{
	struct codex_state	*st = a->adapter->state;
	struct msg		*m = p->msg;
	json_t			*env, *content, *extra;
	char			 why[768], status[64];
	const char		*last, *s;
	double			 in, out;
	size_t			 n;

	if (c->completed) {
		in = c->in;
		out = c->out;
		if (c->resumed && st->thread != NULL && c->thread != NULL &&
		    strcmp(st->thread, c->thread) == 0 && in >= st->seen_in &&
		    out >= st->seen_out) {
			/* Cumulative over the thread: this turn's share. */
			in -= st->seen_in;
			out -= st->seen_out;
		}
		if (st->one) {
			st->seen_in = c->in;
			st->seen_out = c->out;
		}
		env = adapter_envelope(a, m, st->intent, 0);
		content = json_object_get(env, "content");
		json_object_set_new(content, "text", util_json_text(c->text !=
		    NULL ? c->text : "", c->text != NULL ? strlen(c->text) : 0));
		if (c->thread != NULL)
			json_object_set_new(content, "data", json_pack("{s:s}",
			    "thread_id", c->thread));
		json_object_set_new(env, "confidence", json_pack("{s:f}",
		    "score", st->confidence));
		json_object_set_new(json_object_get(env, "trace"), "cost",
		    json_pack("{s:o, s:o, s:o}", "input_tokens",
		    adapter_codex_num(in), "output_tokens", adapter_codex_num(
		    out), "usd", adapter_codex_num((in * st->price_in + out *
		    st->price_out) / 1e6)));
		if (st->then != NULL && json_array_size(st->then) > 0)
			json_object_set_new(env, "outputs", json_pack("{s:O}",
			    "next_actions", st->then));
		adapter_reply(a, m, env);
		return;
	}
	if (c->failed || c->error != NULL) {
		snprintf(why, sizeof why, "codex: %s", c->error != NULL ?
		    c->error : "the turn failed");
		adapter_reply_error(a, m, "api_error", adapter_codex_category(
		    c->error != NULL ? c->error : ""), why, json_pack("{s:s?}",
		    "thread_id", c->thread));
		return;
	}
	/*
	 * It ended without saying how the turn went.  Its stderr ends with
	 * a backtrace after the "Error: " line that says why, if any.
	 */
	util_describe_status(status, sizeof status, p->status);
	n = p->err_len;
	while (n > 0 && p->err_tail[n - 1] == '\n')
		n--;
	last = p->err_tail + n;
	while (last > p->err_tail && last[-1] != '\n')
		last--;
	for (s = p->err_tail; (s = strstr(s, "Error: ")) != NULL; s++) {
		if (s == p->err_tail || s[-1] == '\n') {
			last = s;
			n = (size_t)(strchrnul(s, '\n') - p->err_tail);
		}
	}
	snprintf(why, sizeof why, "codex %s without finishing the turn%s%.*s",
	    status, last < p->err_tail + n ? ": " : "",
	    (int)(p->err_tail + n - last), last);
	extra = json_pack("{s:o}", "stderr", util_json_text(p->err_tail,
	    p->err_len));
	adapter_reply_error(a, m, "exit_status", "INTERNAL", why, extra);
}

/* Start the next waiting request of the one conversation. */
static void
adapter_codex_next(struct agent *a)
{
	struct codex_state	*st = a->adapter->state;
	struct codex_wait	*w;
	struct msg		*m;

	st->busy = 0;
	if (a->state == AS_STOPPING || (w = TAILQ_FIRST(&st->waitq)) == NULL)
		return;
	TAILQ_REMOVE(&st->waitq, w, entry);
	m = w->msg;
	free(w);
	adapter_codex_run(a, m);
}

/* A process ended: answer its request (unless it was given up). */
static void
adapter_codex_done(struct proc *p)
{
	struct agent		*a = p->agent;
	struct codex_state	*st = a->adapter->state;
	struct codex_call	*c = p->arg;

	if (c->thread != NULL && st->one && (st->thread == NULL ||
	    strcmp(st->thread, c->thread) != 0)) {
		adapter_codex_set(&st->thread, c->thread);
		st->seen_in = st->seen_out = 0;
		log_info("agent %s: codex thread %s", a->id, c->thread);
	} else if (c->resumed && c->thread == NULL && p->msg != NULL) {
		/* It could not resume the thread: start a new one next. */
		log_warnx("agent %s: codex could not resume thread %s; the "
		    "next request starts a new one", a->id, st->thread);
		adapter_codex_set(&st->thread, NULL);
		st->seen_in = st->seen_out = 0;
	}
	if (p->msg != NULL)
		adapter_codex_answer(a, p, c);
	p->arg = NULL;
	adapter_codex_call_free(c);
	adapter_proc_done(p);
	if (st->one)
		adapter_codex_next(a);
}

/* Run codex for one request. */
static void
adapter_codex_run(struct agent *a, struct msg *m)
{
	struct codex_state	*st = a->adapter->state;
	struct agent_conf	*ac = a->conf;
	struct codex_call	*c;
	struct proc		*p;
	json_t			*req;
	char			**argv, *prompt, why[512];
	size_t			 i, n = 0;
	int			 has_json = 0, has_skip = 0;

	if ((req = adapter_request_json(m)) == NULL) {
		adapter_reply_error(a, m, "bad_request", "INTERNAL", "the "
		    "request is not JSON", NULL);
		return;
	}
	prompt = adapter_codex_prompt(st, req, m);
	json_decref(req);

	for (i = 1; i < ac->argc; i++) {
		if (strcmp(ac->argv[i], "--json") == 0)
			has_json = 1;
		else if (strcmp(ac->argv[i], "--skip-git-repo-check") == 0)
			has_skip = 1;
	}
	argv = xcalloc(ac->argc + 8, sizeof *argv);
	argv[n++] = ac->argv[0];
	if (ac->argc < 2 || strcmp(ac->argv[1], "exec") != 0)
		argv[n++] = "exec";
	for (i = 1; i < ac->argc; i++)
		argv[n++] = ac->argv[i];
	if (!has_json)
		argv[n++] = "--json";
	if (!has_skip)
		argv[n++] = "--skip-git-repo-check";
	c = xcalloc(1, sizeof *c);
	if (st->one && st->thread != NULL) {
		argv[n++] = "resume";
		argv[n++] = st->thread;
		c->resumed = 1;
	}
	argv[n++] = "-";	/* the prompt comes on stdin */
	argv[n] = NULL;

	p = adapter_proc_new(a, m);
	p->done = adapter_codex_done;
	p->line_cb = adapter_codex_line;
	p->arg = c;
	p->quiet_stderr = st->quiet;
	st->busy = 1;
	if (proc_start(p, a, argv, prompt, strlen(prompt), a->conf->max_line,
	    why, sizeof why) != 0) {
		p->flags |= PROC_DONE;
		p->arg = NULL;
		adapter_codex_call_free(c);
		adapter_reply_error(a, m, "spawn_failed", "INTERNAL", why, NULL);
		adapter_proc_done(p);
		if (st->one)
			adapter_codex_next(a);
	}
	free(argv);
	free(prompt);
}

/* Take a request: run it, or queue it behind the conversation's turn. */
static void
adapter_codex_request(struct agent *a, struct msg *m)
{
	struct codex_state	*st = a->adapter->state;
	struct codex_wait	*w;

	if (st->one && st->busy) {
		w = xcalloc(1, sizeof *w);
		w->msg = m;
		TAILQ_INSERT_TAIL(&st->waitq, w, entry);
		return;
	}
	adapter_codex_run(a, m);
}

/* A request is given up: drop it from the queue, or kill its process. */
static void
adapter_codex_cancel(struct agent *a, struct msg *m)
{
	struct codex_state	*st = a->adapter->state;
	struct codex_wait	*w;
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
			p->msg = NULL;
			log_info("agent %s: killing codex (pid %ld): request %s "
			    "given up", a->id, (long)p->hostpid, m->id);
			proc_kill(p);
		}
	}
}

/* Stop: forget the queue, kill every process; returns how many run. */
static int
adapter_codex_stop(struct agent *a)
{
	struct codex_state	*st = a->adapter->state;
	struct codex_wait	*w;
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
adapter_codex_free(struct agent *a)
{
	struct codex_state	*st = a->adapter->state;
	struct codex_wait	*w;
	struct proc		*p;

	TAILQ_FOREACH(p, &a->adapter->procs, entry) {
		adapter_codex_call_free(p->arg);
		p->arg = NULL;
	}
	if (st == NULL)
		return;
	while ((w = TAILQ_FIRST(&st->waitq)) != NULL) {
		TAILQ_REMOVE(&st->waitq, w, entry);
		free(w);
	}
	free(st->thread);
	free(st);
	a->adapter->state = NULL;
}

const struct adapter_ops adapter_codex_ops = {
	.name = "codex",
	.per_call = 1,
	.check = adapter_codex_check,
	.start = adapter_codex_start,
	.request = adapter_codex_request,
	.cancel = adapter_codex_cancel,
	.stop = adapter_codex_stop,
	.free = adapter_codex_free,
};
