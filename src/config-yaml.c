/*
 * YAML text to a tree of nodes that remember where the file has them, with
 * libfyaml's event parser: the part of the workflow loader that knows
 * YAML.  config.c reads the tree into struct workflow.
 *
 * Refused here, before any key is read: NUL bytes, text that is not UTF-8,
 * a second document, aliases (every setting is spelled out where it
 * applies), nesting deeper than 64.
 */

#include <errno.h>
#include <libfyaml.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "config.h"

/* Mappings and sequences nested deeper than this are refused. */
#define CONFIG_YAML_DEPTH	64

/* Record an error at a line and column of the file. */
static int
config_err_at(struct config_reader *rd, int line, int column,
    const char *msg)
{
	struct config_node	where;

	memset(&where, 0, sizeof where);
	where.line = line;
	where.column = column;
	return config_err(rd, &where, "%s", msg);
}

/*
 * Refuse text that is not UTF-8, before libfyaml sees it: YAML is UTF-8
 * here, and libfyaml 0.7.12 loops on invalid UTF-8 in a directive line.
 */
static int
config_yaml_utf8(struct config_reader *rd, const char *text, size_t len)
{
	size_t	bad, i;
	int	line = 1, column = 1;

	if (util_utf8_valid(text, len, &bad))
		return 0;
	for (i = 0; i < bad; i++) {
		if (text[i] == '\n') {
			line++;
			column = 1;
		} else
			column++;
	}
	return config_err_at(rd, line, column, "the file is not valid UTF-8");
}

/* Free a node tree. */
void
config_yaml_free(struct config_node *n)
{
	size_t	i;

	if (n == NULL)
		return;
	for (i = 0; i < n->nkids; i++)
		config_yaml_free(n->kids[i]);
	free(n->kids);
	free(n->str);
	free(n);
}

/* Append a child to a map or sequence node. */
static void
config_yaml_add(struct config_node *parent, struct config_node *kid)
{
	if (parent->nkids == parent->cap) {
		parent->cap = parent->cap ? parent->cap * 2 : 8;
		parent->kids = xreallocarray(parent->kids, parent->cap,
		    sizeof *parent->kids);
	}
	parent->kids[parent->nkids++] = kid;
}

/*
 * Make the node of a scalar, mapping or sequence event.  An empty value
 * has no mark of its own: it takes its key's.
 */
static struct config_node *
config_yaml_new(struct fy_event *fye, struct config_node *parent)
{
	const struct fy_mark	*m = fy_event_start_mark(fye);
	struct config_node	*n, *prev;
	enum fy_scalar_style	 style;
	const char		*t;
	size_t			 tl;

	n = xcalloc(1, sizeof *n);
	n->line = m != NULL ? m->line + 1 : 0;
	n->column = m != NULL ? m->column + 1 : 0;
	if (m == NULL && parent != NULL && parent->nkids > 0) {
		prev = parent->kids[parent->nkids - 1];
		n->line = prev->line;
		n->column = prev->column;
	}
	if (fye->type == FYET_MAPPING_START ||
	    fye->type == FYET_SEQUENCE_START) {
		n->type = fye->type == FYET_MAPPING_START ? CONFIG_MAPPING :
		    CONFIG_SEQUENCE;
		n->flow = fy_event_get_node_style(fye) == FYNS_FLOW;
		return n;
	}
	n->type = CONFIG_SCALAR;
	t = fy_token_get_text(fye->scalar.value, &tl);
	n->str = xmemdup0(t != NULL ? t : "", t != NULL ? tl : 0);
	n->len = t != NULL ? tl : 0;
	style = fy_token_scalar_style(fye->scalar.value);
	n->quoted = style != FYSS_PLAIN;
	/* libfyaml marks a quoted scalar after its quote. */
	if ((style == FYSS_SINGLE_QUOTED || style == FYSS_DOUBLE_QUOTED) &&
	    n->column > 1)
		n->column--;
	return n;
}

/*
 * Take one parser event into the tree being built: stack holds the open
 * mappings and sequences.  Returns -1 (with the error) to stop.
 */
static int
config_yaml_event(struct config_reader *rd, struct fy_event *fye,
    struct config_node **root, struct config_node **stack, int *depth,
    int *docs)
{
	const struct fy_mark	*m = fy_event_start_mark(fye);
	struct config_node	*n;

	switch (fye->type) {
	case FYET_DOCUMENT_START:
		if (++*docs > 1)
			return config_err_at(rd, m ? m->line + 1 : 0,
			    m ? m->column + 1 : 0,
			    "only one YAML document is allowed");
		return 0;
	case FYET_ALIAS:
		/* The mark is after the '*'. */
		return config_err_at(rd, m->line + 1, m->column > 0 ?
		    m->column : 1, "YAML aliases are not supported");
	case FYET_MAPPING_END:
	case FYET_SEQUENCE_END:
		if (*depth > 0)
			(*depth)--;
		return 0;
	case FYET_SCALAR:
	case FYET_MAPPING_START:
	case FYET_SEQUENCE_START:
		break;
	default:
		return 0;
	}
	n = config_yaml_new(fye, *depth > 0 ? stack[*depth - 1] : NULL);
	if (*depth > 0)
		config_yaml_add(stack[*depth - 1], n);
	else if (*root == NULL)
		*root = n;
	else
		config_yaml_free(n);
	if (n->type != CONFIG_SCALAR) {
		if (*depth == CONFIG_YAML_DEPTH)
			return config_err(rd, n, "nesting too deep");
		stack[(*depth)++] = n;
	}
	return 0;
}

/*
 * Report a syntax error.  A [ or { left open on an earlier line is what
 * to fix, and libfyaml notices only where the text stops making sense
 * (often lines later): point at the opening, and say where it noticed.
 */
static void
config_yaml_syntax(struct config_reader *rd, struct fy_diag_error *de,
    struct config_node **stack, int depth)
{
	struct config_node	where;
	int			i;

	if (de == NULL) {
		config_err(rd, NULL, "YAML syntax error");
		return;
	}
	/* The outermost: inside [ a line key: reads as a { never written. */
	for (i = 0; i < depth; i++) {
		if (stack[i]->flow && stack[i]->line < de->line) {
			config_err(rd, stack[i], "YAML syntax: this %s is not "
			    "closed: a '%c' is missing (at line %d: %s)",
			    stack[i]->type == CONFIG_SEQUENCE ? "[" : "{",
			    stack[i]->type == CONFIG_SEQUENCE ? ']' : '}',
			    de->line, de->msg);
			return;
		}
	}
	memset(&where, 0, sizeof where);
	where.line = de->line;
	where.column = de->column;
	config_err(rd, &where, "YAML syntax: %s", de->msg);
}

/*
 * Build a node tree from YAML text with libfyaml's event parser; NULL, with
 * the error, for text that is no single YAML document.
 */
struct config_node *
config_yaml_parse(struct config_reader *rd, const char *text, size_t len)
{
	struct fy_diag_cfg	 dcfg;
	struct fy_parse_cfg	 pcfg;
	struct fy_diag		*diag;
	struct fy_parser	*fyp;
	struct fy_event		*fye;
	struct fy_diag_error	*de;
	struct config_node	*stack[CONFIG_YAML_DEPTH], *root = NULL;
	int			 depth = 0, docs = 0, failed = 0;
	void			*iter = NULL;

	if (memchr(text, '\0', len) != NULL) {
		config_err(rd, NULL, "the file holds a NUL byte");
		return NULL;
	}
	if (config_yaml_utf8(rd, text, len) != 0)
		return NULL;
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
		failed = config_yaml_event(rd, fye, &root, stack, &depth,
		    &docs) != 0;
		fy_parser_event_free(fyp, fye);
	}
	if (!failed && fy_parser_get_stream_error(fyp)) {
		de = fy_diag_errors_iterate(diag, &iter);
		config_yaml_syntax(rd, de, stack, depth);
		failed = 1;
	}
	fy_parser_destroy(fyp);
	fy_diag_destroy(diag);
	if (failed) {
		config_yaml_free(root);
		return NULL;
	}
	if (root == NULL)
		config_err(rd, NULL, "the file is empty");
	return root;
}

/* Return the index of key in a map node, or -1. */
ssize_t
config_yaml_index(const struct config_node *map, const char *key)
{
	size_t	i;

	if (map->type != CONFIG_MAPPING)
		return -1;
	for (i = 0; i + 1 < map->nkids; i += 2) {
		if (map->kids[i]->type == CONFIG_SCALAR &&
		    strcmp(map->kids[i]->str, key) == 0)
			return (ssize_t)i;
	}
	return -1;
}

/* Return the value node of key in a map node, or NULL. */
struct config_node *
config_yaml_get(const struct config_node *map, const char *key)
{
	ssize_t	i;

	if ((i = config_yaml_index(map, key)) < 0)
		return NULL;
	return map->kids[i + 1];
}

/*
 * Convert a node to a jansson value.  Plain scalars that look like numbers,
 * booleans or null become those; quoted ones stay strings.
 */
json_t *
config_yaml_json(const struct config_node *n)
{
	json_t	*j;
	char	*end;
	double	 d;
	size_t	 i;

	switch (n->type) {
	case CONFIG_MAPPING:
		j = json_object();
		for (i = 0; i + 1 < n->nkids; i += 2)
			json_object_set_new(j, n->kids[i]->str,
			    config_yaml_json(n->kids[i + 1]));
		return j;
	case CONFIG_SEQUENCE:
		j = json_array();
		for (i = 0; i < n->nkids; i++)
			json_array_append_new(j, config_yaml_json(n->kids[i]));
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

