/*
 * corral tree: the agent tree, from a finished run's audit log or live
 * from a running corral (its map/structure/graph).
 *
 *   corral tree --log FILE [--format text|dot|mermaid]
 *   corral tree [-S PATH | --run ID] [--format text|dot|mermaid]
 */

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "corral.h"
#include "cmd.h"

/* corral tree. */
static int
cmd_tree_exec(struct cmd *c)
{
	struct timespec	 ts;
	const char	*logpath = cmd_get(c, "log"), *format = cmd_get(c,
			    "format");
	json_t		*res;
	int		 rc;

	if (format == NULL)
		format = "text";
	if (strcmp(format, "text") != 0 && strcmp(format, "dot") != 0 &&
	    strcmp(format, "mermaid") != 0) {
		fprintf(stderr, "corral: tree: --format must be text, dot or "
		    "mermaid\n");
		return EXIT_USAGE;
	}
	if (logpath != NULL)
		return tree_render(logpath, format, stdout);

	if (cmd_attach(c) != 0)
		return 1;
	if ((res = cmd_call(c, CORRAL_M_GRAPH, NULL)) == NULL)
		return 1;
	clock_gettime(CLOCK_REALTIME, &ts);
	rc = tree_render_graph(res, (double)ts.tv_sec + ts.tv_nsec / 1e9,
	    format, stdout);
	json_decref(res);
	return rc;
}

static const struct cmd_option cmd_tree_options[] = {
	{ "log", 'l', 1 },
	{ "format", 'f', 1 },
	{ NULL, 0, 0 }
};

const struct cmd_entry cmd_tree_entry = {
	.name = "tree",
	.args = "[--log FILE] [--format text|dot|mermaid]",
	.about = "render the agent tree, live or from an audit log",
	.options = cmd_tree_options,
	.lower = 0,
	.upper = 0,
	.flags = CMD_TARGET,
	.exec = cmd_tree_exec,
};
