#!/bin/sh
# An artifact write never blocks corral.  An agent makes a FIFO in the
# workspace (mkfifo) and replies with an artifact whose path is that FIFO:
# corral once blocked in open(2) for ever, and every job froze.  Now
#   - the reply is delivered at once, whatever happens to its artifacts;
#   - an artifact whose path is a FIFO is refused ("not a regular file"),
#     with or without operation update, and create refuses it as an
#     existing file; the FIFO is left as it was;
#   - the next request is served, the next artifact written, and corral
#     serve ends normally at EOF.
. "$(dirname "$0")/rel-lib.sh"

W="$T/ws"
mkdir "$W"
mkfifo "$W/fifo" || skip "mkfifo failed"
mkdir "$W/sub"
mkfifo "$W/sub/fifo2"

{
	ws_reply '{"path":"fifo","content":"x"}'
	ws_reply '{"path":"sub/fifo2","content":"x","operation":"update"}'
	ws_reply '{"path":"fifo","content":"x","operation":"create"}'
	ws_reply '{"path":"ok.txt","content":"fine"}'
} >"$T/script"

ws_serve
refused() {	# WHAT LOG-TEXT NOTICES
	_p=$2
	wait_for 'grep -qF "corral: agent w: artifact refused: $_p" "$ERR"' 5 ||
	    fail "$1: no 'artifact refused: $2' in the log; saw: $(grep -F 'artifact' "$ERR" | tail -n 3)"
	_want=$3
	wait_for '[ "$(grep -c "^notice w artifact_refused$" "$T/rec")" -ge "$_want" ]' 5 ||
	    fail "$1: the agent got $(grep -c '^notice w artifact_refused$' "$T/rec") artifact_refused notices, expected $3"
}

ws_step "a FIFO, no operation"
refused "a FIFO" "fifo: not a regular file" 1
ws_step "a FIFO in a directory, operation update"
refused "a FIFO, update" "sub/fifo2: not a regular file" 2
ws_step "a FIFO, operation create"
refused "a FIFO, create" "fifo: File exists" 3
ws_step "a regular file after the FIFOs"
wait_for '[ "$(cat "$W/ok.txt" 2>/dev/null)" = fine ]' 5 ||
    fail "ok.txt was not written after the FIFOs"
[ -p "$W/fifo" ] && [ -p "$W/sub/fifo2" ] || fail "a FIFO was replaced or removed"

serve_eof
corral_wait 10
expect_rc 0
[ "$(aud_count artifact outcome refused)" -eq 3 ] ||
    fail "expected 3 artifact events refused, got $(aud_count artifact outcome refused)"
[ "$(aud_count artifact outcome written)" -eq 1 ] ||
    fail "expected 1 artifact event written, got $(aud_count artifact outcome written)"
set -- $(run_end_check)
[ "$2" -eq 4 ] || fail "expected all 4 replies delivered, run_end says $*"
expect_no_leftovers
exit 0
