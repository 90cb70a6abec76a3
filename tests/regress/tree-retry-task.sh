#!/bin/sh
# A HIGH task that times out is tried again at its own child, as HIGH
# requests are (docs/reliability.md): the child is hidden and in no
# route, so the retry goes to the child's own queue.  It once went
# through the routes, where no agent serves a hidden child's task, and
# ended with a misleading no_agent (found by tests/fuzz/fuzz_engine.c).
# Here the child never answers: the task is tried again and ends with
# timeout, the parent gets that as its child's result, and the run ends.
. "$(dirname "$0")/lib.sh"

cat >"$T/spawn.json" <<'JSON'
{"jsonrpc":"2.0","id":1,"method":"map/agents/spawn","params":{"agent":"kid","timeout":0.3,"task":{"protocol":"multiagent-1.0","role":"agent","intent":"execute","task":"wait","priority":"high","content":{"type":"text","text":"wait"}}}}
JSON
cat >"$T/boss.sh" <<EOF
read -r goal
cat "$T/spawn.json"
while read -r line; do
	case \$line in
	*child_result*)
		echo '{"protocol":"multiagent-1.0","role":"agent","agent":{"id":"boss","name":"boss","model":"sh"},"intent":"finalize","task":"t","content":{"type":"text","text":"done"}}' ;;
	esac
done
EOF
cat >"$T/wf.yaml" <<YAML
agents:
  boss:
    cmd: [/bin/sh, $T/boss.sh]
  kid:
    cmd: [$TOOLS/testagent, --hang]
    autostart: false
routes:
  "*": boss
retry: {max: 1, initial: 100ms}
YAML
corral_run 30 run "$T/wf.yaml" --goal go --log "$T/audit"
expect_rc 0
grep '"ev":"retry"' "$T/audit" | grep -q '"agent":"kid' ||
    fail "the task was not tried again: $(grep -E '"ev":"(retry|outcome)"' "$T/audit")"
code=$(grep '"ev":"outcome"' "$T/audit" | grep '"agent":"kid' | sed -n 's/.*"code":"\([a-z_]*\)".*/\1/p' | tail -n 1)
[ "$code" = timeout ] ||
    fail "the retried task ended with '$code', want timeout: $(grep '"ev":"outcome"' "$T/audit")"
expect_no_leftovers 5
exit 0
