/*
 * Unit tests of MAP's event stream (src/event.c): event ids, the naming
 * styles of event types, subscriptions and their filters and sequence
 * numbers, map/replay from the history, and lazily kept state changes.
 *
 * Frames go to a peer whose channel writes into a pipe; the tests read
 * them back and check them with jansson.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "corral.h"

static struct chan	 uchan;
static struct peer	 upeer;
static int		 ufd[2];

/* A peer on a pipe, a loop, an empty history. */
static int
setup(void **state)
{
	if (ev_default_loop(EVFLAG_AUTO) == NULL || pipe(ufd) == -1)
		return -1;
	(void)fcntl(ufd[0], F_SETFL, O_NONBLOCK);
	chan_init(&uchan, "client:unit", -1, ufd[1], 1 << 20, NULL);
	memset(&upeer, 0, sizeof upeer);
	upeer.name = "client:unit";
	upeer.chan = &uchan;
	upeer.role = PEER_CLIENT;
	event_init();
	return 0;
}

/* Close the pipe and forget the subscriptions. */
static int
teardown(void **state)
{
	event_peer_gone(&upeer);
	event_init();
	chan_close(&uchan);
	close(ufd[0]);
	return 0;
}

/* The frames written so far, parsed (a new JSON array). */
static json_t *
frames(void)
{
	static char	buf[1 << 20];
	json_t		*a = json_array(), *j;
	ssize_t		 n;
	size_t		 len = 0;
	char		*p, *nl;

	chan_flush_all();
	while ((n = read(ufd[0], buf + len, sizeof buf - len - 1)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	for (p = buf; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
		*nl = '\0';
		j = json_loads(p, 0, NULL);
		assert_non_null(j);
		json_array_append_new(a, j);
	}
	return a;
}

/* Emit an event of a type from a source. */
static void
emit(const char *type, const char *source, const char *role)
{
	struct event_info	ei;
	char			data[128];

	memset(&ei, 0, sizeof ei);
	ei.type = type;
	ei.source = source;
	ei.source_role = role;
	ei.agent = source;
	ei.agent_role = role;
	snprintf(data, sizeof data, "{\"agentId\":\"%s\"}", source);
	event_emit(&ei, data, strlen(data));
}

/* Ids are ULIDs and grow, even many within one millisecond. */
static void
test_ids(void **state)
{
	char	prev[EVENT_ID_LEN + 1] = "", id[EVENT_ID_LEN + 1];
	int	i;
	size_t	k;

	for (i = 0; i < 5000; i++) {
		event_new_id(id);
		assert_int_equal(strlen(id), 26);
		assert_true(id[0] >= '0' && id[0] <= '7');
		for (k = 0; k < 26; k++)
			assert_non_null(strchr("0123456789ABCDEFGHJKMNPQRSTVWXYZ",
			    id[k]));
		assert_true(strcmp(id, prev) > 0);
		strlcpy(prev, id, sizeof prev);
	}
}

/*
 * Ids of different milliseconds have random parts of their own: 60 of
 * them take the pool of random bytes through two refills.
 */
static void
test_ids_random(void **state)
{
	char		 id[60][EVENT_ID_LEN + 1];
	uint64_t	 ms;
	int		 i, j;

	for (i = 0; i < 60; i++) {
		ms = event_now_ms();
		do {	/* the next millisecond of the loop's clock */
			usleep(200);
			ev_now_update(LOOP);
		} while (event_now_ms() == ms);
		event_new_id(id[i]);
		/* The first 10 characters are the time, the rest random. */
		for (j = 0; j < i; j++) {
			assert_true(strcmp(id[i], id[j]) > 0);
			assert_memory_not_equal(id[i] + 10, id[j] + 10, 16);
		}
	}
}

/* Filters name event types in any style, with prefixes and "*". */
static void
test_types(void **state)
{
	assert_true(event_type_match("agent_registered", "agent_registered"));
	assert_true(event_type_match("agent_registered", "agent.registered"));
	assert_true(event_type_match("agent_registered", "agent-registered"));
	assert_true(event_type_match("agent_state_changed", "agent.state-changed"));
	assert_true(event_type_match("agent_state_changed", "agent.*"));
	assert_true(event_type_match("message_sent", "message_*"));
	assert_true(event_type_match("system_error", "*"));
	assert_false(event_type_match("agent_registered", "agent"));
	assert_false(event_type_match("agent_registered", "message.*"));
	assert_false(event_type_match("agent_registered", "agent_unregistered"));
}

/*
 * A subscription's answer comes before its events; it gets only what its
 * filter passes, numbered 1, 2, 3; nothing after it ends.
 */
static void
test_subscribe(void **state)
{
	json_t		*params, *f, *id = json_integer(7), *x;
	const char	*sid;
	size_t		 i;

	params = json_loads("{\"filter\":{\"eventTypes\":[\"agent.state.changed\"],"
	    "\"fromRoles\":[\"worker\"]}}", 0, NULL);
	event_subscribe(&upeer, id, params);
	emit("agent_state_changed", "a", "worker");
	emit("agent_registered", "a", "worker");
	emit("agent_state_changed", "b", "boss");
	emit("agent_state_changed", "c", "worker");
	f = frames();
	assert_int_equal(json_array_size(f), 3);
	sid = json_string_value(json_object_get(json_object_get(
	    json_array_get(f, 0), "result"), "subscriptionId"));
	assert_non_null(sid);
	for (i = 1; i < 3; i++) {
		x = json_object_get(json_array_get(f, i), "params");
		assert_string_equal(json_string_value(json_object_get(
		    json_array_get(f, i), "method")), "map/event");
		assert_string_equal(json_string_value(json_object_get(x,
		    "subscriptionId")), sid);
		assert_int_equal(json_integer_value(json_object_get(x,
		    "sequenceNumber")), i);
		assert_string_equal(json_string_value(json_object_get(
		    json_object_get(x, "event"), "type")), "agent_state_changed");
		assert_string_equal(json_string_value(json_object_get(x,
		    "eventId")), json_string_value(json_object_get(
		    json_object_get(x, "event"), "id")));
	}
	json_decref(params);
	params = json_pack("{s:s}", "subscriptionId", sid);
	event_unsubscribe(&upeer, id, params);
	emit("agent_state_changed", "a", "worker");
	json_decref(f);
	f = frames();
	assert_int_equal(json_array_size(f), 1);	/* the answer only */
	assert_non_null(json_object_get(json_object_get(json_array_get(f, 0),
	    "result"), "subscription"));
	json_decref(f);
	json_decref(params);
	json_decref(id);
}

/* Emit an event whose data is given. */
static void
emit_data(const char *type, const char *source, const char *data)
{
	struct event_info	ei;

	memset(&ei, 0, sizeof ei);
	ei.type = type;
	ei.source = source;
	event_emit(&ei, data, strlen(data));
}

/*
 * A scopes filter passes the events of those scopes: a scope's own
 * (data.scopeId) and messages sent to it (data.to or data.message.to,
 * {scope} or {role, within}), live and in a replay; nothing else.
 */
static void
test_scopes(void **state)
{
	json_t		*params, *f, *res, *x, *id = json_integer(8);
	const char	*want[] = { "scope_member_joined", "message_sent",
			    "message_failed", "message_delivered" };
	size_t		 i;

	params = json_loads("{\"filter\":{\"scopes\":[\"s1\",\"s3\"]}}", 0,
	    NULL);
	event_subscribe(&upeer, id, params);
	emit_data("scope_member_joined", "a", "{\"scopeId\":\"s1\","
	    "\"agentId\":\"a\"}");
	emit_data("scope_member_joined", "b", "{\"scopeId\":\"s2\","
	    "\"agentId\":\"b\"}");
	emit_data("message_sent", "a", "{\"messageId\":\"m1\",\"from\":\"a\","
	    "\"to\":{\"scope\":\"s3\"}}");
	emit_data("message_sent", "a", "{\"messageId\":\"m2\",\"from\":\"a\","
	    "\"to\":{\"agent\":\"b\"}}");
	emit_data("message_failed", "a", "{\"messageId\":\"m3\",\"from\":"
	    "\"a\",\"to\":{\"role\":\"r\",\"within\":\"s1\"}}");
	emit_data("message_delivered", "a", "{\"messageId\":\"m1\",\"from\":"
	    "\"a\",\"message\":{\"to\":{\"scope\":\"s3\"}}}");
	emit("agent_state_changed", "a", NULL);
	f = frames();
	assert_int_equal(json_array_size(f), 5);
	for (i = 0; i < 4; i++)
		assert_string_equal(json_string_value(json_object_get(
		    json_object_get(json_object_get(json_array_get(f, i + 1),
		    "params"), "event"), "type")), want[i]);
	json_decref(f);
	json_decref(params);

	params = json_loads("{\"filter\":{\"scopes\":[\"s2\"]}}", 0, NULL);
	event_replay(&upeer, id, params);
	f = frames();
	res = json_object_get(json_array_get(f, 0), "result");
	assert_int_equal(json_array_size(json_object_get(res, "events")), 1);
	x = json_object_get(json_array_get(json_object_get(res, "events"), 0),
	    "event");
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    x, "data"), "agentId")), "b");
	json_decref(f);
	json_decref(params);
	json_decref(id);
}

/* map/replay: after an id, with a limit and a filter, in order. */
static void
test_replay(void **state)
{
	json_t		*f, *res, *ev, *params, *id = json_string("r1");
	char		 first[EVENT_ID_LEN + 1];
	int		 i;

	for (i = 0; i < 10; i++)
		emit(i % 2 ? "message_sent" : "agent_state_changed",
		    i % 2 ? "x" : "y", NULL);
	params = json_pack("{s:i}", "limit", 1000);
	event_replay(&upeer, id, params);
	json_decref(params);
	f = frames();
	res = json_object_get(json_array_get(f, 0), "result");
	assert_int_equal(json_array_size(json_object_get(res, "events")), 10);
	assert_false(json_is_true(json_object_get(res, "hasMore")));
	strlcpy(first, json_string_value(json_object_get(json_array_get(
	    json_object_get(res, "events"), 0), "eventId")), sizeof first);
	json_decref(f);

	params = json_pack("{s:s, s:i, s:{s:[s]}}", "afterEventId", first,
	    "limit", 2, "filter", "eventTypes", "message_sent");
	event_replay(&upeer, id, params);
	json_decref(params);
	f = frames();
	res = json_object_get(json_array_get(f, 0), "result");
	assert_string_equal(json_string_value(json_object_get(
	    json_array_get(f, 0), "id")), "r1");
	assert_int_equal(json_array_size(json_object_get(res, "events")), 2);
	assert_true(json_is_true(json_object_get(res, "hasMore")));
	assert_int_equal(json_integer_value(json_object_get(res,
	    "totalCount")), 5);
	ev = json_object_get(json_array_get(json_object_get(res, "events"), 0),
	    "event");
	assert_string_equal(json_string_value(json_object_get(ev, "type")),
	    "message_sent");
	assert_true(strcmp(json_string_value(json_object_get(ev, "id")),
	    first) > 0);
	json_decref(f);
	json_decref(id);
}

/*
 * A state change nobody watches is kept lazily; written out for a
 * replay, it has the same bytes as one written at once (ids and times
 * aside).
 */
static void
test_lazy(void **state)
{
	json_t		*f, *res, *params, *id = json_integer(3), *e0, *e1;
	char		*s0, *s1;

	event_emit_state("a", "worker", "idle", "busy", "BUSY", NULL, 0);
	event_subscribe(&upeer, id, NULL);
	event_emit_state("a", "worker", "idle", "busy", "BUSY", NULL, 0);
	json_decref(frames());		/* the answer and the live event */
	params = json_pack("{s:{s:[s]}}", "filter", "roles", "worker");
	event_replay(&upeer, id, params);
	json_decref(params);
	f = frames();
	res = json_object_get(json_array_get(f, 0), "result");
	assert_int_equal(json_array_size(json_object_get(res, "events")), 2);
	e0 = json_object_get(json_array_get(json_object_get(res, "events"), 0),
	    "event");
	e1 = json_object_get(json_array_get(json_object_get(res, "events"), 1),
	    "event");
	json_object_del(e0, "id");
	json_object_del(e0, "timestamp");
	json_object_del(e1, "id");
	json_object_del(e1, "timestamp");
	s0 = json_dumps(e0, JSON_COMPACT);
	s1 = json_dumps(e1, JSON_COMPACT);
	assert_string_equal(s0, s1);
	assert_string_equal(s0, "{\"type\":\"agent_state_changed\",\"source\":"
	    "\"a\",\"data\":{\"agentId\":\"a\",\"previousState\":\"idle\","
	    "\"newState\":\"busy\",\"corralState\":\"BUSY\"}}");
	free(s0);
	free(s1);
	json_decref(f);
	json_decref(id);
}

static char	rawbuf[1 << 20];

/* The buffer raw() fills. */
static char *
raw_buf(void)
{
	return rawbuf;
}

/* What the peer's pipe holds so far, as written (a static buffer). */
static char *
raw(size_t *len)
{
	char		*buf = rawbuf;
	ssize_t		n;

	chan_flush_all();
	*len = 0;
	while ((n = read(ufd[0], buf + *len, sizeof rawbuf - *len - 1)) > 0)
		*len += (size_t)n;
	buf[*len] = '\0';
	return buf;
}

/*
 * A flat event (its data all strings) is kept compact: the text a
 * replay writes for it later is, byte for byte, the text its subscriber
 * got at once, escapes, nulls and left-out members included.
 */
static void
test_flat(void **state)
{
	static const char *const shape[] = {
		"agentId", "name", "?role", "?parent", "ownerId", "state", NULL
	};
	const char		*vals[6] = { "a\"b\\c\001\xc3\xa9\xff", "n\n",
				    NULL, "p", NULL, "registered" };
	struct event_info	 ei;
	json_t			*id = json_integer(4);
	char			*live, *base, *p, *q, *t, *first;
	json_t			*f;
	size_t			 len, tlen, held;
	int			 n = 0;

	event_subscribe(&upeer, id, NULL);
	(void)raw(&len);
	memset(&ei, 0, sizeof ei);
	ei.type = "agent_registered";
	ei.source = vals[0];
	ei.agent = vals[0];
	ei.audit = 1;
	event_emit_flat(&ei, shape, vals);
	event_emit_state("x", NULL, "registered", "idle", "READY",
	    "it \"said\" so", 1);
	/* The live events: each frame ends with "event":TEXT}} */
	p = raw(&len);
	live = strdup(p);
	assert_non_null(live);
	assert_non_null(strstr(live, "\"data\":{\"agentId\":\"a\\\"b\\\\c"
	    "\\u0001\xc3\xa9\xef\xbf\xbd\",\"name\":\"n\\n\",\"parent\":\"p\","
	    "\"ownerId\":null,\"state\":\"registered\"}"));
	assert_non_null(strstr(live, "\"reason\":\"it \\\"said\\\" so\""));
	held = event_history_bytes();
	event_replay(&upeer, id, NULL);
	base = raw(&len);
	p = base;
	for (t = live; (q = strchr(t, '\n')) != NULL; t = q + 1) {
		*q = '\0';
		t = strstr(t, ",\"event\":{\"id\":") + 9;
		tlen = strlen(t) - 2;
		/* The same bytes in the replay's answer, followed by its }. */
		p = memmem(p, len - (size_t)(p - base), t, tlen);
		assert_non_null(p);
		assert_int_equal(p[tlen], '}');
		n++;
	}
	assert_int_equal(n, 2);
	/*
	 * A filter that reads the text (scopes), then the whole history
	 * again: the records render as they did, however often they are
	 * read, and stay compact (no reader keeps their text).
	 */
	first = strndup(base, len);
	assert_non_null(first);
	f = json_loads("{\"filter\":{\"scopes\":[\"s\"]}}", 0, NULL);
	event_replay(&upeer, id, f);
	json_decref(f);
	(void)raw(&len);
	event_replay(&upeer, id, NULL);
	p = raw(&len);
	assert_string_equal(p, first);
	assert_int_equal(event_history_bytes(), held);
	free(first);
	free(live);
	json_decref(id);
}

/* Emit an agent's start: agent_registered, then its first state change. */
static void
start(const char *agent, const char *role)
{
	static const char *const shape[] = {
		"agentId", "name", "?role", "?parent", "ownerId", "state", NULL
	};
	const char		*vals[6] = { agent, "echo", role, NULL,
				    "corral", "registered" };
	struct event_info	 ei;

	memset(&ei, 0, sizeof ei);
	ei.type = "agent_registered";
	ei.source = agent;
	ei.source_role = role;
	ei.agent = agent;
	ei.agent_role = role;
	ei.audit = 1;
	ei.lend = 1;		/* as corral's agents do, until freed */
	event_emit_flat(&ei, shape, vals);
	event_emit_state(agent, role, "registered", "idle", "READY", NULL, 1);
}

/* The events of one map/replay answer (a new JSON array). */
static json_t *
replayed(json_t *params)
{
	json_t	*id = json_integer(5), *f, *evs;

	event_replay(&upeer, id, params);
	json_decref(id);
	f = frames();
	evs = json_object_get(json_object_get(json_array_get(f, 0), "result"),
	    "events");
	assert_non_null(evs);
	json_incref(evs);
	json_decref(f);
	return evs;
}

/*
 * An agent's two start events share one record of the history until
 * read: a replay, filtered or from an id, gives the same events, in the
 * same order and with the same bytes as their subscriber got, and so it
 * does once the oldest of them leaves a full history.
 */
static void
test_pair(void **state)
{
	static const char	 role[] = "worker";
	static const char *const shape[] = { "agentId", "?note", NULL };
	const char		*vals[2] = { "a2", "x" };
	struct event_info	 ei;
	json_t			*id = json_integer(6), *evs, *p;
	char			*live, *t, *q, *base, ids[6][EVENT_ID_LEN + 1];
	size_t			 len, tlen, n = 0, i;

	event_subscribe(&upeer, id, NULL);
	(void)raw(&len);
	start("a", role);
	start("b", NULL);
	/* About an agent that is not its source: both keys kept. */
	memset(&ei, 0, sizeof ei);
	ei.type = "agent_state_changed";
	ei.source = "s";
	ei.agent = "a2";
	ei.audit = 1;
	event_emit_flat(&ei, shape, vals);
	emit("message_sent", "b", NULL);
	live = strdup(raw(&len));
	assert_non_null(live);
	assert_int_equal(event_history_slots(), 4);
	event_replay(&upeer, id, NULL);
	base = raw(&len);
	for (t = live; (q = strchr(t, '\n')) != NULL; t = q + 1) {
		*q = '\0';
		t = strstr(t, ",\"event\":{\"id\":") + 9;
		tlen = strlen(t) - 2;
		assert_true(n < 6);
		memcpy(ids[n], t + 7, EVENT_ID_LEN);
		ids[n][EVENT_ID_LEN] = '\0';
		/* In order, the same bytes in the replay's answer. */
		base = memmem(base, len - (size_t)(base - raw_buf()), t, tlen);
		assert_non_null(base);
		assert_int_equal(base[tlen], '}');
		n++;
	}
	assert_int_equal(n, 6);
	free(live);

	/* From the first's id: its pair's second first. */
	p = json_pack("{s:s}", "afterEventId", ids[0]);
	evs = replayed(p);
	json_decref(p);
	assert_int_equal(json_array_size(evs), 5);
	assert_string_equal(json_string_value(json_object_get(
	    json_array_get(evs, 0), "eventId")), ids[1]);
	json_decref(evs);
	p = json_pack("{s:{s:[s]}}", "filter", "eventTypes",
	    "agent_state_changed");
	evs = replayed(p);
	json_decref(p);
	assert_int_equal(json_array_size(evs), 3);
	assert_string_equal(json_string_value(json_object_get(
	    json_array_get(evs, 1), "eventId")), ids[3]);
	json_decref(evs);

	/* A full history: the oldest event leaves, its pair's second stays. */
	event_peer_gone(&upeer);
	for (i = 6; i < 10001; i++)
		emit("message_sent", "c", NULL);
	p = json_pack("{s:i}", "limit", 2);
	evs = replayed(p);
	json_decref(p);
	assert_string_equal(json_string_value(json_object_get(
	    json_array_get(evs, 0), "eventId")), ids[1]);
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    json_array_get(evs, 0), "event"), "type")), "agent_state_changed");
	assert_string_equal(json_string_value(json_object_get(
	    json_array_get(evs, 1), "eventId")), ids[2]);
	json_decref(evs);
	assert_int_equal(event_history_slots(), 9999);
	emit("message_sent", "c", NULL);
	emit("message_sent", "c", NULL);
	p = json_pack("{s:i}", "limit", 1);
	evs = replayed(p);
	json_decref(p);
	assert_string_equal(json_string_value(json_object_get(
	    json_array_get(evs, 0), "eventId")), ids[3]);
	json_decref(evs);
	json_decref(id);
}

/*
 * A replay of everything gives, in order, the bytes of each event in
 * live (the notifications a subscriber got); returns how many.
 */
static size_t
replay_matches(const char *live)
{
	json_t	*id = json_integer(10);
	char	*copy, *t, *q, *base;
	size_t	 len, tlen, n = 0;

	copy = strdup(live);
	assert_non_null(copy);
	event_replay(&upeer, id, NULL);
	json_decref(id);
	base = raw(&len);
	for (t = copy; (q = strchr(t, '\n')) != NULL; t = q + 1) {
		*q = '\0';
		t = strstr(t, ",\"event\":{\"id\":") + 9;
		tlen = strlen(t) - 2;
		base = memmem(base, len - (size_t)(base - raw_buf()), t, tlen);
		assert_non_null(base);
		assert_int_equal(base[tlen], '}');
		n++;
	}
	free(copy);
	return n;
}

/*
 * While its agent lives, a start pair keeps the agent's id lent, not
 * copied, and the rest of its keys in a buffer it shares with pairs
 * alike.  A replay gives the bytes the subscriber got before and after
 * each id is released (its memory then overwritten and freed: ASan sees
 * a record that still read it), and once the history is full and the
 * pairs' first events leave; a release after that is a no-op.
 */
static void
test_lend(void **state)
{
	json_t		*id = json_integer(9), *evs, *p;
	char		*agents[4], *live;
	uint32_t	 slots[4];
	size_t		 len, i;

	event_subscribe(&upeer, id, NULL);
	(void)raw(&len);
	for (i = 0; i < 4; i++) {
		assert_true(asprintf(&agents[i], "agent-%zu", i) > 0);
		start(agents[i], i < 3 ? "worker" : NULL);
		slots[i] = event_lent_slot();
		emit("message_sent", "x", NULL);
	}
	live = strdup(raw(&len));
	assert_non_null(live);
	assert_int_equal(event_history_slots(), 8);
	assert_int_equal(replay_matches(live), 12);

	/* One released, its id's memory reused; then the others. */
	event_release(agents[1], slots[1]);
	memset(agents[1], 'X', strlen(agents[1]));
	free(agents[1]);
	assert_int_equal(replay_matches(live), 12);
	event_release(agents[0], slots[0]);
	free(agents[0]);
	/* Released twice: nothing more happens. */
	event_release(agents[2], slots[2]);
	event_release(agents[2], slots[2]);
	assert_int_equal(replay_matches(live), 12);

	/* From a lent pair's first id, filtered by its agent. */
	p = json_pack("{s:{s:[s]}}", "filter", "fromAgents", agents[3]);
	evs = replayed(p);
	json_decref(p);
	assert_int_equal(json_array_size(evs), 2);
	json_decref(evs);

	/* A full history: the lent pair of agents[3] loses its first. */
	event_peer_gone(&upeer);
	for (i = 0; i < 10000 - 12 + 10; i++)
		emit("message_sent", "c", NULL);
	p = json_pack("{s:i}", "limit", 1);
	evs = replayed(p);
	json_decref(p);
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    json_array_get(evs, 0), "event"), "type")), "agent_state_changed");
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    json_object_get(json_array_get(evs, 0), "event"), "data"),
	    "agentId")), "agent-3");
	json_decref(evs);
	/* Its slot holds the second alone, as its own copy: left alone. */
	event_release(agents[3], slots[3]);
	free(agents[3]);
	free(agents[2]);
	evs = replayed(NULL);
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    json_object_get(json_array_get(evs, 0), "event"), "data"),
	    "agentId")), "agent-3");
	json_decref(evs);
	free(live);
	json_decref(id);
}

/* Bad filters and params are -32602, and nothing is subscribed. */
static void
test_bad(void **state)
{
	json_t		*f, *p, *id = json_integer(1);

	p = json_loads("{\"filter\":{\"eventTypes\":\"agent_registered\"}}", 0,
	    NULL);
	event_subscribe(&upeer, id, p);
	json_decref(p);
	p = json_loads("{\"afterEventId\":5}", 0, NULL);
	event_replay(&upeer, id, p);
	json_decref(p);
	f = frames();
	assert_int_equal(json_array_size(f), 2);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
	    json_array_get(f, 0), "error"), "code")), -32602);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
	    json_array_get(f, 1), "error"), "code")), -32602);
	assert_int_equal(upeer.nsubs, 0);
	json_decref(f);
	json_decref(id);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_ids_random),
		cmocka_unit_test(test_types),
		cmocka_unit_test_setup_teardown(test_subscribe, setup, teardown),
		cmocka_unit_test_setup_teardown(test_replay, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flat, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pair, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lend, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scopes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lazy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad, setup, teardown),
	};

	if (ev_default_loop(EVFLAG_AUTO) == NULL)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
