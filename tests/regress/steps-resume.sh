#!/bin/sh
# CI without a person at hand (docs/steps.md, "CI: --on-escalate"):
#   - --on-escalate=exit: a step that escalates ends the run with exit
#     status 3, after writing the escalation record (--record FILE); the
#     result is an error envelope, code escalated, naming the record
#   - corral run --resume on a record without an answer is refused, and
#     so is a record a newer corral wrote (its version is higher)
#     (exit 2), and says how to answer
#   - corral answer RECORD STEP TEXT writes the answer into the record;
#     corral run --resume RECORD (no workflow file: the record names it)
#     goes on: the writer runs again, iteration 2, with the answer; the
#     steps before are not run again; the audit log starts with resume
#   - a record answered --abort resumes to exit 1, aborted, with no agent
. "$(dirname "$0")/steps-lib.sh"

Q="$TOOLS/treeq"
[ -x "$Q" ] || skip "no treeq at $Q"
# jv JSON PATH: a value of a JSON text, as field (steps-lib.sh) prints it
# (strings bare, the rest compact JSON), by a dotted path (.content.text).
# treeq reads it (one JSON text a line: the record's lines are joined),
# where field starts a python3: most of this test's time here.
jv() {
	printf '%s\n' "$1" | tr -d '\n' | "$Q" -p "${2#.}" -
}

steps_workflow "writer validator finisher" \
    '  - {name: write, agent: writer, action: create}
  - {name: validate, agent: validator, action: validate, retry: write}
  - {name: finish, agent: finisher, action: finalize}'
out true proceed "Drafted" '["Spec drafted"]' \
    "[$(art specs/005-user-auth/spec.md create 'v1')]" >"$T/writer.script"
out true escalate "Which login method?" '["OAuth or passwords?"]' >"$T/validator.script"
out true proceed "Finished" '[]' >"$T/finisher.script"
REC="$T/esc.json"

run_steps --goal "user login" --on-escalate=exit --record "$REC"
want "exit status with --on-escalate=exit" "$RC" 3
[ -f "$REC" ] || fail "no record at $REC"
want "the result's code" "$(jv "$(cat "$OUT")" .content.data.code)" escalated
want "the result names the record" "$(jv "$(cat "$OUT")" .content.data.record)" "$REC"
want "the record's step" "$(jv "$(cat "$REC")" .step)" validate
want "the record's workflow" "$(jv "$(cat "$REC")" .workflow)" "$T/wf.yaml"
want "the record's counts" "$(jv "$(cat "$REC")" .runs)" '{"write":1,"validate":1,"finish":0}'
want "the record's answer" "$(jv "$(cat "$REC")" .answer)" null
want "finisher runs" "$(recvs finisher)" 0
log_has "corral answer $REC validate \"TEXT\", then corral run --resume $REC" ||
    fail "the log does not say how to go on"

"$CORRAL" run --resume "$REC" >"$T/r.out" 2>"$T/r.err"
want "resume without an answer" "$?" 2
grep -q "holds no answer yet: corral answer $REC validate" "$T/r.err" ||
    fail "resume without an answer says: $(cat "$T/r.err")"

# A record from a newer corral is refused, saying so.
sed -E 's/"corral_escalation": *1,/"corral_escalation": 5,/' "$REC" >"$T/newer.json"
"$CORRAL" run --resume "$T/newer.json" >"$T/r.out" 2>"$T/r.err"
want "resume of a newer record" "$?" 2
grep -q "a record of version 5, from a newer corral; this corral (.*) reads version 1" "$T/r.err" ||
    fail "resume of a newer record says: $(cat "$T/r.err")"

"$CORRAL" answer "$REC" validate "Use OAuth." >"$T/a.out" 2>&1 ||
    fail "corral answer on the record: $(cat "$T/a.out")"
want "the record's answer" "$(jv "$(cat "$REC")" .answer.text)" "Use OAuth."
"$CORRAL" answer "$REC" write "x" >"$T/a.out" 2>&1 && fail "an answer to another step was taken"
grep -q "the escalation is at step validate, not write" "$T/a.out" || fail "it says: $(cat "$T/a.out")"

# The agents start afresh; the validator accepts now.
out true proceed "Spec complete" '["Spec complete"]' >"$T/validator.script"
out true proceed "Redrafted" '["OAuth it is"]' \
    "[$(art specs/005-user-auth/spec.md update 'v2')]" >"$T/writer.script"
rm -f "$T"/*.rec
timeout $((30 * SLOW)) "$CORRAL" run --resume "$REC" --log "$T/audit2" >"$OUT" 2>"$ERR" </dev/null
want "exit status of the resumed run" "$?" 0
want "the result" "$(jv "$(cat "$OUT")" .content.text)" Finished
want "writer runs in the resumed run" "$(recvs writer)" 1
if [ "$PROTO" = adr-007 ]; then
	ITER=.context.iteration ANSWER=.task.params.answer
else
	ITER=.corral.step.iteration ANSWER=.inputs.parameters.answer
fi
want "the writer's iteration" "$(jv "$(recv writer 1)" $ITER)" 2
want "the writer's answer" "$(jv "$(recv writer 1)" $ANSWER)" "Use OAuth."
[ "$(cat "$W/specs/005-user-auth/spec.md")" = v2 ] || fail "the spec was not updated"
grep -q '"ev":"resume".*"step":"validate","action":"retry"' "$T/audit2" ||
    fail "no resume line in the resumed run's audit log"

"$CORRAL" answer "$REC" validate --abort >"$T/a.out" 2>&1 || fail "answer --abort: $(cat "$T/a.out")"
rm -f "$T"/*.rec
"$CORRAL" run --resume "$REC" >"$OUT" 2>"$ERR" </dev/null
want "exit status of an aborted resume" "$?" 1
want "its result" "$(jv "$(cat "$OUT")" .content.data.code)" aborted
[ -e "$T/writer.rec" ] && fail "an agent started for an aborted resume"
exit 0
