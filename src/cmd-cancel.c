/*
 * corral cancel: cancel requests of a running corral by their trace ids
 * (_corral/cancel).  Each ends at once with the error code cancelled; the
 * agent working on it is told to stop (docs/control.md).
 *
 *   corral cancel [-S PATH | --run ID] [--reason TEXT] REQUEST ...
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "cmd.h"

/* corral cancel. */
static int
cmd_cancel_exec(struct cmd *c)
{
	const char	*reason = cmd_get(c, "reason"), *at;
	json_t		*res, *e, *params;
	char		 err[512];
	int		 i, rc = 0;

	for (i = 0; i < c->argc; i++) {
		params = json_pack("{s:s}", "requestId", c->argv[i]);
		if (reason != NULL)
			json_object_set_new(params, "reason",
			    json_string(reason));
		if ((res = client_call(&c->client, CORRAL_M_CANCEL, params,
		    10000, &e)) == NULL) {
			client_error_text(e, err, sizeof err);
			fprintf(stderr, "corral: cancel %s: %s\n", c->argv[i],
			    err);
			json_decref(e);
			rc = 1;
			continue;
		}
		at = json_string_value(json_object_get(res, "agentId"));
		printf("cancelled %s (%s%s%s)\n", c->argv[i], json_string_value(
		    json_object_get(res, "was")), at != NULL ? " at " : "",
		    at != NULL ? at : "");
		json_decref(res);
	}
	return rc;
}

static const struct cmd_option cmd_cancel_options[] = {
	{ "reason", 0, 1 },
	{ NULL, 0, 0 }
};

const struct cmd_entry cmd_cancel_entry = {
	.name = "cancel",
	.args = "[--reason TEXT] REQUEST ...",
	.about = "cancel requests by their trace ids",
	.options = cmd_cancel_options,
	.lower = 1,
	.upper = -1,
	.flags = CMD_TARGET | CMD_ATTACH,
	.exec = cmd_cancel_exec,
};
