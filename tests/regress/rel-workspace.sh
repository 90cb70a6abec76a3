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

{
	ws_reply '{"path":"a.txt","content":"hello\nworld \"q\" \u00e9"},{"kind":"file","name":"b","path":"sub/dir/b.txt","content":"B","operation":"create"}'
	ws_reply "{\"path\":\"$O/abs.txt\",\"content\":\"x\"}"
	ws_reply '{"path":"../outside/dots.txt","content":"x"},{"path":"sub/../../outside/dots2.txt","content":"x"}'
	ws_reply '{"path":"link-file","content":"PWNED"}'
	ws_reply '{"path":"link-dir/new.txt","content":"PWNED"}'
	ws_reply '{"path":"a.txt","content":"clobbered","operation":"create"}'
	ws_reply '{"path":"missing.txt","content":"x","operation":"update"}'
	ws_reply '{"path":"a.txt","content":"updated","operation":"update"}'
} >"$T/script"

ws_serve
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

ws_step "good paths"
[ -f "$W/a.txt" ] || fail "a.txt was not written in the workspace"
[ "$(cat "$W/a.txt")" = "$(printf 'hello\nworld "q" \303\251')" ] ||
    fail "a.txt holds '$(cat "$W/a.txt")', not the decoded content"
[ "$(cat "$W/sub/dir/b.txt")" = B ] || fail "sub/dir/b.txt was not written"
[ "$(mode "$W/a.txt")" = 600 ] && [ "$(mode "$W/sub/dir/b.txt")" = 600 ] ||
    fail "artifacts must be mode 0600: a.txt $(mode "$W/a.txt"), b.txt $(mode "$W/sub/dir/b.txt")"
[ "$(mode "$W/sub")" = 700 ] || fail "directories must be mode 0700: sub is $(mode "$W/sub")"

ws_step "absolute path"
refused "absolute path" "absolute paths are refused" 1
[ -e "$O/abs.txt" ] && fail "an absolute path was written outside the workspace"

ws_step "dot-dot"
refused "dot-dot" '".." is refused' 2
[ -e "$O/dots.txt" ] || [ -e "$O/dots2.txt" ] && fail "a .. path was written outside"

ws_step "symlink to a file outside"
refused "symlink to a file" "link-file leads out of the workspace" 3
[ "$(cat "$O/target.txt")" = ORIGINAL ] || fail "the file outside was changed through a symlink: $(cat "$O/target.txt")"

ws_step "symlink to a directory outside"
refused "symlink to a directory" "link-dir/new.txt leads out of the workspace" 4
[ -e "$O/new.txt" ] && fail "a file was created outside through a symlinked directory"

ws_step "create on an existing file"
refused "create on an existing file" "a.txt: File exists" 5
[ "$(cat "$W/a.txt")" = "$(printf 'hello\nworld "q" \303\251')" ] ||
    fail "operation create replaced an existing file"

ws_step "update of a missing file"
refused "update of a missing file" "missing.txt: No such file or directory" 6
[ -e "$W/missing.txt" ] && fail "operation update created a missing file"

ws_step "update of an existing file"
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
