#!/bin/sh
# No descendant of a tree outlives what ends it.
#
# Part 1, while the run goes on (root waits for $T/checked):
#   crash-1 spawns leaf-2 (never finishes), then exits 3: leaf-2 is
#           stopped ("its parent exited") and root gets child_failed
#   fin-3   spawns kept-4 (keep: true, never finishes), then finalizes:
#           fin-3 is stopped after its result and kept-4 with it
#   mid-5   spawns crash-6, which spawns lleaf-7 and exits 3; mid-5 gets
#           child_failed and finalizes, and is STOPPED while lleaf-7
#           lingers in its stop until $T/go
#   Every one of them is forgotten (agent_unregistered) once its whole
#   subtree is gone, and not before: crash-1 and crash-6 too, though
#   they ended before their children.
# Part 2, SIGINT of corral mid-tree (pid namespace, then
#   CORRAL_NO_PIDNS=1): root -> mid-1 -> leaf-2, where mid-1 and leaf-2
#   each fork a grandchild that calls setsid() and leaves their pipes;
#   corral exits 130 and every process of the tree is gone, grandchildren
#   included.
# Part 3, kill -9 of corral (pid namespace only): the same tree dies with
#   corral's supervisor, the init of its namespace.
. "$(dirname "$0")/tree-lib.sh"

tree_wf crash fin leaf kept mid \
    "lleaf=stop: {grace: $((60 * SLOW))s, timeout: 5s}"
cat >"$T/root.json" <<JSON
{"steps": [
  {"spawn": {"agent": "crash", "plan": {"steps": [
    {"spawn": {"agent": "leaf", "plan": {"steps": [{"hang": true}]}}},
    {"exit": 3}]}}},
  {"await": true},
  {"spawn": {"agent": "fin", "plan": {"steps": [
    {"spawn": {"agent": "kept", "keep": true, "plan": {"steps": [{"hang": true}]}}},
    {"finalize": {"text": "fin"}}]}}},
  {"await": true},
  {"spawn": {"agent": "mid", "plan": {"steps": [
    {"spawn": {"agent": "crash", "plan": {"steps": [
      {"spawn": {"agent": "lleaf", "plan": {"steps": [
        {"linger": "$T/go"}, {"hang": true}]}}},
      {"exit": 3}]}}},
    {"await": true}]}}},
  {"await": true},
  {"wait_file": "$T/checked"}]}
JSON
corral_start run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
wait_rec_count "result root " 3 10
note_supervisor
rec_has "result root crash-1 fail child_failed child crash-1 exit status 3 before finishing its task" ||
    fail "root should get child_failed for crash-1: $(rec_lines "result root crash-1")"
rec_has "result root fin-3 ok - fin" || fail "root should get fin-3's result: $(rec_lines "result root fin-3")"
expect_gone "$(rec_pid crash-1)" "$(rec_pid leaf-2)" "$(rec_pid fin-3)" "$(rec_pid kept-4)"
audit_count -w ev=state -w agent=leaf-2 -w to=STOPPING -w reason="its parent exited" >/dev/null ||
    fail "leaf-2 should be stopped because its parent exited"
audit_count -w ev=state -w agent=kept-4 -w to=STOPPING >/dev/null ||
    fail "kept-4 should be stopped with its parent fin-3"
pid_alive "$(rec_pid root)" || fail "root should still be running"
# mid-5 is STOPPED, lleaf-7 still in its stop: nothing of that subtree
# is forgotten yet.
wait_for 'audit_count -w ev=state -w agent=mid-5 -w to=STOPPED >/dev/null' 10 ||
    fail "mid-5 should stop after its result"
wait_rec "eof lleaf-7"
audit_count -w ev=state -w agent=lleaf-7 -w to=STOPPED >/dev/null &&
    fail "lleaf-7 stopped before $T/go: the test cannot hold it"
for a in mid-5 crash-6 lleaf-7; do
	audit_count -w ev=map_event -w agent=$a -w event.type=agent_unregistered >/dev/null &&
	    fail "$a was forgotten while lleaf-7 still runs"
done
: >"$T/go"
for a in crash-1 leaf-2 fin-3 kept-4 lleaf-7 crash-6 mid-5; do
	_a=$a
	wait_for 'audit_count -w ev=map_event -w agent=$_a -w event.type=agent_unregistered >/dev/null' 10 ||
	    fail "$a should be forgotten once its subtree is gone: no agent_unregistered"
done
expect_gone "$(rec_pid crash-6)" "$(rec_pid lleaf-7)"
expect_no_zombies
: >"$T/checked"
corral_wait 10
expect_rc 0
expect_clean

# Parts 2 and 3.
cat >"$T/root.json" <<'JSON'
{"steps": [
  {"spawn": {"agent": "crash", "plan": {"steps": [
    {"grandchild": true},
    {"spawn": {"agent": "leaf", "plan": {"steps": [{"grandchild": true}, {"hang": true}]}}},
    {"await": true}]}}},
  {"await": true}]}
JSON
for mode in sigint-pidns sigint-nopidns kill9-pidns; do
	if [ $mode = sigint-nopidns ]; then
		export CORRAL_NO_PIDNS=1
	else
		unset CORRAL_NO_PIDNS
	fi
	rm -f "$REC" "$LOG"
	corral_start run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
	wait_rec_count "grandchild " 2 10
	wait_rec_count "task leaf-" 1 10
	[ $mode = sigint-nopidns ] || need_pidns
	note_supervisor
	pids=$(tree_pids)
	[ "$(echo $pids | wc -w)" = 5 ] ||
	    fail "$mode: expected 5 processes (3 agents, 2 grandchildren): $(cat "$REC")"
	for p in $pids; do
		pid_alive "$p" || fail "$mode: process $p should be running"
	done
	if [ $mode = kill9-pidns ]; then
		kill -9 "$CORRAL_PID"
		corral_wait 10
		expect_rc 137
	else
		kill -INT "$CORRAL_PID"
		corral_wait 10
		expect_rc 130
	fi
	expect_gone $pids
	[ -z "$SUP" ] || expect_gone "$SUP"
	expect_clean
	note "$mode: the tree and its detached grandchildren are gone"
done
exit 0
