#!/bin/sh
# Hostile and careless clients of the control socket.
#
# - Malformed frames (not JSON, no "jsonrpc", a bad method or id, a line
#   over 1 MiB, a NUL byte) each get their JSON-RPC error, a batch its
#   array of answers, and the request after them is answered.  The line
#   over 1 MiB is answered with its own id, read from its first bytes.
# - 100 clients at once are all served; past 128 connections, a new one
#   takes the place of an idle one, and corral says so.
# - 128 idle connections do not lock the owner out: corral ps and corral
#   stop work (a new connection closes an idle one to make room), and 300
#   more connections make a few log lines, not 300.
# - A client that subscribes and never reads costs a bounded buffer: the
#   events it cannot take are dropped and counted, and once it reads it
#   gets one system_error event "events_dropped" saying how many.  (The
#   resident size is checked only without the sanitizers.)
# - A client that sends requests and never reads the answers is not read
#   any more (its answers would pile up): corral's memory stays bounded
#   and other clients are still served.
# - Clients that hang up in the middle of a line, or of a stream of
#   events, are forgotten, and nothing else notices.
. "$(dirname "$0")/ctl-lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  echo:
    cmd: [$TA]
  spare:
    cmd: [cat]
    restart: temporary
routes:
  "*": echo
YAML
serve_start "$T/wf.yaml" -v --control "$SOCK"
wait_sock

# 1. Malformed frames, then a good one.
{
	echo 'not json'
	echo '[{"jsonrpc":"2.0","id":1,"method":"ping"}]'
	echo '{"id":1,"method":"ping"}'
	echo '{"jsonrpc":"2.0","id":2,"method":5}'
	echo '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}'
	echo '{"jsonrpc":"1.0","id":3,"method":"ping"}'
	echo '{"jsonrpc":"2.0","id":4,"method":"map/agents/list","params":[1]}'
	echo '{"jsonrpc":"2.0","id":5,"method":"no/such/method"}'
	printf '{"jsonrpc":"2.0","id":6,"method":"ping","params":{"pad":"'
	head -c 2097152 /dev/zero | tr '\0' x
	echo '"}}'
	printf '{"jsonrpc":"2.0","id":7,"method":"ping"\0}\n'
	echo '{"jsonrpc":"2.0","id":8,"method":"ping"}'
} >"$T/bad"
"$CP" -s "$SOCK" -f "$T/bad" -e 11 -w $((10 * SLOW)) >"$T/bad.out" 2>&1 ||
    fail "expected 11 answers to 11 lines: $(cat "$T/bad.out")"
# expect LINE N CODE: the Nth answer is an error with CODE and id null.
expect_err() {
	_l=$(sed -n "${1}p" "$T/bad.out")
	case "$_l" in
	*"\"id\":$2,\"error\":{\"code\":$3,"*) ;;
	*) fail "answer $1 should be error $3 for id $2: $_l" ;;
	esac
}
expect_err 1 null -32700
sed -n 2p "$T/bad.out" | grep -qxF '[{"jsonrpc":"2.0","id":1,"result":{}}]' ||
    fail "a batch of one ping is answered with an array of one answer: $(sed -n 2p "$T/bad.out")"
expect_err 3 1 -32600
expect_err 4 2 -32600
expect_err 5 null -32600
expect_err 6 3 -32600
expect_err 7 4 -32602
expect_err 8 5 -32601
expect_err 9 6 -32600
expect_err 10 null -32700
sed -n 11p "$T/bad.out" | grep -qxF '{"jsonrpc":"2.0","id":8,"result":{}}' ||
    fail "the good frame after the bad ones: $(sed -n 11p "$T/bad.out")"
grep -q '"data":{"category":"protocol","retryable":false}' "$T/bad.out" ||
    fail "errors should carry MAP's category: $(head -n 1 "$T/bad.out")"

# 2. 100 clients at once; the limit.
"$CP" -s "$SOCK" -n 100 -l "$(CONNECT)" -l '{"jsonrpc":"2.0","id":2,"method":"map/agents/list"}' \
    -e 2 -q -w $((20 * SLOW)) 2>"$T/100.err" || fail "100 clients: $(cat "$T/100.err")"
grep -q "100 connections, 200 lines" "$T/100.err" || fail "100 clients: $(cat "$T/100.err")"
"$CP" -s "$SOCK" -n 130 -l "$(CONNECT)" -N -q 2>/dev/null &
many=$!
wait_log "128 clients are connected, the limit" 20
kill "$many"
wait "$many" 2>/dev/null
wait_for '[ "$(metric corral_control_clients)" = 1 ]' 20 ||
    fail "the 130 clients that left are still counted: $(metric corral_control_clients)"

# 2b. 128 idle connections, then the owner's commands and 300 more.
lines0=$(grep -c "128 clients are connected, the limit" "$ERR")
"$CP" -s "$SOCK" -n 128 -l "$(CONNECT)" -N -q 2>/dev/null &
idle=$!
wait_for '[ "$(metric corral_control_clients)" = 128 ]' 20 ||
    fail "128 idle clients did not connect: $(metric corral_control_clients)"
ctl ps
[ "$CRC" = 0 ] || fail "corral ps with 128 idle connections: $(cat "$T/ctl.err")"
ctl_has "spare"
ctl stop spare
[ "$CRC" = 0 ] || fail "corral stop with 128 idle connections: $(cat "$T/ctl.err")"
wait_log "agent spare: STOPPING -> STOPPED" 20
# Each of the 300 gets its answer, or the error that made room for a
# newer one.
"$CP" -s "$SOCK" -n 300 -l "$(CONNECT)" -e 1 -w 60 -q 2>"$T/300.err" ||
    fail "300 more connections: $(cat "$T/300.err")"
lines=$(( $(grep -c "128 clients are connected, the limit" "$ERR") - lines0 ))
note "128 idle connections and 300 more: $lines log lines about the limit"
[ "$lines" -le 4 ] ||
    fail "expected at most 4 log lines about the limit for 300 connections, got $lines"
kill "$idle"
wait "$idle" 2>/dev/null

# 3. A subscriber that never reads, while 3000 messages make 6000 events.
SEND='{"jsonrpc":"2.0","id":9,"method":"map/send","params":{"to":{"agent":"echo"},"payload":"PAD"}}'
SEND=$(printf '%s' "$SEND" | sed "s/PAD/$(head -c 600 /dev/zero | tr '\0' p)/")
"$CP" -s "$SOCK" -l "$(CONNECT)" -l '{"jsonrpc":"2.0","id":2,"method":"map/subscribe"}' \
    -N -w 5 >"$T/deaf.out" 2>&1 &
deaf=$!
wait_for '[ "$(metric corral_subscriptions)" = 1 ]' 10 ||
    fail "the deaf client did not subscribe: $(metric corral_subscriptions)"
rss0=$(sup_rss)
"$CP" -s "$SOCK" -l "$SEND" -r 3000 -e 3000 -q -w $((20 * SLOW)) 2>"$T/send.err" ||
    fail "3000 map/send: $(cat "$T/send.err")"
rss1=$(sup_rss)
dropped=$(metric corral_events_dropped_total)
[ "${dropped:-0}" -gt 1000 ] || fail "expected events dropped for the deaf client, got '$dropped'"
note "deaf subscriber: $dropped events dropped; supervisor RSS $rss0 -> $rss1 kB"
# (Not under the sanitizers: their quarantine keeps freed memory.)
[ "$SLOW" != 1 ] || [ $((rss1 - rss0)) -lt $((64 * 1024)) ] ||
    fail "corral grew by $((rss1 - rss0)) kB for a client that does not read"
kill -USR1 "$deaf"
wait "$deaf"
grep -q '"type":"system_error",.*"code":"events_dropped","category":"resource"' "$T/deaf.out" ||
    fail "the deaf client should hear of its dropped events: $(tail -c 600 "$T/deaf.out")"
n=$(grep -c '"method":"map/event"' "$T/deaf.out")
last=$(grep '"method":"map/event"' "$T/deaf.out" | tail -n 1 | sed 's/.*"sequenceNumber":\([0-9]*\).*/\1/')
[ "$n" = "$last" ] || fail "sequence numbers should count the $n events delivered, the last is $last"

# 4. Requests whose answers are never read.
"$CP" -s "$SOCK" -l '{"jsonrpc":"2.0","id":3,"method":"map/agents/list"}' -r 200000 -N -q 2>/dev/null &
flood=$!
sleep 1
rss0=$(sup_rss)
sleep 2
rss1=$(sup_rss)
"$CORRAL" ps -S "$SOCK" | grep -q "^  echo " || fail "corral stopped serving others during the flood"
note "flooding client: supervisor RSS $rss0 -> $rss1 kB"
[ "$SLOW" != 1 ] || [ $((rss1 - rss0)) -lt $((16 * 1024)) ] ||
    fail "corral grew by $((rss1 - rss0)) kB for a client that does not read its answers"
kill -9 "$flood"
wait "$flood" 2>/dev/null

# 5. Hanging up mid-line and mid-stream.
"$CP" -s "$SOCK" -l '{"jsonrpc":"2.0","id":1,"method":"map/ag' -c 2>/dev/null
printf '{"jsonrpc":"2.0","id":1,"method":"map/agents/li' >"$T/half"
"$CP" -s "$SOCK" -f "$T/half" -c 2>/dev/null
"$CP" -s "$SOCK" -l '{"jsonrpc":"2.0","id":2,"method":"map/subscribe"}' -w 0.3 -q 2>/dev/null &
quitter=$!
"$CP" -s "$SOCK" -l "$SEND" -r 300 -e 300 -q -w $((20 * SLOW)) 2>/dev/null
wait "$quitter"
wait_for '[ "$(metric corral_control_clients)" = 1 ]' 10 ||
    fail "clients that left are still counted: $(metric corral_control_clients)"
[ "$(metric corral_subscriptions)" = 0 ] ||
    fail "subscriptions of clients that left are still there"

serve_eof
corral_wait 20
expect_rc 0
[ ! -e "$SOCK" ] || fail "$SOCK is still there after corral exited"
exit 0
