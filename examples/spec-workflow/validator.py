#!/usr/bin/env python3
"""The validator of examples/spec-workflow: an ADR-007 agent.

It reads the spec (paths.spec) and asks for what it lacks, one section a
try: retry, with a note "Missing: NAME" for the writer.  Once the spec has
them all but a decision, it escalates: a person must choose how users sign
in.  With the decision in the spec it proceeds.
"""

import json
import sys

REQUIRED = ["Goal", "Acceptance criteria", "Edge cases"]


def handle(inp):
    """One input envelope to one output envelope."""
    spec = inp["paths"]["spec"]
    try:
        with open(spec) as f:
            text = f.read()
    except OSError as e:
        return {"success": False, "summary": "No spec to validate: %s" % e,
                "artifacts": [], "notes": ["Missing: Goal"],
                "recommendation": "retry"}
    for name in REQUIRED:
        if "## " + name not in text:
            return {"success": False,
                    "summary": "The spec has no %s section." % name.lower(),
                    "artifacts": [], "notes": ["Missing: " + name],
                    "recommendation": "retry"}
    if "## Decision" not in text:
        return {"success": True,
                "summary": "The spec is complete but for one decision: how "
                           "do users sign in?",
                "artifacts": [],
                "notes": ["Decide the sign-in method: passwords, OAuth "
                          "(Google, GitHub), or both"],
                "recommendation": "escalate"}
    return {"success": True, "summary": "The spec is complete.",
            "artifacts": [], "notes": ["Spec complete",
                                       "%d sections" % text.count("\n## ")],
            "recommendation": "proceed"}


for line in sys.stdin:
    if line.strip():
        print(json.dumps(handle(json.loads(line))), flush=True)
