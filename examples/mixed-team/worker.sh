#!/bin/sh
# The worker speaks AgentMessage: given a task, it reports progress on
# topic:progress, asks for a code review (HELP_REQUEST, found by
# capability; asked at low priority, it is raised to its task's), and
# once helped hands the task off to an agent that can
# summarize (TASK_HANDOFF).  Its help request names a session, report-1,
# whose history it then asks corral for (REGISTRY_QUERY), and which
# agents can summarize (REGISTRY_QUERY by capability).  On the way it
# reports an error it worked around (ERROR_REPORT, medium): the task goes
# on, and the run's result carries the report.
task=
while IFS= read -r line; do
	type=$(printf '%s' "$line" | jq -r '.type // ""' 2>/dev/null) || continue
	case "$type" in
	TASK_ASSIGNMENT)
		task=$(printf '%s' "$line" | jq -r .payload.task_id)
		printf '{"id":"w-upd-%s","timestamp":"2026-01-10T14:30:00Z","from":"worker","to":"topic:progress","type":"TASK_UPDATE","payload":{"task_id":"%s","progress":"drafting"},"metadata":{"priority":"normal","retry_count":0,"max_retries":0}}\n' "$task" "$task"
		printf '{"id":"w-help-%s","timestamp":"2026-01-10T14:30:01Z","from":"worker","to":"","type":"HELP_REQUEST","payload":{"requester_id":"worker","task_id":"%s","help_type":"CODE_REVIEW","description":"review my draft","context":{"session_id":"report-1","current_state":"draft ready","attempted_solutions":[],"decisions":["draft before review"]},"urgency":"low"},"metadata":{"priority":"low","retry_count":0,"max_retries":3}}\n' "$task" "$task" ;;
	HELP_RESPONSE)
		echo "worker: help came: $(printf '%s' "$line" | jq -c .payload.response_type)" >&2
		printf '{"id":"w-sess-%s","from":"worker","to":"corral","type":"REGISTRY_QUERY","payload":{"session_id":"report-1"}}\n' "$task"
		printf '{"id":"w-find-%s","from":"worker","to":"corral","type":"REGISTRY_QUERY","payload":{"capability":"summarize"}}\n' "$task"
		printf '{"id":"w-err-%s","timestamp":"2026-01-10T14:30:02Z","from":"worker","to":"corral","type":"ERROR_REPORT","payload":{"error_id":"e-1","agent_id":"worker","task_id":"%s","error_type":"RATE_LIMIT","severity":"medium","message":"the style checker throttled us; the draft is checked by hand","context":{},"recovery_attempts":[],"suggested_actions":["check the style again later"]},"metadata":{"priority":"critical","retry_count":0,"max_retries":0}}\n' "$task" "$task"
		printf '{"id":"w-hand-%s","timestamp":"2026-01-10T14:30:02Z","from":"worker","to":"","type":"TASK_HANDOFF","payload":{"task_id":"%s","from_agent":"worker","to_agent":"","reason":"CAPABILITY_LIMIT","context":{"task_id":"%s","task_type":"execute","priority":"high","metadata":{},"dependencies":[],"history":[]},"constraints":{"required_capabilities":["summarize"]},"deadline":"2026-01-10T15:00:00Z"},"metadata":{"priority":"high","retry_count":0,"max_retries":3}}\n' "$task" "$task" "$task" ;;
	REGISTRY_RESULT)
		if printf '%s' "$line" | jq -e '.payload.session' >/dev/null 2>&1; then
			echo "worker: session report-1: $(printf '%s' "$line" | jq -c '{participants: .payload.session.participants, decisions: .payload.session.decisions, history: [.payload.session.history[].kind]}')" >&2
		else
			echo "worker: found summarize: $(printf '%s' "$line" | jq -c '[.payload.agents[].agent_id]')" >&2
		fi ;;
	TASK_HANDOFF)
		echo "worker: handoff answered: $(printf '%s' "$line" | jq -c .payload)" >&2 ;;
	TASK_UPDATE|STATUS_UPDATE)
		echo "worker: heard $(printf '%s' "$line" | jq -c .payload)" >&2 ;;
	esac
done
