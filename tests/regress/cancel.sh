#!/bin/sh
# Cancelling requests, with agents that speak envelopes (no CLI needed):
# `corral cancel` of a queued request and of one in flight (the agent gets
# a cancel notice, its late reply is dropped, the freed slot serves the
# next request at once); a request ends cancelled exactly once, and a
# second cancel finds nothing; a parent cancels its child's task
# (_corral/cancel from an agent) and gets the child's result as cancelled;
# an agent may not cancel what it was not asked for; `corral stop AGENT`
# cancels what the agent works on instead of losing it.
. "$(dirname "$0")/ctl-lib.sh"

TR="$TOOLS/treeagent"
[ -x "$TR" ] || skip "no tree agent at $TR"
REC="$T/rec"

cat >"$T/wf.yaml" <<YAML
name: cancel
agents:
  worker:
    cmd: [$TR, --record, $REC]
    max_inflight: 1
    timeout: $((60 * SLOW))s
  lead:
    cmd: [$TR, --record, $REC]
    timeout: $((60 * SLOW))s
routes:
  plan: lead
  "*": worker
YAML

# req ID INTENT PLAN: a request whose treeagent plan is PLAN (JSON).
req() {
	printf '{"protocol":"multiagent-1.0","role":"user","intent":"%s","task":"t %s","content":{"type":"text","text":"x"},"inputs":{"parameters":{"plan":%s}},"trace":{"id":"%s"}}\n' \
	    "$2" "$1" "$3" "$1" >&8
}
# result_of ID: corral serve's result line for input ID.
result_of() {
	grep -F "\"parents\":[\"$1\"]" "$OUT" | head -n 1
}
code_of() {
	result_of "$1" | jq -r '.content.data.code // "-"'
}
results_for() {
	grep -cF "\"parents\":[\"$1\"]" "$OUT" || true
}
wait_result() {
	_wr=$1
	wait_for '[ -n "$(result_of "$_wr")" ]' "${2:-10}" ||
	    fail "no result for $1 within ${2:-10}s: $(cat "$OUT")"
}

serve_start "$T/wf.yaml" -v --control "$SOCK" --log "$T/audit"
wait_sock

# c1 waits for its cancel, then replies anyway; c2 and c3 queue behind it.
req c1 execute '{"steps":[{"wait_cancel":true},{"finalize":{"text":"late"}}]}'
wait_for '[ "$(map_state worker)" = busy ]' 10 || fail "worker should be busy"
req c2 execute '{"steps":[{"finalize":{"text":"two"}}]}'
req c3 execute '{"steps":[{"finalize":{"text":"three"}}]}'
wait_for 'grep -q "\"ev\":\"queue\",\"id\":\"c3\"" "$T/audit"' 10 ||
    fail "c3 should wait in the queue: $(grep c3 "$T/audit")"

# A queued request: cancelled where it waits; the agent hears nothing.
ctl cancel c3
[ "$CRC" = 0 ] || fail "corral cancel c3: $(cat "$T/ctl.err")"
ctl_has "cancelled c3 (queued)"
wait_result c3
[ "$(code_of c3)" = cancelled ] || fail "c3: $(result_of c3)"
result_of c3 | jq -e '.content.data.category == "REJECTED" and .content.data.retryable == false' >/dev/null ||
    fail "c3 should be REJECTED and not retryable: $(result_of c3)"

# In flight: the agent gets a notice, the request ends at once, the slot
# goes to c2, and c1's reply that follows the notice is dropped as late.
ctl cancel --reason "not needed" c1
[ "$CRC" = 0 ] || fail "corral cancel c1: $(cat "$T/ctl.err")"
ctl_has "cancelled c1 (inflight at worker)"
wait_result c1
[ "$(code_of c1)" = cancelled ] || fail "c1: $(result_of c1)"
result_of c1 | grep -q 'cancelled by client:[0-9]*: not needed' ||
    fail "c1 should say who cancelled it and why: $(result_of c1)"
wait_for 'grep -qx "cancel worker c1" "$REC"' 10 ||
    fail "worker got no cancel notice: $(cat "$REC")"
wait_result c2
result_of c2 | grep -q '"text":"two"' || fail "c2: $(result_of c2)"
wait_for 'grep -q "\"ev\":\"late\",\"agent\":\"worker\"" "$T/audit"' 10 ||
    fail "c1's reply after the notice should be dropped as late"
[ "$(results_for c1)" = 1 ] || fail "c1 should have one result: $(grep c1 "$OUT")"
grep -q '"ev":"cancel","agent":"worker","id":"c1"' "$T/audit" ||
    fail "no cancel event for c1 in the audit log"
ctl cancel c1
[ "$CRC" = 1 ] && grep -q "request c1 not found: it has ended" "$T/ctl.err" ||
    fail "a second cancel of c1: $CRC $(cat "$T/ctl.err")"

# A parent cancels its child's task: the child is told, the parent gets
# the result as cancelled.  It may not cancel its own request.
req p1 plan '{"steps":[{"spawn":{"agent":"worker","plan":{"steps":[{"wait_cancel":true},{"hang":true}]}}},{"cancel_children":true},{"await":true},{"cancel":"self"}]}'
wait_result p1 20
result_of p1 | grep -q '"text":"lead(!worker-[0-9]*:cancelled)"' ||
    fail "p1: the lead should get its child's result as cancelled: $(result_of p1)"
grep -q '^cancel_ok lead [^ ]* \(inflight\|queued\)$' "$REC" ||
    fail "the lead's cancel of its child's task: $(grep cancel "$REC")"
# The child records the notice as it reads it, which may be after the
# parent's result went out: wait for it.
wait_for 'grep -q "^cancel worker-[0-9]* " "$REC"' 10 ||
    fail "the child got no cancel notice: $(grep cancel "$REC")"
grep -q '^cancel_error lead 1003 lead may cancel only' "$REC" ||
    fail "the lead should not cancel its own request: $(grep cancel "$REC")"
wait_for '[ "$(map_state worker-1)" = stopped ] || [ -z "$(map_state worker-1)" ]' 10 ||
    fail "the cancelled child should stop: $(map_state worker-1)"

# corral stop AGENT: what it works on is cancelled, not lost.
req s1 execute '{"steps":[{"hang":true}]}'
wait_for '[ "$(map_state worker)" = busy ]' 10 || fail "worker should be busy with s1"
ctl stop worker
[ "$CRC" = 0 ] || fail "corral stop worker: $(cat "$T/ctl.err")"
wait_result s1
[ "$(code_of s1)" = cancelled ] || fail "s1 should be cancelled by the stop: $(result_of s1)"
result_of s1 | grep -q 'stopped by client:' || fail "s1: $(result_of s1)"

serve_eof
corral_wait 20
expect_rc 0
log_has "request c1: cancelled: cancelled by client:" ||
    fail "corral's log should say c1 was cancelled"
exit 0
