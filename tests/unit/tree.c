/*
 * Unit tests of corral tree's dot and Mermaid output (src/tree.c): ids
 * are agents' words (an external agent's id carries its tool's task id),
 * so quotes, backslashes, brackets, markup, newlines and bytes that are
 * not UTF-8 in an id or a state must stay inside their string or node
 * text, and every node keeps a name of its own.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "corral.h"

/* The hostile ids, each the child of the one before; "root" at the top. */
static const char *const tr_ids[] = {
	"root",
	"a\"b\\c",				/* a quote, a backslash */
	"x\"]; evil [label=\"owned",		/* closes a dot statement */
	"line\nbreak\r\ttab",			/* control characters */
	"m[\"x\"]-->y<script>&#35;</script>",	/* Mermaid markup */
	"a-b",					/* two ids, one */
	"a.b",					/* Mermaid word */
	"bad\xff\xfe utf8",
	"end\\",				/* a trailing backslash */
};
#define TR_N	(sizeof tr_ids / sizeof tr_ids[0])

/* Render the tree of tr_ids in a format; the output is allocated. */
static char *
tr_render(const char *format)
{
	json_t	*graph, *nodes, *node;
	char	*out = NULL;
	size_t	 len = 0, i;
	FILE	*f;

	nodes = json_array();
	for (i = 0; i < TR_N; i++) {
		/* As a client reads them: not UTF-8 is possible. */
		node = json_pack("{s:s, s:{s:s, s:i}}", "state", "busy",
		    "metadata", "corralState", i == 2 ? "BUSY\" [color=red" :
		    "READY", "restarts", 0);
		json_object_set_new(node, "id", json_string_nocheck(tr_ids[i]));
		if (i > 0)
			json_object_set_new(node, "parent",
			    json_string_nocheck(tr_ids[i - 1]));
		json_array_append_new(nodes, node);
	}
	graph = json_pack("{s:o}", "nodes", nodes);
	assert_non_null(f = open_memstream(&out, &len));
	assert_int_equal(tree_render_graph(graph, 0, format, f), 0);
	fclose(f);
	json_decref(graph);
	return out;
}

/* Count the lines of s. */
static size_t
tr_lines(const char *s)
{
	size_t	n = 0;

	for (; *s != '\0'; s++)
		if (*s == '\n')
			n++;
	return n;
}

/*
 * The dot string starting at *p (after its opening quote): its end, the
 * character after the closing quote, or NULL when it has none.
 */
static const char *
tr_dot_close(const char *p)
{
	for (; *p != '\0' && *p != '\n'; p++) {
		if (*p == '\\' && p[1] != '\0' && p[1] != '\n') {
			p++;
			continue;
		}
		if (*p == '"')
			return p + 1;
	}
	return NULL;
}

/*
 * dot: one statement a line, each quoted string closed on its line, each
 * node line exactly "ID" [label="..."]; and each edge "A" -> "B";.
 */
static void
test_dot(void **state)
{
	char		*out = tr_render("dot"), *line, *save = NULL, *copy;
	const char	*p;
	size_t		 nodes = 0, edges = 0;

	/* The header, a line per node and per edge, the closing brace. */
	assert_int_equal(tr_lines(out), 2 + TR_N + (TR_N - 1) + 1);
	copy = xstrdup(out);
	for (line = strtok_r(copy, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (strcmp(line, "digraph corral {") == 0 ||
		    strcmp(line, "  node [shape=box];") == 0 ||
		    strcmp(line, "}") == 0)
			continue;
		assert_true(strncmp(line, "  \"", 3) == 0);
		assert_non_null(p = tr_dot_close(line + 3));
		if (strncmp(p, " -> \"", 5) == 0) {
			assert_non_null(p = tr_dot_close(p + 5));
			assert_string_equal(p, ";");
			edges++;
			continue;
		}
		assert_true(strncmp(p, " [label=\"", 9) == 0);
		assert_non_null(p = tr_dot_close(p + 9));
		assert_string_equal(p, "];");
		nodes++;
	}
	free(copy);
	assert_int_equal(nodes, TR_N);
	assert_int_equal(edges, TR_N - 1);
	/* The id itself, escaped: the same bytes back for graphviz. */
	assert_non_null(strstr(out, "\n  \"a\\\"b\\\\c\" [label=\"a\\\"b\\\\c"
	    "\\nREADY\\ndepth 1, "));
	assert_non_null(strstr(out, "\n  \"x\\\"]; evil [label=\\\"owned\" "
	    "[label=\"x\\\"]; evil [label=\\\"owned\\nBUSY\\\" [color=red\\n"));
	assert_non_null(strstr(out, " -> \"end\\\\\";\n"));
	/* Control characters and bad bytes are made visible first. */
	assert_non_null(strstr(out, "\"line\\\\nbreak\\\\r\\\\ttab\""));
	assert_non_null(strstr(out, "\"bad\\\\377\\\\376 utf8\""));
	free(out);
}

/*
 * Mermaid: node names are words of their own, node text holds no quote
 * and no markup of its own, and every edge joins two declared names.
 */
static void
test_mermaid(void **state)
{
	char		*out = tr_render("mermaid"), *line, *save = NULL, *copy;
	char		 names[TR_N][128], a[128], b[128];
	const char	*p, *text;
	size_t		 nodes = 0, edges = 0, i, j, k;

	assert_int_equal(tr_lines(out), 1 + TR_N + (TR_N - 1));
	copy = xstrdup(out);
	for (line = strtok_r(copy, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (strcmp(line, "graph TD") == 0)
			continue;
		assert_true(strncmp(line, "  ", 2) == 0);
		p = line + 2;
		k = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW"
		    "XYZ0123456789_");
		assert_true(k > 0 && k < sizeof a);
		if (strncmp(p + k, " --> ", 5) == 0) {
			memcpy(a, p, k);
			a[k] = '\0';
			p += k + 5;
			assert_true(strlen(p) < sizeof b);
			assert_int_equal(strspn(p, "abcdefghijklmnopqrstuvwxyz"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"), strlen(p));
			strlcpy(b, p, sizeof b);
			for (i = 0; i < nodes && strcmp(names[i], a) != 0; i++)
				;
			for (j = 0; j < nodes && strcmp(names[j], b) != 0; j++)
				;
			assert_true(i < nodes && j < nodes);
			assert_int_equal(j, i + 1);	/* the parent's child */
			edges++;
			continue;
		}
		assert_true(nodes < TR_N);
		memcpy(names[nodes], p, k);
		names[nodes][k] = '\0';
		for (i = 0; i < nodes; i++)
			assert_string_not_equal(names[i], names[nodes]);
		assert_true(strncmp(p + k, "[\"", 2) == 0);
		text = p + k + 2;
		assert_true(strlen(text) >= 2);
		assert_string_equal(text + strlen(text) - 2, "\"]");
		/* Inside: no quote, and no < > but those of <br/>. */
		for (p = text; p < text + strlen(text) - 2; p++) {
			assert_true(*p != '"');
			if (*p == '<') {
				assert_true(strncmp(p, "<br/>", 5) == 0);
				p += 4;
				continue;
			}
			assert_true(*p != '>');
		}
		nodes++;
	}
	free(copy);
	assert_int_equal(nodes, TR_N);
	assert_int_equal(edges, TR_N - 1);
	assert_non_null(strstr(out, "[\"m[#quot;x#quot;]--#gt;y#lt;script"
	    "#gt;#amp;#35;35;#lt;/script#gt;<br/>READY<br/>depth 4, "));
	assert_non_null(strstr(out, "[\"x#quot;]; evil [label=#quot;owned"
	    "<br/>BUSY#quot; [color=red<br/>depth 2, "));
	/* a-b and a.b: one word, two names. */
	assert_non_null(strstr(out, "\n  a_b[\"a-b<br/>"));
	assert_non_null(strstr(out, "\n  a_b_6[\"a.b<br/>"));
	free(out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dot),
		cmocka_unit_test(test_mermaid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
