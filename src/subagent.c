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
 * first, deepest first.  Restart strategies (one_for_one, one_for_all,
 * rest_for_one) come from the parent's workflow entry; a child that
 * exceeds its restart intensity escalates: its parent gets an error.
 * map/send lets an agent reach its parent, children, siblings,
 * descendants, a role, or a named agent it may see.
 */

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

static struct agent_conf	**subagent_inline;	/* inline spawns */
static size_t			  subagent_ninline;

static void	subagent_budget_cb(struct ev_loop *, ev_timer *, int);
static double	subagent_narrow(double, double);
static void	subagent_stop_tree(struct agent *, const char *, int);

/* Prepare the module. */
void
subagent_init(void)
{
	subagent_inline = NULL;
	subagent_ninline = 0;
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
	    "state", lifecycle_map_state(a->state),
	    "ownerId", a->parent != NULL ? a->parent->id : "corral",
	    "depth", (int)a->depth, "children", kids,
	    "metadata", "corralState", lifecycle_state_name(a->state),
	    "tokens", a->tokens, "cost", a->cost, "pid", (json_int_t)a->hostpid,
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
		if (c->spawn_task == NULL && !c->keep &&
		    (c->state == AS_STOPPING || (c->flags & (AGENT_NORESTART |
		    AGENT_STOP_PENDING))))
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
static char *
subagent_task_line(json_t *task, const char *id, const char *parent,
    const char *from, size_t *lenp, char *why, size_t whylen, int *intent,
    struct env *envp)
{
	struct env_error	 err;
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
	if (jscan_run(cr->js, s, *lenp) != 0 ||
	    envelope_check(cr->js, s, *lenp, envp, &err) != 0) {
		snprintf(why, whylen, "params.task is not a valid envelope: %s",
		    err.msg[0] ? err.msg : "invalid JSON");
		free(s);
		return NULL;
	}
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

/* The request the agent is working on now, to link lineage and job. */
static struct msg *
subagent_current(struct agent *a)
{
	return TAILQ_FIRST(&a->inflight);
}

/* Start an agent's budget clock, when it has a time budget. */
void
subagent_budget_start(struct agent *c)
{
	if (c->budget_time <= 0)
		return;
	ev_timer_init(&c->budget_w, subagent_budget_cb, c->budget_time, 0);
	c->budget_w.data = c;
	ev_timer_start(cr->loop, &c->budget_w);
}

/* map/agents/spawn. */
static void
subagent_spawn(struct agent *p, json_t *id, json_t *params)
{
	struct agent_conf	*ac = NULL;
	struct agent		*c;
	struct msg		*cur, *m;
	struct env		 env;
	json_t			*name, *cmd, *task, *limits, *budget, *res;
	char			 why[512], tid[CORRAL_ID_MAX], *line;
	size_t			 len;
	unsigned int		 maxdepth, maxkids, depth;
	int			 intent, visible, keep;

	if (!json_is_object(params)) {
		control_reply_error(p, id, CORRAL_E_PARAMS, "params must be an "
		    "object with agent and task", "REJECTED");
		return;
	}
	name = json_object_get(params, "agent");
	if (name == NULL)
		name = json_object_get(params, "name");
	cmd = json_object_get(params, "cmd");
	task = json_object_get(params, "task");
	limits = json_object_get(params, "limits");
	visible = json_is_true(json_object_get(params, "visible"));
	keep = json_is_true(json_object_get(params, "keep"));

	if (json_is_string(name)) {
		ac = config_find_agent(cr->wf, json_string_value(name));
		if (ac == NULL) {
			snprintf(why, sizeof why, "unknown agent '%.64s': not in "
			    "the workflow's agents:", json_string_value(name));
			goto refuse_unknown;
		}
	} else if (json_is_array(cmd) && json_array_size(cmd) > 0) {
		size_t i;

		if (!cr->wf->inline_spawn) {
			snprintf(why, sizeof why, "inline commands are not "
			    "allowed by this workflow (set inline_spawn: true)");
			goto refuse_unknown;
		}
		for (i = 0; i < json_array_size(cmd); i++)
			if (!json_is_string(json_array_get(cmd, i))) {
				snprintf(why, sizeof why, "params.cmd must be "
				    "a list of strings");
				goto refuse_params;
			}
		ac = subagent_inline_conf(p, cmd);
	} else {
		snprintf(why, sizeof why, "params.agent must name an agent of "
		    "the workflow");
		goto refuse_params;
	}
	if (task == NULL) {
		snprintf(why, sizeof why, "params.task is required");
		goto refuse_params;
	}

	/* Limits: depth, children of this parent, agents alive. */
	depth = p->depth + 1;
	if (cr->wf->tree_depth == 0 || depth > cr->wf->tree_depth) {
		snprintf(why, sizeof why, "depth limit: a child of %s would be "
		    "at depth %u, the limit is %u", p->id, depth,
		    cr->wf->tree_depth);
		goto refuse_limit;
	}
	{
		/*
		 * Every ancestor's own limits bound its whole subtree: its
		 * entry's children.depth and its spawn's limits.depth count
		 * levels below it.
		 */
		struct agent	*x;

		for (x = p; x != NULL; x = x->parent) {
			maxdepth = subagent_min(x->conf->max_depth,
			    x->limit_depth);
			if (maxdepth != 0 && depth > maxdepth) {
				snprintf(why, sizeof why, "depth limit: a child "
				    "of %s would be at depth %u, the limit is "
				    "%u%s%s", p->id, depth, maxdepth, x != p ?
				    ", set on " : "", x != p ? x->id : "");
				goto refuse_limit;
			}
		}
	}
	maxkids = subagent_min(cr->wf->tree_children, p->conf->max_children);
	if (p->limit_children != 0)
		maxkids = subagent_min(maxkids, p->limit_children);
	if (subagent_alive_children(p) >= maxkids) {
		snprintf(why, sizeof why, "fan-out limit: %s already has %u "
		    "children alive, the limit is %u", p->id,
		    subagent_alive_children(p), maxkids);
		goto refuse_limit;
	}
	if (agent_count_alive() >= cr->wf->max_agents) {
		snprintf(why, sizeof why, "agents limit: %u agents are alive, "
		    "the limit is %u", agent_count_alive(), cr->wf->max_agents);
		goto refuse_limit;
	}
	if (subagent_over_budget(p, why, sizeof why)) {
		goto refuse_limit;
	}

	cur = subagent_current(p);
	protocol_new_id(tid, sizeof tid);
	line = subagent_task_line(task, tid, cur != NULL ? cur->id : NULL, p->id,
	    &len, why, sizeof why, &intent, &env);
	if (line == NULL)
		goto refuse_params;

	c = agent_create(ac, 0, p);
	if (!visible)
		c->flags |= AGENT_HIDDEN;
	c->keep = keep;
	c->spawn_id = xstrdup(tid);
	c->restart_override = -1;
	if (json_is_string(json_object_get(params, "restart"))) {
		const char *r = json_string_value(json_object_get(params,
		    "restart"));
		if (strcmp(r, "permanent") == 0)
			c->restart_override = RESTART_PERMANENT;
		else if (strcmp(r, "transient") == 0)
			c->restart_override = RESTART_TRANSIENT;
		else if (strcmp(r, "temporary") == 0)
			c->restart_override = RESTART_TEMPORARY;
	}
	/* Budgets: the agent's own, narrowed by the spawn's, and inherited. */
	budget = json_object_get(limits, "budget");
	c->budget_tokens = subagent_narrow(ac->budget_tokens,
	    subagent_param_num(budget, "tokens", 0));
	c->budget_cost = subagent_narrow(ac->budget_cost,
	    subagent_param_num(budget, "cost", 0));
	c->budget_time = subagent_narrow(ac->budget_time,
	    subagent_param_num(budget, "time", 0));
	c->limit_depth = (unsigned int)subagent_param_num(limits, "depth", 0);
	c->limit_children = (unsigned int)subagent_param_num(limits,
	    "children", 0);
	c->task_timeout = subagent_param_num(params, "timeout", 0);

	if (visible && ac->index != UINT32_MAX)
		route_add_agent(c);
	if (agent_start(c) != 0) {
		snprintf(why, sizeof why, "spawn failed: %s could not be "
		    "started (see the log)", c->id);
		free(line);
		c->flags |= AGENT_NORESTART;
		agent_mark_dead(c);
		route_remove_agent(c);
		control_reply_error(p, id, CORRAL_E_SPAWN, why, "INTERNAL");
		return;
	}
	subagent_budget_start(c);
	auditlog_event("spawn_child", c->id, tid, "parent", p->id, "name",
	    ac->name, "visible", visible ? "true" : "false", NULL);
	{
		char d[16];
		snprintf(d, sizeof d, "%u", c->depth);
		auditlog_event("edge", c->id, NULL, "parent", p->id, "depth",
		    d, NULL);
	}
	log_info("agent %s: spawned child %s (depth %u)", p->id, c->id,
	    c->depth);

	m = engine_msg_create(cur != NULL ? cur->job : NULL, line, len,
	    MSG_TASK, intent);
	strlcpy(m->id, tid, sizeof m->id);
	m->target = c;
	m->parent_agent = p;
	m->timeout = c->task_timeout;
	m->prio = (uint8_t)env.prio;
	c->spawn_task = m;
	if (auditlog_enabled())
		auditlog_envelope("task", c->id, tid, line, len);
	route_direct(m);

	res = json_pack("{s:o, s:s}", "agent", subagent_describe(c), "task",
	    tid);
	control_reply(p, id, res);
	return;

refuse_unknown:
	log_info("agent %s: spawn refused: %s", p->id, why);
	auditlog_event("spawn_refused", p->id, NULL, "reason", why, NULL);
	control_reply_error(p, id, CORRAL_E_UNKNOWN_AGENT, why, "REJECTED");
	return;
refuse_params:
	log_info("agent %s: spawn refused: %s", p->id, why);
	control_reply_error(p, id, CORRAL_E_PARAMS, why, "REJECTED");
	return;
refuse_limit:
	log_warnx("agent %s: spawn refused: %s", p->id, why);
	auditlog_event("spawn_refused", p->id, NULL, "reason", why, NULL);
	control_reply_error(p, id, CORRAL_E_LIMIT, why, "REJECTED");
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
	TAILQ_FOREACH(a, &cr->agents, entry) {
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

/* map/send: deliver an envelope, one way, to the agents addressed. */
static void
subagent_send(struct agent *from, json_t *id, json_t *params)
{
	struct agent		*targets[256];
	struct env		 env;
	struct env_error	 err;
	json_t			*to, *envj, *ids, *res;
	char			 why[256], member[160], *s, *line;
	char			 msgid[CORRAL_ID_MAX];
	size_t			 n, i, len, mlen;

	to = json_object_get(params, "to");
	envj = json_object_get(params, "envelope");
	if (envj == NULL)
		envj = json_object_get(params, "message");
	if (envj == NULL)
		envj = json_object_get(params, "payload");
	if (to == NULL || !json_is_object(envj)) {
		control_reply_error(from, id, CORRAL_E_PARAMS, "params needs "
		    "to (an address) and envelope (an object)", "REJECTED");
		return;
	}
	s = json_dumps(envj, CORRAL_JSON_FLAGS);
	len = strlen(s);
	if (jscan_run(cr->js, s, len) != 0 ||
	    envelope_check(cr->js, s, len, &env, &err) != 0) {
		snprintf(why, sizeof why, "params.envelope is not a valid "
		    "envelope: %s", err.msg[0] ? err.msg : "invalid JSON");
		control_reply_error(from, id, CORRAL_E_PARAMS, why, "REJECTED");
		free(s);
		return;
	}
	why[0] = '\0';
	n = subagent_resolve(from, to, targets, 256, why, sizeof why);
	if (n == (size_t)-1) {
		log_info("agent %s: map/send refused: %s", from->id, why);
		auditlog_event("send_refused", from->id, NULL, "reason", why,
		    NULL);
		control_reply_error(from, id, CORRAL_E_DENIED, why, "REJECTED");
		free(s);
		return;
	}
	if (n == 0) {
		control_reply_error(from, id, CORRAL_E_NOTFOUND, why,
		    "REJECTED");
		free(s);
		return;
	}
	snprintf(member, sizeof member, "{\"kind\":\"message\",\"from\":\"%s\"}",
	    from->id);
	{
		char tid[CORRAL_ID_MAX];

		if (envelope_trace_id(cr->js, s, &env, tid, sizeof tid) != 0)
			tid[0] = '\0';
		line = envelope_mark(cr->js, s, len, member, &mlen);
		strlcpy(msgid, tid, sizeof msgid);
	}
	ids = json_array();
	for (i = 0; i < n; i++) {
		agent_send(targets[i], line, mlen);
		json_array_append_new(ids, json_string(targets[i]->id));
		if (auditlog_enabled())
			auditlog_envelope("send", targets[i]->id, msgid[0] ?
			    msgid : NULL, line, mlen);
	}
	cr->sent += n;
	res = json_pack("{s:i, s:o}", "delivered", (int)n, "to", ids);
	control_reply(from, id, res);
	free(line);
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
 * Handle a sub-agent method from agent a.  Returns 0 if m was one of
 * ours, -1 if the method is not ours.
 */
int
subagent_method(struct agent *a, const char *m, json_t *id, json_t *params)
{
	struct agent	*t;
	json_t		*list;

	if (strcmp(m, CORRAL_M_SPAWN) == 0) {
		subagent_spawn(a, id, params);
		return 0;
	}
	if (strcmp(m, CORRAL_M_SEND) == 0) {
		subagent_send(a, id, params);
		return 0;
	}
	if (strcmp(m, CORRAL_M_STOP) == 0) {
		if ((t = subagent_param_agent(params)) == NULL) {
			control_reply_error(a, id, CORRAL_E_NOTFOUND, "agent not "
			    "found", "REJECTED");
			return 0;
		}
		if (!agent_is_descendant(t, a)) {
			control_reply_error(a, id, CORRAL_E_DENIED, "an agent may "
			    "stop only its own descendants", "REJECTED");
			return 0;
		}
		subagent_stop_tree(t, "stopped by its parent", 1);
		control_reply(a, id, json_pack("{s:b, s:s}", "stopping", 1,
		    "agentId", t->id));
		return 0;
	}
	if (strcmp(m, CORRAL_M_SUSPEND) == 0 || strcmp(m, CORRAL_M_RESUME) == 0) {
		int suspend = strcmp(m, CORRAL_M_SUSPEND) == 0;

		if ((t = subagent_param_agent(params)) == NULL) {
			control_reply_error(a, id, CORRAL_E_NOTFOUND, "agent not "
			    "found", "REJECTED");
			return 0;
		}
		if (!agent_is_descendant(t, a)) {
			control_reply_error(a, id, CORRAL_E_DENIED, "an agent may "
			    "suspend or resume only its own descendants",
			    "REJECTED");
			return 0;
		}
		if (suspend && (t->state == AS_READY || t->state == AS_BUSY ||
		    t->state == AS_UNAVAILABLE || t->state ==
		    AS_INITIALIZING)) {
			lifecycle_event(t, AE_SUSPEND, "suspended by %s", a->id);
			lifecycle_kill(t, SIGSTOP);
		} else if (!suspend && t->state == AS_SUSPENDED) {
			lifecycle_kill(t, SIGCONT);
			t->last_activity = ev_now(cr->loop);
			lifecycle_event(t, AE_RESUME, "resumed by %s", a->id);
		}
		control_reply(a, id, json_pack("{s:s, s:s}", "agentId", t->id,
		    "state", lifecycle_map_state(t->state)));
		return 0;
	}
	if (strcmp(m, CORRAL_M_LIST) == 0) {
		list = json_array();
		TAILQ_FOREACH(t, &cr->agents, entry) {
			if ((t->flags & AGENT_DEAD) || (t != a &&
			    !subagent_may_reach(a, t)))
				continue;
			json_array_append_new(list, subagent_describe(t));
		}
		control_reply(a, id, json_pack("{s:o}", "agents", list));
		return 0;
	}
	if (strcmp(m, CORRAL_M_GET) == 0) {
		if ((t = subagent_param_agent(params)) == NULL || (t != a &&
		    !subagent_may_reach(a, t))) {
			control_reply_error(a, id, CORRAL_E_NOTFOUND, "agent not "
			    "found", "REJECTED");
			return 0;
		}
		control_reply(a, id, json_pack("{s:o}", "agent",
		    subagent_describe(t)));
		return 0;
	}
	return -1;
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
	char			 member[256], *out;
	size_t			 olen;

	if (jscan_run(cr->js, line, len) != 0 ||
	    envelope_check(cr->js, line, len, &env, &err) != 0)
		fatalx("subagent_deliver: not an envelope");
	snprintf(member, sizeof member, "{\"kind\":\"child_result\",\"child\":"
	    "\"%s\",\"spawn\":\"%s\",\"ok\":%s}", c != NULL ? c->id : "",
	    task_id, is_error ? "false" : "true");
	out = envelope_mark(cr->js, line, len, member, &olen);
	if (p != NULL && lifecycle_alive(p) && p->io.wfd != -1) {
		agent_send(p, out, olen);
		if (auditlog_enabled())
			auditlog_envelope("child_result", p->id, task_id, out,
			    olen);
	} else
		auditlog_event("child_result_dropped", c != NULL ? c->id : NULL,
		    task_id, "reason", "the parent is gone", NULL);
	free(out);
}

/* A request reached its outcome: tasks report to the parent. */
void
subagent_request_done(struct msg *m, const char *line, size_t len,
    int is_error)
{
	struct agent	*c = m->target;

	if (m->kind != MSG_TASK)
		return;
	if (c != NULL && c->spawn_task == m)
		c->spawn_task = NULL;
	subagent_deliver(m->parent_agent, c, m->id, line, len, is_error);
	if (c != NULL && !c->keep && lifecycle_alive(c) &&
	    c->state != AS_STOPPING)
		subagent_stop_tree(c, is_error ? "task failed" :
		    "task finished", 1);
}

/* A reflection took over a task request: the task is the reflection now. */
void
subagent_reply_forwarded(struct msg *m)
{
	(void)m;
}

/*
 * An envelope from a child about its task: finalize (or an error) is its
 * result; anything else is progress, kept as its latest reply.  Returns 0
 * when handled.
 */
int
subagent_task_envelope(struct agent *c, struct msg *task, const char *line,
    size_t len, struct env *env)
{
	char	 id[CORRAL_ID_MAX], *filled;
	size_t	 flen;

	if (envelope_trace_id(cr->js, line, env, id, sizeof id) != 0) {
		protocol_new_id(id, sizeof id);
		filled = envelope_fill(cr->js, line, len, env, id, task->id,
		    &flen);
	} else
		filled = envelope_fill(cr->js, line, len, env, NULL, task->id,
		    &flen);
	if (filled != NULL) {
		struct env_error err;

		line = filled;
		len = flen;
		if (jscan_run(cr->js, line, len) != 0 ||
		    envelope_check(cr->js, line, len, env, &err) != 0)
			fatalx("envelope_fill produced an invalid envelope");
	}
	engine_account(c, env);
	if (c->spawn_task != task) {
		/* Its budget ran out on this very envelope: the task is over. */
		free(filled);
		return 0;
	}
	free(c->last_reply);
	c->last_reply = xmemdup0(line, len);
	c->last_reply_len = len;
	c->last_reply_error = (env->ctype == CT_ERROR);
	if (auditlog_enabled())
		auditlog_envelope("reply", c->id, id, line, len);
	if (env->intent == INTENT_FINALIZE || env->ctype == CT_ERROR) {
		cr->replied++;
		auditlog_event("outcome", c->id, task->id, "outcome", "replied",
		    "reply", id, NULL);
		engine_request_done(task, line, len, env->ctype == CT_ERROR);
	}
	free(filled);
	return 0;
}

/*
 * A child's process is gone with its task still open: the task waits for
 * the restarted child, or ends with the child's last envelope (a clean
 * exit) or an error (a crash).
 */
void
subagent_agent_gone(struct agent *c, const char *why)
{
	struct msg	*task = c->spawn_task;
	char		 msg[256], *e;
	size_t		 len;
	int		 clean;

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
	clean = WIFEXITED_OK(c->status) && !(c->flags & AGENT_STOP_ASKED);
	if (clean && c->last_reply != NULL) {
		cr->replied++;
		auditlog_event("outcome", c->id, task->id, "outcome", "replied",
		    "reason", "the child stopped; its last envelope is its "
		    "result", NULL);
		e = xmemdup0(c->last_reply, c->last_reply_len);
		engine_request_done(task, e, c->last_reply_len,
		    c->last_reply_error);
		free(e);
		return;
	}
	snprintf(msg, sizeof msg, "child %s %s before finishing its task",
	    c->id, why);
	cr->errored++;
	auditlog_event("outcome", c->id, task->id, "outcome", "error",
	    "category", "INTERNAL", "reason", msg, NULL);
	e = envelope_error("child_failed", "INTERNAL", NULL, msg, task->id,
	    &len);
	engine_request_done(task, e, len, 1);
	free(e);
}

/* An agent failed for good: a child's parent hears of it. */
void
subagent_failed(struct agent *c, const char *why)
{
	struct msg	*task = c->spawn_task;
	char		 msg[256], *e;
	size_t		 len;

	if (c->parent != NULL)
		log_warnx("agent %s: failed (%s); escalating to %s", c->id, why,
		    c->parent->id);
	if (task == NULL)
		return;
	{
		char st[64];

		util_describe_status(st, sizeof st, c->status);
		snprintf(msg, sizeof msg, "child %s failed: %s (its last exit: "
		    "%s)", c->id, why, st);
	}
	if (task->where == MSG_QUEUED)
		route_dequeue(task);
	cr->errored++;
	auditlog_event("outcome", c->id, task->id, "outcome", "error",
	    "category", "INTERNAL", "reason", msg, NULL);
	e = envelope_error("child_failed", "INTERNAL", NULL, msg, task->id,
	    &len);
	engine_request_done(task, e, len, 1);
	free(e);
}

/*
 * Stop an agent and its subtree, deepest first: the agent itself waits
 * until its children have stopped.
 */
static void
subagent_stop_tree(struct agent *a, const char *why, int for_good)
{
	struct agent	*c;
	int		 waiting = 0;

	if (for_good)
		a->flags |= AGENT_NORESTART;
	TAILQ_FOREACH(c, &a->children, sibling) {
		if (!lifecycle_alive(c) && c->life_step != 4)
			continue;
		subagent_stop_tree(c, "its parent is stopping", 1);
		if (lifecycle_alive(c))
			waiting = 1;
	}
	if (waiting) {
		a->flags |= AGENT_STOP_PENDING;
		free(a->stop_why);
		a->stop_why = xstrdup(why);
		return;
	}
	if (for_good)
		lifecycle_stop(a, why);
	else
		lifecycle_restart(a, why);
}

/* Stop every descendant of a (its parent is going away). */
void
subagent_stop_children(struct agent *a, const char *why)
{
	struct agent	*c;

	TAILQ_FOREACH(c, &a->children, sibling)
		if (lifecycle_alive(c) || c->life_step == 4)
			subagent_stop_tree(c, why, 1);
}

/* Return nonzero if a has a child that still has a process. */
int
subagent_has_live_children(const struct agent *a)
{
	struct agent	*c;

	TAILQ_FOREACH(c, &a->children, sibling)
		if (lifecycle_alive(c))
			return 1;
	return 0;
}

/*
 * An agent reached STOPPED or FAILED for good: a parent waiting for its
 * children may stop now, and a dead child is freed.
 */
void
subagent_stopped(struct agent *a)
{
	struct agent	*p = a->parent;

	if (subagent_has_live_children(a))
		subagent_stop_children(a, "its parent stopped");
	ev_timer_stop(cr->loop, &a->budget_w);
	if (p != NULL && (p->flags & AGENT_STOP_PENDING) &&
	    !subagent_has_live_children(p)) {
		p->flags &= ~AGENT_STOP_PENDING;
		if (p->flags & AGENT_NORESTART)
			lifecycle_stop(p, p->stop_why != NULL ? p->stop_why :
			    "its children stopped");
		else
			lifecycle_restart(p, p->stop_why != NULL ?
			    p->stop_why : "restart");
	}
	if (p != NULL && !lifecycle_alive(a) && !subagent_has_live_children(a) &&
	    a->spawn_task == NULL && a->life_step != 4)
		agent_mark_dead(a);
}

/*
 * A child exited and will be restarted: apply its parent's strategy to
 * its siblings (one_for_all: all of them; rest_for_one: those started
 * after it).
 */
void
subagent_child_restarting(struct agent *c)
{
	struct agent	*p = c->parent, *s;

	if (p == NULL || p->conf->strategy == STRATEGY_ONE_FOR_ONE)
		return;
	TAILQ_FOREACH(s, &p->children, sibling) {
		if (s == c || !lifecycle_alive(s) || s->state == AS_STOPPING)
			continue;
		if (p->conf->strategy == STRATEGY_REST_FOR_ONE &&
		    s->start_seq < c->start_seq)
			continue;
		log_info("agent %s: %s restarts %s with %s", p->id,
		    config_strategy_name(p->conf->strategy), s->id, c->id);
		auditlog_event("strategy_restart", s->id, NULL, "parent", p->id,
		    "strategy", config_strategy_name(p->conf->strategy), NULL);
		subagent_stop_tree(s, "sibling restart", 0);
	}
}

/* Return nonzero, with why, if a's subtree (or an ancestor's) is over budget. */
int
subagent_over_budget(struct agent *a, char *why, size_t len)
{
	struct agent	*p;

	for (p = a; p != NULL; p = p->parent) {
		if (p->budget_tokens > 0 && p->tokens >= p->budget_tokens) {
			snprintf(why, len, "budget: the subtree of %s used %.0f "
			    "tokens, its budget is %.0f", p->id, p->tokens,
			    p->budget_tokens);
			return 1;
		}
		if (p->budget_cost > 0 && p->cost >= p->budget_cost) {
			snprintf(why, len, "budget: the subtree of %s cost "
			    "$%.4f, its budget is $%.4f", p->id, p->cost,
			    p->budget_cost);
			return 1;
		}
	}
	if (cr->wf->budget_tokens > 0 && cr->tokens_in + cr->tokens_out >=
	    cr->wf->budget_tokens) {
		snprintf(why, len, "budget: the run used %.0f tokens, its budget "
		    "is %.0f", cr->tokens_in + cr->tokens_out,
		    cr->wf->budget_tokens);
		return 1;
	}
	if (cr->wf->budget_cost > 0 && cr->cost >= cr->wf->budget_cost) {
		snprintf(why, len, "budget: the run cost $%.4f, its budget is "
		    "$%.4f", cr->cost, cr->wf->budget_cost);
		return 1;
	}
	return 0;
}

/* Stop the subtree of the agent whose budget ran out. */
static void
subagent_budget_stop(struct agent *p, const char *why)
{
	struct msg	*task = p->spawn_task;
	char		*e;
	size_t		 len;

	log_warnx("agent %s: %s; stopping its subtree", p->id, why);
	auditlog_event("budget_exceeded", p->id, NULL, "reason", why, NULL);
	if (task != NULL && task->where != MSG_NOWHERE) {
		cr->errored++;
		auditlog_event("outcome", p->id, task->id, "outcome", "error",
		    "category", "REJECTED", "reason", why, NULL);
		e = envelope_error("budget_exceeded", "REJECTED", NULL, why,
		    task->id, &len);
		engine_request_done(task, e, len, 1);
		free(e);
	}
	subagent_stop_tree(p, why, 1);
}

/* After a reply was accounted: stop any subtree that went over budget. */
void
subagent_check_budget(struct agent *a)
{
	struct agent	*p;
	char		 why[256];

	for (p = a; p != NULL; p = p->parent) {
		if (p->state == AS_STOPPING || !lifecycle_alive(p))
			continue;
		if (p->budget_tokens > 0 && p->tokens > p->budget_tokens) {
			snprintf(why, sizeof why, "budget exceeded: %.0f tokens "
			    "used, the budget is %.0f", p->tokens,
			    p->budget_tokens);
			subagent_budget_stop(p, why);
			return;
		}
		if (p->budget_cost > 0 && p->cost > p->budget_cost) {
			snprintf(why, sizeof why, "budget exceeded: $%.4f spent, "
			    "the budget is $%.4f", p->cost, p->budget_cost);
			subagent_budget_stop(p, why);
			return;
		}
	}
	subagent_check_run_budget();
}

/* The run's own budget (limits.budget): over it, every job ends. */
void
subagent_check_run_budget(void)
{
	struct job	*j, *next;
	char		 why[256];

	if (cr->budget_hit)
		return;
	if (cr->wf->budget_tokens > 0 && cr->tokens_in + cr->tokens_out >
	    cr->wf->budget_tokens)
		snprintf(why, sizeof why, "the run's budget of %.0f tokens is "
		    "spent", cr->wf->budget_tokens);
	else if (cr->wf->budget_cost > 0 && cr->cost > cr->wf->budget_cost)
		snprintf(why, sizeof why, "the run's budget of $%.4f is spent",
		    cr->wf->budget_cost);
	else
		return;
	cr->budget_hit = 1;
	TAILQ_FOREACH_SAFE(j, &cr->jobs, entry, next)
		engine_limit(j, "budget_exceeded", "%s", why);
}

/* A subtree's time budget ran out. */
static void
subagent_budget_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct agent	*a = w->data;
	char		 why[128];

	snprintf(why, sizeof why, "budget exceeded: %gs of wall time",
	    a->budget_time);
	subagent_budget_stop(a, why);
}
