/*
 * decomposer: turns a plan into execute actions.
 *
 *   decomposer [--list FILE] [--batch N] [--intent INTENT]
 *
 * The work items come from a list file (the request's "list" parameter,
 * else --list): one item per line, blank lines and lines starting with #
 * skipped.  Relative items are made absolute against the list file's
 * directory, so the agents downstream need not share its working
 * directory; URLs are kept as they are.  The items are split into batches
 * of N (default: all in one) and each batch becomes one next action
 * (execute unless --intent says otherwise) whose args carry the items,
 * the batch's place (part, parts) and the decomposition's id (batch), so
 * that a later step can gather the parts again.  Without a list the goal
 * itself becomes the single action.
 */

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral/agent.h"

#define DECOMPOSER_LIST_MAX	(1024 * 1024)

struct decomposer_conf {
	const char	*list;
	const char	*intent;
	size_t		 batch;
};

/* Make one list entry absolute against the list's directory. */
static json_t *
decomposer_item(const char *dir, const char *line)
{
	char	path[PATH_MAX], real[PATH_MAX];

	if (strstr(line, "://") != NULL)
		return json_string(line);
	if (line[0] == '/')
		snprintf(path, sizeof path, "%s", line);
	else
		snprintf(path, sizeof path, "%s/%s", dir, line);
	if (realpath(path, real) != NULL)
		return json_string(real);
	return json_string(path);	/* the executor reports it missing */
}

/* Read the list file into an array of items, or NULL with errno set. */
static json_t *
decomposer_read(const char *list)
{
	json_t	*items;
	char	*text, *line, *next, *copy, *end, dir[PATH_MAX];

	if ((text = cagent_read_file(list, DECOMPOSER_LIST_MAX, NULL)) == NULL)
		return NULL;
	if ((copy = strdup(list)) == NULL) {
		free(text);
		return NULL;
	}
	if (realpath(dirname(copy), dir) == NULL)
		snprintf(dir, sizeof dir, ".");
	free(copy);
	items = json_array();
	for (line = text; line != NULL; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		line += strspn(line, " \t\r");
		end = line + strlen(line);
		while (end > line && strchr(" \t\r", end[-1]) != NULL)
			*--end = '\0';
		if (*line == '\0' || *line == '#')
			continue;
		json_array_append_new(items, decomposer_item(dir, line));
	}
	free(text);
	return items;
}

/* Split the work into actions. */
static json_t *
decomposer_handle(struct cagent *ca, const struct cagent_msg *m, void *arg)
{
	struct decomposer_conf	*conf = arg;
	json_t			*r, *items, *tasks, *args, *chunk;
	const char		*list, *goal;
	char			 desc[128], tid[16];
	size_t			 n, i, j, parts, per;

	goal = cagent_param_str(m, "goal", *m->context != '\0' ? m->context :
	    m->task);
	list = cagent_param_str(m, "list", conf->list);
	if (list == NULL) {
		r = cagent_reply(ca, m, NULL, "One task: the goal itself.");
		args = json_deep_copy(m->params);
		json_object_set_new(args, "goal", json_string(goal));
		cagent_add_action(r, conf->intent, goal, args);
		cagent_set_confidence(r, 0.7, "no list of items to split");
		return r;
	}
	if ((items = decomposer_read(list)) == NULL)
		return cagent_reply_error(ca, m, "cannot read the list %s: %s",
		    list, strerror(errno));
	if ((n = json_array_size(items)) == 0) {
		json_decref(items);
		return cagent_reply_error(ca, m, "the list %s names no items",
		    list);
	}
	per = conf->batch == 0 || conf->batch > n ? n : conf->batch;
	parts = (n + per - 1) / per;
	r = cagent_reply(ca, m, NULL, NULL);
	tasks = json_array();
	for (i = 0, j = 0; i < n; i += per, j++) {
		chunk = json_array();
		for (size_t k = i; k < n && k < i + per; k++)
			json_array_append(chunk, json_array_get(items, k));
		snprintf(tid, sizeof tid, "t%zu", j + 1);
		snprintf(desc, sizeof desc, "Process item%s %zu-%zu of %zu",
		    per > 1 ? "s" : "", i + 1, i + json_array_size(chunk), n);
		json_array_append_new(tasks, json_pack("{s:s, s:s, s:O}", "id",
		    tid, "desc", desc, "items", chunk));
		args = json_deep_copy(m->params);
		json_object_del(args, "list");
		json_object_set_new(args, "goal", json_string(goal));
		json_object_set_new(args, "items", chunk);
		json_object_set_new(args, "part", json_integer((json_int_t)j +
		    1));
		json_object_set_new(args, "parts", json_integer(
		    (json_int_t)parts));
		json_object_set_new(args, "batch", json_string(m->id));
		cagent_add_action(r, conf->intent, desc, args);
	}
	cagent_set_text(r, "Split %zu item%s from %s into %zu task%s.", n,
	    n == 1 ? "" : "s", list, parts, parts == 1 ? "" : "s");
	cagent_set_data(r, json_pack("{s:o}", "tasks", tasks));
	cagent_set_confidence(r, 0.85, "every listed item is in exactly one "
	    "task");
	json_decref(items);
	return r;
}

/* Parse the options and serve decompose requests. */
int
main(int argc, char **argv)
{
	struct decomposer_conf	 conf = { NULL, "execute", 0 };
	struct cagent		*ca;
	int			 i, rc;

	for (i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--list") == 0)
			conf.list = argv[i + 1];
		else if (strcmp(argv[i], "--batch") == 0)
			conf.batch = strtoul(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--intent") == 0)
			conf.intent = argv[i + 1];
		else
			break;
	}
	if (i != argc) {
		fprintf(stderr, "usage: decomposer [--list FILE] [--batch N] "
		    "[--intent INTENT]\n");
		return 2;
	}
	if ((ca = cagent_open("Decomposer")) == NULL)
		return 1;
	rc = cagent_run(ca, decomposer_handle, &conf);
	cagent_close(ca);
	return rc == 0 ? 0 : 1;
}
