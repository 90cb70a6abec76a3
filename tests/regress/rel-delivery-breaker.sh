#!/bin/sh
# The circuit breaker, per agent (breaker: {failures: 5, reset: R,
# probes: 2} here, R 1 s + 1 s times SLOW; the defaults are checked with
# corral check --print):
#   - 5 failures in a row (timeouts) open it: "circuit open (5 failures in
#     a row)", audit breaker state open
#   - while open, a request with no other candidate fails fast with
#     circuit_open (UNAVAILABLE); one with another candidate goes there
#   - after reset it is half-open ("circuit half-open"); a failed probe
#     opens it again ("a probe failed"); a successful probe closes it
#     ("circuit closed (a probe succeeded)") and work flows again
# The open state lasts R: the two requests for it are written the moment
# the log says the circuit opened, and y-1's outcome must come before the
# circuit's half-open in the audit log (an order, not a time).  b's timeout (500 ms times SLOW) only
# ends the requests that hang; the others are answered at once.
. "$(dirname "$0")/rel-lib.sh"

R=$((1 + SLOW))
cat >"$T/wf.yaml" <<YAML
agents:
  b:
    cmd: [$RA, --record, $T/rec]
    timeout: $((500 * SLOW))ms
    heartbeat: {interval: $((200 * SLOW))ms, misses: 5}
    breaker: {failures: 5, reset: ${R}s, probes: 2}
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
	"$RG" env 1 --id "${1%-*}-" --start "${1##*-}" --task "$2" --intent "${3:-plan}"
}

serve_start "$T/wf.yaml" --log "$AUD" -v
wait_log 'corral: agent b: INITIALIZING -> READY'
{ send y-1 ok; send y-2 ok analyze; } >"$T/open-reqs"

# Five failures in a row.
for i in 1 2 3 4 5; do
	send x-$i hang >&8
done
wait_log "corral: agent b: circuit open (5 failures in a row); no work for ${R}s" 10

# Open: fail fast without another candidate, use the other one if any.
s=$(now)
cat "$T/open-reqs" >&8
for i in 1 2 3 4 5; do
	wait_result x-$i 5
	[ "$(code_of x-$i)" = timeout ] || fail "x-$i: expected a timeout, got $(result_of x-$i | cut -c1-300)"
done
log_has 'circuit open' && [ "$(log_count 'circuit open')" -eq 1 ] ||
    fail "expected the circuit to open once, saw: $(grep 'circuit open' "$ERR")"
wait_result y-1 5
t=$(elapsed "$s")
[ "$(code_of y-1)" = circuit_open ] ||
    fail "y-1: expected circuit_open while the circuit is open, got: $(result_of y-1 | cut -c1-300)"
result_of y-1 | grep -q '"category":"UNAVAILABLE"' || fail "y-1: expected category UNAVAILABLE"
note "y-1 failed in ${t}s"
wait_result y-2 5
result_of y-2 | grep -q '"text":"ok alt"' ||
    fail "y-2 (analyze: [b, alt]): expected alt to answer while b's circuit is open, got: $(result_of y-2 | cut -c1-300)"
grep -q '^req b y-' "$T/rec" && fail "b got work while its circuit was open"

# Half-open after reset; a failed probe opens it again.
wait_log "corral: agent b: circuit half-open after ${R}s; 2 probes" $((R + 5))
# Failing fast: y-1 ended while the circuit was open, not held in the
# queue until the reset.  The audit log's order says so, whatever the
# machine's load (the shell's own time above is only a note).
aud_wait 1 breaker agent b state half-open
oseq=$(grep -F '"ev":"outcome","id":"y-1"' "$AUD" | sed -n 's/^{"seq":\([0-9]*\),.*/\1/p' | head -n 1)
hseq=$(grep -F '"ev":"breaker","agent":"b","state":"half-open"' "$AUD" | sed -n 's/^{"seq":\([0-9]*\),.*/\1/p' | head -n 1)
[ -n "$oseq" ] && [ -n "$hseq" ] || fail "expected y-1's outcome and b's half-open in the audit log (outcome seq '$oseq', half-open seq '$hseq')"
[ "$oseq" -lt "$hseq" ] || fail "y-1 ended (audit seq $oseq) after the circuit became half-open (seq $hseq): it was held until the reset, not failed at once"
send z-1 hang >&8
wait_result z-1 5
wait_log "corral: agent b: circuit open (a probe failed); no work for ${R}s" 5
# Half-open again; a successful probe closes it.
wait_for '[ "$(log_count "corral: agent b: circuit half-open")" -ge 2 ]' $((R + 5)) ||
    fail "the circuit did not become half-open again after the failed probe"
send w-1 ok >&8
wait_result w-1 5
result_of w-1 | grep -q '"text":"ok b"' || fail "w-1: expected b's reply to the probe, got: $(result_of w-1 | cut -c1-300)"
wait_log 'corral: agent b: circuit closed (a probe succeeded)' 5
send v-1 ok >&8
send v-2 ok >&8
wait_result v-1 5
wait_result v-2 5
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
