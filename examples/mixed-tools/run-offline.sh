#!/bin/sh
# Run the mixed-tools example offline: the real Claude Code and MCP server
# (installed by tests/fakeapi/install.sh), the fake API server instead of
# Anthropic's, all in a network namespace with only loopback.
#   examples/mixed-tools/run-offline.sh [CORRAL [ARGS...]]
# CORRAL defaults to build/corral.  ARGS come after --output text, -v and
# the example's goal, so they add to them or override them (--log FILE
# keeps the audit log; --goal TEXT asks something else).  Exit status:
# corral's (77: the CLIs are missing and the npm registry is out of reach).
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
corral=${1:-$top/build/corral}
case $corral in /*) ;; *) corral=$(pwd)/$corral ;; esac
[ $# -gt 0 ] && shift
[ -x "$corral" ] || { echo "run-offline.sh: no corral at $corral (build it first)" >&2; exit 2; }
sh "$top/tests/fakeapi/install.sh" claude mcp >&2 || exit $?
goal="SELECT region, SUM(amount) AS total, COUNT(*) AS orders FROM sales GROUP BY region ORDER BY total DESC"
for a in "$@"; do
	# A whole envelope from --input takes no goal besides.
	case $a in -i | --input | --input=*) goal= ;; esac
done
if [ -n "$goal" ]; then
	set -- --output text -v --goal "$goal" "$@"
else
	set -- --output text -v "$@"
fi
exec bash "$top/tests/fakeapi/with-fakeapi.sh" "$corral" run "$here/workflow.yaml" "$@"
