/*
 * The task registry's view of a workflow's own requests: those routed by
 * intent inside jobs (corral serve's inputs, corral run's goal, the
 * requests a reply's next_actions make, reflections, a join's request)
 * and children's tasks.  They are tasks like the control plane's
 * (taskreg.c), with a status, an assignee, times, context, a result or an
 * error.
 *
 * Nothing is copied while such a request lives: the engine has it, and a
 * listing reads it there (engine_live_next).  When it ends (the engine's
 * ended hook), a compact record of it goes into a ring of TASKREG_ENDED
 * (the oldest is forgotten first): fixed-size ids and title, and its
 * result (the reply's content.data or content.text, as the JSON the agent
 * wrote, when at most TASKREG_TEXT bytes) or its error.  Each slot keeps
 * its result buffer for the next record, so the per-request cost is a
 * few copies and no allocation; the reply's content is copied whole when
 * it fits, and its value looked for only when the task is listed.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "taskreg-int.h"

#define TASKREG_VALUE	1	/* a record's result: the reply's value */
#define TASKREG_CONTENT	2	/* its content, whose value is the result */

/* A request of a job that ended. */
struct taskrec {
	char		 id[CORRAL_ID_MAX];
	char		 agent[CORRAL_ID_MAX];	/* "" for none */
	char		 job[CORRAL_ID_MAX];
	char		 title[64];
	uint8_t		 status;
	uint8_t		 intent;
	uint8_t		 prio;
	uint8_t		 kind;
	uint8_t		 result_ok;	/* what result holds: TASKREG_VALUE... */
	unsigned int	 attempts;
	uint64_t	 created_ms;
	uint64_t	 ended_ms;
	double		 tokens;
	double		 cost;
	size_t		 result_len;	/* its length, whether kept or not */
	char		*result;	/* TASKREG_TEXT + 1 bytes, reused */
	char		*error;		/* JSON {code, category, message} */
	char		*session;
	char		*risk;		/* what agents reported on the way */
};

static struct taskrec	*taskreg_ring;
static size_t		 taskreg_ring_n;	/* records ever */
static size_t		 taskreg_ring_cap;	/* slots made */

/* The words MAP uses for the registry's statuses, and its own. */
static const char *const taskreg_jobs_words[][2] = {
	{ "open", "pending" }, { "in_progress", "in_progress" },
	{ "completed", "completed" }, { "failed", "failed" },
	{ "failed", "cancelled" }
};

/* How a request came about, for its task's context. */
static const char *const taskreg_kinds[] = {
	"goal", "input", "next_action", "reflection", "task", "request", "step"
};

/* Forget every record (a new run). */
void
taskreg_jobs_init(void)
{
	size_t	i, used;

	/* Only the slots ever used: the others were never set up. */
	used = taskreg_ring_n < taskreg_ring_cap ? taskreg_ring_n :
	    taskreg_ring_cap;
	for (i = 0; i < used; i++) {
		free(taskreg_ring[i].result);
		free(taskreg_ring[i].error);
		free(taskreg_ring[i].session);
		free(taskreg_ring[i].risk);
	}
	free(taskreg_ring);
	taskreg_ring = NULL;
	taskreg_ring_n = taskreg_ring_cap = 0;
}

/* The slot for the next record: a new one, or the oldest's. */
static struct taskrec *
taskreg_jobs_slot(void)
{
	struct taskrec	*r;
	size_t		 i = taskreg_ring_n % TASKREG_ENDED;

	if (i >= taskreg_ring_cap) {
		/* Grown by doubling, up to the bound. */
		taskreg_ring_cap = taskreg_ring_cap == 0 ? 64 :
		    taskreg_ring_cap * 2;
		if (taskreg_ring_cap > TASKREG_ENDED)
			taskreg_ring_cap = TASKREG_ENDED;
		/*
		 * The new slots are not touched here but each when first
		 * used: setting up 2,048 of them at once faulted in 700 KB
		 * and stalled the loop for 5 ms at the 2,049th request.
		 */
		taskreg_ring = xreallocarray(taskreg_ring, taskreg_ring_cap,
		    sizeof *taskreg_ring);
	}
	r = &taskreg_ring[i];
	if (taskreg_ring_n++ < TASKREG_ENDED) {
		/* A record fills every field but its buffers when made. */
		r->result = r->error = r->session = r->risk = NULL;
		return r;
	}
	/* Most records have none of these. */
	if (r->error != NULL || r->session != NULL || r->risk != NULL) {
		free(r->error);
		free(r->session);
		free(r->risk);
		r->error = r->session = r->risk = NULL;
	}
	return r;
}

/* Keep len bytes at s in a record's result buffer. */
static void
taskreg_jobs_keep(struct taskrec *r, const char *s, size_t len, int how)
{
	if (r->result == NULL)
		r->result = xmalloc(TASKREG_TEXT + 1);
	memcpy(r->result, s, len);
	r->result[len] = '\0';
	r->result_len = len;
	r->result_ok = (uint8_t)how;
}

/*
 * Keep a reply's value (content.data, else text) when it is small.  A
 * content that fits is kept whole, and its value found only when the
 * task is listed: most records never are, and looking for the value in
 * every reply was most of what the registry cost a request.
 */
static void
taskreg_jobs_result(struct taskrec *r, const struct engine_end *e)
{
	const struct jtok	*t;
	int			 v;

	r->result_ok = 0;
	r->result_len = 0;
	if (e->js == NULL || e->env == NULL || e->env->content < 0)
		return;
	t = &e->js->tok[e->env->content];
	if (t->len <= TASKREG_TEXT) {
		taskreg_jobs_keep(r, e->line + t->off, t->len, TASKREG_CONTENT);
		return;
	}
	if ((v = JSCAN_GET(e->js, e->line, e->env->content, "data")) < 0 ||
	    e->js->tok[v].type == JT_NULL)
		v = JSCAN_GET(e->js, e->line, e->env->content, "text");
	if (v < 0)
		return;
	if (e->js->tok[v].len > TASKREG_TEXT) {
		r->result_len = e->js->tok[v].len;
		return;
	}
	taskreg_jobs_keep(r, e->line + e->js->tok[v].off, e->js->tok[v].len,
	    TASKREG_VALUE);
}

/* The value of a kept result (a new reference), or NULL. */
static json_t *
taskreg_jobs_value(const struct taskrec *r)
{
	json_t	*c, *v;

	if (r->result_ok == TASKREG_VALUE)
		return json_loadb(r->result, r->result_len, JSON_DECODE_ANY,
		    NULL);
	if (r->result_ok != TASKREG_CONTENT ||
	    (c = json_loadb(r->result, r->result_len, 0, NULL)) == NULL)
		return NULL;
	if ((v = json_object_get(c, "data")) == NULL || json_is_null(v))
		v = json_object_get(c, "text");
	json_incref(v);
	json_decref(c);
	return v;
}

/* An error's {code, category, message}, cut, as JSON. */
static char *
taskreg_jobs_error(const char *code, const char *category, const char *why)
{
	struct jsonw	 w;
	size_t		 len;

	jsonw_init(&w);
	jsonw_object(&w);
	JSONW_KEY(&w, "code");
	jsonw_str(&w, code != NULL ? code : "error");
	JSONW_KEY(&w, "category");
	jsonw_str(&w, category != NULL ? category : "INTERNAL");
	JSONW_KEY(&w, "message");
	jsonw_strn(&w, why != NULL ? why : "", why != NULL ? util_utf8_cut(why,
	    strlen(why), TASKREG_TEXT) : 0);
	jsonw_object_end(&w);
	return jsonw_finish(&w, &len);
}

/*
 * A request ended (the engine's ended hook): one of the control plane's
 * is the registry's own (taskreg.c); any other is recorded here.
 */
void
taskreg_request_ended(const struct msg *m, const struct engine_end *e)
{
	struct taskrec	*r;
	char		 risk[2048];
	size_t		 n;

	if (m->kind == MSG_SEND)
		return;
	r = taskreg_jobs_slot();
	memcpy(r->id, m->id, sizeof r->id);
	r->id[sizeof r->id - 1] = '\0';
	n = e->agent != NULL ? agent_idlen(e->agent) : 0;
	if (n >= sizeof r->agent)
		n = sizeof r->agent - 1;
	memcpy(r->agent, n > 0 ? e->agent->id : "", n);
	r->agent[n] = '\0';
	if (m->job != NULL)
		memcpy(r->job, m->job->id, sizeof r->job);
	else
		r->job[0] = '\0';
	r->job[sizeof r->job - 1] = '\0';
	memcpy(r->title, m->title, sizeof r->title);
	r->intent = m->kind == MSG_REFLECT ? INTENT_REFLECT : m->intent;
	r->prio = m->prio;
	r->kind = m->kind;
	r->attempts = m->attempts;
	r->created_ms = (uint64_t)(m->accepted * 1000);
	r->ended_ms = (uint64_t)(ev_now(LOOP) * 1000);
	r->tokens = r->cost = 0;
	if (e->env != NULL) {
		r->tokens = e->env->tokens_in + e->env->tokens_out;
		r->cost = e->env->cost;
	}
	if (e->replied && !e->is_error) {
		r->status = TASK_COMPLETED;
		taskreg_jobs_result(r, e);
	} else {
		r->status = e->code != NULL && strcmp(e->code, "cancelled") == 0 ?
		    TASK_CANCELLED : TASK_FAILED;
		r->result_ok = 0;
		r->result_len = 0;
		r->error = taskreg_jobs_error(e->code, e->category, e->why);
	}
	if (m->job != NULL && m->job->session != NULL)
		r->session = xstrdup(m->job->session);
	if (m->reports != NULL && engine_report_risk(m->reports, risk,
	    sizeof risk) != NULL)
		r->risk = xstrdup(risk);
}

/* The history of a job's request: created, assigned, its end. */
static json_t *
taskreg_jobs_history(uint64_t created, const char *agent, int status,
    uint64_t when)
{
	json_t	*h = json_array();

	json_array_append_new(h, json_pack("{s:I, s:s}", "timestamp",
	    (json_int_t)created, "event_type", "created"));
	if (agent != NULL && *agent != '\0')
		json_array_append_new(h, json_pack("{s:I, s:s, s:s}",
		    "timestamp", (json_int_t)created, "event_type", "assigned",
		    "agent_id", agent));
	if (status != TASK_PENDING)
		json_array_append_new(h, json_pack("{s:I, s:s, s:s*}",
		    "timestamp", (json_int_t)when, "event_type",
		    taskreg_jobs_words[status][1], "agent_id", agent));
	return h;
}

/*
 * A MAPTask of a job's request: the fields every task has, and in
 * meta.corral its context (intent, priority, how it came about, its job,
 * its session, attempts) and history.
 */
static json_t *
taskreg_jobs_task(const char *id, int status, const char *agent,
    const char *title, int intent, int prio, int kind, const char *job,
    const char *session, uint64_t created, uint64_t updated, json_t *hist)
{
	json_t	*c;

	c = json_pack("{s:s, s:s, s:I, s:I, s:s, s:s, s:s, s:s*, s:s*, "
	    "s:o}", "status", taskreg_jobs_words[status][1], "requester",
	    kind == MSG_TASK ? "parent" : "workflow", "createdAt",
	    (json_int_t)created, "updatedAt", (json_int_t)updated, "intent",
	    protocol_intent_name(intent), "priority",
	    protocol_priority_name(prio), "kind", kind < (int)(sizeof
	    taskreg_kinds / sizeof taskreg_kinds[0]) ? taskreg_kinds[kind] :
	    "request", "job", job != NULL && *job != '\0' ? job : NULL,
	    "session", session, "history", hist);
	return json_pack("{s:s, s:s, s:o, s:o, s:{s:o}}", "id", id, "status",
	    taskreg_jobs_words[status][0], "assignee", agent != NULL &&
	    *agent != '\0' ? json_string(agent) : json_null(), "title",
	    jsonw_text(title != NULL && *title != '\0' ? title :
	    protocol_intent_name(intent), strlen(title != NULL && *title !=
	    '\0' ? title : protocol_intent_name(intent))), "meta", "corral",
	    c);
}

/* The MAPTask of an ended request of a job. */
static json_t *
taskreg_jobs_ended(struct taskrec *r)
{
	json_t	*t, *c, *v;

	t = taskreg_jobs_task(r->id, r->status, r->agent, r->title, r->intent,
	    r->prio, r->kind, r->job, r->session, r->created_ms, r->ended_ms,
	    taskreg_jobs_history(r->created_ms, r->agent, r->status,
	    r->ended_ms));
	c = json_object_get(json_object_get(t, "meta"), "corral");
	json_object_set_new(c, "tokens", json_real(r->tokens));
	json_object_set_new(c, "cost", json_real(r->cost));
	json_object_set_new(c, "attempts", json_integer(r->attempts));
	if ((v = taskreg_jobs_value(r)) != NULL)
		json_object_set_new(c, "result", v);
	else if (r->status == TASK_COMPLETED && r->result_ok == 0 &&
	    r->result_len > 0)
		json_object_set_new(c, "result", json_pack("{s:b, s:I}",
		    "truncated", 1, "bytes", (json_int_t)r->result_len));
	if (r->error != NULL && (v = json_loads(r->error, 0, NULL)) != NULL)
		json_object_set_new(c, "error", v);
	if (r->risk != NULL)
		json_object_set_new(c, "risk", json_string(r->risk));
	return t;
}

/* The MAPTask of a live request of a job (the engine has it). */
static json_t *
taskreg_jobs_live(struct msg *m)
{
	struct agent	*a = m->agent != NULL ? m->agent : m->target;
	uint64_t	 created = (uint64_t)(m->accepted * 1000);
	int		 status = m->where == MSG_INFLIGHT || m->where ==
			    MSG_RETRYING ? TASK_IN_PROGRESS : TASK_PENDING;
	json_t		*t, *c;
	char		 risk[2048];

	t = taskreg_jobs_task(m->id, status, a != NULL ? a->id : NULL,
	    m->title, m->kind == MSG_REFLECT ? INTENT_REFLECT : m->intent,
	    m->prio, m->kind, m->job != NULL ? m->job->id : NULL,
	    m->job != NULL ? m->job->session : NULL, created,
	    event_now_ms(), taskreg_jobs_history(created, a != NULL ? a->id :
	    NULL, TASK_PENDING, created));
	c = json_object_get(json_object_get(t, "meta"), "corral");
	json_object_set_new(c, "attempts", json_integer(m->attempts));
	if (m->reports != NULL && engine_report_risk(m->reports, risk,
	    sizeof risk) != NULL)
		json_object_set_new(c, "risk", json_string(risk));
	return t;
}

/*
 * Add the tasks of jobs to a listing (MAPTasks): the ended ones, oldest
 * first, then the live ones, in the order they were accepted.
 */
void
taskreg_jobs_collect(json_t *list)
{
	struct msg	*m;
	size_t		 i, n, first;

	n = taskreg_ring_n < TASKREG_ENDED ? taskreg_ring_n : TASKREG_ENDED;
	first = taskreg_ring_n - n;
	for (i = 0; i < n; i++)
		json_array_append_new(list, taskreg_jobs_ended(
		    &taskreg_ring[(first + i) % TASKREG_ENDED]));
	for (m = engine_live_next(NULL); m != NULL; m = engine_live_next(m))
		if (m->kind != MSG_SEND)
			json_array_append_new(list, taskreg_jobs_live(m));
}
