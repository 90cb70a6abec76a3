#!/bin/sh
# corral's benchmark suite: corral serve against raw newline relays.
#
#   sh tests/bench/run.sh [--quick] [--only LIST] [--runs N] [--png]
#                         [--profile] [--codecs]
#
#   --quick     fewer messages and runs (about 3 minutes)
#   --only 1,3  run only these scenarios:
#               1 throughput, 600 B envelopes, audit log off and on,
#                 corral's defaults, the two raw relays
#               2 big envelopes (64 KiB, 1 MiB), MB/s
#               3 latency at a fixed 5,000 msg/s
#               4 spawn rate
#               5 memory per idle agent, 5,000 live agents
#               6 scaling: agents 1..256, sizes 600 B..16 MiB, memory
#               7 a tree: 100 agents over 10 levels of sub-agents
#               8 the audit log's --log-sync (never, 1000 ms, 10 ms,
#                 always) with the log on a disk ($BENCH_DISKDIR, default
#                 $TMPDIR or /tmp): throughput, and latency at 5,000 msg/s
#   --runs N    runs per measurement (default 5, --quick 3); tables show
#               the median
#   --png       write docs/perf-*.png from scenario 6 (a full run does)
#   --profile   profile corral serve's hot path with callgrind instead
#   --codecs    instructions per envelope (callgrind) through one echo
#               agent that speaks multiagent-1.0, the bus, AgentMessage
#
# Builds corral (cmake, Release) in $BENCH_BUILD (default build-bench)
# and the bench programs and agents/echo with cc -O2 into
# $BENCH_BUILD/bench.  Prints the tables and keeps them, with the raw
# key=value lines of every run, in tests/bench/results/.  Every envelope
# must come back exactly once and every relay must exit 0, else the row
# says FAILED.  Not part of ctest.  See tests/bench/README.md.

set -u

SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BENCH_BUILD:-$SRC/build-bench}
B=$BUILD/bench
RES=$SRC/tests/bench/results
QUICK=0
ONLY="1 2 3 4 5 6 7 8"
RUNS=
PNG=0
PROFILE=0
CODECS=0

while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--only) ONLY=$(echo "$2" | tr ',' ' '); shift ;;
	--runs) RUNS=$2; shift ;;
	--png) PNG=1 ;;
	--profile) PROFILE=1 ;;
	--codecs) CODECS=1 ;;
	-h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
if [ -z "$RUNS" ]; then
	if [ $QUICK = 1 ]; then RUNS=3; else RUNS=5; fi
fi
if [ $QUICK = 0 ] && [ "$ONLY" = "1 2 3 4 5 6 7 8" ]; then PNG=1; fi

# Sizes of the measurements (--quick: smaller).
if [ $QUICK = 1 ]; then
	N_SMALL=150000; N_LOG=100000; BYTES_BIG=400000000; LAT_SECS=2
	SPAWN_N=100; MEM_POINTS="1 1000 5000"; SCALE_RUNS=1
	SCALE_AGENTS="1 4 16 64 256"; SCALE_SIZES="600 65536 1048576 16777216"
	SCALE_N=100000; SCALE_BYTES=300000000; MEM_CURVE=""
else
	N_SMALL=500000; N_LOG=300000; BYTES_BIG=1500000000; LAT_SECS=4
	SPAWN_N=200; MEM_POINTS="1 1000 5000 max"; SCALE_RUNS=3
	SCALE_AGENTS="1 2 4 8 16 32 64 128 256"
	SCALE_SIZES="600 4096 65536 1048576 4194304 16777216"
	SCALE_N=200000; SCALE_BYTES=1000000000; MEM_CURVE="10 100 500 2000"
fi

die() { echo "run.sh: $*" >&2; exit 1; }

# ---------------------------------------------------------------- build
build() {
	mkdir -p "$B" || die "cannot create $B"
	if [ ! -f "$BUILD/CMakeCache.txt" ]; then
		cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
		    >"$B/cmake.log" 2>&1 || die "cmake failed; see $B/cmake.log"
	fi
	cmake --build "$BUILD" -j2 --target corral >>"$B/cmake.log" 2>&1 ||
	    die "building corral failed; see $B/cmake.log"
	CFLAGS="-O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wformat=2"
	for p in driver relay lean spawnbench logwrite; do
		cc $CFLAGS -o "$B/$p" "$SRC/tests/bench/$p.c" ||
		    die "cc $p.c failed"
	done
	cc $CFLAGS -o "$B/echo" "$SRC/agents/echo.c" || die "cc echo.c failed"
}
build
CORRAL=${CORRAL:-$BUILD/corral}
ECHO=$B/echo
[ -x "$CORRAL" ] || die "no corral at $CORRAL"

# corral serve reads lines of at most 1 MiB on stdin unless it has an
# option to raise that; bigger envelopes are reported as blocked.
SERVE_OPTS=${CORRAL_SERVE_OPTS:-}
if [ -z "$SERVE_OPTS" ] && "$CORRAL" --help 2>&1 | grep -q -- '--max-line'; then
	SERVE_OPTS="--max-line 64MiB"
fi
if [ -n "$SERVE_OPTS" ]; then SERVE_MAX=67108864; else SERVE_MAX=1048576; fi

ulimit -n "$(ulimit -H -n)" 2>/dev/null
# Other work on a shared machine adds noise to both sides alike; as root,
# run at a higher priority than ordinary jobs (BENCH_NICE=0 to keep it).
NICE=${BENCH_NICE:--5}
if [ "$NICE" != 0 ] && [ "$(id -u)" = 0 ]; then
	renice -n "$NICE" -p $$ >/dev/null 2>&1 || NICE=0
else
	NICE=0
fi
NOFILE=$(ulimit -n)

W=$(mktemp -d "${TMPDIR:-/tmp}/corral-bench.XXXXXX") || die "mktemp"
# The audit log runs write gigabytes: on a disk, their writeback would
# slow the scenarios that follow, so they go to tmpfs when there is one.
LOGDIR=${BENCH_LOGDIR:-/dev/shm}
[ -d "$LOGDIR" ] && [ -w "$LOGDIR" ] || LOGDIR=$W
LOGDIR=$(mktemp -d "$LOGDIR/corral-bench-log.XXXXXX") || die "mktemp"
trap 'rm -rf "$W" "$LOGDIR"' EXIT
trap 'exit 130' INT TERM
mkdir -p "$RES"
if [ $QUICK = 1 ]; then KIND=quick; else KIND=full; fi
[ "$ONLY" = "1 2 3 4 5 6 7 8" ] || KIND=$KIND-only-$(echo $ONLY | tr ' ' -)
[ $PROFILE = 1 ] && KIND=profile
[ $CODECS = 1 ] && KIND=codecs
OUT=$RES/$KIND.txt
RAW=$RES/raw-$KIND.log
: >"$OUT"
: >"$RAW"

say() { printf '%s\n' "$*" | tee -a "$OUT"; }
row() { printf "$@" | tee -a "$OUT"; }

# ------------------------------------------------------------ workflows
# wf FILE NEXEC [INSTANCES_ONLY]: NEXEC echo agents serving execute and
# one reflect agent, pipelined, no heartbeat.
wf() {
	cat >"$1" <<EOF
name: bench
agents:
  echo:
    cmd: [$ECHO, --low, "10"]
    instances: $2
    max_inflight: 256
    max_line: 64MiB
    heartbeat: off
  reflector:
    cmd: [$ECHO, --low, "0"]
    max_inflight: 256
    max_line: 64MiB
    heartbeat: off
routes:
  execute: echo
  reflect: reflector
limits:
  max_inflight: 4096
  max_queue: 100000
EOF
}

# wf_default FILE NEXEC: the same agents and routes with corral's
# defaults: no max_inflight, no limits.
wf_default() {
	cat >"$1" <<EOF
name: bench-defaults
agents:
  echo:
    cmd: [$ECHO, --low, "10"]
    instances: $2
    max_line: 64MiB
    heartbeat: off
  reflector:
    cmd: [$ECHO, --low, "0"]
    max_line: 64MiB
    heartbeat: off
routes:
  execute: echo
  reflect: reflector
EOF
}

# wf_tree FILE: 100 echo agents serving execute, over 10 levels: 10
# workflow agents (depth 0), each the root of a chain of 9 visible
# sub-agents it and its descendants spawn (echo --spawn), kept after
# their task; and the reflect agent.
wf_tree() {
	cat >"$1" <<EOF
name: bench-tree
agents:
  root:
    cmd: [$ECHO, --low, "10", --spawn, "9"]
    instances: 10
    max_inflight: 256
    max_line: 64MiB
    heartbeat: off
    children: {max: 1, depth: 10}
  node:
    cmd: [$ECHO, --low, "10"]
    autostart: false
    max_inflight: 256
    max_line: 64MiB
    heartbeat: off
    children: {max: 1, depth: 10}
  reflector:
    cmd: [$ECHO, --low, "0"]
    max_inflight: 256
    max_line: 64MiB
    heartbeat: off
routes:
  execute: [root, node]
  reflect: reflector
limits:
  max_inflight: 4096
  max_queue: 100000
  tree_depth: 10
EOF
}
# The tree is built within a second here; the driver waits this long
# before its first envelope.
TREE_WAIT=${BENCH_TREE_WAIT:-3}

# wf_idle FILE N [handshake]: N idle echo agents, nothing else.
wf_idle() {
	shutdown=
	if [ "${3:-}" = handshake ]; then
		cmd="[$ECHO, --handshake]"; ready="    ready: handshake"
	else
		cmd="[$ECHO]"; ready=""
		[ "${3:-}" = sequential ] && shutdown="shutdown: sequential"
	fi
	cat >"$1" <<EOF
name: idle
$shutdown
agents:
  echo:
    cmd: $cmd
    instances: $2
    heartbeat: off
$ready
routes:
  execute: echo
limits:
  max_agents: $(($2 + 10))
EOF
}

# -------------------------------------------------------------- helpers
# once KEY CMD...: run CMD once unless KEY already failed, appending its
# key=value line to $W/KEY and to the raw log.  Scenarios interleave the
# systems they compare (raw, corral, raw, corral ...) so that a change in
# the machine's load hits both alike.
once() {
	key=$1; shift
	[ -f "$W/$key" ] || : >"$W/$key"
	grep -q FAILED "$W/$key" && return
	line=$("$@" 2>>"$W/stderr.log" | tail -n 1)
	[ -n "$line" ] || line='status=FAILED reason="no output"'
	echo "$line" >>"$W/$key"
	echo "$key $line" >>"$RAW"
}

# fresh KEY...: forget earlier runs of these keys.
fresh() {
	for k; do : >"$W/$k"; done
}

# measure KEY RUNS CMD...: run CMD RUNS times.
measure() {
	key=$1; runs=$2; shift 2
	fresh "$key"
	i=0
	while [ $i -lt "$runs" ]; do once "$key" "$@"; i=$((i + 1)); done
}

# med KEY FIELD: the median of FIELD over KEY's runs, or FAILED.
med() {
	awk -v f="$2" '
	    $1 != "status=ok" { bad = 1; next }
	    { for (i = 1; i <= NF; i++) { split($i, kv, "=");
	      if (kv[1] == f) v[n++] = kv[2] + 0 } }
	    END {
		if (bad || n == 0) { print "FAILED"; exit }
		for (i = 0; i < n; i++) for (j = i + 1; j < n; j++)
			if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
		m = (n % 2) ? v[int(n / 2)] : (v[n / 2 - 1] + v[n / 2]) / 2
		print m
	    }' "$W/$1"
}

# why KEY: the reason of KEY's failed run.
why() {
	grep -v '^status=ok' "$W/$1" | head -n 1 | sed 's/^status=FAILED //'
}

# ratio A B FIELD: the median over runs i of A_i / B_i (runs are
# interleaved, so run i of each saw the same background), or FAILED.
ratio() {
	awk -v f="$3" '
	    FNR == 1 { file++ }
	    $1 != "status=ok" { bad = 1; next }
	    { for (i = 1; i <= NF; i++) { split($i, kv, "=");
	      if (kv[1] == f) v[file, FNR] = kv[2] + 0 } }
	    END {
		if (bad) { print "FAILED"; exit }
		for (r = 1; (1, r) in v && (2, r) in v; r++)
			if (v[2, r] > 0) q[n++] = v[1, r] / v[2, r]
		if (n == 0) { print "FAILED"; exit }
		for (i = 0; i < n; i++) for (j = i + 1; j < n; j++)
			if (q[j] < q[i]) { t = q[i]; q[i] = q[j]; q[j] = t }
		print (n % 2) ? q[int(n / 2)] : (q[n / 2 - 1] + q[n / 2]) / 2
	    }' "$W/$1" "$W/$2"
}

# pair A B FIELD: ratio as a percentage ("47%"), or "-".
pair() {
	r=$(ratio "$@")
	case $r in FAILED) echo "-" ;; *) awk -v r="$r" 'BEGIN { printf "%.0f%%", 100 * r }' ;; esac
}

# verdict NAME VALUE OP LIMIT: MET or MISSED, and by how much.
verdict() {
	case "$2" in *FAILED*|-) say "  target $1: FAILED (no measurement)"; return ;; esac
	awk -v n="$1" -v v="$2" -v op="$3" -v l="$4" 'BEGIN {
		ok = (op == ">=") ? (v >= l) : (v <= l)
		printf "  target %s: %s (%s, target %s %s)\n", n,
		    ok ? "MET" : "MISSED", v, op, l }' | tee -a "$OUT"
	echo "$1|$2|$3|$4" >>"$W/targets"
}

# fmt V [DECIMALS]: a number, or FAILED.
fmt() {
	case "$1" in FAILED) echo FAILED; return ;; esac
	awk -v v="$1" -v d="${2:-0}" 'BEGIN { printf "%.*f", d, v }'
}

# window SIZE: envelopes kept outstanding, about 64 MiB in flight.
window() {
	awk -v s="$1" 'BEGIN { w = int(67108864 / s); if (w > 1024) w = 1024;
	    if (w < 8) w = 8; print w }'
}

# count BYTES SIZE: how many envelopes make about BYTES.
count() {
	awk -v b="$1" -v s="$2" 'BEGIN { n = int(b / s); if (n < 32) n = 32;
	    print n }'
}

drive() { "$B/driver" -T 60 "$@"; }
serve() { echo "$CORRAL" serve "$1" $SERVE_OPTS; }

# ----------------------------------------------------------------- header
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
REV=$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$SRC" status --porcelain -- src 2>/dev/null)" ]; then
	REV="$REV+uncommitted src changes"
fi
say "corral benchmark suite ($([ $QUICK = 1 ] && echo quick || echo full), median of $RUNS runs)"
say "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
say "machine: $(nproc) cores, $CPU, Linux $(uname -r), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
say "corral:  $("$CORRAL" --version 2>/dev/null) at $REV; Release build; serve options: ${SERVE_OPTS:-none}"
BUSY=$(ps -eo pcpu=,comm= --sort=-pcpu | awk '$1 >= 20 { printf "%s%s %.0f%%", sep, $2, $1; sep = ", " }')
say "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)${BUSY:+; busy before the run: $BUSY}; bench at nice $NICE"
say "audit:   --log files in $(dirname "$LOGDIR") ($(df -P "$LOGDIR" | awk 'NR == 2 { print $1 }'))"
say "relay:   driver -> relay -> 4 echo agents (execute) -> reflect agent on every 10th reply -> driver"
say ""

# ---------------------------------------------------------------- profile
if [ $PROFILE = 1 ]; then
	command -v valgrind >/dev/null || die "valgrind is not installed"
	wf "$W/wf.yaml" 4
	say "== profile: callgrind, corral serve (supervisor only), 40,000 envelopes of 600 B"
	"$B/driver" -T 600 -n 40000 -- env CORRAL_NO_PIDNS=1 valgrind \
	    --tool=callgrind --callgrind-out-file="$W/cg.out" \
	    "$CORRAL" serve "$W/wf.yaml" 2>>"$W/stderr.log" | tee -a "$OUT"
	# "1,234 (12.34%)  file:function [object]" -> "12.34%  function (file)"
	top() {
		callgrind_annotate --inclusive=$1 "$W/cg.out" 2>/dev/null |
		    grep -E '^ *[0-9,]+ +\( *[0-9.]+%\) ' |
		    grep -v -e 'PROGRAM TOTALS' -e '(below main)' -e '???:0x0' -e __libc_start |
		    awk '{ if ($2 ~ /%\)$/) { pct = $2; fn = $3 } else { pct = $2 $3; fn = $4 }
			sub(/^\(/, "", pct); sub(/\)$/, "", pct)
			file = fn; sub(/:[^:]*$/, "", file); sub(/^.*:/, "", fn)
			sub(/^.*\//, "", file)
			printf "  %7s  %s%s\n", pct, fn, file == "???" ? "" : " (libc " file ")" }' |
		    head -n $2
	}
	# instructions per envelope, N envelopes
	per_msg() {
		callgrind_annotate "$W/cg.out" 2>/dev/null |
		    awk -v n="$1" '/PROGRAM TOTALS/ { gsub(/,/, "", $1);
			printf "  %.0f instructions per envelope\n", $1 / n; exit }'
	}
	say "-- self cost (instructions), top 20"
	per_msg 40100 | tee -a "$OUT"
	top no 20 | tee -a "$OUT"
	say "-- inclusive cost, top 30"
	top yes 30 | tee -a "$OUT"
	cp "$W/cg.out" "$RES/callgrind.out"
	say "-- with the audit log on (--log): self cost, top 15"
	rm -f "$W/cg.out"
	"$B/driver" -T 600 -n 40000 -- env CORRAL_NO_PIDNS=1 valgrind \
	    --tool=callgrind --callgrind-out-file="$W/cg.out" \
	    "$CORRAL" serve "$W/wf.yaml" --log "$LOGDIR/audit.log" 2>>"$W/stderr.log" |
	    tee -a "$OUT"
	per_msg 40100 | tee -a "$OUT"
	top no 15 | tee -a "$OUT"
	cp "$W/cg.out" "$RES/callgrind-log.out"
	say "-- a tree of 100 agents over 10 levels (scenario 7): self cost, top 15"
	wf_tree "$W/tree.yaml"
	rm -f "$W/cg.out"
	"$B/driver" -D $((TREE_WAIT * 3)) -T 600 -n 40000 -- env CORRAL_NO_PIDNS=1 \
	    valgrind --tool=callgrind --callgrind-out-file="$W/cg.out" \
	    "$CORRAL" serve "$W/tree.yaml" 2>>"$W/stderr.log" | tee -a "$OUT"
	per_msg 40100 | tee -a "$OUT"
	top no 15 | tee -a "$OUT"
	cp "$W/cg.out" "$RES/callgrind-tree.out"
	say "(callgrind output kept in tests/bench/results/callgrind.out, callgrind-log.out and callgrind-tree.out)"
	exit 0
fi

# ---------------------------------------------------------------- codecs
# What a message costs corral when its agent speaks another dialect: one
# echo agent per run, 10,000 envelopes of 600 B, callgrind on corral serve.
if [ $CODECS = 1 ]; then
	command -v valgrind >/dev/null || die "valgrind is not installed"
	command -v python3 >/dev/null || die "python3 is not installed"
	say "== codecs: callgrind, corral serve (supervisor only), 10,000 envelopes of 600 B, one echo agent"
	row "%-16s %14s %14s\n" "dialect" "instr/envelope" "vs envelope"
	base=
	for d in multiagent-1.0 bus agentmessage; do
		case $d in
		multiagent-1.0) cmd="[$ECHO]" ;;
		*) cmd="[python3, $SRC/tests/bench/dialect-echo.py, --$d]" ;;
		esac
		cat >"$W/wf-$d.yaml" <<EOF
name: codecs
agents:
  echo:
    cmd: $cmd
    protocol: $d
    max_inflight: 256
    heartbeat: off
routes:
  execute: echo
EOF
		rm -f "$W/cg.out"
		"$B/driver" -T 600 -n 10000 -- env CORRAL_NO_PIDNS=1 valgrind \
		    --tool=callgrind --callgrind-out-file="$W/cg.out" \
		    "$CORRAL" serve "$W/wf-$d.yaml" 2>>"$W/stderr.log" >>"$RAW"
		n=$(callgrind_annotate "$W/cg.out" 2>/dev/null | awk \
		    '/PROGRAM TOTALS/ { gsub(/,/, "", $1); printf "%.0f", $1 / 10000; exit }')
		[ -n "$n" ] || n=FAILED
		[ -z "$base" ] && base=$n
		row "%-16s %14s %14s\n" "$d" "$n" "$(awk -v a="$n" -v b="$base" \
		    'BEGIN { if (b > 0 && a > 0) printf "%.1fx", a / b; else print "-" }')"
	done
	exit 0
fi

# ------------------------------------------------ 1. throughput, 600 B
s1() {
	wf "$W/wf.yaml" 4
	wf_default "$W/def.yaml" 4
	say "== 1. throughput: 600 B envelopes, $N_SMALL per run (audit log: $N_LOG), window 1024"
	say "   raw relay: tests/bench/relay.c; lean relay: tests/bench/lean.c; corral serve: max_inflight 256;"
	say "   (defaults): the same agents without max_inflight or limits"
	fresh raw1 lean1 cor1 def1 log1
	i=0
	while [ $i -lt $RUNS ]; do
		once raw1 drive -n $N_SMALL -- "$B/relay" 4 "$ECHO"
		once lean1 drive -n $N_SMALL -- "$B/lean" 4 "$ECHO"
		once cor1 drive -n $N_SMALL -- $(serve "$W/wf.yaml")
		once def1 drive -n $N_SMALL -- $(serve "$W/def.yaml")
		once log1 drive -n $N_LOG -- $(serve "$W/wf.yaml") --log "$LOGDIR/audit.log"
		rm -f "$LOGDIR/audit.log"
		i=$((i + 1))
	done
	row "%-24s %10s %8s %7s %8s %18s %9s\n" relay msgs/s MB/s "vs raw" "vs lean" "CPU us/msg (sys)" reflected
	for k in raw1:"raw relay" lean1:"lean relay" cor1:"corral serve" \
	    def1:"corral serve (defaults)" log1:"corral serve --log"; do
		key=${k%%:*}; name=${k#*:}
		v=$(med $key msgs_per_s)
		if [ "$v" = FAILED ]; then
			row "%-24s FAILED %s\n" "$name" "$(why $key)"; continue
		fi
		row "%-24s %10s %8s %7s %8s %18s %8s%%\n" "$name" "$(fmt "$v")" \
		    "$(fmt "$(med $key mb_per_s)" 1)" "$(pair $key raw1 msgs_per_s)" \
		    "$(fmt "$(ratio $key lean1 msgs_per_s)" 2)" \
		    "$(fmt "$(med $key cpu_us_per_msg)" 2) ($(fmt "$(med $key sys_us_per_msg)" 2))" \
		    "$(fmt "$(awk -v r="$(med $key reflected)" 'BEGIN { print 100 * r }')" 1)"
	done
	verdict "throughput, audit log off, % of raw" "$(pair cor1 raw1 msgs_per_s | tr -d %)" ">=" 70
	verdict "throughput, audit log on, % of raw" "$(pair log1 raw1 msgs_per_s | tr -d %)" ">=" 50
	verdict "throughput, audit log off, x lean relay" "$(fmt "$(ratio cor1 lean1 msgs_per_s)" 2)" ">=" 0.60
	verdict "defaults, x tuned (max_inflight 256)" "$(fmt "$(ratio def1 cor1 msgs_per_s)" 2)" ">=" 0.90
	verdict "CPU us per envelope, audit log off" "$(fmt "$(med cor1 cpu_us_per_msg)" 2)" "<=" 0.9
	verdict "CPU us per envelope, audit log on" "$(fmt "$(med log1 cpu_us_per_msg)" 2)" "<=" 1.5
	say ""
}

# ------------------------------------------------ 2. big envelopes
s2() {
	wf "$W/wf.yaml" 4
	say "== 2. big envelopes: about $((BYTES_BIG / 1000000)) MB per run, MB/s of requests"
	row "%-10s %-22s %8s %10s %7s %12s\n" size relay n MB/s "vs raw" "CPU us/msg"
	for size in 65536 1048576; do
		n=$(count $BYTES_BIG $size); w=$(window $size)
		fresh raw2 cor2
		i=0
		while [ $i -lt $RUNS ]; do
			once raw2 drive -n $n -s $size -w $w -W 8 -- "$B/relay" 4 "$ECHO"
			once cor2 drive -n $n -s $size -w $w -W 8 -- $(serve "$W/wf.yaml")
			i=$((i + 1))
		done
		for k in raw2:"raw relay" cor2:"corral serve"; do
			key=${k%%:*}; name=${k#*:}
			v=$(med $key mb_per_s)
			if [ "$v" = FAILED ]; then
				row "%-10s %-22s FAILED %s\n" $size "$name" "$(why $key)"
				continue
			fi
			row "%-10s %-22s %8s %10s %7s %12s\n" $size "$name" $n \
			    "$(fmt "$v" 1)" "$(pair $key raw2 mb_per_s)" \
			    "$(fmt "$(med $key cpu_us_per_msg)" 1)"
		done
		verdict "MB/s at $size B, % of raw" "$(pair cor2 raw2 mb_per_s | tr -d %)" ">=" 50
	done
	say ""
}

# ------------------------------------------------ 3. latency
s3() {
	wf "$W/wf.yaml" 4
	n=$((5000 * LAT_SECS))
	say "== 3. latency at a fixed 5,000 msg/s, 600 B, ${LAT_SECS}s ($n envelopes) per run, from the scheduled send time"
	fresh raw3 cor3 log3
	i=0
	while [ $i -lt $RUNS ]; do
		once raw3 drive -n $n -r 5000 -w 100000 -- "$B/relay" 4 "$ECHO"
		once cor3 drive -n $n -r 5000 -w 100000 -- $(serve "$W/wf.yaml")
		once log3 drive -n $n -r 5000 -w 100000 -- $(serve "$W/wf.yaml") --log "$LOGDIR/audit.log"
		rm -f "$LOGDIR/audit.log"
		i=$((i + 1))
	done
	row "%-22s %9s %9s %9s %11s\n" relay "p50 us" "p99 us" "max us" "p99 vs raw"
	for k in raw3:"raw relay" cor3:"corral serve" log3:"corral serve --log"; do
		key=${k%%:*}; name=${k#*:}
		v=$(med $key p99_us)
		if [ "$v" = FAILED ]; then
			row "%-22s FAILED %s\n" "$name" "$(why $key)"; continue
		fi
		row "%-22s %9s %9s %9s %10sx\n" "$name" "$(fmt "$(med $key p50_us)" 0)" \
		    "$(fmt "$v" 0)" "$(fmt "$(med $key max_us)" 0)" \
		    "$(fmt "$(ratio $key raw3 p99_us)" 2)"
	done
	verdict "p99 at 5,000 msg/s, x raw" "$(fmt "$(ratio cor3 raw3 p99_us)" 2)" "<=" 1.5
	verdict "p99 at 5,000 msg/s, audit log on, x raw" "$(fmt "$(ratio log3 raw3 p99_us)" 2)" "<=" 1.2
	say ""
}

# ------------------------------------------------ 8. --log-sync
# The log goes to a disk here, not tmpfs: on tmpfs a sync costs nothing.
s8() {
	wf "$W/wf.yaml" 4
	disk=${BENCH_DISKDIR:-${TMPDIR:-/tmp}}
	dlog=$(mktemp "$disk/corral-bench-sync.XXXXXX") || die "mktemp"
	say "== 8. --log-sync: 600 B envelopes, log on $(df -P "$disk" | awk 'NR == 2 { print $1 }') ($disk); throughput ($N_LOG per run, window 1024), and latency at 5,000 msg/s (${LAT_SECS}s)"
	modes="never 1000 10 always"
	n=$((5000 * LAT_SECS))
	for m in $modes; do fresh "t8$m" "l8$m"; done
	i=0
	while [ $i -lt $RUNS ]; do
		for m in $modes; do
			rm -f "$dlog"
			once "t8$m" drive -n $N_LOG -- $(serve "$W/wf.yaml") --log "$dlog" --log-sync $m
			rm -f "$dlog"
			once "l8$m" drive -n $n -r 5000 -w 100000 -- $(serve "$W/wf.yaml") --log "$dlog" --log-sync $m
		done
		i=$((i + 1))
	done
	rm -f "$dlog"
	row "%-16s %10s %10s %9s %9s %9s\n" "--log-sync" msgs/s "vs never" "p50 us" "p99 us" "max us"
	for m in $modes; do
		v=$(med "t8$m" msgs_per_s)
		if [ "$v" = FAILED ]; then
			row "%-16s FAILED %s\n" "$m" "$(why "t8$m")"; continue
		fi
		row "%-16s %10s %10s %9s %9s %9s\n" "$m" "$(fmt "$v")" \
		    "$(pair "t8$m" t8never msgs_per_s)" \
		    "$(fmt "$(med "l8$m" p50_us)" 0)" "$(fmt "$(med "l8$m" p99_us)" 0)" \
		    "$(fmt "$(med "l8$m" max_us)" 0)"
	done
	say ""
}

# ------------------------------------------------ 4. spawn rate
s4() {
	wf_idle "$W/idle.yaml" $SPAWN_N
	wf_idle "$W/hs.yaml" $SPAWN_N handshake
	wf_idle "$W/seq.yaml" $SPAWN_N sequential
	say "== 4. spawn rate: $SPAWN_N echo agents started (pipes on 0, 1, 2), ready, then stopped; median of $((2 * RUNS + 1))"
	fresh sp_raw sp_cor sp_hs sp_seq
	i=0
	while [ $i -lt $((2 * RUNS + 1)) ]; do
		once sp_raw "$B/spawnbench" posix $SPAWN_N "$ECHO"
		once sp_cor "$B/spawnbench" corral $SPAWN_N "$CORRAL" -v serve "$W/idle.yaml"
		once sp_hs "$B/spawnbench" corral $SPAWN_N "$CORRAL" -v serve "$W/hs.yaml"
		once sp_seq "$B/spawnbench" corral $SPAWN_N "$CORRAL" -v serve "$W/seq.yaml"
		i=$((i + 1))
	done
	row "%-34s %9s %9s %9s %9s %7s\n" "" "start s" "stop s" "total s" "agents/s" "vs raw"
	for k in sp_raw:"posix_spawn loop (spawn + wait)" sp_cor:"corral, ready: spawn" \
	    sp_hs:"corral, ready: handshake" \
	    sp_seq:"corral, shutdown: sequential"; do
		key=${k%%:*}; name=${k#*:}
		v=$(med $key rate)
		if [ "$v" = FAILED ]; then
			row "%-34s FAILED %s\n" "$name" "$(why $key)"; continue
		fi
		row "%-34s %9s %9s %9s %9s %7s\n" "$name" "$(fmt "$(med $key ready_s)" 3)" \
		    "$(fmt "$(med $key stop_s)" 3)" "$(fmt "$(med $key total_s)" 3)" \
		    "$(fmt "$v")" "$(pair $key sp_raw rate)"
	done
	# The posix loop stops its children all at once, and so does corral's
	# default; shutdown: sequential stops them one by one.  Both are
	# reported.
	verdict "spawn rate, % of posix_spawn loop (default stop)" "$(pair sp_cor sp_raw rate | tr -d %)" ">=" 80
	verdict "spawn rate, % of posix_spawn loop (shutdown: sequential)" "$(pair sp_seq sp_raw rate | tr -d %)" ">=" 80
	say ""
}

# ------------------------------------------------ 5. memory
# mem_point N RUNS: corral's RSS, start and stop time with N idle agents
# into mem_N, and the bare posix_spawn loop's times into px_N, interleaved.
mem_point() {
	wf_idle "$W/mem.yaml" $1
	fresh mem_$1 px_$1
	i=0
	while [ $i -lt $2 ]; do
		once mem_$1 "$B/spawnbench" corral $1 "$CORRAL" -v serve "$W/mem.yaml"
		once px_$1 "$B/spawnbench" posix $1 "$ECHO"
		i=$((i + 1))
	done
}
s5() {
	max=$(( (NOFILE - 100) / 3 ))
	[ $max -gt 10000 ] && max=10000
	say "== 5. memory: corral supervisor VmRSS with N idle agents (fd limit $NOFILE: at most $max agents);"
	say "   start/stop: corral to all READY and to exit; posix: the bare posix_spawn loop, run right after"
	mem_point 1 "$RUNS"
	base=$(med mem_1 rss_kb)
	row "%-8s %10s %14s %10s %10s %12s %12s\n" agents "RSS KiB" "KiB per agent" \
	    "start s" "stop s" "posix start" "posix stop"
	for n in $MEM_POINTS; do
		[ "$n" = max ] && n=$max
		if [ "$n" -gt 1 ]; then
			# 5,000 agents: 3 runs, whose median the start and
			# stop verdicts take (one run's stop varied 0.40-0.67 s);
			# more agents: one run, the figure is RSS alone.
			r=$RUNS; [ "$n" -eq 5000 ] && [ "$r" -gt 3 ] && r=3
			[ "$n" -gt 5000 ] && r=1
			mem_point $n $r
		fi
		v=$(med mem_$n rss_kb)
		if [ "$v" = FAILED ]; then
			row "%-8s FAILED %s\n" $n "$(why mem_$n)"; continue
		fi
		per=$(awk -v v="$v" -v b="$base" -v n="$n" 'BEGIN {
		    if (n >= 100) printf "%.2f", (v - b) / (n - 1); else print "-" }')
		row "%-8s %10s %14s %10s %10s %12s %12s\n" $n "$(fmt "$v")" "$per" \
		    "$(fmt "$(med mem_$n ready_s)" 2)" "$(fmt "$(med mem_$n stop_s)" 2)" \
		    "$(fmt "$(med px_$n ready_s)" 2)" "$(fmt "$(med px_$n stop_s)" 2)"
		[ "$n" = 1000 ] && per1000=$per
		[ "$n" = 5000 ] && ok5000=ok
	done
	verdict "KiB of corral RSS per idle agent (1,000 agents)" "${per1000:-FAILED}" "<=" 1
	if [ "${ok5000:-}" = ok ]; then
		verdict "start 5,000 agents, x the posix_spawn loop" \
		    "$(fmt "$(ratio mem_5000 px_5000 ready_s)" 2)" "<=" 1.1
		verdict "stop 5,000 agents, x the posix_spawn loop" \
		    "$(fmt "$(ratio mem_5000 px_5000 stop_s)" 2)" "<=" 2
		# Linear in N: 5 times the agents, at most 6 times the time.
		verdict "stop: 5,000 agents over 1,000, x (linear: 5)" \
		    "$(fmt "$(awk -v a="$(med mem_5000 stop_s)" \
		    -v b="$(med mem_1000 stop_s)" 'BEGIN { if (b > 0)
		    print a / b; else print "FAILED" }')" 1)" "<=" 6
	fi
	if [ "${ok5000:-}" = ok ]; then
		say "  target 5,000 live agents: MET (all ready and stopped cleanly)"
		echo "5,000 live agents|ok|=|ok" >>"$W/targets"
	else
		say "  target 5,000 live agents: MISSED or not run"
		echo "5,000 live agents|FAILED|=|ok" >>"$W/targets"
	fi
	say ""
}

# ------------------------------------------------ 6. scaling
s6() {
	say "== 6a. scaling: throughput (600 B) vs number of execute agents, $SCALE_N per run, median of $SCALE_RUNS"
	row "%-8s %12s %12s %7s\n" agents "raw msgs/s" "corral" "vs raw"
	: >"$W/agents.dat"
	for a in $SCALE_AGENTS; do
		wf "$W/wf.yaml" $a
		fresh sa_raw sa_cor
		i=0
		while [ $i -lt $SCALE_RUNS ]; do
			once sa_raw drive -n $SCALE_N -- "$B/relay" $a "$ECHO"
			once sa_cor drive -n $SCALE_N -- $(serve "$W/wf.yaml")
			i=$((i + 1))
		done
		r=$(med sa_raw msgs_per_s); c=$(med sa_cor msgs_per_s)
		row "%-8s %12s %12s %7s\n" $a "$(fmt "$r")" "$(fmt "$c")" "$(pair sa_cor sa_raw msgs_per_s)"
		echo "$a $(echo "$r" | sed 's/FAILED/?/') $(echo "$c" | sed 's/FAILED/?/')" >>"$W/agents.dat"
	done
	say ""

	say "== 6b. scaling: MB/s vs envelope size, 4 execute agents, about $((SCALE_BYTES / 1000000)) MB per run"
	row "%-10s %8s %12s %12s %7s\n" size n "raw MB/s" "corral" "vs raw"
	: >"$W/sizes.dat"
	wf "$W/wf.yaml" 4
	for size in $SCALE_SIZES; do
		n=$(count $SCALE_BYTES $size); w=$(window $size)
		[ $n -gt $SCALE_N ] && n=$SCALE_N
		fresh ss_raw ss_cor
		i=0
		while [ $i -lt $SCALE_RUNS ]; do
			once ss_raw drive -n $n -s $size -w $w -W 8 -- "$B/relay" 4 "$ECHO"
			[ $size -le $SERVE_MAX ] &&
			    once ss_cor drive -n $n -s $size -w $w -W 8 -- $(serve "$W/wf.yaml")
			i=$((i + 1))
		done
		r=$(med ss_raw mb_per_s)
		if [ $size -gt $SERVE_MAX ]; then c=blocked; else c=$(med ss_cor mb_per_s); fi
		row "%-10s %8s %12s %12s %7s\n" $size $n "$(fmt "$r" 1)" \
		    "$(case $c in blocked) echo "blocked*" ;; *) fmt "$c" 1 ;; esac)" \
		    "$(case $c in blocked) echo - ;; *) pair ss_cor ss_raw mb_per_s ;; esac)"
		echo "$size $(echo "$r" | sed 's/FAILED/?/') $(echo "$c" | sed 's/FAILED/?/; s/blocked/?/')" >>"$W/sizes.dat"
	done
	if [ $SERVE_MAX -lt 16777216 ]; then
		say "  * blocked: corral serve takes stdin lines of at most 1 MiB and has no option to raise it"
	fi
	say ""

	say "== 6c. scaling: corral RSS, start and stop time vs idle agents (posix: the bare posix_spawn loop)"
	row "%-8s %10s %14s %10s %10s %12s %12s\n" agents "RSS KiB" "KiB per agent" \
	    "start s" "stop s" "posix start" "posix stop"
	: >"$W/memory.dat"
	[ -s "$W/mem_1" ] || mem_point 1 "$RUNS"
	base=$(med mem_1 rss_kb)
	pts=$(for n in 1 $MEM_CURVE $MEM_POINTS; do
		[ "$n" = max ] && n=$(( (NOFILE - 100) / 3 ))
		[ "$n" -gt 10000 ] && n=10000
		echo $n; done | sort -n -u)
	for n in $pts; do
		[ -s "$W/mem_$n" ] || mem_point $n 1
		v=$(med mem_$n rss_kb)
		per=$(awk -v v="$v" -v b="$base" -v n="$n" 'BEGIN {
		    if (n >= 100 && v + 0 > 0) printf "%.2f", (v - b) / (n - 1); else print "-" }')
		row "%-8s %10s %14s %10s %10s %12s %12s\n" $n "$(fmt "$v")" "$per" \
		    "$(fmt "$(med mem_$n ready_s)" 2)" "$(fmt "$(med mem_$n stop_s)" 2)" \
		    "$(fmt "$(med px_$n ready_s)" 2)" "$(fmt "$(med px_$n stop_s)" 2)"
		echo "$n $(for x in "mem_$n rss_kb" "mem_$n ready_s" "mem_$n stop_s" \
		    "px_$n ready_s" "px_$n stop_s"; do med $x; done |
		    sed 's/FAILED/?/' | tr '\n' ' ')" >>"$W/memory.dat"
	done
	say ""
	cp "$W/agents.dat" "$W/sizes.dat" "$W/memory.dat" "$RES/"
	if [ $PNG = 1 ]; then
		plots
	fi
}

# ------------------------------------------------ 7. a tree of agents
s7() {
	wf "$W/wf.yaml" 4
	wf_tree "$W/tree.yaml"
	say "== 7. a tree: 100 agents serving execute over 10 levels of sub-agents (10 workflow"
	say "   agents, each heading a chain of 9 visible sub-agents), 600 B, $N_SMALL per run; beside it"
	say "   scenario 1's corral (4 agents) and the raw relay with 100 agents"
	fresh raw7 cor7 tree7
	i=0
	while [ $i -lt $RUNS ]; do
		once raw7 drive -n $N_SMALL -- "$B/relay" 100 "$ECHO"
		once cor7 drive -n $N_SMALL -- $(serve "$W/wf.yaml")
		once tree7 drive -D $TREE_WAIT -n $N_SMALL -- $(serve "$W/tree.yaml")
		i=$((i + 1))
	done
	row "%-30s %10s %8s %18s\n" relay msgs/s "vs raw" "CPU us/msg (sys)"
	for k in raw7:"raw relay, 100 agents" cor7:"corral serve, 4 agents" \
	    tree7:"corral serve, tree of 100"; do
		key=${k%%:*}; name=${k#*:}
		v=$(med $key msgs_per_s)
		if [ "$v" = FAILED ]; then
			row "%-30s FAILED %s\n" "$name" "$(why $key)"; continue
		fi
		row "%-30s %10s %8s %18s\n" "$name" "$(fmt "$v")" \
		    "$(pair $key raw7 msgs_per_s)" \
		    "$(fmt "$(med $key cpu_us_per_msg)" 2) ($(fmt "$(med $key sys_us_per_msg)" 2))"
	done
	say "  corral's CPU per envelope, tree of 100 / 4 agents: $(fmt "$(ratio tree7 cor7 cpu_us_per_msg)" 2)x"
	say ""
}

# Draw docs/perf-*.png from the scaling data.
plots() {
	if ! command -v gnuplot >/dev/null; then
		# The bench's one package more than the build's (as root or
		# through sudo, as tests/setup.sh installs the rest).
		(. "$SRC/tests/setup.sh" &&
		    CORRAL_EXTRA_PACKAGES=gnuplot-nox corral_setup_packages) \
		    >/dev/null 2>&1
	fi
	if ! command -v gnuplot >/dev/null; then
		say "(gnuplot not installed: apt-get install -y gnuplot-nox; no PNGs)"
		return
	fi
	gnuplot <<EOF 2>>"$W/stderr.log"
set terminal pngcairo size 800,480 font ",10" noenhanced
set datafile missing "?"
set grid
set key top right
set output "$SRC/docs/perf-agents.png"
set title "Throughput vs execute agents (600 B envelopes, 2 cores)"
set xlabel "execute agents"
set ylabel "messages/s"
set logscale x 2
set format y "%.0s%c"
plot "$W/agents.dat" using 1:2 with linespoints title "raw relay", \
     "" using 1:3 with linespoints title "corral serve"
set output "$SRC/docs/perf-sizes.png"
set title "Throughput vs envelope size (4 execute agents)"
set xlabel "envelope bytes"
set ylabel "MB/s of requests"
set logscale x 2
set format x "%.0b%B"
set format y "%.0f"
plot "$W/sizes.dat" using 1:2 with linespoints title "raw relay", \
     "" using 1:3 with linespoints title "corral serve"
set output "$SRC/docs/perf-memory.png"
set title "corral supervisor RSS vs idle agents"
set xlabel "agents"
set ylabel "RSS (MiB)"
unset logscale x
set format x "%.0f"
set format y "%.1f"
plot "$W/memory.dat" using 1:(\$2/1024) with linespoints title "VmRSS"
set output "$SRC/docs/perf-spawn.png"
set title "Time to start N idle agents (all READY) and to stop them"
set ylabel "seconds"
set key top left
plot "$W/memory.dat" using 1:3 with linespoints title "corral start", \
     "" using 1:4 with linespoints title "corral stop", \
     "" using 1:5 with linespoints dashtype 2 title "posix_spawn loop start", \
     "" using 1:6 with linespoints dashtype 2 title "posix_spawn loop stop"
EOF
	say "(wrote docs/perf-agents.png, docs/perf-sizes.png, docs/perf-memory.png, docs/perf-spawn.png)"
}

T0=$(date +%s)
for s in $ONLY; do
	case $s in
	1) s1 ;; 2) s2 ;; 3) s3 ;; 4) s4 ;; 5) s5 ;; 6) s6 ;; 7) s7 ;; 8) s8 ;;
	*) die "no scenario $s" ;;
	esac
done

if [ -s "$W/targets" ]; then
	say "== targets"
	awk -F'|' '{
		if ($2 == "ok") ok = 1; else if ($2 == "FAILED" || $2 == "") ok = 0;
		else ok = ($3 == ">=") ? ($2 + 0 >= $4 + 0) : ($2 + 0 <= $4 + 0)
		printf "  %-50s %-7s %s %s %s\n", $1, ok ? "MET" : "MISSED", $2, $3, $4
	}' "$W/targets" | tee -a "$OUT"
fi
say ""
say "took $(( $(date +%s) - T0 ))s; tables in ${OUT#$SRC/}, every run in ${RAW#$SRC/}"
if [ -s "$W/stderr.log" ]; then
	cp "$W/stderr.log" "$RES/stderr.log"
fi
