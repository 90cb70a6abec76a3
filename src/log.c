/*
 * Logging to stderr, in the manner of the OpenBSD daemons: log_warn and
 * friends once the loop runs, fatal only for corral's own broken
 * invariants.  Bytes that come from agents are escaped before they are
 * written, so an agent cannot drive the user's terminal.
 */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define LIBBSD_NETBSD_VIS
#include <vis.h>

#include "corral.h"

static int		 log_verbose;
static const char	*log_prog = "corral";
static void		(*log_hook)(int);

/* Set the verbosity: 0 warnings, 1 info (-v), 2 debug (-vv), 3 trace. */
void
log_init(int verbose)
{
	log_verbose = verbose;
}

/* Return the verbosity. */
int
log_get_verbose(void)
{
	return log_verbose;
}

/*
 * Install a hook called with 0 before and 1 after every line, so the
 * progress view can erase itself and redraw below the line.
 */
void
log_set_hook(void (*hook)(int))
{
	log_hook = hook;
}

/* Write one complete line to stderr with a single write. */
static void
log_write(const char *line, size_t len)
{
	ssize_t	n;

	if (log_hook != NULL)
		log_hook(0);
	while (len > 0) {
		n = write(STDERR_FILENO, line, len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			break;	/* nowhere left to complain */
		}
		line += n;
		len -= (size_t)n;
	}
	if (log_hook != NULL)
		log_hook(1);
}

/* Format a message with an optional errno suffix and write it. */
static void __attribute__((format(printf, 3, 0)))
log_vemit(int with_errno, int saved_errno, const char *fmt, va_list ap)
{
	char	buf[4096];
	int	n, m;

	n = snprintf(buf, sizeof buf, "%s: ", log_prog);
	m = vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
	if (m < 0)
		m = 0;
	n += m;
	if ((size_t)n >= sizeof buf - 64)
		n = sizeof buf - 64;
	if (with_errno)
		n += snprintf(buf + n, sizeof buf - (size_t)n, ": %s",
		    strerror(saved_errno));
	buf[n++] = '\n';
	log_write(buf, (size_t)n);
}

/* Log a line of corral run --trace: always shown, as a warning is. */
void
log_trace(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vemit(0, 0, fmt, ap);
	va_end(ap);
}

/* Log a warning with the errno text appended. */
void
log_warn(const char *fmt, ...)
{
	va_list	ap;
	int	saved = errno;

	va_start(ap, fmt);
	log_vemit(1, saved, fmt, ap);
	va_end(ap);
	errno = saved;
}

/* Log a warning. */
void
log_warnx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vemit(0, 0, fmt, ap);
	va_end(ap);
}

/* Log an informational message, shown with -v. */
void
log_info(const char *fmt, ...)
{
	va_list	ap;

	if (log_verbose < 1)
		return;
	va_start(ap, fmt);
	log_vemit(0, 0, fmt, ap);
	va_end(ap);
}

/* Log a debug message, shown with -vv. */
void
log_debug(const char *fmt, ...)
{
	va_list	ap;

	if (log_verbose < 2)
		return;
	va_start(ap, fmt);
	log_vemit(0, 0, fmt, ap);
	va_end(ap);
}

/* Log our own broken invariant with errno, and exit. */
void
fatal(const char *fmt, ...)
{
	va_list	ap;
	int	saved = errno;

	va_start(ap, fmt);
	log_vemit(1, saved, fmt, ap);
	va_end(ap);
	exit(70);
}

/* Log our own broken invariant and exit. */
void
fatalx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vemit(0, 0, fmt, ap);
	va_end(ap);
	exit(70);
}

/*
 * Escape untrusted bytes into dst (always terminated).  Long input is
 * cut and marked, so one line from an agent cannot flood the log.
 */
size_t
log_escape(char *dst, size_t dstlen, const char *src, size_t len)
{
	size_t	max;
	int	n;

	if (dstlen < 8)
		fatalx("log_escape: buffer too small");
	/* Each byte can expand to four (\ooo). */
	max = (dstlen - 8) / 4;
	if (len > max)
		len = max;
	/* Not VIS_SAFE: it would pass BEL, backspace and CR to a terminal. */
	n = strnvisx(dst, dstlen, src, len, VIS_OCTAL | VIS_CSTYLE | VIS_TAB |
	    VIS_NL);
	if (n < 0)
		n = (int)strlen(dst);
	return (size_t)n;
}

/*
 * Log one line an agent wrote to its stderr, prefixed with its name.  A
 * line longer than 4096 bytes arrives cut (cut is nonzero) and says so.
 */
void
log_agent_line(const char *name, const char *line, size_t len, size_t cut)
{
	char	esc[4096 * 4 + 16], buf[sizeof esc + 256];
	int	n;

	log_escape(esc, sizeof esc, line, len);
	if (cut != 0)
		n = snprintf(buf, sizeof buf, "%s: %s [%zu more bytes cut]\n",
		    name, esc, cut);
	else
		n = snprintf(buf, sizeof buf, "%s: %s\n", name, esc);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof buf)
		n = sizeof buf - 1;
	log_write(buf, (size_t)n);
}
