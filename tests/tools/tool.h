/*
 * tool.h: small helpers shared by the regress scripts' test agents
 * (testagent, treeagent, relagent, wfagent, relgen).  Header-only, like
 * relcat.h, so each tool stays one source file.
 */

#ifndef TOOL_H
#define TOOL_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * Our pid as /proc names it.  In corral's pid namespace /proc is the
 * namespace's own, so this is the namespace pid; the regress scripts map
 * it to the host pid they can kill (lib.sh, host_pid).  Where /proc is
 * the host's (no namespace, or corral could not mount one), it is the
 * host pid itself.
 */
static inline long
tool_pid(void)
{
	char	buf[32];
	ssize_t	n;

	n = readlink("/proc/self", buf, sizeof buf - 1);
	if (n <= 0)
		return (long)getpid();
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

/* Seconds on the monotonic clock. */
static inline double
tool_mono(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleep ms milliseconds, across signals. */
static inline void
tool_msleep(long ms)
{
	struct timespec	ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* Write all of buf to fd, blocking. */
static inline int
tool_write_all(int fd, const char *buf, size_t len)
{
	ssize_t	n;

	while (len > 0) {
		n = write(fd, buf, len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * If line is a JSON-RPC ping, write its response (same id, empty result,
 * newline) to out and return its length; else return -1.
 */
static inline int
tool_ping_response(const char *line, char *out, size_t outlen)
{
	const char	*p;
	char		 id[64];
	size_t		 i;

	if (strstr(line, "\"method\":\"ping\"") == NULL ||
	    (p = strstr(line, "\"id\":")) == NULL)
		return -1;
	p += 5;
	for (i = 0; p[i] != '\0' && p[i] != ',' && p[i] != '}' &&
	    i + 1 < sizeof id; i++)
		id[i] = p[i];
	id[i] = '\0';
	return snprintf(out, outlen, "{\"jsonrpc\":\"2.0\",\"id\":%s,"
	    "\"result\":{}}\n", id);
}

/*
 * Append one line to the record file at path (nothing when path is NULL)
 * with a single write, so that lines of concurrent writers never mix; a
 * newline inside the text becomes a space.
 */
static inline void __attribute__((format(printf, 2, 3)))
tool_record(const char *path, const char *fmt, ...)
{
	va_list	 ap;
	char	*s = NULL, *p;
	int	 n, fd;

	if (path == NULL)
		return;
	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	for (p = s; *p != '\0'; p++)
		if (*p == '\n')
			*p = ' ';
	if ((fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
	    0600)) != -1) {
		s[n] = '\n';	/* vasprintf left room for the NUL */
		(void)tool_write_all(fd, s, (size_t)n + 1);
		close(fd);
	}
	free(s);
}

#endif
