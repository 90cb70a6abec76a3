/*
 * Fuzz corral replay's reading of an audit log: whatever a recording
 * holds (lines that are not JSON, members of the wrong type, ids that
 * repeat, parents that loop back, a torn last line, a format refused,
 * own requests, handoffs, escalations and answers that name nothing),
 * the reader and the bookkeeping never crash, what a stand-in would read
 * of it (an agent's work, a person's answers) is well formed, and a run
 * compared with itself has no difference.
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
	json_t			*j, *w, *st, *v, *x;
	const char		*k, *p, *e;
	size_t			 i;
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
		(void)replay_ended(&a, p);
		/* Every step of an agent's work says what it is. */
		w = json_object_get(json_object_get(a.reqs, k), "work");
		json_object_foreach(w, e, x)
			json_array_foreach(replay_steps(&a, p, e), i, st)
				if (!json_is_string(json_object_get(st, "do")))
					abort();
	}
	for (i = 0; i < replay_count(&a); i++)
		if (replay_path_at(&a, i) == NULL)
			abort();
	json_array_foreach(a.asked, i, v)
		(void)replay_escalation(&a, json_string_value(json_object_get(v,
		    "key")));
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
