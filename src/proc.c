/*
 * Short-lived processes, one per request, for the adapters that run a tool
 * once per envelope (exec, codex, gemini).
 *
 * A proc is started with the same hygiene as an agent (spawn.c), fed its
 * stdin, which is then closed (many tools wait for EOF), and read to the
 * end: stdout is kept up to a bound, the tail of stderr is kept for error
 * messages and every stderr line is logged.  It is done when its exit
 * status is reaped and both output pipes reached EOF; then its owner's
 * done callback runs.  proc_kill ends its process group: SIGTERM, then
 * SIGKILL after the agent's stop timeout; proc_interrupt sends SIGINT
 * first.
 */

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"

static void	proc_in_cb(struct ev_loop *, ev_io *, int);
static void	proc_out_cb(struct ev_loop *, ev_io *, int);
static void	proc_err_cb(struct ev_loop *, ev_io *, int);
static void	proc_child_cb(struct ev_loop *, ev_child *, int);
static void	proc_kill_cb(struct ev_loop *, ev_timer *, int);

/* The processes whose pids are not reaped yet. */
static struct procs	proc_live = TAILQ_HEAD_INITIALIZER(proc_live);

/* Take a process off the live list: its pid is reaped, or it is freed. */
static void
proc_unlist(struct proc *p)
{
	if (!(p->flags & PROC_LIVE))
		return;
	TAILQ_REMOVE(&proc_live, p, live);
	p->flags &= ~PROC_LIVE;
}

/*
 * The process with this pid, as /proc names pids, that is not reaped
 * yet, or NULL.  Until it is reaped no other process can have its pid.
 */
struct proc *
proc_find(pid_t pid)
{
	struct proc	*p;

	TAILQ_FOREACH(p, &proc_live, live)
		if (pidns_proc_pid(p->pid, p->hostpid) == pid)
			return p;
	return NULL;
}

/* Run the done callback once everything of the process is in. */
static void
proc_check_done(struct proc *p)
{
	if ((p->flags & (PROC_EXITED | PROC_OUT_EOF | PROC_ERR_EOF)) !=
	    (PROC_EXITED | PROC_OUT_EOF | PROC_ERR_EOF) || (p->flags &
	    PROC_DONE))
		return;
	p->flags |= PROC_DONE;
	ev_timer_stop(LOOP, &p->kill_w);
	p->done(p);
}

/* Close the write end of stdin. */
static void
proc_close_in(struct proc *p)
{
	if (p->in == -1)
		return;
	ev_io_stop(LOOP, &p->in_w);
	close(p->in);
	p->in = -1;
}

/*
 * Start a process for agent a running argv, with env (NAME=value, or NULL)
 * added to the agent's environment, and data on its stdin (data NULL:
 * stdin closed at once).  stdout is kept up to max bytes.  Returns 0, or
 * -1 with why filled.
 */
int
proc_start(struct proc *p, struct agent *a, char *const *argv,
    char *const *env, const char *data, size_t len, size_t max, char *why,
    size_t whylen)
{
	struct spawn_result	sr;

	p->agent = a;
	p->in = p->out = p->err = -1;
	if (spawn_argv(a->conf, argv, a->id, a->token, env, &sr) != 0) {
		snprintf(why, whylen, "%s: %s", sr.what, strerror(sr.error));
		return -1;
	}
	p->pid = sr.pid;
	p->hostpid = sr.hostpid;
	p->in = sr.in;
	p->out = sr.out;
	p->err = sr.err;
	p->out_max = max;
	p->started = ev_now(LOOP);
	p->flags |= PROC_LIVE;
	TAILQ_INSERT_TAIL(&proc_live, p, live);

	if (data != NULL && len > 0) {
		p->stdin_data = xmemdup0(data, len);
		p->stdin_len = len;
		ev_io_init(&p->in_w, proc_in_cb, p->in, EV_WRITE);
		p->in_w.data = p;
		ev_io_start(LOOP, &p->in_w);
	} else
		proc_close_in(p);
	ev_io_init(&p->out_w, proc_out_cb, p->out, EV_READ);
	p->out_w.data = p;
	ev_io_start(LOOP, &p->out_w);
	ev_io_init(&p->err_w, proc_err_cb, p->err, EV_READ);
	p->err_w.data = p;
	ev_io_start(LOOP, &p->err_w);
	ndjson_reader_init(&p->err_rd, 4096, 1);
	ev_child_init(&p->child_w, proc_child_cb, p->pid, 0);
	p->child_w.data = p;
	ev_child_start(LOOP, &p->child_w);
	ev_timer_init(&p->kill_w, proc_kill_cb, 0, 0);
	p->kill_w.data = p;
	log_info("agent %s: started %s (pid %ld)", a->id, argv[0],
	    (long)p->hostpid);
	return 0;
}

/* Feed stdin; close it when all is written (the tool may wait for EOF). */
static void
proc_in_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct proc	*p = w->data;
	ssize_t		 n;

	n = write(p->in, p->stdin_data + p->stdin_off,
	    p->stdin_len - p->stdin_off);
	if (n == -1) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		/* It closed stdin: it will not read the rest. */
		log_debug("agent %s: pid %ld stdin: %s", p->agent->id,
		    (long)p->hostpid, strerror(errno));
		proc_close_in(p);
		return;
	}
	p->stdin_off += (size_t)n;
	if (p->stdin_off == p->stdin_len) {
		proc_close_in(p);
		free(p->stdin_data);
		p->stdin_data = NULL;
	}
}

/* Keep stdout, up to the bound; beyond it, count and drop. */
static void
proc_out_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct proc	*p = w->data;
	char		*buf;
	size_t		 size, keep;
	ssize_t		 n;

	buf = chan_read_buffer(&size);
	n = read(p->out, buf, size);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		ev_io_stop(loop, &p->out_w);
		close(p->out);
		p->out = -1;
		p->flags |= PROC_OUT_EOF;
		if (p->line_cb != NULL && p->out_len > 0)
			p->line_cb(p, p->out_buf, p->out_len);
		proc_check_done(p);
		return;
	}
	if (p->line_cb != NULL) {
		/* Line mode: hand out complete lines, keep the partial one. */
		size_t	 i, start = 0;

		for (i = 0; i < (size_t)n; i++) {
			if (buf[i] != '\n')
				continue;
			if (p->out_len > 0) {
				proc_append(p, buf + start, i - start);
				p->line_cb(p, p->out_buf, p->out_len);
				p->out_len = 0;
			} else
				p->line_cb(p, buf + start, i - start);
			start = i + 1;
		}
		if (start < (size_t)n)
			proc_append(p, buf + start, (size_t)n - start);
		return;
	}
	keep = (size_t)n;
	if (p->out_len + keep > p->out_max) {
		keep = p->out_max > p->out_len ? p->out_max - p->out_len : 0;
		p->out_dropped += (size_t)n - keep;
	}
	proc_append(p, buf, keep);
}

/* Append to the stdout buffer (bounded by the caller). */
void
proc_append(struct proc *p, const char *data, size_t n)
{
	size_t	cap;

	if (n == 0)
		return;
	if (p->line_cb != NULL && p->out_len + n > p->out_max) {
		/* An endless line in line mode: drop it, say so once. */
		p->out_dropped += n;
		return;
	}
	if (p->out_len + n > p->out_cap) {
		cap = p->out_cap != 0 ? p->out_cap : 4096;
		while (cap < p->out_len + n)
			cap *= 2;
		p->out_buf = xreallocarray(p->out_buf, cap, 1);
		p->out_cap = cap;
	}
	memcpy(p->out_buf + p->out_len, data, n);
	p->out_len += n;
}

/*
 * Keep the head and the tail of stderr and log each line.  The head
 * matters too: a tool that refuses its command line says why first and
 * then prints pages of usage.
 */
static void
proc_err_line(void *arg, enum ndjson_kind kind, char *line, size_t len,
    size_t extra)
{
	struct proc	*p = arg;
	size_t		 keep;

	if (kind == NDJSON_TOOLONG)
		return;
	if (p->quiet_stderr)
		log_debug("%s: %.*s", p->agent->id, (int)(len > 200 ? 200 :
		    len), line);
	else
		log_agent_line(p->agent->id, line, len, kind == NDJSON_CUT ?
		    extra : 0);
	if (p->err_hlen + len + 2 > sizeof p->err_head)
		p->flags |= PROC_HEADFULL;
	if (!(p->flags & PROC_HEADFULL)) {
		memcpy(p->err_head + p->err_hlen, line, len);
		p->err_hlen += len;
		p->err_head[p->err_hlen++] = '\n';
		p->err_head[p->err_hlen] = '\0';
	}
	/* The tail: the last lines that fit in the buffer. */
	keep = len + 1 > sizeof p->err_tail - 1 ? sizeof p->err_tail - 2 : len;
	if (p->err_len + keep + 1 > sizeof p->err_tail - 1) {
		size_t drop = p->err_len + keep + 1 - (sizeof p->err_tail - 1);
		if (drop > p->err_len)
			drop = p->err_len;
		memmove(p->err_tail, p->err_tail + drop, p->err_len - drop);
		p->err_len -= drop;
	}
	memcpy(p->err_tail + p->err_len, line, keep);
	p->err_len += keep;
	p->err_tail[p->err_len++] = '\n';
	p->err_tail[p->err_len] = '\0';
}

/* Drain stderr. */
static void
proc_err_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct proc	*p = w->data;
	char		*buf;
	size_t		 size;
	ssize_t		 n;

	buf = chan_read_buffer(&size);
	n = read(p->err, buf, size);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		ev_io_stop(loop, &p->err_w);
		ndjson_finish(&p->err_rd, proc_err_line, p);
		close(p->err);
		p->err = -1;
		p->flags |= PROC_ERR_EOF;
		proc_check_done(p);
		return;
	}
	ndjson_feed(&p->err_rd, buf, (size_t)n, proc_err_line, p);
}

/* The process exited. */
static void
proc_child_cb(struct ev_loop *loop, ev_child *w, int revents)
{
	struct proc	*p = w->data;

	ev_child_stop(loop, &p->child_w);
	p->status = w->rstatus;
	p->flags |= PROC_EXITED;
	proc_unlist(p);
	proc_close_in(p);
	if ((p->flags & (PROC_OUT_EOF | PROC_ERR_EOF)) !=
	    (PROC_OUT_EOF | PROC_ERR_EOF) && !ev_is_active(&p->kill_w)) {
		/* A descendant holds its pipes: end its process group. */
		p->kill_step = 1;
		ev_timer_set(&p->kill_w, p->agent->conf->stop_grace, 0);
		ev_timer_start(loop, &p->kill_w);
	}
	proc_check_done(p);
}

/*
 * Escalate: SIGTERM after SIGINT, SIGKILL after SIGTERM; at last, stop
 * waiting for the pipes.
 */
static void
proc_kill_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct proc	*p = w->data;

	if (p->kill_step == 3) {
		(void)kill(-p->pid, SIGTERM);
		p->kill_step = 1;
		ev_timer_set(&p->kill_w, p->agent->conf->stop_timeout, 0);
		ev_timer_start(loop, &p->kill_w);
		return;
	}
	if (p->kill_step == 1) {
		(void)kill(-p->pid, SIGKILL);
		p->kill_step = 2;
		ev_timer_set(&p->kill_w, 1.0, 0);
		ev_timer_start(loop, &p->kill_w);
		return;
	}
	if (p->flags & PROC_EXITED) {
		/* Detached descendants hold the pipes: close our ends. */
		if (p->out != -1) {
			ev_io_stop(loop, &p->out_w);
			close(p->out);
			p->out = -1;
		}
		if (p->err != -1) {
			ev_io_stop(loop, &p->err_w);
			close(p->err);
			p->err = -1;
		}
		p->flags |= PROC_OUT_EOF | PROC_ERR_EOF;
		proc_check_done(p);
	} else {
		ev_timer_set(&p->kill_w, 1.0, 0);
		ev_timer_start(loop, &p->kill_w);
	}
}

/* End the process group: SIGTERM now, SIGKILL after the stop timeout. */
void
proc_kill(struct proc *p)
{
	if (p->flags & PROC_DONE)
		return;
	p->flags |= PROC_KILLED;
	if (!(p->flags & PROC_EXITED)) {
		(void)kill(-p->pid, SIGTERM);
		(void)kill(-p->pid, SIGCONT);
	}
	proc_close_in(p);
	ev_timer_stop(LOOP, &p->kill_w);
	p->kill_step = 1;
	ev_timer_set(&p->kill_w, p->agent->conf->stop_timeout, 0);
	ev_timer_start(LOOP, &p->kill_w);
}

/*
 * Interrupt the process group as a person's ^C would, so that a tool may
 * end its work cleanly: SIGINT now, SIGTERM after the agent's stop grace,
 * SIGKILL after its stop timeout.
 */
void
proc_interrupt(struct proc *p)
{
	if (p->flags & PROC_DONE)
		return;
	if (p->flags & PROC_EXITED) {
		proc_kill(p);
		return;
	}
	p->flags |= PROC_KILLED;
	(void)kill(-p->pid, SIGINT);
	(void)kill(-p->pid, SIGCONT);
	proc_close_in(p);
	ev_timer_stop(LOOP, &p->kill_w);
	p->kill_step = 3;
	ev_timer_set(&p->kill_w, p->agent->conf->stop_grace, 0);
	ev_timer_start(LOOP, &p->kill_w);
}

/* Write data to a running process's stdin (line-mode tools). */
int
proc_write(struct proc *p, const char *data, size_t len)
{
	ssize_t	n;

	if (p->in == -1)
		return -1;
	while (len > 0) {
		n = write(p->in, data, len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Release a finished (or never started) process's resources. */
void
proc_free(struct proc *p)
{
	proc_unlist(p);
	ev_io_stop(LOOP, &p->out_w);
	ev_io_stop(LOOP, &p->err_w);
	ev_child_stop(LOOP, &p->child_w);
	ev_timer_stop(LOOP, &p->kill_w);
	proc_close_in(p);
	if (p->out != -1)
		close(p->out);
	if (p->err != -1)
		close(p->err);
	ndjson_reader_free(&p->err_rd);
	free(p->stdin_data);
	free(p->out_buf);
	free(p);
}
