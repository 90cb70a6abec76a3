#!/bin/sh
# An agent on its way out may not spawn.  The agent boss answers the goal,
# and when corral stops it (stdin closed: the run is over) it asks for 50
# children at once.  None may start: each spawn is refused ("corral is
# stopping: no new agent starts", or "boss is stopping: it may not
# spawn"), the run still ends with boss's result and exit 0, and nothing
# is left running.  (corral used to start every one of them.)
. "$(dirname "$0")/lib.sh"

cat >"$T/boss.sh" <<SH
read goal
printf '%s\n' '{"protocol":"multiagent-1.0","role":"agent","intent":"finalize","task":"go","content":{"type":"text","text":"boss done"}}'
while read line; do :; done
i=0
while [ \$i -lt 50 ]; do
	printf '{"jsonrpc":"2.0","id":%d,"method":"map/agents/spawn","params":{"agent":"kid","task":"late work"}}\n' \$i
	i=\$((i + 1))
done
: >"$T/asked"
SH
cat >"$T/wf.yaml" <<YAML
agents:
  boss:
    cmd: [/bin/sh, $T/boss.sh]
  kid:
    cmd: [$TA, --record, $T/kid.rec]
    autostart: false
routes:
  "*": boss
YAML
corral_run 30 run "$T/wf.yaml" --goal go --log "$T/audit.ndjson" -v
expect_rc 0
grep -q '"text":"boss done"' "$OUT" || fail "the result should be boss's: $(cat "$OUT")"
[ -e "$T/asked" ] || fail "boss never got to ask for its children (stdin not closed?)"
n=$(grep -c '"ev":"spawn"' "$T/audit.ndjson")
[ "$n" = 1 ] || fail "expected boss's own spawn only in the audit log, saw $n spawns"
log_has "boss: spawn refused: corral is stopping: no new agent starts" ||
    log_has "boss: spawn refused: boss is stopping: it may not spawn" ||
    fail "expected the spawns refused because boss is stopping"
log_has "spawned child" && fail "a child started while boss was stopping: $(grep 'spawned child' "$ERR" | head -n 3)"
[ -e "$T/kid.rec" ] && fail "a kid ran: $(head -n 3 "$T/kid.rec")"
note "50 spawns asked while stopping: $(log_count 'spawn refused') refusals logged, 0 started"
expect_no_leftovers
exit 0
