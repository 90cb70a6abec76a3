#!/bin/sh
# An agent that answers every line it reads, corral's error notices
# included, with another invalid envelope (here: a reply whose
# trace.cost is a number) must not loop with corral for ever.  After
# 10,000 invalid envelopes in a row corral sends it no more notices and
# says so once; the agent then waits, and its request stays in flight
# until something ends it (here `corral cancel`).  The audit log has
# exactly 10,001 rejected lines: the agent's answer to the request and to
# each of the 10,000 notices.  (corral used to answer every one, for as
# long as the request lived: hundreds of thousands of lines.)  A valid
# envelope after such a streak gets one notice summing up the ones not
# sent: rel-hostile-agent's flood checks that.  The same holds for an
# agent that answers every notice with a valid envelope that answers
# nothing (unsolicited), under corral serve.
#
# The test waits for the events (the warning, then the count that stops
# growing), never for a number of round trips inside a deadline: a slow
# machine takes longer, and the request's timeout is only a safety net.
. "$(dirname "$0")/ctl-lib.sh"

# The agents here answer with mawk -W interactive where there is one: it
# reads its input a buffer at a time and writes each answer in one write,
# where the shell's read takes a system call a byte (10,000 notices: most
# of this test's time).  The shell loop, which answers the same, is for a
# machine without mawk.
cat >"$T/loop.sh" <<'SH'
e='{"protocol":"multiagent-1.0","role":"agent","intent":"finalize","task":"t","content":{"type":"text","text":"x"},"trace":{"cost":2}}'
if command -v mawk >/dev/null 2>&1; then
	exec mawk -W interactive -v e="$e" '{ printf "%s", e "\n" }'
fi
while read line; do
	printf '%s\n' "$e"
done
SH
cat >"$T/wf.yaml" <<YAML
agents:
  a:
    cmd: [/bin/sh, $T/loop.sh]
    timeout: $((600 * SLOW))s
routes:
  "*": a
YAML
rejected_a() {
	jq -c 'select(.ev == "rejected" and .agent == "a")' "$T/audit.ndjson" 2>/dev/null | wc -l
}
# The same count, cheaper, to watch it grow (jq parses the whole log at
# each look): corral writes "ev" and "agent" first and in this order.
grep_rejected_a() {
	grep -c '"ev":"rejected","agent":"a",' "$T/audit.ndjson" 2>/dev/null
}
serve_start "$T/wf.yaml" --control "$SOCK" --log "$T/audit.ndjson"
wait_sock
envelope g1 plan >&8
wait_log "corral: agent a: 10000 invalid envelopes in a row: no more notices until it writes a valid one (does it answer every notice?)" 300
# The agent's answer to the last notice may still be on its way: wait
# until the count stops moving, then end the request from outside.
wait_steady 20 60 grep_rejected_a || fail "the rejected count kept changing: $STEADY"
n=$(rejected_a)
[ "$n" = 10001 ] || fail "expected 10001 rejected lines (the answer to the request and to 10000 notices), got $n"
ctl cancel g1
[ "$CRC" = 0 ] || fail "corral cancel g1: $(cat "$T/ctl.err")"
wait_lines 1 30
serve_eof
corral_wait 30
expect_rc 0
# The cancel notice is one more line the agent answers, and no notice
# follows that answer.
[ "$(rejected_a)" = 10002 ] || fail "after the cancel notice: expected one more rejected line, got $(rejected_a)"
[ "$(log_count 'invalid envelopes in a row')" = 1 ] || fail "the warning should come once"
[ "$(jq -r 'select(.ev == "outcome") | .code' "$T/audit.ndjson")" = cancelled ] ||
    fail "the request should end cancelled, once: $(grep '"ev":"outcome"' "$T/audit.ndjson")"
note "the loop stopped after $n invalid envelopes; the request waited until cancelled"

# The same with valid envelopes that answer nothing: an agent that starts
# by saying something unasked, and says it again for every notice it
# gets ("unsolicited"), under corral serve.
cat >"$T/chatty.sh" <<'SH'
e='{"protocol":"multiagent-1.0","role":"agent","intent":"finalize","task":"t","content":{"type":"text","text":"hello"}}'
printf '%s\n' "$e"
if command -v mawk >/dev/null 2>&1; then
	exec mawk -W interactive -v e="$e" '{ printf "%s", e "\n" }'
fi
while read line; do
	printf '%s\n' "$e"
done
SH
cat >"$T/chatty.yaml" <<YAML
agents:
  c:
    cmd: [/bin/sh, $T/chatty.sh]
routes:
  "*": c
YAML
rm -f "$T/audit.ndjson"
serve_start "$T/chatty.yaml" --log "$T/audit.ndjson"
wait_log "corral: agent c: 10000 invalid envelopes in a row: no more notices" 60
serve_eof
corral_wait 20
expect_rc 0
n=$(jq -c 'select(.ev == "rejected" and .agent == "c" and .code == "unsolicited")' "$T/audit.ndjson" | wc -l)
[ "$n" = 10001 ] || fail "unsolicited: expected 10001 rejected lines, got $n"
note "unsolicited: the loop stopped after $n envelopes"
expect_no_leftovers
exit 0
