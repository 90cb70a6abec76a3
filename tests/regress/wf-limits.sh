#!/bin/sh
# The workflow's limits each end a run that would go on: limits.max_steps
# (requests made from next_actions), limits.max_depth (lineage depth) and
# limits.deadline.  corral run exits 1 with an error envelope naming the
# limit (codes max_steps, max_depth, deadline), and every request made
# still has exactly one outcome in the audit log.
. "$(dirname "$0")/lib.sh"
. "$TESTDIR/tools/wflib.sh"

LOG="$T/audit.ndjson"

# An agent that always proposes one more step.
loop_wf() {
	cat >"$T/wf.yaml" <<YAML
agents:
  loop:
    cmd: [$WA, --next, execute]
routes:
  "*": loop
limits:
$1
YAML
}

# max_steps: three requests from next_actions, then the fourth is refused.
loop_wf "  max_steps: 3"
corral_run 20 run "$T/wf.yaml" --goal go --log "$LOG"
expect_rc 1
expect_error_result "$OUT" max_steps
case "$(result_field "$OUT" .content.text)" in
*max_steps*3*) ;;
*) fail "max_steps: expected the message to name max_steps (3): $(result_field "$OUT" .content.text)" ;;
esac
n=$(audit_routes "$LOG" | wc -l)
[ "$n" -eq 4 ] || fail "max_steps 3: expected the goal and 3 steps routed, got $n routes"
audit_all "$LOG" 'select(.ev == "limit") | .code == "max_steps"' ||
    fail "max_steps: expected a limit event with code max_steps in the audit log"
audit_all "$LOG" 'select(.ev == "job_end") | .status == "failed"' ||
    fail "max_steps: expected job_end status failed"
expect_audit_ok "$LOG"
rm -f "$LOG"

# max_depth: the chain is cut when it would go deeper than 2.
loop_wf "  max_depth: 2
  max_steps: 100"
corral_run 20 run "$T/wf.yaml" --goal go --log "$LOG"
expect_rc 1
expect_error_result "$OUT" max_depth
case "$(result_field "$OUT" .content.text)" in
*max_depth*2*) ;;
*) fail "max_depth: expected the message to name max_depth (2): $(result_field "$OUT" .content.text)" ;;
esac
n=$(audit_routes "$LOG" | wc -l)
[ "$n" -eq 3 ] || fail "max_depth 2: expected the goal and 2 levels routed, got $n routes"
audit_all "$LOG" 'select(.ev == "limit") | .code == "max_depth"' ||
    fail "max_depth: expected a limit event with code max_depth in the audit log"
expect_audit_ok "$LOG"
rm -f "$LOG"

# deadline: the only agent never answers.
cat >"$T/wf.yaml" <<YAML
agents:
  stuck:
    cmd: [$WA, --hang]
routes:
  "*": stuck
limits:
  deadline: 300ms
YAML
s=$(now)
corral_run 20 run "$T/wf.yaml" --goal go --log "$LOG"
t=$(elapsed "$s")
expect_rc 1
expect_error_result "$OUT" deadline
[ "$(result_field "$OUT" .content.data.category)" = TIMEOUT ] ||
    fail "deadline: expected category TIMEOUT: $(cat "$OUT")"
fcmp "$t" ">=" 0.3 || fail "deadline: corral exited after ${t}s, before the 300ms deadline"
fcmp "$t" "<" "$((5 * SLOW))" || fail "deadline: corral took ${t}s to end a run with a 300ms deadline (x$SLOW)"
note "deadline 300ms: exit after ${t}s"
expect_audit_ok "$LOG"
exit 0
