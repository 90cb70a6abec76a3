/*
 * Unit tests of the agent lifecycle table (src/lifecycle.c).
 *
 * lifecycle_next() is the whole state machine: supervision decisions
 * (route work, restart, give up) follow from the state it returns.  The
 * rules are held to docs/lifecycle.md's table, cell by cell (the state
 * each leads to and whether an action follows), and the tests state the
 * transitions that matter most once more.
 */

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "corral.h"

/* The "working" argument: not handshaken yet, idle, or with work. */
#define NOT_READY	(-1)
#define IDLE		0
#define WORKING		1

/* The states in which the agent has a process and is not stopping it. */
static int
is_alive_state(enum agent_state s)
{
	return s == AS_INITIALIZING || s == AS_READY || s == AS_BUSY ||
	    s == AS_UNAVAILABLE || s == AS_SUSPENDED;
}

/* The states by the names docs/lifecycle.md's columns give them. */
static const char *const doc_states[AS_COUNT] = {
	[AS_INITIALIZING] = "INITIALIZING", [AS_READY] = "READY",
	[AS_BUSY] = "BUSY", [AS_UNAVAILABLE] = "UNAVAILABLE",
	[AS_SUSPENDED] = "SUSPENDED", [AS_STOPPING] = "STOPPING",
	[AS_STOPPED] = "STOPPED", [AS_FAILED] = "FAILED",
	[AS_TERMINATING] = "TERMINATING", [AS_KILLING] = "KILLING",
	[AS_BACKOFF] = "BACKOFF",
};

/* The state a column names, or -1. */
static int
doc_state(const char *name)
{
	int	s;

	for (s = 0; s < AS_COUNT; s++)
		if (strcmp(doc_states[s], name) == 0)
			return s;
	return -1;
}

/* Split a table row "| a | b |" into its trimmed cells; returns how many. */
static size_t
doc_cells(char *line, char **cell, size_t max)
{
	char	*p, *e, *t;
	size_t	 n = 0;

	if (*line != '|')
		return 0;
	for (p = line + 1; (e = strchr(p, '|')) != NULL && n < max; p = e + 1) {
		*e = '\0';
		while (*p == ' ')
			p++;
		for (t = e; t > p && t[-1] == ' '; t--)
			t[-1] = '\0';
		cell[n++] = p;
	}
	return n;
}

/*
 * Check one cell of the documented table against the rule for (s, ev):
 * "·" for no rule, "· [action]" for a rule that keeps the state, "**W**"
 * for the working state, else the state's name; "[...]" iff an action
 * follows.  Returns 0, or 1 after saying what differs.
 */
static int
doc_check_cell(const char *cell, enum agent_state s, enum agent_event ev)
{
	char		 to[64];
	const char	*br = strstr(cell, " [");
	size_t		 n = br != NULL ? (size_t)(br - cell) : strlen(cell);
	int		 rule, want, act, doc;

	if (n >= sizeof to)
		n = sizeof to - 1;
	memcpy(to, cell, n);
	to[n] = '\0';
	rule = lifecycle_rule(s, ev, &want, &act);
	if (strcmp(to, "·") == 0)
		doc = rule && want == -1 ? -1 : -3;
	else if (strcmp(to, "**W**") == 0)
		doc = -2;
	else if ((doc = doc_state(to)) == -1) {
		print_message("docs/lifecycle.md: %s/%s: no such state: %s\n",
		    doc_states[s], lifecycle_event_name(ev), to);
		return 1;
	}
	if (!rule) {
		if (doc == -3 && br == NULL)
			return 0;
		print_message("docs/lifecycle.md: %s/%s says \"%s\", but there "
		    "is no rule\n", doc_states[s], lifecycle_event_name(ev),
		    cell);
		return 1;
	}
	if (doc != want || (br != NULL) != act) {
		print_message("docs/lifecycle.md: %s/%s says \"%s\", but the "
		    "rule leads to %s%s\n", doc_states[s],
		    lifecycle_event_name(ev), cell, want == -1 ? "no change" :
		    want == -2 ? "W" : doc_states[want], act ?
		    ", with an action" : ", with no action");
		return 1;
	}
	return 0;
}

/* Open docs/lifecycle.md, or skip the test when run outside ctest. */
static FILE *
doc_open(void)
{
	const char	*data = getenv("CORRAL_TEST_DATA");
	char		 path[1024];
	FILE		*f;

	if (data == NULL)
		skip();
	snprintf(path, sizeof path, "%s/../docs/lifecycle.md", data);
	if ((f = fopen(path, "r")) == NULL)
		fail_msg("%s: %s", path, strerror(errno));
	return f;
}

/*
 * docs/lifecycle.md's table ("The table") is the rule table of
 * src/lifecycle.c: a row for every event, a column for every state, and
 * every cell the rule's state and whether an action follows.
 */
static void
test_doc_table(void **state)
{
	FILE		*f = doc_open();
	char		 line[4096], prev[4096], *cell[AS_COUNT + 2];
	int		 col[AS_COUNT + 1], seen[AE_COUNT], s, ev, bad = 0;
	size_t		 n, ncols = 0, i, rows = 0;
	int		 in_table = 0;

	memset(seen, 0, sizeof seen);
	while (fgets(line, sizeof line, f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (strcmp(line, "## The table") == 0) {
			in_table = 1;
			continue;
		}
		if (!in_table || strncmp(line, "| ", 2) != 0) {
			if (in_table && ncols > 0 && line[0] != '|')
				break;	/* the end of the table */
			continue;
		}
		n = doc_cells(line, cell, sizeof cell / sizeof cell[0]);
		if (ncols == 0) {
			/* The header: "event", then the states. */
			assert_string_equal(cell[0], "event");
			for (i = 1; i < n; i++) {
				if ((col[i] = doc_state(cell[i])) == -1)
					fail_msg("a column of no state: %s",
					    cell[i]);
			}
			ncols = n;
			assert_int_equal(ncols, AS_COUNT + 1);
			continue;
		}
		assert_int_equal(n, ncols);
		for (ev = 0; ev < AE_COUNT; ev++)
			if (strcmp(cell[0], lifecycle_event_name(ev)) == 0)
				break;
		if (ev == AE_COUNT)
			fail_msg("a row of no event: %s", cell[0]);
		if (seen[ev]++)
			fail_msg("two rows for the event %s", cell[0]);
		rows++;
		prev[0] = '\0';
		for (i = 1; i < n; i++) {
			if (strcmp(cell[i], "←") == 0)
				cell[i] = prev;
			else
				strlcpy(prev, cell[i], sizeof prev);
			bad += doc_check_cell(cell[i], (enum agent_state)col[i],
			    (enum agent_event)ev);
		}
	}
	fclose(f);
	for (ev = 0; ev < AE_COUNT; ev++)
		if (!seen[ev]) {
			print_message("docs/lifecycle.md: no row for the event "
			    "%s\n", lifecycle_event_name(ev));
			bad++;
		}
	for (s = 0; s < AS_COUNT; s++) {
		for (i = 1; i < ncols && col[i] != s; i++)
			;
		if (i == ncols) {
			print_message("docs/lifecycle.md: no column for the "
			    "state %s\n", doc_states[s]);
			bad++;
		}
	}
	assert_int_equal(rows, AE_COUNT);
	assert_int_equal(bad, 0);
}

/* A handshake makes a new agent READY (or BUSY when work already waits). */
static void
test_handshake_makes_ready(void **state)
{
	assert_int_equal(lifecycle_next(AS_INITIALIZING, AE_HANDSHAKE, IDLE),
	    AS_READY);
	assert_int_equal(lifecycle_next(AS_INITIALIZING, AE_HANDSHAKE,
	    WORKING), AS_BUSY);
	/* Without the handshake having been recorded, nothing changes. */
	assert_int_equal(lifecycle_next(AS_INITIALIZING, AE_HANDSHAKE,
	    NOT_READY), AS_INITIALIZING);
}

/* Work makes a READY agent BUSY; the last answer makes it READY again. */
static void
test_work_and_idle(void **state)
{
	assert_int_equal(lifecycle_next(AS_READY, AE_WORK, WORKING), AS_BUSY);
	assert_int_equal(lifecycle_next(AS_BUSY, AE_IDLE, IDLE), AS_READY);
	/* Not before the handshake, and not twice. */
	assert_int_equal(lifecycle_next(AS_INITIALIZING, AE_WORK, WORKING),
	    AS_INITIALIZING);
	assert_int_equal(lifecycle_next(AS_BUSY, AE_WORK, WORKING), AS_BUSY);
	assert_int_equal(lifecycle_next(AS_READY, AE_IDLE, IDLE), AS_READY);
}

/* Missed heartbeats, SIGSTOP and repeated timeouts make an agent UNAVAILABLE. */
static void
test_unavailable_causes(void **state)
{
	static const enum agent_event causes[] = { AE_MISSED, AE_SIGSTOP,
	    AE_TIMEOUTS };
	size_t	i;

	for (i = 0; i < sizeof causes / sizeof causes[0]; i++) {
		assert_int_equal(lifecycle_next(AS_READY, causes[i], IDLE),
		    AS_UNAVAILABLE);
		assert_int_equal(lifecycle_next(AS_BUSY, causes[i], WORKING),
		    AS_UNAVAILABLE);
	}
	/* A starting agent can hang or be stopped too. */
	assert_int_equal(lifecycle_next(AS_INITIALIZING, AE_MISSED, NOT_READY),
	    AS_UNAVAILABLE);
	assert_int_equal(lifecycle_next(AS_INITIALIZING, AE_SIGSTOP,
	    NOT_READY), AS_UNAVAILABLE);
}

/* Signs of life bring an UNAVAILABLE agent back to its working state. */
static void
test_recovery_from_unavailable(void **state)
{
	static const enum agent_event signs[] = { AE_ALIVE, AE_SIGCONT,
	    AE_HANDSHAKE };
	size_t	i;

	for (i = 0; i < sizeof signs / sizeof signs[0]; i++) {
		assert_int_equal(lifecycle_next(AS_UNAVAILABLE, signs[i], IDLE),
		    AS_READY);
		assert_int_equal(lifecycle_next(AS_UNAVAILABLE, signs[i],
		    WORKING), AS_BUSY);
		assert_int_equal(lifecycle_next(AS_UNAVAILABLE, signs[i],
		    NOT_READY), AS_INITIALIZING);
	}
	/* More trouble while unavailable changes nothing. */
	assert_int_equal(lifecycle_next(AS_UNAVAILABLE, AE_MISSED, IDLE),
	    AS_UNAVAILABLE);
	assert_int_equal(lifecycle_next(AS_UNAVAILABLE, AE_TIMEOUTS, IDLE),
	    AS_UNAVAILABLE);
}

/* Suspend parks any running agent; only resume brings it back. */
static void
test_suspend_and_resume(void **state)
{
	static const enum agent_state from[] = { AS_INITIALIZING, AS_READY,
	    AS_BUSY, AS_UNAVAILABLE };
	size_t	i;

	for (i = 0; i < sizeof from / sizeof from[0]; i++)
		assert_int_equal(lifecycle_next(from[i], AE_SUSPEND, IDLE),
		    AS_SUSPENDED);
	assert_int_equal(lifecycle_next(AS_SUSPENDED, AE_RESUME, IDLE),
	    AS_READY);
	assert_int_equal(lifecycle_next(AS_SUSPENDED, AE_RESUME, WORKING),
	    AS_BUSY);
	assert_int_equal(lifecycle_next(AS_SUSPENDED, AE_RESUME, NOT_READY),
	    AS_INITIALIZING);
	/* SIGCONT or activity do not end a suspension. */
	assert_int_equal(lifecycle_next(AS_SUSPENDED, AE_SIGCONT, IDLE),
	    AS_SUSPENDED);
	assert_int_equal(lifecycle_next(AS_SUSPENDED, AE_ALIVE, IDLE),
	    AS_SUSPENDED);
	assert_int_equal(lifecycle_next(AS_SUSPENDED, AE_WORK, WORKING),
	    AS_SUSPENDED);
	/* Resume means nothing to an agent that is not suspended. */
	assert_int_equal(lifecycle_next(AS_READY, AE_RESUME, IDLE), AS_READY);
	assert_int_equal(lifecycle_next(AS_UNAVAILABLE, AE_RESUME, IDLE),
	    AS_UNAVAILABLE);
}

/* Stop, exit, respawn: every live agent can be stopped and restarted. */
static void
test_stop_exit_respawn(void **state)
{
	int	s;

	for (s = 0; s < AS_COUNT; s++) {
		if (!is_alive_state((enum agent_state)s))
			continue;
		assert_int_equal(lifecycle_next((enum agent_state)s, AE_STOP,
		    IDLE), AS_STOPPING);
		/* An agent can also die without being asked to. */
		assert_int_equal(lifecycle_next((enum agent_state)s, AE_EXITED,
		    IDLE), AS_STOPPED);
	}
	assert_int_equal(lifecycle_next(AS_STOPPING, AE_EXITED, IDLE),
	    AS_STOPPED);
	assert_int_equal(lifecycle_next(AS_STOPPING, AE_STOP, IDLE),
	    AS_STOPPING);
	/* The stop sequence: grace, SIGTERM, SIGKILL, each on the timer. */
	assert_int_equal(lifecycle_next(AS_STOPPING, AE_TIMER, IDLE),
	    AS_TERMINATING);
	assert_int_equal(lifecycle_next(AS_TERMINATING, AE_TIMER, IDLE),
	    AS_KILLING);
	assert_int_equal(lifecycle_next(AS_KILLING, AE_TIMER, IDLE),
	    AS_KILLING);
	assert_int_equal(lifecycle_next(AS_TERMINATING, AE_EXITED, IDLE),
	    AS_STOPPED);
	assert_int_equal(lifecycle_next(AS_KILLING, AE_EXITED, IDLE),
	    AS_STOPPED);
	/* A restart waits in BACKOFF, shown as STOPPED, until its spawn. */
	assert_int_equal(lifecycle_next(AS_BACKOFF, AE_SPAWNED, NOT_READY),
	    AS_INITIALIZING);
	assert_int_equal(lifecycle_next(AS_BACKOFF, AE_STOP, IDLE),
	    AS_STOPPED);
	assert_string_equal(lifecycle_state_name(AS_BACKOFF), "STOPPED");
	assert_int_equal(lifecycle_next(AS_STOPPING, AE_HANDSHAKE, IDLE),
	    AS_STOPPING);
	assert_int_equal(lifecycle_next(AS_STOPPED, AE_SPAWNED, NOT_READY),
	    AS_INITIALIZING);
	/* After an exit, a restart that is due waits in BACKOFF. */
	assert_int_equal(lifecycle_next(AS_STOPPED, AE_RESTART_DUE, IDLE),
	    AS_BACKOFF);
	assert_int_equal(lifecycle_next(AS_STOPPED, AE_RESTART, IDLE),
	    AS_BACKOFF);
	assert_int_equal(lifecycle_next(AS_BACKOFF, AE_RESTART_DUE, IDLE),
	    AS_BACKOFF);
	assert_int_equal(lifecycle_next(AS_STOPPED, AE_STOP, IDLE), AS_STOPPED);
}

/* Giving up fails an agent from any state, and FAILED is terminal. */
static void
test_giveup_and_failed_is_terminal(void **state)
{
	int	s, ev, w;

	for (s = 0; s < AS_COUNT; s++)
		assert_int_equal(lifecycle_next((enum agent_state)s, AE_GIVEUP,
		    IDLE), AS_FAILED);
	for (ev = 0; ev < AE_COUNT; ev++)
		for (w = -1; w <= 1; w++)
			assert_int_equal(lifecycle_next(AS_FAILED,
			    (enum agent_event)ev, w), AS_FAILED);
}

/* Out-of-range states and events change nothing. */
static void
test_out_of_range(void **state)
{
	assert_int_equal(lifecycle_next(AS_READY, AE_COUNT, IDLE), AS_READY);
	assert_int_equal(lifecycle_next(AS_COUNT, AE_STOP, IDLE), AS_COUNT);
	assert_int_equal(lifecycle_next(AS_BUSY, (enum agent_event)99, IDLE),
	    AS_BUSY);
}

/* State names for logs, and MAP's names for map/agents/list. */
static void
test_state_names(void **state)
{
	static const struct {
		enum agent_state	 s;
		const char		*name;
		const char		*map;
	} names[] = {
		{ AS_INITIALIZING, "INITIALIZING", "registered" },
		{ AS_READY, "READY", "idle" },
		{ AS_BUSY, "BUSY", "busy" },
		{ AS_UNAVAILABLE, "UNAVAILABLE", "x-unavailable" },
		{ AS_SUSPENDED, "SUSPENDED", "suspended" },
		{ AS_STOPPING, "STOPPING", "stopping" },
		{ AS_STOPPED, "STOPPED", "stopped" },
		{ AS_FAILED, "FAILED", "failed" },
		{ AS_TERMINATING, "STOPPING", "stopping" },
		{ AS_KILLING, "STOPPING", "stopping" },
		{ AS_BACKOFF, "STOPPED", "stopped" },
	};
	size_t	i;

	assert_int_equal(sizeof names / sizeof names[0], AS_COUNT);
	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		assert_string_equal(lifecycle_state_name(names[i].s),
		    names[i].name);
		assert_string_equal(mapview_state(names[i].s),
		    names[i].map);
	}
	assert_string_equal(lifecycle_state_name(AS_COUNT), "?");
	assert_string_equal(mapview_state(AS_COUNT), "x-unknown");
}

/* Event names, as the audit log records them. */
static void
test_event_names(void **state)
{
	static const char *const names[AE_COUNT] = { "spawned", "handshake",
	    "work", "idle", "missed", "alive", "sigstop", "sigcont",
	    "timeouts", "suspend", "resume", "stop", "exited", "restart",
	    "giveup", "start", "timer", "reaped", "broken", "kill",
	    "restart_due" };
	int	ev;

	for (ev = 0; ev < AE_COUNT; ev++)
		assert_string_equal(lifecycle_event_name((enum agent_event)ev),
		    names[ev]);
	assert_string_equal(lifecycle_event_name(AE_COUNT), "?");
}

/*
 * Restart backoff: exponential from backoff to backoff_max with 20%
 * jitter, and never less than 1 s after the previous spawn.
 */
static void
test_restart_backoff(void **state)
{
	struct agent_conf	ac;
	double			d;
	int			i;

	/* The jitter's ends are reached, give or take a rounding. */
#define EPS	1e-9
	memset(&ac, 0, sizeof ac);
	ac.backoff_min = 1;
	ac.backoff_max = 30;
	for (i = 0; i < 200; i++) {
		/* The agent ran for a long time: plain backoff. */
		d = lifecycle_backoff(&ac, 1, 100);
		assert_true(d >= 0.8 - EPS && d <= 1.2 + EPS);
		d = lifecycle_backoff(&ac, 3, 100);
		assert_true(d >= 3.2 - EPS && d <= 4.8 + EPS);
		d = lifecycle_backoff(&ac, 50, 100);
		assert_true(d >= 24 - EPS && d <= 36 + EPS);
		/* It crashed at once: at least 1 s after the spawn. */
		d = lifecycle_backoff(&ac, 1, 0);
		assert_true(d >= 1.0 && d <= 1.2 + EPS);
		d = lifecycle_backoff(&ac, 1, 0.1);
		assert_true(d >= 0.9);
	}
	ac.backoff_min = 0;
	ac.backoff_max = 0;
	assert_true(lifecycle_backoff(&ac, 1, 0) >= 1.0);
	assert_true(lifecycle_backoff(&ac, 1, 0.25) >= 0.75);
#undef EPS
}

/*
 * The adaptive window: it starts at 16, grows by one for each quick
 * answer given while full, halves on a slow answer but never below 16,
 * and never passes 1,024; a quick answer while not full changes nothing.
 */
static void
test_adaptive_window(void **state)
{
	unsigned int	w = 0, i;

	(void)state;
	assert_int_equal(lifecycle_window_next(0, 3, 0.001), 16);
	w = lifecycle_window_next(w, 16, 0.001);
	assert_int_equal(w, 17);
	assert_int_equal(lifecycle_window_next(w, 5, 0.001), 17);
	assert_int_equal(lifecycle_window_next(w, 17, 0.05), 17);
	for (i = 0; i < 5000; i++)
		w = lifecycle_window_next(w, w, 0.002);
	assert_int_equal(w, 1024);
	w = lifecycle_window_next(w, w, 0.5);
	assert_int_equal(w, 512);
	for (i = 0; i < 20; i++)
		w = lifecycle_window_next(w, w, 2.0);
	assert_int_equal(w, 16);
	assert_int_equal(lifecycle_window_next(w, w, 30.0), 16);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_doc_table),
		cmocka_unit_test(test_handshake_makes_ready),
		cmocka_unit_test(test_work_and_idle),
		cmocka_unit_test(test_unavailable_causes),
		cmocka_unit_test(test_recovery_from_unavailable),
		cmocka_unit_test(test_suspend_and_resume),
		cmocka_unit_test(test_stop_exit_respawn),
		cmocka_unit_test(test_giveup_and_failed_is_terminal),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_state_names),
		cmocka_unit_test(test_event_names),
		cmocka_unit_test(test_restart_backoff),
		cmocka_unit_test(test_adaptive_window),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
