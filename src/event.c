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
 * Most events are about agents (registered, state changes), and the
 * history holds every agent's start events, so they are what an idle
 * agent costs.  An event whose data is an object of strings is kept as a
 * compact record (its keys and the strings, NUL-separated), and its text
 * is written again only when a replay or a filter on metadata reads it:
 * the same bytes, by the same writer.  A busy/idle change nobody
 * subscribes to (the hot path) is never written at all; one that goes to
 * a subscriber or to the audit log is written once, sent, and forgotten.
 * An agent's first state change, which follows its agent_registered at
 * once (the next id), shares that event's record: one slot and one
 * buffer, its keys kept once.  The history still counts, evicts and
 * replays them as two events.  While the agent lives, the pair keeps
 * its id rather than a copy (its emitter lends it: event_release ends
 * the loan), and the rest of its keys and values, the same for every
 * instance of an agent, in a buffer the pairs share (struct event_tail).
 *
 * This module knows peers, not agents: whoever emits an event says who
 * its source is and the roles the filters need.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "event-int.h"

_Static_assert(EVENT_SUBS_MAX <= UINT8_MAX, "a peer counts them in 8 bits");

#define EVENT_HISTORY		10000	/* events kept for map/replay */
#define EVENT_HISTORY_BYTES	(16 * 1024 * 1024)	/* and their bytes */
#define EVENT_DATA_MAX		((size_t)UINT32_MAX / 2) /* an event's data */
#define EVENT_SLOT_KEEP		512	/* a slot keeps a buffer this big */
#define EVENT_KEYS_KEEP		256	/* and a keys buffer this big */
#define EVENT_LAZY_BYTES	192	/* what a lazy event is counted as */

/*
 * A record of the ring, one for each agent that starts: kept small, with
 * its id's bits rather than its 26 characters and 32-bit sizes (an event
 * is far below 4 GiB: its parts are bounded by max_line, at most 256 MiB).
 */
struct event_rec {
	uint8_t		 id[16];	/* a ULID's bits (event_rec_id) */
	uint32_t	 kcap;
	uint32_t	 len;
	uint32_t	 cap;
	uint32_t	 has;		/* which of the keys are there */
#define EV_SOURCE	0x01
#define EV_AGENT	0x02
#define EV_CORR		0x04
#define EV_LAZY		0x08	/* flat data whose text waits */
#define EV_PAIR		0x10	/* and the state change that followed it */
#define EV_SAME		0x20	/* the agent is the source: its key kept once */
#define EV_BORROW	0x40	/* keys: the source, lent; text: the rest */
#define EV_IS_AGENT	0x1000000	/* value 0 is the agent: not kept */
#define EV_IS_AGENT2	0x2000000	/* and of a pair's second */
	uint64_t	 ms;
	const char	*type;		/* a literal */
	const char	*srole;		/* role of the source; outlives us */
	const char	*arole;		/* role of data.agentId */
	char		*text;		/* the Event object */
	char		*keys;		/* source, agent, corr: NUL-separated */
#define EV_VAL(i)	(0x100 << (i))	/* value i of its shape is there */
#define EV_VAL2(i)	(0x10000 << (i))	/* value i of the second's */
	/* Lazy: its data's member names ("?": left out when absent). */
	const char *const *shape;
};
#define EVENT_FLAT_MAX	8	/* members of a flat event's data */
#define EV_VALS		0xff00		/* the EV_VAL bits */
#define EV_KEYS		(EV_SOURCE | EV_AGENT | EV_CORR | EV_SAME)

/* The members of an agent_state_changed event's data. */
static const char *const event_state_shape[] = {
	"agentId", "previousState", "newState", "?reason", "corralState",
	NULL
};

struct event_sub {
	char			 id[32];
	struct peer		*peer;
	struct event_filter	*filter;	/* NULL: everything */
	uint64_t		 seq;
	uint64_t		 dropped;
	char			 first_dropped[EVENT_ID_LEN + 1];
	char			 last_dropped[EVENT_ID_LEN + 1];
	TAILQ_ENTRY(event_sub)	 entry;
};

static struct event_rec		*event_ring;	/* EVENT_HISTORY slots */
static size_t			 event_head;	/* the next slot */
static size_t			 event_count;	/* slots in use */
static size_t			 event_nevents;	/* events: a pair is two */
static size_t			 event_bytes;	/* the ring's buffers (event_cost) */
static uint64_t			 event_total;
static uint64_t			 event_dropped_total;
static TAILQ_HEAD(, event_sub)	 event_subs =
				    TAILQ_HEAD_INITIALIZER(event_subs);
static uint64_t			 event_sub_seq;
static uint8_t			 event_ulid[16];
static uint64_t			 event_ulid_ms;
static uint8_t			 event_rand[240];	/* for new ids */
static size_t			 event_randn;	/* bytes of it unused */
static event_visible_cb		 event_visible;	/* may a peer see an agent */

static const char event_b32[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/*
 * What a borrowed record keeps after its source: the agent and corr keys
 * and its values, shared by every record with the same bytes (an agent's
 * instances start alike), counted, found by a hash of the bytes.
 */
struct event_tail {
	struct event_tail	*next;
	uint32_t		 refs;
	uint32_t		 len;
	uint32_t		 hash;
	char			 bytes[];
};
static struct event_tail	**event_tails;	/* a power of two, or NULL */
static size_t			  event_tailsz;
static size_t			  event_ntails;

static char	*event_render(const struct event_rec *, size_t *);
static void	 event_unpair(struct event_rec *);
static void	 event_lend(struct event_rec *, const char *);
static size_t	 event_vals_len(const struct event_rec *, size_t,
		    const char *const *, uint32_t);
static struct event_rec *event_emit_rec(const struct event_info *,
		    const char *, size_t, size_t);
static void	 event_tail_put(const char *);

/* FNV-1a of a tail's bytes. */
static uint32_t
event_tail_hash(const char *b, size_t len)
{
	uint32_t	h = 2166136261U;
	size_t		i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)b[i]) * 16777619U;
	return h;
}

/* Double the table of tails. */
static void
event_tails_grow(void)
{
	struct event_tail	**old = event_tails, *t, *next;
	size_t			  oldsz = event_tailsz, i;

	event_tailsz = oldsz != 0 ? oldsz * 2 : 64;
	event_tails = xcalloc(event_tailsz, sizeof *event_tails);
	for (i = 0; i < oldsz; i++)
		for (t = old[i]; t != NULL; t = next) {
			next = t->next;
			t->next = event_tails[t->hash & (event_tailsz - 1)];
			event_tails[t->hash & (event_tailsz - 1)] = t;
		}
	free(old);
}

/* The shared copy of len bytes, counted once more: its bytes. */
static char *
event_tail_get(const char *b, size_t len)
{
	struct event_tail	*t, **c;
	uint32_t		 h = event_tail_hash(b, len);

	if (event_tailsz != 0)
		for (t = event_tails[h & (event_tailsz - 1)]; t != NULL;
		    t = t->next)
			if (t->hash == h && t->len == len &&
			    memcmp(t->bytes, b, len) == 0) {
				t->refs++;
				return t->bytes;
			}
	if (event_ntails + 1 > event_tailsz)
		event_tails_grow();
	t = xmalloc(sizeof *t + len);
	t->refs = 1;
	t->len = (uint32_t)len;
	t->hash = h;
	memcpy(t->bytes, b, len);
	c = &event_tails[h & (event_tailsz - 1)];
	t->next = *c;
	*c = t;
	event_ntails++;
	return t->bytes;
}

/* A record lets go of a shared tail (its bytes); the last frees it. */
static void
event_tail_put(const char *bytes)
{
	struct event_tail	*t, **c;

	t = (struct event_tail *)(void *)((char *)(uintptr_t)bytes -
	    offsetof(struct event_tail, bytes));
	if (--t->refs > 0)
		return;
	for (c = &event_tails[t->hash & (event_tailsz - 1)]; *c != t;
	    c = &(*c)->next)
		;
	*c = t->next;
	free(t);
	if (--event_ntails == 0) {
		free(event_tails);
		event_tails = NULL;
		event_tailsz = 0;
	}
}

/* A borrowed record's keys as one buffer, as an own record keeps them. */
static char *
event_join(const struct event_rec *r)
{
	size_t	sl = strlen(r->keys) + 1;
	char	*k = xmalloc(r->kcap);

	memcpy(k, r->keys, sl);
	memcpy(k + sl, r->text, r->kcap - sl);
	return k;
}

/*
 * A record as its readers take it: a borrowed one as a copy whose keys
 * are one buffer, which the caller frees (returns 1), else itself.
 */
static int
event_view(const struct event_rec *r, struct event_rec *v)
{
	*v = *r;
	if (!(r->has & EV_BORROW))
		return 0;
	v->keys = event_join(r);
	v->text = NULL;
	v->has &= ~EV_BORROW;
	return 1;
}

/* A borrowed record takes its own copy of its keys (its source goes). */
static void
event_own(struct event_rec *r)
{
	char	*k;

	if (!(r->has & EV_BORROW))
		return;
	k = event_join(r);
	event_tail_put(r->text);
	r->text = NULL;
	r->keys = k;
	r->has &= ~EV_BORROW;
}

/* Forget every event and subscription (a new run; the tests set up many). */
void
event_init(void)
{
	struct event_sub	*s;
	size_t			 i;

	while ((s = TAILQ_FIRST(&event_subs)) != NULL) {
		TAILQ_REMOVE(&event_subs, s, entry);
		event_filter_free(s->filter);
		free(s);
	}
	if (event_ring != NULL) {
		for (i = 0; i < EVENT_HISTORY; i++) {
			if (event_ring[i].has & EV_BORROW) {
				event_tail_put(event_ring[i].text);
				continue;
			}
			free(event_ring[i].text);
			free(event_ring[i].keys);
		}
		free(event_ring);
		event_ring = NULL;
	}
	event_head = event_count = event_nevents = event_bytes = 0;
	event_total = event_dropped_total = 0;
	event_log_init();
}

/*
 * Read older events back from this audit log (NULL: none), whose lines
 * are at most maxline bytes.
 */
void
event_set_log(const char *path, size_t maxline)
{
	event_log_set(path, maxline);
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
int
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
 * Ten random bytes for an id of a new millisecond, from a pool filled 24
 * at a time: arc4random_buf may be a getrandom(2) each call (glibc 2.36
 * to 2.40), and a busy corral starts a new millisecond every millisecond.
 */
static void
event_random(uint8_t *b)
{
	if (event_randn < 10) {
		arc4random_buf(event_rand, sizeof event_rand);
		event_randn = sizeof event_rand;
	}
	event_randn -= 10;
	memcpy(b, event_rand + event_randn, 10);
}

/*
 * Make a new id's 128 bits: a ULID, greater than every one made before it
 * in this process (the same millisecond counts the random part up; a
 * clock that went back is ignored).
 */
static void
event_new_ulid(uint8_t *b)
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
			event_random(event_ulid + 6);
			event_ulid[6] &= 0x7f;
		}
	} else {
		event_ulid_ms = ms;
		event_random(event_ulid + 6);
		/* Room to count up in the same millisecond. */
		event_ulid[6] &= 0x7f;
	}
	for (i = 0; i < 6; i++)
		event_ulid[i] = (uint8_t)(event_ulid_ms >> (8 * (5 - i)));
	memcpy(b, event_ulid, sizeof event_ulid);
}

/* Make a new id (event_new_ulid), as its 26 characters. */
void
event_new_id(char *out)
{
	uint8_t	b[16];

	event_new_ulid(b);
	event_ulid_encode(b, out);
}

/* A record's id, as its 26 characters. */
static void
event_rec_id(const struct event_rec *r, char *out)
{
	event_ulid_encode(r->id, out);
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

/* The key of a record: source, agent or correlation id, or NULL. */
static const char *
event_key(const struct event_rec *r, int which)
{
	const char	*p = r->keys;

	if (!(r->has & which))
		return NULL;
	if (which == EV_AGENT && (r->has & EV_SAME))
		which = EV_SOURCE;
	/* The keys are stored in this order, each NUL-terminated. */
	if (which == EV_SOURCE)
		return p;
	p += strlen(p) + 1;
	if (which == EV_AGENT)
		return p;
	p += strlen(p) + 1;
	return p;
}

/* What a filter reads of a record (its text only when it is written). */
static void
event_rec_fields(struct event_rec *r, struct event_fields *e)
{
	memset(e, 0, sizeof *e);
	e->type = r->type;
	e->source = event_key(r, EV_SOURCE);
	e->srole = r->srole;
	e->agent = event_key(r, EV_AGENT);
	e->arole = r->arole;
	e->corr = event_key(r, EV_CORR);
	e->text = r->text;
	e->len = r->len;
}

/* Does a record pass a filter? */
static int
event_rec_match(const struct event_filter *f, struct event_rec *r)
{
	struct event_fields	e;
	char			*text = NULL;
	size_t			 len = 0;
	int			ok;

	event_rec_fields(r, &e);
	/* A filter on metadata reads the text: a lazy record's, for now. */
	if ((r->has & EV_LAZY) &&
	    (event_filter_fields(f) & EVENT_FIELDS_TEXT)) {
		text = event_render(r, &len);
		e.text = text;
		e.len = len;
	}
	ok = event_filter_match(f, &e);
	event_fields_done(&e);
	free(text);
	return ok;
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
event_deliver(struct event_sub *s, const struct event_rec *r, const char *id)
{
	if (rpc_full(s->peer)) {
		if (s->dropped++ == 0)
			strlcpy(s->first_dropped, id,
			    sizeof s->first_dropped);
		strlcpy(s->last_dropped, id, sizeof s->last_dropped);
		event_dropped_total++;
		return;
	}
	if (s->dropped > 0)
		event_send_dropped(s);
	event_send(s, id, r->ms, r->text, r->len);
}

/*
 * What an event costs: its buffers as allocated (a lazy record counts as
 * the text it stands for).  The history's byte limit counts these, so
 * it bounds the ring's memory, not only its events' lengths.
 */
static size_t
event_cost(const struct event_rec *r)
{
	return (size_t)r->cap + r->kcap + ((r->has & EV_LAZY) ?
	    EVENT_LAZY_BYTES : 0) + ((r->has & EV_PAIR) ? EVENT_LAZY_BYTES : 0);
}

/* The id after b, in place: the next ULID of the same millisecond. */
static void
event_ulid_next(uint8_t *b)
{
	int	i;

	for (i = 15; i >= 0; i--)
		if (++b[i] != 0)
			break;
}

/*
 * Where a lazy record's values start in its keys buffer (after source,
 * agent and corr), or with second, where a pair's second event's start.
 */
static size_t
event_vals_at(const struct event_rec *r, int second)
{
	size_t	off = 0, i;

	for (i = 0; i < 3; i++)
		off += strlen(r->keys + off) + 1;
	if (second)
		off += event_vals_len(r, off, r->shape, r->has);
	return off;
}

/*
 * The bytes of the values a record keeps of shape, from at in its keys:
 * those bits says are there, but the first when it is the agent's key.
 */
static size_t
event_vals_len(const struct event_rec *r, size_t at,
    const char *const *shape, uint32_t bits)
{
	size_t	vl = 0, i;

	for (i = 0; shape[i] != NULL; i++)
		if ((bits & EV_VAL(i)) && (i > 0 || !(bits & EV_IS_AGENT)))
			vl += strlen(r->keys + at + vl) + 1;
	return vl;
}

/*
 * A pair's second event as a record of its own, for a reader or for the
 * slot once the first is evicted: its keys and values are copied into
 * v->keys, which the caller owns.
 */
static void
event_second(const struct event_rec *r, struct event_rec *v)
{
	size_t		kl, at, vl;
	uint32_t	bits = ((r->has >> 8) & EV_VALS) |
			    ((r->has & EV_IS_AGENT2) ? EV_IS_AGENT : 0);

	*v = *r;
	kl = event_vals_at(r, 0);
	at = event_vals_at(r, 1);
	vl = event_vals_len(r, at, event_state_shape, bits);
	v->kcap = (uint32_t)(kl + vl);
	v->keys = xmalloc(v->kcap);
	memcpy(v->keys, r->keys, kl);
	memcpy(v->keys + kl, r->keys + at, vl);
	event_ulid_next(v->id);
	v->type = "agent_state_changed";
	v->shape = event_state_shape;
	v->has = (r->has & EV_KEYS) | EV_LAZY | bits;
}

/* The oldest event of a pair is evicted: the slot keeps the second. */
static void
event_unpair(struct event_rec *r)
{
	struct event_rec	v;

	event_own(r);
	event_bytes -= event_cost(r);
	event_second(r, &v);
	free(r->keys);
	*r = v;
	event_bytes += event_cost(r);
}

/*
 * Keep the state change r (the newest record, lazy) in the slot of the
 * agent_registered event it follows at once: the two events every
 * agent's start makes take one slot and one buffer, and the keys they
 * share are kept once.  Readers still see two events (event_second).
 */
static void
event_pair(struct event_rec *r)
{
	struct event_rec	*prev;
	const char		*lent;
	uint8_t			 next[16];
	size_t			 kl, used, vl;

	if (event_count < 2)
		return;
	prev = &event_ring[(event_head + EVENT_HISTORY - 2) % EVENT_HISTORY];
	if ((prev->has & (EV_LAZY | EV_PAIR)) != EV_LAZY ||
	    strcmp(prev->type, "agent_registered") != 0 ||
	    prev->ms != r->ms || prev->srole != r->srole ||
	    prev->arole != r->arole ||
	    (prev->has & EV_KEYS) != (r->has & EV_KEYS))
		return;
	/* The id a reader gives the second is the first's plus one. */
	memcpy(next, prev->id, sizeof next);
	event_ulid_next(next);
	if (memcmp(next, r->id, sizeof next) != 0)
		return;
	/* A lent source: its keys as one buffer meanwhile, lent again after. */
	lent = (prev->has & EV_BORROW) ? prev->keys : NULL;
	event_own(prev);
	kl = event_vals_at(r, 0);
	if (event_vals_at(prev, 0) != kl ||
	    memcmp(prev->keys, r->keys, kl) != 0) {
		if (lent != NULL)
			event_lend(prev, lent);
		return;
	}
	used = event_vals_at(prev, 1);
	vl = event_vals_len(r, kl, r->shape, r->has);
	event_bytes -= event_cost(prev) + event_cost(r);
	if (used + vl > prev->kcap) {
		prev->kcap = (uint32_t)(used + vl);
		prev->keys = xreallocarray(prev->keys, 1, prev->kcap);
	}
	memcpy(prev->keys + used, r->keys + kl, vl);
	prev->has |= EV_PAIR | (r->has & EV_VALS) << 8 |
	    ((r->has & EV_IS_AGENT) ? EV_IS_AGENT2 : 0);
	event_bytes += event_cost(prev);
	/* r's slot is free again; the history still counts two events. */
	free(r->keys);
	free(r->text);
	memset(r, 0, sizeof *r);
	event_head = (event_head + EVENT_HISTORY - 1) % EVENT_HISTORY;
	event_count--;
	if (lent != NULL)
		event_lend(prev, lent);
}

/* The bytes an own lazy record's keys hold: keys, values, its pair's. */
static size_t
event_keys_used(const struct event_rec *r)
{
	size_t		at = event_vals_at(r, 1);
	uint32_t	bits = ((r->has >> 8) & EV_VALS) |
			    ((r->has & EV_IS_AGENT2) ? EV_IS_AGENT : 0);

	if (!(r->has & EV_PAIR))
		return at;
	return at + event_vals_len(r, at, event_state_shape, bits);
}

/*
 * Keep an own lazy record's source as lent (the emitter's string, until
 * event_release) and the rest of its keys in a shared tail: an agent's
 * start events cost no buffer of their own while it lives.
 */
static void
event_lend(struct event_rec *r, const char *source)
{
	size_t	sl = strlen(source) + 1, used = event_keys_used(r);

	event_bytes -= event_cost(r);
	r->text = event_tail_get(r->keys + sl, used - sl);
	free(r->keys);
	r->keys = (char *)(uintptr_t)source;
	r->kcap = (uint32_t)used;
	r->has |= EV_BORROW;
	event_bytes += event_cost(r);
}

/* The slot of the ring's newest record: where a lent source is kept. */
uint32_t
event_lent_slot(void)
{
	return (uint32_t)((event_head + EVENT_HISTORY - 1) % EVENT_HISTORY);
}

/*
 * The emitter of a lent source is done with it (an agent is freed): the
 * record in slot that keeps it (if it still does) takes its own copy.
 */
void
event_release(const char *source, uint32_t slot)
{
	struct event_rec	*r;

	if (event_ring == NULL || slot >= EVENT_HISTORY)
		return;
	r = &event_ring[slot];
	if ((r->has & EV_BORROW) && r->keys == source)
		event_own(r);
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
	event_nevents--;
	if (r->has & EV_PAIR) {
		/* Its first event goes; the state change keeps the slot. */
		event_unpair(r);
		return;
	}
	event_bytes -= event_cost(r);
	if (r->has & EV_BORROW) {
		/* Neither buffer is its own. */
		event_tail_put(r->text);
		r->text = r->keys = NULL;
		r->cap = r->kcap = 0;
	}
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
event_store(char **buf, uint32_t *cap, size_t need)
{
	if (need <= *cap)
		return;
	/* Our invariant: event_emit_rec bounds an event's data. */
	if (need > UINT32_MAX)
		fatalx("event_store: an event of %zu bytes", need);
	*cap = (uint32_t)need;
	*buf = xreallocarray(*buf, 1, *cap);
}

/* Record an event in the audit log, with what replay's filters need. */
static void
event_audit(const struct event_info *ei, const struct event_rec *r,
    const char *id)
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
	/* Where its line starts: the index of replays that read the log. */
	event_log_audited(id, r->ms, auditlog_offset());
	auditlog_fields("map_event", ei->agent, NULL, s, len);
	free(s);
}

/* The agent key a record keeps of ei: NULL when none, or the source's. */
static const char *
event_agent_key(const struct event_info *ei)
{
	if (ei->agent == NULL || (ei->source != NULL &&
	    strcmp(ei->agent, ei->source) == 0))
		return NULL;
	return ei->agent;
}

/*
 * Take the next slot of the ring for an event ei describes: its id, its
 * time, the keys and roles the filters read, and room for extra bytes
 * after the keys (a lazy record's values: one allocation, made to fit).
 */
static struct event_rec *
event_slot(const struct event_info *ei, size_t extra)
{
	struct event_rec	*r;
	const char		*agent;
	char			*p;
	size_t			 kl;

	if (event_ring == NULL)
		event_ring = xcalloc(EVENT_HISTORY, sizeof *event_ring);
	/*
	 * The history keeps EVENT_HISTORY events, a pair counting two; a
	 * full ring of slots holds no pair, so its oldest slot is freed.
	 */
	if (event_nevents == EVENT_HISTORY)
		event_evict(event_count == EVENT_HISTORY);
	r = &event_ring[event_head];
	event_head = (event_head + 1) % EVENT_HISTORY;
	event_count++;
	event_nevents++;
	event_total++;

	event_new_ulid(r->id);
	r->ms = event_now_ms();
	r->type = ei->type;
	r->srole = ei->source_role;
	r->arole = ei->agent_role;
	/*
	 * source, agent, corr: each NUL-terminated, empty when absent; the
	 * agent empty too when it is the source (most events).
	 */
	agent = event_agent_key(ei);
	kl = (ei->source ? strlen(ei->source) : 0) + (agent ? strlen(agent) :
	    0) + (ei->corr ? strlen(ei->corr) : 0) + 3;
	event_store(&r->keys, &r->kcap, kl + extra);
	p = r->keys;
	p = stpcpy(p, ei->source ? ei->source : "") + 1;
	p = stpcpy(p, agent ? agent : "") + 1;
	(void)stpcpy(p, ei->corr ? ei->corr : "");
	r->has = (ei->source ? EV_SOURCE : 0) | (ei->agent ? EV_AGENT : 0) |
	    (ei->corr ? EV_CORR : 0) | (ei->agent != NULL && agent == NULL ?
	    EV_SAME : 0);
	return r;
}

/*
 * The data of a flat event (a new string): an object of the members of
 * shape (NULL-terminated) whose values are there, in order; a missing
 * one is null, or left out when its name starts with '?'.
 */
static char *
event_flat_data(const char *const *shape, const char *const *vals,
    size_t *len)
{
	struct jsonw	j;
	const char	*k;
	size_t		i;

	jsonw_init(&j);
	jsonw_object(&j);
	for (i = 0; (k = shape[i]) != NULL; i++) {
		if (*k == '?' && vals[i] == NULL)
			continue;
		jsonw_key(&j, *k == '?' ? k + 1 : k);
		jsonw_str(&j, vals[i]);
	}
	jsonw_object_end(&j);
	return jsonw_finish(&j, len);
}

/* The text of an event (a new string): MAP's Event object. */
static char *
event_text(const struct event_rec *r, const char *source, const char *data,
    size_t dlen, size_t *len)
{
	struct jsonw	j;
	char		id[EVENT_ID_LEN + 1];

	event_rec_id(r, id);
	jsonw_init(&j);
	jsonw_object(&j);
	jsonw_key(&j, "id");
	jsonw_str(&j, id);
	jsonw_key(&j, "type");
	jsonw_str(&j, r->type);
	jsonw_key(&j, "timestamp");
	jsonw_u64(&j, r->ms);
	if (source != NULL) {
		jsonw_key(&j, "source");
		jsonw_str(&j, source);
	}
	if (data != NULL) {
		jsonw_key(&j, "data");
		jsonw_raw(&j, data, dlen);
	}
	jsonw_object_end(&j);
	return jsonw_finish(&j, len);
}

/* The values of a lazy record's data, read from its keys buffer. */
static void
event_lazy_vals(const struct event_rec *r, const char **vals)
{
	const char	*p = r->keys;
	size_t		 i;

	/* After source, agent and corr, each NUL-terminated. */
	for (i = 0; i < 3; i++)
		p += strlen(p) + 1;
	for (i = 0; r->shape[i] != NULL; i++) {
		if (!(r->has & EV_VAL(i)))
			vals[i] = NULL;
		else if (i == 0 && (r->has & EV_IS_AGENT))
			vals[i] = event_key(r, EV_AGENT);
		else {
			vals[i] = p;
			p += strlen(p) + 1;
		}
	}
}

/*
 * Make a record lazy: keep its data's values after its keys, and forget
 * its text (NULL: there is none yet).
 */
static void
event_lazy(struct event_rec *r, const char *const *shape,
    const char *const *vals)
{
	const char	*agent = event_key(r, EV_AGENT);
	size_t		 i, kl, vl;
	char		*p;
	int		 same;

	event_bytes -= event_cost(r);
	/* A first value that is the agent's key (agentId) is not kept. */
	same = agent != NULL && vals[0] != NULL && strcmp(vals[0], agent) == 0;
	for (kl = 0, i = 0; i < 3; i++)
		kl += strlen(r->keys + kl) + 1;
	for (vl = 0, i = same ? 1 : 0; shape[i] != NULL; i++)
		if (vals[i] != NULL)
			vl += strlen(vals[i]) + 1;
	if (kl + vl > r->kcap) {
		/* The values were in the record's text (event_store's bound). */
		r->kcap = (uint32_t)(kl + vl);
		r->keys = xreallocarray(r->keys, 1, r->kcap);
	}
	p = r->keys + kl;
	for (i = 0; shape[i] != NULL; i++)
		if (vals[i] != NULL) {
			if (i > 0 || !same)
				p = stpcpy(p, vals[i]) + 1;
			r->has |= EV_VAL(i);
		}
	if (same)
		r->has |= EV_IS_AGENT;
	free(r->text);
	r->text = NULL;
	r->cap = r->len = 0;
	r->shape = shape;
	r->has |= EV_LAZY;
	event_bytes += event_cost(r);
}

/*
 * Write the text of a lazy record for one reader: exactly what
 * event_emit wrote, or would have written.  The record stays compact, so
 * a replay of the whole history costs no memory once it is answered.
 */
static char *
event_render(const struct event_rec *r, size_t *len)
{
	const char	*vals[EVENT_FLAT_MAX];
	char		*data, *text;
	size_t		 dlen;

	event_lazy_vals(r, vals);
	data = event_flat_data(r->shape, vals, &dlen);
	text = event_text(r, event_key(r, EV_SOURCE), data, dlen, len);
	free(data);
	return text;
}

/*
 * Emit an event whose data is an object of strings: the members of shape
 * (NULL-terminated, at most EVENT_FLAT_MAX, literals that outlive the
 * run; see event_flat_data) with vals.  It is kept as a compact record.
 */
void
event_emit_flat(const struct event_info *ei, const char *const *shape,
    const char *const *vals)
{
	struct event_rec	*r;
	char			*data;
	size_t			 len, vl, i;

	/* The room its values take (event_lazy keeps agentId as a key). */
	i = shape[0] != NULL && vals[0] != NULL && ei->agent != NULL &&
	    strcmp(vals[0], ei->agent) == 0;
	for (vl = 0; shape[i] != NULL; i++)
		if (vals[i] != NULL)
			vl += strlen(vals[i]) + 1;
	if (i > EVENT_FLAT_MAX)
		fatalx("%s: %zu members, at most %d", __func__, i,
		    EVENT_FLAT_MAX);
	if (ei->audit || !TAILQ_EMPTY(&event_subs)) {
		data = event_flat_data(shape, vals, &len);
		r = event_emit_rec(ei, data, len, vl);
		free(data);
	} else {
		/* Nobody reads it now: its text waits for a replay. */
		r = event_slot(ei, vl);
		r->len = 0;
		event_bytes += event_cost(r);
	}
	event_lazy(r, shape, vals);
	if (shape == event_state_shape)
		event_pair(r);
	else if (ei->lend && ei->source != NULL)
		event_lend(r, ei->source);
}

/*
 * Emit an agent_state_changed event (why NULL or "": no reason).  Busy
 * and idle changes (audit 0) come and go with every request.
 */
void
event_emit_state(const char *agent, const char *role, const char *from,
    const char *to, const char *cstate, const char *why, int audit)
{
	struct event_info	 ei;
	const char		*vals[5];

	memset(&ei, 0, sizeof ei);
	ei.type = "agent_state_changed";
	ei.source = agent;
	ei.source_role = role;
	ei.agent = agent;
	ei.agent_role = role;
	ei.audit = audit;
	vals[0] = agent;
	vals[1] = from;
	vals[2] = to;
	vals[3] = why != NULL && *why != '\0' ? why : NULL;
	vals[4] = cstate;
	event_emit_flat(&ei, event_state_shape, vals);
}

/*
 * Emit an event: type and source as ei says, data a JSON object built
 * with the JSON writer (or NULL).  It is kept for replay, written to the
 * audit log when ei asks, and delivered to every subscription it passes.
 */
void
event_emit(const struct event_info *ei, const char *data, size_t dlen)
{
	(void)event_emit_rec(ei, data, dlen, 0);
}

/*
 * Emit an event (event_emit), with extra bytes of room after its keys,
 * and return its record in the history.
 */
static struct event_rec *
event_emit_rec(const struct event_info *ei, const char *data, size_t dlen,
    size_t extra)
{
	struct event_rec	*r;
	struct event_sub	*s;
	struct event_fields	 e;
	char			*text, id[EVENT_ID_LEN + 1];
	size_t			 len;

	/*
	 * A record's sizes are 32 bits.  Data comes from lines of at most
	 * 1 GiB, so this holds; should it not, the event goes out without
	 * its data rather than stop corral.
	 */
	if (dlen > EVENT_DATA_MAX) {
		log_warnx("event %s: its data (%zu bytes) is too large to keep; "
		    "sent without it", ei->type, dlen);
		data = NULL;
		dlen = 0;
	}
	r = event_slot(ei, extra);
	text = event_text(r, ei->source, data, dlen, &len);
	event_store(&r->text, &r->cap, len + 1);
	memcpy(r->text, text, len + 1);
	r->len = (uint32_t)len;
	event_bytes += event_cost(r);
	free(text);
	/* The history is bounded in bytes too: payloads can be large. */
	while (event_bytes > EVENT_HISTORY_BYTES && event_count > 1)
		event_evict(0);

	event_rec_id(r, id);
	if (ei->audit)
		event_audit(ei, r, id);
	/* The event's metadata is parsed once for all the filters. */
	event_rec_fields(r, &e);
	TAILQ_FOREACH(s, &event_subs, entry)
		if (event_filter_match(s->filter, &e) &&
		    event_sees(s->peer, ei->agent))
			event_deliver(s, r, id);
	event_fields_done(&e);
	return r;
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

/*
 * map/subscribe: a new subscription of the peer.  Its response is
 * written before any of its events (the SDK drops events of a
 * subscription it does not know yet).
 */
void
event_subscribe(struct peer *p, json_t *id, json_t *params)
{
	struct event_sub	*s;
	struct event_filter	*f;
	char			 why[256];

	if (p->nsubs >= EVENT_SUBS_MAX) {
		snprintf(why, sizeof why, "%s has %u subscriptions, the limit",
		    p->name, p->nsubs);
		rpc_error(p, id, CORRAL_E_EXHAUSTED, why, NULL);
		return;
	}
	if (event_filter_compile(json_object_get(params, "filter"), &f, why,
	    sizeof why) != 0) {
		rpc_error(p, id, CORRAL_E_PARAMS, why, NULL);
		return;
	}
	s = xcalloc(1, sizeof *s);
	snprintf(s->id, sizeof s->id, "sub-%s-%llu", protocol_run_id(),
	    (unsigned long long)++event_sub_seq);
	s->peer = p;
	s->filter = f;
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
	event_filter_free(s->filter);
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
	event_log_peer_gone(p);
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

/* Is an event in the span a replay asks for? */
int
event_replay_in(struct event_replay *rp, const char *id, uint64_t ms)
{
	if (rp->after[0] != '\0' ? strncmp(id, rp->after, EVENT_ID_LEN) <= 0 :
	    ms < rp->from)
		return 0;
	return rp->to == 0 || ms <= rp->to;
}

/*
 * Count an event that matched a replay, and put it in the answer while
 * there is room: limit events, about EVENT_REPLAY_BYTES of them (events
 * carry payloads), at least one.  Returns 0, or -1 when it did not fit:
 * the answer is full, and hasMore will say to ask again after its last.
 */
int
event_replay_add(struct event_replay *rp, const char *id, uint64_t ms,
    const char *text, size_t len)
{
	rp->total++;
	if (rp->full)
		return -1;
	if (rp->n >= rp->limit || (rp->n > 0 &&
	    ndjson_writer_queued(&rp->out.w) >= EVENT_REPLAY_BYTES)) {
		rp->full = 1;
		return -1;
	}
	rp->n++;
	jsonw_object(&rp->out);
	jsonw_key(&rp->out, "eventId");
	jsonw_strn(&rp->out, id, EVENT_ID_LEN);
	jsonw_key(&rp->out, "timestamp");
	jsonw_u64(&rp->out, ms);
	jsonw_key(&rp->out, "event");
	jsonw_raw(&rp->out, text, len);
	jsonw_object_end(&rp->out);
	return 0;
}

/* The ring's oldest event id, or NULL when the ring is empty. */
const char *
event_oldest_id(void)
{
	static char	id[EVENT_ID_LEN + 1];

	if (event_count == 0)
		return NULL;
	event_rec_id(&event_ring[(event_head + EVENT_HISTORY - event_count) %
	    EVENT_HISTORY], id);
	return id;
}

/*
 * Consider one event of the ring for a replay (a pair's slot is its
 * first).  Returns nonzero past the newest the replay may see.
 */
static int
event_replay_rec(struct event_replay *rp, struct event_rec *r)
{
	char	*text, id[EVENT_ID_LEN + 1];
	size_t	 len;

	event_rec_id(r, id);
	if (rp->stop[0] != '\0' && strcmp(id, rp->stop) > 0)
		return 1;
	if (!event_replay_in(rp, id, r->ms) ||
	    !event_rec_match(rp->filter, r) ||
	    !event_sees(rp->peer, event_key(r, EV_AGENT)))
		return 0;
	if (!rp->full && (r->has & EV_LAZY)) {
		text = event_render(r, &len);
		(void)event_replay_add(rp, id, r->ms, text, len);
		free(text);
		return 0;
	}
	(void)event_replay_add(rp, id, r->ms, r->text, r->len);
	return 0;
}

/*
 * Consider the events of the ring for a replay, oldest first, up to the
 * newest it may see (stop; "": all of them).
 */
static void
event_replay_ring(struct event_replay *rp)
{
	struct event_rec	 v, second;
	size_t			 i;
	int			 past, copy;

	for (i = 0; i < event_count; i++) {
		copy = event_view(&event_ring[(event_head + EVENT_HISTORY -
		    event_count + i) % EVENT_HISTORY], &v);
		past = event_replay_rec(rp, &v);
		if (!past && (v.has & EV_PAIR)) {
			event_second(&v, &second);
			past = event_replay_rec(rp, &second);
			free(second.keys);
		}
		if (copy)
			free(v.keys);
		if (past)
			break;
	}
}

/* The id of the ring's newest event (a pair's second's). */
static void
event_newest_id(char *out)
{
	const struct event_rec	*r;
	uint8_t			 b[16];

	r = &event_ring[(event_head + EVENT_HISTORY - 1) % EVENT_HISTORY];
	memcpy(b, r->id, sizeof b);
	if (r->has & EV_PAIR)
		event_ulid_next(b);
	event_ulid_encode(b, out);
}

/* What the history's buffers hold now: what its byte bound counts. */
size_t
event_history_bytes(void)
{
	return event_bytes;
}

/* The history's slots in use: an agent's two start events take one. */
size_t
event_history_slots(void)
{
	return event_count;
}

/* Free a replay. */
void
event_replay_free(struct event_replay *rp)
{
	if (rp->fd != -1)
		close(rp->fd);
	ndjson_reader_free(&rp->rd);
	jsonw_free(&rp->out);
	event_filter_free(rp->filter);
	json_decref(rp->id);
	free(rp);
}

/*
 * Answer a replay: what the audit log gave (unless it said the answer
 * is full), then the ring's events.  totalCount only when every event of
 * the span was counted.  Frees the replay.
 */
void
event_replay_finish(struct event_replay *rp)
{
	struct jsonw	 j;
	char		*ids, *s;
	size_t		 len;

	if (!rp->partial)
		event_replay_ring(rp);
	jsonw_array_end(&rp->out);
	s = jsonw_finish(&rp->out, &len);
	jsonw_init(&rp->out);

	/* The response, with the events as they went out. */
	ids = jsonw_dumps(rp->id, JSON_ENCODE_ANY | CORRAL_JSON_FLAGS);
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
	jsonw_bool(&j, rp->full);
	if (!rp->partial) {
		jsonw_key(&j, "totalCount");
		jsonw_u64(&j, rp->total);
	}
	jsonw_object_end(&j);
	jsonw_object_end(&j);
	free(s);
	free(ids);
	s = jsonw_finish(&j, &len);
	rpc_reply_text(rp->peer, s, len);
	free(s);
	event_replay_free(rp);
}

/*
 * Read map/replay's params into a new replay.  Returns it, or NULL after
 * answering with the error.
 */
static struct event_replay *
event_replay_params(struct peer *p, json_t *id, json_t *params)
{
	struct event_replay	*rp;
	struct event_filter	*f;
	json_t			*v;
	double			 from = 0, to = 0, limit = 100;
	char			 why[256];

	v = json_object_get(params, "afterEventId");
	if (v != NULL && !json_is_string(v) && !json_is_null(v)) {
		rpc_error(p, id, CORRAL_E_PARAMS, "afterEventId must be a "
		    "string", NULL);
		return NULL;
	}
	/* Milliseconds since the epoch, as exact as JavaScript's numbers. */
	if (protocol_number(params, "fromTimestamp", 0, EVENT_MS_MAX, 0,
	    &from) < 0 || protocol_number(params, "toTimestamp", 0,
	    EVENT_MS_MAX, 0, &to) < 0) {
		snprintf(why, sizeof why, "fromTimestamp and toTimestamp must "
		    "be milliseconds since the epoch (0 to %.0f)",
		    (double)EVENT_MS_MAX);
		rpc_error(p, id, CORRAL_E_PARAMS, why, NULL);
		return NULL;
	}
	if (protocol_number(params, "limit", 1, EVENT_REPLAY_LIMIT, 1,
	    &limit) < 0) {
		rpc_error(p, id, CORRAL_E_PARAMS, "limit must be a number (1 "
		    "to 1000)", NULL);
		return NULL;
	}
	if (event_filter_compile(json_object_get(params, "filter"), &f, why,
	    sizeof why) != 0) {
		rpc_error(p, id, CORRAL_E_PARAMS, why, NULL);
		return NULL;
	}
	rp = xcalloc(1, sizeof *rp);
	rp->peer = p;
	rp->id = json_incref(id);
	rp->fd = -1;
	/* Ids are 26 characters: comparing a prefix of a longer one is the
	 * same as comparing it. */
	if (json_is_string(v))
		strlcpy(rp->after, json_string_value(v), sizeof rp->after);
	rp->from = (uint64_t)from;
	rp->to = (uint64_t)to;
	rp->limit = (size_t)limit;
	rp->filter = f;
	jsonw_init(&rp->out);
	jsonw_array(&rp->out);
	return rp;
}

/*
 * map/replay: the events after afterEventId (or from fromTimestamp), up
 * to toTimestamp, that pass the filter, oldest first, at most limit of
 * them.  The ring has the last EVENT_HISTORY and is answered from at
 * once.  Older ones come from the audit log, when the run has one: that
 * replay reads the log a step at a time (event-log.c) and is answered
 * when it is done, so the loop serves everybody else meanwhile.
 */
void
event_replay(struct peer *p, json_t *id, json_t *params)
{
	struct event_replay	*rp;
	const char		*oldest;

	if (id == NULL)
		return;		/* a notification: nothing to answer */
	if ((rp = event_replay_params(p, id, params)) == NULL)
		return;
	oldest = event_oldest_id();
	/* Events older than the ring exist only when it went round. */
	if (oldest == NULL || event_total == event_nevents ||
	    !event_log_usable() || (rp->after[0] != '\0' ?
	    strcmp(rp->after, oldest) >= 0 : rp->from >= event_ring[(event_head +
	    EVENT_HISTORY - event_count) % EVENT_HISTORY].ms)) {
		event_replay_finish(rp);
		return;
	}
	if (rpc_batching(p)) {
		/* Its answer would come after the batch's. */
		rpc_error(p, id, CORRAL_E_EXHAUSTED, "a map/replay that reads "
		    "the audit log is answered on its own, not in a batch: send "
		    "it alone", NULL);
		event_replay_free(rp);
		return;
	}
	if (event_log_busy(p)) {
		rpc_error(p, id, CORRAL_E_EXHAUSTED, "a replay from the audit "
		    "log is already in progress for this connection: ask again "
		    "once it is answered", NULL);
		event_replay_free(rp);
		return;
	}
	/* It sees the events there are now, not those that come meanwhile. */
	event_newest_id(rp->stop);
	event_log_start(rp);
}
