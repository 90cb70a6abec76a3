#!/bin/sh
# Failing fast, with the cause:
#   1. An agent that exits at start again and again (a flag it does not
#      know) is FAILED after three failed starts, a few seconds, not after
#      its whole restart budget; the run's error and corral's log carry its
#      exit status and its last stderr line.  With ready: spawn the goal
#      is given to it at once and fails at its first exit, with the same
#      cause.
#   2. A timeout error carries the agent's last stderr line.
#   3. A reply with an invalid next_action (an unknown intent) fails its
#      request at once with the validation error, not at its timeout.
#   4. An agent that answers every line, notices included, with plain text
#      does not loop with corral for ever: it is FAILED with a cause that
#      says it writes non-JSON to stdout, quoting the first line; its
#      request's error says it failed (it did not exit), and the hints say
#      what to do: log to stderr, or adapter: exec.  That takes 10,000
#      round trips: the test waits for them as long as they go on (the
#      agent's timeout is only a safety net).
#   5. sort as an agent: the timeout and its echo at the end point at
#      adapter: exec, not at a longer timeout.
. "$(dirname "$0")/lib.sh"
. "$TESTDIR/tools/wflib.sh"

LOG="$T/audit.ndjson"

# 1. Failed starts.
cat >"$T/bad-flag.sh" <<'SH'
#!/bin/sh
echo "error: unknown option --fast" >&2
exit 2
SH
chmod +x "$T/bad-flag.sh"
cat >"$T/start.yaml" <<YAML
agents:
  worker:
    cmd: [$T/bad-flag.sh]
    ready: handshake
routes:
  "*": worker
YAML
s=$(now)
corral_run 60 run "$T/start.yaml" --goal go --log "$LOG"
t=$(elapsed "$s")
note "failed starts: the run ended after ${t}s"
expect_rc 1
expect_error_result "$OUT" no_agent
msg=$(result_field "$OUT" .content.text)
case $msg in
*"failed to start 3 times in a row"*"exit status 2"*"error: unknown option --fast"*) ;;
*) fail "failed starts: the error does not give the cause: $msg" ;;
esac
log_has 'corral: agent worker: INITIALIZING -> FAILED (failed to start 3 times in a row: exit status 2; its last stderr: "error: unknown option --fast")' ||
    fail "failed starts: no FAILED line with the exit status and stderr"
[ "$(grep -c '"ev":"spawn"' "$LOG")" -eq 3 ] ||
    fail "failed starts: expected 3 spawns, got $(grep -c '"ev":"spawn"' "$LOG")"
expect_audit_ok "$LOG"
rm -f "$LOG"

sed -i '/ready: handshake/d' "$T/start.yaml"
corral_run 60 run "$T/start.yaml" --goal go
expect_rc 1
expect_error_result "$OUT" agent_lost
case $(result_field "$OUT" .content.text) in
*'ended before replying: exit status 2; its last stderr: "error: unknown option --fast"'*) ;;
*) fail "ready at spawn: the error does not give the cause: $(result_field "$OUT" .content.text)" ;;
esac

# 2. A timeout quotes the last stderr line.
cat >"$T/refused.sh" <<'SH'
#!/bin/sh
read -r line
echo "connection failed: 127.0.0.1:9 refused" >&2
sleep 60
SH
chmod +x "$T/refused.sh"
cat >"$T/timeout.yaml" <<YAML
agents:
  cli:
    cmd: [$T/refused.sh]
    timeout: 1s
routes:
  "*": cli
retry: {max: 0}
YAML
corral_run 60 run "$T/timeout.yaml" --goal go
expect_rc 1
expect_error_result "$OUT" timeout
case $(result_field "$OUT" .content.text) in
*'its last stderr: "connection failed: 127.0.0.1:9 refused"'*) ;;
*) fail "timeout: the error does not quote the last stderr line: $(result_field "$OUT" .content.text)" ;;
esac

# 3. An invalid next_action fails its request at once.
cat >"$T/next.yaml" <<YAML
agents:
  planner:
    cmd: [$WA, --next, "bogus:do it"]
    timeout: 120s
routes:
  "*": planner
YAML
s=$(now)
corral_run 60 run "$T/next.yaml" --goal go
t=$(elapsed "$s")
expect_rc 1
expect_error_result "$OUT" invalid_envelope
case $(result_field "$OUT" .content.text) in
*"outputs.next_actions[0].intent is not an intent"*) ;;
*) fail "next action: expected the validation error, got: $(result_field "$OUT" .content.text)" ;;
esac
fcmp "$t" "<" 60 || fail "next action: the request waited ${t}s, as for its timeout"

# 4. A program that answers every line with plain text.
# mawk -W interactive reads its input a buffer at a time and writes each
# answer in one write: the shell's read takes a system call a byte, and
# reading 10,000 notices took 30 s (12 of CPU) here.  The shell loop,
# which answers the same, is for a machine without mawk.
cat >"$T/chatty.sh" <<'SH'
#!/bin/sh
if command -v mawk >/dev/null 2>&1; then
	exec mawk -W interactive '{ printf "%s", "you said: " substr($0, 1, 40) "\n" }'
fi
while IFS= read -r line; do
	printf 'you said: %.40s\n' "$line"
done
SH
chmod +x "$T/chatty.sh"
cat >"$T/chatty.yaml" <<YAML
agents:
  chatty:
    cmd: [$T/chatty.sh]
    timeout: $((600 * SLOW))s
routes:
  "*": chatty
YAML
rejected() {
	grep -c '"ev":"rejected"' "$LOG" 2>/dev/null
}
rm -f "$LOG"
corral_start run "$T/chatty.yaml" --goal go --log "$LOG"
wait_progress '! pid_alive $CORRAL_PID' 20 rejected ||
    fail "chatty: corral still runs, $PROGRESS lines rejected and none more in 20s (x$SLOW)"
corral_wait 10
expect_rc 1
log_has 'corral: agent chatty: READY -> FAILED (it writes non-JSON to stdout' ||
log_has 'corral: agent chatty: BUSY -> FAILED (it writes non-JSON to stdout' ||
    fail "chatty: expected it FAILED because it writes non-JSON to stdout"
log_has '; log to stderr instead)' && log_has 'the first: "you said: {' ||
    fail "chatty: the cause does not quote the first line or give the advice"
# It never exited: the error says it failed, the hint what to do.
case $(result_field "$OUT" .content.text) in
*"agent chatty failed before replying: it writes non-JSON to stdout"*) ;;
*) fail "chatty: the error should say it failed: $(result_field "$OUT" .content.text)" ;;
esac
log_has '(agent_lost); hint: stdout is for envelopes, one JSON object a line; a program that is not an agent needs adapter: exec' ||
    fail "chatty: the job's line should give the output hint: $(grep 'failed:' "$ERR")"
log_has 'exited while working' && fail "chatty: it did not exit"
grep -q 'agent chatty: invalid JSON at byte 0: .*, in "you said: {.*"; stdout is for envelopes: log to stderr, or give a program that is not an agent adapter: exec$' "$ERR" ||
    fail "chatty: a bad line should be quoted, with both hints: $(grep 'invalid JSON' "$ERR" | head -n 1)"

# 5. A plain program given as an agent: sort reads all its input before
# it writes, so it answers nothing; at the end of its input it echoes the
# request back.  Both messages point at adapter: exec.
cat >"$T/sort.yaml" <<YAML
agents:
  sorter:
    cmd: [sort]
    timeout: 1s
routes:
  "*": sorter
YAML
corral_run 60 run "$T/sort.yaml" --goal go
expect_rc 1
log_has 'failed: agent sorter did not reply within 1s; it has answered nothing yet (timeout); hint: a program that is not an agent (sort, tr ...) needs adapter: exec' ||
    fail "sort: the timeout should point at adapter: exec: $(cat "$ERR")"
log_has 'raise its timeout' && fail "sort: more timeout is not the advice"
log_has 'agent sorter: an envelope with no request outstanding was dropped (did it echo what it read? a program that is not an agent needs adapter: exec)' ||
    fail "sort: its echo at the end should point at adapter: exec: $(cat "$ERR")"
exit 0
