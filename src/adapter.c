/*
 * Adapters: agents that do not speak envelopes themselves (docs/adapters.md).
 *
 * An agent's workflow entry may name an adapter.  The adapter sits between
 * the engine and the process: it turns each request envelope into what the
 * tool reads, and what the tool writes back into reply envelopes.  The
 * default, "ndjson", is no adapter at all: the agent speaks envelopes.
 *
 * This file is the dispatch table; each adapter lives in adapter-NAME.c.
 */

#include <string.h>

#include "corral.h"

static const struct adapter_ops *adapter_table[] = {
	NULL
};

/* Find an adapter's operations by name. */
const struct adapter_ops *
adapter_find(const char *name)
{
	size_t	i;

	for (i = 0; adapter_table[i] != NULL; i++)
		if (strcmp(adapter_table[i]->name, name) == 0)
			return adapter_table[i];
	return NULL;
}

/*
 * A line from an adapted agent's stdout.  Returns 0 when the adapter
 * consumed it, -1 to treat it as an envelope.
 */
int
adapter_line(struct agent *a, const char *line, size_t len)
{
	if (a->adapter == NULL || a->adapter->ops->line == NULL)
		return -1;
	return a->adapter->ops->line(a, line, len);
}

/* A JSON-RPC response from an adapted agent (MCP servers answer so). */
void
adapter_response(struct agent *a, json_t *frame)
{
	if (a->adapter != NULL && a->adapter->ops->response != NULL)
		a->adapter->ops->response(a, frame);
}
