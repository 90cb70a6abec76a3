/*
 * lean: a leaner raw relay, the floor corral is measured against beside
 * relay.c.
 *
 *   lean [-l LOW] N ECHO
 *
 * The same topology, routing and agents as relay.c (lines from stdin to
 * the echo with the fewest lines outstanding, a reply with "score":0.3 on
 * to the reflect agent, everything else to stdout), with as few system
 * calls and copies as the job allows: epoll edge-triggered, every
 * descriptor registered once for reading and writing, each readable pipe
 * read until it is empty, lines found with memchr and copied once into
 * their destination's queue, each queue written until the pipe is full.
 * No JSON, no per-line state but the counts.  At EOF on stdin it waits
 * for every outstanding reply, closes the agents' stdin, reaps them and
 * exits 0 (1 if an agent died early).
 */

#include <sys/epoll.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

#define READ_CHUNK	(256 * 1024)
#define HIGH		(8 * 1024 * 1024)
#define LOW_MARK	"\"score\":0.3"

struct buf {
	char	*p;
	size_t	 head, tail, cap;
};

struct peer {
	int		 rfd, wfd;
	pid_t		 pid;
	struct buf	 in, out;
	long		 outstanding;
	unsigned long	 last_pick;
	int		 eof, writable;
};

static struct peer	*peers;		/* 0 driver, 1..n echo, n+1 reflector */
static int		 npeers, nexec, epfd;
static unsigned long	 pick_seq;

static void
fatal(const char *what)
{
	fprintf(stderr, "lean: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Make room for n more bytes at the tail of b. */
static void
reserve(struct buf *b, size_t n)
{
	size_t	used = b->tail - b->head;

	if (b->tail + n <= b->cap)
		return;
	if (b->head > 0) {
		memmove(b->p, b->p + b->head, used);
		b->head = 0;
		b->tail = used;
		if (used + n <= b->cap)
			return;
	}
	if (b->cap == 0)
		b->cap = 1024 * 1024;
	while (b->cap < used + n)
		b->cap *= 2;
	if ((b->p = realloc(b->p, b->cap)) == NULL)
		fatal("realloc");
}

/* Write what peer p's stdin takes now. */
static void
drain(struct peer *p)
{
	ssize_t	n;

	while (p->writable && p->out.tail > p->out.head) {
		n = write(p->wfd, p->out.p + p->out.head,
		    p->out.tail - p->out.head);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				fatal("write");
			p->writable = 0;	/* until EPOLLOUT */
			break;
		}
		p->out.head += (size_t)n;
	}
	if (p->out.head == p->out.tail)
		p->out.head = p->out.tail = 0;
}

/* The execute agent with the fewest outstanding lines. */
static struct peer *
pick(void)
{
	struct peer	*best = &peers[1], *a;
	int		 i;

	for (i = 2; i <= nexec; i++) {
		a = &peers[i];
		if (a->outstanding < best->outstanding ||
		    (a->outstanding == best->outstanding &&
		    a->last_pick < best->last_pick))
			best = a;
	}
	best->last_pick = ++pick_seq;
	return best;
}

/* Route the complete lines in src's input to their queues. */
static void
route(struct peer *src, size_t from)
{
	struct buf	*b = &src->in;
	struct peer	*dst;
	char		*line, *nl;
	size_t		 len;

	while ((nl = memchr(b->p + from, '\n', b->tail - from)) != NULL) {
		line = b->p + b->head;
		len = (size_t)(nl - line) + 1;
		if (src == &peers[0])
			dst = pick();
		else {
			src->outstanding--;
			dst = src != &peers[npeers - 1] && memmem(line, len,
			    LOW_MARK, sizeof LOW_MARK - 1) != NULL ?
			    &peers[npeers - 1] : &peers[0];
		}
		if (dst != &peers[0])
			dst->outstanding++;
		reserve(&dst->out, len);
		memcpy(dst->out.p + dst->out.tail, line, len);
		dst->out.tail += len;
		from = b->head = (size_t)(nl - b->p) + 1;
	}
	if (b->head == b->tail)
		b->head = b->tail = 0;
}

/* Read everything peer p has written and route its lines. */
static void
readable(struct peer *p)
{
	struct buf	*b = &p->in;
	ssize_t		 n;

	for (;;) {
		reserve(b, READ_CHUNK);
		n = read(p->rfd, b->p + b->tail, b->cap - b->tail);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			fatal("read");
		}
		if (n == 0) {
			p->eof = 1;
			return;
		}
		b->tail += (size_t)n;
		/* Only the new bytes can end a line. */
		route(p, b->tail - (size_t)n);
	}
}

/* Register fd once, edge-triggered, for peer p (its write end: w). */
static void
watch(int fd, struct peer *p, int w)
{
	struct epoll_event	ev;

	ev.events = (w ? EPOLLOUT : EPOLLIN) | EPOLLET;
	ev.data.u64 = (uint64_t)(p - peers) | ((uint64_t)w << 32);
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) == -1)
		fatal("epoll_ctl");
}

/* Start one agent with pipes on its stdin and stdout. */
static void
start(struct peer *p, const char *prog, const char *low, const char *id)
{
	posix_spawn_file_actions_t	 fa;
	char				*argv[4], env[64], **envp;
	int				 in[2], out[2], n, i;

	if (pipe2(in, O_CLOEXEC) == -1 || pipe2(out, O_CLOEXEC) == -1)
		fatal("pipe");
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	argv[0] = (char *)prog;
	argv[1] = "--low";
	argv[2] = (char *)low;
	argv[3] = NULL;
	for (n = 0; environ[n] != NULL; n++)
		;
	if ((envp = calloc((size_t)n + 2, sizeof *envp)) == NULL)
		fatal("calloc");
	snprintf(env, sizeof env, "CORRAL_AGENT_ID=%s", id);
	envp[0] = env;
	for (i = 0; i < n; i++)
		envp[i + 1] = environ[i];
	if ((errno = posix_spawn(&p->pid, prog, &fa, NULL, argv, envp)) != 0)
		fatal(prog);
	free(envp);
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	close(out[1]);
	p->wfd = in[1];
	p->rfd = out[0];
	p->writable = 1;
	fcntl(p->wfd, F_SETFL, O_NONBLOCK);
	fcntl(p->rfd, F_SETFL, O_NONBLOCK);
	watch(p->rfd, p, 0);
	watch(p->wfd, p, 1);
}

/* Return nonzero if a queue is above the high mark. */
static int
congested(void)
{
	int	i;

	for (i = 0; i < npeers; i++)
		if (peers[i].out.tail - peers[i].out.head > HIGH)
			return 1;
	return 0;
}

/* Nonzero while replies are outstanding or bytes wait to be written. */
static int
busy(void)
{
	int	i;

	for (i = 0; i < npeers; i++)
		if (peers[i].outstanding != 0 ||
		    peers[i].out.tail > peers[i].out.head)
			return 1;
	return 0;
}

int
main(int argc, char **argv)
{
	struct epoll_event	 evs[64];
	struct peer		*p;
	const char		*low = "10";
	char			 id[32];
	int			 ch, i, n, status, rc = 0, stdin_ready = 0;

	while ((ch = getopt(argc, argv, "l:")) != -1) {
		if (ch != 'l')
			goto usage;
		low = optarg;
	}
	argc -= optind;
	argv += optind;
	if (argc != 2 || (nexec = atoi(argv[0])) < 1) {
usage:
		fprintf(stderr, "usage: lean [-l LOW] N ECHO\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	npeers = nexec + 2;
	if ((peers = calloc((size_t)npeers, sizeof *peers)) == NULL)
		fatal("calloc");
	if ((epfd = epoll_create1(EPOLL_CLOEXEC)) == -1)
		fatal("epoll_create1");
	peers[0].rfd = 0;
	peers[0].wfd = 1;
	peers[0].writable = 1;
	fcntl(0, F_SETFL, O_NONBLOCK);
	fcntl(1, F_SETFL, O_NONBLOCK);
	watch(0, &peers[0], 0);
	watch(1, &peers[0], 1);
	for (i = 1; i <= nexec; i++) {
		snprintf(id, sizeof id, "echo.%d", i);
		start(&peers[i], argv[1], low, id);
	}
	start(&peers[npeers - 1], argv[1], "0", "reflector");

	while (!peers[0].eof || busy()) {
		if ((n = epoll_wait(epfd, evs, 64, -1)) == -1) {
			if (errno == EINTR)
				continue;
			fatal("epoll_wait");
		}
		for (i = 0; i < n; i++) {
			p = &peers[evs[i].data.u64 & 0xffffffff];
			if (evs[i].data.u64 >> 32)
				p->writable = 1;
			else if (p == &peers[0])
				stdin_ready = 1;
			else if (!p->eof)
				readable(p);
			if (p != &peers[0] && p->eof) {
				fprintf(stderr, "lean: an agent closed its "
				    "stdout\n");
				return 1;
			}
		}
		/* The driver waits while a queue is over the high mark. */
		if (stdin_ready && !peers[0].eof && !congested()) {
			readable(&peers[0]);
			stdin_ready = !peers[0].eof;
		}
		for (i = 0; i < npeers; i++)
			drain(&peers[i]);
	}
	for (i = 1; i < npeers; i++)
		close(peers[i].wfd);
	for (i = 1; i < npeers; i++) {
		if (waitpid(peers[i].pid, &status, 0) == -1 ||
		    !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			rc = 1;
	}
	return rc;
}
