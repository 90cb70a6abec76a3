#!/bin/sh
# A spawned child never gets more than its parent.  boss runs as nobody
# with at most 64 open files and spawns, through corral:
#   - an inline command (inline_spawn: true): it runs as nobody, with at
#     most 64 open files (it once ran as uid 0 with no limits);
#   - a child of a workflow entry that sets neither user nor limits: it
#     too runs as nobody with at most 64 open files.
# Each child writes `id -u` and `ulimit -n` where the test can read them.
. "$(dirname "$0")/tree-lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root to run an agent as another user"
nobody=$(id -u nobody 2>/dev/null) || skip "no user nobody"
mkdir -p "$T/o"
chmod 0777 "$T/o"
chmod 0755 "$T"

write_wf "$T/wf.yaml" <<'YAML'
inline_spawn: true
agents:
  boss:
    cmd: [@TR@, --record, @T@/o/rec, --plan, @T@/boss.json]
    user: nobody
    limits: {nofile: 64}
  free:
    cmd: [/bin/sh, -c, 'echo "$(id -u) $(ulimit -n)" > @T@/o/free; exec cat']
    autostart: false
routes:
  "*": boss
YAML

cat >"$T/boss.json" <<JSON
{"steps": [
  {"spawn": {"cmd": ["/bin/sh", "-c", "echo \"\$(id -u) \$(ulimit -n)\" > $T/o/inline; exec cat"]}},
  {"spawn": {"agent": "free"}},
  {"wait_file": "$T/o/inline"},
  {"wait_file": "$T/o/free"},
  {"finalize": {"text": "done"}}]}
JSON
chmod 0644 "$T/boss.json" "$T/wf.yaml"
REC="$T/o/rec"
corral_start run "$T/wf.yaml" --goal go --log "$LOG" -v
wait_for '[ -s "$T/o/inline" ] && [ -s "$T/o/free" ]' 20 ||
    fail "the children did not report: $(ls "$T/o")"
for c in inline free; do
	set -- $(cat "$T/o/$c")
	[ "$1" = "$nobody" ] || fail "$c child runs as uid $1, its parent as $nobody"
	[ "$2" = 64 ] || fail "$c child may open $2 files, its parent 64"
done
kill -TERM "$CORRAL_PID" 2>/dev/null || :
corral_wait 20
exit 0
