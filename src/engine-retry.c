/*
 * The engine's retries and cancels: a failed request is tried again with
 * backoff when the policy says so (docs/reliability.md), else it ends in
 * its error; a cancelled one ends wherever it is, and its agent is told;
 * a request's timer says when its wait is over.  A part of the engine
 * (engine.c): it owns requests.
 */

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "engine-int.h"

/* Return the retry delay before attempt n (1-based). */
static double
engine_retry_delay(unsigned int n)
{
	double	d = engine_wf->retry_initial * pow(engine_wf->retry_factor,
	    (double)(n > 0 ? n - 1 : 0));

	if (d > engine_wf->retry_max)
		d = engine_wf->retry_max;
	return util_jitter(d, 0.25);
}

/*
 * A request leaves the retry list.  Returns the agent whose turns it held
 * (see engine_schedule_retry), for the caller to let go once the request
 * is where it goes next; the request is unpinned from an agent that will
 * not serve again.
 */
struct agent *
engine_unretry(struct msg *m)
{
	struct agent	*t = m->target;

	TAILQ_REMOVE(&engine_retrying, m, entry);
	m->where = MSG_NOWHERE;
	engine_msg_disarm(m);
	if (!m->holds)
		return NULL;
	m->holds = 0;
	/* A task or a message belongs to its agent: engine_retry fails it. */
	if (t != NULL && !engine_will_serve(t) && m->kind != MSG_TASK &&
	    m->kind != MSG_SEND)
		m->target = NULL;
	return t;
}

/* Let an agent's turns go (the result of engine_unretry). */
void
engine_unhold(struct agent *t)
{
	if (t != NULL)
		route_hold(t, -1);
}

/*
 * The retry timer of a request fired: route it again; a turn of one
 * conversation goes back to its agent before it takes any other.
 */
static void
engine_retry(struct msg *m)
{
	struct agent	*held;

	held = engine_unretry(m);
	if (engine_stopping) {
		engine_unhold(held);
		engine_fail(m, "UNAVAILABLE", "shutdown", "corral is shutting "
		    "down");
		return;
	}
	/*
	 * A request pinned to its agent (a task: a hidden child is in no
	 * route; a turn of a conversation) goes back to that agent's own
	 * queue, or fails if the agent will never run again.
	 */
	if (m->target != NULL) {
		if ((m->target->flags & AGENT_DEAD) ||
		    lifecycle_leaving(m->target) ||
		    (!lifecycle_alive(m->target) &&
		    !lifecycle_will_restart(m->target))) {
			engine_unhold(held);
			engine_fail(m, "UNAVAILABLE", "agent_lost", "agent %s "
			    "is gone; %s cannot be tried again", m->target->id,
			    m->id);
			return;
		}
		route_direct(m);
	} else
		engine_submit(m);
	engine_unhold(held);
}

/*
 * Return nonzero for failures corral itself tries again.  An open circuit
 * is transient too, but its point is to fail fast: the caller may retry.
 */
static int
engine_retried(const char *code)
{
	return strcmp(code, "timeout") == 0 || strcmp(code, "agent_lost") == 0;
}

/*
 * Decide whether a failed request is tried again (docs/reliability.md):
 * only TIMEOUT and UNAVAILABLE; HIGH and CRITICAL requests always (at
 * least once), others only when no agent had been given them (at most
 * once).
 */
static int
engine_should_retry(struct msg *m, const char *category, const char *code)
{
	if (!engine_retried(code))
		return 0;
	if (engine_stopping || m->attempts > engine_wf->retries)
		return 0;
	if (m->retries >= engine_wf->retries)
		return 0;
	if (strcmp(category, "TIMEOUT") != 0 &&
	    strcmp(category, "UNAVAILABLE") != 0)
		return 0;
	if (m->prio >= PRIO_HIGH)
		return 1;
	return m->attempts == 0;
}

/*
 * A request in flight at agent a fails and will be retried: if it is a
 * turn of a's one conversation, or addressed to a (a message to it, a
 * child's task), pin it to a and hold a's turns until the retry is given
 * to it (engine_retry), so that nothing sent to a later overtakes it:
 * the messages of a task reach a in the order they were sent, a
 * redelivery included.  Called before the request leaves a, whose freed
 * slot would otherwise take the next turn at once.
 */
void
engine_pin(struct msg *m, struct agent *a, const char *category,
    const char *code)
{
	if (m->holds || !(adapter_ordered(a) || m->target == a) ||
	    !engine_will_serve(a) || !engine_should_retry(m, category, code))
		return;
	m->target = a;
	m->holds = 1;
	route_hold(a, 1);
}

/* Schedule a retry with backoff; the count travels in the envelope. */
static void
engine_schedule_retry(struct msg *m, const char *category, const char *why,
    const char *code)
{
	struct env		 env;
	struct env_error	 err;
	struct jscan		*js;
	char			 member[24], *line;
	size_t			 len;
	double			 delay;

	m->retries++;
	delay = engine_retry_delay(m->retries);
	member[util_u64(member, m->retries)] = '\0';
	js = jscan_take();
	if (jscan_run(js, m->line, m->len) == 0 &&
	    envelope_check(js, m->line, m->len, &env, &err) == 0) {
		line = envelope_corral_set(js, m->line, m->len, &env,
		    "retry_count", member, &len);
		engine_msg_line(m, line, len);
	}
	jscan_give(js);
	if (m->agent != NULL)
		engine_pin(m, m->agent, category, code);
	log_info("request %s: %s (%s); retry %u in %.1fs", m->id, category, why,
	    m->retries, delay);
	auditlog_event("retry", m->agent != NULL ? m->agent->id : NULL, m->id,
	    "category", category, "reason", why, NULL);
	engine_stats.retried++;
	m->where = MSG_RETRYING;
	TAILQ_INSERT_TAIL(&engine_retrying, m, entry);
	engine_msg_disarm(m);
	ev_timer_set(&m->timer, delay, 0);
	ev_timer_start(LOOP, &m->timer);
}

/* Fail a request with a message made already (see engine_fail). */
static void
engine_fail_why(struct msg *m, const char *category, const char *code,
    const char *why)
{
	struct engine_end	 end;
	char			*e, risk[2048];
	size_t			 len;
	int			 expired = (strcmp(category, "TIMEOUT") == 0);

	if (engine_should_retry(m, category, code)) {
		engine_schedule_retry(m, category, why, code);
		return;
	}
	if (m->holds) {
		/* Pinned for a retry that is not to be after all. */
		m->holds = 0;
		engine_unhold(m->target);
	}
	if (expired)
		engine_stats.expired++;
	else
		engine_stats.errored++;
	log_info("request %s: %s: %s", m->id, category, why);
	auditlog_event("outcome", m->agent != NULL ? m->agent->id : NULL,
	    m->id, "outcome", expired ? "expired" : "error", "category",
	    category, "code", code, "reason", why, "risk", ENGINE_RISK(m,
	    risk), NULL);
	if (engine_hooks.outcome != NULL)
		engine_hooks.outcome(m, expired ? "expired" : "error", category,
		    code, why);
	if (engine_hooks.ended != NULL) {
		memset(&end, 0, sizeof end);
		end.outcome = expired ? "expired" : "error";
		end.category = category;
		end.code = code;
		end.why = why;
		end.agent = m->agent != NULL ? m->agent : m->target;
		engine_hooks.ended(m, &end);
	}
	e = envelope_error(code, category, NULL, why, m->id, NULL, &len);
	auditlog_envelope("error", NULL, m->id, e, len);
	if (m->kind == MSG_REFLECT && m->weak != NULL && !engine_stopping &&
	    m->job != NULL && !m->job->done)
		engine_unreflected(m, why);
	else if (m->kind == MSG_STEP && engine_step.failed != NULL &&
	    m->job != NULL && !m->job->done && !engine_stopping)
		engine_step_ended(m, NULL, code, why, e, len);
	else
		engine_request_done(m, e, len, 1);
	free(e);
}

/*
 * A request failed without a reply: record the outcome (errored, or
 * expired for TIMEOUT), retry it when the policy says so, else give its
 * job an error envelope.
 */
void
engine_fail(struct msg *m, const char *category, const char *code,
    const char *fmt, ...)
{
	va_list	 ap;
	char	 why[512];

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	engine_fail_why(m, category, code, why);
}

/*
 * Tell the agent a request was cancelled, if it reads: an adapted tool
 * through its adapter (an interrupt, a signal), an agent that speaks
 * envelopes with a cancel notice it may honour (docs/protocol.md).
 */
static void
engine_cancel_tell(struct agent *a, struct msg *m, const char *why)
{
	char	*e;
	size_t	 len;

	if (adapter_attached(a)) {
		adapter_cancel(a, m);
		return;
	}
	if (!lifecycle_alive(a) || !agent_writable(a) || agent_full(a))
		return;
	e = envelope_cancel(m->id, protocol_intent_name(m->intent), why,
	    &len);
	dialect_send(a, e, len, DK_CANCEL);
	free(e);
}

/*
 * Cancel a request wherever it is: waiting in a queue, waiting for its
 * retry, or at an agent, which is told (engine_cancel_tell).  It ends at
 * once in its one outcome, an error with code cancelled; whatever its
 * agent says of it later is dropped as late.
 */
void
engine_cancel(struct msg *m, const char *why)
{
	struct agent	*a = NULL;

	switch (m->where) {
	case MSG_QUEUED:
		route_dequeue(m);
		break;
	case MSG_RETRYING:
		engine_unhold(engine_unretry(m));
		break;
	case MSG_INFLIGHT:
		a = m->agent;
		engine_cancel_tell(a, m, why);
		engine_undispatch(m);
		m->agent = a;
		break;
	default:
		break;
	}
	log_info("request %s: cancelled: %s", m->id, why);
	auditlog_event("cancel", a != NULL ? a->id : NULL, m->id, "reason",
	    why, NULL);
	engine_fail(m, "REJECTED", "cancelled", "%s", why);
	if (a != NULL)
		route_kick(a);
}

/*
 * Cancel what agent a and its descendants work on, and what waits for
 * them alone (a task not yet taken): it is being stopped on purpose, so
 * its work is cancelled, not lost.  Returns how many requests.
 */
unsigned int
engine_cancel_agent(struct agent *a, const char *why)
{
	struct agent	*c, *next;
	struct msg	*m;
	unsigned int	 n = 0;

	AGENT_FOREACH_CHILD_SAFE(c, a, next)
		n += engine_cancel_agent(c, why);
	while ((m = TAILQ_FIRST(engine_queue(a))) != NULL) {
		engine_cancel(m, why);
		n++;
	}
	while ((m = route_direct_first(a)) != NULL) {
		engine_cancel(m, why);
		n++;
	}
	return n;
}

/* Routing could not place a request. */
void
engine_route_fail(struct msg *m, const char *category, const char *code,
    const char *why)
{
	engine_fail_why(m, category, code, why);
}

/* The timer of a request fired: its wait is over, or its retry is due. */
void
engine_msg_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct msg	*m = w->data;
	struct agent	*a;
	double		 waited = ev_now(loop) - m->accepted;
	char		 tail[300], last[320];

	switch (m->where) {
	case MSG_RETRYING:
		engine_retry(m);
		return;
	case MSG_QUEUED:
		route_dequeue(m);
		engine_fail(m, "TIMEOUT", "timeout", "no agent took the %s "
		    "request within %.3gs", protocol_intent_name(m->intent),
		    waited);
		return;
	case MSG_INFLIGHT:
		a = m->agent;
		if (adapter_attached(a))
			adapter_cancel(a, m);
		engine_pin(m, a, "TIMEOUT", "timeout");
		engine_undispatch(m);
		m->agent = a;
		breaker_failure(a);
		lifecycle_timeout(a);
		/* Its stderr often says why ("connection refused"). */
		last[0] = '\0';
		if (agent_stderr_tail(a, tail, sizeof tail, 1) > 0)
			snprintf(last, sizeof last, "; its last stderr: %s",
			    tail);
		engine_fail(m, "TIMEOUT", "timeout", "agent %s did not reply "
		    "within %.3gs%s%s", a->id, m->timeout > 0 ? m->timeout :
		    a->conf->timeout, last, !adapter_attached(a) &&
		    !dialect_has_answered(a) ? "; it has answered nothing yet; "
		    "hint: a program that is not an agent (sort, tr ...) needs "
		    "adapter: exec (docs/adapters.md); an agent that is only "
		    "slow, a longer timeout:" : "");
		route_kick(a);
		return;
	default:
		return;
	}
}
