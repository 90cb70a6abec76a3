/*
 * The dialects corral speaks, one row each: the names protocol: takes in
 * a workflow entry.  The first row is the default.  Adding a dialect is
 * its file (dialect-NAME.c) and a row here; docs/protocol.md's table of
 * dialects is held to this one by a unit test.
 */

#include <string.h>

#include "corral.h"
#include "dialect-int.h"

const struct dialect *const dialect_table[] = {
	&dialect_multiagent,
	&dialect_map,
	&dialect_bus,
	&dialect_agentmessage,
	&dialect_adr007,
	NULL
};

/* The dialect named name (NULL: the default), or NULL when there is none. */
const struct dialect *
dialect_find(const char *name)
{
	size_t	i;

	if (name == NULL)
		return dialect_table[0];
	for (i = 0; dialect_table[i] != NULL; i++)
		if (strcmp(dialect_table[i]->name, name) == 0)
			return dialect_table[i];
	return NULL;
}

/* The name of the i-th dialect (from 0), or NULL past the last. */
const char *
dialect_table_name(size_t i)
{
	size_t	n;

	for (n = 0; dialect_table[n] != NULL; n++)
		if (n == i)
			return dialect_table[n]->name;
	return NULL;
}
