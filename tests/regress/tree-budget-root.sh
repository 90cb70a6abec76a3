#!/bin/sh
# Budgets that corral accepts in the workflow but must also enforce:
#
# 1. budget: {tokens: 100} on the entry of a workflow agent (root, not a
#    spawned child): root's subtree reports 120 tokens, then root tries
#    to spawn again.  Either root's subtree is stopped for its budget
#    (audit budget_exceeded for root) or the spawn is refused (4002,
#    "budget: the subtree of root ...").
# 2. limits: {budget: {time: 1s}}: a run whose tree never finishes ends
#    with budget_exceeded after about 1 s (limits.deadline, a few seconds,
#    is only a backstop).
# 3. budget: {time: 1s} on root's entry, the same tree: root's subtree is
#    stopped for its budget (audit budget_exceeded for root).
. "$(dirname "$0")/tree-lib.sh"

tree_wf -r 'budget: {tokens: 100}' node
cat >"$T/root.json" <<'JSON'
{"steps": [
  {"spawn": {"agent": "node", "plan": {"steps": [
    {"progress": {"tokens": 60, "count": 2}}, {"finalize": {"text": "spent"}}]}}},
  {"await": true},
  {"spawn": {"agent": "node"}},
  {"await": true}]}
JSON
corral_run 10 run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
bad=
if ! audit_count -w ev=budget_exceeded -w agent=root >/dev/null &&
    ! rec_lines "spawn_error root 4002 budget: the subtree of root" | grep -q .; then
	bad="root's entry budget: {tokens: 100} was not enforced: its subtree used 120 tokens and root could still spawn ($(rec_lines "spawned root" | tr '\n' ';'))"
fi
expect_clean

rm -f "$REC" "$LOG"
dl=$((3 + 3 * SLOW))	# the backstop; the 1 s budget must end the run well before
tree_wf -l 'budget: {time: 1s}' -l "deadline: ${dl}s" node
cat >"$T/root.json" <<'JSON'
{"steps": [
  {"spawn": {"agent": "node", "plan": {"steps": [{"hang": true}]}}},
  {"await": true}]}
JSON
s=$(now)
corral_run 15 run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
took=$(elapsed "$s")
code=$(out_get content.data.code)
if [ "$code" != budget_exceeded ] || ! fcmp "$took" "<" "$((dl - 1))"; then
	bad="$bad${bad:+; }limits.budget.time: 1s was not enforced: the run ended after ${took}s with '$code' (exit status $RC)"
fi
expect_clean

# 3. budget: {time: 1s} on a workflow agent's entry.
rm -f "$REC" "$LOG"
tree_wf -r 'budget: {time: 1s}' -l "deadline: ${dl}s" node
s=$(now)
corral_run 15 run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
took=$(elapsed "$s")
if ! audit_count -w ev=budget_exceeded -w agent=root >/dev/null; then
	bad="$bad${bad:+; }root's entry budget: {time: 1s} was not enforced: the run ended after ${took}s with '$(out_get content.data.code)'"
fi
expect_clean
[ -z "$bad" ] || fail "$bad"
exit 0
