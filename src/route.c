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
 * ever exist again, it fails at once.
 *
 * Queues are served highest priority first, FIFO within a level.  So that
 * a flood of urgent work cannot starve the rest, a head that has waited
 * longer than ROUTE_AGING seconds is served before higher levels.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

#define ROUTE_AGING	5.0	/* seconds before a waiting head jumps ahead */
#define ROUTE_SCAN	8	/* queue entries looked at per level */

static uint64_t	route_pick_seq;

/* Build the routing rows from the workflow. */
void
route_init(void)
{
	struct workflow		*wf = cr->wf;
	struct route_conf	*rc;
	struct route		*r;
	size_t			 i;
	int			 j, idx;

	for (j = 0; j <= INTENT_COUNT; j++) {
		r = &cr->routes[j];
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
		r = &cr->routes[idx];
		r->confs = rc->agents;
		r->nconfs = rc->nagents;
	}
	cr->pools = xcalloc(wf->nagents, sizeof *cr->pools);
	for (i = 0; i < wf->nagents; i++)
		TAILQ_INIT(&cr->pools[i]);
}

/* Return the row that routes intent: its own, else the fallback, else NULL. */
struct route *
route_for(int intent)
{
	if (intent >= 0 && intent < INTENT_COUNT &&
	    cr->routes[intent].nconfs > 0)
		return &cr->routes[intent];
	if (cr->routes[ROUTE_FALLBACK].nconfs > 0)
		return &cr->routes[ROUTE_FALLBACK];
	return NULL;
}

/* Return nonzero if the row lists the agent's workflow entry. */
static int
route_serves(const struct route *r, const struct agent *a)
{
	size_t	i;

	for (i = 0; i < r->nconfs; i++)
		if (r->confs[i] == a->conf)
			return 1;
	return 0;
}

/*
 * Return nonzero if an agent may still serve work some day: it is alive,
 * or stopped but due to restart.
 */
static int
route_potential(const struct agent *a)
{
	if (a->flags & AGENT_DEAD)
		return 0;
	if (a->state == AS_FAILED)
		return 0;
	if (a->state == AS_STOPPED && a->life_step != 4 &&
	    !lifecycle_will_restart(a))
		return 0;
	if (a->state == AS_STOPPING)
		return 0;
	return 1;
}

/* Move an open circuit to half-open once its reset time has passed. */
static void
route_breaker_half(struct agent *a)
{
	a->breaker = 2;
	a->probes = 0;
	log_info("agent %s: circuit half-open after %gs; %u probes", a->id,
	    a->conf->breaker_reset, a->conf->breaker_probes);
	auditlog_event("breaker", a->id, NULL, "state", "half-open", NULL);
}

/* The reset time of an open circuit passed: let probes through. */
static void
route_breaker_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct agent	*a = w->data;

	if (a->breaker == 1)
		route_breaker_half(a);
	route_kick(a);
}

/* Open an agent's circuit: no work for it until the reset time. */
static void
route_breaker_open(struct agent *a, const char *why)
{
	a->breaker = 1;
	a->breaker_at = ev_now(cr->loop);
	a->breaker_opens++;
	cr->breaker_trips++;
	log_warnx("agent %s: circuit open (%s); no work for %gs", a->id, why,
	    a->conf->breaker_reset);
	chan_release_waiters(&a->io);
	auditlog_event("breaker", a->id, NULL, "state", "open", "reason", why,
	    NULL);
	ev_timer_stop(cr->loop, &a->breaker_w);
	ev_timer_init(&a->breaker_w, route_breaker_cb, a->conf->breaker_reset,
	    0);
	a->breaker_w.data = a;
	ev_timer_start(cr->loop, &a->breaker_w);
}

/* Return nonzero if the circuit breaker lets a message through to a. */
static int
route_breaker_allows(struct agent *a)
{
	if (a->breaker == 0)
		return 1;
	if (a->breaker == 1) {
		if (ev_now(cr->loop) - a->breaker_at < a->conf->breaker_reset)
			return 0;
		route_breaker_half(a);
	}
	return a->probes < a->conf->breaker_probes;
}

/* Return nonzero if a's circuit is open (and not yet due to half-open). */
static int
route_breaker_open_now(const struct agent *a)
{
	return a->breaker == 1 &&
	    ev_now(cr->loop) - a->breaker_at < a->conf->breaker_reset;
}

static void	route_dispatch(struct msg *, struct agent *);

/* Return nonzero if a can take a message now. */
static int
route_ready(struct agent *a)
{
	if (adapter_per_call(a))
		return lifecycle_routable(a) && route_breaker_allows(a);
	return lifecycle_routable(a) && !(a->io.flags & CHAN_WCLOSED) &&
	    a->io.wfd != -1 && route_breaker_allows(a);
}

/*
 * Choose an agent for m among the row's candidates.  *others is set to the
 * number of candidates (other than m->exclude) that exist at all.
 */
static unsigned int	route_open_circuits;

static struct agent *
route_pick(struct route *r, struct msg *m, unsigned int *others,
    int *excluded_exists)
{
	struct agent	*a, *best = NULL, *alt = NULL;
	size_t		 i;

	*others = 0;
	*excluded_exists = 0;
	route_open_circuits = 0;
	for (i = 0; i < r->nconfs; i++) {
		TAILQ_FOREACH(a, &cr->pools[r->confs[i]->index], pool_entry) {
			if (!route_potential(a))
				continue;
			if (m->target != NULL && a != m->target)
				continue;
			if (a == m->exclude) {
				*excluded_exists = 1;
				if (route_ready(a))
					alt = a;
				continue;
			}
			(*others)++;
			if (route_breaker_open_now(a))
				route_open_circuits++;
			if (!route_ready(a))
				continue;
			if (best == NULL || a->outstanding < best->outstanding ||
			    (a->outstanding == best->outstanding &&
			    a->last_pick < best->last_pick))
				best = a;
		}
	}
	if (best == NULL && *others == 0)
		best = alt;	/* the only one there is */
	return best;
}

/* Hand m to agent a. */
static void
route_dispatch(struct msg *m, struct agent *a)
{
	a->last_pick = ++route_pick_seq;
	if (a->breaker == 2)
		a->probes++;
	engine_dispatched(m, a);
	if (auditlog_enabled())
		auditlog_event("route", a->id, m->id, "intent",
		    protocol_intent_name(m->intent), "reason",
		    m->exclude != NULL ? "reflection: fewest outstanding, not "
		    "the author" : m->target != NULL ? "addressed" :
		    "fewest outstanding", NULL);
	if (a->adapter != NULL) {
		adapter_request(a, m);
		return;
	}
	agent_send(a, m->line, m->len);
	if (chan_full(&a->io) && cr->source != NULL)
		chan_block(cr->source, &a->io);
}

/* Put m at the tail of its row's queue for its priority. */
static void
route_enqueue(struct route *r, struct msg *m)
{
	m->route = r;
	m->where = MSG_QUEUED;
	TAILQ_INSERT_TAIL(&r->queue[m->prio], m, entry);
	r->queued++;
	cr->queued++;
	engine_queued(m);
	if (auditlog_enabled())
		auditlog_event("queue", NULL, m->id, "intent",
		    protocol_intent_name(m->intent), "priority",
		    protocol_priority_name(m->prio), NULL);
}

/* Take m out of its row's queue, or its target's own. */
void
route_dequeue(struct msg *m)
{
	struct route	*r = m->route;

	if (m->where != MSG_QUEUED)
		return;
	if (r == NULL) {
		TAILQ_REMOVE(&m->target->direct, m, entry);
		m->where = MSG_NOWHERE;
		return;
	}
	TAILQ_REMOVE(&r->queue[m->prio], m, entry);
	r->queued--;
	cr->queued--;
	m->where = MSG_NOWHERE;
	engine_unqueued();
}

/*
 * Deliver a request addressed to one agent (a child's task): now if it
 * can take it, else when it is ready.
 */
void
route_direct(struct msg *m)
{
	struct agent	*a = m->target;

	m->route = NULL;
	if (route_ready(a)) {
		route_dispatch(m, a);
		return;
	}
	m->where = MSG_QUEUED;
	TAILQ_INSERT_TAIL(&a->direct, m, entry);
	engine_queued(m);
}

/* Clear references to an agent that is about to be freed. */
void
route_forget_agent(struct agent *a)
{
	struct msg	*m;
	int		 j, level;

	for (j = 0; j <= INTENT_COUNT; j++)
		for (level = 0; level < PRIO_COUNT; level++)
			TAILQ_FOREACH(m, &cr->routes[j].queue[level], entry) {
				if (m->exclude == a)
					m->exclude = NULL;
				if (m->parent_agent == a)
					m->parent_agent = NULL;
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

	if ((r = route_for(m->intent)) == NULL) {
		engine_fail(m, "REJECTED", "no_route", "no route for intent "
		    "%s and no \"*\" fallback in routes:",
		    protocol_intent_name(m->intent));
		return -1;
	}
	m->route = r;
	a = route_pick(r, m, &others, &excluded);
	if (a != NULL) {
		route_dispatch(m, a);
		return 0;
	}
	if (others == 0 && !excluded) {
		engine_fail(m, "UNAVAILABLE", "no_agent", "no agent is left to "
		    "serve intent %s (route %s)", protocol_intent_name(m->intent),
		    r->intent == ROUTE_FALLBACK ? "\"*\"" :
		    protocol_intent_name(r->intent));
		return -1;
	}
	if (others > 0 && route_open_circuits == others && !excluded) {
		/* Every candidate's circuit is open: fail fast. */
		engine_fail(m, "UNAVAILABLE", "circuit_open", "the circuit is "
		    "open for every agent serving intent %s",
		    protocol_intent_name(m->intent));
		return -1;
	}
	if (r->queued >= cr->wf->max_queue) {
		engine_fail(m, "REJECTED", "queue_full", "the queue for intent "
		    "%s is full (%u messages waiting)",
		    protocol_intent_name(m->intent), r->queued);
		return -1;
	}
	route_enqueue(r, m);
	return 0;
}

/* Find the first message at one level that agent a may take. */
static struct msg *
route_takeable(struct route *r, int level, struct agent *a)
{
	struct msg	*m;
	unsigned int	 others;
	int		 excluded, n = 0;

	TAILQ_FOREACH(m, &r->queue[level], entry) {
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
	struct route	*r, *best_r;
	struct msg	*m, *best;
	ev_tstamp	 now;
	int		 j, level, best_level, aged;

	while ((m = TAILQ_FIRST(&a->direct)) != NULL && route_ready(a)) {
		route_dequeue(m);
		route_dispatch(m, a);
	}
	if (cr->queued == 0)
		return;
	now = ev_now(cr->loop);
	while (route_ready(a)) {
		best = NULL;
		best_r = NULL;
		best_level = -1;
		aged = 0;
		for (j = 0; j <= INTENT_COUNT; j++) {
			r = &cr->routes[j];
			if (r->queued == 0 || !route_serves(r, a))
				continue;
			for (level = PRIO_COUNT - 1; level >= 0; level--) {
				if (TAILQ_EMPTY(&r->queue[level]))
					continue;
				if ((m = route_takeable(r, level, a)) == NULL)
					continue;
				if (now - m->accepted > ROUTE_AGING) {
					/* Aged: oldest of the aged wins. */
					if (!aged || m->accepted < best->accepted) {
						best = m;
						best_r = r;
						best_level = level;
					}
					aged = 1;
				} else if (!aged && (level > best_level ||
				    (level == best_level &&
				    m->accepted < best->accepted))) {
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
	struct route	*r;
	struct msg	*m, *next;
	unsigned int	 others;
	int		 j, level, excluded;

	if (cr->queued == 0)
		return;
	for (j = 0; j <= INTENT_COUNT; j++) {
		r = &cr->routes[j];
		if (r->queued == 0)
			continue;
		for (level = 0; level < PRIO_COUNT; level++) {
			TAILQ_FOREACH_SAFE(m, &r->queue[level], entry, next) {
				(void)route_pick(r, m, &others, &excluded);
				if (others > 0 || excluded)
					continue;
				route_dequeue(m);
				engine_fail(m, "UNAVAILABLE", "no_agent", "no "
				    "agent is left to serve intent %s",
				    protocol_intent_name(m->intent));
			}
		}
	}
}

/* Fail every queued message, for the reason given (shutdown). */
void
route_fail_all(const char *why)
{
	struct route	*r;
	struct msg	*m;
	int		 j, level;

	for (j = 0; j <= INTENT_COUNT; j++) {
		r = &cr->routes[j];
		for (level = 0; level < PRIO_COUNT; level++) {
			while ((m = TAILQ_FIRST(&r->queue[level])) != NULL) {
				route_dequeue(m);
				engine_fail(m, "UNAVAILABLE", "shutdown", "%s",
				    why);
			}
		}
	}
}

/* Record a failure against an agent's circuit breaker. */
void
route_breaker_failure(struct agent *a)
{
	char	why[64];

	if (a->breaker == 2) {
		route_breaker_open(a, "a probe failed");
		return;
	}
	if (a->breaker == 0 && ++a->failures >= a->conf->breaker_failures) {
		snprintf(why, sizeof why, "%u failures in a row", a->failures);
		route_breaker_open(a, why);
	}
}

/* Record a success against an agent's circuit breaker. */
void
route_breaker_success(struct agent *a)
{
	a->failures = 0;
	if (a->breaker == 2) {
		a->breaker = 0;
		ev_timer_stop(cr->loop, &a->breaker_w);
		log_info("agent %s: circuit closed (a probe succeeded)", a->id);
		auditlog_event("breaker", a->id, NULL, "state", "closed", NULL);
	}
}

/* Add an agent to its workflow entry's pool, making it routable. */
void
route_add_agent(struct agent *a)
{
	TAILQ_INSERT_TAIL(&cr->pools[a->conf->index], a, pool_entry);
	a->flags |= AGENT_IN_POOL;
}

/* Remove an agent from its pool. */
void
route_remove_agent(struct agent *a)
{
	if (a->flags & AGENT_IN_POOL) {
		TAILQ_REMOVE(&cr->pools[a->conf->index], a, pool_entry);
		a->flags &= ~AGENT_IN_POOL;
	}
}
