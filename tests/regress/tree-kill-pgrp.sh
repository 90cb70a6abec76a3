#!/bin/sh
# When a child is gone -- killed, or stopped after its task -- the
# processes it started and left in its process group go with it, while
# the run goes on.
#
#   root -> kid-1   forks a worker (same process group, stdio on
#                   /dev/null) and never finishes; the test kills -9 kid-1
#        -> done-2  forks a worker and finalizes; corral stops it
# Both workers must be gone within a few seconds, before corral exits.
# (A descendant that leaves the process group with setsid() is out of
# reach until corral exits: tree-cleanup.sh checks that it dies then.)
. "$(dirname "$0")/tree-lib.sh"

tree_wf kid done
cat >"$T/root.json" <<JSON
{"steps": [
  {"spawn": {"agent": "kid", "plan": {"steps": [{"worker": true}, {"hang": true}]}}},
  {"spawn": {"agent": "done", "plan": {"steps": [{"worker": true}, {"finalize": {"text": "done"}}]}}},
  {"await": true},
  {"wait_file": "$T/checked"}]}
JSON
corral_start run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
wait_rec_count "worker " 2 10
# Their host pids while they live (kid-1's worker at least does).
ws=$(host_pid $(awk '$1 == "worker" { print $3 }' "$REC"))
[ -n "$ws" ] || fail "no worker is alive: $(cat "$REC")"
wait_rec "result root done-2 ok - done" 10
note_supervisor
kid=$(rec_pid kid-1)
kill -9 "$kid"
wait_rec "result root kid-1 fail child_failed child kid-1 killed by signal KILL before finishing its task" 10
expect_gone "$kid" "$(rec_pid done-2)"
wait_for '[ -z "$(alive_of $ws)" ]' 5 ||
    fail "processes left in a gone child's process group should die with it; still running: $(ps -o pid=,stat=,args= -p "$(alive_of $ws | tr '\n' ',' | sed 's/,$//')")"
: >"$T/checked"
corral_wait 10
expect_rc 0
expect_clean
exit 0
