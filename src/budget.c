/*
 * Budgets: the tokens and cost each reply says it used, added up for the
 * run and for every subtree, and the limits on them (docs/subagents.md).
 *
 * A subtree's budget bounds its root and every descendant: tokens, cost,
 * and wall time from the root's start.  The run's budget bounds
 * everything.  Going over is news for the modules above: the sub-agent
 * module stops the subtree, the engine ends the run's jobs.
 */

#include <stdio.h>

#include "corral.h"

static const struct workflow	*budget_wf;
static budget_cb		 budget_subtree_hook;
static void			(*budget_run_hook)(const char *);
static double			 budget_tokens_in;
static double			 budget_tokens_out;
static double			 budget_cost;
static int			 budget_spent;

static void	budget_timer_cb(struct ev_loop *, ev_timer *, int);

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

/* An agent is about to be freed: its clock stops. */
void
budget_forget(struct agent *a)
{
	ev_timer_stop(LOOP, &a->budget.timer);
}

/*
 * Set an agent's own limits (0: none) and start its clock when it has a
 * time budget.
 */
void
budget_set(struct agent *a, double tokens, double cost, double time)
{
	struct budget	*b = &a->budget;

	b->max_tokens = tokens;
	b->max_cost = cost;
	b->max_time = time;
	ev_timer_stop(LOOP, &b->timer);
	if (time <= 0)
		return;
	ev_timer_init(&b->timer, budget_timer_cb, time, 0);
	b->timer.data = a;
	ev_timer_start(LOOP, &b->timer);
}

/* Stop an agent's clock (its subtree stopped). */
void
budget_stop_clock(struct agent *a)
{
	ev_timer_stop(LOOP, &a->budget.timer);
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
	*tokens = a->budget.tokens;
	*cost = a->budget.cost;
}

/* What the agent's subtree may use: its tokens and its cost (0: no limit). */
void
budget_limits(const struct agent *a, double *max_tokens, double *max_cost)
{
	*max_tokens = a->budget.max_tokens;
	*max_cost = a->budget.max_cost;
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

	for (p = a; p != NULL; p = p->parent) {
		if (p->budget.max_tokens > 0 &&
		    p->budget.tokens >= p->budget.max_tokens) {
			snprintf(why, len, "budget: the subtree of %s used %.0f "
			    "tokens, its budget is %.0f", p->id,
			    p->budget.tokens, p->budget.max_tokens);
			return 1;
		}
		if (p->budget.max_cost > 0 &&
		    p->budget.cost >= p->budget.max_cost) {
			snprintf(why, len, "budget: the subtree of %s cost "
			    "$%.4f, its budget is $%.4f", p->id,
			    p->budget.cost, p->budget.max_cost);
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
	char		 why[256];

	if (tin + tout == 0 && cost == 0)
		return;
	budget_tokens_in += tin;
	budget_tokens_out += tout;
	budget_cost += cost;
	for (p = a; p != NULL; p = p->parent) {
		p->budget.tokens += tin + tout;
		p->budget.cost += cost;
	}
	for (p = a; p != NULL; p = p->parent) {
		if (lifecycle_stopping(p) || !lifecycle_alive(p))
			continue;
		if (p->budget.max_tokens > 0 &&
		    p->budget.tokens > p->budget.max_tokens) {
			snprintf(why, sizeof why, "budget exceeded: %.0f tokens "
			    "used, the budget is %.0f", p->budget.tokens,
			    p->budget.max_tokens);
			if (budget_subtree_hook != NULL)
				budget_subtree_hook(p, why);
			break;
		}
		if (p->budget.max_cost > 0 && p->budget.cost >
		    p->budget.max_cost) {
			snprintf(why, sizeof why, "budget exceeded: $%.4f spent, "
			    "the budget is $%.4f", p->budget.cost,
			    p->budget.max_cost);
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
	    a->budget.max_time);
	if (budget_subtree_hook != NULL)
		budget_subtree_hook(a, why);
}
