#!/bin/sh
# A depth-3 tree completes and every result reaches its parent.
#
# root spawns node-1, node-1 spawns leaf-2 (depth 2), and once node-1 is
# done root spawns node-3.  Each task envelope carries
# corral {kind: task, parent} and trace.parents naming the parent's
# current request; each result reaches the parent once, marked
# corral {kind: child_result, child, spawn, ok: true}, its trace.parents
# linking to the task (leaf-2 leaves trace.parents out: corral fills it
# in).  Finished children are stopped; the run's result is root's
# finalize built from its children's results.
. "$(dirname "$0")/tree-lib.sh"

tree_wf node leaf
cat >"$T/root.json" <<'JSON'
{"steps": [
  {"spawn": {"agent": "node", "plan": {"steps": [
    {"spawn": {"agent": "leaf", "plan": {"steps": [
      {"finalize": {"text": "leaf", "no_parents": true}}]}}},
    {"await": true}]}}},
  {"await": true},
  {"spawn": {"agent": "node"}},
  {"await": true}]}
JSON

corral_run 20 run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
expect_rc 0

# The run's result: root's finalize, built from both children's results.
text=$(out_get content.text)
[ "$text" = "root(node-1(leaf),node-3)" ] ||
    fail "expected the result text root(node-1(leaf),node-3), got '$text'"
[ "$(out_get content.data.results.0.child)" = node-1 ] &&
    [ "$(out_get content.data.results.1.child)" = node-3 ] &&
    [ "$(out_get content.data.results.2)" = - ] ||
    fail "root should have exactly the results of node-1 and node-3: $(out_get content.data.results)"

# The tree as the audit log has it: parents and depths.
for e in "node-1 root 1" "leaf-2 node-1 2" "node-3 root 1"; do
	set -- $e
	audit_count -w ev=edge -w agent="$1" -w parent="$2" -w depth="$3" >/dev/null ||
	    fail "no audit edge $1 -> parent $2 at depth $3: $(audit_get -w ev=edge -p agent -p parent -p depth)"
	audit_count -w ev=spawn -w agent="$1" -w parent="$2" -w depth="$3" >/dev/null ||
	    fail "no audit spawn of $1 (parent $2, depth $3)"
done
[ "$(audit_count -w ev=spawn_child)" = 3 ] ||
    fail "expected 3 spawn_child events, got $(audit_count -w ev=spawn_child)"

goal=$(audit_get -w ev=goal -p id)
# child parent task-id: the spawn_child event names the task; the spawn
# response the parent got names the same task.
for e in "node-1 root" "leaf-2 node-1" "node-3 root"; do
	set -- $e
	tid=$(audit_get -w ev=spawn_child -w agent="$1" -p id)
	[ -n "$tid" ] || fail "no spawn_child event for $1"
	rec_has "spawned $2 $1 $tid" ||
	    fail "$2's spawn response should name $1 and task $tid: $(rec_lines "spawned $2")"
	# The task: marked as one, from the parent, and delivered to the child.
	audit_count -w ev=task -w agent="$1" -w id="$tid" -w env.corral.kind=task \
	    -w env.corral.parent="$2" -w env.trace.id="$tid" >/dev/null ||
	    fail "the task of $1 is not marked corral {kind: task, parent: $2}: $(audit_get -w ev=task -w agent="$1" -p env.corral)"
	rec_has "task $1 $tid $2" || fail "$1 did not receive its task $tid from $2"
	# Its lineage: the parent's request at the time of the spawn.
	case $2 in
	root) want=$goal ;;
	*) want=$(audit_get -w ev=spawn_child -w agent="$2" -p id) ;;
	esac
	[ "$(audit_get -w ev=task -w agent="$1" -p env.trace.parents.0)" = "$want" ] ||
	    fail "the task of $1 should have trace.parents [$want], has $(audit_get -w ev=task -w agent="$1" -p env.trace.parents)"
	# The result: exactly one child_result, to the parent, linked to the task.
	n=$(audit_count -w ev=child_result -w env.corral.child="$1")
	[ "$n" = 1 ] || fail "expected one child_result from $1, got $n"
	r=$(audit_get -w ev=child_result -w env.corral.child="$1" -p agent -p id \
	    -p env.corral.kind -p env.corral.spawn -p env.corral.ok -p env.trace.parents.0 -p env.intent)
	[ "$r" = "$2	$tid	child_result	$tid	true	$tid	finalize" ] ||
	    fail "child_result of $1: expected '$2 $tid child_result $tid true $tid finalize' (to, task, kind, spawn, ok, trace.parents, intent), got '$r'"
	rec_lines "result $2 $1 ok - " | grep -q . ||
	    fail "$2 did not receive $1's result: $(rec_lines "result $2")"
	# Done children are stopped: "task finished", then STOPPED.
	audit_count -w ev=state -w agent="$1" -w to=STOPPING -w reason="task finished" >/dev/null ||
	    fail "$1 was not stopped after its result"
	audit_count -w ev=state -w agent="$1" -w to=STOPPED >/dev/null ||
	    fail "$1 never reached STOPPED"
done
rec_has "result node-1 leaf-2 ok - leaf" ||
    fail "node-1 should have got leaf-2's result 'leaf': $(rec_lines "result node-1")"
# Progress never reaches the parent; only the result does.
[ "$(audit_count -w ev=child_result)" = 3 ] ||
    fail "expected 3 child_result events in all, got $(audit_count -w ev=child_result)"
[ "$(audit_get -w ev=child_result -w env.corral.child=leaf-2 -p env.trace.id)" != - ] ||
    fail "leaf-2's result has no trace.id"

expect_clean
exit 0
