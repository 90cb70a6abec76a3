/*
 * The intent routing table.
 *
 * Each intent has a row naming the agents (workflow entries) that serve
 * it; "*" is the explicit fallback for intents without a row.  A request
 * goes to a routable instance of those agents with the fewest messages
 * outstanding (ties: the one picked least recently).  A reflection avoids
 * the agent that wrote the weak reply whenever another candidate exists.
 * When no candidate can take work now, the request waits in the row's
 * queue, one FIFO per priority; when no candidate exists at all, or will
 * ever exist again, it fails at once.  A step's request names its agent,
 * not an intent: each workflow entry has a row of its own, served the
 * same way.
 *
 * Queues are served highest priority first, FIFO within a level.  So that
 * a flood of urgent work cannot starve the rest, a head that has waited
 * longer than ROUTE_AGING seconds is served before higher levels; among
 * aged heads, the lowest level first, so a burst of urgent work delays
 * the rest by about ROUTE_AGING and no more.
 *
 * A row may also name capabilities (capability:NAME): the entries that
 * declare one are in the row already (config-table.c); an agent that
 * registered one at run time is a candidate too, which the capability
 * test a higher module registers (route_on_capability) tells.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

#define ROUTE_AGING	5.0	/* seconds before a waiting head jumps ahead */
#define ROUTE_SCAN	8	/* queue entries looked at per level */

/* One row of the routing table, with its wait queues. */
struct route {
	int			 intent;	/* or ROUTE_FALLBACK, ROUTE_ENTRY */
	const struct agent_conf	*entry;		/* ROUTE_ENTRY: its one entry */
	struct agent_conf	**confs;
	size_t			 nconfs;
	char			**caps;		/* agents with these too */
	size_t			 ncaps;
	struct route_itemq	 queue[PRIO_COUNT];
	unsigned int		 queued;
};

/* The request a queue's item is part of. */
#define ROUTE_MSG(it)	((struct msg *)(void *)((char *)(it) - \
	offsetof(struct msg, ri)))

static uint64_t			 route_pick_seq;
static const struct workflow	*route_wf;
static struct route		 route_rows[INTENT_MAX + 1];
static struct route		*route_entries;	/* a row per workflow entry */
static struct agent_conf	**route_entry_confs;	/* their one entry */
static size_t			 route_nentries;
static struct agentpool		*route_pools;	/* per workflow entry */
static unsigned int		 route_queued;	/* in every row's queues */
static struct route_hooks	 route_hooks;
static int			(*route_answer)(struct msg *, struct agent *);
static unsigned int		 route_open_circuits;
static int			(*route_has_cap)(struct agent *, const char *);

static void	route_lifecycle(struct agent *, enum agent_state,
		    enum agent_state, enum agent_event, const char *);
static void	route_new_agent(struct agent *);
static void	route_forget_agent(struct agent *);

/*
 * Build the routing rows from the workflow; the engine's hooks hear of
 * every dispatch, wait and failure, since requests are its own.
 */
void
route_init(const struct workflow *wf, const struct route_hooks *hooks)
{
	struct route_conf	*rc;
	struct route		*r;
	size_t			 i;
	int			 j, idx;

	for (j = 0; j <= INTENT_MAX; j++) {
		r = &route_rows[j];
		memset(r, 0, sizeof *r);
		r->intent = j;
		for (idx = 0; idx < PRIO_COUNT; idx++)
			TAILQ_INIT(&r->queue[idx]);
	}
	for (i = 0; i < wf->nroutes; i++) {
		rc = &wf->routes[i];
		if (strcmp(rc->intent, "*") == 0)
			idx = ROUTE_FALLBACK;
		else
			idx = protocol_intent(rc->intent, strlen(rc->intent));
		r = &route_rows[idx];
		r->confs = rc->agents;
		r->nconfs = rc->nagents;
		r->caps = rc->caps;
		r->ncaps = rc->ncaps;
	}
	free(route_pools);
	route_pools = xcalloc(wf->nagents, sizeof *route_pools);
	for (i = 0; i < wf->nagents; i++)
		TAILQ_INIT(&route_pools[i]);
	free(route_entries);
	free(route_entry_confs);
	route_entries = xcalloc(wf->nagents, sizeof *route_entries);
	route_entry_confs = xcalloc(wf->nagents, sizeof *route_entry_confs);
	route_nentries = wf->nagents;
	for (i = 0; i < wf->nagents; i++) {
		r = &route_entries[i];
		r->intent = ROUTE_ENTRY;
		r->entry = &wf->agents[i];
		route_entry_confs[i] = &wf->agents[i];
		r->confs = &route_entry_confs[i];
		r->nconfs = 1;
		for (idx = 0; idx < PRIO_COUNT; idx++)
			TAILQ_INIT(&r->queue[idx]);
	}
	route_wf = wf;
	route_queued = 0;
	route_hooks = *hooks;
	lifecycle_observe(route_lifecycle);
	breaker_init(route_kick);
	agent_on_create(route_new_agent);
	agent_on_free(route_forget_agent);
}

/*
 * Register who may answer a request itself instead of its agent (corral
 * resume, from the recording): it returns nonzero when it will.
 */
void
route_on_answer(int (*answer)(struct msg *, struct agent *))
{
	route_answer = answer;
}

/* Register the test of whether an agent has a capability (mapview's). */
void
route_on_capability(int (*has)(struct agent *, const char *))
{
	route_has_cap = has;
}

/*
 * An agent changed state: one that can take work now takes the most
 * urgent waiting request.
 */
static void
route_lifecycle(struct agent *a, enum agent_state from, enum agent_state to,
    enum agent_event ev, const char *why)
{
	if (lifecycle_routable(a))
		route_kick(a);
}

/* How many rows there are: the intents', then the entries'. */
static size_t
route_count(void)
{
	return INTENT_MAX + 1 + route_nentries;
}

/* Row i of route_count(): an intent's, or an entry's. */
static struct route *
route_at(size_t i)
{
	if (i <= INTENT_MAX)
		return &route_rows[i];
	return &route_entries[i - INTENT_MAX - 1];
}

/* Say what a row serves, for a person: "intent plan", "agent writer". */
static const char *
route_what(const struct route *r, char *buf, size_t len)
{
	if (r->intent == ROUTE_ENTRY)
		snprintf(buf, len, "agent %s", r->entry->name);
	else if (r->intent == ROUTE_FALLBACK)
		snprintf(buf, len, "route \"*\"");
	else
		snprintf(buf, len, "intent %s", protocol_intent_name(r->intent));
	return buf;
}

/* How many requests wait in the rows' queues. */
unsigned int
route_queued_count(void)
{
	return route_queued;
}

/*
 * How many requests wait in the row of an intent index (or
 * ROUTE_FALLBACK); -1 when the row has no agents.
 */
int
route_row_queued(int idx)
{
	if (idx < 0 || idx > INTENT_MAX || (route_rows[idx].nconfs == 0 &&
	    route_rows[idx].ncaps == 0))
		return -1;
	return (int)route_rows[idx].queued;
}

/* The first request waiting for agent a alone, or NULL. */
struct msg *
route_direct_first(struct agent *a)
{
	struct route_item	*it = TAILQ_FIRST(&a->slot.direct);

	return it != NULL ? ROUTE_MSG(it) : NULL;
}

/* The request after m in its target's own queue, or NULL. */
struct msg *
route_direct_next(struct msg *m)
{
	struct route_item	*it;

	if (!m->ri.queued || m->ri.row != NULL)
		return NULL;
	it = TAILQ_NEXT(&m->ri, entry);
	return it != NULL ? ROUTE_MSG(it) : NULL;
}

/* How many requests wait for agent a alone. */
unsigned int
route_direct_count(struct agent *a)
{
	struct route_item	*it;
	unsigned int		 n = 0;

	TAILQ_FOREACH(it, &a->slot.direct, entry)
		n++;
	return n;
}

/*
 * How long a request may wait in a row's queue: the longest per-message
 * timeout among the row's agents, 0 when one of them waits forever.
 */
static double
route_wait(const struct route *r)
{
	double	t = 0;
	size_t	i;

	for (i = 0; r != NULL && i < r->nconfs; i++) {
		if (r->confs[i]->timeout == 0)
			return 0;	/* one of them waits forever */
		if (r->confs[i]->timeout > t)
			t = r->confs[i]->timeout;
	}
	return t > 0 ? t : 30.0;
}

/* Return the row that routes intent: its own, else the fallback, else NULL. */
struct route *
route_for(int intent)
{
	if (intent >= 0 && intent < INTENT_MAX &&
	    (route_rows[intent].nconfs > 0 || route_rows[intent].ncaps > 0))
		return &route_rows[intent];
	if (route_rows[ROUTE_FALLBACK].nconfs > 0 ||
	    route_rows[ROUTE_FALLBACK].ncaps > 0)
		return &route_rows[ROUTE_FALLBACK];
	return NULL;
}

/* Return nonzero if the row lists the workflow entry ac. */
static int
route_lists(const struct route *r, const struct agent_conf *ac)
{
	size_t	i;

	for (i = 0; i < r->nconfs; i++)
		if (r->confs[i] == ac)
			return 1;
	return 0;
}

/* Does agent a have one of the row's capabilities (registered or not)? */
static int
route_capable(const struct route *r, struct agent *a)
{
	size_t	i;

	for (i = 0; route_has_cap != NULL && i < r->ncaps; i++)
		if (route_has_cap(a, r->caps[i]))
			return 1;
	return 0;
}

/* Return nonzero if the row serves agent a: its entry, or a capability. */
static int
route_serves(const struct route *r, struct agent *a)
{
	return route_lists(r, a->conf) || (r->ncaps > 0 && route_capable(r,
	    a));
}

/*
 * Return nonzero if an agent may still serve work some day: it is alive,
 * or stopped but due to restart.
 */
static int
route_potential(const struct agent *a)
{
	return !(a->flags & AGENT_DEAD) && lifecycle_load(a) != -2;
}

static void	route_dispatch(struct msg *, struct agent *);
static void	route_kick_rows(struct agent *);

/*
 * Return nonzero if a, whose load lifecycle_load gave, can take a message
 * now: the lifecycle gives it work, its stdin takes lines (or it runs a
 * process per request), its circuit lets one through.
 */
static int
route_ready_at(struct agent *a, int load)
{
	return load >= 0 && (adapter_per_call(a) || agent_writable(a)) &&
	    breaker_allows(a);
}

/* Return nonzero if a can take a message now. */
static int
route_ready(struct agent *a)
{
	return route_ready_at(a, lifecycle_load(a));
}

/* What route_pick has found so far. */
struct route_choice {
	struct agent	*best;
	struct agent	*alt;		/* the excluded one, when ready */
	unsigned int	 others;
	int		 excluded;
	int		 best_load;	/* lifecycle_load of best */
};

/*
 * Return nonzero if agent a could not beat the best found so far: its
 * load, when it has one, is its outstanding count, so one that holds
 * more, or as many but was picked more recently, loses whatever the
 * lifecycle, its stdin and its circuit say, and is passed over on these
 * two numbers alone.  Before a best exists every candidate is asked
 * everything, so the counts route_pick gives back when it finds none
 * are whole.
 */
static inline int
route_beaten(const struct route_choice *c, const struct agent *a)
{
	unsigned int	out;

	if (c->best == NULL)
		return 0;
	out = lifecycle_outstanding(a);
	return out > (unsigned int)c->best_load || (out ==
	    (unsigned int)c->best_load && a->slot.last_pick >=
	    c->best->slot.last_pick);
}

/* Consider agent a, a candidate of the row, for m. */
static inline void
route_consider(struct route_choice *c, struct msg *m, struct agent *a)
{
	int	load;

	/* One question to the lifecycle per candidate. */
	if ((a->flags & AGENT_DEAD) || (load = lifecycle_load(a)) == -2)
		return;
	if (m->target != NULL && a != m->target)
		return;
	if (a == m->exclude) {
		c->excluded = 1;
		if (route_ready_at(a, load))
			c->alt = a;
		return;
	}
	c->others++;
	if (c->best == NULL && breaker_is_open(a))
		route_open_circuits++;
	if (!route_ready_at(a, load))
		return;
	if (a->slot.held > 0 && a != m->target)
		return;	/* its next turn is taken */
	if (c->best == NULL || load < c->best_load || (load == c->best_load &&
	    a->slot.last_pick < c->best->slot.last_pick)) {
		c->best = a;
		c->best_load = load;
	}
}

/*
 * Choose an agent for m among the row's candidates.  When none is chosen,
 * *others is set to the number of candidates (other than m->exclude) that
 * exist at all, *excluded_exists to whether m->exclude does, and
 * route_open_circuits to how many of the others' circuits are open; when
 * one other than m->exclude is, *others is at least 1, no more is
 * counted (route_beaten), and nobody reads the rest.
 */
static struct agent *
route_pick(struct route *r, struct msg *m, unsigned int *others,
    int *excluded_exists)
{
	struct route_choice	 c;
	struct agent		*a;
	size_t			 i;

	memset(&c, 0, sizeof c);
	route_open_circuits = 0;
	for (i = 0; i < r->nconfs; i++)
		TAILQ_FOREACH(a, &route_pools[r->confs[i]->index],
		    slot.pool_entry)
			if (!route_beaten(&c, a))
				route_consider(&c, m, a);
	/* An agent of another entry that registered a capability of the row. */
	for (i = 0; r->ncaps > 0 && i < route_wf->nagents; i++) {
		if (route_lists(r, &route_wf->agents[i]))
			continue;
		TAILQ_FOREACH(a, &route_pools[i], slot.pool_entry)
			if (!route_beaten(&c, a) && route_capable(r, a))
				route_consider(&c, m, a);
	}
	*others = c.others;
	*excluded_exists = c.excluded;
	if (c.best == NULL && c.others == 0)
		c.best = c.alt;	/* the only one there is */
	return c.best;
}

/* The "route" line: the ids' lengths as their owners keep them. */
#define ROUTE_AUDIT(m, a, reason)					\
	auditlog_route_q((a)->id, agent_idq(a), (m)->id, (m)->idq,	\
	    protocol_intent_name((m)->intent),				\
	    protocol_intent_q((m)->intent), reason, sizeof(reason) - 1)

/* Record that m went to agent a, and why. */
static void
route_audit(struct msg *m, struct agent *a)
{
	if (m->exclude != NULL)
		ROUTE_AUDIT(m, a, "reflection: fewest outstanding, not the "
		    "author");
	else if (m->target != NULL)
		ROUTE_AUDIT(m, a, "addressed");
	else
		ROUTE_AUDIT(m, a, "fewest outstanding");
}

/* Hand m to agent a. */
static void
route_dispatch(struct msg *m, struct agent *a)
{
	struct ndjson_buf	*lb;
	int			 answered;

	a->slot.last_pick = ++route_pick_seq;
	/* Asked first: it may give m back its recorded trace id. */
	answered = route_answer != NULL && route_answer(m, a);
	breaker_sent(a);
	route_hooks.dispatched(m, a);
	if (auditlog_enabled())
		route_audit(m, a);
	if (answered) {
		/* Its answer comes on the next iteration, as a reply of a's. */
		agent_count_in(a);
		return;
	}
	if (adapter_attached(a)) {
		adapter_request(a, m);
		return;
	}
	/* A long line its request shares is queued by reference. */
	if ((lb = m->lbuf) != NULL)
		ndjson_buf_offer(lb, 1);
	dialect_send(a, m->line, m->len, m->kind == MSG_TASK ? DK_TASK :
	    DK_REQUEST);
	if (lb != NULL)
		ndjson_buf_offer(NULL, 0);
	if (agent_full(a))
		agent_block_reader(a);
}

/*
 * Put m in a queue in the order requests were accepted: at the tail, but
 * for one that comes back for a retry, which takes its place before
 * those accepted after it.
 */
static void
route_insert(struct route_itemq *q, struct msg *m)
{
	struct route_item	*at;

	TAILQ_FOREACH_REVERSE(at, q, route_itemq, entry)
		if (ROUTE_MSG(at)->seq < m->seq)
			break;
	if (at != NULL)
		TAILQ_INSERT_AFTER(q, at, &m->ri, entry);
	else
		TAILQ_INSERT_HEAD(q, &m->ri, entry);
	m->ri.queued = 1;
}

/* Put m in its row's queue for its priority. */
static void
route_enqueue(struct route *r, struct msg *m)
{
	m->ri.row = r;
	route_insert(&r->queue[m->prio], m);
	r->queued++;
	route_queued++;
	route_hooks.queued(m, route_wait(r));
	if (auditlog_enabled())
		auditlog_event("queue", NULL, m->id, "intent",
		    protocol_intent_name(m->intent), "priority",
		    protocol_priority_name(m->prio), NULL);
}

/*
 * The engine changed the priority of a request that waits from level
 * from: in its row's queue it moves to its new level (its target's own
 * queue keeps the order requests came).
 */
void
route_requeue(struct msg *m, unsigned int from)
{
	struct route	*r = m->ri.row;

	if (!m->ri.queued || r == NULL || from >= PRIO_COUNT ||
	    from == m->prio)
		return;
	TAILQ_REMOVE(&r->queue[from], &m->ri, entry);
	route_insert(&r->queue[m->prio], m);
}

/*
 * Call fn for each agent a waiting request m waits for: its target, or
 * every candidate of its row that may serve it some day.
 */
void
route_blockers(struct msg *m, void (*fn)(struct agent *, struct msg *))
{
	struct route	*r = m->ri.row;
	struct agent	*a, *next;
	size_t		 i;

	if (!m->ri.queued)
		return;
	if (r == NULL) {
		if (m->target != NULL)
			fn(m->target, m);
		return;
	}
	for (i = 0; i < route_wf->nagents; i++) {
		if (!route_lists(r, &route_wf->agents[i]) && r->ncaps == 0)
			continue;
		TAILQ_FOREACH_SAFE(a, &route_pools[i], slot.pool_entry, next)
			if (route_potential(a) && a != m->exclude &&
			    route_serves(r, a))
				fn(a, m);
	}
}

/* Take m out of its row's queue, or its target's own. */
void
route_dequeue(struct msg *m)
{
	struct route	*r = m->ri.row;

	if (!m->ri.queued)
		return;
	m->ri.queued = 0;
	if (r == NULL) {
		TAILQ_REMOVE(&m->target->slot.direct, &m->ri, entry);
		route_hooks.unqueued(m, 0);
		return;
	}
	TAILQ_REMOVE(&r->queue[m->prio], &m->ri, entry);
	r->queued--;
	route_queued--;
	route_hooks.unqueued(m, 1);
}

/*
 * Deliver a request addressed to one agent (a child's task, a message):
 * now if it can take it and is not held, else when it is ready.
 */
void
route_direct(struct msg *m)
{
	struct agent	*a = m->target;

	m->ri.row = NULL;
	if (a->slot.held == 0 && route_ready(a)) {
		route_dispatch(m, a);
		return;
	}
	route_insert(&a->slot.direct, m);
	/* It waits for this agent alone: as long as that one's timeout. */
	route_hooks.queued(m, a->conf->timeout);
}

/*
 * Hold an agent's turns (delta 1) while a request pinned to it (a turn
 * of its conversation, a request addressed to it) waits for its retry,
 * or let them go (-1): held, it takes nothing, from the shared queues or
 * its own, so nothing that came later overtakes the one retried, which
 * comes back to its own queue in the order it was accepted
 * (route_insert) and goes first when the hold ends.
 */
void
route_hold(struct agent *a, int delta)
{
	if (delta > 0)
		a->slot.held++;
	else if (a->slot.held > 0 && --a->slot.held == 0)
		route_kick(a);
}

/* A new agent: its own queue is empty. */
static void
route_new_agent(struct agent *a)
{
	TAILQ_INIT(&a->slot.direct);
}

/*
 * An agent is about to be freed: out of its pool.  (The engine clears the
 * requests' references to it.)
 */
static void
route_forget_agent(struct agent *a)
{
	route_remove_agent(a);
}

/*
 * Say why a row has no agent left: each of its agents that failed or
 * stopped for good, with its cause, and the entries that never started.
 */
static void
route_why_none(const struct route *r, char *buf, size_t len)
{
	const struct agent	*a;
	const char		*cause, *last;
	char			 one[1100];
	size_t			 i;
	int			 n = 0;

	buf[0] = '\0';
	for (i = 0; i < r->nconfs; i++) {
		if (TAILQ_EMPTY(&route_pools[r->confs[i]->index])) {
			snprintf(one, sizeof one, "%s%s was never started%s",
			    n++ ? "; " : ": ", r->confs[i]->name,
			    r->confs[i]->autostart ? "" : " (autostart: false)");
			strlcat(buf, one, len);
			continue;
		}
		TAILQ_FOREACH(a, &route_pools[r->confs[i]->index],
		    slot.pool_entry) {
			if (route_potential(a))
				continue;
			cause = lifecycle_cause(a);
			last = lifecycle_last_exit(a);
			snprintf(one, sizeof one, "%s%s %s%s%s%s%s%s", n++ ?
			    "; " : ": ", a->id, lifecycle_state(a) ==
			    AS_FAILED ? "failed" : "stopped", cause ? " (" : "",
			    cause ? cause : "", cause ? ")" : "",
			    last ? ", its last exit: " : "", last ? last : "");
			strlcat(buf, one, len);
		}
	}
	for (i = 0; i < r->ncaps; i++) {
		snprintf(one, sizeof one, "%sno running agent has the "
		    "capability %s", n++ ? "; " : ": ", r->caps[i]);
		strlcat(buf, one, len);
	}
}

/*
 * Route a request: dispatch it, queue it, or fail it.  Returns 0 when it
 * was dispatched or queued, -1 when it failed (its outcome is recorded).
 */
int
route_submit(struct msg *m)
{
	struct route	*r;
	struct agent	*a;
	unsigned int	 others;
	int		 excluded;
	char		 why[2048], causes[1800], what[80];

	if (m->to_entry != NULL)
		r = &route_entries[m->to_entry->index];
	else if ((r = route_for(m->intent)) == NULL) {
		snprintf(why, sizeof why, "no route for intent %s and no \"*\" "
		    "fallback in routes:", protocol_intent_name(m->intent));
		route_hooks.fail(m, "REJECTED", "no_route", why);
		return -1;
	}
	m->ri.row = r;
	a = route_pick(r, m, &others, &excluded);
	if (a != NULL) {
		route_dispatch(m, a);
		return 0;
	}
	if (others == 0 && !excluded) {
		route_why_none(r, causes, sizeof causes);
		if (r->intent == ROUTE_ENTRY)
			snprintf(why, sizeof why, "no agent is left to serve "
			    "%s%s", route_what(r, what, sizeof what), causes);
		else
			snprintf(why, sizeof why, "no agent is left to serve "
			    "intent %s (route %s)%s",
			    protocol_intent_name(m->intent),
			    r->intent == ROUTE_FALLBACK ? "\"*\"" :
			    protocol_intent_name(r->intent), causes);
		route_hooks.fail(m, "UNAVAILABLE", "no_agent", why);
		return -1;
	}
	if (others > 0 && route_open_circuits == others && !excluded) {
		/* Every candidate's circuit is open: fail fast. */
		snprintf(why, sizeof why, "the circuit is open for every agent "
		    "serving %s", r->intent == ROUTE_ENTRY ? route_what(r,
		    what, sizeof what) : protocol_intent_name(m->intent));
		route_hooks.fail(m, "UNAVAILABLE", "circuit_open", why);
		return -1;
	}
	if (r->queued >= route_wf->max_queue) {
		snprintf(why, sizeof why, "the queue for %s is full (%u "
		    "messages waiting)", r->intent == ROUTE_ENTRY ? route_what(r,
		    what, sizeof what) : protocol_intent_name(m->intent),
		    r->queued);
		route_hooks.fail(m, "REJECTED", "queue_full", why);
		return -1;
	}
	route_enqueue(r, m);
	return 0;
}

/* Find the first message at one level that agent a may take. */
static struct msg *
route_takeable(struct route *r, int level, struct agent *a)
{
	struct route_item	*it;
	struct msg		*m;
	unsigned int		 others;
	int			 excluded, n = 0;

	TAILQ_FOREACH(it, &r->queue[level], entry) {
		m = ROUTE_MSG(it);
		if (++n > ROUTE_SCAN)
			break;
		if (m->target != NULL && m->target != a)
			continue;
		if (m->exclude == a) {
			/* Only if no other candidate exists at all. */
			(void)route_pick(r, m, &others, &excluded);
			if (others > 0)
				continue;
		}
		return m;
	}
	return NULL;
}

/*
 * An agent can take more work (it became ready, or answered a message):
 * give it the most urgent waiting message it may take, repeatedly.
 */
void
route_kick(struct agent *a)
{
	struct msg	*m;

	/*
	 * A dispatch tells the lifecycle, whose news (ready to busy) kicks
	 * a again: the loops below go on anyway, and a kick from inside one
	 * would write later requests before the one being dispatched.
	 */
	if (a->slot.held > 0 || a->slot.kicking)
		return;
	a->slot.kicking = 1;
	while ((m = route_direct_first(a)) != NULL && a->slot.held == 0 &&
	    route_ready(a)) {
		route_dequeue(m);
		route_dispatch(m, a);
	}
	if (route_queued > 0 && a->slot.held == 0)
		route_kick_rows(a);
	a->slot.kicking = 0;
}

/* Give agent a the most urgent messages it may take from the rows. */
static void
route_kick_rows(struct agent *a)
{
	struct route	*r, *best_r;
	struct msg	*m, *best;
	ev_tstamp	 now;
	size_t		 j;
	int		 level, best_level, aged;

	now = ev_now(LOOP);
	while (a->slot.held == 0 && route_ready(a)) {
		best = NULL;
		best_r = NULL;
		best_level = -1;
		aged = 0;
		for (j = 0; j < route_count(); j++) {
			r = route_at(j);
			if (r->queued == 0 || !route_serves(r, a))
				continue;
			for (level = PRIO_COUNT - 1; level >= 0; level--) {
				if (TAILQ_EMPTY(&r->queue[level]))
					continue;
				if ((m = route_takeable(r, level, a)) == NULL)
					continue;
				if (now - m->accepted > ROUTE_AGING) {
					/*
					 * Aged: it jumps ahead.  Among aged
					 * heads the lowest level goes first
					 * (the one the others starve), then
					 * the oldest, by the order they came:
					 * a burst read at one instant keeps
					 * that order, not its timestamp.
					 */
					if (!aged || level < best_level ||
					    (level == best_level &&
					    m->seq < best->seq)) {
						best = m;
						best_r = r;
						best_level = level;
					}
					aged = 1;
				} else if (!aged && (level > best_level ||
				    (level == best_level && m->seq <
				    best->seq))) {
					best = m;
					best_r = r;
					best_level = level;
				}
			}
		}
		if (best == NULL)
			break;
		(void)best_r;
		route_dequeue(best);
		route_dispatch(best, a);
	}
}

/*
 * Fail every queued message that no agent will ever serve (its candidates
 * all failed or stopped for good).
 */
void
route_check_orphans(void)
{
	struct route		*r;
	struct route_item	*it, *next;
	struct msg		*m;
	unsigned int		 others;
	size_t			 j;
	int			 level, excluded;
	char			 why[2048], causes[1800], what[80];

	if (route_queued == 0)
		return;
	for (j = 0; j < route_count(); j++) {
		r = route_at(j);
		if (r->queued == 0)
			continue;
		for (level = 0; level < PRIO_COUNT; level++) {
			TAILQ_FOREACH_SAFE(it, &r->queue[level], entry, next) {
				m = ROUTE_MSG(it);
				(void)route_pick(r, m, &others, &excluded);
				if (others > 0 || excluded)
					continue;
				route_dequeue(m);
				route_why_none(r, causes, sizeof causes);
				if (r->intent == ROUTE_ENTRY)
					(void)route_what(r, what, sizeof what);
				else
					snprintf(what, sizeof what, "intent %s",
					    protocol_intent_name(m->intent));
				snprintf(why, sizeof why, "no agent is left to "
				    "serve %s%s", what, causes);
				route_hooks.fail(m, "UNAVAILABLE", "no_agent",
				    why);
			}
		}
	}
}

/* Fail every queued message, for the reason given (shutdown). */
void
route_fail_all(const char *why)
{
	struct route		*r;
	struct route_item	*it;
	struct msg		*m;
	size_t			 j;
	int			 level;

	for (j = 0; j < route_count(); j++) {
		r = route_at(j);
		for (level = 0; level < PRIO_COUNT; level++) {
			while ((it = TAILQ_FIRST(&r->queue[level])) != NULL) {
				m = ROUTE_MSG(it);
				route_dequeue(m);
				route_hooks.fail(m, "UNAVAILABLE", "shutdown",
				    why);
			}
		}
	}
}

/* Add an agent to its workflow entry's pool, making it routable. */
void
route_add_agent(struct agent *a)
{
	if (a->conf->index == UINT32_MAX)
		return;		/* an inline command: in no route */
	TAILQ_INSERT_TAIL(&route_pools[a->conf->index], a, slot.pool_entry);
	a->slot.in_pool = 1;
}

/* Remove an agent from its pool. */
void
route_remove_agent(struct agent *a)
{
	if (a->slot.in_pool) {
		TAILQ_REMOVE(&route_pools[a->conf->index], a,
		    slot.pool_entry);
		a->slot.in_pool = 0;
	}
}
