/*
 * treeagent: a scriptable agent for the sub-agent tree regress scripts
 * (tests/regress/tree-*.sh).
 *
 *   treeagent [--record FILE] [--plan FILE] [--boot FILE]
 *
 * Every request or task runs a plan: the task's inputs.parameters.plan,
 * else the --plan file (JSON), else a plan that only finalizes.  The
 * --boot plan runs once at start, without a request, and never finalizes.  A plan is
 * {"steps": [STEP...], "text": "..."}; the steps run in order:
 *
 *   {"spawn": {"agent": NAME, "plan": PLAN, "count": N, "visible": b,
 *              "keep": b, "restart": S, "timeout": n, "limits": {...},
 *              "cmd": [ARGV]}}
 *                      map/agents/spawn, N times; "plan" travels in the
 *                      child's task as inputs.parameters.plan; "retry_ms":
 *                      retry a spawn refused with 4000 for that long; the
 *                      other members are passed on as the spawn's params
 *   {"await": true}    wait for a child_result from every child spawned
 *   {"send": {"to": ADDRESS, "text": T}}
 *                      map/send; a string "%NAME" anywhere in ADDRESS is
 *                      the id of the first agent of workflow entry NAME
 *                      found in the record file
 *   {"wait_msg": N}    wait until N map/send messages have arrived
 *   {"wait_text": T}   wait until a message with content.text T arrived
 *   {"progress": {"tokens": N, "usd": X, "count": K}}
 *                      K envelopes of intent analyze, each reporting N
 *                      input tokens and $X in trace.cost
 *   {"sleep": MS}      wait MS milliseconds (still answering pings)
 *   {"hang": true}     never finish the task (exit 0 at EOF on stdin)
 *   {"deaf": true}     never finish, ignore SIGTERM and EOF on stdin: only
 *                      SIGKILL ends it
 *   {"exit": N}        exit with status N at once
 *   {"crash_starts": N}
 *                      exit 3 while the record file holds at most N
 *                      start lines of this agent id (crash in the first
 *                      N runs)
 *   {"wait_file": PATH} wait until PATH exists
 *   {"linger": PATH}   from now on EOF on stdin ends it only once PATH
 *                      exists (SIGTERM still does): a child whose stop is
 *                      under way for as long as the script wants
 *   {"list": true}     map/agents/list; records the ids it sees
 *   {"stop": ID}       map/agents/stop ("%NAME" as in send)
 *   {"cancel": ID}     _corral/cancel of request ID ("self": the request
 *                      this plan runs for)
 *   {"cancel_children": true}
 *                      _corral/cancel of the task of every child spawned
 *                      so far in this run
 *   {"wait_cancel": true}
 *                      wait until corral says the request this plan runs
 *                      for was cancelled
 *   {"grandchild": true}
 *                      double-fork a grandchild that calls setsid(), puts
 *                      /dev/null on 0-2 and sleeps for ever
 *   {"worker": true}   fork a child that stays in our process group, puts
 *                      /dev/null on 0-2 and sleeps for ever (a tool
 *                      process an agent left behind)
 *   {"finalize": {"text": T, "tokens": N, "usd": X, "error": b,
 *                 "no_parents": b}}
 *                      finish now with that reply (no_parents: leave
 *                      trace.parents out, for corral to fill in)
 *
 * At the end of the steps it finalizes with content.text "ID" when it has
 * no children, else "ID(" the children's texts joined by "," ")", failed
 * children as "!CHILD:CODE", and content.data {"id", "results",
 * "spawn_errors", "sends", "messages"}.
 *
 * The record file gets one line per event, written with one write(2):
 *   start ID NAME PID        task ID TASKID PARENT
 *   spawned ID CHILD TASKID      spawn_error ID CODE MESSAGE
 *   result ID CHILD ok|fail CODE TEXT
 *   worker ID PID
 *   message ID FROM TEXT         send_ok ID N TARGETS
 *   send_error ID CODE MESSAGE   grandchild ID PID
 *   notice ID TEXT               final ID TEXT       eof ID
 *   list ID ID1,ID2,...          stop_ok ID TARGET   stop_error ID CODE MSG
 *   cancel ID REQUEST (a cancel notice)
 *   cancel_ok ID REQUEST WAS     cancel_error ID CODE MESSAGE
 *   progress ID CHILD TEXT (a child's progress)
 *
 * Pids are as /proc names them (tool_pid in tool.h); the scripts map
 * them to the host pids they can kill (lib.sh, host_pid).  Deliberate
 * exits use _exit(), so that a sanitizer's exit-time checks cannot change
 * the status a script expects.
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "tool.h"

#define MAXQ	4096

static const char	*record_path;
#define record(...)	tool_record(record_path, __VA_ARGS__)
static const char	*plan_path;
static const char	*boot_path;
static const char	*self_id = "?";
static const char	*self_name = "?";

static char		*inbuf;
static size_t		 inlen, incap;
static int		 at_eof;
static int		 deaf;
static char		*linger_path;

/* Requests and tasks waiting to be worked on, oldest first. */
static json_t		*work;
/* Child results and messages that arrived, in order. */
static json_t		*results;
static json_t		*messages;
/* The requests corral cancelled, by id. */
static json_t		*cancelled;
/* Responses to our control calls, by id. */
static json_t		*responses;
static long		 next_call = 1;
static long		 seq;

/* Write one JSON value as a line on stdout, and steal it. */
static void
emit(json_t *j)
{
	char	*s;
	size_t	 len;

	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (s == NULL)
		exit(70);
	len = strlen(s);
	s = realloc(s, len + 2);
	if (s == NULL)
		exit(70);
	s[len] = '\n';
	if (tool_write_all(1, s, len + 1) == -1)
		_exit(0);	/* corral closed our stdout: we are done */
	free(s);
}

static const char *
str(json_t *obj, const char *key)
{
	const char	*s = json_string_value(json_object_get(obj, key));

	return s != NULL ? s : "";
}

static void
on_eof(void)
{
	record("eof %s", self_id);
	if (deaf)
		for (;;)
			pause();
	while (linger_path != NULL && access(linger_path, F_OK) != 0)
		poll(NULL, 0, 20);
	_exit(0);
}

/* Sort one line from corral into its queue. */
static void
take_line(const char *line, size_t len)
{
	json_t		*j, *c, *id;
	json_error_t	 e;
	const char	*kind;

	if ((j = json_loadb(line, len, 0, &e)) == NULL) {
		fprintf(stderr, "treeagent %s: bad line: %s\n", self_id, e.text);
		return;
	}
	if (json_object_get(j, "jsonrpc") != NULL) {
		id = json_object_get(j, "id");
		if (json_object_get(j, "method") != NULL) {
			if (id != NULL)
				emit(json_pack("{s:s, s:O, s:{}}", "jsonrpc",
				    "2.0", "id", id, "result"));
		} else if (json_is_integer(id)) {
			char k[32];

			snprintf(k, sizeof k, "%lld",
			    (long long)json_integer_value(id));
			json_object_set(responses, k, j);
		}
		json_decref(j);
		return;
	}
	c = json_object_get(j, "corral");
	kind = str(c, "kind");
	if (strcmp(kind, "notice") == 0) {
		record("notice %s %s", self_id,
		    str(json_object_get(j, "content"), "text"));
	} else if (strcmp(kind, "child_result") == 0) {
		json_t *data = json_object_get(json_object_get(j, "content"),
		    "data");

		record("result %s %s %s %s %s", self_id, str(c, "child"),
		    json_is_true(json_object_get(c, "ok")) ? "ok" : "fail",
		    json_is_object(data) && *str(data, "code") ? str(data,
		    "code") : "-", str(json_object_get(j, "content"), "text"));
		json_array_append(results, j);
	} else if (strcmp(kind, "message") == 0) {
		record("message %s %s %s", self_id, str(c, "from"),
		    str(json_object_get(j, "content"), "text"));
		json_array_append(messages, j);
	} else if (strcmp(kind, "cancel") == 0) {
		record("cancel %s %s", self_id, str(c, "request"));
		json_object_set_new(cancelled, str(c, "request"), json_true());
	} else if (strcmp(kind, "progress") == 0) {
		char	*t, *p;

		t = strdup(str(json_object_get(j, "content"), "text"));

		/* One record line: its lines joined by '|'. */
		for (p = t; p != NULL && *p != '\0'; p++)
			if (*p == '\n')
				*p = '|';
		record("progress %s %s %s", self_id, str(c, "child"),
		    t != NULL ? t : "");
		free(t);
	} else {
		if (strcmp(kind, "task") == 0)
			record("task %s %s %s", self_id,
			    str(json_object_get(j, "trace"), "id"),
			    str(c, "parent"));
		json_array_append(work, j);
	}
	json_decref(j);
}

/*
 * Read what stdin has within ms milliseconds (-1: block until a line),
 * sorting complete lines; exits at EOF.
 */
static void
pump(int ms)
{
	struct pollfd	 pfd = { 0, POLLIN, 0 };
	ssize_t		 n;
	char		*nl;
	size_t		 off;

	if (poll(&pfd, 1, ms) <= 0)
		return;
	if (inlen + 65536 > incap) {
		incap = (inlen + 65536) * 2;
		if ((inbuf = realloc(inbuf, incap)) == NULL)
			exit(70);
	}
	n = read(0, inbuf + inlen, incap - inlen);
	if (n == -1 && errno == EINTR)
		return;
	if (n <= 0) {
		at_eof = 1;
		on_eof();
	}
	inlen += (size_t)n;
	off = 0;
	while ((nl = memchr(inbuf + off, '\n', inlen - off)) != NULL) {
		size_t l = (size_t)(nl - (inbuf + off));

		if (l > 0)
			take_line(inbuf + off, l);
		off += l + 1;
	}
	memmove(inbuf, inbuf + off, inlen - off);
	inlen -= off;
}

/* Pump for ms milliseconds. */
static void
pump_for(double ms)
{
	double	end = tool_mono() + ms / 1000.0, left;

	while ((left = end - tool_mono()) > 0)
		pump((int)(left * 1000) + 1);
}

/* Send a control request and wait for its response (which we own). */
static json_t *
call(const char *method, json_t *params)
{
	char	 k[32];
	long	 id = next_call++;
	json_t	*r;

	snprintf(k, sizeof k, "%ld", id);
	emit(json_pack("{s:s, s:I, s:s, s:o}", "jsonrpc", "2.0", "id",
	    (json_int_t)id, "method", method, "params", params));
	while ((r = json_object_get(responses, k)) == NULL)
		pump(-1);
	json_incref(r);
	json_object_del(responses, k);
	return r;
}

/*
 * Find the id of the first agent of entry name in the record file,
 * waiting up to 60 s for it to start (times SLOW if the environment has
 * it; corral's allowlist keeps it from agents unless a workflow lets it
 * through).
 */
static char *
lookup(const char *name)
{
	char		 line[1024], id[256], nm[256];
	FILE		*f;
	const char	*slow = getenv("SLOW");
	double		 end = tool_mono() + 60 * (slow != NULL &&
			    atoi(slow) > 0 ? atoi(slow) : 1);

	while (tool_mono() < end) {
		if (record_path != NULL && (f = fopen(record_path, "r")) !=
		    NULL) {
			while (fgets(line, sizeof line, f) != NULL)
				if (sscanf(line, "start %255s %255s", id,
				    nm) == 2 && strcmp(nm, name) == 0) {
					fclose(f);
					return strdup(id);
				}
			fclose(f);
		}
		pump_for(20);
	}
	return strdup(name);
}

/* Replace "%NAME" strings in an address by agent ids. */
static json_t *
resolve(json_t *v)
{
	json_t		*o, *x;
	const char	*k;
	size_t		 i;
	char		*id;

	if (json_is_string(v) && json_string_value(v)[0] == '%') {
		id = lookup(json_string_value(v) + 1);
		o = json_string(id);
		free(id);
		return o;
	}
	if (json_is_array(v)) {
		o = json_array();
		json_array_foreach(v, i, x)
			json_array_append_new(o, resolve(x));
		return o;
	}
	if (json_is_object(v)) {
		o = json_object();
		json_object_foreach(v, k, x)
			json_object_set_new(o, k, resolve(x));
		return o;
	}
	return json_incref(v);
}

/* A new envelope from us. */
static json_t *
envelope(const char *intent, const char *task, const char *ctype,
    const char *text)
{
	char	id[96];

	snprintf(id, sizeof id, "%s-t%ld", self_id, ++seq);
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:s, s:s, "
	    "s:{s:s, s:s}, s:{s:f}, s:{s:s}}",
	    "protocol", "multiagent-1.0", "role", "agent",
	    "agent", "id", self_id, "name", self_name, "model", "test",
	    "intent", intent, "task", task,
	    "content", "type", ctype, "text", text,
	    "confidence", "score", 0.9,
	    "trace", "id", id);
}

static void
set_parent(json_t *env, const char *parent)
{
	json_object_set_new(json_object_get(env, "trace"), "parents",
	    json_pack("[s]", parent));
}

static void
set_cost(json_t *env, double tokens, double usd)
{
	json_object_set_new(json_object_get(env, "trace"), "cost",
	    json_pack("{s:f, s:f, s:f}", "input_tokens", tokens,
	    "output_tokens", 0.0, "usd", usd));
}

/*
 * Fork, with stdio on /dev/null in the child.  The child closes sync[1]
 * once it has written its record line, and the parent waits for that in
 * fork_wait: a kill right after the plan step must not lose the line.
 */
static pid_t
fork_quiet(int *sync)
{
	pid_t	pid;
	int	fd;

	if (pipe(sync) == -1)
		return -1;
	if ((pid = fork()) != 0) {
		close(sync[1]);
		return pid;
	}
	close(sync[0]);
	if ((fd = open("/dev/null", O_RDWR)) != -1) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	return 0;
}

/* The parent's half of fork_quiet: wait until every child recorded. */
static void
fork_wait(int *sync)
{
	char	c;

	while (read(sync[0], &c, 1) == -1 && errno == EINTR)
		;
	close(sync[0]);
}

/* Start a detached grandchild in its own session. */
static void
grandchild(void)
{
	pid_t	pid, gc;
	int	sync[2], st;

	if ((pid = fork_quiet(sync)) == -1)
		return;
	if (pid == 0) {
		if (setsid() == -1)
			_exit(1);
		if ((gc = fork()) != 0)
			_exit(gc == -1);
		record("grandchild %s %ld", self_id, tool_pid());
		close(sync[1]);
		for (;;)
			pause();
	}
	fork_wait(sync);
	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
}

/* Start a child in our own process group, with its stdio on /dev/null. */
static void
worker(void)
{
	int	sync[2];
	pid_t	pid;

	if ((pid = fork_quiet(sync)) == -1)
		return;
	if (pid == 0) {
		record("worker %s %ld", self_id, tool_pid());
		close(sync[1]);
		for (;;)
			pause();
	}
	fork_wait(sync);
}

/* The state of one plan run. */
struct run {
	json_t	*req;		/* the request or task */
	json_t	*kids;		/* ids of children spawned */
	json_t	*tasks;		/* their tasks' ids */
	size_t	 results0;	/* results that arrived before this run */
	json_t	*spawn_errors;
	json_t	*sends;
};

static void
do_spawn(struct run *r, json_t *s)
{
	json_t		*params, *task, *res, *err, *v;
	long		 i, count;
	double		 end;
	const char	*agent = str(s, "agent"), *k;

	count = json_is_integer(json_object_get(s, "count")) ?
	    (long)json_integer_value(json_object_get(s, "count")) : 1;
	for (i = 0; i < count; i++) {
		task = envelope("execute", *str(s, "task") ? str(s, "task") :
		    agent, "text", "do it");
		if (json_object_get(s, "plan") != NULL)
			json_object_set_new(task, "inputs", json_pack(
			    "{s:{s:O}}", "parameters", "plan",
			    json_object_get(s, "plan")));
		/* The task's id is corral's; leave trace without one. */
		json_object_del(json_object_get(task, "trace"), "id");
		params = json_pack("{s:o}", "task", task);
		if (*agent != '\0')
			json_object_set_new(params, "agent", json_string(agent));
		json_object_foreach(s, k, v)
			if (strcmp(k, "visible") == 0 || strcmp(k, "keep") ==
			    0 || strcmp(k, "restart") == 0 || strcmp(k,
			    "timeout") == 0 || strcmp(k, "limits") == 0 ||
			    strcmp(k, "cmd") == 0)
				json_object_set(params, k, v);
		/* call() steals a reference each time. */
		res = call("map/agents/spawn", json_incref(params));
		end = tool_mono() + json_number_value(json_object_get(s,
		    "retry_ms")) / 1000.0;
		while ((err = json_object_get(res, "error")) != NULL &&
		    json_integer_value(json_object_get(err, "code")) == 4000 &&
		    tool_mono() < end) {
			json_decref(res);
			pump_for(20);
			res = call("map/agents/spawn", json_incref(params));
		}
		json_decref(params);
		if ((err = json_object_get(res, "error")) != NULL) {
			record("spawn_error %s %lld %s", self_id,
			    (long long)json_integer_value(json_object_get(err,
			    "code")), str(err, "message"));
			json_array_append_new(r->spawn_errors, json_pack(
			    "{s:O, s:s}", "code", json_object_get(err, "code"),
			    "message", str(err, "message")));
		} else {
			v = json_object_get(json_object_get(res, "result"),
			    "agent");
			record("spawned %s %s %s", self_id, str(v, "id"),
			    str(json_object_get(res, "result"), "messageId"));
			json_array_append_new(r->kids, json_string(str(v,
			    "id")));
			json_array_append_new(r->tasks, json_string(str(
			    json_object_get(res, "result"), "messageId")));
		}
		json_decref(res);
	}
}

static void
do_send(struct run *r, json_t *s)
{
	json_t	*to, *env, *res, *err, *x;
	char	*ids;

	to = resolve(json_object_get(s, "to"));
	env = envelope("execute", "message", "text", *str(s, "text") ?
	    str(s, "text") : self_id);
	json_object_del(json_object_get(env, "trace"), "id");
	res = call("map/send", json_pack("{s:o, s:o}", "to", to, "envelope",
	    env));
	if ((err = json_object_get(res, "error")) != NULL) {
		record("send_error %s %lld %s", self_id,
		    (long long)json_integer_value(json_object_get(err, "code")),
		    str(err, "message"));
		json_array_append_new(r->sends, json_pack("{s:b, s:O, s:s}",
		    "ok", 0, "code", json_object_get(err, "code"), "message",
		    str(err, "message")));
	} else {
		x = json_object_get(json_object_get(res, "result"),
		    "delivered");
		ids = json_dumps(x, JSON_COMPACT);
		record("send_ok %s %lld %s", self_id, (long long)
		    json_array_size(x), ids != NULL ? ids : "?");
		free(ids);
		json_array_append_new(r->sends, json_pack("{s:b, s:O}", "ok",
		    1, "to", x));
	}
	json_decref(res);
}

/* How many times this agent id has started, by the record file. */
static long
starts(void)
{
	char	 line[1024], id[256];
	FILE	*f;
	long	 n = 0;

	if (record_path == NULL || (f = fopen(record_path, "r")) == NULL)
		return 0;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "start %255s", id) == 1 &&
		    strcmp(id, self_id) == 0)
			n++;
	fclose(f);
	return n;
}

/* Has a message with this content.text arrived? */
static int
have_text(const char *t)
{
	json_t	*m;
	size_t	 i;

	json_array_foreach(messages, i, m)
		if (strcmp(str(json_object_get(m, "content"), "text"), t) == 0)
			return 1;
	return 0;
}

/* map/agents/list: record the ids the agent may see. */
static void
do_list(void)
{
	json_t	*res, *a;
	char	*ids = strdup(""), *t;
	size_t	 i;

	res = call("map/agents/list", json_object());
	json_array_foreach(json_object_get(json_object_get(res, "result"),
	    "agents"), i, a) {
		if (asprintf(&t, "%s%s%s", ids, *ids ? "," : "", str(a, "id")) ==
		    -1)
			exit(70);
		free(ids);
		ids = t;
	}
	record("list %s %s", self_id, ids);
	free(ids);
	json_decref(res);
}

/* map/agents/stop. */
static void
do_stop(json_t *target)
{
	json_t	*t, *res, *err;

	t = resolve(target);
	res = call("map/agents/stop", json_pack("{s:O}", "agentId", t));
	if ((err = json_object_get(res, "error")) != NULL)
		record("stop_error %s %lld %s", self_id,
		    (long long)json_integer_value(json_object_get(err, "code")),
		    str(err, "message"));
	else
		record("stop_ok %s %s", self_id, json_string_value(t));
	json_decref(t);
	json_decref(res);
}

/* _corral/cancel of one request. */
static void
do_cancel(const char *rid)
{
	json_t	*res, *err;

	res = call("_corral/cancel", json_pack("{s:s}", "requestId", rid));
	if ((err = json_object_get(res, "error")) != NULL)
		record("cancel_error %s %lld %s", self_id,
		    (long long)json_integer_value(json_object_get(err, "code")),
		    str(err, "message"));
	else
		record("cancel_ok %s %s %s", self_id, rid,
		    str(json_object_get(res, "result"), "was"));
	json_decref(res);
}

/* The results that belong to this run's children. */
static size_t
run_results(struct run *r)
{
	return json_array_size(results) - r->results0;
}

/* Finish the run with a finalize (or error) reply. */
static void
finish(struct run *r, json_t *f)
{
	json_t		*env, *res, *v, *data, *c;
	char		*text = NULL, *t;
	const char	*parent = str(json_object_get(r->req, "trace"), "id");
	size_t		 i;

	if (f != NULL && *str(f, "text"))
		text = strdup(str(f, "text"));
	else if (json_array_size(r->kids) == 0)
		text = strdup(self_id);
	else {
		if (asprintf(&text, "%s(", self_id) == -1)
			exit(70);
		for (i = r->results0; i < json_array_size(results); i++) {
			res = json_array_get(results, i);
			c = json_object_get(res, "corral");
			if (json_is_true(json_object_get(c, "ok")))
				v = json_string(str(json_object_get(res,
				    "content"), "text"));
			else {
				data = json_object_get(json_object_get(res,
				    "content"), "data");
				v = json_sprintf("!%s:%s", str(c, "child"),
				    str(data, "code"));
			}
			if (asprintf(&t, "%s%s%s", text, i > r->results0 ? ","
			    : "", json_string_value(v)) == -1)
				exit(70);
			json_decref(v);
			free(text);
			text = t;
		}
		if (asprintf(&t, "%s)", text) == -1)
			exit(70);
		free(text);
		text = t;
	}
	env = envelope("finalize", str(r->req, "task"),
	    f != NULL && json_is_true(json_object_get(f, "error")) ? "error" :
	    "json", text);
	if (f == NULL || !json_is_true(json_object_get(f, "no_parents")))
		set_parent(env, parent);
	if (f != NULL && (json_is_number(json_object_get(f, "tokens")) ||
	    json_is_number(json_object_get(f, "usd"))))
		set_cost(env, json_number_value(json_object_get(f, "tokens")),
		    json_number_value(json_object_get(f, "usd")));
	data = json_pack("{s:s, s:[], s:O, s:O, s:[]}", "id", self_id,
	    "results", "spawn_errors", r->spawn_errors, "sends", r->sends,
	    "messages");
	for (i = r->results0; i < json_array_size(results); i++) {
		res = json_array_get(results, i);
		c = json_object_get(res, "corral");
		json_array_append_new(json_object_get(data, "results"),
		    json_pack("{s:s, s:b, s:s, s:s, s:s}", "child",
		    str(c, "child"), "ok", json_is_true(json_object_get(c,
		    "ok")), "spawn", str(c, "spawn"), "text",
		    str(json_object_get(res, "content"), "text"), "code",
		    str(json_object_get(json_object_get(res, "content"),
		    "data"), "code")));
	}
	for (i = 0; i < json_array_size(messages); i++) {
		res = json_array_get(messages, i);
		json_array_append_new(json_object_get(data, "messages"),
		    json_pack("{s:s, s:s}", "from", str(json_object_get(res,
		    "corral"), "from"), "text", str(json_object_get(res,
		    "content"), "text")));
	}
	json_object_set_new(json_object_get(env, "content"), "data", data);
	record("final %s %s", self_id, text);
	free(text);
	emit(env);
}

/* Run a plan for one request or task. */
static void
run_plan(json_t *req, json_t *plan)
{
	struct run	 r;
	json_t		*steps, *s, *v;
	size_t		 i;
	double		 end;

	memset(&r, 0, sizeof r);
	r.req = req;
	r.kids = json_array();
	r.tasks = json_array();
	r.spawn_errors = json_array();
	r.sends = json_array();
	r.results0 = json_array_size(results);
	steps = json_object_get(plan, "steps");
	json_array_foreach(steps, i, s) {
		if ((v = json_object_get(s, "spawn")) != NULL)
			do_spawn(&r, v);
		else if ((v = json_object_get(s, "send")) != NULL)
			do_send(&r, v);
		else if (json_object_get(s, "await") != NULL) {
			end = tool_mono() + 60;
			while (run_results(&r) < json_array_size(r.kids) &&
			    tool_mono() < end)
				pump(100);
		} else if ((v = json_object_get(s, "wait_msg")) != NULL) {
			end = tool_mono() + 60;
			while (json_array_size(messages) <
			    (size_t)json_integer_value(v) && tool_mono() < end)
				pump(100);
		} else if ((v = json_object_get(s, "progress")) != NULL) {
			long k, n = json_is_integer(json_object_get(v,
			    "count")) ? (long)json_integer_value(
			    json_object_get(v, "count")) : 1;

			for (k = 0; k < n; k++) {
				json_t *e = envelope("analyze", "progress",
				    "text", "working");

				set_parent(e, str(json_object_get(req, "trace"),
				    "id"));
				set_cost(e, json_number_value(json_object_get(v,
				    "tokens")), json_number_value(
				    json_object_get(v, "usd")));
				emit(e);
				pump_for(json_is_number(json_object_get(v,
				    "gap")) ? json_number_value(json_object_get(
				    v, "gap")) : 0);
			}
		} else if ((v = json_object_get(s, "wait_text")) != NULL) {
			end = tool_mono() + 60;
			while (!have_text(json_string_value(v)) &&
			    tool_mono() < end)
				pump(100);
		} else if ((v = json_object_get(s, "wait_file")) != NULL) {
			while (access(json_string_value(v), F_OK) != 0)
				pump(20);
		} else if ((v = json_object_get(s, "linger")) != NULL) {
			free(linger_path);
			linger_path = strdup(json_string_value(v));
		} else if (json_object_get(s, "list") != NULL)
			do_list();
		else if ((v = json_object_get(s, "stop")) != NULL)
			do_stop(v);
		else if ((v = json_object_get(s, "cancel")) != NULL)
			do_cancel(strcmp(json_string_value(v), "self") == 0 ?
			    str(json_object_get(req, "trace"), "id") :
			    json_string_value(v));
		else if (json_object_get(s, "cancel_children") != NULL) {
			json_t	*t;
			size_t	 k;

			json_array_foreach(r.tasks, k, t)
				do_cancel(json_string_value(t));
		} else if (json_object_get(s, "wait_cancel") != NULL) {
			end = tool_mono() + 60;
			while (json_object_get(cancelled, str(json_object_get(
			    req, "trace"), "id")) == NULL && tool_mono() < end)
				pump(100);
		}
		else if ((v = json_object_get(s, "sleep")) != NULL)
			pump_for(json_number_value(v));
		else if (json_object_get(s, "deaf") != NULL) {
			deaf = 1;
			signal(SIGTERM, SIG_IGN);
			for (;;)
				pump(-1);
		} else if (json_object_get(s, "hang") != NULL)
			for (;;)
				pump(-1);
		else if ((v = json_object_get(s, "exit")) != NULL) {
			record("exit %s %lld", self_id,
			    (long long)json_integer_value(v));
			_exit((int)json_integer_value(v));
		} else if ((v = json_object_get(s, "crash_starts")) != NULL) {
			if (starts() <= json_integer_value(v)) {
				record("exit %s 3", self_id);
				_exit(3);
			}
		} else if (json_object_get(s, "grandchild") != NULL)
			grandchild();
		else if (json_object_get(s, "worker") != NULL)
			worker();
		else if ((v = json_object_get(s, "finalize")) != NULL) {
			finish(&r, v);
			goto out;
		}
	}
	if (req != NULL)
		finish(&r, NULL);
out:
	json_decref(r.kids);
	json_decref(r.tasks);
	json_decref(r.spawn_errors);
	json_decref(r.sends);
}

static json_t *
load_plan(const char *path)
{
	json_error_t	 e;
	json_t		*p;

	if (path == NULL)
		return json_object();
	if ((p = json_load_file(path, 0, &e)) == NULL) {
		fprintf(stderr, "treeagent: %s:%d: %s\n", path, e.line,
		    e.text);
		exit(64);
	}
	return p;
}

int
main(int argc, char **argv)
{
	json_t		*dflt, *req, *plan;
	const char	*s;
	int		 i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--record") == 0 && i + 1 < argc)
			record_path = argv[++i];
		else if (strcmp(argv[i], "--plan") == 0 && i + 1 < argc)
			plan_path = argv[++i];
		else if (strcmp(argv[i], "--boot") == 0 && i + 1 < argc)
			boot_path = argv[++i];
		else {
			fprintf(stderr, "usage: treeagent [--record FILE] "
			    "[--plan FILE] [--boot FILE]\n");
			return 64;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	if ((s = getenv("CORRAL_AGENT_ID")) != NULL)
		self_id = s;
	if ((s = getenv("CORRAL_AGENT_NAME")) != NULL)
		self_name = s;
	work = json_array();
	results = json_array();
	messages = json_array();
	responses = json_object();
	cancelled = json_object();
	dflt = load_plan(plan_path);
	record("start %s %s %ld", self_id, self_name, tool_pid());
	if (boot_path != NULL) {
		plan = load_plan(boot_path);
		run_plan(NULL, plan);
		json_decref(plan);
	}
	for (;;) {
		while (json_array_size(work) == 0)
			pump(-1);
		req = json_incref(json_array_get(work, 0));
		json_array_remove(work, 0);
		plan = json_object_get(json_object_get(json_object_get(req,
		    "inputs"), "parameters"), "plan");
		run_plan(req, plan != NULL ? plan : dflt);
		json_decref(req);
	}
}
