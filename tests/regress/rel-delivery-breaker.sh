#!/bin/sh
# The circuit breaker, per agent (breaker: {failures: 5, reset: 1s,
# probes: 2} here; the defaults are checked with corral check --print):
#   - 5 failures in a row (timeouts) open it: "circuit open (5 failures in
#     a row)", audit breaker state open
#   - while open, a request with no other candidate fails fast with
#     circuit_open (UNAVAILABLE); one with another candidate goes there
#   - after reset it is half-open ("circuit half-open"); a failed probe
#     opens it again ("a probe failed"); a successful probe closes it
#     ("circuit closed (a probe succeeded)") and work flows again
. "$(dirname "$0")/rel-lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  b:
    cmd: [$RA, --record, $T/rec]
    timeout: 300ms
    heartbeat: {interval: 100ms, misses: 5}
    breaker: {failures: 5, reset: 1s, probes: 2}
  alt:
    cmd: [$RA, --record, $T/alt.rec]
routes:
  plan: b
  analyze: [b, alt]
retry: {max: 0}
YAML

# The defaults.
cat >"$T/def.yaml" <<YAML
agents:
  x:
    cmd: [/bin/cat]
routes:
  "*": x
YAML
"$CORRAL" check --print "$T/def.yaml" >"$T/check.out" 2>&1 || fail "corral check --print failed: $(cat "$T/check.out")"
grep -q '^    breaker: {failures: 5, reset: 1m, probes: 3}$' "$T/check.out" ||
    fail "expected the default breaker {failures: 5, reset: 1m, probes: 3}, corral check --print says: $(grep breaker "$T/check.out")"

send() {	# ID TASK [INTENT]
	"$RG" env 1 --id "${1%-*}-" --start "${1##*-}" --task "$2" --intent "${3:-plan}" >&8
}
result_wait() {	# ID SECONDS
	_id=$1
	wait_for '[ -n "$(result_of "$_id")" ]' "$2" || fail "no result for $1 within $2s (x$SLOW)"
}

serve_start "$T/wf.yaml" --log "$AUD" -v
wait_log 'corral: agent b: INITIALIZING -> READY'

# Five failures in a row.
for i in 1 2 3 4 5; do
	send x-$i hang
done
for i in 1 2 3 4 5; do
	result_wait x-$i 5
	[ "$(code_of x-$i)" = timeout ] || fail "x-$i: expected a timeout, got $(result_of x-$i | cut -c1-300)"
done
wait_log 'corral: agent b: circuit open (5 failures in a row); no work for 1s' 5
log_has 'circuit open' && [ "$(log_count 'circuit open')" -eq 1 ] ||
    fail "expected the circuit to open once, saw: $(grep 'circuit open' "$ERR")"

# Open: fail fast without another candidate, use the other one if any.
s=$(now)
send y-1 ok
result_wait y-1 5
t=$(elapsed "$s")
[ "$(code_of y-1)" = circuit_open ] ||
    fail "y-1: expected circuit_open while the circuit is open, got: $(result_of y-1 | cut -c1-300)"
result_of y-1 | grep -q '"category":"UNAVAILABLE"' || fail "y-1: expected category UNAVAILABLE"
note "y-1 failed fast in ${t}s"
[ $SLOW -gt 1 ] || fcmp "$t" "<" 0.5 || fail "y-1 took ${t}s; failing fast means at once"
send y-2 ok analyze
result_wait y-2 5
result_of y-2 | grep -q '"text":"ok alt"' ||
    fail "y-2 (analyze: [b, alt]): expected alt to answer while b's circuit is open, got: $(result_of y-2 | cut -c1-300)"
grep -q '^req b y-' "$T/rec" && fail "b got work while its circuit was open"

# Half-open after reset; a failed probe opens it again.
wait_log 'corral: agent b: circuit half-open after 1s; 2 probes' 5
send z-1 hang
result_wait z-1 5
wait_log 'corral: agent b: circuit open (a probe failed); no work for 1s' 5
# Half-open again; a successful probe closes it.
wait_for '[ "$(log_count "corral: agent b: circuit half-open")" -ge 2 ]' 5 ||
    fail "the circuit did not become half-open again after the failed probe"
send w-1 ok
result_wait w-1 5
result_of w-1 | grep -q '"text":"ok b"' || fail "w-1: expected b's reply to the probe, got: $(result_of w-1 | cut -c1-300)"
wait_log 'corral: agent b: circuit closed (a probe succeeded)' 5
send v-1 ok
send v-2 ok
result_wait v-1 5
result_wait v-2 5
result_of v-1 | grep -q '"text":"ok b"' && result_of v-2 | grep -q '"text":"ok b"' ||
    fail "after the circuit closed, b should answer again"
serve_eof
corral_wait 10
expect_rc 0
[ "$(aud_count breaker agent b state open)" -eq 2 ] ||
    fail "expected 2 audit breaker open events, got $(aud_count breaker agent b state open)"
[ "$(aud_count breaker agent b state half-open)" -ge 2 ] ||
    fail "expected 2 audit breaker half-open events, got $(aud_count breaker agent b state half-open)"
[ "$(aud_count breaker agent b state closed)" -eq 1 ] ||
    fail "expected 1 audit breaker closed event, got $(aud_count breaker agent b state closed)"
run_end_check >/dev/null
expect_no_leftovers
exit 0
