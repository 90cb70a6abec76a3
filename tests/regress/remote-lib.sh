# Shared helpers for the launched agents' regress scripts (remote-*.sh):
# real machines made of network namespaces, each with its own sshd.
#
# Source it first thing:  . "$(dirname "$0")/remote-lib.sh"
#
# It sources tree-lib.sh (lib.sh's $T, cleanup, wait_for, fail ...; the
# tree agent $TR, its record $REC, the audit log $LOG) and adds:
#   NS          the prefix of this test's network namespaces: the name of
#               its directory, so that no two runs share one
#   net_up NAME...
#               a client namespace ${NS}c where corral runs, and one host
#               namespace ${NS}-NAME per NAME, each joined to the client
#               by a veth pair of its own (10.77.N.1 here, 10.77.N.2
#               there), each with an sshd of its own on its address, keys
#               made for this test; $T/ssh_config names them NAME
#   in_client CMD...
#               run CMD in the client namespace
#   host_procs NAME
#               this test's live processes (their argv names $T) in host
#               NAME's namespace, one "pid args" line each
#   host_kill NAME
#               SIGKILL every process of host NAME's namespace, its sshd
#               too: the machine is gone
#   link_down NAME, link_up NAME
#               cut the client's link to NAME (packets vanish) and mend it
# The trap removes every namespace this test made, with its processes,
# whatever way the test ends.  Only root can do this: the tests that
# source this file are SKIPPED with the reason otherwise.

. "$(dirname "$0")/tree-lib.sh"

[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces and sshd)"
command -v ip >/dev/null 2>&1 || skip "ip (iproute2) is missing"
SSHD=$(command -v sshd 2>/dev/null || echo /usr/sbin/sshd)
[ -x "$SSHD" ] || skip "sshd (openssh-server) is missing"
command -v ssh >/dev/null 2>&1 || skip "ssh (openssh-client) is missing"
command -v ssh-keygen >/dev/null 2>&1 || skip "ssh-keygen is missing"

NS=$(basename "$T")
REMOTE_HOSTS=

# Remove this test's namespaces and whatever runs in them.
net_cleanup() {
	for _h in $REMOTE_HOSTS c; do
		_n="${NS}-$_h"
		[ "$_h" = c ] && _n="${NS}c"
		ip netns list 2>/dev/null | grep -q "^$_n\b" || continue
		for _p in $(ip netns pids "$_n" 2>/dev/null); do
			kill -9 "$_p" 2>/dev/null
		done
		ip netns del "$_n" 2>/dev/null
	done
}
trap 'net_cleanup; cleanup' EXIT

# net_alone NAME: a namespace ${NS}-NAME with only its loopback, where a
# test runs daemons whose ports no other run may take (Slurm's).
net_alone() {
	ip netns add "${NS}-$1" || fail "ip netns add ${NS}-$1"
	REMOTE_HOSTS="$REMOTE_HOSTS $1"
	ip -n "${NS}-$1" link set lo up
}

# in_host NAME CMD...: run CMD (exec'd, so $! is its pid) in host NAME's
# network, with the machine's own /sys (cgroups, which ip netns exec
# would hide from a container engine there).
in_host() {
	if command -v nsenter >/dev/null 2>&1; then
		exec_in="nsenter --net=/run/netns/${NS}-$1"
	else
		exec_in="ip netns exec ${NS}-$1"
	fi
	shift
	$exec_in "$@"
}

# Run a command in the client namespace.
in_client() {
	ip netns exec "${NS}c" "$@"
}

# The ssh configuration corral's launcher uses: every host by name, this
# test's key, no known-hosts file, no prompts.
net_ssh_config() {
	{
		_i=1
		for _h in "$@"; do
			printf 'Host %s\n  HostName 10.77.%d.2\n' "$_h" "$_i"
			_i=$((_i + 1))
		done
		printf 'Host *\n  User root\n  IdentityFile %s/id\n' "$T"
		printf '  IdentitiesOnly yes\n  UserKnownHostsFile /dev/null\n'
		printf '  StrictHostKeyChecking no\n  BatchMode yes\n'
		printf '  LogLevel ERROR\n  ConnectTimeout 10\n'
	} >"$T/ssh_config"
}

# One host: its namespace, its end of a veth pair, its sshd.
net_host() {
	_h=$1 _i=$2 _n="${NS}-$1"
	ip netns add "$_n" || fail "ip netns add $_n"
	REMOTE_HOSTS="$REMOTE_HOSTS $_h"
	ip -n "${NS}c" link add "v$_h" type veth peer name eth0 netns "$_n" ||
	    fail "veth for $_h"
	ip -n "${NS}c" addr add "10.77.$_i.1/24" dev "v$_h"
	ip -n "${NS}c" link set "v$_h" up
	ip -n "$_n" link set lo up
	ip -n "$_n" addr add "10.77.$_i.2/24" dev eth0
	ip -n "$_n" link set eth0 up
	cat >"$T/sshd_$_h.conf" <<EOF
ListenAddress 10.77.$_i.2
Port 22
HostKey $T/host_key
PidFile none
AuthorizedKeysFile $T/id.pub
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UseDNS no
PrintMotd no
MaxStartups 100
MaxSessions 100
LogLevel ERROR
EOF
	in_host "$_h" "$SSHD" -D -e -f "$T/sshd_$_h.conf" 2>"$T/sshd_$_h.log" &
}

# net_up NAME...: the client namespace and one host per name, each
# answering ssh.
net_up() {
	mkdir -p /run/sshd
	ssh-keygen -q -t ed25519 -N "" -f "$T/id" || fail "ssh-keygen"
	ssh-keygen -q -t ed25519 -N "" -f "$T/host_key" || fail "ssh-keygen"
	ip netns add "${NS}c" || fail "ip netns add ${NS}c"
	ip -n "${NS}c" link set lo up
	_i=1
	for _h in "$@"; do
		net_host "$_h" "$_i"
		_i=$((_i + 1))
	done
	net_ssh_config "$@"
	for _h in "$@"; do
		_wh=$_h
		wait_for 'in_client ssh -F "$T/ssh_config" -T "$_wh" true \
		    </dev/null 2>/dev/null' 10 ||
		    fail "sshd on $_h does not answer: $(cat "$T/sshd_$_h.log")"
	done
}

# This test's live processes in host NAME's namespace, but its sshd
# listener: "pid argv" each.  One ps reads them all: the waits call this
# 20 times a second, and two processes a pid (tr and sed) were most of
# what the remote tests started.
host_procs() {
	_hl=
	for _p in $(ip netns pids "${NS}-$1" 2>/dev/null); do
		_hl="$_hl,$_p"
	done
	[ -n "$_hl" ] || return 0
	ps -ww -o pid=,stat=,args= -p "${_hl#,}" 2>/dev/null |
	while read -r _p _s _a; do
		case $_s in
		Z*) continue ;;
		esac
		case $_a in
		sshd:*) ;;
		*"$T"*) echo "$_p $_a" ;;
		esac
	done
}

# How many tree agents (argv[0] $TR) run in host NAME's namespace.
host_agents() {
	host_procs "$1" | awk -v tr="$TR" '$2 == tr { n++ } END { print n + 0 }'
}

# wait_agents NAME N [TIMEOUT]: wait until N tree agents run on NAME.
wait_agents() {
	_wa=$1 _wn=$2
	wait_for '[ "$(host_agents "$_wa")" -eq "$_wn" ]' "${3:-20}" ||
	    fail "expected $2 agents on $1, found $(host_agents "$1"):
$(host_procs "$1")"
}

# Start sshd again on host NAME, after host_kill: the machine is back.
host_restart() {
	in_host "$1" "$SSHD" -D -e -f "$T/sshd_$1.conf" 2>>"$T/sshd_$1.log" &
	_wh=$1
	wait_for 'in_client ssh -F "$T/ssh_config" -T "$_wh" true \
	    </dev/null 2>/dev/null' 10 || fail "sshd on $1 did not come back"
}

# remote_serve WF [ARGS...]: corral serve in the client namespace, as
# serve_start runs it (stdin a fifo on fd 8, $OUT, $ERR, CORRAL_PID).
remote_serve() {
	: >"$OUT"
	: >"$ERR"
	rm -f "$T/stdin"
	mkfifo "$T/stdin" || fail "mkfifo $T/stdin"
	exec 8<>"$T/stdin"
	ip netns exec "${NS}c" "$CORRAL" -v serve "$@" <"$T/stdin" >"$OUT" \
	    2>"$ERR" 8>&- &
	CORRAL_PID=$!
}

# SIGKILL everything in host NAME's namespace: the machine is gone.
host_kill() {
	for _p in $(ip netns pids "${NS}-$1" 2>/dev/null); do
		kill -9 "$_p" 2>/dev/null
	done
}

# Cut the client's link to host NAME: its packets vanish, nothing closes.
link_down() {
	ip -n "${NS}c" link set "v$1" down
}

# Mend it.
link_up() {
	ip -n "${NS}c" link set "v$1" up
}
