#!/bin/sh
# Budgets hold when one reply goes over two of them at once, and a spent
# run budget closes the door:
#   1. agent a (budget: {tokens: 50}) replies with 200 tokens in a run
#      with limits.budget {tokens: 100}: a's subtree is stopped AND the
#      job ends budget_exceeded, exit 1 (it once ended "ok", exit 0: the
#      run's check was skipped once the agent's had fired);
#   2. corral serve, limits.budget {tokens: 100}: the first input's reply
#      spends 200 tokens; the next input is refused with budget_exceeded
#      instead of being served;
#   3. a budget per task (limits.task_budget {tokens: 100}) holds for a
#      workflow's own request, routed by intent: a reply of 200 tokens
#      fails its request with budget_exceeded (the task registry says so),
#      and the run goes on.
. "$(dirname "$0")/tree-lib.sh"

echo '{"steps": [{"finalize": {"text": "spent", "tokens": 200}}]}' >"$T/p.json"

write_wf "$T/wf.yaml" <<'YAML'
agents:
  a:
    cmd: [@TR@, --record, @REC@, --plan, @T@/p.json]
    budget: {tokens: 50}
routes:
  "*": a
limits:
  budget: {tokens: 100}
YAML
corral_run 20 run "$T/wf.yaml" --goal go --log "$LOG"
expect_rc 1
[ "$(out_get content.data.code)" = budget_exceeded ] ||
    fail "the result is not budget_exceeded: $(head -c 400 "$OUT")"
audit_count -w ev=budget_exceeded -w agent=a >/dev/null ||
    fail "a's own budget was not enforced"
audit_count -w ev=limit -w code=budget_exceeded >/dev/null ||
    fail "no limit event for the run's budget in the audit log"

# 2. serve: after the run's budget is spent, inputs are refused.
write_wf "$T/wf.yaml" <<'YAML'
agents:
  a:
    cmd: [@TR@, --record, @REC@, --plan, @T@/p.json]
routes:
  "*": a
limits:
  budget: {tokens: 100}
YAML
rm -f "$LOG" "$REC"
serve_start "$T/wf.yaml" --log "$LOG"
input() {
	printf '{"protocol":"multiagent-1.0","role":"user","intent":"analyze","task":"t","content":{"type":"text","text":"x"},"trace":{"id":"%s"}}\n' "$1"
}
input in-1 >&8
wait_for '[ "$(grep -c . "$OUT")" -ge 1 ]' 20 || fail "no answer to in-1"
input in-2 >&8
wait_for '[ "$(grep -c . "$OUT")" -ge 2 ]' 20 || fail "no answer to in-2"
serve_eof
corral_wait 20
second=$(sed -n 2p "$OUT")
printf '%s\n' "$second" | "$Q" -p content.data.code - | grep -qx budget_exceeded ||
    fail "in-2 was served after the run's budget was spent: $(printf '%s' "$second" | head -c 400)"
n=$(grep -c '^final ' "$REC")
[ "$n" = 1 ] || fail "the agent finished $n requests, want 1 (in-2 reached it)"

# 3. A budget per task, for the requests a workflow routes by intent.
write_wf "$T/wf.yaml" <<'YAML'
agents:
  a:
    cmd: [@TR@, --record, @REC@, --plan, @T@/p.json]
routes:
  "*": a
limits:
  task_budget: {tokens: 100}
YAML
rm -f "$LOG" "$REC"
serve_start "$T/wf.yaml" --log "$LOG" --control "$T/ctl.sock"
input in-3 >&8
wait_for '[ "$(grep -c . "$OUT")" -ge 1 ]' 20 || fail "no answer to in-3"
first=$(sed -n 1p "$OUT")
printf '%s\n' "$first" | "$Q" -p content.data.code - | grep -qx budget_exceeded ||
    fail "in-3's reply went over its task's budget, yet: $(printf '%s' "$first" | head -c 400)"
"$CORRAL" tasks -S "$T/ctl.sock" --json >"$T/tasks.json" 2>&1 ||
    fail "corral tasks: $(cat "$T/tasks.json")"
grep -q '"id":"in-3","status":"failed"' "$T/tasks.json" &&
    grep -q '"code":"budget_exceeded"' "$T/tasks.json" ||
    fail "the task registry should have in-3 failed with budget_exceeded: $(cat "$T/tasks.json")"
serve_eof
corral_wait 20
expect_rc 0
expect_no_leftovers 5
exit 0
