/*
 * corral tree: the agent tree of a run, rebuilt from its audit log (or,
 * for a running corral, from its map/structure/graph), as indented text,
 * Graphviz dot or Mermaid.  Each node shows the agent's last state, its
 * depth, how long it lived, and the tokens and cost its replies reported.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

struct tnode {
	char		*id;
	char		*name;
	char		*parent;
	char		*state;
	char		*host;		/* launched: where it runs */
	unsigned int	 depth;
	double		 start;
	double		 end;
	double		 tokens;
	double		 cost;
	unsigned int	 restarts;
	int		 external;	/* inside a wrapped CLI (adapters) */
	unsigned int	 tools;		/* when external */
};

struct tree {
	struct tnode	*nodes;
	size_t		 n;
	size_t		 cap;
	double		 last_t;
};

/* Find or add a node. */
static struct tnode *
tree_node(struct tree *t, const char *id)
{
	size_t	i;

	for (i = 0; i < t->n; i++)
		if (strcmp(t->nodes[i].id, id) == 0)
			return &t->nodes[i];
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->nodes = xreallocarray(t->nodes, t->cap, sizeof *t->nodes);
	}
	memset(&t->nodes[t->n], 0, sizeof t->nodes[t->n]);
	t->nodes[t->n].id = xstrdup(id);
	t->nodes[t->n].start = -1;
	t->nodes[t->n].end = -1;
	return &t->nodes[t->n++];
}

/* Replace a string field. */
static void
tree_set(char **field, const char *v)
{
	free(*field);
	*field = v != NULL ? xstrdup(v) : NULL;
}

/* Read one audit line into the tree. */
static void
tree_line(struct tree *t, json_t *j)
{
	const char	*ev, *agent, *s;
	struct tnode	*n;
	json_t		*cost, *v;
	double		 at;

	ev = json_string_value(json_object_get(j, "ev"));
	agent = json_string_value(json_object_get(j, "agent"));
	at = json_number_value(json_object_get(j, "t"));
	if (at > t->last_t)
		t->last_t = at;
	if (ev == NULL || agent == NULL)
		return;
	if (strcmp(ev, "spawn") == 0) {
		n = tree_node(t, agent);
		if (n->start < 0)
			n->start = at;
		else
			n->restarts++;
		n->end = -1;
		if ((s = json_string_value(json_object_get(j, "name"))) != NULL)
			tree_set(&n->name, s);
		if ((s = json_string_value(json_object_get(j, "parent"))) !=
		    NULL && *s != '\0')
			tree_set(&n->parent, s);
	} else if (strcmp(ev, "launch") == 0 || strcmp(ev, "host") == 0) {
		n = tree_node(t, agent);
		s = json_string_value(json_object_get(j, strcmp(ev, "host") ==
		    0 ? "name" : "host"));
		if (s != NULL && *s != '\0')
			tree_set(&n->host, s);
	} else if (strcmp(ev, "edge") == 0) {
		n = tree_node(t, agent);
		if ((s = json_string_value(json_object_get(j, "parent"))) != NULL)
			tree_set(&n->parent, s);
		v = json_object_get(j, "depth");
		if (json_is_integer(v))
			n->depth = (unsigned int)json_integer_value(v);
		else if ((s = json_string_value(v)) != NULL)
			n->depth = (unsigned int)atoi(s);	/* older logs */
	} else if (strcmp(ev, "external_agent") == 0) {
		n = tree_node(t, agent);
		n->external = 1;
		if (n->start < 0)
			n->start = at;
		if ((s = json_string_value(json_object_get(j, "parent"))) != NULL)
			tree_set(&n->parent, s);
		if ((s = json_string_value(json_object_get(j, "name"))) != NULL)
			tree_set(&n->name, s);
		if ((s = json_string_value(json_object_get(j, "state"))) != NULL)
			tree_set(&n->state, s);
		if ((s = json_string_value(json_object_get(j, "state"))) !=
		    NULL && (strcmp(s, "STOPPED") == 0 ||
		    strcmp(s, "FAILED") == 0))
			n->end = at;
		/* Its tool's own count: no reply of its own carries one. */
		if ((v = json_object_get(j, "tokens")) != NULL)
			n->tokens = json_number_value(v);
		if ((v = json_object_get(j, "tool_calls")) != NULL)
			n->tools = (unsigned int)json_integer_value(v);
	} else if (strcmp(ev, "state") == 0) {
		n = tree_node(t, agent);
		if ((s = json_string_value(json_object_get(j, "to"))) != NULL) {
			tree_set(&n->state, s);
			if (strcmp(s, "STOPPED") == 0 || strcmp(s, "FAILED") == 0)
				n->end = at;
		}
		if (n->start < 0)
			n->start = at;
	} else if (strcmp(ev, "reply") == 0) {
		n = tree_node(t, agent);
		cost = json_object_get(json_object_get(json_object_get(j, "env"),
		    "trace"), "cost");
		if ((v = json_object_get(cost, "input_tokens")) != NULL)
			n->tokens += json_number_value(v);
		if ((v = json_object_get(cost, "output_tokens")) != NULL)
			n->tokens += json_number_value(v);
		if ((v = json_object_get(cost, "usd")) != NULL)
			n->cost += json_number_value(v);
	}
}

/* Depth of a node, from its parent chain. */
static unsigned int
tree_depth(struct tree *t, struct tnode *n)
{
	unsigned int	d = 0;
	size_t		i;
	const char	*p = n->parent;

	while (p != NULL && d < 1000) {
		for (i = 0; i < t->n; i++)
			if (strcmp(t->nodes[i].id, p) == 0)
				break;
		if (i == t->n)
			break;
		d++;
		p = t->nodes[i].parent;
	}
	return d;
}

/*
 * The label of a node: state, depth, duration, tokens, cost; for an agent
 * inside a CLI, that and its tool calls.
 */
static void
tree_label(struct tree *t, struct tnode *n, char *buf, size_t len,
    const char *sep)
{
	double	end = n->end >= 0 ? n->end : t->last_t;
	double	dur = n->start >= 0 ? end - n->start : 0;
	char	tools[160] = "";
	size_t	l;

	if (n->external)
		snprintf(tools, sizeof tools, "inside its CLI, %u tool "
		    "call%s, ", n->tools, n->tools == 1 ? "" : "s");
	if (n->host != NULL) {
		l = strlen(tools);
		snprintf(tools + l, sizeof tools - l, "on %s, ", n->host);
	}
	snprintf(buf, len, "%s%s%sdepth %u, %.2fs, %.0f tokens, $%.4f%s%s",
	    n->state != NULL ? n->state : "?", sep, tools,
	    tree_depth(t, n), dur, n->tokens, n->cost,
	    n->restarts ? ", restarts " : "", n->restarts ? "" : "");
	if (n->restarts) {
		l = strlen(buf);
		snprintf(buf + l, len - l, "%u", n->restarts);
	}
}

/* Print the subtree under parent (NULL: roots) as indented text. */
static void
tree_text(struct tree *t, const char *parent, const char *prefix, FILE *f)
{
	struct tnode	*n;
	char		 label[256], pre[512];
	size_t		 i, last = (size_t)-1;

	for (i = 0; i < t->n; i++) {
		n = &t->nodes[i];
		if ((parent == NULL && n->parent == NULL) || (parent != NULL &&
		    n->parent != NULL && strcmp(n->parent, parent) == 0))
			last = i;
	}
	for (i = 0; i < t->n && last != (size_t)-1; i++) {
		n = &t->nodes[i];
		if (!((parent == NULL && n->parent == NULL) || (parent != NULL &&
		    n->parent != NULL && strcmp(n->parent, parent) == 0)))
			continue;
		tree_label(t, n, label, sizeof label, ", ");
		if (parent == NULL) {
			fprintf(f, "%s [%s]\n", n->id, label);
			tree_text(t, n->id, "", f);
		} else {
			fprintf(f, "%s%s %s [%s]\n", prefix, i == last ?
			    "`--" : "|--", n->id, label);
			snprintf(pre, sizeof pre, "%s%s", prefix, i == last ?
			    "    " : "|   ");
			tree_text(t, n->id, pre, f);
		}
	}
}

/*
 * Write s between the quotes of a dot string: a quote and a backslash
 * escaped, a newline as dot's line break in a label (\n).  Agents' ids
 * reach here (an external agent's carries its tool's task id), and
 * whatever they hold stays inside the string.
 */
static void
tree_dot_string(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\n') {
			fputs("\\n", f);
			continue;
		}
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
}

/*
 * Write s as the text of a Mermaid node (between its quotes): what
 * Mermaid reads as markup or an entity written as an entity, a newline
 * as a line break.
 */
static void
tree_mermaid_text(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		switch (*s) {
		case '\n':
			fputs("<br/>", f);
			break;
		case '"':
			fputs("#quot;", f);
			break;
		case '#':
			fputs("#35;", f);
			break;
		case '&':
			fputs("#amp;", f);
			break;
		case '<':
			fputs("#lt;", f);
			break;
		case '>':
			fputs("#gt;", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}

/* An id as a Mermaid name (allocated): all but letters and digits '_'. */
static char *
tree_mermaid_word(const char *id)
{
	char	*s = xstrdup(id);
	size_t	 j;

	for (j = 0; s[j] != '\0'; j++)
		if (!((s[j] >= 'a' && s[j] <= 'z') || (s[j] >= 'A' &&
		    s[j] <= 'Z') || (s[j] >= '0' && s[j] <= '9')))
			s[j] = '_';
	return s;
}

/*
 * Mermaid's names of the nodes (allocated, one per node): the id as a
 * word, and the node's number added when another node has that name.
 */
static char **
tree_mermaid_names(struct tree *t)
{
	char	**names = xcalloc(t->n + 1, sizeof *names), *s;
	size_t	  i, j;

	for (i = 0; i < t->n; i++) {
		s = tree_mermaid_word(t->nodes[i].id);
		for (j = 0; j < i && strcmp(names[j], s) != 0; j++)
			;
		if (s[0] == '\0' || j < i) {
			names[i] = NULL;
			xasprintf(&names[i], "%s_%zu", s, i);
			free(s);
		} else
			names[i] = s;
	}
	return names;
}

/* The number of the node with this id, or -1. */
static ssize_t
tree_index(const struct tree *t, const char *id)
{
	size_t	i;

	for (i = 0; i < t->n; i++)
		if (strcmp(t->nodes[i].id, id) == 0)
			return (ssize_t)i;
	return -1;
}

/* Print a tree as Graphviz dot. */
static void
tree_dot(struct tree *t, FILE *f)
{
	struct tnode	*n;
	char		 label[256];
	size_t		 i;

	fprintf(f, "digraph corral {\n  node [shape=box];\n");
	for (i = 0; i < t->n; i++) {
		n = &t->nodes[i];
		tree_label(t, n, label, sizeof label, "\n");
		fputs("  \"", f);
		tree_dot_string(f, n->id);
		fputs("\" [label=\"", f);
		tree_dot_string(f, n->id);
		fputs("\\n", f);
		tree_dot_string(f, label);
		fputs("\"];\n", f);
	}
	for (i = 0; i < t->n; i++) {
		n = &t->nodes[i];
		if (n->parent == NULL)
			continue;
		fputs("  \"", f);
		tree_dot_string(f, n->parent);
		fputs("\" -> \"", f);
		tree_dot_string(f, n->id);
		fputs("\";\n", f);
	}
	fprintf(f, "}\n");
}

/* Print a tree as a Mermaid flowchart. */
static void
tree_mermaid(struct tree *t, FILE *f)
{
	struct tnode	*n;
	char		**names, label[256], *w;
	size_t		  i;
	ssize_t		  p;

	names = tree_mermaid_names(t);
	fprintf(f, "graph TD\n");
	for (i = 0; i < t->n; i++) {
		n = &t->nodes[i];
		tree_label(t, n, label, sizeof label, "\n");
		fprintf(f, "  %s[\"", names[i]);
		tree_mermaid_text(f, n->id);
		fputs("<br/>", f);
		tree_mermaid_text(f, label);
		fputs("\"]\n", f);
	}
	for (i = 0; i < t->n; i++) {
		n = &t->nodes[i];
		if (n->parent == NULL)
			continue;
		if ((p = tree_index(t, n->parent)) != -1) {
			fprintf(f, "  %s --> %s\n", names[p], names[i]);
			continue;
		}
		/* A parent the log does not show: Mermaid makes its node. */
		w = tree_mermaid_word(n->parent);
		fprintf(f, "  %s --> %s\n", w, names[i]);
		free(w);
	}
	for (i = 0; i < t->n; i++)
		free(names[i]);
	free(names);
}

/* Print a tree in a format: text, dot or mermaid. */
static void
tree_print(struct tree *t, const char *format, FILE *f)
{
	if (strcmp(format, "dot") == 0)
		tree_dot(t, f);
	else if (strcmp(format, "mermaid") == 0)
		tree_mermaid(t, f);
	else
		tree_text(t, NULL, "", f);
}

/* Free a tree's nodes. */
static void
tree_free(struct tree *t)
{
	size_t	i;

	for (i = 0; i < t->n; i++) {
		free(t->nodes[i].id);
		free(t->nodes[i].name);
		free(t->nodes[i].parent);
		free(t->nodes[i].state);
		free(t->nodes[i].host);
	}
	free(t->nodes);
}

/*
 * Render the tree recorded in an audit log.  Returns an exit status.
 * What is not whole (a line that does not parse, a last line cut short)
 * is left out and reported (auditlog-read.c); the tree is drawn from the
 * rest.  A log in a format newer than this corral's is refused.
 */
int
tree_render(const char *path, const char *format, FILE *f)
{
	struct auditlog_reader	 r;
	struct tree		 t;
	json_t			*j;
	int			 rc;

	if (auditlog_read_open(&r, path) != 0) {
		fprintf(stderr, "corral: %s: %s\n", path, strerror(errno));
		return EXIT_USAGE;
	}
	memset(&t, 0, sizeof t);
	while ((rc = auditlog_read_next(&r, &j)) == 1) {
		util_vis_json(j);	/* agents' words, for a terminal */
		tree_line(&t, j);
		json_decref(j);
	}
	if (rc < 0) {
		fprintf(stderr, "corral: %s\n", r.why);
		auditlog_read_close(&r);
		tree_free(&t);
		return EXIT_USAGE;
	}
	auditlog_read_report(&r, stderr);
	auditlog_read_close(&r);
	tree_print(&t, format, f);
	tree_free(&t);
	return 0;
}

/* A time in milliseconds since the epoch, as seconds (absent: -1). */
static double
tree_ms(json_t *v)
{
	return json_is_integer(v) ? (double)json_integer_value(v) / 1000.0 :
	    -1;
}

/*
 * Render the tree of a running corral from map/structure/graph's result
 * (now: the time, in seconds since the epoch).  Returns an exit status.
 */
int
tree_render_graph(json_t *graph, double now, const char *format, FILE *f)
{
	struct tree	 t;
	struct tnode	*n;
	json_t		*node, *md, *life;
	const char	*s;
	size_t		 i;

	util_vis_json(graph);	/* agents' words, for a terminal */
	memset(&t, 0, sizeof t);
	t.last_t = now;
	json_array_foreach(json_object_get(graph, "nodes"), i, node) {
		if ((s = json_string_value(json_object_get(node, "id"))) ==
		    NULL)
			continue;
		n = tree_node(&t, s);
		md = json_object_get(node, "metadata");
		life = json_object_get(node, "lifecycle");
		tree_set(&n->name, json_string_value(json_object_get(node,
		    "name")));
		tree_set(&n->parent, json_string_value(json_object_get(node,
		    "parent")));
		s = json_string_value(json_object_get(md, "corralState"));
		tree_set(&n->state, s != NULL ? s :
		    json_string_value(json_object_get(node, "state")));
		n->start = tree_ms(json_object_get(life, "startedAt"));
		n->end = tree_ms(json_object_get(life, "stoppedAt"));
		n->tokens = json_number_value(json_object_get(md, "tokens"));
		n->cost = json_number_value(json_object_get(md, "cost"));
		n->restarts = (unsigned int)json_integer_value(
		    json_object_get(md, "restarts"));
		n->external = json_is_true(json_object_get(md, "virtual"));
		s = json_string_value(json_object_get(json_object_get(md,
		    "host"), "name"));
		if (s == NULL || *s == '\0')
			s = json_string_value(json_object_get(json_object_get(md,
			    "host"), "node"));
		tree_set(&n->host, s);
		n->tools = (unsigned int)json_integer_value(json_object_get(md,
		    "toolCalls"));
	}
	tree_print(&t, format, f);
	tree_free(&t);
	return 0;
}
