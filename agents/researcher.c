/*
 * researcher: a sub-agent that studies one topic in a local corpus.
 *
 * Its task (from a coordinator) carries args topic and corpus (a
 * directory of text files).  It collects the first two sentences of the
 * corpus, in file-name order, that mention the topic (case-insensitive;
 * headings skipped) and finalizes with them.  When the task says
 * "helper": true it spawns a "helper" child first to count which files
 * mention the topic, does its own reading while the helper works, and
 * adds the helper's source list to its result; otherwise the sources are
 * the files its findings came from.
 *
 * Confidence is 0.85 with a finding and 0.3 without one.
 */

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral/agent.h"

#define RESEARCHER_FILE_MAX	(4 * 1024 * 1024)
#define RESEARCHER_FINDINGS	2

/* Keep regular-looking entries: no dot files. */
static int
researcher_visible(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* End the sentence in s: keep it when it mentions the topic. */
static void
researcher_flush(char *s, size_t *n, const char *topic, json_t *findings,
    size_t *added)
{
	while (*n > 0 && s[*n - 1] == ' ')
		(*n)--;
	s[*n] = '\0';
	if (*n > 0 && json_array_size(findings) < RESEARCHER_FINDINGS &&
	    strcasestr(s, topic) != NULL) {
		json_array_append_new(findings, json_string(s));
		(*added)++;
	}
	*n = 0;
}

/*
 * Append to findings the sentences of text that mention topic, up to
 * RESEARCHER_FINDINGS in all.  A sentence ends at . ! or ? before a space,
 * or at a blank line; heading lines (#) are skipped.  Returns how many
 * were added.
 */
static size_t
researcher_scan(const char *text, const char *topic, json_t *findings)
{
	char		 s[1024];
	const char	*p;
	size_t		 n = 0, added = 0;
	int		 bol = 1;

	for (p = text; *p != '\0'; p++) {
		if (bol && *p == '#') {
			researcher_flush(s, &n, topic, findings, &added);
			p += strcspn(p, "\n");
			if (*p == '\0')
				break;
			continue;
		}
		bol = (*p == '\n');
		if (*p == '\n' && p[1] == '\n') {
			researcher_flush(s, &n, topic, findings, &added);
			continue;
		}
		if (isspace((unsigned char)*p)) {
			if (n > 0 && s[n - 1] != ' ' && n + 2 < sizeof s)
				s[n++] = ' ';
			continue;
		}
		if (n + 2 < sizeof s)
			s[n++] = *p;
		if (strchr(".!?", *p) != NULL && (p[1] == ' ' || p[1] == '\n' ||
		    p[1] == '\0'))
			researcher_flush(s, &n, topic, findings, &added);
	}
	researcher_flush(s, &n, topic, findings, &added);
	return added;
}

/* Read the corpus for sentences on the topic; note their files. */
static void
researcher_read(const char *corpus, const char *topic, json_t *findings,
    json_t *sources)
{
	struct dirent	**names;
	char		  path[PATH_MAX], *text;
	int		  n, i;

	if ((n = scandir(corpus, &names, researcher_visible, alphasort)) < 0)
		return;
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof path, "%s/%s", corpus, names[i]->d_name);
		if ((text = cagent_read_file(path, RESEARCHER_FILE_MAX,
		    NULL)) != NULL) {
			if (researcher_scan(text, topic, findings) > 0)
				json_array_append_new(sources, json_pack(
				    "{s:s}", "file", names[i]->d_name));
			free(text);
		}
		free(names[i]);
	}
	free(names);
}

/* Study one topic, with a helper when the task asks for one. */
static json_t *
researcher_handle(struct cagent *ca, const struct cagent_msg *m, void *arg)
{
	struct cagent_spawn_opts	 o = { 0 };
	struct cagent_msg		 res;
	json_t				*r, *task, *findings, *sources, *hs;
	const char			*topic, *corpus, *helper = NULL;
	char				 title[160];

	(void)arg;
	topic = cagent_param_str(m, "topic", m->text);
	corpus = cagent_param_str(m, "corpus", "corpus");
	if (*topic == '\0')
		return cagent_reply_error(ca, m, "the task names no topic");
	if (json_is_true(json_object_get(m->params, "helper"))) {
		snprintf(title, sizeof title, "Find the sources that mention "
		    "%s", topic);
		task = cagent_envelope(ca, "execute", title, topic);
		json_object_set_new(task, "inputs", json_pack("{s:{s:s, s:s}}",
		    "parameters", "topic", topic, "corpus", corpus));
		o.timeout = 10;
		if ((helper = cagent_spawn(ca, "helper", task, &o)) == NULL)
			cagent_log(ca, "no helper: %s", cagent_error(ca));
	}
	findings = json_array();
	sources = json_array();
	researcher_read(corpus, topic, findings, sources);

	memset(&res, 0, sizeof res);
	if (helper != NULL) {
		if (cagent_await_children(ca, &res, 1, 15) == 1 && res.ok &&
		    json_is_array(hs = json_object_get(res.data, "sources"))) {
			json_decref(sources);
			sources = json_incref(hs);
		} else
			cagent_log(ca, "helper %s: %s", helper, res.env != NULL ?
			    "failed" : cagent_error(ca));
	}

	r = cagent_reply(ca, m, NULL, NULL);
	if (json_array_size(findings) == 0) {
		cagent_set_text(r, "%s: nothing in the corpus mentions it.",
		    topic);
		cagent_set_confidence(r, 0.3, "no finding");
	} else {
		cagent_set_text(r, "%s: %s [%zu source%s%s]", topic,
		    json_string_value(json_array_get(findings, 0)),
		    json_array_size(sources), json_array_size(sources) == 1 ?
		    "" : "s", helper != NULL ? ", counted by a helper" : "");
		cagent_set_confidence(r, 0.85, "the corpus states it directly");
	}
	cagent_set_data(r, json_pack("{s:s, s:o, s:o, s:s?}", "topic", topic,
	    "findings", findings, "sources", sources, "helper", helper));
	cagent_msg_free(&res);
	return r;
}

/* Serve research tasks until corral closes our input. */
int
main(void)
{
	struct cagent	*ca;
	int		 rc;

	if ((ca = cagent_open("Researcher")) == NULL)
		return 1;
	rc = cagent_run(ca, researcher_handle, NULL);
	cagent_close(ca);
	return rc == 0 ? 0 : 1;
}
