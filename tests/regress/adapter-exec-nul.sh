#!/bin/sh
# A tool's output with a NUL byte (found by tests/unit/jsonw.c): the exec
# adapter's reply carries it as U+FFFD, as it does any byte that is not
# text, in content.text and in the stderr tail of an error.  jsonw_text
# kept the NUL, the reply then held "\u0000", which corral's own scanner
# refuses: the request failed with bad_reply and the output was lost.
. "$(dirname "$0")/lib.sh"

command -v printf >/dev/null 2>&1 || skip "no printf"
cat >"$T/wf.yaml" <<'YAML'
agents:
  out:
    adapter:
      type: exec
      argv: [printf, 'a\000b']
      stdin: null
      intent: finalize
  err:
    adapter:
      type: exec
      argv: [sh, -c, 'printf "x\000y\n" >&2; exit 3']
      stdin: null
routes:
  execute: out
  analyze: err
YAML
req() {
	printf '{"protocol":"multiagent-1.0","role":"user","intent":"%s","task":"t","content":{"type":"text","text":"x"},"trace":{"id":"%s"}}\n' \
	    "$2" "$1" >&8
}
serve_start "$T/wf.yaml" -v
req n1 execute
req n2 analyze
wait_for '[ "$(wc -l <"$OUT")" -ge 2 ]' 10 ||
    fail "expected 2 results within 10s (x$SLOW), have: $(cat "$OUT")"
serve_eof
corral_wait 10
expect_rc 0
line() {
	grep -F "\"parents\":[\"$1\"]" "$OUT" | head -n 1
}
line n1 | grep -qF "\"content\":{\"type\":\"text\",\"text\":\"a$(printf '\357\277\275')b\"}" ||
    fail "the NUL should read as U+FFFD: $(line n1)"
line n2 | grep -qF '"code":"exit_status"' || fail "the tool's error: $(line n2)"
line n2 | grep -qF "\"stderr\":\"x$(printf '\357\277\275')y" ||
    fail "the NUL in stderr should read as U+FFFD: $(line n2)"
log_has "made an invalid reply" && fail "an adapter reply was refused"
exit 0
