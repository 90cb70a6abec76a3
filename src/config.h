/*
 * The workflow loader's internals, shared by config-yaml.c (YAML to a tree
 * of nodes), config.c (the typed readers, the walk over the key table,
 * loading, printing, checking) and config-table.c (the keys).  Nothing
 * else includes this file: the rest of corral sees struct workflow and the
 * functions in corral.h.
 */

#ifndef CONFIG_H
#define CONFIG_H

/* A node of the YAML tree, with where the file has it. */
enum config_node_type {
	CONFIG_SCALAR,
	CONFIG_MAPPING,
	CONFIG_SEQUENCE
};

struct config_node {
	enum config_node_type	  type;
	int			  line;		/* 1-based */
	int			  column;
	int			  quoted;	/* never a number or bool */
	int			  flow;		/* opened with [ or { */
	char			 *str;
	size_t			  len;
	struct config_node	**kids;		/* maps: key, value, ... */
	size_t			  nkids;
	size_t			  cap;
};

/* One load in progress. */
struct config_reader {
	struct config_error	*err;		/* the first error only */
	struct workflow		*wf;
	struct agent_conf	 defaults;	/* what defaults: gives */
	int			 in_defaults;	/* reading defaults: now */
};

/* The kinds of value a key takes (docs/workflow.md, "value types"). */
enum config_type {
	CONFIG_STRING,
	CONFIG_BOOL,
	CONFIG_INTEGER,		/* unsigned int, in [min, max] */
	CONFIG_NUMBER,		/* double, in [min, max] */
	CONFIG_DURATION,	/* double, seconds */
	CONFIG_SIZE,		/* size_t, in [min, max] when max > 0 */
	CONFIG_LIST,		/* char ** and its count */
	CONFIG_ENUM,		/* int, the index of one of choices */
	CONFIG_MAP		/* the keys named "this.key" below it */
};

/* Where a key is kept. */
#define CONFIG_TOP	0	/* struct workflow */
#define CONFIG_AGENT	1	/* struct agent_conf: agents: and defaults: */
#define CONFIG_STEP	2	/* struct step_conf: an entry of steps: */

struct config_key;
typedef int (*config_read_cb)(struct config_reader *,
    const struct config_key *, void *, const struct config_node *,
    const char *);
typedef void (*config_print_cb)(FILE *, const struct config_key *,
    const void *, int);

/*
 * One key of the workflow file.  config-table.c declares every key once;
 * reading, defaults, printing and docs/workflow.md's key tables all come
 * from that one declaration.
 */
struct config_key {
	const char		*name;		/* "restart.max" in its scope */
	int			 scope;
	enum config_type	 type;
	int			 flags;
#define CONFIG_FLOW	 0x01	/* printed on one line: {a: 1, b: 2} */
#define CONFIG_OMIT	 0x02	/* printed only when not zero or empty */
#define CONFIG_NONE	 0x04	/* a zero duration is printed as none */
#define CONFIG_OFF	 0x08	/* printed as off when its shorthand is 0 */
#define CONFIG_HIDE	 0x10	/* never printed */
#define CONFIG_LATE	 0x20	/* read after its mapping's other keys */
#define CONFIG_REQUIRED	 0x40	/* its mapping must have it */
#define CONFIG_NODEFAULT 0x80	/* not allowed in defaults: */
#define CONFIG_STEPS	 0x100	/* printed only in a workflow of steps */
	size_t			 offset;	/* of the value */
	size_t			 count;		/* CONFIG_LIST: of its length */
	double			 min;
	double			 max;
	const char		*dflt;		/* as a file writes it */
	const char *const	*choices;	/* CONFIG_ENUM, NULL-terminated */
	const char		*shorthand;	/* a scalar sets this member */
	const char		*typename;	/* for the docs, when the type
						   alone says too little */
	int			 arg;		/* for read: the rlimit */
	config_read_cb		 read;		/* instead of the type's */
	config_read_cb		 after;		/* checks once it is read */
	config_print_cb		 print;		/* instead of the type's */
	const char		*doc;
};

/* config-table.c */
extern const struct config_key	config_table[];
extern const size_t		config_table_size;

/* config-yaml.c */
struct config_node *config_yaml_parse(struct config_reader *, const char *,
	    size_t);
void	 config_yaml_free(struct config_node *);
ssize_t	 config_yaml_index(const struct config_node *, const char *);
struct config_node *config_yaml_get(const struct config_node *, const char *);
json_t	*config_yaml_json(const struct config_node *);

/* config-steps.c */
int	 config_steps_read(struct config_reader *, const struct config_key *,
	    void *, const struct config_node *, const char *);
int	 config_steps_read_params(struct config_reader *,
	    const struct config_key *, void *, const struct config_node *,
	    const char *);
int	 config_steps_read_paths(struct config_reader *,
	    const struct config_key *, void *, const struct config_node *,
	    const char *);
void	 config_steps_print(FILE *, const struct config_key *, const void *,
	    int);
void	 config_steps_print_paths(FILE *, const struct config_key *,
	    const void *, int);
void	 config_steps_print_params(FILE *, const struct config_key *,
	    const void *, int);
void	 config_steps_free(struct workflow *);
extern const char *const config_steps_false[];

/* config.c */
int	 config_err(struct config_reader *, const struct config_node *,
	    const char *, ...) __attribute__((format(printf, 3, 4)));
int	 config_map_check(struct config_reader *, const struct config_node *,
	    const char *);
int	 config_read_str(struct config_reader *, const struct config_node *,
	    const char *, char **);
int	 config_read_uint(struct config_reader *, const struct config_node *,
	    const char *, unsigned int, unsigned int, unsigned int *);
int	 config_read_duration(struct config_reader *,
	    const struct config_node *, const char *, double *);
int	 config_read_size(struct config_reader *, const struct config_node *,
	    const char *, size_t, size_t, size_t *);
void	 config_list_free(char **, size_t);
int	 config_read_list(struct config_reader *, const struct config_node *,
	    const char *, char ***, size_t *);
int	 config_read_value(struct config_reader *, const struct config_key *,
	    void *, const struct config_node *, const char *);
int	 config_read_map(struct config_reader *, int, void *, const char *,
	    const struct config_node *, const char *);
void	 config_fill(int, void *);
const struct config_key *config_key_find(int, const char *, const char *);
const char *config_key_leaf(const struct config_key *);
void	 config_print_str(FILE *, const char *);
void	 config_print_map(FILE *, int, const void *, const char *, int);
void	 config_agent_copy(struct agent_conf *, const struct agent_conf *);
void	 config_agent_free(struct agent_conf *);

#endif
