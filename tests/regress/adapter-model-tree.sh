#!/bin/sh
# examples/model-tree offline (real CLIs, fake API): the Claude Code
# planner's model spawns the Codex worker, whose model spawns the Gemini
# reviewer; the reviewer's words come back up to the run's result, and
# corral tree --log draws the three levels with tokens and cost; corral
# replay of the run spawns the same tree of stand-ins, no difference.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/adapter-lib.sh"
fa_require claude codex gemini

ex="$SRCDIR/examples/model-tree"
review='[[mcp:spawn_agent:{\"agent\":\"reviewer\",\"task\":\"Review wc.py [[say:Looks good: it counts words.]]\"}]]'
s=$(now)
FAKEAPI_TMP=$T FAKEAPI_INSTALL=0 timeout -k 5 $((240 * SLOW)) \
    sh "$ex/run-offline.sh" "$CORRAL" --output text -v --log "$T/audit" \
    --goal "Write a word counter. [[mcp:spawn_agent:{\"agent\":\"worker\",\"task\":\"Write wc.py $review\"}]]" \
    >"$OUT" 2>"$ERR"
RC=$?
note "the example took $(elapsed "$s")s"
expect_rc 0
grep -q '^The tool said: worker-1 finished ([0-9]* tokens, \$0\.[0-9]*):$' "$OUT" ||
    fail "no worker result in the planner's answer: $(cat "$OUT")"
grep -q '^The tool said: reviewer-2 finished' "$OUT" && grep -q '^Looks good: it counts words\.$' "$OUT" ||
    fail "the reviewer's words did not reach the top: $(cat "$OUT")"
"$CORRAL" tree --log "$T/audit" >"$T/tree" 2>&1 || fail "corral tree: $(cat "$T/tree")"
note "$(cat "$T/tree")"
grep -q '^planner \[STOPPED, depth 0, [0-9.]*s, [1-9][0-9]* tokens, \$0\.[0-9]*[1-9]' "$T/tree" &&
    grep -q '^`-- worker-1 \[STOPPED, depth 1, [0-9.]*s, [1-9][0-9]* tokens, \$0\.[0-9]*[1-9]' "$T/tree" &&
    grep -q '^    `-- reviewer-2 \[STOPPED, depth 2, [0-9.]*s, [1-9][0-9]* tokens, \$0\.[0-9]*[1-9]' "$T/tree" ||
    fail "corral tree does not show the three levels with tokens and cost: $(cat "$T/tree")"
# Replayed: the stand-ins spawn the worker and the reviewer again, in
# their places in the tree; no difference.
expect_replay "$T/audit" "$ex/workflow.yaml" --log "$T/replayed"
grep -q '"ev":"spawn","agent":"reviewer-2","name":"reviewer","adapter":"replay","parent":"worker-1"' "$T/replayed" ||
    fail "the replay did not spawn the reviewer under the worker: $(grep '"ev":"spawn"' "$T/replayed")"
exit 0
