#!/bin/sh
# A child stopped while it waits to restart: its task still ends, with an
# error to its parent (found by tests/fuzz/fuzz_engine.c).
#
# root spawns kid (restart: transient, a long backoff), whose plan crashes
# at its first start.  The crash puts kid in BACKOFF and its open task
# back in kid's own queue, for the restarted kid.  Then root stops kid
# with map/agents/stop: the restart is called off, so the task can never
# be delivered.  It must fail at once (cancelled: the stop cancels the
# requests of the agent stopped, docs/control.md), root must get it as a
# child_result, and the run must end with root's result.
. "$(dirname "$0")/tree-lib.sh"

write_wf "$T/wf.yaml" <<'YAML'
agents:
  root:
    cmd: [@TR@, --record, @REC@, --plan, @T@/root.json]
  kid:
    cmd: [@TR@, --record, @REC@]
    autostart: false
    restart: {policy: transient, backoff: 60s, backoff_max: 60s}
routes:
  "*": root
YAML
cat >"$T/root.json" <<JSON
{"steps": [
  {"spawn": {"agent": "kid", "plan": {"steps": [{"crash_starts": 1}]}}},
  {"wait_file": "$T/crashed"},
  {"stop": "%kid"},
  {"await": true}]}
JSON

corral_start run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
wait_rec "exit kid-1 3" 10
wait_log "agent kid-1: restarting in" 10
: >"$T/crashed"
wait_rec "stop_ok root kid-1" 10
# The task fails as soon as the restart is called off.
wait_rec "result root kid-1 fail cancelled stopped by its parent" 10
corral_wait 10
expect_rc 0
[ "$(out_get content.text)" = "root(!kid-1:cancelled)" ] ||
    fail "root should finish with kid-1's failure: $(out_get content.text)"
[ "$(rec_count "start kid-1 ")" = 1 ] || fail "kid-1 should not restart"
expect_clean
exit 0
