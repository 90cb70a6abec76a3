#!/bin/sh
# corral serve with 10,000 envelopes on stdin writes exactly 10,000
# results, and each input's trace.id is a parent of exactly one output
# (no result lost, duplicated or invented), then exits 0 after EOF.
# The test waits for corral to exit for as long as results keep coming:
# 10,000 round trips take what the machine takes, only a stall fails.
. "$(dirname "$0")/lib.sh"

N=10000
cat >"$T/wf.yaml" <<YAML
agents:
  echo:
    cmd: [$TA]
    instances: 2
routes:
  "*": echo
YAML

awk -v n=$N 'BEGIN { for (i = 1; i <= n; i++)
	printf "{\"protocol\":\"multiagent-1.0\",\"role\":\"user\",\"intent\":\"execute\",\"task\":\"t%d\",\"content\":{\"type\":\"text\",\"text\":\"n\"},\"trace\":{\"id\":\"in-%d\"}}\n", i, i }' >"$T/in"

s=$(now)
"$CORRAL" serve "$T/wf.yaml" <"$T/in" >"$OUT" 2>"$ERR" &
CORRAL_PID=$!
wait_progress '! pid_alive $CORRAL_PID' 10 out_lines ||
    fail "corral stopped answering: $PROGRESS of $N results, none more in 10s (x$SLOW)"
corral_wait 10
note "$N envelopes served in $(elapsed "$s")s"
expect_rc 0

lines=$(wc -l <"$OUT")
[ "$lines" -eq $N ] || fail "expected $N result lines, got $lines"
# Every output names exactly one parent; list them, then compare with the inputs.
awk '{
	if (!match($0, /"parents":\[[^]]*\]/)) { print "NOPARENT " NR; next }
	p = substr($0, RSTART + 11, RLENGTH - 12)
	if (p !~ /^"in-[0-9]+"$/) { print "BADPARENT " NR " " p; next }
	gsub(/"/, "", p); print p
}' "$OUT" | sort >"$T/parents"
bad=$(grep -c ' ' "$T/parents" || true)
[ "$bad" -eq 0 ] || fail "outputs without exactly one input as parent: $(grep ' ' "$T/parents" | head -n 3)"
dups=$(uniq -d "$T/parents" | head -n 3)
[ -z "$dups" ] || fail "inputs answered more than once: $dups"
awk -v n=$N 'BEGIN { for (i = 1; i <= n; i++) print "in-" i }' | sort >"$T/ids"
missing=$(comm -23 "$T/ids" "$T/parents" | head -n 3)
[ -z "$missing" ] || fail "inputs without a result: $missing ($(comm -23 "$T/ids" "$T/parents" | wc -l) in all)"
extra=$(comm -13 "$T/ids" "$T/parents" | head -n 3)
[ -z "$extra" ] || fail "results for unknown inputs: $extra"
errs=$(grep -c '"type":"error"' "$OUT" || true)
[ "$errs" -eq 0 ] || fail "expected no error results, got $errs: $(grep -m1 '"type":"error"' "$OUT" | cut -c1-300)"
expect_no_leftovers
exit 0
