#!/bin/sh
# An agent sees only descriptors 0, 1 and 2, even when corral inherits
# extra ones (7 and 9 here) and holds its own (pipes to other agents, the
# audit log); also after a restart, and with or without the pid namespace.
# corral's own descriptor count does not grow across restarts.  Each
# count is taken while b waits B seconds (1 x SLOW) to restart.  And
# the same where a seccomp profile refuses close_range and
# unshare(CLONE_FILES).
. "$(dirname "$0")/lib.sh"

B=$SLOW

cat >"$T/wf.yaml" <<YAML
agents:
  a:
    cmd: [$TA, --fds, $T/a.fds]
  b:
    cmd: [$TA, --fds, $T/b.fds, --record, $T/b.rec, --die-after, "100"]
    restart: {policy: permanent, max: 10, within: 60s, backoff: ${B}s, backoff_max: ${B}s}
routes:
  "*": a
YAML

exec 7</dev/null 9>"$T/nine"
for mode in pidns nopidns; do
	pidns_mode $mode
	rm -f "$T"/*.fds "$T/b.rec"
	serve_start "$T/wf.yaml" -v --log "$T/audit.ndjson"
	wait_for '[ -s "$T/a.fds" ]' 10 || fail "$mode: agent a did not list its fds"
	sup=$(supervisor_pid)
	[ -e "/proc/$sup/fd/9" ] ||
	    fail "$mode: corral (pid $sup) did not inherit fd 9 (test broken?)"
	# Count corral's fds while b waits to restart (its pipes are closed),
	# after its first and after its second crash.
	wait_for '[ "$(log_count "corral: agent b: restarting in")" -ge 1 ]' 10 ||
	    fail "$mode: agent b was not restarted"
	n1=$(fd_count "$sup")
	wait_for '[ "$(log_count "corral: agent b: restarting in")" -ge 2 ]' $((B + 10)) ||
	    fail "$mode: agent b was not restarted twice"
	n2=$(fd_count "$sup")
	wait_for '[ "$(grep -c "^start " "$T/b.rec")" -ge 3 ] && [ -s "$T/b.fds" ]' $((B + 10)) ||
	    fail "$mode: agent b did not start a third time"
	for f in a b; do
		got=$(sed 's/^fd \([0-9]*\) .*/\1/' "$T/$f.fds" | sort -n | tr '\n' ' ')
		[ "$got" = "0 1 2 " ] ||
		    fail "$mode: expected agent $f to have fds 0 1 2 only, it has: $(cat "$T/$f.fds")"
	done
	note "$mode: corral holds $n1 fds after b's first crash, $n2 after its second"
	[ "$n2" -le "$n1" ] ||
	    fail "$mode: corral's fds grew from $n1 to $n2 across a restart: $(ls -l /proc/$sup/fd)"
	serve_eof
	corral_wait 10
	expect_rc 0
done

# Where a seccomp profile refuses close_range (all of it, or only its
# CLOSE_RANGE_UNSHARE) and unshare(CLONE_FILES), as some container
# runtimes do, agents start all the same, each with a copy of corral's
# descriptor table closed before exec: still only 0, 1 and 2.
cat >"$T/wf2.yaml" <<YAML
agents:
  a:
    cmd: [$TA, --fds, $T/a.fds]
routes:
  "*": a
YAML
pidns_mode pidns
if ! why=$("$TOOLS/nounshare" all true); then
	note "SKIPPED (the seccomp part): $why"
else
	real=$CORRAL
	for mode in all unshare; do
		printf '#!/bin/sh\nexec "%s" %s "%s" "$@"\n' \
		    "$TOOLS/nounshare" $mode "$real" >"$T/corral-$mode"
		chmod +x "$T/corral-$mode"
		CORRAL=$T/corral-$mode
		rm -f "$T/a.fds"
		serve_start "$T/wf2.yaml" -v
		wait_for '[ -s "$T/a.fds" ]' 10 ||
		    fail "seccomp $mode: agent a did not start: $(cat "$ERR")"
		got=$(sed 's/^fd \([0-9]*\) .*/\1/' "$T/a.fds" | sort -n | tr '\n' ' ')
		[ "$got" = "0 1 2 " ] ||
		    fail "seccomp $mode: expected agent a to have fds 0 1 2 only, it has: $(cat "$T/a.fds")"
		serve_eof
		corral_wait 10
		expect_rc 0
		CORRAL=$real
	done
fi
expect_no_leftovers
exit 0
