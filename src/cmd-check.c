/*
 * corral check: validate a workflow file, as run and serve do before they
 * start anything; --print shows it normalized, every default filled in.
 *
 *   corral check [-p | --print] FILE
 */

#include <stdio.h>
#include <stdlib.h>

#include "corral.h"
#include "cmd.h"

/*
 * Load a workflow file and check it, as run, serve and check all do: every
 * error and warning goes to stderr, and a file with an error exits 2
 * before anything starts.  flags are config_check's.
 */
struct workflow *
cmd_check_load(const char *path, int flags)
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

/* corral check. */
static int
cmd_check_exec(struct cmd *c)
{
	struct workflow	*wf;

	wf = cmd_check_load(c->argv[0], CONFIG_CHECK_START);
	if (cmd_has(c, "print"))
		config_print(stdout, wf);
	else
		printf("ok\n");
	config_free(wf);
	return 0;
}

static const struct cmd_option cmd_check_options[] = {
	{ "print", 'p', 0 },
	{ NULL, 0, 0 }
};

const struct cmd_entry cmd_check_entry = {
	.name = "check",
	.args = "[-p | --print] FILE",
	.about = "validate a workflow file (--print: show it, defaults filled "
	    "in)",
	.options = cmd_check_options,
	.lower = 1,
	.upper = 1,
	.exec = cmd_check_exec,
};
