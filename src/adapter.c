/*
 * Adapters: agents that do not speak envelopes themselves (docs/adapters.md).
 *
 * An agent's workflow entry may name an adapter.  The adapter sits between
 * the engine and the tool: it turns each request envelope into what the
 * tool reads, and what the tool writes back into one reply envelope.  The
 * default, "ndjson", is no adapter at all: the agent speaks envelopes.
 *
 * Two kinds exist.  Long-lived adapters (claude, mcp) run one process for
 * the agent, started and supervised like any agent; they own every line
 * it writes.  Per-call adapters (exec, codex, gemini) run one process per
 * request (proc.c) and none in between: their agent has no process of its
 * own, is ready at once, and takes up to max_inflight requests at a time.
 *
 * This file holds the calls into an agent's adapter and what adapters
 * share: checking and reading the settings they have in common, building
 * prompts and reply envelopes, templates over the request, per-call
 * bookkeeping.  What the CLI-per-request adapters share besides is in
 * adapter-cli.c; the table of adapters is adapter-table.c.  What an
 * adapter has to say to the modules above (its tool is ready, a reply,
 * its last call ended) goes through agent_news and the reply callback
 * the engine registers (adapter_on_reply).
 */

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

static adapter_reply_cb	adapter_reply_hook;
static adapter_progress_cb	adapter_progress_hook;
static adapter_find_cb		adapter_find_hook;

/* Register who takes adapters' replies: the engine. */
void
adapter_on_reply(adapter_reply_cb cb)
{
	adapter_reply_hook = cb;
}

/* Register who takes what tools say while they work: the engine. */
void
adapter_on_progress(adapter_progress_cb cb)
{
	adapter_progress_hook = cb;
}

/* Register who knows which requests an agent works on: the engine. */
void
adapter_on_find(adapter_find_cb cb)
{
	adapter_find_hook = cb;
}

/*
 * The request of this id that the agent still works on, on this attempt
 * (it may have timed out, or come back as a retry, meanwhile), or NULL.
 */
struct msg *
adapter_find(struct agent *a, const char *id, unsigned int attempts)
{
	return adapter_find_hook != NULL ? adapter_find_hook(a, id, attempts) :
	    NULL;
}

/*
 * The tool said something about request m while it works on it (text it
 * streams, a tool it calls): progress, which the engine passes on, rate
 * limited.  delta: the text continues the previous piece (a stream of
 * text), rather than being a line of its own.
 */
void
adapter_progress(struct agent *a, struct msg *m, const char *text, int delta)
{
	if (m != NULL && text != NULL && *text != '\0' &&
	    adapter_progress_hook != NULL)
		adapter_progress_hook(a, m, text, delta);
}

/* adapter_progress of a line made with a format. */
void
adapter_progressf(struct agent *a, struct msg *m, const char *fmt, ...)
{
	va_list	 ap;
	char	*s;

	if (m == NULL || adapter_progress_hook == NULL)
		return;
	va_start(ap, fmt);
	if (xvasprintf(&s, fmt, ap) == -1)
		s = NULL;
	va_end(ap);
	if (s != NULL)
		adapter_progress(a, m, s, 0);
	free(s);
}

/*
 * Refuse a setting the adapter does not know: keys lists them (besides
 * "type"), and the message lists them too, so that a typo shows its fix.
 */
int
adapter_check_keys(json_t *c, const char *name, const char *const *keys,
    char *why, size_t len)
{
	json_t		*v;
	const char	*k;
	char		 list[256];
	size_t		 i;

	json_object_foreach(c, k, v) {
		if (strcmp(k, "type") == 0)
			continue;
		for (i = 0; keys[i] != NULL; i++)
			if (strcmp(keys[i], k) == 0)
				break;
		if (keys[i] != NULL)
			continue;
		list[0] = '\0';
		for (i = 0; keys[i] != NULL; i++) {
			if (i > 0)
				strlcat(list, ", ", sizeof list);
			strlcat(list, keys[i], sizeof list);
		}
		snprintf(why, len, "unknown %s setting '%s' (%s)", name, k, list);
		return -1;
	}
	return 0;
}

/* Check that a setting, if given, is one of two words; else say msg. */
int
adapter_check_word(json_t *c, const char *key, const char *w1,
    const char *w2, const char *msg, char *why, size_t len)
{
	json_t	*v = json_object_get(c, key);

	if (v != NULL && (!json_is_string(v) || (strcmp(json_string_value(v),
	    w1) != 0 && strcmp(json_string_value(v), w2) != 0))) {
		snprintf(why, len, "%s", msg);
		return -1;
	}
	return 0;
}

/*
 * Check the settings of adapter_settings: prompt, confidence, intent and
 * then.  An adapter without a prompt refuses it as an unknown key first.
 */
int
adapter_check_common(json_t *c, char *why, size_t len)
{
	json_t	*v, *e, *in;
	size_t	 i;
	char	 t[300];

	v = json_object_get(c, "prompt");
	if (v != NULL && !json_is_string(v)) {
		snprintf(why, len, "adapter.prompt must be a template string");
		return -1;
	}
	if (v != NULL && adapter_template_check(json_string_value(v), t,
	    sizeof t) != 0) {
		snprintf(why, len, "adapter.prompt: %s", t);
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
	if (v != NULL && (!json_is_string(v) || protocol_intent(
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
		in = json_object_get(e, "intent");
		if (!json_is_object(e) || !json_is_string(in) || protocol_intent(
		    json_string_value(in), json_string_length(in)) < 0 ||
		    !json_is_string(json_object_get(e, "task"))) {
			snprintf(why, len, "adapter.then[%zu] needs an intent and "
			    "a task", i);
			return -1;
		}
	}
	return 0;
}

/* Read a duration setting: seconds as a number or a string like 30s. */
int
adapter_duration(json_t *v, double *out)
{
	if (json_is_number(v) && json_number_value(v) >= 0) {
		*out = json_number_value(v);
		return 0;
	}
	if (json_is_string(v))
		return util_parse_duration(json_string_value(v), out);
	return -1;
}

/* Read the checked settings every adapter has (adapter_check_common). */
void
adapter_settings(struct adapter_settings *s, json_t *c)
{
	json_t	*v;

	s->prompt = json_string_value(json_object_get(c, "prompt"));
	v = json_object_get(c, "confidence");
	s->confidence = v != NULL ? json_number_value(v) : 0.9;
	s->intent = json_string_value(json_object_get(c, "intent"));
	s->then = json_object_get(c, "then");
}

/* Attach an adapter's operations to an agent (NULL: it speaks envelopes). */
void
adapter_attach(struct agent *a, const struct adapter_ops *ops)
{
	if (ops == NULL)
		return;
	a->adapter = xcalloc(1, sizeof *a->adapter);
	a->adapter->ops = ops;
	TAILQ_INIT(&a->adapter->procs);
}

/* Return nonzero if a tool's adapter speaks for the agent. */
int
adapter_attached(const struct agent *a)
{
	return a->adapter != NULL;
}

/*
 * What the adapter adds to the environment of the agent's processes
 * (NULL-terminated, the adapter's), or NULL.
 */
char **
adapter_env(const struct agent *a)
{
	return a->adapter != NULL ? a->adapter->env : NULL;
}

/* What the adapter knows of its tool, for map/agents/get (new), or NULL. */
json_t *
adapter_metadata(struct agent *a)
{
	if (a->adapter == NULL || a->adapter->ops->metadata == NULL)
		return NULL;
	return a->adapter->ops->metadata(a);
}

/* Return nonzero if the agent runs a process per request. */
int
adapter_per_call(const struct agent *a)
{
	return a->adapter != NULL && a->adapter->ops->per_call;
}

/*
 * Start the adapter: after the long-lived process was spawned, or at
 * once for per-call adapters.  Returns nonzero when the adapter itself
 * will say when the agent is ready (adapter_ready).
 */
int
adapter_start(struct agent *a)
{
	if (a->adapter == NULL || a->adapter->ops->start == NULL)
		return 0;
	return a->adapter->ops->start(a);
}

/* The adapter finished its own handshake with the tool. */
void
adapter_ready(struct agent *a, const char *why)
{
	agent_news(a, AE_HANDSHAKE, why);
}

/* Ping the tool, if the adapter knows how (heartbeats). */
void
adapter_ping(struct agent *a)
{
	if (a->adapter->ops->ping != NULL)
		a->adapter->ops->ping(a);
}

/* Give the tool a request. */
void
adapter_request(struct agent *a, struct msg *m)
{
	agent_count_in(a);
	a->adapter->ops->request(a, m);
}

/* A line from a long-lived tool.  Returns 0 when the adapter took it. */
int
adapter_line(struct agent *a, const char *line, size_t len)
{
	if (a->adapter == NULL || a->adapter->ops->line == NULL)
		return -1;
	return a->adapter->ops->line(a, line, len);
}

/*
 * Return nonzero if the adapter wants request m back once its agent has
 * restarted (it asked for the restart, to resume another session),
 * rather than have it fail with the process.
 */
int
adapter_keeps(struct agent *a, struct msg *m)
{
	if (a->adapter == NULL || a->adapter->ops->keeps == NULL)
		return 0;
	return a->adapter->ops->keeps(a, m);
}

/*
 * Return nonzero if the agent's requests are turns of one conversation
 * (claude; codex and gemini with conversation: one): a retry must not
 * let a later turn overtake it.
 */
int
adapter_ordered(struct agent *a)
{
	if (a->adapter == NULL || a->adapter->ops->ordered == NULL)
		return 0;
	return a->adapter->ops->ordered(a);
}

/*
 * Continue session with a's requests that name none (a resumed run:
 * the session its recorded replies named).  Returns 0, or -1 when a's
 * adapter keeps no one conversation (none, or a new one per request).
 */
int
adapter_resume_session(struct agent *a, const char *session)
{
	if (a->adapter == NULL || a->adapter->state == NULL ||
	    a->adapter->ops->resume_session == NULL)
		return -1;
	return a->adapter->ops->resume_session(a, session);
}

/* A request expired or is given up: the tool should stop on it. */
void
adapter_cancel(struct agent *a, struct msg *m)
{
	if (a->adapter != NULL && a->adapter->ops->cancel != NULL)
		a->adapter->ops->cancel(a, m);
}

/* Stop every per-call process; returns how many are still running. */
int
adapter_stop(struct agent *a)
{
	struct proc_call	*p;

	if (a->adapter == NULL)
		return 0;
	if (a->adapter->ops->stop != NULL)
		a->adapter->ops->stop(a);
	a->adapter->stopping = 1;
	TAILQ_FOREACH(p, &a->adapter->procs, entry) {
		p->msg = NULL;
		proc_call_kill(p);
	}
	return (int)a->adapter->nprocs;
}

/* Free the adapter and anything it still holds. */
void
adapter_free(struct agent *a)
{
	struct proc_call	*p;

	if (a->adapter == NULL)
		return;
	if (a->adapter->ops->free != NULL)
		a->adapter->ops->free(a);
	while ((p = TAILQ_FIRST(&a->adapter->procs)) != NULL) {
		TAILQ_REMOVE(&a->adapter->procs, p, entry);
		proc_call_free(p);
	}
	adapter_free_argv(a->adapter->env);
	free(a->adapter);
	a->adapter = NULL;
}

/* Parse a request's envelope with jansson (adapters are not hot paths). */
json_t *
adapter_request_json(struct msg *m)
{
	json_error_t	e;

	return json_loadb(m->line, m->len, CORRAL_JSON_LOAD, &e);
}

/*
 * The session a request asks to continue (inputs.parameters.session: a
 * CLI's session or thread id from an earlier reply's content.data), as a
 * new string, or NULL.
 */
char *
adapter_request_session(struct msg *m)
{
	json_t	*req, *v;
	char	*s = NULL;

	if ((req = adapter_request_json(m)) == NULL)
		return NULL;
	v = json_object_get(json_object_get(json_object_get(req, "inputs"),
	    "parameters"), "session");
	if (json_is_string(v) && json_string_length(v) > 0 &&
	    json_string_length(v) < 256)
		s = xstrdup(json_string_value(v));
	json_decref(req);
	return s;
}

/*
 * The start of a reply envelope to m: protocol, role, agent, timestamp,
 * intent (NULL: the request's), task, an empty content of the given type
 * (0 text, 1 json, 2 error), trace with a new id and parents [m's id].
 */
json_t *
adapter_envelope(struct agent *a, struct msg *m, const char *intent,
    int ctype)
{
	static const char *ctypes[] = { "text", "json", "error",
	    "tool_result" };
	json_t		*req, *task;
	char		 ts[40], id[CORRAL_ID_MAX];
	json_t		*env;

	util_rfc3339(ts, sizeof ts);
	protocol_new_id(id, sizeof id);
	req = adapter_request_json(m);
	task = req != NULL ? json_object_get(req, "task") : NULL;
	env = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:s, s:s, s:O, "
	    "s:{s:s}, s:{s:s, s:[s]}}",
	    "protocol", CORRAL_ENVELOPE_PROTOCOL, "role", "agent",
	    "agent", "id", a->id, "name", a->conf->name, "model",
	    a->conf->adapter,
	    "timestamp", ts,
	    "intent", intent != NULL ? intent : protocol_intent_name(m->intent),
	    "task", task != NULL && json_is_string(task) ? task :
	    json_string("adapted request"),
	    "content", "type", ctypes[ctype],
	    "trace", "id", id, "parents", m->id);
	if (req != NULL)
		json_decref(req);
	if (env == NULL)
		fatalx("adapter_envelope: json_pack");
	return env;
}

/*
 * The start of a successful reply to m: adapter_envelope with the
 * settings' intent, confidence and, if any, next_actions.
 */
json_t *
adapter_envelope_ok(struct agent *a, struct msg *m,
    const struct adapter_settings *s, int ctype)
{
	json_t	*env;

	env = adapter_envelope(a, m, s->intent, ctype);
	json_object_set_new(env, "confidence", json_pack("{s:f}", "score",
	    s->confidence));
	if (s->then != NULL && json_array_size(s->then) > 0)
		json_object_set_new(env, "outputs", json_pack("{s:O}",
		    "next_actions", s->then));
	return env;
}

/* A JSON number: an integer when the value is whole (token counts). */
json_t *
adapter_number(double v)
{
	if (v < 9e15 && v > -9e15 && v == (double)(json_int_t)v)
		return json_integer((json_int_t)v);
	return json_real(v);
}

/* Append a string to a growing text, with a separator between parts. */
void
adapter_append(char **text, const char *s, const char *sep)
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

/* The prompt built from a request, when the entry has no template. */
static char *
adapter_prompt_build(json_t *req, struct msg *m)
{
	json_t		*task, *text, *ctx, *res, *data, *r;
	char		*out = NULL, *s, *line;
	const char	*h;
	size_t		 i;

	task = json_object_get(req, "task");
	text = json_object_get(json_object_get(req, "content"), "text");
	ctx = json_object_get(json_object_get(req, "inputs"), "context");
	res = json_object_get(json_object_get(req, "inputs"), "resources");
	data = json_object_get(json_object_get(req, "content"), "data");
	xasprintf(&out, "Intent: %s", protocol_intent_name(m->intent));
	adapter_append(&out, json_string_value(task), "\n\n");
	if (json_is_string(text) && !json_equal(text, task))
		adapter_append(&out, json_string_value(text), "\n\n");
	if (json_is_string(ctx) && json_string_length(ctx) > 0) {
		xasprintf(&s, "Context:\n%s", json_string_value(ctx));
		adapter_append(&out, s, "\n\n");
		free(s);
	}
	if (json_array_size(res) > 0) {
		adapter_append(&out, "Resources:", "\n\n");
		json_array_foreach(res, i, r) {
			h = json_string_value(json_object_get(r, "hint"));
			xasprintf(&line, "- %s %s%s%s", json_string_value(
			    json_object_get(r, "type")), json_string_value(
			    json_object_get(r, "id")), h != NULL ? ": " : "",
			    h != NULL ? h : "");
			adapter_append(&out, line, "\n");
			free(line);
		}
	}
	if (data != NULL && !json_is_null(data) &&
	    (s = jsonw_dumps(data, JSON_INDENT(1) | JSON_ENCODE_ANY)) != NULL) {
		xasprintf(&line, "Data:\n%s", s);
		adapter_append(&out, line, "\n\n");
		free(line);
		free(s);
	}
	return out;
}

/*
 * The prompt for a request to an AI CLI: the template if the entry has
 * one, else the intent, the task, content.text, inputs.context,
 * inputs.resources and content.data, each when present (docs/adapters.md).
 * NULL when the request is not JSON: it has been answered with an error.
 */
char *
adapter_prompt(struct agent *a, struct msg *m, const char *tmpl)
{
	json_t	*req;
	char	*prompt;

	if ((req = adapter_request_json(m)) == NULL) {
		adapter_reply_error(a, m, "bad_request", "INTERNAL", "the "
		    "request is not JSON", NULL);
		return NULL;
	}
	if (tmpl != NULL)
		prompt = adapter_template(tmpl, req, m);
	else
		prompt = adapter_prompt_build(req, m);
	json_decref(req);
	return prompt;
}

/*
 * The last line of what a process wrote on stderr, which says most about
 * why it failed: its start, and its length in *len (0: none).
 */
const char *
adapter_stderr_line(const struct proc_call *p, int *len)
{
	const char	*last, *tail;
	size_t		 n;

	tail = proc_stderr_tail(&p->proc, &n);

	while (n > 0 && tail[n - 1] == '\n')
		n--;
	last = tail + n;
	while (last > tail && last[-1] != '\n')
		last--;
	*len = (int)(tail + n - last);
	return last;
}

/* Hand a reply envelope (a stolen reference) to the engine. */
void
adapter_reply(struct agent *a, struct msg *m, json_t *env)
{
	char	*s;

	s = jsonw_dumps(env, CORRAL_JSON_FLAGS);
	json_decref(env);
	if (s == NULL)
		fatalx("adapter_reply: json_dumps");
	if (adapter_reply_hook != NULL)
		adapter_reply_hook(a, m, s, strlen(s));
	free(s);
}

/*
 * Answer m with an error envelope from the tool: the branch of the work
 * ends in this error (code, category, message, extra data merged in).
 */
void
adapter_reply_error(struct agent *a, struct msg *m, const char *code,
    const char *category, const char *message, json_t *extra)
{
	json_t	*env, *content, *data;

	env = adapter_envelope(a, m, NULL, 2);
	content = json_object_get(env, "content");
	json_object_set_new(content, "text", jsonw_text(message,
	    strlen(message)));
	data = json_pack("{s:s, s:s, s:o, s:b}", "code", code, "category",
	    category, "message", jsonw_text(message, strlen(message)),
	    "retryable", strcmp(category, "TIMEOUT") == 0 ||
	    strcmp(category, "UNAVAILABLE") == 0);
	if (extra != NULL) {
		json_object_update(data, extra);
		json_decref(extra);
	}
	json_object_set_new(content, "data", data);
	adapter_reply(a, m, env);
}

/* The filters a placeholder may apply, {{path | NAME}}, in docs order. */
static const char *const adapter_filters[] = { "lines", "json", "shell",
    NULL };

/*
 * The value at a dotted path of the request (a new reference), or NULL.
 * *raw is set for {{envelope}}: its bytes go in as the agent got them.
 */
static json_t *
adapter_template_lookup(json_t *req, const char *path, size_t len,
    const struct msg *m, int *raw)
{
	json_t	*v = req;
	char	 key[128];
	size_t	 i, start = 0;

	*raw = 0;
	/* Without a request (a launcher's template) every path is plain. */
	if (m != NULL && len == 8 && memcmp(path, "envelope", 8) == 0) {
		*raw = 1;
		return json_incref(req);
	}
	if (m != NULL && len == 2 && memcmp(path, "id", 2) == 0)
		return json_string(m->id);
	for (i = 0; i <= len && v != NULL; i++) {
		if (i < len && path[i] != '.')
			continue;
		if (i - start >= sizeof key)
			return NULL;
		memcpy(key, path + start, i - start);
		key[i - start] = '\0';
		v = json_object_get(v, key);
		start = i + 1;
	}
	return json_incref(v);
}

/* A value as text: a string as it is, anything else as compact JSON. */
static void
adapter_template_text(struct ndjson_writer *w, json_t *v)
{
	char	*s;

	if (v == NULL || json_is_null(v))
		return;
	if (json_is_string(v)) {
		ndjson_writer_add(w, json_string_value(v),
		    json_string_length(v));
		return;
	}
	if ((s = jsonw_dumps(v, CORRAL_JSON_FLAGS | JSON_ENCODE_ANY)) != NULL) {
		ndjson_writer_add(w, s, strlen(s));
		free(s);
	}
}

/* A value as one word for sh: in single quotes, ' as '\''. */
static void
adapter_template_quote(struct ndjson_writer *w, json_t *v)
{
	struct ndjson_writer	 t;
	size_t			 i;

	ndjson_writer_init(&t, 0, 1);
	adapter_template_text(&t, v);
	ndjson_writer_add(w, "'", 1);
	for (i = 0; i < t.tail; i++) {
		if (t.buf[i] == '\'')
			ndjson_writer_add(w, "'\\''", 4);
		else
			ndjson_writer_add(w, t.buf + i, 1);
	}
	ndjson_writer_add(w, "'", 1);
	ndjson_writer_free(&t);
}

/*
 * Apply filter name (n bytes) to v (taken): lines, one element of a list
 * a line, each ended by a newline; json, the value as JSON, even a
 * string; shell, single-quoted for sh, a list as words.  A new string;
 * an unknown filter leaves v as it is.
 */
static json_t *
adapter_template_filter(json_t *v, const char *name, size_t n)
{
	struct ndjson_writer	 w;
	json_t			*e, *out;
	size_t			 i;
	char			*s;

	ndjson_writer_init(&w, 0, 1);
	if (n == 5 && memcmp(name, "lines", 5) == 0) {
		if (json_is_array(v)) {
			json_array_foreach(v, i, e) {
				adapter_template_text(&w, e);
				ndjson_writer_add(&w, "\n", 1);
			}
		} else if (v != NULL && !json_is_null(v)) {
			adapter_template_text(&w, v);
			if (w.tail > 0 && w.buf[w.tail - 1] != '\n')
				ndjson_writer_add(&w, "\n", 1);
		}
	} else if (n == 4 && memcmp(name, "json", 4) == 0) {
		s = jsonw_dumps(v != NULL ? v : json_null(), CORRAL_JSON_FLAGS |
		    JSON_ENCODE_ANY);
		if (s != NULL)
			ndjson_writer_add(&w, s, strlen(s));
		free(s);
	} else if (n == 5 && memcmp(name, "shell", 5) == 0) {
		if (json_is_array(v)) {
			json_array_foreach(v, i, e) {
				if (i > 0)
					ndjson_writer_add(&w, " ", 1);
				adapter_template_quote(&w, e);
			}
		} else
			adapter_template_quote(&w, v);
	} else {
		/* A request's own template (mcp arguments): left as it is. */
		ndjson_writer_free(&w);
		return v;
	}
	json_decref(v);
	out = jsonw_text(w.buf != NULL ? w.buf : "", w.tail);
	ndjson_writer_free(&w);
	return out;
}

/* The next "| NAME" of a placeholder's text: its name, or NULL at the end. */
static const char *
adapter_template_next(const char **p, const char *end, size_t *n)
{
	const char	*name;

	while (*p < end && **p == ' ')
		(*p)++;
	if (*p >= end || **p != '|')
		return NULL;
	for ((*p)++; *p < end && **p == ' '; (*p)++)
		;
	name = *p;
	while (*p < end && **p != ' ' && **p != '|')
		(*p)++;
	*n = (size_t)(*p - name);
	return name;
}

/*
 * Append one placeholder's value to a template result: "path", or
 * "path | filter | ...".
 */
static void
adapter_template_value(struct ndjson_writer *w, json_t *req, const char *ph,
    size_t len, const struct msg *m)
{
	const char	*end = ph + len, *p, *name;
	json_t		*v;
	size_t		 plen, n;
	int		 raw, filtered = 0;

	for (p = ph; p < end && *p != ' ' && *p != '|'; p++)
		;
	plen = (size_t)(p - ph);
	v = adapter_template_lookup(req, ph, plen, m, &raw);
	while ((name = adapter_template_next(&p, end, &n)) != NULL) {
		v = adapter_template_filter(v, name, n);
		filtered = 1;
	}
	if (raw && !filtered)
		ndjson_writer_add(w, m->line, m->len);
	else
		adapter_template_text(w, v);
	json_decref(v);
}

/*
 * Check a template's placeholders when the workflow is loaded: each filter
 * is one corral has.  Returns 0, or -1 with why.
 */
int
adapter_template_check(const char *tmpl, char *why, size_t len)
{
	const char	*p = tmpl, *open, *close, *q, *name;
	size_t		 i, n;

	while ((open = strstr(p, "{{")) != NULL &&
	    (close = strstr(open + 2, "}}")) != NULL) {
		for (q = open + 2; q < close && *q != '|'; q++)
			;
		while ((name = adapter_template_next(&q, close, &n)) != NULL) {
			for (i = 0; adapter_filters[i] != NULL; i++)
				if (strlen(adapter_filters[i]) == n &&
				    memcmp(adapter_filters[i], name, n) == 0)
					break;
			if (adapter_filters[i] == NULL) {
				snprintf(why, len, "'%.*s': no filter '%.*s' "
				    "(filters: lines, json, shell)",
				    (int)(close + 2 - open), open, (int)n,
				    name);
				return -1;
			}
		}
		if (q < close) {
			snprintf(why, len, "'%.*s': expected | FILTER after "
			    "the path", (int)(close + 2 - open), open);
			return -1;
		}
		p = close + 2;
	}
	return 0;
}

/*
 * Expand {{path}} placeholders over the request: task, intent, id,
 * content.text, inputs.context, inputs.parameters.NAME, envelope (the
 * whole line), or any dotted path.  Strings go in as they are, other
 * values as compact JSON, missing ones as nothing.  Filters after the
 * path change that: {{path | lines}}, {{path | json}}, {{path | shell}}.
 */
char *
adapter_template(const char *tmpl, json_t *req, const struct msg *m)
{
	struct ndjson_writer	 w;
	const char		*p = tmpl, *open, *close;
	char			*out;
	size_t			 plen;

	ndjson_writer_init(&w, 0, 1);
	while ((open = strstr(p, "{{")) != NULL &&
	    (close = strstr(open + 2, "}}")) != NULL) {
		ndjson_writer_add(&w, p, (size_t)(open - p));
		open += 2;
		while (*open == ' ')
			open++;
		plen = (size_t)(close - open);
		while (plen > 0 && open[plen - 1] == ' ')
			plen--;
		adapter_template_value(&w, req, open, plen, m);
		p = close + 2;
	}
	ndjson_writer_add(&w, p, strlen(p));
	out = xmemdup0(w.buf != NULL ? w.buf : "", w.tail);
	ndjson_writer_free(&w);
	return out;
}

/* A new per-call process record for request m. */
struct proc_call *
adapter_proc_new(struct agent *a, struct msg *m)
{
	struct proc_call	*p;

	p = xcalloc(1, sizeof *p);
	p->agent = a;
	p->msg = m;
	p->name = a->id;
	p->grace = a->conf->stop_grace;
	p->timeout = a->conf->stop_timeout;
	TAILQ_INSERT_TAIL(&a->adapter->procs, p, entry);
	a->adapter->nprocs++;
	return p;
}

/* A per-call process is finished with: forget it. */
void
adapter_proc_done(struct proc_call *p)
{
	struct agent	*a = p->agent;

	TAILQ_REMOVE(&a->adapter->procs, p, entry);
	a->adapter->nprocs--;
	proc_call_free(p);
	adapter_percall_check(a);
}

/* A stopping per-call agent has ended once its last process is gone. */
void
adapter_percall_check(struct agent *a)
{
	if (adapter_per_call(a) && a->adapter->stopping &&
	    a->adapter->nprocs == 0) {
		a->adapter->stopping = 0;
		agent_news(a, AE_EXITED, "no calls running");
	}
}

/* The argv to run for an adapted long-lived agent, or NULL for its cmd. */
char **
adapter_argv(struct agent *a)
{
	if (a->adapter == NULL || a->adapter->ops->argv == NULL)
		return NULL;
	return a->adapter->ops->argv(a);
}

/* Free an argv from adapter_argv. */
void
adapter_free_argv(char **argv)
{
	char	**p;

	if (argv == NULL)
		return;
	for (p = argv; *p != NULL; p++)
		free(*p);
	free(argv);
}

/*
 * How many requests an agent may have outstanding at once, as the
 * workflow and its adapter say: 0 when neither does (max_inflight: auto),
 * and lifecycle.c's adaptive window decides.
 */
unsigned int
adapter_inflight_cap(const struct agent *a)
{
	unsigned int	cap = a->conf->max_inflight;

	if (a->adapter != NULL && a->adapter->ops->inflight_cap != 0 &&
	    (cap == 0 || a->adapter->ops->inflight_cap < cap))
		cap = a->adapter->ops->inflight_cap;
	return cap;
}
