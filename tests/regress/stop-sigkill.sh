#!/bin/sh
# An agent that ignores both EOF on stdin and SIGTERM is killed with
# SIGKILL at the stop deadline (grace 200ms, then timeout 500ms): the log
# says so, the audit log's STOPPING -> STOPPED takes about 0.7s, and the
# process is gone when corral exits.
. "$(dirname "$0")/lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  stubborn:
    cmd: [$TA, --record, $T/rec, --ignore-term]
    stop: {grace: 200ms, timeout: 500ms}
routes:
  "*": stubborn
YAML

corral_run 20 run "$T/wf.yaml" --goal go -v --log "$T/audit.ndjson"
expect_rc 0
pid=$(log_pid stubborn)
log_has 'corral: agent stubborn: still running 0.2s after stdin closed; SIGTERM' ||
    fail "expected 'still running 0.2s after stdin closed; SIGTERM' in the log"
log_has 'corral: agent stubborn: did not stop 0.5s after SIGTERM; SIGKILL' ||
    fail "expected 'did not stop 0.5s after SIGTERM; SIGKILL' in the log"
log_has 'corral: agent stubborn: STOPPING -> STOPPED (killed by signal KILL)' ||
    fail "expected 'STOPPING -> STOPPED (killed by signal KILL)' in the log"
grep -q '^eof$' "$T/rec" || fail "the agent never saw EOF on stdin"
pid_alive "$pid" && fail "the agent (pid $pid) is still alive after corral exited"

# The stop sequence's length, from the audit log's monotonic times.
d=$(awk '/"ev":"state","agent":"stubborn"/ && /"to":"STOPPING"/ {
		sub(/.*"t":/, ""); sub(/,.*/, ""); a = $0 }
	/"ev":"state","agent":"stubborn"/ && /"to":"STOPPED"/ && /"from":"STOPPING"/ {
		sub(/.*"t":/, ""); sub(/,.*/, ""); b = $0 }
	END { if (a != "" && b != "") printf "%.3f", b - a }' "$T/audit.ndjson")
[ -n "$d" ] || fail "no STOPPING and STOPPED state events in the audit log"
note "STOPPING -> STOPPED took ${d}s (grace 0.2 + timeout 0.5)"
# The grace timer starts at the loop time of the STOPPING transition, a
# little before its audit event is written (more on a busy machine).
fcmp "$d" ">=" "$(awk -v s=$SLOW 'BEGIN { print 0.7 - 0.01 * s }')" ||
    fail "expected the SIGKILL no sooner than 0.7s, it took ${d}s"
fcmp "$d" "<=" "$(awk -v s=$SLOW 'BEGIN { print 0.7 + 2.0 * s }')" ||
    fail "expected the agent gone within 0.7s + 2s (x$SLOW) of slack, it took ${d}s"
expect_no_leftovers
exit 0
