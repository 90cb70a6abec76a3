/*
 * Budgets: the tokens and cost each reply says it used, added up for the
 * run and for every subtree, and the limits on them (docs/subagents.md).
 *
 * A subtree's budget bounds its root and every descendant: tokens, cost,
 * and wall time from the root's start.  The run's budget bounds
 * everything.  Going over is news for the modules above: the sub-agent
 * module stops the subtree, the engine ends the run's jobs.
 *
 * An agent's part is made when it gets a limit or its subtree first
 * reports a cost (NULL: none, nothing used), so an idle agent does not
 * carry it.
 */

#include <stdio.h>
#include <stdlib.h>

#include "corral.h"

static const struct workflow	*budget_wf;
static budget_cb		 budget_subtree_hook;
static void			(*budget_run_hook)(const char *);
static double			 budget_tokens_in;
static double			 budget_tokens_out;
static double			 budget_cost;
static int			 budget_spent;

static const struct budget	 budget_none;	/* what NULL stands for */

static void	budget_timer_cb(struct ev_loop *, ev_timer *, int);

/* An agent's part to read: nothing used and no limits when it has none. */
static const struct budget *
budget_of(const struct agent *a)
{
	return a->budget != NULL ? a->budget : &budget_none;
}

/* An agent's part to write, made on first use. */
static struct budget *
budget_get(struct agent *a)
{
	if (a->budget == NULL) {
		a->budget = xcalloc(1, sizeof *a->budget);
		ev_timer_init(&a->budget->timer, budget_timer_cb, 0, 0);
		a->budget->timer.data = a;
	}
	return a->budget;
}

/* Set the module up with the run's limits. */
void
budget_init(const struct workflow *wf)
{
	budget_wf = wf;
	budget_subtree_hook = NULL;
	budget_run_hook = NULL;
	budget_tokens_in = budget_tokens_out = budget_cost = 0;
	budget_spent = 0;
	agent_on_free(budget_forget);
}

/* Register who stops a subtree that went over its budget. */
void
budget_on_subtree(budget_cb cb)
{
	budget_subtree_hook = cb;
}

/* Register who ends the run's jobs when its budget is spent. */
void
budget_on_run(void (*cb)(const char *))
{
	budget_run_hook = cb;
}

/* An agent is about to be freed: its clock stops, its part goes. */
void
budget_forget(struct agent *a)
{
	if (a->budget == NULL)
		return;
	ev_timer_stop(LOOP, &a->budget->timer);
	free(a->budget);
	a->budget = NULL;
}

/*
 * Set an agent's own limits (0: none) and start its clock when it has a
 * time budget.
 */
void
budget_set(struct agent *a, double tokens, double cost, double time)
{
	struct budget	*b;

	if (a->budget == NULL && tokens <= 0 && cost <= 0 && time <= 0)
		return;
	b = budget_get(a);
	b->max_tokens = tokens;
	b->max_cost = cost;
	b->max_time = time;
	ev_timer_stop(LOOP, &b->timer);
	if (time <= 0)
		return;
	ev_timer_set(&b->timer, time, 0);
	ev_timer_start(LOOP, &b->timer);
}

/* Stop an agent's clock (its subtree stopped). */
void
budget_stop_clock(struct agent *a)
{
	if (a->budget != NULL)
		ev_timer_stop(LOOP, &a->budget->timer);
}

/* The run's totals so far. */
void
budget_totals(double *tokens_in, double *tokens_out, double *cost)
{
	*tokens_in = budget_tokens_in;
	*tokens_out = budget_tokens_out;
	*cost = budget_cost;
}

/* What the agent's subtree used: its tokens and its cost. */
void
budget_used(const struct agent *a, double *tokens, double *cost)
{
	*tokens = budget_of(a)->tokens;
	*cost = budget_of(a)->cost;
}

/* What the agent's subtree may use: its tokens and its cost (0: no limit). */
void
budget_limits(const struct agent *a, double *max_tokens, double *max_cost)
{
	*max_tokens = budget_of(a)->max_tokens;
	*max_cost = budget_of(a)->max_cost;
}

/* Return nonzero once the run's budget is spent. */
int
budget_run_spent(void)
{
	return budget_spent;
}

/*
 * Return nonzero, with why, if a's subtree (or an ancestor's) or the run
 * has reached its budget: a new child would start over it.
 */
int
budget_over(const struct agent *a, char *why, size_t len)
{
	const struct agent	*p;
	const struct budget	*b;

	for (p = a; p != NULL; p = p->parent) {
		b = budget_of(p);
		if (b->max_tokens > 0 &&
		    b->tokens >= b->max_tokens) {
			snprintf(why, len, "budget: the subtree of %s used %.0f "
			    "tokens, its budget is %.0f", p->id,
			    b->tokens, b->max_tokens);
			return 1;
		}
		if (b->max_cost > 0 &&
		    b->cost >= b->max_cost) {
			snprintf(why, len, "budget: the subtree of %s cost "
			    "$%.4f, its budget is $%.4f", p->id,
			    b->cost, b->max_cost);
			return 1;
		}
	}
	if (budget_wf->budget_tokens > 0 && budget_tokens_in +
	    budget_tokens_out >= budget_wf->budget_tokens) {
		snprintf(why, len, "budget: the run used %.0f tokens, its "
		    "budget is %.0f", budget_tokens_in + budget_tokens_out,
		    budget_wf->budget_tokens);
		return 1;
	}
	if (budget_wf->budget_cost > 0 && budget_cost >=
	    budget_wf->budget_cost) {
		snprintf(why, len, "budget: the run cost $%.4f, its budget is "
		    "$%.4f", budget_cost, budget_wf->budget_cost);
		return 1;
	}
	return 0;
}

/* The run went over its budget: every job ends, once. */
static void
budget_check_run(void)
{
	char	why[256];

	if (budget_spent)
		return;
	if (budget_wf->budget_tokens > 0 && budget_tokens_in +
	    budget_tokens_out > budget_wf->budget_tokens)
		snprintf(why, sizeof why, "the run's budget of %.0f tokens is "
		    "spent", budget_wf->budget_tokens);
	else if (budget_wf->budget_cost > 0 && budget_cost >
	    budget_wf->budget_cost)
		snprintf(why, sizeof why, "the run's budget of $%.4f is spent",
		    budget_wf->budget_cost);
	else
		return;
	budget_spent = 1;
	if (budget_run_hook != NULL)
		budget_run_hook(why);
}

/* The run's time budget ran out (the supervisor's clock). */
void
budget_run_timeout(const char *why)
{
	if (budget_spent)
		return;
	budget_spent = 1;
	if (budget_run_hook != NULL)
		budget_run_hook(why);
}

/*
 * Add what a reply of agent a says it cost to the run and to a and its
 * ancestors, then stop the first subtree that went over its budget.
 */
void
budget_account(struct agent *a, double tin, double tout, double cost)
{
	struct agent	*p;
	struct budget	*b;
	char		 why[256];

	if (tin + tout == 0 && cost == 0)
		return;
	budget_tokens_in += tin;
	budget_tokens_out += tout;
	budget_cost += cost;
	for (p = a; p != NULL; p = p->parent) {
		b = budget_get(p);
		b->tokens += tin + tout;
		b->cost += cost;
	}
	for (p = a; p != NULL; p = p->parent) {
		if (lifecycle_stopping(p) || !lifecycle_alive(p))
			continue;
		b = p->budget;
		if (b->max_tokens > 0 &&
		    b->tokens > b->max_tokens) {
			snprintf(why, sizeof why, "budget exceeded: %.0f tokens "
			    "used, the budget is %.0f", b->tokens,
			    b->max_tokens);
			if (budget_subtree_hook != NULL)
				budget_subtree_hook(p, why);
			break;
		}
		if (b->max_cost > 0 && b->cost >
		    b->max_cost) {
			snprintf(why, sizeof why, "budget exceeded: $%.4f spent, "
			    "the budget is $%.4f", b->cost,
			    b->max_cost);
			if (budget_subtree_hook != NULL)
				budget_subtree_hook(p, why);
			break;
		}
	}
	budget_check_run();
}

/* A subtree's time budget ran out. */
static void
budget_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct agent	*a = w->data;
	char		 why[128];

	snprintf(why, sizeof why, "budget exceeded: %gs of wall time",
	    a->budget->max_time);
	if (budget_subtree_hook != NULL)
		budget_subtree_hook(a, why);
}
