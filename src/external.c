/*
 * External agents: agents that run inside a wrapped tool's own process,
 * such as the sub-agents Claude Code starts with its Task tool
 * (docs/subagents.md, "Agents inside a CLI").
 *
 * corral did not start them and cannot signal them, so they are not
 * struct agents: nothing that stops, restarts, suspends or routes to
 * agents can reach them.  An adapter tells this module when one starts,
 * what it does (tool calls, tokens) and how it ends; the module keeps the
 * records, writes the external_agent audit events corral tree draws, and
 * tells its observer (mapview.c, which shows them to MAP clients as
 * virtual agents under the agent they run in).  One may start another
 * (Claude Code offers its Agent tool to its sub-agents too): the inner
 * one is drawn under the one that started it, inside the same agent.
 * Ended ones are kept, a few per agent, so that the live tree shows what
 * happened; all of an agent's go when the agent does.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

#define EXTERNAL_KEEP	32	/* ended ones kept per agent */

static TAILQ_HEAD(, external)	 external_all =
				    TAILQ_HEAD_INITIALIZER(external_all);
static external_cb		 external_observer;

/* Register who hears of every change: mapview.c. */
void
external_on_change(external_cb cb)
{
	external_observer = cb;
}

/* Tell the observer. */
static void
external_tell(struct external *x, enum external_change what)
{
	if (external_observer != NULL)
		external_observer(x, what);
}

/* The first external agent, in the order they started. */
struct external *
external_first(void)
{
	return TAILQ_FIRST(&external_all);
}

/* The next one. */
struct external *
external_next(struct external *x)
{
	return TAILQ_NEXT(x, entry);
}

/* The external agent with this id, or NULL. */
struct external *
external_find(const char *id)
{
	struct external	*x;

	TAILQ_FOREACH(x, &external_all, entry)
		if (strcmp(x->id, id) == 0)
			return x;
	return NULL;
}

/* Its parent in the tree: the one that started it, else its agent. */
const char *
external_parent(const struct external *x)
{
	return x->up != NULL ? x->up : x->parent;
}

/*
 * How deep it is inside its agent: 1 when the CLI's own model started
 * it, 2 when one of those did, and so on.
 */
unsigned int
external_depth(const struct external *x)
{
	unsigned int	d = 1;

	/* The chain ends at its agent; it cannot loop (see start). */
	while (x->up != NULL && (x = external_find(x->up)) != NULL)
		d++;
	return d;
}

/* Return nonzero while it runs. */
int
external_running(const struct external *x)
{
	return strcmp(x->state, "BUSY") == 0;
}

/* The audit event corral tree reads (docs/auditlog.md). */
static void
external_audit(struct external *x, const char *why)
{
	json_t	*f;

	if (!auditlog_enabled())
		return;
	f = json_pack("{s:s, s:s, s:s, s:s}", "parent", external_parent(x),
	    "name", x->name, "state", x->state, "kind", x->kind);
	if (x->up != NULL)
		json_object_set_new(f, "inside", json_string(x->parent));
	if (x->request != NULL)
		json_object_set_new(f, "request", json_string(x->request));
	if (!external_running(x)) {
		json_object_set_new(f, "tokens", json_integer(
		    (json_int_t)external_tokens(x)));
		json_object_set_new(f, "tool_calls", json_integer(
		    (json_int_t)external_tool_calls(x)));
		if (why != NULL)
			json_object_set_new(f, "reason", json_string(why));
	}
	auditlog_json("external_agent", x->id, f);
}

/* Free one record. */
static void
external_free(struct external *x)
{
	free(x->id);
	free(x->parent);
	free(x->up);
	free(x->name);
	free(x->kind);
	free(x->type);
	free(x->request);
	free(x->last_tool);
	free(x);
}

/* Forget one, telling the observer first. */
static void
external_remove(struct external *x)
{
	external_tell(x, EXTERNAL_GONE);
	TAILQ_REMOVE(&external_all, x, entry);
	external_free(x);
}

/* Return nonzero if another record names x as the one that started it. */
static int
external_has_inner(const struct external *x)
{
	struct external	*y;

	TAILQ_FOREACH(y, &external_all, entry)
		if (y->up != NULL && strcmp(y->up, x->id) == 0)
			return 1;
	return 0;
}

/*
 * Keep at most EXTERNAL_KEEP ended ones of an agent: the newest, and
 * those that started one still kept (the tree would lose a level).
 */
static void
external_trim(const char *parent)
{
	struct external	*x, *next;
	unsigned int	 ended = 0;

	TAILQ_FOREACH(x, &external_all, entry)
		if (strcmp(x->parent, parent) == 0 && !external_running(x))
			ended++;
	TAILQ_FOREACH_SAFE(x, &external_all, entry, next) {
		if (ended <= EXTERNAL_KEEP)
			break;
		if (strcmp(x->parent, parent) == 0 && !external_running(x) &&
		    !external_has_inner(x)) {
			external_remove(x);
			ended--;
		}
	}
}

/*
 * An agent inside agent parent's tool started: id (unique in the run),
 * name (what it does), kind (what made it: "claude-task"), type (its
 * kind of sub-agent, or NULL), the request it works for (or NULL), and
 * up: the one inside the same agent that started it (or NULL: the tool
 * itself did).  An up that is not a known one of the same agent is
 * ignored, so the chain always ends at the agent.
 */
struct external *
external_start(const char *parent, const char *id, const char *name,
    const char *kind, const char *type, const char *request, const char *up)
{
	struct external	*x, *u;

	if ((x = external_find(id)) != NULL)
		return x;
	if (up != NULL && ((u = external_find(up)) == NULL ||
	    strcmp(u->parent, parent) != 0))
		up = NULL;
	x = xcalloc(1, sizeof *x);
	x->id = xstrdup(id);
	x->parent = xstrdup(parent);
	x->up = up != NULL ? xstrdup(up) : NULL;
	x->name = xstrdup(name != NULL ? name : "sub-agent");
	x->kind = xstrdup(kind);
	x->type = type != NULL ? xstrdup(type) : NULL;
	x->request = request != NULL ? xstrdup(request) : NULL;
	x->state = "BUSY";
	x->started_ms = x->active_ms = event_now_ms();
	TAILQ_INSERT_TAIL(&external_all, x, entry);
	external_audit(x, NULL);
	external_tell(x, EXTERNAL_STARTED);
	return x;
}

/* It called a tool. */
void
external_tool(struct external *x, const char *tool)
{
	x->tools_seen++;
	free(x->last_tool);
	x->last_tool = tool != NULL ? xstrdup(tool) : NULL;
	x->active_ms = event_now_ms();
	external_tell(x, EXTERNAL_UPDATED);
}

/*
 * What its tool reported it used so far: tokens (<0: not said) and tool
 * calls (<0: not said); add_tokens: tokens seen in one of its messages.
 */
void
external_usage(struct external *x, double tokens, double tool_calls,
    double add_tokens)
{
	if (tokens >= 0)
		x->tokens_said = tokens;
	if (tool_calls >= 0)
		x->tools_said = (unsigned int)tool_calls;
	x->tokens_seen += add_tokens;
	x->active_ms = event_now_ms();
	external_tell(x, EXTERNAL_UPDATED);
}

/* The tokens it used: what its tool said, or what we saw, the larger. */
double
external_tokens(const struct external *x)
{
	return x->tokens_said > x->tokens_seen ? x->tokens_said :
	    x->tokens_seen;
}

/* The tool calls it made, likewise. */
unsigned int
external_tool_calls(const struct external *x)
{
	return x->tools_said > x->tools_seen ? x->tools_said : x->tools_seen;
}

/* Mark one ended (external_end without the trim). */
static void
external_ended(struct external *x, const char *state, const char *why)
{
	x->state = strcmp(state, "STOPPED") == 0 ? "STOPPED" : "FAILED";
	x->stopped_ms = x->active_ms = event_now_ms();
	external_audit(x, why);
	external_tell(x, EXTERNAL_ENDED);
}

/* It ended: state is STOPPED (it finished) or FAILED, why may be NULL. */
void
external_end(struct external *x, const char *state, const char *why)
{
	char	*parent;

	if (!external_running(x))
		return;
	external_ended(x, state, why);
	parent = xstrdup(x->parent);
	external_trim(parent);
	free(parent);
}

/*
 * The tool of agent parent ended or restarted: what ran inside it has
 * ended too, failed.
 */
void
external_parent_ended(const char *parent, const char *why)
{
	struct external	*x;

	TAILQ_FOREACH(x, &external_all, entry)
		if (strcmp(x->parent, parent) == 0 && external_running(x))
			external_ended(x, "FAILED", why);
	external_trim(parent);
}

/* Agent parent is going away: forget every one of it. */
void
external_forget(const char *parent)
{
	struct external	*x, *next;

	external_parent_ended(parent, "its agent stopped");
	TAILQ_FOREACH_SAFE(x, &external_all, entry, next)
		if (strcmp(x->parent, parent) == 0)
			external_remove(x);
}
