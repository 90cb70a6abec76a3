#!/bin/sh
# Interrupting corral (SIGINT, SIGTERM) while work is outstanding: the
# exit status is 130 (143), every accepted request still gets exactly one
# outcome, and the outcome names the shutdown corral chose.
#   1. corral run with the goal in flight at an agent that never answers:
#      whatever result is printed is an error envelope with code
#      "shutdown", not "agent_lost ... exit status 0 before replying"
#      (corral stopped the agent itself).
#   2. corral serve with a HIGH request that timed out and waits for its
#      retry: the request is failed (code shutdown) at the shutdown, so
#      run_end's accepted == replied + errored + expired and the input
#      gets its one result line.
. "$(dirname "$0")/lib.sh"
. "$TESTDIR/tools/wflib.sh"

LOG="$T/audit.ndjson"
problems=

# problem TEXT: note a failure and go on, so every case is reported.
problem() {
	problems="$problems
$*"
}

cat >"$T/hang.yaml" <<YAML
agents:
  a:
    cmd: [$WA, --record, $T/hang.rec, --hang]
routes:
  "*": a
YAML
for sig in INT TERM; do
	rm -f "$T/hang.rec" "$LOG"
	corral_start run "$T/hang.yaml" --goal go --log "$LOG"
	wait_for 'grep -q "^recv {\"protocol\"" "$T/hang.rec" 2>/dev/null' 10 ||
	    fail "SIG$sig: the agent never got the goal"
	kill -$sig "$CORRAL_PID"
	corral_wait 10
	want=130
	[ $sig = TERM ] && want=143
	expect_rc $want
	p=$(audit_problems "$LOG")
	[ -z "$p" ] || problem "run, SIG$sig: audit log: $p"
	if [ -s "$OUT" ]; then
		code=$(result_field "$OUT" .content.data.code)
		[ "$code" = shutdown ] ||
		    problem "run, SIG$sig: the interrupted run's result blames the agent: code '$code', '$(result_field "$OUT" .content.text)' (expected code shutdown, or no result)"
	fi
	code=$(jq -r 'select(.ev == "outcome") | .code' "$LOG")
	[ "$code" = shutdown ] ||
	    problem "run, SIG$sig: expected the goal's outcome code shutdown in the audit log, got '$code'"
done

# A HIGH request retried after a timeout; SIGTERM while the retry waits
# (60 s: longer than the script can take to send it).
rm -f "$LOG"
cat >"$T/retry.yaml" <<YAML
agents:
  a:
    cmd: [$WA, --hang]
    timeout: 200ms
routes:
  "*": a
retry: {max: 3, initial: 60s, max_delay: 60s}
YAML
serve_start "$T/retry.yaml" --log "$LOG" -v
envelope h-1 execute t ',"priority":"high"' >&8
wait_log 'corral: request h-1: TIMEOUT' 5
log_has 'retry 1 in' || fail "expected h-1 to be retried after its timeout: $(grep h-1 "$ERR")"
kill -TERM "$CORRAL_PID"
corral_wait 10
expect_rc 143
p=$(audit_problems "$LOG")
[ -z "$p" ] || problem "serve, SIGTERM during a retry's backoff: audit log: $p"
n=$(jq -c 'select(.trace.parents == ["h-1"])' "$OUT" 2>/dev/null | wc -l)
[ "$n" -eq 1 ] || problem "serve, SIGTERM during a retry's backoff: expected one result line for h-1, got $n"

[ -z "$problems" ] || fail "interrupted work is not accounted for:$problems"
expect_no_leftovers
exit 0
