#!/bin/sh
# confine: (Landlock) on plain agents, no CLI needed.
#
# 1. A confined shell agent writes beneath its cwd, a write: path and
#    /dev/null, and is refused beneath any other directory (EROFS in its
#    read-only mount namespace, else EACCES from Landlock);
#    reads stay allowed everywhere; TCP connect reaches a listed port
#    (nothing listens: "Connection refused") and is refused for another
#    ("Permission denied") where the kernel's Landlock has net rules
#    (ABI 4); it cannot signal corral or a sibling agent, nor connect to
#    an abstract unix socket outside (ABI 6).  Outside its write rules
#    it cannot chmod, chown, touch -d or setxattr a file either (its
#    mount namespace is read-only there: "Read-only file system"), while
#    chmod inside works.  The same program unconfined does all of it.
# 2. read: narrows reads to the base set, its cwd and the listed paths.
# 3. A sub-agent corral starts for a confined parent inherits the
#    parent's confinement, though its own entry has none.
# 4. No Landlock (CORRAL_LANDLOCK=0 plays that kernel): corral says once
#    what it cannot enforce and runs; with required: true it refuses to
#    start (exit 2).  An ABI without net rules (CORRAL_LANDLOCK=3) with
#    connect: the same.  ABI 5 has no scoping: required: true refuses,
#    naming signals and abstract-sockets; listing them in optional: runs
#    it, with the warning.  No mount namespace (CORRAL_NO_MOUNTNS=1):
#    required refuses naming metadata; optional: [metadata] runs.
. "$(dirname "$0")/lib.sh"
TR="$TOOLS/treeagent"
BP="$TOOLS/boxprobe"
command -v bash >/dev/null 2>&1 || skip "bash is not installed (its /dev/tcp makes the connects)"

mkdir -p "$T/box" "$T/free" "$T/listed" "$T/outside" "$T/readable" \
    "$T/reader" "$T/root"
echo secret >"$T/outside/secret"
echo open >"$T/readable/file"
for a in box free reader; do
	echo meta >"$T/outside/meta.$a"
	chmod 600 "$T/outside/meta.$a"
done
P1=47001 P2=47002
# An abstract unix socket outside every agent (its name holds $T, so
# that the cleanup finds the listener).
ABS="$T/abstract"
"$BP" listen "$ABS" &
LPID=$!

# probe NAME: try every access, one "what result" line each, into the
# agent's cwd (always writable), then idle until EOF like an agent.
cat >"$T/probe.sh" <<'SH'
out=$PWD/probe.$CORRAL_AGENT_ID
try() {
	_w=$1
	shift
	if _e=$("$@" 2>&1); then
		echo "$_w ok" >>"$out.tmp"
	else
		case $_e in
		*"ermission denied"*) echo "$_w EACCES" >>"$out.tmp" ;;
		*"ot permitted"*) echo "$_w EPERM" >>"$out.tmp" ;;
		*"onnection refused"*) echo "$_w refused" >>"$out.tmp" ;;
		*"ead-only file system"*) echo "$_w EROFS" >>"$out.tmp" ;;
		*) echo "$_w other: $_e" >>"$out.tmp" ;;
		esac
	fi
}
try cwd touch "$PWD/made"
try outside touch "$T/outside/$CORRAL_AGENT_ID"
try listed touch "$T/listed/$CORRAL_AGENT_ID"
try devnull sh -c 'echo x >/dev/null'
try read-outside cat "$T/outside/secret"
try read-listed cat "$T/readable/file"
try connect-listed bash -c "exec 3<>/dev/tcp/127.0.0.1/$P1"
try connect-other bash -c "exec 3<>/dev/tcp/127.0.0.1/$P2"
try signal kill -0 1
n=0
while [ ! -s "$T/sib.pid" ] && [ $n -lt 400 ]; do
	sleep 0.05
	n=$((n + 1))
done
try sibling kill -0 "$(cat "$T/sib.pid")"
try abstract "$BP" connect "$ABS"
m=$T/outside/meta.$CORRAL_AGENT_ID
try chmod-outside chmod 666 "$m"
try touch-outside touch -d 2001-01-01 "$m"
try chown-outside chown "$(id -u)" "$m"
try xattr-outside "$BP" setxattr "$m"
try chmod-inside chmod 644 "$PWD/made"
mv "$out.tmp" "$out"
exec cat >/dev/null
SH

cat >"$T/wf.yaml" <<YAML
agents:
  box:
    cmd: [sh, $T/probe.sh]
    env: {T: $T, P1: "$P1", P2: "$P2", BP: $BP, ABS: $ABS}
    cwd: $T/box
    confine: {write: [$T/listed], connect: [$P1]}
  free:
    cmd: [sh, $T/probe.sh]
    env: {T: $T, P1: "$P1", P2: "$P2", BP: $BP, ABS: $ABS}
    cwd: $T/free
  reader:
    cmd: [sh, $T/probe.sh]
    env: {T: $T, P1: "$P1", P2: "$P2", BP: $BP, ABS: $ABS}
    cwd: $T/reader
    confine: {read: [$T/readable, $T/probe.sh, $BP]}
  sib:
    cmd: [sh, -c, 'echo \$\$ >$T/sib.pid; exec cat']
  root:
    cmd: [$TR, --record, $T/root/rec, --boot, $T/root.json]
    cwd: $T/root
    confine: on
  kid:
    cmd: [sh, $T/probe.sh]
    env: {T: $T, P1: "$P1", P2: "$P2", BP: $BP, ABS: $ABS}
    cwd: $T/root
    autostart: false
routes:
  "*": free
YAML
echo '{"steps": [{"spawn": {"agent": "kid"}}, {"hang": true}]}' >"$T/root.json"

# has FILE LINE: the probe's result file holds that line.
has() {
	grep -qxF -- "$2" "$1" 2>/dev/null
}
# expect FILE LINE...: every line is there.
expect() {
	_f=$1
	shift
	for _l in "$@"; do
		has "$_f" "$_l" || fail "$(basename "$_f"): expected '$_l'; got: $(cat "$_f" 2>/dev/null | tr '\n' ';')"
	done
}

# 1-3, where the kernel has Landlock (corral -v names its ABI).
serve_start "$T/wf.yaml" -v
wait_log "confine: Landlock ABI" 10
# The next line, written once corral has probed for mount namespaces.
wait_log "mount namespace for" 10
ABI=$(sed -n 's/^corral: confine: Landlock ABI \([0-9]*\)$/\1/p' "$ERR")
# A write outside: refused by the read-only mount first, else by Landlock.
W=EACCES
log_has "confine: a mount namespace for each agent" && W=EROFS
note "Landlock ABI $ABI; writes outside: $W"
[ "$ABI" -ge 1 ] && wait_for '[ -s "$T/box/probe.box" ] && [ -s "$T/free/probe.free" ] &&
    [ -s "$T/reader/probe.reader" ] && ls "$T"/root/probe.kid* >/dev/null 2>&1' 20 ||
    fail "the probes did not all report: $(ls "$T"/*/probe.* "$T/root" 2>&1 | tr '\n' ' ')"
serve_eof
corral_wait 10
expect_rc 0
# Nothing is missing from ABI 6 on, with mount namespaces for agents
# (root, or corral's own user namespace); else the warning says what.
if [ "$ABI" -ge 6 ] && [ "$W" = EROFS ]; then
	! log_has "not enforced" ||
	    fail "corral warned on a kernel with Landlock ABI $ABI: $(grep "not enforced" "$ERR")"
else
	note "missing here: $(grep "not enforced" "$ERR")"
fi

[ "$ABI" -ge 1 ] && {
expect "$T/box/probe.box" "cwd ok" "outside $W" "listed ok" \
    "devnull ok" "read-outside ok" "read-listed ok" "connect-listed refused"
[ -e "$T/outside/box" ] && fail "box wrote outside"
if [ "$ABI" -ge 4 ]; then
	expect "$T/box/probe.box" "connect-other EACCES"
else
	expect "$T/box/probe.box" "connect-other refused"
fi
[ "$ABI" -ge 6 ] && expect "$T/box/probe.box" "signal EPERM" \
    "sibling EPERM" "abstract EPERM"
expect "$T/free/probe.free" "cwd ok" "outside ok" "listed ok" \
    "read-outside ok" "connect-other refused" "signal ok" "sibling ok" \
    "abstract ok" "chmod-outside ok" "touch-outside ok" "chown-outside ok" \
    "chmod-inside ok"
expect "$T/reader/probe.reader" "cwd ok" "outside $W" "listed $W" \
    "devnull ok" "read-outside EACCES" "read-listed ok"
# Metadata outside: the mount namespace is read-only there.
[ "$W" = EROFS ] || note "no mount namespace for agents here: metadata not checked"
[ "$W" = EROFS ] && for a in box reader; do
	expect "$T/$a/probe.$a" "chmod-outside EROFS" "touch-outside EROFS" \
	    "chown-outside EROFS" "chmod-inside ok"
	[ "$(stat -c %a "$T/outside/meta.$a")" = 600 ] ||
	    fail "$a changed the mode of a file outside: $(ls -l "$T/outside/meta.$a")"
	[ "$(stat -c %Y "$T/outside/meta.$a")" -gt 1000000000 ] ||
	    fail "$a changed the time of a file outside"
	if has "$T/free/probe.free" "xattr-outside ok"; then
		expect "$T/$a/probe.$a" "xattr-outside EROFS"
	else
		note "no user xattrs here: $(grep xattr "$T/free/probe.free")"
	fi
done
# The kid's entry has no confine:, but its parent had.
kid=$(ls "$T"/root/probe.kid* | head -n 1)
expect "$kid" "cwd ok" "outside $W" "listed $W" "read-outside ok"
note "box: $(tr '\n' ';' <"$T/box/probe.box")"
note "kid: $(tr '\n' ';' <"$kid")"
}

# 4. No Landlock, or no net rules.
cat >"$T/plain.yaml" <<YAML
agents:
  box:
    cmd: [sh, -c, 'touch $T/outside/unconfined; exec cat >/dev/null']
    confine: {connect: [$P1]}
  two:
    cmd: [cat]
    confine: on
routes:
  "*": two
YAML
sed 's/confine: on/confine: {required: true}/' "$T/plain.yaml" >"$T/required.yaml"

CORRAL_LANDLOCK=0 corral_run 10 run "$T/plain.yaml" --goal go -v
expect_rc 0
[ "$(log_count "confine: not enforced in full for box, two: this kernel has no Landlock")" = 1 ] ||
    fail "expected one warning naming box and two: $(grep confine "$ERR")"
[ -e "$T/outside/unconfined" ] || fail "without Landlock the agent should have run unconfined"
CORRAL_LANDLOCK=0 corral_run 10 run "$T/required.yaml" --goal go -v
expect_rc 2
log_has "agent two: confine: required, but this kernel has no Landlock" ||
    fail "expected the refusal to name two: $(cat "$ERR")"
log_has "spawned" && fail "corral started agents although it refused"
if [ "$ABI" -ge 4 ]; then
	sed 's/confine: {connect: \[\(.*\)\]}/confine: {connect: [\1], required: true}/' \
	    "$T/plain.yaml" >"$T/net.yaml"
	CORRAL_LANDLOCK=3 corral_run 10 run "$T/net.yaml" --goal go -v
	expect_rc 2
	log_has "agent box: confine: required, but Landlock ABI 3 cannot restrict TCP connect" ||
	    fail "expected the refusal for connect: under ABI 3: $(cat "$ERR")"
fi
# ABI 5: no signal or abstract-socket scoping.
cat >"$T/scoped.yaml" <<YAML
agents:
  box:
    cmd: [sh, -c, 'kill -0 1 && touch signalled; exec cat >/dev/null']
    cwd: $T/box
    confine: {connect: [$P1], required: true}
  two:
    cmd: [cat]
routes:
  "*": two
YAML
if [ "$ABI" -ge 6 ]; then
	CORRAL_LANDLOCK=5 corral_run 10 run "$T/scoped.yaml" --goal go -v
	expect_rc 2
	log_has "agent box: confine: required, but Landlock ABI 5 cannot stop signals to processes outside its sandbox (corral, other agents) (signals), stop connections to abstract unix sockets outside its sandbox (abstract-sockets)" ||
	    fail "expected the refusal under ABI 5 to name signals and abstract-sockets: $(cat "$ERR")"
	log_has "spawned" && fail "corral started agents although it refused"
	[ -e "$T/box/signalled" ] && fail "the agent ran and signalled corral"
	sed 's/required: true}/required: true, optional: [signals, abstract-sockets]}/' \
	    "$T/scoped.yaml" >"$T/optional.yaml"
	CORRAL_LANDLOCK=5 corral_run 10 run "$T/optional.yaml" --goal go -v
	expect_rc 0
	log_has "confine: not enforced in full for box: Landlock ABI 5 cannot stop signals" ||
	    fail "with optional: the run should warn of what is missing: $(cat "$ERR")"
fi
# No mount namespace: metadata outside is not stopped.
CORRAL_NO_MOUNTNS=1 corral_run 10 run "$T/required.yaml" --goal go -v
expect_rc 2
log_has "agent two: confine: required, but no mount namespace of its own can be made here: chmod, chown, utimes and xattrs of files outside are not stopped (metadata)" ||
    [ "$ABI" = 0 ] || fail "expected the refusal to name metadata: $(cat "$ERR")"
sed 's/required: true}/required: true, optional: [metadata]}/' \
    "$T/required.yaml" >"$T/nomount.yaml"
if [ "$ABI" -ge 1 ]; then
	CORRAL_NO_MOUNTNS=1 corral_run 10 run "$T/nomount.yaml" --goal go -v
	expect_rc 0
	log_has "confine: not enforced in full for" || fail "expected a warning without the mount namespace: $(cat "$ERR")"
fi
kill "$LPID"
wait "$LPID" 2>/dev/null
expect_no_leftovers
[ "$ABI" -ge 1 ] || skip "this kernel has no Landlock: only the refusals were checked"
exit 0
