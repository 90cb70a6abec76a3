#!/bin/bash
# record-fixtures.sh [DIR]: run the real CLIs offline (run-*.sh) and keep
# what they print as fixtures for adapter tests: DIR/NAME.out (stdout,
# unchanged) and DIR/NAME.err (stderr, ending with the run-*.sh summary
# line "run-X: exit=.. seconds=.. requests=..").  DIR defaults to
# tests/fakeapi/fixtures.  Re-run after changing versions.sh.
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-$here/fixtures}
mkdir -p "$dir" || exit 1
rec() {
	local name=$1
	shift
	echo "record-fixtures: $name: $*" >&2
	"$@" >"$dir/$name.out" 2>"$dir/$name.err"
	tail -1 "$dir/$name.err" >&2
}
rec claude-p-text "$here/run-claude.sh" "say hello [[say:Hello from fakeapi]]"
rec claude-p-tool "$here/run-claude.sh" "run it [[tool]]"
rec claude-p-tool-denied "$here/run-claude.sh" "make a file [[tool:touch made.txt && echo created]]"
rec claude-p-tool-bypass "$here/run-claude.sh" --skip-permissions "make a file [[tool:touch made.txt && echo created]]"
rec claude-p-error529 "$here/run-claude.sh" "fail [[error529]]"
rec claude-p-error400 "$here/run-claude.sh" "fail [[error400]]"
rec claude-p-error529-retries env CLAUDE_CODE_MAX_RETRIES=2 "$here/run-claude.sh" "fail [[error529]]"
rec claude-p-sub "$here/run-claude.sh" "spawn [[sub]]"
rec claude-p-sub-fg "$here/run-claude.sh" "spawn [[sub:fg]]"
rec claude-p-partial "$here/run-claude.sh" "partial [[say:streamed words]]" -- --include-partial-messages
rec claude-stream-interrupt "$here/run-claude.sh" --stream "$here/steps/claude-two-turns-interrupt.json"
rec claude-stream-sub "$here/run-claude.sh" --stream "$here/steps/claude-sub.json"
rec codex-text-resume "$here/run-codex.sh" "hello codex" "second turn"
rec codex-tool "$here/run-codex.sh" "run it [[tool]]"
rec codex-error500 "$here/run-codex.sh" "fail [[error500]]"
rec codex-error400 "$here/run-codex.sh" "fail [[error400]]"
rec gemini-text-resume "$here/run-gemini.sh" "hello gemini" "second turn"
rec gemini-tool "$here/run-gemini.sh" --yolo "run it [[tool]]"
rec gemini-tool-no-yolo "$here/run-gemini.sh" "run it [[tool]]"
rec gemini-error500 "$here/run-gemini.sh" "fail [[error500]]"
rec gemini-error400 "$here/run-gemini.sh" "fail [[error400]]"
rec gemini-json "$here/run-gemini.sh" --format json "json [[say:hello json]]"
rec gemini-json-error400 "$here/run-gemini.sh" --format json "json [[error400]]"
rec gemini-pinned-model "$here/run-gemini.sh" "pinned" -- -m gemini-2.5-flash
rec mcp-everything "$here/run-mcp.sh"
