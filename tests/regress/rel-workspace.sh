#!/bin/sh
# Workspace confinement: an agent's reply carries outputs.artifacts with
# path and content; corral writes them under workspace: and nowhere else.
#   - relative paths, with subdirectories, are written (mode 0600, the
#     content's JSON escapes decoded); update replaces an existing file
#   - an absolute path, "..", a symlink in the workspace to a file outside
#     and one to a directory outside are refused: the file outside is
#     untouched (or not created), corral logs "artifact refused", the
#     audit log has an artifact event with outcome refused, and the agent
#     gets an artifact_refused notice; the reply itself is still delivered
#   - operation create refuses an existing file; update refuses a missing
#     one
. "$(dirname "$0")/rel-lib.sh"

W="$T/ws"
O="$T/outside"
mkdir "$W" "$O"
printf 'ORIGINAL\n' >"$O/target.txt"
ln -s "$O/target.txt" "$W/link-file"
ln -s "$O" "$W/link-dir"

# One reply per request, in order; @ID@ is the request's trace.id.
reply() {	# ARTIFACTS-JSON
	printf '{"protocol":"multiagent-1.0","role":"agent","intent":"finalize","task":"t","content":{"type":"text","text":"wrote"},"outputs":{"artifacts":[%s]},"confidence":{"score":0.9},"trace":{"parents":["@ID@"]}}\n' "$1"
}
{
	reply '{"path":"a.txt","content":"hello\nworld \"q\" \u00e9"},{"kind":"file","name":"b","path":"sub/dir/b.txt","content":"B","operation":"create"}'
	reply "{\"path\":\"$O/abs.txt\",\"content\":\"x\"}"
	reply '{"path":"../outside/dots.txt","content":"x"},{"path":"sub/../../outside/dots2.txt","content":"x"}'
	reply '{"path":"link-file","content":"PWNED"}'
	reply '{"path":"link-dir/new.txt","content":"PWNED"}'
	reply '{"path":"a.txt","content":"clobbered","operation":"create"}'
	reply '{"path":"missing.txt","content":"x","operation":"update"}'
	reply '{"path":"a.txt","content":"updated","operation":"update"}'
} >"$T/script"

cat >"$T/wf.yaml" <<YAML
workspace: $W
agents:
  w:
    cmd: [$RA, --record, $T/rec, --script, $T/script]
routes:
  "*": w
YAML

serve_start "$T/wf.yaml" --log "$AUD" -v
n=0
# step WHAT: send the next request and wait for its result (the reply).
step() {
	n=$((n + 1))
	"$RG" env 1 --id s- --start $n --task script >&8
	wait_result "s-$n"
	result_of "s-$n" | grep -q '"text":"wrote"' ||
	    fail "$1: expected the agent's reply as the result, got: $(result_of "s-$n" | cut -c1-300)"
}
# refused WHAT PATH-IN-LOG: corral logged, recorded and reported a refusal.
refused() {
	_p=$2
	wait_for 'grep -qF "corral: agent w: artifact refused: $_p" "$ERR"' 5 ||
	    fail "$1: no 'artifact refused: $2' in the log; saw: $(grep -F 'artifact' "$ERR" | tail -n 3)"
	_want=$3
	wait_for '[ "$(grep -c "^notice w artifact_refused$" "$T/rec")" -ge "$_want" ]' 5 ||
	    fail "$1: the agent got $(grep -c '^notice w artifact_refused$' "$T/rec") artifact_refused notices, expected $3"
}
mode() {
	stat -c %a "$1"
}

step "good paths"
[ -f "$W/a.txt" ] || fail "a.txt was not written in the workspace"
[ "$(cat "$W/a.txt")" = "$(printf 'hello\nworld "q" \303\251')" ] ||
    fail "a.txt holds '$(cat "$W/a.txt")', not the decoded content"
[ "$(cat "$W/sub/dir/b.txt")" = B ] || fail "sub/dir/b.txt was not written"
[ "$(mode "$W/a.txt")" = 600 ] && [ "$(mode "$W/sub/dir/b.txt")" = 600 ] ||
    fail "artifacts must be mode 0600: a.txt $(mode "$W/a.txt"), b.txt $(mode "$W/sub/dir/b.txt")"
[ "$(mode "$W/sub")" = 700 ] || fail "directories must be mode 0700: sub is $(mode "$W/sub")"

step "absolute path"
refused "absolute path" "absolute paths are refused" 1
[ -e "$O/abs.txt" ] && fail "an absolute path was written outside the workspace"

step "dot-dot"
refused "dot-dot" '".." is refused' 2
[ -e "$O/dots.txt" ] || [ -e "$O/dots2.txt" ] && fail "a .. path was written outside"

step "symlink to a file outside"
refused "symlink to a file" "link-file leads out of the workspace" 3
[ "$(cat "$O/target.txt")" = ORIGINAL ] || fail "the file outside was changed through a symlink: $(cat "$O/target.txt")"

step "symlink to a directory outside"
refused "symlink to a directory" "link-dir/new.txt leads out of the workspace" 4
[ -e "$O/new.txt" ] && fail "a file was created outside through a symlinked directory"

step "create on an existing file"
refused "create on an existing file" "a.txt: File exists" 5
[ "$(cat "$W/a.txt")" = "$(printf 'hello\nworld "q" \303\251')" ] ||
    fail "operation create replaced an existing file"

step "update of a missing file"
refused "update of a missing file" "missing.txt: No such file or directory" 6
[ -e "$W/missing.txt" ] && fail "operation update created a missing file"

step "update of an existing file"
[ "$(cat "$W/a.txt")" = updated ] || fail "operation update did not replace a.txt: $(cat "$W/a.txt")"
[ "$(mode "$W/a.txt")" = 600 ] || fail "a.txt is mode $(mode "$W/a.txt") after update"

serve_eof
corral_wait 10
expect_rc 0
[ "$(ls "$O" | tr '\n' ' ')" = "target.txt " ] || fail "files appeared outside the workspace: $(ls "$O")"
[ "$(aud_count artifact outcome written)" -eq 3 ] ||
    fail "expected 3 artifact events written, got $(aud_count artifact outcome written)"
# Each refused artifact is an event (dot-dot had two).
[ "$(aud_count artifact outcome refused)" -eq 7 ] ||
    fail "expected 7 artifact events refused, got $(aud_count artifact outcome refused)"
set -- $(run_end_check)
[ "$2" -eq 8 ] || fail "expected all 8 replies delivered, run_end says $*"
expect_no_leftovers
exit 0
