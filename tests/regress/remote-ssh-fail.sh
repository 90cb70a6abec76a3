#!/bin/sh
# Machines that fail under agents launched through ssh (three network
# namespaces with their own sshd, corral in a fourth):
#
#   a host killed   every process of beta's namespace is SIGKILLed, its
#                   sshd too: b's request fails with agent_lost naming
#                   beta, and b starts again on gamma, the other host it
#                   may use (the one that failed is avoided)
#   a link cut      the link to gamma goes down, nothing closes: corral
#                   hears no tick for launch.lost and calls gamma lost; g
#                   starts again on alpha; and on gamma corral host, that
#                   hears no keepalive, ends the agents it ran there
#   corral killed   kill -9 of corral: nothing of the test is left on any
#                   machine
. "$(dirname "$0")/remote-lib.sh"

net_up alpha beta gamma
SOCK="$T/ctl.sock"
LOST=$((3 * SLOW))
ALIVE=$(awk -v s="$SLOW" 'BEGIN { print s / 2 }')
cat >"$T/wf.yaml" <<EOF
defaults:
  launch:
    argv: [ssh, -F, "$T/ssh_config", -T, "{{host}}", "{{cmd | shell}}"]
    corral: "$CORRAL"
    alive: ${ALIVE}s
    lost: ${LOST}s
  restart: {policy: permanent, backoff: 100ms}
  stop: {grace: 1s, timeout: 1s}
  timeout: $((60 * SLOW))s
agents:
  b:
    cmd: [$TR, --record, $REC]
    launch: {hosts: [beta, gamma]}
  g:
    cmd: [$TR, --record, $REC]
    launch: {hosts: [gamma, alpha]}
  a:
    cmd: [$TR, --record, $REC]
    launch: {hosts: [alpha]}
routes:
  execute: b
EOF
remote_serve "$T/wf.yaml" --log "$LOG" --control "$SOCK"
wait_agents beta 1
wait_agents gamma 1
wait_agents alpha 1

# A host killed, with a request in flight there.
echo '{"protocol":"multiagent-1.0","role":"user","intent":"execute","task":"t","content":{"type":"text","text":"x"},"inputs":{"parameters":{"plan":{"steps":[{"hang":true}]}}},"trace":{"id":"r1"}}' >&8
wait_for '"$CORRAL" ps -S "$SOCK" --json 2>/dev/null |
    jq -e ".requests[] | select(.requestId == \"r1\" and .state == \"inflight\")" >/dev/null' 20 ||
    fail "r1 never reached b: $("$CORRAL" ps -S "$SOCK" --json)"
host_kill beta
wait_lines 1 30
grep '"r1"' "$OUT" | grep -q '"code":"agent_lost".*host beta lost' ||
    fail "r1 should fail with agent_lost naming beta: $(cat "$OUT")"
wait_agents gamma 2 30
jq -s -e 'any(.[]; .ev == "launch" and .agent == "b" and .host == "gamma")' \
    "$LOG" >/dev/null || fail "b should start again on gamma"
host_restart beta

# A link cut: nothing closes, only silence tells.
link_down gamma
wait_for 'log_has "agent g: host gamma lost: no word on the link"' $((2 * LOST)) ||
    fail "corral should call gamma lost after ${LOST}s of silence"
wait_for 'log_has "agent b: host gamma lost: no word on the link"' $((2 * LOST)) ||
    fail "b on gamma should be lost too"
# On gamma, corral host heard no keepalive either: its agents end there.
wait_agents gamma 0 $((2 * LOST))
wait_agents alpha 2 30
wait_agents beta 1 30
"$CORRAL" ps -S "$SOCK" >"$T/ps.out" 2>&1
grep -q "^  g  .* alpha  *$" "$T/ps.out" ||
    fail "corral ps should show g on alpha now: $(cat "$T/ps.out")"
link_up gamma

# corral killed: nothing is left on any machine.
kill -9 "$CORRAL_PID"
wait "$CORRAL_PID" 2>/dev/null
CORRAL_PID=
for h in alpha beta gamma; do
	wait_for '[ -z "$(host_procs '$h')" ]' $((2 * LOST)) ||
	    fail "left running on $h after kill -9 of corral: $(host_procs $h)"
done
