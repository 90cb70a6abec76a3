#!/bin/sh
# A child whose last envelope -- its finalize, or an error envelope --
# takes its subtree over budget: corral stays up, the parent gets exactly
# one result for that task (budget_exceeded), and the run finishes.
#
# Three children with limits {budget: {tokens: 100}} or {cost: 0.01}:
#   fin   finalizes reporting 150 tokens
#   err   sends an error envelope reporting 150 tokens
#   usd   finalizes reporting $0.02
. "$(dirname "$0")/tree-lib.sh"

tree_wf node
cat >"$T/root.json" <<'JSON'
{"steps": [
  {"spawn": {"agent": "node", "task": "fin", "limits": {"budget": {"tokens": 100}},
    "plan": {"steps": [{"finalize": {"text": "fin", "tokens": 150}}]}}},
  {"await": true},
  {"spawn": {"agent": "node", "task": "err", "limits": {"budget": {"tokens": 100}},
    "plan": {"steps": [{"finalize": {"text": "err", "tokens": 150, "error": true}}]}}},
  {"await": true},
  {"spawn": {"agent": "node", "task": "usd", "limits": {"budget": {"cost": 0.01}},
    "plan": {"steps": [{"finalize": {"text": "usd", "usd": 0.02}}]}}},
  {"await": true}]}
JSON

corral_run 10 run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
[ "$RC" = 0 ] ||
    fail "corral should finish the run (exit 0) when a child's finalize goes over its budget; exit status $RC$(grep -m1 -E 'double free|AddressSanitizer|Segmentation' "$ERR" | sed 's/^/: /')"
for c in node-1 node-2 node-3; do
	n=$(audit_count -w ev=child_result -w env.corral.child=$c)
	[ "$n" = 1 ] || fail "root should get exactly one result for $c, got $n"
	r=$(audit_get -w ev=child_result -w env.corral.child=$c -p env.corral.ok -p env.content.data.code)
	[ "$r" = "false	budget_exceeded" ] ||
	    fail "the result for $c should be a budget_exceeded error, got: $r"
done
[ "$(out_get content.data.results.2.ok)" = false ] ||
    fail "root should finish with the three failed results: $(out_get content.text)"
expect_clean
exit 0
