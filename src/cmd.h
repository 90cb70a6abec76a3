/*
 * The commands' own header, shared by cmd.c (the table, the option parser,
 * the usage), the command files cmd-*.c and main.c.  Nothing else
 * includes it.
 *
 * A command is one struct cmd_entry: its name, its synopsis, one line
 * about it, its options and its handler, as tmux's cmd_entry.  The table
 * in cmd.c lists them; --help, each command's usage and the synopsis of
 * docs/corral.1 all come from it (tests/unit/cmd.c holds the manual to
 * it).
 */

#ifndef CMD_H
#define CMD_H

#define CMD_TARGET	0x1	/* -S PATH, --run ID: a running corral */
#define CMD_ATTACH	0x2	/* connected to it before the handler runs */
#define CMD_COMMAND	0x4	/* its operands are a command and its options */

/* One option: --name, maybe -x too, with or without an argument. */
struct cmd_option {
	const char	*name;
	int		 letter;	/* 0: none */
	int		 arg;		/* takes an argument */
};

struct cmd;

/* A command. */
struct cmd_entry {
	const char		*name;
	/*
	 * The synopsis after the name, CMD_TARGET's options left out:
	 * flags (-x, --name), ARGS in capitals, literal words in lower
	 * case, alternatives with |, optional parts in [ ], repeats with
	 * "...".  cmd_mdoc turns it into the manual's mdoc.
	 */
	const char		*args;
	const char		*about;		/* one line for --help */
	const struct cmd_option	*options;	/* ends with a NULL name */
	int			 lower;		/* operands, at least */
	int			 upper;		/* at most; -1: any number */
	int			 flags;		/* CMD_* */
	int			(*exec)(struct cmd *);
};

/* An option given on the command line. */
struct cmd_value {
	const struct cmd_option	*option;
	const char		*value;		/* NULL: no argument */
};

/* A command line, parsed. */
struct cmd {
	const struct cmd_entry	*entry;
	int			 argc;		/* the operands */
	char			**argv;
	struct cmd_value	*values;	/* in command-line order */
	size_t			 nvalues;
	int			 verbose;	/* -v before the command */
	int			 attached;	/* client is connected */
	struct client		 client;
};

extern const struct cmd_entry	 cmd_run_entry;
extern const struct cmd_entry	 cmd_serve_entry;
extern const struct cmd_entry	 cmd_resume_entry;
extern const struct cmd_entry	 cmd_check_entry;
extern const struct cmd_entry	 cmd_new_entry;
extern const struct cmd_entry	 cmd_tree_entry;
extern const struct cmd_entry	 cmd_replay_entry;
extern const struct cmd_entry	 cmd_ps_entry;
extern const struct cmd_entry	 cmd_events_entry;
extern const struct cmd_entry	 cmd_send_entry;
extern const struct cmd_entry	 cmd_stop_entry;
extern const struct cmd_entry	 cmd_cancel_entry;
extern const struct cmd_entry	 cmd_answer_entry;
extern const struct cmd_entry	 cmd_top_entry;
extern const struct cmd_entry	 cmd_metrics_entry;
extern const struct cmd_entry	 cmd_tasks_entry;
extern const struct cmd_entry	 cmd_mcp_entry;
extern const struct cmd_entry	 cmd_host_entry;

/* cmd.c */
extern const char	 cmd_global_args[];
const struct cmd_entry *const *cmd_table(void);
int	 cmd_usage(struct cmd *);
int	 cmd_has(struct cmd *, const char *);
const char *cmd_get(struct cmd *, const char *);
const char *cmd_next(struct cmd *, const char *, size_t *);
int	 cmd_attach(struct cmd *);
json_t	*cmd_call(struct cmd *, const char *, json_t *);
void	 cmd_print_json(const json_t *);
int	 cmd_synopsis(const struct cmd_entry *, char *, size_t);
void	 cmd_mdoc(FILE *, const char *, const char *);
int	 cmd_mdoc_synopsis(FILE *);

/* cmd-check.c */
struct workflow *cmd_check_load(const char *, int);

#endif
