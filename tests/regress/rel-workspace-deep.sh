#!/bin/sh
# A refused artifact leaves nothing behind, and paths are bounded before
# corral touches the disk.
#   - a path 3000 directories deep (d/d/.../f) is refused, and no
#     directory d is left in the workspace (corral once made all 3000);
#   - limits: 32 components (31 directories and the file) are written,
#     33 are refused, and so are a path longer than 1024 bytes and a
#     component longer than 255 bytes, none leaving anything behind;
#   - update of a missing file in missing directories is refused and makes
#     no directory;
#   - (as root, on a 64 KiB tmpfs mounted inside the workspace) a write
#     that fails for lack of space is refused and removes the directories
#     it made and its temporary file.
. "$(dirname "$0")/rel-lib.sh"

W="$T/ws"
mkdir "$W"

# rep N STR: STR N times.
rep() {
	awk -v n="$1" -v s="$2" 'BEGIN { for (i = 0; i < n; i++) printf "%s", s }'
}
deep="$(rep 3000 d/)f"
ok32="$(rep 31 a/)f"
no33="$(rep 32 b/)f"
long="c/$(rep 10 "$(rep 200 x)/")f"
comp="e/$(rep 256 y)/f"

FULL=
if [ "$(id -u)" = 0 ] && mkdir "$W/full" &&
    mount -t tmpfs -o size=64k tmpfs "$W/full" 2>"$T/mount.err"; then
	FULL="$W/full"
	# At exit: kill what may hold the tmpfs, unmount it (lazily if it
	# is still busy), then the usual cleanup.
	trap 'for p in $CORRAL_PID $(marker_pids); do kill -9 "$p" 2>/dev/null; done
	    umount "$FULL" 2>/dev/null || umount -l "$FULL"; cleanup' EXIT
	big=$(rep 100000 z)
else
	note "SKIPPED part: the full-disk case needs root and a tmpfs mount ($(cat "$T/mount.err" 2>/dev/null))"
	rmdir "$W/full" 2>/dev/null
fi

{
	ws_reply "{\"path\":\"$deep\",\"content\":\"x\"}"
	ws_reply "{\"path\":\"$ok32\",\"content\":\"ok\"},{\"path\":\"$no33\",\"content\":\"x\"}"
	ws_reply "{\"path\":\"$long\",\"content\":\"x\"},{\"path\":\"$comp\",\"content\":\"x\"}"
	ws_reply '{"path":"n1/n2/missing.txt","content":"x","operation":"update"}'
	[ -n "$FULL" ] && ws_reply "{\"path\":\"full/n1/n2/big.txt\",\"content\":\"$big\"}"
} >"$T/script"

ws_serve
refused() {	# WHAT LOG-TEXT
	_p=$2
	wait_for 'grep -qF "corral: agent w: artifact refused: $_p" "$ERR"' 5 ||
	    fail "$1: no 'artifact refused: $2' in the log; saw: $(grep -F 'artifact' "$ERR" | tail -n 3 | cut -c1-200)"
}
# events N: wait until the audit log holds N artifact events.
events() {
	_k=$1
	wait_for '[ "$(aud_count artifact)" -ge "$_k" ]' 5 ||
	    fail "expected $1 artifact events by now, the audit log has $(aud_count artifact)"
}
absent() {	# WHAT PATH
	[ -e "$W/$2" ] && fail "$1: $2 was left behind in the workspace"
	return 0
}

ws_step "3000 levels"
events 1
absent "3000 levels" d
refused "3000 levels" "the path has more than 32 components"
absent "3000 levels" d

ws_step "32 and 33 components"
events 3
absent "33 components" b
wait_for '[ "$(cat "$W/$ok32" 2>/dev/null)" = ok ]' 5 ||
    fail "a path of 32 components was not written"
refused "33 components" "the path has more than 32 components"
absent "33 components" b

ws_step "long path, long component"
events 5
absent "long path" c
absent "long component" e
refused "long path" "the path is longer than 1024 bytes"
refused "long component" "a path component is longer than 255 bytes"
absent "long path" c
absent "long component" e

ws_step "update in missing directories"
events 6
absent "update in missing directories" n1
refused "update in missing directories" "n1/n2/missing.txt: No such file or directory"
absent "update in missing directories" n1

if [ -n "$FULL" ]; then
	ws_step "no space left"
	events 7
	absent "no space left" full/n1
	refused "no space left" "full/n1/n2/big.txt: No space left on device"
	absent "no space left" full/n1
	left=$(ls -A "$FULL" | tr '\n' ' ')
	[ -z "$left" ] || fail "no space left: files left on the full disk: $left"
fi

serve_eof
corral_wait 10
expect_rc 0
[ "$(aud_count artifact outcome written)" -eq 1 ] ||
    fail "expected 1 artifact event written, got $(aud_count artifact outcome written)"
expect_no_leftovers
exit 0
