#!/bin/sh
# An agent that closes its stdout but keeps running (and reading): its
# request fails (agent_lost, at most once for NORMAL), it is terminated
# (SIGTERM to its group; the audit log has an error event pipe_closed),
# restarted by its policy, and work goes on: another agent answers
# meanwhile, and the restarted agent answers the next request.
. "$(dirname "$0")/rel-lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  mute:
    cmd: [$RA, --record, $T/mute.rec]
  echo:
    cmd: [$RA, --record, $T/echo.rec]
routes:
  plan: mute
  analyze: echo
YAML

serve_start "$T/wf.yaml" --log "$AUD" -v
wait_log 'corral: agent mute: INITIALIZING -> READY'
pid=$(log_pid mute)
s=$(now)
"$RG" env 1 --id c- --task closeout >&8
"$RG" env 1 --id a- --intent analyze >&8
wait_for '[ -n "$(result_of c-1)" ]' 10 ||
    fail "no result for the request of the agent that closed its stdout"
t=$(elapsed "$s")
[ "$(code_of c-1)" = agent_lost ] ||
    fail "expected agent_lost for c-1, got: $(result_of c-1 | cut -c1-300)"
note "agent_lost ${t}s after the agent closed its stdout"
log_has 'corral: agent mute: closed its stdout but is still running; terminating it' ||
    fail "no log line saying that mute closed its stdout and is terminated"
wait_gone "$pid" 10 || fail "mute ($pid) still runs after closing its stdout"
wait_for '[ -n "$(result_of a-1)" ]' 10 || fail "echo did not answer meanwhile"
result_of a-1 | grep -q '"text":"ok echo"' || fail "expected echo's reply for a-1"
[ "$(grep -c '^req mute c-1 ' "$T/mute.rec")" -eq 1 ] ||
    fail "c-1 (NORMAL) was delivered more than once: $(grep '^req ' "$T/mute.rec")"

wait_for '[ "$(log_count "corral: agent mute: spawned")" -ge 2 ]' 10 ||
    fail "mute was not restarted"
"$RG" env 1 --id c- --start 2 >&8
wait_for '[ -n "$(result_of c-2)" ]' 10 || fail "no result for c-2"
result_of c-2 | grep -q '"text":"ok mute"' ||
    fail "expected the restarted mute to answer c-2, got: $(result_of c-2 | cut -c1-300)"
[ "$(log_pid mute)" != "$pid" ] || fail "mute has the same pid after its restart"
serve_eof
corral_wait 20
expect_rc 0
[ "$(aud_count error agent mute code pipe_closed)" -ge 1 ] ||
    fail "no audit error event with code pipe_closed for mute"
set -- $(run_end_check)
[ "$1" -eq 3 ] && [ "$2" -eq 2 ] && [ "$3" -eq 1 ] ||
    fail "expected 3 accepted, 2 replied, 1 errored; run_end says $*"
expect_no_leftovers
exit 0
