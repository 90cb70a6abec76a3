#!/bin/sh
# corral resume: a run whose corral was killed with SIGKILL goes on from
# its audit log.  The workflow is a chain of 18 requests between two sh
# agents (each reply proposes the next link), then a boss that spawns two
# sub-agents and waits for their results: 21 requests.  corral is killed
# at a different point in each of 20 runs (chosen by what the log holds:
# the k-th link routed; the boss's two tasks routed; one task answered),
# then resumed.  Each run must
#   - end with the result of a run that was never killed;
#   - lose no request: every link reached an agent, and the links the log
#     had answered never reached one again (no second model call);
#   - say which requests went twice: one redelivery record for each
#     request that was in flight, with its first trace id, and the agent
#     got it again with that id and {"corral":{"redelivery":1}};
# and one run is killed again while it resumes, and resumed again.
# Last, a log whose last line is torn is resumed from its whole lines,
# saying what it left out; a log whose run ended, or that is not a log,
# is refused (exit 2).
. "$(dirname "$0")/tree-lib.sh"

RECV="$T/recv"
GATE="$T/gate"
LINKS=18

cat >"$T/chain.sh" <<'EOF'
#!/bin/sh
# One link of a chain: records "recv STEP TRACE_ID REDELIVERY", blocks on
# the step the gate file names, and proposes the next link (the last one
# a summarize for the boss).  Each reply reports 100 tokens.  The test
# sends some 500 links through it: it starts no process for one (its
# fields cut out by parameter expansion, the gate read by read).
RECV=$1 LAST=$2 GATE=$3
me=${CORRAL_AGENT_ID:-chain}
# after TEXT KEY: v is what follows the last KEY in TEXT, up to the next
# "," or "}" (empty when TEXT has no KEY).
after() {
	case $1 in
	*"$2"*)
		v=${1##*"$2"}
		v=${v%%,*}
		v=${v%%\}*}
		;;
	*) v= ;;
	esac
}
# only CHARS: v is emptied unless it is made of CHARS (a bracket
# expression's inside: 0-9).
only() {
	case $v in
	'' | *[!$1]*) v= ;;
	esac
}
while IFS= read -r line || [ -n "$line" ]; do
	case $line in
	*'"jsonrpc"'*)
		case $line in
		*'"method":"ping"'*)
			after "$line" '"id":'
			printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$v"
			;;
		esac
		continue
		;;
	*'"kind":'*)
		continue
		;;
	esac
	# The id in the trace object: what follows "id":" in the text after
	# the last "trace":{, up to the object's end.
	id=
	case $line in
	*'"trace":{'*)
		v=${line##*'"trace":{'}
		v=${v%%\}*}
		case $v in
		*'"id":"'*) v=${v##*'"id":"'}; id=${v%%'"'*} ;;
		esac
		;;
	esac
	after "$line" '"step":'; only 0-9; step=$v
	after "$line" '"acc":"'; v=${v%%'"'*}; only 0-9.; acc=$v
	after "$line" '"redelivery":'; only 0-9; redo=$v
	: "${step:=1}"
	echo "recv $step $id ${redo:-0}" >>"$RECV"
	gate=
	read -r gate 2>/dev/null <"$GATE"
	if [ "$step" = "$gate" ]; then
		while :; do sleep 1; done
	fi
	acc=$acc$step.
	next=execute task="link $((step + 1))"
	[ $((step % 2)) = 1 ] && next=analyze
	[ "$step" -ge "$LAST" ] && next=summarize task="sum up"
	printf '{"protocol":"multiagent-1.0","role":"agent","agent":{"id":"%s","name":"chain","model":"sh","version":"1"},"timestamp":"2026-01-01T00:00:00Z","intent":"execute","task":"link %s","content":{"type":"text","text":"chain %s"},"confidence":{"score":0.9},"outputs":{"next_actions":[{"intent":"%s","task":"%s","args":{"step":%s,"acc":"%s"}}]},"trace":{"id":"%s-%s-%s","parents":["%s"],"cost":{"input_tokens":100,"output_tokens":0}}}\n' \
	    "$me" "$step" "$acc" "$next" "$task" "$((step + 1))" "$acc" \
	    "$me" "$$" "$step" "$id"
done
EOF

# The boss spawns two workers, each waiting for its own gate file, and
# finishes with both results.
cat >"$T/root.json" <<EOF
{"steps": [
  {"spawn": {"agent": "worker", "plan": {"steps": [
    {"wait_file": "$T/ga"}, {"finalize": {"text": "a"}}]}}},
  {"spawn": {"agent": "worker", "plan": {"steps": [
    {"wait_file": "$T/gb"}, {"finalize": {"text": "b"}}]}}},
  {"await": true}, {"finalize": {"text": "all done"}}]}
EOF
write_wf "$T/wf.yaml" <<EOF
start: execute
agents:
  odd:
    cmd: [sh, @T@/chain.sh, $RECV, "$LINKS", $GATE]
    timeout: $((90 * SLOW))s
  even:
    cmd: [sh, @T@/chain.sh, $RECV, "$LINKS", $GATE]
    timeout: $((90 * SLOW))s
  root:
    cmd: [@TR@, --record, @REC@, --plan, @T@/root.json]
    timeout: $((90 * SLOW))s
  worker:
    cmd: [@TR@, --record, @REC@]
    autostart: false
    timeout: $((90 * SLOW))s
routes:
  execute: odd
  analyze: even
  summarize: root
limits:
  max_steps: 50
EOF

# routes N: how many requests the log routed (route lines).
routes() {
	grep -c '"ev":"route"' "$LOG" 2>/dev/null || true
}

# corral_fg TIMEOUT ARGS...: corral_run ARGS, but corral runs in the
# foreground under timeout(1) and this shell waits for it in wait(2):
# corral_run polls for its end, three processes every 0.05 s of the 27
# runs.  It fails as corral_run does if corral outlives TIMEOUT x SLOW.
corral_fg() {
	_t=$1
	shift
	: >"$OUT"
	: >"$ERR"
	timeout -k 5 $((_t * SLOW)) "$CORRAL" "$@" </dev/null >"$OUT" 2>"$ERR"
	RC=$?
	case $RC in
	124 | 137) fail "corral $1 still running after ${_t}s (x$SLOW)" ;;
	esac
}

# reached K: link K reached its agent (a "recv K" line is in $RECV).
# The shell reads the file itself: waiting for it starts no process.
reached() {
	[ -f "$RECV" ] || return 1
	while read -r _w _k _rest; do
		[ "$_w $_k" = "recv $1" ] && return 0
	done <"$RECV"
	return 1
}

# result: the text of the result on stdout.
result() {
	out_get content.text
}

# The run never killed: its result is the one every resumed run must end
# with.
touch "$T/ga" "$T/gb"
rm -f "$GATE"
corral_fg 90 run "$T/wf.yaml" --goal go --log "$LOG" --no-control
expect_rc 0
WANT=$(result)
[ "$WANT" = "all done" ] || fail "the run never killed: result '$WANT'"
[ "$(routes)" = 21 ] || fail "the run never killed: $(routes) requests routed, not 21"
grep -q '"text":"chain 1.2.3.4.5.6.7.8.9.10.11.12.13.14.15.16.17.18."' "$LOG" ||
    fail "the chain's last link did not see every link before it"

# crash K: a run killed at point K (1..18: once link K reached its
# agent; 19: once both workers' tasks were routed; 20: once worker a's
# result is in the log, b's task routed), with its log in $LOG.
crash() {
	K=$1
	rm -f "$LOG" "$RECV" "$GATE"
	touch "$T/ga" "$T/gb"
	case $1 in
	19) rm -f "$T/ga" "$T/gb" ;;
	20) rm -f "$T/gb" ;;
	*) echo "$1" >"$GATE" ;;
	esac
	corral_start run "${CRASH_WF:-$T/wf.yaml}" --goal go --log "$LOG" \
	    --no-control
	case $1 in
	19|20) wait_for '[ "$(routes)" -ge 21 ]' 60 ||
	    fail "run $1: the workers' tasks were not routed: $(routes) routes" ;;
	*) wait_for 'reached "$K" && [ "$(routes)" -ge "$K" ]' 60 ||
	    fail "run $1: link $1 did not reach its agent" ;;
	esac
	[ "$1" = 20 ] && { wait_for 'grep -q "\"ev\":\"child_result\"" "$LOG"' 60 ||
	    fail "run 20: worker a's result is not in the log"; }
	kill -KILL "$CORRAL_PID"
	wait "$CORRAL_PID" 2>/dev/null
	CORRAL_PID=
	# Its agents die with it.
	wait_for '[ -z "$(marker_procs)" ]' 30 ||
	    fail "run $1: agents left after corral was killed: $(marker_procs)"
}

# resume K: resume the log, the gates open; the same result, and what it
# answered from the log never reached an agent again.
resume() {
	rm -f "$GATE"
	touch "$T/ga" "$T/gb"
	corral_fg 90 resume "$LOG" --no-control
	[ "$RC" = 0 ] || fail "resume after crash $1: exit $RC: $(cat "$ERR")"
	got=$(result)
	[ "$got" = "$WANT" ] || fail "resume after crash $1: result '$got', not '$WANT'"
	grep -q '"text":"chain 1.2.3.4.5.6.7.8.9.10.11.12.13.14.15.16.17.18."' "$LOG" ||
	    fail "resume after crash $1: the last link did not see every link"
	[ "$(grep -c '"ev":"job_end".*"status":"ok"' "$LOG")" = 1 ] ||
	    fail "resume after crash $1: not one job_end ok in the log"
	grep -q "\"ev\":\"run_start\".*\"resumes\":\"" "$LOG" ||
	    fail "resume after crash $1: its run_start does not say what it resumes"
}

# redelivered ID COUNT: the log has a redelivery record of ID.
redelivered() {
	grep -q "\"ev\":\"redelivery\".*\"id\":\"$1\".*\"redelivery\":$2" "$LOG"
}

# links_seen K: check $RECV after crash K and its resume: every link
# reached an agent once, link K twice, the second time with its first
# trace id and redelivery 1.  Prints link K's first trace id, or
# "FAIL: " and what is wrong.  One awk reads the file once (a grep for
# each link was 18 processes a run).
links_seen() {
	awk -v k="$1" -v links="$LINKS" '
	$1 == "recv" {
		n[$2]++
		if ($2 == k && n[$2] == 1)
			first = $3
		if ($2 == k)
			again = $3 " " $4
	}
	END {
		for (i = 1; i <= links; i++) {
			want = i == k ? 2 : 1
			if (n[i] + 0 != want) {
				printf "FAIL: link %d reached an agent %d times, not %d\n", i, n[i], want
				exit
			}
		}
		if (again != first " 1") {
			printf "FAIL: link %d came again as '\''%s'\'', not '\''%s 1'\'' (its first trace id, redelivery 1)\n", k, again, first
			exit
		}
		print first
	}' "$RECV"
}

k=1
while [ "$k" -le 20 ]; do
	crash $k
	resume $k
	if [ "$k" -le "$LINKS" ]; then
		# Every link reached an agent; those before k once, k twice,
		# the second time with its first trace id and redelivery 1.
		first=$(links_seen "$k")
		case $first in
		'' | FAIL:*) fail "crash $k: ${first#FAIL: }: $(cat "$RECV")" ;;
		esac
		redelivered "$first" 1 || fail "crash $k: no redelivery record of $first"
		[ "$(grep -c '"ev":"redelivery"' "$LOG")" = 1 ] ||
		    fail "crash $k: $(grep -c '"ev":"redelivery"' "$LOG") redelivery records, not 1"
		[ "$(grep -c '"ev":"recorded"' "$LOG")" = $((k - 1)) ] ||
		    fail "crash $k: $(grep -c '"ev":"recorded"' "$LOG") answers from the log, not $((k - 1))"
	else
		# No link again; the boss again (and its workers but a's task
		# in run 20, which the log answered).
		[ "$(grep -c '^recv ' "$RECV")" = "$LINKS" ] ||
		    fail "crash $k: links reached agents again: $(cat "$RECV")"
		want=3
		[ "$k" = 20 ] && want=2
		[ "$(grep -c '"ev":"redelivery"' "$LOG")" = "$want" ] ||
		    fail "crash $k: $(grep -c '"ev":"redelivery"' "$LOG") redelivery records, not $want: $(grep '"ev":"redelivery"' "$LOG")"
		[ "$k" = 19 ] || grep -q '"ev":"recorded","agent":"worker' "$LOG" ||
		    fail "crash 20: worker a's task was not answered from the log"
	fi
	k=$((k + 1))
done

# Killed again while it resumes: the second resume takes the answers of
# both runs before it, and sends each request in flight once more.
crash 6
echo 12 >"$GATE"
corral_start resume "$LOG" --no-control
wait_for 'grep -q "^recv 12 " "$RECV"' 60 || fail "the first resume did not reach link 12"
# Links 2, 4 and 6 are analyze routes of the killed run; the resume
# routes 2 to 12 again (2 and 4 answered from the log): link 12's route
# is the ninth.  Lines reach the log in order, so with it the answers of
# links 6 to 11 are there too.
wait_for '[ "$(grep -c "\"ev\":\"route\".*\"intent\":\"analyze\"" "$LOG")" -ge 9 ]' 60 ||
    fail "the first resume's route of link 12 is not in the log"
kill -KILL "$CORRAL_PID"
wait "$CORRAL_PID" 2>/dev/null
CORRAL_PID=
wait_for '[ -z "$(marker_procs)" ]' 30 || fail "agents left after the resume was killed"
resume 12
for i in 6 12; do
	[ "$(grep -c "^recv $i " "$RECV")" = 2 ] || fail "double crash: link $i reached an agent $(grep -c "^recv $i " "$RECV") times, not 2"
done
[ "$(grep -c '^recv ' "$RECV")" = $((LINKS + 2)) ] ||
    fail "double crash: $(grep -c '^recv ' "$RECV") links reached agents, not $((LINKS + 2))"

# A torn last line: resumed from the whole lines, saying what it dropped.
crash 9
printf '{"seq":999,"ev":"reply","id":"torn' >>"$LOG"
resume 9
log_has "the last line is cut short (it has no newline)" ||
    fail "a torn log: resume did not say it left the last line out: $(cat "$ERR")"
[ "$(grep -c "^recv 9 " "$RECV")" = 2 ] || fail "a torn log: link 9 not sent again"

# The deadline counts the time the run went before: a run that had gone
# 100 s (its last line says so) of a 60 s deadline ends at once, with the
# deadline's error, whatever the machine's speed.
crash 4
printf '{"seq":9999,"t":100.5,"ev":"note"}\n' >>"$LOG"
sed 's/^limits:$/limits:\n  deadline: 60s/' "$T/wf.yaml" >"$T/wf-deadline.yaml"
corral_fg 90 resume "$LOG" "$T/wf-deadline.yaml" --no-control
expect_rc 1
[ "$(out_get content.data.code)" = deadline ] ||
    fail "a deadline spent before: not ended by the deadline: $(cat "$OUT")"
log_has "100.5s of its deadline spent" || fail "a deadline spent before: not said: $(cat "$ERR")"

# Step counts and budgets carry over: the answers from the log count
# again, so a run bounded by max_steps, or by a token budget (each reply
# reports 100 tokens), stops where a run never killed stops: the same
# error, the same links reached.
# links: the links that reached an agent, each once, in order.
links() {
	sed -n 's/^recv \([0-9]*\) .*/\1/p' "$RECV" | sort -n -u | tr '\n' ' '
}
for limit in "max_steps: 8" "budget: {tokens: 1000}"; do
	code=${limit%%:*}
	[ "$code" = budget ] && code=budget_exceeded
	sed "s/^  max_steps: 50\$/  $limit/" "$T/wf.yaml" >"$T/wf-limit.yaml"
	rm -f "$LOG" "$RECV" "$GATE"
	corral_fg 90 run "$T/wf-limit.yaml" --goal go --log "$LOG" --no-control
	expect_rc 1
	[ "$(out_get content.data.code)" = "$code" ] ||
	    fail "$limit, never killed: not ended by $code: $(cat "$OUT")"
	want=$(links)
	CRASH_WF=$T/wf-limit.yaml crash 5
	rm -f "$GATE"
	corral_fg 90 resume "$LOG" --no-control
	expect_rc 1
	[ "$(out_get content.data.code)" = "$code" ] ||
	    fail "$limit, resumed: not ended by $code: $(cat "$OUT")"
	[ "$(links)" = "$want" ] ||
	    fail "$limit, resumed: links reached '$(links)', never killed '$want'"
	[ "$(grep -c '^recv ' "$RECV")" = $(($(echo $want | wc -w) + 1)) ] ||
	    fail "$limit, resumed: only link 5 should have gone twice: $(cat "$RECV")"
	note "$limit: links $want reached, never killed and resumed"
done

# Refused: a run that ended, a file that is not a log.
corral_fg 10 resume "$LOG" --no-control
expect_rc 2
log_has "the last run ended (run_end): there is nothing to resume" ||
    fail "an ended run: $(cat "$ERR")"
echo 'not json' >"$T/junk"
corral_fg 10 resume "$T/junk" --no-control
expect_rc 2
log_has "no run_start" || fail "a file that is not a log: $(cat "$ERR")"
exit 0
