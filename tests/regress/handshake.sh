#!/bin/sh
# ready: handshake -- an agent gets no work before its map/connect.  The
# agent waits 500ms (x SLOW) before it connects, counting every envelope
# that arrives meanwhile; corral must hold the goal (queued) until the
# agent is READY, then deliver it.  An agent with ready: spawn gets the
# goal at once, which shows the agent would have seen an early envelope
# (it waits up to 10 s x SLOW for it, and connects as soon as it came).
# The MAP event of its INITIALIZING -> READY says previousState
# registered, though becoming ready made it BUSY at once.
. "$(dirname "$0")/lib.sh"

for ready in handshake spawn; do
	ms=$((500 * SLOW))
	[ $ready = spawn ] && ms=$((10000 * SLOW))
	cat >"$T/wf.yaml" <<YAML
agents:
  hs:
    cmd: [$TA, --record, $T/$ready.rec, --handshake, "$ms"]
    ready: $ready
routes:
  "*": hs
YAML
	corral_run 20 run "$T/wf.yaml" --goal go -v --log "$T/$ready.audit"
	expect_rc 0
	grep -q '"text":"ok hs"' "$OUT" || fail "ready: $ready: expected hs's reply on stdout"
	early=$(sed -n 's/^early //p' "$T/$ready.rec")
	note "ready: $ready: $early envelopes before map/connect"
	if [ $ready = handshake ]; then
		[ "$early" = 0 ] ||
		    fail "ready: handshake: expected no envelope before map/connect, the agent got $early: $(grep '^recv {"protocol"' "$T/$ready.rec" | head -n 1 | cut -c1-200)"
		log_has 'corral: agent hs: INITIALIZING -> READY (handshake)' ||
		    fail "expected 'agent hs: INITIALIZING -> READY (handshake)' in the log"
		# The map/connect response came back.
		grep -q '^recv {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1' "$T/$ready.rec" ||
		    fail "expected a map/connect result; the agent got: $(grep '^recv' "$T/$ready.rec" | cut -c1-200)"
		log_has 'READY (ready at spawn)' &&
		    fail "ready: handshake: the agent was READY at spawn"
		# Ready with the goal waiting: it went on to BUSY at once,
		# and the MAP event of the first step still says where it
		# came from (registered), not the state after it (busy).
		grep -q '"type":"agent_state_changed",.*"data":{"agentId":"hs","previousState":"registered","newState":"idle","reason":"handshake"' "$T/$ready.audit" ||
		    fail "the MAP event of INITIALIZING -> READY should come from registered: $(grep '"reason":"handshake"' "$T/$ready.audit" | cut -c1-400)"
	else
		[ "$early" = 1 ] ||
		    fail "ready: spawn: expected the goal before map/connect, the agent got $early envelopes"
	fi
done
expect_no_leftovers
exit 0
