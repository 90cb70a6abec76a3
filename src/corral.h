/*
 * corral's internal header: the shared structures, then one block of
 * prototypes per source file, so this header doubles as an index of the
 * modules.
 */

#ifndef CORRAL_H
#define CORRAL_H

#include <sys/types.h>
#include <sys/wait.h>
#include <sys/queue.h>
#include <sys/tree.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <ev.h>
#include <jansson.h>

#include "corral/protocol.h"

/*
 * Ownership the compiler sees.  Each part of struct agent, and the route's
 * item in struct msg, is one module's: a file of another module that names
 * it does not compile ("'life' is unavailable: a part of module
 * lifecycle"); that module gives the others functions.  CMakeLists.txt
 * defines CORRAL_MODULE_<name> for every file of module <name> (NAME.c and
 * NAME-PART.c); tests that look inside define CORRAL_WHITEBOX.
 * tests/layering.sh checks that a planted use fails.
 */
#if defined(__has_attribute)
#if __has_attribute(unavailable)
#define CORRAL_PRIVATE(m) __attribute__((unavailable("a part of module " m)))
#endif
#endif
#ifndef CORRAL_PRIVATE
#define CORRAL_PRIVATE(m) __attribute__((deprecated("a part of module " m)))
#endif
#define PART_OF(m)	PART_OF_##m
#if defined(CORRAL_MODULE_agent) || defined(CORRAL_WHITEBOX)
#define PART_OF_agent
#else
#define PART_OF_agent	CORRAL_PRIVATE("agent")
#endif
#if defined(CORRAL_MODULE_adapter) || defined(CORRAL_WHITEBOX)
#define PART_OF_adapter
#else
#define PART_OF_adapter	CORRAL_PRIVATE("adapter")
#endif
#if defined(CORRAL_MODULE_dialect) || defined(CORRAL_WHITEBOX)
#define PART_OF_dialect
#else
#define PART_OF_dialect	CORRAL_PRIVATE("dialect")
#endif
#if defined(CORRAL_MODULE_lifecycle) || defined(CORRAL_WHITEBOX)
#define PART_OF_lifecycle
#else
#define PART_OF_lifecycle	CORRAL_PRIVATE("lifecycle")
#endif
#if defined(CORRAL_MODULE_launch) || defined(CORRAL_WHITEBOX)
#define PART_OF_launch
#else
#define PART_OF_launch	CORRAL_PRIVATE("launch")
#endif
#if defined(CORRAL_MODULE_breaker) || defined(CORRAL_WHITEBOX)
#define PART_OF_breaker
#else
#define PART_OF_breaker	CORRAL_PRIVATE("breaker")
#endif
#if defined(CORRAL_MODULE_budget) || defined(CORRAL_WHITEBOX)
#define PART_OF_budget
#else
#define PART_OF_budget	CORRAL_PRIVATE("budget")
#endif
#if defined(CORRAL_MODULE_route) || defined(CORRAL_WHITEBOX)
#define PART_OF_route
#else
#define PART_OF_route	CORRAL_PRIVATE("route")
#endif
#if defined(CORRAL_MODULE_engine) || defined(CORRAL_WHITEBOX)
#define PART_OF_engine
#else
#define PART_OF_engine	CORRAL_PRIVATE("engine")
#endif
#if defined(CORRAL_MODULE_proc) || defined(CORRAL_WHITEBOX)
#define PART_OF_proc
#else
#define PART_OF_proc	CORRAL_PRIVATE("proc")
#endif
#if defined(CORRAL_MODULE_mapview) || defined(CORRAL_WHITEBOX)
#define PART_OF_mapview
#else
#define PART_OF_mapview	CORRAL_PRIVATE("mapview")
#endif
#if defined(CORRAL_MODULE_subagent) || defined(CORRAL_WHITEBOX)
#define PART_OF_subagent
#else
#define PART_OF_subagent	CORRAL_PRIVATE("subagent")
#endif

/* Exit statuses of corral run (docs/corral.1). */
#define EXIT_WORKFLOW	1	/* the workflow ended in an error */
#define EXIT_USAGE	2	/* bad command line or workflow file */
#define EXIT_INTERRUPT	130	/* SIGINT; SIGTERM gives 143 */

#define CORRAL_ID_MAX	64	/* longest trace id corral stores */

/*
 * How corral serializes JSON it builds: compact, and reals with 15
 * significant digits, so 0.9 prints as 0.9 rather than 0.90000000000000002.
 */
#define CORRAL_JSON_FLAGS	(JSON_COMPACT | JSON_REAL_PRECISION(15))
/* How it parses JSON with jansson: duplicate keys are errors. */
#define CORRAL_JSON_LOAD	(JSON_REJECT_DUPLICATES)

/*
 * The intents of multiagent-1.0.  A workflow may add up to INTENT_EXTRA
 * of its own (intents:), numbered from INTENT_COUNT; INTENT_MAX, after
 * them all, is the index of the "*" fallback route.
 */
enum intent {
	INTENT_PLAN,
	INTENT_DECOMPOSE,
	INTENT_EXECUTE,
	INTENT_ROUTE,
	INTENT_RETRIEVE,
	INTENT_ANALYZE,
	INTENT_SUMMARIZE,
	INTENT_REFLECT,
	INTENT_FINALIZE,
	INTENT_TOOL_CALL,
	INTENT_COUNT
};
#define INTENT_EXTRA	32
#define INTENT_MAX	(INTENT_COUNT + INTENT_EXTRA)
#define INTENT_NAME_MAX	32	/* bytes in a workflow's own intent */
#define ROUTE_FALLBACK	INTENT_MAX
#define ROUTE_ENTRY	(-1)	/* a row of one workflow entry (a step's) */

/* Priorities, as seed 001 numbers them. */
enum prio {
	PRIO_BATCH,
	PRIO_LOW,
	PRIO_NORMAL,
	PRIO_HIGH,
	PRIO_CRITICAL,
	PRIO_COUNT
};

/*
 * Agent lifecycle states; docs/lifecycle.md maps them onto MAP's.  The
 * first eight are the states people see.  The last three are steps
 * within them that the stop sequence and restarts need: they show as
 * STOPPING (TERMINATING, KILLING) and STOPPED (BACKOFF).
 */
enum agent_state {
	AS_INITIALIZING,	/* spawned, not ready yet */
	AS_READY,
	AS_BUSY,
	AS_UNAVAILABLE,
	AS_SUSPENDED,
	AS_STOPPING,		/* stdin closed: the grace period runs */
	AS_STOPPED,		/* no process, and none is due */
	AS_FAILED,		/* will not be started again */
	AS_TERMINATING,		/* STOPPING: SIGTERM sent */
	AS_KILLING,		/* STOPPING: SIGKILL sent */
	AS_BACKOFF,		/* STOPPED: a restart is due */
	AS_COUNT
};

/* Events that drive the lifecycle table. */
enum agent_event {
	AE_SPAWNED,	/* process started */
	AE_HANDSHAKE,	/* map/connect received, or ready at spawn */
	AE_WORK,	/* first outstanding message */
	AE_IDLE,	/* last outstanding message answered */
	AE_MISSED,	/* heartbeats missed */
	AE_ALIVE,	/* activity after being unavailable */
	AE_SIGSTOP,	/* the process was stopped by a signal */
	AE_SIGCONT,	/* the process was continued */
	AE_TIMEOUTS,	/* too many consecutive message timeouts */
	AE_SUSPEND,	/* map/agents/suspend */
	AE_RESUME,	/* map/agents/resume */
	AE_STOP,	/* stop for good */
	AE_EXITED,	/* reaped and both output pipes at EOF */
	AE_RESTART,	/* stop, then start again (a restart strategy) */
	AE_GIVEUP,	/* will not be started again */
	AE_START,	/* start the process */
	AE_TIMER,	/* the life timer ran out: the next stop step, or the
			   end of the backoff */
	AE_REAPED,	/* exited, but something still holds its pipes */
	AE_BROKEN,	/* a pipe closed while the process runs on */
	AE_KILL,	/* kill at once (a second interrupt) */
	AE_RESTART_DUE,	/* it ended, and its restart policy starts it again */
	AE_COUNT
};

enum restart_policy {
	RESTART_PERMANENT,
	RESTART_TRANSIENT,
	RESTART_TEMPORARY
};

enum ready_mode {
	READY_SPAWN,
	READY_HANDSHAKE
};

enum missing_confidence {
	MISSING_ACCEPT,
	MISSING_REFLECT
};

enum child_strategy {
	STRATEGY_ONE_FOR_ONE,
	STRATEGY_ONE_FOR_ALL,
	STRATEGY_REST_FOR_ONE
};

/* jscan.c: a token of the scanner's tape. */
enum jtype {
	JT_OBJECT = 1,
	JT_ARRAY,
	JT_STRING,
	JT_NUMBER,
	JT_TRUE,
	JT_FALSE,
	JT_NULL
};
#define JT_ESCAPED	0x01	/* string holds backslash escapes */
#define JT_INTEGER	0x02	/* number has no fraction or exponent */
#define JT_OPAQUE	0x04	/* container whose children were not recorded */

struct jtok {
	uint32_t	off;	/* offset of the value's first byte */
	uint32_t	len;	/* raw length of the value */
	uint32_t	next;	/* index of the token after this value */
	uint8_t		type;
	uint8_t		flags;
};

/* jscan.c: how a scanner finds a line's structure. */
enum jscan_path {
	JSCAN_SCALAR,	/* byte by byte, in portable C */
	JSCAN_SSE2,	/* 16 bytes at a time with SSE2 (any x86-64) */
	JSCAN_AVX2	/* 32 with AVX2, where the CPU has it */
};

struct jscan_frame;
struct jscan_key;
struct jscan {
	struct jtok		*tok;
	uint32_t		 ntok;
	uint32_t		 tokcap;
	unsigned int		 maxlevel;
	struct jscan_frame	*frames;
	struct jscan_key		*keys;
	uint32_t		 nkeys;
	uint32_t		 keycap;
	size_t			 nvals;		/* values and keys, any depth */
	uint32_t		*table;
	uint32_t		 tablecap;
	char			*tmp;
	size_t			 tmpcap;
	const char		*err;
	size_t			 err_off;
	/* The tape's tokens 1 to memo_ntok are those of the memo so stamped. */
	uint64_t		 memo_stamp;
	uint32_t		 memo_ntok;
};

/* ndjson.c: what the line reader hands to its callback. */
enum ndjson_kind {
	NDJSON_LINE,	/* a complete line */
	NDJSON_TOOLONG,	/* a line over the maximum was dropped; arg: size */
	NDJSON_NUL,	/* a line holding a NUL byte; arg: its offset */
	NDJSON_CUT	/* truncate mode: the start of a long line */
};
typedef void (*ndjson_line_cb)(void *, enum ndjson_kind, char *, size_t,
    size_t);

#define NDJSON_HEAD	256	/* of a line too long, handed out */

/*
 * Lengths are 32 bits: a line is at most NDJSON_MAX (max_line is at most
 * 256 MiB), so what is held never nears 4 GiB.  Every agent has two of
 * these, held while it idles: kept small.
 */
#define NDJSON_MAX	(1U << 30)
struct ndjson_reader {
	char		*buf;		/* the partial line */
	char		*head;		/* the start of a line discarded */
	uint64_t	 discarded;	/* a hostile line may pass 4 GiB */
	uint32_t	 len;
	uint32_t	 cap;
	uint32_t	 max;
	uint16_t	 headlen;
	unsigned int	 last_cr:1;	/* the last byte discarded was '\r' */
	unsigned int	 discarding:1;
	unsigned int	 truncate:1;
	unsigned int	 stop:1;	/* hand out no more lines of this chunk */
	unsigned int	 held:1;	/* buf holds the rest of a stopped chunk */
	unsigned int	 nul_held:1;	/* the partial line has a NUL byte */
};

struct ndjson_writer {
	char	*buf;
	size_t	 head;
	size_t	 tail;
	size_t	 cap;
	size_t	 low;
	size_t	 high;
	size_t	 written;
};

/*
 * ndjson-queue.c: a channel's outgoing lines, in chunks written with
 * writev.  Empty, it holds no memory.
 */
struct ndjson_chunk;
/*
 * A long line shared by its owner (a request) and the queues it is
 * written to, freed when the last lets go (ndjson-queue.c): a queue
 * refers to it instead of copying it.  Its bytes, with a NUL after
 * them, are not changed while it is shared.
 */
struct ndjson_buf {
	char			*p;
	size_t			 len;
	uint32_t		 cap;	/* the memory it holds */
	uint32_t		 refs;
	int			 taken;	/* p is a reader's buffer (ndjson_take) */
};

struct ndjson_queue {
	struct ndjson_chunk	*first;
	struct ndjson_chunk	*last;
	size_t			 queued;
	uint32_t		 low;
	uint32_t		 high;	/* at most NDJSON_MAX and a mark */
};

/* jsonw.c: a JSON text being built; commas and colons are its business. */
#define JSONW_DEPTH	16
struct jsonw {
	struct ndjson_writer	 w;
	unsigned int		 count[JSONW_DEPTH];	/* members so far */
	int			 depth;
	int			 after_key;
};

/* config.c: a workflow file. */
struct env_var {
	char	*key;
	char	*value;
};

struct rlimit_conf {
	int	 resource;
	long long value;	/* -1: leave as inherited */
};

/*
 * confine: (docs/workflow.md): the agent's Landlock policy.  The lists
 * belong to the workflow; copies of the struct share them.
 */
struct confine {
	int			 flags;
#define CONFINE_ON	 0x01	/* confine: given */
#define CONFINE_READ	 0x02	/* read: given: reads only there */
#define CONFINE_CONNECT	 0x04	/* connect: given: TCP only to those */
	int			 required;
	unsigned int		 optional;	/* CONFINE_P_*: may be missing */
	char			**write;
	size_t			 nwrite;
	char			**read;
	size_t			 nread;
	char			**connect;	/* ports, as written */
	size_t			 nconnect;
	const char		*home;	/* its adapter's config dir, "$VAR" */
};

/*
 * launch: (docs/scale-out.md): the program an agent's command runs
 * through (ssh, srun, a container engine), a template, and the machines it
 * may be placed on.  The lists belong to the workflow; copies of the
 * struct in sub-agents' settings share them.
 */
enum launch_place {
	LAUNCH_ROUND_ROBIN,
	LAUNCH_LEAST_LOADED
};
#define CONFIG_LAUNCH_HOSTS	256	/* in one launch.hosts, at most */
struct launch_conf {
	char			**argv;		/* templates; NULL: run here */
	size_t			 argc;
	char			**hosts;
	size_t			 nhosts;
	enum launch_place	 place;
	int			 stay;		/* a restart stays where it was */
	char			*corral;	/* corral on the far end */
	double			 alive;		/* ticks and keepalives */
	double			 lost;		/* silent that long: lost */
	unsigned int		 failures;	/* in a row: the host is out */
	double			 reset;		/* for that long */
};

/*
 * A parent's confinement, carried to a sub-agent corral starts: applied
 * as a Landlock layer of its own, so the child gets no more than the
 * parent had.  Its strings belong to the workflow.
 */
struct confine_layer {
	struct confine		 c;
	const char		*cwd;	/* the parent's cwd:, as written */
	const struct env_var	*env;	/* the parent's env: */
	size_t			 nenv;
};

struct agent_conf {
	char			*name;
	int			 line;
	int			 column;
	char			**argv;		/* NULL-terminated */
	size_t			 argc;
	char			*cwd;
	struct env_var		*env;
	size_t			 nenv;
	char			*role;
	char			*description;
	char			*protocol;	/* its dialect; NULL: the default */
	unsigned int		 instances;
	int			 autostart;	/* started with the workflow */
	enum ready_mode		 ready;
	double			 hb_interval;	/* 0: heartbeats off */
	unsigned int		 hb_misses;
	enum restart_policy	 restart;
	unsigned int		 restart_max;
	unsigned int		 failed_starts;	/* in a row: FAILED */
	double			 restart_within;
	double			 backoff_min;
	double			 backoff_max;
	size_t			 max_line;
	unsigned int		 max_inflight;
	double			 timeout;	/* per message */
	double			 stop_grace;
	double			 stop_timeout;
	/* Sub-agent trees. */
	unsigned int		 max_children;
	unsigned int		 max_depth;
	enum child_strategy	 strategy;
	/* Reliability. */
	unsigned int		 breaker_failures;
	double			 breaker_reset;
	unsigned int		 breaker_probes;
	double			 budget_tokens;	/* per subtree, 0: none */
	double			 budget_cost;
	double			 budget_time;
	int			 restart_set;	/* restart: given explicitly */
	/* Security. */
	struct rlimit_conf	*limits;
	size_t			 nlimits;
	char			*user;
	struct confine		 confine;
	struct confine_layer	*confine_up;	/* its parents' */
	size_t			 nconfine_up;
	struct launch_conf	 launch;
	/* Adapters (docs/adapters.md). */
	char			*adapter;
	json_t			*adapter_conf;
	unsigned int		 tools;		/* offered to its CLI: TOOL_* */
	/* Topics and discovery (docs/topics.md). */
	char			**subscribe;	/* topics it joins at start */
	size_t			 nsubscribe;
	/* The entries it needs: they start before it and stop after it. */
	char			**depends_on;
	size_t			 ndepends_on;
	unsigned int		*deps;		/* their indexes */
	json_t			*capabilities;	/* [{name, version, actions}] */
#define TOOL_SPAWN	0x01
#define TOOL_WAIT	0x02
#define TOOL_SEND	0x04
#define TOOL_LIST	0x08
#define TOOL_STOP	0x10
	/* Filled in at load time. */
	unsigned int		 index;
	int			 own;		/* a child's copy (subagent.c) */
#define CONF_OWN	0x01
#define CONF_OWN_ARGV	0x02
#define CONF_OWN_LIMITS	0x04
#define CONF_OWN_CONFINE 0x08
	/*
	 * A child's copy: frees it after every module forgot its agent
	 * (subagent.c); NULL: shared by its entry's agents.
	 */
	void			(*conf_free)(struct agent_conf *);
};

/* What a step's success: false with proceed does (success_false:). */
enum step_false {
	SF_ESCALATE,
	SF_RETRY,
	SF_FAIL,
	SF_PROCEED
};

/*
 * config-steps.c: one step of steps: (docs/steps.md).  next and back are
 * filled in once every step is read: indexes into the workflow's steps.
 */
#define STEP_END	(-1)	/* proceed: end */
struct step_conf {
	char			*name;
	int			 line;
	int			 column;
	char			*agent_name;	/* agent:, as written */
	struct agent_conf	*agent;		/* or NULL: routed by intent */
	char			*intent;	/* intent:, as written */
	char			*capability;	/* capability:, as written */
	char			*action;
	json_t			*params;	/* an object, or NULL */
	char			*proceed;	/* as written; NULL: the next */
	char			*retry;		/* as written; NULL: this one */
	unsigned int		 max_iterations;
	int			 success_false;	/* enum step_false */
	unsigned int		 index;
	int			 next;		/* proceed: a step, or STEP_END */
	int			 back;		/* retry: a step */
};

struct route_conf {
	char		 *intent;	/* as written; "*" for the fallback */
	int		  line;
	int		  column;
	/* The entries named, then those that declare one of caps. */
	struct agent_conf **agents;
	size_t		  nagents;
	size_t		  nnamed;
	char		**caps;		/* capability:NAME targets */
	size_t		  ncaps;
};

struct workflow {
	char			*path;
	char			*dir;		/* the file's directory */
	char			*name;
	char			*description;
	char			*start;		/* first intent of corral run */
	int			 start_line;	/* where a warning about start: */
	int			 start_column;	/* points: it, routes: or the top */
	struct agent_conf	*agents;
	size_t			 nagents;
	struct route_conf	*routes;
	size_t			 nroutes;
	double			 refl_below;
	unsigned int		 refl_max_rounds;
	enum missing_confidence	 refl_missing;
	int			 join_first;	/* join.wait: first, else all */
	char			*join_then;	/* join.then: an intent, or NULL */
	unsigned int		 max_steps;
	unsigned int		 max_depth;	/* lineage depth of a job */
	double			 deadline;	/* seconds; 0: none */
	unsigned int		 max_queue;	/* messages waiting per route */
	size_t			 max_memory;	/* bytes in requests, results */
	unsigned int		 max_inflight;	/* jobs in flight in serve */
	unsigned int		 max_agents;	/* alive at once */
	unsigned int		 tree_depth;	/* sub-agent depth */
	unsigned int		 tree_children;
	double			 budget_tokens;
	double			 budget_cost;
	double			 budget_time;
	double			 task_tokens;	/* limits.task_budget */
	double			 task_cost;
	int			 inline_spawn;	/* map/agents/spawn with cmd */
	int			 shutdown_parallel; /* stop all at once */
	size_t			 stdin_max_line; /* serve --max-line, 0: auto */
	char			**agent_path;	/* where bare commands are found */
	size_t			 npath;
	char			**env_allow;
	size_t			 nenv_allow;
	char			**intents;	/* its own, beyond the ten */
	size_t			 nintents;
	char			*workspace;
	unsigned int		 retries;
	double			 retry_initial;
	double			 retry_factor;
	double			 retry_max;
	/* Steps (docs/steps.md). */
	struct step_conf	*steps;
	size_t			 nsteps;
	struct env_var		*paths;		/* name, template */
	size_t			 npaths;
	int			 paths_absolute;
	char			*feature_id;
	unsigned int		 max_iterations;
	int			 update_missing;	/* update may create */
	int			 create_existing;	/* create may replace */
};

/* A problem in a workflow file, with its position. */
struct config_problem {
	int	line;
	int	column;
	char	msg[512];
};

/*
 * What loading a workflow file found wrong: the first error, then the
 * next ones (a file's problems are all reported, up to CONFIG_ERRORS).
 */
#define CONFIG_ERRORS	20
struct config_error {
	int			line;		/* the first error */
	int			column;
	char			msg[512];
	unsigned int		count;		/* errors found, all of them */
	struct config_problem	more[CONFIG_ERRORS - 1];
};

/* A key of the workflow file as docs/workflow.md's key tables show it. */
struct config_keyinfo {
	const char	*name;		/* in its mapping's scope: restart.max */
	int		 agent;		/* a key of agents: (and defaults:) */
	int		 step;		/* a key of a step of steps: */
	int		 mapping;	/* holds keys of its own */
	const char	*dflt;		/* as a file writes it; NULL: none */
	char		 type[128];	/* the doc's type column */
	const char	*doc;
};

/* chan.c: a pair of pipe ends carrying NDJSON, with backpressure. */
struct chan;
typedef void (*chan_line_cb)(struct chan *, enum ndjson_kind, char *, size_t,
    size_t);
typedef void (*chan_event_cb)(struct chan *, int);

struct chan_wait;

/* What a channel tells its owner: one table per kind of owner. */
struct chan_ops {
	chan_line_cb		 line;
	chan_event_cb		 eof;		/* arg: 0 read EOF */
	chan_event_cb		 werror;	/* arg: errno */
	chan_event_cb		 drain;		/* writer went below low */
};

struct chan {
	int			 rfd;
	int			 wfd;
	ev_io			 rw;
	ev_io			*ww;		/* NULL until a write waits */
	struct ndjson_reader	*rd;		/* NULL until a byte is read */
	struct ndjson_queue	*wr;		/* NULL until a line is queued */
	const struct chan_ops	*ops;		/* its owner's, shared */
	void			*owner;
	const char		*name;
	uint32_t		 max;		/* its lines' limit */
	int			 flags;
#define CHAN_DIRTY	0x01	/* on the dirty list */
#define CHAN_RPAUSED	0x02	/* reading paused by backpressure */
#define CHAN_REOF	0x04	/* read side reached EOF */
#define CHAN_WCLOSED	0x08	/* write side closed */
#define CHAN_WFULL	0x10	/* writer above its high watermark */
#define CHAN_RSTOPPED	0x20	/* reading stopped by the owner */
#define CHAN_RESUME	0x40	/* on the resume list */
#define CHAN_FEEDING	0x80	/* its reader is handing out lines */
	/* Backpressure's links (chan.c); NULL until it first blocks. */
	struct chan_wait	*wait;
	TAILQ_ENTRY(chan)	 dirty_entry;
};

/*
 * proc.c: a child process, an agent's or a per-call adapter's: its pid,
 * its stderr (logged, its head and tail kept), its end (reaped, and both
 * output pipes at EOF).  Its owner reads stdout and hears of its end.
 */
struct proc;
struct proc_stderr;

/*
 * proc.c: the timer for a process's held or closed pipes, and which pipe
 * closed: made on first use, since most processes end with their pipes
 * at EOF, and idle ones never do.
 */
struct proc_pipe {
	ev_timer	 w;
	const char	*what;
};
struct proc_hooks {
	void	(*done)(struct proc *);		/* reaped, both pipes at EOF */
	void	(*exited)(struct proc *);	/* reaped (before done) */
	/* Exited, but something it left holds its pipes past the grace. */
	void	(*held)(struct proc *);
	/* A pipe closed (what) and the process runs on. */
	void	(*broken)(struct proc *, const char *);
	/* Stopped by a signal (its number) or continued (0): agents. */
	void	(*stopped)(struct proc *, int);
	/* A stderr line, read first: nonzero keeps it from the log. */
	int	(*errline)(struct proc *, const char *, size_t);
};
struct proc {
	pid_t			 pid PART_OF(proc);	/* as corral sees it */
	pid_t			 hostpid PART_OF(proc);	/* as a shell does */
	int			 status PART_OF(proc);	/* from waitpid */
	int			 flags PART_OF(proc);
#define PROC_EXITED	0x01	/* exit status reaped */
#define PROC_OUT_EOF	0x02	/* stdout at EOF */
#define PROC_ERR_EOF	0x04	/* stderr at EOF */
#define PROC_DONE	0x08	/* all three: done was called */
#define PROC_LIVE	0x10	/* its pid is not reaped (proc_find) */
#define PROC_QUIET	0x20	/* its stderr to the debug log */
#define PROC_TRACE	0x40	/* hears of stops and continues */
#define PROC_FEEDING	0x80	/* its stderr reader hands out lines */
	/* stderr's read end (-1: closed), in proc.c's epoll set. */
	int			 errfd PART_OF(proc);
	struct proc_pipe	*pipe_w PART_OF(proc);	/* held, or closed */
	double			 grace PART_OF(proc);	/* for held pipes */
	/* Its reader, head and tail: made at its first byte. */
	struct proc_stderr	*err PART_OF(proc);
	const char		*name PART_OF(proc);	/* in the log */
	const struct proc_hooks	*hooks PART_OF(proc);
	void			*owner PART_OF(proc);
	struct proc		*hnext PART_OF(proc);	/* proc.c's pid table */
};

/* agent.c: an agent's process and its pipes (written by agent.c only). */
struct agent_proc {
	struct proc		 p;		/* the process (proc.c) */
	struct chan		 io;		/* stdin and stdout */
	ev_tstamp		 spawned_at;
	uint64_t		 msgs_in;
	uint64_t		 msgs_out;
};

/*
 * lifecycle.c: what an agent that restarted, exited, failed, timed out or
 * waits to stop keeps (struct life's more): most agents idle and need
 * none.
 */
struct life_more {
	ev_timer		 recover_w;	/* unavailable from timeouts */
	ev_tstamp		*restarts;	/* recent restart times, a ring */
	unsigned int		 nrestarts;
	unsigned int		 restart_count;
	char			*stop_why;	/* of a pending stop */
	char			*cause;		/* why it failed for good */
	char			*last_exit;	/* its last exit, and stderr */
};

/* lifecycle.c: where an agent is in its life (written by lifecycle.c). */
struct life {
	enum agent_state	 state;
	int			 flags;
#define LF_NOT_READY	0x01	/* no handshake yet */
#define LF_MISSED	0x02	/* unavailable from missed heartbeats */
#define LF_TIMEDOUT	0x04	/* unavailable from message timeouts */
#define LF_NORESTART	0x08	/* stop for good */
#define LF_RESTART_REQ	0x10	/* restart after this exit, whatever it is */
#define LF_STOP_ASKED	0x20	/* corral began stopping this process */
#define LF_STOP_PENDING	0x40	/* stops once its children have */
#define LF_SPOKE	0x80	/* wrote a line, or became ready by itself */
#define LF_FAULT	0x100	/* stopped for a fault: its exit is abnormal */
#define LF_HB		0x200	/* the timer counts heartbeats */
#define LF_PINGED	0x400	/* a heartbeat ping is unanswered */
	/*
	 * One timer: heartbeats while it runs (LF_HB), then the stop steps
	 * and the backoff, which begin where heartbeats end.  Made when
	 * first armed: heartbeats are off by default, so an idle agent
	 * seldom has one.
	 */
	ev_timer		*life_w;
	/*
	 * Its restarts, exits, causes, a pending stop's reason and the
	 * timeouts' recovery timer: NULL until the first of them.
	 */
	struct life_more	*more;
	ev_tstamp		 last_activity;
	unsigned int		 hb_missed;
	unsigned int		 timeouts;	/* consecutive */
	unsigned int		 outstanding;	/* requests it holds */
	unsigned int		 window;	/* adaptive: it may hold */
	unsigned int		 failed_starts;	/* exits in a row before a line */
	int			 policy;	/* restart policy; -1: entry's */
	uint64_t		 start_seq;
};

/*
 * route.c: where a request waits, embedded in the request (written by
 * route.c).  Routing reads the request's fields and writes only these.
 */
struct route;
struct route_item {
	TAILQ_ENTRY(route_item)	 entry;		/* a queue */
	struct route		*row;		/* NULL: its target's queue */
	int			 queued;
};
TAILQ_HEAD(route_itemq, route_item);

/* route.c: an agent as a candidate for work (written by route.c). */
struct msg;
TAILQ_HEAD(msgq, msg);
struct slot {
	TAILQ_ENTRY(agent)	 pool_entry;	/* its workflow entry's pool */
	uint64_t		 last_pick;
	struct route_itemq	 direct;	/* waiting for it alone */
	unsigned int		 held;		/* for retries */
	unsigned char		 in_pool;
	unsigned char		 kicking;	/* in route_kick */
};

/* breaker.c: an agent's circuit breaker (written by breaker.c). */
struct breaker {
	int			 state;
#define BREAKER_CLOSED	0
#define BREAKER_OPEN	1
#define BREAKER_HALF	2
	unsigned int		 failures;
	unsigned int		 probes;
	unsigned int		 opens;
	ev_tstamp		 opened_at;
	ev_timer		 timer;
};

/* budget.c: what a subtree used and may use (written by budget.c). */
struct budget {
	double			 tokens;	/* subtree totals */
	double			 cost;
	double			 max_tokens;	/* 0: none */
	double			 max_cost;
	double			 max_time;
	ev_timer		 timer;
};

/*
 * dialect.c: what an agent speaks now, and its bad lines (written by
 * dialect.c).
 */
struct dialect;
struct dialect_trouble;
struct dialect_memo;
#define DIALECT_MEMOS	512	/* scanner's memos kept, the most recent */
struct agent_dialect {
	const struct dialect	*d;		/* NULL: its entry's, once used */
	void			*state;		/* the dialect's own */
	/* Bad lines, warnings, dropped notices: NULL until the first. */
	struct dialect_trouble	*trouble;
	struct dialect_memo	*memo;		/* its lines' (jscan_run_memo) */
	unsigned char		 answered;	/* answered a request, or spoke JSON-RPC */
	unsigned char		 failed_output;	/* failed for non-JSON output */
	unsigned char		 adapted;	/* a tool's: its lines are its adapter's */
};

/* engine.c: the latest progress an agent reported on its work. */
struct work_progress {
	char			*text;
	char			 req[CORRAL_ID_MAX];	/* the request's */
	ev_tstamp		 at;
};

/*
 * engine.c: the requests an agent works on (written by engine.c), made
 * at its first: most idle agents never had one.
 */
struct work_busy {
	unsigned int		 by_prio[PRIO_COUNT];	/* of inflight */
	struct msgq		 inflight;	/* sent, awaiting a reply */
	struct work_progress	*progress;	/* NULL: none */
};
struct work {
	struct work_busy	*busy;		/* NULL: no request yet */
};

/* subagent.c: a spawned child's task and limits (written by subagent.c). */
struct child {
	struct msg		*task;		/* its initial task, open */
	char			*spawn_id;	/* the task's trace id */
	int			 keep;		/* stays after its task */
	unsigned int		 limit_depth;
	unsigned int		 limit_children;
	double			 task_timeout;
	char			*last_reply;	/* its latest envelope */
	size_t			 last_reply_len;
	int			 last_reply_error;
	char			*via;		/* the MCP session that spawned it */
	int			 finished;	/* in the history (subagent.c) */
	TAILQ_ENTRY(agent)	 history;
	ev_tstamp		 refused_at;	/* log rate limit of refusals */
	unsigned int		 refused_logged;
	unsigned int		 refused_dropped;
};

/*
 * rpc.c: someone corral speaks JSON-RPC with: an agent on its pipes, or a
 * client (a control socket connection, corral serve's stdin).  Its name
 * is its MAP participantId.
 */
struct peer_batch;
struct peer {
	const char		*name;		/* in logs; its participantId */
	struct agent		*agent;		/* NULL: not an agent */
	struct chan		*chan;		/* where frames go */
	uint8_t			 role;
#define PEER_AGENT	0x01	/* an agent process on its pipes */
#define PEER_CLIENT	0x02	/* a client (socket, corral serve's stdin) */
#define PEER_DELEGATE	0x04	/* a connection acting for its agent */
	uint8_t			 nsubs;		/* its subscriptions (event.c) */
	uint16_t		 flags;
#define PEER_CONNECTED	0x01	/* map/connect answered */
#define PEER_ORPHAN	0x02	/* its agents outlive it */
#define PEER_MAPAGENT	0x04	/* connected as participantType "agent" */
#define PEER_LISTED	0x08	/* among the participants (rpc_peer_add) */
#define PEER_SOCKET	0x10	/* a connection to the control socket */
#define PEER_INSIDE	0x20	/* from inside: an agent's processes */
#define PEER_HANGUP	0x40	/* close it once this answer is out */
	uint32_t		 ping_seq;	/* wraps: ids are not matched */
	/* What a connection says of itself (rpc_conn); NULL: nothing. */
	struct peer_conn	*conn;
	/* A batch's answers and the frames after them (rpc.c). */
	struct peer_batch	*batch;
	TAILQ_ENTRY(peer)	 entry;		/* the participants */
};

/*
 * rpc.c: what a connection says of itself, made when first set (most
 * peers are agents on their pipes, which set none of it).
 */
struct peer_conn {
	struct agent		*origin;	/* inside: whose, NULL: none */
	char			*cname;		/* map/connect's name */
	const char		*own_name;	/* a delegate's participantId */
	uint64_t		 since_ms;	/* connected at */
};

/* mapview.c: how MAP sees an agent (written by mapview.c). */
struct mapinfo_more;
struct mapinfo {
	struct mapinfo_more	*more;		/* owner, metadata ...; NULL: none */
	uint64_t		 created_ms;
	uint64_t		 started_ms;
	uint64_t		 stopped_ms;
	/*
	 * The MAP state last announced, as 1 + the agent_state it names
	 * (mapview_announced); 0: agent_registered is due.
	 */
	uint8_t			 state;
	uint32_t		 hist;		/* its start events' slot + 1 */
};

/*
 * agent.c: an agent.  It keeps identity and links, which every module
 * reads; each part below is its module's alone (PART_OF).
 */
#define AGENT_TOKEN_LEN	64	/* hex digits of its credential */
struct agent {
	char			*id;
	/* The credential's bytes; agent_token writes its hex digits. */
	uint8_t			 token[AGENT_TOKEN_LEN / 2];
	struct agent_conf	*conf;		/* conf_free: its own */
	unsigned int		 instance;
	int			 flags;
#define AGENT_HIDDEN	0x01	/* a child hidden from the routing table */
#define AGENT_DEAD	0x02	/* to be freed */
#define AGENT_SIGSTOPPED 0x04	/* its process stopped by SIGSTOP */
#define AGENT_RUNNING	0x08	/* spawned, not yet released */
	/* Bits 8-15: jsonw_idq of its id (agent_idq), in no field of its own. */
#define AGENT_IDQ_SHIFT	8
	/* The tree: its children, siblings and depth made at the first. */
	struct agent		*parent;
	struct agent_kin	*kin;		/* NULL: no parent, no child */
	/* The registry. */
	RB_ENTRY(agent)		 by_id;
	TAILQ_ENTRY(agent)	 entry;		/* all agents, start order */
	/* The parts. */
	struct agent_proc	 proc PART_OF(agent);
	struct peer		 peer PART_OF(agent);
	struct agent_dialect	 dialect PART_OF(dialect);
	struct life		 life PART_OF(lifecycle);
	struct slot		 slot PART_OF(route);
	struct breaker		*breaker PART_OF(breaker);	/* NULL: closed */
	struct budget		*budget PART_OF(budget);	/* NULL: none */
	struct work		 work PART_OF(engine);
	struct child		*child PART_OF(subagent);	/* NULL: none */
	struct mapinfo		 map PART_OF(mapview);
	struct adapter		*adapter PART_OF(adapter);
	struct launch		*launch PART_OF(launch);	/* NULL: runs here */
};
TAILQ_HEAD(agents, agent);
RB_HEAD(agent_tree, agent);

/* An agent's children, in the order they were made (agent_first_child). */
#define AGENT_FOREACH_CHILD(c, a)					\
	for ((c) = agent_first_child(a); (c) != NULL;			\
	    (c) = agent_next_sibling(c))
#define AGENT_FOREACH_CHILD_SAFE(c, a, n)				\
	for ((c) = agent_first_child(a); (c) != NULL &&			\
	    ((n) = agent_next_sibling(c), 1); (c) = (n))

/*
 * agent.c: news from an agent's process, for the modules above: its
 * lifecycle events, its stdout lines, its stdin draining, its end.
 */
typedef void (*agent_event_cb)(struct agent *, enum agent_event,
    const char *);
typedef void (*agent_line_cb)(struct agent *, char *, size_t,
    enum ndjson_kind, size_t);
typedef void (*agent_cb)(struct agent *);
typedef int (*agent_errline_cb)(struct agent *, const char *, size_t);
typedef void (*agent_exit_cb)(struct agent *, char *, size_t);

/* rpc.c: who writes JSON-RPC frames for agents in their dialect. */
typedef int (*rpc_agent_cb)(struct agent *, const char *, size_t);

/* budget.c: a subtree that went over its budget, and why. */
typedef void (*budget_cb)(struct agent *, const char *);

/*
 * lifecycle.c: told of every transition (internal states included), in
 * the order the observers registered.
 */
typedef void (*lifecycle_observer)(struct agent *, enum agent_state,
    enum agent_state, enum agent_event, const char *);

struct msg;
TAILQ_HEAD(jobmsgs, msg);

/* engine.c: how one branch of a job ended (a reply or an error). */
struct branch_end {
	char			 id[CORRAL_ID_MAX];	/* its last request */
	uint8_t			 intent;
	uint8_t			 error;
	uint8_t			 linked;	/* names the job's input */
	uint8_t			 finalized;	/* a finalize reply */
	char			*line;
	size_t			 len;
};

/*
 * Jobs and requests are the engine's: every module reads them, only the
 * engine writes them.  tests/layering.sh compiles the other modules'
 * files once more with CORRAL_CHECK_WRITES, which makes the fields marked
 * ENGINE_WRITES const there, so a write elsewhere fails it.
 */
#if defined(CORRAL_CHECK_WRITES) && !defined(CORRAL_MODULE_engine)
#define ENGINE_WRITES	const
#else
#define ENGINE_WRITES
#endif

/* engine.c: a job is one goal (run) or one input envelope (serve). */
struct job {
	uint64_t		 ENGINE_WRITES seq;
	char			 ENGINE_WRITES id[CORRAL_ID_MAX]; /* its root's */
	uint8_t			 ENGINE_WRITES idq;	/* jsonw_idq; 0: unknown */
	int			 ENGINE_WRITES origin;
#define JOB_RUN		0
#define JOB_SERVE	1
	/* Requests that point at it; branch requests unanswered. */
	unsigned int		 ENGINE_WRITES pending;
	unsigned int		 ENGINE_WRITES open;
	unsigned int		 ENGINE_WRITES steps;
	int			 ENGINE_WRITES done;
	int			 ENGINE_WRITES failed;
	struct jobmsgs		 ENGINE_WRITES msgs;	/* its live requests */
	struct branch_end	*ENGINE_WRITES ends;	/* branches that ended */
	size_t			 ENGINE_WRITES nends;
	json_t			*ENGINE_WRITES reports; /* engine-report.c */
	char			*ENGINE_WRITES session; /* the one it is of */
	size_t			 ENGINE_WRITES endcap;
	ev_tstamp		 ENGINE_WRITES started;
	ev_timer		 ENGINE_WRITES deadline_w;
	TAILQ_ENTRY(job)	 ENGINE_WRITES entry;
};

struct msg_progress;

/*
 * A request: an envelope routed to an agent, awaiting one outcome.  Every
 * module reads requests (and jobs); only the engine writes them.
 */
struct msg {
	char			 ENGINE_WRITES id[CORRAL_ID_MAX];
	uint8_t			 ENGINE_WRITES idq;	/* jsonw_idq; 0: unknown */
	char			*ENGINE_WRITES line;
	size_t			 ENGINE_WRITES len;
	uint8_t			 ENGINE_WRITES intent;
	uint8_t			 ENGINE_WRITES prio;
	uint8_t			 ENGINE_WRITES kind;
#define MSG_GOAL	0	/* corral run's first envelope */
#define MSG_INPUT	1	/* from corral serve's stdin */
#define MSG_ACTION	2	/* from a reply's next_actions */
#define MSG_REFLECT	3	/* a reflection on a weak reply */
#define MSG_TASK	4	/* a spawned child's initial task */
#define MSG_SEND	5	/* a client's request (map/send, _corral/route) */
#define MSG_STEP	6	/* a step's request (step.c) */
	uint8_t			 ENGINE_WRITES orig_intent; /* reflections */
	uint8_t			 ENGINE_WRITES where;
#define MSG_NOWHERE	0
#define MSG_QUEUED	1
#define MSG_INFLIGHT	2
#define MSG_RETRYING	3
	uint8_t			 ENGINE_WRITES holds;	/* its agent */
	uint8_t			 ENGINE_WRITES pooled;	/* line: a pool's block */
	/* Or a long line shared with the queues it is written to. */
	struct ndjson_buf	*ENGINE_WRITES lbuf;
	uint8_t			 ENGINE_WRITES tclass;	/* its timer's class + 1, or 0 */
	unsigned int		 ENGINE_WRITES depth;
	unsigned int		 ENGINE_WRITES round;	/* of reflection */
	unsigned int		 ENGINE_WRITES attempts; /* given to agents */
	unsigned int		 ENGINE_WRITES retries;
	struct job		*ENGINE_WRITES job;
	/* Serving it (in flight); not this one (reflection); only this. */
	struct agent		*ENGINE_WRITES agent;
	struct agent		*ENGINE_WRITES exclude;
	struct agent		*ENGINE_WRITES target;
	/* Where a task's result goes. */
	struct agent		*ENGINE_WRITES parent_agent;
	struct agent		*ENGINE_WRITES requester; /* that asked, if one */
	/* Only an agent of this workflow entry (a step's request). */
	const struct agent_conf	*ENGINE_WRITES to_entry;
	ev_tstamp		 ENGINE_WRITES accepted;
	uint64_t		 ENGINE_WRITES seq;	/* acceptance order */
	ev_tstamp		 ENGINE_WRITES deadline;
	ev_tstamp		 ENGINE_WRITES sent;	/* to its agent, last */
	double			 ENGINE_WRITES timeout;
	ev_timer		 ENGINE_WRITES timer;
	/* Or its place in the list of a wait's class (engine.c). */
	TAILQ_ENTRY(msg)	 ENGINE_WRITES timer_entry;
	/* When it expires in its class (tclass), on the monotonic clock. */
	ev_tstamp		 ENGINE_WRITES due;
	char			*ENGINE_WRITES weak;	/* the weak reply */
	size_t			 ENGINE_WRITES weaklen;
	struct msg_progress	*ENGINE_WRITES progress; /* engine-progress.c */
	json_t			*ENGINE_WRITES reports; /* engine-report.c */
	char			 ENGINE_WRITES title[64]; /* its task, cut */
	struct route_item	 ri PART_OF(route);	/* while it waits */
	TAILQ_ENTRY(msg)	 ENGINE_WRITES entry;
	TAILQ_ENTRY(msg)	 ENGINE_WRITES job_entry;
	TAILQ_ENTRY(msg)	 ENGINE_WRITES live_entry; /* all live ones */
};

/*
 * route.c: what it tells the engine, which owns requests: one was handed
 * to an agent, waits (at most so long: its row's longest timeout), left a
 * queue (a row's: nonzero; its target's: 0), or cannot be routed.
 */
struct route_hooks {
	void	(*dispatched)(struct msg *, struct agent *);
	void	(*queued)(struct msg *, double);
	void	(*unqueued)(struct msg *, int);
	void	(*fail)(struct msg *, const char *, const char *,
		    const char *);
};

/* engine.c: what it tells the supervisor. */
struct engine_end;
struct engine_hooks {
	void	(*out)(const char *, size_t);	/* serve: a stdout line */
	void	(*result)(const char *, size_t, int);	/* run: the result */
	void	(*pause)(int, int);	/* stdin: a reason on or off */
	void	(*idle)(void);		/* a job was released */
	/* A request was answered by the reply of this id. */
	void	(*replied)(const struct msg *, const char *);
	/* A request's outcome: "replied", "error" or "expired". */
	void	(*outcome)(const struct msg *, const char *, const char *,
		    const char *, const char *);
	/* ... and what it ended with (the task registry's view). */
	void	(*ended)(const struct msg *, const struct engine_end *);
	/*
	 * A message of a session went by: a request of a job that belongs to
	 * one (kind "request"), a reply (kind "result") of such a job or one
	 * that names a session itself (its line).
	 */
	void	(*session)(const char *, const char *, const struct msg *,
		    const char *, const char *, size_t);
};

/* engine.c: how a request ended, for the engine's ended hook. */
struct engine_end {
	const char		*outcome;	/* replied, error, expired */
	const char		*category;	/* errors */
	const char		*code;
	const char		*why;
	const struct agent	*agent;		/* who answered, if any */
	const char		*line;		/* replied: the reply */
	size_t			 len;
	struct jscan		*js;		/* its tape, or NULL */
	const struct env	*env;
	int			 replied;	/* outcome is replied */
	int			 is_error;	/* the reply is an error */
};

/* envelope.c: what the validator extracts from a multiagent-1.0 line. */
struct env {
	int		 intent;	/* enum intent */
	int		 role;
	int		 ctype;		/* content.type */
#define CT_TEXT		0
#define CT_CODE		1
#define CT_JSON		2
#define CT_TOOL_RESULT	3
#define CT_ERROR	4
	int		 has_score;
	double		 score;
	int		 prio;
	double		 ttl;		/* seconds, 0: none */
	int		 trace;		/* token indexes, -1 when absent */
	int		 trace_id;
	int		 parents;
	int		 timestamp;
	int		 next_actions;
	int		 content;
	int		 corral;	/* our "corral" member */
	int		 task;		/* the task, a string */
	int		 session;	/* corral's session member */
	int		 jsonrpc;	/* has a jsonrpc member: not an envelope */
	int		 agent_id;	/* agent.id, a string, or -1 */
	double		 tokens_in;
	double		 tokens_out;
	double		 cost;
};

/* Why an envelope was refused. */
struct env_error {
	const char	*code;
	char		 path[128];
	char		 msg[256];
};

/*
 * dialect.c: what corral sends an agent, as the corral member of an
 * envelope says (docs/protocol.md, "What an agent receives on stdin"),
 * or a JSON-RPC frame.
 */
enum dialect_kind {
	DK_REQUEST,		/* work to answer (no kind) */
	DK_TASK,		/* a spawned child's task */
	DK_NOTICE,		/* an error about the agent's own output */
	DK_CANCEL,		/* a request it works on was cancelled */
	DK_CHILD_RESULT,	/* a child's task ended */
	DK_MESSAGE,		/* a map/send to it */
	DK_PROGRESS,		/* a child's progress */
	DK_RESULT,		/* the answer to a request the agent made */
	DK_RPC			/* a JSON-RPC frame: an answer, an event, a ping */
};

/* dialect.c: one line from an agent, as its dialect read it. */
struct dialect_frame {
	int			 type;
#define DF_ENVELOPE	0	/* a valid envelope: for the engine */
#define DF_CONTROL	1	/* a JSON-RPC frame: for the control plane */
#define DF_GARBAGE	2	/* no frame at all (not JSON): err says why */
#define DF_INVALID	3	/* a frame with a problem: err says what */
#define DF_BADRPC	4	/* a batch that is not JSON: err says why */
#define DF_REDELIVERY	5	/* a message it accepted before: id names it */
	const char		*line;	/* the frame's bytes: the line, or made */
	size_t			 len;
	char			*made;	/* a line the decoder made (freed) */
	struct jscan		*js;	/* DF_ENVELOPE, DF_INVALID: its tape */
	struct env		 env;	/* DF_ENVELOPE: its fields */
	struct env_error	 err;	/* DF_GARBAGE, DF_INVALID, DF_BADRPC */
	const char		*id;	/* DF_INVALID, DF_REDELIVERY: its id */
	char			 idbuf[CORRAL_ID_MAX];
};

/*
 * dialect.c: who takes what it reads (registered by the supervisor).  A
 * frame's bytes and tape are the consumer's until it returns.
 */
struct dialect_consumers {
	void	(*activity)(struct agent *);	/* any line: it is alive */
	/* Only bad lines, for too long: fail it; nonzero when it was. */
	int	(*fail)(struct agent *, const char *);
	int	(*tool)(struct agent *, const char *, size_t);	/* adapted */
	void	(*control)(struct peer *, const char *, size_t);
	void	(*envelope)(struct agent *, struct dialect_frame *);
	/* An invalid envelope, after its notice: it may fail a request. */
	void	(*invalid)(struct agent *, struct dialect_frame *);
	void	(*input)(struct peer *, struct dialect_frame *);	/* serve */
	void	(*out)(const char *, size_t);	/* serve's stdout: a notice */
};

/* dialect.c: its counters (docs/reliability.md). */
struct dialect_stats {
	uint64_t	 rejected;	/* bad lines, notices about output */
	uint64_t	 notices_dropped;
	uint64_t	 redeliveries;	/* messages seen before, dropped */
};

/* engine.c: what it asks of the sub-agent module about tasks. */
struct engine_task_hooks {
	void	(*reply)(struct agent *, struct msg *, struct jscan *,
		    const char *, size_t, struct env *);
	void	(*done)(struct msg *, const char *, size_t, int);
	void	(*gone)(struct agent *, const char *);
	void	(*failed)(struct agent *, const char *);
};

/*
 * engine.c: what it asks of the step module (step.c) about a workflow of
 * steps.  first makes a job's first request a step's (NULL: not one, or,
 * with a reason in its buffer, one that cannot be made);
 * reply and failed hand over a step's request that ended, its job held
 * open (engine_job_hold) until the step module lets it go; done says a
 * job ended some other way (a limit, the deadline, an interrupt).
 */
struct engine_step_hooks {
	char	*(*first)(struct job *, const char *, size_t, size_t *, int *,
		    const struct agent_conf **, char *, size_t);
	void	 (*reply)(struct job *, const char *, struct agent *,
		    const char *, size_t, const char *);
	void	 (*failed)(struct job *, const char *, const char *,
		    const char *, const char *, size_t);
	void	 (*done)(struct job *);
};

/* control.c: a method of the control plane. */
struct control_method {
	const char	*name;
	int		 who;		/* PEER_AGENT, PEER_CLIENT or both */
#define CONTROL_QUERY	0x100	/* only reads: its answer is all it does */
	void		(*fn)(struct peer *, json_t *, json_t *);
};

/* event.c: what the emitter of an event says about it. */
#define EVENT_ID_LEN	26	/* a ULID */
struct event_info {
	const char	*type;		/* one of MAP's EVENT_TYPES */
	const char	*source;	/* the participant it is about or from */
	const char	*source_role;	/* the source agent's role, or NULL */
	const char	*agent;		/* data.agentId, or NULL */
	const char	*agent_role;	/* that agent's role, or NULL */
	const char	*corr;		/* data.correlationId, or NULL */
	int		 audit;		/* also into the audit log */
	/*
	 * source stays as it is until event_release: a compact record may
	 * keep it rather than a copy (an agent's id, for its start events).
	 */
	int		 lend;
};
typedef int (*event_visible_cb)(const struct peer *, const char *);

/* control.c: what the supervisor tells the control plane about the run. */
struct control_info {
	const char	*workflow;	/* its name */
	const char	*path;		/* its file */
	const char	*mode;		/* "run" or "serve" */
	long		 pid;		/* the pid to signal, as the shell sees it */
	uint64_t	 started_ms;
	void		(*shutdown)(void);	/* _corral/shutdown */
	const struct workflow *wf;	/* its entries, for delegates */
};

/* client.c: a connection to a running corral's control socket. */
struct client {
	int			 fd;
	char			 path[108];
	struct ndjson_reader	 rd;
	json_t			*queue;		/* frames read, not taken */
	json_t			*info;		/* map/connect's result */
	long long		 next_id;
	int			 eof;
	struct ndjson_writer	 out;		/* client_queue's frames */
};

/*
 * external.c: an agent inside a wrapped tool's process (Claude Code's
 * Task sub-agents), shown under the agent it runs in; not a process of
 * corral's.
 */
struct external {
	char			*id;		/* "<agent>/<own id>" */
	char			*parent;	/* the agent it is in */
	char			*up;		/* the one that started it, or NULL */
	char			*name;
	char			*kind;		/* "claude-task" */
	char			*type;		/* sub-agent type */
	char			*request;	/* what it works for */
	const char		*state;		/* BUSY, STOPPED... */
	uint64_t		 started_ms;
	uint64_t		 stopped_ms;
	uint64_t		 active_ms;
	double			 tokens_said;	/* its tool said */
	double			 tokens_seen;	/* in its messages */
	unsigned int		 tools_said;
	unsigned int		 tools_seen;
	char			*last_tool;
	TAILQ_ENTRY(external)	 entry;
};
enum external_change {
	EXTERNAL_STARTED,
	EXTERNAL_UPDATED,
	EXTERNAL_ENDED,
	EXTERNAL_GONE
};
typedef void (*external_cb)(struct external *, enum external_change);

/*
 * proc.c: a short-lived process run for one request (a per-call
 * adapter's): fed once, read to the end.  The adapter fills in agent,
 * msg, done, line_cb, arg, quiet and the stop times; proc.c the rest.
 */
struct proc_call {
	struct proc		 proc;		/* the process */
	struct agent		*agent;
	struct msg		*msg;		/* NULL once cancelled */
	const char		*name;		/* its agent's, in the log */
	double			 grace;		/* its agent's stop: */
	double			 timeout;
	int			 quiet;		/* stderr to the debug log */
	int			 in PART_OF(proc);
	int			 out PART_OF(proc);
	ev_io			 in_w PART_OF(proc);
	ev_io			 out_w PART_OF(proc);
	/* Its stop sequence: an agent's state, moved on by the rules. */
	ev_timer		 stop_w PART_OF(proc);
	int			 stop PART_OF(proc);
	char			*stdin_data PART_OF(proc);
	size_t			 stdin_len PART_OF(proc);
	size_t			 stdin_off PART_OF(proc);
	char			*out_buf;
	size_t			 out_len;
	size_t			 out_cap PART_OF(proc);
	size_t			 out_max;
	size_t			 out_dropped;
	void			(*done)(struct proc_call *);
	void			(*line_cb)(struct proc_call *, const char *,
				    size_t);
	void			*arg;
	TAILQ_ENTRY(proc_call)	 entry;		/* the adapter's */
};
TAILQ_HEAD(proc_calls, proc_call);
/* proc.c: what the stop sequence of a call does next (lifecycle.c's). */
typedef enum agent_state (*proc_stop_cb)(enum agent_state, enum agent_event);

/* adapter.c: the operations of one adapter (docs/adapters.md). */
struct adapter_ops {
	const char	*name;
	int		 per_call;	/* a process per request, none between */
	/* Check the adapter: settings at load time; 0 or -1 with a message. */
	int		(*check)(const struct agent_conf *, char *, size_t);
	/* After the agent's process started (long-lived) or at start. */
	int		(*start)(struct agent *);
	/* Give the tool one request (already counted as in flight). */
	void		(*request)(struct agent *, struct msg *);
	/* A line from a long-lived tool; 0 when the adapter took it. */
	int		(*line)(struct agent *, const char *, size_t);
	/* A request expired or is being given up: stop working on it. */
	void		(*cancel)(struct agent *, struct msg *);
	/* Stopping: forget requests not yet running (adapter_stop kills). */
	void		(*stop)(struct agent *);
	/* Free the adapter's state. */
	void		(*free)(struct agent *);
	/*
	 * Long-lived adapters: the argv to run instead of the entry's cmd
	 * (NULL-terminated, freed by the caller with adapter_free_argv), a
	 * ping for heartbeats, and how many requests the tool takes at once
	 * (0: the entry's max_inflight).
	 */
	char		**(*argv)(struct agent *);
	void		(*ping)(struct agent *);
	unsigned int	 inflight_cap;
	/* What the adapter knows of its tool, for map/agents/get (new ref). */
	json_t		*(*metadata)(struct agent *);
	/* A request to give back after the restart the adapter asked for. */
	int		(*keeps)(struct agent *, struct msg *);
	/* Its requests are turns of one conversation: keep their order. */
	int		(*ordered)(struct agent *);
	/*
	 * Continue session (a CLI's session or thread id) with the requests
	 * that name none, as a resumed run does (docs/resume.md); 0, or -1
	 * when its requests do not share one conversation.
	 */
	int		(*resume_session)(struct agent *, const char *);
};

struct adapter {
	const struct adapter_ops	*ops;
	void				*state;
	char				**env;		/* for its processes */
	int				 tools_warned;	/* said why no tools */
	struct proc_calls		 procs;		/* per-call processes */
	unsigned int			 nprocs;
	int				 stopping;	/* no new calls */
};

/* adapter.c: where an adapter's replies go (the engine). */
typedef void (*adapter_reply_cb)(struct agent *, struct msg *, const char *,
    size_t);
/* adapter.c: who knows the requests an agent works on (the engine). */
typedef struct msg *(*adapter_find_cb)(struct agent *, const char *,
    unsigned int);
/* adapter.c: where its tool's partial output goes (the engine). */
typedef void (*adapter_progress_cb)(struct agent *, struct msg *,
    const char *, int);

/* adapter.c: the settings every adapter has (adapter_check_common). */
struct adapter_settings {
	const char	*prompt;	/* a template, NULL: built in */
	double		 confidence;
	const char	*intent;	/* the reply's, NULL: the request's */
	json_t		*then;		/* next_actions of replies */
};

/* adapter-cli.c: what a CLI-per-request adapter tells the shared code. */
struct adapter_cli_tool {
	const char	*name;		/* the tool, in messages */
	const char	*conversation;	/* what it resumes: thread, session */
	const char	*key;		/* its id in a reply's data */
	/* Run the tool for one request (adapter_cli_spawn). */
	void		 (*run)(struct agent *, struct msg *);
	/* A call's stdout lines, its end, and freeing what it collected. */
	void		 (*line)(struct proc_call *, const char *, size_t);
	void		 (*done)(struct proc_call *);
	void		 (*call_free)(void *);
};

TAILQ_HEAD(adapter_cli_waitq, adapter_cli_wait);

/* The first member of a CLI-per-request adapter's state. */
struct adapter_cli {
	const struct adapter_cli_tool	*tool;
	struct adapter_settings		 settings;
	int				 one;		/* conversation: one */
	double				 price_in;	/* USD per million */
	double				 price_out;	/* tokens */
	int				 quiet;		/* stderr: debug */
	char				*conversation;	/* to resume */
	int				 busy;		/* a call of it runs */
	struct adapter_cli_waitq	 waitq;
};

TAILQ_HEAD(agentpool, agent);

#define WIFEXITED_OK(st)	(WIFEXITED(st) && WEXITSTATUS(st) == 0)

/* The loop: libev's default one, set up by the supervisor. */
#define LOOP	EV_DEFAULT_UC

/*
 * xmalloc.c: a free list of blocks of one size, kept for reuse (at most
 * max of them), for the structures made and freed for every envelope.
 */
struct xpool {
	void	*head;
	size_t	 size, n, max;
};
#define XPOOL_INITIALIZER(type, max) { NULL, sizeof(type), 0, (max) }

/* xmalloc.c */
void	*xmalloc(size_t);
void	*xcalloc(size_t, size_t);
void	*xreallocarray(void *, size_t, size_t);
char	*xstrdup(const char *);
char	*xstrndup(const char *, size_t);
char	*xmemdup0(const void *, size_t);
void	*xpool_get(struct xpool *);
void	*xpool_alloc(struct xpool *);
void	 xpool_put(struct xpool *, void *);

/*
 * free(p), without the call when p is NULL: for the buffers a request
 * holds only now and then (a filled or marked line, a weak reply), which
 * its path frees about eight times an envelope, nearly always NULL.
 */
static inline void
xfree(void *p)
{
	if (p != NULL)
		free(p);
}
int	 xasprintf(char **, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
int	 xvasprintf(char **, const char *, va_list)
	    __attribute__((format(printf, 2, 0)));

/* log.c */
void	 log_init(int);
int	 log_get_verbose(void);
void	 log_set_hook(void (*)(int));
void	 log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void	 log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void	 log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void	 log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void	 log_trace(const char *, ...) __attribute__((format(printf, 1, 2)));
void	 fatal(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));
void	 fatalx(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));
size_t	 log_escape(char *, size_t, const char *, size_t);
void	 log_agent_line(const char *, const char *, size_t, size_t);

/* util.c */
int	 util_parse_duration(const char *, double *);
int	 util_parse_size(const char *, size_t *);
void	 util_format_duration(char *, size_t, double);
void	 util_format_size(char *, size_t, size_t);
void	 util_rfc3339(char *, size_t);
int	 util_rfc3339_valid(const char *, size_t);
double	 util_mono(void);
double	 util_jitter(double, double);
const char *util_signame(int);
void	 util_describe_status(char *, size_t, int);
int	 util_set_nonblock(int, int);
int	 util_set_cloexec(int);
void	 util_raise_nofile(void);
size_t	 util_u64(char *, uint64_t);
extern const char util_pairs[201];
int	 util_utf8_valid(const char *, size_t, size_t *);
size_t	 util_utf8_len(const unsigned char *, size_t);
size_t	 util_utf8_cut(const char *, size_t, size_t);
size_t	 util_distance(const char *, const char *);
int	 util_near(const char *, size_t);
const char *util_nearest(const char *, const char *const *);
char	*util_vis(const char *, size_t);
void	 util_vis_json(json_t *);

/* jsonw.c */
size_t	 jsonw_plain(const char *, size_t);
void	 jsonw_string(struct ndjson_writer *, const char *, size_t);
json_t	*jsonw_text(const char *, size_t);
void	 jsonw_init(struct jsonw *);
void	 jsonw_free(struct jsonw *);
void	 jsonw_object(struct jsonw *);
void	 jsonw_object_end(struct jsonw *);
void	 jsonw_array(struct jsonw *);
void	 jsonw_array_end(struct jsonw *);
void	 jsonw_key(struct jsonw *, const char *);
void	 jsonw_key_raw(struct jsonw *, const char *, size_t);
/* jsonw_key for a literal that needs no escaping, without a scan of it. */
#define JSONW_KEY(j, lit) jsonw_key_raw((j), "\"" lit "\"", sizeof(lit) + 1)
void	 jsonw_strn(struct jsonw *, const char *, size_t);
void	 jsonw_str(struct jsonw *, const char *);
void	 jsonw_u64(struct jsonw *, uint64_t);
void	 jsonw_num(struct jsonw *, double);
#define JSONW_NUMBER_MAX	40
size_t	 jsonw_number(char *, double);
double	 jsonw_finite(double);
char	*jsonw_dumps(const json_t *, size_t);
size_t	 jsonw_dumpb(const json_t *, char *, size_t, size_t);
int	 jsonw_dumpfd(const json_t *, int, size_t);
void	 jsonw_bool(struct jsonw *, int);
void	 jsonw_raw(struct jsonw *, const char *, size_t);
char	*jsonw_finish(struct jsonw *, size_t *);

/* protocol.c */
int	 protocol_agent_name(const char *);
int	 protocol_intent(const char *, size_t);
const char *protocol_intent_check(const char *);
void	 protocol_set_intents(char **, size_t);
unsigned int protocol_intents_gen(void);
size_t	 protocol_intent_count(void);
void	 protocol_intent_list(char *, size_t);
const char *protocol_intent_name(int);
unsigned protocol_intent_q(int);
int	 protocol_filter_allows(json_t *, const char *, const char *);
int	 protocol_capability_equal(const char *, const char *);
const char *protocol_capability_name(json_t *);
int	 protocol_capability_in(json_t *, const char *);
int	 protocol_number(json_t *, const char *, double, double, int,
	    double *);
const char *protocol_priority_name(int);
int	 protocol_transient(const char *);
void	 protocol_set_run(const char *);
const char *protocol_run_id(void);
const char *protocol_new_id(char *, size_t);

/* jscan.c */
struct jscan *jscan_create(unsigned int);
void	 jscan_free(struct jscan *);
void	 jscan_trim(struct jscan *);
struct jscan *jscan_take(void);
void	 jscan_give(struct jscan *);
void	 jscan_drain(void);
int	 jscan_run(struct jscan *, const char *, size_t);
int	 jscan_run_path(struct jscan *, const char *, size_t, enum jscan_path);
struct jscan_memo;
struct jscan_memo *jscan_memo_create(void);
void	 jscan_memo_free(struct jscan_memo *);
void	 jscan_memo_reset(struct jscan_memo *);
uint32_t jscan_memo_resumed(const struct jscan_memo *, uint64_t *,
	    uint64_t *);
int	 jscan_run_memo(struct jscan *, const char *, size_t,
	    struct jscan_memo *);
int	 jscan_run_memo_path(struct jscan *, const char *, size_t,
	    struct jscan_memo *, enum jscan_path);
int	 jscan_path_has(enum jscan_path);
const char *jscan_path_name(enum jscan_path);
enum jscan_path jscan_path_get(void);
int	 jscan_path_set(enum jscan_path);
size_t	 jscan_unescape(struct jscan *, const char *, size_t);
int	 jscan_str_equal(struct jscan *, const char *, size_t, int,
	    const char *, size_t);
int	 jscan_get(struct jscan *, const char *, int, const char *);
int	 jscan_getn(struct jscan *, const char *, int, const char *, size_t);
/* jscan_get for a string literal key, without strlen. */
#define JSCAN_GET(js, s, obj, lit) jscan_getn((js), (s), (obj), (lit), \
	    sizeof(lit) - 1)
size_t	 jscan_count(const struct jscan *, int);
double	 jscan_number(struct jscan *, const char *, int);

/*
 * Walking the tape is done for every member of every envelope, so these
 * are inline.
 */

/* Return the index of the first element of an array token, or -1. */
static inline int
jscan_first(const struct jscan *js, int arr)
{
	const struct jtok	*t = &js->tok[arr];

	if ((t->flags & JT_OPAQUE) || (uint32_t)arr + 1 >= t->next)
		return -1;
	return arr + 1;
}

/* Return the element after elem inside the array token arr, or -1. */
static inline int
jscan_next(const struct jscan *js, int arr, int elem)
{
	uint32_t	n = js->tok[elem].next;

	return n < js->tok[arr].next ? (int)n : -1;
}

/*
 * Return a string token's text: the raw bytes between the quotes when it
 * has no escapes, else the decoded copy in js->tmp (valid until the next
 * call that uses it).
 */
static inline const char *
jscan_text(struct jscan *js, const char *s, int tok, size_t *lenp)
{
	const struct jtok	*t = &js->tok[tok];

	if (t->flags & JT_ESCAPED) {
		*lenp = jscan_unescape(js, s + t->off, t->len);
		return js->tmp;
	}
	*lenp = t->len - 2;
	return s + t->off + 1;
}

/* ndjson.c */
void	 ndjson_reader_init(struct ndjson_reader *, size_t, int);
void	 ndjson_reader_free(struct ndjson_reader *);
void	 ndjson_feed(struct ndjson_reader *, char *, size_t, ndjson_line_cb,
	    void *);
void	 ndjson_finish(struct ndjson_reader *, ndjson_line_cb, void *);
int	 ndjson_reader_pending(const struct ndjson_reader *);
void	 ndjson_reader_stop(struct ndjson_reader *);
int	 ndjson_reader_held(const struct ndjson_reader *);
void	 ndjson_resume(struct ndjson_reader *, ndjson_line_cb, void *);
char	*ndjson_reader_room(struct ndjson_reader *, size_t, size_t *);
void	 ndjson_feed_room(struct ndjson_reader *, size_t, ndjson_line_cb,
	    void *);
void	 ndjson_writer_init(struct ndjson_writer *, size_t, size_t);
void	 ndjson_writer_free(struct ndjson_writer *);
size_t	 ndjson_writer_queued(const struct ndjson_writer *);
int	 ndjson_writer_full(const struct ndjson_writer *);
int	 ndjson_writer_drained(const struct ndjson_writer *);
void	 ndjson_writer_reserve(struct ndjson_writer *, size_t);
void	 ndjson_writer_add(struct ndjson_writer *, const void *, size_t);
void	 ndjson_writer_line(struct ndjson_writer *, const void *, size_t);
int	 ndjson_writer_flush(struct ndjson_writer *, int);

/* ndjson-queue.c */
void	 ndjson_queue_init(struct ndjson_queue *, size_t, size_t);
void	 ndjson_queue_free(struct ndjson_queue *);
size_t	 ndjson_queue_len(const struct ndjson_queue *);
size_t	 ndjson_queue_held(const struct ndjson_queue *);
int	 ndjson_queue_full(const struct ndjson_queue *);
int	 ndjson_queue_drained(const struct ndjson_queue *);
void	 ndjson_queue_line(struct ndjson_queue *, const void *, size_t);
int	 ndjson_queue_flush(struct ndjson_queue *, int);
struct ndjson_buf *ndjson_buf_new(const char *, size_t);
struct ndjson_buf *ndjson_buf_wrap(char *, size_t);
void	 ndjson_buf_put(struct ndjson_buf *);
void	 ndjson_buf_offer(struct ndjson_buf *, int);

#ifdef __SSE2__
/*
 * Return a bit for each of the sixteen bytes in x that needs a closer
 * look inside a JSON string.  Compared as signed bytes, those below 0x20
 * and those from 0x80 on are both less than 0x20.
 */
static inline unsigned
jsonw_special16(__m128i x)
{
	__m128i	s;

	s = _mm_or_si128(_mm_cmplt_epi8(x, _mm_set1_epi8(0x20)),
	    _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')),
	    _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))));
	return (unsigned)_mm_movemask_epi8(s);
}
#endif

/*
 * Return nonzero when a byte of the n at s needs an escape or a closer
 * look (jsonw_plain(s, n) != n): inline for 4 to 16 bytes, the size of
 * most ids and names, which the audit log checks several times an
 * envelope.  Several strings' answers can be or'ed and tested once.
 */
static inline unsigned
jsonw_special(const char *s, size_t n)
{
#ifdef __SSE2__
	uint64_t	x, y;
	uint32_t	a, b;

	if (n - 8 <= 8) {
		/* The first eight bytes and the last eight, at once. */
		memcpy(&x, s, 8);
		memcpy(&y, s + n - 8, 8);
		return jsonw_special16(_mm_set_epi64x((long long)y,
		    (long long)x));
	}
	if (n - 4 < 4) {
		memcpy(&a, s, 4);
		memcpy(&b, s + n - 4, 4);
		return jsonw_special16(_mm_set_epi32(0x20202020, 0x20202020,
		    (int)b, (int)a));
	}
#endif
	return jsonw_plain(s, n) != n;
}

/*
 * What is known of an id of n bytes at s, kept beside it where it is made
 * so that the audit log's writers need not measure and check it again:
 * n | JSONW_PLAIN when it needs no escape, 0 (nothing known) when it does
 * or is too long to say so in a byte.
 */
#define JSONW_PLAIN	0x80
#define JSONW_IDQ_LEN(q)	((size_t)((q) & ~JSONW_PLAIN))
static inline uint8_t
jsonw_idq(const char *s, size_t n)
{
	if (n >= JSONW_PLAIN || jsonw_special(s, n))
		return 0;
	return (uint8_t)(n | JSONW_PLAIN);
}

/*
 * jsonw.c's appenders, for lines of a fixed shape on the hot path (the
 * audit log writes several an envelope): each appends to a byte queue
 * what its name says, punctuation included.  A key, and a value put with
 * jsonw_put_name, is a name corral spells (a literal: nothing to
 * escape); any other string goes through jsonw_string when it needs an
 * escape.  Inline, and room is made only when the queue lacks it: they
 * cost what writing the bytes costs.
 */
static inline char *
jsonw_room(struct ndjson_writer *w, size_t n)
{
	if (w->tail + n > w->cap)
		ndjson_writer_reserve(w, n);
	return w->buf + w->tail;
}

/*
 * Copy n bytes to room made for them: names and ids of up to 32 bytes in
 * two overlapping moves of a fixed size, not a call of memcpy.
 */
static inline void
jsonw_copy(char *p, const char *s, size_t n)
{
	if (n > 16 && n <= 32) {
		memcpy(p, s, 16);
		memcpy(p + n - 16, s + n - 16, 16);
	} else if (n >= 8 && n <= 16) {
		memcpy(p, s, 8);
		memcpy(p + n - 8, s + n - 8, 8);
	} else if (n >= 4 && n < 8) {
		memcpy(p, s, 4);
		memcpy(p + n - 4, s + n - 4, 4);
	} else
		memcpy(p, s, n);
}

/* {"key": when first, else ,"key": (key a literal of kl bytes). */
static inline void
jsonw_put_key(struct ndjson_writer *w, int first, const char *key, size_t kl)
{
	char	*p = jsonw_room(w, kl + 4);

	p[0] = first ? '{' : ',';
	p[1] = '"';
	jsonw_copy(p + 2, key, kl);
	p[kl + 2] = '"';
	p[kl + 3] = ':';
	w->tail += kl + 4;
}
#define JSONW_PUT_KEY(w, first, lit)	jsonw_put_key((w), (first), (lit), \
	    sizeof(lit) - 1)

/* A name corral spells, between quotes. */
static inline void
jsonw_put_name(struct ndjson_writer *w, const char *s, size_t n)
{
	char	*p = jsonw_room(w, n + 2);

	p[0] = '"';
	jsonw_copy(p + 1, s, n);
	p[n + 1] = '"';
	w->tail += n + 2;
}

/* Any string: as it is between quotes when nothing needs escaping. */
static inline void
jsonw_put_str(struct ndjson_writer *w, const char *s, size_t n)
{
	if (jsonw_plain(s, n) == n)
		jsonw_put_name(w, s, n);
	else
		jsonw_string(w, s, n);
}

/* An unsigned integer. */
static inline void
jsonw_put_u64(struct ndjson_writer *w, uint64_t v)
{
	w->tail += util_u64(jsonw_room(w, 24), v);
}

/* Microseconds as seconds with six decimals (12.000345). */
static inline void
jsonw_put_micros(struct ndjson_writer *w, uint64_t us)
{
	char	*p;

	jsonw_put_u64(w, us / 1000000);
	p = jsonw_room(w, 7);
	us %= 1000000;
	p[0] = '.';
	p[1] = (char)('0' + us / 100000);
	p[2] = (char)('0' + us / 10000 % 10);
	p[3] = (char)('0' + us / 1000 % 10);
	p[4] = (char)('0' + us / 100 % 10);
	p[5] = (char)('0' + us / 10 % 10);
	p[6] = (char)('0' + us % 10);
	w->tail += 7;
}

/* What is JSON already (a value, or members after ours: ",..."). */
static inline void
jsonw_put_raw(struct ndjson_writer *w, const char *s, size_t n)
{
	ndjson_writer_add(w, s, n);
}

/* The end of an object and of its line. */
static inline void
jsonw_put_end(struct ndjson_writer *w)
{
	char	*p = jsonw_room(w, 2);

	p[0] = '}';
	p[1] = '\n';
	w->tail += 2;
}

/* chan.c */
void	 chan_init(struct chan *, const char *, int, int, size_t, void *);
void	 chan_start(struct chan *);
struct chan *chan_source(void);
void	 chan_close_write(struct chan *);
void	 chan_close(struct chan *);
void	 chan_write_line(struct chan *, const char *, size_t);
void	 chan_block(struct chan *, struct chan *);
int	 chan_resume_pending(void);
int	 chan_full(const struct chan *);
void	 chan_flush_all(void);
void	 chan_stop_reading(struct chan *);
void	 chan_release_waiters(struct chan *);
void	 chan_resume_reading(struct chan *);
char	*chan_read_buffer(size_t *);

/* config.c */
struct workflow *config_load(const char *, struct config_error *);
struct workflow *config_load_string(const char *, size_t, const char *,
	    struct config_error *);
void	 config_free(struct workflow *);
void	 config_print(FILE *, const struct workflow *);
void	 config_print_error(FILE *, const char *, const struct config_error *);
int	 config_check(const struct workflow *, int, FILE *);
#define CONFIG_CHECK_START	0x1	/* warn when no route serves start: */
#define CONFIG_CHECK_NORUN	0x2	/* replay adapter's agents: not checked */
struct agent_conf *config_find_agent(const struct workflow *, const char *);
const struct step_conf *config_find_step(const struct workflow *,
	    const char *);
const char *config_restart_name(enum restart_policy);
const char *config_strategy_name(enum child_strategy);
int	 config_keyinfo(size_t, struct config_keyinfo *);
const char *config_rlimit_name(int);
int	 config_rlimit_find(const char *);

/* spawn.c */
struct spawn_result {
	pid_t	pid;
	pid_t	hostpid;
	int	in;
	int	out;
	int	err;
	int	error;		/* errno of a failed spawn */
	char	what[192];	/* which step failed */
};
void	 spawn_init(const struct workflow *, int);
void	 spawn_set_control(const char *);
int	 spawn_argv(const struct agent_conf *, char *const *, const char *,
	    const char *, char *const *, struct spawn_result *);
char	*spawn_find(const char *, const struct workflow *, const char *);
void	 spawn_block_signals(sigset_t *);
void	 spawn_restore_signals(const sigset_t *);

/* agent.c */
int	 agent_cmp(struct agent *, struct agent *);
RB_PROTOTYPE(agent_tree, agent, by_id, agent_cmp);
void	 agent_on_event(agent_event_cb);
void	 agent_on_line(agent_line_cb, agent_cb);
void	 agent_on_process(agent_errline_cb, agent_exit_cb);
void	 agent_on_create(agent_cb);
void	 agent_on_free(agent_cb);
void	 agent_news(struct agent *, enum agent_event, const char *);
struct agent *agent_find(const char *);
struct agent *agent_find_token(const char *);
void	 agent_token(const struct agent *, char [AGENT_TOKEN_LEN + 1]);
struct agent *agent_of_pid(pid_t);
struct agent *agent_first(void);
struct agent *agent_next(struct agent *);
struct agent *agent_last(void);
struct agent *agent_prev(struct agent *);
struct agent *agent_create(struct agent_conf *, unsigned int, struct agent *);
unsigned int agent_depth(const struct agent *);
unsigned int agent_nchildren(const struct agent *);
struct agent *agent_first_child(const struct agent *);
struct agent *agent_next_sibling(const struct agent *);

/* What is known of a's id (jsonw_idq): 0 for none (a NULL). */
static inline unsigned
agent_idq(const struct agent *a)
{
	return a != NULL ? ((unsigned)a->flags >> AGENT_IDQ_SHIFT) & 0xff : 0;
}

/* The length of a's id: agent_idq's when it says it, else measured. */
static inline size_t
agent_idlen(const struct agent *a)
{
	unsigned	q = agent_idq(a);

	return (q & JSONW_PLAIN) ? JSONW_IDQ_LEN(q) : strlen(a->id);
}
int	 agent_spawn(struct agent *, char **, char *const *,
	    struct spawn_result *);
int	 agent_spawn_as(struct agent *, const struct agent_conf *, char **,
	    char *const *, struct spawn_result *);
void	 agent_spawn_none(struct agent *);
void	 agent_input(struct agent *, char *, size_t, enum ndjson_kind,
	    size_t);
void	 agent_send(struct agent *, const char *, size_t);
void	 agent_send_link(struct agent *, const char *, size_t);
int	 agent_full(const struct agent *);
int	 agent_writable(const struct agent *);
int	 agent_sigstopped(const struct agent *);
struct peer *agent_peer(struct agent *);
int	 agent_exited(const struct agent *);
int	 agent_running(const struct agent *);
int	 agent_status(const struct agent *);
pid_t	 agent_hostpid(const struct agent *);
ev_tstamp agent_spawned_at(const struct agent *);
void	 agent_count_in(struct agent *);
void	 agent_count_out(struct agent *);
void	 agent_counts(const struct agent *, uint64_t *, uint64_t *);
void	 agent_block_reader(struct agent *);
void	 agent_release_waiters(struct agent *);
size_t	 agent_stderr_tail(const struct agent *, char *, size_t, unsigned int);
void	 agent_signal(struct agent *, int);
void	 agent_close_stdin(struct agent *);
void	 agent_abandon_pipes(struct agent *);
void	 agent_release(struct agent *);
int	 agent_is_descendant(const struct agent *, const struct agent *);
unsigned int agent_count_running(void);
void	 agent_mark_dead(struct agent *);
void	 agent_reap_dead(int);

/* rpc.c */
void	 rpc_on_agent(rpc_agent_cb);
void	 rpc_send(struct peer *, json_t *);
void	 rpc_reply(struct peer *, json_t *, json_t *);
void	 rpc_error(struct peer *, json_t *, int, const char *, json_t *);
void	 rpc_notify(struct peer *, const char *, json_t *);
void	 rpc_ping(struct peer *);
void	 rpc_send_text(struct peer *, const char *, size_t);
void	 rpc_reply_text(struct peer *, const char *, size_t);
void	 rpc_send_event(struct peer *, const char *, size_t);
void	 rpc_batch_begin(struct peer *);
void	 rpc_batch_end(struct peer *);
void	 rpc_batch_drop_held(struct peer *);
size_t	 rpc_batch_bytes(const struct peer *);
int	 rpc_batching(const struct peer *);
struct peer_conn *rpc_conn(struct peer *);
void	 rpc_conn_free(struct peer *);
struct agent *rpc_origin(const struct peer *);
const char *rpc_own_name(const struct peer *);
const char *rpc_category(int);
int	 rpc_retryable(int);
void	 rpc_peer_add(struct peer *);
void	 rpc_peer_remove(struct peer *);
struct peer *rpc_peer_find(const char *);
struct peer *rpc_peer_first(void);
struct peer *rpc_peer_next(struct peer *);
int	 rpc_full(const struct peer *);
int	 rpc_deaf(const struct peer *);
json_t	*rpc_prefix_id(const char *, size_t);

/* event.c */
void	 event_init(void);
void	 event_set_log(const char *, size_t);
void	 event_on_visible(event_visible_cb);
uint64_t event_now_ms(void);
void	 event_new_id(char *);
int	 event_type_match(const char *, const char *);
void	 event_emit(const struct event_info *, const char *, size_t);
void	 event_emit_flat(const struct event_info *, const char *const *,
	    const char *const *);
void	 event_emit_state(const char *, const char *, const char *,
	    const char *, const char *, const char *, int);
void	 event_drained(struct peer *);
void	 event_subscribe(struct peer *, json_t *, json_t *);
void	 event_unsubscribe(struct peer *, json_t *, json_t *);
void	 event_peer_gone(struct peer *);
void	 event_counts(uint64_t *, uint64_t *, unsigned int *);
void	 event_replay(struct peer *, json_t *, json_t *);
size_t	 event_history_bytes(void);
size_t	 event_history_slots(void);
uint32_t event_lent_slot(void);
void	 event_release(const char *, uint32_t);

/* external.c */
void	 external_on_change(external_cb);
struct external *external_first(void);
struct external *external_next(struct external *);
struct external *external_find(const char *);
int	 external_running(const struct external *);
struct external *external_start(const char *, const char *, const char *,
	    const char *, const char *, const char *, const char *);
const char *external_parent(const struct external *);
unsigned int external_depth(const struct external *);
void	 external_tool(struct external *, const char *);
void	 external_usage(struct external *, double, double, double);
double	 external_tokens(const struct external *);
unsigned int external_tool_calls(const struct external *);
void	 external_end(struct external *, const char *, const char *);
void	 external_parent_ended(const char *, const char *);
void	 external_forget(const char *);

/* client.c */
int	 client_dir(char *, size_t, int, char *, size_t);
int	 client_probe(const char *);
size_t	 client_sockets(const char *, char ***);
size_t	 client_live(const char *, const char *, char ***);
void	 client_sockets_free(char **, size_t);
int	 client_find(const char *, const char *, char *, size_t, char *,
	    size_t);
int	 client_open(struct client *, const char *, const char *, char *,
	    size_t);
json_t	*client_call(struct client *, const char *, json_t *, int, json_t **);
json_t	*client_next(struct client *, int, int *);
long long client_request(struct client *, const char *, json_t *);
long long client_queue(struct client *, const char *, json_t *, size_t,
	    size_t *);
int	 client_flush(struct client *);
size_t	 client_queued(const struct client *);
int	 client_poll(struct client *, int);
json_t	*client_take(struct client *);
int	 client_open_auth(struct client *, const char *, const char *, json_t *,
	    char *, size_t);
json_t	*client_run(struct client *);
void	 client_close(struct client *);
void	 client_error_text(json_t *, char *, size_t);
int	 client_attach(struct client *, const char *, const char *,
	    const char *);
void	 client_uptime(char *, size_t, double);
void	 client_where(json_t *, char *, size_t);
void	 client_pid(char *, size_t, json_t *);
json_t	*client_requests(struct client *, int);
void	 client_request_head(char *, size_t);
void	 client_request_row(char *, size_t, json_t *);
int	 client_status_row(char *, size_t, json_t *);

/* envelope.c */
int	 envelope_check(struct jscan *, const char *, size_t, struct env *,
	    struct env_error *);
struct env_memo;
struct env_memo *envelope_memo_create(void);
void	 envelope_memo_free(struct env_memo *);
int	 envelope_check_memo(struct jscan *, const char *, size_t,
	    struct env *, struct env_error *, struct env_memo *,
	    const struct jscan_memo *);
int	 envelope_check_ttls(struct jscan *, const char *, const struct env *,
	    struct env_error *);
char	*envelope_error(const char *, const char *, const char *,
	    const char *, const char *, const char *, size_t *);
char	*envelope_cancel(const char *, const char *, const char *,
	    size_t *);
char	*envelope_goal(const char *, json_t *, json_t *, const char *, size_t *,
	    char *, size_t);
char	*envelope_fill(struct jscan *, const char *, size_t,
	    const struct env *, const char *, const char *, size_t *);
char	*envelope_reflect(struct jscan *, const char *, size_t,
	    const struct env *, const char *, const char *, const char *,
	    unsigned int, size_t *);
char	*envelope_action(struct jscan *, const char *, int, const char *,
	    const char *, const char *, size_t, size_t *);
char	*envelope_mark(struct jscan *, const char *, size_t,
	    const char *, size_t *);
#define FORGED_CORRAL	0x1	/* it carried our corral member */
#define FORGED_SENDER	0x2	/* its agent.id named someone else */
char	*envelope_own(struct jscan *, const char *, size_t,
	    const struct env *, const char *, int *, size_t *);
/*
 * Would envelope_own leave a checked line as it is?  No corral member,
 * and agent.id (when sender, of sn bytes, is given) sender itself,
 * written plainly: what
 * honest agents send, answered without a call.  Zero when in doubt (an
 * escaped id): envelope_own then decides.
 */
static inline int
envelope_is_own(const struct jscan *js, const char *s, const struct env *env,
    const char *sender, size_t sn)
{
	const struct jtok	*k;
	size_t			 n;

	if (env->corral != -1)
		return 0;
	if (sender == NULL || env->agent_id == -1)
		return 1;
	k = &js->tok[env->agent_id];
	if (k->type != JT_STRING || (k->flags & JT_ESCAPED))
		return 0;
	n = k->len - 2;
	return sn == n && memcmp(s + k->off + 1, sender, n) == 0;
}
char	*envelope_add_parent(struct jscan *, const char *, size_t,
	    const struct env *, const char *, size_t *);
char	*envelope_corral_set(struct jscan *, const char *, size_t,
	    const struct env *, const char *, const char *, size_t *);

/*
 * Copy a trace id (trace.id) into buf; returns its length when there is
 * one (and it fits), -1 when not.  Inline: the engine copies one for
 * every input and every reply.
 */
static inline int
envelope_trace_id(struct jscan *js, const char *s, const struct env *env,
    char *buf, size_t len)
{
	const char	*v;
	size_t		 vl;

	if (env->trace_id == -1)
		return -1;
	v = jscan_text(js, s, env->trace_id, &vl);
	if (vl >= len)
		return -1;
	memcpy(buf, v, vl);
	buf[vl] = '\0';
	return (int)vl;
}

/*
 * Return nonzero if trace.parents holds id.  Inline: every reply is
 * matched to its request by it.
 */
static inline int
envelope_has_parent(struct jscan *js, const char *s, const struct env *env,
    const char *id)
{
	const struct jtok	*k;
	size_t			 idlen;
	int			 e;

	if (env->parents == -1)
		return 0;
	idlen = strlen(id);
	for (e = jscan_first(js, env->parents); e != -1;
	    e = jscan_next(js, env->parents, e)) {
		k = &js->tok[e];
		if (!(k->flags & JT_ESCAPED) ? k->len == idlen + 2 &&
		    memcmp(s + k->off + 1, id, idlen) == 0 :
		    jscan_str_equal(js, s + k->off, k->len, 1, id, idlen))
			return 1;
	}
	return 0;
}
const char *envelope_raw_id(struct jscan *, const char *, char *, size_t);

/* adr007.c */
struct adr007_defaults {
	const char	*workflow;	/* context.workflow of no step's request */
	const char	*feature_id;	/* and its feature_id, or NULL */
};
struct adr007_error {
	char	field[64];		/* "artifacts[0].operation", "" */
	char	msg[256];
};
char	*adr007_input(const char *, size_t, const struct adr007_defaults *,
	    size_t *, char *, size_t);
char	*adr007_reply(const char *, size_t, const char *, const char *,
	    const char *, size_t *, struct adr007_error *);
json_t	*adr007_read(const char *, size_t, struct adr007_error *);

/* codec.c, codec-bus.c, codec-agentmessage.c */
#define CODEC_RING	256	/* requests (and message ids) a codec remembers */
#define CODEC_BUCKETS	512	/* a ring's index by id */
struct codec_entry {
	char		 id[CORRAL_ID_MAX];
	char		 intent[INTENT_NAME_MAX];
	char		 kind[24];
	uint32_t	 hash;		/* of id */
	int16_t		 chain;		/* the next older entry of its bucket */
};
/* The last CODEC_RING entries, found by id. */
struct codec_ring {
	struct codec_entry	 e[CODEC_RING];
	int16_t			 buckets[CODEC_BUCKETS];	/* newest first */
	size_t			 next;
};
struct codec_ops;
struct codec_state {
	const struct codec_ops	*ops;
	char			 agent[CORRAL_ID_MAX];
	struct codec_ring	 reqs;		/* requests delivered or made */
	struct codec_ring	 seen;		/* ids of messages it accepted */
	int			 slow;		/* tests: never the tape path */
};
struct codec_error {
	const char	*code;
	char		 path[128];
	char		 msg[256];
	char		 parent[CORRAL_ID_MAX];
};
struct codec_ops {
	const char	*name;
	int		 (*decode)(struct codec_state *, json_t *, json_t *,
			    struct codec_error *);
	json_t		*(*encode)(struct codec_state *, json_t *);
	const char	*(*message_id)(json_t *);
	/*
	 * The per-message kinds from the scanner's tape, written with jsonw:
	 * 1 when done, 0 to leave the line to decode or encode.
	 */
	int		 (*tape_decode)(struct codec_state *, struct jscan *,
			    const char *, struct jsonw *);
	int		 (*tape_encode)(struct codec_state *, struct jscan *,
			    const char *, struct jsonw *);
	/*
	 * The id of a message that a sender may deliver again (in buf, with
	 * the path of its member in path): 1, or 0 when it has none (or
	 * says nothing worth deduplicating: a heartbeat).
	 */
	int		 (*tape_id)(struct jscan *, const char *, char *, size_t,
			    const char **);
};
#define CODEC_REDELIVERY	2	/* codec_decode_line: seen before */
extern const struct codec_ops codec_bus_ops;
extern const struct codec_ops codec_agentmessage_ops;
json_t	*codec_alive(void);
struct codec_state *codec_create(const struct codec_ops *, const char *);
void	 codec_free(struct codec_state *);
void	 codec_remember(struct codec_state *, const char *, const char *,
	    const char *);
const struct codec_entry *codec_recall(const struct codec_state *,
	    const char *);
const struct codec_entry *codec_recall_kind(const struct codec_state *,
	    const char *, const char *);
int	 codec_refuse(struct codec_error *, const char *, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
const char *codec_intent(const char *);
json_t	*codec_envelope(const char *, const char *, const char *,
	    const char *);
void	 codec_trace(json_t *, const char *, const char *);
json_t	*codec_call(const char *, const char *, const char *, json_t *);
int	 codec_call_id(json_t *, char *, size_t, const char **);
int	 codec_prio(json_t *);
int	 codec_prio_name(const char *);
const char *codec_str(json_t *, const char *, const char *);
const char *codec_kind(json_t *);
const char *codec_parent(json_t *);
json_t	*codec_content(json_t *);
int	 codec_tape_text(struct jscan *, const char *, int, char *, size_t);
void	 codec_tape_raw(struct jsonw *, struct jscan *, const char *, int);
int	 codec_tape_prio(struct jscan *, const char *, int);
int	 codec_tape_content(struct jscan *, const char *, int);
void	 codec_tape_envelope(struct jsonw *, const char *, const char *,
	    const char *, struct jscan *, const char *, int, int);
int	 codec_tape_kind(struct jscan *, const char *, char *, size_t);
void	 codec_tape_trace(struct jsonw *, struct jscan *, const char *, int,
	    int);
void	 codec_tape_common(struct jsonw *, struct jscan *, const char *, int,
	    int, int);
void	 codec_tape_str_or(struct jsonw *, struct jscan *, const char *, int,
	    const char *);
void	 codec_tape_member(struct jsonw *, const char *, struct jscan *,
	    const char *, int);
void	 codec_tape_score(struct jsonw *, struct jscan *, const char *, int);
int	 codec_tape_message_id(struct jscan *, const char *, int, int, char *,
	    size_t);
int	 codec_decode_line(struct codec_state *, const char *, size_t,
	    char **, size_t *, struct codec_error *);
char	*codec_encode_line(struct codec_state *, const char *, size_t,
	    size_t *);

/* proc.c */
void	 proc_init(struct proc *);
void	 proc_waited(pid_t, int);
int	 proc_spawn(struct proc *, const struct agent_conf *, char *const *,
	    const char *, const char *, char *const *, int,
	    const struct proc_hooks *, void *, struct spawn_result *);
void	*proc_owner(const struct proc *);
int	 proc_exited(const struct proc *);
int	 proc_status(const struct proc *);
pid_t	 proc_pid(const struct proc *);
pid_t	 proc_hostpid(const struct proc *);
int	 proc_has_pid(const struct proc *, pid_t);
void	 proc_signal(struct proc *, int);
void	 proc_out_eof(struct proc *);
void	 proc_pipe_closed(struct proc *, const char *);
void	 proc_abandon_pipes(struct proc *);
void	 proc_err_watch(struct proc *, int);
int	 proc_err_open(const struct proc *);
void	 proc_err_read(struct proc *);
void	 proc_release(struct proc *);
void	 proc_free(struct proc *);
size_t	 proc_stderr_lines(const struct proc *, char *, size_t, unsigned int);
const char *proc_stderr_head(const struct proc *, size_t *);
const char *proc_stderr_tail(const struct proc *, size_t *);
struct proc_call *proc_call_find(pid_t);
void	 proc_on_stop(proc_stop_cb);
int	 proc_call_start(struct proc_call *, const struct agent_conf *,
	    char *const *, const char *, const char *, char *const *,
	    const char *, size_t, size_t, char *, size_t);
void	 proc_call_kill(struct proc_call *);
void	 proc_call_interrupt(struct proc_call *);
void	 proc_call_free(struct proc_call *);

/* adapter.c */
void	 adapter_on_reply(adapter_reply_cb);
void	 adapter_on_progress(adapter_progress_cb);
void	 adapter_on_find(adapter_find_cb);
struct msg *adapter_find(struct agent *, const char *, unsigned int);
void	 adapter_progress(struct agent *, struct msg *, const char *, int);
void	 adapter_progressf(struct agent *, struct msg *, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
void	 adapter_attach(struct agent *, const struct adapter_ops *);
int	 adapter_attached(const struct agent *);
char	**adapter_env(const struct agent *);
json_t	*adapter_metadata(struct agent *);
int	 adapter_per_call(const struct agent *);
int	 adapter_start(struct agent *);
void	 adapter_ready(struct agent *, const char *);
void	 adapter_ping(struct agent *);
void	 adapter_request(struct agent *, struct msg *);
int	 adapter_line(struct agent *, const char *, size_t);
void	 adapter_cancel(struct agent *, struct msg *);
int	 adapter_keeps(struct agent *, struct msg *);
int	 adapter_ordered(struct agent *);
int	 adapter_resume_session(struct agent *, const char *);
char	*adapter_request_session(struct msg *);
int	 adapter_stop(struct agent *);
void	 adapter_free(struct agent *);
void	 adapter_reply(struct agent *, struct msg *, json_t *);
void	 adapter_reply_error(struct agent *, struct msg *, const char *,
	    const char *, const char *, json_t *);
json_t	*adapter_envelope(struct agent *, struct msg *, const char *, int);
char	*adapter_template(const char *, json_t *, const struct msg *);
int	 adapter_template_check(const char *, char *, size_t);
json_t	*adapter_request_json(struct msg *);
struct proc_call *adapter_proc_new(struct agent *, struct msg *);
void	 adapter_proc_done(struct proc_call *);
void	 adapter_percall_check(struct agent *);
char	**adapter_argv(struct agent *);
void	 adapter_free_argv(char **);
unsigned int adapter_inflight_cap(const struct agent *);
int	 adapter_check_keys(json_t *, const char *, const char *const *,
	    char *, size_t);
int	 adapter_check_word(json_t *, const char *, const char *,
	    const char *, const char *, char *, size_t);
int	 adapter_check_common(json_t *, char *, size_t);
int	 adapter_duration(json_t *, double *);
void	 adapter_settings(struct adapter_settings *, json_t *);
json_t	*adapter_envelope_ok(struct agent *, struct msg *,
	    const struct adapter_settings *, int);
json_t	*adapter_number(double);
void	 adapter_append(char **, const char *, const char *);
char	*adapter_prompt(struct agent *, struct msg *, const char *);
const char *adapter_stderr_line(const struct proc_call *, int *);

/* adapter-tools.c */
void	 adapter_tools_init(const char *, const char *, const char *);
const char *adapter_tools_exe(void);
int	 adapter_tools(struct agent *, char *, size_t);
const char *adapter_tools_list(const struct agent *);
void	 adapter_tools_names(const struct agent *, const char *, char *,
	    size_t);
void	 adapter_set_env(struct agent *, const char *, const char *);
char	**adapter_tools_args(struct agent *, const char *);
size_t	 adapter_tools_count(char **);

/* adapter-cli.c */
int	 adapter_cli_check(json_t *, char *, size_t);
void	*adapter_cli_start(struct agent *, const struct adapter_cli_tool *,
	    size_t);
void	 adapter_cli_set(char **, const char *);
void	 adapter_cli_request(struct agent *, struct msg *);
void	 adapter_cli_cancel(struct agent *, struct msg *);
void	 adapter_cli_stop(struct agent *);
int	 adapter_cli_ordered(struct agent *);
int	 adapter_cli_resume_session(struct agent *, const char *);
void	 adapter_cli_free(struct agent *);
void	 adapter_cli_spawn(struct agent *, struct msg *, char **,
	    const char *, void *);
int	 adapter_cli_conversation(struct proc_call *, const char *, int);
void	 adapter_cli_done(struct proc_call *);
void	 adapter_cli_reply(struct proc_call *, const char *, const char *,
	    const char *, double, double);
void	 adapter_cli_fail(struct proc_call *, const char *, const char *,
	    const char *, const char *);
void	 adapter_cli_exited(struct proc_call *, const char *, const char *, int);

/* adapter-exec.c, adapter-claude.c, adapter-codex.c, adapter-gemini.c,
 * adapter-mcp.c */
extern const struct adapter_ops adapter_exec_ops;
extern const struct adapter_ops adapter_claude_ops;
extern const struct adapter_ops adapter_codex_ops;
extern const struct adapter_ops adapter_gemini_ops;
extern const struct adapter_ops adapter_mcp_ops;

/* adapter-replay.c: corral replay's stand-in for agents */
struct replay_run;
extern const struct adapter_ops adapter_replay_ops;
typedef void (*replay_frame_cb)(struct peer *, const char *, size_t);
void	 adapter_replay_set(struct replay_run *, struct replay_run *);
void	 adapter_replay_on_frame(replay_frame_cb);
void	 adapter_replay_fed(void);
int	 adapter_replay_active(void);

/* adapter-table.c */
const struct adapter_ops *adapter_table_find(const char *);
const char *adapter_table_home(const char *);
int	 adapter_table_check(const struct agent_conf *, char *, size_t);
int	 adapter_table_per_call(const char *);

/* cmd.c: what main() needs of the command table (the rest: cmd.h) */
struct cmd_entry;
const struct cmd_entry *cmd_find(const char *);
const char *cmd_nearest(const char *);
int	 cmd_exec(const struct cmd_entry *, int, char **, int);
void	 cmd_usage_all(FILE *);

/* dialect.c, dialect-table.c, dialect-map.c */
void	 dialect_init(const struct dialect_consumers *);
const struct dialect_stats *dialect_stats_get(void);
int	 dialect_is(struct agent *, const char *);
int	 dialect_switch(struct agent *, const char *);
void	 dialect_spawned(struct agent *);
void	 dialect_memo_free(struct agent *);
void	 dialect_send(struct agent *, const char *, size_t, enum dialect_kind);
void	 dialect_notice(struct agent *, const char *, const char *,
	    const char *, const char *);
void	 dialect_warn(struct agent *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
void	 dialect_bad_message(struct agent *);
void	 dialect_good_message(struct agent *);
void	 dialect_answered(struct agent *);
int	 dialect_has_answered(const struct agent *);
int	 dialect_failed_output(const struct agent *);
void	 dialect_input(struct peer *, char *, size_t, enum ndjson_kind,
	    size_t);
const struct dialect *dialect_find(const char *);
void	 dialect_adr007_defaults(const char *, const char *);
const char *dialect_table_name(size_t);
json_t	*dialect_map_message(const char *, json_t *, json_t *, json_t *,
	    char *);

/*
 * lifecycle.c: who starts an agent's processes, when it is not agent.c
 * itself (launch.c registers it): spawn instead of agent_spawn, and
 * whether an agent ready at spawn waits for word from it (nonzero).
 */
struct lifecycle_spawner {
	int	(*spawn)(struct agent *, char **, char *const *,
		    struct spawn_result *);
	int	(*waits)(struct agent *);
};

/* lifecycle.c */
void	 lifecycle_init(void);
void	 lifecycle_set_spawner(const struct lifecycle_spawner *);
void	 lifecycle_observe(lifecycle_observer);
void	 lifecycle_set_shutdown(void);
int	 lifecycle_shutting_down(void);
const char *lifecycle_state_name(enum agent_state);
const char *lifecycle_event_name(enum agent_event);
enum agent_state lifecycle_next(enum agent_state, enum agent_event, int);
int	 lifecycle_rule(enum agent_state, enum agent_event, int *, int *);
void	 lifecycle_feed(struct agent *, enum agent_event, const char *);
void	 lifecycle_event(struct agent *, enum agent_event, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
int	 lifecycle_load(const struct agent *);
int	 lifecycle_routable(const struct agent *);
int	 lifecycle_alive(const struct agent *);
int	 lifecycle_stopping(const struct agent *);
int	 lifecycle_done(const struct agent *);
int	 lifecycle_leaving(const struct agent *);
int	 lifecycle_stop_asked(const struct agent *);
int	 lifecycle_handshaking(const struct agent *);
enum agent_state lifecycle_state(const struct agent *);
ev_tstamp lifecycle_last_activity(const struct agent *);
unsigned int lifecycle_restarts(const struct agent *);
uint64_t lifecycle_start_seq(const struct agent *);
unsigned int lifecycle_outstanding(const struct agent *);
unsigned int lifecycle_window(const struct agent *);
void	 lifecycle_answered(struct agent *, double);
unsigned int lifecycle_window_next(unsigned int, unsigned int, double);
void	 lifecycle_work(struct agent *, int);
const char *lifecycle_cause(const struct agent *);
const char *lifecycle_last_exit(const struct agent *);
void	 lifecycle_set_policy(struct agent *, int);
struct agent *lifecycle_create(struct agent_conf *, unsigned int,
	    struct agent *);
int	 lifecycle_start(struct agent *);
void	 lifecycle_ready(struct agent *, const char *);
void	 lifecycle_activity(struct agent *);
void	 lifecycle_timeout(struct agent *);
void	 lifecycle_replied(struct agent *);
double	 lifecycle_backoff(const struct agent_conf *, unsigned int, double);
int	 lifecycle_will_restart(const struct agent *);
void	 lifecycle_spawn_failed(struct agent *, const char *, int);
int	 lifecycle_has_live_children(const struct agent *);
void	 lifecycle_stop(struct agent *, const char *);
void	 lifecycle_restart(struct agent *, const char *);
void	 lifecycle_kill(struct agent *);
void	 lifecycle_fail(struct agent *, const char *);

/* launch.c: one host of a launch.hosts, as the placement rule sees it. */
struct launch_slot {
	unsigned int	 agents;	/* of this corral's, running there */
	uint64_t	 placed;	/* when last chosen; 0: never */
	int		 out;		/* its breaker keeps it out */
};

/* launch.c */
void	 launch_init(const struct workflow *);
int	 launch_pick(enum launch_place, const struct launch_slot *, size_t,
	    int);
void	 launch_free_hosts(void);
char	**launch_expand(char *const *, size_t, json_t *);
json_t	*launch_metadata(const struct agent *);

/* breaker.c */
void	 breaker_init(agent_cb);
void	 breaker_forget(struct agent *);
int	 breaker_allows(struct agent *);
int	 breaker_is_open(const struct agent *);
void	 breaker_sent(struct agent *);
void	 breaker_failure(struct agent *);
void	 breaker_success(struct agent *);

/* budget.c */
void	 budget_init(const struct workflow *);
void	 budget_on_subtree(budget_cb);
void	 budget_on_run(void (*)(const char *));
void	 budget_forget(struct agent *);
void	 budget_set(struct agent *, double, double, double);
void	 budget_stop_clock(struct agent *);
void	 budget_totals(double *, double *, double *);
void	 budget_used(const struct agent *, double *, double *);
void	 budget_limits(const struct agent *, double *, double *);
int	 budget_run_spent(void);
int	 budget_over(const struct agent *, char *, size_t);
void	 budget_run_timeout(const char *);
void	 budget_account(struct agent *, double, double, double);

/* join.c */
char	*join_result(const struct job *, size_t *, int *, int *);
char	*join_request(const struct job *, const char *, const char *, size_t *);
void	 join_summary(const char *, size_t, char *, size_t);

/* route.c */
void	 route_init(const struct workflow *, const struct route_hooks *);
void	 route_on_capability(int (*)(struct agent *, const char *));
void	 route_on_answer(int (*)(struct msg *, struct agent *));
void	 route_blockers(struct msg *, void (*)(struct agent *, struct msg *));
void	 route_requeue(struct msg *, unsigned int);
unsigned int route_queued_count(void);
int	 route_submit(struct msg *);
void	 route_direct(struct msg *);
void	 route_kick(struct agent *);
void	 route_hold(struct agent *, int);
void	 route_dequeue(struct msg *);
struct msg *route_direct_first(struct agent *);
struct msg *route_direct_next(struct msg *);
unsigned int route_direct_count(struct agent *);
int	 route_row_queued(int);
struct route *route_for(int);
void	 route_fail_all(const char *);
void	 route_check_orphans(void);
void	 route_add_agent(struct agent *);
void	 route_remove_agent(struct agent *);

/* engine.c */
struct engine_stats {
	uint64_t	 accepted;
	uint64_t	 replied;
	uint64_t	 errored;
	uint64_t	 expired;
	uint64_t	 late;		/* late or duplicate replies */
	uint64_t	 retried;
	uint64_t	 reflections;
	uint64_t	 live_msgs;
	uint64_t	 steps;
	size_t		 bytes;		/* held in requests and results */
};
void	 engine_init(const struct workflow *, const struct engine_hooks *);
void	 engine_on_task(const struct engine_task_hooks *);
void	 engine_on_step(const struct engine_step_hooks *);
int	 engine_step_submit(struct job *, char *, size_t, int,
	    const struct agent_conf *, const char *);
void	 engine_job_hold(struct job *);
void	 engine_job_unhold(struct job *);
void	 engine_job_end_branch(struct job *, const char *, const char *,
	    size_t, int);
const struct engine_stats *engine_stats_get(void);
struct job *engine_job_create(int);
unsigned int engine_jobs_count(void);
struct msg *engine_msg_create(struct job *, char *, size_t, int, int);
void	 engine_redirect(struct msg *);
void	 engine_handoff(struct msg *, struct agent *, char *, size_t);
void	 engine_msg_line(struct msg *, char *, size_t);
void	 engine_progress(struct agent *, struct msg *, const char *, int);
void	 engine_inherit(struct agent *, struct msg *);
void	 engine_set_title(struct msg *, const char *, size_t);
void	 engine_start(struct msg *);
void	 engine_prio_waiting(struct msg *);
void	 engine_report(struct agent *, struct msg *, const char *,
	    const char *, const char *, const char *);
int	 engine_severity(const char *);
const char *engine_report_risk(json_t *, char *, size_t);
void	 engine_progress_last(struct msg *);
void	 engine_progress_forget(struct msg *);
void	 engine_msg_setup(struct msg *, const char *, struct agent *,
	    struct agent *, int, double);
struct msg *engine_find(const char *);
struct msg *engine_inflight_first(struct agent *);
struct msg *engine_inflight_next(struct msg *);
struct msg *engine_inflight_find(struct agent *, const char *, unsigned int);
int	 engine_resume_retrace(struct msg *, const char *, unsigned int);
int	 engine_resume_answer(struct agent *, const char *, unsigned int,
	    const char *, size_t);
const char *engine_progress_latest(struct agent *, const char **,
	    ev_tstamp *);
struct msg *engine_live_next(struct msg *);
void	 engine_cancel(struct msg *, const char *);
unsigned int engine_cancel_agent(struct agent *, const char *);
void	 engine_fail(struct msg *, const char *, const char *, const char *,
	    ...) __attribute__((format(printf, 4, 5)));
void	 engine_replied(struct msg *, struct agent *, const char *,
	    const char *, const char *, size_t, int);
void	 engine_account(struct agent *, const struct env *);
void	 engine_request_done(struct msg *, const char *, size_t, int);
void	 engine_limit(struct job *, const char *, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
void	 engine_limit_all(const char *, const char *);
int	 engine_has_room(size_t);
void	 engine_input(struct peer *, struct dialect_frame *);
void	 engine_agent_envelope(struct agent *, struct dialect_frame *);
void	 engine_agent_invalid(struct agent *, struct dialect_frame *);
int	 engine_start_goal(const char *, size_t);
void	 engine_shutdown(const char *);
void	 engine_interrupt(const char *);
int	 engine_idle(void);

/* trace.c */
void	 trace_enable(int);
int	 trace_on(void);
void	 trace_envelope(const char *, const char *, const char *, size_t);

/* auditlog.c, auditlog-read.c */
#define AUDITLOG_FORMAT		1	/* run_start's format: what readers check */
#define AUDITLOG_FORMAT_S	"1"
#define AUDITLOG_SYNC_DEFAULT	1000	/* --log-sync, in milliseconds */
typedef void (*auditlog_error_cb)(const char *, int);
int	 auditlog_level(const char *);
typedef void (*auditlog_line_cb)(const char *, size_t);

/* Reading a log back, a whole line at a time (auditlog-read.c). */
struct auditlog_reader {
	FILE		*in;
	char		*path;
	char		*line;
	size_t		 cap;
	size_t		 lineno;	/* of the last line read */
	size_t		 bad;		/* lines that are not JSON objects */
	size_t		 first_bad;
	size_t		 torn;		/* bytes of a last line cut short */
	int		 started;	/* a run_start was read */
	int		 ended;		/* and a run_end after the last one */
	int		 format;	/* the last run_start's */
	char		 why[512];	/* why reading stopped early */
};

int	 auditlog_open(const char *, const char *);
int	 auditlog_sync_parse(const char *, int *);
void	 auditlog_set_sync(int);
void	 auditlog_set_resumes(const char *);
int	 auditlog_close(void);
uint64_t auditlog_offset(void);
int	 auditlog_enabled(void);
void	 auditlog_on_error(auditlog_error_cb);
void	 auditlog_on_line(auditlog_line_cb);
void	 auditlog_flush(void);
void	 auditlog_tick(void);
void	 auditlog_event(const char *, const char *, const char *, ...);
void	 auditlog_envelope_q(const char *, size_t, const char *, unsigned,
	    const char *, unsigned, const char *, size_t);
void	 auditlog_fields(const char *, const char *, const char *,
	    const char *, size_t);
void	 auditlog_json(const char *, const char *, json_t *);
void	 auditlog_route_q(const char *, unsigned, const char *, unsigned,
	    const char *, unsigned, const char *, size_t);
void	 auditlog_replied(const char *, const char *, const char *,
	    const char *, const char *);
void	 auditlog_job_end_q(const char *, unsigned, int, const char *);
void	 auditlog_reply_q(const char *, unsigned, const char *, unsigned,
	    const char *, unsigned, const char *, size_t, const char *);
void	 auditlog_reflect(const char *, const char *, const char *, int,
	    double);

/*
 * The writers of a request's lines take, beside each id, what is known of
 * it (jsonw_idq: its length, and that it needs no escape), or 0 when
 * nothing is: the ids the engine keeps are measured and checked once,
 * where they are made, not in every line.  These forms know nothing.
 */

/*
 * Record an envelope as it travelled, as event ev (a literal: inlined
 * here, the compiler knows its length).
 */
static inline void
auditlog_envelope(const char *ev, const char *agent, const char *id,
    const char *line, size_t len)
{
	auditlog_envelope_q(ev, strlen(ev), agent, 0, id, 0, line, len);
}

/* Record that a request went to agent, for intent, with reason (a literal). */
static inline void
auditlog_route(const char *agent, const char *id, const char *intent,
    const char *reason)
{
	auditlog_route_q(agent, 0, id, 0, intent, 0, reason, strlen(reason));
}

/* Record that job id ended, failed or not, with its risk (NULL: none). */
static inline void
auditlog_job_end(const char *id, int failed, const char *risk)
{
	auditlog_job_end_q(id, 0, failed, risk);
}

/*
 * Record agent's reply reply (its line of len bytes) to request id, and
 * the request's outcome "replied" with its risk (NULL: none).
 */
static inline void
auditlog_reply(const char *agent, const char *id, const char *reply,
    const char *line, size_t len, const char *risk)
{
	auditlog_reply_q(agent, 0, id, 0, reply, 0, line, len, risk);
}
int	 auditlog_read_open(struct auditlog_reader *, const char *);
int	 auditlog_read_next(struct auditlog_reader *, json_t **);
void	 auditlog_read_report(struct auditlog_reader *, FILE *);
void	 auditlog_read_close(struct auditlog_reader *);

/* resume.c: corral resume, a run that did not end continued. */
struct resume_log {
	json_t		*paths;		/* path: {id, entry, answer, sent} */
	json_t		*given;		/* first ids given back this run */
	json_t		*sessions;	/* agent id: its last reply's session */
	json_t		*goal;		/* the goal envelope */
	char		*run;		/* the run id it continues */
	char		*workflow;	/* run_start's */
	double		 elapsed;	/* seconds it went, over its parts */
	double		 seg_t;		/* the last line's t, this part */
	unsigned int	 segments;	/* the run and its resumed runs */
	size_t		 answered;	/* requests the log answered */
	int		 ended;		/* run_end: nothing to resume */
	int		 decisions;	/* --log-level decisions */
};
int	 resume_read(struct resume_log *, const char *, FILE *, char *,
	    size_t);
void	 resume_free(struct resume_log *);
void	 resume_start(struct resume_log *);
void	 resume_stop(void);

/* replay.c: a run's requests by their paths, for corral replay. */
struct replay_run {
	json_t		*reqs;		/* request id: {path, intent, kind,
					   entry, holder, outcome, answer, by,
					   handed, parent, work} */
	json_t		*paths;		/* path: the same, the first there */
	json_t		*replies;	/* reply id: its envelope, until used */
	json_t		*reply_req;	/* reply id: its request's id */
	json_t		*agents;	/* agent id: its workflow entry */
	json_t		*siblings;	/* path prefix and intent: how many */
	json_t		*jobs;		/* job path: {status, last} */
	json_t		*order;		/* paths, first seen first */
	json_t		*job_order;
	json_t		*missing;	/* [path, entry]: asked, not recorded */
	json_t		*asks;		/* own request id: its step */
	json_t		*spawned;	/* spawned child's task id: visible */
	json_t		*goal;		/* the goal envelope */
	char		*workflow;	/* run_start's */
	const char	*last;		/* path of the last outcome */
	size_t		 handoffs;	/* handoff lines read */
	json_t		*escalations;	/* ask key: {key, job, step, action,
					   text} */
	json_t		*asked;		/* the same, in the order asked */
};
void	 replay_run_init(struct replay_run *);
void	 replay_run_free(struct replay_run *);
void	 replay_feed(struct replay_run *, json_t *);
void	 replay_feed_line(struct replay_run *, const char *, size_t);
const char *replay_path_of(struct replay_run *, const char *);
void	 replay_alias(struct replay_run *, const char *, const char *);
json_t	*replay_answer(struct replay_run *, const char *, const char *);
json_t	*replay_steps(struct replay_run *, const char *, const char *);
size_t	 replay_count(struct replay_run *);
const char *replay_path_at(struct replay_run *, size_t);
int	 replay_ended(struct replay_run *, const char *);
json_t	*replay_escalation(struct replay_run *, const char *);
void	 replay_missing(struct replay_run *, const char *, const char *);
size_t	 replay_diff(struct replay_run *, struct replay_run *, FILE *);

/* step.c, step-request.c, step-escalate.c, step-record.c: workflows of
 * steps (docs/steps.md). */
#define STEP_RETRY	0	/* a person's answer: retry with it */
#define STEP_PROCEED	1	/* proceed anyway */
#define STEP_ABORT	2	/* abort the run */
#define STEP_ON_WAIT	0	/* --on-escalate: wait for an answer */
#define STEP_ON_FAIL	1	/* fail the job */
#define STEP_ON_EXIT	2	/* write a record, exit 3 */
#define STEP_ON_REPLAY	3	/* wait: corral replay answers as recorded */
#define EXIT_ESCALATED	3	/* corral run stopped for a person */
#define STEP_JOB_ENDED	"the job ended"	/* why a step waits no more */
struct step_options {
	int		 on_escalate;	/* STEP_ON_* */
	const char	*record;	/* where exit writes; NULL: the default */
	json_t		*resume;	/* the record a run resumes from */
	const char	*resume_path;
};
struct step_hooks {
	void	(*escalated)(json_t *);		/* a person is asked */
	/* The ask is over: job, step, why (the answer, or its end). */
	void	(*answered)(const char *, const char *, const char *);
	void	(*exiting)(const char *);	/* the record's path */
};
void	 step_init(const struct workflow *, const struct step_options *,
	    const struct step_hooks *);
const char *step_action_name(int);
void	 step_set_answerable(int);
int	 step_answer(const char *, const char *, int, const char *,
	    const char *, char *, size_t, char *, size_t);
json_t	*step_waiting(void);
void	 step_rpc_list(struct peer *, json_t *, json_t *);
void	 step_rpc_answer(struct peer *, json_t *, json_t *);
void	 step_workflow_name(const struct workflow *, char *, size_t);
json_t	*step_record_load(const char *, char *, size_t);
int	 step_record_answer(const char *, const char *, int, const char *,
	    char *, size_t);
int	 step_record_action(json_t *);
int	 step_record_check(json_t *, const struct workflow *, char *, size_t);

/* cancel.c */
void	 cancel_request(struct peer *, json_t *, json_t *);
void	 cancel_list(struct peer *, json_t *, json_t *);

/* mapview.c */
void	 mapview_init(void);
const char *mapview_state(enum agent_state);
const char *mapview_owner(const struct agent *);
void	 mapview_set_owner(struct agent *, const char *);
int	 mapview_merge(struct agent *, json_t *, char *, size_t);
int	 mapview_metadata_check(json_t *, char *, size_t);
void	 mapview_report(struct agent *, const char *);
const char *mapview_reported_state(struct agent *);
json_t	*mapview_own_metadata(struct agent *);
void	 mapview_note_error(struct agent *, const char *);
void	 mapview_add_capabilities(struct agent *, json_t *);
json_t	*mapview_capabilities(struct agent *);
int	 mapview_has_capability(struct agent *, const char *);
void	 mapview_owner_gone(const char *, int);
int	 mapview_owns(const char *);
int	 mapview_may_reach(struct agent *, struct agent *);
int	 mapview_sees(const struct peer *, struct agent *);
json_t	*mapview_describe(struct agent *);
struct agent *mapview_param_agent(json_t *);
struct external *mapview_param_external(json_t *);
int	 mapview_need_id(struct peer *, json_t *, json_t *);
json_t	*mapview_describe_external(struct external *);
void	 mapview_list(struct peer *, json_t *, json_t *);
void	 mapview_get(struct peer *, json_t *, json_t *);
void	 mapview_graph(struct peer *, json_t *, json_t *);

/* scope.c */
struct scope;
/* What mapview.c tells the scopes: how to describe an agent, who sees it. */
struct scope_hooks {
	json_t	*(*describe)(struct agent *);
	int	 (*sees)(const struct peer *, struct agent *);
};
void	 scope_init(const struct scope_hooks *);
int	 scope_exists(const char *);
struct scope *scope_create(const char *, const char *, int *, char *, size_t);
int	 scope_subscribe(struct agent *, const char *, char *, size_t);
int	 scope_unsubscribe(struct agent *, const char *);
int	 scope_check_join(json_t *, char *, size_t);
void	 scope_join(json_t *, struct agent *, const char *);
int	 scope_each(const char *, void (*)(struct agent *, void *), void *);
void	 scope_count_delivery(const char *, struct agent *, int);
int	 scope_has(const char *, struct agent *);
json_t	*scope_of(struct agent *);
void	 scope_list_request(struct peer *, json_t *, json_t *);
void	 scope_get_request(struct peer *, json_t *, json_t *);
void	 scope_create_request(struct peer *, json_t *, json_t *);
void	 scope_delete_request(struct peer *, json_t *, json_t *);
void	 scope_join_request(struct peer *, json_t *, json_t *);
void	 scope_leave_request(struct peer *, json_t *, json_t *);
void	 scope_members_request(struct peer *, json_t *, json_t *);

/* session.c */
void	 session_init(uint64_t);
void	 session_engine(const char *, const char *, const struct msg *,
	    const char *, const char *, size_t);
void	 session_note(json_t *, const char *, const char *, const char *,
	    const char *);
void	 session_note_line(const char *, size_t, const char *, const char *,
	    const char *, const char *);
void	 session_list_request(struct peer *, json_t *, json_t *);
void	 session_load_request(struct peer *, json_t *, json_t *);
void	 session_close_request(struct peer *, json_t *, json_t *);

/* taskreg.c */
#define TASK_PENDING		0
#define TASK_IN_PROGRESS	1
#define TASK_COMPLETED		2
#define TASK_FAILED		3
#define TASK_CANCELLED		4
#define TASK_NSTATUS		5
void	 taskreg_init(const struct workflow *);
void	 taskreg_request_ended(const struct msg *, const struct engine_end *);
int	 taskreg_exists(const char *);
void	 taskreg_add(const char *, json_t *, const char *, const char *);
void	 taskreg_assign(const char *, const char *, const char *);
int	 taskreg_end(const char *, const char *, const char *, size_t, int,
	    char *, size_t);
void	 taskreg_cancel(const char *, const char *);
json_t	*taskreg_describe(const char *);
int	 taskreg_text_of(const char *, const char **, const char **);
void	 taskreg_counts(unsigned int *);
const char *taskreg_status_name(int);
void	 taskreg_list_request(struct peer *, json_t *, json_t *);
void	 taskreg_create_request(struct peer *, json_t *, json_t *);
void	 taskreg_update_request(struct peer *, json_t *, json_t *);

/* message.c */
/* The id of a child's open task (subagent.c), or NULL. */
typedef const char *(*message_task_cb)(struct agent *);
void	 message_init(void);
void	 message_on_task(message_task_cb);
void	 message_task_assign(struct peer *, json_t *, json_t *);
uint64_t message_count(void);
void	 message_send(struct peer *, json_t *, json_t *);
void	 message_route(struct peer *, json_t *, json_t *);
void	 message_handoff(struct peer *, json_t *, json_t *);
void	 message_progress(struct peer *, json_t *, json_t *);
void	 message_report(struct peer *, json_t *, json_t *);
void	 message_result(const char *, struct agent *, const char *,
	    const char *, size_t, const char *);
void	 message_reply(struct agent *, struct msg *, struct jscan *,
	    const char *, size_t, struct env *);
void	 message_done(struct msg *, const char *, size_t, int);
int	 message_delegates(struct agent *, const char *, struct agent *,
	    const char *, const char *, size_t);

/* subagent.c */
void	 subagent_init(const struct workflow *);
void	 subagent_spawn(struct peer *, json_t *, json_t *);
void	 subagent_stop(struct peer *, json_t *, json_t *);
void	 subagent_suspend(struct peer *, json_t *, json_t *);
void	 subagent_resume(struct peer *, json_t *, json_t *);

/* metrics.c */
void	 metrics_init(void);
void	 metrics_outcome(const struct msg *, const char *, const char *);
json_t	*metrics_json(void);
void	 metrics_request(struct peer *, json_t *, json_t *);

/* otlp.c */
void	 otlp_configure(const char *);
int	 otlp_configured(void);
int	 otlp_open(void);
void	 otlp_replied(const struct msg *, const char *);
void	 otlp_outcome(const struct msg *, const char *, const char *,
	    const char *);
void	 otlp_close(void);

/* control.c */
void	 control_init(const struct control_info *);
void	 control_frame(struct peer *, const char *, size_t);
void	 control_gone(struct peer *);

/* server-client.c */
unsigned int server_client_count(void);
void	 server_client_create(int, uid_t, pid_t, struct agent *, int);
int	 server_client_evict(unsigned int, double, char *, size_t, double *);
void	 server_client_reap(void);
void	 server_client_close_all(void);

/* server.c */
void	 server_configure(const char *, int);
const char *server_path(void);
const char *server_rundir(void);
int	 server_start(void);
void	 server_stop(void);

/* supervisor.c */
#define MODE_RUN	0
#define MODE_SERVE	1
#define STDIN_P_JOBS		0x01	/* max_inflight jobs */
#define STDIN_P_QUEUE		0x02	/* route queues half full */
#define STDIN_P_STDOUT		0x04	/* stdout above its high mark */
#define STDIN_P_SHUTDOWN	0x08
void	 supervisor_setup(const struct workflow *, int);
struct chan *supervisor_stdio(void);
void	 supervisor_stdin_pause(int, int);
void	 supervisor_quiet(int);
int	 supervisor_run(const struct workflow *, int, const char *,
	    const char *, int);
void	 supervisor_shutdown(int);
void	 supervisor_step_options(const struct step_options *);
int	 supervisor_any_alive(void);

/* confine.c */
/* How an agent's $VARs are looked up: its environment, or a parent's. */
typedef const char *(*confine_var_cb)(const void *, const char *);
struct confine_where {
	const char	*dir;		/* the workflow's, for relative paths */
	const char	*cwd;		/* absolute */
	const char	*workspace;	/* or NULL */
	const char	*exe;		/* the program, absolute */
	confine_var_cb	 var;
	const void	*arg;
};
/* What a confinement protects, each as the kernel may lack it. */
#define CONFINE_P_LANDLOCK	0x01	/* all of it: never optional */
#define CONFINE_P_TRUNCATE	0x02
#define CONFINE_P_CONNECT	0x04
#define CONFINE_P_IOCTL		0x08
#define CONFINE_P_SIGNALS	0x10
#define CONFINE_P_ABSTRACT	0x20
#define CONFINE_P_METADATA	0x40
/* Where an agent may write, as real paths (for its mount namespace). */
struct confine_roots {
	char		**v;
	size_t		  n;
};
int	 confine_abi(void);
int	 confine_mountns(void);
unsigned int confine_missing(const struct confine *);
int	 confine_gaps(const struct confine *, char *, size_t);
int	 confine_refused(const struct confine *, char *, size_t);
unsigned int confine_protection(const char *);
const char *confine_protection_key(unsigned int);
int	 confine_ruleset(const struct confine *, const struct confine_where *,
	    struct confine_roots *, char *, size_t);
void	 confine_roots_meet(struct confine_roots *,
	    const struct confine_roots *);
void	 confine_roots_free(struct confine_roots *);
int	 confine_mount(char *const *, size_t, int *, const char **);
int	 confine_port(const char *);

/* workspace.c */
#define WORKSPACE_PATH_MAX	1024	/* bytes in an artifact's path */
#define WORKSPACE_DEPTH_MAX	32	/* components in an artifact's path */
#define WORKSPACE_ANY		0	/* create or replace */
#define WORKSPACE_CREATE	1	/* refuse a file that exists */
#define WORKSPACE_UPDATE	2	/* refuse a file that does not */
struct workspace_result {
	const char	*agent;		/* the author's id */
	const char	*reply;		/* the trace.id of the reply */
	const char	*path;
	const char	*why;		/* NULL: written; else why refused */
	size_t		 size;		/* the content's bytes */
	int		 first_refusal;	/* the first refused of its reply */
	int		 op;		/* WORKSPACE_* */
	const char	*sha256;	/* of the content, hex; NULL: none */
	void		*arg;		/* workspace_write's */
};
typedef void (*workspace_result_cb)(const struct workspace_result *);
int	 workspace_open(const struct workflow *);
void	 workspace_close(void);
int	 workspace_enabled(void);
const char *workspace_dir(void);
const char *workspace_path_problem(const char *, size_t);
void	 workspace_on_result(workspace_result_cb);
int	 workspace_artifacts(const char *, const char *, struct jscan *,
	    const char *);
void	 workspace_write(const char *, const char *, const char *, size_t,
	    const char *, size_t, int, workspace_result_cb, void *);

/* pidns.c */
/*
 * The waiter forwards a signal to the supervisor on this real-time
 * signal, the original's number in its value: real-time signals queue,
 * so a forward never merges with the supervisor's own pending copy of a
 * signal the whole process group got.
 */
#define PIDNS_SIGNAL	(SIGRTMIN + 1)
int	 pidns_enter(void);
int	 pidns_host_proc(void);
int	 pidns_active(void);
pid_t	 pidns_proc_pid(pid_t, pid_t);
void	 pidns_sweep(void);

/*
 * host.c: corral host, the far end of a launched agent
 * (docs/scale-out.md): the agent's command in a pid namespace there, its
 * pipes relayed, the link to corral watched both ways.
 */
#define HOST_LINK_MARK	'\x1e'	/* begins each line of the link's own */
struct host_opts {
	double			 alive;		/* a tick this often */
	double			 lost;		/* no byte from corral: lost */
	double			 grace;		/* stdin closed to SIGTERM */
	double			 timeout;	/* SIGTERM to SIGKILL */
	char			**env;		/* NAME=value */
	size_t			 nenv;
	struct rlimit_conf	*limits;
	size_t			 nlimits;
	const char		*cwd;
	int			 nopidns;
};
int	 host_run(const struct host_opts *, char **);

/* lineage.c */
typedef void *(*lineage_match_cb)(pid_t, void *);
int	 lineage_peer(int, pid_t, lineage_match_cb, void *, void **);

/* progress.c */
void	 progress_init(const struct workflow *, int);
void	 progress_start(void);
void	 progress_stop(void);
void	 progress_update(void);
void	 progress_hold(int);

/* prompt.c */
void	 prompt_init(int);
int	 prompt_active(void);
void	 prompt_ask(json_t *);
void	 prompt_cancel(const char *, const char *, const char *);
void	 prompt_stop(void);

/* tree.c */
int	 tree_render(const char *, const char *, FILE *);
int	 tree_render_graph(json_t *, double, const char *, FILE *);

#endif /* CORRAL_H */
