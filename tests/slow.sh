# The SLOW factor of the tests: how many times longer than on an idle
# machine with a normal build the tests should be ready to wait.  Every
# deadline a test waits up to (lib.sh's wait_for and the waits built on
# it, the adapter tests' waits, the fake API driver's, ctest's TIMEOUT
# of each test) is multiplied by it; what a test asserts is not.  A test
# that waits for an event stops waiting as soon as the event comes, so a
# large SLOW costs time only when something is wrong.
#
# Source this file (POSIX sh); it defines:
#
#   corral_slow [SANITIZE]  print the factor: 3 for a sanitizer build
#                           (SANITIZE is "ON"), else 1, times
#                           corral_load_factor
#   corral_load_factor      print how loaded the machine is now: the
#                           1-minute load average, or the processes
#                           runnable right now (less this one) if that is
#                           higher, over the number of CPUs, rounded up;
#                           at least 1, at most 8
#   corral_slow_check VALUE succeed if VALUE is a whole number >= 1
#
# tests/check.sh computes SLOW once per pass (after the build, so the
# build's own load stands in for the tests' own) and exports it;
# tests/regress/lib.sh computes it like this when SLOW is not exported.
# An exported SLOW wins; it must be a whole number.

# Print the load factor (see above).
corral_load_factor() {
	_cpus=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null ||
	    echo 1)
	awk -v n="$_cpus" '
	    { load = $1; split($4, r, "/"); run = r[1] - 1 }
	    END {
		if (run > load) load = run
		if (n < 1) n = 1
		f = load / n
		f = (f == int(f)) ? f : int(f) + 1
		if (f < 1) f = 1
		if (f > 8) f = 8
		print f
	    }' /proc/loadavg 2>/dev/null || echo 1
}

# Print the SLOW factor for a build (SANITIZE "ON": a sanitizer build).
corral_slow() {
	_base=1
	[ "${1:-}" = ON ] && _base=3
	echo $((_base * $(corral_load_factor)))
}

# Is the argument a whole number >= 1?
corral_slow_check() {
	case $1 in
	''|*[!0-9]*|0*) return 1 ;;
	esac
	return 0
}
