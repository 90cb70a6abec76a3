#!/bin/sh
# corral replay: a recorded run is run again with no agent started, each
# request answered with the reply recorded at the same path.
#   - the price tracker (next_actions, a reflection) and the word count,
#     replayed with their own workflows: no difference, exit 0, nothing
#     on stdout, and no agent's program runs (their path: is gone);
#   - the price tracker with execute routed to another agent: the route,
#     the missing answer and the different result are reported, exit 1;
#   - --agents summarizer: that agent runs live, the others are
#     replayed, no difference; an unknown name or a live agent whose
#     program is missing is refused, exit 2;
#   - a recording whose last line is torn: replayed from its whole lines,
#     saying what was left out;
#   - a recording in a newer format: refused, exit 2;
#   - a recording made with --log-level decisions (no envelopes):
#     refused, exit 2, saying to record with --log-level full;
#   - the research tree: the coordinator's stand-in spawns its researchers
#     again, theirs their helpers, each in its place in the tree, and
#     answers once they have: no difference; with tree_depth 1 the helpers'
#     spawns are refused, the replay says they were not made and still
#     ends, exit 1;
#   - an agent that asks through the routes (_corral/route) while it works
#     and answers once the result came: its stand-in asks again, no
#     difference; with that intent routed to another agent, the route and
#     the missing answer of the agent's own request are reported, exit 1.
# The other examples are replayed by their own tests (dialect-mixed-team,
# py-agent, steps-example, adapter-example, adapter-model-tree).
. "$(dirname "$0")/lib.sh"

CORRAL_AGENT_PATH="$AGENTS"
PRICES_DIR="$T/prices"
PRICES_DATE=2026-03-10
export CORRAL_AGENT_PATH PRICES_DIR PRICES_DATE
mkdir "$PRICES_DIR" || fail "mkdir $PRICES_DIR"

# record NAME GOAL: run examples/NAME with its audit log in $T/NAME.log.
record() {
	corral_run 30 run "$SRCDIR/examples/$1/workflow.yaml" --goal "$2" \
	    --log "$T/$1.log"
	expect_rc 0
}

# replay WANT_RC ARGS...: corral replay ARGS; stdout in $OUT, stderr $ERR.
replay() {
	_want=$1
	shift
	corral_run 30 replay "$@"
	[ "$RC" = "$_want" ] || fail "corral replay $*: exit $RC, not $_want; stdout: $(cat "$OUT"); stderr: $(cat "$ERR")"
}

# A workflow that names no agent program that exists: none may run.
noagents() {
	sed 's|^path:.*|path: [/nonexistent]|' "$SRCDIR/examples/$1/workflow.yaml" >"$T/$1.yaml"
}

record price-tracker "track prices daily"
record word-count "count the words"
record research-tree "research: supervision trees, backpressure and circuit breakers"
# From here no agent program can be found but those --agents runs live.
unset CORRAL_AGENT_PATH
for ex in price-tracker word-count; do
	noagents $ex
	replay 0 "$T/$ex.log" "$T/$ex.yaml" --log "$T/$ex.replay.log"
	[ -s "$OUT" ] && fail "$ex: differences on stdout: $(cat "$OUT")"
	log_has "replay: 0 differences from the recording $T/$ex.log" ||
	    fail "$ex: no summary on stderr: $(cat "$ERR")"
	n=$(grep -c '"ev":"spawn"' "$T/$ex.replay.log")
	r=$(grep -c '"ev":"spawn".*"adapter":"replay"' "$T/$ex.replay.log")
	[ "$n" -gt 0 ] && [ "$n" = "$r" ] ||
	    fail "$ex: $n agents spawned, $r of them replayed"
	a=$(grep -c '"ev":"outcome"' "$T/$ex.log")
	b=$(grep -c '"ev":"outcome"' "$T/$ex.replay.log")
	[ "$a" = "$b" ] || fail "$ex: $a outcomes recorded, $b replayed"
done
grep -q '"ev":"reflect"' "$T/price-tracker.replay.log" ||
    fail "the price tracker's replay made no reflection"

# --agents: the summarizer runs live (its reply is made again, the same:
# it is deterministic), the others are replayed.
CORRAL_AGENT_PATH="$AGENTS"
export CORRAL_AGENT_PATH
replay 0 "$T/price-tracker.log" "$T/price-tracker.yaml" \
    --agents summarizer --log "$T/mixed.log"
unset CORRAL_AGENT_PATH
[ -s "$OUT" ] && fail "--agents summarizer: differences: $(cat "$OUT")"
grep -q '"ev":"spawn","agent":"summarizer","name":"summarizer","pid":' "$T/mixed.log" ||
    fail "--agents summarizer: the summarizer did not run: $(grep '"ev":"spawn"' "$T/mixed.log")"
[ "$(grep -c '"ev":"spawn".*"adapter":"replay"' "$T/mixed.log")" = 4 ] ||
    fail "--agents summarizer: the other four are not replayed"
replay 2 "$T/price-tracker.log" "$T/price-tracker.yaml" --agents summarizer,nosuch
log_has "replay: --agents: $T/price-tracker.yaml has no agent 'nosuch'" ||
    fail "--agents nosuch: $(cat "$ERR")"
# A live agent whose program cannot be found is refused before the run.
replay 2 "$T/price-tracker.log" "$T/price-tracker.yaml" --agents summarizer
log_has "agents.summarizer.cmd:" || fail "--agents, no program: $(cat "$ERR")"

# A changed route: execute goes to the critic, which never answered it.
sed 's/^  execute: executor$/  execute: critic/' "$T/price-tracker.yaml" >"$T/changed.yaml"
replay 1 "$T/price-tracker.log" "$T/changed.yaml"
p="plan#1@planner/decompose#1@decomposer/execute#1"
for want in \
    "route    $p: routed to critic; recorded: executor" \
    "answer   $p: no answer recorded from critic (answered with an error)" \
    "missing  $p@executor/summarize#1: recorded (routed to summarizer, replied), not made now" \
    "result   job plan#1: failed, ended by $p; recorded: ok, ended by $p@executor/summarize#1@summarizer/reflect#1@critic/finalize#1"; do
	grep -qxF "$want" "$OUT" || fail "a changed route: no line '$want' in: $(cat "$OUT")"
done
log_has "replay: 6 differences from the recording" ||
    fail "a changed route: summary: $(cat "$ERR")"

# A torn last line: the whole lines are replayed, the rest reported.
head -c -10 "$T/word-count.log" >"$T/torn.log"
replay 0 "$T/torn.log" "$T/word-count.yaml"
grep -q "the last line is cut short (it has no newline): the log ends mid-write; line [0-9]* ([0-9]* bytes) is left out" "$ERR" ||
    fail "a torn recording: $(cat "$ERR")"

# A newer format: refused before anything runs.
sed '1s/"format":1,/"format":2,/' "$T/word-count.log" >"$T/newer.log"
replay 2 "$T/newer.log" "$T/word-count.yaml"
grep -q "the log is in format 2 (written by corral .*); this corral (.*) reads format 1 and older" "$ERR" ||
    fail "a newer recording: $(cat "$ERR")"

# The research tree: spawns made again by the stand-ins, in the tree.
noagents research-tree
replay 0 "$T/research-tree.log" "$T/research-tree.yaml" --log "$T/tree.replay.log"
[ -s "$OUT" ] && fail "research-tree: differences: $(cat "$OUT")"
want=$(jq -r 'select(.ev == "spawn") | "\(.name) \(.parent // "-")"' "$T/research-tree.log" |
    sed 's/-[0-9]*$//' | sort | tr '\n' ,)
got=$(jq -r 'select(.ev == "spawn") | "\(.name) \(.parent // "-")"' "$T/tree.replay.log" |
    sed 's/-[0-9]*$//' | sort | tr '\n' ,)
[ "$got" = "$want" ] || fail "research-tree: the replay's tree ($got) is not the recording's ($want)"
case $want in *"helper researcher"*) ;; *) fail "research-tree: no helper in the recording: $want" ;; esac
[ "$(grep -c '"ev":"spawn".*"adapter":"replay"' "$T/tree.replay.log")" = \
    "$(grep -c '"ev":"spawn"' "$T/tree.replay.log")" ] ||
    fail "research-tree: an agent of the replay is not a stand-in"
# No helper may be spawned now: those spawns are refused, not waited for.
sed 's/^  tree_depth: 2$/  tree_depth: 1/' "$T/research-tree.yaml" >"$T/shallow.yaml"
replay 1 "$T/research-tree.log" "$T/shallow.yaml"
grep -q '^missing  plan#1@coordinator>execute#[0-9]@researcher>execute#1: recorded (routed to helper, replied), not made now$' "$OUT" ||
    fail "tree_depth 1: the helpers not made are not reported: $(cat "$OUT")"
grep -v '^missing  plan#1@coordinator>execute#[0-9]@researcher>execute#1: ' "$OUT" | grep . &&
    fail "tree_depth 1: more than the helpers differ: $(cat "$OUT")"

# An agent's own request through the routes: asker asks retrieve while it
# works on the goal, and answers once the result came.
cat >"$T/asker.sh" <<'EOF'
#!/bin/sh
while IFS= read -r line; do
	kind=$(printf '%s' "$line" | jq -r '.corral.kind // ""')
	if [ "$(printf '%s' "$line" | jq -r '.intent // ""')" = plan ] && [ "$kind" != result ]; then
		plan=$(printf '%s' "$line" | jq -r '.trace.id')
		printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"_corral/route","params":{"payload":{"protocol":"multiagent-1.0","role":"agent","intent":"retrieve","task":"find it","content":{"type":"text","text":"find it"}}}}'
	elif [ "$kind" = result ]; then
		printf '{"protocol":"multiagent-1.0","role":"agent","intent":"finalize","task":"done","content":{"type":"text","text":"found"},"trace":{"id":"a-1","parents":["%s"]}}\n' "$plan"
	fi
done
EOF
cat >"$T/looker.sh" <<'EOF'
#!/bin/sh
while IFS= read -r line; do
	id=$(printf '%s' "$line" | jq -r '.trace.id // ""')
	[ -n "$id" ] && printf '{"protocol":"multiagent-1.0","role":"agent","intent":"finalize","task":"x","content":{"type":"text","text":"here"},"trace":{"id":"l-1","parents":["%s"]}}\n' "$id"
done
EOF
chmod +x "$T/asker.sh" "$T/looker.sh"
cat >"$T/asks.yaml" <<EOF
name: asks
start: plan
agents:
  asker: {cmd: [$T/asker.sh]}
  looker: {cmd: [$T/looker.sh]}
routes:
  plan: asker
  retrieve: looker
EOF
corral_run 30 run "$T/asks.yaml" --goal go --log "$T/asks.log"
expect_rc 0
grep -q '"ev":"route","agent":"looker","id":"[^"]*","intent":"retrieve"' "$T/asks.log" ||
    fail "the asker's request did not reach the looker: $(cat "$ERR")"
replay 0 "$T/asks.log" "$T/asks.yaml" --log "$T/asks.replay.log"
[ -s "$OUT" ] && fail "asks: differences: $(cat "$OUT")"
grep -q '"ev":"route","agent":"looker","id":"[^"]*","intent":"retrieve"' "$T/asks.replay.log" ||
    fail "asks: the stand-in did not ask again"
sed 's/^  retrieve: looker$/  retrieve: asker/' "$T/asks.yaml" >"$T/asks2.yaml"
replay 1 "$T/asks.log" "$T/asks2.yaml"
[ "$(cat "$OUT")" = "route    plan#1@asker>retrieve#1: routed to asker; recorded: looker
answer   plan#1@asker>retrieve#1: no answer recorded from asker (answered with an error)" ] ||
    fail "asks, retrieve routed to the asker: $(cat "$OUT")"

# Decisions only: the replies a replay answers with are not there.
corral_run 30 run "$SRCDIR/examples/word-count/workflow.yaml" --goal "a b a" \
    --log "$T/decisions.log" --log-level decisions
expect_rc 0
replay 2 "$T/decisions.log" "$T/word-count.yaml"
grep -q "recorded with --log-level decisions.*record with --log-level full" "$ERR" ||
    fail "a decisions-only recording: $(cat "$ERR")"
exit 0
