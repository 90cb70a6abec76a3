/*
 * corral replay's bookkeeping: a run's requests by the path that led to
 * them, read from audit log lines, the recording's and the replay's own
 * alike, and the differences between two runs (docs/replay.md).
 *
 * A request's path is where it stands in its job, not its trace id
 * (ids carry the run's random prefix and shift as soon as one request
 * more or less is made): the goal's intent, then for each request that
 * followed from a reply, the agent (its workflow entry) that replied and
 * the new request's intent with its place among the requests of the
 * same intent that reply led to:
 *
 *   plan#1@planner/execute#2@executor/reflect#1
 *
 * is the first reflection on the second execute request that the
 * planner's answer to the goal led to, as the executor answered it.  The
 * request's own agent is not in its path: which agent serves it is the
 * decision a replay checks.
 */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

/* Start an empty run. */
void
replay_run_init(struct replay_run *r)
{
	memset(r, 0, sizeof *r);
	r->reqs = json_object();
	r->paths = json_object();
	r->replies = json_object();
	r->reply_req = json_object();
	r->agents = json_object();
	r->siblings = json_object();
	r->jobs = json_object();
	r->order = json_array();
	r->job_order = json_array();
	r->missing = json_array();
}

/* Free what a run holds. */
void
replay_run_free(struct replay_run *r)
{
	json_decref(r->reqs);
	json_decref(r->paths);
	json_decref(r->replies);
	json_decref(r->reply_req);
	json_decref(r->agents);
	json_decref(r->siblings);
	json_decref(r->jobs);
	json_decref(r->order);
	json_decref(r->job_order);
	json_decref(r->missing);
	json_decref(r->goal);
	free(r->workflow);
	memset(r, 0, sizeof *r);
}

/* A member's string, or NULL. */
static const char *
replay_str(json_t *j, const char *key)
{
	return json_string_value(json_object_get(j, key));
}

/* The workflow entry of an agent instance (echo.2 is of entry echo). */
static const char *
replay_entry(struct replay_run *r, const char *agent)
{
	const char	*e;

	if (agent == NULL)
		return NULL;
	e = replay_str(r->agents, agent);
	return e != NULL ? e : agent;
}

/*
 * Where a new request stands: after the reply or request its trace
 * names as parent.  Returns its path (a new string).
 */
static char *
replay_path(struct replay_run *r, json_t *env, const char *intent)
{
	json_t		*parents, *p, *req = NULL, *n;
	const char	*pid, *rid, *base = "";
	char		*prefix, *key, *path;
	size_t		 i;
	json_int_t	 k;

	parents = json_object_get(json_object_get(env, "trace"), "parents");
	json_array_foreach(parents, i, p) {
		if ((pid = json_string_value(p)) == NULL)
			continue;
		if ((rid = replay_str(r->reply_req, pid)) != NULL)
			pid = rid;
		if ((req = json_object_get(r->reqs, pid)) != NULL)
			break;
	}
	if (req != NULL)
		xasprintf(&prefix, "%s@%s/", replay_str(req, "path"),
		    replay_str(req, "entry") != NULL ? replay_str(req,
		    "entry") : "?");
	else
		prefix = xstrdup(base);
	xasprintf(&key, "%s%s", prefix, intent);
	n = json_object_get(r->siblings, key);
	k = json_integer_value(n) + 1;
	json_object_set_new(r->siblings, key, json_integer(k));
	xasprintf(&path, "%s#%lld", key, (long long)k);
	free(prefix);
	free(key);
	return path;
}

/* A request line (goal, env, task ...): a new request and its path. */
static void
replay_request(struct replay_run *r, json_t *line, const char *ev,
    const char *id)
{
	json_t		*env = json_object_get(line, "env"), *req;
	const char	*intent;
	char		*path;

	if (id == NULL || !json_is_object(env) ||
	    json_object_get(r->reqs, id) != NULL)
		return;
	if ((intent = replay_str(env, "intent")) == NULL)
		intent = "?";
	path = replay_path(r, env, intent);
	req = json_pack("{s:s, s:s, s:s}", "path", path, "intent", intent,
	    "kind", ev);
	json_object_set(r->reqs, id, req);
	if (json_object_get(r->paths, path) == NULL) {
		json_object_set(r->paths, path, req);
		json_array_append_new(r->order, json_string(path));
	}
	if (strcmp(ev, "goal") == 0 && r->goal == NULL)
		r->goal = json_incref(env);
	json_decref(req);
	free(path);
}

/* An outcome line: the request's outcome, and its answer if it replied. */
static void
replay_outcome(struct replay_run *r, json_t *line, json_t *req)
{
	const char	*o = replay_str(line, "outcome"), *reply, *code;
	char		*s;

	if (o == NULL)
		return;
	code = replay_str(line, "code");
	if (code != NULL)
		xasprintf(&s, "%s %s", o, code);
	else
		s = xstrdup(o);
	json_object_set_new(req, "outcome", json_string(s));
	free(s);
	if ((reply = replay_str(line, "reply")) != NULL) {
		json_object_set_new(r->reply_req, reply, json_string(
		    replay_str(line, "id")));
		json_object_set(req, "answer", json_object_get(r->replies,
		    reply));
		json_object_del(r->replies, reply);
	}
	r->last = replay_str(req, "path");
}

/* A job ended: its status, and the request whose outcome ended it. */
static void
replay_job_end(struct replay_run *r, json_t *line, const char *id)
{
	json_t	*req = json_object_get(r->reqs, id), *job;

	if (req == NULL)
		return;
	job = json_pack("{s:s?, s:s?}", "status", replay_str(line, "status"),
	    "last", r->last);
	if (json_object_get(r->jobs, replay_str(req, "path")) == NULL)
		json_array_append_new(r->job_order, json_string(replay_str(req,
		    "path")));
	json_object_set_new(r->jobs, replay_str(req, "path"), job);
}

/*
 * Read one audit log line into the run.  A run_start starts the run
 * afresh: a file of several runs is read as its last.
 */
void
replay_feed(struct replay_run *r, json_t *line)
{
	const char	*ev = replay_str(line, "ev"), *id, *agent, *name;
	json_t		*req, *env, *parents;

	if (ev == NULL)
		return;
	id = replay_str(line, "id");
	agent = replay_str(line, "agent");
	if (strcmp(ev, "run_start") == 0) {
		replay_run_free(r);
		replay_run_init(r);
		if ((name = replay_str(line, "workflow")) != NULL)
			r->workflow = xstrdup(name);
	} else if (strcmp(ev, "spawn") == 0 && agent != NULL &&
	    (name = replay_str(line, "name")) != NULL)
		json_object_set_new(r->agents, agent, json_string(name));
	else if (strcmp(ev, "goal") == 0 || strcmp(ev, "input") == 0 ||
	    strcmp(ev, "env") == 0 || strcmp(ev, "request") == 0 ||
	    strcmp(ev, "task") == 0)
		replay_request(r, line, ev, id);
	else if (strcmp(ev, "route") == 0 && id != NULL &&
	    (req = json_object_get(r->reqs, id)) != NULL &&
	    json_object_get(req, "entry") == NULL)
		/* The first: later ones are handoffs and retries. */
		json_object_set_new(req, "entry", json_string(replay_entry(r,
		    agent)));
	else if (strcmp(ev, "reply") == 0 && id != NULL &&
	    json_is_object(env = json_object_get(line, "env"))) {
		json_object_set(r->replies, id, env);
		parents = json_object_get(json_object_get(env, "trace"),
		    "parents");
		if (json_is_string(json_array_get(parents, 0)))
			json_object_set(r->reply_req, id,
			    json_array_get(parents, 0));
	} else if (strcmp(ev, "outcome") == 0 && id != NULL &&
	    (req = json_object_get(r->reqs, id)) != NULL)
		replay_outcome(r, line, req);
	else if (strcmp(ev, "job_end") == 0 && id != NULL)
		replay_job_end(r, line, id);
}

/* Read one line as the audit log writes it (the replay's own run). */
void
replay_feed_line(struct replay_run *r, const char *line, size_t len)
{
	json_t	*j;

	if ((j = json_loadb(line, len, 0, NULL)) == NULL)
		return;
	replay_feed(r, j);
	json_decref(j);
}

/* The path of a request of the run, by its id; NULL when unknown. */
const char *
replay_path_of(struct replay_run *r, const char *id)
{
	return replay_str(json_object_get(r->reqs, id), "path");
}

/*
 * The request known as id is known as alias too (corral resume gave it
 * back its recorded trace id): later lines name it by either.
 */
void
replay_alias(struct replay_run *r, const char *id, const char *alias)
{
	json_t	*req;

	if (id != NULL && alias != NULL && (req = json_object_get(r->reqs,
	    id)) != NULL && json_object_get(r->reqs, alias) == NULL)
		json_object_set(r->reqs, alias, req);
}

/*
 * The answer recorded for the request at path when entry serves it (a
 * borrowed reference), or NULL: none was recorded, or another agent
 * gave it.
 */
json_t *
replay_answer(struct replay_run *r, const char *path, const char *entry)
{
	json_t		*req = json_object_get(r->paths, path);
	const char	*e = replay_str(req, "entry");

	if (req == NULL || e == NULL || entry == NULL || strcmp(e, entry) != 0)
		return NULL;
	return json_object_get(req, "answer");
}

/* The request at path was given to entry, which has no answer for it. */
void
replay_missing(struct replay_run *r, const char *path, const char *entry)
{
	json_array_append_new(r->missing, json_pack("[s, s]", path, entry));
}

/* A string for a difference line: s, or what its absence means. */
static const char *
replay_or(const char *s, const char *none)
{
	return s != NULL ? s : none;
}

/* Print one difference and count it. */
static void __attribute__((format(printf, 3, 4)))
replay_say(FILE *f, size_t *n, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	(*n)++;
}

/*
 * Return nonzero if a request was an agent's own (map/send expecting a
 * response, a sub-agent's task): made by an agent while it worked, which
 * a replayed agent does not do.
 */
static int
replay_own(json_t *req)
{
	const char	*k = replay_str(req, "kind");

	return k != NULL && (strcmp(k, "request") == 0 ||
	    strcmp(k, "task") == 0);
}

/* Compare the two runs' requests at one path. */
static void
replay_diff_path(struct replay_run *rec, struct replay_run *now,
    const char *path, FILE *f, size_t *n)
{
	json_t		*a = json_object_get(rec->paths, path);
	json_t		*b = json_object_get(now->paths, path);
	const char	*ea, *eb, *oa, *ob;

	ea = replay_str(a, "entry");
	eb = replay_str(b, "entry");
	oa = replay_str(a, "outcome");
	ob = replay_str(b, "outcome");
	if (b == NULL && replay_own(a)) {
		replay_say(f, n, "missing  %s: recorded (routed to %s, %s), "
		    "not made now: an agent's own request, which replayed "
		    "agents do not make", path, replay_or(ea, "no agent"),
		    replay_or(oa, "no outcome"));
		return;
	}
	if (b == NULL) {
		replay_say(f, n, "missing  %s: recorded (routed to %s, %s), "
		    "not made now", path, replay_or(ea, "no agent"),
		    replay_or(oa, "no outcome"));
		return;
	}
	if (a == NULL) {
		replay_say(f, n, "new      %s: made now (routed to %s, %s), "
		    "not recorded", path, replay_or(eb, "no agent"),
		    replay_or(ob, "no outcome"));
		return;
	}
	if ((ea == NULL) != (eb == NULL) || (ea != NULL && strcmp(ea, eb) !=
	    0))
		replay_say(f, n, "route    %s: routed to %s; recorded: %s",
		    path, replay_or(eb, "no agent"), replay_or(ea, "no agent"));
	if ((oa == NULL) != (ob == NULL) || (oa != NULL && strcmp(oa, ob) !=
	    0))
		replay_say(f, n, "outcome  %s: %s; recorded: %s", path,
		    replay_or(ob, "no outcome"), replay_or(oa, "no outcome"));
}

/* Compare the two runs' jobs: how each ended. */
static void
replay_diff_jobs(struct replay_run *rec, struct replay_run *now, FILE *f,
    size_t *n)
{
	json_t		*p, *a, *b;
	const char	*path, *sa, *sb;
	size_t		 i;

	json_array_foreach(rec->job_order, i, p) {
		path = json_string_value(p);
		a = json_object_get(rec->jobs, path);
		if ((b = json_object_get(now->jobs, path)) == NULL) {
			replay_say(f, n, "result   job %s: did not end now; "
			    "recorded: %s", path, replay_or(replay_str(a,
			    "status"), "?"));
			continue;
		}
		/*
		 * Its status, not which request ended it last: the branches
		 * of a fan-out end in the order their agents happened to
		 * answer, and each branch's outcome is compared already.
		 */
		sa = replay_or(replay_str(a, "status"), "?");
		sb = replay_or(replay_str(b, "status"), "?");
		if (strcmp(sa, sb) != 0)
			replay_say(f, n, "result   job %s: %s, ended by %s; "
			    "recorded: %s, ended by %s", path, sb,
			    replay_or(replay_str(b, "last"), "?"), sa,
			    replay_or(replay_str(a, "last"), "?"));
	}
	json_array_foreach(now->job_order, i, p)
		if (json_object_get(rec->jobs, json_string_value(p)) == NULL)
			replay_say(f, n, "result   job %s: ended now, not in "
			    "the recording", json_string_value(p));
}

/*
 * Print the differences between the recording and the replay's run on f,
 * one a line, in the recording's order, then what only the replay made.
 * Returns how many.
 */
size_t
replay_diff(struct replay_run *rec, struct replay_run *now, FILE *f)
{
	json_t	*p;
	size_t	 i, n = 0;

	json_array_foreach(rec->order, i, p)
		replay_diff_path(rec, now, json_string_value(p), f, &n);
	json_array_foreach(now->order, i, p)
		if (json_object_get(rec->paths, json_string_value(p)) == NULL)
			replay_diff_path(rec, now, json_string_value(p), f,
			    &n);
	json_array_foreach(now->missing, i, p)
		replay_say(f, &n, "answer   %s: no answer recorded from %s "
		    "(answered with an error)", json_string_value(
		    json_array_get(p, 0)), json_string_value(json_array_get(p,
		    1)));
	replay_diff_jobs(rec, now, f, &n);
	return n;
}
