#!/bin/sh
# A spawn's limits narrow the child's entry, never widen it: the entry
# "capped" has budget: {tokens: 50}; root spawns it with limits {budget:
# {tokens: 1000}} and it reports 40 + 40 tokens.  The entry's 50 still
# applies: its task ends with budget_exceeded.  (limits.depth and
# limits.children already work this way: the smaller value wins.)
. "$(dirname "$0")/tree-lib.sh"

tree_wf 'capped=budget: {tokens: 50}'
cat >"$T/root.json" <<JSON
{"steps": [
  {"spawn": {"agent": "capped", "limits": {"budget": {"tokens": 1000}}, "timeout": $((5 * SLOW)),
    "plan": {"steps": [{"progress": {"tokens": 40, "count": 2}}, {"hang": true}]}}},
  {"await": true}]}
JSON
corral_run 20 run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
expect_rc 0
r=$(rec_lines "result root capped-1 ")
[ "$r" = "result root capped-1 fail budget_exceeded budget exceeded: 80 tokens used, the budget is 50" ] ||
    fail "the entry's budget (50 tokens) should still apply to capped-1 spawned with a budget of 1000; root got: $r"
expect_clean
exit 0
