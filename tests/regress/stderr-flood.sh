#!/bin/sh
# An agent that writes 1 MiB to stderr before it replies is not blocked
# (corral drains stderr while it waits): the reply arrives, and every
# stderr line is in corral's log prefixed with the agent's id, whole.
# A line longer than 4096 bytes is cut at 4096 bytes and the log says how
# many bytes were cut (docs/protocol.md, "Framing").
. "$(dirname "$0")/lib.sh"

cat >"$T/wf.yaml" <<YAML
agents:
  flood:
    cmd: [$TA, --stderr-bytes, "1048576", --stderr-line, "6000"]
    timeout: 30s
routes:
  "*": flood
YAML

s=$(now)
corral_run 20 run "$T/wf.yaml" --goal go
note "run took $(elapsed "$s")s"
expect_rc 0
grep -q '"text":"ok flood"' "$OUT" ||
    fail "expected flood's reply on stdout, got: $(head -c 300 "$OUT")"
n=$(grep -c '^flood: testagent-flood [0-9]\{5\} x*$' "$ERR")
[ "$n" -eq 1024 ] ||
    fail "expected 1024 stderr lines 'flood: testagent-flood NNNNN xxx' in the log, saw $n"
grep -q '^flood: testagent-flood 00000 ' "$ERR" || fail "the first stderr line is missing"
grep -q '^flood: testagent-flood 01023 ' "$ERR" || fail "the last stderr line is missing"
expect_no_leftovers

bad=
# Each 1 KiB line whole: "flood: " and the 1023 bytes the agent wrote.
short=$(grep '^flood: testagent-flood' "$ERR" | awk 'length($0) != 7 + 1023' | wc -l)
[ "$short" -eq 0 ] || bad="$bad
  expected each 1023-byte stderr line logged whole (7 + 1023 bytes), but $short
  of 1024 are not; e.g. $(grep '^flood: testagent-flood' "$ERR" | head -n 1 | awk '{ print length($0) }') bytes: '$(grep '^flood: testagent-flood' "$ERR" | head -n 1 | cut -c1-40)...$(grep '^flood: testagent-flood' "$ERR" | head -n 1 | awk '{ print substr($0, length($0) - 30) }')'"
# The 6000-byte line: its first 4096 bytes, then "[1904 more bytes cut]".
long=$(grep '^flood: testagent-long ' "$ERR")
kept=$(printf '%s\n' "$long" | sed 's/ \[[0-9]* more bytes cut\]$//' | awk '{ print length($0) - 7 }')
[ "$kept" = 4096 ] || bad="$bad
  expected the 6000-byte stderr line cut at 4096 bytes, the log kept $kept"
printf '%s\n' "$long" | grep -q ' \[1904 more bytes cut\]$' || bad="$bad
  expected the cut line to end '[1904 more bytes cut]', it ends '$(printf '%s\n' "$long" | awk '{ print substr($0, length($0) - 25) }')'"
[ -z "$bad" ] || fail "$bad"
exit 0
