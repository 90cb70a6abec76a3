/*
 * The claude adapter: Claude Code, headless, as one long-lived process per
 * agent that speaks stream-json both ways (docs/adapters.md).
 *
 *   agents:
 *     coder:
 *       cmd: [claude, --dangerously-skip-permissions]
 *       adapter:
 *         type: claude
 *         session: reuse          # or fresh: /clear before every request
 *         prompt: "{{task}}"      # a template; default: built from the
 *                                 # envelope (docs/adapters.md)
 *         confidence: 0.9
 *         intent: summarize       # the reply's intent (default: the
 *                                 # request's)
 *         then: [{intent: finalize, task: "..."}]
 *         init_timeout: 60s       # for the initialize answer
 *         interrupt_timeout: 10s  # for an interrupted turn to end
 *
 * The process is started as cmd plus -p --input-format stream-json
 * --output-format stream-json --verbose.  The adapter sends an initialize
 * control request and the agent is ready when it is answered.  Each request
 * becomes one user message; the turn ends with its result line, unless
 * background sub-agents were started: then Claude Code runs a follow-up
 * turn for their notifications and prints a second result, and the turn is
 * over only when no background task runs and none is left to report.
 * total_cost_usd is cumulative over the process, so replies carry the
 * difference since the previous result.  Claude Code's Task sub-agents
 * are external agents (external.c) under this one, with their tool calls
 * and tokens.  What it says during a turn is the request's progress.  A
 * request that times out or is cancelled gets an interrupt control
 * request; a turn that does not end within interrupt_timeout afterwards
 * restarts the process.  A request that names another session
 * (inputs.parameters.session) restarts the process with --resume, since
 * headless Claude Code resumes only when it starts, and is given back
 * afterwards.  Nothing but compact JSON is ever written to its stdin: a
 * line that is not JSON makes Claude Code exit.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

#define CLAUDE_INIT_ID	"corral-init"
#define CLAUDE_AUDIT_MAX 400	/* bytes of a text kept in an audit event */

enum claude_phase {
	CLAUDE_STARTING,	/* initialize sent, not yet answered */
	CLAUDE_IDLE,
	CLAUDE_CLEARING,	/* /clear sent before a fresh conversation */
	CLAUDE_TURN,		/* a request's turn runs */
	CLAUDE_DRAINING		/* an interrupted turn is still ending */
};

/* A request as the adapter remembers it: found again by id and attempt. */
struct claude_ref {
	char		 id[CORRAL_ID_MAX];
	unsigned int	 attempts;
	int		 set;
};

struct claude_state {
	struct agent		*agent;
	/* Settings. */
	struct adapter_settings	 settings;
	int			 fresh;
	double			 init_timeout;
	double			 interrupt_timeout;
	/* The process. */
	enum claude_phase	 phase;
	unsigned int		 turns;		/* user turns sent to it */
	unsigned int		 ctl_seq;
	double			 last_total;	/* its cumulative cost so far */
	char			*model;
	char			*session;	/* its own, once said */
	/* Sessions requests name (inputs.parameters.session). */
	char			*resume;	/* the next process's */
	char			*resumed;	/* this process's */
	char			*resume_failed;	/* one not resumed */
	char			*carry;		/* a resumed run's, from the log */
	struct claude_ref	 switching;	/* the request for it */
	ev_timer		 timer;		/* initialize or interrupt */
	json_t			*tasks;		/* task_id -> sub-agent record */
	json_t			*uses;		/* call -> task */
	json_t			*callers;	/* Agent call -> its sub-agent */
	/* The request in its turn, and one held back meanwhile. */
	struct claude_ref	 cur;
	struct claude_ref	 pending;
	/* The turn. */
	int			 primary;	/* its own result came */
	json_t			*result;	/* that result line */
	char			*text;
	unsigned int		 bg_running;	/* background tasks running */
	unsigned int		 notes;		/* notifications to report */
	/* Spending not yet put in a reply. */
	double			 tokens_in;
	double			 tokens_out;
	double			 usd;
};

static void	adapter_claude_timer_cb(struct ev_loop *, ev_timer *, int);
static void	adapter_claude_next(struct agent *);
static void	adapter_claude_ended_all(struct agent *);

/* Return nonzero if a cmd flag sets a stream format other than ours. */
static int
adapter_claude_bad_format(char **argv, size_t argc, char *why, size_t len)
{
	const char	*f, *v;
	size_t		 i, n;

	for (i = 1; i < argc; i++) {
		f = argv[i];
		if (strncmp(f, "--output-format", 15) == 0)
			n = 15;
		else if (strncmp(f, "--input-format", 14) == 0)
			n = 14;
		else
			continue;
		if (f[n] == '=')
			v = f + n + 1;
		else if (f[n] == '\0' && i + 1 < argc)
			v = argv[i + 1];
		else
			continue;
		if (strcmp(v, "stream-json") != 0) {
			snprintf(why, len, "cmd sets %.*s %s; the claude adapter "
			    "needs stream-json (it adds the flags itself)",
			    (int)n, f, v);
			return 1;
		}
	}
	return 0;
}

/* Check the claude settings at load time. */
static int
adapter_claude_check(const struct agent_conf *ac, char *why, size_t len)
{
	static const char *keys[] = { "session", "prompt", "confidence",
	    "intent", "then", "init_timeout", "interrupt_timeout", NULL };
	json_t		*c = ac->adapter_conf, *v;
	const char	*k;
	double		 d;
	size_t		 i;

	if (adapter_check_keys(c, "claude", keys, why, len) != 0 ||
	    adapter_claude_bad_format(ac->argv, ac->argc, why, len) ||
	    adapter_check_word(c, "session", "reuse", "fresh",
	    "adapter.session must be reuse (one conversation) or fresh (a new "
	    "one per request)", why, len) != 0 ||
	    adapter_check_common(c, why, len) != 0)
		return -1;
	for (i = 0; i < 2; i++) {
		k = i == 0 ? "init_timeout" : "interrupt_timeout";
		if ((v = json_object_get(c, k)) != NULL &&
		    (adapter_duration(v, &d) != 0 || d <= 0)) {
			snprintf(why, len, "adapter.%s must be a duration such as "
			    "30s", k);
			return -1;
		}
	}
	return 0;
}

/*
 * The command line: the entry's cmd plus the stream-json flags it lacks,
 * and corral's tools (tools:), and --resume SESSION when a request asked
 * for that session.
 */
static char **
adapter_claude_argv(struct agent *a)
{
	static const char *need[] = { "-p", "--input-format", "stream-json",
	    "--output-format", "stream-json", "--verbose", NULL };
	struct agent_conf	*ac = a->conf;
	struct claude_state	*st = a->adapter->state;
	char			**argv, **tools;
	size_t			 i, j, n = 0;
	int			 has_p = 0, has_in = 0, has_out = 0, has_v = 0;

	for (i = 1; i < ac->argc; i++) {
		if (strcmp(ac->argv[i], "-p") == 0 ||
		    strcmp(ac->argv[i], "--print") == 0)
			has_p = 1;
		else if (strncmp(ac->argv[i], "--input-format", 14) == 0)
			has_in = 1;
		else if (strncmp(ac->argv[i], "--output-format", 15) == 0)
			has_out = 1;
		else if (strcmp(ac->argv[i], "--verbose") == 0)
			has_v = 1;
	}
	tools = adapter_tools_args(a, "claude");	/* corral's, if any */
	argv = xcalloc(ac->argc + 9 + adapter_tools_count(tools),
	    sizeof *argv);
	argv[n++] = xstrdup(ac->argv[0]);
	for (j = 0; need[j] != NULL; j++) {
		if ((j == 0 && has_p) || ((j == 1 || j == 2) && has_in) ||
		    ((j == 3 || j == 4) && has_out) || (j == 5 && has_v))
			continue;
		argv[n++] = xstrdup(need[j]);
	}
	for (i = 1; i < ac->argc; i++)
		argv[n++] = xstrdup(ac->argv[i]);
	for (i = 0; tools != NULL && tools[i] != NULL; i++)
		argv[n++] = tools[i];
	free(tools);
	if (st != NULL) {
		/* The session a request asked for (adapter_claude_switch). */
		free(st->resumed);
		st->resumed = st->resume;
		st->resume = NULL;
		if (st->resumed != NULL) {
			argv[n++] = xstrdup("--resume");
			argv[n++] = xstrdup(st->resumed);
		}
	}
	argv[n] = NULL;
	return argv;
}

/* Write one JSON object to the tool's stdin, as one compact line. */
static void
adapter_claude_send(struct agent *a, json_t *j)
{
	char	*s;

	s = jsonw_dumps(j, CORRAL_JSON_FLAGS);
	json_decref(j);
	if (s == NULL) {
		log_warnx("agent %s: a line for claude could not be encoded",
		    a->id);
		return;
	}
	agent_send(a, s, strlen(s));
	free(s);
}

/* Remember a request so that it can be found again later. */
static void
adapter_claude_ref(struct claude_ref *r, const struct msg *m)
{
	strlcpy(r->id, m->id, sizeof r->id);
	r->attempts = m->attempts;
	r->set = 1;
}

/*
 * The request a reference names, if it is still outstanding with this
 * agent on the same attempt (it may have timed out, or come back as a
 * retry, meanwhile).
 */
static struct msg *
adapter_claude_find(struct agent *a, const struct claude_ref *r)
{
	if (!r->set)
		return NULL;
	return adapter_find(a, r->id, r->attempts);
}

/* Forget the turn's collected output. */
static void
adapter_claude_reset_turn(struct claude_state *st)
{
	st->primary = 0;
	if (st->result != NULL)
		json_decref(st->result);
	st->result = NULL;
	free(st->text);
	st->text = NULL;
	st->notes = 0;
}

/* Send a control request (interrupt, initialize) with a fresh id. */
static void
adapter_claude_control(struct agent *a, const char *subtype, const char *id)
{
	struct claude_state	*st = a->adapter->state;
	char			 buf[64];

	if (id == NULL) {
		snprintf(buf, sizeof buf, "corral-%s-%u", subtype,
		    ++st->ctl_seq);
		id = buf;
	}
	adapter_claude_send(a, json_pack("{s:s, s:s, s:{s:s}}", "type",
	    "control_request", "request_id", id, "request", "subtype",
	    subtype));
}

/* Send a user message line. */
static void
adapter_claude_user(struct agent *a, const char *text)
{
	adapter_claude_send(a, json_pack("{s:s, s:{s:s, s:o}}", "type", "user",
	    "message", "role", "user", "content", jsonw_text(text,
	    strlen(text))));
}

/* Start a request's turn: its prompt as one user message. */
static void
adapter_claude_begin(struct agent *a, struct msg *m)
{
	struct claude_state	*st = a->adapter->state;
	char			*prompt;

	if ((prompt = adapter_prompt(a, m, st->settings.prompt)) == NULL)
		return;
	adapter_claude_ref(&st->cur, m);
	adapter_claude_reset_turn(st);
	st->phase = CLAUDE_TURN;
	st->turns++;
	log_debug("agent %s: request %s: a turn of %zu bytes", a->id, m->id,
	    strlen(prompt));
	adapter_claude_user(a, prompt);
	free(prompt);
}

/* Return nonzero if the process runs in session id. */
static int
adapter_claude_in(struct claude_state *st, const char *id)
{
	if (st->session != NULL)
		return strcmp(st->session, id) == 0;
	/* Its init line comes with its first turn. */
	return st->resumed != NULL && strcmp(st->resumed, id) == 0;
}

/*
 * A request names a session (inputs.parameters.session) the process does
 * not run in.  Claude Code resumes a session only when it starts
 * (--resume: /resume is refused in headless mode), so the process is
 * restarted with it and the request comes back afterwards
 * (adapter_claude_keeps).  One that could not be resumed is an error.
 * Returns nonzero when the request was taken care of here.
 */
static int
adapter_claude_switch(struct agent *a, struct msg *m, const char *want)
{
	struct claude_state	*st = a->adapter->state;
	char			 why[512];

	if (adapter_claude_in(st, want))
		return 0;
	st->switching.set = 0;
	if (st->resume_failed != NULL && strcmp(st->resume_failed, want) ==
	    0) {
		snprintf(why, sizeof why, "claude could not resume session %s "
		    "(is it kept under this agent's CLAUDE_CONFIG_DIR and "
		    "cwd?)", want);
		adapter_reply_error(a, m, "session_not_found", "REJECTED", why,
		    json_pack("{s:s}", "session_id", want));
		return 1;
	}
	adapter_claude_ref(&st->switching, m);
	free(st->resume);
	st->resume = xstrdup(want);
	log_info("agent %s: request %s resumes claude session %s; restarting "
	    "claude", a->id, m->id, want);
	agent_news(a, AE_RESTART, "to resume another session");
	return 1;
}

/*
 * The session a resumed run continues (a new string), for a request
 * that names none, or NULL.  One claude could not resume is dropped: the
 * request starts a new conversation, as it would have.
 */
static char *
adapter_claude_carry(struct agent *a)
{
	struct claude_state	*st = a->adapter->state;

	if (st->carry == NULL)
		return NULL;
	if (st->resume_failed != NULL && strcmp(st->resume_failed,
	    st->carry) == 0) {
		log_warnx("agent %s: claude could not resume session %s from "
		    "the log; the request starts a new conversation", a->id,
		    st->carry);
		free(st->carry);
		st->carry = NULL;
		return NULL;
	}
	return xstrdup(st->carry);
}

/*
 * Continue session (a resumed run's, from the log) with the requests
 * that name none: the first restarts claude with --resume, as one naming
 * it would.  Not with session: fresh, where each is a new conversation.
 */
static int
adapter_claude_resume_session(struct agent *a, const char *session)
{
	struct claude_state	*st = a->adapter->state;

	if (st->fresh)
		return -1;
	if (st->session == NULL && st->turns == 0 && st->carry == NULL) {
		st->carry = xstrdup(session);
		log_info("agent %s: claude resumes session %s from the log",
		    a->id, session);
	}
	return 0;
}

/* Is m the request a restart of ours is for?  It is given back after. */
static int
adapter_claude_keeps(struct agent *a, struct msg *m)
{
	struct claude_state	*st = a->adapter->state;

	return st != NULL && st->switching.set &&
	    strcmp(st->switching.id, m->id) == 0;
}

/* Its requests are turns of the process's conversation: keep order. */
static int
adapter_claude_ordered(struct agent *a)
{
	return 1;
}

/* Take a request: begin its turn, or hold it until the process is free. */
static void
adapter_claude_request(struct agent *a, struct msg *m)
{
	struct claude_state	*st = a->adapter->state;
	char			*want;
	int			 taken, carried = 0;

	if (st->phase != CLAUDE_IDLE || st->pending.set) {
		/* Only one request at a time (inflight_cap), so one waits. */
		adapter_claude_ref(&st->pending, m);
		return;
	}
	if ((want = adapter_request_session(m)) == NULL &&
	    (want = adapter_claude_carry(a)) != NULL)
		carried = 1;
	if (want != NULL) {
		taken = adapter_claude_switch(a, m, want);
		free(want);
		if (taken)
			return;
		/* It continues this session: no /clear for it. */
		st->switching.set = 0;
		if (carried) {
			free(st->carry);
			st->carry = NULL;
		}
		adapter_claude_begin(a, m);
		return;
	}
	if (st->fresh && st->turns > 0) {
		/* A new conversation: /clear, then the request. */
		adapter_claude_ref(&st->pending, m);
		st->phase = CLAUDE_CLEARING;
		adapter_claude_reset_turn(st);
		adapter_claude_user(a, "/clear");
		return;
	}
	adapter_claude_begin(a, m);
}

/* The process is free: start the request held back, if it still waits. */
static void
adapter_claude_next(struct agent *a)
{
	struct claude_state	*st = a->adapter->state;
	struct msg		*m;

	st->phase = CLAUDE_IDLE;
	ev_timer_stop(LOOP, &st->timer);
	if (!st->pending.set)
		return;
	m = adapter_claude_find(a, &st->pending);
	st->pending.set = 0;
	if (m != NULL)
		adapter_claude_request(a, m);
}

/* Add a result's spending to what the next reply reports. */
static void
adapter_claude_spent(struct claude_state *st, json_t *res)
{
	json_t		*mu, *u, *v;
	const char	*k;
	double		 total, in = 0, out = 0;

	/* Per turn: model_usage_since_last_result, else usage. */
	if ((mu = json_object_get(res, "model_usage_since_last_result")) !=
	    NULL && json_is_object(mu) && json_object_size(mu) > 0) {
		json_object_foreach(mu, k, u) {
			in += json_number_value(json_object_get(u,
			    "inputTokens")) + json_number_value(
			    json_object_get(u, "cacheReadInputTokens")) +
			    json_number_value(json_object_get(u,
			    "cacheCreationInputTokens"));
			out += json_number_value(json_object_get(u,
			    "outputTokens"));
		}
	} else if ((u = json_object_get(res, "usage")) != NULL) {
		in = json_number_value(json_object_get(u, "input_tokens")) +
		    json_number_value(json_object_get(u,
		    "cache_read_input_tokens")) + json_number_value(
		    json_object_get(u, "cache_creation_input_tokens"));
		out = json_number_value(json_object_get(u, "output_tokens"));
	}
	st->tokens_in += in;
	st->tokens_out += out;
	/* total_cost_usd is cumulative; /clear or a new process resets it. */
	if ((v = json_object_get(res, "total_cost_usd")) != NULL &&
	    json_is_number(v)) {
		total = json_number_value(v);
		st->usd += total >= st->last_total ? total - st->last_total :
		    total;
		st->last_total = total;
	}
}

/* Put the collected spending into a reply and start counting afresh. */
static void
adapter_claude_cost(struct claude_state *st, json_t *env)
{
	json_t	*trace = json_object_get(env, "trace");

	json_object_set_new(trace, "cost", json_pack("{s:o, s:o, s:o}",
	    "input_tokens", adapter_number(st->tokens_in), "output_tokens",
	    adapter_number(st->tokens_out), "usd", adapter_number(
	    st->usd)));
	st->tokens_in = st->tokens_out = st->usd = 0;
}

/* Drop the members of an object that are null. */
static void
adapter_claude_prune(json_t *o)
{
	const char	*k;
	json_t		*v;
	void		*tmp;

	json_object_foreach_safe(o, tmp, k, v)
		if (json_is_null(v))
			json_object_del(o, k);
}

/* Record an event of the tool in the audit log. */
static void
adapter_claude_audit(struct agent *a, const char *kind, json_t *fields)
{
	struct claude_state	*st = a->adapter->state;

	if (fields == NULL)
		fields = json_object();
	json_object_set_new(fields, "adapter", json_string("claude"));
	json_object_set_new(fields, "kind", json_string(kind));
	if (st->cur.set && st->phase == CLAUDE_TURN)
		json_object_set_new(fields, "request", json_string(st->cur.id));
	adapter_claude_prune(fields);
	auditlog_json("adapter_event", a->id, fields);
}

/* A string cut to the size kept in audit events. */
static json_t *
adapter_claude_short(const char *s)
{
	size_t	n;

	if (s == NULL)
		return json_null();
	n = strlen(s);
	return jsonw_text(s, n > CLAUDE_AUDIT_MAX ? CLAUDE_AUDIT_MAX : n);
}

/*
 * Return nonzero if Claude Code's api_error names a failure that may pass
 * when tried again: the API could not be reached or went quiet.  Claude
 * Code says so without an HTTP status (api_error_status is null).
 */
static int
adapter_claude_transient(const char *api_error)
{
	static const char *const transient[] = { "connection_failed",
	    "stream_idle_timeout", "no_response", "computer_slept",
	    "network_edge_blocked", "usage_limit_reached", NULL };
	size_t	i;

	for (i = 0; api_error != NULL && transient[i] != NULL; i++)
		if (strcmp(api_error, transient[i]) == 0)
			return 1;
	return 0;
}

/*
 * Choose the error code and category of a failed turn's result: by the
 * HTTP status when there is one, else by Claude Code's api_error word
 * (connection_failed when the API refuses the connection).
 */
static void
adapter_claude_classify(json_t *res, const char **code, const char **cat)
{
	const char	*sub = json_string_value(json_object_get(res, "subtype"));
	const char	*api = json_string_value(json_object_get(res,
			    "api_error"));
	json_int_t	 status;

	status = json_integer_value(json_object_get(res, "api_error_status"));
	*code = "claude_error";
	*cat = "INTERNAL";
	if (status != 0) {
		*code = "api_error";
		*cat = status == 429 || status >= 500 ? "UNAVAILABLE" :
		    "REJECTED";
	} else if (api != NULL) {
		*code = "api_error";
		*cat = adapter_claude_transient(api) ? "UNAVAILABLE" :
		    "INTERNAL";
	} else if (sub != NULL && strcmp(sub, "error_max_turns") == 0) {
		*code = "max_turns";
		*cat = "REJECTED";
	} else if (sub != NULL && strcmp(sub, "error_during_execution") == 0)
		*code = "execution_error";
}

/* The turn is over: answer its request (unless it was given up). */
static void
adapter_claude_finish(struct agent *a)
{
	struct claude_state	*st = a->adapter->state;
	struct msg		*m;
	json_t			*env, *content, *res = st->result, *data, *v;
	const char		*code, *cat, *text;
	int			 is_error;

	adapter_claude_ended_all(a);
	m = adapter_claude_find(a, &st->cur);
	st->cur.set = 0;
	if (m == NULL) {
		log_info("agent %s: a turn ended after its request was given "
		    "up", a->id);
		adapter_claude_reset_turn(st);
		adapter_claude_next(a);
		return;
	}
	is_error = json_is_true(json_object_get(res, "is_error"));
	text = st->text != NULL ? st->text : "";
	data = json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?}",
	    "session_id", json_object_get(res, "session_id"),
	    "subtype", json_object_get(res, "subtype"),
	    "num_turns", json_object_get(res, "num_turns"),
	    "stop_reason", json_object_get(res, "stop_reason"),
	    "terminal_reason", json_object_get(res, "terminal_reason"));
	if (data == NULL)
		data = json_object();
	adapter_claude_prune(data);
	if ((v = json_object_get(res, "permission_denials")) != NULL &&
	    json_array_size(v) > 0)
		json_object_set(data, "permission_denials", v);
	if (is_error) {
		adapter_claude_classify(res, &code, &cat);
		if (*text == '\0')
			text = "claude ended the turn with an error";
		env = adapter_envelope(a, m, NULL, 2);
		json_object_update_new(data, json_pack("{s:s, s:s, s:o, s:b}",
		    "code", code, "category", cat, "message", jsonw_text(
		    text, strlen(text)), "retryable", strcmp(cat,
		    "UNAVAILABLE") == 0));
		if ((v = json_object_get(res, "api_error_status")) != NULL &&
		    !json_is_null(v))
			json_object_set(data, "api_error_status", v);
		if (json_is_string(v = json_object_get(res, "api_error")))
			json_object_set(data, "api_error", v);
		log_info("agent %s: request %s: claude error: %s", a->id, m->id,
		    code);
	} else
		env = adapter_envelope_ok(a, m, &st->settings, 0);
	content = json_object_get(env, "content");
	json_object_set_new(content, "text", jsonw_text(text,
	    strlen(text)));
	json_object_set_new(content, "data", data);
	if (st->model != NULL)
		json_object_set_new(json_object_get(env, "agent"), "model",
		    json_string(st->model));
	adapter_claude_cost(st, env);
	adapter_claude_reset_turn(st);
	adapter_reply(a, m, env);
	/* The reply may have stopped the agent; it is idle either way. */
	if (a->adapter != NULL)
		adapter_claude_next(a);
}

/* A result line: one turn of the CLI's ended. */
static void
adapter_claude_result(struct agent *a, json_t *j)
{
	struct claude_state	*st = a->adapter->state;
	const char		*origin, *text;

	adapter_claude_spent(st, j);
	origin = json_string_value(json_object_get(json_object_get(j,
	    "origin"), "kind"));
	text = json_string_value(json_object_get(j, "result"));
	if (origin != NULL && strcmp(origin, "task-notification") == 0) {
		/*
		 * A follow-up turn about background sub-agents: part of the
		 * request whose own result came, else of an earlier one.
		 */
		st->notes = 0;
		if (st->phase == CLAUDE_TURN && st->primary)
			adapter_append(&st->text, text, "\n\n");
		else
			log_debug("agent %s: a follow-up result outside its "
			    "turn", a->id);
	} else {
		switch (st->phase) {
		case CLAUDE_TURN:
			if (st->primary)
				break;
			st->primary = 1;
			st->result = json_incref(j);
			adapter_append(&st->text, text, "\n\n");
			break;
		case CLAUDE_CLEARING:
			log_debug("agent %s: conversation cleared", a->id);
			st->turns = 0;
			adapter_claude_next(a);
			return;
		case CLAUDE_DRAINING:
			log_info("agent %s: the interrupted turn ended (%s)",
			    a->id, json_string_value(json_object_get(j,
			    "subtype")));
			adapter_claude_next(a);
			return;
		case CLAUDE_STARTING:
			if (st->resumed != NULL && json_is_true(
			    json_object_get(j, "is_error"))) {
				/* It exits now; the request is answered. */
				log_warnx("agent %s: claude could not resume "
				    "session %s", a->id, st->resumed);
				free(st->resume_failed);
				st->resume_failed = xstrdup(st->resumed);
				return;
			}
			log_debug("agent %s: a result before initialize",
			    a->id);
			return;
		default:
			log_debug("agent %s: a result with no turn running",
			    a->id);
			return;
		}
	}
	if (st->phase == CLAUDE_TURN && st->primary && st->bg_running == 0 &&
	    st->notes == 0)
		adapter_claude_finish(a);
}

/* The request whose turn runs, if it is still outstanding. */
static struct msg *
adapter_claude_current(struct agent *a)
{
	struct claude_state	*st = a->adapter->state;

	if (st->phase != CLAUDE_TURN)
		return NULL;
	return adapter_claude_find(a, &st->cur);
}

/*
 * The sub-agent a message or event is about: by its task_id, else by the
 * id of the Task tool call that started it (parent_tool_use_id); with
 * its record in *recp.  NULL when it is none we know.
 */
static struct external *
adapter_claude_sub(struct agent *a, const char *task, const char *use,
    json_t **recp)
{
	struct claude_state	*st = a->adapter->state;
	json_t			*rec = NULL;
	const char		*ext;

	if (task != NULL)
		rec = json_object_get(st->tasks, task);
	if (rec == NULL && use != NULL && (task = json_string_value(
	    json_object_get(st->uses, use))) != NULL)
		rec = json_object_get(st->tasks, task);
	if (recp != NULL)
		*recp = rec;
	if ((ext = json_string_value(json_object_get(rec, "ext"))) == NULL)
		return NULL;
	return external_find(ext);
}

/* What a sub-agent's tool reported it used (usage of a task event). */
static void
adapter_claude_sub_usage(struct external *x, json_t *usage)
{
	json_t	*t = json_object_get(usage, "total_tokens");
	json_t	*u = json_object_get(usage, "tool_uses");

	if (x != NULL && (t != NULL || u != NULL))
		external_usage(x, json_is_number(t) ? json_number_value(t) : -1,
		    json_is_number(u) ? json_number_value(u) : -1, 0);
}

/*
 * The sub-agent that started the one task_started j announces, when one
 * did (Claude Code offers its Agent tool to its sub-agents too): the one
 * its parent_task_id names, else the one whose message made the Agent
 * call that started it.  NULL: the CLI's own model did.
 */
static const char *
adapter_claude_up(struct agent *a, json_t *j)
{
	struct claude_state	*st = a->adapter->state;
	json_t			*rec;
	const char		*use;

	rec = json_object_get(st->tasks, json_string_value(json_object_get(j,
	    "parent_task_id")) != NULL ? json_string_value(json_object_get(j,
	    "parent_task_id")) : "");
	if (rec != NULL)
		return json_string_value(json_object_get(rec, "ext"));
	if ((use = json_string_value(json_object_get(j, "tool_use_id"))) ==
	    NULL)
		return NULL;
	return json_string_value(json_object_get(st->callers, use));
}

/*
 * A sub-agent started (task_started): an external agent under this one
 * (or under the sub-agent that started it), found again later by its
 * task_id or by the Task call's tool_use_id.
 */
static void
adapter_claude_task_start(struct agent *a, json_t *j, const char *tid)
{
	struct claude_state	*st = a->adapter->state;
	struct msg		*m = adapter_claude_current(a);
	const char		*desc, *use, *type, *up;
	char			 ext[CORRAL_ID_MAX + 80];
	json_t			*rec;
	int			 bg;

	if (json_object_get(st->tasks, tid) != NULL)
		return;
	bg = json_is_true(json_object_get(j, "is_backgrounded"));
	type = json_string_value(json_object_get(j, "subagent_type"));
	desc = json_string_value(json_object_get(j, "description"));
	if (desc == NULL)
		desc = type;
	snprintf(ext, sizeof ext, "%s/%s", a->id, tid);
	rec = json_pack("{s:b, s:b, s:s, s:s}", "bg", bg, "done", 0, "ext",
	    ext, "desc", desc != NULL ? desc : "sub-agent");
	json_object_set_new(st->tasks, tid, rec);
	if ((use = json_string_value(json_object_get(j, "tool_use_id"))) !=
	    NULL)
		json_object_set_new(st->uses, use, json_string(tid));
	if (bg)
		st->bg_running++;
	up = adapter_claude_up(a, j);
	log_info("agent %s: sub-agent %s started (%s%s%s%s)", a->id, ext,
	    desc != NULL ? desc : "?", bg ? ", in the background" : "",
	    up != NULL ? ", by " : "", up != NULL ? up : "");
	(void)external_start(a->id, ext, desc != NULL ? desc : "sub-agent",
	    "claude-task", type, m != NULL ? m->id : NULL, up);
	adapter_progressf(a, m, "sub-agent %s started: %s", ext,
	    desc != NULL ? desc : "?");
}

/* A sub-agent that Claude Code said ended ends as an external agent. */
static void
adapter_claude_ended(struct external *x, json_t *rec)
{
	const char	*status = json_string_value(json_object_get(rec,
			    "status"));
	const char	*why = json_string_value(json_object_get(rec,
			    "error"));

	if (x == NULL || !external_running(x) || status == NULL)
		return;
	external_end(x, strcmp(status, "completed") == 0 ? "STOPPED" :
	    "FAILED", why != NULL ? why : status);
}

/*
 * A task event: a sub-agent starts, reports its usage, or ends; the
 * background tasks' counters follow, for the turn waits for them.
 */
static void
adapter_claude_task(struct agent *a, const char *sub, json_t *j)
{
	struct claude_state	*st = a->adapter->state;
	struct external		*x;
	const char		*tid, *status, *why;
	json_t			*rec;

	if ((tid = json_string_value(json_object_get(j, "task_id"))) == NULL)
		return;
	if (strcmp(sub, "task_started") == 0) {
		adapter_claude_task_start(a, j, tid);
		return;
	}
	x = adapter_claude_sub(a, tid, NULL, &rec);
	adapter_claude_sub_usage(x, json_object_get(j, "usage"));
	if (strcmp(sub, "task_updated") == 0)
		status = json_string_value(json_object_get(json_object_get(j,
		    "patch"), "status"));
	else
		status = json_string_value(json_object_get(j, "status"));
	if (status == NULL || strcmp(status, "running") == 0 ||
	    strcmp(status, "pending") == 0)
		return;
	if (rec != NULL && !json_is_true(json_object_get(rec, "done"))) {
		json_object_set_new(rec, "done", json_true());
		json_object_set_new(rec, "status", json_string(status));
		if ((why = json_string_value(json_object_get(json_object_get(j,
		    "patch"), "error"))) != NULL)
			json_object_set_new(rec, "error", json_string(why));
		if (json_is_true(json_object_get(rec, "bg")) &&
		    st->bg_running > 0)
			st->bg_running--;
		log_info("agent %s: sub-agent %s %s", a->id, x != NULL ? x->id :
		    tid, status);
		adapter_progressf(a, adapter_claude_current(a),
		    "sub-agent %s %s", x != NULL ? x->id : tid, status);
	}
	/*
	 * task_updated says it ended; task_notification follows with what
	 * it used, and ends it here (adapter_claude_ended, should none come).
	 */
	if (strcmp(sub, "task_notification") == 0 && rec != NULL)
		adapter_claude_ended(x, rec);
	if (strcmp(sub, "task_notification") == 0 && rec != NULL &&
	    json_is_true(json_object_get(rec, "bg")))
		st->notes++;	/* Claude Code will report on it in a turn */
}

/*
 * Every sub-agent Claude Code said ended is ended (the turn is over, and
 * no notification came for some of them).
 */
static void
adapter_claude_ended_all(struct agent *a)
{
	struct claude_state	*st = a->adapter->state;
	const char		*tid;
	json_t			*rec;

	json_object_foreach(st->tasks, tid, rec)
		if (json_is_true(json_object_get(rec, "done")))
			adapter_claude_ended(adapter_claude_sub(a, tid, NULL,
			    NULL), rec);
}
/* A system line: init, sub-agent events, retries, denials. */
static void
adapter_claude_system(struct agent *a, json_t *j)
{
	struct claude_state	*st = a->adapter->state;
	const char		*sub = json_string_value(json_object_get(j,
				    "subtype"));
	const char		*s;

	if (sub == NULL)
		return;
	if (strcmp(sub, "init") == 0) {
		if ((s = json_string_value(json_object_get(j, "model"))) !=
		    NULL) {
			free(st->model);
			st->model = xstrdup(s);
		}
		if ((s = json_string_value(json_object_get(j,
		    "session_id"))) != NULL && (st->session == NULL ||
		    strcmp(st->session, s) != 0)) {
			free(st->session);
			st->session = xstrdup(s);
			log_info("agent %s: claude session %s (%s)", a->id, s,
			    st->model != NULL ? st->model : "?");
		}
	} else if (strncmp(sub, "task_", 5) == 0) {
		adapter_claude_task(a, sub, j);
		adapter_claude_audit(a, sub, json_pack("{s:O?, s:O?, s:O?}",
		    "task_id", json_object_get(j, "task_id"), "status",
		    json_object_get(j, "status"), "description",
		    json_object_get(j, "description")));
	} else if (strcmp(sub, "api_retry") == 0) {
		log_warnx("agent %s: claude retries the API (attempt %lld of "
		    "%lld, status %lld)", a->id, json_integer_value(
		    json_object_get(j, "attempt")), json_integer_value(
		    json_object_get(j, "max_retries")), json_integer_value(
		    json_object_get(j, "error_status")));
		adapter_claude_audit(a, sub, json_pack("{s:O?, s:O?}", "attempt",
		    json_object_get(j, "attempt"), "error_status",
		    json_object_get(j, "error_status")));
	} else if (strcmp(sub, "permission_denied") == 0) {
		s = json_string_value(json_object_get(j, "message"));
		log_info("agent %s: claude was refused a tool: %s", a->id,
		    s != NULL ? s : "?");
		adapter_claude_audit(a, sub, json_pack("{s:O?, s:o}",
		    "tool_name", json_object_get(j, "tool_name"), "message",
		    adapter_claude_short(s)));
	}
}

/* The text of a tool_result block: a string, or its first text item. */
static const char *
adapter_claude_result_text(json_t *b)
{
	json_t	*c = json_object_get(b, "content"), *e;
	size_t	 i;

	if (json_is_string(c))
		return json_string_value(c);
	json_array_foreach(c, i, e)
		if (json_is_string(json_object_get(e, "text")))
			return json_string_value(json_object_get(e, "text"));
	return NULL;
}

/*
 * An assistant or user line: its tool calls, tool results and text go on
 * record and out as progress of the request; a sub-agent's
 * (parent_tool_use_id) count for its external agent too, and its
 * progress says whose it is.
 */
static void
adapter_claude_message(struct agent *a, const char *type, json_t *j)
{
	struct claude_state	*st = a->adapter->state;
	struct msg		*m = adapter_claude_current(a);
	struct external		*x = NULL;
	json_t			*content, *b, *parent, *u;
	const char		*bt, *name, *text;
	char			*in, pre[80] = "";
	size_t			 i;

	parent = json_object_get(j, "parent_tool_use_id");
	if (json_is_string(parent) && (x = adapter_claude_sub(a,
	    json_string_value(json_object_get(j, "agent_id")),
	    json_string_value(parent), NULL)) != NULL) {
		snprintf(pre, sizeof pre, "[%.60s] ", x->name);
		u = json_object_get(json_object_get(j, "message"), "usage");
		if (strcmp(type, "assistant") == 0 && u != NULL)
			external_usage(x, -1, -1, json_number_value(
			    json_object_get(u, "input_tokens")) +
			    json_number_value(json_object_get(u,
			    "output_tokens")));
	}
	content = json_object_get(json_object_get(j, "message"), "content");
	if (!json_is_array(content))
		return;
	json_array_foreach(content, i, b) {
		bt = json_string_value(json_object_get(b, "type"));
		if (bt == NULL)
			continue;
		if (strcmp(bt, "tool_use") == 0) {
			name = json_string_value(json_object_get(b, "name"));
			in = jsonw_dumps(json_object_get(b, "input"),
			    CORRAL_JSON_FLAGS | JSON_ENCODE_ANY);
			log_debug("agent %s: claude calls %s", a->id,
			    name != NULL ? name : "?");
			adapter_claude_audit(a, "tool_use", json_pack(
			    "{s:O?, s:O?, s:o, s:O?}", "tool", json_object_get(b,
			    "name"), "tool_use_id", json_object_get(b, "id"),
			    "input", adapter_claude_short(in), "parent_tool_use_id",
			    json_is_string(parent) ? parent : NULL));
			adapter_progressf(a, m, "%s%s %.200s", pre,
			    name != NULL ? name : "?", in != NULL ? in : "");
			free(in);
			if (x != NULL)
				external_tool(x, name);
			/* A sub-agent's Agent call: what it starts is its. */
			if (x != NULL && name != NULL && (strcmp(name,
			    "Agent") == 0 || strcmp(name, "Task") == 0) &&
			    json_is_string(json_object_get(b, "id")))
				json_object_set_new(st->callers,
				    json_string_value(json_object_get(b, "id")),
				    json_string(x->id));
		} else if (strcmp(bt, "tool_result") == 0) {
			adapter_claude_audit(a, "tool_result", json_pack(
			    "{s:O?, s:b, s:O?}", "tool_use_id", json_object_get(b,
			    "tool_use_id"), "is_error", json_is_true(
			    json_object_get(b, "is_error")), "parent_tool_use_id",
			    json_is_string(parent) ? parent : NULL));
			text = adapter_claude_result_text(b);
			adapter_progressf(a, m, "%s%s: %.200s", pre,
			    json_is_true(json_object_get(b, "is_error")) ?
			    "tool error" : "tool result", text != NULL ? text :
			    "");
		} else if (strcmp(bt, "text") == 0 &&
		    strcmp(type, "assistant") == 0) {
			text = json_string_value(json_object_get(b, "text"));
			if (json_is_string(parent))
				adapter_claude_audit(a, "subagent_text",
				    json_pack("{s:O, s:O?, s:o}",
				    "parent_tool_use_id", parent, "agent_id",
				    json_object_get(j, "agent_id"), "text",
				    adapter_claude_short(text)));
			if (text != NULL)
				adapter_progressf(a, m, "%s%s", pre, text);
		}
	}
}

/* A tool has run for a while (tool_progress): say so, as progress. */
static void
adapter_claude_tool_progress(struct agent *a, json_t *j)
{
	struct external	*x;
	const char	*name = json_string_value(json_object_get(j,
			    "tool_name"));
	char		 pre[80] = "";

	x = adapter_claude_sub(a, json_string_value(json_object_get(j,
	    "task_id")), json_string_value(json_object_get(j,
	    "parent_tool_use_id")), NULL);
	if (x != NULL)
		snprintf(pre, sizeof pre, "[%.60s] ", x->name);
	adapter_progressf(a, adapter_claude_current(a), "%s%s running, %llds",
	    pre, name != NULL ? name : "a tool", (long long)json_integer_value(
	    json_object_get(j, "elapsed_time_seconds")));
}

/* Refuse a control request from the CLI (permission prompts and such). */
static void
adapter_claude_refuse(struct agent *a, json_t *j)
{
	json_t		*id = json_object_get(j, "request_id");
	const char	*sub = json_string_value(json_object_get(json_object_get(
			    j, "request"), "subtype"));

	log_warnx("agent %s: claude asked for %s; corral does not answer such "
	    "requests", a->id, sub != NULL ? sub : "?");
	if (id == NULL)
		return;
	adapter_claude_send(a, json_pack("{s:s, s:{s:s, s:O, s:s}}", "type",
	    "control_response", "response", "subtype", "error", "request_id",
	    id, "error", "not supported by corral's claude adapter"));
}

/* A line from Claude Code's stdout. */
static int
adapter_claude_line(struct agent *a, const char *line, size_t len)
{
	struct claude_state	*st = a->adapter->state;
	json_error_t		 e;
	json_t			*j;
	const char		*type, *rid;
	char			 esc[256];

	if ((j = json_loadb(line, len, 0, &e)) == NULL || !json_is_object(j)) {
		log_escape(esc, sizeof esc, line, len);
		log_warnx("agent %s: claude wrote a line that is not a JSON "
		    "object, ignored: %s", a->id, esc);
		if (j != NULL)
			json_decref(j);
		return 0;
	}
	type = json_string_value(json_object_get(j, "type"));
	if (type == NULL)
		type = "";
	if (strcmp(type, "result") == 0)
		adapter_claude_result(a, j);
	else if (strcmp(type, "system") == 0)
		adapter_claude_system(a, j);
	else if (strcmp(type, "assistant") == 0 || strcmp(type, "user") == 0)
		adapter_claude_message(a, type, j);
	else if (strcmp(type, "tool_progress") == 0)
		adapter_claude_tool_progress(a, j);
	else if (strcmp(type, "control_response") == 0) {
		rid = json_string_value(json_object_get(json_object_get(j,
		    "response"), "request_id"));
		if (rid != NULL && strcmp(rid, CLAUDE_INIT_ID) == 0 &&
		    st->phase == CLAUDE_STARTING) {
			adapter_claude_next(a);
			adapter_ready(a, "claude answered initialize");
		} else
			log_debug("agent %s: claude answered %s", a->id,
			    rid != NULL ? rid : "?");
	} else if (strcmp(type, "control_request") == 0)
		adapter_claude_refuse(a, j);
	json_decref(j);
	return 0;
}

/* The initialize answer or the end of an interrupted turn did not come. */
static void
adapter_claude_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct claude_state	*st = w->data;
	struct agent		*a = st->agent;

	if (st->phase == CLAUDE_STARTING) {
		log_warnx("agent %s: claude did not answer initialize within "
		    "%gs; restarting it", a->id, st->init_timeout);
		agent_news(a, AE_RESTART, "no answer to initialize");
	} else if (st->phase == CLAUDE_DRAINING) {
		log_warnx("agent %s: the interrupted turn did not end within "
		    "%gs; restarting claude", a->id, st->interrupt_timeout);
		agent_news(a, AE_RESTART, "an interrupted turn did not end");
	}
}

/* A request is given up: interrupt its turn, or forget it if it waits. */
static void
adapter_claude_cancel(struct agent *a, struct msg *m)
{
	struct claude_state	*st = a->adapter->state;

	if (st->switching.set && strcmp(st->switching.id, m->id) == 0)
		st->switching.set = 0;	/* its restart goes on */
	if (st->pending.set && strcmp(st->pending.id, m->id) == 0) {
		st->pending.set = 0;
		return;
	}
	if (!st->cur.set || strcmp(st->cur.id, m->id) != 0 ||
	    st->phase != CLAUDE_TURN)
		return;
	st->cur.set = 0;
	if (st->primary) {
		/*
		 * The turn itself is over; only background sub-agents were
		 * awaited.  Their follow-up result, when it comes, is known by
		 * its origin and cannot be taken for the next request's.
		 */
		log_info("agent %s: request %s given up while its background "
		    "sub-agents ran", a->id, m->id);
		adapter_claude_reset_turn(st);
		adapter_claude_next(a);
		return;
	}
	st->phase = CLAUDE_DRAINING;
	log_info("agent %s: interrupting claude (request %s given up)", a->id,
	    m->id);
	adapter_claude_audit(a, "interrupt", json_pack("{s:s}", "request",
	    m->id));
	adapter_claude_control(a, "interrupt", NULL);
	ev_timer_stop(LOOP, &st->timer);
	ev_timer_set(&st->timer, st->interrupt_timeout, 0);
	ev_timer_start(LOOP, &st->timer);
}

/*
 * A heartbeat: a control request Claude Code does not know, which it
 * answers at once with an error response, even mid-turn, and which
 * changes nothing; the answer is the sign of life.
 */
static void
adapter_claude_ping(struct agent *a)
{
	adapter_claude_control(a, "ping", NULL);
}

/* The process (re)started: read the settings once, reset, initialize. */
static int
adapter_claude_start(struct agent *a)
{
	struct claude_state	*st = a->adapter->state;
	json_t			*c = a->conf->adapter_conf, *v;

	if (st == NULL) {
		st = xcalloc(1, sizeof *st);
		st->agent = a;
		v = json_object_get(c, "session");
		st->fresh = v != NULL && strcmp(json_string_value(v), "fresh") ==
		    0;
		adapter_settings(&st->settings, c);
		st->init_timeout = 60;
		if ((v = json_object_get(c, "init_timeout")) != NULL)
			(void)adapter_duration(v, &st->init_timeout);
		st->interrupt_timeout = 10;
		if ((v = json_object_get(c, "interrupt_timeout")) != NULL)
			(void)adapter_duration(v, &st->interrupt_timeout);
		ev_timer_init(&st->timer, adapter_claude_timer_cb, 0, 0);
		st->timer.data = st;
		a->adapter->state = st;
	}
	/* A new process: a new conversation and cost counter. */
	free(st->session);
	st->session = NULL;
	adapter_claude_reset_turn(st);
	st->cur.set = st->pending.set = 0;
	st->turns = 0;
	st->last_total = 0;
	st->bg_running = 0;
	if (st->tasks != NULL)
		json_decref(st->tasks);
	st->tasks = json_object();
	if (st->uses != NULL)
		json_decref(st->uses);
	st->uses = json_object();
	if (st->callers != NULL)
		json_decref(st->callers);
	st->callers = json_object();
	/* What ran inside the last process ended with it. */
	external_parent_ended(a->id, "claude restarted");
	st->phase = CLAUDE_STARTING;
	adapter_claude_control(a, "initialize", CLAUDE_INIT_ID);
	ev_timer_stop(LOOP, &st->timer);
	ev_timer_set(&st->timer, st->init_timeout, 0);
	ev_timer_start(LOOP, &st->timer);
	return 1;
}

/* Free the state. */
static void
adapter_claude_free(struct agent *a)
{
	struct claude_state	*st = a->adapter->state;

	if (st == NULL)
		return;
	ev_timer_stop(LOOP, &st->timer);
	adapter_claude_reset_turn(st);
	if (st->tasks != NULL)
		json_decref(st->tasks);
	if (st->uses != NULL)
		json_decref(st->uses);
	if (st->callers != NULL)
		json_decref(st->callers);
	external_forget(a->id);
	free(st->model);
	free(st->session);
	free(st->resume);
	free(st->resumed);
	free(st->resume_failed);
	free(st->carry);
	free(st);
	a->adapter->state = NULL;
}

const struct adapter_ops adapter_claude_ops = {
	.name = "claude",
	.per_call = 0,
	.check = adapter_claude_check,
	.start = adapter_claude_start,
	.request = adapter_claude_request,
	.line = adapter_claude_line,
	.cancel = adapter_claude_cancel,
	.free = adapter_claude_free,
	.argv = adapter_claude_argv,
	.ping = adapter_claude_ping,
	.inflight_cap = 1,
	.keeps = adapter_claude_keeps,
	.ordered = adapter_claude_ordered,
	.resume_session = adapter_claude_resume_session,
};
