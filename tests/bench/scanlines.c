/*
 * Scan each line of a file once with the scanner (jscan_run_path) on one
 * path, for callgrind: tests/bench/scan.sh counts the instructions of
 * jscan_run_path per line.  Prints how many lines it read and how many
 * the scanner refused (a captured bench line is never refused).  With
 * "memo", every line is scanned with one memo (jscan_run_memo_path), as
 * corral scans a stream's: the file holds each stream's lines together.
 *
 *	scanlines FILE PATH [REPEATS [memo]]	PATH: 0 portable, 1 SSE2, 2 AVX2
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

/* Read every line of f into *linesp and *lensp; return their number. */
static size_t
scanlines_read(FILE *f, char ***linesp, size_t **lensp)
{
	char	**lines = NULL, *line = NULL;
	size_t	 *lens = NULL, n = 0, cap = 0, lcap = 0;
	ssize_t	  len;

	while ((len = getline(&line, &lcap, f)) > 0) {
		if (line[len - 1] == '\n')
			len--;
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			lines = xreallocarray(lines, cap, sizeof *lines);
			lens = xreallocarray(lens, cap, sizeof *lens);
		}
		/* Each line in a buffer of its own size, as corral hands it over. */
		lines[n] = xmalloc(len ? (size_t)len : 1);
		memcpy(lines[n], line, (size_t)len);
		lens[n++] = (size_t)len;
	}
	free(line);
	*linesp = lines;
	*lensp = lens;
	return n;
}

int
main(int argc, char **argv)
{
	struct jscan	*js;
#ifndef SCANLINES_NO_MEMO
	struct jscan_memo *memo = NULL;
#endif
	enum jscan_path	 path;
	FILE		*f;
	char		**lines;
	size_t		*lens, n, i;
	long		 reps, r, refused = 0;

	if (argc < 3 || (f = fopen(argv[1], "r")) == NULL) {
		fprintf(stderr, "usage: scanlines FILE PATH [REPEATS]\n");
		return 2;
	}
	path = (enum jscan_path)atoi(argv[2]);
	reps = argc > 3 ? atol(argv[3]) : 1;
#ifndef SCANLINES_NO_MEMO
	if (argc > 4 && strcmp(argv[4], "memo") == 0)
		memo = jscan_memo_create();
#else
	if (argc > 4 && strcmp(argv[4], "memo") == 0) {
		printf("path %s: this scanner keeps no memo\n",
		    jscan_path_name(path));
		return 0;
	}
#endif
	if (!jscan_path_has(path)) {
		printf("path %s: this machine has none\n", jscan_path_name(path));
		return 0;
	}
	n = scanlines_read(f, &lines, &lens);
	fclose(f);
	/* The pool's depth: what corral records of an envelope. */
	js = jscan_create(4);
	for (r = 0; r < reps; r++)
		for (i = 0; i < n; i++) {
#ifndef SCANLINES_NO_MEMO
			if (memo != NULL) {
				refused += jscan_run_memo_path(js, lines[i],
				    lens[i], memo, path) != 0;
				continue;
			}
#endif
			refused += jscan_run_path(js, lines[i], lens[i],
			    path) != 0;
		}
	printf("path %s: %zu lines, %ld refused\n", jscan_path_name(path), n,
	    refused);
	return refused != 0;
}
