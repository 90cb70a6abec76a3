# Shared helpers for the sub-agent tree regress scripts (tree-*.sh).
#
# Source it first thing:  . "$(dirname "$0")/tree-lib.sh"
#
# It sources lib.sh (the test directory $T, cleanup, wait_for, fail, ...)
# and adds:
#   TR      the scriptable tree agent (tests/tools/treeagent.c)
#   Q       the NDJSON picker (tests/tools/treeq.c)
#   REC     the record file every treeagent of the test appends to
#   LOG     the audit log (pass --log "$LOG" to corral)
# and tree_wf, which writes the workflow most tree tests share (root runs
# the plan in $T/root.json; the entries it spawns start only then).
#
# Every agent of a test is "$TR --record $REC ...", so its argv names $T
# and lib.sh's marker search (marker_procs) finds it, and so do the
# grandchildren it forks.  The record file has one line per event (see
# treeagent.c): "start ID NAME PID" gives each agent's pid (in corral's
# pid namespace; rec_pid maps it to the host's).

. "$(dirname "$0")/lib.sh"

TR="$TOOLS/treeagent"
Q="$TOOLS/treeq"
[ -x "$TR" ] || skip "no tree agent at $TR"
[ -x "$Q" ] || skip "no treeq at $Q"
REC="$T/rec"
LOG="$T/audit.ndjson"
SUP=

# Is this exact line in the record file?
rec_has() {
	grep -qxF -- "$1" "$REC" 2>/dev/null
}

# Record lines starting with this fixed string.
rec_lines() {
	P="$1" awk 'index($0, ENVIRON["P"]) == 1' "$REC" 2>/dev/null
}

# Number of record lines starting with this fixed string.
rec_count() {
	rec_lines "$1" | grep -c . || true
}

# wait_rec LINE [TIMEOUT]: wait for an exact line in the record, or fail.
wait_rec() {
	_wr=$1
	wait_for 'rec_has "$_wr"' "${2:-10}" ||
	    fail "expected the record line '$1' within ${2:-10}s (x$SLOW); record:
$(cat "$REC" 2>/dev/null)"
}

# wait_rec_count PREFIX N [TIMEOUT]: wait for N record lines with PREFIX.
wait_rec_count() {
	_wp=$1 _wn=$2
	wait_for '[ "$(rec_count "$_wp")" -ge "$_wn" ]' "${3:-10}" ||
	    fail "expected $2 record lines '$1...' within ${3:-10}s (x$SLOW), got $(rec_count "$1"); record:
$(cat "$REC" 2>/dev/null)"
}

# rec_pid ID: the host pid of the latest start of agent ID (empty when
# it is gone: lib.sh, host_pid).
rec_pid() {
	host_pid $(awk -v id="$1" '$1 == "start" && $2 == id { p = $4 }
	    END { print p }' "$REC" 2>/dev/null)
}

# rec_children PARENT: the ids PARENT spawned, in order.
rec_children() {
	awk -v p="$1" '$1 == "spawned" && $2 == p { print $3 }' "$REC" \
	    2>/dev/null
}

# rec_id NAME: the id of the first agent of workflow entry NAME.
rec_id() {
	awk -v n="$1" '$1 == "start" && $3 == n { print $2; exit }' "$REC" \
	    2>/dev/null
}

# The host pids of every live process the tree reported: agents (each
# start), grandchildren and workers.
tree_pids() {
	host_pid $(awk '$1 == "start" || $1 == "grandchild" ||
	    $1 == "worker" { print $NF }' "$REC" 2>/dev/null | sort -u)
}

# alive_of PID...: those of the pids that are live processes (not zombies).
alive_of() {
	[ $# -gt 0 ] || return 0
	ps -o pid=,stat= -p "$(echo "$@" | tr ' ' ',')" 2>/dev/null |
	    awk '$2 !~ /^Z/ { print $1 }'
}

# expect_gone PID... : each pid is gone (or a zombie) within 5 s.
expect_gone() {
	_eg=$*
	wait_for '[ -z "$(alive_of $_eg)" ]' 5 ||
	    fail "processes should be gone: $(ps -o pid=,stat=,args= -p "$(alive_of $_eg | tr '\n' ',' | sed 's/,$//')")"
}

# Remember corral's supervisor pid (call while corral runs).
note_supervisor() {
	SUP=$(supervisor_pid)
}

# No zombie child of the supervisor (while corral runs), or of this shell.
expect_no_zombies() {
	wait_for '[ -z "$(zombies_of $$ $SUP $CORRAL_PID)" ]' 5 ||
	    fail "zombies left: $(zombies_of $$ $SUP $CORRAL_PID)"
}

# The end of every tree test: every process the tree reported is gone,
# nothing that names $T runs, and no zombie is left.
expect_clean() {
	expect_gone $(tree_pids)
	expect_no_leftovers 5
	expect_no_zombies
}

# tree_wf [-r SETTING]... [-l LIMIT]... [-w LINE]... [-R ROUTE]...
#         [ENTRY[=SETTINGS]]...
# Write $T/wf.yaml, the workflow of a tree test: the agent "root" runs the
# plan in $T/root.json and takes every request ("*": root); each ENTRY is
# an agent that runs only when spawned (autostart: false).  All of them
# are treeagents recording into $REC, with corral's default timeout times
# SLOW (timeout: 30 s x SLOW) unless their settings give one: a task that
# waits for the script (wait_file, wait_text) must not time out because
# the script is slow.
#   -r SETTING   a setting of root:         -r 'budget: {tokens: 100}'
#   -l LIMIT     one of the workflow's limits:  -l 'max_agents: 3'
#   -w LINE      a top-level line:          -w 'shutdown: parallel'
#   -R ROUTE     a route, instead of "*": root:  -R 'analyze: worker'
#   ENTRY=SETTINGS  the entry's settings, separated by ";":
#                'wa=restart: transient; stop: {grace: 200ms, timeout: 1s}'
tree_wf() {
	_tw_root= _tw_limits= _tw_top= _tw_routes=
	OPTIND=1
	while getopts r:l:w:R: _tw_o; do
		case $_tw_o in
		r) _tw_root="$_tw_root
    $OPTARG" ;;
		l) _tw_limits="$_tw_limits
  $OPTARG" ;;
		w) _tw_top="$_tw_top$OPTARG
" ;;
		R) _tw_routes="$_tw_routes
  $OPTARG" ;;
		*) fail "tree_wf: unknown option" ;;
		esac
	done
	shift $((OPTIND - 1))
	{
		printf '%s' "$_tw_top"
		case $_tw_root in
		*"
    timeout:"*) ;;
		*) _tw_root="$_tw_root
    timeout: $((30 * SLOW))s" ;;
		esac
		printf 'agents:\n  root:\n    cmd: [%s, --record, %s, --plan, %s/root.json]%s\n' \
		    "$TR" "$REC" "$T" "$_tw_root"
		for _tw_e; do
			printf '  %s:\n    cmd: [%s, --record, %s]\n    autostart: false\n' \
			    "${_tw_e%%=*}" "$TR" "$REC"
			case $_tw_e in
			*=*) printf '%s\n' "${_tw_e#*=}" | tr ';' '\n' |
			    sed 's/^ */    /' ;;
			esac
			case $_tw_e in
			*=timeout:*|*=*";timeout:"*|*=*"; timeout:"*) ;;
			*) printf '    timeout: %ss\n' $((30 * SLOW)) ;;
			esac
		done
		printf 'routes:%s\n' "${_tw_routes:-
  \"*\": root}"
		[ -z "$_tw_limits" ] || printf 'limits:%s\n' "$_tw_limits"
	} >"$T/wf.yaml"
}

# write_wf FILE: the workflow on stdin, with @TR@, @REC@ and @T@ filled in.
write_wf() {
	sed -e "s|@TR@|$TR|g" -e "s|@REC@|$REC|g" -e "s|@T@|$T|g" >"$1"
}

# out_get PATH: a value of corral's result (the first line of $OUT).
out_get() {
	head -n 1 "$OUT" | "$Q" -p "$1" -
}

# audit_get [-w COND]... -p PATH...: values from the audit log.
audit_get() {
	"$Q" "$@" "$LOG"
}

# audit_count [-w COND]...: how many audit lines match.
audit_count() {
	"$Q" -c "$@" "$LOG"
}

# Run as a script (ctest runs every *.sh), this file checks its tools.
if [ "$(basename "$0")" = tree-lib.sh ]; then
	# tree_wf writes what it says, and corral takes it.
	tree_wf -w 'shutdown: parallel' -r 'budget: {tokens: 100}' \
	    -r 'role: lead' -l 'max_agents: 3' -l 'tree_depth: 2' node \
	    'wa=restart: transient; stop: {grace: 200ms, timeout: 500ms}'
	cat >"$T/want.yaml" <<YAML
shutdown: parallel
agents:
  root:
    cmd: [$TR, --record, $REC, --plan, $T/root.json]
    budget: {tokens: 100}
    role: lead
    timeout: $((30 * SLOW))s
  node:
    cmd: [$TR, --record, $REC]
    autostart: false
    timeout: $((30 * SLOW))s
  wa:
    cmd: [$TR, --record, $REC]
    autostart: false
    restart: transient
    stop: {grace: 200ms, timeout: 500ms}
    timeout: $((30 * SLOW))s
routes:
  "*": root
limits:
  max_agents: 3
  tree_depth: 2
YAML
	diff -u "$T/want.yaml" "$T/wf.yaml" >&2 || fail "tree_wf wrote another workflow"
	"$CORRAL" check "$T/wf.yaml" >"$T/check.out" 2>&1 ||
	    fail "corral check refuses tree_wf's workflow: $(cat "$T/check.out")"
	tree_wf -r 'timeout: 5s' 'x=restart: transient; timeout: 7s'
	[ "$(grep -c 'timeout:' "$T/wf.yaml")" = 2 ] && grep -qx '    timeout: 7s' "$T/wf.yaml" ||
	    fail "tree_wf: a given timeout should replace the default: $(cat "$T/wf.yaml")"
	tree_wf -R 'plan: root' -R 'analyze: worker' worker
	[ "$(sed -n '/^routes:/,$p' "$T/wf.yaml" | tr '\n' '|')" = "routes:|  plan: root|  analyze: worker|" ] ||
	    fail "tree_wf -R: $(cat "$T/wf.yaml")"
	"$CORRAL" check "$T/wf.yaml" >"$T/check.out" 2>&1 ||
	    fail "corral check refuses tree_wf -R's workflow: $(cat "$T/check.out")"
	printf '%s\n' '{"ev":"a","x":{"y":[1,"two"]}}' 'junk' '{"ev":"b"}' >"$T/q"
	[ "$("$Q" -w ev=a -p x.y.1 -p x.y.0 -p nope "$T/q")" = "two	1	-" ] ||
	    fail "treeq picks wrongly: $("$Q" -w ev=a -p x.y.1 -p x.y.0 -p nope "$T/q")"
	[ "$("$Q" -c "$T/q")" = 2 ] || fail "treeq -c counts wrongly"
	"$Q" -w ev=c "$T/q" >/dev/null && fail "treeq selected nothing but exited 0"
	r=$(printf '%s\n' '{"protocol":"multiagent-1.0","role":"user","intent":"plan","task":"t","content":{"type":"text"},"trace":{"id":"x-1"}}' |
	    CORRAL_AGENT_ID=self CORRAL_AGENT_NAME=me "$TR" --record "$REC")
	printf '%s\n' "$r" | "$Q" -w intent=finalize -w trace.parents.0=x-1 \
	    -w content.text=self - >/dev/null || fail "treeagent did not finalize the request: $r"
	grep -q "^start self me [0-9][0-9]*$" "$REC" || fail "treeagent did not record its start: $(cat "$REC")"
	rec_has "eof self" || fail "treeagent did not record EOF: $(cat "$REC")"
	exit 0
fi
