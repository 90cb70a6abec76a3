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

# The module a source file belongs to.
module_of() {
	_m=$1
	if ! grep -qx "$_m" "$T/order" && grep -qx "${_m%%-*}" "$T/order"; then
		_m=${_m%%-*}
	fi
	echo "$_m"
}

bad=0
for f in src/*.c; do
	m=$(module_of "$(basename "$f" .c)")
	grep -qx "$m" "$T/order" || {
		echo "FAIL: module $m (src/$m.c) is not in the layer list of docs/architecture.md"
		bad=1
	}
done
while read -r m; do
	[ -f "src/$m.c" ] || { echo "FAIL: the layer list names $m, which has no src/$m.c"; bad=1; }
done <"$T/order"

# A module's private header (src/NAME-int.h, or src/NAME.h but corral.h)
# is included by that module's own files only.
for h in src/*.h; do
	hn=$(basename "$h")
	[ "$hn" = corral.h ] && continue
	hm=$(module_of "$(basename "$hn" .h)")
	for f in $(grep -l "^#include \"$hn\"" src/*.c src/*.h); do
		fm=$(module_of "$(basename "$f" | sed 's/\.[ch]$//')")
		[ "$fm" = "$hm" ] && continue
		echo "FAIL: $f includes $hn, which is private to module $hm"
		bad=1
	done
done

# Every object: the module it is, what it defines, what it uses.
for o in "$objs"/*.c.o "$main"; do
	m=$(module_of "$(basename "$o" .c.o)")
	nm --defined-only -g "$o" | awk -v m="$m" 'NF == 3 { print $3, m }'
done | sort >"$T/defs"
for o in "$objs"/*.c.o "$main"; do
	m=$(module_of "$(basename "$o" .c.o)")
	nm -u "$o" | awk '{ print $2 }' | sort -u | join - "$T/defs" |
	    awk -v m="$m" '$2 != m { print m, $2, $1 }'
done >"$T/uses"

# A use is wrong when the used module comes later in the order.
awk 'NR == FNR { rank[$1] = NR; next }
    (rank[$1] != "" && rank[$2] != "" && rank[$2] > rank[$1]) {
	printf "FAIL: %s calls up into %s (%s)\n", $1, $2, $3; bad = 1
    }
    END { exit bad }' "$T/order" "$T/uses" || bad=1

n=$(wc -l <"$T/order")
e=$(awk '{ print $1, $2 }' "$T/uses" | sort -u | wc -l)
[ "$bad" = 0 ] && echo "layering: $n modules, $e module-to-module uses, none upward"
exit "$bad"
