/*
 * corral run and corral serve: load the workflow, start its agents and
 * the supervisor's loop.  run sends one goal and prints its result; serve
 * routes envelopes from stdin, one result line each on stdout.
 *
 *   corral run FILE --goal TEXT [--input FILE] [--param KEY=VALUE ...] ...
 *   corral serve FILE [--log FILE] [--max-line SIZE] ...
 */

#include <err.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"
#include "cmd.h"

/*
 * Add one --param KEY=VALUE (a string) or KEY:=JSON (any JSON value) to
 * params.
 */
static void
cmd_run_param(json_t *params, const char *arg)
{
	json_error_t	 e;
	json_t		*v;
	const char	*eq = strchr(arg, '=');
	char		*key;
	int		 raw;

	if (eq == NULL || eq == arg || (eq == arg + 1 && arg[0] == ':'))
		errx(EXIT_USAGE, "--param %s: expected KEY=VALUE or KEY:=JSON",
		    arg);
	raw = eq[-1] == ':';
	key = xstrndup(arg, (size_t)(eq - arg) - raw);
	if (raw) {
		if ((v = json_loads(eq + 1, JSON_DECODE_ANY |
		    JSON_REJECT_DUPLICATES, &e)) == NULL)
			errx(EXIT_USAGE, "--param %s: the value is not JSON: "
			    "%s", key, e.text);
	} else if ((v = json_string(eq + 1)) == NULL)
		errx(EXIT_USAGE, "--param %s: the value is not UTF-8", key);
	json_object_set_new(params, key, v);
	free(key);
}

/*
 * Read --input FILE ("-": standard input): one JSON object, a whole
 * envelope or what becomes its inputs.
 */
static json_t *
cmd_run_input(const char *path)
{
	json_error_t	 e;
	json_t		*j;
	FILE		*f = stdin;

	if (strcmp(path, "-") != 0 && (f = fopen(path, "r")) == NULL)
		err(EXIT_USAGE, "--input %s", path);
	j = json_loadf(f, JSON_REJECT_DUPLICATES, &e);
	if (j == NULL && ferror(f))
		err(EXIT_USAGE, "--input %s", path);	/* a directory */
	if (f != stdin)
		fclose(f);
	if (j == NULL)
		errx(EXIT_USAGE, "--input %s:%d:%d: %s", path, e.line, e.column,
		    e.text);
	if (!json_is_object(j))
		errx(EXIT_USAGE, "--input %s: expected a JSON object (an "
		    "envelope, or its inputs)", path);
	return j;
}

/* The options that say where the control socket goes, and the rest. */
static void
cmd_run_common(struct cmd *c, size_t *maxline)
{
	const char	*v;

	if (cmd_has(c, "no-control"))
		server_configure(NULL, 1);
	else if ((v = cmd_get(c, "control")) != NULL)
		server_configure(v, 0);
	*maxline = 0;
	if ((v = cmd_get(c, "max-line")) != NULL &&
	    (util_parse_size(v, maxline) != 0 || *maxline < 64 ||
	    *maxline > CORRAL_MAX_LINE_LIMIT))
		errx(EXIT_USAGE, "--max-line: expected a size from 64 bytes to "
		    "256MiB, such as 64MiB");
}

/* An audit log path, kept relative to where the user stood (new string). */
static char *
cmd_run_logpath(const char *path)
{
	char	*cwd, *abs;

	if (path == NULL)
		return NULL;
	if (path[0] == '/' || (cwd = getcwd(NULL, 0)) == NULL)
		return xstrdup(path);
	xasprintf(&abs, "%s/%s", cwd, path);
	free(cwd);
	return abs;
}

/*
 * corral run --resume RECORD: check the record against the workflow and
 * its answer.  Returns the goal envelope to start the job with, or NULL
 * when the answer ends the run without any agent (abort, or proceed past
 * the last step): its result is printed and *rc set.
 */
static char *
cmd_run_resume(json_t *rec, const char *path, const struct workflow *wf,
    int *rc)
{
	const struct step_conf	*sc;
	const char		*step;
	char			*line, why[512];
	size_t			 len;
	int			 action;

	step = json_string_value(json_object_get(rec, "step"));
	if ((action = step_record_action(rec)) < 0)
		errx(EXIT_USAGE, "resume: %s holds no answer yet: corral answer "
		    "%s %s \"TEXT\" (or --proceed, --abort)", path, path, step);
	if (step_record_check(rec, wf, why, sizeof why) != 0)
		errx(EXIT_USAGE, "resume: %s", why);
	sc = config_find_step(wf, step);
	if (action == STEP_ABORT) {
		snprintf(why, sizeof why, "aborted by a person at step %s", step);
		line = envelope_error("aborted", "REJECTED", NULL, why,
		    json_string_value(json_object_get(rec, "job")), NULL, &len);
		printf("%s\n", line);
		free(line);
		*rc = EXIT_WORKFLOW;
		return NULL;
	}
	if (action == STEP_PROCEED && sc->next == STEP_END) {
		line = jsonw_dumps(json_object_get(rec, "reply"),
		    CORRAL_JSON_FLAGS);
		printf("%s\n", line != NULL ? line : "null");
		free(line);
		*rc = 0;
		return NULL;
	}
	return jsonw_dumps(json_object_get(rec, "goal"), CORRAL_JSON_FLAGS);
}

/* Read --on-escalate's value. */
static int
cmd_run_on_escalate(const char *v)
{
	if (strcmp(v, "wait") == 0)
		return STEP_ON_WAIT;
	if (strcmp(v, "fail") == 0)
		return STEP_ON_FAIL;
	if (strcmp(v, "exit") == 0)
		return STEP_ON_EXIT;
	errx(EXIT_USAGE, "--on-escalate must be wait, fail or exit");
}

/* Start the supervisor on a loaded workflow; returns the exit status. */
static int
cmd_run_start(struct cmd *c, struct workflow *wf, int mode, char *line,
    const char *log)
{
	const char	*out = cmd_get(c, "output"), *v;
	char		*logpath;
	size_t		 maxline;
	int		 rc, text = 0, sync;

	if (out != NULL && strcmp(out, "text") == 0)
		text = 1;
	else if (out != NULL && strcmp(out, "json") != 0)
		errx(EXIT_USAGE, "--output must be json or text");
	cmd_run_common(c, &maxline);
	trace_enable(cmd_has(c, "trace"));
	logpath = cmd_run_logpath(log != NULL ? log : cmd_get(c, "log"));
	if (cmd_get(c, "log-level") != NULL &&
	    auditlog_level(cmd_get(c, "log-level")) != 0)
		errx(EXIT_USAGE, "--log-level must be full or decisions");
	if ((v = cmd_get(c, "log-sync")) != NULL) {
		if (auditlog_sync_parse(v, &sync) != 0)
			errx(EXIT_USAGE, "--log-sync must be always, never, or a "
			    "number of milliseconds (1000, or 1000ms)");
		auditlog_set_sync(sync);
	}
	if (cmd_get(c, "otlp") != NULL)
		otlp_configure(cmd_get(c, "otlp"));
	wf->stdin_max_line = maxline;
	(void)pidns_enter();
	rc = supervisor_run(wf, mode, line, logpath, text);
	config_free(wf);
	free(line);
	free(logpath);
	return rc;
}

/*
 * The options of a workflow of steps (docs/steps.md): --on-escalate,
 * --record, and --resume's record (loaded; NULL without).  With
 * --resume, the workflow file may be left out: the record names it.
 */
static json_t *
cmd_run_steps(struct cmd *c, struct step_options *so, const char **file)
{
	const char	*resume = cmd_get(c, "resume"), *v;
	json_t		*rec;
	char		 why[1200];

	memset(so, 0, sizeof *so);
	if ((v = cmd_get(c, "on-escalate")) != NULL)
		so->on_escalate = cmd_run_on_escalate(v);
	so->record = cmd_get(c, "record");
	*file = c->argc > 0 ? c->argv[0] : NULL;
	if (resume == NULL) {
		if (*file == NULL)
			errx(EXIT_USAGE, "run: the workflow FILE is required");
		return NULL;
	}
	if (cmd_get(c, "goal") != NULL || cmd_get(c, "input") != NULL ||
	    cmd_has(c, "param"))
		errx(EXIT_USAGE, "run: --resume goes on with the record's goal; "
		    "--goal, --input and --param do not apply");
	if ((rec = step_record_load(resume, why, sizeof why)) == NULL)
		errx(EXIT_USAGE, "--resume %s", why);
	if (*file == NULL)
		*file = json_string_value(json_object_get(rec, "workflow"));
	if (*file == NULL)
		errx(EXIT_USAGE, "run: --resume %s names no workflow", resume);
	so->resume = rec;
	so->resume_path = resume;
	return rec;
}

/* corral run FILE --goal TEXT, or --resume RECORD. */
static int
cmd_run_exec(struct cmd *c)
{
	struct workflow		*wf;
	struct step_options	 so;
	const char		*input = cmd_get(c, "input"), *p, *file;
	json_t			*params, *in = NULL, *rec;
	char			*line, why[512];
	size_t			 len, i = 0;
	int			 rc;

	rec = cmd_run_steps(c, &so, &file);
	params = json_object();
	while ((p = cmd_next(c, "param", &i)) != NULL)
		cmd_run_param(params, p);
	if (input != NULL)
		in = cmd_run_input(input);
	log_init(c->verbose + cmd_has(c, "verbose"));
	wf = cmd_check_load(file, CONFIG_CHECK_START);
	if (rec != NULL) {
		if (wf->nsteps == 0)
			errx(EXIT_USAGE, "run: --resume: %s has no steps:", file);
		rc = 0;
		if ((line = cmd_run_resume(rec, so.resume_path, wf, &rc)) ==
		    NULL) {
			json_decref(rec);
			json_decref(params);
			config_free(wf);
			return rc;
		}
	} else if ((line = envelope_goal(cmd_get(c, "goal"), in, params,
	    wf->start, &len, why, sizeof why)) == NULL)
		/* Refused before anything starts, like a bad workflow. */
		errx(EXIT_USAGE, "run: %s", why);
	json_decref(in);
	json_decref(params);
	supervisor_step_options(&so);
	rc = cmd_run_start(c, wf, MODE_RUN, line, NULL);
	json_decref(rec);
	return rc;
}

/* corral serve FILE. */
static int
cmd_serve_exec(struct cmd *c)
{
	struct workflow	*wf;

	log_init(c->verbose + cmd_has(c, "verbose"));
	wf = cmd_check_load(c->argv[0], 0);
	return cmd_run_start(c, wf, MODE_SERVE, NULL, NULL);
}

/*
 * corral resume LOG [WORKFLOW]: go on with the run LOG holds, which did
 * not end, appending to LOG (docs/resume.md).
 */
static int
cmd_resume_exec(struct cmd *c)
{
	struct resume_log	 rl;
	struct step_options	 so;
	struct workflow		*wf;
	const char		*file;
	char			*line, why[1200];
	int			 rc;

	log_init(c->verbose + cmd_has(c, "verbose"));
	if (resume_read(&rl, c->argv[0], stderr, why, sizeof why) != 0)
		errx(EXIT_USAGE, "resume: %s", why);
	if ((file = c->argc > 1 ? c->argv[1] : rl.workflow) == NULL)
		errx(EXIT_USAGE, "resume: %s names no workflow: give it",
		    c->argv[0]);
	wf = cmd_check_load(file, CONFIG_CHECK_START);
	/* The deadline counts the time the run went before. */
	if (wf->deadline > 0)
		wf->deadline = wf->deadline > rl.elapsed ? wf->deadline -
		    rl.elapsed : 0.001;
	if ((line = jsonw_dumps(rl.goal, CORRAL_JSON_FLAGS)) == NULL)
		errx(EXIT_USAGE, "resume: %s: its goal cannot be written back",
		    c->argv[0]);
	fprintf(stderr, "corral: resume: %s: run %s (part %u): %zu request%s "
	    "answered in the log; %.1fs of its deadline spent\n", c->argv[0],
	    rl.run != NULL ? rl.run : "?", rl.segments + 1, rl.answered,
	    rl.answered == 1 ? "" : "s", rl.elapsed);
	memset(&so, 0, sizeof so);
	supervisor_step_options(&so);
	auditlog_set_resumes(rl.run != NULL ? rl.run : "?");
	resume_start(&rl);
	rc = cmd_run_start(c, wf, MODE_RUN, line, c->argv[0]);
	resume_stop();
	auditlog_set_resumes(NULL);
	resume_free(&rl);
	return rc;
}

static const struct cmd_option cmd_resume_options[] = {
	{ "output", 'o', 1 },
	{ "log-sync", 0, 1 },
	{ "otlp", 0, 1 },
	{ "max-line", 0, 1 },
	{ "control", 'S', 1 },
	{ "no-control", 0, 0 },
	{ "trace", 0, 0 },
	{ "verbose", 'v', 0 },
	{ NULL, 0, 0 }
};

const struct cmd_entry cmd_resume_entry = {
	.name = "resume",
	.args = "LOG [WORKFLOW] [--log-sync always|never|MS] [--otlp FILE] "
	    "[--output json|text] [--max-line SIZE] [--trace] "
	    "[--control PATH | --no-control] [-v]",
	.about = "go on with a run that did not end, from its audit log",
	.options = cmd_resume_options,
	.lower = 1,
	.upper = 2,
	.exec = cmd_resume_exec,
};

/* run's options; serve takes those from --log on (cmd_serve_options). */
static const struct cmd_option cmd_run_options[] = {
	{ "goal", 'g', 1 },
	{ "input", 'i', 1 },
	{ "param", 'p', 1 },
	{ "on-escalate", 0, 1 },
	{ "record", 0, 1 },
	{ "resume", 0, 1 },
	{ "output", 'o', 1 },
	{ "log", 'l', 1 },
	{ "log-level", 0, 1 },
	{ "log-sync", 0, 1 },
	{ "otlp", 0, 1 },
	{ "max-line", 0, 1 },
	{ "control", 'S', 1 },
	{ "no-control", 0, 0 },
	{ "trace", 0, 0 },
	{ "verbose", 'v', 0 },
	{ NULL, 0, 0 }
};
#define cmd_serve_options	(cmd_run_options + 7)

const struct cmd_entry cmd_run_entry = {
	.name = "run",
	.args = "[FILE] [--goal TEXT] [--input FILE] [--param KEY=VALUE ...] "
	    "[--log FILE] [--log-level full|decisions] "
	    "[--log-sync always|never|MS] [--otlp FILE] "
	    "[--output json|text] [--max-line SIZE] [--trace] "
	    "[--control PATH | --no-control] [-v] "
	    "[--on-escalate wait|fail|exit] [--record FILE] [--resume RECORD]",
	.about = "start the workflow's agents, send the goal, print the result",
	.options = cmd_run_options,
	.lower = 0,
	.upper = 1,
	.exec = cmd_run_exec,
};

const struct cmd_entry cmd_serve_entry = {
	.name = "serve",
	.args = "FILE [--log FILE] [--log-level full|decisions] "
	    "[--log-sync always|never|MS] [--otlp FILE] "
	    "[--max-line SIZE] [--trace] [--control PATH | --no-control] [-v]",
	.about = "route envelopes from stdin, one result line each on stdout",
	.options = cmd_serve_options,
	.lower = 1,
	.upper = 1,
	.exec = cmd_serve_exec,
};
