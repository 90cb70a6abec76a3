#!/bin/sh
# corral host, the far end of a launched agent, driven directly (no
# launcher, no root needed):
#
#   - it relays the agent's stdin and stdout; corral's keepalive lines
#     (0x1e) never reach the agent; its own lines on stderr are hello
#     first and bye last, and a line of the agent's stderr that looks like
#     one of them is neutralized; it exits as the agent did
#   - the agent's variables, limits and directory apply
#   - the link lost (no byte from corral while stdin stays open; nobody
#     reading its output) ends the agent and what it detached, in its pid
#     namespace and without one (-n: the subreaper's sweep)
#   - EOF on stdin is a stop: SIGTERM after -g, SIGKILL after -t
. "$(dirname "$0")/lib.sh"

MARK=$(printf '\036')
export MARK
HOST="$CORRAL host"

# 1. The relay, the keepalives, hello and bye, the status.
printf 'a\n\036\nb\n\036x\n' | $HOST -- sh -c 'cat; echo "${MARK}hello {}" >&2;
    echo oops >&2; exit 3' >"$T/o1" 2>"$T/e1"
rc=$?
[ $rc = 3 ] || fail "corral host should exit 3 as the agent did, not $rc"
[ "$(cat "$T/o1")" = "a
b" ] || fail "the agent should get a and b only, got: $(cat -v "$T/o1")"
head -n 1 "$T/e1" | grep -q "^${MARK}hello {\"v\":1,\"host\":\"[^\"]*\",\"pid\":[0-9]*,\"pidns\":\(true\|false\)" ||
    fail "hello should come first: $(cat -v "$T/e1")"
tail -n 1 "$T/e1" | grep -qx "${MARK}bye {\"code\":3}" ||
    fail "bye should come last: $(cat -v "$T/e1")"
[ "$(grep -c "^$MARK" "$T/e1")" = 2 ] ||
    fail "only corral host's own lines may begin with 0x1e: $(cat -v "$T/e1")"
grep -qx "oops" "$T/e1" || fail "the agent's stderr should pass: $(cat -v "$T/e1")"

# A signal: bye names it, the status is 128 + its number.
$HOST -- sh -c 'kill -SEGV $$' </dev/null >/dev/null 2>"$T/e2"
rc=$?
[ $rc = 139 ] || fail "killed by SEGV: exit 139, not $rc"
grep -q "^${MARK}bye {\"signal\":\"SEGV\",\"signo\":11," "$T/e2" ||
    fail "bye should name SEGV: $(cat -v "$T/e2")"

# 2. Variables, limits, directory.
out=$($HOST -e FOO=bar -l nofile=64 -C / -- sh -c 'echo "$FOO $(ulimit -n) $(pwd)"' \
    </dev/null 2>"$T/e3")
[ "$out" = "bar 64 /" ] || fail "env, limits and cwd: got '$out': $(cat -v "$T/e3")"
$HOST -l nosuch=1 -- true </dev/null >/dev/null 2>"$T/e4" &&
    fail "an unknown limit should be refused"
grep -q "expected NAME=NUMBER" "$T/e4" || fail "the refusal should say why: $(cat "$T/e4")"

# 3. The link lost: stdin stays open, nothing comes.  The agent ignores
# SIGTERM and detaches a grandchild; both go.
for mode in pidns nopidns; do
	flag=
	[ $mode = nopidns ] && flag=-n
	rm -f "$T/in"
	mkfifo "$T/in"
	exec 9<>"$T/in"
	: >"$T/gc"
	$HOST $flag -a 0.2 -x $((2 * SLOW)) -t 1 -- sh -c "setsid tail -f $T/gc & trap '' TERM;
	    echo \$\$ >$T/agent.$mode; tail -f $T/gc" <"$T/in" >/dev/null \
	    2>"$T/e5" &
	hp=$!
	wait_for '[ -s "$T/agent.$mode" ] && [ "$(marker_procs | awk '\''$3 == "tail"'\'' | grep -c .)" = 2 ]' 10 ||
	    fail "$mode: the agent did not start: $(cat -v "$T/e5")"
	# A safety net, not a window: the silence, SIGKILL after -t, room.
	wait_for '! pid_alive $hp' $((10 + 2 * SLOW)) ||
	    fail "$mode: corral host should end after $((2 * SLOW))s of silence"
	wait "$hp"
	rc=$?
	[ $rc = 137 ] || fail "$mode: the agent ignores SIGTERM, so SIGKILL: 137, not $rc"
	wait_for '[ -z "$(marker_procs | awk '\''$3 == "tail"'\'')" ]' 5 ||
	    fail "$mode: left running: $(marker_procs)"
	exec 9>&-
done

# Nobody reads its output: the same.
rm -f "$T/agent.read"
(
	$HOST -x 100 -t 1 -- sh -c "echo \$\$ >$T/agent.read; trap '' TERM;
	    while :; do echo x; sleep 0.1; done; : $T" 2>/dev/null
	echo $? >"$T/rc.read"
) | head -n 1 >/dev/null
wait_for '[ -s "$T/rc.read" ]' 10 || fail "corral host should end when its reader is gone"
[ "$(cat "$T/rc.read")" = 137 ] ||
    fail "the agent ignores SIGTERM, so SIGKILL: 137, not $(cat "$T/rc.read")"

# 4. EOF on stdin: SIGTERM after the grace, SIGKILL after the timeout.
s=$(now)
$HOST -g 0.5 -t 0.5 -- sh -c "trap 'echo TERM >&2' TERM; sleep 100 & wait; wait; : $T" \
    </dev/null >/dev/null 2>"$T/e6"
rc=$?
grep -qx TERM "$T/e6" || fail "the agent should get SIGTERM: $(cat -v "$T/e6")"
fcmp "$(elapsed "$s")" ">=" 0.5 || fail "SIGTERM came before the grace"
expect_no_leftovers 5
