# Shared helpers for the adapter tests (adapter-*.sh): the real CLIs run
# offline through tests/fakeapi, with corral driving them.
#
# A test sources lib.sh, then this file, and splits in two halves:
#
#   outer   (ctest runs it): writes the workflow into $T, calls
#           fa_require TOOL... (SKIPPED without node, bash or the CLIs) and
#           fa_run "$0" (the inner half, inside a fresh network namespace
#           with the fake API server up: tests/fakeapi/with-fakeapi.sh),
#           then checks what the inner half left in $T.
#   inner   ("$0" --inner T): runs corral serve and feeds it envelopes one
#           at a time: serve_up, feed, wait_out, serve_down.  It sources
#           only this file.
#
# Everything the inner half starts names $T in its argv (the workflow, the
# fake server's port file via FAKEAPI_TMP), so lib.sh's cleanup finds it.

FA_DIR=${TESTDIR:-$(cd "$(dirname "$0")/.." && pwd)}/fakeapi

# fa_require TOOL...: skip unless bash, node and the pinned tools are there
# (installing them when the npm registry is reachable; 77 when not).
fa_require() {
	command -v bash >/dev/null 2>&1 || skip "bash is not installed"
	command -v node >/dev/null 2>&1 ||
	    skip "node is not installed (apt-get install nodejs)"
	_fo=$(sh "$FA_DIR/install.sh" "$@" 2>&1)
	case $? in
	0) ;;
	77) skip "$(printf '%s\n' "$_fo" | sed -n 's/^SKIPPED: //p' | head -n 1)" ;;
	*) fail "tests/fakeapi/install.sh $* failed: $(printf '%s\n' "$_fo" | tail -n 3)" ;;
	esac
}

# fa_run SCRIPT [ARGS]: run SCRIPT --inner $T ARGS under with-fakeapi.sh,
# bounded by a timeout (a safety net: 240 s x SLOW, under ctest's 300 s x
# SLOW; the inner half waits for each of its events itself); its stdout
# and stderr go to $T/inner.
fa_run() {
	_fs=$1
	shift
	FAKEAPI_TMP=$T FAKEAPI_INSTALL=0 FAKEAPI_KEEP=0 T=$T CORRAL=$CORRAL \
	    SLOW=$SLOW timeout -k 5 $((240 * SLOW)) \
	    bash "$FA_DIR/with-fakeapi.sh" sh "$_fs" --inner "$T" "$@" \
	    >"$T/inner" 2>&1
	_fr=$?
	[ $_fr = 124 ] && fail "the inner half timed out: $(tail -n 20 "$T/inner")"
	return $_fr
}

# Show the inner half's output and corral's log, then fail.
fa_fail() {
	echo "FAIL: $*" >&2
	echo "--- inner half:" >&2
	tail -n 30 "$T/inner" 2>/dev/null | cut -c1-400 >&2
	# The run that failed: the one named, else the last one.
	_fx=$RUN
	[ -e "$T/err$_fx" ] || _fx=''
	if [ -s "$T/err$_fx" ]; then
		echo "--- corral stderr (last 40 lines):" >&2
		tail -n 40 "$T/err$_fx" | cut -c1-400 >&2
	fi
	if [ -s "$T/out$_fx" ]; then
		echo "--- corral stdout:" >&2
		cut -c1-400 "$T/out$_fx" >&2
	fi
	exit 1
}

# The reply line to request ID (trace.parents [ID]) in $T/out (or in
# $T/out.NAME after use_run NAME).
reply_of() {
	grep -F "\"parents\":[\"$1\"]" "$T/out$RUN" | head -n 1
}

# use_run NAME: check the files a serve_keep NAME kept ("" for the last).
use_run() {
	RUN=${1:+.$1}
}
RUN=''


# expect_reply ID STRING...: the reply to ID holds every fixed STRING.
expect_reply() {
	_er=$(reply_of "$1")
	[ -n "$_er" ] || fa_fail "no reply to $1"
	_ei=$1
	shift
	for _es in "$@"; do
		case $_er in
		*"$_es"*) ;;
		*) fa_fail "the reply to $_ei lacks '$_es': $(printf '%s' "$_er" | cut -c1-600)" ;;
		esac
	done
}

# ---------------------------------------------------------------- inner

# envl ID INTENT TASK [MEMBERS]: one request envelope; MEMBERS is raw JSON
# text of further members (",\"inputs\":{...}").  TASK must be JSON-safe.
envl() {
	printf '{"protocol":"multiagent-1.0","role":"user","intent":"%s","task":"%s","content":{"type":"text"}%s,"trace":{"id":"%s"}}\n' \
	    "$2" "$3" "${4:-}" "$1"
}

# serve_up WF [ARGS...]: start corral serve on WF (and ARGS, such as
# --control PATH) with its stdin a fifo on fd 8, stdout $T/out, stderr
# $T/err, audit log $T/audit.
serve_up() {
	_sw=$1
	shift
	rm -f "$T/in"
	mkfifo "$T/in" || exit 1
	exec 8<>"$T/in"
	"$CORRAL" ${SERVE_FLAGS:--v} serve "$_sw" --log "$T/audit" "$@" \
	    <"$T/in" >"$T/out" 2>"$T/err" 8>&- &
	SERVE_PID=$!
}

# wait_for_cmd SECONDS COMMAND...: run COMMAND (its output in $T/cmd.out)
# every 0.2 s until it succeeds, for at most SECONDS (x SLOW).
wait_for_cmd() {
	_wn=$(awk -v t="$1" -v s="${SLOW:-1}" 'BEGIN { printf "%d", t * s * 5 }')
	shift
	while [ "$_wn" -gt 0 ]; do
		"$@" >"$T/cmd.out" 2>&1 && return 0
		sleep 0.2
		_wn=$((_wn - 1))
	done
	echo "inner: '$*' did not succeed within the time: $(tail -c 600 "$T/cmd.out")" >&2
	return 1
}

# fa_poll: sleep before the next look of a wait below and count the time
# down in _wn, in ticks of 0.05 s: 0.1 s apart for the first second, then
# 0.25 s (a look is a process or two: looking ten times a second for a
# minute cost seconds of CPU on a machine slow to start processes, and a
# late look costs a wait a quarter of a second, never a verdict).
# fa_poll_start SECONDS: _wn for SECONDS (x SLOW).
fa_poll_start() {
	_wn=$(awk -v t="$1" -v s="${SLOW:-1}" 'BEGIN { printf "%d", t * s * 20 }')
	_wn0=$_wn
}
fa_poll() {
	if [ $((_wn0 - _wn)) -lt 20 ]; then
		sleep 0.1
		_wn=$((_wn - 2))
	else
		sleep 0.25
		_wn=$((_wn - 5))
	fi
}

# wait_file_has FILE STRING SECONDS: wait for a fixed string in a file.
wait_file_has() {
	fa_poll_start "$3"
	while [ "$_wn" -gt 0 ]; do
		grep -qF -- "$2" "$1" 2>/dev/null && return 0
		fa_poll
	done
	echo "inner: '$2' not in $1 within $3s (x${SLOW:-1})" >&2
	return 1
}

# feed LINE: one line to corral serve; note the time it went.
feed() {
	printf '%s\n' "$1" >&8
	FED_AT=$(date +%s.%N)
}

# wait_out N SECONDS: wait until corral printed N result lines (x SLOW).
wait_out() {
	fa_poll_start "$2"
	while [ "$_wn" -gt 0 ]; do
		[ "$(wc -l <"$T/out")" -ge "$1" ] && return 0
		kill -0 "$SERVE_PID" 2>/dev/null || break
		fa_poll
	done
	[ "$(wc -l <"$T/out")" -ge "$1" ] && return 0
	echo "inner: expected $1 result lines within $2s (x${SLOW:-1}), have $(wc -l <"$T/out")" >&2
	return 1
}

# since STAMP: seconds since a FED_AT stamp, to three places.
since() {
	awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }'
}

# serve_down SECONDS: close corral's stdin and wait for it; status in RC.
serve_down() {
	exec 8>&-
	_wn=$(($1 * ${SLOW:-1} * 10))
	while kill -0 "$SERVE_PID" 2>/dev/null && [ $_wn -gt 0 ]; do
		sleep 0.1
		_wn=$((_wn - 1))
	done
	if kill -0 "$SERVE_PID" 2>/dev/null; then
		echo "inner: corral serve still running $1s after stdin closed" >&2
		kill -9 "$SERVE_PID"
	fi
	wait "$SERVE_PID"
	RC=$?
}

# wait_until SECONDS CONDITION: evaluate the sh CONDITION as fa_poll
# paces it until it holds (return 0) or SECONDS (x SLOW) pass (return 1).
wait_until() {
	fa_poll_start "$1"
	while [ "$_wn" -gt 0 ]; do
		eval "$2" && return 0
		fa_poll
	done
	eval "$2"
}

# wait_err STRING SECONDS: wait for a fixed string in corral's stderr.
wait_err() {
	fa_poll_start "$2"
	while [ "$_wn" -gt 0 ]; do
		grep -qF -- "$1" "$T/err" && return 0
		fa_poll
	done
	echo "inner: '$1' not in corral's log within $2s (x${SLOW:-1})" >&2
	return 1
}

# term_down SECONDS: SIGTERM to corral serve and wait for it (SIGKILL
# after SECONDS x SLOW); the time it took in TERM_SECS, its status in RC.
term_down() {
	_t0=$(date +%s.%N)
	kill -TERM "$SERVE_PID"
	_wn=$(($1 * ${SLOW:-1} * 10))
	while kill -0 "$SERVE_PID" 2>/dev/null && [ $_wn -gt 0 ]; do
		sleep 0.1
		_wn=$((_wn - 1))
	done
	TERM_SECS=$(since "$_t0")
	if kill -0 "$SERVE_PID" 2>/dev/null; then
		echo "inner: corral serve still running $1s after SIGTERM" >&2
		kill -9 "$SERVE_PID"
	fi
	exec 8>&-
	wait "$SERVE_PID"
	RC=$?
}

# serve_keep NAME: keep this run's out, err and audit as FILE.NAME.
serve_keep() {
	for _f in out err audit; do
		mv "$T/$_f" "$T/$_f.$1"
	done
}

# Run as a script (ctest runs every *.sh), check the helpers themselves.
if [ "$(basename "$0")" = adapter-lib.sh ]; then
	T=$(mktemp -d "${TMPDIR:-/tmp}/adapter-lib.XXXXXX") || exit 1
	trap 'rm -rf "$T"' EXIT
	envl x-1 execute "hi" ',"ttl_ms":5' >"$T/out"
	grep -qF '{"protocol":"multiagent-1.0","role":"user","intent":"execute","task":"hi","content":{"type":"text"},"ttl_ms":5,"trace":{"id":"x-1"}}' "$T/out" ||
	    { echo "FAIL: envl built $(cat "$T/out")"; exit 1; }
	printf '%s\n' '{"a":1,"trace":{"parents":["r1"]}}' >"$T/out"
	[ -n "$(reply_of r1)" ] && [ -z "$(reply_of r2)" ] ||
	    { echo "FAIL: reply_of"; exit 1; }
	exit 0
fi
