# Shared helpers for the control socket's regress scripts (ctl-*.sh).
#
# Source it first thing:  . "$(dirname "$0")/ctl-lib.sh"
#
# It sources lib.sh and adds:
#   CP      the raw socket client (tests/tools/ctlpeer.c)
#   SOCK    $T/ctl.sock: pass --control "$SOCK" to corral
# and points XDG_RUNTIME_DIR at $T/xdg, so that corral's default socket
# directory, and what `corral ps` lists, belong to this test alone.

. "$(dirname "$0")/lib.sh"

CP="$TOOLS/ctlpeer"
[ -x "$CP" ] || skip "no ctlpeer at $CP"
SOCK="$T/ctl.sock"
XDG_RUNTIME_DIR="$T/xdg"
export XDG_RUNTIME_DIR
mkdir -m 700 "$XDG_RUNTIME_DIR" || fail "mkdir $XDG_RUNTIME_DIR"
unset CORRAL_CONTROL

# A map/connect request line with id ID (default 1).
CONNECT() {
	printf '{"jsonrpc":"2.0","id":%s,"method":"map/connect","params":{"protocolVersion":1,"participantType":"client","name":"ctl-test"}}' "${1:-1}"
}

# wait_sock [PATH] [TIMEOUT]: wait until a corral listens on PATH.
wait_sock() {
	_ws=${1:-$SOCK}
	wait_for '[ -S "$_ws" ] && "$CP" -s "$_ws" -l "$(CONNECT)" -e 1 -w 2 >/dev/null 2>&1' "${2:-10}" ||
	    fail "no corral listening on $_ws within ${2:-10}s (x$SLOW)"
}

# ctl ARGS...: run a corral client command against $SOCK, output in
# $T/ctl.out (and $T/ctl.err); its status in CRC.
ctl() {
	CTL_WHAT=$*
	_c=$1
	shift
	"$CORRAL" "$_c" -S "$SOCK" "$@" >"$T/ctl.out" 2>"$T/ctl.err" </dev/null
	CRC=$?
}

# Fail unless $T/ctl.out holds this fixed string.
ctl_has() {
	grep -qF -- "$1" "$T/ctl.out" ||
	    fail "expected '$1' in the output of corral $CTL_WHAT:
$(head -c 3000 "$T/ctl.out")
$(cat "$T/ctl.err")"
}

# map_state ID: agent ID's MAP state, as corral ps --json reports it.
map_state() {
	"$CORRAL" ps -S "$SOCK" --json 2>/dev/null |
	    jq -r --arg id "$1" '.agents[] | select(.id == $id) | .state'
}

# The supervisor's resident size in kB.
sup_rss() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$(supervisor_pid)/status" 2>/dev/null || echo 0
}

command -v jq >/dev/null 2>&1 || skip "jq is missing"

# metric NAME: a metric's value (the first sample without labels).
metric() {
	"$CORRAL" metrics -S "$SOCK" 2>/dev/null | awk -v n="$1" '$1 == n { print $2; exit }'
}
