/*
 * OTLP over HTTP (--otlp http://HOST:PORT/PATH): each batch of spans is
 * one POST of an ExportTraceServiceRequest as JSON, as OpenTelemetry's
 * OTLP/HTTP exporters send it (Content-Type: application/json), plain
 * HTTP/1.1 over a TCP connection made for it and closed after the
 * answer.  Only otlp.c's writer thread calls these, so a slow or absent
 * collector costs that thread its time, never the loop: connecting,
 * sending and reading the answer each give up after OTLP_HTTP_WAIT
 * seconds.  A POST that fails (no connection, a timeout, a status other
 * than 2xx) loses its batch, which otlp.c counts.
 */

#include <sys/socket.h>
#include <sys/time.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"
#include "otlp-int.h"

#define OTLP_HTTP_WAIT	10	/* seconds a step of a POST may take */

/*
 * Read an http:// URL into u: its host, port (80 when none) and path ("/"
 * when none).  Returns 0, or -1 with why.
 */
int
otlp_http_parse(const char *url, struct otlp_url *u, char *why, size_t len)
{
	const char	*h, *p, *colon;
	size_t		 n;

	memset(u, 0, sizeof *u);
	if (strncmp(url, "http://", 7) != 0) {
		snprintf(why, len, "not an http:// URL");
		return -1;
	}
	h = url + 7;
	p = h + strcspn(h, "/");
	colon = memchr(h, ':', (size_t)(p - h));
	n = (size_t)((colon != NULL ? colon : p) - h);
	if (n == 0 || n >= sizeof u->host) {
		snprintf(why, len, "no host, or a host longer than %zu bytes",
		    sizeof u->host - 1);
		return -1;
	}
	memcpy(u->host, h, n);
	if (colon != NULL) {
		n = (size_t)(p - colon - 1);
		if (n == 0 || n >= sizeof u->port ||
		    strspn(colon + 1, "0123456789") < n) {
			snprintf(why, len, "the port is not a number");
			return -1;
		}
		memcpy(u->port, colon + 1, n);
	} else
		strlcpy(u->port, "80", sizeof u->port);
	if (strlen(*p != '\0' ? p : "/") >= sizeof u->path ||
	    strpbrk(p, " \r\n") != NULL) {
		snprintf(why, len, "the path is too long, or has a space or "
		    "a line break");
		return -1;
	}
	strlcpy(u->path, *p != '\0' ? p : "/", sizeof u->path);
	return 0;
}

/* Close a socket (a cleanup handler of the writer thread too). */
static void
otlp_http_close(void *arg)
{
	close(*(int *)arg);
}

/* Connect fd to ai within OTLP_HTTP_WAIT seconds; 0, or an errno. */
static int
otlp_http_connect(int fd, const struct addrinfo *ai)
{
	struct pollfd	pfd = { .fd = fd, .events = POLLOUT };
	socklen_t	slen = sizeof(int);
	int		err = 0;

	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return errno;
	if (poll(&pfd, 1, OTLP_HTTP_WAIT * 1000) != 1)
		return ETIMEDOUT;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &slen) != 0)
		return errno;
	return err;
}

/* Free getaddrinfo's answer (a cleanup handler of the writer thread). */
static void
otlp_http_free_ai(void *arg)
{
	freeaddrinfo(*(struct addrinfo **)arg);
}

/* Close a socket unless it is -1 (a cleanup handler too). */
static void
otlp_http_close_some(void *arg)
{
	if (*(int *)arg != -1)
		close(*(int *)arg);
}

/*
 * A connected socket to u's host, or -1 with why.  The writer thread may
 * be cancelled in a connect's wait at exit: the cleanup handlers free
 * the address list and close the socket then.  getaddrinfo itself is
 * not cancelled, as it cannot clean up after itself.
 */
static int
otlp_http_dial(const struct otlp_url *u, char *why, size_t len)
{
	struct addrinfo	 hints, *res = NULL, *ai;
	struct timeval	 tv = { .tv_sec = OTLP_HTTP_WAIT };
	volatile int	 fd = -1;	/* read by a cleanup handler */
	volatile int	 err = 0;	/* set between setjmp and a cancel */
	int		 rc, old;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	(void)pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	rc = getaddrinfo(u->host, u->port, &hints, &res);
	(void)pthread_setcancelstate(old, NULL);
	if (rc != 0) {
		snprintf(why, len, "%s: %s", u->host, gai_strerror(rc));
		return -1;
	}
	pthread_cleanup_push(otlp_http_free_ai, &res);
	pthread_cleanup_push(otlp_http_close_some, (void *)&fd);
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		if ((fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC |
		    SOCK_NONBLOCK, ai->ai_protocol)) == -1) {
			err = errno;
			continue;
		}
		if ((err = otlp_http_connect(fd, ai)) == 0)
			break;
		close(fd);
		fd = -1;
	}
	pthread_cleanup_pop(0);
	pthread_cleanup_pop(1);
	if (fd == -1) {
		snprintf(why, len, "connect to %s:%s: %s", u->host, u->port,
		    strerror(err != 0 ? err : ECONNREFUSED));
		return -1;
	}
	/* From here on, blocking, each step bounded. */
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

/* Send all of p; 0, or an errno. */
static int
otlp_http_send(int fd, const char *p, size_t len)
{
	ssize_t	n;

	while (len > 0) {
		if ((n = send(fd, p, len, MSG_NOSIGNAL)) == -1 &&
		    errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 ? EIO : errno == EAGAIN ? ETIMEDOUT :
			    errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read the answer's status code (the rest is not needed); -1 with why. */
static int
otlp_http_status(int fd, char *why, size_t len)
{
	char	buf[512];
	size_t	have = 0;
	ssize_t	n;
	int	code;

	while (have < sizeof buf - 1 && memchr(buf, '\n', have) == NULL) {
		if ((n = recv(fd, buf + have, sizeof buf - 1 - have, 0)) == -1 &&
		    errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(why, len, "no answer: %s", n == 0 ?
			    "the connection was closed" : errno == EAGAIN ?
			    "timed out" : strerror(errno));
			return -1;
		}
		have += (size_t)n;
	}
	buf[have] = '\0';
	if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1) {
		snprintf(why, len, "an answer that is not HTTP/1.x");
		return -1;
	}
	return code;
}

/*
 * POST one ExportTraceServiceRequest (body, len bytes) to u.  Returns 0,
 * or -1 with why.  A cancellation point in its connect, send, recv and
 * poll: the socket is closed on the way out.
 */
int
otlp_http_post(const struct otlp_url *u, const char *body, size_t len,
    char *why, size_t whylen)
{
	char		 head[1024];
	volatile int	 code = -1;	/* set between setjmp and a cancel */
	int		 fd, n, err;

	if ((fd = otlp_http_dial(u, why, whylen)) == -1)
		return -1;
	pthread_cleanup_push(otlp_http_close, &fd);
	n = snprintf(head, sizeof head, "POST %s HTTP/1.1\r\nHost: %s:%s\r\n"
	    "User-Agent: corral/%s\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n", u->path,
	    u->host, u->port, CORRAL_VERSION, len);
	if ((err = otlp_http_send(fd, head, (size_t)n)) != 0 ||
	    (err = otlp_http_send(fd, body, len)) != 0)
		snprintf(why, whylen, "sending: %s", strerror(err));
	else if ((code = otlp_http_status(fd, why, whylen)) != -1 &&
	    (code < 200 || code > 299))
		snprintf(why, whylen, "HTTP status %d", code);
	pthread_cleanup_pop(1);
	return code >= 200 && code <= 299 ? 0 : -1;
}
