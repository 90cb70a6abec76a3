/*
 * How a job's branches come together.
 *
 * A reply with several next_actions forks its job into branches; each
 * branch ends in a reply that leads nowhere further (a finalize, or a
 * reply without next actions) or in an error.  When nothing of the job is
 * left, its result is made from those ends.  If any branch failed, the
 * result is an error naming the failed branches and their causes, so a
 * job never looks like a success when part of its work failed.  Else a
 * finalize is the answer: one finalize is the result (the branches that
 * ended without one were steps towards it, as an agent that gathers
 * parts answers each part and finalizes once); without a finalize, the
 * ends are the answers.  One answer is itself the result, as it always
 * was for a job that never forked; several become one envelope that
 * lists every branch with its status and its envelope.  With join.then,
 * the branches' ends go instead to one more request of that intent,
 * whose agent combines them.
 *
 * Everything here is composed with the JSON writer; the envelopes of the
 * ends are embedded as the bytes that travelled.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

/* The code, category and message of an error envelope (jansson: rare). */
static void
join_error_of(const struct branch_end *e, char *code, size_t clen,
    char *cat, size_t catlen, char *msg, size_t mlen)
{
	json_error_t	 je;
	json_t		*j, *data;
	const char	*s;

	strlcpy(code, "error", clen);
	strlcpy(cat, "INTERNAL", catlen);
	msg[0] = '\0';
	if ((j = json_loadb(e->line, e->len, 0, &je)) == NULL)
		return;
	data = json_object_get(json_object_get(j, "content"), "data");
	if ((s = json_string_value(json_object_get(data, "code"))) != NULL)
		strlcpy(code, s, clen);
	/*
	 * The job's error is corral's: it takes a branch's category only
	 * when it is one of corral's four, never a word an agent made up.
	 */
	if ((s = json_string_value(json_object_get(data, "category"))) !=
	    NULL && (strcmp(s, "TIMEOUT") == 0 || strcmp(s, "UNAVAILABLE") ==
	    0 || strcmp(s, "REJECTED") == 0))
		strlcpy(cat, s, catlen);
	if ((s = json_string_value(json_object_get(data, "message"))) == NULL)
		s = json_string_value(json_object_get(json_object_get(j,
		    "content"), "text"));
	if (s != NULL)
		strlcpy(msg, s, mlen);
	json_decref(j);
}

/* Write the branches as a JSON array: request, intent, status, envelope. */
static void
join_branches(struct jsonw *w, const struct job *j)
{
	const struct branch_end	*e;
	size_t			 i;

	jsonw_array(w);
	for (i = 0; i < j->nends; i++) {
		e = &j->ends[i];
		jsonw_object(w);
		jsonw_key(w, "request");
		jsonw_str(w, e->id);
		jsonw_key(w, "intent");
		jsonw_str(w, protocol_intent_name(e->intent));
		jsonw_key(w, "status");
		jsonw_str(w, e->error ? "error" : "ok");
		jsonw_key(w, "envelope");
		jsonw_raw(w, e->line, e->len);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
}

/* The members every envelope corral makes starts with. */
static void
join_head(struct jsonw *w, const char *intent, const char *task)
{
	char	ts[40];

	util_rfc3339(ts, sizeof ts);
	jsonw_key(w, "protocol");
	jsonw_str(w, CORRAL_ENVELOPE_PROTOCOL);
	jsonw_key(w, "role");
	jsonw_str(w, "system");
	jsonw_key(w, "agent");
	jsonw_object(w);
	jsonw_key(w, "id");
	jsonw_str(w, "corral");
	jsonw_key(w, "name");
	jsonw_str(w, "corral");
	jsonw_key(w, "model");
	jsonw_str(w, "n/a");
	jsonw_object_end(w);
	jsonw_key(w, "timestamp");
	jsonw_str(w, ts);
	jsonw_key(w, "intent");
	jsonw_str(w, intent);
	jsonw_key(w, "task");
	jsonw_str(w, task);
}

/* The trace of an envelope corral makes for job j. */
static void
join_trace(struct jsonw *w, const struct job *j)
{
	char	id[CORRAL_ID_MAX];

	protocol_new_id(id, sizeof id);
	jsonw_key(w, "trace");
	jsonw_object(w);
	jsonw_key(w, "id");
	jsonw_str(w, id);
	jsonw_key(w, "parents");
	jsonw_array(w);
	jsonw_str(w, j->id);
	jsonw_array_end(w);
	jsonw_object_end(w);
}

/*
 * Describe the failed branches in one sentence; returns how many failed
 * and sets the category of the first.
 */
static size_t
join_failures(const struct job *j, char *buf, size_t len, char *cat,
    size_t catlen)
{
	char	 code[64], c[32], msg[256], one[400];
	size_t	 i, n = 0;

	buf[0] = '\0';
	strlcpy(cat, "INTERNAL", catlen);
	for (i = 0; i < j->nends; i++) {
		if (!j->ends[i].error)
			continue;
		join_error_of(&j->ends[i], code, sizeof code, c, sizeof c, msg,
		    sizeof msg);
		if (n++ == 0)
			strlcpy(cat, c, catlen);
		snprintf(one, sizeof one, "%s%s %s: %s: %s", n > 1 ? "; " : "",
		    protocol_intent_name(j->ends[i].intent), j->ends[i].id, code,
		    msg);
		strlcat(buf, one, len);
	}
	return n;
}

/*
 * The result of job j from its branches' ends.  Returns a new line in
 * *line; *is_error tells whether the job failed, *linked whether the line
 * already names the job's input in trace.parents.
 */
char *
join_result(const struct job *j, size_t *len, int *is_error, int *linked)
{
	struct jsonw	 w;
	char		 text[2048], failures[1536], cat[32];
	size_t		 nfail;

	const struct branch_end	*one = NULL;
	size_t			 i, nfin = 0;

	*linked = 1;
	if (j->nends == 0) {
		*is_error = 1;
		return envelope_error("no_result", "INTERNAL", NULL, "the job "
		    "ended without a result", j->id, NULL, len);
	}
	nfail = join_failures(j, failures, sizeof failures, cat, sizeof cat);
	for (i = 0; i < j->nends; i++)
		if (j->ends[i].finalized && nfin++ == 0)
			one = &j->ends[i];
	if (j->nends == 1)
		one = &j->ends[0];
	else if (nfail > 0 || nfin != 1)
		one = NULL;
	if (one != NULL) {
		*is_error = one->error;
		*linked = one->linked;
		*len = one->len;
		return xmemdup0(one->line, one->len);
	}
	jsonw_init(&w);
	jsonw_object(&w);
	join_head(&w, nfail > 0 ? "route" : "finalize", "Join the branches "
	    "of the job");
	jsonw_key(&w, "content");
	jsonw_object(&w);
	jsonw_key(&w, "type");
	if (nfail > 0) {
		snprintf(text, sizeof text, "%zu of %zu branches failed: %s",
		    nfail, j->nends, failures);
		jsonw_str(&w, "error");
	} else {
		snprintf(text, sizeof text, "%zu branches ended, all ok",
		    j->nends);
		jsonw_str(&w, "json");
	}
	jsonw_key(&w, "text");
	jsonw_str(&w, text);
	jsonw_key(&w, "data");
	jsonw_object(&w);
	if (nfail > 0) {
		jsonw_key(&w, "code");
		jsonw_str(&w, "branch_failed");
		jsonw_key(&w, "category");
		jsonw_str(&w, cat);
		jsonw_key(&w, "message");
		jsonw_str(&w, text);
		jsonw_key(&w, "retryable");
		jsonw_bool(&w, 0);
	}
	jsonw_key(&w, "branches");
	join_branches(&w, j);
	jsonw_object_end(&w);
	jsonw_object_end(&w);
	join_trace(&w, j);
	jsonw_object_end(&w);
	*is_error = nfail > 0;
	return jsonw_finish(&w, len);
}

/*
 * The request that hands every branch's end to the join step (join.then):
 * intent then, the branches in content.data.branches.
 */
char *
join_request(const struct job *j, const char *then, const char *id,
    size_t *len)
{
	struct jsonw	 w;
	char		 text[128];
	size_t		 i;

	snprintf(text, sizeof text, "Combine the results of %zu branches",
	    j->nends);
	jsonw_init(&w);
	jsonw_object(&w);
	join_head(&w, then, text);
	jsonw_key(&w, "content");
	jsonw_object(&w);
	jsonw_key(&w, "type");
	jsonw_str(&w, "json");
	jsonw_key(&w, "text");
	jsonw_str(&w, text);
	jsonw_key(&w, "data");
	jsonw_object(&w);
	jsonw_key(&w, "branches");
	join_branches(&w, j);
	jsonw_object_end(&w);
	jsonw_object_end(&w);
	jsonw_key(&w, "trace");
	jsonw_object(&w);
	jsonw_key(&w, "id");
	jsonw_str(&w, id);
	jsonw_key(&w, "parents");
	jsonw_array(&w);
	for (i = 0; i < j->nends; i++)
		jsonw_str(&w, j->ends[i].id);
	jsonw_array_end(&w);
	jsonw_object_end(&w);
	jsonw_object_end(&w);
	return jsonw_finish(&w, len);
}

/* What a person can do about an error, by its code. */
static const char *
join_hint(const char *code)
{
	static const struct {
		const char	*code;
		const char	*hint;
	} hints[] = {
		{ "no_agent", "no agent can serve it: run the agent's cmd by "
		    "hand, and read its exit status and stderr above" },
		{ "no_route", "add a route for the intent, or a \"*\" "
		    "fallback, to routes:" },
		{ "timeout", "the agent did not answer in time: raise its "
		    "timeout:, or read its stderr (corral -v)" },
		{ "agent_lost", "the agent ended, or failed, while working: "
		    "the lines above say why (its exit status, its stderr)" },
		{ "invalid_envelope", "the agent's reply broke the protocol: "
		    "see docs/protocol.md" },
		{ "budget_exceeded", "raise limits.budget, or the agent's "
		    "budget:" },
		{ "max_steps", "raise limits.max_steps, or look for agents that "
		    "keep handing work to each other" },
		{ "max_depth", "raise limits.max_depth, or look for a loop of "
		    "next_actions" },
		{ "deadline", "raise limits.deadline" },
		{ "child_failed", "a sub-agent failed: read its lines above" },
		{ "branch_failed", "the result lists each failed branch and "
		    "its cause" },
		{ "queue_full", "raise limits.max_queue, or add instances: to "
		    "the agents of that route" },
		{ "circuit_open", "the agent failed again and again: see "
		    "breaker: in docs/workflow.md" },
		{ "no_result", "the job's agents gave no answer" },
	};
	size_t	i;

	for (i = 0; i < sizeof hints / sizeof hints[0]; i++)
		if (strcmp(hints[i].code, code) == 0)
			return hints[i].hint;
	return NULL;
}

/*
 * The one line a failed job gets on stderr: what happened (the error's
 * message names the agent) and a hint.
 */
void
join_summary(const char *line, size_t len, char *buf, size_t buflen)
{
	struct branch_end	 e;
	char			 code[64], cat[32], msg[512], *own;
	const char		*hint;

	memset(&e, 0, sizeof e);
	e.line = (char *)line;
	e.len = len;
	join_error_of(&e, code, sizeof code, cat, sizeof cat, msg, sizeof msg);
	/* A message that knows better carries its own hint. */
	if ((own = strstr(msg, "; hint: ")) != NULL) {
		*own = '\0';
		hint = own + 8;
	} else
		hint = join_hint(code);
	snprintf(buf, buflen, "%s (%s)%s%s", msg[0] ? msg : "it failed", code,
	    hint != NULL ? "; hint: " : "", hint != NULL ? hint : "");
}
