/*
 * Lineage: where a connection to the control socket comes from.  A
 * client is someone outside corral; a process inside it descends from an
 * agent's process, and may act on the socket only as that agent
 * (control.c).
 *
 * Inside or outside.  In corral's pid namespace the kernel says it: a
 * peer outside the namespace has no pid in it (SO_PEERCRED's pid is 0),
 * and nothing started inside can leave it.  Without a namespace (the
 * subreaper fallback) the peer's ancestors are read from /proc up to
 * corral's own process, or to the top: every descendant of an agent
 * stays a descendant of corral, because an orphan is reparented to an
 * ancestor (corral is a child subreaper, or a subreaper below it).
 *
 * Which agent.  The first of the peer and its ancestors that is an
 * agent's process, or a per-call process of one, as the caller's match
 * function says.  A process whose parent died was reparented to corral
 * and lost that ancestry: then its session tells, since every process
 * corral starts leads a session of its own and a session cannot be
 * joined from outside.  One that left its agent's session as well is
 * nobody's.
 *
 * No pid is trusted after it could have been reused.  The peer is held
 * by a pidfd (SO_PEERPIDFD, Linux 6.5; before, pidfd_open of the pid it
 * connected with, which a peer that exits at once may have passed on:
 * then its place is another process's, read with the same care), and
 * each process on the way by a descriptor of its /proc directory, which
 * reads nothing once that process is gone.  A parent's directory is
 * opened while its child still names it as parent; a child's parent
 * never changes back, because a process is reparented only when its
 * parent dies, and then to one of its ancestors.  An agent's own
 * process is corral's child and cannot be reaped while a walk runs, so
 * a pid read from a live process that equals an agent's pid is that
 * agent's process.  A walk that meets a dying process starts again.
 */

#include <sys/socket.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD	77
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open	434
#endif

#define LINEAGE_DEPTH	4096	/* ancestors read, at most */
#define LINEAGE_TRIES	3	/* walks started again after a race */

enum lineage_walk {
	LINEAGE_OUT,		/* outside corral */
	LINEAGE_IN,		/* inside (found: its agent, or NULL) */
	LINEAGE_RACE		/* a process on the way died: again */
};

/* Open a process's directory in /proc, or -1. */
static int
lineage_open(pid_t pid)
{
	char	path[32];

	snprintf(path, sizeof path, "/proc/%ld", (long)pid);
	return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* Read a process's parent and session from its directory in /proc. */
static int
lineage_stat(int dir, pid_t *ppid, pid_t *sid)
{
	char	buf[512], *p, state;
	long	pp, pg, se;
	ssize_t	n;
	int	fd;

	if ((fd = openat(dir, "stat", O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* The command name may hold anything, ')' too: the last one ends it. */
	if ((p = strrchr(buf, ')')) == NULL || sscanf(p + 1, " %c %ld %ld %ld",
	    &state, &pp, &pg, &se) != 4)
		return -1;
	*ppid = (pid_t)pp;
	*sid = (pid_t)se;
	return 0;
}

/* corral's own pid, as /proc names it. */
static pid_t
lineage_self(void)
{
	char	buf[32];
	ssize_t	n;

	if ((n = readlink("/proc/self", buf, sizeof buf - 1)) <= 0)
		return getpid();
	buf[n] = '\0';
	return (pid_t)strtol(buf, NULL, 10);
}

/*
 * A pidfd of the socket's peer; -1 when the kernel has none to give,
 * -2 when the peer is gone (its pid may be another's by now).
 */
static int
lineage_pidfd(int sock, pid_t pid)
{
	socklen_t	len = sizeof(int);
	int		fd;

	if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &fd, &len) == 0)
		return fd;
	if (errno == ESRCH)
		return -2;
	if (pid <= 0)
		return -1;
	/* Before Linux 6.5: its pid, which it had when it connected. */
	if ((fd = (int)syscall(SYS_pidfd_open, pid, 0)) == -1 &&
	    errno == ESRCH)
		return -2;
	return fd;
}

/* The pid a pidfd holds, as /proc names it: -1 once it exited. */
static pid_t
lineage_pidfd_pid(int pidfd)
{
	char	path[64], buf[512], *p;
	ssize_t	n;
	int	fd;

	snprintf(path, sizeof path, "/proc/self/fdinfo/%d", pidfd);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if ((p = strstr(buf, "\nPid:")) == NULL)
		return -1;
	return (pid_t)strtol(p + 5, NULL, 10);
}

/* Whether the process of a pidfd has exited. */
static int
lineage_gone(int pidfd)
{
	struct pollfd	pfd = { .fd = pidfd, .events = POLLIN };

	return poll(&pfd, 1, 0) != 0;
}

/*
 * Walk up from the process whose /proc directory is dir (closed here)
 * to an agent's process, to corral, or to the top.
 */
static enum lineage_walk
lineage_walk(int dir, pid_t pid, pid_t self, lineage_match_cb match,
    void *arg, void **found)
{
	pid_t	ppid, again, sid, psid = 0;
	int	up, depth;

	for (depth = 0; depth < LINEAGE_DEPTH; depth++) {
		if (lineage_stat(dir, &ppid, &sid) != 0)
			break;
		if (depth == 0)
			psid = sid;
		if ((*found = match(pid, arg)) != NULL) {
			close(dir);
			return LINEAGE_IN;
		}
		if (pid == self) {
			/* Reparented to corral: its session may still tell. */
			*found = psid > 0 ? match(psid, arg) : NULL;
			close(dir);
			return LINEAGE_IN;
		}
		if (ppid <= 0) {
			close(dir);
			return LINEAGE_OUT;
		}
		/*
		 * A parent we cannot open (hidden by hidepid, or descriptors
		 * ran out) may be one of ours: the peer cannot be placed.
		 */
		if ((up = lineage_open(ppid)) == -1 ||
		    lineage_stat(dir, &again, &sid) != 0 || again != ppid) {
			if (up != -1)
				close(up);
			break;
		}
		close(dir);
		dir = up;
		pid = ppid;
	}
	close(dir);
	*found = NULL;
	return LINEAGE_RACE;
}

/*
 * Where the peer of a connected socket comes from (pid: SO_PEERCRED's).
 * Returns 0 when it is outside corral, 1 when it is inside, with found
 * set to what match said of its agent's process, or NULL when it is no
 * agent's (any more), or cannot be placed: a peer corral cannot place is
 * inside, so that it gets no client's rights.
 */
int
lineage_peer(int sock, pid_t pid, lineage_match_cb match, void *arg,
    void **found)
{
	enum lineage_walk	 r = LINEAGE_RACE;
	pid_t			 ppid, self;
	int			 pidfd, dir, tries, ns = pidns_active();

	*found = NULL;
	if (ns && pid == 0)
		return 0;	/* no pid in our namespace: outside it */
	self = lineage_self();
	pidfd = lineage_pidfd(sock, pid);
	for (tries = 0; tries < LINEAGE_TRIES && r == LINEAGE_RACE &&
	    pidfd != -2; tries++) {
		if (pidfd != -1)
			ppid = lineage_pidfd_pid(pidfd);
		else if (!ns || pidns_host_proc() != -1)
			ppid = pid;	/* /proc names pids as we do */
		else
			break;
		if (ppid <= 0)
			break;		/* gone already */
		if ((dir = lineage_open(ppid)) == -1)
			break;
		/* Still alive: the directory is the peer's. */
		if (pidfd != -1 && lineage_gone(pidfd)) {
			close(dir);
			break;
		}
		r = lineage_walk(dir, ppid, self, match, arg, found);
	}
	if (pidfd >= 0)
		close(pidfd);
	if (r != LINEAGE_IN)
		*found = NULL;
	if (ns)
		return 1;
	return r == LINEAGE_OUT ? 0 : 1;
}
