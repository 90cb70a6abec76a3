#!/bin/sh
# A hard link planted in the workspace cannot carry an artifact write out
# of it.  The agent links a file from outside into the workspace (ln, no
# symlink involved, so RESOLVE_BENEATH sees nothing wrong) and replies
# with an artifact at the link's path.  corral writes every artifact to a
# new file in the same directory and renames it over the path, so
#   - the link is replaced in the workspace by a new file (one link, mode
#     0600) holding the artifact, with no operation and with update;
#   - the outside file keeps its content;
#   - operation create still refuses the existing link (File exists);
#   - no temporary file is left behind.
. "$(dirname "$0")/rel-lib.sh"

W="$T/ws"
O="$T/outside"
mkdir "$W" "$O"
printf 'SECRET\n' >"$O/secret.txt"
ln "$O/secret.txt" "$W/hl" || skip "cannot make a hard link in $T"
ln "$O/secret.txt" "$W/hl2"
ln "$O/secret.txt" "$W/hl3"

{
	ws_reply '{"path":"hl","content":"PWNED"}'
	ws_reply '{"path":"hl2","content":"PWNED2","operation":"update"}'
	ws_reply '{"path":"hl3","content":"PWNED3","operation":"create"}'
} >"$T/script"

ws_serve
secret_ok() {
	[ "$(cat "$O/secret.txt")" = SECRET ] ||
	    fail "$1: the file outside the workspace was overwritten through a hard link: $(cat "$O/secret.txt")"
}
links() {
	stat -c %h "$1"
}

ws_step "no operation"
wait_for '[ "$(aud_count artifact path hl)" -ge 1 ]' 5 ||
    fail "no artifact event for hl in the audit log"
secret_ok "no operation"
[ "$(cat "$W/hl")" = PWNED ] || fail "hl holds '$(cat "$W/hl")', not the artifact"
[ "$(links "$W/hl")" = 1 ] || fail "hl has $(links "$W/hl") links: it is still the outside file"
[ "$(stat -c %a "$W/hl")" = 600 ] || fail "hl is mode $(stat -c %a "$W/hl"), not 600"

ws_step "operation update"
wait_for '[ "$(aud_count artifact path hl2)" -ge 1 ]' 5 || fail "no artifact event for hl2"
secret_ok "update"
[ "$(cat "$W/hl2")" = PWNED2 ] || fail "hl2 holds '$(cat "$W/hl2")', not the artifact"
[ "$(links "$W/hl2")" = 1 ] || fail "hl2 has $(links "$W/hl2") links"

ws_step "operation create"
wait_for 'grep -qF "corral: agent w: artifact refused: hl3: File exists" "$ERR"' 5 ||
    fail "create on an existing hard link was not refused: $(grep -F artifact "$ERR" | tail -n 2)"
secret_ok "create"
[ "$(links "$O/secret.txt")" = 2 ] ||
    fail "the outside file has $(links "$O/secret.txt") links, expected 2 (itself and hl3)"

serve_eof
corral_wait 10
expect_rc 0
secret_ok "at the end"
left=$(ls -A "$W" | grep -v '^hl[23]*$' | tr '\n' ' ')
[ -z "$left" ] || fail "files left in the workspace: $left"
[ "$(aud_count artifact outcome written)" -eq 2 ] ||
    fail "expected 2 artifact events written, got $(aud_count artifact outcome written)"
[ "$(aud_count artifact outcome refused)" -eq 1 ] ||
    fail "expected 1 artifact event refused, got $(aud_count artifact outcome refused)"
expect_no_leftovers
exit 0
