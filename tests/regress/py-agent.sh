#!/bin/sh
# agents/python/corral_agent.py, the module for agents in Python:
#
# 1. Without corral, lines piped into an agent: a ping is answered, a
#    notice, a message and a stray child result are not, invalid lines
#    are skipped (a line nested too deep for Python's json too), a
#    handler's exception, a reply that is not an envelope and an intent
#    without a handler are answered with error envelopes, so is a task
#    whose handler raises after writing progress, print() and a
#    subprocess's output go to stderr, the last line may lack its
#    newline, and at end of input the agent exits 0.
# 2. examples/python-team: the lead spawns one lookup child per term,
#    the children send progress to it and finalize, the writer's cheat
#    sheet is the result; a term not in the glossary is reported.
# 3. A tree: a child that holds until its parent sends it "go" makes a
#    second spawn hit the fan-out limit (CallError 4000); send to the
#    child, wait for it, a kept child reports progress with map/send,
#    list_agents sees it, stop stops it, an unknown entry is 3004.
# 4. corral serve, heartbeats on: a handler that stays busy until the
#    reader thread answered three pings finishes and the agent is never
#    UNAVAILABLE; a handler's exception gives an error envelope and the
#    same process answers the next input; an invalid envelope the agent
#    wrote comes back as one notice that is not answered; a weak reply's
#    reflect request carries corral.reflect {of, intent, round}.
. "$(dirname "$0")/lib.sh"
. "$TESTDIR/tools/wflib.sh"

command -v python3 >/dev/null 2>&1 || skip "python3 is missing"
python3 -c 'import sys; sys.exit(sys.version_info < (3, 9))' ||
    skip "python3 is older than 3.9: $(python3 --version 2>&1)"
PYMOD="$SRCDIR/agents/python"
[ -f "$PYMOD/corral_agent.py" ] || fail "no module at $PYMOD/corral_agent.py"
EX="$SRCDIR/examples/python-team"

# audit_has LOG [--arg NAME VALUE] CONDITION: some line of the audit log
# meets the jq CONDITION (jq 1.6's -e looks only at the last line).
audit_has() {
	_log=$1
	shift
	[ -n "$(jq -c "$@" "$_log" | grep -v '^false$' | grep -v '^null$' | head -n 1)" ]
}

# --- 1. Lines piped in, no corral ------------------------------------------
cat >"$T/solo.py" <<'PY'
import subprocess
from corral_agent import Agent

agent = Agent("Solo")

@agent.on("plan")
def plan(req):
    print("print() goes to stderr")
    subprocess.run(["echo", "a subprocess's stdout goes to stderr"])
    if req.text == "raise":
        raise RuntimeError("boom on purpose")
    return agent.reply(req, "planned " + req.text, confidence=0.9,
                       next_actions=[("execute", "do it", {"n": 1})])

@agent.on("execute")
def execute(req):
    return {"not": "an envelope"}

@agent.on("task")
def task(req):
    agent.write(agent.reply(req, "half way", intent="execute"))
    raise KeyError("after progress")

agent.run()
PY
req() {
	printf '{"protocol":"multiagent-1.0","role":"user","intent":"%s","task":"t","content":{"type":"text","text":"%s"},"trace":{"id":"%s"}}' "$1" "$2" "$3"
}
{
	echo 'not json at all'
	echo '[1, 2, 3]'
	python3 -c 'print("{\"a\":" * 3000 + "1" + "}" * 3000)'
	echo '{"jsonrpc":"2.0","id":7,"method":"ping"}'
	echo '{"protocol":"multiagent-1.0","role":"system","intent":"route","task":"Report an error","content":{"type":"error","text":"bad line"},"trace":{"id":"n-1"},"corral":{"kind":"notice"}}'
	echo '{"protocol":"multiagent-1.0","role":"agent","intent":"execute","task":"hi","content":{"type":"text","text":"hi"},"trace":{"id":"m-1"},"corral":{"kind":"message","from":"other"}}'
	echo '{"protocol":"multiagent-1.0","role":"agent","intent":"finalize","task":"x","content":{"type":"text","text":"x"},"trace":{"id":"c-1"},"corral":{"kind":"child_result","child":"k-1","spawn":"s-1","ok":true}}'
	req plan raise r1; echo
	req execute x r2; echo
	req analyze x r3; printf '\r\n'
	echo '{"protocol":"multiagent-1.0","role":"agent","intent":"execute","task":"t","content":{"type":"text","text":"x"},"trace":{"id":"t1"},"corral":{"kind":"task","parent":"p"}}'
	echo '{"jsonrpc":"2.0","id":"s","method":"no/such"}'
	echo '{"jsonrpc":"2.0","method":"ping"}'
	echo
	req plan "the last line" r4
} >"$T/solo.in"
PYTHONPATH=$PYMOD python3 "$T/solo.py" <"$T/solo.in" >"$T/solo.out" 2>"$T/solo.err"
rc=$?
[ $rc = 0 ] || fail "the agent exited $rc at end of input: $(tail -n 5 "$T/solo.err")"
n=$(wc -l <"$T/solo.out")
[ "$n" = 8 ] || fail "expected 8 lines on stdout (ping, -32601, 4 replies, a task's progress and error), got $n: $(cat "$T/solo.out")"
jq -e . "$T/solo.out" >/dev/null 2>&1 || fail "stdout holds a line that is not JSON: $(cat "$T/solo.out")"
grep -qxF '{"jsonrpc":"2.0","id":7,"result":{}}' "$T/solo.out" ||
    fail "expected the ping answered: $(cat "$T/solo.out")"
grep -qxF '{"jsonrpc":"2.0","id":"s","error":{"code":-32601,"message":"method not found"}}' "$T/solo.out" ||
    fail "expected -32601 for an unknown method: $(cat "$T/solo.out")"
# Each request, and nothing else, has exactly one reply naming it.
parents=$(jq -r 'select(.protocol) | .trace.parents | join(",")' "$T/solo.out" | tr '\n' ' ')
[ "$parents" = "r1 r2 r3 t1 t1 r4 " ] ||
    fail "expected one reply to each of r1 r2 r3 r4 and two envelopes for t1, in order; the replies name: $parents"
audit_all "$T/solo.out" 'select(.protocol) | .agent.name == "Solo" and
    (.trace.id | test("^Solo-[0-9]+-[0-9]+$")) and
    (.timestamp | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$"))' ||
    fail "expected replies with agent, trace.id and timestamp: $(cat "$T/solo.out")"
reply() {
	jq -c --arg id "$1" "select(.trace.parents == [\$id]) | $2" "$T/solo.out"
}
[ "$(reply r1 '[.intent, .content.type, .content.text, .content.data.code, .content.data.category]')" = \
    '["plan","error","RuntimeError: boom on purpose","agent_error","INTERNAL"]' ] ||
    fail "expected an error envelope for the handler's exception: $(reply r1 .)"
reply r2 '.content.text' | grep -q '^"ValueError: the execute handler.s reply is not a valid envelope: protocol' ||
    fail "expected an error envelope for a reply that is not an envelope: $(reply r2 .)"
[ "$(reply r3 '[.content.type, .content.data.category]')" = '["error","REJECTED"]' ] ||
    fail "expected an error envelope for an intent without a handler: $(reply r3 .)"
# A task's progress does not end it: the exception after it still does.
[ "$(jq -c 'select(.trace.parents == ["t1"]) | [.intent, .content.type, .content.text]' "$T/solo.out" | tr '\n' ' ')" = \
    '["execute","text","half way"] ["finalize","error","KeyError: '"'after progress'"'"] ' ] ||
    fail "expected the task's progress, then its error: $(grep '"t1"' "$T/solo.out")"
[ "$(reply r4 '[.intent, .content.text, .confidence.score, .outputs.next_actions[0].args.n]')" = \
    '["plan","planned the last line",0.9,1]' ] ||
    fail "expected the last line (no newline) answered: $(reply r4 .)"
for s in 'Solo: skipped an invalid line' 'Solo: skipped an invalid line (RecursionError' 'Solo: skipped a line that is not a JSON object' \
    'Solo: corral reports a problem with our output: bad line' \
    'Solo: message from other ignored' 'Solo: result of child k-1 ignored' \
    'RuntimeError: boom on purpose' 'print() goes to stderr' \
    "a subprocess's stdout goes to stderr"; do
	grep -qF -- "$s" "$T/solo.err" || fail "expected '$s' on stderr: $(cat "$T/solo.err")"
done
note "1. piped lines: 8 lines out, every other line skipped or logged"

# --- 2. The example ---------------------------------------------------------
LOG="$T/example.ndjson"
goal="explain: backpressure, jitter, unicorns and circuit breaker"
corral_run 30 run "$EX/workflow.yaml" --goal "$goal" --log "$LOG"
expect_rc 0
[ "$(result_field "$OUT" .intent)" = finalize ] ||
    fail "expected a finalize result, got: $(head -c 300 "$OUT")"
text=$(result_field "$OUT" .content.text)
for term in backpressure jitter "circuit breaker"; do
	def=$(grep "^$term:" "$EX/glossary.txt" | sed 's/^[^:]*: //')
	printf '%s\n' "$text" | grep -qF -- "- $term: $def (glossary.txt:" ||
	    fail "expected the definition of $term in the result: $text"
done
printf '%s\n' "$text" | grep -qxF -- "- unicorns: not in the glossary" ||
    fail "expected unicorns reported missing: $text"
order=$(printf '%s\n' "$text" | sed -n 's/^- \([^:]*\):.*/\1/p' | tr '\n' ',')
[ "$order" = "backpressure,jitter,unicorns,circuit breaker," ] ||
    fail "expected the terms in the goal's order, got $order"
printf '%s\n' "$text" | grep -qxF "3 of 4 terms found." || fail "expected '3 of 4 terms found.': $text"
[ "$(result_field "$OUT" .confidence.score)" = 0.68 ] ||
    fail "expected confidence 0.68 (0.9 x 3/4), got $(result_field "$OUT" .confidence.score)"
audit_has "$LOG" 'select(.ev == "handshake" and .agent == "lead")' ||
    fail "expected the lead's handshake in the audit log"
nkids=$(jq -r 'select(.ev == "spawn_child" and .parent == "lead" and .name == "lookup") | .agent' "$LOG" | wc -l)
[ "$nkids" = 4 ] || fail "expected 4 lookup children, got $nkids"
nres=$(jq -r 'select(.ev == "child_result" and .agent == "lead" and .env.corral.ok == true) | .id' "$LOG" | wc -l)
[ "$nres" = 4 ] || fail "expected 4 child results delivered to the lead, got $nres"
nsend=$(jq -r 'select(.ev == "send" and .agent == "lead") | .env.corral.from' "$LOG" | grep -c '^lookup-')
[ "$nsend" = 3 ] || fail "expected 3 progress messages from lookup children (one per term found), got $nsend"
log_has "lead: progress from lookup-" || fail "expected the lead's progress lines in corral's log"
# The workflow's own routes; the children's tasks are addressed to them.
routes=$(audit_routes "$LOG" | awk '$2 !~ /^lookup-/ { print $1 "/" $2 }' | tr '\n' ' ')
[ "$routes" = "plan/lead summarize/writer " ] ||
    fail "expected plan to the lead, then summarize to the writer: $routes"
expect_audit_ok "$LOG"
# Replayed: the lead's stand-in spawns its four children again, each a
# stand-in that answers as its child did; no difference.
expect_replay "$LOG" "$EX/workflow.yaml"
note "2. example: 4 children, 3 progress messages, the cheat sheet; replayed"

# --- The agents of parts 3 and 4 ---------------------------------------------
cat >"$T/team.py" <<'PY'
import sys
import time
from corral_agent import E_LIMIT, E_UNKNOWN_AGENT, Agent, CallError

role = sys.argv[1]
agent = Agent(role, ready="handshake" if role == "boss" else "spawn")
messages, notices = [], []

@agent.on_message
def on_message(m):
    messages.append(f"{m.sender}: {m.text}")

@agent.on_notice
def on_notice(m):
    notices.append(m.data.get("code"))

def tree(req):
    """Spawn, refuse, send, wait, keep, list, stop."""
    hold = agent.spawn("kid", agent.envelope("execute", "hold", "hold",
                                             params={"mode": "hold"}))
    try:
        agent.spawn("kid", "a second child")
        refused = None
    except CallError as e:
        refused = e.code
    sent = agent.send(hold.id, "go")
    [held] = agent.wait([hold], timeout=20)
    kept = agent.spawn("kid", agent.envelope("execute", "report", "report",
                                             params={"mode": "report"}),
                       keep=True)
    [rep] = agent.wait([kept], timeout=20)
    listed = [a["id"] for a in agent.list_agents()]
    stopped = agent.stop(kept.id)
    try:
        agent.spawn("nobody", "x")
        unknown = None
    except CallError as e:
        unknown = e.code
    return agent.reply(req, "tree done", intent="finalize", data={
        "hold": hold.id, "kept": kept.id, "refused": refused,
        "sent": sent, "held": [held.ok, held.child, held.data],
        "report": [rep.ok, rep.child, rep.data], "messages": messages,
        "listed": listed, "stopped": stopped, "unknown": unknown,
        "limit_codes": [E_LIMIT, E_UNKNOWN_AGENT]})

@agent.on("plan")
def plan(req):
    if req.text == "tree":
        return tree(req)
    if req.text == "raise":
        raise RuntimeError("boom on purpose")
    if req.text == "notice":
        # Not an envelope corral accepts: it answers with a notice, which
        # arrives before the next action this reply proposes.
        agent.write({"protocol": "multiagent-1.0", "role": "agent",
                     "intent": "bogus", "task": "x",
                     "content": {"type": "text", "text": "x"}})
        return agent.reply(req, "wrote a bad line",
                           next_actions=[("execute", "count notices")])
    if req.text == "busy":
        # Busy without reading: only the reader thread answers pings.
        start = agent.pings
        while agent.pings - start < 3:
            time.sleep(0.05)
        return agent.reply(req, "busy through 3 pings", intent="finalize",
                           confidence=0.9)
    if req.text == "weak":
        return agent.reply(req, "not sure", confidence=0.2)
    return agent.reply(req, "plain", intent="finalize", confidence=0.9)

@agent.on("execute")
def execute(req):
    return agent.reply(req, "notices: " + ",".join(map(str, notices)),
                       intent="finalize", confidence=0.9)

@agent.on("task")
def task(req):
    if req.param("mode") == "hold":
        agent.wait_for(lambda: messages, timeout=20)
        return agent.reply(req, "held", data={"got": messages})
    agent.send_to_parent("half way")
    return agent.reply(req, "reported", data={"mode": "report"})

@agent.on("reflect")
def reflect(req):
    return agent.reply(req, "reviewed", intent="finalize", confidence=0.8,
                       data={"reflect": req.reflect,
                             "parents": req.env["trace"]["parents"],
                             "author": req.author.get("id"),
                             "text": req.text})

agent.run()
PY
write_team() {
	cat >"$T/$1" <<YAML
defaults:
  env: {PYTHONPATH: $PYMOD}
agents:
  boss:
    cmd: [python3, $T/team.py, boss]
    ready: handshake
    children: {max: 1}
    $2
  kid:
    cmd: [python3, $T/team.py, kid]
    autostart: false
  reviewer:
    cmd: [python3, $T/team.py, reviewer]
routes:
  plan: boss
  execute: boss
  reflect: reviewer
limits: {deadline: $((40 * SLOW))s}
YAML
}

# --- 3. A tree ----------------------------------------------------------------
write_team tree.yaml ""
LOG="$T/tree.ndjson"
corral_run 40 run "$T/tree.yaml" --goal tree --log "$LOG"
expect_rc 0
# d FILTER: a jq filter over the result's content.data, compact.
d() { head -n 1 "$OUT" | jq -c -r ".content.data | $1" 2>/dev/null; }
hold=$(d .hold) kept=$(d .kept)
[ "$(d .refused)" = 4000 ] || fail "expected the second spawn refused with 4000 (fan-out), got $(d .refused)"
[ "$(d .unknown)" = 3004 ] || fail "expected 3004 for an unknown entry, got $(d .unknown)"
[ "$(d .sent)" = "[\"$hold\"]" ] || fail "expected send to reach $hold, got $(d .sent)"
[ "$(d .held)" = "[true,\"$hold\",{\"got\":[\"boss: go\"]}]" ] ||
    fail "expected the held child to finish with the parent's go: $(d .held)"
[ "$(d .report)" = "[true,\"$kept\",{\"mode\":\"report\"}]" ] ||
    fail "expected the kept child's result: $(d .report)"
[ "$(d .messages)" = "[\"$kept: half way\"]" ] ||
    fail "expected the kept child's progress message while waiting: $(d .messages)"
d '.listed | index("'"$kept"'")' | grep -q '^[0-9]' ||
    fail "expected list_agents to show the kept child $kept: $(d .listed)"
[ "$(d .stopped)" = true ] || fail "expected stop to answer stopping: true"
nref=$(jq -r 'select(.ev == "spawn_refused" and .agent == "boss") | .reason' "$LOG")
printf '%s\n' "$nref" | grep -q '^fan-out limit: boss already has 1 children alive, the limit is 1$' ||
    fail "expected a fan-out refusal in the audit log: $nref"
printf '%s\n' "$nref" | grep -q "^unknown agent 'nobody'" ||
    fail "expected the unknown entry refused in the audit log: $nref"
audit_has "$LOG" --arg k "$hold" 'select(.ev == "send" and .agent == $k and .env.corral.from == "boss")' ||
    fail "expected boss's map/send to $hold in the audit log"
audit_has "$LOG" --arg k "$kept" 'select(.ev == "send" and .agent == "boss" and .env.corral.from == $k)' ||
    fail "expected $kept's map/send to boss in the audit log"
audit_has "$LOG" --arg k "$kept" 'select(.ev == "state" and .agent == $k and .to == "STOPPED")' ||
    fail "expected the kept child $kept STOPPED"
expect_audit_ok "$LOG"
note "3. tree: refused 4000, send both ways, wait, keep, list, stop, 3004"

# --- 4. corral serve with heartbeats ------------------------------------------
write_team serve.yaml "heartbeat: {interval: $((300 * SLOW))ms, misses: 2}"
LOG="$T/serve.ndjson"
# $OUT still holds part 3's result until the background corral's
# redirection empties it: empty it first, so no old line is taken as an answer.
: >"$OUT"
serve_start "$T/serve.yaml" --log "$LOG" -v
# ask TEXT: send one input and wait for its result (line N of the output).
nres=0
ask() {
	nres=$((nres + 1))
	req plan "$1" "in-$nres" >&8
	echo >&8
	wait_for '[ "$(wc -l <"$OUT")" -ge $nres ]' 20 ||
	    fail "no result for input '$1' within 20s (x$SLOW)"
	sed -n "${nres}p" "$OUT" >"$T/res"
}
ask busy
[ "$(result_field "$T/res" .content.text)" = "busy through 3 pings" ] ||
    fail "expected the busy handler to see 3 pings answered: $(head -c 300 "$T/res")"
log_has "UNAVAILABLE" && fail "an agent became UNAVAILABLE: $(grep UNAVAILABLE "$ERR" | head -n 3)"
ask raise
expect_error_result "$T/res" agent_error
[ "$(result_field "$T/res" .content.text)" = "RuntimeError: boom on purpose" ] ||
    fail "expected the exception in the error envelope: $(head -c 300 "$T/res")"
# The traceback is on the agent's stderr, a pipe corral reads on its own:
# it may be logged after the result is out.
wait_log "boss:   RuntimeError: boom on purpose"
ask notice
[ "$(result_field "$T/res" .content.text)" = "notices: invalid_envelope" ] ||
    fail "expected one invalid_envelope notice before the next action: $(head -c 300 "$T/res")"
ask weak
[ "$(result_field "$T/res" .content.text)" = reviewed ] ||
    fail "expected the reviewer's reply: $(head -c 300 "$T/res")"
serve_eof
corral_wait 20
expect_rc 0
nspawn=$(jq -r 'select(.ev == "spawn" and .agent == "boss") | .pid' "$LOG" | wc -l)
[ "$nspawn" = 1 ] || fail "expected boss started once (it survives its handler's exception), got $nspawn spawns"
nrej=$(jq -r 'select(.ev == "rejected") | "\(.agent) \(.code)"' "$LOG")
[ "$nrej" = "boss invalid_envelope" ] ||
    fail "expected exactly one rejected line (the bad envelope; the notice is not answered), got: $nrej"
audit_has "$LOG" 'select(.ev == "late")' && fail "expected no late replies"
# The reflect request names the weak reply and its intent (docs/protocol.md).
weak=$(jq -r 'select(.ev == "reflect") | "\(.of) \(.agent) \(.score)"' "$LOG")
set -- $weak
[ "$2 $3" = "boss 0.2" ] || fail "expected one reflect event on boss's 0.2 reply, got: $weak"
r=$(sed -n 4p "$OUT" | jq -c '.content.data | [.reflect, .parents, .author, .text]')
[ "$r" = "[{\"of\":\"$1\",\"intent\":\"plan\",\"round\":1},[\"$1\"],\"boss\",\"not sure\"]" ] ||
    fail "expected the reflect request to carry {of: $1, intent: plan, round: 1} and the weak reply: $r"
expect_audit_ok "$LOG"
note "4. serve: pings while busy, error envelope and survival, one unanswered notice, reflect {of, intent, round}"
expect_no_leftovers
exit 0
