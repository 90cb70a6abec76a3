#!/bin/sh
# What an agent process looks like from inside (/proc/self of a sh agent,
# which corral execs directly):
#   - limits: {nofile: 64, core: 0, cpu: 30s, as: 1GiB} in /proc/self/limits
#     (soft = hard), and core dumps off (0) by default even when corral
#     itself may dump core
#   - NoNewPrivs: 1, Umask: 0077, SigBlk and SigIgn all zero (empty
#     signal mask, SIGPIPE and every other signal at its default)
#   - its own session and process group (pid = pgrp = session)
#   - the environment allowlist (a secret in corral's environment stays
#     out; only the documented variables get in)
#   - user: nobody when corral runs as root: uid/gid 65534, no capability
#     left (SKIPPED as a part when not root)
# The agent is a sh script so that RLIMIT_AS does not meet a sanitizer's
# address-space reservations; it reads /proc/self with builtins only.
. "$(dirname "$0")/rel-lib.sh"

mkdir "$T/h" "$T/d"
cat >"$T/agent.sh" <<'SH'
#!/bin/sh
# Dump /proc/self into $1, then answer.  Only builtins until the dumps
# are read: a shell blocks signals around fork and wait.
d=$1
copy() {
	while IFS= read -r l; do printf '%s\n' "$l"; done
}
exec 6</proc/self/environ	# the environment corral exec'ed us with
copy </proc/self/status >"$d/status.tmp"
copy </proc/self/limits >"$d/limits.tmp"
copy </proc/self/stat >"$d/stat.tmp"
tr '\0' '\n' <&6 >"$d/env.tmp"
exec 6<&-
for f in status limits stat env; do mv "$d/$f.tmp" "$d/$f"; done
while IFS= read -r line; do
	case "$line" in
	*'"jsonrpc"'*|*'"kind":"'*) continue ;;
	esac
	printf '{"protocol":"multiagent-1.0","role":"agent","intent":"finalize","task":"t","content":{"type":"text","text":"hygiene"},"confidence":{"score":0.9}}\n'
done
SH
chmod 755 "$T/agent.sh"
user=
if [ "$(id -u)" = 0 ]; then
	# nobody must reach the script and write its dump.
	chmod 755 "$T"
	chmod 777 "$T/h"
	user="    user: nobody"
fi

cat >"$T/wf.yaml" <<YAML
agents:
  h:
    cmd: [$T/agent.sh, $T/h]
    limits: {nofile: 64, core: 0, cpu: 30s, as: 1GiB}
$user
  d:
    cmd: [$T/agent.sh, $T/d]
routes:
  "*": h
YAML

export SECRET_TOKEN=hunter2
# corral itself may dump core: the agents' core limit comes from the
# workflow (0 by default), not from corral's.
ulimit -c unlimited 2>/dev/null || note "cannot raise the core limit here"
serve_start "$T/wf.yaml" -v
wait_for '[ -s "$T/h/env" ] && [ -s "$T/d/env" ]' 10 ||
    fail "the agents did not dump /proc/self (h: $(ls "$T/h"), d: $(ls "$T/d"))"
serve_eof
corral_wait 20
expect_rc 0

# field NAME FILE: the value of "NAME:" in a /proc status file.
field() {
	sed -n "s/^$1:[[:space:]]*//p" "$2"
}
# limit NAME FILE: "soft hard" of a /proc/self/limits row.
limit() {
	grep "^$1 " "$2" | sed "s/^$1 *//" | awk '{ print $1, $2 }'
}

for a in h d; do
	st="$T/$a/status"
	[ "$(field NoNewPrivs "$st")" = 1 ] ||
	    fail "agent $a: expected NoNewPrivs 1, got '$(field NoNewPrivs "$st")'"
	[ "$(field Umask "$st")" = 0077 ] ||
	    fail "agent $a: expected Umask 0077, got '$(field Umask "$st")'"
	[ "$(field SigBlk "$st")" = 0000000000000000 ] ||
	    fail "agent $a: expected an empty signal mask, SigBlk is $(field SigBlk "$st")"
	[ "$(field SigIgn "$st")" = 0000000000000000 ] ||
	    fail "agent $a: expected no ignored signal (SIGPIPE default), SigIgn is $(field SigIgn "$st")"
	# pid, pgrp and session from /proc/self/stat (after the "(comm)").
	set -- $(sed 's/^\([0-9]*\) (.*) [A-Za-z] \([0-9]*\) \([0-9]*\) \([0-9]*\) .*/\1 \2 \3 \4/' "$T/$a/stat")
	[ "$1" = "$3" ] && [ "$1" = "$4" ] ||
	    fail "agent $a: expected its own session and group, pid $1 ppid $2 pgrp $3 session $4"
	grep -q '^SECRET_TOKEN=' "$T/$a/env" && fail "agent $a: SECRET_TOKEN reached it"
	extra=$(sed 's/=.*//' "$T/$a/env" | grep -Ev '^(PATH|HOME|USER|LOGNAME|LANG|LANGUAGE|LC_.*|TZ|TERM|TMPDIR|SHELL|CORRAL_AGENT_ID|CORRAL_AGENT_NAME|CORRAL_RUN_ID|CORRAL_PROTOCOL|CORRAL_CONTROL|CORRAL_AGENT_TOKEN|PYTHONPATH)$' | tr '\n' ' ')
	[ -z "$extra" ] || fail "agent $a: variables outside the allowlist: $extra"
	[ "$(limit 'Max core file size' "$T/$a/limits")" = "0 0" ] ||
	    fail "agent $a: expected core 0 0, got '$(limit 'Max core file size' "$T/$a/limits")'"
done

lim="$T/h/limits"
[ "$(limit 'Max open files' "$lim")" = "64 64" ] ||
    fail "expected Max open files 64 64, got '$(limit 'Max open files' "$lim")'"
[ "$(limit 'Max cpu time' "$lim")" = "30 30" ] ||
    fail "expected Max cpu time 30 30, got '$(limit 'Max cpu time' "$lim")'"
[ "$(limit 'Max address space' "$lim")" = "1073741824 1073741824" ] ||
    fail "expected Max address space 1073741824 1073741824, got '$(limit 'Max address space' "$lim")'"
# d has no limits: its open-files limit is corral's, not 64.
[ "$(limit 'Max open files' "$T/d/limits")" != "64 64" ] ||
    fail "agent d got h's nofile limit"

if [ -n "$user" ]; then
	st="$T/h/status"
	[ "$(field Uid "$st")" = "65534	65534	65534	65534" ] ||
	    fail "user: nobody: expected Uid 65534 x4, got '$(field Uid "$st")'"
	[ "$(field Gid "$st")" = "65534	65534	65534	65534" ] ||
	    fail "user: nobody: expected Gid 65534 x4, got '$(field Gid "$st")'"
	field Groups "$st" | grep -qw 0 && fail "user: nobody: still in group 0: $(field Groups "$st")"
	for c in CapPrm CapEff CapAmb; do
		[ "$(field $c "$st")" = 0000000000000000 ] ||
		    fail "user: nobody: expected no capability, $c is $(field $c "$st")"
	done
	[ "$(field Uid "$T/d/status" | cut -f1)" = 0 ] ||
	    fail "agent d (no user:) should run as root like corral"
	note "user: nobody: HOME=$(sed -n 's/^HOME=//p' "$T/h/env") USER=$(sed -n 's/^USER=//p' "$T/h/env")"
else
	note "not root: the user: nobody part is skipped"
fi
expect_no_leftovers
exit 0
