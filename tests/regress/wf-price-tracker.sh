#!/bin/sh
# examples/price-tracker end to end: corral run exits 0 with a finalize
# result that reports the day's changes, the executor's CSV has a row for
# each fixture page that has a price, and the audit log shows the chain
# plan -> decompose -> execute -> summarize -> finalize with the weak
# summary reflected on by an agent other than its author, one outcome per
# request and run_end counts that add up.  --output text prints the text.
. "$(dirname "$0")/lib.sh"
. "$TESTDIR/tools/wflib.sh"

EX="$SRCDIR/examples/price-tracker"
DAY=2026-03-10
PREV=2026-03-09
[ -f "$EX/workflow.yaml" ] || fail "no example at $EX"
CORRAL_AGENT_PATH="$AGENTS"
PRICES_DIR="$T/prices"
PRICES_DATE=$DAY
export CORRAL_AGENT_PATH PRICES_DIR PRICES_DATE
mkdir "$PRICES_DIR" || fail "mkdir $PRICES_DIR"
LOG="$T/audit.ndjson"

corral_run 30 run "$EX/workflow.yaml" --goal "track prices daily" --log "$LOG"
expect_rc 0

# The result: one finalize envelope reporting the day's changes.
[ "$(wc -l <"$OUT")" -eq 1 ] || fail "expected one result line on stdout, got $(wc -l <"$OUT")"
intent=$(result_field "$OUT" .intent)
[ "$intent" = finalize ] || fail "expected the result's intent finalize, got '$intent'"
text=$(result_field "$OUT" .content.text)
for want in "Price changes on $DAY" "compared with $PREV" "Gadget Pro" \
    "-20.0%" "Travel Mug" "no price today" "Data: $PRICES_DIR/prices.csv" \
    "Review (critic)"; do
	case "$text" in
	*"$want"*) ;;
	*) fail "expected '$want' in the result's content.text: $text" ;;
	esac
done

# The CSV: yesterday's history, then one row per page that had a price.
CSV="$PRICES_DIR/prices.csv"
[ -f "$CSV" ] || fail "the executor wrote no $CSV (files: $(ls "$PRICES_DIR"))"
[ "$(head -n 1 "$CSV")" = "date,item,price,currency,source" ] ||
    fail "unexpected CSV header: $(head -n 1 "$CSV")"
pages=$(grep -v '^#' "$EX/fixtures/urls.txt" | grep .)
[ "$(printf '%s\n' "$pages" | wc -l)" -eq 6 ] || fail "expected 6 fixture pages in urls.txt"
for page in $pages; do
	n=$(grep -c "^$DAY,.*,$page\$" "$CSV")
	if [ "$page" = travel-mug.html ]; then
		[ "$n" -eq 0 ] || fail "travel-mug.html has no price, but the CSV has $n rows for it"
	else
		[ "$n" -eq 1 ] || fail "expected one $DAY row for $page in the CSV, got $n: $(cat "$CSV")"
	fi
done
grep -q "^$DAY,Gadget Pro,39.99,USD,gadget-pro.html\$" "$CSV" ||
    fail "expected Gadget Pro at 39.99 (the sale price, not the struck-out one): $(grep Gadget "$CSV")"
[ "$(grep -c "^$PREV,.*,history\$" "$CSV")" -eq 6 ] ||
    fail "expected the 6 history rows dated $PREV: $(cat "$CSV")"

# The chain, in order, in the route events.
chain=$(audit_routes "$LOG" | awk '{ print $1 }' | tr '\n' ' ')
[ "$chain" = "plan decompose execute summarize reflect finalize " ] ||
    fail "expected routes plan decompose execute summarize reflect finalize, got: $chain"
for hop in "plan planner" "decompose decomposer" "execute executor" \
    "summarize summarizer" "finalize planner"; do
	audit_routes "$LOG" | grep -q "^$hop " ||
	    fail "expected a route event '$hop': $(audit_routes "$LOG" | tr '\n' ';')"
done

# At least one reflection; each went to an agent other than its author.
nrefl=$(jq -r 'select(.ev == "reflect") | .id' "$LOG" | wc -l)
[ "$nrefl" -ge 1 ] || fail "expected a reflect event in the audit log"
jq -r 'select(.ev == "reflect") | "\(.id) \(.agent) \(.score)"' "$LOG" |
while read -r id author score; do
	to=$(jq -r --arg id "$id" 'select(.ev == "route" and .id == $id) | .agent' "$LOG")
	[ -n "$to" ] || fail "reflect request $id was never routed"
	[ "$to" != "$author" ] || fail "reflect request $id went back to its author $author"
	fcmp "$score" "<" 0.5 || fail "reflect event $id with score $score, not below 0.5"
	# The reflect request names what it reflects on.
	audit_all "$LOG" "select(.ev == \"env\" and .id == \"$id\")
	    | .env.intent == \"reflect\" and .env.corral.reflect.round == 1
	      and .env.corral.reflect.intent == \"summarize\"
	      and (.env.trace.parents | length) == 1" ||
	    fail "reflect request $id lacks intent reflect, trace.parents or corral.reflect {intent summarize, round 1}"
	note "reflection $id: author $author (score $score) -> $to"
done || exit 1
audit_all "$LOG" 'select(.ev == "reflect") | .agent == "summarizer"' ||
    fail "expected the summarizer's reply to be reflected on"

expect_audit_ok "$LOG"
audit_all "$LOG" 'select(.ev == "job_end") | .status == "ok"' ||
    fail "expected job_end with status ok"

# --output text: the result's content.text, and nothing else.  The same
# day scraped again replaces its rows; the report does not change.
cp "$OUT" "$T/first.json"
corral_run 30 run "$EX/workflow.yaml" --goal "track prices daily" --output text
expect_rc 0
result_field "$T/first.json" .content.text >"$T/want.txt"
cmp -s "$T/want.txt" "$OUT" ||
    fail "--output text printed something else than the result's text: $(diff "$T/want.txt" "$OUT" | head -n 10)"
for page in $pages; do
	[ "$page" = travel-mug.html ] && continue
	n=$(grep -c "^$DAY,.*,$page\$" "$CSV")
	[ "$n" -eq 1 ] || fail "after a second run the same day: $n rows for $page (expected 1)"
done
exit 0
