/*
 * Workflows of steps (docs/steps.md): each job walks the workflow's list
 * of steps, one request a step, and each reply's recommendation (proceed,
 * retry, escalate) picks what comes next, as the step's proceed: and
 * retry: say.  The agents never name who works next.
 *
 * The module sits above the engine and is reached through its hooks: the
 * engine hands over a job's first envelope (it becomes the first step's
 * request) and every step's request once it ended, its job held open;
 * this module writes the reply's artifacts (and waits for them: the next
 * step reads what this one wrote), decides, and either makes the next
 * step's request, ends the job's branch, or asks a person.  Each hold it
 * is handed is let go exactly once: by the next request, by the end of
 * the branch, or (the job ended some other way) on the next loop turn.
 *
 * What a request says (paths, notes, iterations) is built in
 * step-request.c; the escalation record of --on-escalate=exit is
 * step-record.c's.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "step.h"

static const struct workflow	*step_wf;
static struct step_options	 step_opts;
static struct step_hooks	 step_hooks;
static TAILQ_HEAD(, steprun)	 step_runs = TAILQ_HEAD_INITIALIZER(step_runs);
static ev_timer			 step_later_w;	/* lets holds go */

static char	*step_first(struct job *, const char *, size_t, size_t *,
		    int *, const struct agent_conf **, char *, size_t);
static void	 step_reply(struct job *, const char *, struct agent *,
		    const char *, size_t, const char *);
static void	 step_failed(struct job *, const char *, const char *,
		    const char *, const char *, size_t);
static void	 step_done(struct job *);
static void	 step_later_cb(struct ev_loop *, ev_timer *, int);
static void	 step_decide(struct steprun *);

/* Set the module up for a workflow (one without steps: nothing to do). */
void
step_init(const struct workflow *wf, const struct step_options *opts,
    const struct step_hooks *hooks)
{
	static const struct engine_step_hooks eh = {
		step_first, step_reply, step_failed, step_done
	};
	struct steprun	*sr;

	while ((sr = TAILQ_FIRST(&step_runs)) != NULL) {
		TAILQ_REMOVE(&step_runs, sr, entry);
		step_run_free(sr);
	}
	step_wf = wf;
	memset(&step_opts, 0, sizeof step_opts);
	if (opts != NULL)
		step_opts = *opts;
	memset(&step_hooks, 0, sizeof step_hooks);
	if (hooks != NULL)
		step_hooks = *hooks;
	ev_timer_init(&step_later_w, step_later_cb, 0, 0);
	if (wf->nsteps > 0)
		engine_on_step(&eh);
}

/* The workflow the module works for. */
const struct workflow *
step_workflow(void)
{
	return step_wf;
}

/* The options it was set up with. */
const struct step_options *
step_options(void)
{
	return &step_opts;
}

/* What the supervisor hears of escalations. */
const struct step_hooks *
step_hooks_get(void)
{
	return &step_hooks;
}

/* The walk of job j, or NULL. */
static struct steprun *
step_find(const struct job *j)
{
	struct steprun	*sr;

	TAILQ_FOREACH(sr, &step_runs, entry)
		if (sr->job == j)
			return sr;
	return NULL;
}

/* Free a walk's memory (it is off the list). */
void
step_run_free(struct steprun *sr)
{
	json_decref(sr->first);
	json_decref(sr->goal);
	json_decref(sr->params);
	json_decref(sr->corral_notes);
	json_decref(sr->paths);
	json_decref(sr->notes);
	json_decref(sr->out);
	json_decref(sr->written);
	json_decref(sr->wait_info);
	free(sr->feature_id);
	free(sr->answer);
	free(sr->reply);
	free(sr->runs);
	free(sr->since);
	free(sr);
}

/*
 * Let one of the holds on a walk's job go.  The job may come together
 * and be freed: the walk forgets it.
 */
static void
step_unhold(struct steprun *sr)
{
	struct job	*j = sr->job;

	if (sr->holds == 0 || j == NULL)
		fatalx("step_unhold: job %s holds nothing", sr->id);
	sr->holds--;
	if (sr->ended && sr->holds == 0)
		sr->job = NULL;
	engine_job_unhold(j);
}

/*
 * A job's first envelope (the goal of corral run, an input of corral
 * serve): its walk begins, and the envelope becomes the first step's
 * request.
 */
static char *
step_first(struct job *j, const char *line, size_t len, size_t *outlen,
    int *intent, const struct agent_conf **entry, char *why, size_t whylen)
{
	const struct step_conf	*sc;
	struct steprun		*sr;
	char			*req;

	sr = step_run_new(j, line, len);
	TAILQ_INSERT_TAIL(&step_runs, sr, entry);
	if (step_opts.resume != NULL && step_record_restore(sr,
	    step_opts.resume) == 0) {
		step_opts.resume = NULL;	/* one job resumes */
		req = step_request_resumed(sr, outlen, intent, entry);
	} else
		req = step_request_first(sr, outlen, intent, entry);
	sc = &step_wf->steps[sr->at];
	if (sc->capability != NULL && *entry == NULL) {
		snprintf(why, whylen, "no agent has the capability '%s' that "
		    "step %s needs", sc->capability, sc->name);
		free(req);
		return NULL;
	}
	return req;
}

/*
 * Record a step's reply in the audit log, once its artifacts are
 * written: the step, its iteration, what it recommends, and each
 * artifact with its hash and outcome.
 */
static void
step_audit_reply(struct steprun *sr)
{
	json_t	*f;
	char	*s;

	if (!auditlog_enabled())
		return;
	f = json_pack("{s:s, s:i, s:O, s:O, s:i, s:O}",
	    "step", step_wf->steps[sr->at].name,
	    "iteration", (int)sr->runs[sr->at],
	    "success", json_object_get(sr->out, "success"),
	    "recommendation", json_object_get(sr->out, "recommendation"),
	    "notes", (int)json_array_size(json_object_get(sr->out, "notes")),
	    "artifacts", sr->written);
	s = jsonw_dumps(f, CORRAL_JSON_FLAGS);
	auditlog_fields("step_reply", sr->agent, sr->reply_id, s, strlen(s));
	free(s);
	json_decref(f);
}

/* An artifact of the reply being handled was written or refused. */
static void
step_artifact_done(const struct workspace_result *r)
{
	struct steprun	*sr = r->arg;
	json_t		*a;
	char		 note[512];

	a = json_pack("{s:s, s:s, s:s?, s:s}", "path", r->path, "operation",
	    r->op == WORKSPACE_CREATE ? "create" : r->op == WORKSPACE_UPDATE ?
	    "update" : "write", "sha256", r->sha256, "outcome", r->why == NULL ?
	    "written" : "refused");
	if (r->why != NULL) {
		json_object_set_new(a, "reason", json_string(r->why));
		snprintf(note, sizeof note, "corral could not write the "
		    "artifact %s: %s", r->path, r->why);
		json_array_append_new(sr->corral_notes, json_string(note));
	}
	json_array_append_new(sr->written, a);
	if (--sr->pending > 0)
		return;
	if (sr->ended) {
		step_release(sr);
		return;
	}
	step_decide(sr);
}

/*
 * Queue a reply's artifacts for the workspace, as the workflow's
 * artifacts: settings allow; returns how many.  Those without content
 * are left alone, as the workspace leaves them.
 */
static unsigned int
step_write_artifacts(struct steprun *sr)
{
	json_t		*arts, *a, *op, *content, *path;
	size_t		 i;
	unsigned int	 n = 0;
	int		 how;

	arts = json_object_get(sr->out, "artifacts");
	sr->pending = 1;	/* none reports before all are queued */
	json_array_foreach(arts, i, a) {
		path = json_object_get(a, "path");
		content = json_object_get(a, "content");
		if (!json_is_string(path) || !json_is_string(content))
			continue;
		op = json_object_get(a, "operation");
		how = WORKSPACE_ANY;
		if (json_is_string(op) && strcmp(json_string_value(op),
		    "create") == 0 && !step_wf->create_existing)
			how = WORKSPACE_CREATE;
		if (json_is_string(op) && strcmp(json_string_value(op),
		    "update") == 0 && !step_wf->update_missing)
			how = WORKSPACE_UPDATE;
		sr->pending++;
		n++;
		workspace_write(sr->agent, sr->reply_id,
		    json_string_value(path), json_string_length(path),
		    json_string_value(content),
		    json_string_length(content), how, step_artifact_done, sr);
	}
	/* The writer has its own copies: the walk keeps no contents. */
	json_object_set_new(sr->out, "artifacts", json_array());
	sr->pending--;
	return n;
}

/*
 * A step's request got its reply: read it as an output envelope (an
 * invalid one is a retry with corral's note), write its artifacts, and
 * decide once they are written.
 */
static void
step_reply(struct job *j, const char *req_id, struct agent *a,
    const char *line, size_t len, const char *reply_id)
{
	struct adr007_error	 err;
	struct steprun		*sr;
	char			 note[400];

	if ((sr = step_find(j)) == NULL)
		fatalx("step_reply: job %s has no steps", j->id);
	sr->holds++;
	free(sr->reply);
	sr->reply = xmemdup0(line, len);
	sr->reply_len = len;
	strlcpy(sr->reply_id, reply_id, sizeof sr->reply_id);
	strlcpy(sr->agent, a != NULL ? a->id : "", sizeof sr->agent);
	json_decref(sr->out);
	json_decref(sr->written);
	json_decref(sr->corral_notes);
	sr->written = json_array();
	sr->corral_notes = json_array();
	sr->invalid = 0;
	if ((sr->out = adr007_read(line, len, &err)) == NULL) {
		/* The reply cannot say what it recommends: try again. */
		snprintf(note, sizeof note, "the previous reply was invalid: "
		    "%s", err.msg);
		log_warnx("job %s: step %s: agent %s: %s", sr->id,
		    step_wf->steps[sr->at].name, sr->agent, err.msg);
		sr->out = json_pack("{s:b, s:s, s:[], s:[], s:s}", "success", 0,
		    "summary", err.msg, "artifacts", "notes", "recommendation",
		    "retry");
		json_array_append_new(sr->corral_notes, json_string(note));
		sr->invalid = 1;
	}
	if (step_write_artifacts(sr) == 0) {
		sr->pending = 0;
		step_decide(sr);
	}
}

/*
 * A step's request failed.  An invalid answer (an output envelope that
 * breaks a rule of the agent protocol) is tried again, with corral's
 * note naming the field; any other failure ends the branch with the
 * error, as in intent routing.
 */
static void
step_failed(struct job *j, const char *req_id, const char *code,
    const char *why, const char *line, size_t len)
{
	struct steprun	*sr;
	const char	*what;
	char		 note[600];

	if ((sr = step_find(j)) == NULL)
		fatalx("step_failed: job %s has no steps", j->id);
	sr->holds++;
	if (strcmp(code, "invalid_output") != 0) {
		sr->holds--;
		engine_job_end_branch(j, req_id, line, len, 1);
		return;
	}
	free(sr->reply);
	sr->reply = xmemdup0(line, len);
	sr->reply_len = len;
	strlcpy(sr->reply_id, req_id, sizeof sr->reply_id);
	sr->agent[0] = '\0';		/* corral's own error, not a reply */
	json_decref(sr->out);
	json_decref(sr->written);
	json_decref(sr->corral_notes);
	/* The note names no agent: only what was wrong. */
	if ((what = strstr(why, "output envelope: ")) != NULL)
		why = what + 17;
	snprintf(note, sizeof note, "the previous output envelope was invalid: "
	    "%s", why);
	sr->out = json_pack("{s:b, s:s, s:[], s:[], s:s}", "success", 0,
	    "summary", why, "artifacts", "notes", "recommendation", "retry");
	sr->written = json_array();
	sr->corral_notes = json_pack("[s]", note);
	sr->invalid = 1;
	sr->pending = 0;
	step_decide(sr);
}

/*
 * End the walk's branch with line (the reply that went past the last
 * step, or an error corral made).
 */
void
step_end(struct steprun *sr, const char *line, size_t len, int is_error)
{
	struct job	*j = sr->job;

	sr->holds--;
	if (sr->holds == 0)
		sr->job = NULL;
	sr->ended = 1;
	engine_job_end_branch(j, sr->reply_id, line, len, is_error);
	step_release(sr);
}

/*
 * End the branch with an error envelope corral makes (code, message),
 * its data the reply's output envelope and what more is given.
 */
void
step_fail(struct steprun *sr, const char *code, const char *msg, json_t *more)
{
	json_t	*e;
	char	*line, *s;
	size_t	 len;

	line = envelope_error(code, "REJECTED", NULL, msg, sr->reply_id, NULL,
	    &len);
	e = json_loadb(line, len, 0, NULL);
	free(line);
	if (e != NULL && more != NULL)
		json_object_update(json_object_get(json_object_get(e,
		    "content"), "data"), more);
	s = jsonw_dumps(e, CORRAL_JSON_FLAGS);
	auditlog_envelope("error", NULL, sr->id, s, strlen(s));
	step_end(sr, s, strlen(s), 1);
	free(s);
	json_decref(e);
}

/*
 * Run step `to` next, with notes as its prior context, unless it ran
 * max_iterations times since the last answer: then a person is asked
 * about the reply at hand instead.
 */
static void
step_go(struct steprun *sr, int to, json_t *notes)
{
	const struct step_conf	*sc;

	if (to == STEP_END) {
		step_end(sr, sr->reply, sr->reply_len, 0);
		return;
	}
	sc = &step_wf->steps[to];
	if (sc->max_iterations > 0 && sr->since[to] >= sc->max_iterations) {
		sr->blocked = to;
		step_escalate(sr, "max_iterations");
		return;
	}
	json_decref(sr->notes);
	sr->notes = json_incref(notes);
	step_run_step(sr, to);
}

/*
 * The notes the next request gets: the reply's, then corral's own (an
 * artifact it could not write, an invalid reply).
 */
static json_t *
step_next_notes(struct steprun *sr)
{
	json_t	*notes;

	notes = json_deep_copy(json_object_get(sr->out, "notes"));
	json_array_extend(notes, sr->corral_notes);
	return notes;
}

/* Decide what a step's reply leads to (its artifacts are written). */
static void
step_decide(struct steprun *sr)
{
	const struct step_conf	*sc = &step_wf->steps[sr->at];
	const char		*rec;
	json_t			*notes;
	int			 ok;

	step_audit_reply(sr);
	rec = json_string_value(json_object_get(sr->out, "recommendation"));
	ok = json_is_true(json_object_get(sr->out, "success"));
	if (json_array_size(sr->corral_notes) > 0) {
		/*
		 * The reply was invalid, or corral could not write what it
		 * asked: its own agent tries this step again.
		 */
		notes = step_next_notes(sr);
		step_go(sr, sr->at, notes);
		json_decref(notes);
		return;
	}
	if (strcmp(rec, "proceed") == 0 && !ok) {
		switch (sc->success_false) {
		case SF_ESCALATE:
			step_escalate(sr, "success_false");
			return;
		case SF_RETRY:
			rec = "retry";
			break;
		case SF_FAIL:
			step_end(sr, sr->reply, sr->reply_len, 1);
			return;
		default:
			break;
		}
	}
	if (strcmp(rec, "escalate") == 0) {
		step_escalate(sr, "agent");
		return;
	}
	notes = step_next_notes(sr);
	step_go(sr, strcmp(rec, "proceed") == 0 ? sc->next : sc->back, notes);
	json_decref(notes);
}

/*
 * A person's answer to the walk's escalation: retry (the escalated
 * step's retry: step, with the answer), proceed (its proceed: step) or
 * abort.  Every step's count starts again.
 */
void
step_resolve(struct steprun *sr, int action, const char *text)
{
	const struct step_conf	*sc = &step_wf->steps[sr->at];
	json_t			*notes;
	char			 why[128];
	size_t			 i;

	for (i = 0; i < step_wf->nsteps; i++)
		sr->since[i] = 0;
	if (action == STEP_ABORT) {
		snprintf(why, sizeof why, "aborted by a person at step %s",
		    sc->name);
		step_fail(sr, "aborted", why, NULL);
		return;
	}
	notes = step_next_notes(sr);
	if (action == STEP_RETRY && text != NULL) {
		free(sr->answer);
		sr->answer = xstrdup(text);
	}
	step_go(sr, action == STEP_PROCEED ? sc->next : sc->back, notes);
	json_decref(notes);
}

/*
 * The workflow entry of the least busy agent that has capability cap (in
 * its entry's capabilities:, or as it registered), or NULL: its entry's
 * route then chooses among that entry's agents.
 */
const struct agent_conf *
step_capable(const char *cap)
{
	struct agent	*a, *best = NULL;

	for (a = agent_first(); a != NULL; a = agent_next(a)) {
		if ((a->flags & (AGENT_DEAD | AGENT_HIDDEN)) ||
		    !lifecycle_alive(a) || lifecycle_leaving(a) ||
		    a->conf->index == UINT32_MAX ||
		    !mapview_has_capability(a, cap))
			continue;
		if (best == NULL || lifecycle_outstanding(a) <
		    lifecycle_outstanding(best))
			best = a;
	}
	return best != NULL ? best->conf : NULL;
}

/*
 * Make step `to`'s request and route it; the hold the walk had is let go
 * once the request holds the job.
 */
void
step_run_step(struct steprun *sr, int to)
{
	const struct step_conf	*sc = &step_wf->steps[to];
	char			 id[CORRAL_ID_MAX], *line;
	size_t			 len;
	int			 intent;

	const struct agent_conf	*entry = sc->agent;
	char			 why[160];

	sr->at = to;
	sr->runs[to]++;
	sr->since[to]++;
	if (sc->capability != NULL &&
	    (entry = step_capable(sc->capability)) == NULL) {
		snprintf(why, sizeof why, "no agent has the capability '%s' "
		    "that step %s needs", sc->capability, sc->name);
		log_warnx("job %s: %s", sr->id, why);
		step_fail(sr, "no_agent", why, NULL);
		return;
	}
	protocol_new_id(id, sizeof id);
	line = step_request(sr, sc, id, sr->reply_id, &len, &intent);
	free(sr->answer);
	sr->answer = NULL;
	step_audit_step(sr, id);
	if (engine_step_submit(sr->job, line, len, intent, entry, id) != 0)
		return;		/* a limit ended the job: step_done knows */
	step_unhold(sr);
}

/*
 * A job ended some other way (a limit, its deadline, an interrupt, or
 * its result): what waits for it stops waiting, and its holds go on the
 * next loop turn, never inside the engine's own call.
 */
static void
step_done(struct job *j)
{
	struct steprun	*sr;

	if ((sr = step_find(j)) == NULL)
		return;
	sr->ended = 1;
	if (sr->waiting)
		step_unwait(sr, STEP_JOB_ENDED);
	if (sr->holds == 0)
		sr->job = NULL;
	step_release(sr);
}

/* Let a walk go once nothing of it is in progress: on the next turn. */
void
step_release(struct steprun *sr)
{
	sr->release = 1;
	if (!ev_is_active(&step_later_w)) {
		ev_timer_set(&step_later_w, 0, 0);
		ev_timer_start(LOOP, &step_later_w);
	}
}

/* The next loop turn: holds of ended jobs go, and walks that are done. */
static void
step_later_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct steprun	*sr, *next;

	TAILQ_FOREACH_SAFE(sr, &step_runs, entry, next) {
		if (!sr->release || !sr->ended)
			continue;
		sr->release = 0;
		while (sr->holds > 0 && sr->pending == 0)
			step_unhold(sr);
		if (sr->holds > 0 || sr->pending > 0)
			continue;	/* its artifacts come back later */
		TAILQ_REMOVE(&step_runs, sr, entry);
		step_run_free(sr);
	}
}

/* The first walk, for those that go through them all. */
struct steprun *
step_first_run(void)
{
	return TAILQ_FIRST(&step_runs);
}

/* The walk after sr, or NULL. */
struct steprun *
step_next_run(struct steprun *sr)
{
	return TAILQ_NEXT(sr, entry);
}
