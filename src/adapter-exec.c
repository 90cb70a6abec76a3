/*
 * The exec adapter: any command-line tool as an agent, one process per
 * envelope (docs/adapters.md).
 *
 *   agents:
 *     sorter:
 *       adapter:
 *         type: exec
 *         argv: [sort, -u]             # each element a template
 *         stdin: "{{inputs.parameters.words | lines}}"  # null: no input
 *         output: text                 # text, or json (parsed to data)
 *         confidence: 0.9
 *         intent: summarize            # the reply's intent (default: the
 *                                      # request's)
 *         then: [{intent: summarize, task: "..."}]   # next_actions
 *
 * argv is never given to a shell: each element is expanded on its own.
 * Exit status 0 is success: stdout becomes the reply's content.  Any other
 * status gives an error envelope with the status and the tail of stderr.
 * The message's timeout kills the process group.  max_inflight bounds how
 * many run at once.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

struct exec_state {
	json_t			*argv;		/* array of template strings */
	const char		*stdin_tmpl;	/* NULL: no input */
	int			 output_json;
	struct adapter_settings	 settings;
};

/* Check the exec settings. */
static int
adapter_exec_check(const struct agent_conf *ac, char *why, size_t len)
{
	static const char *keys[] = { "argv", "stdin", "output", "confidence",
	    "intent", "then", NULL };
	json_t		*c = ac->adapter_conf, *v, *e;
	size_t		 i;
	char		 t[300];

	if (adapter_check_keys(c, "exec", keys, why, len) != 0)
		return -1;
	v = json_object_get(c, "argv");
	if (v == NULL && ac->argv == NULL) {
		snprintf(why, len, "adapter: exec needs argv: (or cmd:)");
		return -1;
	}
	if (v != NULL) {
		if (!json_is_array(v) || json_array_size(v) == 0) {
			snprintf(why, len, "adapter.argv must be a non-empty "
			    "list of strings");
			return -1;
		}
		json_array_foreach(v, i, e) {
			if (!json_is_string(e)) {
				snprintf(why, len, "adapter.argv[%zu] must be a "
				    "string", i);
				return -1;
			}
			if (adapter_template_check(json_string_value(e), t,
			    sizeof t) != 0) {
				snprintf(why, len, "adapter.argv[%zu]: %s", i,
				    t);
				return -1;
			}
		}
	}
	v = json_object_get(c, "stdin");
	if (v != NULL && !json_is_string(v) && !json_is_null(v) &&
	    !json_is_false(v)) {
		snprintf(why, len, "adapter.stdin must be a template string or "
		    "null");
		return -1;
	}
	if (json_is_string(v) && adapter_template_check(json_string_value(v),
	    t, sizeof t) != 0) {
		snprintf(why, len, "adapter.stdin: %s", t);
		return -1;
	}
	if (adapter_check_word(c, "output", "text", "json",
	    "adapter.output must be text or json", why, len) != 0)
		return -1;
	return adapter_check_common(c, why, len);
}

/* Read the settings into the agent's state. */
static int
adapter_exec_start(struct agent *a)
{
	struct exec_state	*st;
	json_t			*c = a->conf->adapter_conf, *v;
	size_t			 i;

	st = xcalloc(1, sizeof *st);
	if ((v = json_object_get(c, "argv")) != NULL)
		st->argv = json_incref(v);
	else {
		st->argv = json_array();
		for (i = 0; i < a->conf->argc; i++)
			json_array_append_new(st->argv,
			    json_string(a->conf->argv[i]));
	}
	v = json_object_get(c, "stdin");
	if (v == NULL)
		st->stdin_tmpl = "{{content.text}}";
	else if (json_is_string(v))
		st->stdin_tmpl = json_string_value(v);
	st->output_json = json_is_string(json_object_get(c, "output")) &&
	    strcmp(json_string_value(json_object_get(c, "output")), "json") ==
	    0;
	adapter_settings(&st->settings, c);
	a->adapter->state = st;
	return 0;
}

/* One process ended: its output becomes the reply (or an error). */
static void
adapter_exec_done(struct proc_call *p)
{
	struct agent		*a = p->agent;
	struct exec_state	*st = a->adapter->state;
	struct msg		*m = p->msg;
	json_t			*env, *content, *data, *extra;
	json_error_t		 e;
	char			 why[512], status[64];
	const char		*last, *tail;
	size_t			 n, tlen;
	int			 len, rc;

	if (m == NULL) {
		/* Cancelled (timeout or stop): its outcome is recorded. */
		adapter_proc_done(p);
		return;
	}
	if (!WIFEXITED_OK(rc = proc_status(&p->proc))) {
		util_describe_status(status, sizeof status, rc);
		/* The last stderr line says most; the data has the tail. */
		last = adapter_stderr_line(p, &len);
		snprintf(why, sizeof why, "%s: %s%s%.*s",
		    json_string_value(json_array_get(st->argv, 0)), status,
		    len > 0 ? ": " : "", len, last);
		tail = proc_stderr_tail(&p->proc, &tlen);
		extra = json_pack("{s:i, s:o}", "status", WIFEXITED(rc) ?
		    WEXITSTATUS(rc) : 128 + WTERMSIG(rc), "stderr",
		    jsonw_text(tail, tlen));
		adapter_reply_error(a, m, "exit_status", "INTERNAL", why, extra);
		adapter_proc_done(p);
		return;
	}
	if (p->out_dropped > 0) {
		snprintf(why, sizeof why, "%s wrote more than max_line (%zu "
		    "bytes) on stdout", json_string_value(json_array_get(
		    st->argv, 0)), p->out_max);
		adapter_reply_error(a, m, "output_too_long", "REJECTED", why,
		    NULL);
		adapter_proc_done(p);
		return;
	}
	env = adapter_envelope_ok(a, m, &st->settings, st->output_json ? 1 :
	    0);
	content = json_object_get(env, "content");
	if (st->output_json) {
		data = json_loadb(p->out_buf != NULL ? p->out_buf : "",
		    p->out_len, JSON_DECODE_ANY | CORRAL_JSON_LOAD, &e);
		if (data == NULL) {
			json_decref(env);
			snprintf(why, sizeof why, "%s: stdout is not JSON: %s "
			    "(line %d)", json_string_value(json_array_get(
			    st->argv, 0)), e.text, e.line);
			adapter_reply_error(a, m, "bad_output", "REJECTED", why,
			    NULL);
			adapter_proc_done(p);
			return;
		}
		json_object_set_new(content, "data", data);
	} else {
		n = p->out_len;
		while (n > 0 && (p->out_buf[n - 1] == '\n' ||
		    p->out_buf[n - 1] == '\r'))
			n--;
		json_object_set_new(content, "text", jsonw_text(
		    p->out_buf != NULL ? p->out_buf : "", n));
	}
	adapter_reply(a, m, env);
	adapter_proc_done(p);
}

/* Run the tool for one request. */
static void
adapter_exec_request(struct agent *a, struct msg *m)
{
	struct exec_state	*st = a->adapter->state;
	struct proc_call		*p;
	json_t			*req, *v;
	char			**argv, *in = NULL, why[512];
	char			 token[AGENT_TOKEN_LEN + 1];
	size_t			 i, n;
	int			 rc;

	if ((req = adapter_request_json(m)) == NULL)
		fatalx("adapter_exec_request: the request is not JSON");
	n = json_array_size(st->argv);
	argv = xcalloc(n + 1, sizeof *argv);
	json_array_foreach(st->argv, i, v)
		argv[i] = adapter_template(json_string_value(v), req, m);
	if (st->stdin_tmpl != NULL)
		in = adapter_template(st->stdin_tmpl, req, m);
	json_decref(req);

	p = adapter_proc_new(a, m);
	p->done = adapter_exec_done;
	agent_token(a, token);
	rc = proc_call_start(p, a->conf, argv, a->id, token, NULL, in,
	    in != NULL ? strlen(in) : 0, a->conf->max_line, why, sizeof why);
	explicit_bzero(token, sizeof token);
	if (rc != 0) {
		adapter_reply_error(a, m, "spawn_failed", "INTERNAL", why, NULL);
		adapter_proc_done(p);
	}
	for (i = 0; i < n; i++)
		free(argv[i]);
	free(argv);
	free(in);
}

/* A request expired: kill its process; its result will be dropped. */
static void
adapter_exec_cancel(struct agent *a, struct msg *m)
{
	struct proc_call	*p;

	TAILQ_FOREACH(p, &a->adapter->procs, entry) {
		if (p->msg == m) {
			p->msg = NULL;
			log_info("agent %s: killing pid %ld (request %s given "
			    "up)", a->id, (long)proc_hostpid(&p->proc), m->id);
			proc_call_kill(p);
		}
	}
}

/* Free the state. */
static void
adapter_exec_free(struct agent *a)
{
	struct exec_state	*st = a->adapter->state;

	if (st == NULL)
		return;
	json_decref(st->argv);
	free(st);
	a->adapter->state = NULL;
}

const struct adapter_ops adapter_exec_ops = {
	.name = "exec",
	.per_call = 1,
	.check = adapter_exec_check,
	.start = adapter_exec_start,
	.request = adapter_exec_request,
	.cancel = adapter_exec_cancel,
	.free = adapter_exec_free,
};
