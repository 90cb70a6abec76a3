/*
 * corral: run a team of agent processes from one command.
 *
 * main() parses the command line and hands over to the command: run and
 * serve start the supervisor, check validates a workflow file, tree
 * renders the agent tree recorded in an audit log.
 */

#include <err.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"

struct cmd_entry {
	const char	*name;
	const char	*usage;
	int		(*exec)(int, char **);
};

static int	cmd_run(int, char **);
static int	cmd_serve(int, char **);
static int	cmd_check(int, char **);

static const struct cmd_entry cmds[] = {
	{ "run", "run FILE --goal TEXT [--input FILE] [--param KEY=VALUE]... "
	    "[--log FILE]\n             [--output json|text] [--control PATH | "
	    "--no-control] [-v]\n             [--on-escalate wait|fail|exit] "
	    "[--record FILE] [--resume RECORD]", cmd_run },
	{ "serve", "serve FILE [--log FILE] [--max-line SIZE] "
	    "[--control PATH | --no-control] [-v]", cmd_serve },
	{ "check", "check [-p | --print] FILE", cmd_check },
	{ "tree", "tree [--log FILE | -S PATH] [--format text|dot|mermaid]",
	    cmd_tree },
	{ "ps", "ps [-S PATH] [--json]", cmd_ps },
	{ "events", "events [-S PATH] [-f] [--filter TYPES] [--agent IDS] "
	    "[--json|--text]", cmd_events },
	{ "send", "send [-S PATH] [--wait|--no-wait] AGENT|INTENT ENVELOPE",
	    cmd_send },
	{ "stop", "stop [-S PATH] [--force] [--wait] [AGENT]", cmd_stop },
	{ "cancel", "cancel [-S PATH] [--reason TEXT] REQUEST...", cmd_cancel },
	{ "top", "top [-S PATH] [-d SECS] [-n COUNT]", cmd_top },
	{ "metrics", "metrics [-S PATH] [--json]", cmd_metrics },
	{ "mcp", "mcp [-S PATH] [--tools spawn,wait,send,list,stop] "
	    "[--wait SECS]", cmd_mcp },
	{ "answer", "answer [-S PATH] [--job ID] [RUN|RECORD] STEP TEXT | "
	    "--proceed | --abort", cmd_answer },
	{ NULL, NULL, NULL }
};

static int	verbose;

/* Print the usage summary. */
static void
usage(FILE *f)
{
	const struct cmd_entry	*c;

	fprintf(f, "usage: corral [-hVv] [--help] [--version] [--verbose] "
	    "COMMAND ...\n\n");
	for (c = cmds; c->name != NULL; c++)
		fprintf(f, "  corral %s\n", c->usage);
	fprintf(f, "\n"
	    "  run     start the workflow's agents, send the goal, print the "
	    "result\n"
	    "  serve   route envelopes from stdin, one result line each on "
	    "stdout\n"
	    "  check   validate a workflow file: ok, or its problems; --print "
	    "shows it\n"
	    "          normalized, every default filled in\n"
	    "  tree    render the agent tree, live or from an audit log\n"
	    "  ps      list the running corrals and their agents\n"
	    "  events  print a running corral's events (--follow: as they "
	    "come)\n"
	    "  send    send an envelope to an agent, or through the routes\n"
	    "  stop    stop an agent, or the whole run\n"
	    "  top     a live full-screen view of a running corral\n"
	    "  metrics a running corral's metrics, in Prometheus' format\n"
	    "  answer  answer a step that waits for a person, or an escalation "
	    "record\n"
	    "\nps ... metrics talk to a running corral over its control socket "
	    "(-S PATH,\n--run ID, or the only one running); see docs/control.md."
	    "\n\n"
	    "Exit status: 0 success, 1 the workflow failed, 2 usage or "
	    "configuration error,\n130 interrupted (SIGINT), 143 terminated "
	    "(SIGTERM).  See corral(1).\n");
}

/*
 * Load a workflow file and check it, as run, serve and check all do: every
 * error and warning goes to stderr, and a file with an error exits 2
 * before anything starts.  flags are config_check's.
 */
static struct workflow *
cmd_load(const char *path, int flags)
{
	struct workflow		*wf;
	struct config_error	 ce;

	if ((wf = config_load(path, &ce)) == NULL) {
		config_print_error(stderr, path, &ce);
		exit(EXIT_USAGE);
	}
	if (config_check(wf, flags, stderr) != 0) {
		config_free(wf);
		exit(EXIT_USAGE);
	}
	return wf;
}

/* Options shared by run and serve. */
static const struct option run_opts[] = {
	{ "goal", required_argument, NULL, 'g' },
	{ "log", required_argument, NULL, 'l' },
	{ "output", required_argument, NULL, 'o' },
	{ "max-line", required_argument, NULL, 'm' },
	{ "control", required_argument, NULL, 'S' },
	{ "no-control", no_argument, NULL, 'N' },
	{ "input", required_argument, NULL, 'i' },
	{ "param", required_argument, NULL, 'p' },
	{ "on-escalate", required_argument, NULL, 'E' },
	{ "record", required_argument, NULL, 'R' },
	{ "resume", required_argument, NULL, 'r' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

/*
 * Add one --param KEY=VALUE (a string) or KEY:=JSON (any JSON value) to
 * params.
 */
static void
cmd_param(json_t *params, const char *arg)
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
			errx(EXIT_USAGE, "--param %s: the value is not JSON: %s",
			    key, e.text);
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
cmd_input(const char *path)
{
	json_error_t	 e;
	json_t		*j;

	if (strcmp(path, "-") == 0)
		j = json_loadf(stdin, JSON_REJECT_DUPLICATES, &e);
	else
		j = json_load_file(path, JSON_REJECT_DUPLICATES, &e);
	if (j == NULL)
		errx(EXIT_USAGE, "--input %s:%d:%d: %s", path, e.line, e.column,
		    e.text);
	if (!json_is_object(j))
		errx(EXIT_USAGE, "--input %s: expected a JSON object (an "
		    "envelope, or its inputs)", path);
	return j;
}

/*
 * corral run --resume RECORD: check the record against the workflow and
 * its answer.  Returns the goal envelope to start the job with, or NULL
 * when the answer ends the run without any agent (abort, or proceed past
 * the last step): its result is printed and *rc set.
 */
static char *
cmd_resume(json_t *rec, const char *path, const struct workflow *wf,
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
		line = json_dumps(json_object_get(rec, "reply"),
		    CORRAL_JSON_FLAGS);
		printf("%s\n", line != NULL ? line : "null");
		free(line);
		*rc = 0;
		return NULL;
	}
	return json_dumps(json_object_get(rec, "goal"), CORRAL_JSON_FLAGS);
}

/* Read --on-escalate's value. */
static int
cmd_on_escalate(const char *v)
{
	if (strcmp(v, "wait") == 0)
		return STEP_ON_WAIT;
	if (strcmp(v, "fail") == 0)
		return STEP_ON_FAIL;
	if (strcmp(v, "exit") == 0)
		return STEP_ON_EXIT;
	errx(EXIT_USAGE, "--on-escalate must be wait, fail or exit");
}

/* corral run and corral serve. */
static int
cmd_start(int argc, char **argv, int mode)
{
	struct workflow		*wf;
	struct step_options	 so;
	const char		*goal = NULL, *logpath = NULL, *input = NULL;
	const char		*resume = NULL;
	char			*logabs = NULL, *line = NULL, why[512];
	size_t			 maxline = 0, len;
	json_t			*params, *in = NULL, *rec = NULL;
	int			 ch, text = 0, rc;

	memset(&so, 0, sizeof so);
	params = json_object();
	optind = 0;
	while ((ch = getopt_long(argc, argv, "g:l:o:m:vhS:Ni:p:", run_opts,
	    NULL)) != -1) {
		switch (ch) {
		case 'E':
			so.on_escalate = cmd_on_escalate(optarg);
			break;
		case 'R':
			so.record = optarg;
			break;
		case 'r':
			resume = optarg;
			break;
		case 'i':
			input = optarg;
			break;
		case 'p':
			cmd_param(params, optarg);
			break;
		case 'S':
			server_configure(optarg, 0);
			break;
		case 'N':
			server_configure(NULL, 1);
			break;
		case 'm':
			if (util_parse_size(optarg, &maxline) != 0 ||
			    maxline < 64 || maxline > CORRAL_MAX_LINE_LIMIT)
				errx(EXIT_USAGE, "--max-line: expected a size "
				    "from 64 bytes to 256MiB, such as 64MiB");
			break;
		case 'g':
			goal = optarg;
			break;
		case 'l':
			logpath = optarg;
			break;
		case 'o':
			if (strcmp(optarg, "text") == 0)
				text = 1;
			else if (strcmp(optarg, "json") == 0)
				text = 0;
			else
				errx(EXIT_USAGE, "--output must be json or "
				    "text");
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	argc -= optind;
	argv += optind;
	if (resume != NULL && mode == MODE_RUN) {
		if (goal != NULL || input != NULL ||
		    json_object_size(params) > 0)
			errx(EXIT_USAGE, "run: --resume goes on with the "
			    "record's goal; --goal, --input and --param do not "
			    "apply");
		if ((rec = step_record_load(resume, why, sizeof why)) == NULL)
			errx(EXIT_USAGE, "--resume %s", why);
		if (argc == 0 && json_is_string(json_object_get(rec,
		    "workflow"))) {
			static char *wfarg[2];

			wfarg[0] = (char *)json_string_value(json_object_get(rec,
			    "workflow"));
			argv = wfarg;
			argc = 1;
		}
	}
	if (argc != 1) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (mode == MODE_SERVE && (goal != NULL || input != NULL ||
	    json_object_size(params) > 0 || resume != NULL ||
	    so.on_escalate != 0 || so.record != NULL))
		errx(EXIT_USAGE, "serve: --goal, --input, --param, --resume, "
		    "--on-escalate and --record do not apply; envelopes come on "
		    "stdin");
	if (mode == MODE_RUN && input != NULL)
		in = cmd_input(input);
	log_init(verbose);
	wf = cmd_load(argv[0], mode == MODE_RUN ? CONFIG_CHECK_START : 0);
	if (rec != NULL) {
		if (wf->nsteps == 0)
			errx(EXIT_USAGE, "run: --resume: %s has no steps:",
			    argv[0]);
		rc = 0;
		if ((line = cmd_resume(rec, resume, wf, &rc)) == NULL) {
			json_decref(rec);
			json_decref(params);
			config_free(wf);
			return rc;
		}
		so.resume = rec;
		so.resume_path = resume;
	} else if (mode == MODE_RUN) {
		/* Refused before anything starts, like a bad workflow. */
		if ((line = envelope_goal(goal, in, params, wf->start, &len, why,
		    sizeof why)) == NULL)
			errx(EXIT_USAGE, "run: %s", why);
		json_decref(in);
	}
	json_decref(params);
	if (logpath != NULL && logpath[0] != '/') {
		/* Keep relative to where the user stood. */
		char *cwd = getcwd(NULL, 0);
		if (cwd != NULL) {
			xasprintf(&logabs, "%s/%s", cwd, logpath);
			free(cwd);
			logpath = logabs;
		}
	}
	wf->stdin_max_line = maxline;
	supervisor_step_options(&so);
	(void)pidns_enter();
	rc = supervisor_run(wf, mode, line, logpath, text);
	json_decref(rec);
	config_free(wf);
	free(line);
	free(logabs);
	return rc;
}

/* corral run FILE --goal TEXT. */
static int
cmd_run(int argc, char **argv)
{
	return cmd_start(argc, argv, MODE_RUN);
}

/* corral serve FILE. */
static int
cmd_serve(int argc, char **argv)
{
	return cmd_start(argc, argv, MODE_SERVE);
}

/* corral check [--print] FILE. */
static int
cmd_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "print", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct workflow	*wf;
	int		 ch, print = 0;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "ph", opts, NULL)) != -1) {
		switch (ch) {
		case 'p':
			print = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		usage(stderr);
		return EXIT_USAGE;
	}
	wf = cmd_load(argv[optind], CONFIG_CHECK_START);
	if (print)
		config_print(stdout, wf);
	else
		printf("ok\n");
	config_free(wf);
	return 0;
}

/*
 * Parse the global options, up to the command's name ('+': the command's
 * own options are left for it), then run the command.  Each command
 * parses its options with optind set to 0, which makes glibc's getopt
 * start afresh, in its default order: options may follow the file.
 */
int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	const struct cmd_entry	*c;
	int			 ch;

	while ((ch = getopt_long(argc, argv, "+hVv", opts, NULL)) != -1) {
		switch (ch) {
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("corral %s (protocol %d)\n", CORRAL_VERSION,
			    CORRAL_PROTOCOL_VERSION);
			return 0;
		case 'v':
			verbose++;
			break;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc == 0) {
		usage(stderr);
		return EXIT_USAGE;
	}
	log_init(verbose);
	for (c = cmds; c->name != NULL; c++) {
		if (strcmp(c->name, argv[0]) == 0)
			return c->exec(argc, argv);
	}
	fprintf(stderr, "corral: unknown command %s\n", argv[0]);
	usage(stderr);
	return EXIT_USAGE;
}
