/*
 * The agent lifecycle, the s6 way: one table of rules, state x event ->
 * the next state and the action that follows, and nothing else decides.
 *
 * Events come in from below (agent.c reports an exit, a pipe that closed,
 * a SIGSTOP; adapters report their tool ready or gone) and from above
 * (the engine's work and idle, a handshake, a stop, a suspend).  Each
 * transition is logged as one line, "agent NAME: FROM -> TO (reason)",
 * and recorded in the audit log, except the READY <-> BUSY flips that
 * every message causes (logged with -vv).  Then every registered observer
 * hears of it, in the order they registered: routing, work, sub-agent
 * bookkeeping, the supervisor's shutdown and the progress view all follow
 * a transition that way, never by a call from here.
 *
 * The stop sequence: stdin closed (STOPPING), SIGTERM and SIGCONT to the
 * process group after the grace period (TERMINATING), SIGKILL after the
 * stop timeout (KILLING).  An agent stops after its children, deepest
 * first.  Restarts wait out an exponential backoff (BACKOFF), at least a
 * second after the last spawn, within the restart intensity.
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

#define X	-1	/* the state does not change */
#define W	-2	/* the working state */
#define NONE	-3	/* no rule: the event is ignored */

#define LIFECYCLE_OBSERVERS	8

typedef void	life_action(struct agent *, const char *);

/* One rule of the table. */
struct life_rule {
	enum agent_state	 from;
	enum agent_event	 ev;
	int			 to;
	life_action		*act;
};

static life_action	life_spawn, life_spawned, life_ready, life_begin_stop,
			life_term, life_kill, life_kill_wait, life_exited,
			life_broken, life_failed,
			life_suspend, life_resume, life_cancel_backoff,
			life_timedout;

/*
 * The rules.  "W" is the working state: INITIALIZING for an agent that
 * has not completed its handshake, otherwise BUSY when it has requests
 * outstanding and READY when it has none.
 */
#define RUNNING(ev, to, act) \
	{ AS_INITIALIZING, ev, to, act }, { AS_READY, ev, to, act }, \
	{ AS_BUSY, ev, to, act }, { AS_UNAVAILABLE, ev, to, act }, \
	{ AS_SUSPENDED, ev, to, act }
#define STOPPING(ev, to, act) \
	{ AS_STOPPING, ev, to, act }, { AS_TERMINATING, ev, to, act }, \
	{ AS_KILLING, ev, to, act }

static const struct life_rule lifecycle_rules[] = {
	/* Starting. */
	{ AS_STOPPED, AE_START, X, life_spawn },
	{ AS_STOPPED, AE_SPAWNED, AS_INITIALIZING, life_spawned },
	{ AS_BACKOFF, AE_TIMER, X, life_spawn },
	{ AS_BACKOFF, AE_SPAWNED, AS_INITIALIZING, life_spawned },
	{ AS_BACKOFF, AE_STOP, AS_STOPPED, life_cancel_backoff },
	{ AS_BACKOFF, AE_KILL, AS_STOPPED, life_cancel_backoff },
	{ AS_INITIALIZING, AE_HANDSHAKE, W, life_ready },

	/* Working. */
	{ AS_READY, AE_WORK, AS_BUSY, NULL },
	{ AS_BUSY, AE_IDLE, AS_READY, NULL },

	/* Trouble, and the way back. */
	{ AS_INITIALIZING, AE_MISSED, AS_UNAVAILABLE, NULL },
	{ AS_INITIALIZING, AE_SIGSTOP, AS_UNAVAILABLE, NULL },
	{ AS_READY, AE_MISSED, AS_UNAVAILABLE, NULL },
	{ AS_READY, AE_SIGSTOP, AS_UNAVAILABLE, NULL },
	{ AS_READY, AE_TIMEOUTS, AS_UNAVAILABLE, life_timedout },
	{ AS_BUSY, AE_MISSED, AS_UNAVAILABLE, NULL },
	{ AS_BUSY, AE_SIGSTOP, AS_UNAVAILABLE, NULL },
	{ AS_BUSY, AE_TIMEOUTS, AS_UNAVAILABLE, life_timedout },
	{ AS_UNAVAILABLE, AE_HANDSHAKE, W, life_ready },
	{ AS_UNAVAILABLE, AE_ALIVE, W, NULL },
	{ AS_UNAVAILABLE, AE_SIGCONT, W, NULL },

	/* Suspend parks any running agent; only resume brings it back. */
	{ AS_INITIALIZING, AE_SUSPEND, AS_SUSPENDED, life_suspend },
	{ AS_READY, AE_SUSPEND, AS_SUSPENDED, life_suspend },
	{ AS_BUSY, AE_SUSPEND, AS_SUSPENDED, life_suspend },
	{ AS_UNAVAILABLE, AE_SUSPEND, AS_SUSPENDED, life_suspend },
	{ AS_SUSPENDED, AE_RESUME, W, life_resume },

	/* Stopping, for good or to start again. */
	RUNNING(AE_STOP, AS_STOPPING, life_begin_stop),
	RUNNING(AE_RESTART, AS_STOPPING, life_begin_stop),
	RUNNING(AE_REAPED, AS_TERMINATING, life_term),
	RUNNING(AE_BROKEN, AS_TERMINATING, life_broken),
	RUNNING(AE_KILL, AS_KILLING, life_kill),
	{ AS_STOPPING, AE_TIMER, AS_TERMINATING, life_term },
	{ AS_STOPPING, AE_KILL, AS_KILLING, life_kill },
	{ AS_TERMINATING, AE_TIMER, AS_KILLING, life_kill },
	{ AS_TERMINATING, AE_KILL, AS_KILLING, life_kill },
	{ AS_KILLING, AE_TIMER, X, life_kill_wait },

	/* The end of a process, whatever led to it, and a restart. */
	RUNNING(AE_EXITED, AS_STOPPED, life_exited),
	STOPPING(AE_EXITED, AS_STOPPED, life_exited),
	{ AS_STOPPED, AE_RESTART_DUE, AS_BACKOFF, NULL },
	{ AS_STOPPED, AE_RESTART, AS_BACKOFF, NULL },

	/* Giving up. */
	RUNNING(AE_GIVEUP, AS_FAILED, life_failed),
	STOPPING(AE_GIVEUP, AS_FAILED, life_failed),
	{ AS_STOPPED, AE_GIVEUP, AS_FAILED, life_failed },
	{ AS_BACKOFF, AE_GIVEUP, AS_FAILED, life_failed },
};

/* The rules as a table, built once. */
static struct {
	signed char	 to;
	life_action	*act;
} lifecycle_table[AS_COUNT][AE_COUNT];
static int	lifecycle_built;

static const char *lifecycle_states[AS_COUNT] = {
	"INITIALIZING", "READY", "BUSY", "UNAVAILABLE", "SUSPENDED",
	"STOPPING", "STOPPED", "FAILED", "STOPPING", "STOPPING", "STOPPED"
};

static const char *lifecycle_events[AE_COUNT] = {
	"spawned", "handshake", "work", "idle", "missed", "alive", "sigstop",
	"sigcont", "timeouts", "suspend", "resume", "stop", "exited",
	"restart", "giveup", "start", "timer", "reaped", "broken", "kill",
	"restart_due"
};

static lifecycle_observer	lifecycle_observers[LIFECYCLE_OBSERVERS];
static const struct lifecycle_spawner *lifecycle_spawner;
static size_t			lifecycle_nobservers;

/*
 * Transitions made while the observers hear of another one (READY makes
 * the router dispatch, which makes the agent BUSY): told after it, in
 * order, so that no observer hears of them out of order.
 */
struct lifecycle_told {
	struct agent		*a;
	enum agent_state	 from;
	enum agent_state	 to;
	enum agent_event	 ev;
	char			*why;
};
static struct lifecycle_told	*lifecycle_later;
static size_t			 lifecycle_nlater;
static size_t			 lifecycle_later_cap;
static int			 lifecycle_telling;
static int			lifecycle_shutdown;
static uint64_t			lifecycle_seq;

static void	lifecycle_news(struct agent *, enum agent_event, const char *);
static int	lifecycle_may_restart(const struct agent *);
static unsigned int lifecycle_recent_restarts(const struct agent *,
		    ev_tstamp);
static void	lifecycle_giveup(struct agent *, const char *, const char *);
static void	lifecycle_hb(struct agent *, ev_tstamp);
static void	lifecycle_life_cb(struct ev_loop *, ev_timer *, int);
static void	lifecycle_recover_cb(struct ev_loop *, ev_timer *, int);
static void	lifecycle_forget(struct agent *);
static struct life_more *life_more(struct agent *);
static char	*life_take_stop_why(struct agent *);
static void	 life_set_stop_why(struct agent *, const char *);
static void	lifecycle_after_child(struct agent *);
static int	lifecycle_stop_children(struct agent *, const char *);

/* Build the table from the rules. */
static void
lifecycle_build(void)
{
	size_t	i;
	int	s, e;

	for (s = 0; s < AS_COUNT; s++)
		for (e = 0; e < AE_COUNT; e++)
			lifecycle_table[s][e].to = NONE;
	for (i = 0; i < sizeof lifecycle_rules / sizeof lifecycle_rules[0];
	    i++) {
		s = lifecycle_rules[i].from;
		e = lifecycle_rules[i].ev;
		if (lifecycle_table[s][e].to != NONE)
			fatalx("lifecycle: two rules for %s/%s",
			    lifecycle_states[s], lifecycle_events[e]);
		lifecycle_table[s][e].to = (signed char)lifecycle_rules[i].to;
		lifecycle_table[s][e].act = lifecycle_rules[i].act;
	}
	lifecycle_built = 1;
}

/*
 * The next step of a per-call process's stop sequence (proc.c asks): a
 * call is stopped by the rules that stop an agent.
 */
static enum agent_state
lifecycle_call_next(enum agent_state s, enum agent_event ev)
{
	return lifecycle_next(s, ev, 1);
}

/*
 * Set the module up: the table, the news agent.c brings, and the stop
 * sequence of per-call processes.
 */
void
lifecycle_init(void)
{
	if (!lifecycle_built)
		lifecycle_build();
	lifecycle_nobservers = 0;
	lifecycle_shutdown = 0;
	agent_on_event(lifecycle_news);
	agent_on_free(lifecycle_forget);
	proc_on_stop(lifecycle_call_next);
}

/* Register who starts processes in agent.c's place (launch.c). */
void
lifecycle_set_spawner(const struct lifecycle_spawner *s)
{
	lifecycle_spawner = s;
}

/* Register an observer of every transition. */
void
lifecycle_observe(lifecycle_observer fn)
{
	size_t	i;

	for (i = 0; i < lifecycle_nobservers; i++)
		if (lifecycle_observers[i] == fn)
			return;
	if (lifecycle_nobservers == LIFECYCLE_OBSERVERS)
		fatalx("lifecycle_observe: more than %d observers",
		    LIFECYCLE_OBSERVERS);
	lifecycle_observers[lifecycle_nobservers++] = fn;
}

/* From now on nothing restarts: corral is shutting down. */
void
lifecycle_set_shutdown(void)
{
	lifecycle_shutdown = 1;
}

/* Return nonzero once corral is shutting down. */
int
lifecycle_shutting_down(void)
{
	return lifecycle_shutdown;
}

/* Name a state as people see it. */
const char *
lifecycle_state_name(enum agent_state s)
{
	return s < AS_COUNT ? lifecycle_states[s] : "?";
}

/* Name an event. */
const char *
lifecycle_event_name(enum agent_event e)
{
	return e < AE_COUNT ? lifecycle_events[e] : "?";
}

/*
 * The rule for a state and an event, for the tests that hold the
 * documentation to the table: 0 when there is none, else 1 with the state
 * it leads to (-1: no change, -2: the working state) and whether an
 * action follows.
 */
int
lifecycle_rule(enum agent_state state, enum agent_event ev, int *to,
    int *act)
{
	if (!lifecycle_built)
		lifecycle_build();
	if (state >= AS_COUNT || ev >= AE_COUNT ||
	    lifecycle_table[state][ev].to == NONE)
		return 0;
	*to = lifecycle_table[state][ev].to == X ? -1 :
	    lifecycle_table[state][ev].to == W ? -2 :
	    lifecycle_table[state][ev].to;
	*act = lifecycle_table[state][ev].act != NULL;
	return 1;
}

/*
 * Look up the table: the state that event leads to from state, given
 * whether the agent has work outstanding (working: -1 not yet handshaken,
 * 0 idle, 1 busy).  Returns state itself when nothing changes.
 */
enum agent_state
lifecycle_next(enum agent_state state, enum agent_event ev, int working)
{
	int	to;

	if (!lifecycle_built)
		lifecycle_build();
	if (state >= AS_COUNT || ev >= AE_COUNT)
		return state;
	to = lifecycle_table[state][ev].to;
	if (to == X || to == NONE)
		return state;
	if (to == W) {
		if (working < 0)
			return AS_INITIALIZING;
		return working > 0 ? AS_BUSY : AS_READY;
	}
	return (enum agent_state)to;
}

/* Return the agent's "working" argument for lifecycle_next. */
static int
lifecycle_working(const struct agent *a)
{
	if (a->life.flags & LF_NOT_READY)
		return -1;
	return a->life.outstanding > 0;
}

/* Return nonzero for the states in which no work may be sent. */
static int
lifecycle_closed(enum agent_state s)
{
	return s != AS_INITIALIZING && s != AS_READY && s != AS_BUSY;
}

/*
 * Tell every observer of a transition.  One made while they are being
 * told of another waits until every observer has heard of that one.
 * Agents are freed only between loop iterations, so a transition that
 * waits still has its agent.
 */
static void
lifecycle_tell(struct agent *a, enum agent_state from, enum agent_state to,
    enum agent_event ev, const char *why)
{
	struct lifecycle_told	*t;
	size_t			 i, k;

	if (lifecycle_telling) {
		if (lifecycle_nlater == lifecycle_later_cap) {
			lifecycle_later_cap = lifecycle_later_cap * 2 + 8;
			lifecycle_later = xreallocarray(lifecycle_later,
			    lifecycle_later_cap, sizeof *lifecycle_later);
		}
		t = &lifecycle_later[lifecycle_nlater++];
		t->a = a;
		t->from = from;
		t->to = to;
		t->ev = ev;
		t->why = xstrdup(why);
		return;
	}
	lifecycle_telling = 1;
	for (i = 0; i < lifecycle_nobservers; i++)
		lifecycle_observers[i](a, from, to, ev, why);
	/* The list may grow (and move) while one of it is told. */
	for (k = 0; k < lifecycle_nlater; k++) {
		for (i = 0; i < lifecycle_nobservers; i++) {
			t = &lifecycle_later[k];
			lifecycle_observers[i](t->a, t->from, t->to, t->ev,
			    t->why);
		}
		free(lifecycle_later[k].why);
	}
	lifecycle_nlater = 0;
	lifecycle_telling = 0;
}

/* Move to a state: log, record, and tell the observers. */
static void
lifecycle_set(struct agent *a, enum agent_state to, enum agent_event ev,
    const char *why)
{
	enum agent_state	 from = a->life.state;
	const char		*fn = lifecycle_states[from];
	const char		*tn = lifecycle_states[to];

	a->life.state = to;
	if (lifecycle_closed(to) && !lifecycle_closed(from))
		agent_release_waiters(a);	/* no more work */
	if (why == NULL)
		why = "";
	if (fn == tn)
		;	/* a step within a state people see */
	else if ((from == AS_READY && to == AS_BUSY) ||
	    (from == AS_BUSY && to == AS_READY))
		log_debug("agent %s: %s -> %s", a->id, fn, tn);
	else {
		if (to == AS_UNAVAILABLE || to == AS_FAILED)
			log_warnx("agent %s: %s -> %s%s%s%s", a->id, fn, tn,
			    *why ? " (" : "", why, *why ? ")" : "");
		else
			log_info("agent %s: %s -> %s%s%s%s", a->id, fn, tn,
			    *why ? " (" : "", why, *why ? ")" : "");
		auditlog_event("state", a->id, NULL, "from", fn, "to", tn,
		    "reason", why, NULL);
	}
	lifecycle_tell(a, from, to, ev, why);
}

/* Feed an event to an agent's lifecycle, with the reason given. */
void
lifecycle_feed(struct agent *a, enum agent_event ev, const char *why)
{
	enum agent_state	 from = a->life.state, to;
	int			 rule;
	life_action		*act;

	if (from >= AS_COUNT || ev >= AE_COUNT)
		fatalx("lifecycle_feed: state %d event %d", from, ev);
	rule = lifecycle_table[from][ev].to;
	if (rule == NONE)
		return;
	act = lifecycle_table[from][ev].act;
	to = lifecycle_next(from, ev, lifecycle_working(a));
	if (to != from)
		lifecycle_set(a, to, ev, why);
	if (act != NULL)
		act(a, why);
}

/*
 * The process ended (why: its exit status).  How, with the stderr that
 * explains it, goes into the errors of the requests that wanted it, so it
 * is noted before anyone hears of the exit.  An exit before its first
 * line (or its handshake) is a failed start.
 */
static void
lifecycle_note_exit(struct agent *a, const char *why)
{
	struct life_more	*m;
	char			 note[1024], tail[800];

	if (!lifecycle_alive(a) || adapter_per_call(a))
		return;
	if (agent_stderr_tail(a, tail, sizeof tail, 2) > 0)
		snprintf(note, sizeof note, "%s; its last stderr: %s", why,
		    tail);
	else
		snprintf(note, sizeof note, "%s, and wrote nothing on stderr",
		    why);
	m = life_more(a);
	free(m->last_exit);
	m->last_exit = xstrdup(note);
	if (!(a->life.flags & (LF_SPOKE | LF_STOP_ASKED)) &&
	    ++a->life.failed_starts >= a->conf->failed_starts) {
		snprintf(note, sizeof note, "failed to start %u times in a row",
		    a->life.failed_starts);
		free(m->cause);
		m->cause = xstrdup(note);
	}
}

/*
 * News from below: agent.c about the process, an adapter about its tool.
 * A handshake counts once; a continued process starts its heartbeat
 * count afresh.
 */
static void
lifecycle_news(struct agent *a, enum agent_event ev, const char *why)
{
	char	buf[1200], cause[64];

	switch (ev) {
	case AE_HANDSHAKE:
		lifecycle_ready(a, why);
		return;
	case AE_SIGSTOP:
		snprintf(buf, sizeof buf, "stopped by signal %s", why);
		lifecycle_feed(a, ev, buf);
		return;
	case AE_RESTART:
		lifecycle_restart(a, why);
		return;
	case AE_EXITED:
		lifecycle_note_exit(a, why);
		/* (The restart intensity, when it is spent too, says so.) */
		if (a->life.failed_starts >= a->conf->failed_starts &&
		    lifecycle_alive(a) && !lifecycle_stopping(a) &&
		    lifecycle_may_restart(a) && lifecycle_recent_restarts(a,
		    ev_now(LOOP)) < a->conf->restart_max) {
			/* Failed for good before anyone hears of the exit. */
			snprintf(cause, sizeof cause, "failed to start %u times "
			    "in a row", a->life.failed_starts);
			snprintf(buf, sizeof buf, "%s: %s", cause,
			    lifecycle_last_exit(a));
			lifecycle_giveup(a, cause, buf);
			return;
		}
		break;
	case AE_SIGCONT:
		a->life.last_activity = ev_now(LOOP);
		a->life.flags &= ~LF_MISSED;
		break;
	default:
		break;
	}
	lifecycle_feed(a, ev, why);
}

/* lifecycle_feed with a formatted reason. */
void
lifecycle_event(struct agent *a, enum agent_event ev, const char *fmt, ...)
{
	char	why[256] = "";
	va_list	ap;

	if (fmt != NULL) {
		va_start(ap, fmt);
		vsnprintf(why, sizeof why, fmt, ap);
		va_end(ap);
	}
	lifecycle_feed(a, ev, why);
}

/*
 * What routing asks of a candidate, at once: -2 when the agent will serve
 * no more (failed, stopping, or stopped with no restart due), -1 when it
 * may some day but cannot be given work now, else how many requests it
 * holds (it may be given one more).
 */
int
lifecycle_load(const struct agent *a)
{
	enum agent_state	s = a->life.state;

	if (s == AS_READY || s == AS_BUSY)
		return a->life.outstanding < lifecycle_window(a) ?
		    (int)a->life.outstanding : -1;
	if (s == AS_FAILED || s == AS_STOPPING || s == AS_TERMINATING ||
	    s == AS_KILLING || (s == AS_STOPPED && !lifecycle_will_restart(a)))
		return -2;
	return -1;
}

/*
 * The adaptive window (max_inflight: auto, docs/workflow.md): an agent
 * that answers quickly while it holds all it may is given more at once,
 * since pipelining is then what limits it; one whose answers queue up
 * behind each other is given less, so that waiting work stays in corral,
 * where another instance may take it and a cancel costs nothing.  The
 * window never falls below the old fixed default, so no agent is slower
 * for it.
 */
#define WINDOW_MIN	16	/* where it starts, and its floor */
#define WINDOW_MAX	1024
#define WINDOW_FAST	0.010	/* an answer in this many seconds: grow */
#define WINDOW_SLOW	0.100	/* in more than this: shrink */

/* How many requests agent a may hold at once now. */
unsigned int
lifecycle_window(const struct agent *a)
{
	unsigned int	cap = adapter_inflight_cap(a);

	if (cap != 0)
		return cap;
	/* A per-call adapter's requests are processes: no more at once. */
	if (adapter_attached(a) || a->life.window == 0)
		return WINDOW_MIN;
	/*
	 * Beyond the floor only while its stdin is under the high
	 * watermark: the requests queued for an agent stay within the
	 * memory bound of a fixed window of 16 (docs/reliability.md).
	 */
	if (a->life.outstanding >= WINDOW_MIN && agent_full(a))
		return WINDOW_MIN;
	return a->life.window;
}

/*
 * The window after an answer that took latency seconds, given while the
 * agent held outstanding requests (this one included) of a window of w
 * (0: none yet).
 */
unsigned int
lifecycle_window_next(unsigned int w, unsigned int outstanding,
    double latency)
{
	if (w == 0)
		w = WINDOW_MIN;
	if (latency > WINDOW_SLOW)
		return w / 2 > WINDOW_MIN ? w / 2 : WINDOW_MIN;
	if (latency <= WINDOW_FAST && outstanding >= w && w < WINDOW_MAX)
		return w + 1;	/* it kept up with all it was given */
	return w;
}

/* Agent a answered a request it was given latency seconds before. */
void
lifecycle_answered(struct agent *a, double latency)
{
	if (adapter_inflight_cap(a) != 0 || adapter_attached(a))
		return;
	a->life.window = lifecycle_window_next(a->life.window,
	    a->life.outstanding, latency);
}

/* Return nonzero if the agent may be given new work. */
int
lifecycle_routable(const struct agent *a)
{
	return (a->life.state == AS_READY || a->life.state == AS_BUSY) &&
	    a->life.outstanding < lifecycle_window(a);
}

/* Return nonzero if the agent has a process (or is about to). */
int
lifecycle_alive(const struct agent *a)
{
	return a->life.state != AS_STOPPED && a->life.state != AS_FAILED &&
	    a->life.state != AS_BACKOFF;
}

/* Return nonzero if the agent is on its way out (any stop step). */
int
lifecycle_stopping(const struct agent *a)
{
	return a->life.state == AS_STOPPING ||
	    a->life.state == AS_TERMINATING || a->life.state == AS_KILLING;
}

/* Return nonzero if the agent is stopped or failed, and stays so. */
int
lifecycle_done(const struct agent *a)
{
	return a->life.state == AS_FAILED || (a->life.state == AS_STOPPED &&
	    !lifecycle_will_restart(a));
}

/* Return nonzero if the agent is leaving for good (stop asked, or due). */
int
lifecycle_leaving(const struct agent *a)
{
	return lifecycle_stopping(a) || (a->life.flags & (LF_NORESTART |
	    LF_STOP_PENDING)) != 0;
}

/* Return nonzero if corral began stopping the agent's process itself. */
int
lifecycle_stop_asked(const struct agent *a)
{
	return (a->life.flags & LF_STOP_ASKED) != 0;
}

/* Return nonzero if the agent has not completed its handshake. */
int
lifecycle_handshaking(const struct agent *a)
{
	return (a->life.flags & LF_NOT_READY) != 0;
}

/* The agent's state, its steps within the states people see included. */
enum agent_state
lifecycle_state(const struct agent *a)
{
	return a->life.state;
}

/* When the agent last wrote a line (heartbeats count from then). */
ev_tstamp
lifecycle_last_activity(const struct agent *a)
{
	return a->life.last_activity;
}

/* How many times the agent was restarted. */
unsigned int
lifecycle_restarts(const struct agent *a)
{
	return a->life.more != NULL ? a->life.more->restart_count : 0;
}

/* When its process started, in the order of all agents' starts. */
uint64_t
lifecycle_start_seq(const struct agent *a)
{
	return a->life.start_seq;
}

/* How many requests the agent holds: sent to it, not yet answered. */
unsigned int
lifecycle_outstanding(const struct agent *a)
{
	return a->life.outstanding;
}

/*
 * The engine gave the agent one more request (delta 1) or took one back
 * (-1): the first makes it BUSY, the last READY again.
 */
void
lifecycle_work(struct agent *a, int delta)
{
	if (delta > 0) {
		if (a->life.outstanding++ == 0)
			lifecycle_feed(a, AE_WORK, NULL);
	} else if (--a->life.outstanding == 0)
		lifecycle_feed(a, AE_IDLE, NULL);
}

/*
 * Why a failed agent failed, in a few words ("restart intensity
 * exceeded", a spawn error), or NULL.
 */
const char *
lifecycle_cause(const struct agent *a)
{
	return a->life.more != NULL ? a->life.more->cause : NULL;
}

/*
 * How the agent's process last ended, with its last stderr lines: "exit
 * status 2; its last stderr: ...", or NULL before any exit.
 */
const char *
lifecycle_last_exit(const struct agent *a)
{
	return a->life.more != NULL ? a->life.more->last_exit : NULL;
}

/* Remember why the agent fails for good, then fail it. */
static void
lifecycle_giveup(struct agent *a, const char *cause, const char *why)
{
	struct life_more	*m = life_more(a);
	char			*old = m->cause;

	/* cause may be the one it replaces (lifecycle_cause). */
	m->cause = xstrdup(cause);
	free(old);
	lifecycle_feed(a, AE_GIVEUP, why);
}

/* Set an agent's restart policy, overriding its entry's (-1: the entry's). */
void
lifecycle_set_policy(struct agent *a, int policy)
{
	a->life.policy = policy;
}

/* The life timer, to arm: made now if it was not. */
static ev_timer *
lifecycle_timer(struct agent *a)
{
	if (a->life.life_w == NULL) {
		a->life.life_w = xmalloc(sizeof *a->life.life_w);
		ev_timer_init(a->life.life_w, lifecycle_life_cb, 0, 0);
		a->life.life_w->data = a;
	}
	return a->life.life_w;
}

/* Stop the life timer, if there is one. */
static void
lifecycle_timer_stop(struct agent *a)
{
	if (a->life.life_w != NULL)
		ev_timer_stop(LOOP, a->life.life_w);
}

/* Is the life timer running? */
static int
lifecycle_timer_active(const struct agent *a)
{
	return a->life.life_w != NULL && ev_is_active(a->life.life_w);
}

/*
 * Arm the life timer for a stop step or a backoff.  Heartbeats end here
 * if they still ran: every state that arms it (stopping, backoff) is one
 * where a heartbeat would count nothing.
 */
static void
lifecycle_arm(struct agent *a, double after)
{
	ev_timer	*w = lifecycle_timer(a);

	ev_timer_stop(LOOP, w);
	a->life.flags &= ~LF_HB;
	ev_timer_set(w, after, 0);
	ev_timer_start(LOOP, w);
}

/* Stop the heartbeats, if the timer counts them. */
static void
lifecycle_hb_stop(struct agent *a)
{
	if (a->life.flags & LF_HB) {
		lifecycle_timer_stop(a);
		a->life.flags &= ~LF_HB;
	}
}

/* The life timer ran out: a heartbeat interval, or a stop step's time. */
static void
lifecycle_life_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct agent	*a = w->data;

	if (a->life.flags & LF_HB)
		lifecycle_hb(a, ev_now(loop));
	else
		lifecycle_feed(a, AE_TIMER, NULL);
}

/*
 * Create an agent with its lifecycle and adapter, not started: a root
 * agent of the workflow (parent NULL) or a spawned child.
 */
struct agent *
lifecycle_create(struct agent_conf *ac, unsigned int instance,
    struct agent *parent)
{
	struct agent	*a;

	a = agent_create(ac, instance, parent);
	a->life.state = AS_STOPPED;
	a->life.policy = -1;
	adapter_attach(a, adapter_table_find(ac->adapter));
	return a;
}

/* The agent's rarely needed part, made now if it had none. */
static struct life_more *
life_more(struct agent *a)
{
	if (a->life.more == NULL) {
		a->life.more = xcalloc(1, sizeof *a->life.more);
		ev_timer_init(&a->life.more->recover_w, lifecycle_recover_cb,
		    0, 0);
		a->life.more->recover_w.data = a;
	}
	return a->life.more;
}

/* Take the reason of a pending stop (the caller frees it), or NULL. */
static char *
life_take_stop_why(struct agent *a)
{
	char	*why;

	if (a->life.more == NULL)
		return NULL;
	why = a->life.more->stop_why;
	a->life.more->stop_why = NULL;
	return why;
}

/* Remember the reason of a pending stop, replacing any. */
static void
life_set_stop_why(struct agent *a, const char *why)
{
	struct life_more	*m = life_more(a);
	char			*old = m->stop_why;

	m->stop_why = xstrdup(why);
	free(old);
}

/* An agent is about to be freed: stop its timers, drop what it holds. */
static void
lifecycle_forget(struct agent *a)
{
	lifecycle_timer_stop(a);
	free(a->life.life_w);
	a->life.life_w = NULL;
	a->life.flags &= ~LF_HB;
	if (a->life.more != NULL) {
		ev_timer_stop(LOOP, &a->life.more->recover_w);
		free(a->life.more->restarts);
		free(a->life.more->stop_why);
		free(a->life.more->cause);
		free(a->life.more->last_exit);
		free(a->life.more);
		a->life.more = NULL;
	}
	adapter_free(a);
}

/* Start the agent's process (from STOPPED; later restarts are ours). */
int
lifecycle_start(struct agent *a)
{
	lifecycle_feed(a, AE_START, NULL);
	return lifecycle_alive(a) ? 0 : -1;
}

/* Spawn the process, or give the per-call adapter its start. */
static void
life_spawn(struct agent *a, const char *why)
{
	struct spawn_result	 sr;
	char			**argv;
	int			  rc;

	a->life.flags &= ~(LF_MISSED | LF_TIMEDOUT | LF_STOP_ASKED | LF_SPOKE |
	    LF_FAULT);
	a->life.flags |= LF_NOT_READY;
	a->life.timeouts = 0;
	a->life.hb_missed = 0;
	if (adapter_per_call(a)) {
		/* No process of its own: one per request, later. */
		agent_spawn_none(a);
		auditlog_event("spawn", a->id, NULL, "name", a->conf->name,
		    "adapter", a->conf->adapter, "parent", a->parent != NULL ?
		    a->parent->id : NULL, NULL);
		lifecycle_event(a, AE_SPAWNED, "%s adapter, a process per "
		    "request", a->conf->adapter);
		return;
	}
	argv = adapter_argv(a);
	rc = lifecycle_spawner != NULL ? lifecycle_spawner->spawn(a, argv,
	    adapter_env(a), &sr) : agent_spawn(a, argv, adapter_env(a), &sr);
	adapter_free_argv(argv);
	if (rc != 0) {
		lifecycle_spawn_failed(a, sr.what, sr.error);
		return;
	}
	if (auditlog_enabled()) {
		struct jsonw	j;
		char		*s;
		size_t		 len;

		jsonw_init(&j);
		jsonw_object(&j);
		jsonw_key(&j, "name");
		jsonw_str(&j, a->conf->name);
		jsonw_key(&j, "pid");
		jsonw_u64(&j, (uint64_t)agent_hostpid(a));
		jsonw_key(&j, "depth");
		jsonw_u64(&j, agent_depth(a));
		if (a->parent != NULL) {
			jsonw_key(&j, "parent");
			jsonw_str(&j, a->parent->id);
		}
		jsonw_object_end(&j);
		s = jsonw_finish(&j, &len);
		auditlog_fields("spawn", a->id, NULL, s, len);
		free(s);
	}
	lifecycle_event(a, AE_SPAWNED, "pid %ld", (long)agent_hostpid(a));
}

/* The process started: counted, and ready now if it needs no handshake. */
static void
life_spawned(struct agent *a, const char *why)
{
	dialect_spawned(a);	/* a new process speaks afresh */
	a->life.start_seq = ++lifecycle_seq;
	a->life.last_activity = ev_now(LOOP);
	if (adapter_start(a) != 0)
		return;		/* the adapter says when it is ready */
	if (!adapter_per_call(a) && a->conf->ready == READY_SPAWN &&
	    lifecycle_spawner != NULL && lifecycle_spawner->waits(a))
		return;		/* ready when its far end starts it */
	if (adapter_per_call(a) || a->conf->ready == READY_SPAWN)
		lifecycle_ready(a, adapter_per_call(a) ? "ready" :
		    "ready at spawn");
}

/* The agent is ready (a handshake, or at spawn): tell the table once. */
void
lifecycle_ready(struct agent *a, const char *why)
{
	if (!(a->life.flags & LF_NOT_READY))
		return;
	a->life.flags &= ~LF_NOT_READY;
	/* Ready by its own word (not merely spawned): it started. */
	if (a->conf->ready != READY_SPAWN || adapter_attached(a))
		a->life.flags |= LF_SPOKE;
	lifecycle_feed(a, AE_HANDSHAKE, why);
}

/* Ready: heartbeats count from now, so a slow start is no miss. */
static void
life_ready(struct agent *a, const char *why)
{
	double		 iv = a->conf->hb_interval;
	ev_timer	*w;

	if (iv <= 0 || adapter_per_call(a))
		return;
	/* A stop step's time runs: no heartbeat would count now. */
	if (lifecycle_timer_active(a) && !(a->life.flags & LF_HB))
		return;
	w = lifecycle_timer(a);
	ev_timer_stop(LOOP, w);
	a->life.flags |= LF_HB;
	a->life.last_activity = ev_now(LOOP);
	a->life.hb_missed = 0;
	a->life.flags &= ~LF_PINGED;
	ev_timer_set(w, iv, iv);
	ev_timer_start(LOOP, w);
}

/* Count one interval: ping, and after enough silence mark unavailable. */
static void
lifecycle_hb(struct agent *a, ev_tstamp now)
{
	if (a->life.state == AS_SUSPENDED || !lifecycle_alive(a) ||
	    lifecycle_stopping(a))
		return;
	if (now - a->life.last_activity < a->conf->hb_interval * 0.999) {
		a->life.hb_missed = 0;
		a->life.flags &= ~LF_PINGED;
		return;
	}
	/* Silence is a miss only when a ping went unanswered. */
	if (a->life.flags & LF_PINGED)
		a->life.hb_missed++;
	a->life.flags |= LF_PINGED;
	if (a->life.hb_missed >= a->conf->hb_misses &&
	    a->life.state != AS_UNAVAILABLE) {
		a->life.flags |= LF_MISSED;
		lifecycle_event(a, AE_MISSED, "%u missed heartbeats",
		    a->life.hb_missed);
	}
	if (adapter_attached(a))
		adapter_ping(a);
	else
		rpc_ping(agent_peer(a));
}

/* Note any frame from the agent: it is alive. */
void
lifecycle_activity(struct agent *a)
{
	a->life.flags |= LF_SPOKE;
	a->life.failed_starts = 0;
	a->life.last_activity = ev_now(LOOP);
	a->life.hb_missed = 0;
	a->life.flags &= ~LF_PINGED;
	if (a->life.state == AS_UNAVAILABLE && (a->life.flags & (LF_MISSED |
	    LF_TIMEDOUT)) && !agent_sigstopped(a)) {
		a->life.flags &= ~(LF_MISSED | LF_TIMEDOUT);
		lifecycle_feed(a, AE_ALIVE, "answering again");
	}
}

/*
 * A request to the agent timed out; after three in a row it gets no more
 * work for a while.  A reply resets the count (lifecycle_replied).
 */
void
lifecycle_timeout(struct agent *a)
{
	if (++a->life.timeouts >= 3 && a->life.state != AS_UNAVAILABLE)
		lifecycle_event(a, AE_TIMEOUTS, "%u consecutive timeouts",
		    a->life.timeouts);
}

/* The agent replied: its timeouts are forgiven. */
void
lifecycle_replied(struct agent *a)
{
	a->life.timeouts = 0;
	a->life.flags &= ~LF_TIMEDOUT;
}

/*
 * Unavailable from timeouts: it gets no work, and maybe no pings, so it
 * would stay out for good.  After the circuit reset time (breaker.reset)
 * it is given work again; three more timeouts send it back.  Any line it
 * writes meanwhile brings it back at once.
 */
static void
life_timedout(struct agent *a, const char *why)
{
	struct life_more	*m = life_more(a);

	a->life.flags |= LF_TIMEDOUT;
	ev_timer_stop(LOOP, &m->recover_w);
	ev_timer_set(&m->recover_w, a->conf->breaker_reset, 0);
	ev_timer_start(LOOP, &m->recover_w);
}

/* The probation time of an agent made unavailable by timeouts is over. */
static void
lifecycle_recover_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct agent	*a = w->data;
	char		 why[64];

	if (a->life.state != AS_UNAVAILABLE ||
	    !(a->life.flags & LF_TIMEDOUT))
		return;
	a->life.flags &= ~LF_TIMEDOUT;
	a->life.timeouts = 0;
	snprintf(why, sizeof why, "given work again after %gs",
	    a->conf->breaker_reset);
	lifecycle_feed(a, AE_ALIVE, why);
}

/* map/agents/suspend: the process is stopped where it is. */
static void
life_suspend(struct agent *a, const char *why)
{
	agent_signal(a, SIGSTOP);
}

/* map/agents/resume: it runs again, and silence so far is no miss. */
static void
life_resume(struct agent *a, const char *why)
{
	agent_signal(a, SIGCONT);
	a->life.last_activity = ev_now(LOOP);
}

/* Begin the stop sequence: stdin closed, then signals on the timer. */
static void
life_begin_stop(struct agent *a, const char *why)
{
	a->life.flags |= LF_STOP_ASKED;
	lifecycle_hb_stop(a);
	if (adapter_per_call(a)) {
		/* The adapter stops its calls; the last one ends it. */
		if (adapter_stop(a) == 0)
			lifecycle_feed(a, AE_EXITED, "no calls running");
		return;
	}
	agent_close_stdin(a);
	lifecycle_arm(a, a->conf->stop_grace);
}

/* A pipe closed while it runs: it can no longer talk to us. */
static void
life_broken(struct agent *a, const char *why)
{
	a->life.flags |= LF_FAULT;
	agent_close_stdin(a);
	agent_signal(a, SIGTERM);
	agent_signal(a, SIGCONT);
	lifecycle_arm(a, a->conf->stop_timeout);
}

/* The grace period is over: SIGTERM (and SIGCONT) to the group. */
static void
life_term(struct agent *a, const char *why)
{
	if (!agent_exited(a))
		log_info("agent %s: still running %gs after stdin closed; "
		    "SIGTERM", a->id, a->conf->stop_grace);
	agent_signal(a, SIGTERM);
	agent_signal(a, SIGCONT);
	lifecycle_arm(a, a->conf->stop_timeout);
}

/* SIGKILL to the group, then wait a second for the pipes. */
static void
life_kill(struct agent *a, const char *why)
{
	if (adapter_per_call(a)) {
		(void)adapter_stop(a);
		return;
	}
	if (why == NULL || *why == '\0') {
		if (!agent_exited(a))
			log_warnx("agent %s: did not stop %gs after SIGTERM; "
			    "SIGKILL", a->id, a->conf->stop_timeout);
		else
			log_warnx("agent %s: exited, but something still "
			    "holds its output pipes; SIGKILL to its process "
			    "group", a->id);
	}
	agent_signal(a, SIGKILL);
	agent_signal(a, SIGCONT);
	lifecycle_arm(a, 1.0);
}

/* A second after SIGKILL: give up on pipes held by another session. */
static void
life_kill_wait(struct agent *a, const char *why)
{
	if (agent_exited(a))
		agent_abandon_pipes(a);
	else
		lifecycle_arm(a, 1.0);
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
	if (a->life.policy >= 0)
		return (enum restart_policy)a->life.policy;
	/* Spawned children are ephemeral unless their entry says otherwise. */
	if (a->parent != NULL && !a->conf->restart_set)
		return RESTART_TEMPORARY;
	return a->conf->restart;
}

/* Return nonzero if the exit status asks for a restart under the policy. */
static int
lifecycle_wants_restart(const struct agent *a)
{
	if (a->life.flags & LF_RESTART_REQ)
		return 1;
	switch (lifecycle_policy(a)) {
	case RESTART_PERMANENT:
		return 1;
	case RESTART_TRANSIENT:
		/* Stopped for a fault, it failed, whatever status it chose. */
		return (a->life.flags & LF_FAULT) ||
		    !WIFEXITED_OK(agent_status(a));
	default:
		return 0;
	}
}

/* Count the restarts within the agent's intensity window. */
static unsigned int
lifecycle_recent_restarts(const struct agent *a, ev_tstamp now)
{
	const struct life_more	*m = a->life.more;
	unsigned int		 i, recent = 0;

	for (i = 0; m != NULL && i < m->nrestarts; i++)
		if (now - m->restarts[i] <= a->conf->restart_within)
			recent++;
	return recent;
}

/* Return nonzero if the agent's parent is stopping or gone. */
static int
lifecycle_parent_gone(const struct agent *a)
{
	const struct agent	*p = a->parent;

	return p != NULL && (lifecycle_stopping(p) || !lifecycle_alive(p) ||
	    (p->life.flags & LF_NORESTART));
}

/* Return nonzero if the policy wants a restart and nothing forbids it. */
static int
lifecycle_may_restart(const struct agent *a)
{
	return !lifecycle_shutdown && !(a->life.flags & LF_NORESTART) &&
	    lifecycle_wants_restart(a) && !lifecycle_parent_gone(a);
}

/*
 * Return nonzero if the agent, stopping or stopped, will be (or is due
 * to be) started again.
 */
int
lifecycle_will_restart(const struct agent *a)
{
	if (a->life.state == AS_BACKOFF)
		return 1;
	if (a->life.state == AS_FAILED || !lifecycle_may_restart(a) ||
	    a->life.failed_starts >= a->conf->failed_starts)
		return 0;
	return lifecycle_recent_restarts(a, ev_now(LOOP)) <
	    a->conf->restart_max;
}

/* Remember a restart's time in the ring of recent ones. */
static void
lifecycle_count_restart(struct agent *a, ev_tstamp now)
{
	struct life_more	*l = life_more(a);

	if (l->restarts == NULL)
		l->restarts = xcalloc(a->conf->restart_max + 1,
		    sizeof *l->restarts);
	if (l->nrestarts < a->conf->restart_max + 1)
		l->restarts[l->nrestarts++] = now;
	else {
		memmove(l->restarts, l->restarts + 1,
		    (l->nrestarts - 1) * sizeof *l->restarts);
		l->restarts[l->nrestarts - 1] = now;
	}
	l->restart_count++;
}

/*
 * After the process ended: restart it after a backoff if its policy says
 * so and the restart intensity allows, otherwise leave it stopped, or
 * failed for good.
 */
static void
lifecycle_after_stop(struct agent *a, const char *st)
{
	ev_tstamp	 now = ev_now(LOOP);
	unsigned int	 recent;
	double		 delay;
	int		 requested = (a->life.flags & LF_RESTART_REQ) != 0;
	char		 why[1200];

	if (!lifecycle_may_restart(a)) {
		a->life.flags &= ~LF_RESTART_REQ;
		if (a->life.state == AS_BACKOFF)
			/* A respawn failed, and none may follow: called off. */
			lifecycle_feed(a, AE_STOP, st);
		else
			lifecycle_after_child(a);
		return;
	}
	a->life.flags &= ~LF_RESTART_REQ;
	recent = lifecycle_recent_restarts(a, now);
	if (recent >= a->conf->restart_max) {
		snprintf(why, sizeof why, "restart intensity exceeded: %u "
		    "restarts in %gs", recent, a->conf->restart_within);
		lifecycle_giveup(a, "restart intensity exceeded", why);
		return;
	}

	lifecycle_count_restart(a, now);
	delay = lifecycle_backoff(a->conf, recent + 1, now -
	    agent_spawned_at(a));
	log_info("agent %s: restarting in %.1fs (%s)", a->id, delay, st);
	auditlog_event("restart", a->id, NULL, "after", st, NULL);
	lifecycle_arm(a, delay);
	/*
	 * Into BACKOFF (from STOPPED: a spawn that failed in BACKOFF stays
	 * there).  A restart corral asked for is no crash: siblings are
	 * left alone.
	 */
	lifecycle_feed(a, requested ? AE_RESTART : AE_RESTART_DUE, st);
}

/*
 * The process is reaped and its pipes are at EOF (or abandoned): what it
 * left in its group goes too, its children of this incarnation stop,
 * then it restarts or stays down.
 */
static void
life_exited(struct agent *a, const char *st)
{
	lifecycle_timer_stop(a);
	a->life.flags &= ~LF_HB;
	if (a->life.more != NULL)
		ev_timer_stop(LOOP, &a->life.more->recover_w);
	/* A detached session is beyond reach until corral exits. */
	agent_signal(a, SIGKILL);
	agent_release(a);
	/* Children of this incarnation cannot reach a restarted one. */
	(void)lifecycle_stop_children(a, "its parent exited");
	lifecycle_after_stop(a, st);
}

/* Give up on an agent for good. */
static void
life_failed(struct agent *a, const char *why)
{
	lifecycle_timer_stop(a);
	a->life.flags &= ~LF_HB;
	a->life.flags |= LF_NORESTART;
	if (agent_running(a)) {
		agent_signal(a, SIGKILL);
		agent_release(a);
	}
	(void)lifecycle_stop_children(a, "its parent failed");
	lifecycle_after_child(a);
}

/* A restart that was due is called off: stopped for good. */
static void
life_cancel_backoff(struct agent *a, const char *why)
{
	lifecycle_timer_stop(a);
	a->life.flags |= LF_NORESTART;
	lifecycle_after_child(a);
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
	if (permanent) {
		char why[300];

		snprintf(why, sizeof why, "spawn failed: %s", st);
		lifecycle_giveup(a, st, why);
		return;
	}
	/* Into (or on in) BACKOFF, or FAILED, as if it had crashed. */
	lifecycle_after_stop(a, st);
}

/*
 * Stop the agent's children for good (each after its own children).
 * Returns nonzero if some are still on their way out.
 */
static int
lifecycle_stop_children(struct agent *a, const char *why)
{
	struct agent	*c;
	int		 waiting = 0;

	AGENT_FOREACH_CHILD(c, a) {
		if (!lifecycle_alive(c) && c->life.state != AS_BACKOFF)
			continue;
		lifecycle_stop(c, why);
		if (lifecycle_alive(c))
			waiting = 1;
	}
	return waiting;
}

/* Return nonzero if a has a child that still has a process. */
int
lifecycle_has_live_children(const struct agent *a)
{
	const struct agent	*c;

	AGENT_FOREACH_CHILD(c, a)
		if (lifecycle_alive(c))
			return 1;
	return 0;
}

/*
 * Stop an agent for good: its descendants first (deepest first), then
 * it: stdin closed, SIGTERM (and SIGCONT) to its process group after the
 * grace period, SIGKILL after the stop timeout.
 */
void
lifecycle_stop(struct agent *a, const char *why)
{
	int	 stopping = (a->life.flags & (LF_STOP_PENDING | LF_NORESTART)) ==
		    (LF_STOP_PENDING | LF_NORESTART);
	char	*pending;

	a->life.flags |= LF_NORESTART;
	a->life.flags &= ~LF_RESTART_REQ;
	if (a->life.state == AS_FAILED || lifecycle_stopping(a))
		return;
	if (lifecycle_alive(a) && lifecycle_stop_children(a,
	    "its parent is stopping")) {
		a->life.flags |= LF_STOP_PENDING;
		/* The first reason to stop stays the one the log gives. */
		if (!stopping || a->life.more == NULL ||
		    a->life.more->stop_why == NULL)
			life_set_stop_why(a, why);
		return;
	}
	/*
	 * No child left to wait for.  Observers hear of the last child's
	 * STOPPED before lifecycle_after_child does, so a stop that waited
	 * may be due here first (the shutdown's next pick): it is this one,
	 * and keeps its reason.
	 */
	a->life.flags &= ~LF_STOP_PENDING;
	pending = life_take_stop_why(a);
	lifecycle_feed(a, AE_STOP, stopping && pending != NULL ? pending : why);
	free(pending);
}

/* Stop an agent so that it starts again (a restart strategy). */
void
lifecycle_restart(struct agent *a, const char *why)
{
	/* One leaving for good (its stop waits for its children) stays so. */
	if (!lifecycle_alive(a) || lifecycle_stopping(a) ||
	    adapter_per_call(a) || (a->life.flags & LF_NORESTART))
		return;
	a->life.flags |= LF_RESTART_REQ;
	if (lifecycle_stop_children(a, "its parent is restarting")) {
		a->life.flags |= LF_STOP_PENDING;
		life_set_stop_why(a, why);
		return;
	}
	/* Nothing to wait for: a restart that waited is this one. */
	a->life.flags &= ~LF_STOP_PENDING;
	free(life_take_stop_why(a));
	lifecycle_feed(a, AE_RESTART, why);
}

/* Give up on a running agent for good: it is killed and FAILED. */
void
lifecycle_fail(struct agent *a, const char *why)
{
	a->life.flags |= LF_NORESTART;
	lifecycle_giveup(a, why, why);
}

/* Kill the agent's process group now (a second interrupt). */
void
lifecycle_kill(struct agent *a)
{
	a->life.flags |= LF_NORESTART;
	lifecycle_feed(a, AE_KILL, "killed");
}

/*
 * An agent stopped or failed: if it is done for good, a parent that
 * waits for its children may go on.
 */
static void
lifecycle_after_child(struct agent *a)
{
	struct agent	*p = a->parent;
	char		*why;

	if (p == NULL || !(p->life.flags & LF_STOP_PENDING) ||
	    lifecycle_has_live_children(p))
		return;
	p->life.flags &= ~LF_STOP_PENDING;
	why = life_take_stop_why(p);
	if (p->life.flags & LF_NORESTART)
		lifecycle_stop(p, why != NULL ? why : "its children stopped");
	else if (p->life.flags & LF_RESTART_REQ)
		lifecycle_feed(p, AE_RESTART, why != NULL ? why : "restart");
	free(why);
}
