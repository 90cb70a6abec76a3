/*
 * corral cancel: cancel requests of a running corral by their trace ids
 * (_corral/cancel).  Each ends at once with the error code cancelled; the
 * agent working on it is told to stop (docs/control.md).
 *
 *   corral cancel [-S PATH] [--run ID] [--reason TEXT] REQUEST...
 */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

#define CMD_CANCEL_USAGE "usage: corral cancel [-S PATH] [--run ID] " \
	"[--reason TEXT] REQUEST...\n"

/* corral cancel. */
int
cmd_cancel(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "control", required_argument, NULL, 'S' },
		{ "run", required_argument, NULL, 'r' },
		{ "reason", required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 }
	};
	struct client	 c;
	const char	*path = NULL, *run = NULL, *reason = NULL, *at;
	json_t		*res, *e, *params;
	char		 err[512];
	int		 ch, i, rc = 0;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "S:r:m:", opts, NULL)) != -1) {
		switch (ch) {
		case 'S':
			path = optarg;
			break;
		case 'r':
			run = optarg;
			break;
		case 'm':
			reason = optarg;
			break;
		default:
			fprintf(stderr, CMD_CANCEL_USAGE);
			return EXIT_USAGE;
		}
	}
	if (optind == argc) {
		fprintf(stderr, CMD_CANCEL_USAGE);
		return EXIT_USAGE;
	}
	if (client_attach(&c, path, run, "corral-cancel") != 0)
		return 1;
	for (i = optind; i < argc; i++) {
		params = json_pack("{s:s}", "requestId", argv[i]);
		if (reason != NULL)
			json_object_set_new(params, "reason",
			    json_string(reason));
		if ((res = client_call(&c, CORRAL_M_CANCEL, params, 10000,
		    &e)) == NULL) {
			client_error_text(e, err, sizeof err);
			fprintf(stderr, "corral: cancel %s: %s\n", argv[i],
			    err);
			json_decref(e);
			rc = 1;
			continue;
		}
		at = json_string_value(json_object_get(res, "agentId"));
		printf("cancelled %s (%s%s%s)\n", argv[i], json_string_value(
		    json_object_get(res, "was")), at != NULL ? " at " : "",
		    at != NULL ? at : "");
		json_decref(res);
	}
	client_close(&c);
	return rc;
}
