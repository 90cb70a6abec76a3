/*
 * helper: a sub-agent that counts which files of a corpus mention a topic.
 *
 * Its task carries args topic and corpus.  It counts the case-insensitive
 * mentions of the topic in every file of the corpus directory and
 * finalizes with the files that mention it, most mentions first (ties in
 * file-name order), as data.sources [{file, mentions}].  Confidence is
 * 0.9, or 0.4 when no file mentions the topic.
 */

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral/agent.h"

#define HELPER_FILE_MAX		(4 * 1024 * 1024)

/* Keep entries that are not dot files. */
static int
helper_visible(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* Count the case-insensitive occurrences of topic in text. */
static json_int_t
helper_count(const char *text, const char *topic)
{
	const char	*p;
	json_int_t	 n = 0;
	size_t		 len = strlen(topic);

	for (p = text; (p = strcasestr(p, topic)) != NULL; p += len)
		n++;
	return n;
}

/* Order sources by mentions, most first; equal counts keep name order. */
static int
helper_cmp(const void *a, const void *b)
{
	json_t		*x = *(json_t *const *)a, *y = *(json_t *const *)b;
	json_int_t	 mx, my;

	mx = json_integer_value(json_object_get(x, "mentions"));
	my = json_integer_value(json_object_get(y, "mentions"));
	if (mx != my)
		return mx > my ? -1 : 1;
	return strcmp(json_string_value(json_object_get(x, "file")),
	    json_string_value(json_object_get(y, "file")));
}

/* Count the mentions of a topic in each file of the corpus. */
static json_t *
helper_handle(struct cagent *ca, const struct cagent_msg *m, void *arg)
{
	struct dirent	**names;
	json_t		 *r, *list[256], *sources;
	const char	 *topic, *corpus;
	char		  path[PATH_MAX], *text;
	json_int_t	  c;
	size_t		  k = 0, i;
	int		  n, j;

	(void)arg;
	topic = cagent_param_str(m, "topic", m->text);
	corpus = cagent_param_str(m, "corpus", "corpus");
	if (*topic == '\0')
		return cagent_reply_error(ca, m, "the task names no topic");
	if ((n = scandir(corpus, &names, helper_visible, alphasort)) < 0)
		return cagent_reply_error(ca, m, "cannot list %s", corpus);
	for (j = 0; j < n; j++) {
		snprintf(path, sizeof path, "%s/%s", corpus, names[j]->d_name);
		text = cagent_read_file(path, HELPER_FILE_MAX, NULL);
		if (text != NULL && (c = helper_count(text, topic)) > 0 &&
		    k < sizeof list / sizeof list[0])
			list[k++] = json_pack("{s:s, s:I}", "file",
			    names[j]->d_name, "mentions", c);
		free(text);
		free(names[j]);
	}
	free(names);
	qsort(list, k, sizeof list[0], helper_cmp);
	sources = json_array();
	for (i = 0; i < k; i++)
		json_array_append_new(sources, list[i]);

	r = cagent_reply(ca, m, NULL, NULL);
	cagent_set_text(r, "%zu file%s of %s mention %s.", k, k == 1 ? "" :
	    "s", corpus, topic);
	cagent_set_data(r, json_pack("{s:s, s:o}", "topic", topic, "sources",
	    sources));
	cagent_set_confidence(r, k > 0 ? 0.9 : 0.4, k > 0 ? "counted every "
	    "mention" : "no file mentions the topic");
	return r;
}

/* Serve helper tasks until corral closes our input. */
int
main(void)
{
	struct cagent	*ca;
	int		 rc;

	if ((ca = cagent_open("Helper")) == NULL)
		return 1;
	rc = cagent_run(ca, helper_handle, NULL);
	cagent_close(ca);
	return rc == 0 ? 0 : 1;
}
