/*
 * Unit tests of the workflow-file loader (src/config.c).
 *
 * Good workflows, in YAML and JSON form, must load into exactly the
 * settings they spell (and the documented defaults for the rest); bad ones
 * must be refused with a message naming the key and the line and column
 * where a text editor would show the problem.
 */

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "corral.h"

/* Load a workflow that must be valid. */
static struct workflow *
load(const char *text)
{
	struct config_error	 err;
	struct workflow		*wf;

	wf = config_load_string(text, strlen(text), "test.yaml", &err);
	if (wf == NULL)
		fail_msg("valid workflow refused at %d:%d: %s\n%s", err.line,
		    err.column, err.msg, text);
	return wf;
}

/* Print a workflow as `corral check` does, into a new string. */
static char *
print_workflow(const struct workflow *wf)
{
	char	*out = NULL;
	size_t	 len = 0;
	FILE	*f;

	f = open_memstream(&out, &len);
	assert_non_null(f);
	config_print(f, wf);
	fclose(f);
	return out;
}

/* Find an agent's environment variable, or NULL. */
static const char *
env_get(const struct agent_conf *ac, const char *key)
{
	size_t	i;

	for (i = 0; i < ac->nenv; i++)
		if (ac->env[i].key != NULL && strcmp(ac->env[i].key, key) == 0)
			return ac->env[i].value;
	return NULL;
}

/* Find an agent's resource limit, or -2 when it sets none. */
static long long
limit_get(const struct agent_conf *ac, int resource)
{
	size_t	i;

	for (i = 0; i < ac->nlimits; i++)
		if (ac->limits[i].resource == resource)
			return ac->limits[i].value;
	return -2;
}

/* A workflow that sets every key (defaults: apart). */
static const char full_yaml[] =
	"# A workflow with every key.\n"
	"name: full\n"
	"description: \"Every key there is\"\n"
	"start: decompose\n"
	"defaults:\n"
	"  timeout: 45s\n"
	"  restart: permanent\n"
	"  max_line: 64KiB\n"
	"agents:\n"
	"  planner:\n"
	"    cmd: [/bin/cat, --flag, \"quoted arg\"]\n"
	"    instances: 3\n"
	"    autostart: false\n"
	"    role: planning\n"
	"    description: Plans things\n"
	"    ready: handshake\n"
	"    heartbeat: 2s\n"
	"    restart: {policy: transient, max: 7, within: 2m, backoff: 3s,\n"
	"        backoff_max: 1m}\n"
	"    env: {A: x, B: \"2\", EMPTY: \"\"}\n"
	"    cwd: /tmp\n"
	"    max_line: 2MiB\n"
	"    max_inflight: 4\n"
	"    timeout: 1500ms\n"
	"    stop: {grace: 3s, timeout: 10s}\n"
	"    children: {max: 5, depth: 2, strategy: rest_for_one}\n"
	"    breaker: {failures: 2, reset: 30s, probes: 1}\n"
	"    limits: {nofile: 1024, core: unlimited, as: 1GiB, cpu: 1m,\n"
	"        nproc: 64, fsize: 10MiB, data: 512MiB, stack: 8MiB}\n"
	"    budget: {tokens: 100000, cost: 2.5, time: 10m}\n"
	"    user: nobody\n"
	"  worker:\n"
	"    cmd:\n"
	"      - sh\n"
	"      - -c\n"
	"      - 'exec cat # not a comment'\n"
	"    heartbeat: {interval: 1s, misses: 5}\n"
	"    restart: temporary\n"
	"    children: {strategy: one_for_all}\n"
	"  critic:\n"
	"    cmd: [\"./critic\"]\n"
	"    heartbeat: off\n"
	"    adapter: {type: exec, output: json, confidence: 0.5, stdin: null}\n"
	"  lazy:\n"
	"    adapter: {type: exec, argv: [sort, -u]}\n"
	"    heartbeat: {misses: 2}\n"
	"routes:\n"
	"  plan: planner\n"
	"  decompose: [planner, worker]\n"
	"  execute: [worker]\n"
	"  reflect: critic\n"
	"  tool.call: lazy\n"
	"  \"*\": worker\n"
	"reflection: {below: 0.7, max_rounds: 2, missing: reflect}\n"
	"limits:\n"
	"  max_steps: 50\n"
	"  max_depth: 6\n"
	"  deadline: 5m\n"
	"  max_queue: 100\n"
	"  max_inflight: 10\n"
	"  max_agents: 20\n"
	"  tree_depth: 3\n"
	"  tree_children: 4\n"
	"  budget: {tokens: 1000000, cost: 10, time: 1h}\n"
	"retry: {max: 5, initial: 2s, factor: 1.5, max_delay: 30s}\n"
	"path: [./agents, /opt/agents]\n"
	"inline_spawn: yes\n"
	"env_allow: [HTTP_PROXY, LANG]\n"
	"workspace: ./work\n";

/* Every key of a full workflow lands in the right field. */
static void
test_full_workflow(void **state)
{
	struct workflow		*wf = load(full_yaml);
	struct agent_conf	*p, *w, *c, *l;
	json_t			*want;

	assert_string_equal(wf->name, "full");
	assert_string_equal(wf->start, "decompose");
	assert_int_equal(wf->nagents, 4);
	p = &wf->agents[0];
	w = &wf->agents[1];
	c = &wf->agents[2];
	l = &wf->agents[3];
	assert_string_equal(p->name, "planner");
	assert_string_equal(w->name, "worker");
	assert_string_equal(c->name, "critic");
	assert_string_equal(l->name, "lazy");
	assert_ptr_equal(config_find_agent(wf, "critic"), c);
	assert_null(config_find_agent(wf, "nobody"));
	assert_int_equal(p->index, 0);
	assert_int_equal(l->index, 3);
	assert_int_equal(p->line, 10);
	assert_int_equal(p->column, 3);
	assert_int_equal(w->line, 32);

	/* planner: every per-agent key. */
	assert_int_equal(p->argc, 3);
	assert_string_equal(p->argv[0], "/bin/cat");
	assert_string_equal(p->argv[1], "--flag");
	assert_string_equal(p->argv[2], "quoted arg");
	assert_null(p->argv[3]);
	assert_int_equal(p->instances, 3);
	assert_int_equal(p->autostart, 0);
	assert_string_equal(p->role, "planning");
	assert_string_equal(p->description, "Plans things");
	assert_int_equal(p->ready, READY_HANDSHAKE);
	assert_true(p->hb_interval == 2);
	assert_int_equal(p->hb_misses, 3);
	assert_int_equal(p->restart, RESTART_TRANSIENT);
	assert_true(p->restart_set);
	assert_int_equal(p->restart_max, 7);
	assert_true(p->restart_within == 120);
	assert_true(p->backoff_min == 3);
	assert_true(p->backoff_max == 60);
	assert_int_equal(p->nenv, 3);
	assert_string_equal(env_get(p, "A"), "x");
	assert_string_equal(env_get(p, "B"), "2");
	assert_string_equal(env_get(p, "EMPTY"), "");
	assert_string_equal(p->cwd, "/tmp");
	assert_int_equal(p->max_line, 2 * 1024 * 1024);
	assert_int_equal(p->max_inflight, 4);
	assert_true(p->timeout == 1.5);
	assert_true(p->stop_grace == 3);
	assert_true(p->stop_timeout == 10);
	assert_int_equal(p->max_children, 5);
	assert_int_equal(p->max_depth, 2);
	assert_int_equal(p->strategy, STRATEGY_REST_FOR_ONE);
	assert_int_equal(p->breaker_failures, 2);
	assert_true(p->breaker_reset == 30);
	assert_int_equal(p->breaker_probes, 1);
	assert_int_equal(p->nlimits, 8);
	assert_int_equal(limit_get(p, RLIMIT_NOFILE), 1024);
	assert_true(limit_get(p, RLIMIT_CORE) == (long long)RLIM_INFINITY);
	assert_int_equal(limit_get(p, RLIMIT_AS), 1024LL * 1024 * 1024);
	assert_int_equal(limit_get(p, RLIMIT_CPU), 60);
	assert_int_equal(limit_get(p, RLIMIT_NPROC), 64);
	assert_int_equal(limit_get(p, RLIMIT_FSIZE), 10LL * 1024 * 1024);
	assert_int_equal(limit_get(p, RLIMIT_DATA), 512LL * 1024 * 1024);
	assert_int_equal(limit_get(p, RLIMIT_STACK), 8LL * 1024 * 1024);
	assert_true(p->budget_tokens == 100000);
	assert_true(p->budget_cost == 2.5);
	assert_true(p->budget_time == 600);
	assert_string_equal(p->user, "nobody");
	assert_null(p->adapter);

	/* worker: block-sequence cmd, heartbeat map, defaults applied. */
	assert_int_equal(w->argc, 3);
	assert_string_equal(w->argv[2], "exec cat # not a comment");
	assert_true(w->hb_interval == 1);
	assert_int_equal(w->hb_misses, 5);
	assert_int_equal(w->restart, RESTART_TEMPORARY);
	assert_int_equal(w->strategy, STRATEGY_ONE_FOR_ALL);
	assert_true(w->timeout == 45);
	assert_int_equal(w->max_line, 64 * 1024);
	assert_int_equal(w->nlimits, 0);
	assert_int_equal(w->nenv, 0);

	/* critic: heartbeat off, adapter map kept as JSON. */
	assert_string_equal(c->argv[0], "./critic");
	assert_true(c->hb_interval == 0);
	assert_int_equal(c->restart, RESTART_PERMANENT);
	assert_string_equal(c->adapter, "exec");
	want = json_pack("{s:s, s:s, s:f, s:n}", "type", "exec", "output",
	    "json", "confidence", 0.5, "stdin");
	assert_true(json_equal(c->adapter_conf, want));
	json_decref(want);

	/* lazy: the exec adapter needs no cmd; misses alone means 5s. */
	assert_null(l->argv);
	assert_int_equal(l->argc, 0);
	assert_string_equal(l->adapter, "exec");
	assert_int_equal(json_array_size(json_object_get(l->adapter_conf,
	    "argv")), 2);
	assert_true(l->hb_interval == 5);
	assert_int_equal(l->hb_misses, 2);

	/* Routes, in file order, pointing at the agents. */
	assert_int_equal(wf->nroutes, 6);
	assert_string_equal(wf->routes[0].intent, "plan");
	assert_int_equal(wf->routes[0].nagents, 1);
	assert_ptr_equal(wf->routes[0].agents[0], p);
	assert_string_equal(wf->routes[1].intent, "decompose");
	assert_int_equal(wf->routes[1].nagents, 2);
	assert_ptr_equal(wf->routes[1].agents[0], p);
	assert_ptr_equal(wf->routes[1].agents[1], w);
	assert_ptr_equal(wf->routes[2].agents[0], w);
	assert_ptr_equal(wf->routes[3].agents[0], c);
	assert_string_equal(wf->routes[4].intent, "tool.call");
	assert_ptr_equal(wf->routes[4].agents[0], l);
	assert_string_equal(wf->routes[5].intent, "*");
	assert_ptr_equal(wf->routes[5].agents[0], w);
	assert_int_equal(wf->routes[0].line, 48);

	assert_true(wf->refl_below == 0.7);
	assert_int_equal(wf->refl_max_rounds, 2);
	assert_int_equal(wf->refl_missing, MISSING_REFLECT);
	assert_int_equal(wf->max_steps, 50);
	assert_int_equal(wf->max_depth, 6);
	assert_true(wf->deadline == 300);
	assert_int_equal(wf->max_queue, 100);
	assert_int_equal(wf->max_inflight, 10);
	assert_int_equal(wf->max_agents, 20);
	assert_int_equal(wf->tree_depth, 3);
	assert_int_equal(wf->tree_children, 4);
	assert_true(wf->budget_tokens == 1000000);
	assert_true(wf->budget_cost == 10);
	assert_true(wf->budget_time == 3600);
	assert_int_equal(wf->retries, 5);
	assert_true(wf->retry_initial == 2);
	assert_true(wf->retry_factor == 1.5);
	assert_true(wf->retry_max == 30);
	assert_int_equal(wf->npath, 2);
	assert_string_equal(wf->agent_path[0], "./agents");
	assert_string_equal(wf->agent_path[1], "/opt/agents");
	assert_int_equal(wf->inline_spawn, 1);
	assert_int_equal(wf->nenv_allow, 2);
	assert_string_equal(wf->env_allow[0], "HTTP_PROXY");
	assert_string_equal(wf->env_allow[1], "LANG");
	assert_string_equal(wf->workspace, "./work");
	assert_string_equal(wf->path, "test.yaml");
	assert_non_null(wf->dir);
	assert_int_equal(wf->dir[0], '/');
	config_free(wf);
}

/* A minimal workflow gets the documented defaults everywhere. */
static void
test_defaults_when_absent(void **state)
{
	struct workflow		*wf = load("agents:\n  a:\n    cmd: [cat]\n");
	struct agent_conf	*a = &wf->agents[0];

	assert_null(wf->name);
	assert_string_equal(wf->start, "plan");
	assert_int_equal(wf->nroutes, 0);
	assert_int_equal(a->argc, 1);
	assert_int_equal(a->instances, 1);
	assert_int_equal(a->autostart, 1);
	assert_int_equal(a->ready, READY_SPAWN);
	assert_true(a->hb_interval == 0);
	assert_int_equal(a->hb_misses, 3);
	assert_int_equal(a->restart, RESTART_TRANSIENT);
	assert_false(a->restart_set);
	assert_int_equal(a->restart_max, 5);
	assert_true(a->restart_within == 60);
	assert_true(a->backoff_min == 1);
	assert_true(a->backoff_max == 30);
	assert_int_equal(a->max_line, CORRAL_MAX_LINE_DEFAULT);
	assert_int_equal(a->max_inflight, 0);	/* auto: the adaptive window */
	assert_true(a->timeout == 30);
	assert_true(a->stop_grace == 2);
	assert_true(a->stop_timeout == 5);
	assert_int_equal(a->max_children, 0);
	assert_int_equal(a->max_depth, 0);
	assert_int_equal(a->strategy, STRATEGY_ONE_FOR_ONE);
	assert_int_equal(a->breaker_failures, 5);
	assert_true(a->breaker_reset == 60);
	assert_int_equal(a->breaker_probes, 3);
	assert_int_equal(a->nlimits, 0);
	assert_int_equal(a->nenv, 0);
	assert_null(a->cwd);
	assert_null(a->role);
	assert_null(a->user);
	assert_null(a->adapter);
	assert_true(a->budget_tokens == 0 && a->budget_cost == 0 &&
	    a->budget_time == 0);
	assert_true(wf->refl_below == 0.5);
	assert_int_equal(wf->refl_max_rounds, 1);
	assert_int_equal(wf->refl_missing, MISSING_ACCEPT);
	assert_int_equal(wf->max_steps, 1000);
	assert_int_equal(wf->max_depth, 32);
	assert_true(wf->deadline == 0);
	assert_int_equal(wf->max_queue, 10000);
	assert_int_equal(wf->max_inflight, 1024);
	assert_int_equal(wf->max_agents, 1024);
	assert_int_equal(wf->tree_depth, 8);
	assert_int_equal(wf->tree_children, 128);
	assert_int_equal(wf->retries, 3);
	assert_true(wf->retry_initial == 1);
	assert_true(wf->retry_factor == 2);
	assert_true(wf->retry_max == 10);
	assert_int_equal(wf->inline_spawn, 0);
	assert_int_equal(wf->npath, 0);
	assert_int_equal(wf->nenv_allow, 0);
	assert_null(wf->workspace);
	config_free(wf);
}

/* defaults: applies to every agent, and each agent may override it. */
static void
test_defaults_applied(void **state)
{
	struct workflow	*wf = load(
	    "defaults:\n"
	    "  instances: 2\n"
	    "  timeout: 1m\n"
	    "  role: helper\n"
	    "  heartbeat: 3s\n"
	    "  restart: {policy: permanent, max: 9}\n"
	    "  cwd: /srv\n"
	    "  user: daemon\n"
	    "  adapter: ndjson\n"
	    "  budget: {tokens: 50}\n"
	    "agents:\n"
	    "  a:\n"
	    "    cmd: [cat]\n"
	    "  b:\n"
	    "    cmd: [cat]\n"
	    "    instances: 1\n"
	    "    timeout: 5s\n"
	    "    role: boss\n"
	    "    heartbeat: off\n"
	    "    restart: temporary\n"
	    "    cwd: /var\n");
	struct agent_conf	*a = &wf->agents[0], *b = &wf->agents[1];

	assert_int_equal(a->instances, 2);
	assert_true(a->timeout == 60);
	assert_string_equal(a->role, "helper");
	assert_true(a->hb_interval == 3);
	assert_int_equal(a->restart, RESTART_PERMANENT);
	assert_int_equal(a->restart_max, 9);
	assert_string_equal(a->cwd, "/srv");
	assert_string_equal(a->user, "daemon");
	assert_string_equal(a->adapter, "ndjson");
	assert_true(a->budget_tokens == 50);
	assert_int_equal(b->instances, 1);
	assert_true(b->timeout == 5);
	assert_string_equal(b->role, "boss");
	assert_true(b->hb_interval == 0);
	assert_int_equal(b->restart, RESTART_TEMPORARY);
	assert_int_equal(b->restart_max, 9);
	assert_string_equal(b->cwd, "/var");
	assert_string_equal(b->user, "daemon");
	config_free(wf);
}

/* Return 0 when the env: and limits: of agent b are well formed. */
static int
own_env_and_limits_ok(void)
{
	struct config_error	 err;
	struct workflow		*wf;
	struct agent_conf	*a, *b;
	const char		*text =
	    "defaults:\n"
	    "  env: {SHARED: s, OTHER: o}\n"
	    "  limits: {nofile: 256, nproc: 32}\n"
	    "agents:\n"
	    "  a:\n"
	    "    cmd: [cat]\n"
	    "  b:\n"
	    "    cmd: [cat]\n"
	    "    env: {OWN: x}\n"
	    "    limits: {core: 0}\n";
	size_t			 i;
	int			 ok = 1;

	wf = config_load_string(text, strlen(text), "test.yaml", &err);
	if (wf == NULL)
		return 1;
	a = &wf->agents[0];
	b = &wf->agents[1];
	/* The defaults alone. */
	if (a->nenv != 2 || env_get(a, "SHARED") == NULL ||
	    env_get(a, "OTHER") == NULL || a->nlimits != 2 ||
	    limit_get(a, RLIMIT_NOFILE) != 256 || limit_get(a, RLIMIT_NPROC) != 32)
		ok = 0;
	/* Every variable has a name, and the agent's own one is there. */
	for (i = 0; i < b->nenv; i++)
		if (b->env[i].key == NULL || b->env[i].value == NULL)
			ok = 0;
	if (env_get(b, "OWN") == NULL || strcmp(env_get(b, "OWN"), "x") != 0)
		ok = 0;
	/* No limit appears that nobody wrote (a CPU limit of 0 kills). */
	if (limit_get(b, RLIMIT_CORE) != 0)
		ok = 0;
	for (i = 0; i < b->nlimits; i++)
		if (b->limits[i].resource != RLIMIT_CORE &&
		    b->limits[i].resource != RLIMIT_NOFILE &&
		    b->limits[i].resource != RLIMIT_NPROC)
			ok = 0;
	config_free(wf);
	return ok ? 0 : 2;
}

/*
 * An agent's own env: and limits: on top of defaults: give well-formed
 * settings.  Runs in a child process: a loader that writes out of bounds
 * must not take the rest of the suite down with it.
 */
static void
test_defaults_env_and_limits_with_own(void **state)
{
	pid_t	pid;
	int	status;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(own_env_and_limits_ok());
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		fail_msg("loading defaults env/limits plus the agent's own "
		    "crashed (signal %d)", WTERMSIG(status));
	if (WEXITSTATUS(status) != 0)
		fail_msg("defaults env/limits plus the agent's own load wrongly "
		    "(status %d): unnamed variables or unwritten limits",
		    WEXITSTATUS(status));
}

/* An adapter on top of a default adapter replaces it cleanly. */
static void
test_defaults_adapter_overridden(void **state)
{
	struct workflow	*wf = load(
	    "defaults:\n"
	    "  adapter: {type: exec, stdin: \"{{task}}\"}\n"
	    "agents:\n"
	    "  a:\n"
	    "    cmd: [cat]\n"
	    "  b:\n"
	    "    cmd: [cat]\n"
	    "    adapter: {type: exec, stdin: \"{{content.text}}\"}\n"
	    "  c:\n"
	    "    cmd: [cat]\n"
	    "    adapter: ndjson\n");

	assert_string_equal(wf->agents[0].adapter, "exec");
	assert_string_equal(json_string_value(json_object_get(
	    wf->agents[0].adapter_conf, "stdin")), "{{task}}");
	assert_string_equal(wf->agents[1].adapter, "exec");
	assert_string_equal(json_string_value(json_object_get(
	    wf->agents[1].adapter_conf, "stdin")), "{{content.text}}");
	assert_string_equal(wf->agents[2].adapter, "ndjson");
	assert_null(json_object_get(wf->agents[2].adapter_conf, "stdin"));
	config_free(wf);
}

/* The JSON spelling of a workflow means the same as the YAML one. */
static void
test_json_form(void **state)
{
	const char	*yaml =
	    "name: j\n"
	    "agents:\n"
	    "  echo:\n"
	    "    cmd: [cat, -u]\n"
	    "    heartbeat: {interval: 2s, misses: 4}\n"
	    "    restart: {policy: permanent, max: 2}\n"
	    "    env: {K: v}\n"
	    "    max_line: 4096\n"
	    "routes:\n"
	    "  plan: echo\n"
	    "  \"*\": [echo]\n"
	    "reflection: {below: 0.25}\n"
	    "limits: {deadline: 90s, max_steps: 7}\n";
	const char	*json =
	    "{\"name\": \"j\",\n"
	    " \"agents\": {\"echo\": {\"cmd\": [\"cat\", \"-u\"],\n"
	    "   \"heartbeat\": {\"interval\": \"2s\", \"misses\": 4},\n"
	    "   \"restart\": {\"policy\": \"permanent\", \"max\": 2},\n"
	    "   \"env\": {\"K\": \"v\"}, \"max_line\": 4096}},\n"
	    " \"routes\": {\"plan\": \"echo\", \"*\": [\"echo\"]},\n"
	    " \"reflection\": {\"below\": 0.25},\n"
	    " \"limits\": {\"deadline\": \"90s\", \"max_steps\": 7}}\n";
	struct workflow	*a = load(yaml), *b = load(json);
	char		*pa = print_workflow(a), *pb = print_workflow(b);

	assert_string_equal(pa, pb);
	assert_int_equal(b->agents[0].hb_misses, 4);
	assert_int_equal(b->agents[0].max_line, 4096);
	assert_true(b->refl_below == 0.25);
	assert_true(b->deadline == 90);
	free(pa);
	free(pb);
	config_free(a);
	config_free(b);
}

/* Heartbeat forms: off (or false, none, 0), a duration, a number, a map. */
static void
test_heartbeat_forms(void **state)
{
	static const struct {
		const char	*value;
		double		 interval;
		unsigned int	 misses;
	} cases[] = {
		{ "off", 0, 3 }, { "false", 0, 3 }, { "none", 0, 3 },
		{ "0", 0, 3 }, { "{interval: off, misses: 2}", 0, 2 },
		{ "2s", 2, 3 },
		{ "2", 2, 3 }, { "250ms", 0.25, 3 }, { "10ms", 0.01, 3 },
		{ "{interval: 1m}", 60, 3 }, { "{misses: 7}", 5, 7 },
		{ "{interval: 3s, misses: 1}", 3, 1 },
	};
	struct workflow	*wf;
	char		 text[256];
	size_t		 i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(text, sizeof text, "agents:\n  a:\n    cmd: [cat]\n"
		    "    heartbeat: %s\n", cases[i].value);
		wf = load(text);
		if (wf->agents[0].hb_interval != cases[i].interval ||
		    wf->agents[0].hb_misses != cases[i].misses)
			fail_msg("heartbeat: %s gives %g s, %u misses",
			    cases[i].value, wf->agents[0].hb_interval,
			    wf->agents[0].hb_misses);
		config_free(wf);
	}
}

/* Restart forms: a policy name, or a map with or without one. */
static void
test_restart_forms(void **state)
{
	static const struct {
		const char		*value;
		enum restart_policy	 policy;
		int			 set;
		unsigned int		 max;
		double			 backoff;
		double			 backoff_max;
	} cases[] = {
		{ "permanent", RESTART_PERMANENT, 1, 5, 1, 30 },
		{ "transient", RESTART_TRANSIENT, 1, 5, 1, 30 },
		{ "temporary", RESTART_TEMPORARY, 1, 5, 1, 30 },
		{ "{policy: temporary}", RESTART_TEMPORARY, 1, 5, 1, 30 },
		{ "{max: 0}", RESTART_TRANSIENT, 0, 0, 1, 30 },
		{ "{backoff: 2s, backoff_max: 8s}", RESTART_TRANSIENT, 0, 5, 2,
		    8 },
		/* At least 1 s between restarts, and max never below min. */
		{ "{backoff: 100ms}", RESTART_TRANSIENT, 0, 5, 1, 30 },
		{ "{backoff: 40s}", RESTART_TRANSIENT, 0, 5, 40, 40 },
	};
	struct workflow	*wf;
	char		 text[256];
	size_t		 i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(text, sizeof text, "agents:\n  a:\n    cmd: [cat]\n"
		    "    restart: %s\n", cases[i].value);
		wf = load(text);
		if (wf->agents[0].restart != cases[i].policy ||
		    wf->agents[0].restart_set != cases[i].set ||
		    wf->agents[0].restart_max != cases[i].max ||
		    wf->agents[0].backoff_min != cases[i].backoff ||
		    wf->agents[0].backoff_max != cases[i].backoff_max)
			fail_msg("restart: %s loads wrongly", cases[i].value);
		config_free(wf);
	}
	assert_string_equal(config_restart_name(RESTART_PERMANENT),
	    "permanent");
	assert_string_equal(config_restart_name(RESTART_TRANSIENT),
	    "transient");
	assert_string_equal(config_restart_name(RESTART_TEMPORARY),
	    "temporary");
	assert_string_equal(config_strategy_name(STRATEGY_ONE_FOR_ONE),
	    "one_for_one");
	assert_string_equal(config_strategy_name(STRATEGY_ONE_FOR_ALL),
	    "one_for_all");
	assert_string_equal(config_strategy_name(STRATEGY_REST_FOR_ONE),
	    "rest_for_one");
}

/* cmd: a single word is a list of one; a list is taken as it is. */
static void
test_cmd_forms(void **state)
{
	static const struct {
		const char	*value;
		size_t		 argc;
		const char	*argv0;
		const char	*argv1;
	} cases[] = {
		{ "cat", 1, "cat", NULL },
		{ "./agent.sh", 1, "./agent.sh", NULL },
		{ "\"/usr/bin/env\"", 1, "/usr/bin/env", NULL },
		{ "[cat]", 1, "cat", NULL },
		{ "[python3, \"agent one.py\"]", 2, "python3", "agent one.py" },
	};
	struct workflow	*wf;
	char		 text[256];
	size_t		 i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(text, sizeof text, "agents:\n  a:\n    cmd: %s\n",
		    cases[i].value);
		wf = load(text);
		assert_int_equal(wf->agents[0].argc, cases[i].argc);
		assert_string_equal(wf->agents[0].argv[0], cases[i].argv0);
		if (cases[i].argv1 != NULL)
			assert_string_equal(wf->agents[0].argv[1],
			    cases[i].argv1);
		assert_null(wf->agents[0].argv[cases[i].argc]);
		config_free(wf);
	}
}

/* Return the message a workflow is refused with (static storage). */
static const char *
refusal(const char *text)
{
	static struct config_error	 err;
	struct workflow			*wf;

	wf = config_load_string(text, strlen(text), "test.yaml", &err);
	if (wf != NULL) {
		config_free(wf);
		fail_msg("accepted:\n%s", text);
	}
	return err.msg;
}

/*
 * An unknown key names the key one or two letters away, else the few keys
 * a small mapping has; never a key that is not allowed there.
 */
static void
test_unknown_key_suggestions(void **state)
{
	assert_string_equal(refusal("agents:\n  a:\n    cmd: [cat]\n"
	    "    timout: 5s\n"), "agents.a: unknown key 'timout' "
	    "(did you mean 'timeout'?)");
	assert_string_equal(refusal("agents:\n  a:\n    cmd: [cat]\n"
	    "    heartbeat: {misess: 2}\n"), "agents.a.heartbeat: unknown key "
	    "'misess' (did you mean 'misses'?)");
	assert_string_equal(refusal("agents:\n  a: {cmd: [cat]}\nretry: "
	    "{maxdelay: 1s}\n"), "retry: unknown key 'maxdelay' (did you mean "
	    "'max_delay'?)");
	assert_string_equal(refusal("agents:\n  a: {cmd: [cat]}\nrotues: {}\n"),
	    "the workflow: unknown key 'rotues' (did you mean 'routes'?)");
	assert_string_equal(refusal("agents:\n  a: {cmd: [cat]}\nlimits: "
	    "{max_stepz: 1}\n"), "limits: unknown key 'max_stepz' (did you "
	    "mean 'max_steps'?)");
	/* Nothing close: a small mapping lists its keys, a large one not. */
	assert_string_equal(refusal("agents:\n  a:\n    cmd: [cat]\n"
	    "    stop: {after: 1s}\n"), "agents.a.stop: unknown key 'after' "
	    "(one of grace, timeout)");
	assert_string_equal(refusal("agents:\n  a:\n    cmd: [cat]\n"
	    "    colour: red\n"), "agents.a: unknown key 'colour'");
	/* An agent's key outside an agent says where it belongs. */
	assert_string_equal(refusal("agents:\n  a: {cmd: [cat]}\n"
	    "timeout: 5s\n"), "the workflow: unknown key 'timeout' here: it is "
	    "a key of an agent's settings (in an entry of agents:, or in "
	    "defaults:)");
	assert_string_equal(refusal("agents:\n  a: {cmd: [cat]}\n"
	    "limits: {nofile: 5}\n"), "limits: unknown key 'nofile' here: it "
	    "is a key of an agent's limits: (in an entry of agents:, or in "
	    "defaults:)");
	/* cmd cannot be in defaults:, so it is never what was meant there. */
	assert_null(strstr(refusal("defaults:\n  cmdd: [cat]\nagents:\n"
	    "  a: {cmd: [cat]}\n"), "'cmd'"));
}

/*
 * depends_on: names other entries, which it gets the indexes of; a name
 * that is no entry, the agent itself, or a circle is refused.
 */
static void
test_depends_on(void **state)
{
	struct workflow	*wf;

	(void)state;
	wf = load("agents:\n  a: {cmd: [cat], depends_on: [c, b]}\n"
	    "  b: {cmd: [cat]}\n  c: {cmd: [cat], depends_on: [b]}\n");
	assert_int_equal(wf->agents[0].ndepends_on, 2);
	assert_int_equal(wf->agents[0].deps[0], 2);
	assert_int_equal(wf->agents[0].deps[1], 1);
	assert_int_equal(wf->agents[1].ndepends_on, 0);
	assert_int_equal(wf->agents[2].deps[0], 1);
	config_free(wf);
	assert_string_equal(refusal("agents:\n  a: {cmd: [cat], "
	    "depends_on: [db]}\n"), "agents.a.depends_on: no agent named "
	    "'db' in agents:");
	assert_string_equal(refusal("agents:\n  a: {cmd: [cat], "
	    "depends_on: [a]}\n"), "agents.a.depends_on: 'a' is the agent "
	    "itself");
	assert_string_equal(refusal("agents:\n  a: {cmd: [cat], "
	    "depends_on: [b]}\n  b: {cmd: [cat], depends_on: [c]}\n"
	    "  c: {cmd: [cat], depends_on: [a]}\n"), "agents.a.depends_on: "
	    "the agents depend on each other in a circle");
}

/* A scratch directory for config_check's programs. */
static char	check_dir[] = "/tmp/corral-unit-check-XXXXXX";

/* Make a file in check_dir with a mode. */
static void
check_file(const char *name, mode_t mode)
{
	char	path[256];
	FILE	*f;

	snprintf(path, sizeof path, "%s/%s", check_dir, name);
	assert_non_null(f = fopen(path, "w"));
	fputs("#!/bin/sh\nexit 0\n", f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

/*
 * Load text as a workflow file in check_dir and check it: the number of
 * errors, and what was printed into out (to free).
 */
static int
check_text(const char *text, int flags, char **out)
{
	struct config_error	 err;
	struct workflow		*wf;
	char			 name[256];
	size_t			 len = 0;
	FILE			*f;
	int			 errors;

	snprintf(name, sizeof name, "%s/wf.yaml", check_dir);
	wf = config_load_string(text, strlen(text), name, &err);
	if (wf == NULL)
		fail_msg("refused at %d:%d: %s\n%s", err.line, err.column,
		    err.msg, text);
	assert_non_null(f = open_memstream(out, &len));
	errors = config_check(wf, flags, f);
	fclose(f);
	config_free(wf);
	return errors;
}

/* Expect config_check to print exactly want, after the directory. */
static void
check_expect(const char *text, int flags, int errors, const char *want)
{
	char	*out, full[1024];

	assert_int_equal(check_text(text, flags, &out), errors);
	if (want[0] == '\0')
		full[0] = '\0';
	else
		snprintf(full, sizeof full, "corral: %s/wf.yaml:%s\n",
		    check_dir, want);
	assert_string_equal(out, full);
	free(out);
}

/*
 * config_check, which check, run and serve share: programs that cannot be
 * found or run are errors; an exec adapter's missing program and a start
 * intent no route serves are warnings.
 */
static void
test_check(void **state)
{
	char	text[512];

	assert_non_null(mkdtemp(check_dir));
	check_file("tool", 0755);
	check_file("text", 0644);
	check_expect("agents:\n  a: {cmd: [./tool]}\nroutes: {\"*\": a}\n",
	    CONFIG_CHECK_START, 0, "");
	check_expect("agents:\n  a: {cmd: [./nope]}\nroutes: {\"*\": a}\n",
	    CONFIG_CHECK_START, 1,
	    "2:3: agents.a.cmd: ./nope: No such file or directory");
	check_expect("agents:\n  a: {cmd: [./text]}\nroutes: {\"*\": a}\n",
	    0, 1, "2:3: agents.a.cmd: ./text: Permission denied");
	check_expect("agents:\n  a: {cmd: [/tmp]}\nroutes: {\"*\": a}\n", 0, 1,
	    "2:3: agents.a.cmd: /tmp: not a regular file");
	/* A bare name is looked for on the agent's own PATH. */
	snprintf(text, sizeof text, "agents:\n  a:\n    cmd: tool\n"
	    "    env: {PATH: %s}\nroutes: {\"*\": a}\n", check_dir);
	check_expect(text, 0, 0, "");
	check_expect("agents:\n  a: {cmd: corral-unit-no-such-tool}\n"
	    "routes: {\"*\": a}\n", 0, 1, "2:3: agents.a.cmd: "
	    "corral-unit-no-such-tool: No such file or directory");
	/* exec: a warning, and nothing for a template. */
	check_expect("agents:\n  a: {adapter: {type: exec, argv: [./nope]}}\n"
	    "routes: {\"*\": a}\n", 0, 0, "2:3: warning: "
	    "agents.a.adapter.argv: ./nope: No such file or directory");
	check_expect("agents:\n  a: {adapter: {type: exec, argv: "
	    "[\"{{task}}\"]}}\nroutes: {\"*\": a}\n", 0, 0, "");
	/* start: at the value, at routes:, or at the top of the file. */
	check_expect("start: analyze\nagents:\n  a: {cmd: [./tool]}\n"
	    "routes: {plan: a}\n", CONFIG_CHECK_START, 0, "1:8: warning: "
	    "start: intent 'analyze' has no route and routes: has no \"*\" "
	    "fallback, so corral run would fail with no_route");
	check_expect("agents:\n  a: {cmd: [./tool]}\nroutes: {plan: a}\n", 0, 0,
	    "");
	check_expect("agents:\n  a: {cmd: [./tool]}\nroutes: {execute: a}\n",
	    CONFIG_CHECK_START, 0, "3:1: warning: start: intent 'plan' has no "
	    "route and routes: has no \"*\" fallback, so corral run would fail "
	    "with no_route");
	check_expect("# top\nagents:\n  a: {cmd: [./tool]}\n",
	    CONFIG_CHECK_START, 0, "2:1: warning: start: intent 'plan' has no "
	    "route and routes: has no \"*\" fallback, so corral run would fail "
	    "with no_route");
	check_expect("start: analyze\nagents:\n  a: {cmd: [./tool]}\n"
	    "routes: {analyze: a}\n", CONFIG_CHECK_START, 0, "");
	snprintf(text, sizeof text, "rm -rf '%s'", check_dir);
	assert_int_equal(system(text), 0);
}

/* The scope of a key: 0 the top, 1 an agent's, 2 a step's. */
static int
key_scope(const struct config_keyinfo *ki)
{
	return ki->agent ? 1 : ki->step ? 2 : 0;
}

/* Find a key of the table by its scope and name; -1 when there is none. */
static ssize_t
key_index(int scope, const char *name)
{
	struct config_keyinfo	ki;
	size_t			i;

	for (i = 0; config_keyinfo(i, &ki) == 0; i++)
		if (key_scope(&ki) == scope && strcmp(ki.name, name) == 0)
			return (ssize_t)i;
	return -1;
}

/*
 * The key table is whole: names unique, each inside a mapping that is in
 * the table, defaults only for values, and a line of doc for every key.
 */
static void
test_key_table(void **state)
{
	struct config_keyinfo	ki, parent;
	char			name[128], *dot;
	size_t			i;

	for (i = 0; config_keyinfo(i, &ki) == 0; i++) {
		if (key_index(key_scope(&ki), ki.name) != (ssize_t)i)
			fail_msg("%s is declared twice", ki.name);
		if (ki.doc == NULL || ki.doc[0] == '\0')
			fail_msg("%s has no doc", ki.name);
		if (ki.mapping && ki.dflt != NULL)
			fail_msg("%s: a mapping with a default", ki.name);
		if (ki.type[0] == '\0')
			fail_msg("%s has no type", ki.name);
		strlcpy(name, ki.name, sizeof name);
		if ((dot = strrchr(name, '.')) == NULL)
			continue;
		*dot = '\0';
		if (key_index(key_scope(&ki), name) < 0)
			fail_msg("%s is in %s, which is no key", ki.name, name);
		config_keyinfo((size_t)key_index(key_scope(&ki), name), &parent);
		if (!parent.mapping)
			fail_msg("%s is in %s, which is no mapping", ki.name,
			    name);
	}
	assert_true(i > 50);
	assert_int_equal(config_keyinfo(i, &ki), -1);
}

/* Trim the blanks around a table cell, in place. */
static char *
doc_trim(char *s)
{
	char	*e;

	while (*s == ' ')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\n'))
		*--e = '\0';
	return s;
}

/* Split a table row "| a | b |" into at most max trimmed cells. */
static size_t
doc_cells(char *line, char **cells, size_t max)
{
	size_t	n = 0;
	char	*p = line + 1, *bar;

	while (n < max && (bar = strchr(p, '|')) != NULL) {
		*bar = '\0';
		cells[n++] = doc_trim(p);
		p = bar + 1;
	}
	return n;
}

/* Where the key tables under a docs/workflow.md heading belong. */
struct doc_place {
	int	agent;		/* key_scope's scope */
	char	prefix[64];	/* "", "restart.", "limits.budget." */
};

/* Follow a heading: "## agents", "## limits", "### restart", ... */
static void
doc_heading(const char *line, struct doc_place *section,
    struct doc_place *here)
{
	char	word[64];

	if (sscanf(line + strspn(line, "#"), " %63[A-Za-z_-]", word) != 1)
		word[0] = '\0';
	if (strncmp(line, "## ", 3) == 0) {
		section->agent = strcmp(word, "agents") == 0 ? 1 :
		    strcmp(word, "steps") == 0 ? 2 : 0;
		if (section->agent || strcmp(line, "## Top-level keys\n") == 0)
			section->prefix[0] = '\0';
		else
			snprintf(section->prefix, sizeof section->prefix, "%s.",
			    word);
		*here = *section;
	} else {
		here->agent = section->agent;
		snprintf(here->prefix, sizeof here->prefix, "%s%s.",
		    section->prefix, word);
	}
}

/* Check one row of a key table against the key table; count problems. */
static int
doc_row(const struct doc_place *here, char **cells, size_t n, int ctype,
    int cdefault, unsigned char *seen)
{
	struct config_keyinfo	ki;
	char			name[128], want[160];
	ssize_t			i;
	size_t			len = strlen(cells[0]);

	if (len < 3 || cells[0][0] != '`' || cells[0][len - 1] != '`') {
		print_message("docs: a key table row without a `key`: %s\n",
		    cells[0]);
		return 1;
	}
	snprintf(name, sizeof name, "%s%.*s", here->prefix, (int)len - 2,
	    cells[0] + 1);
	if ((i = key_index(here->agent, name)) < 0) {
		print_message("docs: %s%s is no key of the workflow file\n",
		    here->agent == 1 ? "agents.*." : here->agent == 2 ?
		    "steps[*]." : "", name);
		return 1;
	}
	seen[i] = 1;
	config_keyinfo((size_t)i, &ki);
	if (ctype >= 0 && (size_t)ctype < n &&
	    strcmp(cells[ctype], ki.type) != 0) {
		print_message("docs: %s: type '%s', the table says '%s'\n",
		    name, cells[ctype], ki.type);
		return 1;
	}
	if (cdefault < 0 || (size_t)cdefault >= n || ki.mapping)
		return 0;
	if (ki.dflt != NULL) {
		snprintf(want, sizeof want, "`%s`", ki.dflt);
		if (strncmp(cells[cdefault], want, strlen(want)) == 0)
			return 0;
	} else if (cells[cdefault][0] != '`')
		return 0;
	print_message("docs: %s: default '%s', the table says %s\n", name,
	    cells[cdefault], ki.dflt != NULL ? want : "none");
	return 1;
}

/* Open docs/workflow.md, or skip the test when run outside ctest. */
static FILE *
doc_open(void)
{
	const char	*data = getenv("CORRAL_TEST_DATA");
	char		 path[1024];
	FILE		*f;

	if (data == NULL)
		skip();
	snprintf(path, sizeof path, "%s/../docs/workflow.md", data);
	if ((f = fopen(path, "r")) == NULL)
		fail_msg("%s: %s", path, strerror(errno));
	return f;
}

/*
 * Every complete workflow docs/workflow.md shows (a yaml or json block with
 * agents: at its top) loads.
 */
static void
test_docs_examples_load(void **state)
{
	struct config_error	 err;
	struct workflow		*wf;
	char			 line[2048], *text = NULL;
	size_t			 len = 0, n = 0;
	FILE			*f = doc_open(), *block = NULL;
	int			 bad = 0;

	while (fgets(line, sizeof line, f) != NULL) {
		if (block == NULL) {
			if (strcmp(line, "```yaml\n") == 0 ||
			    strcmp(line, "```json\n") == 0)
				block = open_memstream(&text, &len);
			continue;
		}
		if (strcmp(line, "```\n") != 0) {
			fputs(line, block);
			continue;
		}
		fclose(block);
		block = NULL;
		if (strncmp(text, "agents:", 7) == 0 ||
		    strstr(text, "\nagents:") != NULL ||
		    strncmp(text, "{\"agents\"", 10) == 0) {
			n++;
			wf = config_load_string(text, len, "doc.yaml", &err);
			if (wf == NULL) {
				print_message("docs: an example does not load: "
				    "%d:%d: %s\n%s", err.line, err.column,
				    err.msg, text);
				bad++;
			}
			config_free(wf);
		}
		free(text);
		text = NULL;
	}
	fclose(f);
	assert_int_equal(bad, 0);
	assert_true(n >= 5);
}

/*
 * docs/workflow.md's key tables and the key table agree: every key is in
 * the docs, under its mapping's heading, with the table's type and
 * default, and the docs list no key the table lacks.
 */
static void
test_docs_match_table(void **state)
{
	struct config_keyinfo	 ki;
	struct doc_place	 section = { 0, "" }, here = { 0, "" };
	unsigned char		 seen[512] = { 0 };
	char			 line[2048], *cells[8];
	size_t			 n, i;
	int			 table = 0, ctype = -1, cdefault = -1;
	int			 bad = 0;
	FILE			*f = doc_open();

	while (fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, "## ", 3) == 0 ||
		    strncmp(line, "### ", 4) == 0) {
			doc_heading(line, &section, &here);
			continue;
		}
		if (line[0] != '|') {
			table = 0;
			continue;
		}
		n = doc_cells(line, cells, 8);
		if (table == 0) {
			/* A header row: is it a table of keys? */
			table = n > 0 && strcmp(cells[0], "key") == 0 ? 1 : -1;
			ctype = cdefault = -1;
			for (i = 0; i < n; i++) {
				if (strcmp(cells[i], "type") == 0)
					ctype = (int)i;
				if (strcmp(cells[i], "default") == 0)
					cdefault = (int)i;
			}
		} else if (table == 1 && strncmp(cells[0], "---", 3) != 0)
			bad += doc_row(&here, cells, n, ctype, cdefault, seen);
	}
	fclose(f);
	for (i = 0; config_keyinfo(i, &ki) == 0; i++) {
		if (!seen[i]) {
			print_message("docs: %s%s (%s) is not in workflow.md's "
			    "key tables\n", ki.agent ? "agents.*." : ki.step ?
			    "steps[*]." : "",
			    ki.name, ki.type);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

/*
 * confine: on, off and a mapping, merged with defaults: by member; read:
 * and connect: count from being given; ports are checked; the print
 * loads back to the same print.
 */
static void
test_confine_forms(void **state)
{
	struct config_error	 err;
	struct workflow		*wf, *again;
	char			*p1, *p2;
	const char		*text =
	    "defaults:\n"
	    "  confine: {write: [/srv], required: true}\n"
	    "agents:\n"
	    "  a:\n    cmd: [cat]\n"
	    "  b:\n    cmd: [cat]\n    confine: off\n"
	    "  c:\n    cmd: [cat]\n    confine: {read: [], connect: [443, \"80\"]}\n"
	    "  d:\n    cmd: [cat]\n    confine: on\n"
	    "    adapter: {type: codex}\n"
	    "  e:\n    cmd: [cat]\n    confine: {write: [x, $HOME/y]}\n";
	const struct confine	*c;

	wf = load(text);
	c = &wf->agents[0].confine;
	assert_int_equal(c->flags, CONFINE_ON);
	assert_int_equal(c->required, 1);
	assert_int_equal(c->nwrite, 1);
	assert_string_equal(c->write[0], "/srv");
	assert_int_equal(wf->agents[1].confine.flags, 0);
	c = &wf->agents[2].confine;
	assert_int_equal(c->flags, CONFINE_ON | CONFINE_READ | CONFINE_CONNECT);
	assert_int_equal(c->nread, 0);
	assert_int_equal(c->nconnect, 2);
	assert_int_equal(c->nwrite, 1);
	assert_int_equal(c->required, 1);
	c = &wf->agents[3].confine;
	assert_int_equal(c->flags, CONFINE_ON);
	assert_string_equal(c->home, "$CODEX_HOME");
	c = &wf->agents[4].confine;
	assert_int_equal(c->nwrite, 2);
	assert_string_equal(c->write[1], "$HOME/y");

	p1 = print_workflow(wf);
	assert_non_null(strstr(p1, "confine: {write: [/srv], read: [], "
	    "connect: ["));
	again = config_load_string(p1, strlen(p1), "print.yaml", &err);
	if (again == NULL)
		fail_msg("the print does not load: %s\n%s", err.msg, p1);
	p2 = print_workflow(again);
	assert_string_equal(p1, p2);
	free(p1);
	free(p2);
	config_free(again);
	config_free(wf);

	text = "agents:\n  a:\n    cmd: [cat]\n    confine: {connect: [0]}\n";
	wf = config_load_string(text, strlen(text), "bad.yaml", &err);
	assert_null(wf);
	assert_non_null(strstr(err.msg, "is not a TCP port"));
	text = "agents:\n  a:\n    cmd: [cat]\n    confine: maybe\n";
	wf = config_load_string(text, strlen(text), "bad.yaml", &err);
	assert_null(wf);
	assert_non_null(strstr(err.msg, "on, off or a mapping"));
}

/* max_line: sizes from 64 bytes to 256MiB, in any unit. */
static void
test_max_line_sizes(void **state)
{
	static const struct {
		const char	*value;
		size_t		 bytes;
	} cases[] = {
		{ "64", 64 }, { "4096", 4096 }, { "64KiB", 65536 },
		{ "1M", 1048576 }, { "1MiB", 1048576 }, { "256MiB", 268435456 },
	};
	struct workflow	*wf;
	char		 text[256];
	size_t		 i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(text, sizeof text, "agents:\n  a:\n    cmd: [cat]\n"
		    "    max_line: %s\n", cases[i].value);
		wf = load(text);
		assert_int_equal(wf->agents[0].max_line, cases[i].bytes);
		config_free(wf);
	}
}

/* Comments, quoting styles and flow/block forms load the same values. */
static void
test_quoting_and_comments(void **state)
{
	struct workflow	*wf = load(
	    "# leading comment\n"
	    "name: 'it''s \"quoted\"'   # trailing comment\n"
	    "agents:\n"
	    "  a:   # the agent\n"
	    "    cmd:\n"
	    "      - \"cat\"\n"
	    "      - 'with space'\n"
	    "      - \"tab\\there\"\n"
	    "      - plain#hash\n"
	    "    role: >-\n"
	    "      folded\n"
	    "      text\n"
	    "    description: |\n"
	    "      literal\n"
	    "      block\n"
	    "    env:\n"
	    "      NUM: 42\n"
	    "      YES: \"yes\"\n"
	    "routes:\n"
	    "  'plan': a\n");
	struct agent_conf	*a = &wf->agents[0];

	assert_string_equal(wf->name, "it's \"quoted\"");
	assert_int_equal(a->argc, 4);
	assert_string_equal(a->argv[0], "cat");
	assert_string_equal(a->argv[1], "with space");
	assert_string_equal(a->argv[2], "tab\there");
	assert_string_equal(a->argv[3], "plain#hash");
	assert_string_equal(a->role, "folded text");
	assert_string_equal(a->description, "literal\nblock\n");
	assert_string_equal(env_get(a, "NUM"), "42");
	assert_string_equal(env_get(a, "YES"), "yes");
	assert_int_equal(wf->nroutes, 1);
	config_free(wf);
}

/* What `corral check` prints loads back into the same workflow. */
static void
test_print_is_reloadable(void **state)
{
	struct config_error	 err;
	struct workflow		*wf, *again;
	char			*first, *second;
	size_t			 i;
	int			 bad = 0;
	const char		*const texts[] = {
		full_yaml,
		"name: small\nagents:\n  a: {cmd: [cat]}\nlimits: {deadline: "
		    "10m}\n",
	};

	for (i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		wf = load(texts[i]);
		/* The exec adapter prints "cmd: []"; give lazy a command. */
		if (texts[i] == full_yaml) {
			free(wf->agents[3].argv);
			wf->agents[3].argv = calloc(2, sizeof *wf->agents[3].argv);
			wf->agents[3].argv[0] = strdup("cat");
			wf->agents[3].argc = 1;
		}
		first = print_workflow(wf);
		config_free(wf);
		again = config_load_string(first, strlen(first), "test.yaml",
		    &err);
		if (again == NULL) {
			print_message("printed workflow %zu does not load: "
			    "%d:%d: %s\n%s", i, err.line, err.column, err.msg,
			    first);
			bad++;
			free(first);
			continue;
		}
		second = print_workflow(again);
		if (strcmp(first, second) != 0) {
			print_message("printed workflow %zu changes on reload:"
			    "\n%s\n---\n%s", i, first, second);
			bad++;
		}
		free(first);
		free(second);
		config_free(again);
	}
	assert_int_equal(bad, 0);
}

/*
 * A refused workflow: the error's line, column (-1: any) and part of its
 * message.  Columns point at the start of the token as written: the
 * quote of a quoted scalar, the '*' of an alias.
 */
struct bad_conf {
	const char	*text;
	int		 line;
	int		 column;
	const char	*msg;
};

static const struct bad_conf bad_confs[] = {
	{ "agents:\n  a:\n    cmd: [cat]\ncolour: red\n", 4, 1,
	    "the workflow: unknown key 'colour'" },
	{ "agents:\n  a:\n    cmd: [cat]\n    instance: 2\n", 4, 5,
	    "agents.a: unknown key 'instance'" },
	{ "agents:\n  a:\n    cmd: [cat]\n    restart: {policy: permanent, "
	    "tries: 3}\n", 4, 34, "agents.a.restart: unknown key 'tries'" },
	{ "agents:\n  a:\n    cmd: [cat]\n    cmd: [sh]\n", 4, 5,
	    "agents.a: duplicate key 'cmd'" },
	{ "agents:\n  a: {cmd: [cat]}\n  a: {cmd: [sh]}\n", 3, 3,
	    "agents: duplicate key 'a'" },
	{ "name: x\nagents:\n  a: {cmd: [cat]}\nname: y\n", 4, 1,
	    "duplicate key 'name'" },
	/* Wrong types. */
	{ "agents:\n  a:\n    cmd: [cat]\n    instances: many\n", 4, 16,
	    "agents.a.instances: expected a whole number" },
	{ "agents:\n  a:\n    cmd: [cat]\n    instances: 1.5\n", 4, 16,
	    "agents.a.instances: expected a whole number" },
	{ "agents:\n  a:\n    cmd: [cat]\n    env: [A]\n", 4, 10,
	    "agents.a.env: expected a mapping" },
	{ "agents:\n  a:\n    cmd: [cat]\n    env: {A: [1]}\n", 4, 14,
	    "agents.a.env.A: expected a string" },
	{ "name: {x: 1}\nagents:\n  a: {cmd: [cat]}\n", 1, 7,
	    "name: expected a string" },
	{ "agents:\n  a:\n    cmd: \"python3 agent.py\"\n", 3, 10,
	    "agents.a.cmd: a command with spaces must be a list of its words, "
	    "such as [python3, agent.py]" },
	{ "agents:\n  a:\n    cmd: \"sh -c 'exec cat'\"\n", 3, 10,
	    "such as [./agent, --flag]" },
	{ "agents:\n  a:\n    cmd: \"\"\n", 3, 10,
	    "agents.a.cmd: the command is empty" },
	{ "agents:\n  a:\n    cmd: [cat, [x]]\n", 3, 16,
	    "agents.a.cmd[1]: expected a string" },
	{ "agents:\n  a:\n    cmd: []\n", 3, 10,
	    "agents.a.cmd: the command is empty" },
	{ "agents:\n  a:\n    cmd: [cat]\n    autostart: maybe\n", 4, 16,
	    "agents.a.autostart: expected true or false" },
	{ "agents:\n  a:\n    cmd: [cat]\n    ready: soon\n", 4, 12,
	    "agents.a.ready: expected spawn or handshake" },
	{ "agents:\n  a:\n    cmd: [cat]\n    restart: always\n", 4, 14,
	    "agents.a.restart: expected permanent, transient or temporary" },
	{ "agents:\n  a:\n    cmd: [cat]\n    restart: {policy: always}\n", 4,
	    23, "agents.a.restart.policy: expected permanent, transient or "
	    "temporary" },
	{ "agents:\n  a:\n    cmd: [cat]\n    children: {strategy: all}\n", 4,
	    26, "agents.a.children.strategy: expected one_for_one" },
	{ "agents: [a, b]\n", 1, 9, "agents: expected a mapping" },
	{ "- a\n- b\n", 1, 1, "the workflow: expected a mapping" },
	{ "agents:\n  a: {cmd: [cat]}\nreflection: {below: \"0.5\"}\n", 3, 21,
	    "reflection.below: expected a number" },
	{ "agents:\n  a: {cmd: [cat]}\ninline_spawn: 1\n", 3, 15,
	    "inline_spawn: expected true or false" },
	/* Routes. */
	{ "agents:\n  a: {cmd: [cat]}\nroutes:\n  planning: a\n", 4, 3,
	    "routes: 'planning' is not an intent" },
	{ "agents:\n  a: {cmd: [cat]}\nroutes:\n  plan: [a, b]\n", 4, 13,
	    "routes.plan: no agent named 'b' in agents:" },
	{ "agents:\n  a: {cmd: [cat]}\nroutes:\n  plan: b\n", 4, 9,
	    "routes.plan: no agent named 'b' in agents:" },
	{ "agents:\n  a: {cmd: [cat]}\nroutes:\n  plan: []\n", 4, 9,
	    "routes.plan: names no agent" },
	{ "agents:\n  a: {cmd: [cat]}\nroutes:\n  plan: {a: 1}\n", 4, 9,
	    "routes.plan: expected a list of strings" },
	{ "agents:\n  a: {cmd: [cat]}\nstart: go\n", 3, 8,
	    "start: 'go' is not an intent" },
	/* Agents. */
	{ "agents:\n  a:\n    instances: 2\n", 3, 5, "agents.a: no cmd: given" },
	{ "agents:\n  a: {}\n", 2, 6, "agents.a: no cmd: given" },
	{ "name: x\n", 1, 1, "the workflow has no agents: key" },
	{ "agents: {}\n", 1, 9, "agents: names no agent" },
	{ "agents:\n  \"bad name\": {cmd: [cat]}\n", 2, 3,
	    "agents: 'bad name' is not a valid agent name" },
	{ "agents:\n  a.b: {cmd: [cat]}\n", 2, 3,
	    "agents: 'a.b' is not a valid agent name" },
	{ "agents:\n  a123456789a123456789a123456789a123456789a12345678: "
	    "{cmd: [cat]}\n", 2, 3, "is not a valid agent name" },
	{ "agents:\n  \"\": {cmd: [cat]}\n", 2, 3,
	    "is not a valid agent name" },
	{ "defaults:\n  cmd: [cat]\nagents:\n  a: {cmd: [cat]}\n", 2, 3,
	    "defaults: cmd cannot have a default" },
	{ "agents:\n  a:\n    cmd: [cat]\n    env: {\"A=B\": x}\n", 4, 11,
	    "agents.a.env: 'A=B' is not a valid variable name" },
	{ "agents:\n  a:\n    cmd: [cat]\n    limits: {memory: 1}\n", 4, 14,
	    "agents.a.limits: unknown key 'memory'" },
	{ "agents:\n  a:\n    cmd: [cat]\n    adapter: gpt\n", 4, 14,
	    "agents.a.adapter: no adapter 'gpt' (the adapters are ndjson, "
	    "exec" },
	{ "agents:\n  a:\n    cmd: [cat]\n    adapter: {model: x}\n", 4, 14,
	    "agents.a.adapter: expected an adapter name" },
	/* Durations and sizes. */
	{ "agents:\n  a:\n    cmd: [cat]\n    timeout: soon\n", 4, 14,
	    "agents.a.timeout: expected a duration such as 30s, 500ms or 2m" },
	{ "agents:\n  a:\n    cmd: [cat]\n    stop: {grace: -1s}\n", 4, 19,
	    "agents.a.stop.grace: expected a duration" },
	{ "agents:\n  a:\n    cmd: [cat]\n    heartbeat: 5ms\n", 4, 16,
	    "agents.a.heartbeat: the interval must be at least 10ms" },
	{ "agents:\n  a:\n    cmd: [cat]\n    heartbeat: {interval: 1x}\n", 4,
	    27, "agents.a.heartbeat.interval: expected a duration" },
	{ "agents:\n  a: {cmd: [cat]}\nlimits: {deadline: tomorrow}\n", 3, 20,
	    "limits.deadline: expected a duration" },
	{ "agents:\n  a:\n    cmd: [cat]\n    max_line: big\n", 4, 15,
	    "agents.a.max_line: expected a size such as 65536, 64KiB or 1MiB" },
	{ "agents:\n  a:\n    cmd: [cat]\n    limits: {as: 1TiB}\n", 4, 18,
	    "agents.a.limits.as: expected a size" },
	/* Out-of-range numbers. */
	{ "agents:\n  a:\n    cmd: [cat]\n    instances: 0\n", 4, 16,
	    "agents.a.instances: 0 is out of range (1 to 10000)" },
	{ "agents:\n  a:\n    cmd: [cat]\n    instances: 10001\n", 4, 16,
	    "agents.a.instances: 10001 is out of range (1 to 10000)" },
	{ "agents:\n  a:\n    cmd: [cat]\n    max_line: 63\n", 4, 15,
	    "agents.a.max_line: must be between 64 bytes and 256MiB" },
	{ "agents:\n  a:\n    cmd: [cat]\n    max_line: 257MiB\n", 4, 15,
	    "agents.a.max_line: must be between 64 bytes and 256MiB" },
	{ "agents:\n  a:\n    cmd: [cat]\n    heartbeat: {misses: 0}\n", 4, 25,
	    "agents.a.heartbeat.misses: 0 is out of range (1 to 1000)" },
	{ "agents:\n  a: {cmd: [cat]}\nreflection: {below: 1.5}\n", 3, 21,
	    "reflection.below: 1.5 is out of range (0 to 1)" },
	{ "agents:\n  a: {cmd: [cat]}\nreflection: {below: -0.1}\n", 3, 21,
	    "reflection.below: -0.1 is out of range (0 to 1)" },
	{ "agents:\n  a: {cmd: [cat]}\nretry: {max: 101}\n", 3, 14,
	    "retry.max: 101 is out of range (0 to 100)" },
	{ "agents:\n  a: {cmd: [cat]}\nretry: {factor: 0.5}\n", 3, 17,
	    "retry.factor: 0.5 is out of range (1 to 100)" },
	{ "agents:\n  a: {cmd: [cat]}\nlimits: {max_steps: 0}\n", 3, 21,
	    "limits.max_steps: 0 is out of range" },
	{ "agents:\n  a: {cmd: [cat]}\nlimits: {max_steps: 99999999999}\n", 3,
	    21, "limits.max_steps: " },
	{ "agents:\n  a: {cmd: [cat]}\nlimits: {max_steps: -1}\n", 3, 21,
	    "limits.max_steps: expected a whole number" },
	/* YAML itself. */
	{ "name: x\nbad: a: b\n", 2, 7, "YAML syntax" },
	{ "agents:\n  a: {cmd: [cat]}}\n", 2, 18, "YAML syntax" },
	{ "a: [1, 2]]\n", 1, 10, "YAML syntax" },
	{ "defaults: &d\n  timeout: 5s\nagents:\n  a: {cmd: [cat]}\n  b: *d\n",
	    5, 6, "YAML aliases are not supported" },
	{ "agents:\n  a: {cmd: [cat]}\n---\nagents:\n  b: {cmd: [cat]}\n", 3, 1,
	    "only one YAML document is allowed" },
	{ "agents:\n  a: {cmd: [cat]}\nroutes:\n", 3, -1,
	    "routes: expected a mapping" },
	{ "", 0, 0, "the file is empty" },
	{ "# only a comment\n\n", 0, 0, "the file is empty" },
};

/* Each bad workflow is refused with its position and a clear message. */
static void
test_errors_with_positions(void **state)
{
	struct config_error	 err;
	struct workflow		*wf;
	size_t			 i;
	int			 bad = 0;

	for (i = 0; i < sizeof bad_confs / sizeof bad_confs[0]; i++) {
		const struct bad_conf *c = &bad_confs[i];

		wf = config_load_string(c->text, strlen(c->text), "test.yaml",
		    &err);
		if (wf != NULL) {
			print_message("accepted:\n%s", c->text);
			config_free(wf);
			bad++;
			continue;
		}
		if (err.line != c->line || (c->column != -1 &&
		    err.column != c->column) ||
		    strstr(err.msg, c->msg) == NULL) {
			print_message("got %d:%d \"%s\", want %d:%d \"%s\"\n%s",
			    err.line, err.column, err.msg, c->line, c->column,
			    c->msg, c->text);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

#define STEPS_HEAD "workspace: w\nagents:\n  w: {cmd: [cat]}\n" \
	"  v: {cmd: [cat]}\nsteps:\n"

/*
 * steps: a step's name defaults to its action; proceed goes to the next
 * step (end after the last), retry to the step itself; max_iterations
 * comes from the workflow unless the step gives one; params are kept as
 * JSON; agent: and intent: resolve; the print loads back the same.
 */
static void
test_steps_defaults(void **state)
{
	struct config_error	 err;
	struct workflow		*wf, *again;
	const struct step_conf	*sc;
	char			*p1, *p2;

	wf = load("max_iterations: 4\nfeature_id: f-1\n"
	    "paths: {spec: \"specs/{feature_id}/spec.md\"}\n" STEPS_HEAD
	    "  - {agent: w, action: write, params: {n: 3, t: [a, b]}}\n"
	    "  - {name: check, agent: v, action: validate, retry: write,\n"
	    "     max_iterations: 0, success_false: fail}\n"
	    "  - {name: last, intent: analyze, action: sum, proceed: end}\n");
	assert_int_equal(wf->nsteps, 3);
	sc = &wf->steps[0];
	assert_string_equal(sc->name, "write");
	assert_ptr_equal(sc->agent, &wf->agents[0]);
	assert_int_equal(sc->next, 1);
	assert_int_equal(sc->back, 0);
	assert_int_equal(sc->max_iterations, 4);
	assert_int_equal(sc->success_false, SF_ESCALATE);
	assert_int_equal(json_integer_value(json_object_get(sc->params, "n")),
	    3);
	sc = &wf->steps[1];
	assert_int_equal(sc->next, 2);
	assert_int_equal(sc->back, 0);
	assert_int_equal(sc->max_iterations, 0);
	assert_int_equal(sc->success_false, SF_FAIL);
	sc = &wf->steps[2];
	assert_null(sc->agent);
	assert_string_equal(sc->intent, "analyze");
	assert_int_equal(sc->next, STEP_END);
	assert_ptr_equal(config_find_step(wf, "check"), &wf->steps[1]);
	assert_null(config_find_step(wf, "end"));
	assert_string_equal(wf->feature_id, "f-1");
	assert_int_equal(wf->npaths, 1);
	assert_string_equal(wf->paths[0].value, "specs/{feature_id}/spec.md");

	p1 = print_workflow(wf);
	assert_non_null(strstr(p1, "  - name: write\n    agent: w\n"
	    "    action: write\n    params: {\"n\":3,\"t\":[\"a\",\"b\"]}\n"
	    "    proceed: check\n    retry: write\n    max_iterations: 4\n"));
	again = config_load_string(p1, strlen(p1), "print.yaml", &err);
	if (again == NULL)
		fail_msg("the print does not load: %d:%d %s\n%s", err.line,
		    err.column, err.msg, p1);
	p2 = print_workflow(again);
	assert_string_equal(p1, p2);
	free(p1);
	free(p2);
	config_free(again);
	config_free(wf);

	/* Without steps the steps' keys are not printed. */
	wf = load("agents:\n  a: {cmd: [cat]}\n");
	p1 = print_workflow(wf);
	assert_null(strstr(p1, "max_iterations"));
	assert_null(strstr(p1, "artifacts"));
	free(p1);
	config_free(wf);
}

/* The graph of steps is checked: each error with its position. */
static void
test_steps_graph(void **state)
{
	static const struct {
		const char	*text;
		int		 line;
		const char	*msg;
	} bad[] = {
		{ STEPS_HEAD "  - {agent: w, action: a, proceed: nowhere}\n", 6,
		    "steps[0].proceed: no step named 'nowhere' (or end)" },
		{ STEPS_HEAD "  - {agent: w, action: a, retry: nowhere}\n", 6,
		    "steps[0].retry: no step named 'nowhere'" },
		{ STEPS_HEAD "  - {agent: w, action: a, retry: b}\n"
		    "  - {agent: w, action: b}\n", 6,
		    "retry: 'b' comes after step 'a'" },
		{ STEPS_HEAD "  - {agent: w, action: a, proceed: c}\n"
		    "  - {agent: w, action: b}\n  - {agent: w, action: c}\n", 7,
		    "step 'b' can never run" },
		{ STEPS_HEAD "  - {agent: w, action: a, max_iterations: 0}\n", 6,
		    "step 'a' is on a loop whose steps all have max_iterations: 0" },
		{ "max_iterations: 0\n" STEPS_HEAD "  - {agent: w, action: a}\n"
		    "  - {agent: v, action: b, proceed: a, retry: b, "
		    "max_iterations: 2}\n", 7, "step 'a' is on a loop" },
		{ STEPS_HEAD "  - {agent: w, intent: plan, action: a}\n", 6,
		    "a step names exactly one of agent:, intent: and "
		    "capability:" },
		{ STEPS_HEAD "  - {agent: w, capability: review, action: a}\n", 6,
		    "a step names exactly one of agent:, intent: and "
		    "capability:" },
		{ STEPS_HEAD "  - {action: a}\n", 6,
		    "a step names exactly one of agent:, intent: and "
		    "capability:" },
		{ STEPS_HEAD "  - {agent: nobody, action: a}\n", 6,
		    "steps[0].agent: no agent named 'nobody'" },
		{ STEPS_HEAD "  - {intent: dance, action: a}\n", 6,
		    "'dance' is not an intent" },
		{ STEPS_HEAD "  - {agent: w}\n", 6, "has no action: key" },
		{ STEPS_HEAD "  - {agent: w, action: a}\n  - {agent: v, action: a}\n",
		    7, "a step named 'a' comes before" },
		{ STEPS_HEAD "  - {agent: w, action: \"do it\"}\n", 6,
		    "give the step a name:" },
		{ STEPS_HEAD "  - {name: end, agent: w, action: a}\n", 6,
		    "'end' is not a valid step name" },
		{ STEPS_HEAD "  - {agent: w, action: a, params: [1]}\n", 6,
		    "expected a mapping of parameters" },
		{ STEPS_HEAD "  - {agent: w, action: a, timeout: 3}\n", 6,
		    "unknown key 'timeout'" },
		{ STEPS_HEAD "  - {agent: w, action: a, success_false: maybe}\n", 6,
		    "escalate" },
		{ STEPS_HEAD "  {agent: w}\n", 6, "expected a list of steps" },
		{ "agents:\n  w: {cmd: [cat]}\nsteps:\n  - {agent: w, action: a}\n",
		    4, "a workflow of steps needs workspace:" },
	};
	const char	*msg;
	size_t		 i;
	int		 fails = 0;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct config_error	 err;
		struct workflow		*wf;

		wf = config_load_string(bad[i].text, strlen(bad[i].text),
		    "test.yaml", &err);
		msg = wf == NULL ? err.msg : "(accepted)";
		config_free(wf);
		if (wf != NULL || err.line != bad[i].line ||
		    strstr(msg, bad[i].msg) == NULL) {
			print_message("got %d \"%s\", want %d \"%s\"\n%s",
			    wf == NULL ? err.line : 0, msg, bad[i].line,
			    bad[i].msg, bad[i].text);
			fails++;
		}
	}
	assert_int_equal(fails, 0);
}

/*
 * Every error is recorded, not only the first: a bad value does not hide
 * the next key's, nor a bad agent the next agent's; past CONFIG_ERRORS
 * they are counted.  The report lists them in the file's order.
 */
static void
test_all_errors(void **state)
{
	struct config_error	 err;
	struct workflow		*wf;
	char			*out, text[4096];
	size_t			 len, n;
	FILE			*f;
	int			 i;
	const char		*two = "routes:\n  \"*\": b\n"
	    "agents:\n  a:\n    cmd: [cat]\n    timeout: soon\n"
	    "    instances: many\n  b:\n    cmd: [cat]\n    timout: 1s\n";

	(void)state;
	wf = config_load_string(two, strlen(two), "t.yaml", &err);
	assert_null(wf);
	assert_int_equal(err.count, 3);
	f = open_memstream(&out, &len);
	config_print_error(f, "t.yaml", &err);
	fclose(f);
	assert_string_equal(out,
	    "corral: t.yaml:6:14: agents.a.timeout: expected a duration such "
	    "as 30s, 500ms or 2m\n"
	    "corral: t.yaml:7:16: agents.a.instances: expected a whole number\n"
	    "corral: t.yaml:10:5: agents.b: unknown key 'timout' (did you mean "
	    "'timeout'?)\n");
	free(out);

	n = (size_t)snprintf(text, sizeof text, "agents:\n  a:\n    cmd: "
	    "[cat]\n");
	for (i = 0; i < CONFIG_ERRORS + 5; i++)
		n += (size_t)snprintf(text + n, sizeof text - n,
		    "    bad%d: 1\n", i);
	wf = config_load_string(text, n, "t.yaml", &err);
	assert_null(wf);
	assert_int_equal(err.count, CONFIG_ERRORS + 5);
	f = open_memstream(&out, &len);
	config_print_error(f, "t.yaml", &err);
	fclose(f);
	assert_non_null(strstr(out,
	    "t.yaml:4:5: agents.a: unknown key 'bad0'"));
	assert_non_null(strstr(out, "corral: t.yaml: 5 more errors not "
	    "shown\n"));
	assert_null(strstr(out, "'bad20'"));
	free(out);
}

/* A NUL byte in the file is refused before YAML parsing. */
static void
test_nul_byte_refused(void **state)
{
	static const char text[] = "agents:\n  a: {cmd: [cat]}\0\n";
	struct config_error	 err;

	assert_null(config_load_string(text, sizeof text - 1, "test.yaml",
	    &err));
	assert_non_null(strstr(err.msg, "NUL"));
}

/* config_load reads a file and reports a missing one. */
static void
test_load_file(void **state)
{
	struct config_error	 err;
	struct workflow		*wf;
	char			 path[] = "/tmp/corral-unit-config-XXXXXX";
	const char		*text = "agents:\n  a: {cmd: [cat]}\n";
	FILE			*f;
	int			 fd;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	wf = config_load(path, &err);
	assert_non_null(wf);
	assert_string_equal(wf->path, path);
	assert_string_equal(wf->dir, "/tmp");
	config_free(wf);
	unlink(path);
	assert_null(config_load(path, &err));
	assert_int_equal(err.line, 0);
	assert_non_null(strstr(err.msg, "No such file"));
}

/*
 * A list in defaults: with an element that is not a string is refused,
 * naming it, and the agents it would be copied into do not crash the
 * loader (the element was left NULL inside the list: a crash of corral
 * check found by fuzz_config).
 */
static void
test_default_list_not_string(void **state)
{
	static const char *const keys[] = {
		"launch:\n    argv: [{a: b}, x]",
		"launch:\n    argv: [ssh, \"{{cmd}}\"]\n    hosts: [a, [b]]",
		"confine:\n    write: [/tmp, {a: b}]",
		"subscribe: [t, {a: b}]",
	};
	struct config_error	 err;
	struct workflow		*wf;
	char			 text[512];
	size_t			 i;

	(void)state;
	for (i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		snprintf(text, sizeof text, "defaults:\n  %s\nagents:\n"
		    "  x:\n    cmd: [cat]\n  y:\n    cmd: [cat]\n", keys[i]);
		wf = config_load_string(text, strlen(text), "test.yaml", &err);
		if (wf != NULL)
			fail_msg("accepted:\n%s", text);
		if (strstr(err.msg, "expected a string") == NULL)
			fail_msg("'%s' for:\n%s", err.msg, text);
	}
}

/*
 * max_inflight is auto (the adaptive window, 0) unless a number is given;
 * defaults: can fix it for every agent, and a word that is not auto is
 * refused naming the key.
 */
static void
test_max_inflight_auto(void **state)
{
	struct config_error	 err;
	struct workflow		*wf;
	const char		*bad = "agents:\n  a:\n    cmd: [cat]\n"
	    "    max_inflight: often\n";

	(void)state;
	wf = load("agents:\n  a:\n    cmd: [cat]\n    max_inflight: auto\n"
	    "  b:\n    cmd: [cat]\n    max_inflight: 64\n");
	assert_int_equal(wf->agents[0].max_inflight, 0);
	assert_int_equal(wf->agents[1].max_inflight, 64);
	config_free(wf);
	wf = load("defaults:\n  max_inflight: 8\nagents:\n  a:\n"
	    "    cmd: [cat]\n  b:\n    cmd: [cat]\n    max_inflight: auto\n");
	assert_int_equal(wf->agents[0].max_inflight, 8);
	assert_int_equal(wf->agents[1].max_inflight, 0);
	config_free(wf);
	wf = config_load_string(bad, strlen(bad), "test.yaml", &err);
	assert_null(wf);
	assert_non_null(strstr(err.msg, "max_inflight"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_workflow),
		cmocka_unit_test(test_defaults_when_absent),
		cmocka_unit_test(test_defaults_applied),
		cmocka_unit_test(test_defaults_env_and_limits_with_own),
		cmocka_unit_test(test_defaults_adapter_overridden),
		cmocka_unit_test(test_json_form),
		cmocka_unit_test(test_heartbeat_forms),
		cmocka_unit_test(test_restart_forms),
		cmocka_unit_test(test_confine_forms),
		cmocka_unit_test(test_max_line_sizes),
		cmocka_unit_test(test_quoting_and_comments),
		cmocka_unit_test(test_print_is_reloadable),
		cmocka_unit_test(test_errors_with_positions),
		cmocka_unit_test(test_all_errors),
		cmocka_unit_test(test_nul_byte_refused),
		cmocka_unit_test(test_steps_defaults),
		cmocka_unit_test(test_steps_graph),
		cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_cmd_forms),
		cmocka_unit_test(test_unknown_key_suggestions),
		cmocka_unit_test(test_depends_on),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_key_table),
		cmocka_unit_test(test_docs_match_table),
		cmocka_unit_test(test_docs_examples_load),
		cmocka_unit_test(test_default_list_not_string),
		cmocka_unit_test(test_max_inflight_auto),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
