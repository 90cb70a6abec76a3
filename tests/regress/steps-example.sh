#!/bin/sh
# examples/spec-workflow, with scripted answers (its README's two ways):
#   - the validator sends the spec back twice (iterations 1-3), escalates
#     once; corral answer gives the decision, the writer records it, the
#     finisher writes the index: exit 0, "Feature 005-user-auth is
#     specified.", every file in the workspace, nothing outside; corral
#     replay of it (the answer given again from the log): no difference
#   - --on-escalate=exit (status 3), corral answer on the record, then
#     corral run --resume: the same spec
. "$(dirname "$0")/steps-lib.sh"

EX="$T/ex"
cp -R "$SRCDIR/examples/spec-workflow" "$EX" || fail "cannot copy the example"
rm -rf "$EX/work"
SPEC="$EX/work/specs/005-user-auth/spec.md"

SOCK="$T/ctl.sock"
"$CORRAL" run "$EX/workflow.yaml" --goal "sign in" --output text \
    --control "$SOCK" --log "$T/audit" >"$OUT" 2>"$ERR" </dev/null &
CORRAL_PID=$!
wait_log "step validate (agent validator, iteration 3) needs an answer (agent): The spec is complete but for one decision" 30
grep -q "^## Acceptance criteria" "$SPEC" && grep -q "^## Edge cases" "$SPEC" ||
    fail "the spec lacks what the validator asked for: $(cat "$SPEC")"
"$CORRAL" answer -S "$SOCK" validate "OAuth with Google and GitHub" >"$T/ans" 2>&1 ||
    fail "corral answer: $(cat "$T/ans")"
finish_steps
want "exit status" "$RC" 0
want "the result" "$(cat "$OUT")" "Feature 005-user-auth is specified."
grep -q "^OAuth with Google and GitHub" "$SPEC" || fail "the decision is not in the spec: $(cat "$SPEC")"
grep -q -- "- notes: Spec complete; 4 sections" "$EX/work/specs/005-user-auth/index.md" ||
    fail "the index: $(cat "$EX/work/specs/005-user-auth/index.md")"
want "steps" "$(audit_lines step | sed -n 's/.*"step":"\([a-z]*\)","iteration":\([0-9]*\).*/\1 \2/p' | tr '\n' ' ')" \
    "write 1 validate 1 write 2 validate 2 write 3 validate 3 write 4 validate 4 finish 1 "
want "files in the workspace" "$(cd "$EX/work" && find . -type f | sort | tr '\n' ' ')" \
    "./specs/005-user-auth/index.md ./specs/005-user-auth/spec.md "
# Replayed (into a scratch workspace): the person's answer is given
# again from the log; no difference.
sed "s|^workspace:.*|workspace: $T/replayed|" "$EX/workflow.yaml" >"$EX/replay.yaml"
expect_replay "$T/audit" "$EX/replay.yaml"
[ -f "$T/replayed/specs/005-user-auth/index.md" ] ||
    fail "the replay wrote no index: $(ls -R "$T/replayed" 2>&1)"
note "run, answered with corral answer: ok; replayed"

rm -rf "$EX/work"
timeout $((60 * SLOW)) "$CORRAL" run "$EX/workflow.yaml" --goal "sign in" \
    --on-escalate=exit --record "$T/esc.json" >"$OUT" 2>"$ERR" </dev/null
want "exit status with --on-escalate=exit" "$?" 3
"$CORRAL" answer "$T/esc.json" validate "Passwords, with a second factor" >"$T/ans" 2>&1 ||
    fail "corral answer on the record: $(cat "$T/ans")"
timeout $((60 * SLOW)) "$CORRAL" run --resume "$T/esc.json" --output text \
    >"$OUT" 2>"$ERR" </dev/null
want "exit status of the resumed run" "$?" 0
want "the resumed run's result" "$(cat "$OUT")" "Feature 005-user-auth is specified."
grep -q "^Passwords, with a second factor" "$SPEC" || fail "the decision is not in the spec: $(cat "$SPEC")"
note "exit, answer the record, resume: ok"
exit 0
