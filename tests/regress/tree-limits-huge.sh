#!/bin/sh
# Spawn limits larger than any count corral keeps (found by
# tests/fuzz/fuzz_engine.c): {depth: 4294967297} and {children: 1e300}
# narrow nothing.  They were converted to unsigned int as they were, which
# is undefined behaviour (UBSan stops there); on x86-64 4294967297 became
# a depth limit of 1, and node-1's own child was refused.
. "$(dirname "$0")/tree-lib.sh"

write_wf "$T/wf.yaml" <<'YAML'
agents:
  root:
    cmd: [@TR@, --record, @REC@, --plan, @T@/root.json]
  node:
    cmd: [@TR@, --record, @REC@]
    autostart: false
routes:
  "*": root
YAML
cat >"$T/root.json" <<JSON
{"steps": [
  {"spawn": {"agent": "node", "limits": {"depth": 4294967297, "children": 1e300},
             "plan": {"steps": [{"spawn": {"agent": "node"}}, {"await": true}]}}},
  {"await": true}]}
JSON

corral_run 10 run "$T/wf.yaml" --goal go --log "$LOG" --output json
expect_rc 0
[ -z "$(rec_lines "spawn_error ")" ] ||
    fail "no spawn should be refused: $(rec_lines "spawn_error ")"
[ "$(out_get content.text)" = "root(node-1(node-2))" ] ||
    fail "node-1 should have its child: $(out_get content.text)"
expect_clean
exit 0
