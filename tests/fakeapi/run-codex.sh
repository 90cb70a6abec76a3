#!/bin/bash
# run-codex.sh: real Codex CLI turns, offline, against the fake API.
#
#   run-codex.sh [--timeout S] PROMPT [PROMPT2 ...] [-- CODEX EXEC ARGS...]
#
# The first prompt runs as `codex exec --json --skip-git-repo-check ARGS PROMPT`;
# each further one continues the same thread with
# `codex exec --json --skip-git-repo-check ARGS resume THREAD_ID PROMPTn`
# (THREAD_ID from the first run's thread.started line).  stdin is /dev/null.
# Prints the JSONL of all runs on stdout, stderr and one summary line per
# run ("run-codex: exit=.. seconds=.. requests=..") on stderr.  Exit status:
# the last run's (77 SKIPPED when codex is not installed and cannot be).
. "$(dirname "$0")/lib.sh"
fakeapi_require codex
fakeapi_netns "$0" "$@"

secs=180 extra=() prompts=()
while [ $# -gt 0 ]; do
	case $1 in
	--timeout) secs=$2; shift 2 ;;
	--) shift; extra+=("$@"); break ;;
	*) prompts+=("$1"); shift ;;
	esac
done
[ ${#prompts[@]} -gt 0 ] || { echo "usage: run-codex.sh [--timeout S] PROMPT [PROMPT2 ...] [-- ARGS]" >&2; exit 2; }

fakeapi_setup || exit 1
trap fakeapi_teardown EXIT
cd "$FAKEAPI_CWD" || exit 1
out=$FAKEAPI_WORK/codex.jsonl
fakeapi_timed run-codex "$secs" codex exec --json --skip-git-repo-check "${extra[@]}" "${prompts[0]}" </dev/null | tee "$out"
rc=${PIPESTATUS[0]}
thread=$(sed -n 's/.*"type":"thread.started","thread_id":"\([^"]*\)".*/\1/p' "$out" | head -1)
for p in "${prompts[@]:1}"; do
	if [ -z "$thread" ]; then
		echo "run-codex: no thread id to resume" >&2
		exit 1
	fi
	fakeapi_timed run-codex "$secs" codex exec --json --skip-git-repo-check "${extra[@]}" resume "$thread" "$p" </dev/null
	rc=$?
done
exit $rc
