#!/bin/sh
# The mixed-tools example end to end, offline (examples/mixed-tools/
# run-offline.sh): sqlite3 and jq through exec, the real Claude Code
# through the claude adapter, the real MCP server-everything through the
# mcp adapter; the result is the echo tool's tool_result carrying Claude's
# summary of jq's report of sqlite3's rows.  corral replay of the run
# finds no difference.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/adapter-lib.sh"
for t in jq sqlite3; do
	command -v $t >/dev/null 2>&1 ||
	    skip "$t is not installed (apt-get install -y jq sqlite3)"
done
fa_require claude mcp

s=$(now)
FAKEAPI_TMP=$T FAKEAPI_INSTALL=0 timeout -k 5 $((240 * SLOW)) \
    sh "$SRCDIR/examples/mixed-tools/run-offline.sh" "$CORRAL" \
    --output json --log "$T/audit" -v --goal \
    "SELECT region, SUM(amount) AS total, COUNT(*) AS orders FROM sales GROUP BY region ORDER BY total DESC" \
    >"$OUT" 2>"$ERR"
RC=$?
note "the example took $(elapsed "$s")s"
expect_rc 0
grep -qF '"agent":{"id":"archive","name":"archive","model":"mcp"}' "$OUT" ||
    fail "the result should come from archive"
grep -qF '"intent":"finalize","task":"Archive the summary","content":{"type":"tool_result","text":"Echo: fakeapi reply: Intent: summarize Summarize this sales report' "$OUT" ||
    fail "the result should echo Claude's summary: $(cut -c1-400 "$OUT")"
for a in sql report writer archive; do
	grep -q "\"ev\":\"reply\",\"agent\":\"$a\"" "$T/audit" ||
	    fail "no reply from $a in the audit log"
done
grep -q '"ev":"reply","agent":"report".*Sales of the week: 954 in 12 orders' "$T/audit" ||
    fail "jq's report is not in the audit log"
grep -q '"ev":"reply","agent":"writer".*"cost":{"input_tokens":100,"output_tokens":20,"usd":0.0008}' "$T/audit" ||
    fail "Claude's reply lacks its cost"
# Replayed: no CLI, no tool, no fake API runs; no difference.
expect_replay "$T/audit" "$SRCDIR/examples/mixed-tools/workflow.yaml"
exit 0
