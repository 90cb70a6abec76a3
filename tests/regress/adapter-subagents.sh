#!/bin/sh
# Claude Code's own sub-agents, with the real Claude Code offline against
# the fake API: a Task sub-agent that calls a tool and stays busy (the fake
# API holds its answer until the test has looked) appears, while it runs,
# as a virtual node under its claude agent
# in the live `corral tree` and in map/agents/list (metadata.virtual, no
# pid), with MAP events of its own; corral refuses to stop it (it is no
# process of corral's); it ends STOPPED with its tool call and tokens, in
# the live tree and in `corral tree --log`.  Progress: the CLI's output
# reaches the live views (agent_progress events, metadata.progress) and,
# for a claude child spawned by an envelope agent, that parent, as
# envelopes marked {"corral":{"kind":"progress"}}.  Nesting: a sub-agent
# that starts one of its own (Claude Code offers its Agent tool to its
# sub-agents) is drawn under it, not flat under the claude agent, in
# map/agents/list, ps, top, the live tree, map/structure/graph, the MAP
# events and the audit log (and `corral tree --log`); also when Claude
# Code does not say parent_task_id (a second claude agent whose output
# has it taken out), by the sub-agent message that made the Agent call.
if [ "${1:-}" = --inner ]; then
	. "$(dirname "$0")/adapter-lib.sh"
	S="$T/ctl.sock"
	serve_up "$T/wf.yaml" --control "$S"
	wait_for_cmd 20 "$CORRAL" ps -S "$S" || exit 1
	"$CORRAL" events -S "$S" --follow --json >"$T/events" 2>"$T/events.err" 8>&- &
	feed "$(envl t1 execute "delegate [[subtool:hold:$T/release]]")"
	# While the sub-agent runs: the live tree and the agent list, all
	# three taken while it is busy (it is until $T/release exists).
	cat >"$T/live.sh" <<LIVE
"$CORRAL" tree -S "$S" >"$T/tree.live" 2>&1 &&
"$CORRAL" ps -S "$S" --json >"$T/ps.live" 2>&1 &&
"$CORRAL" ps -S "$S" >"$T/ps.text" 2>&1 &&
grep -q '\[BUSY, inside its CLI' "$T/tree.live" &&
jq -e '[.agents[] | select(.metadata.virtual and .state == "busy")]
    | length == 1' "$T/ps.live" >/dev/null &&
grep -q '^    coder/.* busy ' "$T/ps.text"
LIVE
	wait_for_cmd 40 sh "$T/live.sh" || exit 1
	id=$(sed -n 's/^`-- \(coder\/[^ ]*\) .*/\1/p' "$T/tree.live" | head -n 1)
	"$CORRAL" stop -S "$S" "$id" >"$T/stop.out" 2>&1
	echo "stop-rc $?" >"$T/stop.rc"
	: >"$T/release"
	wait_out 1 60 || exit 1
	wait_for_cmd 20 sh -c "'$CORRAL' tree -S '$S' >'$T/tree.done' && grep -q '^\`-- coder/.* \\[STOPPED, inside its CLI, 1 tool call' '$T/tree.done'" ||
	    exit 1
	# A claude child of an envelope agent: its progress goes to the lead.
	feed "$(envl p1 plan 'lead' ',"inputs":{"parameters":{"plan":{"steps":[{"spawn":{"agent":"coder","task":"run it [[tool]]"}},{"await":true}]}}}')"
	wait_out 2 60 || exit 1
	# A sub-agent that starts one of its own: the views keep the nesting.
	feed "$(envl t3 execute 'nest [[subnest:fg]]')"
	wait_out 3 60 || exit 1
	"$CORRAL" tree -S "$S" >"$T/tree.nest" 2>&1 &&
	"$CORRAL" ps -S "$S" >"$T/ps.nest" 2>&1 &&
	"$CORRAL" ps -S "$S" --json >"$T/ps.nest.json" 2>&1 &&
	"$CORRAL" top -S "$S" -n 1 >"$T/top.nest" 2>&1 || exit 1
	# map/structure/graph as it is, edges and all.
	node -e 'const s = require("net").createConnection(process.argv[1]); let b = "";
s.on("connect", () => s.write(["map/connect", "map/structure/graph"].map((m, i) =>
    JSON.stringify({ jsonrpc: "2.0", id: i, method: m, params: i ? {} : { protocolVersion: 1 } })).join("\n") + "\n"));
s.on("data", (d) => { b += d; for (const l of b.split("\n")) { try { const m = JSON.parse(l);
    if (m.id === 1) { console.log(JSON.stringify(m.result)); process.exit(0); } } catch (e) {} } });' \
	    "$S" >"$T/graph.nest" 2>&1 || exit 1
	feed "$(envl t4 analyze 'nest [[subnest:fg]]')"
	wait_out 4 60 || exit 1
	"$CORRAL" ps -S "$S" --json >"$T/ps.nest2.json" 2>&1 || exit 1
	serve_down 30
	exit $RC
fi

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/adapter-lib.sh"
command -v jq >/dev/null 2>&1 || skip "jq is missing"
[ -x "$TOOLS/treeagent" ] || skip "no tree agent at $TOOLS/treeagent"
fa_require claude

printf '#!/bin/sh\nclaude "$@" | sed -u "s/\\"parent_task_id\\"/\\"x_parent_task_id\\"/g"\n' >"$T/claude-plain"
chmod +x "$T/claude-plain"
cat >"$T/wf.yaml" <<YAML
name: adapter-subagents
env_allow: [ANTHROPIC_*, CLAUDE_*, DISABLE_*, IS_SANDBOX]
agents:
  coder:
    cmd: [claude]
    adapter: claude
    timeout: $((60 * SLOW))s
  lead:
    cmd: [$TOOLS/treeagent, --record, $T/rec]
    timeout: $((90 * SLOW))s
  # Claude Code without parent_task_id: what started a nested sub-agent
  # is then told by the sub-agent message that made its Agent call.
  coder2:
    cmd: [$T/claude-plain]
    adapter: claude
    timeout: $((60 * SLOW))s
routes:
  plan: lead
  analyze: coder2
  "*": coder
YAML

s=$(now)
fa_run "$0" || fa_fail "the inner half failed (status $?)"
note "the sub-agent and the progress took $(elapsed "$s")s"

# Live: under its agent, busy, no process.
grep -q '^coder \[' "$T/tree.live" || fa_fail "live tree: $(cat "$T/tree.live")"
id=$(sed -n 's/^`-- \(coder\/[^ ]*\) .*/\1/p' "$T/tree.live" | head -n 1)
[ -n "$id" ] || fa_fail "no sub-agent in the live tree: $(cat "$T/tree.live")"
grep -q "^\`-- $id \[BUSY, inside its CLI, [01] tool calls*, depth 1, " "$T/tree.live" ||
    fa_fail "the live tree should show $id busy under coder: $(cat "$T/tree.live")"
jq -e --arg id "$id" '.agents[] | select(.id == $id) | .parent == "coder"
    and .state == "busy" and .metadata.virtual == true and .metadata.pid == null
    and .metadata.inside == "coder" and .metadata.kind == "claude-task"
    and .metadata.depth == 1 and .name == "fake child"' "$T/ps.live" >/dev/null ||
    fa_fail "map/agents/list should show $id as a busy virtual agent: $(cat "$T/ps.live")"
jq -e --arg id "$id" '.agents[] | select(.id == "coder") | .children | index($id) != null' "$T/ps.live" >/dev/null ||
    fa_fail "coder's children should name $id: $(cat "$T/ps.live")"
grep -q "^    $id  *busy  *- " "$T/ps.text" ||
    fa_fail "corral ps should show $id indented, busy, without a pid: $(cat "$T/ps.text")"

# Not a process: no stop.
grep -q "^stop-rc 1" "$T/stop.rc" && grep -q "runs inside agent coder's CLI: corral cannot stop it .*(error 3001)" "$T/stop.out" ||
    fa_fail "stopping $id should be refused: $(cat "$T/stop.rc" "$T/stop.out")"

# Ended: stopped, with its tool call and tokens, live and from the log.
expect_reply t1 'the sub-agent was started' 'the sub-agent finished'
grep -q "^\`-- $id \[STOPPED, inside its CLI, 1 tool call, depth 1, [0-9.]*s, [1-9][0-9]* tokens" "$T/tree.done" ||
    fa_fail "the live tree after the end: $(cat "$T/tree.done")"
"$CORRAL" tree --log "$T/audit" >"$T/tree.log" 2>&1 || fa_fail "corral tree --log: $(cat "$T/tree.log")"
grep -q "^[|\`]-- $id \[STOPPED, inside its CLI, 1 tool call, depth 1, [0-9.]*s, [1-9][0-9]* tokens" "$T/tree.log" ||
    fa_fail "corral tree --log: $(cat "$T/tree.log")"
grep -q "\"ev\":\"external_agent\",\"agent\":\"$id\",\"parent\":\"coder\",\"name\":\"fake child\",\"state\":\"STOPPED\".*\"tool_calls\":1" "$T/audit" ||
    fa_fail "no external_agent STOPPED event with its tool call: $(grep external_agent "$T/audit")"

# Its MAP events: registered under coder, busy, stopped.
# (jq -s: an empty file must not pass.)
jq -s -e --arg id "$id" 'map(select(.type == "agent_registered" and
    .data.agentId == $id and .data.parent == "coder" and .data.virtual == true))
    | length == 1' "$T/events" >/dev/null ||
    fa_fail "no agent_registered event for $id: $(cut -c1-300 "$T/events" | head) $(cat "$T/events.err")"
jq -s -e --arg id "$id" 'map(select(.type == "agent_state_changed" and
    .data.agentId == $id and .data.newState == "stopped")) | length == 1' \
    "$T/events" >/dev/null || fa_fail "no agent_state_changed to stopped for $id"

# Progress, for the live views: the sub-agent's tool call among it.
jq -s -e 'map(select(.type == "agent_progress" and .data.requestId == "t1"
    and (.data.text | test("\\[fake child\\] Bash")))) | length > 0' \
    "$T/events" >/dev/null ||
    fa_fail "no agent_progress event with the sub-agent's tool call: $(grep agent_progress "$T/events" | head -n 5)"
n=$(jq -s 'map(select(.type == "agent_progress" and .data.requestId == "t1")) | length' "$T/events")
[ "$n" -ge 2 ] || fa_fail "expected several progress events for t1, got $n"
# Rate-limited: half a second at least between two (the last, which goes
# with the reply, aside).  Timers never fire early, so this cannot flake.
gap=$(jq -s '[.[] | select(.type == "agent_progress" and .data.requestId == "t1")
    | .timestamp] | .[0:-1] | [range(1; length) as $i | .[$i] - .[$i - 1]]
    | min // 1000' "$T/events")
[ "$gap" -ge 400 ] || fa_fail "progress of t1 came ${gap} ms apart"

# Progress to the parent: the lead got its claude child's, marked.
grep -q '^progress lead coder-[0-9]* Bash {"command":"echo hi"' "$T/rec" ||
    fa_fail "the lead got no progress from its claude child: $(grep progress "$T/rec")"
# (Gathered into one envelope, or not, as the timing goes.)
grep '^progress lead coder-[0-9]* ' "$T/rec" | grep -q 'tool result: hi' &&
    grep '^progress lead coder-[0-9]* ' "$T/rec" | grep -q 'The command printed: hi' ||
    fa_fail "the lead's progress lacks the child's text: $(grep progress "$T/rec")"
expect_reply p1 '"text":"lead(The command printed: hi)"'
# ... all of it before the child's result.
p=$(grep -n '^progress lead ' "$T/rec" | tail -n 1 | cut -d: -f1)
r=$(grep -n '^result lead coder-' "$T/rec" | head -n 1 | cut -d: -f1)
[ -n "$p" ] && [ -n "$r" ] && [ "$p" -lt "$r" ] ||
    fa_fail "the lead should get its child's progress before its result: $(cat "$T/rec")"

# Nested: the sub-agent the outer one started is under it, not flat
# under coder, in map/agents/list, ps, top, the live tree, the graph, the
# MAP events, the audit log and the tree drawn from it.
inner=$(jq -r '[.agents[] | select(.metadata.virtual and (.parent | startswith("coder/")))]
    | if length == 1 then .[0].id else empty end' "$T/ps.nest.json")
[ -n "$inner" ] || fa_fail "one nested sub-agent should be listed under another: $(cat "$T/ps.nest.json")"
outer=$(jq -r --arg id "$inner" '.agents[] | select(.id == $id) | .parent' "$T/ps.nest.json")
jq -e --arg i "$inner" --arg o "$outer" '
    (.agents[] | select(.id == $i) | .metadata.depth == 2 and .metadata.inside == "coder"
        and .ownerId == $o and .state == "stopped")
    and (.agents[] | select(.id == $o) | .metadata.depth == 1 and .parent == "coder"
        and (.children | index($i) != null))
    and (.agents[] | select(.id == "coder") | (.children | index($i)) == null
        and (.children | index($o)) != null)
    and ([.agents[].id] | index($o) < index($i))' "$T/ps.nest.json" >/dev/null ||
    fa_fail "map/agents/list should nest $inner under $outer under coder: $(cat "$T/ps.nest.json")"
grep -q "^      $inner  *stopped  *- " "$T/ps.nest" ||
    fa_fail "corral ps should show $inner two levels in: $(cat "$T/ps.nest")"
grep -q "^    $outer  *stopped  *- " "$T/ps.nest" ||
    fa_fail "corral ps should show $outer one level in: $(cat "$T/ps.nest")"
grep -q "^    $inner  *stopped  *- " "$T/top.nest" ||
    fa_fail "corral top should show $inner two levels in: $(cat -v "$T/top.nest")"
jq -e --arg i "$inner" --arg o "$outer" '[.edges[] | select(.to == $i)]
    == [{"from": $o, "to": $i, "type": "parent-child"}]' "$T/graph.nest" >/dev/null ||
    fa_fail "map/structure/graph should have one edge $outer -> $inner: $(cat "$T/graph.nest")"
# In the text tree: under its outer one, one level deeper.
awk -v o="$outer" -v i="$inner" '
    index($0, "-- " o " [") { d = index($0, "-- " o " ["); next }
    d && index($0, "-- " i " [") == d + 4 && index($0, "depth 2,") { ok = 1 }
    END { exit !ok }' "$T/tree.nest" ||
    fa_fail "the live tree should draw $inner under $outer: $(cat "$T/tree.nest")"
"$CORRAL" tree --log "$T/audit" >"$T/tree.nestlog" 2>&1 || fa_fail "corral tree --log: $(cat "$T/tree.nestlog")"
awk -v o="$outer" -v i="$inner" '
    index($0, "-- " o " [") { d = index($0, "-- " o " ["); next }
    d && index($0, "-- " i " [") == d + 4 && index($0, "depth 2,") { ok = 1 }
    END { exit !ok }' "$T/tree.nestlog" ||
    fa_fail "corral tree --log should draw $inner under $outer: $(cat "$T/tree.nestlog")"
grep -q "\"ev\":\"external_agent\",\"agent\":\"$inner\",\"parent\":\"$outer\",.*\"inside\":\"coder\"" "$T/audit" ||
    fa_fail "the audit log should name $outer as $inner's parent: $(grep "$inner" "$T/audit" | head -n 3)"
jq -e '[.agents[] | select(.metadata.virtual and (.parent | startswith("coder2/")))]
    | length == 1 and .[0].metadata.depth == 2 and .[0].metadata.inside == "coder2"' \
    "$T/ps.nest2.json" >/dev/null ||
    fa_fail "without parent_task_id, the Agent call's sub-agent should still be the parent: $(cat "$T/ps.nest2.json")"
jq -s -e --arg i "$inner" --arg o "$outer" 'map(select(.type == "agent_registered" and
    .data.agentId == $i and .data.parent == $o and .data.ownerId == $o)) | length == 1' \
    "$T/events" >/dev/null || fa_fail "no agent_registered event for $inner under $outer"
exit 0
