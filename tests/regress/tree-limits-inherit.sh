#!/bin/sh
# A depth limit bounds the whole subtree it was given to, not just the
# agent it was given to.
#
# 1. root spawns a node with limits {depth: 2}; that node's descendants
#    try to go 4 levels deep.  Read as an absolute depth (the way corral
#    compares it for the node itself) the limit stops depth 3; read as
#    relative to the node it stops depth 4.  Either way no agent of that
#    subtree may reach depth 4.
# 2. The same for a workflow entry's children: {depth: 2} on root, whose
#    children are of another entry (examples/research-tree relies on it:
#    coordinator children: {depth: 2}).
# The global tree_depth (default 8) is far away.
. "$(dirname "$0")/tree-lib.sh"

write_wf "$T/wf.yaml" <<'YAML'
agents:
  root:
    cmd: [@TR@, --record, @REC@, --plan, @T@/root.json]
  capped:
    cmd: [@TR@, --record, @REC@, --plan, @T@/root2.json]
    children: {depth: 2}
  node:
    cmd: [@TR@, --record, @REC@]
    autostart: false
routes:
  plan: root
  analyze: capped
YAML
# A chain of nodes, each spawning the next: 4 levels below its spawner.
chain='{"spawn": {"agent": "node", "plan": {"steps": [
  {"spawn": {"agent": "node", "plan": {"steps": [
    {"spawn": {"agent": "node", "plan": {"steps": [
      {"spawn": {"agent": "node"}}, {"await": true}]}}},
    {"await": true}]}}},
  {"await": true}]}}}'
cat >"$T/root.json" <<JSON
{"steps": [
  {"spawn": {"agent": "node", "limits": {"depth": 2}, "plan": {"steps": [
    $chain, {"await": true}]}}},
  {"await": true}]}
JSON
cat >"$T/root2.json" <<JSON
{"steps": [$chain, {"await": true}]}
JSON

serve_start "$T/wf.yaml" --log "$LOG" -v
env='{"protocol":"multiagent-1.0","role":"user","task":"t","content":{"type":"text","text":"x"},"intent":'
echo "$env\"plan\"}" >&8
echo "$env\"analyze\"}" >&8
wait_lines 2
serve_eof
corral_wait 10

deep=$(audit_get -w ev=edge -w depth=4 -p agent -p parent | tr '\t\n' '< ')
depth3=$(audit_get -w ev=edge -w depth=3 -p agent -p parent | tr '\t\n' '< ')
[ -z "$deep" ] ||
    fail "limits {depth: 2} on a spawn, or children: {depth: 2} on an entry, should keep the subtree above depth 4; agents at depth 4 (child<parent): $deep; at depth 3: $depth3"
# The refusals name the limit.
rec_lines "spawn_error " | grep -q "4002 depth limit" ||
    fail "expected spawns refused with 4002 depth limit: $(rec_lines spawn_error)"
expect_clean
exit 0
