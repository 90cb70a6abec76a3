#!/bin/sh
# Numbers a client gives the control plane are checked before anything
# converts them: out of range, they are refused with -32602 (a timestamp)
# or taken as the nearest bound (a limit, a depth), never cast to a type
# they do not fit (1e300 to uint64_t is undefined behaviour; 4294967296 to
# int was 0, a depth that hid every descendant).  An agent's metadata is
# bounded too (16 KiB of JSON, 256 values): an update that would make it
# larger is refused, one by one or all at once.
#
#   root        its boot plan spawns node-1, which stays
#   `-- node-1
. "$(dirname "$0")/ctl-lib.sh"

TR="$TOOLS/treeagent"
[ -x "$TR" ] || skip "no treeagent at $TR"
cat >"$T/boot.json" <<'JSON'
{"steps": [{"spawn": {"agent": "node", "plan": {"steps": [{"hang": true}]}}},
           {"hang": true}]}
JSON
cat >"$T/wf.yaml" <<YAML
agents:
  root:
    cmd: [$TR, --boot, $T/boot.json]
  node:
    cmd: [$TR]
    autostart: false
routes:
  "*": root
YAML
serve_start "$T/wf.yaml" -v --control "$SOCK"
wait_sock
wait_for '[ -n "$(map_state node-1)" ]' 20 || fail "root did not spawn node-1"

R='{"jsonrpc":"2.0","id":'
{
	echo "$R"'1,"method":"map/replay","params":{"fromTimestamp":1e300}}'
	echo "$R"'2,"method":"map/replay","params":{"toTimestamp":-1}}'
	echo "$R"'3,"method":"map/replay","params":{"fromTimestamp":9007199254740992}}'
	echo "$R"'4,"method":"map/replay","params":{"limit":1e300}}'
	echo "$R"'5,"method":"map/replay","params":{"limit":-5}}'
	echo "$R"'6,"method":"map/agents/get","params":{"agentId":"root","include":{"descendants":true,"maxDepth":4294967296}}}'
	echo "$R"'7,"method":"map/structure/graph","params":{"rootAgentId":"root","depth":4294967296}}'
	echo "$R"'8,"method":"map/structure/graph","params":{"depth":-1e300}}'
	echo "$R"'9,"method":"map/agents/spawn","params":{"name":"node","timeout":1e300,"limits":{"depth":1e300,"children":-1,"budget":{"time":1e300,"tokens":1e308}}}}'
	echo "$R"'10,"method":"ping"}'
	# Metadata: 300 values at once, 32 KB at once, then 200 updates of
	# 100 bytes each (the last ones over 16 KiB).
	awk -v r="$R" 'BEGIN {
		for (i = 0; i < 300; i++)
			m = m (i ? "," : "") sprintf("\"k%d\":%d", i, i)
		printf "%s11,\"method\":\"map/agents/update\",\"params\":{\"agentId\":\"root\",\"metadata\":{%s}}}\n", r, m
		for (p = "x"; length(p) < 20000; )
			p = p p
		printf "%s12,\"method\":\"map/agents/update\",\"params\":{\"agentId\":\"root\",\"metadata\":{\"pad\":\"%s\"}}}\n", r, p
		p = sprintf("%100s", "")
		gsub(/ /, "y", p)
		for (i = 0; i < 200; i++)
			printf "%s%d,\"method\":\"map/agents/update\",\"params\":{\"agentId\":\"root\",\"metadata\":{\"m%d\":\"%s\"}}}\n", r, 100 + i, i, p
	}'
} >"$T/frames"
"$CP" -s "$SOCK" -f "$T/frames" -e 212 -w 20 >"$T/out" 2>"$T/cp.err" ||
    fail "212 frames with odd numbers and metadata: $(cat "$T/cp.err") $(cut -c1-200 "$T/out")"
# ans N: the answer to request N.
ans() {
	grep "^{\"jsonrpc\":\"2.0\",\"id\":$1," "$T/out"
}
for i in 1 2 3; do
	ans $i | grep -q '"error":{"code":-32602,"message":"fromTimestamp and toTimestamp must be milliseconds since the epoch (0 to 9007199254740991)"' ||
	    fail "replay $i with a timestamp out of range: $(ans $i | cut -c1-300)"
done
[ "$(ans 4 | jq '.result.events | length')" -ge 1 ] ||
    fail "replay with limit 1e300 (taken as 1000): $(ans 4 | cut -c1-300)"
[ "$(ans 5 | jq '.result.events | length')" = 1 ] && [ "$(ans 5 | jq .result.hasMore)" = true ] ||
    fail "replay with limit -5 (taken as 1): $(ans 5 | cut -c1-300)"
[ "$(ans 6 | jq -r '[.result.descendants[].id] | join(",")')" = node-1 ] ||
    fail "get root with maxDepth 4294967296 should list node-1: $(ans 6 | cut -c1-300)"
[ "$(ans 7 | jq -r '[.result.nodes[].id] | sort | join(",")')" = node-1,root ] ||
    fail "graph of root at depth 4294967296: $(ans 7 | cut -c1-300)"
[ "$(ans 8 | jq '.result.nodes | length')" = 2 ] ||
    fail "graph at depth -1e300 (any depth): $(ans 8 | cut -c1-300)"
ans 9 | grep -q '"result":{"agent":{"id":"node-' ||
    fail "a spawn with timeout 1e300 and huge limits: $(ans 9 | cut -c1-300)"
ans 10 | grep -q '"result":{}' || fail "the ping after: $(ans 10)"
ans 11 | grep -q '"error":{"code":-32602,"message":"metadata too large: more than 256 values' ||
    fail "metadata of 300 values: $(ans 11 | cut -c1-300)"
ans 12 | grep -q '"error":{"code":-32602,"message":"metadata too large: [0-9]* bytes of JSON; an agent.s metadata holds at most 16384 bytes' ||
    fail "metadata of 32 KB: $(ans 12 | cut -c1-300)"
ok=$(grep -c '"id":[12][0-9][0-9],"result":{"agent"' "$T/out")
no=$(grep -c '"id":[12][0-9][0-9],"error":{"code":-32602,"message":"metadata too large' "$T/out")
[ "$ok" -ge 100 ] && [ "$ok" -le 160 ] && [ $((ok + no)) = 200 ] ||
    fail "200 updates of 100 bytes: $ok kept, $no refused (16 KiB holds about 150)"
"$CORRAL" ps -S "$SOCK" --json | jq -e '.agents[] | select(.id == "root") | .metadata | has("m0") and (has("k0") | not) and (has("pad") | not)' >/dev/null ||
    fail "root's metadata should have the updates that fit, and none of the refused"

serve_eof
corral_wait 20
expect_rc 0
exit 0
