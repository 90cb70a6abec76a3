#!/bin/sh
# map/agents/list after an agent reported the largest token counts and
# costs a double holds (found by tests/fuzz/fuzz_engine.c).
#
# Each node reports 1.7976931348623157e308 tokens and dollars (DBL_MAX,
# valid JSON); they add up in root's subtree.  root lists the agents after
# each.  corral wrote the totals with 15 digits, 1.79769313486232e308,
# which no JSON reader takes (it is above DBL_MAX): root could not read
# the first response.  The second time root's totals are infinite, which
# JSON cannot hold: root's entry could not be built and was left out.
. "$(dirname "$0")/tree-lib.sh"

write_wf "$T/wf.yaml" <<'YAML'
agents:
  root:
    cmd: [@TR@, --record, @REC@, --plan, @T@/root.json]
  node:
    cmd: [@TR@, --record, @REC@, --plan, @T@/node.json]
    autostart: false
routes:
  "*": root
YAML
cat >"$T/root.json" <<JSON
{"steps": [
  {"spawn": {"agent": "node", "keep": true}}, {"await": true}, {"list": true},
  {"spawn": {"agent": "node", "keep": true}}, {"await": true}, {"list": true}]}
JSON
cat >"$T/node.json" <<JSON
{"steps": [
  {"progress": {"tokens": 1.7976931348623157e308, "usd": 1.7976931348623157e308}},
  {"finalize": {"text": "big"}}]}
JSON

corral_run 10 run "$T/wf.yaml" --goal go --log "$LOG" --output json
expect_rc 0
[ "$(rec_lines "list root ")" = "list root root,node-1
list root root,node-1,node-2" ] ||
    fail "root should list itself and its children twice: $(rec_lines "list root ")"
expect_clean
exit 0
