#!/bin/sh
# The real MAP TypeScript SDK (@multi-agent-protocol/sdk, pinned in
# tests/map/package.json) against corral, every frame validated against
# the SDK's own schemas (tests/map/lib): a ClientConnection over the
# control socket connects, lists agents, subscribes and gets the events
# in order, spawns an agent, sends it a message, makes a request of it,
# replays, draws the graph, stops it; it lists, creates, joins, leaves
# and sends to scopes (topics), finds an agent by capability, and lists,
# loads and closes a session its request named, and creates, assigns
# and lists a task (corral tasks shows it too), and sees a request of the
# workflow's own as a task and in the session it names; an
# AgentConnection inside corral
# (tests/map/agent.mjs) registers and spawns a child of its own (kept
# after its task, so the client can ask it too); an agent
# on nothing but the SDK's own stdio transport (tests/map/sdk-only-agent.mjs:
# it reads no envelopes) serves the workflow's requests in MAP mode, and a
# client's request; an agent whose AgentConnection is on the control
# socket (tests/map/socket-agent.mjs) connects with connect() as the SDK
# always does (map/agents/register included), subscribes, spawns, gets
# its child's event and result, and disconnects with nothing after.
#
# The SDK is installed into the build tree (tests/map/install.sh); when
# node or the npm registry is out of reach the test is SKIPPED.
. "$(dirname "$0")/ctl-lib.sh"

command -v node >/dev/null 2>&1 || skip "node is not installed"
MAP="${TESTDIR:-$(dirname "$0")/..}/map"
MAP_SDK_PREFIX=${MAP_SDK_PREFIX:-$(dirname "$CORRAL")/map-sdk}
export MAP_SDK_PREFIX
out=$(sh "$MAP/install.sh" 2>&1)
case $? in
0) ;;
77) skip "$(printf '%s\n' "$out" | grep SKIPPED | head -n 1)" ;;
*) fail "installing the SDK: $out" ;;
esac

cat >"$T/wf.yaml" <<YAML
agents:
  echo:
    cmd: [$TA]
    role: worker
    capabilities: [{name: echoing, version: "1", actions: [echo]}]
    subscribe: [news]
  sdk-agent:
    cmd: [node, $MAP/agent.mjs, --spawn, "sdk-leaf:leaf work", --keep, --report, $T/agents.txt]
    autostart: false
    ready: handshake
    env: {MAP_SDK_PREFIX: $MAP_SDK_PREFIX}
  sdk-leaf:
    cmd: [node, $MAP/agent.mjs, --report, $T/agents.txt]
    autostart: false
    ready: handshake
    env: {MAP_SDK_PREFIX: $MAP_SDK_PREFIX}
  pure:
    cmd: [node, $MAP/sdk-only-agent.mjs, --report, $T/pure.txt]
    ready: handshake
    env: {MAP_SDK_PREFIX: $MAP_SDK_PREFIX}
  sock:
    cmd: [node, $MAP/socket-agent.mjs, --report, $T/sock.txt, --spawn, echo]
    ready: handshake
    tools: [spawn, list]
    env: {MAP_SDK_PREFIX: $MAP_SDK_PREFIX}
routes:
  analyze: pure
  "*": echo
YAML
serve_start "$T/wf.yaml" -v --control "$SOCK" --log "$T/audit.ndjson"
wait_sock
ms=$((10000 * SLOW))

# The workflow's own history, then a client's whole scenario.
node "$MAP/client.mjs" --socket "$SOCK" --timeout "$ms" --wait "$ms" \
    connect list subscribe:agent_registered,agent_state_changed spawn:echo \
    wait:agent_registered:@spawned wait:agent_state_changed:@spawned \
    stop:@spawned wait-state:@spawned:stopped replay:all unsubscribe \
    disconnect >"$T/c1" 2>&1 || fail "client (events in order):
$(cat "$T/c1")"
grep -q "^ok replay:all [0-9]* events" "$T/c1" || fail "client: $(cat "$T/c1")"
node "$MAP/client.mjs" --socket "$SOCK" --timeout "$ms" --wait "$ms" \
    --scenario full --spawn-name echo --tree-name sdk-agent >"$T/c2" 2>&1 ||
    fail "client (full scenario):
$(cat "$T/c2")"
grep -q "^[0-9]* passed, 0 failed$" "$T/c2" || fail "client: $(tail -n 3 "$T/c2")"
for s in "connect" "spawn:echo" "wait:agent_registered:@spawned" "send:@spawned" \
    "request:@spawned" "spawn:sdk-agent" "wait-child:@spawned" "graph" "stop:@spawned" \
    "replay:after-first" "frames"; do
	grep -q "^ok $s" "$T/c2" || fail "client: no 'ok $s':
$(cat "$T/c2")"
done
note "$(tail -n 1 "$T/c2")"

# Scopes (topics) and capabilities: the workflow's subscription, a new
# scope joined and left, a send to each, an agent spawned into it (and a
# spawn into a scope that does not exist refused), discovery by
# capability.
node "$MAP/client.mjs" --socket "$SOCK" --timeout "$ms" --wait "$ms" \
    connect scope-list:news scope-members:news:echo scope-send:news:echo \
    scope-create:room scope-join:room:echo scope-members:room:echo \
    scope-send:room:echo scope-leave:room:echo scope-members:room:echo:no \
    scope-missing spawn-scope:echo:room scope-members:room:@spawned \
    scope-send:room:@spawned stop:@spawned spawn-scope-missing:echo \
    find-capability:echoing:echo session-request:echo:s-1 \
    session-list:s-1 session-load:s-1:echo session-close:s-1 \
    task-create:t-1 task-assign:t-1:echo task-list:t-1:completed \
    task-filter:echo disconnect >"$T/c3" 2>&1 ||
    fail "client (scopes, capabilities, sessions, tasks):
$(cat "$T/c3")"
grep -q "^[0-9]* passed, 0 failed$" "$T/c3" || fail "client: $(tail -n 3 "$T/c3")"
# corral tasks shows the registry: the task and the session's request.
ctl tasks
[ "$CRC" = 0 ] || fail "corral tasks: $(cat "$T/ctl.err")"
grep -Eq '^t-1 +completed +echo +client:[0-9]+ ' "$T/ctl.out" ||
    fail "corral tasks: no completed t-1 of echo: $(cat "$T/ctl.out")"
ctl tasks --json --status completed
jq -e '.tasks | length >= 2 and all(.status == "completed")' "$T/ctl.out" >/dev/null ||
    fail "corral tasks --json --status completed: $(cat "$T/ctl.out")"
# The collaboration bus's metric names, beside corral's.
ctl metrics
ctl_has 'agent_messages_total{source="echo",dest="corral",type="out"} '
ctl_has 'agent_messages_total{source="corral",dest="echo",type="in"} '
ctl_has 'agent_queue_size{agent_id="echo"} 0'
ctl_has 'agent_request_duration_bucket{le="+Inf",source="*",dest="*"} '
ctl_has '# TYPE agent_errors_total counter' 

# The SDK agents: registered, spawned, answered, and left cleanly.
wait_for '[ "$(grep -c "ok exit" "$T/agents.txt" 2>/dev/null)" = 2 ]' 20 ||
    fail "both SDK agents should have exited: $(cat "$T/agents.txt" 2>/dev/null)"
grep -q "FAIL" "$T/agents.txt" && fail "an SDK agent failed a check: $(grep FAIL "$T/agents.txt")"
grep -q "agent.mjs\[sdk-agent-[0-9]*\]: ok connect id=sdk-agent-" "$T/agents.txt" ||
    fail "sdk-agent did not register: $(cat "$T/agents.txt")"
grep -q "agent.mjs\[sdk-agent-[0-9]*\]: ok spawn child=sdk-leaf-" "$T/agents.txt" ||
    fail "sdk-agent did not spawn: $(cat "$T/agents.txt")"
grep -q "agent.mjs\[sdk-leaf-[0-9]*\]: ok connect id=sdk-leaf-" "$T/agents.txt" ||
    fail "sdk-leaf did not register: $(cat "$T/agents.txt")"
# MAP mode: a workflow request to the SDK-only agent, and a client's.
echo '{"protocol":"multiagent-1.0","role":"user","intent":"analyze","task":"look closer","content":{"type":"text","text":"x"},"trace":{"id":"in-1"},"session":"s-job"}' >&8
wait_for 'grep -q "\"in-1\"" "$OUT"' 20 || fail "no result for in-1 from the SDK-only agent"
# in-1 was routed by intent inside its job: it is a task of the registry
# too, and the session it names has its request and result.
node "$MAP/client.mjs" --socket "$SOCK" --timeout "$ms" --wait "$ms" \
    connect task-list:in-1:completed:pure session-load:s-job:pure:stdin \
    disconnect >"$T/c4" 2>&1 ||
    fail "client (a workflow's request as a task, its session):
$(cat "$T/c4")"
ctl tasks --json
jq -e '.tasks[] | select(.id == "in-1") | .meta.corral.kind == "input" and
    .meta.corral.intent == "analyze" and .title == "look closer" and
    .meta.corral.session == "s-job" and
    .meta.corral.result == "sdk-only-agent pure: look closer"' "$T/ctl.out" >/dev/null ||
    fail "corral tasks --json: in-1 is not a completed task of the workflow: $(cat "$T/ctl.out")"
jq -e '._meta.corral.budgets | .perTask and .total and (.perAgent | type == "array")' "$T/ctl.out" >/dev/null ||
    fail "corral tasks --json: no budgets: $(cat "$T/ctl.out")"
grep '"in-1"' "$OUT" | grep -q '"intent":"finalize","task":"look closer","content":{"type":"text","text":"sdk-only-agent pure: look closer"}' ||
    fail "in-1's result: $(cat "$OUT")"
"$CORRAL" send -S "$SOCK" --wait pure "are you there" >"$T/reply" 2>"$T/reply.err" ||
    fail "a client's request of the SDK-only agent: $(cat "$T/reply" "$T/reply.err")"
grep -q '"text":"sdk-only-agent pure: are you there"' "$T/reply" || fail "reply: $(cat "$T/reply")"
grep -q "sdk-only\[pure\]: ok message in-1 from corral (a request)" "$T/pure.txt" ||
    fail "the SDK-only agent: $(cat "$T/pure.txt")"
grep -q FAIL "$T/pure.txt" && fail "the SDK-only agent failed: $(cat "$T/pure.txt")"

# An agent whose AgentConnection is on the control socket: connect()
# (map/connect with its credential, then map/agents/register) makes it
# ready; it sees its child's event and result; nothing comes after the
# disconnect answer (the SDK would warn of an event it no longer expects).
wait_for 'grep -q "ok warnings\|FAIL" "$T/sock.txt" 2>/dev/null' 20 ||
    fail "the socket agent did not finish: $(cat "$T/sock.txt" 2>/dev/null)"
grep -q FAIL "$T/sock.txt" && fail "the socket agent: $(cat "$T/sock.txt")"
for s in "connect id=sock principal=sock" "subscribe" "spawn child=echo-" \
    "event agent_registered echo-" "result from echo-" "disconnect" "warnings none"; do
	grep -q "^socket-agent\[sock\]: ok $s" "$T/sock.txt" ||
	    fail "the socket agent: no 'ok $s': $(cat "$T/sock.txt")"
done
grep -q "agent sock: INITIALIZING -> READY (map/agents/register, on the control socket)" "$ERR" ||
    fail "its register on the socket should make sock ready: $(grep 'agent sock' "$ERR")"

serve_eof
corral_wait 20
expect_rc 0
exit 0
