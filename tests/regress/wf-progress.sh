#!/bin/sh
# corral run's progress view on stderr.
#   - On a terminal (a pseudo-terminal from script(1)) the view's header
#     (workflow name, steps, in flight, queued) and one line per agent
#     are drawn, and erased before corral exits: nothing is drawn after
#     the last erase.  The result still goes to stdout alone.
#   - Not a terminal, no -v: no progress output at all.
#   - Not a terminal, -v, a run of more than 2 s: "progress:" summary lines.
# The agent answers when the script has seen what it looks for (a file it
# waits for), so no part depends on how long the agent takes.
. "$(dirname "$0")/lib.sh"
. "$TESTDIR/tools/wflib.sh"

ESC=$(printf '\033')
# a answers once $T/release exists: the script decides how long the run
# lasts, after it has seen what it waits for.
cat >"$T/wf.yaml" <<YAML
name: progtest
agents:
  a:
    cmd: [$WA, --wait-file, $T/release, --intent, finalize]
    timeout: $((30 * SLOW))s	# held until the script releases it
  b:
    cmd: [$WA]
routes:
  "*": a
YAML

# 1. Not a terminal, no -v: silence on stderr.
: >"$T/release"
corral_run 20 run "$T/wf.yaml" --goal go
expect_rc 0
[ -s "$ERR" ] && fail "no terminal, no -v: expected nothing on stderr, got: $(cat -v "$ERR" | head -n 5)"
grep -q "plan by a" "$OUT" || fail "expected a's result on stdout: $(cat "$OUT")"

# 2. Not a terminal, -v, a run longer than 2 s (a answers after the first
# summary line): summary lines.
cat >"$T/long.yaml" <<YAML
name: progtest
agents:
  a:
    cmd: [$WA, --wait-file, $T/release2, --intent, finalize]
    timeout: $((30 * SLOW))s	# held until the script releases it
routes:
  "*": a
YAML
corral_start run "$T/long.yaml" --goal go -v
wait_for 'grep -q "^corral: progress: " "$ERR"' 10 ||
    fail "-v, no terminal, a run of more than 2 s: expected a 'corral: progress:' line every 2 s, got none"
: >"$T/release2"
corral_wait 20
expect_rc 0
grep -q '^corral: progress: [0-9.]*s, steps 0, in flight 1, queued 0, agents 1,' "$ERR" ||
    fail "unexpected progress line: $(grep -m1 'progress:' "$ERR")"
grep -q "$ESC" "$ERR" && fail "-v, no terminal: escape sequences on stderr: $(grep -m1 "$ESC" "$ERR" | cat -v)"

# 3. On a terminal; a answers once the view has been drawn.
command -v script >/dev/null 2>&1 || skip "script(1) (util-linux) is missing"
TS="$T/typescript"
rm -f "$T/release"
script -qfec "'$CORRAL' run '$T/wf.yaml' --goal go >'$T/result'" "$TS" \
    </dev/null >/dev/null 2>&1 &
spid=$!
drawn() {
	grep -aq 'corral progtest  [0-9.]*s  steps 0  in flight 1  queued 0  tokens 0  cost \$0.0000' "$TS" &&
	    grep -aq '^  a  *BUSY  *1 out' "$TS" && grep -aq '^  b  *READY  *0 out' "$TS"
}
wait_for 'drawn || ! pid_alive $spid' 10
: >"$T/release"
wait_for '! pid_alive $spid' 20 || fail "terminal: corral run under script(1) still runs"
wait $spid
rc=$?
grep -q 'COMMAND=' "$TS" 2>/dev/null || skip "script(1) could not run corral on a pseudo-terminal (status $rc)"
[ "$rc" = 0 ] || fail "corral run on a terminal exited $rc: $(cat -v "$TS" | head -n 10)"
grep -q "plan by a" "$T/result" || fail "terminal: expected the result on stdout: $(cat "$T/result")"
grep -q "in flight" "$T/result" && fail "terminal: the progress view leaked into stdout"
grep -aq 'corral progtest  [0-9.]*s  steps 0  in flight 1  queued 0  tokens 0  cost \$0.0000' "$TS" ||
    fail "terminal: expected the view's header line on stderr: $(cat -v "$TS" | head -n 10)"
grep -aq '^  a  *BUSY  *1 out' "$TS" || fail "terminal: expected agent a's line (BUSY, 1 out): $(cat -v "$TS" | head -n 10)"
grep -aq '^  b  *READY  *0 out' "$TS" || fail "terminal: expected agent b's line (READY, 0 out): $(cat -v "$TS" | head -n 10)"
# Erased: cursor up over the header and both agent lines, clear to the end
# of the screen, after the last drawing.
last_draw=$(grep -abo 'in flight' "$TS" | tail -n 1 | cut -d: -f1)
last_erase=$(grep -abo "${ESC}\[3A${ESC}\[J" "$TS" | tail -n 1 | cut -d: -f1)
[ -n "$last_erase" ] || fail "terminal: the view (3 lines) was never erased: $(cat -v "$TS" | tail -n 5)"
[ "$last_erase" -gt "$last_draw" ] ||
    fail "terminal: the view was drawn again after its last erase (draw at byte $last_draw, erase at $last_erase)"
after=$(tail -c +"$((last_erase + 1))" "$TS" | sed '/^Script done/d' | tr -d '\r\n' | sed "s/${ESC}\[3A${ESC}\[J//")
[ -z "$after" ] || fail "terminal: output after the view was erased: $(printf '%s' "$after" | cat -v | head -c 200)"
exit 0
