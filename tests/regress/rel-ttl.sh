#!/bin/sh
# A next action's args.ttl_ms is its request's deadline: the planner
# proposes one execute step with args {"ttl_ms": 300} for a worker that
# never answers (timeout: 60 s x SLOW).  The step fails with timeout well
# before the worker's timeout, and so does the job (it once waited the
# full timeout).
# A negative ttl_ms makes the reply invalid: its request fails at once
# with the path of the bad value (corral once passed it on to the worker
# in an envelope its own validator refuses).
. "$(dirname "$0")/lib.sh"
. "$TESTDIR/tools/wflib.sh"

LOG="$T/audit.ndjson"
cat >"$T/reply.json" <<'JSON'
{"protocol":"multiagent-1.0","role":"agent","agent":{"id":"planner","name":"planner","model":"sh"},"intent":"plan","task":"t","content":{"type":"text","text":"go"},"outputs":{"next_actions":[{"intent":"execute","task":"w","args":{"ttl_ms":300}}]}}
JSON
cat >"$T/planner.sh" <<EOF
read -r line
cat "$T/reply.json"
while read -r line; do :; done
EOF
cat >"$T/wf.yaml" <<YAML
agents:
  planner:
    cmd: [/bin/sh, $T/planner.sh]
  worker:
    cmd: [$WA, --hang]
    timeout: $((60 * SLOW))s
routes:
  plan: planner
  execute: worker
YAML
s=$(now)
corral_run 70 run "$T/wf.yaml" --goal go --log "$LOG"
took=$(elapsed "$s")
expect_rc 1
grep -q '"code":"timeout"' "$OUT" ||
    fail "the job did not end with the step's timeout: $(head -c 400 "$OUT")"
# 60 s x SLOW is the worker's own timeout; 300 ms the step's.  Anything
# far below the worker's shows ttl_ms was used, however loaded the machine.
fcmp "$took" "<" $((30 * SLOW)) || fail "the job took ${took}s: ttl_ms 300 was not the deadline"

sed 's/"ttl_ms":300/"ttl_ms":-5/' "$T/reply.json" >"$T/reply.tmp" &&
    mv "$T/reply.tmp" "$T/reply.json"
rm -f "$LOG"
corral_run 25 run "$T/wf.yaml" --goal go --log "$LOG"
expect_rc 1
grep -q 'outputs.next_actions\[0\].args.ttl_ms must be a number >= 0' "$OUT" ||
    fail "a negative ttl_ms was not refused: $(head -c 400 "$OUT")"
! grep -q '"ev":"route","agent":"worker"' "$LOG" ||
    fail "the step with a negative ttl_ms reached the worker"
expect_no_leftovers 5
exit 0
