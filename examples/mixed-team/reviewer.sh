#!/bin/sh
# The reviewer speaks the collaboration bus: it answers each REQUEST
# (a help request, here) with a RESPONSE, after publishing what it found
# to topic:findings.  It hears the worker's progress on topic:progress.
n=0
while IFS= read -r line; do
	type=$(printf '%s' "$line" | jq -r '.header.type // ""' 2>/dev/null) || continue
	case "$type" in
	REQUEST)
		n=$((n + 1))
		id=$(printf '%s' "$line" | jq -r .header.messageId)
		printf '{"header":{"messageId":"finding-%s","type":"PUBLISH","source":"reviewer","destination":"topic:findings","priority":2},"body":{"event":"ReviewDone","data":{"severity":"LOW","description":"naming could be clearer"}}}\n' "$n"
		printf '{"header":{"messageId":"resp-%s","correlationId":"%s","type":"RESPONSE","source":"reviewer","destination":"worker","priority":3},"body":{"status":"SUCCESS","result":{"verdict":"approve","notes":["naming could be clearer"]},"error":null}}\n' "$n" "$id" ;;
	PUBLISH)
		echo "reviewer: heard $(printf '%s' "$line" | jq -c .body)" >&2 ;;
	esac
done
