#!/bin/sh
# A reader can tell a damaged audit log: every complete line ends with a
# newline and parses.  corral tree --log, given
#   - a whole log: renders it and says nothing on stderr;
#   - the same log with its last line cut short (corral killed mid-write,
#     a disk that filled before this version): says that the last line is
#     cut short, and still renders the tree from the lines before it;
#   - a line in the middle that is not JSON: names that line, and still
#     renders the tree.
. "$(dirname "$0")/rel-lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  w:
    cmd: [$RA]
routes:
  "*": w
YAML
corral_run 20 run "$T/wf.yaml" --goal ok --log "$AUD"
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
want="corral: $T/cut.ndjson: the last line is cut short (it has no newline): the log ends mid-write"
grep -qxF "$want" "$T/tree.err" ||
    fail "a cut last line: expected '$want' on stderr, got: $(cat "$T/tree.err")"

{ sed -n 1,2p "$AUD"; printf '{"seq":3,"t":0.1,"ev":"sta{"seq":4}\n'; sed -n '3,$p' "$AUD"; } >"$T/mid.ndjson"
tree "a bad line in the middle" "$T/mid.ndjson"
want="corral: $T/mid.ndjson: line 3 is not JSON (1 such line in all)"
grep -qxF "$want" "$T/tree.err" ||
    fail "a bad line in the middle: expected '$want' on stderr, got: $(cat "$T/tree.err")"
exit 0
