/*
 * corral resume: go on with a run that did not end (docs/resume.md).
 *
 * The log is read as replay reads it (replay.c): every request known by
 * its path from the goal.  A run and the resumed runs that continue it
 * (their run_start names it in "resumes") are read as one, so a resume
 * that dies too can be resumed.  For each path the log keeps the trace id
 * it first had, the workflow entry it went to, its answer if one came,
 * and how many times it was sent without one.
 *
 * The new run starts every agent live.  As each request is routed, the
 * route module asks here first: a request whose path the log answered,
 * from the same workflow entry, is answered from the log (on the next
 * loop iteration, as a reply of that agent) and never reaches the agent;
 * one the log knows takes back its trace id; one that was sent before
 * and not answered goes to the agent again with {"corral":{"redelivery":
 * N}}.  The audit lines recorded, redelivery and retrace say which.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

struct resume_pending {
	char				*agent;
	char				*id;
	char				*line;
	TAILQ_ENTRY(resume_pending)	 entry;
};

static TAILQ_HEAD(, resume_pending) resume_q =
    TAILQ_HEAD_INITIALIZER(resume_q);
static struct resume_log	*resume_log;	/* the run resumed */
static struct replay_run	 resume_now;	/* this run, as it goes */
static ev_timer			 resume_w;

/* A member's string, or NULL. */
static const char *
resume_str(json_t *j, const char *key)
{
	return json_string_value(json_object_get(j, key));
}

/* Add what one run (or resumed run) of the log says to the paths. */
static void
resume_merge(struct resume_log *rl, struct replay_run *seg)
{
	json_t		*first = json_object(), *req, *acc;
	const char	*id, *path, *entry;
	json_int_t	 sent;

	/* The id each path was first known by in this run. */
	json_object_foreach(seg->reqs, id, req)
		if ((path = resume_str(req, "path")) != NULL &&
		    json_object_get(first, path) == NULL)
			json_object_set_new(first, path, json_string(id));
	json_object_foreach(seg->paths, path, req) {
		if ((acc = json_object_get(rl->paths, path)) == NULL) {
			acc = json_pack("{s:O?, s:i}", "id",
			    json_object_get(first, path), "sent", 0);
			json_object_set_new(rl->paths, path, acc);
		}
		if (json_object_get(acc, "answer") != NULL)
			continue;
		entry = resume_str(req, "entry");
		if (entry != NULL && json_object_get(req, "answer") != NULL) {
			json_object_set(acc, "answer", json_object_get(req,
			    "answer"));
			json_object_set_new(acc, "entry", json_string(entry));
			rl->answered++;
		} else if (entry != NULL) {
			sent = json_integer_value(json_object_get(acc, "sent"));
			json_object_set_new(acc, "sent", json_integer(sent + 1));
			json_object_set_new(acc, "entry", json_string(entry));
		}
	}
	json_decref(first);
	if (rl->goal == NULL && seg->goal != NULL)
		rl->goal = json_incref(seg->goal);
}

/*
 * A reply line: the session (content.data.session_id) it names is where
 * its agent's conversation is, the last one in the log winning.
 */
static void
resume_session(struct resume_log *rl, json_t *line)
{
	const char	*ev = resume_str(line, "ev"), *agent, *s;
	json_t		*data;

	if (ev == NULL || strcmp(ev, "reply") != 0 ||
	    (agent = resume_str(line, "agent")) == NULL)
		return;
	data = json_object_get(json_object_get(json_object_get(line, "env"),
	    "content"), "data");
	if ((s = resume_str(data, "session_id")) != NULL && *s != '\0' &&
	    strlen(s) < 256)
		json_object_set_new(rl->sessions, agent, json_string(s));
}

/* A line of ours that renamed a request: it is known by both ids. */
static void
resume_alias(struct replay_run *r, json_t *line)
{
	const char	*ev = resume_str(line, "ev"), *was;

	if (ev != NULL && (was = resume_str(line, "was")) != NULL &&
	    (strcmp(ev, "recorded") == 0 || strcmp(ev, "redelivery") == 0 ||
	    strcmp(ev, "retrace") == 0))
		replay_alias(r, was, resume_str(line, "id"));
}

/* A run_start: a new run, or the log's next part of the same. */
static void
resume_run_start(struct resume_log *rl, struct replay_run *seg, json_t *line)
{
	const char	*resumes = resume_str(line, "resumes");
	const char	*level = resume_str(line, "level");

	if (rl->segments > 0) {
		resume_merge(rl, seg);
		rl->elapsed += rl->seg_t;
	}
	if (resumes == NULL || rl->run == NULL ||
	    strcmp(resumes, rl->run) != 0) {
		/* A run of its own: what came before is another run's. */
		json_object_clear(rl->paths);
		json_object_clear(rl->sessions);
		json_decref(rl->goal);
		rl->goal = NULL;
		free(rl->run);
		free(rl->workflow);
		rl->run = resume_str(line, "run") != NULL ?
		    xstrdup(resume_str(line, "run")) : NULL;
		rl->workflow = resume_str(line, "workflow") != NULL ?
		    xstrdup(resume_str(line, "workflow")) : NULL;
		rl->elapsed = 0;
		rl->segments = 0;
		rl->answered = 0;
		rl->decisions = 0;
	}
	if (level != NULL && strcmp(level, "decisions") == 0)
		rl->decisions = 1;
	rl->segments++;
	rl->seg_t = 0;
	replay_run_free(seg);
	replay_run_init(seg);
}

/* Free what reading the log took. */
void
resume_free(struct resume_log *rl)
{
	json_decref(rl->paths);
	json_decref(rl->given);
	json_decref(rl->sessions);
	json_decref(rl->goal);
	free(rl->run);
	free(rl->workflow);
	memset(rl, 0, sizeof *rl);
}

/*
 * Read the log at path: its last run with the resumed runs that continue
 * it.  What the reader left out (lines that are not JSON, a torn last
 * line) is said on f.  Returns 0, or -1 with the reason in why.
 */
int
resume_read(struct resume_log *rl, const char *path, FILE *f, char *why,
    size_t len)
{
	struct auditlog_reader	 r;
	struct replay_run	 seg;
	json_t			*j, *t;
	const char		*ev;
	int			 rc;

	memset(rl, 0, sizeof *rl);
	rl->paths = json_object();
	rl->given = json_object();
	rl->sessions = json_object();
	if (auditlog_read_open(&r, path) != 0) {
		snprintf(why, len, "%s: %s", path, strerror(errno));
		return -1;
	}
	replay_run_init(&seg);
	while ((rc = auditlog_read_next(&r, &j)) == 1) {
		ev = resume_str(j, "ev");
		if (ev != NULL && strcmp(ev, "run_start") == 0)
			resume_run_start(rl, &seg, j);
		else if (rl->segments > 0) {
			resume_alias(&seg, j);
			resume_session(rl, j);
			replay_feed(&seg, j);
			if (json_is_number(t = json_object_get(j, "t")) &&
			    json_number_value(t) > rl->seg_t)
				rl->seg_t = json_number_value(t);
		}
		json_decref(j);
	}
	if (rc == 0 && rl->segments > 0) {
		resume_merge(rl, &seg);
		rl->elapsed += rl->seg_t;
	}
	replay_run_free(&seg);
	rl->ended = r.ended;
	auditlog_read_report(&r, f);
	if (rc < 0)
		snprintf(why, len, "%s", r.why);
	auditlog_read_close(&r);
	if (rc < 0)
		return -1;
	if (rl->segments == 0) {
		snprintf(why, len, "%s: no run_start: not an audit log of a run",
		    path);
		return -1;
	}
	if (rl->decisions) {
		snprintf(why, len, "%s: the run was recorded with --log-level "
		    "decisions, which leaves out the replies a resume answers "
		    "with", path);
		return -1;
	}
	if (rl->goal == NULL) {
		snprintf(why, len, "%s: the last run has no goal line: only a "
		    "run of corral run can be resumed", path);
		return -1;
	}
	if (rl->ended) {
		snprintf(why, len, "%s: the last run ended (run_end): there is "
		    "nothing to resume", path);
		return -1;
	}
	return 0;
}

/* This run's audit lines, as they are queued. */
static void
resume_line(const char *line, size_t len)
{
	json_t	*j;

	if ((j = json_loadb(line, len, 0, NULL)) == NULL)
		return;
	resume_alias(&resume_now, j);
	replay_feed(&resume_now, j);
	json_decref(j);
}

/* Give the answers taken from the log, in the order they were asked. */
static void
resume_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct resume_pending	*p;
	struct agent		*a;

	while ((p = TAILQ_FIRST(&resume_q)) != NULL) {
		TAILQ_REMOVE(&resume_q, p, entry);
		if ((a = agent_find(p->agent)) == NULL ||
		    engine_resume_answer(a, p->id, 0, p->line,
		    strlen(p->line)) != 0)
			log_info("resume: request %s was given up before its "
			    "answer from the log came", p->id);
		free(p->agent);
		free(p->id);
		free(p->line);
		free(p);
	}
}

/*
 * The recorded answer to m as agent a's reply to it (a new string), or
 * NULL when it is not a valid envelope (a log edited by hand): then the
 * agent is asked.
 */
static char *
resume_reply(struct msg *m, json_t *answer, const char *path)
{
	struct env		 e;
	struct env_error	 err;
	struct jscan		*js;
	json_t			*env = json_deep_copy(answer), *trace;
	char			*line;
	int			 bad;

	if (!json_is_object(trace = json_object_get(env, "trace"))) {
		trace = json_object();
		json_object_set_new(env, "trace", trace);
	}
	json_object_set_new(trace, "parents", json_pack("[s]", m->id));
	line = jsonw_dumps(env, CORRAL_JSON_FLAGS);
	json_decref(env);
	if (line == NULL) {
		/* The log's answer cannot be written: the agent is asked. */
		log_warnx("resume: %s: the recorded answer cannot be written "
		    "back; asking the agent", path);
		return NULL;
	}
	js = jscan_take();
	bad = jscan_run(js, line, strlen(line)) != 0 ||
	    envelope_check(js, line, strlen(line), &e, &err) != 0;
	if (bad)
		log_warnx("resume: the log's answer to %s is not a valid "
		    "envelope (%s): the request goes to its agent", path,
		    js->err != NULL ? js->err : err.msg);
	jscan_give(js);
	if (bad) {
		free(line);
		return NULL;
	}
	return line;
}

/* Queue line, agent a's answer to m, for the next loop iteration. */
static void
resume_queue(struct msg *m, struct agent *a, char *line)
{
	struct resume_pending	*p;

	p = xcalloc(1, sizeof *p);
	p->agent = xstrdup(a->id);
	p->id = xstrdup(m->id);
	p->line = line;
	TAILQ_INSERT_TAIL(&resume_q, p, entry);
	if (!ev_is_active(&resume_w)) {
		ev_timer_init(&resume_w, resume_cb, 0, 0);
		ev_timer_start(LOOP, &resume_w);
	}
}

/*
 * The route module's question before m goes to a: answer it from the
 * log (returns 1), or let it go, with its recorded trace id and, if it
 * was sent before, its redelivery count (returns 0).
 */
static int
resume_route(struct msg *m, struct agent *a)
{
	json_t		*rec, *answer, *f;
	const char	*path, *entry, *id;
	char		 was[CORRAL_ID_MAX], *line = NULL;
	unsigned int	 sent;
	int		 answered;

	if (resume_log == NULL || (path = replay_path_of(&resume_now,
	    m->id)) == NULL || (rec = json_object_get(resume_log->paths,
	    path)) == NULL || json_object_get(rec, "done") != NULL)
		return 0;
	/* A retry or handoff of it later is this run's own. */
	json_object_set_new(rec, "done", json_true());
	entry = resume_str(rec, "entry");
	answer = json_object_get(rec, "answer");
	answered = answer != NULL && entry != NULL &&
	    strcmp(entry, a->conf->name) == 0;
	strlcpy(was, m->id, sizeof was);
	/* Each first id once: a log that gives two paths one id is wrong. */
	if ((id = resume_str(rec, "id")) != NULL &&
	    json_object_get(resume_log->given, id) == NULL) {
		json_object_set_new(resume_log->given, id, json_true());
		(void)engine_resume_retrace(m, id, 0);
	}
	if (answered && (line = resume_reply(m, answer, path)) == NULL)
		answered = 0;
	sent = answered ? 0 : (unsigned int)json_integer_value(
	    json_object_get(rec, "sent"));
	if (sent > 0)
		(void)engine_resume_retrace(m, NULL, sent);
	f = json_pack("{s:s, s:s}", "id", m->id, "path", path);
	if (strcmp(was, m->id) != 0)
		json_object_set_new(f, "was", json_string(was));
	if (answered) {
		json_object_set_new(f, "reply", json_string(resume_str(
		    json_object_get(answer, "trace"), "id") != NULL ?
		    resume_str(json_object_get(answer, "trace"), "id") : "?"));
		auditlog_json("recorded", a->id, f);
		resume_queue(m, a, line);
		return 1;
	}
	if (sent > 0) {
		json_object_set_new(f, "redelivery", json_integer(sent));
		log_info("resume: request %s (%s) goes to %s again: it was "
		    "sent %u time%s before and not answered", m->id, path,
		    a->id, sent, sent == 1 ? "" : "s");
		auditlog_json("redelivery", a->id, f);
	} else if (json_object_get(f, "was") != NULL)
		auditlog_json("retrace", a->id, f);
	else
		json_decref(f);
	return 0;
}

/*
 * Before the first request goes to agent a, its adapter continues the
 * session a's replies in the log named last (docs/resume.md), once.  An
 * adapter that keeps no one conversation (or not yet) is asked again
 * with its next request.
 */
static void
resume_carry(struct agent *a)
{
	const char	*s;

	if ((s = resume_str(resume_log->sessions, a->id)) == NULL ||
	    adapter_resume_session(a, s) != 0)
		return;
	auditlog_json("resume_session", a->id, json_pack("{s:s}", "session",
	    s));
	json_object_del(resume_log->sessions, a->id);
}

/* The route module's question: resume_route's, after resume_carry. */
static int
resume_answer(struct msg *m, struct agent *a)
{
	if (resume_log == NULL)
		return 0;
	if (resume_route(m, a))
		return 1;
	resume_carry(a);
	return 0;
}

/* Answer this run's requests from rl as they are routed. */
void
resume_start(struct resume_log *rl)
{
	resume_log = rl;
	replay_run_init(&resume_now);
	auditlog_on_line(resume_line);
	route_on_answer(resume_answer);
}

/* The run is over: forget what is pending and stop asking. */
void
resume_stop(void)
{
	struct resume_pending	*p;

	route_on_answer(NULL);
	auditlog_on_line(NULL);
	if (ev_is_active(&resume_w))
		ev_timer_stop(LOOP, &resume_w);
	while ((p = TAILQ_FIRST(&resume_q)) != NULL) {
		TAILQ_REMOVE(&resume_q, p, entry);
		free(p->agent);
		free(p->id);
		free(p->line);
		free(p);
	}
	replay_run_free(&resume_now);
	resume_log = NULL;
}
