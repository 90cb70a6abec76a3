#!/bin/sh
# Accounting holds through a shutdown: every request still waiting when
# corral stops (in a queue, in flight, or waiting out its retry delay)
# gets exactly one outcome and corral serve writes exactly one result
# line for its input (a shutdown error at least).
#   - r-1: HIGH, its agent crashed; it waits 60 s before its retry
#   - q-1: waits in the queue behind a busy agent (max_inflight 1)
#   - b-1: in flight at the busy agent (which holds it)
# SIGTERM arrives once all three are so (the long waits cost nothing: the
# shutdown ends them).  run_end must say accepted = replied +
# errored + expired, and each input must have one result.
. "$(dirname "$0")/rel-lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  c:
    cmd: [$RA, --record, $T/c.rec]
    restart: {policy: transient, backoff: 60s}
  busy:
    cmd: [$RA, --record, $T/busy.rec]
    timeout: $((30 * SLOW))s	# held until the script releases it
    max_inflight: 1
routes:
  plan: c
  analyze: busy
retry: {max: 3, initial: 60s, max_delay: 60s}
YAML

serve_start "$T/wf.yaml" --log "$AUD" -v
wait_log 'corral: agent busy: INITIALIZING -> READY'
"$RG" env 1 --id r- --priority high --task "crash-once:$T/flag" >&8
wait_log 'corral: request r-1: UNAVAILABLE (agent c' 5
"$RG" env 1 --id b- --intent analyze --task "wait:$T/never" >&8
"$RG" env 1 --id q- --intent analyze >&8
wait_for 'grep -q "^req busy b-1 " "$T/busy.rec"' 5 || fail "busy did not get b-1"
aud_wait 1 queue id q-1
kill -TERM "$CORRAL_PID"
corral_wait 20
[ "$RC" = 143 ] || fail "expected exit status 143 after SIGTERM, got $RC"
note "results: $(out_parents "$OUT" | tr '\n' ' ')"
for id in r-1 b-1 q-1; do
	n=$(grep -c "\"parents\":\[\"$id\"\]" "$OUT")
	[ "$n" -eq 1 ] || fail "$id has $n result lines after the shutdown, expected exactly 1"
	[ "$(aud_count outcome id "$id")" -eq 1 ] ||
	    fail "$id has $(aud_count outcome id "$id") outcome events, expected 1"
done
run_end_check >/dev/null
expect_no_leftovers
exit 0
