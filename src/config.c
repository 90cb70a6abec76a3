/*
 * The workflow file: YAML (JSON is YAML too) read with libfyaml's event
 * parser into a small tree that remembers where every node came from, then
 * checked key by key into struct workflow.  Every error names the file,
 * line and column and the key's path, and unknown keys are errors, so a
 * typo never silently becomes a default.  docs/workflow.md lists the keys.
 */

#include <sys/resource.h>
#include <sys/stat.h>

#include <errno.h>
#include <libfyaml.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"

enum cnode_type {
	CN_SCALAR,
	CN_MAP,
	CN_SEQ
};

struct cnode {
	enum cnode_type	  type;
	int		  line;		/* 1-based */
	int		  column;
	int		  quoted;	/* scalar was quoted: never a number */
	char		 *str;
	size_t		  len;
	struct cnode	**kids;		/* maps: key, value, key, value ... */
	size_t		  nkids;
	size_t		  cap;
};

struct cload {
	struct config_error	*err;
	const char		*file;
	struct workflow		*wf;
};

/* Free a node tree. */
static void
cnode_free(struct cnode *n)
{
	size_t	i;

	if (n == NULL)
		return;
	for (i = 0; i < n->nkids; i++)
		cnode_free(n->kids[i]);
	free(n->kids);
	free(n->str);
	free(n);
}

/* Append a child to a map or sequence node. */
static void
cnode_add(struct cnode *parent, struct cnode *kid)
{
	if (parent->nkids == parent->cap) {
		parent->cap = parent->cap ? parent->cap * 2 : 8;
		parent->kids = xreallocarray(parent->kids, parent->cap,
		    sizeof *parent->kids);
	}
	parent->kids[parent->nkids++] = kid;
}

/* Record an error at a node's position; always returns -1. */
static int __attribute__((format(printf, 3, 4)))
cerr(struct cload *cl, const struct cnode *n, const char *fmt, ...)
{
	va_list	ap;

	if (cl->err->msg[0] != '\0')
		return -1;	/* keep the first error */
	cl->err->line = n != NULL ? n->line : 0;
	cl->err->column = n != NULL ? n->column : 0;
	va_start(ap, fmt);
	vsnprintf(cl->err->msg, sizeof cl->err->msg, fmt, ap);
	va_end(ap);
	return -1;
}

/* Build a node tree from YAML text with libfyaml's event parser. */
static struct cnode *
cnode_parse(struct cload *cl, const char *text, size_t len)
{
	struct fy_diag_cfg	 dcfg;
	struct fy_parse_cfg	 pcfg;
	struct fy_diag		*diag;
	struct fy_parser	*fyp;
	struct fy_event		*fye;
	struct fy_diag_error	*de;
	const struct fy_mark	*m;
	struct cnode		*stack[64], *root = NULL, *n;
	int			 depth = 0, docs = 0, failed = 0;
	void			*iter = NULL;
	const char		*t;
	size_t			 tl;

	fy_diag_cfg_default(&dcfg);
	dcfg.fp = NULL;
	dcfg.output_fn = NULL;
	if ((diag = fy_diag_create(&dcfg)) == NULL)
		fatalx("fy_diag_create");
	fy_diag_set_collect_errors(diag, true);
	memset(&pcfg, 0, sizeof pcfg);
	pcfg.flags = FYPCF_QUIET;
	pcfg.diag = diag;
	if ((fyp = fy_parser_create(&pcfg)) == NULL)
		fatalx("fy_parser_create");
	if (fy_parser_set_string(fyp, text, len) != 0)
		fatalx("fy_parser_set_string");

	while (!failed && (fye = fy_parser_parse(fyp)) != NULL) {
		m = fy_event_start_mark(fye);
		n = NULL;
		switch (fye->type) {
		case FYET_DOCUMENT_START:
			if (++docs > 1) {
				struct cnode where = { .line = m ? m->line + 1 :
				    0, .column = m ? m->column + 1 : 0 };
				cerr(cl, &where, "only one YAML document "
				    "is allowed");
				failed = 1;
			}
			break;
		case FYET_ALIAS:
			{
				/* The mark is after the '*'. */
				struct cnode where = { .line = m->line + 1,
				    .column = m->column > 0 ? m->column : 1 };
				cerr(cl, &where, "YAML aliases are not "
				    "supported");
				failed = 1;
			}
			break;
		case FYET_SCALAR:
		case FYET_MAPPING_START:
		case FYET_SEQUENCE_START:
			n = xcalloc(1, sizeof *n);
			n->line = m != NULL ? m->line + 1 : 0;
			n->column = m != NULL ? m->column + 1 : 0;
			if (m == NULL && depth > 0 && stack[depth - 1]->nkids > 0) {
				/* An empty value has no mark: use its key's. */
				struct cnode *prev = stack[depth - 1]->kids[
				    stack[depth - 1]->nkids - 1];
				n->line = prev->line;
				n->column = prev->column;
			}
			if (fye->type == FYET_SCALAR) {
				n->type = CN_SCALAR;
				t = fy_token_get_text(fye->scalar.value, &tl);
				n->str = xmemdup0(t != NULL ? t : "", t ? tl : 0);
				n->len = t != NULL ? tl : 0;
				n->quoted = fy_token_scalar_style(
				    fye->scalar.value) != FYSS_PLAIN;
				/* libfyaml marks a quoted scalar after its quote. */
				if ((fy_token_scalar_style(fye->scalar.value) ==
				    FYSS_SINGLE_QUOTED || fy_token_scalar_style(
				    fye->scalar.value) == FYSS_DOUBLE_QUOTED) &&
				    n->column > 1)
					n->column--;
			} else
				n->type = fye->type == FYET_MAPPING_START ?
				    CN_MAP : CN_SEQ;
			if (depth == 0) {
				if (root == NULL)
					root = n;
				else
					cnode_free(n);
			} else
				cnode_add(stack[depth - 1], n);
			if (n->type != CN_SCALAR) {
				if (depth == (int)(sizeof stack /
				    sizeof stack[0])) {
					cerr(cl, n, "nesting too deep");
					failed = 1;
				} else
					stack[depth++] = n;
			}
			break;
		case FYET_MAPPING_END:
		case FYET_SEQUENCE_END:
			if (depth > 0)
				depth--;
			break;
		default:
			break;
		}
		fy_parser_event_free(fyp, fye);
	}
	if (!failed && fy_parser_get_stream_error(fyp)) {
		de = fy_diag_errors_iterate(diag, &iter);
		if (de != NULL) {
			struct cnode where = { .line = de->line,
			    .column = de->column };
			cerr(cl, &where, "YAML syntax: %s", de->msg);
		} else
			cerr(cl, NULL, "YAML syntax error");
		failed = 1;
	}
	fy_parser_destroy(fyp);
	fy_diag_destroy(diag);
	if (failed) {
		cnode_free(root);
		return NULL;
	}
	if (root == NULL) {
		cerr(cl, NULL, "the file is empty");
		return NULL;
	}
	return root;
}

/* Return the value node of key in a map node, or NULL. */
static struct cnode *
cmap_get(const struct cnode *map, const char *key)
{
	size_t	i;

	for (i = 0; i + 1 < map->nkids; i += 2) {
		if (map->kids[i]->type == CN_SCALAR &&
		    strcmp(map->kids[i]->str, key) == 0)
			return map->kids[i + 1];
	}
	return NULL;
}

/*
 * Check a map: scalar keys, no duplicates, and every key among the
 * NULL-terminated list allowed (when given).
 */
static int
cmap_check(struct cload *cl, const struct cnode *map, const char *path,
    const char *const *allowed)
{
	const struct cnode	*k;
	size_t			 i, j;

	if (map->type != CN_MAP)
		return cerr(cl, map, "%s: expected a mapping", path);
	for (i = 0; i + 1 < map->nkids; i += 2) {
		k = map->kids[i];
		if (k->type != CN_SCALAR)
			return cerr(cl, k, "%s: keys must be plain strings",
			    path);
		for (j = 0; j < i; j += 2) {
			if (strcmp(map->kids[j]->str, k->str) == 0)
				return cerr(cl, k, "%s: duplicate key '%s'",
				    path, k->str);
		}
		if (allowed == NULL)
			continue;
		for (j = 0; allowed[j] != NULL; j++)
			if (strcmp(allowed[j], k->str) == 0)
				break;
		if (allowed[j] == NULL)
			return cerr(cl, k, "%s: unknown key '%s'", path, k->str);
	}
	return 0;
}

/* Return "path.key" in a buffer valid until the next call. */
static const char *
csub(const char *path, const char *key)
{
	static char	buf[300];

	snprintf(buf, sizeof buf, "%s.%s", path, key);
	return buf;
}

/* Read a string scalar. */
static int
cget_str(struct cload *cl, const struct cnode *n, const char *path, char **out)
{
	if (n->type != CN_SCALAR)
		return cerr(cl, n, "%s: expected a string", path);
	if (memchr(n->str, '\0', n->len) != NULL)
		return cerr(cl, n, "%s: NUL byte in string", path);
	free(*out);
	*out = xstrdup(n->str);
	return 0;
}

/* Read a boolean scalar. */
static int
cget_bool(struct cload *cl, const struct cnode *n, const char *path, int *out)
{
	if (n->type == CN_SCALAR && !n->quoted) {
		if (strcmp(n->str, "true") == 0 || strcmp(n->str, "yes") == 0 ||
		    strcmp(n->str, "on") == 0) {
			*out = 1;
			return 0;
		}
		if (strcmp(n->str, "false") == 0 || strcmp(n->str, "no") == 0 ||
		    strcmp(n->str, "off") == 0) {
			*out = 0;
			return 0;
		}
	}
	return cerr(cl, n, "%s: expected true or false", path);
}

/* Read an unsigned integer in [min, max]. */
static int
cget_uint(struct cload *cl, const struct cnode *n, const char *path,
    unsigned int min, unsigned int max, unsigned int *out)
{
	char		*end;
	unsigned long	 v;

	if (n->type != CN_SCALAR || n->str[0] < '0' || n->str[0] > '9')
		return cerr(cl, n, "%s: expected a whole number", path);
	errno = 0;
	v = strtoul(n->str, &end, 10);
	if (*end != '\0' || errno != 0)
		return cerr(cl, n, "%s: expected a whole number", path);
	if (v < min || v > max)
		return cerr(cl, n, "%s: %lu is out of range (%u to %u)", path,
		    v, min, max);
	*out = (unsigned int)v;
	return 0;
}

/* Read a real number in [min, max]. */
static int
cget_double(struct cload *cl, const struct cnode *n, const char *path,
    double min, double max, double *out)
{
	char	*end;
	double	 v;

	if (n->type != CN_SCALAR || n->quoted)
		return cerr(cl, n, "%s: expected a number", path);
	errno = 0;
	v = strtod(n->str, &end);
	if (end == n->str || *end != '\0' || errno != 0 || !isfinite(v))
		return cerr(cl, n, "%s: expected a number", path);
	if (v < min || v > max)
		return cerr(cl, n, "%s: %g is out of range (%g to %g)", path, v,
		    min, max);
	*out = v;
	return 0;
}

/* Read a duration ("30s", "500ms", 2). */
static int
cget_duration(struct cload *cl, const struct cnode *n, const char *path,
    double *out)
{
	if (n->type != CN_SCALAR || util_parse_duration(n->str, out) != 0)
		return cerr(cl, n, "%s: expected a duration such as 30s, "
		    "500ms or 2m", path);
	return 0;
}

/* Read a size ("1MiB", 65536). */
static int
cget_size(struct cload *cl, const struct cnode *n, const char *path,
    size_t *out)
{
	if (n->type != CN_SCALAR || util_parse_size(n->str, out) != 0)
		return cerr(cl, n, "%s: expected a size such as 65536, 64KiB "
		    "or 1MiB", path);
	return 0;
}

/* Read a list of strings (a single string is a list of one). */
static int
cget_strlist(struct cload *cl, const struct cnode *n, const char *path,
    char ***out, size_t *count)
{
	size_t	i;

	if (n->type == CN_SCALAR) {
		*out = xcalloc(2, sizeof **out);
		(*out)[0] = xstrdup(n->str);
		*count = 1;
		return 0;
	}
	if (n->type != CN_SEQ)
		return cerr(cl, n, "%s: expected a list of strings", path);
	*out = xcalloc(n->nkids + 1, sizeof **out);
	*count = n->nkids;
	for (i = 0; i < n->nkids; i++) {
		if (n->kids[i]->type != CN_SCALAR)
			return cerr(cl, n->kids[i], "%s[%zu]: expected a string",
			    path, i);
		(*out)[i] = xstrdup(n->kids[i]->str);
	}
	return 0;
}

/* Convert a node to a jansson value (scalars that look numeric stay strings
 * unless plain). */
static json_t *
cnode_json(const struct cnode *n)
{
	json_t	*j;
	char	*end;
	double	 d;
	size_t	 i;

	switch (n->type) {
	case CN_MAP:
		j = json_object();
		for (i = 0; i + 1 < n->nkids; i += 2)
			json_object_set_new(j, n->kids[i]->str,
			    cnode_json(n->kids[i + 1]));
		return j;
	case CN_SEQ:
		j = json_array();
		for (i = 0; i < n->nkids; i++)
			json_array_append_new(j, cnode_json(n->kids[i]));
		return j;
	default:
		break;
	}
	if (!n->quoted) {
		if (strcmp(n->str, "true") == 0)
			return json_true();
		if (strcmp(n->str, "false") == 0)
			return json_false();
		if (strcmp(n->str, "null") == 0 || strcmp(n->str, "~") == 0)
			return json_null();
		if (n->len > 0) {
			d = strtod(n->str, &end);
			if (*end == '\0' && isfinite(d)) {
				if (d == floor(d) && fabs(d) < 9e15 &&
				    strpbrk(n->str, ".eE") == NULL)
					return json_integer((json_int_t)d);
				return json_real(d);
			}
		}
	}
	if ((j = json_stringn(n->str, n->len)) == NULL)
		j = json_string("");
	return j;
}



/* Name a restart policy. */
const char *
config_restart_name(enum restart_policy p)
{
	switch (p) {
	case RESTART_PERMANENT:
		return "permanent";
	case RESTART_TRANSIENT:
		return "transient";
	default:
		return "temporary";
	}
}

/* Name a sub-agent restart strategy. */
const char *
config_strategy_name(enum child_strategy s)
{
	switch (s) {
	case STRATEGY_ONE_FOR_ALL:
		return "one_for_all";
	case STRATEGY_REST_FOR_ONE:
		return "rest_for_one";
	default:
		return "one_for_one";
	}
}

/* Fill an agent's settings with the defaults docs/workflow.md gives. */
static void
config_agent_defaults(struct agent_conf *ac)
{
	ac->instances = 1;
	ac->autostart = 1;
	ac->ready = READY_SPAWN;
	ac->hb_interval = 0;
	ac->hb_misses = 3;
	ac->restart = RESTART_TRANSIENT;
	ac->restart_max = 5;
	ac->restart_within = 60;
	ac->backoff_min = 1;
	ac->backoff_max = 30;
	ac->max_line = CORRAL_MAX_LINE_DEFAULT;
	ac->max_inflight = 16;
	ac->timeout = 30;
	ac->stop_grace = 2;
	ac->stop_timeout = 5;
	ac->max_children = 0;	/* 0: the workflow's limit */
	ac->max_depth = 0;
	ac->strategy = STRATEGY_ONE_FOR_ONE;
	ac->breaker_failures = 5;
	ac->breaker_reset = 60;
	ac->breaker_probes = 3;
}

static const struct {
	const char	*name;
	int		 resource;
	int		 is_size;
} config_rlimits[] = {
	{ "nofile", RLIMIT_NOFILE, 0 },
	{ "nproc", RLIMIT_NPROC, 0 },
	{ "as", RLIMIT_AS, 1 },
	{ "core", RLIMIT_CORE, 1 },
	{ "cpu", RLIMIT_CPU, 0 },
	{ "fsize", RLIMIT_FSIZE, 1 },
	{ "data", RLIMIT_DATA, 1 },
	{ "stack", RLIMIT_STACK, 1 },
};

/* Read an agent's `limits:` map of resource limits. */
static int
config_agent_limits(struct cload *cl, struct agent_conf *ac,
    const struct cnode *n, const char *path)
{
	const struct cnode	*k, *v;
	char			 p[256];
	size_t			 i, j, sz, slot;
	double			 d;

	if (cmap_check(cl, n, path, NULL) != 0)
		return -1;
	/* Merge over what defaults: gave; the same resource replaces. */
	ac->limits = xreallocarray(ac->limits, ac->nlimits + n->nkids / 2 + 1,
	    sizeof *ac->limits);
	for (i = 0; i + 1 < n->nkids; i += 2) {
		k = n->kids[i];
		v = n->kids[i + 1];
		snprintf(p, sizeof p, "%s.%s", path, k->str);
		for (j = 0; j < sizeof config_rlimits / sizeof config_rlimits[0];
		    j++)
			if (strcmp(config_rlimits[j].name, k->str) == 0)
				break;
		if (j == sizeof config_rlimits / sizeof config_rlimits[0])
			return cerr(cl, k, "%s: unknown key '%s' (one of "
			    "nofile, nproc, as, core, cpu, fsize, data, stack)",
			    path, k->str);
		for (slot = 0; slot < ac->nlimits; slot++)
			if (ac->limits[slot].resource ==
			    config_rlimits[j].resource)
				break;
		if (slot < ac->nlimits) {
			/* Replace the default: move the last into its place. */
			ac->limits[slot] = ac->limits[ac->nlimits - 1];
			ac->nlimits--;
		}
		ac->limits[ac->nlimits].resource = config_rlimits[j].resource;
		if (v->type == CN_SCALAR && strcmp(v->str, "unlimited") == 0)
			ac->limits[ac->nlimits].value = (long long)RLIM_INFINITY;
		else if (config_rlimits[j].is_size) {
			if (cget_size(cl, v, p, &sz) != 0)
				return -1;
			ac->limits[ac->nlimits].value = (long long)sz;
		} else if (config_rlimits[j].resource == RLIMIT_CPU) {
			if (cget_duration(cl, v, p, &d) != 0)
				return -1;
			ac->limits[ac->nlimits].value = (long long)ceil(d);
		} else {
			unsigned int	u;

			if (cget_uint(cl, v, p, 0, UINT_MAX, &u) != 0)
				return -1;
			ac->limits[ac->nlimits].value = u;
		}
		ac->nlimits++;
	}
	return 0;
}

/* Read one agent's settings; also used for the `defaults:` map. */
static int
config_agent(struct cload *cl, struct agent_conf *ac, const struct cnode *n,
    const char *path, int is_defaults)
{
	static const char *const keys[] = { "cmd", "instances", "autostart",
	    "role", "description", "ready", "heartbeat", "restart", "env",
	    "cwd", "max_line", "max_inflight", "timeout", "stop", "children",
	    "breaker", "limits", "user", "adapter", "budget", NULL };
	const struct cnode	*v, *k, *x;
	char			 p[256];
	size_t			 i;
	char			*s = NULL;

	if (cmap_check(cl, n, path, keys) != 0)
		return -1;
	for (i = 0; i + 1 < n->nkids; i += 2) {
		k = n->kids[i];
		v = n->kids[i + 1];
		snprintf(p, sizeof p, "%s.%s", path, k->str);
		if (strcmp(k->str, "cmd") == 0) {
			if (is_defaults)
				return cerr(cl, k, "%s: cmd cannot have a "
				    "default", path);
			if (v->type == CN_SCALAR)
				return cerr(cl, v, "%s: expected an argv list, "
				    "such as [./agent, --flag]", p);
			if (cget_strlist(cl, v, p, &ac->argv, &ac->argc) != 0)
				return -1;
			if (ac->argc == 0 || ac->argv[0][0] == '\0')
				return cerr(cl, v, "%s: the command is empty", p);
		} else if (strcmp(k->str, "instances") == 0) {
			if (cget_uint(cl, v, p, 1, 10000, &ac->instances) != 0)
				return -1;
		} else if (strcmp(k->str, "autostart") == 0) {
			if (cget_bool(cl, v, p, &ac->autostart) != 0)
				return -1;
		} else if (strcmp(k->str, "role") == 0) {
			if (cget_str(cl, v, p, &ac->role) != 0)
				return -1;
		} else if (strcmp(k->str, "description") == 0) {
			if (cget_str(cl, v, p, &ac->description) != 0)
				return -1;
		} else if (strcmp(k->str, "ready") == 0) {
			if (v->type == CN_SCALAR && strcmp(v->str, "spawn") == 0)
				ac->ready = READY_SPAWN;
			else if (v->type == CN_SCALAR &&
			    strcmp(v->str, "handshake") == 0)
				ac->ready = READY_HANDSHAKE;
			else
				return cerr(cl, v, "%s: expected spawn or "
				    "handshake", p);
		} else if (strcmp(k->str, "heartbeat") == 0) {
			static const char *const hk[] = { "interval", "misses",
			    NULL };
			if (v->type == CN_SCALAR && !v->quoted &&
			    (strcmp(v->str, "off") == 0 ||
			    strcmp(v->str, "false") == 0)) {
				ac->hb_interval = 0;
				continue;
			}
			if (v->type == CN_SCALAR) {
				if (cget_duration(cl, v, p, &ac->hb_interval))
					return -1;
				if (ac->hb_interval < 0.01)
					return cerr(cl, v, "%s: the interval "
					    "must be at least 10ms", p);
				continue;
			}
			if (cmap_check(cl, v, p, hk) != 0)
				return -1;
			if ((x = cmap_get(v, "interval")) != NULL) {
				if (cget_duration(cl, x, csub(p, "interval"), &ac->hb_interval))
					return -1;
				if (ac->hb_interval < 0.01)
					return cerr(cl, x, "%s: the interval "
					    "must be at least 10ms", p);
			} else if (ac->hb_interval == 0)
				ac->hb_interval = 5;
			if ((x = cmap_get(v, "misses")) != NULL &&
			    cget_uint(cl, x, csub(p, "misses"), 1, 1000, &ac->hb_misses) != 0)
				return -1;
		} else if (strcmp(k->str, "restart") == 0) {
			static const char *const rk[] = { "policy", "max",
			    "within", "backoff", "backoff_max", NULL };
			const struct cnode *pol = v;
			if (v->type == CN_MAP) {
				if (cmap_check(cl, v, p, rk) != 0)
					return -1;
				pol = cmap_get(v, "policy");
				if ((x = cmap_get(v, "max")) != NULL &&
				    cget_uint(cl, x, csub(p, "max"), 0, 100000,
				    &ac->restart_max) != 0)
					return -1;
				if ((x = cmap_get(v, "within")) != NULL &&
				    cget_duration(cl, x, csub(p, "within"),
				    &ac->restart_within) != 0)
					return -1;
				if ((x = cmap_get(v, "backoff")) != NULL &&
				    cget_duration(cl, x, csub(p, "backoff"), &ac->backoff_min))
					return -1;
				if ((x = cmap_get(v, "backoff_max")) != NULL &&
				    cget_duration(cl, x, csub(p, "backoff_max"), &ac->backoff_max))
					return -1;
				if (ac->backoff_min < 1)
					ac->backoff_min = 1;
				if (ac->backoff_max < ac->backoff_min)
					ac->backoff_max = ac->backoff_min;
			}
			if (pol == NULL)
				continue;
			ac->restart_set = 1;
			if (pol->type == CN_SCALAR &&
			    strcmp(pol->str, "permanent") == 0)
				ac->restart = RESTART_PERMANENT;
			else if (pol->type == CN_SCALAR &&
			    strcmp(pol->str, "transient") == 0)
				ac->restart = RESTART_TRANSIENT;
			else if (pol->type == CN_SCALAR &&
			    strcmp(pol->str, "temporary") == 0)
				ac->restart = RESTART_TEMPORARY;
			else
				return cerr(cl, pol, "%s: expected permanent, "
				    "transient or temporary", p);
		} else if (strcmp(k->str, "env") == 0) {
			size_t j, e;
			if (cmap_check(cl, v, p, NULL) != 0)
				return -1;
			/* Merge over what defaults: gave; same name replaces. */
			ac->env = xreallocarray(ac->env, ac->nenv + v->nkids / 2 +
			    1, sizeof *ac->env);
			for (j = 0; j + 1 < v->nkids; j += 2) {
				if (v->kids[j + 1]->type != CN_SCALAR)
					return cerr(cl, v->kids[j + 1],
					    "%s.%s: expected a string", p,
					    v->kids[j]->str);
				if (v->kids[j]->str[0] == '\0' ||
				    strchr(v->kids[j]->str, '=') != NULL)
					return cerr(cl, v->kids[j], "%s: '%s' is "
					    "not a valid variable name", p,
					    v->kids[j]->str);
				for (e = 0; e < ac->nenv; e++)
					if (strcmp(ac->env[e].key,
					    v->kids[j]->str) == 0)
						break;
				if (e < ac->nenv) {
					free(ac->env[e].value);
					ac->env[e].value =
					    xstrdup(v->kids[j + 1]->str);
					continue;
				}
				ac->env[ac->nenv].key = xstrdup(v->kids[j]->str);
				ac->env[ac->nenv].value =
				    xstrdup(v->kids[j + 1]->str);
				ac->nenv++;
			}
		} else if (strcmp(k->str, "cwd") == 0) {
			if (cget_str(cl, v, p, &ac->cwd) != 0)
				return -1;
		} else if (strcmp(k->str, "max_line") == 0) {
			if (cget_size(cl, v, p, &ac->max_line) != 0)
				return -1;
			if (ac->max_line < 64 ||
			    ac->max_line > CORRAL_MAX_LINE_LIMIT)
				return cerr(cl, v, "%s: must be between 64 bytes "
				    "and 256MiB", p);
		} else if (strcmp(k->str, "max_inflight") == 0) {
			if (cget_uint(cl, v, p, 1, 1000000,
			    &ac->max_inflight) != 0)
				return -1;
		} else if (strcmp(k->str, "timeout") == 0) {
			if (cget_duration(cl, v, p, &ac->timeout) != 0)
				return -1;
		} else if (strcmp(k->str, "stop") == 0) {
			static const char *const sk[] = { "grace", "timeout",
			    NULL };
			if (cmap_check(cl, v, p, sk) != 0)
				return -1;
			if ((x = cmap_get(v, "grace")) != NULL &&
			    cget_duration(cl, x, csub(p, "grace"), &ac->stop_grace) != 0)
				return -1;
			if ((x = cmap_get(v, "timeout")) != NULL &&
			    cget_duration(cl, x, csub(p, "timeout"), &ac->stop_timeout) != 0)
				return -1;
		} else if (strcmp(k->str, "children") == 0) {
			static const char *const ck[] = { "max", "depth",
			    "strategy", NULL };
			if (cmap_check(cl, v, p, ck) != 0)
				return -1;
			if ((x = cmap_get(v, "max")) != NULL &&
			    cget_uint(cl, x, csub(p, "max"), 0, 100000, &ac->max_children))
				return -1;
			if ((x = cmap_get(v, "depth")) != NULL &&
			    cget_uint(cl, x, csub(p, "depth"), 0, 1000, &ac->max_depth))
				return -1;
			if ((x = cmap_get(v, "strategy")) != NULL) {
				if (x->type == CN_SCALAR &&
				    strcmp(x->str, "one_for_one") == 0)
					ac->strategy = STRATEGY_ONE_FOR_ONE;
				else if (x->type == CN_SCALAR &&
				    strcmp(x->str, "one_for_all") == 0)
					ac->strategy = STRATEGY_ONE_FOR_ALL;
				else if (x->type == CN_SCALAR &&
				    strcmp(x->str, "rest_for_one") == 0)
					ac->strategy = STRATEGY_REST_FOR_ONE;
				else
					return cerr(cl, x, "%s.strategy: "
					    "expected one_for_one, one_for_all "
					    "or rest_for_one", p);
			}
		} else if (strcmp(k->str, "breaker") == 0) {
			static const char *const bk[] = { "failures", "reset",
			    "probes", NULL };
			if (cmap_check(cl, v, p, bk) != 0)
				return -1;
			if ((x = cmap_get(v, "failures")) != NULL &&
			    cget_uint(cl, x, csub(p, "failures"), 1, 100000,
			    &ac->breaker_failures) != 0)
				return -1;
			if ((x = cmap_get(v, "reset")) != NULL &&
			    cget_duration(cl, x, csub(p, "reset"), &ac->breaker_reset) != 0)
				return -1;
			if ((x = cmap_get(v, "probes")) != NULL &&
			    cget_uint(cl, x, csub(p, "probes"), 1, 1000, &ac->breaker_probes))
				return -1;
		} else if (strcmp(k->str, "limits") == 0) {
			if (config_agent_limits(cl, ac, v, p) != 0)
				return -1;
		} else if (strcmp(k->str, "budget") == 0) {
			static const char *const bk[] = { "tokens", "cost",
			    "time", NULL };
			if (cmap_check(cl, v, p, bk) != 0)
				return -1;
			if ((x = cmap_get(v, "tokens")) != NULL &&
			    cget_double(cl, x, csub(p, "tokens"), 0, 1e18, &ac->budget_tokens))
				return -1;
			if ((x = cmap_get(v, "cost")) != NULL &&
			    cget_double(cl, x, csub(p, "cost"), 0, 1e12, &ac->budget_cost))
				return -1;
			if ((x = cmap_get(v, "time")) != NULL &&
			    cget_duration(cl, x, csub(p, "time"), &ac->budget_time))
				return -1;
		} else if (strcmp(k->str, "user") == 0) {
			if (cget_str(cl, v, p, &ac->user) != 0)
				return -1;
		} else if (strcmp(k->str, "adapter") == 0) {
			if (ac->adapter_conf != NULL)
				json_decref(ac->adapter_conf);
			ac->adapter_conf = NULL;
			if (v->type == CN_SCALAR) {
				if (cget_str(cl, v, p, &ac->adapter) != 0)
					return -1;
				ac->adapter_conf = json_object();
			} else {
				x = cmap_get(v, "type");
				if (v->type != CN_MAP || x == NULL ||
				    x->type != CN_SCALAR)
					return cerr(cl, v, "%s: expected an "
					    "adapter name or a mapping with "
					    "type:", p);
				if (cmap_check(cl, v, p, NULL) != 0)
					return -1;
				free(ac->adapter);
				ac->adapter = xstrdup(x->str);
				ac->adapter_conf = cnode_json(v);
			}

		}
	}
	free(s);
	return 0;
}

/* Copy settings from the defaults into an agent before its own are read. */
static void
config_agent_copy(struct agent_conf *dst, const struct agent_conf *src)
{
	size_t	i;

	*dst = *src;
	dst->name = NULL;
	dst->argv = NULL;
	dst->argc = 0;
	dst->cwd = src->cwd ? xstrdup(src->cwd) : NULL;
	dst->role = src->role ? xstrdup(src->role) : NULL;
	dst->description = NULL;
	dst->user = src->user ? xstrdup(src->user) : NULL;
	dst->adapter = src->adapter ? xstrdup(src->adapter) : NULL;
	dst->adapter_conf = src->adapter_conf ?
	    json_deep_copy(src->adapter_conf) : NULL;
	dst->env = NULL;
	dst->nenv = 0;
	if (src->nenv > 0) {
		dst->env = xcalloc(src->nenv + 1, sizeof *dst->env);
		for (i = 0; i < src->nenv; i++) {
			dst->env[i].key = xstrdup(src->env[i].key);
			dst->env[i].value = xstrdup(src->env[i].value);
		}
		dst->nenv = src->nenv;
	}
	dst->limits = NULL;
	dst->nlimits = 0;
	if (src->nlimits > 0) {
		dst->limits = xcalloc(src->nlimits, sizeof *dst->limits);
		memcpy(dst->limits, src->limits,
		    src->nlimits * sizeof *dst->limits);
		dst->nlimits = src->nlimits;
	}
}

/* Free one agent's settings. */
static void
config_agent_free(struct agent_conf *ac)
{
	size_t	i;

	free(ac->name);
	for (i = 0; i < ac->argc; i++)
		free(ac->argv[i]);
	free(ac->argv);
	free(ac->cwd);
	for (i = 0; i < ac->nenv; i++) {
		free(ac->env[i].key);
		free(ac->env[i].value);
	}
	free(ac->env);
	free(ac->role);
	free(ac->description);
	free(ac->limits);
	free(ac->user);
	free(ac->adapter);
	if (ac->adapter_conf != NULL)
		json_decref(ac->adapter_conf);
}

/* Find an agent's settings by name. */
struct agent_conf *
config_find_agent(const struct workflow *wf, const char *name)
{
	size_t	i;

	for (i = 0; i < wf->nagents; i++)
		if (strcmp(wf->agents[i].name, name) == 0)
			return &wf->agents[i];
	return NULL;
}

/* Return nonzero if s is a usable agent name. */
static int
config_valid_name(const char *s)
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

/* Read the routes: map of intent (or "*") to an agent name or a list. */
static int
config_routes(struct cload *cl, const struct cnode *n)
{
	struct workflow		*wf = cl->wf;
	const struct cnode	*k, *v;
	struct route_conf	*rc;
	char			 p[256], **names = NULL;
	size_t			 i, j, nnames = 0;

	if (cmap_check(cl, n, "routes", NULL) != 0)
		return -1;
	wf->routes = xcalloc(n->nkids / 2 + 1, sizeof *wf->routes);
	for (i = 0; i + 1 < n->nkids; i += 2) {
		k = n->kids[i];
		v = n->kids[i + 1];
		snprintf(p, sizeof p, "routes.%s", k->str);
		if (strcmp(k->str, "*") != 0 &&
		    protocol_intent(k->str, k->len) < 0)
			return cerr(cl, k, "routes: '%s' is not an intent (one "
			    "of plan, decompose, execute, route, retrieve, "
			    "analyze, summarize, reflect, finalize, tool.call, "
			    "or \"*\" for the fallback)", k->str);
		if (cget_strlist(cl, v, p, &names, &nnames) != 0)
			goto fail;
		if (nnames == 0) {
			cerr(cl, v, "%s: names no agent", p);
			goto fail;
		}
		rc = &wf->routes[wf->nroutes++];
		rc->intent = xstrdup(k->str);
		rc->line = k->line;
		rc->agents = xcalloc(nnames, sizeof *rc->agents);
		for (j = 0; j < nnames; j++) {
			rc->agents[j] = config_find_agent(wf, names[j]);
			if (rc->agents[j] == NULL) {
				cerr(cl, v->type == CN_SEQ ? v->kids[j] : v,
				    "%s: no agent named '%s' in agents:", p,
				    names[j]);
				goto fail;
			}
			rc->nagents++;
		}
		for (j = 0; j < nnames; j++)
			free(names[j]);
		free(names);
		names = NULL;
	}
	return 0;
fail:
	if (names != NULL) {
		for (j = 0; j < nnames; j++)
			free(names[j]);
		free(names);
	}
	return -1;
}

/* Read the top-level `limits:` map. */
static int
config_limits(struct cload *cl, const struct cnode *n)
{
	static const char *const keys[] = { "max_steps", "max_depth",
	    "deadline", "max_queue", "max_inflight", "max_agents",
	    "tree_depth", "tree_children", "budget", NULL };
	static const char *const bkeys[] = { "tokens", "cost", "time", NULL };
	struct workflow		*wf = cl->wf;
	const struct cnode	*x, *b;

	if (cmap_check(cl, n, "limits", keys) != 0)
		return -1;
	if ((x = cmap_get(n, "max_steps")) != NULL &&
	    cget_uint(cl, x, "limits.max_steps", 1, UINT_MAX, &wf->max_steps))
		return -1;
	if ((x = cmap_get(n, "max_depth")) != NULL &&
	    cget_uint(cl, x, "limits.max_depth", 1, 100000, &wf->max_depth))
		return -1;
	if ((x = cmap_get(n, "deadline")) != NULL &&
	    cget_duration(cl, x, "limits.deadline", &wf->deadline))
		return -1;
	if ((x = cmap_get(n, "max_queue")) != NULL &&
	    cget_uint(cl, x, "limits.max_queue", 1, 10000000, &wf->max_queue))
		return -1;
	if ((x = cmap_get(n, "max_inflight")) != NULL &&
	    cget_uint(cl, x, "limits.max_inflight", 1, 10000000,
	    &wf->max_inflight))
		return -1;
	if ((x = cmap_get(n, "max_agents")) != NULL &&
	    cget_uint(cl, x, "limits.max_agents", 1, 1000000, &wf->max_agents))
		return -1;
	if ((x = cmap_get(n, "tree_depth")) != NULL &&
	    cget_uint(cl, x, "limits.tree_depth", 0, 1000, &wf->tree_depth))
		return -1;
	if ((x = cmap_get(n, "tree_children")) != NULL &&
	    cget_uint(cl, x, "limits.tree_children", 0, 100000,
	    &wf->tree_children))
		return -1;
	if ((b = cmap_get(n, "budget")) != NULL) {
		if (cmap_check(cl, b, "limits.budget", bkeys) != 0)
			return -1;
		if ((x = cmap_get(b, "tokens")) != NULL &&
		    cget_double(cl, x, "limits.budget.tokens", 0, 1e18,
		    &wf->budget_tokens))
			return -1;
		if ((x = cmap_get(b, "cost")) != NULL &&
		    cget_double(cl, x, "limits.budget.cost", 0, 1e12,
		    &wf->budget_cost))
			return -1;
		if ((x = cmap_get(b, "time")) != NULL &&
		    cget_duration(cl, x, "limits.budget.time", &wf->budget_time))
			return -1;
	}
	return 0;
}

/* Check the whole tree into cl->wf. */
static int
config_build(struct cload *cl, const struct cnode *root)
{
	static const char *const keys[] = { "name", "description", "start",
	    "agents", "defaults", "routes", "reflection", "limits",
	    "env_allow", "workspace", "retry", "inline_spawn", "path",
	    "shutdown", NULL };
	static const char *const rkeys[] = { "below", "max_rounds",
	    "missing", NULL };
	static const char *const tkeys[] = { "max", "initial", "factor",
	    "max_delay", NULL };
	struct workflow		*wf = cl->wf;
	struct agent_conf	 defaults;
	const struct cnode	*agents, *x, *r, *k;
	char			 p[256], *desc = NULL;
	size_t			 i;
	int			 rc = -1, has_defaults = 0;

	memset(&defaults, 0, sizeof defaults);
	config_agent_defaults(&defaults);
	if (cmap_check(cl, root, "the workflow", keys) != 0)
		goto out;
	if ((x = cmap_get(root, "name")) != NULL &&
	    cget_str(cl, x, "name", &wf->name) != 0)
		goto out;
	if ((x = cmap_get(root, "description")) != NULL &&
	    cget_str(cl, x, "description", &desc) != 0)
		goto out;
	if ((x = cmap_get(root, "start")) != NULL) {
		if (cget_str(cl, x, "start", &wf->start) != 0)
			goto out;
		if (protocol_intent(wf->start, strlen(wf->start)) < 0) {
			cerr(cl, x, "start: '%s' is not an intent", wf->start);
			goto out;
		}
	}
	if ((x = cmap_get(root, "defaults")) != NULL) {
		if (config_agent(cl, &defaults, x, "defaults", 1) != 0)
			goto out;
		has_defaults = 1;
	}

	if ((agents = cmap_get(root, "agents")) == NULL) {
		cerr(cl, root, "the workflow has no agents: key");
		goto out;
	}
	if (cmap_check(cl, agents, "agents", NULL) != 0)
		goto out;
	if (agents->nkids == 0) {
		cerr(cl, agents, "agents: names no agent");
		goto out;
	}
	wf->agents = xcalloc(agents->nkids / 2, sizeof *wf->agents);
	for (i = 0; i + 1 < agents->nkids; i += 2) {
		struct agent_conf *ac = &wf->agents[wf->nagents];

		k = agents->kids[i];
		if (!config_valid_name(k->str)) {
			cerr(cl, k, "agents: '%s' is not a valid agent name "
			    "(letters, digits, '_' and '-', at most 48)",
			    k->str);
			goto out;
		}
		config_agent_copy(ac, &defaults);
		ac->name = xstrdup(k->str);
		ac->line = k->line;
		ac->column = k->column;
		ac->index = (unsigned int)wf->nagents;
		wf->nagents++;
		snprintf(p, sizeof p, "agents.%s", k->str);
		if (config_agent(cl, ac, agents->kids[i + 1], p, 0) != 0)
			goto out;
		if (ac->argv == NULL && (ac->adapter == NULL ||
		    strcmp(ac->adapter, "exec") != 0)) {
			cerr(cl, agents->kids[i + 1], "%s: no cmd: given", p);
			goto out;
		}
		if (ac->adapter != NULL) {
			char why[256];

			x = cmap_get(agents->kids[i + 1], "adapter");
			if (adapter_table_check(ac, why, sizeof why) != 0) {
				cerr(cl, x != NULL ? x : agents->kids[i + 1],
				    "%s.adapter: %s", p, why);
				goto out;
			}
		}
	}

	if ((r = cmap_get(root, "routes")) != NULL &&
	    config_routes(cl, r) != 0)
		goto out;

	if ((r = cmap_get(root, "reflection")) != NULL) {
		if (cmap_check(cl, r, "reflection", rkeys) != 0)
			goto out;
		if ((x = cmap_get(r, "below")) != NULL &&
		    cget_double(cl, x, "reflection.below", 0, 1,
		    &wf->refl_below) != 0)
			goto out;
		if ((x = cmap_get(r, "max_rounds")) != NULL &&
		    cget_uint(cl, x, "reflection.max_rounds", 0, 100,
		    &wf->refl_max_rounds) != 0)
			goto out;
		if ((x = cmap_get(r, "missing")) != NULL) {
			if (x->type == CN_SCALAR && strcmp(x->str, "accept") == 0)
				wf->refl_missing = MISSING_ACCEPT;
			else if (x->type == CN_SCALAR &&
			    strcmp(x->str, "reflect") == 0)
				wf->refl_missing = MISSING_REFLECT;
			else {
				cerr(cl, x, "reflection.missing: expected accept "
				    "or reflect");
				goto out;
			}
		}
	}
	if ((r = cmap_get(root, "limits")) != NULL && config_limits(cl, r) != 0)
		goto out;
	if ((x = cmap_get(root, "shutdown")) != NULL) {
		if (x->type == CN_SCALAR && strcmp(x->str, "sequential") == 0)
			wf->shutdown_parallel = 0;
		else if (x->type == CN_SCALAR && strcmp(x->str, "parallel") == 0)
			wf->shutdown_parallel = 1;
		else {
			cerr(cl, x, "shutdown: expected sequential or parallel");
			goto out;
		}
	}
	if ((x = cmap_get(root, "path")) != NULL &&
	    cget_strlist(cl, x, "path", &wf->agent_path, &wf->npath) != 0)
		goto out;
	if ((x = cmap_get(root, "inline_spawn")) != NULL &&
	    cget_bool(cl, x, "inline_spawn", &wf->inline_spawn) != 0)
		goto out;
	if ((x = cmap_get(root, "env_allow")) != NULL &&
	    cget_strlist(cl, x, "env_allow", &wf->env_allow,
	    &wf->nenv_allow) != 0)
		goto out;
	if ((x = cmap_get(root, "workspace")) != NULL &&
	    cget_str(cl, x, "workspace", &wf->workspace) != 0)
		goto out;
	if ((r = cmap_get(root, "retry")) != NULL) {
		if (cmap_check(cl, r, "retry", tkeys) != 0)
			goto out;
		if ((x = cmap_get(r, "max")) != NULL &&
		    cget_uint(cl, x, "retry.max", 0, 100, &wf->retries) != 0)
			goto out;
		if ((x = cmap_get(r, "initial")) != NULL &&
		    cget_duration(cl, x, "retry.initial", &wf->retry_initial))
			goto out;
		if ((x = cmap_get(r, "factor")) != NULL &&
		    cget_double(cl, x, "retry.factor", 1, 100,
		    &wf->retry_factor) != 0)
			goto out;
		if ((x = cmap_get(r, "max_delay")) != NULL &&
		    cget_duration(cl, x, "retry.max_delay", &wf->retry_max))
			goto out;
	}
	rc = 0;
out:
	(void)has_defaults;
	free(desc);
	defaults.name = NULL;
	config_agent_free(&defaults);
	return rc;
}

/* Allocate a workflow with its defaults. */
static struct workflow *
config_new(const char *path)
{
	struct workflow	*wf;
	char		*copy, *slash, *real;

	wf = xcalloc(1, sizeof *wf);
	wf->path = xstrdup(path);
	copy = xstrdup(path);
	if ((slash = strrchr(copy, '/')) != NULL) {
		if (slash == copy)
			slash[1] = '\0';
		else
			*slash = '\0';
	} else {
		free(copy);
		copy = xstrdup(".");
	}
	if ((real = realpath(copy, NULL)) != NULL) {
		free(copy);
		copy = real;
	}
	wf->dir = copy;
	wf->start = xstrdup("plan");
	wf->refl_below = 0.5;
	wf->refl_max_rounds = 1;
	wf->refl_missing = MISSING_ACCEPT;
	wf->max_steps = 1000;
	wf->max_depth = 32;
	wf->deadline = 0;
	wf->max_queue = 10000;
	wf->max_inflight = 1024;
	wf->max_agents = 1024;
	wf->tree_depth = 8;
	wf->tree_children = 128;
	wf->retries = 3;
	wf->retry_initial = 1;
	wf->retry_factor = 2;
	wf->retry_max = 10;
	return wf;
}

/* Load a workflow from text; name is used in messages. */
struct workflow *
config_load_string(const char *text, size_t len, const char *name,
    struct config_error *err)
{
	struct cload	 cl;
	struct cnode	*root;

	memset(err, 0, sizeof *err);
	memset(&cl, 0, sizeof cl);
	cl.err = err;
	cl.file = name;
	cl.wf = config_new(name);
	if (memchr(text, '\0', len) != NULL) {
		cerr(&cl, NULL, "the file holds a NUL byte");
		config_free(cl.wf);
		return NULL;
	}
	{
		/*
		 * YAML is UTF-8 here; checking first also keeps libfyaml
		 * 0.7.12 out of a loop it falls into on invalid UTF-8 in a
		 * directive line.
		 */
		size_t	bad, i, line = 1, col = 1;

		if (!util_utf8_valid(text, len, &bad)) {
			for (i = 0; i < bad; i++) {
				if (text[i] == '\n') {
					line++;
					col = 1;
				} else
					col++;
			}
			struct cnode where = { .line = (int)line,
			    .column = (int)col };
			cerr(&cl, &where, "the file is not valid UTF-8");
			config_free(cl.wf);
			return NULL;
		}
	}
	if ((root = cnode_parse(&cl, text, len)) == NULL) {
		config_free(cl.wf);
		return NULL;
	}
	if (config_build(&cl, root) != 0) {
		cnode_free(root);
		config_free(cl.wf);
		return NULL;
	}
	cnode_free(root);
	return cl.wf;
}

/* Load a workflow file. */
struct workflow *
config_load(const char *path, struct config_error *err)
{
	struct workflow	*wf;
	FILE		*f;
	char		*text = NULL;
	size_t		 len = 0, cap = 0, n;

	memset(err, 0, sizeof *err);
	if ((f = fopen(path, "r")) == NULL) {
		snprintf(err->msg, sizeof err->msg, "%s", strerror(errno));
		return NULL;
	}
	for (;;) {
		if (cap - len < 65536) {
			cap = cap ? cap * 2 : 65536;
			if (cap > 16 * 1024 * 1024) {
				snprintf(err->msg, sizeof err->msg, "the file is "
				    "larger than 16MiB");
				free(text);
				fclose(f);
				return NULL;
			}
			text = xreallocarray(text, cap, 1);
		}
		n = fread(text + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		snprintf(err->msg, sizeof err->msg, "%s", strerror(errno));
		free(text);
		fclose(f);
		return NULL;
	}
	fclose(f);
	wf = config_load_string(text, len, path, err);
	free(text);
	return wf;
}

/* Free a workflow. */
void
config_free(struct workflow *wf)
{
	size_t	i;

	if (wf == NULL)
		return;
	for (i = 0; i < wf->nagents; i++)
		config_agent_free(&wf->agents[i]);
	free(wf->agents);
	for (i = 0; i < wf->nroutes; i++) {
		free(wf->routes[i].intent);
		free(wf->routes[i].agents);
	}
	free(wf->routes);
	for (i = 0; i < wf->nenv_allow; i++)
		free(wf->env_allow[i]);
	free(wf->env_allow);
	for (i = 0; i < wf->npath; i++)
		free(wf->agent_path[i]);
	free(wf->agent_path);
	free(wf->workspace);
	free(wf->path);
	free(wf->dir);
	free(wf->name);
	free(wf->start);
	free(wf);
}

/* Print a string as a YAML scalar, quoting when it needs it. */
static void
config_print_str(FILE *f, const char *s)
{
	const char	*p;
	int		 plain = (*s != '\0');

	for (p = s; *p != '\0' && plain; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("._/-+", *p) != NULL))
			plain = 0;
	}
	if (plain && strcmp(s, "true") != 0 && strcmp(s, "false") != 0 &&
	    strcmp(s, "null") != 0 && strcmp(s, "yes") != 0 &&
	    strcmp(s, "no") != 0 && strcmp(s, "on") != 0 &&
	    strcmp(s, "off") != 0 && !(s[0] >= '0' && s[0] <= '9') &&
	    s[0] != '-') {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (p = s; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if ((unsigned char)*p < 0x20)
			fprintf(f, "\\x%02x", (unsigned char)*p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* Print a duration setting. */
static void
config_print_dur(FILE *f, const char *indent, const char *key, double d)
{
	char	buf[64];

	util_format_duration(buf, sizeof buf, d);
	fprintf(f, "%s%s: %s\n", indent, key, buf);
}

/*
 * Print the workflow back in normalized form: every key, with defaults
 * filled in, in a fixed order.  `corral check` prints this, and the golden
 * tests compare it.
 */
void
config_print(FILE *f, const struct workflow *wf)
{
	const struct agent_conf	*ac;
	const struct route_conf	*rc;
	char			 buf[64];
	size_t			 i, j, k;

	fprintf(f, "name: ");
	config_print_str(f, wf->name != NULL ? wf->name : "");
	fprintf(f, "\nstart: %s\n", wf->start);
	fprintf(f, "agents:\n");
	for (i = 0; i < wf->nagents; i++) {
		ac = &wf->agents[i];
		fprintf(f, "  %s:\n", ac->name);
		if (ac->argc > 0) {
			fprintf(f, "    cmd: [");
			for (j = 0; j < ac->argc; j++) {
				if (j > 0)
					fprintf(f, ", ");
				config_print_str(f, ac->argv[j]);
			}
			fprintf(f, "]\n");
		}
		if (ac->adapter != NULL) {
			char *a = json_dumps(ac->adapter_conf,
			    CORRAL_JSON_FLAGS | JSON_SORT_KEYS);
			fprintf(f, "    adapter: %s\n", a != NULL ? a : "{}");
			free(a);
		}
		fprintf(f, "    instances: %u\n", ac->instances);
		fprintf(f, "    autostart: %s\n", ac->autostart ? "true" :
		    "false");
		if (ac->role != NULL) {
			fprintf(f, "    role: ");
			config_print_str(f, ac->role);
			fputc('\n', f);
		}
		fprintf(f, "    ready: %s\n", ac->ready == READY_SPAWN ?
		    "spawn" : "handshake");
		if (ac->hb_interval == 0)
			fprintf(f, "    heartbeat: off\n");
		else {
			util_format_duration(buf, sizeof buf, ac->hb_interval);
			fprintf(f, "    heartbeat: {interval: %s, misses: %u}\n",
			    buf, ac->hb_misses);
		}
		fprintf(f, "    restart:\n      policy: %s\n      max: %u\n",
		    config_restart_name(ac->restart), ac->restart_max);
		config_print_dur(f, "      ", "within", ac->restart_within);
		config_print_dur(f, "      ", "backoff", ac->backoff_min);
		config_print_dur(f, "      ", "backoff_max", ac->backoff_max);
		if (ac->nenv > 0) {
			fprintf(f, "    env:\n");
			for (j = 0; j < ac->nenv; j++) {
				fprintf(f, "      %s: ", ac->env[j].key);
				config_print_str(f, ac->env[j].value);
				fputc('\n', f);
			}
		}
		if (ac->cwd != NULL) {
			fprintf(f, "    cwd: ");
			config_print_str(f, ac->cwd);
			fputc('\n', f);
		}
		util_format_size(buf, sizeof buf, ac->max_line);
		fprintf(f, "    max_line: %s\n", buf);
		fprintf(f, "    max_inflight: %u\n", ac->max_inflight);
		config_print_dur(f, "    ", "timeout", ac->timeout);
		fprintf(f, "    stop:\n");
		config_print_dur(f, "      ", "grace", ac->stop_grace);
		config_print_dur(f, "      ", "timeout", ac->stop_timeout);
		fprintf(f, "    children: {max: %u, depth: %u, strategy: %s}\n",
		    ac->max_children, ac->max_depth,
		    config_strategy_name(ac->strategy));
		util_format_duration(buf, sizeof buf, ac->breaker_reset);
		fprintf(f, "    breaker: {failures: %u, reset: %s, probes: %u}\n",
		    ac->breaker_failures, buf, ac->breaker_probes);
		if (ac->budget_tokens > 0 || ac->budget_cost > 0 ||
		    ac->budget_time > 0) {
			util_format_duration(buf, sizeof buf, ac->budget_time);
			fprintf(f, "    budget: {tokens: %g, cost: %g, time: %s}\n",
			    ac->budget_tokens, ac->budget_cost, buf);
		}
		if (ac->nlimits > 0) {
			fprintf(f, "    limits:\n");
			for (j = 0; j < ac->nlimits; j++) {
				for (k = 0; k < sizeof config_rlimits /
				    sizeof config_rlimits[0]; k++)
					if (config_rlimits[k].resource ==
					    ac->limits[j].resource)
						break;
				if (ac->limits[j].value ==
				    (long long)RLIM_INFINITY)
					fprintf(f, "      %s: unlimited\n",
					    config_rlimits[k].name);
				else
					fprintf(f, "      %s: %lld\n",
					    config_rlimits[k].name,
					    ac->limits[j].value);
			}
		}
		if (ac->user != NULL) {
			fprintf(f, "    user: ");
			config_print_str(f, ac->user);
			fputc('\n', f);
		}
	}
	fprintf(f, "routes:%s\n", wf->nroutes == 0 ? " {}" : "");
	for (i = 0; i < wf->nroutes; i++) {
		rc = &wf->routes[i];
		fprintf(f, "  ");
		config_print_str(f, rc->intent);
		fprintf(f, ": [");
		for (j = 0; j < rc->nagents; j++)
			fprintf(f, "%s%s", j > 0 ? ", " : "",
			    rc->agents[j]->name);
		fprintf(f, "]\n");
	}
	fprintf(f, "reflection:\n  below: %g\n  max_rounds: %u\n"
	    "  missing: %s\n", wf->refl_below, wf->refl_max_rounds,
	    wf->refl_missing == MISSING_ACCEPT ? "accept" : "reflect");
	fprintf(f, "limits:\n  max_steps: %u\n  max_depth: %u\n",
	    wf->max_steps, wf->max_depth);
	if (wf->deadline == 0)
		fprintf(f, "  deadline: none\n");
	else
		config_print_dur(f, "  ", "deadline", wf->deadline);
	fprintf(f, "  max_queue: %u\n  max_inflight: %u\n  max_agents: %u\n"
	    "  tree_depth: %u\n  tree_children: %u\n", wf->max_queue,
	    wf->max_inflight, wf->max_agents, wf->tree_depth,
	    wf->tree_children);
	fprintf(f, "  budget: {tokens: %g, cost: %g, time: ",
	    wf->budget_tokens, wf->budget_cost);
	util_format_duration(buf, sizeof buf, wf->budget_time);
	fprintf(f, "%s}\n", buf);
	util_format_duration(buf, sizeof buf, wf->retry_initial);
	fprintf(f, "retry: {max: %u, initial: %s, factor: %g, ", wf->retries,
	    buf, wf->retry_factor);
	util_format_duration(buf, sizeof buf, wf->retry_max);
	fprintf(f, "max_delay: %s}\n", buf);
	fprintf(f, "inline_spawn: %s\n", wf->inline_spawn ? "true" : "false");
	fprintf(f, "shutdown: %s\n", wf->shutdown_parallel ? "parallel" :
	    "sequential");
	if (wf->npath > 0) {
		fprintf(f, "path: [");
		for (i = 0; i < wf->npath; i++) {
			if (i > 0)
				fprintf(f, ", ");
			config_print_str(f, wf->agent_path[i]);
		}
		fprintf(f, "]\n");
	}
	if (wf->nenv_allow > 0) {
		fprintf(f, "env_allow: [");
		for (i = 0; i < wf->nenv_allow; i++)
			fprintf(f, "%s%s", i > 0 ? ", " : "", wf->env_allow[i]);
		fprintf(f, "]\n");
	}
	if (wf->workspace != NULL) {
		fprintf(f, "workspace: ");
		config_print_str(f, wf->workspace);
		fputc('\n', f);
	}
}
