#!/bin/sh
# Routing by intent and the reflection rule, through the real binary:
#   - a route naming an agent that does not exist: check, run and serve
#     exit 2 with file:line:column naming it;
#   - an intent with no row and no "*": an error envelope with code
#     no_route (run exits 1; serve answers that input with one error line
#     and goes on serving);
#   - "*" serves the intents without a row of their own; with no finalize
#     the last branch's reply is the result;
#   - several candidates: the request goes to the one with the fewest
#     outstanding, never past max_inflight (checked, by replaying the
#     audit log of 40 envelopes served by 3 instances, for every request
#     routed on arrival; wf-audit-order covers those taken from a queue);
#   - no candidate ready: the request waits in the queue and is served
#     once the agent's handshake makes it ready;
#   - reflection.max_rounds, reflection.missing, and a reflection never
#     going back to its author while another reflect agent exists (even a
#     busy one), but going to the author when it is the only one.
. "$(dirname "$0")/lib.sh"
. "$TESTDIR/tools/wflib.sh"

LOG="$T/audit.ndjson"

# 1. A route to an agent that does not exist.
cat >"$T/ghost.yaml" <<YAML
agents:
  a:
    cmd: [$WA]
routes:
  execute: a
  plan: [a, ghost]
YAML
for cmd in check run serve; do
	set -- "$cmd" "$T/ghost.yaml"
	[ $cmd = run ] && set -- "$@" --goal go
	corral_run 10 "$@"
	expect_rc 2
	grep -qF "corral: $T/ghost.yaml:6:13: routes.plan: no agent named 'ghost'" "$ERR" ||
	    fail "corral $cmd: expected '$T/ghost.yaml:6:13: routes.plan: no agent named 'ghost'' on stderr"
	[ -s "$OUT" ] && [ $cmd != check ] && fail "corral $cmd printed a result for a bad file: $(head -c 200 "$OUT")"
done

# 2. No route for the intent and no "*".
cat >"$T/noroute.yaml" <<YAML
agents:
  a:
    cmd: [$WA, --intent, finalize]
routes:
  execute: a
YAML
corral_run 10 run "$T/noroute.yaml" --goal go --log "$LOG"
expect_rc 1
expect_error_result "$OUT" no_route
grep -q '"ev":"route"' "$LOG" && fail "no_route: a request was routed anyway"
expect_audit_ok "$LOG"
rm -f "$LOG"
serve_start "$T/noroute.yaml"
envelope in-1 analyze >&8
envelope in-2 execute >&8
envelope in-3 plan >&8
serve_eof
corral_wait 10
expect_rc 0
[ "$(wc -l <"$OUT")" -eq 3 ] || fail "serve: expected 3 result lines for 3 inputs, got $(wc -l <"$OUT")"
for id in in-1 in-3; do
	n=$(jq -c --arg id "$id" 'select(.trace.parents == [$id])' "$OUT" | wc -l)
	[ "$n" -eq 1 ] || fail "serve: expected one line answering $id, got $n"
	audit_all "$OUT" "select(.trace.parents == [\"$id\"]) | .content.data.code == \"no_route\"" ||
	    fail "serve: expected the answer to $id to be a no_route error: $(grep "\"$id\"" "$OUT")"
done
audit_all "$OUT" 'select(.trace.parents == ["in-2"]) | .content.text == "execute by a"' ||
    fail "serve: expected a's answer to in-2 between the no_route errors: $(cat "$OUT")"

# 3. The "*" fallback serves intents without a row.
cat >"$T/fallback.yaml" <<YAML
agents:
  a:
    cmd: [$WA, --next, analyze]
  b:
    cmd: [$WA, --intent, finalize]
routes:
  plan: a
  "*": b
YAML
corral_run 10 run "$T/fallback.yaml" --goal go --log "$LOG"
expect_rc 0
[ "$(result_field "$OUT" .content.text)" = "analyze by b" ] ||
    fail "fallback: expected b's answer to analyze: $(cat "$OUT")"
r=$(audit_routes "$LOG" | awk '{ print $1 "/" $2 }' | tr '\n' ' ')
[ "$r" = "plan/a analyze/b " ] || fail "fallback: expected routes plan/a analyze/b, got $r"
expect_audit_ok "$LOG"
rm -f "$LOG"

# 3b. No finalize: when no branch is left, every branch's last reply is
# the result (join: all): one envelope listing both, status ok.
cat >"$T/nofinal.yaml" <<YAML
agents:
  a:
    cmd: [$WA, --next, execute, --next, execute]
  b:
    cmd: [$WA, --slower, "150"]
    instances: 2
routes:
  plan: a
  execute: b
YAML
corral_run 10 run "$T/nofinal.yaml" --goal go --log "$LOG"
expect_rc 0
got=$(jq -r '[.content.type, (.content.data.branches | length),
    ([.content.data.branches[] | .status + ":" + .envelope.content.text] | sort | join(","))] | join(" ")' "$OUT")
[ "$got" = "json 2 ok:execute by b.1,ok:execute by b.2" ] ||
    fail "no finalize: expected both branches' replies in the result, got '$got': $(cat "$OUT")"
audit_all "$LOG" 'select(.ev == "job_end") | .status == "ok"' ||
    fail "no finalize: expected job_end ok"
expect_audit_ok "$LOG"
rm -f "$LOG"

# 4. Fewest outstanding, within max_inflight: three instances of differing
# speed (20, 60, 100 ms a request, x SLOW so that the machine's own delays
# do not even them out), three requests each at most, forty envelopes
# arriving four at a time every 30 ms (x SLOW), faster than the three
# together answer, so some wait in the queue for a free slot.
N=40
cat >"$T/pool.yaml" <<YAML
agents:
  w:
    cmd: [$WA, --delay, "$((20 * SLOW))", --slower, "$((40 * SLOW))", --intent, finalize]
    instances: 3
    max_inflight: 3
routes:
  "*": w
YAML
serve_start "$T/pool.yaml" --log "$LOG"
gap=$(awk -v s="$SLOW" 'BEGIN { print 0.03 * s }')
i=1
while [ $i -le $N ]; do
	envelope "in-$i" execute >&8
	[ $((i % 4)) -eq 0 ] && sleep "$gap"
	i=$((i + 1))
done
serve_eof
corral_wait 30
expect_rc 0
[ "$(wc -l <"$OUT")" -eq $N ] || fail "pool: expected $N results, got $(wc -l <"$OUT")"
n=$(grep -c '"type":"error"' "$OUT")
[ "$n" -eq 0 ] || fail "pool: $n error results: $(grep -m1 '"type":"error"' "$OUT")"
# Replay the log: a request routed when it arrived (not from the queue)
# must go to an instance with no more outstanding than any other instance
# that had room; none may be routed to an instance at max_inflight.
jq -r 'select(.ev == "queue" or .ev == "route" or .ev == "outcome") |
    "\(.ev) \(.agent // "-") \(.id)"' "$LOG" |
awk -v cap=3 'BEGIN { A[1] = "w.1"; A[2] = "w.2"; A[3] = "w.3" }
	$1 == "queue" { q[$3] = 1; nq++; next }
	$1 == "route" {
		if (!($3 in q)) {
			for (i = 1; i <= 3; i++) {
				o = A[i]
				if (o != $2 && n[o] < cap && n[o] < n[$2])
					print "PROBLEM: " $3 " went to " $2 " with " n[$2] " outstanding while " o " had " n[o]
			}
			if (n[$2] >= cap)
				print "PROBLEM: " $3 " went to " $2 " at max_inflight (" n[$2] ")"
			if (n["w.1"] != n["w.2"] || n["w.2"] != n["w.3"])
				uneven++
			picks++
		}
		at[$3] = $2; n[$2]++; cnt[$2]++; next
	}
	$1 == "outcome" && ($3 in at) { n[at[$3]]--; delete at[$3] }
	END {
		printf "distribution: w.1 %d, w.2 %d, w.3 %d; %d picked on arrival (%d of them with uneven loads), %d from the queue\n", cnt["w.1"], cnt["w.2"], cnt["w.3"], picks, uneven, nq
	}' >"$T/replay"
note "$(grep -v PROBLEM "$T/replay")"
grep -q PROBLEM "$T/replay" && fail "pool: $(grep PROBLEM "$T/replay" | head -n 3)"
for w in w.1 w.2 w.3; do
	audit_routes "$LOG" | grep -q " $w " || fail "pool: $w got no request"
done
c1=$(audit_routes "$LOG" | grep -c ' w\.1 ')
c3=$(audit_routes "$LOG" | grep -c ' w\.3 ')
[ "$c1" -gt "$c3" ] || fail "pool: the fastest instance w.1 got $c1 requests, not more than the slowest w.3 ($c3)"
expect_audit_ok "$LOG"
rm -f "$LOG"

# 5. No candidate ready: the goal waits for the handshake.
cat >"$T/hs.yaml" <<YAML
agents:
  late:
    cmd: [$WA, --record, $T/late.rec, --handshake, "400", --intent, finalize]
    ready: handshake
routes:
  "*": late
YAML
corral_run 20 run "$T/hs.yaml" --goal go --log "$LOG"
expect_rc 0
[ "$(result_field "$OUT" .content.text)" = "plan by late" ] ||
    fail "handshake: expected late's answer: $(cat "$OUT")"
order=$(jq -r 'select(.ev == "queue" or .ev == "route" or
    (.ev == "state" and .to == "READY")) | "\(.ev)/\(.reason // "-")"' "$LOG" | tr '\n' ' ')
[ "$order" = "queue/- state/handshake route/fewest outstanding " ] ||
    fail "handshake: expected the goal queued, then late READY by its handshake, then the goal routed; the log has: $order"
sed -n 's/^\(connect\)$/\1/p; s/^recv {"protocol".*/request/p' "$T/late.rec" | head -n 2 | tr '\n' ' ' >"$T/seen"
[ "$(cat "$T/seen")" = "connect request " ] ||
    fail "handshake: the agent got a request before its map/connect: $(cat "$T/seen")"
expect_audit_ok "$LOG"
rm -f "$LOG"

# 6. reflection.max_rounds: every reply is weak; rounds 0, 1 and 2.
for rounds in 0 1 2; do
	cat >"$T/rounds.yaml" <<YAML
agents:
  author:
    cmd: [$WA, --intent, finalize, --score, "0.2"]
  c1:
    cmd: [$WA, --score, "0.2"]
  c2:
    cmd: [$WA, --score, "0.2"]
routes:
  plan: author
  reflect: [c1, c2]
reflection:
  below: 0.5
  max_rounds: $rounds
YAML
	corral_run 20 run "$T/rounds.yaml" --goal go --log "$LOG"
	expect_rc 0
	n=$(jq -r 'select(.ev == "reflect") | .id' "$LOG" | wc -l)
	[ "$n" -eq $rounds ] || fail "max_rounds $rounds: expected $rounds reflect events, got $n"
	got=$(jq -r 'select(.ev == "env" and .env.intent == "reflect") | .env.corral.reflect.round' "$LOG" | tr '\n' ' ')
	want=$(i=1; while [ $i -le $rounds ]; do printf '%s ' $i; i=$((i + 1)); done)
	[ "$got" = "$want" ] || fail "max_rounds $rounds: expected rounds '$want', the requests carry '$got'"
	# Each round goes to someone other than the previous round's author.
	jq -r 'select(.ev == "reflect") | "\(.id) \(.agent)"' "$LOG" |
	while read -r id author; do
		to=$(audit_routes "$LOG" | awk -v id="$id" '$3 == id { print $2 }')
		[ -n "$to" ] && [ "$to" != "$author" ] ||
		    fail "max_rounds $rounds: reflection $id of $author's reply went to '$to'"
	done || exit 1
	# The weak finalize still finalizes, reflected or not.
	text=$(result_field "$OUT" .content.text)
	case $rounds in
	0) [ "$text" = "plan by author" ] ;;
	*) [ "$text" = "reflect by c1" ] || [ "$text" = "reflect by c2" ] ;;
	esac || fail "max_rounds $rounds: unexpected result: $text"
	[ "$(result_field "$OUT" .confidence.score)" = 0.2 ] ||
	    fail "max_rounds $rounds: expected the last weak reply as the result"
	expect_audit_ok "$LOG"
	rm -f "$LOG"
done

# 7. reflection.missing: a reply without confidence is reflected on only
# with missing: reflect.
for missing in accept reflect; do
	cat >"$T/missing.yaml" <<YAML
agents:
  author:
    cmd: [$WA, --intent, finalize, --score, none]
  critic:
    cmd: [$WA, --record, $T/critic-$missing.rec]
routes:
  plan: author
  reflect: critic
reflection:
  missing: $missing
YAML
	corral_run 20 run "$T/missing.yaml" --goal go --log "$LOG"
	expect_rc 0
	n=$(jq -r 'select(.ev == "reflect") | .score' "$LOG" | tr '\n' ' ')
	if [ $missing = accept ]; then
		[ -z "$n" ] || fail "missing: accept: expected no reflection, got scores $n"
		[ "$(result_field "$OUT" .content.text)" = "plan by author" ] ||
		    fail "missing: accept: expected the author's reply: $(cat "$OUT")"
	else
		[ "$n" = "null " ] || fail "missing: reflect: expected one reflection with score null, got '$n'"
		[ "$(result_field "$OUT" .content.text)" = "reflect by critic" ] ||
		    fail "missing: reflect: expected the critic's reply: $(cat "$OUT")"
		grep -q '^recv .*"corral":{"reflect":{"of":"[^"]*","intent":"finalize","round":1}}' "$T/critic-$missing.rec" ||
		    fail "missing: reflect: the critic's request lacks corral.reflect: $(grep '^recv {"protocol"' "$T/critic-$missing.rec" | cut -c1-300)"
	fi
	expect_audit_ok "$LOG"
	rm -f "$LOG"
done

# 8. Never back to the author while another reflect agent exists, even one
# that is busy: the reflection waits for it.  other holds a request
# (max_inflight 1; it answers once $T/other-go exists) when author's weak
# reply comes; author is idle.
cat >"$T/excl.yaml" <<YAML
agents:
  author:
    cmd: [$WA, --when, plan, --intent, finalize, --score, "0.2", --when, reflect, --score, "0.9"]
  other:
    cmd: [$WA, --wait-file, $T/other-go, --score, "0.9"]
    max_inflight: 1
    timeout: $((30 * SLOW))s	# held until the script releases it
routes:
  plan: author
  analyze: other
  reflect: [author, other]
YAML
serve_start "$T/excl.yaml" --log "$LOG"
envelope a-1 analyze >&8
wait_for 'grep -q "\"ev\":\"route\",\"agent\":\"other\",\"id\":\"a-1\"" "$LOG" 2>/dev/null' 5 ||
    fail "exclusion: a-1 never reached other"
envelope p-1 plan >&8
# The reflection of author's weak reply is waiting in the queue.
reflection_queued() {
	rid=$(jq -r 'select(.ev == "reflect") | .id' "$LOG" 2>/dev/null)
	[ -n "$rid" ] && grep -q "\"ev\":\"queue\",\"id\":\"$rid\"" "$LOG"
}
wait_for reflection_queued 10 ||
    fail "exclusion: expected author's weak reply reflected on, and the reflection queued for the busy other: $(grep -E '"ev":"(reflect|queue|route)"' "$LOG" | cut -c1-200)"
: >"$T/other-go"
serve_eof
corral_wait 20
expect_rc 0
[ "$(wc -l <"$OUT")" -eq 2 ] || fail "exclusion: expected 2 results, got $(wc -l <"$OUT")"
rid=$(jq -r 'select(.ev == "reflect") | .id' "$LOG")
[ -n "$rid" ] || fail "exclusion: author's weak reply was not reflected on"
to=$(audit_routes "$LOG" | awk -v id="$rid" '$3 == id { print $2 }')
[ "$to" = other ] || fail "exclusion: the reflection $rid went to '$to', not to other"
grep -q "\"ev\":\"queue\",\"id\":\"$rid\"" "$LOG" ||
    fail "exclusion: expected the reflection to wait in the queue for the busy other"
grep -q '"text":"reflect by other"' "$OUT" ||
    fail "exclusion: expected other's review as p-1's result: $(cat "$OUT")"
expect_audit_ok "$LOG"
rm -f "$LOG"

# 9. ... and back to the author when it is the only reflect agent.
cat >"$T/solo.yaml" <<YAML
agents:
  solo:
    cmd: [$WA, --when, plan, --intent, finalize, --score, "0.2", --when, reflect, --score, "0.9"]
routes:
  plan: solo
  reflect: solo
YAML
corral_run 20 run "$T/solo.yaml" --goal go --log "$LOG"
expect_rc 0
rid=$(jq -r 'select(.ev == "reflect" and .agent == "solo") | .id' "$LOG")
[ -n "$rid" ] || fail "solo: expected solo's weak reply reflected on"
to=$(audit_routes "$LOG" | awk -v id="$rid" '$3 == id { print $2 }')
[ "$to" = solo ] || fail "solo: the reflection went to '$to', expected solo (the only reflect agent)"
[ "$(result_field "$OUT" .content.text)" = "reflect by solo" ] ||
    fail "solo: expected solo's review as the result: $(cat "$OUT")"
expect_audit_ok "$LOG"
exit 0
