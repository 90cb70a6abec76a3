#!/bin/sh
# A crashing agent is restarted with backoff: at least 1 s between spawns
# (the times of the audit log's spawn records, corral's own clock; the
# agent records each start too, which counts them), growing with each
# restart, and the log says why it restarted.  The third incarnation
# answers the goal.
. "$(dirname "$0")/lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  crash:
    cmd: [$TA, --record, $T/rec, --crash-first, "2", --handshake, "0"]
    ready: handshake
    restart: {policy: transient, max: 5, within: 60s, backoff: 1s, backoff_max: 30s}
routes:
  "*": crash
YAML

corral_run 20 run "$T/wf.yaml" --goal go -v --log "$T/audit"
expect_rc 0
grep -q '"ok crash"' "$OUT" || fail "expected the third incarnation's reply on stdout"

starts=$(grep -c '^start ' "$T/rec")
[ "$starts" -eq 3 ] || fail "expected 3 spawns, the agent recorded $starts"
[ "$(log_count 'corral: agent crash: spawned (pid ')" -eq 3 ] ||
    fail "expected 3 'spawned' lines in the log, saw $(log_count 'spawned (pid')"

# The restart reason: the exit status, in the transition and the restart
# line.  The transition comes from INITIALIZING, or from STOPPING when
# the exit was reaped before corral read the end of its stdout (both come
# in the same loop iteration, in either order).
[ "$(grep -cE 'corral: agent crash: (INITIALIZING|STOPPING) -> STOPPED \(exit status 1\)' "$ERR")" -eq 2 ] ||
    fail "expected 2 '... -> STOPPED (exit status 1)' lines"
[ "$(grep -c 'corral: agent crash: restarting in [0-9.]*s (exit status 1)' "$ERR")" -eq 2 ] ||
    fail "expected 2 'restarting in Ns (exit status 1)' lines"

# Gaps between the spawns, as corral timed them (its audit log's "t",
# seconds on the monotonic clock).  The times the agent recorded were
# used before: they hold how long each process took to start running,
# which a loaded machine under the sanitizers stretched for the first
# and not the second (a gap of 0.926 s).
gaps=$(sed -n 's/^{"seq":[0-9]*,"t":\([0-9.]*\),"ev":"spawn","agent":"crash",.*/\1/p' "$T/audit" |
    awk '{ if (n++) printf "%.3f ", $1 - prev; prev = $1 }')
note "gaps between spawns: $gaps"
set -- $gaps
[ $# -eq 2 ] || fail "expected 3 spawn records in the audit log: $(grep '"ev":"spawn"' "$T/audit")"
# 1 s minimum; allow 50 ms for the loop's cached clock.
fcmp "$1" ">=" 0.95 || fail "expected >= 1s before the first restart, saw ${1}s"
# backoff 1s doubles (with 20% jitter): the second wait is at least 1.6 s.
fcmp "$2" ">=" 1.55 || fail "expected the backoff to grow to >= 1.6s, saw ${2}s"
# It grew: corral chose a longer second delay, and the second gap is
# longer than the first delay.  (The gaps themselves also hold the time
# it took to see each crash and spawn again, more on a busy machine, so
# they are not compared with each other.)
set -- $(sed -n 's/^corral: agent crash: restarting in \([0-9.]*\)s .*/\1/p' "$ERR") "$2"
[ $# -eq 3 ] || fail "expected two 'restarting in' delays in the log: $(grep 'restarting in' "$ERR")"
fcmp "$2" ">" "$1" || fail "expected the second restart delay ($2 s) above the first ($1 s)"
fcmp "$3" ">" "$1" || fail "expected the second gap ($3 s) above the first delay ($1 s)"
expect_no_leftovers
exit 0
