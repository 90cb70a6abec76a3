/*
 * planner: opens and closes a workflow.
 *
 *   planner [--next INTENT]
 *
 * On plan it proposes a fixed sequence of steps for the goal and hands
 * the first one on as a next action (decompose unless --next says
 * otherwise), passing the request's parameters along with the goal.  On
 * finalize it packages what the previous step reported (inputs.context)
 * and the action's arguments into the workflow's result, an envelope with
 * intent finalize.  Anything else is acknowledged without further work.
 */

#include <stdio.h>
#include <string.h>

#include "corral/agent.h"

static const char *planner_steps =
    "1) Decompose the goal into tasks 2) Execute them with local tools "
    "3) Summarize the results 4) Review weak answers 5) Finalize the report";

/* Propose the plan and its first step. */
static json_t *
planner_plan(struct cagent *ca, const struct cagent_msg *m, const char *next)
{
	json_t		*r, *args;
	const char	*goal = *m->text != '\0' ? m->text : m->task;

	args = json_deep_copy(m->params);
	json_object_set_new(args, "goal", json_string(goal));
	r = cagent_reply(ca, m, "plan", NULL);
	cagent_set_text(r, "I propose a 5-step plan for \"%s\".", goal);
	cagent_add_artifact(r, "plan", "plan_v1", NULL, planner_steps);
	cagent_add_action(r, next, "Turn the plan into executable tasks",
	    args);
	cagent_set_confidence(r, 0.8, "a fixed, well-tried sequence of steps");
	return r;
}

/* Package the previous step's report as the workflow's result. */
static json_t *
planner_finalize(struct cagent *ca, const struct cagent_msg *m)
{
	json_t		*r;
	const char	*goal = cagent_param_str(m, "goal", m->task);

	r = cagent_reply(ca, m, "finalize", NULL);
	if (*m->context == '\0') {
		cagent_set_text(r, "Finished \"%s\"; the last step reported "
		    "nothing.", goal);
		cagent_set_confidence(r, 0.6, "no report to package");
	} else {
		cagent_set_text(r, "Result of \"%s\":\n%s", goal, m->context);
		cagent_set_confidence(r, 0.9, "packaged the reviewed report "
		    "unchanged");
	}
	cagent_set_data(r, json_deep_copy(m->params));
	cagent_add_artifact(r, "report", "final_report", NULL, NULL);
	return r;
}

/* Answer one request by its intent. */
static json_t *
planner_handle(struct cagent *ca, const struct cagent_msg *m, void *arg)
{
	json_t	*r;

	if (strcmp(m->intent, "plan") == 0)
		return planner_plan(ca, m, arg);
	if (strcmp(m->intent, "finalize") == 0 || m->kind == CAGENT_TASK)
		return planner_finalize(ca, m);
	r = cagent_reply(ca, m, NULL, NULL);
	cagent_set_text(r, "The planner only plans and finalizes; \"%s\" "
	    "was noted.", m->task);
	cagent_set_confidence(r, 0.6, "outside the planner's role");
	return r;
}

/* Parse the options and serve plan and finalize requests. */
int
main(int argc, char **argv)
{
	struct cagent	*ca;
	const char	*next = "decompose";
	int		 rc;

	if (argc == 3 && strcmp(argv[1], "--next") == 0)
		next = argv[2];
	else if (argc != 1) {
		fprintf(stderr, "usage: planner [--next INTENT]\n");
		return 2;
	}
	if ((ca = cagent_open("Planner")) == NULL)
		return 1;
	rc = cagent_run(ca, planner_handle, (void *)next);
	cagent_close(ca);
	return rc == 0 ? 0 : 1;
}
