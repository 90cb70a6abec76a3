/*
 * critic: reviews weak replies that corral sends for reflection.
 *
 * A reflect request is the weak reply itself, with intent "reflect" and
 * trace.parents naming it.  The critic checks it by fixed rules and
 * answers with a reviewed copy: the same content with its review
 * appended, the same next_actions (so the workflow carries on where the
 * weak reply pointed), its artifacts plus a "review" report, and its own
 * confidence:
 *
 *   - nothing to review (no content.text and no content.data): 0.3, so a
 *     second reflection round, when the workflow allows one, goes to
 *     another reviewer;
 *   - otherwise 0.8: every risk the author listed is carried into the
 *     review, where a person reading the result sees it.
 *
 * The reply's intent is reflect: the critic never finalizes by itself.
 * Requests with other intents (the workflow's "*" fallback) are
 * acknowledged with confidence 0.6 and no further work.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral/agent.h"

/* Review a reflected envelope. */
static json_t *
critic_reflect(struct cagent *ca, const struct cagent_msg *m)
{
	json_t		*r, *content, *outputs, *conf, *risks, *v;
	const char	*author, *rationale;
	char		*notes = NULL;
	size_t		 len = 0, i, nrisks;
	FILE		*f;

	author = json_string_value(json_object_get(json_object_get(m->env,
	    "agent"), "id"));
	if (author == NULL)
		author = "the author";
	conf = json_object_get(m->env, "confidence");
	risks = json_object_get(conf, "risks");
	nrisks = json_array_size(risks);
	rationale = json_string_value(json_object_get(conf, "rationale"));

	r = cagent_reply(ca, m, "reflect", NULL);
	content = json_deep_copy(json_object_get(m->env, "content"));
	json_object_set_new(r, "content", content);
	if ((outputs = json_object_get(m->env, "outputs")) != NULL)
		json_object_set_new(r, "outputs", json_deep_copy(outputs));

	f = open_memstream(&notes, &len);
	if (*m->text == '\0' && json_is_null(m->data)) {
		fprintf(f, "Review (critic): %s's reply holds nothing to check; "
		    "not accepted.", author);
		cagent_set_confidence(r, 0.3, "nothing to review");
	} else {
		fprintf(f, "Review (critic): checked %s's reply (confidence "
		    "%.2f%s%s).", author, m->score, rationale != NULL ? ": " :
		    "", rationale != NULL ? rationale : "");
		json_array_foreach(risks, i, v) {
			fprintf(f, "\n  - flagged for a person: %s",
			    json_string_value(v));
			cagent_add_risk(r, "%s", json_string_value(v));
		}
		fprintf(f, "\n  Accepted: %zu risk%s carried into the report; "
		    "%zu next action%s kept.", nrisks, nrisks == 1 ? "" : "s",
		    json_array_size(m->actions), json_array_size(m->actions) ==
		    1 ? "" : "s");
		cagent_set_confidence(r, 0.8, "reviewed: the content is present "
		    "and every flagged risk is stated in the report");
	}
	fclose(f);
	len = strlen(m->text);
	while (len > 0 && m->text[len - 1] == '\n')
		len--;
	cagent_set_text(r, "%.*s%s%s", (int)len, m->text, len > 0 ? "\n\n" :
	    "", notes);
	cagent_add_artifact(r, "report", "review", NULL, notes);
	cagent_add_tag(r, "reviewed");
	free(notes);
	return r;
}

/* Answer one request. */
static json_t *
critic_handle(struct cagent *ca, const struct cagent_msg *m, void *arg)
{
	json_t	*r;

	(void)arg;
	if (strcmp(m->intent, "reflect") == 0)
		return critic_reflect(ca, m);
	r = cagent_reply(ca, m, NULL, NULL);
	cagent_set_text(r, "No agent of this workflow handles %s; the critic "
	    "noted the request: %s", m->intent, m->task);
	cagent_set_confidence(r, 0.6, "acknowledged without doing the work");
	return r;
}

/* Serve reflect requests until corral closes our input. */
int
main(void)
{
	struct cagent	*ca;
	int		 rc;

	if ((ca = cagent_open("Critic")) == NULL)
		return 1;
	rc = cagent_run(ca, critic_handle, NULL);
	cagent_close(ca);
	return rc == 0 ? 0 : 1;
}
