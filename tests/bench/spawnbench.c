/*
 * spawnbench: how fast agents start and stop, and what they cost corral.
 *
 *   spawnbench posix N PROG [ARG...]
 *	The bare reference: posix_spawn N copies of PROG, each with pipes on
 *	its stdin, stdout and stderr (as corral gives an agent), then close
 *	every stdin and reap every child.
 *
 *   spawnbench corral N CORRAL -v serve WF
 *	Run corral serve with stdin held open, count "-> READY" on its -v
 *	log until N agents are ready, read the supervisor's VmRSS, close its
 *	stdin and wait until it has stopped them all and exited.
 *
 * Prints one line of key=value pairs: status=ok or status=FAILED, the
 * time to all started (ready_s), to all stopped (stop_s), the total and
 * the rate N / total; for corral also rss_kb, the supervisor's VmRSS with
 * every agent ready (for corral the supervisor is pid 1 of its own pid
 * namespace, the child of the process we started).
 */

#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double
now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
fail(const char *what)
{
	printf("status=FAILED reason=\"%s: %s\"\n", what, strerror(errno));
	exit(1);
}

/* Raise the descriptor limit to its hard limit. */
static void
raise_nofile(void)
{
	struct rlimit	rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* The bare loop: spawn n with three pipes each, close stdins, reap. */
static int
bench_posix(int n, char **argv)
{
	posix_spawn_file_actions_t	 fa;
	pid_t				*pids;
	int				*fds, p[3][2], i, j, status, bad = 0;
	double				 t0, t1, t2;

	if ((pids = calloc((size_t)n, sizeof *pids)) == NULL ||
	    (fds = calloc((size_t)n * 3, sizeof *fds)) == NULL)
		fail("calloc");
	t0 = now();
	for (i = 0; i < n; i++) {
		for (j = 0; j < 3; j++)
			if (pipe2(p[j], O_CLOEXEC) == -1)
				fail("pipe");
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_adddup2(&fa, p[0][0], 0);
		posix_spawn_file_actions_adddup2(&fa, p[1][1], 1);
		posix_spawn_file_actions_adddup2(&fa, p[2][1], 2);
		if ((errno = posix_spawn(&pids[i], argv[0], &fa, NULL, argv,
		    environ)) != 0)
			fail(argv[0]);
		posix_spawn_file_actions_destroy(&fa);
		close(p[0][0]);
		close(p[1][1]);
		close(p[2][1]);
		fds[3 * i] = p[0][1];
		fds[3 * i + 1] = p[1][0];
		fds[3 * i + 2] = p[2][0];
	}
	t1 = now();
	for (i = 0; i < n; i++)
		close(fds[3 * i]);
	for (i = 0; i < n; i++) {
		if (waitpid(pids[i], &status, 0) == -1 || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			bad++;
		close(fds[3 * i + 1]);
		close(fds[3 * i + 2]);
	}
	t2 = now();
	if (bad) {
		printf("status=FAILED reason=\"%d children failed\"\n", bad);
		return 1;
	}
	printf("status=ok n=%d ready_s=%.4f stop_s=%.4f total_s=%.4f "
	    "rate=%.0f\n", n, t1 - t0, t2 - t1, t2 - t0, n / (t2 - t0));
	return 0;
}

/* VmRSS (kB) of pid, or -1. */
static long
rss_kb(pid_t pid)
{
	char	 path[64], line[256];
	long	 kb = -1;
	FILE	*f;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* The supervisor: the child's namesake child (pid namespace), else it. */
static pid_t
supervisor(pid_t child)
{
	char	 path[96];
	int	 sub = -1;
	FILE	*f;
	char	 c1[64] = "", c2[64] = "";

	snprintf(path, sizeof path, "/proc/%d/comm", (int)child);
	if ((f = fopen(path, "r")) != NULL) {
		if (fgets(c1, sizeof c1, f) == NULL)
			c1[0] = '\0';
		fclose(f);
	}
	snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)child,
	    (int)child);
	if ((f = fopen(path, "r")) == NULL)
		return child;
	if (fscanf(f, "%d", &sub) != 1)
		sub = -1;
	fclose(f);
	if (sub <= 0)
		return child;
	snprintf(path, sizeof path, "/proc/%d/comm", sub);
	if ((f = fopen(path, "r")) != NULL) {
		if (fgets(c2, sizeof c2, f) == NULL)
			c2[0] = '\0';
		fclose(f);
	}
	return strcmp(c1, c2) == 0 ? (pid_t)sub : child;
}

/* corral serve with n agents: time to all READY, then to exit. */
static int
bench_corral(int n, char **argv)
{
	posix_spawn_file_actions_t	 fa;
	pid_t				 child;
	FILE				*err;
	char				*line = NULL;
	size_t				 cap = 0;
	int				 in[2], ep[2], ready = 0, stopped = 0;
	int				 status, closed = 0;
	long				 rss = -1;
	double				 t0, t1 = 0, t2;

	if (pipe2(in, O_CLOEXEC) == -1 || pipe2(ep, O_CLOEXEC) == -1)
		fail("pipe");
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, ep[1], 2);
	t0 = now();
	if ((errno = posix_spawn(&child, argv[0], &fa, NULL, argv,
	    environ)) != 0)
		fail(argv[0]);
	close(in[0]);
	close(ep[1]);
	if ((err = fdopen(ep[0], "r")) == NULL)
		fail("fdopen");
	while (getline(&line, &cap, err) != -1) {
		if (strstr(line, "-> READY") != NULL && ++ready == n) {
			t1 = now();
			rss = rss_kb(supervisor(child));
			close(in[1]);
			closed = 1;
		} else if (strstr(line, "-> STOPPED") != NULL)
			stopped++;
		else if (strstr(line, "done:") == NULL &&
		    (strstr(line, "error") != NULL ||
		    strstr(line, "failed") != NULL || strstr(line,
		    "refused") != NULL))
			fprintf(stderr, "spawnbench: %s", line);
	}
	if (!closed)
		close(in[1]);
	if (waitpid(child, &status, 0) == -1)
		fail("waitpid");
	t2 = now();
	if (ready != n || stopped != n || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		printf("status=FAILED reason=\"%d of %d ready, %d stopped, exit "
		    "%d\"\n", ready, n, stopped, WIFEXITED(status) ?
		    WEXITSTATUS(status) : 128 + WTERMSIG(status));
		return 1;
	}
	printf("status=ok n=%d ready_s=%.4f stop_s=%.4f total_s=%.4f rate=%.0f "
	    "rss_kb=%ld\n", n, t1 - t0, t2 - t1, t2 - t0, n / (t2 - t0), rss);
	return 0;
}

int
main(int argc, char **argv)
{
	int	n;

	if (argc < 4 || (n = atoi(argv[2])) < 1) {
		fprintf(stderr, "usage: spawnbench posix|corral N CMD [ARG...]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	raise_nofile();
	if (strcmp(argv[1], "posix") == 0)
		return bench_posix(n, argv + 3);
	if (strcmp(argv[1], "corral") == 0)
		return bench_corral(n, argv + 3);
	fprintf(stderr, "usage: spawnbench posix|corral N CMD [ARG...]\n");
	return 2;
}
