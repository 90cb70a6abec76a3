#!/bin/sh
# A child that has delivered its result no longer takes a place under its
# parent's fan-out limit, even while its own subtree is still stopping.
#
# root (children: {max: 1}) spawns done-1, which spawns slow-2 (it ignores
# EOF and SIGTERM, so stopping it takes stop.grace + stop.timeout, 1.5 s)
# and finalizes at once.  As soon as root has done-1's result it spawns
# again: that spawn must succeed.
. "$(dirname "$0")/tree-lib.sh"

tree_wf -r 'children: {max: 1}' done \
    'slow=stop: {grace: 500ms, timeout: 1s}'
cat >"$T/root.json" <<'JSON'
{"steps": [
  {"spawn": {"agent": "done", "plan": {"steps": [
    {"spawn": {"agent": "slow", "plan": {"steps": [{"deaf": true}]}}},
    {"finalize": {"text": "done"}}]}}},
  {"await": true},
  {"spawn": {"agent": "done"}},
  {"await": true}]}
JSON
corral_run 20 run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
expect_rc 0
rec_has "result root done-1 ok - done" || fail "root should get done-1's result"
[ -z "$(rec_lines "spawn_error root ")" ] ||
    fail "root's spawn after done-1's result should succeed; got: $(rec_lines "spawn_error root ")"
[ "$(out_get content.data.results.1.ok)" = true ] ||
    fail "root should finish with two results: $(out_get content.text)"
expect_clean
exit 0
