#!/bin/sh
# An agent stopped with SIGSTOP is UNAVAILABLE at once (corral sees the
# child's stop status) and READY again after SIGCONT; an agent that hangs
# (running, but silent: it stops answering pings) is UNAVAILABLE after
# about 3 missed heartbeat intervals and READY when it answers again,
# in its first process and in the one that replaces it after a crash.
# The stop/continue part runs with and without the pid namespace.  The
# interval is 300 ms x SLOW, so that a busy machine does not miss three.
. "$(dirname "$0")/lib.sh"

I=$((300 * SLOW))	# the heartbeat interval, ms
cat >"$T/wf.yaml" <<YAML
agents:
  hb:
    cmd: [$TA, --record, $T/rec, --pause-file, $T/pause]
    heartbeat: {interval: ${I}ms, misses: 3}
routes:
  "*": hb
YAML

for mode in pidns nopidns; do
	pidns_mode $mode
	rm -f "$T/pause"
	serve_start "$T/wf.yaml" -v
	wait_log 'corral: agent hb: INITIALIZING -> READY (ready at spawn)'
	pid=$(log_pid hb)
	[ -n "$pid" ] || fail "no spawned (pid N) line for hb"

	# SIGSTOP: seen at once through the child's status.
	kill -STOP "$pid"
	s=$(now)
	wait_log 'corral: agent hb: READY -> UNAVAILABLE (stopped by signal STOP)' 5
	note "$mode: UNAVAILABLE $(elapsed "$s")s after SIGSTOP"
	kill -CONT "$pid"
	wait_log 'corral: agent hb: UNAVAILABLE -> READY (continued)' 5

	if [ $mode = pidns ]; then
		# A hang: the process runs but stops answering pings.
		missed='corral: agent hb: READY -> UNAVAILABLE (3 missed heartbeats)'
		n0=$(log_count "$missed")
		back=$(log_count 'corral: agent hb: UNAVAILABLE -> READY (answering again)')
		# The clock starts before the silence does, so that a pause of
		# this script cannot shorten what it measures.
		s=$(now)
		: >"$T/pause"
		wait_for '[ "$(log_count "$missed")" -gt "$n0" ]' $((I * 10 / 1000 + 5)) ||
		    fail "expected '$missed' after the agent went silent"
		t=$(elapsed "$s")
		note "$mode: UNAVAILABLE ${t}s after the agent went silent (interval ${I}ms)"
		# A ping after an idle interval, then 3 missed: about 4 to 5
		# intervals; not before 2, not later than 10.
		fcmp "$t" ">=" "$(awk -v i=$I 'BEGIN { print (2 * i - 50) / 1000 }')" ||
		    fail "expected >= 2 intervals (${I}ms) of silence before UNAVAILABLE, saw ${t}s"
		fcmp "$t" "<=" "$(awk -v i=$I 'BEGIN { print 10 * i / 1000 }')" ||
		    fail "expected UNAVAILABLE about 3 intervals (${I}ms) after the agent went silent, saw ${t}s"
		rm -f "$T/pause"
		wait_for '[ "$(log_count "corral: agent hb: UNAVAILABLE -> READY (answering again)")" -gt "$back" ]' $((I * 10 / 1000 + 5)) ||
		    fail "expected 'UNAVAILABLE -> READY (answering again)' once the agent answers"
		pid_alive "$pid" || fail "the agent ($pid) died while unavailable"
		[ "$(log_count 'corral: agent hb: spawned')" -eq 1 ] ||
		    fail "expected no restart of the hung agent, saw $(log_count 'corral: agent hb: spawned') spawns"

		# Killed, it restarts after its backoff, and the new process
		# has heartbeats again: one timer ran the backoff and counts
		# them once it is READY.
		ready='corral: agent hb: INITIALIZING -> READY (ready at spawn)'
		kill -KILL "$pid"
		wait_for '[ "$(log_count "$ready")" -ge 2 ]' 20 ||
		    fail "expected hb to restart and be READY after SIGKILL"
		pid2=$(log_pid hb)
		[ -n "$pid2" ] && [ "$pid2" != "$pid" ] ||
		    fail "expected a new process for hb, saw pid '$pid2'"
		pid=$pid2
		n0=$(log_count "$missed")
		back=$(log_count 'corral: agent hb: UNAVAILABLE -> READY (answering again)')
		: >"$T/pause"
		wait_for '[ "$(log_count "$missed")" -gt "$n0" ]' $((I * 10 / 1000 + 5)) ||
		    fail "expected '$missed' after the restarted agent went silent"
		rm -f "$T/pause"
		wait_for '[ "$(log_count "corral: agent hb: UNAVAILABLE -> READY (answering again)")" -gt "$back" ]' $((I * 10 / 1000 + 5)) ||
		    fail "expected the restarted agent READY again once it answers"
	fi

	# Still serving work.
	envelope after plan >&8
	wait_for 'grep -q "\"after\"" "$OUT"' 5 || fail "$mode: no result for a request after READY"
	grep '"after"' "$OUT" | grep -q '"ok hb"' || fail "$mode: expected hb's reply, got $(cat "$OUT")"
	serve_eof
	corral_wait 10
	expect_rc 0
done
expect_no_leftovers
exit 0
