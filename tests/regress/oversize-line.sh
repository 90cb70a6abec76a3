#!/bin/sh
# A line longer than max_line (4 KiB here) is dropped whole: corral logs an
# error naming the agent and the line's size, sends the agent an error
# notice (line_too_long), and delivers the next valid line, which the
# agent wrote in the same write: the run succeeds with that reply.
. "$(dirname "$0")/lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  big:
    cmd: [$TA, --record, $T/rec, --oversize, "10000"]
    max_line: 4KiB
routes:
  "*": big
YAML

corral_run 20 run "$T/wf.yaml" --goal go -v
expect_rc 0
grep -q '"text":"ok big"' "$OUT" ||
    fail "expected the valid reply after the oversized line on stdout, got: $(head -c 300 "$OUT")"
grep -q 'OOOOOOOO' "$OUT" "$ERR" && fail "part of the oversized line was forwarded or logged"
log_has 'corral: agent big: a line of 10000 bytes exceeds max_line (4096 bytes) and was dropped' ||
    fail "expected 'agent big: a line of 10000 bytes exceeds max_line (4096 bytes) and was dropped' in the log; saw: $(grep -F 'max_line' "$ERR")"
notice=$(grep '^recv ' "$T/rec" | grep '"kind":"notice"')
[ -n "$notice" ] || fail "the agent received no notice; it received: $(cut -c1-200 "$T/rec")"
printf '%s\n' "$notice" | grep -q '"code":"line_too_long"' ||
    fail "expected a line_too_long notice, got: $notice"
printf '%s\n' "$notice" | grep -q '"type":"error"' ||
    fail "expected the notice to be an error envelope, got: $notice"
[ "$(grep -c '^recv {"protocol"' "$T/rec")" -eq 2 ] ||
    fail "expected the agent to get the goal and one notice, it got: $(grep '^recv {' "$T/rec" | cut -c1-120)"
expect_no_leftovers
exit 0
