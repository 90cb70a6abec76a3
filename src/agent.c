/*
 * Agents: the registry (a red-black tree by id, a list in start order),
 * the parent/child links, and each agent's process and pipes.
 *
 * This module does the plumbing and decides nothing.  What happens to a
 * process is news for the modules above, told through the callbacks they
 * registered: its lifecycle events (exited, a pipe closed early, stopped
 * by a signal) go to the lifecycle, its stdout lines to dialect.c.  The
 * process itself is proc.c's (as a per-call adapter's is): it has ended
 * only when libev has reaped its exit status AND its stdout and stderr
 * reached EOF, in either order, so its last lines are never lost.  Agents
 * are freed only from agent_reap_dead, never inside one of their own
 * callbacks.
 */

#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"

#define AGENT_HOOKS	16	/* modules told of each new or freed agent */

static struct agents		agent_list = TAILQ_HEAD_INITIALIZER(agent_list);
static struct agent_tree	agent_tree = RB_INITIALIZER(&agent_tree);
static unsigned int		agent_ndead;
static unsigned int		agent_nrunning;
static uint64_t			agent_child_seq;

static agent_event_cb	agent_event_hook;
static agent_line_cb	agent_line_hook;
static agent_cb		agent_drain_hook;
static agent_errline_cb	agent_errline_hook;
static agent_exit_cb	agent_exit_hook;
static agent_cb		agent_new_hooks[AGENT_HOOKS];
static size_t		agent_nnew_hooks;
static agent_cb		agent_free_hooks[AGENT_HOOKS];
static size_t		agent_nfree_hooks;

static void	agent_chan_line(struct chan *, enum ndjson_kind, char *, size_t,
		    size_t);
static void	agent_out_eof(struct chan *, int);
static void	agent_in_error(struct chan *, int);
static void	agent_in_drained(struct chan *, int);
static void	agent_proc_done(struct proc *);
static void	agent_proc_exited(struct proc *);
static void	agent_proc_held(struct proc *);
static void	agent_proc_broken(struct proc *, const char *);
static void	agent_proc_stopped(struct proc *, int);
static int	agent_proc_errline(struct proc *, const char *, size_t);

/* What an agent's process tells it. */
static const struct proc_hooks agent_proc_hooks = {
	agent_proc_done, agent_proc_exited, agent_proc_held,
	agent_proc_broken, agent_proc_stopped, agent_proc_errline
};

RB_GENERATE(agent_tree, agent, by_id, agent_cmp);

/* Order agents by id. */
int
agent_cmp(struct agent *a, struct agent *b)
{
	return strcmp(a->id, b->id);
}

/* Register who hears of lifecycle events: the lifecycle. */
void
agent_on_event(agent_event_cb cb)
{
	agent_event_hook = cb;
}

/* Register who reads agents' stdout lines, and hears their stdin drain. */
void
agent_on_line(agent_line_cb line, agent_cb drained)
{
	agent_line_hook = line;
	agent_drain_hook = drained;
}

/*
 * Register who reads a process's stderr lines first, and may keep one
 * from the log (nonzero), and who may say more of how it ended: the
 * launcher's link (launch.c).
 */
void
agent_on_process(agent_errline_cb errline, agent_exit_cb exited)
{
	agent_errline_hook = errline;
	agent_exit_hook = exited;
}

/* Add cb to a list of hooks, once (the tests set modules up again). */
static void
agent_hook_add(agent_cb *hooks, size_t *n, agent_cb cb)
{
	size_t	i;

	for (i = 0; i < *n; i++)
		if (hooks[i] == cb)
			return;
	if (*n == AGENT_HOOKS)
		fatalx("agent: more than %d hooks", AGENT_HOOKS);
	hooks[(*n)++] = cb;
}

/* Register one more module that sets up its part of each new agent. */
void
agent_on_create(agent_cb cb)
{
	agent_hook_add(agent_new_hooks, &agent_nnew_hooks, cb);
}

/* Register one more module that must forget an agent before it is freed. */
void
agent_on_free(agent_cb cb)
{
	agent_hook_add(agent_free_hooks, &agent_nfree_hooks, cb);
}

/* Tell the lifecycle of an event (from here, or from an adapter). */
void
agent_news(struct agent *a, enum agent_event ev, const char *why)
{
	if (agent_event_hook != NULL)
		agent_event_hook(a, ev, why);
}

/* Find an agent by id. */
struct agent *
agent_find(const char *id)
{
	struct agent	key;

	key.id = (char *)id;
	return RB_FIND(agent_tree, &agent_tree, &key);
}

/* The first agent in start order (then agent_next), or NULL. */
struct agent *
agent_first(void)
{
	return TAILQ_FIRST(&agent_list);
}

/* The agent after a in start order, or NULL. */
struct agent *
agent_next(struct agent *a)
{
	return TAILQ_NEXT(a, entry);
}

/* The most recently created agent (then agent_prev), or NULL. */
struct agent *
agent_last(void)
{
	return TAILQ_LAST(&agent_list, agents);
}

/* The agent created before a, or NULL. */
struct agent *
agent_prev(struct agent *a)
{
	return TAILQ_PREV(a, agents, entry);
}

/*
 * Give the agent a new credential: 32 random bytes, passed as hex to the
 * agent's processes (CORRAL_AGENT_TOKEN); a connection to the control
 * socket that shows it acts as the agent (control.c).  A new one at each
 * start, so the sessions of an earlier process lose it.  The bytes are
 * kept, not the digits: half the room in every agent.
 */
static void
agent_new_token(struct agent *a)
{
	arc4random_buf(a->token, sizeof a->token);
}

/* Write the agent's credential as the hex digits its processes are given. */
void
agent_token(const struct agent *a, char hex[AGENT_TOKEN_LEN + 1])
{
	static const char	digits[] = "0123456789abcdef";
	size_t			i;

	for (i = 0; i < sizeof a->token; i++) {
		hex[2 * i] = digits[a->token[i] >> 4];
		hex[2 * i + 1] = digits[a->token[i] & 0xf];
	}
	hex[AGENT_TOKEN_LEN] = '\0';
}

/* The value of a lowercase hex digit, or -1. */
static int
agent_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/*
 * Read a credential's hex digits (lowercase, as corral writes them) into
 * b; returns -1 if they are not such digits.  It looks at the guess only,
 * so its time says nothing of any agent's credential.
 */
static int
agent_token_parse(const char *token, uint8_t b[AGENT_TOKEN_LEN / 2])
{
	size_t	i;
	int	hi, lo;

	if (strlen(token) != AGENT_TOKEN_LEN)
		return -1;
	for (i = 0; i < AGENT_TOKEN_LEN / 2; i++) {
		hi = agent_hexval(token[2 * i]);
		lo = agent_hexval(token[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		b[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

/* Compare two credentials in time that does not depend on where they differ. */
static int
agent_token_differs(const uint8_t *a, const uint8_t *b)
{
	unsigned char	d = 0;
	size_t		i;

	for (i = 0; i < AGENT_TOKEN_LEN / 2; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d != 0;
}

/*
 * The live agent whose credential is token, or NULL.  Every agent is
 * compared in constant time, so the time taken says nothing of a guess.
 */
struct agent *
agent_find_token(const char *token)
{
	struct agent	*a, *found = NULL;
	uint8_t		 b[AGENT_TOKEN_LEN / 2];

	if (token == NULL || agent_token_parse(token, b) != 0)
		return NULL;
	TAILQ_FOREACH(a, &agent_list, entry) {
		if (!agent_token_differs(a->token, b) &&
		    !(a->flags & AGENT_DEAD))
			found = a;
	}
	explicit_bzero(b, sizeof b);
	return found;
}

/*
 * The agent whose process, or a per-call process of it, has this pid as
 * /proc names pids, or NULL.  Only processes not reaped yet count: until
 * corral reaps one, no other process can have its pid.
 */
struct agent *
agent_of_pid(pid_t pid)
{
	struct agent		*a;
	struct proc_call	*c;

	if (pid <= 0)
		return NULL;
	TAILQ_FOREACH(a, &agent_list, entry)
		if (!(a->flags & AGENT_DEAD) && (a->flags & AGENT_RUNNING) &&
		    proc_has_pid(&a->proc.p, pid))
			return a;
	if ((c = proc_call_find(pid)) != NULL && c->agent != NULL &&
	    !(c->agent->flags & AGENT_DEAD))
		return c->agent;
	return NULL;
}

/*
 * An agent's place in the tree, made when it gets a parent or its first
 * child: most agents have neither, and the links cost them 40 bytes.
 */
struct agent_kin {
	TAILQ_HEAD(, agent_kin)	 children;
	TAILQ_ENTRY(agent_kin)	 sibling;
	struct agent		*agent;
	unsigned int		 depth;
	unsigned int		 nchildren;
};

/* An agent's place in the tree, to write: made now if it was not. */
static struct agent_kin *
agent_kin(struct agent *a)
{
	if (a->kin == NULL) {
		a->kin = xcalloc(1, sizeof *a->kin);
		TAILQ_INIT(&a->kin->children);
		a->kin->agent = a;
	}
	return a->kin;
}

/* How deep an agent is in the tree: 0 for a root (or an orphan's). */
unsigned int
agent_depth(const struct agent *a)
{
	return a->kin != NULL ? a->kin->depth : 0;
}

/* How many children an agent has. */
unsigned int
agent_nchildren(const struct agent *a)
{
	return a->kin != NULL ? a->kin->nchildren : 0;
}

/* An agent's first child (the oldest), or NULL. */
struct agent *
agent_first_child(const struct agent *a)
{
	struct agent_kin	*k;

	if (a->kin == NULL || (k = TAILQ_FIRST(&a->kin->children)) == NULL)
		return NULL;
	return k->agent;
}

/* The next child of an agent's parent, or NULL. */
struct agent *
agent_next_sibling(const struct agent *a)
{
	struct agent_kin	*k;

	if (a->kin == NULL || (k = TAILQ_NEXT(a->kin, sibling)) == NULL)
		return NULL;
	return k->agent;
}

/*
 * Create an agent (not started).  Root agents are named after their
 * workflow entry ("planner", or "echo.2" for the second of several
 * instances); children, and instance 0 (agents a client spawned), get a
 * run-wide number ("researcher-7").
 */
struct agent *
agent_create(struct agent_conf *ac, unsigned int instance, struct agent *parent)
{
	struct agent	*a;
	char		*id;
	size_t		 i, len;

	if (parent != NULL || instance == 0)
		/* A child, or a root agent a client spawned. */
		xasprintf(&id, "%s-%llu", ac->name,
		    (unsigned long long)++agent_child_seq);
	else if (ac->instances > 1)
		xasprintf(&id, "%s.%u", ac->name, instance);
	else
		id = xstrdup(ac->name);
	/* The id lives at the end of the agent: one allocation, not two. */
	len = strlen(id);
	a = xcalloc(1, sizeof *a + len + 1);
	a->id = (char *)(a + 1);
	memcpy(a->id, id, len + 1);
	a->flags = (int)jsonw_idq(a->id, len) << AGENT_IDQ_SHIFT;
	free(id);
	a->conf = ac;
	a->instance = instance;
	proc_init(&a->proc.p);
	a->proc.io.rfd = a->proc.io.wfd = -1;
	if (parent != NULL) {
		a->parent = parent;
		agent_kin(a)->depth = agent_depth(parent) + 1;
		TAILQ_INSERT_TAIL(&agent_kin(parent)->children, a->kin,
		    sibling);
		parent->kin->nchildren++;
	}
	agent_new_token(a);
	a->peer.name = a->id;
	a->peer.agent = a;
	a->peer.chan = &a->proc.io;
	a->peer.role = PEER_AGENT;
	RB_INSERT(agent_tree, &agent_tree, a);
	TAILQ_INSERT_TAIL(&agent_list, a, entry);
	for (i = 0; i < agent_nnew_hooks; i++)
		agent_new_hooks[i](a);
	return a;
}

/*
 * Spawn the agent's process with argv (NULL: its entry's cmd) and env
 * added to its environment (NULL: none), and set up its pipes and
 * watchers.  Returns 0, or -1 with sr's error and step.
 */
int
agent_spawn(struct agent *a, char **argv, char *const *env,
    struct spawn_result *sr)
{
	return agent_spawn_as(a, a->conf, argv, env, sr);
}

/*
 * agent_spawn with the settings the process starts with (ac): a
 * launcher's are the agent's but those that apply on the far end.
 */
int
agent_spawn_as(struct agent *a, const struct agent_conf *ac, char **argv,
    char *const *env, struct spawn_result *sr)
{
	static const struct chan_ops	 ops = { agent_chan_line,
	    agent_out_eof, agent_in_error, agent_in_drained };
	struct agent_proc		*p = &a->proc;
	char				 token[AGENT_TOKEN_LEN + 1];
	int				 rc;

	agent_new_token(a);
	agent_token(a, token);
	p->spawned_at = ev_now(LOOP);
	rc = proc_spawn(&p->p, ac, argv != NULL ? argv : a->conf->argv,
	    a->id, token, env, PROC_TRACE, &agent_proc_hooks, a, sr);
	explicit_bzero(token, sizeof token);
	if (rc != 0)
		return -1;
	/*
	 * The time the process started is the clock's now, not the loop's:
	 * the loop's is when this iteration began (at the run's start, when
	 * the configuration was read), and a restart "never sooner than 1 s
	 * after the previous spawn" counted from it came 0.93 s after the
	 * process started on a loaded machine.
	 */
	ev_now_update(LOOP);
	p->spawned_at = ev_now(LOOP);
	a->flags = (a->flags & ~AGENT_SIGSTOPPED) | AGENT_RUNNING;
	agent_nrunning++;

	chan_init(&p->io, a->id, sr->out, sr->in, a->conf->max_line, a);
	p->io.ops = &ops;
	chan_start(&p->io);
	log_info("agent %s: spawned (pid %ld)", a->id,
	    (long)proc_hostpid(&p->p));
	return 0;
}

/* Count an agent without a process of its own (per-call) as running. */
void
agent_spawn_none(struct agent *a)
{
	a->flags = (a->flags & ~AGENT_SIGSTOPPED) | AGENT_RUNNING;
	a->proc.spawned_at = ev_now(LOOP);
	agent_nrunning++;
}

/*
 * Hand a line of the agent's stdout to whoever reads them (dialect.c).
 * The channel does this for every line; the tests and fuzz targets too.
 */
void
agent_input(struct agent *a, char *line, size_t len, enum ndjson_kind kind,
    size_t extra)
{
	if (!(a->flags & AGENT_DEAD) && agent_line_hook != NULL)
		agent_line_hook(a, line, len, kind, extra);
}

/* A line from the agent's stdout. */
static void
agent_chan_line(struct chan *c, enum ndjson_kind kind, char *line, size_t len,
    size_t extra)
{
	agent_input(c->owner, line, len, kind, extra);
}

/*
 * Queue one line for the agent's stdin, as it is (dialect_send writes it
 * in the agent's dialect).
 */
void
agent_send(struct agent *a, const char *line, size_t len)
{
	chan_write_line(&a->proc.io, line, len);
	a->proc.msgs_in++;
}

/*
 * Queue a line of the link to a launched agent's far end for its stdin
 * (launch.c's keepalives): no message, so not counted as one.
 */
void
agent_send_link(struct agent *a, const char *line, size_t len)
{
	chan_write_line(&a->proc.io, line, len);
}

/* Return nonzero if the agent's stdin is above its high watermark. */
int
agent_full(const struct agent *a)
{
	return chan_full(&a->proc.io);
}

/* Return nonzero if lines can still be written to the agent's stdin. */
int
agent_writable(const struct agent *a)
{
	return a->proc.io.wfd != -1 && !(a->proc.io.flags & CHAN_WCLOSED);
}

/* The process is reaped and both pipes are at EOF: tell the lifecycle. */
static void
agent_proc_done(struct proc *pp)
{
	struct agent	*a = proc_owner(pp);
	char		 st[256];

	util_describe_status(st, sizeof st, proc_status(pp));
	if (agent_exit_hook != NULL)
		agent_exit_hook(a, st, sizeof st);
	agent_news(a, AE_EXITED, st);
}

/* The process was reaped: it is stopped by no signal any more. */
static void
agent_proc_exited(struct proc *pp)
{
	struct agent	*a = proc_owner(pp);

	a->flags &= ~AGENT_SIGSTOPPED;
}

/*
 * It exited, but something it left behind still holds its pipes (the
 * lifecycle escalates on its group).
 */
static void
agent_proc_held(struct proc *pp)
{
	agent_news(proc_owner(pp), AE_REAPED, "exited, but something still "
	    "holds its output pipes");
}

/* A pipe closed and the process really runs on. */
static void
agent_proc_broken(struct proc *pp, const char *what)
{
	struct agent	*a = proc_owner(pp);

	log_warnx("agent %s: %s but is still running; terminating it", a->id,
	    what);
	auditlog_event("error", a->id, NULL, "code", "pipe_closed", "reason",
	    what, NULL);	/* the shape of every "error" event */
	agent_news(a, AE_BROKEN, what);
}

/* The process was stopped by a signal (sig), or continued (0). */
static void
agent_proc_stopped(struct proc *pp, int sig)
{
	struct agent	*a = proc_owner(pp);

	if (sig != 0) {
		a->flags |= AGENT_SIGSTOPPED;
		agent_news(a, AE_SIGSTOP, util_signame(sig));
	} else if (a->flags & AGENT_SIGSTOPPED) {
		a->flags &= ~AGENT_SIGSTOPPED;
		agent_news(a, AE_SIGCONT, "continued");
	}
}

/* A stderr line: the launcher's link reads it first (launch.c). */
static int
agent_proc_errline(struct proc *pp, const char *line, size_t len)
{
	if (agent_errline_hook == NULL)
		return 0;
	return agent_errline_hook(proc_owner(pp), line, len);
}

/* The agent's stdout reached EOF. */
static void
agent_out_eof(struct chan *c, int arg)
{
	struct agent	*a = c->owner;

	if (a->proc.io.rfd != -1) {
		close(a->proc.io.rfd);
		a->proc.io.rfd = -1;
	}
	proc_pipe_closed(&a->proc.p, "closed its stdout");
	proc_out_eof(&a->proc.p);
}

/* The agent's stdin queue drained below its low watermark. */
static void
agent_in_drained(struct chan *c, int arg)
{
	if (agent_drain_hook != NULL)
		agent_drain_hook(c->owner);
}

/* Writing to the agent's stdin failed: it closed it, or is exiting. */
static void
agent_in_error(struct chan *c, int error)
{
	struct agent	*a = c->owner;

	if (proc_exited(&a->proc.p))
		return;
	log_info("agent %s: writing to its stdin: %s", a->id, strerror(error));
	proc_pipe_closed(&a->proc.p, "closed its stdin");
}

/*
 * Write the agent's last stderr lines (at most n), oldest first, quoted
 * and joined, into buf; returns the length (0: none).  This is text for
 * people (a log line, an error's message): it reaches JSON only through
 * the JSON writer, which escapes it.
 */
size_t
agent_stderr_tail(const struct agent *a, char *buf, size_t len,
    unsigned int n)
{
	return proc_stderr_lines(&a->proc.p, buf, len, n);
}

/* Return nonzero if the process was stopped by a signal. */
int
agent_sigstopped(const struct agent *a)
{
	return (a->flags & AGENT_SIGSTOPPED) != 0;
}

/* Who the agent is to the control plane: the peer on its pipes. */
struct peer *
agent_peer(struct agent *a)
{
	return &a->peer;
}

/* Return nonzero if the process's exit status has been reaped. */
int
agent_exited(const struct agent *a)
{
	return proc_exited(&a->proc.p);
}

/* Return nonzero if the agent has a process (or a per-call one started). */
int
agent_running(const struct agent *a)
{
	return (a->flags & AGENT_RUNNING) != 0;
}

/* Its last process's exit status (waitpid's); 127 when it never ran. */
int
agent_status(const struct agent *a)
{
	return proc_status(&a->proc.p);
}

/* Its process's pid as the user's shell sees it. */
pid_t
agent_hostpid(const struct agent *a)
{
	return proc_hostpid(&a->proc.p);
}

/* When its last process was started (or failed to start). */
ev_tstamp
agent_spawned_at(const struct agent *a)
{
	return a->proc.spawned_at;
}

/* Count a request given to an adapter as a line written to the agent. */
void
agent_count_in(struct agent *a)
{
	a->proc.msgs_in++;
}

/* Count an envelope read from the agent (or made of its tool's output). */
void
agent_count_out(struct agent *a)
{
	a->proc.msgs_out++;
}

/* Lines corral wrote to the agent, and envelopes it wrote. */
void
agent_counts(const struct agent *a, uint64_t *in, uint64_t *out)
{
	*in = a->proc.msgs_in;
	*out = a->proc.msgs_out;
}

/*
 * The line being handled filled the agent's stdin: its reader stops until
 * the agent reads (chan_block).
 */
void
agent_block_reader(struct agent *a)
{
	chan_block(chan_source(), &a->proc.io);
}

/* Readers waiting for the agent's stdin to drain need not wait any more. */
void
agent_release_waiters(struct agent *a)
{
	chan_release_waiters(&a->proc.io);
}

/* Send a signal to the agent's process group. */
void
agent_signal(struct agent *a, int sig)
{
	proc_signal(&a->proc.p, sig);
}

/* Close the agent's stdin once what is queued is written. */
void
agent_close_stdin(struct agent *a)
{
	chan_close_write(&a->proc.io);
}

/* Close the read end of the agent's stdout. */
static void
agent_close_output(struct agent *a)
{
	struct agent_proc	*p = &a->proc;

	if (p->io.rfd != -1) {
		ev_io_stop(LOOP, &p->io.rw);
		close(p->io.rfd);
		p->io.rfd = -1;
	}
}

/*
 * Stop waiting for EOF on pipes a descendant in another session holds:
 * our ends close (it gets EPIPE), and the process counts as ended.
 */
void
agent_abandon_pipes(struct agent *a)
{
	log_warnx("agent %s: output pipes still open after SIGKILL; closing "
	    "them", a->id);
	agent_close_output(a);
	proc_abandon_pipes(&a->proc.p);
}

/* Release the descriptors and watchers of a process that has ended. */
void
agent_release(struct agent *a)
{
	struct agent_proc	*p = &a->proc;

	agent_close_output(a);
	chan_close(&p->io);
	proc_release(&p->p);
	if (a->flags & AGENT_RUNNING) {
		a->flags &= ~AGENT_RUNNING;
		agent_nrunning--;
	}
}

/* Return nonzero if d is a descendant of a. */
int
agent_is_descendant(const struct agent *d, const struct agent *a)
{
	for (d = d->parent; d != NULL; d = d->parent)
		if (d == a)
			return 1;
	return 0;
}

/* Count agents with a running process (or a per-call one started). */
unsigned int
agent_count_running(void)
{
	return agent_nrunning;
}

/* Free an agent marked dead: every module forgets it first. */
static void
agent_free(struct agent *a)
{
	struct agent_kin	*k;
	size_t			 i;

	for (i = 0; i < agent_nfree_hooks; i++)
		agent_free_hooks[i](a);
	while (a->kin != NULL && (k = TAILQ_FIRST(&a->kin->children)) !=
	    NULL) {
		TAILQ_REMOVE(&a->kin->children, k, sibling);
		k->agent->parent = NULL;
	}
	if (a->parent != NULL) {
		TAILQ_REMOVE(&a->parent->kin->children, a->kin, sibling);
		a->parent->kin->nchildren--;
	}
	free(a->kin);
	RB_REMOVE(agent_tree, &agent_tree, a);
	TAILQ_REMOVE(&agent_list, a, entry);
	agent_release(a);
	if (a->conf->conf_free != NULL)
		a->conf->conf_free(a->conf);
	proc_free(&a->proc.p);
	free(a);
}

/* Mark an agent to be freed once it has no process. */
void
agent_mark_dead(struct agent *a)
{
	if (a->flags & AGENT_DEAD)
		return;
	a->flags |= AGENT_DEAD;
	agent_ndead++;
}

/*
 * Free every agent marked dead whose process has ended; called outside
 * their callbacks.  With all, free every agent (corral is exiting).
 */
void
agent_reap_dead(int all)
{
	struct agent	*a, *next;

	if (agent_ndead == 0 && !all)
		return;
	TAILQ_FOREACH_SAFE(a, &agent_list, entry, next) {
		if (!all && (!(a->flags & AGENT_DEAD) ||
		    (a->flags & AGENT_RUNNING)))
			continue;
		if (a->flags & AGENT_DEAD)
			agent_ndead--;
		agent_free(a);
	}
}
