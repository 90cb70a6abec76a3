#!/bin/sh
# Retry loops in a workflow of steps (docs/steps.md):
#   - a validator that says retry twice sends the run back to the writer
#     (its retry: step), each time with the iteration one higher and the
#     failed try's notes as the writer's prior_context; the validator gets
#     the writer's notes; the finisher the validator's last; the run ends
#     with the finisher's reply (exit 0), and the audit log has a step and
#     a step_reply line for every try, with its iteration
#   - the agent protocol's input envelope is what each agent read:
#     context (feature id, workflow, iteration), paths filled in, the
#     action and params (the goal among them)
#   - max_iterations: a writer allowed two runs is not run a third time:
#     the step escalates (reason max_iterations), and with
#     --on-escalate=fail the run fails (exit 1) with code escalated
. "$(dirname "$0")/steps-lib.sh"

STEPS='  - {name: write, agent: writer, action: create, params: {template: short}}
  - {name: validate, agent: validator, action: validate, retry: write}
  - {name: finish, agent: finisher, action: finalize}'
steps_workflow "writer validator finisher" "$STEPS"
{
	out true proceed "Spec drafted" '["Spec drafted","3 edge cases"]' \
	    "[$(art specs/005-user-auth/spec.md create 'v1')]"
	out true proceed "Spec redrafted" '["Spec redrafted"]' \
	    "[$(art specs/005-user-auth/spec.md update 'v2')]"
	out true proceed "Spec redrafted again" '["Spec redrafted again"]' \
	    "[$(art specs/005-user-auth/spec.md update 'v3')]"
} >"$T/writer.script"
{
	out false retry "Gaps" '["Missing acceptance criteria"]'
	out false retry "Still gaps" '["Missing: error cases","Missing: limits"]'
	out true proceed "Spec complete" '["Spec complete"]'
} >"$T/validator.script"
out true proceed "Finished the spec" '["Done"]' >"$T/finisher.script"

run_steps --goal "user login"
want "exit status" "$RC" 0
want "the result" "$(field "$(cat "$OUT")" .content.text)" "Finished the spec"
want "writer runs" "$(recvs writer)" 3
want "validator runs" "$(recvs validator)" 3
want "finisher runs" "$(recvs finisher)" 1
[ "$(cat "$W/specs/005-user-auth/spec.md")" = v3 ] ||
    fail "the spec holds '$(cat "$W/specs/005-user-auth/spec.md")', not the third version"

if [ "$PROTO" = adr-007 ]; then
	r=$(recv writer 1)
	want "writer 1: feature_id" "$(field "$r" .context.feature_id)" 005-user-auth
	want "writer 1: workflow" "$(field "$r" .context.workflow)" specify
	want "writer 1: paths" "$(field "$r" .paths)" '{"spec":"specs/005-user-auth/spec.md"}'
	want "writer 1: action" "$(field "$r" .task.action)" create
	want "writer 1: params" "$(field "$r" .task.params)" '{"template":"short","goal":"user login"}'
	ITER=.context.iteration
	PRIOR=.prior_context
else
	ITER=.corral.step.iteration
	PRIOR=.corral.step.prior_context
fi
want "writer 1: iteration" "$(field "$(recv writer 1)" $ITER)" 1
want "writer 1: prior_context" "$(field "$(recv writer 1)" $PRIOR)" '[]'
want "validator 1: prior_context" "$(field "$(recv validator 1)" $PRIOR)" \
    '["Spec drafted","3 edge cases"]'
want "writer 2: iteration" "$(field "$(recv writer 2)" $ITER)" 2
want "writer 2: prior_context (the failed try's notes)" \
    "$(field "$(recv writer 2)" $PRIOR)" '["Missing acceptance criteria"]'
want "writer 3: iteration" "$(field "$(recv writer 3)" $ITER)" 3
want "writer 3: prior_context" "$(field "$(recv writer 3)" $PRIOR)" \
    '["Missing: error cases","Missing: limits"]'
want "validator 3: iteration" "$(field "$(recv validator 3)" $ITER)" 3
want "finisher: iteration" "$(field "$(recv finisher 1)" $ITER)" 1
want "finisher: prior_context" "$(field "$(recv finisher 1)" $PRIOR)" '["Spec complete"]'

# The audit log: the story of the run, try by try.
want "step lines" "$(audit_lines step | sed -n 's/.*"step":"\([a-z]*\)","iteration":\([0-9]*\).*/\1 \2/p' | tr '\n' ' ')" \
    "write 1 validate 1 write 2 validate 2 write 3 validate 3 finish 1 "
want "step_reply lines" "$(audit_lines step_reply | sed -n 's/.*"step":"\([a-z]*\)","iteration":\([0-9]*\),"success":\([a-z]*\),"recommendation":"\([a-z]*\)".*/\1 \2 \4/p' | tr '\n' ' ')" \
    "write 1 proceed validate 1 retry write 2 proceed validate 2 retry write 3 proceed validate 3 proceed finish 1 proceed "
note "retry loop: iterations, notes, audit log: ok"

# max_iterations: the writer may run twice; the validator never accepts.
steps_workflow "writer validator finisher" \
    "  - {name: write, agent: writer, action: create, max_iterations: 2}
  - {name: validate, agent: validator, action: validate, retry: write}
  - {name: finish, agent: finisher, action: finalize}"
rm -f "$T"/*.rec
out true proceed "Drafted" '["Drafted"]' >"$T/writer.script"
out false retry "Gaps" '["Never good enough"]' >"$T/validator.script"
run_steps --goal "user login" --on-escalate=fail
want "exit status with --on-escalate=fail" "$RC" 1
want "writer runs at max_iterations 2" "$(recvs writer)" 2
want "validator runs" "$(recvs validator)" 2
want "finisher runs" "$(recvs finisher)" 0
r=$(cat "$OUT")
want "the result's code" "$(field "$r" .content.data.code)" escalated
want "the reason" "$(field "$r" .content.data.reason)" max_iterations
want "the step that escalated" "$(field "$r" .content.data.step)" validate
want "the step max_iterations stopped" "$(field "$r" .content.data.blockedStep)" write
want "its notes" "$(field "$r" .content.data.notes)" '["Never good enough"]'
log_has "step validate (agent validator, iteration 2) needs an answer (max_iterations): Gaps" ||
    fail "the log does not say what needs an answer"
want "escalate lines" "$(audit_lines escalate | grep -c '"reason":"max_iterations"')" 1
note "max_iterations: escalates: ok"
exit 0
