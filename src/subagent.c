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
 * its parent gets an error.
 *
 * A client (a control socket connection) spawns too: a top-level agent,
 * visible, kept, owned by the client (mapview.c stops it when the client
 * goes), with or without a first message; that message's result goes to
 * the client as a MAP Message (message.c).  Spawns come in MAP's shape
 * (name, initialMessage, metadata, visibility, _meta.corral) or corral's
 * (agent, task, visible ...), and refusals carry MAP's error codes with
 * corral's old code in error.data.details.corralCode.
 *
 * The control plane calls the handlers here (control.c's method table);
 * the engine tells this module of its tasks' replies and ends (and of
 * requests sent through the control plane, which go on to message.c),
 * and the lifecycle of its children's transitions, through callbacks.
 */

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

/*
 * The agents clients started that have finished for good stay listed
 * (stopped or failed) for a while: the last SUBAGENT_HISTORY of them.
 * Older ones are freed, as finished children are at once.
 */
#define SUBAGENT_HISTORY	64
#define SUBAGENT_SECONDS_MAX	1e9	/* a timeout: 31 years is none */

static const struct workflow	 *subagent_wf;
static TAILQ_HEAD(, agent)	  subagent_history =
				    TAILQ_HEAD_INITIALIZER(subagent_history);
static unsigned int		  subagent_nhistory;
static const struct child	  subagent_none;	/* NULL stands for it */

/* Why a spawn is refused: MAP's code, corral's old one, a reason word. */
struct subagent_refusal {
	int		 code;
	int		 old;
	const char	*reason;	/* error.data.details.reason */
	char		 why[512];
};

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
static const char *subagent_task_id(struct agent *);
static void	subagent_conf_free(struct agent_conf *);
static void	subagent_confine(struct agent_conf *,
		    const struct agent_conf *, int);

/* Set the module up: the engine's tasks and the children's lives. */
void
subagent_init(const struct workflow *wf)
{
	static const struct engine_task_hooks th = {
		subagent_task_reply, subagent_task_done, subagent_agent_gone,
		subagent_failed
	};

	subagent_wf = wf;
	engine_on_task(&th);
	message_on_task(subagent_task_id);
	lifecycle_observe(subagent_lifecycle);
	budget_on_subtree(subagent_budget_over);
	agent_on_free(subagent_forget);
}

/* An agent's part to read: no task, no limits when it has none. */
static const struct child *
subagent_of(const struct agent *a)
{
	return a->child != NULL ? a->child : &subagent_none;
}

/* An agent's part to write, made on first use. */
static struct child *
subagent_part(struct agent *a)
{
	if (a->child == NULL)
		a->child = xcalloc(1, sizeof *a->child);
	return a->child;
}

/* The id of a child's open task (message.c asks), or NULL. */
static const char *
subagent_task_id(struct agent *a)
{
	const struct msg	*task = subagent_of(a)->task;

	return task != NULL ? task->id : NULL;
}

/*
 * An agent is about to be freed.  A parent done for good that waited for
 * this last child of its own goes next.
 */
static void
subagent_forget(struct agent *a)
{
	struct agent	*p = a->parent;

	if (p != NULL && p->parent != NULL && !(p->flags & AGENT_DEAD) &&
	    lifecycle_done(p) && agent_nchildren(p) == 1 &&
	    subagent_of(p)->task == NULL)
		agent_mark_dead(p);
	if (a->child == NULL)
		return;
	if (a->child->finished) {
		TAILQ_REMOVE(&subagent_history, a, child->history);
		subagent_nhistory--;
	}
	free(a->child->spawn_id);
	free(a->child->via);
	free(a->child->last_reply);
	free(a->child);
	a->child = NULL;
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
 * Count the children of an agent that still take a place under its
 * fan-out limit: alive, and not already on their way out after
 * delivering their result.
 */
static unsigned int
subagent_alive_children(struct agent *p)
{
	struct agent	*c;
	unsigned int	 n = 0;

	AGENT_FOREACH_CHILD(c, p) {
		if (!lifecycle_alive(c) || (c->flags & AGENT_DEAD))
			continue;
		/* Done with its task and on its way out (maybe via its own
		 * children first): it no longer holds a place. */
		if (subagent_of(c)->task == NULL && !subagent_of(c)->keep &&
		    lifecycle_leaving(c))
			continue;
		n++;
	}
	return n;
}

/* The tighter of two limits, where -1 means none. */
static long long
subagent_tighter(long long a, long long b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

/*
 * Merge the parent's resource limits into the child's: every resource
 * either sets is limited, to the tighter of the two.  Returns a new
 * array, or NULL when the parent sets none.
 */
static struct rlimit_conf *
subagent_limits_merge(const struct agent_conf *p, const struct agent_conf *c,
    size_t *np)
{
	struct rlimit_conf	*out;
	size_t			 i, j, n;

	if (p->nlimits == 0)
		return NULL;
	out = xcalloc(p->nlimits + c->nlimits, sizeof *out);
	n = c->nlimits;
	if (n > 0)
		memcpy(out, c->limits, n * sizeof *out);
	for (i = 0; i < p->nlimits; i++) {
		for (j = 0; j < n; j++)
			if (out[j].resource == p->limits[i].resource)
				break;
		if (j == n)
			out[n++] = p->limits[i];
		else
			out[j].value = subagent_tighter(out[j].value,
			    p->limits[i].value);
	}
	*np = n;
	return out;
}

/*
 * The settings a child runs with.  A child never gets more than its
 * parent: it runs as the parent's user when the parent runs as one, and
 * with every resource limit at most the parent's (each agent is a child
 * of corral, so nothing of the parent's process carries over by itself).
 * An inline command (when the workflow allows it) runs with its parent's
 * settings and another argv; an inline entry is in no route, so its
 * children are never routable.  Returns the entry itself when nothing
 * changes, else a copy the child owns (freed with the agent: its conf_free).
 */
static struct agent_conf *
subagent_child_conf(struct agent *p, struct agent_conf *entry, json_t *cmd)
{
	const struct agent_conf	*pc;
	struct agent_conf	*ac;
	size_t			 i, n;

	if (p == NULL)
		return entry;	/* a client's agent: the entry as written */
	pc = p->conf;
	if (cmd == NULL && pc->user == NULL && pc->nlimits == 0 &&
	    !(pc->confine.flags & CONFINE_ON) && pc->nconfine_up == 0)
		return entry;
	ac = xcalloc(1, sizeof *ac);
	*ac = cmd != NULL ? *pc : *entry;
	ac->own = CONF_OWN;
	if (cmd != NULL) {
		n = json_array_size(cmd);
		xasprintf(&ac->name, "%s-inline", pc->name);
		ac->argv = xcalloc(n + 1, sizeof *ac->argv);
		for (i = 0; i < n; i++)
			ac->argv[i] = xstrdup(json_string_value(
			    json_array_get(cmd, i)));
		ac->argc = n;
		ac->role = NULL;
		ac->description = NULL;
		ac->adapter = NULL;
		ac->adapter_conf = NULL;
		ac->index = UINT32_MAX;
		ac->own |= CONF_OWN_ARGV;
	}
	if (pc->user != NULL)
		ac->user = pc->user;
	if ((ac->limits = subagent_limits_merge(pc, cmd != NULL ? pc : entry,
	    &ac->nlimits)) != NULL)
		ac->own |= CONF_OWN_LIMITS;
	else if (cmd == NULL) {
		ac->limits = entry->limits;
		ac->nlimits = entry->nlimits;
	}
	/* An inline child's own confine: is its parent's already. */
	subagent_confine(ac, pc, cmd == NULL);
	return ac;
}

/*
 * Carry a parent's confinement to its child: every layer the parent runs
 * under becomes a layer of the child's, on top of the child's own
 * confine:.  Landlock enforces all of them, so the child never gets more
 * than its parent had.
 */
static void
subagent_confine(struct agent_conf *ac, const struct agent_conf *pc,
    int own)
{
	struct confine_layer	*l, p, mine;
	size_t			 n, i;

	memset(&p, 0, sizeof p);
	p.c = pc->confine;
	p.cwd = pc->cwd;
	p.env = pc->env;
	p.nenv = pc->nenv;
	memset(&mine, 0, sizeof mine);
	mine.c = ac->confine;
	mine.cwd = ac->cwd;
	mine.env = ac->env;
	mine.nenv = ac->nenv;
	/* The same policy twice restricts no more: a child of its own entry. */
	own = own && (pc->confine.flags & CONFINE_ON) &&
	    memcmp(&p, &mine, sizeof p) != 0;
	for (i = 0; own && i < pc->nconfine_up; i++)
		if (memcmp(&p, &pc->confine_up[i], sizeof p) == 0)
			own = 0;
	n = pc->nconfine_up + (own ? 1 : 0);
	ac->confine_up = NULL;
	ac->nconfine_up = 0;
	if (n == 0)
		return;
	l = xcalloc(n, sizeof *l);
	if (pc->nconfine_up > 0)
		memcpy(l, pc->confine_up, pc->nconfine_up * sizeof *l);
	if (own)
		l[n - 1] = p;
	ac->confine_up = l;
	ac->nconfine_up = n;
	ac->own |= CONF_OWN_CONFINE;
}

/* Free the settings subagent_child_conf made for a child. */
static void
subagent_conf_free(struct agent_conf *ac)
{
	size_t	i;

	if (!(ac->own & CONF_OWN))
		return;
	if (ac->own & CONF_OWN_ARGV) {
		for (i = 0; i < ac->argc; i++)
			free(ac->argv[i]);
		free(ac->argv);
		free(ac->name);
	}
	if (ac->own & CONF_OWN_LIMITS)
		free(ac->limits);
	if (ac->own & CONF_OWN_CONFINE)
		free(ac->confine_up);
	free(ac);
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
	s = jsonw_dumps(t, CORRAL_JSON_FLAGS);
	json_decref(t);
	if (s == NULL) {
		snprintf(why, whylen, "params.task could not be serialized");
		return NULL;
	}
	*lenp = strlen(s);
	js = jscan_take();
	err.msg[0] = '\0';
	if (jscan_run(js, s, *lenp) != 0 ||
	    envelope_check(js, s, *lenp, envp, &err) != 0) {
		snprintf(why, whylen, "params.task is not a valid envelope: %s",
		    err.msg[0] ? err.msg : "invalid JSON");
		free(s);
		jscan_give(js);
		return NULL;
	}
	jscan_give(js);
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

/*
 * Read a limit, a budget or a timeout a spawn gives (a number, at most
 * max), or 0: none.  A negative one is none too; one beyond max is as
 * good as no limit, and must not wrap where it is converted.
 */
static double
subagent_param_num(json_t *obj, const char *key, double max)
{
	double	v = 0;

	(void)protocol_number(obj, key, 0, max, 1, &v);
	return v;
}

/* Read a count from params.limits: as subagent_param_num. */
static unsigned int
subagent_param_count(json_t *obj, const char *key)
{
	return (unsigned int)subagent_param_num(obj, key, (double)UINT_MAX);
}

/* The request the agent is working on now, to link lineage and job. */
static struct msg *
subagent_current(struct agent *a)
{
	return engine_inflight_first(a);
}

/*
 * Check the tree's limits for a new child of p: depth (every ancestor's
 * own limit bounds its whole subtree), children of p, agents running,
 * budgets.  A client's agents (p NULL) count against the agents limit
 * and the run's budget only.  Returns 0, or -1 with the refusal.
 */
static int
subagent_limits(struct agent *p, struct subagent_refusal *r)
{
	struct agent	*x;
	unsigned int	 depth, maxdepth, maxkids;

	r->old = CORRAL_E_OLD_LIMIT;
	r->code = CORRAL_E_SPAWN;
	r->reason = "stopping";
	if (lifecycle_shutting_down()) {
		snprintf(r->why, sizeof r->why, "corral is stopping: no new "
		    "agent starts");
		return -1;
	}
	if (p != NULL && lifecycle_leaving(p)) {
		snprintf(r->why, sizeof r->why, "%s is stopping: it may not "
		    "spawn", p->id);
		return -1;
	}
	if (p == NULL)
		goto alive;
	depth = agent_depth(p) + 1;
	r->code = CORRAL_E_QUOTA;
	r->reason = "depth";
	if (subagent_wf->tree_depth == 0 || depth > subagent_wf->tree_depth) {
		snprintf(r->why, sizeof r->why, "depth limit: a child of %s "
		    "would be at depth %u, the limit is %u", p->id, depth,
		    subagent_wf->tree_depth);
		return -1;
	}
	for (x = p; x != NULL; x = x->parent) {
		maxdepth = subagent_min(x->conf->max_depth,
		    subagent_of(x)->limit_depth);
		if (maxdepth != 0 && depth > maxdepth) {
			snprintf(r->why, sizeof r->why, "depth limit: a child "
			    "of %s would be at depth %u, the limit is %u%s%s",
			    p->id, depth, maxdepth, x != p ? ", set on " : "",
			    x != p ? x->id : "");
			return -1;
		}
	}
	maxkids = subagent_min(subagent_wf->tree_children,
	    p->conf->max_children);
	if (subagent_of(p)->limit_children != 0)
		maxkids = subagent_min(maxkids,
		    subagent_of(p)->limit_children);
	r->code = CORRAL_E_EXHAUSTED;
	r->reason = "fan_out";
	if (subagent_alive_children(p) >= maxkids) {
		snprintf(r->why, sizeof r->why, "fan-out limit: %s already has "
		    "%u children alive, the limit is %u", p->id,
		    subagent_alive_children(p), maxkids);
		return -1;
	}
alive:
	r->code = CORRAL_E_EXHAUSTED;
	r->reason = "agents";
	if (agent_count_running() >= subagent_wf->max_agents) {
		snprintf(r->why, sizeof r->why, "agents limit: %u agents are "
		    "alive, the limit is %u", agent_count_running(),
		    subagent_wf->max_agents);
		return -1;
	}
	r->code = CORRAL_E_QUOTA;
	r->reason = "budget";
	if (p != NULL && budget_over(p, r->why, sizeof r->why))
		return -1;
	if (p == NULL && budget_run_spent()) {
		snprintf(r->why, sizeof r->why, "the run's budget is spent");
		return -1;
	}
	return 0;
}

/*
 * Find the catalogue entry a spawn names: MAP's name, or corral's agent
 * (opts holds corral's options); for corral's inline cmd, the parent's
 * own entry, with *cmdp set.
 */
static struct agent_conf *
subagent_entry(struct agent *p, json_t *params, json_t *opts, json_t **cmdp,
    struct subagent_refusal *r)
{
	struct agent_conf	*ac;
	json_t			*name, *cmd;
	size_t			 i;

	name = json_object_get(opts, "agent");
	if (name == NULL)
		name = json_object_get(params, "name");
	cmd = json_object_get(opts, "cmd");
	*cmdp = NULL;
	r->code = CORRAL_E_PARAMS;
	r->old = CORRAL_E_PARAMS;
	r->reason = NULL;
	if (json_is_string(name)) {
		if ((ac = config_find_agent(subagent_wf,
		    json_string_value(name))) == NULL) {
			snprintf(r->why, sizeof r->why, "unknown agent "
			    "'%.64s': not in the workflow's agents:",
			    json_string_value(name));
			r->code = CORRAL_E_SPAWN;
			r->old = CORRAL_E_OLD_UNKNOWN;
			r->reason = "unknown_agent";
		}
		return ac;
	}
	if (!json_is_array(cmd) || json_array_size(cmd) == 0) {
		snprintf(r->why, sizeof r->why, "params.name must name an agent "
		    "of the workflow");
		return NULL;
	}
	if (!subagent_wf->inline_spawn || p == NULL) {
		snprintf(r->why, sizeof r->why, p == NULL ? "inline commands "
		    "are for agents' children, not for clients" : "inline "
		    "commands are not allowed by this workflow (set "
		    "inline_spawn: true)");
		r->code = CORRAL_E_SPAWN;
		r->old = CORRAL_E_OLD_UNKNOWN;
		r->reason = "inline_not_allowed";
		return NULL;
	}
	for (i = 0; i < json_array_size(cmd); i++)
		if (!json_is_string(json_array_get(cmd, i))) {
			snprintf(r->why, sizeof r->why, "params.cmd must be a "
			    "list of strings");
			return NULL;
		}
	*cmdp = cmd;
	return p->conf;
}

/*
 * Refuse a spawn, with the audit event and error it deserves, and a log
 * line: at most ten a second per agent, so an agent that asks again and
 * again cannot flood the log (each refusal is still audited).
 */
static void
subagent_refuse(struct peer *from, json_t *id, struct subagent_refusal *r)
{
	struct child	*c = from->agent != NULL ?
			    subagent_part(from->agent) : NULL;
	json_t		*details = NULL;
	const char	*what = from->agent != NULL ? "agent " : "";
	ev_tstamp	 now = ev_now(LOOP);

	if (r->code != CORRAL_E_PARAMS)
		auditlog_event("spawn_refused", from->name, NULL, "reason",
		    r->why, NULL);
	if (r->reason != NULL)
		details = json_pack("{s:s, s:i}", "reason", r->reason,
		    "corralCode", r->old);
	rpc_error(from, id, r->code, r->why, details);
	if (c != NULL) {
		if (now - c->refused_at >= 1.0) {
			if (c->refused_dropped > 0)
				log_warnx("agent %s: %u more spawns were "
				    "refused", from->name, c->refused_dropped);
			c->refused_at = now;
			c->refused_logged = 0;
			c->refused_dropped = 0;
		}
		if (++c->refused_logged > 10) {
			c->refused_dropped++;
			return;
		}
	}
	if (r->code == CORRAL_E_EXHAUSTED || r->code == CORRAL_E_QUOTA)
		log_warnx("%s%s: spawn refused: %s", what, from->name, r->why);
	else
		log_info("%s%s: spawn refused: %s", what, from->name, r->why);
}

/*
 * What a spawn brings besides its entry: its task (NULL: none, but a
 * child must have one) and its metadata, which must fit an agent's
 * bound.  Returns 0 with *task, or -1 with the refusal.
 */
static int
subagent_payload(struct agent *p, json_t *params, json_t *opts,
    json_t **task, struct subagent_refusal *r)
{
	*task = json_object_get(opts, "task");
	if (*task == NULL)
		*task = json_object_get(json_object_get(params,
		    "initialMessage"), "payload");
	r->code = CORRAL_E_PARAMS;
	r->reason = NULL;
	if (*task == NULL && p != NULL) {
		snprintf(r->why, sizeof r->why, "a child needs a task: "
		    "params.initialMessage.payload (or params.task)");
		return -1;
	}
	return mapview_metadata_check(json_object_get(params, "metadata"),
	    r->why, sizeof r->why);
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
	struct child	*ch;
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
	ch = subagent_part(c);
	ch->limit_depth = subagent_param_count(limits, "depth");
	ch->limit_children = subagent_param_count(limits, "children");
	ch->task_timeout = subagent_param_num(params, "timeout",
	    SUBAGENT_SECONDS_MAX);
	ch->keep = json_is_true(json_object_get(params, "keep"));
	b[0] = subagent_narrow(ac->budget_tokens, subagent_param_num(budget,
	    "tokens", DBL_MAX));
	b[1] = subagent_narrow(ac->budget_cost, subagent_param_num(budget,
	    "cost", DBL_MAX));
	b[2] = subagent_narrow(ac->budget_time, subagent_param_num(budget,
	    "time", SUBAGENT_SECONDS_MAX));
}

/* Record a spawn: who asked (parent, or a client as owner), what, seen? */
static void
subagent_audit_spawn(struct agent *c, const char *owner, const char *tid,
    int visible)
{
	struct jsonw	 j;
	char		*s;
	size_t		 len;

	if (!auditlog_enabled())
		return;
	jsonw_init(&j);
	jsonw_object(&j);
	if (c->parent != NULL) {
		jsonw_key(&j, "parent");
		jsonw_str(&j, c->parent->id);
	}
	if (owner != NULL) {
		jsonw_key(&j, "owner");
		jsonw_str(&j, owner);
	}
	jsonw_key(&j, "name");
	jsonw_str(&j, c->conf->name);
	jsonw_key(&j, "visible");
	jsonw_bool(&j, visible);
	jsonw_object_end(&j);
	s = jsonw_finish(&j, &len);
	auditlog_fields("spawn_child", c->id, tid, s, len);
	free(s);
}

/* Record a new edge of the tree: the child, its parent and its depth. */
static void
subagent_audit_edge(struct agent *c)
{
	struct jsonw	 j;
	char		*s;
	size_t		 len;

	if (!auditlog_enabled() || c->parent == NULL)
		return;
	jsonw_init(&j);
	jsonw_object(&j);
	jsonw_key(&j, "parent");
	jsonw_str(&j, c->parent->id);
	jsonw_key(&j, "depth");
	jsonw_u64(&j, agent_depth(c));
	jsonw_object_end(&j);
	s = jsonw_finish(&j, &len);
	auditlog_fields("edge", c->id, NULL, s, len);
	free(s);
}

/*
 * corral's options of a spawn: its own shape's members at the top, then
 * metadata.corral, then _meta.corral (MAP's shape has no place for them:
 * the SDK's typed spawn() has metadata, a raw request has _meta).
 */
static json_t *
subagent_options(json_t *params)
{
	static const char *const keys[] = { "agent", "task", "visible", "keep",
	    "restart", "timeout", "limits", "cmd", NULL };
	json_t	*o = json_object(), *x;
	size_t	 i;

	for (i = 0; keys[i] != NULL; i++)
		if ((x = json_object_get(params, keys[i])) != NULL)
			json_object_set(o, keys[i], x);
	x = json_object_get(json_object_get(params, "metadata"), "corral");
	if (json_is_object(x))
		json_object_update(o, x);
	x = json_object_get(json_object_get(params, "_meta"), "corral");
	if (json_is_object(x))
		json_object_update(o, x);
	return o;
}

/*
 * Check who may spawn under whom, and the spawn's scopes (they must exist
 * and have room): an agent spawns its own children, a client top-level
 * agents.  Returns 0, or -1 with
 * the refusal.
 */
static int
subagent_check_parent(struct peer *from, json_t *params,
    struct subagent_refusal *r)
{
	json_t	*v = json_object_get(params, "parent");

	r->reason = NULL;
	if (v != NULL && from->agent == NULL) {
		r->code = CORRAL_E_PARAMS;
		snprintf(r->why, sizeof r->why, "a client spawns top-level "
		    "agents: params.parent must be absent");
		return -1;
	}
	if (v != NULL && (!json_is_string(v) ||
	    strcmp(json_string_value(v), from->agent->id) != 0)) {
		r->code = CORRAL_E_DENIED;
		r->old = CORRAL_E_OLD_DENIED;
		r->reason = "parent";
		snprintf(r->why, sizeof r->why, "%s may spawn only its own "
		    "children", from->agent->id);
		return -1;
	}
	/* The scopes it is to join must be there, with room for it. */
	if ((r->code = scope_check_join(json_object_get(params, "scopes"),
	    r->why, sizeof r->why)) != 0) {
		r->old = CORRAL_E_PARAMS;
		r->reason = "scope";
		return -1;
	}
	return 0;
}

/*
 * map/agents/spawn, in MAP's shape (name, initialMessage, metadata,
 * visibility) or corral's (agent, task, visible ...).  An agent spawns a
 * child with a task; a client spawns a top-level agent it owns, with or
 * without a first message.  Answers the new agent and, when it has a
 * task, the task's id as messageId.
 */
void
subagent_spawn(struct peer *from, json_t *id, json_t *params)
{
	struct subagent_refusal	 r;
	struct agent		*p = from->agent, *c;
	struct agent_conf	*ac, *entry;
	struct msg		*cur, *m = NULL;
	struct env		 env;
	json_t			*opts, *task, *res, *vis, *cmd;
	char			 tid[CORRAL_ID_MAX], *line = NULL;
	size_t			 len = 0;
	double			 budget[3];
	int			 intent = 0, visible;

	if (!json_is_object(params)) {
		rpc_error(from, id, CORRAL_E_PARAMS, "params must be an object "
		    "naming the agent to spawn", NULL);
		return;
	}
	memset(&r, 0, sizeof r);
	opts = subagent_options(params);
	if (subagent_check_parent(from, params, &r) != 0 ||
	    (entry = subagent_entry(p, params, opts, &cmd, &r)) == NULL)
		goto refuse;
	if (subagent_payload(p, params, opts, &task, &r) != 0 ||
	    subagent_limits(p, &r) != 0)
		goto refuse;
	vis = json_object_get(params, "visibility");
	visible = p == NULL || json_is_true(json_object_get(opts, "visible")) ||
	    (json_is_string(vis) && strcmp(json_string_value(vis),
	    "public") == 0);
	cur = p != NULL ? subagent_current(p) : NULL;
	tid[0] = '\0';
	if (task != NULL) {
		protocol_new_id(tid, sizeof tid);
		if ((line = subagent_task_line(task, tid, cur != NULL ?
		    cur->id : NULL, from->name, &len, r.why, sizeof r.why,
		    &intent, &env)) == NULL) {
			r.code = CORRAL_E_PARAMS;
			r.reason = NULL;
			goto refuse;
		}
	}

	/* Only now, when it will run: its settings (see above). */
	ac = subagent_child_conf(p, entry, cmd);
	c = lifecycle_create(ac, 0, p);
	if (ac->own & CONF_OWN)
		ac->conf_free = subagent_conf_free;	/* once all forgot c */
	if (!visible)
		c->flags |= AGENT_HIDDEN;
	if (p == NULL)
		mapview_set_owner(c, from->name);
	/* Checked above: it fits. */
	(void)mapview_merge(c, json_object_get(params, "metadata"), r.why,
	    sizeof r.why);
	if (tid[0] != '\0')
		subagent_part(c)->spawn_id = xstrdup(tid);
	if (from->role & PEER_DELEGATE)
		/* Its result goes to the MCP session that asked. */
		subagent_part(c)->via = xstrdup(rpc_own_name(from));
	subagent_child_settings(c, ac, opts, budget);
	if (p == NULL)
		/* A client's agent waits for work. */
		subagent_part(c)->keep = 1;
	if (visible)
		route_add_agent(c);
	if (lifecycle_start(c) != 0) {
		r.code = CORRAL_E_SPAWN;
		r.old = CORRAL_E_OLD_SPAWN;
		r.reason = "start";
		snprintf(r.why, sizeof r.why, "spawn failed: %s could not be "
		    "started (see the log)", c->id);
		free(line);
		agent_mark_dead(c);
		route_remove_agent(c);
		json_decref(opts);
		rpc_error(from, id, r.code, r.why, json_pack("{s:s, s:i}",
		    "reason", r.reason, "corralCode", r.old));
		return;
	}
	budget_set(c, budget[0], budget[1], budget[2]);
	subagent_audit_spawn(c, p != NULL ? NULL : from->name,
	    tid[0] != '\0' ? tid : NULL, visible);
	subagent_audit_edge(c);
	scope_join(json_object_get(params, "scopes"), c, from->name);
	log_info("%s: spawned %s %s (depth %u)", from->name, p != NULL ?
	    "child" : "agent", c->id, agent_depth(c));

	if (line != NULL) {
		m = engine_msg_create(cur != NULL ? cur->job : NULL, line, len,
		    MSG_TASK, intent);
		engine_msg_setup(m, tid, c, p, env.prio,
		    subagent_of(c)->task_timeout);
		subagent_part(c)->task = m;
		auditlog_envelope("task", c->id, tid, line, len);
	}
	res = json_pack("{s:o}", "agent", mapview_describe(c));
	if (m != NULL)
		json_object_set_new(res, "messageId", json_string(tid));
	/* The response first: the task may fail at once, and say so. */
	rpc_reply(from, id, res);
	if (m != NULL)
		route_direct(m);
	json_decref(opts);
	return;

refuse:
	json_decref(opts);
	subagent_refuse(from, id, &r);
}

/*
 * The agent a stop, suspend or resume acts on, or NULL after the error is
 * sent: a client may act on any agent, an agent on its descendants.
 */
static struct agent *
subagent_target(struct peer *from, json_t *id, json_t *params,
    const char *what)
{
	struct agent	*t;
	struct external	*x;
	char		 why[CORRAL_ID_MAX * 2 + 256];

	if (!mapview_need_id(from, id, params))
		return NULL;
	if (mapview_param_agent(params) == NULL &&
	    (x = mapview_param_external(params)) != NULL) {
		/* Not a process of corral's: nothing to signal. */
		snprintf(why, sizeof why, "%s runs inside agent %s's CLI: "
		    "corral cannot %s it (cancel its request instead)", x->id,
		    x->parent, what);
		rpc_error(from, id, CORRAL_E_STATE, why, json_pack("{s:s}",
		    "reason", "virtual"));
		return NULL;
	}
	/* A hidden agent it may not reach does not exist for it. */
	if ((t = mapview_param_agent(params)) == NULL ||
	    (t->flags & AGENT_DEAD) || (from->agent != NULL &&
	    t != from->agent && (t->flags & AGENT_HIDDEN) &&
	    !mapview_may_reach(from->agent, t))) {
		rpc_error(from, id, CORRAL_E_NOTFOUND, "agent not found",
		    json_pack("{s:i}", "corralCode", CORRAL_E_OLD_NOTFOUND));
		return NULL;
	}
	if (from->agent != NULL && !agent_is_descendant(t, from->agent)) {
		snprintf(why, sizeof why, "an agent may %s only its own "
		    "descendants", what);
		rpc_error(from, id, CORRAL_E_DENIED, why, json_pack("{s:i}",
		    "corralCode", CORRAL_E_OLD_DENIED));
		return NULL;
	}
	return t;
}

/*
 * map/agents/stop: stop an agent and its subtree, deepest first; with
 * force, kill them now.  What they work on is cancelled first: it was
 * stopped on purpose, so its requests end cancelled, not lost (and are
 * not tried again elsewhere).
 */
void
subagent_stop(struct peer *from, json_t *id, json_t *params)
{
	struct agent	*t;
	json_t		*res;
	char		 why[128];

	if ((t = subagent_target(from, id, params, "stop")) == NULL)
		return;
	if (from->agent != NULL)
		snprintf(why, sizeof why, "stopped by its parent");
	else
		snprintf(why, sizeof why, "stopped by %s", from->name);
	(void)engine_cancel_agent(t, why);
	lifecycle_stop(t, why);
	if (json_is_true(json_object_get(params, "force")) &&
	    lifecycle_alive(t))
		lifecycle_kill(t);
	res = mapview_describe(t);
	if (lifecycle_alive(t))
		/* Its children stop first; it is on its way out already. */
		json_object_set_new(res, "state", json_string("stopping"));
	rpc_reply(from, id, json_pack("{s:b, s:o}", "stopping", 1, "agent",
	    res));
}

/*
 * map/agents/suspend and map/agents/resume are idempotent: the caller
 * asks for a state, not a transition, so an agent already there is
 * answered {suspended: true} (or {resumed: true}) as it is.  A request
 * tried again after its answer was lost then does not fail, and a
 * script need not look before it asks (the look would race with the
 * agent anyway).  Only an agent with no process to stop or continue
 * (stopped, failed, stopping) is refused: 3001.
 */

/* Whether an agent has a process that suspend or resume can act on. */
static int
subagent_pausable(struct peer *from, json_t *id, struct agent *t)
{
	char	why[CORRAL_ID_MAX + 128];

	if (lifecycle_alive(t) && !lifecycle_stopping(t))
		return 1;
	snprintf(why, sizeof why, "%s is %s: it has no process to suspend or "
	    "resume", t->id, mapview_state(lifecycle_state(t)));
	rpc_error(from, id, CORRAL_E_STATE, why, NULL);
	return 0;
}

/* map/agents/suspend: stop an agent's process where it is. */
void
subagent_suspend(struct peer *from, json_t *id, json_t *params)
{
	struct agent	*t;
	char		 why[128];

	if ((t = subagent_target(from, id, params,
	    "suspend or resume")) == NULL || !subagent_pausable(from, id, t))
		return;
	if (lifecycle_state(t) != AS_SUSPENDED) {
		snprintf(why, sizeof why, "suspended by %s", from->name);
		lifecycle_feed(t, AE_SUSPEND, why);
	}
	if (lifecycle_state(t) != AS_SUSPENDED) {
		snprintf(why, sizeof why, "%s cannot be suspended: it is %s",
		    t->id, mapview_state(lifecycle_state(t)));
		rpc_error(from, id, CORRAL_E_STATE, why, NULL);
		return;
	}
	rpc_reply(from, id, json_pack("{s:b, s:o}", "suspended", 1, "agent",
	    mapview_describe(t)));
}

/* map/agents/resume: let a suspended agent run again. */
void
subagent_resume(struct peer *from, json_t *id, json_t *params)
{
	struct agent	*t;
	char		 why[128];

	if ((t = subagent_target(from, id, params,
	    "suspend or resume")) == NULL || !subagent_pausable(from, id, t))
		return;
	if (lifecycle_state(t) == AS_SUSPENDED) {
		snprintf(why, sizeof why, "resumed by %s", from->name);
		lifecycle_feed(t, AE_RESUME, why);
	}
	rpc_reply(from, id, json_pack("{s:b, s:o}", "resumed",
	    lifecycle_state(t) != AS_SUSPENDED, "agent", mapview_describe(t)));
}

/*
 * Deliver a child's result (or error) to its parent, marked as a child
 * result that links back to the spawn: to the parent's MCP session when
 * the spawn came from one (the model inside its CLI waits for it there),
 * else on the parent's stdin.
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

	if (p == NULL || !lifecycle_alive(p) || (!agent_writable(p) &&
	    (c == NULL || subagent_of(c)->via == NULL))) {
		auditlog_event("child_result_dropped", c != NULL ? c->id : NULL,
		    task_id, "reason", "the parent is gone", NULL);
		return;
	}
	js = jscan_take();
	if (jscan_run(js, line, len) != 0 ||
	    envelope_check(js, line, len, &env, &err) != 0) {
		/* Lines that reach here were validated once already. */
		log_warnx("agent %s: the result of task %s is not an envelope "
		    "any more; not delivered", p->id, task_id);
		jscan_give(js);
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
	jscan_give(js);
	free(member);
	if (c != NULL && subagent_of(c)->via != NULL &&
	    message_delegates(p, subagent_of(c)->via, c, task_id, out,
	    olen) > 0)
		auditlog_envelope("child_result", p->id, task_id, out, olen);
	else if (agent_writable(p) && (c == NULL ||
	    subagent_of(c)->via == NULL)) {
		dialect_send(p, out, olen, DK_CHILD_RESULT);
		auditlog_envelope("child_result", p->id, task_id, out, olen);
	} else
		auditlog_event("child_result_dropped", c != NULL ? c->id : NULL,
		    task_id, "reason", "no MCP session of the parent is "
		    "connected", NULL);
	free(out);
}

/* A task reached its outcome: the child's parent hears of it. */
static void
subagent_task_done(struct msg *m, const char *line, size_t len, int is_error)
{
	struct agent	*c = m->target;

	if (m->kind == MSG_SEND) {
		message_done(m, line, len, is_error);
		return;
	}
	if (c != NULL && subagent_of(c)->task == m)
		subagent_part(c)->task = NULL;
	if (m->parent_agent == NULL && c != NULL && mapview_owner(c) != NULL)
		/* A client's agent: its result goes to the client. */
		message_result(mapview_owner(c), c, m->id, line, len, NULL);
	else
		subagent_deliver(m->parent_agent, c, m->id, line, len,
		    is_error);
	if (c != NULL && !subagent_of(c)->keep && lifecycle_alive(c) &&
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
	struct child		*ch;
	char			 id[CORRAL_ID_MAX], *filled;
	size_t			 flen;

	if (task->kind == MSG_SEND) {
		message_reply(c, task, js, line, len, env);
		return;
	}
	if (envelope_trace_id(js, line, env, id, sizeof id) < 0) {
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
	if (subagent_of(c)->task != task) {
		/* Its budget ran out on this very envelope: the task is over. */
		free(filled);
		return;
	}
	ch = subagent_part(c);
	free(ch->last_reply);
	ch->last_reply = xmemdup0(line, len);
	ch->last_reply_len = len;
	ch->last_reply_error = (env->ctype == CT_ERROR);
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
	const struct child	*ch = subagent_of(c);
	struct msg		*task = ch->task;
	char			*e;

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
	if (WIFEXITED_OK(agent_status(c)) && !lifecycle_stop_asked(c) &&
	    ch->last_reply != NULL) {
		e = xmemdup0(ch->last_reply, ch->last_reply_len);
		engine_replied(task, c, NULL, "the child stopped; its last "
		    "envelope is its result", e, ch->last_reply_len,
		    ch->last_reply_error);
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
	struct msg	*task = subagent_of(c)->task;
	char		 st[64];

	if (c->parent != NULL)
		log_warnx("agent %s: failed (%s); escalating to %s", c->id, why,
		    c->parent->id);
	if (task == NULL)
		return;
	util_describe_status(st, sizeof st, agent_status(c));
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
	AGENT_FOREACH_CHILD(s, p) {
		/* On its way out already: stopping for good, or restarting. */
		if (s == c || !lifecycle_alive(s) || lifecycle_leaving(s))
			continue;
		if (p->conf->strategy == STRATEGY_REST_FOR_ONE &&
		    lifecycle_start_seq(s) < lifecycle_start_seq(c))
			continue;
		log_info("agent %s: %s restarts %s with %s", p->id,
		    config_strategy_name(p->conf->strategy), s->id, c->id);
		auditlog_event("strategy_restart", s->id, NULL, "parent", p->id,
		    "strategy", config_strategy_name(p->conf->strategy), NULL);
		lifecycle_restart(s, "sibling restart");
	}
}

/*
 * A client's agent finished for good: it joins the history, and the
 * oldest ones beyond SUBAGENT_HISTORY are freed.  One that still has
 * children (they are on their way out) or work is passed over for now:
 * freeing it would leave them without a parent, or a result without
 * its agent.  What it kept for its result is no longer needed.
 */
static void
subagent_finished(struct agent *a)
{
	struct agent	*old, *next;
	struct child	*c;

	if (!subagent_of(a)->finished) {
		c = subagent_part(a);
		c->finished = 1;
		TAILQ_INSERT_TAIL(&subagent_history, a, child->history);
		subagent_nhistory++;
		free(c->last_reply);
		c->last_reply = NULL;
		c->last_reply_len = 0;
	}
	TAILQ_FOREACH_SAFE(old, &subagent_history, child->history, next) {
		if (subagent_nhistory <= SUBAGENT_HISTORY)
			break;
		if (agent_first_child(old) != NULL ||
		    subagent_of(old)->task != NULL ||
		    lifecycle_outstanding(old) > 0)
			continue;
		TAILQ_REMOVE(&subagent_history, old, child->history);
		subagent_nhistory--;
		subagent_part(old)->finished = 0;
		agent_mark_dead(old);
	}
}

/*
 * Return nonzero if a child may be forgotten: done for good, with no
 * task, and each of its children forgotten already (a child left behind
 * would lose its parent).
 */
static int
subagent_forgettable(const struct agent *a)
{
	const struct agent	*c;

	if (a->parent == NULL || !lifecycle_done(a) ||
	    subagent_of(a)->task != NULL)
		return 0;
	AGENT_FOREACH_CHILD(c, a)
		if (!(c->flags & AGENT_DEAD))
			return 0;
	return 1;
}

/*
 * A transition of an agent: a child that crashed and restarts takes its
 * siblings along (its parent's strategy); a child done for good, with no
 * task and no children left, is freed, and so are the ancestors that
 * ended before it (they crashed) and waited only for it; a client's
 * agent done for good goes into the history of finished agents.
 */
static void
subagent_lifecycle(struct agent *a, enum agent_state from,
    enum agent_state to, enum agent_event ev, const char *why)
{
	struct agent	*x;

	if (to == AS_BACKOFF && ev == AE_RESTART_DUE)
		subagent_child_restarting(a);
	if (subagent_of(a)->finished && !lifecycle_done(a)) {
		/* Started again: no longer history. */
		TAILQ_REMOVE(&subagent_history, a, child->history);
		subagent_nhistory--;
		subagent_part(a)->finished = 0;
	}
	if (to != AS_STOPPED && to != AS_FAILED)
		return;
	if (!lifecycle_done(a))
		return;
	budget_stop_clock(a);
	if (a->parent != NULL) {
		for (x = a; x != NULL && subagent_forgettable(x); x = x->parent)
			agent_mark_dead(x);
	} else if (a->instance == 0 && !(a->flags & AGENT_DEAD))
		subagent_finished(a);
}

/* A subtree went over its budget: its task fails and it stops. */
static void
subagent_budget_over(struct agent *p, const char *why)
{
	struct msg	*task = subagent_of(p)->task;

	log_warnx("agent %s: %s; stopping its subtree", p->id, why);
	auditlog_event("budget_exceeded", p->id, NULL, "reason", why, NULL);
	if (task != NULL && task->where != MSG_NOWHERE) {
		if (task->where == MSG_QUEUED)
			route_dequeue(task);
		engine_fail(task, "REJECTED", "budget_exceeded", "%s", why);
	}
	lifecycle_stop(p, why);
}

