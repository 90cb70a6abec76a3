#!/bin/sh
# Run the model-tree example offline: the real Claude Code, Codex and
# Gemini CLIs (installed by tests/fakeapi/install.sh) against the fake API
# server, in a network namespace with only loopback.  The fake model
# follows the [[mcp:...]] markers in the goal: the planner spawns the
# worker, the worker spawns the reviewer, the reviewer says its line.
#   examples/model-tree/run-offline.sh [CORRAL [ARGS...]]
# CORRAL defaults to build/corral; ARGS to that goal, --output text and -v.
# Exit status: corral's (77: the CLIs are missing and the npm registry is
# out of reach).
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
corral=${1:-$top/build/corral}
case $corral in /*) ;; *) corral=$(pwd)/$corral ;; esac
[ $# -gt 0 ] && shift
[ -x "$corral" ] || { echo "run-offline.sh: no corral at $corral (build it first)" >&2; exit 2; }
sh "$top/tests/fakeapi/install.sh" claude codex gemini >&2 || exit $?
if [ $# -eq 0 ]; then
	review='[[mcp:spawn_agent:{\"agent\":\"reviewer\",\"task\":\"Review wc.py [[say:Looks good: it counts words, and an empty file gives 0.]]\"}]]'
	set -- --output text -v --goal "Write a word counter. [[mcp:spawn_agent:{\"agent\":\"worker\",\"task\":\"Write wc.py $review\"}]]"
fi
exec bash "$top/tests/fakeapi/with-fakeapi.sh" "$corral" run "$here/workflow.yaml" "$@"
