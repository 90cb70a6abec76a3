#!/bin/sh
# corral run takes its first envelope's inputs from the command line:
#   - --param KEY=VALUE (a string) and KEY:=JSON (any value), repeatable,
#     land in inputs.parameters;
#   - --input FILE holding an object becomes the envelope's inputs (its
#     parameters merged with --param's, --param winning);
#   - --input FILE holding a whole envelope is sent as it is (its intent,
#     its trace.id), without --goal;
#   - what no input could be (an unknown intent, a file that is not JSON,
#     a missing file or a directory, a --param without "=", neither --goal
#     nor an envelope) exits 2 with the reason before any agent starts.
. "$(dirname "$0")/lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  echo:
    cmd: [$TOOLS/testagent, --record, $T/rec]
routes:
  "*": echo
YAML
# The request echo received, as JSON.
got() {
	sed -n 's/^recv //p' "$T/rec" | grep '"protocol"' | tail -n 1
}
param() {
	got | "$TOOLS/treeq" -p "inputs.parameters.$1" -
}

corral_run 20 run "$T/wf.yaml" --goal go --param city=Zürich \
    --param n:=3 --param 'tags:=["a","b"]' --param empty=
expect_rc 0
[ "$(param city)" = "Zürich" ] || fail "city: $(got)"
[ "$(param n)" = 3 ] || fail "n is not the number 3: $(got)"
[ "$(param tags.1)" = b ] || fail "tags: $(got)"
[ "$(param empty)" = "" ] || fail "empty: $(got)"

rm -f "$T/rec"
printf '%s\n' '{"context": "from a file", "parameters": {"city": "Bern", "days": 2}}' >"$T/in.json"
corral_run 20 run "$T/wf.yaml" --goal go --input "$T/in.json" --param city=Basel
expect_rc 0
[ "$(got | "$TOOLS/treeq" -p inputs.context -)" = "from a file" ] || fail "context: $(got)"
[ "$(param city)" = Basel ] || fail "--param did not win over the file: $(got)"
[ "$(param days)" = 2 ] || fail "the file's parameters were lost: $(got)"

rm -f "$T/rec"
printf '%s\n' '{"protocol":"multiagent-1.0","role":"user","intent":"analyze","task":"from a file","content":{"type":"text","text":"x"},"trace":{"id":"mine-1"}}' >"$T/env.json"
corral_run 20 run "$T/wf.yaml" --input "$T/env.json" --log "$T/audit"
expect_rc 0
[ "$(got | "$TOOLS/treeq" -p intent -p task -p trace.id -)" = "analyze	from a file	mine-1" ] ||
    fail "the envelope was not sent as given: $(got)"
grep -q '"ev":"goal","id":"mine-1"' "$T/audit" ||
    fail "the job does not carry the envelope's trace.id: $(grep '"goal"' "$T/audit")"

# Refusals: exit 2, the reason, and no agent started.
refuse() {
	_want=$1
	shift
	rm -f "$T/rec"
	corral_run 20 "$@"
	expect_rc 2
	grep -q -- "$_want" "$ERR" || fail "$*: expected '$_want' on stderr, got: $(cat "$ERR")"
	[ ! -e "$T/rec" ] || fail "$*: an agent started"
}
printf '%s\n' '{"protocol":"multiagent-1.0","role":"user","intent":"dance","task":"t","content":{"type":"text","text":"x"}}' >"$T/bad.json"
refuse "intent" run "$T/wf.yaml" --input "$T/bad.json"
printf '{"a":' >"$T/trunc.json"
refuse "trunc.json:1" run "$T/wf.yaml" --goal go --input "$T/trunc.json"
refuse "expected KEY=VALUE" run "$T/wf.yaml" --goal go --param city
refuse "not JSON" run "$T/wf.yaml" --goal go --param 'n:={'
refuse "give one" run "$T/wf.yaml" --goal go --input "$T/env.json"
refuse "goal TEXT is required" run "$T/wf.yaml"
refuse "unrecognized option '--param'" serve "$T/wf.yaml" --param a=b
refuse "^corral: --input $T/no-such.json: No such file or directory\$" run "$T/wf.yaml" --input "$T/no-such.json"
refuse "^corral: --input $T: Is a directory\$" run "$T/wf.yaml" --input "$T"
exit 0
