#!/bin/sh
# The control socket's life: where it is, its modes, and its removal.
#
# - Default: <run id>.sock in $XDG_RUNTIME_DIR/corral, a directory of
#   mode 0700 that corral makes; the socket is mode 0600; corral ps lists
#   the run and its agents.
# - It is removed when corral exits.
# - After a SIGKILL the socket stays behind, stale: the next corral
#   removes it from the directory, and one started with --control on the
#   same path replaces it.
# - A second corral on a path where one is running leaves that socket
#   alone and runs without one.
# - --no-control: no socket at all.
# - A corral that does not accept (stopped, its backlog full) is alive:
#   another corral starting next to it neither waits for it nor takes
#   its socket for stale.  (Its sweep once waited in connect() until the
#   stopped corral went on: 10 minutes here, SIGTERM notwithstanding.)
. "$(dirname "$0")/ctl-lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  echo:
    cmd: [$TA, --record, $T/rec]
routes:
  "*": echo
YAML
DIR="$XDG_RUNTIME_DIR/corral"

# The socket path a corral logged ("control socket PATH").
logged_sock() {
	sed -n 's/^corral: control socket //p' "$ERR" | tail -n 1
}

# 1. The default place, the modes, ps.
serve_start "$T/wf.yaml" -v
wait_log "control socket "
S1=$(logged_sock)
case "$S1" in
"$DIR"/*.sock) ;;
*) fail "expected the socket in $DIR, got '$S1'" ;;
esac
[ "$(stat -c %a "$DIR")" = 700 ] || fail "$DIR has mode $(stat -c %a "$DIR"), want 700"
[ -S "$S1" ] || fail "$S1 is not a socket"
[ "$(stat -c %a "$S1")" = 600 ] || fail "$S1 has mode $(stat -c %a "$S1"), want 600"
wait_sock "$S1"
run=$(basename "$S1" .sock)
"$CORRAL" ps >"$T/ps" 2>&1 || fail "corral ps failed: $(cat "$T/ps")"
grep -q "^$run .* serve .* $S1\$" "$T/ps" || fail "corral ps does not list run $run: $(cat "$T/ps")"
grep -q "^  echo  *idle " "$T/ps" || fail "corral ps does not list agent echo as idle: $(cat "$T/ps")"

# 2. Removed at exit.
serve_eof
corral_wait 10
expect_rc 0
[ ! -e "$S1" ] || fail "$S1 is still there after corral exited"
"$CORRAL" ps >"$T/ps" 2>&1
grep -q "no corral is running" "$T/ps" || fail "corral ps after the exit: $(cat "$T/ps")"

# 3. SIGKILL leaves a stale socket; the next corral sweeps it away.
serve_start "$T/wf.yaml" -v
wait_log "control socket "
S2=$(logged_sock)
wait_sock "$S2"
kill -9 "$CORRAL_PID"
wait "$CORRAL_PID" 2>/dev/null
CORRAL_PID=
expect_no_leftovers 10
[ -S "$S2" ] || fail "expected $S2 to stay behind after SIGKILL"
serve_start "$T/wf.yaml" -v
wait_log "control socket "
wait_log "control: removed the stale socket $S2"
[ ! -e "$S2" ] || fail "the stale $S2 is still there"
S3=$(logged_sock)
wait_sock "$S3"
serve_eof
corral_wait 10

# 4. An explicit path: a stale socket there is replaced.
serve_start "$T/wf.yaml" -v --control "$SOCK"
wait_sock
kill -9 "$CORRAL_PID"
wait "$CORRAL_PID" 2>/dev/null
CORRAL_PID=
expect_no_leftovers 10
[ -S "$SOCK" ] || fail "expected $SOCK to stay behind after SIGKILL"
"$CP" -s "$SOCK" -l "$(CONNECT)" -e 1 -w 1 >/dev/null 2>"$T/cp.err" &&
    fail "a stale socket accepted a connection"
grep -q "Connection refused" "$T/cp.err" || fail "stale socket: $(cat "$T/cp.err")"
serve_start "$T/wf.yaml" -v --control "$SOCK"
wait_log "control: replaced the stale socket $SOCK"
wait_sock

# 5. A second corral on the same path leaves the live socket alone.
first=$CORRAL_PID
"$CORRAL" serve "$T/wf.yaml" -v --control "$SOCK" </dev/null >"$T/out2" 2>"$T/err2"
grep -q "control: $SOCK is the socket of a running corral" "$T/err2" ||
    fail "the second corral should see the first one's socket: $(cat "$T/err2")"
grep -q "control: no control socket" "$T/err2" ||
    fail "the second corral should run without a socket: $(cat "$T/err2")"
wait_sock
"$CORRAL" ps -S "$SOCK" | grep -q "^  echo " || fail "the first corral's socket no longer answers"
serve_eof
corral_wait 10
[ ! -e "$SOCK" ] || fail "$SOCK is still there after corral exited"

# 6. --no-control.
before=$(ls "$DIR" | wc -l)
serve_start "$T/wf.yaml" -v --no-control
wait_log "agent echo: spawned"
log_has "control socket" && fail "--no-control made a socket: $(grep 'control socket' "$ERR")"
[ "$(ls "$DIR" | wc -l)" = "$before" ] || fail "--no-control left something in $DIR: $(ls "$DIR")"
serve_eof
corral_wait 10

# 7. A corral that does not accept: stopped, its backlog full (ctlpeer
# waits in connect() for a place in it).
serve_start "$T/wf.yaml" -v
wait_log "control socket "
S7=$(logged_sock)
wait_sock "$S7"
sup=$(supervisor_pid)
kill -STOP "$sup"
"$CP" -s "$S7" -n 300 -c >/dev/null 2>&1 &
filler=$!
# Full: ctlpeer waits in connect(), or ss shows more pending than the
# backlog (Recv-Q over Send-Q of the listening socket).
backlog_full() {
	grep -q unix_wait_for_peer "/proc/$filler/wchan" 2>/dev/null ||
	    ss -xlH 2>/dev/null | S="$S7" awk 'index($0, ENVIRON["S"]) && $3 > $4 { f = 1 } END { exit !f }'
}
wait_for backlog_full 10 ||
    { kill -CONT "$sup"; fail "the stopped corral's backlog did not fill: $(cat "/proc/$filler/wchan" 2>/dev/null)"; }
"$CORRAL" run "$T/wf.yaml" --goal go -v </dev/null >"$T/out7" 2>"$T/err7" &
other=$!
wait_for '! pid_alive $other' 10 ||
    { kill -CONT "$sup"; fail "a corral next to a stopped one did not start and end: $(cat "$T/err7")"; }
wait "$other" || { kill -CONT "$sup"; fail "the other corral failed: $(cat "$T/err7")"; }
grep -qF "removed the stale socket $S7" "$T/err7" &&
    { kill -CONT "$sup"; fail "the other corral took the stopped one's socket for stale"; }
[ -S "$S7" ] || { kill -CONT "$sup"; fail "the stopped corral's socket $S7 is gone"; }
kill -CONT "$sup"
wait "$filler"
wait_sock "$S7"
serve_eof
corral_wait 10
expect_rc 0
expect_no_leftovers
exit 0
