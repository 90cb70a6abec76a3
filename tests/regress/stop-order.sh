#!/bin/sh
# shutdown: sequential stops agents one at a time in reverse start order: three agents
# started first, second, third stop third, second, first -- each STOPPED
# before the next one begins STOPPING.  (The default, parallel, is tested by
# shutdown-parallel.sh.)
. "$(dirname "$0")/lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  first:
    cmd: [$TA, --record, $T/first.rec]
  second:
    cmd: [$TA, --record, $T/second.rec]
  third:
    cmd: [$TA, --record, $T/third.rec]
routes:
  "*": second
shutdown: sequential
YAML

corral_run 20 run "$T/wf.yaml" --goal go -v
expect_rc 0
started=$(sed -n 's/^corral: agent \([a-z]*\): spawned (pid [0-9]*)$/\1/p' "$ERR" | tr '\n' ' ')
[ "$started" = "first second third " ] ||
    fail "expected spawns in the order 'first second third', saw '$started'"
seq=$(sed -n 's/^corral: agent \([a-z]*\): [A-Z]* -> \(STOPPING\|STOPPED\) .*/\1:\2/p' "$ERR" | tr '\n' ' ')
want="third:STOPPING third:STOPPED second:STOPPING second:STOPPED first:STOPPING first:STOPPED "
[ "$seq" = "$want" ] || fail "expected the stop sequence '$want', saw '$seq'"
for a in first second third; do
	grep -q '^eof$' "$T/$a.rec" || fail "agent $a did not see EOF on stdin"
done
expect_no_leftovers
exit 0
