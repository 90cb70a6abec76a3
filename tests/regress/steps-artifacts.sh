#!/bin/sh
# A step's artifacts (docs/steps.md, "Artifacts"): corral writes them into
# the workspace before the workflow goes on, and
#   - create over a file that exists is refused, and update of one that
#     does not: the file is left alone, and the step is tried again with
#     corral's note saying what was refused and why
#   - each write is an artifact line in the audit log with the SHA-256 of
#     the content, which is the file's; the step's step_reply line lists
#     its artifacts with their outcomes
#   - artifacts: {update_missing: create, create_existing: replace} lets
#     update create and create replace
. "$(dirname "$0")/steps-lib.sh"

S=specs/005-user-auth/spec.md
steps_workflow "writer validator" \
    '  - {name: write, agent: writer, action: create, max_iterations: 5}
  - {name: validate, agent: validator, action: validate, retry: write}'
{
	out true proceed "v1" '["Drafted"]' "[$(art $S create 'v1')]"
	out true proceed "v2" '["Created again"]' "[$(art $S create 'v2')]"
	out true proceed "v3" '["Updated"]' "[$(art $S update 'v3'),$(art notes.md update 'N')]"
	out true proceed "v4" '["Updated again"]' "[$(art $S update 'v4')]"
} >"$T/writer.script"
{
	out false retry "gaps" '["Gaps"]'
	out true proceed "ok" '["Complete"]'
} >"$T/validator.script"
if [ "$PROTO" = adr-007 ]; then PRIOR=.prior_context; else PRIOR=.corral.step.prior_context; fi

run_steps --goal "user login"
want "exit status" "$RC" 0
want "writer runs" "$(recvs writer)" 4
want "the spec" "$(cat "$W/$S")" v4
[ -e "$W/notes.md" ] && fail "update created notes.md, which did not exist"
want "writer 3's prior_context: the refused create" "$(field "$(recv writer 3)" $PRIOR)" \
    "[\"Created again\",\"corral could not write the artifact $S: $S: File exists\"]"
want "writer 4's prior_context: the refused update" "$(field "$(recv writer 4)" $PRIOR)" \
    '["Updated","corral could not write the artifact notes.md: notes.md: No such file or directory"]'

# The audit log: every write with its hash, every refusal with its reason.
sum=$(printf 'v4' | sha256sum | cut -d' ' -f1)
audit_lines artifact | grep -q "\"path\":\"$S\",\"outcome\":\"written\",\"bytes\":2,\"sha256\":\"$sum\"" ||
    fail "no artifact line with the spec's hash $sum: $(audit_lines artifact)"
want "artifact lines" "$(audit_lines artifact | sed -n 's/.*"outcome":"\([a-z]*\)".*/\1/p' | tr '\n' ' ')" \
    "written refused written refused written "
audit_lines step_reply | grep '"step":"write","iteration":2' |
    grep -q "\"artifacts\":\[{\"path\":\"$S\",\"operation\":\"create\",\"sha256\":\"[0-9a-f]*\",\"outcome\":\"refused\",\"reason\":\"$S: File exists\"}\]" ||
    fail "write 2's step_reply does not list the refused create: $(audit_lines step_reply | grep '"iteration":2')"
note "create over an existing file, update of a missing one: refused, retried: ok"

# The workflow may let update create and create replace.
steps_workflow "writer validator" \
    '  - {name: write, agent: writer, action: create}
  - {name: validate, agent: validator, action: validate, retry: write}' \
    'artifacts: {update_missing: create, create_existing: replace}'
rm -f "$T"/*.rec
out true proceed "both" '[]' "[$(art notes.md update 'N'),$(art $S create 'X')]" >"$T/writer.script"
out true proceed "ok" '[]' >"$T/validator.script"
run_steps --goal "user login"
want "exit status" "$RC" 0
want "writer runs" "$(recvs writer)" 1
want "notes.md, made by update" "$(cat "$W/notes.md")" N
want "the spec, replaced by create" "$(cat "$W/$S")" X
note "update_missing: create, create_existing: replace: ok"
exit 0
