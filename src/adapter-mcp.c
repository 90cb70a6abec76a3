/*
 * The mcp adapter: an MCP server on stdio as a tool agent, one long-lived
 * process per agent (docs/adapters.md).
 *
 *   agents:
 *     tools:
 *       cmd: [npx, -y, "@modelcontextprotocol/server-everything"]
 *       heartbeat: 10s            # MCP pings
 *       adapter:
 *         type: mcp
 *         tools: [echo, add]      # only these may be called (default: all)
 *         protocol_version: "2025-06-18"
 *         init_timeout: 30s
 *         confidence: 0.9
 *         intent: summarize       # the reply's intent (default: tool.call)
 *         then: [{intent: summarize, task: "..."}]
 *
 * At start the adapter sends initialize, then notifications/initialized
 * and tools/list (every page); the tools become the agent's capabilities,
 * logged and recorded in the audit log, and the agent is ready.  A
 * tool.call envelope whose content.data is {"name" (or "tool"): NAME,
 * "arguments": {...}} becomes a tools/call request; its result a
 * tool_result envelope (isError: an error envelope).  Requests of other
 * intents get an error envelope.  The server's pings are answered; the
 * entry's heartbeat sends ours.  A request that times out is cancelled
 * with notifications/cancelled and its late answer dropped.  A server that
 * does not answer initialize within init_timeout is restarted.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

#define MCP_PROTOCOL	"2025-06-18"
#define MCP_DESC_MAX	200	/* bytes of a tool's description recorded */

enum mcp_phase {
	MCP_INITIALIZING,	/* initialize sent */
	MCP_LISTING,		/* tools/list sent, not ready yet */
	MCP_READY
};

/* A tools/call in flight, and the request it answers. */
struct mcp_call {
	json_int_t		 rpc;
	char			 id[CORRAL_ID_MAX];
	char			 tool[128];
	unsigned int		 attempts;
	TAILQ_ENTRY(mcp_call)	 entry;
};
TAILQ_HEAD(mcp_calls, mcp_call);

struct mcp_state {
	struct agent		*agent;
	/* Settings. */
	json_t			*allow;		/* tool names, NULL: all */
	const char		*version;
	double			 init_timeout;
	struct adapter_settings	 settings;
	/* The session. */
	enum mcp_phase		 phase;
	json_int_t		 seq;
	json_int_t		 init_rpc;
	json_int_t		 list_rpc;	/* 0: no listing running */
	json_int_t		 ping_rpc;	/* our latest ping */
	int			 relist;	/* the list changed meanwhile */
	json_t			*tools;		/* the complete list */
	json_t			*paging;	/* pages gathered so far */
	json_t			*server;	/* serverInfo */
	ev_timer		 timer;
	struct mcp_calls	 calls;
};

static void	adapter_mcp_timer_cb(struct ev_loop *, ev_timer *, int);

/* Check the mcp settings at load time. */
static int
adapter_mcp_check(const struct agent_conf *ac, char *why, size_t len)
{
	static const char *keys[] = { "tools", "protocol_version",
	    "init_timeout", "confidence", "intent", "then", NULL };
	json_t		*c = ac->adapter_conf, *v, *e;
	double		 d;
	size_t		 i;

	if (adapter_check_keys(c, "mcp", keys, why, len) != 0)
		return -1;
	v = json_object_get(c, "tools");
	if (v != NULL && !json_is_array(v)) {
		snprintf(why, len, "adapter.tools must be a list of tool names");
		return -1;
	}
	json_array_foreach(v, i, e) {
		if (!json_is_string(e)) {
			snprintf(why, len, "adapter.tools[%zu] must be a tool "
			    "name", i);
			return -1;
		}
	}
	v = json_object_get(c, "protocol_version");
	if (v != NULL && (!json_is_string(v) || json_string_length(v) == 0)) {
		snprintf(why, len, "adapter.protocol_version must be a version "
		    "string such as \"%s\"", MCP_PROTOCOL);
		return -1;
	}
	v = json_object_get(c, "init_timeout");
	if (v != NULL && (adapter_duration(v, &d) != 0 || d <= 0)) {
		snprintf(why, len, "adapter.init_timeout must be a duration such "
		    "as 30s");
		return -1;
	}
	return adapter_check_common(c, why, len);
}

/* Write one JSON-RPC frame (a stolen reference) to the server's stdin. */
static void
adapter_mcp_send(struct agent *a, json_t *j)
{
	char	*s;

	if (j == NULL)
		fatalx("adapter_mcp_send: json_pack");
	s = jsonw_dumps(j, CORRAL_JSON_FLAGS);
	json_decref(j);
	if (s == NULL)
		fatalx("adapter_mcp_send: json_dumps");
	agent_send(a, s, strlen(s));
	free(s);
}

/* Send a request with a new id (params a stolen reference, or NULL). */
static json_int_t
adapter_mcp_call(struct agent *a, const char *method, json_t *params)
{
	struct mcp_state	*st = a->adapter->state;
	json_t			*j;

	j = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", ++st->seq,
	    "method", method);
	if (params != NULL)
		json_object_set_new(j, "params", params);
	adapter_mcp_send(a, j);
	return st->seq;
}

/* Ask for (the next page of) the tool list. */
static void
adapter_mcp_list(struct agent *a, const char *cursor)
{
	struct mcp_state	*st = a->adapter->state;

	st->relist = 0;
	st->list_rpc = adapter_mcp_call(a, "tools/list", cursor != NULL ?
	    json_pack("{s:s}", "cursor", cursor) : NULL);
}

/* Is a tool allowed to this agent by its tools: setting? */
static int
adapter_mcp_allowed(struct mcp_state *st, const char *name)
{
	json_t	*e;
	size_t	 i;

	if (st->allow == NULL)
		return 1;
	json_array_foreach(st->allow, i, e)
		if (strcmp(json_string_value(e), name) == 0)
			return 1;
	return 0;
}

/* The names of the tools on offer, as one comma-separated string. */
static char *
adapter_mcp_names(struct mcp_state *st)
{
	json_t		*t;
	char		*out = NULL, *n;
	const char	*name;
	size_t		 i;

	json_array_foreach(st->tools, i, t) {
		if ((name = json_string_value(json_object_get(t, "name"))) ==
		    NULL)
			continue;
		if (out == NULL)
			out = xstrdup(name);
		else {
			xasprintf(&n, "%s, %s", out, name);
			free(out);
			out = n;
		}
	}
	return out != NULL ? out : xstrdup("none");
}

/*
 * The complete tool list arrived: keep the allowed tools, log and record
 * them as the agent's capabilities, and be ready the first time.
 */
static void
adapter_mcp_tools(struct agent *a, json_t *all)
{
	struct mcp_state	*st = a->adapter->state;
	json_t			*tools, *t, *rec, *desc;
	const char		*name, *d;
	char			*names;
	size_t			 i, n;

	tools = json_array();
	json_array_foreach(all, i, t) {
		name = json_string_value(json_object_get(t, "name"));
		if (name != NULL && adapter_mcp_allowed(st, name))
			json_array_append(tools, t);
	}
	if (st->tools != NULL && json_equal(st->tools, tools)) {
		json_decref(tools);
		return;
	}
	if (st->tools != NULL)
		json_decref(st->tools);
	st->tools = tools;
	names = adapter_mcp_names(st);
	log_info("agent %s: MCP server %s %s offers %zu tools: %.600s", a->id,
	    json_string_value(json_object_get(st->server, "name")),
	    json_string_value(json_object_get(st->server, "version")),
	    json_array_size(tools), names);
	free(names);
	if (auditlog_enabled()) {
		rec = json_array();
		json_array_foreach(tools, i, t) {
			d = json_string_value(json_object_get(t, "description"));
			n = d != NULL ? strlen(d) : 0;
			desc = d != NULL ? jsonw_text(d, n > MCP_DESC_MAX ?
			    MCP_DESC_MAX : n) : json_null();
			json_array_append_new(rec, json_pack("{s:O, s:o, s:O*}",
			    "name", json_object_get(t, "name"), "description",
			    desc, "inputSchema", json_object_get(t,
			    "inputSchema")));
		}
		auditlog_json("capabilities", a->id, json_pack("{s:s, s:O*, "
		    "s:o}", "adapter", "mcp", "server", st->server, "tools",
		    rec));
	}
	if (st->phase == MCP_LISTING) {
		st->phase = MCP_READY;
		ev_timer_stop(LOOP, &st->timer);
		adapter_ready(a, "MCP initialized, tools listed");
	}
}

/* A page of tools/list came back. */
static void
adapter_mcp_page(struct agent *a, json_t *res)
{
	struct mcp_state	*st = a->adapter->state;
	const char		*cursor;
	json_t			*all;

	if (st->paging == NULL)
		st->paging = json_array();
	json_array_extend(st->paging, json_object_get(res, "tools"));
	cursor = json_string_value(json_object_get(res, "nextCursor"));
	if (cursor != NULL && *cursor != '\0' && json_array_size(st->paging) <
	    100000) {
		adapter_mcp_list(a, cursor);
		return;
	}
	st->list_rpc = 0;
	all = st->paging;
	st->paging = NULL;
	adapter_mcp_tools(a, all);
	json_decref(all);
	if (st->relist)
		adapter_mcp_list(a, NULL);
}

/* The answer to initialize: confirm, then ask for the tools. */
static void
adapter_mcp_initialized(struct agent *a, json_t *res)
{
	struct mcp_state	*st = a->adapter->state;
	const char		*v;

	if (st->server != NULL)
		json_decref(st->server);
	st->server = json_incref(json_object_get(res, "serverInfo"));
	v = json_string_value(json_object_get(res, "protocolVersion"));
	if (v != NULL && strcmp(v, st->version) != 0)
		log_info("agent %s: the MCP server speaks protocol %s (asked "
		    "for %s)", a->id, v, st->version);
	if (json_object_get(json_object_get(res, "capabilities"), "tools") ==
	    NULL)
		log_warnx("agent %s: the MCP server declares no tools "
		    "capability", a->id);
	adapter_mcp_send(a, json_pack("{s:s, s:s}", "jsonrpc", "2.0",
	    "method", "notifications/initialized"));
	st->phase = MCP_LISTING;
	adapter_mcp_list(a, NULL);
}

/* Find the request a call answers, if it is still waiting for it. */
static struct msg *
adapter_mcp_msg(struct agent *a, struct mcp_call *c)
{
	return adapter_find(a, c->id, c->attempts);
}

/* Is a tool in the server's list? */
static int
adapter_mcp_known(struct mcp_state *st, const char *name)
{
	json_t	*t;
	size_t	 i;

	json_array_foreach(st->tools, i, t)
		if (json_is_string(json_object_get(t, "name")) &&
		    strcmp(json_string_value(json_object_get(t, "name")),
		    name) == 0)
			return 1;
	return 0;
}

/* The text items of a tools/call result, joined by newlines. */
static char *
adapter_mcp_text(json_t *res)
{
	json_t		*item;
	const char	*t;
	char		*out = NULL, *n;
	size_t		 i;

	json_array_foreach(json_object_get(res, "content"), i, item) {
		if ((t = json_string_value(json_object_get(item, "text"))) ==
		    NULL)
			continue;
		if (out == NULL)
			out = xstrdup(t);
		else {
			xasprintf(&n, "%s\n%s", out, t);
			free(out);
			out = n;
		}
	}
	return out;
}

/* The answer to a tools/call: a tool_result envelope, or an error. */
static void
adapter_mcp_result(struct agent *a, struct mcp_call *c, json_t *j)
{
	struct mcp_state	*st = a->adapter->state;
	struct msg		*m;
	json_t			*res, *err, *env, *content, *extra;
	const char		*tool;
	char			*text, why[512], *names;
	json_int_t		 code;

	if ((m = adapter_mcp_msg(a, c)) == NULL) {
		log_info("agent %s: a tool answered after its request %s was "
		    "given up", a->id, c->id);
		return;
	}
	tool = c->tool;
	if ((err = json_object_get(j, "error")) != NULL) {
		code = json_integer_value(json_object_get(err, "code"));
		snprintf(why, sizeof why, "MCP error %lld: %s", (long long)code,
		    json_is_string(json_object_get(err, "message")) ?
		    json_string_value(json_object_get(err, "message")) : "?");
		adapter_reply_error(a, m, "mcp_error", code <= -32600 &&
		    code >= -32602 ? "REJECTED" : "INTERNAL", why, json_pack(
		    "{s:s, s:O}", "tool", tool, "error", err));
		return;
	}
	res = json_object_get(j, "result");
	text = adapter_mcp_text(res);
	if (json_is_true(json_object_get(res, "isError"))) {
		snprintf(why, sizeof why, "tool %s: %s", tool, text != NULL ?
		    text : "failed");
		extra = json_pack("{s:s, s:O*}", "tool", tool, "result", res);
		if (!adapter_mcp_known(st, tool)) {
			names = adapter_mcp_names(st);
			json_object_set_new(extra, "available", jsonw_text(
			    names, strlen(names)));
			free(names);
		}
		adapter_reply_error(a, m, "tool_error", "REJECTED", why, extra);
		free(text);
		return;
	}
	env = adapter_envelope_ok(a, m, &st->settings, 3);
	content = json_object_get(env, "content");
	if (text != NULL)
		json_object_set_new(content, "text", jsonw_text(text,
		    strlen(text)));
	json_object_set(content, "data", res != NULL ? res : json_null());
	free(text);
	adapter_reply(a, m, env);
}

/* A request from the server: answer ping, refuse the rest. */
static void
adapter_mcp_server_request(struct agent *a, json_t *id, const char *method)
{
	if (strcmp(method, "ping") == 0)
		adapter_mcp_send(a, json_pack("{s:s, s:O, s:{}}", "jsonrpc",
		    "2.0", "id", id, "result"));
	else if (strcmp(method, "roots/list") == 0)
		adapter_mcp_send(a, json_pack("{s:s, s:O, s:{s:[]}}", "jsonrpc",
		    "2.0", "id", id, "result", "roots"));
	else {
		log_info("agent %s: the MCP server asked for %s; not supported",
		    a->id, method);
		adapter_mcp_send(a, json_pack("{s:s, s:O, s:{s:i, s:s}}",
		    "jsonrpc", "2.0", "id", id, "error", "code", -32601,
		    "message", "Method not found"));
	}
}

/* A notification from the server. */
static void
adapter_mcp_notification(struct agent *a, const char *method, json_t *params)
{
	struct mcp_state	*st = a->adapter->state;
	char			*s;

	if (strcmp(method, "notifications/tools/list_changed") == 0) {
		if (st->phase == MCP_INITIALIZING)
			return;
		if (st->list_rpc != 0)
			st->relist = 1;
		else
			adapter_mcp_list(a, NULL);
	} else if (strcmp(method, "notifications/message") == 0) {
		s = jsonw_dumps(json_object_get(params, "data"),
		    CORRAL_JSON_FLAGS | JSON_ENCODE_ANY);
		log_info("agent %s: MCP %s: %.300s", a->id, json_is_string(
		    json_object_get(params, "level")) ? json_string_value(
		    json_object_get(params, "level")) : "log", s != NULL ? s :
		    "?");
		free(s);
	} else
		log_debug("agent %s: MCP notification %s", a->id, method);
}

/* A line from the MCP server's stdout. */
static int
adapter_mcp_line(struct agent *a, const char *line, size_t len)
{
	struct mcp_state	*st = a->adapter->state;
	struct mcp_call		*c;
	json_error_t		 e;
	json_t			*j, *id, *method;
	json_int_t		 rpc;
	char			 esc[256];

	if ((j = json_loadb(line, len, 0, &e)) == NULL || !json_is_object(j) ||
	    json_object_get(j, "jsonrpc") == NULL) {
		log_escape(esc, sizeof esc, line, len);
		log_warnx("agent %s: the MCP server wrote a line that is not "
		    "JSON-RPC, ignored: %s", a->id, esc);
		if (j != NULL)
			json_decref(j);
		return 0;
	}
	id = json_object_get(j, "id");
	method = json_object_get(j, "method");
	if (json_is_string(method)) {
		if (id != NULL)
			adapter_mcp_server_request(a, id,
			    json_string_value(method));
		else
			adapter_mcp_notification(a, json_string_value(method),
			    json_object_get(j, "params"));
		json_decref(j);
		return 0;
	}
	if (!json_is_integer(id)) {
		json_decref(j);
		return 0;	/* not one of ours: all our ids are numbers */
	}
	rpc = json_integer_value(id);
	if (rpc == st->init_rpc && st->phase == MCP_INITIALIZING) {
		if (json_object_get(j, "error") != NULL)
			log_warnx("agent %s: the MCP server refused initialize",
			    a->id);
		else
			adapter_mcp_initialized(a, json_object_get(j, "result"));
	} else if (rpc == st->list_rpc) {
		if (json_object_get(j, "error") != NULL) {
			/* No tools/list: a server without tools.  Go on. */
			log_warnx("agent %s: tools/list failed", a->id);
			st->list_rpc = 0;
			if (st->paging != NULL)
				json_decref(st->paging);
			st->paging = NULL;
			adapter_mcp_tools(a, NULL);
		} else
			adapter_mcp_page(a, json_object_get(j, "result"));
	} else if (rpc == st->ping_rpc) {
		log_debug("agent %s: the MCP server answered ping %lld", a->id,
		    (long long)rpc);
	} else {
		TAILQ_FOREACH(c, &st->calls, entry)
			if (c->rpc == rpc)
				break;
		if (c != NULL) {
			TAILQ_REMOVE(&st->calls, c, entry);
			adapter_mcp_result(a, c, j);
			free(c);
		} else
			log_debug("agent %s: MCP answer to %lld", a->id,
			    (long long)rpc);
	}
	json_decref(j);
	return 0;
}

/*
 * Expand the {{...}} templates in the string values of a tool's
 * arguments, at any depth, over the request (a new reference).
 */
static json_t *
adapter_mcp_expand(json_t *v, json_t *req, const struct msg *m)
{
	json_t		*out, *e;
	const char	*k;
	char		*s;
	size_t		 i;

	if (json_is_string(v) && strstr(json_string_value(v), "{{") != NULL) {
		s = adapter_template(json_string_value(v), req, m);
		out = jsonw_text(s, strlen(s));
		free(s);
		return out;
	}
	if (json_is_object(v)) {
		out = json_object();
		json_object_foreach(v, k, e)
			json_object_set_new(out, k, adapter_mcp_expand(e, req,
			    m));
		return out;
	}
	if (json_is_array(v)) {
		out = json_array();
		json_array_foreach(v, i, e)
			json_array_append_new(out, adapter_mcp_expand(e, req,
			    m));
		return out;
	}
	return json_incref(v);
}

/*
 * The tool call a request asks for: content.data, else inputs.parameters
 * (where a next_action's args arrive), {"name" or "tool", "arguments"}.
 */
static json_t *
adapter_mcp_spec(json_t *req, const char **tool)
{
	json_t	*d;
	int	 i;

	for (i = 0; i < 2; i++) {
		d = i == 0 ? json_object_get(json_object_get(req, "content"),
		    "data") : json_object_get(json_object_get(req, "inputs"),
		    "parameters");
		if ((*tool = json_string_value(json_object_get(d, "name"))) ==
		    NULL)
			*tool = json_string_value(json_object_get(d, "tool"));
		if (*tool != NULL)
			return d;
	}
	return NULL;
}

/* A tool.call request becomes tools/call; other intents are refused. */
static void
adapter_mcp_request(struct agent *a, struct msg *m)
{
	struct mcp_state	*st = a->adapter->state;
	struct mcp_call		*c;
	json_t			*req, *spec, *args;
	const char		*tool;
	char			 why[512];

	if (m->intent != INTENT_TOOL_CALL) {
		snprintf(why, sizeof why, "agent %s is an MCP tool server: it "
		    "takes tool.call requests only, not %s", a->id,
		    protocol_intent_name(m->intent));
		adapter_reply_error(a, m, "unsupported_intent", "REJECTED", why,
		    NULL);
		return;
	}
	if ((req = adapter_request_json(m)) == NULL) {
		adapter_reply_error(a, m, "bad_request", "INTERNAL", "the "
		    "request is not JSON", NULL);
		return;
	}
	spec = adapter_mcp_spec(req, &tool);
	args = json_object_get(spec, "arguments");
	if (spec == NULL || (args != NULL && !json_is_object(args))) {
		adapter_reply_error(a, m, "bad_tool_call", "REJECTED", "a "
		    "tool.call needs {\"name\": TOOL, \"arguments\": {...}} in "
		    "content.data or inputs.parameters", NULL);
		json_decref(req);
		return;
	}
	if (!adapter_mcp_allowed(st, tool)) {
		snprintf(why, sizeof why, "tool %s is not allowed for agent %s "
		    "(adapter.tools)", tool, a->id);
		adapter_reply_error(a, m, "tool_not_allowed", "REJECTED", why,
		    NULL);
		json_decref(req);
		return;
	}
	c = xcalloc(1, sizeof *c);
	strlcpy(c->id, m->id, sizeof c->id);
	strlcpy(c->tool, tool, sizeof c->tool);
	c->attempts = m->attempts;
	c->rpc = adapter_mcp_call(a, "tools/call", json_pack("{s:s, s:o}",
	    "name", tool, "arguments", args != NULL ? adapter_mcp_expand(args,
	    req, m) : json_object()));
	TAILQ_INSERT_TAIL(&st->calls, c, entry);
	log_debug("agent %s: request %s: tools/call %s (id %lld)", a->id, m->id,
	    tool, (long long)c->rpc);
	json_decref(req);
}

/* A request is given up: tell the server, forget its call. */
static void
adapter_mcp_cancel(struct agent *a, struct msg *m)
{
	struct mcp_state	*st = a->adapter->state;
	struct mcp_call		*c;

	TAILQ_FOREACH(c, &st->calls, entry)
		if (strcmp(c->id, m->id) == 0)
			break;
	if (c == NULL)
		return;
	TAILQ_REMOVE(&st->calls, c, entry);
	log_info("agent %s: cancelling tools/call %lld (request %s given up)",
	    a->id, (long long)c->rpc, m->id);
	adapter_mcp_send(a, json_pack("{s:s, s:s, s:{s:I, s:s}}", "jsonrpc",
	    "2.0", "method", "notifications/cancelled", "params", "requestId",
	    c->rpc, "reason", "the request timed out in corral"));
	free(c);
}

/* A heartbeat: an MCP ping (any answer counts as a sign of life). */
static void
adapter_mcp_ping(struct agent *a)
{
	struct mcp_state	*st = a->adapter->state;

	st->ping_rpc = adapter_mcp_call(a, "ping", NULL);
}

/* initialize or tools/list did not come back in time. */
static void
adapter_mcp_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mcp_state	*st = w->data;

	if (st->phase == MCP_READY)
		return;
	log_warnx("agent %s: the MCP server did not finish initialize and "
	    "tools/list within %gs; restarting it", st->agent->id,
	    st->init_timeout);
	agent_news(st->agent, AE_RESTART, "MCP initialize timed out");
}

/* Forget the calls in flight (their requests fail with the process). */
static void
adapter_mcp_forget(struct mcp_state *st)
{
	struct mcp_call	*c;

	while ((c = TAILQ_FIRST(&st->calls)) != NULL) {
		TAILQ_REMOVE(&st->calls, c, entry);
		free(c);
	}
	if (st->paging != NULL)
		json_decref(st->paging);
	st->paging = NULL;
}

/* The server (re)started: read the settings once, then initialize. */
static int
adapter_mcp_start(struct agent *a)
{
	struct mcp_state	*st = a->adapter->state;
	json_t			*c = a->conf->adapter_conf, *v;

	if (st == NULL) {
		st = xcalloc(1, sizeof *st);
		st->agent = a;
		TAILQ_INIT(&st->calls);
		st->allow = json_object_get(c, "tools");
		v = json_object_get(c, "protocol_version");
		st->version = v != NULL ? json_string_value(v) : MCP_PROTOCOL;
		st->init_timeout = 30;
		if ((v = json_object_get(c, "init_timeout")) != NULL)
			(void)adapter_duration(v, &st->init_timeout);
		adapter_settings(&st->settings, c);
		ev_timer_init(&st->timer, adapter_mcp_timer_cb, 0, 0);
		st->timer.data = st;
		a->adapter->state = st;
	}
	adapter_mcp_forget(st);
	st->phase = MCP_INITIALIZING;
	st->list_rpc = 0;
	st->relist = 0;
	if (st->tools != NULL)
		json_decref(st->tools);
	st->tools = NULL;
	st->init_rpc = adapter_mcp_call(a, "initialize", json_pack(
	    "{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", st->version,
	    "capabilities", "clientInfo", "name", "corral", "version",
	    CORRAL_VERSION));
	ev_timer_stop(LOOP, &st->timer);
	ev_timer_set(&st->timer, st->init_timeout, 0);
	ev_timer_start(LOOP, &st->timer);
	return 1;
}

/* Free the state. */
static void
adapter_mcp_free(struct agent *a)
{
	struct mcp_state	*st = a->adapter->state;

	if (st == NULL)
		return;
	ev_timer_stop(LOOP, &st->timer);
	adapter_mcp_forget(st);
	if (st->tools != NULL)
		json_decref(st->tools);
	if (st->server != NULL)
		json_decref(st->server);
	free(st);
	a->adapter->state = NULL;
}

/* The server and its tools, for map/agents/get and list. */
static json_t *
adapter_mcp_metadata(struct agent *a)
{
	struct mcp_state	*st = a->adapter->state;
	json_t			*md, *names, *t;
	size_t			 i;

	if (st == NULL || st->tools == NULL)
		return NULL;
	names = json_array();
	json_array_foreach(st->tools, i, t)
		if (json_is_string(json_object_get(t, "name")))
			json_array_append(names, json_object_get(t, "name"));
	md = json_pack("{s:o}", "tools", names);
	if (st->server != NULL)
		json_object_set(md, "server", st->server);
	return md;
}

const struct adapter_ops adapter_mcp_ops = {
	.name = "mcp",
	.per_call = 0,
	.check = adapter_mcp_check,
	.start = adapter_mcp_start,
	.request = adapter_mcp_request,
	.line = adapter_mcp_line,
	.cancel = adapter_mcp_cancel,
	.free = adapter_mcp_free,
	.ping = adapter_mcp_ping,
	.metadata = adapter_mcp_metadata,
};
