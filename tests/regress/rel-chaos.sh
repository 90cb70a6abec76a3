#!/bin/sh
# Chaos: 20 instances of an agent at steady load through corral serve,
# while random agents are killed with SIGKILL and others are stopped with
# SIGSTOP and continued a moment later.  Every 20th request hangs (never
# answered); every request has ttl_ms 3000 and a priority from 0 to 4.
# At the end:
#   - every input has exactly one result, and the audit log's run_end
#     holds: accepted == replied + errored + expired
#   - corral has no zombie child, and holds as many descriptors as before
#     the chaos once all 20 agents are back
#   - no agent process is left after shutdown
# The agents have heartbeats (300 ms x SLOW, so that a busy machine does
# not make the healthy ones flap), so that one made UNAVAILABLE by
# timeouts (while stopped) comes back (docs/reliability.md: without
# heartbeats it would only come back by writing something).
# CHAOS_SECONDS (default 8) sets how long the load and the chaos last;
# CHAOS_RATE (default 100) the requests per second.  For the 60 s run:
#   CHAOS_SECONDS=60 ctest --test-dir build -R regress/rel-chaos
. "$(dirname "$0")/rel-lib.sh"

SECS=${CHAOS_SECONDS:-8}
RATE=${CHAOS_RATE:-100}
N=$((SECS * RATE))

cat >"$T/wf.yaml" <<YAML
agents:
  w:
    cmd: [$RA, --record, $T/rec]
    instances: 20
    timeout: 2s
    heartbeat: {interval: $((300 * SLOW))ms, misses: 3}
    restart: {policy: transient, max: 10000, within: 1m, backoff: 1s, backoff_max: 2s}
    breaker: {failures: 5, reset: 2s, probes: 3}
    stop: {grace: 500ms, timeout: 2s}
routes:
  "*": w
retry: {max: 2, initial: 200ms, factor: 2, max_delay: 1s}
YAML

agent_pids() {	# host pids of the live agents
	marker_procs | awk '/relagent/ { print $1 }'
}
ready_all() {	# all 20 agents alive and READY (or BUSY) again
	[ "$(agent_pids | wc -l)" -eq 20 ] || return 1
	_last=$(grep -E 'corral: agent w\.[0-9]+: [A-Z]+ -> [A-Z]+' "$ERR" |
	    sed 's/^corral: agent \(w\.[0-9]*\): [A-Z]* -> \([A-Z]*\).*/\1 \2/' |
	    awk '{ s[$1] = $2 } END { for (a in s) if (s[a] != "READY" && s[a] != "BUSY") n++; print n + 0 }')
	[ "$_last" -eq 0 ]
}

serve_start "$T/wf.yaml" --log "$AUD" -v
sup=$(sup_pid)
wait_for ready_all 20 || fail "the 20 agents did not all start: $(agent_pids | wc -l) running"
# The count once it holds still (0.5 s).
wait_steady 10 10 fd_count "$sup" ||
    fail "corral's descriptor count does not settle with 20 idle agents"
fd0=$STEADY
note "corral (pid $sup) holds $fd0 descriptors with 20 agents; $N requests over ${SECS}s"

"$RG" env "$N" --id c- --rate "$RATE" --priority cycle --every 20 hang \
    --ttl 3000 --tag "$T" >&8 &
gen=$!

# The chaos: every 0.2 s, SIGKILL or SIGSTOP a random agent; continue the
# stopped ones 0.4 s later.
(
	i=0
	while [ ! -e "$T/stop" ]; do
		i=$((i + 1))
		for p in $(cat "$T/stopped" 2>/dev/null); do
			kill -CONT "$p" 2>/dev/null
		done
		: >"$T/stopped"
		p=$(agent_pids | awk -v s="$i$$" 'BEGIN { srand(s) }
		    { p[NR] = $1 } END { if (NR) print p[int(rand() * NR) + 1] }')
		if [ -n "$p" ]; then
			if [ $((i % 2)) -eq 0 ]; then
				kill -KILL "$p" 2>/dev/null && echo "kill $p" >>"$T/chaos"
			else
				kill -STOP "$p" 2>/dev/null && echo "$p" >"$T/stopped" &&
				    echo "stop $p" >>"$T/chaos"
			fi
		fi
		sleep 0.2
	done
	for p in $(cat "$T/stopped" 2>/dev/null); do
		kill -CONT "$p" 2>/dev/null
	done
) 8>&- &
chaos=$!

wait_for '! pid_alive $gen' $((SECS * 3 + 20)) ||
    fail "corral did not take the load: the generator is still writing"
wait $gen
: >"$T/stop"
wait $chaos
for p in $(agent_pids); do
	kill -CONT "$p" 2>/dev/null
done
kills=$(grep -c '^kill' "$T/chaos" 2>/dev/null || echo 0)
stops=$(grep -c '^stop' "$T/chaos" 2>/dev/null || echo 0)
note "chaos: $kills SIGKILLs, $stops SIGSTOPs"
[ "$kills" -gt 0 ] && [ "$stops" -gt 0 ] || fail "the chaos did not happen (test broken?)"

# Once every job has its result and every agent is back: no zombie, the
# same descriptors as before.
wait_for '[ "$(wc -l <"$OUT")" -ge "$N" ]' 30 ||
    fail "only $(wc -l <"$OUT") of $N results after the load"
wait_for ready_all 20 ||
    fail "not all 20 agents came back: $(agent_pids | wc -l) running"
wait_for '[ -z "$(zombies_of "$sup")" ]' 5 || fail "zombies of corral: $(zombies_of "$sup")"
wait_for '[ "$(fd_count "$sup")" -eq "$fd0" ]' 10 ||
    fail "corral holds $(fd_count "$sup") descriptors after the chaos, $fd0 before: $(ls -l "/proc/$sup/fd" | tail -n +2)"

serve_eof
corral_wait 30
expect_rc 0
awk -v n="$N" 'BEGIN { for (i = 1; i <= n; i++) print "c-" i }' >"$T/ids"
[ "$(wc -l <"$OUT")" -eq "$N" ] || fail "expected $N result lines, got $(wc -l <"$OUT")"
expect_one_each "$T/ids"
set -- $(run_end_check)
note "run_end: accepted $1, replied $2, errored $3, expired $4; $(grep -o '"code":"[a-z_]*"' "$OUT" | sort | uniq -c | tr '\n' ' ' | tr -s ' ')"
[ "$1" -eq "$N" ] || fail "expected $N accepted, run_end says $1"
[ "$2" -gt 0 ] || fail "nothing was answered"
# Requests that hang (every 20th) never end as replies.
hung=$(awk -v n="$N" 'BEGIN { for (i = 20; i <= n; i += 20) print "c-" i }')
for id in $hung; do
	result_of "$id" | grep -q '"type":"error"' ||
	    fail "$id (hang) got a reply: $(result_of "$id" | cut -c1-200)"
done
expect_no_leftovers 10
exit 0
