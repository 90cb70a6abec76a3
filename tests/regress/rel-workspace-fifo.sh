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

reply() {	# ARTIFACTS-JSON
	printf '{"protocol":"multiagent-1.0","role":"agent","intent":"finalize","task":"t","content":{"type":"text","text":"wrote"},"outputs":{"artifacts":[%s]},"confidence":{"score":0.9},"trace":{"parents":["@ID@"]}}\n' "$1"
}
{
	reply '{"path":"fifo","content":"x"}'
	reply '{"path":"sub/fifo2","content":"x","operation":"update"}'
	reply '{"path":"fifo","content":"x","operation":"create"}'
	reply '{"path":"ok.txt","content":"fine"}'
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
step() {
	n=$((n + 1))
	"$RG" env 1 --id s- --start $n --task script >&8
	_id="s-$n"
	wait_for '[ -n "$(result_of "$_id")" ]' 10 ||
	    fail "$1: no result for s-$n within 10s (x$SLOW): corral is frozen"
	result_of "s-$n" | grep -q '"text":"wrote"' ||
	    fail "$1: expected the agent's reply as the result, got: $(result_of "s-$n" | cut -c1-300)"
}
refused() {	# WHAT LOG-TEXT NOTICES
	_p=$2
	wait_for 'grep -qF "corral: agent w: artifact refused: $_p" "$ERR"' 5 ||
	    fail "$1: no 'artifact refused: $2' in the log; saw: $(grep -F 'artifact' "$ERR" | tail -n 3)"
	_want=$3
	wait_for '[ "$(grep -c "^notice w artifact_refused$" "$T/rec")" -ge "$_want" ]' 5 ||
	    fail "$1: the agent got $(grep -c '^notice w artifact_refused$' "$T/rec") artifact_refused notices, expected $3"
}

step "a FIFO, no operation"
refused "a FIFO" "fifo: not a regular file" 1
step "a FIFO in a directory, operation update"
refused "a FIFO, update" "sub/fifo2: not a regular file" 2
step "a FIFO, operation create"
refused "a FIFO, create" "fifo: File exists" 3
step "a regular file after the FIFOs"
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
