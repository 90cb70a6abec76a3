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

/* The workflow's own intents, after the standard ones. */
static char	*protocol_extra[INTENT_EXTRA];
static uint8_t	 protocol_extra_q[INTENT_EXTRA];	/* jsonw_idq of each */
static size_t	 protocol_nextra;
static unsigned int protocol_gen;	/* protocol_set_intents calls */

static char	 protocol_run[16] = "corral";
static size_t	 protocol_runlen = 6;	/* its length */
static uint64_t	 protocol_seq;

/* Is the name s, of a length already known to match, the literal? */
#define PROTOCOL_IS(s, lit)	(memcmp((s), (lit), sizeof(lit) - 1) == 0)

/* Return the index of a workflow's own intent, or -1. */
static int __attribute__((noinline))
protocol_intent_extra(const char *s, size_t n)
{
	size_t	i;

	for (i = 0; i < protocol_nextra; i++) {
		if (strlen(protocol_extra[i]) == n &&
		    memcmp(protocol_extra[i], s, n) == 0)
			return INTENT_COUNT + (int)i;
	}
	return -1;
}

/*
 * Return the intent index for a name, or -1.  Every envelope asks: the
 * standard intents by a switch on the length, a comparison or three.
 */
int
protocol_intent(const char *s, size_t n)
{
	switch (n) {
	case 4:
		if (PROTOCOL_IS(s, "plan"))
			return INTENT_PLAN;
		break;
	case 5:
		if (PROTOCOL_IS(s, "route"))
			return INTENT_ROUTE;
		break;
	case 7:
		if (PROTOCOL_IS(s, "execute"))
			return INTENT_EXECUTE;
		if (PROTOCOL_IS(s, "analyze"))
			return INTENT_ANALYZE;
		if (PROTOCOL_IS(s, "reflect"))
			return INTENT_REFLECT;
		break;
	case 8:
		if (PROTOCOL_IS(s, "retrieve"))
			return INTENT_RETRIEVE;
		if (PROTOCOL_IS(s, "finalize"))
			return INTENT_FINALIZE;
		break;
	case 9:
		if (PROTOCOL_IS(s, "decompose"))
			return INTENT_DECOMPOSE;
		if (PROTOCOL_IS(s, "summarize"))
			return INTENT_SUMMARIZE;
		if (PROTOCOL_IS(s, "tool.call"))
			return INTENT_TOOL_CALL;
		break;
	}
	return protocol_intent_extra(s, n);
}

/* Return the name of an intent index ("*" for the fallback). */
const char *
protocol_intent_name(int i)
{
	if (i >= 0 && i < INTENT_COUNT)
		return protocol_intents[i];
	if (i >= INTENT_COUNT && (size_t)(i - INTENT_COUNT) < protocol_nextra)
		return protocol_extra[i - INTENT_COUNT];
	return "*";
}

/*
 * jsonw_idq of an intent's name (protocol_intent_name): the audit log
 * writes one a request, and need not measure and check it each time.
 */
unsigned
protocol_intent_q(int i)
{
	static uint8_t	q[INTENT_COUNT];	/* 0: not measured yet */

	if (i >= 0 && i < INTENT_COUNT) {
		if (q[i] == 0)
			q[i] = jsonw_idq(protocol_intents[i],
			    strlen(protocol_intents[i]));
		return q[i];
	}
	if (i >= INTENT_COUNT && (size_t)(i - INTENT_COUNT) < protocol_nextra)
		return protocol_extra_q[i - INTENT_COUNT];
	return 1 | JSONW_PLAIN;	/* "*" */
}

/*
 * Say what is wrong with a name for a workflow's own intent, or NULL: a
 * lowercase letter, then letters, digits, '.', '_' or '-', at most
 * INTENT_NAME_MAX bytes, and not a standard intent.
 */
const char *
protocol_intent_check(const char *name)
{
	size_t	i, n = strlen(name);

	if (n == 0 || n > INTENT_NAME_MAX)
		return "an intent is 1 to 32 bytes";
	if (name[0] < 'a' || name[0] > 'z')
		return "an intent starts with a lowercase letter";
	for (i = 1; i < n; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') ||
		    (name[i] >= '0' && name[i] <= '9') || name[i] == '.' ||
		    name[i] == '_' || name[i] == '-'))
			return "an intent has only lowercase letters, digits, "
			    "'.', '_' and '-'";
	for (i = 0; i < INTENT_COUNT; i++)
		if (strcmp(protocol_intents[i], name) == 0)
			return "it is a standard intent already";
	return NULL;
}

/*
 * Make the workflow's own intents known (checked names, at most
 * INTENT_EXTRA): they follow the standard ones, and replace any set
 * before, so each workflow loaded has its own.
 */
void
protocol_set_intents(char **names, size_t n)
{
	size_t	i;

	protocol_gen++;
	for (i = 0; i < protocol_nextra; i++)
		free(protocol_extra[i]);
	protocol_nextra = 0;
	for (i = 0; i < n && i < INTENT_EXTRA; i++) {
		protocol_extra_q[protocol_nextra] = jsonw_idq(names[i],
		    strlen(names[i]));
		protocol_extra[protocol_nextra++] = xstrdup(names[i]);
	}
}

/*
 * How many times the workflow's intents were set: a check's findings
 * kept across lines (envelope_check_memo) hold intents by number.
 */
unsigned int
protocol_intents_gen(void)
{
	return protocol_gen;
}

/* How many intents there are: the standard ones and the workflow's. */
size_t
protocol_intent_count(void)
{
	return INTENT_COUNT + protocol_nextra;
}

/* Every intent's name, joined with ", ", for a message. */
void
protocol_intent_list(char *buf, size_t len)
{
	size_t	i;

	buf[0] = '\0';
	for (i = 0; i < protocol_intent_count(); i++) {
		if (i > 0)
			strlcat(buf, ", ", len);
		strlcat(buf, protocol_intent_name((int)i), len);
	}
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
	protocol_runlen = strlen(protocol_run);
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
	size_t	n, k;

	/*
	 * Formatted by hand: one for every reflection and next action.  The
	 * parts are copied by their lengths (strlcpy copies a byte at a
	 * time), unless buf is too short for them.
	 */
	num[0] = '-';
	k = util_u64(num + 1, ++protocol_seq) + 1;
	if (protocol_runlen + k < len) {
		memcpy(buf, protocol_run, protocol_runlen);
		memcpy(buf + protocol_runlen, num, k);
		buf[protocol_runlen + k] = '\0';
		return buf;
	}
	num[k] = '\0';
	n = strlcpy(buf, protocol_run, len);
	if (n < len)
		strlcpy(buf + n, num, len - n);
	return buf;
}

/*
 * Two capability names are the same when they differ only in case and in
 * '-' for '_': a help request's CODE_REVIEW finds code-review.
 */
int
protocol_capability_equal(const char *x, const char *y)
{
	char	cx, cy;

	for (;; x++, y++) {
		cx = *x == '_' ? '-' : *x;
		cy = *y == '_' ? '-' : *y;
		if (cx >= 'A' && cx <= 'Z')
			cx += 'a' - 'A';
		if (cy >= 'A' && cy <= 'Z')
			cy += 'a' - 'A';
		if (cx != cy)
			return 0;
		if (cx == '\0')
			return 1;
	}
}

/* A capability's name: a string, or an object's name (or MAP's id). */
const char *
protocol_capability_name(json_t *c)
{
	const char	*n;

	if (json_is_string(c))
		return json_string_value(c);
	if ((n = json_string_value(json_object_get(c, "name"))) == NULL)
		n = json_string_value(json_object_get(c, "id"));
	return n;
}

/* Does a list of capabilities (names, or {name ...}) hold one of name? */
int
protocol_capability_in(json_t *list, const char *name)
{
	json_t		*c;
	const char	*n;
	size_t		 i;

	json_array_foreach(list, i, c)
		if ((n = protocol_capability_name(c)) != NULL &&
		    protocol_capability_equal(n, name))
			return 1;
	return 0;
}

/*
 * Does a MAP filter's list member key allow value v?  No member, or an
 * empty list, allows everything; otherwise one of its strings must be v.
 */
int
protocol_filter_allows(json_t *filter, const char *key, const char *v)
{
	json_t	*a = json_object_get(filter, key), *x;
	size_t	 i;

	if (json_array_size(a) == 0)
		return 1;
	if (v == NULL)
		return 0;
	json_array_foreach(a, i, x)
		if (json_is_string(x) && strcmp(json_string_value(x), v) == 0)
			return 1;
	return 0;
}

/*
 * Read a number a peer gave (obj's member key) before anything converts
 * it: returns 0 when it is absent or null (*out untouched), 1 with *out
 * when it is a number in [min, max], -1 when it is not a number or lies
 * outside, unless clamp: then the nearest bound is taken.  Every number
 * a client or an agent gives the control plane goes through here, so
 * that none reaches a cast to a type it does not fit (1e300 as a
 * uint64_t is undefined behaviour).
 */
int
protocol_number(json_t *obj, const char *key, double min, double max,
    int clamp, double *out)
{
	json_t	*v = json_object_get(obj, key);
	double	 d;

	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_number(v))
		return -1;
	/* jansson holds integers as long long and reals as finite doubles. */
	d = json_number_value(v);
	if (d < min || d > max) {
		if (!clamp)
			return -1;
		d = d < min ? min : max;
	}
	*out = d;
	return 1;
}

/* Is s a usable agent name: letters, digits, '_' and '-', 1 to 48? */
int
protocol_agent_name(const char *s)
{
	const char	*p;

	if (*s == '\0' || strlen(s) > 48)
		return 0;
	for (p = s; *p != '\0'; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
			return 0;
	}
	return 1;
}
