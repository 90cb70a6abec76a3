#!/bin/sh
# corral serve and corral run's exit statuses.
#   - serve writes results in completion order, not input order, and each
#     result's trace.parents names its input's trace.id (a reflected one
#     too);
#   - every invalid line on stdin gets exactly one error line (empty lines
#     none), and serving goes on;
#   - a JSON-RPC ping on stdin is answered (a notification is not), and a
#     line that begins with '[' is a JSON-RPC batch ([1,2,3]: three
#     -32600 in one array);
#   - EOF on stdin drains the work in flight, then corral exits 0;
#   - --log-level decisions records every decision and outcome without
#     the envelopes;
#   - run exits 0 on success, 1 when the workflow fails, 2 for a bad
#     workflow file or command line, 130 on SIGINT.
. "$(dirname "$0")/lib.sh"
. "$TESTDIR/tools/wflib.sh"

LOG="$T/audit.ndjson"

# analyze requests are slow (held until $T/go exists, then 300 ms
# each), execute requests fast.
cat >"$T/wf.yaml" <<YAML
agents:
  slow:
    cmd: [$WA, --wait-file, $T/go, --delay, "300", --intent, finalize]
    timeout: $((30 * SLOW))s	# held until the script releases it
  fast:
    cmd: [$WA, --intent, finalize]
routes:
  analyze: slow
  execute: fast
YAML

# 1. Completion order, and trace.parents.
serve_start "$T/wf.yaml" --log "$LOG"
i=1
while [ $i -le 8 ]; do
	if [ $((i % 2)) -eq 1 ]; then envelope "in-$i" analyze; else envelope "in-$i" execute; fi >&8
	i=$((i + 1))
done
# The fast ones are answered while the slow ones are held.
wait_lines 4 5
got=$(jq -r '.trace.parents[0]' "$OUT" | tr '\n' ' ')
[ "$got" = "in-2 in-4 in-6 in-8 " ] ||
    fail "expected the fast results (in-2 in-4 in-6 in-8) before any slow one, got: $got"
: >"$T/go"
serve_eof
corral_wait 20
expect_rc 0
[ "$(wc -l <"$OUT")" -eq 8 ] || fail "expected 8 results, got $(wc -l <"$OUT")"
jq -r '.trace.parents | join(",")' "$OUT" >"$T/parents"
want=$(jq -r 'select(.ev == "outcome") | .id' "$LOG")
[ "$(cat "$T/parents")" = "$want" ] ||
    fail "results are not in completion order: stdout answers $(tr '\n' ' ' <"$T/parents"), the outcomes came $(printf '%s' "$want" | tr '\n' ' ')"
i=1
while [ $i -le 8 ]; do
	n=$(grep -cx "in-$i" "$T/parents")
	[ "$n" -eq 1 ] || fail "expected one result with trace.parents [in-$i], got $n"
	i=$((i + 1))
done
audit_all "$OUT" '.content.text == "\(.task) by \(if .task == "analyze" then "slow" else "fast" end)"' ||
    fail "a result came from the wrong agent: $(cat "$OUT")"
expect_audit_ok "$LOG"
rm -f "$LOG"

# 1b. A reflected result names its input first in trace.parents too: the
# critic's reply names only the reflect request, and corral adds the
# input's id (from the reply's own scan, not a second one).
cat >"$T/wf-r.yaml" <<YAML
agents:
  weak:
    cmd: [$WA, --intent, finalize, --score, "0.2"]
  critic:
    cmd: [$WA, --intent, finalize]
routes:
  execute: weak
  reflect: critic
YAML
serve_start "$T/wf-r.yaml"
envelope in-r1 execute >&8
wait_lines 1 5
serve_eof
corral_wait 20
expect_rc 0
got=$(jq -r '[.agent.id, (.trace.parents | length), .trace.parents[0]] | join(" ")' "$OUT")
[ "$got" = "critic 2 in-r1" ] ||
    fail "expected the critic's result with parents [in-r1, its request], got: $(cat "$OUT")"

# 1c. A trace.id of the longest length kept (63 bytes) is its job's and
# its request's id whole; an input without one gets an id of corral's.
long=$(printf 'L%.0s' $(seq 63))
serve_start "$T/wf.yaml"
envelope "$long" execute >&8
printf '{"protocol":"multiagent-1.0","role":"user","intent":"execute","task":"t","content":{"type":"text","text":"x"}}\n' >&8
wait_lines 2 5
serve_eof
corral_wait 20
expect_rc 0
[ "$(jq -r 'select(.trace.parents[0] == "'"$long"'") | .content.text' "$OUT")" = "execute by fast" ] ||
    fail "expected the result of the 63-byte id naming it whole, got: $(cat "$OUT")"
got=$(jq -r 'select(.trace.parents[0] != "'"$long"'") | .trace.parents[0] | length' "$OUT")
[ "$got" -gt 0 ] && [ "$got" -lt 64 ] ||
    fail "expected the input without trace.id answered under an id of corral's, got: $(cat "$OUT")"

# 2. Invalid lines, an empty line, pings, then a valid request.
serve_start "$T/wf.yaml" --log "$LOG"
{
	echo 'this is not JSON'
	echo '[1,2,3]'
	echo '{"protocol":"multiagent-1.0"}'
	echo '{"protocol":"multiagent-1.0","role":"user","intent":"bogus","task":"t","content":{"type":"text"},"trace":{"id":"bad-intent"}}'
	echo '{"protocol":"multiagent-1.0","role":"user","intent":"execute","task":"t","content":{"type":"text"},"confidence":{"score":7}}'
	echo ''
	echo '{"jsonrpc":"2.0","id":7,"method":"ping"}'
	echo '{"jsonrpc":"2.0","id":"p-2","method":"ping"}'
	echo '{"jsonrpc":"2.0","method":"ping"}'
	envelope ok-1 execute
} >&8
wait_lines 8 5
serve_eof
corral_wait 10
expect_rc 0
[ "$(wc -l <"$OUT")" -eq 8 ] || fail "expected exactly 8 lines (4 errors, a batch's answers, 2 pongs, 1 result), got $(wc -l <"$OUT"): $(cut -c1-150 "$OUT")"
grep -q '^\[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,.*},{.*},{.*}\]$' "$OUT" ||
    fail "expected the batch [1,2,3] answered with three -32600: $(grep '^\[' "$OUT")"
grep -qxF '{"jsonrpc":"2.0","id":7,"result":{}}' "$OUT" ||
    fail "expected the answer to ping id 7: $(grep jsonrpc "$OUT")"
grep -qxF '{"jsonrpc":"2.0","id":"p-2","result":{}}' "$OUT" ||
    fail "expected the answer to ping id \"p-2\" (a string id stays a string): $(grep jsonrpc "$OUT")"
errs=$(grep -v '"jsonrpc"' "$OUT" | jq -r 'select(.content.type == "error") | "\(.content.data.code)/\(.content.data.path // "-")"' | tr '\n' ' ')
[ "$errs" = "invalid_json/- invalid_envelope/role invalid_envelope/intent invalid_envelope/confidence.score " ] ||
    fail "expected one error line per invalid line (invalid_json, then invalid_envelope for no role, intent, confidence.score), got: $errs"
grep -v '^\[' "$OUT" >"$T/objects"
audit_all "$T/objects" 'select(.content.type == "error") | .protocol == "multiagent-1.0" and .role == "system" and .content.data.category == "REJECTED"' ||
    fail "the error lines are not multiagent-1.0 error envelopes: $(grep -m1 error "$OUT")"
audit_all "$T/objects" 'select(.trace.parents == ["ok-1"]) | .content.text == "execute by fast"' ||
    fail "expected the valid request served after the invalid lines"
n=$(jq -r 'select(.ev == "rejected" and .agent == "stdin") | .code' "$LOG" | wc -l)
[ "$n" -eq 4 ] || fail "expected 4 rejected events for stdin in the audit log, got $n"
expect_audit_ok "$LOG"
rm -f "$LOG"

# 3. EOF drains the work in flight.  (The clock starts before the
# requests go, so that a pause of this script cannot shorten the time.)
# The audit log records the decisions only.
serve_start "$T/wf.yaml" --log "$LOG" --log-level decisions
s=$(now)
envelope s-1 analyze >&8
envelope s-2 analyze >&8
serve_eof
corral_wait 10
expect_rc 0
t=$(elapsed "$s")
[ "$(wc -l <"$OUT")" -eq 2 ] || fail "EOF: expected both slow results before exit, got $(wc -l <"$OUT")"
audit_all "$OUT" '.content.type == "text"' || fail "EOF: expected answers, not errors: $(cat "$OUT")"
fcmp "$t" ">=" 0.5 || fail "EOF: corral exited after ${t}s, before two 300ms requests could finish"
expect_audit_ok "$LOG"
[ "$(jq -r 'select(.ev == "run_start") | .level' "$LOG")" = decisions ] ||
    fail "--log-level decisions: run_start should say so: $(head -n 1 "$LOG")"
n=$(jq -r 'select(has("env")) | .ev' "$LOG" | wc -l)
[ "$n" -eq 0 ] || fail "--log-level decisions: $n lines still carry an envelope"
got=$(jq -r 'select(.ev == "input" or .ev == "route" or .ev == "reply" or .ev == "outcome") | .ev' "$LOG" | sort | uniq -c | awk '{ printf "%s %s ", $2, $1 }')
[ "$got" = "input 2 outcome 2 reply 2 route 2 " ] ||
    fail "--log-level decisions: expected each request's input, route, reply and outcome lines, got: $got"
rm -f "$LOG"

# 4. corral run's exit statuses.
corral_run 10 run "$T/wf.yaml" --goal go
expect_rc 1	# start is plan, and plan has no route
expect_error_result "$OUT" no_route
cat >"$T/ok.yaml" <<YAML
agents:
  a:
    cmd: [$WA, --intent, finalize]
routes:
  "*": a
YAML
corral_run 10 run "$T/ok.yaml" --goal go
expect_rc 0
cat >"$T/err.yaml" <<YAML
agents:
  a:
    cmd: [$WA, --intent, finalize, --error]
routes:
  "*": a
YAML
corral_run 10 run "$T/err.yaml" --goal go
expect_rc 1
[ "$(result_field "$OUT" .content.type)" = error ] || fail "expected the agent's error reply as the result: $(cat "$OUT")"
printf 'agents:\n  a:\n    cmd: [%s]\n    instances: many\nroutes:\n  "*": a\n' "$WA" >"$T/bad.yaml"
corral_run 10 run "$T/bad.yaml" --goal go
expect_rc 2
grep -qF "$T/bad.yaml:4:" "$ERR" || fail "bad file: expected $T/bad.yaml:4:COLUMN on stderr: $(cat "$ERR")"
corral_run 10 run "$T/missing.yaml" --goal go
expect_rc 2
corral_run 10 run "$T/ok.yaml"
expect_rc 2	# no --goal
cat >"$T/hang.yaml" <<YAML
agents:
  a:
    cmd: [$WA, --record, $T/hang.rec, --hang]
routes:
  "*": a
YAML
corral_start run "$T/hang.yaml" --goal go
wait_for 'grep -q "^recv {\"protocol\"" "$T/hang.rec" 2>/dev/null' 10 || fail "SIGINT: the agent never got the goal"
kill -INT "$CORRAL_PID"
corral_wait 10
expect_rc 130
expect_no_leftovers
exit 0
