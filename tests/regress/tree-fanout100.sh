#!/bin/sh
# 100 children under one parent, all alive at once, all complete and all
# their results are gathered.
#
# limits: {tree_children: 100, max_agents: 128}.  root spawns 100 children
# that wait for a "go" message; the 101st spawn is refused (fan-out
# limit, 4000); one map/send to {children: true} reaches all 100; each
# finalizes; root gets 100 child_results, one per child, and finalizes.
. "$(dirname "$0")/tree-lib.sh"

tree_wf -r "timeout: $((60 * SLOW))s" -l 'tree_children: 100' \
    -l 'max_agents: 128' kid
cat >"$T/root.json" <<'JSON'
{"steps": [
  {"spawn": {"agent": "kid", "count": 100,
             "plan": {"steps": [{"wait_text": "go"}]}}},
  {"spawn": {"agent": "kid"}},
  {"send": {"to": {"children": true}, "text": "go"}},
  {"await": true}]}
JSON

corral_start run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
wait_rec_count "spawned root " 100 30
note_supervisor
corral_wait 30
expect_rc 0

[ "$(rec_count "spawned root ")" = 100 ] ||
    fail "expected 100 children spawned, got $(rec_count "spawned root ")"
rec_has "spawn_error root 4000 fan-out limit: root already has 100 children alive, the limit is 100" ||
    fail "the 101st spawn should be refused with 4000 (fan-out limit): $(rec_lines spawn_error)"
rec_lines "send_ok root 100 " | grep -q . ||
    fail "map/send to {children: true} should reach 100 children: $(rec_lines send_)"
n=$(rec_count "message kid-")
[ "$n" = 100 ] || fail "expected 100 children to get the message, $n did"

# 100 results, one per child, all ok, all to root.
n=$(audit_count -w ev=child_result -w agent=root -w env.corral.ok=true)
[ "$n" = 100 ] || fail "expected 100 ok child_results for root, got $n"
n=$(audit_get -w ev=child_result -p env.corral.child | sort -u | grep -c .)
[ "$n" = 100 ] || fail "expected child_results from 100 distinct children, got $n"
n=$(audit_get -w ev=child_result -p env.corral.spawn | sort -u | grep -c .)
[ "$n" = 100 ] || fail "expected child_results for 100 distinct tasks, got $n"
n=$(rec_lines "result root " | awk '$4 == "ok"' | grep -c .)
[ "$n" = 100 ] || fail "root should have received 100 ok results, got $n"
# ... and the run's result lists them.
[ "$(out_get content.data.results.99.ok)" = true ] &&
    [ "$(out_get content.data.results.100)" = - ] ||
    fail "root's result should list exactly 100 results"
[ "$(out_get content.data.spawn_errors.0.code)" = 4000 ] ||
    fail "root's result should list the refused spawn (4000)"
# 101 processes ran: root and its 100 children, each one started once.
n=$(rec_count "start ")
[ "$n" = 101 ] || fail "expected 101 agent starts, got $n"
n=$(audit_count -w ev=state -w to=STOPPED)
[ "$n" = 101 ] || fail "expected 101 agents STOPPED, got $n"

expect_clean
exit 0
