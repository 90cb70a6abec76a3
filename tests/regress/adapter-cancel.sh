#!/bin/sh
# Cancelling requests at the real CLIs, offline against the fake API: one
# slow request each to Claude Code, Codex and Gemini, cancelled with
# `corral cancel` once the fake API is streaming its answer.  Each ends at
# once with code cancelled, and the CLI's work stops: Claude Code's turn
# is interrupted (its control request) and the same process answers the
# next request; Codex's and Gemini's process groups are gone after
# SIGINT.
if [ "${1:-}" = --inner ]; then
	. "$(dirname "$0")/adapter-lib.sh"
	S="$T/ctl.sock"
	serve_up "$T/wf.yaml" --control "$S"
	feed "$(envl k1 execute 'cancel-claude [[slow:30]]')"
	feed "$(envl k2 analyze 'cancel-codex [[slow:30]]')"
	feed "$(envl k3 summarize 'cancel-gemini [[slow:30]]')"
	# Each CLI has its request (the fake API logs a request only once
	# it has answered, so its log cannot say so earlier).
	wait_err 'agent coder: claude session' 40 || exit 1
	wait_err 'agent cx: started codex' 40 || exit 1
	wait_err 'agent gm: started gemini' 40 || exit 1
	sleep 2		# they are at work: the answers take 30 s
	t0=$(date +%s.%N)
	"$CORRAL" cancel -S "$S" --reason "test" k1 k2 k3 >"$T/cancel.out" 2>&1 ||
	    { cat "$T/cancel.out" >&2; exit 1; }
	wait_out 3 10 || exit 1
	echo "replies $(since "$t0")" >"$T/times"
	for t in codex gemini; do
		pid=$(sed -n "s/.*agent .*: started $t (pid \\([0-9]*\\)).*/\\1/p" "$T/err" | tail -n 1)
		n=$((50 * SLOW))
		while [ $n -gt 0 ] && [ "$(ps -o pid= -s "$pid" | wc -l)" != 0 ]; do
			sleep 0.1
			n=$((n - 1))
		done
		echo "$t-left $(ps -o pid= -s "$pid" | wc -l) after $(since "$t0")" >>"$T/times"
	done
	wait_err 'agent coder: the interrupted turn ended' 20 || exit 1
	feed "$(envl k4 execute 'after the cancel [[say:still here]]')"
	wait_out 4 60 || exit 1
	serve_down 30
	exit $RC
fi

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/adapter-lib.sh"
fa_require claude codex gemini

mkdir "$T/gm" || fail "mkdir"
cat >"$T/wf.yaml" <<YAML
name: adapter-cancel
env_allow: [ANTHROPIC_*, CLAUDE_*, DISABLE_*, IS_SANDBOX, CODEX_HOME, FAKEAPI_KEY, GEMINI_*, GOOGLE_GEMINI_BASE_URL]
agents:
  coder:
    cmd: [claude]
    adapter: claude
    timeout: $((90 * SLOW))s
  cx:
    cmd: [codex]
    adapter: codex
    timeout: $((90 * SLOW))s
  gm:
    cmd: [gemini]
    cwd: gm
    adapter: {type: gemini, stderr: debug}
    timeout: $((90 * SLOW))s
routes:
  analyze: cx
  summarize: gm
  "*": coder
YAML

s=$(now)
fa_run "$0" || fa_fail "the inner half failed (status $?)"
note "cancelling at three CLIs took $(elapsed "$s")s; $(tr '\n' ' ' <"$T/times")"

for r in k1 k2 k3; do
	expect_reply "$r" '"code":"cancelled"' '"category":"REJECTED"' \
	    '"retryable":false' 'cancelled by client:'
done
grep -q 'cancelled k1 (inflight at coder)' "$T/cancel.out" &&
    grep -q 'cancelled k2 (inflight at cx)' "$T/cancel.out" &&
    grep -q 'cancelled k3 (inflight at gm)' "$T/cancel.out" ||
    fa_fail "corral cancel said: $(cat "$T/cancel.out")"
t=$(sed -n 's/^replies //p' "$T/times")
fcmp "$t" "<" $((5 * SLOW)) || fa_fail "the cancelled requests took ${t}s to end"

# Claude Code: interrupted, and the same process goes on.
grep -q 'agent coder: interrupting claude (request k1 given up)' "$T/err" ||
    fa_fail "claude was not interrupted"
expect_reply k4 '"text":"still here"'
[ "$(grep -c 'corral: agent coder: spawned' "$T/err")" = 1 ] ||
    fa_fail "claude should not have been restarted: $(grep 'coder: spawned' "$T/err")"

# Codex and Gemini: SIGINT to the group, and nothing of them is left.
grep -q 'agent cx: interrupting codex (pid [0-9]*): request k2 given up' "$T/err" ||
    fa_fail "codex was not interrupted"
grep -q 'agent gm: interrupting gemini (pid [0-9]*): request k3 given up' "$T/err" ||
    fa_fail "gemini was not interrupted"
grep -q '^codex-left 0 ' "$T/times" || fa_fail "codex still runs: $(cat "$T/times")"
grep -q '^gemini-left 0 ' "$T/times" || fa_fail "gemini still runs: $(cat "$T/times")"
exit 0
