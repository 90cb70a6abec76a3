#!/bin/sh
# An agent whose program cannot be executed fails with a clear error and
# corral exits with failure instead of hanging or retrying: a missing
# file ("No such file or directory"), a file without execute permission
# ("Permission denied"), and a bare name found nowhere on the path.
. "$(dirname "$0")/lib.sh"

printf '#!/bin/sh\nexit 0\n' >"$T/noexec"
chmod 644 "$T/noexec"

check() {	# CMD EXPECTED-LOG-TEXT [EXTRA-WORKFLOW-LINE]
	cat >"$T/wf.yaml" <<YAML
agents:
  a:
    cmd: [$1]
routes:
  "*": a
${3:-}
YAML
	s=$(now)
	corral_run 10 run "$T/wf.yaml" --goal go -v
	t=$(elapsed "$s")
	[ "$RC" = 1 ] || fail "cmd [$1]: expected exit status 1, got $RC"
	log_has "corral: agent a: spawn failed: $2" ||
	    fail "cmd [$1]: expected 'agent a: spawn failed: $2' in the log"
	[ "$(log_count 'agent a: spawn failed:')" -eq 1 ] ||
	    fail "cmd [$1]: expected one spawn attempt, saw $(log_count 'agent a: spawn failed:')"
	grep -q '"type":"error"' "$OUT" ||
	    fail "cmd [$1]: expected an error envelope as the result, got: $(head -c 300 "$OUT")"
	log_has "corral: agent a: STOPPED -> FAILED (spawn failed: $2)" ||
	    fail "cmd [$1]: expected 'agent a: STOPPED -> FAILED (spawn failed: $2)'"
	note "cmd [$1]: exit $RC after ${t}s"
	# The agent is FAILED for good at once; the run should end promptly,
	# without retrying a request no agent can ever take (the first retry
	# would wait 1 s, the three of the default 7 s).
	[ "$(log_count 'retry 1 in')" -eq 0 ] && fcmp "$t" "<" "$((3 * SLOW))" || slow="$slow
  cmd [$1]: expected corral to exit within 3s (x$SLOW) of the spawn failure,
  without retries; it took ${t}s: $(grep -c 'retry [0-9] in' "$ERR") retries of a
  request no agent can ever take ($(grep -F 'retry 1 in' "$ERR" | head -n 1))"
}
slow=

check ./nope 'exec ./nope: No such file or directory'
# The same with retries off, which hides the retry delay of the first case.
check ./noexec 'exec ./noexec: Permission denied' 'retry: {max: 0}'
check corral-regress-no-such-agent \
    'exec corral-regress-no-such-agent: No such file or directory' 'retry: {max: 0}'
expect_no_leftovers
[ -z "$slow" ] || fail "$slow"
exit 0
