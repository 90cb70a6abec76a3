#!/bin/sh
# corral resume with real CLIs, offline against the fake API: a chain of
# requests (each reply's then: makes the next; the second's makes two,
# the third and fourth links, turns of agent three's one conversation),
# corral killed with SIGKILL while the model holds the fourth turn, then
# resumed.  The fake API is asked again only what had no answer: the
# fourth turn; the first three are answered from the log, with no model
# call.  The fourth resumes the session the third ran in, the fake API
# seeing the third turn with it: with agent three a Codex CLI with
# conversation: one (codex exec resume THREAD), then a Claude Code
# (restarted with --resume SESSION), then a Gemini CLI with conversation:
# one (gemini --resume SESSION).
if [ "${1:-}" = --inner ]; then
	. "$(dirname "$0")/adapter-lib.sh"
	# calls WORD: how many model turns the fake API got for that link.
	calls() {
		grep -lF -- "$1" "$T"/dump/*.json 2>/dev/null | wc -l
	}
	# only WORD LATER: the turns for WORD's link (a later turn of the
	# conversation, which holds LATER, is not one).
	only() {
		grep -lF -- "$1" "$T"/dump/*.json 2>/dev/null |
		    xargs -r grep -LF -- "$2" | wc -l
	}
	# both A B: the turns that hold A and B.
	both() {
		grep -lF -- "$1" "$T"/dump/*.json 2>/dev/null |
		    xargs -r grep -lF -- "$2" | wc -l
	}
	counts() {
		echo "$1 $(calls "first link") $(calls "second link")" \
		    "$(only "third link" "fourth link") $(calls "fourth link")" \
		    "$(both "fourth link" "third link")"
	}
	"$CORRAL" -v run "$T/wf.yaml" --goal 'first link [[say:one]]' \
	    --log "$T/audit" --log-sync always --no-control \
	    >"$T/out.crash" 2>"$T/err.crash" &
	pid=$!
	# The fourth turn is in the model, held; the log has the third's
	# reply.
	wait_until 60 '[ "$(calls "fourth link")" -ge 1 ] &&
	    grep -q "\"ev\":\"reply\",\"agent\":\"three\"" "$T/audit"' || {
		echo "inner: the fourth turn never reached the model" >&2
		exit 1
	}
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
	counts before >"$T/calls"
	touch "$T/gate"
	"$CORRAL" -v resume "$T/audit" --no-control >"$T/out" 2>"$T/err"
	echo "rc $?" >>"$T/calls"
	counts after >>"$T/calls"
	exit 0
fi

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/adapter-lib.sh"
fa_require codex
# Claude Code and the Gemini CLI too, each when it can be installed.
tools=codex
for t in claude gemini; do
	if sh "$FA_DIR/install.sh" "$t" >/dev/null 2>&1; then
		tools="$tools $t"
	else
		note "SKIPPED for $t: it cannot be installed here"
	fi
done

export FAKEAPI_DUMP="$T/dump"

# crash_resume TOOL: agent three is TOOL; kill, resume, check.
crash_resume() {
	rm -rf "$T/dump" "$T/audit" "$T/gate" "$T/calls" "$T/out" "$T/err" \
	    "$T/out.crash" "$T/err.crash"
	mkdir "$T/dump" || fail "mkdir"
	case $1 in
	codex)	three="{type: codex, conversation: one}"
		says="codex resumes thread" ;;
	claude)	three="claude"
		says="claude resumes session" ;;
	gemini)	three="{type: gemini, conversation: one}"
		says="gemini resumes session" ;;
	esac
	cat >"$T/wf.yaml" <<YAML
name: adapter-crash-resume
env_allow: [ANTHROPIC_*, CLAUDE_*, DISABLE_*, IS_SANDBOX, CODEX_HOME, FAKEAPI_KEY, GEMINI_*, GOOGLE_GEMINI_BASE_URL]
start: execute
agents:
  one:
    cmd: [codex]
    adapter: {type: codex, then: [{intent: analyze, task: "second link [[say:two]]"}]}
    timeout: $((60 * SLOW))s
  two:
    cmd: [codex]
    adapter: {type: codex, then: [{intent: summarize, task: "third link [[say:three]]"}, {intent: summarize, task: "fourth link [[hold:$T/gate]]"}]}
    timeout: $((60 * SLOW))s
  three:
    cmd: [$1]
    adapter: $three
    timeout: $((60 * SLOW))s
routes:
  execute: one
  analyze: two
  summarize: three
YAML
	s=$(now)
	fa_run "$0" || { rc=$?; fa_fail "$1: the inner half failed (status $rc)"; }
	note "$1: a crash and a resume took $(elapsed "$s")s"
	read -r _ b1 b2 b3 b4 bt <<EOF
$(sed -n 's/^before //p' "$T/calls" | sed 's/^/x /')
EOF
	read -r _ a1 a2 a3 a4 at <<EOF
$(sed -n 's/^after //p' "$T/calls" | sed 's/^/x /')
EOF
	note "$1: model turns before the crash: $b1 $b2 $b3 $b4 ($bt in the session); after the resume: $a1 $a2 $a3 $a4 ($at)"
	grep -qx 'rc 0' "$T/calls" || fa_fail "$1: corral resume failed: $(cat "$T/calls")"
	[ "$b1" -ge 1 ] && [ "$b2" -ge 1 ] && [ "$b3" -ge 1 ] && [ "$b4" -ge 1 ] ||
	    fa_fail "$1: before the crash every link should have reached the model: $b1 $b2 $b3 $b4"
	[ "$bt" = "$b4" ] ||
	    fa_fail "$1: before the crash the fourth link should have been a turn of the third's session"
	[ "$a1" = "$b1" ] && [ "$a2" = "$b2" ] && [ "$a3" = "$b3" ] ||
	    fa_fail "$1: the links answered before the crash were asked again: first $b1 -> $a1, second $b2 -> $a2, third $b3 -> $a3"
	[ "$a4" -gt "$b4" ] || fa_fail "$1: the fourth link was not asked again: $b4 -> $a4"
	[ "$at" = "$a4" ] ||
	    fa_fail "$1: the fourth link asked again did not resume the third's session: $at of $a4 turns carry it"
	grep -q "agent three: $says .* from the log" "$T/err" ||
	    fa_fail "$1: corral does not say it resumes the logged session"
	grep -q '"ev":"resume_session","agent":"three".*"session":"' "$T/audit" ||
	    fa_fail "$1: the log has no resume_session line for three"
	grep -q '"agent":{"id":"three".*"intent":"summarize","task":"fourth link' "$T/out" ||
	    fa_fail "$1: the resumed run's result has not the fourth link's: $(cat "$T/out")"
	grep -q '"ev":"redelivery","agent":"three".*"redelivery":1' "$T/audit" ||
	    fa_fail "$1: the log does not say the fourth link went twice"
	[ "$(grep -c '"ev":"recorded"' "$T/audit")" = 3 ] ||
	    fa_fail "$1: the log should say three links were answered from it: $(grep '"ev":"recorded"' "$T/audit")"
}

for tool in $tools; do
	crash_resume "$tool"
done
exit 0
