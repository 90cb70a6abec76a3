/*
 * Containment: nothing corral starts may outlive it, even when corral is
 * killed with SIGKILL.
 *
 * The death signal covers only corral's direct children.  To cover every
 * descendant, including one that detached into its own session, corral
 * runs its supervisor as the init (pid 1) of a new pid namespace: when
 * pid 1 of a namespace dies, the kernel kills every process in it.
 *
 *   corral (the waiter, in the caller's namespace)
 *     `- corral (pid 1 of the new namespace: the supervisor)
 *          `- agents, their children, grandchildren ...
 *
 * The waiter only waits: it forwards SIGINT, SIGTERM, SIGHUP and SIGQUIT
 * that are sent to it (signals from the terminal reach both processes
 * already, so those are not forwarded twice), and exits with the
 * supervisor's status.  The supervisor has a death signal on the waiter,
 * so killing either kills the whole tree.
 *
 * Creating a pid namespace needs CAP_SYS_ADMIN, or an unprivileged user
 * namespace (allowed by default on Debian 12).  When neither works, corral
 * runs without one, as a child subreaper: orphaned descendants are
 * reparented to it and killed at shutdown, but a SIGKILL of corral then
 * leaves detached grandchildren running.  docs/reliability.md says so.
 * CORRAL_NO_PIDNS=1 chooses that mode on purpose.
 *
 * The namespace gets its own /proc, in a mount namespace of its own: with
 * the host's /proc, /proc/<pid> names another process than getpid() says,
 * and sandboxes inside agents (bubblewrap reads /proc/<pid>/ns) fail.  A
 * descriptor of the host's /proc is kept, so corral can still tell the
 * host pids that ps and kill outside see.
 */

#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "corral.h"

static int	pidns_hostproc = -1;
static int	pidns_on;	/* we are pid 1 of our own namespace */

/* Write a string to a /proc file; returns 0 on success. */
static int
pidns_write(const char *path, const char *s)
{
	ssize_t	n;
	int	fd;

	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* Enter a user namespace mapping only ourselves, then a pid namespace. */
static int
pidns_unshare_user(void)
{
	char	map[64];
	uid_t	uid = geteuid();
	gid_t	gid = getegid();

	if (unshare(CLONE_NEWUSER | CLONE_NEWPID) == -1)
		return -1;
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (pidns_write("/proc/self/uid_map", map) != 0)
		return -1;
	(void)pidns_write("/proc/self/setgroups", "deny");
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	if (pidns_write("/proc/self/gid_map", map) != 0)
		return -1;
	return 0;
}

/*
 * In the supervisor: a mount namespace of our own with a fresh /proc of
 * the new pid namespace.  Mounts are made slaves, not private: what the
 * host mounts later still shows inside, and our /proc never leaks out.
 * On failure /proc stays the host's, as it was before.
 */
static void
pidns_mount_proc(void)
{
	int	fd;

	if ((fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	if (unshare(CLONE_NEWNS) == -1) {
		log_info("no mount namespace (%s): /proc is the host's",
		    strerror(errno));
		close(fd);
		return;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) == -1 ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	    NULL) == -1) {
		log_info("cannot mount /proc for the pid namespace (%s): "
		    "/proc is the host's", strerror(errno));
		close(fd);
		return;
	}
	pidns_hostproc = fd;
}

/*
 * The host's /proc, when the namespace has its own (else -1): readlinkat
 * of "self" there gives a process's host pid.
 */
int
pidns_host_proc(void)
{
	return pidns_hostproc;
}

/* Whether corral runs as pid 1 of a pid namespace of its own. */
int
pidns_active(void)
{
	return pidns_on;
}

/*
 * A process's pid as /proc names it: the namespace's pid when /proc is
 * the namespace's own, else the host's (without a namespace both are
 * the same).
 */
pid_t
pidns_proc_pid(pid_t pid, pid_t hostpid)
{
	return pidns_hostproc != -1 ? pid : hostpid;
}

/* The waiter: forward signals, then exit as the supervisor did. */
static void __attribute__((noreturn))
pidns_wait(pid_t child, const sigset_t *set)
{
	siginfo_t	si;
	int		status, sig;

	for (;;) {
		if ((sig = sigwaitinfo(set, &si)) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (sig == SIGCHLD) {
			if (waitpid(child, &status, WNOHANG) != child)
				continue;
			if (WIFEXITED(status))
				_exit(WEXITSTATUS(status));
			if (WIFSIGNALED(status)) {
				/* Die the same way, so our parent sees it. */
				signal(WTERMSIG(status), SIG_DFL);
				sigprocmask(SIG_UNBLOCK, set, NULL);
				raise(WTERMSIG(status));
				_exit(128 + WTERMSIG(status));
			}
			continue;
		}
		/*
		 * The terminal sends its signals to the whole foreground
		 * group, which includes the supervisor: only forward what
		 * was sent to us alone.
		 */
		if (si.si_code == SI_KERNEL)
			continue;
		/* Its own signal, so the supervisor knows it from its copy. */
		(void)sigqueue(child, PIDNS_SIGNAL, (union sigval){
		    .sival_int = sig });
	}
	(void)kill(child, SIGKILL);
	(void)waitpid(child, &status, 0);
	_exit(70);
}

/*
 * Put the rest of corral into a new pid namespace as its init.  Returns
 * 1 in the supervisor (pid 1), 0 when running without a namespace; the
 * waiter never returns.
 */
int
pidns_enter(void)
{
	sigset_t	set, old;
	struct pollfd	pfd;
	int		alive[2];
	pid_t		child, waiter;
	const char	*e;

	e = getenv("CORRAL_NO_PIDNS");
	if (e != NULL && *e != '\0' && strcmp(e, "0") != 0)
		goto fallback;
	if (unshare(CLONE_NEWPID) == -1 && pidns_unshare_user() == -1) {
		log_info("no pid namespace (%s): detached grandchildren could "
		    "outlive a SIGKILL of corral", strerror(errno));
		goto fallback;
	}
	if (pipe2(alive, O_CLOEXEC) == -1)
		goto fallback;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &old);
	waiter = getpid();
	fflush(NULL);
	if ((child = fork()) == -1) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		close(alive[0]);
		close(alive[1]);
		log_warn("fork");
		goto fallback;
	}
	if (child > 0) {
		close(alive[0]);
		pidns_wait(child, &set);
	}

	/* The supervisor.  Die with the waiter; close the race first. */
	close(alive[1]);
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	pfd.fd = alive[0];
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLHUP | POLLIN)))
		_exit(70);	/* the waiter is already gone */
	close(alive[0]);
	(void)waiter;
	/* Forwards wait until the supervisor reads them (signalfd). */
	sigaddset(&old, PIDNS_SIGNAL);
	sigprocmask(SIG_SETMASK, &old, NULL);
	pidns_mount_proc();
	pidns_on = 1;
	return 1;

fallback:
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	return 0;
}

/* Collect the pids of our direct children from /proc. */
static size_t
pidns_children(pid_t *out, size_t max)
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
 * Without a pid namespace corral (and corral host) is a child subreaper:
 * descendants that detached from their agent were reparented to it.
 * Kill them, and any they leave behind, and reap them, so nothing
 * outlives corral's exit.
 */
void
pidns_sweep(void)
{
	pid_t		 kids[256];
	size_t		 n, i;
	int		 round, status;
	struct timespec	 ts = { 0, 20 * 1000 * 1000 };

	for (round = 0; round < 50; round++) {
		while (waitpid(-1, &status, WNOHANG) > 0)
			;
		if ((n = pidns_children(kids, 256)) == 0)
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
