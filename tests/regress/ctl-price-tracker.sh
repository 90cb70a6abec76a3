#!/bin/sh
# The control commands against a running `corral run` of
# examples/price-tracker.  The run is held in the middle, deterministically:
# prices.csv is a fifo, so the executor blocks reading it (busy, one
# request in flight) until the test writes yesterday's prices into it.
# Meanwhile: ps, tree, events --follow, send (a request to the critic and
# one through the routes to the planner), metrics, top.  Then the run
# finishes as usual (exit 0, the critic's review in the result), and the
# follower saw it all.  A second run, held the same way, is stopped with
# corral stop: exit 143, the socket gone.
#
# The run is the example's workflow with its executor's timeout (10 s)
# and the run's deadline (30 s) times SLOW: the executor's request is
# held while this script runs eight commands, which a slow machine takes
# its time over.
. "$(dirname "$0")/ctl-lib.sh"

command -v script >/dev/null 2>&1 || skip "script (util-linux) is missing"
EX="$SRCDIR/examples/price-tracker"
[ -f "$EX/workflow.yaml" ] || fail "no example at $EX"
CORRAL_AGENT_PATH="$AGENTS"
PRICES_DIR="$T/prices"
PRICES_DATE=2026-03-10
export CORRAL_AGENT_PATH PRICES_DIR PRICES_DATE
mkdir "$PRICES_DIR" || fail "mkdir $PRICES_DIR"
WF="$T/workflow.yaml"
sed -e "s|^path: \[../../build/agents\]\$|path: [$AGENTS]|" \
    -e "s|^    cwd: \.\$|    cwd: $EX|" \
    -e "s|^    timeout: 10s\$|    timeout: $((10 * SLOW))s|" \
    -e "s|^  deadline: 30s\$|  deadline: $((30 * SLOW))s|" \
    "$EX/workflow.yaml" >"$WF"
[ "$(grep -c -e "$EX\$" -e "$AGENTS\]\$" -e " $((10 * SLOW))s\$" \
    -e " $((30 * SLOW))s\$" "$WF")" = 5 ] ||
    fail "the example's workflow changed: adapt this script to it"

# hold: start the run with the executor held by the fifo.
hold() {
	rm -f "$PRICES_DIR/prices.csv"
	mkfifo "$PRICES_DIR/prices.csv" || fail "mkfifo"
	corral_start run "$WF" --goal "track prices daily" \
	    --control "$SOCK" --log "$T/audit$1.ndjson" --output text -v
	wait_sock
	wait_for '[ "$(map_state executor)" = busy ]' 10 ||
	    fail "the executor should be busy on the fifo, is $(map_state executor)"
}

hold 1
"$CORRAL" events -S "$SOCK" --follow --json >"$T/follow" 2>"$T/follow.err" &
follower=$!

ctl ps
[ "$CRC" = 0 ] || fail "ps: $(cat "$T/ctl.err")"
ctl_has " run "
ctl_has "price-tracker"
for a in planner decomposer summarizer critic; do
	grep -q "^  $a  *idle " "$T/ctl.out" || fail "ps: $a should be idle: $(cat "$T/ctl.out")"
done
grep -q "^  executor  *busy  *[0-9][0-9]* *1 " "$T/ctl.out" || fail "ps: executor busy: $(cat "$T/ctl.out")"
ctl tree
ctl_has "executor [BUSY, depth 0"
ctl send --wait critic "how does it look so far?"
[ "$CRC" = 0 ] || fail "send to the critic: $(cat "$T/ctl.err")"
ctl_has '"agent":{"id":"critic","name":"Critic"'
ctl send plan "plan a picnic"
[ "$CRC" = 0 ] || fail "send through the routes: $(cat "$T/ctl.err")"
ctl_has '"agent":{"id":"planner","name":"Planner"'
ctl metrics
ctl_has 'corral_agent_inflight{agent="executor"} 1'
ctl_has 'corral_queue_depth{intent="execute"} 0'
ctl_has 'corral_agents{state="BUSY"} 1'
TERM=xterm script -qfec "stty cols 140 rows 20; $CORRAL top -S $SOCK -n 1" "$T/top.raw" \
    </dev/null >/dev/null 2>&1 || fail "top: $(cat "$T/top.raw")"
sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g' "$T/top.raw" | tr -d '\r' >"$T/top.txt"
grep -q "price-tracker (run, pid" "$T/top.txt" && grep -q "^executor  *busy " "$T/top.txt" ||
    fail "top's screen:
$(cat "$T/top.txt")"
note "$(cat "$T/top.txt")"

# Let the executor read yesterday's prices: the run goes on and ends.
printf 'date,item,price,currency,source\n2026-03-09,Gadget Pro,49.99,USD,history\n' \
    >"$PRICES_DIR/prices.csv"
corral_wait 30
expect_rc 0
grep -q "Gadget Pro .*-20.0%" "$OUT" && grep -q "^Review (critic)" "$OUT" ||
    fail "the run's result: $(cat "$OUT")"
wait_for '! kill -0 $follower 2>/dev/null' 10 || fail "events --follow did not end with corral"
wait "$follower"
for w in '"source":"executor","data":{"agentId":"executor","previousState":"idle","newState":"busy"' \
    '"source":"executor","data":{"agentId":"executor","previousState":"busy","newState":"idle"' \
    '"type":"message_delivered"' \
    '"source":"critic","data":{"agentId":"critic","previousState":"stopping","newState":"stopped"'; do
	grep -qF "$w" "$T/follow" || fail "the follower did not see $w"
done
[ ! -e "$SOCK" ] || fail "$SOCK is still there after the run"

# The second run, stopped.
hold 2
ctl stop --wait
[ "$CRC" = 0 ] || fail "stop: $(cat "$T/ctl.err")"
ctl_has "stopping run "
corral_wait 20
expect_rc 143
[ ! -e "$SOCK" ] || fail "$SOCK is still there after the run was stopped"
expect_no_leftovers
exit 0
