/*
 * corral replay: run a recorded run again with no agent started, and say
 * how this corral and workflow decide differently (docs/replay.md).
 *
 *   corral replay LOG [WORKFLOW] [--agents LIST] [--log FILE]
 *
 * The recording's last run is read (its format checked, a torn last line
 * left out); its goal starts the run again, every agent but those
 * --agents lists (which run live) is the replay adapter, which makes
 * again the requests its agent made while it worked (as frames to the
 * control plane, which this command hands it) and answers each request
 * with the reply recorded at the same path; this run's own audit lines
 * are followed as they are written (the stand-ins wait on them, and a
 * step's escalation is answered from them as the person answered it),
 * and at the end both runs are compared.
 */

#include <err.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"
#include "cmd.h"

static struct replay_run	cmd_replay_rec;
static struct replay_run	cmd_replay_now;
static size_t			cmd_replay_answered;	/* asks answered */
static ev_timer			cmd_replay_w;

/*
 * Answer this run's new escalations as the person did in the recording
 * (the same job path, step and count of asks); one the recording has no
 * answer for is aborted, and reported.
 */
static void
cmd_replay_answer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	json_t		*a, *rec;
	const char	*act, *text;
	char		 jobid[CORRAL_ID_MAX], why[512];
	int		 action;

	while ((a = json_array_get(cmd_replay_now.asked,
	    cmd_replay_answered)) != NULL) {
		cmd_replay_answered++;
		rec = replay_escalation(&cmd_replay_rec, json_string_value(
		    json_object_get(a, "key")));
		act = json_string_value(json_object_get(rec, "action"));
		text = json_string_value(json_object_get(rec, "text"));
		for (action = STEP_RETRY; act != NULL && action < STEP_ABORT;
		    action++)
			if (strcmp(act, step_action_name(action)) == 0)
				break;
		if (act == NULL || (action == STEP_RETRY && text == NULL)) {
			json_object_set_new(a, "unanswered", json_true());
			action = STEP_ABORT;
			text = NULL;
		}
		if (step_answer(json_string_value(json_object_get(a, "job")),
		    json_string_value(json_object_get(a, "step")), action, text,
		    "corral replay", jobid, sizeof jobid, why, sizeof why) != 0)
			log_warnx("replay: %s", why);
	}
}

/* This run's audit lines, as they are queued. */
static void
cmd_replay_line(const char *line, size_t len)
{
	replay_feed_line(&cmd_replay_now, line, len);
	adapter_replay_fed();
	/* Answered on the next iteration: the step is still asking now. */
	if (json_array_size(cmd_replay_now.asked) > cmd_replay_answered &&
	    !ev_is_active(&cmd_replay_w)) {
		ev_timer_init(&cmd_replay_w, cmd_replay_answer_cb, 0, 0);
		ev_timer_start(LOOP, &cmd_replay_w);
	}
}

/* Read the recording's last run; exits 2 when it cannot be replayed. */
static void
cmd_replay_read(const char *path)
{
	struct auditlog_reader	 r;
	json_t			*j;
	const char		*ev, *level;
	int			 rc, decisions = 0;

	if (auditlog_read_open(&r, path) != 0)
		err(EXIT_USAGE, "replay: %s", path);
	replay_run_init(&cmd_replay_rec);
	while ((rc = auditlog_read_next(&r, &j)) == 1) {
		ev = json_string_value(json_object_get(j, "ev"));
		if (ev != NULL && strcmp(ev, "run_start") == 0) {
			level = json_string_value(json_object_get(j, "level"));
			decisions = level != NULL &&
			    strcmp(level, "decisions") == 0;
		}
		replay_feed(&cmd_replay_rec, j);
		json_decref(j);
	}
	if (rc < 0)
		errx(EXIT_USAGE, "replay: %s", r.why);
	if (decisions)
		/* Its replies are not in it: every answer would differ. */
		errx(EXIT_USAGE, "replay: %s: its last run was recorded with "
		    "--log-level decisions, which leaves out the envelopes a "
		    "replay answers with: record with --log-level full", path);
	auditlog_read_report(&r, stderr);
	auditlog_read_close(&r);
	if (cmd_replay_rec.goal == NULL)
		errx(EXIT_USAGE, "replay: %s: its last run has no goal line: "
		    "only a run of corral run can be replayed", path);
}

/* An audit log path, kept relative to where the user stood (new string). */
static char *
cmd_replay_logpath(const char *path)
{
	char	*cwd, *abs;

	if (path == NULL)
		return xstrdup("/dev/null");
	if (path[0] == '/' || (cwd = getcwd(NULL, 0)) == NULL)
		return xstrdup(path);
	xasprintf(&abs, "%s/%s", cwd, path);
	free(cwd);
	return abs;
}

/* Return nonzero if name is one of the comma-separated list. */
static int
cmd_replay_listed(const char *list, const char *name)
{
	size_t		 n = strlen(name);
	const char	*p;

	for (p = list; p != NULL; p = strchr(p, ',') != NULL ?
	    strchr(p, ',') + 1 : NULL)
		if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return 1;
	return 0;
}

/*
 * Load the workflow with every agent the recording's stand-in, but those
 * --agents lists, which run live; exits 2 when the workflow is invalid,
 * the list names an agent it does not have, or a live one cannot run.
 */
static struct workflow *
cmd_replay_load(const char *file, const char *list)
{
	struct workflow		*wf;
	struct config_error	 ce;
	const char		*p, *e;
	size_t			 i, n;

	if ((wf = config_load(file, &ce)) == NULL) {
		config_print_error(stderr, file, &ce);
		exit(EXIT_USAGE);
	}
	for (p = list; p != NULL && *p != '\0'; p = *e != '\0' ? e + 1 : e) {
		e = p + strcspn(p, ",");
		n = (size_t)(e - p);
		for (i = 0; i < wf->nagents; i++)
			if (strlen(wf->agents[i].name) == n &&
			    strncmp(wf->agents[i].name, p, n) == 0)
				break;
		if (i == wf->nagents)
			errx(EXIT_USAGE, "replay: --agents: %s has no agent "
			    "'%.*s'", file, (int)n, p);
	}
	for (i = 0; i < wf->nagents; i++) {
		if (list != NULL && cmd_replay_listed(list, wf->agents[i].name))
			continue;
		free(wf->agents[i].adapter);
		wf->agents[i].adapter = xstrdup("replay");
	}
	/* The stand-ins run no program: only the live agents' are looked for. */
	if (config_check(wf, CONFIG_CHECK_NORUN, stderr) != 0) {
		config_free(wf);
		exit(EXIT_USAGE);
	}
	return wf;
}

/* corral replay LOG [WORKFLOW]. */
static int
cmd_replay_exec(struct cmd *c)
{
	struct workflow		*wf;
	struct step_options	 so;
	const char		*file;
	char			*goal, *logpath;
	size_t			 n;
	int			 rc;

	log_init(c->verbose + cmd_has(c, "verbose"));
	cmd_replay_read(c->argv[0]);
	file = c->argc > 1 ? c->argv[1] : cmd_replay_rec.workflow;
	if (file == NULL)
		errx(EXIT_USAGE, "replay: %s names no workflow: give it",
		    c->argv[0]);
	wf = cmd_replay_load(file, cmd_get(c, "agents"));
	if ((goal = jsonw_dumps(cmd_replay_rec.goal, CORRAL_JSON_FLAGS)) ==
	    NULL)
		fatalx("replay: json_dumps");
	replay_run_init(&cmd_replay_now);
	adapter_replay_set(&cmd_replay_rec, &cmd_replay_now);
	/* The stand-ins' own requests go where an agent's frames go. */
	adapter_replay_on_frame(control_frame);
	auditlog_on_line(cmd_replay_line);
	supervisor_quiet(1);
	/* A step that escalates is answered as in the recording. */
	memset(&so, 0, sizeof so);
	so.on_escalate = STEP_ON_REPLAY;
	supervisor_step_options(&so);
	server_configure(NULL, 1);
	logpath = cmd_replay_logpath(cmd_get(c, "log"));
	rc = supervisor_run(wf, MODE_RUN, goal, logpath, 0);
	auditlog_on_line(NULL);
	adapter_replay_set(NULL, NULL);
	n = replay_diff(&cmd_replay_rec, &cmd_replay_now, stdout);
	fflush(stdout);
	fprintf(stderr, "corral: replay: %zu difference%s from the "
	    "recording %s\n", n, n == 1 ? "" : "s", c->argv[0]);
	replay_run_free(&cmd_replay_rec);
	replay_run_free(&cmd_replay_now);
	config_free(wf);
	free(goal);
	free(logpath);
	/* A run refused or interrupted says so, whatever it had compared. */
	if (rc == EXIT_USAGE || rc >= 128)
		return rc;
	return n > 0 ? 1 : 0;
}

static const struct cmd_option cmd_replay_options[] = {
	{ "agents", 'a', 1 },
	{ "log", 'l', 1 },
	{ "verbose", 'v', 0 },
	{ NULL, 0, 0 }
};

const struct cmd_entry cmd_replay_entry = {
	.name = "replay",
	.args = "LOG [WORKFLOW] [--agents LIST] [--log FILE] [-v]",
	.about = "run a recorded run again, no agent started; print what "
	    "differs",
	.options = cmd_replay_options,
	.lower = 1,
	.upper = 2,
	.exec = cmd_replay_exec,
};
