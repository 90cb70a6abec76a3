#!/bin/sh
# Signals to corral (the pid we started): SIGINT stops the agents in order
# and exits 130, SIGTERM exits 143; a second SIGINT while a stubborn agent
# (ignoring EOF and SIGTERM, 60s stop timeout) is stopping kills it at once.
# SIGTERM to corral's whole process group counts once.  With and without
# the pid namespace (where the waiter forwards signals).
. "$(dirname "$0")/lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  a:
    cmd: [$TA, --record, $T/a.rec, --hang]
routes:
  "*": a
YAML
cat >"$T/stubborn.yaml" <<YAML
agents:
  s:
    cmd: [$TA, --record, $T/s.rec, --hang, --ignore-term]
    stop: {grace: 100ms, timeout: 60s}
routes:
  "*": s
YAML

# start WF RECORD: corral run, waiting until the agent holds the goal.
start() {
	rec=$2
	rm -f "$rec"
	corral_start run "$1" --goal go -v
	wait_for 'grep -q "^recv {\"protocol\"" "$rec" 2>/dev/null' 10 ||
	    fail "$mode: the agent never got the goal"
}

for mode in pidns nopidns; do
	if [ $mode = nopidns ]; then
		export CORRAL_NO_PIDNS=1
	else
		unset CORRAL_NO_PIDNS
	fi
	for sig in INT TERM; do
		start "$T/wf.yaml" "$T/a.rec"
		pid=$(log_pid a)
		kill -$sig "$CORRAL_PID"
		corral_wait 10
		want=130
		[ $sig = TERM ] && want=143
		[ "$RC" = $want ] || fail "$mode: SIG$sig: expected exit status $want, got $RC"
		log_has "corral: $sig: stopping 1 agents (interrupt again to kill)" ||
		    fail "$mode: SIG$sig: expected '$sig: stopping 1 agents (interrupt again to kill)' in the log"
		log_has 'corral: agent a: BUSY -> STOPPING (shutdown)' ||
		    fail "$mode: SIG$sig: expected 'agent a: BUSY -> STOPPING (shutdown)'"
		log_has 'corral: agent a: STOPPING -> STOPPED (exit status 0)' ||
		    fail "$mode: SIG$sig: expected agent a stopped through EOF ('STOPPING -> STOPPED (exit status 0)')"
		pid_alive "$pid" && fail "$mode: SIG$sig: agent a (pid $pid) outlived corral"
		note "$mode: SIG$sig: exit $RC"
	done

	# The second SIGINT.
	start "$T/stubborn.yaml" "$T/s.rec"
	pid=$(log_pid s)
	kill -INT "$CORRAL_PID"
	wait_log 'corral: agent s: still running 0.1s after stdin closed; SIGTERM' 5
	sleep 0.1
	pid_alive "$pid" || fail "$mode: the stubborn agent died of SIGTERM (test broken?)"
	s=$(now)
	kill -INT "$CORRAL_PID"
	corral_wait 5
	t=$(elapsed "$s")
	[ "$RC" = 130 ] || fail "$mode: second SIGINT: expected exit status 130, got $RC"
	log_has 'corral: second INT: killing every agent now' ||
	    fail "$mode: expected 'second INT: killing every agent now' in the log"
	log_has 'corral: agent s: STOPPING -> STOPPED (killed by signal KILL)' ||
	    fail "$mode: expected 'agent s: STOPPING -> STOPPED (killed by signal KILL)'"
	pid_alive "$pid" && fail "$mode: the stubborn agent (pid $pid) outlived corral"
	note "$mode: second SIGINT: exit $RC ${t}s later"
	fcmp "$t" "<" "$((2 * SLOW))" || fail "$mode: corral took ${t}s to exit after the second SIGINT"

	# SIGTERM to corral's whole process group (as timeout(1) and many
	# supervisors send it) is one request to stop, not two: the stubborn
	# agent is not killed until a second TERM comes.
	rm -f "$T/s.rec"
	: >"$ERR"
	setsid "$CORRAL" run "$T/stubborn.yaml" --goal go -v </dev/null \
	    >"$OUT" 2>"$ERR" &
	CORRAL_PID=$!
	wait_for 'grep -q "^recv {\"protocol\"" "$T/s.rec" 2>/dev/null' 10 ||
	    fail "$mode: group TERM: the agent never got the goal"
	pid=$(log_pid s)
	kill -TERM "-$CORRAL_PID"
	wait_log 'corral: agent s: still running 0.1s after stdin closed; SIGTERM' 5
	sleep 1
	pid_alive "$pid" ||
	    fail "$mode: TERM to the process group killed the stubborn agent at once (counted as two): $(grep -F 'corral:' "$ERR" | tail -n 5)"
	[ "$(grep -c 'stopping 1 agents (interrupt again to kill)' "$ERR")" = 1 ] ||
	    fail "$mode: group TERM: expected one 'stopping 1 agents' line: $(grep stopping "$ERR")"
	log_has 'second TERM' && fail "$mode: group TERM was counted twice"
	kill -TERM "$CORRAL_PID"
	corral_wait 5
	[ "$RC" = 143 ] || fail "$mode: group TERM: expected exit status 143, got $RC"
	log_has 'corral: second TERM: killing every agent now' ||
	    fail "$mode: group TERM: the TERM after it did not kill"
	pid_alive "$pid" && fail "$mode: the stubborn agent (pid $pid) outlived corral"
	note "$mode: TERM to the process group: one request to stop"
done
expect_no_leftovers
exit 0
