/*
 * The table of adapters: which name means which operations, and the
 * load-time check of an agent's adapter settings (docs/adapters.md).
 */

#include <stdio.h>
#include <string.h>

#include "corral.h"

static const struct adapter_ops *adapter_table[] = {
	&adapter_exec_ops,
	&adapter_claude_ops,
	&adapter_codex_ops,
	&adapter_gemini_ops,
	&adapter_mcp_ops,
	NULL
};

/* Find an adapter's operations by name; NULL for none or "ndjson". */
const struct adapter_ops *
adapter_table_find(const char *name)
{
	size_t	i;

	if (name == NULL || strcmp(name, "ndjson") == 0)
		return NULL;
	/* Not the user's to name: corral replay gives it, to every agent. */
	if (strcmp(name, adapter_replay_ops.name) == 0)
		return adapter_replay_active() ? &adapter_replay_ops : NULL;
	for (i = 0; adapter_table[i] != NULL; i++)
		if (strcmp(adapter_table[i]->name, name) == 0)
			return adapter_table[i];
	return NULL;
}

/*
 * Say that there is no adapter called name: the one probably meant, and
 * the ones there are.
 */
static void
adapter_table_unknown(const char *name, char *why, size_t len)
{
	const char	*names[sizeof adapter_table / sizeof adapter_table[0] +
			    1], *near;
	char		 list[256] = "ndjson";
	size_t		 i;

	names[0] = "ndjson";
	for (i = 0; adapter_table[i] != NULL; i++) {
		names[i + 1] = adapter_table[i]->name;
		strlcat(list, ", ", sizeof list);
		strlcat(list, adapter_table[i]->name, sizeof list);
	}
	names[i + 1] = NULL;
	if ((near = util_nearest(name, names)) != NULL)
		snprintf(why, len, "no adapter '%s' (did you mean '%s'? the "
		    "adapters are %s)", name, near, list);
	else
		snprintf(why, len, "no adapter '%s' (the adapters are %s)",
		    name, list);
}

/* Check an agent's adapter settings at load time. */
int
adapter_table_check(const struct agent_conf *ac, char *why, size_t len)
{
	const struct adapter_ops	*ops;

	if (ac->adapter == NULL || strcmp(ac->adapter, "ndjson") == 0)
		return 0;
	if ((ops = adapter_table_find(ac->adapter)) == NULL) {
		adapter_table_unknown(ac->adapter, why, len);
		return -1;
	}
	return ops->check != NULL ? ops->check(ac, why, len) : 0;
}

/* Does the adapter called name run a process per request (exec)? */
int
adapter_table_per_call(const char *name)
{
	const struct adapter_ops	*ops = adapter_table_find(name);

	return ops != NULL && ops->per_call;
}

/*
 * Where an adapter's CLI keeps its state, as a path of its environment:
 * a confined agent may write there (confine.c).  Kept here, beside the
 * names, so that each adapter's file stays about its protocol.
 */
const char *
adapter_table_home(const char *name)
{
	static const struct {
		const char	*name;
		const char	*home;
	} homes[] = {
		{ "claude", "$CLAUDE_CONFIG_DIR" },
		{ "codex", "$CODEX_HOME" },
		{ "gemini", "~/.gemini" },
	};
	size_t	i;

	for (i = 0; name != NULL && i < sizeof homes / sizeof homes[0]; i++)
		if (strcmp(homes[i].name, name) == 0)
			return homes[i].home;
	return NULL;
}
