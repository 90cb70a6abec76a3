/*
 * Progress: what an adapted tool says while it works on a request (the
 * text it streams, the tools it calls, how long a tool has run), passed
 * on as it comes, so that a person can watch a long run
 * (docs/protocol.md, "Progress").
 *
 * Each request's pieces are gathered and sent at most once every
 * PROGRESS_GAP seconds, at most PROGRESS_MAX bytes of text each time (the
 * newest): an envelope with the request's intent and {"corral":{"kind":
 * "progress"}} to the agent the request was made for (a parent, for its
 * child's task), and an agent_progress event for the live views (corral
 * events, corral top, map/agents/list's metadata.progress).  What waits
 * when the reply comes goes just before it; a request that ends otherwise
 * (a timeout, a cancel) drops it.  This file is a part of the engine: it
 * owns requests.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "engine-int.h"

#define PROGRESS_GAP	0.5	/* seconds between two of a request */
#define PROGRESS_PIECE	400	/* bytes kept of one piece */
#define PROGRESS_MAX	1000	/* bytes of text sent at once */

/* A request's progress not yet sent. */
struct msg_progress {
	struct msg	*msg;
	struct agent	*agent;
	ev_timer	 timer;
	ev_tstamp	 last;		/* sent last */
	unsigned int	 seq;
	int		 cut;		/* older text was dropped */
	size_t		 len;
	char		 text[PROGRESS_MAX + 1];
};

static void	engine_progress_timer_cb(struct ev_loop *, ev_timer *, int);

/*
 * Add a piece to the text waiting, keeping the newest PROGRESS_MAX bytes:
 * a piece of its own on a new line, a delta right after the last.
 */
static void
engine_progress_add(struct msg_progress *p, const char *s, int delta)
{
	size_t	n, drop;
	int	sep;

	n = util_utf8_cut(s, strlen(s), PROGRESS_PIECE);
	sep = !delta && p->len > 0;
	if (p->len + sep + n > PROGRESS_MAX) {
		/* n <= PROGRESS_PIECE, so dropping old text makes room. */
		drop = p->len + sep + n - PROGRESS_MAX;
		/* Never start inside a UTF-8 character. */
		while (drop < p->len && ((unsigned char)p->text[drop] & 0xC0) ==
		    0x80)
			drop++;
		memmove(p->text, p->text + drop, p->len - drop);
		p->len -= drop;
		p->cut = 1;
		sep = sep && p->len > 0;
	}
	if (sep)
		p->text[p->len++] = '\n';
	memcpy(p->text + p->len, s, n);
	p->len += n;
	p->text[p->len] = '\0';
}

/* The agent_progress event: data {agentId, requestId, seq, text, to?}. */
static void
engine_progress_event(struct agent *a, struct msg *m, unsigned int seq,
    const char *text, struct agent *to)
{
	struct event_info	 ei;
	struct jsonw		 j;
	char			*data;
	size_t			 len;

	jsonw_init(&j);
	jsonw_object(&j);
	jsonw_key(&j, "agentId");
	jsonw_str(&j, a->id);
	jsonw_key(&j, "requestId");
	jsonw_str(&j, m->id);
	jsonw_key(&j, "seq");
	jsonw_u64(&j, seq);
	jsonw_key(&j, "text");
	jsonw_str(&j, text);
	if (to != NULL) {
		jsonw_key(&j, "to");
		jsonw_str(&j, to->id);
	}
	jsonw_object_end(&j);
	data = jsonw_finish(&j, &len);
	memset(&ei, 0, sizeof ei);
	ei.type = "agent_progress";
	ei.source = a->id;
	ei.source_role = a->conf->role;
	ei.agent = a->id;
	ei.agent_role = a->conf->role;
	ei.corr = m->id;
	ei.audit = 0;		/* chatty, like busy/idle */
	event_emit(&ei, data, len);
	free(data);
}

/* The progress envelope for the agent the request was made for. */
static char *
engine_progress_envelope(struct agent *a, struct msg *m, unsigned int seq,
    const char *text, size_t *len)
{
	json_t	*j;
	char	 ts[40], id[CORRAL_ID_MAX], task[CORRAL_ID_MAX + 32];
	char	*s;

	util_rfc3339(ts, sizeof ts);
	protocol_new_id(id, sizeof id);
	snprintf(task, sizeof task, "Progress on %s", m->id);
	j = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:s, s:s, s:o, "
	    "s:{s:s, s:o}, s:{s:s, s:[s]}, s:{s:s, s:s, s:s, s:I}}",
	    "protocol", CORRAL_ENVELOPE_PROTOCOL, "role", "agent",
	    "agent", "id", a->id, "name", a->conf->name, "model",
	    a->conf->adapter != NULL ? a->conf->adapter : "n/a",
	    "timestamp", ts,
	    "intent", protocol_intent_name(m->intent),
	    "task", jsonw_text(task, strlen(task)),
	    "content", "type", "text", "text", jsonw_text(text, strlen(text)),
	    "trace", "id", id, "parents", m->id,
	    "corral", "kind", CORRAL_KIND_PROGRESS, "child", a->id,
	    "request", m->id, "seq", (json_int_t)seq);
	if (j == NULL)
		fatalx("engine_progress_envelope: json_pack");
	s = jsonw_dumps(j, CORRAL_JSON_FLAGS);
	json_decref(j);
	if (s == NULL)
		fatalx("engine_progress_envelope: json_dumps");
	*len = strlen(s);
	return s;
}

/*
 * Send what waits: to the agent the request was made for, if it reads,
 * and as an event; it is also the agent's latest progress for the views.
 */
static void
engine_progress_flush(struct msg_progress *p)
{
	struct msg		*m = p->msg;
	struct agent		*a = p->agent, *to = m->parent_agent;
	struct work_busy	*b;
	char			*text, *line;
	size_t			 len;

	if (p->len == 0 || m->where != MSG_INFLIGHT || m->agent != a) {
		p->len = 0;
		return;
	}
	p->last = ev_now(LOOP);
	p->seq++;
	xasprintf(&text, "%s%s", p->cut ? "\u2026" : "", p->text);
	p->len = 0;
	p->cut = 0;
	if (to != NULL && (!lifecycle_alive(to) || !agent_writable(to) ||
	    agent_full(to)))
		to = NULL;
	if (to != NULL) {
		line = engine_progress_envelope(a, m, p->seq, text, &len);
		dialect_send(to, line, len, DK_PROGRESS);
		free(line);
	}
	engine_progress_event(a, m, p->seq, text, to);
	b = engine_busy(a);
	if (b->progress == NULL)
		b->progress = xcalloc(1, sizeof *b->progress);
	free(b->progress->text);
	b->progress->text = text;
	strlcpy(b->progress->req, m->id, sizeof b->progress->req);
	b->progress->at = ev_now(LOOP);
}

/* The gap since the last progress of a request is over. */
static void
engine_progress_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	engine_progress_flush(w->data);
}

/*
 * Agent a's tool said text about request m while working on it: send it
 * now, or with what follows once PROGRESS_GAP has passed since the last.
 */
void
engine_progress(struct agent *a, struct msg *m, const char *text, int delta)
{
	struct msg_progress	*p;
	double			 wait;

	if (m->where != MSG_INFLIGHT || m->agent != a)
		return;
	if ((p = m->progress) == NULL) {
		p = xcalloc(1, sizeof *p);
		p->msg = m;
		p->last = -PROGRESS_GAP;
		ev_timer_init(&p->timer, engine_progress_timer_cb, 0, 0);
		p->timer.data = p;
		m->progress = p;
	}
	p->agent = a;
	engine_progress_add(p, text, delta);
	if (ev_is_active(&p->timer))
		return;
	wait = p->last + PROGRESS_GAP - ev_now(LOOP);
	if (wait <= 0) {
		engine_progress_flush(p);
		return;
	}
	ev_timer_set(&p->timer, wait, 0);
	ev_timer_start(LOOP, &p->timer);
}

/*
 * The reply to a request is in: what waits of its progress goes first,
 * so that the one it was made for has it all, before the result.
 */
void
engine_progress_last(struct msg *m)
{
	if (m->progress != NULL && m->progress->len > 0) {
		ev_timer_stop(LOOP, &m->progress->timer);
		engine_progress_flush(m->progress);
	}
}

/* A request is freed: its progress ends with it. */
void
engine_progress_forget(struct msg *m)
{
	if (m->progress == NULL)
		return;
	ev_timer_stop(LOOP, &m->progress->timer);
	free(m->progress);
	m->progress = NULL;
}
