#!/bin/sh
# A child done with its task stops after its own children, and for that
# reason, even when the run's shutdown or a sibling's restart reaches it
# first.
#
# Part 1: root spawns node-1, node-1 spawns leaf-2 and awaits its
# result.  leaf-2 finalizes and is stopped ("task finished": stdin closed)
# but lingers after EOF until $T/go exists (its stop grace is long).
# node-1 gets the result and finalizes: its stop waits for leaf-2.  root
# finalizes: the run is over, and the shutdown waits for leaf-2 as well.
# Then $T/go: leaf-2 exits, and node-1 must stop for "task finished",
# after leaf-2.  (corral used to let the shutdown's next pick, made as
# leaf-2 reached STOPPED, stop node-1 "for shutdown" before its waiting
# stop was due.)
#
# Part 2: under sup (children: {strategy: one_for_all}), done spawns g
# (which lingers after EOF until $T/go2) and finalizes: its stop waits
# for g.  Then its sibling crash (restart: transient) exits 3 once: the
# strategy restarts the running siblings, but done is leaving for good
# and is not one of them.  Once $T/go2 lets g go, done stops for "task
# finished", started once.  (corral used to ask done to restart too: it
# logged a strategy restart, and the restart's reason replaced "task
# finished".)
. "$(dirname "$0")/tree-lib.sh"

tree_wf node "leaf=stop: {grace: $((60 * SLOW))s, timeout: 5s}"
cat >"$T/root.json" <<JSON
{"steps": [
  {"spawn": {"agent": "node", "plan": {"steps": [
    {"spawn": {"agent": "leaf", "plan": {"steps": [
      {"linger": "$T/go"},
      {"finalize": {"text": "leaf"}}]}}},
    {"await": true}]}}},
  {"await": true}]}
JSON

corral_start run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
# The run's result is in: corral is shutting down, with leaf-2's stop
# still under way (stdin closed, the process lingering).
wait_for 'audit_count -w ev=job_end >/dev/null 2>&1' 20 ||
    fail "the run did not end: $(cat "$REC")"
node=$(rec_id node)
leaf=$(rec_id leaf)
[ -n "$node" ] && [ -n "$leaf" ] || fail "the tree was not built: $(cat "$REC")"
rec_has "final $node $node(leaf)" || fail "$node did not finalize: $(cat "$REC")"
wait_rec "eof $leaf"
audit_count -w ev=state -w agent="$leaf" -w to=STOPPING -w reason="task finished" >/dev/null ||
    fail "$leaf should be stopping after its result: $(audit_get -w ev=state -w agent="$leaf" -p to -p reason)"
audit_count -w ev=state -w agent="$leaf" -w to=STOPPED >/dev/null &&
    fail "$leaf stopped before $T/go: the test cannot hold it"
# node-1's stop waits for leaf-2.
audit_count -w ev=state -w agent="$node" -w to=STOPPING >/dev/null &&
    fail "$node began stopping while its child $leaf still runs: $(audit_get -w ev=state -w agent="$node" -p to -p reason)"

: >"$T/go"
corral_wait 20
expect_rc 0
[ "$(out_get content.text)" = "root($node(leaf))" ] ||
    fail "expected the result root($node(leaf)), got '$(out_get content.text)'"
r=$(audit_get -w ev=state -w agent="$node" -w to=STOPPING -p reason)
[ "$r" = "task finished" ] ||
    fail "$node should stop for 'task finished' (its stop was waiting for $leaf), got: $r"
child=$(log_line "agent $leaf: STOPPING -> STOPPED")
parent=$(log_line "agent $node: READY -> STOPPING")
[ "$child" -gt 0 ] && [ "$parent" -gt "$child" ] ||
    fail "$node should begin stopping after $leaf stopped (log lines $parent, $child)"
audit_count -w ev=state -w agent="$node" -w to=STOPPED >/dev/null ||
    fail "$node never reached STOPPED"
expect_clean

# Part 2.
: >"$REC"
rm -f "$LOG"
tree_wf 'sup=children: {strategy: one_for_all}' done 'crash=restart: transient' \
    "g=stop: {grace: $((60 * SLOW))s, timeout: 5s}"
cat >"$T/root.json" <<JSON
{"steps": [
  {"spawn": {"agent": "sup", "plan": {"steps": [
    {"spawn": {"agent": "done", "plan": {"steps": [
      {"spawn": {"agent": "g", "plan": {"steps": [
        {"linger": "$T/go2"},
        {"finalize": {"text": "g"}}]}}},
      {"await": true}]}}},
    {"spawn": {"agent": "crash", "plan": {"steps": [
      {"wait_file": "$T/crash"},
      {"crash_starts": 1}]}}},
    {"await": true}]}}},
  {"await": true}]}
JSON
corral_start run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
wait_rec_count "final done-" 1 20
wait_rec_count "eof g-" 1 10
wait_rec_count "task crash-" 1 10
sup=$(rec_id sup)
done=$(rec_id done)
crash=$(rec_id crash)
g=$(rec_id g)
: >"$T/crash"
wait_rec_count "task $crash " 2 20
audit_count -w ev=state -w agent="$done" -w to=STOPPING >/dev/null &&
    fail "$done began stopping while its child $g still runs"
: >"$T/go2"
corral_wait 20
expect_rc 0
[ "$(out_get content.text)" = "root($sup($done(g),$crash))" ] ||
    fail "expected the result root($sup($done(g),$crash)), got '$(out_get content.text)'"
n=$(audit_count -w ev=strategy_restart -w agent="$done")
[ "$n" = 0 ] || fail "$done, done and waiting for $g, should not be restarted with $crash: $n strategy restarts"
r=$(audit_get -w ev=state -w agent="$done" -w to=STOPPING -p reason)
[ "$r" = "task finished" ] ||
    fail "$done should stop for 'task finished' (its stop was waiting for $g), got: $r"
[ "$(rec_count "start $done ")" = 1 ] ||
    fail "$done should start once, started $(rec_count "start $done ") times"
[ "$(rec_count "start $crash ")" = 2 ] ||
    fail "$crash should start twice (one crash), started $(rec_count "start $crash ") times"

expect_clean
exit 0
