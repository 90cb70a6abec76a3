/*
 * corral answer: answer a step that waits for a person (docs/steps.md):
 * a running corral's (_corral/answer on its control socket), or an
 * escalation record that --on-escalate=exit wrote (the answer goes into
 * the file, for corral run --resume).
 *
 *   corral answer [-S PATH] [--run ID] [--job ID] [RUN|RECORD] STEP TEXT
 *   corral answer ... STEP --proceed
 *   corral answer ... STEP --abort
 *
 * RUN is a run id (or a prefix of one) and may be left out when one
 * corral runs; a first word that names a file is a record.
 */

#include <sys/stat.h>

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

#define CMD_ANSWER_USAGE "usage: corral answer [-S PATH] [--run ID] " \
	"[--job ID] [RUN|RECORD] STEP TEXT\n" \
	"       corral answer ... STEP --proceed | --abort\n"

/* Return nonzero if word names a file: an escalation record. */
static int
cmd_answer_is_record(const char *word)
{
	struct stat	st;

	return strchr(word, '/') != NULL || (stat(word, &st) == 0 &&
	    S_ISREG(st.st_mode));
}

/* Answer an escalation record. */
static int
cmd_answer_record(const char *path, const char *step, int action,
    const char *text)
{
	char	why[1200];

	if (step_record_answer(path, step, action, text, why, sizeof why) !=
	    0) {
		fprintf(stderr, "corral: %s\n", why);
		return 1;
	}
	printf("answered step %s in %s (%s); go on with: corral run --resume "
	    "%s\n", step, path, step_action_name(action), path);
	return 0;
}

/* Answer a running corral's step over its control socket. */
static int
cmd_answer_live(const char *path, const char *run, const char *job,
    const char *step, int action, const char *text)
{
	struct client	 c;
	json_t		*params, *res, *e;
	char		 err[1024];

	if (client_attach(&c, path, run, "corral-answer") != 0)
		return 1;
	params = json_pack("{s:s, s:s}", "step", step, "action",
	    step_action_name(action));
	if (text != NULL)
		json_object_set_new(params, "text", json_string(text));
	if (job != NULL)
		json_object_set_new(params, "jobId", json_string(job));
	if ((res = client_call(&c, CORRAL_M_ANSWER, params, 10000, &e)) ==
	    NULL) {
		client_error_text(e, err, sizeof err);
		fprintf(stderr, "corral: answer %s: %s\n", step, err);
		json_decref(e);
		client_close(&c);
		return 1;
	}
	printf("answered step %s of job %s (%s)\n", step, json_string_value(
	    json_object_get(res, "jobId")), step_action_name(action));
	json_decref(res);
	client_close(&c);
	return 0;
}

/* corral answer. */
int
cmd_answer(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "control", required_argument, NULL, 'S' },
		{ "run", required_argument, NULL, 'r' },
		{ "job", required_argument, NULL, 'j' },
		{ "proceed", no_argument, NULL, 'p' },
		{ "abort", no_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char	*path = NULL, *run = NULL, *job = NULL, *text = NULL;
	const char	*step, *first = NULL;
	int		 ch, action = STEP_RETRY, chosen = 0, want;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "S:r:j:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'S':
			path = optarg;
			break;
		case 'r':
			run = optarg;
			break;
		case 'j':
			job = optarg;
			break;
		case 'p':
		case 'a':
			action = ch == 'p' ? STEP_PROCEED : STEP_ABORT;
			chosen++;
			break;
		case 'h':
			printf(CMD_ANSWER_USAGE);
			return 0;
		default:
			fprintf(stderr, CMD_ANSWER_USAGE);
			return EXIT_USAGE;
		}
	}
	argc -= optind;
	argv += optind;
	want = chosen ? 1 : 2;		/* STEP, and TEXT unless chosen */
	if (chosen > 1 || argc < want || argc > want + 1) {
		fprintf(stderr, CMD_ANSWER_USAGE);
		return EXIT_USAGE;
	}
	if (argc == want + 1)
		first = *argv++;
	step = argv[0];
	if (!chosen)
		text = argv[1];
	if (first != NULL && cmd_answer_is_record(first))
		return cmd_answer_record(first, step, action, text);
	return cmd_answer_live(path, first != NULL ? first : run, job, step,
	    action, text);
}
