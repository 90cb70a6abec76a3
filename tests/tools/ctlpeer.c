/*
 * ctlpeer: a raw client of corral's control socket for the regress
 * scripts: it sends exactly the bytes it is told (malformed ones
 * included), opens many connections at once, connects as another user,
 * stops reading, or hangs up in the middle of a line.
 *
 *   ctlpeer -s SOCKET [-n N] [-u UID [-U]] [-f FILE] [-l LINE]... [-r K]
 *           [-e COUNT] [-w SECS] [-N] [-c] [-q]
 *
 *   -s SOCKET   the control socket
 *   -n N        open N connections at once and do the rest on each
 *   -u UID      connect as this user (needs root): CAP_DAC_OVERRIDE is
 *               kept, so the socket's mode does not stop it and corral's
 *               SO_PEERCRED check must; with -U it is dropped too
 *   -f FILE     send FILE's bytes first, as they are
 *   -l LINE     send LINE and a newline (repeatable, in order)
 *   -r K        send the -l lines K times
 *   -e COUNT    read until COUNT lines came on each connection
 *   -w SECS     with -e: give up once no line came for SECS (default
 *               10), so that many lines take what the machine takes;
 *               without -e: read for SECS
 *   -N          never read: hold the connection(s) until killed, or until
 *               SIGUSR1, then read and print for -w SECS
 *   -c          close right after sending (no reading)
 *   -q          print only a summary line, not the lines read
 *
 * Lines read are printed on stdout (with -n: "N: line").  It ends with
 * "ctlpeer: C connections, L lines" on stderr.  Exit 0; 1 when fewer
 * lines than -e came; 3 when connect failed (the reason on stderr).
 */

#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include <linux/capability.h>

#include <grp.h>
#include <poll.h>
#include <signal.h>

#include "tool.h"

#define CTLPEER_MAX	1024

static volatile sig_atomic_t	 ctlpeer_go;

/* SIGUSR1: start reading. */
static void
ctlpeer_usr1(int sig)
{
	ctlpeer_go = 1;
}

/* Become uid, keeping only CAP_DAC_OVERRIDE (unless none is asked). */
static void
ctlpeer_become(uid_t uid, int keep)
{
	struct __user_cap_header_struct	h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct	d[2];

	if (prctl(PR_SET_KEEPCAPS, 1) == -1 || setgroups(0, NULL) == -1 ||
	    setresgid(uid, uid, uid) == -1 || setresuid(uid, uid, uid) == -1) {
		fprintf(stderr, "ctlpeer: become uid %ld: %s\n", (long)uid,
		    strerror(errno));
		exit(2);
	}
	memset(d, 0, sizeof d);
	if (keep) {
		d[0].effective = d[0].permitted = 1U << CAP_DAC_OVERRIDE;
		if (syscall(SYS_capset, &h, d) == -1) {
			fprintf(stderr, "ctlpeer: capset: %s\n", strerror(errno));
			exit(2);
		}
	}
}

/* Connect to the socket; exits 3 on failure. */
static int
ctlpeer_connect(const char *path)
{
	struct sockaddr_un	sa;
	int			fd;

	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof sa) == -1) {
		fprintf(stderr, "ctlpeer: connect %s: %s\n", path,
		    strerror(errno));
		exit(3);
	}
	return fd;
}

/* A connection's partial line. */
struct ctlpeer_conn {
	int	 fd;
	char	*buf;
	size_t	 len;
	size_t	 cap;
	long	 lines;
	int	 eof;
};

/* Read what one connection has, printing complete lines; say how many. */
static long
ctlpeer_read(struct ctlpeer_conn *c, int idx, int many, int quiet)
{
	char	 chunk[65536], *nl, *p;
	ssize_t	 n;
	long	 before = c->lines;

	if ((n = read(c->fd, chunk, sizeof chunk)) <= 0) {
		if (n == 0 || (errno != EINTR && errno != EAGAIN))
			c->eof = 1;
		return 0;
	}
	if (c->len + (size_t)n > c->cap) {
		c->cap = c->len + (size_t)n + 65536;
		if ((c->buf = realloc(c->buf, c->cap)) == NULL)
			exit(2);
	}
	memcpy(c->buf + c->len, chunk, (size_t)n);
	c->len += (size_t)n;
	p = c->buf;
	while ((nl = memchr(p, '\n', c->len - (size_t)(p - c->buf))) != NULL) {
		*nl = '\0';
		c->lines++;
		if (!quiet) {
			if (many)
				printf("%d: %s\n", idx, p);
			else
				printf("%s\n", p);
		}
		p = nl + 1;
	}
	c->len -= (size_t)(p - c->buf);
	memmove(c->buf, p, c->len);
	fflush(stdout);
	return c->lines - before;
}

int
main(int argc, char **argv)
{
	struct ctlpeer_conn	*conns;
	struct pollfd		*pfd;
	const char		*path = NULL, *file = NULL;
	const char		*lines[64];
	char			*data = NULL;
	size_t			 nlines = 0, dlen = 0;
	long			 expect = -1, total = 0, k;
	double			 wait = 10, end;
	int			 n = 1, i, ch, uid = -1, keep = 1, never = 0;
	int			 hangup = 0, quiet = 0, repeat = 1, short_ = 0;
	FILE			*f;

	while ((ch = getopt(argc, argv, "s:n:u:Uf:l:r:e:w:Ncq")) != -1) {
		switch (ch) {
		case 's': path = optarg; break;
		case 'n': n = atoi(optarg); break;
		case 'u': uid = atoi(optarg); break;
		case 'U': keep = 0; break;
		case 'f': file = optarg; break;
		case 'l':
			if (nlines < 64)
				lines[nlines++] = optarg;
			break;
		case 'r': repeat = atoi(optarg); break;
		case 'e': expect = atol(optarg); break;
		case 'w': wait = atof(optarg); break;
		case 'N': never = 1; break;
		case 'c': hangup = 1; break;
		case 'q': quiet = 1; break;
		default:
			fprintf(stderr, "usage: ctlpeer -s SOCKET [-n N] [-u UID "
			    "[-U]] [-f FILE] [-l LINE]... [-r K] [-e COUNT] "
			    "[-w SECS] [-N] [-c] [-q]\n");
			return 2;
		}
	}
	if (path == NULL || n < 1 || n > CTLPEER_MAX)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	signal(SIGUSR1, ctlpeer_usr1);
	if (file != NULL) {
		if ((f = fopen(file, "r")) == NULL) {
			perror(file);
			return 2;
		}
		fseek(f, 0, SEEK_END);
		dlen = (size_t)ftell(f);
		rewind(f);
		if ((data = malloc(dlen + 1)) == NULL ||
		    fread(data, 1, dlen, f) != dlen)
			return 2;
		fclose(f);
	}
	if (uid >= 0)
		ctlpeer_become((uid_t)uid, keep);

	conns = calloc((size_t)n, sizeof *conns);
	pfd = calloc((size_t)n, sizeof *pfd);
	if (conns == NULL || pfd == NULL)
		return 2;
	/* Every connection first, so that they are all open at once. */
	for (i = 0; i < n; i++)
		conns[i].fd = ctlpeer_connect(path);
	for (i = 0; i < n; i++) {
		if (data != NULL)
			(void)tool_write_all(conns[i].fd, data, dlen);
		for (k = 0; k < repeat; k++)
			for (size_t j = 0; j < nlines; j++) {
				(void)tool_write_all(conns[i].fd, lines[j],
				    strlen(lines[j]));
				(void)tool_write_all(conns[i].fd, "\n", 1);
			}
	}
	if (hangup) {
		fprintf(stderr, "ctlpeer: %d connections, hung up\n", n);
		for (i = 0; i < n; i++)
			close(conns[i].fd);
		free(conns);
		free(pfd);
		free(data);
		return 0;
	}
	if (never) {
		while (!ctlpeer_go)
			pause();
	}
	end = tool_mono() + wait;
	for (;;) {
		int	left = 0, open_ = 0;

		for (i = 0; i < n; i++) {
			pfd[i].fd = conns[i].eof ? -1 : conns[i].fd;
			pfd[i].events = POLLIN;
			if (!conns[i].eof)
				open_++;
			if (expect >= 0 && conns[i].lines < expect &&
			    !conns[i].eof)
				left++;
		}
		if ((expect >= 0 && left == 0) || open_ == 0 ||
		    tool_mono() >= end)
			break;
		if (poll(pfd, (nfds_t)n, 100) <= 0)
			continue;
		for (i = 0; i < n; i++)
			if ((pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
			    ctlpeer_read(&conns[i], i, n > 1, quiet) > 0 &&
			    expect >= 0)
				end = tool_mono() + wait;
	}
	for (i = 0; i < n; i++) {
		total += conns[i].lines;
		if (expect >= 0 && conns[i].lines < expect)
			short_++;
	}
	fprintf(stderr, "ctlpeer: %d connections, %ld lines%s\n", n, total,
	    short_ ? ", some short" : "");
	for (i = 0; i < n; i++) {
		close(conns[i].fd);
		free(conns[i].buf);
	}
	free(conns);
	free(pfd);
	free(data);
	return short_ ? 1 : 0;
}
