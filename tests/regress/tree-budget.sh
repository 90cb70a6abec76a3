#!/bin/sh
# Budgets stop a subtree: the parent gets an error envelope
# (budget_exceeded) for the child whose budget ran out, and every process
# of that child's subtree is gone while the rest of the run goes on.
#
# Run 1 (root waits for $T/checked before it finalizes, so the test looks
# at the processes while corral still runs):
#   tok   spawn limits {budget: {tokens: 100}}; its child reports 60 + 60
#         tokens in trace.cost: the child's tokens count against tok's
#         subtree, tok's task ends with budget_exceeded, both are stopped
#   capped  the entry's own budget: {tokens: 50}; it reports 40 + 40
#   slow  spawn limits {budget: {time: SLOW}} (1 s times SLOW: long enough
#         to spawn its child); it and its child never finish: after that
#         its task ends with budget_exceeded
#   fine  spawn limits {budget: {tokens: 100}}, reports 30 + 30: ok
# Run 2: the workflow's limits {budget: {tokens: 100}}: the run ends with
# budget_exceeded (exit status 1).
. "$(dirname "$0")/tree-lib.sh"

tree_wf node 'capped=budget: {tokens: 50}'
cat >"$T/root.json" <<JSON
{"steps": [
  {"spawn": {"agent": "node", "task": "tok", "limits": {"budget": {"tokens": 100}},
    "plan": {"steps": [
      {"spawn": {"agent": "node", "task": "tok-child", "plan": {"steps": [
        {"progress": {"tokens": 60, "count": 2}}, {"hang": true}]}}},
      {"hang": true}]}}},
  {"spawn": {"agent": "capped", "plan": {"steps": [
    {"progress": {"tokens": 40, "count": 2}}, {"hang": true}]}}},
  {"spawn": {"agent": "node", "task": "slow", "limits": {"budget": {"time": $SLOW}},
    "plan": {"steps": [
      {"spawn": {"agent": "node", "task": "slow-child", "plan": {"steps": [{"hang": true}]}}},
      {"hang": true}]}}},
  {"spawn": {"agent": "node", "task": "fine", "limits": {"budget": {"tokens": 100}},
    "plan": {"steps": [{"progress": {"tokens": 30, "count": 2}},
                       {"finalize": {"text": "fine"}}]}}},
  {"await": true},
  {"wait_file": "$T/checked"}]}
JSON

corral_start run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
wait_rec_count "result root " 4 10
note_supervisor
tok=node-1
capped=$(rec_id capped)
slow=$(rec_children root | sed -n 3p)
fine=$(rec_children root | sed -n 4p)
tokc=$(rec_children "$tok")
slowc=$(rec_children "$slow")
[ -n "$tokc" ] && [ -n "$slowc" ] && [ -n "$capped" ] ||
    fail "the tree was not built: $(cat "$REC")"

# The errors the parent got.
r=$(rec_lines "result root $tok ")
[ "$r" = "result root $tok fail budget_exceeded budget exceeded: 120 tokens used, the budget is 100" ] ||
    fail "root should get budget_exceeded for $tok (120 of 100 tokens), got: $r"
r=$(rec_lines "result root $capped ")
[ "$r" = "result root $capped fail budget_exceeded budget exceeded: 80 tokens used, the budget is 50" ] ||
    fail "root should get budget_exceeded for $capped (80 of 50 tokens, the entry's budget), got: $r"
r=$(rec_lines "result root $slow ")
[ "$r" = "result root $slow fail budget_exceeded budget exceeded: ${SLOW}s of wall time" ] ||
    fail "root should get budget_exceeded for $slow (${SLOW} s), got: $r"
rec_has "result root $fine ok - fine" ||
    fail "$fine stayed within its budget and should finish: $(rec_lines "result root $fine ")"
for c in $tok $capped $slow; do
	r=$(audit_get -w ev=child_result -w env.corral.child="$c" -p env.corral.ok \
	    -p env.content.type -p env.content.data.code -p env.content.data.category \
	    -p env.role -p env.corral.spawn)
	tid=$(audit_get -w ev=spawn_child -w agent="$c" -p id)
	[ "$r" = "false	error	budget_exceeded	REJECTED	system	$tid" ] ||
	    fail "the child_result for $c should be a budget_exceeded error envelope for task $tid, got: $r"
	log_has "agent $c: budget exceeded: " ||
	    fail "no log line 'agent $c: budget exceeded: ...'"
	audit_count -w ev=budget_exceeded -w agent="$c" >/dev/null ||
	    fail "no budget_exceeded audit event for $c"
done
# The time budget ran out after SLOW seconds, not much later.  The clock
# starts at the loop time of the spawn, before the spawn_child event is
# written (after the fork and exec: 74 ms once under load), so the lower
# bound allows 5% of it.
t0=$(audit_get -w ev=spawn_child -w agent="$slow" -p t)
t1=$(audit_get -w ev=budget_exceeded -w agent="$slow" -p t)
fcmp "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" ">=" "$(awk -v s="$SLOW" 'BEGIN { print s * 0.95 }')" &&
    fcmp "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "<" "$((1 + 3 * SLOW))" ||
    fail "the ${SLOW} s budget of $slow ran out after $t1 - $t0 s"

# Every process of those subtrees is gone while corral and root run on.
expect_gone $(rec_pid "$tok") $(rec_pid "$tokc") $(rec_pid "$capped") \
    $(rec_pid "$slow") $(rec_pid "$slowc") $(rec_pid "$fine")
pid_alive "$(rec_pid root)" || fail "root should still be running"
for c in $tokc $slowc; do
	audit_count -w ev=state -w agent="$c" -w to=STOPPING -w reason="its parent is stopping" >/dev/null ||
	    fail "$c should have been stopped with its parent"
done
expect_no_zombies

: >"$T/checked"
corral_wait 10
expect_rc 0
[ "$(out_get content.data.results.3.child)" != - ] &&
    [ "$(out_get content.data.results.4)" = - ] ||
    fail "root should finish with its 4 results: $(out_get content.text)"
expect_clean

# Run 2: the run's own budget.
rm -f "$REC" "$LOG"
tree_wf -l 'budget: {tokens: 100}' node
cat >"$T/root.json" <<'JSON'
{"steps": [
  {"spawn": {"agent": "node", "plan": {"steps": [
    {"progress": {"tokens": 60, "count": 2}}, {"hang": true}]}}},
  {"await": true}]}
JSON
corral_run 10 run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
expect_rc 1
r=$(out_get content.data.code)
[ "$r" = budget_exceeded ] ||
    fail "the run should end with budget_exceeded, got: $(head -c 400 "$OUT")"
log_has "the run's budget of 100 tokens is spent" ||
    fail "no log line about the run's budget"
expect_clean
exit 0
