/*
 * relay: the raw reference relay corral is measured against.
 *
 *   relay [-l LOW] N ECHO
 *
 * The same topology and routing as the benchmark workflow, with newline
 * framing only and no JSON parsing: lines from stdin (the driver) go to
 * one of N `ECHO --low LOW` agents, the one with the fewest lines
 * outstanding (as corral picks); a reply that carries the echo's low
 * score ("score":0.3, found with memmem) goes on to one `ECHO --low 0`
 * reflect agent; every other reply, and every reflection, goes to stdout.
 * The agents get CORRAL_AGENT_ID echo.1 ... echo.N and reflector, as under
 * corral, so their replies are byte for byte the same size.
 *
 * One thread, epoll, nonblocking pipes, 256 KiB reads, one output queue
 * per peer flushed once per loop iteration: the same I/O shape as corral's
 * channels.  stdin stops being read while any queue is above 8 MiB.  At
 * EOF on stdin the relay waits for every outstanding reply, closes the
 * agents' stdin, reaps them and exits 0 (1 if an agent died early).
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
	int		 eof, polling_out, dirty;
};

static struct peer	*peers;		/* 0 driver, 1..n echo, n+1 reflector */
static int		 npeers, nexec, epfd;
static unsigned long	 pick_seq;
static struct peer	**dirty;
static int		 ndirty;

static void
fatal(const char *what)
{
	fprintf(stderr, "relay: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Make room for n more bytes at the tail of b. */
static void
buf_reserve(struct buf *b, size_t n)
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
		b->cap = 64 * 1024;
	while (b->cap < used + n)
		b->cap *= 2;
	if ((b->p = realloc(b->p, b->cap)) == NULL)
		fatal("realloc");
}

/* Queue one line (its newline included) for peer p. */
static void
send_line(struct peer *p, const char *line, size_t len)
{
	buf_reserve(&p->out, len);
	memcpy(p->out.p + p->out.tail, line, len);
	p->out.tail += len;
	if (!p->dirty) {
		p->dirty = 1;
		dirty[ndirty++] = p;
	}
}

/* The execute agent with the fewest outstanding lines. */
static struct peer *
pick(void)
{
	struct peer	*best = NULL, *a;
	int		 i;

	for (i = 1; i <= nexec; i++) {
		a = &peers[i];
		if (best == NULL || a->outstanding < best->outstanding ||
		    (a->outstanding == best->outstanding &&
		    a->last_pick < best->last_pick))
			best = a;
	}
	best->last_pick = ++pick_seq;
	return best;
}

/* Route one line from peer src. */
static void
route(struct peer *src, const char *line, size_t len)
{
	struct peer	*dst;

	if (src == &peers[0]) {
		dst = pick();
	} else {
		src->outstanding--;
		if (src != &peers[npeers - 1] &&
		    memmem(line, len, LOW_MARK, sizeof LOW_MARK - 1) != NULL)
			dst = &peers[npeers - 1];
		else
			dst = &peers[0];
	}
	if (dst != &peers[0])
		dst->outstanding++;
	send_line(dst, line, len);
}

static void
set_events(struct peer *p, int fd, int events)
{
	struct epoll_event	ev;

	ev.events = (uint32_t)events;
	ev.data.u64 = (uint64_t)(p - peers) | ((uint64_t)(fd == p->wfd) << 32);
	if (epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev) == -1)
		fatal("epoll_ctl");
}

/* Write what peer p's stdin takes. */
static void
flush(struct peer *p)
{
	ssize_t	n;

	while (p->out.tail > p->out.head) {
		n = write(p->wfd, p->out.p + p->out.head,
		    p->out.tail - p->out.head);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			fatal("write");
		}
		p->out.head += (size_t)n;
	}
	if (p->out.head == p->out.tail)
		p->out.head = p->out.tail = 0;
	if (p->out.tail > p->out.head && !p->polling_out) {
		p->polling_out = 1;
		set_events(p, p->wfd, EPOLLOUT);
	} else if (p->out.tail == p->out.head && p->polling_out) {
		p->polling_out = 0;
		set_events(p, p->wfd, 0);
	}
}

/* Read what peer p has written and route its complete lines. */
static void
readable(struct peer *p)
{
	struct buf	*b = &p->in;
	ssize_t		 n;
	char		*nl;
	size_t		 from;

	buf_reserve(b, READ_CHUNK);
	n = read(p->rfd, b->p + b->tail, READ_CHUNK);
	if (n == -1) {
		if (errno == EINTR || errno == EAGAIN)
			return;
		fatal("read");
	}
	if (n == 0) {
		p->eof = 1;
		epoll_ctl(epfd, EPOLL_CTL_DEL, p->rfd, NULL);
		return;
	}
	/* Only the new bytes can hold the next newline. */
	from = b->tail;
	b->tail += (size_t)n;
	while ((nl = memchr(b->p + from, '\n', b->tail - from)) != NULL) {
		route(p, b->p + b->head, (size_t)(nl - (b->p + b->head)) + 1);
		from = b->head = (size_t)(nl - b->p) + 1;
	}
	if (b->head == b->tail)
		b->head = b->tail = 0;
}

/* Start one agent with pipes on its stdin and stdout. */
static void
start(struct peer *p, const char *prog, const char *low, const char *id)
{
	posix_spawn_file_actions_t	 fa;
	struct epoll_event		 ev;
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
	fcntl(p->wfd, F_SETFL, O_NONBLOCK);
	fcntl(p->rfd, F_SETFL, O_NONBLOCK);
	ev.events = EPOLLIN;
	ev.data.u64 = (uint64_t)(p - peers);
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, p->rfd, &ev) == -1)
		fatal("epoll_ctl");
	ev.events = 0;
	ev.data.u64 = (uint64_t)(p - peers) | (1ull << 32);
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, p->wfd, &ev) == -1)
		fatal("epoll_ctl");
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

int
main(int argc, char **argv)
{
	struct epoll_event	 evs[64], ev;
	struct peer		*p;
	const char		*low = "10";
	char			 id[32];
	int			 ch, i, n, reading = 1, busy, status, rc = 0;

	while ((ch = getopt(argc, argv, "l:")) != -1) {
		switch (ch) {
		case 'l':
			low = optarg;
			break;
		default:
			goto usage;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc != 2 || (nexec = atoi(argv[0])) < 1) {
usage:
		fprintf(stderr, "usage: relay [-l LOW] N ECHO\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	npeers = nexec + 2;
	if ((peers = calloc((size_t)npeers, sizeof *peers)) == NULL ||
	    (dirty = calloc((size_t)npeers, sizeof *dirty)) == NULL)
		fatal("calloc");
	if ((epfd = epoll_create1(EPOLL_CLOEXEC)) == -1)
		fatal("epoll_create1");
	peers[0].rfd = 0;
	peers[0].wfd = 1;
	fcntl(0, F_SETFL, O_NONBLOCK);
	fcntl(1, F_SETFL, O_NONBLOCK);
	ev.events = EPOLLIN;
	ev.data.u64 = 0;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, 0, &ev) == -1)
		fatal("epoll_ctl stdin");
	ev.events = 0;
	ev.data.u64 = 1ull << 32;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, 1, &ev) == -1)
		fatal("epoll_ctl stdout");
	for (i = 1; i <= nexec; i++) {
		snprintf(id, sizeof id, "echo.%d", i);
		start(&peers[i], argv[1], low, id);
	}
	start(&peers[npeers - 1], argv[1], "0", "reflector");

	for (;;) {
		if (peers[0].eof) {
			busy = 0;
			for (i = 0; i < npeers; i++)
				if (peers[i].outstanding != 0 ||
				    peers[i].out.tail > peers[i].out.head)
					busy = 1;
			if (!busy)
				break;
		}
		if (!peers[0].eof && reading == congested()) {
			reading = !reading;
			set_events(&peers[0], 0, reading ? EPOLLIN : 0);
		}
		if ((n = epoll_wait(epfd, evs, 64, -1)) == -1) {
			if (errno == EINTR)
				continue;
			fatal("epoll_wait");
		}
		for (i = 0; i < n; i++) {
			p = &peers[evs[i].data.u64 & 0xffffffff];
			if (evs[i].data.u64 >> 32)
				flush(p);
			else if (!p->eof)
				readable(p);
			if (p != &peers[0] && p->eof) {
				fprintf(stderr, "relay: an agent closed its "
				    "stdout\n");
				return 1;
			}
		}
		while (ndirty > 0) {
			p = dirty[--ndirty];
			p->dirty = 0;
			flush(p);
		}
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
