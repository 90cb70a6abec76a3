#!/bin/sh
# An agent in a container on another machine: ssh to alpha (a network
# namespace with its own sshd), podman run -i --rm there, from an image
# this test builds from files (podman import of a tarball holding corral,
# the tree agent and the libraries they need; no registry is reached), in
# a storage of the test's own.
#
#   - corral host runs inside as the container's init, says which
#     container it is: corral ps shows it, podman ps lists it
#   - a request goes in and its reply comes out
#   - kill -9 of corral: its ssh dies with it; on alpha podman's conmon
#     would keep the container running, but corral host hears nothing
#     more from corral and ends the agent, so the container ends and is
#     removed
# SKIPPED, with the reason, under the sanitizers, or where podman is
# missing (check.sh does not install it) or cannot run a container
# here.
. "$(dirname "$0")/remote-lib.sh"
# Under the sanitizers corral's side (launch, corral host) is the same as
# through ssh, which remote-ssh, remote-ssh-fail and remote-host cover:
# this pass spares the check the time of podman's.
[ "${CORRAL_SANITIZE:-}" = ON ] &&
    skip "podman runs in the normal pass; corral's launch and corral host run under the sanitizers in remote-ssh, remote-ssh-fail, remote-host"

command -v podman >/dev/null 2>&1 || skip "podman is missing (Debian: podman)"
command -v ldd >/dev/null 2>&1 || skip "ldd is missing"
P="podman --root $T/storage --runroot $T/prun --storage-driver vfs --cgroup-manager cgroupfs"
# Limits below ours: podman's defaults may be above what root may set
# here (no CAP_SYS_RESOURCE).
LIM="--ulimit nofile=1024:1024 --ulimit nproc=4096:4096"
# Whatever way the test ends: its containers go, and what podman mounted
# under $T (a container's /dev/shm) is unmounted before $T is removed.
podman_cleanup() {
	$P rm -a -f -t 0 >/dev/null 2>&1
	awk -v t="$T/" 'index($2, t) == 1 { print $2 }' /proc/mounts |
	    sort -r | while read -r m; do umount -l "$m"; done
}
trap 'podman_cleanup; net_cleanup; cleanup' EXIT

# The image: the two programs at their own paths, their libraries, sh.
R="$T/root"
for f in "$CORRAL" "$TR" /bin/sh; do
	mkdir -p "$R$(dirname "$f")"
	cp -L "$f" "$R$f"
	for l in $(ldd "$f" | grep -o '/[^ ]*'); do
		mkdir -p "$R$(dirname "$l")"
		cp -L "$l" "$R$l"
	done
done
tar -C "$R" -cf "$T/root.tar" . || fail "tar of the image"
$P import "$T/root.tar" corral-test:1 >"$T/import.out" 2>&1 ||
    skip "podman import fails here: $(tail -n 2 "$T/import.out")"
# crun wants a cgroup layout some machines lack; runc may do.
RT=
for rt in "" "--runtime runc"; do
	if $P run --rm --network none $LIM $rt corral-test:1 /bin/sh -c true \
	    >"$T/probe.out" 2>&1; then
		RT=$rt
		break
	fi
	RT=none
done
[ "$RT" != none ] || skip "podman cannot run a container here: $(tail -n 1 "$T/probe.out")"

extra=
for w in $LIM $RT; do
	extra="$extra \"$w\","
done
net_up alpha
cat >"$T/wf.yaml" <<EOF
defaults:
  launch:
    argv: [ssh, -F, "$T/ssh_config", -T, "{{host}}", podman, --root,
      "$T/storage", --runroot, "$T/prun", --storage-driver, vfs,
      --cgroup-manager, cgroupfs, run, -i, --rm, --network, none,$extra
      --name, "corral-{{run}}-{{agent.id}}", -v, "{{dir}}:{{dir}}",
      corral-test:1, "{{cmd | shell}}"]
    hosts: [alpha]
    corral: "$CORRAL"
    alive: $(awk -v s="$SLOW" 'BEGIN { print s / 2 }')s
    lost: $((3 * SLOW))s
  stop: {grace: 1s, timeout: 1s}
agents:
  boxed:
    cmd: [$TR, --record, $REC]
routes:
  "*": boxed
EOF
"$CORRAL" check "$T/wf.yaml" >"$T/check.out" 2>&1 ||
    fail "corral check: $(cat "$T/check.out")"
SOCK="$T/ctl.sock"
remote_serve "$T/wf.yaml" --log "$LOG" --control "$SOCK"
wait_log "agent boxed: running on" 30
"$CORRAL" ps -S "$SOCK" --json >"$T/ps.json"
ctr=$(jq -r '.agents[] | select(.id == "boxed") | .metadata.host.container' "$T/ps.json")
[ -n "$ctr" ] && [ "$ctr" != null ] || fail "boxed should say its container: $(cat "$T/ps.json")"
jq -e '.agents[] | select(.id == "boxed") | .metadata.host.pidns == true' \
    "$T/ps.json" >/dev/null || fail "corral host should be the container's init"
$P ps --format '{{.ID}} {{.Names}}' >"$T/pps" 2>&1
grep -q "^$(echo "$ctr" | cut -c1-12).* corral-.*-boxed$" "$T/pps" ||
    fail "podman ps should list boxed's container $ctr: $(cat "$T/pps")"
"$CORRAL" ps -S "$SOCK" >"$T/ps.out"
grep -q "^  boxed  .* ctr=$(echo "$ctr" | cut -c1-12)@alpha *$" "$T/ps.out" ||
    fail "corral ps should show the container: $(cat "$T/ps.out")"

envelope r1 plan >&8
wait_lines 1 20
grep -q '"text":"boxed"' "$OUT" || fail "no reply from the container: $(cat "$OUT")"

kill -9 "$CORRAL_PID"
wait "$CORRAL_PID" 2>/dev/null
CORRAL_PID=
wait_for '[ -z "$($P ps -q 2>/dev/null)" ]' $((3 * SLOW + 20)) ||
    fail "the container outlived corral: $($P ps)"
wait_for '[ -z "$(ps -ww -eo args= | awk -v tr="$TR" '\''$1 == tr'\'')" ]' 10 ||
    fail "the agent outlived corral: $(ps -ww -eo pid,args | grep "$TR")"
