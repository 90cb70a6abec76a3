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
for k in 1 2 3 4; do
	"$RG" env 1 --id batch- --start $k --priority batch >&8
	"$RG" env 1 --id low- --start $k --priority 1 >&8
	"$RG" env 1 --id normal- --start $k >&8
	"$RG" env 1 --id high- --start $k --priority high >&8
	"$RG" env 1 --id critical- --start $k --priority 4 >&8
done
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
expect_no_leftovers
exit 0
