#!/bin/sh
# An agent whose workflow entry says protocol: map speaks MAP from its
# first line, without a map/connect: everything corral writes to it is a
# JSON-RPC frame (its request as a map/message, the notice about its bad
# line as a map/message too), and its map/send with meta.isResult is the
# reply that becomes serve's result.  corral check refuses a protocol:
# it does not speak, naming those it does, and one next to adapter:.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null 2>&1 || skip "jq is not installed"

# The agent writes one bad line, records every line it reads, and
# answers each map/message that expects a response with a map/send.
cat >"$T/map.sh" <<SH
#!/bin/sh
echo 'not json at all'
while IFS= read -r l; do
	printf '%s\n' "\$l" >>"$T/in.ndjson"
	corr=\$(printf '%s\n' "\$l" | jq -r 'select(.method == "map/message")
	    | .params.message.meta | select(.expectsResponse == true)
	    | .correlationId')
	[ -n "\$corr" ] || continue
	printf '{"jsonrpc":"2.0","id":1,"method":"map/send","params":{"to":{"agent":"corral"},"meta":{"isResult":true,"correlationId":"%s"},"payload":{"protocol":"multiagent-1.0","role":"agent","intent":"finalize","task":"t","content":{"type":"text","text":"map reply"}}}}\n' "\$corr"
done
SH
chmod +x "$T/map.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  mapper:
    cmd: [$T/map.sh]
    protocol: map
routes:
  "*": mapper
YAML

"$CORRAL" check "$T/wf.yaml" >"$T/check" 2>&1 || fail "check: $(cat "$T/check")"
serve_start "$T/wf.yaml"
# The notice about its bad line comes first, then the request.
wait_for '[ -s "$T/in.ndjson" ]' 10 || fail "the agent read nothing: $(cat "$ERR")"
envelope in-1 execute >&8
wait_lines 1 10
serve_eof
corral_wait 20
expect_rc 0

jq -e '.intent == "finalize" and .content.text == "map reply" and
    .trace.parents == ["in-1"]' "$OUT" >/dev/null ||
    fail "the result is not the agent's map reply: $(head -c 400 "$OUT")"
jq -e 'has("jsonrpc")' "$T/in.ndjson" >/dev/null ||
    fail "the agent read a line that is no JSON-RPC frame: $(cat "$T/in.ndjson")"
jq -se 'map(select(.method == "map/message" and
    .params.message.payload.corral.kind == "notice" and
    .params.message.payload.content.data.code == "invalid_json")) | length == 1' \
    "$T/in.ndjson" >/dev/null ||
    fail "the notice about the bad line did not come as one map/message: $(cat "$T/in.ndjson")"
jq -se 'map(select(.method == "map/message" and
    .params.message.meta.expectsResponse == true and
    .params.message.payload.trace.id == "in-1")) | length == 1' \
    "$T/in.ndjson" >/dev/null ||
    fail "the request did not come as one map/message: $(cat "$T/in.ndjson")"

# Dialects corral does not speak, or that do not go with an adapter.
sed 's/protocol: map/protocol: smoke-signals/' "$T/wf.yaml" >"$T/bad.yaml"
"$CORRAL" check "$T/bad.yaml" >"$T/check" 2>&1 && fail "check accepted protocol: smoke-signals"
grep -q 'agents.mapper.protocol: unknown dialect "smoke-signals" (corral speaks multiagent-1.0, map, bus, agentmessage, adr-007)' \
    "$T/check" || fail "check: $(cat "$T/check")"
printf 'agents:\n  a:\n    cmd: [cat]\n    adapter: ndjson\n    protocol: map\n' >"$T/bad.yaml"
"$CORRAL" check "$T/bad.yaml" >"$T/check" 2>&1 && fail "check accepted protocol: with adapter:"
grep -q 'protocol: and adapter: do not go together' "$T/check" ||
    fail "check: $(cat "$T/check")"
exit 0
