#!/bin/sh
# A grandchild of an agent that detached (setsid, stdio on /dev/null) is
# gone after a normal shutdown: in pid namespace mode and with
# CORRAL_NO_PIDNS=1 (subreaper mode).  A second agent's grandchild keeps
# the agent's stdout and stderr open, so corral must also stop waiting for
# their EOF.  The parent holds its answer to the goal until the script
# has found both grandchildren: answered at once, the run could end (and
# take them with it) before their pids were mapped.
. "$(dirname "$0")/lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  parent:
    cmd: [$TA, --record, $T/rec, --grandchild, $T/gc.pid, --hold-file, $T/hold]
    stop: {grace: 200ms, timeout: 300ms}
  holder:
    cmd: [$TA, --grandchild, $T/gc2.pid, --grandchild-keep]
    stop: {grace: 200ms, timeout: 300ms}
routes:
  "*": parent
YAML

for mode in pidns nopidns; do
	pidns_mode $mode
	rm -f "$T/gc.pid" "$T/gc2.pid"
	: >"$T/hold"
	corral_start run "$T/wf.yaml" --goal go -v
	wait_for '[ -s "$T/gc.pid" ] && [ -s "$T/gc2.pid" ]' 10 ||
	    fail "$mode: the agents did not report their grandchildren"
	gc=$(host_pid $(cat "$T/gc.pid"))
	gc2=$(host_pid $(cat "$T/gc2.pid"))
	[ -n "$gc" ] && [ -n "$gc2" ] ||
	    fail "$mode: the grandchildren are not alive: $(cat "$T/gc.pid" "$T/gc2.pid")"
	rm -f "$T/hold"
	corral_wait 20
	[ $mode = pidns ] && need_pidns
	expect_rc 0
	bad=
	wait_gone "$gc" 3 ||
	    bad="$bad detached grandchild (pid $gc);"
	wait_gone "$gc2" 3 ||
	    bad="$bad grandchild holding the pipes (pid $gc2);"
	[ -z "$bad" ] ||
	    fail "$mode: expected no grandchild alive after corral exited; alive:$bad\n$(ps -o pid,ppid,stat,args -p "$gc,$gc2")"
	note "$mode: both grandchildren gone"
done
expect_no_leftovers
exit 0
