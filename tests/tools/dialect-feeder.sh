#!/bin/sh
# A scripted agent in a dialect, for the dialect tests: it records every
# line it reads to RECORD, and writes the fixtures its RULES file names:
#   start FILE...   at start
#   TYPE FILE...    on the next message of TYPE it reads (a bus
#                   header.type or an AgentMessage type), with the ids
#                   that answer it (header.correlationId, correlationId,
#                   payload.task_id, payload.request_id,
#                   metadata.correlation_id) set to that message's, where
#                   the fixture has them
# Each rule is used once, in order.  Usage: dialect-feeder.sh RULES RECORD DIR
rules=$1 record=$2 dir=$3
used="$record.used"
: >"$used"
: >"$record"
emit() {
	jq -c --arg id "$2" '
	    def set(p): if (getpath(p) // null) != null then setpath(p; $id) else . end;
	    if $id == "" then . else
	      set(["header","correlationId"]) | set(["correlationId"])
	      | set(["payload","task_id"]) | set(["payload","request_id"])
	      | set(["metadata","correlation_id"]) end' "$dir/$1"
}
# next_rule TYPE: the first unused rule for TYPE, marked used.
next_rule() {
	n=0
	while read -r ev files; do
		n=$((n + 1))
		[ "$ev" = "$1" ] || continue
		grep -qx "$n" "$used" && continue
		echo "$n" >>"$used"
		echo "$files"
		return
	done <"$rules"
}
while fs=$(next_rule start) && [ -n "$fs" ]; do
	for f in $fs; do
		emit "$f" ""
	done
done
while IFS= read -r line; do
	printf '%s\n' "$line" >>"$record"
	type=$(printf '%s' "$line" | jq -r '.header.type // .type // ""' 2>/dev/null) || continue
	id=$(printf '%s' "$line" | jq -r '.header.messageId // .payload.task_id // .id // ""' 2>/dev/null)
	[ "$type" = HELP_REQUEST ] && id=$(printf '%s' "$line" | jq -r .id)
	for f in $(next_rule "$type"); do
		emit "$f" "$id"
	done
done
