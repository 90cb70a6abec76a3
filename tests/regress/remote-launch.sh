#!/bin/sh
# launch: with launchers that run here (env, sh): what corral decides for
# an agent on another machine, without one (no root needed).
#
#   - corral check looks for the launcher on PATH, not the agent's
#     program, which is on the far end
#   - placement: three instances over hosts a and b in turn (a, b, a);
#     each is ready when corral host says hello, and ends "on a"
#   - a launcher without {{cmd}} (no corral host there) is warned about
#     once, however many agents use it
#   - a launcher that never reaches corral host fails its host; a host
#     that failed is avoided; two failures in a row take a host out
#     (host_out), and the agent fails after its failed starts
. "$(dirname "$0")/tree-lib.sh"

cat >"$T/bad.yaml" <<EOF
agents:
  x:
    cmd: [/nonexistent/agent]
    launch: {argv: [no-such-launcher-$$, "{{cmd}}"]}
EOF
"$CORRAL" check "$T/bad.yaml" >"$T/check.out" 2>&1 && fail "corral check should refuse a missing launcher"
grep -q "agents.x.launch.argv: no-such-launcher-$$: No such file or directory" "$T/check.out" ||
    fail "corral check should name the launcher: $(cat "$T/check.out")"
sed "s/no-such-launcher-$$/env/" "$T/bad.yaml" >"$T/good.yaml"
"$CORRAL" check "$T/good.yaml" >"$T/check.out" 2>&1 ||
    fail "the agent's program is on the far end, not checked here: $(cat "$T/check.out")"

cat >"$T/wf.yaml" <<EOF
agents:
  w:
    cmd: [$TR, --record, $REC]
    instances: 3
    launch:
      argv: [env, "CORRAL_PLACED={{host}}", "{{cmd}}"]
      hosts: [a, b]
      corral: "$CORRAL"
  plain:
    cmd: [$TR, --record, $REC]
    instances: 2
    launch: {argv: [env, "{{env}}", "{{argv}}"]}
  down:
    cmd: [$TR, --record, $REC]
    launch:
      argv: [sh, -c, 'echo "no route to \$0" >&2; exit 255', "{{host}}",
        "{{cmd}}"]
      hosts: [x, y]
      breaker: {failures: 2}
    restart: {policy: permanent, backoff: 100ms, backoff_max: 100ms,
      failed_starts: 4}
routes:
  "*": w
EOF
serve_start "$T/wf.yaml" --log "$LOG" -v
for i in 1 2 3; do
	wait_log "agent w.$i: INITIALIZING -> READY (running on "
done
for p in "w.1 a" "w.2 b" "w.3 a"; do
	set -- $p
	jq -s -e --arg a "$1" --arg h "$2" 'any(.[]; .ev == "launch" and
	    .agent == $a and .host == $h and .launcher == "env")' "$LOG" \
	    >/dev/null || fail "$1 should be launched on $2: $(grep '"ev":"launch"' "$LOG")"
done
envelope r1 plan >&8
wait_lines 1 10
grep -q '"text":"w.[123]"' "$OUT" || fail "no reply from w: $(cat "$OUT")"

wait_log "agent down: INITIALIZING -> FAILED (failed to start 4 times in a row" 30
[ "$(log_count "no corral host runs on the far end")" = 1 ] ||
    fail "the launcher without {{cmd}} should be warned about once: $(grep -F "no corral host" "$ERR")"
for h in x y; do
	log_has "host $h: out for 60s after 2 failures in a row (could not start on $h: sh ended (exit status 255) before corral host answered)" ||
	    fail "host $h should be out after 2 failures"
	jq -s -e --arg h "$h" 'any(.[]; .ev == "host_out" and .host == $h)' \
	    "$LOG" >/dev/null || fail "no host_out for $h in the audit log"
done
# Its starts went x, y, x, y: the host that just failed is avoided.
[ "$(jq -r 'select(.ev == "launch" and .agent == "down") | .host' "$LOG" | tr '\n' ' ')" = "x y x y " ] ||
    fail "down's starts should alternate: $(jq -r 'select(.ev == "launch" and .agent == "down") | .host' "$LOG" | tr '\n' ' ')"
log_has 'down: no route to x' || fail "the launcher's stderr should be in the log"

serve_eof
corral_wait 20
expect_rc 0
for i in 1 2 3; do
	log_has "agent w.$i: STOPPING -> STOPPED (exit status 0 on " ||
	    fail "w.$i should end with its status and its host"
done
expect_no_leftovers 5
