#!/bin/bash
# run-gemini.sh: one real Gemini CLI turn, offline, against the fake API.
#
#   run-gemini.sh [--timeout S] [--yolo] [--format F] PROMPT [PROMPT2 ...] [-- GEMINI ARGS...]
#
# Runs `gemini -p PROMPT --output-format F ARGS </dev/null` (F: stream-json,
# the default, json or text; give it here, not in ARGS: two --output-format
# options make gemini fall back to text)
# (--yolo adds --approval-mode yolo, which the shell tool needs); each
# further prompt continues the same session with `--resume SESSION_ID`
# (session_id from the first run's init line).  Prints the NDJSON on stdout,
# stderr and one summary line per run ("run-gemini: exit=.. seconds=..
# requests=..") on stderr.  Exit status: the last run's (77 SKIPPED when
# gemini is not installed and cannot be).
. "$(dirname "$0")/lib.sh"
fakeapi_require gemini
fakeapi_netns "$0" "$@"

secs=180 extra=() prompts=() fmt=stream-json
while [ $# -gt 0 ]; do
	case $1 in
	--timeout) secs=$2; shift 2 ;;
	--yolo) extra+=(--approval-mode yolo); shift ;;
	--format) fmt=$2; shift 2 ;;
	--) shift; extra+=("$@"); break ;;
	*) prompts+=("$1"); shift ;;
	esac
done
[ ${#prompts[@]} -gt 0 ] || { echo "usage: run-gemini.sh [--timeout S] [--yolo] [--format F] PROMPT [PROMPT2 ...] [-- ARGS]" >&2; exit 2; }

fakeapi_setup || exit 1
trap fakeapi_teardown EXIT
cd "$FAKEAPI_CWD" || exit 1
out=$FAKEAPI_WORK/gemini.ndjson
fakeapi_timed run-gemini "$secs" gemini -p "${prompts[0]}" --output-format "$fmt" "${extra[@]}" </dev/null | tee "$out"
rc=${PIPESTATUS[0]}
session=$(sed -n 's/.*"type":"init",.*"session_id":"\([^"]*\)".*/\1/p' "$out" | head -1)
for p in "${prompts[@]:1}"; do
	if [ -z "$session" ]; then
		echo "run-gemini: no session id to resume" >&2
		exit 1
	fi
	fakeapi_timed run-gemini "$secs" gemini -p "$p" --output-format "$fmt" --resume "$session" "${extra[@]}" </dev/null
	rc=$?
done
exit $rc
