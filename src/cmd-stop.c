/*
 * corral stop: stop one agent (and its subtree) of a running corral, or,
 * without an agent, the whole run, as SIGTERM would.
 *
 *   corral stop [-S PATH] [--run ID] [--force] [--wait] [AGENT]
 *
 * --force kills at once instead of the graceful stop sequence; --wait
 * waits until the agent has stopped (or, for the run, until corral has
 * exited).
 */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "corral.h"

#define CMD_STOP_USAGE	"usage: corral stop [-S PATH] [--run ID] [--force] " \
	"[--wait] [AGENT]\n"

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
int
cmd_stop(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "control", required_argument, NULL, 'S' },
		{ "run", required_argument, NULL, 'r' },
		{ "force", no_argument, NULL, 'f' },
		{ "wait", no_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 }
	};
	struct client	 c;
	const char	*path = NULL, *run = NULL, *agent;
	json_t		*res, *e, *params, *n;
	char		 err[512];
	int		 ch, force = 0, wait = 0, rc = 1, eof;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "S:r:fw", opts, NULL)) != -1) {
		switch (ch) {
		case 'S':
			path = optarg;
			break;
		case 'r':
			run = optarg;
			break;
		case 'f':
			force = 1;
			break;
		case 'w':
			wait = 1;
			break;
		default:
			fprintf(stderr, CMD_STOP_USAGE);
			return EXIT_USAGE;
		}
	}
	if (argc - optind > 1) {
		fprintf(stderr, CMD_STOP_USAGE);
		return EXIT_USAGE;
	}
	agent = optind < argc ? argv[optind] : NULL;
	if (client_attach(&c, path, run, "corral-stop") != 0)
		return 1;
	if (agent != NULL) {
		params = json_pack("{s:s, s:s}", "agentId", agent, "reason",
		    "corral stop");
		if (force)
			json_object_set_new(params, "force", json_true());
		res = client_call(&c, CORRAL_M_STOP, params, 10000, &e);
	} else
		res = client_call(&c, CORRAL_M_SHUTDOWN, NULL, 10000, &e);
	if (res == NULL) {
		client_error_text(e, err, sizeof err);
		fprintf(stderr, "corral: stop: %s\n", err);
		json_decref(e);
		goto out;
	}
	if (agent != NULL)
		printf("stopping %s (%s)\n", agent, json_string_value(
		    json_object_get(json_object_get(res, "agent"), "state")));
	else
		printf("stopping run %s\n", json_string_value(
		    json_object_get(client_run(&c), "runId")));
	json_decref(res);
	rc = 0;
	if (wait && agent != NULL)
		rc = cmd_stop_wait_agent(&c, agent) == 0 ? 0 : 1;
	else if (wait) {
		/* The run has stopped when corral closes the socket. */
		while ((n = client_next(&c, -1, &eof)) != NULL)
			json_decref(n);
	}
out:
	client_close(&c);
	return rc;
}
