#!/bin/sh
# corral in one minute: install what is missing, build, run the price
# tracker (examples/price-tracker/), then show what it left behind: the
# CSV it wrote and what the audit log recorded.
#
#   sh examples/demo.sh
#
# Runs from any directory.  BUILD picks the build directory (default
# build), CMAKE_ARGS adds cmake options, DEMO_DIR keeps the CSV and the
# audit log somewhere of your choice (default: a new temporary directory,
# printed at the end).  Exits 0 when the workflow succeeded.

root=$(cd "$(dirname "$0")/.." && pwd) || exit 1
cd "$root" || exit 1
BUILD=${BUILD:-build}
CMAKE_ARGS=${CMAKE_ARGS:-}
# shellcheck source=tests/setup.sh
. "$root/tests/setup.sh"

# Print a section heading.
say() {
	printf '\n== %s\n' "$*"
}

say "Checking packages"
corral_setup_packages || exit 1
say "Building into $BUILD/"
# shellcheck disable=SC2086
corral_build "$BUILD" $CMAKE_ARGS || exit 1

out=${DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/corral-demo.XXXXXX")} || exit 1
mkdir -p "$out" || exit 1
log=$out/audit.ndjson
rm -f "$log"
# The workflow's agents come from our build, whatever path: says.
case $BUILD in
/*)	CORRAL_AGENT_PATH=$BUILD/agents ;;
*)	CORRAL_AGENT_PATH=$root/$BUILD/agents ;;
esac
PRICES_DIR=$out
export CORRAL_AGENT_PATH PRICES_DIR

say "Running: $BUILD/corral run examples/price-tracker/workflow.yaml" \
    "--goal \"track prices daily\" --output text --log $log"
"$BUILD/corral" run examples/price-tracker/workflow.yaml \
    --goal "track prices daily" --output text --log "$log"
status=$?
if [ "$status" -ne 0 ]; then
	echo "demo: the workflow failed (exit status $status); see $log" >&2
	exit 1
fi

say "The CSV the executor appended to: $out/prices.csv"
if [ ! -s "$out/prices.csv" ]; then
	echo "demo: $out/prices.csv is missing" >&2
	exit 1
fi
head -n 8 "$out/prices.csv"
echo "... $(($(wc -l <"$out/prices.csv") - 1)) rows"

say "What the audit log recorded ($log)"
awk 'match($0, /"ev":"[^"]*"/) { print substr($0, RSTART + 6, RLENGTH - 7) }' \
    "$log" | sort | uniq -c | sort -rn
reflections=$(grep -c '"ev":"reflect"' "$log")
echo "reflections: $reflections"
grep '"ev":"reflect"' "$log" |
    sed -n 's/.*"agent":"\([^"]*\)".*"of":"\([^"]*\)".*"score":"\([^"]*\)".*/  reply \2 from \1 had confidence \3; sent to the critic/p'
if [ "$reflections" -eq 0 ]; then
	# Only with a reused DEMO_DIR: the previous day is then a real run.
	echo "  (none: no price moved more than 10% since the last run in $out)"
fi

say "Done.  The CSV and the audit log stay in $out"
exit 0
