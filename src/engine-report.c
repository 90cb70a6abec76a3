/*
 * Error reports: what an agent says went wrong with a request it works on
 * without giving up on it (_corral/report; an AgentMessage ERROR_REPORT of
 * low or medium severity).  A report is a typed error: its type, its
 * severity (low, medium, high, critical), its message, who made it.
 *
 * Reports are kept on the request and on its job, at most ENGINE_REPORTS
 * each (the newest), and carried by what comes of them: the request's
 * outcome in the audit log (risk), the result a client or an agent gets
 * of a request it made, and the job's result, whose corral member then
 * says the risk in words (corral.risk) and lists the reports
 * (corral.errors).  Reports are rare: nothing here is on the path of a
 * request that has none.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "engine-int.h"

#define ENGINE_REPORTS	16	/* reports kept per request and per job */
#define ENGINE_REPORT_MSG 1024	/* bytes of a report's message kept */

static const char *const engine_severities[] = {
	"low", "medium", "high", "critical"
};

/* A severity's rank (0 low .. 3 critical), or -1 for no severity. */
int
engine_severity(const char *s)
{
	size_t	i;

	for (i = 0; s != NULL && i < sizeof engine_severities /
	    sizeof engine_severities[0]; i++)
		if (strcmp(s, engine_severities[i]) == 0)
			return (int)i;
	return -1;
}

/* Add a report to a list (made on first use), the newest kept. */
static void
engine_report_add(json_t **list, json_t *r)
{
	if (*list == NULL)
		*list = json_array();
	if (json_array_size(*list) >= ENGINE_REPORTS)
		json_array_remove(*list, 0);
	json_array_append(*list, r);
}

/*
 * Agent a reports an error of type and severity (engine_severity's words)
 * about request m, which it works on: kept for the request's outcome and
 * its job's result, and written to the audit log.
 */
void
engine_report(struct agent *a, struct msg *m, const char *type,
    const char *severity, const char *message, const char *error_id)
{
	json_t	*r;
	char	 esc[256];

	r = json_pack("{s:o, s:s, s:o, s:s, s:I}", "error_type",
	    jsonw_text(type, strlen(type)), "severity", severity, "message",
	    jsonw_text(message, util_utf8_cut(message, strlen(message),
	    ENGINE_REPORT_MSG)), "agent", a->id, "at",
	    (json_int_t)event_now_ms());
	if (error_id != NULL)
		json_object_set_new(r, "error_id", jsonw_text(error_id,
		    strlen(error_id)));
	engine_report_add(&m->reports, r);
	if (m->job != NULL)
		engine_report_add(&m->job->reports, r);
	json_decref(r);
	auditlog_event("error_report", a->id, m->id, "error_type", type,
	    "severity", severity, "message", message, NULL);
	log_escape(esc, sizeof esc, message, strlen(message));
	log_info("agent %s: %s error on request %s: %s", a->id, severity,
	    m->id, esc);
}

/*
 * The risk of reports, in words: "2 error reports, the worst high:
 * RATE_LIMIT (high) by coder: throttled; ..." (buf, always terminated).
 * NULL when there is none.
 */
const char *
engine_report_risk(json_t *reports, char *buf, size_t len)
{
	json_t		*r;
	const char	*worst = NULL, *sev;
	size_t		 i, n;

	if (json_array_size(reports) == 0)
		return NULL;
	json_array_foreach(reports, i, r) {
		sev = json_string_value(json_object_get(r, "severity"));
		if (worst == NULL || engine_severity(sev) >
		    engine_severity(worst))
			worst = sev;
	}
	snprintf(buf, len, "%zu error report%s, the worst %s:",
	    json_array_size(reports), json_array_size(reports) > 1 ? "s" : "",
	    worst);
	json_array_foreach(reports, i, r) {
		n = strlen(buf);
		snprintf(buf + n, len - n, "%s %s (%s) by %s: %s", i > 0 ? ";" :
		    "", json_string_value(json_object_get(r, "error_type")),
		    json_string_value(json_object_get(r, "severity")),
		    json_string_value(json_object_get(r, "agent")),
		    json_string_value(json_object_get(r, "message")));
	}
	return buf;
}

/*
 * An answer (a request's result, a job's result) carrying reports: its
 * corral member gets risk (added to a risk it had) and errors.  Returns
 * the new line (free it), or NULL when the answer is no envelope.
 */
char *
engine_report_mark(json_t *reports, const char *line, size_t len,
    size_t *outlen)
{
	struct jscan		*js = jscan_take();
	struct env		 env;
	struct env_error	 err;
	struct jsonw		 w;
	char			 risk[2048], *text, *errors, *one, *two = NULL;
	const char		*old;
	size_t			 tlen, olen, n;
	int			 v;

	if (jscan_run(js, line, len) != 0 ||
	    envelope_check(js, line, len, &env, &err) != 0) {
		jscan_give(js);
		return NULL;
	}
	risk[0] = '\0';
	if ((v = jscan_get(js, line, env.corral, "risk")) >= 0 &&
	    js->tok[v].type == JT_STRING) {
		/* corral's own note (not reflected ...) stays first. */
		old = jscan_text(js, line, v, &olen);
		snprintf(risk, sizeof risk, "%.*s; ", (int)(olen > 512 ? 512 :
		    olen), old);
	}
	n = strlen(risk);
	(void)engine_report_risk(reports, risk + n, sizeof risk - n);
	jsonw_init(&w);
	jsonw_str(&w, risk);
	text = jsonw_finish(&w, &tlen);
	errors = jsonw_dumps(reports, CORRAL_JSON_FLAGS);
	one = envelope_corral_set(js, line, len, &env, "risk", text, &n);
	if (errors != NULL && jscan_run(js, one, n) == 0 &&
	    envelope_check(js, one, n, &env, &err) == 0)
		two = envelope_corral_set(js, one, n, &env, "errors", errors,
		    outlen);
	if (two == NULL)
		*outlen = n;
	jscan_give(js);
	free(text);
	free(errors);
	if (two == NULL)
		return one;
	free(one);
	return two;
}
