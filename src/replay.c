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
 * decision a replay checks.  A request an agent made while it worked on
 * another (map/send expecting a response, a spawned child's task) follows
 * from that request, not from a reply, and says so with '>':
 *
 *   plan#1@coordinator>execute#2
 *
 * is the second execute request the coordinator made while it worked on
 * the goal.  What an agent did while it held a request (the requests it
 * made, the ones it waited for, a handoff) is kept with the request, per
 * workflow entry, in the order the log shows: its work, which corral
 * replay's stand-in does again (adapter-replay.c).
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
	r->asks = json_object();
	r->spawned = json_object();
	r->escalations = json_object();
	r->asked = json_array();
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
	json_decref(r->asks);
	json_decref(r->spawned);
	json_decref(r->escalations);
	json_decref(r->asked);
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
 * names as parent.  Returns its path (a new string); *own is the id of
 * the request it was made during (an agent's own request), or NULL.
 */
static char *
replay_path(struct replay_run *r, json_t *env, const char *intent,
    int agentmade, const char **own)
{
	json_t		*parents, *p, *req = NULL, *n;
	const char	*pid = NULL, *rid, *sep = "/";
	char		*prefix, *key, *path;
	size_t		 i;
	json_int_t	 k;

	*own = NULL;
	parents = json_object_get(json_object_get(env, "trace"), "parents");
	json_array_foreach(parents, i, p) {
		if ((pid = json_string_value(p)) == NULL)
			continue;
		if ((rid = replay_str(r->reply_req, pid)) != NULL)
			pid = rid;
		else if (agentmade)
			sep = ">";	/* not a reply: made during pid */
		if ((req = json_object_get(r->reqs, pid)) != NULL)
			break;
		sep = "/";
	}
	if (req != NULL) {
		xasprintf(&prefix, "%s@%s%s", replay_str(req, "path"),
		    replay_str(req, "entry") != NULL ? replay_str(req,
		    "entry") : "?", sep);
		if (*sep == '>')
			*own = pid;
	} else
		prefix = xstrdup("");
	xasprintf(&key, "%s%s", prefix, intent);
	n = json_object_get(r->siblings, key);
	k = json_integer_value(n) + 1;
	json_object_set_new(r->siblings, key, json_integer(k));
	xasprintf(&path, "%s#%lld", key, (long long)k);
	free(prefix);
	free(key);
	return path;
}

/*
 * The work the agent holding request req does on it (a borrowed array):
 * its steps, kept per workflow entry.  NULL when no agent holds it.
 */
static json_t *
replay_work(json_t *req)
{
	json_t		*work, *steps;
	const char	*holder = replay_str(req, "holder");

	if (holder == NULL || json_object_get(req, "outcome") != NULL)
		return NULL;
	if ((work = json_object_get(req, "work")) == NULL) {
		work = json_object();
		json_object_set_new(req, "work", work);
	}
	if ((steps = json_object_get(work, holder)) == NULL) {
		steps = json_array();
		json_object_set_new(work, holder, steps);
	}
	return steps;
}

/*
 * An agent's own request, made while it held the request parent: a step
 * of its work, to be made again (its target, its envelope; what
 * map/send said of its address comes with its message_delivered event).
 */
static void
replay_ask(struct replay_run *r, json_t *line, const char *ev,
    const char *id, const char *parent)
{
	json_t		*steps, *step, *vis;
	const char	*agent = replay_str(line, "agent");

	if ((steps = replay_work(json_object_get(r->reqs, parent))) == NULL)
		return;
	step = json_pack("{s:s, s:s, s:s, s:O}", "do", "ask", "kind", ev,
	    "id", id, "env", json_object_get(line, "env"));
	if (agent != NULL) {
		json_object_set_new(step, "agent", json_string(agent));
		json_object_set_new(step, "entry", json_string(replay_entry(r,
		    agent)));
	}
	if ((vis = json_object_get(r->spawned, id)) != NULL)
		json_object_set(step, "visible", vis);
	json_object_set(r->asks, id, step);
	json_array_append_new(steps, step);
}

/* A request line (goal, env, task ...): a new request and its path. */
static void
replay_request(struct replay_run *r, json_t *line, const char *ev,
    const char *id)
{
	json_t		*env = json_object_get(line, "env"), *req;
	const char	*intent, *own;
	char		*path;

	if (id == NULL || !json_is_object(env) ||
	    json_object_get(r->reqs, id) != NULL)
		return;
	if ((intent = replay_str(env, "intent")) == NULL)
		intent = "?";
	path = replay_path(r, env, intent, strcmp(ev, "request") == 0 ||
	    strcmp(ev, "task") == 0, &own);
	req = json_pack("{s:s, s:s, s:s}", "path", path, "intent", intent,
	    "kind", ev);
	if (own != NULL) {
		json_object_set_new(req, "parent", json_string(own));
		replay_ask(r, line, ev, id, own);
	}
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

/*
 * An own request ended while the agent that made it still held its
 * parent: that agent waited for it (as far as the log can tell), a step
 * of its work.
 */
static void
replay_waited(struct replay_run *r, json_t *req, const char *id)
{
	json_t		*steps;
	const char	*parent = replay_str(req, "parent");

	if (parent == NULL || (steps = replay_work(json_object_get(r->reqs,
	    parent))) == NULL)
		return;
	json_array_append_new(steps, json_pack("{s:s, s:s}", "do", "wait",
	    "id", id));
}

/* An outcome line: the request's outcome, and its answer if it replied. */
static void
replay_outcome(struct replay_run *r, json_t *line, json_t *req)
{
	const char	*o = replay_str(line, "outcome"), *reply, *code, *agent;
	char		*s;

	if (o == NULL)
		return;
	if (json_object_get(req, "outcome") == NULL)
		replay_waited(r, req, replay_str(line, "id"));
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
		/* Who answered: after a handoff, not the first agent. */
		if ((agent = replay_str(line, "agent")) != NULL)
			json_object_set_new(req, "by", json_string(
			    replay_entry(r, agent)));
	}
	r->last = replay_str(req, "path");
}

/* A handoff: the agent holding the request gave it to another. */
static void
replay_handoff(struct replay_run *r, json_t *line, json_t *req)
{
	json_t	*steps;

	if ((steps = replay_work(req)) == NULL)
		return;
	json_object_set_new(req, "handed", json_true());
	json_array_append_new(steps, json_pack("{s:s, s:s?, s:s?}", "do",
	    "handoff", "to", replay_str(line, "to"), "reason",
	    replay_str(line, "reason")));
}

/*
 * A map_event line: what a message_delivered says of an own request made
 * with map/send (its address, its payload and meta as sent) completes
 * its step.
 */
static void
replay_map_event(struct replay_run *r, json_t *line)
{
	json_t		*e = json_object_get(line, "event"), *msg, *step;
	const char	*type = replay_str(e, "type"), *mid;

	if (type == NULL || strcmp(type, "message_delivered") != 0)
		return;
	msg = json_object_get(json_object_get(e, "data"), "message");
	if ((mid = replay_str(msg, "id")) == NULL ||
	    (step = json_object_get(r->asks, mid)) == NULL ||
	    json_object_get(step, "to") != NULL ||
	    json_object_get(msg, "to") == NULL ||
	    json_object_get(msg, "payload") == NULL)
		return;
	json_object_set(step, "to", json_object_get(msg, "to"));
	json_object_set(step, "payload", json_object_get(msg, "payload"));
	if (json_is_object(json_object_get(msg, "meta")))
		json_object_set(step, "meta", json_object_get(msg, "meta"));
}

/* A route line: who holds the request now; the first is the decision. */
static void
replay_route(struct replay_run *r, json_t *req, const char *agent)
{
	const char	*entry = replay_entry(r, agent);

	if (entry == NULL)
		return;
	/* The first: later ones are handoffs and retries. */
	if (json_object_get(req, "entry") == NULL)
		json_object_set_new(req, "entry", json_string(entry));
	json_object_set_new(req, "holder", json_string(entry));
}

/*
 * An escalate line: a step of a job asked a person.  It is known by the
 * job's path, the step and how many times that step asked before:
 * "plan#1 validate 1".  The recording's answer comes with the answer
 * line; this run's asks wait in r->asked for corral replay to answer.
 */
static void
replay_escalate(struct replay_run *r, json_t *line, const char *id)
{
	const char	*path = replay_path_of(r, id);
	const char	*step = replay_str(line, "step");
	json_t		*n;
	char		*key, *ask;
	json_int_t	 k;

	if (path == NULL || step == NULL)
		return;
	xasprintf(&key, "escalate %s %s", path, step);
	k = json_integer_value(json_object_get(r->siblings, key)) + 1;
	json_object_set_new(r->siblings, key, json_integer(k));
	xasprintf(&ask, "%s %s %lld", path, step, (long long)k);
	n = json_pack("{s:s, s:s, s:s}", "key", ask, "job", id, "step", step);
	json_object_set(r->escalations, ask, n);
	json_array_append_new(r->asked, n);
	free(key);
	free(ask);
}

/* An answer line: the answer to the step's last ask in that job. */
static void
replay_answered(struct replay_run *r, json_t *line, const char *id)
{
	json_t	*a, *n;
	size_t	 i;

	/* The latest ask of that step in that job, not yet answered. */
	for (i = json_array_size(r->asked); i-- > 0; ) {
		a = json_array_get(r->asked, i);
		if (strcmp(replay_str(a, "job"), id) != 0 ||
		    replay_str(line, "step") == NULL ||
		    strcmp(replay_str(a, "step"), replay_str(line, "step")) != 0)
			continue;
		if (json_object_get(a, "action") != NULL)
			return;
		if ((n = json_object_get(line, "action")) != NULL)
			json_object_set(a, "action", n);
		if ((n = json_object_get(line, "text")) != NULL)
			json_object_set(a, "text", n);
		return;
	}
}

/*
 * The recording's answer to an ask of this run ({action, text} and the
 * rest, borrowed), or NULL: the recording has no such ask, or nobody
 * answered it.
 */
json_t *
replay_escalation(struct replay_run *r, const char *key)
{
	json_t	*a = json_object_get(r->escalations, key);

	return json_is_string(json_object_get(a, "action")) ? a : NULL;
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
	else if (strcmp(ev, "spawn_child") == 0 && id != NULL)
		json_object_set(r->spawned, id, json_is_boolean(
		    json_object_get(line, "visible")) ? json_object_get(line,
		    "visible") : json_false());
	else if (strcmp(ev, "route") == 0 && id != NULL &&
	    (req = json_object_get(r->reqs, id)) != NULL)
		replay_route(r, req, agent);
	else if (strcmp(ev, "handoff") == 0 && id != NULL &&
	    (req = json_object_get(r->reqs, id)) != NULL) {
		r->handoffs++;
		replay_handoff(r, line, req);
	}
	else if (strcmp(ev, "map_event") == 0)
		replay_map_event(r, line);
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
	else if (strcmp(ev, "escalate") == 0 && id != NULL)
		replay_escalate(r, line, id);
	else if (strcmp(ev, "answer") == 0 && id != NULL)
		replay_answered(r, line, id);
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
 * The answer recorded for the request at path when entry serves it (a
 * borrowed reference), or NULL: none was recorded, or another agent
 * gave it.  The agent that answered in the recording gives it, and so
 * does the one it was routed to first, unless that one handed it off:
 * a retry after a timeout or a crash (which a replay does not repeat)
 * ended at another agent.
 */
json_t *
replay_answer(struct replay_run *r, const char *path, const char *entry)
{
	json_t		*req = json_object_get(r->paths, path);
	const char	*by = replay_str(req, "by");
	const char	*first = replay_str(req, "entry");

	if (req == NULL || entry == NULL)
		return NULL;
	if ((by != NULL && strcmp(by, entry) == 0) || (first != NULL &&
	    strcmp(first, entry) == 0 && !json_is_true(json_object_get(req,
	    "handed"))))
		return json_object_get(req, "answer");
	return NULL;
}

/*
 * What the agent of workflow entry did in the recording while it held
 * the request at path, before it answered or handed it off (a borrowed
 * array of steps: {"do":"ask"|"wait"|"handoff", ...}), or NULL: nothing.
 */
json_t *
replay_steps(struct replay_run *r, const char *path, const char *entry)
{
	json_t	*req = json_object_get(r->paths, path);

	if (entry == NULL)
		return NULL;
	return json_object_get(json_object_get(req, "work"), entry);
}

/* How many paths the run has: a path made later has a higher index. */
size_t
replay_count(struct replay_run *r)
{
	return json_array_size(r->order);
}

/* The path of index i (replay_count), or NULL. */
const char *
replay_path_at(struct replay_run *r, size_t i)
{
	return json_string_value(json_array_get(r->order, i));
}

/* Return nonzero if the request at path has ended (has its outcome). */
int
replay_ended(struct replay_run *r, const char *path)
{
	return json_object_get(json_object_get(r->paths, path), "outcome") !=
	    NULL;
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
	json_array_foreach(now->asked, i, p)
		if (json_is_true(json_object_get(p, "unanswered")))
			replay_say(f, &n, "escalate %s: step %s asked a person; "
			    "the recording has no answer (aborted)",
			    json_string_value(json_object_get(p, "key")),
			    json_string_value(json_object_get(p, "step")));
	replay_diff_jobs(rec, now, f, &n);
	return n;
}
