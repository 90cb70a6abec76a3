/*
 * executor: scrapes prices from local HTML pages into a CSV file.
 *
 *   executor [--history FILE]
 *
 * An execute request lists pages in args.items (paths or file:// URLs;
 * other URLs are skipped, as corral's agents have no network).  From each
 * page it takes the product's name (the first <h1>, else <title>) and its
 * price: an itemprop="price" content="..." attribute, else the text of
 * the first element whose class includes "price".  It appends one row
 * per price to prices.csv:
 *
 *	date,item,price,currency,source
 *
 * (source is the page's file name).
 * The CSV lives in $PRICES_DIR, else the workflow's workspace
 * ($CORRAL_WORKSPACE), else a new directory $TMPDIR/corral-prices-<run>,
 * so a run never writes into the source tree.  The date is today in UTC,
 * or $PRICES_DATE (YYYY-MM-DD).  Scraping the same day again replaces
 * that day's rows.  When the CSV does not exist yet and --history names
 * a file of "item,price,currency" lines, those are recorded first as the
 * previous day's prices, so the first run already has a day to compare.
 *
 * Confidence is the share of pages that yielded a price (times 0.95);
 * the reply proposes summarize with the CSV's path.
 */

#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "corral/agent.h"

#define EXECUTOR_PAGE_MAX	(4 * 1024 * 1024)
#define EXECUTOR_CSV_MAX	(64 * 1024 * 1024)

struct executor_row {
	char	name[128];
	char	price[32];
	char	currency[8];
};

/* Copy the value of attribute attr of the tag [tag, end) into out. */
static int
executor_attr(const char *tag, const char *end, const char *attr, char *out,
    size_t outlen)
{
	const char	*p, *q;
	size_t		 al = strlen(attr), n;
	char		 quote;

	for (p = tag; (p = strstr(p, attr)) != NULL && p < end; p += al) {
		if (p == tag || !isspace((unsigned char)p[-1]) || p[al] != '=')
			continue;
		quote = p[al + 1];
		if (quote != '"' && quote != '\'')
			continue;
		p += al + 2;
		if ((q = memchr(p, quote, (size_t)(end - p))) == NULL)
			return -1;
		n = (size_t)(q - p);
		if (n >= outlen)
			n = outlen - 1;
		memcpy(out, p, n);
		out[n] = '\0';
		return 0;
	}
	return -1;
}

/* Copy an element's text, without tags, entities decoded, trimmed. */
static void
executor_text(const char *p, char *out, size_t outlen)
{
	static const struct {
		const char	*entity;
		const char	*text;
	} ents[] = {
		{ "&amp;", "&" }, { "&euro;", "EUR " }, { "&pound;", "GBP " },
		{ "&nbsp;", " " }, { "&#36;", "$" }
	};
	size_t	n = 0, i, el, tl;
	int	depth = 0, space = 0;

	*out = '\0';
	if ((p = strchr(p, '>')) == NULL)
		return;
	for (p++; *p != '\0' && n + 1 < outlen; p++) {
		if (*p == '<') {
			if (p[1] == '/' && depth == 0)
				break;
			depth += p[1] == '/' ? -1 : 1;
			if ((p = strchr(p, '>')) == NULL)
				break;
			continue;
		}
		if (isspace((unsigned char)*p)) {
			space = n > 0;
			continue;
		}
		if (space && n + 2 < outlen)
			out[n++] = ' ';
		space = 0;
		for (i = 0; i < sizeof ents / sizeof ents[0]; i++) {
			el = strlen(ents[i].entity);
			tl = strlen(ents[i].text);
			if (strncmp(p, ents[i].entity, el) == 0 &&
			    n + tl + 1 < outlen) {
				memcpy(out + n, ents[i].text, tl);
				n += tl;
				p += el - 1;
				break;
			}
		}
		if (i == sizeof ents / sizeof ents[0])
			out[n++] = *p;
	}
	while (n > 0 && out[n - 1] == ' ')
		n--;
	out[n] = '\0';
}

/*
 * Find the first element with a class that names a current price: one
 * containing "price" but neither "was" nor "old" (a struck-out price).
 */
static const char *
executor_price_element(const char *html)
{
	const char	*p, *end;
	char		 cls[256], *tok, *rest;

	for (p = strchr(html, '<'); p != NULL; p = strchr(p + 1, '<')) {
		if ((end = strchr(p, '>')) == NULL)
			return NULL;
		if (executor_attr(p, end, "class", cls, sizeof cls) != 0)
			continue;
		for (rest = cls; (tok = strsep(&rest, " \t")) != NULL; )
			if (strstr(tok, "price") != NULL &&
			    strstr(tok, "was") == NULL &&
			    strstr(tok, "old") == NULL)
				return p;
	}
	return NULL;
}

/*
 * Turn "$1,299.00" into "1299.00"; when cur is still empty, name the
 * currency from its symbol or code.
 */
static int
executor_number(const char *text, char *out, size_t outlen, char *cur,
    size_t curlen)
{
	const char	*p;
	size_t		 n = 0;
	int		 dot = 0;

	if (*cur == '\0') {
		if (strchr(text, '$') != NULL || strstr(text, "USD") != NULL)
			snprintf(cur, curlen, "USD");
		else if (strstr(text, "\xe2\x82\xac") != NULL ||
		    strstr(text, "EUR") != NULL)
			snprintf(cur, curlen, "EUR");
		else if (strstr(text, "\xc2\xa3") != NULL ||
		    strstr(text, "GBP") != NULL)
			snprintf(cur, curlen, "GBP");
	}
	for (p = text; *p != '\0' && !isdigit((unsigned char)*p); p++)
		;
	for (; *p != '\0' && n + 1 < outlen; p++) {
		if (isdigit((unsigned char)*p))
			out[n++] = *p;
		else if (*p == '.' && !dot) {
			dot = 1;
			out[n++] = '.';
		} else if (*p != ',')
			break;
	}
	out[n] = '\0';
	return n > 0 && strtod(out, NULL) > 0 ? 0 : -1;
}

/* Return the start of the tag holding attribute text at p. */
static const char *
executor_tag_start(const char *html, const char *p)
{
	while (p > html && *p != '<')
		p--;
	return p;
}

/*
 * Extract the product and its price from a page.  Returns 0, or -1 with
 * why filled.
 */
static int
executor_extract(const char *html, struct executor_row *row, char *why,
    size_t whylen)
{
	const char	*p, *end;
	char		 text[256];

	memset(row, 0, sizeof *row);
	if ((p = strcasestr(html, "<h1")) != NULL ||
	    (p = strcasestr(html, "<title")) != NULL)
		executor_text(p, row->name, sizeof row->name);
	if (row->name[0] == '\0') {
		snprintf(why, whylen, "no <h1> or <title> names the product");
		return -1;
	}
	if ((p = strstr(html, "itemprop=\"priceCurrency\"")) != NULL) {
		p = executor_tag_start(html, p);
		if ((end = strchr(p, '>')) != NULL)
			(void)executor_attr(p, end, "content", row->currency,
			    sizeof row->currency);
	}
	if ((p = strstr(html, "itemprop=\"price\"")) != NULL) {
		p = executor_tag_start(html, p);
		if ((end = strchr(p, '>')) != NULL && executor_attr(p, end,
		    "content", text, sizeof text) == 0 && executor_number(text,
		    row->price, sizeof row->price, row->currency,
		    sizeof row->currency) == 0)
			return 0;
	}
	if ((p = executor_price_element(html)) == NULL) {
		snprintf(why, whylen, "no price element on the page");
		return -1;
	}
	executor_text(p, text, sizeof text);
	if (executor_number(text, row->price, sizeof row->price,
	    row->currency, sizeof row->currency) != 0) {
		snprintf(why, whylen, "the price element says \"%.60s\"", text);
		return -1;
	}
	return 0;
}

/* Write a CSV field, quoted when it needs it. */
static void
executor_field(FILE *f, const char *s)
{
	if (strpbrk(s, ",\"\n") == NULL) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s != '\0'; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* Write one CSV row. */
static void
executor_write_row(FILE *f, const char *date, const char *name,
    const char *price, const char *cur, const char *source)
{
	fprintf(f, "%s,", date);
	executor_field(f, name);
	fprintf(f, ",%s,%s,", price, cur);
	executor_field(f, source);
	fputc('\n', f);
}

/* Pick (and create) the directory that holds the CSV. */
static int
executor_outdir(struct cagent *ca, char *out, size_t len)
{
	const char	*d, *tmp;
	int		 n;

	if ((d = getenv("PRICES_DIR")) != NULL && *d != '\0')
		n = snprintf(out, len, "%s", d);
	else if ((d = cagent_workspace(ca)) != NULL)
		n = snprintf(out, len, "%s", d);
	else {
		tmp = getenv("TMPDIR");
		n = snprintf(out, len, "%s/corral-prices-%s",
		    tmp != NULL && *tmp != '\0' ? tmp : "/tmp",
		    *cagent_run_id(ca) != '\0' ? cagent_run_id(ca) : "manual");
	}
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (mkdir(out, 0700) == -1 && errno != EEXIST)
		return -1;
	return 0;
}

/* Format today's date (or $PRICES_DATE) and the day before. */
static void
executor_dates(char *today, char *yesterday, size_t len)
{
	const char	*d = getenv("PRICES_DATE");
	struct tm	 tm;
	time_t		 t;

	memset(&tm, 0, sizeof tm);
	if (d != NULL && strptime(d, "%Y-%m-%d", &tm) != NULL)
		t = timegm(&tm);
	else
		t = time(NULL);
	gmtime_r(&t, &tm);
	strftime(today, len, "%Y-%m-%d", &tm);
	t -= 86400;
	gmtime_r(&t, &tm);
	strftime(yesterday, len, "%Y-%m-%d", &tm);
}

/*
 * Copy the CSV (or, when new, the header and the history) into f,
 * leaving out rows dated today.  Returns how many old rows of today were
 * replaced, or -1.
 */
static int
executor_copy_old(FILE *f, const char *csv, const char *history,
    const char *today, const char *yesterday)
{
	char	*text, *line, *next, *copy, *fields[3], *s;
	size_t	 dl = strlen(today);
	int	 replaced = 0, i;

	if ((text = cagent_read_file(csv, EXECUTOR_CSV_MAX, NULL)) != NULL) {
		for (line = text; line != NULL && *line != '\0'; line = next) {
			if ((next = strchr(line, '\n')) != NULL)
				*next++ = '\0';
			if (strncmp(line, today, dl) == 0 && line[dl] == ',') {
				replaced++;
				continue;
			}
			fprintf(f, "%s\n", line);
		}
		free(text);
		return replaced;
	}
	if (errno != ENOENT)
		return -1;
	fprintf(f, "date,item,price,currency,source\n");
	if (history == NULL)
		return 0;
	if ((text = cagent_read_file(history, EXECUTOR_CSV_MAX, NULL)) == NULL)
		return -1;
	for (line = text; line != NULL && *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if (*line == '#' || strncmp(line, "item,", 5) == 0)
			continue;
		copy = line;
		for (i = 0; i < 3 && (s = strsep(&copy, ",")) != NULL; i++)
			fields[i] = s;
		if (i == 3)
			executor_write_row(f, yesterday, fields[0], fields[1],
			    fields[2], "history");
	}
	free(text);
	return 0;
}

/* Scrape the pages of one execute request. */
static json_t *
executor_handle(struct cagent *ca, const struct cagent_msg *m, void *arg)
{
	const char		*history = arg, *item, *path;
	struct executor_row	 row;
	json_t			*r, *items, *v, *rows, *args;
	char			 dir[PATH_MAX - 64], csv[PATH_MAX];
	char			 tmp[PATH_MAX];
	char			 today[16], yesterday[16], why[160], *html;
	FILE			*f;
	size_t			 i, total, ok = 0;
	int			 replaced;
	double			 score;

	items = json_object_get(m->params, "items");
	if ((total = json_array_size(items)) == 0)
		return cagent_reply_error(ca, m, "args.items names no pages");
	if (executor_outdir(ca, dir, sizeof dir) != 0)
		return cagent_reply_error(ca, m, "cannot create %s: %s", dir,
		    strerror(errno));
	snprintf(csv, sizeof csv, "%s/prices.csv", dir);
	snprintf(tmp, sizeof tmp, "%s/.prices.csv.%ld", dir, (long)getpid());
	executor_dates(today, yesterday, sizeof today);
	if ((f = fopen(tmp, "w")) == NULL)
		return cagent_reply_error(ca, m, "cannot write %s: %s", tmp,
		    strerror(errno));
	if ((replaced = executor_copy_old(f, csv, history, today,
	    yesterday)) == -1) {
		fclose(f);
		unlink(tmp);
		return cagent_reply_error(ca, m, "cannot read %s or the "
		    "history: %s", csv, strerror(errno));
	}

	r = cagent_reply(ca, m, NULL, NULL);
	rows = json_array();
	json_array_foreach(items, i, v) {
		item = json_string_value(v) != NULL ? json_string_value(v) : "";
		path = strncmp(item, "file://", 7) == 0 ? item + 7 : item;
		if (strstr(path, "://") != NULL) {
			cagent_add_risk(r, "%s: not fetched (no network)", item);
			continue;
		}
		if ((html = cagent_read_file(path, EXECUTOR_PAGE_MAX,
		    NULL)) == NULL) {
			cagent_add_risk(r, "%s: %s", path, strerror(errno));
			continue;
		}
		if (executor_extract(html, &row, why, sizeof why) != 0) {
			cagent_add_risk(r, "%s: %s", strrchr(path, '/') ?
			    strrchr(path, '/') + 1 : path, why);
			free(html);
			continue;
		}
		free(html);
		executor_write_row(f, today, row.name, row.price, row.currency,
		    strrchr(path, '/') != NULL ? strrchr(path, '/') + 1 : path);
		json_array_append_new(rows, json_pack("{s:s, s:s, s:s}",
		    "item", row.name, "price", row.price, "currency",
		    row.currency));
		ok++;
	}
	if (fclose(f) != 0 || rename(tmp, csv) != 0) {
		unlink(tmp);
		json_decref(rows);
		json_decref(r);
		return cagent_reply_error(ca, m, "cannot write %s: %s", csv,
		    strerror(errno));
	}
	json_object_set_new(r, "role", json_string("tool"));
	cagent_set_text(r, "Appended %zu row%s dated %s to %s (%zu of %zu "
	    "pages had a price%s).", ok, ok == 1 ? "" : "s", today, csv, ok,
	    total, replaced > 0 ? "; replaced an earlier scrape of the day" :
	    "");
	cagent_set_data(r, json_pack("{s:b, s:I, s:I, s:s, s:s, s:o}", "ok",
	    ok > 0, "rows_appended", (json_int_t)ok, "rows_replaced",
	    (json_int_t)replaced, "csv_path", csv, "date", today, "rows",
	    rows));
	json_object_set_new(json_object_get(r, "content"), "type",
	    json_string("tool_result"));
	cagent_add_artifact(r, "dataset", "prices_csv", csv, NULL);
	score = round(95.0 * (double)ok / (double)total) / 100;
	snprintf(why, sizeof why, "a price was found on %zu of %zu pages", ok,
	    total);
	cagent_set_confidence(r, score, why);
	args = json_pack("{s:s, s:s}", "csv", csv, "date", today);
	if ((v = json_object_get(m->params, "goal")) != NULL)
		json_object_set(args, "goal", v);
	cagent_add_action(r, "summarize", "Produce the daily change summary",
	    args);
	return r;
}

/* Parse the options and serve execute requests. */
int
main(int argc, char **argv)
{
	struct cagent	*ca;
	const char	*history = NULL;
	int		 rc;

	if (argc == 3 && strcmp(argv[1], "--history") == 0)
		history = argv[2];
	else if (argc != 1) {
		fprintf(stderr, "usage: executor [--history FILE]\n");
		return 2;
	}
	if ((ca = cagent_open("Executor")) == NULL)
		return 1;
	rc = cagent_run(ca, executor_handle, (void *)history);
	cagent_close(ca);
	return rc == 0 ? 0 : 1;
}
