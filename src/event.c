/*
 * MAP's event stream: events with increasing ids, the subscriptions that
 * receive them, and the history map/replay reads.
 *
 * An event is built once, as the JSON text of MAP's Event object, and
 * that text is what every subscriber and every replay gets, byte for
 * byte.  Its id is a ULID from a monotonic generator: within one
 * millisecond the random part counts up, so ids sort in emission order
 * and "after this id" is string order, as the SDK's replay expects.
 *
 * The last EVENT_HISTORY events (at most EVENT_HISTORY_BYTES of them)
 * stay in a ring.  When the run writes an audit log, events go there too
 * (all but the busy/idle changes, which the log leaves out as it leaves
 * out READY <-> BUSY), and a replay that starts before the ring reads the
 * older ones back from the log.
 *
 * A subscription belongs to a peer and has a filter and its own sequence
 * numbers, which count the events delivered on it.  Events go out
 * through the peer's channel; a peer whose channel is above its high
 * watermark does not get them: they are counted, and once it reads again
 * one system_error event (data.code "events_dropped") says how many, and
 * which, so it can fetch them with map/replay.  A slow subscriber costs
 * corral a bounded buffer, never more.
 *
 * An agent's busy/idle changes come and go with every request, on the
 * hot path: when nobody subscribes, such a change is kept as a compact
 * record (ids, time, two state names), and its text is written only when
 * a replay asks for it.  Its bytes are the same either way.
 *
 * This module knows peers, not agents: whoever emits an event says who
 * its source is and the roles the filters need.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

#define EVENT_HISTORY		10000	/* events kept for map/replay */
#define EVENT_HISTORY_BYTES	(16 * 1024 * 1024)	/* and their bytes */
#define EVENT_SLOT_KEEP		512	/* a slot keeps a buffer this big */
#define EVENT_KEYS_KEEP		256	/* and a keys buffer this big */
#define EVENT_LAZY_BYTES	192	/* what a lazy event is counted as */
#define EVENT_SUBS_MAX		64	/* subscriptions per peer */
#define EVENT_REPLAY_LIMIT	1000	/* events per map/replay answer */
#define EVENT_REPLAY_BYTES	(1024 * 1024)	/* and their bytes, about */

struct event_rec {
	char		 id[EVENT_ID_LEN + 1];
	uint64_t	 ms;
	const char	*type;		/* a literal */
	const char	*srole;		/* role of the source; outlives us */
	const char	*arole;		/* role of data.agentId */
	char		*text;		/* the Event object */
	size_t		 len;
	size_t		 cap;
	char		*keys;		/* source, agent, corr: NUL-separated */
	size_t		 kcap;
	int		 has;		/* which of the keys are there */
#define EV_SOURCE	0x01
#define EV_AGENT	0x02
#define EV_CORR		0x04
#define EV_LAZY		0x08	/* a state change whose text waits */
	const char	*lz[3];		/* its previous, new, corral state */
};

struct event_sub {
	char			 id[32];
	struct peer		*peer;
	json_t			*filter;	/* NULL: everything */
	uint64_t		 seq;
	uint64_t		 dropped;
	char			 first_dropped[EVENT_ID_LEN + 1];
	char			 last_dropped[EVENT_ID_LEN + 1];
	TAILQ_ENTRY(event_sub)	 entry;
};

static struct event_rec		*event_ring;	/* EVENT_HISTORY slots */
static size_t			 event_head;	/* the next slot */
static size_t			 event_count;
static size_t			 event_bytes;	/* the ring's buffers (event_cost) */
static uint64_t			 event_total;
static uint64_t			 event_dropped_total;
static TAILQ_HEAD(, event_sub)	 event_subs =
				    TAILQ_HEAD_INITIALIZER(event_subs);
static uint64_t			 event_sub_seq;
static uint8_t			 event_ulid[16];
static uint64_t			 event_ulid_ms;
static char			*event_log;	/* the audit log's path */
static event_visible_cb		 event_visible;	/* may a peer see an agent */

static const char event_b32[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

static void	event_materialize(struct event_rec *);

/* Forget every event and subscription (a new run; the tests set up many). */
void
event_init(void)
{
	struct event_sub	*s;
	size_t			 i;

	while ((s = TAILQ_FIRST(&event_subs)) != NULL) {
		TAILQ_REMOVE(&event_subs, s, entry);
		json_decref(s->filter);
		free(s);
	}
	if (event_ring != NULL) {
		for (i = 0; i < EVENT_HISTORY; i++) {
			free(event_ring[i].text);
			free(event_ring[i].keys);
		}
		free(event_ring);
		event_ring = NULL;
	}
	event_head = event_count = event_bytes = 0;
	event_total = event_dropped_total = 0;
	free(event_log);
	event_log = NULL;
}

/* Read older events back from this audit log (NULL: none). */
void
event_set_log(const char *path)
{
	free(event_log);
	event_log = path != NULL ? xstrdup(path) : NULL;
}

/*
 * Register who says whether a peer may see an agent (mapview.c): an
 * agent's subscriptions and replays get only the events about agents it
 * may see, as its map/agents/list does.
 */
void
event_on_visible(event_visible_cb cb)
{
	event_visible = cb;
}

/* Whether peer p may see an event about agent (NULL: about no agent). */
static int
event_sees(const struct peer *p, const char *agent)
{
	return agent == NULL || event_visible == NULL || event_visible(p,
	    agent);
}

/* The time of an event: milliseconds since the epoch, the loop's clock. */
uint64_t
event_now_ms(void)
{
	return (uint64_t)(ev_now(LOOP) * 1000.0);
}

/* Write the 128 bits of a ULID as 26 Crockford base-32 characters. */
static void
event_ulid_encode(const uint8_t *b, char *out)
{
	uint64_t	hi = 0, lo = 0;
	int		i;

	for (i = 0; i < 8; i++) {
		hi = hi << 8 | b[i];
		lo = lo << 8 | b[8 + i];
	}
	/* Five bits at a time from the bottom; the top character has three. */
	for (i = 25; i >= 0; i--) {
		out[i] = event_b32[lo & 31];
		lo = lo >> 5 | hi << 59;
		hi >>= 5;
	}
	out[26] = '\0';
}

/*
 * Make a new id: a ULID, greater than every one made before it in this
 * process (the same millisecond counts the random part up; a clock that
 * went back is ignored).
 */
void
event_new_id(char *out)
{
	uint64_t	ms = event_now_ms();
	int		i;

	if (event_ulid_ms != 0 && ms <= event_ulid_ms) {
		for (i = 15; i >= 6; i--)
			if (++event_ulid[i] != 0)
				break;
		if (i < 6) {
			/* 2^80 ids in one millisecond: move time on. */
			event_ulid_ms++;
			arc4random_buf(event_ulid + 6, 10);
			event_ulid[6] &= 0x7f;
		}
	} else {
		event_ulid_ms = ms;
		arc4random_buf(event_ulid + 6, 10);
		/* Room to count up in the same millisecond. */
		event_ulid[6] &= 0x7f;
	}
	for (i = 0; i < 6; i++)
		event_ulid[i] = (uint8_t)(event_ulid_ms >> (8 * (5 - i)));
	event_ulid_encode(event_ulid, out);
}

/* Turn '_' and '-' into '.', so that every naming style compares equal. */
static void
event_norm(const char *in, char *out, size_t len)
{
	size_t	i;

	for (i = 0; in[i] != '\0' && i + 1 < len; i++)
		out[i] = (in[i] == '_' || in[i] == '-') ? '.' : in[i];
	out[i] = '\0';
}

/*
 * Does event type t match filter name f?  Any naming style, "*" for
 * everything, "agent.*" for a prefix (SPEC.md 7.2).
 */
int
event_type_match(const char *t, const char *f)
{
	char	nt[64], nf[64];
	size_t	n;

	event_norm(f, nf, sizeof nf);
	if (strcmp(nf, "*") == 0)
		return 1;
	event_norm(t, nt, sizeof nt);
	if (strcmp(nt, nf) == 0)
		return 1;
	n = strlen(nf);
	return n >= 2 && strcmp(nf + n - 2, ".*") == 0 &&
	    strncmp(nt, nf, n - 1) == 0;
}

/* Does every pair of want appear in the data.metadata of event text? */
static int
event_meta_match(json_t *want, const char *text, size_t len)
{
	json_t		*ev, *md, *v;
	const char	*k;
	int		 ok = 1;

	if ((ev = json_loadb(text, len, 0, NULL)) == NULL)
		return 0;
	md = json_object_get(json_object_get(ev, "data"), "metadata");
	json_object_foreach(want, k, v)
		if (!json_equal(json_object_get(md, k), v)) {
			ok = 0;
			break;
		}
	json_decref(ev);
	return ok;
}

/* The key of a record: source, agent or correlation id, or NULL. */
static const char *
event_key(const struct event_rec *r, int which)
{
	const char	*p = r->keys;

	if (!(r->has & which))
		return NULL;
	/* The keys are stored in this order, each NUL-terminated. */
	if (which == EV_SOURCE)
		return p;
	p += strlen(p) + 1;
	if (which == EV_AGENT)
		return p;
	p += strlen(p) + 1;
	return p;
}

/*
 * Does an event pass a filter (SubscriptionFilter: AND across members,
 * OR within an array; corral has no scopes, so a scopes filter matches
 * nothing)?
 */
static int
event_filter_match(json_t *f, const char *type, const char *source,
    const char *srole, const char *agent, const char *arole, const char *corr,
    const char *text, size_t len)
{
	json_t	*types, *x, *md;
	size_t	 i;
	int	 ok;

	if (f == NULL)
		return 1;
	types = json_object_get(f, "eventTypes");
	if (json_array_size(types) > 0) {
		ok = 0;
		json_array_foreach(types, i, x)
			if (json_is_string(x) && event_type_match(type,
			    json_string_value(x))) {
				ok = 1;
				break;
			}
		if (!ok)
			return 0;
	}
	if (!protocol_filter_allows(f, "fromAgents", source) ||
	    !protocol_filter_allows(f, "fromRoles", srole) ||
	    !protocol_filter_allows(f, "roles", arole) ||
	    !protocol_filter_allows(f, "correlationIds", corr))
		return 0;
	if (json_array_size(json_object_get(f, "scopes")) > 0)
		return 0;
	md = json_object_get(f, "metadataMatch");
	if (json_object_size(md) > 0 && !event_meta_match(md, text, len))
		return 0;
	return 1;
}

/* Does a record pass a filter? */
static int
event_rec_match(json_t *f, struct event_rec *r)
{
	/* A filter on metadata reads the text. */
	if (json_object_size(json_object_get(f, "metadataMatch")) > 0)
		event_materialize(r);
	return event_filter_match(f, r->type, event_key(r, EV_SOURCE),
	    r->srole, event_key(r, EV_AGENT), r->arole, event_key(r, EV_CORR),
	    r->text, r->len);
}

/* Write one map/event notification of a subscription. */
static void
event_send(struct event_sub *s, const char *id, uint64_t ms, const char *text,
    size_t len)
{
	struct jsonw	 j;
	char		*out;
	size_t		 olen;

	jsonw_init(&j);
	jsonw_object(&j);
	jsonw_key(&j, "jsonrpc");
	jsonw_str(&j, "2.0");
	jsonw_key(&j, "method");
	jsonw_str(&j, CORRAL_M_EVENT);
	jsonw_key(&j, "params");
	jsonw_object(&j);
	jsonw_key(&j, "subscriptionId");
	jsonw_str(&j, s->id);
	jsonw_key(&j, "sequenceNumber");
	jsonw_u64(&j, ++s->seq);
	jsonw_key(&j, "eventId");
	jsonw_str(&j, id);
	jsonw_key(&j, "timestamp");
	jsonw_u64(&j, ms);
	jsonw_key(&j, "event");
	jsonw_raw(&j, text, len);
	jsonw_object_end(&j);
	jsonw_object_end(&j);
	out = jsonw_finish(&j, &olen);
	rpc_send_event(s->peer, out, olen);
	free(out);
}

/*
 * Tell a subscription how many events it missed, once it can take them
 * again: a system_error event of its own, kept in no history.
 */
static void
event_send_dropped(struct event_sub *s)
{
	struct jsonw	 j;
	char		 id[EVENT_ID_LEN + 1], msg[160], *text;
	size_t		 len;
	uint64_t	 ms = event_now_ms();

	snprintf(msg, sizeof msg, "%llu events were dropped: this connection "
	    "did not read them in time; map/replay has them",
	    (unsigned long long)s->dropped);
	event_new_id(id);
	jsonw_init(&j);
	jsonw_object(&j);
	jsonw_key(&j, "id");
	jsonw_str(&j, id);
	jsonw_key(&j, "type");
	jsonw_str(&j, "system_error");
	jsonw_key(&j, "timestamp");
	jsonw_u64(&j, ms);
	jsonw_key(&j, "source");
	jsonw_str(&j, "corral");
	jsonw_key(&j, "data");
	jsonw_object(&j);
	jsonw_key(&j, "code");
	jsonw_str(&j, "events_dropped");
	jsonw_key(&j, "category");
	jsonw_str(&j, "resource");
	jsonw_key(&j, "message");
	jsonw_str(&j, msg);
	jsonw_key(&j, "dropped");
	jsonw_u64(&j, s->dropped);
	jsonw_key(&j, "firstEventId");
	jsonw_str(&j, s->first_dropped);
	jsonw_key(&j, "lastEventId");
	jsonw_str(&j, s->last_dropped);
	jsonw_object_end(&j);
	jsonw_object_end(&j);
	text = jsonw_finish(&j, &len);
	s->dropped = 0;
	event_send(s, id, ms, text, len);
	free(text);
}

/* Hand an event to a subscription, or count it as dropped. */
static void
event_deliver(struct event_sub *s, const struct event_rec *r)
{
	if (rpc_full(s->peer)) {
		if (s->dropped++ == 0)
			strlcpy(s->first_dropped, r->id,
			    sizeof s->first_dropped);
		strlcpy(s->last_dropped, r->id, sizeof s->last_dropped);
		event_dropped_total++;
		return;
	}
	if (s->dropped > 0)
		event_send_dropped(s);
	event_send(s, r->id, r->ms, r->text, r->len);
}

/*
 * What an event costs: its buffers as allocated (a lazy record counts as
 * the text it stands for).  The history's byte limit counts these, so
 * it bounds the ring's memory, not only its events' lengths.
 */
static size_t
event_cost(const struct event_rec *r)
{
	return r->cap + r->kcap + ((r->has & EV_LAZY) ? EVENT_LAZY_BYTES : 0);
}

/*
 * Forget the oldest event of the ring.  With reuse, the slot is about to
 * take the next event and keeps small buffers for it; otherwise it stays
 * empty and keeps nothing, or every slot would end up holding the largest
 * event it ever had, outside the history's byte limit.
 */
static void
event_evict(int reuse)
{
	struct event_rec	*r;

	r = &event_ring[(event_head + EVENT_HISTORY - event_count) %
	    EVENT_HISTORY];
	event_bytes -= event_cost(r);
	r->len = 0;
	r->has = 0;
	if (!reuse || r->cap > EVENT_SLOT_KEEP) {
		free(r->text);
		r->text = NULL;
		r->cap = 0;
	}
	if (!reuse || r->kcap > EVENT_KEYS_KEEP) {
		free(r->keys);
		r->keys = NULL;
		r->kcap = 0;
	}
	event_count--;
}

/*
 * Make room for need bytes at a slot's buffer, growing it.  No more than
 * asked: most events are kept once and never reused, one per agent
 * start and state change, so slack would cost memory per agent.
 */
static void
event_store(char **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return;
	*cap = need;
	*buf = xreallocarray(*buf, 1, *cap);
}

/* Record an event in the audit log, with what replay's filters need. */
static void
event_audit(const struct event_info *ei, const struct event_rec *r)
{
	struct jsonw	 j;
	char		*s;
	size_t		 len;

	if (!auditlog_enabled())
		return;
	jsonw_init(&j);
	jsonw_object(&j);
	if (r->srole != NULL) {
		jsonw_key(&j, "srole");
		jsonw_str(&j, r->srole);
	}
	if (r->arole != NULL) {
		jsonw_key(&j, "arole");
		jsonw_str(&j, r->arole);
	}
	/* Last, so that replay can take its bytes as they are. */
	jsonw_key(&j, "event");
	jsonw_raw(&j, r->text, r->len);
	jsonw_object_end(&j);
	s = jsonw_finish(&j, &len);
	auditlog_fields("map_event", ei->agent, NULL, s, len);
	free(s);
}

/*
 * Take the next slot of the ring for an event ei describes: its id, its
 * time, the keys and roles the filters read.
 */
static struct event_rec *
event_slot(const struct event_info *ei)
{
	struct event_rec	*r;
	char			*p;
	size_t			 kl;

	if (event_ring == NULL)
		event_ring = xcalloc(EVENT_HISTORY, sizeof *event_ring);
	if (event_count == EVENT_HISTORY)
		event_evict(1);
	r = &event_ring[event_head];
	event_head = (event_head + 1) % EVENT_HISTORY;
	event_count++;
	event_total++;

	event_new_id(r->id);
	r->ms = event_now_ms();
	r->type = ei->type;
	r->srole = ei->source_role;
	r->arole = ei->agent_role;
	/* source, agent, corr: each NUL-terminated, empty when absent. */
	kl = (ei->source ? strlen(ei->source) : 0) + (ei->agent ?
	    strlen(ei->agent) : 0) + (ei->corr ? strlen(ei->corr) : 0) + 3;
	event_store(&r->keys, &r->kcap, kl);
	p = r->keys;
	p = stpcpy(p, ei->source ? ei->source : "") + 1;
	p = stpcpy(p, ei->agent ? ei->agent : "") + 1;
	(void)stpcpy(p, ei->corr ? ei->corr : "");
	r->has = (ei->source ? EV_SOURCE : 0) | (ei->agent ? EV_AGENT : 0) |
	    (ei->corr ? EV_CORR : 0);
	return r;
}

/* The data of an agent_state_changed event (a new string). */
static char *
event_state_data(const char *agent, const char *from, const char *to,
    const char *why, const char *cstate, size_t *len)
{
	struct jsonw	j;

	jsonw_init(&j);
	jsonw_object(&j);
	jsonw_key(&j, "agentId");
	jsonw_str(&j, agent);
	jsonw_key(&j, "previousState");
	jsonw_str(&j, from);
	jsonw_key(&j, "newState");
	jsonw_str(&j, to);
	if (why != NULL && *why != '\0') {
		jsonw_key(&j, "reason");
		jsonw_str(&j, why);
	}
	jsonw_key(&j, "corralState");
	jsonw_str(&j, cstate);
	jsonw_object_end(&j);
	return jsonw_finish(&j, len);
}

/*
 * Write the text of a lazy record, now that somebody reads it: exactly
 * what event_emit would have written.
 */
static void
event_materialize(struct event_rec *r)
{
	struct jsonw	 j;
	const char	*agent;
	char		*data, *text;
	size_t		 dlen, len;

	if (!(r->has & EV_LAZY))
		return;
	event_bytes -= event_cost(r);
	agent = event_key(r, EV_AGENT);
	data = event_state_data(agent, r->lz[0], r->lz[1], NULL, r->lz[2],
	    &dlen);
	jsonw_init(&j);
	jsonw_object(&j);
	jsonw_key(&j, "id");
	jsonw_str(&j, r->id);
	jsonw_key(&j, "type");
	jsonw_str(&j, r->type);
	jsonw_key(&j, "timestamp");
	jsonw_u64(&j, r->ms);
	jsonw_key(&j, "source");
	jsonw_str(&j, event_key(r, EV_SOURCE));
	jsonw_key(&j, "data");
	jsonw_raw(&j, data, dlen);
	jsonw_object_end(&j);
	text = jsonw_finish(&j, &len);
	free(data);
	event_store(&r->text, &r->cap, len + 1);
	memcpy(r->text, text, len + 1);
	free(text);
	r->len = len;
	r->has &= ~EV_LAZY;
	event_bytes += event_cost(r);
}

/*
 * Emit an agent_state_changed event: from, to and cstate are strings
 * that outlive the run (MAP's and corral's state names).  A change
 * nobody watches, without a reason and not for the audit log (busy and
 * idle), is kept as a lazy record.
 */
void
event_emit_state(const char *agent, const char *role, const char *from,
    const char *to, const char *cstate, const char *why, int audit)
{
	struct event_info	 ei;
	struct event_rec	*r;
	char			*data;
	size_t			 len;

	memset(&ei, 0, sizeof ei);
	ei.type = "agent_state_changed";
	ei.source = agent;
	ei.source_role = role;
	ei.agent = agent;
	ei.agent_role = role;
	ei.audit = audit;
	if (audit || (why != NULL && *why != '\0') ||
	    !TAILQ_EMPTY(&event_subs)) {
		data = event_state_data(agent, from, to, why, cstate, &len);
		event_emit(&ei, data, len);
		free(data);
		return;
	}
	r = event_slot(&ei);
	r->has |= EV_LAZY;
	r->lz[0] = from;
	r->lz[1] = to;
	r->lz[2] = cstate;
	r->len = 0;
	event_bytes += event_cost(r);
}

/*
 * Emit an event: type and source as ei says, data a JSON object built
 * with the JSON writer (or NULL).  It is kept for replay, written to the
 * audit log when ei asks, and delivered to every subscription it passes.
 */
void
event_emit(const struct event_info *ei, const char *data, size_t dlen)
{
	struct event_rec	*r;
	struct event_sub	*s;
	struct jsonw		 j;
	char			*text;
	size_t			 len;

	r = event_slot(ei);
	jsonw_init(&j);
	jsonw_object(&j);
	jsonw_key(&j, "id");
	jsonw_str(&j, r->id);
	jsonw_key(&j, "type");
	jsonw_str(&j, ei->type);
	jsonw_key(&j, "timestamp");
	jsonw_u64(&j, r->ms);
	if (ei->source != NULL) {
		jsonw_key(&j, "source");
		jsonw_str(&j, ei->source);
	}
	if (data != NULL) {
		jsonw_key(&j, "data");
		jsonw_raw(&j, data, dlen);
	}
	jsonw_object_end(&j);
	text = jsonw_finish(&j, &len);
	event_store(&r->text, &r->cap, len + 1);
	memcpy(r->text, text, len + 1);
	r->len = len;
	event_bytes += event_cost(r);
	free(text);
	/* The history is bounded in bytes too: payloads can be large. */
	while (event_bytes > EVENT_HISTORY_BYTES && event_count > 1)
		event_evict(0);

	if (ei->audit)
		event_audit(ei, r);
	TAILQ_FOREACH(s, &event_subs, entry)
		if (event_rec_match(s->filter, r) &&
		    event_sees(s->peer, ei->agent))
			event_deliver(s, r);
}

/* A peer's channel drained: subscriptions that missed events hear of it. */
void
event_drained(struct peer *p)
{
	struct event_sub	*s;

	TAILQ_FOREACH(s, &event_subs, entry)
		if (s->peer == p && s->dropped > 0 && !rpc_full(p))
			event_send_dropped(s);
}

/* Check a filter's shape; returns 0, or -1 with why. */
static int
event_filter_check(json_t *f, char *why, size_t len)
{
	static const char *const arrays[] = { "eventTypes", "fromAgents",
	    "fromRoles", "roles", "correlationIds", "scopes", NULL };
	json_t	*a, *x;
	size_t	 i, k;

	if (f == NULL)
		return 0;
	if (!json_is_object(f)) {
		snprintf(why, len, "filter must be an object");
		return -1;
	}
	for (k = 0; arrays[k] != NULL; k++) {
		if ((a = json_object_get(f, arrays[k])) == NULL)
			continue;
		if (!json_is_array(a)) {
			snprintf(why, len, "filter.%s must be an array of "
			    "strings", arrays[k]);
			return -1;
		}
		json_array_foreach(a, i, x)
			if (!json_is_string(x)) {
				snprintf(why, len, "filter.%s must be an array "
				    "of strings", arrays[k]);
				return -1;
			}
	}
	a = json_object_get(f, "metadataMatch");
	if (a != NULL && !json_is_object(a)) {
		snprintf(why, len, "filter.metadataMatch must be an object");
		return -1;
	}
	return 0;
}

/*
 * map/subscribe: a new subscription of the peer.  Its response is
 * written before any of its events (the SDK drops events of a
 * subscription it does not know yet).
 */
void
event_subscribe(struct peer *p, json_t *id, json_t *params)
{
	struct event_sub	*s;
	json_t			*f = json_object_get(params, "filter");
	char			 why[128];

	if (event_filter_check(f, why, sizeof why) != 0) {
		rpc_error(p, id, CORRAL_E_PARAMS, why, NULL);
		return;
	}
	if (p->nsubs >= EVENT_SUBS_MAX) {
		snprintf(why, sizeof why, "%s has %u subscriptions, the limit",
		    p->name, p->nsubs);
		rpc_error(p, id, CORRAL_E_EXHAUSTED, why, NULL);
		return;
	}
	s = xcalloc(1, sizeof *s);
	snprintf(s->id, sizeof s->id, "sub-%s-%llu", protocol_run_id(),
	    (unsigned long long)++event_sub_seq);
	s->peer = p;
	s->filter = f != NULL ? json_deep_copy(f) : NULL;
	rpc_reply(p, id, json_pack("{s:s}", "subscriptionId", s->id));
	TAILQ_INSERT_TAIL(&event_subs, s, entry);
	p->nsubs++;
	log_debug("%s: subscribed (%s)", p->name, s->id);
}

/* End one subscription. */
static void
event_sub_free(struct event_sub *s)
{
	TAILQ_REMOVE(&event_subs, s, entry);
	s->peer->nsubs--;
	json_decref(s->filter);
	free(s);
}

/* map/unsubscribe: idempotent, an unknown id is answered the same. */
void
event_unsubscribe(struct peer *p, json_t *id, json_t *params)
{
	struct event_sub	*s;
	json_t			*sid = json_object_get(params, "subscriptionId");

	if (!json_is_string(sid)) {
		rpc_error(p, id, CORRAL_E_PARAMS, "params.subscriptionId must "
		    "be a string", NULL);
		return;
	}
	TAILQ_FOREACH(s, &event_subs, entry)
		if (s->peer == p && strcmp(s->id, json_string_value(sid)) == 0) {
			event_sub_free(s);
			break;
		}
	rpc_reply(p, id, json_pack("{s:{s:O, s:I}}", "subscription", "id", sid,
	    "closedAt", (json_int_t)event_now_ms()));
}

/* A peer is gone (or its process is): its subscriptions end. */
void
event_peer_gone(struct peer *p)
{
	struct event_sub	*s, *next;

	TAILQ_FOREACH_SAFE(s, &event_subs, entry, next)
		if (s->peer == p)
			event_sub_free(s);
}

/* How many events were emitted, and dropped for slow subscribers. */
void
event_counts(uint64_t *emitted, uint64_t *dropped, unsigned int *subs)
{
	struct event_sub	*s;
	unsigned int		 n = 0;

	TAILQ_FOREACH(s, &event_subs, entry)
		n++;
	*emitted = event_total;
	*dropped = event_dropped_total;
	*subs = n;
}

/* A replay in progress: what it asked for and what it found. */
struct event_replay {
	const char	*after;		/* NULL: from fromTimestamp */
	uint64_t	 from;
	uint64_t	 to;		/* 0: no end */
	json_t		*filter;
	const struct peer *peer;	/* who asked */
	size_t		 limit;
	size_t		 total;		/* how many matched */
	struct jsonw	 out;		/* the events array, being built */
};

/* Is an event in the span a replay asks for? */
static int
event_replay_in(struct event_replay *rp, const char *id, uint64_t ms)
{
	if (rp->after != NULL ? strcmp(id, rp->after) <= 0 : ms < rp->from)
		return 0;
	return rp->to == 0 || ms <= rp->to;
}

/* Consider one event for a replay. */
static void
event_replay_one(struct event_replay *rp, const char *id, uint64_t ms,
    const char *text, size_t len, int match)
{
	if (!event_replay_in(rp, id, ms) || !match)
		return;
	if (rp->total++ >= rp->limit)
		return;
	/*
	 * An answer is bounded in bytes too (events carry payloads): the
	 * rest is for the next call, which hasMore says to make.
	 */
	if (rp->total > 1 && ndjson_writer_queued(&rp->out.w) >=
	    EVENT_REPLAY_BYTES) {
		rp->limit = rp->total - 1;
		return;
	}
	jsonw_object(&rp->out);
	jsonw_key(&rp->out, "eventId");
	jsonw_str(&rp->out, id);
	jsonw_key(&rp->out, "timestamp");
	jsonw_u64(&rp->out, ms);
	jsonw_key(&rp->out, "event");
	jsonw_raw(&rp->out, text, len);
	jsonw_object_end(&rp->out);
}

/*
 * Read the events of this run that are older than the ring, oldest
 * first, from the audit log, and consider each for the replay.
 */
static void
event_replay_log(struct event_replay *rp, const char *before)
{
	json_error_t	 e;
	json_t		*j, *ev;
	FILE		*f;
	char		*line = NULL, *raw, *end;
	const char	*id, *type, *run;
	size_t		 cap = 0;
	ssize_t		 n;
	int		 ours = 0;

	auditlog_flush();
	if ((f = fopen(event_log, "r")) == NULL) {
		log_warn("map/replay: %s", event_log);
		return;
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		if (strstr(line, "\"ev\":\"run_start\"") != NULL) {
			if ((j = json_loadb(line, (size_t)n, 0, &e)) == NULL)
				continue;
			run = json_string_value(json_object_get(j, "run"));
			ours = run != NULL && strcmp(run,
			    protocol_run_id()) == 0;
			json_decref(j);
			continue;
		}
		if (!ours || strstr(line, "\"ev\":\"map_event\"") == NULL)
			continue;
		/* The event's bytes, as they went out: the line's last member. */
		if ((raw = strstr(line, ",\"event\":{\"id\":\"")) == NULL ||
		    (end = strrchr(line, '}')) == NULL || end <= raw + 9)
			continue;
		raw += 9;
		if ((j = json_loadb(line, (size_t)n, 0, &e)) == NULL)
			continue;
		ev = json_object_get(j, "event");
		id = json_string_value(json_object_get(ev, "id"));
		type = json_string_value(json_object_get(ev, "type"));
		if (id != NULL && type != NULL && strcmp(id, before) < 0 &&
		    event_sees(rp->peer, json_string_value(json_object_get(j,
		    "agent"))))
			event_replay_one(rp, id, (uint64_t)json_integer_value(
			    json_object_get(ev, "timestamp")), raw,
			    (size_t)(end - raw),
			    event_filter_match(rp->filter, type,
			    json_string_value(json_object_get(ev, "source")),
			    json_string_value(json_object_get(j, "srole")),
			    json_string_value(json_object_get(json_object_get(ev,
			    "data"), "agentId")),
			    json_string_value(json_object_get(j, "arole")),
			    json_string_value(json_object_get(json_object_get(ev,
			    "data"), "correlationId")), raw,
			    (size_t)(end - raw)));
		json_decref(j);
	}
	free(line);
	fclose(f);
}

/* Read a timestamp parameter: an integer >= 0, or absent (dflt). */
static int
event_param_ms(json_t *params, const char *key, uint64_t dflt, uint64_t *out)
{
	json_t	*v = json_object_get(params, key);

	*out = dflt;
	if (v == NULL)
		return 0;
	if (!json_is_number(v) || json_number_value(v) < 0)
		return -1;
	*out = (uint64_t)json_number_value(v);
	return 0;
}

/*
 * map/replay: the events after afterEventId (or from fromTimestamp), up
 * to toTimestamp, that pass the filter, oldest first, at most limit of
 * them.  The ring has the last EVENT_HISTORY; older ones come from the
 * audit log when the run has one.
 */
void
event_replay(struct peer *p, json_t *id, json_t *params)
{
	struct event_replay	 rp;
	struct event_rec	*r, *oldest;
	struct jsonw		 j;
	json_t			*v;
	char			 why[128], *ids, *s;
	size_t			 i, len;

	if (id == NULL)
		return;		/* a notification: nothing to answer */
	memset(&rp, 0, sizeof rp);
	rp.peer = p;
	v = json_object_get(params, "afterEventId");
	if (v != NULL && !json_is_string(v) && !json_is_null(v)) {
		rpc_error(p, id, CORRAL_E_PARAMS, "afterEventId must be a "
		    "string", NULL);
		return;
	}
	rp.after = json_string_value(v);
	rp.filter = json_object_get(params, "filter");
	if (event_param_ms(params, "fromTimestamp", 0, &rp.from) != 0 ||
	    event_param_ms(params, "toTimestamp", 0, &rp.to) != 0) {
		rpc_error(p, id, CORRAL_E_PARAMS, "fromTimestamp and toTimestamp "
		    "must be milliseconds since the epoch", NULL);
		return;
	}
	if (event_filter_check(rp.filter, why, sizeof why) != 0) {
		rpc_error(p, id, CORRAL_E_PARAMS, why, NULL);
		return;
	}
	rp.limit = 100;
	v = json_object_get(params, "limit");
	if (json_is_integer(v))
		rp.limit = json_integer_value(v) < 1 ? 1 :
		    json_integer_value(v) > EVENT_REPLAY_LIMIT ?
		    EVENT_REPLAY_LIMIT : (size_t)json_integer_value(v);

	jsonw_init(&rp.out);
	jsonw_array(&rp.out);
	oldest = event_count > 0 ? &event_ring[(event_head + EVENT_HISTORY -
	    event_count) % EVENT_HISTORY] : NULL;
	/* Events older than the ring exist only when it went round. */
	if (event_log != NULL && oldest != NULL && event_total > event_count &&
	    (rp.after != NULL ? strcmp(rp.after, oldest->id) < 0 :
	    rp.from < oldest->ms))
		event_replay_log(&rp, oldest->id);
	for (i = 0; i < event_count; i++) {
		r = &event_ring[(event_head + EVENT_HISTORY - event_count + i) %
		    EVENT_HISTORY];
		if (!event_replay_in(&rp, r->id, r->ms) ||
		    !event_rec_match(rp.filter, r) ||
		    !event_sees(p, event_key(r, EV_AGENT)))
			continue;
		if (rp.total < rp.limit)
			event_materialize(r);
		event_replay_one(&rp, r->id, r->ms, r->text, r->len, 1);
	}
	jsonw_array_end(&rp.out);
	s = jsonw_finish(&rp.out, &len);

	/* The response, with the events as they went out. */
	ids = json_dumps(id, JSON_ENCODE_ANY | CORRAL_JSON_FLAGS);
	jsonw_init(&j);
	jsonw_object(&j);
	jsonw_key(&j, "jsonrpc");
	jsonw_str(&j, "2.0");
	jsonw_key(&j, "id");
	jsonw_raw(&j, ids, strlen(ids));
	jsonw_key(&j, "result");
	jsonw_object(&j);
	jsonw_key(&j, "events");
	jsonw_raw(&j, s, len);
	jsonw_key(&j, "hasMore");
	jsonw_bool(&j, rp.total > rp.limit);
	jsonw_key(&j, "totalCount");
	jsonw_u64(&j, rp.total);
	jsonw_object_end(&j);
	jsonw_object_end(&j);
	free(s);
	free(ids);
	s = jsonw_finish(&j, &len);
	rpc_reply_text(p, s, len);
	free(s);
}
