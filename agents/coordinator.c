/*
 * coordinator: fans a research goal out to a tree of sub-agents.
 *
 *   coordinator [--corpus DIR] [--helpers K] [--max N] [--timeout SECONDS]
 *
 * The goal names its topics after a colon, separated by commas or "and"
 * ("research: supervision trees, backpressure and circuit breakers"), or
 * the request's args.topics lists them.  For each topic (at most N,
 * default 8) the coordinator spawns a "researcher" child from the
 * workflow's catalogue with map/agents/spawn; its task carries the topic,
 * the corpus directory (--corpus, default "corpus", made absolute) and,
 * for the first K topics (default 1), "helper": true, which tells the
 * researcher to delegate the source count to a child of its own.  When
 * corral refuses a spawn for a limit (fan-out, agents alive), it waits
 * for a child's result and tries again.  It waits for every child's
 * result (--timeout seconds per task, default 15) and answers with
 * intent finalize: one line per topic, and the children's data.
 *
 * Confidence is 0.9 times the share of topics whose researcher finished
 * with a finding, so a tree that lost children reports it.  The agent
 * runs with `ready: handshake`: it sends map/connect before anything.
 */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "corral/agent.h"

#define COORDINATOR_TOPICS_MAX	64

struct coordinator_conf {
	char		 corpus[PATH_MAX];
	unsigned int	 helpers;
	unsigned int	 max;
	double		 timeout;
};

/* One topic and what became of it. */
struct coordinator_topic {
	char			 name[128];
	const char		*child;		/* NULL: spawn refused */
	char			 error[256];
	struct cagent_msg	*result;
};

/* Add a trimmed topic to the list, skipping empty ones. */
static void
coordinator_add(struct coordinator_topic *t, size_t *n, size_t max,
    const char *s, size_t len)
{
	while (len > 0 && (*s == ' ' || *s == '\t'))
		s++, len--;
	while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t' ||
	    s[len - 1] == '.'))
		len--;
	if (len == 0 || *n >= max)
		return;
	memset(&t[*n], 0, sizeof t[*n]);
	snprintf(t[*n].name, sizeof t[*n].name, "%.*s", (int)len, s);
	(*n)++;
}

/* Split the goal (or args.topics) into topics. */
static size_t
coordinator_topics(const struct cagent_msg *m, struct coordinator_topic *t,
    size_t max)
{
	json_t		*v, *list = json_object_get(m->params, "topics");
	const char	*goal, *p, *comma, *and;
	size_t		 i, n = 0;

	if (json_is_array(list)) {
		json_array_foreach(list, i, v)
			if (json_is_string(v))
				coordinator_add(t, &n, max, json_string_value(v),
				    strlen(json_string_value(v)));
		return n;
	}
	goal = *m->text != '\0' ? m->text : m->task;
	if ((p = strchr(goal, ':')) != NULL)
		goal = p + 1;
	for (p = goal; *p != '\0'; ) {
		comma = strchr(p, ',');
		and = strstr(p, " and ");
		if (and != NULL && (comma == NULL || and < comma)) {
			coordinator_add(t, &n, max, p, (size_t)(and - p));
			p = and + 5;
		} else if (comma != NULL) {
			coordinator_add(t, &n, max, p, (size_t)(comma - p));
			p = comma + 1;
		} else {
			coordinator_add(t, &n, max, p, strlen(p));
			break;
		}
	}
	return n;
}

/*
 * Spawn one researcher for a topic.  When a limit refuses it while
 * children are still out, wait for one of their results (into results[],
 * counted by *got) and try again: the tree never exceeds its fan-out.
 */
static void
coordinator_spawn(struct cagent *ca, const struct coordinator_conf *conf,
    struct coordinator_topic *t, int helper, struct cagent_msg *results,
    size_t *got, size_t *out)
{
	struct cagent_spawn_opts	 o = { 0 };
	struct timespec			 tick = { 0, 50 * 1000 * 1000 };
	json_t				*task;
	char				 title[160];
	int				 pause = 0;

	snprintf(title, sizeof title, "Research: %s", t->name);
	o.timeout = conf->timeout;
	for (;;) {
		task = cagent_envelope(ca, "execute", title, t->name);
		json_object_set_new(task, "inputs", json_pack("{s:{s:s, s:s, "
		    "s:b}}", "parameters", "topic", t->name, "corpus",
		    conf->corpus, "helper", helper));
		if ((t->child = cagent_spawn(ca, "researcher", task,
		    &o)) != NULL) {
			(*out)++;
			return;
		}
		if (cagent_error_code(ca) != CORRAL_E_EXHAUSTED)
			break;
		if (*out == 0) {
			/*
			 * Every result is in, but a finished child counts
			 * until it has exited: give it a moment.
			 */
			if (++pause > 40)
				break;
			nanosleep(&tick, NULL);
			continue;
		}
		if (cagent_await_children(ca, &results[*got], 1,
		    conf->timeout + 5) != 1)
			break;
		(*got)++;
		(*out)--;
	}
	snprintf(t->error, sizeof t->error, "%s", cagent_error(ca));
	cagent_log(ca, "topic %s: %s", t->name, t->error);
}

/* Fan out, gather, and finalize. */
static json_t *
coordinator_handle(struct cagent *ca, const struct cagent_msg *m, void *arg)
{
	struct coordinator_conf		*conf = arg;
	struct coordinator_topic	 topics[COORDINATOR_TOPICS_MAX];
	struct cagent_msg		*results;
	json_t				*r, *data;
	char				*text = NULL;
	size_t				 n, i, j, spawned = 0, found = 0, len = 0;
	size_t				 got = 0, out = 0;
	int				 k;
	FILE				*f;

	n = coordinator_topics(m, topics, conf->max < COORDINATOR_TOPICS_MAX ?
	    conf->max : COORDINATOR_TOPICS_MAX);
	if (n == 0)
		return cagent_reply_error(ca, m, "the goal names no topics "
		    "(\"research: a, b and c\")");
	if ((results = calloc(n, sizeof *results)) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		coordinator_spawn(ca, conf, &topics[i], i < conf->helpers,
		    results, &got, &out);
		spawned += topics[i].child != NULL;
	}
	if (out > 0) {
		k = cagent_await_children(ca, &results[got], out,
		    conf->timeout + 5);
		if (k < (int)out)
			cagent_log(ca, "%s", cagent_error(ca));
		got += (size_t)k;
	}
	for (j = 0; j < got; j++)
		for (i = 0; i < n; i++)
			if (topics[i].child != NULL &&
			    strcmp(topics[i].child, results[j].child) == 0)
				topics[i].result = &results[j];

	r = cagent_reply(ca, m, "finalize", NULL);
	data = json_array();
	f = open_memstream(&text, &len);
	fprintf(f, "Research on %zu topic%s by %zu researcher%s:", n,
	    n == 1 ? "" : "s", spawned, spawned == 1 ? "" : "s");
	for (i = 0; i < n; i++) {
		struct cagent_msg *res = topics[i].result;

		if (topics[i].child == NULL) {
			fprintf(f, "\n- %s: not researched (%s)", topics[i].name,
			    topics[i].error);
			cagent_add_risk(r, "%s: %s", topics[i].name,
			    topics[i].error);
		} else if (res == NULL) {
			fprintf(f, "\n- %s: %s sent no result in time",
			    topics[i].name, topics[i].child);
			cagent_add_risk(r, "%s: no result", topics[i].name);
		} else if (!res->ok || res->score < 0.5) {
			fprintf(f, "\n- %s (%s): %s", topics[i].name,
			    topics[i].child, *res->text ? res->text :
			    "failed");
			cagent_add_risk(r, "%s: %s", topics[i].name, res->ok ?
			    "nothing found" : "the researcher failed");
		} else {
			fprintf(f, "\n- %s (%s)", res->text, topics[i].child);
			found++;
		}
		json_array_append_new(data, json_pack("{s:s, s:s?, s:b, s:O}",
		    "topic", topics[i].name, "researcher", topics[i].child,
		    "ok", res != NULL && res->ok, "result", res != NULL ?
		    res->data : json_null()));
	}
	fclose(f);
	cagent_set_text(r, "%s", text);
	free(text);
	cagent_set_data(r, json_pack("{s:o}", "topics", data));
	cagent_set_confidence(r, 0.9 * (double)found / (double)n,
	    "the share of topics whose researcher came back with a finding");
	for (j = 0; j < got; j++)
		cagent_msg_free(&results[j]);
	free(results);
	return r;
}

/* Parse the options, shake hands with corral, and serve requests. */
int
main(int argc, char **argv)
{
	struct coordinator_conf	 conf = { "", 1, 8, 15 };
	struct cagent		*ca;
	const char		*corpus = "corpus";
	int			 i, rc;

	for (i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--corpus") == 0)
			corpus = argv[i + 1];
		else if (strcmp(argv[i], "--helpers") == 0)
			conf.helpers = (unsigned int)strtoul(argv[i + 1], NULL,
			    10);
		else if (strcmp(argv[i], "--max") == 0)
			conf.max = (unsigned int)strtoul(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--timeout") == 0)
			conf.timeout = strtod(argv[i + 1], NULL);
		else
			break;
	}
	if (i != argc) {
		fprintf(stderr, "usage: coordinator [--corpus DIR] [--helpers K] "
		    "[--max N] [--timeout SECONDS]\n");
		return 2;
	}
	if (realpath(corpus, conf.corpus) == NULL)
		snprintf(conf.corpus, sizeof conf.corpus, "%s", corpus);
	if ((ca = cagent_open("Coordinator")) == NULL)
		return 1;
	if (cagent_handshake(ca) != 0) {
		cagent_log(ca, "handshake: %s", cagent_error(ca));
		cagent_close(ca);
		return 1;
	}
	rc = cagent_run(ca, coordinator_handle, &conf);
	cagent_close(ca);
	return rc == 0 ? 0 : 1;
}
