#!/bin/sh
# Order within a task, across a redelivery (docs/reliability.md): two
# tasks' messages to one agent r, A (high: at least once) and B (normal:
# at most once), sent by clients with map/send.  r crashes on A2; while
# A2 waits for its redelivery, A3 and B2 are sent and r comes back.  r
# must get A1, A2 (the crash), A2 again, then A3: nothing sent to it
# later overtakes the redelivery (held back until it goes).  B's messages
# may interleave anywhere.
# Each task's messages reach r in the order they were sent, each request
# has one outcome.  The retry waits 2 s (x SLOW), so that A3 is sent
# before it (without the hold, A3 went first then): what the test waits
# for are events (the retry, r's restart, the replies), never a window.
. "$(dirname "$0")/rel-lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  r:
    cmd: [$RA, --record, $T/rec]
    timeout: $((60 * SLOW))s
routes:
  "*": r
retry: {max: 3, initial: $((2 * SLOW))s, factor: 1, max_delay: $((2 * SLOW))s}
YAML
SOCK="$T/ctl.sock"
serve_start "$T/wf.yaml" --log "$AUD" --control "$SOCK" -v
wait_log 'corral: agent r: INITIALIZING -> READY'

# send NAME TASK PRIORITY SESSION: a request to r, answered in
# $T/reply.NAME, once corral accepted it (its request event), so the
# order is the order of these calls.
n=0
send() {
	n=$((n + 1))
	"$CORRAL" send -S "$SOCK" --wait r "{\"protocol\":\"multiagent-1.0\",\"role\":\"user\",\"intent\":\"execute\",\"task\":\"$2\",\"content\":{\"type\":\"text\",\"text\":\"x\"},\"priority\":\"$3\",\"session\":\"$4\"}" \
	    >"$T/reply.$1" 2>&1 8>&- &
	wait_for "[ \"\$(aud_count request agent r)\" -ge $n ]" 10 ||
	    fail "corral did not accept $1: $(cat "$T/reply.$1")"
}
replied() {	# NAME: r's reply to it came back to its client
	wait_for "grep -q finalize \"$T/reply.$1\"" 20 ||
	    fail "no reply to $1: $(cat "$T/reply.$1" 2>/dev/null)"
}

send A1 A1 high A
send B1 B1 normal B
replied A1
replied B1
send A2 "crash-once:$T/A2" high A
# A2 crashed r and waits for its redelivery; once r is back, A3 and B2
# are sent.
aud_wait 1 retry
wait_for '[ "$(grep -c "agent r: INITIALIZING -> READY" "$ERR")" -ge 2 ]' 20 ||
    fail "r did not come back after its crash"
send A3 A3 high A
send B2 B2 normal B
replied A2
replied A3
replied B2

# The requests r read, in order, by task (field 4 is the task).
grep '^req r ' "$T/rec" | awk '{ print $4 }' | sed 's|.*/||' >"$T/order"
grep '^A' "$T/order" | tr '\n' ' ' >"$T/order.A"
[ "$(cat "$T/order.A")" = "A1 A2 A2 A3 " ] ||
    fail "task A should reach r as A1 A2 (crash) A2 (redelivery) A3; r read: $(tr '\n' ' ' <"$T/order")"
grep '^B' "$T/order" | tr '\n' ' ' >"$T/order.B"
[ "$(cat "$T/order.B")" = "B1 B2 " ] ||
    fail "task B should reach r as B1 B2; r read: $(tr '\n' ' ' <"$T/order")"
grep -q "^req r .* crash-once:$T/A2 [1-9]$" "$T/rec" ||
    fail "the redelivery of A2 carries no retry_count: $(grep ' A2' "$T/rec")"
note "r read: $(tr '\n' ' ' <"$T/order")"

serve_eof
corral_wait 20
expect_rc 0
[ "$(aud_count outcome)" -eq 5 ] ||
    fail "expected 5 outcomes (one a request), got $(aud_count outcome)"
[ "$(aud_count retry)" -eq 1 ] || fail "expected one retry (A2), got $(aud_count retry)"
expect_no_leftovers
exit 0
