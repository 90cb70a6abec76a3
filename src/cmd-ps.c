/*
 * corral ps: the corrals running on this machine (for this user) and
 * their agents, read from each one's control socket.
 *
 *   corral ps [-S PATH | --run ID] [--json]
 *
 * Without -S, every socket in the private directory is asked (--run: only
 * those of the runs whose id begins so), and the runs whose socket is
 * elsewhere (--control) through their links there; stale ones (their
 * corral is gone) are skipped.  --json prints one object a run:
 * the run (map/connect's _meta.corral, with its socket), its agents
 * (MAP's Agent objects, as map/agents/list gives them) and its requests
 * in flight (_corral/requests).  A person sees those under the agents:
 * their trace ids are what corral cancel takes.
 */

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "corral.h"
#include "cmd.h"

#define CMD_PS_REQUESTS	20	/* requests shown a run; --json: all */

/* The uptime of a run started at ms (since the epoch). */
static void
cmd_ps_uptime(char *buf, size_t len, json_t *started)
{
	struct timespec	ts;
	double		d;

	clock_gettime(CLOCK_REALTIME, &ts);
	d = (double)ts.tv_sec + ts.tv_nsec / 1e9 -
	    (double)json_integer_value(started) / 1000.0;
	client_uptime(buf, len, d);
}

/* Print one agent line, indented by its depth. */
static void
cmd_ps_agent(json_t *a)
{
	json_t		*md = json_object_get(a, "metadata");
	const char	*err;
	char		 id[64], pid[24], where[96], line[256];
	int		 depth = (int)json_integer_value(json_object_get(md,
			    "depth"));

	snprintf(id, sizeof id, "%*s%s", depth * 2, "",
	    json_string_value(json_object_get(a, "id")));
	client_pid(pid, sizeof pid, md);
	client_where(md, where, sizeof where);
	printf("  %-20s %-13s %-8s %-8lld %-6lld %-6lld %-8lld %-8.0f "
	    "%-9.4f %-10s", id, json_string_value(json_object_get(a, "state")),
	    pid,
	    (long long)json_integer_value(json_object_get(md, "inflight")),
	    (long long)json_integer_value(json_object_get(md, "msgsIn")),
	    (long long)json_integer_value(json_object_get(md, "msgsOut")),
	    (long long)json_integer_value(json_object_get(md, "restarts")),
	    json_number_value(json_object_get(md, "tokens")),
	    json_number_value(json_object_get(md, "cost")), where);
	if ((err = json_string_value(json_object_get(md, "lastError"))) !=
	    NULL)
		printf(" %.60s", err);
	printf("\n");
	if (client_status_row(line, sizeof line, md))
		printf("  %*s  %s\n", depth * 2, "", line);
}

/*
 * What of a run waits for a person (_corral/steps), as an array; empty
 * when nothing waits or the corral is one without steps.
 */
static json_t *
cmd_ps_waiting(struct client *c)
{
	json_t	*res, *e = NULL, *w;

	if ((res = client_call(c, CORRAL_M_STEPS, NULL, 10000, &e)) == NULL) {
		json_decref(e);
		return json_array();
	}
	w = json_incref(json_object_get(res, "waiting"));
	json_decref(res);
	return json_is_array(w) ? w : json_array();
}

/* Print what waits for a person: the step, whose, why, since when. */
static void
cmd_ps_waits(json_t *waiting)
{
	json_t	*w;
	char	 up[32];
	size_t	 i;

	if (json_array_size(waiting) == 0)
		return;
	printf("  %-20s %-13s %-8s %-8s %s\n", "WAITING STEP", "JOB", "FOR",
	    "REASON", "AGENT: SUMMARY");
	json_array_foreach(waiting, i, w) {
		client_uptime(up, sizeof up, (double)json_integer_value(
		    json_object_get(w, "waitingMs")) / 1000.0);
		printf("  %-20s %-13s %-8s %-8.8s %s: %.60s\n",
		    json_string_value(json_object_get(w, "step")),
		    json_string_value(json_object_get(w, "jobId")), up,
		    json_string_value(json_object_get(w, "reason")),
		    json_is_string(json_object_get(w, "agentId")) ?
		    json_string_value(json_object_get(w, "agentId")) : "-",
		    json_string_value(json_object_get(w, "summary")));
	}
}

/*
 * Print the requests in flight under a run's agents: their trace ids are
 * what corral cancel takes.
 */
static void
cmd_ps_requests(json_t *res)
{
	json_t		*r;
	char		 line[256];
	size_t		 i, shown;
	long long	 more;

	shown = json_array_size(json_object_get(res, "requests"));
	if (shown == 0)
		return;
	client_request_head(line, sizeof line);
	printf("  %s\n", line);
	json_array_foreach(json_object_get(res, "requests"), i, r) {
		client_request_row(line, sizeof line, r);
		printf("  %s\n", line);
	}
	more = (long long)json_integer_value(json_object_get(res, "total")) -
	    (long long)shown;
	if (more > 0)
		printf("  ... and %lld more (corral ps --json lists them)\n",
		    more);
}

/* Show one run; returns 0, or -1 when it could not be asked. */
static int
cmd_ps_run(const char *sock, int json, int *first)
{
	struct client	 c;
	json_t		*res, *e, *run, *agents, *a, *out, *reqs, *waiting;
	char		 err[1024], up[32];
	size_t		 i;

	if (client_open(&c, sock, "corral-ps", err, sizeof err) != 0) {
		fprintf(stderr, "corral: %s\n", err);
		return -1;
	}
	res = client_call(&c, CORRAL_M_LIST, NULL, 10000, &e);
	if (res == NULL) {
		client_error_text(e, err, sizeof err);
		fprintf(stderr, "corral: %s: %s\n", sock, err);
		json_decref(e);
		client_close(&c);
		return -1;
	}
	run = json_deep_copy(client_run(&c));
	if (run == NULL)
		run = json_object();
	json_object_set_new(run, "socket", json_string(sock));
	agents = json_object_get(res, "agents");
	reqs = client_requests(&c, json ? 10000 : CMD_PS_REQUESTS);
	waiting = cmd_ps_waiting(&c);
	if (json) {
		out = json_pack("{s:o, s:O, s:O}", "run", run, "agents", agents,
		    "waiting", waiting);
		if (reqs != NULL)
			json_object_set(out, "requests", json_object_get(reqs,
			    "requests"));
		cmd_print_json(out);
		json_decref(out);
	} else {
		/* What agents wrote must not drive the terminal. */
		util_vis_json(run);
		util_vis_json(agents);
		if (!*first)
			printf("\n");
		printf("%-8s %-8s %-6s %-8s %-7s %-20s %s\n", "RUN", "PID",
		    "MODE", "UPTIME", "AGENTS", "WORKFLOW", "SOCKET");
		cmd_ps_uptime(up, sizeof up, json_object_get(run,
		    "startedAt"));
		printf("%-8s %-8lld %-6s %-8s %-7zu %-20s %s\n",
		    json_string_value(json_object_get(run, "runId")),
		    (long long)json_integer_value(json_object_get(run, "pid")),
		    json_string_value(json_object_get(run, "mode")), up,
		    json_array_size(agents),
		    json_string_value(json_object_get(run, "workflow")), sock);
		printf("  %-20s %-13s %-8s %-8s %-6s %-6s %-8s %-8s %-9s %-10s "
		    "%s\n", "AGENT", "STATE", "PID", "INFLIGHT", "IN", "OUT",
		    "RESTARTS", "TOKENS", "COST", "HOST", "LAST ERROR");
		json_array_foreach(agents, i, a)
			cmd_ps_agent(a);
		if (reqs != NULL)
			cmd_ps_requests(reqs);
		util_vis_json(waiting);
		cmd_ps_waits(waiting);
		json_decref(run);
	}
	json_decref(waiting);
	*first = 0;
	json_decref(reqs);
	json_decref(res);
	client_close(&c);
	return 0;
}

/* corral ps. */
static int
cmd_ps_exec(struct cmd *c)
{
	const char	*path = cmd_get(c, "control"), *run = cmd_get(c, "run");
	char		 dir[512], err[600], **v, real[1024];
	size_t		 n, i;
	ssize_t		 len;
	int		 json = cmd_has(c, "json"), first = 1, bad = 0;
	int		 shown = 0;

	if (path == NULL)
		path = getenv("CORRAL_CONTROL");
	if (path != NULL && *path != '\0')
		return cmd_ps_run(path, json, &first) == 0 ? 0 : 1;
	if (client_dir(dir, sizeof dir, 0, err, sizeof err) != 0) {
		if (!json)
			printf("no corral is running (%s)\n", err);
		return 0;
	}
	n = client_live(dir, run, &v);
	for (i = 0; i < n; i++) {
		/* A link to a socket put elsewhere (--control): show that. */
		if ((len = readlink(v[i], real, sizeof real - 1)) > 0)
			real[len] = '\0';
		if (cmd_ps_run(len > 0 ? real : v[i], json, &first) != 0)
			bad++;
		else
			shown++;
	}
	client_sockets_free(v, n);
	if (shown == 0 && bad == 0 && !json)
		printf("no corral%s%s is running (none in %s)\n", run != NULL ?
		    " with run id " : "", run != NULL ? run : "", dir);
	return bad ? 1 : 0;
}

static const struct cmd_option cmd_ps_options[] = {
	{ "json", 0, 0 },
	{ NULL, 0, 0 }
};

const struct cmd_entry cmd_ps_entry = {
	.name = "ps",
	.args = "[--json]",
	.about = "list the running corrals and their agents",
	.options = cmd_ps_options,
	.lower = 0,
	.upper = 0,
	.flags = CMD_TARGET,
	.exec = cmd_ps_exec,
};
