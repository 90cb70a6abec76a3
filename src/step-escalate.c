/*
 * A person in the loop (docs/steps.md): a step's reply escalates (its
 * agent says so, its step ran max_iterations times, or it said proceed
 * without success and the step's success_false: is escalate), and a
 * person answers: retry with an answer, proceed anyway, or abort.
 *
 * What --on-escalate says is done here: wait (the branch waits; the log,
 * the audit log, a MAP event, corral ps and corral top say what waits
 * for whom since when, and the supervisor asks on a terminal), fail (the
 * job fails at once) or exit (the run stops with status 3 after writing
 * a record that a later run resumes from, step-record.c).  The answers
 * come through step_answer: from the terminal, corral answer, or a MAP
 * client's _corral/answer.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "step.h"

/* The words of an answer's action, indexed by STEP_RETRY... */
static const char *const step_actions[] = { "retry", "proceed", "abort" };

/* Whether anything can answer: a control socket, or a terminal. */
static int	 step_answerable = 1;

/*
 * Say whether anything can answer an escalation (the supervisor knows: a
 * control socket listens, or corral asks on a terminal).  Without, an
 * escalation fails its job at once rather than wait for ever.
 */
void
step_set_answerable(int yes)
{
	step_answerable = yes;
}

/* Name an answer's action. */
const char *
step_action_name(int action)
{
	return action >= 0 && action <= STEP_ABORT ? step_actions[action] :
	    "retry";
}

/* Emit a MAP event about a walk (corral's extension types). */
static void
step_event(const char *type, const char *agent, json_t *data)
{
	struct event_info	 ei;
	char			*s;

	s = jsonw_dumps(data, CORRAL_JSON_FLAGS);
	memset(&ei, 0, sizeof ei);
	ei.type = type;
	ei.source = agent != NULL && agent[0] != '\0' ? agent : "corral";
	ei.agent = agent != NULL && agent[0] != '\0' ? agent : NULL;
	ei.audit = 1;
	event_emit(&ei, s, strlen(s));
	free(s);
}

/* Say in the log what a person is asked, and how to answer. */
static void
step_log_escalation(struct steprun *sr, json_t *info)
{
	json_t		*n, *a;
	const char	*sum;
	char		 esc[1024];
	size_t		 i;

	sum = json_string_value(json_object_get(info, "summary"));
	log_escape(esc, sizeof esc, sum, strlen(sum));
	log_warnx("job %s: step %s (agent %s, iteration %d) needs an answer "
	    "(%s): %s", sr->id, json_string_value(json_object_get(info,
	    "step")), sr->agent[0] != '\0' ? sr->agent : "-",
	    (int)json_integer_value(json_object_get(info, "iteration")),
	    json_string_value(json_object_get(info, "reason")), esc);
	json_array_foreach(json_object_get(info, "notes"), i, n) {
		log_escape(esc, sizeof esc, json_string_value(n),
		    json_string_length(n));
		log_warnx("  note: %s", esc);
	}
	json_array_foreach(json_object_get(info, "artifacts"), i, a) {
		log_escape(esc, sizeof esc, json_string_value(json_object_get(a,
		    "path")), json_string_length(json_object_get(a, "path")));
		log_warnx("  artifact: %s (%s, %s%.12s)", esc,
		    json_string_value(json_object_get(a, "operation")),
		    json_object_get(a, "sha256") != NULL ? "sha256 " :
		    "refused", json_object_get(a, "sha256") != NULL ?
		    json_string_value(json_object_get(a, "sha256")) : "");
	}
}

/*
 * What is shown and sent about an escalation: the job, the step, who,
 * why, the reply's summary, notes and artifacts, and since when.
 */
static json_t *
step_wait_info(struct steprun *sr, const char *reason)
{
	const struct workflow	*wf = step_workflow();
	const struct step_conf	*sc = &wf->steps[sr->at];
	json_t			*info, *notes;

	notes = json_deep_copy(json_object_get(sr->out, "notes"));
	json_array_extend(notes, sr->corral_notes);
	info = json_pack("{s:s, s:s, s:s, s:s?, s:i, s:s, s:O, s:o, s:O, "
	    "s:I}",
	    "run", protocol_run_id(), "jobId", sr->id, "step", sc->name,
	    "agentId", sr->agent[0] != '\0' ? sr->agent : NULL,
	    "iteration", (int)sr->runs[sr->at], "reason", reason,
	    "summary", json_object_get(sr->out, "summary"),
	    "notes", notes,
	    "artifacts", sr->written,
	    "since", (json_int_t)event_now_ms());
	if (sr->blocked >= 0)
		json_object_set_new(info, "blockedStep",
		    json_string(wf->steps[sr->blocked].name));
	return info;
}

/*
 * Ask a person about the reply at hand, for a reason (agent,
 * max_iterations, success_false), as --on-escalate says.
 */
void
step_escalate(struct steprun *sr, const char *reason)
{
	const struct step_options	*o = step_options();
	json_t				*info;
	char				 msg[512], path[1024];

	info = step_wait_info(sr, reason);
	step_log_escalation(sr, info);
	if (auditlog_enabled()) {
		json_t	*f;
		char	*s;

		f = json_pack("{s:O, s:O, s:s, s:O}", "step", json_object_get(
		    info, "step"), "iteration", json_object_get(info,
		    "iteration"), "reason", reason, "summary",
		    json_object_get(info, "summary"));
		s = jsonw_dumps(f, CORRAL_JSON_FLAGS);
		auditlog_fields("escalate", sr->agent, sr->id, s, strlen(s));
		free(s);
		json_decref(f);
	}
	snprintf(msg, sizeof msg, "step %s needs a person's answer (%s)",
	    json_string_value(json_object_get(info, "step")), reason);
	if (o->on_escalate == STEP_ON_FAIL) {
		step_fail(sr, "escalated", msg, info);
		json_decref(info);
		return;
	}
	if (o->on_escalate == STEP_ON_EXIT) {
		if (step_record_write(sr, o->record, path, sizeof path) == 0)
			json_object_set_new(info, "record", json_string(path));
		if (step_hooks_get()->exiting != NULL)
			step_hooks_get()->exiting(path);
		step_fail(sr, "escalated", msg, info);
		json_decref(info);
		return;
	}
	if (!step_answerable && o->on_escalate != STEP_ON_REPLAY) {
		/* Waiting would be for ever: nothing could answer. */
		log_warnx("  nothing can answer it: no control socket "
		    "(--no-control) and no terminal");
		strlcat(msg, "; nothing can answer it (no control socket, no "
		    "terminal)", sizeof msg);
		step_fail(sr, "escalated", msg, info);
		json_decref(info);
		return;
	}
	if (o->on_escalate != STEP_ON_REPLAY)
		log_warnx("  answer with: corral answer %s %s \"TEXT\" (or "
		    "--proceed, --abort)", protocol_run_id(), json_string_value(
		    json_object_get(info, "step")));
	sr->waiting = 1;
	sr->reason = reason;
	sr->since_ms = event_now_ms();
	json_decref(sr->wait_info);
	sr->wait_info = info;
	step_event("step_escalated", sr->agent, info);
	if (step_hooks_get()->escalated != NULL)
		step_hooks_get()->escalated(info);
}

/* The walk waits no more (answered, or its job ended): say so. */
void
step_unwait(struct steprun *sr, const char *why)
{
	json_t	*d;

	if (!sr->waiting)
		return;
	sr->waiting = 0;
	d = json_pack("{s:s, s:O, s:s}", "jobId", sr->id, "step",
	    json_object_get(sr->wait_info, "step"), "reason", why);
	step_event("step_answered", sr->agent, d);
	json_decref(d);
	if (step_hooks_get()->answered != NULL)
		step_hooks_get()->answered(sr->id, json_string_value(
		    json_object_get(sr->wait_info, "step")), why);
}

/*
 * Find the walk that waits at step (and in job, a prefix of its id, when
 * given).  Returns it, or NULL with why filled in.
 */
static struct steprun *
step_waiting_at(const char *job, const char *step, char *why, size_t len)
{
	struct steprun	*sr, *found = NULL;
	const char	*at;
	unsigned int	 n = 0, waiting = 0;

	for (sr = step_first_run(); sr != NULL; sr = step_next_run(sr)) {
		if (!sr->waiting)
			continue;
		waiting++;
		at = json_string_value(json_object_get(sr->wait_info, "step"));
		if (strcmp(at, step) != 0 || (job != NULL &&
		    strncmp(sr->id, job, strlen(job)) != 0))
			continue;
		found = sr;
		n++;
	}
	if (n == 1)
		return found;
	if (n > 1)
		snprintf(why, len, "%u jobs wait at step %s: say which with "
		    "its job id", n, step);
	else if (waiting == 0)
		snprintf(why, len, "no step waits for an answer");
	else
		snprintf(why, len, "step %s%s%s does not wait for an answer "
		    "(%u other%s do%s: corral ps shows them)", step,
		    job != NULL ? " of job " : "", job != NULL ? job : "",
		    waiting, waiting == 1 ? "" : "s", waiting == 1 ? "es" : "");
	return NULL;
}

/*
 * A person answers the escalation of step (in job, when given): action
 * STEP_RETRY with text, STEP_PROCEED or STEP_ABORT; by says who (the
 * terminal, a client).  Returns 0 with the job's id in jobid, or -1 with
 * why.
 */
int
step_answer(const char *job, const char *step, int action, const char *text,
    const char *by, char *jobid, size_t idlen, char *why, size_t whylen)
{
	struct steprun	*sr;
	json_t		*f;
	char		*s;

	if ((sr = step_waiting_at(job, step, why, whylen)) == NULL)
		return -1;
	if (action == STEP_RETRY && (text == NULL || *text == '\0')) {
		snprintf(why, whylen, "an answer to retry with needs its text");
		return -1;
	}
	strlcpy(jobid, sr->id, idlen);
	log_info("job %s: step %s answered by %s: %s", sr->id, step, by,
	    step_action_name(action));
	if (auditlog_enabled()) {
		/* The text too: corral replay answers with it again. */
		f = json_pack("{s:s, s:s, s:s, s:s?}", "step", step, "action",
		    step_action_name(action), "by", by, "text", text);
		s = jsonw_dumps(f, CORRAL_JSON_FLAGS);
		auditlog_fields("answer", NULL, sr->id, s, strlen(s));
		free(s);
		json_decref(f);
	}
	step_unwait(sr, step_action_name(action));
	step_resolve(sr, action, text);
	return 0;
}

/*
 * What waits for a person now, for _corral/steps, corral ps and top: one
 * object per escalation (step_wait_info's), with how long it has waited.
 */
json_t *
step_waiting(void)
{
	struct steprun	*sr;
	json_t		*list = json_array(), *w;

	for (sr = step_first_run(); sr != NULL; sr = step_next_run(sr)) {
		if (!sr->waiting)
			continue;
		w = json_deep_copy(sr->wait_info);
		json_object_set_new(w, "waitingMs", json_integer((json_int_t)
		    (event_now_ms() - sr->since_ms)));
		json_array_append_new(list, w);
	}
	return list;
}

/*
 * _corral/steps: what waits for a person ({"waiting": [...]}: each
 * escalation with its job, step, agent, reason, summary, notes,
 * artifacts, since and waitingMs).
 */
void
step_rpc_list(struct peer *from, json_t *id, json_t *params)
{
	rpc_reply(from, id, json_pack("{s:o}", "waiting", step_waiting()));
}

/*
 * _corral/answer: {"step", "text"?, "action"? (retry, proceed, abort;
 * retry when a text is given), "jobId"?}: answer an escalation, as a
 * person on the terminal would.
 */
void
step_rpc_answer(struct peer *from, json_t *id, json_t *params)
{
	const char	*step, *act, *text, *job;
	char		 jobid[CORRAL_ID_MAX], why[512];
	int		 action = STEP_RETRY, i;

	step = json_string_value(json_object_get(params, "step"));
	text = json_string_value(json_object_get(params, "text"));
	job = json_string_value(json_object_get(params, "jobId"));
	act = json_string_value(json_object_get(params, "action"));
	if (step == NULL) {
		rpc_error(from, id, CORRAL_E_PARAMS, "params.step must name "
		    "the step that waits", NULL);
		return;
	}
	if (act != NULL) {
		for (i = STEP_RETRY; i <= STEP_ABORT; i++)
			if (strcmp(act, step_action_name(i)) == 0)
				break;
		if (i > STEP_ABORT) {
			rpc_error(from, id, CORRAL_E_PARAMS, "params.action "
			    "must be retry, proceed or abort", NULL);
			return;
		}
		action = i;
	} else if (text == NULL) {
		rpc_error(from, id, CORRAL_E_PARAMS, "give params.text (an "
		    "answer to retry with) or params.action", NULL);
		return;
	}
	if (step_answer(job, step, action, text, from->name, jobid,
	    sizeof jobid, why, sizeof why) != 0) {
		rpc_error(from, id, CORRAL_E_STATE, why, NULL);
		return;
	}
	rpc_reply(from, id, json_pack("{s:b, s:s, s:s, s:s}", "answered", 1,
	    "jobId", jobid, "step", step, "action", step_action_name(action)));
}
