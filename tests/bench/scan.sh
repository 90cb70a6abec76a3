#!/bin/sh
# The scanner's instructions per line on the bench's own lines.
#
#   sh tests/bench/scan.sh [N]
#
# Runs the bench's 600-byte scenario (N envelopes, 2,000 by default,
# about 4,400 lines: the inputs and every agent's replies) once with the
# lines teed to files, then counts with callgrind the instructions of
# jscan_run_path per line on each path this machine has (AVX2, SSE2,
# portable), for the lines as captured and, when python3 is there, the
# same lines as Python's json.dumps writes them (a blank after ':' and
# ','), each line alone and then (memo) each with its stream's memo as
# corral scans an agent's lines. Builds like run.sh (Release, in
# $BENCH_BUILD or build-bench/).
#
#   OTHER_SRC=DIR OTHER_LIB=FILE   also measure another tree's scanner:
#                                  its source and its libcorral_core.a
#                                  (a Release build), on the same lines
#
# Not part of ctest: it prints figures (docs/performance.md quotes them).

set -u

SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BENCH_BUILD:-$SRC/build-bench}
B=$BUILD/bench
N=${1:-2000}

die() { echo "scan.sh: $*" >&2; exit 1; }
command -v valgrind >/dev/null || die "needs valgrind (callgrind)"

mkdir -p "$B" || die "cannot create $B"
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
	cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
	    >"$B/cmake.log" 2>&1 || die "cmake failed; see $B/cmake.log"
fi
cmake --build "$BUILD" -j2 --target corral >>"$B/cmake.log" 2>&1 ||
    die "building corral failed; see $B/cmake.log"
CFLAGS="-O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wformat=2"
cc $CFLAGS -o "$B/driver" "$SRC/tests/bench/driver.c" || die "cc driver.c failed"
cc $CFLAGS -o "$B/echo" "$SRC/agents/echo.c" || die "cc echo.c failed"
LIBS="$(pkg-config --libs libbsd-overlay jansson libfyaml libmd) -lev -lpthread -lm"

# scanlines OUT SRCDIR LIB: the line scanner against one tree's scanner.
scanlines() {
	# A tree from before the scanner's memos builds it without them.
	nomemo=
	grep -q jscan_run_memo "$2/src/corral.h" || nomemo=-DSCANLINES_NO_MEMO
	cc $CFLAGS $nomemo -I"$2/src" -I"$2/include" \
	    $(pkg-config --cflags libbsd-overlay jansson libfyaml) \
	    -o "$1" "$SRC/tests/bench/scanlines.c" "$3" $LIBS ||
	    die "cc scanlines.c against $3 failed"
}
scanlines "$B/scanlines" "$SRC" "$BUILD/libcorral_core.a"
if [ -n "${OTHER_SRC:-}" ]; then
	scanlines "$B/scanlines-other" "$OTHER_SRC" "$OTHER_LIB"
fi

# Capture: every agent's stdout and corral's stdin teed to files.
W=$(mktemp -d "${TMPDIR:-/tmp}/corral-scan.XXXXXX")
trap 'rm -rf "$W"' EXIT
cat >"$W/agent.sh" <<EOF
#!/bin/sh
"$B/echo" "\$@" | tee -a "$W/out.\$\$"
EOF
cat >"$W/serve.sh" <<EOF
#!/bin/sh
tee "$W/in" | CORRAL_NO_PIDNS=1 "$BUILD/corral" serve "$W/wf.yaml"
EOF
chmod +x "$W/agent.sh" "$W/serve.sh"
cat >"$W/wf.yaml" <<EOF
name: bench
agents:
  echo:
    cmd: [$W/agent.sh, --low, "10"]
    instances: 4
    max_inflight: 256
    heartbeat: off
  reflector:
    cmd: [$W/agent.sh, --low, "0"]
    max_inflight: 256
    heartbeat: off
routes:
  execute: echo
  reflect: reflector
limits:
  max_inflight: 4096
  max_queue: 100000
EOF
"$B/driver" -T 600 -n "$N" -- "$W/serve.sh" >"$W/driver.log" 2>&1 ||
    die "the bench run failed: $(tail -n 3 "$W/driver.log")"
cat "$W/in" "$W"/out.* >"$W/compact"
SETS=compact
if command -v python3 >/dev/null; then
	python3 -c 'import json, sys
for l in sys.stdin: print(json.dumps(json.loads(l)))' <"$W/compact" >"$W/spaced" &&
	    SETS="compact spaced"
fi
LINES=$(wc -l <"$W/compact")

# per_line SCANNER SET PATH [memo]: jscan_run_path's (or
# jscan_run_memo_path's) instructions per line.
per_line() {
	rm -f "$W/cg.out"
	valgrind --tool=callgrind --callgrind-out-file="$W/cg.out" \
	    "$1" "$W/$2" "$3" 1 ${4:-} >"$W/run.log" 2>&1 || {
		echo "  (failed: $(grep -v '^==' "$W/run.log" | tail -n 1))"
		return
	}
	grep -q -e 'this machine has none' -e 'keeps no memo' "$W/run.log" &&
	    { printf "  %6s" -; return; }
	callgrind_annotate --inclusive=yes "$W/cg.out" 2>/dev/null |
	    awk -v n="$LINES" '/jscan_run_(memo_)?path/ && !/=>/ { gsub(/,/, "", $1);
		printf "  %6.0f", $1 / n; exit }'
}

echo "instructions per line, jscan_run_path, $LINES lines of the bench (600 B envelopes)"
for p in 2 1 0; do
	case $p in 2) name=avx2 ;; 1) name=sse2 ;; 0) name=portable ;; esac
	for set in $SETS; do
		printf "%-9s %-8s" "$name" "$set"
		if [ -n "${OTHER_SRC:-}" ]; then
			printf "  other:%s  this:" "$(per_line "$B/scanlines-other" "$set" $p)"
		fi
		per_line "$B/scanlines" "$set" $p
		printf "  memo:"
		per_line "$B/scanlines" "$set" $p memo
		echo
	done
done
