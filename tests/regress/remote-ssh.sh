#!/bin/sh
# Agents on three machines through ssh: each machine a network namespace
# with its own address and its own sshd, corral in a fourth.
#
#   root     on alpha: a request to it spawns two leaf sub-agents, which
#            are placed on beta and gamma (round robin), and gathers them
#   crasher  on gamma: writes a line on stderr and exits 3; the error of
#            the request it had names the exit and the host, and quotes
#            the line; restarted, it stays on gamma
#   deaf     on beta: ignores EOF and SIGTERM; corral stop ends it there
# Every agent's process runs in its host's namespace (ip netns pids says
# so), corral ps and corral tree say where each runs, and the audit log
# records it.  At the end nothing of the test runs on any machine.
. "$(dirname "$0")/remote-lib.sh"

net_up alpha beta gamma
SOCK="$T/ctl.sock"
cat >"$T/root.json" <<JSON
{"steps": [
  {"spawn": {"agent": "leaf", "count": 2, "plan": {"steps": [
    {"wait_file": "$T/go"}]}}},
  {"await": true}]}
JSON
cat >"$T/wf.yaml" <<EOF
defaults:
  launch:
    argv: [ssh, -F, "$T/ssh_config", -T, "{{host}}", "{{cmd | shell}}"]
    hosts: [alpha, beta, gamma]
    corral: "$CORRAL"
    alive: $(awk -v s="$SLOW" 'BEGIN { print s / 2 }')s
    lost: $((3 * SLOW))s
  stop: {grace: 1s, timeout: 1s}
  timeout: $((30 * SLOW))s
agents:
  root:
    cmd: [$TR, --record, $REC, --plan, $T/root.json]
    launch: {hosts: [alpha]}
    children: {max: 4}
  leaf:
    cmd: [$TR, --record, $REC]
    autostart: false
    launch: {hosts: [beta, gamma]}
  crasher:
    cmd: [sh, -c, 'read line; echo "disk full on \$CORRAL_HOST" >&2; exit 3', $T]
    launch: {hosts: [gamma]}
  deaf:
    cmd: [$TR, --record, $REC, --boot, $T/deaf.json]
    launch: {hosts: [beta]}
routes:
  plan: root
  analyze: crasher
EOF
echo '{"steps": [{"deaf": true}]}' >"$T/deaf.json"
"$CORRAL" check "$T/wf.yaml" >"$T/check.out" 2>&1 ||
    fail "corral check: $(cat "$T/check.out")"

remote_serve "$T/wf.yaml" --log "$LOG" --control "$SOCK"
wait_agents alpha 1
wait_agents beta 1
wait_for 'log_has "agent crasher: running on gamma"' 20 ||
    fail "crasher did not start on gamma"

# Sub-agents across hosts: root's two leaves go to beta and gamma.
envelope r1 plan >&8
wait_agents beta 2
wait_agents gamma 1
"$CORRAL" ps -S "$SOCK" >"$T/ps.out" 2>&1 || fail "corral ps: $(cat "$T/ps.out")"
grep -q "^  root  .* alpha  *$" "$T/ps.out" ||
    fail "corral ps should show root on alpha: $(cat "$T/ps.out")"
for h in beta gamma; do
	grep -q "^    leaf-[0-9]  .* $h  *$" "$T/ps.out" ||
	    fail "corral ps should show a leaf on $h: $(cat "$T/ps.out")"
done
"$CORRAL" ps -S "$SOCK" --json >"$T/ps.json"
jq -e '[.agents[] | select(.id == "root") | .metadata.host |
    (.name == "alpha") and (.link == "up") and (.launcher == "ssh") and
    (.pidns == true) and (.pid > 0)] == [true]' "$T/ps.json" >/dev/null ||
    fail "root's metadata.host: $(jq -c '.agents[] | select(.id == "root") | .metadata.host' "$T/ps.json")"
"$CORRAL" top -S "$SOCK" -n 1 >"$T/top.out" 2>&1 || fail "corral top: $(cat "$T/top.out")"
grep -q "^AGENT .* HOST  *LAST ERROR" "$T/top.out" &&
    grep -q "^root  .* alpha  *$" "$T/top.out" ||
    fail "corral top should show root on alpha: $(cat "$T/top.out")"
"$CORRAL" tree -S "$SOCK" >"$T/tree.out" 2>&1
grep -q "root \[READY, on alpha, depth 0\|root \[BUSY, on alpha, depth 0" "$T/tree.out" ||
    fail "corral tree should say root runs on alpha: $(cat "$T/tree.out")"
: >"$T/go"
wait_lines 1 20
grep -q '"text":"root(leaf-[0-9],leaf-[0-9])"' "$OUT" ||
    fail "root should gather both leaves: $(cat "$OUT")"
for h in beta gamma; do
	jq -s -e --arg h "$h" 'any(.[]; .ev == "host" and
	    ((.agent // "") | startswith("leaf-")) and .name == $h)' "$LOG" \
	    >/dev/null ||
	    fail "the audit log should say a leaf ran on $h: $(grep '"ev":"host"' "$LOG")"
done
wait_agents beta 1
wait_agents gamma 0

# stderr and the exit cause come back, with the host; a crash restarts
# where the agent ran.
envelope r2 analyze >&8
wait_lines 2 20
grep '"r2"' "$OUT" | grep -q 'exit status 3 on gamma.*disk full on gamma' ||
    fail "r2's error should name the exit, the host and the stderr: $(grep r2 "$OUT")"
log_has "crasher: disk full on gamma" ||
    fail "the crasher's stderr line should be in corral's log"
wait_for '[ "$(grep -c "\"ev\":\"launch\",\"agent\":\"crasher\".*\"host\":\"gamma\"" "$LOG")" -ge 2 ]' 20 ||
    fail "crasher should restart on gamma: $(grep '"ev":"launch"' "$LOG")"

# corral stop reaches an agent on another machine, one that ignores EOF
# and SIGTERM.
"$CORRAL" stop -S "$SOCK" --wait deaf >"$T/stop.out" 2>&1 ||
    fail "corral stop deaf: $(cat "$T/stop.out")"
wait_agents beta 0 10

serve_eof
corral_wait 30
expect_rc 0
for h in alpha beta gamma; do
	wait_for '[ -z "$(host_procs '$h')" ]' 10 ||
	    fail "left running on $h: $(host_procs $h)"
done
