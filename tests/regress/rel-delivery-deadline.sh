#!/bin/sh
# Per-message deadlines, consecutive timeouts, late and duplicate replies.
#   - inputs.parameters.ttl_ms and top-level ttl_ms: a request its agent
#     does not answer in time ends in a TIMEOUT error envelope (code
#     timeout) and an audit outcome "expired"; a NORMAL request that was
#     delivered is not sent again (at most once)
#   - the third consecutive timeout makes the agent UNAVAILABLE; a late
#     reply (after the deadline) is dropped and counted, and makes the
#     agent READY again ("answering again")
#   - a duplicate reply is dropped and counted: one result per request
#   - an agent UNAVAILABLE from timeouts that never writes again is given
#     work again after breaker.reset
#   - accounting: accepted = replied + errored + expired
# The agent's own timeout (20 s x SLOW) is far from the 300 ms deadlines;
# the late reply comes 1 s x SLOW after its request, well after 300 ms.
. "$(dirname "$0")/rel-lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  s:
    cmd: [$RA, --record, $T/rec]
    timeout: $((20 * SLOW))s
routes:
  "*": s
YAML

env_with() {	# ID TASK EXTRA-MEMBERS: an envelope with extra top-level members
	printf '{"protocol":"multiagent-1.0","role":"user","intent":"plan","task":"%s","content":{"type":"text"},"trace":{"id":"%s"}%s}\n' "$2" "$1" "$3"
}

serve_start "$T/wf.yaml" --log "$AUD" -v
wait_log 'corral: agent s: INITIALIZING -> READY'

s=$(now)
env_with t-1 hang ',"inputs":{"parameters":{"ttl_ms":300}}' >&8
wait_result t-1 5
t=$(elapsed "$s")
[ "$(code_of t-1)" = timeout ] || fail "t-1: expected a timeout error, got: $(result_of t-1 | cut -c1-300)"
result_of t-1 | grep -q '"category":"TIMEOUT"' || fail "t-1: expected category TIMEOUT"
note "t-1 (inputs.parameters.ttl_ms 300) expired after ${t}s"
fcmp "$t" ">=" 0.29 || fail "t-1 expired after ${t}s, before its 300 ms deadline"
fcmp "$t" "<" $((3 * SLOW)) || fail "t-1 expired after ${t}s, long after its 300 ms deadline (x$SLOW)"
s=$(now)
env_with t-2 hang ',"ttl_ms":300' >&8
wait_result t-2 5
t=$(elapsed "$s")
[ "$(code_of t-2)" = timeout ] || fail "t-2: expected a timeout error, got: $(result_of t-2 | cut -c1-300)"
note "t-2 (top-level ttl_ms 300) expired after ${t}s"
fcmp "$t" "<" $((3 * SLOW)) || fail "t-2 expired after ${t}s, long after its 300 ms deadline (x$SLOW)"
log_has 'UNAVAILABLE' && fail "s is UNAVAILABLE after 2 timeouts: $(grep UNAVAILABLE "$ERR")"

# The third timeout in a row: UNAVAILABLE.  The reply comes at 1 s
# (x SLOW): late, dropped, and a sign of life.
env_with t-3 sleep:$((1000 * SLOW)) ',"ttl_ms":300' >&8
wait_result t-3 5
[ "$(code_of t-3)" = timeout ] || fail "t-3: expected a timeout error"
wait_for 'grep -q "corral: agent s: [A-Z]* -> UNAVAILABLE (3 consecutive timeouts)" "$ERR"' 5 ||
    fail "s did not become UNAVAILABLE after 3 consecutive timeouts"
wait_log 'corral: agent s: late or duplicate reply dropped' 10
wait_log 'corral: agent s: UNAVAILABLE -> READY (answering again)' 5
[ "$(grep -c '"parents":\["t-3"\]' "$OUT")" -eq 1 ] ||
    fail "t-3 has $(grep -c '"parents":\["t-3"\]' "$OUT") results; the late reply must be dropped"

env_with t-4 ok '' >&8
wait_result t-4 5
result_of t-4 | grep -q '"text":"ok s"' || fail "t-4: expected s's reply after it recovered"

# A duplicate reply: one result, the second reply dropped and counted.
env_with t-5 dup '' >&8
wait_result t-5 5
wait_for '[ "$(log_count "late or duplicate reply dropped")" -ge 2 ]' 5 ||
    fail "the duplicate reply to t-5 was not dropped and counted"
serve_eof
corral_wait 10
expect_rc 0

for id in t-1 t-2 t-3 t-4 t-5; do
	[ "$(grep -c "\"parents\":\[\"$id\"\]" "$OUT")" -eq 1 ] ||
	    fail "$id has $(grep -c "\"parents\":\[\"$id\"\]" "$OUT") results, expected 1"
	[ "$(aud_count outcome id "$id")" -eq 1 ] ||
	    fail "$id has $(aud_count outcome id "$id") outcome events, expected 1"
	[ "$(grep -c "^req s $id " "$T/rec")" -eq 1 ] ||
	    fail "$id was delivered $(grep -c "^req s $id " "$T/rec") times, expected once (NORMAL: at most once)"
done
[ "$(aud_count outcome outcome expired)" -eq 3 ] ||
    fail "expected 3 expired outcomes, got $(aud_count outcome outcome expired)"
[ "$(aud_count late)" -eq 2 ] || fail "expected 2 late events (t-3's late reply, t-5's duplicate), got $(aud_count late)"
[ "$(run_end_get late)" = 2 ] || fail "expected run_end late 2, got '$(run_end_get late)'"
[ "$(aud_count retry)" -eq 0 ] || fail "NORMAL requests were retried: $(grep -F '"ev":"retry"' "$AUD")"
set -- $(run_end_check)
[ "$1" -eq 5 ] && [ "$2" -eq 2 ] && [ "$3" -eq 0 ] && [ "$4" -eq 3 ] ||
    fail "expected accepted 5, replied 2, errored 0, expired 3; run_end says $*"

# An agent made UNAVAILABLE by timeouts that never writes again is given
# work again after breaker.reset (1 s here), and answers.
cat >"$T/wf-recover.yaml" <<YAML
agents:
  s:
    cmd: [$RA, --record, $T/rec2]
    timeout: $((20 * SLOW))s
    breaker: {reset: 1s}
routes:
  "*": s
YAML
serve_start "$T/wf-recover.yaml" -v
wait_log 'corral: agent s: INITIALIZING -> READY'
for id in h-1 h-2 h-3; do
	env_with $id hang ',"ttl_ms":300' >&8
	wait_result $id 5
	[ "$(code_of $id)" = timeout ] || fail "$id: expected a timeout error"
done
wait_for 'grep -q "corral: agent s: [A-Z]* -> UNAVAILABLE (3 consecutive timeouts)" "$ERR"' 5 ||
    fail "s did not become UNAVAILABLE after h-1..h-3 timed out"
wait_log 'corral: agent s: UNAVAILABLE -> READY (given work again after 1s)' 10
env_with h-4 ok '' >&8
wait_result h-4 5
result_of h-4 | grep -q '"text":"ok s"' ||
    fail "h-4: expected s's reply once it was given work again: $(result_of h-4 | cut -c1-300)"
serve_eof
corral_wait 10
expect_no_leftovers
exit 0
