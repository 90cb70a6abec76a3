#!/bin/sh
# Steps and the agents' protocols (docs/protocol.md, "ADR-007 agents",
# "Steps served by multiagent-1.0 agents"):
#   - an ADR-007 writer, a multiagent-1.0 validator that says nothing of
#     steps (an error reply is a retry, a text reply proceeds, its text
#     the one note), and a step routed by intent (routes:) to a
#     multiagent-1.0 agent: the run goes through all of them; the
#     multiagent-1.0 agents get the step in the corral member, the notes
#     in inputs.context
#   - a malformed ADR-007 output envelope (no recommendation, then an
#     artifact without its operation) is rejected naming the field, and
#     the step is tried again with corral's note saying what was wrong;
#     the third, valid, answer goes on
#   - a multiagent-1.0 reply whose step member breaks a rule is tried
#     again the same way
#   - corral serve: each input walks the steps as its own job
#   - a step that names a capability goes to an agent that has it; one
#     that no agent has fails the run with no_agent, saying which
. "$(dirname "$0")/steps-lib.sh"

PROTO=adr-007
{
	printf 'name: mixed\nworkspace: %s\n' "$W"
	printf 'agents:\n'
	agent_yaml writer
	PROTO=multiagent-1.0 agent_yaml validator
	PROTO=multiagent-1.0 agent_yaml summarizer
	printf 'routes:\n  summarize: summarizer\n'
	printf 'steps:\n'
	printf '  - {name: write, agent: writer, action: create}\n'
	printf '  - {name: validate, agent: validator, action: validate, retry: write}\n'
	printf '  - {name: sum, intent: summarize, action: summarize}\n'
} >"$T/wf.yaml"
ma() {
	printf '{"protocol":"multiagent-1.0","role":"agent","intent":"execute","task":"t","content":{"type":"%s","text":"%s"}%s}\n' \
	    "$1" "$2" "${3:-}"
}
{
	out true proceed "Drafted" '["Drafted"]' "[$(art spec.md create 'v1')]"
	out true proceed "Redrafted" '["Redrafted"]' "[$(art spec.md update 'v2')]"
} >"$T/writer.script"
{
	ma error "Missing acceptance criteria"
	ma text "Looks complete"
} >"$T/validator.script"
ma text "Summary: done" >"$T/summarizer.script"

run_steps --goal "user login"
want "exit status" "$RC" 0
want "the result" "$(field "$(cat "$OUT")" .content.text)" "Summary: done"
want "writer runs" "$(recvs writer)" 2
want "validator runs" "$(recvs validator)" 2
want "the ADR-007 writer's prior_context after the error reply" \
    "$(field "$(recv writer 2)" .prior_context)" '["Missing acceptance criteria"]'
r=$(recv validator 1)
want "the multiagent-1.0 validator's task" "$(field "$r" .task)" validate
want "its step" "$(field "$r" .corral.step.name)" validate
want "its notes, in inputs.context" "$(field "$r" .inputs.context)" Drafted
want "the step routed by intent" "$(field "$(recv summarizer 1)" .intent)" summarize
want "its notes, the validator's text" "$(field "$(recv summarizer 1)" .corral.step.prior_context)" \
    '["Looks complete"]'
note "ADR-007, multiagent-1.0 and intent routing in one workflow: ok"

# Malformed output envelopes.
rm -f "$T"/*.rec
{
	printf '{"success":true,"summary":"no recommendation","artifacts":[]}\n'
	printf '{"success":true,"summary":"s","artifacts":[{"path":"a.md","content":"A"}],"recommendation":"proceed"}\n'
	out true proceed "Fine now" '["Fine"]' "[$(art a.md create 'A')]"
} >"$T/writer.script"
ma text "ok" >"$T/validator.script"
run_steps --goal "user login"
want "exit status after malformed outputs" "$RC" 0
want "writer runs" "$(recvs writer)" 3
want "writer 2's prior_context" "$(field "$(recv writer 2)" .prior_context)" \
    '["the previous output envelope was invalid: recommendation is required (proceed, retry or escalate)"]'
want "writer 3's prior_context" "$(field "$(recv writer 3)" .prior_context)" \
    '["the previous output envelope was invalid: artifacts[0].operation is required (create or update)"]'
log_has "agent writer: invalid output envelope: recommendation is required" ||
    fail "the log does not name the field"
audit_lines rejected | grep -q '"agent":"writer".*"code":"invalid_output","path":"recommendation"' ||
    fail "no rejected line naming the field: $(audit_lines rejected)"
[ "$(cat "$W/a.md")" = A ] || fail "a.md was not written"
note "malformed output envelope: rejected, retried: ok"

# A multiagent-1.0 step member that breaks a rule.
rm -f "$T"/*.rec
out true proceed "Drafted" '[]' >"$T/writer.script"
{
	ma text "later" ',"step":{"recommendation":"later"}'
	ma text "ok"
} >"$T/validator.script"
run_steps --goal "user login"
want "exit status" "$RC" 0
want "validator runs" "$(recvs validator)" 2
want "the validator's notes after it" "$(field "$(recv validator 2)" .corral.step.prior_context)" \
    '["the previous reply was invalid: step.recommendation must be proceed, retry or escalate"]'
note "invalid step member: retried: ok"

# corral serve: each input is a job of its own that walks the steps.
rm -f "$T"/*.rec
out true proceed "Drafted" '[]' >"$T/writer.script"
ma text "ok" >"$T/validator.script"
{
	envelope in-1 execute "first goal"
	envelope in-2 execute "second goal"
} | timeout $((30 * SLOW)) "$CORRAL" serve "$T/wf.yaml" >"$OUT" 2>"$ERR"
want "serve's exit status" "$?" 0
want "serve's results" "$(wc -l <"$OUT" | tr -d ' ')" 2
want "writer runs in serve" "$(recvs writer)" 2
grep -q '"parents":\[[^]]*"in-1"' "$OUT" && grep -q '"parents":\[[^]]*"in-2"' "$OUT" ||
    fail "the results do not name their inputs: $(cat "$OUT")"
note "serve: ok"

# A step by capability.
rm -f "$T"/*.rec
{
	printf 'workspace: %s\nagents:\n' "$W"
	agent_yaml writer
	PROTO=multiagent-1.0 agent_yaml validator
	printf '    capabilities: [spec-review]\n'
	printf 'steps:\n'
	printf '  - {name: write, agent: writer, action: create}\n'
	printf '  - {name: review, capability: spec_review, action: review, retry: write}\n'
} >"$T/wf.yaml"
out true proceed "Drafted" '[]' >"$T/writer.script"
ma text "ok" >"$T/validator.script"
run_steps --goal "user login"
want "exit status of a step by capability" "$RC" 0
want "the capable agent's runs" "$(recvs validator)" 1
audit_lines step | grep -q '"step":"review","iteration":1,"capability":"spec_review"' ||
    fail "the step line does not name the capability: $(audit_lines step)"
sed -i 's/capability: spec_review/capability: translation/' "$T/wf.yaml"
run_steps --goal "user login"
want "exit status when no agent has the capability" "$RC" 1
want "its code" "$(field "$(cat "$OUT")" .content.data.code)" no_agent
log_has "no agent has the capability 'translation' that step review needs" ||
    fail "the log does not say which capability"
note "steps by capability: ok"
exit 0
