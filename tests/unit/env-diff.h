/*
 * envelope_check_memo must answer as envelope_check does: the same
 * verdict, error code, path and message, and every finding of struct env
 * (a refused line's too, as far as the check got).  env_diff names the
 * first that differs, or returns NULL.  Shared by tests/unit/envelope.c
 * and tests/fuzz/fuzz_jscan_diff.c.
 */

#include <string.h>

#if defined(__LP64__)
_Static_assert(sizeof(struct env) == 112,
    "struct env changed: env_diff must compare every member");
#endif

/* Compare two doubles bit for bit (a NaN is never found, but say so). */
static int
env_diff_num(double a, double b)
{
	return memcmp(&a, &b, sizeof a) == 0;
}

/* Name what two checks' answers differ in, or NULL. */
static const char *
env_diff(int ra, const struct env *a, const struct env_error *ea, int rb,
    const struct env *b, const struct env_error *eb)
{
	if (ra != rb)
		return "verdict";
	if ((ea->code == NULL) != (eb->code == NULL) || (ea->code != NULL &&
	    strcmp(ea->code, eb->code) != 0))
		return "err.code";
	if (strcmp(ea->path, eb->path) != 0)
		return "err.path";
	if (strcmp(ea->msg, eb->msg) != 0)
		return "err.msg";
#define ENV_DIFF_INT(f)	if (a->f != b->f) return #f
#define ENV_DIFF_NUM(f)	if (!env_diff_num(a->f, b->f)) return #f
	ENV_DIFF_INT(intent);
	ENV_DIFF_INT(role);
	ENV_DIFF_INT(ctype);
	ENV_DIFF_INT(has_score);
	ENV_DIFF_NUM(score);
	ENV_DIFF_INT(prio);
	ENV_DIFF_NUM(ttl);
	ENV_DIFF_INT(trace);
	ENV_DIFF_INT(trace_id);
	ENV_DIFF_INT(parents);
	ENV_DIFF_INT(timestamp);
	ENV_DIFF_INT(next_actions);
	ENV_DIFF_INT(content);
	ENV_DIFF_INT(corral);
	ENV_DIFF_INT(task);
	ENV_DIFF_INT(session);
	ENV_DIFF_INT(jsonrpc);
	ENV_DIFF_INT(agent_id);
	ENV_DIFF_NUM(tokens_in);
	ENV_DIFF_NUM(tokens_out);
	ENV_DIFF_NUM(cost);
#undef ENV_DIFF_INT
#undef ENV_DIFF_NUM
	return NULL;
}
