#!/bin/sh
# No zombies: agents that crash, and grandchildren that are orphaned and
# then exit (or are killed), are all reaped by corral; none is left
# behind in Z state, with or without the pid namespace, and nothing of the
# test is alive after corral exits.
. "$(dirname "$0")/lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  crashy:
    cmd: [$TA, --grandchild, $T/gc.pid, --grandchild-life, "200", --die-after, "300"]
    restart: {policy: permanent, max: 10, within: 60s, backoff: 1s, backoff_max: 1s}
  keeper:
    cmd: [$TA, --grandchild, $T/keep.pid]
routes:
  "*": keeper
YAML

for mode in pidns nopidns; do
	pidns_mode $mode
	rm -f "$T/keep.pid"
	serve_start "$T/wf.yaml" -v
	wait_for '[ -s "$T/keep.pid" ]' 10 || fail "$mode: keeper's grandchild did not start"
	sup=$(supervisor_pid)
	# An orphaned grandchild that is killed: its new parent must reap it.
	kill -9 "$(host_pid $(cat "$T/keep.pid"))"
	# Two crashes of crashy, each leaving an orphan that exits 200ms later:
	# once the latest orphan has exited, it and the killed one must be
	# reaped.
	wait_for '[ "$(grep -c "corral: agent crashy: READY -> STOPPED (exit status 1)" "$ERR")" -ge 2 ]' 10 ||
	    fail "$mode: expected crashy to crash twice"
	gc=$(host_pid $(cat "$T/gc.pid"))
	[ -z "$gc" ] || wait_gone "$gc" 5 || fail "$mode: crashy's orphan $gc did not exit"
	z=
	wait_for '[ -z "$(zombies_of $CORRAL_PID $sup $(marker_pids))" ]' 3 ||
	    z=$(zombies_of $CORRAL_PID $sup $(marker_pids))
	[ -z "$z" ] || fail "$mode: zombies left unreaped (stat pid ppid comm):
$z"
	note "$mode: no zombies under corral (pid $CORRAL_PID, supervisor $sup)"
	pid_alive "$CORRAL_PID" || fail "$mode: corral died"
	serve_eof
	corral_wait 15
	expect_rc 0
	z=$(zombies_of $CORRAL_PID $sup $(marker_pids))
	[ -z "$z" ] || fail "$mode: zombies after exit: $z"
done
expect_no_leftovers
exit 0
