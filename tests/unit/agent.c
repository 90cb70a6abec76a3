/*
 * unit/agent: an agent's place in the tree.  Its children, siblings and
 * depth are made when it first gets a parent or a child (most agents have
 * neither): a root agent keeps none, children are listed oldest first,
 * depth counts from the root, and a parent freed leaves its children
 * orphaned at their depth while the other links stay whole
 * (LeakSanitizer, in the sanitizer pass, sees a part left behind).
 * And the lifecycle's timer is made when first armed, not with the agent.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define CORRAL_WHITEBOX 1
#include "corral.h"

/* The ids of an agent's children, oldest first, space-separated. */
static const char *
kids(const struct agent *a)
{
	static char	 buf[256];
	struct agent	*c, *n;
	size_t		 used = 0;

	buf[0] = '\0';
	AGENT_FOREACH_CHILD_SAFE(c, a, n)
		used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s",
		    used > 0 ? " " : "", c->id);
	return buf;
}

/* Roots keep no tree part; children and parents do, and are linked. */
static void
test_kin(void **state)
{
	struct agent_conf	 ac;
	struct agent		*r, *lone, *c1, *c2, *g, *c;
	unsigned int		 n = 0;

	(void)state;
	memset(&ac, 0, sizeof ac);
	ac.name = "w";
	ac.instances = 2;
	r = agent_create(&ac, 1, NULL);
	lone = agent_create(&ac, 2, NULL);
	assert_null(r->kin);
	assert_int_equal(agent_depth(r), 0);
	assert_int_equal(agent_nchildren(r), 0);
	assert_null(agent_first_child(r));
	assert_null(agent_next_sibling(r));

	c1 = agent_create(&ac, 0, r);
	c2 = agent_create(&ac, 0, r);
	g = agent_create(&ac, 0, c1);
	assert_null(lone->kin);
	assert_int_equal(agent_depth(c1), 1);
	assert_int_equal(agent_depth(g), 2);
	assert_int_equal(agent_nchildren(r), 2);
	assert_int_equal(agent_nchildren(c1), 1);
	assert_ptr_equal(agent_first_child(r), c1);
	assert_ptr_equal(agent_next_sibling(c1), c2);
	assert_null(agent_next_sibling(c2));
	assert_null(agent_next_sibling(g));
	AGENT_FOREACH_CHILD(c, r)
		n++;
	assert_int_equal(n, 2);
	assert_string_equal(kids(r), "w-1 w-2");

	/* A parent freed: its child is an orphan at its depth. */
	agent_mark_dead(c1);
	agent_reap_dead(0);
	assert_null(g->parent);
	assert_int_equal(agent_depth(g), 2);
	assert_int_equal(agent_nchildren(r), 1);
	assert_string_equal(kids(r), "w-2");
	assert_null(agent_next_sibling(c2));

	agent_reap_dead(1);
}

/*
 * An agent made with its lifecycle has no life timer until one is armed
 * (a stop step, a backoff, heartbeats: off by default).
 */
static void
test_no_timer(void **state)
{
	struct agent_conf	 ac;
	struct agent		*a;

	(void)state;
	memset(&ac, 0, sizeof ac);
	ac.name = "t";
	ac.instances = 1;
	a = lifecycle_create(&ac, 1, NULL);
	assert_null(a->life.life_w);
	assert_int_equal(lifecycle_state(a), AS_STOPPED);
	agent_reap_dead(1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kin),
		cmocka_unit_test(test_no_timer),
	};

	if (ev_default_loop(EVFLAG_AUTO) == NULL)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
