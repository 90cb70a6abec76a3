/*
 * corral top: a full-screen live view of a running corral, to leave open
 * beside a long run: its agents with their states, work in flight and
 * queued, messages, restarts, tokens, cost and last error, and the run's
 * totals.  It redraws every second (-d) and quits on q, or when corral
 * exits.
 *
 *   corral top [-S PATH | --run ID] [-d DURATION] [-n COUNT]
 *
 * It draws with plain ANSI sequences on the terminal's alternate screen
 * (no curses: corral depends on nothing it does not need), restores the
 * terminal on the way out, and fits what it draws to the window's size.
 * When stdout is no terminal it writes plain screens, one after the
 * other with a blank line between, as top -b does.  -n draws that many
 * screens and exits (for scripts and tests).
 */

#include <sys/ioctl.h>

#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "corral.h"
#include "cmd.h"

static struct termios		 cmd_top_saved;
static int			 cmd_top_raw;
static int			 cmd_top_plain;	/* stdout is no terminal */
static volatile sig_atomic_t	 cmd_top_quit;

/* Give the terminal back as it was. */
static void
cmd_top_restore(void)
{
	static const char	leave[] = "\033[?25h\033[?1049l";

	if (cmd_top_raw) {
		(void)tcsetattr(STDIN_FILENO, TCSAFLUSH, &cmd_top_saved);
		cmd_top_raw = 0;
	}
	(void)!write(STDOUT_FILENO, leave, sizeof leave - 1);
}

/* SIGINT, SIGTERM, SIGHUP: leave the loop (the terminal is restored). */
static void
cmd_top_signal(int sig)
{
	cmd_top_quit = 1;
}

/* Read keys without echo or line buffering, when stdin is a terminal. */
static void
cmd_top_keys(void)
{
	struct termios	t;

	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO,
	    &cmd_top_saved) == -1)
		return;
	t = cmd_top_saved;
	t.c_lflag &= ~(ICANON | ECHO);
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &t) == 0)
		cmd_top_raw = 1;
}

/* The window's size (80x24 when it cannot be told). */
static void
cmd_top_size(int *cols, int *rows)
{
	struct winsize	ws;

	*cols = 80;
	*rows = 24;
	if (cmd_top_plain) {
		*cols = 1023;
		*rows = INT_MAX;
		return;
	}
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 &&
	    ws.ws_row > 0) {
		*cols = ws.ws_col;
		*rows = ws.ws_row;
	}
}

/* A screen being drawn: lines cut to the width, at most rows of them. */
struct cmd_top_screen {
	FILE	*f;
	char	*buf;
	size_t	 len;
	int	 cols;
	int	 rows;
	int	 row;
};

/* Add one line to the screen, cut to its width. */
static void __attribute__((format(printf, 2, 3)))
cmd_top_line(struct cmd_top_screen *s, const char *fmt, ...)
{
	va_list	ap;
	char	line[1024];

	if (s->row >= s->rows)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if ((int)strlen(line) > s->cols)
		line[s->cols] = '\0';
	if (cmd_top_plain) {
		fprintf(s->f, "%s\n", line);
		s->row++;
		return;
	}
	/* Erase what the last screen left to the right, then go on. */
	fprintf(s->f, "%s\033[K%s", line, ++s->row < s->rows ? "\r\n" : "");
}

/* The value of metric name's sample with label key=value (or none). */
static double
cmd_top_metric(json_t *metrics, const char *name, const char *key,
    const char *value)
{
	json_t		*m, *smp, *l;
	size_t		 i, j;
	double		 sum = 0;

	json_array_foreach(json_object_get(metrics, "metrics"), i, m) {
		if (strcmp(json_string_value(json_object_get(m, "name")),
		    name) != 0)
			continue;
		json_array_foreach(json_object_get(m, "samples"), j, smp) {
			l = json_object_get(json_object_get(smp, "labels"),
			    key != NULL ? key : "");
			if (key == NULL || (json_is_string(l) &&
			    strcmp(json_string_value(l), value) == 0))
				sum += json_number_value(json_object_get(smp,
				    "value"));
		}
	}
	return sum;
}

/* The histogram's sum or count (suffix "_sum" or "_count"). */
static double
cmd_top_hist(json_t *metrics, const char *suffix)
{
	json_t		*m, *smp;
	size_t		 i, j;

	json_array_foreach(json_object_get(metrics, "metrics"), i, m) {
		if (strcmp(json_string_value(json_object_get(m, "name")),
		    "corral_request_duration_seconds") != 0)
			continue;
		json_array_foreach(json_object_get(m, "samples"), j, smp)
			if (json_is_string(json_object_get(smp, "suffix")) &&
			    strcmp(json_string_value(json_object_get(smp,
			    "suffix")), suffix) == 0)
				return json_number_value(json_object_get(smp,
				    "value"));
	}
	return 0;
}

/*
 * Under a busy agent, the last line of its latest progress (what its CLI
 * said last), made safe for the terminal.
 */
static void
cmd_top_progress(struct cmd_top_screen *s, json_t *md)
{
	const char	*text, *nl;
	char		 line[512];
	size_t		 i, n;

	text = json_string_value(json_object_get(json_object_get(md,
	    "progress"), "text"));
	if (text == NULL)
		return;
	if ((nl = strrchr(text, '\n')) != NULL && nl[1] != '\0')
		text = nl + 1;
	n = strlen(text);
	if (n > sizeof line - 1)
		n = sizeof line - 1;
	for (i = 0; i < n; i++)
		line[i] = (unsigned char)text[i] < 0x20 || text[i] == 0x7f ?
		    ' ' : text[i];
	line[n] = '\0';
	cmd_top_line(s, "%*s  > %s", (int)json_integer_value(json_object_get(md,
	    "depth")) * 2, "", line);
}

/*
 * Under the agents, the requests in flight, as many as fit: their trace
 * ids are what corral cancel takes.
 */
static void
cmd_top_requests(struct cmd_top_screen *s, json_t *reqs)
{
	json_t	*r;
	char	 line[256];
	size_t	 i;

	if (json_array_size(json_object_get(reqs, "requests")) == 0)
		return;
	cmd_top_line(s, "%s", "");
	client_request_head(line, sizeof line);
	cmd_top_line(s, "%s%-*s%s", cmd_top_plain ? "" : "\033[7m",
	    s->cols < 200 ? s->cols : 200, line, cmd_top_plain ? "" :
	    "\033[0m");
	json_array_foreach(json_object_get(reqs, "requests"), i, r) {
		client_request_row(line, sizeof line, r);
		cmd_top_line(s, "%s", line);
	}
	if (json_integer_value(json_object_get(reqs, "total")) >
	    (json_int_t)json_array_size(json_object_get(reqs, "requests")))
		cmd_top_line(s, "... %lld in all", (long long)
		    json_integer_value(json_object_get(reqs, "total")));
}

/*
 * The agents' table.  HOST only when some agent runs on another machine:
 * a team on this one keeps its columns, and LAST ERROR its room.
 */
static void
cmd_top_agents(struct cmd_top_screen *s, json_t *agents)
{
	json_t		*a, *md;
	const char	*err;
	char		 id[64], pid[24], where[96], cell[112], line[256];
	size_t		 i;
	int		 hosts = 0;

	json_array_foreach(agents, i, a)
		if (json_is_object(json_object_get(json_object_get(a,
		    "metadata"), "host")))
			hosts = 1;
	cmd_top_line(s, "%s%-22s %-13s %-8s %-8s %-6s %-7s %-7s %-8s %-8s "
	    "%-9s %s%-30s%s", cmd_top_plain ? "" : "\033[7m", "AGENT",
	    "STATE", "PID", "INFLIGHT", "QUEUE", "IN", "OUT", "RESTARTS",
	    "TOKENS", "COST", hosts ? "HOST       " : "", "LAST ERROR",
	    cmd_top_plain ? "" : "\033[0m");
	json_array_foreach(agents, i, a) {
		md = json_object_get(a, "metadata");
		snprintf(id, sizeof id, "%*s%s", (int)json_integer_value(
		    json_object_get(md, "depth")) * 2, "",
		    json_string_value(json_object_get(a, "id")));
		err = json_string_value(json_object_get(md, "lastError"));
		client_pid(pid, sizeof pid, md);
		client_where(md, where, sizeof where);
		cell[0] = '\0';
		if (hosts)
			snprintf(cell, sizeof cell, "%-10s ", where);
		cmd_top_line(s, "%-22s %-13s %-8s %-8lld %-6lld %-7lld "
		    "%-7lld %-8lld %-8.0f %-9.4f %s%s", id,
		    json_string_value(json_object_get(a, "state")), pid,
		    (long long)json_integer_value(json_object_get(md,
		    "inflight")),
		    (long long)json_integer_value(json_object_get(md,
		    "queued")),
		    (long long)json_integer_value(json_object_get(md, "msgsIn")),
		    (long long)json_integer_value(json_object_get(md,
		    "msgsOut")),
		    (long long)json_integer_value(json_object_get(md,
		    "restarts")),
		    json_number_value(json_object_get(md, "tokens")),
		    json_number_value(json_object_get(md, "cost")), cell,
		    err != NULL ? err : "");
		if (client_status_row(line, sizeof line, md))
			cmd_top_line(s, "%*s  %s", (int)json_integer_value(
			    json_object_get(md, "depth")) * 2, "", line);
		cmd_top_progress(s, md);
	}
}

/*
 * Draw one screen from the agents, the metrics, the requests and what
 * waits for a person.
 */
static void
cmd_top_draw(struct client *c, json_t *agents, json_t *metrics,
    json_t *reqs, json_t *waiting)
{
	struct cmd_top_screen	 s;
	json_t			*run = client_run(c), *a, *m, *smp;
	const char		*st;
	char			 up[32], queues[256];
	size_t			 i, j, ql;
	unsigned int		 idle = 0, busy = 0, other = 0;
	double			 count, sum;

	/* What agents wrote must not drive the terminal. */
	util_vis_json(run);
	util_vis_json(agents);
	util_vis_json(metrics);
	util_vis_json(waiting);
	memset(&s, 0, sizeof s);
	cmd_top_size(&s.cols, &s.rows);
	if ((s.f = open_memstream(&s.buf, &s.len)) == NULL)
		return;
	if (!cmd_top_plain)
		fputs("\033[H", s.f);
	client_uptime(up, sizeof up, cmd_top_metric(metrics,
	    "corral_uptime_seconds", NULL, NULL));
	cmd_top_line(&s, "%scorral top%s  run %s  %s (%s, pid %lld)  up %s%s",
	    cmd_top_plain ? "" : "\033[1m", cmd_top_plain ? "" : "\033[0m",
	    json_string_value(json_object_get(run, "runId")),
	    json_string_value(json_object_get(run, "workflow")),
	    json_string_value(json_object_get(run, "mode")),
	    (long long)json_integer_value(json_object_get(run, "pid")), up,
	    cmd_top_plain ? "" : "    q quits");
	json_array_foreach(agents, i, a) {
		st = json_string_value(json_object_get(a, "state"));
		if (strcmp(st, "idle") == 0)
			idle++;
		else if (strcmp(st, "busy") == 0)
			busy++;
		else
			other++;
	}
	count = cmd_top_hist(metrics, "_count");
	sum = cmd_top_hist(metrics, "_sum");
	cmd_top_line(&s, "agents %zu: %u busy, %u idle, %u other    "
	    "requests %.0f accepted, %.0f replied, %.0f errors, %.0f expired,"
	    " mean %.3fs", json_array_size(agents), busy, idle, other,
	    cmd_top_metric(metrics, "corral_requests_accepted_total", NULL,
	    NULL), cmd_top_metric(metrics, "corral_requests_total", "outcome",
	    "replied"), cmd_top_metric(metrics, "corral_requests_total",
	    "outcome", "error"), cmd_top_metric(metrics,
	    "corral_requests_total", "outcome", "expired"),
	    count > 0 ? sum / count : 0.0);
	queues[0] = '\0';
	json_array_foreach(json_object_get(metrics, "metrics"), i, m) {
		if (strcmp(json_string_value(json_object_get(m, "name")),
		    "corral_queue_depth") != 0)
			continue;
		json_array_foreach(json_object_get(m, "samples"), j, smp) {
			ql = strlen(queues);
			snprintf(queues + ql, sizeof queues - ql, "%s%s %.0f",
			    ql ? ", " : "", json_string_value(json_object_get(
			    json_object_get(smp, "labels"), "intent")),
			    json_number_value(json_object_get(smp, "value")));
		}
	}
	cmd_top_line(&s, "tokens %.0f  cost $%.4f    queued: %s    events "
	    "%.0f (%.0f dropped), clients %.0f",
	    cmd_top_metric(metrics, "corral_tokens_total", NULL, NULL),
	    cmd_top_metric(metrics, "corral_cost_usd_total", NULL, NULL),
	    queues[0] != '\0' ? queues : "-",
	    cmd_top_metric(metrics, "corral_events_total", NULL, NULL),
	    cmd_top_metric(metrics, "corral_events_dropped_total", NULL, NULL),
	    cmd_top_metric(metrics, "corral_control_clients", NULL, NULL));
	json_array_foreach(waiting, i, m) {
		client_uptime(up, sizeof up, (double)json_integer_value(
		    json_object_get(m, "waitingMs")) / 1000.0);
		cmd_top_line(&s, "%swaiting for a person%s %s: step %s of job "
		    "%s (%s), %s: %s", cmd_top_plain ? "" : "\033[1m",
		    cmd_top_plain ? "" : "\033[0m", up, json_string_value(
		    json_object_get(m, "step")), json_string_value(
		    json_object_get(m, "jobId")), json_string_value(
		    json_object_get(m, "reason")), json_is_string(
		    json_object_get(m, "agentId")) ? json_string_value(
		    json_object_get(m, "agentId")) : "-", json_string_value(
		    json_object_get(m, "summary")));
	}
	cmd_top_line(&s, "%s", "");
	cmd_top_agents(&s, agents);
	cmd_top_requests(&s, reqs);
	fputs(cmd_top_plain ? "\n" : "\033[J", s.f);
	fclose(s.f);
	(void)!write(STDOUT_FILENO, s.buf, s.len);
	free(s.buf);
}

/* Wait up to ms for a key; returns nonzero when it was q (or Q). */
static int
cmd_top_key(int ms)
{
	struct pollfd	pfd = { STDIN_FILENO, POLLIN, 0 };
	char		ch;

	if (poll(&pfd, 1, ms) <= 0)
		return 0;
	if (read(STDIN_FILENO, &ch, 1) != 1) {
		/* stdin closed: just wait out the interval. */
		if (ms > 0)
			poll(NULL, 0, ms);
		return 0;
	}
	return ch == 'q' || ch == 'Q';
}

/* corral top. */
static int
cmd_top_exec(struct cmd *c)
{
	static const char	 enter[] = "\033[?1049h\033[?25l\033[H\033[2J";
	struct sigaction	 sa;
	const char		*why = NULL, *v;
	json_t			*list, *metrics, *reqs, *steps, *e;
	double			 delay = 1;
	long			 count = -1;
	char			*end;

	if ((v = cmd_get(c, "delay")) != NULL &&
	    (util_parse_duration(v, &delay) != 0 || delay < 0.1)) {
		fprintf(stderr, "corral: top: -d: at least 0.1s\n");
		return EXIT_USAGE;
	}
	if ((v = cmd_get(c, "count")) != NULL) {
		count = strtol(v, &end, 10);
		if (*end != '\0' || count < 1) {
			fprintf(stderr, "corral: top: -n: a count\n");
			return EXIT_USAGE;
		}
	}
	if (cmd_attach(c) != 0)
		return 1;
	/* Not a terminal: plain screens one after the other, as top -b. */
	cmd_top_plain = !isatty(STDOUT_FILENO);

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = cmd_top_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (!cmd_top_plain) {
		cmd_top_keys();
		(void)!write(STDOUT_FILENO, enter, sizeof enter - 1);
	}
	while (!cmd_top_quit) {
		list = cmd_call(c, CORRAL_M_LIST, NULL);
		metrics = list != NULL ? cmd_call(c, CORRAL_M_METRICS, NULL) :
		    NULL;
		if (list == NULL || metrics == NULL) {
			json_decref(list);
			why = "corral exited";
			break;
		}
		/* A screenful at most; an older corral has none to give. */
		reqs = client_requests(&c->client, 100);
		steps = client_call(&c->client, CORRAL_M_STEPS, NULL, 10000,
		    &e);
		json_decref(e);		/* a corral without steps: none */
		cmd_top_draw(&c->client, json_object_get(list, "agents"),
		    metrics, reqs, json_object_get(steps, "waiting"));
		json_decref(list);
		json_decref(metrics);
		json_decref(reqs);
		json_decref(steps);
		if (count > 0 && --count == 0)
			break;
		if (cmd_top_key((int)(delay * 1000)))
			break;
	}
	if (!cmd_top_plain)
		cmd_top_restore();
	if (why != NULL)
		printf("corral top: %s\n", why);
	return 0;
}

static const struct cmd_option cmd_top_options[] = {
	{ "delay", 'd', 1 },
	{ "count", 'n', 1 },
	{ NULL, 0, 0 }
};

const struct cmd_entry cmd_top_entry = {
	.name = "top",
	.args = "[-d DURATION] [-n COUNT]",
	.about = "a live full-screen view of a running corral",
	.options = cmd_top_options,
	.lower = 0,
	.upper = 0,
	.flags = CMD_TARGET,
	.exec = cmd_top_exec,
};
