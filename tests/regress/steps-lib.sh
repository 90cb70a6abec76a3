# Shared helpers for the workflow-of-steps regress scripts (steps-*.sh).
#
# Source it first thing:  . "$(dirname "$0")/steps-lib.sh"
#
# It sources lib.sh and adds:
#   SA      the scripted agent (tests/tools/stepagent.c): it answers its
#           Nth request with the Nth line of $T/NAME.script and records
#           every request in $T/NAME.rec ("recv LINE")
#   W       the workspace, $T/ws
#   PROTO   the protocol of the agents steps_workflow writes (adr-007
#           unless the script sets it)
# and functions to write agents' answers and the workflow.

. "$(dirname "$0")/lib.sh"

SA="$TOOLS/stepagent"
[ -x "$SA" ] || skip "no stepagent at $SA"
W="$T/ws"
: "${PROTO:=adr-007}"
XDG_RUNTIME_DIR="$T/xdg"
export XDG_RUNTIME_DIR
mkdir -m 700 "$XDG_RUNTIME_DIR" || fail "mkdir $XDG_RUNTIME_DIR"
unset CORRAL_CONTROL

# out SUCCESS RECOMMENDATION SUMMARY [NOTES [ARTIFACTS]]: one answer line,
# an ADR-007 output envelope, or (PROTO=multiagent-1.0) the reply that
# says the same; NOTES and ARTIFACTS are JSON arrays.
out() {
	if [ "$PROTO" = adr-007 ]; then
		printf '{"success":%s,"summary":"%s","artifacts":%s,"notes":%s,"recommendation":"%s"}\n' \
		    "$1" "$3" "${5:-[]}" "${4:-[]}" "$2"
	else
		printf '{"protocol":"multiagent-1.0","role":"agent","intent":"execute","task":"t","content":{"type":"text","text":"%s"},"outputs":{"artifacts":%s},"step":{"success":%s,"notes":%s,"recommendation":"%s"}}\n' \
		    "$3" "${5:-[]}" "$1" "${4:-[]}" "$2"
	fi
}

# art PATH OPERATION CONTENT: one artifact, as JSON.
art() {
	printf '{"path":"%s","operation":"%s","content":"%s"}' "$1" "$2" "$3"
}

# agent_yaml NAME: the agents: entry of a scripted agent NAME.
agent_yaml() {
	printf '  %s:\n    cmd: [%s, --script, %s/%s.script, --record, %s/%s.rec]\n' \
	    "$1" "$SA" "$T" "$1" "$T" "$1"
	[ "$PROTO" = multiagent-1.0 ] || printf '    protocol: %s\n' "$PROTO"
}

# steps_workflow AGENTS STEPS [TOP]: write $T/wf.yaml with the scripted
# agents AGENTS (names, space-separated), the steps: lines STEPS, and
# TOP's top-level lines.
steps_workflow() {
	{
		printf 'name: specify\nworkspace: %s\nfeature_id: 005-user-auth\n' "$W"
		printf 'paths:\n  spec: specs/{feature_id}/spec.md\n'
		[ -n "${3:-}" ] && printf '%s\n' "$3"
		printf 'agents:\n'
		for _a in $1; do
			agent_yaml "$_a"
		done
		printf 'steps:\n%s\n' "$2"
	} >"$T/wf.yaml"
}

# recv NAME N: the Nth request agent NAME read (a JSON line).
recv() {
	awk -v n="$2" '/^recv / && ++i == n { print substr($0, 6); exit }' \
	    "$T/$1.rec" 2>/dev/null
}

# recvs NAME: how many requests agent NAME read.
recvs() {
	grep -c '^recv ' "$T/$1.rec" 2>/dev/null || echo 0
}

# field JSON PATH: a value of a JSON text, by a jq-like path of object
# keys and array indexes (".context.iteration", ".prior_context[0]"),
# printed compactly (strings bare).  Nothing is printed unless JSON is
# one JSON text and every key and index of PATH is there: a key that is
# missing is not taken for a null (jq's own path would be).  jq, not
# python3, which starts far slower (here, behind a pyenv shim, about 1 s
# of CPU each).
field() {
	printf '%s' "$1" | jq -s -r -c --arg p "$2" '
	  if length != 1 then error("not one JSON text") else .[0] end
	  | reduce ($p | scan("\\.([A-Za-z_][A-Za-z0-9_]*)|\\[([0-9]+)\\]")) as $s (.;
	      if $s[0] != null then
	        if type == "object" and has($s[0]) then .[$s[0]]
	        else error("no \($s[0])") end
	      else ($s[1] | tonumber) as $i
	        | if type == "array" and $i < length then .[$i]
	          else error("no [\($i)]") end
	      end)' 2>/dev/null
}

# want WHAT GOT EXPECTED: fail unless GOT is EXPECTED.
want() {
	[ "$2" = "$3" ] || fail "$1: expected '$3', got '$2'"
}

# run_steps ARGS...: corral run $T/wf.yaml with ARGS, stdout in $OUT,
# stderr in $ERR, its exit status in RC; waits for it to end (a safety
# deadline of 30 s times SLOW).
run_steps() {
	timeout $((30 * SLOW)) "$CORRAL" run "$T/wf.yaml" --log "$T/audit" \
	    "$@" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
}

# start_steps ARGS...: corral run in the background (pid CORRAL_PID),
# with its control socket at $T/ctl.sock.
start_steps() {
	SOCK="$T/ctl.sock"
	# Emptied here: a wait_log must never find the previous run's line
	# before this corral has opened (and emptied) the file itself.
	: >"$OUT"
	: >"$ERR"
	"$CORRAL" run "$T/wf.yaml" --log "$T/audit" --control "$SOCK" "$@" \
	    >"$OUT" 2>"$ERR" </dev/null &
	CORRAL_PID=$!
}

# finish_steps: wait for the background corral to end; its status in RC.
finish_steps() {
	wait_for '! kill -0 $CORRAL_PID 2>/dev/null' 30 ||
	    fail "corral run did not end within 30s (x$SLOW)"
	wait "$CORRAL_PID"
	RC=$?
	CORRAL_PID=
}

# audit_lines EV: the audit log's lines of event EV.
audit_lines() {
	grep -F "\"ev\":\"$1\"" "$T/audit" 2>/dev/null
}

command -v jq >/dev/null 2>&1 || skip "jq is missing (the scripts read JSON with it)"
