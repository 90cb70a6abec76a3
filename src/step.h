/*
 * The step module's internals, shared by step.c (the walk: replies,
 * artifacts, decisions), step-request.c (what a step's request says),
 * step-escalate.c (asking a person, and the answers) and step-record.c
 * (the escalation record of --on-escalate=exit, and resuming from it).
 * Nothing else includes this file: the rest of corral sees the
 * functions in corral.h.
 */

#ifndef STEP_H
#define STEP_H

/* One job's walk through the steps. */
struct steprun {
	struct job		*job;		/* NULL once its holds went */
	char			 id[CORRAL_ID_MAX];	/* the job's */
	json_t			*first;		/* the job's first envelope */
	json_t			*goal;		/* the goal's text, or NULL */
	json_t			*params;	/* the run's parameters */
	char			*feature_id;	/* or NULL */
	json_t			*paths;		/* paths:, filled in */
	unsigned int		*runs;		/* per step: runs in this job */
	unsigned int		*since;		/* and since the last answer */
	int			 at;		/* the reply at hand's step */
	int			 blocked;	/* max_iterations stopped it */
	json_t			*notes;		/* the next request's notes */
	char			*answer;	/* a person's, for the next */
	int			 resume_action;	/* a record's answer */

	/* The reply at hand. */
	char			*reply;
	size_t			 reply_len;
	char			 reply_id[CORRAL_ID_MAX];
	char			 agent[CORRAL_ID_MAX];
	json_t			*out;		/* read as an output envelope */
	json_t			*written;	/* its artifacts' outcomes */
	json_t			*corral_notes;	/* corral's own notes on it */
	int			 invalid;
	unsigned int		 pending;	/* artifacts not yet written */

	unsigned int		 holds;		/* on its job, ours to let go */
	int			 ended;		/* its job has its result */
	int			 release;	/* let go on the next turn */

	/* A person is asked. */
	int			 waiting;
	const char		*reason;	/* agent, max_iterations, ... */
	uint64_t		 since_ms;
	json_t			*wait_info;	/* what is shown and sent */
	TAILQ_ENTRY(steprun)	 entry;
};

/* step.c */
const struct workflow		*step_workflow(void);
const struct step_options	*step_options(void);
const struct step_hooks		*step_hooks_get(void);
void	 step_run_free(struct steprun *);
void	 step_end(struct steprun *, const char *, size_t, int);
void	 step_fail(struct steprun *, const char *, const char *, json_t *);
void	 step_resolve(struct steprun *, int, const char *);
void	 step_run_step(struct steprun *, int);
const struct agent_conf *step_capable(const char *);
void	 step_release(struct steprun *);
struct steprun *step_first_run(void);
struct steprun *step_next_run(struct steprun *);

/* step-request.c */
struct steprun *step_run_new(struct job *, const char *, size_t);
char	*step_request_first(struct steprun *, size_t *, int *,
	    const struct agent_conf **);
char	*step_request(struct steprun *, const struct step_conf *,
	    const char *, const char *, size_t *, int *);
void	 step_audit_step(struct steprun *, const char *);

/* step-escalate.c */
void	 step_escalate(struct steprun *, const char *);
void	 step_unwait(struct steprun *, const char *);

/* step-record.c */
int	 step_record_write(struct steprun *, const char *, char *, size_t);
int	 step_record_restore(struct steprun *, json_t *);
char	*step_request_resumed(struct steprun *, size_t *, int *,
	    const struct agent_conf **);

#endif
