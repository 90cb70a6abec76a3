/*
 * MAP's subscription filters (SPEC.md 7.2), compiled once when a peer
 * subscribes or replays, and matched against every event.
 *
 * A filter comes as JSON (AND across members, OR within a list) and
 * stays as long as its subscription does, so its size is the peer's to
 * choose: 64 subscriptions with 61,000 entries each once cost corral
 * 326 MB, and every event 50 to 130 ms of comparisons.  So a filter is
 * bounded (EVENT_FILTER_STRINGS strings, EVENT_FILTER_TEXT bytes of
 * them), refused beyond that with the limit named, and compiled into one
 * allocation: each list sorted for a binary search, event type names
 * normalized in advance, metadataMatch values kept as canonical JSON
 * text.  Matching then costs a few comparisons and allocates nothing.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "event-int.h"

/* The lists of a filter, in the order of event_filter_keys. */
enum {
	EF_TYPES,		/* eventTypes, exact names (normalized) */
	EF_FROM_AGENTS,
	EF_FROM_ROLES,
	EF_ROLES,
	EF_CORR,
	EF_SCOPES,
	EF_PREFIXES,		/* eventTypes ending in .* (normalized, no *) */
	EF_NLISTS
};

static const char *const event_filter_keys[] = {
	"eventTypes", "fromAgents", "fromRoles", "roles", "correlationIds",
	"scopes"
};
#define EF_NKEYS	(sizeof event_filter_keys / sizeof event_filter_keys[0])

#define EF_DUMP	(JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY)

struct event_filter {
	size_t		 cost;		/* bytes, as allocated */
	int		 flags;
#define EF_TYPED	0x01	/* eventTypes is not empty */
#define EF_ANYTYPE	0x02	/* and holds "*" */
#define EF_FIELDS	0x08	/* reads more than the type */
	const char	**list[EF_NLISTS];
	size_t		 n[EF_NLISTS];
	const char	**mkey;		/* metadataMatch */
	const char	**mval;		/* its values, canonical JSON */
	size_t		 nmeta;
	const char	*slot[];	/* the pointers, then the strings */
};

/* Turn '_' and '-' into '.', so that every naming style compares equal. */
static void
event_filter_norm(char *s)
{
	for (; *s != '\0'; s++)
		if (*s == '_' || *s == '-')
			*s = '.';
}

/* Order two strings (for qsort and bsearch of a list). */
static int
event_filter_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Check a filter's shape and size: every list an array of strings,
 * metadataMatch an object, the bounds.  Counts its strings and their
 * bytes (NULs included).  Returns 0, or -1 with why.
 */
static int
event_filter_measure(json_t *f, size_t *nstr, size_t *nbytes, char *why,
    size_t len)
{
	json_t		*a, *x;
	const char	*k;
	size_t		 i, j;

	*nstr = *nbytes = 0;
	if (!json_is_object(f)) {
		snprintf(why, len, "filter must be an object");
		return -1;
	}
	for (j = 0; j < EF_NKEYS; j++) {
		k = event_filter_keys[j];
		if ((a = json_object_get(f, k)) == NULL)
			continue;
		if (!json_is_array(a)) {
			snprintf(why, len, "filter.%s must be an array of "
			    "strings", k);
			return -1;
		}
		json_array_foreach(a, i, x) {
			if (!json_is_string(x)) {
				snprintf(why, len, "filter.%s must be an array "
				    "of strings", k);
				return -1;
			}
			*nstr += 1;
			*nbytes += json_string_length(x) + 1;
		}
	}
	a = json_object_get(f, "metadataMatch");
	if (a != NULL && !json_is_object(a)) {
		snprintf(why, len, "filter.metadataMatch must be an object");
		return -1;
	}
	json_object_foreach(a, k, x) {
		*nstr += 1;
		*nbytes += strlen(k) + 1 + jsonw_dumpb(x, NULL, 0, EF_DUMP) + 1;
	}
	if (*nstr > EVENT_FILTER_STRINGS || *nbytes > EVENT_FILTER_TEXT) {
		snprintf(why, len, "the filter holds %zu strings (%zu bytes): a "
		    "filter holds at most %d strings and %d bytes of them, "
		    "its lists and metadataMatch together", *nstr, *nbytes,
		    EVENT_FILTER_STRINGS, EVENT_FILTER_TEXT);
		return -1;
	}
	return 0;
}

/* Copy s to *p (advancing it) and return the copy. */
static const char *
event_filter_put(char **p, const char *s, size_t n)
{
	char	*d = *p;

	memcpy(d, s, n);
	d[n] = '\0';
	*p += n + 1;
	return d;
}

/*
 * Fill eventTypes: names normalized, exact ones sorted in their list,
 * prefixes ("agent.*", kept without the '*') in theirs.
 */
static void
event_filter_types(struct event_filter *ef, json_t *a, const char ***slot,
    char **text)
{
	const char	*pre[EVENT_FILTER_STRINGS];
	json_t		*x;
	char		*d;
	size_t		 i, n, npre = 0;

	ef->list[EF_TYPES] = *slot;
	json_array_foreach(a, i, x) {
		ef->flags |= EF_TYPED;
		d = (char *)event_filter_put(text, json_string_value(x),
		    json_string_length(x));
		event_filter_norm(d);
		n = strlen(d);
		if (strcmp(d, "*") == 0)
			ef->flags |= EF_ANYTYPE;
		else if (n >= 2 && strcmp(d + n - 2, ".*") == 0) {
			d[n - 1] = '\0';
			pre[npre++] = d;
		} else
			*(*slot)++ = d;
	}
	ef->n[EF_TYPES] = (size_t)(*slot - ef->list[EF_TYPES]);
	qsort(ef->list[EF_TYPES], ef->n[EF_TYPES], sizeof *ef->list[EF_TYPES],
	    event_filter_cmp);
	ef->list[EF_PREFIXES] = *slot;
	ef->n[EF_PREFIXES] = npre;
	for (i = 0; i < npre; i++)
		*(*slot)++ = pre[i];
}

/* Fill the lists of a filter whose room was measured. */
static void
event_filter_fill(struct event_filter *ef, json_t *f, const char ***slot,
    char **text)
{
	json_t	*x;
	size_t	 i, j;

	event_filter_types(ef, json_object_get(f, "eventTypes"), slot, text);
	for (j = EF_FROM_AGENTS; j < EF_NKEYS; j++) {
		ef->list[j] = *slot;
		json_array_foreach(json_object_get(f, event_filter_keys[j]), i,
		    x)
			*(*slot)++ = event_filter_put(text, json_string_value(x),
			    json_string_length(x));
		ef->n[j] = (size_t)(*slot - ef->list[j]);
		qsort(ef->list[j], ef->n[j], sizeof *ef->list[j],
		    event_filter_cmp);
		/* A scope is read from the event's text. */
		if (ef->n[j] > 0 && j != EF_SCOPES)
			ef->flags |= EF_FIELDS;
	}
}

/*
 * Compile a filter (NULL: none, every event passes; *out NULL).
 * Returns 0, or -1 with why (the filter's shape, or its size).
 */
int
event_filter_compile(json_t *f, struct event_filter **out, char *why,
    size_t len)
{
	struct event_filter	 *ef;
	const char		**slot, *k;
	char			 *text, *end;
	json_t			 *md, *x;
	size_t			  nstr, nbytes, size;

	*out = NULL;
	if (f == NULL || json_is_null(f))
		return 0;
	if (event_filter_measure(f, &nstr, &nbytes, why, len) != 0)
		return -1;
	/* Room for each string's pointer, and a metadata value's too. */
	size = sizeof *ef + (nstr + nstr) * sizeof(char *) + nbytes;
	ef = xcalloc(1, size);
	ef->cost = size;
	end = (char *)ef + size;
	slot = ef->slot;
	text = (char *)(ef->slot + nstr + nstr);
	event_filter_fill(ef, f, &slot, &text);
	md = json_object_get(f, "metadataMatch");
	ef->mkey = slot;
	ef->mval = slot + json_object_size(md);
	json_object_foreach(md, k, x) {
		ef->mkey[ef->nmeta] = event_filter_put(&text, k, strlen(k));
		size = jsonw_dumpb(x, text, (size_t)(end - text), EF_DUMP);
		ef->mval[ef->nmeta++] = text;
		text[size] = '\0';
		text += size + 1;
	}
	*out = ef;
	return 0;
}

/* Free a compiled filter. */
void
event_filter_free(struct event_filter *ef)
{
	free(ef);
}

/* What a compiled filter costs, in bytes (0 for none). */
size_t
event_filter_cost(const struct event_filter *ef)
{
	return ef != NULL ? ef->cost : 0;
}

/*
 * What the filter reads of an event besides its type: EVENT_FIELDS_KEYS
 * (source, roles, agent, correlation id) and EVENT_FIELDS_TEXT (its
 * metadata).
 */
int
event_filter_fields(const struct event_filter *ef)
{
	if (ef == NULL)
		return 0;
	return ((ef->flags & EF_FIELDS) ? EVENT_FIELDS_KEYS : 0) |
	    (ef->nmeta > 0 || ef->n[EF_SCOPES] > 0 ? EVENT_FIELDS_TEXT : 0);
}

/* Is v in a sorted list (an empty list allows anything)? */
static int
event_filter_has(const struct event_filter *ef, int which, const char *v)
{
	if (ef->n[which] == 0)
		return 1;
	return v != NULL && bsearch(&v, ef->list[which], ef->n[which],
	    sizeof *ef->list[which], event_filter_cmp) != NULL;
}

/* Does event type t pass the filter's eventTypes? */
static int
event_filter_type(const struct event_filter *ef, const char *t)
{
	char		 nt[64];
	const char	*p = nt;
	size_t		 i;

	if (!(ef->flags & EF_TYPED) || (ef->flags & EF_ANYTYPE))
		return 1;
	strlcpy(nt, t, sizeof nt);
	event_filter_norm(nt);
	if (ef->n[EF_TYPES] > 0 && bsearch(&p, ef->list[EF_TYPES],
	    ef->n[EF_TYPES], sizeof *ef->list[EF_TYPES],
	    event_filter_cmp) != NULL)
		return 1;
	for (i = 0; i < ef->n[EF_PREFIXES]; i++)
		if (strncmp(nt, ef->list[EF_PREFIXES][i],
		    strlen(ef->list[EF_PREFIXES][i])) == 0)
			return 1;
	return 0;
}

/* The event's text as JSON, parsed once for every filter that reads it. */
static json_t *
event_filter_parsed(struct event_fields *e)
{
	if (!e->parsed) {
		e->parsed = 1;
		e->ev = json_loadb(e->text, e->len, 0, NULL);
	}
	return e->ev;
}

/*
 * Is the event one of the filter's scopes?  A scope's own events name it
 * in data.scopeId; a message's events name its address in data.to
 * (message_delivered: data.message.to), a scope as {scope} or as
 * {role, within}.
 */
static int
event_filter_scope(const struct event_filter *ef, struct event_fields *e)
{
	json_t		*data, *to;
	const char	*scope;

	if (ef->n[EF_SCOPES] == 0)
		return 1;
	data = json_object_get(event_filter_parsed(e), "data");
	if ((scope = json_string_value(json_object_get(data, "scopeId"))) !=
	    NULL)
		return event_filter_has(ef, EF_SCOPES, scope);
	if ((to = json_object_get(data, "to")) == NULL)
		to = json_object_get(json_object_get(data, "message"), "to");
	if ((scope = json_string_value(json_object_get(to, "scope"))) == NULL)
		scope = json_string_value(json_object_get(to, "within"));
	return event_filter_has(ef, EF_SCOPES, scope);
}

/* Does every metadataMatch pair appear in the event's data.metadata? */
static int
event_filter_meta(const struct event_filter *ef, struct event_fields *e)
{
	json_t	*md, *v;
	char	 buf[EVENT_FILTER_TEXT];
	size_t	 i, n, want;

	md = json_object_get(json_object_get(event_filter_parsed(e), "data"),
	    "metadata");
	for (i = 0; i < ef->nmeta; i++) {
		if ((v = json_object_get(md, ef->mkey[i])) == NULL)
			return 0;
		/* Equal JSON values have equal canonical text. */
		want = strlen(ef->mval[i]);
		n = jsonw_dumpb(v, buf, sizeof buf, EF_DUMP);
		if (n != want || memcmp(buf, ef->mval[i], n) != 0)
			return 0;
	}
	return 1;
}

/*
 * Does an event pass a filter (NULL: every event does)?  AND across
 * members, OR within a list.
 */
int
event_filter_match(const struct event_filter *ef, struct event_fields *e)
{
	if (ef == NULL)
		return 1;
	if (!event_filter_type(ef, e->type))
		return 0;
	if (!event_filter_has(ef, EF_FROM_AGENTS, e->source) ||
	    !event_filter_has(ef, EF_FROM_ROLES, e->srole) ||
	    !event_filter_has(ef, EF_ROLES, e->arole) ||
	    !event_filter_has(ef, EF_CORR, e->corr) ||
	    !event_filter_scope(ef, e))
		return 0;
	return ef->nmeta == 0 || event_filter_meta(ef, e);
}

/* Free what matching kept of an event (its parsed text). */
void
event_fields_done(struct event_fields *e)
{
	json_decref(e->ev);
	e->ev = NULL;
	e->parsed = 0;
}
