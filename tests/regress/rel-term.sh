#!/bin/sh
# What agents and clients write cannot drive the terminal of whoever
# watches the run, and an agent cannot set corral's own fields.
#
# An agent "liar" sends map/agents/update with metadata.lastError holding
# ESC and OSC sequences (retitle the window, clear the screen, red text)
# and metadata.virtual: true; it writes the same bytes to its stderr and
# then lets a request time out, so that corral's own last error for it
# quotes them.  A client connects with such a name.  corral ps, top, tree
# and events --text print the bytes escaped (\033), never raw (no ESC or
# BEL of theirs reaches the terminal); ps shows liar's pid; its lastError
# is corral's, not the one it set.  corral's own log escapes them too.
. "$(dirname "$0")/ctl-lib.sh"

cat >"$T/liar.sh" <<'SH'
bad=$(printf '\033]0;owned\007\033[2J\033[31mFAKE ALERT')
printf '%s\n' "$bad" >&2
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"map/agents/update","params":{"metadata":{"lastError":"\u001b]0;owned\u0007\u001b[2J\u001b[31mFAKE ALERT","virtual":true,"pid":1}}}'
while read -r l; do :; done
SH
cat >"$T/wf.yaml" <<YAML
agents:
  liar:
    cmd: [sh, $T/liar.sh]
    timeout: 0.3s
routes:
  "*": liar
YAML

# raw FILE: the file holds an ESC or a BEL byte.
raw() {
	LC_ALL=C grep -q "$(printf '[\033\007]')" "$1"
}

serve_start "$T/wf.yaml" -v --control "$SOCK"
wait_sock
wait_log "FAKE ALERT" 10
envelope t1 plan >&8
wait_lines 1 20
"$CP" -s "$SOCK" -l '{"jsonrpc":"2.0","id":1,"method":"map/connect","params":{"name":"\u001b]0;pwned\u0007\u001b[2J"}}' \
    -e 1 -w 5 >/dev/null 2>&1 || fail "the client with a hostile name was not answered"
wait_for '"$CORRAL" ps -S "$SOCK" --json 2>/dev/null | grep -q "its last stderr"' 10 ||
    fail "liar's last error does not quote its stderr: $("$CORRAL" ps -S "$SOCK" --json)"

ctl ps
[ $CRC = 0 ] || fail "corral ps failed: $(cat "$T/ctl.err")"
raw "$T/ctl.out" && fail "corral ps printed an agent's escape sequences raw: $(cat -v "$T/ctl.out")"
grep -qF 'its last stderr: "\033' "$T/ctl.out" ||
    fail "corral ps should show the sequence escaped: $(cat -v "$T/ctl.out")"
pid=$(log_pid liar)
grep -q "^  liar  *[a-z]*  *$pid " "$T/ctl.out" ||
    fail "corral ps should show liar's pid $pid: $(cat -v "$T/ctl.out")"
"$CORRAL" ps -S "$SOCK" --json >"$T/ps.json"
jq -e '.agents[] | select(.id == "liar") | .metadata |
    (.virtual == null) and (.pid != 1) and (.lastError | startswith("agent liar did not reply"))' \
    "$T/ps.json" >/dev/null || fail "liar set corral's own fields: $(cat "$T/ps.json")"

# top on a wide terminal (script(1) gives it one), so the column shows.
if command -v script >/dev/null 2>&1; then
	script -qec "stty cols 250 rows 40; \"$CORRAL\" top -S \"$SOCK\" -n 1" \
	    /dev/null </dev/null >"$T/top.out" 2>&1
	# top draws with its own sequences; none of the agent's may pass.
	LC_ALL=C grep -q "$(printf '\033]0;\\|\007\\|\033\\[31m')" "$T/top.out" &&
	    fail "corral top printed an agent's escape sequences raw: $(cat -v "$T/top.out")"
	grep -qF 'its last stderr: "\033]0;owned\007\033[2J\033[31mFAKE ALERT"' "$T/top.out" ||
	    fail "corral top should show the sequence escaped: $(cat -v "$T/top.out")"
else
	note "no script(1): corral top not checked"
fi

ctl tree
raw "$T/ctl.out" && fail "corral tree printed escape sequences raw: $(cat -v "$T/ctl.out")"
grep -q "liar" "$T/ctl.out" || fail "corral tree: $(cat "$T/ctl.out")"

ctl events --text
raw "$T/ctl.out" && fail "corral events --text printed escape sequences raw: $(cat -v "$T/ctl.out")"
grep -qF 'connected (\033]0;pwned\007\033[2J)' "$T/ctl.out" ||
    fail "corral events --text should show the client's name escaped: $(cat -v "$T/ctl.out")"

serve_eof
corral_wait 20
expect_rc 0
raw "$ERR" && fail "corral's own log holds an agent's escape sequences raw: $(LC_ALL=C grep -n "$(printf '[\033\007]')" "$ERR" | cat -v)"
exit 0
