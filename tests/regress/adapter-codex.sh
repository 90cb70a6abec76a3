#!/bin/sh
# The codex adapter with the real Codex CLI, offline against the fake API
# (tests/fakeapi), driven through corral serve: a text turn and a tool
# turn (its command_execution items in the audit log), usage as
# trace.cost; with conversation: one the second request resumes the first
# one's thread and reports that turn's usage, not the thread's total;
# API errors (500, 400) become error envelopes within a bounded time; a
# request that times out has its codex process killed, and so has one
# running when corral gets SIGTERM.
if [ "${1:-}" = --inner ]; then
	. "$(dirname "$0")/adapter-lib.sh"
	serve_up "$T/wf.yaml"
	feed "$(envl c1 execute 'hello codex')"
	wait_out 1 30 || exit 1
	feed "$(envl c2 execute 'run it [[tool]]')"
	wait_out 2 30 || exit 1
	feed "$(envl o1 analyze 'first of one [[say:one]]')"
	wait_out 3 30 || exit 1
	feed "$(envl o2 analyze 'second of one [[say:two]]')"
	wait_out 4 30 || exit 1
	feed "$(envl e1 execute 'fail [[error500]]')"
	wait_out 5 30 || exit 1
	echo "error500 $(since "$FED_AT")" >"$T/times"
	feed "$(envl e2 execute 'fail [[error400]]')"
	wait_out 6 30 || exit 1
	feed "$(envl s1 execute "stall [[slow:$((60 * SLOW))]]" ',"ttl_ms":'$((1500 * SLOW)))"
	wait_out 7 30 || exit 1
	echo "timeout $(since "$FED_AT")" >>"$T/times"
	# The killed process and its group are gone (within 5 s x SLOW).
	pid=$(sed -n 's/.*agent coder: started codex (pid \([0-9]*\)).*/\1/p' \
	    "$T/err" | tail -n 1)
	wait_until 5 '[ "$(ps -o pid= -s "$pid" | wc -l)" = 0 ]'
	echo "slow-pid $pid $(ps -o pid= -s "$pid" | wc -l)" >>"$T/times"
	serve_down 30
	[ $RC = 0 ] || exit $RC
	serve_keep main
	# SIGTERM while a codex runs: corral kills it and exits at once.
	serve_up "$T/wf.yaml"
	feed "$(envl z1 execute "busy [[slow:$((60 * SLOW))]]")"
	wait_err 'agent coder: started codex' 30 || exit 1
	pid=$(sed -n 's/.*agent coder: started codex (pid \([0-9]*\)).*/\1/p' "$T/err")
	sleep 0.5	# let codex get into its turn (the checks hold either way)
	term_down 20
	wait_until 5 '[ "$(ps -o pid= -s "$pid" | wc -l)" = 0 ]'
	echo "shutdown $TERM_SECS rc $RC alive $(ps -o pid= -s "$pid" | wc -l)" >>"$T/times"
	exit 0
fi

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/adapter-lib.sh"
fa_require codex

cat >"$T/wf.yaml" <<YAML
name: adapter-codex
env_allow: [CODEX_HOME, FAKEAPI_KEY]
agents:
  coder:
    cmd: [codex]
    adapter: {type: codex, price: {input: 1.25, output: 10}}
    timeout: $((60 * SLOW))s
  thread:
    cmd: [codex, --skip-git-repo-check]
    adapter: {type: codex, conversation: one, intent: summarize}
    timeout: $((60 * SLOW))s
routes:
  analyze: thread
  "*": coder
YAML

s=$(now)
fa_run "$0" || { rc=$?; use_run main; fa_fail "the inner half failed (status $rc)"; }
note "7 requests through codex took $(elapsed "$s")s; $(tr '\n' ' ' <"$T/times")"
use_run main

expect_reply c1 '"type":"text","text":"fakeapi reply: Intent: execute' \
    '"model":"codex"' '"thread_id":"' \
    '"cost":{"input_tokens":100,"output_tokens":20,"usd":0.000325}' \
    '"confidence":{"score":0.9}'
expect_reply c2 '"text":"The command printed: hi"' \
    '"cost":{"input_tokens":200,"output_tokens":40,"usd":0.00065}'
grep -q '"ev":"adapter_event","agent":"coder","adapter":"codex","kind":"item.completed","request":"c2".*"item_type":"command_execution","command":"/bin/bash -lc '"'"'echo hi'"'"'","exit_code":0' "$T/audit$RUN" ||
    fa_fail "the command_execution item of c2 is not in the audit log: $(grep adapter_event "$T/audit$RUN" | head -n 3)"

# One conversation: the same thread, this turn's usage only.
expect_reply o1 '"intent":"summarize"' '"text":"one"' \
    '"cost":{"input_tokens":100,"output_tokens":20,"usd":0}'
expect_reply o2 '"text":"two"' '"cost":{"input_tokens":100,"output_tokens":20,"usd":0}'
t1=$(reply_of o1 | sed -n 's/.*"thread_id":"\([^"]*\)".*/\1/p')
t2=$(reply_of o2 | sed -n 's/.*"thread_id":"\([^"]*\)".*/\1/p')
[ -n "$t1" ] && [ "$t1" = "$t2" ] || fa_fail "o1 and o2 should share a thread: '$t1' '$t2'"
grep -q "agent thread: codex thread $t1" "$T/err$RUN" || fa_fail "the thread is not logged"

# API errors.
expect_reply e1 '"type":"error"' '"code":"api_error"' '"category":"UNAVAILABLE"' \
    'codex: We'
expect_reply e2 '"type":"error"' '"code":"api_error"' '"category":"REJECTED"' \
    'Bad request (fakeapi)'
t=$(sed -n 's/^error500 //p' "$T/times")
fcmp "$t" "<" $((10 * SLOW)) || fa_fail "the 500 error took ${t}s"

# The timeout: an expired request, its process group gone.
expect_reply s1 '"code":"timeout"' '"category":"TIMEOUT"'
grep -q 'agent coder: interrupting codex (pid [0-9]*): request s1 given up' "$T/err$RUN" ||
    fa_fail "no interrupt of codex for s1 in the log"
n=$(sed -n 's/^slow-pid [0-9]* //p' "$T/times")
[ "$n" = 0 ] || fa_fail "the timed-out codex still has $n processes"

use_run ''
set -- $(sed -n 's/^shutdown //p' "$T/times")
[ "${3:-}" = 143 ] || fa_fail "corral serve should exit 143 on SIGTERM, got ${3:-none}"
fcmp "$1" "<" $((3 * SLOW)) || fa_fail "the shutdown took ${1}s"
[ "${5:-}" = 0 ] || fa_fail "codex still runs after corral's shutdown"
exit 0
