/*
 * corral mcp: an MCP server on stdio that gives the model inside a CLI
 * (Claude Code, Codex, Gemini) corral's tools, acting for the agent whose
 * CLI started it.
 *
 *   corral mcp [-S PATH] [--tools TOOL,...] [--wait DURATION]
 *
 * It connects to the control socket ($CORRAL_CONTROL, or -S) and shows
 * the agent's credential ($CORRAL_AGENT_TOKEN) in map/connect, so corral
 * handles each of its frames as if the agent had sent it on its pipe: a
 * spawn is a child of that agent, under its depth, fan-out and budget, and
 * it sees what the agent sees.  The results of the children it spawned
 * come to it as map/message notifications (docs/subagents.md).
 *
 * MCP is JSON-RPC 2.0, a line each way (the stdio transport).  Several
 * tool calls may be in progress at once: each waits for corral's answer
 * or for child results, in one poll loop over stdin and the socket.
 * What a tool returns is text for a model to read; refusals and failed
 * children are tool results with isError, never protocol errors.
 *
 * Neither side can block the other.  Requests to corral and answers to
 * the CLI wait in queues written only as far as their descriptors take
 * them, and the socket is read whenever corral has something: a CLI that
 * writes thousands of calls at once once left corral mcp stuck in
 * write() on the socket while corral, whose answers piled up unread,
 * had stopped reading it.  The queues are bounded: a call that would
 * exceed CMD_MCP_CALLS calls in progress, or CMD_MCP_QUEUE bytes waiting
 * for corral, or corral's line limit, is answered at once with a tool
 * error naming the limit; and the CLI is not read while the answers it
 * has not read pile up.  At the end of stdin, what corral still owes is
 * waited for (CMD_MCP_LINGER seconds at most) and written, then corral
 * mcp exits.
 */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"
#include "cmd.h"

#define CMD_MCP_MAX_LINE	(4UL * 1024 * 1024)	/* an MCP frame */
#define CMD_MCP_CHILDREN	256	/* results kept */
#define CMD_MCP_TEXT		(64 * 1024)	/* of one result, for a model */
#define CMD_MCP_WAIT_MAX	86400.0
#define CMD_MCP_CALLS		1024	/* tool calls in progress */
#define CMD_MCP_QUEUE		(8UL * 1024 * 1024)	/* bytes for corral */
#define CMD_MCP_OUT_HIGH	(1024 * 1024)	/* answers the CLI has not read */
#define CMD_MCP_LINGER		5.0	/* after stdin's end, for corral */

enum cmd_mcp_tool {
	MCP_SPAWN,
	MCP_WAIT,
	MCP_SEND,
	MCP_LIST,
	MCP_STOP,
	MCP_NTOOLS
};

/* The tools: their word in --tools, their MCP name. */
static const char *const cmd_mcp_words[MCP_NTOOLS] = {
	"spawn", "wait", "send", "list", "stop"
};
static const char *const cmd_mcp_names[MCP_NTOOLS] = {
	"spawn_agent", "wait_agents", "send_message", "list_agents",
	"stop_agent"
};

/* A child this session knows of: spawned here, or its result came here. */
struct cmd_mcp_child {
	char				*id;
	char				*name;		/* its entry, if known */
	char				*task;		/* its task's id */
	json_t				*result;	/* the marked envelope */
	int				 reported;	/* given to the model */
	TAILQ_ENTRY(cmd_mcp_child)	 entry;
};

/* A tools/call in progress. */
struct cmd_mcp_call {
	json_t				*id;		/* the MCP request's */
	enum cmd_mcp_tool		 tool;
	json_t				*args;
	long long			 ctl;		/* corral's answer due */
	char				**want;		/* children awaited */
	size_t				 nwant;
	int				 any;		/* the first will do */
	int				 waiting;	/* for results */
	double				 deadline;
	TAILQ_ENTRY(cmd_mcp_call)	 entry;
};

static struct {
	struct client			 c;
	int				 connected;
	char				 why[600];	/* not connected: why */
	const char			*path;
	const char			*token;
	unsigned int			 tools;		/* 1 << cmd_mcp_tool */
	double				 wait;		/* default, seconds */
	char				*self;		/* the agent's id */
	json_t				*catalogue;
	struct ndjson_reader		 rd;
	TAILQ_HEAD(, cmd_mcp_child)	 children;
	unsigned int			 nchildren;
	TAILQ_HEAD(, cmd_mcp_call)	 calls;
	unsigned int			 ncalls;
	struct ndjson_writer		 out;		/* to the CLI */
	int				 out_flags;	/* stdout's, to restore */
	int				 out_nb;	/* stdout made non-blocking */
	int				 out_broken;
} mcp;

static void	cmd_mcp_check_waits(void);
static void	cmd_mcp_lost(void);

/*
 * Write what waits for the CLI, as far as stdout takes it now (a pipe
 * or a socket is made non-blocking; a file or a terminal takes it all).
 */
static void
cmd_mcp_flush_out(void)
{
	if (mcp.out_broken || ndjson_writer_queued(&mcp.out) == 0)
		return;
	if (ndjson_writer_flush(&mcp.out, STDOUT_FILENO) == -1)
		mcp.out_broken = 1;	/* the CLI is gone; stdin's EOF ends us */
}

/* Queue one JSON-RPC frame for stdout (the CLI), a line. */
static void
cmd_mcp_out(json_t *f)
{
	char	*s;

	if (mcp.out_broken || (s = jsonw_dumps(f, CORRAL_JSON_FLAGS)) == NULL)
		return;
	ndjson_writer_line(&mcp.out, s, strlen(s));
	free(s);
}

/* Make stdout non-blocking when it is a pipe or a socket (ours alone). */
static void
cmd_mcp_out_start(void)
{
	struct stat	st;

	ndjson_writer_init(&mcp.out, 0, CMD_MCP_OUT_HIGH);
	if (fstat(STDOUT_FILENO, &st) == -1 || !(S_ISFIFO(st.st_mode) ||
	    S_ISSOCK(st.st_mode)) || (mcp.out_flags = fcntl(STDOUT_FILENO,
	    F_GETFL)) == -1)
		return;
	if (fcntl(STDOUT_FILENO, F_SETFL, mcp.out_flags | O_NONBLOCK) == 0)
		mcp.out_nb = 1;
}

/* Put stdout back as it was, and write what is left if it takes it. */
static void
cmd_mcp_out_end(void)
{
	cmd_mcp_flush_out();
	if (mcp.out_nb)
		(void)fcntl(STDOUT_FILENO, F_SETFL, mcp.out_flags);
	ndjson_writer_free(&mcp.out);
}

/* Answer an MCP request with a result (stolen). */
static void
cmd_mcp_reply(json_t *id, json_t *result)
{
	json_t	*f;

	f = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result",
	    result);
	cmd_mcp_out(f);
	json_decref(f);
}

/* Answer an MCP request with a JSON-RPC error. */
static void
cmd_mcp_error(json_t *id, int code, const char *msg)
{
	json_t	*f;

	f = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id,
	    "error", "code", code, "message", msg);
	cmd_mcp_out(f);
	json_decref(f);
}

/* Answer a tools/call with text for the model; isError when failed. */
static void
cmd_mcp_text(json_t *id, const char *text, int failed)
{
	cmd_mcp_reply(id, json_pack("{s:[{s:s, s:o}], s:b}", "content", "type",
	    "text", "text", jsonw_text(text, strlen(text)), "isError",
	    failed));
}

/* Connect to corral as the agent, unless connected.  Returns 0 or -1. */
static int
cmd_mcp_connect(void)
{
	json_t		*run, *auth;
	const char	*self;

	if (mcp.connected)
		return 0;
	if (mcp.path == NULL || *mcp.path == '\0') {
		snprintf(mcp.why, sizeof mcp.why, "CORRAL_CONTROL is not set: "
		    "corral mcp works for an agent that corral started");
		return -1;
	}
	if (mcp.token == NULL || *mcp.token == '\0') {
		snprintf(mcp.why, sizeof mcp.why, "CORRAL_AGENT_TOKEN is not "
		    "set: corral mcp works for an agent that corral started");
		return -1;
	}
	auth = json_pack("{s:s, s:s}", "method", CORRAL_AUTH_AGENT,
	    "credential", mcp.token);
	if (client_open_auth(&mcp.c, mcp.path, "corral mcp", auth, mcp.why,
	    sizeof mcp.why) != 0)
		return -1;
	mcp.connected = 1;
	self = json_string_value(json_object_get(json_object_get(mcp.c.info,
	    "principal"), "id"));
	free(mcp.self);
	mcp.self = xstrdup(self != NULL ? self : "?");
	run = client_run(&mcp.c);
	json_decref(mcp.catalogue);
	mcp.catalogue = json_incref(json_object_get(run, "catalogue"));
	return 0;
}

/* The workflow's agents, for the spawn tool's description. */
static void
cmd_mcp_catalogue(char *buf, size_t len)
{
	json_t		*e;
	const char	*d;
	size_t		 i, n;

	if (!json_is_array(mcp.catalogue) ||
	    json_array_size(mcp.catalogue) == 0) {
		snprintf(buf, len, " The names are those of the workflow's "
		    "agents: entries of its agents: list.");
		return;
	}
	snprintf(buf, len, " Agents you can start:");
	json_array_foreach(mcp.catalogue, i, e) {
		n = strlen(buf);
		d = json_string_value(json_object_get(e, "description"));
		snprintf(buf + n, len - n, "%s %s%s%s%s", i > 0 ? ";" : "",
		    json_string_value(json_object_get(e, "name")),
		    d != NULL ? " (" : "", d != NULL ? d : "",
		    d != NULL ? ")" : "");
	}
	n = strlen(buf);
	snprintf(buf + n, len - n, ".");
}

/* One tool's definition for tools/list. */
static json_t *
cmd_mcp_tool_def(enum cmd_mcp_tool t)
{
	char	desc[4096], cat[3000];

	switch (t) {
	case MCP_SPAWN:
		cmd_mcp_catalogue(cat, sizeof cat);
		snprintf(desc, sizeof desc, "Start a sub-agent: an agent of "
		    "this corral workflow that works on the task you give it, "
		    "as a child of yours, and reports one result.  With wait "
		    "(the default) the call returns that result when the child "
		    "has finished; with wait false it returns the child's id at "
		    "once, and wait_agents collects the result later, so "
		    "several children can work at the same time.  corral's "
		    "limits apply: how deep the tree may grow, how many "
		    "children you may have alive at once, and your budget; a "
		    "refused spawn says why, and a later one may pass once a "
		    "child has finished.%s", cat);
		return json_pack("{s:s, s:s, s:{s:s, s:{s:{s:s, s:s}, s:{s:s, "
		    "s:s}, s:{s:s, s:s}, s:{s:s, s:s}}, s:[s, s]}, s:{s:b}}",
		    "name", cmd_mcp_names[t], "description", desc,
		    "inputSchema", "type", "object", "properties",
		    "agent", "type", "string", "description", "the name of the "
		    "workflow agent to start",
		    "task", "type", "string", "description", "what the child "
		    "is to do, complete in itself: it sees nothing else of your "
		    "conversation",
		    "wait", "type", "boolean", "description", "wait for its "
		    "result (default true)",
		    "timeout", "type", "number", "description", "with wait: "
		    "seconds to wait before returning without the result "
		    "(default 300); the child keeps working",
		    "required", "agent", "task",
		    "annotations", "openWorldHint", 1);
	case MCP_WAIT:
		return json_pack("{s:s, s:s, s:{s:s, s:{s:{s:s, s:{s:s}, s:s}, "
		    "s:{s:s, s:s}, s:{s:s, s:s}}}}",
		    "name", cmd_mcp_names[t], "description", "Wait for the "
		    "results of sub-agents you started with spawn_agent (wait "
		    "false) and return them.  Without agents it waits for every "
		    "child whose result you have not seen yet; with any true it "
		    "returns as soon as one of them has finished.  Children "
		    "still working when the timeout ends are named, and keep "
		    "working.",
		    "inputSchema", "type", "object", "properties",
		    "agents", "type", "array", "items", "type", "string",
		    "description", "the ids spawn_agent returned (default: all "
		    "your children without a reported result)",
		    "any", "type", "boolean", "description", "return when the "
		    "first result is in (default false: all of them)",
		    "timeout", "type", "number", "description", "seconds to "
		    "wait at most (default 300)");
	case MCP_SEND:
		return json_pack("{s:s, s:s, s:{s:s, s:{s:{s:s, s:s}, s:{s:s, "
		    "s:s}}, s:[s, s]}}",
		    "name", cmd_mcp_names[t], "description", "Send a message "
		    "to other agents of the tree: your parent, your children, "
		    "or one agent by its id.  It is one-way: no answer comes "
		    "back as the tool's result.",
		    "inputSchema", "type", "object", "properties",
		    "to", "type", "string", "description", "an agent's id, or "
		    "parent, children, siblings or descendants",
		    "message", "type", "string", "description", "the text to "
		    "send",
		    "required", "to", "message");
	case MCP_LIST:
		return json_pack("{s:s, s:s, s:{s:s, s:{}}, s:{s:b}}",
		    "name", cmd_mcp_names[t], "description", "List the agents "
		    "of this corral run you can see (you, your parent, your "
		    "children and other visible agents): their state, depth, "
		    "parent, tokens and cost.",
		    "inputSchema", "type", "object", "properties",
		    "annotations", "readOnlyHint", 1);
	case MCP_STOP:
		return json_pack("{s:s, s:s, s:{s:s, s:{s:{s:s, s:s}, s:{s:s, "
		    "s:s}}, s:[s]}, s:{s:b}}",
		    "name", cmd_mcp_names[t], "description", "Stop one of your "
		    "sub-agents, and its own sub-agents, when it is no longer "
		    "needed.  A child stopped before it finished reports an "
		    "error as its result.",
		    "inputSchema", "type", "object", "properties",
		    "agent", "type", "string", "description", "the child's id",
		    "force", "type", "boolean", "description", "kill it at "
		    "once instead of asking it to stop",
		    "required", "agent",
		    "annotations", "destructiveHint", 1);
	default:
		return NULL;
	}
}

/* Answer tools/list: the tools --tools allows. */
static void
cmd_mcp_tools_list(json_t *id)
{
	json_t			*list = json_array();
	enum cmd_mcp_tool	 t;

	if (!mcp.connected)
		(void)cmd_mcp_connect();	/* for the catalogue */
	for (t = 0; t < MCP_NTOOLS; t++)
		if (mcp.tools & (1U << t))
			json_array_append_new(list, cmd_mcp_tool_def(t));
	cmd_mcp_reply(id, json_pack("{s:o}", "tools", list));
}

/*
 * Answer initialize with the version the client asked for when we know
 * it, else with the latest we know: MCP's version negotiation says the
 * server MUST answer the same version if it supports it, otherwise
 * another it supports, which SHOULD be its latest (the client then
 * decides whether to go on).
 */
static void
cmd_mcp_initialize(json_t *id, json_t *params)
{
	static const char *const versions[] = { "2025-11-25", "2025-06-18",
	    "2025-03-26", "2024-11-05", NULL };
	const char	*want, *v = versions[0];
	size_t		 i;

	want = json_string_value(json_object_get(params, "protocolVersion"));
	for (i = 0; want != NULL && versions[i] != NULL; i++)
		if (strcmp(want, versions[i]) == 0)
			v = versions[i];
	cmd_mcp_reply(id, json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s}, s:s}",
	    "protocolVersion", v, "capabilities", "tools", "listChanged", 0,
	    "serverInfo", "name", "corral", "version", CORRAL_VERSION,
	    "instructions", "corral runs this agent inside a tree of agents. "
	    "spawn_agent starts a sub-agent with a task and returns its "
	    "result; wait_agents collects results of sub-agents started "
	    "without waiting; send_message, list_agents and stop_agent act "
	    "on the tree.  corral enforces depth, fan-out and budget limits."));
}

/* Find a child by its id or its task's id. */
static struct cmd_mcp_child *
cmd_mcp_child(const char *id, const char *task)
{
	struct cmd_mcp_child	*k;

	TAILQ_FOREACH(k, &mcp.children, entry)
		if ((id != NULL && strcmp(k->id, id) == 0) ||
		    (task != NULL && k->task != NULL &&
		    strcmp(k->task, task) == 0))
			return k;
	return NULL;
}

/*
 * Remember a child, forgetting the oldest whose result was reported
 * when there are too many.
 */
static struct cmd_mcp_child *
cmd_mcp_child_add(const char *id, const char *name, const char *task)
{
	struct cmd_mcp_child	*k, *old;

	if (mcp.nchildren >= CMD_MCP_CHILDREN) {
		TAILQ_FOREACH(old, &mcp.children, entry)
			if (old->reported)
				break;
		if (old == NULL)
			old = TAILQ_FIRST(&mcp.children);
		TAILQ_REMOVE(&mcp.children, old, entry);
		free(old->id);
		free(old->name);
		free(old->task);
		json_decref(old->result);
		free(old);
		mcp.nchildren--;
	}
	k = xcalloc(1, sizeof *k);
	k->id = xstrdup(id);
	k->name = name != NULL ? xstrdup(name) : NULL;
	k->task = task != NULL ? xstrdup(task) : NULL;
	TAILQ_INSERT_TAIL(&mcp.children, k, entry);
	mcp.nchildren++;
	return k;
}

/*
 * Append a child's result to buf, for a model: its text (or its data,
 * or its error), cut at CMD_MCP_TEXT, and what it cost.  Returns nonzero
 * when the child failed.
 */
static int
cmd_mcp_result_text(struct cmd_mcp_child *k, char **buf)
{
	json_t		*env = k->result, *content, *data, *cost;
	const char	*type, *text, *code = NULL;
	char		*dump = NULL, *line, extra[128] = "";
	int		 failed;
	size_t		 n;

	content = json_object_get(env, "content");
	type = json_string_value(json_object_get(content, "type"));
	data = json_object_get(content, "data");
	failed = !json_is_true(json_object_get(json_object_get(env, "corral"),
	    "ok")) || (type != NULL && strcmp(type, "error") == 0);
	text = json_string_value(json_object_get(content, "text"));
	if (failed) {
		code = json_string_value(json_object_get(data, "code"));
		if (json_string_value(json_object_get(data, "message")) != NULL)
			text = json_string_value(json_object_get(data,
			    "message"));
	}
	if ((text == NULL || *text == '\0') && data != NULL)
		text = dump = jsonw_dumps(data, JSON_ENCODE_ANY |
		    CORRAL_JSON_FLAGS);
	if (text == NULL)
		text = "";
	cost = json_object_get(json_object_get(env, "trace"), "cost");
	if (cost != NULL)
		snprintf(extra, sizeof extra, " (%.0f tokens, $%.4f)",
		    json_number_value(json_object_get(cost, "input_tokens")) +
		    json_number_value(json_object_get(cost, "output_tokens")),
		    json_number_value(json_object_get(cost, "usd")));
	n = strlen(text);
	xasprintf(&line, "%s%s %s%s%s%s%s:\n%.*s%s", *buf != NULL ? *buf : "",
	    k->id, failed ? "failed" : "finished", code != NULL ? " (" : "",
	    code != NULL ? code : "", code != NULL ? ")" : "", extra,
	    (int)(n > CMD_MCP_TEXT ? CMD_MCP_TEXT : n), text,
	    n > CMD_MCP_TEXT ? "\n[... cut: the result is longer]" : "");
	free(*buf);
	*buf = line;
	free(dump);
	k->reported = 1;
	return failed;
}

/* Free a call. */
static void
cmd_mcp_call_free(struct cmd_mcp_call *call)
{
	size_t	i;

	TAILQ_REMOVE(&mcp.calls, call, entry);
	mcp.ncalls--;
	for (i = 0; i < call->nwant; i++)
		free(call->want[i]);
	free(call->want);
	json_decref(call->id);
	json_decref(call->args);
	free(call);
}

/*
 * A waiting call may end: all its children's results are in (or one,
 * with any), or its time is up.  Answer it with what it has.
 */
static int
cmd_mcp_wait_done(struct cmd_mcp_call *call, int timeout)
{
	struct cmd_mcp_child	*k;
	char			*text = NULL, *s, waiting[1024] = "";
	size_t			 i, in = 0;
	int			 failed = 0;

	for (i = 0; i < call->nwant; i++) {
		k = cmd_mcp_child(call->want[i], NULL);
		if (k != NULL && k->result != NULL)
			in++;
	}
	if (!timeout && in < call->nwant && !(call->any && in > 0))
		return 0;
	for (i = 0; i < call->nwant; i++) {
		k = cmd_mcp_child(call->want[i], NULL);
		if (k != NULL && k->result != NULL) {
			if (text != NULL) {
				xasprintf(&s, "%s\n\n", text);
				free(text);
				text = s;
			}
			failed |= cmd_mcp_result_text(k, &text);
		} else {
			if (waiting[0] != '\0')
				strlcat(waiting, ", ", sizeof waiting);
			strlcat(waiting, call->want[i], sizeof waiting);
		}
	}
	if (waiting[0] != '\0') {
		xasprintf(&s, "%s%s%s still working%s; call wait_agents again "
		    "to collect %s.", text != NULL ? text : "", text != NULL ?
		    "\n\n" : "", waiting, timeout ? " when the wait ended" : "",
		    strchr(waiting, ',') != NULL ? "their results" :
		    "its result");
		free(text);
		text = s;
	}
	/* Only the spawn's own child failing makes the call an error. */
	cmd_mcp_text(call->id, text, call->tool == MCP_SPAWN && failed);
	free(text);
	cmd_mcp_call_free(call);
	return 1;
}

/* Check every waiting call (a result came, or time passed). */
static void
cmd_mcp_check_waits(void)
{
	struct cmd_mcp_call	*call, *next;
	double			 now = util_mono();

	TAILQ_FOREACH_SAFE(call, &mcp.calls, entry, next)
		if (call->waiting)
			(void)cmd_mcp_wait_done(call, now >= call->deadline);
}

/* A call's wait in seconds: its arguments' timeout, else the default. */
static double
cmd_mcp_wait_secs(json_t *args)
{
	json_t	*v = json_object_get(args, "timeout");
	double	 t = mcp.wait;

	if (json_is_number(v) && json_number_value(v) >= 0)
		t = json_number_value(v);
	return t > CMD_MCP_WAIT_MAX ? CMD_MCP_WAIT_MAX : t;
}

/* Make a call wait for children (want: ids, taken). */
static void
cmd_mcp_wait_for(struct cmd_mcp_call *call, char **want, size_t n)
{
	call->want = want;
	call->nwant = n;
	call->waiting = 1;
	call->deadline = util_mono() + cmd_mcp_wait_secs(call->args);
	(void)cmd_mcp_wait_done(call, 0);
}

/* wait_agents: wait for the children named, or every unreported one. */
static void
cmd_mcp_wait_start(struct cmd_mcp_call *call)
{
	struct cmd_mcp_child	*k;
	json_t			*ids = json_object_get(call->args, "agents"), *v;
	char			**want = NULL;
	size_t			  n = 0, i;

	call->any = json_is_true(json_object_get(call->args, "any"));
	if (json_is_array(ids) && json_array_size(ids) > 0) {
		json_array_foreach(ids, i, v) {
			if (!json_is_string(v))
				continue;
			want = xreallocarray(want, n + 1, sizeof *want);
			want[n++] = xstrdup(json_string_value(v));
			if (cmd_mcp_child(json_string_value(v), NULL) == NULL)
				(void)cmd_mcp_child_add(json_string_value(v),
				    NULL, NULL);
		}
	} else {
		TAILQ_FOREACH(k, &mcp.children, entry) {
			if (k->reported)
				continue;
			want = xreallocarray(want, n + 1, sizeof *want);
			want[n++] = xstrdup(k->id);
		}
	}
	if (n == 0) {
		cmd_mcp_text(call->id, "No sub-agent to wait for: every result "
		    "was reported already, or none was started (spawn_agent "
		    "starts one).", 0);
		cmd_mcp_call_free(call);
		return;
	}
	cmd_mcp_wait_for(call, want, n);
}

/* A JSON-RPC error from corral, as text for the model. */
static void
cmd_mcp_refusal(struct cmd_mcp_call *call, const char *what, json_t *e)
{
	json_t		*data = json_object_get(e, "data");
	const char	*msg;
	char		*s;

	msg = json_string_value(json_object_get(e, "message"));
	xasprintf(&s, "corral refused to %s: %s (error %lld%s)", what,
	    msg != NULL ? msg : "no reason given",
	    (long long)json_integer_value(json_object_get(e, "code")),
	    json_is_true(json_object_get(data, "retryable")) ?
	    "; retryable: it may pass later" : "");
	cmd_mcp_text(call->id, s, 1);
	free(s);
	cmd_mcp_call_free(call);
}

/* List the agents corral answered, a line each, for a model. */
static void
cmd_mcp_list_text(struct cmd_mcp_call *call, json_t *res)
{
	json_t		*agents = json_object_get(res, "agents"), *a, *md;
	const char	*id, *parent;
	char		*text = NULL, *s;
	size_t		 i;

	json_array_foreach(agents, i, a) {
		md = json_object_get(a, "metadata");
		id = json_string_value(json_object_get(a, "id"));
		parent = json_string_value(json_object_get(a, "parent"));
		xasprintf(&s, "%s- %s (%s): %s, depth %lld, parent %s, %.0f "
		    "tokens, $%.4f%s\n", text != NULL ? text : "",
		    id != NULL ? id : "?", json_string_value(json_object_get(a,
		    "name")) != NULL ? json_string_value(json_object_get(a,
		    "name")) : "?", json_string_value(json_object_get(a,
		    "state")) != NULL ? json_string_value(json_object_get(a,
		    "state")) : "?", (long long)json_integer_value(
		    json_object_get(md, "depth")), parent != NULL ? parent :
		    "none", json_number_value(json_object_get(md, "tokens")),
		    json_number_value(json_object_get(md, "cost")),
		    id != NULL && mcp.self != NULL && strcmp(id, mcp.self) ==
		    0 ? " (you)" : "");
		free(text);
		text = s;
	}
	cmd_mcp_text(call->id, text != NULL ? text : "No agent is visible.",
	    0);
	free(text);
	cmd_mcp_call_free(call);
}

/* "Delivered to a, b." for map/send's delivered list (a new string). */
static char *
cmd_mcp_join(json_t *ids)
{
	json_t	*v;
	char	*s, *t;
	size_t	 i;

	s = xstrdup("Delivered to");
	json_array_foreach(ids, i, v) {
		xasprintf(&t, "%s%s %s", s, i > 0 ? "," : "",
		    json_string_value(v) != NULL ? json_string_value(v) : "?");
		free(s);
		s = t;
	}
	xasprintf(&t, "%s (one-way: no answer comes back here).", s);
	free(s);
	return t;
}

/* corral answered a call's request: go on with the call. */
static void
cmd_mcp_answer(struct cmd_mcp_call *call, json_t *res, json_t *e)
{
	struct cmd_mcp_child	*k;
	const char		*cid, *task, *name;
	char			*s, **want;

	call->ctl = 0;
	switch (call->tool) {
	case MCP_SPAWN:
		if (res == NULL) {
			xasprintf(&s, "start agent '%s'", json_string_value(
			    json_object_get(call->args, "agent")));
			cmd_mcp_refusal(call, s, e);
			free(s);
			return;
		}
		cid = json_string_value(json_object_get(json_object_get(res,
		    "agent"), "id"));
		name = json_string_value(json_object_get(json_object_get(res,
		    "agent"), "name"));
		task = json_string_value(json_object_get(res, "messageId"));
		if (cid == NULL) {
			cmd_mcp_text(call->id, "corral started an agent but did "
			    "not say which", 1);
			cmd_mcp_call_free(call);
			return;
		}
		if ((k = cmd_mcp_child(cid, task)) == NULL)
			k = cmd_mcp_child_add(cid, name, task);
		if (json_is_false(json_object_get(call->args, "wait"))) {
			xasprintf(&s, "Started %s (%s).  It works in the "
			    "background; call wait_agents to collect its "
			    "result.", cid, name != NULL ? name : "?");
			cmd_mcp_text(call->id, s, 0);
			free(s);
			cmd_mcp_call_free(call);
			return;
		}
		want = xcalloc(1, sizeof *want);
		want[0] = xstrdup(cid);
		cmd_mcp_wait_for(call, want, 1);
		return;
	case MCP_SEND:
		if (res == NULL) {
			cmd_mcp_refusal(call, "send the message", e);
			return;
		}
		s = cmd_mcp_join(json_object_get(res, "delivered"));
		cmd_mcp_text(call->id, s, 0);
		free(s);
		cmd_mcp_call_free(call);
		return;
	case MCP_LIST:
		if (res == NULL) {
			cmd_mcp_refusal(call, "list the agents", e);
			return;
		}
		cmd_mcp_list_text(call, res);
		return;
	case MCP_STOP:
		if (res == NULL) {
			cmd_mcp_refusal(call, "stop the agent", e);
			return;
		}
		xasprintf(&s, "Stopping %s (and its sub-agents).",
		    json_string_value(json_object_get(call->args, "agent")));
		cmd_mcp_text(call->id, s, 0);
		free(s);
		cmd_mcp_call_free(call);
		return;
	default:
		return;
	}
}

/* The MAP address of send_message's to: a family word, or an agent. */
static json_t *
cmd_mcp_address(const char *to)
{
	static const char *const family[] = { "parent", "children", "siblings",
	    "descendants", "ancestors", NULL };
	size_t	i;

	for (i = 0; family[i] != NULL; i++)
		if (strcmp(to, family[i]) == 0)
			return json_pack("{s:b}", family[i], 1);
	return json_pack("{s:s}", "agent", to);
}

/* A string argument, or NULL after answering the call with why. */
static const char *
cmd_mcp_arg(struct cmd_mcp_call *call, const char *key)
{
	const char	*v = json_string_value(json_object_get(call->args, key));
	char		*s;

	if (v == NULL || *v == '\0') {
		xasprintf(&s, "%s needs %s (a string)", cmd_mcp_names[call->tool],
		    key);
		cmd_mcp_text(call->id, s, 1);
		free(s);
		cmd_mcp_call_free(call);
	}
	return v;
}

/*
 * Writing to corral failed: the call says so, and every other call
 * corral owes an answer fails as when corral goes away.
 */
static void
cmd_mcp_request_failed(struct cmd_mcp_call *call)
{
	cmd_mcp_text(call->id, "corral mcp cannot act for this agent: the "
	    "connection to corral failed", 1);
	cmd_mcp_call_free(call);
	cmd_mcp_lost();
}

/*
 * Send a call's request to corral; it goes on in cmd_mcp_answer.  It is
 * queued and written as far as the socket takes it; a request longer
 * than a line corral reads, or one that would make the queue too long,
 * is answered at once with a tool error that names the limit.
 */
static void
cmd_mcp_request(struct cmd_mcp_call *call, const char *method, json_t *params)
{
	char	*s;
	size_t	 len;

	if (client_queued(&mcp.c) > CMD_MCP_QUEUE) {
		json_decref(params);
		xasprintf(&s, "%s was not sent: %zu bytes of earlier requests "
		    "still wait for corral to read them (the limit is %lu); try "
		    "again once some calls have returned",
		    cmd_mcp_names[call->tool], client_queued(&mcp.c),
		    CMD_MCP_QUEUE);
		cmd_mcp_text(call->id, s, 1);
		free(s);
		cmd_mcp_call_free(call);
		return;
	}
	if ((call->ctl = client_queue(&mcp.c, method, params,
	    CORRAL_MAX_LINE_DEFAULT, &len)) == 0) {
		xasprintf(&s, "%s was not sent: the request would be a line of "
		    "%zu bytes, and corral reads lines of at most %lu bytes "
		    "(1 MiB); make the task or message shorter, or pass a file's "
		    "name instead of its text", cmd_mcp_names[call->tool], len,
		    (unsigned long)CORRAL_MAX_LINE_DEFAULT);
		cmd_mcp_text(call->id, s, 1);
		free(s);
		cmd_mcp_call_free(call);
		return;
	}
	if (client_flush(&mcp.c) != 0)
		cmd_mcp_request_failed(call);
}

/* Start a tools/call. */
static void
cmd_mcp_call(json_t *id, json_t *params)
{
	struct cmd_mcp_call	*call;
	const char		*name, *a, *t;
	enum cmd_mcp_tool	 tool;
	char			*s;

	name = json_string_value(json_object_get(params, "name"));
	for (tool = 0; tool < MCP_NTOOLS; tool++)
		if (name != NULL && strcmp(name, cmd_mcp_names[tool]) == 0 &&
		    (mcp.tools & (1U << tool)))
			break;
	if (tool == MCP_NTOOLS) {
		cmd_mcp_error(id, -32602, "Unknown tool");
		return;
	}
	if (mcp.ncalls >= CMD_MCP_CALLS) {
		xasprintf(&s, "%s was not started: %u tool calls are in "
		    "progress, the limit of corral mcp; try again once some have "
		    "returned", cmd_mcp_names[tool], mcp.ncalls);
		cmd_mcp_text(id, s, 1);
		free(s);
		return;
	}
	call = xcalloc(1, sizeof *call);
	call->id = json_incref(id);
	call->tool = tool;
	call->args = json_object_get(params, "arguments");
	call->args = json_is_object(call->args) ? json_incref(call->args) :
	    json_object();
	TAILQ_INSERT_TAIL(&mcp.calls, call, entry);
	mcp.ncalls++;
	if (tool != MCP_WAIT && cmd_mcp_connect() != 0) {
		xasprintf(&s, "corral mcp cannot act for this agent: %s", mcp.why);
		cmd_mcp_text(id, s, 1);
		free(s);
		cmd_mcp_call_free(call);
		return;
	}
	switch (tool) {
	case MCP_SPAWN:
		if ((a = cmd_mcp_arg(call, "agent")) == NULL ||
		    (t = cmd_mcp_arg(call, "task")) == NULL)
			return;
		cmd_mcp_request(call, CORRAL_M_SPAWN, json_pack("{s:s, s:s}",
		    "agent", a, "task", t));
		break;
	case MCP_WAIT:
		cmd_mcp_wait_start(call);
		break;
	case MCP_SEND:
		if ((a = cmd_mcp_arg(call, "to")) == NULL ||
		    (t = cmd_mcp_arg(call, "message")) == NULL)
			return;
		cmd_mcp_request(call, CORRAL_M_SEND, json_pack("{s:o, s:s}",
		    "to", cmd_mcp_address(a), "payload", t));
		break;
	case MCP_LIST:
		cmd_mcp_request(call, CORRAL_M_LIST, json_object());
		break;
	case MCP_STOP:
		if ((a = cmd_mcp_arg(call, "agent")) == NULL)
			return;
		cmd_mcp_request(call, CORRAL_M_STOP, json_pack("{s:s, s:b}",
		    "agentId", a, "force", json_is_true(json_object_get(
		    call->args, "force"))));
		break;
	default:
		break;
	}
}

/* notifications/cancelled: forget the call; it gets no answer. */
static void
cmd_mcp_cancelled(json_t *params)
{
	struct cmd_mcp_call	*call;
	json_t			*rid = json_object_get(params, "requestId");

	TAILQ_FOREACH(call, &mcp.calls, entry)
		if (rid != NULL && json_equal(call->id, rid)) {
			cmd_mcp_call_free(call);
			return;
		}
}

/* One MCP frame from the CLI. */
static void
cmd_mcp_frame(json_t *f)
{
	const char	*method = json_string_value(json_object_get(f, "method"));
	json_t		*id = json_object_get(f, "id");
	json_t		*params = json_object_get(f, "params");

	if (method == NULL)
		return;		/* a response: we ask the CLI nothing */
	if (strcmp(method, "initialize") == 0 && id != NULL)
		cmd_mcp_initialize(id, params);
	else if (strcmp(method, "ping") == 0 && id != NULL)
		cmd_mcp_reply(id, json_object());
	else if (strcmp(method, "tools/list") == 0 && id != NULL)
		cmd_mcp_tools_list(id);
	else if (strcmp(method, "tools/call") == 0 && id != NULL)
		cmd_mcp_call(id, params);
	else if (strcmp(method, "notifications/cancelled") == 0)
		cmd_mcp_cancelled(params);
	else if (id != NULL)
		cmd_mcp_error(id, -32601, "Method not found");
}

/* A line from the CLI. */
static void
cmd_mcp_line(void *arg, enum ndjson_kind kind, char *line, size_t len,
    size_t extra)
{
	json_t	*f = NULL, *nul;
	char	 why[160];

	if (kind == NDJSON_TOOLONG) {
		/* Its first bytes may have its id: the error is its answer. */
		snprintf(why, sizeof why, "Invalid Request: a line of %zu bytes, "
		    "over corral mcp's limit of %lu", extra, CMD_MCP_MAX_LINE);
		if ((f = rpc_prefix_id(line, len)) == NULL)
			f = json_null();
		cmd_mcp_error(f, -32600, why);
		json_decref(f);
		return;
	}
	if (kind != NDJSON_LINE && kind != NDJSON_NUL)
		return;
	if (kind == NDJSON_NUL || (f = json_loadb(line, len, 0, NULL)) == NULL ||
	    !json_is_object(f)) {
		nul = json_null();
		cmd_mcp_error(nul, -32700, "Parse error");
		json_decref(nul);
		json_decref(f);
		return;
	}
	cmd_mcp_frame(f);
	json_decref(f);
}

/* A child's result came (map/message with meta.isResult). */
static void
cmd_mcp_result(json_t *msg)
{
	struct cmd_mcp_child	*k;
	json_t			*meta = json_object_get(msg, "meta");
	json_t			*payload = json_object_get(msg, "payload");
	const char		*from, *task;

	if (!json_is_true(json_object_get(meta, "isResult")) ||
	    !json_is_object(payload))
		return;
	from = json_string_value(json_object_get(json_object_get(payload,
	    "corral"), "child"));
	if (from == NULL)
		from = json_string_value(json_object_get(msg, "from"));
	task = json_string_value(json_object_get(meta, "correlationId"));
	if (from == NULL)
		return;
	if ((k = cmd_mcp_child(from, task)) == NULL)
		k = cmd_mcp_child_add(from, NULL, task);
	json_decref(k->result);
	k->result = json_incref(payload);
	k->reported = 0;
	cmd_mcp_check_waits();
}

/* corral went away: every call waiting for it fails. */
static void
cmd_mcp_lost(void)
{
	struct cmd_mcp_call	*call, *next;

	mcp.connected = 0;
	client_close(&mcp.c);
	snprintf(mcp.why, sizeof mcp.why, "corral closed the connection (the "
	    "run ended, or the agent is gone)");
	TAILQ_FOREACH_SAFE(call, &mcp.calls, entry, next) {
		if (call->ctl == 0 && !call->waiting)
			continue;
		cmd_mcp_text(call->id, "corral went away before answering: the "
		    "run ended, or this agent is gone", 1);
		cmd_mcp_call_free(call);
	}
}

/* What corral sent: answers to our requests, child results. */
static void
cmd_mcp_from_corral(void)
{
	struct cmd_mcp_call	*call;
	json_t			*f, *idj;
	const char		*method;

	while (mcp.connected && (f = client_take(&mcp.c)) != NULL) {
		method = json_string_value(json_object_get(f, "method"));
		idj = json_object_get(f, "id");
		if (method != NULL) {
			if (strcmp(method, CORRAL_M_MESSAGE) == 0)
				cmd_mcp_result(json_object_get(json_object_get(
				    f, "params"), "message"));
			json_decref(f);
			continue;
		}
		TAILQ_FOREACH(call, &mcp.calls, entry)
			if (call->ctl != 0 && json_is_integer(idj) &&
			    json_integer_value(idj) == call->ctl)
				break;
		if (call != NULL)
			cmd_mcp_answer(call, json_object_get(f, "result"),
			    json_object_get(f, "error"));
		json_decref(f);
	}
}

/* Milliseconds to the next wait's end (-1: none). */
static int
cmd_mcp_next_timeout(void)
{
	struct cmd_mcp_call	*call;
	double			 next = -1, now = util_mono(), left;

	TAILQ_FOREACH(call, &mcp.calls, entry) {
		if (!call->waiting)
			continue;
		left = call->deadline - now;
		if (left < 0)
			left = 0;
		if (next < 0 || left < next)
			next = left;
	}
	return next < 0 ? -1 : (int)(next * 1000) + 1;
}

/* Does corral still owe an answer to one of the calls? */
static int
cmd_mcp_owed(void)
{
	struct cmd_mcp_call	*call;

	TAILQ_FOREACH(call, &mcp.calls, entry)
		if (call->ctl != 0)
			return 1;
	return 0;
}

/*
 * Is the loop done?  The CLI is gone; or stdin ended (at end) and
 * corral owes nothing more, everything is written, or time is up.
 */
static int
cmd_mcp_over(double end)
{
	if (mcp.out_broken)
		return 1;
	if (end == 0)
		return 0;
	return util_mono() >= end || ((!mcp.connected || !cmd_mcp_owed()) &&
	    ndjson_writer_queued(&mcp.out) == 0);
}

/*
 * Read the CLI's stdin once.  Returns 0, or -1 at its end (a last line
 * without a newline is handled first).
 */
static int
cmd_mcp_read_stdin(void)
{
	char	buf[65536];
	ssize_t	n;

	n = read(STDIN_FILENO, buf, sizeof buf);
	if (n > 0)
		ndjson_feed(&mcp.rd, buf, (size_t)n, cmd_mcp_line, NULL);
	if (n > 0 || (n == -1 && (errno == EINTR || errno == EAGAIN)))
		return 0;
	ndjson_finish(&mcp.rd, cmd_mcp_line, NULL);
	return -1;
}

/*
 * The poll loop: stdin while the CLI reads its answers, stdout while
 * answers wait, the socket always for reading and while requests wait
 * for writing.  It ends when the CLI is gone, or at stdin's end once
 * corral has answered what it owes (CMD_MCP_LINGER seconds at most).
 */
static void
cmd_mcp_loop(void)
{
	struct pollfd	pfd[3];
	double		end = 0;
	int		rc, nfd, in, out, sk, timeout;

	while (!cmd_mcp_over(end)) {
		nfd = 0;
		in = out = sk = -1;
		if (end == 0 && ndjson_writer_queued(&mcp.out) < CMD_MCP_OUT_HIGH) {
			pfd[nfd].fd = STDIN_FILENO;
			pfd[nfd].events = POLLIN;
			in = nfd++;
		}
		if (ndjson_writer_queued(&mcp.out) > 0) {
			pfd[nfd].fd = STDOUT_FILENO;
			pfd[nfd].events = POLLOUT;
			out = nfd++;
		}
		if (mcp.connected) {
			pfd[nfd].fd = mcp.c.fd;
			pfd[nfd].events = POLLIN | (client_queued(&mcp.c) > 0 ?
			    POLLOUT : 0);
			sk = nfd++;
		}
		timeout = cmd_mcp_next_timeout();
		if (end != 0 && (timeout < 0 || timeout > (int)((end -
		    util_mono()) * 1000) + 1))
			timeout = (int)((end - util_mono()) * 1000) + 1;
		rc = poll(pfd, (nfds_t)nfd, timeout);
		if (rc == -1 && errno != EINTR)
			break;
		if (rc > 0 && sk != -1 && (pfd[sk].revents & (POLLIN |
		    POLLHUP | POLLERR)) && client_poll(&mcp.c, 0) == -1) {
			cmd_mcp_from_corral();
			cmd_mcp_lost();
		}
		cmd_mcp_from_corral();	/* frames read along with others */
		if (rc > 0 && sk != -1 && mcp.connected &&
		    (pfd[sk].revents & POLLOUT) && client_flush(&mcp.c) != 0)
			cmd_mcp_lost();
		if (rc > 0 && in != -1 && pfd[in].revents != 0 &&
		    cmd_mcp_read_stdin() != 0)
			end = util_mono() + CMD_MCP_LINGER;
		cmd_mcp_check_waits();
		if (out != -1 || ndjson_writer_queued(&mcp.out) > 0)
			cmd_mcp_flush_out();
	}
}

/* Read --tools: words, comma-separated.  Returns the bits, or 0. */
static unsigned int
cmd_mcp_parse_tools(const char *list)
{
	char		*copy = xstrdup(list), *w, *p = copy;
	unsigned int	 bits = 0;
	size_t		 i;

	while ((w = strsep(&p, ",")) != NULL) {
		if (*w == '\0')
			continue;
		for (i = 0; i < MCP_NTOOLS; i++)
			if (strcmp(w, cmd_mcp_words[i]) == 0)
				break;
		if (i == MCP_NTOOLS) {
			fprintf(stderr, "corral: mcp: --tools: unknown tool "
			    "'%s' (spawn, wait, send, list, stop)\n", w);
			free(copy);
			return 0;
		}
		bits |= 1U << i;
	}
	free(copy);
	return bits;
}

/* corral mcp. */
static int
cmd_mcp_exec(struct cmd *c)
{
	memset(&mcp, 0, sizeof mcp);
	TAILQ_INIT(&mcp.children);
	TAILQ_INIT(&mcp.calls);
	mcp.tools = (1U << MCP_NTOOLS) - 1;
	mcp.wait = 300;
	mcp.path = getenv("CORRAL_CONTROL");
	mcp.token = getenv("CORRAL_AGENT_TOKEN");
	if (cmd_get(c, "control") != NULL)
		mcp.path = cmd_get(c, "control");
	if (cmd_get(c, "tools") != NULL &&
	    (mcp.tools = cmd_mcp_parse_tools(cmd_get(c, "tools"))) == 0)
		return EXIT_USAGE;
	if (cmd_get(c, "wait") != NULL &&
	    util_parse_duration(cmd_get(c, "wait"), &mcp.wait) != 0) {
		fprintf(stderr, "corral: mcp: --wait: a duration such as "
		    "300s\n");
		return EXIT_USAGE;
	}
	signal(SIGPIPE, SIG_IGN);
	/* Early, so that a missing socket shows in the CLI's own log. */
	if (cmd_mcp_connect() != 0)
		fprintf(stderr, "corral mcp: %s\n", mcp.why);
	ndjson_reader_init(&mcp.rd, CMD_MCP_MAX_LINE, 0);
	cmd_mcp_out_start();
	cmd_mcp_loop();
	cmd_mcp_out_end();
	ndjson_reader_free(&mcp.rd);
	if (mcp.connected)
		client_close(&mcp.c);
	return 0;
}

static const struct cmd_option cmd_mcp_options[] = {
	{ "control", 'S', 1 },
	{ "tools", 0, 1 },
	{ "wait", 0, 1 },
	{ NULL, 0, 0 }
};

const struct cmd_entry cmd_mcp_entry = {
	.name = "mcp",
	.args = "[-S PATH] [--tools TOOL,...] [--wait DURATION]",
	.about = "an MCP server on stdio: corral's tools for the model in a "
	    "CLI",
	.options = cmd_mcp_options,
	.lower = 0,
	.upper = 0,
	.exec = cmd_mcp_exec,
};
