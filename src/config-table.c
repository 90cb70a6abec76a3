/*
 * The keys of the workflow file, each declared once, in the manner of
 * tmux's options-table.c: its name, type, default, range, where it is
 * kept, and a line saying what it is for.  config.c reads the file, fills
 * in the defaults and prints the normalized workflow from this table, and
 * the unit tests check that docs/workflow.md's key tables agree with it.
 *
 * Below the table are the few keys no type describes (cmd, env, limits,
 * adapter, agents, routes, defaults) and the checks that need more than
 * one value (heartbeat, restart, start).
 */

#include <sys/resource.h>

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "config.h"

/* The interval of a heartbeat: mapping that gives none (workflow.md). */
#define CONFIG_TABLE_HEARTBEAT	5.0

static int	config_table_check_launch(struct config_reader *,
		    struct agent_conf *, const struct config_node *,
		    const char *);
static int	config_table_read_defaults(struct config_reader *,
		    const struct config_key *, void *,
		    const struct config_node *, const char *);
static int	config_table_read_agents(struct config_reader *,
		    const struct config_key *, void *,
		    const struct config_node *, const char *);
static int	config_table_read_routes(struct config_reader *,
		    const struct config_key *, void *,
		    const struct config_node *, const char *);
static int	config_table_read_cmd(struct config_reader *,
		    const struct config_key *, void *,
		    const struct config_node *, const char *);
static int	config_table_read_adapter(struct config_reader *,
		    const struct config_key *, void *,
		    const struct config_node *, const char *);
static int	config_table_read_tools(struct config_reader *,
		    const struct config_key *, void *,
		    const struct config_node *, const char *);
static int	config_table_read_env(struct config_reader *,
		    const struct config_key *, void *,
		    const struct config_node *, const char *);
static int	config_table_read_rlimit(struct config_reader *,
		    const struct config_key *, void *,
		    const struct config_node *, const char *);
static int	config_table_read_inflight(struct config_reader *,
		    const struct config_key *, void *,
		    const struct config_node *, const char *);
static void	config_table_print_inflight(FILE *, const struct config_key *,
		    const void *, int);
static int	config_table_read_interval(struct config_reader *,
		    const struct config_key *, void *,
		    const struct config_node *, const char *);
static int	config_table_after_then(struct config_reader *,
		    const struct config_key *, void *, const struct config_node *,
		    const char *);
static int	config_table_after_intents(struct config_reader *,
		    const struct config_key *, void *,
		    const struct config_node *, const char *);
static int	config_table_after_start(struct config_reader *,
		    const struct config_key *, void *,
		    const struct config_node *, const char *);
static int	config_table_after_heartbeat(struct config_reader *,
		    const struct config_key *, void *,
		    const struct config_node *, const char *);
static int	config_table_after_restart(struct config_reader *,
		    const struct config_key *, void *,
		    const struct config_node *, const char *);
static int	config_table_after_policy(struct config_reader *,
		    const struct config_key *, void *,
		    const struct config_node *, const char *);
static int	config_table_after_protocol(struct config_reader *,
		    const struct config_key *, void *,
		    const struct config_node *, const char *);
static void	config_table_print_agents(FILE *, const struct config_key *,
		    const void *, int);
static void	config_table_print_routes(FILE *, const struct config_key *,
		    const void *, int);
static void	config_table_print_adapter(FILE *, const struct config_key *,
		    const void *, int);
static void	config_table_print_env(FILE *, const struct config_key *,
		    const void *, int);
static void	config_table_print_tools(FILE *, const struct config_key *,
		    const void *, int);
static void	config_table_print_rlimits(FILE *, const struct config_key *,
		    const void *, int);
static int	config_table_read_capabilities(struct config_reader *,
		    const struct config_key *, void *,
		    const struct config_node *, const char *);
static void	config_table_print_capabilities(FILE *,
		    const struct config_key *, const void *, int);
static int	config_table_read_confine(struct config_reader *,
		    const struct config_key *, void *,
		    const struct config_node *, const char *);
static int	config_table_read_optional(struct config_reader *,
		    const struct config_key *, void *,
		    const struct config_node *, const char *);
static void	config_table_print_confine(FILE *, const struct config_key *,
		    const void *, int);
static void	config_table_print_launch(FILE *, const struct config_key *,
		    const void *, int);

/* The names of the enumerations, indexed by value. */
static const char *const config_table_ready[] = {
	"spawn", "handshake", NULL
};
static const char *const config_table_restart[] = {
	"permanent", "transient", "temporary", NULL
};
static const char *const config_table_strategy[] = {
	"one_for_one", "one_for_all", "rest_for_one", NULL
};
static const char *const config_table_missing[] = {
	"accept", "reflect", NULL
};
static const char *const config_table_join[] = {
	"all", "first", NULL
};
static const char *const config_table_shutdown[] = {
	"sequential", "parallel", NULL
};
static const char *const config_table_place[] = {
	"round-robin", "least-loaded", NULL
};
/* The placeholders of launch.argv (docs/scale-out.md). */
static const char *const config_table_launch_names[] = {
	"host", "cmd", "argv", "env", "agent.id", "agent.name", "run",
	"corral", "dir", NULL
};
static const char *const config_table_paths_as[] = {
	"relative", "absolute", NULL
};
static const char *const config_table_update_missing[] = {
	"refuse", "create", NULL
};
static const char *const config_table_create_existing[] = {
	"refuse", "replace", NULL
};
/* The words of tools:, in the order of their TOOL_* bits. */
static const char *const config_table_tools[] = {
	"spawn", "wait", "send", "list", "stop", NULL
};

/* The enumerations are read and written as int. */
_Static_assert(sizeof(enum ready_mode) == sizeof(int), "enum size");
_Static_assert(sizeof(enum restart_policy) == sizeof(int), "enum size");
_Static_assert(sizeof(enum child_strategy) == sizeof(int), "enum size");
_Static_assert(sizeof(enum missing_confidence) == sizeof(int), "enum size");

#define TOP(f)		.scope = CONFIG_TOP, \
			.offset = offsetof(struct workflow, f)
#define AGENT(f)	.scope = CONFIG_AGENT, \
			.offset = offsetof(struct agent_conf, f)
#define STEP(f)		.scope = CONFIG_STEP, \
			.offset = offsetof(struct step_conf, f)
#define RLIMIT(r)	.scope = CONFIG_AGENT, .arg = (r), \
			.read = config_table_read_rlimit

/*
 * The order is the order of `corral check --print`, and, within a mapping,
 * the order in which CONFIG_LATE keys are read (agents before routes).
 */
const struct config_key config_table[] = {
	{ .name = "name", TOP(name), .type = CONFIG_STRING,
	  .doc = "the workflow's name, shown by the progress view" },
	{ .name = "description", TOP(description), .type = CONFIG_STRING,
	  .flags = CONFIG_HIDE,
	  .doc = "free text for people; corral does not use it" },
	{ .name = "intents", TOP(intents), .type = CONFIG_LIST,
	  .count = offsetof(struct workflow, nintents), .flags = CONFIG_OMIT,
	  .after = config_table_after_intents,
	  .doc = "the workflow's own intents, beyond the ten standard ones" },
	{ .name = "start", TOP(start), .type = CONFIG_STRING, .dflt = "plan",
	  .flags = CONFIG_LATE, .typename = "intent",
	  .after = config_table_after_start,
	  .doc = "the intent of corral run's first envelope" },
	{ .name = "defaults", .scope = CONFIG_TOP, .type = CONFIG_MAP,
	  .flags = CONFIG_HIDE|CONFIG_LATE, .read = config_table_read_defaults,
	  .doc = "settings every agent starts from" },
	{ .name = "agents", .scope = CONFIG_TOP, .type = CONFIG_MAP,
	  .flags = CONFIG_LATE|CONFIG_REQUIRED,
	  .read = config_table_read_agents,
	  .print = config_table_print_agents,
	  .doc = "agent name to its settings; at least one" },
	{ .name = "routes", .scope = CONFIG_TOP, .type = CONFIG_MAP,
	  .flags = CONFIG_LATE, .read = config_table_read_routes,
	  .print = config_table_print_routes,
	  .doc = "intent (or \"*\") to the agents that serve it" },

	{ .name = "reflection", .scope = CONFIG_TOP, .type = CONFIG_MAP,
	  .doc = "when a weak reply goes to another agent" },
	{ .name = "reflection.below", TOP(refl_below), .type = CONFIG_NUMBER,
	  .min = 0, .max = 1, .dflt = "0.5",
	  .doc = "scores strictly below this are weak" },
	{ .name = "reflection.max_rounds", TOP(refl_max_rounds),
	  .type = CONFIG_INTEGER, .min = 0, .max = 100, .dflt = "1",
	  .doc = "reflections in a row on one line of work" },
	{ .name = "reflection.missing", TOP(refl_missing),
	  .type = CONFIG_ENUM, .choices = config_table_missing,
	  .dflt = "accept", .doc = "what a reply without confidence is" },

	{ .name = "join", .scope = CONFIG_TOP, .type = CONFIG_MAP,
	  .flags = CONFIG_LATE, .shorthand = "wait", .typename = "wait or mapping",
	  .doc = "how the branches of a fan-out come together" },
	{ .name = "join.wait", TOP(join_first), .type = CONFIG_ENUM,
	  .choices = config_table_join, .dflt = "all",
	  .doc = "wait for every branch, or end at the first finalize" },
	{ .name = "join.then", TOP(join_then), .type = CONFIG_STRING,
	  .flags = CONFIG_OMIT, .typename = "intent",
	  .after = config_table_after_then,
	  .doc = "an intent that gets every branch's end, to combine them" },

	{ .name = "limits", .scope = CONFIG_TOP, .type = CONFIG_MAP,
	  .doc = "bounds of a run" },
	{ .name = "limits.max_steps", TOP(max_steps), .type = CONFIG_INTEGER,
	  .min = 1, .max = UINT_MAX, .dflt = "1000",
	  .doc = "requests a job may make from next_actions" },
	{ .name = "limits.max_depth", TOP(max_depth), .type = CONFIG_INTEGER,
	  .min = 1, .max = 100000, .dflt = "32",
	  .doc = "how deep a chain of next_actions may go" },
	{ .name = "limits.deadline", TOP(deadline), .type = CONFIG_DURATION,
	  .flags = CONFIG_NONE, .dflt = "none",
	  .doc = "wall time of a job" },
	{ .name = "limits.max_queue", TOP(max_queue), .type = CONFIG_INTEGER,
	  .min = 1, .max = 10000000, .dflt = "10000",
	  .doc = "requests waiting per route" },
	{ .name = "limits.memory", TOP(max_memory), .type = CONFIG_SIZE,
	  .min = 1024 * 1024, .max = (size_t)1 << 40, .dflt = "256MiB",
	  .doc = "envelope bytes the run's requests and results may hold" },
	{ .name = "limits.max_inflight", TOP(max_inflight),
	  .type = CONFIG_INTEGER, .min = 1, .max = 10000000, .dflt = "1024",
	  .doc = "corral serve: jobs at once" },
	{ .name = "limits.max_agents", TOP(max_agents), .type = CONFIG_INTEGER,
	  .min = 1, .max = 1000000, .dflt = "1024",
	  .doc = "agents alive at once" },
	{ .name = "limits.tree_depth", TOP(tree_depth), .type = CONFIG_INTEGER,
	  .min = 0, .max = 1000, .dflt = "8",
	  .doc = "depth of sub-agent trees" },
	{ .name = "limits.tree_children", TOP(tree_children),
	  .type = CONFIG_INTEGER, .min = 0, .max = 100000, .dflt = "128",
	  .doc = "children alive per agent" },
	{ .name = "limits.budget", .scope = CONFIG_TOP, .type = CONFIG_MAP,
	  .flags = CONFIG_FLOW, .doc = "a budget for the whole run" },
	{ .name = "limits.budget.tokens", TOP(budget_tokens),
	  .type = CONFIG_NUMBER, .min = 0, .max = 1e18, .dflt = "0",
	  .doc = "tokens the run may report; 0: no limit" },
	{ .name = "limits.budget.cost", TOP(budget_cost),
	  .type = CONFIG_NUMBER, .min = 0, .max = 1e12, .dflt = "0",
	  .doc = "money the run may report; 0: no limit" },
	{ .name = "limits.budget.time", TOP(budget_time),
	  .type = CONFIG_DURATION, .dflt = "none",
	  .doc = "wall time of the run" },

	{ .name = "limits.task_budget", .scope = CONFIG_TOP,
	  .type = CONFIG_MAP, .flags = CONFIG_FLOW|CONFIG_OMIT,
	  .doc = "a budget for each task of the task registry" },
	{ .name = "limits.task_budget.tokens", TOP(task_tokens),
	  .type = CONFIG_NUMBER, .min = 0, .max = 1e18, .dflt = "0",
	  .doc = "tokens a task's answer may report; 0: no limit" },
	{ .name = "limits.task_budget.cost", TOP(task_cost),
	  .type = CONFIG_NUMBER, .min = 0, .max = 1e12, .dflt = "0",
	  .doc = "money a task's answer may report; 0: no limit" },

	{ .name = "retry", .scope = CONFIG_TOP, .type = CONFIG_MAP,
	  .flags = CONFIG_FLOW, .doc = "retrying failed requests" },
	{ .name = "retry.max", TOP(retries), .type = CONFIG_INTEGER,
	  .min = 0, .max = 100, .dflt = "3",
	  .doc = "retries per request" },
	{ .name = "retry.initial", TOP(retry_initial), .type = CONFIG_DURATION,
	  .dflt = "1s", .doc = "the first delay" },
	{ .name = "retry.factor", TOP(retry_factor), .type = CONFIG_NUMBER,
	  .min = 1, .max = 100, .dflt = "2",
	  .doc = "each delay is the previous times this" },
	{ .name = "retry.max_delay", TOP(retry_max), .type = CONFIG_DURATION,
	  .dflt = "10s", .doc = "the largest delay" },

	{ .name = "inline_spawn", TOP(inline_spawn), .type = CONFIG_BOOL,
	  .dflt = "false",
	  .doc = "whether map/agents/spawn may name a command" },
	{ .name = "shutdown", TOP(shutdown_parallel), .type = CONFIG_ENUM,
	  .choices = config_table_shutdown, .dflt = "parallel",
	  .doc = "how agents stop at the end" },
	{ .name = "path", TOP(agent_path), .type = CONFIG_LIST,
	  .count = offsetof(struct workflow, npath), .flags = CONFIG_OMIT,
	  .doc = "directories searched for bare command names" },
	{ .name = "env_allow", TOP(env_allow), .type = CONFIG_LIST,
	  .count = offsetof(struct workflow, nenv_allow), .flags = CONFIG_OMIT,
	  .doc = "variables passed on from corral's environment" },
	{ .name = "workspace", TOP(workspace), .type = CONFIG_STRING,
	  .flags = CONFIG_OMIT,
	  .doc = "the directory corral writes artifacts into" },

	/* Steps (config-steps.c, docs/steps.md). */
	{ .name = "feature_id", TOP(feature_id), .type = CONFIG_STRING,
	  .flags = CONFIG_OMIT,
	  .doc = "the feature the steps work on; --param feature_id overrides" },
	{ .name = "paths", .scope = CONFIG_TOP, .type = CONFIG_MAP,
	  .read = config_steps_read_paths, .print = config_steps_print_paths,
	  .doc = "name to a path the steps' agents may need" },
	{ .name = "paths_as", TOP(paths_absolute), .flags = CONFIG_STEPS,
	  .type = CONFIG_ENUM, .choices = config_table_paths_as, .dflt = "relative",
	  .doc = "how the steps' agents get paths: relative or absolute" },
	{ .name = "max_iterations", TOP(max_iterations),
	  .flags = CONFIG_STEPS, .type = CONFIG_INTEGER, .min = 0, .max = 1000,
	  .dflt = "3",
	  .doc = "runs of a step in a job before it escalates; 0: no bound" },
	{ .name = "artifacts", .scope = CONFIG_TOP, .type = CONFIG_MAP,
	  .flags = CONFIG_FLOW|CONFIG_STEPS,
	  .doc = "what a step's create and update may do to the workspace" },
	{ .name = "artifacts.update_missing", TOP(update_missing),
	  .type = CONFIG_ENUM, .choices = config_table_update_missing,
	  .dflt = "refuse", .doc = "what update of a missing file does" },
	{ .name = "artifacts.create_existing", TOP(create_existing),
	  .type = CONFIG_ENUM, .choices = config_table_create_existing,
	  .dflt = "refuse", .doc = "what create of an existing file does" },
	{ .name = "steps", .scope = CONFIG_TOP, .type = CONFIG_MAP,
	  .flags = CONFIG_LATE, .typename = "list of steps",
	  .read = config_steps_read, .print = config_steps_print,
	  .doc = "the workflow as steps driven by the agents' recommendations" },

	/* An entry of agents:, or defaults:. */
	{ .name = "cmd", AGENT(argv), .type = CONFIG_LIST,
	  .count = offsetof(struct agent_conf, argc),
	  .flags = CONFIG_OMIT|CONFIG_NODEFAULT, .read = config_table_read_cmd,
	  .doc = "argv of the program, never given to a shell" },
	{ .name = "adapter", .scope = CONFIG_AGENT, .type = CONFIG_MAP,
	  .typename = "name or mapping", .read = config_table_read_adapter,
	  .print = config_table_print_adapter,
	  .doc = "wrap a program that does not speak envelopes" },
	{ .name = "protocol", AGENT(protocol), .type = CONFIG_STRING,
	  .flags = CONFIG_OMIT, .after = config_table_after_protocol,
	  .doc = "the dialect the agent speaks on its pipes" },
	{ .name = "instances", AGENT(instances), .type = CONFIG_INTEGER,
	  .min = 1, .max = 10000, .dflt = "1",
	  .doc = "how many copies run" },
	{ .name = "autostart", AGENT(autostart), .type = CONFIG_BOOL,
	  .dflt = "true", .doc = "start with the workflow" },
	{ .name = "role", AGENT(role), .type = CONFIG_STRING,
	  .flags = CONFIG_OMIT,
	  .doc = "a role other agents can address with map/send" },
	{ .name = "description", AGENT(description), .type = CONFIG_STRING,
	  .flags = CONFIG_HIDE,
	  .doc = "free text for people; corral does not use it" },
	{ .name = "depends_on", AGENT(depends_on), .type = CONFIG_LIST,
	  .count = offsetof(struct agent_conf, ndepends_on),
	  .flags = CONFIG_OMIT|CONFIG_NODEFAULT, .typename = "list of agent names",
	  .doc = "agents it needs: they start before it and stop after it" },
	{ .name = "subscribe", AGENT(subscribe), .type = CONFIG_LIST,
	  .count = offsetof(struct agent_conf, nsubscribe),
	  .flags = CONFIG_OMIT, .typename = "list of topics",
	  .doc = "topics (MAP scopes) the agent joins whenever it starts" },
	{ .name = "capabilities", .scope = CONFIG_AGENT, .type = CONFIG_LIST,
	  .typename = "list of names or `{name, version, actions}`",
	  .read = config_table_read_capabilities,
	  .print = config_table_print_capabilities,
	  .doc = "what the agent can do, for discovery and capability: "
	  "addresses" },
	{ .name = "ready", AGENT(ready), .type = CONFIG_ENUM,
	  .choices = config_table_ready, .dflt = "spawn",
	  .doc = "when the agent may be given work" },
	{ .name = "heartbeat", .scope = CONFIG_AGENT, .type = CONFIG_MAP,
	  .flags = CONFIG_FLOW|CONFIG_OFF, .shorthand = "interval",
	  .typename = "`off`, duration or mapping",
	  .after = config_table_after_heartbeat, .doc = "liveness pings" },
	{ .name = "heartbeat.interval", AGENT(hb_interval),
	  .type = CONFIG_DURATION, .dflt = "off",
	  .read = config_table_read_interval,
	  .doc = "the quiet time after which the agent is pinged" },
	{ .name = "heartbeat.misses", AGENT(hb_misses), .type = CONFIG_INTEGER,
	  .min = 1, .max = 1000, .dflt = "3",
	  .doc = "intervals without an answer before UNAVAILABLE" },
	{ .name = "restart", .scope = CONFIG_AGENT, .type = CONFIG_MAP,
	  .shorthand = "policy", .typename = "policy or mapping",
	  .after = config_table_after_restart,
	  .doc = "what happens when the process exits" },
	{ .name = "restart.policy", AGENT(restart), .type = CONFIG_ENUM,
	  .choices = config_table_restart, .dflt = "transient",
	  .after = config_table_after_policy,
	  .doc = "restart always, after an abnormal exit, or never" },
	{ .name = "restart.max", AGENT(restart_max), .type = CONFIG_INTEGER,
	  .min = 0, .max = 100000, .dflt = "5",
	  .doc = "restarts allowed within the window" },
	{ .name = "restart.within", AGENT(restart_within),
	  .type = CONFIG_DURATION, .dflt = "60s",
	  .doc = "the window max counts over" },
	{ .name = "restart.backoff", AGENT(backoff_min),
	  .type = CONFIG_DURATION, .dflt = "1s",
	  .doc = "the delay before the first restart" },
	{ .name = "restart.backoff_max", AGENT(backoff_max),
	  .type = CONFIG_DURATION, .dflt = "30s", .doc = "the largest delay" },
	{ .name = "restart.failed_starts", AGENT(failed_starts),
	  .type = CONFIG_INTEGER, .min = 1, .max = 100000, .dflt = "3",
	  .doc = "exits in a row before a first line that make it FAILED" },
	{ .name = "env", .scope = CONFIG_AGENT, .type = CONFIG_MAP,
	  .read = config_table_read_env, .print = config_table_print_env,
	  .doc = "variables set for the agent" },
	{ .name = "cwd", AGENT(cwd), .type = CONFIG_STRING,
	  .flags = CONFIG_OMIT, .doc = "working directory" },
	{ .name = "max_line", AGENT(max_line), .type = CONFIG_SIZE,
	  .min = 64, .max = CORRAL_MAX_LINE_LIMIT, .dflt = "1MiB",
	  .doc = "the longest line the agent may write" },
	{ .name = "max_inflight", AGENT(max_inflight), .type = CONFIG_INTEGER,
	  .min = 1, .max = 1000000, .dflt = "auto",
	  .typename = "`auto` or integer 1-1000000",
	  .read = config_table_read_inflight,
	  .print = config_table_print_inflight,
	  .doc = "requests outstanding at one instance (auto: an adaptive "
	  "window of 16 to 1024)" },
	{ .name = "timeout", AGENT(timeout), .type = CONFIG_DURATION,
	  .dflt = "30s", .doc = "how long the agent has to answer a request" },
	{ .name = "stop", .scope = CONFIG_AGENT, .type = CONFIG_MAP,
	  .doc = "the stop sequence" },
	{ .name = "stop.grace", AGENT(stop_grace), .type = CONFIG_DURATION,
	  .dflt = "2s", .doc = "from stdin closed to SIGTERM" },
	{ .name = "stop.timeout", AGENT(stop_timeout), .type = CONFIG_DURATION,
	  .dflt = "5s", .doc = "from SIGTERM to SIGKILL" },
	{ .name = "children", .scope = CONFIG_AGENT, .type = CONFIG_MAP,
	  .flags = CONFIG_FLOW, .doc = "limits on its sub-agents" },
	{ .name = "children.max", AGENT(max_children), .type = CONFIG_INTEGER,
	  .min = 0, .max = 100000, .dflt = "0",
	  .doc = "children alive at once" },
	{ .name = "children.depth", AGENT(max_depth), .type = CONFIG_INTEGER,
	  .min = 0, .max = 1000, .dflt = "0",
	  .doc = "the deepest a descendant may be" },
	{ .name = "children.strategy", AGENT(strategy), .type = CONFIG_ENUM,
	  .choices = config_table_strategy, .dflt = "one_for_one",
	  .doc = "which children restart with a restarted child" },
	{ .name = "breaker", .scope = CONFIG_AGENT, .type = CONFIG_MAP,
	  .flags = CONFIG_FLOW, .doc = "its circuit breaker" },
	{ .name = "breaker.failures", AGENT(breaker_failures),
	  .type = CONFIG_INTEGER, .min = 1, .max = 100000, .dflt = "5",
	  .doc = "failures in a row that open the circuit" },
	{ .name = "breaker.reset", AGENT(breaker_reset),
	  .type = CONFIG_DURATION, .dflt = "60s",
	  .doc = "how long the circuit stays open" },
	{ .name = "breaker.probes", AGENT(breaker_probes),
	  .type = CONFIG_INTEGER, .min = 1, .max = 1000, .dflt = "3",
	  .doc = "requests let through while half-open" },
	{ .name = "budget", .scope = CONFIG_AGENT, .type = CONFIG_MAP,
	  .flags = CONFIG_FLOW|CONFIG_OMIT,
	  .doc = "a budget for the subtree of each agent of the entry" },
	{ .name = "budget.tokens", AGENT(budget_tokens), .type = CONFIG_NUMBER,
	  .min = 0, .max = 1e18, .dflt = "0",
	  .doc = "tokens the subtree may report; 0: no limit" },
	{ .name = "budget.cost", AGENT(budget_cost), .type = CONFIG_NUMBER,
	  .min = 0, .max = 1e12, .dflt = "0",
	  .doc = "money the subtree may report; 0: no limit" },
	{ .name = "budget.time", AGENT(budget_time), .type = CONFIG_DURATION,
	  .dflt = "none", .doc = "wall time from the start or the spawn" },
	{ .name = "limits", .scope = CONFIG_AGENT, .type = CONFIG_MAP,
	  .print = config_table_print_rlimits,
	  .doc = "resource limits of the process" },
	{ .name = "limits.nofile", RLIMIT(RLIMIT_NOFILE),
	  .type = CONFIG_INTEGER, .min = 0, .max = UINT_MAX,
	  .doc = "open files" },
	{ .name = "limits.nproc", RLIMIT(RLIMIT_NPROC),
	  .type = CONFIG_INTEGER, .min = 0, .max = UINT_MAX,
	  .doc = "processes of the user" },
	{ .name = "limits.as", RLIMIT(RLIMIT_AS), .type = CONFIG_SIZE,
	  .doc = "address space" },
	{ .name = "limits.core", RLIMIT(RLIMIT_CORE), .type = CONFIG_SIZE,
	  .doc = "core files" },
	{ .name = "limits.cpu", RLIMIT(RLIMIT_CPU), .type = CONFIG_DURATION,
	  .doc = "CPU time, rounded up to whole seconds" },
	{ .name = "limits.fsize", RLIMIT(RLIMIT_FSIZE), .type = CONFIG_SIZE,
	  .doc = "largest file written" },
	{ .name = "limits.data", RLIMIT(RLIMIT_DATA), .type = CONFIG_SIZE,
	  .doc = "data segment" },
	{ .name = "limits.stack", RLIMIT(RLIMIT_STACK), .type = CONFIG_SIZE,
	  .doc = "stack" },
	{ .name = "user", AGENT(user), .type = CONFIG_STRING,
	  .flags = CONFIG_OMIT, .doc = "run as this user" },
	{ .name = "confine", .scope = CONFIG_AGENT, .type = CONFIG_MAP,
	  .typename = "`on`, `off` or mapping",
	  .read = config_table_read_confine,
	  .print = config_table_print_confine,
	  .doc = "Landlock: where the process may write, read and connect" },
	{ .name = "confine.write", AGENT(confine.write), .type = CONFIG_LIST,
	  .count = offsetof(struct agent_conf, confine.nwrite),
	  .doc = "more paths it may write beneath" },
	{ .name = "confine.read", AGENT(confine.read), .type = CONFIG_LIST,
	  .count = offsetof(struct agent_conf, confine.nread),
	  .doc = "when given, the only paths it may read beneath" },
	{ .name = "confine.connect", AGENT(confine.connect),
	  .type = CONFIG_LIST, .typename = "list of ports",
	  .count = offsetof(struct agent_conf, confine.nconnect),
	  .doc = "when given, the only TCP ports it may connect to" },
	{ .name = "confine.required", AGENT(confine.required),
	  .type = CONFIG_BOOL, .dflt = "false",
	  .doc = "refuse to run unless the kernel enforces all of it" },
	{ .name = "confine.optional", .scope = CONFIG_AGENT,
	  .type = CONFIG_LIST, .typename = "list of `truncate`, `connect`, "
	  "`ioctl`, `signals`, `abstract-sockets`, `metadata`",
	  .read = config_table_read_optional,
	  .doc = "with required, the protections it may run without where "
	  "the system lacks them" },
	{ .name = "launch", .scope = CONFIG_AGENT, .type = CONFIG_MAP,
	  .print = config_table_print_launch,
	  .doc = "run the agent elsewhere: through ssh, srun or a container "
	  "engine, on one of its hosts" },
	{ .name = "launch.argv", AGENT(launch.argv), .type = CONFIG_LIST,
	  .count = offsetof(struct agent_conf, launch.argc),
	  .typename = "list of templates",
	  .doc = "the launcher's command line; {{cmd}} is the agent's, run "
	  "by corral host on the far end" },
	{ .name = "launch.hosts", AGENT(launch.hosts), .type = CONFIG_LIST,
	  .count = offsetof(struct agent_conf, launch.nhosts),
	  .doc = "the machines it may run on, {{host}} in argv; none: the "
	  "launcher chooses (Slurm)" },
	{ .name = "launch.place", AGENT(launch.place), .type = CONFIG_ENUM,
	  .choices = config_table_place, .dflt = "round-robin",
	  .doc = "how a host is chosen: in turn, or the one running fewest "
	  "of corral's agents" },
	{ .name = "launch.stay", AGENT(launch.stay), .type = CONFIG_BOOL,
	  .dflt = "true",
	  .doc = "a restart runs on the same host unless that host is lost "
	  "or out" },
	{ .name = "launch.corral", AGENT(launch.corral), .type = CONFIG_STRING,
	  .dflt = "corral",
	  .doc = "the corral program on the far end, as {{cmd}} runs it" },
	{ .name = "launch.alive", AGENT(launch.alive), .type = CONFIG_DURATION,
	  .dflt = "2s",
	  .doc = "how often each end of the link says it is there" },
	{ .name = "launch.lost", AGENT(launch.lost), .type = CONFIG_DURATION,
	  .dflt = "10s",
	  .doc = "silence on the link after which its host is lost" },
	{ .name = "launch.breaker", .scope = CONFIG_AGENT, .type = CONFIG_MAP,
	  .flags = CONFIG_FLOW, .doc = "keeping a failing host out" },
	{ .name = "launch.breaker.failures", AGENT(launch.failures),
	  .type = CONFIG_INTEGER, .min = 1, .max = 1000, .dflt = "3",
	  .doc = "failures in a row that take a host out" },
	{ .name = "launch.breaker.reset", AGENT(launch.reset),
	  .type = CONFIG_DURATION, .dflt = "60s",
	  .doc = "how long it stays out before one agent may try it again" },
	{ .name = "tools", AGENT(tools), .type = CONFIG_LIST,
	  .typename = "list of `spawn`, `wait`, `send`, `list`, `stop`",
	  .read = config_table_read_tools, .print = config_table_print_tools,
	  .doc = "corral's tools for the agent's MCP sessions (corral mcp), "
	  "offered to the model of a claude, codex or gemini agent" },

	/* An entry of steps: (config-steps.c). */
	{ .name = "name", STEP(name), .type = CONFIG_STRING,
	  .doc = "how other steps, corral answer and the logs name the step" },
	{ .name = "agent", STEP(agent_name), .type = CONFIG_STRING,
	  .flags = CONFIG_OMIT, .doc = "the agent that runs the step" },
	{ .name = "intent", STEP(intent), .type = CONFIG_STRING,
	  .flags = CONFIG_OMIT, .typename = "intent",
	  .doc = "instead of agent: route the step's request by routes:" },
	{ .name = "capability", STEP(capability), .type = CONFIG_STRING,
	  .flags = CONFIG_OMIT,
	  .doc = "instead of agent: the least busy agent with this capability" },
	{ .name = "action", STEP(action), .type = CONFIG_STRING,
	  .flags = CONFIG_REQUIRED, .doc = "what the agent is to do" },
	{ .name = "params", .scope = CONFIG_STEP, .type = CONFIG_MAP,
	  .read = config_steps_read_params,
	  .print = config_steps_print_params,
	  .doc = "the action's parameters, any YAML" },
	{ .name = "proceed", STEP(proceed), .type = CONFIG_STRING,
	  .typename = "step or `end`", .doc = "where proceed goes" },
	{ .name = "retry", STEP(retry), .type = CONFIG_STRING,
	  .typename = "step", .doc = "where retry goes: this step or an "
	  "earlier one" },
	{ .name = "max_iterations", STEP(max_iterations),
	  .type = CONFIG_INTEGER, .min = 0, .max = 1000,
	  .doc = "runs of this step in a job before it escalates; 0: no bound" },
	{ .name = "success_false", STEP(success_false), .type = CONFIG_ENUM,
	  .choices = config_steps_false, .dflt = "escalate",
	  .doc = "what success: false with proceed does" },
};
const size_t config_table_size = sizeof config_table / sizeof config_table[0];

/* Read defaults:, the settings every entry of agents: starts from. */
static int
config_table_read_defaults(struct config_reader *rd,
    const struct config_key *k, void *base, const struct config_node *n,
    const char *path)
{
	int	rc;

	rd->in_defaults = 1;
	rc = config_read_map(rd, CONFIG_AGENT, &rd->defaults, "", n, path);
	rd->in_defaults = 0;
	return rc;
}

/*
 * Check what one agent's keys say together: something to run, and
 * settings its adapter accepts.
 */
static int
config_table_check_agent(struct config_reader *rd, struct agent_conf *ac,
    const struct config_node *n, const char *path)
{
	const struct config_node	*x;
	char				 why[256];

	if (ac->argv == NULL && (ac->adapter == NULL ||
	    strcmp(ac->adapter, "exec") != 0))
		return config_err(rd, n, "%s: no cmd: given", path);
	ac->confine.home = adapter_table_home(ac->adapter);
	if (ac->adapter != NULL && ac->protocol != NULL) {
		x = config_yaml_get(n, "protocol");
		return config_err(rd, x != NULL ? x : n, "%s: protocol: and "
		    "adapter: do not go together (an adapter speaks its "
		    "tool's own language)", path);
	}
	if (ac->adapter != NULL && adapter_table_check(ac, why, sizeof why) != 0) {
		x = config_yaml_get(n, "adapter");
		return config_err(rd, x != NULL ? x : n, "%s.adapter: %s", path,
		    why);
	}
	if (ac->launch.argc > 0)
		return config_table_check_launch(rd, ac, n, path);
	return 0;
}

/*
 * Check one placeholder of launch.argv: a name launch: has, filters
 * after it as exec's templates take them.  Returns 0 or -1 with why.
 */
static int
config_table_launch_names_ok(const char *tmpl, char *why, size_t len)
{
	const char	*p = tmpl, *open, *close, *q;
	char		 names[128] = "";
	size_t		 i, n;

	if (adapter_template_check(tmpl, why, len) != 0)
		return -1;
	while ((open = strstr(p, "{{")) != NULL &&
	    (close = strstr(open + 2, "}}")) != NULL) {
		for (q = open + 2; q < close && *q == ' '; q++)
			;
		n = strcspn(q, " |}");
		for (i = 0; config_table_launch_names[i] != NULL; i++)
			if (strlen(config_table_launch_names[i]) == n &&
			    strncmp(config_table_launch_names[i], q, n) == 0)
				break;
		if (config_table_launch_names[i] == NULL) {
			for (i = 0; config_table_launch_names[i] != NULL; i++) {
				strlcat(names, i > 0 ? ", " : "", sizeof names);
				strlcat(names, config_table_launch_names[i],
				    sizeof names);
			}
			snprintf(why, len, "'%.*s': launch: has no '%.*s' "
			    "(it has %s)", (int)(close + 2 - open), open,
			    (int)n, q, names);
			return -1;
		}
		p = close + 2;
	}
	return 0;
}

/*
 * Check launch: with the rest of the entry: a program first, templates
 * with the placeholders it has, a link that can tell silence from a
 * tick, and settings that mean something on another machine.
 */
static int
config_table_check_launch(struct config_reader *rd, struct agent_conf *ac,
    const struct config_node *n, const char *path)
{
	const struct launch_conf	*l = &ac->launch;
	const struct config_node	*x;
	char				 why[256];
	size_t				 i;

	x = config_yaml_get(n, "launch");
	if (x == NULL)
		x = n;
	if (strstr(l->argv[0], "{{") != NULL || l->argv[0][0] == '\0')
		return config_err(rd, x, "%s.launch.argv[0]: the launcher's "
		    "program (ssh, srun, podman ...), not a template", path);
	for (i = 0; i < l->argc; i++)
		if (config_table_launch_names_ok(l->argv[i], why,
		    sizeof why) != 0)
			return config_err(rd, x, "%s.launch.argv[%zu]: %s", path,
			    i, why);
	if (l->alive < 0.01)
		return config_err(rd, x, "%s.launch.alive: at least 10ms",
		    path);
	if (l->lost < 2 * l->alive)
		return config_err(rd, x, "%s.launch.lost: at least twice "
		    "launch.alive (%gs), or one late tick is a lost host",
		    path, l->alive);
	if (adapter_table_per_call(ac->adapter))
		return config_err(rd, x, "%s.launch: the %s adapter runs a "
		    "process per request, which launch: does not place; put "
		    "the launcher in its argv: ([ssh, HOST, ...])", path,
		    ac->adapter);
	if (ac->confine.flags & CONFINE_ON)
		return config_err(rd, x, "%s.launch: confine: cannot be "
		    "enforced on another machine: remove one of them", path);
	if (l->nhosts > CONFIG_LAUNCH_HOSTS)
		return config_err(rd, x, "%s.launch.hosts: at most %d hosts",
		    path, CONFIG_LAUNCH_HOSTS);
	for (i = 0; i < l->nhosts; i++)
		if (l->hosts[i][0] == '\0' || l->hosts[i][0] == '-')
			return config_err(rd, x, "%s.launch.hosts[%zu]: '%s' is "
			    "not a host name", path, i, l->hosts[i]);
	return 0;
}

/*
 * The value of key in the mapping node m, or m itself when it has none
 * (for an error's position).
 */
static const struct config_node *
config_table_at(const struct config_node *m, const char *key)
{
	size_t	i;

	for (i = 0; m->type == CONFIG_MAPPING && i + 1 < m->nkids; i += 2)
		if (m->kids[i]->str != NULL &&
		    strcmp(m->kids[i]->str, key) == 0)
			return m->kids[i + 1];
	return m;
}

/* Nonzero if entry i reaches a cycle through depends_on (seen: 0, 1, 2). */
static int
config_table_cycle(const struct workflow *wf, size_t i, unsigned char *seen)
{
	const struct agent_conf	*ac = &wf->agents[i];
	size_t			 d;

	if (seen[i] == 2)
		return 0;
	if (seen[i] == 1)
		return 1;
	seen[i] = 1;
	for (d = 0; d < ac->ndepends_on; d++)
		if (config_table_cycle(wf, ac->deps[d], seen))
			return 1;
	seen[i] = 2;
	return 0;
}

/*
 * Every agent's depends_on: names other entries, which are given their
 * indexes, and makes no cycle.
 */
static int
config_table_depends(struct config_reader *rd, struct workflow *wf,
    const struct config_node *n, const char *path)
{
	struct agent_conf	*ac, *dep;
	unsigned char		*seen;
	size_t			 i, d;
	int			 rc = 0;

	for (i = 0; i < wf->nagents; i++) {
		ac = &wf->agents[i];
		if (ac->ndepends_on == 0)
			continue;
		ac->deps = xcalloc(ac->ndepends_on, sizeof *ac->deps);
		for (d = 0; d < ac->ndepends_on; d++) {
			dep = config_find_agent(wf, ac->depends_on[d]);
			if (dep == NULL || dep == ac) {
				rc = config_err(rd, config_table_at(n->kids[2 * i
				    + 1], "depends_on"), dep == NULL ?
				    "%s.%s.depends_on: no agent named '%s' in "
				    "agents:" : "%s.%s.depends_on: '%s' is the "
				    "agent itself", path, ac->name,
				    ac->depends_on[d]);
				break;
			}
			ac->deps[d] = dep->index;
		}
	}
	if (rc != 0)
		return rc;
	seen = xcalloc(wf->nagents, 1);
	for (i = 0; i < wf->nagents && rc == 0; i++) {
		if (config_table_cycle(wf, i, seen))
			rc = config_err(rd, config_table_at(n->kids[2 * i + 1],
			    "depends_on"), "%s.%s.depends_on: the agents "
			    "depend on each other in a circle", path,
			    wf->agents[i].name);
	}
	free(seen);
	return rc;
}

/* Read agents:, each entry over a copy of what defaults: gave. */
static int
config_table_read_agents(struct config_reader *rd,
    const struct config_key *k, void *base, const struct config_node *n,
    const char *path)
{
	struct workflow			*wf = base;
	struct agent_conf		*ac;
	const struct config_node	*name;
	char				 p[256];
	size_t				 i;
	int				 rc = 0;

	if (config_map_check(rd, n, path) != 0)
		return -1;
	if (n->nkids == 0)
		return config_err(rd, n, "%s: names no agent", path);
	wf->agents = xcalloc(n->nkids / 2, sizeof *wf->agents);
	/* Each entry is read, whatever the one before got wrong. */
	for (i = 0; i + 1 < n->nkids; i += 2) {
		name = n->kids[i];
		if (!protocol_agent_name(name->str)) {
			rc = config_err(rd, name, "%s: '%s' is not a valid "
			    "agent name (letters, digits, '_' and '-', at most "
			    "48)", path, name->str);
			continue;
		}
		ac = &wf->agents[wf->nagents];
		config_agent_copy(ac, &rd->defaults);
		ac->name = xstrdup(name->str);
		ac->line = name->line;
		ac->column = name->column;
		ac->index = (unsigned int)wf->nagents++;
		snprintf(p, sizeof p, "%s.%s", path, name->str);
		if (config_read_map(rd, CONFIG_AGENT, ac, "", n->kids[i + 1],
		    p) != 0 ||
		    config_table_check_agent(rd, ac, n->kids[i + 1], p) != 0)
			rc = -1;
	}
	if (rc == 0)
		rc = config_table_depends(rd, wf, n, path);
	return rc;
}

/* Free a list of names config_read_list made. */
static void
config_table_free_names(char **names, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/*
 * Add to a row the entries that declare one of its capabilities in
 * capabilities: (an agent may also register one at run time: routing asks
 * then, too).
 */
static void
config_table_route_caps(struct workflow *wf, struct route_conf *rc)
{
	size_t	i, j, k;

	for (i = 0; i < wf->nagents; i++) {
		for (k = 0; k < rc->nagents; k++)
			if (rc->agents[k] == &wf->agents[i])
				break;
		if (k < rc->nagents)
			continue;
		for (j = 0; j < rc->ncaps; j++)
			if (protocol_capability_in(wf->agents[i].capabilities,
			    rc->caps[j]))
				break;
		if (j < rc->ncaps) {
			rc->agents = xreallocarray(rc->agents, rc->nagents + 1,
			    sizeof *rc->agents);
			rc->agents[rc->nagents++] = &wf->agents[i];
		}
	}
}

/*
 * Read one row of routes: into rc: agent names, which must exist, and
 * capability:NAME, any agent with that capability.
 */
static int
config_table_read_route(struct config_reader *rd, struct route_conf *rc,
    const struct config_node *v, const char *path)
{
	const struct config_node	*at;
	char				**names = NULL;
	size_t				  nnames = 0, i;
	int				  ret = -1;

	if (config_read_list(rd, v, path, &names, &nnames) != 0)
		goto out;
	if (nnames == 0) {
		config_err(rd, v, "%s: names no agent", path);
		goto out;
	}
	rc->agents = xcalloc(nnames, sizeof *rc->agents);
	rc->caps = xcalloc(nnames, sizeof *rc->caps);
	for (i = 0; i < nnames; i++) {
		at = v->type == CONFIG_SEQUENCE ? v->kids[i] : v;
		if (strncmp(names[i], "capability:", 11) == 0) {
			if (names[i][11] == '\0' || strlen(names[i]) > 11 + 128) {
				config_err(rd, at, "%s: capability:NAME names a "
				    "capability of 1 to 128 bytes", path);
				goto out;
			}
			rc->caps[rc->ncaps++] = xstrdup(names[i] + 11);
			continue;
		}
		rc->agents[rc->nagents] = config_find_agent(rd->wf, names[i]);
		if (rc->agents[rc->nagents] == NULL) {
			config_err(rd, at, "%s: no agent named '%s' in "
			    "agents:", path, names[i]);
			goto out;
		}
		rc->nagents++;
	}
	rc->nnamed = rc->nagents;
	config_table_route_caps(rd->wf, rc);
	ret = 0;
out:
	config_table_free_names(names, nnames);
	return ret;
}

/* Read routes:, a map of intent (or "*") to an agent name or a list. */
static int
config_table_read_routes(struct config_reader *rd,
    const struct config_key *k, void *base, const struct config_node *n,
    const char *path)
{
	struct workflow			*wf = base;
	const struct config_node	*intent;
	struct route_conf		*rc;
	char				 p[256];
	char				 list[INTENT_MAX * (INTENT_NAME_MAX + 2)];
	size_t				 i;
	int				 ret = 0;

	if (config_map_check(rd, n, path) != 0)
		return -1;
	wf->routes = xcalloc(n->nkids / 2 + 1, sizeof *wf->routes);
	for (i = 0; i + 1 < n->nkids; i += 2) {
		intent = n->kids[i];
		if (strcmp(intent->str, "*") != 0 &&
		    protocol_intent(intent->str, intent->len) < 0) {
			protocol_intent_list(list, sizeof list);
			ret = config_err(rd, intent, "%s: '%s' is not an "
			    "intent (one of %s, or \"*\" for the fallback; a "
			    "workflow's own go in intents:)", path,
			    intent->str, list);
			continue;
		}
		rc = &wf->routes[wf->nroutes++];
		rc->intent = xstrdup(intent->str);
		rc->line = intent->line;
		rc->column = intent->column;
		snprintf(p, sizeof p, "%s.%s", path, intent->str);
		if (config_table_read_route(rd, rc, n->kids[i + 1], p) != 0)
			ret = -1;
	}
	return ret;
}

/* Return nonzero when s holds only characters a plain YAML word may. */
static int
config_table_plain_words(const char *s)
{
	for (; *s != '\0'; s++) {
		if (strchr(" \t\r\n", *s) == NULL && strchr("._/+=@%-",
		    *s) == NULL && !((*s >= 'a' && *s <= 'z') ||
		    (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
			return 0;
	}
	return 1;
}

/*
 * Refuse a cmd: that is one string with spaces.  corral runs no shell, so
 * splitting it would be a guess at the user's quoting; the message shows
 * the list to write instead.
 */
static int
config_table_cmd_spaces(struct config_reader *rd, const struct config_node *n,
    const char *path)
{
	char	 list[256] = "", *copy, *word, *last;

	if (config_table_plain_words(n->str)) {
		copy = xstrdup(n->str);
		for (word = strtok_r(copy, " \t\r\n", &last); word != NULL;
		    word = strtok_r(NULL, " \t\r\n", &last)) {
			if (list[0] != '\0')
				strlcat(list, ", ", sizeof list);
			strlcat(list, word, sizeof list);
		}
		free(copy);
	} else
		strlcpy(list, "./agent, --flag", sizeof list);
	return config_err(rd, n, "%s: a command with spaces must be a list "
	    "of its words, such as [%s]; corral runs no shell and never "
	    "splits a string", path, list);
}

/*
 * Read cmd:, the program's argv.  A single word is a list of one, as
 * for every list of strings; a string with spaces is refused.
 */
static int
config_table_read_cmd(struct config_reader *rd, const struct config_key *k,
    void *base, const struct config_node *n, const char *path)
{
	struct agent_conf	*ac = base;

	if (n->type == CONFIG_SCALAR &&
	    n->str[strcspn(n->str, " \t\r\n")] != '\0')
		return config_table_cmd_spaces(rd, n, path);
	if (config_read_list(rd, n, path, &ac->argv, &ac->argc) != 0)
		return -1;
	if (ac->argc == 0 || ac->argv[0][0] == '\0')
		return config_err(rd, n, "%s: the command is empty", path);
	return 0;
}

/*
 * Read adapter:, a name or a mapping with type: and the adapter's own
 * settings, kept as JSON for the adapter to check.
 */
static int
config_table_read_adapter(struct config_reader *rd,
    const struct config_key *k, void *base, const struct config_node *n,
    const char *path)
{
	struct agent_conf		*ac = base;
	const struct config_node	*type;

	if (ac->adapter_conf != NULL)
		json_decref(ac->adapter_conf);
	ac->adapter_conf = NULL;
	if (n->type == CONFIG_SCALAR) {
		if (config_read_str(rd, n, path, &ac->adapter) != 0)
			return -1;
		ac->adapter_conf = json_object();
		return 0;
	}
	type = n->type == CONFIG_MAPPING ? config_yaml_get(n, "type") : NULL;
	if (type == NULL || type->type != CONFIG_SCALAR)
		return config_err(rd, n, "%s: expected an adapter name or a "
		    "mapping with type:", path);
	if (config_map_check(rd, n, path) != 0)
		return -1;
	free(ac->adapter);
	ac->adapter = xstrdup(type->str);
	ac->adapter_conf = config_yaml_json(n);
	return 0;
}

/* Read env:, merged over what defaults: gave; the same name replaces. */
static int
config_table_read_env(struct config_reader *rd, const struct config_key *k,
    void *base, const struct config_node *n, const char *path)
{
	struct agent_conf		*ac = base;
	const struct config_node	*name, *value;
	size_t				 i, e;

	if (config_map_check(rd, n, path) != 0)
		return -1;
	ac->env = xreallocarray(ac->env, ac->nenv + n->nkids / 2 + 1,
	    sizeof *ac->env);
	for (i = 0; i + 1 < n->nkids; i += 2) {
		name = n->kids[i];
		value = n->kids[i + 1];
		if (value->type != CONFIG_SCALAR)
			return config_err(rd, value, "%s.%s: expected a string",
			    path, name->str);
		if (name->str[0] == '\0' || strchr(name->str, '=') != NULL)
			return config_err(rd, name, "%s: '%s' is not a valid "
			    "variable name", path, name->str);
		for (e = 0; e < ac->nenv; e++)
			if (strcmp(ac->env[e].key, name->str) == 0)
				break;
		if (e < ac->nenv) {
			free(ac->env[e].value);
			ac->env[e].value = xstrdup(value->str);
			continue;
		}
		ac->env[ac->nenv].key = xstrdup(name->str);
		ac->env[ac->nenv].value = xstrdup(value->str);
		ac->nenv++;
	}
	return 0;
}

/* Read tools:, a list of tool words, into the agent's TOOL_* bits. */
static int
config_table_read_tools(struct config_reader *rd,
    const struct config_key *k, void *base, const struct config_node *n,
    const char *path)
{
	struct agent_conf	*ac = base;
	char			**names = NULL;
	size_t			  nnames = 0, i, j;
	int			  ret = 0;

	if (config_read_list(rd, n, path, &names, &nnames) != 0)
		return -1;
	ac->tools = 0;
	for (i = 0; i < nnames && ret == 0; i++) {
		for (j = 0; config_table_tools[j] != NULL; j++)
			if (strcmp(names[i], config_table_tools[j]) == 0)
				break;
		if (config_table_tools[j] == NULL)
			ret = config_err(rd, n->type == CONFIG_SEQUENCE &&
			    i < n->nkids ? n->kids[i] : n, "%s: unknown tool "
			    "'%s' (spawn, wait, send, list, stop)", path,
			    names[i]);
		else
			ac->tools |= 1U << j;
	}
	config_table_free_names(names, nnames);
	return ret;
}

/* Read confine.optional: protections, by name, into their bits. */
static int
config_table_read_optional(struct config_reader *rd,
    const struct config_key *k, void *base, const struct config_node *n,
    const char *path)
{
	struct agent_conf	*ac = base;
	char			**names = NULL;
	size_t			  nnames = 0, i;
	unsigned int		  bit;
	int			  ret = 0;

	if (config_read_list(rd, n, path, &names, &nnames) != 0)
		return -1;
	ac->confine.optional = 0;
	for (i = 0; i < nnames && ret == 0; i++) {
		if ((bit = confine_protection(names[i])) == 0)
			ret = config_err(rd, n->type == CONFIG_SEQUENCE &&
			    i < n->nkids ? n->kids[i] : n, "%s: unknown "
			    "protection '%s' (truncate, connect, ioctl, signals, "
			    "abstract-sockets, metadata)", path, names[i]);
		else
			ac->confine.optional |= bit;
	}
	config_table_free_names(names, nnames);
	return ret;
}

/*
 * Read one resource limit of limits: into the agent's list, replacing the
 * same limit from defaults:.  Any of them may be unlimited.
 */
static int
config_table_read_rlimit(struct config_reader *rd,
    const struct config_key *k, void *base, const struct config_node *n,
    const char *path)
{
	struct agent_conf	*ac = base;
	long long		 value;
	unsigned int		 u;
	size_t			 sz, slot;
	double			 d;

	if (n->type == CONFIG_SCALAR && strcmp(n->str, "unlimited") == 0)
		value = (long long)RLIM_INFINITY;
	else if (k->type == CONFIG_SIZE) {
		if (config_read_size(rd, n, path, 0, 0, &sz) != 0)
			return -1;
		value = sz > LLONG_MAX ? (long long)RLIM_INFINITY :
		    (long long)sz;
	} else if (k->type == CONFIG_DURATION) {
		if (config_read_duration(rd, n, path, &d) != 0)
			return -1;
		value = d >= 1e18 ? (long long)RLIM_INFINITY :
		    (long long)ceil(d);
	} else {
		if (config_read_uint(rd, n, path, (unsigned int)k->min,
		    (unsigned int)k->max, &u) != 0)
			return -1;
		value = u;
	}
	for (slot = 0; slot < ac->nlimits; slot++)
		if (ac->limits[slot].resource == k->arg)
			break;
	if (slot < ac->nlimits) {
		/* Replace the default: move the last into its place. */
		ac->limits[slot] = ac->limits[ac->nlimits - 1];
		ac->nlimits--;
	}
	ac->limits = xreallocarray(ac->limits, ac->nlimits + 1,
	    sizeof *ac->limits);
	ac->limits[ac->nlimits].resource = k->arg;
	ac->limits[ac->nlimits].value = value;
	ac->nlimits++;
	return 0;
}

/* Read max_inflight, where auto (0) leaves it to the adaptive window. */
static int
config_table_read_inflight(struct config_reader *rd,
    const struct config_key *k, void *base, const struct config_node *n,
    const char *path)
{
	struct agent_conf	*ac = base;

	if (n->type == CONFIG_SCALAR && !n->quoted &&
	    strcmp(n->str, "auto") == 0) {
		ac->max_inflight = 0;
		return 0;
	}
	return config_read_value(rd, k, base, n, path);
}

/* Print max_inflight: auto, or the number the workflow gave. */
static void
config_table_print_inflight(FILE *f, const struct config_key *k,
    const void *base, int indent)
{
	const struct agent_conf	*ac = base;

	if (ac->max_inflight == 0)
		fprintf(f, "%*smax_inflight: auto\n", indent, "");
	else
		fprintf(f, "%*smax_inflight: %u\n", indent, "",
		    ac->max_inflight);
}

/* Read heartbeat's interval, where false, like off, means none. */
static int
config_table_read_interval(struct config_reader *rd,
    const struct config_key *k, void *base, const struct config_node *n,
    const char *path)
{
	struct agent_conf	*ac = base;

	if (n->type == CONFIG_SCALAR && !n->quoted &&
	    strcmp(n->str, "false") == 0) {
		ac->hb_interval = 0;
		return 0;
	}
	return config_read_value(rd, k, base, n, path);
}

/*
 * Check the workflow's own intents and make them known, before anything
 * that names an intent is read (those keys are CONFIG_LATE).
 */
static int
config_table_after_intents(struct config_reader *rd,
    const struct config_key *k, void *base, const struct config_node *n,
    const char *path)
{
	struct workflow	*wf = base;
	const char	*why;
	size_t		 i, j;

	if (wf->nintents > INTENT_EXTRA)
		return config_err(rd, n, "%s: at most %d intents of its own",
		    path, INTENT_EXTRA);
	for (i = 0; i < wf->nintents; i++) {
		if ((why = protocol_intent_check(wf->intents[i])) != NULL)
			return config_err(rd, n->nkids > i ? n->kids[i] : n,
			    "%s: '%s': %s", path, wf->intents[i], why);
		for (j = 0; j < i; j++)
			if (strcmp(wf->intents[i], wf->intents[j]) == 0)
				return config_err(rd, n->kids[i], "%s: '%s' is "
				    "listed twice", path, wf->intents[i]);
	}
	protocol_set_intents(wf->intents, wf->nintents);
	return 0;
}

/* Check that start: is an intent. */
static int
config_table_after_start(struct config_reader *rd,
    const struct config_key *k, void *base, const struct config_node *n,
    const char *path)
{
	struct workflow	*wf = base;

	if (protocol_intent(wf->start, strlen(wf->start)) < 0)
		return config_err(rd, n, "%s: '%s' is not an intent", path,
		    wf->start);
	return 0;
}

/* Check that join.then: is an intent. */
static int
config_table_after_then(struct config_reader *rd,
    const struct config_key *k, void *base, const struct config_node *n,
    const char *path)
{
	struct workflow	*wf = base;

	if (wf->join_then != NULL &&
	    protocol_intent(wf->join_then, strlen(wf->join_then)) < 0)
		return config_err(rd, n, "%s: '%s' is not an intent", path,
		    wf->join_then);
	return 0;
}

/*
 * Check heartbeat: once read.  A mapping without an interval turns
 * heartbeats on at the default interval (unless defaults: gave one); an
 * interval below 10 ms would keep the agent busy answering pings.
 */
static int
config_table_after_heartbeat(struct config_reader *rd,
    const struct config_key *k, void *base, const struct config_node *n,
    const char *path)
{
	struct agent_conf		*ac = base;
	const struct config_node	*x = n;

	if (n->type == CONFIG_MAPPING &&
	    (x = config_yaml_get(n, "interval")) == NULL) {
		if (ac->hb_interval == 0)
			ac->hb_interval = CONFIG_TABLE_HEARTBEAT;
		return 0;
	}
	if (ac->hb_interval != 0 && ac->hb_interval < 0.01)
		return config_err(rd, x, "%s: the interval must be at least "
		    "10ms", path);
	return 0;
}

/*
 * Keep restart delays sane: at least 1 s before a restart (a crashing
 * agent must not spin), and a largest delay no smaller than the first.
 */
static int
config_table_after_restart(struct config_reader *rd,
    const struct config_key *k, void *base, const struct config_node *n,
    const char *path)
{
	struct agent_conf	*ac = base;

	if (ac->backoff_min < 1)
		ac->backoff_min = 1;
	if (ac->backoff_max < ac->backoff_min)
		ac->backoff_max = ac->backoff_min;
	return 0;
}

/*
 * Note that the policy was written, not defaulted: a spawned agent is
 * temporary unless its entry says otherwise.
 */
static int
config_table_after_policy(struct config_reader *rd,
    const struct config_key *k, void *base, const struct config_node *n,
    const char *path)
{
	((struct agent_conf *)base)->restart_set = 1;
	return 0;
}

/* protocol: names one of the dialects corral knows. */
static int
config_table_after_protocol(struct config_reader *rd,
    const struct config_key *k, void *base, const struct config_node *n,
    const char *path)
{
	const char	*name = ((struct agent_conf *)base)->protocol, *d;
	char		 known[256];
	size_t		 i;

	if (name == NULL || dialect_find(name) != NULL)
		return 0;
	known[0] = '\0';
	for (i = 0; (d = dialect_table_name(i)) != NULL; i++) {
		if (i > 0)
			strlcat(known, ", ", sizeof known);
		strlcat(known, d, sizeof known);
	}
	return config_err(rd, n, "%s: unknown dialect \"%s\" (corral speaks "
	    "%s)", path, name, known);
}

/* Print agents:, each entry with every key. */
static void
config_table_print_agents(FILE *f, const struct config_key *k,
    const void *base, int indent)
{
	const struct workflow	*wf = base;
	size_t			 i;

	fprintf(f, "%*sagents:\n", indent, "");
	for (i = 0; i < wf->nagents; i++) {
		fprintf(f, "%*s%s:\n", indent + 2, "", wf->agents[i].name);
		config_print_map(f, CONFIG_AGENT, &wf->agents[i], "",
		    indent + 4);
	}
}

/* Print routes:, every row as a list. */
static void
config_table_print_routes(FILE *f, const struct config_key *k,
    const void *base, int indent)
{
	const struct workflow	*wf = base;
	const struct route_conf	*rc;
	char			 cap[160];
	size_t			 i, j;

	fprintf(f, "%*sroutes:%s\n", indent, "", wf->nroutes == 0 ? " {}" :
	    "");
	for (i = 0; i < wf->nroutes; i++) {
		rc = &wf->routes[i];
		fprintf(f, "%*s", indent + 2, "");
		config_print_str(f, rc->intent);
		fprintf(f, ": [");
		for (j = 0; j < rc->nnamed; j++)
			fprintf(f, "%s%s", j > 0 ? ", " : "",
			    rc->agents[j]->name);
		for (j = 0; j < rc->ncaps; j++) {
			snprintf(cap, sizeof cap, "capability:%s", rc->caps[j]);
			fprintf(f, "%s", j + rc->nnamed > 0 ? ", " : "");
			config_print_str(f, cap);
		}
		fprintf(f, "]\n");
	}
}

/* Print adapter: as the JSON the adapter checks. */
static void
config_table_print_adapter(FILE *f, const struct config_key *k,
    const void *base, int indent)
{
	const struct agent_conf	*ac = base;
	char			*s;

	if (ac->adapter == NULL)
		return;
	s = jsonw_dumps(ac->adapter_conf, CORRAL_JSON_FLAGS | JSON_SORT_KEYS);
	fprintf(f, "%*sadapter: %s\n", indent, "", s != NULL ? s : "{}");
	free(s);
}

/* Print env:, when there is any. */
static void
config_table_print_env(FILE *f, const struct config_key *k,
    const void *base, int indent)
{
	const struct agent_conf	*ac = base;
	size_t			 i;

	if (ac->nenv == 0)
		return;
	fprintf(f, "%*senv:\n", indent, "");
	for (i = 0; i < ac->nenv; i++) {
		fprintf(f, "%*s%s: ", indent + 2, "", ac->env[i].key);
		config_print_str(f, ac->env[i].value);
		fputc('\n', f);
	}
}

/* Print tools:, when the agent has any. */
static void
config_table_print_tools(FILE *f, const struct config_key *k,
    const void *base, int indent)
{
	const struct agent_conf	*ac = base;
	size_t			 i;
	int			 first = 1;

	if (ac->tools == 0)
		return;
	fprintf(f, "%*stools: [", indent, "");
	for (i = 0; config_table_tools[i] != NULL; i++) {
		if (!(ac->tools & (1U << i)))
			continue;
		fprintf(f, "%s%s", first ? "" : ", ", config_table_tools[i]);
		first = 0;
	}
	fputs("]\n", f);
}

/* Print limits:, the resource limits, in bytes and seconds. */
static void
config_table_print_rlimits(FILE *f, const struct config_key *k,
    const void *base, int indent)
{
	const struct agent_conf	*ac = base;
	const struct config_key	*r;
	const char		*name;
	size_t			 i;

	if (ac->nlimits == 0)
		return;
	fprintf(f, "%*slimits:\n", indent, "");
	for (i = 0; i < ac->nlimits; i++) {
		name = "?";
		for (r = config_table; r < config_table + config_table_size;
		    r++) {
			if (r->read == config_table_read_rlimit &&
			    r->arg == ac->limits[i].resource)
				name = config_key_leaf(r);
		}
		if (ac->limits[i].value == (long long)RLIM_INFINITY)
			fprintf(f, "%*s%s: unlimited\n", indent + 2, "", name);
		else
			fprintf(f, "%*s%s: %lld\n", indent + 2, "", name,
			    ac->limits[i].value);
	}
}

/* Print launch: when the agent has a launcher. */
static void
config_table_print_launch(FILE *f, const struct config_key *k,
    const void *base, int indent)
{
	const struct agent_conf	*ac = base;

	if (ac->launch.argc == 0)
		return;
	fprintf(f, "%*slaunch:\n", indent, "");
	config_print_map(f, CONFIG_AGENT, base, k->name, indent + 2);
}

/*
 * The name limits: gives a resource limit ("nofile"), or NULL: how a
 * launched agent's limits are passed to corral host on the far end.
 */
const char *
config_rlimit_name(int resource)
{
	const struct config_key	*r;

	for (r = config_table; r < config_table + config_table_size; r++)
		if (r->read == config_table_read_rlimit && r->arg == resource)
			return config_key_leaf(r);
	return NULL;
}

/* The resource limit a name of limits: stands for, or -1. */
int
config_rlimit_find(const char *name)
{
	const struct config_key	*r;

	for (r = config_table; r < config_table + config_table_size; r++)
		if (r->read == config_table_read_rlimit &&
		    strcmp(config_key_leaf(r), name) == 0)
			return r->arg;
	return -1;
}

/*
 * Read confine:.  A mapping merges with what defaults: gave, member by
 * member; `on` confines with the defaults' members; `off` lifts a
 * default confinement for this entry.  read: and connect: count from
 * being given at all: an empty list allows nothing.
 */
static int
config_table_read_confine(struct config_reader *rd,
    const struct config_key *k, void *base, const struct config_node *n,
    const char *path)
{
	struct confine			*c = &((struct agent_conf *)base)->confine;
	const struct config_node	*x;
	size_t				 i;
	int				 on;

	if (n->type == CONFIG_SCALAR) {
		if (n->quoted || (strcmp(n->str, "on") != 0 &&
		    strcmp(n->str, "off") != 0 && strcmp(n->str, "true") != 0 &&
		    strcmp(n->str, "false") != 0))
			return config_err(rd, n, "%s: expected on, off or a "
			    "mapping", path);
		on = strcmp(n->str, "on") == 0 || strcmp(n->str, "true") == 0;
		if (on) {
			c->flags |= CONFINE_ON;
			return 0;
		}
		config_list_free(c->write, c->nwrite);
		config_list_free(c->read, c->nread);
		config_list_free(c->connect, c->nconnect);
		memset(c, 0, sizeof *c);
		return 0;
	}
	if (config_read_map(rd, CONFIG_AGENT, base, "confine", n, path) != 0)
		return -1;
	c->flags |= CONFINE_ON;
	if (config_yaml_get(n, "read") != NULL)
		c->flags |= CONFINE_READ;
	if ((x = config_yaml_get(n, "connect")) != NULL)
		c->flags |= CONFINE_CONNECT;
	for (i = 0; i < c->nconnect; i++)
		if (confine_port(c->connect[i]) == -1)
			return config_err(rd, x, "%s.connect: %s is not a TCP "
			    "port (1 to 65535)", path, c->connect[i]);
	return 0;
}

/* Print a list of strings in flow style. */
static void
config_table_print_list(FILE *f, char *const *list, size_t n)
{
	size_t	i;

	fputc('[', f);
	for (i = 0; i < n; i++) {
		if (i > 0)
			fputs(", ", f);
		config_print_str(f, list[i]);
	}
	fputc(']', f);
}

/*
 * Print confine: when it is on.  read: and connect: only when given:
 * their absence means no limit, an empty list means nothing allowed.
 */
static void
config_table_print_confine(FILE *f, const struct config_key *k,
    const void *base, int indent)
{
	const struct confine	*c = &((const struct agent_conf *)base)->confine;
	unsigned int		 bit;
	int			 first = 0;

	if (!(c->flags & CONFINE_ON))
		return;
	fprintf(f, "%*sconfine: {write: ", indent, "");
	config_table_print_list(f, c->write, c->nwrite);
	if (c->flags & CONFINE_READ) {
		fputs(", read: ", f);
		config_table_print_list(f, c->read, c->nread);
	}
	if (c->flags & CONFINE_CONNECT) {
		fputs(", connect: ", f);
		config_table_print_list(f, c->connect, c->nconnect);
	}
	fprintf(f, ", required: %s", c->required ? "true" : "false");
	if (c->optional != 0) {
		fputs(", optional: [", f);
		for (bit = 1; bit != 0 && bit <= c->optional; bit <<= 1)
			if ((c->optional & bit) &&
			    confine_protection_key(bit) != NULL)
				fprintf(f, "%s%s", first++ ? ", " : "",
				    confine_protection_key(bit));
		fputc(']', f);
	}
	fputs("}\n", f);
}

/* Read one capability: a name, or a mapping {name, version, actions}. */
static json_t *
config_table_capability(struct config_reader *rd, const struct config_node *n,
    const char *path)
{
	const struct config_node	*name, *v;
	json_t				*c, *acts;
	size_t				 i;

	if (n->type == CONFIG_SCALAR) {
		if (n->len == 0 || n->len > 128)
			goto bad;
		return json_pack("{s:s}", "name", n->str);
	}
	if (n->type != CONFIG_MAPPING ||
	    (name = config_yaml_get(n, "name")) == NULL ||
	    name->type != CONFIG_SCALAR || name->len == 0 || name->len > 128)
		goto bad;
	for (i = 0; i < n->nkids; i += 2)
		if (n->kids[i]->type != CONFIG_SCALAR ||
		    (strcmp(n->kids[i]->str, "name") != 0 &&
		    strcmp(n->kids[i]->str, "version") != 0 &&
		    strcmp(n->kids[i]->str, "actions") != 0 &&
		    strcmp(n->kids[i]->str, "description") != 0)) {
			config_err(rd, n->kids[i], "%s: unknown key %s (name, "
			    "version, actions, description)", path,
			    n->kids[i]->type == CONFIG_SCALAR ?
			    n->kids[i]->str : "(not a plain string)");
			return NULL;
		}
	c = json_pack("{s:s}", "name", name->str);
	if ((v = config_yaml_get(n, "version")) != NULL) {
		if (v->type != CONFIG_SCALAR)
			goto badc;
		json_object_set_new(c, "version", json_string(v->str));
	}
	if ((v = config_yaml_get(n, "description")) != NULL) {
		if (v->type != CONFIG_SCALAR)
			goto badc;
		json_object_set_new(c, "description", json_string(v->str));
	}
	if ((v = config_yaml_get(n, "actions")) != NULL) {
		if (v->type != CONFIG_SEQUENCE)
			goto badc;
		acts = json_array();
		for (i = 0; i < v->nkids; i++) {
			if (v->kids[i]->type != CONFIG_SCALAR) {
				json_decref(acts);
				goto badc;
			}
			json_array_append_new(acts, json_string(v->kids[i]->str));
		}
		json_object_set_new(c, "actions", acts);
	}
	return c;
badc:
	json_decref(c);
bad:
	config_err(rd, n, "%s: expected a capability: a name, or a mapping "
	    "with name (1 to 128 bytes), version, actions (a list)", path);
	return NULL;
}

/* Read capabilities:, a list of capabilities (docs/topics.md). */
static int
config_table_read_capabilities(struct config_reader *rd,
    const struct config_key *k, void *base, const struct config_node *n,
    const char *path)
{
	struct agent_conf	*ac = base;
	json_t			*list, *c;
	size_t			 i;
	char			 p[256];

	if (n->type != CONFIG_SEQUENCE)
		return config_err(rd, n, "%s: expected a list of capabilities",
		    path);
	list = json_array();
	for (i = 0; i < n->nkids; i++) {
		snprintf(p, sizeof p, "%s[%zu]", path, i);
		if ((c = config_table_capability(rd, n->kids[i], p)) == NULL) {
			json_decref(list);
			return -1;
		}
		json_array_append_new(list, c);
	}
	if (ac->capabilities != NULL)
		json_decref(ac->capabilities);
	ac->capabilities = list;
	return 0;
}

/* Print capabilities: one flow mapping per capability. */
static void
config_table_print_capabilities(FILE *f, const struct config_key *k,
    const void *base, int indent)
{
	const struct agent_conf	*ac = base;
	json_t			*c;
	char			*s;
	size_t			 i;

	if (json_array_size(ac->capabilities) == 0)
		return;
	fprintf(f, "%*scapabilities:\n", indent, "");
	json_array_foreach(ac->capabilities, i, c) {
		s = jsonw_dumps(c, JSON_COMPACT | JSON_PRESERVE_ORDER);
		fprintf(f, "%*s- %s\n", indent + 2, "", s != NULL ? s : "{}");
		free(s);
	}
}
