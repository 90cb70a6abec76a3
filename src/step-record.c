/*
 * The escalation record (docs/steps.md, "CI: --on-escalate"): with
 * --on-escalate=exit a run that needs a person stops with status 3 and
 * writes where its job stood; `corral answer RECORD STEP ...` writes the
 * answer into it, and `corral run --resume RECORD` goes on from there.
 *
 * A record is one JSON object: the workflow file (its path and the
 * SHA-256 of its text), the job's first envelope, the step that
 * escalated and why, its reply (the envelope, and read as an output
 * envelope), the notes the next step gets, every step's count of runs,
 * and the answer once given.  It is written to a new file and renamed
 * into place, so a reader never sees half of one.  This is the smallest
 * resume that is honest: the agents start afresh, and only the one job's
 * position comes back (what a record keeps is listed in steps.md).
 */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"
#include "step.h"

#define STEP_RECORD_VERSION	1
#define STEP_RECORD_MAX		(64 * 1024 * 1024)	/* bytes in one */

/* The SHA-256 of a file's text, in hex; "" when it cannot be read. */
static void
step_record_hash(const char *path, char *out)
{
	if (SHA256File(path, out) == NULL)
		out[0] = '\0';
}

/*
 * Write obj to path as a new file renamed into place (mode 0600).
 * Returns 0, or -1 with why.
 */
static int
step_record_save(json_t *obj, const char *path, char *why, size_t len)
{
	char	*tmp, *text;
	FILE	*f;
	int	 fd, rc = -1;

	xasprintf(&tmp, "%s.XXXXXX", path);
	if ((fd = mkstemp(tmp)) == -1 || (f = fdopen(fd, "w")) == NULL) {
		snprintf(why, len, "%s: %s", path, strerror(errno));
		if (fd != -1) {
			close(fd);
			unlink(tmp);
		}
		free(tmp);
		return -1;
	}
	text = jsonw_dumps(obj, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
	if (fputs(text, f) == EOF || fputc('\n', f) == EOF || fflush(f) ==
	    EOF || fsync(fileno(f)) == -1)
		snprintf(why, len, "%s: %s", tmp, strerror(errno));
	else if (rename(tmp, path) == -1)
		snprintf(why, len, "%s: %s", path, strerror(errno));
	else
		rc = 0;
	fclose(f);
	if (rc != 0)
		unlink(tmp);
	free(text);
	free(tmp);
	return rc;
}

/*
 * Write the record of walk sr's escalation to path (NULL: the default,
 * corral-escalation-RUN.json here); the path used goes in out.  Returns 0,
 * or -1 (logged).
 */
int
step_record_write(struct steprun *sr, const char *path, char *out,
    size_t outlen)
{
	const struct workflow	*wf = step_workflow();
	json_t			*rec, *runs, *notes, *reply;
	char			 sha[SHA256_DIGEST_STRING_LENGTH], why[1200];
	char			*abs = NULL;
	size_t			 i;
	int			 rc;

	if (path != NULL)
		strlcpy(out, path, outlen);
	else
		snprintf(out, outlen, "corral-escalation-%s.json",
		    protocol_run_id());
	runs = json_object();
	for (i = 0; i < wf->nsteps; i++)
		json_object_set_new(runs, wf->steps[i].name, json_integer(
		    sr->runs[i]));
	notes = json_deep_copy(json_object_get(sr->out, "notes"));
	json_array_extend(notes, sr->corral_notes);
	reply = json_loadb(sr->reply, sr->reply_len, 0, NULL);
	step_record_hash(wf->path, sha);
	abs = realpath(wf->path, NULL);
	rec = json_pack("{s:i, s:s, s:s, s:s, s:s, s:O, s:s, s:s, s:i, s:o, "
	    "s:O, s:o?, s:s, s:s?, s:o, s:n}",
	    "corral_escalation", STEP_RECORD_VERSION,
	    "workflow", abs != NULL ? abs : wf->path, "workflow_sha256", sha,
	    "run", protocol_run_id(), "job", sr->id, "goal", sr->first,
	    "step", wf->steps[sr->at].name, "reason", sr->reason != NULL ?
	    sr->reason : "agent", "iteration", (int)sr->runs[sr->at],
	    "runs", runs, "output", sr->out, "reply", reply,
	    "reply_id", sr->reply_id, "agent", sr->agent[0] != '\0' ?
	    sr->agent : NULL, "notes", notes, "answer");
	free(abs);
	rc = step_record_save(rec, out, why, sizeof why);
	json_decref(rec);
	if (rc != 0)
		log_warnx("escalation record: %s", why);
	else
		log_warnx("job %s: stopped for an answer; the record is %s: "
		    "corral answer %s %s \"TEXT\", then corral run --resume %s",
		    sr->id, out, out, wf->steps[sr->at].name, out);
	return rc;
}

/*
 * Read a record.  Returns it, or NULL with why (not there, not JSON, not
 * a record).
 */
json_t *
step_record_load(const char *path, char *why, size_t len)
{
	json_error_t	 e;
	json_t		*rec, *v;

	if ((rec = json_load_file(path, CORRAL_JSON_LOAD, &e)) == NULL) {
		snprintf(why, len, "%s:%d: %s", path, e.line, e.text);
		return NULL;
	}
	v = json_object_get(rec, "corral_escalation");
	if (json_is_integer(v) && json_integer_value(v) > STEP_RECORD_VERSION) {
		snprintf(why, len, "%s: a record of version %lld, from a newer "
		    "corral; this corral (%s) reads version %d: resume it with "
		    "a newer corral", path, (long long)json_integer_value(v),
		    CORRAL_VERSION, STEP_RECORD_VERSION);
		json_decref(rec);
		return NULL;
	}
	if (json_integer_value(v) != STEP_RECORD_VERSION || !json_is_string(json_object_get(rec,
	    "step")) || !json_is_object(json_object_get(rec, "goal")) ||
	    !json_is_object(json_object_get(rec, "output"))) {
		snprintf(why, len, "%s: not an escalation record of this "
		    "corral", path);
		json_decref(rec);
		return NULL;
	}
	return rec;
}

/*
 * Answer the escalation a record holds, at step: the answer goes into the
 * record (an earlier one is replaced).  Returns 0, or -1 with why.
 */
int
step_record_answer(const char *path, const char *step, int action,
    const char *text, char *why, size_t len)
{
	json_t	*rec;
	char	 at[64];
	int	 rc;

	if ((rec = step_record_load(path, why, len)) == NULL)
		return -1;
	if (strcmp(json_string_value(json_object_get(rec, "step")), step) !=
	    0) {
		snprintf(why, len, "%s: the escalation is at step %s, not %s",
		    path, json_string_value(json_object_get(rec, "step")),
		    step);
		json_decref(rec);
		return -1;
	}
	util_rfc3339(at, sizeof at);
	json_object_set_new(rec, "answer", json_pack("{s:s, s:s?, s:s}",
	    "action", step_action_name(action), "text", text, "at", at));
	rc = step_record_save(rec, path, why, len);
	json_decref(rec);
	return rc;
}

/* Read a record's answer: its action, or -1 when there is none. */
int
step_record_action(json_t *rec)
{
	const char	*a;
	int		 i;

	a = json_string_value(json_object_get(json_object_get(rec, "answer"),
	    "action"));
	for (i = STEP_RETRY; a != NULL && i <= STEP_ABORT; i++)
		if (strcmp(a, step_action_name(i)) == 0)
			return i;
	return -1;
}

/*
 * Check that a record fits the workflow: its step exists, and the file
 * did not change (a warning).  Returns 0, or -1 with why.
 */
int
step_record_check(json_t *rec, const struct workflow *wf, char *why,
    size_t len)
{
	char		 sha[SHA256_DIGEST_STRING_LENGTH];
	const char	*step = json_string_value(json_object_get(rec, "step"));
	const char	*was;

	if (config_find_step(wf, step) == NULL) {
		snprintf(why, len, "the record's step %s is no step of %s",
		    step, wf->path);
		return -1;
	}
	step_record_hash(wf->path, sha);
	was = json_string_value(json_object_get(rec, "workflow_sha256"));
	if (was != NULL && strcmp(was, sha) != 0)
		log_warnx("%s changed since the record was written; resuming "
		    "with the file as it is now", wf->path);
	return 0;
}

/*
 * Put a walk where the record left its job: the counts, the reply at
 * hand, the notes, and the answer.  Returns 0, or -1 when the record
 * does not fit (the walk then starts from the first step).
 */
int
step_record_restore(struct steprun *sr, json_t *rec)
{
	const struct workflow	*wf = step_workflow();
	const struct step_conf	*sc;
	json_t			*n;
	const char		*text;
	size_t			 i;

	if ((sc = config_find_step(wf, json_string_value(json_object_get(rec,
	    "step")))) == NULL)
		return -1;
	for (i = 0; i < wf->nsteps; i++) {
		n = json_object_get(json_object_get(rec, "runs"),
		    wf->steps[i].name);
		sr->runs[i] = (unsigned int)json_integer_value(n);
		sr->since[i] = 0;
	}
	sr->at = (int)sc->index;
	json_decref(sr->out);
	sr->out = json_deep_copy(json_object_get(rec, "output"));
	json_decref(sr->notes);
	sr->notes = json_is_array(json_object_get(rec, "notes")) ?
	    json_deep_copy(json_object_get(rec, "notes")) : json_array();
	strlcpy(sr->reply_id, json_is_string(json_object_get(rec, "reply_id")) ?
	    json_string_value(json_object_get(rec, "reply_id")) : "",
	    sizeof sr->reply_id);
	text = json_string_value(json_object_get(json_object_get(rec, "answer"),
	    "text"));
	sr->resume_action = step_record_action(rec);
	free(sr->answer);
	sr->answer = sr->resume_action == STEP_RETRY && text != NULL ?
	    xstrdup(text) : NULL;
	auditlog_event("resume", NULL, sr->id, "record", step_options()->
	    resume_path != NULL ? step_options()->resume_path : "", "step",
	    sc->name, "action", step_action_name(sr->resume_action), NULL);
	log_info("job %s: resumed at step %s (%s)", sr->id, sc->name,
	    step_action_name(sr->resume_action));
	return 0;
}

/*
 * The first request of a resumed walk: the step the answer leads to
 * (retry: the escalated step's retry: step; proceed: its proceed: step,
 * which is not the end: corral run finished such a run without agents).
 */
char *
step_request_resumed(struct steprun *sr, size_t *len, int *intent,
    const struct agent_conf **entry)
{
	const struct workflow	*wf = step_workflow();
	const struct step_conf	*sc = &wf->steps[sr->at];
	char			*line;
	int			 to;

	to = sr->resume_action == STEP_PROCEED ? sc->next : sc->back;
	if (to == STEP_END)
		fatalx("step_request_resumed: a resume past the last step");
	sc = &wf->steps[to];
	sr->at = to;
	sr->runs[to]++;
	sr->since[to]++;
	*entry = sc->capability != NULL ? step_capable(sc->capability) :
	    sc->agent;
	line = step_request(sr, sc, sr->id, sr->reply_id, len, intent);
	free(sr->answer);
	sr->answer = NULL;
	step_audit_step(sr, sr->id);
	return line;
}
