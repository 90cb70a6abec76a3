#!/bin/sh
# Inline children (inline_spawn: true, map/agents/spawn with "cmd"):
# several alive at once, one of them visible, all finish and the run
# ends cleanly.
#
# Regression test for two bugs fixed in f8f2505: subagent_inline_conf()
# handed out pointers into an array it later grew with realloc (every
# earlier inline child's conf dangled: ASan heap-use-after-free), and a
# visible inline child was put in cr->pools[UINT32_MAX] (SIGSEGV).  An
# inline entry is in no route, so "visible" makes no difference to it.
. "$(dirname "$0")/tree-lib.sh"

tree_wf -w 'inline_spawn: true'
cat >"$T/root.json" <<JSON
{"steps": [
  {"spawn": {"cmd": ["$TR", "--record", "$REC"], "count": 3,
             "plan": {"steps": [{"wait_text": "go"}]}}},
  {"send": {"to": {"children": true}, "text": "go"}},
  {"await": true},
  {"spawn": {"cmd": ["$TR", "--record", "$REC"], "visible": true,
             "plan": {"steps": [{"finalize": {"text": "visible"}}]}}},
  {"await": true}]}
JSON
corral_run 20 run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
[ "$RC" = 0 ] ||
    fail "the run with inline children should succeed; exit status $RC$(grep -m1 -E 'AddressSanitizer|Segmentation|double free' "$ERR" | sed 's/^/: /')"
for c in root-inline-1 root-inline-2 root-inline-3 root-inline-4; do
	audit_count -w ev=child_result -w env.corral.child=$c -w env.corral.ok=true >/dev/null ||
	    fail "root should get $c's result"
	audit_count -w ev=spawn -w agent=$c -w name=root-inline -w parent=root >/dev/null ||
	    fail "$c should be spawned as entry root-inline under root"
done
[ "$(out_get content.data.results.3.text)" = visible ] ||
    fail "root should finish with 4 results: $(out_get content.text)"
expect_clean
exit 0
