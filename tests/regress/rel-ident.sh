#!/bin/sh
# An agent acts only as itself on the control socket, with and without
# corral's pid namespace.  A confined agent ("thief", confine: on, its
# cwd a box) runs ctlpeer against $CORRAL_CONTROL:
#
# 1. Plain map/connect, no credential, then spawn of an unconfined entry
#    that writes outside the box, list, subscribe, a forced stop of
#    another agent and _corral/shutdown: one answer, 1000 (authentication
#    required), then the connection closes; nothing of it is done.
# 2. The token of its sibling "victim", read from /proc/PID/environ, in
#    map/connect, then a spawn: 1006, closed; nothing spawned as victim.
# 3. Its own token, from its own process: it acts as itself (principal
#    thief) and may list.  So may a grandchild whose parent is gone (it was
#    reparented to corral; its session says whose it is); one that also
#    left the agent's session (setsid) is nobody's: 1006, closed.
# 4. From outside corral (this shell, a client): victim's real token is
#    refused (1006) and the connection closed; a made-up token likewise,
#    and the spawn sent after it is not done (it was, as client:N).
# The credential never reaches the log; corral still runs and exits 0.
. "$(dirname "$0")/ctl-lib.sh"

cat >"$T/thief.sh" <<'SH'
# thief.sh [orphan|detached PARENT]: what a confined agent tries.
# run NAME ARGS...: ctlpeer on the control socket; NAME.out, NAME.err.
run() {
	_n=$1
	shift
	"$CP" -s "$CORRAL_CONTROL" "$@" >"$_n.out" 2>"$_n.err"
	: >"$_n.done"
}
auth() {
	printf '{"jsonrpc":"2.0","id":1,"method":"map/connect","params":{"protocolVersion":1,"auth":{"method":"x-corral-agent","credential":"%s"}}}' "$1"
}
C='{"jsonrpc":"2.0","id":1,"method":"map/connect","params":{"protocolVersion":1,"participantType":"client"}}'
SPAWN='{"jsonrpc":"2.0","id":2,"method":"map/agents/spawn","params":{"agent":"writer","task":"t"}}'
LIST='{"jsonrpc":"2.0","id":3,"method":"map/agents/list"}'
SUB='{"jsonrpc":"2.0","id":4,"method":"map/subscribe"}'
STOP='{"jsonrpc":"2.0","id":5,"method":"map/agents/stop","params":{"agentId":"victim","force":true}}'
SHUT='{"jsonrpc":"2.0","id":6,"method":"_corral/shutdown"}'
case ${1:-} in
orphan|detached)
	# Wait until the process that started us is gone.
	while [ "$(cut -d' ' -f4 /proc/$$/stat)" = "$2" ]; do
		sleep 0.05
	done
	run "$1" -l "$(auth "$CORRAL_AGENT_TOKEN")" -l "$LIST" -e 2 -w 10
	exit 0
	;;
esac
tok=$(tr '\0' '\n' <"/proc/$(cat "$D/victim.pid")/environ" |
    sed -n 's/^CORRAL_AGENT_TOKEN=//p')
printf %s "$tok" >stolen.tok
run stolen -l "$(auth "$tok")" -l "$SPAWN" -e 2 -w 10
run own -l "$(auth "$CORRAL_AGENT_TOKEN")" -l "$LIST" -e 2 -w 10
# Each started by a shell that exits at once: reparented to corral.
sh -c 'sh "$0" orphan $$ &' "$0"
sh -c 'setsid sh "$0" detached $$ &' "$0"
n=0
while [ ! -e orphan.done ] || [ ! -e detached.done ]; do
	[ $n -lt 600 ] || break
	n=$((n + 1))
	sleep 0.05
done
# Last, as it asks to stop the run.
run plain -l "$C" -l "$SPAWN" -l "$LIST" -l "$SUB" -l "$STOP" -l "$SHUT" \
    -e 6 -w 10
: >done
exec cat
SH

# lines FILE: how many lines ctlpeer read (its summary line).
lines() {
	sed -n 's/^ctlpeer: [0-9]* connections, \([0-9]*\) lines.*/\1/p' "$1"
}
# refused NAME CODE: the thief's NAME got one answer, error CODE, and EOF.
refused() {
	grep -q "\"error\":{\"code\":$3," "$1/$2.out" ||
	    fail "$MODE: $2: expected error $3: $(cat "$1/$2.out" "$1/$2.err")"
	[ "$(lines "$1/$2.err")" = 1 ] ||
	    fail "$MODE: $2: expected one line, then the connection closed: $(cat "$1/$2.out" "$1/$2.err")"
}
# acts NAME: the thief's NAME acted as thief, and listed.
acts() {
	grep -q '"principal":{"id":"thief"}' "$1/$2.out" &&
	    grep -q '"id":3,"result":{"agents"' "$1/$2.out" ||
	    fail "$MODE: $2 should act as thief and list: $(cat "$1/$2.out" "$1/$2.err")"
}

for MODE in pidns nopidns; do
	pidns_mode $MODE
	D="$T/$MODE"
	B="$D/box"
	mkdir -p "$B" "$D/outside"
	cat >"$D/wf.yaml" <<YAML
agents:
  victim:
    cmd: [sh, -c, 'echo \$\$ >$D/victim.pid; exec cat']
  thief:
    cmd: [sh, $T/thief.sh]
    env: {CP: $CP, D: $D}
    cwd: $B
    confine: on
    tools: [list]
  writer:
    cmd: [sh, -c, 'touch $D/outside/written; exec cat']
    autostart: false
routes:
  "*": victim
YAML
	serve_start "$D/wf.yaml" -v --log "$D/audit" --control "$SOCK"
	wait_for '[ -e "$B/done" ]' 30 ||
	    fail "$MODE: the thief did not finish: $(ls "$B")"

	# 1. No client powers from inside.
	refused "$B" plain 1000
	grep -q 'authentication required' "$B/plain.out" ||
	    fail "$MODE: plain: the error should say why: $(cat "$B/plain.out")"
	# 2. A sibling's token is useless.
	[ -s "$B/stolen.tok" ] || fail "$MODE: the thief could not read victim's token"
	refused "$B" stolen 1006
	# 3. Its own works, from its processes.
	acts "$B" own
	acts "$B" orphan
	refused "$B" detached 1006
	# 4. From outside.
	tok=$(cat "$B/stolen.tok")
	"$CP" -s "$SOCK" -l "$(printf '{"jsonrpc":"2.0","id":1,"method":"map/connect","params":{"auth":{"method":"x-corral-agent","credential":"%s"}}}' "$tok")" \
	    -l '{"jsonrpc":"2.0","id":2,"method":"map/agents/spawn","params":{"agent":"writer","task":"t"}}' \
	    -e 2 -w 10 >"$D/outside.out" 2>"$D/outside.err"
	refused "$D" outside 1006
	"$CP" -s "$SOCK" -l '{"jsonrpc":"2.0","id":1,"method":"map/connect","params":{"auth":{"method":"x-corral-agent","credential":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}}' \
	    -l '{"jsonrpc":"2.0","id":2,"method":"map/agents/spawn","params":{"agent":"writer","task":"t"}}' \
	    -e 2 -w 10 >"$D/bogus.out" 2>"$D/bogus.err"
	refused "$D" bogus 1006

	# Nothing was done for them, and the run goes on.
	pid_alive "$CORRAL_PID" || fail "$MODE: corral is gone (the thief's shutdown?)"
	[ -e "$D/outside/written" ] && fail "$MODE: writer ran: spawned for the thief or a refused client"
	log_has "agent writer-" && fail "$MODE: an agent writer was spawned: $(grep writer- "$ERR")"
	grep -q '"ev":"spawn_child".*"parent":"victim"' "$D/audit" &&
	    fail "$MODE: something was spawned as victim"
	wait_log "refused an agent credential: agent victim's, shown from the processes of agent thief"
	log_has "refused an agent credential: agent victim's, shown from outside corral" ||
	    fail "$MODE: the refusal from outside is not logged"
	log_has "refused map/connect from the processes of agent thief" ||
	    fail "$MODE: the refused plain connection is not logged"
	grep -qF -- "$tok" "$ERR" "$D/audit" && fail "$MODE: a token reached the log"
	[ "$(map_state victim)" = active ] || [ "$(map_state victim)" = idle ] ||
	    fail "$MODE: victim is $(map_state victim), not running"
	serve_eof
	corral_wait 20
	expect_rc 0
	note "$MODE: plain 1000, stolen 1006, own and orphan act as thief, detached and outside 1006"
done
expect_no_leftovers
exit 0
