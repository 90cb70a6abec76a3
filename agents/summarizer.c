/*
 * summarizer: reports the day's price changes from the executor's CSV.
 *
 *   summarizer [--threshold PERCENT]
 *
 * A summarize request names the CSV in args.csv (date,item,price,
 * currency,source).  The latest date in the file is "today"; each of
 * today's items is compared with its most recent price on an earlier
 * date; items seen on the previous day but not today are listed as
 * missing.  The reply lists every item with its change and proposes
 * finalize.
 *
 * Confidence is deterministic: 0.4 when any price moved by more than the
 * threshold (default 10%) since its previous observation, because a jump
 * that large is as likely a parsing error or a mislabeled page as a real
 * sale and deserves a second look; 0.9 otherwise.  With corral's default
 * reflection threshold (0.5) a large move therefore sends the summary to
 * a reviewer before it is finalized.
 */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral/agent.h"

#define SUMMARIZER_CSV_MAX	(64 * 1024 * 1024)
#define SUMMARIZER_FIELDS	5

struct summarizer_row {
	char	*f[SUMMARIZER_FIELDS];	/* date, item, price, currency, src */
};

/*
 * Split one CSV line in place into at most SUMMARIZER_FIELDS fields,
 * undoing quoting.  Returns the number of fields.
 */
static int
summarizer_split(char *line, struct summarizer_row *row)
{
	char	*r = line, *w = line;
	int	 n = 0, quoted;

	while (n < SUMMARIZER_FIELDS) {
		row->f[n++] = w;
		quoted = (*r == '"');
		if (quoted)
			r++;
		for (; *r != '\0'; r++) {
			if (quoted && *r == '"') {
				if (r[1] == '"') {
					*w++ = *r++;
					continue;
				}
				quoted = 0;
				continue;
			}
			if (!quoted && *r == ',')
				break;
			*w++ = *r;
		}
		if (*r == '\0') {
			*w = '\0';
			break;
		}
		*w++ = '\0';
		r++;
	}
	return n;
}

/* Find the most recent price of item before date; NULL if none. */
static struct summarizer_row *
summarizer_previous(struct summarizer_row *rows, size_t n, const char *item,
    const char *date)
{
	struct summarizer_row	*best = NULL;
	size_t			 i;

	for (i = 0; i < n; i++) {
		if (strcmp(rows[i].f[1], item) != 0 ||
		    strcmp(rows[i].f[0], date) >= 0)
			continue;
		if (best == NULL || strcmp(rows[i].f[0], best->f[0]) >= 0)
			best = &rows[i];
	}
	return best;
}

/* Return nonzero if item has a row dated date. */
static int
summarizer_has(struct summarizer_row *rows, size_t n, const char *item,
    const char *date)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (strcmp(rows[i].f[0], date) == 0 &&
		    strcmp(rows[i].f[1], item) == 0)
			return 1;
	return 0;
}

/* Read the CSV into rows (pointing into *text).  Returns the count, or -1. */
static ssize_t
summarizer_load(const char *csv, char **text, struct summarizer_row **rowsp)
{
	struct summarizer_row	*rows = NULL, *nr;
	char			*line, *next;
	size_t			 n = 0, cap = 0;

	if ((*text = cagent_read_file(csv, SUMMARIZER_CSV_MAX, NULL)) == NULL)
		return -1;
	for (line = *text; line != NULL && *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if (strncmp(line, "date,", 5) == 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			if ((nr = reallocarray(rows, cap, sizeof *rows)) == NULL) {
				free(rows);
				return -1;
			}
			rows = nr;
		}
		if (summarizer_split(line, &rows[n]) == SUMMARIZER_FIELDS)
			n++;
	}
	*rowsp = rows;
	return (ssize_t)n;
}

/* Summarize the latest day of the CSV. */
static json_t *
summarizer_handle(struct cagent *ca, const struct cagent_msg *m, void *arg)
{
	double			 threshold = *(double *)arg, old, now, pct;
	struct summarizer_row	*rows = NULL, *prev;
	json_t			*r, *items, *big, *missing, *args, *goal;
	const char		*csv, *today = "", *before = NULL;
	char			*text = NULL, *report = NULL, *line;
	size_t			 len = 0, i, nitems = 0;
	ssize_t			 n;
	FILE			*f;

	if ((csv = cagent_param_str(m, "csv", NULL)) == NULL)
		return cagent_reply_error(ca, m, "args.csv names no CSV file");
	if ((n = summarizer_load(csv, &text, &rows)) <= 0) {
		free(text);
		free(rows);
		return cagent_reply_error(ca, m, "%s: %s", csv, n == 0 ?
		    "no price rows" : strerror(errno));
	}
	for (i = 0; i < (size_t)n; i++)
		if (strcmp(rows[i].f[0], today) > 0)
			today = rows[i].f[0];
	for (i = 0; i < (size_t)n; i++)
		if (strcmp(rows[i].f[0], today) < 0 && (before == NULL ||
		    strcmp(rows[i].f[0], before) > 0))
			before = rows[i].f[0];

	r = cagent_reply(ca, m, NULL, NULL);
	items = json_array();
	big = json_array();
	missing = json_array();
	f = open_memstream(&report, &len);
	for (i = 0; i < (size_t)n; i++) {
		if (strcmp(rows[i].f[0], today) != 0)
			continue;
		nitems++;
		now = strtod(rows[i].f[2], NULL);
		if ((prev = summarizer_previous(rows, (size_t)n, rows[i].f[1],
		    today)) == NULL) {
			fprintf(f, "  %-28s %10.2f %s  new\n", rows[i].f[1], now,
			    rows[i].f[3]);
			json_array_append_new(items, json_pack("{s:s, s:f, s:n}",
			    "item", rows[i].f[1], "price", now, "change_pct"));
			continue;
		}
		old = strtod(prev->f[2], NULL);
		pct = old > 0 ? (now - old) / old * 100.0 : 0;
		pct = round(pct * 10) / 10;
		fprintf(f, "  %-28s %10.2f -> %8.2f %s %+6.1f%%%s\n",
		    rows[i].f[1], old, now, rows[i].f[3], pct,
		    fabs(pct) > threshold ? "  (!)" : "");
		json_array_append_new(items, json_pack("{s:s, s:f, s:f, s:f}",
		    "item", rows[i].f[1], "previous", old, "price", now,
		    "change_pct", pct));
		if (fabs(pct) > threshold) {
			json_array_append_new(big, json_string(rows[i].f[1]));
			cagent_add_risk(r, "%s moved %+.1f%% (%.2f -> %.2f): a "
			    "real price change or a scraping error", rows[i].f[1],
			    pct, old, now);
		}
	}
	for (i = 0; before != NULL && i < (size_t)n; i++) {
		if (strcmp(rows[i].f[0], before) != 0 ||
		    summarizer_has(rows, (size_t)n, rows[i].f[1], today))
			continue;
		fprintf(f, "  %-28s %10.2f %s  no price today\n", rows[i].f[1],
		    strtod(rows[i].f[2], NULL), rows[i].f[3]);
		json_array_append_new(missing, json_string(rows[i].f[1]));
	}
	fprintf(f, "Data: %s", csv);
	fclose(f);
	line = NULL;
	if (asprintf(&line, "Price changes on %s (%zu item%s, compared with "
	    "%s):\n%s", today, nitems, nitems == 1 ? "" : "s",
	    before != NULL ? before : "no earlier day", report) == -1)
		line = NULL;
	cagent_set_text(r, "%s", line != NULL ? line : report);
	free(line);
	free(report);
	if (json_array_size(big) > 0)
		cagent_set_confidence(r, 0.4, "a price moved by more than the "
		    "threshold since its previous observation");
	else
		cagent_set_confidence(r, 0.9, "every price moved within the "
		    "threshold");
	cagent_set_data(r, json_pack("{s:s, s:s?, s:f, s:o, s:o}", "date",
	    today, "previous_date", before, "threshold_pct", threshold,
	    "items", items, "missing", missing));
	args = json_pack("{s:s, s:s, s:I, s:o}", "csv", csv, "date", today,
	    "items", (json_int_t)nitems, "large_moves", big);
	if ((goal = json_object_get(m->params, "goal")) != NULL)
		json_object_set(args, "goal", goal);
	cagent_add_action(r, "finalize", "Package the daily price report",
	    args);
	free(rows);
	free(text);
	return r;
}

/* Parse the options and serve summarize requests. */
int
main(int argc, char **argv)
{
	struct cagent	*ca;
	double		 threshold = 10;
	int		 rc;

	if (argc == 3 && strcmp(argv[1], "--threshold") == 0)
		threshold = strtod(argv[2], NULL);
	else if (argc != 1) {
		fprintf(stderr, "usage: summarizer [--threshold PERCENT]\n");
		return 2;
	}
	if ((ca = cagent_open("Summarizer")) == NULL)
		return 1;
	rc = cagent_run(ca, summarizer_handle, &threshold);
	cagent_close(ca);
	return rc == 0 ? 0 : 1;
}
