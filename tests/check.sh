#!/bin/sh
# Set up a fresh Debian 12 machine, build corral, and run every test through
# ctest: once normally, once under AddressSanitizer and
# UndefinedBehaviorSanitizer.  Exits non-zero if anything fails.
#
#   sh tests/check.sh
set -eu
cd "$(dirname "$0")/.."
CORRAL_EXTRA_PACKAGES="clang valgrind jq bc sqlite3 ${CORRAL_EXTRA_PACKAGES:-}"
. ./tests/setup.sh
corral_setup_packages

jobs=$(nproc 2>/dev/null || echo 2)
start=$(date +%s)

echo "== build (warnings are errors)"
corral_build build -DCORRAL_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
echo "== tests"
ctest --test-dir build --output-on-failure -j "$jobs" --timeout 300

echo "== build with AddressSanitizer and UndefinedBehaviorSanitizer"
corral_build build-asan -DCORRAL_WERROR=ON -DCORRAL_SANITIZE=ON \
    -DCMAKE_BUILD_TYPE=Debug
echo "== tests under the sanitizers"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j "$jobs" --timeout 600

echo "== fuzz targets (${CORRAL_FUZZ_SECONDS:=15}s each, over their seed corpora)"
corral_build build-fuzz -DCORRAL_FUZZ=ON -DCORRAL_SANITIZE=ON \
    -DCORRAL_TESTS=OFF -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang
work=$(mktemp -d "${TMPDIR:-/tmp}/corral-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
for t in framer jscan_diff envelope config control engine; do
	mkdir -p "$work/$t"
	if ! (cd "$work" && LSAN_OPTIONS="suppressions=$OLDPWD/tests/fuzz/lsan.supp" \
	    "$OLDPWD/build-fuzz/fuzz/fuzz_$t" \
	    -max_total_time="$CORRAL_FUZZ_SECONDS" -timeout=10 \
	    -rss_limit_mb=2048 -print_final_stats=0 "$work/$t" \
	    "$OLDPWD/tests/fuzz/corpus/$t" >"$work/$t.log" 2>&1); then
		echo "fuzz_$t FAILED:" >&2
		tail -n 40 "$work/$t.log" >&2
		ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* 2>/dev/null >&2
		exit 1
	fi
	echo "fuzz_$t: $(grep -E '^Done' "$work/$t.log")"
done

echo "== all tests passed in $(( $(date +%s) - start ))s"
