/*
 * Differential fuzzing of corral's JSON scanner against jansson: jscan
 * must accept exactly what json_loadb(..., JSON_REJECT_DUPLICATES) accepts,
 * on every path this machine has (portable, SSE2, AVX2), and every path
 * must record the same tape and name the same error at the same offset.
 *
 * An input holding a newline is also two lines of a stream, scanned one
 * after the other with a memo (jscan_run_memo): the second must be
 * scanned as it is alone, on every path, and checked as an envelope
 * with the memo of envelope_check's findings beside the scanner's
 * (envelope_check_memo) as it is alone (tests/unit/env-diff.h says what
 * "the same" is).
 *
 * Inputs holding a NUL byte are skipped: jansson 2.14 loses a NUL that
 * follows a character it had to put back (so "[1\0]" loads), while corral
 * never scans such a line at all: the framer rejects any line with a NUL.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "../unit/env-diff.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* Abort unless b recorded what a did, or refused the line where a did. */
static void
same(const struct jscan *a, int ra, const struct jscan *b, int rb)
{
	uint32_t	i;

	if (ra != rb)
		abort();
	if (ra != 0) {
		if (a->err_off != b->err_off || strcmp(a->err, b->err) != 0)
			abort();
		return;
	}
	if (a->ntok != b->ntok || a->nvals != b->nvals)
		abort();
	for (i = 0; i < a->ntok; i++)
		if (memcmp(&a->tok[i], &b->tok[i], offsetof(struct jtok,
		    flags) + 1) != 0)
			abort();
}

/*
 * Abort unless line s, which js scanned with memo m (rm) and plain alone
 * (r), is checked through em as it is alone.
 */
static void
same_check(struct jscan *js, int rm, struct jscan *plain, int r,
    struct jscan_memo *m, struct env_memo *em, const char *s, size_t n)
{
	struct env		 a, b;
	struct env_error	 ea, eb;
	int			 ra, rb;

	if (rm != 0 || r != 0)
		return;
	ra = envelope_check_memo(js, s, n, &a, &ea, em, m);
	rb = envelope_check(plain, s, n, &b, &eb);
	if (env_diff(ra, &a, &ea, rb, &b, &eb) != NULL)
		abort();
}

/*
 * Scan and check line a, then b twice, then a, with fresh memos: b as
 * alone each time, and a after it.
 */
static void
memo_pair(const char *a, size_t na, const char *b, size_t nb)
{
	static struct jscan	*js, *plain;
	static struct jscan_memo *m;
	static struct env_memo	*em;
	int			 p, r, rm;

	if (js == NULL) {
		js = jscan_create(4);
		plain = jscan_create(4);
		m = jscan_memo_create();
		em = envelope_memo_create();
	}
	for (p = JSCAN_SCALAR; p <= JSCAN_AVX2; p++) {
		if (!jscan_path_has((enum jscan_path)p))
			continue;
		jscan_memo_reset(m);
		rm = jscan_run_memo_path(js, a, na, m, (enum jscan_path)p);
		r = jscan_run_path(plain, a, na, (enum jscan_path)p);
		same_check(js, rm, plain, r, m, em, a, na);
		r = jscan_run_path(plain, b, nb, (enum jscan_path)p);
		rm = jscan_run_memo_path(js, b, nb, m, (enum jscan_path)p);
		same(plain, r, js, rm);
		same_check(js, rm, plain, r, m, em, b, nb);
		rm = jscan_run_memo_path(js, b, nb, m, (enum jscan_path)p);
		same(plain, r, js, rm);
		same_check(js, rm, plain, r, m, em, b, nb);
		rm = jscan_run_memo_path(js, a, na, m, (enum jscan_path)p);
		r = jscan_run_path(plain, a, na, (enum jscan_path)p);
		same(plain, r, js, rm);
		same_check(js, rm, plain, r, m, em, a, na);
	}
	jscan_trim(js);
	jscan_trim(plain);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct jscan	*js[3];
	const uint8_t		*nl;
	json_error_t		 e;
	json_t			*j;
	int			 p, rc[3], theirs;

	if (js[0] == NULL)
		for (p = 0; p < 3; p++)
			js[p] = jscan_create(4);
	if (size > 1 << 16 || memchr(data, '\0', size) != NULL)
		return 0;
	j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &e);
	theirs = j != NULL;
	if (j != NULL)
		json_decref(j);
	for (p = JSCAN_SCALAR; p <= JSCAN_AVX2; p++) {
		if (!jscan_path_has((enum jscan_path)p))
			continue;
		rc[p] = jscan_run_path(js[p], (const char *)data, size,
		    (enum jscan_path)p);
		if ((rc[p] == 0) != theirs)
			abort();
		if (p > JSCAN_SCALAR)
			same(js[JSCAN_SCALAR], rc[JSCAN_SCALAR], js[p], rc[p]);
	}
	for (p = 0; p < 3; p++)
		jscan_trim(js[p]);
	if ((nl = memchr(data, '\n', size)) != NULL)
		memo_pair((const char *)data, (size_t)(nl - data),
		    (const char *)nl + 1, size - (size_t)(nl - data) - 1);
	return 0;
}
