/*
 * driver: the benchmark client.  It starts a relay (corral serve WF, or
 * the raw reference relay) with pipes on its stdin and stdout, sends it
 * envelopes of an exact size, and checks and times the results.
 *
 *   driver [-n N] [-s SIZE] [-w WINDOW] [-r RATE] [-W WARMUP] [-T SECS]
 *       [-L FILE] [-D SECS] -- CMD [ARG...]
 *
 * Each envelope carries its sequence number and its send time (CLOCK_
 * MONOTONIC, ns) at the start of content.text, which the echo agent echoes
 * and a reflection keeps, so every result names the request it ends.
 * Every sequence number must come back exactly once, as a text envelope
 * (not an error), and the relay must exit 0 after its stdin closes;
 * otherwise the run FAILED.
 *
 * Without -r, the driver keeps WINDOW envelopes outstanding and measures
 * throughput.  With -r it sends RATE envelopes a second on a fixed
 * schedule (open loop: latency counts from the scheduled time, so a stall
 * is not hidden) and reports latency percentiles.  The first WARMUP
 * envelopes are sent and answered before the clock starts.
 *
 * It prints one line of key=value pairs; status=ok or status=FAILED.
 * -D waits SECS after starting the relay before the first envelope (for
 * a relay that starts a tree of sub-agents first).
 * -L writes every envelope's latency (sequence number, microseconds) to
 * FILE, in send order, to see when the slow ones happened.
 * cpu_ms is the relay's own CPU time during the timed part (from
 * /proc/PID/stat, in clock ticks): for corral, the supervisor (the child of
 * the pid-namespace waiter), not the agents; sys_us_per_msg its kernel part.
 */

#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define TEXT_MARK	"\"content\":{\"type\":\"text\",\"text\":\"#"
#define SEQ_DIGITS	10
#define T_DIGITS	20
#define READ_CHUNK	(256 * 1024)
#define BATCH		(256 * 1024)

static size_t	 size = 600, window = 1024, warmup = 100;
static uint64_t	 nmsg = 100000;
static double	 rate, stall_timeout = 60, start_delay;
static const char *latfile;

static char	*tmpl;		/* one envelope and its newline */
static size_t	 tlen, seq_off, t_off;

static char	*sbuf;		/* small envelopes, batched */
static size_t	 scap, shead, stail;
static int	 big_active;	/* writing tmpl directly */
static size_t	 big_off;

static char	*rbuf;
static size_t	 rcap, rhead, rtail;

static uint64_t	 total, queued, received, reflected, bad;
static uint8_t	*seen;
static uint64_t	*lat;
static char	 bad_sample[200];

static uint64_t
now_ns(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void
die(const char *what)
{
	printf("status=FAILED reason=\"%s: %s\"\n", what, strerror(errno));
	exit(1);
}

/* Write v as exactly n decimal digits at p. */
static void
put_digits(char *p, uint64_t v, int n)
{
	while (n-- > 0) {
		p[n] = (char)('0' + v % 10);
		v /= 10;
	}
}

/* Parse n decimal digits at p; -1 if one is not a digit. */
static int64_t
get_digits(const char *p, int n)
{
	int64_t	v = 0;

	while (n-- > 0) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p++ - '0');
	}
	return v;
}

/* Build the envelope template: exactly size bytes before the newline. */
static void
build_template(void)
{
	static const char head[] = "{\"protocol\":\"multiagent-1.0\","
	    "\"role\":\"user\",\"timestamp\":\"2026-11-22T12:40:00Z\","
	    "\"intent\":\"execute\",\"task\":\"bench\",\"trace\":{\"id\":\"b-";
	static const char mid[] = "\"}," TEXT_MARK;
	static const char tail[] = "\"}}";
	size_t	fixed, fill, p = 0;

	fixed = sizeof head - 1 + SEQ_DIGITS + sizeof mid - 1 + SEQ_DIGITS +
	    1 + T_DIGITS + 1 + sizeof tail - 1;
	if (size < fixed) {
		fprintf(stderr, "driver: size must be at least %zu\n", fixed);
		exit(2);
	}
	fill = size - fixed;
	tlen = size + 1;
	if ((tmpl = malloc(tlen)) == NULL)
		die("malloc");
	memcpy(tmpl + p, head, sizeof head - 1);
	p += sizeof head - 1;
	p += SEQ_DIGITS;	/* trace id digits, patched with seq */
	memcpy(tmpl + p, mid, sizeof mid - 1);
	p += sizeof mid - 1;
	seq_off = p;
	p += SEQ_DIGITS;
	tmpl[p++] = ' ';
	t_off = p;
	p += T_DIGITS;
	tmpl[p++] = ' ';
	memset(tmpl + p, 'x', fill);
	p += fill;
	memcpy(tmpl + p, tail, sizeof tail - 1);
	p += sizeof tail - 1;
	tmpl[p++] = '\n';
	if (p != tlen)
		abort();
}

/* Stamp the template with sequence number seq and send time t. */
static void
stamp(uint64_t seq, uint64_t t)
{
	put_digits(tmpl + seq_off - (sizeof TEXT_MARK - 1) - 3 - SEQ_DIGITS,
	    seq, SEQ_DIGITS);
	put_digits(tmpl + seq_off, seq, SEQ_DIGITS);
	put_digits(tmpl + t_off, t, T_DIGITS);
}

/* Queue envelope seq (sent at time t) for writing. */
static void
enqueue(uint64_t t)
{
	stamp(queued, t);
	queued++;
	if (tlen > BATCH) {
		big_active = 1;
		big_off = 0;
		return;
	}
	if (stail + tlen > scap) {
		memmove(sbuf, sbuf + shead, stail - shead);
		stail -= shead;
		shead = 0;
	}
	memcpy(sbuf + stail, tmpl, tlen);
	stail += tlen;
}

/* Return nonzero if something is waiting to be written. */
static int
pending_write(void)
{
	return big_active || stail > shead;
}

/* Write what the pipe takes.  Returns -1 on error. */
static int
do_write(int fd)
{
	ssize_t	n;

	while (pending_write()) {
		if (big_active)
			n = write(fd, tmpl + big_off, tlen - big_off);
		else
			n = write(fd, sbuf + shead, stail - shead);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			return -1;
		}
		if (big_active) {
			big_off += (size_t)n;
			if (big_off == tlen)
				big_active = 0;
		} else {
			shead += (size_t)n;
			if (shead == stail)
				shead = stail = 0;
		}
	}
	return 0;
}

/* Check one result line. */
static void
result(const char *line, size_t len, uint64_t now)
{
	const char	*m;
	size_t		 look = len < 8192 ? len : 8192;
	int64_t		 seq, t;

	m = memmem(line, look, TEXT_MARK, sizeof TEXT_MARK - 1);
	if (m == NULL || (size_t)(m - line) + sizeof TEXT_MARK - 1 +
	    SEQ_DIGITS + 1 + T_DIGITS > len)
		goto bad;
	m += sizeof TEXT_MARK - 1;
	if ((seq = get_digits(m, SEQ_DIGITS)) < 0 || (uint64_t)seq >= total ||
	    (t = get_digits(m + SEQ_DIGITS + 1, T_DIGITS)) < 0)
		goto bad;
	if (seen[seq]++) {
		bad++;
		if (bad_sample[0] == '\0')
			snprintf(bad_sample, sizeof bad_sample, "duplicate "
			    "result for %lld", (long long)seq);
		return;
	}
	received++;
	if ((uint64_t)seq >= warmup)
		lat[seq - warmup] = now - (uint64_t)t;
	/* A reflection's result comes from the reflect agent. */
	if (memmem(line, look, "\"agent\":{\"id\":\"reflector\"", 25) != NULL)
		reflected++;
	return;
bad:
	bad++;
	received++;
	if (bad_sample[0] == '\0') {
		size_t	i, n = len < sizeof bad_sample - 1 ? len :
		    sizeof bad_sample - 1;
		for (i = 0; i < n; i++)
			bad_sample[i] = (line[i] == '"' || line[i] == '\\') ?
			    '\'' : line[i];
		bad_sample[n] = '\0';
	}
}

/* Read what the pipe has.  Returns 0 at EOF, 1 otherwise, -1 on error. */
static int
do_read(int fd)
{
	ssize_t		 n;
	char		*nl;
	uint64_t	 now;
	size_t		 from;

	for (;;) {
		if (rhead > 0 && rcap - rtail < READ_CHUNK) {
			memmove(rbuf, rbuf + rhead, rtail - rhead);
			rtail -= rhead;
			rhead = 0;
		}
		if (rcap - rtail < READ_CHUNK) {
			rcap = rcap ? rcap * 2 : 4 * READ_CHUNK;
			if ((rbuf = realloc(rbuf, rcap)) == NULL)
				die("realloc");
		}
		n = read(fd, rbuf + rtail, rcap - rtail);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 1 : -1;
		}
		if (n == 0)
			return 0;
		now = now_ns();
		/* Only the new bytes can hold the next newline. */
		from = rtail;
		rtail += (size_t)n;
		while ((nl = memchr(rbuf + from, '\n', rtail - from)) !=
		    NULL) {
			result(rbuf + rhead, (size_t)(nl - (rbuf + rhead)), now);
			from = rhead = (size_t)(nl - rbuf) + 1;
		}
		if ((size_t)n < READ_CHUNK)
			return 1;
	}
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* CPU time (user + system, ms) of process pid, or -1; *sys_ms the system part. */
static double
cpu_ms(pid_t pid, double *sys_ms)
{
	char		 path[64], buf[1024], *p;
	unsigned long	 ut, st;
	FILE		*f;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	p = fgets(buf, sizeof buf, f);
	fclose(f);
	if (p == NULL || (p = strrchr(buf, ')')) == NULL)
		return -1;
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
	    &ut, &st) != 2)
		return -1;
	*sys_ms = (double)st * 1000.0 / (double)sysconf(_SC_CLK_TCK);
	return (double)(ut + st) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

/* The process to account: the child, or its namesake child (pidns). */
static pid_t
measured_pid(pid_t child)
{
	char	path[96], comm[64], comm2[64];
	FILE	*f;
	int	 sub = -1;

	snprintf(path, sizeof path, "/proc/%d/comm", (int)child);
	if ((f = fopen(path, "r")) == NULL || fgets(comm, sizeof comm, f) ==
	    NULL) {
		if (f != NULL)
			fclose(f);
		return child;
	}
	fclose(f);
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
	if ((f = fopen(path, "r")) == NULL || fgets(comm2, sizeof comm2, f) ==
	    NULL) {
		if (f != NULL)
			fclose(f);
		return child;
	}
	fclose(f);
	return strcmp(comm, comm2) == 0 ? (pid_t)sub : child;
}

static void
usage(void)
{
	fprintf(stderr, "usage: driver [-n N] [-s SIZE] [-w WINDOW] [-r RATE] "
	    "[-W WARMUP] [-T SECS] [-L FILE] [-D SECS] -- CMD [ARG...]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	posix_spawn_file_actions_t	 fa;
	struct pollfd			 pfd[2];
	struct timespec			 ts, *tsp;
	pid_t				 child, mpid = 0;
	uint64_t			 t0 = 0, t1 = 0, next = 0, last_progress;
	uint64_t			 lat_n, i, progress = 0;
	double				 el, cpu0 = -1, cpu1 = -1;
	double				 sys0 = 0, sys1 = 0;
	int				 ch, in[2], out[2], status, wfd, rfd;
	int				 timed = 0, eof = 0, rc;

	while ((ch = getopt(argc, argv, "n:s:w:r:W:T:L:D:")) != -1) {
		switch (ch) {
		case 'n':
			nmsg = strtoull(optarg, NULL, 10);
			break;
		case 's':
			size = strtoull(optarg, NULL, 10);
			break;
		case 'w':
			window = strtoull(optarg, NULL, 10);
			break;
		case 'r':
			rate = strtod(optarg, NULL);
			break;
		case 'W':
			warmup = strtoull(optarg, NULL, 10);
			break;
		case 'T':
			stall_timeout = strtod(optarg, NULL);
			break;
		case 'L':
			latfile = optarg;
			break;
		case 'D':
			start_delay = strtod(optarg, NULL);
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1 || nmsg == 0 || window == 0)
		usage();
	signal(SIGPIPE, SIG_IGN);
	(void)prctl(PR_SET_TIMERSLACK, 1UL);
	total = warmup + nmsg;
	if ((seen = calloc(total, 1)) == NULL ||
	    (lat = calloc(nmsg, sizeof *lat)) == NULL)
		die("calloc");
	build_template();
	scap = BATCH + tlen;
	if ((sbuf = malloc(scap)) == NULL)
		die("malloc");

	if (pipe2(in, O_CLOEXEC) == -1 || pipe2(out, O_CLOEXEC) == -1)
		die("pipe");
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	if ((errno = posix_spawnp(&child, argv[0], &fa, NULL, argv,
	    environ)) != 0)
		die(argv[0]);
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	close(out[1]);
	wfd = in[1];
	rfd = out[0];
	fcntl(wfd, F_SETFL, O_NONBLOCK);
	fcntl(rfd, F_SETFL, O_NONBLOCK);
	/* Let the relay start what it starts (a tree of sub-agents). */
	if (start_delay > 0) {
		ts.tv_sec = (time_t)start_delay;
		ts.tv_nsec = (long)((start_delay - (double)ts.tv_sec) * 1e9);
		nanosleep(&ts, NULL);
	}

	last_progress = now_ns();
	for (;;) {
		uint64_t now = now_ns();

		/* Start the clock once the warmup is answered. */
		if (!timed && received >= warmup) {
			timed = 1;
			t0 = now;
			next = now;
			mpid = measured_pid(child);
			cpu0 = cpu_ms(mpid, &sys0);
		}
		/* Queue what may go now. */
		while (queued < total && !pending_write() &&
		    queued - received < window) {
			if (queued < warmup) {
				enqueue(now);
				continue;
			}
			if (!timed)
				break;
			if (rate > 0) {
				if (next > now)
					break;
				enqueue(next);
				next = t0 + (uint64_t)((double)(queued -
				    warmup) * 1e9 / rate);
			} else
				enqueue(now);
			/* Fill a batch of small ones. */
			if (rate > 0 || tlen > BATCH)
				continue;
			while (queued < total && stail + tlen <= BATCH &&
			    queued - received < window)
				enqueue(now);
			break;
		}
		if (pending_write() && do_write(wfd) == -1)
			die("write");
		if (received == total && wfd != -1) {
			t1 = now_ns();
			cpu1 = cpu_ms(mpid, &sys1);
			close(wfd);
			wfd = -1;
		}
		if (received > progress) {
			progress = received;
			last_progress = now;
		} else if ((double)(now - last_progress) / 1e9 >
		    stall_timeout) {
			kill(child, SIGKILL);
			waitpid(child, &status, 0);
			printf("status=FAILED reason=\"stalled: %llu of %llu "
			    "results after %.0fs\" n=%llu\n",
			    (unsigned long long)received,
			    (unsigned long long)total, stall_timeout,
			    (unsigned long long)nmsg);
			return 1;
		}
		if (eof)
			break;

		pfd[0].fd = rfd;
		pfd[0].events = POLLIN;
		pfd[1].fd = wfd;
		pfd[1].events = pending_write() ? POLLOUT : 0;
		tsp = NULL;
		ts.tv_sec = 1;
		ts.tv_nsec = 0;
		tsp = &ts;
		if (rate > 0 && timed && queued < total && !pending_write()) {
			now = now_ns();
			if (next > now) {
				uint64_t d = next - now;
				if (d < 1000000000ull) {
					ts.tv_sec = 0;
					ts.tv_nsec = (long)d;
				}
			} else
				ts.tv_sec = ts.tv_nsec = 0;
		}
		if (ppoll(pfd, wfd != -1 ? 2 : 1, tsp, NULL) == -1 &&
		    errno != EINTR)
			die("poll");
		if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			if ((rc = do_read(rfd)) == -1)
				die("read");
			if (rc == 0)
				eof = 1;
		}
	}
	if (waitpid(child, &status, 0) == -1)
		die("waitpid");

	if (received != total || bad > 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		printf("status=FAILED reason=\"%llu of %llu results, %llu bad, "
		    "exit %d%s%s\" n=%llu\n", (unsigned long long)received,
		    (unsigned long long)total, (unsigned long long)bad,
		    WIFEXITED(status) ? WEXITSTATUS(status) :
		    128 + WTERMSIG(status), bad_sample[0] ? ": " : "",
		    bad_sample, (unsigned long long)nmsg);
		return 1;
	}
	el = (double)(t1 - t0) / 1e9;
	lat_n = nmsg;
	if (latfile != NULL) {
		FILE *f = fopen(latfile, "w");
		if (f == NULL)
			die(latfile);
		for (i = 0; i < lat_n; i++)
			fprintf(f, "%llu %.1f\n", (unsigned long long)i,
			    lat[i] / 1e3);
		fclose(f);
	}
	qsort(lat, lat_n, sizeof *lat, cmp_u64);
	i = lat_n * 99 / 100;
	printf("status=ok n=%llu size=%zu elapsed=%.4f msgs_per_s=%.0f "
	    "mb_per_s=%.1f p50_us=%.1f p99_us=%.1f max_us=%.1f reflected=%.4f "
	    "cpu_ms=%.0f cpu_us_per_msg=%.2f sys_us_per_msg=%.2f\n",
	    (unsigned long long)nmsg,
	    size, el, (double)nmsg / el, (double)nmsg * (double)size / el / 1e6,
	    lat[lat_n / 2] / 1e3, lat[i < lat_n ? i : lat_n - 1] / 1e3,
	    lat[lat_n - 1] / 1e3, (double)reflected / (double)total,
	    cpu1 - cpu0, (cpu1 - cpu0) * 1e3 / (double)nmsg,
	    (sys1 - sys0) * 1e3 / (double)nmsg);
	return 0;
}
