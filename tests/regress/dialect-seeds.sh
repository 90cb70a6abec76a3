#!/bin/sh
# Every example of the two dialects' specifications (tests/dialects/)
# through a running corral, each to an agent of another dialect and back.
# Bus messages: requests to multiagent-1.0 agents (the full envelope, the
# short form, the context one) answered as RESPONSEs; a SUBSCRIBE; a
# registry find; a PUBLISH to a topic and a BROADCAST reaching
# multiagent-1.0 and AgentMessage agents; a RESPONSE and an error RESPONSE
# that answer corral serve's inputs.  AgentMessages: a TASK_ASSIGNMENT
# answered by another AgentMessage agent (TASK_UPDATE, TASK_COMPLETE), a
# HELP_REQUEST found by capability and its HELP_RESPONSE, a STATUS_UPDATE
# and a HEARTBEAT, and serve inputs answered by TASK_FAILED, by a critical
# ERROR_REPORT, and by a TASK_HANDOFF whose new agent accepts and
# completes.  Routes may name a capability: an input goes to the agent
# whose entry declares it, another to an agent that registered it at run
# time.  A message sent twice (the bus's REQUEST, an AgentMessage's
# STATUS_UPDATE: the same id) is a redelivery: it has its effect once, and
# the audit log says it was dropped; heartbeats are never dropped.  Nothing
# is refused, every request has one outcome, and the audit log tells the
# story.
. "$(dirname "$0")/lib.sh"
. "$TESTDIR/tools/wflib.sh"

FX="$TESTDIR/dialects"
FEED="$TESTDIR/tools/dialect-feeder.sh"
LOG="$T/audit.ndjson"
cat >"$T/reply.sh" <<'SH'
#!/bin/sh
# A multiagent-1.0 agent: answers each request; records what it reads.
while IFS= read -r line; do
	printf '%s\n' "$line" >>"$1"
	printf '%s' "$line" | jq -e '.jsonrpc or (.corral.kind // "" | length > 0)' >/dev/null 2>&1 && continue
	printf '%s' "$line" | jq -c --arg me "$2" '{protocol: "multiagent-1.0", role: "agent",
	    intent: .intent, task: .task, content: {type: "json", data: {by: $me,
	    got: (.content.data // .content.text)}}, confidence: {score: 0.9},
	    trace: {parents: [.trace.id]}}'
done
SH
cat >"$T/archivist.sh" <<'SH'
#!/bin/sh
# Registers the capability archive, then answers as reply.sh does.
echo '{"jsonrpc":"2.0","id":"caps","method":"map/agents/update","params":{"metadata":{"capabilities":["archive"]}}}'
exec sh "$3" "$1" "$2"
SH
cat >"$T/bus.rules" <<'R'
start bus-envelope.json bus-request.json bus-request.json bus-context.json
start bus-subscribe.json bus-find.json bus-publish.json bus-broadcast.json
REQUEST bus-response.json
REQUEST bus-error.json
R
cat >"$T/orchestrator.rules" <<'R'
start agentmessage-task-assignment.json agentmessage-help-request.json
start agentmessage-status-update.json agentmessage-heartbeat.json
start agentmessage-status-update.json agentmessage-heartbeat.json
R
cat >"$T/coder.rules" <<'R'
TASK_ASSIGNMENT agentmessage-task-update.json agentmessage-task-complete.json
TASK_ASSIGNMENT agentmessage-task-failed.json
TASK_ASSIGNMENT agentmessage-error-report.json
TASK_ASSIGNMENT agentmessage-task-handoff.json
R
cat >"$T/reviewer.rules" <<'R'
HELP_REQUEST agentmessage-help-response.json
TASK_HANDOFF agentmessage-handoff-response.json agentmessage-task-complete.json
R
cat >"$T/wf.yaml" <<YAML
agents:
  agent-planner:
    cmd: [sh, $T/reply.sh, $T/agent-planner.in, agent-planner]
  agent-b:
    cmd: [sh, $T/reply.sh, $T/agent-b.in, agent-b]
  verifier:
    cmd: [sh, $T/reply.sh, $T/verifier.in, verifier]
    capabilities: [{name: verification, version: "1", actions: [verify]}]
    subscribe: [verification-complete]
  bus:
    cmd: [sh, $FEED, $T/bus.rules, $T/bus.in, $FX]
    protocol: bus
  orchestrator:
    cmd: [sh, $FEED, $T/orchestrator.rules, $T/orchestrator.in, $FX]
    protocol: agentmessage
  coder:
    cmd: [sh, $FEED, $T/coder.rules, $T/coder.in, $FX]
    protocol: agentmessage
  reviewer:
    cmd: [sh, $FEED, $T/reviewer.rules, $T/reviewer.in, $FX]
    protocol: agentmessage
    capabilities: [code-review]
  archivist:
    cmd: [sh, $T/archivist.sh, $T/archivist.in, archivist, $T/reply.sh]
routes:
  analyze: bus
  execute: coder
  summarize: capability:verification
  retrieve: capability:archive
YAML
SOCK="$T/ctl.sock"
serve_start "$T/wf.yaml" --control "$SOCK" --log "$LOG"

# bus_got FILTER: the bus agent read a message that passes the jq FILTER.
got() {
	wait_for "jq -c 'select($2)' \"$T/$1.in\" 2>/dev/null | grep -q ." 20 ||
	    fail "$1 never got a message with $2; it got:
$(cut -c1-300 "$T/$1.in" 2>/dev/null)"
}

# The bus agent's requests, answered by multiagent-1.0 agents.
for c in msg_uuid_123:agent-planner msg_req_1:agent-planner msg_ctx_1:agent-b; do
	got bus ".header.type == \"RESPONSE\" and .header.correlationId == \"${c%%:*}\"
	    and .body.status == \"SUCCESS\" and .body.result.by == \"${c#*:}\""
done
got bus '.header.correlationId == "msg_uuid_123" and .body.result.got.content == "the draft"'
got agent-b '.session == "sess_123" and .bus.context.previousDecisions == ["use JSONL","add indices"]'
got bus '.header.correlationId == "msg_sub_1" and .body.result == {"topic":"findings","subscribed":true}'
got bus '.header.correlationId == "msg_find_1" and (.body.result.agents | map(.id) == ["verifier"]) and .body.result.agents[0].status == "READY"'
got verifier '.corral.kind == "message" and .corral.via == "verification-complete" and .task == "VerificationComplete"'
got verifier '.corral.kind == "message" and .task == "SystemShutdown" and .content.data.countdown == 30'
got coder '.type == "TASK_UPDATE" and .payload.message == "SystemShutdown"'

# The orchestrator's assignment to coder, answered by coder; its help
# request, found by capability, answered by reviewer.
got orchestrator '.type == "TASK_COMPLETE" and .from == "coder" and .payload.task_id == "7f8d2c1e-0b1a-4c2d-9e3f-000000000001" and .payload.result.files == ["parser.c"]'
got orchestrator '.type == "HELP_RESPONSE" and .from == "reviewer" and .payload.request_id == "7f8d2c1e-0b1a-4c2d-9e3f-000000000007" and .payload.response_type == "DIRECT_ANSWER" and (.payload.content | startswith("yes: the else"))'
got coder '.type == "TASK_ASSIGNMENT" and .from == "orchestrator" and .payload.description == "implement the parser" and .metadata.priority == "high"'
got reviewer '.type == "HELP_REQUEST" and .from == "orchestrator" and .payload.help_type == "CODE_REVIEW"'
wait_for 'jq -c "select(.ev == \"map_event\" and .event.type == \"message_sent\")" "$LOG" | grep -q .' 10 || true
"$CORRAL" ps -S "$SOCK" --json >"$T/ps.json" 2>/dev/null
jq -e '.agents[] | select(.id == "orchestrator") | .metadata.reportedState == "BUSY" and .metadata.resource_usage.tokens_used == 12000' "$T/ps.json" >/dev/null ||
    fail "the STATUS_UPDATE should be the orchestrator's metadata: $(jq -c '.agents[] | select(.id == "orchestrator") | .metadata' "$T/ps.json")"
# ... and its numbers and state: corral metrics per agent, corral ps.
"$CORRAL" metrics -S "$SOCK" >"$T/metrics.txt" 2>&1 || fail "corral metrics: $(cat "$T/metrics.txt")"
for m in 'corral_agent_reported_tokens_used{agent="orchestrator"} 12000' \
    'corral_agent_reported_cost_usd{agent="orchestrator"} 0.42' \
    'corral_agent_reported_success_ratio{agent="orchestrator"} 0.95' \
    'corral_agent_reported_tasks{agent="orchestrator"} 1' \
    'corral_agent_reported_state{agent="orchestrator",state="BUSY"} 1'; do
	grep -qF "$m" "$T/metrics.txt" || fail "corral metrics lacks $m: $(grep reported "$T/metrics.txt")"
done
"$CORRAL" ps -S "$SOCK" >"$T/ps.txt" 2>&1 || fail "corral ps: $(cat "$T/ps.txt")"
grep -A1 '^  orchestrator ' "$T/ps.txt" | grep -q 'reports BUSY: 12000 tokens used, 88000 left, \$0.4200, cpu 35%' ||
    fail "corral ps should show what orchestrator reports: $(cat "$T/ps.txt")"

# corral serve's inputs: two to the bus agent, answered by the bus's
# RESPONSE and error RESPONSE examples; three to coder, answered by
# TASK_FAILED, a critical ERROR_REPORT, and a handoff to reviewer.
input() {
	printf '{"protocol":"multiagent-1.0","role":"user","intent":"%s","task":"%s","content":{"type":"text","text":"x"},"trace":{"id":"%s"}}\n' "$1" "$2" "$2" >&8
	wait_for "grep -q '\"parents\":\\[\"$2\"\\]' \"$OUT\"" 20 || fail "no result for $2: $(cat "$OUT")"
	grep "\"parents\":\\[\"$2\"\\]" "$OUT" >"$T/r.$2"
}
input analyze in-bus-1
jq -e '.content.data.verified == true and .bus.header.correlationId == "in-bus-1"' "$T/r.in-bus-1" >/dev/null ||
    fail "in-bus-1: $(cat "$T/r.in-bus-1")"
input analyze in-bus-2
jq -e '.content.type == "error" and .content.data.code == "timeout" and .content.data.retryAfter == 5000' "$T/r.in-bus-2" >/dev/null ||
    fail "in-bus-2: $(cat "$T/r.in-bus-2")"
input execute in-am-1
jq -e '.content.type == "error" and .content.data.code == "rate_limit" and .content.data.category == "UNAVAILABLE" and .content.data.severity == "high"' "$T/r.in-am-1" >/dev/null ||
    fail "in-am-1: $(cat "$T/r.in-am-1")"
input execute in-am-2
jq -e '.content.type == "error" and .content.data.code == "external_service_error" and .content.data.severity == "critical" and .content.data.report.suggested_actions == ["use the mirror"]' "$T/r.in-am-2" >/dev/null ||
    fail "in-am-2: $(cat "$T/r.in-am-2")"
# Routed to a capability: the verifier's entry declares verification;
# archivist registered archive once it started.
input summarize in-cap-1
jq -e '.content.data.by == "verifier"' "$T/r.in-cap-1" >/dev/null ||
    fail "in-cap-1 should go to verifier (capability verification): $(cat "$T/r.in-cap-1")"
got archivist '.id == "caps" and .result != null'
input retrieve in-cap-2
jq -e '.content.data.by == "archivist"' "$T/r.in-cap-2" >/dev/null ||
    fail "in-cap-2 should go to archivist (capability archive, registered): $(cat "$T/r.in-cap-2")"
input execute in-am-3
jq -e '.content.data.files == ["parser.c"] and .agent.id == "reviewer"' "$T/r.in-am-3" >/dev/null ||
    fail "in-am-3 should be reviewer's TASK_COMPLETE: $(cat "$T/r.in-am-3")"
got reviewer '.type == "TASK_HANDOFF" and .payload.task_id == "in-am-3" and .payload.from_agent == "coder" and .payload.reason == "CAPABILITY_LIMIT" and .payload.history[0].event_type == "handoff"'
got coder '.type == "TASK_HANDOFF" and .payload.accepted == true and .payload.agent_id == "reviewer"'

# The REQUEST the bus agent sent twice reached agent-planner once; the
# STATUS_UPDATE the orchestrator sent twice, once; both are in the audit
# log as redeliveries, the heartbeats are not.
wait_for 'jq -c "select(.ev == \"redelivery\")" "$LOG" | grep -c . | grep -qx 2' 20 ||
    fail "expected 2 redelivery events: $(jq -c 'select(.ev == "redelivery")' "$LOG")"
jq -c 'select(.ev == "redelivery" and .agent == "bus" and .id == "msg_req_1" and .path == "messageId")' "$LOG" | grep -q . ||
    fail "the bus's second msg_req_1 should be a redelivery: $(jq -c 'select(.ev == "redelivery")' "$LOG")"
jq -c 'select(.ev == "redelivery" and .agent == "orchestrator" and .id == "7f8d2c1e-0b1a-4c2d-9e3f-000000000009" and .path == "id")' "$LOG" | grep -q . ||
    fail "the orchestrator's second STATUS_UPDATE should be a redelivery: $(jq -c 'select(.ev == "redelivery")' "$LOG")"
n=$(jq -c 'select(.bus.header.messageId == "msg_req_1")' "$T/agent-planner.in" | wc -l)
[ "$n" -eq 1 ] || fail "agent-planner got msg_req_1 $n times, not once"
n=$(jq -c 'select(.header.correlationId == "msg_req_1")' "$T/bus.in" | wc -l)
[ "$n" -eq 1 ] || fail "the bus agent got $n answers to msg_req_1, not one"
"$CORRAL" metrics -S "$SOCK" | grep -qx 'corral_redeliveries_total 2' ||
    fail "corral metrics should count 2 redeliveries: $("$CORRAL" metrics -S "$SOCK" | grep redeliver)"

serve_eof
corral_wait 20
expect_rc 0
expect_audit_ok "$LOG"
# Nothing refused, and the story: the handoff, the results delivered.
[ -z "$(jq -c 'select(.ev == "rejected")' "$LOG")" ] ||
    fail "a fixture was refused: $(jq -c 'select(.ev == "rejected")' "$LOG" | head -3)"
jq -c 'select(.ev == "handoff" and .agent == "coder" and .to == "reviewer" and .id == "in-am-3")' "$LOG" | grep -q . ||
    fail "no handoff event in the audit log"
n=$(jq -c 'select(.ev == "result")' "$LOG" | wc -l)
[ "$n" -ge 5 ] || fail "expected at least 5 results delivered to requesters, got $n"
note "every example of both specifications through corral and back"
exit 0
