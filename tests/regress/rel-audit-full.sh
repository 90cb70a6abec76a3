#!/bin/sh
# The audit log on a full disk (a 64 KiB tmpfs; needs root to mount it,
# else SKIPPED).  The audit log is the replay record, so corral never
# leaves a torn or glued line in it, and a failed write stops the run:
#   A. corral serve fed 3000 inputs: the log fills up.  corral logs one
#      error ("audit log FILE: No space left on device; stopping: no more
#      work is accepted"), no warning per event, stops reading stdin
#      (it exits although stdin stays open), and exits with status 1.
#      The file ends with a newline, every line parses, and seq runs
#      1, 2, 3 ... with no gap; corral tree reads every line, and says
#      that the run has no run_end.
#   B. corral run on a disk that is already full, with an agent that never
#      answers: the same error, the job ends with an error result, exit 1.
. "$(dirname "$0")/rel-lib.sh"

command -v jq >/dev/null 2>&1 || skip "jq is missing"
[ "$(id -u)" = 0 ] || skip "mounting a 64 KiB tmpfs needs root"
FULL="$T/full"
GEN=
mkdir "$FULL"
mount -t tmpfs -o size=64k tmpfs "$FULL" 2>"$T/mount.err" ||
    skip "cannot mount a tmpfs: $(cat "$T/mount.err")"
# At exit: kill what may hold the tmpfs, unmount it (lazily if it is
# still busy), then the usual cleanup.
unmount() {
	[ -n "$GEN" ] && kill "$GEN" 2>/dev/null
	for p in $CORRAL_PID $(marker_pids); do
		kill -9 "$p" 2>/dev/null
	done
	umount "$FULL" 2>/dev/null || umount -l "$FULL"
}
trap 'unmount; cleanup' EXIT

cat >"$T/wf.yaml" <<YAML
agents:
  w:
    cmd: [$RA]
routes:
  "*": w
YAML

# check_log WHAT FILE: complete lines only, each JSON, seq 1, 2, 3 ...;
# prints the number of lines.
check_log() {
	[ ! -s "$2" ] || [ "$(tail -c 1 "$2" | od -An -c | tr -d ' ')" = '\n' ] ||
	    fail "$1: the audit log ends with a torn line: $(tail -c 200 "$2")"
	jq -R -r 'try (fromjson | .seq | tostring) catch "no JSON object"' \
	    "$2" >"$T/seqs" || fail "$1: jq could not read the audit log"
	_bad=$(awk '$0 != NR { print NR; exit }' "$T/seqs")
	[ -z "$_bad" ] ||
	    fail "$1: line $_bad of the audit log has seq '$(sed -n "${_bad}p" "$T/seqs")': a line is torn, glued or missing: $(sed -n "${_bad}p" "$2" | cut -c1-300)"
	wc -l <"$T/seqs" | tr -d ' '
}
# one_error WHAT FILE: exactly one error about the audit log, and it says
# what happened and what corral does.
one_error() {
	_want="corral: audit log $2: No space left on device; stopping: no more work is accepted"
	[ "$(log_count "$_want")" = 1 ] ||
	    fail "$1: expected the error '$_want' once, found it $(log_count "$_want") times"
	[ "$(log_count "audit log")" = 1 ] ||
	    fail "$1: $(log_count "audit log") lines about the audit log, expected one: $(grep -F 'audit log' "$ERR" | head -n 3)"
}

# A. corral serve.
LOGA="$FULL/serve.ndjson"
serve_start "$T/wf.yaml" --log "$LOGA"
"$RG" env 3000 --id f- >&8 &
GEN=$!
wait_for '! pid_alive $CORRAL_PID' 30 || {
	serve_eof
	kill "$GEN" 2>/dev/null
	corral_wait 20
	check_log "serve" "$LOGA" >/dev/null
	fail "serve: corral did not stop when the audit log failed (it ran until stdin closed, exit $RC; $(log_count 'audit log') lines about the audit log)"
}
corral_wait 5
kill "$GEN" 2>/dev/null
GEN=
n=$(check_log "serve" "$LOGA") || exit 1
[ "$n" -gt 10 ] || fail "serve: only $n lines in the audit log before it failed"
grep -qF '"ev":"run_end"' "$LOGA" && fail "serve: a run_end line fits on a full disk?"
one_error "serve" "$LOGA"
expect_rc 1
"$CORRAL" tree --log "$LOGA" >"$T/tree.out" 2>"$T/tree.err" ||
    fail "serve: corral tree failed on the log: $(cat "$T/tree.err")"
grep -qF "not JSON" "$T/tree.err" && fail "serve: corral tree: $(cat "$T/tree.err")"
grep -qF "the last run has no run_end" "$T/tree.err" ||
    fail "serve: corral tree does not say that the log ends early: $(cat "$T/tree.err")"
grep -q '^w ' "$T/tree.out" || fail "serve: corral tree shows no agent w: $(cat "$T/tree.out")"
serve_eof
rm -f "$LOGA"

# B. corral run, the disk full from the start.
dd if=/dev/zero of="$FULL/filler" bs=4096 2>/dev/null
LOGB="$FULL/run.ndjson"
corral_run 30 run "$T/wf.yaml" --goal hang --log "$LOGB"
check_log "run" "$LOGB" >/dev/null || exit 1
one_error "run" "$LOGB"
expect_rc 1
grep -q '"type":"error"' "$OUT" ||
    fail "run: the job's result is not an error: $(head -c 300 "$OUT")"
expect_no_leftovers
exit 0
