#!/bin/sh
# The claude adapter with the real Claude Code, offline against the fake
# API (tests/fakeapi), driven through corral serve: one long-lived process
# answers a text turn and a tool-use turn in one conversation (same
# session, one spawn), with per-turn usage and cost (not Claude Code's
# cumulative total_cost_usd); a background sub-agent appears in the audit
# log as an external_agent child and in `corral tree`; an API error (529)
# becomes an error envelope within a bounded time, and a refused
# connection an UNAVAILABLE one; a request that times
# out interrupts the turn and the same process answers the next one; an
# agent with session: fresh starts a new conversation per request (and,
# idle with heartbeat: set, stays READY on its pings); SIGTERM
# during a turn stops corral and claude within the stop grace and timeout.
if [ "${1:-}" = --inner ]; then
	. "$(dirname "$0")/adapter-lib.sh"
	serve_up "$T/wf.yaml"
	feed "$(envl r1 execute 'first [[say:one]]')"
	wait_out 1 60 || exit 1
	feed "$(envl r2 execute 'run it [[tool]]')"
	wait_out 2 60 || exit 1
	feed "$(envl r3 execute 'delegate [[sub]]')"
	wait_out 3 60 || exit 1
	feed "$(envl r4 execute "stall [[slow:$((60 * SLOW))]]" ',"ttl_ms":'$((1500 * SLOW)))"
	wait_out 4 30 || exit 1
	echo "timeout $(since "$FED_AT")" >"$T/times"
	feed "$(envl r5 execute 'after the interrupt [[say:still here]]')"
	wait_out 5 60 || exit 1
	# Last for coder: the failed message stays in its conversation, and
	# the fake server would see its marker in the next prompt too.
	feed "$(envl r6 execute 'fail [[error529]]')"
	feed "$(envl d1 retrieve 'nobody listens')"
	wait_out 7 30 || exit 1
	echo "error529 $(since "$FED_AT")" >>"$T/times"
	sleep 2		# fresh idles on: only its pings say it is alive
	feed "$(envl f1 analyze 'fresh one [[say:f1]]')"
	wait_out 8 60 || exit 1
	feed "$(envl f2 analyze 'fresh two [[say:f2]]')"
	wait_out 9 60 || exit 1
	serve_down 30
	[ $RC = 0 ] || exit $RC
	serve_keep main
	# Shutdown in the middle of a turn: stdin closed, SIGTERM after the
	# grace, so a busy claude cannot hold corral.
	serve_up "$T/wf.yaml"
	feed "$(envl z1 execute "busy [[slow:$((60 * SLOW))]]")"
	wait_err 'agent coder: claude session' 30 || exit 1
	pid=$(sed -n 's/.*agent coder: spawned (pid \([0-9]*\)).*/\1/p' "$T/err")
	term_down 20
	wait_until 5 '[ "$(ps -o pid= -p "$pid" | wc -l)" = 0 ]'
	echo "shutdown $TERM_SECS rc $RC alive $(ps -o pid= -p "$pid" | wc -l)" >>"$T/times"
	exit 0
fi

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/adapter-lib.sh"
fa_require claude

cat >"$T/wf.yaml" <<YAML
name: adapter-claude
env_allow: [ANTHROPIC_*, CLAUDE_*, DISABLE_*, IS_SANDBOX]
agents:
  coder:
    cmd: [claude]
    adapter: claude
    timeout: $((60 * SLOW))s
  fresh:
    cmd: [claude]
    adapter: {type: claude, session: fresh, intent: finalize}
    timeout: $((60 * SLOW))s
    heartbeat: {interval: $((500 * SLOW))ms, misses: 6}
  offline:
    cmd: [claude]
    adapter: claude
    env: {ANTHROPIC_BASE_URL: "http://127.0.0.1:9"}
    timeout: $((60 * SLOW))s
routes:
  retrieve: offline
  analyze: fresh
  "*": coder
YAML

s=$(now)
fa_run "$0" || { rc=$?; use_run main; fa_fail "the inner half failed (status $rc)"; }
note "9 requests through claude took $(elapsed "$s")s; $(tr '\n' ' ' <"$T/times")"
use_run main

# Text turn, then a tool turn in the same conversation and process.
expect_reply r1 '"type":"text","text":"one"' '"model":"claude-' \
    '"cost":{"input_tokens":100,"output_tokens":20,"usd":0.0008}'
expect_reply r2 '"text":"The command printed: hi"' '"num_turns":2' \
    '"cost":{"input_tokens":200,"output_tokens":40,"usd":0.0016}'
s1=$(reply_of r1 | sed -n 's/.*"session_id":"\([^"]*\)".*/\1/p')
s2=$(reply_of r2 | sed -n 's/.*"session_id":"\([^"]*\)".*/\1/p')
[ -n "$s1" ] && [ "$s1" = "$s2" ] ||
    fa_fail "r1 and r2 should share one session, got '$s1' and '$s2'"
[ "$(grep -c 'corral: agent coder: spawned' "$T/err$RUN")" = 1 ] ||
    fa_fail "coder should have been spawned once: $(grep 'agent coder: spawned' "$T/err$RUN")"
grep -q '"ev":"adapter_event","agent":"coder".*"kind":"tool_use"' "$T/audit$RUN" ||
    fa_fail "no tool_use adapter_event in the audit log"

# The sub-agent: both results of the run, the child in the log and tree.
expect_reply r3 'the sub-agent was started' 'the sub-agent finished' \
    '"cost":{"input_tokens":400,"output_tokens":80,"usd":0.0032}'
grep -q '"ev":"external_agent","agent":"coder/[^"]*","parent":"coder","name":"fake child","state":"BUSY"' "$T/audit$RUN" ||
    fa_fail "no external_agent BUSY event for the sub-agent: $(grep external "$T/audit$RUN")"
grep -q '"ev":"external_agent","agent":"coder/[^"]*","parent":"coder",.*"state":"STOPPED".*"tokens":120,"tool_calls":0' "$T/audit$RUN" ||
    fa_fail "no external_agent STOPPED event, with its tokens, for the sub-agent: $(grep external "$T/audit$RUN")"
grep -q 'agent coder: sub-agent coder/.* started (fake child, in the background)' "$T/err$RUN" ||
    fa_fail "the sub-agent's start is not in corral's log"
"$CORRAL" tree --log "$T/audit$RUN" >"$T/tree" 2>&1 || fa_fail "corral tree failed: $(cat "$T/tree")"
grep -q '^`-- coder/.*inside its CLI' "$T/tree" ||
    fa_fail "corral tree does not show the sub-agent under coder: $(cat "$T/tree")"

# The timeout interrupts the turn; the same process answers the next one.
expect_reply r4 '"code":"timeout"' '"category":"TIMEOUT"'
grep -q 'agent coder: interrupting claude (request r4 given up)' "$T/err$RUN" ||
    fa_fail "no interrupt for r4 in the log"
grep -q 'agent coder: the interrupted turn ended (error_during_execution)' "$T/err$RUN" ||
    fa_fail "the interrupted turn's end was not seen"
expect_reply r5 '"text":"still here"'
s5=$(reply_of r5 | sed -n 's/.*"session_id":"\([^"]*\)".*/\1/p')
[ "$s5" = "$s1" ] || fa_fail "r5 should continue session $s1, got '$s5'"

# The API error: an error envelope, quickly.
expect_reply r6 '"type":"error"' '"code":"api_error"' '"category":"UNAVAILABLE"' \
    'API Error: 529' '"api_error_status":529'
t=$(sed -n 's/^error529 //p' "$T/times")
fcmp "$t" "<" $((10 * SLOW)) || fa_fail "the 529 error took ${t}s"
[ "$(grep -c 'corral: agent coder: spawned' "$T/err$RUN")" = 1 ] ||
    fa_fail "claude was restarted: $(grep 'agent coder: spawned' "$T/err$RUN")"

# The API refuses the connection: UNAVAILABLE and retryable, as the other
# adapters say, not an INTERNAL claude_error.
expect_reply d1 '"code":"api_error"' '"category":"UNAVAILABLE"' \
    '"retryable":true' '"api_error":"connection_failed"' 'ECONNREFUSED'

# session: fresh -- a new conversation for each request.  The agent was
# idle for seconds before f1: its heartbeats kept it READY.
grep -q 'agent fresh: READY -> UNAVAILABLE' "$T/err$RUN" &&
    fa_fail "fresh went UNAVAILABLE while idle: its pings were not answered"
expect_reply f1 '"intent":"finalize"' '"text":"f1"'
expect_reply f2 '"text":"f2"' '"cost":{"input_tokens":100,"output_tokens":20,"usd":0.0008}'
sf1=$(reply_of f1 | sed -n 's/.*"session_id":"\([^"]*\)".*/\1/p')
sf2=$(reply_of f2 | sed -n 's/.*"session_id":"\([^"]*\)".*/\1/p')
[ -n "$sf1" ] && [ -n "$sf2" ] && [ "$sf1" != "$sf2" ] ||
    fa_fail "session: fresh should give f1 and f2 different sessions: '$sf1' '$sf2'"
exit 0
