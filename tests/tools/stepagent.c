/*
 * stepagent: a scripted agent for the steps-* regress scripts, of any
 * protocol: it answers the Nth request it reads with the Nth line of its
 * script, as it is, so the script says exactly what the agent writes (an
 * ADR-007 output envelope, a multiagent-1.0 reply, garbage).
 *
 *   --script FILE   the lines to answer with; after the last, the last
 *                   again.  In a line, @ID@ is replaced by the request's
 *                   trace.id (when it has one), @ITER@ by its iteration
 *                   (context.iteration, or corral.step.iteration).  A
 *                   line "hang" answers nothing; "exit N" exits N
 *   --record FILE   append "recv LINE" for every request read, "notice
 *                   LINE" for what is no request (notices, control)
 *
 * A request is any line but JSON-RPC frames and envelopes whose corral
 * member has a kind (notices, cancels).  Lines are at most 1 MiB.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tool.h"

#define LINE_MAX_BYTES	(1024 * 1024 + 2)

static char	**script;
static size_t	  nscript;

/* Read the script into memory, a line an element. */
static void
load_script(const char *path)
{
	FILE	*f;
	char	*line = NULL;
	size_t	 cap = 0;
	ssize_t	 n;

	if ((f = fopen(path, "r")) == NULL) {
		perror(path);
		exit(2);
	}
	while ((n = getline(&line, &cap, f)) != -1) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		script = realloc(script, (nscript + 1) * sizeof *script);
		script[nscript++] = strdup(line);
	}
	free(line);
	fclose(f);
}

/* Append a line to the record file, if any. */
static void
record(const char *path, const char *what, const char *line)
{
	FILE	*f;

	if (path == NULL || (f = fopen(path, "a")) == NULL)
		return;
	fprintf(f, "%s %s\n", what, line);
	fclose(f);
}

/* Write s with @ID@ and @ITER@ replaced. */
static void
answer(const char *s, const char *id, long iter)
{
	char		*out = malloc(strlen(s) * 2 + 256), *o = out;
	char		 num[32];

	snprintf(num, sizeof num, "%ld", iter);
	while (*s != '\0') {
		if (strncmp(s, "@ID@", 4) == 0) {
			o += sprintf(o, "%s", id);
			s += 4;
		} else if (strncmp(s, "@ITER@", 6) == 0) {
			o += sprintf(o, "%s", num);
			s += 6;
		} else
			*o++ = *s++;
	}
	*o++ = '\n';
	tool_write_all(1, out, (size_t)(o - out));
	free(out);
}

int
main(int argc, char **argv)
{
	const char	*rec = NULL, *id;
	char		*line = malloc(LINE_MAX_BYTES);
	json_t		*j, *c, *it;
	size_t		 n = 0, len;
	long		 iter;
	int		 i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--script") == 0 && i + 1 < argc)
			load_script(argv[++i]);
		else if (strcmp(argv[i], "--record") == 0 && i + 1 < argc)
			rec = argv[++i];
	}
	if (nscript == 0) {
		fprintf(stderr, "stepagent: --script FILE is required\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	while (fgets(line, LINE_MAX_BYTES, stdin) != NULL) {
		len = strlen(line);
		while (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		j = json_loads(line, 0, NULL);
		c = json_object_get(j, "corral");
		if (j == NULL || json_object_get(j, "jsonrpc") != NULL ||
		    json_object_get(c, "kind") != NULL) {
			record(rec, "notice", line);
			json_decref(j);
			continue;
		}
		record(rec, "recv", line);
		id = json_string_value(json_object_get(json_object_get(j,
		    "trace"), "id"));
		it = json_object_get(json_object_get(j, "context"), "iteration");
		if (it == NULL)
			it = json_object_get(json_object_get(c, "step"),
			    "iteration");
		iter = (long)json_integer_value(it);
		line[0] = '\0';
		strncat(line, script[n < nscript ? n : nscript - 1],
		    LINE_MAX_BYTES - 1);
		n++;
		if (strcmp(line, "hang") == 0) {
			json_decref(j);
			continue;
		}
		if (strncmp(line, "exit ", 5) == 0)
			exit(atoi(line + 5));
		answer(line, id != NULL ? id : "", iter);
		json_decref(j);
	}
	return 0;
}
