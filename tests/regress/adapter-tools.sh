#!/bin/sh
# corral's tools (tools:) in the real CLIs, offline against the fake API
# (tests/fakeapi): the fake model calls corral mcp's tools by the names each
# CLI gives them ([[mcp:TOOL:JSON]]).  Checked: a three-level cross-vendor
# tree, Claude Code planner -> Codex coder -> Gemini reviewer, each spawn
# made by the model inside the CLI, whose result reaches the top; Gemini's
# model spawns and lists too; corral tree --log draws the three levels with
# tokens and cost per node; the fan-out limit (children: {max: 3}) refuses
# the fourth spawn and the model reads the refusal as the tool's result;
# with --no-control the log says why no tools are offered.
if [ "${1:-}" = --inner ]; then
	. "$(dirname "$0")/adapter-lib.sh"
	serve_up "$T/wf.yaml"
	# js TEXT: TEXT as the inside of a JSON string.
	js() {
		printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g'
	}
	review='[[mcp:spawn_agent:{"agent":"reviewer","task":"review it [[say:looks good]]"}]]'
	code="code it $review"
	feed "$(envl t1 plan "$(js "build it [[mcp:spawn_agent:{\"agent\":\"coder\",\"task\":\"$(js "$code")\"}]]")")"
	wait_out 1 90 || exit 1
	echo "tree $(since "$FED_AT")" >"$T/times"
	feed "$(envl t2 analyze "$(js 'look [[mcp:spawn_agent:{"agent":"helper","task":"count"}]] [[mcp:list_agents:{}]]')")"
	wait_out 2 60 || exit 1
	echo "gemini $(since "$FED_AT")" >>"$T/times"
	s='[[mcp:spawn_agent:{"agent":"sleeper","task":"wait","wait":false}]]'
	feed "$(envl t3 plan "$(js "four at once $s $s $s $s")")"
	wait_out 3 60 || exit 1
	echo "fanout $(since "$FED_AT")" >>"$T/times"
	: >"$T/release"		# the sleepers finish; so does t3's job
	serve_down 30
	[ $RC = 0 ] || exit $RC
	serve_keep main
	# Without a socket the tools cannot be offered: the log says so.
	"$CORRAL" -v run "$T/wf.yaml" --no-control --goal '[[say:alone]]' \
	    >"$T/out.nc" 2>"$T/err.nc"
	echo "nocontrol rc $?" >>"$T/times"
	exit 0
fi

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/adapter-lib.sh"
fa_require claude codex gemini

echo '{"steps":[{"wait_file":"'"$T/release"'"}]}' >"$T/hang.json"
cat >"$T/wf.yaml" <<YAML
name: adapter-tools
env_allow: [ANTHROPIC_*, CLAUDE_*, DISABLE_*, IS_SANDBOX, CODEX_*, FAKEAPI_*, GEMINI_*, GOOGLE_*]
agents:
  planner:
    description: splits a goal
    cmd: [claude]
    adapter: claude
    tools: [spawn, wait, list]
    children: {max: 3}
    timeout: $((120 * SLOW))s
  coder:
    description: writes code
    cmd: [codex]
    adapter: {type: codex, price: {input: 1.25, output: 10}}
    tools: [spawn, wait]
    autostart: false
    timeout: $((90 * SLOW))s
  reviewer:
    description: reviews code
    cmd: [gemini]
    adapter: {type: gemini, price: {input: 0.3, output: 2.5}}
    autostart: false
    timeout: $((60 * SLOW))s
  solo:
    cmd: [gemini]
    adapter: {type: gemini, price: {input: 0.3, output: 2.5}}
    tools: [spawn, list]
    timeout: $((60 * SLOW))s
  helper:
    cmd: [$TOOLS/treeagent]
    autostart: false
  sleeper:
    cmd: [$TOOLS/treeagent, --plan, $T/hang.json]
    autostart: false
    timeout: $((60 * SLOW))s
routes:
  analyze: solo
  "*": planner
YAML

s=$(now)
fa_run "$0" || { rc=$?; use_run main; fa_fail "the inner half failed (status $rc)"; }
note "3 requests with tools and a run without took $(elapsed "$s")s; $(tr '\n' ' ' <"$T/times")"
use_run main

# The three-level tree: each spawn by the model inside its CLI, and the
# reviewer's answer in the planner's reply.
expect_reply t1 '"text":"The tool said: coder-' 'The tool said: reviewer-' \
    'looks good' '"model":"claude-'
coder=$(sed -n 's/.*"ev":"spawn_child","agent":"\(coder-[0-9]*\)".*"parent":"planner".*/\1/p' "$T/audit$RUN")
[ -n "$coder" ] || fa_fail "no coder spawned by planner in the audit log"
grep -q "\"ev\":\"spawn_child\",\"agent\":\"reviewer-[0-9]*\".*\"parent\":\"$coder\"" "$T/audit$RUN" ||
    fa_fail "no reviewer spawned by $coder in the audit log"
grep '"ev":"adapter_event","agent":"planner"' "$T/audit$RUN" | grep '"kind":"tool_use"' |
    grep -q '"tool":"mcp__corral__spawn_agent"' ||
    fa_fail "Claude Code's model did not call mcp__corral__spawn_agent"
grep "\"ev\":\"adapter_event\",\"agent\":\"solo\"" "$T/audit$RUN" | grep -q '"tool_name":"mcp_corral_spawn_agent"' ||
    fa_fail "Gemini's model did not call mcp_corral_spawn_agent"
grep -q "\"ev\":\"adapter_event\",\"agent\":\"$coder\".*mcp_tool_call" "$T/audit$RUN" ||
    fa_fail "Codex's model made no MCP tool call"
"$CORRAL" tree --log "$T/audit$RUN" >"$T/tree" 2>&1 || fa_fail "corral tree failed: $(cat "$T/tree")"
note "$(sed -n '/^planner/,/reviewer/p' "$T/tree")"
grep -q '^planner \[STOPPED, depth 0, [0-9.]*s, [1-9][0-9]* tokens, \$0\.[0-9]*[1-9]' "$T/tree" ||
    fa_fail "corral tree: no tokens and cost for planner: $(cat "$T/tree")"
grep -q "^[|\`]-- $coder \[STOPPED, depth 1, [0-9.]*s, [1-9][0-9]* tokens, \\\$0\\.[0-9]*[1-9]" "$T/tree" ||
    fa_fail "corral tree: $coder is not at depth 1 with tokens and cost: $(cat "$T/tree")"
grep -q '^[| ]   `-- reviewer-[0-9]* \[STOPPED, depth 2, [0-9.]*s, [1-9][0-9]* tokens, \$0\.[0-9]*[1-9]' "$T/tree" ||
    fa_fail "corral tree: no reviewer at depth 2 with tokens and cost: $(cat "$T/tree")"

# Gemini's model spawns and lists.
expect_reply t2 'The tool said: helper-' 'finished' 'solo (solo): busy, depth 0' '(you)'
grep -q '"ev":"spawn_child","agent":"helper-[0-9]*".*"parent":"solo"' "$T/audit$RUN" ||
    fa_fail "no helper spawned by solo"

# The fan-out limit: three start, the fourth is refused, and the model
# read the refusal as the tool's result.
r=$(reply_of t3)
[ "$(printf '%s' "$r" | grep -o 'Started sleeper-' | wc -l)" = 3 ] ||
    fa_fail "three sleepers should have started: $r"
expect_reply t3 "corral refused to start agent 'sleeper': fan-out limit: planner already has 3 children alive, the limit is 3" \
    'error 4000; retryable'
grep -q '"ev":"spawn_refused","agent":"planner".*fan-out limit' "$T/audit$RUN" ||
    fa_fail "no spawn_refused for planner's fourth child"

# --no-control: no tools, and the log says why.
grep -q 'nocontrol rc 0' "$T/times" || fa_fail "the run without a socket failed: $(tail -5 "$T/err.nc")"
grep -q 'agent planner: tools (spawn,wait,list) are not offered to its CLI: corral has no control socket' "$T/err.nc" ||
    fa_fail "no word of the tools not offered: $(grep -i tools "$T/err.nc")"
exit 0
