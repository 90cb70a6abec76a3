/*
 * Unit tests of the agent lifecycle table (src/lifecycle.c).
 *
 * lifecycle_next() is the whole state machine: supervision decisions
 * (route work, restart, give up) follow from the state it returns.  The
 * tests state every documented transition, then check all states x events
 * x "working" values: anything not documented must leave the state as it
 * was.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "corral.h"

/* The "working" argument: not handshaken yet, idle, or with work. */
#define NOT_READY	(-1)
#define IDLE		0
#define WORKING		1

/* The working state the table's "W" entries lead to. */
static enum agent_state
working_state(int working)
{
	if (working < 0)
		return AS_INITIALIZING;
	return working > 0 ? AS_BUSY : AS_READY;
}

/* The states in which the agent has a process and is not stopping it. */
static int
is_alive_state(enum agent_state s)
{
	return s == AS_INITIALIZING || s == AS_READY || s == AS_BUSY ||
	    s == AS_UNAVAILABLE || s == AS_SUSPENDED;
}

/* The steps of the stop sequence: all shown as STOPPING. */
static int
is_stopping_state(enum agent_state s)
{
	return s == AS_STOPPING || s == AS_TERMINATING || s == AS_KILLING;
}

/*
 * The documented table, written out independently of src/lifecycle.c:
 * the state event ev leads to from s, or s when nothing changes.
 */
static enum agent_state
expected_next(enum agent_state s, enum agent_event ev, int working)
{
	if (s == AS_FAILED)
		return s;			/* terminal */
	if (ev == AE_GIVEUP)
		return AS_FAILED;
	if (s == AS_STOPPED)
		return ev == AE_SPAWNED ? AS_INITIALIZING : s;
	if (s == AS_BACKOFF) {
		if (ev == AE_SPAWNED)
			return AS_INITIALIZING;
		/* A restart that was due is called off. */
		return ev == AE_STOP || ev == AE_KILL ? AS_STOPPED : s;
	}
	if (ev == AE_EXITED)
		return AS_STOPPED;
	if (is_stopping_state(s)) {
		if (ev == AE_TIMER && s == AS_STOPPING)
			return AS_TERMINATING;
		if (ev == AE_TIMER && s == AS_TERMINATING)
			return AS_KILLING;
		if (ev == AE_KILL && s != AS_KILLING)
			return AS_KILLING;
		return s;
	}
	/* A running agent. */
	if (ev == AE_STOP || ev == AE_RESTART)
		return AS_STOPPING;
	/* Pipes held past the grace, or broken: SIGTERM at once. */
	if (ev == AE_REAPED || ev == AE_BROKEN)
		return AS_TERMINATING;
	if (ev == AE_KILL)
		return AS_KILLING;
	if (ev == AE_SUSPEND)
		return AS_SUSPENDED;
	switch (s) {
	case AS_INITIALIZING:
		if (ev == AE_HANDSHAKE)
			return working_state(working);
		if (ev == AE_MISSED || ev == AE_SIGSTOP)
			return AS_UNAVAILABLE;
		return s;
	case AS_READY:
		if (ev == AE_WORK)
			return AS_BUSY;
		if (ev == AE_MISSED || ev == AE_SIGSTOP || ev == AE_TIMEOUTS)
			return AS_UNAVAILABLE;
		return s;
	case AS_BUSY:
		if (ev == AE_IDLE)
			return AS_READY;
		if (ev == AE_MISSED || ev == AE_SIGSTOP || ev == AE_TIMEOUTS)
			return AS_UNAVAILABLE;
		return s;
	case AS_UNAVAILABLE:
		if (ev == AE_ALIVE || ev == AE_SIGCONT || ev == AE_HANDSHAKE)
			return working_state(working);
		return s;
	case AS_SUSPENDED:
		if (ev == AE_RESUME)
			return working_state(working);
		return s;
	default:
		return s;
	}
}

/* Every state x event x working value matches the documented table. */
static void
test_whole_table(void **state)
{
	int	s, ev, w, bad = 0;
	enum agent_state	got, want;

	for (s = 0; s < AS_COUNT; s++) {
		for (ev = 0; ev < AE_COUNT; ev++) {
			for (w = -1; w <= 1; w++) {
				got = lifecycle_next((enum agent_state)s,
				    (enum agent_event)ev, w);
				want = expected_next((enum agent_state)s,
				    (enum agent_event)ev, w);
				if (got == want)
					continue;
				print_message("%s -%s-> %s (working %d), "
				    "expected %s\n", lifecycle_state_name(
				    (enum agent_state)s), lifecycle_event_name(
				    (enum agent_event)ev), lifecycle_state_name(
				    got), w, lifecycle_state_name(want));
				bad++;
			}
		}
	}
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
	/* The restart timer firing is not itself a state change. */
	assert_int_equal(lifecycle_next(AS_STOPPED, AE_RESTART, NOT_READY),
	    AS_STOPPED);
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
	    "giveup", "start", "timer", "reaped", "broken", "kill" };
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

	memset(&ac, 0, sizeof ac);
	ac.backoff_min = 1;
	ac.backoff_max = 30;
	for (i = 0; i < 200; i++) {
		/* The agent ran for a long time: plain backoff. */
		d = lifecycle_backoff(&ac, 1, 100);
		assert_true(d >= 0.8 && d <= 1.2);
		d = lifecycle_backoff(&ac, 3, 100);
		assert_true(d >= 3.2 && d <= 4.8);
		d = lifecycle_backoff(&ac, 50, 100);
		assert_true(d >= 24 && d <= 36);
		/* It crashed at once: at least 1 s after the spawn. */
		d = lifecycle_backoff(&ac, 1, 0);
		assert_true(d >= 1.0 && d <= 1.2);
		d = lifecycle_backoff(&ac, 1, 0.1);
		assert_true(d >= 0.9);
	}
	ac.backoff_min = 0;
	ac.backoff_max = 0;
	assert_true(lifecycle_backoff(&ac, 1, 0) >= 1.0);
	assert_true(lifecycle_backoff(&ac, 1, 0.25) >= 0.75);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_table),
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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
