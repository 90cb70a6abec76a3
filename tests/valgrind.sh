#!/bin/sh
# Run regress scripts with corral under valgrind's memcheck, and fail on
# any report: a memory error, a definite leak, or a failed test.
#
#   sh tests/valgrind.sh [TEST ...]       (TEST: a tests/regress name)
#   BUILD=build-x sh tests/valgrind.sh    (default BUILD=build, a normal
#                                          build: not the ASan one)
#
# corral is replaced, through $CORRAL, by a wrapper that runs
#   valgrind --leak-check=full --errors-for-leak-kinds=definite
#            --error-exitcode=99 --trace-children=no corral ...
# so every corral process is checked (valgrind follows the fork of the
# pid namespace's waiter and supervisor; the agents, exec'ed programs,
# are not traced).  Each process writes its own log; the summary adds up
# their "ERROR SUMMARY" and "definitely lost" lines.
#
# The default set leaves out, by design (name them to run them anyway):
#   - tests that measure time closely: restart backoff, heartbeats,
#     signals, stop-sigkill; and rel-chaos, which valgrind slows too much
#   - rel-hostile-deaf and rel-backpressure: their point is RSS limits,
#     which are off here
#   - spawn-failure, kill9-containment and rel-hygiene: under valgrind a
#     spawn is a real fork instead of a CLONE_VM clone, so the child
#     cannot report an exec error or its host pid back to corral
#     ("spawned (pid N)" shows the namespace pid), and the limits the
#     child sets for the agent meet valgrind's own (the agent exits 127)
#   - rel-workspace: valgrind 3.19 does not know openat2(2), so every
#     artifact is refused with "Function not implemented"
# The tests that look agents up by the logged pid run with
# CORRAL_NO_PIDNS=1, where both pids are the same.  CORRAL_SANITIZE=ON is
# set for the scripts: it turns off their RSS limits and makes their SLOW
# 3 times the machine's load factor (tests/slow.sh) unless SLOW is
# exported (SLOW=10 sh tests/valgrind.sh waits longer still);
# REL_FLOOD=20000 shrinks rel-hostile-agent's flood of 200,000 lines,
# which would take valgrind longer than the request's 60 s x SLOW.
set -u
cd "$(dirname "$0")/.." || exit 1
top=$(pwd)
BUILD=${BUILD:-build}
case "$BUILD" in
/*) ;;
*) BUILD="$top/$BUILD" ;;
esac

command -v valgrind >/dev/null 2>&1 || { echo "SKIPPED: valgrind is not installed"; exit 77; }
[ -x "$BUILD/corral" ] || {
	echo "valgrind.sh: no $BUILD/corral; build first: cmake -B build && cmake --build build" >&2
	exit 2
}
if grep -q '^CORRAL_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
	echo "valgrind.sh: $BUILD is a sanitizer build; use a normal one (BUILD=...)" >&2
	exit 2
fi

# NAME:MODE, MODE ns (pid namespace) or nons (CORRAL_NO_PIDNS=1).
DEFAULT="rel-lib:ns rel-delivery-deadline:ns
rel-delivery-breaker:ns rel-delivery-priority:ns rel-fd-exhaustion:ns
rel-hostile-stdin:ns env-allowlist:ns golden:ns handshake:ns
stop-order:ns oversize-line:ns stderr-flood:ns grandchild-shutdown:ns
rel-hostile-closeout:nons rel-delivery-retry:nons rel-hostile-agent:nons
rel-shutdown-accounting:nons zombies:nons fd-hygiene:nons wf-routing:nons
wf-serve:nons wf-limits:nons wf-audit-order:nons wf-bad-agents:nons
tree-results:nons tree-send:nons tree-limits:nons tree-depth3:nons
tree-cleanup:nons"
list=
if [ $# -gt 0 ]; then
	for t in "$@"; do
		t=${t%.sh}
		m=$(printf '%s\n' $DEFAULT | sed -n "s/^$t:\(.*\)/\1/p")
		list="$list $t:${m:-nons}"
	done
else
	list=$DEFAULT
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/corral-valgrind.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cat >"$work/corral" <<EOF
#!/bin/sh
d=\$(mktemp -d "$work/logs/run.XXXXXX")
printf '%s\n' "\$*" >"\$d/args"
exec valgrind --leak-check=full --errors-for-leak-kinds=definite \\
    --error-exitcode=99 --trace-children=no --log-file="\$d/vg.%p.log" \\
    "$BUILD/corral" "\$@"
EOF
chmod 755 "$work/corral"
mkdir "$work/logs" "$work/done"

pass=0 failed=0 skipped=0 bad=
start=$(date +%s)
for item in $list; do
	t=${item%:*}
	mode=${item#*:}
	script="$top/tests/regress/$t.sh"
	[ -f "$script" ] || { echo "valgrind.sh: no test $t" >&2; failed=$((failed + 1)); bad="$bad $t"; continue; }
	t0=$(date +%s)
	if [ "$mode" = nons ]; then
		nopidns=1
	else
		nopidns=
	fi
	env CORRAL="$work/corral" AGENTS="$BUILD/agents" TOOLS="$BUILD/tests/tools" \
	    SRCDIR="$top" TESTDIR="$top/tests" CORRAL_SANITIZE=ON REL_FLOOD=20000 \
	    ${nopidns:+CORRAL_NO_PIDNS=1} \
	    sh "$script" >"$work/$t.out" 2>&1
	rc=$?
	# Reports of this test's corral processes (their logs move to done/).
	runs=$(ls "$work/logs" | wc -l)
	errs=0
	for f in "$work"/logs/run.*; do
		[ -d "$f" ] || continue
		for l in "$f"/vg.*.log; do
			[ -f "$l" ] || continue
			n=$(sed -n 's/.*ERROR SUMMARY: \([0-9,]*\) errors.*/\1/p' "$l" | tr -d ,)
			if [ -n "$n" ] && [ "$n" -gt 0 ]; then
				errs=$((errs + n))
				echo "--- $t: valgrind report ($(cat "$f/args")):"
				sed -n '/^==[0-9]*== [A-Z ]*[a-z]/,$p' "$l" | head -n 60
			fi
		done
	done
	mkdir -p "$work/done/$t"
	mv "$work"/logs/run.* "$work/done/$t/" 2>/dev/null
	case $rc in
	0) st=passed ;;
	77) st="skipped ($(grep SKIPPED "$work/$t.out" | head -n 1))" ;;
	*) st="FAILED (exit $rc)" ;;
	esac
	[ $errs -gt 0 ] && st="$st, $errs valgrind errors"
	printf '%-26s %-5s %3ss %3s corral runs  %s\n' "$t" "$mode" \
	    $(( $(date +%s) - t0 )) "$runs" "$st"
	if [ $rc = 77 ]; then
		skipped=$((skipped + 1))
	elif [ $rc != 0 ] || [ $errs -gt 0 ]; then
		failed=$((failed + 1))
		bad="$bad $t"
		[ $rc != 0 ] && tail -n 25 "$work/$t.out" | sed 's/^/    /'
	else
		pass=$((pass + 1))
	fi
done

# Totals over every process valgrind checked.
procs=0 errors=0 lost=0 inuse=0
for l in "$work"/done/*/run.*/vg.*.log; do
	[ -f "$l" ] || continue
	grep -q 'ERROR SUMMARY' "$l" || continue	# an agent, before its exec
	procs=$((procs + 1))
	n=$(sed -n 's/.*ERROR SUMMARY: \([0-9,]*\) errors.*/\1/p' "$l" | tr -d ,)
	errors=$((errors + ${n:-0}))
	n=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$l" | tr -d , | head -n 1)
	lost=$((lost + ${n:-0}))
	n=$(sed -n 's/.*in use at exit: \([0-9,]*\) bytes.*/\1/p' "$l" | tr -d , | head -n 1)
	inuse=$((inuse + ${n:-0}))
done
runs=$(ls -d "$work"/done/*/run.* 2>/dev/null | wc -l)
echo "== valgrind: $pass passed, $failed failed, $skipped skipped in $(( $(date +%s) - start ))s;" \
    "$runs corral runs, $procs processes checked: $errors errors," \
    "$lost bytes definitely lost, $inuse bytes in use at exit (reachable)"
[ $failed -eq 0 ] || { echo "== failed:$bad"; exit 1; }
exit 0
