/*
 * The workflow file: YAML (JSON is YAML too), made a tree of nodes that
 * remember where the file has them (config-yaml.c), then read into struct
 * workflow by walking the key table of config-table.c, which also gives
 * the defaults and the order `corral check --print` prints in.  Every
 * error names the file, line and column and the key's path, and unknown
 * keys are errors, so a typo never silently becomes a default.
 *
 * config_check then checks what the file alone cannot say (the programs
 * exist) and warns of what would fail later; `corral check`, `run` and
 * `serve` all go through it.
 */

#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"
#include "config.h"

/* Bounds this large only keep sums finite; the docs show none. */
#define CONFIG_VAST	1e12

/*
 * Record an error at a node's position; always returns -1.  Loading goes
 * on with the next key, so that one run of corral check shows every
 * problem; beyond CONFIG_ERRORS they are only counted.
 */
int
config_err(struct config_reader *rd, const struct config_node *n,
    const char *fmt, ...)
{
	struct config_error	*e = rd->err;
	int			*line, *column;
	char			*msg;
	va_list			 ap;

	if (e->count == 0) {
		line = &e->line;
		column = &e->column;
		msg = e->msg;
	} else if (e->count < CONFIG_ERRORS) {
		line = &e->more[e->count - 1].line;
		column = &e->more[e->count - 1].column;
		msg = e->more[e->count - 1].msg;
	} else {
		e->count++;
		return -1;
	}
	e->count++;
	*line = n != NULL ? n->line : 0;
	*column = n != NULL ? n->column : 0;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	return -1;
}

/* Check key i of a map: a plain string, not given before. */
static int
config_map_key(struct config_reader *rd, const struct config_node *map,
    size_t i, const char *path)
{
	const struct config_node	*k = map->kids[i];
	size_t				 j;

	if (k->type != CONFIG_SCALAR)
		return config_err(rd, k, "%s: keys must be plain strings",
		    path);
	for (j = 0; j < i; j += 2) {
		/* An earlier bad key was reported already; every error is. */
		if (map->kids[j]->type != CONFIG_SCALAR)
			continue;
		if (strcmp(map->kids[j]->str, k->str) == 0)
			return config_err(rd, k, "%s: duplicate key '%s'", path,
			    k->str);
	}
	return 0;
}

/* Check a map whose keys are names of the user's: plain, no duplicates. */
int
config_map_check(struct config_reader *rd, const struct config_node *map,
    const char *path)
{
	size_t	i;

	if (map->type != CONFIG_MAPPING)
		return config_err(rd, map, "%s: expected a mapping", path);
	for (i = 0; i + 1 < map->nkids; i += 2) {
		if (config_map_key(rd, map, i, path) != 0)
			return -1;
	}
	return 0;
}

/* Read a string scalar. */
int
config_read_str(struct config_reader *rd, const struct config_node *n,
    const char *path, char **out)
{
	if (n->type != CONFIG_SCALAR)
		return config_err(rd, n, "%s: expected a string", path);
	if (memchr(n->str, '\0', n->len) != NULL)
		return config_err(rd, n, "%s: NUL byte in string", path);
	free(*out);
	*out = xstrdup(n->str);
	return 0;
}

/* Read a boolean scalar: unquoted true, yes, on, false, no or off. */
static int
config_read_bool(struct config_reader *rd, const struct config_node *n,
    const char *path, int *out)
{
	if (n->type == CONFIG_SCALAR && !n->quoted) {
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
	return config_err(rd, n, "%s: expected true or false", path);
}

/* Read an unsigned integer in [min, max]. */
int
config_read_uint(struct config_reader *rd, const struct config_node *n,
    const char *path, unsigned int min, unsigned int max, unsigned int *out)
{
	char		*end;
	unsigned long	 v;

	if (n->type != CONFIG_SCALAR || n->str[0] < '0' || n->str[0] > '9')
		return config_err(rd, n, "%s: expected a whole number", path);
	errno = 0;
	v = strtoul(n->str, &end, 10);
	if (*end != '\0' || errno != 0)
		return config_err(rd, n, "%s: expected a whole number", path);
	if (v < min || v > max)
		return config_err(rd, n, "%s: %lu is out of range (%u to %u)",
		    path, v, min, max);
	*out = (unsigned int)v;
	return 0;
}

/* Read a real number in [min, max]. */
static int
config_read_double(struct config_reader *rd, const struct config_node *n,
    const char *path, double min, double max, double *out)
{
	char	*end;
	double	 v;

	if (n->type != CONFIG_SCALAR || n->quoted)
		return config_err(rd, n, "%s: expected a number", path);
	errno = 0;
	v = strtod(n->str, &end);
	if (end == n->str || *end != '\0' || errno != 0 || !isfinite(v))
		return config_err(rd, n, "%s: expected a number", path);
	if (v < min || v > max)
		return config_err(rd, n, "%s: %g is out of range (%g to %g)",
		    path, v, min, max);
	*out = v;
	return 0;
}

/* Read a duration ("30s", "500ms", 2). */
int
config_read_duration(struct config_reader *rd, const struct config_node *n,
    const char *path, double *out)
{
	if (n->type != CONFIG_SCALAR || util_parse_duration(n->str, out) != 0)
		return config_err(rd, n, "%s: expected a duration such as 30s, "
		    "500ms or 2m", path);
	return 0;
}

/* Write a size as messages and the docs show it: "64 bytes", "256MiB". */
static void
config_size_text(char *buf, size_t len, size_t n)
{
	util_format_size(buf, len, n);
	if (buf[strspn(buf, "0123456789")] == '\0')
		strlcat(buf, " bytes", len);
}

/* Read a size ("1MiB", 65536), in [min, max] when max is not 0. */
int
config_read_size(struct config_reader *rd, const struct config_node *n,
    const char *path, size_t min, size_t max, size_t *out)
{
	char	lo[32], hi[32];
	size_t	v;

	if (n->type != CONFIG_SCALAR || util_parse_size(n->str, &v) != 0)
		return config_err(rd, n, "%s: expected a size such as 65536, "
		    "64KiB or 1MiB", path);
	if (max != 0 && (v < min || v > max)) {
		config_size_text(lo, sizeof lo, min);
		config_size_text(hi, sizeof hi, max);
		return config_err(rd, n, "%s: must be between %s and %s", path,
		    lo, hi);
	}
	*out = v;
	return 0;
}

/* Free a list of strings. */
void
config_list_free(char **list, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

/* Copy a list of strings (NULL stays NULL). */
static char **
config_list_copy(char *const *list, size_t n)
{
	char	**out;
	size_t	  i;

	if (list == NULL)
		return NULL;
	out = xcalloc(n + 1, sizeof *out);
	for (i = 0; i < n; i++)
		out[i] = xstrdup(list[i]);
	return out;
}

/* Read a list of strings (a single string is a list of one). */
int
config_read_list(struct config_reader *rd, const struct config_node *n,
    const char *path, char ***out, size_t *count)
{
	size_t	i;

	config_list_free(*out, *count);
	*out = NULL;
	*count = 0;
	if (n->type == CONFIG_SCALAR) {
		*out = xcalloc(2, sizeof **out);
		(*out)[0] = xstrdup(n->str);
		*count = 1;
		return 0;
	}
	if (n->type != CONFIG_SEQUENCE)
		return config_err(rd, n, "%s: expected a list of strings",
		    path);
	*out = xcalloc(n->nkids + 1, sizeof **out);
	*count = n->nkids;
	for (i = 0; i < n->nkids; i++) {
		if (n->kids[i]->type != CONFIG_SCALAR) {
			/* The list is what was read: no NULL inside it. */
			*count = i;
			return config_err(rd, n->kids[i], "%s[%zu]: expected a "
			    "string", path, i);
		}
		(*out)[i] = xstrdup(n->kids[i]->str);
	}
	return 0;
}

/* Write choices as "a, b or c", each in quote (a backquote or nothing). */
static void
config_choices_text(const char *const *choices, const char *quote,
    char *buf, size_t len)
{
	size_t	i;

	buf[0] = '\0';
	for (i = 0; choices[i] != NULL; i++) {
		if (i > 0)
			strlcat(buf, choices[i + 1] != NULL ? ", " : " or ",
			    len);
		strlcat(buf, quote, len);
		strlcat(buf, choices[i], len);
		strlcat(buf, quote, len);
	}
}

/* Read one of the names in choices, as its index. */
static int
config_read_enum(struct config_reader *rd, const struct config_node *n,
    const char *path, const char *const *choices, int *out)
{
	char	text[256];
	int	i;

	for (i = 0; n->type == CONFIG_SCALAR && choices[i] != NULL; i++) {
		if (strcmp(n->str, choices[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	config_choices_text(choices, "", text, sizeof text);
	return config_err(rd, n, "%s: expected %s", path, text);
}

/* Return the last part of a key's name: "max" for "restart.max". */
const char *
config_key_leaf(const struct config_key *k)
{
	const char	*dot = strrchr(k->name, '.');

	return dot != NULL ? dot + 1 : k->name;
}

/*
 * Return nonzero when k sits directly in the mapping prefix of scope ("" is
 * the top of the scope: the file, or an entry of agents:).
 */
static int
config_key_in(const struct config_key *k, int scope, const char *prefix)
{
	size_t	len = strlen(prefix);

	if (k->scope != scope)
		return 0;
	if (len == 0)
		return strchr(k->name, '.') == NULL;
	return strncmp(k->name, prefix, len) == 0 && k->name[len] == '.' &&
	    strchr(k->name + len + 1, '.') == NULL;
}

/* Find the key leaf in the mapping prefix of scope. */
const struct config_key *
config_key_find(int scope, const char *prefix, const char *leaf)
{
	const struct config_key	*k;

	for (k = config_table; k < config_table + config_table_size; k++) {
		if (config_key_in(k, scope, prefix) &&
		    strcmp(config_key_leaf(k), leaf) == 0)
			return k;
	}
	return NULL;
}

/*
 * Refuse an unknown key, saying what was probably meant: an agent's key
 * written outside the agent, a key one or two letters off, or, when there
 * is none and the mapping has few keys, all of them.
 */
static int
config_unknown(struct config_reader *rd, const struct config_node *key,
    int scope, const char *prefix, const char *path)
{
	const struct config_key	*k, *best = NULL;
	char			 list[256] = "";
	size_t			 d, bestd = SIZE_MAX, n = 0;

	if (scope == CONFIG_TOP &&
	    config_key_find(CONFIG_AGENT, prefix, key->str) != NULL)
		return config_err(rd, key, "%s: unknown key '%s' here: it is a "
		    "key of an agent's %s%s (in an entry of agents:, or in "
		    "defaults:)", path, key->str, *prefix != '\0' ? prefix :
		    "settings", *prefix != '\0' ? ":" : "");
	for (k = config_table; k < config_table + config_table_size; k++) {
		if (!config_key_in(k, scope, prefix) || (rd->in_defaults &&
		    (k->flags & CONFIG_NODEFAULT)))
			continue;
		d = util_distance(key->str, config_key_leaf(k));
		if (d < bestd) {
			bestd = d;
			best = k;
		}
		if (n++ > 0)
			strlcat(list, ", ", sizeof list);
		strlcat(list, config_key_leaf(k), sizeof list);
	}
	if (best != NULL && util_near(key->str, bestd))
		return config_err(rd, key, "%s: unknown key '%s' (did you mean "
		    "'%s'?)", path, key->str, config_key_leaf(best));
	if (n <= 8)
		return config_err(rd, key, "%s: unknown key '%s' (one of %s)",
		    path, key->str, list);
	return config_err(rd, key, "%s: unknown key '%s'", path, key->str);
}

/* Read the value of a key that is not a mapping, by its type. */
int
config_read_value(struct config_reader *rd, const struct config_key *k,
    void *base, const struct config_node *n, const char *path)
{
	void	*p = (char *)base + k->offset;

	switch (k->type) {
	case CONFIG_STRING:
		return config_read_str(rd, n, path, p);
	case CONFIG_BOOL:
		return config_read_bool(rd, n, path, p);
	case CONFIG_INTEGER:
		return config_read_uint(rd, n, path, (unsigned int)k->min,
		    (unsigned int)k->max, p);
	case CONFIG_NUMBER:
		return config_read_double(rd, n, path, k->min, k->max, p);
	case CONFIG_DURATION:
		return config_read_duration(rd, n, path, p);
	case CONFIG_SIZE:
		return config_read_size(rd, n, path, (size_t)k->min,
		    (size_t)k->max, p);
	case CONFIG_LIST:
		return config_read_list(rd, n, path, p,
		    (size_t *)((char *)base + k->count));
	case CONFIG_ENUM:
		return config_read_enum(rd, n, path, k->choices, p);
	case CONFIG_MAP:
		break;
	}
	fatalx("%s: %s is not a value", __func__, k->name);
}

/*
 * Read the value of any key: its own read function, its type's, or, for a
 * mapping, its keys (a scalar in place of the mapping sets its shorthand
 * member, as `restart: permanent` does).  Then its after check.
 */
static int
config_read_key(struct config_reader *rd, const struct config_key *k,
    void *base, const struct config_node *n, const char *path)
{
	const struct config_key	*m;
	int			 rc;

	if (k->read != NULL)
		rc = k->read(rd, k, base, n, path);
	else if (k->type != CONFIG_MAP)
		rc = config_read_value(rd, k, base, n, path);
	else if (n->type != CONFIG_MAPPING && k->shorthand != NULL) {
		m = config_key_find(k->scope, k->name, k->shorthand);
		rc = config_read_key(rd, m, base, n, path);
	} else
		rc = config_read_map(rd, k->scope, base, k->name, n, path);
	if (rc == 0 && k->after != NULL)
		rc = k->after(rd, k, base, n, path);
	return rc;
}

/*
 * The table's key for key i of mapping n, when its value is to be read:
 * a known key, not given before, allowed where it is.  NULL for a key
 * config_read_map has refused.
 */
static const struct config_key *
config_map_usable(struct config_reader *rd, int scope, const char *prefix,
    const struct config_node *n, size_t i)
{
	const struct config_key	*k;
	size_t			 j;

	if (n->kids[i]->type != CONFIG_SCALAR)
		return NULL;
	for (j = 0; j < i; j += 2)
		if (n->kids[j]->type == CONFIG_SCALAR &&
		    strcmp(n->kids[j]->str, n->kids[i]->str) == 0)
			return NULL;
	k = config_key_find(scope, prefix, n->kids[i]->str);
	if (k == NULL || (rd->in_defaults && (k->flags & CONFIG_NODEFAULT)))
		return NULL;
	return k;
}

/*
 * Read a mapping of the table's keys: those directly in prefix of scope,
 * into base.  path names the mapping in messages (NULL: the whole file).
 * Every key is checked before any value is read; values are read in the
 * file's order, CONFIG_LATE keys last in the table's.  A bad key or value
 * is recorded and the next one read all the same.
 */
int
config_read_map(struct config_reader *rd, int scope, void *base,
    const char *prefix, const struct config_node *n, const char *path)
{
	const struct config_key		*k;
	const struct config_node	*key, *v;
	const char			*where = path != NULL ? path :
					    "the workflow";
	char				 sub[256];
	size_t				 i;
	int				 rc = 0;

	if (n->type != CONFIG_MAPPING)
		return config_err(rd, n, "%s: expected a mapping", where);
	for (i = 0; i + 1 < n->nkids; i += 2) {
		if (config_map_key(rd, n, i, where) != 0) {
			rc = -1;
			continue;
		}
		key = n->kids[i];
		if ((k = config_key_find(scope, prefix, key->str)) == NULL)
			rc = config_unknown(rd, key, scope, prefix, where);
		else if (rd->in_defaults && (k->flags & CONFIG_NODEFAULT))
			rc = config_err(rd, key, "%s: %s cannot have a "
			    "default", where, key->str);
	}
	for (i = 0; i + 1 < n->nkids; i += 2) {
		k = config_map_usable(rd, scope, prefix, n, i);
		if (k == NULL || (k->flags & CONFIG_LATE))
			continue;
		snprintf(sub, sizeof sub, "%s%s%s", path != NULL ? path : "",
		    path != NULL ? "." : "", n->kids[i]->str);
		if (config_read_key(rd, k, base, n->kids[i + 1], sub) != 0)
			rc = -1;
	}
	for (k = config_table; k < config_table + config_table_size; k++) {
		if (!config_key_in(k, scope, prefix))
			continue;
		v = config_yaml_get(n, config_key_leaf(k));
		if (v == NULL && (k->flags & CONFIG_REQUIRED))
			rc = config_err(rd, n, "%s has no %s: key", where,
			    config_key_leaf(k));
		if (v == NULL || (k->flags & CONFIG_LATE) == 0)
			continue;
		snprintf(sub, sizeof sub, "%s%s%s", path != NULL ? path : "",
		    path != NULL ? "." : "", config_key_leaf(k));
		if (config_read_key(rd, k, base, v, sub) != 0)
			rc = -1;
	}
	return rc;
}

/*
 * Fill base with the defaults of scope's keys, read from the table as a
 * file would give them.  A default that does not read is a bug in the
 * table, never the user's.
 */
void
config_fill(int scope, void *base)
{
	const struct config_key	*k;
	struct config_error	 err;
	struct config_reader	 rd;
	struct config_node	 n;

	memset(&err, 0, sizeof err);
	memset(&rd, 0, sizeof rd);
	rd.err = &err;
	for (k = config_table; k < config_table + config_table_size; k++) {
		if (k->scope != scope || k->dflt == NULL)
			continue;
		memset(&n, 0, sizeof n);
		n.type = CONFIG_SCALAR;
		n.str = xstrdup(k->dflt);
		n.len = strlen(n.str);
		if ((k->read != NULL ? k->read(&rd, k, base, &n, k->name) :
		    config_read_value(&rd, k, base, &n, k->name)) != 0)
			fatalx("the default of %s: %s", k->name, err.msg);
		free(n.str);
	}
}

/* Name a restart policy. */
const char *
config_restart_name(enum restart_policy p)
{
	const struct config_key	*k;

	k = config_key_find(CONFIG_AGENT, "restart", "policy");
	return k->choices[p <= RESTART_TEMPORARY ? p : RESTART_TEMPORARY];
}

/* Name a sub-agent restart strategy. */
const char *
config_strategy_name(enum child_strategy s)
{
	const struct config_key	*k;

	k = config_key_find(CONFIG_AGENT, "children", "strategy");
	return k->choices[s <= STRATEGY_REST_FOR_ONE ? s :
	    STRATEGY_ONE_FOR_ONE];
}

/* Copy the defaults into an agent before its own settings are read. */
void
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
	dst->protocol = src->protocol ? xstrdup(src->protocol) : NULL;
	dst->adapter_conf = src->adapter_conf ?
	    json_deep_copy(src->adapter_conf) : NULL;
	dst->subscribe = config_list_copy(src->subscribe, src->nsubscribe);
	dst->depends_on = config_list_copy(src->depends_on, src->ndepends_on);
	dst->deps = NULL;
	dst->capabilities = src->capabilities ?
	    json_deep_copy(src->capabilities) : NULL;
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
	dst->confine.write = config_list_copy(src->confine.write,
	    src->confine.nwrite);
	dst->confine.read = config_list_copy(src->confine.read,
	    src->confine.nread);
	dst->confine.connect = config_list_copy(src->confine.connect,
	    src->confine.nconnect);
	dst->launch.argv = config_list_copy(src->launch.argv,
	    src->launch.argc);
	dst->launch.hosts = config_list_copy(src->launch.hosts,
	    src->launch.nhosts);
	dst->launch.corral = src->launch.corral ? xstrdup(src->launch.corral) :
	    NULL;
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
void
config_agent_free(struct agent_conf *ac)
{
	size_t	i;

	free(ac->name);
	config_list_free(ac->argv, ac->argc);
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
	config_list_free(ac->confine.write, ac->confine.nwrite);
	config_list_free(ac->confine.read, ac->confine.nread);
	config_list_free(ac->confine.connect, ac->confine.nconnect);
	config_list_free(ac->launch.argv, ac->launch.argc);
	config_list_free(ac->launch.hosts, ac->launch.nhosts);
	free(ac->launch.corral);
	free(ac->adapter);
	free(ac->protocol);
	if (ac->adapter_conf != NULL)
		json_decref(ac->adapter_conf);
	config_list_free(ac->subscribe, ac->nsubscribe);
	config_list_free(ac->depends_on, ac->ndepends_on);
	free(ac->deps);
	if (ac->capabilities != NULL)
		json_decref(ac->capabilities);
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

/* Read the whole tree into rd->wf. */
static int
config_build(struct config_reader *rd, const struct config_node *root)
{
	struct workflow			*wf = rd->wf;
	const struct config_node	*where = root;
	ssize_t				 i;
	int				 rc;

	config_fill(CONFIG_AGENT, &rd->defaults);
	rc = config_read_map(rd, CONFIG_TOP, wf, "", root, NULL);
	if (rc == 0) {
		/* A warning about start: points at it, or at the routes. */
		if ((i = config_yaml_index(root, "start")) >= 0)
			where = root->kids[i + 1];
		else if ((i = config_yaml_index(root, "routes")) >= 0)
			where = root->kids[i];
		wf->start_line = where->line;
		wf->start_column = where->column;
	}
	config_agent_free(&rd->defaults);
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
	config_fill(CONFIG_TOP, wf);
	return wf;
}

/* Load a workflow from text; name is used in messages. */
struct workflow *
config_load_string(const char *text, size_t len, const char *name,
    struct config_error *err)
{
	struct config_reader	 rd;
	struct config_node	*root = NULL;
	int			 ok = 0;

	memset(err, 0, sizeof *err);
	memset(&rd, 0, sizeof rd);
	rd.err = err;
	rd.wf = config_new(name);
	protocol_set_intents(NULL, 0);	/* only this workflow's own count */
	if ((root = config_yaml_parse(&rd, text, len)) != NULL &&
	    config_build(&rd, root) == 0)
		ok = 1;
	config_yaml_free(root);
	if (!ok) {
		config_free(rd.wf);
		return NULL;
	}
	return rd.wf;
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
		config_list_free(wf->routes[i].caps, wf->routes[i].ncaps);
	}
	free(wf->routes);
	config_steps_free(wf);
	config_list_free(wf->env_allow, wf->nenv_allow);
	config_list_free(wf->intents, wf->nintents);
	config_list_free(wf->agent_path, wf->npath);
	free(wf->workspace);
	free(wf->path);
	free(wf->dir);
	free(wf->name);
	free(wf->description);
	free(wf->start);
	free(wf->join_then);
	free(wf);
}

/* Print a string as a YAML scalar, quoting when it needs it. */
void
config_print_str(FILE *f, const char *s)
{
	static const char *const words[] = { "true", "false", "null", "yes",
	    "no", "on", "off", NULL };
	const char	*p;
	size_t		 i;
	int		 plain = (*s != '\0' && *s != '-' &&
			    !(*s >= '0' && *s <= '9'));

	for (p = s; *p != '\0' && plain; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("._/-+", *p) != NULL))
			plain = 0;
	}
	for (i = 0; plain && words[i] != NULL; i++)
		if (strcmp(s, words[i]) == 0)
			plain = 0;
	if (plain) {
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

/* Print the value of a key that is not a mapping. */
static void
config_print_value(FILE *f, const struct config_key *k, const void *base)
{
	const void	*p = (const char *)base + k->offset;
	const char	*s;
	char		 buf[64];
	size_t		 i, n;
	int		 e;

	switch (k->type) {
	case CONFIG_STRING:
		s = *(char *const *)p;
		config_print_str(f, s != NULL ? s : "");
		break;
	case CONFIG_BOOL:
		fputs(*(const int *)p ? "true" : "false", f);
		break;
	case CONFIG_INTEGER:
		fprintf(f, "%u", *(const unsigned int *)p);
		break;
	case CONFIG_NUMBER:
		fprintf(f, "%g", *(const double *)p);
		break;
	case CONFIG_DURATION:
		if (*(const double *)p == 0 && (k->flags & CONFIG_NONE))
			strlcpy(buf, "none", sizeof buf);
		else
			util_format_duration(buf, sizeof buf,
			    *(const double *)p);
		fputs(buf, f);
		break;
	case CONFIG_SIZE:
		util_format_size(buf, sizeof buf, *(const size_t *)p);
		fputs(buf, f);
		break;
	case CONFIG_LIST:
		n = *(const size_t *)((const char *)base + k->count);
		fputc('[', f);
		for (i = 0; i < n; i++) {
			if (i > 0)
				fputs(", ", f);
			config_print_str(f, (*(char **const *)p)[i]);
		}
		fputc(']', f);
		break;
	case CONFIG_ENUM:
		e = *(const int *)p;
		for (i = 0; k->choices[i] != NULL; i++)
			if ((int)i == e)
				fputs(k->choices[i], f);
		break;
	case CONFIG_MAP:
		break;
	}
}

/* Return nonzero when a key holds nothing: 0, no string, an empty list. */
static int
config_is_zero(const struct config_key *k, const void *base)
{
	const struct config_key	*m;
	const void		*p = (const char *)base + k->offset;

	switch (k->type) {
	case CONFIG_STRING:
		return *(char *const *)p == NULL;
	case CONFIG_BOOL:
	case CONFIG_ENUM:
		return *(const int *)p == 0;
	case CONFIG_INTEGER:
		return *(const unsigned int *)p == 0;
	case CONFIG_NUMBER:
	case CONFIG_DURATION:
		return *(const double *)p == 0;
	case CONFIG_SIZE:
		return *(const size_t *)p == 0;
	case CONFIG_LIST:
		return *(const size_t *)((const char *)base + k->count) == 0;
	case CONFIG_MAP:
		break;
	}
	for (m = config_table; m < config_table + config_table_size; m++) {
		if (config_key_in(m, k->scope, k->name) &&
		    !config_is_zero(m, base))
			return 0;
	}
	return 1;
}

/* Print one key at indent, as its type and flags say. */
static void
config_print_key(FILE *f, const struct config_key *k, const void *base,
    int indent)
{
	const struct config_key	*m;
	int			 first = 1;

	if ((k->flags & CONFIG_HIDE) ||
	    ((k->flags & CONFIG_OMIT) && config_is_zero(k, base)))
		return;
	if ((k->flags & CONFIG_STEPS) && k->scope == CONFIG_TOP &&
	    ((const struct workflow *)base)->nsteps == 0)
		return;
	if (k->print != NULL) {
		k->print(f, k, base, indent);
		return;
	}
	fprintf(f, "%*s%s:", indent, "", config_key_leaf(k));
	if (k->type != CONFIG_MAP) {
		fputc(' ', f);
		config_print_value(f, k, base);
		fputc('\n', f);
		return;
	}
	m = k->shorthand != NULL ? config_key_find(k->scope, k->name,
	    k->shorthand) : NULL;
	if ((k->flags & CONFIG_OFF) && m != NULL && config_is_zero(m, base)) {
		fputs(" off\n", f);
		return;
	}
	if ((k->flags & CONFIG_FLOW) == 0) {
		fputc('\n', f);
		config_print_map(f, k->scope, base, k->name, indent + 2);
		return;
	}
	fputs(" {", f);
	for (m = config_table; m < config_table + config_table_size; m++) {
		if (!config_key_in(m, k->scope, k->name))
			continue;
		fprintf(f, "%s%s: ", first ? "" : ", ", config_key_leaf(m));
		config_print_value(f, m, base);
		first = 0;
	}
	fputs("}\n", f);
}

/* Print the keys of the mapping prefix of scope, in the table's order. */
void
config_print_map(FILE *f, int scope, const void *base, const char *prefix,
    int indent)
{
	const struct config_key	*k;

	for (k = config_table; k < config_table + config_table_size; k++) {
		if (config_key_in(k, scope, prefix))
			config_print_key(f, k, base, indent);
	}
}

/*
 * Print the workflow back in normalized form: every key, with defaults
 * filled in, in a fixed order.  `corral check --print` prints this, and
 * the golden tests compare it.
 */
void
config_print(FILE *f, const struct workflow *wf)
{
	config_print_map(f, CONFIG_TOP, wf, "", 0);
}

/* Write a key's type as docs/workflow.md's key tables do. */
static void
config_key_type(const struct config_key *k, char *buf, size_t len)
{
	char	lo[32], hi[32];

	if (k->typename != NULL) {
		strlcpy(buf, k->typename, len);
		return;
	}
	switch (k->type) {
	case CONFIG_STRING:
		strlcpy(buf, "string", len);
		break;
	case CONFIG_BOOL:
		strlcpy(buf, "bool", len);
		break;
	case CONFIG_INTEGER:
		if (k->max < UINT_MAX)
			snprintf(buf, len, "integer %.0f-%.0f", k->min, k->max);
		else if (k->min > 0)
			snprintf(buf, len, "integer ≥ %.0f", k->min);
		else
			strlcpy(buf, "integer", len);
		break;
	case CONFIG_NUMBER:
		if (k->max < CONFIG_VAST)
			snprintf(buf, len, "number %g-%g", k->min, k->max);
		else
			snprintf(buf, len, "number ≥ %g", k->min);
		break;
	case CONFIG_DURATION:
		strlcpy(buf, "duration", len);
		break;
	case CONFIG_SIZE:
		if (k->max == 0) {
			strlcpy(buf, "size", len);
			break;
		}
		config_size_text(lo, sizeof lo, (size_t)k->min);
		config_size_text(hi, sizeof hi, (size_t)k->max);
		snprintf(buf, len, "size, %s to %s", lo, hi);
		break;
	case CONFIG_LIST:
		strlcpy(buf, "list of strings", len);
		break;
	case CONFIG_ENUM:
		config_choices_text(k->choices, "`", buf, len);
		break;
	case CONFIG_MAP:
		strlcpy(buf, "mapping", len);
		break;
	}
}

/* Describe key i of the table as the docs do; -1 past the last. */
int
config_keyinfo(size_t i, struct config_keyinfo *ki)
{
	const struct config_key	*k;

	if (i >= config_table_size)
		return -1;
	k = &config_table[i];
	memset(ki, 0, sizeof *ki);
	ki->name = k->name;
	ki->agent = k->scope == CONFIG_AGENT;
	ki->step = k->scope == CONFIG_STEP;
	ki->mapping = k->type == CONFIG_MAP;
	ki->dflt = k->dflt;
	ki->doc = k->doc;
	config_key_type(k, ki->type, sizeof ki->type);
	return 0;
}

/* Print a problem as corral reports them: file, line and column, what. */
static void __attribute__((format(printf, 6, 7)))
config_report(FILE *f, const char *file, int line, int column,
    const char *kind, const char *fmt, ...)
{
	va_list	ap;

	if (line > 0)
		fprintf(f, "corral: %s:%d:%d: %s", file, line, column, kind);
	else
		fprintf(f, "corral: %s: %s", file, kind);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
}

/* A problem to print, and when it was found. */
struct config_shown {
	int		 line;
	int		 column;
	unsigned int	 order;
	const char	*msg;
};

/* Order problems by where they are in the file, then as found. */
static int
config_shown_cmp(const void *a, const void *b)
{
	const struct config_shown	*pa = a, *pb = b;

	if (pa->line != pb->line)
		return pa->line < pb->line ? -1 : 1;
	if (pa->column != pb->column)
		return pa->column < pb->column ? -1 : 1;
	return pa->order < pb->order ? -1 : pa->order > pb->order;
}

/* Print what loading found wrong: each error, in the file's order. */
void
config_print_error(FILE *f, const char *file, const struct config_error *ce)
{
	struct config_shown	v[CONFIG_ERRORS];
	unsigned int		n, i;

	/* No count: the file could not be read, msg says why. */
	n = ce->count == 0 ? 1 : ce->count > CONFIG_ERRORS ? CONFIG_ERRORS :
	    ce->count;
	for (i = 0; i < n; i++) {
		v[i].line = i == 0 ? ce->line : ce->more[i - 1].line;
		v[i].column = i == 0 ? ce->column : ce->more[i - 1].column;
		v[i].msg = i == 0 ? ce->msg : ce->more[i - 1].msg;
		v[i].order = i;
	}
	qsort(v, n, sizeof v[0], config_shown_cmp);
	for (i = 0; i < n; i++)
		config_report(f, file, v[i].line, v[i].column, "", "%s",
		    v[i].msg);
	if (ce->count > CONFIG_ERRORS)
		config_report(f, file, 0, 0, "", "%u more errors not shown",
		    ce->count - CONFIG_ERRORS);
}

/*
 * Check that prog can be found and run for agent ac, as spawn will look
 * for it: with the agent's PATH (its env: may set one).  On failure, says
 * why in buf.
 */
static int
config_check_program(const struct workflow *wf, const struct agent_conf *ac,
    const char *prog, char *buf, size_t len)
{
	struct stat	 st;
	const char	*path = getenv("PATH");
	char		*file;
	size_t		 i;
	int		 rc = 0;

	for (i = 0; i < ac->nenv; i++)
		if (strcmp(ac->env[i].key, "PATH") == 0)
			path = ac->env[i].value;
	if ((file = spawn_find(prog, wf, path)) == NULL) {
		snprintf(buf, len, "%s: %s", prog, strerror(errno));
		return -1;
	}
	if (stat(file, &st) == -1 || access(file, X_OK) == -1) {
		snprintf(buf, len, "%s: %s", prog, strerror(errno));
		rc = -1;
	} else if (!S_ISREG(st.st_mode)) {
		snprintf(buf, len, "%s: not a regular file", prog);
		rc = -1;
	}
	free(file);
	return rc;
}

/* Does an exec adapter's argv: replace the entry's cmd:? */
static int
config_exec_argv(const struct agent_conf *ac)
{
	return ac->adapter != NULL && strcmp(ac->adapter, "exec") == 0 &&
	    json_object_get(ac->adapter_conf, "argv") != NULL;
}

/*
 * The program an exec adapter runs, when the file names it: not a
 * template, which only a request can fill in.
 */
static const char *
config_exec_program(const struct agent_conf *ac)
{
	const char	*s;

	if (!config_exec_argv(ac))
		return NULL;
	s = json_string_value(json_array_get(json_object_get(
	    ac->adapter_conf, "argv"), 0));
	if (s == NULL || *s == '\0' || strstr(s, "{{") != NULL)
		return NULL;
	return s;
}

/* Return nonzero when a request for intent would find a route. */
static int
config_routed(const struct workflow *wf, const char *intent)
{
	size_t	i;

	for (i = 0; i < wf->nroutes; i++) {
		if (strcmp(wf->routes[i].intent, intent) == 0 ||
		    strcmp(wf->routes[i].intent, "*") == 0)
			return 1;
	}
	return 0;
}

/*
 * Warn of a route to a capability that no entry declares: only an agent
 * that registers it at run time would serve it.
 */
static void
config_check_route_caps(const struct workflow *wf, FILE *f)
{
	const struct route_conf	*rc;
	size_t			 i, j, k;

	for (i = 0; i < wf->nroutes; i++) {
		rc = &wf->routes[i];
		for (j = 0; j < rc->ncaps; j++) {
			for (k = 0; k < wf->nagents; k++)
				if (protocol_capability_in(
				    wf->agents[k].capabilities, rc->caps[j]))
					break;
			if (k == wf->nagents)
				config_report(f, wf->path, rc->line, rc->column,
				    "warning: ", "routes.%s: no agent declares "
				    "the capability '%s' in capabilities:, so "
				    "only one that registers it at run time "
				    "will serve it", rc->intent, rc->caps[j]);
		}
	}
}

/*
 * Check what loading cannot see in the file alone, and print each problem
 * to f.  Errors: an agent's program cannot be found or run (for an agent
 * on another machine, its launcher).  Warnings, of
 * what would fail only later: an exec adapter's program cannot be found
 * (it runs per request), and, with CONFIG_CHECK_START, no route serves the
 * start intent; and of a cmd: an exec adapter's argv: makes unused.
 * With CONFIG_CHECK_NORUN (corral replay), agents with the replay
 * adapter are not checked: they run no program.  `corral check`, `run` and `serve` all call this, so
 * that what one refuses, all refuse.  Returns the number of errors.
 */
int
config_check(const struct workflow *wf, int flags, FILE *f)
{
	const struct agent_conf	*ac;
	const char		*prog;
	char			 why[512];
	size_t			 i;
	int			 errors = 0;

	for (i = 0; i < wf->nagents; i++) {
		ac = &wf->agents[i];
		if ((flags & CONFIG_CHECK_NORUN) && ac->adapter != NULL &&
		    strcmp(ac->adapter, "replay") == 0)
			continue;
		/* A launched agent's program is on the far end; its launcher here. */
		if (ac->launch.argc > 0) {
			if (config_check_program(wf, ac, ac->launch.argv[0], why,
			    sizeof why) != 0) {
				config_report(f, wf->path, ac->line, ac->column,
				    "", "agents.%s.launch.argv: %s", ac->name,
				    why);
				errors++;
			}
			continue;
		}
		if (ac->argv != NULL && config_exec_argv(ac))
			config_report(f, wf->path, ac->line, ac->column,
			    "warning: ", "agents.%s.cmd: not run: the exec "
			    "adapter's argv: replaces it", ac->name);
		else if (ac->argv != NULL && config_check_program(wf, ac,
		    ac->argv[0], why, sizeof why) != 0) {
			config_report(f, wf->path, ac->line, ac->column, "",
			    "agents.%s.cmd: %s", ac->name, why);
			errors++;
		}
		if (ac->protocol != NULL && strcmp(ac->protocol, "adr-007") ==
		    0 && (ac->hb_interval > 0 || ac->ready == READY_HANDSHAKE)) {
			/* Nothing in its protocol could answer either. */
			config_report(f, wf->path, ac->line, ac->column, "",
			    "agents.%s: an ADR-007 agent answers no pings and "
			    "sends no handshake: give it heartbeat: off and "
			    "ready: spawn", ac->name);
			errors++;
		}
		if ((prog = config_exec_program(ac)) != NULL &&
		    config_check_program(wf, ac, prog, why, sizeof why) != 0)
			config_report(f, wf->path, ac->line, ac->column,
			    "warning: ", "agents.%s.adapter.argv: %s", ac->name,
			    why);
	}
	config_check_route_caps(wf, f);
	for (i = 0; i < wf->nsteps; i++)
		if (wf->steps[i].intent != NULL &&
		    !config_routed(wf, wf->steps[i].intent))
			config_report(f, wf->path, wf->steps[i].line,
			    wf->steps[i].column, "warning: ", "steps[%zu].intent: "
			    "intent '%s' has no route and routes: has no \"*\" "
			    "fallback, so step '%s' would fail with no_route", i,
			    wf->steps[i].intent, wf->steps[i].name);
	/* A workflow of steps starts at its first step, not at start:. */
	if ((flags & CONFIG_CHECK_START) && wf->nsteps == 0 &&
	    !config_routed(wf, wf->start))
		config_report(f, wf->path, wf->start_line, wf->start_column,
		    "warning: ", "start: intent '%s' has no route and routes: "
		    "has no \"*\" fallback, so corral run would fail with "
		    "no_route", wf->start);
	return errors;
}
