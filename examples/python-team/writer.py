"""writer: turns the lead's findings into the workflow's result.

On summarize, args.entries holds one {term, definition, source} per
term.  The reply has intent finalize: a cheat sheet, one paragraph per
term, with the entries in content.data.  Confidence is 0.9 times the
share of terms that were found.
"""

from corral_agent import Agent, artifact

agent = Agent("Writer")


@agent.on("summarize")
def summarize(req):
    entries = req.param("entries", [])
    if not entries:
        return agent.error(req, "nothing to summarize", category="REJECTED")
    lines = [f"Cheat sheet: {req.param('goal', req.task)}", ""]
    missing = []
    for e in entries:
        if e.get("definition"):
            lines.append(f"- {e['term']}: {e['definition']} ({e['source']})")
        elif e.get("error"):
            lines.append(f"- {e['term']}: the lookup failed: {e['error']}")
            missing.append(e["term"])
        else:
            lines.append(f"- {e['term']}: not in the glossary")
            missing.append(e["term"])
    found = len(entries) - len(missing)
    lines += ["", f"{found} of {len(entries)} terms found."]
    sheet = "\n".join(lines)
    return agent.reply(
        req, sheet, intent="finalize", data={"entries": entries},
        confidence=round(0.9 * found / len(entries), 2),
        rationale=f"{found} of {len(entries)} terms found",
        risks=[f"no definition of {t!r}" for t in missing],
        artifacts=[artifact("report", "cheat_sheet", inline=sheet)])


agent.run()
