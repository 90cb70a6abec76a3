/*
 * treeq: pick values out of NDJSON (an audit log, corral's output) for the
 * regress scripts, so that they need no jq.
 *
 *   treeq [-c] [-w PATH=VALUE]... [-p PATH]... FILE
 *
 * Reads FILE ("-": stdin) one JSON object per line; a line that is not
 * JSON is skipped.  A line is selected when every -w condition holds: the
 * value at PATH is the string VALUE, or a number, true, false or null
 * whose JSON text is VALUE.  -w PATH (without =) only asks that PATH
 * exists.  For each selected line, the values at the -p paths are printed
 * on one line, separated by tabs: strings raw, anything else as compact
 * JSON, a missing value as "-".  -c prints only the number of selected
 * lines.  A PATH is dot-separated keys, with numbers as array indexes:
 * env.corral.child, env.trace.parents.0.
 *
 * Exit status: 0 when some line was selected, 1 when none, 2 on misuse.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#define MAXARG	32

static json_t *
get(json_t *j, const char *path)
{
	char	*p, *s, *tok, *end;
	long	 idx;

	if ((p = strdup(path)) == NULL)
		exit(2);
	for (tok = strtok_r(p, ".", &s); tok != NULL && j != NULL;
	    tok = strtok_r(NULL, ".", &s)) {
		if (json_is_array(j)) {
			idx = strtol(tok, &end, 10);
			j = (*end == '\0' && idx >= 0) ? json_array_get(j,
			    (size_t)idx) : NULL;
		} else
			j = json_object_get(j, tok);
	}
	free(p);
	return j;
}

static char *
text(json_t *v)
{
	if (json_is_string(v))
		return strdup(json_string_value(v));
	return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

int
main(int argc, char **argv)
{
	const char	*where[MAXARG], *print[MAXARG], *path = NULL;
	size_t		 nw = 0, np = 0, i, count = 0, cap = 0;
	int		 c, only_count = 0, ok;
	char		*line = NULL, *t, *eq, key[512];
	ssize_t		 n;
	FILE		*f;
	json_t		*j, *v;

	while ((c = getopt(argc, argv, "cw:p:")) != -1) {
		switch (c) {
		case 'c':
			only_count = 1;
			break;
		case 'w':
			if (nw == MAXARG)
				return 2;
			where[nw++] = optarg;
			break;
		case 'p':
			if (np == MAXARG)
				return 2;
			print[np++] = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (optind + 1 != argc)
		goto usage;
	path = argv[optind];
	f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	if (f == NULL) {
		perror(path);
		return 2;
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		if ((j = json_loadb(line, (size_t)n, 0, NULL)) == NULL)
			continue;
		ok = 1;
		for (i = 0; i < nw && ok; i++) {
			eq = strchr(where[i], '=');
			if (eq == NULL) {
				ok = get(j, where[i]) != NULL;
				continue;
			}
			snprintf(key, sizeof key, "%.*s", (int)(eq - where[i]),
			    where[i]);
			if ((v = get(j, key)) == NULL) {
				ok = 0;
				continue;
			}
			t = text(v);
			ok = t != NULL && strcmp(t, eq + 1) == 0;
			free(t);
		}
		if (ok) {
			count++;
			for (i = 0; i < np && !only_count; i++) {
				v = get(j, print[i]);
				t = v != NULL ? text(v) : NULL;
				printf("%s%s", i > 0 ? "\t" : "",
				    t != NULL ? t : "-");
				free(t);
			}
			if (np > 0 && !only_count)
				putchar('\n');
		}
		json_decref(j);
	}
	free(line);
	if (only_count)
		printf("%zu\n", count);
	return count > 0 ? 0 : 1;
usage:
	fprintf(stderr, "usage: treeq [-c] [-w PATH=VALUE]... [-p PATH]... "
	    "FILE\n");
	return 2;
}
