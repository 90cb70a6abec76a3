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
 * This file holds the dispatch table and what adapters share: building
 * reply envelopes, templates over the request, per-call bookkeeping.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

static const struct adapter_ops *adapter_table[] = {
	&adapter_exec_ops,
	&adapter_claude_ops,
	&adapter_codex_ops,
	&adapter_gemini_ops,
	&adapter_mcp_ops,
	NULL
};

/* Find an adapter's operations by name. */
const struct adapter_ops *
adapter_find(const char *name)
{
	size_t	i;

	for (i = 0; adapter_table[i] != NULL; i++)
		if (strcmp(adapter_table[i]->name, name) == 0)
			return adapter_table[i];
	return NULL;
}

/* Check an agent's adapter settings at load time. */
int
adapter_check(const struct agent_conf *ac, char *why, size_t len)
{
	const struct adapter_ops	*ops;

	if (ac->adapter == NULL || strcmp(ac->adapter, "ndjson") == 0)
		return 0;
	if ((ops = adapter_find(ac->adapter)) == NULL) {
		snprintf(why, len, "adapter '%s' is not available in this build",
		    ac->adapter);
		return -1;
	}
	return ops->check != NULL ? ops->check(ac, why, len) : 0;
}

/* Attach the adapter named by the agent's entry, if any. */
void
adapter_create(struct agent *a)
{
	const struct adapter_ops	*ops;

	if (a->conf->adapter == NULL || strcmp(a->conf->adapter, "ndjson") == 0)
		return;
	if ((ops = adapter_find(a->conf->adapter)) == NULL)
		fatalx("adapter %s vanished after the check", a->conf->adapter);
	a->adapter = xcalloc(1, sizeof *a->adapter);
	a->adapter->ops = ops;
	TAILQ_INIT(&a->adapter->procs);
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
	if (!(a->flags & AGENT_NOT_READY))
		return;
	a->flags &= ~AGENT_NOT_READY;
	lifecycle_event(a, AE_HANDSHAKE, "%s", why);
	lifecycle_heartbeat_start(a);
}

/* Give the tool a request. */
void
adapter_request(struct agent *a, struct msg *m)
{
	a->msgs_in++;
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

/* A JSON-RPC response from an adapted agent (lines go to line() first). */
void
adapter_response(struct agent *a, json_t *frame)
{
	(void)a;
	(void)frame;
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
	struct proc	*p;

	if (a->adapter == NULL)
		return 0;
	if (a->adapter->ops->stop != NULL)
		return a->adapter->ops->stop(a);
	TAILQ_FOREACH(p, &a->adapter->procs, entry) {
		p->msg = NULL;
		proc_kill(p);
	}
	return (int)a->adapter->nprocs;
}

/* Free the adapter and anything it still holds. */
void
adapter_free(struct agent *a)
{
	struct proc	*p;

	if (a->adapter == NULL)
		return;
	if (a->adapter->ops->free != NULL)
		a->adapter->ops->free(a);
	while ((p = TAILQ_FIRST(&a->adapter->procs)) != NULL) {
		TAILQ_REMOVE(&a->adapter->procs, p, entry);
		proc_free(p);
	}
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
	engine_new_id(id, sizeof id);
	req = adapter_request_json(m);
	task = req != NULL ? json_object_get(req, "task") : NULL;
	env = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:s, s:s, s:O, "
	    "s:{s:s}, s:{s:s, s:[s]}}",
	    "protocol", CORRAL_ENVELOPE_PROTOCOL, "role", "agent",
	    "agent", "id", a->id, "name", a->conf->name, "model",
	    a->conf->adapter,
	    "timestamp", ts,
	    "intent", intent != NULL ? intent : config_intent_name(m->intent),
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

/* Hand a reply envelope (a stolen reference) to the engine. */
void
adapter_reply(struct agent *a, struct msg *m, json_t *env)
{
	char	*s;

	s = json_dumps(env, CORRAL_JSON_FLAGS);
	json_decref(env);
	if (s == NULL)
		fatalx("adapter_reply: json_dumps");
	engine_adapter_reply(a, m, s, strlen(s));
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
	json_object_set_new(content, "text", util_json_text(message,
	    strlen(message)));
	data = json_pack("{s:s, s:s, s:o, s:b}", "code", code, "category",
	    category, "message", util_json_text(message, strlen(message)),
	    "retryable", strcmp(category, "TIMEOUT") == 0 ||
	    strcmp(category, "UNAVAILABLE") == 0);
	if (extra != NULL) {
		json_object_update(data, extra);
		json_decref(extra);
	}
	json_object_set_new(content, "data", data);
	adapter_reply(a, m, env);
}

/* Append the value at a dotted path of the request to a template result. */
static void
adapter_template_value(struct ndjson_writer *w, json_t *req, const char *path,
    size_t len, const struct msg *m)
{
	json_t	*v = req;
	char	 key[128], *s;
	size_t	 i, start = 0;

	if (len == 8 && memcmp(path, "envelope", 8) == 0) {
		ndjson_writer_add(w, m->line, m->len);
		return;
	}
	if (len == 2 && memcmp(path, "id", 2) == 0) {
		ndjson_writer_add(w, m->id, strlen(m->id));
		return;
	}
	for (i = 0; i <= len && v != NULL; i++) {
		if (i < len && path[i] != '.')
			continue;
		if (i - start >= sizeof key)
			return;
		memcpy(key, path + start, i - start);
		key[i - start] = '\0';
		v = json_object_get(v, key);
		start = i + 1;
	}
	if (v == NULL || json_is_null(v))
		return;
	if (json_is_string(v)) {
		ndjson_writer_add(w, json_string_value(v),
		    json_string_length(v));
		return;
	}
	if ((s = json_dumps(v, CORRAL_JSON_FLAGS | JSON_ENCODE_ANY)) != NULL) {
		ndjson_writer_add(w, s, strlen(s));
		free(s);
	}
}

/*
 * Expand {{path}} placeholders over the request: task, intent, id,
 * content.text, inputs.context, inputs.parameters.NAME, envelope (the
 * whole line), or any dotted path.  Strings go in as they are, other
 * values as compact JSON, missing ones as nothing.
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
struct proc *
adapter_proc_new(struct agent *a, struct msg *m)
{
	struct proc	*p;

	p = xcalloc(1, sizeof *p);
	p->agent = a;
	p->msg = m;
	p->in = p->out = p->err = -1;
	TAILQ_INSERT_TAIL(&a->adapter->procs, p, entry);
	a->adapter->nprocs++;
	return p;
}

/* A per-call process is finished with: forget it. */
void
adapter_proc_done(struct proc *p)
{
	struct agent	*a = p->agent;

	TAILQ_REMOVE(&a->adapter->procs, p, entry);
	a->adapter->nprocs--;
	proc_free(p);
	adapter_percall_check(a);
}

/* A stopping per-call agent is stopped once its last process is gone. */
void
adapter_percall_check(struct agent *a)
{
	if (adapter_per_call(a) && a->state == AS_STOPPING &&
	    a->adapter->nprocs == 0)
		lifecycle_percall_stopped(a);
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

/* How many requests an agent may have outstanding at once. */
unsigned int
adapter_inflight_cap(const struct agent *a)
{
	unsigned int	cap = a->conf->max_inflight;

	if (a->adapter != NULL && a->adapter->ops->inflight_cap != 0 &&
	    a->adapter->ops->inflight_cap < cap)
		cap = a->adapter->ops->inflight_cap;
	return cap;
}
