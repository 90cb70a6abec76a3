/*
 * What a step's request says (docs/steps.md, "What a step's agent is
 * asked"): a multiagent-1.0 envelope whose task is the step's action,
 * whose parameters are the run's with the step's over them, whose context
 * is the notes of the reply that led here, and whose corral member
 * carries what only a step knows (its name, iteration, feature id,
 * workflow, paths, prior context).  An ADR-007 agent gets the input
 * envelope adr007.c makes of it; any other agent gets it as it is.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "step.h"

/*
 * The workflow's name as agents see it: its name:, else its file's name
 * without the directory and a .yaml, .yml or .json ending.
 */
void
step_workflow_name(const struct workflow *wf, char *buf, size_t len)
{
	const char	*base, *dot;
	size_t		 n;

	if (wf->name != NULL) {
		strlcpy(buf, wf->name, len);
		return;
	}
	base = strrchr(wf->path, '/') != NULL ? strrchr(wf->path, '/') + 1 :
	    wf->path;
	n = strlen(base);
	if ((dot = strrchr(base, '.')) != NULL && (strcmp(dot, ".yaml") == 0 ||
	    strcmp(dot, ".yml") == 0 || strcmp(dot, ".json") == 0))
		n = (size_t)(dot - base);
	snprintf(buf, len, "%.*s", (int)n, base);
}

/* Fill in a path template's {feature_id} and {workflow}. */
static char *
step_fill(const char *tmpl, const char *feature_id, const char *workflow)
{
	char		*out = xstrdup(""), *next;
	const char	*p = tmpl, *v;
	size_t		 skip;

	while (*p != '\0') {
		v = NULL;
		skip = 0;
		if (strncmp(p, "{feature_id}", 12) == 0) {
			v = feature_id != NULL ? feature_id : "";
			skip = 12;
		} else if (strncmp(p, "{workflow}", 10) == 0) {
			v = workflow;
			skip = 10;
		}
		if (v != NULL)
			xasprintf(&next, "%s%s", out, v);
		else
			xasprintf(&next, "%s%c", out, *p);
		free(out);
		out = next;
		p += v != NULL ? skip : 1;
	}
	return out;
}

/*
 * The workflow's paths: for this walk: templates filled in, relative to
 * the workspace as written, or absolute with paths_as: absolute.
 */
static json_t *
step_paths(const struct workflow *wf, const char *feature_id)
{
	json_t		*paths = json_object();
	const char	*dir = workspace_dir();
	char		 name[256], *p, *abs;
	size_t		 i;

	step_workflow_name(wf, name, sizeof name);
	for (i = 0; i < wf->npaths; i++) {
		p = step_fill(wf->paths[i].value, feature_id, name);
		if (wf->paths_absolute && p[0] != '/' && dir != NULL) {
			xasprintf(&abs, "%s/%s", dir, p);
			free(p);
			p = abs;
		}
		json_object_set_new(paths, wf->paths[i].key, jsonw_text(p,
		    strlen(p)));
		free(p);
	}
	return paths;
}

/*
 * Begin the walk of job j from its first envelope: the goal's text, the
 * run's parameters, the feature id.
 */
struct steprun *
step_run_new(struct job *j, const char *line, size_t len)
{
	const struct workflow	*wf = step_workflow();
	struct steprun		*sr;
	json_t			*env, *text, *params, *fid;

	sr = xcalloc(1, sizeof *sr);
	sr->job = j;
	strlcpy(sr->id, j->id, sizeof sr->id);
	sr->runs = xcalloc(wf->nsteps, sizeof *sr->runs);
	sr->since = xcalloc(wf->nsteps, sizeof *sr->since);
	sr->notes = json_array();
	sr->blocked = -1;
	env = json_loadb(line, len, CORRAL_JSON_LOAD, NULL);
	text = json_object_get(json_object_get(env, "content"), "text");
	if (json_is_string(text) && json_string_length(text) > 0)
		sr->goal = json_incref(text);
	params = json_object_get(json_object_get(env, "inputs"), "parameters");
	sr->params = json_is_object(params) ? json_deep_copy(params) :
	    json_object();
	fid = json_object_get(sr->params, "feature_id");
	if (json_is_string(fid))
		sr->feature_id = xstrdup(json_string_value(fid));
	else if (wf->feature_id != NULL)
		sr->feature_id = xstrdup(wf->feature_id);
	sr->paths = step_paths(wf, sr->feature_id);
	sr->first = env != NULL ? env : json_object();
	return sr;
}

/*
 * The parameters of a step's request: the run's, the step's over them,
 * the goal (unless the step names one) and a person's answer.
 */
static json_t *
step_params(const struct steprun *sr, const struct step_conf *sc)
{
	json_t	*p = json_deep_copy(sr->params);

	if (sc->params != NULL)
		json_object_update(p, sc->params);
	if (sr->goal != NULL && json_object_get(p, "goal") == NULL)
		json_object_set(p, "goal", sr->goal);
	if (sr->answer != NULL)
		json_object_set_new(p, "answer", jsonw_text(sr->answer,
		    strlen(sr->answer)));
	return p;
}

/* The notes as one text, a note a line: multiagent-1.0's inputs.context. */
static char *
step_context(json_t *notes)
{
	json_t	*n;
	char	*out = NULL, *next;
	size_t	 i;

	json_array_foreach(notes, i, n) {
		xasprintf(&next, "%s%s%s", out != NULL ? out : "", out != NULL ?
		    "\n" : "", json_string_value(n));
		free(out);
		out = next;
	}
	return out;
}

/*
 * Make the request of step sc (its run sr->runs[sc->index], counted
 * already) with trace id id, after the reply parent (or none); the
 * intent it goes with in *intent.  Returns the line.
 */
char *
step_request(struct steprun *sr, const struct step_conf *sc, const char *id,
    const char *parent, size_t *len, int *intent)
{
	const struct workflow	*wf = step_workflow();
	json_t			*env, *prior, *in, *text;
	char			 name[256], *ctx, *line;

	*intent = sc->intent != NULL ? protocol_intent(sc->intent,
	    strlen(sc->intent)) : INTENT_EXECUTE;
	step_workflow_name(wf, name, sizeof name);
	prior = json_deep_copy(sr->notes);
	if (sr->answer != NULL)
		json_array_append_new(prior, jsonw_text(sr->answer,
		    strlen(sr->answer)));
	in = json_pack("{s:o}", "parameters", step_params(sr, sc));
	if ((ctx = step_context(prior)) != NULL) {
		json_object_set_new(in, "context", jsonw_text(ctx,
		    strlen(ctx)));
		free(ctx);
	}
	text = sr->goal != NULL ? json_incref(sr->goal) :
	    json_string(sc->action);
	env = json_pack("{s:s, s:s, s:s, s:s, s:o, s:{s:s, s:o}, s:{s:s},"
	    " s:{s:{s:s, s:i, s:s?, s:s, s:O, s:o}}}",
	    "protocol", CORRAL_ENVELOPE_PROTOCOL, "role", "user",
	    "intent", protocol_intent_name(*intent), "task", sc->action,
	    "inputs", in,
	    "content", "type", "text", "text", text,
	    "trace", "id", id,
	    "corral", "step", "name", sc->name,
	    "iteration", (int)sr->runs[sc->index],
	    "feature_id", sr->feature_id,
	    "workflow", name,
	    "paths", sr->paths,
	    "prior_context", prior);
	if (env == NULL)
		fatalx("step_request: cannot build step %s's request",
		    sc->name);
	if (parent != NULL && parent[0] != '\0')
		json_object_set_new(json_object_get(env, "trace"), "parents",
		    json_pack("[s]", parent));
	line = jsonw_dumps(env, CORRAL_JSON_FLAGS);
	*len = strlen(line);
	json_decref(env);
	return line;
}

/* Record that a step's request was made: the audit log's step line. */
void
step_audit_step(struct steprun *sr, const char *id)
{
	const struct step_conf	*sc = &step_workflow()->steps[sr->at];
	json_t			*f;
	char			*s;

	log_info("job %s: step %s (%s %s, iteration %u)", sr->id, sc->name,
	    sc->agent != NULL ? "agent" : sc->intent != NULL ? "intent" :
	    "capability", sc->agent != NULL ? sc->agent->name :
	    sc->intent != NULL ? sc->intent : sc->capability,
	    sr->runs[sr->at]);
	if (!auditlog_enabled())
		return;
	f = json_pack("{s:s, s:s, s:i}", "job", sr->id, "step", sc->name,
	    "iteration", (int)sr->runs[sr->at]);
	if (sc->agent != NULL)
		json_object_set_new(f, "entry", json_string(sc->agent->name));
	else if (sc->intent != NULL)
		json_object_set_new(f, "intent", json_string(sc->intent));
	else
		json_object_set_new(f, "capability",
		    json_string(sc->capability));
	s = jsonw_dumps(f, CORRAL_JSON_FLAGS);
	auditlog_fields("step", NULL, id, s, strlen(s));
	free(s);
	json_decref(f);
}

/*
 * The first request of a job's walk: the first step's, iteration 1,
 * under the job's own trace id.
 */
char *
step_request_first(struct steprun *sr, size_t *len, int *intent,
    const struct agent_conf **entry)
{
	const struct step_conf	*sc = &step_workflow()->steps[0];
	char			*line;

	sr->at = 0;
	sr->runs[0]++;
	sr->since[0]++;
	line = step_request(sr, sc, sr->id, NULL, len, intent);
	*entry = sc->capability != NULL ? step_capable(sc->capability) :
	    sc->agent;
	step_audit_step(sr, sr->id);
	return line;
}
