/*
 * unit/proc: a process's stderr reader.  A stderr line whose hook closes
 * stderr, with the start of another line after it in the same read: the
 * reader, kept while it handed out its lines, is freed whole afterwards
 * (LeakSanitizer, in the sanitizer pass, sees a partial line's buffer
 * left behind).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#define CORRAL_WHITEBOX 1
#include "corral.h"

static struct proc	P;
static int		lines;

/* The first line releases the process's pipes, as a remote host's may. */
static int
errline(struct proc *p, const char *line, size_t len)
{
	(void)line;
	(void)len;
	if (++lines == 1)
		proc_abandon_pipes(p);
	return 1;
}

static const struct proc_hooks hooks = { .errline = errline };

/* Lines after the one that closed stderr are not handed out. */
static void
test_close_in_line(void **state)
{
	int	fd[2];

	(void)state;
	assert_non_null(ev_default_loop(EVFLAG_AUTO));
	assert_int_equal(pipe(fd), 0);
	proc_init(&P);
	P.hooks = &hooks;
	P.name = "x";
	ev_io_set(&P.err_w, fd[0], EV_READ);
	P.err_w.data = &P;
	ev_io_start(EV_DEFAULT, &P.err_w);
	assert_int_equal(write(fd[1], "first\nsecond-without-newline", 28), 28);
	ev_run(EV_DEFAULT, EVRUN_ONCE);
	assert_int_equal(lines, 1);
	assert_int_equal(P.err_w.fd, -1);
	assert_null(P.err_rd);
	proc_free(&P);
	close(fd[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_close_in_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
