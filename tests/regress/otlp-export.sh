#!/bin/sh
# corral run --otlp FILE: examples/mixed-team's run as OpenTelemetry
# traces (OTLP/JSON), checked against the protocol's own definitions
# (tests/otlp: protobufjs code generated from opentelemetry-proto, from
# the npm registry; SKIPPED when node or the registry is out of reach):
# one span per request (as many as the audit log's outcomes), the plan,
# the execute it led to and the help request made while working on it in
# one trace, each linked to its parent.  A file that cannot be written is
# a usage error before anything starts.  A file nobody drains (a FIFO
# whose reader stopped reading, as a hung disk would) stalls nothing:
# every input is answered, the spans that could not be written are
# dropped and counted, and corral exits.  The same to an OTLP/HTTP
# collector (--otlp http://...): what is posted passes the same checks;
# a collector that refuses, or none, costs the spans, counted and said.
. "$(dirname "$0")/lib.sh"

N=1500
cat >"$T/wf.yaml" <<YAML
agents:
  echo:
    cmd: [$TA]
routes:
  "*": echo
YAML
awk -v n=$N 'BEGIN { for (i = 1; i <= n; i++)
	printf "{\"protocol\":\"multiagent-1.0\",\"role\":\"user\",\"intent\":\"execute\",\"task\":\"t\",\"content\":{\"type\":\"text\",\"text\":\"n\"},\"trace\":{\"id\":\"in-%d\"}}\n", i }' >"$T/in"
mkfifo "$T/stuck.fifo" || skip "mkfifo failed"
# This shell holds the FIFO open for reading and never reads: its 64 KiB
# fill with the first batch of 512 spans, and the writer waits for ever.
exec 7<>"$T/stuck.fifo"
: >"$ERR"
"$CORRAL" serve "$T/wf.yaml" --otlp "$T/stuck.fifo" <"$T/in" >"$OUT" \
    2>"$ERR" 7<&- &
CORRAL_PID=$!
corral_wait 60
exec 7<&-
expect_rc 0
[ "$(wc -l <"$OUT")" -eq $N ] ||
    fail "a trace file nobody reads: $(wc -l <"$OUT") of $N inputs answered"
grep -q -- "--otlp .*: $N spans, [1-9][0-9]* of them dropped" "$ERR" ||
    fail "expected the dropped spans counted: $(grep -- --otlp "$ERR")"

command -v jq >/dev/null 2>&1 || skip "jq is missing"
command -v node >/dev/null 2>&1 || skip "node is not installed"
OTLP_DIR="$TESTDIR/otlp"
prefix=$(sh "$OTLP_DIR/install.sh" 2>&1)
case $? in
0) ;;
77) skip "$(printf '%s\n' "$prefix" | grep SKIPPED | head -n 1)" ;;
*) fail "installing the OTLP definitions: $prefix" ;;
esac

corral_run 30 run "$SRCDIR/examples/mixed-team/workflow.yaml" --goal "a report" \
    --log "$T/audit.ndjson" --otlp "$T/traces.jsonl"
expect_rc 0
node "$OTLP_DIR/validate.mjs" "$prefix" "$T/traces.jsonl" --min-parents 2 >"$T/v" 2>&1 ||
    fail "the OTLP file does not pass: $(cat "$T/v")"
note "$(cat "$T/v")"
spans=$(jq '.resourceSpans[].scopeSpans[].spans | length' "$T/traces.jsonl" | awk '{ n += $1 } END { print n }')
outcomes=$(jq -c 'select(.ev == "outcome")' "$T/audit.ndjson" | wc -l)
[ "$spans" = "$outcomes" ] || fail "$spans spans for $outcomes requests"
traces=$(jq -r '.resourceSpans[].scopeSpans[].spans[].traceId' "$T/traces.jsonl" | sort -u | wc -l)
[ "$traces" = 1 ] || fail "expected the run's requests in one trace, got $traces"
jq -e '[.resourceSpans[].scopeSpans[].spans[] | {n: .name, a: (.attributes[] | select(.key == "corral.agent") | .value.stringValue)}]
    | map("\(.n)@\(.a)") | sort == ["analyze@reviewer", "execute@planner", "plan@planner"]' "$T/traces.jsonl" >/dev/null ||
    fail "spans: $(jq -c '.resourceSpans[].scopeSpans[].spans[] | .name' "$T/traces.jsonl" | tr '\n' ' ')"

corral_run 10 run "$SRCDIR/examples/mixed-team/workflow.yaml" --goal x --otlp "$T/no/such/dir/t.jsonl"
expect_rc 2
grep -q -- "--otlp" "$ERR" || fail "expected an error naming --otlp: $(cat "$ERR")"

# --otlp http://HOST:PORT/PATH: the same run posted to a collector (a
# tiny one on the loopback), each batch one POST of an
# ExportTraceServiceRequest, which passes the same checks.
command -v python3 >/dev/null 2>&1 || skip "python3 is missing (the test collector)"
collector() {	# NAME [STATUS]: start a collector; its port in $T/NAME.port
	python3 "$TESTDIR/tools/otlp-collector.py" "$T/$1.port" "$T/$1.jsonl" ${2:-} 8>&- 2>"$T/$1.err" &
	wait_for "[ -s \"$T/$1.port\" ]" 10 || fail "the test collector did not start: $(cat "$T/$1.err")"
	: >>"$T/$1.jsonl"
}
collector ok
url="http://127.0.0.1:$(cat "$T/ok.port")/v1/traces"
corral_run 30 run "$SRCDIR/examples/mixed-team/workflow.yaml" --goal "a report" \
    --log "$T/audit2.ndjson" --otlp "$url"
expect_rc 0
! grep -q '^BAD' "$T/ok.jsonl" || fail "the collector got a bad request: $(grep '^BAD' "$T/ok.jsonl")"
node "$OTLP_DIR/validate.mjs" "$prefix" "$T/ok.jsonl" --min-parents 2 >"$T/v2" 2>&1 ||
    fail "what was posted does not pass: $(cat "$T/v2")"
spans=$(jq '.resourceSpans[].scopeSpans[].spans | length' "$T/ok.jsonl" | awk '{ n += $1 } END { print n }')
outcomes=$(jq -c 'select(.ev == "outcome")' "$T/audit2.ndjson" | wc -l)
[ "$spans" = "$outcomes" ] || fail "$spans spans posted for $outcomes requests"
note "posted: $(cat "$T/v2")"

# A collector that answers 503, and none at all: the run ends as ever,
# and each failed POST is counted and said, its spans dropped.
collector busy 503
for u in "http://127.0.0.1:$(cat "$T/busy.port")/v1/traces HTTP status 503" \
    "http://127.0.0.1:1/v1/traces connect to 127.0.0.1:1"; do
	corral_run 30 run "$SRCDIR/examples/mixed-team/workflow.yaml" --goal x --otlp "${u%% *}"
	expect_rc 0
	grep -qF -- "--otlp ${u%% *}: 1 POSTs failed, the last: ${u#* }" "$ERR" ||
	    fail "expected the failed POST said: $(grep -- --otlp "$ERR")"
	grep -q -- "--otlp .*: 3 spans, 3 of them dropped" "$ERR" ||
	    fail "expected the lost spans counted: $(grep -- --otlp "$ERR")"
done
[ "$(grep -c . "$T/busy.jsonl")" -eq 1 ] || fail "the busy collector should have got one POST"

corral_run 10 run "$SRCDIR/examples/mixed-team/workflow.yaml" --goal x --otlp "http://127.0.0.1:port/x"
expect_rc 2
grep -q -- "--otlp http://127.0.0.1:port/x: the port is not a number" "$ERR" ||
    fail "expected an error naming the bad URL: $(cat "$ERR")"
exit 0
