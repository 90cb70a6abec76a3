#!/bin/sh
# No function in src/ is longer than 120 lines (docs/architecture.md):
# a function that long has two jobs.  Functions are written as style(9)
# says, which this reads: the name at the start of a line, the body from
# a line "{" to a line "}".  Lines of the body count, its braces do not.
#
#   sh tests/style.sh
set -u
cd "$(dirname "$0")/.."
MAX=120

awk -v max=$MAX '
    FNR == 1 { name = ""; start = 0 }
    /^[A-Za-z_][A-Za-z0-9_]*\(/ { name = $0; sub(/\(.*/, "", name) }
    /^\{$/ { if (name != "") start = FNR }
    /^\}/ {
	if (start) {
		n = FNR - start - 1
		if (n > max) {
			printf "FAIL: %s:%d: %s is %d lines long (at most %d)\n",
			    FILENAME, start, name, n, max
			bad = 1
		}
		if (n > longest) {
			longest = n
			which = name
		}
		count++
	}
	start = 0
	name = ""
    }
    END {
	if (count == 0) {
		print "FAIL: no function found in src/"
		exit 1
	}
	if (!bad)
		printf "style: %d functions, none over %d lines (the longest: %s, %d)\n",
		    count, max, which, longest
	exit bad
    }' src/*.c src/*.h
