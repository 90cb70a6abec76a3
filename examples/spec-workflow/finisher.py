#!/usr/bin/env python3
"""The finisher of examples/spec-workflow: an ADR-007 agent.

It writes the feature's index (paths.index), a short record of the spec
and of the notes it was given, and proceeds: the workflow ends there.
"""

import json
import sys


def handle(inp):
    """One input envelope to one output envelope."""
    ctx = inp["context"]
    with open(inp["paths"]["spec"]) as f:
        title = f.readline().strip("# \n")
    index = "\n".join([
        "# %s" % ctx["feature_id"],
        "",
        "- workflow: %s" % ctx["workflow"],
        "- spec: %s (%s)" % (inp["paths"]["spec"], title),
        "- notes: %s" % "; ".join(inp.get("prior_context", [])),
        "",
    ])
    return {"success": True,
            "summary": "Feature %s is specified." % ctx["feature_id"],
            "artifacts": [{"path": inp["paths"]["index"],
                           "operation": "create", "content": index}],
            "notes": ["Ready for planning"],
            "recommendation": "proceed"}


for line in sys.stdin:
    if line.strip():
        print(json.dumps(handle(json.loads(line))), flush=True)
