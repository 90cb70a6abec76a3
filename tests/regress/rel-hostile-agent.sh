#!/bin/sh
# Hostile output from an agent.  For each kind, the agent writes the abuse
# and then its valid reply; corral drops every bad line with a log line
# and an error notice to the agent, still delivers the valid reply, keeps
# the agent (no restart), and routes the next envelope:
#   - the hostile catalogue (tests/tools/relcat.h), one notice per line
#   - a 64 MiB line; a 256 MiB line; 1 MiB of binary garbage
#   - a flood of 200,000 tiny lines ("{}"): 200,000 invalid_envelope notices
#   - an endless line (no newline ever) from a second agent: its request
#     expires, corral's memory stays bounded (not checked under
#     sanitizers) and the first agent is still served meanwhile
# h's timeout is the default 30 s times SLOW: under the sanitizers on a
# busy machine, reading 256 MiB or the flood can take longer than 30 s.
. "$(dirname "$0")/rel-lib.sh"

FLOOD=${REL_FLOOD:-200000}	# tests/valgrind.sh makes it smaller
cat >"$T/wf.yaml" <<YAML
agents:
  h:
    cmd: [$RA, --record, $T/rec]
    timeout: $((30 * SLOW))s
  e:
    cmd: [$RA, --record, $T/erec]
    stop: {grace: 200ms, timeout: 2s}
routes:
  plan: h
  analyze: e
YAML

# Its lines that begin with '[' are JSON-RPC batches: JSON-RPC errors
# answer them, not notices.
ncat=$(($("$RG" hostile --names | wc -l) - $("$RG" hostile | grep -ac '^\[')))

# ask N TASK [INTENT [TTL]]: send request a-N and wait for its result.
ask() {
	"$RG" env 1 --id a- --start "$1" --task "$2" --intent "${3:-plan}" \
	    ${4:+--ttl "$4"} >&8
	wait_result "a-$1" 60
}

# expect_reply N: the result of a-N is h's reply.
expect_reply() {
	result_of "a-$1" | grep -q '"text":"ok h"' ||
	    fail "expected h's reply as the result of a-$1 ($2), got: $(result_of "a-$1" | cut -c1-300)"
}

written_by() {	# PID: bytes the process wrote so far (0 if unknown)
	cat "/proc/$1/io" 2>/dev/null |
	    awk '/^wchar:/ { print $2; n = 1 } END { if (!n) print 0 }'
}

notices() {	# CODE: notices of that code the agent h received
	grep -c "^notice h $1\$" "$T/rec" 2>/dev/null || true
}

serve_start "$T/wf.yaml" --log "$AUD" -v
sup=$(sup_pid)
hwm_start "$sup"
pid=$(log_pid h)

# The catalogue: one notice per line.
ask 1 invalid
expect_reply 1 "the hostile catalogue"
wait_for '[ "$(grep -c "^notice h " "$T/rec")" -ge "$ncat" ]' 10 ||
    fail "expected $ncat notices for the catalogue, the agent got $(grep -c '^notice h ' "$T/rec")"
[ "$(grep -c '^notice h ' "$T/rec")" -eq "$ncat" ] ||
    fail "expected exactly $ncat notices, got $(grep -c '^notice h ' "$T/rec")"
bad=$(grep '^notice h ' "$T/rec" | grep -v ' \(invalid_json\|invalid_envelope\|nul_byte\)$' | head -n 1)
[ -z "$bad" ] || fail "a notice with an unexpected code: $bad"
# The log is rate-limited (10 warnings a second per agent); the audit
# log and the notices count every line.
n=$(grep -c 'corral: agent h: \(invalid JSON\|invalid envelope\|the line holds a NUL\)' "$ERR")
[ "$n" -ge 10 ] && [ "$n" -le "$ncat" ] ||
    fail "expected 10 to $ncat log lines about h's bad lines, got $n"

# A 64 MiB line, a 256 MiB line, 1 MiB of binary garbage.
ask 2 big:67108864
expect_reply 2 "a 64 MiB line"
log_has 'corral: agent h: a line of 67108864 bytes exceeds max_line (1048576 bytes) and was dropped' ||
    fail "no log line for h's 64 MiB line"
ask 3 endless:268435456
expect_reply 3 "a 256 MiB line"
log_has 'corral: agent h: a line of 268435456 bytes exceeds max_line (1048576 bytes) and was dropped' ||
    fail "no log line for h's 256 MiB line"
wait_for '[ "$(notices line_too_long)" -eq 2 ]' 5 ||
    fail "expected 2 line_too_long notices, the agent got $(notices line_too_long)"
ask 4 garbage:1048576
expect_reply 4 "binary garbage"

# A flood of tiny lines.
before=$(notices invalid_envelope)
ncat_env=$(aud_count rejected code invalid_envelope)
ask 5 "flood:$FLOOD"
expect_reply 5 "a flood of $FLOOD lines"
# Every line is audited as rejected; notices the agent did not read in
# time are dropped (memory stays bounded) and summed up in one notice.
wait_for '[ "$(aud_count rejected code invalid_envelope)" -ge "$((ncat_env + FLOOD))" ]' 60 ||
    fail "expected $FLOOD more rejected lines in the audit log, got $(aud_count rejected code invalid_envelope)"
got=$(( $(notices invalid_envelope) - before ))
[ "$got" -ge 1 ] && [ "$got" -le "$FLOOD" ] ||
    fail "expected 1 to $FLOOD invalid_envelope notices, the agent got $got"
if [ "$got" -lt "$FLOOD" ]; then
	wait_for '[ "$(notices notices_dropped)" -ge 1 ]' 10 ||
	    fail "$((FLOOD - got)) notices were dropped but no notices_dropped summary came"
fi

# An endless line from e: its request expires (after 1.5 s x SLOW, so
# that it outlasts what follows on a slow machine too); h is served
# meanwhile.
ask 6 endless analyze $((1500 * SLOW)) &
ask_pid=$!
wait_for 'grep -q "^req e a-6 endless" "$T/erec"' 10 || fail "e did not get its request"
# Once e has written 2 MiB (corral drops what is past max_line, 1 MiB),
# h gets a request.
epid=$(log_pid e)
wait_for '[ "$(written_by "$epid")" -gt 2097152 ]' 10 ||
    fail "e did not write its endless line (wrote $(written_by "$epid") bytes)"
ask 7 ok
expect_reply 7 "while e writes an endless line"
wait $ask_pid || exit 1
[ "$(code_of a-6)" = timeout ] ||
    fail "expected a timeout for e's endless line, got: $(result_of a-6 | cut -c1-300)"
pid_alive "$epid" || fail "e died while writing its endless line"
rss=$(rss_of "$sup")
note "corral's RSS while e writes an endless line: ${rss} kB"

ask 8 ok
expect_reply 8 "after everything"
[ "$(grep -c '^start ' "$T/rec")" -eq 1 ] && [ "$(log_pid h)" = "$pid" ] ||
    fail "h was restarted: $(grep '^start ' "$T/rec")"
serve_eof
corral_wait 30
expect_rc 0
hwm=$(hwm_read)
note "corral's peak RSS: ${hwm} kB"
set -- $(run_end_check)
[ "$1" -eq 8 ] && [ "$2" -eq 7 ] && [ "$4" -eq 1 ] ||
    fail "expected 8 accepted, 7 replied, 1 expired; run_end says $*"
if [ "$SAN" = 0 ]; then
	[ "$rss" -lt 102400 ] ||
	    fail "corral's RSS was ${rss} kB (limit 100 MB) while an agent wrote an endless line"
fi
expect_no_leftovers
exit 0
