/*
 * Fuzz corral replay's reading of an audit log: whatever a recording
 * holds (lines that are not JSON, members of the wrong type, ids that
 * repeat, parents that loop back, a torn last line, a format refused),
 * the reader and the bookkeeping never crash, and a run compared with
 * itself has no difference.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char	 path[] = "fuzz-replay.ndjson";	/* in cwd */
	static FILE		*devnull;
	struct auditlog_reader	 r;
	struct replay_run	 a, b;
	json_t			*j;
	const char		*k, *p;
	json_t			*v;
	FILE			*f;

	if (devnull == NULL && (devnull = fopen("/dev/null", "w")) == NULL)
		abort();
	if ((f = fopen(path, "w")) == NULL)
		abort();
	if (size > 0 && fwrite(data, 1, size, f) != size)
		abort();
	fclose(f);
	if (auditlog_read_open(&r, path) != 0)
		abort();
	replay_run_init(&a);
	replay_run_init(&b);
	while (auditlog_read_next(&r, &j) == 1) {
		replay_feed(&a, j);
		replay_feed(&b, j);
		json_decref(j);
	}
	auditlog_read_report(&r, devnull);
	auditlog_read_close(&r);
	json_object_foreach(a.reqs, k, v) {
		if ((p = replay_path_of(&a, k)) == NULL)
			abort();
		(void)replay_answer(&a, p, "x");
	}
	/* The same lines read twice are the same run. */
	if (replay_diff(&a, &b, devnull) != 0)
		abort();
	replay_missing(&b, "p", "e");
	if (replay_diff(&a, &b, devnull) != 1)
		abort();
	replay_run_free(&a);
	replay_run_free(&b);
	return 0;
}
