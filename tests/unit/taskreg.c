/*
 * Unit tests of the task registry's record of a job's ended requests
 * (src/taskreg-jobs.c): what a listing returns for the records at the
 * ring's edges (the oldest kept, the one just forgotten), for results of
 * 1,024 and 1,025 bytes, and for every kept record while records of very
 * different lengths (ids, titles, results, errors, sessions) go round the
 * ring more than once.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <malloc.h>
#include <sys/resource.h>

#include "corral.h"
#include "taskreg-int.h"

/* What request i of a test ends with. */
struct spec {
	size_t		 textlen;	/* content.text's characters */
	size_t		 pad;		/* a member after it, its characters */
	int		 failed;	/* an error instead of a reply */
	int		 session;
};

static struct jscan	*ujs;

/* A loop for ev_now, an empty ring. */
static int
setup(void **state)
{
	(void)state;
	if (ev_default_loop(EVFLAG_AUTO) == NULL)
		return -1;
	ujs = jscan_create(16);
	taskreg_jobs_init();
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	taskreg_jobs_init();
	jscan_free(ujs);
	return 0;
}

/* A name of i's own, len bytes long (at most 63). */
static void
name(char *buf, const char *what, size_t i, size_t len)
{
	int	n = snprintf(buf, 64, "%s-%zu-", what, i);

	while ((size_t)n < len && n < 63)
		buf[n++] = 'a' + (char)(i % 26);
	buf[n] = '\0';
}

/* End request i as s says: a reply whose content is a text, or an error. */
static void
end(size_t i, const struct spec *s)
{
	struct msg	 m;
	struct job	 j;
	struct agent	 a;
	struct engine_end e;
	struct env	 env;
	char		 aid[64], *line;
	size_t		 len, k;
	int		 c;

	memset(&m, 0, sizeof m);
	memset(&j, 0, sizeof j);
	memset(&a, 0, sizeof a);
	memset(&e, 0, sizeof e);
	memset(&env, 0, sizeof env);
	name(m.id, "r", i, i % 64);
	name(j.id, "job", i, (i * 7) % 64);
	name(aid, "agent", i, (i * 3) % 40);
	name(m.title, "t", i, (i * 5) % 64);
	a.id = aid;
	m.kind = MSG_INPUT;
	m.intent = INTENT_EXECUTE;
	m.attempts = (unsigned int)(i % 5);
	m.job = &j;
	j.session = s->session ? (char *)"sess-1" : NULL;
	e.agent = &a;
	if (s->failed) {
		e.code = "timeout";
		e.category = "TIMEOUT";
		e.why = "no answer";
		taskreg_request_ended(&m, &e);
		return;
	}
	line = malloc(64 + s->textlen + s->pad);
	len = (size_t)sprintf(line, "{\"content\":{\"type\":\"text\",\"text\":\"");
	for (k = 0; k < s->textlen; k++)
		line[len++] = 'a' + (char)(i % 26);
	len += (size_t)sprintf(line + len, "\"%s", s->pad ? ",\"pad\":\"" : "");
	for (k = 0; k < s->pad; k++)
		line[len++] = '.';
	len += (size_t)sprintf(line + len, "%s}}", s->pad ? "\"" : "");
	assert_int_equal(jscan_run(ujs, line, len), 0);
	assert_true((c = JSCAN_GET(ujs, line, 0, "content")) > 0);
	env.content = c;
	env.tokens_in = (double)i;
	e.replied = 1;
	e.line = line;
	e.len = len;
	e.js = ujs;
	e.env = &env;
	taskreg_request_ended(&m, &e);
	free(line);
}

/* The content's length in bytes, and its text's as a JSON string. */
#define CONTENT_LEN(s)	(25 + (s)->textlen + ((s)->pad ? 9 + (s)->pad : 0))
#define VALUE_LEN(s)	((s)->textlen + 2)

/* Check the listing of task t against request i's spec. */
static void
check(json_t *t, size_t i, const struct spec *s)
{
	json_t	*c = json_object_get(json_object_get(t, "meta"), "corral");
	json_t	*r = json_object_get(c, "result");
	char	 buf[64];
	size_t	 k;

	name(buf, "r", i, i % 64);
	assert_string_equal(json_string_value(json_object_get(t, "id")), buf);
	name(buf, "agent", i, (i * 3) % 40);
	assert_string_equal(json_string_value(json_object_get(t, "assignee")),
	    buf);
	name(buf, "t", i, (i * 5) % 64);
	assert_string_equal(json_string_value(json_object_get(t, "title")),
	    buf);
	name(buf, "job", i, (i * 7) % 64);
	assert_string_equal(json_string_value(json_object_get(c, "job")), buf);
	assert_int_equal(json_integer_value(json_object_get(c, "attempts")),
	    i % 5);
	if (s->session)
		assert_string_equal(json_string_value(json_object_get(c,
		    "session")), "sess-1");
	else
		assert_null(json_object_get(c, "session"));
	if (s->failed) {
		assert_string_equal(json_string_value(json_object_get(t,
		    "status")), "failed");
		assert_null(r);
		assert_string_equal(json_string_value(json_object_get(
		    json_object_get(c, "error"), "code")), "timeout");
		return;
	}
	assert_string_equal(json_string_value(json_object_get(t, "status")),
	    "completed");
	assert_null(json_object_get(c, "error"));
	assert_true(json_real_value(json_object_get(c, "tokens")) == (double)i);
	if (CONTENT_LEN(s) > TASKREG_TEXT && VALUE_LEN(s) > TASKREG_TEXT) {
		assert_true(json_is_true(json_object_get(r, "truncated")));
		assert_int_equal(json_integer_value(json_object_get(r,
		    "bytes")), VALUE_LEN(s));
		return;
	}
	assert_true(json_is_string(r));
	assert_int_equal(json_string_length(r), s->textlen);
	for (k = 0; k < s->textlen; k++)
		assert_int_equal(json_string_value(r)[k], 'a' + (char)(i % 26));
}

/* The listing holds requests first..n-1, each as its spec says. */
static void
check_list(size_t first, size_t n, const struct spec *specs)
{
	json_t	*list = json_array();
	size_t	 i;

	taskreg_jobs_collect(list);
	assert_int_equal(json_array_size(list), n - first);
	for (i = first; i < n; i++)
		check(json_array_get(list, i - first), i, &specs[i]);
	json_decref(list);
}

/*
 * One ring and one more: the first is forgotten, the second is the
 * oldest listed; contents of exactly 1,024 bytes (kept whole) and 1,025
 * (its value looked for), values of exactly 1,024 and 1,025 bytes.
 */
static void
test_edges(void **state)
{
	struct spec	*specs = calloc(TASKREG_ENDED + 1, sizeof *specs);
	size_t		 i, n = TASKREG_ENDED + 1;

	(void)state;
	for (i = 0; i < n; i++)
		specs[i].textlen = i % 300;
	specs[1].textlen = TASKREG_TEXT - 25;		/* content 1,024 */
	specs[2].textlen = TASKREG_TEXT - 24;		/* content 1,025 */
	specs[3].textlen = TASKREG_TEXT - 2;		/* value 1,024 */
	specs[4].textlen = TASKREG_TEXT - 1;		/* value 1,025 */
	specs[5].textlen = 10;				/* a value of 12 in */
	specs[5].pad = TASKREG_TEXT;			/* a long content */
	specs[6].failed = 1;
	specs[7].session = 1;
	specs[n - 1].textlen = TASKREG_TEXT - 25;
	for (i = 0; i < 5; i++)
		assert_int_equal(CONTENT_LEN(&specs[1 + i]) > TASKREG_TEXT,
		    i > 0);
	assert_int_equal(VALUE_LEN(&specs[3]), TASKREG_TEXT);
	assert_int_equal(VALUE_LEN(&specs[4]), TASKREG_TEXT + 1);
	for (i = 0; i < n; i++) {
		end(i, &specs[i]);
		if (i == 9)
			check_list(0, 10, specs);
	}
	check_list(1, n, specs);
	free(specs);
}

/*
 * Many rings of records of every length: short ones, then long ones (the
 * arena grows while it holds a ring), then any, errors and sessions among
 * them; every kept record reads back as it was written.
 */
static void
test_lengths(void **state)
{
	size_t		 phase[] = { TASKREG_ENDED + 100, 2 * TASKREG_ENDED,
			    TASKREG_ENDED + 333, 3 * TASKREG_ENDED };
	size_t		 total = 0, i, p, n = 0;
	struct spec	*specs;
	uint32_t	 x = 12345;

	(void)state;
	for (p = 0; p < sizeof phase / sizeof phase[0]; p++)
		total += phase[p];
	specs = calloc(total, sizeof *specs);
	for (p = 0; p < sizeof phase / sizeof phase[0]; p++) {
		for (i = 0; i < phase[p]; i++, n++) {
			x = x * 1103515245 + 12345;
			switch (p) {
			case 0:
				specs[n].textlen = (x >> 8) % 50;
				break;
			case 1:
				specs[n].textlen = 900 + (x >> 8) % 200;
				break;
			case 3:
				specs[n].textlen = (x >> 8) % 16;
				break;
			default:
				specs[n].textlen = (x >> 8) % 1100;
				break;
			}
			specs[n].failed = (x >> 20) % 7 == 0;
			specs[n].session = (x >> 24) % 5 == 0;
			end(n, &specs[n]);
		}
		check_list(n - TASKREG_ENDED, n, specs);
	}
	free(specs);
}

/*
 * A ring of short records, then records a little longer each time: the
 * arena grows, some of the time while the newest have wrapped around its
 * end and come up to the oldest.
 */
static void
test_growing(void **state)
{
	size_t		 total = 7 * TASKREG_ENDED, i;
	struct spec	*specs = calloc(total, sizeof *specs);
	uint32_t	 x = 777;

	(void)state;
	for (i = 0; i < total; i++) {
		x = x * 1103515245 + 12345;
		specs[i].textlen = (i < TASKREG_ENDED ? 0 : (i - TASKREG_ENDED) /
		    24) + (x >> 8) % 32;
		specs[i].failed = (x >> 20) % 11 == 0;
		specs[i].session = (x >> 24) % 13 == 0;
		end(i, &specs[i]);
	}
	check_list(total - TASKREG_ENDED, total, specs);
	free(specs);
}

/* Minor page faults of this process so far. */
static long
minflt(void)
{
	struct rusage	ru;

	assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
	return ru.ru_minflt;
}

/*
 * The request that grows the ring from 2,048 slots to 4,096 touches no
 * more of its memory than its own slot: setting up the new slots all at
 * once faulted in 700 KB and stalled the loop 5 ms on a slow machine.
 * Under the sanitizers realloc copies the ring, which faults it in
 * anyway, so this runs in the normal build.
 */
static void
test_grow_touches_one_slot(void **state)
{
	struct spec	 s = { .textlen = 10 };
	size_t		 i;
	long		 before, faults;

	(void)state;
#ifdef CORRAL_SANITIZE
	print_message("SKIPPED under the sanitizers: their realloc copies "
	    "the ring, faulting it in whatever the registry does\n");
	skip();
#endif
	/* Big blocks mapped afresh, so growing them moves no page. */
	assert_int_equal(mallopt(M_MMAP_THRESHOLD, 128 * 1024), 1);
	for (i = 0; i < TASKREG_ENDED / 2; i++)
		end(i, &s);
	before = minflt();
	end(i, &s);
	faults = minflt() - before;
	print_message("faults growing the ring to %d slots: %ld\n",
	    TASKREG_ENDED, faults);
	assert_in_range(faults, 0, 32);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_grow_touches_one_slot, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_edges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lengths, setup, teardown),
		cmocka_unit_test_setup_teardown(test_growing, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
