/*
 * The replay adapter: corral replay's stand-in for every agent it does
 * not run (docs/replay.md).  No process: each request is answered with
 * the reply the recording holds for the request at the same path, served
 * by the same workflow entry (replay.c).  A request the recording has no
 * answer for is answered with an error, and noted as a difference.
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
	json_t				*env;	/* NULL: nothing recorded */
	char				*path;
	TAILQ_ENTRY(replay_pending)	 entry;
};

static TAILQ_HEAD(, replay_pending) replay_q =
    TAILQ_HEAD_INITIALIZER(replay_q);
static struct replay_run	*replay_rec;	/* the recording */
static struct replay_run	*replay_now;	/* this run, as it goes */
static ev_timer			 replay_w;

static void	adapter_replay_cb(struct ev_loop *, ev_timer *, int);

/* Say which recording answers, and where this run's requests are read. */
void
adapter_replay_set(struct replay_run *rec, struct replay_run *now)
{
	replay_rec = rec;
	replay_now = now;
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

/* Take a request: look its answer up, and answer on the next iteration. */
static void
adapter_replay_request(struct agent *a, struct msg *m)
{
	struct replay_pending	*p;
	const char		*path;
	json_t			*rec = NULL;

	path = replay_now != NULL ? replay_path_of(replay_now, m->id) : NULL;
	if (path != NULL && replay_rec != NULL)
		rec = replay_answer(replay_rec, path, a->conf->name);
	p = xcalloc(1, sizeof *p);
	p->agent = a;
	p->msg = m;
	p->path = xstrdup(path != NULL ? path : m->id);
	if (rec != NULL)
		p->env = adapter_replay_reply(a, m, rec);
	TAILQ_INSERT_TAIL(&replay_q, p, entry);
	if (!ev_is_active(&replay_w)) {
		ev_timer_init(&replay_w, adapter_replay_cb, 0, 0);
		ev_timer_start(LOOP, &replay_w);
	}
}

/* Forget one pending answer. */
static void
adapter_replay_drop(struct replay_pending *p)
{
	TAILQ_REMOVE(&replay_q, p, entry);
	json_decref(p->env);
	free(p->path);
	free(p);
}

/* Answer what is pending, in the order it was asked. */
static void
adapter_replay_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct replay_pending	*p;
	char			*why;

	while ((p = TAILQ_FIRST(&replay_q)) != NULL) {
		TAILQ_REMOVE(&replay_q, p, entry);
		if (p->env != NULL) {
			adapter_reply(p->agent, p->msg, p->env);
			p->env = NULL;
		} else {
			if (replay_now != NULL)
				replay_missing(replay_now, p->path,
				    p->agent->conf->name);
			xasprintf(&why, "corral replay: the recording has no "
			    "answer from %s to the request at %s",
			    p->agent->conf->name, p->path);
			adapter_reply_error(p->agent, p->msg, "replay_missing",
			    "INTERNAL", why, NULL);
			free(why);
		}
		free(p->path);
		free(p);
	}
}

/* A request was given up: no answer for it. */
static void
adapter_replay_cancel(struct agent *a, struct msg *m)
{
	struct replay_pending	*p, *next;

	TAILQ_FOREACH_SAFE(p, &replay_q, entry, next)
		if (p->msg == m)
			adapter_replay_drop(p);
}

/* The agent stops or is freed: nothing more for it. */
static void
adapter_replay_stop(struct agent *a)
{
	struct replay_pending	*p, *next;

	TAILQ_FOREACH_SAFE(p, &replay_q, entry, next)
		if (p->agent == a)
			adapter_replay_drop(p);
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
