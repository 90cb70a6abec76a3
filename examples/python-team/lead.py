"""lead: turns a goal into lookups, one child per term, and hands the
findings to the writer.

On plan, the goal's terms (after a colon, split at commas and "and") are
looked up in parallel: one lookup child per term, spawned with
map/agents/spawn.  When a limit refuses a spawn (too many children at
once), the lead waits for a running child and tries again.  While it
waits, the children's progress messages (map/send) arrive and are noted.
The reply proposes one summarize action whose args carry every finding.
"""

import re

from corral_agent import E_LIMIT, Agent, CallError, action

agent = Agent("Lead", ready="handshake")
progress = []       # the children's messages, in arrival order


@agent.on_message
def note_progress(msg):
    progress.append(f"{msg.sender}: {msg.text}")
    agent.log(f"progress from {msg.sender}: {msg.text}")


def terms_of(goal):
    """The terms of "explain: a, b and c"."""
    _, _, rest = goal.rpartition(":")
    parts = re.split(r",|\band\b", rest)
    return [p.strip().lower() for p in parts if p.strip()]


@agent.on("plan")
def plan(req):
    goal = req.text or req.task
    terms = terms_of(goal)
    if not terms:
        return agent.error(req, f"no terms to look up in {goal!r}",
                           category="REJECTED")
    progress.clear()
    children, results, term_of = [], [], {}
    for term in terms:
        task = agent.envelope("retrieve", f"Look up {term}", term,
                              params={"term": term})
        while True:
            try:
                child = agent.spawn("lookup", task, timeout=10)
                break
            except CallError as e:
                if e.code != E_LIMIT or not children:
                    raise
                # Too many children at once: wait for the oldest.
                results += agent.wait([children.pop(0)])
        children.append(child)
        term_of[child.task] = term
    results += agent.wait(children)

    order = list(term_of)      # task ids in the order of the goal's terms
    results.sort(key=lambda r: order.index(r.spawn))
    # A failed child (an error, a crash, a timeout) is an error result.
    entries = [r.data if r.ok and isinstance(r.data, dict) else
               {"term": term_of[r.spawn], "definition": None,
                "error": r.text}
               for r in results]
    found = sum(1 for e in entries if e.get("definition"))
    return agent.reply(
        req, f"Looked up {len(terms)} terms: {found} found, "
        f"{len(progress)} progress messages.",
        confidence=0.9,
        rationale="every child answered",
        next_actions=[action("summarize", "Write the cheat sheet",
                             {"goal": goal, "entries": entries})])


agent.run()
