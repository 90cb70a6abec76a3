/*
 * The run's numbers: messages per agent, request latency, outcomes and
 * errors by code, queue depths, restarts, tokens and cost, the control
 * plane's clients and events.
 *
 * Most numbers are read where they already are (the engine's outcome
 * counters, each agent's parts, the routing table); what nobody else
 * keeps, the latency histogram and the errors by code, is counted here
 * from the outcome of every request, which the supervisor passes on.
 * _corral/metrics answers them as JSON, each metric with its type, help
 * and samples; `corral metrics` prints that as Prometheus' text format,
 * so programs and Prometheus read the same numbers.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

#define METRICS_CODES	64	/* distinct error codes counted by name */
#define METRICS_PAIRS	256	/* (agent, category) pairs of errors */

/* Upper bounds of the latency histogram's buckets, in seconds. */
static const double metrics_bounds[] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120
};
#define METRICS_BUCKETS	(sizeof metrics_bounds / sizeof metrics_bounds[0])

static struct {
	uint64_t	 buckets[METRICS_BUCKETS + 1];	/* the last: +Inf */
	uint64_t	 count;
	double		 sum;
	uint64_t	 outcomes[3];	/* replied, error, expired */
	struct {
		char	 code[32];
		uint64_t n;
	}		 codes[METRICS_CODES];
	size_t		 ncodes;
	uint64_t	 other_codes;
	struct {
		char	 source[CORRAL_ID_MAX];
		char	 category[16];
		uint64_t n;
	}		 pairs[METRICS_PAIRS];
	size_t		 npairs;
	ev_tstamp	 started;
} mt;

static void	metrics_sample3(json_t *, const char *, const char *,
		    const char *, const char *, const char *, const char *,
		    double);

/* Start counting (a new run). */
void
metrics_init(void)
{
	memset(&mt, 0, sizeof mt);
	mt.started = ev_now(LOOP);
}

/*
 * Count a failed request by the agent it was at (corral: none) and its
 * category, for agent_errors_total.  Failures are rare: a walk is fine.
 */
static void
metrics_pair(const struct msg *m, const char *outcome)
{
	const char	*src = m->agent != NULL ? m->agent->id : m->target != NULL ?
			    m->target->id : "corral";
	const char	*cat = strcmp(outcome, "expired") == 0 ? "TIMEOUT" :
			    "ERROR";
	size_t		 i;

	for (i = 0; i < mt.npairs; i++)
		if (strcmp(mt.pairs[i].source, src) == 0 &&
		    strcmp(mt.pairs[i].category, cat) == 0) {
			mt.pairs[i].n++;
			return;
		}
	if (mt.npairs == METRICS_PAIRS)
		i = METRICS_PAIRS - 1;	/* the last counts the rest */
	else {
		i = mt.npairs++;
		strlcpy(mt.pairs[i].source, src, sizeof mt.pairs[i].source);
		strlcpy(mt.pairs[i].category, cat, sizeof mt.pairs[i].category);
	}
	mt.pairs[i].n++;
}

/* A request had its outcome ("replied", "error", "expired"). */
void
metrics_outcome(const struct msg *m, const char *outcome, const char *code)
{
	double	d = ev_now(LOOP) - m->accepted;
	size_t	i;
	int	replied;

	if (d < 0)
		d = 0;
	for (i = 0; i < METRICS_BUCKETS && d > metrics_bounds[i]; i++)
		;
	mt.buckets[i]++;
	mt.count++;
	mt.sum += d;
	/* The three outcomes differ in their first byte: no strcmp a reply. */
	replied = outcome[0] == 'r';
	if (replied)
		mt.outcomes[0]++;
	else if (outcome[0] == 'e' && outcome[1] == 'x')
		mt.outcomes[2]++;
	else
		mt.outcomes[1]++;
	if (code == NULL || replied)
		return;
	metrics_pair(m, outcome);
	for (i = 0; i < mt.ncodes; i++)
		if (strcmp(mt.codes[i].code, code) == 0) {
			mt.codes[i].n++;
			return;
		}
	if (mt.ncodes == METRICS_CODES) {
		mt.other_codes++;
		return;
	}
	strlcpy(mt.codes[mt.ncodes].code, code, sizeof mt.codes[0].code);
	mt.codes[mt.ncodes++].n = 1;
}

/* Add a metric with no samples yet; returns its samples array. */
static json_t *
metrics_add(json_t *list, const char *name, const char *type,
    const char *help)
{
	json_t	*samples = json_array();

	json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:o}", "name",
	    name, "type", type, "help", help, "samples", samples));
	return samples;
}

/* Add a sample with one label (key NULL: none). */
static void
metrics_sample(json_t *samples, const char *key, const char *value, double v)
{
	json_t	*labels = json_object();

	if (key != NULL)
		json_object_set_new(labels, key, jsonw_text(value,
		    strlen(value)));
	json_array_append_new(samples, json_pack("{s:o, s:f}", "labels",
	    labels, "value", jsonw_finite(v)));
}

/* The metrics of every agent, one sample per agent. */
static void
metrics_agents(json_t *list)
{
	json_t		*in, *out, *fl, *q, *rs, *tok, *cost, *states;
	struct agent	*a;
	unsigned int	 count[AS_COUNT];
	uint64_t	 nin, nout;
	double		 tokens, usd;
	int		 s;
	const char	*name;

	in = metrics_add(list, "corral_agent_messages_in_total", "counter",
	    "Lines corral wrote to the agent (requests, messages, control)");
	out = metrics_add(list, "corral_agent_messages_out_total", "counter",
	    "Envelopes the agent wrote");
	fl = metrics_add(list, "corral_agent_inflight", "gauge",
	    "Requests the agent is working on");
	q = metrics_add(list, "corral_agent_queue_depth", "gauge",
	    "Requests waiting for this agent alone (tasks, addressed requests)");
	rs = metrics_add(list, "corral_agent_restarts_total", "counter",
	    "Times the agent's process was started again");
	tok = metrics_add(list, "corral_agent_tokens_total", "counter",
	    "Tokens the replies of the agent and its descendants reported");
	cost = metrics_add(list, "corral_agent_cost_usd_total", "counter",
	    "Cost the replies of the agent and its descendants reported");
	memset(count, 0, sizeof count);
	for (a = agent_first(); a != NULL; a = agent_next(a)) {
		if (a->flags & AGENT_DEAD)
			continue;
		count[lifecycle_state(a)]++;
		agent_counts(a, &nin, &nout);
		budget_used(a, &tokens, &usd);
		metrics_sample(in, "agent", a->id, (double)nin);
		metrics_sample(out, "agent", a->id, (double)nout);
		metrics_sample(fl, "agent", a->id, lifecycle_outstanding(a));
		metrics_sample(q, "agent", a->id, route_direct_count(a));
		metrics_sample(rs, "agent", a->id, lifecycle_restarts(a));
		metrics_sample(tok, "agent", a->id, tokens);
		metrics_sample(cost, "agent", a->id, usd);
	}
	states = metrics_add(list, "corral_agents", "gauge",
	    "Agents by state (corral's names; docs/lifecycle.md)");
	for (s = 0; s < AS_COUNT; s++) {
		/* The hidden steps count under the state people see. */
		if (s == AS_TERMINATING || s == AS_KILLING)
			count[AS_STOPPING] += count[s];
		else if (s == AS_BACKOFF)
			count[AS_STOPPED] += count[s];
	}
	for (s = 0; s < AS_TERMINATING; s++) {
		name = lifecycle_state_name((enum agent_state)s);
		metrics_sample(states, "state", name, count[s]);
	}
}

/*
 * What agents say of themselves (an AgentMessage STATUS_UPDATE, or any
 * agent's map/agents/update): the numbers of its metadata, by member.
 */
static const struct {
	const char	*object;	/* a member of its metadata */
	const char	*member;	/* a number in that object */
	const char	*name;
	const char	*help;
} metrics_reported[] = {
	{ "resource_usage", "tokens_used", "corral_agent_reported_tokens_used",
	    "Tokens the agent says it used (metadata.resource_usage)" },
	{ "resource_usage", "tokens_remaining",
	    "corral_agent_reported_tokens_remaining",
	    "Tokens the agent says it has left" },
	{ "resource_usage", "cost_usd", "corral_agent_reported_cost_usd",
	    "Cost the agent says it ran up" },
	{ "resource_usage", "cpu_usage", "corral_agent_reported_cpu_percent",
	    "CPU the agent says it uses, 0-100" },
	{ "resource_usage", "memory_usage",
	    "corral_agent_reported_memory_percent",
	    "Memory the agent says it uses, 0-100" },
	{ "health_metrics", "uptime_seconds",
	    "corral_agent_reported_uptime_seconds",
	    "Uptime the agent reports (metadata.health_metrics)" },
	{ "health_metrics", "success_rate",
	    "corral_agent_reported_success_ratio",
	    "Share of its work the agent says succeeded, 0-1" },
	{ "health_metrics", "avg_latency_ms",
	    "corral_agent_reported_latency_ms",
	    "Average latency the agent reports" },
	{ "health_metrics", "error_count", "corral_agent_reported_errors",
	    "Errors the agent reports" },
	{ "status", "error_rate", "corral_agent_reported_error_ratio",
	    "Error rate the agent reports, 0-1 (metadata.status)" },
	{ "status", "capability_level",
	    "corral_agent_reported_capability_level",
	    "Capability level the agent reports, 0-100" },
};

/* The numbers agents report of themselves, and the states they report. */
static void
metrics_self_reported(json_t *list)
{
	struct agent	*a;
	json_t		*md, *x, *v;
	const char	*st;
	size_t		 i;

	for (i = 0; i < sizeof metrics_reported / sizeof metrics_reported[0];
	    i++) {
		x = metrics_add(list, metrics_reported[i].name, "gauge",
		    metrics_reported[i].help);
		for (a = agent_first(); a != NULL; a = agent_next(a)) {
			if ((a->flags & AGENT_DEAD) ||
			    (md = mapview_own_metadata(a)) == NULL)
				continue;
			v = json_object_get(json_object_get(md,
			    metrics_reported[i].object),
			    metrics_reported[i].member);
			if (json_is_number(v))
				metrics_sample(x, "agent", a->id,
				    json_number_value(v));
		}
	}
	x = metrics_add(list, "corral_agent_reported_tasks", "gauge",
	    "Tasks the agent says it works on (metadata.current_tasks)");
	for (a = agent_first(); a != NULL; a = agent_next(a))
		if (!(a->flags & AGENT_DEAD) && (md = mapview_own_metadata(a)) !=
		    NULL && json_is_array(v = json_object_get(md,
		    "current_tasks")))
			metrics_sample(x, "agent", a->id,
			    (double)json_array_size(v));
	x = metrics_add(list, "corral_agent_reported_state", "gauge",
	    "1 for the state the agent says it is in (corral's own is "
	    "corral_agents)");
	for (a = agent_first(); a != NULL; a = agent_next(a))
		if (!(a->flags & AGENT_DEAD) &&
		    (st = mapview_reported_state(a)) != NULL)
			metrics_sample3(x, "agent", a->id, "state", st, NULL,
			    NULL, 1);
}

/* The requests: outcomes, latency, errors by code, queues. */
static void
metrics_requests(json_t *list)
{
	const struct engine_stats	*st = engine_stats_get();
	json_t				*x, *b;
	char				 le[32];
	uint64_t			 cum = 0;
	size_t				 i;
	int				 k, n;

	x = metrics_add(list, "corral_requests_accepted_total", "counter",
	    "Requests corral accepted (goals, inputs, next actions, "
	    "reflections, tasks, requests of clients)");
	metrics_sample(x, NULL, NULL, (double)st->accepted);
	x = metrics_add(list, "corral_requests_total", "counter",
	    "Requests that had their outcome, by outcome");
	metrics_sample(x, "outcome", "replied", (double)mt.outcomes[0]);
	metrics_sample(x, "outcome", "error", (double)mt.outcomes[1]);
	metrics_sample(x, "outcome", "expired", (double)mt.outcomes[2]);
	x = metrics_add(list, "corral_errors_total", "counter",
	    "Requests that failed, by error code (docs/protocol.md)");
	for (i = 0; i < mt.ncodes; i++)
		metrics_sample(x, "code", mt.codes[i].code,
		    (double)mt.codes[i].n);
	if (mt.other_codes > 0)
		metrics_sample(x, "code", "other", (double)mt.other_codes);
	x = metrics_add(list, "corral_rejected_lines_total", "counter",
	    "Invalid lines from agents or stdin");
	metrics_sample(x, NULL, NULL, (double)dialect_stats_get()->rejected);
	x = metrics_add(list, "corral_redeliveries_total", "counter",
	    "Messages of bus and AgentMessage agents dropped as redeliveries");
	metrics_sample(x, NULL, NULL,
	    (double)dialect_stats_get()->redeliveries);
	x = metrics_add(list, "corral_retries_total", "counter",
	    "Requests routed again after a transient failure");
	metrics_sample(x, NULL, NULL, (double)st->retried);
	x = metrics_add(list, "corral_reflections_total", "counter",
	    "Weak replies sent for reflection");
	metrics_sample(x, NULL, NULL, (double)st->reflections);

	/* A histogram: cumulative buckets, then _sum and _count. */
	json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:o}", "name",
	    "corral_request_duration_seconds", "type", "histogram", "help",
	    "Time from accepting a request to its outcome", "samples",
	    b = json_array()));
	for (i = 0; i <= METRICS_BUCKETS; i++) {
		cum += mt.buckets[i];
		if (i < METRICS_BUCKETS)
			snprintf(le, sizeof le, "%g", metrics_bounds[i]);
		else
			strlcpy(le, "+Inf", sizeof le);
		json_array_append_new(b, json_pack("{s:s, s:{s:s}, s:I}",
		    "suffix", "_bucket", "labels", "le", le, "value",
		    (json_int_t)cum));
	}
	json_array_append_new(b, json_pack("{s:s, s:{}, s:f}", "suffix",
	    "_sum", "labels", "value", mt.sum));
	json_array_append_new(b, json_pack("{s:s, s:{}, s:I}", "suffix",
	    "_count", "labels", "value", (json_int_t)mt.count));

	x = metrics_add(list, "corral_queue_depth", "gauge",
	    "Requests waiting in the routing table, by intent");
	for (k = 0; k <= INTENT_MAX; k++) {
		if ((n = route_row_queued(k)) < 0)
			continue;
		metrics_sample(x, "intent", k == ROUTE_FALLBACK ? "*" :
		    protocol_intent_name(k), n);
	}
}

/* Add a sample with two or three labels. */
static void
metrics_sample3(json_t *samples, const char *k1, const char *v1,
    const char *k2, const char *v2, const char *k3, const char *v3, double v)
{
	json_t	*labels = json_object();

	json_object_set_new(labels, k1, jsonw_text(v1, strlen(v1)));
	json_object_set_new(labels, k2, jsonw_text(v2, strlen(v2)));
	if (k3 != NULL)
		json_object_set_new(labels, k3, jsonw_text(v3, strlen(v3)));
	json_array_append_new(samples, json_pack("{s:o, s:f}", "labels",
	    labels, "value", jsonw_finite(v)));
}

/*
 * The collaboration bus's metric names, as aliases of corral's own.
 * corral is the bus: every message goes from its source to corral and
 * from corral to its destination, so agent_messages_total counts each
 * agent's lines out (dest corral) and in (source corral).  corral keeps
 * one latency histogram, so agent_request_duration is that one, for
 * every source and destination.
 */
static void
metrics_bus(json_t *list)
{
	json_t		*x, *h, *b, *s;
	struct agent	*a;
	uint64_t	 nin, nout;
	size_t		 i, k;

	x = metrics_add(list, "agent_messages_total", "counter",
	    "Messages by source, destination and type (corral is the bus: "
	    "type out is an agent's lines to it, in its lines to the agent)");
	h = metrics_add(list, "agent_queue_size", "gauge",
	    "Requests waiting for this agent alone (= corral_agent_queue_depth)");
	for (a = agent_first(); a != NULL; a = agent_next(a)) {
		if (a->flags & AGENT_DEAD)
			continue;
		agent_counts(a, &nin, &nout);
		metrics_sample3(x, "source", a->id, "dest", "corral", "type",
		    "out", (double)nout);
		metrics_sample3(x, "source", "corral", "dest", a->id, "type",
		    "in", (double)nin);
		metrics_sample(h, "agent_id", a->id, route_direct_count(a));
	}
	x = metrics_add(list, "agent_errors_total", "counter",
	    "Failed requests by the agent they were at (corral: none) and "
	    "kind (ERROR, TIMEOUT)");
	for (i = 0; i < mt.npairs; i++)
		metrics_sample3(x, "source", mt.pairs[i].source, "error_type",
		    mt.pairs[i].category, NULL, NULL, (double)mt.pairs[i].n);
	/* The same samples as corral_request_duration_seconds. */
	json_array_foreach(list, i, b)
		if (strcmp(json_string_value(json_object_get(b, "name")),
		    "corral_request_duration_seconds") == 0) {
			s = json_deep_copy(json_object_get(b, "samples"));
			json_array_foreach(s, k, x)
				if (json_object_get(x, "labels") != NULL) {
					json_object_set_new(json_object_get(x,
					    "labels"), "source", json_string("*"));
					json_object_set_new(json_object_get(x,
					    "labels"), "dest", json_string("*"));
				}
			json_array_append_new(list, json_pack("{s:s, s:s, s:s, "
			    "s:o}", "name", "agent_request_duration", "type",
			    "histogram", "help", "Time from accepting a request "
			    "to its outcome, in seconds (= corral_request_"
			    "duration_seconds)", "samples", s));
			break;
		}
}

/* The whole set, as _corral/metrics answers it (a new reference). */
json_t *
metrics_json(void)
{
	json_t		*list = json_array(), *x;
	double		 tokens, cost, secs;
	uint64_t	 ev, dropped;
	unsigned int	 subs, clients = 0;
	struct peer	*p;

	x = metrics_add(list, "corral_uptime_seconds", "gauge",
	    "Seconds since the run started");
	metrics_sample(x, NULL, NULL, ev_now(LOOP) - mt.started);
	metrics_agents(list);
	metrics_self_reported(list);
	metrics_requests(list);
	metrics_bus(list);
	budget_totals(&tokens, &cost, &secs);
	x = metrics_add(list, "corral_tokens_total", "counter",
	    "Tokens the run's replies reported");
	metrics_sample(x, NULL, NULL, tokens);
	x = metrics_add(list, "corral_cost_usd_total", "counter",
	    "Cost the run's replies reported");
	metrics_sample(x, NULL, NULL, cost);
	x = metrics_add(list, "corral_messages_sent_total", "counter",
	    "Deliveries of map/send");
	metrics_sample(x, NULL, NULL, (double)message_count());
	for (p = rpc_peer_first(); p != NULL; p = rpc_peer_next(p))
		if (p->flags & PEER_SOCKET)
			clients++;
	event_counts(&ev, &dropped, &subs);
	x = metrics_add(list, "corral_control_clients", "gauge",
	    "Connections to the control socket");
	metrics_sample(x, NULL, NULL, clients);
	x = metrics_add(list, "corral_subscriptions", "gauge",
	    "Event subscriptions (map/subscribe)");
	metrics_sample(x, NULL, NULL, subs);
	x = metrics_add(list, "corral_events_total", "counter",
	    "MAP events emitted");
	metrics_sample(x, NULL, NULL, (double)ev);
	x = metrics_add(list, "corral_events_dropped_total", "counter",
	    "Events not sent to subscribers that did not read in time");
	metrics_sample(x, NULL, NULL, (double)dropped);
	return json_pack("{s:o}", "metrics", list);
}

/* _corral/metrics. */
void
metrics_request(struct peer *p, json_t *id, json_t *params)
{
	rpc_reply(p, id, metrics_json());
}
