#!/bin/sh
# A task that waits for its retry when its child's budget runs out (found
# by tests/fuzz/fuzz_engine.c).
#
# mute never completes its handshake, so its task waits in its queue; the
# task's own timeout (0.3 s) fails it before any agent had it, so it is
# retried, after retry.initial (30 s).  Meanwhile mute's time budget (1 s)
# runs out: the task ends with budget_exceeded and root gets it.  The
# request was freed while it still sat on the engine's list of requests
# waiting for a retry, and the shutdown walked that list: a use after
# free (AddressSanitizer), a double free or worse without it.
. "$(dirname "$0")/tree-lib.sh"

write_wf "$T/wf.yaml" <<'YAML'
agents:
  root:
    cmd: [@TR@, --record, @REC@, --plan, @T@/root.json]
  mute:
    cmd: [@TR@, --record, @REC@]
    autostart: false
    ready: handshake
    budget: {time: 1s}
routes:
  "*": root
retry: {max: 2, initial: 30s}
YAML
cat >"$T/root.json" <<JSON
{"steps": [
  {"spawn": {"agent": "mute", "timeout": 0.3}},
  {"await": true}]}
JSON

corral_run 20 run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
log_has "retry 1 in" || fail "the task should wait for a retry"
expect_rc 0
[ "$(out_get content.text)" = "root(!mute-1:budget_exceeded)" ] ||
    fail "root should finish with mute-1's budget: $(out_get content.text)"
expect_clean
exit 0
