# Helpers for the reliability scripts (rel-*.sh), on top of lib.sh.
#
# Source it first thing:  . "$(dirname "$0")/rel-lib.sh"
#
# It sources lib.sh (so $T, $OUT, $ERR, serve_start ... are there) and sets:
#   RA   the misbehaving agent (tests/tools/relagent.c)
#   RG   the input generator (tests/tools/relgen.c)
#   AUD  the audit log path ($T/audit.ndjson) the scripts pass with --log
#   SAN  1 under the sanitizers or valgrind (CORRAL_SANITIZE=ON), else 0:
#        memory bounds are not meaningful there and are skipped
#
# relagent's task "wait:FILE" holds a request until the script creates
# FILE: a script that needs an agent busy while it sets something up
# waits for the event it needs, then releases the agent.
#
# Run as a script (ctest runs every *.sh), it checks the two tools.

. "$(dirname "$0")/lib.sh"

RA="$TOOLS/relagent"
RG="$TOOLS/relgen"
AUD="$T/audit.ndjson"
[ -x "$RA" ] || skip "no relagent at $RA"
[ -x "$RG" ] || skip "no relgen at $RG"
SAN=0
[ "${CORRAL_SANITIZE:-}" = ON ] && SAN=1

# The supervisor's pid, once it has spawned an agent (pid namespace mode:
# the waiter's child; CORRAL_NO_PIDNS=1: corral itself).
sup_pid() {
	wait_for 'log_has "spawned (pid"' 10 ||
	    fail "corral spawned no agent within 10s (x$SLOW)"
	supervisor_pid
}

# hwm_start PID: record PID's peak resident size (VmHWM, kB) into
# $T/hwm every 0.1 s while it lives; hwm_read prints the last value.
# (The poller must not hold serve's stdin fifo, fd 8, open.)
hwm_start() {
	(
		while [ -r "/proc/$1/status" ]; do
			h=$(awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
			[ -n "$h" ] && echo "$h" >"$T/hwm.tmp" && mv "$T/hwm.tmp" "$T/hwm"
			sleep 0.1
		done
	) 8>&- &
	HWM_PID=$!
}
hwm_read() {
	cat "$T/hwm" 2>/dev/null || echo 0
}

# Resident size (VmRSS, kB) of a pid now.
rss_of() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0
}

# corral's peak resident size (kB) from the audit log's run_end ("" if
# absent): getrusage of the supervisor, exact, with no polling window.
peak_rss_kb() {
	run_end_get peak_rss_kb
}

# mem_bound MEMORY CLIENTS DESC AGENT...: the bound docs/reliability.md
# ("Memory bound") puts on corral's peak RSS, in kB, for limits.memory
# MEMORY (bytes), CLIENTS control socket clients, DESC bytes of
# description and metadata per agent, and one AGENT "MAXLINE:MAXINFLIGHT"
# (bytes, requests) per agent alive at once.
mem_bound() {
	_m=$1 _c=$2 _d=$3
	shift 3
	echo "$*" | awk -v m="$_m" -v c="$_c" -v d="$_d" '
	function max(a, b) { return a > b ? a : b }
	{
		Mi = 1048576; Ki = 1024
		n = NF; la = 0
		for (i = 1; i <= n; i++) {
			split($i, f, ":"); al[i] = f[1]; ai[i] = f[2]
			la = max(la, al[i])
		}
		L = max(Mi, la)
		Y = Mi + max(Mi + 2 * L, n * (512 + d))	# a batch: 1 MiB more
		t = 6 * Mi					# base
		t += 10 * L + 8 * la + 16 * Mi			# one line handled
		t += 18 * Mi					# event history
		t += m						# limits.memory
		t += L + 3 * (Mi + L) + 2 * Mi			# stdin, stdout, audit log
		t += 2 * (Y + 2 * L + 64 * Ki) + 512 * Ki	# replays reading the log
		t += 5 * Mi					# finished agents kept
		for (i = 1; i <= n; i++)			# agents
			t += max(al[i], 256 * Ki) + 2 * (max(Mi, al[i]) + \
			    ai[i] * L + Y) + 80 * Ki + 2 * Mi
		t += c * (Mi + 2 * (Mi + Y) + 16 * Ki + 2 * Mi)	# clients
		printf "%d\n", t / 1024
	}'
}

# check_peak NAME BOUND: the peak_rss_kb of $AUD's run_end is at most
# BOUND (kB), unless under the sanitizers; a row of peak_table either way.
PEAK_TABLE=
check_peak() {
	_p=$(peak_rss_kb)
	[ -n "$_p" ] || fail "$1: the audit log's run_end has no peak_rss_kb"
	PEAK_TABLE="$PEAK_TABLE
$(printf '  %-24s %8s kB %8s kB' "$1" "$_p" "$2")"
	if [ "$SAN" = 0 ] && [ "$_p" -gt "$2" ]; then
		fail "$1: corral's peak RSS was $_p kB, over its bound of $2 kB"
	fi
}

# Print the table of check_peak's rows.
peak_table() {
	note "  attack                   peak RSS       bound$PEAK_TABLE"
}

# mem_flood_script: write $T/flood.sh, an agent: "flood.sh DONE read|deaf
# N LINE" writes LINE N times, then touches DONE and waits.  With read it
# drains its stdin (a background "cat" of sh's own would get /dev/null,
# hence descriptor 3), with deaf it never reads.
mem_flood_script() {
	cat >"$T/flood.sh" <<SH
if [ "\$2" = read ]; then
	exec 3<&0
	cat <&3 >/dev/null &
fi
"$RG" flood "\$3" "\$4" --tag "$T"
touch "\$1"
sleep 1000
SH
}

# aud_count EV [KEY VALUE]...: audit events of kind EV with those members.
aud_count() {
	_pat="\"ev\":\"$1\""
	shift
	_f=$(mktemp "$T/aud.XXXXXX")
	grep -F "$_pat" "$AUD" 2>/dev/null >"$_f"
	while [ $# -ge 2 ]; do
		grep -F "\"$1\":\"$2\"" "$_f" >"$_f.n"
		mv "$_f.n" "$_f"
		shift 2
	done
	wc -l <"$_f" | tr -d ' '
	rm -f "$_f"
}

# run_end_check: the audit log's run_end says accepted == replied +
# errored + expired; prints "accepted replied errored expired".
run_end_check() {
	_re=$(grep -F '"ev":"run_end"' "$AUD" 2>/dev/null | tail -n 1)
	[ -n "$_re" ] || fail "no run_end event in the audit log"
	_a=$(printf '%s\n' "$_re" | sed -n 's/.*"accepted":\([0-9][0-9]*\)[,}].*/\1/p')
	_r=$(printf '%s\n' "$_re" | sed -n 's/.*"replied":\([0-9][0-9]*\)[,}].*/\1/p')
	_e=$(printf '%s\n' "$_re" | sed -n 's/.*"errored":\([0-9][0-9]*\)[,}].*/\1/p')
	_x=$(printf '%s\n' "$_re" | sed -n 's/.*"expired":\([0-9][0-9]*\)[,}].*/\1/p')
	[ -n "$_a" ] && [ -n "$_r" ] && [ -n "$_e" ] && [ -n "$_x" ] ||
	    fail "cannot read run_end: $_re"
	[ "$_a" -eq $((_r + _e + _x)) ] ||
	    fail "accounting: accepted $_a != replied $_r + errored $_e + expired $_x ($_re)"
	echo "$_a $_r $_e $_x"
}

# run_end_get KEY: a counter of the audit log's run_end event ("" if
# absent), e.g. rejected or late.
run_end_get() {
	grep -F '"ev":"run_end"' "$AUD" 2>/dev/null | tail -n 1 |
	    sed -n "s/.*\"$1\":\\([0-9][0-9]*\)[,}].*/\1/p"
}

# The first trace.parents entry of each line of a file, one a line
# ("-" for a line without parents).
out_parents() {
	sed -e 's/.*"trace":{[^}]*"parents":\["\([^"]*\)".*/\1/' \
	    -e 't' -e 's/.*/-/' "$1"
}

# expect_one_each IDFILE: every id listed in IDFILE is the parent of
# exactly one line of $OUT, and no line of $OUT names another id.
expect_one_each() {
	out_parents "$OUT" | sort >"$T/parents"
	sort "$1" >"$T/ids.sorted"
	_d=$(uniq -d "$T/parents" | head -n 3 | tr '\n' ' ')
	[ -z "$_d" ] || fail "inputs with more than one result: $_d"
	_m=$(comm -23 "$T/ids.sorted" "$T/parents" | head -n 3 | tr '\n' ' ')
	[ -z "$_m" ] || fail "inputs without a result: $_m ($(comm -23 "$T/ids.sorted" "$T/parents" | wc -l) in all)"
	_x=$(comm -13 "$T/ids.sorted" "$T/parents" | head -n 3 | tr '\n' ' ')
	[ -z "$_x" ] || fail "results that answer no input: $_x"
}

# The result line of input ID in $OUT.
result_of() {
	grep -F "\"parents\":[\"$1\"]" "$OUT" | head -n 1
}

# wait_result ID [TIMEOUT]: wait for the result line of input ID in $OUT,
# or fail.
wait_result() {
	_wr_id=$1
	wait_for '[ -n "$(result_of "$_wr_id")" ]' "${2:-10}" ||
	    fail "no result for $1 within ${2:-10}s (x$SLOW)"
}

# aud_wait COUNT EV [KEY VALUE]...: wait until the audit log has COUNT
# events of kind EV with those members (its writer thread may write them
# a little after stderr), or fail.
aud_wait() {
	_aw_n=$1
	shift
	_aw_args=$*
	wait_for '[ "$(aud_count $_aw_args)" -ge "$_aw_n" ]' 10 ||
	    fail "expected $_aw_n audit events '$*' within 10s (x$SLOW), got $(aud_count "$@")"
}

# The error code of the result of input ID ("" for a reply).
code_of() {
	result_of "$1" | sed -n 's/.*"type":"error".*"code":"\([a-z_]*\)".*/\1/p'
}

if [ "$(basename "$0")" = rel-lib.sh ]; then
	# relgen: the catalogue is one line per entry, envelopes are valid.
	n=$("$RG" hostile --names | wc -l)
	[ "$n" -ge 40 ] || fail "relgen hostile: only $n entries"
	[ "$("$RG" hostile | wc -l)" -eq "$n" ] ||
	    fail "relgen hostile: $n names but $("$RG" hostile | wc -l) lines"
	"$RG" env 3 --id x- --priority cycle --ttl 5 --size 300 >"$T/env"
	[ "$(wc -l <"$T/env")" -eq 3 ] || fail "relgen env 3 wrote $(wc -l <"$T/env") lines"
	awk 'length($0) != 300 { exit 1 }' "$T/env" ||
	    fail "relgen env --size 300: line lengths $(awk '{ printf "%d ", length($0) }' "$T/env")"
	grep -q '"trace":{"id":"x-2"},"priority":2,"ttl_ms":5}$' "$T/env" ||
	    fail "relgen env: unexpected line: $(sed -n 2p "$T/env")"
	[ "$("$RG" line 1000 --nonl | wc -c)" -eq 1000 ] || fail "relgen line --nonl"
	[ "$("$RG" flood 70000 | wc -l)" -eq 70000 ] || fail "relgen flood"
	# relagent: replies, records, answers pings, dumps.
	mkdir "$T/dump"
	r=$( { printf '%s\n' '{"jsonrpc":"2.0","id":7,"method":"ping"}'
	    "$RG" env 1 --id q-; "$RG" env 1 --id d- --task dup
	    printf '%s\n' '{"corral":{"kind":"notice"},"content":{"type":"error","data":{"code":"nul_byte"}}}'; } |
	    CORRAL_AGENT_ID=self "$RA" --record "$T/rec" --dump "$T/dump")
	printf '%s\n' "$r" | grep -qF '{"jsonrpc":"2.0","id":7,"result":{}}' ||
	    fail "relagent did not answer the ping: $r"
	printf '%s\n' "$r" | grep -qF '"text":"ok self"},"confidence":{"score":0.9},"trace":{"parents":["q-1"]}}' ||
	    fail "relagent did not answer the request: $r"
	[ "$(printf '%s\n' "$r" | grep -cF '"parents":["d-1"]')" -eq 2 ] ||
	    fail "relagent dup did not reply twice: $r"
	grep -q '^req self q-1 ok 0$' "$T/rec" || fail "relagent record: $(cat "$T/rec")"
	grep -q '^notice self nul_byte$' "$T/rec" || fail "relagent notice record: $(cat "$T/rec")"
	for f in status limits stat env pid; do
		[ -s "$T/dump/$f" ] || fail "relagent --dump wrote no $f"
	done
	[ "$(printf '%s\n' "$("$RG" env 1 --task invalid)" | "$RA" | wc -l)" -eq $((n + 1)) ] ||
	    fail "relagent invalid: expected $n lines and the reply"
	exit 0
fi

# The artifact tests (rel-workspace*): corral serve with workspace $W and
# one agent, w, that answers each request with the next line of
# $T/script.
#
# ws_reply ARTIFACTS-JSON: print one line of the script: a finalize that
# carries these artifacts and answers its request (@ID@).
ws_reply() {
	printf '{"protocol":"multiagent-1.0","role":"agent","intent":"finalize","task":"t","content":{"type":"text","text":"wrote"},"outputs":{"artifacts":[%s]},"confidence":{"score":0.9},"trace":{"parents":["@ID@"]}}\n' "$1"
}

# ws_serve: start corral serve on that workflow (stdin on fd 8).
ws_serve() {
	cat >"$T/wf.yaml" <<-YAML
	workspace: $W
	agents:
	  w:
	    cmd: [$RA, --record, $T/rec, --script, $T/script]
	routes:
	  "*": w
	YAML
	serve_start "$T/wf.yaml" --log "$AUD" -v
	ws_n=0
}

# ws_step WHAT: send the next request and wait for its result, which
# must be the agent's reply (a refused artifact does not cost it).
ws_step() {
	ws_n=$((ws_n + 1))
	"$RG" env 1 --id s- --start $ws_n --task script >&8
	_ws_id="s-$ws_n"
	wait_for '[ -n "$(result_of "$_ws_id")" ]' 10 ||
	    fail "$1: no result for s-$ws_n within 10s (x$SLOW): corral is frozen"
	result_of "s-$ws_n" | grep -q '"text":"wrote"' ||
	    fail "$1: expected the agent's reply as the result, got: $(result_of "s-$ws_n" | cut -c1-300)"
}
