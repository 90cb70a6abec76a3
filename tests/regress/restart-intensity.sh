#!/bin/sh
# An agent that keeps crashing exceeds its restart intensity (max: 2
# within 60s) and is FAILED for good: 3 spawns, a clear log line, work for
# it gets an error result, while corral serve keeps running and another
# agent keeps answering; EOF then ends corral cleanly.
. "$(dirname "$0")/lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  crash:
    cmd: [$TA, --record, $T/crash.rec, --exit, "1"]
    restart: {policy: permanent, max: 2, within: 60s, backoff: 1s, backoff_max: 1s}
  echo:
    cmd: [$TA, --record, $T/echo.rec]
routes:
  execute: crash
  "*": echo
# Without retries the error for the failed route comes at once (by default
# corral retries an UNAVAILABLE request 3 times, 1+2+4 s).
retry: {max: 0}
YAML

serve_start "$T/wf.yaml" -v
wait_log 'corral: agent crash: STOPPED -> FAILED (restart intensity exceeded: 2 restarts in 60s)' 15
starts=$(grep -c '^start ' "$T/crash.rec")
[ "$starts" -eq 3 ] || fail "expected 3 spawns before giving up, the agent recorded $starts"
pid_alive "$CORRAL_PID" || fail "corral exited when one agent failed"

# corral still serves: the healthy agent answers, the failed one's route errors.
envelope in-plan plan >&8
envelope in-exec execute >&8
wait_lines 2
grep '"in-plan"' "$OUT" | grep -q '"text":"ok echo"' ||
    fail "expected the echo agent's reply to in-plan"
exec_line=$(grep '"in-exec"' "$OUT")
printf '%s\n' "$exec_line" | grep -q '"type":"error"' ||
    fail "expected an error result for in-exec, got: $exec_line"
note "in-exec result: $(printf '%s\n' "$exec_line" | sed -n 's/.*"text":"\([^"]*\)".*/\1/p')"

# No further restart after FAILED: none was scheduled (two "restarting
# in", for the two restarts), and none came when one would have, a
# backoff (1 s) after the last crash, and a second more.
[ "$(log_count 'corral: agent crash: restarting in')" -eq 2 ] ||
    fail "expected 2 restarts scheduled, the log has: $(grep 'agent crash: restarting in' "$ERR")"
sleep 2
starts=$(grep -c '^start ' "$T/crash.rec")
[ "$starts" -eq 3 ] || fail "expected no spawn after FAILED, the agent recorded $starts"

serve_eof
corral_wait 10
[ "$RC" -le 1 ] || fail "expected corral serve to exit 0 or 1 after EOF, got $RC"
note "exit status after EOF: $RC"
expect_no_leftovers
exit 0
