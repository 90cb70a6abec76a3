#!/bin/sh
# The exec adapter with real Unix tools, through the example workflow
# examples/mixed-tools/unix-tools.yaml: corral run chains sqlite3 (SQL over
# a fixture) into jq (JSON parsed into content.data); corral serve has
# sort rank lines and bc compute; a failing command (sqlite3 on a missing
# table) gives an error envelope with its exit status and stderr; a tool
# that hangs (sleep) is killed when its request times out, and corral
# goes on serving.
. "$(dirname "$0")/lib.sh"

for t in jq bc sqlite3 sort sleep; do
	command -v $t >/dev/null 2>&1 ||
	    skip "$t is not installed (apt-get install -y jq bc sqlite3)"
done
WF="${SRCDIR:?SRCDIR must name the source tree}/examples/mixed-tools/unix-tools.yaml"
[ -f "$WF" ] || fail "no example workflow at $WF"

# The chain: the goal's SQL, then jq over the rows.
s=$(now)
corral_run $((20 * SLOW)) run "$WF" --log "$T/run.audit" -v --goal \
    "SELECT region, SUM(amount) AS total FROM sales GROUP BY region ORDER BY total DESC"
note "sqlite3 -> jq took $(elapsed "$s")s"
expect_rc 0
grep -qF '"intent":"finalize","task":"Total the regions and name the best one","content":{"type":"json","data":{"total":954,"top":"east","regions":4}}' "$OUT" ||
    fail "expected jq's totals as the result, got: $(cut -c1-400 "$OUT")"
grep -q '"ev":"reply","agent":"sql",.*\[{\\"region\\":\\"east\\",\\"total\\":396}' "$T/run.audit" ||
    fail "sqlite3's rows are not in the audit log"

# One envelope per tool through corral serve.
req() {
	printf '{"protocol":"multiagent-1.0","role":"user","intent":"%s","task":"%s","content":{"type":"text","text":"%s"}%s,"trace":{"id":"%s"}}\n' \
	    "$2" "$3" "$3" "${4:-}" "$1" >&8
}
serve_start "$WF" -v --log "$T/serve.audit"
req s1 summarize 'a 3\nb 10\nc 7'
req s2 execute 'scale=2; 954 / 4'
req s3 retrieve 'SELECT * FROM no_such_table'
s=$(now)
req s4 decompose 'hang' ',"inputs":{"parameters":{"seconds":"3017"}}'
wait_for '[ "$(wc -l <"$OUT")" -ge 4 ]' 10 ||
    fail "expected 4 results within 10s (x$SLOW), have $(wc -l <"$OUT")"
t=$(elapsed "$s")
req s5 execute '2 ^ 10'
wait_for '[ "$(wc -l <"$OUT")" -ge 5 ]' 10 || fail "no answer after the timeout"
serve_eof
corral_wait $((10 * SLOW))
expect_rc 0

line() {
	grep -F "\"parents\":[\"$1\"]" "$OUT" | head -n 1
}
line s1 | grep -qF '"content":{"type":"text","text":"b 10\nc 7\na 3"}' ||
    fail "sort: $(line s1)"
line s2 | grep -qF '"text":"238.50"' || fail "bc: $(line s2)"
line s3 | grep -qF '"content":{"type":"error","text":"sqlite3: exit status 1: Parse error: no such table: no_such_table' ||
line s3 | grep -qF '"content":{"type":"error","text":"sqlite3: exit status 1: Error: in prepare, no such table: no_such_table' ||
    fail "the failing sqlite3: $(line s3)"
line s3 | grep -qF '"code":"exit_status","category":"INTERNAL"' || fail "sqlite3's error data: $(line s3)"
line s3 | grep -qF '"status":1,"stderr":"' || fail "sqlite3's status and stderr: $(line s3)"
line s4 | grep -qF '"code":"timeout","category":"TIMEOUT"' || fail "the hang: $(line s4)"
fcmp "$t" "<" $((5 * SLOW)) || fail "the timeout took ${t}s"
pid=$(sed -n 's/.*agent stall: killing pid \([0-9]*\) (request s4 given up).*/\1/p' "$ERR")
[ -n "$pid" ] || fail "no 'killing pid' for s4 in the log"
wait_gone "$pid" 5 || fail "sleep (pid $pid) still runs after the timeout"
line s5 | grep -qF '"text":"1024"' || fail "bc after the timeout: $(line s5)"
exit 0
