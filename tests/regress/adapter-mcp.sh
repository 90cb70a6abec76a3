#!/bin/sh
# The mcp adapter.  With the real @modelcontextprotocol/server-everything:
# initialize and tools/list make its tools the agent's capabilities (in the
# log and the audit log); tool.call envelopes become tools/call and their
# results tool_result envelopes (name or tool, content.data or
# inputs.parameters with {{templates}}, an unknown filter there ignored);
# an unknown tool and a request of another intent get error envelopes;
# with heartbeat: set, corral pings and an idle server stays READY.  With a scripted server (node, below):
# corral answers the server's ping, survives a non-JSON line on its
# stdout, reads a paged tools/list, maps a JSON-RPC error to an error
# envelope and sends notifications/cancelled for a request that times out.
if [ "${1:-}" = --inner ]; then
	. "$(dirname "$0")/adapter-lib.sh"
	SERVE_FLAGS=-vv serve_up "$T/wf.yaml"
	feed "$(envl m1 tool.call 'echo' ',"inputs":{"parameters":{"name":"echo","arguments":{"message":"hi from {{task}} {{task | nope}}"}}}')"
	wait_out 1 30 || exit 1
	echo "first $(since "$FED_AT")" >"$T/times"
	feed '{"protocol":"multiagent-1.0","role":"user","intent":"tool.call","task":"add","content":{"type":"json","data":{"tool":"get-sum","arguments":{"a":2,"b":40}}},"trace":{"id":"m2"}}'
	feed '{"protocol":"multiagent-1.0","role":"user","intent":"tool.call","task":"nope","content":{"type":"json","data":{"name":"no_such_tool","arguments":{}}},"trace":{"id":"m3"}}'
	feed "$(envl m4 analyze 'not a tool call')"
	feed "$(envl m5 tool.call 'no data')"
	wait_out 5 30 || exit 1
	# Idle with a heartbeat (200 ms x SLOW, 5 misses): pings keep it
	# READY for 10 of them, twice as long as 5 missed ones would take.
	wait_until 10 '[ "$(grep -c "agent tools: the MCP server answered ping" "$T/err")" -ge 10 ]'
	serve_down 30
	serve_keep everything

	serve_up "$T/scripted.yaml"
	feed '{"protocol":"multiagent-1.0","role":"user","intent":"tool.call","task":"x","content":{"type":"json","data":{"name":"fail"}},"trace":{"id":"x1"}}'
	wait_out 1 30 || exit 1
	feed '{"protocol":"multiagent-1.0","role":"user","intent":"tool.call","task":"x","content":{"type":"json","data":{"name":"hang","arguments":{}}},"ttl_ms":'$((1000 * SLOW))',"trace":{"id":"x2"}}'
	wait_out 2 30 || exit 1
	wait_until 5 'grep -q "notifications/cancelled" "$T/scripted.rec"'
	serve_down 30
	exit $RC
fi

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/adapter-lib.sh"
fa_require mcp

cat >"$T/wf.yaml" <<YAML
name: adapter-mcp
agents:
  tools:
    cmd: [mcp-server-everything]
    heartbeat: {interval: $((200 * SLOW))ms, misses: 5}
    adapter: {type: mcp, confidence: 1}
    timeout: $((30 * SLOW))s
routes:
  "*": tools
YAML

# A scripted MCP server: records what it reads, writes a junk line, pings
# the client, pages tools/list, fails "fail" and never answers "hang".
cat >"$T/scripted.js" <<'JS'
const fs = require('fs');
const rec = process.argv[2];
const send = (o) => process.stdout.write(JSON.stringify(o) + '\n');
let buf = '';
process.stdin.on('data', (d) => {
  buf += d;
  let i;
  while ((i = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    fs.appendFileSync(rec, 'recv ' + line + '\n');
    handle(JSON.parse(line));
  }
});
process.stdin.on('end', () => process.exit(0));
function handle(m) {
  if (m.method === 'initialize') {
    process.stdout.write('scripted server starting (not JSON)\n');
    send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion,
      capabilities: { tools: {} }, serverInfo: { name: 'scripted', version: '1' } } });
  } else if (m.method === 'notifications/initialized') {
    send({ jsonrpc: '2.0', id: 'srv-ping-1', method: 'ping' });
  } else if (m.method === 'tools/list') {
    if (!m.params || !m.params.cursor)
      send({ jsonrpc: '2.0', id: m.id, result: { tools: [{ name: 'hang', inputSchema: { type: 'object' } }], nextCursor: 'page2' } });
    else
      send({ jsonrpc: '2.0', id: m.id, result: { tools: [{ name: 'fail', inputSchema: { type: 'object' } }] } });
  } else if (m.method === 'tools/call') {
    if (m.params.name === 'fail')
      send({ jsonrpc: '2.0', id: m.id, error: { code: -32603, message: 'scripted failure' } });
  } else if (m.method === 'ping') {
    send({ jsonrpc: '2.0', id: m.id, result: {} });
  }
}
JS
cat >"$T/scripted.yaml" <<YAML
name: adapter-mcp-scripted
agents:
  scripted:
    cmd: [node, $T/scripted.js, $T/scripted.rec]
    adapter: mcp
    timeout: $((30 * SLOW))s
routes:
  "*": scripted
YAML

s=$(now)
fa_run "$0" || { rc=$?; use_run everything; fa_fail "the inner half failed (status $rc)"; }
note "the mcp runs took $(elapsed "$s")s; $(tr '\n' ' ' <"$T/times")"

use_run everything
# Capabilities: the tool list, logged and in the audit log.
grep -q 'agent tools: MCP server mcp-servers/everything [0-9.]* offers [0-9]* tools: echo, ' "$T/err.everything" ||
    fa_fail "the tool list is not in the log"
grep -q '"ev":"capabilities","agent":"tools","adapter":"mcp","server":{"name":"mcp-servers/everything".*"tools":\[{"name":"echo"' "$T/audit.everything" ||
    fa_fail "no capabilities event in the audit log"
grep -q 'agent tools: INITIALIZING -> READY (MCP initialized, tools listed)' "$T/err.everything" ||
    fa_fail "the agent did not become READY after tools/list"

expect_reply m1 '"intent":"tool.call"' '"type":"tool_result","text":"Echo: hi from echo echo"' \
    '"confidence":{"score":1'
expect_reply m2 '"type":"tool_result","text":"The sum of 2 and 40 is 42."'
expect_reply m3 '"type":"error"' '"code":"tool_error"' 'Tool no_such_tool not found' \
    '"available":"echo, '
expect_reply m4 '"type":"error"' '"code":"unsupported_intent"' 'takes tool.call requests only, not analyze'
expect_reply m5 '"type":"error"' '"code":"bad_tool_call"'

# Heartbeats: pings answered, never UNAVAILABLE.
n=$(grep -c 'agent tools: the MCP server answered ping' "$T/err.everything")
[ "$n" -ge 10 ] || fa_fail "expected at least 10 answered pings while idle, saw $n"
grep -q 'agent tools: [A-Z]* -> UNAVAILABLE' "$T/err.everything" &&
    fa_fail "the agent went UNAVAILABLE despite its pings"

use_run ''
# The scripted server: its ping answered, junk tolerated, pages read.
grep -qF 'recv {"jsonrpc":"2.0","id":"srv-ping-1","result":{}}' "$T/scripted.rec" ||
    fa_fail "corral did not answer the server's ping: $(cat "$T/scripted.rec")"
grep -q 'agent scripted: the MCP server wrote a line that is not JSON-RPC, ignored: scripted server starting' "$T/err" ||
    fa_fail "the junk line was not reported"
grep -q 'agent scripted: MCP server scripted 1 offers 2 tools: hang, fail' "$T/err" ||
    fa_fail "the two pages of tools/list were not read"
grep -qF '"method":"tools/list","params":{"cursor":"page2"}' "$T/scripted.rec" ||
    fa_fail "no tools/list with the cursor"
expect_reply x1 '"type":"error"' '"code":"mcp_error"' 'MCP error -32603: scripted failure'
expect_reply x2 '"code":"timeout"'
id=$(sed -n 's/^recv .*"id":\([0-9]*\),"method":"tools\/call","params":{"name":"hang".*/\1/p' "$T/scripted.rec")
[ -n "$id" ] || fa_fail "the hang call was not sent: $(cat "$T/scripted.rec")"
grep -qF "\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":$id," "$T/scripted.rec" ||
    fa_fail "no notifications/cancelled for request $id: $(grep cancelled "$T/scripted.rec")"
exit 0
