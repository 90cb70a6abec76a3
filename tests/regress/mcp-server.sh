#!/bin/sh
# corral mcp alone, driven with MCP frames (no CLI): the agent "boss" is a
# shell that runs `corral mcp` with its stdin on a fifo, so the MCP server
# gets boss's credential from its environment as a CLI's would.  Checked:
# initialize and tools/list (the five tools, the catalogue in spawn's
# description); initialize with a version corral does not know gets the
# latest it knows (2025-11-25); spawn_agent with wait returns the child's result as text;
# an unknown agent and the fourth child under children: {max: 3} are
# refusals the model reads (isError, the reason); list_agents,
# send_message, stop_agent and wait_agents; a session with fewer tools
# than asked for is refused by corral; a bad token, and the token of an
# agent that is gone, are refused; the token never reaches the log or the
# audit log; the children are children of boss in the audit log.
. "$(dirname "$0")/lib.sh"

TREE="$TOOLS/treeagent"
mkfifo "$T/in" "$T/in2" || fail "mkfifo"
echo '{"steps":[{"hang":true}]}' >"$T/hang.json"
cat >"$T/wf.yaml" <<EOF
name: mcp-server
agents:
  boss:
    cmd: [sh, -c, '"$CORRAL" mcp <$T/in >$T/mcp.out 2>$T/mcp.err']
    tools: [spawn, wait, send, list, stop]
    children: {max: 3}
  narrow:
    cmd: [sh, -c, '"$CORRAL" mcp --tools spawn,list <$T/in2 >$T/mcp2.out 2>$T/mcp2.err']
    tools: [list]
  gone:
    cmd: [sh, -c, 'printf %s "\$CORRAL_AGENT_TOKEN" >$T/gone.token']
    restart: temporary
  worker:
    description: counts words
    cmd: [$TREE]
    autostart: false
  sleeper:
    cmd: [$TREE, --plan, $T/hang.json]
    autostart: false
    timeout: $((60 * SLOW))s
routes:
  "*": boss
EOF

# mcp N JSON: frame N to the MCP server (its stdin is fd 7).
mcp() {
	printf '%s\n' "$1" >&7
}
# call ID TOOL ARGS: a tools/call.
call() {
	mcp '{"jsonrpc":"2.0","id":'"$1"',"method":"tools/call","params":{"name":"'"$2"'","arguments":'"$3"'}}'
}
# answer FILE ID: the answer to request ID in FILE.
answer() {
	grep -F "\"id\":$2," "$1" | head -n 1
}
# expect_answer ID STRING...: the answer to ID (waited for) holds each.
expect_answer() {
	_id=$1
	shift
	wait_for '[ -n "$(answer "$T/mcp.out" "$_id")" ]' 20 ||
	    fail "no answer to MCP request $_id: $(cat "$T/mcp.out" "$T/mcp.err")"
	_a=$(answer "$T/mcp.out" "$_id")
	for _s in "$@"; do
		case $_a in
		*"$_s"*) ;;
		*) fail "the answer to $_id lacks '$_s': $_a" ;;
		esac
	done
}

s=$(now)
serve_start "$T/wf.yaml" -v --log "$T/audit" --control "$T/ctl.sock"
exec 7<>"$T/in" 6<>"$T/in2"
wait_log ": acts for agent boss" 10

mcp '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}'
mcp '{"jsonrpc":"2.0","method":"notifications/initialized"}'
mcp '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
expect_answer 1 '"protocolVersion":"2025-06-18"' '"serverInfo":{"name":"corral"'
expect_answer 2 '"name":"spawn_agent"' '"name":"wait_agents"' \
    '"name":"send_message"' '"name":"list_agents"' '"name":"stop_agent"' \
    'Agents you can start:' 'worker (counts words)'

# A child with wait: its result is the tool's text.
call 3 spawn_agent '{"agent":"worker","task":"count the words"}'
expect_answer 3 '"isError":false' 'worker-' 'finished'
# An agent the workflow does not have.
call 4 spawn_agent '{"agent":"nobody","task":"x"}'
expect_answer 4 '"isError":true' "corral refused to start agent 'nobody'" \
    "unknown agent 'nobody'"
# Three children that stay, then a fourth: the fan-out limit.
for i in 11 12 13; do
	call $i spawn_agent '{"agent":"sleeper","task":"wait","wait":false}'
	expect_answer $i '"isError":false' 'Started sleeper-' 'wait_agents'
done
call 14 spawn_agent '{"agent":"sleeper","task":"wait","wait":false}'
expect_answer 14 '"isError":true' 'fan-out limit: boss already has 3 children alive, the limit is 3' \
    'error 4000' 'retryable'
call 15 list_agents '{}'
expect_answer 15 'boss (boss)' '(you)' 'sleeper-' 'parent boss'
call 16 send_message '{"to":"children","message":"hello"}'
expect_answer 16 '"isError":false' 'Delivered to sleeper-'
first=$(grep -o 'Started sleeper-[0-9]*' "$T/mcp.out" | head -n 1 | sed 's/Started //')
call 17 stop_agent '{"agent":"'"$first"'"}'
expect_answer 17 "Stopping $first"
call 18 wait_agents '{"agents":["'"$first"'"],"timeout":'$((20 * SLOW))'}'
expect_answer 18 "$first failed"
call 19 stop_agent '{"agent":"boss"}'
expect_answer 19 '"isError":true' 'may stop only its own descendants'
call 20 spawn_agent '{"agent":"worker"}'
expect_answer 20 '"isError":true' 'spawn_agent needs task'

# A session that asks for more than its agent's tools: corral refuses.
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"spawn_agent","arguments":{"agent":"worker","task":"x"}}}' >&6
wait_for '[ -n "$(answer "$T/mcp2.out" 1)" ]' 20 || fail "no answer from narrow's session"
case $(answer "$T/mcp2.out" 1) in
*'map/agents/spawn is not among the tools of agent narrow'*) ;;
*) fail "narrow spawned beyond its tools: $(answer "$T/mcp2.out" 1)" ;;
esac
# MCP's version negotiation: a version corral knows is answered as asked,
# any other with the latest corral knows (the client then decides).
printf '%s\n' '{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2099-01-01","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}' \
    '{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}' >&6
wait_for '[ -n "$(answer "$T/mcp2.out" 3)" ]' 20 || fail "no answer to narrow's initialize"
answer "$T/mcp2.out" 2 | grep -qF '"protocolVersion":"2025-11-25"' ||
    fail "an unknown protocol version should get the latest, 2025-11-25: $(answer "$T/mcp2.out" 2)"
answer "$T/mcp2.out" 3 | grep -qF '"protocolVersion":"2024-11-05"' ||
    fail "a known protocol version should be answered as asked: $(answer "$T/mcp2.out" 3)"

# Credentials that name no running agent.
bad() {
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_agents","arguments":{}}}' |
	    CORRAL_CONTROL="$T/ctl.sock" CORRAL_AGENT_TOKEN="$1" "$CORRAL" mcp \
	    2>"$T/bad.err"
}
out=$(bad 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef)
case $out in
*'invalid credentials: the token names no running agent'*'"isError":true'*) ;;
*) fail "a made-up token was not refused: $out" ;;
esac
wait_for '[ -s "$T/gone.token" ]' 10 || fail "the agent gone wrote no token"
tok=$(cat "$T/gone.token")
[ ${#tok} = 64 ] || fail "the token is not 64 hex digits: '$tok'"
wait_log "agent gone: STOPPED" 10
out=$(bad "$tok")
case $out in
*'invalid credentials'*) ;;
*) fail "the token of an agent that is gone was not refused: $out" ;;
esac
out=$(printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_agents","arguments":{}}}' |
    env -u CORRAL_CONTROL -u CORRAL_AGENT_TOKEN "$CORRAL" mcp 2>/dev/null)
case $out in
*'CORRAL_CONTROL is not set'*) ;;
*) fail "corral mcp without CORRAL_CONTROL: $out" ;;
esac

exec 7>&- 6>&-
serve_eof
corral_wait 20
expect_rc 0
note "corral mcp: 16 requests, 2 sessions, 2 refused credentials in $(elapsed "$s")s"

grep -qF -- "$tok" "$ERR" "$T/audit" && fail "an agent's token is in the log or the audit log"
log_has "refused an agent credential: it names no running agent" ||
    fail "the refused credential is not in the log"
grep -q '"ev":"spawn_child","agent":"worker-[0-9]*".*"parent":"boss"' "$T/audit" ||
    fail "worker is not a child of boss in the audit log"
grep -q '"ev":"spawn_refused","agent":"boss".*fan-out limit' "$T/audit" ||
    fail "no spawn_refused for the fan-out limit"
grep -q '"ev":"child_result","agent":"boss"' "$T/audit" ||
    fail "no child_result for boss in the audit log"
expect_no_leftovers
exit 0
