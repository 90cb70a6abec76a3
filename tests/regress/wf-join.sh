#!/bin/sh
# A fan-out and its join: a plan reply with three next_actions, each
# branch answered by a finalize.
#   join: all (the default): the job waits for every branch; the result
#     lists all three, status ok; nothing is dropped.
#   join: first: the first finalize ends the job and is its result; the
#     two branches still open are cancelled (one outcome each, code
#     cancelled) and the result lists them in corral.join.
#   join: {then: summarize}: every branch's end goes to one summarize
#     request, whose finalize is the result.  Its reply decides: with a
#     failed branch, a combiner that answers well ends the run with exit
#     status 0 (it saw the branch's status: error), one that answers with
#     an error fails it (exit status 1).
. "$(dirname "$0")/lib.sh"
. "$TESTDIR/tools/wflib.sh"

LOG="$T/audit.ndjson"

# wf JOIN [slow|fail] [GATHER]: three executors; with slow the second and
# third hang, with fail the third answers with an error; GATHER adds to
# the summarize agent's options (", --error").
wf() {
	s="" f="" g="${3:-}"
	[ "${2:-}" = slow ] && s=", --hang"
	[ "${2:-}" = fail ] && f=", --error"
	cat >"$T/wf.yaml" <<YAML
agents:
  planner:
    cmd: [$WA, --next, "execute:a", --next, "execute:b", --next, "execute:c"]
  fast:
    cmd: [$WA, --intent, finalize, --text, "fast"]
  slow1:
    cmd: [$WA, --intent, finalize, --text, "slow1"$s]
  slow2:
    cmd: [$WA, --intent, finalize, --text, "slow2"$s$f]
  gather:
    cmd: [$WA, --intent, finalize, --text, "gathered"$g]
routes:
  plan: planner
  execute: [fast, slow1, slow2]
  summarize: gather
$1
YAML
}

wf ""
corral_run 20 run "$T/wf.yaml" --goal go --log "$LOG"
expect_rc 0
got=$(jq -r '[.intent, .content.type, ([.content.data.branches[] | .status + ":" + .envelope.content.text] | sort | join(","))] | join(" ")' "$OUT")
[ "$got" = "finalize json ok:fast,ok:slow1,ok:slow2" ] ||
    fail "join all: expected the three branches in the result, got '$got'"
expect_audit_ok "$LOG"
rm -f "$LOG"

wf "join: first" slow
corral_run 20 run "$T/wf.yaml" --goal go --log "$LOG"
expect_rc 0
[ "$(result_field "$OUT" .content.text)" = fast ] ||
    fail "join first: expected the fast finalize as the result: $(head -c 400 "$OUT")"
[ "$(result_field "$OUT" '.corral.join.open')" = 2 ] &&
[ "$(result_field "$OUT" '.corral.join.cancelled | length')" = 2 ] ||
    fail "join first: expected corral.join with open 2 and two cancelled ids: $(result_field "$OUT" .corral)"
for id in $(result_field "$OUT" '.corral.join.cancelled[]'); do
	c=$(jq -r --arg id "$id" 'select(.ev == "outcome" and .id == $id) | .code' "$LOG")
	[ "$c" = cancelled ] || fail "join first: cancelled request $id has outcome code '$c'"
done
expect_audit_ok "$LOG"
rm -f "$LOG"

wf "join: {then: summarize}"
corral_run 20 run "$T/wf.yaml" --goal go --log "$LOG"
expect_rc 0
[ "$(result_field "$OUT" .content.text)" = gathered ] ||
    fail "join then: expected gather's finalize as the result: $(head -c 400 "$OUT")"
n=$(jq -r 'select(.ev == "env" and .env.intent == "summarize") | .env.content.data.branches | length' "$LOG")
[ "$n" = 3 ] || fail "join then: expected one summarize request with 3 branches, got '$n'"
expect_audit_ok "$LOG"
rm -f "$LOG"

# A failed branch: the combiner's reply decides.
wf "join: {then: summarize}" fail
corral_run 20 run "$T/wf.yaml" --goal go --log "$LOG"
expect_rc 0
[ "$(result_field "$OUT" .content.text)" = gathered ] ||
    fail "join then, a failed branch, a combiner that answers: $(head -c 400 "$OUT")"
st=$(jq -r 'select(.ev == "env" and .env.intent == "summarize") | [.env.content.data.branches[].status] | sort | join(",")' "$LOG")
[ "$st" = "error,ok,ok" ] || fail "join then: the combiner should see the failed branch, got statuses '$st'"
rm -f "$LOG"
wf "join: {then: summarize}" fail ", --error"
corral_run 20 run "$T/wf.yaml" --goal go --log "$LOG"
expect_rc 1
[ "$(result_field "$OUT" .content.type)" = error ] ||
    fail "join then, a combiner's error: expected an error result: $(head -c 400 "$OUT")"
exit 0
