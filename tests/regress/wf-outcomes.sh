#!/bin/sh
# Every ending of a job is the right one, at once, with its cause:
#   1. False success: a planner proposes two execute actions and both fail
#      (no agent serves execute).  The run exits 1, its result is an
#      error envelope (branch_failed) naming both failed branches and
#      their cause, job_end says failed, and stderr has one summary line
#      for the job with a hint.  When the branches' errors have a
#      category an agent made up, the job's error says INTERNAL.
#   2. No hang when reflection cannot happen: a weak reply whose reflect
#      row has no live agent (autostart: false; a critic that exits at
#      start; a critic that dies after starting) ends its branch at once:
#      the weak reply stands, with corral.risk saying it was not
#      reflected, and the run exits 0 long before any timeout.
. "$(dirname "$0")/lib.sh"
. "$TESTDIR/tools/wflib.sh"

LOG="$T/audit.ndjson"

# 1. Both branches fail.
cat >"$T/false.yaml" <<YAML
agents:
  planner:
    cmd: [$WA, --next, "execute:fetch a", --next, "execute:fetch b"]
  worker:
    cmd: [$WA, --intent, finalize]
    autostart: false
routes:
  plan: planner
  execute: worker
YAML
corral_run 20 run "$T/false.yaml" --goal go --log "$LOG"
expect_rc 1
expect_error_result "$OUT" branch_failed
n=$(result_field "$OUT" '[.content.data.branches[] | select(.status == "error") | .envelope.content.data.code] | map(select(. == "no_agent")) | length')
[ "$n" = 2 ] || fail "false success: expected both branches listed as failed with no_agent, got $n: $(head -c 600 "$OUT")"
msg=$(result_field "$OUT" .content.text)
case $msg in
"2 of 2 branches failed: execute "*": no_agent: no agent is left to serve intent execute"*) ;;
*) fail "false success: the result's text does not name the failed branches: $msg" ;;
esac
audit_all "$LOG" 'select(.ev == "job_end") | .status == "failed"' ||
    fail "false success: expected job_end failed"
[ "$(log_count 'corral: job ')" -ge 1 ] && log_has 'failed: 2 of 2 branches failed' &&
    log_has 'hint: the result lists each failed branch' ||
    fail "false success: expected one summary line for the failed job, with a hint"
expect_audit_ok "$LOG"
rm -f "$LOG"

# 1b. Both branches fail with an error of a category the agent made up:
# the job's error is corral's, with one of its own four categories.
cat >"$T/odd.sh" <<'EOF'
#!/bin/sh
while IFS= read -r line; do
	id=$(printf '%s\n' "$line" | sed -nE 's/.*"trace":\{"id":"([^"]*)".*/\1/p')
	printf '{"protocol":"multiagent-1.0","role":"agent","intent":"finalize","task":"t","content":{"type":"error","text":"no","data":{"code":"odd","category":"reflect","message":"no"}},"trace":{"id":"%s-r","parents":["%s"]}}\n' "$id" "$id"
done
EOF
cat >"$T/odd.yaml" <<YAML
agents:
  planner:
    cmd: [$WA, --next, "execute:fetch a", --next, "execute:fetch b"]
  worker:
    cmd: [/bin/sh, $T/odd.sh]
routes:
  plan: planner
  execute: worker
YAML
corral_run 20 run "$T/odd.yaml" --goal go
expect_rc 1
expect_error_result "$OUT" branch_failed
cat=$(result_field "$OUT" .content.data.category)
[ "$cat" = INTERNAL ] ||
    fail "an agent's own error category became the job's: '$cat': $(head -c 600 "$OUT")"
n=$(result_field "$OUT" '[.content.data.branches[] | select(.envelope.content.data.category == "reflect")] | length')
[ "$n" = 2 ] || fail "the branches' own errors are not kept as they were: $n: $(head -c 600 "$OUT")"

# 2. Reflection cannot happen; the weak reply stands.  Every request
# waits at most 60 s for an agent, so an end within 20 s is no timeout.
for critic in "autostart: false" "restart: temporary" "dies"; do
	case $critic in
	"autostart: false") ccmd="[$WA]"; extra="autostart: false" ;;
	"restart: temporary") ccmd="[/bin/sh, -c, 'echo cannot start >&2; exit 4']"; extra="restart: temporary" ;;
	dies) ccmd="[$WA, --hang]"; extra="restart: temporary" ;;
	esac
	cat >"$T/weak.yaml" <<YAML
agents:
  worker:
    cmd: [$WA, --score, "0.2", --intent, finalize, --text, weak answer]
    timeout: 60s
  critic:
    cmd: $ccmd
    timeout: 60s
    $extra
routes:
  reflect: critic
  "*": worker
YAML
	if [ "$critic" = dies ]; then
		corral_start run "$T/weak.yaml" --goal go --log "$LOG" -v
		wait_log 'corral: agent critic: INITIALIZING -> READY' 10
		# The critic dies before the goal's weak reply reaches it?
		# Kill it once it has the reflection in flight.
		wait_for 'grep -q "\"ev\":\"route\",\"agent\":\"critic\"" "$LOG" 2>/dev/null' 10 ||
		    fail "critic ($critic): the reflection never reached the critic"
		kill -9 "$(log_pid critic)"
		corral_wait 20
	else
		corral_run 20 run "$T/weak.yaml" --goal go --log "$LOG"
	fi
	expect_rc 0
	[ "$(result_field "$OUT" .content.text)" = "weak answer" ] ||
	    fail "critic ($critic): expected the weak reply as the result: $(head -c 400 "$OUT")"
	risk=$(result_field "$OUT" .corral.risk)
	case $risk in
	"not reflected: "*) ;;
	*) fail "critic ($critic): expected corral.risk 'not reflected: ...', got '$risk'" ;;
	esac
	grep -q '"ev":"unreflected"' "$LOG" || fail "critic ($critic): no unreflected event"
	expect_audit_ok "$LOG"
	rm -f "$LOG"
done
exit 0
