#!/bin/sh
# Set up a fresh Debian 12 machine, build corral, and run every test through
# ctest: once normally, once under AddressSanitizer and
# UndefinedBehaviorSanitizer.  Exits non-zero if anything fails.
#
#   sh tests/check.sh
#   SLOW=2 sh tests/check.sh     count on a machine twice as slow as idle
#
# Each pass exports SLOW, the factor every test's deadlines are multiplied
# by (tests/slow.sh, tests/README.md), and scales ctest's TIMEOUT with it.
# SLOW is measured after the pass's build, from the load (the build's own
# load stands in for the tests' own), times 3 for the sanitizer pass; an
# exported SLOW replaces the measured load (the sanitizer pass still
# multiplies it by 3).
set -eu
cd "$(dirname "$0")/.."
# The engines the remote-* tests launch agents through: ssh, Slurm and
# podman (41 MB to fetch on a fresh machine).  Where one cannot run here
# (a container inside a container), its test says why and is SKIPPED.
CORRAL_EXTRA_PACKAGES="clang valgrind jq bc sqlite3 openssh-server
    openssh-client slurmctld slurmd slurm-client munge podman runc
    ${CORRAL_EXTRA_PACKAGES:-}"
. ./tests/setup.sh
. ./tests/slow.sh
corral_setup_packages

jobs=$(nproc 2>/dev/null || echo 2)
start=$(date +%s)
user_slow=${SLOW:-}
if [ -n "$user_slow" ] && ! corral_slow_check "$user_slow"; then
	echo "check.sh: SLOW must be a whole number >= 1, not '$user_slow'" >&2
	exit 2
fi

# slow_for SANITIZE: the SLOW of a pass (SANITIZE ON: the sanitizer one).
slow_for() {
	if [ -z "$user_slow" ]; then
		corral_slow "$1"
	elif [ "$1" = ON ]; then
		echo $((3 * user_slow))
	else
		echo "$user_slow"
	fi
}

# run_tests DIR SANITIZE [VAR=VALUE...]: every test of the build in DIR,
# with SLOW exported and ctest's time limits scaled by it, one test more
# at a time than there are CPUs: most tests spend most of their time
# waiting for an event (a timeout, a restart, a window), and the longest
# start first (COST, tests/CMakeLists.txt).  SLOW does not count the
# extra test: it only makes the others a little slower, and they wait
# for events, not for a time.
run_tests() {
	dir=$1 san=$2
	shift 2
	SLOW=$(slow_for "$san")
	export SLOW
	cmake -S . -B "$dir" -DCORRAL_TEST_SLOW="$SLOW" >/dev/null
	echo "   SLOW=$SLOW (load average $(cut -d' ' -f1 /proc/loadavg) on $jobs CPUs), $((jobs + 1)) tests at a time"
	env "$@" ctest --test-dir "$dir" --output-on-failure -j $((jobs + 1)) \
	    --timeout $((300 * SLOW))
}

# python3 as the tests find it on PATH, without a version manager's shim
# in front of it: pyenv's shim is a bash script that starts some thirty
# processes before the interpreter (a second of CPU a call on a machine
# slow to start processes), and the tests start python3 a hundred times.
# The interpreter is the one the shim chose, linked first on PATH.
py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null || true)
if [ -n "$py" ] && [ -x "$py" ] && [ "$py" != "$(command -v python3)" ]; then
	echo "   python3: $py, linked first on PATH ($(command -v python3) is a shim)"
	pybin=$(mktemp -d "${TMPDIR:-/tmp}/corral-python.XXXXXX")
	trap 'rm -rf "$pybin"' EXIT
	ln -s "$py" "$pybin/python3"
	PATH=$pybin:$PATH
	export PATH
fi

echo "== build (warnings are errors)"
corral_build build -DCORRAL_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
echo "== tests"
run_tests build OFF

echo "== build with AddressSanitizer and UndefinedBehaviorSanitizer"
corral_build build-asan -DCORRAL_WERROR=ON -DCORRAL_SANITIZE=ON \
    -DCMAKE_BUILD_TYPE=Debug
echo "== tests under the sanitizers"
run_tests build-asan ON ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# A fixed seed (CORRAL_FUZZ_SEED, 1 by default; 0 draws one) makes each
# run try the same inputs in the same order, as far as its time gets (a
# faster machine tries more): what a random seed finds on one run in
# fifty belongs to a long campaign (tests/README.md), not to the check
# that decides whether a change lands.  A failing input is printed in
# base64: decoded into FILE, `build-fuzz/fuzz/fuzz_TARGET FILE` runs it
# again.
#
# The targets run as many at a time as there are CPUs, each for its
# whole CORRAL_FUZZ_SECONDS of wall time.  A target's work is one thread
# and none runs an agent (fuzz_engine plays its agents in process, time
# passing only when its input says; fuzz_control's one agent is a path
# that cannot be run), so on 2 idle cores each target has a core to
# itself and makes as many runs as it did alone, in half the stage's
# time; two at once change only how far into the sequence a busy
# machine gets, not what an input does.  Each target has its own
# directory for its crash, leak or timeout file, and its own log.
echo "== fuzz targets (${CORRAL_FUZZ_SECONDS:=10}s each, $jobs at a time, seed ${CORRAL_FUZZ_SEED:=1}, over their seed corpora)"
corral_build build-fuzz -DCORRAL_FUZZ=ON -DCORRAL_SANITIZE=ON \
    -DCORRAL_TESTS=OFF -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang
top=$(pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/corral-fuzz.XXXXXX")
trap 'rm -rf "$work" ${pybin:+"$pybin"}' EXIT

# fuzz_start T: start fuzz target T in the background, in $work/T.run
# (where libFuzzer writes a failing input), its new inputs in $work/T.
fuzz_start() {
	mkdir -p "$work/$1" "$work/$1.run"
	(cd "$work/$1.run" && LSAN_OPTIONS="suppressions=$top/tests/fuzz/lsan.supp" \
	    exec "$top/build-fuzz/fuzz/fuzz_$1" \
	    -max_total_time="$CORRAL_FUZZ_SECONDS" -seed="$CORRAL_FUZZ_SEED" \
	    -timeout=$((10 * SLOW)) \
	    -rss_limit_mb=2048 -print_final_stats=0 "$work/$1" \
	    "$top/tests/fuzz/corpus/$1" >"$work/$1.log" 2>&1) &
	echo "$1 $!" >>"$work/running"
}

# fuzz_wait: wait for every target started, print how each did; fails
# when one did, after printing its log's tail and its input.
fuzz_wait() {
	fw_bad=0
	[ -f "$work/running" ] || return 0
	while read -r fw_t fw_pid; do
		if wait "$fw_pid"; then
			echo "fuzz_$fw_t: $(grep -E '^Done' "$work/$fw_t.log")"
			continue
		fi
		fw_bad=1
		echo "fuzz_$fw_t FAILED:" >&2
		tail -n 40 "$work/$fw_t.log" >&2
		# The work directory goes at exit: the input goes into the
		# log, to be run again with fuzz_$fw_t FILE once decoded.
		for f in "$work/$fw_t.run"/crash-* "$work/$fw_t.run"/leak-* \
		    "$work/$fw_t.run"/timeout-*; do
			[ -f "$f" ] || continue
			echo "${f##*/} (base64): $(base64 -w 0 "$f")" >&2
		done
	done <"$work/running"
	rm -f "$work/running"
	return "$fw_bad"
}

n=0
for t in framer jscan_diff envelope config control engine adr007 codec_diff \
    replay resume; do
	fuzz_start "$t"
	n=$((n + 1))
	if [ "$n" -ge "$jobs" ]; then
		fuzz_wait || exit 1
		n=0
	fi
done
fuzz_wait || exit 1

echo "== all tests passed in $(( $(date +%s) - start ))s"
