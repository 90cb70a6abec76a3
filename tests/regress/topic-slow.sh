#!/bin/sh
# A topic with a subscriber that stops reading: what is published reaches
# the one that reads, every message in the order it was published; the
# one that does not read misses what comes once its stdin is full (1 MiB
# queued), which is counted for it (map/scopes/get) and reported
# (message_failed, "a target is not reading its stdin"), while the
# publisher's sends still succeed; corral's memory does not grow with it.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null 2>&1 || skip "jq is missing"
CP="$TOOLS/ctlpeer"
SOCK="$T/ctl.sock"
N=40
cat >"$T/wf.yaml" <<YAML
agents:
  fast:
    cmd: [sh, -c, "cat >>$T/fast.in; exit 0"]
    subscribe: [news]
  slow:
    cmd: [sh, -c, "exec sleep 600"]
    subscribe: [news]
    stop: {grace: 1s, timeout: 1s}
YAML
serve_start "$T/wf.yaml" --control "$SOCK" --log "$T/audit.ndjson"
wait_for '[ -S "$SOCK" ]' 10 || fail "no control socket"
pad=$(head -c 65536 /dev/zero | tr '\0' x)
# One message at a time, the next once fast has it: fast is never behind,
# whatever the machine's load; slow never reads.
: >"$T/answers"
i=1
while [ $i -le $N ]; do
	"$CP" -s "$SOCK" -l '{"jsonrpc":"2.0","id":0,"method":"map/connect","params":{"protocolVersion":1}}' \
	    -l "{\"jsonrpc\":\"2.0\",\"id\":$i,\"method\":\"map/send\",\"params\":{\"to\":\"topic:news\",\"payload\":\"msg-$i-$pad\"}}" \
	    -e 2 -w $((10 * SLOW)) 2>/dev/null | grep "\"id\":$i," >>"$T/answers" ||
	    fail "no answer to send $i"
	wait_for "[ \"\$(grep -c . \"$T/fast.in\" 2>/dev/null)\" = $i ]" 10 ||
	    fail "fast did not get message $i"
	i=$((i + 1))
done
# Every send succeeded; the later ones reached fast alone.
[ "$(grep -c '"result":{"messageId"' "$T/answers")" = $N ] ||
    fail "expected $N successful sends: $(grep -v '"result"' "$T/answers" | head -c 300)"
grep -q '"delivered":\["fast","slow"\]' "$T/answers" || fail "no send reached both"
grep -q '"delivered":\["fast"\]' "$T/answers" || fail "no send was dropped for slow"
# fast got them all, in order.
order=$(jq -r '.content.text | split("-")[1]' "$T/fast.in" | tr '\n' ' ')
[ "$order" = "$(seq 1 $N | tr '\n' ' ')" ] || fail "fast got them out of order: $order"
jq -e 'select(.corral.via == "news")' "$T/fast.in" >/dev/null || fail "no corral.via on fast's messages"
# The counts, and the report.
"$CP" -s "$SOCK" -l '{"jsonrpc":"2.0","id":1,"method":"map/connect","params":{"protocolVersion":1}}' \
    -l '{"jsonrpc":"2.0","id":2,"method":"map/scopes/get","params":{"scopeId":"news"}}' -e 2 >"$T/get" 2>/dev/null
d=$(grep '"id":2' "$T/get" | jq -c '.result.scope._meta.corral.delivery')
[ "$(printf '%s' "$d" | jq '.fast.delivered')" = $N ] || fail "fast's counts: $d"
[ "$(printf '%s' "$d" | jq '.fast.dropped')" = 0 ] || fail "fast's counts: $d"
dropped=$(printf '%s' "$d" | jq '.slow.dropped')
[ "$(printf '%s' "$d" | jq '.slow.delivered + .slow.dropped')" = $N ] && [ "$dropped" -gt 0 ] ||
    fail "slow's counts: $d"
jq -c 'select(.ev == "map_event" and .event.type == "message_failed" and
    .event.data.reason == "a target is not reading its stdin")' "$T/audit.ndjson" | grep -q . ||
    fail "no message_failed event for slow"
note "slow missed $dropped of $N 64 KiB messages; fast got all, in order"
serve_eof
corral_wait 30
expect_rc 0
exit 0
