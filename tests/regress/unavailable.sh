#!/bin/sh
# An agent stopped with SIGSTOP is UNAVAILABLE at once (corral sees the
# child's stop status) and READY again after SIGCONT; an agent that hangs
# (running, but silent: it stops answering pings) is UNAVAILABLE after
# about 3 missed heartbeat intervals and READY when it answers again.
# The stop/continue part runs with and without the pid namespace.
. "$(dirname "$0")/lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  hb:
    cmd: [$TA, --record, $T/rec, --pause-file, $T/pause]
    heartbeat: {interval: 200ms, misses: 3}
routes:
  "*": hb
YAML

for mode in pidns nopidns; do
	if [ $mode = nopidns ]; then
		export CORRAL_NO_PIDNS=1
	else
		unset CORRAL_NO_PIDNS
	fi
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
		n0=$(log_count 'corral: agent hb: READY -> UNAVAILABLE')
		: >"$T/pause"
		s=$(now)
		wait_log 'corral: agent hb: READY -> UNAVAILABLE (3 missed heartbeats)' 5
		t=$(elapsed "$s")
		note "$mode: UNAVAILABLE ${t}s after the agent went silent"
		# 3 intervals of 200ms: not before ~0.4s (the silence may begin
		# just before an interval ends), not long after 0.8s.
		fcmp "$t" ">=" 0.35 ||
		    fail "expected >= ~0.4s of silence before UNAVAILABLE, saw ${t}s"
		[ $SLOW -gt 1 ] || fcmp "$t" "<=" 2 ||
		    fail "expected UNAVAILABLE about 0.6-0.8s after the agent went silent, saw ${t}s"
		rm -f "$T/pause"
		wait_log 'corral: agent hb: UNAVAILABLE -> READY (answering again)' 5
		pid_alive "$pid" || fail "the agent ($pid) died while unavailable"
		[ "$(log_count 'corral: agent hb: spawned')" -eq 1 ] ||
		    fail "expected no restart of the hung agent, saw $(log_count 'corral: agent hb: spawned') spawns"
		: "$n0"
	fi

	# Still serving work.
	echo '{"protocol":"multiagent-1.0","role":"user","intent":"plan","task":"t","content":{"type":"text"},"trace":{"id":"after"}}' >&8
	wait_for 'grep -q "\"after\"" "$OUT"' 5 || fail "$mode: no result for a request after READY"
	grep '"after"' "$OUT" | grep -q '"ok hb"' || fail "$mode: expected hb's reply, got $(cat "$OUT")"
	serve_eof
	corral_wait 10
	expect_rc 0
done
expect_no_leftovers
exit 0
