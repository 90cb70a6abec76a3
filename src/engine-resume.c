/*
 * The engine's part in corral resume (docs/resume.md): a request the
 * recording knows takes back its recorded trace id, one sent before the
 * crash is marked {"corral":{"redelivery":N}}, and one the recording
 * answered is answered from it as a reply of the agent it was routed to.
 *
 * Off the hot path (a resumed run only): the envelope is rewritten with
 * jansson.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "engine-int.h"

/*
 * Give request m the trace id it had in the recording (id, or NULL to
 * keep its own) and, when redelivery > 0, the number of times it was
 * sent before.  Only requests no other module knows by id are renamed
 * (next actions, reflections); the others keep theirs.  Returns nonzero
 * if m now has id.
 */
int
engine_resume_retrace(struct msg *m, const char *id, unsigned int redelivery)
{
	json_t	*env, *trace, *corral;
	char	*line;
	int	 rename;

	rename = id != NULL && strlen(id) < sizeof m->id &&
	    strcmp(id, m->id) != 0 && (m->kind == MSG_ACTION ||
	    m->kind == MSG_REFLECT);
	if (!rename && redelivery == 0)
		return id != NULL && strcmp(id, m->id) == 0;
	if ((env = json_loadb(m->line, m->len, 0, NULL)) == NULL ||
	    !json_is_object(env)) {
		json_decref(env);
		return 0;
	}
	if (rename && json_is_object(trace = json_object_get(env, "trace")))
		json_object_set_new(trace, "id", json_string(id));
	else
		rename = 0;
	if (redelivery > 0) {
		if (!json_is_object(corral = json_object_get(env, "corral"))) {
			corral = json_object();
			json_object_set_new(env, "corral", corral);
		}
		json_object_set_new(corral, "redelivery",
		    json_integer(redelivery));
	}
	line = jsonw_dumps(env, CORRAL_JSON_FLAGS);
	json_decref(env);
	if (line == NULL)
		return 0;	/* it goes as it is, under its new id */
	engine_msg_line(m, line, strlen(line));
	if (rename) {
		strlcpy(m->id, id, sizeof m->id);
		m->idq = 0;	/* measured again where it is written */
	}
	return rename || strcmp(id != NULL ? id : "", m->id) == 0;
}

/*
 * Answer the request id (on this attempt) that agent a holds with line,
 * a reply envelope from the recording.  Returns -1 when a no longer
 * holds it (it was cancelled, or timed out, meanwhile).
 */
int
engine_resume_answer(struct agent *a, const char *id, unsigned int attempts,
    const char *line, size_t len)
{
	struct msg	*m;

	if ((m = engine_inflight_find(a, id, attempts)) == NULL)
		return -1;
	engine_adapter_reply(a, m, line, len);
	return 0;
}
