/*
 * corral answer: answer a step that waits for a person (docs/steps.md):
 * a running corral's (_corral/answer on its control socket), or an
 * escalation record that --on-escalate=exit wrote (the answer goes into
 * the file, for corral run --resume).
 *
 *   corral answer [-S PATH | --run ID] [--job ID] [RUN|RECORD] STEP TEXT
 *   corral answer ... STEP --proceed | --abort
 *
 * RUN is a run id (or a prefix of one) and may be left out when one
 * corral runs; a first word that names a file is a record.
 */

#include <sys/stat.h>

#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "cmd.h"

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
cmd_answer_live(struct cmd *c, const char *run, const char *step, int action,
    const char *text)
{
	json_t	*params, *res, *e;
	char	 err[1024];

	if (client_attach(&c->client, cmd_get(c, "control"), run != NULL ?
	    run : cmd_get(c, "run"), "corral-answer") != 0)
		return 1;
	c->attached = 1;
	params = json_pack("{s:s, s:s}", "step", step, "action",
	    step_action_name(action));
	if (text != NULL)
		json_object_set_new(params, "text", json_string(text));
	if (cmd_get(c, "job") != NULL)
		json_object_set_new(params, "jobId", json_string(cmd_get(c,
		    "job")));
	if ((res = client_call(&c->client, CORRAL_M_ANSWER, params, 10000,
	    &e)) == NULL) {
		client_error_text(e, err, sizeof err);
		fprintf(stderr, "corral: answer %s: %s\n", step, err);
		json_decref(e);
		return 1;
	}
	printf("answered step %s of job %s (%s)\n", step, json_string_value(
	    json_object_get(res, "jobId")), step_action_name(action));
	json_decref(res);
	return 0;
}

/* corral answer. */
static int
cmd_answer_exec(struct cmd *c)
{
	const char	*text = NULL, *step, *first = NULL;
	int		 action = STEP_RETRY, want;

	if (cmd_has(c, "proceed") && cmd_has(c, "abort")) {
		fprintf(stderr, "corral: answer: --proceed or --abort, not "
		    "both\n");
		return EXIT_USAGE;
	}
	if (cmd_has(c, "proceed"))
		action = STEP_PROCEED;
	else if (cmd_has(c, "abort"))
		action = STEP_ABORT;
	want = action == STEP_RETRY ? 2 : 1;	/* STEP, and TEXT to retry */
	if (c->argc < want || c->argc > want + 1)
		return cmd_usage(c);
	if (c->argc == want + 1)
		first = c->argv[0];
	step = c->argv[c->argc - want];
	if (action == STEP_RETRY)
		text = c->argv[c->argc - 1];
	if (first != NULL && cmd_answer_is_record(first))
		return cmd_answer_record(first, step, action, text);
	return cmd_answer_live(c, first, step, action, text);
}

static const struct cmd_option cmd_answer_options[] = {
	{ "job", 0, 1 },
	{ "proceed", 0, 0 },
	{ "abort", 0, 0 },
	{ NULL, 0, 0 }
};

const struct cmd_entry cmd_answer_entry = {
	.name = "answer",
	.args = "[--job ID] [RUN | RECORD] STEP TEXT | --proceed | --abort",
	.about = "answer a step that waits for a person, or an escalation "
	    "record",
	.options = cmd_answer_options,
	.lower = 1,
	.upper = 3,
	.flags = CMD_TARGET,
	.exec = cmd_answer_exec,
};
