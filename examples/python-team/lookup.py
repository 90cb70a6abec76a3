"""lookup: a child that looks one term up in a glossary file.

Usage: lookup.py GLOSSARY.  Its task carries the term in
inputs.parameters.term (or content.text).  It tells its parent which
line matched with map/send, then finalizes with the definition in
content.data: confidence 0.9 when the term is there, 0.3 when it is not.
"""

import sys

from corral_agent import Agent

agent = Agent("Lookup")
glossary = sys.argv[1] if len(sys.argv) > 1 else "glossary.txt"


@agent.on("task")
def look_up(req):
    term = (req.param("term") or req.text).strip().lower()
    with open(glossary, encoding="utf-8") as f:    # an error fails the task
        for n, line in enumerate(f, 1):
            name, sep, definition = line.partition(":")
            if line.startswith("#") or not sep or name.strip().lower() != term:
                continue
            where = f"{glossary}:{n}"
            agent.send_to_parent(agent.envelope(
                "retrieve", "Progress", f"found {term!r} at {where}"))
            return agent.reply(
                req, f"{term}: {definition.strip()}",
                data={"term": term, "definition": definition.strip(),
                      "source": where},
                confidence=0.9, rationale="an exact entry of the glossary")
    return agent.reply(
        req, f"{term}: not in the glossary",
        data={"term": term, "definition": None, "source": glossary},
        confidence=0.3, rationale="no entry", risks=[f"{term!r} is unknown"])


agent.run()
