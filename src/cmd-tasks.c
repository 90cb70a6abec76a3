/*
 * corral tasks: a running corral's task registry, one task a line (its
 * id, status, assignee, requester, age and title), or as map/tasks/list
 * answers it with --json.
 *
 *   corral tasks [-S PATH] [--run ID] [--status S] [--assignee AGENT] [--json]
 *
 * docs/topics.md describes the registry.
 */

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "corral.h"
#include "cmd.h"

/* Print the tasks as a table. */
static void
cmd_tasks_table(json_t *res)
{
	json_t		*t, *c;
	size_t		 i;
	double		 age;
	char		 when[32];
	struct timespec	 ts;
	uint64_t	 ms;

	clock_gettime(CLOCK_REALTIME, &ts);
	ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	printf("%-28s %-11s %-14s %-14s %7s  %s\n", "ID", "STATUS", "ASSIGNEE",
	    "REQUESTER", "AGE", "TITLE");
	json_array_foreach(json_object_get(res, "tasks"), i, t) {
		c = json_object_get(json_object_get(t, "meta"), "corral");
		age = (double)(ms - (uint64_t)json_integer_value(
		    json_object_get(c, "createdAt"))) / 1000.0;
		util_format_duration(when, sizeof when, age < 0 ? 0 : age);
		printf("%-28.63s %-11s %-14.63s %-14.63s %7s  %.60s\n",
		    json_string_value(json_object_get(t, "id")),
		    json_string_value(json_object_get(c, "status")) != NULL ?
		    json_string_value(json_object_get(c, "status")) : "?",
		    json_string_value(json_object_get(t, "assignee")) != NULL ?
		    json_string_value(json_object_get(t, "assignee")) : "-",
		    json_string_value(json_object_get(c, "requester")) != NULL ?
		    json_string_value(json_object_get(c, "requester")) : "-",
		    when, json_string_value(json_object_get(t, "title")) !=
		    NULL ? json_string_value(json_object_get(t, "title")) : "");
	}
}

/* corral tasks. */
static int
cmd_tasks_exec(struct cmd *c)
{
	json_t		*res, *f;
	const char	*v;

	f = json_object();
	if ((v = cmd_get(c, "status")) != NULL)
		json_object_set_new(f, "status", json_string(v));
	if ((v = cmd_get(c, "assignee")) != NULL)
		json_object_set_new(f, "assignee", json_string(v));
	if ((res = cmd_call(c, CORRAL_M_TASKS_LIST, json_pack("{s:o}",
	    "filter", f))) == NULL)
		return 1;
	if (cmd_has(c, "json"))
		cmd_print_json(res);
	else
		cmd_tasks_table(res);
	json_decref(res);
	return 0;
}

static const struct cmd_option cmd_tasks_options[] = {
	{ "status", 0, 1 },
	{ "assignee", 0, 1 },
	{ "json", 0, 0 },
	{ NULL, 0, 0 }
};

const struct cmd_entry cmd_tasks_entry = {
	.name = "tasks",
	.args = "[--status STATUS] [--assignee AGENT] [--json]",
	.about = "a running corral's task registry",
	.options = cmd_tasks_options,
	.lower = 0,
	.upper = 0,
	.flags = CMD_TARGET | CMD_ATTACH,
	.exec = cmd_tasks_exec,
};
