/*
 * Unit tests of intent routing (src/route.c) with the real engine and
 * supervisor state, but no processes: each test loads a workflow from a
 * string, sets the supervisor up for corral serve, creates the agents by
 * hand with their stdin on /dev/null and their state and outstanding
 * counts set directly, and submits requests with route_submit.  Results
 * and error envelopes a job ends with go to corral serve's stdout, here a
 * pipe the test reads.
 *
 * What is held: fewest outstanding wins, ties go to the agent picked least
 * recently, only READY or BUSY agents with room under max_inflight get
 * work, a request waits in its row's queue when no candidate can take it
 * and is dispatched by route_kick when one becomes ready, queues are
 * served by priority with aging, a reflection avoids its author while
 * another candidate exists, the "*" row serves intents without a row, and
 * no_route, no_agent and queue_full failures.
 */

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#define CORRAL_WHITEBOX	/* sets agents' parts by hand */
#include "corral.h"

static struct workflow	*wf;
static int		 out_fd = -1;	/* read end of serve's stdout */
static char		 outbuf[1 << 16];
static size_t		 outlen;
static unsigned int	 req_seq;

/*
 * Load a workflow, set the supervisor up, and create every instance of
 * every agent, READY, with its stdin on /dev/null.
 */
static void
rt_setup(const char *yaml)
{
	struct config_error	 err;
	struct agent		*a;
	size_t			 i;
	unsigned int		 k;
	int			 p[2], fd;

	wf = config_load_string(yaml, strlen(yaml), "route-test.yaml", &err);
	if (wf == NULL)
		fail_msg("workflow: %d:%d: %s", err.line, err.column, err.msg);
	supervisor_setup(wf, MODE_SERVE);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
	out_fd = p[0];
	outlen = 0;
	chan_init(supervisor_stdio(), "stdin", -1, p[1], 1 << 20, NULL);
	for (i = 0; i < wf->nagents; i++) {
		for (k = 1; k <= wf->agents[i].instances; k++) {
			a = lifecycle_create(&wf->agents[i], k, NULL);
			route_add_agent(a);
			fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
			assert_true(fd != -1);
			chan_init(&a->proc.io, a->id, -1, fd, 1 << 20, a);
			a->life.state = AS_READY;
		}
	}
}

/* Drop every request and agent, and everything the setup made. */
static void
rt_teardown(void)
{
	struct agent	*a;
	struct msg	*m;
	char		*e;
	size_t		 len;

	engine_shutdown("the test is over");	/* no retries */
	for (a = agent_first(); a != NULL; a = agent_next(a)) {
		while ((m = engine_inflight_first(a)) != NULL) {
			e = envelope_error("shutdown", "UNAVAILABLE", NULL,
			    "the test is over", m->id, NULL, &len);
			engine_request_done(m, e, len, 1);
			free(e);
		}
		while ((m = route_direct_first(a)) != NULL) {
			route_dequeue(m);
			engine_fail(m, "UNAVAILABLE", "shutdown", "over");
		}
		a->life.outstanding = 0;
	}
	assert_int_equal(route_queued_count(), 0);
	assert_int_equal(engine_stats_get()->live_msgs, 0);
	assert_int_equal(engine_jobs_count(), 0);
	agent_reap_dead(1);
	chan_close(supervisor_stdio());
	close(out_fd);
	out_fd = -1;
	jscan_drain();
	config_free(wf);
	wf = NULL;
}

/* The agent with this id. */
static struct agent *
ag(const char *id)
{
	struct agent	*a = agent_find(id);

	if (a == NULL)
		fail_msg("no agent %s", id);
	return a;
}

/* Give an agent work it does not have (outstanding set by hand). */
static void
set_load(struct agent *a, enum agent_state state, unsigned int outstanding)
{
	a->life.state = state;
	a->life.outstanding = outstanding;
	if (state == AS_INITIALIZING)
		a->life.flags |= LF_NOT_READY;
}

/* Make a request of its own job (as corral serve does for an input). */
static struct msg *
req(int intent, int prio)
{
	struct job	*j;
	struct msg	*m;
	char		*line;

	j = engine_job_create(JOB_SERVE);
	xasprintf(&line, "{\"protocol\":\"multiagent-1.0\",\"role\":\"user\","
	    "\"intent\":\"%s\",\"task\":\"t\",\"content\":{\"type\":\"text\"},"
	    "\"trace\":{\"id\":\"r%u\"}}", protocol_intent_name(intent),
	    ++req_seq);
	m = engine_msg_create(j, line, strlen(line), MSG_INPUT, intent);
	snprintf(m->id, sizeof m->id, "r%u", req_seq);
	snprintf(j->id, sizeof j->id, "r%u", req_seq);
	m->prio = (uint8_t)prio;
	return m;
}

/* Submit a request and return it; it must have been dispatched or queued. */
static struct msg *
submit(int intent, int prio)
{
	struct msg	*m = req(intent, prio);

	assert_int_equal(route_submit(m), 0);
	return m;
}

/* The id of the agent m is in flight at ("" when it is not). */
static const char *
at(const struct msg *m)
{
	return m->where == MSG_INFLIGHT ? m->agent->id : "";
}

/* Answer the request m (in flight at a) with a finalize reply. */
static void
reply(struct agent *a, struct msg *m)
{
	char	line[512];
	int	n;

	assert_int_equal(m->where, MSG_INFLIGHT);
	assert_ptr_equal(m->agent, a);
	n = snprintf(line, sizeof line, "{\"protocol\":\"multiagent-1.0\","
	    "\"role\":\"agent\",\"intent\":\"finalize\",\"task\":\"t\","
	    "\"content\":{\"type\":\"text\",\"text\":\"ok\"},"
	    "\"confidence\":{\"score\":0.9},\"trace\":{\"parents\":[\"%s\"]}}",
	    m->id);
	agent_input(a, line, (size_t)n, NDJSON_LINE, 0);
}

/* Collect what corral serve wrote on stdout so far. */
static void
read_out(void)
{
	ssize_t	n;

	chan_flush_all();
	while ((n = read(out_fd, outbuf + outlen, sizeof outbuf - 1 -
	    outlen)) > 0)
		outlen += (size_t)n;
	outbuf[outlen] = '\0';
}

/*
 * Return nonzero if stdout holds an error envelope with this code whose
 * trace.parents names the request id.
 */
static int
out_has_error(const char *code, const char *id)
{
	char		*p, *nl;
	json_t		*j;
	json_error_t	 e;
	int		 found = 0;

	read_out();
	for (p = outbuf; !found && (nl = strchr(p, '\n')) != NULL;
	    p = nl + 1) {
		if ((j = json_loadb(p, (size_t)(nl - p), 0, &e)) == NULL)
			continue;
		found = json_is_string(json_object_get(json_object_get(
		    json_object_get(j, "content"), "data"), "code")) &&
		    strcmp(json_string_value(json_object_get(json_object_get(
		    json_object_get(j, "content"), "data"), "code")), code) ==
		    0 && strcmp(json_string_value(json_array_get(
		    json_object_get(json_object_get(j, "trace"), "parents"),
		    0)) ?: "", id) == 0;
		json_decref(j);
	}
	return found;
}

static const char pool3[] =
    "agents:\n"
    "  w:\n"
    "    cmd: [/nonexistent/w]\n"
    "    instances: 3\n"
    "    max_inflight: 8\n"
    "routes:\n"
    "  \"*\": w\n";

/* The candidate with the fewest outstanding messages gets the request. */
static void
test_fewest_outstanding(void **state)
{
	struct msg	*m;

	rt_setup(pool3);
	set_load(ag("w.1"), AS_BUSY, 2);
	set_load(ag("w.3"), AS_BUSY, 1);
	m = submit(INTENT_EXECUTE, PRIO_NORMAL);
	assert_string_equal(at(m), "w.2");
	assert_int_equal(ag("w.2")->life.outstanding, 1);
	assert_int_equal(ag("w.2")->life.state, AS_BUSY);
	/* w.2 and w.3 now have 1 each; w.2 was just picked: w.3. */
	m = submit(INTENT_EXECUTE, PRIO_NORMAL);
	assert_string_equal(at(m), "w.3");
	/* 2, 1, 2: w.2. */
	m = submit(INTENT_EXECUTE, PRIO_NORMAL);
	assert_string_equal(at(m), "w.2");
	rt_teardown();
}

/* Equal loads rotate: the agent picked least recently goes first. */
static void
test_ties_rotate(void **state)
{
	static const char *const want[] = { "w.1", "w.2", "w.3", "w.1",
	    "w.2", "w.3" };
	struct msg	*m[6], *x;
	size_t		 i;

	rt_setup(pool3);
	for (i = 0; i < 6; i++) {
		m[i] = submit(INTENT_PLAN, PRIO_NORMAL);
		assert_string_equal(at(m[i]), want[i]);
	}
	/* w.2 answers one: it has the fewest now, though picked recently. */
	reply(ag("w.2"), m[1]);
	assert_int_equal(ag("w.2")->life.outstanding, 1);
	x = submit(INTENT_PLAN, PRIO_NORMAL);
	assert_string_equal(at(x), "w.2");
	rt_teardown();
}

/*
 * Only READY agents, and BUSY ones below max_inflight, get work; the rest
 * are skipped even with nothing outstanding.
 */
static void
test_ready_busy_capacity(void **state)
{
	static const char yaml[] =
	    "agents:\n"
	    "  w:\n"
	    "    cmd: [/nonexistent/w]\n"
	    "    instances: 6\n"
	    "    max_inflight: 2\n"
	    "routes:\n"
	    "  execute: w\n";
	struct msg	*m, *q;

	rt_setup(yaml);
	set_load(ag("w.1"), AS_INITIALIZING, 0);
	set_load(ag("w.2"), AS_UNAVAILABLE, 0);
	set_load(ag("w.3"), AS_SUSPENDED, 0);
	set_load(ag("w.4"), AS_BUSY, 2);	/* at max_inflight */
	set_load(ag("w.5"), AS_STOPPING, 0);
	set_load(ag("w.6"), AS_BUSY, 1);	/* room for one more */
	m = submit(INTENT_EXECUTE, PRIO_NORMAL);
	assert_string_equal(at(m), "w.6");
	assert_int_equal(ag("w.6")->life.outstanding, 2);
	/* Now nobody can take one: it waits in the row's queue. */
	q = submit(INTENT_EXECUTE, PRIO_NORMAL);
	assert_int_equal(q->where, MSG_QUEUED);
	assert_int_equal(route_row_queued(INTENT_EXECUTE), 1);
	assert_int_equal(route_queued_count(), 1);
	/* w.6 answers: its free slot takes the waiting request. */
	reply(ag("w.6"), m);
	assert_string_equal(at(q), "w.6");
	assert_int_equal(route_queued_count(), 0);
	rt_teardown();
}

/*
 * The search passes over a candidate on its outstanding count alone only
 * once a better one was found; one with fewer that comes later in the
 * row is still asked whether it can take work: a full window of its own,
 * an open circuit, a held turn each rule it out, as they do the first.
 */
static void
test_later_candidates(void **state)
{
	static const char yaml[] =
	    "agents:\n"
	    "  a:\n"
	    "    cmd: [/nonexistent/a]\n"
	    "    instances: 2\n"
	    "    max_inflight: 8\n"
	    "  b:\n"
	    "    cmd: [/nonexistent/b]\n"
	    "    instances: 4\n"
	    "    max_inflight: 2\n"
	    "    breaker: {failures: 1, reset: 60s}\n"
	    "routes:\n"
	    "  execute: [a, b]\n";
	struct msg	*m;

	rt_setup(yaml);
	set_load(ag("a.1"), AS_BUSY, 3);	/* the first best */
	set_load(ag("a.2"), AS_BUSY, 3);
	set_load(ag("b.1"), AS_BUSY, 2);	/* fewer, but at its window */
	breaker_failure(ag("b.2"));		/* none, but its circuit open */
	route_hold(ag("b.3"), 1);		/* none, but its turn held */
	set_load(ag("b.4"), AS_BUSY, 1);
	m = submit(INTENT_EXECUTE, PRIO_NORMAL);
	assert_string_equal(at(m), "b.4");
	/* b.4 is full now: a.1 and a.2 tie, a.1 comes first. */
	m = submit(INTENT_EXECUTE, PRIO_NORMAL);
	assert_string_equal(at(m), "a.1");
	m = submit(INTENT_EXECUTE, PRIO_NORMAL);
	assert_string_equal(at(m), "a.2");
	/* Let go, b.3 has the fewest again, though it comes late. */
	route_hold(ag("b.3"), -1);
	m = submit(INTENT_EXECUTE, PRIO_NORMAL);
	assert_string_equal(at(m), "b.3");
	rt_teardown();
}

/*
 * A request addressed to one agent that cannot take it waits in that
 * agent's queue as long as the agent's timeout, not a fixed time: a
 * redelivery held there may itself wait longer than 30 s.
 */
static void
test_direct_wait(void **state)
{
	struct msg	*m;
	struct agent	*a;

	(void)state;
	rt_setup("agents:\n"
	    "  w:\n"
	    "    cmd: [/nonexistent/w]\n"
	    "    max_inflight: 1\n"
	    "    timeout: 120s\n"
	    "routes:\n"
	    "  \"*\": w\n");
	a = ag("w");
	set_load(a, AS_READY, 1);		/* its window is full */
	m = req(INTENT_EXECUTE, PRIO_NORMAL);
	m->target = a;
	route_direct(m);
	assert_int_equal(m->where, MSG_QUEUED);
	assert_true(m->deadline - ev_now(EV_DEFAULT) > 119.0);
	assert_true(m->deadline - ev_now(EV_DEFAULT) <= 120.0);
	rt_teardown();
}

/*
 * Requests that wait as long at one agent share one timer: each still
 * expires at its own time, in the order they were given; one answered
 * in time does not expire; one whose envelope has a TTL expires by its
 * own timer.  The wait is for the events, not for a time.
 */
static void
test_timeouts_in_order(void **state)
{
	struct msg	*m[4];
	char		 raw[4][16], id[4][20], *p[4];
	int		 i;

	(void)state;
	rt_setup("agents:\n"
	    "  w:\n"
	    "    cmd: [/nonexistent/w]\n"
	    "    max_inflight: 8\n"
	    "    timeout: 300ms\n"
	    "routes:\n"
	    "  \"*\": w\n");
	for (i = 0; i < 4; i++) {
		m[i] = req(INTENT_EXECUTE, PRIO_NORMAL);
		if (i == 2)
			m[i]->timeout = 0.2;	/* its envelope's TTL */
		assert_int_equal(route_submit(m[i]), 0);
		assert_string_equal(at(m[i]), "w");
		snprintf(raw[i], sizeof raw[i], "%s", m[i]->id);
		snprintf(id[i], sizeof id[i], "\"%s\"", m[i]->id);
	}
	reply(ag("w"), m[1]);
	for (i = 0; i < 100000 && engine_stats_get()->live_msgs > 0; i++)
		ev_run(EV_DEFAULT, EVRUN_ONCE);
	assert_int_equal(engine_stats_get()->live_msgs, 0);
	assert_true(out_has_error("timeout", raw[0]));
	assert_false(out_has_error("timeout", raw[1]));
	assert_true(out_has_error("timeout", raw[2]));
	assert_true(out_has_error("timeout", raw[3]));
	for (i = 0; i < 4; i++)
		p[i] = strstr(outbuf, id[i]);
	assert_non_null(p[0]);
	assert_non_null(p[2]);
	assert_non_null(p[3]);
	/* The TTL's 200 ms end first, then the others in the order given. */
	assert_true(p[2] < p[0]);
	assert_true(p[0] < p[3]);
	rt_teardown();
}

/*
 * With no candidate ready the request is queued; the agent's handshake
 * (a lifecycle event) or a state set by hand and route_kick dispatches it.
 */
static void
test_queue_then_kick(void **state)
{
	static const char yaml[] =
	    "agents:\n"
	    "  a:\n"
	    "    cmd: [/nonexistent/a]\n"
	    "    ready: handshake\n"
	    "  b:\n"
	    "    cmd: [/nonexistent/b]\n"
	    "  other:\n"
	    "    cmd: [/nonexistent/o]\n"
	    "routes:\n"
	    "  plan: a\n"
	    "  execute: b\n"
	    "  analyze: other\n";
	struct agent	*a, *b;
	struct msg	*m1, *m2, *m3;

	rt_setup(yaml);
	a = ag("a");
	b = ag("b");
	set_load(a, AS_INITIALIZING, 0);
	set_load(b, AS_UNAVAILABLE, 0);
	m1 = submit(INTENT_PLAN, PRIO_NORMAL);
	m2 = submit(INTENT_EXECUTE, PRIO_NORMAL);
	assert_int_equal(m1->where, MSG_QUEUED);
	assert_int_equal(m2->where, MSG_QUEUED);
	assert_int_equal(route_queued_count(), 2);
	/* An agent of another row being kicked takes neither. */
	route_kick(ag("other"));
	assert_int_equal(route_queued_count(), 2);
	assert_int_equal(ag("other")->life.outstanding, 0);
	/* a's handshake: READY, and the plan request is dispatched. */
	lifecycle_ready(a, "handshake");
	assert_string_equal(at(m1), "a");
	assert_int_equal(a->life.state, AS_BUSY);
	assert_int_equal(m2->where, MSG_QUEUED);
	assert_int_equal(route_queued_count(), 1);
	/* b's state set by hand, then a kick. */
	b->life.state = AS_READY;
	route_kick(b);
	assert_string_equal(at(m2), "b");
	assert_int_equal(route_queued_count(), 0);
	/* A ready agent takes new work at once. */
	m3 = submit(INTENT_EXECUTE, PRIO_NORMAL);
	assert_string_equal(at(m3), "b");
	rt_teardown();
}

static const char single[] =
    "agents:\n"
    "  s:\n"
    "    cmd: [/nonexistent/s]\n"
    "    max_inflight: 1\n"
    "routes:\n"
    "  \"*\": s\n";

/* The request s holds now. */
static struct msg *
holding(void)
{
	struct agent	*s = ag("s");

	assert_int_equal(s->life.outstanding, 1);
	return engine_inflight_first(s);
}

/* Queues are served highest priority first, FIFO within a level. */
static void
test_priority_order(void **state)
{
	struct msg	*first, *batch, *low, *n1, *n2, *high, *crit;

	rt_setup(single);
	first = submit(INTENT_EXECUTE, PRIO_NORMAL);
	assert_string_equal(at(first), "s");
	batch = submit(INTENT_EXECUTE, PRIO_BATCH);
	low = submit(INTENT_PLAN, PRIO_LOW);
	n1 = submit(INTENT_EXECUTE, PRIO_NORMAL);
	high = submit(INTENT_ANALYZE, PRIO_HIGH);
	n2 = submit(INTENT_EXECUTE, PRIO_NORMAL);
	crit = submit(INTENT_EXECUTE, PRIO_CRITICAL);
	assert_int_equal(route_queued_count(), 6);
	assert_int_equal(route_row_queued(ROUTE_FALLBACK), 6);

	reply(ag("s"), first);
	assert_ptr_equal(holding(), crit);
	reply(ag("s"), crit);
	assert_ptr_equal(holding(), high);
	reply(ag("s"), high);
	assert_ptr_equal(holding(), n1);
	reply(ag("s"), n1);
	assert_ptr_equal(holding(), n2);
	reply(ag("s"), n2);
	assert_ptr_equal(holding(), low);
	reply(ag("s"), low);
	assert_ptr_equal(holding(), batch);
	assert_int_equal(route_queued_count(), 0);
	rt_teardown();
}

/*
 * A head that waited longer than the aging time is served before higher
 * levels; among aged heads the oldest goes first.
 */
static void
test_priority_aging(void **state)
{
	struct msg	*first, *old_low, *older_batch, *crit;
	ev_tstamp	 now;

	rt_setup(single);
	now = ev_now(LOOP);
	first = submit(INTENT_EXECUTE, PRIO_NORMAL);
	old_low = submit(INTENT_EXECUTE, PRIO_LOW);
	older_batch = submit(INTENT_EXECUTE, PRIO_BATCH);
	crit = submit(INTENT_EXECUTE, PRIO_CRITICAL);
	old_low->accepted = now - 10;
	older_batch->accepted = now - 20;

	reply(ag("s"), first);
	assert_ptr_equal(holding(), older_batch);
	reply(ag("s"), older_batch);
	assert_ptr_equal(holding(), old_low);
	reply(ag("s"), old_low);
	assert_ptr_equal(holding(), crit);
	rt_teardown();
}

static const char critics[] =
    "agents:\n"
    "  c:\n"
    "    cmd: [/nonexistent/c]\n"
    "    instances: 2\n"
    "    max_inflight: 4\n"
    "routes:\n"
    "  reflect: c\n";

/*
 * A reflection never goes to its author while another candidate exists,
 * even a busier one, or one that cannot take it now (it waits for it).
 */
static void
test_reflection_excludes_author(void **state)
{
	struct agent	*c1, *c2;
	struct msg	*m, *q;

	rt_setup(critics);
	c1 = ag("c.1");
	c2 = ag("c.2");
	set_load(c2, AS_BUSY, 3);
	m = req(INTENT_REFLECT, PRIO_NORMAL);
	m->exclude = c1;
	assert_int_equal(route_submit(m), 0);
	assert_string_equal(at(m), "c.2");
	assert_int_equal(c1->life.outstanding, 0);
	/* c.2 is full now: the next reflection on c.1's reply waits. */
	q = req(INTENT_REFLECT, PRIO_NORMAL);
	q->exclude = c1;
	assert_int_equal(route_submit(q), 0);
	assert_int_equal(q->where, MSG_QUEUED);
	/* c.1 is idle and kicked: it must not take its own reflection. */
	route_kick(c1);
	assert_int_equal(q->where, MSG_QUEUED);
	assert_int_equal(c1->life.outstanding, 0);
	/* A request that excludes nobody does go to c.1 meanwhile. */
	m = submit(INTENT_REFLECT, PRIO_NORMAL);
	assert_string_equal(at(m), "c.1");
	/* c.2 has room again: the reflection goes there. */
	c2->life.outstanding = 3;
	route_kick(c2);
	assert_string_equal(at(q), "c.2");
	rt_teardown();
}

/* ... and goes to the author when it is the only candidate there is. */
static void
test_reflection_only_author(void **state)
{
	static const char yaml[] =
	    "agents:\n"
	    "  solo:\n"
	    "    cmd: [/nonexistent/solo]\n"
	    "  gone:\n"
	    "    cmd: [/nonexistent/gone]\n"
	    "routes:\n"
	    "  reflect: [solo, gone]\n";
	struct agent	*solo;
	struct msg	*m;

	rt_setup(yaml);
	solo = ag("solo");
	set_load(ag("gone"), AS_FAILED, 0);
	m = req(INTENT_REFLECT, PRIO_NORMAL);
	m->exclude = solo;
	assert_int_equal(route_submit(m), 0);
	assert_string_equal(at(m), "solo");
	/* Queued while the author is full, then given to the author. */
	solo->conf->max_inflight = 1;
	m = req(INTENT_REFLECT, PRIO_NORMAL);
	m->exclude = solo;
	assert_int_equal(route_submit(m), 0);
	assert_int_equal(m->where, MSG_QUEUED);
	reply(solo, engine_inflight_first(solo));
	assert_string_equal(at(m), "solo");
	rt_teardown();
}

/* Intents without a row go to "*"; those with one never do. */
static void
test_fallback_row(void **state)
{
	static const char yaml[] =
	    "agents:\n"
	    "  p:\n"
	    "    cmd: [/nonexistent/p]\n"
	    "  f:\n"
	    "    cmd: [/nonexistent/f]\n"
	    "routes:\n"
	    "  plan: p\n"
	    "  \"*\": f\n";
	struct msg	*m;
	int		 i;

	rt_setup(yaml);
	assert_ptr_not_equal(route_for(INTENT_PLAN), route_for(INTENT_EXECUTE));
	for (i = 0; i < INTENT_COUNT; i++) {
		if (i == INTENT_PLAN)
			continue;
		assert_ptr_equal(route_for(i), route_for(INTENT_EXECUTE));
		m = submit(i, PRIO_NORMAL);
		assert_string_equal(at(m), "f");
	}
	m = submit(INTENT_PLAN, PRIO_NORMAL);
	assert_string_equal(at(m), "p");
	/* p is busy with a lot: plan still waits for p, never for f. */
	set_load(ag("p"), AS_BUSY, 16);
	m = submit(INTENT_PLAN, PRIO_NORMAL);
	assert_int_equal(m->where, MSG_QUEUED);
	assert_int_equal(route_row_queued(INTENT_PLAN), 1);
	assert_int_equal(route_row_queued(ROUTE_FALLBACK), 0);
	ag("p")->life.outstanding = 1;
	rt_teardown();
}

/* No row and no "*": no_route, at once, as the job's result. */
static void
test_no_route(void **state)
{
	static const char yaml[] =
	    "agents:\n"
	    "  p:\n"
	    "    cmd: [/nonexistent/p]\n"
	    "routes:\n"
	    "  plan: p\n";
	struct msg	*m;
	uint64_t	 errored;
	char		 id[CORRAL_ID_MAX];

	rt_setup(yaml);
	assert_null(route_for(INTENT_EXECUTE));
	errored = engine_stats_get()->errored;
	m = req(INTENT_EXECUTE, PRIO_NORMAL);
	snprintf(id, sizeof id, "%s", m->id);
	assert_int_equal(route_submit(m), -1);
	assert_int_equal(engine_stats_get()->errored, errored + 1);
	assert_true(out_has_error("no_route", id));
	assert_non_null(strstr(outbuf, "no route for intent execute"));
	assert_int_equal(route_queued_count(), 0);
	assert_int_equal(ag("p")->life.outstanding, 0);
	rt_teardown();
}

/*
 * A row whose agents are all gone for good: no_agent at once.  A queued
 * request whose last candidate fails is failed by route_check_orphans.
 */
static void
test_no_agent(void **state)
{
	static const char yaml[] =
	    "agents:\n"
	    "  p:\n"
	    "    cmd: [/nonexistent/p]\n"
	    "    instances: 2\n"
	    "routes:\n"
	    "  plan: p\n";
	struct msg	*m;
	char		 id[CORRAL_ID_MAX];

	rt_setup(yaml);
	set_load(ag("p.1"), AS_FAILED, 0);
	set_load(ag("p.2"), AS_UNAVAILABLE, 0);
	m = submit(INTENT_PLAN, PRIO_NORMAL);
	assert_int_equal(m->where, MSG_QUEUED);
	snprintf(id, sizeof id, "%s", m->id);
	/* The last candidate fails: the waiting request has nobody. */
	set_load(ag("p.2"), AS_FAILED, 0);
	route_check_orphans();
	assert_int_equal(route_queued_count(), 0);
	assert_true(out_has_error("no_agent", id));
	/* And a new request fails at once. */
	m = req(INTENT_PLAN, PRIO_NORMAL);
	snprintf(id, sizeof id, "%s", m->id);
	assert_int_equal(route_submit(m), -1);
	assert_true(out_has_error("no_agent", id));
	rt_teardown();
}

/* A row's queue holds at most limits.max_queue requests. */
static void
test_queue_full(void **state)
{
	static const char yaml[] =
	    "agents:\n"
	    "  p:\n"
	    "    cmd: [/nonexistent/p]\n"
	    "routes:\n"
	    "  plan: p\n"
	    "limits:\n"
	    "  max_queue: 2\n";
	struct msg	*m;
	char		 id[CORRAL_ID_MAX];

	rt_setup(yaml);
	set_load(ag("p"), AS_UNAVAILABLE, 0);
	(void)submit(INTENT_PLAN, PRIO_NORMAL);
	(void)submit(INTENT_PLAN, PRIO_NORMAL);
	m = req(INTENT_PLAN, PRIO_CRITICAL);
	snprintf(id, sizeof id, "%s", m->id);
	assert_int_equal(route_submit(m), -1);
	assert_true(out_has_error("queue_full", id));
	assert_int_equal(route_queued_count(), 2);
	rt_teardown();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fewest_outstanding),
		cmocka_unit_test(test_ties_rotate),
		cmocka_unit_test(test_ready_busy_capacity),
		cmocka_unit_test(test_later_candidates),
		cmocka_unit_test(test_direct_wait),
		cmocka_unit_test(test_timeouts_in_order),
		cmocka_unit_test(test_queue_then_kick),
		cmocka_unit_test(test_priority_order),
		cmocka_unit_test(test_priority_aging),
		cmocka_unit_test(test_reflection_excludes_author),
		cmocka_unit_test(test_reflection_only_author),
		cmocka_unit_test(test_fallback_row),
		cmocka_unit_test(test_no_route),
		cmocka_unit_test(test_no_agent),
		cmocka_unit_test(test_queue_full),
	};

	log_init(0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
