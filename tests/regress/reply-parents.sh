#!/bin/sh
# A reply is matched to the outstanding request its trace.parents names,
# byte for byte: with in-10 and in-11 outstanding before in-1, a reply
# naming "in-1" answers in-1, not the requests whose ids it begins; one
# naming an id with a byte more or a byte less, or 70 bytes, answers none
# (dropped as late, audited "late"); an id written with escapes, or as
# the second of two parents, answers its request.
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null 2>&1 || skip "python3 is missing"

# The agent reads all four requests, then answers each after three
# replies that name no outstanding request.
cat >"$T/agent.py" <<'PY'
import json, sys

def esc(s):
    return '"' + ''.join('\\u%04x' % ord(c) for c in s) + '"'

def reply(rid, parents, text):
    sys.stdout.write('{"protocol":"multiagent-1.0","role":"agent",'
        '"agent":{"id":"pa","name":"pa","model":"pa"},'
        '"timestamp":"2026-11-27T00:00:00Z","intent":"execute",'
        '"task":"answer","content":{"type":"text",'
        '"text":' + json.dumps(text) + '},"confidence":{"score":0.9},'
        '"trace":{"id":' + json.dumps(rid) + ',"parents":[' +
        ','.join(parents) + ']}}\n')

ids = []
for line in sys.stdin:
    env = json.loads(line)
    if env.get("intent") != "execute":
        continue
    ids.append(env["trace"]["id"])
    if len(ids) < 4:
        continue
    for i, x in enumerate(sorted(ids, key=lambda s: (len(s), s))):
        q = json.dumps
        reply("d1-" + x, [q(x + "x")], "decoy")
        reply("d2-" + x, [q(x[:-1] + "#")], "decoy")
        reply("d3-" + x, [q("q" * 70)], "decoy")
        if i == 1:
            named = [esc(x)]
        elif i == 2:
            named = [q("none"), q(x)]
        else:
            named = [q(x)]
        reply("r-" + x, named, "re:" + x)
    sys.stdout.flush()
    ids = []
PY

cat >"$T/wf.yaml" <<YAML
agents:
  pa:
    cmd: [python3, $T/agent.py]
    max_inflight: 8
    heartbeat: off
routes:
  execute: pa
YAML

LOG="$T/audit.ndjson"
{
	envelope in-10 execute
	envelope in-11 execute
	envelope in-1 execute
	envelope in-2 execute
} >"$T/in"
"$CORRAL" serve "$T/wf.yaml" --log "$LOG" <"$T/in" >"$OUT" 2>"$ERR" &
CORRAL_PID=$!
corral_wait 30
expect_rc 0

n=$(wc -l <"$OUT")
[ "$n" -eq 4 ] || fail "expected 4 results, got $n: $(cat "$OUT")"
# Each result is its own request's reply.
bad=$(jq -r 'select(.content.text != "re:" + .trace.parents[-1]) |
    "\(.trace.parents) \(.content.text)"' "$OUT")
[ -z "$bad" ] || fail "replies matched to other requests: $bad"
for id in in-1 in-2 in-10 in-11; do
	[ "$(jq -r --arg id "$id" 'select(.trace.parents | index($id)) |
	    .content.text' "$OUT")" = "re:$id" ] ||
	    fail "expected $id answered by its reply: $(cat "$OUT")"
done
n=$(jq -r 'select(.ev == "late") | .ev' "$LOG" | wc -l)
[ "$n" -eq 12 ] || fail "expected the 12 decoys recorded as late, got $n"
exit 0
