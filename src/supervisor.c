/*
 * The supervisor: the event loop, signals, starting the workflow's agents
 * and shutting everything down.
 *
 * Shutdown (end of work, SIGINT, SIGTERM) stops agents one at a time in
 * reverse start order, children before their parents: each gets EOF on its
 * stdin, SIGTERM and SIGCONT to its process group after its grace period,
 * SIGKILL after its stop timeout.  A second SIGINT (or SIGTERM) kills every
 * process group at once.  The loop ends when no agent has a process left.
 */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "corral.h"

struct corral	*cr;
static struct corral	supervisor_state;
static int		stdout_flags = -1;

static void	supervisor_stop_next(void);

/* Flush output queues and free dead agents before the loop blocks. */
static void
supervisor_prepare_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	chan_flush_all();
	auditlog_tick();
	agent_reap_dead();
	if (cr->shutting_down == 2 && cr->nagents == 0 &&
	    !supervisor_any_alive())
		ev_break(loop, EVBREAK_ALL);
}

/* Return nonzero if any agent still has a process or a pending restart. */
int
supervisor_any_alive(void)
{
	struct agent	*a;

	TAILQ_FOREACH(a, &cr->agents, entry) {
		if (a->state != AS_STOPPED && a->state != AS_FAILED)
			return 1;
	}
	return 0;
}

/* Kill every process group now: the second interrupt. */
static void
supervisor_kill_all(void)
{
	struct agent	*a;

	TAILQ_FOREACH(a, &cr->agents, entry) {
		if (a->state == AS_STOPPED || a->state == AS_FAILED)
			continue;
		a->flags |= AGENT_NORESTART;
		if (adapter_per_call(a)) {
			(void)adapter_stop(a);
			continue;
		}
		lifecycle_kill(a, SIGKILL);
		lifecycle_kill(a, SIGCONT);
	}
}

/* SIGINT, SIGTERM or SIGHUP. */
static void
supervisor_signal_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	if (w->signum == SIGQUIT) {
		/* Ctrl-\: no grace for anyone. */
		log_warnx("QUIT: killing every agent now");
		cr->interrupted = SIGQUIT;
		supervisor_shutdown(SIGQUIT);
		supervisor_kill_all();
		return;
	}
	if (cr->shutting_down && cr->interrupted) {
		log_warnx("second %s: killing every agent now",
		    util_signame(w->signum));
		supervisor_kill_all();
		return;
	}
	log_info("%s: shutting down", util_signame(w->signum));
	cr->interrupted = w->signum;
	supervisor_shutdown(w->signum);
}

/* Return the exit status corral should end with. */
static int
supervisor_exit_status(void)
{
	if (cr->interrupted == SIGINT)
		return EXIT_INTERRUPT;
	if (cr->interrupted != 0)
		return 128 + cr->interrupted;
	return cr->exit_status;
}

/*
 * Begin the shutdown: no new work, queued work fails, agents stop one by
 * one in reverse start order.
 */
void
supervisor_shutdown(int sig)
{
	if (cr->shutting_down)
		return;
	cr->shutting_down = 1;
	supervisor_stdin_pause(STDIN_P_SHUTDOWN, 1);
	route_fail_all("corral is shutting down");
	engine_fail_retrying("corral is shutting down");
	progress_update();
	supervisor_stop_next();
}

/*
 * shutdown: parallel: begin every agent's stop sequence at once, the
 * most recently started first; each parent still waits for its children.
 */
static void
supervisor_stop_all(void)
{
	struct agent	*a, *prev;

	for (a = TAILQ_LAST(&cr->agents, agents); a != NULL; a = prev) {
		prev = TAILQ_PREV(a, agents, entry);
		if (a->state == AS_STOPPED && a->life_step == 4) {
			ev_timer_stop(cr->loop, &a->life_w);
			a->life_step = 0;
			a->flags |= AGENT_NORESTART;
		}
		if (lifecycle_alive(a) && a->state != AS_STOPPING)
			lifecycle_stop(a, "shutdown");
	}
	if (!supervisor_any_alive()) {
		cr->shutting_down = 2;
		ev_break(cr->loop, EVBREAK_ALL);
	}
}

/*
 * Stop the next agent: the most recently started one with a process,
 * descendants before their ancestors.
 */
static void
supervisor_stop_next(void)
{
	struct agent	*a, *pick = NULL;

	if (cr->wf->shutdown_parallel) {
		supervisor_stop_all();
		return;
	}

	TAILQ_FOREACH(a, &cr->agents, entry) {
		if (a->state == AS_FAILED)
			continue;
		if (a->state == AS_STOPPED) {
			if (a->life_step == 4) {
				/* Waiting to restart: not any more. */
				ev_timer_stop(cr->loop, &a->life_w);
				a->life_step = 0;
				a->flags |= AGENT_NORESTART;
			}
			continue;
		}
		if (pick == NULL || a->depth > pick->depth ||
		    (a->depth == pick->depth && a->start_seq > pick->start_seq))
			pick = a;
	}
	if (pick == NULL) {
		cr->shutting_down = 2;
		ev_break(cr->loop, EVBREAK_ALL);
		return;
	}
	cr->stopping = pick;
	if (pick->state == AS_STOPPING)
		return;		/* already on its way */
	lifecycle_stop(pick, "shutdown");
}

/* An agent reached STOPPED or FAILED for good. */
void
supervisor_agent_stopped(struct agent *a)
{
	subagent_stopped(a);
	if (!cr->shutting_down)
		return;
	if (cr->wf->shutdown_parallel) {
		if (!supervisor_any_alive()) {
			cr->shutting_down = 2;
			ev_break(cr->loop, EVBREAK_ALL);
		}
		return;
	}
	if (cr->stopping == NULL || cr->stopping == a ||
	    !lifecycle_alive(cr->stopping))
		supervisor_stop_next();
}

/* corral run's job has its result: the run is over. */
void
supervisor_run_done(void)
{
	cr->exit_status = cr->result_error ? EXIT_WORKFLOW : 0;
	if (cr->output_text) {
		/* Printed after the agents stopped, in supervisor_run. */
	}
	supervisor_shutdown(0);
}

/* The run's time budget (limits.budget.time) is spent: every job ends. */
static void
supervisor_budget_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct job	*j, *next;

	ev_ref(loop);
	log_warnx("the run's time budget of %gs is spent", cr->wf->budget_time);
	cr->budget_hit = 1;
	TAILQ_FOREACH_SAFE(j, &cr->jobs, entry, next)
		engine_limit(j, "budget_exceeded", "the run's time budget of "
		    "%gs is spent", cr->wf->budget_time);
	cr->exit_status = EXIT_WORKFLOW;
	supervisor_shutdown(0);
}

/* corral serve: stop once stdin is done and every job has its answer. */
void
supervisor_check_done(void)
{
	if (cr->mode == MODE_SERVE && cr->stdin_eof && cr->njobs == 0 &&
	    !cr->shutting_down)
		supervisor_shutdown(0);
}

/*
 * Pause or resume reading corral serve's stdin for one reason; it reads
 * only when no reason is left.
 */
void
supervisor_stdin_pause(int reason, int on)
{
	if (cr->mode != MODE_SERVE || cr->stdio.rfd == -1)
		return;
	if (on)
		cr->stdin_pause |= reason;
	else
		cr->stdin_pause &= ~reason;
	if (cr->stdin_pause != 0)
		chan_stop_reading(&cr->stdio);
	else
		chan_resume_reading(&cr->stdio);
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
	cr->stdin_eof = 1;
	log_info("stdin closed; finishing %u jobs", cr->njobs);
	supervisor_check_done();
}

/* corral serve's stdout failed: nobody reads our results any more. */
static void
supervisor_stdout_error(struct chan *c, int error)
{
	log_warnx("stdout: %s; shutting down", strerror(error));
	cr->exit_status = EXIT_WORKFLOW;
	supervisor_shutdown(0);
}

/* A line from corral serve's stdin. */
static void
supervisor_stdin_line(struct chan *c, enum ndjson_kind kind, char *line,
    size_t len, size_t extra)
{
	if (!cr->shutting_down)
		engine_input_line(line, len, kind, extra);
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

/* Collect the pids of our direct children from /proc. */
static size_t
supervisor_children(pid_t *out, size_t max)
{
	char		 path[64], buf[512], *p;
	FILE		*f;
	size_t		 n = 0;
	long		 v;

	snprintf(path, sizeof path, "/proc/self/task/%ld/children",
	    (long)getpid());
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	while (n < max && fgets(buf, sizeof buf, f) != NULL) {
		for (p = buf; *p != '\0' && n < max;) {
			v = strtol(p, &p, 10);
			if (v > 0)
				out[n++] = (pid_t)v;
			while (*p == ' ' || *p == '\n')
				p++;
			if (*p != '\0' && (*p < '0' || *p > '9'))
				break;
		}
	}
	fclose(f);
	return n;
}

/*
 * Without a pid namespace corral is a child subreaper: descendants that
 * detached from their agent were reparented to it.  Kill them, and any
 * they leave behind, and reap them, so nothing outlives corral's exit.
 */
static void
supervisor_sweep(void)
{
	pid_t		 kids[256];
	size_t		 n, i;
	int		 round, status;
	struct timespec	 ts = { 0, 20 * 1000 * 1000 };

	for (round = 0; round < 50; round++) {
		while (waitpid(-1, &status, WNOHANG) > 0)
			;
		if ((n = supervisor_children(kids, 256)) == 0)
			return;
		for (i = 0; i < n; i++) {
			if (round == 0)
				log_info("killing pid %ld, left behind by an "
				    "agent", (long)kids[i]);
			(void)kill(kids[i], SIGKILL);
		}
		nanosleep(&ts, NULL);
	}
	log_warnx("processes left behind by agents could not all be reaped");
}

/* Write what is left for stdout, blocking: we are about to exit. */
static void
supervisor_drain_stdout(void)
{
	if (cr->stdio.wfd == -1)
		return;
	util_set_nonblock(cr->stdio.wfd, 0);
	(void)ndjson_writer_flush(&cr->stdio.wr, cr->stdio.wfd);
	if (stdout_flags != -1)
		(void)fcntl(STDOUT_FILENO, F_SETFL, stdout_flags);
}

/* Print corral run's result: the envelope, or its text with --output text. */
static void
supervisor_print_result(void)
{
	json_error_t	 e;
	json_t		*j, *content, *text, *data;
	char		*s;

	if (cr->result == NULL)
		return;
	if (!cr->output_text) {
		fwrite(cr->result, 1, cr->resultlen, stdout);
		fputc('\n', stdout);
		fflush(stdout);
		return;
	}
	if ((j = json_loadb(cr->result, cr->resultlen, 0, &e)) == NULL)
		return;
	content = json_object_get(j, "content");
	text = json_object_get(content, "text");
	data = json_object_get(content, "data");
	if (json_is_string(text))
		printf("%s\n", json_string_value(text));
	else if (data != NULL && (s = json_dumps(data, JSON_INDENT(2) |
	    JSON_REAL_PRECISION(15))) != NULL) {
		printf("%s\n", s);
		free(s);
	}
	fflush(stdout);
	json_decref(j);
}

/*
 * Set up the supervisor's state, loop and modules for a workflow, without
 * starting anything.  The fuzz targets use this too.
 */
void
supervisor_setup(struct workflow *wf, int mode)
{
	uint32_t	r;

	cr = &supervisor_state;
	memset(cr, 0, sizeof *cr);
	cr->wf = wf;
	cr->mode = mode;
	r = arc4random();
	snprintf(cr->run_id, sizeof cr->run_id, "%06x", r & 0xffffff);
	protocol_set_run(cr->run_id);
	TAILQ_INIT(&cr->agents);
	RB_INIT(&cr->agent_tree);
	TAILQ_INIT(&cr->dirty);
	cr->stdio.rfd = cr->stdio.wfd = -1;
	cr->pidns = (getpid() == 1);
	spawn_set_pidns(cr->pidns);

	supervisor_std_fds();
	util_raise_nofile();
	signal(SIGPIPE, SIG_IGN);
	umask(077);

	cr->loop = ev_default_loop(EVFLAG_AUTO);
	if (cr->loop == NULL)
		fatalx("cannot initialize libev");
	cr->started = ev_now(cr->loop);
	ev_prepare_init(&cr->prepare_w, supervisor_prepare_cb);
	ev_prepare_start(cr->loop, &cr->prepare_w);
	engine_init();
	route_init();
	subagent_init();
}

/*
 * Run a workflow: corral run (goal given) or corral serve.  Returns the
 * exit status.
 */
int
supervisor_run(struct workflow *wf, int mode, const char *goal,
    const char *logpath, int output_text)
{
	struct agent	*a;
	size_t		 i;
	unsigned int	 k;

	supervisor_setup(wf, mode);
	cr->output_text = output_text;
	ev_signal_init(&cr->sigint_w, supervisor_signal_cb, SIGINT);
	ev_signal_start(cr->loop, &cr->sigint_w);
	ev_signal_init(&cr->sigterm_w, supervisor_signal_cb, SIGTERM);
	ev_signal_start(cr->loop, &cr->sigterm_w);
	ev_signal_init(&cr->sighup_w, supervisor_signal_cb, SIGHUP);
	ev_signal_start(cr->loop, &cr->sighup_w);
	ev_signal_init(&cr->sigquit_w, supervisor_signal_cb, SIGQUIT);
	ev_signal_start(cr->loop, &cr->sigquit_w);

	if (logpath != NULL && auditlog_open(logpath) != 0) {
		log_warn("--log %s", logpath);
		return EXIT_USAGE;
	}
	if (workspace_open(wf) != 0) {
		log_warn("workspace %s", wf->workspace);
		return EXIT_USAGE;
	}

	if (mode == MODE_SERVE) {
		/* An input may be as long as the longest line an agent takes. */
		size_t max = CORRAL_MAX_LINE_DEFAULT;
		for (i = 0; i < wf->nagents; i++)
			if (wf->agents[i].max_line > max)
				max = wf->agents[i].max_line;
		if (wf->stdin_max_line != 0)
			max = wf->stdin_max_line;
		chan_init(&cr->stdio, "stdin", STDIN_FILENO, STDOUT_FILENO,
		    max, NULL);
		cr->stdio.on_line = supervisor_stdin_line;
		cr->stdio.on_eof = supervisor_stdin_eof;
		cr->stdio.on_werror = supervisor_stdout_error;
		cr->stdio.on_drain = supervisor_stdout_drained;
		stdout_flags = fcntl(STDOUT_FILENO, F_GETFL);
		util_set_nonblock(STDOUT_FILENO, 1);
	}

	/* Start the workflow's agents in the order the file lists them. */
	for (i = 0; i < wf->nagents; i++) {
		if (!wf->agents[i].autostart)
			continue;
		for (k = 1; k <= wf->agents[i].instances; k++) {
			a = agent_create(&wf->agents[i], k, NULL);
			a->budget_tokens = wf->agents[i].budget_tokens;
			a->budget_cost = wf->agents[i].budget_cost;
			a->budget_time = wf->agents[i].budget_time;
			route_add_agent(a);
			if (agent_start(a) == 0)
				subagent_budget_start(a);
		}
	}
	progress_start();
	if (wf->budget_time > 0) {
		ev_timer_init(&cr->budget_w, supervisor_budget_cb,
		    wf->budget_time, 0);
		ev_timer_start(cr->loop, &cr->budget_w);
		ev_unref(cr->loop);
	}

	if (mode == MODE_RUN) {
		if (engine_start_goal(goal) != 0) {
			log_warnx("the goal is not valid UTF-8");
			cr->exit_status = EXIT_USAGE;
			supervisor_shutdown(0);
		}
	} else
		chan_start(&cr->stdio);

	ev_run(cr->loop, 0);

	if (!cr->pidns)
		supervisor_sweep();
	progress_stop();
	chan_flush_all();
	if (mode == MODE_SERVE)
		supervisor_drain_stdout();
	else
		supervisor_print_result();
	if (auditlog_enabled()) {
		char acc[32], rep[32], err[32], exp[32], rej[32], late[32];
		snprintf(acc, sizeof acc, "%llu",
		    (unsigned long long)cr->accepted);
		snprintf(rep, sizeof rep, "%llu",
		    (unsigned long long)cr->replied);
		snprintf(err, sizeof err, "%llu",
		    (unsigned long long)cr->errored);
		snprintf(exp, sizeof exp, "%llu",
		    (unsigned long long)cr->expired);
		snprintf(rej, sizeof rej, "%llu",
		    (unsigned long long)cr->rejected);
		snprintf(late, sizeof late, "%llu",
		    (unsigned long long)cr->late);
		auditlog_event("run_end", NULL, NULL, "accepted", acc,
		    "replied", rep, "errored", err, "expired", exp,
		    "rejected", rej, "late", late, NULL);
	}
	log_info("done: %llu accepted, %llu replied, %llu errored, %llu "
	    "expired, %llu rejected", (unsigned long long)cr->accepted,
	    (unsigned long long)cr->replied, (unsigned long long)cr->errored,
	    (unsigned long long)cr->expired, (unsigned long long)cr->rejected);
	auditlog_close();
	workspace_close();
	return supervisor_exit_status();
}
