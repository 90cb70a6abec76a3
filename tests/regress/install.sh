#!/bin/sh
# `cmake --install` puts the binary, the manual page and the Python agents'
# module where a prefix says.
set -u
build=$(dirname "$CORRAL")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/corral-install.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

if ! cmake --install "$build" --prefix "$tmp" >"$tmp/log" 2>&1; then
	echo "FAIL: cmake --install failed:"; cat "$tmp/log"; exit 1
fi
[ -x "$tmp/bin/corral" ] || { echo "FAIL: no $tmp/bin/corral"; exit 1; }
man=$(find "$tmp" -name corral.1 | head -n 1)
[ -n "$man" ] || { echo "FAIL: no corral.1 installed"; exit 1; }
case $man in
*/man1/corral.1) ;;
*) echo "FAIL: corral.1 installed at $man, not under man1/"; exit 1 ;;
esac
# The Python agents' module, where the installed corral looks for it.
[ -f "$tmp/share/corral/python/corral_agent.py" ] ||
    { echo "FAIL: no share/corral/python/corral_agent.py installed"; exit 1; }
# The installed binary runs and knows its version.
"$tmp/bin/corral" --version | grep -q '^corral ' ||
    { echo "FAIL: the installed corral does not run"; exit 1; }
grep -q '^\.Dt CORRAL 1' "$man" || grep -q '^\.TH CORRAL 1' "$man" ||
    { echo "FAIL: $man is not corral's manual page"; exit 1; }
exit 0
