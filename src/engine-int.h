/*
 * What the engine's files share (engine.c, engine-*.c): its state and the
 * functions one part calls in another.  Nothing else includes this file:
 * the rest of corral sees the engine through corral.h.
 */

#ifndef ENGINE_INT_H
#define ENGINE_INT_H

/* How a request's end bears on its job (engine_request_end). */
#define END_NONE	0	/* the branch goes on in other requests */
#define END_BRANCH	1	/* the line ends its branch */
#define END_FINAL	2	/* ... and is a finalize */

/* engine.c */
extern const struct workflow	*engine_wf;
extern struct engine_hooks	 engine_hooks;
extern struct engine_task_hooks	 engine_task;
extern struct engine_step_hooks	 engine_step;
extern TAILQ_HEAD(engine_jobq, job) engine_jobs;
extern struct msgq		 engine_retrying;
struct work_busy *engine_busy(struct agent *);
struct msgq	*engine_queue(struct agent *);
extern unsigned int		 engine_njobs;
extern int			 engine_jobs_held;
extern int			 engine_join_then;
extern struct engine_stats	 engine_stats;
extern int			 engine_stopping;
int	 engine_room(size_t);
struct job *engine_msg_detach(struct msg *);
void	 engine_msg_free(struct msg *);
void	 engine_msg_disarm(struct msg *);
void	 engine_submit(struct msg *);
void	 engine_undispatch(struct msg *);
int	 engine_will_serve(const struct agent *);
void	 engine_title(struct msg *, struct jscan *, const char *, int);
void	 engine_job_session(struct job *, struct jscan *, const char *, int);

/* engine-retry.c: retries, failures, cancelling. */
struct agent *engine_unretry(struct msg *);
void	 engine_unhold(struct agent *);
void	 engine_pin(struct msg *, struct agent *, const char *, const char *);
void	 engine_route_fail(struct msg *, const char *, const char *,
	    const char *);
void	 engine_msg_timer_cb(struct ev_loop *, ev_timer *, int);

/* engine-outcome.c: requests' ends, joins, jobs' results. */
void	 engine_out(const char *, size_t);
void	 engine_job_finish(struct job *, const char *, size_t, int, int,
	    struct jscan *, const struct env *);
void	 engine_request_end(struct msg *, const char *, size_t, int, int);
void	 engine_request_end_tape(struct msg *, const char *, size_t, int, int,
	    struct jscan *, const struct env *);
size_t	 engine_cancel_rest(struct job *, const char *, const char *,
	    const char *, struct msg *);
void	 engine_run_budget(const char *);
void	 engine_job_release(struct job *);
void	 engine_branch_end(struct job *, const struct msg *, const char *,
	    size_t, int, int);
void	 engine_join(struct job *);

/* engine-flow.c: what follows a reply (reflection, next_actions). */
void	 engine_follow(struct msg *, struct agent *, struct jscan *,
	    const char *, size_t, struct env *, const char *, int);
void	 engine_unreflected(struct msg *, const char *);

/* engine-reply.c: agents' envelopes, replies matched and made honest. */
const char *engine_unforge_copy(struct jscan *, struct agent *,
	    const char *, size_t *, struct env *, char **);

/*
 * Make a line from agent a (NULL: a client) honest (engine_unforge_copy
 * says how).  What honest peers send is known from envelope_check's
 * findings and goes through as it is, without a call.
 */
static inline const char *
engine_unforge(struct jscan *js, struct agent *a, const char *line,
    size_t *len, struct env *env, char **copy)
{
	if (envelope_is_own(js, line, env, a != NULL ? a->id : NULL,
	    a != NULL ? agent_idlen(a) : 0)) {
		*copy = NULL;
		return line;
	}
	return engine_unforge_copy(js, a, line, len, env, copy);
}
void	 engine_reply(struct agent *, struct msg *, struct jscan *,
	    const char *, size_t, struct env *);
void	 engine_adapter_reply(struct agent *, struct msg *, const char *,
	    size_t);

/* engine-report.c: agents' reports of errors on their requests. */
/* The risk of a request's or a job's reports in buf (an array), or NULL. */
#define ENGINE_RISK(x, buf) ((x)->reports != NULL ? \
	engine_report_risk((x)->reports, (buf), sizeof (buf)) : NULL)
char	*engine_report_mark(json_t *, const char *, size_t, size_t *);
/* engine-step.c: the step module's part in jobs (docs/steps.md). */
int	 engine_step_first(struct msg *);
void	 engine_step_ended(struct msg *, struct agent *, const char *,
	    const char *, const char *, size_t);

#endif
