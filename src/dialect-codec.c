/*
 * The dialects whose lines a codec translates (codec.c): the
 * collaboration bus (protocol: bus) and AgentMessage (protocol:
 * agentmessage), docs/dialects.md.  A line the agent writes becomes one
 * of corral's lines, which is then read as multiagent-1.0 reads any
 * line, so it gets the same checks, limits and notices; a line corral
 * writes to the agent is translated, or not written at all when the
 * agent's dialect has nothing for it.  A message the agent delivers
 * again is dropped (DF_REDELIVERY).
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "dialect-int.h"

/* One line of the agent: its codec's line, read as multiagent-1.0. */
static void
dialect_codec_decode(struct agent *a, void *state, struct dialect_frame *f,
    const char *line, size_t len)
{
	struct codec_error	 err;
	char			*made;
	size_t			 mlen;
	int			 rc;

	rc = codec_decode_line(state, line, len, &made, &mlen, &err);
	if (rc == 1) {
		/* Not JSON, or a JSON-RPC frame: read as it is. */
		dialect_multiagent_decode(a, state, f, line, len);
	} else if (rc < 0 || rc == CODEC_REDELIVERY) {
		f->line = line;
		f->len = len;
		(void)jscan_run(f->js, line, len);	/* the tape of the line */
		f->type = rc < 0 ? DF_INVALID : DF_REDELIVERY;
		f->err.code = err.code != NULL ? err.code : "invalid_envelope";
		strlcpy(f->err.path, err.path, sizeof f->err.path);
		strlcpy(f->err.msg, err.msg, sizeof f->err.msg);
		strlcpy(f->idbuf, err.parent, sizeof f->idbuf);
		f->id = f->idbuf[0] != '\0' ? f->idbuf : NULL;
	} else {
		f->made = made;
		dialect_multiagent_decode(a, state, f, made, mlen);
	}
}

/* One line for the agent, in its dialect (nothing when it has none). */
static int
dialect_codec_encode(struct agent *a, void *state, const char *line,
    size_t len, enum dialect_kind kind)
{
	char	*s;
	size_t	 n;

	if ((s = codec_encode_line(state, line, len, &n)) != NULL) {
		agent_send(a, s, n);
		free(s);
	}
	return 1;
}

/* A bus agent's codec. */
static void *
dialect_codec_bus(struct agent *a)
{
	return codec_create(&codec_bus_ops, a->id);
}

/* An AgentMessage agent's codec. */
static void *
dialect_codec_agentmessage(struct agent *a)
{
	return codec_create(&codec_agentmessage_ops, a->id);
}

/* Free a codec. */
static void
dialect_codec_free(void *state)
{
	codec_free(state);
}

const struct dialect dialect_bus = {
	.name = "bus",
	.noun = "bus message",
	.decode = dialect_codec_decode,
	.encode = dialect_codec_encode,
	.create = dialect_codec_bus,
	.free = dialect_codec_free,
};

const struct dialect dialect_agentmessage = {
	.name = "agentmessage",
	.noun = "AgentMessage",
	.decode = dialect_codec_decode,
	.encode = dialect_codec_encode,
	.create = dialect_codec_agentmessage,
	.free = dialect_codec_free,
};
