#!/bin/sh
# Restart strategies for children, and escalation.
#
# root spawns three supervisors, each with children of restart: transient
# that wait for "go" (a restarted child gets its task again):
#   sall  (children: {strategy: one_for_all})   wa, wa, wa
#   srest (children: {strategy: rest_for_one})  wr, wr, wr
#   sesc  (one_for_one, the default)            wo, and we, which crashes at
#         every start, restart: {policy: transient, max: 1}
# The test kills -9 the second wa and the second wr:
#   one_for_all   all three wa restart (new pids)
#   rest_for_one  the second and third wr restart, the first keeps its pid
#   we            restarts once, then exceeds its intensity: FAILED, and
#                 sesc gets a child_failed error; wo is left alone
# Then $T/go lets the supervisors send "go"; everything finishes.
. "$(dirname "$0")/tree-lib.sh"

tree_wf 'sall=children: {strategy: one_for_all}' \
    'srest=children: {strategy: rest_for_one}' sesc \
    'wa=restart: transient; stop: {grace: 200ms, timeout: 500ms}' \
    'wr=restart: transient; stop: {grace: 200ms, timeout: 500ms}' \
    'wo=restart: transient' 'we=restart: {policy: transient, max: 1, within: 60s}'
wait='{"steps": [{"wait_text": "go"}]}'
sup() {
	printf '{"spawn": {"agent": "%s", "plan": {"steps": [%s,
	  {"wait_file": "%s"},
	  {"send": {"to": {"children": true}, "text": "go"}},
	  {"await": true}]}}}' "$1" "$2" "$T/go"
}
cat >"$T/root.json" <<JSON
{"steps": [
  $(sup sall "{\"spawn\": {\"agent\": \"wa\", \"count\": 3, \"plan\": $wait}}"),
  $(sup srest "{\"spawn\": {\"agent\": \"wr\", \"count\": 3, \"plan\": $wait}}"),
  $(sup sesc "{\"spawn\": {\"agent\": \"wo\", \"plan\": $wait}},
      {\"spawn\": {\"agent\": \"we\", \"plan\": {\"steps\": [{\"exit\": 3}]}}}"),
  {"await": true}]}
JSON

corral_start run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
wait_rec_count "task wa-" 3 10
wait_rec_count "task wr-" 3 10
wait_rec_count "task wo-" 1 10
# sesc spawns we after wo: wait for its start too.
wait_rec_count "start we-" 1 10
note_supervisor
sall=$(rec_id sall)
srest=$(rec_id srest)
sesc=$(rec_id sesc)
set -- $(rec_children "$sall")
wa1=$1 wa2=$2 wa3=$3
set -- $(rec_children "$srest")
wr1=$1 wr2=$2 wr3=$3
wo=$(rec_id wo)
we=$(rec_id we)
[ -n "$wa3" ] && [ -n "$wr3" ] && [ -n "$we" ] || fail "the tree was not built: $(cat "$REC")"
old_wa="$(rec_pid "$wa1") $(rec_pid "$wa2") $(rec_pid "$wa3")"
old_wr="$(rec_pid "$wr2") $(rec_pid "$wr3")"
wr1pid=$(rec_pid "$wr1")
wopid=$(rec_pid "$wo")
kill -9 "$(rec_pid "$wa2")" "$(rec_pid "$wr2")"

# Restarts: every wa, and wr2 and wr3, start a second time and get their
# task again.  we exceeds its intensity and sesc hears of it.
for c in $wa1 $wa2 $wa3 $wr2 $wr3; do
	wait_rec_count "task $c " 2 10
done
# (The error names the last exit: the task fails as the child exits for
# good, just before the intensity check marks it FAILED.)
wait_rec_count "result $sesc $we fail child_failed " 1 10
r=$(rec_lines "result $sesc $we ")
[ "$r" = "result $sesc $we fail child_failed child $we exit status 3 before finishing its task" ] ||
    fail "$sesc should get child_failed naming $we's last exit, got: $r"
expect_gone $old_wa $old_wr
# The killed ones were restarted by their policy, the others by the strategy.
for c in $wa1 $wa3; do
	audit_count -w ev=strategy_restart -w agent="$c" -w parent="$sall" -w strategy=one_for_all >/dev/null ||
	    fail "no strategy_restart (one_for_all) audit event for $c"
	log_has "agent $sall: one_for_all restarts $c with $wa2" ||
	    fail "no log line 'agent $sall: one_for_all restarts $c with $wa2'"
done
audit_count -w ev=strategy_restart -w agent="$wr3" -w parent="$srest" -w strategy=rest_for_one >/dev/null ||
    fail "no strategy_restart (rest_for_one) audit event for $wr3"
log_has "agent $srest: rest_for_one restarts $wr3 with $wr2" ||
    fail "no log line 'agent $srest: rest_for_one restarts $wr3 with $wr2'"
for c in $wa1 $wa2 $wa3 $wr2 $wr3; do
	audit_count -w ev=restart -w agent="$c" >/dev/null || fail "no restart audit event for $c"
done
# rest_for_one left the earlier sibling alone; one_for_one left wo alone.
[ "$(rec_count "start $wr1 ")" = 1 ] && pid_alive "$wr1pid" ||
    fail "$wr1 (started before $wr2) should keep running under rest_for_one"
[ "$(rec_count "start $wo ")" = 1 ] && pid_alive "$wopid" ||
    fail "$wo should not be restarted when its sibling $we crashes (one_for_one)"
n=$(audit_count -w ev=strategy_restart -w parent="$sesc")
[ "$n" = 0 ] || fail "one_for_one should restart no sibling, got $n strategy restarts"
# Escalation: we ran twice (one restart), then FAILED.
[ "$(rec_count "start $we ")" = 2 ] ||
    fail "$we should start twice (restart max 1), started $(rec_count "start $we ") times"
audit_count -w ev=state -w agent="$we" -w to=FAILED >/dev/null || fail "$we should end FAILED"
log_has "agent $we: failed (restart intensity exceeded); escalating to $sesc" ||
    fail "no escalation log line for $we"
r=$(audit_get -w ev=child_result -w env.corral.child="$we" -p agent -p env.corral.ok -p env.content.data.code)
[ "$r" = "$sesc	false	child_failed" ] || fail "$sesc should get child_failed for $we, got: $r"
expect_no_zombies

: >"$T/go"
corral_wait 15
expect_rc 0
[ "$(out_get content.data.results.2.ok)" = true ] &&
    [ "$(out_get content.data.results.3)" = - ] ||
    fail "root should finish with its three supervisors' results: $(out_get content.text)"
for c in $wa1 $wa2 $wa3 $wr1 $wr2 $wr3 $wo; do
	audit_count -w ev=child_result -w env.corral.child="$c" -w env.corral.ok=true >/dev/null ||
	    fail "$c should finish its task after the restarts"
done
expect_clean
exit 0
