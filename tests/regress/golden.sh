#!/bin/sh
# Golden tests of `corral check` (as OpenBSD's bgpd config regress does):
# every workflow in tests/golden/ is checked from its own directory.
#
#   NAME.yaml, NAME.json      must pass: `corral check NAME` exits 0 and
#                             prints exactly "ok"; `corral check --print
#                             NAME` prints exactly NAME.ok, and again from
#                             the parent directory.  On stderr both print
#                             exactly NAME.warn (the warnings), or nothing
#                             when there is no NAME.warn
#   bad-NAME.yaml, .json      must fail: `corral check` exits 2, prints
#                             nothing on stdout and exactly bad-NAME.err on
#                             stderr; `corral run` and `corral serve` must
#                             refuse the file the same way, before starting
#                             anything (so a bad fixture gives start: a
#                             route: serve has no start warning to print)
#
# UPDATE=1 sh tests/regress/golden.sh rewrites the .ok, .warn and .err
# files from what corral prints now; review the diff before keeping it.
#
# ctest sets CORRAL (the binary) and TESTDIR (the tests directory); run by
# hand, CORRAL defaults to build/corral in the source tree.

set -u

here=$(cd "$(dirname "$0")" && pwd)
: "${TESTDIR:=$(dirname "$here")}"
: "${CORRAL:=$(dirname "$TESTDIR")/build/corral}"
GOLDEN="$TESTDIR/golden"
UPDATE="${UPDATE:-0}"

[ -x "$CORRAL" ] || { echo "SKIPPED: no corral binary at $CORRAL"; exit 77; }
[ -d "$GOLDEN" ] || { echo "golden: no directory $GOLDEN"; exit 1; }
case "$CORRAL" in
/*) ;;
*) CORRAL="$(pwd)/$CORRAL" ;;
esac

T=$(mktemp -d "${TMPDIR:-/tmp}/corral-golden.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM

# Programs are looked up on a fixed PATH, and nothing else.
PATH=/usr/local/bin:/usr/bin:/bin
export PATH
unset CORRAL_AGENT_PATH

failed=0
passed=0

# Report one failure.
fail() {
	echo "FAIL: $*"
	failed=$((failed + 1))
}

# Compare what corral printed with the expected file, or rewrite it.
compare() {
	want=$1 got=$2 what=$3
	if [ "$UPDATE" = 1 ]; then
		cp "$got" "$want"
		return 0
	fi
	if [ ! -f "$want" ]; then
		fail "$what: no expected file $(basename "$want") (UPDATE=1 makes it)"
		return 1
	fi
	if ! diff -u "$want" "$got"; then
		fail "$what: output differs from $(basename "$want")"
		return 1
	fi
	return 0
}

# Compare stderr with NAME.warn, or, without one, expect it empty.  UPDATE
# writes NAME.warn only when there are warnings.
compare_warnings() {
	want=$1 got=$2 what=$3
	if [ "$UPDATE" = 1 ]; then
		rm -f "$want"
		[ -s "$got" ] && cp "$got" "$want"
		return 0
	fi
	if [ -f "$want" ]; then
		compare "$want" "$got" "$what (stderr)"
		return
	fi
	if [ -s "$got" ]; then
		fail "$what: unexpected output on stderr (no $(basename "$want")):"
		cat "$got"
		return 1
	fi
	return 0
}

# No output may name the checkout: it must read the same everywhere.
no_checkout_paths() {
	if grep -F -e "$GOLDEN" -e "$TESTDIR" "$1" >/dev/null; then
		fail "$2: output holds an absolute path of this checkout:"
		grep -F -e "$GOLDEN" -e "$TESTDIR" "$1"
		return 1
	fi
	return 0
}

# check_refused NAME: corral run and serve refuse a bad file exactly as
# check did (its stderr is in $T/err): exit status 2, nothing on stdout.
# Should one start the agents anyway, timeout ends it (10 s x SLOW).
check_refused() {
	for cmd in run serve; do
		goal=
		[ $cmd = run ] && goal="--goal golden"
		# shellcheck disable=SC2086 # goal is two words or none
		(cd "$GOLDEN" && timeout $((10 * ${SLOW:-1})) "$CORRAL" $cmd "$1" $goal </dev/null) \
		    >"$T/out.$cmd" 2>"$T/err.$cmd"
		rc=$?
		if [ "$rc" -ne 2 ]; then
			fail "$1: corral $cmd: exit status $rc, expected 2"
			return 1
		fi
		if [ -s "$T/out.$cmd" ] || ! cmp -s "$T/err" "$T/err.$cmd"; then
			fail "$1: corral $cmd does not refuse it as check does:"
			diff -u "$T/err" "$T/err.$cmd"
			head -c 300 "$T/out.$cmd"
			return 1
		fi
	done
	return 0
}

for f in "$GOLDEN"/*.yaml "$GOLDEN"/*.json; do
	[ -f "$f" ] || continue
	name=$(basename "$f")
	base="${f%.*}"
	ok=1
	case "$name" in
	bad-*)
		(cd "$GOLDEN" && "$CORRAL" check "$name") >"$T/out" 2>"$T/err"
		rc=$?
		if [ "$UPDATE" != 1 ] && [ "$rc" -ne 2 ]; then
			fail "$name: exit status $rc, expected 2"
			ok=0
		fi
		if [ -s "$T/out" ]; then
			fail "$name: check printed on stdout for a bad file:"
			cat "$T/out"
			ok=0
		fi
		compare "$base.err" "$T/err" "$name" || ok=0
		no_checkout_paths "$T/err" "$name" || ok=0
		[ "$UPDATE" = 1 ] || check_refused "$name" || ok=0
		;;
	*)
		(cd "$GOLDEN" && "$CORRAL" check "$name") >"$T/out" 2>"$T/err"
		rc=$?
		if [ "$rc" -ne 0 ] || [ "$(cat "$T/out")" != ok ]; then
			fail "$name: corral check: exit status $rc, expected 0" \
			    "and 'ok' on stdout, got: $(head -c 300 "$T/out")"
			ok=0
		fi
		compare_warnings "$base.warn" "$T/err" "$name" || ok=0
		(cd "$GOLDEN" && "$CORRAL" check --print "$name") \
		    >"$T/out" 2>"$T/err"
		rc=$?
		if [ "$rc" -ne 0 ]; then
			fail "$name: corral check --print: exit status $rc"
			ok=0
		fi
		compare_warnings "$base.warn" "$T/err" "$name --print" || ok=0
		compare "$base.ok" "$T/out" "$name" || ok=0
		no_checkout_paths "$T/out" "$name" || ok=0
		# Relative commands resolve against the file, not the cwd.
		(cd "$GOLDEN/.." && "$CORRAL" check -p "golden/$name") \
		    >"$T/out2" 2>"$T/err2"
		rc=$?
		if [ "$rc" -ne 0 ] || ! cmp -s "$T/out" "$T/out2"; then
			fail "$name: checked from the parent directory: exit" \
			    "status $rc, or different output:"
			cat "$T/err2"
			diff -u "$T/out" "$T/out2"
			ok=0
		fi
		;;
	esac
	[ "$ok" = 1 ] && passed=$((passed + 1))
done

if [ "$UPDATE" = 1 ]; then
	echo "golden: rewrote the expected output of $passed fixtures"
	exit 0
fi
echo "golden: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
