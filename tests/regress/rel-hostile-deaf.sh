#!/bin/sh
# Agents that never read their stdin must not make corral block or grow
# without bound.
#   A: 100 MB of requests (1000 x 100 KB) offered to an agent that never
#      reads: every request gets exactly one result (timeouts, then fail
#      fast on the open circuit), an envelope for another agent is still
#      answered, and corral's peak RSS stays under 100 MB.
#   B: an agent writes 200,000 invalid lines ("{}", 600 KB) and never
#      reads the notices corral sends back: corral's RSS stays under
#      64 MB (the notices must not pile up without bound).
#   C: an agent that starts reading only after its requests have timed
#      out (their long lines, 100 KB, queued by reference to the
#      requests' own bytes, which outlive the requests): every line it
#      reads is an input, whole.
# RSS limits are not checked under the sanitizers (SAN=1).  Both floods
# take what the machine takes: the test waits for them as long as corral
# makes progress, and fails when it stops for 15 s (x SLOW).
. "$(dirname "$0")/rel-lib.sh"

LIMIT=102400	# kB, for A
LIMIT_B=65536	# kB, for B
NFLOOD=200000
problems=

cat >"$T/wf.yaml" <<YAML
agents:
  deaf:
    cmd: [$RA, --deaf, --record, $T/deaf.rec]
    timeout: 500ms
    stop: {grace: 200ms, timeout: 2s}
  flood:
    cmd: [$RA, --record, $T/flood.rec]
    stop: {grace: 200ms, timeout: 2s}
  echo:
    cmd: [$RA, --record, $T/echo.rec]
routes:
  plan: deaf
  summarize: flood
  analyze: echo
retry: {max: 0}
YAML

# A: 100 MB of requests for the deaf agent.
serve_start "$T/wf.yaml" --log "$AUD" -v
sup=$(sup_pid)
hwm_start "$sup"
s=$(now)
"$RG" env 1000 --id d- --size 102400 --tag "$T" >&8 &
gen=$!
# How far corral got: the bytes the generator could write to it (the
# audit log is too large to count often), the results it wrote.
taken() {
	echo "$(sed -n 's/^wchar: //p' "/proc/$gen/io" 2>/dev/null) $(out_lines)"
}
if wait_progress '! pid_alive $gen' 15 taken; then
	wait $gen
	"$RG" env 1 --id after- --intent analyze >&8
	wait_for '[ -n "$(result_of after-1)" ]' 30 ||
	    fail "A: the envelope for echo after the flood got no result within 30s (x$SLOW)"
	result_of after-1 | grep -q '"text":"ok echo"' ||
	    fail "A: expected echo's reply after the flood, got: $(result_of after-1 | cut -c1-300)"
	serve_eof
	corral_wait 60
	expect_rc 0
	hwmA=$(hwm_read)
	note "A: 1000 x 100 KB requests to a deaf agent answered in $(elapsed "$s")s; corral's peak RSS ${hwmA} kB"
	awk 'BEGIN { for (i = 1; i <= 1000; i++) print "d-" i; print "after-1" }' >"$T/ids"
	expect_one_each "$T/ids"
	bad=$(grep -F '"parents":["d-' "$OUT" | grep -v '"code":"\(timeout\|circuit_open\)"' | head -n 1)
	[ -z "$bad" ] || fail "A: a request to the deaf agent ended otherwise than timeout or circuit_open: $(printf '%s' "$bad" | cut -c1-300)"
	run_end_check >/dev/null
	if [ "$SAN" = 0 ] && [ "$hwmA" -ge $LIMIT ]; then
		problems="$problems
  A: corral's peak RSS was ${hwmA} kB while 100 MB of requests were offered
     to an agent that never reads (limit $LIMIT kB): corral read them all
     into memory instead of pushing back on its stdin"
	fi
else
	# Say how far it got, then stop it and go on with B.
	nin=$(aud_count input)
	nout=$(wc -l <"$OUT")
	problems="$problems
  A: corral stopped reading its stdin for good: after $nin of 1000 requests
     (100 KB each) to an agent that never reads, with $nout results written
     and $(grep -c . "$T/deaf.rec") lines in the agent's record, nothing
     more was read in 15s (x$SLOW), although no job was left: corral serve
     hangs.  Last log lines:
$(grep -v '^corral: request' "$ERR" | tail -n 3 | sed 's/^/       /')"
	kill "$gen" 2>/dev/null
	kill -TERM "$CORRAL_PID"
	corral_wait 20
fi
kill "$HWM_PID" 2>/dev/null

# B: an agent floods invalid lines and never reads the notices.
rm -f "$T/hwm"
serve_start "$T/wf.yaml" --log "$AUD" -v
sup=$(sup_pid)
"$RG" env 1 --id f- --task flood-deaf:$NFLOOD --intent summarize --ttl 1500 >&8
wait_for '[ -n "$(result_of f-1)" ]' 30 ||
    fail "B: no result for the flooding request within 30s (x$SLOW)"
[ "$(code_of f-1)" = timeout ] ||
    fail "B: expected a timeout for the flooding agent's request, got: $(result_of f-1 | cut -c1-300)"
# Every line is rejected and audited; the log itself is rate-limited.
wait_progress '[ "$PROGRESS" -ge $NFLOOD ]' 15 aud_count rejected code invalid_envelope
n=$(aud_count rejected code invalid_envelope)
rss=$(rss_of "$sup")
note "B: corral rejected $n invalid lines from the flooding agent; its RSS is ${rss} kB"
[ "$n" -eq $NFLOOD ] || fail "B: expected $NFLOOD rejected lines in the audit log, got $n"
"$RG" env 1 --id after- --start 2 --intent analyze >&8
wait_for '[ -n "$(result_of after-2)" ]' 30 || fail "B: no result for echo's envelope"
serve_eof
corral_wait 60
expect_rc 0
if [ "$SAN" = 0 ] && [ "$rss" -ge $LIMIT_B ]; then
	problems="$problems
  B: corral's RSS was ${rss} kB after an agent wrote $NFLOOD invalid lines
     (\"{}\", $((NFLOOD * 3)) bytes) without reading its stdin (limit
     $LIMIT_B kB): the notices queued for it are not bounded"
fi

# C: requests that end while their lines wait in the agent's queue.  The
# agent reads nothing until every request has its result (timeouts, then
# fail fast on the open circuit), then copies its stdin to a file.
cat >"$T/late.yaml" <<YAML
agents:
  late:
    cmd: [sh, -c, 'while [ ! -e $T/go ]; do sleep 0.05; done; exec cat >$T/late.got']
    timeout: 300ms
    heartbeat: off
    stop: {grace: 200ms, timeout: 2s}
routes:
  plan: late
retry: {max: 0}
YAML
rm -f "$AUD"
serve_start "$T/late.yaml" --log "$AUD"
# With a timestamp, an input goes to its agent as it came (else corral
# adds one): the agent's lines can be compared with the inputs.
"$RG" env 12 --id l- --size 102400 --intent plan --tag "$T" |
    sed 's/^{/{"timestamp":"2026-11-27T12:00:00Z",/' >"$T/late.in"
cat "$T/late.in" >&8
wait_lines 12 30 || fail "C: expected 12 results within 30s (x$SLOW), got $(out_lines)"
awk 'BEGIN { for (i = 1; i <= 12; i++) print "l-" i }' >"$T/ids"
expect_one_each "$T/ids"
# The inputs given to the agent (the rest failed fast): their lines.
nsent=$(aud_count route)
[ "$nsent" -ge 1 ] || fail "C: no request was given to the agent"
: >"$T/go"
wait_for '[ "$(awk "length > 100000" "$T/late.got" 2>/dev/null | wc -l)" -ge "$nsent" ]' 30 ||
    fail "C: the agent read $(awk 'length > 100000' "$T/late.got" 2>/dev/null | wc -l) long lines of the $nsent given to it within 30s (x$SLOW)"
serve_eof
corral_wait 30
expect_rc 0
awk 'length > 100000' "$T/late.got" | sort >"$T/late.got.long"
sort "$T/late.in" >"$T/late.in.sorted"
bad=$(comm -23 "$T/late.got.long" "$T/late.in.sorted" | wc -l)
[ "$bad" -eq 0 ] ||
    fail "C: $bad of the lines the agent read after its requests ended are not inputs as sent (torn or overwritten): $(comm -23 "$T/late.got.long" "$T/late.in.sorted" | head -n 1 | cut -c1-200)"
[ "$(wc -l <"$T/late.got.long")" -eq "$nsent" ] ||
    fail "C: the agent read $(wc -l <"$T/late.got.long") long lines, $nsent were given to it"
note "C: $nsent requests timed out with their lines queued; the agent read each whole afterwards"
expect_no_leftovers
[ -z "$problems" ] || fail "$problems"
exit 0
