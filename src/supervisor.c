/*
 * The supervisor: the event loop, signals, starting the workflow's agents
 * and shutting everything down.
 *
 * Shutdown (end of work, SIGINT, SIGTERM) begins every agent's stop at
 * once, but for parents, which wait for their children, and agents named
 * in another's depends_on, which wait for those (shutdown: sequential:
 * one at a time in reverse start order).  Each gets EOF on its stdin,
 * SIGTERM and SIGCONT to its process group after its grace period,
 * SIGKILL after its stop timeout.  A second SIGINT (or SIGTERM) kills every
 * process group at once.  The loop ends when no agent has a process left.
 *
 * It is the top of the modules: it sets up the ones below with its hooks
 * and hears of the run's result and of agents that stop for good.
 */

#include <sys/resource.h>
#include <sys/signalfd.h>

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "corral.h"

/* The supervisor's state: one per process. */
static struct {
	const struct workflow	*wf;
	int			 mode;
	char			 run_id[16];
	int			 pidns;		/* init of a pid namespace */
	struct chan		 stdio;		/* serve: stdin, stdout */
	struct peer		 stdio_peer;
	int			 stdin_eof;
	int			 stdin_pause;	/* reasons not to read it */
	int			 stdout_flags;
	ev_prepare		 prepare_w;
	int			 sigfd;		/* signalfd of the four */
	ev_io			 sig_w;
	ev_timer		 budget_w;
	int			 shutting_down;	/* 1 stopping, 2 done */
	int			 interrupted;	/* the signal, or 0 */
	int			 exit_status;
	int			 audit_failed;	/* the audit log: exit 1 */
	struct agent		*stopping;	/* the agent being stopped */
	int			 picking;	/* in supervisor_stop_next */
	size_t			 alive;		/* shutdown: agents not yet down */
	unsigned int		*dependents;	/* per entry: live agents that
						   depend on it */
	int			 output_text;
	char			*result;
	size_t			 resultlen;
	int			 result_error;
	int			 escalated;	/* --on-escalate=exit stopped it */
} sv;

static int	sv_quiet;	/* corral run's result stays off stdout */

/*
 * Keep corral run's result off stdout (corral replay, whose stdout is
 * the differences it finds).
 */
void
supervisor_quiet(int on)
{
	sv_quiet = on;
}

/* How the run treats its steps' escalations (corral run's options). */
static struct step_options	 sv_steps;

static void	supervisor_stop_next(void);

/*
 * Free dead agents and clients, then flush output queues and the audit
 * log, before the loop blocks.  In that order: freeing an agent writes
 * its agent_unregistered to the log and to subscribers, which must not
 * wait for the next event to wake the loop.
 */
static void
supervisor_prepare_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	agent_reap_dead(0);
	server_client_reap();
	chan_flush_all();
	auditlog_tick();
	if (sv.shutting_down == 2 && agent_count_running() == 0 &&
	    !supervisor_any_alive())
		ev_break(loop, EVBREAK_ALL);
}

/* Return nonzero if any agent still has a process or a pending restart. */
int
supervisor_any_alive(void)
{
	struct agent	*a;

	for (a = agent_first(); a != NULL; a = agent_next(a))
		if (lifecycle_state(a) != AS_STOPPED &&
		    lifecycle_state(a) != AS_FAILED)
			return 1;
	return 0;
}

/* Kill every process group now: the second interrupt. */
static void
supervisor_kill_all(void)
{
	struct agent	*a;

	for (a = agent_first(); a != NULL; a = agent_next(a))
		if (lifecycle_state(a) != AS_STOPPED &&
		    lifecycle_state(a) != AS_FAILED)
			lifecycle_kill(a);
}

/* Count the agents that still have a process. */
static unsigned int
supervisor_count_alive(void)
{
	struct agent	*a;
	unsigned int	 n = 0;

	for (a = agent_first(); a != NULL; a = agent_next(a))
		if (lifecycle_alive(a))
			n++;
	return n;
}

/* SIGINT, SIGTERM, SIGHUP or SIGQUIT: stop, or (again) kill. */
static void
supervisor_signal(int sig)
{
	char	why[64];

	if (sig == SIGQUIT) {
		/* Ctrl-\: no grace for anyone. */
		log_warnx("QUIT: killing every agent now");
		sv.interrupted = SIGQUIT;
		engine_interrupt("corral was stopped by SIGQUIT");
		supervisor_shutdown(SIGQUIT);
		supervisor_kill_all();
		return;
	}
	if (sv.shutting_down && sv.interrupted) {
		log_warnx("second %s: killing every agent now",
		    util_signame(sig));
		supervisor_kill_all();
		return;
	}
	log_warnx("%s: stopping %u agents (interrupt again to kill)",
	    util_signame(sig), supervisor_count_alive());
	sv.interrupted = sig;
	snprintf(why, sizeof why, "corral was interrupted by SIG%s",
	    util_signame(sig));
	engine_interrupt(why);
	supervisor_shutdown(sig);
}

/*
 * A signal arrived.  In a pid namespace a signal that the whole process
 * group got (timeout(1), a supervisor stopping its child) reaches this
 * process twice: directly, and forwarded by the waiter.  So the waiter's
 * forwards (PIDNS_SIGNAL, which queue) and the terminal's signals count,
 * and a direct signal from another process is left to the waiter, which
 * always gets it too.
 */
static void
supervisor_sig_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct signalfd_siginfo	 si;
	ssize_t			 n;

	while ((n = read(sv.sigfd, &si, sizeof si)) == (ssize_t)sizeof si) {
		if ((int)si.ssi_signo == PIDNS_SIGNAL) {
			/* The waiter's forward: the signal is its value. */
			if (si.ssi_code == SI_QUEUE && (si.ssi_int == SIGINT ||
			    si.ssi_int == SIGTERM || si.ssi_int == SIGHUP ||
			    si.ssi_int == SIGQUIT))
				supervisor_signal(si.ssi_int);
			continue;
		}
		if (sv.pidns && si.ssi_code != SI_KERNEL) {
			log_debug("%s sent to the supervisor itself: the waiter "
			    "forwards it", util_signame((int)si.ssi_signo));
			continue;
		}
		supervisor_signal((int)si.ssi_signo);
	}
}

/* Return the exit status corral should end with. */
static int
supervisor_exit_status(void)
{
	if (sv.audit_failed)
		return EXIT_WORKFLOW;
	if (sv.interrupted == SIGINT)
		return EXIT_INTERRUPT;
	if (sv.interrupted != 0)
		return 128 + sv.interrupted;
	if (sv.escalated)
		return EXIT_ESCALATED;
	return sv.exit_status;
}

/*
 * Begin the shutdown: no new work, queued work fails, agents stop (all at
 * once, or one by one with shutdown: sequential).
 */
void
supervisor_shutdown(int sig)
{
	if (sv.shutting_down)
		return;
	sv.shutting_down = 1;
	lifecycle_set_shutdown();
	supervisor_stdin_pause(STDIN_P_SHUTDOWN, 1);
	engine_shutdown("corral is shutting down");
	progress_update();
	supervisor_stop_next();
}

/* The shutdown is complete: the loop ends once the prepare runs. */
static void
supervisor_done(void)
{
	sv.shutting_down = 2;
	ev_break(LOOP, EVBREAK_ALL);
}

/* Is a down for good (as far as a shutdown goes)? */
static int
supervisor_down(enum agent_state st)
{
	return st == AS_STOPPED || st == AS_FAILED;
}

/*
 * Begin the stop of every agent of entry index (every agent when index is
 * UINT32_MAX) that no live agent depends on, the most recently started
 * first.  Each parent still waits for its children (lifecycle_stop).
 */
static void
supervisor_stop_entry(unsigned int index)
{
	struct agent	*a, *prev;
	unsigned int	 e;

	for (a = agent_last(); a != NULL; a = prev) {
		prev = agent_prev(a);
		e = a->conf->index;
		if (index != UINT32_MAX && e != index)
			continue;
		if (e < sv.wf->nagents && sv.dependents[e] > 0)
			continue;	/* its dependents stop first */
		if (lifecycle_alive(a) || lifecycle_state(a) == AS_BACKOFF)
			lifecycle_stop(a, "shutdown");
	}
}

/*
 * shutdown: parallel: every agent's stop sequence begins at once, but for
 * agents others depend on (depends_on:), which begin once those are down.
 * The agents still up and, per entry, the agents up that depend on it are
 * counted here and kept by supervisor_lifecycle, so that a fleet of any
 * size stops in time linear in its size.
 */
static void
supervisor_stop_all(void)
{
	struct agent	*a;
	size_t		 d;

	free(sv.dependents);
	sv.dependents = xcalloc(sv.wf->nagents + 1, sizeof *sv.dependents);
	sv.alive = 0;
	for (a = agent_first(); a != NULL; a = agent_next(a)) {
		if (supervisor_down(lifecycle_state(a)))
			continue;
		sv.alive++;
		for (d = 0; a->conf->deps != NULL &&
		    d < a->conf->ndepends_on; d++)
			sv.dependents[a->conf->deps[d]]++;
	}
	supervisor_stop_entry(UINT32_MAX);
	if (sv.alive == 0 && !supervisor_any_alive())
		supervisor_done();
}

/* An agent is down during a parallel shutdown: what waited for it goes. */
static void
supervisor_parallel_down(struct agent *a)
{
	size_t		d;
	unsigned int	e;

	for (d = 0; a->conf->deps != NULL && d < a->conf->ndepends_on; d++) {
		e = a->conf->deps[d];
		if (sv.dependents[e] > 0 && --sv.dependents[e] == 0)
			supervisor_stop_entry(e);
	}
	if (sv.alive > 0)
		sv.alive--;
	if (sv.alive == 0 && !supervisor_any_alive())
		supervisor_done();
}

/*
 * Stop the next agent: the most recently started one with a process,
 * descendants before their ancestors.
 */
static void
supervisor_stop_next(void)
{
	struct agent	*a, *next, *pick = NULL;

	if (sv.wf->shutdown_parallel) {
		supervisor_stop_all();
		return;
	}
	sv.picking = 1;
	for (a = agent_first(); a != NULL; a = next) {
		next = agent_next(a);
		if (lifecycle_state(a) == AS_BACKOFF) {
			/* Waiting to restart: not any more. */
			lifecycle_stop(a, "shutdown");
			continue;
		}
		if (!lifecycle_alive(a))
			continue;
		if (pick == NULL || agent_depth(a) > agent_depth(pick) ||
		    (agent_depth(a) == agent_depth(pick) &&
		    lifecycle_start_seq(a) > lifecycle_start_seq(pick)))
			pick = a;
	}
	sv.picking = 0;
	if (pick == NULL) {
		supervisor_done();
		return;
	}
	sv.stopping = pick;
	if (lifecycle_stopping(pick))
		return;		/* already on its way */
	lifecycle_stop(pick, "shutdown");
}

/* An agent changed state: one that stopped for good moves the shutdown. */
static void
supervisor_lifecycle(struct agent *a, enum agent_state from,
    enum agent_state to, enum agent_event ev, const char *why)
{
	if (!sv.shutting_down || sv.picking || !supervisor_down(to) ||
	    supervisor_down(from))
		return;
	if (sv.wf->shutdown_parallel) {
		if (sv.dependents != NULL && sv.shutting_down == 1)
			supervisor_parallel_down(a);
		return;
	}
	if (sv.stopping == NULL || sv.stopping == a ||
	    !lifecycle_alive(sv.stopping))
		supervisor_stop_next();
}

/* An agent is about to be freed. */
static void
supervisor_forget(struct agent *a)
{
	if (sv.stopping == a)
		sv.stopping = NULL;
}

/* corral run's job has its result: the run is over. */
static void
supervisor_result(const char *line, size_t len, int is_error)
{
	free(sv.result);
	sv.result = xmemdup0(line, len);
	sv.resultlen = len;
	sv.result_error = is_error;
	sv.exit_status = is_error ? EXIT_WORKFLOW : 0;
	supervisor_shutdown(0);
}

/*
 * The audit log could not be written (a full disk): the run's record is
 * incomplete from here on, so no more work is taken, the run shuts down
 * as it would at the end, and corral exits 1 (docs/auditlog.md).
 */
static void
supervisor_audit_failed(const char *path, int error)
{
	log_warnx("audit log %s: %s; stopping: no more work is accepted",
	    path, strerror(error));
	sv.audit_failed = 1;
	supervisor_shutdown(0);
}

/* The run's time budget (limits.budget.time) is spent: every job ends. */
static void
supervisor_budget_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	char	why[128];

	ev_ref(loop);
	snprintf(why, sizeof why, "the run's time budget of %gs is spent",
	    sv.wf->budget_time);
	log_warnx("%s", why);
	budget_run_timeout(why);
	sv.exit_status = EXIT_WORKFLOW;
	supervisor_shutdown(0);
}

/* corral serve: stop once stdin is done and every job has its answer. */
static void
supervisor_check_done(void)
{
	if (sv.mode == MODE_SERVE && sv.stdin_eof && engine_idle() &&
	    !sv.shutting_down)
		supervisor_shutdown(0);
}

/*
 * Pause or resume reading corral serve's stdin for one reason; it reads
 * only when no reason is left.
 */
void
supervisor_stdin_pause(int reason, int on)
{
	int	was = sv.stdin_pause;

	if (sv.mode != MODE_SERVE || sv.stdio.rfd == -1)
		return;
	/* Queues fill from agents too: only stdin's own work pauses it. */
	if (reason == STDIN_P_QUEUE && on && chan_source() != &sv.stdio)
		return;
	if (on)
		sv.stdin_pause |= reason;
	else
		sv.stdin_pause &= ~reason;
	/* Every job's end says "resume": only a change is news. */
	if (sv.stdin_pause == was)
		return;
	if (sv.stdin_pause != 0)
		chan_stop_reading(&sv.stdio);
	else
		chan_resume_reading(&sv.stdio);
}

/*
 * Write one line on corral serve's stdout.  When stdout is full, whoever
 * produced the line stops: an agent until stdout drains, stdin likewise
 * (stdin and stdout are one channel, so it pauses itself).
 */
static void
supervisor_out(const char *line, size_t len)
{
	struct chan	*src = chan_source();

	chan_write_line(&sv.stdio, line, len);
	if (!chan_full(&sv.stdio))
		return;
	if (src != NULL && src != &sv.stdio)
		chan_block(src, &sv.stdio);
	else
		supervisor_stdin_pause(STDIN_P_STDOUT, 1);
}

/* corral serve's stdout drained below its low watermark. */
static void
supervisor_stdout_drained(struct chan *c, int arg)
{
	supervisor_stdin_pause(STDIN_P_STDOUT, 0);
}

/* corral serve's stdin reached EOF. */
static void
supervisor_stdin_eof(struct chan *c, int arg)
{
	sv.stdin_eof = 1;
	log_info("stdin closed; finishing %u jobs", engine_jobs_count());
	supervisor_check_done();
}

/* corral serve's stdout failed: nobody reads our results any more. */
static void
supervisor_stdout_error(struct chan *c, int error)
{
	log_warnx("stdout: %s; shutting down", strerror(error));
	sv.exit_status = EXIT_WORKFLOW;
	supervisor_shutdown(0);
}

/* A line from corral serve's stdin. */
static void
supervisor_stdin_line(struct chan *c, enum ndjson_kind kind, char *line,
    size_t len, size_t extra)
{
	if (!sv.shutting_down)
		dialect_input(&sv.stdio_peer, line, len, kind, extra);
}

/* Make sure descriptors 0, 1 and 2 are open, so pipes never land there. */
static void
supervisor_std_fds(void)
{
	int	fd;

	while ((fd = open("/dev/null", O_RDWR)) != -1 && fd <= 2)
		;
	if (fd > 2)
		close(fd);
}

/* Write what is left for stdout, blocking: we are about to exit. */
static void
supervisor_drain_stdout(void)
{
	if (sv.stdio.wfd == -1)
		return;
	util_set_nonblock(sv.stdio.wfd, 0);
	if (sv.stdio.wr != NULL)
		(void)ndjson_queue_flush(sv.stdio.wr, sv.stdio.wfd);
	if (sv.stdout_flags != -1)
		(void)fcntl(STDOUT_FILENO, F_SETFL, sv.stdout_flags);
}

/* Print corral run's result: the envelope, or its text with --output text. */
static void
supervisor_print_result(void)
{
	json_error_t	 e;
	json_t		*j, *content, *text, *data;
	char		*s;

	if (sv.result == NULL || sv_quiet)
		return;
	if (!sv.output_text) {
		fwrite(sv.result, 1, sv.resultlen, stdout);
		fputc('\n', stdout);
		fflush(stdout);
		return;
	}
	if ((j = json_loadb(sv.result, sv.resultlen, 0, &e)) == NULL)
		return;
	content = json_object_get(j, "content");
	text = json_object_get(content, "text");
	data = json_object_get(content, "data");
	if (json_is_string(text))
		printf("%s\n", json_string_value(text));
	else if (data != NULL && (s = jsonw_dumps(data, JSON_INDENT(2) |
	    JSON_REAL_PRECISION(15))) != NULL) {
		printf("%s\n", s);
		free(s);
	}
	fflush(stdout);
	json_decref(j);
}

/*
 * An agent writes nothing but bad lines (dialect.c): it is failed, unless
 * it is on its way out already.  Returns nonzero when it was failed.
 */
static int
supervisor_garbage(struct agent *a, const char *why)
{
	if (!lifecycle_alive(a) || lifecycle_stopping(a))
		return 0;
	lifecycle_fail(a, why);
	return 1;
}

/*
 * A request's outcome: counted for the metrics; a failure is remembered
 * on its agent and is a system_error event.
 */
static void
supervisor_outcome(const struct msg *m, const char *outcome,
    const char *category, const char *code, const char *why)
{
	struct event_info	 ei;
	struct jsonw		 j;
	struct agent		*a = m->agent != NULL ? m->agent : m->target;
	char			*s;
	size_t			 len;

	metrics_outcome(m, outcome, code);
	otlp_outcome(m, outcome, code, why);
	if (why == NULL || strcmp(outcome, "replied") == 0)
		return;
	if (a != NULL)
		mapview_note_error(a, why);
	jsonw_init(&j);
	jsonw_object(&j);
	jsonw_key(&j, "code");
	jsonw_str(&j, code != NULL ? code : "error");
	jsonw_key(&j, "category");
	jsonw_str(&j, category != NULL ? category : "INTERNAL");
	jsonw_key(&j, "message");
	jsonw_str(&j, why);
	jsonw_key(&j, "requestId");
	jsonw_str(&j, m->id);
	jsonw_key(&j, "intent");
	jsonw_str(&j, protocol_intent_name(m->intent));
	if (a != NULL) {
		jsonw_key(&j, "agentId");
		jsonw_str(&j, a->id);
	}
	jsonw_object_end(&j);
	s = jsonw_finish(&j, &len);
	memset(&ei, 0, sizeof ei);
	ei.type = "system_error";
	ei.source = a != NULL ? a->id : "corral";
	ei.source_role = a != NULL ? a->conf->role : NULL;
	ei.agent = a != NULL ? a->id : NULL;
	ei.agent_role = ei.source_role;
	ei.audit = 1;
	event_emit(&ei, s, len);
	free(s);
}

/* Set how the run treats escalations, before supervisor_run. */
void
supervisor_step_options(const struct step_options *o)
{
	sv_steps = *o;
}

/* A step asks a person: on a terminal, corral asks there. */
static void
supervisor_escalated(json_t *info)
{
	prompt_ask(info);
}

/* An escalation is over (answered anywhere): the terminal asks no more. */
static void
supervisor_answered(const char *job, const char *step, const char *why)
{
	prompt_cancel(job, step, why);
}

/* --on-escalate=exit: the run ends for a person, with its own status. */
static void
supervisor_escalation_exit(const char *record)
{
	sv.escalated = 1;
}

/* _corral/shutdown: a client stops the run, as SIGTERM would. */
static void
supervisor_control_stop(void)
{
	if (sv.shutting_down)
		return;
	sv.interrupted = SIGTERM;
	supervisor_shutdown(SIGTERM);
}

/*
 * The pid a person would signal: the waiter, in the caller's pid
 * namespace (our parent, as the host's /proc sees it), else ours.
 */
static long
supervisor_host_pid(void)
{
	FILE	*f;
	char	 line[128];
	long	 pid = (long)getpid();
	int	 fd;

	if (!sv.pidns)
		return pid;
	if (pidns_host_proc() != -1)
		fd = openat(pidns_host_proc(), "self/status", O_RDONLY |
		    O_CLOEXEC);
	else
		fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd == -1 || (f = fdopen(fd, "r")) == NULL) {
		if (fd != -1)
			close(fd);
		return pid;
	}
	while (fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, "PPid:", 5) == 0) {
			pid = strtol(line + 5, NULL, 10);
			break;
		}
	fclose(f);
	return pid;
}

/*
 * Set up the supervisor's state, loop and modules for a workflow, without
 * starting anything.  The unit tests and fuzz targets use this too.
 */
void
supervisor_setup(const struct workflow *wf, int mode)
{
	static const struct step_hooks sh = {
		supervisor_escalated, supervisor_answered,
		supervisor_escalation_exit
	};
	struct dialect_consumers dc;
	struct engine_hooks	eh;
	struct control_info	ci;
	char			name[256];
	uint32_t		r;

	/* Set up again (the tests do): the old watcher leaves the loop. */
	if (ev_is_active(&sv.prepare_w))
		ev_prepare_stop(LOOP, &sv.prepare_w);
	free(sv.result);
	free(sv.dependents);
	memset(&sv, 0, sizeof sv);
	sv.wf = wf;
	sv.mode = mode;
	sv.stdout_flags = -1;
	r = arc4random();
	snprintf(sv.run_id, sizeof sv.run_id, "%06x", r & 0xffffff);
	protocol_set_run(sv.run_id);
	sv.stdio.rfd = sv.stdio.wfd = -1;
	sv.stdio_peer.name = "client:stdio";
	sv.stdio_peer.chan = &sv.stdio;
	sv.stdio_peer.role = PEER_CLIENT;
	sv.pidns = (getpid() == 1);
	spawn_init(wf, sv.pidns);
	launch_init(wf);

	supervisor_std_fds();
	util_raise_nofile();
	signal(SIGPIPE, SIG_IGN);
	umask(077);

	if (ev_default_loop(EVFLAG_AUTO) == NULL)
		fatalx("cannot initialize libev");
	ev_prepare_init(&sv.prepare_w, supervisor_prepare_cb);
	ev_prepare_start(LOOP, &sv.prepare_w);

	/* Who takes what agents and serve's stdin say. */
	memset(&dc, 0, sizeof dc);
	dc.activity = lifecycle_activity;
	dc.fail = supervisor_garbage;
	dc.tool = adapter_line;
	dc.control = control_frame;
	dc.envelope = engine_agent_envelope;
	dc.invalid = engine_agent_invalid;
	dc.input = engine_input;
	dc.out = supervisor_out;
	dialect_init(&dc);
	memset(&eh, 0, sizeof eh);
	eh.out = supervisor_out;
	eh.result = supervisor_result;
	eh.pause = supervisor_stdin_pause;
	eh.idle = supervisor_check_done;
	eh.outcome = supervisor_outcome;
	eh.ended = taskreg_request_ended;
	eh.session = session_engine;
	eh.replied = otlp_configured() ? otlp_replied : NULL;
	engine_init(wf, &eh);
	step_init(wf, &sv_steps, &sh);
	step_workflow_name(wf, name, sizeof name);
	dialect_adr007_defaults(name, wf->feature_id);
	subagent_init(wf);
	event_init();
	message_init();
	mapview_init();
	metrics_init();
	memset(&ci, 0, sizeof ci);
	ci.workflow = wf->name != NULL ? wf->name : wf->path;
	ci.path = wf->path;
	ci.mode = mode == MODE_RUN ? "run" : "serve";
	ci.pid = supervisor_host_pid();
	ci.started_ms = event_now_ms();
	ci.shutdown = supervisor_control_stop;
	ci.wf = wf;
	control_init(&ci);
	lifecycle_observe(supervisor_lifecycle);
	agent_on_free(supervisor_forget);
	auditlog_on_error(supervisor_audit_failed);
	progress_init(wf, mode);
	prompt_init(mode == MODE_RUN && sv_steps.on_escalate == STEP_ON_WAIT &&
	    wf->nsteps > 0);
}

/* The serve channel (stdin and stdout), for the tests. */
struct chan *
supervisor_stdio(void)
{
	return &sv.stdio;
}

/* The longest line of the run: 1 MiB, or an agent's max_line if longer. */
static size_t
supervisor_max_line(const struct workflow *wf)
{
	size_t	max = CORRAL_MAX_LINE_DEFAULT, i;

	for (i = 0; i < wf->nagents; i++)
		if (wf->agents[i].max_line > max)
			max = wf->agents[i].max_line;
	return max;
}

/* Start serve's channel on stdin and stdout. */
static void
supervisor_stdio_start(void)
{
	static const struct chan_ops	ops = { supervisor_stdin_line,
	    supervisor_stdin_eof, supervisor_stdout_error,
	    supervisor_stdout_drained };
	size_t				max;

	/* An input may be as long as the longest line an agent takes. */
	max = supervisor_max_line(sv.wf);
	if (sv.wf->stdin_max_line != 0)
		max = sv.wf->stdin_max_line;
	chan_init(&sv.stdio, "stdin", STDIN_FILENO, STDOUT_FILENO, max, NULL);
	sv.stdio.ops = &ops;
	sv.stdout_flags = fcntl(STDOUT_FILENO, F_GETFL);
	util_set_nonblock(STDOUT_FILENO, 1);
}

/*
 * Tell the modules that start agents how an agent reaches corral: the
 * socket (in its environment, with its credential) and, for the CLIs'
 * tools, corral's own binary and the run's private directory.
 */
static void
supervisor_tools(void)
{
	char	exe[PATH_MAX];
	ssize_t	n;

	spawn_set_control(server_path());
	if ((n = readlink("/proc/self/exe", exe, sizeof exe - 1)) == -1) {
		log_warn("readlink /proc/self/exe");
		n = 0;
	}
	exe[n] = '\0';
	adapter_tools_init(n > 0 ? exe : NULL, server_path(), server_rundir());
}

/*
 * Start entry i's instances, after those of the entries it depends on
 * (started: 1 for the entries done).
 */
static void
supervisor_start_entry(size_t i, unsigned char *started)
{
	struct agent_conf	*ac = &sv.wf->agents[i];
	struct agent		*a;
	size_t			 d;
	unsigned int		 k;

	if (started[i])
		return;
	started[i] = 1;
	for (d = 0; ac->deps != NULL && d < ac->ndepends_on; d++)
		supervisor_start_entry(ac->deps[d], started);
	if (!ac->autostart)
		return;
	for (k = 1; k <= ac->instances; k++) {
		a = lifecycle_create(ac, k, NULL);
		route_add_agent(a);
		if (lifecycle_start(a) == 0)
			budget_set(a, ac->budget_tokens, ac->budget_cost,
			    ac->budget_time);
	}
}

/*
 * Start the workflow's agents in the order the file lists them, but each
 * after the agents it depends on.
 */
static void
supervisor_start_agents(void)
{
	unsigned char	*started;
	size_t		 i;

	started = xcalloc(sv.wf->nagents + 1, 1);
	for (i = 0; i < sv.wf->nagents; i++)
		supervisor_start_entry(i, started);
	free(started);
}

/*
 * Say once what this kernel cannot enforce of the agents' confine:, and
 * refuse to run an agent that requires what is missing.  Returns nonzero
 * to refuse.
 */
static int
supervisor_confine(const struct workflow *wf)
{
	struct {
		char	gap[512];
		char	names[256];
	}			 seen[4];
	const struct agent_conf	*ac;
	char			 gap[512];
	size_t			 i, j, nseen = 0;
	int			 refuse = 0, logged = 0;

	for (i = 0; i < wf->nagents; i++) {
		ac = &wf->agents[i];
		if ((ac->confine.flags & CONFINE_ON) && !logged++) {
			log_info("confine: Landlock ABI %d", confine_abi());
			log_info("confine: %s", confine_mountns() ? "a mount "
			    "namespace for each agent, read-only but where it "
			    "may write" : "no mount namespace for agents");
		}
		if (confine_refused(&ac->confine, gap, sizeof gap)) {
			log_warnx("agent %s: confine: required, but %s",
			    ac->name, gap);
			refuse = 1;
			continue;
		}
		if (!confine_gaps(&ac->confine, gap, sizeof gap))
			continue;
		for (j = 0; j < nseen; j++)
			if (strcmp(seen[j].gap, gap) == 0)
				break;
		if (j == nseen) {
			if (nseen == sizeof seen / sizeof seen[0])
				continue;
			strlcpy(seen[j].gap, gap, sizeof seen[j].gap);
			seen[j].names[0] = '\0';
			nseen++;
		}
		if (seen[j].names[0] != '\0')
			strlcat(seen[j].names, ", ", sizeof seen[j].names);
		strlcat(seen[j].names, ac->name, sizeof seen[j].names);
	}
	for (j = 0; j < nseen; j++)
		log_warnx("confine: not enforced in full for %s: %s",
		    seen[j].names, seen[j].gap);
	return refuse;
}

/* Record the run's outcome counts at its end. */
static void
supervisor_run_end(void)
{
	const struct engine_stats	*st = engine_stats_get();
	uint64_t			 rejected = dialect_stats_get()->rejected;
	struct jsonw			 j;
	struct rusage			 ru;
	char				*s;
	size_t				 len;
	long				 peak = 0;

	/* corral's own peak memory, the figure docs/reliability.md bounds. */
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		peak = ru.ru_maxrss;	/* kB */
	if (auditlog_enabled()) {
		jsonw_init(&j);
		jsonw_object(&j);
		jsonw_key(&j, "accepted");
		jsonw_u64(&j, st->accepted);
		jsonw_key(&j, "replied");
		jsonw_u64(&j, st->replied);
		jsonw_key(&j, "errored");
		jsonw_u64(&j, st->errored);
		jsonw_key(&j, "expired");
		jsonw_u64(&j, st->expired);
		jsonw_key(&j, "rejected");
		jsonw_u64(&j, rejected);
		jsonw_key(&j, "late");
		jsonw_u64(&j, st->late);
		jsonw_key(&j, "peak_rss_kb");
		jsonw_u64(&j, (uint64_t)peak);
		jsonw_object_end(&j);
		s = jsonw_finish(&j, &len);
		auditlog_fields("run_end", NULL, NULL, s, len);
		free(s);
	}
	log_info("done: %llu accepted, %llu replied, %llu errored, %llu "
	    "expired, %llu rejected; peak memory %.1f MB",
	    (unsigned long long)st->accepted, (unsigned long long)st->replied,
	    (unsigned long long)st->errored, (unsigned long long)st->expired,
	    (unsigned long long)rejected, peak / 1024.0);
}

/*
 * Run a workflow: corral run (goal given) or corral serve.  Returns the
 * exit status.
 */
int
supervisor_run(const struct workflow *wf, int mode, const char *goal,
    const char *logpath, int output_text)
{
	sigset_t	 set;

	supervisor_setup(wf, mode);
	sv.output_text = output_text;
	/* Read as a descriptor: each signal with who sent it. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	sigaddset(&set, PIDNS_SIGNAL);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if ((sv.sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) == -1)
		fatal("signalfd");
	ev_io_init(&sv.sig_w, supervisor_sig_cb, sv.sigfd, EV_READ);
	ev_io_start(LOOP, &sv.sig_w);
	if (supervisor_confine(wf) != 0)
		return EXIT_USAGE;
	if (logpath != NULL && auditlog_open(logpath, wf->path) != 0) {
		log_warn("--log %s", logpath);
		return EXIT_USAGE;
	}
	event_set_log(logpath, supervisor_max_line(wf));
	if (otlp_open() != 0) {
		log_warn("--otlp");
		return EXIT_USAGE;
	}
	if (workspace_open(wf) != 0) {
		log_warn("workspace %s", wf->workspace);
		return EXIT_USAGE;
	}
	if (mode == MODE_SERVE) {
		supervisor_stdio_start();
		/* A participant like a socket's client: it may be messaged. */
		rpc_peer_add(&sv.stdio_peer);
	}
	(void)server_start();
	step_set_answerable(server_path() != NULL || prompt_active());
	supervisor_tools();
	supervisor_start_agents();
	progress_start();
	if (wf->budget_time > 0) {
		ev_timer_init(&sv.budget_w, supervisor_budget_cb,
		    wf->budget_time, 0);
		ev_timer_start(LOOP, &sv.budget_w);
		ev_unref(LOOP);
	}

	if (mode == MODE_RUN) {
		if (engine_start_goal(goal, strlen(goal)) != 0) {
			log_warnx("the goal's envelope is not valid");
			sv.exit_status = EXIT_USAGE;
			supervisor_shutdown(0);
		}
	} else
		chan_start(&sv.stdio);

	ev_run(LOOP, 0);

	prompt_stop();
	if (!sv.pidns)
		pidns_sweep();
	progress_stop();
	chan_flush_all();
	server_stop();
	rpc_peer_remove(&sv.stdio_peer);
	if (mode == MODE_SERVE)
		supervisor_drain_stdout();
	else
		supervisor_print_result();
	workspace_close();	/* its last outcomes go before run_end */
	otlp_close();
	supervisor_run_end();
	(void)auditlog_close();	/* a failure reaches supervisor_audit_failed */
	jscan_drain();
	return supervisor_exit_status();
}
