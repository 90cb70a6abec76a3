#!/bin/sh
# Delivery classes across an agent crash (two instances of one agent):
#   - HIGH and CRITICAL are delivered at least once: the agent that got
#     the request dies (exit 3), corral retries with backoff ("retry 1 in
#     0.2s"), the other instance or the restarted one answers, the result
#     is the reply, the redelivery carries corral.retry_count, and the
#     audit log has a retry event and exactly one outcome for the request
#   - NORMAL and LOW are delivered at most once: the crash ends them with
#     agent_lost (UNAVAILABLE), no retry
#   - a HIGH request that times out on every delivery is tried 1 +
#     retry.max times, then expires: one TIMEOUT result, one outcome
# The agents' timeout (600 ms x SLOW) ends only the request that hangs: a
# crash must be seen as a crash, not outrun by the timeout.
# Each crash is an exit before the agent's first line, a failed start,
# and which instance gets each of the four depends on the machine's
# speed (a busy one gave one instance three, and the third made it
# FAILED): failed_starts is raised past four, since what an agent that
# cannot start gets is wf-fail-fast's to check.
. "$(dirname "$0")/rel-lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  c:
    cmd: [$RA, --record, $T/rec]
    instances: 2
    timeout: $((600 * SLOW))ms
    breaker: {failures: 100}
    restart: {failed_starts: 10}
routes:
  "*": c
retry: {max: 3, initial: 200ms, factor: 2, max_delay: 1s}
YAML

ask() {	# ID PRIORITY TASK
	"$RG" env 1 --id "${1%-*}-" --start "${1##*-}" --priority "$2" --task "$3" >&8
	wait_result "$1" 20
}
deliveries() {	# ID
	grep -c "^req c\.[12] $1 " "$T/rec" || true
}

serve_start "$T/wf.yaml" --log "$AUD" -v
wait_log 'corral: agent c.2: INITIALIZING -> READY'

for p in high critical; do
	id=$p-1
	ask "$id" "$p" "crash-once:$T/$p.flag"
	result_of "$id" | grep -q '"text":"ok c\.[12]"' ||
	    fail "$p: expected a reply after the crash, got: $(result_of "$id" | cut -c1-300)"
	log_has "corral: request $id: UNAVAILABLE (agent c." ||
	    fail "$p: no log line for the lost delivery of $id"
	grep -q "corral: request $id: UNAVAILABLE (.*); retry 1 in 0\.[1-3]s" "$ERR" ||
	    fail "$p: expected 'request $id: ... retry 1 in 0.2s' (backoff), saw: $(grep -F "request $id" "$ERR")"
	[ "$(deliveries "$id")" -ge 2 ] ||
	    fail "$p: $id was delivered $(deliveries "$id") times; expected again after the crash"
	grep -q "^req c\.[12] $id crash-once:.* [1-9]$" "$T/rec" ||
	    fail "$p: the later delivery did not carry a retry_count: $(grep " $id " "$T/rec")"
	note "$p: $(deliveries "$id") deliveries: $(grep " $id " "$T/rec" | cut -d' ' -f2,5 | tr '\n' ' ')"
done

for p in normal low; do
	id=$p-1
	ask "$id" "$p" "crash-once:$T/$p.flag"
	[ "$(code_of "$id")" = agent_lost ] ||
	    fail "$p: expected agent_lost after the crash, got: $(result_of "$id" | cut -c1-300)"
	result_of "$id" | grep -q '"category":"UNAVAILABLE"' || fail "$p: expected category UNAVAILABLE"
	[ "$(deliveries "$id")" -eq 1 ] ||
	    fail "$p: $id was delivered $(deliveries "$id") times; at most once expected"
done

# HIGH, never answered: 1 + retry.max deliveries, then TIMEOUT.
wait_for '[ "$(grep -c "INITIALIZING -> READY" "$ERR")" -ge 6 ]' 10 ||
    fail "the crashed instances did not come back"
s=$(now)
ask hang-1 high hang
[ "$(code_of hang-1)" = timeout ] ||
    fail "hang-1: expected a timeout after the retries, got: $(result_of hang-1 | cut -c1-300)"
note "hang-1: $(deliveries hang-1) deliveries, TIMEOUT after $(elapsed "$s")s"
[ "$(deliveries hang-1)" -eq 4 ] ||
    fail "hang-1: expected 4 deliveries (1 + retry.max 3), got $(deliveries hang-1)"

serve_eof
corral_wait 20
expect_rc 0
for id in high-1 critical-1 normal-1 low-1 hang-1; do
	[ "$(grep -c "\"parents\":\[\"$id\"\]" "$OUT")" -eq 1 ] ||
	    fail "$id has $(grep -c "\"parents\":\[\"$id\"\]" "$OUT") results, expected 1"
	[ "$(aud_count outcome id "$id")" -eq 1 ] ||
	    fail "$id has $(aud_count outcome id "$id") outcome events, expected exactly 1"
done
for id in high-1 critical-1; do
	[ "$(aud_count retry id "$id")" -ge 1 ] || fail "no audit retry event for $id"
	[ "$(aud_count outcome id "$id" outcome replied)" -eq 1 ] || fail "$id: outcome is not replied"
done
for id in normal-1 low-1; do
	[ "$(aud_count retry id "$id")" -eq 0 ] || fail "$id (at most once) was retried"
	[ "$(aud_count outcome id "$id" outcome error)" -eq 1 ] || fail "$id: outcome is not error"
done
[ "$(aud_count retry id hang-1)" -eq 3 ] ||
    fail "hang-1: expected 3 retry events, got $(aud_count retry id hang-1)"
[ "$(aud_count outcome id hang-1 outcome expired)" -eq 1 ] || fail "hang-1: outcome is not expired"
set -- $(run_end_check)
[ "$1" -eq 5 ] && [ "$2" -eq 2 ] && [ "$3" -eq 2 ] && [ "$4" -eq 1 ] ||
    fail "expected accepted 5, replied 2, errored 2, expired 1; run_end says $*"
expect_no_leftovers
exit 0
