#!/bin/sh
# A person in the loop (docs/steps.md): a validator escalates once, and
#   - corral answer VALIDATE "TEXT" answers it: corral ps shows the step
#     waiting (job, reason, agent, summary); the writer runs again with
#     the answer last in its prior_context and in task.params.answer;
#     answering a step that does not wait is refused (exit 1)
#   - a MAP client answers it: _corral/steps lists it, map/replay has the
#     step_escalated event with the summary and notes, _corral/answer
#     with action proceed goes on to the finisher (the writer is not run
#     again), and a step_answered event follows; the real MAP SDK's
#     ClientConnection answers with callExtension (tests/map/answer.mjs;
#     that part is skipped, saying so, without node or the SDK)
#   - on a terminal (a pty, driven by this script): the question, "a",
#     then the answer's text, retries the writer with it; "b" aborts the
#     run (exit 1, code aborted)
#   - with neither a control socket (--no-control) nor a terminal nothing
#     could answer: the escalation fails the run at once, saying so
. "$(dirname "$0")/steps-lib.sh"

CP="$TOOLS/ctlpeer"
[ -x "$CP" ] || skip "no ctlpeer at $CP"
command -v python3 >/dev/null 2>&1 || skip "python3 is missing (it drives the terminal)"

steps_workflow "writer validator finisher" \
    '  - {name: write, agent: writer, action: create}
  - {name: validate, agent: validator, action: validate, retry: write}
  - {name: finish, agent: finisher, action: finalize}'
script() {
	{
		out true proceed "Drafted" '["Spec drafted"]'
		out true proceed "Redrafted" '["Spec redrafted"]'
	} >"$T/writer.script"
	{
		out true escalate "The spec names no login method." \
		    '["OAuth or passwords?"]'
		out true proceed "Spec complete" '["Spec complete"]'
	} >"$T/validator.script"
	out true proceed "Finished" '[]' >"$T/finisher.script"
	rm -f "$T"/*.rec
}
if [ "$PROTO" = adr-007 ]; then
	PRIOR=.prior_context ANSWER=.task.params.answer
else
	PRIOR=.corral.step.prior_context ANSWER=.inputs.parameters.answer
fi

# 1. corral answer, from another shell.
script
start_steps --goal "user login"
wait_log "needs an answer (agent): The spec names no login method."
"$CORRAL" ps -S "$SOCK" >"$T/ps" 2>&1 || fail "corral ps: $(cat "$T/ps")"
grep -q "^  WAITING STEP" "$T/ps" && grep -q "^  validate .* agent .*validator: The spec names no login method." "$T/ps" ||
    fail "corral ps does not show the waiting step: $(cat "$T/ps")"
"$CORRAL" answer -S "$SOCK" write "x" >"$T/ans" 2>&1 && fail "answering a step that does not wait was accepted"
grep -q "step write does not wait for an answer" "$T/ans" || fail "the refusal says: $(cat "$T/ans")"
"$CORRAL" answer -S "$SOCK" validate "Use OAuth with GitHub." >"$T/ans" 2>&1 ||
    fail "corral answer: $(cat "$T/ans")"
grep -q "^answered step validate of job " "$T/ans" || fail "corral answer says: $(cat "$T/ans")"
finish_steps
want "exit status after the answer" "$RC" 0
want "writer runs" "$(recvs writer)" 2
want "the answer in the writer's prior_context" "$(field "$(recv writer 2)" $PRIOR)" \
    '["OAuth or passwords?","Use OAuth with GitHub."]'
want "the answer in its params" "$(field "$(recv writer 2)" $ANSWER)" "Use OAuth with GitHub."
audit_lines answer | grep -q '"step":"validate","action":"retry","by":"client:' ||
    fail "no answer line in the audit log: $(audit_lines answer)"
note "corral answer: ok"

# 2. A MAP client: list, see the event, proceed anyway.
script
start_steps --goal "user login"
wait_log "needs an answer (agent)"
"$CP" -s "$SOCK" -l '{"jsonrpc":"2.0","id":1,"method":"_corral/steps"}' \
    -l '{"jsonrpc":"2.0","id":2,"method":"map/replay","params":{"filter":{"eventTypes":["step_escalated"]}}}' \
    -l '{"jsonrpc":"2.0","id":3,"method":"_corral/answer","params":{"step":"validate","action":"proceed"}}' \
    -e 3 -w 10 >"$T/map" 2>&1 || fail "the MAP client: $(cat "$T/map")"
l=$(grep '"id":1' "$T/map")
want "_corral/steps: the step" "$(field "$l" .result.waiting[0].step)" validate
want "_corral/steps: the agent" "$(field "$l" .result.waiting[0].agentId)" validator
want "_corral/steps: the reason" "$(field "$l" .result.waiting[0].reason)" agent
l=$(grep '"id":2' "$T/map")
want "the step_escalated event" "$(field "$l" .result.events[0].event.type)" step_escalated
want "its summary" "$(field "$l" .result.events[0].event.data.summary)" "The spec names no login method."
want "its notes" "$(field "$l" .result.events[0].event.data.notes)" '["OAuth or passwords?"]'
l=$(grep '"id":3' "$T/map")
want "_corral/answer" "$(field "$l" .result.action)" proceed
finish_steps
want "exit status after proceed anyway" "$RC" 0
want "writer runs after proceed anyway" "$(recvs writer)" 1
want "finisher runs" "$(recvs finisher)" 1
want "the finisher's prior_context" "$(field "$(recv finisher 1)" $PRIOR)" '["OAuth or passwords?"]'
grep -q '"type":"step_answered"' "$T/audit" || fail "no step_answered event in the audit log"
note "MAP client: ok"

# 2b. The real MAP SDK's ClientConnection, as a web page would use it.
MAPDIR="${TESTDIR:-$(dirname "$0")/..}/map"
MAP_SDK_PREFIX=${MAP_SDK_PREFIX:-$(dirname "$CORRAL")/map-sdk}
export MAP_SDK_PREFIX
if ! command -v node >/dev/null 2>&1; then
	note "SKIPPED part: node is not installed (the MAP SDK client)"
elif ! sh "$MAPDIR/install.sh" >"$T/sdk.log" 2>&1; then
	note "SKIPPED part: the MAP SDK: $(grep SKIPPED "$T/sdk.log" | head -n 1)"
else
	script
	start_steps --goal "user login"
	node "$MAPDIR/answer.mjs" --socket "$SOCK" --step validate \
	    --text "Passkeys." >"$T/sdk.out" 2>&1 || fail "the SDK client: $(cat "$T/sdk.out")"
	grep -q "^waiting validate .* agent: The spec names no login method." "$T/sdk.out" &&
	    grep -q "^answered .* retry$" "$T/sdk.out" || fail "the SDK client says: $(cat "$T/sdk.out")"
	finish_steps
	want "exit status after the SDK's answer" "$RC" 0
	want "the SDK's answer in the writer's params" "$(field "$(recv writer 2)" $ANSWER)" Passkeys.
	note "MAP SDK client: ok"
fi

# 3. On a terminal: a pty this script drives.
cat >"$T/drive.py" <<'EOF'
import os, pty, select, sys, time
limit = float(sys.argv[1])
answers = sys.argv[2].split("|")
argv = sys.argv[3:]
pid, fd = pty.fork()
if pid == 0:
	os.execv(argv[0], argv)
seen = b""
everything = b""
end = time.time() + limit
def more():
	global seen, everything
	r, _, _ = select.select([fd], [], [], max(0.0, end - time.time()))
	if not r:
		sys.exit("timed out; the terminal showed: %r" % seen[-600:])
	try:
		b = os.read(fd, 4096)
	except OSError:
		b = b""
	seen += b
	everything += b
	return b
for a in answers:
	prompt, text = a.split("=", 1)
	while prompt.encode() not in seen:
		if not more():
			sys.exit("corral ended before %r; it showed: %r" % (prompt, seen[-600:]))
	seen = seen[seen.index(prompt.encode()) + len(prompt):]
	os.write(fd, text.encode() + b"\n")
while more():
	pass
_, st = os.waitpid(pid, 0)
sys.stdout.write(everything.decode("utf-8", "replace"))
sys.exit(os.WEXITSTATUS(st) if os.WIFEXITED(st) else 100)
EOF
script
python3 "$T/drive.py" $((30 * SLOW)) \
    "[a]nswer and retry, [p]roceed anyway, a[b]ort the run? =a|Your answer: =Passwords, with a second factor." \
    "$CORRAL" run "$T/wf.yaml" --goal "user login" >"$T/pty" 2>&1
RC=$?
want "exit status on a terminal" "$RC" 0
want "the terminal's answer in the writer's params" "$(field "$(recv writer 2)" $ANSWER)" \
    "Passwords, with a second factor."
grep -q "needs an answer (agent): The spec names no login method." "$T/pty" ||
    fail "the terminal did not show the summary: $(tail -c 600 "$T/pty")"
grep -q "note: OAuth or passwords?" "$T/pty" || fail "the terminal did not show the notes"
script
python3 "$T/drive.py" $((30 * SLOW)) "a[b]ort the run? =b" \
    "$CORRAL" run "$T/wf.yaml" --goal "user login" >"$T/pty" 2>&1
RC=$?
want "exit status after abort" "$RC" 1
grep -q '"code":"aborted"' "$T/pty" || fail "the result is no aborted error: $(tail -c 600 "$T/pty")"
want "finisher runs after abort" "$(recvs finisher)" 0
note "terminal: ok"

script
run_steps --goal "user login" --no-control
want "exit status when nothing can answer" "$RC" 1
want "its code" "$(field "$(cat "$OUT")" .content.data.code)" escalated
log_has "nothing can answer it: no control socket (--no-control) and no terminal" ||
    fail "the log does not say why it did not wait"
note "nothing to answer: fails at once: ok"
exit 0
