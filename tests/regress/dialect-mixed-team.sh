#!/bin/sh
# examples/mixed-team end to end: a multiagent-1.0 planner, an AgentMessage
# worker and a collaboration-bus reviewer in one workflow.  The worker's
# task comes as a TASK_ASSIGNMENT; its TASK_UPDATE to topic:progress
# reaches the bus reviewer as a PUBLISH; its HELP_REQUEST (help type
# CODE_REVIEW) finds the reviewer by capability, whose RESPONSE comes back
# to it as a HELP_RESPONSE; the reviewer's PUBLISH to topic:findings
# reaches the planner (an envelope) and the worker (an AgentMessage); the
# worker's TASK_HANDOFF moves its task to the agent with the capability
# summarize (the planner), whose finalize is the run's result.  The help
# request names a session and a decision; the worker reads its
# participants, decisions and history back, and finds by capability
# the agent it hands off to.  The
# worker's ERROR_REPORT (medium) on its task goes with the task's outcome
# and the run's result.  The audit
# log tells the story, and every request has one outcome.  corral replay
# of the run finds no difference (the worker's stand-in asks for help and
# hands off again).
. "$(dirname "$0")/lib.sh"
. "$TESTDIR/tools/wflib.sh"
command -v jq >/dev/null 2>&1 || skip "jq is missing"

# audit_has FILTER: some event of the audit log passes the jq FILTER.
audit_has() {
	jq -c "select($1)" "$LOG" | grep -q .
}

EX="$SRCDIR/examples/mixed-team"
[ -f "$EX/workflow.yaml" ] || fail "no example at $EX"
LOG="$T/audit.ndjson"

corral_run 30 run "$EX/workflow.yaml" --goal "a report" --log "$LOG"
expect_rc 0
[ "$(result_field "$OUT" .intent)" = finalize ] ||
    fail "expected a finalize result, got: $(head -c 300 "$OUT")"
[ "$(result_field "$OUT" .content.data.handed_off_by)" = worker ] ||
    fail "expected the result to come from the handoff by worker: $(head -c 400 "$OUT")"
[ "$(result_field "$OUT" .content.data.reason)" = CAPABILITY_LIMIT ] ||
    fail "expected the handoff's reason in the result: $(head -c 400 "$OUT")"
[ "$(result_field "$OUT" .content.data.finding.severity)" = LOW ] ||
    fail "expected the planner to have heard the reviewer's finding: $(head -c 400 "$OUT")"
expect_audit_ok "$LOG"
# Replayed: the worker's stand-in asks for help by capability and hands
# the request off again, as the worker did; no difference.
expect_replay "$LOG" "$EX/workflow.yaml"
# execute routed to the planner instead: the planner answers it as it did
# after the handoff, and the worker's help request is not made.
sed 's/^  execute: worker$/  execute: planner/' "$EX/workflow.yaml" >"$T/changed.yaml"
timeout -k 5 $((60 * SLOW)) "$CORRAL" replay "$LOG" "$T/changed.yaml" >"$T/replay.out" 2>"$T/replay.err"
[ $? = 1 ] || fail "a changed route: corral replay did not exit 1: $(cat "$T/replay.out" "$T/replay.err")"
[ "$(cat "$T/replay.out")" = "route    plan#1@planner/execute#1: routed to planner; recorded: worker
missing  plan#1@planner/execute#1@worker>analyze#1: recorded (routed to reviewer, replied), not made now" ] ||
    fail "a changed route: the differences: $(cat "$T/replay.out")"
# The worker's error report (RATE_LIMIT, medium) on its task: the task
# went on, and its outcome and the run's result carry the report.
result_field "$OUT" '.corral.errors' | jq -e 'length == 1 and .[0].error_type == "RATE_LIMIT"
    and .[0].severity == "medium" and .[0].agent == "worker" and .[0].error_id == "e-1"' >/dev/null ||
    fail "expected the worker's error report in the result's corral.errors: $(head -c 600 "$OUT")"
result_field "$OUT" '.corral.risk' | grep -q '^1 error report, the worst medium: RATE_LIMIT (medium) by worker: the style checker throttled us' ||
    fail "expected corral.risk to say the report: $(result_field "$OUT" .corral.risk)"
audit_has '.ev == "error_report" and .agent == "worker" and .error_type == "RATE_LIMIT" and .severity == "medium"' ||
    fail "expected an error_report event"
audit_has '.ev == "job_end" and (.risk // "" | contains("RATE_LIMIT"))' ||
    fail "expected the job's end to carry the risk"

# The help request found the reviewer by capability, and its answer went
# back to the worker as a result.
audit_has '.ev == "route" and .agent == "reviewer" and .intent == "analyze"' ||
    fail "expected the help request routed to reviewer"
audit_has '.ev == "result" and .agent == "worker" and (.id | startswith("w-help-"))' ||
    fail "expected the reviewer's answer delivered to worker as a result"
grep -q 'worker: help came: "DIRECT_ANSWER"' "$ERR" ||
    fail "expected the worker to get a HELP_RESPONSE DIRECT_ANSWER: $(grep worker: "$ERR" | head -5)"
# The help request, asked at low priority while the worker holds a normal
# one, was raised to normal (priority inheritance).
audit_has '.ev == "priority_raised" and .agent == "worker" and .from == "low" and .to == "normal"' ||
    fail "expected the help request raised from low to normal"
# The handoff: audited, answered to the worker, the task served by planner.
audit_has '.ev == "handoff" and .agent == "worker" and .to == "planner" and .reason == "CAPABILITY_LIMIT"' ||
    fail "expected a handoff event from worker to planner"
grep -q 'worker: handoff answered: {"accepted":true,"agent_id":"planner"' "$ERR" ||
    fail "expected the worker told that planner accepted: $(grep worker: "$ERR" | head -5)"
task=$(jq -r 'select(.ev == "handoff") | .id' "$LOG")
[ "$(jq -r --arg t "$task" 'select(.ev == "outcome" and .id == $t) | .agent' "$LOG")" = planner ] ||
    fail "expected the handed-off request $task to end at planner"
# The session the help request named: both agents took part, and the
# worker could read its history (the request, then its result).
grep -q 'worker: session report-1: {"participants":\["worker","reviewer"\],"decisions":\["draft before review"\],"history":\["request","result"\]}' "$ERR" ||
    fail "expected the worker to read session report-1: $(grep 'worker: session' "$ERR")"
# Discovery in the worker's dialect: the agents with a capability.
grep -q 'worker: found summarize: \["planner"\]' "$ERR" ||
    fail "expected the worker to find planner by capability: $(grep 'worker: found' "$ERR")"
# Topics: each subscriber got each publish, in its own dialect.
grep -q 'reviewer: heard {"event":"TASK_UPDATE"' "$ERR" ||
    fail "expected the bus reviewer to hear the worker's update on topic:progress"
grep -q 'worker: heard {"message":"ReviewDone"' "$ERR" ||
    fail "expected the AgentMessage worker to hear the finding on topic:findings"
delivered=$(jq -r 'select(.ev == "map_event" and .event.type == "message_delivered"
    and .event.data.message.to == "topic:findings") | .event.data.deliveredTo | sort | join(",")' "$LOG")
[ "$delivered" = planner,worker ] ||
    fail "expected topic:findings delivered to planner and worker, got '$delivered'"
note "help, handoff and two topics across three dialects"
exit 0
