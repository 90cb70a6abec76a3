#!/bin/sh
# keep, visible, and map/agents/stop, under corral serve.
#
# 1. analyze (routed to the worker entry, which autostart: false leaves
#    empty) fails: no agent serves it.
# 2. plan: root spawns worker-1 (visible, keep), worker-2 (hidden, keep),
#    worker-3 (neither) and node-4 (keep; it spawns node-5, which never
#    finishes).  All four report; worker-3 is stopped after its result,
#    the kept ones stay, node-5 with its parent.  root then sends
#    {children: true}: the kept children get it.
# 3. analyze, three times: served by worker-1, the visible child, never
#    by the hidden worker-2.
# 4. plan with a plan of its own: root stops node-4 with map/agents/stop;
#    node-4 and node-5 are gone.
# 5. EOF: the kept children stop with the run.
. "$(dirname "$0")/tree-lib.sh"

tree_wf -R 'plan: root' -R 'analyze: worker' worker node
cat >"$T/root.json" <<JSON
{"steps": [
  {"spawn": {"agent": "worker", "visible": true, "keep": true,
             "plan": {"steps": [{"finalize": {"text": "visible"}}]}}},
  {"spawn": {"agent": "worker", "keep": true,
             "plan": {"steps": [{"finalize": {"text": "hidden"}}]}}},
  {"spawn": {"agent": "worker", "plan": {"steps": [{"finalize": {"text": "gone"}}]}}},
  {"spawn": {"agent": "node", "keep": true, "plan": {"steps": [
    {"spawn": {"agent": "node", "plan": {"steps": [{"hang": true}]}}},
    {"finalize": {"text": "kept"}}]}}},
  {"await": true},
  {"wait_file": "$T/step2"},
  {"send": {"to": {"children": true}, "text": "hello"}}]}
JSON
req() {
	printf '{"protocol":"multiagent-1.0","role":"user","intent":"%s","task":"%s","content":{"type":"text","text":"x"}%s}\n' \
	    "$1" "$2" "${3:-}" >&8
}
# line N PATH: a value of the Nth result.
line() {
	sed -n "${1}p" "$OUT" | "$Q" -p "$2" -
}

serve_start "$T/wf.yaml" --log "$LOG" -v
note_supervisor
req analyze first
wait_lines 1
[ "$(line 1 content.data.code)" = no_agent ] ||
    fail "analyze with no worker should fail: $(sed -n 1p "$OUT")"

req plan spawn
wait_rec_count "result root " 4 10
w1=worker-1 w2=worker-2 w3=worker-3 n4=node-4
n5=$(rec_children node-4)
# node-4 had node-5's id before its result went up, but node-5 records
# its own start when it gets there: on a slow machine, after root's 4th
# result.
wait_rec_count "start $n5 " 1 10
for c in "$w1 visible" "$w2 hidden" "$w3 gone" "$n4 kept"; do
	set -- $c
	rec_has "result root $1 ok - $2" || fail "root should get $1's result '$2': $(rec_lines "result root $1 ")"
done
# Not kept: stopped after its result.  Kept: still there, and so is
# node-4's own child.
expect_gone "$(rec_pid $w3)"
for c in $w1 $w2 $n4 $n5; do
	pid_alive "$(rec_pid $c)" || fail "$c should still run (kept, or the child of a kept agent)"
done
audit_count -w ev=state -w agent=$w3 -w to=STOPPING -w reason="task finished" >/dev/null ||
    fail "$w3 should be stopped after its task"
: >"$T/step2"
wait_lines 2
rec_has "send_ok root 3 [\"$w1\",\"$w2\",\"$n4\"]" ||
    fail "root's {children: true} should reach its 3 kept children: $(rec_lines "send_")"
for c in $w1 $w2 $n4; do
	# (Written to it before root's result; it records it when it reads.)
	wait_rec "message $c root hello"
done

# The visible child serves the worker route; the hidden one never does.
req analyze a1
req analyze a2
req analyze a3
wait_lines 5
for n in 3 4 5; do
	[ "$(line $n agent.id)" = "$w1" ] ||
	    fail "analyze should be served by the visible child $w1, result $n: $(sed -n "${n}p" "$OUT" | cut -c1-300)"
done

# map/agents/stop of a descendant stops it and its subtree.
req plan stop ',"inputs":{"parameters":{"plan":{"steps":[{"stop":"node-4"},{"finalize":{"text":"stopped"}}]}}}'
wait_lines 6
rec_has "stop_ok root $n4" || fail "root should be allowed to stop $n4: $(rec_lines "stop_")"
expect_gone "$(rec_pid $n4)" "$(rec_pid $n5)"
audit_count -w ev=state -w agent=$n4 -w to=STOPPED >/dev/null || fail "$n4 should be STOPPED"
pid_alive "$(rec_pid $w1)" && pid_alive "$(rec_pid $w2)" ||
    fail "stopping $n4 should leave the other kept children alone"
expect_no_zombies

serve_eof
corral_wait 10
expect_rc 0
expect_clean
exit 0
