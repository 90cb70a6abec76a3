#!/usr/bin/env python3
"""The writer of examples/spec-workflow: an ADR-007 agent.

For each input envelope on stdin it writes the spec (paths.spec) and
answers with one output envelope on stdout.  It creates the spec on its
first try and updates it after: it adds the sections the validator's notes
ask for ("Missing: NAME"), and a person's answer (task.params.answer) as
the decision.  It never names who comes next: it recommends proceed.
"""

import json
import os
import sys

SECTIONS = {
    "Goal": "Let users {goal}.",
    "Acceptance criteria": "- A user can {goal} in under a minute.\n"
                           "- A failed attempt says why.",
    "Edge cases": "- Five failed attempts lock the account for ten minutes.",
}


def spec_text(sections, goal):
    """The spec as markdown: a title and the sections in order."""
    out = ["# Spec: " + goal, ""]
    for name, body in sections:
        out += ["## " + name, "", body.format(goal=goal), ""]
    return "\n".join(out)


def read_sections(path):
    """The sections of an existing spec: (name, body) in order."""
    sections, name, body = [], None, []
    with open(path) as f:
        for line in f.read().splitlines():
            if line.startswith("## "):
                if name is not None:
                    sections.append((name, "\n".join(body).strip()))
                name, body = line[3:], []
            elif name is not None:
                body.append(line)
    if name is not None:
        sections.append((name, "\n".join(body).strip()))
    return sections


def handle(inp):
    """One input envelope to one output envelope."""
    spec = inp["paths"]["spec"]
    params = inp["task"]["params"]
    goal = params.get("goal", "sign in")
    notes = []
    if os.path.exists(spec):
        sections = read_sections(spec)
        operation = "update"
    else:
        sections = [("Goal", SECTIONS["Goal"])]
        operation = "create"
        notes.append("Spec drafted with its goal")
    have = {name for name, _ in sections}
    for note in inp.get("prior_context", []):
        if note.startswith("Missing: "):
            name = note[len("Missing: "):]
            if name in SECTIONS and name not in have:
                sections.append((name, SECTIONS[name]))
                have.add(name)
                notes.append("Added " + name.lower())
    if "answer" in params and "Decision" not in have:
        sections.append(("Decision", params["answer"]))
        notes.append("Recorded the decision: " + params["answer"])
    return {
        "success": True,
        "summary": "Wrote %s (iteration %d)" % (spec,
                                                inp["context"]["iteration"]),
        "artifacts": [{"path": spec, "operation": operation,
                       "content": spec_text(sections, goal)}],
        "notes": notes,
        "recommendation": "proceed",
    }


for line in sys.stdin:
    if line.strip():
        print(json.dumps(handle(json.loads(line))), flush=True)
