#!/bin/sh
# Sessions and turn order with the real CLIs, offline against the fake
# API.  Every reply carries its CLI's session id (content.data.session_id);
# in a second corral run, a request naming it (inputs.parameters.session)
# continues that conversation: Claude Code is restarted with --resume,
# Codex runs `exec resume THREAD`, Gemini `--resume SESSION`, and the fake
# API sees the first run's turn again.  A session Claude Code does not
# have is a session_not_found error.  Turn order: a high-priority request
# to claude that times out is retried before the request queued behind
# it, which runs only after (a conversation's turns stay in order).
if [ "${1:-}" = --inner ]; then
	. "$(dirname "$0")/adapter-lib.sh"
	serve_up "$T/wf.yaml"
	feed "$(envl a1 execute 'remember apples [[say:ok-a]]')"
	feed "$(envl b1 analyze 'remember bananas [[say:ok-b]]')"
	feed "$(envl g1 summarize 'remember grapes [[say:ok-g]]')"
	wait_out 3 60 || exit 1
	serve_down 30
	[ $RC = 0 ] || exit $RC
	serve_keep one
	sc=$(grep -F '"parents":["a1"]' "$T/out.one" | sed -n 's/.*"session_id":"\([^"]*\)".*/\1/p')
	sx=$(grep -F '"parents":["b1"]' "$T/out.one" | sed -n 's/.*"session_id":"\([^"]*\)".*/\1/p')
	sg=$(grep -F '"parents":["g1"]' "$T/out.one" | sed -n 's/.*"session_id":"\([^"]*\)".*/\1/p')
	echo "$sc $sx $sg" >"$T/sessions"
	session() {
		printf ',"inputs":{"parameters":{"session":"%s"}}' "$1"
	}
	serve_up "$T/wf.yaml"
	feed "$(envl a2 execute 'what fruit did I name, claude? [[say:resumed-a]]' "$(session "$sc")")"
	feed "$(envl b2 analyze 'what fruit did I name, codex? [[say:resumed-b]]' "$(session "$sx")")"
	feed "$(envl g2 summarize 'what fruit did I name, gemini? [[say:resumed-g]]' "$(session "$sg")")"
	wait_out 3 90 || exit 1
	feed "$(envl a3 execute 'no such session [[say:x]]' "$(session 00000000-0000-4000-8000-000000000000)")"
	wait_out 4 60 || exit 1
	# Turn order at one conversation: o1 times out and is retried;
	# o2, queued behind it, must wait for the retry.  o2's own deadline
	# (ttl_ms) outlasts both of o1's turns, so it never expires while it
	# waits its turn.
	feed "$(envl o1 plan "slow turn [[slow:$((6 * SLOW))]]" ',"priority":"high"')"
	wait_err 'agent ord: claude session' 30 || exit 1
	feed "$(envl o2 plan 'next turn [[say:two]]' ',"priority":"high","ttl_ms":'$((60000 * SLOW)))"
	wait_out 6 90 || exit 1
	serve_down 30
	exit $RC
fi

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/adapter-lib.sh"
fa_require claude codex gemini

mkdir "$T/gm" "$T/dump" || fail "mkdir"
cat >"$T/wf.yaml" <<YAML
name: adapter-resume
env_allow: [ANTHROPIC_*, CLAUDE_*, DISABLE_*, IS_SANDBOX, CODEX_HOME, FAKEAPI_KEY, GEMINI_*, GOOGLE_GEMINI_BASE_URL]
retry: {max: 1, initial: 1s, factor: 1}
agents:
  coder:
    cmd: [claude]
    adapter: claude
    timeout: $((60 * SLOW))s
  cx:
    cmd: [codex]
    adapter: codex
    timeout: $((60 * SLOW))s
  gm:
    cmd: [gemini]
    cwd: gm
    adapter: {type: gemini, stderr: debug}
    timeout: $((60 * SLOW))s
  ord:
    cmd: [claude]
    adapter: claude
    timeout: $((2 * SLOW))s
routes:
  analyze: cx
  summarize: gm
  plan: ord
  "*": coder
YAML

# dump_with A B: some request the fake API got holds both strings.
dump_with() {
	grep -lF -- "$1" "$T"/dump/*.json 2>/dev/null | xargs -r grep -lF -- "$2" | grep -q .
}

export FAKEAPI_DUMP="$T/dump"
s=$(now)
fa_run "$0" || { rc=$?; fa_fail "the inner half failed (status $rc)"; }
note "two runs, three CLIs resumed, and a retried turn took $(elapsed "$s")s"
read -r sc sx sg <"$T/sessions"
[ -n "$sc" ] && [ -n "$sx" ] && [ -n "$sg" ] ||
    fa_fail "the first run's replies should name their sessions: $(cat "$T/sessions")"
grep -F '"parents":["b1"]' "$T/out.one" | grep -q "\"thread_id\":\"$sx\"" ||
    fa_fail "codex's reply should name its thread as thread_id too"

# Resumed, each in its own session, with the first run's turn.
expect_reply a2 '"text":"resumed-a"' "\"session_id\":\"$sc\""
expect_reply b2 '"text":"resumed-b"' "\"session_id\":\"$sx\""
expect_reply g2 '"text":"resumed-g"' "\"session_id\":\"$sg\""
dump_with 'what fruit did I name, claude?' 'remember apples' ||
    fa_fail "the fake API did not see claude's first turn again"
dump_with 'what fruit did I name, codex?' 'remember bananas' ||
    fa_fail "the fake API did not see codex's first turn again"
dump_with 'what fruit did I name, gemini?' 'remember grapes' ||
    fa_fail "the fake API did not see gemini's first turn again"
grep -q "agent coder: request a2 resumes claude session $sc; restarting claude" "$T/err" ||
    fa_fail "claude should be restarted to resume $sc"
grep -q 'agent cx: started codex' "$T/err" || fa_fail "codex did not run"

# A session claude does not have.
expect_reply a3 '"code":"session_not_found"' '"category":"REJECTED"' \
    '"session_id":"00000000-0000-4000-8000-000000000000"'

# Turn order: o1, its retry, then o2.
order=$(sed -n 's/.*"ev":"route","agent":"ord","id":"\(o[12]\)".*/\1/p' "$T/audit" | tr '\n' ' ')
[ "$order" = "o1 o1 o2 " ] ||
    fa_fail "o2 should wait for o1's retry: the turns went $order"
expect_reply o1 '"code":"timeout"'
expect_reply o2 '"text":"two"'
exit 0
