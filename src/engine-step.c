/*
 * The engine's part in a workflow of steps (docs/steps.md): a job's first
 * envelope becomes its first step's request, a step's request that ended
 * goes to the step module (step.c) with its job held open, and the step
 * module makes the next step's request, lets the hold go, or ends the
 * branch.  The decisions are the step module's; this keeps the engine's
 * bookkeeping (requests, branches, jobs) in the engine.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "engine-int.h"

/*
 * A workflow of steps: the job's first envelope becomes its first step's
 * request, keeping its trace id (docs/steps.md).  The goal or input stays
 * recorded as it came; the request is recorded as an env line.  Returns
 * 0, or -1 when the request could not be made: it failed (no agent has
 * the step's capability), and is not to be routed.
 */
int
engine_step_first(struct msg *m)
{
	const struct agent_conf	*entry = NULL;
	char			*line, why[256];
	size_t			 len;
	int			 intent = m->intent;

	if (engine_step.first == NULL)
		return 0;
	/* Not zeroed whole before the test: every input comes here. */
	why[0] = '\0';
	if ((line = engine_step.first(m->job, m->line, m->len, &len, &intent,
	    &entry, why, sizeof why)) == NULL) {
		if (why[0] == '\0')
			return 0;
		m->kind = MSG_STEP;
		engine_fail(m, "UNAVAILABLE", "no_agent", "%s", why);
		return -1;
	}
	engine_msg_line(m, line, len);
	m->kind = MSG_STEP;
	m->intent = (uint8_t)intent;
	m->to_entry = entry;
	auditlog_envelope("env", NULL, m->id, line, len);
	return 0;
}

/*
 * A step's request ended, with a reply from a (reply_id) or failed (code,
 * why): its branch is held while the step module decides what follows,
 * and the request ends first, so that what follows comes after it in the
 * audit log.
 */
void
engine_step_ended(struct msg *req, struct agent *a, const char *code,
    const char *why_or_id, const char *line, size_t len)
{
	struct job	*j = req->job;
	char		 id[CORRAL_ID_MAX];

	strlcpy(id, req->id, sizeof id);
	engine_job_hold(j);
	engine_request_end(req, line, len, code != NULL, END_NONE);
	if (j->done) {
		engine_job_unhold(j);
		return;
	}
	if (code == NULL)
		engine_step.reply(j, id, a, line, len, why_or_id);
	else
		engine_step.failed(j, id, code, why_or_id, line, len);
}

/*
 * Make and route the request of a step in job j (line taken over), with
 * its trace id: to a workflow entry, or by intent when entry is NULL.  It
 * counts towards limits.max_steps.  Returns 0, or -1 when a limit ended
 * the job instead.
 */
int
engine_step_submit(struct job *j, char *line, size_t len, int intent,
    const struct agent_conf *entry, const char *id)
{
	struct msg	*m;

	if (j->steps >= engine_wf->max_steps) {
		free(line);
		engine_limit(j, "max_steps", "the workflow reached max_steps "
		    "(%u) requests", engine_wf->max_steps);
		return -1;
	}
	if (!engine_room(len + 512)) {
		free(line);
		engine_limit(j, "memory_limit", "the next step's request would "
		    "hold more than limits.memory (%zu bytes) in requests",
		    engine_wf->max_memory);
		return -1;
	}
	m = engine_msg_create(j, line, len, MSG_STEP, intent);
	strlcpy(m->id, id, sizeof m->id);
	m->to_entry = entry;
	j->steps++;
	engine_stats.steps++;
	auditlog_envelope("env", NULL, id, line, len);
	engine_start(m);
	return 0;
}

/*
 * Hold job j open: a branch of it goes on, though no request of it is
 * out (a step's artifacts are being written, or a person is asked).
 */
void
engine_job_hold(struct job *j)
{
	j->open++;
	j->pending++;
}

/*
 * Let a hold go: the branch went on in a new request, or ended.  A job
 * with nothing left comes together, and is freed when it may be.
 */
void
engine_job_unhold(struct job *j)
{
	if (j->pending > 0)
		j->pending--;
	if (j->open > 0)
		j->open--;
	if (j->open == 0 && !j->done)
		engine_join(j);
	engine_job_release(j);
}

/*
 * End the held branch of job j with line (a reply, or an error envelope
 * corral made), which answers request id: it is the branch's end, as a
 * reply that leads nowhere further is.
 */
void
engine_job_end_branch(struct job *j, const char *id, const char *line,
    size_t len, int is_error)
{
	struct msg	 m;

	if (!j->done) {
		memset(&m, 0, sizeof m);
		strlcpy(m.id, id, sizeof m.id);
		m.kind = MSG_STEP;
		m.intent = INTENT_FINALIZE;
		engine_branch_end(j, &m, line, len, is_error, 0);
	}
	engine_job_unhold(j);
}
