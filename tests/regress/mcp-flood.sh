#!/bin/sh
# corral mcp under a flood of tool calls, as a CLI that writes them all at
# once would send them (the agent "boss" runs `corral mcp` on a fifo, as
# in mcp-server.sh):
#   1. 3000 list_agents written at once: all 3000 are answered (corral mcp
#      reads corral's answers while it writes its requests, so neither
#      side stops the other), and corral mcp exits when its stdin ends;
#   2. 1000 spawn_agent (most refused by the fan-out limit) and 1000
#      list_agents interleaved: all 2000 answered;
#   3. a spawn_agent whose task is over 1 MiB (corral's line limit on the
#      socket) is answered at once with a tool error naming the limit,
#      and the next call still works;
#   4. a line over corral mcp's own limit (4 MiB) is answered with an
#      error carrying its id.
# Before, (1) answered none of them, (2) stopped after 567, (3) and (4)
# were never answered.
. "$(dirname "$0")/lib.sh"

mkfifo "$T/in" "$T/in2" || fail "mkfifo"
cat >"$T/wf.yaml" <<EOF
name: mcp-flood
agents:
  boss:
    cmd: [sh, -c, '"$CORRAL" mcp <$T/in >$T/mcp.out 2>$T/mcp.err']
    tools: [spawn, wait, send, list, stop]
    children: {max: 2}
    restart: temporary
  boss2:
    cmd: [sh, -c, '"$CORRAL" mcp <$T/in2 >$T/mcp2.out 2>$T/mcp2.err']
    tools: [spawn, list]
    children: {max: 2}
    restart: temporary
  worker:
    cmd: [cat]
    autostart: false
routes:
  "*": boss
EOF

# calls FIRST N TOOL ARGS: N tools/call lines with ids FIRST, FIRST+1 ...
calls() {
	awk -v f="$1" -v n="$2" -v t="$3" -v a="$4" 'BEGIN {
		for (i = 0; i < n; i++)
			printf "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\",\"arguments\":%s}}\n", f + i, t, a
	}'
}
# answers FILE: how many answers FILE holds.
answers() {
	grep -c '^{"jsonrpc":"2.0","id":' "$1" 2>/dev/null || true
}

serve_start "$T/wf.yaml" -v --control "$T/ctl.sock"
# The fifos stay open on our side (fd 7, 6) until we close them.
exec 7<>"$T/in" 6<>"$T/in2"
wait_log "acts for agent boss" 10
wait_log "acts for agent boss2" 10

# 1. 3000 list_agents at once (written in the background: corral mcp may
#    not read them all before it answers some).
calls 1 3000 list_agents '{}' >"$T/lists"
cat "$T/lists" >&7 &
wait_for '[ "$(answers "$T/mcp.out")" -ge 3000 ]' 60 ||
    fail "3000 list_agents: $(answers "$T/mcp.out") answered"
[ "$(grep -c '"isError":false' "$T/mcp.out")" -ge 1 ] ||
    fail "list_agents: no answer lists the agents: $(head -c 300 "$T/mcp.out")"
[ "$(grep -o '^{"jsonrpc":"2.0","id":[0-9]*' "$T/mcp.out" | sort -u | wc -l)" = 3000 ] ||
    fail "3000 list_agents: some call was answered twice, or not at all"
note "3000 list_agents at once: $(answers "$T/mcp.out") answered"

# 2. 1000 spawns and 1000 lists, interleaved, on the other session.
{
	calls 1 1000 spawn_agent '{"agent":"worker","task":"t","wait":false}' >"$T/a"
	calls 1001 1000 list_agents '{}' >"$T/b"
	paste -d '\n' "$T/a" "$T/b"
} >"$T/mixed"
cat "$T/mixed" >&6 &
wait_for '[ "$(answers "$T/mcp2.out")" -ge 2000 ]' 60 ||
    fail "1000 spawns and 1000 lists: $(answers "$T/mcp2.out") answered"
grep -q 'fan-out limit' "$T/mcp2.out" ||
    fail "the spawns beyond children: {max: 2} should be refused: $(head -c 300 "$T/mcp2.out")"
note "1000 spawns and 1000 lists: $(answers "$T/mcp2.out") answered"

# 3. A task over 1 MiB, then a call that fits.
big=$(head -c 1100000 /dev/zero | tr '\0' x)
printf '%s\n' '{"jsonrpc":"2.0","id":5001,"method":"tools/call","params":{"name":"spawn_agent","arguments":{"agent":"worker","task":"'"$big"'"}}}' >&7
printf '%s\n' '{"jsonrpc":"2.0","id":5002,"method":"tools/call","params":{"name":"list_agents","arguments":{}}}' >&7
wait_for 'grep -q "^{\"jsonrpc\":\"2.0\",\"id\":5002," "$T/mcp.out"' 20 ||
    fail "no answer to the call after the big task"
a=$(grep '^{"jsonrpc":"2.0","id":5001,' "$T/mcp.out")
case $a in
*'at most 1048576 bytes'*'"isError":true'*) ;;
*) fail "the 1.1 MB task should be a tool error naming the limit: $(printf '%s' "$a" | head -c 400)" ;;
esac

# 4. A line over corral mcp's own limit: its error has its id.
{
	printf '%s' '{"jsonrpc":"2.0","id":5003,"method":"tools/call","params":{"name":"list_agents","arguments":{"pad":"'
	head -c 4300000 /dev/zero | tr '\0' x
	printf '"}}}\n'
} >"$T/huge"
cat "$T/huge" >&7 &
wait_for 'grep -q "^{\"jsonrpc\":\"2.0\",\"id\":5003," "$T/mcp.out"' 20 ||
    fail "no answer to the line over 4 MiB"
grep '^{"jsonrpc":"2.0","id":5003,' "$T/mcp.out" | grep -q '"code":-32600' ||
    fail "the line over 4 MiB: $(grep '"id":5003,' "$T/mcp.out" | head -c 300)"

# The end of stdin ends corral mcp, and with it its agent.
exec 7>&- 6>&-
wait_for 'grep -q "agent boss: [A-Z]* -> STOPPED" "$ERR"' 20 ||
    fail "corral mcp did not exit at the end of its stdin"
wait_for 'grep -q "agent boss2: [A-Z]* -> STOPPED" "$ERR"' 20 ||
    fail "the second corral mcp did not exit at the end of its stdin"
serve_eof
corral_wait 20
expect_rc 0
exit 0
