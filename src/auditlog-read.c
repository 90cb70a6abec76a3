/*
 * Reading an audit log back (corral tree --log, corral replay): one
 * whole line at a time, as a JSON object.
 *
 * Every line corral writes ends with a newline and parses, so what does
 * not is damage or an end cut short, and the reader says which and goes
 * on from what is whole: a line that does not parse is skipped and
 * counted; a last line without its newline (corral killed mid-write, the
 * power gone before the disk had it) is left out and its bytes counted.
 *
 * Each run's run_start names the log's format.  A log written by a newer
 * corral, in a format this one does not know, is refused outright: read
 * with the wrong rules it would say wrong things (a replay that reports
 * no difference is worse than one that does not run).  A run_start with
 * no format is the first format, written before the member existed.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

/* Open the log at path for reading.  Returns -1 with errno set. */
int
auditlog_read_open(struct auditlog_reader *r, const char *path)
{
	memset(r, 0, sizeof *r);
	if ((r->in = fopen(path, "r")) == NULL)
		return -1;
	r->path = xstrdup(path);
	r->format = AUDITLOG_FORMAT;
	return 0;
}

/*
 * Check a run_start's format.  Returns 0, or -1 with the reason in r->why
 * when this corral cannot read the run.
 */
static int
auditlog_read_format(struct auditlog_reader *r, json_t *j)
{
	json_t		*v = json_object_get(j, "format");
	const char	*by = json_string_value(json_object_get(j, "version"));
	json_int_t	 f;

	if (v == NULL) {
		r->format = 1;
		return 0;
	}
	f = json_is_integer(v) ? json_integer_value(v) : -1;
	if (f >= 1 && f <= AUDITLOG_FORMAT) {
		r->format = (int)f;
		return 0;
	}
	if (f < 1)
		snprintf(r->why, sizeof r->why, "%s, line %zu: run_start's "
		    "format is not a format number: not an audit log corral "
		    "wrote", r->path, r->lineno);
	else
		snprintf(r->why, sizeof r->why, "%s, line %zu: the log is in "
		    "format %lld (written by corral %s); this corral (%s) reads "
		    "format %d and older: read it with a newer corral",
		    r->path, r->lineno, (long long)f, by != NULL ? by : "?",
		    CORRAL_VERSION, AUDITLOG_FORMAT);
	return -1;
}

/*
 * Read the next whole line into *out (a new reference).  Returns 1, 0 at
 * the end of what is whole, or -1 with r->why (the format is newer than
 * this corral's, or the file could not be read).
 */
int
auditlog_read_next(struct auditlog_reader *r, json_t **out)
{
	json_t		*j;
	const char	*ev;
	ssize_t		 n;

	*out = NULL;
	while ((n = getline(&r->line, &r->cap, r->in)) > 0) {
		r->lineno++;
		if (r->line[n - 1] != '\n') {
			/* Only the last line can lack one: getline is at EOF. */
			r->torn = (size_t)n;
			return 0;
		}
		if ((j = json_loadb(r->line, (size_t)n, 0, NULL)) == NULL ||
		    !json_is_object(j)) {
			json_decref(j);
			if (r->bad++ == 0)
				r->first_bad = r->lineno;
			continue;
		}
		ev = json_string_value(json_object_get(j, "ev"));
		if (ev != NULL && strcmp(ev, "run_start") == 0) {
			if (auditlog_read_format(r, j) != 0) {
				json_decref(j);
				return -1;
			}
			r->started = 1;
			r->ended = 0;
		} else if (ev != NULL && strcmp(ev, "run_end") == 0)
			r->ended = 1;
		*out = j;
		return 1;
	}
	if (ferror(r->in)) {
		snprintf(r->why, sizeof r->why, "%s: %s", r->path,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Say on f what was left out or looks unfinished: lines that are not
 * JSON, a last line cut short, a last run without run_end.
 */
void
auditlog_read_report(struct auditlog_reader *r, FILE *f)
{
	if (r->bad > 0)
		fprintf(f, "corral: %s: line %zu is not JSON (%zu such line%s "
		    "in all), left out\n", r->path, r->first_bad, r->bad,
		    r->bad == 1 ? "" : "s");
	if (r->torn > 0)
		fprintf(f, "corral: %s: the last line is cut short (it has no "
		    "newline): the log ends mid-write; line %zu (%zu byte%s) "
		    "is left out\n", r->path, r->lineno, r->torn,
		    r->torn == 1 ? "" : "s");
	else if (r->started && !r->ended)
		fprintf(f, "corral: %s: the last run has no run_end: it was "
		    "still going, or its log ends early\n", r->path);
}

/* Close the log and free what reading it took. */
void
auditlog_read_close(struct auditlog_reader *r)
{
	if (r->in != NULL)
		fclose(r->in);
	free(r->line);
	free(r->path);
	memset(r, 0, sizeof *r);
}
