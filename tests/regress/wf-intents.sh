#!/bin/sh
# A workflow's own intents (intents: [review, translate]):
#   - routes, start: and next_actions may name them: the planner proposes
#     a review step, the critic (routed by review) answers it;
#   - agents see them in CORRAL_INTENTS;
#   - envelopes still validate strictly: on corral serve's stdin an
#     unknown intent is refused, and the message lists the workflow's own;
#   - corral check refuses a route to an undeclared word, a declared name
#     that is a standard intent, badly formed or listed twice (exit 2,
#     file:line:col).
. "$(dirname "$0")/lib.sh"
. "$TESTDIR/tools/wflib.sh"

cat >"$T/wf.yaml" <<YAML
intents: [review, translate]
agents:
  planner:
    cmd: [$WA, --next, "review:check the plan"]
  critic:
    cmd: [$TOOLS/testagent, --env, $T/env, --reply-text, reviewed]
routes:
  plan: planner
  review: critic
  translate: critic
YAML
corral_run 20 run "$T/wf.yaml" --goal go --log "$T/audit"
expect_rc 0
[ "$(jq -r .content.text "$OUT")" = "reviewed critic" ] ||
    fail "the review step did not reach the critic: $(head -c 300 "$OUT")"
jq -c 'select(.ev == "route" and .intent == "review")' "$T/audit" | grep -q . ||
    fail "no route event for intent review"
grep -qx 'CORRAL_INTENTS=review,translate' "$T/env" ||
    fail "CORRAL_INTENTS: $(grep CORRAL_INTENTS "$T/env")"

# The start may be one of them too, and serve routes them.
serve_start "$T/wf.yaml"
printf '%s\n' '{"protocol":"multiagent-1.0","role":"user","intent":"translate","task":"t","content":{"type":"text","text":"x"},"trace":{"id":"in-1"}}' >&8
printf '%s\n' '{"protocol":"multiagent-1.0","role":"user","intent":"reveiw","task":"t","content":{"type":"text","text":"x"},"trace":{"id":"in-2"}}' >&8
serve_eof
corral_wait 20
expect_rc 0
[ "$(grep '"in-1"' "$OUT" | jq -r .content.text)" = "reviewed critic" ] ||
    fail "translate was not routed: $(cat "$OUT")"
grep '"in-2"' "$OUT" | jq -r .content.text | grep -q 'review, translate' ||
    fail "the refusal does not list the workflow's intents: $(grep in-2 "$OUT")"

# corral check refuses what is not declared, or not a good name.
bad() {
	printf '%s\n' "$1" >"$T/bad.yaml"
	"$CORRAL" check "$T/bad.yaml" >"$OUT" 2>"$ERR"
	RC=$?
	expect_rc 2
	grep -q -- "$2" "$ERR" || fail "check of '$1': expected '$2', got: $(cat "$ERR")"
}
bad "$(printf 'intents: [review]\nagents: {a: {cmd: cat}}\nroutes: {reviews: a}')" "bad.yaml:3:10: routes: 'reviews' is not an intent"
bad "$(printf 'intents: [plan]\nagents: {a: {cmd: cat}}')" "'plan': it is a standard intent already"
bad "$(printf 'intents: [Review]\nagents: {a: {cmd: cat}}')" "'Review': an intent starts with a lowercase letter"
bad "$(printf 'intents: [a, a]\nagents: {a: {cmd: cat}}')" "'a' is listed twice"
printf 'start: review\nintents: [review]\nagents: {a: {cmd: cat}}\nroutes: {review: a}\n' >"$T/ok.yaml"
"$CORRAL" check "$T/ok.yaml" >"$OUT" 2>"$ERR" || fail "start: review before intents: was refused: $(cat "$ERR")"
exit 0
