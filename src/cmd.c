/*
 * The table of commands, as tmux's cmd.c: each command file exports a
 * struct cmd_entry (name, synopsis, one line about it, options, handler),
 * and everything the command line shows comes from the table: corral
 * --help, each command's usage and --help, and the synopsis of the manual
 * (cmd_mdoc_synopsis; tests/unit/cmd.c compares it with docs/corral.1).
 *
 * Options are parsed here, once, with getopt_long built from the entry;
 * the handler asks for them by name (cmd_get, cmd_has, cmd_next).  A
 * command that talks to a running corral says CMD_TARGET and gets -S PATH
 * and --run ID; with CMD_ATTACH it is connected before its handler runs.
 *
 * To add a command: write src/cmd-NAME.c with its entry and handler, name
 * the entry in cmd.h and in the table below, add the file to
 * CMakeLists.txt, and give docs/corral.1 its synopsis (the unit test
 * prints what it expects) and a paragraph.
 */

#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "cmd.h"

#define CMD_MAX_OPTIONS	32
#define CMD_MAX_TOKENS	128
#define CMD_WIDTH	79

/* In the order --help and the manual list them. */
static const struct cmd_entry *const cmd_entries[] = {
	&cmd_run_entry,
	&cmd_serve_entry,
	&cmd_resume_entry,
	&cmd_check_entry,
	&cmd_new_entry,
	&cmd_tree_entry,
	&cmd_replay_entry,
	&cmd_ps_entry,
	&cmd_events_entry,
	&cmd_send_entry,
	&cmd_stop_entry,
	&cmd_cancel_entry,
	&cmd_answer_entry,
	&cmd_top_entry,
	&cmd_metrics_entry,
	&cmd_tasks_entry,
	&cmd_mcp_entry,
	&cmd_host_entry,
	NULL
};

/* The global options, before the command (main.c parses them). */
const char cmd_global_args[] = "[-hVv] [--help] [--version] [--verbose] "
    "COMMAND ...";

/* What CMD_TARGET adds to a command's options and its synopsis. */
static const struct cmd_option cmd_target_options[] = {
	{ "control", 'S', 1 },
	{ "run", 0, 1 },
	{ NULL, 0, 0 }
};
static const char cmd_target_args[] = "[-S PATH | --run ID]";

/* Every command takes -h and --help. */
static const struct cmd_option cmd_help_option = { "help", 'h', 0 };

/* A token of a synopsis, and whether a line may break before it. */
struct cmd_token {
	const char	*s;
	size_t		 n;
	int		 depth;		/* inside how many [ ] */
	int		 element;	/* begins a top-level element */
};

/* The table, ending with NULL. */
const struct cmd_entry *const *
cmd_table(void)
{
	return cmd_entries;
}

/* The command called name, or NULL. */
const struct cmd_entry *
cmd_find(const char *name)
{
	const struct cmd_entry *const	*e;

	for (e = cmd_entries; *e != NULL; e++)
		if (strcmp((*e)->name, name) == 0)
			return *e;
	return NULL;
}

/* The command whose name is a typing slip away from name, or NULL. */
const char *
cmd_nearest(const char *name)
{
	const char	*names[sizeof cmd_entries / sizeof cmd_entries[0]];
	size_t		 i;

	for (i = 0; cmd_entries[i] != NULL; i++)
		names[i] = cmd_entries[i]->name;
	names[i] = NULL;
	return util_nearest(name, names);
}

/* Is token t the word w? */
static int
cmd_token_is(const struct cmd_token *t, const char *w)
{
	return t->n == strlen(w) && memcmp(t->s, w, t->n) == 0;
}

/* Is token t a flag (-x, --name)? */
static int
cmd_token_flag(const struct cmd_token *t)
{
	return t->n > 1 && t->s[0] == '-' && t->s[1] != '.';
}

/*
 * Split a synopsis into tokens: [ and ] alone, other words at spaces.  A
 * top-level element (what a line of the manual holds, where --help may
 * wrap) begins at each [ and at each word, except "...", "|", the word
 * after a "|" and a flag's argument.  Returns how many.
 */
static size_t
cmd_tokens(const char *s, struct cmd_token *tok, size_t max)
{
	struct cmd_token	*t, *prev = NULL;
	size_t			 n = 0;
	int			 depth = 0;

	while (*s != '\0' && n < max) {
		if (*s == ' ') {
			s++;
			continue;
		}
		t = &tok[n++];
		t->s = s;
		if (*s == '[' || *s == ']')
			t->n = 1;
		else
			t->n = strcspn(s, " []");
		s += t->n;
		t->depth = depth;
		if (*t->s == '[')
			depth++;
		else if (*t->s == ']')
			depth--;
		t->element = t->depth == 0 && *t->s != ']' && (prev == NULL ||
		    !(cmd_token_is(t, "...") || cmd_token_is(t, "|") ||
		    cmd_token_is(prev, "|") || (cmd_token_flag(prev) &&
		    !cmd_token_flag(t) && *t->s != '[')));
		prev = t;
	}
	return n;
}

/*
 * A command's synopsis as text: "NAME [-S PATH | --run ID] ARGS".
 * Returns 0, or -1 when it does not fit.
 */
int
cmd_synopsis(const struct cmd_entry *e, char *buf, size_t len)
{
	int	n;

	n = snprintf(buf, len, "%s%s%s%s%s", e->name, e->flags & CMD_TARGET ?
	    " " : "", e->flags & CMD_TARGET ? cmd_target_args : "",
	    e->args[0] != '\0' ? " " : "", e->args);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/*
 * Print lead then text, wrapped at top-level elements to CMD_WIDTH
 * columns, continued lines indented by indent.
 */
static void
cmd_wrap(FILE *f, const char *lead, const char *text, int indent)
{
	struct cmd_token	 tok[CMD_MAX_TOKENS];
	size_t			 n, i, j, width;
	int			 col;

	col = fprintf(f, "%s", lead);
	n = cmd_tokens(text, tok, CMD_MAX_TOKENS);
	for (i = 0; i < n; i = j) {
		/* The element: up to the next token that begins one. */
		for (j = i + 1; j < n && !tok[j].element; j++)
			;
		width = (size_t)(tok[j - 1].s + tok[j - 1].n - tok[i].s);
		if (i > 0 && col + 1 + (int)width > CMD_WIDTH) {
			col = fprintf(f, "\n%*s", indent, "") - 1;
		} else if (i > 0)
			col += fprintf(f, " ");
		col += fprintf(f, "%.*s", (int)width, tok[i].s);
	}
	fprintf(f, "\n");
}

/* Print a command's usage line on f. */
static void
cmd_usage_line(FILE *f, const struct cmd_entry *e)
{
	char	syn[1024];

	(void)cmd_synopsis(e, syn, sizeof syn);
	cmd_wrap(f, "usage: corral ", syn, 8);
}

/* corral --help: every command, its synopsis and what it is for. */
void
cmd_usage_all(FILE *f)
{
	const struct cmd_entry *const	*e;
	char				 syn[1024];

	cmd_wrap(f, "usage: corral ", cmd_global_args, 8);
	fprintf(f, "\n");
	for (e = cmd_entries; *e != NULL; e++) {
		(void)cmd_synopsis(*e, syn, sizeof syn);
		cmd_wrap(f, "  corral ", syn, 8);
		fprintf(f, "        %s\n", (*e)->about);
	}
	fprintf(f, "\n"
	    "A command's options may come before or after its operands; "
	    "corral COMMAND\n--help shows one command.  Commands with -S PATH "
	    "talk to a running corral\nover its control socket: -S PATH, "
	    "$CORRAL_CONTROL, --run ID (a prefix of the\nrun's id), or the "
	    "only one running; see docs/control.md.\n\n"
	    "Exit status: 0 success, 1 the workflow failed, 2 usage or "
	    "configuration error,\n130 interrupted (SIGINT), 143 terminated "
	    "(SIGTERM).  See corral(1).\n");
}

/* Say how the command is used, on stderr; returns EXIT_USAGE. */
int
cmd_usage(struct cmd *c)
{
	cmd_usage_line(stderr, c->entry);
	return EXIT_USAGE;
}

/* The options a command takes, into v (CMD_MAX_OPTIONS); how many. */
static size_t
cmd_options(const struct cmd_entry *e, const struct cmd_option **v)
{
	const struct cmd_option	*o;
	size_t			 n = 0;

	for (o = e->options; o != NULL && o->name != NULL; o++)
		v[n++] = o;
	if (e->flags & CMD_TARGET)
		for (o = cmd_target_options; o->name != NULL; o++)
			v[n++] = o;
	v[n++] = &cmd_help_option;
	if (n > CMD_MAX_OPTIONS)
		fatalx("command %s: too many options", e->name);
	return n;
}

/* Parse argv's options into c; returns 0, or -1 on a bad one. */
static int
cmd_parse(struct cmd *c, int argc, char **argv)
{
	const struct cmd_option	*opt[CMD_MAX_OPTIONS];
	struct option		 lo[CMD_MAX_OPTIONS + 1];
	char			 so[CMD_MAX_OPTIONS * 2 + 1], *p = so;
	size_t			 n, i;
	int			 ch;

	n = cmd_options(c->entry, opt);
	memset(lo, 0, sizeof lo);
	/* A command line after the options is left as it is. */
	if (c->entry->flags & CMD_COMMAND)
		*p++ = '+';
	for (i = 0; i < n; i++) {
		lo[i].name = opt[i]->name;
		lo[i].has_arg = opt[i]->arg ? required_argument : no_argument;
		lo[i].val = 256 + (int)i;
		if (opt[i]->letter != 0) {
			*p++ = (char)opt[i]->letter;
			if (opt[i]->arg)
				*p++ = ':';
		}
	}
	*p = '\0';
	c->values = xcalloc((size_t)argc + 1, sizeof *c->values);
	/* 0 makes glibc's getopt start afresh, options after operands too. */
	optind = 0;
	while ((ch = getopt_long(argc, argv, so, lo, NULL)) != -1) {
		if (ch >= 256)
			i = (size_t)(ch - 256);
		else
			for (i = 0; i < n && opt[i]->letter != ch; i++)
				;
		if (ch == '?' || ch == ':' || i == n)
			return -1;
		c->values[c->nvalues].option = opt[i];
		c->values[c->nvalues++].value = opt[i]->arg ? optarg : NULL;
	}
	c->argc = argc - optind;
	c->argv = argv + optind;
	return 0;
}

/*
 * Run a command: argv[0] is its name, the rest its options and operands;
 * verbose counts the -v given before it.  Returns the exit status.
 */
int
cmd_exec(const struct cmd_entry *e, int argc, char **argv, int verbose)
{
	struct cmd	c;
	int		rc;

	memset(&c, 0, sizeof c);
	c.entry = e;
	c.verbose = verbose;
	if (cmd_parse(&c, argc, argv) != 0) {
		rc = cmd_usage(&c);
		goto out;
	}
	if (cmd_has(&c, "help")) {
		cmd_usage_line(stdout, e);
		printf("%s\n", e->about);
		rc = 0;
		goto out;
	}
	if (c.argc < e->lower || (e->upper >= 0 && c.argc > e->upper)) {
		rc = cmd_usage(&c);
		goto out;
	}
	if ((e->flags & CMD_ATTACH) && cmd_attach(&c) != 0) {
		rc = 1;
		goto out;
	}
	rc = e->exec(&c);
out:
	if (c.attached)
		client_close(&c.client);
	free(c.values);
	return rc;
}

/* How many times option name was given. */
int
cmd_has(struct cmd *c, const char *name)
{
	size_t	i;
	int	n = 0;

	for (i = 0; i < c->nvalues; i++)
		if (strcmp(c->values[i].option->name, name) == 0)
			n++;
	return n;
}

/* The argument option name was given last, or NULL. */
const char *
cmd_get(struct cmd *c, const char *name)
{
	const char	*v = NULL;
	size_t		 i;

	for (i = 0; i < c->nvalues; i++)
		if (strcmp(c->values[i].option->name, name) == 0)
			v = c->values[i].value;
	return v;
}

/*
 * The arguments of a repeated option in order: start with *i = 0; NULL
 * after the last.
 */
const char *
cmd_next(struct cmd *c, const char *name, size_t *i)
{
	while (*i < c->nvalues) {
		if (strcmp(c->values[(*i)++].option->name, name) == 0)
			return c->values[*i - 1].value;
	}
	return NULL;
}

/*
 * Connect to the running corral the command means (-S PATH, --run ID,
 * $CORRAL_CONTROL, or the only one).  Returns 0, or -1 after saying why.
 */
int
cmd_attach(struct cmd *c)
{
	char	name[64];

	snprintf(name, sizeof name, "corral-%s", c->entry->name);
	if (client_attach(&c->client, cmd_get(c, "control"), cmd_get(c, "run"),
	    name) != 0)
		return -1;
	c->attached = 1;
	return 0;
}

/*
 * Call method (params stolen) on the attached corral.  Returns its
 * result, or NULL after saying what went wrong on stderr.
 */
json_t *
cmd_call(struct cmd *c, const char *method, json_t *params)
{
	json_t	*res, *e;
	char	 err[512];

	if ((res = client_call(&c->client, method, params, 10000, &e)) !=
	    NULL)
		return res;
	client_error_text(e, err, sizeof err);
	fprintf(stderr, "corral: %s: %s\n", c->entry->name, err);
	json_decref(e);
	return NULL;
}

/*
 * Print a result as one line of JSON (--json), as the commands that read
 * a running corral do: escaped by jansson, compact, one line.
 */
void
cmd_print_json(const json_t *v)
{
	char	*s;

	if ((s = jsonw_dumps(v, CORRAL_JSON_FLAGS)) == NULL) {
		fprintf(stderr, "corral: out of memory writing JSON\n");
		return;
	}
	printf("%s\n", s);
	free(s);
}

/* Print a word of a synopsis as mdoc: a flag, an argument or a literal. */
static void
cmd_mdoc_word(FILE *f, const char *s, size_t n)
{
	const char	*eq;
	size_t		 i;

	if ((n == 3 && memcmp(s, "...", 3) == 0) || (n == 1 && *s == '|')) {
		fprintf(f, "%.*s", (int)n, s);
		return;
	}
	if (n > 1 && s[0] == '-') {
		fprintf(f, "Fl %.*s", (int)n - 1, s + 1);
		return;
	}
	if ((eq = memchr(s, '=', n)) != NULL) {
		cmd_mdoc_word(f, s, (size_t)(eq - s));
		fprintf(f, " Ns = Ns ");
		cmd_mdoc_word(f, eq + 1, n - (size_t)(eq - s) - 1);
		return;
	}
	for (i = 0; i < n && !islower((unsigned char)s[i]); i++)
		;
	if (i < n) {
		fprintf(f, "Cm %.*s", (int)n, s);
		return;
	}
	fprintf(f, "Ar ");
	for (i = 0; i < n; i++)
		fputc(tolower((unsigned char)s[i]), f);
}

/*
 * Print a synopsis as the manual's mdoc: .Nm, .Cm NAME (when name is not
 * NULL), then a line per top-level element, [ ] as .Op (Oo Oc inside).
 */
void
cmd_mdoc(FILE *f, const char *name, const char *args)
{
	struct cmd_token	 tok[CMD_MAX_TOKENS];
	const char		*s, *bar;
	size_t			 n, i;
	int			 open = 0;

	fprintf(f, ".Nm\n");
	if (name != NULL)
		fprintf(f, ".Cm %s\n", name);
	n = cmd_tokens(args, tok, CMD_MAX_TOKENS);
	for (i = 0; i < n; i++) {
		if (tok[i].element) {
			if (open)
				fprintf(f, "\n");
			open = 1;
			if (*tok[i].s == '[') {
				fprintf(f, ".Op");
				continue;
			}
			fprintf(f, ".");
		} else if (*tok[i].s == ']' && tok[i].depth == 1)
			continue;
		else
			fprintf(f, " ");
		if (*tok[i].s == '[' || *tok[i].s == ']') {
			fprintf(f, "%s", *tok[i].s == '[' ? "Oo" : "Oc");
			continue;
		}
		/* json|text: each word with its own macro. */
		for (s = tok[i].s; tok[i].n > 1 && (bar = memchr(s, '|',
		    (size_t)(tok[i].s + tok[i].n - s))) != NULL; s = bar + 1) {
			cmd_mdoc_word(f, s, (size_t)(bar - s));
			fprintf(f, " | ");
		}
		cmd_mdoc_word(f, s, (size_t)(tok[i].s + tok[i].n - s));
	}
	if (open)
		fprintf(f, "\n");
}

/* The manual's SYNOPSIS: the global form, then each command's. */
int
cmd_mdoc_synopsis(FILE *f)
{
	const struct cmd_entry *const	*e;
	char				 syn[1024];

	cmd_mdoc(f, NULL, cmd_global_args);
	for (e = cmd_entries; *e != NULL; e++) {
		if (cmd_synopsis(*e, syn, sizeof syn) != 0)
			return -1;
		cmd_mdoc(f, (*e)->name, syn + strlen((*e)->name));
	}
	return 0;
}
