#!/bin/sh
# Priorities and anti-starvation, with one agent that takes one request
# at a time (max_inflight: 1):
#   - while it is busy (it holds a request until the script has seen all
#     20 in the queue), 20 requests queue, interleaved over the five
#     levels (names and numbers): they are served critical, high, normal,
#     low, batch, and FIFO within each level
#   - aging: a BATCH request queued behind a steady stream of HIGH ones
#     is still served, after about 5 s of waiting (route.c ROUTE_AGING),
#     while HIGH requests are still queued
#   - priority inversion: what holds up a more urgent request while it
#     waits is raised to its priority, and the audit log says so: the
#     request in flight at the agent it waits for, a request queued ahead
#     of it there, and a request the busy one made of another agent
. "$(dirname "$0")/rel-lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  p:
    cmd: [$RA, --record, $T/rec]
    max_inflight: 1
    timeout: $((30 * SLOW))s	# held until the script releases it
routes:
  "*": p
retry: {max: 0}
YAML

served() {	# the request ids p received, in order, one a line
	sed -n 's/^req p \([^ ]*\) .*/\1/p' "$T/rec"
}

serve_start "$T/wf.yaml" --log "$AUD" -v
wait_log 'corral: agent p: INITIALIZING -> READY'

# 1. Order.
"$RG" env 1 --id block- --task "wait:$T/release" >&8
wait_for 'grep -q "^req p block-1 " "$T/rec"' 5 || fail "p did not get the blocking request"
# The 20 are written at once: made one by one on a loaded machine they
# took longer than aging's 5 s (route.c ROUTE_AGING), and the first heads
# to age jumped ahead of the critical ones.
for k in 1 2 3 4; do
	"$RG" env 1 --id batch- --start $k --priority batch
	"$RG" env 1 --id low- --start $k --priority 1
	"$RG" env 1 --id normal- --start $k
	"$RG" env 1 --id high- --start $k --priority high
	"$RG" env 1 --id critical- --start $k --priority 4
done >"$T/burst"
cat "$T/burst" >&8
aud_wait 20 queue
: >"$T/release"
wait_for '[ "$(served | wc -l)" -ge 21 ]' 10 || fail "only $(served | wc -l) of 21 requests served"
got=$(served | sed -n '2,21p' | tr '\n' ' ')
want=
for p in critical high normal low batch; do
	for k in 1 2 3 4; do
		want="$want$p-$k "
	done
done
[ "$got" = "$want" ] || fail "wrong service order:
  got:      $got
  expected: $want"
queued=$(aud_count queue)
[ "$queued" -ge 20 ] || fail "expected the 20 requests to wait in the queue, the audit log has $queued queue events"
# block-1 (normal) held them up: raised while they waited, by the first
# high and the first critical one.
[ "$(aud_count priority_raised id block-1 from normal to high because high-1)" = 1 ] &&
    [ "$(aud_count priority_raised id block-1 from high to critical because critical-1)" = 1 ] ||
    fail "expected block-1 raised to high, then critical, while they waited: $(grep priority_raised "$AUD")"

# 2. Aging: one BATCH request behind a stream of HIGH ones (100 ms each),
# all queued while p holds hblock-1.  The HIGH ones come after the BATCH
# one is queued: accepted in the same loop iteration they would be as old
# as it, and then the higher level wins.
"$RG" env 1 --id hblock- --task "wait:$T/release2" --priority high >&8
wait_for 'grep -q "^req p hblock-1 " "$T/rec"' 5 || fail "p did not get hblock-1"
q0=$(aud_count queue)
s=$(now)
"$RG" env 1 --id old- --priority batch >&8
aud_wait 1 queue id old-1
"$RG" env 80 --id hot- --task sleep:100 --priority high >&8
aud_wait $((q0 + 81)) queue
: >"$T/release2"
wait_for 'grep -q "^req p old-1 " "$T/rec"' 15 ||
    fail "the BATCH request starved: not served within 15s (x$SLOW) behind HIGH ones ($(grep -c '^req p hot-' "$T/rec") HIGH served)"
t=$(elapsed "$s")
before=$(served | sed -n '/^hot-/p; /^old-1$/q' | grep -c '^hot-')
note "the BATCH request was served after ${t}s, after $before of 80 HIGH requests"
fcmp "$t" ">=" 4.5 || fail "the BATCH request was served after ${t}s, before aging (5s): priorities not applied?"
[ "$before" -lt 80 ] || fail "the BATCH request was served only after every HIGH one"
# Enough: stop (the HIGH requests still queued fail with shutdown).
kill -TERM "$CORRAL_PID"
corral_wait 20
[ "$RC" = 143 ] || fail "expected exit status 143 after SIGTERM, got $RC"
set -- $(run_end_check)
note "run_end: accepted $1 replied $2 errored $3 expired $4"

# 3. Priority inversion while waiting.  p (one request at a time) works
# on chain-1 (normal), which made a request of q (low, and raised to
# normal at once: its agent works on a normal one) that q keeps; a low
# request addressed to p waits in p's own queue.  Then an urgent (high)
# request waits for p: chain-1, the request it made of q, and the one
# queued ahead at p are raised to high while it waits.
cat >"$T/wf3.yaml" <<YAML
agents:
  p:
    cmd: [$RA, --record, $T/rec3, --script, $T/script]
    max_inflight: 1
    timeout: $((30 * SLOW))s	# held until the script stops corral
  q:
    cmd: [$RA, --record, $T/rec3]
routes:
  "*": p
retry: {max: 0}
YAML
printf '%s\n' '{"jsonrpc":"2.0","id":"s-1","method":"map/send","params":{"to":{"agent":"q"},"payload":{"protocol":"multiagent-1.0","role":"agent","intent":"execute","task":"hang","content":{"type":"text","text":"x"},"priority":"low"},"meta":{"expectsResponse":true}}}' >"$T/script"
AUD="$T/audit3.ndjson"
serve_start "$T/wf3.yaml" --log "$AUD" --control "$T/ctl3.sock"
"$RG" env 1 --id chain- --task script >&8
wait_for 'grep -q "^req q .* hang" "$T/rec3"' 10 || fail "p's request of q did not reach q"
sub=$(jq -r 'select(.ev == "request" and .agent == "q") | .id' "$AUD")
[ "$(aud_count priority_raised id "$sub" from low to normal because chain-1)" = 1 ] ||
    fail "expected p's request of q raised to normal when made: $(grep priority_raised "$AUD")"
"$CORRAL" send -S "$T/ctl3.sock" --wait p '{"protocol":"multiagent-1.0","role":"user","intent":"execute","task":"ok","content":{"type":"text","text":"x"},"priority":"low"}' \
    >/dev/null 2>&1 8>&- &
aud_wait 1 request agent p
ahead=$(jq -r 'select(.ev == "request" and .agent == "p") | .id' "$AUD")
"$RG" env 1 --id urgent- --priority high >&8
aud_wait 1 queue id urgent-1
for r in "chain-1 normal" "$sub normal" "$ahead low"; do
	set -- $r
	[ "$(aud_count priority_raised id "$1" from "$2" to high because urgent-1)" = 1 ] ||
	    fail "expected $1 raised from $2 to high while urgent-1 waits: $(grep priority_raised "$AUD")"
done
kill -TERM "$CORRAL_PID"
corral_wait 20
expect_no_leftovers
exit 0
