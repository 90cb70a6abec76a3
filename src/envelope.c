/*
 * multiagent-1.0 envelopes (seed 000): validation, and the few envelopes
 * corral writes itself.
 *
 * Validation walks the scanner's tape and checks every field seed 000
 * defines: presence of the required ones, types, the intent, role and
 * content.type enumerations, confidence.score in [0, 1], RFC 3339
 * timestamps, the shapes of artifacts, next_actions, resources and trace.
 * Members it does not know are left alone and passed on.  The first
 * problem found is reported with its field path ("outputs.next_actions[1]
 * .intent") and a sentence a person can act on.
 *
 * Changing an envelope (filling in trace.id, turning a weak reply into a
 * reflect request) splices the original bytes: the parts that do not
 * change are copied, never re-serialized.
 */

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

/* Append a string literal to a writer. */
#define ENV_LIT(w, lit)	ndjson_writer_add((w), (lit), sizeof(lit) - 1)

/* A member or value name and its length, known at compile time. */
struct env_name {
	const char	*s;
	size_t		 len;
};
#define NM(lit)	{ (lit), sizeof(lit) - 1 }

static const struct env_name resource_types[] = { NM("url"), NM("file"),
    NM("db"), NM("tool"), { NULL, 0 } };

/* Record a validation failure. */
static int __attribute__((format(printf, 3, 4)))
env_fail(struct env_error *err, const char *path, const char *fmt, ...)
{
	va_list	ap;

	err->code = "invalid_envelope";
	snprintf(err->path, sizeof err->path, "%s", path);
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	return -1;
}

/* Name a JSON type for messages. */
static const char *
env_type_name(int type)
{
	switch (type) {
	case JT_OBJECT:
		return "an object";
	case JT_ARRAY:
		return "an array";
	case JT_STRING:
		return "a string";
	case JT_NUMBER:
		return "a number";
	case JT_TRUE:
	case JT_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

/* Refuse token t for not having the given type. */
static int __attribute__((cold, noinline))
env_want_fail(struct jscan *js, int t, int type, struct env_error *err,
    const char *path)
{
	return env_fail(err, path, "%s must be %s, not %s", path,
	    env_type_name(type), env_type_name(js->tok[t].type));
}

/*
 * Check that token t has the given type: inline, as every member's
 * value is checked so, and the refusal apart.
 */
static inline int
env_want(struct jscan *js, int t, int type, struct env_error *err,
    const char *path)
{
	if (__builtin_expect(js->tok[t].type == type, 1))
		return 0;
	return env_want_fail(js, t, type, err, path);
}

/*
 * Is the scanned text v (vl bytes) the name?  The lengths first: most
 * names differ there.
 */
static inline int
env_name_is(const struct env_name *name, const char *v, size_t vl)
{
	return name->len == vl && memcmp(name->s, v, vl) == 0;
}

/* Return the index of a string token's value in a NULL-terminated list. */
static int
env_enum(struct jscan *js, const char *s, int t,
    const struct env_name *names)
{
	const char	*v;
	size_t		 len;
	int		 i;

	v = jscan_text(js, s, t, &len);
	for (i = 0; names[i].s != NULL; i++)
		if (env_name_is(&names[i], v, len))
			return i;
	return -1;
}

/* Return the intent index named by a string token, or -1. */
static int
env_intent(struct jscan *js, const char *s, int t)
{
	const char	*v;
	size_t		 len;

	v = jscan_text(js, s, t, &len);
	return protocol_intent(v, len);
}

/*
 * Names are told apart by a switch on their length and then one
 * comparison of a few bytes, which the compiler makes a load or two: an
 * envelope's every member goes through one of these.
 */
#define ENV_IS(v, lit)	(memcmp((v), (lit), sizeof(lit) - 1) == 0)

/* Which slot of an object's known members a name fills, or -1. */
typedef int env_slot_fn(const char *, size_t);

/* agent's members, in the order of their slots. */
static const char *const agent_names[] = { "id", "name", "model",
    "version" };

/* agent: id, name, model, version. */
static inline int
env_agent_slot(const char *v, size_t vl)
{
	switch (vl) {
	case 2:
		return ENV_IS(v, "id") ? 0 : -1;
	case 4:
		return ENV_IS(v, "name") ? 1 : -1;
	case 5:
		return ENV_IS(v, "model") ? 2 : -1;
	case 7:
		return ENV_IS(v, "version") ? 3 : -1;
	}
	return -1;
}

/* content: type, text. */
static inline int
env_content_slot(const char *v, size_t vl)
{
	if (vl != 4)
		return -1;
	return ENV_IS(v, "type") ? 0 : ENV_IS(v, "text") ? 1 : -1;
}

/* confidence: score, rationale, risks. */
static inline int
env_confidence_slot(const char *v, size_t vl)
{
	switch (vl) {
	case 5:
		return ENV_IS(v, "score") ? 0 : ENV_IS(v, "risks") ? 2 : -1;
	case 9:
		return ENV_IS(v, "rationale") ? 1 : -1;
	}
	return -1;
}

/* trace: id, parents, tags, cost. */
static inline int
env_trace_slot(const char *v, size_t vl)
{
	switch (vl) {
	case 2:
		return ENV_IS(v, "id") ? 0 : -1;
	case 7:
		return ENV_IS(v, "parents") ? 1 : -1;
	case 4:
		return ENV_IS(v, "tags") ? 2 : ENV_IS(v, "cost") ? 3 : -1;
	}
	return -1;
}

/* trace.cost's members, in the order of their slots. */
static const char *const cost_names[] = { "input_tokens", "output_tokens",
    "usd" };

/* trace.cost: input_tokens, output_tokens, usd. */
static inline int
env_cost_slot(const char *v, size_t vl)
{
	switch (vl) {
	case 12:
		return ENV_IS(v, "input_tokens") ? 0 : -1;
	case 13:
		return ENV_IS(v, "output_tokens") ? 1 : -1;
	case 3:
		return ENV_IS(v, "usd") ? 2 : -1;
	}
	return -1;
}

/*
 * Find an object's known members in one pass: out[i] is the value token
 * of the member slot() files under i, or -1.  Escaped keys are decoded
 * first.  Inlined with each slot function, whose switch then sits in the
 * loop.
 */
static inline __attribute__((always_inline)) void
env_members(struct jscan *js, const char *s, int obj, env_slot_fn *slot,
    int *out, size_t n)
{
	const struct jtok	*k;
	const char		*v;
	size_t			 i, vl, found = 0;
	uint32_t		 m, end;
	int			 x;

	for (i = 0; i < n; i++)
		out[i] = -1;
	if (js->tok[obj].flags & JT_OPAQUE)
		return;
	end = js->tok[obj].next;
	/*
	 * Keys are unique, decoded ones too (the scanner refuses duplicates
	 * at any depth): each slot is filled once at most, and the search
	 * stops when all n are.
	 */
	for (m = (uint32_t)obj + 1; m < end && found < n;
	    m = js->tok[m + 1].next) {
		k = &js->tok[m];
		if (k->flags & JT_ESCAPED)
			v = jscan_text(js, s, (int)m, &vl);
		else {
			v = s + k->off + 1;
			vl = k->len - 2;
		}
		if ((x = slot(v, vl)) >= 0) {
			out[x] = (int)m + 1;
			found++;
		}
	}
}

/* role: agent 0, user 1, system 2, tool 3, or -1. */
static int
env_role(struct jscan *js, const char *s, int t)
{
	const char	*v;
	size_t		 vl;

	v = jscan_text(js, s, t, &vl);
	switch (vl) {
	case 4:
		return ENV_IS(v, "user") ? 1 : ENV_IS(v, "tool") ? 3 : -1;
	case 5:
		return ENV_IS(v, "agent") ? 0 : -1;
	case 6:
		return ENV_IS(v, "system") ? 2 : -1;
	}
	return -1;
}

/* content.type: text, code, json, tool_result, error (CT_*), or -1. */
static int
env_ctype(struct jscan *js, const char *s, int t)
{
	const char	*v;
	size_t		 vl;

	v = jscan_text(js, s, t, &vl);
	switch (vl) {
	case 4:
		return ENV_IS(v, "text") ? CT_TEXT : ENV_IS(v, "code") ?
		    CT_CODE : ENV_IS(v, "json") ? CT_JSON : -1;
	case 5:
		return ENV_IS(v, "error") ? CT_ERROR : -1;
	case 11:
		return ENV_IS(v, "tool_result") ? CT_TOOL_RESULT : -1;
	}
	return -1;
}

/*
 * Is the string token t (a member's name or a string value) the n bytes
 * at name?  A plain one is compared where it lies; one with escapes,
 * decoded.
 */
static inline int
env_str_is(struct jscan *js, const char *s, uint32_t t, const char *name,
    size_t n)
{
	const struct jtok	*k = &js->tok[t];

	if (!(k->flags & JT_ESCAPED))
		return k->len == n + 2 && memcmp(s + k->off + 1, name, n) == 0;
	return jscan_str_equal(js, s + k->off, k->len, 1, name, n);
}
#define ENV_KEY_IS(js, s, i, lit)	env_str_is((js), (s), (i), (lit), \
	    sizeof(lit) - 1)

/* Refuse element i of an array that must hold strings only. */
static int __attribute__((cold, noinline))
env_strings_fail(struct env_error *err, const char *path, int i)
{
	char	p[128];

	snprintf(p, sizeof p, "%s[%d]", path, i);
	return env_fail(err, p, "%s must be a string", p);
}

/* Check an array whose elements must all be strings. */
static inline int
env_strings(struct jscan *js, int arr, struct env_error *err,
    const char *path)
{
	int	e, i = 0;

	if (env_want(js, arr, JT_ARRAY, err, path) != 0)
		return -1;
	for (e = jscan_first(js, arr); e != -1; e = jscan_next(js, arr, e), i++) {
		if (js->tok[e].type != JT_STRING)
			return env_strings_fail(err, path, i);
	}
	return 0;
}

/*
 * Format a field path: base, with [idx] when idx >= 0, with .key when key
 * is given.  Only ever done for an error: paths cost nothing on success.
 */
static const char *
env_path(char *buf, size_t len, const char *base, int idx, const char *key)
{
	if (idx >= 0)
		snprintf(buf, len, "%s[%d]%s%s", base, idx, key ? "." : "",
		    key ? key : "");
	else
		snprintf(buf, len, "%s%s%s", base, key ? "." : "", key ? key :
		    "");
	return buf;
}

/* Check that token t is a string; the path is built only on failure. */
static int
env_want_string(struct jscan *js, int t, struct env_error *err,
    const char *base, int idx, const char *key)
{
	char	p[128];

	if (js->tok[t].type == JT_STRING)
		return 0;
	return env_want(js, t, JT_STRING, err, env_path(p, sizeof p, base, idx,
	    key));
}

/* Check an optional string member of an object (base[idx].key). */
static int
env_opt_string(struct jscan *js, const char *s, int obj, const char *key,
    struct env_error *err, const char *base, int idx)
{
	int	t;

	if ((t = jscan_get(js, s, obj, key)) == -1)
		return 0;
	return env_want_string(js, t, err, base, idx, key);
}

/* Check a required string member of an object (base[idx].key). */
static int
env_req_string(struct jscan *js, const char *s, int obj, const char *key,
    struct env_error *err, const char *base, int idx)
{
	char	p[128];
	int	t;

	if ((t = jscan_get(js, s, obj, key)) == -1) {
		env_path(p, sizeof p, base, idx, key);
		return env_fail(err, p, "%s is required", p);
	}
	return env_want_string(js, t, err, base, idx, key);
}

/* Check "agent": {id, name, model, version?}, in one pass over it. */
static int
env_agent(struct jscan *js, const char *s, int t, struct env *env,
    struct env_error *err)
{
	char	p[128];
	int	f[4], i;

	if (env_want(js, t, JT_OBJECT, err, "agent") != 0)
		return -1;
	env_members(js, s, t, env_agent_slot, f, 4);
	/* What agents send: the loop below says what is wrong otherwise. */
	if (f[0] != -1 && f[1] != -1 && f[2] != -1 &&
	    js->tok[f[0]].type == JT_STRING && js->tok[f[1]].type == JT_STRING &&
	    js->tok[f[2]].type == JT_STRING && (f[3] == -1 ||
	    js->tok[f[3]].type == JT_STRING)) {
		env->agent_id = f[0];
		return 0;
	}
	for (i = 0; i < 4; i++) {
		if (f[i] == -1 && i < 3) {
			env_path(p, sizeof p, "agent", -1, agent_names[i]);
			return env_fail(err, p, "%s is required", p);
		}
		if (f[i] != -1 && env_want_string(js, f[i], err, "agent", -1,
		    agent_names[i]) != 0)
			return -1;
	}
	env->agent_id = f[0];
	return 0;
}

/* Check "inputs": {context?, resources?, parameters?}. */
static int
env_inputs(struct jscan *js, const char *s, int t, struct env *env,
    struct env_error *err)
{
	char	p[128];
	int	r, e, x, i = 0;

	if (env_want(js, t, JT_OBJECT, err, "inputs") != 0)
		return -1;
	if (env_opt_string(js, s, t, "context", err, "inputs", -1) != 0)
		return -1;
	if ((r = JSCAN_GET(js, s, t, "resources")) != -1) {
		if (env_want(js, r, JT_ARRAY, err, "inputs.resources") != 0)
			return -1;
		for (e = jscan_first(js, r); e != -1; e = jscan_next(js, r, e),
		    i++) {
			if (js->tok[e].type != JT_OBJECT) {
				env_path(p, sizeof p, "inputs.resources", i, NULL);
				return env_want(js, e, JT_OBJECT, err, p);
			}
			if (env_req_string(js, s, e, "type", err,
			    "inputs.resources", i) != 0 ||
			    env_req_string(js, s, e, "id", err,
			    "inputs.resources", i) != 0 ||
			    env_opt_string(js, s, e, "hint", err,
			    "inputs.resources", i) != 0)
				return -1;
			x = JSCAN_GET(js, s, e, "type");
			if (env_enum(js, s, x, resource_types) < 0) {
				snprintf(p, sizeof p, "inputs.resources[%d].type",
				    i);
				return env_fail(err, p, "%s must be one of url, "
				    "file, db, tool", p);
			}
		}
	}
	if ((r = JSCAN_GET(js, s, t, "parameters")) != -1) {
		if (env_want(js, r, JT_OBJECT, err, "inputs.parameters"))
			return -1;
		if ((x = JSCAN_GET(js, s, r, "ttl_ms")) != -1) {
			if (js->tok[x].type != JT_NUMBER ||
			    jscan_number(js, s, x) < 0)
				return env_fail(err, "inputs.parameters.ttl_ms",
				    "inputs.parameters.ttl_ms must be a "
				    "number of milliseconds, 0 or more");
			env->ttl = jscan_number(js, s, x) / 1000.0;
		}
	}
	return 0;
}

/* Check "content": {type, text?, data?}. */
static int
env_content(struct jscan *js, const char *s, int t, struct env *env,
    struct env_error *err)
{
	int	f[2];

	if (env_want(js, t, JT_OBJECT, err, "content") != 0)
		return -1;
	env_members(js, s, t, env_content_slot, f, 2);
	if (f[0] == -1)
		return env_fail(err, "content.type", "content.type is required "
		    "(text, code, json, tool_result or error)");
	if (env_want(js, f[0], JT_STRING, err, "content.type") != 0)
		return -1;
	if ((env->ctype = env_ctype(js, s, f[0])) < 0)
		return env_fail(err, "content.type", "content.type must be one "
		    "of text, code, json, tool_result, error");
	if (f[1] != -1 && env_want_string(js, f[1], err, "content", -1,
	    "text") != 0)
		return -1;
	return 0;
}

/* Check "outputs": {artifacts?, next_actions?}. */
static int
env_outputs(struct jscan *js, const char *s, int t, struct env *env,
    struct env_error *err)
{
	char	p[128];
	int	r, e, x, i;

	if (env_want(js, t, JT_OBJECT, err, "outputs") != 0)
		return -1;
	if ((r = JSCAN_GET(js, s, t, "artifacts")) != -1) {
		if (env_want(js, r, JT_ARRAY, err, "outputs.artifacts") != 0)
			return -1;
		i = 0;
		for (e = jscan_first(js, r); e != -1; e = jscan_next(js, r, e),
		    i++) {
			if (js->tok[e].type != JT_OBJECT) {
				env_path(p, sizeof p, "outputs.artifacts", i, NULL);
				return env_want(js, e, JT_OBJECT, err, p);
			}
			if (JSCAN_GET(js, s, e, "path") != -1) {
				/* Seed 002's form: a file for the workspace. */
				if (env_req_string(js, s, e, "path", err,
				    "outputs.artifacts", i) != 0 ||
				    env_opt_string(js, s, e, "content", err,
				    "outputs.artifacts", i) != 0 ||
				    env_opt_string(js, s, e, "kind", err,
				    "outputs.artifacts", i) != 0 ||
				    env_opt_string(js, s, e, "name", err,
				    "outputs.artifacts", i) != 0)
					return -1;
				if ((x = JSCAN_GET(js, s, e, "operation")) != -1) {
					static const struct env_name ops[] = {
					    NM("create"), NM("update"),
					    { NULL, 0 } };
					snprintf(p, sizeof p,
					    "outputs.artifacts[%d].operation", i);
					if (js->tok[x].type != JT_STRING ||
					    env_enum(js, s, x, ops) < 0)
						return env_fail(err, p, "%s must "
						    "be create or update", p);
				}
				continue;
			}
			if (env_req_string(js, s, e, "kind", err,
			    "outputs.artifacts", i) != 0 ||
			    env_req_string(js, s, e, "name", err,
			    "outputs.artifacts", i) != 0 ||
			    env_opt_string(js, s, e, "inline", err,
			    "outputs.artifacts", i) != 0)
				return -1;
			if ((x = JSCAN_GET(js, s, e, "uri")) != -1 &&
			    js->tok[x].type != JT_STRING &&
			    js->tok[x].type != JT_NULL) {
				snprintf(p, sizeof p, "outputs.artifacts[%d].uri",
				    i);
				return env_fail(err, p, "%s must be a string "
				    "or null", p);
			}
		}
	}
	if ((r = JSCAN_GET(js, s, t, "next_actions")) != -1) {
		if (env_want(js, r, JT_ARRAY, err, "outputs.next_actions"))
			return -1;
		i = 0;
		for (e = jscan_first(js, r); e != -1; e = jscan_next(js, r, e),
		    i++) {
			if (js->tok[e].type != JT_OBJECT) {
				env_path(p, sizeof p, "outputs.next_actions", i,
				    NULL);
				return env_want(js, e, JT_OBJECT, err, p);
			}
			if (env_req_string(js, s, e, "intent", err,
			    "outputs.next_actions", i) != 0 ||
			    env_req_string(js, s, e, "task", err,
			    "outputs.next_actions", i) != 0)
				return -1;
			x = JSCAN_GET(js, s, e, "intent");
			if (env_intent(js, s, x) < 0) {
				char list[INTENT_MAX * (INTENT_NAME_MAX + 2)];

				snprintf(p, sizeof p,
				    "outputs.next_actions[%d].intent", i);
				protocol_intent_list(list, sizeof list);
				return env_fail(err, p, "%s is not an intent "
				    "(%s)", p, list);
			}
			if ((x = JSCAN_GET(js, s, e, "args")) != -1 &&
			    js->tok[x].type != JT_OBJECT) {
				snprintf(p, sizeof p,
				    "outputs.next_actions[%d].args", i);
				return env_fail(err, p, "%s must be an object",
				    p);
			}
		}
		env->next_actions = r;
	}
	return 0;
}

/*
 * Read confidence.score.  Agents write "0.9" and the like: those are
 * read here as jscan_number reads them (the digits over ten, one
 * rounding), anything else by it.
 */
static inline double
env_score(struct jscan *js, const char *s, int t)
{
	const struct jtok	*k = &js->tok[t];
	const char		*p = s + k->off;
	unsigned int		 a, b;

	if (k->len == 3 && p[1] == '.' && (a = (unsigned char)(p[0] - '0')) <=
	    9 && (b = (unsigned char)(p[2] - '0')) <= 9)
		return (double)(a * 10 + b) / 10.0;
	return jscan_number(js, s, t);
}

/* Check "confidence": {score, rationale?, risks?}. */
static int
env_confidence(struct jscan *js, const char *s, int t, struct env *env,
    struct env_error *err)
{
	double	score;
	int	f[3];

	if (env_want(js, t, JT_OBJECT, err, "confidence") != 0)
		return -1;
	env_members(js, s, t, env_confidence_slot, f, 3);
	if (f[0] == -1)
		return env_fail(err, "confidence.score", "confidence.score is "
		    "required when confidence is given");
	if (env_want(js, f[0], JT_NUMBER, err, "confidence.score") != 0)
		return -1;
	score = env_score(js, s, f[0]);
	if (!(score >= 0.0 && score <= 1.0))
		return env_fail(err, "confidence.score", "confidence.score must "
		    "be between 0 and 1");
	env->has_score = 1;
	env->score = score;
	if (f[1] != -1 && env_want_string(js, f[1], err, "confidence", -1,
	    "rationale") != 0)
		return -1;
	if (f[2] != -1 && env_strings(js, f[2], err, "confidence.risks") != 0)
		return -1;
	return 0;
}

/* Check "trace": {parents?, id?, tags?, cost?}. */
static int
env_trace(struct jscan *js, const char *s, int t, struct env *env,
    struct env_error *err)
{
	size_t	len;
	int	x, c, f[4], cf[3], i;
	char	p[64];

	if (env_want(js, t, JT_OBJECT, err, "trace") != 0)
		return -1;
	env->trace = t;
	env_members(js, s, t, env_trace_slot, f, 4);
	if ((x = f[0]) != -1) {
		if (env_want(js, x, JT_STRING, err, "trace.id") != 0)
			return -1;
		(void)jscan_text(js, s, x, &len);
		if (len == 0 || len >= CORRAL_ID_MAX)
			return env_fail(err, "trace.id", "trace.id must be 1 to "
			    "%d bytes long", CORRAL_ID_MAX - 1);
		env->trace_id = x;
	}
	if ((x = f[1]) != -1) {
		if (env_strings(js, x, err, "trace.parents") != 0)
			return -1;
		env->parents = x;
	}
	if ((x = f[2]) != -1 && env_strings(js, x, err, "trace.tags") != 0)
		return -1;
	if ((x = f[3]) != -1) {
		if (env_want(js, x, JT_OBJECT, err, "trace.cost") != 0)
			return -1;
		env_members(js, s, x, env_cost_slot, cf, 3);
		for (i = 0; i < 3; i++) {
			if ((c = cf[i]) == -1)
				continue;
			if (js->tok[c].type != JT_NUMBER ||
			    jscan_number(js, s, c) < 0) {
				snprintf(p, sizeof p, "trace.cost.%s",
				    cost_names[i]);
				return env_fail(err, p, "%s must be a number, "
				    "0 or more", p);
			}
			if (i == 0)
				env->tokens_in = jscan_number(js, s, c);
			else if (i == 1)
				env->tokens_out = jscan_number(js, s, c);
			else
				env->cost = jscan_number(js, s, c);
		}
	}
	return 0;
}

/* Read the "priority" extension: a number 0-4 or a name. */
static int
env_priority(struct jscan *js, const char *s, int t, struct env *env,
    struct env_error *err)
{
	static const struct env_name names[] = { NM("batch"), NM("low"),
	    NM("normal"), NM("high"), NM("critical"), NM("urgent"), { NULL, 0 } };
	double	d;
	int	i;

	if (js->tok[t].type == JT_NUMBER) {
		d = jscan_number(js, s, t);
		if (d >= 0 && d <= 4 && d == floor(d)) {
			env->prio = (int)d;
			return 0;
		}
	} else if (js->tok[t].type == JT_STRING &&
	    (i = env_enum(js, s, t, names)) >= 0) {
		env->prio = i == 5 ? PRIO_CRITICAL : i;
		return 0;
	}
	return env_fail(err, "priority", "priority must be 0 to 4 or one of "
	    "batch, low, normal, high, critical");
}

/* Which required members an envelope has (envelope_check). */
#define ENV_HAVE_PROTOCOL	0x01
#define ENV_HAVE_ROLE		0x02
#define ENV_HAVE_TASK		0x04
#define ENV_HAVE_CONTENT	0x08

/*
 * The name of the member at token i, decoded into buf when it holds
 * escapes ("\u0074race" is "trace", checked like any other spelling);
 * NULL for an escaped name too long to be one we know.
 */
static inline const char *
env_key(struct jscan *js, const char *s, uint32_t i, char *buf, size_t size,
    size_t *len)
{
	const struct jtok	*k = &js->tok[i];
	const char		*v;

	if (!(k->flags & JT_ESCAPED)) {
		*len = k->len - 2;
		return s + k->off + 1;
	}
	v = jscan_text(js, s, (int)i, len);
	if (*len >= size)
		return NULL;
	memcpy(buf, v, *len);
	return buf;
}

/* The top-level members envelope_check knows. */
enum env_member {
	EM_OTHER, EM_PROTOCOL, EM_ROLE, EM_AGENT, EM_TIMESTAMP, EM_INTENT,
	EM_TASK, EM_INPUTS, EM_CONTENT, EM_OUTPUTS, EM_CONFIDENCE, EM_TRACE,
	EM_PRIORITY, EM_TTL_MS, EM_CORRAL, EM_SESSION, EM_JSONRPC
};

/* Name a top-level member: by its length, then its bytes. */
static inline enum env_member
env_member(const char *v, size_t vl)
{
	switch (vl) {
	case 4:
		return ENV_IS(v, "role") ? EM_ROLE : ENV_IS(v, "task") ?
		    EM_TASK : EM_OTHER;
	case 5:
		return ENV_IS(v, "agent") ? EM_AGENT : ENV_IS(v, "trace") ?
		    EM_TRACE : EM_OTHER;
	case 6:
		return ENV_IS(v, "intent") ? EM_INTENT : ENV_IS(v, "inputs") ?
		    EM_INPUTS : ENV_IS(v, "corral") ? EM_CORRAL :
		    ENV_IS(v, "ttl_ms") ? EM_TTL_MS : EM_OTHER;
	case 7:
		return ENV_IS(v, "content") ? EM_CONTENT : ENV_IS(v,
		    "outputs") ? EM_OUTPUTS : ENV_IS(v, "session") ?
		    EM_SESSION : ENV_IS(v, "jsonrpc") ? EM_JSONRPC : EM_OTHER;
	case 8:
		return ENV_IS(v, "protocol") ? EM_PROTOCOL : ENV_IS(v,
		    "priority") ? EM_PRIORITY : EM_OTHER;
	case 9:
		return ENV_IS(v, "timestamp") ? EM_TIMESTAMP : EM_OTHER;
	case 10:
		return ENV_IS(v, "confidence") ? EM_CONFIDENCE : EM_OTHER;
	}
	return EM_OTHER;
}

/* Refuse an envelope that lacks a required member (have: ENV_HAVE_*). */
static int
env_required(const struct env *env, int have, struct env_error *err)
{
	if (!(have & ENV_HAVE_PROTOCOL))
		return env_fail(err, "protocol", "protocol is required "
		    "(\"multiagent-1.0\")");
	if (!(have & ENV_HAVE_ROLE))
		return env_fail(err, "role", "role is required (agent, user, "
		    "system or tool)");
	if (env->intent < 0)
		return env_fail(err, "intent", "intent is required");
	if (!(have & ENV_HAVE_TASK))
		return env_fail(err, "task", "task is required: one sentence "
		    "saying what the message is for");
	if (!(have & ENV_HAVE_CONTENT))
		return env_fail(err, "content", "content is required, with at "
		    "least a type");
	return 0;
}

/* Start envelope_check's answer: nothing found, no error. */
static inline void
env_start(struct env *env, struct env_error *err)
{
	/*
	 * Field by field: a compound literal was zeroed whole first (a
	 * string instruction of 14 words), then written again.
	 */
	env->intent = -1;
	env->role = 0;
	env->ctype = 0;
	env->has_score = 0;
	env->score = 0;
	env->prio = PRIO_NORMAL;
	env->ttl = 0;
	env->trace = env->trace_id = env->parents = env->timestamp = -1;
	env->next_actions = env->content = env->corral = env->task = -1;
	env->session = -1;
	env->jsonrpc = 0;
	env->agent_id = -1;
	env->tokens_in = env->tokens_out = env->cost = 0;
	/* Not all 392 bytes: this runs for every envelope. */
	err->code = NULL;
	err->path[0] = err->msg[0] = '\0';
}

/*
 * What envelope_check found before a top-level member of the line a
 * scanner's memo keeps: its findings and which required members it had
 * seen, and the member's key token.
 */
struct env_snap {
	struct env	env;
	uint32_t	tok;
	int		have;
};

/*
 * A stream's memo of envelope_check's findings, beside its scanner's
 * memo (jscan_memo): s[k - 1] holds them before the top-level member k
 * (k = 1..n) of the line the scanner's memo kept under stamp gen.  A
 * line the scan resumed at member j under that stamp has, bytes and
 * tokens, that line's members 0..j-1; their checks read nothing else
 * (duplicate keys are the scan's; the workflow's intents, by number,
 * are the same while intents is), so their findings are those kept, and
 * its check starts at member j with them.  Only the first members: an
 * agent's envelopes begin with protocol, role, agent, timestamp,
 * intent and task.
 */
#define ENV_MEMO_SNAPS	8
struct env_memo {
	uint64_t	gen;		/* the scanner memo's stamp */
	uint32_t	n;		/* findings kept: s[0..n-1] */
	unsigned int	intents;	/* protocol_intents_gen then */
	struct env_snap	s[ENV_MEMO_SNAPS];
};

/*
 * Keep in rec the findings before member k (key token i), from the
 * second member to the limth, unless rec has them.
 */
static inline void
env_keep(struct env_memo *rec, uint32_t k, uint32_t lim,
    const struct env *env, uint32_t i, int have)
{
	if (k > rec->n && k <= lim) {
		rec->s[k - 1].env = *env;
		rec->s[k - 1].tok = i;
		rec->s[k - 1].have = have;
		rec->n = k;
	}
}

/*
 * Check the top-level members from key token i on, with the findings
 * and have bits of those before it; with rec, keep the findings before
 * each member from the (k + 1)th (k: the members before i) up to the
 * limth in rec.  One function for both: two inlined copies, one keeping
 * and one not, left the member checks it calls out of line.
 */
static int
env_walk1(struct jscan *js, const char *s, struct env *env,
    struct env_error *err, uint32_t i, int have, struct env_memo *rec,
    uint32_t k, uint32_t lim)
{
	const char		*v;
	char			 keybuf[32];
	size_t			 vl;
	uint32_t		 end;
	int			 t;

	end = js->tok[0].next;
	for (; i < end; i = js->tok[i + 1].next) {
		t = (int)i + 1;
		if (rec != NULL)
			env_keep(rec, k++, lim, env, i, have);
		if ((v = env_key(js, s, i, keybuf, sizeof keybuf, &vl)) == NULL)
			continue;
		switch (env_member(v, vl)) {
		case EM_PROTOCOL:
			if (env_want(js, t, JT_STRING, err, "protocol") != 0)
				return -1;
			v = jscan_text(js, s, t, &vl);
			if (vl != sizeof(CORRAL_ENVELOPE_PROTOCOL) - 1 ||
			    !ENV_IS(v, CORRAL_ENVELOPE_PROTOCOL))
				return env_fail(err, "protocol", "protocol must "
				    "be \"multiagent-1.0\"");
			have |= ENV_HAVE_PROTOCOL;
			break;
		case EM_ROLE:
			if (env_want(js, t, JT_STRING, err, "role") != 0)
				return -1;
			if ((env->role = env_role(js, s, t)) < 0)
				return env_fail(err, "role", "role must be one of "
				    "agent, user, system, tool");
			have |= ENV_HAVE_ROLE;
			break;
		case EM_AGENT:
			if (env_agent(js, s, t, env, err) != 0)
				return -1;
			break;
		case EM_TIMESTAMP:
			if (env_want(js, t, JT_STRING, err, "timestamp") != 0)
				return -1;
			v = jscan_text(js, s, t, &vl);
			if (!util_rfc3339_valid(v, vl))
				return env_fail(err, "timestamp", "timestamp must "
				    "be an RFC 3339 date-time such as "
				    "2025-10-10T12:34:56Z");
			env->timestamp = t;
			break;
		case EM_INTENT:
			if (env_want(js, t, JT_STRING, err, "intent") != 0)
				return -1;
			if ((env->intent = env_intent(js, s, t)) < 0) {
				char list[INTENT_MAX * (INTENT_NAME_MAX + 2)];

				protocol_intent_list(list, sizeof list);
				return env_fail(err, "intent", "intent must be "
				    "one of %s", list);
			}
			break;
		case EM_TASK:
			if (env_want(js, t, JT_STRING, err, "task") != 0)
				return -1;
			have |= ENV_HAVE_TASK;
			env->task = t;
			break;
		case EM_INPUTS:
			if (env_inputs(js, s, t, env, err) != 0)
				return -1;
			break;
		case EM_CONTENT:
			if (env_content(js, s, t, env, err) != 0)
				return -1;
			env->content = t;
			have |= ENV_HAVE_CONTENT;
			break;
		case EM_OUTPUTS:
			if (env_outputs(js, s, t, env, err) != 0)
				return -1;
			break;
		case EM_CONFIDENCE:
			if (env_confidence(js, s, t, env, err) != 0)
				return -1;
			break;
		case EM_TRACE:
			if (env_trace(js, s, t, env, err) != 0)
				return -1;
			break;
		case EM_PRIORITY:
			if (env_priority(js, s, t, env, err) != 0)
				return -1;
			break;
		case EM_TTL_MS:
			if (js->tok[t].type != JT_NUMBER ||
			    jscan_number(js, s, t) < 0)
				return env_fail(err, "ttl_ms", "ttl_ms must be a "
				    "number of milliseconds, 0 or more");
			env->ttl = jscan_number(js, s, t) / 1000.0;
			break;
		case EM_CORRAL:
			if (env_want(js, t, JT_OBJECT, err, "corral") != 0)
				return -1;
			env->corral = t;
			break;
		case EM_SESSION:
			if (js->tok[t].type == JT_STRING)
				env->session = t;
			break;
		case EM_JSONRPC:
			env->jsonrpc = 1;
			break;
		case EM_OTHER:
			break;
		}
	}
	/* The usual case first; env_required says which is missing. */
	if (have == (ENV_HAVE_PROTOCOL | ENV_HAVE_ROLE | ENV_HAVE_TASK |
	    ENV_HAVE_CONTENT) && env->intent >= 0)
		return 0;
	return env_required(env, have, err);
}

/* env_walk without a memo, for envelope_check. */
static int
env_walk_plain(struct jscan *js, const char *s, struct env *env,
    struct env_error *err, uint32_t i, int have)
{
	return env_walk1(js, s, env, err, i, have, NULL, 0, 0);
}

/* env_walk keeping its findings in rec (envelope_check_memo). */
static int
env_walk_rec(struct jscan *js, const char *s, struct env *env,
    struct env_error *err, uint32_t i, int have, struct env_memo *rec,
    uint32_t k, uint32_t lim)
{
	return env_walk1(js, s, env, err, i, have, rec, k, lim);
}

/*
 * Validate a scanned line as a multiagent-1.0 envelope and extract what
 * routing needs.  Returns 0, or -1 with err filled.
 */
int
envelope_check(struct jscan *js, const char *s, size_t len,
    struct env *env, struct env_error *err)
{
	env_start(env, err);
	(void)len;

	if (js->ntok == 0 || js->tok[0].type != JT_OBJECT)
		return env_fail(err, "", "an envelope must be a JSON object");
	return env_walk_plain(js, s, env, err, 1, 0);
}

/* Make an empty memo of envelope_check's findings (envelope_check_memo). */
struct env_memo *
envelope_memo_create(void)
{
	struct env_memo	*em;

	em = xcalloc(1, sizeof *em);
	em->gen = UINT64_MAX;	/* no scanner memo's */
	return em;
}

/* Free a memo of envelope_check's findings. */
void
envelope_memo_free(struct env_memo *em)
{
	free(em);
}

/*
 * envelope_check of a line just scanned with jscan_run_memo and the
 * scanner's memo jm, with em, the findings kept beside jm: the same
 * answer, the members the scan took from jm not checked again when em
 * holds their findings.  em keeps this line's when jm does.
 */
int
envelope_check_memo(struct jscan *js, const char *s, size_t len,
    struct env *env, struct env_error *err, struct env_memo *em,
    const struct jscan_memo *jm)
{
	const struct env_snap	*sn;
	uint64_t		 from, now;
	uint32_t		 hit, k = 0, lim;
	unsigned int		 intents = protocol_intents_gen();

	(void)len;
	hit = jscan_memo_resumed(jm, &from, &now);
	if (hit > 0 && from == em->gen && intents == em->intents &&
	    em->n > 0) {
		/* The members before hit are the kept line's. */
		k = hit < em->n ? hit : em->n;
		sn = &em->s[k - 1];
		*env = sn->env;
		err->code = NULL;
		err->path[0] = err->msg[0] = '\0';
		if (now == em->gen)
			return env_walk_plain(js, s, env, err, sn->tok,
			    sn->have);
		/* jm keeps this line now: the rest of its findings too. */
		em->gen = now;
		em->n = k;
		return env_walk_rec(js, s, env, err, sn->tok, sn->have, em, k,
		    ENV_MEMO_SNAPS);
	}
	env_start(env, err);
	if (js->ntok == 0 || js->tok[0].type != JT_OBJECT)
		return env_fail(err, "", "an envelope must be a JSON object");
	if (now == em->gen && intents == em->intents)
		return env_walk_plain(js, s, env, err, 1, 0);
	/*
	 * What em keeps is not jm's line's: keep this line's findings,
	 * those it shares with jm's line when jm still keeps that one.
	 */
	lim = now != from ? ENV_MEMO_SNAPS : hit < ENV_MEMO_SNAPS ? hit :
	    ENV_MEMO_SNAPS;
	em->gen = now;
	em->intents = intents;
	em->n = 0;
	return env_walk_rec(js, s, env, err, 1, 0, em, 0, lim);
}

/*
 * Check the ttl_ms of each next action's args, which sit below the
 * reply's tape: a number of milliseconds >= 0, or absent.  Returns 0, or
 * -1 with err filled as envelope_check fills it.
 */
int
envelope_check_ttls(struct jscan *js, const char *line, const struct env *env,
    struct env_error *err)
{
	struct jscan	*sub;
	int		 e, args, t, i = 0, bad = 0;

	if (env->next_actions == -1)
		return 0;
	for (e = jscan_first(js, env->next_actions); e != -1 && !bad;
	    e = jscan_next(js, env->next_actions, e), i++) {
		if ((args = JSCAN_GET(js, line, e, "args")) == -1)
			continue;
		sub = jscan_take();
		if (jscan_run(sub, line + js->tok[args].off,
		    js->tok[args].len) == 0 && (t = JSCAN_GET(sub,
		    line + js->tok[args].off, 0, "ttl_ms")) != -1 &&
		    (sub->tok[t].type != JT_NUMBER || jscan_number(sub,
		    line + js->tok[args].off, t) < 0))
			bad = 1;
		jscan_give(sub);
	}
	if (!bad)
		return 0;
	err->code = "invalid_envelope";
	snprintf(err->path, sizeof err->path,
	    "outputs.next_actions[%d].args.ttl_ms", i - 1);
	snprintf(err->msg, sizeof err->msg, "%s must be a number >= 0",
	    err->path);
	return -1;
}

/*
 * The trace.id of a line that scanned but is not a valid envelope, if it
 * has a usable one, so the error can name what it answers.
 */
const char *
envelope_raw_id(struct jscan *js, const char *line, char *buf, size_t len)
{
	const char	*v;
	size_t		 l;
	int		 t, x;

	if (js->tok[0].type != JT_OBJECT ||
	    (t = JSCAN_GET(js, line, 0, "trace")) == -1 ||
	    js->tok[t].type != JT_OBJECT ||
	    (x = JSCAN_GET(js, line, t, "id")) == -1 ||
	    js->tok[x].type != JT_STRING)
		return NULL;
	v = jscan_text(js, line, x, &l);
	if (l == 0 || l >= len)
		return NULL;
	memcpy(buf, v, l);
	buf[l] = '\0';
	return buf;
}

/* An edit for envelope_splice: replace del bytes at off with text. */
struct splice {
	size_t		 off;
	size_t		 del;
	const char	*text;
	size_t		 len;
};

/* Apply edits to s; returns a new terminated buffer. */
static char *
envelope_splice(const char *s, size_t len, struct splice *ed, size_t ned,
    size_t *outlen)
{
	struct splice	x;
	size_t		i, j, total = len, pos = 0, o = 0;
	char		*out;

	/*
	 * By offset, ties in the order the edits were made: an insertion
	 * sort, stable, and for the six edits at most far cheaper than qsort.
	 */
	for (i = 1; i < ned; i++) {
		x = ed[i];
		for (j = i; j > 0 && ed[j - 1].off > x.off; j--)
			ed[j] = ed[j - 1];
		ed[j] = x;
	}
	for (i = 0; i < ned; i++)
		total += ed[i].len - ed[i].del;
	out = xmalloc(total + 1);
	for (i = 0; i < ned; i++) {
		memcpy(out + o, s + pos, ed[i].off - pos);
		o += ed[i].off - pos;
		memcpy(out + o, ed[i].text, ed[i].len);
		o += ed[i].len;
		pos = ed[i].off + ed[i].del;
	}
	memcpy(out + o, s + pos, len - pos);
	o += len - pos;
	out[o] = '\0';
	*outlen = o;
	return out;
}

/* A piece of JSON text for envelope_splice, built by the JSON writer. */
struct piece {
	struct ndjson_writer	w;
};

/* Start a piece with a literal. */
static void
piece_init(struct piece *p, const char *lit)
{
	ndjson_writer_init(&p->w, 0, 1);
	ndjson_writer_add(&p->w, lit, strlen(lit));
}

/* Append a literal. */
static void
piece_lit(struct piece *p, const char *lit)
{
	ndjson_writer_add(&p->w, lit, strlen(lit));
}

/* Append a string value, escaped. */
static void
piece_str(struct piece *p, const char *v)
{
	jsonw_string(&p->w, v, strlen(v));
}

/* The splice that inserts the piece at off. */
static struct splice
piece_at(struct piece *p, size_t off)
{
	return (struct splice){ off, 0, p->w.buf, p->w.tail };
}

/*
 * Fill what the producer left out: trace.id (id), trace.parents ([parent],
 * when parent is given), timestamp.  Returns NULL when nothing was missing,
 * else a new buffer.
 */
char *
envelope_fill(struct jscan *js, const char *s, size_t len,
    const struct env *env, const char *id, const char *parent, size_t *outlen)
{
	struct splice	 ed[4];
	struct piece	 pc[4];
	size_t		 ned = 0, tail, i;
	char		 ts[40], *out;
	int		 need_id = (env->trace_id == -1 && id != NULL);
	int		 need_parents = (env->parents == -1 && parent != NULL);
	int		 empty;
	const struct jtok *tr;

	if (env->timestamp != -1 && !need_id && !need_parents)
		return NULL;
	tail = js->tok[0].off + js->tok[0].len - 1;	/* the final '}' */
	if (env->timestamp == -1) {
		util_rfc3339(ts, sizeof ts);
		piece_init(&pc[ned], ",\"timestamp\":");
		piece_str(&pc[ned], ts);
		ed[ned] = piece_at(&pc[ned], tail);
		ned++;
	}
	if (env->trace == -1 && (need_id || need_parents)) {
		piece_init(&pc[ned], ",\"trace\":{");
		if (need_id) {
			piece_lit(&pc[ned], "\"id\":");
			piece_str(&pc[ned], id);
		}
		if (need_parents) {
			piece_lit(&pc[ned], need_id ? ",\"parents\":[" :
			    "\"parents\":[");
			piece_str(&pc[ned], parent);
			piece_lit(&pc[ned], "]");
		}
		piece_lit(&pc[ned], "}");
		ed[ned] = piece_at(&pc[ned], tail);
		ned++;
	} else if (env->trace != -1) {
		/* Insert right after the trace object's '{'. */
		tr = &js->tok[env->trace];
		empty = (jscan_count(js, env->trace) == 0);
		if (need_id) {
			piece_init(&pc[ned], "\"id\":");
			piece_str(&pc[ned], id);
			if (!empty || need_parents)
				piece_lit(&pc[ned], ",");
			ed[ned] = piece_at(&pc[ned], tr->off + 1);
			ned++;
		}
		if (need_parents) {
			piece_init(&pc[ned], "\"parents\":[");
			piece_str(&pc[ned], parent);
			piece_lit(&pc[ned], empty ? "]" : "],");
			ed[ned] = piece_at(&pc[ned], tr->off + 1);
			ned++;
		}
	}
	/* Stable order for equal offsets: id before parents before tail. */
	out = envelope_splice(s, len, ed, ned, outlen);
	for (i = 0; i < ned; i++)
		ndjson_writer_free(&pc[i].w);
	return out;
}

/*
 * Turn a weak reply into a reflect request: intent becomes "reflect",
 * trace.id the new id and trace.parents [the reply's id], and the corral
 * member tells the critic what it reflects on:
 * {"reflect":{"of":REPLY_ID,"intent":INTENT,"round":N}} (it replaces any
 * member of that name the reply carried).  Everything else, the content
 * and the proposed next actions included, is kept for the critic to
 * judge.
 */
char *
envelope_reflect(struct jscan *js, const char *s, size_t len,
    const struct env *env, const char *id, const char *reply_id,
    const char *intent, unsigned int round, size_t *outlen)
{
	struct ndjson_writer	 w;
	struct splice		 ed[6];
	const struct jtok	*val;
	size_t			 ned = 0, mlen, tlen;
	uint32_t		 i, end;
	const char		*member, *trace;
	char			*out;
	int			 have_corral = 0;

	/*
	 * The corral member, then the new trace, in one buffer: our id and
	 * lineage, then the old tags and cost.
	 */
	ndjson_writer_init(&w, 0, 1);
	ENV_LIT(&w, "{\"reflect\":{\"of\":");
	jsonw_string(&w, reply_id, strlen(reply_id));
	ENV_LIT(&w, ",\"intent\":");
	jsonw_string(&w, intent, strlen(intent));
	ENV_LIT(&w, ",\"round\":");
	jsonw_put_u64(&w, round);
	ENV_LIT(&w, "}}");
	mlen = w.tail;
	ENV_LIT(&w, "{\"id\":");
	jsonw_string(&w, id, strlen(id));
	ENV_LIT(&w, ",\"parents\":[");
	jsonw_string(&w, reply_id, strlen(reply_id));
	ENV_LIT(&w, "]");
	if (env->trace != -1) {
		end = js->tok[env->trace].next;
		for (i = (uint32_t)env->trace + 1; i < end;
		    i = js->tok[i + 1].next) {
			if (ENV_KEY_IS(js, s, i, "id") ||
			    ENV_KEY_IS(js, s, i, "parents"))
				continue;
			val = &js->tok[i + 1];
			ENV_LIT(&w, ",");
			ndjson_writer_add(&w, s + js->tok[i].off,
			    val->off + val->len - js->tok[i].off);
		}
	}
	ENV_LIT(&w, "}");
	/* Only now: the buffer may have moved as it grew. */
	member = w.buf;
	trace = w.buf + mlen;
	tlen = w.tail - mlen;

	end = js->tok[0].next;
	for (i = 1; i < end; i = js->tok[i + 1].next) {
		val = &js->tok[i + 1];
		if (ENV_KEY_IS(js, s, i, "intent"))
			ed[ned++] = (struct splice){ val->off, val->len,
			    "\"reflect\"", 9 };
		else if (ENV_KEY_IS(js, s, i, "corral")) {
			ed[ned++] = (struct splice){ val->off, val->len,
			    member, mlen };
			have_corral = 1;
		}
	}
	if (env->trace != -1) {
		val = &js->tok[env->trace];
		ed[ned++] = (struct splice){ val->off, val->len, trace, tlen };
	} else {
		/* Insert ,"trace":{...} before the final brace. */
		ed[ned++] = (struct splice){ js->tok[0].off + js->tok[0].len -
		    1, 0, ",\"trace\":", 9 };
		ed[ned++] = (struct splice){ js->tok[0].off + js->tok[0].len -
		    1, 0, trace, tlen };
	}
	if (!have_corral) {
		ed[ned++] = (struct splice){ js->tok[0].off + js->tok[0].len -
		    1, 0, ",\"corral\":", 10 };
		ed[ned++] = (struct splice){ js->tok[0].off + js->tok[0].len -
		    1, 0, member, mlen };
	}
	out = envelope_splice(s, len, ed, ned, outlen);
	ndjson_writer_free(&w);
	return out;
}

/* Return raw JSON for member key of object obj, or dflt. */
static const char *
env_raw(struct jscan *js, const char *s, int obj, const char *key,
    const char *dflt, size_t *len)
{
	int	t;

	if (obj != -1 && (t = jscan_get(js, s, obj, key)) != -1) {
		*len = js->tok[t].len;
		return s + js->tok[t].off;
	}
	*len = strlen(dflt);
	return dflt;
}

/*
 * Build a request from next_actions element act of the reply s: intent
 * and task from the action, its args as inputs.parameters, the reply's
 * content.text as inputs.context.
 */
char *
envelope_action(struct jscan *js, const char *s, int act, const char *id,
    const char *parent, const char *ctx, size_t ctxlen, size_t *outlen)
{
	struct ndjson_writer	 w;
	const char		*intent, *task, *args;
	size_t			 il, tl, al;
	char			 ts[40];
	char			*out;

	intent = env_raw(js, s, act, "intent", "\"execute\"", &il);
	task = env_raw(js, s, act, "task", "\"\"", &tl);
	args = env_raw(js, s, act, "args", "{}", &al);
	util_rfc3339(ts, sizeof ts);
	ndjson_writer_init(&w, 0, 1);
	ENV_LIT(&w, "{\"protocol\":\"multiagent-1.0\",\"role\":"
	    "\"agent\",\"timestamp\":\"");
	ndjson_writer_add(&w, ts, strlen(ts));
	ENV_LIT(&w, "\",\"intent\":");
	ndjson_writer_add(&w, intent, il);
	ENV_LIT(&w, ",\"task\":");
	ndjson_writer_add(&w, task, tl);
	ENV_LIT(&w, ",\"inputs\":{\"context\":");
	if (ctx != NULL)
		ndjson_writer_add(&w, ctx, ctxlen);
	else
		ENV_LIT(&w, "\"\"");
	ENV_LIT(&w, ",\"parameters\":");
	ndjson_writer_add(&w, args, al);
	ENV_LIT(&w, "},\"content\":{\"type\":\"text\",\"text\":");
	ndjson_writer_add(&w, task, tl);
	ENV_LIT(&w, "},\"trace\":{\"id\":");
	jsonw_string(&w, id, strlen(id));
	ENV_LIT(&w, ",\"parents\":[");
	jsonw_string(&w, parent, strlen(parent));
	ENV_LIT(&w, "]}}");
	*outlen = w.tail;
	out = xmemdup0(w.buf, w.tail);
	ndjson_writer_free(&w);
	return out;
}

/*
 * Add or replace our "corral" member with member, JSON the caller built
 * with the JSON writer.  Returns a new buffer.
 */
char *
envelope_mark(struct jscan *js, const char *s, size_t len,
    const char *member, size_t *outlen)
{
	struct splice	ed[2];
	uint32_t	i, end;

	end = js->tok[0].next;
	for (i = 1; i < end; i = js->tok[i + 1].next) {
		if (ENV_KEY_IS(js, s, i, "corral")) {
			const struct jtok *v = &js->tok[i + 1];
			ed[0] = (struct splice){ v->off, v->len, member,
			    strlen(member) };
			return envelope_splice(s, len, ed, 1, outlen);
		}
	}
	ed[0] = (struct splice){ js->tok[0].off + js->tok[0].len - 1, 0,
	    ",\"corral\":", 10 };
	ed[1] = (struct splice){ js->tok[0].off + js->tok[0].len - 1, 0,
	    member, strlen(member) };
	return envelope_splice(s, len, ed, 2, outlen);
}

/*
 * Make an envelope from someone else honest: our "corral" member goes
 * (corral alone says what a line is: a task, a child's result, a notice),
 * and when sender is given, agent.id becomes the agent that really wrote
 * it.  *forged says which of the two was found (FORGED_*).  Returns a new
 * buffer, or NULL when nothing had to change.
 */
char *
envelope_own(struct jscan *js, const char *s, size_t len,
    const struct env *env, const char *sender, int *forged, size_t *outlen)
{
	struct splice	 ed[2];
	struct piece	 pc;
	size_t		 ned = 0, from, to;
	uint32_t	 i, end, prev = 0;
	int		 id, piece = 0;
	char		*out;

	*forged = 0;
	end = js->tok[0].next;
	for (i = 1; env->corral != -1 && i < end;
	    prev = i, i = js->tok[i + 1].next) {
		if ((int)i + 1 != env->corral)
			continue;
		if (js->tok[i + 1].next < end) {
			/* Up to the next member's key: the comma goes too. */
			from = js->tok[i].off;
			to = js->tok[js->tok[i + 1].next].off;
		} else if (prev != 0) {
			/* The last member: from the end of the one before. */
			from = js->tok[prev + 1].off + js->tok[prev + 1].len;
			to = js->tok[i + 1].off + js->tok[i + 1].len;
		} else
			break;		/* the only member: not an envelope */
		ed[ned++] = (struct splice){ from, to - from, "", 0 };
		*forged |= FORGED_CORRAL;
		break;
	}
	/* envelope_check found agent.id, a string, on its pass. */
	if (sender != NULL && (id = env->agent_id) != -1 &&
	    !(js->tok[id].type == JT_STRING && env_str_is(js, s,
	    (uint32_t)id, sender, strlen(sender)))) {
		piece_init(&pc, "");
		piece_str(&pc, sender);
		ed[ned] = piece_at(&pc, js->tok[id].off);
		ed[ned++].del = js->tok[id].len;
		piece = 1;
		*forged |= FORGED_SENDER;
	}
	if (ned == 0)
		return NULL;
	out = envelope_splice(s, len, ed, ned, outlen);
	if (piece)
		ndjson_writer_free(&pc.w);
	return out;
}

/*
 * Put id first in trace.parents (creating trace or parents as needed).
 * Returns a new buffer.
 */
char *
envelope_add_parent(struct jscan *js, const char *s, size_t len,
    const struct env *env, const char *id, size_t *outlen)
{
	struct splice		 ed[1];
	struct ndjson_writer	 w;
	const struct jtok	*t;
	char			*out;
	int			 nonempty;

	ndjson_writer_init(&w, 0, 1);
	if (env->trace == -1) {
		ENV_LIT(&w, ",\"trace\":{\"parents\":[");
		jsonw_string(&w, id, strlen(id));
		ENV_LIT(&w, "]}");
		ed[0] = (struct splice){ js->tok[0].off + js->tok[0].len - 1, 0,
		    w.buf, w.tail };
	} else if (env->parents == -1) {
		t = &js->tok[env->trace];
		nonempty = jscan_count(js, env->trace) > 0;
		ENV_LIT(&w, "\"parents\":[");
		jsonw_string(&w, id, strlen(id));
		ENV_LIT(&w, "]");
		if (nonempty)
			ENV_LIT(&w, ",");
		ed[0] = (struct splice){ t->off + 1, 0, w.buf, w.tail };
	} else {
		t = &js->tok[env->parents];
		nonempty = jscan_count(js, env->parents) > 0;
		jsonw_string(&w, id, strlen(id));
		if (nonempty)
			ENV_LIT(&w, ",");
		ed[0] = (struct splice){ t->off + 1, 0, w.buf, w.tail };
	}
	out = envelope_splice(s, len, ed, 1, outlen);
	ndjson_writer_free(&w);
	return out;
}

/*
 * Set key to the raw JSON value inside our "corral" member, keeping what
 * else it holds (a retry must not lose a task's kind).  Returns a new
 * buffer.
 */
char *
envelope_corral_set(struct jscan *js, const char *s, size_t len,
    const struct env *env, const char *key, const char *raw, size_t *outlen)
{
	struct splice		 ed[1];
	struct ndjson_writer	 w;
	const struct jtok	*t;
	char			*out;
	int			 v;

	ndjson_writer_init(&w, 0, 1);
	if (env->corral == -1) {
		ENV_LIT(&w, ",\"corral\":{");
		jsonw_string(&w, key, strlen(key));
		ENV_LIT(&w, ":");
		ndjson_writer_add(&w, raw, strlen(raw));
		ENV_LIT(&w, "}");
		ed[0] = (struct splice){ js->tok[0].off + js->tok[0].len - 1, 0,
		    w.buf, w.tail };
	} else if ((v = jscan_get(js, s, env->corral, key)) != -1) {
		t = &js->tok[v];
		ed[0] = (struct splice){ t->off, t->len, raw, strlen(raw) };
	} else {
		t = &js->tok[env->corral];
		jsonw_string(&w, key, strlen(key));
		ENV_LIT(&w, ":");
		ndjson_writer_add(&w, raw, strlen(raw));
		if (jscan_count(js, env->corral) > 0)
			ENV_LIT(&w, ",");
		ed[0] = (struct splice){ t->off + 1, 0, w.buf, w.tail };
	}
	out = envelope_splice(s, len, ed, 1, outlen);
	ndjson_writer_free(&w);
	return out;
}

/* Serialize a jansson value compactly; 0.9 prints as 0.9. */
static char *
envelope_dump(json_t *j, size_t *outlen)
{
	char	*s;

	s = jsonw_dumps(j, CORRAL_JSON_FLAGS);
	if (s == NULL)
		fatalx("json_dumps failed");
	*outlen = strlen(s);
	return s;
}

/*
 * Build an error envelope: content.type "error", content.data with the
 * code, the category (TIMEOUT, UNAVAILABLE, REJECTED, INTERNAL), the field
 * path and the message; trace.parents [parent] when known.  With kind
 * (CORRAL_KIND_NOTICE), the envelope carries {"corral":{"kind":kind}}: a
 * notice tells an agent about its own bad output and must not be
 * answered.  The message may quote a peer's bytes cut anywhere: what is
 * not UTF-8 becomes U+FFFD, so building it never fails.
 */
char *
envelope_error(const char *code, const char *category, const char *path,
    const char *message, const char *parent, const char *kind, size_t *outlen)
{
	json_t	*j, *data, *trace;
	char	 ts[40], id[CORRAL_ID_MAX];
	char	*out;
	int	 retryable;

	util_rfc3339(ts, sizeof ts);
	protocol_new_id(id, sizeof id);
	retryable = (strcmp(category, "TIMEOUT") == 0 ||
	    strcmp(category, "UNAVAILABLE") == 0) && protocol_transient(code);
	data = json_pack("{s:s, s:s, s:o, s:b}", "code", code, "category",
	    category, "message", jsonw_text(message, strlen(message)),
	    "retryable", retryable);
	if (path != NULL && *path != '\0')
		json_object_set_new(data, "path", jsonw_text(path,
		    strlen(path)));
	trace = json_pack("{s:s}", "id", id);
	if (parent != NULL && *parent != '\0')
		json_object_set_new(trace, "parents", json_pack("[o]",
		    jsonw_text(parent, strlen(parent))));
	j = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:s, s:s, s:s, "
	    "s:{s:s, s:o, s:o}, s:o}",
	    "protocol", CORRAL_ENVELOPE_PROTOCOL,
	    "role", "system",
	    "agent", "id", "corral", "name", "corral", "model", "n/a",
	    "timestamp", ts,
	    "intent", "route",
	    "task", "Report an error",
	    "content", "type", "error", "text", jsonw_text(message,
	    strlen(message)), "data", data,
	    "trace", trace);
	if (j == NULL)
		fatalx("envelope_error: json_pack failed");
	if (kind != NULL)
		json_object_set_new(j, "corral", json_pack("{s:s}", "kind",
		    kind));
	out = envelope_dump(j, outlen);
	json_decref(j);
	return out;
}

/*
 * Build the notice that tells an agent a request it works on was
 * cancelled: {"corral":{"kind":"cancel","request":ID}}, trace.parents
 * [ID], the request's intent, the reason as content.text.  The agent may
 * stop working on it; it must not answer the notice, and a reply to the
 * request is dropped as late (docs/protocol.md).
 */
char *
envelope_cancel(const char *request, const char *intent, const char *why,
    size_t *outlen)
{
	json_t	*j;
	char	 ts[40], id[CORRAL_ID_MAX];
	char	*out;

	util_rfc3339(ts, sizeof ts);
	protocol_new_id(id, sizeof id);
	j = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:s, s:s, s:s, "
	    "s:{s:s, s:o, s:{s:o, s:o}}, s:{s:s, s:[o]}, s:{s:s, s:o}}",
	    "protocol", CORRAL_ENVELOPE_PROTOCOL,
	    "role", "system",
	    "agent", "id", "corral", "name", "corral", "model", "n/a",
	    "timestamp", ts,
	    "intent", intent,
	    "task", "Cancel a request",
	    "content", "type", "text", "text", jsonw_text(why, strlen(why)),
	    "data", "request", jsonw_text(request, strlen(request)),
	    "reason", jsonw_text(why, strlen(why)),
	    "trace", "id", id, "parents", jsonw_text(request, strlen(request)),
	    "corral", "kind", CORRAL_KIND_CANCEL, "request", jsonw_text(request,
	    strlen(request)));
	if (j == NULL)
		fatalx("envelope_cancel: json_pack failed");
	out = envelope_dump(j, outlen);
	json_decref(j);
	return out;
}

/*
 * Build corral run's first envelope from what the command line gave: the
 * goal text, an --input object (a whole envelope, or what becomes its
 * "inputs"), and --param pairs (params, merged into inputs.parameters).
 * What is missing is filled in: protocol, role "user", intent (the
 * workflow's start), task and content from the goal.  trace.id and
 * timestamp are left for the engine.  Returns the line, or NULL with why:
 * the envelope must pass the same checks as any input.
 */
char *
envelope_goal(const char *goal, json_t *input, json_t *params,
    const char *intent, size_t *outlen, char *why, size_t whylen)
{
	struct jscan		*js;
	struct env		 env;
	struct env_error	 err;
	json_t			*j, *in, *pm;
	char			*out;

	if (input != NULL && json_object_get(input, "protocol") != NULL) {
		if (goal != NULL) {
			snprintf(why, whylen, "--goal and the envelope in "
			    "--input both say what to do: give one");
			return NULL;
		}
		j = json_deep_copy(input);
	} else {
		if (goal == NULL) {
			snprintf(why, whylen, "--goal TEXT is required (or "
			    "--input with a whole envelope)");
			return NULL;
		}
		j = json_pack("{s:s, s:s, s:s, s:{s:s, s:s}}",
		    "protocol", CORRAL_ENVELOPE_PROTOCOL, "role", "user",
		    "task", goal, "content", "type", "text", "text", goal);
		if (j == NULL) {
			snprintf(why, whylen, "the goal is not valid UTF-8");
			return NULL;
		}
		if (input != NULL)
			json_object_set(j, "inputs", input);
	}
	if (json_object_get(j, "intent") == NULL)
		json_object_set_new(j, "intent", json_string(intent));
	if (json_object_get(j, "role") == NULL)
		json_object_set_new(j, "role", json_string("user"));
	if (json_object_size(params) > 0) {
		if (!json_is_object(in = json_object_get(j, "inputs"))) {
			in = json_object();
			json_object_set_new(j, "inputs", in);
		}
		if (!json_is_object(pm = json_object_get(in, "parameters"))) {
			pm = json_object();
			json_object_set_new(in, "parameters", pm);
		}
		json_object_update(pm, params);
	}
	out = envelope_dump(j, outlen);
	json_decref(j);
	js = jscan_create(4);	/* the engine's depth */
	if (jscan_run(js, out, *outlen) != 0)
		snprintf(why, whylen, "invalid JSON");	/* cannot happen */
	else if (envelope_check(js, out, *outlen, &env, &err) != 0)
		snprintf(why, whylen, "%s", err.msg);
	else {
		jscan_free(js);
		return out;
	}
	jscan_free(js);
	free(out);
	return NULL;
}
