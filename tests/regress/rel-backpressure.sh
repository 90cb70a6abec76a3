#!/bin/sh
# Backpressure (chan.c XON/XOFF) keeps corral's memory bounded when a
# consumer is slow:
#   1. an agent that reads its stdin slowly (5 MB/s): corral serve does
#      not read its own stdin far ahead of what the agent took (it waits
#      for the agent's queue to drain to its low watermark), every request
#      is answered, and the peak RSS stays small
#   2. a slow reader of corral serve's stdout, with valid envelopes: RSS
#      stays small while stdout is blocked, everything is answered
#   3. a slow reader of corral serve's stdout, with 200,000 invalid lines
#      (600 KB): their error results must not pile up without bound
#      either (RSS under 64 MB while stdout is blocked)
#   4. a slow reader of corral serve's stdout, with envelopes of 1.5 MB
#      that an agent echoes back (read in place, their buffers queued
#      for stdout as they are): every one comes back whole, once
# RSS limits are not checked under the sanitizers.
. "$(dirname "$0")/rel-lib.sh"

problems=
cat >"$T/slow.yaml" <<YAML
agents:
  slow:
    cmd: [$RA, --read-rate, "5000000", --record, $T/rec]
routes:
  "*": slow
YAML
cat >"$T/fast.yaml" <<YAML
agents:
  fast:
    cmd: [$RA]
routes:
  "*": fast
YAML
cat >"$T/echo.yaml" <<YAML
agents:
  echo:
    cmd: [$AGENTS/echo, --low, "0"]
    max_line: 4MiB
routes:
  "*": echo
YAML

# stdin_pos PID: how far PID has read its stdin (a file), or "".
stdin_pos() {
	sed -n 's/^pos:[[:space:]]*//p' "/proc/$1/fdinfo/0" 2>/dev/null
}

# 1. A slow agent: 100 requests of 100 KB (10 MB) at 5 MB/s.  While it
# runs, corral may be ahead of what the agent has taken by its queue
# (1 MiB), one read (256 KiB) and the pipe, never by most of its input.
"$RG" env 100 --id s- --size 102400 >"$T/in1"
total=$(wc -c <"$T/in1")
: >"$OUT"
: >"$ERR"
"$CORRAL" serve "$T/slow.yaml" -v <"$T/in1" >"$OUT" 2>"$ERR" &
CORRAL_PID=$!
sup=$(sup_pid)
hwm_start "$sup"
ahead=0 samples=0 first=
n=$((60 * SLOW * 10))
while pid_alive "$sup" && [ $n -gt 0 ]; do
	# The position first: the agent's count read after it can only be
	# larger, so a late count errs towards passing.
	pos=$(stdin_pos "$sup")
	got=$(grep -c '^req ' "$T/rec" 2>/dev/null || true)
	if [ -n "$pos" ]; then
		samples=$((samples + 1))
		a=$((pos - ${got:-0} * 102400))
		[ $a -gt $ahead ] && ahead=$a
		: "${first:=$pos bytes read, ${got:-0} requests taken}"
	fi
	sleep 0.1
	n=$((n - 1))
done
corral_wait 30
expect_rc 0
hwm=$(hwm_read)
note "1: corral read at most $ahead bytes ahead of the agent ($samples samples; first: $first); peak RSS ${hwm} kB"
[ "$(wc -l <"$OUT")" -eq 100 ] || fail "1: expected 100 results, got $(wc -l <"$OUT")"
[ "$(grep -c '"text":"ok slow"' "$OUT")" -eq 100 ] || fail "1: not every request was answered by the agent"
[ "$samples" -gt 0 ] || fail "1: could not read corral's stdin position while it ran"
[ "$ahead" -le 4194304 ] ||
    fail "1: corral read $ahead bytes of its stdin ($total in all) ahead of an agent that reads 5 MB/s: no backpressure"
if [ "$SAN" = 0 ] && [ "$hwm" -ge 40960 ]; then
	fail "1: corral's peak RSS was ${hwm} kB (limit 40 MB) with a slow agent"
fi

# slow_stdout INPUT [WORKFLOW]: run corral serve (on fast.yaml) with a
# stdout nobody reads until it has stopped reading its stdin (0.6 s
# without progress: its stdout is full), note its RSS then, and let a
# reader drain it.  Sets rss.
slow_stdout() {
	rm -f "$T/out.fifo" "$T/drain"
	: >"$OUT"
	mkfifo "$T/out.fifo"
	(exec 0<"$T/out.fifo"
	 while [ ! -e "$T/drain" ]; do sleep 0.05; done
	 exec cat) >"$OUT" &
	reader=$!
	: >"$ERR"
	"$CORRAL" serve "${2:-$T/fast.yaml}" -v <"$1" >"$T/out.fifo" 2>"$ERR" &
	CORRAL_PID=$!
	sup=$(sup_pid)
	wait_for '[ "$(stdin_pos "$sup")" -gt 0 ] 2>/dev/null' 10 ||
	    fail "corral did not read its stdin"
	wait_steady 12 30 stdin_pos "$sup" ||
	    fail "corral kept reading its stdin for 30s (x$SLOW) with nobody reading its stdout"
	rss=$(rss_of "$sup")
	note "stdout blocked: corral stopped reading at byte $STEADY of $(wc -c <"$1")"
	: >"$T/drain"
	corral_wait 60
	expect_rc 0
	wait "$reader"
}

# 2. Valid envelopes, stdout blocked.
"$RG" env 20000 --id v- --size 2000 >"$T/in2"
slow_stdout "$T/in2"
note "2: 20000 valid envelopes, stdout blocked: RSS ${rss} kB"
[ "$(wc -l <"$OUT")" -eq 20000 ] || fail "2: expected 20000 results, got $(wc -l <"$OUT")"
if [ "$SAN" = 0 ] && [ "$rss" -ge 40960 ]; then
	problems="$problems
  2: corral's RSS was ${rss} kB while its stdout was blocked (limit 40 MB)"
fi

# 3. Invalid lines, stdout blocked.
"$RG" flood 200000 >"$T/in3"
slow_stdout "$T/in3"
note "3: 200000 invalid lines, stdout blocked: RSS ${rss} kB"
[ "$(wc -l <"$OUT")" -eq 200000 ] || fail "3: expected 200000 results, got $(wc -l <"$OUT")"
if [ "$SAN" = 0 ] && [ "$rss" -ge 65536 ]; then
	problems="$problems
  3: corral's RSS was ${rss} kB while its stdout was blocked and it read
     200000 invalid lines (600 KB) (limit 64 MB): the error results for
     bad input lines are queued without pausing stdin (engine_notice
     writes them to stdout without chan_block)"
fi

# 4. Envelopes of 1.5 MB echoed back, stdout blocked: each result holds
# its input's text (trace.parents names the input), whole.
"$RG" env 16 --id b- --size 1500000 >"$T/in4"
slow_stdout "$T/in4" "$T/echo.yaml"
note "4: 16 envelopes of 1.5 MB echoed, stdout blocked: RSS ${rss} kB"
[ "$(wc -l <"$OUT")" -eq 16 ] || fail "4: expected 16 results, got $(wc -l <"$OUT")"
# "b-K LENGTH" for each input and for each result (the input its
# trace.parents names, the length of its text): the same sixteen lines.
awk '{ t = $0; sub(/.*"text":"/, "", t); sub(/".*/, "", t)
       i = $0; sub(/.*"id":"/, "", i); sub(/".*/, "", i)
       print i, length(t) }' "$T/in4" | sort >"$T/want4"
awk '{ t = $0; sub(/.*"text":"/, "", t); sub(/".*/, "", t)
       i = $0; sub(/.*"parents":\["/, "", i); sub(/".*/, "", i)
       print i, length(t) }' "$OUT" | sort >"$T/got4"
cmp -s "$T/want4" "$T/got4" ||
    fail "4: the results' texts differ from the inputs' (id, length): $(diff "$T/want4" "$T/got4" | head -5)"
[ -z "$problems" ] || fail "$problems"
expect_no_leftovers
exit 0
