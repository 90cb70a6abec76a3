/*
 * corral tree: the agent tree, from a finished run's audit log or live
 * from a running corral (its map/structure/graph).
 *
 *   corral tree --log FILE [--format text|dot|mermaid]
 *   corral tree [-S PATH] [--run ID] [--format text|dot|mermaid]
 */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "corral.h"

#define CMD_TREE_USAGE	"usage: corral tree [--log FILE | -S PATH | " \
	"--run ID] [--format text|dot|mermaid]\n"

/* corral tree. */
int
cmd_tree(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "log", required_argument, NULL, 'l' },
		{ "format", required_argument, NULL, 'f' },
		{ "control", required_argument, NULL, 'S' },
		{ "run", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 }
	};
	struct client	 c;
	struct timespec	 ts;
	const char	*logpath = NULL, *format = "text", *path = NULL;
	const char	*run = NULL;
	json_t		*res, *e;
	char		 err[512];
	int		 ch, rc;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "l:f:S:r:", opts, NULL)) != -1) {
		switch (ch) {
		case 'l':
			logpath = optarg;
			break;
		case 'f':
			format = optarg;
			break;
		case 'S':
			path = optarg;
			break;
		case 'r':
			run = optarg;
			break;
		default:
			fprintf(stderr, CMD_TREE_USAGE);
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fprintf(stderr, CMD_TREE_USAGE);
		return EXIT_USAGE;
	}
	if (strcmp(format, "text") != 0 && strcmp(format, "dot") != 0 &&
	    strcmp(format, "mermaid") != 0) {
		fprintf(stderr, "corral: tree: --format must be text, dot or "
		    "mermaid\n");
		return EXIT_USAGE;
	}
	if (logpath != NULL)
		return tree_render(logpath, format, stdout);

	if (client_attach(&c, path, run, "corral-tree") != 0)
		return 1;
	if ((res = client_call(&c, CORRAL_M_GRAPH, NULL, 10000, &e)) == NULL) {
		client_error_text(e, err, sizeof err);
		fprintf(stderr, "corral: map/structure/graph: %s\n", err);
		json_decref(e);
		client_close(&c);
		return 1;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	rc = tree_render_graph(res, (double)ts.tv_sec + ts.tv_nsec / 1e9,
	    format, stdout);
	json_decref(res);
	client_close(&c);
	return rc;
}
