/*
 * The protocol's vocabulary: the intents of multiagent-1.0, priority
 * names, which failures are transient, and the trace ids corral makes.
 *
 * Everything that names a word of the wire format lives here, so the
 * workflow loader, the validator, the router and the adapters all agree
 * on it and none of them has to ask another.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

static const char *protocol_intents[INTENT_COUNT] = {
	"plan", "decompose", "execute", "route", "retrieve", "analyze",
	"summarize", "reflect", "finalize", "tool.call"
};

static const char *protocol_prios[PRIO_COUNT] = {
	"batch", "low", "normal", "high", "critical"
};

static char	 protocol_run[16] = "corral";
static uint64_t	 protocol_seq;

/* Return the intent index for a name, or -1. */
int
protocol_intent(const char *s, size_t n)
{
	int	i;

	for (i = 0; i < INTENT_COUNT; i++) {
		if (strlen(protocol_intents[i]) == n &&
		    memcmp(protocol_intents[i], s, n) == 0)
			return i;
	}
	return -1;
}

/* Return the name of an intent index ("*" for the fallback). */
const char *
protocol_intent_name(int i)
{
	if (i >= 0 && i < INTENT_COUNT)
		return protocol_intents[i];
	return "*";
}

/* Name a priority; anything out of range reads as normal. */
const char *
protocol_priority_name(int p)
{
	return p >= 0 && p < PRIO_COUNT ? protocol_prios[p] : "normal";
}

/*
 * Return nonzero for failures that may pass: a timeout, a lost agent, an
 * open circuit.  No agent at all, a full queue, a shutdown do not.
 */
int
protocol_transient(const char *code)
{
	return strcmp(code, "timeout") == 0 ||
	    strcmp(code, "agent_lost") == 0 ||
	    strcmp(code, "circuit_open") == 0;
}

/* Set the run id that prefixes every trace id corral makes. */
void
protocol_set_run(const char *run)
{
	strlcpy(protocol_run, run, sizeof protocol_run);
	protocol_seq = 0;
}

/* Return the run id. */
const char *
protocol_run_id(void)
{
	return protocol_run;
}

/* Make a trace id unique in this run: "<run>-<n>". */
const char *
protocol_new_id(char *buf, size_t len)
{
	char	num[24];
	size_t	n;

	/* Formatted by hand: one for every reflection and next action. */
	n = strlcpy(buf, protocol_run, len);
	num[0] = '-';
	num[util_u64(num + 1, ++protocol_seq) + 1] = '\0';
	if (n < len)
		strlcpy(buf + n, num, len - n);
	return buf;
}
