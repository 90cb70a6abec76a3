#!/bin/bash
# selftest.sh: the MAP harness against its own fake server, before corral
# has a control socket.  Installs the pinned SDK (install.sh), then:
#   - sdk-facts.mjs: the facts SPEC.md states about the SDK still hold;
#   - client.mjs --scenario full against fake-server.mjs: every step ok,
#     every frame valid;
#   - the agent.mjs processes the fake server started for that scenario:
#     they connected and registered through the SDK, spawned a child through
#     the SDK, answered ping, request envelopes and map/message requests,
#     and exited cleanly when stopped;
#   - each --fault of the fake server: client.mjs must fail, naming the
#     broken rule (a harness that cannot fail proves nothing);
#   - usage errors and an absent socket.
# Prints one line per check and "N passed, N failed".  Exit 0 when nothing
# failed, 1 otherwise, 77 (SKIPPED) when node or the SDK is not there and
# cannot be installed.
#   bash tests/map/selftest.sh
# MAP_INSTALL=0 skips install.sh (the SDK must then be installed already).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"

command -v node >/dev/null 2>&1 || { echo "SKIPPED: node not installed"; exit 77; }
if [ "${MAP_INSTALL:-1}" != 0 ]; then
	out=$(sh "$here/install.sh" 2>&1)
	rc=$?
	echo "$out" | tail -3
	[ $rc = 77 ] && exit 77
	[ $rc = 0 ] || { echo "FAIL install.sh (exit $rc)"; echo "0 passed, 1 failed"; exit 1; }
fi
[ -f "$MAP_SDK_DIR/package.json" ] || { echo "SKIPPED: $MAP_SDK_PKG not installed in $MAP_SDK_PREFIX"; exit 77; }

pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/map-selftest.XXXXXX")
sock=$tmp/map.sock
spid=
stop_server() {
	if [ -n "$spid" ]; then
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		spid=
	fi
}
trap 'stop_server; rm -rf "$tmp"' EXIT

# start_server LOG [--fault NAME]...: fake-server.mjs on $sock.
start_server() {
	local logf=$1 i
	shift
	rm -f "$sock"
	node "$here/fake-server.mjs" --socket "$sock" --agent-report "$tmp/agents.txt" "$@" 2>"$logf" &
	spid=$!
	for i in $(seq 100); do
		[ -S "$sock" ] && return 0
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.05
	done
	bad "fake-server did not start: $(head -c 300 "$logf")"
	return 1
}

# has NAME FILE PATTERN: FILE has a line matching the extended regex.
has() {
	if grep -Eq -- "$3" "$2"; then ok "$1"; else bad "$1: no line matching /$3/ in $(basename "$2")"; fi
}
hasnt() {
	if grep -Eq -- "$3" "$2"; then bad "$1: $(grep -E -m1 -- "$3" "$2")"; else ok "$1"; fi
}

# --- what SPEC.md says about the SDK still holds for the pinned version
node "$here/sdk-facts.mjs" >"$tmp/facts.out" 2>&1
rc=$?
if [ $rc = 0 ]; then
	ok "sdk-facts.mjs: $(grep -c '^ok F' "$tmp/facts.out") facts of SPEC.md hold for $MAP_SDK_PKG@$MAP_SDK_VERSION"
else
	bad "sdk-facts.mjs: exit $rc: $(grep -E '^FAIL' "$tmp/facts.out" | cut -c1-200 | tr '\n' ' ')"
fi

# --- the full scenario, agents included
: >"$tmp/agents.txt"
if start_server "$tmp/server.log"; then
	node "$here/client.mjs" --socket "$sock" --timeout 5000 --wait 8000 --scenario full >"$tmp/full.out" 2>"$tmp/full.err"
	rc=$?
	sed 's/^/    /' "$tmp/full.out"
	[ $rc = 0 ] && ok "client.mjs --scenario full: exit 0" || bad "client.mjs --scenario full: exit $rc ($(grep -m1 '^FAIL' "$tmp/full.out"))"
	has "full: every step and frame passed" "$tmp/full.out" '^[0-9]+ passed, 0 failed$'
	has "full: frames checked" "$tmp/full.out" '^ok frames [0-9]+ checked'
	# The SDK's own warnings (console.warn/error, "MAP: ...") but one that
	# client.request() causes by design: it closes its temporary
	# subscription before the server has answered map/unsubscribe.
	hasnt "full: the SDK printed no warning" "$tmp/full.err" '^MAP: (([^E]|E[^v]).*)?$'
	# Let the stopped agents finish their reports.
	for i in $(seq 50); do
		[ "$(grep -c ': ok exit' "$tmp/agents.txt")" -ge 4 ] && break
		sleep 0.1
	done
	stop_server
	A=$tmp/agents.txt L=$tmp/server.log
	has "agent.mjs: connect (map/connect + map/agents/register) through AgentConnection" "$A" '^agent\.mjs\[sdk-agent-[0-9]+\]: ok connect id=sdk-agent-[0-9]+ '
	has "agent.mjs: spawned its child through AgentConnection.spawn" "$A" '^agent\.mjs\[sdk-agent-[0-9]+\]: ok spawn child=sdk-leaf-[0-9]+'
	has "agent.mjs: answered ping itself" "$A" '^agent\.mjs\[sdk-leaf-[0-9]+\]: ok ping'
	has "agent.mjs: answered a request envelope on the SDK's pipes" "$A" '^agent\.mjs\[sdk-leaf-[0-9]+\]: ok envelope-request'
	has "agent.mjs: got map/message" "$A" '^agent\.mjs\[sdk-leaf-[0-9]+\]: ok message .* from sdk-agent-'
	has "agent.mjs: replied with AgentConnection.reply" "$A" '^agent\.mjs\[sdk-leaf-[0-9]+\]: ok reply to client:'
	has "agent.mjs: exited cleanly when stopped" "$A" '^agent\.mjs\[sdk-leaf-[0-9]+\]: ok exit stdin closed, 0 failed'
	hasnt "agent.mjs: no failure" "$A" ': FAIL '
	has "fake-server: agents answered ping" "$L" '^fake-server: ok ping sdk-leaf-'
	has "fake-server: agents replied to envelopes" "$L" '^fake-server: ok envelope-reply sdk-agent-[0-9]+ intent=finalize'
	has "fake-server: a child's result reached its parent" "$L" '^fake-server: ok result sdk-leaf-[0-9]+ -> sdk-agent-'
	hasnt "fake-server: no failure" "$L" '^fake-server: FAIL'
fi

# --- each fault must make client.mjs fail, naming the rule
# fault FAULT PATTERN STEP...
fault() {
	local f=$1 pat=$2 rc
	shift 2
	start_server "$tmp/server-$f.log" --fault "$f" || return
	node "$here/client.mjs" --socket "$sock" --timeout 1500 --wait 1500 "$@" >"$tmp/fault-$f.out" 2>&1
	rc=$?
	stop_server
	if [ $rc = 1 ] && grep -Eq -- "^FAIL .*$pat" "$tmp/fault-$f.out"; then
		ok "fault $f caught: $(grep -E -m1 '^FAIL' "$tmp/fault-$f.out" | cut -c1-150)"
	else
		bad "fault $f not caught (exit $rc, want 1 and a FAIL line matching /$pat/): $(tr '\n' ' ' <"$tmp/fault-$f.out" | cut -c1-300)"
	fi
}
fault event-before-response 'before its map/subscribe response' connect subscribe
fault string-id 'ids must keep their JSON type' connect list
fault delivered-count 'map/send result: delivered' connect spawn:echo send:@spawned
fault agent-extra-field 'unknown member\(s\) depth' connect list
fault uppercase-category 'data.category' connect get-missing
fault null-id-notification '"id":null' connect subscribe spawn:echo sleep:200
fault seq-gap 'sequenceNumber 3 after 1' connect subscribe spawn:echo sleep:200
fault unfiltered 'filtered on agent_state_changed got a' connect subscribe:agent_state_changed spawn:echo sleep:200
fault flat-capabilities 'capabilities: unknown member' connect
fault no-stop-agent 'no agent in the result' connect spawn:echo stop:@spawned

# --- usage and connection errors
node "$here/client.mjs" connect >/dev/null 2>&1
rc=$?
[ $rc = 2 ] && ok "client.mjs without --socket: exit 2" || bad "client.mjs without --socket: exit $rc"
node "$here/client.mjs" --socket "$tmp/none.sock" connect >"$tmp/nosock.out" 2>&1
rc=$?
if [ $rc = 1 ] && grep -q '^FAIL socket' "$tmp/nosock.out"; then ok "client.mjs, no server: FAIL socket, exit 1"; else bad "client.mjs, no server: exit $rc: $(cat "$tmp/nosock.out")"; fi
out=$(sh "$here/install.sh" 2>&1)
case $out in *"already in"*) ok "install.sh again: nothing to do" ;; *) bad "install.sh again: $out" ;; esac

echo "$pass passed, $fail failed"
[ $fail = 0 ]
