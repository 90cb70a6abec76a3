#!/bin/sh
# examples/word-count end to end: the decomposer's four execute actions fan
# out over counter.1 and counter.2, which work at the same time (the audit
# log shows both with a request in flight at once); the count of the empty
# file comes back weak and is reflected on by the critic, not by a counter;
# the tally's totals are the result; every request has one outcome.
. "$(dirname "$0")/lib.sh"
. "$TESTDIR/tools/wflib.sh"

EX="$SRCDIR/examples/word-count"
[ -f "$EX/workflow.yaml" ] || fail "no example at $EX"
CORRAL_AGENT_PATH="$AGENTS"
export CORRAL_AGENT_PATH
LOG="$T/audit.ndjson"

corral_run 30 run "$EX/workflow.yaml" --goal "count the words" --log "$LOG"
expect_rc 0
[ "$(result_field "$OUT" .intent)" = finalize ] ||
    fail "expected a finalize result, got: $(head -c 300 "$OUT")"
text=$(result_field "$OUT" .content.text)
files=$(grep -v '^#' "$EX/corpus/files.txt" | grep .)
for f in $files; do
	words=$(wc -w <"$EX/corpus/$f" | tr -d ' ')
	printf '%s\n' "$text" | grep -Eq "^ *$f +$words words" ||
	    fail "expected '$f $words words' in the result: $text"
done
total=$(cd "$EX/corpus" && cat $files | wc -w | tr -d ' ')
printf '%s\n' "$text" | grep -Eq "^ *total +$total words" ||
    fail "expected the total of $total words in the result: $text"

# Fan-out: four execute requests, spread over both instances, in flight
# on both at once.
nexec=$(audit_routes "$LOG" | awk '$1 == "execute"' | wc -l)
[ "$nexec" -eq 4 ] || fail "expected 4 execute routes, got $nexec"
for c in counter.1 counter.2; do
	audit_routes "$LOG" | grep -q "^execute $c " ||
	    fail "expected $c to get an execute request: $(audit_routes "$LOG" | grep execute | tr '\n' ';')"
done
conc=$(audit_max_concurrent "$LOG" counter.)
note "in flight at most (per instance, then instances busy at once): $(printf '%s' "$conc" | tr '\n' ' ')"
overlap=$(printf '%s\n' "$conc" | awk '$1 == "overlap" { print $2 }')
[ "$overlap" -ge 2 ] ||
    fail "expected counter.1 and counter.2 to hold requests at the same time (overlap $overlap)"
# The first two execute requests were dispatched at once, to different
# instances, before either answered.
first2=$(jq -r 'select(.ev == "route" or .ev == "outcome") |
    "\(.ev) \(.intent // "-") \(.agent)"' "$LOG" |
    awk '$2 == "execute" || ($1 == "outcome" && $3 ~ /^counter/)' | head -n 2)
[ "$(printf '%s\n' "$first2" | awk '$1 == "route"' | awk '{ print $3 }' | sort -u | wc -l)" -eq 2 ] ||
    fail "expected the first two execute requests routed to both counters before any answer: $first2"
# The other two waited in the queue for a free instance (max_inflight: 1).
nq=$(jq -r 'select(.ev == "queue" and .intent == "execute") | .id' "$LOG" | wc -l)
[ "$nq" -eq 2 ] || fail "expected 2 queued execute requests (2 instances, max_inflight 1), got $nq"

# Reflection: the empty file's count, by a counter, reviewed by the critic.
nrefl=$(jq -r 'select(.ev == "reflect") | .id' "$LOG" | wc -l)
[ "$nrefl" -eq 1 ] || fail "expected one reflect event (todo.txt is empty), got $nrefl"
set -- $(jq -r 'select(.ev == "reflect") | "\(.id) \(.agent) \(.score)"' "$LOG")
case "$2" in counter.*) ;; *) fail "expected a counter to author the weak reply, got $2" ;; esac
[ "$3" = 0.3 ] || fail "expected the weak count's score 0.3, got $3"
to=$(audit_routes "$LOG" | awk -v id="$1" '$3 == id { print $2 }')
[ "$to" = critic ] || fail "expected reflect request $1 routed to critic, got '$to'"
# The critic kept the summarize action: the tally got all four parts.
nsum=$(audit_routes "$LOG" | awk '$1 == "summarize"' | wc -l)
[ "$nsum" -eq 4 ] || fail "expected 4 summarize requests (one per part), got $nsum"
printf '%s\n' "$text" | grep -q 'todo.txt.*(empty)' ||
    fail "expected todo.txt flagged (empty) in the result: $text"

expect_audit_ok "$LOG"
exit 0
