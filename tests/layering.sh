#!/bin/sh
# Lower modules never call up.  docs/architecture.md lists corral's
# modules from the bottom layer to the top (the block between the
# "layers:begin" and "layers:end" markers); a module may use only the
# modules listed before it.  This reads which symbols each object file
# defines and which it uses (nm), and fails on every use of a symbol of
# a module listed later, on a module the list does not name, and on a
# name in the list with no source file.  A file NAME-PART.c that the list
# does not name is a part of module NAME (config-yaml.c is part of
# config), and its calls are that module's.  A module's private header
# (engine-int.h, config.h) may be included by its own files only.
#
# Data too: each part of struct agent (and the route's item in a request)
# is marked in src/corral.h with the module it belongs to (PART_OF), and
# the compiler refuses a name of it in another module's file.  This plants
# such a use of every part, in a file of another module (which must not
# compile) and of its own (which must), and a write to a request and to a
# job outside the engine; then it compiles every other module's file with
# requests' and jobs' fields const (CORRAL_CHECK_WRITES): only the engine
# writes them.
#
#   sh tests/layering.sh            (objects from build/, or $BUILD)
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
objs="$BUILD/CMakeFiles/corral_core.dir/src"
main="$BUILD/CMakeFiles/corral.dir/src/main.c.o"
command -v nm >/dev/null 2>&1 || { echo "SKIPPED: nm (binutils) is missing"; exit 77; }
if [ ! -d "$objs" ] || [ ! -f "$main" ]; then
	echo "SKIPPED: no object files in $BUILD (build corral first)"
	exit 77
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/corral-layering.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM

# The order, one module a line, bottom first.
sed -n '/layers:begin/,/layers:end/p' docs/architecture.md |
    sed -e '/layers:/d' -e '/^```/d' -e 's/^[^:]*://' | tr -s ' \t' '\n' |
    grep . >"$T/order"
[ -s "$T/order" ] || { echo "FAIL: no layer list in docs/architecture.md"; exit 1; }

# The module a file belongs to, in awk (a file's name without its
# directory and suffix: NAME, or NAME-PART when the list names NAME but
# not NAME-PART); ord[] holds the list.
modname='function modname(f,   p) {
	sub(/.*\//, "", f); sub(/\.[ch]$/, "", f)
	p = f; sub(/-.*/, "", p)
	return (!(f in ord) && (p in ord)) ? p : f
}'

bad=0
# Every source file's module is in the list, every name in the list has
# its source file (one awk over the names: a few processes, not five a
# file).
ls src/*.c | awk "$modname"' NR == FNR { ord[$1]; next }
	{ m = modname($0); if (!(m in ord)) printf "FAIL: module %s (src/%s.c) is not in the layer list of docs/architecture.md\n", m, m }' \
    "$T/order" - >"$T/unlisted"
ls src/*.c | sed 's|^src/||; s|\.c$||' | sort >"$T/sources"
sort "$T/order" | comm -23 - "$T/sources" |
    sed 's|.*|FAIL: the layer list names &, which has no src/&.c|' >>"$T/unlisted"
if [ -s "$T/unlisted" ]; then
	cat "$T/unlisted"
	bad=1
fi

# A module's private header (src/NAME-int.h, or src/NAME.h but corral.h)
# is included by that module's own files only.
ls src/*.h | awk "$modname"' FILENAME == ARGV[1] { ord[$1]; next }
	FILENAME == "-" { h = $0; sub(/.*\//, "", h); if (h != "corral.h") hdr[h]; next }
	/^#include "/ {
		h = $0; sub(/^#include "/, "", h); sub(/".*/, "", h)
		if ((h in hdr) && modname(FILENAME) != modname(h))
			printf "FAIL: %s includes %s, which is private to module %s\n", FILENAME, h, modname(h)
	}' "$T/order" - src/*.c src/*.h >"$T/private"
if [ -s "$T/private" ]; then
	cat "$T/private"
	bad=1
fi

# Every object: the module it is, what it defines, what it uses (one nm
# over them all, and awk: a few processes rather than ten an object).
# An nm -A line is "FILE:VALUE TYPE SYMBOL" or "FILE: U SYMBOL".
modof="$modname"'
function modof(line,   f) {
	f = line; sub(/:[^:]*$/, "", f); sub(/\.c\.o$/, "", f)
	return modname(f)
}'
nm -A --defined-only -g "$objs"/*.c.o "$main" |
    awk "$modof"' NR == FNR { ord[$1]; next } NF >= 3 { print $NF, modof($0) }' \
    "$T/order" - | sort >"$T/defs"
nm -A -u "$objs"/*.c.o "$main" |
    awk "$modof"' FILENAME == ARGV[1] { ord[$1]; next }
	FILENAME == ARGV[2] { def[$1] = def[$1] " " $2; next }
	{
		m = modof($0); f = $0; sub(/:[^:]*$/, "", f)
		if (seen[f, $NF]++) next
		n = split(def[$NF], d, " ")
		for (i = 1; i <= n; i++) if (d[i] != m) print m, d[i], $NF
	}' "$T/order" "$T/defs" - >"$T/uses"

# A use is wrong when the used module comes later in the order.
awk 'NR == FNR { rank[$1] = NR; next }
    (rank[$1] != "" && rank[$2] != "" && rank[$2] > rank[$1]) {
	printf "FAIL: %s calls up into %s (%s)\n", $1, $2, $3; bad = 1
    }
    END { exit bad }' "$T/order" "$T/uses" || bad=1

# The compiler and flags the build used, and a file of module $1 with
# the body $2 (for a parameter p of type $3) compiled with the extra
# flags $4: its diagnostics on stdout, its status returned.
cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
flags=$(sed -n 's/^C_\(DEFINES\|INCLUDES\|FLAGS\) = //p' \
    "$BUILD/CMakeFiles/corral_core.dir/flags.make" | tr '\n' ' ')
# A write through a pointer to a const field must be an error too.
qual=-Werror=discarded-qualifiers
"$cc" $qual -x c -fsyntax-only /dev/null 2>/dev/null ||
    qual=-Werror=incompatible-pointer-types-discards-qualifiers
probe() {
	printf '#include "corral.h"\nvoid probe(%s *);\nvoid\nprobe(%s *p)\n{\n\t%s;\n}\n' \
	    "$3" "$3" "$2" >"$T/probe.c"
	eval "\"\$cc\" $flags -fsyntax-only -DCORRAL_MODULE_$1 $4 -I src \"\$T/probe.c\"" 2>&1
}

# The parts: struct, member, owner (one a line).
awk '/^struct [a-z_]+ \{/ { s = $2 }
    /^\t.*PART_OF\([a-z_]+\)/ {
	m = $0; sub(/[ \t]*PART_OF.*/, "", m); sub(/.*[ \t*]/, "", m)
	o = $0; sub(/.*PART_OF\(/, "", o); sub(/\).*/, "", o)
	print s, m, o
    }' src/corral.h >"$T/parts"
[ -s "$T/parts" ] || { echo "FAIL: no PART_OF marks in src/corral.h"; bad=1; }
# Every part of struct agent has its owner.
sed -n '/^struct agent {/,/^};/p' src/corral.h | sed -n '/The parts/,$p' |
    grep -v -e 'The parts' -e '^};' -e PART_OF | grep . >"$T/unowned"
while read -r line; do
	echo "FAIL: a part of struct agent with no owner: $line"
	bad=1
done <"$T/unowned"
# Every part is probed twice: a use planted in a file of another module
# must fail for its owner, a use in its owner's file must compile.  The
# probes are batched, which saves a hundred compiles: one file holds
# every planted use, each on its own line (2N+1 for the Nth part), and
# the compiler reports every error, not only the first; one file per
# owner holds that owner's uses and compiles cleanly only if each does.
# A part that the batch does not clear is probed alone, as above, for
# the verdict and its message.
# plant FILE OWNER: write FILE, a use of every part of OWNER ("" for all).
plant() {
	echo '#include "corral.h"' >"$1"
	_pn=0
	while read -r _ps _pm _po; do
		_pn=$((_pn + 1))
		[ -n "$2" ] && [ "$_po" != "$2" ] && continue
		printf 'void probe_%d(struct %s *);\nvoid probe_%d(struct %s *p) { (void)&p->%s; }\n' \
		    "$_pn" "$_ps" "$_pn" "$_ps" "$_pm"
	done <"$T/parts" >>"$1"
}
# Report every error, however many (gcc stops at none, clang at 20).
# (clang takes -fmax-errors=0 with a warning, and ignores it).
maxerr=-fmax-errors=0
[ -z "$("$cc" $maxerr -x c -fsyntax-only /dev/null 2>&1)" ] ||
    maxerr=-ferror-limit=0
# compile FILE MODULE: compile $T/FILE as a file of MODULE, its
# diagnostics in $T/FILE.out; its status returned.
compile() {
	eval "\"\$cc\" $flags $maxerr -fsyntax-only -DCORRAL_MODULE_$2 -I src \"\$T/\$1\"" \
	    >"$T/$1.out" 2>&1
}
plant "$T/planted.c" ""
compile planted.c layering_probe
nparts=0
while read -r s m o; do
	nparts=$((nparts + 1))
	grep -qx "$o" "$T/order" || {
		echo "FAIL: struct $s's part $m belongs to $o, which is not in the layer list"
		bad=1
	}
	if [ ! -f "$T/own-$o.c" ]; then
		plant "$T/own-$o.c" "$o"
		compile "own-$o.c" "$o" && touch "$T/own-$o.ok"
	fi
	if [ -f "$T/own-$o.ok" ]; then :
	elif out=$(probe "$o" "(void)&p->$m" "struct $s" ""); then :; else
		echo "FAIL: module $o's own file cannot use its part $m of struct $s:"
		echo "$out" | head -5
		bad=1
	fi
	# An error at this part's line that names its owner.
	if grep -E "(^|/)planted\.c:$((2 * nparts + 1)):([0-9]+:)? error:" \
	    "$T/planted.c.out" | grep -q "a part of module $o\>"; then :
	elif out=$(probe layering_probe "(void)&p->$m" "struct $s" ""); then
		echo "FAIL: a planted use of $o's part $m of struct $s in another module compiled"
		bad=1
	elif ! echo "$out" | grep -q "a part of module $o"; then
		echo "FAIL: a planted use of $o's part $m of struct $s failed, but not for its owner:"
		echo "$out" | head -5
		bad=1
	fi
done <"$T/parts"

# Only the engine writes requests and jobs.
w=CORRAL_CHECK_WRITES
for sw in "struct msg:p->prio = 1:a request" "struct job:p->done = 1:a job"; do
	st=${sw%%:*}; body=${sw#*:}; what=${body#*:}; body=${body%%:*}
	if ! out=$(probe engine "$body" "$st" "-D$w"); then
		echo "FAIL: the engine cannot write $what under $w:"
		echo "$out" | head -5
		bad=1
	fi
	if probe layering_probe "$body" "$st" "-D$w" >/dev/null; then
		echo "FAIL: a planted write to $what outside the engine compiled under $w"
		bad=1
	fi
done
nw=0
for f in src/*.c; do
	m=$(basename "$f" .c)
	m=${m%%-*}
	[ "$m" = engine ] && continue
	nw=$((nw + 1))
	if ! out=$(eval "\"\$cc\" $flags -fsyntax-only -DCORRAL_MODULE_$m -D$w $qual \"\$f\"" 2>&1); then
		echo "FAIL: $f writes a request or a job (only the engine does):"
		echo "$out" | grep -e error -e '^ ' | head -6
		bad=1
	fi
done

n=$(wc -l <"$T/order")
e=$(awk '{ print $1, $2 }' "$T/uses" | sort -u | wc -l)
[ "$bad" = 0 ] && echo "layering: $n modules, $e module-to-module uses, none upward; $nparts parts, each named by its module alone; $nw files of other modules write no request or job"
exit "$bad"
