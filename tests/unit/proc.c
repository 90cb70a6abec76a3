/*
 * unit/proc: a process's stderr reader.  A stderr line whose hook closes
 * stderr, with the start of another line after it in the same read: the
 * reader, kept while it handed out its lines, is freed whole afterwards
 * (LeakSanitizer, in the sanitizer pass, sees a partial line's buffer
 * left behind).
 *
 * Every process's stderr is read through one shared epoll set: lines of
 * two processes reach each one's own hook and tail, and a line whose hook
 * closes the other process's stderr, while the other has bytes waiting,
 * leaves nothing to read on a closed process.
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
	proc_err_watch(&P, fd[0]);
	assert_int_equal(write(fd[1], "first\nsecond-without-newline", 28), 28);
	ev_run(EV_DEFAULT, EVRUN_ONCE);
	assert_int_equal(lines, 1);
	assert_false(proc_err_open(&P));
	/* The partial line's buffer is gone: LeakSanitizer says if not. */
	proc_free(&P);
	close(fd[1]);
}

static struct proc	Q[2];
static int		qlines[2];

/* Count a line of Q[i]; Q[0]'s first line closes Q[1]'s stderr. */
static int
qline(struct proc *p, const char *line, size_t len)
{
	int	i = p == &Q[0] ? 0 : 1;

	(void)line;
	(void)len;
	if (++qlines[i] == 1 && i == 0)
		proc_abandon_pipes(&Q[1]);
	return 0;
}

static const struct proc_hooks qhooks = { .errline = qline };

/* Run the loop until n turns found nothing more to do. */
static void
spin(void)
{
	int	i;

	for (i = 0; i < 8; i++)
		ev_run(EV_DEFAULT, EVRUN_NOWAIT);
}

/* Two processes' stderr, one watcher: each line to its own process. */
static void
test_shared_set(void **state)
{
	int	a[2], b[2];
	size_t	len;

	(void)state;
	assert_non_null(ev_default_loop(EVFLAG_AUTO));
	assert_int_equal(pipe(a), 0);
	assert_int_equal(pipe(b), 0);
	proc_init(&Q[0]);
	proc_init(&Q[1]);
	Q[0].hooks = Q[1].hooks = &qhooks;
	Q[0].name = "q0";
	Q[1].name = "q1";
	Q[0].flags = Q[1].flags = PROC_QUIET;
	proc_err_watch(&Q[0], a[0]);
	proc_err_watch(&Q[1], b[0]);
	assert_true(proc_err_open(&Q[0]));
	assert_true(proc_err_open(&Q[1]));

	/* Q[1] alone: its line, in its own tail. */
	assert_int_equal(write(b[1], "from q1\n", 8), 8);
	spin();
	assert_int_equal(qlines[1], 1);
	assert_int_equal(qlines[0], 0);
	assert_string_equal(proc_stderr_tail(&Q[1], &len), "from q1\n");
	assert_string_equal(proc_stderr_tail(&Q[0], &len), "");

	/* Both ready; Q[0]'s line closes Q[1], whose bytes are not read. */
	assert_int_equal(write(b[1], "late\n", 5), 5);
	assert_int_equal(write(a[1], "from q0\n", 8), 8);
	spin();
	assert_int_equal(qlines[0], 1);
	assert_false(proc_err_open(&Q[1]));
	assert_true(proc_err_open(&Q[0]));
	assert_string_equal(proc_stderr_tail(&Q[0], &len), "from q0\n");
	/* Either order: Q[1]'s late line came first, or never. */
	assert_true(qlines[1] == 1 || qlines[1] == 2);

	/* EOF closes Q[0]'s stderr. */
	close(a[1]);
	spin();
	assert_false(proc_err_open(&Q[0]));
	assert_true(Q[0].flags & PROC_ERR_EOF);
	proc_free(&Q[0]);
	proc_free(&Q[1]);
	close(b[1]);
}

static struct proc	*F[2];
static int		 flines[2];

/* Count a line; F[0]'s first line frees F[1] whole, as a freed owner does. */
static int
fline(struct proc *p, const char *line, size_t len)
{
	int	i = p == F[0] ? 0 : 1;

	(void)line;
	(void)len;
	if (++flines[i] == 1 && i == 0) {
		proc_free(F[1]);
		free(F[1]);
		F[1] = NULL;
	}
	return 0;
}

static const struct proc_hooks fhooks = { .errline = fline };

/*
 * F[0] has bytes first, then F[1]: F[0]'s line frees F[1] while F[1] is
 * ready in the set.  Nothing reads the freed process (AddressSanitizer).
 */
static void
test_shared_set_free(void **state)
{
	int	a[2], b[2];

	(void)state;
	assert_non_null(ev_default_loop(EVFLAG_AUTO));
	assert_int_equal(pipe(a), 0);
	assert_int_equal(pipe(b), 0);
	F[0] = calloc(1, sizeof *F[0]);
	F[1] = calloc(1, sizeof *F[1]);
	proc_init(F[0]);
	proc_init(F[1]);
	F[0]->hooks = F[1]->hooks = &fhooks;
	F[0]->name = "f0";
	F[1]->name = "f1";
	F[0]->flags = F[1]->flags = PROC_QUIET;
	proc_err_watch(F[0], a[0]);
	proc_err_watch(F[1], b[0]);
	/* F[0] ready first: its line is read first. */
	assert_int_equal(write(a[1], "from f0\n", 8), 8);
	assert_int_equal(write(b[1], "from f1\n", 8), 8);
	spin();
	assert_int_equal(flines[0], 1);
	assert_int_equal(flines[1], 0);
	assert_null(F[1]);
	proc_free(F[0]);
	free(F[0]);
	close(a[1]);
	close(b[1]);
}

/* A buffered partial line completed by the read whose line closes stderr. */
static void
test_close_after_partial(void **state)
{
	int	fd[2];

	(void)state;
	lines = 0;
	assert_int_equal(pipe(fd), 0);
	proc_init(&P);
	P.hooks = &hooks;
	P.name = "x";
	P.flags = PROC_QUIET;
	proc_err_watch(&P, fd[0]);
	assert_int_equal(write(fd[1], "par", 3), 3);
	spin();
	assert_int_equal(write(fd[1], "tial\nnext\nmore", 15), 15);
	spin();
	assert_true(lines >= 1);
	assert_false(proc_err_open(&P));
	proc_free(&P);
	close(fd[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_close_in_line),
		cmocka_unit_test(test_shared_set),
		cmocka_unit_test(test_shared_set_free),
		cmocka_unit_test(test_close_after_partial),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
