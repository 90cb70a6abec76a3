#!/bin/sh
# kill -9 of a mid-tree agent: its subtree is stopped, deepest first, its
# parent gets an error envelope (child_failed), nothing of the subtree
# survives, and the parent carries on.
#
#   root -> mid-1 -> leaf -> leaf      (depths 0..3)
#                 -> leaf -> leaf
# mid-1 is killed (its host pid from corral's -v log).  Children are
# restart: temporary by default, so mid-1 stays down.  root waits for
# $T/checked before it finalizes, so the checks run while corral runs.
. "$(dirname "$0")/tree-lib.sh"

tree_wf mid leaf
cat >"$T/root.json" <<JSON
{"steps": [
  {"spawn": {"agent": "mid", "plan": {"steps": [
    {"spawn": {"agent": "leaf", "count": 2, "plan": {"steps": [
      {"spawn": {"agent": "leaf", "plan": {"steps": [{"hang": true}]}}},
      {"hang": true}]}}},
    {"await": true}]}}},
  {"await": true},
  {"wait_file": "$T/checked"}]}
JSON

corral_start run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
wait_rec_count "task leaf-" 4 10
wait_rec_count "spawned leaf-" 2 10
note_supervisor
mid=$(rec_pid mid-1)
[ -n "$mid" ] && [ "$mid" = "$(log_pid mid-1)" ] ||
    fail "the log says mid-1 is pid $(log_pid mid-1), it says it is $mid"
sub=
for id in $(rec_children mid-1) $(for c in $(rec_children mid-1); do rec_children $c; done); do
	p=$(rec_pid $id)
	pid_alive "$p" || fail "$id (pid $p) should be running"
	sub="$sub $p"
done
[ "$(echo $sub | wc -w)" = 4 ] || fail "expected 4 leaves under mid-1: $(cat "$REC")"
kill -9 "$mid"

# root hears of it: an error envelope for mid-1's task.
wait_rec "result root mid-1 fail child_failed child mid-1 killed by signal KILL before finishing its task" 10
tid=$(audit_get -w ev=spawn_child -w agent=mid-1 -p id)
r=$(audit_get -w ev=child_result -w env.corral.child=mid-1 -p agent -p env.corral.spawn \
    -p env.corral.ok -p env.content.type -p env.content.data.code -p env.trace.parents.0)
[ "$r" = "root	$tid	false	error	child_failed	$tid" ] ||
    fail "root should get a child_failed error envelope for task $tid, got: $r"
# Nothing of the subtree survives, and nothing is left unreaped.
expect_gone $mid $sub
expect_no_zombies
pid_alive "$(rec_pid root)" || fail "root should still be running"
# Deepest first: each depth-2 leaf starts stopping only after its own
# child (depth 3) has stopped.
for p in $(rec_children mid-1); do
	set -- $p "$(rec_children $p)"
	a=$(audit_get -w ev=state -w agent="$2" -w to=STOPPED -p seq)
	b=$(audit_get -w ev=state -w agent="$1" -w to=STOPPING -p seq)
	[ -n "$a" ] && [ -n "$b" ] && [ "$a" -lt "$b" ] ||
	    fail "$2 (depth 3, seq $a STOPPED) should stop before its parent $1 (seq $b STOPPING)"
done
log_has "agent mid-1: BUSY -> STOPPED (killed by signal KILL)" ||
    log_has "agent mid-1: READY -> STOPPED (killed by signal KILL)" ||
    fail "no log line for mid-1's death"
# mid-1 is a temporary child: it is not restarted.
[ "$(rec_count "start mid-1 ")" = 1 ] || fail "mid-1 should not be restarted"

: >"$T/checked"
corral_wait 10
expect_rc 0
[ "$(out_get content.text)" = "root(!mid-1:child_failed)" ] ||
    fail "root should finish with mid-1's failure: $(out_get content.text)"
expect_clean
exit 0
