#!/bin/sh
# The commands that use the control socket, against a running corral
# serve: ps (with -S, and without: through the link to --control's
# socket; the request in flight with its trace id, intent, agent and age),
# tree, events (history and --follow; a failed request's id and intent),
# send (to an agent, as a request, through the routes), metrics, top (in a
# pseudo-terminal, via script(1), and into a file), stop (an agent, then
# the run).
. "$(dirname "$0")/ctl-lib.sh"

command -v script >/dev/null 2>&1 || skip "script (util-linux) is missing"
cat >"$T/wf.yaml" <<YAML
agents:
  echo:
    cmd: [$TA, --record, $T/rec]
    role: worker
  slow:
    cmd: [$TA, --hang]
    timeout: $((600 * SLOW))s
routes:
  plan: slow
  "*": echo
YAML
serve_start "$T/wf.yaml" -v --control "$SOCK" --log "$T/audit.ndjson"
wait_sock
"$CORRAL" events -S "$SOCK" --follow --json >"$T/follow" 2>"$T/follow.err" &
follower=$!
# A second one follows the requests in flight too, as lines.
"$CORRAL" events -S "$SOCK" --follow --new --requests --text >"$T/reqs" 2>"$T/reqs.err" &
reqfollower=$!

# slow gets a request it never answers: busy, for as long as the test
# runs (its timeout is not the default 30 s, which a loaded machine
# under the sanitizers outlasted before the metrics).
echo '{"protocol":"multiagent-1.0","role":"user","intent":"plan","task":"t","content":{"type":"text","text":"x"},"trace":{"id":"in-1"}}' >&8
wait_for '[ "$(map_state slow)" = busy ]' 10 || fail "slow should be busy, is $(map_state slow)"

# ps
ctl ps
[ "$CRC" = 0 ] || fail "corral ps: $(cat "$T/ctl.err")"
ctl_has "serve"
grep -q "^  echo  *idle  *[0-9][0-9]* *0 " "$T/ctl.out" || fail "ps: echo idle: $(cat "$T/ctl.out")"
grep -q "^  slow  *busy  *[0-9][0-9]* *1 " "$T/ctl.out" || fail "ps: slow busy, 1 in flight: $(cat "$T/ctl.out")"
# The request in flight, with what corral cancel needs: its trace id.
grep -q "^  REQUEST  *INTENT  *STATE  *AGENT  *AGE  *TASK$" "$T/ctl.out" &&
    grep -q "^  in-1  *plan  *inflight  *slow  *[0-9.]*[smhd][0-9]*s* *t$" "$T/ctl.out" ||
    fail "ps: the request in flight: $(cat "$T/ctl.out")"
# events --requests: the same request, once, with its trace id.
ctl events --requests --json --filter no_such_event
[ "$(jq -r 'select(.type == "request_started") | [.source, .data.requestId, .data.intent, .data.state] | join(" ")' "$T/ctl.out")" = \
    "slow in-1 plan inflight" ] || fail "events --requests: $(cat "$T/ctl.out")"
wait_for 'grep -q " request_started  *slow  *request in-1 plan (inflight, age [0-9.]*s): t$" "$T/reqs"' 10 ||
    fail "events --follow --requests: no line for in-1: $(cat "$T/reqs" "$T/reqs.err")"
ctl ps --json
[ "$(jq -r '.run.mode' "$T/ctl.out")" = serve ] || fail "ps --json: $(cat "$T/ctl.out")"
[ "$(jq -r '.agents | length' "$T/ctl.out")" = 2 ] || fail "ps --json agents: $(cat "$T/ctl.out")"
[ "$(jq -r '.requests[] | [.requestId, .intent, .state, .kind, .agentId, .task, (.age >= 0), (.acceptedAt > 0)] | join(" ")' "$T/ctl.out")" = \
    "in-1 plan inflight input slow t true true" ] || fail "ps --json requests: $(jq -c .requests "$T/ctl.out")"
# Without -S: the run's socket is elsewhere (--control), linked from the
# directory, so ps lists it with that socket; --run filters.
runid=$(jq -r '.run.runId' "$T/ctl.out")
[ -L "$XDG_RUNTIME_DIR/corral/$runid.sock" ] ||
    fail "no link to --control's socket in $XDG_RUNTIME_DIR/corral: $(ls -l "$XDG_RUNTIME_DIR/corral")"
"$CORRAL" ps >"$T/ps.out" 2>&1 || fail "corral ps: $(cat "$T/ps.out")"
grep -q "^$runid  *[0-9][0-9]*  *serve .* $SOCK\$" "$T/ps.out" || fail "ps without -S: $(cat "$T/ps.out")"
"$CORRAL" ps --run "$(echo "$runid" | cut -c1-3)" >"$T/ps.out" 2>&1 && grep -q "^$runid " "$T/ps.out" ||
    fail "ps --run PREFIX: $(cat "$T/ps.out")"
"$CORRAL" ps --run nosuch >"$T/ps.out" 2>&1
grep -q "^no corral with run id nosuch is running" "$T/ps.out" || fail "ps --run nosuch: $(cat "$T/ps.out")"

# tree, live
ctl tree
[ "$CRC" = 0 ] || fail "corral tree: $(cat "$T/ctl.err")"
ctl_has "echo [READY, depth 0"
ctl_has "slow [BUSY, depth 0"
ctl tree --format dot
ctl_has "digraph corral"

# send: a message, a request, a request through the routes, errors.
ctl send echo '{"protocol":"multiagent-1.0","role":"user","intent":"execute","task":"m","content":{"type":"text","text":"just so you know"}}'
[ "$CRC" = 0 ] || fail "send a message: $(cat "$T/ctl.err")"
grep -q '^corral: sent [0-9A-Z]\{26\} to \["echo"\]$' "$T/ctl.err" || fail "send: $(cat "$T/ctl.err")"
wait_for 'grep -q "just so you know" "$T/rec"' 10 || fail "echo did not get the message"
grep "just so you know" "$T/rec" | grep -q '"corral":{"kind":"message","from":"client:' ||
    fail "the message should be marked as one: $(grep 'just so' "$T/rec")"
ctl send --wait echo "are you there"
[ "$CRC" = 0 ] || fail "send --wait: $(cat "$T/ctl.err")"
ctl_has '"text":"ok echo"'
mid=$(sed -n 's/^corral: sent \([0-9A-Z]*\) .*/\1/p' "$T/ctl.err")
ctl_has "\"parents\":[\"$mid\"]"
ctl send execute "route me"
[ "$CRC" = 0 ] || fail "send INTENT: $(cat "$T/ctl.err")"
grep -q "through the routes for execute" "$T/ctl.err" || fail "send INTENT: $(cat "$T/ctl.err")"
ctl_has '"text":"ok echo"'
ctl send nosuch "x"
[ "$CRC" = 1 ] || fail "send to nothing should fail, got $CRC"
grep -q "nosuch is neither an agent of this run nor an intent" "$T/ctl.err" ||
    fail "send to nothing: $(cat "$T/ctl.err")"

# metrics
ctl metrics
[ "$CRC" = 0 ] || fail "corral metrics: $(cat "$T/ctl.err")"
ctl_has '# TYPE corral_request_duration_seconds histogram'
ctl_has 'corral_agent_inflight{agent="slow"} 1'
ctl_has 'corral_request_duration_seconds_bucket{le="+Inf"} 2'
ctl_has 'corral_requests_total{outcome="replied"} 2'
ctl_has 'corral_agents{state="BUSY"} 1'
ctl_has 'corral_messages_sent_total 2'
awk '/^[a-z]/ && NF != 2 { bad = 1 } END { exit bad }' "$T/ctl.out" ||
    fail "metrics: a sample line is not 'name value': $(awk '/^[a-z]/ && NF != 2' "$T/ctl.out" | head -n 3)"

# top, drawn in a pseudo-terminal: two screens, then q.
TERM=xterm script -qfec "stty cols 120 rows 30; $CORRAL top -S $SOCK -n 2 -d 0.2" "$T/top.raw" \
    </dev/null >/dev/null 2>&1 || fail "corral top -n 2 failed: $(cat "$T/top.raw")"
sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g' "$T/top.raw" | tr -d '\r' >"$T/top.txt"
for w in "corral top  run" "agents 2: 1 busy, 1 idle" "AGENT" "LAST ERROR"; do
	grep -qF "$w" "$T/top.txt" || fail "top's screen lacks '$w':
$(cat "$T/top.txt")"
done
grep -q "^slow  *busy  *[0-9][0-9]* *1 " "$T/top.txt" || fail "top: slow busy:
$(cat "$T/top.txt")"
grep -q "^echo  *idle " "$T/top.txt" || fail "top: echo idle:
$(cat "$T/top.txt")"
grep -q "$(printf '\033\\[?1049h')" "$T/top.raw" && grep -q "$(printf '\033\\[?1049l')" "$T/top.raw" ||
    fail "top should enter and leave the alternate screen"
# Not a terminal: plain screens, no escape sequences.
"$CORRAL" top -S "$SOCK" -n 2 -d 0.2 >"$T/top.plain" 2>&1 </dev/null || fail "corral top >file: $(cat "$T/top.plain")"
grep -q "$(printf '\033')" "$T/top.plain" && fail "top wrote escape sequences to a file: $(od -c "$T/top.plain" | head)"
[ "$(grep -c '^corral top  run ' "$T/top.plain")" = 2 ] || fail "top -n 2 >file: two screens expected: $(cat "$T/top.plain")"
grep -q "^slow  *busy  *[0-9][0-9]* *1 " "$T/top.plain" || fail "top >file: slow busy: $(cat "$T/top.plain")"
grep -q "^in-1  *plan  *inflight  *slow " "$T/top.plain" || fail "top >file: the request in flight: $(cat "$T/top.plain")"
( sleep 1; printf q; sleep 10 ) | TERM=xterm script -qfec "$CORRAL top -S $SOCK -d 0.2" "$T/top2.raw" >/dev/null 2>&1 &
topper=$!
wait_for '! kill -0 $topper 2>/dev/null' 8 || fail "top did not quit on q"

# stop an agent: its request is cancelled, it stops.
ctl stop slow
[ "$CRC" = 0 ] || fail "corral stop slow: $(cat "$T/ctl.err")"
ctl_has "stopping slow (stopping)"
wait_for '[ "$(map_state slow)" = stopped ]' 10 || fail "slow should be stopped, is $(map_state slow)"
wait_for 'grep -q "\"in-1\"" "$OUT"' 10 || fail "the request at slow should have its outcome on stdout"
grep '"in-1"' "$OUT" | grep -q '"code":"cancelled"' || fail "in-1: $(cat "$OUT")"
wait_for 'grep -q " request_ended  *slow  *ended: in-1 plan " "$T/reqs"' 10 ||
    fail "events --follow --requests: in-1 did not end: $(cat "$T/reqs")"
[ "$(grep -c " in-1 " "$T/reqs")" = 2 ] || fail "events --requests: in-1 should start and end once: $(cat "$T/reqs")"
ctl stop nosuch
[ "$CRC" = 1 ] && grep -q "agent not found (error 2001)" "$T/ctl.err" ||
    fail "stop nosuch: $CRC $(cat "$T/ctl.err")"

# events: the history, filtered, as text and as JSON.
ctl events --json
[ "$CRC" = 0 ] || fail "corral events: $(cat "$T/ctl.err")"
for t in agent_registered agent_state_changed message_sent message_delivered participant_connected system_error; do
	grep -q "\"type\":\"$t\"" "$T/ctl.out" || fail "events: no $t event"
done
jq -r .id "$T/ctl.out" >"$T/ids"
sort -c "$T/ids" 2>/dev/null || fail "event ids are not increasing"
[ "$(sort -u "$T/ids" | wc -l)" = "$(wc -l <"$T/ids")" ] || fail "event ids repeat"
ctl events --text --filter agent_state_changed --agent slow
[ "$CRC" = 0 ] || fail "corral events --text: $(cat "$T/ctl.err")"
grep -q "agent_state_changed  *slow  *idle -> busy" "$T/ctl.out" || fail "events --text: $(cat "$T/ctl.out")"
grep -q "slow  *idle -> stopping (stopped by client:" "$T/ctl.out" || fail "events --text: $(cat "$T/ctl.out")"
grep -v " agent_state_changed  *slow " "$T/ctl.out" | grep -q . && fail "events --filter let others through: $(cat "$T/ctl.out")"
ctl events --text --filter system_error
grep -q " system_error  *slow  *cancelled: .*(request in-1, plan)$" "$T/ctl.out" ||
    fail "events --text: the cancelled request's id and intent: $(cat "$T/ctl.out")"

# stop the run: corral shuts down as for SIGTERM; the follower ends too.
ctl stop --wait
[ "$CRC" = 0 ] || fail "corral stop: $(cat "$T/ctl.err")"
ctl_has "stopping run "
corral_wait 20
expect_rc 143
wait_for '! kill -0 $follower 2>/dev/null' 10 || fail "events --follow did not end with corral"
wait "$follower" || fail "events --follow failed: $(cat "$T/follow.err")"
wait_for '! kill -0 $reqfollower 2>/dev/null' 10 || fail "events --follow --requests did not end with corral"
grep -q '"source":"echo","data":{"agentId":"echo","previousState":"stopping","newState":"stopped"' "$T/follow" ||
    fail "the follower should have seen echo stop: $(tail -n 3 "$T/follow")"
jq -r .id "$T/follow" | sort -c 2>/dev/null || fail "followed event ids are not in order"
n=$(jq -r .id "$T/follow" | sort -u | wc -l)
[ "$n" = "$(wc -l <"$T/follow")" ] || fail "the follower printed an event twice"
grep -q '"ev":"map_event"' "$T/audit.ndjson" || fail "no map_event lines in the audit log"
"$CORRAL" tree --log "$T/audit.ndjson" | grep -q "^slow \[STOPPED" ||
    fail "corral tree --log: $("$CORRAL" tree --log "$T/audit.ndjson")"
[ ! -e "$SOCK" ] || fail "$SOCK is still there after corral exited"
[ ! -L "$XDG_RUNTIME_DIR/corral/$runid.sock" ] || fail "the link to $SOCK is still there after corral exited"
expect_no_leftovers
exit 0
