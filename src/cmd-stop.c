/*
 * corral stop: stop one agent (and its subtree) of a running corral, or,
 * without an agent, the whole run, as SIGTERM would.
 *
 *   corral stop [-S PATH | --run ID] [--force] [--wait] [AGENT]
 *
 * --force kills at once instead of the graceful stop sequence; --wait
 * waits until the agent has stopped (or, for the run, until corral has
 * exited).
 */

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "corral.h"
#include "cmd.h"

/* Wait until agent id is stopped, failed or gone.  Returns 0 when it is. */
static int
cmd_stop_wait_agent(struct client *c, const char *id)
{
	json_t		*res, *e;
	const char	*st;
	struct timespec	 ts = { 0, 100 * 1000 * 1000 };
	int		 i, rc;

	for (i = 0; i < 6000; i++) {
		res = client_call(c, CORRAL_M_GET, json_pack("{s:s}", "agentId",
		    id), 10000, &e);
		if (res == NULL) {
			/* An error: it is gone; none: corral is. */
			rc = e != NULL ? 0 : -1;
			json_decref(e);
			return rc;
		}
		st = json_string_value(json_object_get(json_object_get(res,
		    "agent"), "state"));
		if (st != NULL && (strcmp(st, "stopped") == 0 ||
		    strcmp(st, "failed") == 0)) {
			json_decref(res);
			return 0;
		}
		json_decref(res);
		nanosleep(&ts, NULL);
	}
	return -1;
}

/* corral stop. */
static int
cmd_stop_exec(struct cmd *c)
{
	const char	*agent = c->argc > 0 ? c->argv[0] : NULL;
	json_t		*res, *params, *n;
	int		 eof;

	if (agent != NULL) {
		params = json_pack("{s:s, s:s}", "agentId", agent, "reason",
		    "corral stop");
		if (cmd_has(c, "force"))
			json_object_set_new(params, "force", json_true());
		res = cmd_call(c, CORRAL_M_STOP, params);
	} else
		res = cmd_call(c, CORRAL_M_SHUTDOWN, NULL);
	if (res == NULL)
		return 1;
	if (agent != NULL)
		printf("stopping %s (%s)\n", agent, json_string_value(
		    json_object_get(json_object_get(res, "agent"), "state")));
	else
		printf("stopping run %s\n", json_string_value(
		    json_object_get(client_run(&c->client), "runId")));
	json_decref(res);
	if (!cmd_has(c, "wait"))
		return 0;
	if (agent != NULL)
		return cmd_stop_wait_agent(&c->client, agent) == 0 ? 0 : 1;
	/* The run has stopped when corral closes the socket. */
	while ((n = client_next(&c->client, -1, &eof)) != NULL)
		json_decref(n);
	return 0;
}

static const struct cmd_option cmd_stop_options[] = {
	{ "force", 0, 0 },
	{ "wait", 0, 0 },
	{ NULL, 0, 0 }
};

const struct cmd_entry cmd_stop_entry = {
	.name = "stop",
	.args = "[--force] [--wait] [AGENT]",
	.about = "stop an agent and its sub-agents, or the whole run",
	.options = cmd_stop_options,
	.lower = 0,
	.upper = 1,
	.flags = CMD_TARGET | CMD_ATTACH,
	.exec = cmd_stop_exec,
};
