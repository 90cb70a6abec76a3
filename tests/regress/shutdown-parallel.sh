#!/bin/sh
# The default shutdown (parallel) begins every agent's stop at once, but a
# parent still stops only after its sub-agents, and an agent others name
# in depends_on: only after they are down:
#
#   a, b     two plain agents, no children, both depend on db
#   fleet    20 instances of a plain agent
#   root     spawns node-1 (keep), which spawns node-2 (it hangs), and
#            finishes the run
#   db       listed last, started first (a and b need it)
#
# db starts before a and b.  At the end of the run a, b, the 20 fleet
# agents and node-2 are STOPPING before any agent is STOPPED (one pass
# begins them all); node-1 begins only after node-2 is STOPPED, root only
# after node-1 is, db only after a and b are.  Every process is gone
# afterwards.
. "$(dirname "$0")/tree-lib.sh"

write_wf "$T/wf.yaml" <<'YAML'
agents:
  a:
    cmd: [@TR@, --record, @REC@]
    depends_on: [db]
  b:
    cmd: [@TR@, --record, @REC@]
    depends_on: [db]
  fleet:
    cmd: [@TR@, --record, @REC@]
    instances: 20
  root:
    cmd: [@TR@, --record, @REC@, --plan, @T@/root.json]
  node:
    cmd: [@TR@, --record, @REC@]
    autostart: false
  db:
    cmd: [@TR@, --record, @REC@]
routes:
  "*": root
YAML
cat >"$T/root.json" <<'JSON'
{"steps": [
  {"spawn": {"agent": "node", "keep": true, "plan": {"steps": [
    {"spawn": {"agent": "node", "plan": {"steps": [{"hang": true}]}}},
    {"finalize": {"text": "kept"}}]}}},
  {"await": true},
  {"finalize": {"text": "done"}}]}
JSON

corral_run 20 run "$T/wf.yaml" --goal go --log "$LOG" -v
expect_rc 0

# db is spawned before a and b.
starts=$(sed -n 's/^corral: agent \([a-z0-9-]*\): spawned (pid [0-9]*)$/\1/p' \
    "$ERR" | tr '\n' ' ')
spos() {
	echo "$starts" | tr ' ' '\n' | grep -n -x -F -- "$1" | head -1 | cut -d: -f1
}
for e in db a b; do
	[ -n "$(spos $e)" ] || fail "$e never spawned; spawns: $starts"
done
[ "$(spos db)" -lt "$(spos a)" ] && [ "$(spos db)" -lt "$(spos b)" ] ||
    fail "db should start before a and b, which depend on it: $starts"

# "agent:STATE" for every STOPPING and STOPPED, in audit order.
seq=$(sed -n 's/.*"ev":"state","agent":"\([^"]*\)",.*"to":"\(STOPPING\|STOPPED\)".*/\1:\2/p' \
    "$LOG" | tr '\n' ' ')
pos() {
	echo "$seq" | tr ' ' '\n' | grep -n -x -F -- "$1" | head -1 | cut -d: -f1
}
fleet=
for i in $(seq 1 20); do fleet="$fleet fleet.$i:STOPPING"; done
for e in a:STOPPING b:STOPPING node-2:STOPPING node-2:STOPPED \
    node-1:STOPPING node-1:STOPPED root:STOPPING root:STOPPED \
    a:STOPPED b:STOPPED db:STOPPING db:STOPPED $fleet; do
	[ -n "$(pos $e)" ] || fail "no $e in the audit log; stops: $seq"
done
first_stopped=$(echo "$seq" | tr ' ' '\n' | grep -n ':STOPPED$' | head -1 | cut -d: -f1)
for e in a:STOPPING b:STOPPING node-2:STOPPING $fleet; do
	[ "$(pos $e)" -lt "$first_stopped" ] ||
	    fail "$e should come before any agent is STOPPED (parallel); stops: $seq"
done
[ "$(pos a:STOPPED)" -lt "$(pos db:STOPPING)" ] &&
    [ "$(pos b:STOPPED)" -lt "$(pos db:STOPPING)" ] ||
    fail "db began stopping before a and b, which depend on it, stopped: $seq"

[ "$(pos node-2:STOPPED)" -lt "$(pos node-1:STOPPING)" ] ||
    fail "node-1 began stopping before its child node-2 stopped: $seq"
[ "$(pos node-1:STOPPED)" -lt "$(pos root:STOPPING)" ] ||
    fail "root began stopping before its child node-1 stopped: $seq"
expect_no_leftovers
exit 0
