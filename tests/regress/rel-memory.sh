#!/bin/sh
# corral's own memory stays under the bound docs/reliability.md gives
# ("Memory bound") for its settings, whatever its agents send.  Four
# attacks, each with small settings (max_line 64KiB, max_inflight 1,
# limits.memory 16MiB) so that the bound is tight; each checks how corral
# behaves and that the run_end line's peak_rss_kb is under the bound:
#   1. ping flood: an agent writes 10,000,000 pings and never reads the
#      answers; corral stops reading it (its writer blocks)
#   2. list flood: an agent writes 20,000 map/agents/list, each answered
#      with 300 KB (three agents with 100 KB descriptions), and never
#      reads; corral stops reading it after one answer over its high
#      watermark, not after a whole read of requests
#   3. refused spawns: an agent that reads its answers asks for 300,000
#      inline children with children.max 1; all but one are refused, and
#      the refusals are logged at most ten a second
#   4. next_actions: one 0.5 MB reply with 1,000 next actions, each of
#      which would copy the reply's text: the job ends with memory_limit
# Under the sanitizers the attacks run and their behaviour is checked,
# but not the RSS.
. "$(dirname "$0")/rel-lib.sh"

KI=1024
MI=1048576
MEM=$((16 * MI))

[ "$SAN" = 1 ] && note "sanitizers: the attacks run, their peak RSS is not compared"

mem_flood_script

# The pid of this test's relgen flood (empty when there is none).
flood_pid() {
	ps -ww -eo pid=,args= 2>/dev/null | M="$T" awk \
	    'index($0, ENVIRON["M"]) && /relgen flood/ { print $1; exit }'
}

# Bytes PID has written so far.
wchar() {
	sed -n 's/^wchar: //p' "/proc/$1/io" 2>/dev/null
}

# Is PID stuck writing: asleep in a pipe write, nothing written for 1 s?
writer_stuck() {
	_w1=$(wchar "$1")
	sleep 1
	_w2=$(wchar "$1")
	[ -n "$_w1" ] && [ "$_w1" = "$_w2" ] || return 1
	case $(cat "/proc/$1/wchan" 2>/dev/null) in
	*pipe_write* | *pipe_wait* | 0 | "") return 0 ;;
	esac
	return 1
}

# wait_stuck NAME DONE: wait (60 s at most) until corral stops reading the
# flood, so its writer is stuck; fail if the flood ends (DONE) instead.
wait_stuck() {
	_ws=$(now)
	while fcmp "$(elapsed "$_ws")" "<" $((60 * SLOW)); do
		pid_alive "$CORRAL_PID" || fail "$1: corral exited"
		[ -e "$2" ] && fail "$1: corral read the whole flood of an agent that reads none of its answers"
		_p=$(flood_pid)
		if [ -n "$_p" ] && writer_stuck "$_p"; then
			[ -e "$2" ] && fail "$1: corral read the whole flood of an agent that reads none of its answers"
			return 0
		fi
		sleep 0.2
	done
	fail "$1: the flood neither ended nor got stuck within $((60 * SLOW))s"
}

# 1. Pings from an agent that never reads the answers.
AUD="$T/ping.aud"
cat >"$T/ping.yaml" <<YAML
agents:
  flood:
    cmd: [/bin/sh, $T/flood.sh, $T/ping.done, deaf, "10000000", '{"jsonrpc":"2.0","id":1,"method":"ping"}']
    max_line: 64KiB
    max_inflight: 1
    stop: {grace: 200ms, timeout: 2s}
routes:
  "*": flood
limits: {memory: 16MiB}
YAML
serve_start "$T/ping.yaml" -v --log "$AUD"
wait_stuck "ping flood" "$T/ping.done"
serve_eof
corral_wait 30
expect_rc 0
check_peak "ping flood" "$(mem_bound $MEM 0 0 $((64 * KI)):1)"

# 2. map/agents/list with a large answer from an agent that never reads.
AUD="$T/list.aud"
desc=$(head -c 100000 /dev/zero | tr '\0' d)
cat >"$T/list.yaml" <<YAML
agents:
  flood:
    cmd: [/bin/sh, $T/flood.sh, $T/list.done, deaf, "20000", '{"jsonrpc":"2.0","id":1,"method":"map/agents/list"}']
    max_line: 64KiB
    max_inflight: 1
    stop: {grace: 200ms, timeout: 2s}
  idle:
    cmd: [cat]
    instances: 3
    description: $desc
    max_line: 64KiB
    max_inflight: 1
routes:
  "*": flood
limits: {memory: 16MiB}
YAML
serve_start "$T/list.yaml" -v --log "$AUD"
wait_stuck "list flood" "$T/list.done"
serve_eof
corral_wait 30
expect_rc 0
# The requests still in its pipe when corral closed its stdin to stop it
# are read (its last lines may matter) but not answered: nothing reads
# the answers, each 300 KB.
grep -q 'flood[^ ]*: map/agents/list not answered: corral no longer writes to it' "$ERR" ||
    fail "list flood: the lists left in a stopping agent's pipe were answered (or not said so in the log)"
check_peak "list flood" "$(mem_bound $MEM 0 100000 $((64 * KI)):1 \
    $((64 * KI)):1 $((64 * KI)):1 $((64 * KI)):1)"

# 3. Inline spawns beyond children.max from an agent that reads.
AUD="$T/spawn.aud"
cat >"$T/spawn.yaml" <<YAML
inline_spawn: true
agents:
  flood:
    cmd: [/bin/sh, $T/flood.sh, $T/spawn.done, read, "300000", '{"jsonrpc":"2.0","id":1,"method":"map/agents/spawn","params":{"task":"t","cmd":["/bin/sh","-c","sleep 1000; :","$T"]}}']
    children: {max: 1}
    # The one child holds its task however long the flood takes (over a
    # minute under the sanitizers on a loaded machine): no timeout frees
    # its place for a second.
    timeout: none
    max_line: 64KiB
    max_inflight: 1
    stop: {grace: 200ms, timeout: 2s}
routes:
  "*": flood
limits: {memory: 16MiB}
YAML
s=$(now)
serve_start "$T/spawn.yaml" -v --log "$AUD"
# As long as it reads them: the flood takes what the machine takes.
flood_written() {
	wchar "$(flood_pid)"
}
wait_progress '[ -e "$T/spawn.done" ]' 20 flood_written ||
    fail "spawn flood: corral stopped reading the spawns ($PROGRESS bytes of them read, none more in $((20 * SLOW))s)"
serve_eof
corral_wait 30
expect_rc 0
n=$(wc -l <"$ERR")
# Ten refusals a second and a line that counts the rest, plus the run's
# own lines: however long the flood took (minutes under the sanitizers).
max=$(awk -v t="$(elapsed "$s")" 'BEGIN { printf "%d", 40 + 11 * (t + 1) }')
[ "$n" -lt "$max" ] ||
    fail "spawn flood: $n lines of log for 300,000 refused spawns in $(elapsed "$s")s (at most 10 a second are logged)"
log_has "more spawns were refused" ||
    fail "spawn flood: no line says how many refusals were not logged"
[ "$(aud_count spawn_child)" -eq 1 ] ||
    fail "spawn flood: $(aud_count spawn_child) children spawned, expected 1 (children.max 1)"
check_peak "refused spawns" "$(mem_bound $MEM 0 0 $((64 * KI)):1 \
    $((64 * KI)):1)"
note "refused spawns: $n lines of log"

# 4. One 0.5 MB reply whose 1,000 next actions would each copy its text.
AUD="$T/na.aud"
{
	printf '%s' '{"protocol":"multiagent-1.0","role":"agent","agent":{"id":"planner","name":"planner","model":"sh"},"intent":"plan","task":"t","content":{"type":"text","text":"'
	head -c 500000 /dev/zero | tr '\0' x
	printf '%s' '"},"outputs":{"next_actions":['
	awk 'BEGIN { for (i = 0; i < 1000; i++)
		printf "%s{\"intent\":\"execute\",\"task\":\"step %d\"}",
		    (i > 0 ? "," : ""), i }'
	printf ']}}\n'
} >"$T/big.json"
cat >"$T/planner.sh" <<SH
read -r line
cat "$T/big.json"
while read -r line; do :; done
SH
cat >"$T/na.yaml" <<YAML
agents:
  planner:
    cmd: [/bin/sh, $T/planner.sh]
    max_inflight: 1
  worker:
    cmd: [$TOOLS/wfagent]
    max_line: 64KiB
    max_inflight: 1
routes:
  plan: planner
  execute: worker
limits: {memory: 16MiB}
YAML
corral_run 60 run -v --log "$AUD" "$T/na.yaml" --goal "plan it"
expect_rc 1
grep -qF '"code":"memory_limit"' "$OUT" ||
    fail "next_actions: the result is not a memory_limit error: $(head -c 300 "$OUT")"
check_peak "next_actions" "$(mem_bound $MEM 0 0 $MI:1 $((64 * KI)):1)"

peak_table
expect_no_leftovers
