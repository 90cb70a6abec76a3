# Shared helpers for the process supervision regress scripts.
#
# Source it first thing:  . "$(dirname "$0")/lib.sh"
#
# It checks the environment ctest gives (CORRAL, TOOLS), makes the test's
# own directory $T (removed, with every process whose command line names
# it, by a trap), and sets:
#   TA      the test agent (tests/tools/testagent.c)
#   SLOW    3 under the sanitizers, else 1; wait_for multiplies by it
#   OUT ERR corral's stdout and stderr once corral_start ran
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

SLOW=1
[ "${CORRAL_SANITIZE:-}" = ON ] && SLOW=3

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

# wait_for CONDITION TIMEOUT: evaluate the sh CONDITION every 0.05 s until
# it holds (return 0) or TIMEOUT seconds (times SLOW) pass (return 1).
# CONDITION is eval'd here: $1, $2 in it are wait_for's own arguments, so
# pass values in ordinary variables instead.
wait_for() {
	_n=$(awk -v t="$2" -v s="$SLOW" 'BEGIN { printf "%d", t * s * 20 + 1 }')
	while [ "$_n" -gt 0 ]; do
		eval "$1" && return 0
		sleep 0.05
		_n=$((_n - 1))
	done
	eval "$1"
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

# Number of open descriptors of PID.
fd_count() {
	ls "/proc/$1/fd" 2>/dev/null | wc -l
}

# corral_start ARGS...: start corral in the background with stdin from
# /dev/null, stdout in $OUT, stderr in $ERR; sets CORRAL_PID.  Both are
# emptied first: the background shell opens them later, and a test that
# looks at once must not read the last run's output.
corral_start() {
	: >"$ERR"
	: >"$OUT"
	"$CORRAL" "$@" </dev/null >"$OUT" 2>"$ERR" &
	CORRAL_PID=$!
}

# serve_start WF [ARGS...]: start corral serve reading a fifo that this
# shell holds open on fd 8 (send lines with: echo ... >&8, end: serve_eof).
# The fifo is opened read-write first, so that opening it never blocks even
# if corral exits at once; corral itself must not inherit fd 8.
serve_start() {
	: >"$ERR"
	: >"$OUT"
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
	fcmp "$(elapsed "$s")" "<" 5 || fail "wait_for false 0.2 took $(elapsed "$s")s"
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
