#!/bin/sh
# Template filters hand a list to a plain Unix tool (docs/adapters.md):
#   {{inputs.parameters.words | lines}} gives sort one word a line;
#   {{... | json}} gives printf the list as JSON;
#   {{... | shell}} gives sh -c each word single-quoted, so quotes, spaces
#   and $(...) arrive as they were, never run.
# A filter corral does not have is refused when the file is loaded (the
# golden fixture bad-template-filter.yaml).
. "$(dirname "$0")/lib.sh"

cat >"$T/wf.yaml" <<'YAML'
agents:
  sorter:
    adapter: {type: exec, argv: [sort], stdin: "{{inputs.parameters.words | lines}}"}
  jsoner:
    adapter: {type: exec, argv: [printf, "%s", "{{inputs.parameters.words | json}}"], stdin: null}
  looper:
    adapter:
      type: exec
      argv: [sh, -c, "for w in {{ inputs.parameters.words | shell }}; do echo \"<$w>\"; done"]
      stdin: null
routes:
  execute: sorter
  analyze: jsoner
  summarize: looper
YAML
# req ID INTENT WORDS: one request whose inputs.parameters.words is WORDS.
req() {
	printf '{"protocol":"multiagent-1.0","role":"user","intent":"%s","task":"t","content":{"type":"text","text":"x"},"inputs":{"parameters":{"words":%s}},"trace":{"id":"%s"}}\n' \
	    "$2" "$3" "$1" >&8
}
serve_start "$T/wf.yaml"
req s1 execute '["pear","apple","fig"]'
req s2 analyze '["pear","apple","fig"]'
req s3 summarize '["it'"'"'s","a b","$(touch '"$T"'/pwned)","\"q\""]'
serve_eof
corral_wait 20
expect_rc 0
text() {
	jq -r --arg id "$1" 'select(.trace.parents == [$id]) | .content.text' "$OUT"
}
[ "$(text s1)" = "$(printf 'apple\nfig\npear')" ] || fail "| lines into sort: $(text s1)"
[ "$(text s2)" = '["pear","apple","fig"]' ] || fail "| json: $(text s2)"
[ "$(text s3)" = "$(printf '%s\n' "<it's>" "<a b>" "<\$(touch $T/pwned)>" '<"q">')" ] ||
    fail "| shell: $(text s3)"
[ ! -e "$T/pwned" ] || fail "| shell let \$(...) run"
exit 0
