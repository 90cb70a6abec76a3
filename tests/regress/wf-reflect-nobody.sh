#!/bin/sh
# A weak reply whose reflection cannot be routed (found by
# tests/fuzz/fuzz_engine.c): the reflect route's only agent is gone for
# good, so the reflection cannot happen.  The job once lost its last
# pending request without being finished: corral run never ended, and
# corral serve never answered the input (and once max_inflight such jobs
# piled up, stopped reading).  Now the branch ends at once and, as
# docs/workflow.md's reflection policy says, the weak reply stands with
# corral.risk saying it was not reflected on.
. "$(dirname "$0")/lib.sh"
. "$TESTDIR/tools/wflib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  a:
    cmd: [$WA, --score, "0.1", --delay, "300"]
  critic:
    cmd: [$TA, --exit, "3"]
    restart: temporary
routes:
  plan: a
  reflect: critic
YAML

corral_run 10 run "$T/wf.yaml" --goal go --log "$T/audit.ndjson" -v
expect_rc 0
grep -qF '"risk":' "$OUT" ||
    fail "the run should end with the weak reply and its risk: $(cat "$OUT")"
p=$(audit_problems "$T/audit.ndjson")
[ -z "$p" ] || fail "audit log: $p"

# The same through corral serve: one answer for the input.
serve_start "$T/wf.yaml" -v
printf '{"protocol":"multiagent-1.0","role":"user","intent":"plan","task":"t","content":{"type":"text","text":"x"},"trace":{"id":"in-1"}}\n' >&8
wait_for '[ "$(grep -c . "$OUT")" -ge 1 ]' 10 ||
    fail "corral serve should answer the input"
grep -qF '"risk":' "$OUT" || fail "the answer: $(cat "$OUT")"
[ "$(grep -c . "$OUT")" = 1 ] || fail "more than one answer: $(cat "$OUT")"
serve_eof
corral_wait 10
expect_rc 0
exit 0
