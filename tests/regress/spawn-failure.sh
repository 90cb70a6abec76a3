#!/bin/sh
# An agent whose program cannot be run.
#   - Known before the start (a missing file, a file without execute
#     permission, a bare name found nowhere on the path): corral run and
#     corral serve refuse the workflow with exit status 2 and the message
#     corral check gives, and start no agent at all.
#   - Known only at exec (a script whose interpreter does not exist, which
#     passes every check): the agent fails with a clear error and corral
#     exits with failure instead of hanging or retrying.
. "$(dirname "$0")/lib.sh"

printf '#!/bin/sh\nexit 0\n' >"$T/noexec"
chmod 644 "$T/noexec"
printf '#!%s/no-such-interpreter\n' "$T" >"$T/badinterp"
chmod 755 "$T/badinterp"

# workflow CMD [EXTRA-LINE]: a workflow whose agent a runs CMD, next to an
# agent that would leave $T/started behind if anything started.
workflow() {
	cat >"$T/wf.yaml" <<YAML
agents:
  witness:
    cmd: [$TA, --pidfile, $T/started]
  a:
    cmd: [$1]
routes:
  "*": a
${2:-}
YAML
}

# refused CMD EXPECTED-MESSAGE: check, run and serve all refuse the file.
refused() {
	prog=$1
	workflow "$prog"
	want="corral: $T/wf.yaml:4:3: agents.a.cmd: $2"
	for cmd in check run serve; do
		set -- "$cmd" "$T/wf.yaml"
		[ "$cmd" = run ] && set -- "$@" --goal go
		corral_run 10 "$@" </dev/null
		expect_rc 2
		[ "$(cat "$ERR")" = "$want" ] ||
		    fail "corral $cmd: expected only '$want' on stderr, got: $(head -c 300 "$ERR")"
		[ -s "$OUT" ] && fail "corral $cmd printed on stdout: $(head -c 300 "$OUT")"
		[ -e "$T/started" ] && fail "corral $cmd started an agent for a file it refuses"
	done
	note "cmd [$prog]: refused by check, run and serve"
}

refused ./nope './nope: No such file or directory'
refused ./noexec './noexec: Permission denied'
refused corral-regress-no-such-agent \
    'corral-regress-no-such-agent: No such file or directory'

# The exec itself fails: one spawn attempt, FAILED, an error result.
workflow ./badinterp
want='exec ./badinterp: No such file or directory'
s=$(now)
corral_run 10 run "$T/wf.yaml" --goal go -v
t=$(elapsed "$s")
[ "$RC" = 1 ] || fail "expected exit status 1, got $RC"
log_has "corral: agent a: spawn failed: $want" ||
    fail "expected 'agent a: spawn failed: $want' in the log"
[ "$(log_count 'agent a: spawn failed:')" -eq 1 ] ||
    fail "expected one spawn attempt, saw $(log_count 'agent a: spawn failed:')"
grep -q '"type":"error"' "$OUT" ||
    fail "expected an error envelope as the result, got: $(head -c 300 "$OUT")"
log_has "corral: agent a: STOPPED -> FAILED (spawn failed: $want)" ||
    fail "expected 'agent a: STOPPED -> FAILED (spawn failed: $want)'"
note "bad interpreter: exit $RC after ${t}s"
# The agent is FAILED for good at once; the run should end promptly.
fcmp "$t" "<" "$((2 * SLOW))" ||
    fail "expected corral to exit within 2s of the spawn failure, it took ${t}s"
expect_no_leftovers
exit 0
