# Shared helpers for the process supervision regress scripts.
#
# Source it first thing:  . "$(dirname "$0")/lib.sh"
#
# It checks the environment ctest gives (CORRAL, TOOLS), makes the test's
# own directory $T (removed, with every process whose command line names
# it, by a trap), and sets:
#   TA      the test agent (tests/tools/testagent.c)
#   SLOW    how many times longer than on an idle machine to wait: every
#           deadline wait_for (and all built on it) waits up to is
#           multiplied by it.  tests/check.sh exports it; run by hand it
#           comes from tests/slow.sh (3 under the sanitizers, else 1,
#           times the machine's load), unless SLOW is exported
#   OUT ERR corral's stdout and stderr once corral_start ran
#
# Deadlines are for waiting only: a test waits for an event (a log line,
# a record line, a process gone) up to a deadline times SLOW, and asserts
# order and counts, not how fast things went.  Where a test needs time to
# pass (a behaviour's own timeout must expire first), the waits scale
# with SLOW and only lower bounds are exact.
#
# Processes of this test are found by $T in their argv: the workflow file,
# the agents' --record/--pidfile paths and the grandchildren they fork all
# live under $T, which is unique to this test.  Nothing is found by name.

set -u

: "${CORRAL:?CORRAL must name the corral binary (run through ctest)}"
: "${TOOLS:?TOOLS must name the test tools directory (run through ctest)}"
TA="$TOOLS/testagent"
[ -x "$CORRAL" ] || { echo "SKIPPED: no corral binary at $CORRAL"; exit 77; }
[ -x "$TA" ] || { echo "SKIPPED: no test agent at $TA"; exit 77; }
command -v ps >/dev/null 2>&1 || { echo "SKIPPED: ps (procps) is missing"; exit 77; }

_slow_sh="${TESTDIR:-$(dirname "$0")/..}/slow.sh"
[ -r "$_slow_sh" ] || { echo "FAIL: no $_slow_sh (set TESTDIR)"; exit 1; }
. "$_slow_sh"
: "${SLOW:=$(corral_slow "${CORRAL_SANITIZE:-}")}"
corral_slow_check "$SLOW" ||
    { echo "FAIL: SLOW must be a whole number >= 1, not '$SLOW'"; exit 1; }
export SLOW

T=$(mktemp -d "${TMPDIR:-/tmp}/corral-regress.XXXXXX") || exit 1
OUT="$T/out"
ERR="$T/err"
CORRAL_PID=
RC=

# Kill every process of this test (by the marker $T) and remove $T.
cleanup() {
	trap - EXIT INT TERM
	exec 8>&-
	for p in $CORRAL_PID $(marker_pids); do
		kill -9 "$p" 2>/dev/null
	done
	[ -n "$CORRAL_PID" ] && wait "$CORRAL_PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Print the end of corral's log (to make a failure readable).
show_log() {
	if [ -s "$ERR" ]; then
		echo "--- corral stderr (last ${1:-40} lines):" >&2
		tail -n "${1:-40}" "$ERR" | cut -c1-300 >&2
	fi
	if [ -s "$OUT" ]; then
		echo "--- corral stdout (first 5 lines):" >&2
		head -n 5 "$OUT" | cut -c1-300 >&2
	fi
}

# Fail the test with a message saying what was expected and what was seen.
fail() {
	echo "FAIL: $*" >&2
	echo "(SLOW=$SLOW: deadlines were multiplied by $SLOW)" >&2
	show_log
	exit 1
}

# Skip the test.
skip() {
	echo "SKIPPED: $*"
	exit 77
}

# Print a note (shows with ctest --output-on-failure or -V).
note() {
	echo "$*"
}

# Current time in seconds with fractions.
now() {
	date +%s.%N
}

# Seconds since a time from now(): elapsed START
elapsed() {
	awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'
}

# Compare decimal numbers: fcmp A OP B (OP one of < <= > >=).
fcmp() {
	awk -v a="$1" -v b="$3" -v op="$2" 'BEGIN {
		if (op == "<") exit !(a < b); if (op == "<=") exit !(a <= b)
		if (op == ">") exit !(a > b); exit !(a >= b) }'
}

# Polls start 0.05 s apart and back off to 0.25 s: on a machine where
# starting a process costs milliseconds, a test that polled 20 times a
# second with `sleep` and a grep spent a third of a core on it while it
# waited.  What a test waits for is an event, so a late look costs it at
# most a quarter of a second, never a verdict.  poll_sleep N: sleep N
# ticks of 0.05 s, and set _poll to the next poll's ticks (one for the
# first second, two for the next two, then five).
poll_sleep() {
	case $1 in
	1) sleep 0.05 ;;
	2) sleep 0.1 ;;
	*) sleep 0.25 ;;
	esac
	_poll_done=$((_poll_done + $1))
	if [ "$_poll_done" -ge 60 ]; then
		_poll=5
	elif [ "$_poll_done" -ge 20 ]; then
		_poll=2
	else
		_poll=1
	fi
}

# wait_for CONDITION TIMEOUT: evaluate the sh CONDITION until it holds
# (return 0) or TIMEOUT seconds (times SLOW) pass (return 1), polling as
# poll_sleep says.  The time is counted in the sleeps' ticks, so a busy
# machine, whose sleeps run long, waits longer, never shorter.
# CONDITION is eval'd here: $1, $2 in it are wait_for's own arguments, so
# pass values in ordinary variables instead.
wait_for() {
	_n=$(awk -v t="$2" -v s="$SLOW" 'BEGIN { printf "%d", t * s * 20 + 1 }')
	_poll=1 _poll_done=0
	while [ "$_poll_done" -lt "$_n" ]; do
		eval "$1" && return 0
		poll_sleep "$_poll"
	done
	eval "$1"
}

# wait_steady N TIMEOUT CMD [ARG...]: wait until CMD prints the same value
# N looks in a row (at least 0.05 s apart, so at least N / 20 seconds): a
# count or position that has stopped changing.  The value is left in
# STEADY.
wait_steady() {
	_ws_n=$1 _ws_t=$2
	shift 2
	_ws_cmd=$* _ws_prev= _ws_same=-1
	wait_for 'STEADY=$($_ws_cmd); if [ "$STEADY" = "$_ws_prev" ]; then _ws_same=$((_ws_same + 1)); else _ws_same=0; fi; _ws_prev=$STEADY; [ $_ws_same -ge $_ws_n ]' "$_ws_t"
}

# wait_progress CONDITION STALL CMD [ARG...]: wait until the sh CONDITION
# holds (return 0), for as long as CMD's output (a count, a size) keeps
# changing; give up (return 1) only once it has not changed for STALL
# seconds (times SLOW).  For work whose length is the machine's speed
# times its size (10,000 round trips, 200,000 lines): a slow machine takes
# longer and still passes, a stuck corral fails STALL x SLOW seconds after
# it stopped.  The stall is counted in poll_sleep's ticks since the last
# change (a busy machine's sleeps run long: it waits longer, never
# shorter), and the backoff starts again at each change.  The last value
# CMD printed is in PROGRESS (CONDITION may test it).  CONDITION is
# eval'd here, as wait_for's is.
wait_progress() {
	_wp_cond=$1
	_wp_stall=$(awk -v t="$2" -v s="$SLOW" 'BEGIN { printf "%d", t * s * 20 }')
	shift 2
	PROGRESS=$("$@")
	_poll=2 _poll_done=0
	while ! eval "$_wp_cond"; do
		poll_sleep "$_poll"
		_wp_v=$("$@")
		if [ "$_wp_v" != "$PROGRESS" ]; then
			PROGRESS=$_wp_v
			_poll=2 _poll_done=0
		elif [ "$_poll_done" -ge "$_wp_stall" ]; then
			eval "$_wp_cond"
			return
		fi
	done
}

# Does corral's stderr hold this fixed string?
log_has() {
	grep -qF -- "$1" "$ERR" 2>/dev/null
}

# How many lines of corral's stderr hold this fixed string?
log_count() {
	grep -cF -- "$1" "$ERR" 2>/dev/null || true
}

# wait_log STRING [TIMEOUT]: wait for a line in corral's stderr, or fail.
wait_log() {
	_wl=$1
	wait_for 'log_has "$_wl"' "${2:-10}" ||
	    fail "expected '$1' in corral's log within ${2:-10}s (x$SLOW); not there"
}

# Line number of the first line holding STRING in corral's stderr (0: none).
log_line() {
	grep -nF -- "$1" "$ERR" 2>/dev/null | head -n 1 | cut -d: -f1 |
	    grep . || echo 0
}

# log_pid NAME [N]: the host pid of the Nth spawn of agent NAME from the
# "-v" log (default the latest); empty when there is none.
log_pid() {
	_l=$(grep -F "corral: agent $1: spawned (pid " "$ERR" 2>/dev/null)
	if [ -n "${2:-}" ]; then
		_l=$(printf '%s\n' "$_l" | sed -n "${2}p")
	else
		_l=$(printf '%s\n' "$_l" | tail -n 1)
	fi
	printf '%s\n' "$_l" | sed -n 's/.*spawned (pid \([0-9]*\)).*/\1/p'
}

# pidns_mode MODE: how the next corral runs: MODE "nopidns" (or ending in
# "-nopidns") sets CORRAL_NO_PIDNS=1 (subreaper mode), anything else
# unsets it (pid namespace mode).
pidns_mode() {
	case $1 in
	nopidns|*-nopidns) export CORRAL_NO_PIDNS=1 ;;
	*) unset CORRAL_NO_PIDNS ;;
	esac
}

# envelope ID INTENT [TASK [MEMBERS]]: print a request envelope with that
# trace.id and intent (task "t"); MEMBERS is raw JSON text of more
# top-level members, e.g. ',"priority":"high"'.
envelope() {
	printf '{"protocol":"multiagent-1.0","role":"user","intent":"%s","task":"%s","content":{"type":"text","text":"x"}%s,"trace":{"id":"%s"}}\n' \
	    "$2" "${3:-t}" "${4:-}" "$1"
}

# Lines corral wrote to its stdout so far.
out_lines() {
	wc -l <"$OUT" 2>/dev/null | tr -d ' ' || echo 0
}

# wait_lines N [TIMEOUT]: wait until corral wrote N lines to its stdout,
# or fail.
wait_lines() {
	_wli=$1
	wait_for '[ "$(out_lines)" -ge "$_wli" ]' "${2:-10}" ||
	    fail "expected $1 lines on corral's stdout within ${2:-10}s (x$SLOW), got $(out_lines)"
}

# Is PID a live process (present and not a zombie)?
pid_alive() {
	[ -n "$1" ] || return 1
	_s=$(sed -n 's/^[0-9]* (.*) \(.\) .*/\1/p' "/proc/$1/stat" 2>/dev/null)
	[ -n "$_s" ] && [ "$_s" != Z ]
}

# wait_gone PID TIMEOUT: wait until PID is no live process.
wait_gone() {
	wait_for "! pid_alive $1" "$2"
}

# Pids of every process whose argv names this test's directory.
marker_pids() {
	ps -ww -eo pid=,args= 2>/dev/null | M="$T" awk \
	    'index($0, ENVIRON["M"]) { print $1 }'
}

# Live (non-zombie) processes whose argv names this test's directory,
# one "pid stat args" line each.
marker_procs() {
	ps -ww -eo pid=,stat=,args= 2>/dev/null | M="$T" awk \
	    'index($0, ENVIRON["M"]) && $2 !~ /^Z/ { print }'
}

# Zombies whose parent is one of the given pids, one "stat pid ppid" each.
zombies_of() {
	ps -eo stat=,pid=,ppid=,comm= 2>/dev/null | P=" $* " awk \
	    '$1 ~ /^Z/ && index(ENVIRON["P"], " " $3 " ") { print }'
}

# The process that supervises: in pid namespace mode the child of the pid
# we started that runs the same binary, else that pid itself.
supervisor_pid() {
	_exe=$(readlink "/proc/$CORRAL_PID/exe" 2>/dev/null)
	for _c in $(ps -o pid= --ppid "$CORRAL_PID" 2>/dev/null); do
		if [ "$(readlink "/proc/$_c/exe" 2>/dev/null)" = "$_exe" ]; then
			echo "$_c"
			return
		fi
	done
	echo "$CORRAL_PID"
}

# host_pid PID...: the host pids of pids the test tools reported.  In
# corral's pid namespace an agent has the namespace's own /proc, so the
# tools report namespace pids (tests/tools/tool.h); the NSpid lines of
# the host's /proc map them to the pids ps and kill see here.  A pid that
# no live process of corral's namespace has is left out: it is gone (and
# once corral has exited, nothing of its namespace lives).  Without a
# namespace, or when corral could not mount its /proc (it says so with
# -v), the tools' pids are host pids already.
host_pid() {
	if [ "${CORRAL_NO_PIDNS:-0}" != 0 ] || log_has "no pid namespace" ||
	    log_has "/proc is the host's"; then
		[ $# -gt 0 ] && printf '%s\n' "$@"
		return 0
	fi
	[ -n "$CORRAL_PID" ] || return 0
	_hns=$(readlink "/proc/$(supervisor_pid)/ns/pid" 2>/dev/null)
	[ -n "$_hns" ] && [ "$_hns" != "$(readlink /proc/$$/ns/pid)" ] ||
	    return 0
	for _hp in "$@"; do
		for _hh in $(grep -s '^NSpid:' /proc/[0-9]*/status |
		    awk -v p="$_hp" 'NF == 3 && $3 == p {
			split($1, f, "/"); print f[3] }'); do
			[ "$(readlink "/proc/$_hh/ns/pid" 2>/dev/null)" = "$_hns" ] &&
			    echo "$_hh"
		done
	done
	return 0
}

# Number of open descriptors of PID.
fd_count() {
	ls "/proc/$1/fd" 2>/dev/null | wc -l
}

# corral_start ARGS...: start corral in the background with stdin from
# /dev/null, stdout in $OUT, stderr in $ERR; sets CORRAL_PID.  Both files
# are emptied here, before corral starts: a check of $OUT must never see
# the previous run's lines because the new one has not opened it yet.
corral_start() {
	: >"$OUT"
	: >"$ERR"
	"$CORRAL" "$@" </dev/null >"$OUT" 2>"$ERR" &
	CORRAL_PID=$!
}

# serve_start WF [ARGS...]: start corral serve reading a fifo that this
# shell holds open on fd 8 (send lines with: echo ... >&8, end: serve_eof).
# The fifo is opened read-write first, so that opening it never blocks even
# if corral exits at once; corral itself must not inherit fd 8.
serve_start() {
	: >"$OUT"
	: >"$ERR"
	rm -f "$T/stdin"
	mkfifo "$T/stdin" || fail "mkfifo $T/stdin"
	exec 8<>"$T/stdin"
	"$CORRAL" serve "$@" <"$T/stdin" >"$OUT" 2>"$ERR" 8>&- &
	CORRAL_PID=$!
}

# Close corral serve's stdin.
serve_eof() {
	exec 8>&-
}

# corral_wait TIMEOUT: wait for corral to exit; its status goes in RC.
corral_wait() {
	wait_for "! pid_alive $CORRAL_PID" "$1" ||
	    fail "corral (pid $CORRAL_PID) still running after $1s (x$SLOW)"
	wait "$CORRAL_PID"
	RC=$?
	CORRAL_PID=
}

# corral_run TIMEOUT ARGS...: start corral, wait for it; status in RC.
corral_run() {
	_t=$1
	shift
	corral_start "$@"
	corral_wait "$_t"
}

# Fail unless RC is the expected exit status.
expect_rc() {
	[ "$RC" = "$1" ] || fail "expected exit status $1, got $RC"
}

# expect_replay LOG [WORKFLOW] [ARGS...]: corral replay of the recorded
# run LOG finds no difference (exit 0, nothing on its stdout); its output
# is in $T/replay.out and $T/replay.err ($OUT and $ERR are left alone).
# The recorded run's agents are not run: no program of theirs is needed.
expect_replay() {
	timeout -k 5 $((60 * SLOW)) "$CORRAL" replay "$@" \
	    >"$T/replay.out" 2>"$T/replay.err"
	_rr=$?
	[ "$_rr" = 0 ] && [ ! -s "$T/replay.out" ] ||
	    fail "corral replay $*: exit $_rr, differences: $(head -c 2000 "$T/replay.out"); stderr: $(tail -n 5 "$T/replay.err")"
}

# Skip when corral ran without a pid namespace (it says so with -v).
need_pidns() {
	if log_has "no pid namespace"; then
		skip "corral cannot create a pid namespace here: $(grep -F \
		    'no pid namespace' "$ERR" | head -n 1)"
	fi
}

# Fail if any process of this test is still alive.
expect_no_leftovers() {
	wait_for '[ -z "$(marker_procs)" ]' "${1:-5}" ||
	    fail "processes of this test still alive: $(marker_procs)"
}

# Run as a script (ctest runs every *.sh), this file checks its own
# helpers and the test agent, so a broken harness fails here first.
if [ "$(basename "$0")" = lib.sh ]; then
	fcmp 1.5 ">" 1.25 && ! fcmp 1 ">" 2 || fail "fcmp compares wrongly"
	wait_for true 1 || fail "wait_for true failed"
	s=$(now)
	wait_for false 0.2 && fail "wait_for false succeeded"
	fcmp "$(elapsed "$s")" "<" $((5 * SLOW)) ||
	    fail "wait_for false 0.2 took $(elapsed "$s")s (x$SLOW)"
	wait_progress false 0.2 echo same && fail "wait_progress: no progress, yet it succeeded"
	[ "$PROGRESS" = same ] || fail "wait_progress: PROGRESS is '$PROGRESS'"
	# Moving on, it outwaits its stall time: the file comes after 1 s.
	(sleep 1; : >"$T/wp") &
	wait_progress '[ -e "$T/wp" ]' 0.5 date +%s.%N ||
	    fail "wait_progress gave up while its command's output kept changing"
	corral_slow_check "$SLOW" || fail "SLOW is '$SLOW'"
	[ "$(SLOW=7 sh -c '. "$1"; echo $SLOW' sh "$0" 2>/dev/null)" = 7 ] ||
	    fail "an exported SLOW is not honoured"
	pid_alive $$ || fail "pid_alive: this shell ($$) is not alive?"
	sleep 0.01 & p=$!
	wait $p
	pid_alive $p && fail "pid_alive: a reaped pid ($p) is alive?"
	r=$(printf '%s\n' '{"jsonrpc":"2.0","id":7,"method":"ping"}' \
	    '{"protocol":"multiagent-1.0","role":"user","intent":"plan","task":"t","content":{"type":"text"},"trace":{"id":"x-1"}}' |
	    CORRAL_AGENT_ID=self "$TA" --record "$T/rec")
	printf '%s\n' "$r" | grep -qF '{"jsonrpc":"2.0","id":7,"result":{}}' ||
	    fail "testagent did not answer the ping: $r"
	printf '%s\n' "$r" | grep -qF '"text":"ok self"},"confidence":{"score":0.9},"trace":{"parents":["x-1"]}}' ||
	    fail "testagent did not answer the request: $r"
	grep -q "^start [0-9][0-9]* [0-9.]*$" "$T/rec" || fail "testagent did not record its start: $(cat "$T/rec")"
	exit 0
fi
