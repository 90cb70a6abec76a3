/*
 * Starting agent processes.
 *
 * Everything that can allocate or fail slowly happens in the parent: the
 * executable is found, the environment (an allowlist plus the agent's own
 * variables) and argv are built, the user is looked up.  The child is
 * started with clone(CLONE_VM | CLONE_VFORK), as glibc's posix_spawn
 * does, so it runs on a small private stack in corral's memory until it
 * execs; it may only make system calls.  It reports a failure (and which
 * step failed) through that shared memory, so an exec error reaches the
 * log as "exec ./agent: No such file or directory" rather than as a
 * mysterious exit status 127.
 *
 * An unconfined child also shares corral's descriptor table
 * (CLONE_FILES), with its ends of the pipes on three low descriptors
 * corral holds for that, and its first step on descriptors is to take a
 * private table of only those below them: copying corral's whole table,
 * three descriptors per agent, and closing it again while corral waits
 * made starting N agents cost O(N^2).
 *
 * In the child, in order: every signal back to its default disposition
 * (a handler must never run on the borrowed stack), death signal SIGKILL
 * and a check that corral did not die before that was set, a new session,
 * its own descriptor table (unconfined), the three pipes on 0, 1 and 2,
 * for a confined agent a mount namespace
 * read-only but where it may write (confine_mount), the agent's Landlock
 * rulesets (made by confine.c in the parent; no-new-privileges first, as
 * Landlock wants), every other descriptor closed, the working directory,
 * resource limits, umask 077, the user, no-new-privileges, the signal
 * mask cleared, exec.
 */

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define SPAWN_VALGRIND()	RUNNING_ON_VALGRIND
#endif
#endif

#include "corral.h"

#define SPAWN_STACK	(64 * 1024)
/* Landlock stacks at most 16 layers on a process. */
#define SPAWN_LAYERS	15
#define SPAWN_GROUPS	256	/* supplementary groups of user: */
/* Writable paths of a confined agent's mount namespace, at most. */
#define SPAWN_ROOTS	64

#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self	446
#endif
#ifndef SYS_close_range
#define SYS_close_range		436
#endif
#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE	(1U << 1)
#endif

extern char **environ;

struct spawn_child {
	const char		*path;
	char *const		*argv;
	char *const		*envp;
	const char		*cwd;
	int			 in;	/* child's ends */
	int			 out;
	int			 err;
	int			 shared;	/* CLONE_FILES: unshare first */
	int			 low;		/* above the child's ends */
	pid_t			 parent;
	int			 pidns;
	int			 hostproc;	/* the host's /proc, or -1 */
	const struct rlimit_conf *limits;
	size_t			 nlimits;
	int			 set_core;
	uid_t			 uid;
	gid_t			 gid;
	const gid_t		*groups;
	int			 ngroups;
	int			 drop;
	const int		*rulesets;	/* Landlock, applied in order */
	int			 nrulesets;
	char *const		*roots;		/* writable: mounted read-write */
	size_t			 nroots;
	int			 mountns;	/* read-only but the roots */
	int			 rootfd[SPAWN_ROOTS];
	/* Written by the child. */
	volatile int		 error;
	volatile const char	*what;
	volatile pid_t		 hostpid;
};

static int			 spawn_pidns;
static const struct workflow	*spawn_wf;
static char			*spawn_control;	/* the control socket, or NULL */
static char			*spawn_python;	/* corral_agent.py's dir */
static char	spawn_stack[SPAWN_STACK] __attribute__((aligned(64)));
static const char spawn_unshare_step[] = "unshare(CLONE_FILES)";
/*
 * Three low descriptors held on /dev/null, where the child's ends of the
 * pipes go for a spawn, and the /dev/null they return to; spawn_slots is
 * 1 once they are made (at the first spawn), -1 if they are not to be had.
 */
static int	spawn_slot[3] = { -1, -1, -1 };
static int	spawn_null = -1;
static int	spawn_slots;

/*
 * corral's own variables that pass the allowlist (for spawn_base_wf), as
 * NAME=value.  corral never changes its environment while it runs, so
 * they are picked once, not for each of thousands of agents.
 */
static char			**spawn_base;
static size_t			  spawn_nbase;
static const struct workflow	 *spawn_base_wf;
static int			  spawn_base_made;

static void	spawn_find_python(void);

/*
 * Set the workflow processes are started for (its directory, agent path
 * and environment policy), and whether corral runs as the init of its
 * own pid namespace.
 */
void
spawn_init(const struct workflow *wf, int pidns)
{
	spawn_wf = wf;
	spawn_base_made = 0;
	spawn_pidns = pidns;
	spawn_set_control(NULL);
	spawn_find_python();
}

/*
 * Find the directory of the corral_agent Python module corral was built
 * with, to put on its agents' PYTHONPATH: share/corral/python beside the
 * binary (a build tree), or ../share/corral/python (an installed one).
 */
static void
spawn_find_python(void)
{
	static const char *const where[] = { "share/corral/python",
	    "../share/corral/python" };
	char	exe[PATH_MAX], file[PATH_MAX + 64], *slash;
	ssize_t	n;
	size_t	i;

	free(spawn_python);
	spawn_python = NULL;
	if ((n = readlink("/proc/self/exe", exe, sizeof exe - 1)) <= 0)
		return;
	exe[n] = '\0';
	if ((slash = strrchr(exe, '/')) == NULL)
		return;
	*slash = '\0';
	for (i = 0; i < sizeof where / sizeof where[0]; i++) {
		snprintf(file, sizeof file, "%s/%s/corral_agent.py", exe,
		    where[i]);
		if (access(file, R_OK) != 0)
			continue;
		*strrchr(file, '/') = '\0';
		spawn_python = realpath(file, NULL);
		log_debug("the Python agents' module is in %s", spawn_python);
		return;
	}
}

/* Block every signal, saving the old mask. */
void
spawn_block_signals(sigset_t *old)
{
	sigset_t	all;

	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, old);
}

/* Restore a saved signal mask. */
void
spawn_restore_signals(const sigset_t *old)
{
	sigprocmask(SIG_SETMASK, old, NULL);
}

/* Report a failed step from the child and exit. */
static void __attribute__((noreturn))
spawn_child_fail(struct spawn_child *sc, const char *what)
{
	sc->error = errno;
	sc->what = what;
	_exit(127);
}

/* Put fd on target in the child, clearing close-on-exec. */
static int
spawn_child_dup(int fd, int target)
{
	if (fd == target)
		return fcntl(fd, F_SETFD, 0);
	return dup2(fd, target) == -1 ? -1 : 0;
}

/*
 * The child between clone and exec.  It shares corral's memory, so it is
 * not instrumented by the sanitizers and calls only system calls.
 */
__attribute__((no_sanitize("address", "undefined")))
static int
spawn_child_main(void *arg)
{
	struct spawn_child	*sc = arg;
	struct sigaction	 sa = { .sa_flags = 0 };
	struct rlimit		 rl;
	sigset_t		 none;
	const char		*step;
	char			 self[32];
	ssize_t			 n;
	int			 sig, i;
	pid_t			 hp = 0;

	sa.sa_handler = SIG_DFL;
	for (sig = 1; sig < NSIG; sig++)
		(void)sigaction(sig, &sa, NULL);

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1)
		spawn_child_fail(sc, "prctl(PR_SET_PDEATHSIG)");
	if (getppid() != sc->parent) {
		errno = ESRCH;
		spawn_child_fail(sc, "corral died during the spawn");
	}
	if (setsid() == -1)
		spawn_child_fail(sc, "setsid");
	if (sc->pidns) {
		/* The host's /proc names our host pid as "self". */
		if (sc->hostproc != -1)
			n = readlinkat(sc->hostproc, "self", self,
			    sizeof self - 1);
		else
			n = readlink("/proc/self", self, sizeof self - 1);
		if (n > 0) {
			for (i = 0; i < n && self[i] >= '0' && self[i] <= '9'; i++)
				hp = hp * 10 + (self[i] - '0');
		}
		sc->hostpid = hp;
	}

	/*
	 * Sharing corral's descriptor table, make a private one that holds
	 * only the descriptors below the child's ends: a few, however many
	 * agents corral runs, where a copy of the whole table (and closing
	 * it again before exec, while corral waits) grows with them.
	 */
	if (sc->shared && syscall(SYS_close_range, (unsigned int)sc->low, ~0U,
	    CLOSE_RANGE_UNSHARE) == -1 && unshare(CLONE_FILES) == -1)
		spawn_child_fail(sc, spawn_unshare_step);
	if (spawn_child_dup(sc->in, 0) == -1 ||
	    spawn_child_dup(sc->out, 1) == -1 ||
	    spawn_child_dup(sc->err, 2) == -1)
		spawn_child_fail(sc, "dup2");
	if (sc->mountns && confine_mount(sc->roots, sc->nroots, sc->rootfd,
	    &step) == -1)
		spawn_child_fail(sc, step);
	if (sc->nrulesets > 0 &&
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		spawn_child_fail(sc, "prctl(PR_SET_NO_NEW_PRIVS)");
	for (i = 0; i < sc->nrulesets; i++)
		if (syscall(SYS_landlock_restrict_self, sc->rulesets[i], 0) == -1)
			spawn_child_fail(sc, "landlock_restrict_self");
	closefrom(3);

	if (sc->cwd != NULL && chdir(sc->cwd) == -1)
		spawn_child_fail(sc, "chdir");
	if (sc->set_core) {
		rl.rlim_cur = rl.rlim_max = 0;
		(void)setrlimit(RLIMIT_CORE, &rl);
	}
	for (i = 0; i < (int)sc->nlimits; i++) {
		if (sc->limits[i].value < 0)
			continue;
		rl.rlim_cur = rl.rlim_max = (rlim_t)sc->limits[i].value;
		if (setrlimit(sc->limits[i].resource, &rl) == -1)
			spawn_child_fail(sc, "setrlimit");
	}
	umask(077);
	if (sc->drop) {
		if (setgroups((size_t)sc->ngroups, sc->groups) == -1)
			spawn_child_fail(sc, "setgroups");
		if (setresgid(sc->gid, sc->gid, sc->gid) == -1)
			spawn_child_fail(sc, "setresgid");
		if (setresuid(sc->uid, sc->uid, sc->uid) == -1)
			spawn_child_fail(sc, "setresuid");
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		spawn_child_fail(sc, "prctl(PR_SET_NO_NEW_PRIVS)");

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(sc->path, sc->argv, sc->envp);
	spawn_child_fail(sc, "exec");
}

/*
 * Whether corral runs under valgrind, which turns a CLONE_VM clone into a
 * fork and stops at one that also shares the descriptor table.  Without
 * its header, by the preload it puts in every process it runs.
 */
static int
spawn_valgrind(void)
{
	const char	*p = getenv("LD_PRELOAD");

#ifdef SPAWN_VALGRIND
	if (SPAWN_VALGRIND())
		return 1;
#endif
	return p != NULL && strstr(p, "/vgpreload_") != NULL;
}

/* Hold three low descriptors on /dev/null for the child's ends, once. */
static int
spawn_slots_init(void)
{
	int	i;

	if (spawn_slots != 0)
		return spawn_slots > 0 ? 0 : -1;
	if (spawn_valgrind()) {
		spawn_slots = -1;
		return -1;
	}
	/*
	 * A seccomp profile may refuse close_range (some container
	 * runtimes do): then every spawn copies the table, as without it.
	 * This closes nothing (no descriptor is that high).
	 */
	if (syscall(SYS_close_range, ~0U, ~0U, 0) == -1) {
		log_debug("spawn: close_range: %s; every spawn copies the "
		    "descriptor table", strerror(errno));
		spawn_slots = -1;
		return -1;
	}
	spawn_slots = 1;
	if ((spawn_null = open("/dev/null", O_RDONLY | O_CLOEXEC)) != -1) {
		for (i = 0; i < 3; i++)
			if ((spawn_slot[i] = fcntl(spawn_null, F_DUPFD_CLOEXEC,
			    3)) == -1)
				break;
		if (i == 3)
			return 0;
	}
	log_warn("spawn: no low descriptors for the agents' pipes, every "
	    "spawn copies the descriptor table");
	for (i = 0; i < 3; i++)
		if (spawn_slot[i] >= 0)
			close(spawn_slot[i]);
	if (spawn_null != -1)
		close(spawn_null);
	spawn_slots = -1;
	return -1;
}

/* Put a slot back on /dev/null, which closes the child's end there. */
static void
spawn_slot_free(int i)
{
	if (dup3(spawn_null, spawn_slot[i], O_CLOEXEC) == -1) {
		/* Never seen; the end must not stay open in corral. */
		log_warn("spawn: dup3");
		close(spawn_slot[i]);
		spawn_slots = -1;
	}
}

/*
 * Move the child's ends of its pipes to the low slots, so that it can
 * share corral's descriptor table and keep only those below them.
 * Returns 0, or -1 (the child then copies the whole table, as before).
 */
static int
spawn_slots_take(struct spawn_child *sc)
{
	int	*end[3] = { &sc->in, &sc->out, &sc->err };
	int	 i, j;

	if (spawn_slots_init() == -1)
		return -1;
	for (i = 0; i < 3; i++) {
		if (dup3(*end[i], spawn_slot[i], O_CLOEXEC) == -1) {
			for (j = 0; j < i; j++)
				spawn_slot_free(j);
			return -1;
		}
	}
	sc->low = 0;
	for (i = 0; i < 3; i++) {
		*end[i] = spawn_slot[i];
		if (spawn_slot[i] >= sc->low)
			sc->low = spawn_slot[i] + 1;
	}
	sc->shared = 1;
	return 0;
}

/* Match a variable name against a pattern; a trailing '*' is a prefix. */
static int
spawn_env_match(const char *pat, const char *var, size_t len)
{
	size_t	pl = strlen(pat);

	if (pl > 0 && pat[pl - 1] == '*')
		return len >= pl - 1 && memcmp(var, pat, pl - 1) == 0;
	return pl == len && memcmp(var, pat, len) == 0;
}

/* Return nonzero if a variable passes the environment allowlist. */
static int
spawn_env_allowed(const struct workflow *wf, const char *var, size_t len)
{
	static const char *const base[] = { "PATH", "HOME", "USER", "LOGNAME",
	    "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR", "SHELL", "LC_*", NULL };
	size_t	i;

	for (i = 0; base[i] != NULL; i++)
		if (spawn_env_match(base[i], var, len))
			return 1;
	for (i = 0; wf != NULL && i < wf->nenv_allow; i++)
		if (spawn_env_match(wf->env_allow[i], var, len))
			return 1;
	return 0;
}

/* Add or replace NAME=value in an environment under construction. */
static void
spawn_env_set(char ***envp, size_t *n, size_t *cap, const char *key,
    const char *value)
{
	size_t	i, kl = strlen(key), vl = strlen(value);
	char	*s;

	s = xmalloc(kl + vl + 2);
	memcpy(s, key, kl);
	s[kl] = '=';
	memcpy(s + kl + 1, value, vl + 1);
	for (i = 0; i < *n; i++) {
		if (strncmp((*envp)[i], key, kl) == 0 && (*envp)[i][kl] == '=') {
			free((*envp)[i]);
			(*envp)[i] = s;
			return;
		}
	}
	if (*n + 2 > *cap) {
		*cap = *cap ? *cap * 2 : 32;
		*envp = xreallocarray(*envp, *cap, sizeof **envp);
	}
	(*envp)[(*n)++] = s;
	(*envp)[*n] = NULL;
}

/*
 * The control socket agents may reach, or NULL (--no-control): with its
 * path and the agent's credential in its environment an agent's process
 * can act as the agent on the socket (corral mcp).
 */
void
spawn_set_control(const char *path)
{
	free(spawn_control);
	spawn_control = path != NULL ? xstrdup(path) : NULL;
}

/* The value of key in an environment under construction, or NULL. */
static const char *
spawn_env_get(char **envp, size_t n, const char *key)
{
	size_t	i, kl = strlen(key);

	for (i = 0; i < n; i++)
		if (strncmp(envp[i], key, kl) == 0 && envp[i][kl] == '=')
			return envp[i] + kl + 1;
	return NULL;
}

/* Pick the variables of corral's environment that pass wf's allowlist. */
static void
spawn_base_make(const struct workflow *wf)
{
	char	**e, *eq, **p;
	size_t	  cap = 0;

	for (p = spawn_base; p != NULL && *p != NULL; p++)
		free(*p);
	free(spawn_base);
	spawn_base = NULL;
	spawn_nbase = 0;
	for (e = environ; e != NULL && *e != NULL; e++) {
		if ((eq = strchr(*e, '=')) == NULL)
			continue;
		if (!spawn_env_allowed(wf, *e, (size_t)(eq - *e)))
			continue;
		*eq = '\0';
		spawn_env_set(&spawn_base, &spawn_nbase, &cap, *e, eq + 1);
		*eq = '=';
	}
	spawn_base_wf = wf;
	spawn_base_made = 1;
}

/*
 * Build the agent's environment: allowlist, then its own, then ours, then
 * what its adapter adds for one kind of process (extra, NAME=value).
 * corral's Python module goes last on PYTHONPATH, so that an agent's own
 * copy, earlier on it, wins.
 */
static char **
spawn_build_env(const struct agent_conf *ac, const struct workflow *wf,
    const char *id, const char *token, char *const *extra)
{
	char		**envp, *eq, buf[32], *pp;
	const char	 *v;
	size_t		  n, cap, i;

	if (!spawn_base_made || spawn_base_wf != wf)
		spawn_base_make(wf);
	cap = spawn_nbase + 32;
	envp = xreallocarray(NULL, cap, sizeof *envp);
	for (n = 0; n < spawn_nbase; n++)
		envp[n] = xstrdup(spawn_base[n]);
	envp[n] = NULL;
	for (i = 0; i < ac->nenv; i++)
		spawn_env_set(&envp, &n, &cap, ac->env[i].key, ac->env[i].value);
	if (spawn_python != NULL) {
		if ((v = spawn_env_get(envp, n, "PYTHONPATH")) != NULL &&
		    *v != '\0') {
			xasprintf(&pp, "%s:%s", v, spawn_python);
			spawn_env_set(&envp, &n, &cap, "PYTHONPATH", pp);
			free(pp);
		} else
			spawn_env_set(&envp, &n, &cap, "PYTHONPATH",
			    spawn_python);
	}
	spawn_env_set(&envp, &n, &cap, "CORRAL_AGENT_ID", id);
	spawn_env_set(&envp, &n, &cap, "CORRAL_AGENT_NAME", ac->name);
	spawn_env_set(&envp, &n, &cap, "CORRAL_RUN_ID", protocol_run_id());
	snprintf(buf, sizeof buf, "%d", CORRAL_PROTOCOL_VERSION);
	spawn_env_set(&envp, &n, &cap, "CORRAL_PROTOCOL", buf);
	if (protocol_intent_count() > INTENT_COUNT) {
		/* The workflow's own intents, for agents that check theirs. */
		char	list[INTENT_MAX * (INTENT_NAME_MAX + 2)] = "";

		for (i = INTENT_COUNT; i < protocol_intent_count(); i++) {
			if (i > INTENT_COUNT)
				strlcat(list, ",", sizeof list);
			strlcat(list, protocol_intent_name((int)i),
			    sizeof list);
		}
		spawn_env_set(&envp, &n, &cap, "CORRAL_INTENTS", list);
	}
	if (workspace_dir() != NULL)
		spawn_env_set(&envp, &n, &cap, "CORRAL_WORKSPACE",
		    workspace_dir());
	if (spawn_control != NULL && token != NULL) {
		spawn_env_set(&envp, &n, &cap, "CORRAL_CONTROL", spawn_control);
		spawn_env_set(&envp, &n, &cap, "CORRAL_AGENT_TOKEN", token);
	}
	for (; extra != NULL && *extra != NULL; extra++) {
		if ((eq = strchr(*extra, '=')) == NULL)
			continue;
		*eq = '\0';
		spawn_env_set(&envp, &n, &cap, *extra, eq + 1);
		*eq = '=';
	}
	return envp;
}

/* Free a NULL-terminated array of strings. */
static void
spawn_free_strv(char **v)
{
	char	**p;

	if (v == NULL)
		return;
	for (p = v; *p != NULL; p++)
		free(*p);
	free(v);
}

/* Set HOME, USER and LOGNAME for an agent run as another user. */
static void
spawn_env_user(char ***envp, const struct agent_conf *ac,
    const struct passwd *pw)
{
	static const char *const keys[] = { "HOME", "USER", "LOGNAME" };
	const char	*vals[3] = { pw->pw_dir, pw->pw_name, pw->pw_name };
	size_t		 n, cap, i, j;

	for (n = 0; (*envp)[n] != NULL; n++)
		;
	cap = n + 1;
	for (i = 0; i < 3; i++) {
		for (j = 0; j < ac->nenv; j++)
			if (strcmp(ac->env[j].key, keys[i]) == 0)
				break;
		if (j == ac->nenv)
			spawn_env_set(envp, &n, &cap, keys[i], vals[i]);
	}
}

/* Return the value of PATH in an environment array, or NULL. */
static const char *
spawn_env_path(char **envp)
{
	for (; *envp != NULL; envp++)
		if (strncmp(*envp, "PATH=", 5) == 0)
			return *envp + 5;
	return NULL;
}

/*
 * Return an allocated absolute path to an executable regular file, or
 * NULL.  Absolute, because the agent may chdir before it execs.
 */
static char *
spawn_try(const char *dir, size_t dirlen, const char *wfdir, const char *cmd,
    int *saved)
{
	struct stat	 st;
	char		*try, *cwd = NULL;

	if (dirlen > 0 && dir[0] == '/')
		xasprintf(&try, "%.*s/%s", (int)dirlen, dir, cmd);
	else if (wfdir != NULL)
		xasprintf(&try, "%s/%.*s/%s", wfdir, (int)dirlen, dir, cmd);
	else {
		if ((cwd = getcwd(NULL, 0)) == NULL)
			return NULL;
		xasprintf(&try, "%s/%.*s/%s", cwd, (int)dirlen, dir, cmd);
		free(cwd);
	}
	if (access(try, X_OK) == 0) {
		if (stat(try, &st) == 0 && S_ISREG(st.st_mode))
			return try;
		*saved = EACCES;
	} else if (errno == EACCES) {
		/*
		 * A file there we may not run is "Permission denied"; a
		 * directory we may not search (another user's, in an
		 * inherited PATH) holds nothing for us, as for a shell.
		 */
		if (lstat(try, &st) == 0)
			*saved = EACCES;
	} else if (errno != ENOENT && errno != ENOTDIR)
		*saved = errno;
	free(try);
	return NULL;
}

/* Search a colon-separated list of directories for cmd. */
static char *
spawn_search(const char *list, const char *wfdir, const char *cmd, int *saved)
{
	const char	*p, *colon;
	char		*found;
	size_t		 len;

	for (p = list;; p = colon + 1) {
		colon = strchr(p, ':');
		len = colon != NULL ? (size_t)(colon - p) : strlen(p);
		if ((found = spawn_try(p, len, wfdir, cmd, saved)) != NULL)
			return found;
		if (colon == NULL)
			return NULL;
	}
}

/*
 * Find the executable for argv[0]: absolute paths as they are, paths with
 * a slash against the workflow's directory, bare names in
 * $CORRAL_AGENT_PATH, then the workflow's path: (relative to its
 * directory), then the agent's PATH.  Returns an allocated path, or NULL
 * with errno set.
 */
char *
spawn_find(const char *cmd, const struct workflow *wf, const char *path)
{
	const char	*dir = wf != NULL ? wf->dir : NULL, *ep;
	char		*try;
	size_t		 i;
	int		 saved = ENOENT;

	if (cmd[0] == '/')
		return xstrdup(cmd);
	if (strchr(cmd, '/') != NULL) {
		if (dir == NULL)
			return xstrdup(cmd);
		xasprintf(&try, "%s/%s", dir, cmd);
		return try;
	}
	if ((ep = getenv("CORRAL_AGENT_PATH")) != NULL && *ep != '\0' &&
	    (try = spawn_search(ep, NULL, cmd, &saved)) != NULL)
		return try;
	for (i = 0; wf != NULL && i < wf->npath; i++)
		if ((try = spawn_try(wf->agent_path[i], strlen(wf->agent_path[i]), dir, cmd,
		    &saved)) != NULL)
			return try;
	if (path == NULL)
		path = "/usr/local/bin:/usr/bin:/bin";
	if ((try = spawn_search(path, NULL, cmd, &saved)) != NULL)
		return try;
	errno = saved;
	return NULL;
}

/* Create a pipe with both ends close-on-exec. */
static int
spawn_pipe(int fds[2])
{
	return pipe2(fds, O_CLOEXEC);
}

/* Look a variable up in an environment under construction. */
static const char *
spawn_var_env(const void *arg, const char *name)
{
	char *const	*e;
	size_t		 n = strlen(name);

	for (e = arg; *e != NULL; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

/*
 * Look a variable up as a parent's environment had it: its env:, else
 * ours when the allowlist passed it on.
 */
static const char *
spawn_var_layer(const void *arg, const char *name)
{
	const struct confine_layer	*l = arg;
	size_t				 i;

	for (i = 0; i < l->nenv; i++)
		if (strcmp(l->env[i].key, name) == 0)
			return l->env[i].value;
	if (spawn_env_allowed(spawn_wf, name, strlen(name)))
		return getenv(name);
	return NULL;
}

/* A cwd: as written, made absolute; allocated. */
static char *
spawn_abs_cwd(const char *cwd)
{
	char	*s;

	if (cwd == NULL)
		return getcwd(NULL, 0);
	if (cwd[0] == '/' || spawn_wf == NULL)
		return xstrdup(cwd);
	xasprintf(&s, "%s/%s", spawn_wf->dir, cwd);
	return s;
}

/*
 * Make an agent's Landlock rulesets: its own confine:, then those of the
 * parents it inherits (Landlock intersects them).  Returns 0 with their
 * descriptors in rs, or -1 with sr filled.
 */
static int
spawn_confine(const struct agent_conf *ac, char **envp, const char *path,
    int *rs, int *nrs, struct confine_roots *roots, struct spawn_result *sr)
{
	const struct confine_layer	*l;
	const struct confine		*c;
	struct confine_where		 w;
	struct confine_roots		 lr;
	const char			*lcwd;
	char				*cwd;
	size_t				 i;
	int				 fd;

	*nrs = 0;
	for (i = 0; i <= ac->nconfine_up; i++) {
		memset(&w, 0, sizeof w);
		if (i == 0) {
			if (!(ac->confine.flags & CONFINE_ON))
				continue;
			c = &ac->confine;
			lcwd = ac->cwd;
			w.var = spawn_var_env;
			w.arg = envp;
		} else {
			l = &ac->confine_up[i - 1];
			c = &l->c;
			lcwd = l->cwd;
			w.var = spawn_var_layer;
			w.arg = l;
		}
		if (*nrs == SPAWN_LAYERS) {
			sr->error = E2BIG;
			snprintf(sr->what, sizeof sr->what, "confine: more "
			    "than %d layers", SPAWN_LAYERS);
			goto fail;
		}
		if ((cwd = spawn_abs_cwd(lcwd)) == NULL) {
			sr->error = errno;
			snprintf(sr->what, sizeof sr->what, "confine: getcwd");
			goto fail;
		}
		w.dir = spawn_wf != NULL ? spawn_wf->dir : NULL;
		w.cwd = cwd;
		w.workspace = workspace_dir();
		w.exe = path;
		memset(&lr, 0, sizeof lr);
		fd = confine_ruleset(c, &w, &lr, sr->what, sizeof sr->what);
		sr->error = errno;
		free(cwd);
		if (fd == -1) {
			confine_roots_free(&lr);
			goto fail;
		}
		if (fd >= 0) {
			/* Writable where every layer allows it. */
			if (*nrs == 0) {
				*roots = lr;
				lr.v = NULL;
				lr.n = 0;
			} else
				confine_roots_meet(roots, &lr);
			rs[(*nrs)++] = fd;
		}
		confine_roots_free(&lr);
	}
	sr->error = 0;
	return 0;

fail:
	while (*nrs > 0)
		close(rs[--(*nrs)]);
	confine_roots_free(roots);
	return -1;
}

/*
 * Tell the child of a confined agent to make its mount namespace, where
 * the system allows, unless the agent may write everywhere anyway.
 * Returns 0, or -1 with sr filled.
 */
static int
spawn_mountns(struct spawn_child *sc, const struct confine_roots *roots,
    char **cwd, struct spawn_result *sr)
{
	size_t	i;

	if (!confine_mountns())
		return 0;
	for (i = 0; i < roots->n; i++)
		if (strcmp(roots->v[i], "/") == 0)
			return 0;
	if (roots->n > SPAWN_ROOTS) {
		sr->error = E2BIG;
		snprintf(sr->what, sizeof sr->what, "confine: more than %d "
		    "writable paths", SPAWN_ROOTS);
		return -1;
	}
	/* Its cwd is in the new mounts only once it goes there. */
	if (*cwd == NULL && (*cwd = getcwd(NULL, 0)) == NULL) {
		sr->error = errno;
		snprintf(sr->what, sizeof sr->what, "getcwd");
		return -1;
	}
	sc->mountns = 1;
	sc->roots = roots->v;
	sc->nroots = roots->n;
	return 0;
}

/*
 * The user: an agent runs as (user:): its ids and groups for the child
 * (dropped to only when corral is root), and its own HOME and names in
 * envp unless env: says otherwise.  groups has room for SPAWN_GROUPS.
 * Returns 0, or -1 with sr's error and step.
 */
static int
spawn_user(const struct agent_conf *ac, struct spawn_child *sc, gid_t *groups,
    char ***envp, struct spawn_result *sr)
{
	struct passwd	*pw;
	int		 ngroups = SPAWN_GROUPS;

	if ((pw = getpwnam(ac->user)) == NULL) {
		sr->error = ENOENT;
		snprintf(sr->what, sizeof sr->what, "user %s", ac->user);
		return -1;
	}
	if (getuid() != 0 && pw->pw_uid != getuid()) {
		sr->error = EPERM;
		snprintf(sr->what, sizeof sr->what, "user %s (corral is not "
		    "root)", ac->user);
		return -1;
	}
	if (getgrouplist(ac->user, pw->pw_gid, groups, &ngroups) == -1)
		ngroups = 0;
	sc->drop = (getuid() == 0);
	spawn_env_user(envp, ac, pw);
	sc->uid = pw->pw_uid;
	sc->gid = pw->pw_gid;
	sc->groups = groups;
	sc->ngroups = ngroups;
	return 0;
}

/*
 * Clone the child and wait for its exec (or its failure); an unconfined
 * one shares the descriptor table (a confined one needs its rulesets'
 * descriptors after the pipes are in place: a full copy).
 */
static pid_t
spawn_clone(struct spawn_child *sc)
{
	sigset_t	old;
	pid_t		pid;
	int		i, saved, ends[3] = { sc->in, sc->out, sc->err };

again:
	if (sc->nrulesets == 0 && !sc->mountns)
		(void)spawn_slots_take(sc);
	spawn_block_signals(&old);
	pid = clone(spawn_child_main, spawn_stack + sizeof spawn_stack,
	    CLONE_VM | CLONE_VFORK | SIGCHLD | (sc->shared ? CLONE_FILES : 0),
	    sc);
	saved = errno;
	spawn_restore_signals(&old);
	for (i = 0; sc->shared && i < 3; i++)
		spawn_slot_free(i);
	if (pid != -1 && sc->shared && sc->error != 0 &&
	    sc->what == spawn_unshare_step) {
		/*
		 * The child could not take a table of its own (refused by a
		 * seccomp profile?): it has exited, and libev reaps it.  Copy
		 * the table from now on, and start this one so.
		 */
		log_warn("spawn: %s: %s; every spawn copies the descriptor "
		    "table", spawn_unshare_step, strerror(sc->error));
		spawn_slots = -1;
		sc->shared = 0;
		sc->error = 0;
		sc->what = NULL;
		sc->in = ends[0];
		sc->out = ends[1];
		sc->err = ends[2];
		goto again;
	}
	errno = saved;
	return pid;
}

/*
 * Start a process for an agent's settings (environment, directory, limits,
 * user) running argv, with its three pipes, its credential (token, or
 * NULL) and extra variables.  On success fills sr (our ends
 * are non-blocking and close-on-exec) and returns 0.  On failure returns -1
 * with sr->error and sr->what describing the failed step.
 */
int
spawn_argv(const struct agent_conf *ac, char *const *argv, const char *id,
    const char *token, char *const *extra, struct spawn_result *sr)
{
	const struct workflow	*wf = spawn_wf;
	struct spawn_child	 sc;
	gid_t			 groups[SPAWN_GROUPS];
	int			 in[2] = { -1, -1 }, out[2] = { -1, -1 };
	int			 err[2] = { -1, -1 };
	char			**envp, *path = NULL, *cwd = NULL;
	struct confine_roots	 roots = { NULL, 0 };
	int			 rs[SPAWN_LAYERS], nrs = 0;
	pid_t			 pid;
	size_t			 i;

	memset(sr, 0, sizeof *sr);
	sr->in = sr->out = sr->err = -1;
	memset(&sc, 0, sizeof sc);

	envp = spawn_build_env(ac, wf, id, token, extra);
	if ((path = spawn_find(argv[0], wf, spawn_env_path(envp))) == NULL) {
		sr->error = errno;
		snprintf(sr->what, sizeof sr->what, "exec %s", argv[0]);
		spawn_free_strv(envp);
		return -1;
	}
	if (ac->cwd != NULL) {
		if (ac->cwd[0] == '/' || wf == NULL)
			cwd = xstrdup(ac->cwd);
		else
			xasprintf(&cwd, "%s/%s", wf->dir, ac->cwd);
	}
	if (ac->user != NULL && spawn_user(ac, &sc, groups, &envp, sr) != 0)
		goto fail;
	if (spawn_confine(ac, envp, path, rs, &nrs, &roots, sr) != 0)
		goto fail;
	if (nrs > 0 && spawn_mountns(&sc, &roots, &cwd, sr) != 0)
		goto fail;
	if (spawn_pipe(in) == -1 || spawn_pipe(out) == -1 ||
	    spawn_pipe(err) == -1) {
		sr->error = errno;
		snprintf(sr->what, sizeof sr->what, "pipe");
		goto fail;
	}

	sc.path = path;
	sc.argv = argv;
	sc.envp = envp;
	sc.cwd = cwd;
	sc.in = in[0];
	sc.out = out[1];
	sc.err = err[1];
	sc.parent = getpid();
	sc.pidns = spawn_pidns;
	sc.hostproc = pidns_host_proc();
	sc.limits = ac->limits;
	sc.nlimits = ac->nlimits;
	sc.rulesets = rs;
	sc.nrulesets = nrs;
	sc.set_core = 1;
	for (i = 0; i < ac->nlimits; i++)
		if (ac->limits[i].resource == RLIMIT_CORE)
			sc.set_core = 0;

	pid = spawn_clone(&sc);
	while (nrs > 0)
		close(rs[--nrs]);
	if (pid == -1) {
		sr->error = errno;
		snprintf(sr->what, sizeof sr->what, "clone");
		goto fail;
	}
	if (sc.error != 0) {
		/* The child has exited; libev reaps it. */
		sr->error = sc.error;
		if (strcmp((const char *)sc.what, "exec") == 0)
			snprintf(sr->what, sizeof sr->what, "exec %s",
			    argv[0]);
		else
			snprintf(sr->what, sizeof sr->what, "%s",
			    (const char *)sc.what);
		(void)waitpid(pid, NULL, WNOHANG);
		goto fail;
	}

	close(in[0]);
	close(out[1]);
	close(err[1]);
	util_set_nonblock(in[1], 1);
	util_set_nonblock(out[0], 1);
	util_set_nonblock(err[0], 1);
	sr->pid = pid;
	sr->hostpid = sc.hostpid != 0 ? sc.hostpid : pid;
	sr->in = in[1];
	sr->out = out[0];
	sr->err = err[0];
	free(path);
	free(cwd);
	confine_roots_free(&roots);
	spawn_free_strv(envp);
	return 0;

fail:
	while (nrs > 0)
		close(rs[--nrs]);
	for (i = 0; i < 2; i++) {
		if (in[i] != -1)
			close(in[i]);
		if (out[i] != -1)
			close(out[i]);
		if (err[i] != -1)
			close(err[i]);
	}
	free(path);
	free(cwd);
	confine_roots_free(&roots);
	spawn_free_strv(envp);
	return -1;
}
