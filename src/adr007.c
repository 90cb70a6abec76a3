/*
 * The ADR-007 agent protocol (docs/protocol.md, "ADR-007 agents"): the
 * input envelope corral writes to such an agent, and the check of the
 * output envelope it answers with, turned into the multiagent-1.0 reply
 * the rest of corral works with.
 *
 *   input:  {context: {feature_id, workflow, iteration}, paths,
 *            task: {action, params}, prior_context: [notes]}
 *   output: {success, summary, artifacts: [{path, operation, content}],
 *            notes, recommendation: proceed | retry | escalate}
 *
 * A request carries what only a step knows (the iteration, the paths, the
 * notes before it) in corral's member, {"corral":{"step":{...}}}; the
 * step module writes it (step.c).  A request that is no step's gets the
 * defaults the caller gives.  Every rule of the protocol's tables is
 * checked, and the first one broken is reported with its field.
 *
 * ADR-007 agents are language-model agents that take seconds a request,
 * so jansson does the work: this is not the hot path.
 */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

static const char *const adr007_recommendations[] = {
	"proceed", "retry", "escalate", NULL
};

/* Record why an output envelope is refused; returns -1. */
static int __attribute__((format(printf, 3, 4)))
adr007_fail(struct adr007_error *err, const char *field, const char *fmt,
    ...)
{
	va_list	ap;

	snprintf(err->field, sizeof err->field, "%s", field);
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	return -1;
}

/* Dump a JSON value as corral writes it; never NULL. */
static char *
adr007_dump(json_t *j, size_t *len)
{
	char	*s;

	if ((s = jsonw_dumps(j, CORRAL_JSON_FLAGS)) == NULL)
		fatalx("adr007: cannot serialize an envelope");
	*len = strlen(s);
	return s;
}

/*
 * The notes of a request that is no step's: its inputs.context as one
 * note, or none.
 */
static json_t *
adr007_context_notes(json_t *req)
{
	json_t	*notes = json_array(), *ctx;

	ctx = json_object_get(json_object_get(req, "inputs"), "context");
	if (json_is_string(ctx) && json_string_length(ctx) > 0)
		json_array_append(notes, ctx);
	return notes;
}

/*
 * Build the input envelope for a request (a multiagent-1.0 envelope that
 * corral made or passed on).  d says what a request that is no step's
 * gets.  Returns the line (no newline), or NULL with why filled in.
 */
char *
adr007_input(const char *line, size_t len, const struct adr007_defaults *d,
    size_t *outlen, char *why, size_t whylen)
{
	json_error_t	 e;
	json_t		*req, *step, *in, *params, *fid, *v;
	char		*out;

	if ((req = json_loadb(line, len, CORRAL_JSON_LOAD, &e)) == NULL ||
	    !json_is_object(req)) {
		snprintf(why, whylen, "the request is not a JSON object");
		json_decref(req);
		return NULL;
	}
	step = json_object_get(json_object_get(req, "corral"), "step");
	params = json_object_get(json_object_get(req, "inputs"),
	    "parameters");
	if (step != NULL)
		fid = json_incref(json_object_get(step, "feature_id"));
	else
		fid = d->feature_id != NULL ? json_string(d->feature_id) : NULL;
	in = json_pack("{s:{s:o?, s:s, s:I}, s:o, s:{s:O, s:o}, s:o}",
	    "context",
	    "feature_id", fid,
	    "workflow", d->workflow != NULL ? d->workflow : "",
	    "iteration", (json_int_t)1,
	    "paths", json_object(),
	    "task",
	    "action", json_object_get(req, "task"),
	    "params", json_is_object(params) ? json_deep_copy(params) :
	    json_object(),
	    "prior_context", json_array());
	if (in == NULL) {
		snprintf(why, whylen, "the request has no task");
		json_decref(req);
		return NULL;
	}
	if (step != NULL) {
		/* A step's request: what the step module said. */
		if (json_is_string(v = json_object_get(step, "workflow")))
			json_object_set(json_object_get(in, "context"),
			    "workflow", v);
		if (json_is_integer(v = json_object_get(step, "iteration")))
			json_object_set(json_object_get(in, "context"),
			    "iteration", v);
		if (json_is_object(v = json_object_get(step, "paths")))
			json_object_set(in, "paths", v);
		if (json_is_array(v = json_object_get(step, "prior_context")))
			json_object_set(in, "prior_context", v);
	} else
		json_object_set_new(in, "prior_context",
		    adr007_context_notes(req));
	out = adr007_dump(in, outlen);
	json_decref(in);
	json_decref(req);
	return out;
}

/* Check artifacts[i]: {path, operation, content}, all required. */
static int
adr007_check_artifact(json_t *a, size_t i, struct adr007_error *err)
{
	json_t	*v;
	char	 f[64];

	snprintf(f, sizeof f, "artifacts[%zu]", i);
	if (!json_is_object(a))
		return adr007_fail(err, f, "%s must be an object", f);
	snprintf(f, sizeof f, "artifacts[%zu].path", i);
	if ((v = json_object_get(a, "path")) == NULL)
		return adr007_fail(err, f, "%s is required", f);
	if (!json_is_string(v) || json_string_length(v) == 0)
		return adr007_fail(err, f, "%s must be a non-empty string", f);
	snprintf(f, sizeof f, "artifacts[%zu].operation", i);
	if ((v = json_object_get(a, "operation")) == NULL)
		return adr007_fail(err, f, "%s is required (create or update)",
		    f);
	if (!json_is_string(v) || (strcmp(json_string_value(v), "create") !=
	    0 && strcmp(json_string_value(v), "update") != 0))
		return adr007_fail(err, f, "%s must be create or update", f);
	snprintf(f, sizeof f, "artifacts[%zu].content", i);
	if ((v = json_object_get(a, "content")) == NULL)
		return adr007_fail(err, f, "%s is required (the complete file)",
		    f);
	if (!json_is_string(v))
		return adr007_fail(err, f, "%s must be a string", f);
	return 0;
}

/* Check an output envelope against every rule of the protocol's tables. */
static int
adr007_check(json_t *o, struct adr007_error *err)
{
	json_t	*v, *x;
	size_t	 i;
	int	 k;

	if (!json_is_object(o))
		return adr007_fail(err, "", "the output envelope must be a "
		    "JSON object");
	if ((v = json_object_get(o, "success")) == NULL)
		return adr007_fail(err, "success", "success is required");
	if (!json_is_boolean(v))
		return adr007_fail(err, "success", "success must be true or "
		    "false");
	if ((v = json_object_get(o, "summary")) == NULL)
		return adr007_fail(err, "summary", "summary is required");
	if (!json_is_string(v))
		return adr007_fail(err, "summary", "summary must be a string");
	if ((v = json_object_get(o, "artifacts")) == NULL)
		return adr007_fail(err, "artifacts", "artifacts is required "
		    "(an empty array when there are none)");
	if (!json_is_array(v))
		return adr007_fail(err, "artifacts", "artifacts must be an "
		    "array");
	json_array_foreach(v, i, x)
		if (adr007_check_artifact(x, i, err) != 0)
			return -1;
	if ((v = json_object_get(o, "notes")) != NULL) {
		if (!json_is_array(v))
			return adr007_fail(err, "notes", "notes must be an "
			    "array of strings");
		json_array_foreach(v, i, x) {
			if (!json_is_string(x)) {
				char f[32];

				snprintf(f, sizeof f, "notes[%zu]", i);
				return adr007_fail(err, f, "%s must be a "
				    "string", f);
			}
		}
	}
	if ((v = json_object_get(o, "recommendation")) == NULL)
		return adr007_fail(err, "recommendation", "recommendation is "
		    "required (proceed, retry or escalate)");
	for (k = 0; json_is_string(v) && adr007_recommendations[k] != NULL;
	    k++)
		if (strcmp(json_string_value(v),
		    adr007_recommendations[k]) == 0)
			return 0;
	return adr007_fail(err, "recommendation", "recommendation must be "
	    "proceed, retry or escalate");
}

/*
 * Check an agent's output envelope and make the multiagent-1.0 reply of
 * it, for the request with intent and task (docs/protocol.md, "The reply
 * corral makes of it"); trace.parents is left out, so that the reply
 * answers the agent's oldest outstanding request.  Returns the line, or
 * NULL with err saying which field breaks which rule.
 */
char *
adr007_reply(const char *line, size_t len, const char *agent_id,
    const char *intent, const char *task, size_t *outlen,
    struct adr007_error *err)
{
	json_error_t	 e;
	json_t		*o, *r, *content, *notes, *arts, *a, *x;
	char		*out;
	size_t		 i;
	int		 ok;

	memset(err, 0, sizeof err[0]);
	if ((o = json_loadb(line, len, CORRAL_JSON_LOAD, &e)) == NULL) {
		(void)adr007_fail(err, "", "invalid JSON at byte %d: %s",
		    e.position, e.text);
		return NULL;
	}
	if (adr007_check(o, err) != 0) {
		json_decref(o);
		return NULL;
	}
	ok = json_is_true(json_object_get(o, "success"));
	content = json_pack("{s:s, s:O}", "type", ok ? "text" : "error",
	    "text", json_object_get(o, "summary"));
	if (!ok)
		json_object_set_new(content, "data", json_pack("{s:s}", "code",
		    "unsuccessful"));
	arts = json_array();
	json_array_foreach(json_object_get(o, "artifacts"), i, x) {
		a = json_pack("{s:O, s:O, s:O}", "path", json_object_get(x,
		    "path"), "operation", json_object_get(x, "operation"),
		    "content", json_object_get(x, "content"));
		json_array_append_new(arts, a);
	}
	notes = json_object_get(o, "notes");
	r = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:s, s:s, s:o, s:{s:o},"
	    " s:{s:O, s:o, s:O}}",
	    "protocol", CORRAL_ENVELOPE_PROTOCOL, "role", "agent",
	    "agent", "id", agent_id, "name", agent_id, "model", "adr-007",
	    "intent", intent, "task", task,
	    "content", content,
	    "outputs", "artifacts", arts,
	    "step", "success", json_object_get(o, "success"),
	    "notes", notes != NULL ? json_incref(notes) : json_array(),
	    "recommendation", json_object_get(o, "recommendation"));
	if (r == NULL)
		fatalx("adr007: cannot build a reply");
	out = adr007_dump(r, outlen);
	json_decref(r);
	json_decref(o);
	return out;
}

/*
 * Read a reply (a multiagent-1.0 envelope, from an agent of any protocol)
 * as an output envelope: {success, summary, artifacts, notes,
 * recommendation}.  Its step member says what it gives; the rest follows
 * from the envelope (docs/protocol.md, "Steps served by multiagent-1.0
 * agents").  Returns a new object, or NULL with err when the step member
 * breaks a rule.
 */
json_t *
adr007_read(const char *line, size_t len, struct adr007_error *err)
{
	json_error_t	 e;
	json_t		*r, *o, *step, *content, *text, *v, *arts, *a;
	size_t		 i;
	int		 error, k;

	memset(err, 0, sizeof err[0]);
	if ((r = json_loadb(line, len, CORRAL_JSON_LOAD, &e)) == NULL) {
		(void)adr007_fail(err, "", "the reply is not JSON: %s", e.text);
		return NULL;
	}
	step = json_object_get(r, "step");
	content = json_object_get(r, "content");
	text = json_object_get(content, "text");
	error = json_is_string(v = json_object_get(content, "type")) &&
	    strcmp(json_string_value(v), "error") == 0;
	o = json_pack("{s:b, s:s, s:[], s:[], s:s}", "success", !error,
	    "summary", json_is_string(text) ? json_string_value(text) : "",
	    "artifacts", "notes", "recommendation", error ? "retry" :
	    "proceed");
	if (json_is_string(text) && json_string_length(text) > 0)
		json_array_append(json_object_get(o, "notes"), text);
	arts = json_object_get(json_object_get(r, "outputs"), "artifacts");
	json_array_foreach(arts, i, a) {
		if (!json_is_string(json_object_get(a, "path")))
			continue;	/* not a file for the workspace */
		/* Without an operation or content, as the reply has it. */
		v = json_pack("{s:O}", "path", json_object_get(a, "path"));
		if (json_object_get(a, "operation") != NULL)
			json_object_set(v, "operation", json_object_get(a,
			    "operation"));
		if (json_object_get(a, "content") != NULL)
			json_object_set(v, "content", json_object_get(a,
			    "content"));
		json_array_append_new(json_object_get(o, "artifacts"), v);
	}
	if (step != NULL && !json_is_object(step)) {
		(void)adr007_fail(err, "step", "step must be an object");
		goto bad;
	}
	if ((v = json_object_get(step, "success")) != NULL) {
		if (!json_is_boolean(v)) {
			(void)adr007_fail(err, "step.success", "step.success "
			    "must be true or false");
			goto bad;
		}
		json_object_set(o, "success", v);
	}
	if ((v = json_object_get(step, "notes")) != NULL) {
		json_array_foreach(v, i, a)
			if (!json_is_string(a))
				break;
		if (!json_is_array(v) || i < json_array_size(v)) {
			(void)adr007_fail(err, "step.notes", "step.notes must "
			    "be an array of strings");
			goto bad;
		}
		json_object_set(o, "notes", v);
	}
	if ((v = json_object_get(step, "recommendation")) != NULL) {
		for (k = 0; json_is_string(v) &&
		    adr007_recommendations[k] != NULL; k++)
			if (strcmp(json_string_value(v),
			    adr007_recommendations[k]) == 0)
				break;
		if (!json_is_string(v) || adr007_recommendations[k] == NULL) {
			(void)adr007_fail(err, "step.recommendation",
			    "step.recommendation must be proceed, retry or "
			    "escalate");
			goto bad;
		}
		json_object_set(o, "recommendation", v);
	}
	json_decref(r);
	return o;
bad:
	json_decref(o);
	json_decref(r);
	return NULL;
}
