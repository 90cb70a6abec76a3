/*
 * corral host: the far end of a launched agent.  A launcher (launch: in
 * the workflow file) runs it on the other machine, through ssh, srun or a
 * container engine, with the agent's command after "--"; corral writes
 * that command line itself ({{cmd}} in the launcher's template).
 *
 *   corral host [-a SECONDS] [-x SECONDS] [-g SECONDS] [-t SECONDS]
 *       [-e NAME=VALUE]... [-l LIMIT=VALUE]... [-C DIR] [-n] -- CMD [ARG...]
 *
 * host.c does the work; docs/scale-out.md says what it guarantees.
 */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "cmd.h"

/* Read a number of seconds for an option; -1 on a bad one. */
static int
cmd_host_seconds(struct cmd *c, const char *name, double *out)
{
	const char	*v = cmd_get(c, name);
	char		*end;
	double		 d;

	if (v == NULL)
		return 0;
	errno = 0;
	d = strtod(v, &end);
	if (errno != 0 || end == v || *end != '\0' || !(d > 0) || d > 1e6) {
		fprintf(stderr, "corral host: --%s %s: expected a number of "
		    "seconds above 0\n", name, v);
		return -1;
	}
	*out = d;
	return 0;
}

/* Read the -l LIMIT=VALUE options into the options' limits. */
static int
cmd_host_limits(struct cmd *c, struct host_opts *o)
{
	const char	*v, *eq;
	char		 name[32], *end;
	size_t		 it = 0;
	long long	 n;
	int		 r;

	while ((v = cmd_next(c, "limit", &it)) != NULL) {
		eq = strchr(v, '=');
		if (eq == NULL || (size_t)(eq - v) >= sizeof name)
			goto bad;
		snprintf(name, sizeof name, "%.*s", (int)(eq - v), v);
		errno = 0;
		n = strtoll(eq + 1, &end, 10);
		if ((r = config_rlimit_find(name)) < 0 || errno != 0 ||
		    end == eq + 1 || *end != '\0' || n < 0)
			goto bad;
		o->limits = xreallocarray(o->limits, o->nlimits + 1,
		    sizeof *o->limits);
		o->limits[o->nlimits].resource = r;
		o->limits[o->nlimits++].value = n;
	}
	return 0;
bad:
	fprintf(stderr, "corral host: --limit %s: expected NAME=NUMBER, NAME "
	    "one of limits: in the workflow file (nofile, as, cpu ...)\n", v);
	return -1;
}

/* corral host. */
static int
cmd_host_exec(struct cmd *c)
{
	struct host_opts	 o = { .alive = 2, .lost = 10, .grace = 2,
				    .timeout = 5 };
	const char		*v;
	size_t			 it = 0;
	int			 rc;

	if (cmd_host_seconds(c, "alive", &o.alive) != 0 ||
	    cmd_host_seconds(c, "lost", &o.lost) != 0 ||
	    cmd_host_seconds(c, "grace", &o.grace) != 0 ||
	    cmd_host_seconds(c, "timeout", &o.timeout) != 0 ||
	    cmd_host_limits(c, &o) != 0) {
		free(o.limits);
		return EXIT_USAGE;
	}
	while ((v = cmd_next(c, "env", &it)) != NULL) {
		if (strchr(v, '=') == NULL || *v == '=') {
			fprintf(stderr, "corral host: --env %s: expected "
			    "NAME=VALUE\n", v);
			free(o.env);
			free(o.limits);
			return EXIT_USAGE;
		}
		o.env = xreallocarray(o.env, o.nenv + 1, sizeof *o.env);
		o.env[o.nenv++] = (char *)v;
	}
	o.cwd = cmd_get(c, "cd");
	o.nopidns = cmd_has(c, "no-pidns");
	rc = host_run(&o, c->argv);
	free(o.env);
	free(o.limits);
	return rc;
}

static const struct cmd_option cmd_host_options[] = {
	{ "alive", 'a', 1 },
	{ "lost", 'x', 1 },
	{ "grace", 'g', 1 },
	{ "timeout", 't', 1 },
	{ "env", 'e', 1 },
	{ "limit", 'l', 1 },
	{ "cd", 'C', 1 },
	{ "no-pidns", 'n', 0 },
	{ NULL, 0, 0 }
};

const struct cmd_entry cmd_host_entry = {
	.name = "host",
	.args = "[-n] [-a SECONDS] [-C DIR] [-e NAME=VALUE] [-g SECONDS] "
	    "[-l LIMIT=VALUE] [-t SECONDS] [-x SECONDS] CMD [ARG ...]",
	.about = "the far end of a launched agent (started by launch:)",
	.options = cmd_host_options,
	.lower = 1,
	.upper = -1,
	.flags = CMD_COMMAND,
	.exec = cmd_host_exec,
};
