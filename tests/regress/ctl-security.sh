#!/bin/sh
# Only corral's own user (or root) may use its control socket.
#
# Another uid cannot even reach the socket (mode 0600 in a 0700
# directory); and one that gets past the file modes (CAP_DAC_OVERRIDE,
# kept across setuid by ctlpeer -u) is refused by corral's SO_PEERCRED
# check: a 1003 PERMISSION_DENIED error line, then the connection closes,
# and corral logs who it refused.  Needs root to act as another user.
. "$(dirname "$0")/ctl-lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root to connect as another user"
cat >"$T/wf.yaml" <<YAML
agents:
  echo:
    cmd: [$TA, --record, $T/rec]
routes:
  "*": echo
YAML
serve_start "$T/wf.yaml" -v --control "$SOCK"
wait_sock

# Past the file modes: refused by corral itself.
"$CP" -s "$SOCK" -u 65534 -l "$(CONNECT)" -e 2 -w $((5 * SLOW)) >"$T/other" 2>"$T/other.err"
rc=$?
[ "$rc" = 2 ] && skip "cannot become uid 65534 with CAP_DAC_OVERRIDE here: $(cat "$T/other.err")"
grep -q '"error":{"code":1003,' "$T/other" ||
    fail "uid 65534 should get error 1003: $(cat "$T/other" "$T/other.err")"
grep -q '"category":"auth"' "$T/other" || fail "1003 should be in category auth: $(cat "$T/other")"
grep -q '"result"' "$T/other" && fail "uid 65534 got an answer: $(cat "$T/other")"
grep -q "1 lines" "$T/other.err" || fail "uid 65534 should get exactly one line, then EOF: $(cat "$T/other.err")"
wait_log "control: refused a connection from uid 65534"

# Without the capability it does not get that far.
"$CP" -s "$SOCK" -u 65534 -U -l "$(CONNECT)" -e 1 -w 2 >/dev/null 2>"$T/nocap.err"
[ $? = 3 ] || fail "uid 65534 without CAP_DAC_OVERRIDE should not connect: $(cat "$T/nocap.err")"
grep -q "Permission denied" "$T/nocap.err" || fail "expected EACCES: $(cat "$T/nocap.err")"

# Our own uid is served, and the socket still works after the refusals.
"$CP" -s "$SOCK" -l "$(CONNECT)" -l '{"jsonrpc":"2.0","id":2,"method":"map/agents/list"}' \
    -e 2 -w $((5 * SLOW)) >"$T/own" 2>&1 || fail "our own uid: $(cat "$T/own")"
grep -q '"id":2,"result":{"agents":\[{"id":"echo"' "$T/own" || fail "our own uid: $(cat "$T/own")"
serve_eof
corral_wait 10
expect_rc 0
exit 0
