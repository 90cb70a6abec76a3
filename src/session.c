/*
 * Sessions: conversations that span several agents, tied together by the
 * session id messages carry (an envelope's "session" member, which a
 * bus message's body.context.sessionId and an AgentMessage's
 * payload.context.session_id become).  corral keeps, for each, who took
 * part, the decisions and artifacts it saw go by, and a bounded history
 * of its messages, and answers MAP's map/session/list, load and close.
 * The run itself is a session too: the one map/connect names.
 *
 * What is recorded are the messages that name a session, whatever path
 * they take: requests between agents and clients' requests, their
 * results, messages to agents and topics (through the control plane), and
 * a workflow's own requests and replies (the engine's session hook): a
 * job whose first envelope, or a reply in it, names a session belongs to
 * it, and so does every request and reply of the job.  Bounded:
 * SESSION_MAX sessions (the least recently active closed one, else the
 * least recently active, is forgotten), and
 * per session SESSION_LIST participants, decisions and artifacts and
 * SESSION_HISTORY history entries.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

#define SESSION_MAX	256	/* sessions kept */
#define SESSION_LIST	64	/* participants, decisions, artifacts */
#define SESSION_HISTORY	256	/* history entries, the newest */
#define SESSION_ID_MAX	128	/* bytes in a session id */

struct session {
	char			*id;
	char			*initiator;
	uint64_t		 created_ms;
	uint64_t		 last_ms;
	uint64_t		 closed_ms;
	uint64_t		 messages;
	json_t			*participants;
	json_t			*decisions;
	json_t			*artifacts;
	json_t			*history;
	TAILQ_ENTRY(session)	 entry;
};

static void	session_record(const char *, json_t *, const char *,
		    const char *, const char *, const char *);

static TAILQ_HEAD(, session)	 session_list =
				    TAILQ_HEAD_INITIALIZER(session_list);
static unsigned int		 session_count;
static uint64_t			 session_run_ms;

/* Free one session. */
static void
session_free(struct session *s)
{
	TAILQ_REMOVE(&session_list, s, entry);
	session_count--;
	free(s->id);
	free(s->initiator);
	json_decref(s->participants);
	json_decref(s->decisions);
	json_decref(s->artifacts);
	json_decref(s->history);
	free(s);
}

/* Forget every session; the run's began at started_ms. */
void
session_init(uint64_t started_ms)
{
	while (!TAILQ_EMPTY(&session_list))
		session_free(TAILQ_FIRST(&session_list));
	session_run_ms = started_ms;
}

/* Find a session by id. */
static struct session *
session_find(const char *id)
{
	struct session	*s;

	TAILQ_FOREACH(s, &session_list, entry)
		if (strcmp(s->id, id) == 0)
			return s;
	return NULL;
}

/* Make room for one more session: forget a closed one, else the oldest. */
static void
session_evict(void)
{
	struct session	*s, *victim = NULL;

	TAILQ_FOREACH(s, &session_list, entry)
		if (s->closed_ms != 0 && (victim == NULL ||
		    s->last_ms < victim->last_ms))
			victim = s;
	if (victim == NULL)
		TAILQ_FOREACH(s, &session_list, entry)
			if (victim == NULL || s->last_ms < victim->last_ms)
				victim = s;
	if (victim != NULL) {
		log_debug("session %s: forgotten (%d sessions kept)",
		    victim->id, SESSION_MAX);
		session_free(victim);
	}
}

/* Add a string to a bounded list of distinct strings. */
static void
session_add(json_t *list, const char *v)
{
	json_t	*x;
	size_t	 i;

	if (v == NULL || *v == '\0' || json_array_size(list) >= SESSION_LIST)
		return;
	json_array_foreach(list, i, x)
		if (strcmp(json_string_value(x), v) == 0)
			return;
	json_array_append_new(list, json_string(v));
}

/*
 * The session of an id, made when new (a session that was closed opens
 * again when it is used).  NULL for an id that is not one.
 */
static struct session *
session_get(const char *id, const char *who)
{
	struct session	*s;
	size_t		 len = strlen(id), bad;

	if (len == 0 || len > SESSION_ID_MAX || !util_utf8_valid(id, len,
	    &bad))
		return NULL;
	if ((s = session_find(id)) != NULL) {
		s->closed_ms = 0;
		return s;
	}
	if (session_count >= SESSION_MAX)
		session_evict();
	s = xcalloc(1, sizeof *s);
	s->id = xstrdup(id);
	s->initiator = xstrdup(who);
	s->created_ms = event_now_ms();
	s->participants = json_array();
	s->decisions = json_array();
	s->artifacts = json_array();
	s->history = json_array();
	TAILQ_INSERT_TAIL(&session_list, s, entry);
	session_count++;
	auditlog_event("session_new", who, NULL, "session", id, NULL);
	return s;
}

/* The decisions an envelope carries along its session's context. */
static void
session_decisions(struct session *s, json_t *env)
{
	json_t	*d, *x;
	size_t	 i;

	d = json_object_get(json_object_get(json_object_get(env, "bus"),
	    "context"), "previousDecisions");
	if (d == NULL)
		d = json_object_get(json_object_get(json_object_get(
		    json_object_get(env, "content"), "data"), "context"),
		    "decisions");
	json_array_foreach(d, i, x)
		session_add(s->decisions, json_string_value(x));
	json_array_foreach(json_object_get(json_object_get(env, "outputs"),
	    "artifacts"), i, x)
		session_add(s->artifacts, json_string_value(json_object_get(x,
		    json_object_get(x, "path") != NULL ? "path" : "name")));
}

/*
 * An envelope went from one participant to others (to: an id, a topic,
 * NULL when unknown): if it names a session, the session records it.
 * what is request, result or message; id the message's.
 */
void
session_note(json_t *env, const char *what, const char *id,
    const char *from, const char *to)
{
	const char	*sid = json_string_value(json_object_get(env, "session"));

	if (sid != NULL)
		session_record(sid, env, what, id, from, to);
}

/*
 * A message of session sid went by, the envelope env (what it is: request,
 * result or message; id the message's).
 */
static void
session_record(const char *sid, json_t *env, const char *what,
    const char *id, const char *from, const char *to)
{
	struct session	*s;

	if ((s = session_get(sid, from)) == NULL)
		return;
	s->last_ms = event_now_ms();
	s->messages++;
	session_add(s->participants, from);
	if (to != NULL)
		session_add(s->participants, to);
	session_decisions(s, env);
	if (json_array_size(s->history) >= SESSION_HISTORY)
		json_array_remove(s->history, 0);
	json_array_append_new(s->history, json_pack("{s:I, s:s, s:s, s:s*, "
	    "s:s*, s:O*, s:O*}", "at", (json_int_t)s->last_ms, "kind", what,
	    "from", from, "to", to, "id", id, "intent", json_object_get(env,
	    "intent"), "task", json_object_get(env, "task")));
}

/* The session of a line, if the line is an envelope that names one. */
void
session_note_line(const char *line, size_t len, const char *what,
    const char *id, const char *from, const char *to)
{
	json_t	*env;

	/* Cheap first: most lines name no session. */
	if (line == NULL || memmem(line, len, "\"session\"", 9) == NULL ||
	    (env = json_loadb(line, len, 0, NULL)) == NULL)
		return;
	session_note(env, what, id, from, to);
	json_decref(env);
}

/*
 * A message of session sid went by inside a job (the engine's session
 * hook): a request of a job that belongs to the session, or a reply of
 * one, or a reply that names the session itself.  What a workflow's
 * requests routed by intent say is recorded as the control plane's is.
 */
void
session_engine(const char *sid, const char *what, const struct msg *m,
    const char *from, const char *line, size_t len)
{
	json_t	*env;

	if ((env = json_loadb(line, len, 0, NULL)) == NULL)
		env = json_object();
	session_record(sid, env, what, m->id, from, NULL);
	json_decref(env);
}

/* MAP's SessionInfo of a session. */
static json_t *
session_info(struct session *s)
{
	json_t	*o = json_pack("{s:s, s:I, s:I}", "id", s->id, "createdAt",
		    (json_int_t)s->created_ms, "lastActiveAt",
		    (json_int_t)s->last_ms);

	if (s->closed_ms != 0)
		json_object_set_new(o, "closedAt",
		    json_integer((json_int_t)s->closed_ms));
	return o;
}

/* What corral keeps of a session, for load (a new reference). */
static json_t *
session_detail(struct session *s)
{
	return json_pack("{s:s, s:I, s:O, s:O, s:O, s:O}", "initiator",
	    s->initiator, "messages", (json_int_t)s->messages,
	    "participants", s->participants, "decisions", s->decisions,
	    "artifacts", s->artifacts, "history", s->history);
}

/* The run's own session, as MAP's SessionInfo. */
static json_t *
session_run_info(void)
{
	return json_pack("{s:s, s:I, s:I}", "id", protocol_run_id(),
	    "createdAt", (json_int_t)session_run_ms, "lastActiveAt",
	    (json_int_t)event_now_ms());
}

/* map/session/list: the run's session, then the others, oldest first. */
void
session_list_request(struct peer *p, json_t *id, json_t *params)
{
	struct session	*s;
	json_t		*list = json_array(), *meta = json_object();

	json_array_append_new(list, session_run_info());
	TAILQ_FOREACH(s, &session_list, entry) {
		json_array_append_new(list, session_info(s));
		json_object_set_new(meta, s->id, json_pack("{s:O, s:I}",
		    "participants", s->participants, "messages",
		    (json_int_t)s->messages));
	}
	rpc_reply(p, id, json_pack("{s:o, s:{s:{s:o}}}", "sessions", list,
	    "_meta", "corral", "sessions", meta));
}

/* The session params.sessionId names (NULL: answered with an error). */
static struct session *
session_param(struct peer *p, json_t *id, json_t *params, int *run)
{
	const char	*sid = json_string_value(json_object_get(params,
			    "sessionId"));
	struct session	*s;

	*run = 0;
	if (sid == NULL || strcmp(sid, protocol_run_id()) == 0) {
		*run = 1;
		return NULL;
	}
	if ((s = session_find(sid)) == NULL)
		rpc_error(p, id, CORRAL_E_PARAMS, "no such session", NULL);
	return s;
}

/* map/session/load: a session and its history (in _meta.corral). */
void
session_load_request(struct peer *p, json_t *id, json_t *params)
{
	struct session	*s;
	int		 run;

	if ((s = session_param(p, id, params, &run)) == NULL && !run)
		return;
	if (run) {
		rpc_reply(p, id, json_pack("{s:s, s:b, s:{s:{s:b}}}",
		    "sessionId", protocol_run_id(), "restored", 1, "_meta",
		    "corral", "run", 1));
		return;
	}
	rpc_reply(p, id, json_pack("{s:s, s:b, s:{s:o}}", "sessionId", s->id,
	    "restored", 1, "_meta", "corral", session_detail(s)));
}

/*
 * map/session/close: a session is marked closed (a later message that
 * names it opens it again).  The run's session closes when the run ends.
 */
void
session_close_request(struct peer *p, json_t *id, json_t *params)
{
	struct session	*s;
	int		 run;

	if ((s = session_param(p, id, params, &run)) == NULL && !run)
		return;
	if (run) {
		rpc_reply(p, id, json_pack("{s:o}", "session",
		    session_run_info()));
		return;
	}
	if (s->closed_ms == 0) {
		s->closed_ms = event_now_ms();
		auditlog_event("session_closed", p->name, NULL, "session",
		    s->id, NULL);
	}
	rpc_reply(p, id, json_pack("{s:o}", "session", session_info(s)));
}
