/*
 * The agent lifecycle: a state x event table (as s6-supervise keeps its
 * own), heartbeats, the stop sequence and restarts with backoff.
 *
 * The table only says which state an event leads to; the callers do the
 * work.  "W" in the table means "the working state": INITIALIZING for an
 * agent that has not completed its handshake, otherwise BUSY when it has
 * messages outstanding and READY when it has none.  Every transition is
 * logged as one line, "agent NAME: FROM -> TO (reason)", and recorded in
 * the audit log, except the READY <-> BUSY flips that every message
 * causes, which are only logged with -vv.
 */

#include <sys/wait.h>

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"

#define X	-1	/* the event does not change the state */
#define W	-2	/* the working state */

static const signed char lifecycle_table[AS_COUNT][AE_COUNT] = {
/*		SPAWN HSHAK WORK  IDLE  MISS  ALIVE STOP  CONT  TOUTS SUSP  RESUM STOP  EXIT  RSTRT GIVUP */
[AS_INITIALIZING] = { X, W, X, X, AS_UNAVAILABLE, X, AS_UNAVAILABLE, X, X,
	AS_SUSPENDED, X, AS_STOPPING, AS_STOPPED, X, AS_FAILED },
[AS_READY] = { X, X, AS_BUSY, X, AS_UNAVAILABLE, X, AS_UNAVAILABLE, X,
	AS_UNAVAILABLE, AS_SUSPENDED, X, AS_STOPPING, AS_STOPPED, X, AS_FAILED },
[AS_BUSY] = { X, X, X, AS_READY, AS_UNAVAILABLE, X, AS_UNAVAILABLE, X,
	AS_UNAVAILABLE, AS_SUSPENDED, X, AS_STOPPING, AS_STOPPED, X, AS_FAILED },
[AS_UNAVAILABLE] = { X, W, X, X, X, W, X, W, X, AS_SUSPENDED, X,
	AS_STOPPING, AS_STOPPED, X, AS_FAILED },
[AS_SUSPENDED] = { X, X, X, X, X, X, X, X, X, X, W, AS_STOPPING, AS_STOPPED,
	X, AS_FAILED },
[AS_STOPPING] = { X, X, X, X, X, X, X, X, X, X, X, X, AS_STOPPED, X,
	AS_FAILED },
[AS_STOPPED] = { AS_INITIALIZING, X, X, X, X, X, X, X, X, X, X, X, X, X,
	AS_FAILED },
[AS_FAILED] = { X, X, X, X, X, X, X, X, X, X, X, X, X, X, X },
};

static const char *lifecycle_states[AS_COUNT] = {
	"INITIALIZING", "READY", "BUSY", "UNAVAILABLE", "SUSPENDED",
	"STOPPING", "STOPPED", "FAILED"
};

/* MAP's names for the same states (docs/lifecycle.md). */
static const char *lifecycle_map_states[AS_COUNT] = {
	"registered", "idle", "busy", "failed", "suspended", "stopping",
	"stopped", "failed"
};

static const char *lifecycle_events[AE_COUNT] = {
	"spawned", "handshake", "work", "idle", "missed", "alive", "sigstop",
	"sigcont", "timeouts", "suspend", "resume", "stop", "exited",
	"restart", "giveup"
};

static void	lifecycle_hb_cb(struct ev_loop *, ev_timer *, int);
static void	lifecycle_life_cb(struct ev_loop *, ev_timer *, int);

/* Name a state. */
const char *
lifecycle_state_name(enum agent_state s)
{
	return s < AS_COUNT ? lifecycle_states[s] : "?";
}

/* Name a state as MAP does. */
const char *
lifecycle_map_state(enum agent_state s)
{
	if (s == AS_UNAVAILABLE)
		return "unavailable";
	return s < AS_COUNT ? lifecycle_map_states[s] : "?";
}

/* Name an event. */
const char *
lifecycle_event_name(enum agent_event e)
{
	return e < AE_COUNT ? lifecycle_events[e] : "?";
}

/*
 * Look up the table: the state that event leads to from state, given
 * whether the agent has work outstanding (working: -1 not yet handshaken,
 * 0 idle, 1 busy).  Returns state itself when nothing changes.
 */
enum agent_state
lifecycle_next(enum agent_state state, enum agent_event ev, int working)
{
	int	next;

	if (state >= AS_COUNT || ev >= AE_COUNT)
		return state;
	next = lifecycle_table[state][ev];
	if (next == X)
		return state;
	if (next == W) {
		if (working < 0)
			return AS_INITIALIZING;
		return working > 0 ? AS_BUSY : AS_READY;
	}
	return (enum agent_state)next;
}

/* Return the agent's "working" argument for lifecycle_next. */
static int
lifecycle_working(const struct agent *a)
{
	if (a->flags & AGENT_NOT_READY)
		return -1;
	return a->outstanding > 0;
}

/*
 * Feed an event to an agent's lifecycle; log and record the transition
 * with the reason given.
 */
void
lifecycle_event(struct agent *a, enum agent_event ev, const char *fmt, ...)
{
	enum agent_state	 from = a->state, to;
	char			 reason[256] = "";
	va_list			 ap;

	to = lifecycle_next(from, ev, lifecycle_working(a));
	if (to == from)
		return;
	if (fmt != NULL) {
		va_start(ap, fmt);
		vsnprintf(reason, sizeof reason, fmt, ap);
		va_end(ap);
	}
	a->state = to;
	if (to == AS_UNAVAILABLE || to == AS_SUSPENDED || to == AS_STOPPING ||
	    to == AS_STOPPED || to == AS_FAILED)
		chan_release_waiters(&a->io);	/* no more work goes there */
	if ((from == AS_READY && to == AS_BUSY) ||
	    (from == AS_BUSY && to == AS_READY)) {
		log_debug("agent %s: %s -> %s", a->id, lifecycle_states[from],
		    lifecycle_states[to]);
		return;
	}
	if (to == AS_UNAVAILABLE || to == AS_FAILED)
		log_warnx("agent %s: %s -> %s%s%s%s", a->id,
		    lifecycle_states[from], lifecycle_states[to],
		    *reason ? " (" : "", reason, *reason ? ")" : "");
	else
		log_info("agent %s: %s -> %s%s%s%s", a->id,
		    lifecycle_states[from], lifecycle_states[to],
		    *reason ? " (" : "", reason, *reason ? ")" : "");
	auditlog_event("state", a->id, NULL, "from", lifecycle_states[from],
	    "to", lifecycle_states[to], "reason", reason, NULL);
	if (lifecycle_routable(a))
		route_kick(a);
	progress_update();
}

/* Return nonzero if the agent may be given new work. */
int
lifecycle_routable(const struct agent *a)
{
	return (a->state == AS_READY || a->state == AS_BUSY) &&
	    a->outstanding < adapter_inflight_cap(a);
}

/* Return nonzero if the agent has a process (or is about to). */
int
lifecycle_alive(const struct agent *a)
{
	return a->state != AS_STOPPED && a->state != AS_FAILED;
}

/* Start the heartbeat timer if the agent has heartbeats. */
void
lifecycle_heartbeat_start(struct agent *a)
{
	double	iv = a->conf->hb_interval;

	if (iv <= 0)
		return;
	ev_timer_stop(cr->loop, &a->hb_w);
	a->last_activity = ev_now(cr->loop);
	ev_timer_init(&a->hb_w, lifecycle_hb_cb, iv, iv);
	a->hb_w.data = a;
	ev_timer_start(cr->loop, &a->hb_w);
}

/* Count one interval: ping, and after enough silence mark unavailable. */
static void
lifecycle_hb_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct agent	*a = w->data;
	ev_tstamp	 now = ev_now(loop);

	if (a->state == AS_SUSPENDED || a->state == AS_STOPPING ||
	    !lifecycle_alive(a))
		return;
	if (now - a->last_activity < a->conf->hb_interval * 0.999) {
		a->hb_missed = 0;
		a->hb_pinged = 0;
		return;
	}
	/* Silence is a miss only when a ping went unanswered. */
	if (a->hb_pinged)
		a->hb_missed++;
	a->hb_pinged = 1;
	if (a->hb_missed >= a->conf->hb_misses && a->state != AS_UNAVAILABLE) {
		a->flags |= AGENT_MISSED;
		lifecycle_event(a, AE_MISSED, "%u missed heartbeats",
		    a->hb_missed);
	}
	control_ping(a);
}

/* Note any frame from the agent: it is alive. */
void
lifecycle_activity(struct agent *a)
{
	a->last_activity = ev_now(cr->loop);
	a->hb_missed = 0;
	a->hb_pinged = 0;
	if (a->state == AS_UNAVAILABLE && (a->flags & (AGENT_MISSED |
	    AGENT_TIMEDOUT)) && !(a->flags & AGENT_STOPPED_SIG)) {
		a->flags &= ~(AGENT_MISSED | AGENT_TIMEDOUT);
		lifecycle_event(a, AE_ALIVE, "answering again");
	}
}

/* Send a signal to the agent's process group. */
void
lifecycle_kill(struct agent *a, int sig)
{
	if (a->pid <= 0)
		return;
	/*
	 * The group outlives its leader while members remain, and its id is
	 * not reused meanwhile.  The pid alone is used only before the
	 * leader is reaped: after that it may name another process.
	 */
	if (kill(-a->pid, sig) == -1 && errno == ESRCH &&
	    !(a->flags & AGENT_EXITED))
		(void)kill(a->pid, sig);
}

/* Arm the life timer for the next step of the stop sequence. */
static void
lifecycle_life_arm(struct agent *a, int step, double after)
{
	ev_timer_stop(cr->loop, &a->life_w);
	a->life_step = step;
	ev_timer_set(&a->life_w, after, 0);
	ev_timer_start(cr->loop, &a->life_w);
}

/* Begin the stop sequence: stdin closed, then signals on a timer. */
static void
lifecycle_begin_stop(struct agent *a, const char *why)
{
	a->flags |= AGENT_STOP_ASKED;
	lifecycle_event(a, AE_STOP, "%s", why);
	chan_close_write(&a->io);
	lifecycle_life_arm(a, 1, a->conf->stop_grace);
}

/*
 * Stop an agent for good: its descendants first (deepest first), then it:
 * stdin closed, SIGTERM (and SIGCONT) to its process group after the
 * grace period, SIGKILL after the stop timeout.
 */
void
lifecycle_stop(struct agent *a, const char *why)
{
	a->flags |= AGENT_NORESTART;
	a->flags &= ~AGENT_RESTART_REQ;
	if (a->state == AS_STOPPED) {
		if (a->life_step == 4) {
			/* Waiting to restart: make that final. */
			ev_timer_stop(cr->loop, &a->life_w);
			a->life_step = 0;
			supervisor_agent_stopped(a);
		}
		return;
	}
	if (a->state == AS_FAILED || a->state == AS_STOPPING)
		return;
	if (adapter_per_call(a)) {
		lifecycle_event(a, AE_STOP, "%s", why);
		if (adapter_stop(a) == 0)
			lifecycle_percall_stopped(a);
		return;
	}
	if (subagent_has_live_children(a)) {
		a->flags |= AGENT_STOP_PENDING;
		free(a->stop_why);
		a->stop_why = xstrdup(why);
		subagent_stop_children(a, "its parent is stopping");
		return;
	}
	lifecycle_begin_stop(a, why);
}

/* The probation time of an agent made unavailable by timeouts is over. */
static void
lifecycle_recover_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct agent	*a = w->data;

	if (a->state != AS_UNAVAILABLE || !(a->flags & AGENT_TIMEDOUT))
		return;
	a->flags &= ~AGENT_TIMEDOUT;
	a->timeouts = 0;
	lifecycle_event(a, AE_ALIVE, "given work again after %gs",
	    a->conf->breaker_reset);
}

/*
 * An agent became unavailable from timeouts: it gets no work, and maybe
 * no pings, so it would stay out for good.  After the circuit reset time
 * (breaker.reset) it is given work again; three more timeouts send it
 * back.  Any line it writes meanwhile brings it back at once.
 */
void
lifecycle_probation(struct agent *a)
{
	ev_timer_stop(cr->loop, &a->recover_w);
	ev_timer_init(&a->recover_w, lifecycle_recover_cb,
	    a->conf->breaker_reset, 0);
	a->recover_w.data = a;
	ev_timer_start(cr->loop, &a->recover_w);
}

/* A per-call agent is stopping and its last process has gone. */
void
lifecycle_percall_stopped(struct agent *a)
{
	if (a->state == AS_STOPPED || a->state == AS_FAILED)
		return;
	a->status = 0;
	if (cr->nagents > 0)
		cr->nagents--;
	lifecycle_event(a, AE_EXITED, "no calls running");
	engine_agent_gone(a, "stopped");
	supervisor_agent_stopped(a);
}

/* Stop an agent so that it starts again (a restart strategy). */
void
lifecycle_restart(struct agent *a, const char *why)
{
	if (a->state == AS_STOPPED || a->state == AS_FAILED ||
	    a->state == AS_STOPPING || adapter_per_call(a))
		return;
	a->flags |= AGENT_RESTART_REQ;
	lifecycle_begin_stop(a, why);
}

/* Move the stop sequence on, or restart after the backoff. */
static void
lifecycle_life_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct agent	*a = w->data;

	switch (a->life_step) {
	case 1:
		if (!(a->flags & AGENT_EXITED))
			log_info("agent %s: still running %gs after stdin "
			    "closed; SIGTERM", a->id, a->conf->stop_grace);
		lifecycle_kill(a, SIGTERM);
		lifecycle_kill(a, SIGCONT);
		lifecycle_life_arm(a, 2, a->conf->stop_timeout);
		break;
	case 2:
		if (!(a->flags & AGENT_EXITED))
			log_warnx("agent %s: did not stop %gs after SIGTERM; "
			    "SIGKILL", a->id, a->conf->stop_timeout);
		else
			log_warnx("agent %s: exited, but something still holds "
			    "its output pipes; SIGKILL to its process group",
			    a->id);
		lifecycle_kill(a, SIGKILL);
		lifecycle_life_arm(a, 3, 1.0);
		break;
	case 3:
		if (a->flags & AGENT_EXITED) {
			/*
			 * A descendant in another session holds the pipes.
			 * Stop waiting for EOF: our ends close, it gets EPIPE.
			 */
			log_warnx("agent %s: output pipes still open after "
			    "SIGKILL; closing them", a->id);
			a->flags |= AGENT_OUT_EOF | AGENT_ERR_EOF;
			agent_close_output(a);
			lifecycle_exited(a);
		} else
			lifecycle_life_arm(a, 3, 1.0);
		break;
	case 5:
		agent_pipe_timeout(a);
		break;
	case 4:
		a->life_step = 0;
		if (cr->shutting_down || (a->flags & AGENT_NORESTART))
			return;
		lifecycle_event(a, AE_RESTART, NULL);
		if (agent_start(a) != 0)
			return;
		break;
	default:
		break;
	}
}

/* Initialize an agent's life timer (once, at creation). */
void
lifecycle_init(struct agent *a)
{
	ev_timer_init(&a->life_w, lifecycle_life_cb, 0, 0);
	a->life_w.data = a;
	ev_timer_init(&a->hb_w, lifecycle_hb_cb, 0, 0);
	a->hb_w.data = a;
}

/*
 * The delay before the nth restart: exponential from backoff_min to
 * backoff_max with 20% jitter, and never sooner than 1 s after the
 * previous spawn.
 */
double
lifecycle_backoff(const struct agent_conf *ac, unsigned int n, double ran)
{
	double	d = ac->backoff_min;

	if (n > 1)
		d = ac->backoff_min * pow(2.0, (double)(n - 1));
	if (d > ac->backoff_max)
		d = ac->backoff_max;
	d = util_jitter(d, 0.2);
	if (d < 1.0 - ran)
		d = 1.0 - ran;
	if (d < 0)
		d = 0;
	return d;
}

/* The restart policy that applies to an agent. */
static enum restart_policy
lifecycle_policy(const struct agent *a)
{
	if (a->restart_override >= 0)
		return (enum restart_policy)a->restart_override;
	/* Spawned children are ephemeral unless their entry says otherwise. */
	if (a->parent != NULL && !a->conf->restart_set)
		return RESTART_TEMPORARY;
	return a->conf->restart;
}

/* Return nonzero if the exit status asks for a restart under the policy. */
static int
lifecycle_wants_restart(const struct agent *a)
{
	int	abnormal;

	if (a->flags & AGENT_RESTART_REQ)
		return 1;
	abnormal = !WIFEXITED_OK(a->status);
	switch (lifecycle_policy(a)) {
	case RESTART_PERMANENT:
		return 1;
	case RESTART_TRANSIENT:
		return abnormal;
	default:
		return 0;
	}
}

/* Count the restarts within the agent's intensity window. */
static unsigned int
lifecycle_recent_restarts(const struct agent *a, ev_tstamp now)
{
	unsigned int	i, recent = 0;

	for (i = 0; i < a->nrestarts; i++)
		if (now - a->restarts[i] <= a->conf->restart_within)
			recent++;
	return recent;
}

/* Return nonzero if the agent, now stopping or stopped, will be restarted. */
int
lifecycle_will_restart(const struct agent *a)
{
	if (cr->shutting_down || (a->flags & AGENT_NORESTART) ||
	    !lifecycle_wants_restart(a) || agent_parent_gone(a))
		return 0;
	return lifecycle_recent_restarts(a, ev_now(cr->loop)) <
	    a->conf->restart_max;
}

/*
 * After an agent stopped: restart it after a backoff if its policy says
 * so and the restart intensity allows, otherwise leave it stopped, or
 * failed for good.
 */
static void
lifecycle_after_stop(struct agent *a, const char *st)
{
	ev_tstamp	 now = ev_now(cr->loop);
	unsigned int	 recent;
	double		 delay, ran;
	int		 requested = (a->flags & AGENT_RESTART_REQ) != 0;

	if (cr->shutting_down || (a->flags & AGENT_NORESTART) ||
	    !lifecycle_wants_restart(a) || agent_parent_gone(a)) {
		a->flags &= ~AGENT_RESTART_REQ;
		supervisor_agent_stopped(a);
		return;
	}
	a->flags &= ~AGENT_RESTART_REQ;

	/* Intensity: how many restarts in the last `within` seconds. */
	recent = lifecycle_recent_restarts(a, now);
	if (recent >= a->conf->restart_max) {
		lifecycle_event(a, AE_GIVEUP, "restart intensity exceeded: %u "
		    "restarts in %gs", recent, a->conf->restart_within);
		supervisor_agent_stopped(a);
		agent_escalate(a, "restart intensity exceeded");
		return;
	}
	if (a->restarts == NULL)
		a->restarts = xcalloc(a->conf->restart_max + 1,
		    sizeof *a->restarts);
	if (a->nrestarts < a->conf->restart_max + 1)
		a->restarts[a->nrestarts++] = now;
	else {
		memmove(a->restarts, a->restarts + 1,
		    (a->nrestarts - 1) * sizeof *a->restarts);
		a->restarts[a->nrestarts - 1] = now;
	}
	a->restart_count++;
	if (!requested)
		subagent_child_restarting(a);
	ran = now - a->spawned_at;
	delay = lifecycle_backoff(a->conf, recent + 1, ran);
	log_info("agent %s: restarting in %.1fs (%s)", a->id, delay, st);
	auditlog_event("restart", a->id, NULL, "after", st, NULL);
	lifecycle_life_arm(a, 4, delay);
}

/*
 * The process is reaped and its pipes are at EOF: it is STOPPED.  Its
 * outstanding work fails, then it restarts or stays down.
 */
void
lifecycle_exited(struct agent *a)
{
	char	st[64];

	if (a->state == AS_STOPPED || a->state == AS_FAILED)
		return;
	ev_timer_stop(cr->loop, &a->life_w);
	ev_timer_stop(cr->loop, &a->hb_w);
	ev_timer_stop(cr->loop, &a->recover_w);
	a->life_step = 0;
	util_describe_status(st, sizeof st, a->status);
	/*
	 * What the agent left running in its process group goes with it
	 * (a detached session is beyond reach until corral exits).
	 */
	lifecycle_kill(a, SIGKILL);
	agent_exited_cleanup(a);
	lifecycle_event(a, AE_EXITED, "%s", st);
	engine_agent_gone(a, st);
	/* Children of this incarnation cannot reach a restarted one. */
	subagent_stop_children(a, "its parent exited");
	lifecycle_after_stop(a, st);
}

/* Give up on, or retry, an agent whose process could not be started. */
void
lifecycle_spawn_failed(struct agent *a, const char *what, int error)
{
	char	 st[256];
	int	 permanent;

	snprintf(st, sizeof st, "%s: %s", what, strerror(error));
	log_warnx("agent %s: spawn failed: %s", a->id, st);
	auditlog_event("spawn_failed", a->id, NULL, "error", st, NULL);
	/*
	 * A missing or unusable program will not appear by itself; running
	 * out of descriptors or processes may pass, so that retries.
	 */
	permanent = (error == ENOENT || error == EACCES || error == ENOEXEC ||
	    error == ENOTDIR || error == ELOOP || error == ENAMETOOLONG ||
	    error == EPERM || error == EISDIR);
	a->status = 127 << 8;
	a->spawned_at = ev_now(cr->loop);
	if (permanent) {
		lifecycle_event(a, AE_GIVEUP, "spawn failed: %s", st);
		engine_agent_gone(a, st);
		supervisor_agent_stopped(a);
		agent_escalate(a, st);
		return;
	}
	engine_agent_gone(a, st);
	lifecycle_after_stop(a, st);
}
