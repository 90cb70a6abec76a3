/*
 * corral tasks: a running corral's task registry, one task a line (its
 * id, status, assignee, requester, age and title), or as map/tasks/list
 * answers it with --json.
 *
 *   corral tasks [-S PATH] [--run ID] [--status S] [--assignee AGENT] [--json]
 *
 * docs/topics.md describes the registry.
 */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "corral.h"

#define CMD_TASKS_USAGE	"usage: corral tasks [-S PATH] [--run ID] " \
	"[--status S] [--assignee AGENT] [--json]\n"

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
int
cmd_tasks(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "control", required_argument, NULL, 'S' },
		{ "run", required_argument, NULL, 'r' },
		{ "status", required_argument, NULL, 's' },
		{ "assignee", required_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 }
	};
	struct client	 c;
	const char	*path = NULL, *run = NULL;
	json_t		*res, *e, *params, *f;
	char		 err[512], *s;
	int		 ch, json = 0;

	optind = 0;
	f = json_object();
	while ((ch = getopt_long(argc, argv, "S:r:s:a:j", opts, NULL)) != -1) {
		switch (ch) {
		case 'S':
			path = optarg;
			break;
		case 'r':
			run = optarg;
			break;
		case 's':
			json_object_set_new(f, "status", json_string(optarg));
			break;
		case 'a':
			json_object_set_new(f, "assignee", json_string(optarg));
			break;
		case 'j':
			json = 1;
			break;
		default:
			json_decref(f);
			fprintf(stderr, CMD_TASKS_USAGE);
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		json_decref(f);
		fprintf(stderr, CMD_TASKS_USAGE);
		return EXIT_USAGE;
	}
	params = json_pack("{s:o}", "filter", f);
	if (client_attach(&c, path, run, "corral-tasks") != 0) {
		json_decref(params);
		return 1;
	}
	if ((res = client_call(&c, CORRAL_M_TASKS_LIST, params, 10000,
	    &e)) == NULL) {
		client_error_text(e, err, sizeof err);
		fprintf(stderr, "corral: tasks: %s\n", err);
		json_decref(e);
		client_close(&c);
		return 1;
	}
	if (json) {
		if ((s = json_dumps(res, CORRAL_JSON_FLAGS)) != NULL) {
			printf("%s\n", s);
			free(s);
		}
	} else
		cmd_tasks_table(res);
	json_decref(res);
	client_close(&c);
	return 0;
}
