/*
 * corral send: put an envelope into a running corral.
 *
 *   corral send [-S PATH | --run ID] [-w | --wait | --no-wait]
 *               [--timeout DURATION] AGENT|INTENT ENVELOPE
 *
 * To an AGENT it is a MAP message (map/send), delivered as an envelope
 * marked {"corral":{"kind":"message"}}; with --wait it is a request
 * instead, and the agent's reply is printed.  To an INTENT (plan,
 * execute ...) it goes through the workflow's routing table as one
 * request (_corral/route), and the reply is printed unless --no-wait.
 * ENVELOPE is a multiagent-1.0 envelope in JSON, "-" to read it from
 * stdin, or any other text, which becomes the task of an envelope.
 */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"
#include "cmd.h"

#define CMD_SEND_STDIN	(16UL * 1024 * 1024)

/* Read all of stdin (bounded); a new string, or NULL. */
static char *
cmd_send_stdin(void)
{
	char	*buf = NULL;
	size_t	 len = 0, cap = 0;
	ssize_t	 n;

	for (;;) {
		if (len + 65536 + 1 > cap) {
			cap = len + 65536 + 1;
			buf = xreallocarray(buf, 1, cap);
		}
		if ((n = read(STDIN_FILENO, buf + len, cap - len - 1)) <= 0)
			break;
		len += (size_t)n;
		if (len > CMD_SEND_STDIN) {
			fprintf(stderr, "corral: send: stdin holds more than "
			    "16 MiB\n");
			free(buf);
			return NULL;
		}
	}
	buf[len] = '\0';
	return buf;
}

/*
 * The envelope to send: the argument as JSON, or text made the task of
 * an envelope with intent (a new reference).
 */
static json_t *
cmd_send_envelope(const char *arg, const char *intent)
{
	json_t	*env;

	if ((env = json_loads(arg, CORRAL_JSON_LOAD, NULL)) != NULL &&
	    json_is_object(env)) {
		if (intent != NULL)
			json_object_set_new(env, "intent", json_string(intent));
		return env;
	}
	json_decref(env);
	return json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s}}", "protocol",
	    CORRAL_ENVELOPE_PROTOCOL, "role", "user", "intent", intent != NULL ?
	    intent : "execute", "task", arg, "content", "type", "text", "text",
	    arg);
}

/*
 * Wait for the reply to request mid (a map/message whose correlation id
 * is mid) and print its payload.  Returns the exit status.
 */
static int
cmd_send_wait(struct client *c, const char *mid, int timeout_ms)
{
	json_t		*n, *m, *payload, *content;
	const char	*corr;
	char		*s;
	int		 eof, rc;

	for (;;) {
		if ((n = client_next(c, timeout_ms, &eof)) == NULL) {
			fprintf(stderr, "corral: send: %s\n", eof ? "corral "
			    "went away before the reply" : "no reply in time");
			return 1;
		}
		m = json_object_get(json_object_get(n, "params"), "message");
		corr = json_string_value(json_object_get(json_object_get(m,
		    "meta"), "correlationId"));
		if (strcmp(json_string_value(json_object_get(n, "method")),
		    CORRAL_M_MESSAGE) != 0 || corr == NULL ||
		    strcmp(corr, mid) != 0) {
			json_decref(n);
			continue;
		}
		payload = json_object_get(m, "payload");
		content = json_object_get(payload, "content");
		rc = (json_object_get(payload, "error") != NULL ||
		    (json_is_string(json_object_get(content, "type")) &&
		    strcmp(json_string_value(json_object_get(content,
		    "type")), "error") == 0)) ? 1 : 0;
		if ((s = jsonw_dumps(payload, JSON_ENCODE_ANY |
		    CORRAL_JSON_FLAGS)) != NULL) {
			printf("%s\n", s);
			free(s);
		}
		json_decref(n);
		return rc;
	}
}

/* corral send. */
static int
cmd_send_exec(struct cmd *c)
{
	const char	*target = c->argv[0], *mid, *intent = NULL, *v;
	json_t		*res, *e, *env, *params;
	char		*text = NULL, *ids;
	double		 secs = 60;
	int		 wait = -1, rc = 1, is_agent;
	size_t		 i;

	/* --wait and --no-wait: the last one given. */
	for (i = 0; i < c->nvalues; i++)
		if (strcmp(c->values[i].option->name, "wait") == 0)
			wait = 1;
		else if (strcmp(c->values[i].option->name, "no-wait") == 0)
			wait = 0;
	if ((v = cmd_get(c, "timeout")) != NULL &&
	    (util_parse_duration(v, &secs) != 0 || secs <= 0)) {
		fprintf(stderr, "corral: send: --timeout: a duration such as "
		    "30s\n");
		return EXIT_USAGE;
	}
	if (strcmp(c->argv[1], "-") == 0 && (text = cmd_send_stdin()) == NULL)
		return 1;
	if (cmd_attach(c) != 0) {
		free(text);
		return 1;
	}

	/* An agent's id, or else an intent. */
	res = client_call(&c->client, CORRAL_M_GET, json_pack("{s:s}",
	    "agentId", target), 10000, &e);
	is_agent = res != NULL;
	json_decref(res);
	json_decref(e);
	if (!is_agent) {
		if (protocol_intent(target, strlen(target)) < 0) {
			fprintf(stderr, "corral: send: %s is neither an agent "
			    "of this run nor an intent\n", target);
			goto out;
		}
		intent = target;
	}
	env = cmd_send_envelope(text != NULL ? text : c->argv[1], intent);
	if (is_agent) {
		params = json_pack("{s:{s:s}, s:o}", "to", "agent", target,
		    "payload", env);
		if (wait == 1)
			json_object_set_new(params, "meta",
			    json_pack("{s:b}", "expectsResponse", 1));
		res = cmd_call(c, CORRAL_M_SEND, params);
	} else
		res = cmd_call(c, CORRAL_M_ROUTE, json_pack("{s:o}", "payload",
		    env));
	if (res == NULL)
		goto out;
	mid = json_string_value(json_object_get(res, "messageId"));
	ids = jsonw_dumps(json_object_get(res, "delivered"), JSON_ENCODE_ANY |
	    CORRAL_JSON_FLAGS);
	fprintf(stderr, "corral: sent %s %s %s\n", mid != NULL ? mid : "?",
	    is_agent ? "to" : "through the routes for", is_agent && ids !=
	    NULL ? ids : target);
	free(ids);
	if (wait == 1 || (wait == -1 && !is_agent))
		rc = cmd_send_wait(&c->client, mid != NULL ? mid : "",
		    (int)(secs * 1000));
	else
		rc = 0;
	json_decref(res);
out:
	free(text);
	return rc;
}

static const struct cmd_option cmd_send_options[] = {
	{ "wait", 'w', 0 },
	{ "no-wait", 0, 0 },
	{ "timeout", 0, 1 },
	{ NULL, 0, 0 }
};

const struct cmd_entry cmd_send_entry = {
	.name = "send",
	.args = "[-w | --wait | --no-wait] [--timeout DURATION] AGENT|INTENT "
	    "ENVELOPE",
	.about = "send an envelope to an agent, or through the routes",
	.options = cmd_send_options,
	.lower = 2,
	.upper = 2,
	.flags = CMD_TARGET,
	.exec = cmd_send_exec,
};
