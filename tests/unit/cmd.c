/*
 * Unit tests of the command table (src/cmd.c).
 *
 * Each command's synopsis and its options say the same thing: every option
 * is shown, every flag shown is an option, and a flag takes an argument
 * exactly when the synopsis gives it one.  The manual's SYNOPSIS is what
 * the table makes of it, and the manual describes every command; the
 * options parse as the handlers read them.
 */

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "corral.h"
#include "cmd.h"

/*
 * Where the flag (-x or --name) stands as a word in syn: the text after
 * it, or NULL.
 */
static const char *
find_flag(const char *syn, const char *flag)
{
	const char	*p = syn;
	size_t		 n = strlen(flag);

	while ((p = strstr(p, flag)) != NULL) {
		if ((p == syn || strchr(" [|", p[-1]) != NULL) &&
		    strchr(" ]|", p[n]) != NULL)
			return p + n;
		p += n;
	}
	return NULL;
}

/* Does the word after a flag (at p) make it an option with an argument? */
static int
flag_has_arg(const char *p)
{
	while (*p == ' ')
		p++;
	return *p != '\0' && *p != ']' && *p != '[' && *p != '|' && *p != '-';
}

/*
 * Every option of every command is in its synopsis, with an argument when
 * it takes one; every flag in the synopsis is an option of the command.
 */
static void
test_options_match_synopsis(void **state)
{
	const struct cmd_entry *const	*e;
	const struct cmd_option		*o;
	const char			*p, *at;
	char				 syn[1024], name[64], flag[64];
	int				 bad = 0, found;
	size_t				 n;

	(void)state;
	for (e = cmd_table(); *e != NULL; e++) {
		assert_int_equal(cmd_synopsis(*e, syn, sizeof syn), 0);
		for (o = (*e)->options; o->name != NULL; o++) {
			snprintf(flag, sizeof flag, "--%s", o->name);
			at = find_flag(syn, flag);
			if (at == NULL && o->letter != 0) {
				snprintf(flag, sizeof flag, "-%c", o->letter);
				at = find_flag(syn, flag);
			}
			if (at == NULL) {
				print_message("%s: --%s is not in the synopsis "
				    "'%s'\n", (*e)->name, o->name, syn);
				bad = 1;
			} else if (flag_has_arg(at) != o->arg) {
				print_message("%s: --%s %s an argument, the "
				    "synopsis says otherwise\n", (*e)->name,
				    o->name, o->arg ? "takes" : "takes no");
				bad = 1;
			}
		}
		/* The other way: each flag shown is an option. */
		for (p = syn; (p = strchr(p, '-')) != NULL; p += n) {
			n = 1;
			if (p > syn && strchr(" [|", p[-1]) == NULL)
				continue;
			n = strcspn(p, " []|");
			snprintf(name, sizeof name, "%.*s", (int)n, p);
			found = ((*e)->flags & CMD_TARGET) &&
			    (strcmp(name, "--run") == 0 ||
			    strcmp(name, "-S") == 0);
			for (o = (*e)->options; !found && o->name != NULL; o++)
				found = (name[1] == '-' && strcmp(name + 2,
				    o->name) == 0) || (name[1] != '-' &&
				    name[2] == '\0' && name[1] == o->letter);
			if (!found) {
				print_message("%s: %s is in the synopsis but "
				    "is no option\n", (*e)->name, name);
				bad = 1;
			}
		}
	}
	assert_int_equal(bad, 0);
}

/* Read docs/corral.1, or skip the test when run outside ctest. */
static char *
manual(void)
{
	const char	*data = getenv("CORRAL_TEST_DATA");
	char		 path[1024], *buf;
	FILE		*f;
	size_t		 n;

	if (data == NULL)
		skip();
	snprintf(path, sizeof path, "%s/../docs/corral.1", data);
	if ((f = fopen(path, "r")) == NULL)
		fail_msg("%s: %s", path, strerror(errno));
	buf = malloc(1 << 20);
	assert_non_null(buf);
	n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* The manual's SYNOPSIS is the table's, line for line. */
static void
test_manual_synopsis(void **state)
{
	char	*man = manual(), *want, *start, *end, *p, *nl;
	size_t	 len;
	FILE	*f;

	(void)state;
	f = open_memstream(&want, &len);
	assert_int_equal(cmd_mdoc_synopsis(f), 0);
	fclose(f);
	start = strstr(man, "\n.Sh SYNOPSIS\n");
	end = strstr(man, "\n.Sh DESCRIPTION\n");
	assert_non_null(start);
	assert_non_null(end);
	start += strlen("\n.Sh SYNOPSIS\n");
	end++;
	if ((size_t)(end - start) != len || memcmp(start, want, len) != 0) {
		print_message("docs/corral.1's SYNOPSIS differs from the "
		    "command table; it should read:\n");
		for (p = want; *p != '\0'; p = nl + 1) {
			nl = strchr(p, '\n');
			print_message("%.*s\n", (int)(nl - p), p);
		}
		fail();
	}
	free(want);
	free(man);
}

/* The manual describes every command, and no other. */
static void
test_manual_commands(void **state)
{
	const struct cmd_entry *const	*e;
	char				*man = manual(), *p, word[64];
	int				 bad = 0;
	size_t				 n;

	(void)state;
	for (e = cmd_table(); *e != NULL; e++) {
		snprintf(word, sizeof word, "\n.It Cm %s", (*e)->name);
		if ((p = strstr(man, word)) == NULL ||
		    strchr(" \n", p[strlen(word)]) == NULL) {
			print_message("docs/corral.1 does not describe %s (no "
			    "'.It Cm %s')\n", (*e)->name, (*e)->name);
			bad = 1;
		}
	}
	for (p = man; (p = strstr(p, "\n.It Cm ")) != NULL; p += 8) {
		n = strcspn(p + 8, " \n");
		snprintf(word, sizeof word, "%.*s", (int)n, p + 8);
		if (cmd_find(word) == NULL) {
			print_message("docs/corral.1 describes %s, which is no "
			    "command\n", word);
			bad = 1;
		}
	}
	free(man);
	assert_int_equal(bad, 0);
}

/* The mdoc of a synopsis: flags, arguments, literals, alternatives. */
static void
test_mdoc(void **state)
{
	char	*out;
	size_t	 len;
	FILE	*f;

	(void)state;
	f = open_memstream(&out, &len);
	cmd_mdoc(f, "x", "FILE --goal TEXT [-S PATH | --run ID] "
	    "[--param KEY=VALUE ...] [--output json|text] AGENT|INTENT "
	    "[-p [--deep]] REQUEST ...");
	fclose(f);
	assert_string_equal(out, ".Nm\n.Cm x\n.Ar file\n.Fl -goal Ar text\n"
	    ".Op Fl S Ar path | Fl -run Ar id\n"
	    ".Op Fl -param Ar key Ns = Ns Ar value ...\n"
	    ".Op Fl -output Cm json | Cm text\n"
	    ".Ar agent | Ar intent\n"
	    ".Op Fl p Oo Fl -deep Oc\n"
	    ".Ar request ...\n");
	free(out);
}

static int	seen_rc;
static char	seen[512];

/* A handler that writes down what it was given. */
static int
record(struct cmd *c)
{
	const char	*v;
	size_t		 i = 0;
	int		 n;

	n = snprintf(seen, sizeof seen, "argc=%d force=%d reason=%s", c->argc,
	    cmd_has(c, "force"), cmd_get(c, "reason") != NULL ?
	    cmd_get(c, "reason") : "-");
	while ((v = cmd_next(c, "tag", &i)) != NULL)
		n += snprintf(seen + n, sizeof seen - (size_t)n, " tag=%s", v);
	return seen_rc;
}

/* Options parse in any order, repeat, and count operands. */
static void
test_parse(void **state)
{
	static const struct cmd_option opts[] = {
		{ "force", 'f', 0 },
		{ "reason", 0, 1 },
		{ "tag", 't', 1 },
		{ NULL, 0, 0 }
	};
	static const struct cmd_entry e = {
		.name = "try",
		.args = "[-f | --force] [--reason TEXT] [-t TAG ...] X [Y]",
		.about = "a test",
		.options = opts,
		.lower = 1,
		.upper = 2,
		.exec = record,
	};
	char	*a1[] = { "try", "one", "--reason", "why", "-f", "-t", "a",
		    "--tag=b", NULL };
	char	*a2[] = { "try", NULL };
	char	*a3[] = { "try", "--nope", "x", NULL };
	char	*a4[] = { "try", "a", "b", "c", NULL };
	FILE	*saved = stderr;

	(void)state;
	seen_rc = 7;
	assert_int_equal(cmd_exec(&e, 8, a1, 0), 7);
	assert_string_equal(seen, "argc=1 force=1 reason=why tag=a tag=b");
	/* Too few operands, an unknown option, too many: usage, 2. */
	seen[0] = '\0';
	stderr = fopen("/dev/null", "w");
	assert_int_equal(cmd_exec(&e, 1, a2, 0), EXIT_USAGE);
	assert_int_equal(cmd_exec(&e, 3, a3, 0), EXIT_USAGE);
	assert_int_equal(cmd_exec(&e, 4, a4, 0), EXIT_USAGE);
	fclose(stderr);
	stderr = saved;
	assert_string_equal(seen, "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_options_match_synopsis),
		cmocka_unit_test(test_manual_synopsis),
		cmocka_unit_test(test_manual_commands),
		cmocka_unit_test(test_mdoc),
		cmocka_unit_test(test_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
