#!/bin/sh
# map/replay reads the whole run: the last 10 000 events from memory, the
# older ones back from the audit log (which has them all but the
# busy/idle changes).  corral events prints every one, in order, once,
# also with two of them paging through the log at the same time.
#
# A replay that reads the log does not stop corral: it reads a stretch
# per loop iteration and is answered when it is done, so a ping sent
# right after it (in the same write) is answered first, from a client
# and from an agent's pipe under --no-control.  (corral used to read the
# whole log before anything else: two replays of a 275 MB log cut
# map/send from 14,000 a second to 11.)
. "$(dirname "$0")/ctl-lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  echo:
    cmd: [$TA]
routes:
  "*": echo
YAML
serve_start "$T/wf.yaml" --control "$SOCK" --log "$T/audit.ndjson"
wait_sock
# 6000 messages: 12 000 events, more than the ring holds.
"$CP" -s "$SOCK" -l '{"jsonrpc":"2.0","id":1,"method":"map/send","params":{"to":{"agent":"echo"},"payload":"hello"}}' \
    -r 6000 -e 6000 -q -w $((20 * SLOW)) 2>"$T/send.err" || fail "6000 map/send: $(cat "$T/send.err")"
total=$(metric corral_events_total)
[ "$total" -gt 12000 ] || fail "expected over 12000 events, corral counted $total"
"$CORRAL" events -S "$SOCK" --json >"$T/all2" 2>"$T/all2.err" &
second=$!
"$CORRAL" events -S "$SOCK" --json >"$T/all" 2>"$T/all.err" || fail "corral events: $(cat "$T/all.err")"
wait "$second" || fail "a second corral events at the same time: $(cat "$T/all2.err")"
n=$(wc -l <"$T/all")
after=$(metric corral_events_total)
# Every event but the busy/idle changes that aged out of memory (and the
# clients' own connections since the count was taken).
[ "$n" -ge 12000 ] && [ "$n" -le "$after" ] || fail "replay gave $n events of $after"
jq -r .id "$T/all" >"$T/ids"
sort -c "$T/ids" 2>/dev/null || fail "replayed ids are not in order"
[ "$(sort -u "$T/ids" | wc -l)" = "$n" ] || fail "replay repeated an event"
head -n 1 "$T/all" | grep -q '"type":"agent_registered","timestamp":[0-9]*,"source":"echo"' ||
    fail "the replay should start at the run's first event: $(head -n 1 "$T/all")"
# The first event, as the log has it, is the same bytes.
first=$(head -n 1 "$T/ids")
grep -F "\"event\":$(head -n 1 "$T/all")}" "$T/audit.ndjson" >/dev/null ||
    fail "event $first in the replay differs from the audit log's"
# The second one saw the same events (those of the first client's own
# connection aside).
[ "$(grep -vc '"participant_' "$T/all")" = "$(grep -vc '"participant_' "$T/all2")" ] ||
    fail "two replays at once differ: $(wc -l <"$T/all") and $(wc -l <"$T/all2") events"
# A replay that reads the whole log for nothing, then a ping, in one
# write: the ping is answered first, and the replay finds nothing.
printf '%s\n%s\n' '{"jsonrpc":"2.0","id":"r","method":"map/replay","params":{"fromTimestamp":0,"filter":{"eventTypes":["no_such_event"]}}}' \
    '{"jsonrpc":"2.0","id":"p","method":"ping"}' >"$T/rp"
"$CP" -s "$SOCK" -f "$T/rp" -e 2 -w 30 >"$T/rp.out" 2>&1 || fail "replay and ping: $(cat "$T/rp.out")"
sed -n 1p "$T/rp.out" | grep -qF '{"jsonrpc":"2.0","id":"p","result":{}}' ||
    fail "the ping should be answered while the replay reads the log: $(cut -c1-200 "$T/rp.out")"
sed -n 2p "$T/rp.out" | grep -qF '{"jsonrpc":"2.0","id":"r","result":{"events":[],"hasMore":false,"totalCount":0}}' ||
    fail "the replay of nothing: $(sed -n 2p "$T/rp.out" | cut -c1-200)"
# After an id (from the log) and a limit: the next events, hasMore.
"$CP" -s "$SOCK" -l "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"map/replay\",\"params\":{\"afterEventId\":\"$first\",\"limit\":3}}" \
    -e 1 -w $((10 * SLOW)) >"$T/page" 2>"$T/page.err" || fail "map/replay: $(cat "$T/page.err")"
[ "$(jq -r '.result.events | length' "$T/page")" = 3 ] || fail "replay page: $(cut -c1-300 "$T/page")"
[ "$(jq -r '.result.hasMore' "$T/page")" = true ] || fail "replay page: hasMore"
[ "$(jq -r '.result.events[0].eventId' "$T/page")" = "$(sed -n 2p "$T/ids")" ] ||
    fail "the page should start with the second event"
serve_eof
corral_wait 20
expect_rc 0

# The same from an agent's pipe, without a control socket: the agent
# sends 6000 messages to another, then a replay and a ping in one write.
cat >"$T/sender.sh" <<SH
exec 3<&0
cat <&3 >"$T/answers" &
"$TOOLS/relgen" flood 6000 '{"jsonrpc":"2.0","id":1,"method":"map/send","params":{"to":{"agent":"sink"},"payload":"hello"}}' --tag "$T"
printf '%s\n%s\n' '{"jsonrpc":"2.0","id":"r","method":"map/replay","params":{"fromTimestamp":0,"limit":3}}' '{"jsonrpc":"2.0","id":"p","method":"ping"}'
sleep 1000
SH
cat >"$T/pipe.yaml" <<YAML
agents:
  sender:
    cmd: [/bin/sh, $T/sender.sh]
    stop: {grace: 200ms, timeout: 2s}
  sink:
    cmd: [/bin/sh, -c, 'exec 3>&1; cat >/dev/null', $T]
routes:
  "*": sink
YAML
serve_start "$T/pipe.yaml" --no-control --log "$T/audit2.ndjson"
wait_for 'grep "\"id\":\"r\"" "$T/answers" 2>/dev/null | grep -q "\"hasMore\":"' 60 ||
    fail "the agent's replay was not answered: $(tail -c 300 "$T/answers")"
grep -n '"id":"[rp]"' "$T/answers" | cut -c1-60 >"$T/order"
[ "$(sed -n 1p "$T/order" | grep -c '"id":"p"')" = 1 ] ||
    fail "the agent's ping should be answered while its replay reads the log: $(cat "$T/order")"
grep '"id":"r"' "$T/answers" | jq -e '.result.events | length == 3' >/dev/null ||
    fail "the agent's replay: $(grep '"id":"r"' "$T/answers" | cut -c1-300)"
grep '"id":"r"' "$T/answers" | grep -q '"event":{"id":"[0-9A-Z]*","type":"agent_registered","timestamp":[0-9]*,"source":"sender"' ||
    fail "the agent's replay should start at the run's first event: $(grep '"id":"r"' "$T/answers" | cut -c1-300)"
serve_eof
corral_wait 20
expect_rc 0
exit 0
