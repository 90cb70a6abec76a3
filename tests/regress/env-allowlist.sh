#!/bin/sh
# An agent's environment is an allowlist: a secret in corral's environment
# does not reach it; PATH does, so do the agent's own env: entries, and
# corral's CORRAL_AGENT_ID, CORRAL_AGENT_NAME, CORRAL_RUN_ID,
# CORRAL_PROTOCOL, and CORRAL_CONTROL with the agent's credential
# CORRAL_AGENT_TOKEN (none with --no-control), and PYTHONPATH naming the
# directory of corral's Python module (corral's own PYTHONPATH, outside
# the allowlist, does not reach it).  An env: entry overrides an inherited
# variable.
. "$(dirname "$0")/lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  envy:
    cmd: [$TA, --env, $T/env]
    env:
      OWN_VAR: own-value
      LANG: C.own
routes:
  "*": envy
YAML

export SECRET_TOKEN=hunter2 AWS_SECRET_ACCESS_KEY=xyz LANG=C.inherited PYTHONPATH=/leaked
# corral gets the secret (else this test would prove nothing).
[ "$(sh -c 'echo $SECRET_TOKEN')" = hunter2 ] || fail "SECRET_TOKEN is not exported (test broken?)"
corral_run 20 run "$T/wf.yaml" --goal go --control "$T/ctl.sock"
expect_rc 0
[ -s "$T/env" ] || fail "the agent did not write its environment"
grep -q '^SECRET_TOKEN=' "$T/env" && fail "SECRET_TOKEN reached the agent"
grep -q '^AWS_SECRET_ACCESS_KEY=' "$T/env" && fail "AWS_SECRET_ACCESS_KEY reached the agent"
grep -qx "PATH=$PATH" "$T/env" ||
    fail "expected PATH=$PATH in the agent's environment, saw: $(grep '^PATH=' "$T/env")"
grep -qx 'OWN_VAR=own-value' "$T/env" || fail "expected OWN_VAR=own-value from env:"
grep -qx 'LANG=C.own' "$T/env" ||
    fail "expected env: to override LANG (LANG=C.own), saw: $(grep '^LANG=' "$T/env")"
[ "$(grep -c '^LANG=' "$T/env")" -eq 1 ] || fail "LANG is set twice: $(grep '^LANG=' "$T/env")"
grep -qx 'CORRAL_AGENT_ID=envy' "$T/env" ||
    fail "expected CORRAL_AGENT_ID=envy, saw: $(grep '^CORRAL_AGENT_ID' "$T/env")"
grep -qx 'CORRAL_AGENT_NAME=envy' "$T/env" || fail "expected CORRAL_AGENT_NAME=envy"
grep -qx 'CORRAL_PROTOCOL=1' "$T/env" || fail "expected CORRAL_PROTOCOL=1"
grep -q '^CORRAL_RUN_ID=..*' "$T/env" || fail "expected CORRAL_RUN_ID"
grep -qx "CORRAL_CONTROL=$T/ctl.sock" "$T/env" ||
    fail "expected CORRAL_CONTROL=$T/ctl.sock, saw: $(grep '^CORRAL_CONTROL' "$T/env")"
grep -qx 'CORRAL_AGENT_TOKEN=[0-9a-f]\{64\}' "$T/env" ||
    fail "expected a 64-digit CORRAL_AGENT_TOKEN"
pp=$(sed -n 's/^PYTHONPATH=//p' "$T/env")
case $pp in
*/share/corral/python) [ -f "$pp/corral_agent.py" ] || fail "PYTHONPATH=$pp holds no corral_agent.py" ;;
*) fail "expected PYTHONPATH=<corral's module directory>, saw: '$pp'" ;;
esac
# Nothing outside the documented allowlist.
extra=$(sed 's/=.*//' "$T/env" | grep -Ev '^(PATH|HOME|USER|LOGNAME|LANG|LANGUAGE|LC_.*|TZ|TERM|TMPDIR|SHELL|OWN_VAR|CORRAL_AGENT_ID|CORRAL_AGENT_NAME|CORRAL_RUN_ID|CORRAL_PROTOCOL|CORRAL_CONTROL|CORRAL_AGENT_TOKEN|PYTHONPATH)$' | tr '\n' ' ')
[ -z "$extra" ] || fail "variables outside the allowlist reached the agent: $extra"
# Without a control socket there is nothing to reach, and no credential.
rm -f "$T/env"
corral_run 20 run "$T/wf.yaml" --goal go --no-control
expect_rc 0
grep -q '^CORRAL_CONTROL=\|^CORRAL_AGENT_TOKEN=' "$T/env" &&
    fail "--no-control, yet the agent got a socket or a credential"
expect_no_leftovers
exit 0
