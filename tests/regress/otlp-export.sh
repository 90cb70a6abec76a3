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
# dropped and counted, and corral exits.
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
exit 0
