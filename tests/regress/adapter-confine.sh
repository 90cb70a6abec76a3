#!/bin/sh
# Confinement with the real CLIs, offline against the fake API
# (tests/fakeapi), driven through corral serve:
#   - Claude Code with its permission prompts off
#     (--dangerously-skip-permissions) and confine: on: the fake model's
#     `touch` of a file outside its cwd fails ("Read-only file system"
#     in its mount namespace, else "Permission denied" from Landlock),
#     the same `touch` inside succeeds; the same Claude unconfined
#     writes outside (so the refusal is Landlock's, not Claude's).
#   - Codex in its own sandbox (bubblewrap), read-only (the default) and
#     workspace-write, runs `echo hi` and the reply has its output, in a
#     few seconds: bubblewrap needs /proc/PID/ns of its own pid, which
#     the pid namespace's own /proc gives (with the host's /proc it
#     failed, and Codex answered after 10 s with no output).
if [ "${1:-}" = --inner ]; then
	. "$(dirname "$0")/adapter-lib.sh"
	serve_up "$T/wf.yaml"
	feed "$(envl k1 execute "write [[tool:touch $T/outside/confined]]")"
	wait_out 1 60 || exit 1
	feed "$(envl k2 execute 'write [[tool:touch inside.txt]]')"
	wait_out 2 60 || exit 1
	feed "$(envl k3 plan "write [[tool:touch $T/outside/free]]")"
	wait_out 3 60 || exit 1
	feed "$(envl c1 analyze 'run [[tool:echo hi]]')"
	wait_out 4 60 || exit 1
	echo "read-only $(since "$FED_AT")" >"$T/times"
	feed "$(envl c2 summarize 'run [[tool:echo hi]]')"
	wait_out 5 60 || exit 1
	echo "workspace-write $(since "$FED_AT")" >>"$T/times"
	serve_down 30
	exit $RC
fi

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/adapter-lib.sh"
fa_require claude codex
# Codex keeps its sandbox's socket in /tmp/codex-daemon-UID and refuses a
# directory that is not its user's.  Run as a user other than the one
# that first ran Codex's sandbox here (or in a user namespace that maps
# that user to root, as the fake API's does), it cannot run a command.
d=/tmp/codex-daemon-0
[ "$(id -u)" = 0 ] || d="/tmp/codex-daemon-0 /tmp/codex-daemon-$(id -u)"
for d in $d; do
	[ -d "$d" ] && [ ! -O "$d" ] &&
	    skip "$d belongs to another user (uid $(stat -c %u "$d")): Codex's sandbox would refuse it"
done

mkdir -p "$T/ws" "$T/outside"
cat >"$T/wf.yaml" <<YAML
name: adapter-confine
env_allow: [ANTHROPIC_*, CLAUDE_*, DISABLE_*, IS_SANDBOX, CODEX_HOME, FAKEAPI_KEY]
agents:
  boxed:
    cmd: [claude, --dangerously-skip-permissions]
    adapter: claude
    cwd: $T/ws
    confine: on
    timeout: $((60 * SLOW))s
  free:
    cmd: [claude, --dangerously-skip-permissions]
    adapter: claude
    cwd: $T/ws
    timeout: $((60 * SLOW))s
  ro:
    cmd: [codex, -s, read-only]
    adapter: codex
    cwd: $T/ws
    timeout: $((60 * SLOW))s
  ww:
    cmd: [codex, -s, workspace-write]
    adapter: codex
    cwd: $T/ws
    timeout: $((60 * SLOW))s
routes:
  execute: boxed
  plan: free
  analyze: ro
  summarize: ww
YAML

s=$(now)
fa_run "$0" || fa_fail "the inner half failed (status $?)"
note "5 requests took $(elapsed "$s")s; codex's sandboxed echo: $(tr '\n' ' ' <"$T/times")"

grep -q "corral: confine: Landlock ABI [1-9]" "$T/err" ||
    skip "this kernel has no Landlock: $(grep confine "$T/err" | head -n 1)"
# Refused by its read-only mount namespace, else by Landlock.
if grep -q "confine: a mount namespace for each agent" "$T/err"; then
	expect_reply k1 "touch: cannot touch '$T/outside/confined': Read-only file system"
else
	expect_reply k1 "touch: cannot touch '$T/outside/confined': Permission denied"
fi
[ -e "$T/outside/confined" ] && fa_fail "the confined claude wrote outside its cwd"
expect_reply k2 '"text":"The command printed: '
[ -e "$T/ws/inside.txt" ] || fa_fail "the confined claude could not write inside its cwd"
[ -e "$T/outside/free" ] || fa_fail "the unconfined claude could not write outside (test broken?)"

expect_reply c1 '"text":"The command printed: hi"'
expect_reply c2 '"text":"The command printed: hi"'
# The output above is what matters (a sandbox that cannot start gives
# none); the time tells a sandbox that started (1.1 to 1.5 s on a loaded
# 2-core machine, three times that next to busy loops) from one that gave
# up after its 10 s wait, with room for a slow machine.
for m in read-only workspace-write; do
	t=$(sed -n "s/^$m //p" "$T/times")
	fcmp "$t" "<" $((8 * SLOW)) ||
	    fa_fail "codex -s $m took ${t}s for echo hi (its sandbox waits 10s when it cannot start)"
done
exit 0
