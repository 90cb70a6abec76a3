/*
 * Launched agents: an agent whose command runs on another machine,
 * through a program that keeps its stdin, stdout and stderr (ssh -T,
 * srun --unbuffered, podman run -i), as its entry's launch: says
 * (docs/scale-out.md).
 *
 * Before each start this module picks a host from launch.hosts (in turn,
 * or the one running fewest of corral's agents; a restart stays where it
 * ran unless that host failed), expands the launcher's template and
 * spawns the launcher in the agent's place.  {{cmd}} in the template is
 * the agent's command under corral host, which runs it there in a pid
 * namespace and keeps a link with this end:
 *
 * - corral host's hello on stderr says where the agent runs (the host,
 *   its pid there, Slurm's job, the container); the agent counts as
 *   started, and ready at spawn, only then;
 * - its ticks, and any stderr line, are signs of life: silence for
 *   launch.lost means the host or the link is lost; the launcher is
 *   killed, the agent's requests fail with agent_lost naming the host,
 *   and its restart policy applies, elsewhere when the host failed;
 * - corral writes a keepalive line on the agent's stdin every
 *   launch.alive, so that corral host ends the agent when corral is gone,
 *   even where the launcher's own teardown would not;
 * - its bye says how the agent ended, which the exit then says, with the
 *   host.
 *
 * Each host has a breaker: launch.breaker.failures failures in a row
 * (lost, or the launcher ending before corral host answered) keep it out
 * for launch.breaker.reset; then one agent may try it.  Hosts are shared
 * by every entry that names them.
 */

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

/* Hosts one launch.hosts may name, at most (config-table.c checks). */
#define LAUNCH_HOSTS_MAX	CONFIG_LAUNCH_HOSTS

/* A machine named in some launch.hosts. */
struct launch_host {
	char			*name;
	unsigned int		 agents;	/* running there now */
	uint64_t		 placed;	/* when last chosen (a sequence) */
	unsigned int		 failures;	/* in a row */
	ev_tstamp		 open_until;	/* out until then */
	int			 probing;	/* half-open: one agent tries */
	TAILQ_ENTRY(launch_host) entry;
};
TAILQ_HEAD(launch_hosts, launch_host);

/* An agent's part: where its process runs, and its link. */
struct launch {
	int			 flags;
#define LAUNCH_LINKED	0x01	/* corral host on the far end ({{cmd}}) */
#define LAUNCH_HELLO	0x02	/* it said where the agent runs */
#define LAUNCH_BYE	0x04	/* it said how the agent ended */
#define LAUNCH_GATED	0x08	/* ready once it says hello */
#define LAUNCH_LOST	0x10	/* corral gave up on the link */
#define LAUNCH_RUNNING	0x20	/* a process counted at its host */
#define LAUNCH_FAILED	0x40	/* the last process ended for its host */
	struct launch_host	*host;		/* NULL: the launcher chose */
	struct launch_host	*last;		/* of the last process */
	char			*program;	/* the launcher */
	json_t			*where;		/* the hello */
	json_t			*bye;
	char			*lost;		/* why the link was given up */
	ev_timer		 link_w;
	ev_tstamp		 last_word;	/* any stderr line */
	ev_tstamp		 last_check;
};

static struct launch_hosts	 launch_hosts =
				    TAILQ_HEAD_INITIALIZER(launch_hosts);
static const struct workflow	*launch_wf;
static uint64_t			 launch_seq;
static char *const		*launch_warned[64];	/* launch.argv lists */
static size_t			 launch_nwarned;

static int	launch_spawn(struct agent *, char **, char *const *,
		    struct spawn_result *);
static int	launch_waits(struct agent *);
static int	launch_errline(struct agent *, const char *, size_t);
static void	launch_exit(struct agent *, char *, size_t);
static void	launch_forget(struct agent *);
static void	launch_link_cb(struct ev_loop *, ev_timer *, int);

static const struct lifecycle_spawner launch_spawner = {
	.spawn = launch_spawn,
	.waits = launch_waits,
};

/*
 * Set the module up for a workflow: the lifecycle starts processes
 * through it, and agent.c tells it of their stderr and their end.
 */
void
launch_init(const struct workflow *wf)
{
	launch_wf = wf;
	launch_nwarned = 0;
	lifecycle_set_spawner(&launch_spawner);
	agent_on_process(launch_errline, launch_exit);
	agent_on_free(launch_forget);
}

/* The host called name, made on first use. */
static struct launch_host *
launch_host_get(const char *name)
{
	struct launch_host	*h;

	TAILQ_FOREACH(h, &launch_hosts, entry)
		if (strcmp(h->name, name) == 0)
			return h;
	h = xcalloc(1, sizeof *h);
	h->name = xstrdup(name);
	TAILQ_INSERT_TAIL(&launch_hosts, h, entry);
	return h;
}

/* Free every host (corral is exiting, or the tests start afresh). */
void
launch_free_hosts(void)
{
	struct launch_host	*h;

	while ((h = TAILQ_FIRST(&launch_hosts)) != NULL) {
		TAILQ_REMOVE(&launch_hosts, h, entry);
		free(h->name);
		free(h);
	}
	launch_seq = 0;
}

/* May an agent be placed on h now?  Out hosts let one try after reset. */
static int
launch_usable(const struct launch_host *h, const struct launch_conf *l,
    ev_tstamp now)
{
	if (h->failures < l->failures)
		return 1;
	return now >= h->open_until && !h->probing;
}

/*
 * The placement rule, over the hosts of one launch.hosts as slots: the
 * usable host (not out, not avoid) that was chosen longest ago, or, for
 * least-loaded, that runs fewest agents (then the one chosen longest ago);
 * ties go to the first in the list.  avoid (an index, or -1) is taken
 * only when no other host is usable.  Returns an index, or -1: none.
 */
int
launch_pick(enum launch_place place, const struct launch_slot *s, size_t n,
    int avoid)
{
	size_t	i;
	int	best = -1;

	for (i = 0; i < n; i++) {
		if (s[i].out || (int)i == avoid)
			continue;
		if (best < 0)
			best = (int)i;
		else if (place == LAUNCH_LEAST_LOADED &&
		    s[i].agents != s[best].agents) {
			if (s[i].agents < s[best].agents)
				best = (int)i;
		} else if (s[i].placed < s[best].placed)
			best = (int)i;
	}
	if (best < 0 && avoid >= 0 && (size_t)avoid < n && !s[avoid].out)
		best = avoid;
	return best;
}

/*
 * Choose where the agent's next process runs: where it ran, with stay,
 * unless that host failed it; else by the rule among usable hosts,
 * another than a failed one when there is another.  NULL with *none set:
 * every host is out.
 */
static struct launch_host *
launch_choose(const struct launch *ln, const struct launch_conf *l,
    int *none)
{
	struct launch_host	*h[LAUNCH_HOSTS_MAX], *best;
	struct launch_slot	 slot[LAUNCH_HOSTS_MAX];
	ev_tstamp		 now = ev_now(LOOP);
	size_t			 i, n;
	int			 avoid = -1, k;

	*none = 0;
	if (l->nhosts == 0)
		return NULL;
	n = l->nhosts < LAUNCH_HOSTS_MAX ? l->nhosts : LAUNCH_HOSTS_MAX;
	for (i = 0; i < n; i++) {
		h[i] = launch_host_get(l->hosts[i]);
		slot[i].agents = h[i]->agents;
		slot[i].placed = h[i]->placed;
		slot[i].out = !launch_usable(h[i], l, now);
		if (h[i] == ln->last) {
			if (ln->flags & LAUNCH_FAILED)
				avoid = (int)i;
			else if (l->stay && !slot[i].out)
				return h[i];
		}
	}
	if ((k = launch_pick(l->place, slot, n, avoid)) < 0) {
		*none = 1;
		return NULL;
	}
	best = h[k];
	if (best->failures >= l->failures)
		best->probing = 1;	/* half-open: this one tries it */
	return best;
}

/* A host failed an agent: after enough in a row it is out for a while. */
static void
launch_host_failed(struct launch_host *h, const struct launch_conf *l,
    const char *why)
{
	char	n[16];

	h->probing = 0;
	if (++h->failures < l->failures)
		return;
	h->open_until = ev_now(LOOP) + l->reset;
	snprintf(n, sizeof n, "%u", h->failures);
	log_warnx("host %s: out for %gs after %u failures in a row (%s)",
	    h->name, l->reset, h->failures, why);
	auditlog_event("host_out", NULL, NULL, "host", h->name, "failures", n,
	    "reason", why, NULL);
}

/* A host ran an agent: its breaker closes. */
static void
launch_host_ok(struct launch_host *h)
{
	if (h->failures > 0 && h->open_until != 0) {
		log_info("host %s: back (an agent started there)", h->name);
		auditlog_event("host_back", NULL, NULL, "host", h->name, NULL);
	}
	h->failures = 0;
	h->probing = 0;
	h->open_until = 0;
}

/* Append NAME=value to a JSON list. */
static void
launch_env_add(json_t *list, const char *name, const char *value)
{
	char	*s;

	xasprintf(&s, "%s=%s", name, value);
	json_array_append_new(list, json_string(s));
	free(s);
}

/*
 * The agent's own variables for the far end ({{env}}): its env:, what
 * its adapter adds, and corral's CORRAL_* that mean something there (not
 * the control socket nor the Python module's path, which are here).
 */
static json_t *
launch_env(struct agent *a, char *const *aenv, const char *host)
{
	json_t		*e = json_array();
	char		 buf[32], *const *x;
	size_t		 i;

	for (i = 0; i < a->conf->nenv; i++)
		launch_env_add(e, a->conf->env[i].key, a->conf->env[i].value);
	for (x = aenv; x != NULL && *x != NULL; x++)
		json_array_append_new(e, json_string(*x));
	launch_env_add(e, "CORRAL_AGENT_ID", a->id);
	launch_env_add(e, "CORRAL_AGENT_NAME", a->conf->name);
	launch_env_add(e, "CORRAL_RUN_ID", protocol_run_id());
	snprintf(buf, sizeof buf, "%d", CORRAL_PROTOCOL_VERSION);
	launch_env_add(e, "CORRAL_PROTOCOL", buf);
	if (host != NULL)
		launch_env_add(e, "CORRAL_HOST", host);
	if (workspace_dir() != NULL)
		launch_env_add(e, "CORRAL_WORKSPACE", workspace_dir());
	return e;
}

/* The agent's command: a relative program made absolute, as spawn does. */
static json_t *
launch_argv(char **argv)
{
	json_t	*v = json_array();
	char	*s;
	size_t	 i;

	for (i = 0; argv[i] != NULL; i++) {
		if (i == 0 && argv[0][0] != '/' && strchr(argv[0], '/') !=
		    NULL && launch_wf != NULL) {
			xasprintf(&s, "%s/%s", launch_wf->dir, argv[0]);
			json_array_append_new(v, json_string(s));
			free(s);
		} else
			json_array_append_new(v, json_string(argv[i]));
	}
	return v;
}

/* Append "-x value" (a number of seconds) to a JSON list. */
static void
launch_opt(json_t *v, const char *flag, double d)
{
	char	buf[32];

	snprintf(buf, sizeof buf, "%g", d);
	json_array_append_new(v, json_string(flag));
	json_array_append_new(v, json_string(buf));
}

/*
 * {{cmd}}: the agent's command under corral host, with the link's
 * times, the stop sequence's, the agent's directory, variables and
 * resource limits, which apply there.
 */
static json_t *
launch_cmd(struct agent *a, json_t *argv, json_t *env)
{
	const struct agent_conf	*ac = a->conf;
	json_t			*v = json_array(), *e;
	const char		*name;
	char			*s;
	size_t			 i;

	json_array_append_new(v, json_string(ac->launch.corral));
	json_array_append_new(v, json_string("host"));
	launch_opt(v, "-a", ac->launch.alive);
	launch_opt(v, "-x", ac->launch.lost);
	launch_opt(v, "-g", ac->stop_grace);
	launch_opt(v, "-t", ac->stop_timeout);
	if (ac->cwd != NULL) {
		json_array_append_new(v, json_string("-C"));
		json_array_append_new(v, json_string(ac->cwd));
	}
	json_array_foreach(env, i, e) {
		json_array_append_new(v, json_string("-e"));
		json_array_append(v, e);
	}
	for (i = 0; i < ac->nlimits; i++) {
		if (ac->limits[i].value < 0 ||
		    (name = config_rlimit_name(ac->limits[i].resource)) == NULL)
			continue;
		xasprintf(&s, "%s=%lld", name, ac->limits[i].value);
		json_array_append_new(v, json_string("-l"));
		json_array_append_new(v, json_string(s));
		free(s);
	}
	json_array_append_new(v, json_string("--"));
	json_array_extend(v, argv);
	return v;
}

/* The values of the template's placeholders for one start. */
static json_t *
launch_vars(struct agent *a, char **argv, char *const *aenv,
    const struct launch_host *h)
{
	json_t	*v = json_object(), *av, *env;

	av = launch_argv(argv);
	env = launch_env(a, aenv, h != NULL ? h->name : NULL);
	json_object_set_new(v, "host", json_string(h != NULL ? h->name : ""));
	json_object_set_new(v, "cmd", launch_cmd(a, av, env));
	json_object_set_new(v, "argv", av);
	json_object_set_new(v, "env", env);
	json_object_set_new(v, "agent", json_pack("{s:s, s:s}", "id", a->id,
	    "name", a->conf->name));
	json_object_set_new(v, "run", json_string(protocol_run_id()));
	json_object_set_new(v, "corral", json_string(a->conf->launch.corral));
	json_object_set_new(v, "dir", json_string(launch_wf != NULL ?
	    launch_wf->dir : "."));
	return v;
}

/*
 * The list an element that is one placeholder alone names ("{{cmd}}"):
 * its words become arguments of their own.  NULL for anything else.
 */
static json_t *
launch_whole_list(const char *t, json_t *vars)
{
	size_t	n;
	json_t	*v;
	char	 name[32];

	if (strncmp(t, "{{", 2) != 0)
		return NULL;
	for (t += 2; *t == ' '; t++)
		;
	n = strcspn(t, " |}");
	if (n == 0 || n >= sizeof name)
		return NULL;
	memcpy(name, t, n);
	name[n] = '\0';
	for (t += n; *t == ' '; t++)
		;
	if (strcmp(t, "}}") != 0)
		return NULL;
	v = json_object_get(vars, name);
	return json_is_array(v) ? v : NULL;
}

/*
 * Expand the launcher's template into an argv (allocated, each element
 * too): strings as exec's templates expand them, a list alone in its
 * element spread into several.
 */
char **
launch_expand(char *const *tmpl, size_t n, json_t *vars)
{
	char	**out = NULL;
	size_t	  len = 0, cap = 0, i, j;
	json_t	 *list, *e;

	for (i = 0; i < n; i++) {
		list = launch_whole_list(tmpl[i], vars);
		for (j = 0; j < (list != NULL ? json_array_size(list) : 1);
		    j++) {
			if (len + 2 > cap) {
				cap = cap ? cap * 2 : 16;
				out = xreallocarray(out, cap, sizeof *out);
			}
			if (list == NULL) {
				out[len++] = adapter_template(tmpl[i], vars,
				    NULL);
				continue;
			}
			e = json_array_get(list, j);
			out[len++] = xstrdup(json_is_string(e) ?
			    json_string_value(e) : "");
		}
	}
	if (out == NULL)
		out = xcalloc(1, sizeof *out);
	out[len] = NULL;
	return out;
}

/* Does the template run corral host ({{cmd}}) on the far end? */
static int
launch_linked(const struct launch_conf *l)
{
	size_t	i;
	const char *p;

	for (i = 0; i < l->argc; i++) {
		for (p = l->argv[i]; (p = strstr(p, "{{")) != NULL; p += 2) {
			p += 2;
			while (*p == ' ')
				p++;
			if (strncmp(p, "cmd", 3) == 0 && strchr(" |}", p[3]) !=
			    NULL)
				return 1;
		}
	}
	return 0;
}

/*
 * Say once per launcher what a launcher without corral host on the far
 * end does not guarantee.
 */
static void
launch_warn_unlinked(const struct agent *a, const struct launch_conf *l)
{
	size_t	i;

	for (i = 0; i < launch_nwarned; i++)
		if (launch_warned[i] == l->argv)
			return;
	if (launch_nwarned < sizeof launch_warned / sizeof launch_warned[0])
		launch_warned[launch_nwarned++] = l->argv;
	log_warnx("agent %s: launch.argv has no {{cmd}}, so no corral host "
	    "runs on the far end: if corral dies, what the agent started there "
	    "is left to %s's own teardown (ssh: EOF on its stdin, SIGPIPE at "
	    "its next write; what it detached runs on), and a lost link is "
	    "seen only when %s exits (docs/scale-out.md)", a->id, l->argv[0],
	    l->argv[0]);
}

/* Forget what a process of the agent said: a new one starts afresh. */
static void
launch_reset(struct launch *ln)
{
	json_decref(ln->where);
	json_decref(ln->bye);
	free(ln->lost);
	free(ln->program);
	ln->where = ln->bye = NULL;
	ln->lost = ln->program = NULL;
	ln->flags &= LAUNCH_FAILED;
}

/*
 * The settings the launcher runs with here: the agent's, but those that
 * belong to the far end (directory, resource limits, confinement), which
 * corral host applies there.
 */
static void
launch_local_conf(struct agent_conf *lc, const struct agent_conf *ac)
{
	*lc = *ac;
	lc->conf_free = NULL;	/* a copy on the stack, for this spawn */
	lc->cwd = NULL;
	lc->limits = NULL;
	lc->nlimits = 0;
	memset(&lc->confine, 0, sizeof lc->confine);
	lc->confine_up = NULL;
	lc->nconfine_up = 0;
}

/* Record where the launcher went, in the log and the audit log. */
static void
launch_started(struct agent *a, const struct spawn_result *sr)
{
	struct launch	*ln = a->launch;
	char		 pid[24];

	snprintf(pid, sizeof pid, "%ld", (long)sr->hostpid);
	log_info("agent %s: launched with %s%s%s (pid %s)", a->id,
	    ln->program, ln->host != NULL ? " on " : "", ln->host != NULL ?
	    ln->host->name : "", pid);
	auditlog_event("launch", a->id, NULL, "launcher", ln->program,
	    "host", ln->host != NULL ? ln->host->name : NULL, "pid", pid,
	    NULL);
}

/*
 * Start an agent's process: its own command here, or its launcher with
 * the template expanded for the host chosen.  Returns 0, or -1 with sr
 * filled (no host usable is a failure that passes: EAGAIN).
 */
static int
launch_spawn(struct agent *a, char **argv, char *const *env,
    struct spawn_result *sr)
{
	const struct launch_conf	*l = &a->conf->launch;
	struct launch			*ln;
	struct agent_conf		 lc;
	json_t				*vars;
	char				**largv;
	size_t				 i;
	int				 none, rc;

	if (l->argc == 0)
		return agent_spawn(a, argv, env, sr);
	if ((ln = a->launch) == NULL) {
		ln = a->launch = xcalloc(1, sizeof *ln);
		ev_timer_init(&ln->link_w, launch_link_cb, 0, 0);
		ln->link_w.data = a;
	}
	launch_reset(ln);
	ln->host = launch_choose(ln, l, &none);
	if (none) {
		memset(sr, 0, sizeof *sr);
		sr->error = EAGAIN;
		snprintf(sr->what, sizeof sr->what, "launch: every host is out "
		    "after failing");
		return -1;
	}
	if (launch_linked(l))
		ln->flags |= LAUNCH_LINKED;
	else
		launch_warn_unlinked(a, l);
	vars = launch_vars(a, argv != NULL ? argv : a->conf->argv, env,
	    ln->host);
	largv = launch_expand(l->argv, l->argc, vars);
	json_decref(vars);
	launch_local_conf(&lc, a->conf);
	ln->program = xstrdup(largv[0]);
	rc = agent_spawn_as(a, &lc, largv, env, sr);
	for (i = 0; largv[i] != NULL; i++)
		free(largv[i]);
	free(largv);
	if (rc != 0) {
		if (ln->host != NULL)
			ln->host->probing = 0;
		return -1;
	}
	ln->flags |= LAUNCH_RUNNING;
	ln->flags &= ~LAUNCH_FAILED;
	if (ln->host != NULL) {
		ln->host->agents++;
		ln->host->placed = ++launch_seq;
	}
	ln->last_word = ln->last_check = ev_now(LOOP);
	ev_timer_set(&ln->link_w, l->alive, l->alive);
	ev_timer_start(LOOP, &ln->link_w);
	launch_started(a, sr);
	return 0;
}

/*
 * Is the agent ready only once its far end says hello?  Asked once a
 * process started, instead of making it ready at spawn.
 */
static int
launch_waits(struct agent *a)
{
	struct launch	*ln = a->launch;

	if (ln == NULL || !(ln->flags & LAUNCH_LINKED) || a->conf->launch.argc
	    == 0)
		return 0;
	if (ln->flags & LAUNCH_HELLO)
		return 0;
	ln->flags |= LAUNCH_GATED;
	return 1;
}

/* The host's name, as chosen, else as its hello said; NULL: unknown. */
static const char *
launch_name(const struct launch *ln)
{
	if (ln->host != NULL)
		return ln->host->name;
	if (ln->where != NULL)
		return json_string_value(json_object_get(ln->where, "host"));
	return NULL;
}

/* hello: the agent started there; ready now if it waited for this. */
static void
launch_hello(struct agent *a, const char *json, size_t len)
{
	struct launch	*ln = a->launch;
	const char	*name;
	char		*s;

	json_decref(ln->where);
	ln->where = json_loadb(json, len, CORRAL_JSON_LOAD, NULL);
	if (!json_is_object(ln->where)) {
		json_decref(ln->where);
		ln->where = json_object();
	}
	ln->flags |= LAUNCH_HELLO;
	if (ln->host != NULL)
		launch_host_ok(ln->host);
	name = launch_name(ln);
	log_info("agent %s: running on %s (pid %lld there%s)", a->id,
	    name != NULL ? name : "?", (long long)json_integer_value(
	    json_object_get(ln->where, "pid")), json_is_true(json_object_get(
	    ln->where, "pidns")) ? ", in its own pid namespace" : "");
	json_object_set_new(ln->where, "name", json_string(name != NULL ?
	    name : ""));
	if ((s = jsonw_dumps(ln->where, CORRAL_JSON_FLAGS)) != NULL) {
		auditlog_fields("host", a->id, NULL, s, strlen(s));
		free(s);
	}
	json_object_del(ln->where, "name");
	if (ln->flags & LAUNCH_GATED) {
		ln->flags &= ~LAUNCH_GATED;
		xasprintf(&s, "running on %s", name != NULL ? name : "?");
		lifecycle_ready(a, s);
		free(s);
	}
}

/*
 * A stderr line of a launched agent: a sign of life, and corral host's
 * own (hello, tick, bye) is read, not logged.
 */
static int
launch_errline(struct agent *a, const char *line, size_t len)
{
	struct launch	*ln = a->launch;

	if (ln == NULL || !(ln->flags & LAUNCH_LINKED))
		return 0;
	ln->last_word = ev_now(LOOP);
	if (len == 0 || line[0] != HOST_LINK_MARK)
		return 0;
	line++;
	len--;
	if (len > 6 && memcmp(line, "hello ", 6) == 0)
		launch_hello(a, line + 6, len - 6);
	else if (len > 4 && memcmp(line, "bye ", 4) == 0) {
		json_decref(ln->bye);
		ln->bye = json_loadb(line + 4, len - 4, CORRAL_JSON_LOAD, NULL);
		if (ln->bye != NULL)
			ln->flags |= LAUNCH_BYE;
	}
	return 1;
}

/*
 * Every launch.alive: a keepalive for the far end, and the link judged.
 * When corral itself did not run for a while (stopped, starved), or the
 * launcher was stopped (suspended), the silence it did not hear is no
 * sign of the host's.
 */
static void
launch_link_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct agent	*a = w->data;
	struct launch	*ln = a->launch;
	ev_tstamp	 now = ev_now(loop);
	double		 iv = a->conf->launch.alive;
	char		 why[256];
	const char	*name;

	/* Silence while corral, or the launcher, was stopped says nothing. */
	if (now - ln->last_check > 3 * iv || agent_sigstopped(a))
		ln->last_word = now;
	ln->last_check = now;
	if (!(ln->flags & LAUNCH_LINKED) || (ln->flags & LAUNCH_LOST))
		return;
	if (agent_writable(a) && !agent_full(a))
		agent_send_link(a, &(char){ HOST_LINK_MARK }, 1);
	if (!(ln->flags & LAUNCH_HELLO) || now - ln->last_word <
	    a->conf->launch.lost)
		return;
	name = launch_name(ln);
	snprintf(why, sizeof why, "host %s lost: no word on the link for "
	    "%.1fs", name != NULL ? name : "?", now - ln->last_word);
	ln->lost = xstrdup(why);
	ln->flags |= LAUNCH_LOST;
	log_warnx("agent %s: %s; ending its %s (pid %ld)", a->id, why,
	    ln->program, (long)agent_hostpid(a));
	auditlog_event("host_lost", a->id, NULL, "host", name, "reason", why,
	    NULL);
	/* The far end ends the agent when the link closes, or goes silent. */
	agent_signal(a, SIGKILL);
}

/* How corral host said the agent ended, into st. */
static void
launch_bye_status(const struct launch *ln, char *st, size_t len)
{
	json_t	*sig = json_object_get(ln->bye, "signal");

	if (json_is_string(sig))
		snprintf(st, len, "killed by signal %s%s", json_string_value(sig),
		    json_is_true(json_object_get(ln->bye, "core")) ?
		    " (core dumped)" : "");
	else
		snprintf(st, len, "exit status %lld", (long long)
		    json_integer_value(json_object_get(ln->bye, "code")));
}

/*
 * A launched agent's process ended (st: the launcher's status).  Say how
 * the agent ended, and where, and whether its host failed it: the link
 * lost, or closed before corral host could say the agent's end, or the
 * launcher gone before corral host answered.  A stop corral began is no
 * host's failure.
 */
static void
launch_exit(struct agent *a, char *st, size_t len)
{
	struct launch	*ln = a->launch;
	const char	*name;
	char		 was[256], tail[300];
	int		 failed = 0;

	if (ln == NULL || !(ln->flags & LAUNCH_RUNNING))
		return;
	ev_timer_stop(LOOP, &ln->link_w);
	ln->flags &= ~LAUNCH_RUNNING;
	if (ln->host != NULL)
		ln->host->agents--;
	ln->last = ln->host;
	name = launch_name(ln);
	snprintf(was, sizeof was, "%s", st);
	if (ln->flags & LAUNCH_LOST) {
		snprintf(st, len, "%s", ln->lost);
		failed = 1;
	} else if ((ln->flags & (LAUNCH_LINKED | LAUNCH_BYE)) ==
	    (LAUNCH_LINKED | LAUNCH_BYE)) {
		launch_bye_status(ln, tail, sizeof tail);
		snprintf(st, len, "%s on %s", tail, name != NULL ? name : "?");
	} else if ((ln->flags & LAUNCH_LINKED) && !lifecycle_stop_asked(a)) {
		failed = 1;
		if (ln->flags & LAUNCH_HELLO)
			snprintf(st, len, "host %s lost: the link closed before "
			    "the agent ended (%s %s)", name != NULL ? name :
			    "?", ln->program, was);
		else
			snprintf(st, len, "could not start on %s: %s ended (%s) "
			    "before corral host answered", name != NULL ? name :
			    "the launcher's choice", ln->program, was);
	} else if (name != NULL)
		snprintf(st, len, "%s on %s", was, name);
	if (failed)
		ln->flags |= LAUNCH_FAILED;
	else
		ln->flags &= ~LAUNCH_FAILED;
	if (failed && ln->host != NULL)
		launch_host_failed(ln->host, &a->conf->launch, st);
	else if (ln->host != NULL)
		ln->host->probing = 0;
}

/* The agent is freed: its part goes. */
static void
launch_forget(struct agent *a)
{
	struct launch	*ln = a->launch;

	if (ln == NULL)
		return;
	ev_timer_stop(LOOP, &ln->link_w);
	if ((ln->flags & LAUNCH_RUNNING) && ln->host != NULL)
		ln->host->agents--;
	launch_reset(ln);
	free(ln);
	a->launch = NULL;
}

/*
 * Where a launched agent runs, for MAP's metadata and corral ps: the
 * host, the launcher, the link's state, and what the far end reported
 * (its pid there, the pid namespace, Slurm's job and step, the
 * container).  NULL for an agent that runs here.
 */
json_t *
launch_metadata(const struct agent *a)
{
	const struct launch	*ln = a->launch;
	const char		*name, *link;
	json_t			*j, *w;

	if (ln == NULL || a->conf->launch.argc == 0)
		return NULL;
	name = launch_name(ln);
	if (!(ln->flags & LAUNCH_LINKED))
		link = "none";
	else if (ln->flags & LAUNCH_LOST)
		link = "lost";
	else if (ln->flags & LAUNCH_HELLO)
		link = "up";
	else
		link = "starting";
	j = json_pack("{s:s, s:s, s:s}", "name", name != NULL ? name : "",
	    "launcher", ln->program != NULL ? ln->program :
	    a->conf->launch.argv[0], "link", link);
	if ((w = ln->where) != NULL) {
		json_object_set(j, "node", json_object_get(w, "host"));
		json_object_set(j, "pid", json_object_get(w, "pid"));
		json_object_set(j, "pidns", json_object_get(w, "pidns"));
		if (json_object_get(w, "slurm_job") != NULL)
			json_object_set(j, "slurmJob", json_object_get(w,
			    "slurm_job"));
		if (json_object_get(w, "slurm_step") != NULL)
			json_object_set(j, "slurmStep", json_object_get(w,
			    "slurm_step"));
		if (json_object_get(w, "container") != NULL)
			json_object_set(j, "container", json_object_get(w,
			    "container"));
	}
	return j;
}
