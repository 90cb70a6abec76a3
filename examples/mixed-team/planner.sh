#!/bin/sh
# The planner speaks multiagent-1.0: it plans the goal into one execute
# step, and finishes the work handed off to it (capability: summarize).
# What it reads on topic findings it keeps for its report.
finding=none
while IFS= read -r line; do
	kind=$(printf '%s' "$line" | jq -r '.corral.kind // ""' 2>/dev/null) || continue
	case "$kind" in
	message)
		finding=$(printf '%s' "$line" | jq -c '.content.data // .content.text')
		echo "planner: heard on a topic: $finding" >&2
		continue ;;
	"") ;;
	*) continue ;;
	esac
	printf '%s' "$line" | jq -e '.jsonrpc' >/dev/null 2>&1 && continue
	intent=$(printf '%s' "$line" | jq -r .intent)
	if [ "$intent" = plan ]; then
		printf '%s' "$line" | jq -c '{protocol: "multiagent-1.0", role: "agent",
		    intent: "plan", task: .task,
		    content: {type: "text", text: "one step: write the report"},
		    outputs: {next_actions: [{intent: "execute", task: "write the report"}]},
		    confidence: {score: 0.9}, trace: {parents: [.trace.id]}}'
	else
		printf '%s' "$line" | jq -c --argjson f "$finding" '{protocol: "multiagent-1.0",
		    role: "agent", intent: "finalize", task: .task,
		    content: {type: "json", text: "report finished",
		        data: {report: .content.data, handed_off_by: .handoff.from,
		               reason: .handoff.reason, finding: $f}},
		    confidence: {score: 0.9}, trace: {parents: [.trace.id]}}'
	fi
done
