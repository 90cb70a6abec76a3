#!/bin/sh
# map/send addressing and its access rules.
#
#   root (role lead)           other (a root agent, visible, role reviewer)
#   |-- a-1  (hidden, role worker)
#   |-- b-2  (hidden, role worker)
#   |   `-- b1-4 (hidden)
#   `-- v-3  (visible, role worker)
#
# Allowed: child -> {parent: true}; parent -> {children: true},
# {descendants: true}, {role: worker} (its hidden children too); a ->
# {siblings: true}; b1 -> {ancestors: true}; other -> v-3 (visible) and
# {role: worker} (only v-3: the hidden ones are not reachable); other ->
# root by role.
# Not found (2001), as for an unknown id: a hidden agent the sender may
# not reach does not exist for it: other -> a-1 (a hidden child,
# unrelated sender); b1 -> a-1 (its hidden "aunt"); other may not
# map/agents/stop a-1 either, and is not told it exists.
# Refused with 1003: a hidden sender may not reach a visible agent outside
# its family (b1 -> v-3, b1 -> other).
# Not found: an address that matches no agent (2000).
# map/agents/list shows each agent only what it may reach.
. "$(dirname "$0")/tree-lib.sh"

write_wf "$T/wf.yaml" <<'YAML'
agents:
  root:
    cmd: [@TR@, --record, @REC@, --plan, @T@/root.json]
    role: lead
  other:
    cmd: [@TR@, --record, @REC@, --boot, @T@/other.json]
    role: reviewer
  a:
    cmd: [@TR@, --record, @REC@]
    autostart: false
    role: worker
  b:
    cmd: [@TR@, --record, @REC@]
    autostart: false
    role: worker
  v:
    cmd: [@TR@, --record, @REC@]
    autostart: false
    role: worker
  b1:
    cmd: [@TR@, --record, @REC@]
    autostart: false
routes:
  "*": root
YAML
# Every child waits for "release" (sent by root to its descendants once
# the checks are done), so all of them are alive while messages fly.
# Each sender's last message is the one root waits for (a-1 writes to its
# siblings before its parent): root must not release them while a sender
# still has messages to send (a starved a-1 once wrote to its siblings
# after b-2 had finished).
cat >"$T/root.json" <<'JSON'
{"steps": [
  {"spawn": {"agent": "a", "plan": {"steps": [
    {"wait_text": "to-kids"},
    {"send": {"to": {"siblings": true}, "text": "a-to-sibs"}},
    {"send": {"to": {"parent": true}, "text": "a-to-parent"}},
    {"wait_text": "release"}]}}},
  {"spawn": {"agent": "b", "plan": {"steps": [
    {"wait_text": "to-kids"},
    {"spawn": {"agent": "b1", "plan": {"steps": [
      {"send": {"to": {"ancestors": true}, "text": "b1-up"}},
      {"send": {"to": "%a", "text": "b1-to-a"}},
      {"send": {"to": "%v", "text": "b1-to-v"}},
      {"send": {"to": "%other", "text": "b1-to-other"}},
      {"send": {"to": {"siblings": true}, "text": "b1-sibs"}},
      {"list": true},
      {"send": {"to": {"ancestors": true}, "text": "b1-done"}},
      {"wait_text": "release"}]}}},
    {"wait_text": "release"},
    {"await": true}]}}},
  {"spawn": {"agent": "v", "visible": true, "plan": {"steps": [{"wait_text": "release"}]}}},
  {"send": {"to": {"children": true}, "text": "to-kids"}},
  {"wait_text": "a-to-parent"},
  {"wait_text": "b1-done"},
  {"wait_text": "other-done"},
  {"send": {"to": {"role": "worker"}, "text": "role-from-root"}},
  {"send": {"to": "nosuch", "text": "x"}},
  {"list": true},
  {"send": {"to": {"descendants": true}, "text": "release"}},
  {"await": true}]}
JSON
cat >"$T/other.json" <<'JSON'
{"steps": [
  {"send": {"to": "%a", "text": "other-to-a"}},
  {"send": {"to": {"agent": "%v"}, "text": "other-to-v"}},
  {"send": {"to": {"role": "worker"}, "text": "other-role"}},
  {"stop": "%a"},
  {"list": true},
  {"send": {"to": {"role": "lead"}, "text": "other-done"}}]}
JSON

corral_run 20 run "$T/wf.yaml" --goal go --log "$LOG" --output json -v
expect_rc 0
[ "$(rec_id a)$(rec_id b)$(rec_id v)$(rec_id b1)" = a-1b-2v-3b1-4 ] ||
    fail "expected the children a-1, b-2, v-3, b1-4: $(rec_lines "spawned ")"

# expect LINE...: each exact record line is there.
expect() {
	for l in "$@"; do
		rec_has "$l" || fail "expected the record line '$l'; record:
$(grep -v -E '^(start|task|eof) ' "$REC")"
	done
}
# got ID TEXT...: ID received exactly the messages with these texts.
got() {
	_id=$1
	shift
	_have=$(awk -v id="$_id" '$1 == "message" && $2 == id { print $4 }' "$REC" | sort | tr '\n' ' ')
	_want=
	[ $# -eq 0 ] || _want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
	[ "$_have" = "$_want" ] || fail "$_id should have received exactly: $_want; got: $_have"
}

# Family.
expect 'send_ok a-1 1 ["root"]' 'message root a-1 a-to-parent' \
    'send_ok root 3 ["a-1","b-2","v-3"]' \
    'send_ok a-1 2 ["b-2","v-3"]' \
    'send_ok b1-4 2 ["root","b-2"]' \
    'send_ok root 4 ["a-1","b-2","v-3","b1-4"]'
rec_lines 'send_ok root 3 ["a-1","b-2","v-3"]' | grep -c . | grep -qx 2 ||
    fail "root's {children: true} and {role: worker} should both reach a-1, b-2, v-3"
# Unrelated senders and hidden targets.
expect "send_error other 2001 no agent 'a-1'" \
    'send_ok other 1 ["v-3"]' 'message v-3 other other-to-v' 'message v-3 other other-role' \
    'send_ok other 1 ["root"]' 'message root other other-done' \
    'stop_error other 2001 agent not found' \
    "send_error b1-4 2001 no agent 'a-1'" \
    'send_error b1-4 1003 b1-4 may not address v-3' \
    'send_error b1-4 1003 b1-4 may not address other' \
    'send_error b1-4 2000 the address matches no agent' \
    "send_error root 2001 no agent 'nosuch'"
[ "$(rec_count 'send_ok other 1 ["v-3"]')" = 2 ] ||
    fail "other's {role: worker} should reach only v-3"
# Who got what, and nothing more.
got root a-to-parent b1-up b1-done other-done
got a-1 to-kids role-from-root release
got b-2 to-kids a-to-sibs b1-up b1-done role-from-root release
got v-3 to-kids a-to-sibs other-to-v other-role role-from-root release
got b1-4 release
got other
# What each may see.
expect 'list root root,other,a-1,b-2,v-3,b1-4' 'list b1-4 root,b-2,b1-4' \
    'list other root,other,v-3'
# The refusals are logged and audited.
log_has "agent b1-4: map/send refused: b1-4 may not address v-3" ||
    fail "no log line for b1-4's refused map/send"
n=$(audit_count -w ev=send_refused)
[ "$n" = 2 ] || fail "expected 2 send_refused audit events, got $n"
# Messages are marked as such, from their sender.
audit_count -w ev=send -w agent=v-3 -w env.corral.kind=message \
    -w env.corral.from=other >/dev/null ||
    fail "the message to v-3 should be marked corral {kind: message, from: other}"
# No message was taken for a task or a result.
[ "$(audit_count -w ev=child_result)" = 4 ] ||
    fail "expected 4 child results, got $(audit_count -w ev=child_result)"
expect_clean
exit 0
