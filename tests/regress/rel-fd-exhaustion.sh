#!/bin/sh
# Running out of descriptors.  corral starts with a low RLIMIT_NOFILE
# (soft and hard: corral raises its soft limit to the hard one) that fits
# 6 agents; the workflow wants 3 short-lived agents and 6 echo agents.
#   - the spawns that do not fit fail with a clear error naming the cause
#     ("spawn failed: ...: Too many open files", audit spawn_failed), and
#     are retried with backoff: a failed spawn is not a crash of corral
#   - corral keeps serving with the echo agents it has
#   - when the short-lived agents exit (once the script has seen the
#     failures and the serving), their descriptors are free and the
#     retried spawns succeed: more echo agents come up and serve
#   - corral shuts down cleanly; nothing is left
. "$(dirname "$0")/rel-lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  short:
    cmd: [$TA, --exit-when, $T/free]
    instances: 3
    restart: temporary
  echo:
    cmd: [$RA, --record, $T/rec]
    instances: 6
    restart: {policy: transient, max: 100, within: 1m, backoff: 1s, backoff_max: 1s}
routes:
  "*": echo
YAML
cat >"$T/one.yaml" <<YAML
agents:
  one:
    cmd: [$RA]
routes:
  "*": one
YAML

# The descriptors corral holds besides 3 per agent, measured with one
# agent and the same options.
serve_start "$T/one.yaml" --log "$AUD" -v
sup=$(sup_pid)
wait_log 'corral: agent one: INITIALIZING -> READY'
base=$(( $(fd_count "$sup") - 3 ))
serve_eof
corral_wait 10
expect_rc 0
# k agents need base + 3k descriptors, and spawning the (k+1)th needs 6
# more (three pipes) before it closes 3: base + 21 fits 6 (3 short, 3
# echo), fewer where a spawn costs more (under valgrind).
lim=$((base + 21))
note "corral holds $base descriptors of its own; running with a limit of $lim"

: >"$OUT"
: >"$ERR"
rm -f "$T/stdin" "$AUD"
mkfifo "$T/stdin"
exec 8<>"$T/stdin"
(
	ulimit -S -n "$lim" && ulimit -H -n "$lim" || exit 99
	exec "$CORRAL" serve "$T/wf.yaml" --log "$AUD" -v <"$T/stdin" >"$OUT" 2>"$ERR"
) 8>&- &
CORRAL_PID=$!
wait_for 'log_has "Too many open files" || ! pid_alive $CORRAL_PID' 10
if ! pid_alive "$CORRAL_PID"; then
	wait "$CORRAL_PID"
	RC=$?
	CORRAL_PID=
	[ "$RC" = 99 ] && skip "cannot lower RLIMIT_NOFILE to $lim here"
	fail "corral exited (status $RC) when it ran out of descriptors"
fi
log_has 'Too many open files' ||
    fail "no spawn failed with 'Too many open files' at a limit of $lim"
log_has 'corral: agent echo.1: spawned' ||
    fail "echo.1 did not start although it fits the limit"
failed=$(grep -F ': spawn failed: ' "$ERR" | head -n 1)
printf '%s\n' "$failed" | grep -q '^corral: agent echo\.[2-6]: spawn failed: .*: Too many open files$' ||
    fail "expected 'agent echo.N: spawn failed: ...: Too many open files', saw: $failed"
note "first failure: $failed"
# The audit log's writer thread may write it a little after stderr.
wait_for 'grep -F "\"ev\":\"spawn_failed\"" "$AUD" | grep -q "Too many open files"' 5 ||
    fail "no audit spawn_failed event naming 'Too many open files'"

# Still serving, with the agent it has.
"$RG" env 5 --id a- >&8
wait_for '[ "$(out_lines)" -ge 5 ]' 10 ||
    fail "corral did not answer while short of descriptors: $(out_lines) of 5 results"
[ "$(grep -c '"text":"ok echo\.' "$OUT")" -eq 5 ] ||
    fail "expected 5 replies from echo agents, got: $(cut -c1-200 "$OUT")"

# The short agents exit now; the retried spawns then succeed.
: >"$T/free"
wait_for 'grep -q "corral: agent short\.[0-9]*: [A-Z]* -> STOPPED (exit" "$ERR"' 10 ||
    fail "the short-lived agents did not exit"
# The echo agents that started before the first short one exited.
first=$(awk '/corral: agent short\.[0-9]*: [A-Z]* -> STOPPED \(exit/ { exit }
    /corral: agent echo\.[0-9]*: spawned/ { n++ } END { print n + 0 }' "$ERR")
note "$first echo agents started before descriptors were freed"
wait_for '[ "$(grep -c "corral: agent echo\.[0-9]*: spawned" "$ERR")" -ge $((first + 2)) ]' 10 ||
    fail "descriptors were freed but no more echo agents came up: $(grep -c 'agent echo.[0-9]*: spawned' "$ERR") spawned; last log lines: $(tail -n 3 "$ERR")"
up=$(grep -c 'corral: agent echo\.[0-9]*: spawned' "$ERR")
note "$up echo agents running after the short ones exited"
pid_alive "$CORRAL_PID" || fail "corral died"
"$RG" env 20 --id b- >&8
wait_for '[ "$(out_lines)" -ge 25 ]' 10 || fail "the later requests were not all answered"
by=$(grep -F '"parents":["b-' "$OUT" | sed 's/.*"text":"ok \(echo\.[0-9]*\)".*/\1/' | sort -u | wc -l)
note "the 20 later requests were answered by $by echo agents"
[ "$by" -ge 2 ] || fail "expected the recovered echo agents to share the later requests, all went to one"
serve_eof
corral_wait 20
expect_rc 0
set -- $(run_end_check)
[ "$1" -eq 25 ] && [ "$2" -eq 25 ] || fail "expected 25 accepted and replied, run_end says $*"
expect_no_leftovers
exit 0
