#!/bin/sh
# The audit log is the replay record: replaying its events in order must
# never show what did not happen.
#   - A reply frees its agent's slot and the next queued request goes to
#     that agent; the reply's outcome event must come before that route
#     event, else a replay shows the agent over its max_inflight.
#   - A handshake makes an agent ready and its queued work is routed; the
#     handshake event must come before that route event.
. "$(dirname "$0")/lib.sh"
. "$TESTDIR/tools/wflib.sh"

LOG="$T/audit.ndjson"
problems=

# Two instances taking one request at a time, six requests at once.
cat >"$T/wf.yaml" <<YAML
agents:
  fan:
    cmd: [$WA, --next, execute, --next, execute, --next, execute, --next, execute, --next, execute, --next, execute]
  w:
    cmd: [$WA, --delay, "20", --intent, finalize]
    instances: 2
    max_inflight: 1
routes:
  plan: fan
  execute: w
YAML
corral_run 20 run "$T/wf.yaml" --goal go --log "$LOG"
expect_rc 0
expect_audit_ok "$LOG"
n=$(jq -r 'select(.ev == "queue") | .id' "$LOG" | wc -l)
[ "$n" -eq 4 ] || fail "expected 4 of the 6 execute requests queued, got $n"
over=$(audit_max_concurrent "$LOG" w. | awk '$1 != "overlap" && $2 > 1')
if [ -n "$over" ]; then
	first=$(jq -r 'select(.ev == "route" or .ev == "outcome") |
	    "\(.seq) \(.ev) \(.agent) \(.id)"' "$LOG" |
	    awk '$2 == "route" && $3 ~ /^w\./ { if (busy[$3]) { print; exit } busy[$3] = $4; id[$4] = $3; next }
	         $2 == "outcome" && ($4 in id) { busy[id[$4]] = ""; delete id[$4] }')
	problems="$problems
max_inflight 1, but replaying the audit log shows in flight at once: $(printf "%s" "$over" | tr "\n" " ") (first: event $first is logged before the outcome of the reply that freed the slot)"
fi

# The handshake comes before the work it lets through.
rm -f "$LOG"
cat >"$T/hs.yaml" <<YAML
agents:
  late:
    cmd: [$WA, --handshake, "200", --intent, finalize]
    ready: handshake
routes:
  "*": late
YAML
corral_run 20 run "$T/hs.yaml" --goal go --log "$LOG"
expect_rc 0
order=$(jq -r 'select(.ev == "handshake" or .ev == "route") | .ev' "$LOG" | tr '\n' ' ')
[ "$order" = "handshake route " ] || problems="$problems
agent late: expected the handshake event before the route of the goal it let through; the log has: $order"

[ -z "$problems" ] || fail "the audit log's order is not what happened:$problems"
exit 0
