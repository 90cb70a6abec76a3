/*
 * The task registry: every task, with its status, the agent it is
 * assigned to, who asked, its times, its context, its result or error,
 * what it cost, and its history.  corral tasks and MAP's map/tasks/list
 * show it.  This file keeps the tasks agents and clients give each other
 * through the control plane (a request between agents, a client's
 * request, an AgentMessage TASK_ASSIGNMENT or HELP_REQUEST, a bus
 * REQUEST, MAP's map/tasks/create), with their assignments and handoffs;
 * taskreg-jobs.c the workflow's own requests, routed by intent inside
 * jobs, and children's tasks.
 *
 * Statuses are the shared registry's: pending, in_progress, completed,
 * failed, cancelled; MAP's MAPTask shows them with its own words (open,
 * in_progress, completed, failed) and the registry's in meta.
 *
 * A task may have a budget: the workflow's limits.task_budget, or the
 * constraints an AgentMessage gives (max_tokens, budget_usd).  What the
 * answer reports (trace.cost) counts against it, and an answer over it
 * fails the task with budget_exceeded.
 *
 * Bounded: TASKREG_MAX tasks (the oldest ended one is forgotten first),
 * TASKREG_TEXT bytes of each text kept, TASKREG_HISTORY history entries.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "taskreg-int.h"

#define TASKREG_MAX	4096	/* tasks kept */
#define TASKREG_HISTORY	16	/* history entries per task */
#define TASKREG_LIST	100000	/* tasks one listing may answer */

static const char *const taskreg_names[] = {
	"pending", "in_progress", "completed", "failed", "cancelled"
};
/* MAP's word for each (MAPTaskStatus). */
static const char *const taskreg_map_names[] = {
	"open", "in_progress", "completed", "failed", "failed"
};

struct task {
	char			 id[CORRAL_ID_MAX];
	int			 status;
	char			*title;
	char			*description;
	char			*assignee;
	char			*requester;
	char			*session;
	char			*intent;
	uint64_t		 created_ms;
	uint64_t		 updated_ms;
	json_t			*result;
	json_t			*error;
	json_t			*history;
	double			 tokens;
	double			 cost;
	double			 max_tokens;	/* 0: none */
	double			 max_cost;
	TAILQ_ENTRY(task)	 entry;
};

static TAILQ_HEAD(, task)	 taskreg_list = TAILQ_HEAD_INITIALIZER(taskreg_list);
static unsigned int		 taskreg_count;
static double			 taskreg_max_tokens;	/* limits.task_budget */
static double			 taskreg_max_cost;
static const struct workflow	*taskreg_wf;

/* Free a task. */
static void
taskreg_free(struct task *t)
{
	TAILQ_REMOVE(&taskreg_list, t, entry);
	taskreg_count--;
	free(t->title);
	free(t->description);
	free(t->assignee);
	free(t->requester);
	free(t->session);
	free(t->intent);
	json_decref(t->result);
	json_decref(t->error);
	json_decref(t->history);
	free(t);
}

/* Forget every task; learn the workflow's budget per task. */
void
taskreg_init(const struct workflow *wf)
{
	while (!TAILQ_EMPTY(&taskreg_list))
		taskreg_free(TAILQ_FIRST(&taskreg_list));
	taskreg_max_tokens = wf != NULL ? wf->task_tokens : 0;
	taskreg_max_cost = wf != NULL ? wf->task_cost : 0;
	taskreg_wf = wf;
	taskreg_jobs_init();
}

/* Find a task by id. */
static struct task *
taskreg_find(const char *id)
{
	struct task	*t;

	TAILQ_FOREACH(t, &taskreg_list, entry)
		if (strcmp(t->id, id) == 0)
			return t;
	return NULL;
}

/* Does the registry know task id? */
int
taskreg_exists(const char *id)
{
	return taskreg_find(id) != NULL;
}

/* A copy of a text, cut at TASKREG_TEXT bytes on a character boundary. */
static char *
taskreg_text(const char *s)
{
	if (s == NULL)
		return NULL;
	return xstrndup(s, util_utf8_cut(s, strlen(s), TASKREG_TEXT));
}

/* Add an entry to a task's history (the newest TASKREG_HISTORY kept). */
static void
taskreg_event(struct task *t, const char *what, const char *agent,
    const char *detail)
{
	t->updated_ms = event_now_ms();
	if (json_array_size(t->history) >= TASKREG_HISTORY)
		json_array_remove(t->history, 0);
	json_array_append_new(t->history, json_pack("{s:I, s:s, s:s*, s:s*}",
	    "timestamp", (json_int_t)t->updated_ms, "event_type", what,
	    "agent_id", agent, "details", detail));
}

/* Move a task to a status, recorded in the audit log. */
static void
taskreg_set(struct task *t, int status, const char *agent, const char *why)
{
	if (t->status == status)
		return;
	auditlog_event("task_status", agent, t->id, "from", taskreg_names[t->status],
	    "to", taskreg_names[status], "reason", why != NULL ? why : "",
	    NULL);
	t->status = status;
	taskreg_event(t, taskreg_names[status], agent, why);
}

/*
 * Register a task (a request just made): its envelope gives its title,
 * intent, session and budget (an AgentMessage's constraints).  Forgets
 * the oldest ended task when the registry is full; when all are open,
 * the oldest of them.
 */
void
taskreg_add(const char *id, json_t *env, const char *requester,
    const char *assignee)
{
	struct task	*t, *old;
	json_t		*c;

	if (id == NULL || strlen(id) >= CORRAL_ID_MAX || taskreg_find(id))
		return;
	if (taskreg_count >= TASKREG_MAX) {
		old = NULL;
		TAILQ_FOREACH(t, &taskreg_list, entry)
			if (t->status >= TASK_COMPLETED) {
				old = t;
				break;
			}
		taskreg_free(old != NULL ? old : TAILQ_FIRST(&taskreg_list));
	}
	t = xcalloc(1, sizeof *t);
	strlcpy(t->id, id, sizeof t->id);
	t->title = taskreg_text(json_string_value(json_object_get(env, "task")));
	t->description = taskreg_text(json_string_value(json_object_get(
	    json_object_get(env, "content"), "text")));
	t->intent = taskreg_text(json_string_value(json_object_get(env,
	    "intent")));
	t->session = taskreg_text(json_string_value(json_object_get(env,
	    "session")));
	t->requester = taskreg_text(requester);
	t->assignee = taskreg_text(assignee);
	t->created_ms = t->updated_ms = event_now_ms();
	t->history = json_array();
	t->max_tokens = taskreg_max_tokens;
	t->max_cost = taskreg_max_cost;
	c = json_object_get(json_object_get(json_object_get(env, "content"),
	    "data"), "constraints");
	if (json_is_number(json_object_get(c, "max_tokens")))
		t->max_tokens = json_number_value(json_object_get(c,
		    "max_tokens"));
	if (json_is_number(json_object_get(c, "budget_usd")))
		t->max_cost = json_number_value(json_object_get(c,
		    "budget_usd"));
	TAILQ_INSERT_TAIL(&taskreg_list, t, entry);
	taskreg_count++;
	taskreg_event(t, "created", requester, NULL);
}

/* The task was given to an agent (a dispatch, an assignment, a handoff). */
void
taskreg_assign(const char *id, const char *agent, const char *why)
{
	struct task	*t = taskreg_find(id);

	if (t == NULL)
		return;
	free(t->assignee);
	t->assignee = taskreg_text(agent);
	taskreg_event(t, why != NULL ? why : "assigned", agent, NULL);
	taskreg_set(t, TASK_IN_PROGRESS, agent, why);
}

/*
 * A task's answer (an envelope line, or NULL with why): completed or
 * failed, with what it cost.  Returns nonzero when the answer takes it
 * over its budget: the task then fails with budget_exceeded, and why
 * says so.
 */
int
taskreg_end(const char *id, const char *agent, const char *line, size_t len,
    int is_error, char *why, size_t whylen)
{
	struct task	*t = taskreg_find(id);
	json_t		*env, *c, *cost;
	const char	*text;
	int		 over = 0;

	if (t == NULL || t->status >= TASK_COMPLETED)
		return 0;
	env = line != NULL ? json_loadb(line, len, 0, NULL) : NULL;
	cost = json_object_get(json_object_get(env, "trace"), "cost");
	t->tokens += json_number_value(json_object_get(cost, "input_tokens")) +
	    json_number_value(json_object_get(cost, "output_tokens"));
	t->cost += json_number_value(json_object_get(cost, "usd"));
	c = json_object_get(env, "content");
	if ((t->max_tokens > 0 && t->tokens > t->max_tokens) ||
	    (t->max_cost > 0 && t->cost > t->max_cost)) {
		snprintf(why, whylen, "task %s went over its budget: %.0f "
		    "tokens of %.0f, %.4f USD of %.4f", t->id, t->tokens,
		    t->max_tokens, t->cost, t->max_cost);
		t->error = json_pack("{s:s, s:s}", "code", "budget_exceeded",
		    "message", why);
		taskreg_set(t, TASK_FAILED, agent, "budget_exceeded");
		over = 1;
	} else if (is_error || line == NULL) {
		text = line == NULL ? why : json_string_value(json_object_get(c,
		    "text"));
		t->error = json_pack("{s:O*, s:s*}", "code", json_object_get(
		    json_object_get(c, "data"), "code"), "message", text);
		taskreg_set(t, json_string_value(json_object_get(t->error,
		    "code")) != NULL && strcmp(json_string_value(
		    json_object_get(t->error, "code")), "cancelled") == 0 ?
		    TASK_CANCELLED : TASK_FAILED, agent, text);
	} else {
		if ((t->result = json_object_get(c, "data")) == NULL)
			t->result = json_object_get(c, "text");
		if (t->result != NULL) {
			t->result = json_deep_copy(t->result);
			if ((text = jsonw_dumps(t->result, JSON_ENCODE_ANY)) !=
			    NULL && strlen(text) > TASKREG_TEXT) {
				json_decref(t->result);
				t->result = json_pack("{s:b, s:I}", "truncated",
				    1, "bytes", (json_int_t)strlen(text));
			}
			free((char *)text);
		}
		taskreg_set(t, TASK_COMPLETED, agent, NULL);
	}
	json_decref(env);
	return over;
}

/* A task was cancelled. */
void
taskreg_cancel(const char *id, const char *by)
{
	struct task	*t = taskreg_find(id);

	if (t != NULL && t->status < TASK_COMPLETED)
		taskreg_set(t, TASK_CANCELLED, by, "cancelled");
}

/* MAP's MAPTask of a task, the registry's own fields in meta.corral. */
static json_t *
taskreg_json(struct task *t)
{
	json_t	*o, *c;

	o = json_pack("{s:s, s:s, s:o}", "id", t->id, "status",
	    taskreg_map_names[t->status], "assignee", t->assignee != NULL ?
	    json_string(t->assignee) : json_null());
	if (t->title != NULL)
		json_object_set_new(o, "title", json_string(t->title));
	if (t->description != NULL)
		json_object_set_new(o, "description",
		    json_string(t->description));
	c = json_pack("{s:s, s:s*, s:I, s:I, s:s*, s:s*, s:f, s:f, s:O}",
	    "status", taskreg_names[t->status], "requester", t->requester,
	    "createdAt", (json_int_t)t->created_ms, "updatedAt",
	    (json_int_t)t->updated_ms, "intent", t->intent, "session",
	    t->session, "tokens", t->tokens, "cost", t->cost, "history",
	    t->history);
	if (t->max_tokens > 0 || t->max_cost > 0)
		json_object_set_new(c, "budget", json_pack("{s:f, s:f}",
		    "tokens", t->max_tokens, "cost", t->max_cost));
	if (t->result != NULL)
		json_object_set(c, "result", t->result);
	if (t->error != NULL)
		json_object_set(c, "error", t->error);
	json_object_set_new(o, "meta", json_pack("{s:o}", "corral", c));
	return o;
}

/* Does a task (a MAPTask) pass a map/tasks/list filter {assignee, status}? */
static int
taskreg_match(json_t *t, json_t *f)
{
	json_t		*st = json_object_get(f, "status"), *x;
	const char	*a = json_string_value(json_object_get(f, "assignee"));
	const char	*mine = json_string_value(json_object_get(t, "status"));
	const char	*own = json_string_value(json_object_get(json_object_get(
			    json_object_get(t, "meta"), "corral"), "status"));
	size_t		 i;

	if (a != NULL && (json_string_value(json_object_get(t, "assignee")) ==
	    NULL || strcmp(a, json_string_value(json_object_get(t,
	    "assignee"))) != 0))
		return 0;
	if (json_is_string(st))
		return strcmp(json_string_value(st), mine) == 0 ||
		    strcmp(json_string_value(st), own) == 0;
	if (!json_is_array(st) || json_array_size(st) == 0)
		return 1;
	json_array_foreach(st, i, x)
		if (json_is_string(x) && (strcmp(json_string_value(x), mine) ==
		    0 || strcmp(json_string_value(x), own) == 0))
			return 1;
	return 0;
}

/* Order MAPTasks by meta.corral.createdAt (qsort). */
static int
taskreg_older(const void *x, const void *y)
{
	json_int_t	a, b;

	a = json_integer_value(json_object_get(json_object_get(json_object_get(
	    *(json_t *const *)x, "meta"), "corral"), "createdAt"));
	b = json_integer_value(json_object_get(json_object_get(json_object_get(
	    *(json_t *const *)y, "meta"), "corral"), "createdAt"));
	return a < b ? -1 : a > b;
}

/*
 * The budgets, as the shared registry's policy state has them (per task,
 * per agent, total): the limits and what was spent (a new reference).
 */
static json_t *
taskreg_budgets(void)
{
	json_t		*agents = json_array();
	struct agent	*a;
	double		 tin, tout, cost, used, spent, max_tokens, max_cost;

	for (a = agent_first(); a != NULL; a = agent_next(a)) {
		if (a->flags & AGENT_DEAD)
			continue;
		budget_used(a, &used, &spent);
		budget_limits(a, &max_tokens, &max_cost);
		if (max_tokens > 0 || max_cost > 0 || used > 0 || spent > 0)
			json_array_append_new(agents, json_pack("{s:s, s:f, s:f, "
			    "s:f, s:f}", "agent", a->id, "tokens", used, "cost",
			    spent, "maxTokens", max_tokens, "maxCost",
			    max_cost));
	}
	budget_totals(&tin, &tout, &cost);
	return json_pack("{s:{s:f, s:f}, s:o, s:{s:f, s:f, s:f, s:f}}",
	    "perTask", "maxTokens", taskreg_max_tokens, "maxCost",
	    taskreg_max_cost, "perAgent", agents, "total", "tokens", tin + tout,
	    "cost", cost, "maxTokens", taskreg_wf != NULL ?
	    taskreg_wf->budget_tokens : 0, "maxCost", taskreg_wf != NULL ?
	    taskreg_wf->budget_cost : 0);
}

/*
 * map/tasks/list: every task, the control plane's and the workflow's own,
 * oldest first, filtered; limit and cursor.  _meta.corral.budgets has the
 * budgets per task, per agent and in all.
 */
void
taskreg_list_request(struct peer *p, json_t *id, json_t *params)
{
	struct task	*t;
	json_t		*all = json_array(), *list = json_array(), *res, *x;
	json_t		*f = json_object_get(params, "filter");
	json_t		**v;
	json_int_t	 limit = json_integer_value(json_object_get(params,
			    "limit"));
	const char	*cursor = json_string_value(json_object_get(params,
			    "cursor"));
	size_t		 i, n, start = 0;
	int		 more = 0;

	if (limit <= 0 || limit > TASKREG_LIST)
		limit = TASKREG_LIST;
	TAILQ_FOREACH(t, &taskreg_list, entry)
		json_array_append_new(all, taskreg_json(t));
	taskreg_jobs_collect(all);
	n = json_array_size(all);
	v = xcalloc(n + 1, sizeof *v);
	json_array_foreach(all, i, x)
		v[i] = x;
	qsort(v, n, sizeof *v, taskreg_older);
	for (i = 0; cursor != NULL && i < n; i++)
		if (strcmp(json_string_value(json_object_get(v[i], "id")),
		    cursor) == 0) {
			start = i + 1;
			break;
		}
	if (cursor != NULL && i == n)
		start = n;
	for (i = start; i < n; i++) {
		if (!taskreg_match(v[i], f))
			continue;
		if ((json_int_t)json_array_size(list) >= limit) {
			more = 1;
			break;
		}
		json_array_append(list, v[i]);
	}
	free(v);
	json_decref(all);
	res = json_pack("{s:o, s:b, s:{s:{s:o}}}", "tasks", list, "hasMore",
	    more, "_meta", "corral", "budgets", taskreg_budgets());
	if (more && json_array_size(list) > 0)
		json_object_set(res, "nextCursor", json_object_get(
		    json_array_get(list, json_array_size(list) - 1), "id"));
	rpc_reply(p, id, res);
}

/* map/tasks/create: a task registered, not yet given to anyone. */
void
taskreg_create_request(struct peer *p, json_t *id, json_t *params)
{
	json_t		*task = json_object_get(params, "task"), *env;
	const char	*tid = json_string_value(json_object_get(task, "id"));
	char		 gen[CORRAL_ID_MAX];

	if (!json_is_object(task)) {
		rpc_error(p, id, CORRAL_E_PARAMS, "params.task must be an "
		    "object", NULL);
		return;
	}
	if (tid == NULL)
		tid = protocol_new_id(gen, sizeof gen);
	if (strlen(tid) >= CORRAL_ID_MAX || taskreg_find(tid) != NULL) {
		rpc_error(p, id, CORRAL_E_PARAMS, "task.id is taken or longer "
		    "than 63 bytes", NULL);
		return;
	}
	env = json_pack("{s:O*, s:{s:O*}}", "task", json_object_get(task,
	    "title"), "content", "text", json_object_get(task,
	    "description"));
	taskreg_add(tid, env, p->name, NULL);
	json_decref(env);
	rpc_reply(p, id, json_pack("{s:o}", "task", taskreg_json(
	    taskreg_find(tid))));
}

/*
 * map/tasks/update: a client (or the agent it is assigned to) changes
 * its title, description or status.
 */
void
taskreg_update_request(struct peer *p, json_t *id, json_t *params)
{
	const char	*tid = json_string_value(json_object_get(params,
			    "taskId"));
	const char	*st = json_string_value(json_object_get(params,
			    "status"));
	struct task	*t;
	size_t		 i;

	if (tid == NULL || (t = taskreg_find(tid)) == NULL) {
		rpc_error(p, id, CORRAL_E_PARAMS, "params.taskId names no task",
		    NULL);
		return;
	}
	if (p->agent != NULL && (t->assignee == NULL ||
	    strcmp(t->assignee, p->agent->id) != 0)) {
		rpc_error(p, id, CORRAL_E_DENIED, "an agent may update only "
		    "the tasks assigned to it", NULL);
		return;
	}
	if (json_is_string(json_object_get(params, "title"))) {
		free(t->title);
		t->title = taskreg_text(json_string_value(json_object_get(
		    params, "title")));
	}
	if (json_is_string(json_object_get(params, "description"))) {
		free(t->description);
		t->description = taskreg_text(json_string_value(
		    json_object_get(params, "description")));
	}
	if (st != NULL) {
		for (i = 0; i < 5; i++)
			if (strcmp(st, taskreg_names[i]) == 0 ||
			    (i != TASK_CANCELLED &&
			    strcmp(st, taskreg_map_names[i]) == 0))
				break;
		if (i == 5) {
			rpc_error(p, id, CORRAL_E_PARAMS, "params.status is one "
			    "of open (pending), in_progress, completed, failed, "
			    "cancelled", NULL);
			return;
		}
		taskreg_set(t, (int)i, p->name, "map/tasks/update");
	}
	t->updated_ms = event_now_ms();
	rpc_reply(p, id, json_pack("{s:o}", "task", taskreg_json(t)));
}

/* The task's MAPTask (a new reference), or NULL. */
json_t *
taskreg_describe(const char *id)
{
	struct task	*t = taskreg_find(id);

	return t != NULL ? taskreg_json(t) : NULL;
}

/* A task's title and description, for making it a request. */
int
taskreg_text_of(const char *id, const char **title, const char **desc)
{
	struct task	*t = taskreg_find(id);

	if (t == NULL)
		return -1;
	*title = t->title;
	*desc = t->description;
	return 0;
}

/* How many tasks there are in each status (for the metrics). */
void
taskreg_counts(unsigned int *counts)
{
	struct task	*t;

	memset(counts, 0, TASK_NSTATUS * sizeof *counts);
	TAILQ_FOREACH(t, &taskreg_list, entry)
		counts[t->status]++;
}

/* The registry's name of a status. */
const char *
taskreg_status_name(int s)
{
	return s >= 0 && s < TASK_NSTATUS ? taskreg_names[s] : "?";
}
