#!/bin/sh
# Depth and fan-out limits refuse a spawn with MAP's error 4002
# (QUOTA_EXCEEDED: depth) or 4000 (EXHAUSTED: fan-out, agents alive) and a
# message naming the limit, logged and audited; nothing is started for
# it, and the parent keeps working (its later spawns succeed, its result
# comes out).
#
# Run 1, limits {tree_depth: 2, tree_children: 3}:
#   root (children: {max: 2})   3rd concurrent child refused (entry max)
#   node-1                      4th concurrent child refused (tree_children)
#   node-1's child at depth 2   its child (depth 3) refused (tree_depth)
#   node-2 (spawn limits.children 1)   2nd concurrent child refused
#   a node (spawn limits.depth 1)      its child (depth 2) refused
#   a shallow (entry children: {depth: 1})   its child refused
# After its children's results root spawns again; a finished child may
# hold its place for a moment (tree-limits-slot.sh), so it retries (for
# up to 5 s x SLOW).
# Run 2, limits {max_agents: 3}: the spawn that would make a 4th agent is
# refused; unknown agents and inline commands are refused with 3004
# (SPAWN_FAILED; corral's old code 2005 is in error.data.details).  A
# finished child counts until its process is gone, so root retries its
# last spawn for a while.
. "$(dirname "$0")/tree-lib.sh"

tree_wf -r 'children: {max: 2}' -l 'tree_depth: 2' -l 'tree_children: 3' \
    node 'shallow=children: {depth: 1}'
cat >"$T/root.json" <<JSON
{"steps": [
  {"spawn": {"agent": "node", "plan": {"steps": [
    {"wait_text": "start"},
    {"spawn": {"agent": "node", "count": 4, "plan": {"steps": [{"wait_text": "go"}]}}},
    {"send": {"to": {"children": true}, "text": "go"}},
    {"await": true},
    {"spawn": {"agent": "node", "plan": {"steps": [{"spawn": {"agent": "node"}}]}}},
    {"await": true}]}}},
  {"spawn": {"agent": "node", "limits": {"children": 1}, "plan": {"steps": [
    {"wait_text": "start"},
    {"spawn": {"agent": "node", "count": 2, "plan": {"steps": [{"wait_text": "go"}]}}},
    {"send": {"to": {"children": true}, "text": "go"}},
    {"await": true}]}}},
  {"spawn": {"agent": "node"}},
  {"send": {"to": {"children": true}, "text": "start"}},
  {"await": true},
  {"spawn": {"agent": "node", "limits": {"depth": 1}, "retry_ms": $((5000 * SLOW)),
             "plan": {"steps": [{"spawn": {"agent": "node"}}]}}},
  {"spawn": {"agent": "shallow", "retry_ms": $((5000 * SLOW)),
             "plan": {"steps": [{"spawn": {"agent": "node"}}]}}},
  {"await": true}]}
JSON

corral_run 20 run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
expect_rc 0

# expect_refused AGENT CODE MESSAGE: AGENT got CODE with MESSAGE, corral
# logged it and audited it.
expect_refused() {
	_c=$2
	set -- "$1" "$3"
	rec_has "spawn_error $1 $_c $2" ||
	    fail "$1: expected a spawn refused with $_c '$2'; $1 got: $(rec_lines "spawn_error $1 ")"
	log_has "agent $1: spawn refused: $2" ||
	    fail "$1: no log line 'agent $1: spawn refused: $2'"
	audit_count -w ev=spawn_refused -w agent="$1" -w reason="$2" >/dev/null ||
	    fail "$1: no spawn_refused audit event with reason '$2'"
}

expect_refused root 4000 "fan-out limit: root already has 2 children alive, the limit is 2"
expect_refused node-1 4000 "fan-out limit: node-1 already has 3 children alive, the limit is 3"
x=$(rec_children node-1 | tail -n 1)
[ -n "$x" ] && [ "$(rec_children node-1 | grep -c .)" = 4 ] ||
    fail "node-1 should have spawned 3 + 1 children: $(rec_children node-1)"
expect_refused "$x" 4002 "depth limit: a child of $x would be at depth 3, the limit is 2"
expect_refused node-2 4000 "fan-out limit: node-2 already has 1 children alive, the limit is 1"
d=$(rec_children root | sed -n 3p)
s=$(rec_id shallow)
expect_refused "$d" 4002 "depth limit: a child of $d would be at depth 2, the limit is 1"
expect_refused "$s" 4002 "depth limit: a child of $s would be at depth 2, the limit is 1"
n=$(audit_get -w ev=spawn_refused -p agent -p reason | sort -u | grep -c .)
[ "$n" = 6 ] || fail "expected 6 different refusals, got $n: $(audit_get -w ev=spawn_refused -p agent -p reason)"

# Nothing was started for a refused spawn: root, node-1 + 3 + 1,
# node-2 + 1, the depth-limited node and shallow.
n=$(rec_count "start ")
[ "$n" = 10 ] || fail "expected 10 agents started, got $n"
# Every parent carried on: all results ok, root finalized.
n=$(audit_count -w ev=child_result -w env.corral.ok=false)
[ "$n" = 0 ] || fail "expected no failed child, got $n"
kids=$(for i in 0 1 2 3 4; do out_get content.data.results.$i.child; done | sort | tr '\n' ' ')
want=$(printf '%s\n' - node-1 node-2 "$d" "$s" | sort | tr '\n' ' ')
[ "$kids" = "$want" ] ||
    fail "root's result should have the results of node-1, node-2, $d and $s: $(out_get content.text)"
[ "$(out_get content.data.spawn_errors.0.code)" = 4000 ] ||
    fail "root's result should list its refused spawn: $(out_get content.data.spawn_errors)"
expect_clean

# Run 2: agents alive, unknown agents, inline commands.
rm -f "$REC" "$LOG"
tree_wf -l 'max_agents: 3' node
cat >"$T/root.json" <<JSON
{"steps": [
  {"spawn": {"agent": "node", "count": 3, "plan": {"steps": [{"wait_text": "go"}]}}},
  {"spawn": {"agent": "nosuch"}},
  {"spawn": {"cmd": ["$TR", "--record", "$REC"]}},
  {"send": {"to": {"children": true}, "text": "go"}},
  {"await": true},
  {"spawn": {"agent": "node", "retry_ms": $((5000 * SLOW))}},
  {"await": true}]}
JSON
corral_run 20 run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
expect_rc 0
expect_refused root 4000 "agents limit: 3 agents are alive, the limit is 3"
rec_has "spawn_error root 3004 unknown agent 'nosuch': not in the workflow's agents:" ||
    fail "spawning an unknown agent should fail with 3004: $(rec_lines "spawn_error root 3004")"
rec_lines "spawn_error root 3004 inline commands are not allowed" | grep -q . ||
    fail "an inline command without inline_spawn should fail with 3004: $(rec_lines "spawn_error root 3004")"
kids=$(for i in 0 1 2 3; do out_get content.data.results.$i.ok; done | tr '\n' ' ')
[ "$kids" = "true true true - " ] && [ "$(out_get content.data.results.2.child)" = node-3 ] ||
    fail "root should finish with its 2 children and the one spawned after them: $(out_get content.text)"
[ "$(rec_count "start ")" = 4 ] || fail "expected 4 agents started, got $(rec_count "start ")"
expect_clean
exit 0
