#!/bin/sh
# A reader can tell a damaged audit log: every complete line ends with a
# newline and parses.  corral tree --log, given
#   - a whole log: renders it and says nothing on stderr;
#   - the same log with its last line cut short (corral killed mid-write,
#     a disk that filled before this version): says that the last line is
#     cut short, and still renders the tree from the lines before it;
#   - a line in the middle that is not JSON: names that line, and still
#     renders the tree;
#   - a log in a newer format than this corral's (run_start's format):
#     refuses it, exit 2, saying which format and which corral wrote it.
# The run writes its log with --log-sync always (every batch synced).
. "$(dirname "$0")/rel-lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  w:
    cmd: [$RA]
routes:
  "*": w
YAML
corral_run 20 run "$T/wf.yaml" --goal ok --log "$AUD" --log-sync always
expect_rc 0

# tree WHAT FILE: render FILE; the tree must show agent w.
tree() {
	"$CORRAL" tree --log "$2" >"$T/tree.out" 2>"$T/tree.err" ||
	    fail "$1: corral tree failed: $(cat "$T/tree.err")"
	grep -q '^w \[' "$T/tree.out" ||
	    fail "$1: corral tree does not show agent w: $(cat "$T/tree.out")"
}

tree "a whole log" "$AUD"
[ -s "$T/tree.err" ] && fail "a whole log: corral tree complained: $(cat "$T/tree.err")"

head -c -25 "$AUD" >"$T/cut.ndjson"
tree "a cut last line" "$T/cut.ndjson"
nl=$(wc -l <"$AUD")
bytes=$(($(tail -n 1 "$AUD" | wc -c) - 25))
want="corral: $T/cut.ndjson: the last line is cut short (it has no newline): the log ends mid-write; line $nl ($bytes bytes) is left out"
grep -qxF "$want" "$T/tree.err" ||
    fail "a cut last line: expected '$want' on stderr, got: $(cat "$T/tree.err")"

{ sed -n 1,2p "$AUD"; printf '{"seq":3,"t":0.1,"ev":"sta{"seq":4}\n'; sed -n '3,$p' "$AUD"; } >"$T/mid.ndjson"
tree "a bad line in the middle" "$T/mid.ndjson"
want="corral: $T/mid.ndjson: line 3 is not JSON (1 such line in all), left out"
grep -qxF "$want" "$T/tree.err" ||
    fail "a bad line in the middle: expected '$want' on stderr, got: $(cat "$T/tree.err")"

grep -q '"ev":"run_start","format":1,' "$AUD" ||
    fail "run_start does not carry format 1: $(head -n 1 "$AUD")"
sed '1s/"format":1,/"format":7,/' "$AUD" >"$T/newer.ndjson"
rc=0
"$CORRAL" tree --log "$T/newer.ndjson" >"$T/tree.out" 2>"$T/tree.err" || rc=$?
[ $rc = 2 ] || fail "a newer format: corral tree exited $rc, not 2"
grep -qF "line 1: the log is in format 7 (written by corral " "$T/tree.err" &&
    grep -qF "reads format 1 and older: read it with a newer corral" "$T/tree.err" ||
    fail "a newer format: expected a refusal naming format 7, got: $(cat "$T/tree.err")"
[ -s "$T/tree.out" ] && fail "a newer format: corral tree drew a tree: $(cat "$T/tree.out")"
exit 0
