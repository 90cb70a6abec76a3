#!/bin/sh
# What ends a child's task, and what its parent gets:
#   node-1  2 progress envelopes, then finalize   -> ok, the finalize
#   node-2  1 progress envelope, then exit 0      -> ok, its last envelope
#   node-3  exit 0 without a word                 -> child_failed
#   node-4  1 progress envelope, then exit 3      -> child_failed
#   node-5  an envelope with content.type error   -> ok false, that envelope
#   node-6  never answers, spawn timeout 0.3 s    -> timeout
# Progress envelopes never reach the parent: one child_result per task.
. "$(dirname "$0")/tree-lib.sh"

tree_wf node
cat >"$T/root.json" <<'JSON'
{"steps": [
  {"spawn": {"agent": "node", "plan": {"steps": [
    {"progress": {"tokens": 1, "count": 2}}, {"finalize": {"text": "fin"}}]}}},
  {"spawn": {"agent": "node", "plan": {"steps": [
    {"progress": {"tokens": 1, "count": 1}}, {"exit": 0}]}}},
  {"spawn": {"agent": "node", "plan": {"steps": [{"exit": 0}]}}},
  {"spawn": {"agent": "node", "plan": {"steps": [
    {"progress": {"tokens": 1, "count": 1}}, {"exit": 3}]}}},
  {"spawn": {"agent": "node", "plan": {"steps": [
    {"finalize": {"text": "bad", "error": true}}]}}},
  {"spawn": {"agent": "node", "timeout": 0.3, "plan": {"steps": [{"hang": true}]}}},
  {"await": true}]}
JSON

corral_run 20 run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
expect_rc 0

# check CHILD "ok type intent code category text": the child_result (a
# sh pattern).
check() {
	n=$(audit_count -w ev=child_result -w env.corral.child="$1")
	[ "$n" = 1 ] || fail "expected one child_result for $1, got $n"
	tid=$(audit_get -w ev=spawn_child -w agent="$1" -p id)
	r=$(audit_get -w ev=child_result -w env.corral.child="$1" -p env.corral.ok \
	    -p env.content.type -p env.intent -p env.content.data.code \
	    -p env.content.data.category -p env.content.text)
	case $r in
	$2) ;;
	*) fail "child_result of $1: expected '$2' (ok, content.type, intent, code, category, text), got '$r'" ;;
	esac
	[ "$(audit_get -w ev=child_result -w env.corral.child="$1" -p env.corral.spawn -p env.trace.parents.0)" = "$tid	$tid" ] ||
	    fail "child_result of $1 should name and link to its task $tid"
}
check node-1 "true	json	finalize	-	-	fin"
check node-2 "true	text	analyze	-	-	working"
check node-3 "false	error	route	child_failed	INTERNAL	child node-3 exit status 0 before finishing its task"
check node-4 "false	error	route	child_failed	INTERNAL	child node-4 exit status 3 before finishing its task"
check node-5 "false	error	finalize	-	-	bad"
check node-6 "false	error	route	timeout	TIMEOUT	agent node-6 did not reply within 0.3*s; it has answered nothing yet; hint: *adapter: exec*"
# The parent got them too, and finished with all six.
for c in node-1 node-2; do
	rec_lines "result root $c ok " | grep -q . || fail "root did not get $c's result"
done
for c in node-3 node-4 node-5 node-6; do
	rec_lines "result root $c fail " | grep -q . || fail "root did not get $c's failure"
done
[ "$(out_get content.data.results.5.child)" != - ] ||
    fail "root should finish with six results: $(out_get content.text)"
# The timed-out child was stopped: its task is over.
audit_count -w ev=state -w agent=node-6 -w to=STOPPING -w reason="task failed" >/dev/null ||
    fail "node-6 should be stopped once its task timed out"
expect_clean
exit 0
