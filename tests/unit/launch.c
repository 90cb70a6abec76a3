/*
 * Unit tests of launched agents (src/launch.c, docs/scale-out.md): the
 * placement rule, the expansion of a launcher's template, and what the
 * loader accepts and refuses in launch:.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "corral.h"

/* Round robin: the host chosen longest ago; ties go to the first. */
static void
test_pick_round_robin(void **state)
{
	struct launch_slot	s[3];

	memset(s, 0, sizeof s);
	assert_int_equal(launch_pick(LAUNCH_ROUND_ROBIN, s, 3, -1), 0);
	s[0].placed = 3;
	s[1].placed = 1;
	s[2].placed = 2;
	assert_int_equal(launch_pick(LAUNCH_ROUND_ROBIN, s, 3, -1), 1);
	/* Load does not matter to it. */
	s[1].agents = 9;
	assert_int_equal(launch_pick(LAUNCH_ROUND_ROBIN, s, 3, -1), 1);
	/* A host that is out is never chosen. */
	s[1].out = 1;
	assert_int_equal(launch_pick(LAUNCH_ROUND_ROBIN, s, 3, -1), 2);
}

/* Least loaded: fewest agents, then the one chosen longest ago. */
static void
test_pick_least_loaded(void **state)
{
	struct launch_slot	s[3];

	memset(s, 0, sizeof s);
	s[0].agents = 2;
	s[1].agents = 0;
	s[2].agents = 1;
	s[1].placed = 7;
	assert_int_equal(launch_pick(LAUNCH_LEAST_LOADED, s, 3, -1), 1);
	s[1].agents = 1;
	assert_int_equal(launch_pick(LAUNCH_LEAST_LOADED, s, 3, -1), 2);
	s[2].placed = 9;
	assert_int_equal(launch_pick(LAUNCH_LEAST_LOADED, s, 3, -1), 1);
}

/*
 * A host that failed the agent is avoided while another is usable, and
 * taken when it is the only one; with every host out there is none.
 */
static void
test_pick_avoid(void **state)
{
	struct launch_slot	s[2];

	memset(s, 0, sizeof s);
	assert_int_equal(launch_pick(LAUNCH_ROUND_ROBIN, s, 2, 0), 1);
	s[1].out = 1;
	assert_int_equal(launch_pick(LAUNCH_ROUND_ROBIN, s, 2, 0), 0);
	s[0].out = 1;
	assert_int_equal(launch_pick(LAUNCH_ROUND_ROBIN, s, 2, 0), -1);
	assert_int_equal(launch_pick(LAUNCH_LEAST_LOADED, s, 2, -1), -1);
}

/* Expand tmpl (n strings) over vars; compare with want (NULL-ended). */
static void
expect_argv(char *const *tmpl, size_t n, json_t *vars,
    const char *const *want)
{
	char	**got = launch_expand(tmpl, n, vars);
	size_t	  i;

	for (i = 0; want[i] != NULL; i++) {
		assert_non_null(got[i]);
		assert_string_equal(got[i], want[i]);
	}
	assert_null(got[i]);
	for (i = 0; got[i] != NULL; i++)
		free(got[i]);
	free(got);
}

/*
 * A placeholder alone in its element spreads a list into arguments
 * (srun, podman); a filter makes one string of it (ssh's | shell); in a
 * longer element a list goes in as JSON; strings go in as they are.
 */
static void
test_expand(void **state)
{
	json_t	*vars;
	char	*srun[] = { "srun", "--job-name={{agent.id}}", "{{ cmd }}" };
	char	*ssh[] = { "ssh", "-T", "{{host}}", "{{cmd | shell}}" };
	char	*odd[] = { "x", "a{{cmd}}", "{{nosuch}}", "{{env}}" };
	const char *const want_srun[] = { "srun", "--job-name=w.1", "corral",
	    "host", "--", "./a b", "it's", NULL };
	const char *const want_ssh[] = { "ssh", "-T", "beta",
	    "'corral' 'host' '--' './a b' 'it'\\''s'", NULL };
	const char *const want_odd[] = { "x",
	    "a[\"corral\",\"host\",\"--\",\"./a b\",\"it's\"]", "", NULL };

	vars = json_pack("{s:s, s:[sssss], s:[], s:{s:s}}", "host", "beta",
	    "cmd", "corral", "host", "--", "./a b", "it's", "env", "agent",
	    "id", "w.1");
	assert_non_null(vars);
	expect_argv(srun, 3, vars, want_srun);
	expect_argv(ssh, 4, vars, want_ssh);
	/* An empty list alone spreads into no argument at all. */
	expect_argv(odd, 4, vars, want_odd);
	json_decref(vars);
}

/* Load a workflow from a string; NULL with the error in err. */
static struct workflow *
load(const char *text, struct config_error *err)
{
	return config_load_string(text, strlen(text), "wf.yaml", err);
}

/* Does loading text fail with an error that holds want? */
static void
expect_refused(const char *text, const char *want)
{
	struct config_error	 err;
	struct workflow		*wf;

	memset(&err, 0, sizeof err);
	wf = load(text, &err);
	if (wf != NULL)
		fail_msg("loaded, expected an error with '%s':\n%s", want, text);
	if (strstr(err.msg, want) == NULL)
		fail_msg("error '%s', expected one with '%s'", err.msg, want);
}

/* launch: from defaults: merges with an entry's, member by member. */
static void
test_config_merge(void **state)
{
	struct config_error	 err;
	struct workflow		*wf;
	const struct launch_conf *l;

	wf = load("defaults:\n"
	    "  launch:\n"
	    "    argv: [ssh, -T, '{{host}}', '{{cmd | shell}}']\n"
	    "    hosts: [a, b]\n"
	    "    lost: 20s\n"
	    "agents:\n"
	    "  x:\n"
	    "    cmd: [x]\n"
	    "    launch: {hosts: [c], place: least-loaded}\n"
	    "  y:\n"
	    "    cmd: [y]\n", &err);
	assert_non_null(wf);
	l = &wf->agents[0].launch;
	assert_int_equal(l->argc, 4);
	assert_int_equal(l->nhosts, 1);
	assert_string_equal(l->hosts[0], "c");
	assert_int_equal(l->place, LAUNCH_LEAST_LOADED);
	assert_true(l->lost == 20.0);
	assert_true(l->alive == 2.0);
	assert_string_equal(l->corral, "corral");
	l = &wf->agents[1].launch;
	assert_int_equal(l->nhosts, 2);
	assert_int_equal(l->place, LAUNCH_ROUND_ROBIN);
	config_free(wf);
}

/* What launch: refuses, each with a message that says what to do. */
static void
test_config_refused(void **state)
{
	expect_refused("agents:\n  x:\n    cmd: [x]\n"
	    "    launch: {argv: ['{{host}}', x]}\n",
	    "the launcher's program (ssh, srun, podman ...), not a template");
	expect_refused("agents:\n  x:\n    cmd: [x]\n"
	    "    launch: {argv: [ssh, '{{hots}}']}\n",
	    "launch: has no 'hots' (it has host, cmd, argv, env, agent.id, "
	    "agent.name, run, corral, dir)");
	expect_refused("agents:\n  x:\n    cmd: [x]\n"
	    "    launch: {argv: [ssh, '{{cmd | quote}}']}\n",
	    "no filter 'quote'");
	expect_refused("agents:\n  x:\n    cmd: [x]\n"
	    "    launch: {argv: [ssh, '{{cmd}}'], alive: 5s, lost: 8s}\n",
	    "at least twice launch.alive");
	expect_refused("agents:\n  x:\n    adapter: {type: exec, argv: [x]}\n"
	    "    launch: {argv: [ssh, '{{cmd}}']}\n",
	    "runs a process per request");
	expect_refused("agents:\n  x:\n    cmd: [x]\n    confine: on\n"
	    "    launch: {argv: [ssh, '{{cmd}}']}\n",
	    "confine: cannot be enforced on another machine");
	expect_refused("agents:\n  x:\n    cmd: [x]\n"
	    "    launch: {argv: [ssh, '{{cmd}}'], hosts: [-oProxyCommand=x]}\n",
	    "is not a host name");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pick_round_robin),
		cmocka_unit_test(test_pick_least_loaded),
		cmocka_unit_test(test_pick_avoid),
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_config_merge),
		cmocka_unit_test(test_config_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
