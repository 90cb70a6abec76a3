/*
 * MAP's view of corral's agents: the Agent object, the state names, who
 * may see whom, map/agents/list, map/agents/get, map/structure/graph, and
 * the agent events (registered, state changed, orphaned, unregistered).
 *
 * The Agent object carries only what MAP's types name; everything of
 * corral's own goes under metadata (corralState, depth, pid, tokens ...),
 * as tests/map/SPEC.md says, so a strict validator of the SDK's schemas
 * accepts it.  corral's states map onto MAP's: READY is idle, INITIALIZING
 * registered, UNAVAILABLE x-unavailable (MAP has no such state; custom
 * states take the x- prefix).
 *
 * Events come from the lifecycle's observer list, so nothing below has
 * to know they exist.  Agents inside a wrapped tool's process
 * (external.c) are shown as virtual agents under the agent they run in:
 * metadata.virtual, no pid, events of their own.  A busy/idle change is
 * an event like any other but is kept out of the audit log, as the log
 * keeps READY <-> BUSY out.
 */

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

#define MAPVIEW_METADATA_BYTES	16384	/* an agent's metadata, as JSON */
#define MAPVIEW_METADATA_VALUES	256	/* and its values */
#define MAPVIEW_CAPS	64	/* capabilities an agent may register */

static void	mapview_lifecycle(struct agent *, enum agent_state,
		    enum agent_state, enum agent_event, const char *);
static void	mapview_forget(struct agent *);
static void	mapview_external(struct external *, enum external_change);
static int	mapview_sees_event(const struct peer *, const char *);

/* MAP's name of each of corral's states (the hidden steps included). */
/* How deep the ones inside an agent's tool are listed (they nest). */
#define MAPVIEW_INNER_DEPTH	32

static const char *const mapview_states[AS_COUNT] = {
	"registered", "idle", "busy", "x-unavailable", "suspended",
	"stopping", "stopped", "failed", "stopping", "stopping", "stopped"
};

/* The MAP state an agent last announced, or NULL before the first. */
static const char *
mapview_announced(const struct agent *a)
{
	if (a->map.state == 0)
		return NULL;
	return a->map.state <= AS_COUNT ? mapview_states[a->map.state - 1] :
	    "x-unknown";
}

/* Set the module up: it hears of every transition and every free. */
void
mapview_init(void)
{
	struct scope_hooks	sh = { mapview_describe, mapview_sees };

	scope_init(&sh);
	route_on_capability(mapview_has_capability);
	lifecycle_observe(mapview_lifecycle);
	agent_on_free(mapview_forget);
	external_on_change(mapview_external);
	event_on_visible(mapview_sees_event);
}

/* MAP's name of a state. */
const char *
mapview_state(enum agent_state s)
{
	return s < AS_COUNT ? mapview_states[s] : "x-unknown";
}

/* Milliseconds since the epoch of a loop time (0 stays 0). */
static json_int_t
mapview_ms(ev_tstamp t)
{
	return t > 0 ? (json_int_t)(t * 1000.0) : 0;
}

/*
 * What few agents have (an owner, metadata, capabilities, a reported
 * state, a last error): made when first written, so an idle agent holds
 * one pointer for them.
 */
struct mapinfo_more {
	char	*owner;		/* the client that spawned it */
	json_t	*metadata;	/* from register, spawn, update */
	json_t	*caps;		/* capabilities it registered */
	char	*reported;	/* state the agent reported */
	char	*last_error;	/* its latest failed request */
	int	 orphaned;	/* its owner left; it runs on */
};

/* The rarely set part, to read (all NULL when never written). */
static const struct mapinfo_more *
mapview_extra(const struct agent *a)
{
	static const struct mapinfo_more	none;

	return a->map.more != NULL ? a->map.more : &none;
}

/* The rarely set part, to write: made now if it was not. */
static struct mapinfo_more *
mapview_more(struct agent *a)
{
	if (a->map.more == NULL)
		a->map.more = xcalloc(1, sizeof *a->map.more);
	return a->map.more;
}

/* Who started an agent: its client, its parent, corral; NULL: orphaned. */
const char *
mapview_owner(const struct agent *a)
{
	if (mapview_extra(a)->orphaned)
		return NULL;
	if (a->map.more != NULL && a->map.more->owner != NULL)
		return a->map.more->owner;
	return a->parent != NULL ? a->parent->id : "corral";
}

/* Emit an event about an agent, with data built by the JSON writer. */
static void
mapview_emit(const char *type, struct agent *a, struct jsonw *j, int audit)
{
	struct event_info	 ei;
	char			*s;
	size_t			 len;

	s = jsonw_finish(j, &len);
	memset(&ei, 0, sizeof ei);
	ei.type = type;
	ei.source = a->id;
	ei.source_role = a->conf->role;
	ei.agent = a->id;
	ei.agent_role = a->conf->role;
	ei.audit = audit;
	event_emit(&ei, s, len);
	free(s);
}

/* The members of an agent_registered event's data. */
static const char *const mapview_registered_shape[] = {
	"agentId", "name", "?role", "?parent", "ownerId", "state", NULL
};

/*
 * agent_registered: a new agent, in state registered.  Its data is all
 * strings, so the history keeps it compact: every agent has one.
 */
static void
mapview_registered(struct agent *a)
{
	struct event_info	 ei;
	const char		*vals[6];

	vals[0] = a->id;
	vals[1] = a->conf->name;
	vals[2] = a->conf->role;
	vals[3] = a->parent != NULL ? a->parent->id : NULL;
	vals[4] = mapview_owner(a);
	vals[5] = "registered";
	memset(&ei, 0, sizeof ei);
	ei.type = "agent_registered";
	ei.source = a->id;
	ei.source_role = a->conf->role;
	ei.agent = a->id;
	ei.agent_role = a->conf->role;
	ei.audit = 1;
	ei.lend = 1;
	event_emit_flat(&ei, mapview_registered_shape, vals);
}

/*
 * A transition: the first one of an agent registers it; a change of its
 * MAP state is an agent_state_changed event.  A process that exits takes
 * its subscriptions and its MAP handshake with it.
 */
static void
mapview_lifecycle(struct agent *a, enum agent_state from, enum agent_state to,
    enum agent_event ev, const char *why)
{
	const char	*ns = mapview_state(to), *os;
	uint64_t	 now = event_now_ms();
	int		 audit;

	if (a->map.state == 0) {
		a->map.created_ms = now;
		a->map.state = AS_INITIALIZING + 1;	/* "registered" */
		mapview_registered(a);
		/* Its id is lent to the history until it is freed. */
		a->map.hist = event_lent_slot() + 1;
	}
	if (ev == AE_SPAWNED)
		a->map.started_ms = now;
	if (to == AS_STOPPED || to == AS_FAILED || to == AS_BACKOFF) {
		a->map.stopped_ms = now;
		event_peer_gone(agent_peer(a));
		agent_peer(a)->flags &= ~(PEER_CONNECTED | PEER_MAPAGENT);
		/* What ran inside its process ended with it. */
		external_parent_ended(a->id, "its agent's process ended");
	}
	os = mapview_announced(a);
	if (strcmp(ns, os) == 0)
		return;
	a->map.state = (uint8_t)(to < AS_COUNT ? to + 1 : AS_COUNT + 1);
	audit = !((to == AS_BUSY && from == AS_READY) || (to == AS_READY &&
	    from == AS_BUSY));
	event_emit_state(a->id, a->conf->role, os, ns,
	    lifecycle_state_name(to), why, audit);
}

/* An agent is about to be freed: corral forgets it. */
static void
mapview_forget(struct agent *a)
{
	struct jsonw	j;

	external_forget(a->id);
	if (a->map.hist != 0)
		event_release(a->id, a->map.hist - 1);
	if (a->map.state != 0) {
		jsonw_init(&j);
		jsonw_object(&j);
		jsonw_key(&j, "agentId");
		jsonw_str(&j, a->id);
		jsonw_key(&j, "reason");
		jsonw_str(&j, "done");
		jsonw_object_end(&j);
		mapview_emit("agent_unregistered", a, &j, 1);
	}
	event_peer_gone(agent_peer(a));
	rpc_conn_free(agent_peer(a));
	if (a->map.more != NULL) {
		free(a->map.more->owner);
		free(a->map.more->reported);
		free(a->map.more->last_error);
		json_decref(a->map.more->metadata);
		json_decref(a->map.more->caps);
		free(a->map.more);
	}
	memset(&a->map, 0, sizeof a->map);
}

/* The client that spawns an agent owns it (before it starts). */
void
mapview_set_owner(struct agent *a, const char *owner)
{
	struct mapinfo_more	*m;

	if (owner == NULL && a->map.more == NULL)
		return;
	m = mapview_more(a);
	free(m->owner);
	m->owner = owner != NULL ? xstrdup(owner) : NULL;
}

/* Count the JSON values in v, stopping past max. */
static size_t
mapview_values(json_t *v, size_t max)
{
	json_t		*x;
	const char	*k;
	size_t		 n = 1, i;

	if (json_is_object(v))
		json_object_foreach(v, k, x) {
			if (n > max)
				break;
			n += mapview_values(x, max - n + 1);
		}
	else if (json_is_array(v))
		json_array_foreach(v, i, x) {
			if (n > max)
				break;
			n += mapview_values(x, max - n + 1);
		}
	return n;
}

/*
 * Is metadata small enough to keep for an agent: at most
 * MAPVIEW_METADATA_BYTES of JSON and MAPVIEW_METADATA_VALUES values?  It
 * stays as long as its agent, and a participant may send it again and
 * again.  Returns 0, or -1 with why.
 */
int
mapview_metadata_check(json_t *md, char *why, size_t len)
{
	size_t	bytes, values;

	if (md == NULL)
		return 0;
	bytes = jsonw_dumpb(md, NULL, 0, JSON_COMPACT);
	values = mapview_values(md, MAPVIEW_METADATA_VALUES);
	if (bytes <= MAPVIEW_METADATA_BYTES &&
	    values <= MAPVIEW_METADATA_VALUES)
		return 0;
	if (bytes > MAPVIEW_METADATA_BYTES)
		snprintf(why, len, "metadata too large: %zu bytes of JSON; an "
		    "agent's metadata holds at most %d bytes and %d values",
		    bytes, MAPVIEW_METADATA_BYTES, MAPVIEW_METADATA_VALUES);
	else
		snprintf(why, len, "metadata too large: more than %d values; "
		    "an agent's metadata holds at most %d bytes of JSON and %d "
		    "values", MAPVIEW_METADATA_VALUES, MAPVIEW_METADATA_BYTES,
		    MAPVIEW_METADATA_VALUES);
	return -1;
}

/*
 * The metadata members corral writes itself (mapview_describe, and for an
 * agent inside a CLI mapview_describe_external), and its options: an
 * agent's own metadata never holds them, so a view can trust them (an
 * agent that set "virtual" would hide its pid from corral ps).
 */
static const char *const mapview_reserved[] = {
	"corral", "corralState", "depth", "pid", "tokens", "cost", "visible",
	"restarts", "inflight", "window", "queued", "msgsIn", "msgsOut",
	"reportedState",
	"lastError", "failure", "progress", "virtual", "inside", "kind",
	"toolCalls", "requestId", "lastTool", "host", NULL
};

/*
 * Merge metadata given by a spawn, a register or an update (borrowed),
 * without corral's own members and capabilities.  Returns 0, or -1 with
 * why, merging nothing, when the agent's metadata would grow beyond its
 * bound (mapview_metadata_check).
 */
int
mapview_merge(struct agent *a, json_t *md, char *why, size_t len)
{
	json_t	*m;
	size_t	 i;

	if (!json_is_object(md))
		return 0;
	m = mapview_extra(a)->metadata != NULL ?
	    json_copy(mapview_extra(a)->metadata) : json_object();
	json_object_update(m, md);
	/* corral's own members are not the agent's to set. */
	for (i = 0; mapview_reserved[i] != NULL; i++)
		json_object_del(m, mapview_reserved[i]);
	/* Capabilities are kept apart (mapview_add_capabilities). */
	json_object_del(m, "capabilities");
	if (mapview_metadata_check(m, why, len) != 0) {
		json_decref(m);
		return -1;
	}
	json_decref(mapview_more(a)->metadata);
	mapview_more(a)->metadata = m;
	return 0;
}

/* The state an agent says it is in (map/agents/update); NULL clears. */
void
mapview_report(struct agent *a, const char *state)
{
	struct mapinfo_more	*m;

	if (state == NULL && a->map.more == NULL)
		return;
	m = mapview_more(a);
	free(m->reported);
	m->reported = state != NULL ? xstrdup(state) : NULL;
}

/* The state an agent says it is in, or NULL. */
const char *
mapview_reported_state(struct agent *a)
{
	return mapview_extra(a)->reported;
}

/* The metadata an agent gave itself (borrowed), or NULL. */
json_t *
mapview_own_metadata(struct agent *a)
{
	return mapview_extra(a)->metadata;
}

/* A request at an agent failed: remembered for ps and top. */
void
mapview_note_error(struct agent *a, const char *why)
{
	struct mapinfo_more	*m = mapview_more(a);

	free(m->last_error);
	m->last_error = xstrdup(why);
}

/*
 * The clients that owned agents left: stop those agents, or, with the
 * orphan policy, leave them running with no owner.
 */
void
mapview_owner_gone(const char *owner, int orphan)
{
	struct agent	*a;
	struct jsonw	 j;
	const char	*o;

	for (a = agent_first(); a != NULL; a = agent_next(a)) {
		o = mapview_extra(a)->owner;
		if (o == NULL || strcmp(o, owner) != 0 ||
		    mapview_extra(a)->orphaned)
			continue;
		if (!orphan) {
			if (lifecycle_alive(a) ||
			    lifecycle_state(a) == AS_BACKOFF)
				lifecycle_stop(a, "its client disconnected");
			continue;
		}
		mapview_more(a)->orphaned = 1;
		jsonw_init(&j);
		jsonw_object(&j);
		jsonw_key(&j, "agentId");
		jsonw_str(&j, a->id);
		jsonw_key(&j, "previousOwner");
		jsonw_str(&j, owner);
		jsonw_object_end(&j);
		mapview_emit("agent_orphaned", a, &j, 1);
	}
}

/* Does the client named owner own an agent that is still alive? */
int
mapview_owns(const char *owner)
{
	struct agent	*a;
	const char	*o;

	for (a = agent_first(); a != NULL; a = agent_next(a)) {
		o = mapview_extra(a)->owner;
		if (o != NULL && strcmp(o, owner) == 0 &&
		    !mapview_extra(a)->orphaned && lifecycle_alive(a))
			return 1;
	}
	return 0;
}

/* Return nonzero if from may address to (docs/subagents.md). */
int
mapview_may_reach(struct agent *from, struct agent *to)
{
	if (from == NULL)
		return 1;	/* a client reaches every agent */
	if (from == to)
		return 0;
	if (to->parent == from || from->parent == to)
		return 1;
	if (agent_is_descendant(to, from) || agent_is_descendant(from, to))
		return 1;
	if (from->parent == to->parent)
		return 1;	/* siblings (root agents are siblings too) */
	/* A hidden agent is reached only by its family, and reaches only it. */
	return !(to->flags & AGENT_HIDDEN) && !(from->flags & AGENT_HIDDEN);
}

/* Return nonzero if the peer may see agent t (list, get, graph). */
int
mapview_sees(const struct peer *p, struct agent *t)
{
	if (t->flags & AGENT_DEAD)
		return 0;
	return p->agent == NULL || p->agent == t ||
	    mapview_may_reach(p->agent, t);
}

/*
 * Return nonzero if the peer may see events about agent id: a client
 * all of them, an agent (or its delegate) those about the agents it may
 * see, the one being freed included, and about those inside their CLIs.
 * An agent corral has forgotten is hidden from agents: whether they
 * could see it is no longer known.  A delegate whose agent is gone sees
 * nothing.
 */
static int
mapview_sees_event(const struct peer *p, const char *id)
{
	struct agent	*t;
	struct external	*x;

	if (p->agent == NULL)
		return p->role != 0;
	if ((t = agent_find(id)) == NULL && (x = external_find(id)) != NULL)
		t = agent_find(x->parent);
	return t != NULL && (t == p->agent || mapview_may_reach(p->agent, t));
}

/*
 * Add capabilities an agent registers (a list of names, or of objects
 * {name, version, actions}), beside its entry's; the same name replaces
 * one registered before.  At most MAPVIEW_CAPS are kept.
 */
void
mapview_add_capabilities(struct agent *a, json_t *list)
{
	json_t		*c, *o, *have;
	const char	*name, *hn;
	size_t		 i, k;

	if (!json_is_array(list))
		return;
	if (mapview_more(a)->caps == NULL)
		a->map.more->caps = json_array();
	json_array_foreach(list, i, c) {
		if ((name = protocol_capability_name(c)) == NULL ||
		    strlen(name) > 128)
			continue;
		o = json_is_object(c) ? json_deep_copy(c) : json_object();
		json_object_del(o, "id");
		json_object_set_new(o, "name", json_string(name));
		json_array_foreach(a->map.more->caps, k, have)
			if ((hn = protocol_capability_name(have)) != NULL &&
			    strcmp(hn, name) == 0)
				break;
		if (k < json_array_size(a->map.more->caps))
			json_array_set_new(a->map.more->caps, k, o);
		else if (json_array_size(a->map.more->caps) < MAPVIEW_CAPS)
			json_array_append_new(a->map.more->caps, o);
		else
			json_decref(o);
	}
}

/*
 * An agent's capabilities: its entry's capabilities:, then those it
 * registered (a new reference, a list of {name, version?, actions?}).
 */
json_t *
mapview_capabilities(struct agent *a)
{
	json_t		*all = json_array(), *c, *x;
	const char	*n, *xn;
	size_t		 i, k;
	int		 dup;

	json_array_foreach(a->conf->capabilities, i, c)
		json_array_append(all, c);
	json_array_foreach(mapview_extra(a)->caps, i, c) {
		n = protocol_capability_name(c);
		dup = 0;
		json_array_foreach(all, k, x)
			if ((xn = protocol_capability_name(x)) != NULL &&
			    strcmp(xn, n) == 0) {
				json_array_set(all, k, c);
				dup = 1;
				break;
			}
		if (!dup)
			json_array_append(all, c);
	}
	return all;
}

/* Does an agent have a capability of that name? */
int
mapview_has_capability(struct agent *a, const char *name)
{
	return protocol_capability_in(a->conf->capabilities, name) ||
	    protocol_capability_in(mapview_extra(a)->caps, name);
}

/* MAP's capabilityDescriptor for a list of capabilities (a new ref). */
static json_t *
mapview_descriptor(json_t *caps)
{
	json_t		*list = json_array(), *c, *d, *v;
	size_t		 i;

	json_array_foreach(caps, i, c) {
		d = json_pack("{s:s}", "id", protocol_capability_name(c));
		if (json_is_string(v = json_object_get(c, "version")))
			json_object_set(d, "version", v);
		if (json_is_string(v = json_object_get(c, "description")))
			json_object_set(d, "description", v);
		json_array_append_new(list, d);
	}
	return json_pack("{s:o}", "capabilities", list);
}

/* The lifecycle member of an Agent: when it was created, ran, stopped. */
static json_t *
mapview_life(struct agent *a)
{
	json_t			*l = json_object();
	char			 st[64];
	enum agent_state	 s = lifecycle_state(a);
	int			 down;

	down = (s == AS_STOPPED || s == AS_FAILED || s == AS_BACKOFF);
	if (a->map.created_ms != 0)
		json_object_set_new(l, "createdAt",
		    json_integer((json_int_t)a->map.created_ms));
	if (a->map.started_ms != 0)
		json_object_set_new(l, "startedAt",
		    json_integer((json_int_t)a->map.started_ms));
	if (down && a->map.stopped_ms != 0)
		json_object_set_new(l, "stoppedAt",
		    json_integer((json_int_t)a->map.stopped_ms));
	if (mapview_ms(lifecycle_last_activity(a)) != 0)
		json_object_set_new(l, "lastActiveAt",
		    json_integer(mapview_ms(lifecycle_last_activity(a))));
	if (down && agent_exited(a)) {
		if (WIFEXITED(agent_status(a)))
			json_object_set_new(l, "exitCode",
			    json_integer(WEXITSTATUS(agent_status(a))));
		util_describe_status(st, sizeof st, agent_status(a));
		json_object_set_new(l, "exitReason", json_string(st));
	}
	return l;
}

/* Describe an agent as MAP's Agent object (a new reference). */
json_t *
mapview_describe(struct agent *a)
{
	json_t		*j, *kids, *md, *extra, *caps;
	struct agent	*c;
	struct external	*x;
	const char	*owner = mapview_owner(a), *progress, *preq, *err;
	uint64_t	 in, out;
	double		 tokens, cost;
	ev_tstamp	 pat;

	kids = json_array();
	AGENT_FOREACH_CHILD(c, a)
		if (!(c->flags & AGENT_DEAD))
			json_array_append_new(kids, json_string(c->id));
	for (x = external_first(); x != NULL; x = external_next(x))
		if (x->up == NULL && strcmp(x->parent, a->id) == 0)
			json_array_append_new(kids, json_string(x->id));
	j = json_pack("{s:s, s:o, s:s, s:s, s:s, s:o, s:o}",
	    "id", a->id,
	    "ownerId", owner != NULL ? json_string(owner) : json_null(),
	    "name", a->conf->name,
	    "state", mapview_state(lifecycle_state(a)),
	    "visibility", (a->flags & AGENT_HIDDEN) ? "parent-only" : "public",
	    "children", kids,
	    "lifecycle", mapview_life(a));
	if (a->parent != NULL)
		json_object_set_new(j, "parent", json_string(a->parent->id));
	if (a->conf->role != NULL)
		json_object_set_new(j, "role", json_string(a->conf->role));
	if (a->conf->description != NULL)
		json_object_set_new(j, "description",
		    json_string(a->conf->description));
	if (json_array_size(extra = scope_of(a)) > 0)
		json_object_set_new(j, "scopes", extra);
	else
		json_decref(extra);
	caps = mapview_capabilities(a);
	if (json_array_size(caps) > 0)
		json_object_set_new(j, "capabilityDescriptor",
		    mapview_descriptor(caps));

	/* The agent's own metadata first: corral's members win. */
	md = mapview_extra(a)->metadata != NULL ?
	    json_deep_copy(mapview_extra(a)->metadata) :
	    json_object();
	if ((extra = adapter_metadata(a)) != NULL) {
		json_object_update(md, extra);
		json_decref(extra);
	}
	agent_counts(a, &in, &out);
	budget_used(a, &tokens, &cost);
	extra = json_pack("{s:s, s:i, s:I, s:f, s:f, s:b, s:i, s:i, s:i, "
	    "s:i, s:I, s:I}",
	    "corralState", lifecycle_state_name(lifecycle_state(a)),
	    "depth", (int)agent_depth(a),
	    "pid", (json_int_t)agent_hostpid(a),
	    "tokens", jsonw_finite(tokens),
	    "cost", jsonw_finite(cost),
	    "visible", !(a->flags & AGENT_HIDDEN),
	    "restarts", (int)lifecycle_restarts(a),
	    "inflight", (int)lifecycle_outstanding(a),
	    "window", (int)lifecycle_window(a),
	    "queued", (int)route_direct_count(a),
	    "msgsIn", (json_int_t)in,
	    "msgsOut", (json_int_t)out);
	json_object_update(md, extra);
	json_decref(extra);
	/* Each call its own process: pid 0 would read as a lost one. */
	if (adapter_per_call(a))
		json_object_set_new(md, "perCall", json_true());
	if (json_array_size(caps) > 0)
		json_object_set(md, "capabilities", caps);
	json_decref(caps);
	if ((extra = launch_metadata(a)) != NULL)
		json_object_set_new(md, "host", extra);
	if (mapview_extra(a)->reported != NULL)
		json_object_set_new(md, "reportedState",
		    json_string(mapview_extra(a)->reported));
	if ((err = mapview_extra(a)->last_error) != NULL)
		json_object_set_new(md, "lastError", jsonw_text(err,
		    strlen(err)));
	if (lifecycle_cause(a) != NULL)
		json_object_set_new(md, "failure",
		    jsonw_text(lifecycle_cause(a), strlen(lifecycle_cause(a))));
	if ((progress = engine_progress_latest(a, &preq, &pat)) != NULL)
		json_object_set_new(md, "progress", json_pack("{s:s, s:o, s:I}",
		    "requestId", preq, "text", jsonw_text(progress,
		    strlen(progress)), "at", mapview_ms(pat)));
	json_object_set_new(j, "metadata", md);
	return j;
}

/* MAP's state of an external agent. */
static const char *
mapview_xstate(const struct external *x)
{
	if (external_running(x))
		return "busy";
	return strcmp(x->state, "FAILED") == 0 ? "failed" : "stopped";
}

/* The ones that x started, by id (a new reference). */
static json_t *
mapview_inner(const struct external *x)
{
	struct external	*y;
	json_t		*kids = json_array();

	for (y = external_first(); y != NULL; y = external_next(y))
		if (y->up != NULL && strcmp(y->up, x->id) == 0)
			json_array_append_new(kids, json_string(y->id));
	return kids;
}

/*
 * Describe an agent inside another's tool (external.c) as MAP's Agent:
 * owned by the agent it runs in (or by the one inside it that started
 * it, one level below that), marked virtual in its metadata, with the
 * tokens and tool calls its tool reported.  It is no process: no pid, no
 * restarts, nothing in flight.
 */
json_t *
mapview_describe_external(struct external *x)
{
	struct agent	*p = agent_find(x->parent);
	json_t		*j, *life, *md;
	const char	*up = external_parent(x);

	life = json_pack("{s:I, s:I, s:I}", "createdAt",
	    (json_int_t)x->started_ms, "startedAt", (json_int_t)x->started_ms,
	    "lastActiveAt", (json_int_t)x->active_ms);
	if (!external_running(x))
		json_object_set_new(life, "stoppedAt",
		    json_integer((json_int_t)x->stopped_ms));
	j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:s}",
	    "id", x->id, "ownerId", up, "name", x->name,
	    "state", mapview_xstate(x),
	    "visibility", p != NULL && (p->flags & AGENT_HIDDEN) ?
	    "parent-only" : "public",
	    "children", mapview_inner(x), "lifecycle", life, "parent", up);
	if (x->type != NULL)
		json_object_set_new(j, "description", json_string(x->type));
	md = json_pack("{s:s, s:i, s:b, s:s, s:s, s:f, s:f, s:I, s:b, s:i, "
	    "s:i, s:i, s:i, s:i, s:i}",
	    "corralState", x->state,
	    "depth", (int)(p != NULL ? agent_depth(p) : 0) +
	    (int)external_depth(x),
	    "virtual", 1,
	    "inside", x->parent,
	    "kind", x->kind,
	    "tokens", external_tokens(x),
	    "cost", 0.0,
	    "toolCalls", (json_int_t)external_tool_calls(x),
	    "visible", p == NULL || !(p->flags & AGENT_HIDDEN),
	    "restarts", 0, "inflight", 0, "window", 0, "queued", 0,
	    "msgsIn", 0, "msgsOut", 0);
	if (x->request != NULL)
		json_object_set_new(md, "requestId", json_string(x->request));
	if (x->last_tool != NULL)
		json_object_set_new(md, "lastTool", json_string(x->last_tool));
	json_object_set_new(j, "metadata", md);
	return j;
}

/* Return nonzero if the peer may see external agent x: as its agent. */
static int
mapview_sees_external(const struct peer *p, struct external *x)
{
	struct agent	*a = agent_find(x->parent);

	return a != NULL && mapview_sees(p, a);
}

/*
 * An external agent started, ended or went: MAP's agent events, as for
 * an agent (registered, then busy; stopped or failed; unregistered).
 */
static void
mapview_external(struct external *x, enum external_change what)
{
	struct event_info	 ei;
	struct jsonw		 j;
	char			*s;
	size_t			 len;

	switch (what) {
	case EXTERNAL_STARTED:
		jsonw_init(&j);
		jsonw_object(&j);
		jsonw_key(&j, "agentId");
		jsonw_str(&j, x->id);
		jsonw_key(&j, "name");
		jsonw_str(&j, x->name);
		jsonw_key(&j, "parent");
		jsonw_str(&j, external_parent(x));
		jsonw_key(&j, "ownerId");
		jsonw_str(&j, external_parent(x));
		jsonw_key(&j, "state");
		jsonw_str(&j, "registered");
		jsonw_key(&j, "virtual");
		jsonw_bool(&j, 1);
		jsonw_object_end(&j);
		break;
	case EXTERNAL_ENDED:
		event_emit_state(x->id, NULL, "busy", mapview_xstate(x),
		    x->state, "ended inside its agent's CLI", 1);
		return;
	case EXTERNAL_GONE:
		jsonw_init(&j);
		jsonw_object(&j);
		jsonw_key(&j, "agentId");
		jsonw_str(&j, x->id);
		jsonw_key(&j, "reason");
		jsonw_str(&j, "done");
		jsonw_object_end(&j);
		break;
	default:
		return;
	}
	s = jsonw_finish(&j, &len);
	memset(&ei, 0, sizeof ei);
	ei.type = what == EXTERNAL_STARTED ? "agent_registered" :
	    "agent_unregistered";
	ei.source = x->id;
	ei.agent = x->id;
	ei.audit = 1;
	event_emit(&ei, s, len);
	free(s);
	if (what == EXTERNAL_STARTED)
		event_emit_state(x->id, NULL, "registered", "busy", x->state,
		    "started inside its agent's CLI", 1);
}

/* Is an agent in one of the scopes of a filter (none given: yes)? */
static int
mapview_match_scopes(struct agent *a, json_t *scopes)
{
	json_t	*v;
	size_t	 i;

	if (json_array_size(scopes) == 0)
		return 1;
	json_array_foreach(scopes, i, v)
		if (json_is_string(v) && scope_has(json_string_value(v), a))
			return 1;
	return 0;
}

/*
 * Does an agent have the capabilities a filter asks for: capability
 * (corral's, a name), capabilityId (the SDK's) and capabilities (a list,
 * all of them)?
 */
static int
mapview_match_capability(struct agent *a, json_t *f)
{
	json_t	*v, *x;
	size_t	 i;

	v = json_object_get(f, "capability");
	if (json_is_string(v) && !mapview_has_capability(a,
	    json_string_value(v)))
		return 0;
	v = json_object_get(f, "capabilityId");
	if (json_is_string(v) && !mapview_has_capability(a,
	    json_string_value(v)))
		return 0;
	json_array_foreach(json_object_get(f, "capabilities"), i, x)
		if (json_is_string(x) && !mapview_has_capability(a,
		    json_string_value(x)))
			return 0;
	return 1;
}

/*
 * Does an agent pass a map/agents/list filter?  states, roles, scopes,
 * parent, ownerId, hasChildren and the capability filters apply; the
 * others are ignored (SPEC.md 5).
 */
static int
mapview_match(struct agent *a, json_t *f)
{
	json_t	*v;
	int	 kids;

	if (f == NULL)
		return 1;
	if (!protocol_filter_allows(f, "states",
	    mapview_state(lifecycle_state(a))) ||
	    !protocol_filter_allows(f, "roles", a->conf->role))
		return 0;
	if (!mapview_match_scopes(a, json_object_get(f, "scopes")) ||
	    !mapview_match_capability(a, f))
		return 0;
	v = json_object_get(f, "parent");
	if (json_is_string(v) && (a->parent == NULL ||
	    strcmp(a->parent->id, json_string_value(v)) != 0))
		return 0;
	v = json_object_get(f, "ownerId");
	if (json_is_string(v) && (mapview_owner(a) == NULL ||
	    strcmp(mapview_owner(a), json_string_value(v)) != 0))
		return 0;
	v = json_object_get(f, "hasChildren");
	if (json_is_boolean(v)) {
		kids = agent_first_child(a) != NULL;
		if (kids != json_is_true(v))
			return 0;
	}
	return 1;
}

/*
 * Does an external agent pass a map/agents/list filter?  As an agent
 * with no role and no children, owned by the agent it runs in.
 */
static int
mapview_match_external(struct external *x, json_t *f)
{
	json_t	*v, *kids;
	int	 match;

	if (f == NULL)
		return 1;
	if (!protocol_filter_allows(f, "states", mapview_xstate(x)) ||
	    !protocol_filter_allows(f, "roles", NULL) ||
	    json_array_size(json_object_get(f, "scopes")) > 0 ||
	    json_object_get(f, "capability") != NULL ||
	    json_object_get(f, "capabilityId") != NULL ||
	    json_array_size(json_object_get(f, "capabilities")) > 0)
		return 0;
	v = json_object_get(f, "parent");
	if (json_is_string(v) && strcmp(external_parent(x),
	    json_string_value(v)) != 0)
		return 0;
	v = json_object_get(f, "ownerId");
	if (json_is_string(v) && strcmp(external_parent(x),
	    json_string_value(v)) != 0)
		return 0;
	v = json_object_get(f, "hasChildren");
	if (json_is_boolean(v)) {
		kids = mapview_inner(x);
		match = (json_array_size(kids) > 0) == json_is_true(v);
		json_decref(kids);
		return match;
	}
	return 1;
}

/*
 * Add the ones inside agent t that up started (NULL: t's tool itself),
 * each followed by those it started, as children follow their parent in
 * ps; at most depth levels down.
 */
static void
mapview_list_inner(json_t *list, struct agent *t, const char *up,
    json_t *f, int depth)
{
	struct external	*x;

	if (depth <= 0)
		return;
	for (x = external_first(); x != NULL; x = external_next(x)) {
		if (strcmp(x->parent, t->id) != 0 || (up == NULL ?
		    x->up != NULL : x->up == NULL || strcmp(x->up, up) != 0))
			continue;
		if (mapview_match_external(x, f))
			json_array_append_new(list,
			    mapview_describe_external(x));
		mapview_list_inner(list, t, x->id, f, depth - 1);
	}
}

/* map/agents/list: the agents the caller may see, filtered. */
void
mapview_list(struct peer *p, json_t *id, json_t *params)
{
	struct agent	*t;
	json_t		*list, *f = json_object_get(params, "filter");

	if (f != NULL && !json_is_object(f)) {
		rpc_error(p, id, CORRAL_E_PARAMS, "params.filter must be an "
		    "object", NULL);
		return;
	}
	list = json_array();
	for (t = agent_first(); t != NULL; t = agent_next(t)) {
		if (!mapview_sees(p, t))
			continue;
		if (mapview_match(t, f))
			json_array_append_new(list, mapview_describe(t));
		/* Those inside its tool follow it, as children do in ps. */
		mapview_list_inner(list, t, NULL, f, MAPVIEW_INNER_DEPTH);
	}
	rpc_reply(p, id, json_pack("{s:o}", "agents", list));
}

/*
 * The agent id params name (agentId, or corral's id / agent), without
 * the "agent:" of MAP's string form of an address; NULL when none is a
 * string.
 */
static const char *
mapview_param_id(json_t *params)
{
	json_t		*v;
	const char	*s;

	v = json_object_get(params, "agentId");
	if (v == NULL)
		v = json_object_get(params, "id");
	if (v == NULL)
		v = json_object_get(params, "agent");
	if ((s = json_string_value(v)) == NULL)
		return NULL;
	return strncmp(s, "agent:", 6) == 0 ? s + 6 : s;
}

/*
 * Return nonzero if params name an agent; else answer -32602: a method
 * that acts on an agent needs its id (a missing param is no unknown
 * agent).
 */
int
mapview_need_id(struct peer *p, json_t *id, json_t *params)
{
	if (mapview_param_id(params) != NULL)
		return 1;
	rpc_error(p, id, CORRAL_E_PARAMS, "params.agentId must be a string: "
	    "the agent's id", NULL);
	return 0;
}

/* The agent params name, or NULL. */
struct agent *
mapview_param_agent(json_t *params)
{
	const char	*s = mapview_param_id(params);

	return s != NULL ? agent_find(s) : NULL;
}

/*
 * A depth a caller gives (maxDepth, depth): -1 (any) when absent or
 * negative; a depth beyond any tree is as good as any.
 */
static int
mapview_depth(json_t *obj, const char *key)
{
	double	d = -1;

	(void)protocol_number(obj, key, -1, INT_MAX, 1, &d);
	return (int)d;
}

/* Add the descendants of a the caller sees to list, down to depth. */
static void
mapview_descend(struct peer *p, struct agent *a, json_t *list, int depth)
{
	struct agent	*c;

	if (depth == 0)
		return;
	AGENT_FOREACH_CHILD(c, a) {
		if (!mapview_sees(p, c))
			continue;
		json_array_append_new(list, mapview_describe(c));
		mapview_descend(p, c, list, depth - 1);
	}
}

/* The external agent params name (agentId, id or agent), or NULL. */
struct external *
mapview_param_external(json_t *params)
{
	const char	*s = mapview_param_id(params);

	return s != NULL ? external_find(s) : NULL;
}

/*
 * map/agents/get of an external agent: itself, and the relatives asked
 * for: its parent (the one that started it, else the agent it runs in),
 * its ancestors up to and with that agent, the ones it started (children
 * and descendants); its siblings are its agent's business.
 */
static void
mapview_get_external(struct peer *p, json_t *id, json_t *params,
    struct external *xa)
{
	struct agent	*a = agent_find(xa->parent);
	struct external	*u;
	json_t		*res, *inc, *list;

	res = json_pack("{s:o}", "agent", mapview_describe_external(xa));
	inc = json_object_get(params, "include");
	if (inc == NULL)
		inc = params;
	u = xa->up != NULL ? external_find(xa->up) : NULL;
	if (json_is_true(json_object_get(inc, "parent")) && (u != NULL ||
	    a != NULL))
		json_object_set_new(res, "parent", u != NULL ?
		    mapview_describe_external(u) : mapview_describe(a));
	if (json_is_true(json_object_get(inc, "ancestors"))) {
		list = json_array();
		for (; u != NULL; u = u->up != NULL ? external_find(u->up) :
		    NULL)
			json_array_append_new(list,
			    mapview_describe_external(u));
		if (a != NULL)
			json_array_append_new(list, mapview_describe(a));
		json_object_set_new(res, "ancestors", list);
	}
	if (json_is_true(json_object_get(inc, "children"))) {
		list = json_array();
		if (a != NULL)
			mapview_list_inner(list, a, xa->id, NULL, 1);
		json_object_set_new(res, "children", list);
	}
	if (json_is_true(json_object_get(inc, "descendants"))) {
		list = json_array();
		if (a != NULL)
			mapview_list_inner(list, a, xa->id, NULL,
			    MAPVIEW_INNER_DEPTH);
		json_object_set_new(res, "descendants", list);
	}
	rpc_reply(p, id, res);
}

/*
 * map/agents/get: one agent the caller may see, with the relatives
 * include asks for.
 */
void
mapview_get(struct peer *p, json_t *id, json_t *params)
{
	struct agent	*t, *x;
	struct external	*xa;
	json_t		*res, *inc, *list;
	int		 depth = -1;

	if (!mapview_need_id(p, id, params))
		return;
	if ((t = mapview_param_agent(params)) == NULL || !mapview_sees(p, t)) {
		if ((xa = mapview_param_external(params)) != NULL &&
		    mapview_sees_external(p, xa)) {
			mapview_get_external(p, id, params, xa);
			return;
		}
		rpc_error(p, id, CORRAL_E_NOTFOUND, "agent not found",
		    json_pack("{s:i}", "corralCode", CORRAL_E_OLD_NOTFOUND));
		return;
	}
	res = json_pack("{s:o}", "agent", mapview_describe(t));
	/* getAgent(id, options) spreads the options next to agentId. */
	inc = json_object_get(params, "include");
	if (inc == NULL)
		inc = params;
	depth = mapview_depth(inc, "maxDepth");
	if (json_is_true(json_object_get(inc, "parent")) && t->parent != NULL &&
	    mapview_sees(p, t->parent))
		json_object_set_new(res, "parent", mapview_describe(t->parent));
	if (json_is_true(json_object_get(inc, "children"))) {
		list = json_array();
		mapview_descend(p, t, list, 1);
		json_object_set_new(res, "children", list);
	}
	if (json_is_true(json_object_get(inc, "siblings"))) {
		list = json_array();
		for (x = agent_first(); x != NULL; x = agent_next(x))
			if (x != t && x->parent == t->parent &&
			    mapview_sees(p, x))
				json_array_append_new(list, mapview_describe(x));
		json_object_set_new(res, "siblings", list);
	}
	if (json_is_true(json_object_get(inc, "ancestors"))) {
		list = json_array();
		for (x = t->parent; x != NULL; x = x->parent)
			if (mapview_sees(p, x))
				json_array_append_new(list, mapview_describe(x));
		json_object_set_new(res, "ancestors", list);
	}
	if (json_is_true(json_object_get(inc, "descendants"))) {
		list = json_array();
		mapview_descend(p, t, list, depth);
		json_object_set_new(res, "descendants", list);
	}
	rpc_reply(p, id, res);
}

/* Is a within depth levels below root (depth < 0: any)? */
static int
mapview_under(struct agent *a, struct agent *root, int depth)
{
	int	d = 0;

	for (; a != NULL; a = a->parent, d++) {
		if (a == root)
			return depth < 0 || d <= depth;
	}
	return 0;
}

/*
 * map/structure/graph: the agents as nodes (the subtree of rootAgentId
 * down to depth, when given) and an edge from each parent to each child.
 */
void
mapview_graph(struct peer *p, json_t *id, json_t *params)
{
	struct agent	*t, *root = NULL;
	struct external	*x;
	json_t		*nodes, *edges, *v;
	int		 depth = -1;

	v = json_object_get(params, "rootAgentId");
	if (v != NULL) {
		if (!json_is_string(v) || (root = agent_find(
		    json_string_value(v))) == NULL || !mapview_sees(p, root)) {
			rpc_error(p, id, CORRAL_E_NOTFOUND, "agent not found",
			    json_pack("{s:i}", "corralCode",
			    CORRAL_E_OLD_NOTFOUND));
			return;
		}
	}
	depth = mapview_depth(params, "depth");
	nodes = json_array();
	edges = json_array();
	for (t = agent_first(); t != NULL; t = agent_next(t)) {
		if (!mapview_sees(p, t) || (root != NULL &&
		    !mapview_under(t, root, depth)))
			continue;
		json_array_append_new(nodes, mapview_describe(t));
		if (t->parent != NULL && t != root && mapview_sees(p, t->parent))
			json_array_append_new(edges, json_pack("{s:s, s:s, s:s}",
			    "from", t->parent->id, "to", t->id, "type",
			    "parent-child"));
		/* Those inside its tool are a level below it. */
		if (root != NULL && depth >= 0 && (depth == 0 ||
		    !mapview_under(t, root, depth - 1)))
			continue;
		for (x = external_first(); x != NULL; x = external_next(x)) {
			if (strcmp(x->parent, t->id) != 0)
				continue;
			json_array_append_new(nodes,
			    mapview_describe_external(x));
			json_array_append_new(edges, json_pack(
			    "{s:s, s:s, s:s}", "from", external_parent(x), "to",
			    x->id, "type", "parent-child"));
		}
	}
	rpc_reply(p, id, json_pack("{s:o, s:o}", "nodes", nodes, "edges",
	    edges));
}
