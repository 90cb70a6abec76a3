/*
 * Unit tests for chan.c's read side: lines put together across reads
 * (a long line's rest read into the reader's buffer), the reader made at
 * the first byte, a channel closed by one of its own lines, and a writer
 * closed while full.
 */

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "corral.h"

static size_t	nlines, lastlen, neof;
static int	close_on_line;
static char	lastc;

/* Count a line; close the channel if the test asks. */
static void
t_line(struct chan *c, enum ndjson_kind kind, char *line, size_t len,
    size_t extra)
{
	(void)extra;
	assert_int_equal(kind, NDJSON_LINE);
	nlines++;
	lastlen = len;
	lastc = len > 0 ? line[len - 1] : 0;
	if (close_on_line)
		chan_close(c);
}

/* Count an end of input. */
static void
t_eof(struct chan *c, int arg)
{
	(void)c;
	(void)arg;
	neof++;
}

static const struct chan_ops	t_ops = { t_line, t_eof, NULL, NULL };

/* A channel reading the pipe's read end; wfd gets its write end. */
static void
t_open(struct chan *c, int *wfd)
{
	int	p[2];

	assert_int_equal(pipe(p), 0);
	assert_int_equal(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
	chan_init(c, "t", p[0], -1, 1 << 20, NULL);
	c->ops = &t_ops;
	chan_start(c);
	*wfd = p[1];
	nlines = lastlen = neof = 0;
	close_on_line = 0;
}

/* Write all of buf, letting the loop read between pipe-fulls. */
static void
t_write(int fd, const char *buf, size_t len)
{
	ssize_t	n;

	while (len > 0) {
		n = write(fd, buf, len > 16384 ? 16384 : len);
		assert_true(n > 0);
		buf += n;
		len -= (size_t)n;
		ev_run(LOOP, EVRUN_NOWAIT);
	}
	ev_run(LOOP, EVRUN_NOWAIT);
}

/* No reader until a byte comes; lines across reads; a long line whole. */
static void
test_lines_across_reads(void **state)
{
	struct chan	 c;
	size_t		 big = 300 * 1024;
	char		*line;
	int		 wfd;

	(void)state;
	t_open(&c, &wfd);
	ev_run(LOOP, EVRUN_NOWAIT);
	assert_null(c.rd);		/* an idle peer holds no reader */
	t_write(wfd, "ab", 2);
	assert_non_null(c.rd);
	assert_int_equal(nlines, 0);
	t_write(wfd, "c\n", 2);
	assert_int_equal(nlines, 1);
	assert_int_equal(lastlen, 3);
	/* Past 32 KiB the rest is read into the reader's own buffer. */
	line = malloc(big + 1);
	assert_non_null(line);
	memset(line, 'x', big);
	line[big - 1] = 'y';
	line[big] = '\n';
	t_write(wfd, line, big + 1);
	free(line);
	assert_int_equal(nlines, 2);
	assert_int_equal(lastlen, big);
	assert_int_equal(lastc, 'y');
	close(wfd);
	ev_run(LOOP, EVRUN_NOWAIT);
	assert_int_equal(neof, 1);
	chan_close(&c);
	assert_null(c.rd);
}

/* A line that closes its own channel: the reader goes after the feed. */
static void
test_closed_by_its_line(void **state)
{
	static const char	 chunk[] = "a\nb\na partial line";
	struct chan		 c;
	int			 wfd;

	(void)state;
	t_open(&c, &wfd);
	close_on_line = 1;
	t_write(wfd, chunk, sizeof chunk - 1);
	assert_true(nlines >= 1);
	assert_int_equal(c.rfd, -1);
	assert_null(c.rd);		/* freed once its lines were out */
	close(wfd);
}

/*
 * A writer closed while full is neither full nor waited on: a reader
 * blocked on it would otherwise wait for good, as nothing drains it.
 */
static void
test_closed_writer_not_waited_on(void **state)
{
	struct chan	 r, w;
	char		 line[4096];
	int		 p[2], wfd;

	(void)state;
	t_open(&r, &wfd);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(fcntl(p[1], F_SETFL, O_NONBLOCK), 0);
	chan_init(&w, "w", -1, p[1], 4096, NULL);
	w.ops = &t_ops;
	memset(line, 'x', sizeof line);
	/* Queued, never flushed: the queue passes its high mark. */
	while (!chan_full(&w))
		chan_write_line(&w, line, sizeof line);
	chan_close_write(&w);
	assert_false(chan_full(&w));
	chan_block(&r, &w);
	/* Not held back: both lines of one read come out. */
	t_write(wfd, "a\nb\n", 4);
	assert_int_equal(nlines, 2);
	chan_close(&w);
	chan_close(&r);
	close(p[0]);
	close(wfd);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines_across_reads),
		cmocka_unit_test(test_closed_by_its_line),
		cmocka_unit_test(test_closed_writer_not_waited_on),
	};

	assert_non_null(ev_default_loop(0));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
