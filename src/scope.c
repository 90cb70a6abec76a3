/*
 * MAP's scopes, which are also the topics of publish/subscribe: a named
 * group of agents that a message addressed to the scope reaches.
 *
 * A scope is made by map/scopes/create, by an entry's subscribe: (its
 * agents join each time their process starts) or by an agent that
 * subscribes to a topic in its own dialect.  Members are agents, kept in
 * the order they joined; a message to the scope goes to each of them in
 * that order, so every subscriber sees a topic's messages in the order
 * corral accepted them.  A member that does not read its stdin misses
 * what is published meanwhile: its copy is dropped and counted here
 * (map/scopes/get shows the counts), and the send's message_failed event
 * names the reason.
 *
 * Everything is bounded: SCOPE_MAX scopes, SCOPE_MEMBERS members each
 * (the most targets one map/send reaches), names of SCOPE_ID_MAX bytes.
 * An agent leaves every scope when it is freed.
 *
 * This module sits below mapview.c: how an agent is described, and who
 * may see it, come from the hooks mapview registers.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

#define SCOPE_MAX	1024	/* scopes at once */
#define SCOPE_MEMBERS	256	/* members of one scope */
#define SCOPE_ID_MAX	128	/* bytes in a scope's id */

struct scope_member {
	struct agent		*agent;
	uint64_t		 joined_ms;
	uint64_t		 delivered;
	uint64_t		 dropped;
	TAILQ_ENTRY(scope_member) entry;
};

struct scope {
	char			*id;
	char			*name;
	char			*description;
	char			*creator;	/* participantId, or "workflow" */
	json_t			*metadata;
	uint64_t		 created_ms;
	uint64_t		 published;	/* sends to it */
	unsigned int		 nmembers;
	TAILQ_HEAD(, scope_member) members;
	TAILQ_ENTRY(scope)	 entry;
};

static TAILQ_HEAD(, scope)	 scope_list = TAILQ_HEAD_INITIALIZER(scope_list);
static unsigned int		 scope_count;
static struct scope_hooks	 scope_hooks;

static void	scope_agent_freed(struct agent *);
static void	scope_lifecycle(struct agent *, enum agent_state,
		    enum agent_state, enum agent_event, const char *);

/* Forget every scope, and learn of agents' starts and ends. */
void
scope_init(const struct scope_hooks *h)
{
	struct scope		*s;
	struct scope_member	*m;

	while ((s = TAILQ_FIRST(&scope_list)) != NULL) {
		TAILQ_REMOVE(&scope_list, s, entry);
		while ((m = TAILQ_FIRST(&s->members)) != NULL) {
			TAILQ_REMOVE(&s->members, m, entry);
			free(m);
		}
		free(s->id);
		free(s->name);
		free(s->description);
		free(s->creator);
		if (s->metadata != NULL)
			json_decref(s->metadata);
		free(s);
	}
	scope_count = 0;
	if (h != NULL)
		scope_hooks = *h;
	agent_on_free(scope_agent_freed);
	lifecycle_observe(scope_lifecycle);
}

/* Find a scope by id. */
static struct scope *
scope_find(const char *id)
{
	struct scope	*s;

	TAILQ_FOREACH(s, &scope_list, entry)
		if (strcmp(s->id, id) == 0)
			return s;
	return NULL;
}

/* Does a scope of this id exist? */
int
scope_exists(const char *id)
{
	return scope_find(id) != NULL;
}

/* Find an agent among a scope's members. */
static struct scope_member *
scope_member_find(struct scope *s, struct agent *a)
{
	struct scope_member	*m;

	TAILQ_FOREACH(m, &s->members, entry)
		if (m->agent == a)
			return m;
	return NULL;
}

/* Emit one of MAP's scope events. */
static void
scope_event(const char *type, const char *source, struct scope *s,
    struct agent *a)
{
	struct event_info	 ei;
	struct jsonw		 j;
	char			*text;
	size_t			 len;

	jsonw_init(&j);
	jsonw_object(&j);
	jsonw_key(&j, "scopeId");
	jsonw_str(&j, s->id);
	if (a != NULL) {
		jsonw_key(&j, "agentId");
		jsonw_str(&j, a->id);
	}
	if (s->name != NULL) {
		jsonw_key(&j, "name");
		jsonw_str(&j, s->name);
	}
	jsonw_object_end(&j);
	text = jsonw_finish(&j, &len);
	memset(&ei, 0, sizeof ei);
	ei.type = type;
	ei.source = source;
	ei.agent = a != NULL ? a->id : NULL;
	ei.agent_role = a != NULL ? a->conf->role : NULL;
	ei.audit = 1;
	event_emit(&ei, text, len);
	free(text);
}

/* Check a scope id: 1 to SCOPE_ID_MAX bytes of UTF-8, no control bytes. */
static int
scope_id_valid(const char *id)
{
	size_t			 len = strlen(id), bad;
	const unsigned char	*p;

	if (len == 0 || len > SCOPE_ID_MAX || !util_utf8_valid(id, len, &bad))
		return 0;
	for (p = (const unsigned char *)id; *p != '\0'; p++)
		if (*p < 0x20 || *p == 0x7f)
			return 0;
	return 1;
}

/*
 * Make a scope, or find the one of that id.  Returns it, or NULL with
 * a MAP error code and why.
 */
struct scope *
scope_create(const char *id, const char *creator, int *code, char *why,
    size_t whylen)
{
	struct scope	*s;

	if (!scope_id_valid(id)) {
		*code = CORRAL_E_PARAMS;
		snprintf(why, whylen, "a scope id is 1 to %d bytes of text",
		    SCOPE_ID_MAX);
		return NULL;
	}
	if ((s = scope_find(id)) != NULL)
		return s;
	if (scope_count >= SCOPE_MAX) {
		*code = CORRAL_E_EXHAUSTED;
		snprintf(why, whylen, "corral holds at most %d scopes",
		    SCOPE_MAX);
		return NULL;
	}
	s = xcalloc(1, sizeof *s);
	s->id = xstrdup(id);
	s->creator = xstrdup(creator);
	s->created_ms = event_now_ms();
	TAILQ_INIT(&s->members);
	TAILQ_INSERT_TAIL(&scope_list, s, entry);
	scope_count++;
	log_debug("scope %s: created by %s", s->id, creator);
	scope_event("scope_created", creator, s, NULL);
	return s;
}

/*
 * Add agent a to scope s.  Returns 1 when it joined, 0 when it was a
 * member already, -1 when the scope is full.
 */
static int
scope_add(struct scope *s, struct agent *a, const char *by)
{
	struct scope_member	*m;

	if (scope_member_find(s, a) != NULL)
		return 0;
	if (s->nmembers >= SCOPE_MEMBERS)
		return -1;
	m = xcalloc(1, sizeof *m);
	m->agent = a;
	m->joined_ms = event_now_ms();
	TAILQ_INSERT_TAIL(&s->members, m, entry);
	s->nmembers++;
	log_debug("scope %s: %s joined", s->id, a->id);
	scope_event("scope_member_joined", by, s, a);
	return 1;
}

/* Take agent a out of scope s; returns nonzero if it was a member. */
static int
scope_remove(struct scope *s, struct agent *a, const char *by)
{
	struct scope_member	*m;

	if ((m = scope_member_find(s, a)) == NULL)
		return 0;
	TAILQ_REMOVE(&s->members, m, entry);
	s->nmembers--;
	free(m);
	if (by != NULL)
		scope_event("scope_member_left", by, s, a);
	return 1;
}

/*
 * An agent joins a topic by name, making it when there is none: its
 * entry's subscribe:, or a subscribe in its dialect.  Returns 0, or a
 * MAP error code with why.
 */
int
scope_subscribe(struct agent *a, const char *topic, char *why, size_t whylen)
{
	struct scope	*s;
	int		 code = 0;

	if ((s = scope_create(topic, a->id, &code, why, whylen)) == NULL)
		return code;
	if (scope_add(s, a, a->id) < 0) {
		snprintf(why, whylen, "scope %s has %d members, the most it "
		    "may have", s->id, SCOPE_MEMBERS);
		return CORRAL_E_EXHAUSTED;
	}
	return 0;
}

/*
 * May an agent join the scopes a spawn names (a list of ids)?  0, or a
 * MAP error code with why: no such scope, or one that is full.
 */
int
scope_check_join(json_t *ids, char *why, size_t whylen)
{
	struct scope	*s;
	json_t		*v;
	size_t		 i;

	if (ids != NULL && !json_is_array(ids)) {
		snprintf(why, whylen, "params.scopes is a list of scope ids");
		return CORRAL_E_PARAMS;
	}
	json_array_foreach(ids, i, v) {
		if (!json_is_string(v)) {
			snprintf(why, whylen, "params.scopes[%zu] is no scope id",
			    i);
			return CORRAL_E_PARAMS;
		}
		if ((s = scope_find(json_string_value(v))) == NULL) {
			snprintf(why, whylen, "scope %.128s does not exist",
			    json_string_value(v));
			return CORRAL_E_NOSCOPE;
		}
		if (s->nmembers >= SCOPE_MEMBERS) {
			snprintf(why, whylen, "scope %s has %d members, the most "
			    "it may have", s->id, SCOPE_MEMBERS);
			return CORRAL_E_EXHAUSTED;
		}
	}
	return 0;
}

/*
 * A spawned agent joins the scopes its spawn named (scope_check_join said
 * it may), by whoever spawned it.
 */
void
scope_join(json_t *ids, struct agent *a, const char *by)
{
	struct scope	*s;
	json_t		*v;
	size_t		 i;

	json_array_foreach(ids, i, v)
		if ((s = scope_find(json_string_value(v))) != NULL &&
		    scope_add(s, a, by) < 0)
			log_warnx("agent %s: scope %s is full", a->id, s->id);
}

/* An agent leaves a topic; nonzero if it was subscribed. */
int
scope_unsubscribe(struct agent *a, const char *topic)
{
	struct scope	*s = scope_find(topic);

	return s != NULL && scope_remove(s, a, a->id);
}

/*
 * An agent's process starts: it joins the topics of its entry's
 * subscribe: (again, after a restart; joining twice changes nothing).
 */
static void
scope_lifecycle(struct agent *a, enum agent_state from, enum agent_state to,
    enum agent_event ev, const char *why)
{
	char	err[200];
	size_t	i;

	if (ev != AE_SPAWNED || a->conf->subscribe == NULL)
		return;
	for (i = 0; i < a->conf->nsubscribe; i++)
		if (scope_subscribe(a, a->conf->subscribe[i], err,
		    sizeof err) != 0)
			log_warnx("agent %s: cannot subscribe to %s: %s",
			    a->id, a->conf->subscribe[i], err);
}

/* An agent is freed: it leaves every scope, silently. */
static void
scope_agent_freed(struct agent *a)
{
	struct scope	*s;

	TAILQ_FOREACH(s, &scope_list, entry)
		(void)scope_remove(s, a, NULL);
}

/*
 * The members of a scope, in the order they joined, for a send: calls fn
 * for each.  Returns the number of members, or -1 when there is no such
 * scope.
 */
int
scope_each(const char *id, void (*fn)(struct agent *, void *), void *arg)
{
	struct scope		*s = scope_find(id);
	struct scope_member	*m, *next;
	int			 n = 0;

	if (s == NULL)
		return -1;
	s->published++;
	TAILQ_FOREACH_SAFE(m, &s->members, entry, next) {
		fn(m->agent, arg);
		n++;
	}
	return n;
}

/* Count one copy of a scope's message to a member: taken, or dropped. */
void
scope_count_delivery(const char *id, struct agent *a, int dropped)
{
	struct scope		*s = scope_find(id);
	struct scope_member	*m;

	if (s == NULL || (m = scope_member_find(s, a)) == NULL)
		return;
	if (dropped)
		m->dropped++;
	else
		m->delivered++;
}

/* Is agent a a member of scope id? */
int
scope_has(const char *id, struct agent *a)
{
	struct scope	*s = scope_find(id);

	return s != NULL && scope_member_find(s, a) != NULL;
}

/* The scopes an agent is in, as a JSON array of ids (a new reference). */
json_t *
scope_of(struct agent *a)
{
	struct scope	*s;
	json_t		*ids = json_array();

	TAILQ_FOREACH(s, &scope_list, entry)
		if (scope_member_find(s, a) != NULL)
			json_array_append_new(ids, json_string(s->id));
	return ids;
}

/* MAP's Scope object for s (a new reference). */
static json_t *
scope_json(struct scope *s, int counts)
{
	struct scope_member	*m;
	json_t			*o, *c, *mm;

	/*
	 * The members the SDK's strict ScopeSchema knows; its sendPolicy
	 * words differ from its own type's, so corral leaves it out (any
	 * participant may send), and the description goes under _meta.
	 */
	o = json_pack("{s:s, s:s, s:s, s:s}", "id", s->id, "joinPolicy",
	    "open", "visibility", "public", "messageVisibility", "members");
	if (s->name != NULL)
		json_object_set_new(o, "name", json_string(s->name));
	if (s->metadata != NULL)
		json_object_set(o, "metadata", s->metadata);
	c = json_pack("{s:s, s:I, s:I, s:I}", "creator", s->creator,
	    "createdAt", (json_int_t)s->created_ms, "members",
	    (json_int_t)s->nmembers, "published", (json_int_t)s->published);
	if (s->description != NULL)
		json_object_set_new(c, "description",
		    json_string(s->description));
	if (counts) {
		mm = json_object();
		TAILQ_FOREACH(m, &s->members, entry)
			json_object_set_new(mm, m->agent->id, json_pack(
			    "{s:I, s:I, s:I}", "joinedAt",
			    (json_int_t)m->joined_ms, "delivered",
			    (json_int_t)m->delivered, "dropped",
			    (json_int_t)m->dropped));
		json_object_set_new(c, "delivery", mm);
	}
	json_object_set_new(o, "_meta", json_pack("{s:o}", "corral", c));
	return o;
}

/* The scope named by params.scopeId, or NULL after answering an error. */
static struct scope *
scope_param(struct peer *p, json_t *id, json_t *params)
{
	const char	*sid = json_string_value(json_object_get(params,
			    "scopeId"));
	struct scope	*s;

	if (sid == NULL) {
		rpc_error(p, id, CORRAL_E_PARAMS, "params.scopeId must be a "
		    "string", NULL);
		return NULL;
	}
	if ((s = scope_find(sid)) == NULL) {
		rpc_error(p, id, CORRAL_E_NOSCOPE, "no such scope", NULL);
		return NULL;
	}
	return s;
}

/*
 * The agent named by params.agentId for a join or leave: an agent may
 * act for itself only, a client for any agent it sees.  NULL after
 * answering an error.
 */
static struct agent *
scope_param_agent(struct peer *p, json_t *id, json_t *params)
{
	const char	*aid = json_string_value(json_object_get(params,
			    "agentId"));
	struct agent	*a;

	if (aid == NULL && p->agent != NULL)
		return p->agent;
	if (aid == NULL || (a = agent_find(aid)) == NULL ||
	    (scope_hooks.sees != NULL && !scope_hooks.sees(p, a))) {
		rpc_error(p, id, CORRAL_E_NOTFOUND, "agent not found", NULL);
		return NULL;
	}
	if (p->agent != NULL && a != p->agent) {
		rpc_error(p, id, CORRAL_E_DENIED, "an agent may join or leave "
		    "scopes only itself", NULL);
		return NULL;
	}
	return a;
}

/* The agent's description for an answer (a new reference). */
static json_t *
scope_describe(struct agent *a)
{
	if (scope_hooks.describe != NULL)
		return scope_hooks.describe(a);
	return json_pack("{s:s}", "id", a->id);
}

/* map/scopes/list: every scope, in the order they were made. */
void
scope_list_request(struct peer *p, json_t *id, json_t *params)
{
	struct scope	*s;
	json_t		*list = json_array();

	TAILQ_FOREACH(s, &scope_list, entry)
		json_array_append_new(list, scope_json(s, 0));
	rpc_reply(p, id, json_pack("{s:o}", "scopes", list));
}

/* map/scopes/get: one scope, with each member's delivery counts. */
void
scope_get_request(struct peer *p, json_t *id, json_t *params)
{
	struct scope	*s;

	if ((s = scope_param(p, id, params)) != NULL)
		rpc_reply(p, id, json_pack("{s:o}", "scope", scope_json(s, 1)));
}

/* map/scopes/create: a new scope (or the one of that id). */
void
scope_create_request(struct peer *p, json_t *id, json_t *params)
{
	struct scope	*s;
	json_t		*v;
	const char	*sid, *name;
	char		 why[200], gen[EVENT_ID_LEN + 1];
	int		 code = 0;

	if (params != NULL && !json_is_object(params)) {
		rpc_error(p, id, CORRAL_E_PARAMS, "params must be an object",
		    NULL);
		return;
	}
	v = json_object_get(params, "scopeId");
	if (v != NULL && !json_is_string(v)) {
		rpc_error(p, id, CORRAL_E_PARAMS, "params.scopeId must be a "
		    "string", NULL);
		return;
	}
	name = json_string_value(json_object_get(params, "name"));
	if ((sid = json_string_value(v)) == NULL) {
		event_new_id(gen);
		sid = name != NULL && !scope_exists(name) ? name : gen;
	}
	if ((s = scope_create(sid, p->name, &code, why, sizeof why)) == NULL) {
		rpc_error(p, id, code, why, NULL);
		return;
	}
	if (name != NULL && s->name == NULL)
		s->name = xstrndup(name, SCOPE_ID_MAX);
	v = json_object_get(params, "description");
	if (json_is_string(v) && s->description == NULL)
		s->description = xstrndup(json_string_value(v), 1024);
	v = json_object_get(params, "metadata");
	if (json_is_object(v) && s->metadata == NULL)
		s->metadata = json_deep_copy(v);
	rpc_reply(p, id, json_pack("{s:o}", "scope", scope_json(s, 0)));
}

/* map/scopes/delete: the scope and its memberships go. */
void
scope_delete_request(struct peer *p, json_t *id, json_t *params)
{
	struct scope		*s;
	struct scope_member	*m;
	json_t			*res;

	if ((s = scope_param(p, id, params)) == NULL)
		return;
	res = scope_json(s, 0);
	TAILQ_REMOVE(&scope_list, s, entry);
	scope_count--;
	scope_event("scope_deleted", p->name, s, NULL);
	while ((m = TAILQ_FIRST(&s->members)) != NULL) {
		TAILQ_REMOVE(&s->members, m, entry);
		free(m);
	}
	free(s->id);
	free(s->name);
	free(s->description);
	free(s->creator);
	if (s->metadata != NULL)
		json_decref(s->metadata);
	free(s);
	rpc_reply(p, id, json_pack("{s:o}", "scope", res));
}

/*
 * map/scopes/join and map/scopes/leave.  A join with corral's "create":
 * true makes the scope when there is none (a subscription to a topic).
 */
static void
scope_join_leave(struct peer *p, json_t *id, json_t *params, int join)
{
	struct scope	*s;
	struct agent	*a;
	const char	*sid = json_string_value(json_object_get(params,
			    "scopeId"));
	char		 why[200];
	int		 code = 0;

	if (join && sid != NULL && json_is_true(json_object_get(params,
	    "create")) && !scope_exists(sid) &&
	    scope_create(sid, p->name, &code, why, sizeof why) == NULL) {
		rpc_error(p, id, code, why, NULL);
		return;
	}
	if ((s = scope_param(p, id, params)) == NULL ||
	    (a = scope_param_agent(p, id, params)) == NULL)
		return;
	if (join && scope_add(s, a, p->name) < 0) {
		rpc_error(p, id, CORRAL_E_EXHAUSTED, "the scope has as many "
		    "members as it may have", NULL);
		return;
	}
	if (!join)
		(void)scope_remove(s, a, p->name);
	rpc_reply(p, id, json_pack("{s:o, s:o}", "scope", scope_json(s, 0),
	    "agent", scope_describe(a)));
}

/* map/scopes/join: an agent becomes a member (joining twice is fine). */
void
scope_join_request(struct peer *p, json_t *id, json_t *params)
{
	scope_join_leave(p, id, params, 1);
}

/* map/scopes/leave: an agent stops being a member. */
void
scope_leave_request(struct peer *p, json_t *id, json_t *params)
{
	scope_join_leave(p, id, params, 0);
}

/* map/scopes/members: the members' ids, in the order they joined. */
void
scope_members_request(struct peer *p, json_t *id, json_t *params)
{
	struct scope		*s;
	struct scope_member	*m;
	json_t			*ids;

	if ((s = scope_param(p, id, params)) == NULL)
		return;
	ids = json_array();
	TAILQ_FOREACH(m, &s->members, entry)
		if (scope_hooks.sees == NULL || scope_hooks.sees(p, m->agent))
			json_array_append_new(ids, json_string(m->agent->id));
	rpc_reply(p, id, json_pack("{s:o}", "members", ids));
}
