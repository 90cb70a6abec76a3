/*
 * What the CLI-per-request adapters (codex, gemini) share: an AI CLI run
 * once per envelope, its prompt on stdin (docs/adapters.md).
 *
 * The adapter's state starts with a struct adapter_cli: the settings
 * every such adapter has (prompt, confidence, intent, then, price,
 * stderr, conversation), and the one conversation.  With conversation:
 * one every request resumes the conversation of the first, so requests
 * run one at a time and the others wait in a queue.  The adapter itself
 * builds the command line, reads what the tool writes and decides how a
 * call went; this file runs the call, keeps the conversation (in the
 * order requests were accepted), and turns the outcome into a reply that
 * names the session (content.data.session_id), which a later request may
 * name to resume.  The CLIs re-launch themselves as child processes, so a
 * request given up has its whole process group interrupted.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

/* A request waiting for its turn in the one conversation. */
struct adapter_cli_wait {
	struct msg			*msg;
	TAILQ_ENTRY(adapter_cli_wait)	 entry;
};

/* Check the settings of struct adapter_cli not in adapter_check_common. */
int
adapter_cli_check(json_t *c, char *why, size_t len)
{
	json_t		*v, *e;
	const char	*k;

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
	return adapter_check_word(c, "stderr", "log", "debug",
	    "adapter.stderr must be log or debug", why, len);
}

/*
 * Read the settings into a new state of size bytes, the adapter's own
 * struct that starts with a struct adapter_cli, and return it.
 */
void *
adapter_cli_start(struct agent *a, const struct adapter_cli_tool *tool,
    size_t size)
{
	struct adapter_cli	*cli;
	json_t			*c = a->conf->adapter_conf, *v;

	cli = xcalloc(1, size);
	cli->tool = tool;
	TAILQ_INIT(&cli->waitq);
	adapter_settings(&cli->settings, c);
	v = json_object_get(c, "conversation");
	cli->one = v != NULL && strcmp(json_string_value(v), "one") == 0;
	v = json_object_get(c, "price");
	cli->price_in = json_number_value(json_object_get(v, "input"));
	cli->price_out = json_number_value(json_object_get(v, "output"));
	v = json_object_get(c, "stderr");
	cli->quiet = v != NULL && strcmp(json_string_value(v), "debug") == 0;
	a->adapter->state = cli;
	return cli;
}

/* Replace a string. */
void
adapter_cli_set(char **field, const char *s)
{
	free(*field);
	*field = s != NULL ? xstrdup(s) : NULL;
}

/* Start the next waiting request of the one conversation. */
static void
adapter_cli_next(struct agent *a)
{
	struct adapter_cli	*cli = a->adapter->state;
	struct adapter_cli_wait	*w;
	struct msg		*m;

	cli->busy = 0;
	if (a->adapter->stopping || (w = TAILQ_FIRST(&cli->waitq)) == NULL)
		return;
	TAILQ_REMOVE(&cli->waitq, w, entry);
	m = w->msg;
	free(w);
	cli->tool->run(a, m);
}

/*
 * Take a request: run it, or queue it behind the conversation's turn, in
 * the order requests were accepted: one that comes back for a retry
 * takes its turn before those that came after it.
 */
void
adapter_cli_request(struct agent *a, struct msg *m)
{
	struct adapter_cli	*cli = a->adapter->state;
	struct adapter_cli_wait	*w, *at;

	if (cli->one && cli->busy) {
		w = xcalloc(1, sizeof *w);
		w->msg = m;
		TAILQ_FOREACH(at, &cli->waitq, entry)
			if (at->msg->seq > m->seq)
				break;
		if (at != NULL)
			TAILQ_INSERT_BEFORE(at, w, entry);
		else
			TAILQ_INSERT_TAIL(&cli->waitq, w, entry);
		return;
	}
	cli->tool->run(a, m);
}

/* With conversation: one, requests are turns of one conversation. */
int
adapter_cli_ordered(struct agent *a)
{
	struct adapter_cli	*cli = a->adapter->state;

	return cli != NULL && cli->one;
}

/*
 * A request is given up (cancelled, or out of time): drop it from the
 * queue, or interrupt its process, SIGINT then SIGTERM: both CLIs stop at
 * once on SIGINT to their process group.
 */
void
adapter_cli_cancel(struct agent *a, struct msg *m)
{
	struct adapter_cli	*cli = a->adapter->state;
	struct adapter_cli_wait	*w;
	struct proc_call		*p;

	TAILQ_FOREACH(w, &cli->waitq, entry) {
		if (w->msg == m) {
			TAILQ_REMOVE(&cli->waitq, w, entry);
			free(w);
			return;
		}
	}
	TAILQ_FOREACH(p, &a->adapter->procs, entry) {
		if (p->msg == m) {
			p->msg = NULL;
			log_info("agent %s: interrupting %s (pid %ld): request "
			    "%s given up", a->id, cli->tool->name,
			    (long)proc_hostpid(&p->proc), m->id);
			proc_call_interrupt(p);
		}
	}
}

/* Stopping: forget the queue, so that no call starts after the kill. */
void
adapter_cli_stop(struct agent *a)
{
	struct adapter_cli	*cli = a->adapter->state;
	struct adapter_cli_wait	*w;

	while (cli != NULL && (w = TAILQ_FIRST(&cli->waitq)) != NULL) {
		TAILQ_REMOVE(&cli->waitq, w, entry);
		free(w);
	}
}

/* Free the state and what unfinished calls collected. */
void
adapter_cli_free(struct agent *a)
{
	struct adapter_cli	*cli = a->adapter->state;
	struct proc_call		*p;

	/* Calls exist only once the state does. */
	if (cli == NULL)
		return;
	TAILQ_FOREACH(p, &a->adapter->procs, entry) {
		cli->tool->call_free(p->arg);
		p->arg = NULL;
	}
	adapter_cli_stop(a);
	free(cli->conversation);
	free(cli);
	a->adapter->state = NULL;
}

/*
 * Run argv for m with the prompt on stdin; call is what the tool's line
 * and done callbacks collect in.  A spawn that fails answers m at once.
 */
void
adapter_cli_spawn(struct agent *a, struct msg *m, char **argv,
    const char *prompt, void *call)
{
	struct adapter_cli	*cli = a->adapter->state;
	struct proc_call		*p;
	char			 why[512], token[AGENT_TOKEN_LEN + 1];
	int			 rc;

	p = adapter_proc_new(a, m);
	p->done = cli->tool->done;
	p->line_cb = cli->tool->line;
	p->arg = call;
	p->quiet = cli->quiet;
	cli->busy = 1;
	agent_token(a, token);
	rc = proc_call_start(p, a->conf, argv, a->id, token, a->adapter->env,
	    prompt, strlen(prompt), a->conf->max_line, why, sizeof why);
	explicit_bzero(token, sizeof token);
	if (rc != 0) {
		p->arg = NULL;
		cli->tool->call_free(call);
		adapter_reply_error(a, m, "spawn_failed", "INTERNAL", why, NULL);
		adapter_proc_done(p);
		if (cli->one)
			adapter_cli_next(a);
	}
}

/*
 * Continue session (a resumed run's, from the log) with the next call,
 * if the one conversation has none yet: one it ran in since wins.
 */
int
adapter_cli_resume_session(struct agent *a, const char *session)
{
	struct adapter_cli	*cli = a->adapter->state;

	if (!cli->one)
		return -1;
	if (cli->conversation == NULL) {
		adapter_cli_set(&cli->conversation, session);
		log_info("agent %s: %s resumes %s %s from the log", a->id,
		    cli->tool->name, cli->tool->conversation, session);
	}
	return 0;
}

/*
 * A call ran in conversation id (NULL: it said none), resumed or not:
 * with conversation: one, the next call resumes it.  A resume that did
 * not even start means the conversation is gone: the next call starts a
 * new one.  Returns nonzero when the conversation changed.
 */
int
adapter_cli_conversation(struct proc_call *p, const char *id, int resumed)
{
	struct agent		*a = p->agent;
	struct adapter_cli	*cli = a->adapter->state;
	const char		*name = cli->tool->name;
	const char		*what = cli->tool->conversation;

	if (id != NULL && cli->one && (cli->conversation == NULL ||
	    strcmp(cli->conversation, id) != 0)) {
		adapter_cli_set(&cli->conversation, id);
		log_info("agent %s: %s %s %s", a->id, name, what, id);
		return 1;
	}
	if (resumed && id == NULL && p->msg != NULL) {
		log_warnx("agent %s: %s could not resume %s %s; the next "
		    "request starts a new one", a->id, name, what,
		    cli->conversation);
		adapter_cli_set(&cli->conversation, NULL);
		return 1;
	}
	return 0;
}

/* A call is over (and answered): forget it, start the next one waiting. */
void
adapter_cli_done(struct proc_call *p)
{
	struct agent		*a = p->agent;
	struct adapter_cli	*cli = a->adapter->state;
	void			*call = p->arg;

	p->arg = NULL;
	cli->tool->call_free(call);
	adapter_proc_done(p);
	if (cli->one)
		adapter_cli_next(a);
}

/*
 * Answer a call's request with the tool's text, the conversation it ran
 * in, the model it reported (NULL: none; agent.model stays the adapter's
 * name), and in and out tokens as trace.cost (priced by the settings).
 */
void
adapter_cli_reply(struct proc_call *p, const char *text, const char *id,
    const char *model, double in, double out)
{
	struct agent		*a = p->agent;
	struct adapter_cli	*cli = a->adapter->state;
	json_t			*env, *content;

	if (text == NULL)
		text = "";
	env = adapter_envelope_ok(a, p->msg, &cli->settings, 0);
	content = json_object_get(env, "content");
	json_object_set_new(content, "text", jsonw_text(text,
	    strlen(text)));
	/* session_id for every CLI: what a later request names to resume. */
	if (id != NULL) {
		json_object_set_new(content, "data", json_pack("{s:s}",
		    "session_id", id));
		json_object_set_new(json_object_get(content, "data"),
		    cli->tool->key, json_string(id));
	}
	if (model != NULL && *model != '\0')
		json_object_set_new(json_object_get(env, "agent"), "model",
		    json_string(model));
	json_object_set_new(json_object_get(env, "trace"), "cost",
	    json_pack("{s:o, s:o, s:o}", "input_tokens", adapter_number(in),
	    "output_tokens", adapter_number(out), "usd", adapter_number(
	    (in * cli->price_in + out * cli->price_out) / 1e6)));
	adapter_reply(a, p->msg, env);
}

/*
 * Answer a call's request with the error the tool reported (or, if it
 * gave no message, what), of the category its message tells.
 */
void
adapter_cli_fail(struct proc_call *p, const char *error, const char *what,
    const char *category, const char *id)
{
	struct adapter_cli	*cli = p->agent->adapter->state;
	char			 why[768];

	snprintf(why, sizeof why, "%s: %s", cli->tool->name, error != NULL ?
	    error : what);
	adapter_reply_error(p->agent, p->msg, "api_error", category, why,
	    json_pack("{s:s?}", cli->tool->key, id));
}

/*
 * Answer a call's request when the tool exited how (without saying how
 * the call went): its status, the stderr line that says why (len bytes
 * at line), and the tail of its stderr.
 */
void
adapter_cli_exited(struct proc_call *p, const char *how, const char *line,
    int len)
{
	struct adapter_cli	*cli = p->agent->adapter->state;
	json_t			*extra;
	const char		*tail;
	size_t			 tlen;
	char			 why[768], status[64];

	util_describe_status(status, sizeof status, proc_status(&p->proc));
	snprintf(why, sizeof why, "%s %s %s%s%.*s", cli->tool->name, status,
	    how, len > 0 ? ": " : "", len, line);
	tail = proc_stderr_tail(&p->proc, &tlen);
	extra = json_pack("{s:o}", "stderr", jsonw_text(tail, tlen));
	adapter_reply_error(p->agent, p->msg, "exit_status", "INTERNAL", why,
	    extra);
}
