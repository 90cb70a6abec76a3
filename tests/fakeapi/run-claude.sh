#!/bin/bash
# run-claude.sh: one real Claude Code turn, offline, against the fake API.
#
#   run-claude.sh [--timeout S] [--skip-permissions] PROMPT [-- CLAUDE ARGS...]
#       claude -p PROMPT --output-format stream-json --verbose ARGS </dev/null
#   run-claude.sh [--timeout S] [--skip-permissions] --stream STEPS.json [-- CLAUDE ARGS...]
#       the long-lived mode: claude -p --input-format stream-json
#       --output-format stream-json --verbose ARGS, its stdin driven by
#       drive.js through STEPS.json (see drive.js; steps/ has examples)
#
# Prompt markers choose what the fake model does ([[tool]], [[error529]],
# [[sub]], [[slow]], ...: see server.js).  Prints claude's NDJSON on stdout,
# its stderr and a summary line "run-claude: exit=.. seconds=.. requests=.."
# on stderr.  Exit status: claude's (77 SKIPPED when it is not installed and
# cannot be).  FAKEAPI_KEEP=1 keeps the scratch dir with requests.log.
. "$(dirname "$0")/lib.sh"
fakeapi_require claude
fakeapi_netns "$0" "$@"

secs=180 steps="" extra=() prompt=""
while [ $# -gt 0 ]; do
	case $1 in
	--timeout) secs=$2; shift 2 ;;
	--skip-permissions) extra+=(--dangerously-skip-permissions); shift ;;
	--stream) steps=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
	--) shift; extra+=("$@"); break ;;
	*) prompt=$1; shift ;;
	esac
done
[ -n "$steps" ] || [ -n "$prompt" ] || { echo "usage: run-claude.sh [--timeout S] [--skip-permissions] (PROMPT | --stream STEPS.json) [-- ARGS]" >&2; exit 2; }

fakeapi_setup || exit 1
trap fakeapi_teardown EXIT
cd "$FAKEAPI_CWD" || exit 1
if [ -n "$steps" ]; then
	fakeapi_timed run-claude "$secs" "${FAKEAPI_NODE:-node}" "$FAKEAPI_DIR/drive.js" --timeout "$secs" "$steps" -- \
	    claude -p --input-format stream-json --output-format stream-json --verbose "${extra[@]}"
else
	fakeapi_timed run-claude "$secs" claude -p "$prompt" --output-format stream-json --verbose "${extra[@]}" </dev/null
fi
