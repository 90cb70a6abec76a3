#!/bin/sh
# Agents that misbehave on stdout, and the workflow still completes:
#   - lines that are not JSON before a valid reply: each is logged naming
#     the agent, quoting the line and saying "log to stderr", the agent
#     gets an error notice (content.type error, code invalid_json,
#     "corral":{"kind":"notice"}), the reply still counts;
#   - invalid envelopes (confidence.score 7; no task): a notice with code
#     invalid_envelope and the offending field's path;
#   - an envelope that answers nothing: a notice with code unsolicited;
#   - a reply after its request timed out: dropped (the request's one
#     outcome stays the timeout) and recorded as late.
. "$(dirname "$0")/lib.sh"
. "$TESTDIR/tools/wflib.sh"

LOG="$T/audit.ndjson"

# notices REC: the notices an agent received, one compact JSON a line.
notices() {
	sed -n 's/^recv //p' "$1" | jq -c 'select(.corral.kind == "notice")' 2>/dev/null
}

# expect_notice REC CODE [PATH]: the agent got a well-formed notice with
# that code (and path).
expect_notice() {
	_n=$(notices "$1" | jq -c --arg c "$2" --arg p "${3:-}" '
	    select(.content.type == "error" and .content.data.code == $c
	      and .intent == "route" and .role == "system"
	      and .agent.id == "corral"
	      and ($p == "" or .content.data.path == $p))')
	[ -n "$_n" ] || fail "expected a notice with code $2${3:+ and path $3} in $(basename "$1"); got: $(notices "$1" | cut -c1-300)"
}

# 1. Garbage before the reply.
cat >"$T/garbage.yaml" <<YAML
agents:
  noisy:
    cmd: [$WA, --record, $T/noisy.rec, --garbage, "2", --intent, finalize]
routes:
  plan: noisy
YAML
corral_run 20 run "$T/garbage.yaml" --goal go --log "$LOG"
expect_rc 0
[ "$(result_field "$OUT" .content.text)" = "plan by noisy" ] ||
    fail "expected the valid reply 'plan by noisy' as the result: $(cat "$OUT")"
n=$(grep -c 'corral: agent noisy: invalid JSON at byte 0' "$ERR")
[ "$n" -eq 2 ] || fail "expected 2 log lines 'agent noisy: invalid JSON at byte 0', got $n"
# Each one quotes the line and says what to do, not only the 10,000th.
n=$(grep -c "corral: agent noisy: invalid JSON at byte 0: .*, in \"garbage line [12] from noisy, not JSON\"; stdout is for envelopes: log to stderr" "$ERR")
[ "$n" -eq 2 ] || fail "expected both bad lines quoted, with the hint: $(grep noisy "$ERR")"
expect_notice "$T/noisy.rec" invalid_json
n=$(notices "$T/noisy.rec" | wc -l)
[ "$n" -eq 2 ] || fail "expected 2 notices to noisy (one per garbage line), got $n"
# Notices are never requests: the agent answered exactly one.
n=$(grep -c '^reply ' "$T/noisy.rec")
[ "$n" -eq 1 ] || fail "expected noisy to answer one request, it answered $n"
n=$(jq -r 'select(.ev == "rejected" and .agent == "noisy" and .code == "invalid_json") | .ev' "$LOG" | wc -l)
[ "$n" -eq 2 ] || fail "expected 2 rejected events for noisy in the audit log, got $n"
expect_audit_ok "$LOG"

# 2. Invalid envelopes before the reply: a score out of range, no task.
rm -f "$LOG"
cat >"$T/invalid.yaml" <<YAML
agents:
  scorer:
    cmd: [$WA, --record, $T/scorer.rec, --bad, score, --next, execute]
  tasker:
    cmd: [$WA, --record, $T/tasker.rec, --bad, task, --intent, finalize]
routes:
  plan: scorer
  execute: tasker
YAML
corral_run 20 run "$T/invalid.yaml" --goal go --log "$LOG"
expect_rc 0
[ "$(result_field "$OUT" .content.text)" = "execute by tasker" ] ||
    fail "expected tasker's reply as the result: $(cat "$OUT")"
expect_notice "$T/scorer.rec" invalid_envelope confidence.score
expect_notice "$T/tasker.rec" invalid_envelope task
log_has 'corral: agent scorer: invalid envelope' ||
    fail "expected 'agent scorer: invalid envelope' in the log"
log_has 'corral: agent tasker: invalid envelope' ||
    fail "expected 'agent tasker: invalid envelope' in the log"
expect_audit_ok "$LOG"

# 3. An envelope that answers nothing (corral serve, no input yet).
rm -f "$LOG"
cat >"$T/loner.yaml" <<YAML
agents:
  loner:
    cmd: [$WA, --record, $T/loner.rec, --unsolicited]
routes:
  "*": loner
YAML
serve_start "$T/loner.yaml" --log "$LOG"
wait_log 'corral: agent loner: an envelope with no request outstanding was dropped'
wait_for 'grep -q "unsolicited" "$T/loner.rec" && [ -n "$(notices "$T/loner.rec")" ]' 5 ||
    fail "loner got no notice: $(cut -c1-300 "$T/loner.rec")"
expect_notice "$T/loner.rec" unsolicited
# It still serves.
envelope in-1 analyze >&8
wait_for '[ -s "$OUT" ]' 5 || fail "no result after the unsolicited envelope"
serve_eof
corral_wait 10
expect_rc 0
[ "$(result_field "$OUT" .content.text)" = "analyze by loner" ] ||
    fail "expected loner's answer to in-1: $(cat "$OUT")"
[ "$(wc -l <"$OUT")" -eq 1 ] || fail "expected one result line, got $(wc -l <"$OUT")"
expect_audit_ok "$LOG"

# 4. A reply after the request timed out (300 ms; the reply comes after
# 1 s x SLOW).
rm -f "$LOG"
cat >"$T/slow.yaml" <<YAML
agents:
  slow:
    cmd: [$WA, --record, $T/slow.rec, --delay, "$((1000 * SLOW))", --intent, finalize]
    timeout: 300ms
routes:
  "*": slow
YAML
serve_start "$T/slow.yaml" --log "$LOG" -v
envelope in-1 execute >&8
wait_for '[ -s "$OUT" ]' 5 || fail "no result for the timed-out request"
expect_error_result "$OUT" timeout
[ "$(result_field "$OUT" '.trace.parents[0]')" = in-1 ] ||
    fail "expected the timeout error to name in-1 in trace.parents: $(cat "$OUT")"
wait_log 'corral: agent slow: late or duplicate reply dropped' 10
serve_eof
corral_wait 10
expect_rc 0
[ "$(wc -l <"$OUT")" -eq 1 ] ||
    fail "expected only the timeout error on stdout, the late reply must be dropped: $(cat "$OUT")"
n=$(jq -r 'select(.ev == "late" and .agent == "slow") | .env.trace.parents[0]' "$LOG")
[ "$n" = in-1 ] || fail "expected one late event for slow's reply to in-1 in the audit log, got '$n'"
audit_all "$LOG" 'select(.ev == "outcome") | .id == "in-1" and .outcome == "expired"' ||
    fail "expected in-1's only outcome to be expired: $(jq -c 'select(.ev == "outcome")' "$LOG")"
audit_all "$LOG" 'select(.ev == "run_end") | .replied == 0 and .expired == 1' ||
    fail "expected run_end replied 0, expired 1: $(grep run_end "$LOG")"
expect_audit_ok "$LOG"
exit 0
