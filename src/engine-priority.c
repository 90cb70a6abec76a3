/*
 * Priority inversion: a less urgent request must not hold up a more
 * urgent one.  A request holds another up when the other waits for the
 * agent it is at (in flight there, when the other waits in a queue for
 * that agent or its route), when it waits ahead of the other in that
 * agent's own queue, or when it was made by an agent (a map/send that
 * expects a response, a child's task) that is working on a request held
 * up so.  Such a request is raised to the urgent one's priority, at once
 * and while it waits, and the audit log says so (priority_raised): in a
 * route's queue it moves up to its new level; a request it made in turn
 * is raised too.  A request an agent makes while it works on a more
 * urgent one starts at that one's priority (engine_inherit).
 *
 * Nothing here runs on the way of a request that nothing less urgent
 * could hold up: each agent counts its requests in flight by priority,
 * and only a level below the waiting one's is looked at.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "engine-int.h"

static void	engine_raise(struct msg *, unsigned int, const struct msg *);

/*
 * Say that request m (of agent a, when known) was raised to prio because
 * of request cause.
 */
static void
engine_raise_note(struct agent *a, struct msg *m, unsigned int prio,
    const char *cause)
{
	log_info("request %s%s%s: priority %s raised to %s, the priority of "
	    "request %s it holds up", m->id, a != NULL ? " at " : "",
	    a != NULL ? a->id : "", protocol_priority_name(m->prio),
	    protocol_priority_name(prio), cause);
	auditlog_event("priority_raised", a != NULL ? a->id : NULL, m->id,
	    "from", protocol_priority_name(m->prio), "to",
	    protocol_priority_name(prio), "because", cause, NULL);
}

/* Raise the requests agent a made (its own requests, its children's tasks). */
static void
engine_raise_made_by(struct agent *a, unsigned int prio,
    const struct msg *cause)
{
	struct msg	*w;

	for (w = engine_live_next(NULL); w != NULL; w = engine_live_next(w))
		if (w->prio < prio && (w->requester == a ||
		    (w->kind == MSG_TASK && w->parent_agent == a)))
			engine_raise(w, prio, cause);
}

/*
 * Raise the requests that hold up m at agent a: those in flight there,
 * and those queued ahead of m for it alone.
 */
static void
engine_raise_at(struct agent *a, struct msg *m)
{
	struct work_busy	*b = a->work.busy;
	struct msg		*w, *next;
	unsigned int		 p;

	for (p = 0; b != NULL && p < m->prio && b->by_prio[p] == 0; p++)
		;
	if (b != NULL && p < m->prio)
		TAILQ_FOREACH_SAFE(w, &b->inflight, entry, next)
			if (w->prio < m->prio)
				engine_raise(w, m->prio, m);
	for (w = route_direct_first(a); w != NULL && w != m; w = next) {
		next = route_direct_next(w);
		if (w->prio < m->prio)
			engine_raise(w, m->prio, m);
	}
}

/*
 * Raise request w to prio because it holds up cause: where it waits, it
 * moves up; what it waits for (its agent's own requests), and what waits
 * for it, follow.
 */
static void
engine_raise(struct msg *w, unsigned int prio, const struct msg *cause)
{
	unsigned int	from;

	if (w->prio >= prio)
		return;
	engine_raise_note(w->agent != NULL ? w->agent : w->target != NULL ?
	    w->target : w->requester, w, prio, cause->id);
	if (w->where == MSG_INFLIGHT && w->agent != NULL) {
		/* In flight there: its part is made. */
		w->agent->work.busy->by_prio[w->prio]--;
		w->agent->work.busy->by_prio[prio]++;
	}
	from = w->prio;
	w->prio = (uint8_t)prio;
	if (w->where == MSG_QUEUED)
		route_requeue(w, from);	/* to its new level */
	if (w->where == MSG_INFLIGHT && w->agent != NULL)
		/* Its agent may wait for requests it made meanwhile. */
		engine_raise_made_by(w->agent, prio, cause);
	else if (w->where == MSG_QUEUED)
		/* It waits in turn: what holds it up is raised too. */
		route_blockers(w, engine_raise_at);
}

/*
 * Request m waits in a queue (hooked to the route's queued): raise what
 * holds it up at the agents it waits for.
 */
void
engine_prio_waiting(struct msg *m)
{
	if (m->prio > PRIO_BATCH)
		route_blockers(m, engine_raise_at);
}

/*
 * A request agent a makes while it works on more urgent ones would hold
 * them up behind less urgent work: it starts at the most urgent one's
 * priority, and the audit log says so.
 */
void
engine_inherit(struct agent *a, struct msg *m)
{
	struct msg	*w, *top = NULL;

	m->requester = a;
	TAILQ_FOREACH(w, engine_queue(a), entry)
		if (w->prio > m->prio && (top == NULL || w->prio > top->prio))
			top = w;
	if (top == NULL)
		return;
	engine_raise_note(a, m, top->prio, top->id);
	m->prio = top->prio;
}
