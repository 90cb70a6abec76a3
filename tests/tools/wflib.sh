# Helpers for the workflow regress scripts (tests/regress/wf-*.sh).
#
# Source it after lib.sh:
#   . "$(dirname "$0")/lib.sh"
#   . "$TESTDIR/tools/wflib.sh"
#
# It sets WA, the scriptable agent (tests/tools/wfagent.c), and needs jq
# to read the audit log and the envelopes (the script is SKIPPED without
# it).  The audit log helpers take the log's path; they print what is
# wrong, one problem a line, and print nothing when all is well.

: "${TESTDIR:?TESTDIR must name the tests directory (run through ctest)}"
WA="$TOOLS/wfagent"
[ -x "$WA" ] || skip "no workflow test agent at $WA"
command -v jq >/dev/null 2>&1 || skip "jq is missing (apt-get install jq)"

# The requests of a log: the events that create one, by request id.
WF_ACCEPT='.ev == "goal" or .ev == "input" or .ev == "env" or .ev == "task" or .ev == "request"'

# audit_problems LOG: check that every accepted request has exactly one
# outcome event, no outcome names an unknown request, and the run_end
# counts add up (accepted == replied + errored + expired, and each count
# matches the outcome events).
audit_problems() {
	jq -s -r '
	  [ .[] | select('"$WF_ACCEPT"') | .id ] as $acc
	  | [ .[] | select(.ev == "outcome") ] as $out
	  | [ .[] | select(.ev == "run_end") ] as $fin
	  | ( $acc | group_by(.)[] | select(length > 1)
	      | "request \(.[0]) accepted \(length) times" ),
	    ( $acc[] as $id | [ $out[] | select(.id == $id) ] | length as $n
	      | select($n != 1)
	      | "request \($id) has \($n) outcome events (expected 1)" ),
	    ( $out[] | select(.id as $id | $acc | any(.[]; . == $id) | not)
	      | "outcome for a request never accepted: \(.id)" ),
	    ( if ($fin | length) != 1 then
	        "expected one run_end event, found \($fin | length)"
	      else
	        $fin[0] as $e
	        | ($e.accepted | tonumber) as $a
	        | ($e.replied | tonumber) as $r
	        | ($e.errored | tonumber) as $x
	        | ($e.expired | tonumber) as $t
	        | ( if $a != $r + $x + $t then
	              "run_end: accepted \($a) != replied \($r) + errored \($x) + expired \($t)"
	            else empty end ),
	          ( if $a != ($acc | length) then
	              "run_end: accepted \($a) but the log shows \($acc | length) requests"
	            else empty end ),
	          ( [ $out[] | select(.outcome == "replied") ] | length
	            | select(. != $r)
	            | "run_end: replied \($r) but \(.) replied outcome events" ),
	          ( [ $out[] | select(.outcome == "error") ] | length
	            | select(. != $x)
	            | "run_end: errored \($x) but \(.) error outcome events" ),
	          ( [ $out[] | select(.outcome == "expired") ] | length
	            | select(. != $t)
	            | "run_end: expired \($t) but \(.) expired outcome events" )
	      end )
	' "$1" 2>&1
}

# expect_audit_ok LOG: fail with the audit log's problems, if any.
expect_audit_ok() {
	_p=$(audit_problems "$1")
	[ -z "$_p" ] || fail "audit log $1: $(printf '%s\n' "$_p" | head -n 5)"
}

# audit_routes LOG: one "INTENT AGENT ID" line per route event, in order.
audit_routes() {
	jq -r 'select(.ev == "route") | "\(.intent) \(.agent) \(.id)"' "$1"
}

# audit_max_concurrent LOG AGENT_PREFIX: for the agents whose id starts
# with the prefix, print "AGENT MAX" with the most requests each had in
# flight at once (route events add one, outcome and retry events of a
# request routed there take it away), then "overlap N": the largest number
# of those agents that were busy at the same moment.
audit_max_concurrent() {
	jq -r --arg p "$2" '
	  select(.ev == "route" or .ev == "outcome" or .ev == "retry")
	  | "\(.ev) \(.agent // "-") \(.id)"' "$1" |
	awk -v p="$2" '
	  $1 == "route" { at[$3] = $2; if (index($2, p) != 1) next
		n[$2]++; if (n[$2] > max[$2]) max[$2] = n[$2]
		busy = 0; for (a in n) if (n[a] > 0) busy++
		if (busy > overlap) overlap = busy; next }
	  ($3 in at) { a = at[$3]; delete at[$3]; if (index(a, p) == 1) n[a]-- }
	  END { for (a in max) print a, max[a]; print "overlap", overlap + 0 }'
}

# result_field FILE FILTER: a jq filter over the first line of FILE.
result_field() {
	head -n 1 "$1" | jq -r "$2" 2>/dev/null
}

# expect_error_result FILE CODE: FILE's first line is an error envelope
# with that content.data.code.
expect_error_result() {
	_t=$(result_field "$1" '.content.type')
	_c=$(result_field "$1" '.content.data.code')
	[ "$_t" = error ] && [ "$_c" = "$2" ] ||
	    fail "expected an error envelope with code $2, got type '$_t' code '$_c': $(head -c 400 "$1")"
}

# audit_all FILE FILTER: the jq FILTER, run on each line of an NDJSON file
# (the audit log, corral serve's output), gives at least one result and
# every result is true.  (jq -e alone looks at the last line's result.)
audit_all() {
	jq -s -e "[ .[] | $2 ] | length > 0 and all" "$1" >/dev/null 2>&1
}
