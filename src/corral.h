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

#include <ev.h>
#include <jansson.h>

#include "corral/protocol.h"

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
 * The intents of multiagent-1.0 (seed 000).  INTENT_COUNT is also the
 * index of the "*" fallback route.
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
#define ROUTE_FALLBACK	INTENT_COUNT

/* Priorities, as seed 001 numbers them. */
enum prio {
	PRIO_BATCH,
	PRIO_LOW,
	PRIO_NORMAL,
	PRIO_HIGH,
	PRIO_CRITICAL,
	PRIO_COUNT
};

/* Agent lifecycle states; docs/lifecycle.md maps them onto MAP's. */
enum agent_state {
	AS_INITIALIZING,
	AS_READY,
	AS_BUSY,
	AS_UNAVAILABLE,
	AS_SUSPENDED,
	AS_STOPPING,
	AS_STOPPED,
	AS_FAILED,
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
	AE_STOP,	/* a stop was requested */
	AE_EXITED,	/* reaped and both output pipes at EOF */
	AE_RESTART,	/* backoff over, spawn again */
	AE_GIVEUP,	/* will not be started again */
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
	uint32_t		*table;
	uint32_t		 tablecap;
	char			*tmp;
	size_t			 tmpcap;
	const char		*err;
	size_t			 err_off;
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

struct ndjson_reader {
	char	*buf;		/* the partial line */
	size_t	 len;
	size_t	 cap;
	size_t	 max;
	size_t	 discarded;
	size_t	 lines;
	int	 last_cr;	/* the last byte discarded was '\r' */
	int	 discarding;
	int	 truncate;
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

/* config.c: a workflow file. */
struct env_var {
	char	*key;
	char	*value;
};

struct rlimit_conf {
	int	 resource;
	long long value;	/* -1: leave as inherited */
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
	unsigned int		 instances;
	int			 autostart;	/* started with the workflow */
	enum ready_mode		 ready;
	double			 hb_interval;	/* 0: heartbeats off */
	unsigned int		 hb_misses;
	enum restart_policy	 restart;
	unsigned int		 restart_max;
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
	/* Adapters (docs/adapters.md). */
	char			*adapter;
	json_t			*adapter_conf;
	/* Filled in at load time. */
	unsigned int		 index;
};

struct route_conf {
	char		 *intent;	/* as written; "*" for the fallback */
	int		  line;
	struct agent_conf **agents;
	size_t		  nagents;
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
	unsigned int		 max_steps;
	unsigned int		 max_depth;	/* lineage depth of a job */
	double			 deadline;	/* seconds; 0: none */
	unsigned int		 max_queue;	/* messages waiting per route */
	unsigned int		 max_inflight;	/* jobs in flight in serve */
	unsigned int		 max_agents;	/* alive at once */
	unsigned int		 tree_depth;	/* sub-agent depth */
	unsigned int		 tree_children;
	double			 budget_tokens;
	double			 budget_cost;
	double			 budget_time;
	int			 inline_spawn;	/* map/agents/spawn with cmd */
	int			 shutdown_parallel; /* stop all at once */
	size_t			 stdin_max_line; /* serve --max-line, 0: auto */
	char			**agent_path;	/* where bare commands are found */
	size_t			 npath;
	char			**env_allow;
	size_t			 nenv_allow;
	char			*workspace;
	unsigned int		 retries;
	double			 retry_initial;
	double			 retry_factor;
	double			 retry_max;
};

/* A workflow-file loading error, with its position. */
struct config_error {
	int	line;
	int	column;
	char	msg[512];
};

/* A key of the workflow file as docs/workflow.md's key tables show it. */
struct config_keyinfo {
	const char	*name;		/* in its mapping's scope: restart.max */
	int		 agent;		/* a key of agents: (and defaults:) */
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

struct chan {
	int			 rfd;
	int			 wfd;
	ev_io			 rw;
	ev_io			 ww;
	struct ndjson_reader	 rd;
	struct ndjson_writer	 wr;
	chan_line_cb		 on_line;
	chan_event_cb		 on_eof;	/* arg: 0 read EOF */
	chan_event_cb		 on_werror;	/* arg: errno */
	chan_event_cb		 on_drain;	/* writer went below low */
	void			*owner;
	const char		*name;
	int			 flags;
#define CHAN_DIRTY	0x01	/* on the dirty list */
#define CHAN_RPAUSED	0x02	/* reading paused by backpressure */
#define CHAN_REOF	0x04	/* read side reached EOF */
#define CHAN_WCLOSED	0x08	/* write side closed */
#define CHAN_WFULL	0x10	/* writer above its high watermark */
#define CHAN_RSTOPPED	0x20	/* reading stopped by the owner */
	struct chan		*blocked_on;	/* the writer we wait for */
	TAILQ_HEAD(, chan)	 waiters;	/* readers waiting for us */
	TAILQ_ENTRY(chan)	 wait_entry;
	TAILQ_ENTRY(chan)	 dirty_entry;
};

/* agent.c: a running (or restarting) agent process. */
struct msg;
TAILQ_HEAD(msgq, msg);

struct agent {
	char			*id;
	struct agent_conf	*conf;
	unsigned int		 instance;
	enum agent_state	 state;
	int			 flags;
#define AGENT_EXITED	0x01	/* exit status reaped */
#define AGENT_ERR_EOF	0x02	/* stderr at EOF */
#define AGENT_OUT_EOF	0x04	/* stdout at EOF */
#define AGENT_STOPPED_SIG 0x08	/* stopped by SIGSTOP */
#define AGENT_HIDDEN	0x10	/* a child hidden from the routing table */
#define AGENT_DEAD	0x20	/* to be freed */
#define AGENT_MISSED	0x40	/* unavailable from missed heartbeats */
#define AGENT_NORESTART	0x80	/* stop for good */
#define AGENT_TIMEDOUT	0x100	/* unavailable from message timeouts */
#define AGENT_NOT_READY	0x200	/* no handshake yet */
#define AGENT_IN_POOL	0x400	/* routable through its workflow entry */
#define AGENT_STOP_PENDING 0x800 /* stops once its children have */
#define AGENT_RESTART_REQ 0x1000 /* restart after this exit, whatever it is */
#define AGENT_STOP_ASKED 0x2000	/* corral began stopping this process */
	pid_t			 pid;		/* as corral sees it */
	pid_t			 hostpid;	/* as the user's shell sees it */
	int			 status;	/* from waitpid */
	struct chan		 io;		/* stdin and stdout */
	int			 errfd;
	ev_io			 err_w;
	struct ndjson_reader	 err_rd;
	ev_child		 child_w;
	ev_timer		 hb_w;		/* heartbeats */
	ev_timer		 life_w;	/* stop escalation, restart */
	int			 life_step;
	const char		*pipe_what;	/* which pipe closed early */
	ev_tstamp		 spawned_at;
	ev_tstamp		 last_activity;
	ev_tstamp		 exited_at;
	ev_tstamp		*restarts;	/* recent restart times, a ring */
	unsigned int		 nrestarts;
	unsigned int		 restart_count;
	unsigned int		 hb_missed;
	int			 hb_pinged;	/* a ping is unanswered */
	uint64_t		 hb_seq;
	unsigned int		 timeouts;	/* consecutive */
	unsigned int		 outstanding;
	struct msgq		 inflight;	/* sent, awaiting a reply */
	struct msgq		 direct;	/* waiting for this agent alone */
	uint64_t		 last_pick;
	uint64_t		 start_seq;
	/* Circuit breaker. */
	int			 breaker;	/* 0 closed, 1 open, 2 half */
	unsigned int		 failures;
	unsigned int		 probes;
	unsigned int		 breaker_opens;
	ev_tstamp		 breaker_at;
	ev_timer		 breaker_w;
	ev_timer		 recover_w;	/* unavailable from timeouts */
	/* The tree. */
	struct agent		*parent;
	unsigned int		 depth;
	TAILQ_HEAD(, agent)	 children;
	TAILQ_ENTRY(agent)	 sibling;
	unsigned int		 nchildren;
	struct msg		*spawn_task;	/* a child's initial task */
	char			*spawn_id;	/* the spawn request's trace id */
	json_t			*spawn_rpc_id;
	int			 keep;		/* stays after its task */
	int			 restart_override;
	unsigned int		 limit_depth;
	unsigned int		 limit_children;
	double			 task_timeout;
	char			*stop_why;
	ev_timer		 budget_w;
	double			 tokens;	/* subtree totals */
	double			 cost;
	double			 budget_tokens;
	double			 budget_cost;
	double			 budget_time;
	char			*last_reply;	/* a child's latest reply */
	size_t			 last_reply_len;
	int			 last_reply_error;
	/* Rate limit of warnings about its output. */
	ev_tstamp		 warn_at;
	unsigned int		 warn_count;
	unsigned int		 warn_dropped;
	unsigned int		 notices_dropped;
	/* Statistics. */
	uint64_t		 msgs_in;
	uint64_t		 msgs_out;
	/* Lists. */
	RB_ENTRY(agent)		 by_id;
	TAILQ_ENTRY(agent)	 entry;		/* all agents, start order */
	TAILQ_ENTRY(agent)	 pool_entry;	/* its workflow entry's pool */
	/* Adapters keep their state here. */
	struct adapter		*adapter;
};
TAILQ_HEAD(agents, agent);
RB_HEAD(agent_tree, agent);

/* route.c: one row of the routing table, with its wait queue. */
struct route {
	int			 intent;	/* or ROUTE_FALLBACK */
	struct agent_conf	**confs;
	size_t			 nconfs;
	struct msgq		 queue[PRIO_COUNT];
	unsigned int		 queued;
	unsigned int		 served[PRIO_COUNT];
};

/* engine.c: a job is one goal (run) or one input envelope (serve). */
struct job {
	uint64_t		 seq;
	char			 id[CORRAL_ID_MAX];	/* the root envelope's */
	int			 origin;
#define JOB_RUN		0
#define JOB_SERVE	1
	unsigned int		 pending;	/* requests not yet answered */
	unsigned int		 steps;
	int			 done;
	int			 failed;
	char			*result;
	size_t			 resultlen;
	char			*last;		/* the latest terminal envelope */
	size_t			 lastlen;
	int			 last_error;
	int			 last_linked;	/* last names the job's input */
	ev_tstamp		 started;
	ev_timer		 deadline_w;
	TAILQ_ENTRY(job)	 entry;
};

/* A request: an envelope routed to an agent, awaiting one outcome. */
struct msg {
	char			 id[CORRAL_ID_MAX];
	char			*line;
	size_t			 len;
	uint8_t			 intent;
	uint8_t			 prio;
	uint8_t			 kind;
#define MSG_GOAL	0	/* corral run's first envelope */
#define MSG_INPUT	1	/* from corral serve's stdin */
#define MSG_ACTION	2	/* from a reply's next_actions */
#define MSG_REFLECT	3	/* a reflection on a weak reply */
#define MSG_TASK	4	/* a spawned child's initial task */
#define MSG_SEND	5	/* map/send between agents */
	uint8_t			 orig_intent;	/* reflections: of the reply */
	uint8_t			 where;
#define MSG_NOWHERE	0
#define MSG_QUEUED	1
#define MSG_INFLIGHT	2
#define MSG_RETRYING	3
	unsigned int		 depth;
	unsigned int		 round;		/* reflection round */
	unsigned int		 attempts;	/* times given to an agent */
	unsigned int		 retries;
	struct job		*job;
	struct route		*route;
	struct agent		*agent;		/* serving it, when in flight */
	struct agent		*exclude;	/* not this one (reflection) */
	struct agent		*target;	/* addressed to this agent */
	struct agent		*parent_agent;	/* a task's result goes here */
	ev_tstamp		 accepted;
	ev_tstamp		 deadline;
	double			 timeout;
	ev_timer		 timer;
	TAILQ_ENTRY(msg)	 entry;
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

/* proc.c: a short-lived process run for one request. */
struct proc {
	struct agent		*agent;
	struct msg		*msg;		/* NULL once cancelled */
	pid_t			 pid;
	pid_t			 hostpid;
	int			 in;
	int			 out;
	int			 err;
	ev_io			 in_w;
	ev_io			 out_w;
	ev_io			 err_w;
	ev_child		 child_w;
	ev_timer		 kill_w;
	int			 kill_step;
	struct ndjson_reader	 err_rd;
	char			*stdin_data;
	size_t			 stdin_len;
	size_t			 stdin_off;
	char			*out_buf;
	size_t			 out_len;
	size_t			 out_cap;
	size_t			 out_max;
	size_t			 out_dropped;
	char			 err_tail[2048];
	size_t			 err_len;
	int			 status;
	int			 quiet_stderr;
	int			 flags;
#define PROC_EXITED	0x01
#define PROC_OUT_EOF	0x02
#define PROC_ERR_EOF	0x04
#define PROC_DONE	0x08
#define PROC_KILLED	0x10
	ev_tstamp		 started;
	void			(*done)(struct proc *);
	void			(*line_cb)(struct proc *, const char *, size_t);
	void			*arg;
	TAILQ_ENTRY(proc)	 entry;
};
TAILQ_HEAD(procs, proc);

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
};

struct adapter {
	const struct adapter_ops	*ops;
	void				*state;
	struct procs			 procs;		/* per-call processes */
	unsigned int			 nprocs;
};

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
	void		 (*line)(struct proc *, const char *, size_t);
	void		 (*done)(struct proc *);
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

/* The supervisor's state: one per process. */
struct corral {
	struct ev_loop		*loop;
	struct workflow		*wf;
	int			 mode;
#define MODE_RUN	0
#define MODE_SERVE	1
	char			 run_id[16];
	uint64_t		 id_seq;
	struct agents		 agents;
	struct agent_tree	 agent_tree;
	unsigned int		 nagents;	/* alive */
	uint64_t		 start_seq;
	struct route		 routes[INTENT_COUNT + 1];
	struct agentpool	*pools;		/* per workflow entry */
	unsigned int		 queued;	/* in route queues */
	struct chan		*source;	/* whose line is being handled */
	TAILQ_HEAD(, job)	 jobs;
	struct msgq		 retrying;	/* waiting for their retry */
	unsigned int		 njobs;
	struct jscan	*js;
	struct chan		 stdio;		/* serve: stdin, stdout */
	int			 stdio_open;
	int			 stdin_eof;
	int			 stdin_pause;	/* reasons to stop reading it */
#define STDIN_P_JOBS		0x01	/* max_inflight jobs */
#define STDIN_P_QUEUE		0x02	/* route queues half full */
#define STDIN_P_STDOUT		0x04	/* stdout above its high mark */
#define STDIN_P_SHUTDOWN	0x08
	TAILQ_HEAD(, chan)	 dirty;
	ev_prepare		 prepare_w;
	ev_signal		 sigint_w;
	ev_signal		 sigterm_w;
	ev_signal		 sighup_w;
	ev_signal		 sigquit_w;
	ev_timer		 budget_w;
	ev_timer		 shutdown_w;
	int			 shutting_down;
	int			 interrupted;	/* signal that stopped us, or 0 */
	int			 exit_status;
	int			 pidns;		/* running as init of a pid ns */
	struct agent		*stopping;	/* shutdown: current agent */
	ev_tstamp		 started;
	/* The result of corral run. */
	int			 output_text;
	char			*goal;
	char			*result;
	size_t			 resultlen;
	int			 result_error;
	/* Totals and outcomes (docs/reliability.md). */
	uint64_t		 accepted;
	uint64_t		 replied;
	uint64_t		 errored;
	uint64_t		 expired;
	uint64_t		 rejected;	/* invalid lines */
	uint64_t		 late;		/* late or duplicate replies */
	uint64_t		 retried;
	uint64_t		 reflections;
	uint64_t		 breaker_trips;
	uint64_t		 sent;		/* map/send deliveries */
	uint64_t		 live_msgs;
	uint64_t		 notices_dropped;
	unsigned int		 ndead;		/* agents marked to be freed */
	int			 budget_hit;
	uint64_t		 steps;
	double			 tokens_in;
	double			 tokens_out;
	double			 cost;
};

extern struct corral *cr;

#define WIFEXITED_OK(st)	(WIFEXITED(st) && WEXITSTATUS(st) == 0)

/* xmalloc.c */
void	*xmalloc(size_t);
void	*xcalloc(size_t, size_t);
void	*xreallocarray(void *, size_t, size_t);
char	*xstrdup(const char *);
char	*xstrndup(const char *, size_t);
char	*xmemdup0(const void *, size_t);
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
void	 util_json_string(struct ndjson_writer *, const char *, size_t);
json_t	*util_json_text(const char *, size_t);
size_t	 util_u64(char *, uint64_t);
size_t	 util_json_plain(const char *, size_t);
int	 util_utf8_valid(const char *, size_t, size_t *);
size_t	 util_utf8_len(const unsigned char *, size_t);

/* protocol.c */
int	 protocol_intent(const char *, size_t);
const char *protocol_intent_name(int);
const char *protocol_priority_name(int);
int	 protocol_transient(const char *);
void	 protocol_set_run(const char *);
const char *protocol_run_id(void);
const char *protocol_new_id(char *, size_t);

/* jscan.c */
struct jscan *jscan_create(unsigned int);
void	 jscan_free(struct jscan *);
void	 jscan_trim(struct jscan *);
int	 jscan_run(struct jscan *, const char *, size_t);
size_t	 jscan_unescape(struct jscan *, const char *, size_t);
int	 jscan_str_equal(struct jscan *, const char *, size_t, int,
	    const char *, size_t);
int	 jscan_get(struct jscan *, const char *, int, const char *);
int	 jscan_getn(struct jscan *, const char *, int, const char *, size_t);
/* jscan_get for a string literal key, without strlen. */
#define JSCAN_GET(js, s, obj, lit) jscan_getn((js), (s), (obj), (lit), \
	    sizeof(lit) - 1)
size_t	 jscan_count(const struct jscan *, int);
int	 jscan_first(const struct jscan *, int);
int	 jscan_next(const struct jscan *, int, int);
const char *jscan_text(struct jscan *, const char *, int, size_t *);
double	 jscan_number(struct jscan *, const char *, int);

/* ndjson.c */
void	 ndjson_reader_init(struct ndjson_reader *, size_t, int);
void	 ndjson_reader_free(struct ndjson_reader *);
void	 ndjson_feed(struct ndjson_reader *, char *, size_t, ndjson_line_cb,
	    void *);
void	 ndjson_finish(struct ndjson_reader *, ndjson_line_cb, void *);
int	 ndjson_reader_pending(const struct ndjson_reader *);
void	 ndjson_writer_init(struct ndjson_writer *, size_t, size_t);
void	 ndjson_writer_free(struct ndjson_writer *);
size_t	 ndjson_writer_queued(const struct ndjson_writer *);
int	 ndjson_writer_full(const struct ndjson_writer *);
int	 ndjson_writer_drained(const struct ndjson_writer *);
void	 ndjson_writer_reserve(struct ndjson_writer *, size_t);
void	 ndjson_writer_add(struct ndjson_writer *, const void *, size_t);
void	 ndjson_writer_line(struct ndjson_writer *, const void *, size_t);
int	 ndjson_writer_flush(struct ndjson_writer *, int);

/* chan.c */
void	 chan_init(struct chan *, const char *, int, int, size_t, void *);
void	 chan_start(struct chan *);
void	 chan_close_write(struct chan *);
void	 chan_close(struct chan *);
void	 chan_write_line(struct chan *, const char *, size_t);
void	 chan_block(struct chan *, struct chan *);
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
struct agent_conf *config_find_agent(const struct workflow *, const char *);
const char *config_restart_name(enum restart_policy);
const char *config_strategy_name(enum child_strategy);
int	 config_keyinfo(size_t, struct config_keyinfo *);

/* spawn.c */
struct spawn_result {
	pid_t	pid;
	pid_t	hostpid;
	int	in;
	int	out;
	int	err;
	int	error;		/* errno of a failed spawn */
	char	what[64];	/* which step failed */
};
int	 spawn_agent(const struct agent_conf *, const struct workflow *,
	    const char *, struct spawn_result *);
int	 spawn_argv(const struct agent_conf *, char *const *,
	    const struct workflow *, const char *, struct spawn_result *);
void	 spawn_set_pidns(int);
char	*spawn_find(const char *, const struct workflow *, const char *);
void	 spawn_block_signals(sigset_t *);
void	 spawn_restore_signals(const sigset_t *);

/* lifecycle.c */
void	 lifecycle_init(struct agent *);
void	 lifecycle_spawn_failed(struct agent *, const char *, int);
int	 lifecycle_will_restart(const struct agent *);
void	 lifecycle_restart(struct agent *, const char *);
void	 lifecycle_percall_stopped(struct agent *);
void	 lifecycle_probation(struct agent *);
const char *lifecycle_state_name(enum agent_state);
const char *lifecycle_map_state(enum agent_state);
const char *lifecycle_event_name(enum agent_event);
enum agent_state lifecycle_next(enum agent_state, enum agent_event, int);
void	 lifecycle_event(struct agent *, enum agent_event, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
int	 lifecycle_routable(const struct agent *);
int	 lifecycle_alive(const struct agent *);
void	 lifecycle_heartbeat_start(struct agent *);
void	 lifecycle_activity(struct agent *);
void	 lifecycle_stop(struct agent *, const char *);
void	 lifecycle_kill(struct agent *, int);
void	 lifecycle_exited(struct agent *);
double	 lifecycle_backoff(const struct agent_conf *, unsigned int, double);

/* agent.c */
int	 agent_cmp(struct agent *, struct agent *);
RB_PROTOTYPE(agent_tree, agent, by_id, agent_cmp);
struct agent *agent_create(struct agent_conf *, unsigned int, struct agent *);
int	 agent_start(struct agent *);
void	 agent_free(struct agent *);
struct agent *agent_find(const char *);
void	 agent_send(struct agent *, const char *, size_t);
void	 agent_send_notice(struct agent *, const char *, size_t);
void	 agent_reap_dead(void);
void	 agent_mark_dead(struct agent *);
void	 agent_close_output(struct agent *);
void	 agent_pipe_timeout(struct agent *);
void	 agent_exited_cleanup(struct agent *);
int	 agent_parent_gone(const struct agent *);
void	 agent_escalate(struct agent *, const char *);
unsigned int agent_count_alive(void);
int	 agent_is_descendant(const struct agent *, const struct agent *);

/* envelope.c */
int	 envelope_check(struct jscan *, const char *, size_t, struct env *,
	    struct env_error *);
char	*envelope_error(const char *, const char *, const char *,
	    const char *, const char *, size_t *);
char	*envelope_goal(const char *, const char *, const char *, size_t *);
char	*envelope_fill(struct jscan *, const char *, size_t,
	    const struct env *, const char *, const char *, size_t *);
char	*envelope_reflect(struct jscan *, const char *, size_t,
	    const struct env *, const char *, const char *, size_t *);
char	*envelope_action(struct jscan *, const char *, int, const char *,
	    const char *, const char *, size_t, size_t *);
char	*envelope_mark(struct jscan *, const char *, size_t,
	    const char *, size_t *);
char	*envelope_add_parent(struct jscan *, const char *, size_t,
	    const struct env *, const char *, size_t *);
char	*envelope_corral_set(struct jscan *, const char *, size_t,
	    const struct env *, const char *, const char *, size_t *);
int	 envelope_trace_id(struct jscan *, const char *,
	    const struct env *, char *, size_t);
int	 envelope_has_parent(struct jscan *, const char *,
	    const struct env *, const char *);

/* route.c */
void	 route_init(void);
int	 route_submit(struct msg *);
void	 route_direct(struct msg *);
void	 route_kick(struct agent *);
void	 route_dequeue(struct msg *);
struct route *route_for(int);
void	 route_fail_all(const char *);
void	 route_check_orphans(void);
void	 route_breaker_failure(struct agent *);
void	 route_breaker_success(struct agent *);
void	 route_add_agent(struct agent *);
void	 route_remove_agent(struct agent *);
void	 route_forget_agent(struct agent *);

/* engine.c */
void	 engine_init(void);
struct msg *engine_msg_create(struct job *, char *, size_t, int, int);
void	 engine_msg_free(struct msg *);
struct job *engine_job_create(int);
int	 engine_start_goal(const char *);
void	 engine_input_line(char *, size_t, enum ndjson_kind, size_t);
void	 engine_agent_line(struct agent *, char *, size_t, enum ndjson_kind,
	    size_t);
void	 engine_dispatched(struct msg *, struct agent *);
void	 engine_queued(struct msg *);
void	 engine_unqueued(void);
void	 engine_redirect(struct msg *);
void	 engine_fail(struct msg *, const char *, const char *, const char *,
	    ...) __attribute__((format(printf, 4, 5)));
void	 engine_limit(struct job *, const char *, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
void	 engine_request_done(struct msg *, const char *, size_t, int);
void	 engine_account(struct agent *, const struct env *);
void	 engine_adapter_reply(struct agent *, struct msg *, const char *,
	    size_t);
void	 engine_agent_gone(struct agent *, const char *);
void	 engine_agent_failed(struct agent *, const char *);
void	 engine_fail_retrying(const char *);
int	 engine_idle(void);
void	 engine_stdout(const char *, size_t);
void	 engine_agent_drained(struct agent *);

/* auditlog.c */
int	 auditlog_open(const char *);
void	 auditlog_close(void);
int	 auditlog_enabled(void);
void	 auditlog_flush(void);
void	 auditlog_tick(void);
void	 auditlog_event(const char *, const char *, const char *, ...);
void	 auditlog_envelope(const char *, const char *, const char *,
	    const char *, size_t);
void	 auditlog_json(const char *, const char *, json_t *);

/* control.c */
void	 control_agent_frame(struct agent *, const char *, size_t);
void	 control_ping(struct agent *);
void	 control_reply(struct agent *, json_t *, json_t *);
void	 control_reply_error(struct agent *, json_t *, int, const char *,
	    const char *);
void	 control_send(struct agent *, json_t *);

/* subagent.c */
void	 subagent_init(void);
int	 subagent_method(struct agent *, const char *, json_t *, json_t *);
void	 subagent_request_done(struct msg *, const char *, size_t, int);
void	 subagent_reply_forwarded(struct msg *);
int	 subagent_task_envelope(struct agent *, struct msg *, const char *,
	    size_t, struct env *);
void	 subagent_agent_gone(struct agent *, const char *);
void	 subagent_failed(struct agent *, const char *);
void	 subagent_stopped(struct agent *);
void	 subagent_stop_children(struct agent *, const char *);
int	 subagent_has_live_children(const struct agent *);
void	 subagent_child_restarting(struct agent *);
int	 subagent_over_budget(struct agent *, char *, size_t);
void	 subagent_check_budget(struct agent *);
void	 subagent_check_run_budget(void);
void	 subagent_budget_start(struct agent *);

/* proc.c */
int	 proc_start(struct proc *, struct agent *, char *const *, const char *,
	    size_t, size_t, char *, size_t);
void	 proc_append(struct proc *, const char *, size_t);
void	 proc_kill(struct proc *);
int	 proc_write(struct proc *, const char *, size_t);
void	 proc_free(struct proc *);

/* adapter.c */
const struct adapter_ops *adapter_find(const char *);
int	 adapter_check(const struct agent_conf *, char *, size_t);
void	 adapter_create(struct agent *);
int	 adapter_per_call(const struct agent *);
int	 adapter_start(struct agent *);
void	 adapter_request(struct agent *, struct msg *);
int	 adapter_line(struct agent *, const char *, size_t);
void	 adapter_response(struct agent *, json_t *);
void	 adapter_cancel(struct agent *, struct msg *);
int	 adapter_stop(struct agent *);
void	 adapter_free(struct agent *);
void	 adapter_ready(struct agent *, const char *);
void	 adapter_reply(struct agent *, struct msg *, json_t *);
void	 adapter_reply_error(struct agent *, struct msg *, const char *,
	    const char *, const char *, json_t *);
json_t	*adapter_envelope(struct agent *, struct msg *, const char *, int);
char	*adapter_template(const char *, json_t *, const struct msg *);
json_t	*adapter_request_json(struct msg *);
struct proc *adapter_proc_new(struct agent *, struct msg *);
void	 adapter_proc_done(struct proc *);
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
const char *adapter_stderr_line(const struct proc *, int *);

/* adapter-cli.c */
int	 adapter_cli_check(json_t *, char *, size_t);
void	*adapter_cli_start(struct agent *, const struct adapter_cli_tool *,
	    size_t);
void	 adapter_cli_set(char **, const char *);
void	 adapter_cli_request(struct agent *, struct msg *);
void	 adapter_cli_cancel(struct agent *, struct msg *);
void	 adapter_cli_stop(struct agent *);
void	 adapter_cli_free(struct agent *);
void	 adapter_cli_spawn(struct agent *, struct msg *, char **,
	    const char *, void *);
int	 adapter_cli_conversation(struct proc *, const char *, int);
void	 adapter_cli_done(struct proc *);
void	 adapter_cli_reply(struct proc *, const char *, const char *, double,
	    double);
void	 adapter_cli_fail(struct proc *, const char *, const char *,
	    const char *, const char *);
void	 adapter_cli_exited(struct proc *, const char *, const char *, int);

/* adapter-exec.c */
extern const struct adapter_ops adapter_exec_ops;
extern const struct adapter_ops adapter_claude_ops;
extern const struct adapter_ops adapter_codex_ops;
extern const struct adapter_ops adapter_gemini_ops;
extern const struct adapter_ops adapter_mcp_ops;

/* supervisor.c */
void	 supervisor_setup(struct workflow *, int);
void	 supervisor_stdin_pause(int, int);
int	 supervisor_run(struct workflow *, int, const char *, const char *,
	    int);
void	 supervisor_shutdown(int);
void	 supervisor_check_done(void);
void	 supervisor_agent_stopped(struct agent *);
void	 supervisor_run_done(void);
int	 supervisor_any_alive(void);

/* workspace.c */
int	 workspace_open(const struct workflow *);
void	 workspace_close(void);
int	 workspace_enabled(void);
const char *workspace_dir(void);
const char *workspace_path_problem(const char *, size_t);
int	 workspace_write(const char *, size_t, const char *, const char *,
	    size_t, char *, size_t);
int	 workspace_artifacts(struct agent *, struct jscan *, const char *,
	    const struct env *, char *, size_t);

/* pidns.c */
int	 pidns_enter(void);

/* progress.c */
void	 progress_start(void);
void	 progress_stop(void);
void	 progress_update(void);

/* tree.c */
int	 tree_render(const char *, const char *, FILE *);

#endif /* CORRAL_H */
