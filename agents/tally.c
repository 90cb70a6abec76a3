/*
 * tally: gathers the parts of a fanned-out job back into one report.
 *
 * corral runs every next action of a reply concurrently and has no join:
 * each branch ends on its own.  tally is the join, kept in the agent.  A
 * decomposer gives each part args "batch" (the decomposition's id),
 * "part" and "parts"; the workers pass those on with their counts (args
 * "file", "lines", "words", "bytes").  tally records each part it is sent
 * and answers it; the part that completes its batch gets the totals and a
 * finalize next action, the others end their branch with "recorded k of
 * n".  Run a single instance, as the parts of a batch must meet in one
 * process.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral/agent.h"

/* The parts of one batch received so far. */
struct tally_batch {
	char			*id;
	json_t			*parts;		/* array of args objects */
	size_t			 expected;
	struct tally_batch	*next;
};

/* Find a batch by id, creating it when new. */
static struct tally_batch *
tally_batch(struct tally_batch **list, const char *id, size_t expected)
{
	struct tally_batch	*b;

	for (b = *list; b != NULL; b = b->next)
		if (strcmp(b->id, id) == 0)
			return b;
	if ((b = calloc(1, sizeof *b)) == NULL || (b->id = strdup(id)) ==
	    NULL) {
		fprintf(stderr, "tally: out of memory\n");
		exit(1);
	}
	b->parts = json_array();
	b->expected = expected;
	b->next = *list;
	*list = b;
	return b;
}

/* Forget a finished batch. */
static void
tally_forget(struct tally_batch **list, struct tally_batch *b)
{
	struct tally_batch	**pp;

	for (pp = list; *pp != NULL; pp = &(*pp)->next)
		if (*pp == b) {
			*pp = b->next;
			break;
		}
	json_decref(b->parts);
	free(b->id);
	free(b);
}

/* Order parts by their part number, so the report does not depend on timing. */
static int
tally_cmp(const void *a, const void *b)
{
	json_int_t	x, y;

	x = json_integer_value(json_object_get(*(json_t *const *)a, "part"));
	y = json_integer_value(json_object_get(*(json_t *const *)b, "part"));
	return x < y ? -1 : x > y;
}

/* Write the report of a complete batch into r. */
static void
tally_report(json_t *r, struct tally_batch *b, const struct cagent_msg *m)
{
	json_t		**v, *goal, *args;
	json_int_t	 lines = 0, words = 0, bytes = 0, w;
	char		*text = NULL;
	const char	*file, *slash;
	size_t		 len = 0, i, n = json_array_size(b->parts);
	FILE		*f;

	if ((v = calloc(n, sizeof *v)) == NULL)
		exit(1);
	for (i = 0; i < n; i++)
		v[i] = json_array_get(b->parts, i);
	qsort(v, n, sizeof *v, tally_cmp);
	f = open_memstream(&text, &len);
	fprintf(f, "Word counts of %zu files:\n", n);
	for (i = 0; i < n; i++) {
		file = json_string_value(json_object_get(v[i], "file"));
		file = file != NULL ? file : "?";
		slash = strrchr(file, '/');
		w = json_integer_value(json_object_get(v[i], "words"));
		fprintf(f, "  %-24s %6lld words %5lld lines %7lld bytes%s\n",
		    slash != NULL ? slash + 1 : file, (long long)w,
		    (long long)json_integer_value(json_object_get(v[i],
		    "lines")), (long long)json_integer_value(json_object_get(
		    v[i], "bytes")), w == 0 ? "  (empty)" : "");
		words += w;
		lines += json_integer_value(json_object_get(v[i], "lines"));
		bytes += json_integer_value(json_object_get(v[i], "bytes"));
	}
	fprintf(f, "  %-24s %6lld words %5lld lines %7lld bytes", "total",
	    (long long)words, (long long)lines, (long long)bytes);
	fclose(f);
	free(v);
	cagent_set_text(r, "%s", text);
	free(text);
	cagent_set_data(r, json_pack("{s:I, s:I, s:I, s:O}", "words", words,
	    "lines", lines, "bytes", bytes, "files", b->parts));
	args = json_pack("{s:I, s:I, s:I, s:I}", "files", (json_int_t)n,
	    "words", words, "lines", lines, "bytes", bytes);
	if ((goal = json_object_get(m->params, "goal")) != NULL)
		json_object_set(args, "goal", goal);
	cagent_add_action(r, "finalize", "Report the word counts", args);
	cagent_set_confidence(r, 0.9, "every part of the batch arrived");
}

/* Record one part; finish its batch when it is the last. */
static json_t *
tally_handle(struct cagent *ca, const struct cagent_msg *m, void *arg)
{
	struct tally_batch	**list = arg, *b;
	json_t			 *r;
	const char		 *id = cagent_param_str(m, "batch", NULL);
	double			  parts = cagent_param_num(m, "parts", 0);

	if (id == NULL || parts < 1)
		return cagent_reply_error(ca, m, "args need batch and parts");
	b = tally_batch(list, id, (size_t)parts);
	json_array_append_new(b->parts, json_deep_copy(m->params));
	r = cagent_reply(ca, m, NULL, NULL);
	if (json_array_size(b->parts) < b->expected) {
		cagent_set_text(r, "Recorded part %zu of %zu of batch %s.",
		    json_array_size(b->parts), b->expected, id);
		cagent_set_confidence(r, 0.9, "waiting for the other parts");
		return r;
	}
	tally_report(r, b, m);
	tally_forget(list, b);
	return r;
}

/* Gather parts until corral closes our input. */
int
main(void)
{
	struct tally_batch	*batches = NULL;
	struct cagent		*ca;
	int			 rc;

	if ((ca = cagent_open("Tally")) == NULL)
		return 1;
	rc = cagent_run(ca, tally_handle, &batches);
	cagent_close(ca);
	return rc == 0 ? 0 : 1;
}
