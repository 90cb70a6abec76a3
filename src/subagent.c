/*
 * Sub-agent trees, in the manner of Claude Code's Task agents.
 *
 * An agent asks for a child with map/agents/spawn, naming an entry of the
 * workflow's catalogue and an initial task envelope.  corral checks the
 * limits (depth, children per parent, agents alive, the parent's budget),
 * starts the child, answers with its id, and delivers the task when the
 * child is ready.  The child works on it and sends envelopes; one with
 * intent finalize is its result, or, if it stops without one, its last
 * envelope (an error if it crashed or timed out).  The result goes to the
 * parent marked {"corral":{"kind":"child_result",...}}, with trace.parents
 * linking back to the task.  Children are hidden from the routing table
 * unless spawned visible, and they are stopped once their result is in,
 * unless spawned with keep.
 *
 * When an agent stops, fails or is killed, its descendants are stopped
 * first, deepest first (the lifecycle sees to that).  Restart strategies
 * (one_for_one, one_for_all, rest_for_one) come from the parent's
 * workflow entry; a child that exceeds its restart intensity escalates:
 * its parent gets an error.  map/send lets an agent reach its parent,
 * children, siblings, descendants, a role, or a named agent it may see.
 *
 * The control plane calls the handlers here (control.c's method table);
 * the engine tells this module of its tasks' replies and ends, and the
 * lifecycle of its children's transitions, through callbacks.
 */

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

static const struct workflow	 *subagent_wf;
static struct agent_conf	**subagent_inline;	/* inline spawns */
static size_t			  subagent_ninline;
static uint64_t			  subagent_sent;

static double	subagent_narrow(double, double);
static void	subagent_task_reply(struct agent *, struct msg *,
		    struct jscan *, const char *, size_t, struct env *);
static void	subagent_task_done(struct msg *, const char *, size_t, int);
static void	subagent_agent_gone(struct agent *, const char *);
static void	subagent_failed(struct agent *, const char *);
static void	subagent_lifecycle(struct agent *, enum agent_state,
		    enum agent_state, enum agent_event, const char *);
static void	subagent_budget_over(struct agent *, const char *);
static void	subagent_forget(struct agent *);

/* Set the module up: the engine's tasks and the children's lives. */
void
subagent_init(const struct workflow *wf)
{
	static const struct engine_task_hooks th = {
		subagent_task_reply, subagent_task_done, subagent_agent_gone,
		subagent_failed
	};

	subagent_wf = wf;
	subagent_inline = NULL;
	subagent_ninline = 0;
	subagent_sent = 0;
	engine_on_task(&th);
	lifecycle_observe(subagent_lifecycle);
	budget_on_subtree(subagent_budget_over);
	agent_on_free(subagent_forget);
}

/* An agent is about to be freed. */
static void
subagent_forget(struct agent *a)
{
	free(a->child.spawn_id);
	free(a->child.last_reply);
}

/* The effective limit: the smaller of two, where 0 means "no limit". */
static unsigned int
subagent_min(unsigned int a, unsigned int b)
{
	if (a == 0)
		return b;
	if (b == 0)
		return a;
	return a < b ? a : b;
}

/*
 * A subtree's total for JSON.  Agents report what they like, so totals
 * can reach the largest doubles or overflow to infinity: jansson cannot
 * hold infinity, and writes numbers above 1.79769313486231e308 with 15
 * digits as more than DBL_MAX, which no reader takes.
 */
static double
subagent_total(double v)
{
	return v < 1.79769313486231e308 ? v : 1.79769313486231e308;
}

/* Describe an agent as MAP's agents/list and agents/get do. */
static json_t *
subagent_describe(struct agent *a)
{
	json_t		*j, *kids;
	struct agent	*c;

	kids = json_array();
	TAILQ_FOREACH(c, &a->children, sibling)
		json_array_append_new(kids, json_string(c->id));
	j = json_pack("{s:s, s:s, s:s, s:s, s:i, s:o, s:{s:s, s:f, s:f, "
	    "s:I, s:b}}",
	    "id", a->id, "name", a->conf->name,
	    "state", lifecycle_map_state(a->life.state),
	    "ownerId", a->parent != NULL ? a->parent->id : "corral",
	    "depth", (int)a->depth, "children", kids,
	    "metadata", "corralState", lifecycle_state_name(a->life.state),
	    "tokens", subagent_total(a->budget.tokens), "cost",
	    subagent_total(a->budget.cost), "pid",
	    (json_int_t)a->proc.hostpid,
	    "visible", !(a->flags & AGENT_HIDDEN));
	if (a->parent != NULL)
		json_object_set_new(j, "parent", json_string(a->parent->id));
	if (a->conf->role != NULL)
		json_object_set_new(j, "role", json_string(a->conf->role));
	if (a->adapter != NULL && a->adapter->ops->metadata != NULL) {
		json_t *md = a->adapter->ops->metadata(a);

		if (md != NULL) {
			json_object_update(json_object_get(j, "metadata"), md);
			json_decref(md);
		}
	}
	return j;
}

/* Return nonzero if from may address to (docs/subagents.md). */
static int
subagent_may_reach(struct agent *from, struct agent *to)
{
	if (from == to)
		return 0;
	if (to->parent == from || from->parent == to)
		return 1;
	if (agent_is_descendant(to, from) || agent_is_descendant(from, to))
		return 1;
	if (from->parent == to->parent)
		return 1;	/* siblings (root agents are siblings too) */
	/* A hidden agent is reached only by its family, and reaches only it. */
	return !(to->flags & AGENT_HIDDEN) && !(from->flags & AGENT_HIDDEN);
}

/*
 * Count the children of an agent that still take a place under its
 * fan-out limit: alive, and not already on their way out after
 * delivering their result.
 */
static unsigned int
subagent_alive_children(struct agent *p)
{
	struct agent	*c;
	unsigned int	 n = 0;

	TAILQ_FOREACH(c, &p->children, sibling) {
		if (!lifecycle_alive(c) || (c->flags & AGENT_DEAD))
			continue;
		/* Done with its task and on its way out (maybe via its own
		 * children first): it no longer holds a place. */
		if (c->child.task == NULL && !c->child.keep &&
		    lifecycle_leaving(c))
			continue;
		n++;
	}
	return n;
}

/*
 * Build an agent entry for an inline command (when the workflow allows):
 * the parent's settings with another argv.  Each entry is allocated on
 * its own, since children point at it for their whole life; they live
 * until corral exits.  An inline entry is in no route, so its children
 * are never routable, visible or not.
 */
static struct agent_conf *
subagent_inline_conf(struct agent *p, json_t *cmd)
{
	struct agent_conf	*ac;
	size_t			 i, n = json_array_size(cmd);

	subagent_inline = xreallocarray(subagent_inline, subagent_ninline + 1,
	    sizeof *subagent_inline);
	ac = xcalloc(1, sizeof *ac);
	*ac = *p->conf;
	xasprintf(&ac->name, "%s-inline", p->conf->name);
	ac->argv = xcalloc(n + 1, sizeof *ac->argv);
	for (i = 0; i < n; i++)
		ac->argv[i] = xstrdup(json_string_value(json_array_get(cmd, i)));
	ac->argc = n;
	ac->env = NULL;
	ac->nenv = 0;
	ac->limits = NULL;
	ac->nlimits = 0;
	ac->role = NULL;
	ac->description = NULL;
	ac->user = NULL;
	ac->adapter = NULL;
	ac->adapter_conf = NULL;
	ac->index = UINT32_MAX;
	subagent_inline[subagent_ninline++] = ac;
	return ac;
}

/*
 * Build the child's task envelope from the spawn's "task": an envelope
 * object, or a string taken as an execute task.  Returns the line, or
 * NULL with why filled.
 */
/*
 * Build the child's task envelope from the spawn's "task": an envelope
 * object, or a string taken as an execute task.  Returns the line, or
 * NULL with why filled.
 */
static char *
subagent_task_line(json_t *task, const char *id, const char *parent,
    const char *from, size_t *lenp, char *why, size_t whylen, int *intent,
    struct env *envp)
{
	struct env_error	 err;
	struct jscan		*js;
	json_t			*t, *trace;
	char			*s, ts[40];

	util_rfc3339(ts, sizeof ts);
	if (json_is_string(task))
		t = json_pack("{s:s, s:s, s:s, s:s, s:s, s:{s:s, s:O}}",
		    "protocol", CORRAL_ENVELOPE_PROTOCOL, "role", "agent",
		    "timestamp", ts, "intent", "execute", "task",
		    json_string_value(task), "content", "type", "text", "text",
		    task);
	else if (json_is_object(task))
		t = json_deep_copy(task);
	else {
		snprintf(why, whylen, "params.task must be an envelope or a "
		    "string");
		return NULL;
	}
	/* The task's lineage: our id, and the parent's current request. */
	if ((trace = json_object_get(t, "trace")) == NULL ||
	    !json_is_object(trace)) {
		trace = json_object();
		json_object_set_new(t, "trace", trace);
	}
	json_object_set_new(trace, "id", json_string(id));
	if (parent != NULL && json_object_get(trace, "parents") == NULL)
		json_object_set_new(trace, "parents", json_pack("[s]", parent));
	if (json_object_get(t, "timestamp") == NULL)
		json_object_set_new(t, "timestamp", json_string(ts));
	/* Tell the child this is its task: it answers with finalize. */
	json_object_set_new(t, "corral", json_pack("{s:s, s:s}", "kind", "task",
	    "parent", from));
	s = json_dumps(t, CORRAL_JSON_FLAGS);
	json_decref(t);
	if (s == NULL) {
		snprintf(why, whylen, "params.task could not be serialized");
		return NULL;
	}
	*lenp = strlen(s);
	js = engine_scan_take();
	err.msg[0] = '\0';
	if (jscan_run(js, s, *lenp) != 0 ||
	    envelope_check(js, s, *lenp, envp, &err) != 0) {
		snprintf(why, whylen, "params.task is not a valid envelope: %s",
		    err.msg[0] ? err.msg : "invalid JSON");
		free(s);
		engine_scan_give(js);
		return NULL;
	}
	engine_scan_give(js);
	*intent = envp->intent;
	return s;
}

/* The smaller of two budgets, where 0 means none: a spawn only narrows. */
static double
subagent_narrow(double entry, double spawn)
{
	if (entry <= 0)
		return spawn;
	if (spawn <= 0)
		return entry;
	return spawn < entry ? spawn : entry;
}

/* Read a limit from params.limits (number >= 0), or keep dflt. */
static double
subagent_param_num(json_t *obj, const char *key, double dflt)
{
	json_t	*v = json_object_get(obj, key);

	if (json_is_number(v) && json_number_value(v) >= 0)
		return json_number_value(v);
	return dflt;
}

/*
 * Read a count from params.limits (a number >= 0), or 0: a number beyond
 * what an unsigned int holds is as good as no limit, and must not wrap.
 */
static unsigned int
subagent_param_count(json_t *obj, const char *key)
{
	double	v = subagent_param_num(obj, key, 0);

	return v >= (double)UINT_MAX ? UINT_MAX : (unsigned int)v;
}

/* The request the agent is working on now, to link lineage and job. */
static struct msg *
subagent_current(struct agent *a)
{
	return TAILQ_FIRST(&a->work.inflight);
}

/*
 * Check the tree's limits for a new child of p: depth (every ancestor's
 * own limit bounds its whole subtree), children of p, agents running,
 * budgets.  Returns 0, or -1 with why.
 */
static int
subagent_limits(struct agent *p, char *why, size_t len)
{
	struct agent	*x;
	unsigned int	 depth = p->depth + 1, maxdepth, maxkids;

	if (subagent_wf->tree_depth == 0 || depth > subagent_wf->tree_depth) {
		snprintf(why, len, "depth limit: a child of %s would be at "
		    "depth %u, the limit is %u", p->id, depth,
		    subagent_wf->tree_depth);
		return -1;
	}
	for (x = p; x != NULL; x = x->parent) {
		maxdepth = subagent_min(x->conf->max_depth,
		    x->child.limit_depth);
		if (maxdepth != 0 && depth > maxdepth) {
			snprintf(why, len, "depth limit: a child of %s would be "
			    "at depth %u, the limit is %u%s%s", p->id, depth,
			    maxdepth, x != p ? ", set on " : "", x != p ?
			    x->id : "");
			return -1;
		}
	}
	maxkids = subagent_min(subagent_wf->tree_children,
	    p->conf->max_children);
	if (p->child.limit_children != 0)
		maxkids = subagent_min(maxkids, p->child.limit_children);
	if (subagent_alive_children(p) >= maxkids) {
		snprintf(why, len, "fan-out limit: %s already has %u children "
		    "alive, the limit is %u", p->id,
		    subagent_alive_children(p), maxkids);
		return -1;
	}
	if (agent_count_running() >= subagent_wf->max_agents) {
		snprintf(why, len, "agents limit: %u agents are alive, the "
		    "limit is %u", agent_count_running(),
		    subagent_wf->max_agents);
		return -1;
	}
	if (budget_over(p, why, len))
		return -1;
	return 0;
}

/* Find the catalogue entry (or inline command) a spawn names. */
static struct agent_conf *
subagent_entry(struct agent *p, json_t *params, int *code, char *why,
    size_t len)
{
	struct agent_conf	*ac;
	json_t			*name, *cmd;
	size_t			 i;

	name = json_object_get(params, "agent");
	if (name == NULL)
		name = json_object_get(params, "name");
	cmd = json_object_get(params, "cmd");
	*code = CORRAL_E_PARAMS;
	if (json_is_string(name)) {
		if ((ac = config_find_agent(subagent_wf,
		    json_string_value(name))) == NULL) {
			snprintf(why, len, "unknown agent '%.64s': not in the "
			    "workflow's agents:", json_string_value(name));
			*code = CORRAL_E_UNKNOWN_AGENT;
		}
		return ac;
	}
	if (!json_is_array(cmd) || json_array_size(cmd) == 0) {
		snprintf(why, len, "params.agent must name an agent of the "
		    "workflow");
		return NULL;
	}
	if (!subagent_wf->inline_spawn) {
		snprintf(why, len, "inline commands are not allowed by this "
		    "workflow (set inline_spawn: true)");
		*code = CORRAL_E_UNKNOWN_AGENT;
		return NULL;
	}
	for (i = 0; i < json_array_size(cmd); i++)
		if (!json_is_string(json_array_get(cmd, i))) {
			snprintf(why, len, "params.cmd must be a list of "
			    "strings");
			return NULL;
		}
	return subagent_inline_conf(p, cmd);
}

/* Refuse a spawn, with the log line, audit event and error it deserves. */
static void
subagent_refuse(struct peer *from, json_t *id, int code, const char *why)
{
	struct agent	*p = from->agent;

	if (code == CORRAL_E_PARAMS)
		log_info("agent %s: spawn refused: %s", p->id, why);
	else {
		if (code == CORRAL_E_LIMIT)
			log_warnx("agent %s: spawn refused: %s", p->id, why);
		else
			log_info("agent %s: spawn refused: %s", p->id, why);
		auditlog_event("spawn_refused", p->id, NULL, "reason", why,
		    NULL);
	}
	rpc_error(from, id, code, why, "REJECTED");
}

/*
 * Set a new child's restart policy and limits from the spawn, and find
 * its budgets (b: tokens, cost, time): its entry's, narrowed by the
 * spawn's.
 */
static void
subagent_child_settings(struct agent *c, struct agent_conf *ac,
    json_t *params, double *b)
{
	json_t		*limits, *budget, *r;
	const char	*rs;

	r = json_object_get(params, "restart");
	if (json_is_string(r)) {
		rs = json_string_value(r);
		if (strcmp(rs, "permanent") == 0)
			lifecycle_set_policy(c, RESTART_PERMANENT);
		else if (strcmp(rs, "transient") == 0)
			lifecycle_set_policy(c, RESTART_TRANSIENT);
		else if (strcmp(rs, "temporary") == 0)
			lifecycle_set_policy(c, RESTART_TEMPORARY);
	}
	/* Budgets: the agent's own, narrowed by the spawn's, and inherited. */
	limits = json_object_get(params, "limits");
	budget = json_object_get(limits, "budget");
	c->child.limit_depth = subagent_param_count(limits, "depth");
	c->child.limit_children = subagent_param_count(limits, "children");
	c->child.task_timeout = subagent_param_num(params, "timeout", 0);
	c->child.keep = json_is_true(json_object_get(params, "keep"));
	b[0] = subagent_narrow(ac->budget_tokens, subagent_param_num(budget,
	    "tokens", 0));
	b[1] = subagent_narrow(ac->budget_cost, subagent_param_num(budget,
	    "cost", 0));
	b[2] = subagent_narrow(ac->budget_time, subagent_param_num(budget,
	    "time", 0));
}

/* Record a new edge of the tree: the child, its parent and its depth. */
static void
subagent_audit_edge(struct agent *c)
{
	struct jsonw	 j;
	char		*s;
	size_t		 len;

	if (!auditlog_enabled())
		return;
	jsonw_init(&j);
	jsonw_object(&j);
	jsonw_key(&j, "parent");
	jsonw_str(&j, c->parent->id);
	jsonw_key(&j, "depth");
	jsonw_u64(&j, c->depth);
	jsonw_object_end(&j);
	s = jsonw_finish(&j, &len);
	auditlog_fields("edge", c->id, NULL, s, len);
	free(s);
}

/* map/agents/spawn. */
void
subagent_spawn(struct peer *from, json_t *id, json_t *params)
{
	struct agent		*p = from->agent, *c;
	struct agent_conf	*ac;
	struct msg		*cur, *m;
	struct env		 env;
	json_t			*task, *res;
	char			 why[512], tid[CORRAL_ID_MAX], *line;
	size_t			 len;
	double			 budget[3];
	int			 intent, visible, code;

	if (!json_is_object(params)) {
		rpc_error(from, id, CORRAL_E_PARAMS, "params must be an object "
		    "with agent and task", "REJECTED");
		return;
	}
	if ((ac = subagent_entry(p, params, &code, why, sizeof why)) == NULL) {
		subagent_refuse(from, id, code, why);
		return;
	}
	if ((task = json_object_get(params, "task")) == NULL) {
		subagent_refuse(from, id, CORRAL_E_PARAMS, "params.task is "
		    "required");
		return;
	}
	if (subagent_limits(p, why, sizeof why) != 0) {
		subagent_refuse(from, id, CORRAL_E_LIMIT, why);
		return;
	}
	visible = json_is_true(json_object_get(params, "visible"));
	cur = subagent_current(p);
	protocol_new_id(tid, sizeof tid);
	if ((line = subagent_task_line(task, tid, cur != NULL ? cur->id : NULL,
	    p->id, &len, why, sizeof why, &intent, &env)) == NULL) {
		subagent_refuse(from, id, CORRAL_E_PARAMS, why);
		return;
	}

	c = lifecycle_create(ac, 0, p);
	if (!visible)
		c->flags |= AGENT_HIDDEN;
	c->child.spawn_id = xstrdup(tid);
	subagent_child_settings(c, ac, params, budget);
	if (visible)
		route_add_agent(c);
	if (lifecycle_start(c) != 0) {
		snprintf(why, sizeof why, "spawn failed: %s could not be "
		    "started (see the log)", c->id);
		free(line);
		agent_mark_dead(c);
		route_remove_agent(c);
		rpc_error(from, id, CORRAL_E_SPAWN, why, "INTERNAL");
		return;
	}
	budget_set(c, budget[0], budget[1], budget[2]);
	auditlog_event("spawn_child", c->id, tid, "parent", p->id, "name",
	    ac->name, "visible", visible ? "true" : "false", NULL);
	subagent_audit_edge(c);
	log_info("agent %s: spawned child %s (depth %u)", p->id, c->id,
	    c->depth);

	m = engine_msg_create(cur != NULL ? cur->job : NULL, line, len,
	    MSG_TASK, intent);
	strlcpy(m->id, tid, sizeof m->id);
	m->target = c;
	m->parent_agent = p;
	m->timeout = c->child.task_timeout;
	m->prio = (uint8_t)env.prio;
	c->child.task = m;
	auditlog_envelope("task", c->id, tid, line, len);
	route_direct(m);

	res = json_pack("{s:o, s:s}", "agent", subagent_describe(c), "task",
	    tid);
	rpc_reply(from, id, res);
}

/* Resolve a map/send address to agents; returns the number found. */
static size_t
subagent_resolve(struct agent *from, json_t *to, struct agent **out,
    size_t max, char *why, size_t whylen)
{
	struct agent	*a, *t;
	size_t		 n = 0;
	const char	*s;

	if (json_is_string(to) || json_is_string(json_object_get(to,
	    "agent")) || json_is_string(json_object_get(to, "participant"))) {
		s = json_is_string(to) ? json_string_value(to) :
		    json_is_string(json_object_get(to, "agent")) ?
		    json_string_value(json_object_get(to, "agent")) :
		    json_string_value(json_object_get(to, "participant"));
		if ((t = agent_find(s)) == NULL) {
			snprintf(why, whylen, "no agent '%.64s'", s);
			return 0;
		}
		if (!subagent_may_reach(from, t)) {
			snprintf(why, whylen, "%s may not address %s", from->id,
			    t->id);
			return (size_t)-1;
		}
		out[n++] = t;
		return n;
	}
	if (json_is_array(json_object_get(to, "agents"))) {
		json_t	*v;
		size_t	 i;

		snprintf(why, whylen, "none of the addressed agents exists");
		json_array_foreach(json_object_get(to, "agents"), i, v) {
			if (!json_is_string(v) ||
			    (t = agent_find(json_string_value(v))) == NULL)
				continue;
			if (!subagent_may_reach(from, t)) {
				snprintf(why, whylen, "%s may not address %s",
				    from->id, t->id);
				return (size_t)-1;
			}
			if (n < max)
				out[n++] = t;
		}
		return n;
	}
	if (json_is_true(json_object_get(to, "parent"))) {
		if (from->parent == NULL) {
			snprintf(why, whylen, "%s has no parent", from->id);
			return 0;
		}
		out[n++] = from->parent;
		return n;
	}
	for (a = agent_first(); a != NULL; a = agent_next(a)) {
		if (a == from || (a->flags & AGENT_DEAD) || !lifecycle_alive(a))
			continue;
		if (n >= max)
			break;
		if (json_is_true(json_object_get(to, "children")) &&
		    a->parent == from)
			out[n++] = a;
		else if (json_is_true(json_object_get(to, "descendants")) &&
		    agent_is_descendant(a, from))
			out[n++] = a;
		else if (json_is_true(json_object_get(to, "siblings")) &&
		    a->parent == from->parent)
			out[n++] = a;
		else if (json_is_true(json_object_get(to, "ancestors")) &&
		    agent_is_descendant(from, a))
			out[n++] = a;
		else if (json_is_string(json_object_get(to, "role")) &&
		    a->conf->role != NULL && strcmp(a->conf->role,
		    json_string_value(json_object_get(to, "role"))) == 0 &&
		    subagent_may_reach(from, a))
			out[n++] = a;
	}
	if (n == 0)
		snprintf(why, whylen, "the address matches no agent");
	return n;
}

/*
 * Build the member corral adds to what it delivers: {"kind":kind} and
 * string pairs after it (NULL-terminated), escaped by the one writer.
 */
static char *
subagent_member(const char *kind, ...)
{
	struct jsonw	 j;
	va_list		 ap;
	const char	*k, *v;
	size_t		 len;

	jsonw_init(&j);
	jsonw_object(&j);
	jsonw_key(&j, "kind");
	jsonw_str(&j, kind);
	va_start(ap, kind);
	while ((k = va_arg(ap, const char *)) != NULL) {
		v = va_arg(ap, const char *);
		jsonw_key(&j, k);
		jsonw_str(&j, v);
	}
	va_end(ap);
	jsonw_object_end(&j);
	return jsonw_finish(&j, &len);
}

/* map/send: deliver an envelope, one way, to the agents addressed. */
void
subagent_send(struct peer *from_peer, json_t *id, json_t *params)
{
	struct agent		*from = from_peer->agent, *targets[256];
	struct env		 env;
	struct env_error	 err;
	struct jscan		*js;
	json_t			*to, *envj, *ids, *res;
	char			 why[256], *member, *s, *line;
	char			 msgid[CORRAL_ID_MAX];
	size_t			 n, i, len, mlen;

	to = json_object_get(params, "to");
	envj = json_object_get(params, "envelope");
	if (envj == NULL)
		envj = json_object_get(params, "message");
	if (envj == NULL)
		envj = json_object_get(params, "payload");
	if (to == NULL || !json_is_object(envj)) {
		rpc_error(from_peer, id, CORRAL_E_PARAMS, "params needs to (an "
		    "address) and envelope (an object)", "REJECTED");
		return;
	}
	s = json_dumps(envj, CORRAL_JSON_FLAGS);
	len = strlen(s);
	js = engine_scan_take();
	err.msg[0] = '\0';
	if (jscan_run(js, s, len) != 0 ||
	    envelope_check(js, s, len, &env, &err) != 0) {
		snprintf(why, sizeof why, "params.envelope is not a valid "
		    "envelope: %s", err.msg[0] ? err.msg : "invalid JSON");
		rpc_error(from_peer, id, CORRAL_E_PARAMS, why, "REJECTED");
		goto out;
	}
	why[0] = '\0';
	n = subagent_resolve(from, to, targets, 256, why, sizeof why);
	if (n == (size_t)-1) {
		log_info("agent %s: map/send refused: %s", from->id, why);
		auditlog_event("send_refused", from->id, NULL, "reason", why,
		    NULL);
		rpc_error(from_peer, id, CORRAL_E_DENIED, why, "REJECTED");
		goto out;
	}
	if (n == 0) {
		rpc_error(from_peer, id, CORRAL_E_NOTFOUND, why, "REJECTED");
		goto out;
	}
	if (envelope_trace_id(js, s, &env, msgid, sizeof msgid) != 0)
		msgid[0] = '\0';
	member = subagent_member(CORRAL_KIND_MESSAGE, "from", from->id, NULL);
	line = envelope_mark(js, s, len, member, &mlen);
	free(member);
	ids = json_array();
	for (i = 0; i < n; i++) {
		agent_send(targets[i], line, mlen);
		json_array_append_new(ids, json_string(targets[i]->id));
		auditlog_envelope("send", targets[i]->id, msgid[0] ? msgid :
		    NULL, line, mlen);
	}
	subagent_sent += n;
	res = json_pack("{s:i, s:o}", "delivered", (int)n, "to", ids);
	rpc_reply(from_peer, id, res);
	free(line);
out:
	engine_scan_give(js);
	free(s);
}

/* Find the agent named by params.agentId (or id, or agent). */
static struct agent *
subagent_param_agent(json_t *params)
{
	json_t	*v;

	v = json_object_get(params, "agentId");
	if (v == NULL)
		v = json_object_get(params, "id");
	if (v == NULL)
		v = json_object_get(params, "agent");
	return json_is_string(v) ? agent_find(json_string_value(v)) : NULL;
}

/*
 * The descendant of the caller a method acts on, or NULL after the error
 * is sent.
 */
static struct agent *
subagent_descendant(struct peer *from, json_t *id, json_t *params,
    const char *what)
{
	struct agent	*t;
	char		 why[128];

	if ((t = subagent_param_agent(params)) == NULL) {
		rpc_error(from, id, CORRAL_E_NOTFOUND, "agent not found",
		    "REJECTED");
		return NULL;
	}
	if (!agent_is_descendant(t, from->agent)) {
		snprintf(why, sizeof why, "an agent may %s only its own "
		    "descendants", what);
		rpc_error(from, id, CORRAL_E_DENIED, why, "REJECTED");
		return NULL;
	}
	return t;
}

/* map/agents/stop: stop a descendant and its subtree. */
void
subagent_stop(struct peer *from, json_t *id, json_t *params)
{
	struct agent	*t;

	if ((t = subagent_descendant(from, id, params, "stop")) == NULL)
		return;
	lifecycle_stop(t, "stopped by its parent");
	rpc_reply(from, id, json_pack("{s:b, s:s}", "stopping", 1, "agentId",
	    t->id));
}

/* map/agents/suspend: stop a descendant's process where it is. */
void
subagent_suspend(struct peer *from, json_t *id, json_t *params)
{
	struct agent	*t;
	char		 why[128];

	if ((t = subagent_descendant(from, id, params,
	    "suspend or resume")) == NULL)
		return;
	snprintf(why, sizeof why, "suspended by %s", from->agent->id);
	lifecycle_feed(t, AE_SUSPEND, why);
	rpc_reply(from, id, json_pack("{s:s, s:s}", "agentId", t->id, "state",
	    lifecycle_map_state(t->life.state)));
}

/* map/agents/resume: let a suspended descendant run again. */
void
subagent_resume(struct peer *from, json_t *id, json_t *params)
{
	struct agent	*t;
	char		 why[128];

	if ((t = subagent_descendant(from, id, params,
	    "suspend or resume")) == NULL)
		return;
	snprintf(why, sizeof why, "resumed by %s", from->agent->id);
	lifecycle_feed(t, AE_RESUME, why);
	rpc_reply(from, id, json_pack("{s:s, s:s}", "agentId", t->id, "state",
	    lifecycle_map_state(t->life.state)));
}

/* map/agents/list: the agents the caller may see. */
void
subagent_list(struct peer *from, json_t *id, json_t *params)
{
	struct agent	*t, *a = from->agent;
	json_t		*list;

	list = json_array();
	for (t = agent_first(); t != NULL; t = agent_next(t)) {
		if ((t->flags & AGENT_DEAD) || (a != NULL && t != a &&
		    !subagent_may_reach(a, t)))
			continue;
		json_array_append_new(list, subagent_describe(t));
	}
	rpc_reply(from, id, json_pack("{s:o}", "agents", list));
}

/* map/agents/get: one agent the caller may see. */
void
subagent_get(struct peer *from, json_t *id, json_t *params)
{
	struct agent	*t, *a = from->agent;

	if ((t = subagent_param_agent(params)) == NULL || (a != NULL &&
	    t != a && !subagent_may_reach(a, t))) {
		rpc_error(from, id, CORRAL_E_NOTFOUND, "agent not found",
		    "REJECTED");
		return;
	}
	rpc_reply(from, id, json_pack("{s:o}", "agent", subagent_describe(t)));
}

/*
 * Deliver a child's result (or error) to its parent, marked as a child
 * result that links back to the spawn.
 */
static void
subagent_deliver(struct agent *p, struct agent *c, const char *task_id,
    const char *line, size_t len, int is_error)
{
	struct env		 env;
	struct env_error	 err;
	struct jscan		*js;
	struct jsonw		 j;
	char			*member, *out;
	size_t			 olen, mlen;

	if (p == NULL || !lifecycle_alive(p) || !agent_writable(p)) {
		auditlog_event("child_result_dropped", c != NULL ? c->id : NULL,
		    task_id, "reason", "the parent is gone", NULL);
		return;
	}
	js = engine_scan_take();
	if (jscan_run(js, line, len) != 0 ||
	    envelope_check(js, line, len, &env, &err) != 0) {
		/* Lines that reach here were validated once already. */
		log_warnx("agent %s: the result of task %s is not an envelope "
		    "any more; not delivered", p->id, task_id);
		engine_scan_give(js);
		return;
	}
	jsonw_init(&j);
	jsonw_object(&j);
	jsonw_key(&j, "kind");
	jsonw_str(&j, CORRAL_KIND_CHILD_RESULT);
	jsonw_key(&j, "child");
	jsonw_str(&j, c != NULL ? c->id : "");
	jsonw_key(&j, "spawn");
	jsonw_str(&j, task_id);
	jsonw_key(&j, "ok");
	jsonw_bool(&j, !is_error);
	jsonw_object_end(&j);
	member = jsonw_finish(&j, &mlen);
	out = envelope_mark(js, line, len, member, &olen);
	engine_scan_give(js);
	free(member);
	agent_send(p, out, olen);
	auditlog_envelope("child_result", p->id, task_id, out, olen);
	free(out);
}

/* A task reached its outcome: the child's parent hears of it. */
static void
subagent_task_done(struct msg *m, const char *line, size_t len, int is_error)
{
	struct agent	*c = m->target;

	if (c != NULL && c->child.task == m)
		c->child.task = NULL;
	subagent_deliver(m->parent_agent, c, m->id, line, len, is_error);
	if (c != NULL && !c->child.keep && lifecycle_alive(c) &&
	    !lifecycle_stopping(c))
		lifecycle_stop(c, is_error ? "task failed" : "task finished");
}

/*
 * An envelope from a child about its task: finalize (or an error) is its
 * result; anything else is progress, kept as its latest reply.
 */
static void
subagent_task_reply(struct agent *c, struct msg *task, struct jscan *js,
    const char *line, size_t len, struct env *env)
{
	struct env_error	 err;
	char			 id[CORRAL_ID_MAX], *filled;
	size_t			 flen;

	if (envelope_trace_id(js, line, env, id, sizeof id) != 0) {
		protocol_new_id(id, sizeof id);
		filled = envelope_fill(js, line, len, env, id, task->id, &flen);
	} else
		filled = envelope_fill(js, line, len, env, NULL, task->id,
		    &flen);
	if (filled != NULL) {
		if (jscan_run(js, filled, flen) != 0 ||
		    envelope_check(js, filled, flen, env, &err) != 0) {
			log_warnx("agent %s: an envelope about task %s could "
			    "not be completed; dropped", c->id, task->id);
			free(filled);
			return;
		}
		line = filled;
		len = flen;
	}
	engine_account(c, env);
	if (c->child.task != task) {
		/* Its budget ran out on this very envelope: the task is over. */
		free(filled);
		return;
	}
	free(c->child.last_reply);
	c->child.last_reply = xmemdup0(line, len);
	c->child.last_reply_len = len;
	c->child.last_reply_error = (env->ctype == CT_ERROR);
	auditlog_envelope("reply", c->id, id, line, len);
	if (env->intent == INTENT_FINALIZE || env->ctype == CT_ERROR)
		engine_replied(task, c, id, NULL, line, len,
		    env->ctype == CT_ERROR);
	free(filled);
}

/*
 * A child's process is gone with its task still open: the task waits for
 * the restarted child, or ends with the child's last envelope (a clean
 * exit) or an error (a crash).
 */
static void
subagent_agent_gone(struct agent *c, const char *why)
{
	struct msg	*task = c->child.task;
	char		*e;

	if (task == NULL || task->where != MSG_INFLIGHT || task->agent != c)
		return;
	if (lifecycle_will_restart(c)) {
		/* Erlang's way: the restarted child gets its task again. */
		engine_redirect(task);
		log_info("agent %s: task %s waits for the restart", c->id,
		    task->id);
		return;
	}
	/* Its own clean exit counts; being stopped by corral does not. */
	if (WIFEXITED_OK(c->proc.status) && !lifecycle_stop_asked(c) &&
	    c->child.last_reply != NULL) {
		e = xmemdup0(c->child.last_reply, c->child.last_reply_len);
		engine_replied(task, c, NULL, "the child stopped; its last "
		    "envelope is its result", e, c->child.last_reply_len,
		    c->child.last_reply_error);
		free(e);
		return;
	}
	engine_fail(task, "INTERNAL", "child_failed", "child %s %s before "
	    "finishing its task", c->id, why);
}

/* An agent failed for good: a child's parent hears of it. */
static void
subagent_failed(struct agent *c, const char *why)
{
	struct msg	*task = c->child.task;
	char		 st[64];

	if (c->parent != NULL)
		log_warnx("agent %s: failed (%s); escalating to %s", c->id, why,
		    c->parent->id);
	if (task == NULL)
		return;
	util_describe_status(st, sizeof st, c->proc.status);
	if (task->where == MSG_QUEUED)
		route_dequeue(task);
	engine_fail(task, "INTERNAL", "child_failed", "child %s failed: %s "
	    "(its last exit: %s)", c->id, why, st);
}

/*
 * A child exited and will be restarted: apply its parent's strategy to
 * its siblings (one_for_all: all of them; rest_for_one: those started
 * after it).
 */
static void
subagent_child_restarting(struct agent *c)
{
	struct agent	*p = c->parent, *s;

	if (p == NULL || p->conf->strategy == STRATEGY_ONE_FOR_ONE)
		return;
	TAILQ_FOREACH(s, &p->children, sibling) {
		if (s == c || !lifecycle_alive(s) || lifecycle_stopping(s))
			continue;
		if (p->conf->strategy == STRATEGY_REST_FOR_ONE &&
		    s->life.start_seq < c->life.start_seq)
			continue;
		log_info("agent %s: %s restarts %s with %s", p->id,
		    config_strategy_name(p->conf->strategy), s->id, c->id);
		auditlog_event("strategy_restart", s->id, NULL, "parent", p->id,
		    "strategy", config_strategy_name(p->conf->strategy), NULL);
		lifecycle_restart(s, "sibling restart");
	}
}

/*
 * A transition of an agent: a child that crashed and restarts takes its
 * siblings along (its parent's strategy); a child done for good, with no
 * task and no children left, is freed.
 */
static void
subagent_lifecycle(struct agent *a, enum agent_state from,
    enum agent_state to, enum agent_event ev, const char *why)
{
	if (to == AS_BACKOFF && ev == AE_EXITED)
		subagent_child_restarting(a);
	if (to != AS_STOPPED && to != AS_FAILED)
		return;
	if (!lifecycle_done(a))
		return;
	budget_stop_clock(a);
	if (a->parent != NULL && !lifecycle_has_live_children(a) &&
	    a->child.task == NULL)
		agent_mark_dead(a);
}

/* A subtree went over its budget: its task fails and it stops. */
static void
subagent_budget_over(struct agent *p, const char *why)
{
	struct msg	*task = p->child.task;

	log_warnx("agent %s: %s; stopping its subtree", p->id, why);
	auditlog_event("budget_exceeded", p->id, NULL, "reason", why, NULL);
	if (task != NULL && task->where != MSG_NOWHERE) {
		if (task->where == MSG_QUEUED)
			route_dequeue(task);
		engine_fail(task, "REJECTED", "budget_exceeded", "%s", why);
	}
	lifecycle_stop(p, why);
}

/* How many envelopes map/send delivered. */
uint64_t
subagent_sent_count(void)
{
	return subagent_sent;
}
