#!/bin/sh
# A reply that earns its agent a notice (one of its artifacts is refused)
# is still handled as a whole, exactly as if the notice had not been sent:
#   - weak (confidence 0.2): it goes to the critic for reflection, and the
#     critic's finalize is the result (corral once exited 70 here,
#     "envelope_reflect produced an invalid envelope");
#   - confident, with next_actions: the next action runs and its finalize
#     is the result (they once vanished silently).
# The refused artifact is never written outside the workspace.
. "$(dirname "$0")/lib.sh"
. "$TESTDIR/tools/wflib.sh"

LOG="$T/audit.ndjson"
mkdir -p "$T/ws"

# script NAME REPLY: an agent that answers every request with REPLY and
# ignores notices and control frames.
script() {
	cat >"$T/$1" <<SH
#!/bin/sh
while IFS= read -r l; do
	case \$l in *'"notice"'*|*'"jsonrpc"'*) continue ;; esac
	printf '%s\n' '$2'
done
SH
	chmod +x "$T/$1"
}

script weak.sh '{"protocol":"multiagent-1.0","role":"agent","intent":"analyze","task":"t","content":{"type":"text","text":"weak answer"},"confidence":{"score":0.2},"outputs":{"artifacts":[{"path":"../escaped","content":"x"}]}}'
script next.sh '{"protocol":"multiagent-1.0","role":"agent","intent":"analyze","task":"t","content":{"type":"text","text":"go on"},"confidence":{"score":0.9},"outputs":{"artifacts":[{"path":"../escaped","content":"x"}],"next_actions":[{"intent":"summarize","task":"sum it up"}]}}'

for case in weak next; do
	cat >"$T/$case.yaml" <<YAML
workspace: $T/ws
agents:
  worker:
    cmd: [$T/$case.sh]
  critic:
    cmd: [$WA, --intent, finalize, --text, "final from critic"]
routes:
  reflect: critic
  summarize: critic
  "*": worker
YAML
	rm -f "$LOG"
	corral_run 20 run "$T/$case.yaml" --goal go --log "$LOG"
	[ "$RC" = 70 ] && fail "$case: corral aborted (exit 70): $(grep -F fatal "$ERR" | head -n 1)"
	expect_rc 0
	jq -e '.intent == "finalize" and .content.text == "final from critic"' "$OUT" >/dev/null ||
	    fail "$case: the result is not the critic's finalize: $(head -c 300 "$OUT")"
	grep -q '"ev":"rejected".*"code":"artifact_refused"' "$LOG" ||
	    fail "$case: the refused artifact was not recorded as a notice"
	[ -e "$T/escaped" ] && fail "$case: an artifact was written outside the workspace"
	expect_audit_ok "$LOG"
done
exit 0
