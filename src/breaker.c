/*
 * The circuit breaker of each agent: after breaker.failures failures in
 * a row (timeouts, a lost process) no work goes to the agent for
 * breaker.reset seconds; then breaker.probes requests go through, and
 * the first success closes the circuit again, the first failure opens
 * it anew (docs/reliability.md).
 *
 * Most agents never fail: an agent's breaker state is made at its first
 * failure (NULL: closed, no failures), so an idle agent does not carry it.
 */

#include <stdio.h>
#include <stdlib.h>

#include "corral.h"

static agent_cb	breaker_half_hook;

static void	breaker_cb(struct ev_loop *, ev_timer *, int);

/* Register who hears that a circuit let probes through: the router. */
void
breaker_init(agent_cb half_open)
{
	breaker_half_hook = half_open;
	agent_on_free(breaker_forget);
}

/* An agent is about to be freed: its timer stops, its state goes. */
void
breaker_forget(struct agent *a)
{
	if (a->breaker == NULL)
		return;
	ev_timer_stop(LOOP, &a->breaker->timer);
	free(a->breaker);
	a->breaker = NULL;
}

/* Move an open circuit to half-open once its reset time has passed. */
static void
breaker_half(struct agent *a)
{
	a->breaker->state = BREAKER_HALF;
	a->breaker->probes = 0;
	log_info("agent %s: circuit half-open after %gs; %u probes", a->id,
	    a->conf->breaker_reset, a->conf->breaker_probes);
	auditlog_event("breaker", a->id, NULL, "state", "half-open", NULL);
}

/* The reset time of an open circuit passed: let probes through. */
static void
breaker_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct agent	*a = w->data;

	if (a->breaker->state == BREAKER_OPEN)
		breaker_half(a);
	if (breaker_half_hook != NULL)
		breaker_half_hook(a);
}

/* Open an agent's circuit: no work for it until the reset time. */
static void
breaker_open(struct agent *a, const char *why)
{
	struct breaker	*b = a->breaker;

	b->state = BREAKER_OPEN;
	b->opened_at = ev_now(LOOP);
	b->opens++;
	log_warnx("agent %s: circuit open (%s); no work for %gs", a->id, why,
	    a->conf->breaker_reset);
	agent_release_waiters(a);
	auditlog_event("breaker", a->id, NULL, "state", "open", "reason", why,
	    NULL);
	ev_timer_stop(LOOP, &b->timer);
	ev_timer_init(&b->timer, breaker_cb, a->conf->breaker_reset, 0);
	b->timer.data = a;
	ev_timer_start(LOOP, &b->timer);
}

/* Return nonzero if the circuit lets a request through to a now. */
int
breaker_allows(struct agent *a)
{
	struct breaker	*b = a->breaker;

	if (b == NULL || b->state == BREAKER_CLOSED)
		return 1;
	if (b->state == BREAKER_OPEN) {
		if (ev_now(LOOP) - b->opened_at < a->conf->breaker_reset)
			return 0;
		breaker_half(a);
	}
	return b->probes < a->conf->breaker_probes;
}

/* Return nonzero if a's circuit is open (and not yet due to half-open). */
int
breaker_is_open(const struct agent *a)
{
	return a->breaker != NULL && a->breaker->state == BREAKER_OPEN &&
	    ev_now(LOOP) - a->breaker->opened_at < a->conf->breaker_reset;
}

/* A request went to a: a probe, if the circuit is half-open. */
void
breaker_sent(struct agent *a)
{
	if (a->breaker != NULL && a->breaker->state == BREAKER_HALF)
		a->breaker->probes++;
}

/* Record a failure against an agent's circuit breaker. */
void
breaker_failure(struct agent *a)
{
	struct breaker	*b;
	char		 why[64];

	if (a->breaker == NULL) {
		a->breaker = xcalloc(1, sizeof *a->breaker);
		ev_timer_init(&a->breaker->timer, breaker_cb, 0, 0);
		a->breaker->timer.data = a;
	}
	b = a->breaker;
	if (b->state == BREAKER_HALF) {
		breaker_open(a, "a probe failed");
		return;
	}
	if (b->state == BREAKER_CLOSED &&
	    ++b->failures >= a->conf->breaker_failures) {
		snprintf(why, sizeof why, "%u failures in a row", b->failures);
		breaker_open(a, why);
	}
}

/* Record a success against an agent's circuit breaker. */
void
breaker_success(struct agent *a)
{
	struct breaker	*b = a->breaker;

	if (b == NULL)
		return;
	b->failures = 0;
	if (b->state == BREAKER_HALF) {
		b->state = BREAKER_CLOSED;
		ev_timer_stop(LOOP, &b->timer);
		log_info("agent %s: circuit closed (a probe succeeded)", a->id);
		auditlog_event("breaker", a->id, NULL, "state", "closed", NULL);
	}
}
