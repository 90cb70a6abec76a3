/*
 * The live progress view of corral run on stderr: agents and their states,
 * steps done, messages in flight, elapsed time, tokens and cost.
 *
 * On a terminal it is a block of lines at the bottom, redrawn at most ten
 * times a second; log lines are written above it (the log hook erases and
 * redraws it).  When stderr is not a terminal it is silent, unless -v was
 * given: then a one-line summary is logged every two seconds.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"

#define PROGRESS_MAX_AGENTS	12

static ev_timer			 progress_w;
static const struct workflow	*progress_wf;
static int			 progress_mode;
static ev_tstamp		 progress_started;
static int	progress_tty;
static int	progress_on;
static int	progress_lines;	/* lines drawn now */
static int	progress_dirty;
static int	progress_ticks;
static int	progress_held;	/* a question is on the terminal */

/* Erase the block (before) or draw it again (after) around a log line. */
static void
progress_hook(int after)
{
	if (!after) {
		if (progress_lines > 0) {
			char buf[32];
			int n = snprintf(buf, sizeof buf, "\r\033[%dA\033[J",
			    progress_lines);
			(void)write(STDERR_FILENO, buf, (size_t)n);
			progress_lines = 0;
		}
	} else
		progress_dirty = 1;
}

/* Count messages outstanding at agents. */
static unsigned int
progress_inflight(void)
{
	struct agent	*a;
	unsigned int	 n = 0;

	for (a = agent_first(); a != NULL; a = agent_next(a))
		n += lifecycle_outstanding(a);
	return n;
}

/* The run's tokens and cost so far. */
static void
progress_spend(double *tokens, double *cost)
{
	double	in, out;

	budget_totals(&in, &out, cost);
	*tokens = in + out;
}

/* A transition of an agent changes what the view shows. */
static void
progress_lifecycle(struct agent *a, enum agent_state from,
    enum agent_state to, enum agent_event ev, const char *why)
{
	progress_dirty = 1;
}

/* Set the view up for a run of the workflow (mode: run or serve). */
void
progress_init(const struct workflow *wf, int mode)
{
	progress_wf = wf;
	progress_mode = mode;
	progress_started = ev_now(LOOP);
	lifecycle_observe(progress_lifecycle);
}

/* Draw the block. */
static void
progress_draw(void)
{
	struct agent	*a;
	char		 buf[4096];
	size_t		 len = 0;
	int		 lines = 0, shown = 0, more = 0;
	double		 el = ev_now(LOOP) - progress_started, tokens, cost;
	uint64_t	 in, out;

	progress_spend(&tokens, &cost);
	len += (size_t)snprintf(buf + len, sizeof buf - len,
	    "corral %s  %.1fs  steps %llu  in flight %u  queued %u  tokens "
	    "%.0f  cost $%.4f\033[K\n", progress_wf->name != NULL ?
	    progress_wf->name : "run", el,
	    (unsigned long long)engine_stats_get()->steps, progress_inflight(),
	    route_queued_count(), tokens, cost);
	lines++;
	for (a = agent_first(); a != NULL; a = agent_next(a)) {
		if (shown >= PROGRESS_MAX_AGENTS) {
			more++;
			continue;
		}
		agent_counts(a, &in, &out);
		len += (size_t)snprintf(buf + len, sizeof buf - len,
		    "  %-24.24s %-12s %3u out  %6llu msgs\033[K\n", a->id,
		    lifecycle_state_name(lifecycle_state(a)),
		    lifecycle_outstanding(a),
		    (unsigned long long)out);
		lines++;
		shown++;
		if (len > sizeof buf - 200)
			break;
	}
	if (more > 0) {
		len += (size_t)snprintf(buf + len, sizeof buf - len,
		    "  ... and %d more agents\033[K\n", more);
		lines++;
	}
	progress_hook(0);
	(void)write(STDERR_FILENO, buf, len);
	progress_lines = lines;
	progress_dirty = 0;
}

/* Redraw (terminal) or log a summary (-v). */
static void
progress_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	double	tokens, cost;

	if (progress_tty) {
		if (progress_held)
			return;
		/* Changes at once; otherwise once a second, for the clock. */
		if (progress_dirty || ++progress_ticks >= 10) {
			progress_ticks = 0;
			progress_draw();
		}
		return;
	}
	progress_spend(&tokens, &cost);
	log_info("progress: %.1fs, steps %llu, in flight %u, queued %u, "
	    "agents %u, tokens %.0f, cost $%.4f", ev_now(loop) -
	    progress_started, (unsigned long long)engine_stats_get()->steps,
	    progress_inflight(), route_queued_count(), agent_count_running(),
	    tokens, cost);
}

/* Start the view for corral run, if there is somewhere to show it. */
void
progress_start(void)
{
	if (progress_mode != MODE_RUN)
		return;
	progress_tty = isatty(STDERR_FILENO) && getenv("CORRAL_NO_PROGRESS") ==
	    NULL;
	if (!progress_tty && log_get_verbose() < 1)
		return;
	progress_on = 1;
	progress_dirty = 1;
	ev_timer_init(&progress_w, progress_cb, progress_tty ? 0.1 : 2.0,
	    progress_tty ? 0.1 : 2.0);
	ev_timer_start(LOOP, &progress_w);
	ev_unref(LOOP);	/* the view alone keeps nothing running */
	if (progress_tty)
		log_set_hook(progress_hook);
}

/* Note that something shown changed. */
void
progress_update(void)
{
	progress_dirty = 1;
}

/*
 * Hold the view off the terminal (on) while a question is asked there,
 * or let it draw again.
 */
void
progress_hold(int on)
{
	progress_held = on;
	if (on && progress_on && progress_tty)
		progress_hook(0);
	progress_dirty = 1;
}

/* Stop the view and erase it. */
void
progress_stop(void)
{
	if (!progress_on)
		return;
	ev_ref(LOOP);
	ev_timer_stop(LOOP, &progress_w);
	if (progress_tty) {
		progress_hook(0);
		log_set_hook(NULL);
	}
	progress_on = 0;
}
