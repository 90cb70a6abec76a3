/*
 * The replay adapter: corral replay's stand-in for every agent it does
 * not run (docs/replay.md).  No process: each request is answered with
 * the reply the recording holds for the request at the same path, served
 * by the same workflow entry (replay.c).  A request the recording has no
 * answer for is answered with an error, and noted as a difference.
 *
 * What the agent did while it worked on the request, in the recording,
 * the stand-in does again first, in the recording's order: the requests
 * it made of other agents (map/send expecting a response, _corral/route,
 * a spawned child's task: map/agents/spawn), each as a JSON-RPC frame on
 * its own behalf, which corral routes afresh; the ones it waited for, it
 * waits for (until their outcome is in this run's log); a handoff it
 * makes, and then does not answer.  Only then does it answer.
 *
 * Answers go back on the next loop iteration, never from inside the
 * request call: the engine is still dispatching then.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

struct replay_pending {
	struct agent			*agent;
	struct msg			*msg;
	char				*path;
	json_t				*steps;	/* its work, recorded; or NULL */
	size_t				 next;	/* the next step */
	json_t				*made;	/* own request id: path now */
	int				 known;	/* path: in this run's log */
	int				 gone;	/* cancelled while it worked */
	TAILQ_ENTRY(replay_pending)	 entry;
};
TAILQ_HEAD(replay_pendq, replay_pending);

static struct replay_pendq	 replay_q = TAILQ_HEAD_INITIALIZER(replay_q);
/* Those that wait, while the queue is worked on. */
static struct replay_pendq	 replay_wq = TAILQ_HEAD_INITIALIZER(replay_wq);
static struct replay_run	*replay_rec;	/* the recording */
static struct replay_run	*replay_now;	/* this run, as it goes */
static ev_timer			 replay_w;
static struct replay_pending	*replay_working; /* its steps being made */
static replay_frame_cb		 replay_frame;	/* the control plane */
static unsigned int		 replay_blocked; /* waiting for a request */
static unsigned long		 replay_seq;	/* frame ids */

static void	adapter_replay_cb(struct ev_loop *, ev_timer *, int);

/* Say which recording answers, and where this run's requests are read. */
void
adapter_replay_set(struct replay_run *rec, struct replay_run *now)
{
	replay_rec = rec;
	replay_now = now;
}

/*
 * Say where a stand-in's own frames go (the control plane, as an agent's
 * JSON-RPC lines on its stdout would).
 */
void
adapter_replay_on_frame(replay_frame_cb cb)
{
	replay_frame = cb;
}

/* Come back on the next loop iteration. */
static void
adapter_replay_kick(void)
{
	if (!ev_is_active(&replay_w)) {
		ev_timer_init(&replay_w, adapter_replay_cb, 0, 0);
		ev_timer_start(LOOP, &replay_w);
	}
}

/*
 * This run's log has a new line: a request a stand-in waits for may have
 * ended.  Looked at on the next iteration, not in the middle of writing.
 */
void
adapter_replay_fed(void)
{
	if (replay_blocked > 0)
		adapter_replay_kick();
}

/* Return nonzero while corral replay runs (it alone has this adapter). */
int
adapter_replay_active(void)
{
	return replay_rec != NULL;
}

/* Nothing to start: the agent is ready at once. */
static int
adapter_replay_start(struct agent *a)
{
	return 0;
}

/*
 * The recorded reply made this run's: a trace id of this run, this
 * request as its parent, this agent as its author, the time now.
 */
static json_t *
adapter_replay_reply(struct agent *a, struct msg *m, json_t *recorded)
{
	json_t	*env = json_deep_copy(recorded), *agent;
	char	 ts[40], id[CORRAL_ID_MAX];

	util_rfc3339(ts, sizeof ts);
	protocol_new_id(id, sizeof id);
	json_object_set_new(env, "timestamp", json_string(ts));
	json_object_set_new(env, "trace", json_pack("{s:s, s:[s]}", "id", id,
	    "parents", m->id));
	if (json_is_object(agent = json_object_get(env, "agent")))
		json_object_set_new(agent, "id", json_string(a->id));
	return env;
}

/* Take a request: find its work and answer, on the next iteration. */
static void
adapter_replay_request(struct agent *a, struct msg *m)
{
	struct replay_pending	*p;
	const char		*path;
	json_t			*steps = NULL;

	path = replay_now != NULL ? replay_path_of(replay_now, m->id) : NULL;
	if (path != NULL && replay_rec != NULL)
		steps = replay_steps(replay_rec, path, a->conf->name);
	p = xcalloc(1, sizeof *p);
	p->agent = a;
	p->msg = m;
	p->path = xstrdup(path != NULL ? path : m->id);
	p->known = path != NULL;
	p->steps = json_incref(steps);
	p->made = json_object();
	TAILQ_INSERT_TAIL(&replay_q, p, entry);
	adapter_replay_kick();
}

/* Free one pending request. */
static void
adapter_replay_free(struct replay_pending *p)
{
	json_decref(p->steps);
	json_decref(p->made);
	free(p->path);
	free(p);
}

/*
 * Forget the pending requests of agent a (NULL: any agent), request m
 * (NULL: all of them): one at work is marked gone, and freed when its
 * step returns.
 */
static void
adapter_replay_drop(struct agent *a, struct msg *m)
{
	struct replay_pendq	*qs[] = { &replay_q, &replay_wq };
	struct replay_pending	*p, *next;
	size_t			 i;

	for (i = 0; i < 2; i++)
		TAILQ_FOREACH_SAFE(p, qs[i], entry, next)
			if ((a == NULL || p->agent == a) && (m == NULL ||
			    p->msg == m)) {
				TAILQ_REMOVE(qs[i], p, entry);
				adapter_replay_free(p);
			}
	if ((p = replay_working) != NULL && (a == NULL || p->agent == a) &&
	    (m == NULL || p->msg == m))
		p->gone = 1;
}

/*
 * Send a JSON-RPC request as the agent: through the control plane, as
 * the line it would write; the answer goes to its stdin, which has none.
 */
static void
adapter_replay_send(struct replay_pending *p, const char *method,
    json_t *params)
{
	json_t	*f;
	char	*s, id[32];

	snprintf(id, sizeof id, "replay-%lu", ++replay_seq);
	if (params == NULL)
		return;		/* the recording's members were not strings */
	f = json_pack("{s:s, s:s, s:s, s:o}", "jsonrpc", "2.0", "id", id,
	    "method", method, "params", params);
	if (f == NULL || replay_frame == NULL ||
	    (s = jsonw_dumps(f, CORRAL_JSON_FLAGS)) == NULL) {
		json_decref(f);
		return;
	}
	log_debug("replay: %s asks: %s", p->agent->id, s);
	replay_frame(agent_peer(p->agent), s, strlen(s));
	free(s);
	json_decref(f);
}

/*
 * A recorded envelope made this run's: under the request the agent works
 * on now, without what corral added (its trace id, its own member).
 */
static json_t *
adapter_replay_payload(struct replay_pending *p, json_t *env)
{
	json_t	*e, *trace;

	if (!json_is_object(env))
		return json_incref(env);
	e = json_deep_copy(env);
	json_object_del(e, "corral");
	if (!json_is_object(trace = json_object_get(e, "trace"))) {
		trace = json_object();
		json_object_set_new(e, "trace", trace);
	}
	json_object_del(trace, "id");
	json_object_set_new(trace, "parents", json_pack("[s]", p->msg->id));
	return e;
}

/*
 * Make one of the agent's own requests again: a child spawned with its
 * task, a map/send to the address it used, or through the routes; note
 * the path it was made at in this run ("" when corral refused it).
 */
static void
adapter_replay_ask(struct replay_pending *p, json_t *step)
{
	const char	*kind = json_string_value(json_object_get(step, "kind"));
	const char	*id = json_string_value(json_object_get(step, "id"));
	const char	*agent = json_string_value(json_object_get(step,
			    "agent"));
	json_t		*params, *meta;
	size_t		 n0, n;

	if (kind == NULL || id == NULL || replay_now == NULL)
		return;
	n0 = replay_count(replay_now);
	if (strcmp(kind, "task") == 0) {
		params = json_pack("{s:s?, s:o, s:b}", "agent",
		    json_string_value(json_object_get(step, "entry")), "task",
		    adapter_replay_payload(p, json_object_get(step, "env")),
		    "visible", json_is_true(json_object_get(step, "visible")));
		adapter_replay_send(p, CORRAL_M_SPAWN, params);
	} else if (json_object_get(step, "to") != NULL) {
		meta = json_object_get(step, "meta");
		params = json_pack("{s:O, s:o, s:O*}", "to", json_object_get(step,
		    "to"), "payload", adapter_replay_payload(p,
		    json_object_get(step, "payload")), "meta", meta);
		adapter_replay_send(p, CORRAL_M_SEND, params);
	} else if (agent != NULL) {
		params = json_pack("{s:s, s:o, s:{s:b}}", "to", agent, "payload",
		    adapter_replay_payload(p, json_object_get(step, "env")),
		    "meta", "expectsResponse", 1);
		adapter_replay_send(p, CORRAL_M_SEND, params);
	} else {
		params = json_pack("{s:o}", "payload", adapter_replay_payload(p,
		    json_object_get(step, "env")));
		adapter_replay_send(p, CORRAL_M_ROUTE, params);
	}
	/* Its request line was read as it was written: the first new path. */
	n = replay_count(replay_now);
	json_object_set_new(p->made, id, json_string(n > n0 ?
	    replay_path_at(replay_now, n0) : ""));
}

/* Hand the request over as the agent did; 1 when corral did it. */
static int
adapter_replay_handoff(struct replay_pending *p, json_t *step)
{
	size_t	n0;

	if (replay_now == NULL)
		return 0;
	n0 = replay_now->handoffs;
	adapter_replay_send(p, CORRAL_M_HANDOFF, json_pack("{s:s, s:O, s:O}",
	    "requestId", p->msg->id, "to", json_object_get(step, "to"),
	    "reason", json_object_get(step, "reason")));
	return replay_now->handoffs > n0;
}

/*
 * Make the agent's recorded steps from where it stopped.  Returns 0 when
 * done (answer now), 1 when waiting for a request to end, 2 when the
 * request is no longer the agent's (handed off, or given up meanwhile).
 */
static int
adapter_replay_work(struct replay_pending *p)
{
	json_t		*step;
	const char	*what, *path;

	while (!p->gone && (step = json_array_get(p->steps, p->next)) !=
	    NULL) {
		what = json_string_value(json_object_get(step, "do"));
		if (what != NULL && strcmp(what, "wait") == 0) {
			path = json_string_value(json_object_get(p->made,
			    json_string_value(json_object_get(step, "id"))));
			if (path != NULL && *path != '\0' &&
			    !replay_ended(replay_now, path))
				return 1;
		}
		p->next++;
		if (what == NULL)
			continue;
		if (strcmp(what, "ask") == 0)
			adapter_replay_ask(p, step);
		else if (strcmp(what, "handoff") == 0 &&
		    adapter_replay_handoff(p, step))
			return 2;
	}
	return p->gone ? 2 : 0;
}

/* Answer: with the recorded reply, or an error when there is none. */
static void
adapter_replay_answer(struct replay_pending *p)
{
	json_t	*rec = NULL;
	char	*why;

	if (replay_rec != NULL && p->known)
		rec = replay_answer(replay_rec, p->path, p->agent->conf->name);
	if (rec != NULL) {
		adapter_reply(p->agent, p->msg, adapter_replay_reply(p->agent,
		    p->msg, rec));
		return;
	}
	if (replay_now != NULL)
		replay_missing(replay_now, p->path, p->agent->conf->name);
	xasprintf(&why, "corral replay: the recording has no answer from %s "
	    "to the request at %s", p->agent->conf->name, p->path);
	adapter_reply_error(p->agent, p->msg, "replay_missing", "INTERNAL", why,
	    NULL);
	free(why);
}

/*
 * Work on what is pending, in the order it was asked: make each one's
 * steps, and answer those that are done.  Those that wait stay.
 */
static void
adapter_replay_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct replay_pending	*p;
	int			 rc;

	replay_blocked = 0;
	while ((p = TAILQ_FIRST(&replay_q)) != NULL) {
		TAILQ_REMOVE(&replay_q, p, entry);
		replay_working = p;
		rc = adapter_replay_work(p);
		replay_working = NULL;
		if (rc == 1) {
			TAILQ_INSERT_TAIL(&replay_wq, p, entry);
			continue;
		}
		if (rc == 0)
			adapter_replay_answer(p);
		adapter_replay_free(p);
	}
	while ((p = TAILQ_FIRST(&replay_wq)) != NULL) {
		TAILQ_REMOVE(&replay_wq, p, entry);
		TAILQ_INSERT_TAIL(&replay_q, p, entry);
		replay_blocked++;
	}
}

/* A request was given up: no answer for it. */
static void
adapter_replay_cancel(struct agent *a, struct msg *m)
{
	adapter_replay_drop(NULL, m);
}

/* The agent stops or is freed: nothing more for it. */
static void
adapter_replay_stop(struct agent *a)
{
	adapter_replay_drop(a, NULL);
}

const struct adapter_ops adapter_replay_ops = {
	.name = "replay",
	.per_call = 1,
	.start = adapter_replay_start,
	.request = adapter_replay_request,
	.cancel = adapter_replay_cancel,
	.stop = adapter_replay_stop,
	.free = adapter_replay_stop,
};
