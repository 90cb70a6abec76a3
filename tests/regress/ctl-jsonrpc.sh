#!/bin/sh
# JSON-RPC 2.0 as its specification says, on the control socket and on an
# agent's pipe, and the control methods' answers that clients rely on.
#
# - Every example of the specification's section 7 (its methods do not
#   exist in corral, so where the spec shows a result corral answers
#   -32601) gets the spec's answer on the socket: an invalid request
#   without an id is -32600 with id null, a batch an array of answers in
#   order, a batch of notifications nothing, a parse error -32700 with id
#   null.  The same examples written by an agent on its stdout: the same
#   answers, but for the one line that is not JSON-RPC on a pipe (invalid
#   JSON that does not begin with '['), an envelope there: it gets an
#   invalid_json notice.
# - The spec's mixed batch with corral's own methods: results and errors
#   in one array; positional params are -32602, after the method is found
#   (an unknown method with them is -32601); valid JSON that is not an
#   object or an array is -32600; a missing agentId is -32602.  A batch's
#   answers stop at 1 MiB (the rest refused with 4000), and a batch holds
#   at most 128 requests.
# - An agent's subscription gets the events of the agents it may see, not
#   those of another agent's hidden child.
# - suspend and resume are idempotent: twice is {suspended: true} twice,
#   {resumed: true} twice; an agent with no process gets 3001.
# - Nothing follows the answer to map/disconnect: no event of the
#   subscription it had, even when the connection asks for more.
# - An agent's own connection to the socket (its credential in
#   map/connect): map/agents/register names the agent (no new agent; it
#   is ready), map/subscribe needs its list tool and suspend is refused,
#   both 1003.
# - corral ps and top say "per-call" where an exec agent's pid would be.
. "$(dirname "$0")/ctl-lib.sh"

TREE="$TOOLS/treeagent"
[ -x "$TREE" ] || skip "no tree agent at $TREE"

# The specification's examples, one per line (its batches joined).
cat >"$T/spec" <<'EOF'
{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}
{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}
{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}
{"jsonrpc": "2.0", "method": "foobar"}
{"jsonrpc": "2.0", "method": "foobar", "id": "1"}
{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]
{"jsonrpc": "2.0", "method": 1, "params": "bar"}
[ {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"}, {"jsonrpc": "2.0", "method" ]
[]
[1]
[1,2,3]
[ {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"}, {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}, {"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"}, {"foo": "boo"}, {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"}, {"jsonrpc": "2.0", "method": "get_data", "id": "9"} ]
[ {"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]}, {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]} ]
{"jsonrpc":"2.0","id":"end","method":"ping"}
EOF
# What the spec answers, each answer as [id, error code] (a batch: a list
# of them), with -32601 where the spec's method would have answered.
cat >"$T/spec.want" <<'EOF'
[1,-32601]
[3,-32601]
["1",-32601]
[null,-32700]
[null,-32600]
[null,-32700]
[null,-32600]
[[null,-32600]]
[[null,-32600],[null,-32600],[null,-32600]]
[["1",-32601],["2",-32601],[null,-32600],["5",-32601],["9",-32601]]
["end",null]
EOF
# On a pipe, the invalid JSON that is no batch (the fourth answer) is an
# envelope: it gets a notice instead.
sed 4d "$T/spec.want" >"$T/pipe.want"

# ids ANSWERS: each answer line as [id, error code], or a list of them.
ids() {
	jq -c 'if type == "array" then [.[] | [.id, .error.code]] else [.id, .error.code] end' "$1"
}

# A hidden child of lead, once $T/go exists: no family of pipe's.
cat >"$T/boot.json" <<EOF
{"steps":[{"wait_file":"$T/go"},{"spawn":{"agent":"leaf","keep":true,"plan":{"steps":[{"hang":true}]}}}]}
EOF
# The pipe agent writes the examples, a subscription and a ping, then
# records everything corral writes to it.
{
	cat "$T/spec"
	echo '{"jsonrpc":"2.0","id":"sub","method":"map/subscribe","params":{"filter":{"eventTypes":["agent_registered"]}}}'
	echo '{"jsonrpc":"2.0","id":"last","method":"ping"}'
} >"$T/frames"
# The agent del's own connection to the socket, with its credential (as
# the SDK's AgentConnection.connect() would): register, then what its
# tools (spawn only) do not give it.
cat >"$T/del.sh" <<EOF
#!/bin/sh
"$CP" -s "\$CORRAL_CONTROL" \\
    -l "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"map/connect\",\"params\":{\"protocolVersion\":1,\"participantType\":\"agent\",\"auth\":{\"method\":\"x-corral-agent\",\"credential\":\"\$CORRAL_AGENT_TOKEN\"}}}" \\
    -l '{"jsonrpc":"2.0","id":2,"method":"map/agents/register","params":{"name":"x","metadata":{"k":"v"}}}' \\
    -l '{"jsonrpc":"2.0","id":3,"method":"map/subscribe"}' \\
    -l '{"jsonrpc":"2.0","id":4,"method":"map/agents/suspend","params":{"agentId":"echo"}}' \\
    -l '{"jsonrpc":"2.0","id":5,"method":"map/unsubscribe","params":{"subscriptionId":"x"}}' \\
    -e 5 -w $((30 * SLOW)) >"$T/del.out" 2>"$T/del.err"
exec cat >/dev/null
EOF
cat >"$T/wf.yaml" <<YAML
agents:
  echo:
    cmd: [$TA]
  pipe:
    cmd: [sh, -c, 'cat "\$0"; cat >"\$1"', $T/frames, $T/pipe.out]
  lead:
    cmd: [$TREE, --boot, $T/boot.json]
  leaf:
    cmd: [$TREE]
    autostart: false
  once:
    cmd: ["true"]
    restart: temporary
  sorter:
    cmd: [sort]
    adapter: exec
  del:
    cmd: [sh, $T/del.sh]
    ready: handshake
    tools: [spawn]
routes:
  "*": echo
YAML
serve_start "$T/wf.yaml" -v --control "$SOCK" --log "$T/audit.ndjson"
wait_sock
"$CORRAL" events -S "$SOCK" --follow --json >"$T/follow" 2>"$T/follow.err" &
follower=$!

# 1. The examples on the socket.
"$CP" -s "$SOCK" -f "$T/spec" -e 11 -w $((10 * SLOW)) >"$T/spec.out" 2>"$T/spec.err" ||
    fail "expected 11 answers to the spec's examples: $(cat "$T/spec.out")"
ids "$T/spec.out" >"$T/spec.got" || fail "not JSON: $(cat "$T/spec.out")"
diff -u "$T/spec.want" "$T/spec.got" >"$T/spec.diff" ||
    fail "the spec's examples on the socket ([id, code] per answer):
$(cat "$T/spec.diff")
$(cat "$T/spec.out")"
grep -q '"id":null,"error":{"code":-32600,"message":"method must be a string"' "$T/spec.out" ||
    fail "an invalid request without an id: $(sed -n 5p "$T/spec.out")"

# 2. The same examples on the pipe: JSON-RPC lines and batches get the
# same answers; the bad JSON and the bare object are envelopes there.
wait_for 'grep -q "\"id\":\"last\"" "$T/pipe.out"' 10 ||
    fail "the pipe agent got no answer to its last frame: $(cat "$T/pipe.out")"
grep '"jsonrpc"' "$T/pipe.out" | grep -v '"id":"sub"\|"id":"last"\|"method":"map/event"' >"$T/pipe.rpc"
ids "$T/pipe.rpc" >"$T/pipe.got"
diff -u "$T/pipe.want" "$T/pipe.got" >"$T/pipe.diff" ||
    fail "the spec's examples on an agent's pipe ([id, code] per answer):
$(cat "$T/pipe.diff")
$(cat "$T/pipe.out")"
[ "$(grep -c '"kind":"notice"' "$T/pipe.out")" = 1 ] &&
    grep -q '"code":"invalid_json"' "$T/pipe.out" ||
    fail "the line that is not JSON should get one invalid_json notice: $(grep notice "$T/pipe.out")"
grep -q '"id":"sub","result":{"subscriptionId"' "$T/pipe.out" ||
    fail "the pipe agent's subscription: $(grep '"sub"' "$T/pipe.out")"

# 3. corral's own methods in the spec's mixed batch, params, bad values.
{
	echo '[{"jsonrpc":"2.0","method":"ping","id":"1"},{"jsonrpc":"2.0","method":"ping"},{"foo":"boo"},{"jsonrpc":"2.0","method":"no/such","id":"5"},{"jsonrpc":"2.0","method":"map/agents/get","params":{"agentId":"echo"},"id":"9"}]'
	echo '{"jsonrpc":"2.0","id":"p","method":"ping","params":[1]}'
	echo '{"jsonrpc":"2.0","id":"q","method":"no/such","params":[1]}'
	echo '42'
	echo '{"foo":"boo"}'
	for m in map/agents/get map/agents/stop map/agents/suspend map/agents/resume map/agents/unregister map/agents/update; do
		printf '{"jsonrpc":"2.0","id":"%s","method":"%s","params":{}}\n' "$m" "$m"
	done
} >"$T/own"
"$CP" -s "$SOCK" -f "$T/own" -e 11 -w $((10 * SLOW)) >"$T/own.out" 2>"$T/own.err" ||
    fail "expected 11 answers: $(cat "$T/own.out")"
cat >"$T/own.want" <<'EOF'
[["1",null],[null,-32600],["5",-32601],["9",null]]
["p",-32602]
["q",-32601]
[null,-32600]
[null,-32600]
["map/agents/get",-32602]
["map/agents/stop",-32602]
["map/agents/suspend",-32602]
["map/agents/resume",-32602]
["map/agents/unregister",-32602]
["map/agents/update",-32602]
EOF
ids "$T/own.out" >"$T/own.got"
diff -u "$T/own.want" "$T/own.got" >"$T/own.diff" ||
    fail "corral's methods ([id, code] per answer):
$(cat "$T/own.diff")
$(cat "$T/own.out")"
sed -n 1p "$T/own.out" | jq -e '.[3].result.agent.id == "echo"' >/dev/null ||
    fail "the batch's map/agents/get: $(sed -n 1p "$T/own.out")"

# A batch's answers are bounded: past 1 MiB the rest is refused (4000,
# retryable), not run; more than 128 requests is one -32600.  (A message
# of 300 kB to echo puts its payload in the events each replay answers.)
printf '{"jsonrpc":"2.0","id":1,"method":"map/send","params":{"to":{"agent":"echo"},"payload":"%s"}}\n' \
    "$(head -c 300000 /dev/zero | tr '\0' m)" >"$T/msg"
"$CP" -s "$SOCK" -f "$T/msg" -e 1 -w $((10 * SLOW)) >"$T/msg.out" 2>"$T/msg.err" &&
    grep -q '"delivered":\["echo"\]' "$T/msg.out" || fail "map/send: $(cut -c1-300 "$T/msg.out")"
awk 'BEGIN { printf "["; for (i = 1; i <= 128; i++) printf "%s{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"map/replay\",\"params\":{\"limit\":1000}}", (i > 1 ? "," : ""), i; print "]" }' >"$T/big"
awk 'BEGIN { printf "["; for (i = 1; i <= 129; i++) printf "%s{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}", (i > 1 ? "," : ""), i; print "]" }' >>"$T/big"
"$CP" -s "$SOCK" -f "$T/big" -e 2 -w $((10 * SLOW)) >"$T/big.out" 2>"$T/big.err" ||
    fail "expected 2 answers to the big batches: $(cut -c1-300 "$T/big.out")"
sed -n 1p "$T/big.out" | jq -e 'length == 128 and ([.[].id] == [range(1; 129)])
    and (.[0].result.events | length) > 0 and .[127].error.code == 4000
    and .[127].error.data.retryable' >/dev/null ||
    fail "a batch of 128 replays: $(sed -n 1p "$T/big.out" | jq -c '[.[] | [.id, .error.code]]')"
[ "$(sed -n 1p "$T/big.out" | wc -c)" -lt 2097152 ] ||
    fail "the big batch's answers take $(sed -n 1p "$T/big.out" | wc -c) bytes"
sed -n 2p "$T/big.out" | jq -e '.id == null and .error.code == -32600' >/dev/null ||
    fail "a batch of 129: $(sed -n 2p "$T/big.out" | cut -c1-300)"

# 4. An agent's subscription: not another agent's hidden child.  lead
# spawns leaf hidden; then a client spawns echo (visible to all): once
# pipe has that event, it would have had leaf's before it.
touch "$T/go"
wait_for 'grep -q "\"type\":\"agent_registered\".*\"agentId\":\"leaf-" "$T/follow"' 10 ||
    fail "lead's hidden child was not registered: $(cat "$T/follow.err")"
"$CP" -s "$SOCK" -l "$(CONNECT)" -l '{"jsonrpc":"2.0","id":2,"method":"map/agents/spawn","params":{"name":"echo"}}' \
    -e 2 -w $((10 * SLOW)) >"$T/spawn.out" 2>"$T/spawn.err" || fail "spawn: $(cat "$T/spawn.out")"
kid=$(sed -n 2p "$T/spawn.out" | jq -r .result.agent.id)
wait_for 'grep -q "\"method\":\"map/event\".*\"agentId\":\"$kid\"" "$T/pipe.out"' 10 ||
    fail "pipe should see $kid registered: $(grep map/event "$T/pipe.out" | cut -c1-300)"
grep '"method":"map/event"' "$T/pipe.out" | grep -q '"agentId":"leaf-' &&
    fail "pipe saw lead's hidden child: $(grep leaf- "$T/pipe.out" | cut -c1-300)"

# 5. suspend and resume, twice each; an agent with no process.
wait_for '[ "$(map_state once)" = stopped ]' 10 || fail "once should be stopped: $(map_state once)"
"$CP" -s "$SOCK" -l "$(CONNECT)" \
    -l '{"jsonrpc":"2.0","id":2,"method":"map/agents/suspend","params":{"agentId":"echo"}}' \
    -l '{"jsonrpc":"2.0","id":3,"method":"map/agents/suspend","params":{"agentId":"echo"}}' \
    -l '{"jsonrpc":"2.0","id":4,"method":"map/agents/resume","params":{"agentId":"echo"}}' \
    -l '{"jsonrpc":"2.0","id":5,"method":"map/agents/resume","params":{"agentId":"echo"}}' \
    -l '{"jsonrpc":"2.0","id":6,"method":"map/agents/suspend","params":{"agentId":"once"}}' \
    -l '{"jsonrpc":"2.0","id":7,"method":"map/agents/resume","params":{"agentId":"once"}}' \
    -e 7 -w $((10 * SLOW)) >"$T/pause.out" 2>"$T/pause.err" || fail "suspend/resume: $(cat "$T/pause.out")"
jq -s -e '.[1].result.suspended and .[1].result.agent.state == "suspended"
    and .[2].result.suspended and .[2].result.agent.state == "suspended"
    and .[3].result.resumed and .[3].result.agent.state != "suspended"
    and .[4].result.resumed and .[4].result.agent.state != "suspended"
    and .[5].error.code == 3001 and .[6].error.code == 3001' "$T/pause.out" >/dev/null ||
    fail "suspend, suspend, resume, resume, and of a stopped agent: $(cat "$T/pause.out")"
grep -q '"message":"once is stopped: it has no process to suspend or resume"' "$T/pause.out" ||
    fail "why once cannot be suspended: $(sed -n 6p "$T/pause.out")"

# 6. Nothing after the disconnect answer: the connection subscribes to
# echo's events, says goodbye, then suspends echo (an event it would get)
# and pings.  Five answers, and no event among them.
"$CP" -s "$SOCK" -l "$(CONNECT)" \
    -l '{"jsonrpc":"2.0","id":2,"method":"map/subscribe","params":{"filter":{"fromAgents":["echo"]}}}' \
    -l '{"jsonrpc":"2.0","id":3,"method":"map/disconnect"}' \
    -l '{"jsonrpc":"2.0","id":4,"method":"map/agents/suspend","params":{"agentId":"echo"}}' \
    -l '{"jsonrpc":"2.0","id":5,"method":"ping"}' \
    -e 5 -w $((10 * SLOW)) >"$T/bye.out" 2>"$T/bye.err" || fail "disconnect: $(cat "$T/bye.out")"
[ "$(jq -s -c '[.[] | .id]' "$T/bye.out")" = '[1,2,3,4,5]' ] ||
    fail "after map/disconnect only answers should come: $(cat "$T/bye.out")"
wait_for 'grep -q "\"type\":\"participant_disconnected\"" "$T/follow"' 10 ||
    fail "map/disconnect should end the session (participant_disconnected)"
"$CP" -s "$SOCK" -l "$(CONNECT)" \
    -l '{"jsonrpc":"2.0","id":2,"method":"map/agents/resume","params":{"agentId":"echo"}}' \
    -e 2 -w $((10 * SLOW)) >/dev/null 2>&1 || fail "resume echo"

# 7. An agent's own connection: register names it (no new agent, and it
# is ready); subscribe needs its list tool, suspend is no delegate's
# (1003 both: corral has them); unsubscribe is anyone's.
wait_for '[ "$(wc -l <"$T/del.out")" -ge 5 ]' 10 ||
    fail "del's connection: $(cat "$T/del.out" "$T/del.err")"
jq -s -e '.[0].result.principal.id == "del" and .[1].result.agent.id == "del"
    and .[1].result.agent.metadata.k == "v" and .[2].error.code == 1003
    and (.[2].error.message | test("not among the tools of agent del"))
    and .[3].error.code == 1003 and .[4].result.subscription.id == "x"' \
    "$T/del.out" >/dev/null || fail "del's connection: $(cat "$T/del.out")"
wait_for '[ "$(map_state del)" = idle ]' 10 || fail "del should be ready: $(map_state del)"
[ "$("$CORRAL" ps -S "$SOCK" --json | jq '[.agents[] | select(.name == "del")] | length')" = 1 ] ||
    fail "register should add no agent: $("$CORRAL" ps -S "$SOCK")"

# 8. An exec agent has no process between requests: ps and top say so.
ctl ps
grep -q "^  sorter  *idle  *per-call " "$T/ctl.out" || fail "ps: sorter's pid: $(cat "$T/ctl.out")"
ctl top -n 1
grep -q "^sorter  *idle  *per-call " "$T/ctl.out" || fail "top: sorter's pid: $(cat -v "$T/ctl.out")"

kill "$follower" 2>/dev/null
serve_eof
corral_wait 20
expect_rc 0
exit 0
