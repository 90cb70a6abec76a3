/*
 * Unit tests for confine.c's policy: what a system lacks, by key, and
 * when required refuses; where a sub-agent may write when its parents'
 * layers stack.  The kernel is played with CORRAL_LANDLOCK and
 * CORRAL_NO_MOUNTNS, set before confine.c first asks.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "corral.h"

/* A list of roots from the arguments, NULL-terminated. */
static struct confine_roots
roots(const char *first, ...)
{
	struct confine_roots	 r = { NULL, 0 };
	const char		*p;
	va_list			 ap;

	va_start(ap, first);
	for (p = first; p != NULL; p = va_arg(ap, const char *)) {
		r.v = xreallocarray(r.v, r.n + 1, sizeof *r.v);
		r.v[r.n++] = xstrdup(p);
	}
	va_end(ap);
	return r;
}

/* The roots as one string, for comparing. */
static void
roots_text(const struct confine_roots *r, char *buf, size_t len)
{
	size_t	i;

	buf[0] = '\0';
	for (i = 0; i < r->n; i++) {
		if (i > 0)
			strlcat(buf, " ", len);
		strlcat(buf, r->v[i], len);
	}
}

/*
 * Layers intersect: a path stays writable where every layer allows it,
 * the narrower of two nested paths wins, a sibling whose name only
 * starts the same is not beneath, and the order is mounting order.
 */
static void
test_roots_meet(void **state)
{
	struct confine_roots	a, b;
	char			buf[256];

	(void)state;
	a = roots("/a", "/b/cc", "/ab", NULL);
	b = roots("/a/x", "/b", "/d", NULL);
	confine_roots_meet(&a, &b);
	roots_text(&a, buf, sizeof buf);
	assert_string_equal(buf, "/a/x /b/cc");
	confine_roots_free(&a);
	confine_roots_free(&b);

	a = roots("/", NULL);
	b = roots("/w/deep/er", "/w", NULL);
	confine_roots_meet(&a, &b);
	roots_text(&a, buf, sizeof buf);
	assert_string_equal(buf, "/w /w/deep/er");
	confine_roots_free(&a);
	confine_roots_free(&b);

	a = roots("/only", NULL);
	b = roots("/other", NULL);
	confine_roots_meet(&a, &b);
	assert_int_equal(a.n, 0);
	confine_roots_free(&a);
	confine_roots_free(&b);
}

/*
 * Landlock ABI 5 and no mount namespaces: what is missing, by key;
 * required refuses unless optional lists all of it; no Landlock at all
 * is refused whatever optional says.
 */
static void
test_gaps_required(void **state)
{
	struct confine	c;
	char		buf[1024];

	(void)state;
	if (confine_abi() != 5)
		skip();		/* a kernel before Landlock ABI 5 */
	memset(&c, 0, sizeof c);
	c.flags = CONFINE_ON | CONFINE_CONNECT;
	c.required = 1;
	assert_int_equal(confine_missing(&c), CONFINE_P_SIGNALS |
	    CONFINE_P_ABSTRACT | CONFINE_P_METADATA);
	assert_true(confine_refused(&c, buf, sizeof buf));
	assert_non_null(strstr(buf, "Landlock ABI 5 cannot stop signals to "
	    "processes outside its sandbox (corral, other agents) (signals), "
	    "stop connections to abstract unix sockets outside its sandbox "
	    "(abstract-sockets); no mount namespace"));
	assert_non_null(strstr(buf, "(metadata)"));
	c.optional = CONFINE_P_SIGNALS | CONFINE_P_ABSTRACT;
	assert_true(confine_refused(&c, buf, sizeof buf));
	assert_null(strstr(buf, "(signals)"));
	c.optional |= CONFINE_P_METADATA;
	assert_false(confine_refused(&c, buf, sizeof buf));
	assert_true(confine_gaps(&c, buf, sizeof buf));
	c.required = 0;
	c.optional = 0;
	assert_false(confine_refused(&c, buf, sizeof buf));
	/* Not confined: nothing is missing. */
	c.flags = 0;
	assert_int_equal(confine_missing(&c), 0);
}

/* The keys of optional: read back to their bits; an unknown one is 0. */
static void
test_protection_keys(void **state)
{
	static const char *const keys[] = { "truncate", "connect", "ioctl",
	    "signals", "abstract-sockets", "metadata", NULL };
	size_t	i;

	(void)state;
	for (i = 0; keys[i] != NULL; i++)
		assert_string_equal(confine_protection_key(
		    confine_protection(keys[i])), keys[i]);
	assert_int_equal(confine_protection("landlock"), 0);
	assert_int_equal(confine_protection("signal"), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roots_meet),
		cmocka_unit_test(test_gaps_required),
		cmocka_unit_test(test_protection_keys),
	};

	setenv("CORRAL_LANDLOCK", "5", 1);
	setenv("CORRAL_NO_MOUNTNS", "1", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
