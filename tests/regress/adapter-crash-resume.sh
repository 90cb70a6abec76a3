#!/bin/sh
# corral resume with the real Codex CLI, offline against the fake API: a
# chain of three requests (each reply's then: makes the next), corral
# killed with SIGKILL while the model holds the third turn, then resumed.
# The fake API is asked again only what had no answer: the third turn;
# the first two are answered from the log, with no model call.
if [ "${1:-}" = --inner ]; then
	. "$(dirname "$0")/adapter-lib.sh"
	# calls WORD: how many model turns the fake API got for that link.
	calls() {
		grep -lF -- "$1" "$T"/dump/*.json 2>/dev/null | wc -l
	}
	"$CORRAL" -v run "$T/wf.yaml" --goal 'first link [[say:one]]' \
	    --log "$T/audit" --log-sync always --no-control \
	    >"$T/out.crash" 2>"$T/err.crash" &
	pid=$!
	# The third turn is in the model, held; the log has its route.
	wait_until 60 '[ "$(calls "third link")" -ge 1 ] &&
	    grep -q "\"ev\":\"route\",\"agent\":\"three\"" "$T/audit"' || {
		echo "inner: the third turn never reached the model" >&2
		exit 1
	}
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
	echo "before $(calls "first link") $(calls "second link") $(calls "third link")" >"$T/calls"
	touch "$T/gate"
	"$CORRAL" -v resume "$T/audit" --no-control >"$T/out" 2>"$T/err"
	echo "rc $?" >>"$T/calls"
	echo "after $(calls "first link") $(calls "second link") $(calls "third link")" >>"$T/calls"
	exit 0
fi

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/adapter-lib.sh"
fa_require codex

mkdir "$T/dump" || fail "mkdir"
cat >"$T/wf.yaml" <<YAML
name: adapter-crash-resume
env_allow: [CODEX_HOME, FAKEAPI_KEY]
start: execute
agents:
  one:
    cmd: [codex]
    adapter: {type: codex, then: [{intent: analyze, task: "second link [[say:two]]"}]}
    timeout: $((60 * SLOW))s
  two:
    cmd: [codex]
    adapter: {type: codex, then: [{intent: summarize, task: "third link [[hold:$T/gate]]"}]}
    timeout: $((60 * SLOW))s
  three:
    cmd: [codex]
    adapter: codex
    timeout: $((60 * SLOW))s
routes:
  execute: one
  analyze: two
  summarize: three
YAML

export FAKEAPI_DUMP="$T/dump"
s=$(now)
fa_run "$0" || { rc=$?; fa_fail "the inner half failed (status $rc)"; }
note "a crash and a resume took $(elapsed "$s")s"
read -r _ b1 b2 b3 <<EOF
$(sed -n 's/^before //p' "$T/calls" | sed 's/^/x /')
EOF
read -r _ a1 a2 a3 <<EOF
$(sed -n 's/^after //p' "$T/calls" | sed 's/^/x /')
EOF
note "model turns before the crash: $b1 $b2 $b3; after the resume: $a1 $a2 $a3"
grep -qx 'rc 0' "$T/calls" || fa_fail "corral resume failed: $(cat "$T/calls")"
[ "$b1" -ge 1 ] && [ "$b2" -ge 1 ] && [ "$b3" -ge 1 ] ||
    fa_fail "before the crash every link should have reached the model: $b1 $b2 $b3"
[ "$a1" = "$b1" ] && [ "$a2" = "$b2" ] ||
    fa_fail "the links answered before the crash were asked again: first $b1 -> $a1, second $b2 -> $a2"
[ "$a3" -gt "$b3" ] || fa_fail "the third link was not asked again: $b3 -> $a3"
grep -q '"agent":{"id":"three".*"intent":"summarize","task":"third link' "$T/out" ||
    fa_fail "the resumed run's result is not the third link's: $(cat "$T/out")"
grep -q '"ev":"redelivery","agent":"three".*"redelivery":1' "$T/audit" ||
    fa_fail "the log does not say the third link went twice"
[ "$(grep -c '"ev":"recorded"' "$T/audit")" = 2 ] ||
    fa_fail "the log should say two links were answered from it: $(grep '"ev":"recorded"' "$T/audit")"
exit 0
