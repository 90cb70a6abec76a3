/*
 * Unit tests of the request counters in src/metrics.c: each outcome
 * ("replied", "error", "expired") is counted under its own name in
 * corral_requests_total, and a failure's code in corral_errors_total,
 * what `corral metrics` and the control socket's metrics show.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "corral.h"

/* The value of metric name's sample whose label key is value, or -1. */
static double
sample(json_t *all, const char *name, const char *key, const char *value)
{
	json_t	*m, *s, *v;
	size_t	 i, k;

	json_array_foreach(json_object_get(all, "metrics"), i, m) {
		if (strcmp(json_string_value(json_object_get(m, "name")),
		    name) != 0)
			continue;
		json_array_foreach(json_object_get(m, "samples"), k, s) {
			v = json_object_get(json_object_get(s, "labels"), key);
			if (v != NULL && strcmp(json_string_value(v), value) == 0)
				return json_number_value(json_object_get(s,
				    "value"));
		}
	}
	return -1;
}

/* Replies, errors and expiries are told apart, codes counted. */
static void
test_outcomes(void **state)
{
	struct msg	 m;
	json_t		*all;
	int		 i;

	(void)state;
	ev_default_loop(0);
	metrics_init();
	memset(&m, 0, sizeof m);
	m.accepted = ev_now(LOOP);
	for (i = 0; i < 3; i++)
		metrics_outcome(&m, "replied", NULL);
	metrics_outcome(&m, "error", "agent_crashed");
	metrics_outcome(&m, "error", "no_route");
	metrics_outcome(&m, "error", "no_route");
	metrics_outcome(&m, "expired", "timeout");
	/* A reply given a code (a workflow's own answer) is still a reply. */
	metrics_outcome(&m, "replied", "done");
	all = metrics_json();
	assert_true(sample(all, "corral_requests_total", "outcome",
	    "replied") == 4);
	assert_true(sample(all, "corral_requests_total", "outcome",
	    "error") == 3);
	assert_true(sample(all, "corral_requests_total", "outcome",
	    "expired") == 1);
	assert_true(sample(all, "corral_errors_total", "code",
	    "agent_crashed") == 1);
	assert_true(sample(all, "corral_errors_total", "code",
	    "no_route") == 2);
	assert_true(sample(all, "corral_errors_total", "code",
	    "timeout") == 1);
	assert_true(sample(all, "corral_errors_total", "code", "done") == -1);
	json_decref(all);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_outcomes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
