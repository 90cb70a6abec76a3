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
 * resumes the thread of the first, one at a time; a request that names a
 * thread (inputs.parameters.session) resumes that one.  Codex reports
 * usage cumulated over a thread, so a reply carries the difference.  Its
 * commands and messages are the request's progress.  A request that times
 * out or is cancelled has its process group interrupted.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

#define CODEX_AUDIT_MAX	400	/* bytes of a text kept in an audit event */

struct codex_state {
	struct adapter_cli	 cli;		/* first: adapter-cli.c's */
	double			 seen_in;	/* the thread's cumulative */
	double			 seen_out;	/* usage */
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
static void	adapter_codex_line(struct proc_call *, const char *, size_t);
static void	adapter_codex_done(struct proc_call *);
static void	adapter_codex_call_free(void *);

static const struct adapter_cli_tool adapter_codex_tool = {
	.name = "codex",
	.conversation = "thread",
	.key = "thread_id",
	.run = adapter_codex_run,
	.line = adapter_codex_line,
	.done = adapter_codex_done,
	.call_free = adapter_codex_call_free,
};

/* Check the codex settings at load time. */
static int
adapter_codex_check(const struct agent_conf *ac, char *why, size_t len)
{
	static const char *keys[] = { "conversation", "prompt", "confidence",
	    "intent", "then", "price", "stderr", NULL };
	json_t		*c = ac->adapter_conf;
	size_t		 i;

	if (adapter_check_keys(c, "codex", keys, why, len) != 0 ||
	    adapter_check_word(c, "conversation", "one", "each",
	    "adapter.conversation must be one (resume one thread) or each "
	    "(a new thread per request)", why, len) != 0 ||
	    adapter_check_common(c, why, len) != 0 ||
	    adapter_cli_check(c, why, len) != 0)
		return -1;
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
	if (a->adapter->state == NULL)
		adapter_cli_start(a, &adapter_codex_tool,
		    sizeof (struct codex_state));
	return 0;
}

/* Free what a call collected. */
static void
adapter_codex_call_free(void *arg)
{
	struct codex_call	*c = arg;

	if (c == NULL)
		return;
	free(c->text);
	free(c->error);
	free(c->thread);
	free(c);
}

/* Record an item event in the audit log, its long texts cut short. */
static void
adapter_codex_audit_item(struct proc_call *p, const char *type, json_t *item)
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
		json_object_set_new(f, "text", jsonw_text(s,
		    n > CODEX_AUDIT_MAX ? CODEX_AUDIT_MAX : n));
	}
	auditlog_json("adapter_event", p->agent->id, f);
}

/*
 * What an item event says, as progress of the request: a command as it
 * starts and how it ended, a message, a change of files.
 */
static void
adapter_codex_progress(struct proc_call *p, const char *type, json_t *item)
{
	const char	*it, *cmd, *out, *text, *st;
	json_t		*code;

	it = json_string_value(json_object_get(item, "type"));
	if (it == NULL || p->msg == NULL)
		return;
	cmd = json_string_value(json_object_get(item, "command"));
	text = json_string_value(json_object_get(item, "text"));
	if (strcmp(it, "command_execution") == 0 && cmd != NULL) {
		if (strcmp(type, "item.started") == 0) {
			adapter_progressf(p->agent, p->msg, "$ %.200s", cmd);
			return;
		}
		if (strcmp(type, "item.completed") != 0)
			return;
		out = json_string_value(json_object_get(item,
		    "aggregated_output"));
		code = json_object_get(item, "exit_code");
		adapter_progressf(p->agent, p->msg, "exit %lld: %.200s",
		    (long long)json_integer_value(code), out != NULL ? out :
		    "");
	} else if (strcmp(type, "item.completed") == 0 && text != NULL)
		adapter_progress(p->agent, p->msg, text, 0);
	else if (strcmp(type, "item.completed") == 0) {
		st = json_string_value(json_object_get(item, "status"));
		adapter_progressf(p->agent, p->msg, "%s %s", it, st != NULL ?
		    st : "done");
	}
}

/* One line of codex's stdout. */
static void
adapter_codex_line(struct proc_call *p, const char *line, size_t len)
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
		adapter_cli_set(&c->thread, json_string_value(
		    json_object_get(j, "thread_id")));
	else if (strncmp(type, "item.", 5) == 0) {
		item = json_object_get(j, "item");
		it = json_string_value(json_object_get(item, "type"));
		if (strcmp(type, "item.completed") == 0 && it != NULL &&
		    strcmp(it, "agent_message") == 0)
			adapter_cli_set(&c->text, json_string_value(
			    json_object_get(item, "text")));
		else if (strcmp(type, "item.completed") == 0 && it != NULL &&
		    strcmp(it, "error") == 0 && (s = json_string_value(
		    json_object_get(item, "message"))) != NULL)
			log_warnx("agent %s: codex: %.300s", a->id, s);
		adapter_codex_audit_item(p, type, item);
		adapter_codex_progress(p, type, item);
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
			adapter_cli_set(&c->error, s);
	} else if (strcmp(type, "error") == 0) {
		/* Also "Reconnecting... 1/5": only the last one counts. */
		s = json_string_value(json_object_get(j, "message"));
		if (s != NULL) {
			adapter_cli_set(&c->error, s);
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
adapter_codex_answer(struct proc_call *p, struct codex_call *c)
{
	struct codex_state	*st = p->agent->adapter->state;
	const char		*thread = st->cli.conversation, *last, *s;
	const char		*tail;
	double			 in, out;
	size_t			 tlen;
	int			 n;

	if (c->completed) {
		in = c->in;
		out = c->out;
		if (c->resumed && thread != NULL && c->thread != NULL &&
		    strcmp(thread, c->thread) == 0 && in >= st->seen_in &&
		    out >= st->seen_out) {
			/* Cumulative over the thread: this turn's share. */
			in -= st->seen_in;
			out -= st->seen_out;
		}
		if (st->cli.one) {
			st->seen_in = c->in;
			st->seen_out = c->out;
		}
		adapter_cli_reply(p, c->text, c->thread, NULL, in, out);
		return;
	}
	if (c->failed || c->error != NULL) {
		adapter_cli_fail(p, c->error, "the turn failed",
		    adapter_codex_category(c->error != NULL ? c->error : ""),
		    c->thread);
		return;
	}
	/*
	 * It ended without saying how the turn went.  Its stderr ends with
	 * a backtrace after the "Error: " line that says why, if any.
	 */
	last = adapter_stderr_line(p, &n);
	tail = proc_stderr_tail(&p->proc, &tlen);
	for (s = tail; (s = strstr(s, "Error: ")) != NULL; s++) {
		if (s == tail || s[-1] == '\n') {
			last = s;
			n = (int)(strchrnul(s, '\n') - s);
		}
	}
	adapter_cli_exited(p, "without finishing the turn", last, n);
}

/* A process ended: answer its request (unless it was given up). */
static void
adapter_codex_done(struct proc_call *p)
{
	struct codex_state	*st = p->agent->adapter->state;
	struct codex_call	*c = p->arg;

	if (adapter_cli_conversation(p, c->thread, c->resumed))
		st->seen_in = st->seen_out = 0;
	if (p->msg != NULL)
		adapter_codex_answer(p, c);
	adapter_cli_done(p);
}

/* Run codex for one request. */
static void
adapter_codex_run(struct agent *a, struct msg *m)
{
	struct codex_state	*st = a->adapter->state;
	struct agent_conf	*ac = a->conf;
	struct codex_call	*c;
	char			**argv, **tools, *prompt, *want;
	size_t			 i, n = 0;
	int			 has_json = 0, has_skip = 0;

	if ((prompt = adapter_prompt(a, m, st->cli.settings.prompt)) == NULL)
		return;
	for (i = 1; i < ac->argc; i++) {
		if (strcmp(ac->argv[i], "--json") == 0)
			has_json = 1;
		else if (strcmp(ac->argv[i], "--skip-git-repo-check") == 0)
			has_skip = 1;
	}
	tools = adapter_tools_args(a, "codex");	/* corral's, if any */
	argv = xcalloc(ac->argc + 8 + adapter_tools_count(tools),
	    sizeof *argv);
	argv[n++] = ac->argv[0];
	if (ac->argc < 2 || strcmp(ac->argv[1], "exec") != 0)
		argv[n++] = "exec";
	for (i = 1; i < ac->argc; i++)
		argv[n++] = ac->argv[i];
	for (i = 0; tools != NULL && tools[i] != NULL; i++)
		argv[n++] = tools[i];
	if (!has_json)
		argv[n++] = "--json";
	if (!has_skip)
		argv[n++] = "--skip-git-repo-check";
	c = xcalloc(1, sizeof *c);
	/* The thread the request names, else the one conversation's. */
	if ((want = adapter_request_session(m)) != NULL ||
	    (st->cli.one && st->cli.conversation != NULL)) {
		argv[n++] = "resume";
		argv[n++] = want != NULL ? want : st->cli.conversation;
		c->resumed = 1;
	}
	argv[n++] = "-";	/* the prompt comes on stdin */
	argv[n] = NULL;
	adapter_cli_spawn(a, m, argv, prompt, c);
	free(argv);
	adapter_free_argv(tools);
	free(want);
	free(prompt);
}

const struct adapter_ops adapter_codex_ops = {
	.name = "codex",
	.per_call = 1,
	.check = adapter_codex_check,
	.start = adapter_codex_start,
	.request = adapter_cli_request,
	.cancel = adapter_cli_cancel,
	.stop = adapter_cli_stop,
	.free = adapter_cli_free,
	.ordered = adapter_cli_ordered,
	.resume_session = adapter_cli_resume_session,
};
