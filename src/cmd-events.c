/*
 * corral events: a running corral's MAP events, from the start of the run
 * (map/replay), and with --follow as they happen (map/subscribe).
 *
 *   corral events [-S PATH | --run ID] [-f | --follow] [--filter TYPE,...]
 *                 [--agent ID,...] [--since EVENTID] [--new]
 *                 [--json | --text]
 *
 * Output is NDJSON, one MAP Event object a line, or on a terminal (or
 * with --text) one readable line each.  With --follow the subscription
 * is made before the history is read, and events already printed from
 * the history are skipped, so nothing falls between the two.  It ends
 * when corral does.
 */

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "corral.h"
#include "cmd.h"

/* Split "a,b,c" into a JSON array of strings (a new reference). */
static json_t *
cmd_events_list(const char *s)
{
	json_t		*a = json_array();
	const char	*p;

	while (*s != '\0') {
		if ((p = strchr(s, ',')) == NULL)
			p = s + strlen(s);
		if (p > s)
			json_array_append_new(a, json_stringn(s, (size_t)(p - s)));
		s = *p == ',' ? p + 1 : p;
	}
	return a;
}

/* A JSON value as compact text, for a readable line (freed by caller). */
static char *
cmd_events_dump(json_t *v)
{
	char	*s;

	if (v == NULL || (s = jsonw_dumps(v, JSON_ENCODE_ANY |
	    CORRAL_JSON_FLAGS)) == NULL)
		return xstrdup("-");
	return s;
}

/* String member k of o, or "-". */
static const char *
cmd_events_str(json_t *o, const char *k)
{
	const char	*s = json_string_value(json_object_get(o, k));

	return s != NULL ? s : "-";
}

/* Print an event as one readable line. */
static void
cmd_events_text(json_t *ev)
{
	json_t		*d = json_object_get(ev, "data");
	const char	*type = cmd_events_str(ev, "type");
	char		 when[32], what[512], *x;
	time_t		 t;
	struct tm	 tm;
	json_int_t	 ms = json_integer_value(json_object_get(ev,
			    "timestamp"));

	t = (time_t)(ms / 1000);
	localtime_r(&t, &tm);
	strftime(when, sizeof when, "%H:%M:%S", &tm);
	if (strcmp(type, "agent_registered") == 0)
		snprintf(what, sizeof what, "registered: %s, owner %s%s%s",
		    cmd_events_str(d, "name"), cmd_events_str(d, "ownerId"),
		    json_object_get(d, "parent") ? ", parent " : "",
		    json_object_get(d, "parent") ? cmd_events_str(d,
		    "parent") : "");
	else if (strcmp(type, "agent_state_changed") == 0)
		snprintf(what, sizeof what, "%s -> %s%s%s%s",
		    cmd_events_str(d, "previousState"),
		    cmd_events_str(d, "newState"),
		    json_object_get(d, "reason") ? " (" : "",
		    json_object_get(d, "reason") ? cmd_events_str(d, "reason") :
		    "", json_object_get(d, "reason") ? ")" : "");
	else if (strcmp(type, "agent_unregistered") == 0)
		snprintf(what, sizeof what, "unregistered (%s)",
		    cmd_events_str(d, "reason"));
	else if (strcmp(type, "agent_orphaned") == 0)
		snprintf(what, sizeof what, "orphaned: %s left",
		    cmd_events_str(d, "previousOwner"));
	else if (strncmp(type, "participant_", 12) == 0)
		snprintf(what, sizeof what, "%s (%s)", type + 12,
		    cmd_events_str(d, "name"));
	else if (strcmp(type, "message_sent") == 0) {
		x = cmd_events_dump(json_object_get(d, "to"));
		snprintf(what, sizeof what, "message %s to %s%s%s",
		    cmd_events_str(d, "messageId"), x,
		    json_object_get(d, "correlationId") ? ", result of " : "",
		    json_object_get(d, "correlationId") ? cmd_events_str(d,
		    "correlationId") : "");
		free(x);
	} else if (strcmp(type, "message_delivered") == 0) {
		x = cmd_events_dump(json_object_get(d, "deliveredTo"));
		snprintf(what, sizeof what, "message %s delivered to %s",
		    cmd_events_str(d, "messageId"), x);
		free(x);
	} else if (strcmp(type, "message_failed") == 0)
		snprintf(what, sizeof what, "message %s not delivered: %s",
		    cmd_events_str(d, "messageId"), cmd_events_str(d, "reason"));
	else if (strcmp(type, "request_started") == 0 ||
	    strcmp(type, "request_ended") == 0)
		snprintf(what, sizeof what, "%s %s %s (%s, age %.1fs)%s%.60s",
		    type[8] == 's' ? "request" : "ended:",
		    cmd_events_str(d, "requestId"), cmd_events_str(d, "intent"),
		    cmd_events_str(d, "state"), json_number_value(
		    json_object_get(d, "age")), json_object_get(d, "task") ?
		    ": " : "", cmd_events_str(d, "task"));
	else if (strcmp(type, "system_error") == 0 &&
	    json_object_get(d, "requestId") != NULL)
		/* A request's failure: the ids corral cancel and logs use. */
		snprintf(what, sizeof what, "%s: %s (request %s, %s)",
		    cmd_events_str(d, "code"), cmd_events_str(d, "message"),
		    cmd_events_str(d, "requestId"), cmd_events_str(d,
		    "intent"));
	else if (strcmp(type, "system_error") == 0)
		snprintf(what, sizeof what, "%s: %s", cmd_events_str(d, "code"),
		    cmd_events_str(d, "message"));
	else if (strcmp(type, "agent_progress") == 0) {
		snprintf(what, sizeof what, "%s: %s", cmd_events_str(d,
		    "requestId"), cmd_events_str(d, "text"));
		/* A CLI's output, on one line and harmless to a terminal. */
		for (x = what; *x != '\0'; x++)
			if ((unsigned char)*x < 0x20 || *x == 0x7f)
				*x = *x == '\n' ? '|' : ' ';
	} else {
		x = cmd_events_dump(d);
		snprintf(what, sizeof what, "%s", x);
		free(x);
	}
	printf("%s.%03d %-20s %-16s %s\n", when, (int)(ms % 1000), type,
	    cmd_events_str(ev, "source"), what);
}

/* Print an event in the chosen format. */
static void
cmd_events_print(json_t *ev, int text)
{
	if (text) {
		/* What agents wrote must not drive the terminal. */
		util_vis_json(ev);
		cmd_events_text(ev);
	} else
		cmd_print_json(ev);
}

/*
 * Print the history after *last (empty: from the start), page by page;
 * *last becomes the last event printed.  Returns 0, or -1 on an error.
 */
static int
cmd_events_history(struct client *c, json_t *filter, char *last, size_t len,
    int text)
{
	json_t	*params, *res, *e, *item;
	size_t	 i;
	char	 err[512];
	int	 more = 1;

	while (more) {
		params = json_pack("{s:i}", "limit", 1000);
		if (*last != '\0')
			json_object_set_new(params, "afterEventId",
			    json_string(last));
		if (filter != NULL)
			json_object_set(params, "filter", filter);
		if ((res = client_call(c, CORRAL_M_REPLAY, params, 30000,
		    &e)) == NULL) {
			client_error_text(e, err, sizeof err);
			fprintf(stderr, "corral: map/replay: %s\n", err);
			json_decref(e);
			return -1;
		}
		json_array_foreach(json_object_get(res, "events"), i, item) {
			cmd_events_print(json_object_get(item, "event"), text);
			strlcpy(last, cmd_events_str(item, "eventId"), len);
		}
		more = json_is_true(json_object_get(res, "hasMore")) &&
		    json_array_size(json_object_get(res, "events")) > 0;
		json_decref(res);
	}
	fflush(stdout);
	return 0;
}

/* A clock's time in milliseconds. */
static json_int_t
cmd_events_clock(clockid_t id)
{
	struct timespec	ts;

	clock_gettime(id, &ts);
	return (json_int_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * With --requests: the requests in flight, asked for each second and
 * printed as request_started when one appears and request_ended when it
 * is gone (its last look).  Returns the new set by request id; a request
 * shorter than a look may not be seen (the audit log has them all).
 */
static json_t *
cmd_events_requests(struct client *c, json_t *seen, int text)
{
	json_t		*res, *now, *r, *ev;
	const char	*id;
	size_t		 i;
	void		*tmp;

	if ((res = client_requests(c, 10000)) == NULL)
		return seen;
	now = json_object();
	json_array_foreach(json_object_get(res, "requests"), i, r) {
		if ((id = json_string_value(json_object_get(r,
		    "requestId"))) == NULL)
			continue;
		json_object_set(now, id, r);
		if (json_object_get(seen, id) != NULL)
			continue;
		ev = json_pack("{s:s, s:I, s:s, s:O}", "type",
		    "request_started", "timestamp", (json_int_t)json_integer_value(
		    json_object_get(r, "acceptedAt")), "source", cmd_events_str(r,
		    "agentId")[0] != '\0' ? cmd_events_str(r, "agentId") :
		    "corral", "data", r);
		cmd_events_print(ev, text);
		json_decref(ev);
	}
	json_object_foreach_safe(seen, tmp, id, r) {
		if (json_object_get(now, id) != NULL)
			continue;
		ev = json_pack("{s:s, s:I, s:s, s:O}", "type", "request_ended",
		    "timestamp", cmd_events_clock(CLOCK_REALTIME), "source",
		    cmd_events_str(r, "agentId")[0] != '\0' ?
		    cmd_events_str(r, "agentId") : "corral", "data", r);
		cmd_events_print(ev, text);
		json_decref(ev);
	}
	fflush(stdout);
	json_decref(res);
	json_decref(seen);
	return now;
}

/* The --filter and --agent options as map/subscribe's filter, or NULL. */
static json_t *
cmd_events_filter(struct cmd *c)
{
	json_t		*filter = NULL;
	const char	*v;

	if ((v = cmd_get(c, "filter")) != NULL)
		filter = json_pack("{s:o}", "eventTypes", cmd_events_list(v));
	if ((v = cmd_get(c, "agent")) != NULL) {
		if (filter == NULL)
			filter = json_object();
		json_object_set_new(filter, "fromAgents", cmd_events_list(v));
	}
	return filter;
}

/* corral events. */
static int
cmd_events_exec(struct cmd *c)
{
	const char	*sub = NULL;
	json_t		*filter, *res, *n, *p;
	char		 last[64] = "";
	int		 follow = cmd_has(c, "follow");
	int		 fresh = cmd_has(c, "new");
	int		 reqs = cmd_has(c, "requests");
	json_t		*seen = NULL;	/* by request id, once looked at */
	json_int_t	 looked = 0;
	int		 text = isatty(STDOUT_FILENO), eof, rc = 1;
	size_t		 i;

	if (fresh && !follow)
		return cmd_usage(c);
	/* --json and --text: the last one given. */
	for (i = 0; i < c->nvalues; i++)
		if (strcmp(c->values[i].option->name, "json") == 0 ||
		    strcmp(c->values[i].option->name, "text") == 0)
			text = c->values[i].option->name[0] == 't';
	if (cmd_get(c, "since") != NULL)
		strlcpy(last, cmd_get(c, "since"), sizeof last);
	if (cmd_attach(c) != 0)
		return 1;
	filter = cmd_events_filter(c);
	if (follow) {
		if ((res = cmd_call(c, CORRAL_M_SUBSCRIBE, filter != NULL ?
		    json_pack("{s:O}", "filter", filter) : NULL)) == NULL)
			goto out;
		json_object_set(c->client.info, "subscription",
		    json_object_get(res, "subscriptionId"));
		json_decref(res);
		sub = json_string_value(json_object_get(c->client.info,
		    "subscription"));
	}
	if (!fresh && cmd_events_history(&c->client, filter, last,
	    sizeof last, text) != 0)
		goto out;
	if (reqs) {
		seen = cmd_events_requests(&c->client, seen, text);
		looked = cmd_events_clock(CLOCK_MONOTONIC);
	}
	while (follow) {
		if (reqs && cmd_events_clock(CLOCK_MONOTONIC) - looked >= 1000) {
			/* Events that never pause must not hide requests. */
			seen = cmd_events_requests(&c->client, seen, text);
			looked = cmd_events_clock(CLOCK_MONOTONIC);
		}
		if ((n = client_next(&c->client, reqs ? 1000 : -1, &eof)) ==
		    NULL) {
			if (eof)
				break;		/* corral is gone */
			continue;
		}
		p = json_object_get(n, "params");
		if (strcmp(cmd_events_str(n, "method"), CORRAL_M_EVENT) == 0 &&
		    strcmp(cmd_events_str(p, "subscriptionId"), sub) == 0 &&
		    strcmp(cmd_events_str(p, "eventId"), last) > 0) {
			cmd_events_print(json_object_get(p, "event"), text);
			fflush(stdout);
		}
		json_decref(n);
	}
	rc = 0;
out:
	json_decref(seen);
	json_decref(filter);
	return rc;
}

static const struct cmd_option cmd_events_options[] = {
	{ "follow", 'f', 0 },
	{ "filter", 0, 1 },
	{ "agent", 0, 1 },
	{ "since", 0, 1 },
	{ "new", 0, 0 },
	{ "requests", 0, 0 },
	{ "json", 0, 0 },
	{ "text", 0, 0 },
	{ NULL, 0, 0 }
};

const struct cmd_entry cmd_events_entry = {
	.name = "events",
	.args = "[-f | --follow] [--filter TYPE,...] [--agent ID,...] "
	    "[--since EVENTID] [--new] [--requests] [--json | --text]",
	.about = "print a running corral's events (--follow: as they come)",
	.options = cmd_events_options,
	.lower = 0,
	.upper = 0,
	.flags = CMD_TARGET,
	.exec = cmd_events_exec,
};
