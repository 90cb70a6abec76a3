#!/bin/sh
# corral tree --log renders the run's tree: text, dot and mermaid show the
# right nodes, parent edges, last states, depths, tokens and restarts.
#
#   root
#   |-- node-1
#   |   `-- leaf-2      finalizes reporting 42 tokens and $0.0010
#   |-- flaky-3        crashes; restart max 0: FAILED at once
#   `-- again-4        crashes once, is restarted, then finishes
. "$(dirname "$0")/tree-lib.sh"

tree_wf node leaf 'flaky=restart: {policy: transient, max: 0}' \
    'again=restart: transient'
cat >"$T/root.json" <<'JSON'
{"steps": [
  {"spawn": {"agent": "node", "plan": {"steps": [
    {"spawn": {"agent": "leaf", "plan": {"steps": [
      {"finalize": {"text": "leaf", "tokens": 42, "usd": 0.001}}]}}},
    {"await": true}]}}},
  {"await": true},
  {"spawn": {"agent": "flaky", "plan": {"steps": [{"exit": 3}]}}},
  {"await": true},
  {"spawn": {"agent": "again", "plan": {"steps": [{"crash_starts": 1}]}}},
  {"await": true}]}
JSON
corral_run 20 run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
expect_rc 0
[ "$(out_get content.text)" = "root(node-1(leaf),!flaky-3:child_failed,again-4)" ] ||
    fail "unexpected result: $(out_get content.text)"
[ "$(rec_count "start again-4 ")" = 2 ] || fail "again-4 should run twice"

# render FORMAT: corral tree's output in $T/tree.FORMAT, or fail.
render() {
	"$CORRAL" tree --log "$LOG" --format "$1" >"$T/tree.$1" 2>"$T/tree.err" ||
	    fail "corral tree --format $1 failed: $(cat "$T/tree.err")"
	[ ! -s "$T/tree.err" ] || fail "corral tree --format $1 complained: $(cat "$T/tree.err")"
}
# has FILE REGEX...: each extended regex matches a line of FILE.
has() {
	_f=$1
	shift
	for _r in "$@"; do
		grep -qE -- "$_r" "$_f" || fail "expected a line matching '$_r' in:
$(cat "$_f")"
	done
}
lbl='[0-9]+\.[0-9]{2}s, [0-9]+ tokens, \$[0-9]+\.[0-9]{4}'

render text
has "$T/tree.text" \
    "^root \[STOPPED, depth 0, $lbl\]\$" \
    "^\|-- node-1 \[STOPPED, depth 1, $lbl\]\$" \
    "^\|   \`-- leaf-2 \[STOPPED, depth 2, [0-9.]+s, 42 tokens, \\\$0\.0010\]\$" \
    "^\|-- flaky-3 \[FAILED, depth 1, $lbl\]\$" \
    "^\`-- again-4 \[STOPPED, depth 1, $lbl, restarts 1\]\$"
[ "$(grep -c . "$T/tree.text")" = 5 ] || fail "the text tree should have 5 lines:
$(cat "$T/tree.text")"
# The order is the tree's: each child right under its parent.
[ "$(sed 's/ \[.*//' "$T/tree.text" | tr '\n' '/')" = 'root/|-- node-1/|   `-- leaf-2/|-- flaky-3/`-- again-4/' ] ||
    fail "the text tree is out of order:
$(cat "$T/tree.text")"

render dot
[ "$(head -n 1 "$T/tree.dot")" = "digraph corral {" ] && [ "$(tail -n 1 "$T/tree.dot")" = "}" ] ||
    fail "dot output should be one digraph:
$(cat "$T/tree.dot")"
[ "$(grep -c '{' "$T/tree.dot")" = 1 ] && [ "$(grep -c '}' "$T/tree.dot")" = 1 ] ||
    fail "dot output should open and close one block"
for e in '"root" -> "node-1"' '"node-1" -> "leaf-2"' '"root" -> "flaky-3"' '"root" -> "again-4"'; do
	grep -qxF "  $e;" "$T/tree.dot" || fail "dot output lacks the edge $e:
$(cat "$T/tree.dot")"
done
[ "$(grep -c -- '->' "$T/tree.dot")" = 4 ] || fail "dot output should have exactly 4 edges"
has "$T/tree.dot" \
    '^  "root" \[label="root\\nSTOPPED\\ndepth 0, ' \
    '^  "leaf-2" \[label="leaf-2\\nSTOPPED\\ndepth 2, [0-9.]+s, 42 tokens, \$0\.0010"\];$' \
    '^  "flaky-3" \[label="flaky-3\\nFAILED\\ndepth 1, ' \
    '^  "again-4" \[label="again-4\\nSTOPPED\\ndepth 1, .*, restarts 1"\];$'
[ "$(grep -c '\[label=' "$T/tree.dot")" = 5 ] || fail "dot output should have 5 nodes"
# Every statement line has balanced quotes and ends with ';'.
awk 'NR > 1 && $0 != "}" { q = gsub(/"/, "\""); if (q % 2 || $0 !~ /;$/) { print; bad = 1 } }
    END { exit bad }' "$T/tree.dot" >"$T/bad" ||
    fail "malformed dot lines: $(cat "$T/bad")"
if command -v dot >/dev/null 2>&1; then
	dot -Tcanon "$T/tree.dot" >/dev/null 2>"$T/dot.err" ||
	    fail "graphviz rejects the dot output: $(cat "$T/dot.err")"
fi

render mermaid
[ "$(head -n 1 "$T/tree.mermaid")" = "graph TD" ] || fail "mermaid output should start with 'graph TD'"
for e in 'root --> node_1' 'node_1 --> leaf_2' 'root --> flaky_3' 'root --> again_4'; do
	grep -qxF "  $e" "$T/tree.mermaid" || fail "mermaid output lacks the edge $e:
$(cat "$T/tree.mermaid")"
done
[ "$(grep -c -- '-->' "$T/tree.mermaid")" = 4 ] || fail "mermaid output should have exactly 4 edges"
has "$T/tree.mermaid" \
    '^  root\["root<br/>STOPPED<br/>depth 0, ' \
    '^  leaf_2\["leaf-2<br/>STOPPED<br/>depth 2, [0-9.]+s, 42 tokens, \$0\.0010"\]$' \
    '^  flaky_3\["flaky-3<br/>FAILED<br/>depth 1, ' \
    '^  again_4\["again-4<br/>STOPPED<br/>depth 1, .*, restarts 1"\]$'

# Errors: a missing log, an unknown format.
"$CORRAL" tree --log "$T/nope" >/dev/null 2>"$T/tree.err"
rc=$?
[ "$rc" = 2 ] && grep -q "$T/nope" "$T/tree.err" ||
    fail "corral tree on a missing log should exit 2 naming it; exit $rc: $(cat "$T/tree.err")"
"$CORRAL" tree --log "$LOG" --format svg >/dev/null 2>"$T/tree.err"
rc=$?
[ "$rc" = 2 ] && grep -q "format must be text, dot or mermaid" "$T/tree.err" ||
    fail "corral tree --format svg should exit 2; exit $rc: $(cat "$T/tree.err")"
expect_clean
exit 0
