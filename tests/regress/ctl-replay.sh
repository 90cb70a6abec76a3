#!/bin/sh
# map/replay reads the whole run: the last 10 000 events from memory, the
# older ones back from the audit log (which has them all but the
# busy/idle changes).  corral events prints every one, in order, once.
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
"$CORRAL" events -S "$SOCK" --json >"$T/all" 2>"$T/all.err" || fail "corral events: $(cat "$T/all.err")"
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
# After an id (from the log) and a limit: the next events, hasMore.
"$CP" -s "$SOCK" -l "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"map/replay\",\"params\":{\"afterEventId\":\"$first\",\"limit\":3}}" \
    -e 1 -w $((10 * SLOW)) >"$T/page" 2>&1 || fail "map/replay: $(cat "$T/page")"
[ "$(jq -r '.result.events | length' "$T/page")" = 3 ] || fail "replay page: $(cut -c1-300 "$T/page")"
[ "$(jq -r '.result.hasMore' "$T/page")" = true ] || fail "replay page: hasMore"
[ "$(jq -r '.result.events[0].eventId' "$T/page")" = "$(sed -n 2p "$T/ids")" ] ||
    fail "the page should start with the second event"
serve_eof
corral_wait 20
expect_rc 0
exit 0
