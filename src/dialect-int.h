/*
 * What a dialect implements, and the table of them: shared by the dialect
 * module's files (dialect.c, dialect-*.c).  Nothing else includes this
 * file: the rest of corral sees dialects through corral.h.
 *
 * To add a dialect: write dialect-NAME.c with its struct dialect, declare
 * it below, add a row to dialect-table.c and the file to CMakeLists.txt.
 * docs/architecture.md ("Dialects") says what each member must do.
 */

#ifndef DIALECT_INT_H
#define DIALECT_INT_H

/* A dialect: how corral reads an agent's lines and writes to it. */
struct dialect {
	const char	*name;		/* as protocol: names it */
	const char	*noun;		/* what its messages are called */
	/*
	 * Make one line from the agent (a complete line, without its
	 * newline) one of corral's frames: fill f's type, line and len, and
	 * what the type needs (dialect_frame in corral.h).  f->js is a
	 * scanner for the line's tape; a line the decoder makes goes in
	 * f->made, freed once the frame is handled.
	 */
	void		(*decode)(struct agent *, void *, struct dialect_frame *,
			    const char *, size_t);
	/*
	 * Write a line for the agent its own way: an envelope of a kind
	 * (DK_REQUEST, ...: its corral member says more), or a JSON-RPC
	 * frame (DK_RPC).  Returns nonzero when it wrote it, 0 to have the
	 * bytes written as they are.  NULL: always as they are.
	 */
	int		(*encode)(struct agent *, void *, const char *, size_t,
			    enum dialect_kind);
	/* Per-agent state, made when the agent starts speaking it. */
	void		*(*create)(struct agent *);
	void		(*free)(void *);
};

/* dialect-table.c */
extern const struct dialect *const dialect_table[];

/* dialect.c: multiagent-1.0, the default */
extern const struct dialect dialect_multiagent;
void	 dialect_multiagent_decode(struct agent *, void *,
	    struct dialect_frame *, const char *, size_t);

/* dialect-map.c */
extern const struct dialect dialect_map;

/* dialect-codec.c: the dialects a codec translates (codec.c) */
extern const struct dialect dialect_bus;
extern const struct dialect dialect_agentmessage;

/* dialect-adr007.c */
extern const struct dialect dialect_adr007;

#endif
