#!/bin/sh
# Agents that clients started, and that finished, are kept in a bounded
# history: 160 clients each connect, spawn an agent and hang up (which
# stops their agent).  Then:
#   - map/agents/list (corral ps --json) has the workflow's agent and the
#     last 64 to finish, not 160 (corral kept every one before: 2000
#     of them took corral from 8.5 to 20.7 MB, and a list answer to 1 MB);
#   - each one freed had its agent_unregistered event, after its stop;
#   - the audit log still has all 160 (corral tree --log draws them), and
#     the live tree (corral tree) the agents corral still has;
#   - an agent a client started that has a child of its own is not freed
#     before its child, which keeps its parent.
. "$(dirname "$0")/ctl-lib.sh"

TR="$TOOLS/treeagent"
[ -x "$TR" ] || skip "no treeagent at $TR"
cat >"$T/wf.yaml" <<YAML
agents:
  base:
    cmd: [cat]
  worker:
    cmd: [cat]
    autostart: false
  boss:
    cmd: [$TR, --boot, $T/boss.json]
    autostart: false
  node:
    cmd: [$TR]
    autostart: false
    timeout: 1h
routes:
  "*": base
YAML
cat >"$T/boss.json" <<'JSON'
{"steps": [{"spawn": {"agent": "node", "plan": {"steps": [{"hang": true}]}}},
           {"hang": true}]}
JSON
serve_start "$T/wf.yaml" -v --control "$SOCK" --log "$T/audit"
wait_sock
SPAWN='{"jsonrpc":"2.0","id":2,"method":"map/agents/spawn","params":{"name":"worker"}}'

# A client's agent with a child, kept by its client (orphan policy).
"$CP" -s "$SOCK" -l '{"jsonrpc":"2.0","id":1,"method":"map/connect","params":{"protocolVersion":1,"disconnectPolicy":{"agentBehavior":"orphan"}}}' \
    -l '{"jsonrpc":"2.0","id":2,"method":"map/agents/spawn","params":{"name":"boss"}}' -e 2 -w 20 >"$T/boss.out" 2>&1 ||
    fail "spawn boss: $(cat "$T/boss.out")"
boss=$(grep '"id":2,' "$T/boss.out" | jq -r .result.agent.id)
wait_for '[ -n "$(map_state node-2)" ]' 20 || fail "$boss did not spawn node-2"
rss0=$(sup_rss)

# 160 clients that spawn and leave, 80 at a time.
for round in 1 2; do
	"$CP" -s "$SOCK" -n 80 -l "$(CONNECT)" -l "$SPAWN" -e 2 -w 30 -q 2>"$T/round.err" ||
	    fail "round $round of 80 spawns: $(cat "$T/round.err")"
done
wait_for '[ "$(grep -c "agent worker-[0-9]*: [A-Z]* -> STOPPED" "$ERR")" -ge 160 ]' 60 ||
    fail "160 spawned agents should have stopped: $(grep -c "agent worker-[0-9]*: [A-Z]* -> STOPPED" "$ERR")"
wait_for '[ "$(grep -c "\"ev\":\"map_event\".*\"type\":\"agent_unregistered\"" "$T/audit")" -ge 96 ]' 20 ||
    fail "expected 96 agents freed: $(grep -c '"type":"agent_unregistered"' "$T/audit")"
rss1=$(sup_rss)
note "160 finished agents: supervisor RSS $rss0 -> $rss1 kB"

"$CORRAL" ps -S "$SOCK" --json >"$T/ps" 2>"$T/ps.err" || fail "corral ps: $(cat "$T/ps.err")"
workers=$(jq '[.agents[] | select(.name == "worker")] | length' "$T/ps")
[ "$workers" = 64 ] || fail "corral keeps $workers finished agents, the history is 64"
jq -e '[.agents[] | select(.name == "worker") | .state == "stopped"] | all' "$T/ps" >/dev/null ||
    fail "the finished agents kept should be stopped: $(jq -c '[.agents[].state]' "$T/ps")"
# The last 64 to stop are kept, the first 96 are gone.
last=$(grep -o 'agent worker-[0-9]*: [A-Z]* -> STOPPED' "$ERR" | tail -n 64 | sed 's/agent \(worker-[0-9]*\):.*/\1/' | sort | tr '\n' ' ')
kept=$(jq -r '.agents[] | select(.name == "worker") | .id' "$T/ps" | sort | tr '\n' ' ')
[ "$last" = "$kept" ] || fail "the history should keep the last 64: kept $kept"
n=$(grep -c '"type":"agent_unregistered","timestamp":[0-9]*,"source":"worker-' "$T/audit")
[ "$n" = 96 ] || fail "expected 96 agent_unregistered events of workers, got $n"
# The family still stands, and the trees agree with the agents.
[ "$(map_state "$boss")" = idle ] || [ "$(map_state "$boss")" = busy ] ||
    fail "$boss should still run: $(map_state "$boss")"
jq -e --arg b "$boss" '.agents[] | select(.id == "node-2") | .parent == $b' "$T/ps" >/dev/null ||
    fail "node-2 should keep its parent $boss"
"$CORRAL" tree -S "$SOCK" >"$T/tree" 2>"$T/tree.err" || fail "corral tree: $(cat "$T/tree.err")"
[ "$(grep -c 'worker-' "$T/tree")" = 64 ] || fail "corral tree should show the 64 kept: $(grep -c worker- "$T/tree")"
grep -q "^  *.-- node-2 " "$T/tree" || grep -q "node-2" "$T/tree" ||
    fail "corral tree lost node-2: $(cat "$T/tree")"

serve_eof
corral_wait 20
expect_rc 0
"$CORRAL" tree --log "$T/audit" >"$T/logtree" 2>"$T/logtree.err" ||
    fail "corral tree --log: $(cat "$T/logtree.err")"
[ "$(grep -c 'worker-' "$T/logtree")" = 160 ] ||
    fail "the audit log should still have all 160: $(grep -c worker- "$T/logtree")"
exit 0
