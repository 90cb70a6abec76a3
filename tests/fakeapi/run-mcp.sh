#!/bin/bash
# run-mcp.sh: speak MCP over stdio to a real MCP server, offline.
#
#   run-mcp.sh [--timeout S] [--steps STEPS.json] [-- SERVER CMD...]
#
# Default server: the pinned @modelcontextprotocol/server-everything
# (`mcp-server-everything stdio`); default steps: steps/mcp-basic.json
# (initialize, notifications/initialized, tools/list, tools/call echo, ping,
# an unknown tool, an unknown method, close stdin).  Prints the server's
# JSON-RPC lines on stdout and drive.js's timeline plus the server's stderr
# on stderr.  Exit status: the server's (3 when an expected answer did not
# come, 77 SKIPPED when the server is not installed and cannot be).
. "$(dirname "$0")/lib.sh"
orig=("$@")
secs=90 steps=$FAKEAPI_DIR/steps/mcp-basic.json cmd=()
while [ $# -gt 0 ]; do
	case $1 in
	--timeout) secs=$2; shift 2 ;;
	--steps) steps=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
	--) shift; cmd=("$@"); break ;;
	*) echo "usage: run-mcp.sh [--timeout S] [--steps STEPS.json] [-- SERVER CMD...]" >&2; exit 2 ;;
	esac
done
[ ${#cmd[@]} -gt 0 ] || fakeapi_require mcp
fakeapi_netns "$0" "${orig[@]}"
fakeapi_setup || exit 1
trap fakeapi_teardown EXIT
cd "$FAKEAPI_CWD" || exit 1
[ ${#cmd[@]} -gt 0 ] || cmd=(mcp-server-everything stdio)
fakeapi_timed run-mcp "$secs" "${FAKEAPI_NODE:-node}" "$FAKEAPI_DIR/drive.js" --timeout "$secs" "$steps" -- "${cmd[@]}"
