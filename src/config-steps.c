/*
 * The steps of a workflow file (docs/steps.md): steps:, paths: and the
 * checks of the graph the steps make.
 *
 * A step's keys are declared in config-table.c like every other key (scope
 * CONFIG_STEP) and read by the same walk; what is here is what no type
 * says: steps: is a list of mappings, a step's name defaults to its
 * action, and proceed: and retry: name other steps.  Once every step is
 * read they are resolved to indexes, and the graph is checked as a whole:
 * every target exists, retry never goes forward, every step can be
 * reached from the first, and no loop is without a bound (a loop whose
 * steps all have max_iterations: 0 could run for ever).
 */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "config.h"

#define STEPS_MAX	1000	/* steps in one workflow */
#define STEP_NAME_MAX	48

/* The words of success_false:, in the order of enum step_false. */
const char *const config_steps_false[] = {
	"escalate", "retry", "fail", "proceed", NULL
};

/* Return nonzero if s can name a step: letters, digits, _ - and . */
static int
config_steps_valid_name(const char *s)
{
	const char	*p;

	if (*s == '\0' || strlen(s) > STEP_NAME_MAX || strcmp(s, "end") == 0)
		return 0;
	for (p = s; *p != '\0'; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' ||
		    *p == '.'))
			return 0;
	}
	return 1;
}

/* The node of a step's key, for an error's position (else the step's). */
static const struct config_node *
config_steps_at(const struct config_node *step, const char *key)
{
	const struct config_node	*v = config_yaml_get(step, key);

	return v != NULL ? v : step;
}

/* Read params:, a mapping of anything, kept as a JSON object. */
int
config_steps_read_params(struct config_reader *rd, const struct config_key *k,
    void *base, const struct config_node *n, const char *path)
{
	struct step_conf	*sc = base;

	if (n->type != CONFIG_MAPPING)
		return config_err(rd, n, "%s: expected a mapping of parameters",
		    path);
	if (config_map_check(rd, n, path) != 0)
		return -1;
	json_decref(sc->params);
	sc->params = config_yaml_json(n);
	return 0;
}

/* Read paths:, a mapping of names to paths (templates). */
int
config_steps_read_paths(struct config_reader *rd, const struct config_key *k,
    void *base, const struct config_node *n, const char *path)
{
	struct workflow			*wf = base;
	const struct config_node	*name, *value;
	size_t				 i;

	if (config_map_check(rd, n, path) != 0)
		return -1;
	wf->paths = xcalloc(n->nkids / 2 + 1, sizeof *wf->paths);
	for (i = 0; i + 1 < n->nkids; i += 2) {
		name = n->kids[i];
		value = n->kids[i + 1];
		if (value->type != CONFIG_SCALAR || value->len == 0)
			return config_err(rd, value, "%s.%s: expected a path",
			    path, name->str);
		if (name->str[0] == '\0')
			return config_err(rd, name, "%s: a path needs a name",
			    path);
		wf->paths[wf->npaths].key = xstrdup(name->str);
		wf->paths[wf->npaths].value = xstrdup(value->str);
		wf->npaths++;
	}
	return 0;
}

/*
 * Read one step's keys into sc; its name defaults to its action.  Its
 * targets are resolved later, once every step is known.
 */
static int
config_steps_read_one(struct config_reader *rd, struct step_conf *sc,
    const struct config_node *n, const char *path)
{
	struct workflow	*wf = rd->wf;

	config_fill(CONFIG_STEP, sc);
	sc->max_iterations = UINT_MAX;		/* not given: the workflow's */
	sc->line = n->line;
	sc->column = n->column;
	if (config_read_map(rd, CONFIG_STEP, sc, "", n, path) != 0)
		return -1;
	if (sc->max_iterations == UINT_MAX)
		sc->max_iterations = wf->max_iterations;
	if (sc->name == NULL) {
		if (!config_steps_valid_name(sc->action))
			return config_err(rd, config_steps_at(n, "action"),
			    "%s: give the step a name: (its action '%s' cannot "
			    "name it)", path, sc->action);
		sc->name = xstrdup(sc->action);
	} else if (!config_steps_valid_name(sc->name))
		return config_err(rd, config_steps_at(n, "name"), "%s.name: "
		    "'%s' is not a valid step name (letters, digits, '_', '-' "
		    "and '.', at most %d, not 'end')", path, sc->name,
		    STEP_NAME_MAX);
	if ((sc->agent_name != NULL) + (sc->intent != NULL) +
	    (sc->capability != NULL) != 1)
		return config_err(rd, n, "%s: a step names exactly one of "
		    "agent:, intent: and capability:", path);
	if (sc->agent_name != NULL &&
	    (sc->agent = config_find_agent(wf, sc->agent_name)) == NULL)
		return config_err(rd, config_steps_at(n, "agent"), "%s.agent: "
		    "no agent named '%s' in agents:", path, sc->agent_name);
	if (sc->intent != NULL && protocol_intent(sc->intent,
	    strlen(sc->intent)) < 0)
		return config_err(rd, config_steps_at(n, "intent"),
		    "%s.intent: '%s' is not an intent", path, sc->intent);
	return 0;
}

/*
 * Resolve a step's target, written or not, to an index (or STEP_END for
 * proceed: end), and keep its name as the target's, for the print.
 */
static int
config_steps_target(struct config_reader *rd, const struct config_node *n,
    struct step_conf *sc, const char *key, char **name, int dflt, int *out)
{
	const struct workflow	*wf = rd->wf;
	const struct step_conf	*t;
	char			 where[64];

	snprintf(where, sizeof where, "steps[%u].%s", sc->index, key);
	if (*name == NULL)
		*out = dflt;
	else if (strcmp(key, "proceed") == 0 && strcmp(*name, "end") == 0)
		*out = STEP_END;
	else if ((t = config_find_step(wf, *name)) != NULL)
		*out = (int)t->index;
	else
		return config_err(rd, config_steps_at(n, key), "%s: no step "
		    "named '%s'%s", where, *name, strcmp(key, "proceed") == 0 ?
		    " (or end)" : "");
	free(*name);
	*name = xstrdup(*out == STEP_END ? "end" : wf->steps[*out].name);
	return 0;
}

/* Mark every step reachable from step i through proceed and retry. */
static void
config_steps_reach(const struct workflow *wf, size_t i, unsigned char *seen)
{
	const struct step_conf	*sc = &wf->steps[i];

	if (seen[i])
		return;
	seen[i] = 1;
	if (sc->next != STEP_END)
		config_steps_reach(wf, (size_t)sc->next, seen);
	config_steps_reach(wf, (size_t)sc->back, seen);
}

/*
 * Look for a loop among steps without a bound (max_iterations: 0),
 * depth first from step i (color: 0 new, 1 on the path, 2 done).
 * Returns the index of a step on such a loop, or -1.
 */
static int
config_steps_unbounded(const struct workflow *wf, size_t i,
    unsigned char *color)
{
	const struct step_conf	*sc = &wf->steps[i];
	int			 to[2], k, found;

	if (sc->max_iterations != 0 || color[i] == 2)
		return -1;
	if (color[i] == 1)
		return (int)i;
	color[i] = 1;
	to[0] = sc->next;
	to[1] = sc->back;
	for (k = 0; k < 2; k++) {
		if (to[k] == STEP_END)
			continue;
		if ((found = config_steps_unbounded(wf, (size_t)to[k],
		    color)) != -1)
			return found;
	}
	color[i] = 2;
	return -1;
}

/* Check the graph of the steps as a whole (the steps are read). */
static int
config_steps_graph(struct config_reader *rd, const struct config_node *list)
{
	struct workflow	*wf = rd->wf;
	struct step_conf	*sc;
	unsigned char	*seen;
	size_t		 i;
	int		 bad = -1, rc = 0;

	for (i = 0; i < wf->nsteps; i++) {
		sc = &wf->steps[i];
		if (config_steps_target(rd, list->kids[i], sc, "proceed",
		    &sc->proceed, i + 1 < wf->nsteps ? (int)i + 1 : STEP_END,
		    &sc->next) != 0 || config_steps_target(rd, list->kids[i],
		    sc, "retry", &sc->retry, (int)i, &sc->back) != 0)
			return -1;
		if (sc->back > (int)i)
			return config_err(rd, config_steps_at(list->kids[i],
			    "retry"), "steps[%zu].retry: '%s' comes after step "
			    "'%s'; retry goes to this step or an earlier one",
			    i, sc->retry, sc->name);
	}
	seen = xcalloc(wf->nsteps, 1);
	config_steps_reach(wf, 0, seen);
	for (i = 0; i < wf->nsteps && rc == 0; i++)
		if (!seen[i])
			rc = config_err(rd, list->kids[i], "steps[%zu]: step "
			    "'%s' can never run: no proceed: or retry: leads "
			    "to it from the first step", i, wf->steps[i].name);
	memset(seen, 0, wf->nsteps);
	for (i = 0; i < wf->nsteps && rc == 0 && bad == -1; i++)
		bad = config_steps_unbounded(wf, i, seen);
	if (bad != -1)
		rc = config_err(rd, list->kids[bad], "steps[%d]: step '%s' is "
		    "on a loop whose steps all have max_iterations: 0, which "
		    "could run for ever; give one of them a bound", bad,
		    wf->steps[bad].name);
	free(seen);
	return rc;
}

/* Read steps:, a list of steps, and check the graph they make. */
int
config_steps_read(struct config_reader *rd, const struct config_key *k,
    void *base, const struct config_node *n, const char *path)
{
	struct workflow	*wf = base;
	char		 p[64];
	size_t		 i, j;

	if (n->type != CONFIG_SEQUENCE)
		return config_err(rd, n, "%s: expected a list of steps", path);
	if (n->nkids == 0)
		return config_err(rd, n, "%s: lists no step", path);
	if (n->nkids > STEPS_MAX)
		return config_err(rd, n, "%s: more than %d steps", path,
		    STEPS_MAX);
	if (wf->workspace == NULL)
		return config_err(rd, n, "%s: a workflow of steps needs "
		    "workspace:, where the artifacts go and what paths: are "
		    "relative to", path);
	wf->steps = xcalloc(n->nkids, sizeof *wf->steps);
	for (i = 0; i < n->nkids; i++) {
		snprintf(p, sizeof p, "%s[%zu]", path, i);
		wf->steps[i].index = (unsigned int)i;
		wf->nsteps++;
		if (config_steps_read_one(rd, &wf->steps[i], n->kids[i],
		    p) != 0)
			return -1;
		for (j = 0; j < i; j++)
			if (strcmp(wf->steps[j].name, wf->steps[i].name) == 0)
				return config_err(rd, config_steps_at(
				    n->kids[i], "name"), "%s: a step named "
				    "'%s' comes before (steps[%zu])", p,
				    wf->steps[i].name, j);
	}
	return config_steps_graph(rd, n);
}

/* Print a step's params: as JSON, which YAML reads as a flow mapping. */
void
config_steps_print_params(FILE *f, const struct config_key *k,
    const void *base, int indent)
{
	const struct step_conf	*sc = base;
	char			*s;

	if (sc->params == NULL || json_object_size(sc->params) == 0)
		return;
	s = jsonw_dumps(sc->params, JSON_COMPACT | JSON_SORT_KEYS);
	fprintf(f, "%*sparams: %s\n", indent, "", s != NULL ? s : "{}");
	free(s);
}

/*
 * Print steps:, one mapping per step with every key resolved: the step's
 * keys as the table prints them, the first on the list's dash.
 */
void
config_steps_print(FILE *f, const struct config_key *k, const void *base,
    int indent)
{
	const struct workflow	*wf = base;
	char			*text = NULL;
	size_t			 i, len = 0;
	FILE			*m;

	if (wf->nsteps == 0)
		return;
	fprintf(f, "%*ssteps:\n", indent, "");
	for (i = 0; i < wf->nsteps; i++) {
		if ((m = open_memstream(&text, &len)) == NULL)
			fatal("open_memstream");
		config_print_map(m, CONFIG_STEP, &wf->steps[i], "", indent + 4);
		fclose(m);
		/* The first line's indent, but for the dash. */
		fprintf(f, "%*s- %s", indent + 2, "", text + indent + 4);
		free(text);
		text = NULL;
	}
}

/* Print paths:, when there are any. */
void
config_steps_print_paths(FILE *f, const struct config_key *k,
    const void *base, int indent)
{
	const struct workflow	*wf = base;
	size_t			 i;

	if (wf->npaths == 0)
		return;
	fprintf(f, "%*spaths:\n", indent, "");
	for (i = 0; i < wf->npaths; i++) {
		fprintf(f, "%*s%s: ", indent + 2, "", wf->paths[i].key);
		config_print_str(f, wf->paths[i].value);
		fputc('\n', f);
	}
}

/* Free what the steps of a workflow hold. */
void
config_steps_free(struct workflow *wf)
{
	struct step_conf	*sc;
	size_t			 i;

	for (i = 0; i < wf->nsteps; i++) {
		sc = &wf->steps[i];
		free(sc->name);
		free(sc->agent_name);
		free(sc->intent);
		free(sc->capability);
		free(sc->action);
		json_decref(sc->params);
		free(sc->proceed);
		free(sc->retry);
	}
	free(wf->steps);
	for (i = 0; i < wf->npaths; i++) {
		free(wf->paths[i].key);
		free(wf->paths[i].value);
	}
	free(wf->paths);
	free(wf->feature_id);
}

/* The step named name, or NULL. */
const struct step_conf *
config_find_step(const struct workflow *wf, const char *name)
{
	size_t	i;

	for (i = 0; i < wf->nsteps; i++)
		if (wf->steps[i].name != NULL &&
		    strcmp(wf->steps[i].name, name) == 0)
			return &wf->steps[i];
	return NULL;
}
