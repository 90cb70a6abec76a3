#!/bin/sh
# Hostile input on corral serve's stdin.  Every line gets exactly one
# result line, each bad one an error envelope, and the valid envelope
# after each kind of abuse is still routed and answered:
#   - the hostile catalogue (tests/tools/relcat.h): truncated JSON, wrong
#     types, nesting 100000 deep, huge numbers, invalid UTF-8, lone
#     surrogates, NUL bytes, duplicate keys, binary garbage ...
#   - a 64 MiB line, and a 256 MiB line (an "endless" one) ended by a
#     newline at last: dropped with line_too_long, the next line routed
#   - a flood of 200,000 tiny lines
#   - a 16 MiB line without a newline at EOF: dropped, reported once
# corral's peak RSS stays under 100 MB meanwhile (not under sanitizers),
# and the audit log's accounting holds.
. "$(dirname "$0")/rel-lib.sh"

FLOOD=200000
cat >"$T/wf.yaml" <<YAML
agents:
  echo:
    cmd: [$RA, --record, $T/rec]
routes:
  "*": echo
YAML

ncat=$("$RG" hostile --names | wc -l)
# Its lines that begin with '[' are JSON-RPC batches, not envelopes:
# they get JSON-RPC errors (id null) instead of error envelopes.
nbatch=$("$RG" hostile | grep -ac '^\[')
valid() {	# N: the valid envelope h-N on the fifo
	"$RG" env 1 --id h- --start "$1" >&8
}

serve_start "$T/wf.yaml" --log "$AUD" -v
sup=$(sup_pid)
hwm_start "$sup"

"$RG" hostile >&8
valid 1
printf '%s\n' '{"jsonrpc":"2.0","id":5,"method":"ping"}' >&8
"$RG" line 67108864 >&8
valid 2
"$RG" flood $FLOOD >&8
valid 3
"$RG" line 268435456 --nonl >&8
echo >&8
valid 4
"$RG" line 16777216 --nonl >&8
serve_eof
corral_wait 120
expect_rc 0
hwm=$(hwm_read)

inputs=$((ncat + 4 + 1 + 1 + FLOOD + 1 + 1))
lines=$(wc -l <"$OUT")
note "$inputs input lines, $lines result lines, peak RSS ${hwm} kB"
[ "$lines" -eq "$inputs" ] ||
    fail "expected one result line per input line ($inputs), got $lines"

for id in h-1 h-2 h-3 h-4; do
	r=$(result_of "$id")
	printf '%s\n' "$r" | grep -q '"text":"ok echo"' ||
	    fail "the valid envelope $id was not answered by the agent; its result: $(printf '%s' "$r" | cut -c1-300)"
done
grep -qxF '{"jsonrpc":"2.0","id":5,"result":{}}' "$OUT" ||
    fail "no answer to the ping on stdin"
[ "$(grep -c '^\[*{"jsonrpc":"2.0","id":null,"error"' "$OUT")" -eq "$nbatch" ] ||
    fail "expected $nbatch JSON-RPC errors for the batches, got $(grep -c '"id":null,"error"' "$OUT")"

# Every other line is an error envelope with a code for bad input.
errs=$(grep -c '"content":{"type":"error"' "$OUT")
[ "$errs" -eq $((inputs - 5 - nbatch)) ] ||
    fail "expected $((inputs - 5 - nbatch)) error results, got $errs"
bad=$(grep '"content":{"type":"error"' "$OUT" | grep -v '"code":"\(invalid_json\|invalid_envelope\|nul_byte\|line_too_long\)"' | head -n 1)
[ -z "$bad" ] || fail "an error result with an unexpected code: $(printf '%s' "$bad" | cut -c1-300)"
[ "$(grep -c '"code":"line_too_long"' "$OUT")" -eq 3 ] ||
    fail "expected 3 line_too_long results (64 MiB, 256 MiB, 16 MiB at EOF), got $(grep -c '"code":"line_too_long"' "$OUT")"
for n in 67108864 268435456 16777216; do
	grep -q "a line of $n bytes exceeds the maximum" "$OUT" ||
	    fail "no line_too_long result naming the $n-byte line"
	log_has "corral: stdin: a line of $n bytes exceeds the maximum (1048576 bytes" ||
	    fail "no log line for the $n-byte line"
done
[ "$(grep -c '"code":"nul_byte"' "$OUT")" -ge 2 ] ||
    fail "expected 2 or more nul_byte results, got $(grep -c '"code":"nul_byte"' "$OUT")"
grep -q 'aaaaaaaaaaaaaaaa' "$OUT" && fail "part of a dropped line reached stdout"
# The agent saw the four valid envelopes and nothing else.
[ "$(grep -c '^req ' "$T/rec")" -eq 4 ] ||
    fail "expected the agent to get 4 requests, it got: $(grep '^req ' "$T/rec" | head)"

set -- $(run_end_check)
[ "$1" -eq 4 ] && [ "$2" -eq 4 ] ||
    fail "expected run_end accepted 4 replied 4, got accepted $1 replied $2"
[ "$(run_end_get rejected)" = $((inputs - 5 - nbatch)) ] ||
    fail "expected run_end rejected $((inputs - 5 - nbatch)), got '$(run_end_get rejected)'"
[ "$(aud_count rejected agent stdin)" -eq $((inputs - 5 - nbatch)) ] ||
    fail "expected $((inputs - 5 - nbatch)) rejected events in the audit log, got $(aud_count rejected agent stdin)"
if [ "$SAN" = 0 ]; then
	[ "$hwm" -lt 102400 ] ||
	    fail "corral's peak RSS was ${hwm} kB (limit 100 MB) while reading hostile input"
fi
expect_no_leftovers
exit 0
