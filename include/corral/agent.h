/*
 * The agent library: a small, blocking C API that makes a corral agent a
 * few dozen lines (docs/writing-agents.md).
 *
 * An agent reads one JSON object per line on stdin and writes one per line
 * on stdout (docs/protocol.md).  The library reads those lines, answers
 * corral's pings, sorts what arrives into requests, tasks, child results,
 * messages and notices, and builds and writes multiagent-1.0 replies.  It
 * also speaks the opt-in control frames: the map/connect handshake, and
 * map/agents/spawn and map/send for sub-agent trees.  Everything blocks;
 * envelopes that arrive while the agent waits for a control response or
 * for its children are kept in order and handed out by cagent_next later.
 *
 * Replies and the JSON values handed to the builders follow jansson's
 * reference rules: functions documented as taking a value "stolen" own it
 * afterwards, including on failure.
 */

#ifndef CORRAL_AGENT_H
#define CORRAL_AGENT_H

#include <stddef.h>

#include <jansson.h>

#include "corral/protocol.h"

#define CAGENT_VERSION		"1"
#define CAGENT_MODEL		"rules"	/* agent.model of our agents */
#define CAGENT_MAX_LINE		(64UL * 1024 * 1024)
#define CAGENT_CALL_TIMEOUT	30.0	/* seconds a control call may take */

struct cagent;

/* What a line on stdin turned out to be (docs/protocol.md). */
enum cagent_kind {
	CAGENT_REQUEST,		/* answer it with exactly one reply */
	CAGENT_TASK,		/* a spawned child's task: answer with finalize */
	CAGENT_CHILD_RESULT,	/* the envelope that ended a child's task */
	CAGENT_MESSAGE,		/* sent by another agent with map/send */
	CAGENT_NOTICE,		/* an error about our own output */
	CAGENT_CANCEL,		/* a request we work on was cancelled */
	CAGENT_PROGRESS		/* a child's output, before its result */
};

/*
 * One envelope for the agent.  Zero it before first use; cagent_next and
 * cagent_await_children release what it held before filling it again, and
 * cagent_msg_free releases it for good.  The strings and JSON values
 * point into env and live as long as it does; none is ever NULL, absent
 * strings are "" and absent objects are empty.
 */
struct cagent_msg {
	enum cagent_kind	 kind;
	json_t			*env;		/* the whole envelope */
	const char		*id;		/* trace.id */
	const char		*intent;
	const char		*task;
	const char		*text;		/* content.text */
	const char		*context;	/* inputs.context */
	json_t			*params;	/* inputs.parameters */
	json_t			*data;		/* content.data (json null if absent) */
	json_t			*actions;	/* outputs.next_actions */
	double			 score;		/* confidence.score, -1 if absent */
	int			 is_error;	/* content.type is "error" */
	const char		*from;		/* message: the sender's id */
	const char		*child;		/* child_result: the child's id */
	const char		*spawn;		/* child_result: the task's id */
	int			 ok;		/* child_result: finished cleanly */
};

/* Settings handed to cagent_spawn (all optional). */
struct cagent_spawn_opts {
	double		 timeout;	/* seconds the task may take; 0: none */
	int		 visible;	/* routable like a workflow agent */
	int		 keep;		/* stays alive after its task */
	unsigned int	 depth;		/* limits.depth; 0: inherit */
	unsigned int	 children;	/* limits.children; 0: inherit */
};

/* A handler for cagent_run: return the reply (NULL sends an error). */
typedef json_t *(*cagent_handler)(struct cagent *, const struct cagent_msg *,
    void *);

/* Opening, closing, logging. */
struct cagent	*cagent_open(const char *);
void		 cagent_close(struct cagent *);
const char	*cagent_id(const struct cagent *);
const char	*cagent_run_id(const struct cagent *);
const char	*cagent_workspace(const struct cagent *);
const char	*cagent_error(const struct cagent *);
int		 cagent_error_code(const struct cagent *);
void		 cagent_log(const struct cagent *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));

/* Reading. */
int		 cagent_next(struct cagent *, struct cagent_msg *);
void		 cagent_msg_free(struct cagent_msg *);
int		 cagent_run(struct cagent *, cagent_handler, void *);

/* Replies. */
json_t		*cagent_reply(struct cagent *, const struct cagent_msg *,
		    const char *, const char *);
json_t		*cagent_reply_error(struct cagent *, const struct cagent_msg *,
		    const char *, ...) __attribute__((format(printf, 3, 4)));
void		 cagent_set_text(json_t *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
void		 cagent_set_data(json_t *, json_t *);
void		 cagent_set_confidence(json_t *, double, const char *);
void		 cagent_add_risk(json_t *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
void		 cagent_add_action(json_t *, const char *, const char *,
		    json_t *);
void		 cagent_add_artifact(json_t *, const char *, const char *,
		    const char *, const char *);
void		 cagent_add_tag(json_t *, const char *);
void		 cagent_set_cost(json_t *, double, double, double);
json_t		*cagent_envelope(struct cagent *, const char *, const char *,
		    const char *);
int		 cagent_send(struct cagent *, json_t *);

/* Control frames and sub-agents. */
int		 cagent_handshake(struct cagent *);
json_t		*cagent_call(struct cagent *, const char *, json_t *, double);
const char	*cagent_spawn(struct cagent *, const char *, json_t *,
		    const struct cagent_spawn_opts *);
int		 cagent_await_children(struct cagent *, struct cagent_msg *,
		    size_t, double);
int		 cagent_send_to(struct cagent *, json_t *, json_t *);
int		 cagent_send_to_parent(struct cagent *, json_t *);

/* Small helpers for parameters and files. */
const char	*cagent_param_str(const struct cagent_msg *, const char *,
		    const char *);
double		 cagent_param_num(const struct cagent_msg *, const char *,
		    double);
char		*cagent_read_file(const char *, size_t, size_t *);

#endif /* CORRAL_AGENT_H */
