/*
 * ADR-007 as a dialect (docs/protocol.md, "ADR-007 agents"): corral
 * writes an agent of `protocol: adr-007` one input envelope per request,
 * and reads its output envelopes back as the replies adr007.c makes of
 * them.
 *
 * The agent protocol has no ids, so an agent answers its requests in the
 * order they came: the dialect keeps the intent and task of each request
 * it wrote, oldest first, and the reply made of an output envelope
 * answers the agent's oldest outstanding request (it names no parent).
 * Nothing else corral says to agents has a place in the protocol:
 * notices, cancels, child results, messages, progress and JSON-RPC
 * frames (pings) are not sent, and recorded as for any agent.  A line
 * that is not JSON is a bad line, as for any agent; a JSON line that
 * breaks a rule of the output envelope is an invalid one (code
 * invalid_output, its field named), which ends the request it answers.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "dialect-int.h"

#define ADR007_PENDING_MAX	4096	/* requests remembered per agent */

/* A request written to the agent: what its answer's reply repeats. */
struct adr007_req {
	char	*intent;
	char	*task;
};

/* The requests written and not yet answered, oldest first (a ring). */
struct adr007_state {
	struct adr007_req	*q;
	size_t			 head;
	size_t			 n;
	size_t			 cap;
};

static struct adr007_defaults	adr007_dflt;
static char			*adr007_workflow;
static char			*adr007_feature;

static void	 dialect_adr007_decode(struct agent *, void *,
		    struct dialect_frame *, const char *, size_t);
static int	 dialect_adr007_encode(struct agent *, void *, const char *,
		    size_t, enum dialect_kind);
static void	*dialect_adr007_create(struct agent *);
static void	 dialect_adr007_free(void *);

const struct dialect dialect_adr007 = {
	.name = "adr-007",
	.noun = "output envelope",
	.decode = dialect_adr007_decode,
	.encode = dialect_adr007_encode,
	.create = dialect_adr007_create,
	.free = dialect_adr007_free,
};

/*
 * What a request that is no step's tells an ADR-007 agent of its context:
 * the workflow's name and feature id (the supervisor says).
 */
void
dialect_adr007_defaults(const char *workflow, const char *feature_id)
{
	free(adr007_workflow);
	free(adr007_feature);
	adr007_workflow = workflow != NULL ? xstrdup(workflow) : NULL;
	adr007_feature = feature_id != NULL ? xstrdup(feature_id) : NULL;
	adr007_dflt.workflow = adr007_workflow;
	adr007_dflt.feature_id = adr007_feature;
}

/* An agent begins to speak ADR-007: nothing written to it yet. */
static void *
dialect_adr007_create(struct agent *a)
{
	return xcalloc(1, sizeof(struct adr007_state));
}

/* Forget the oldest request remembered. */
static void
dialect_adr007_pop(struct adr007_state *st, struct adr007_req *out)
{
	struct adr007_req	*r = &st->q[st->head];

	*out = *r;
	memset(r, 0, sizeof *r);
	st->head = (st->head + 1) % st->cap;
	st->n--;
}

/* Its state goes with it. */
static void
dialect_adr007_free(void *p)
{
	struct adr007_state	*st = p;
	struct adr007_req	 r;

	while (st->n > 0) {
		dialect_adr007_pop(st, &r);
		free(r.intent);
		free(r.task);
	}
	free(st->q);
	free(st);
}

/* Remember a request written to the agent, with its intent and task. */
static void
dialect_adr007_push(struct adr007_state *st, const char *line, size_t len)
{
	struct adr007_req	*nq, r;
	json_t			*j;
	size_t			 i;

	if (st->n == ADR007_PENDING_MAX) {
		/* Unanswered for ever: forget the oldest. */
		dialect_adr007_pop(st, &r);
		free(r.intent);
		free(r.task);
	}
	if (st->n == st->cap) {
		nq = xcalloc(st->cap ? st->cap * 2 : 8, sizeof *nq);
		for (i = 0; i < st->n; i++)
			nq[i] = st->q[(st->head + i) % st->cap];
		free(st->q);
		st->q = nq;
		st->head = 0;
		st->cap = st->cap ? st->cap * 2 : 8;
	}
	j = json_loadb(line, len, 0, NULL);
	r.intent = xstrdup(json_is_string(json_object_get(j, "intent")) ?
	    json_string_value(json_object_get(j, "intent")) : "execute");
	r.task = xstrdup(json_is_string(json_object_get(j, "task")) ?
	    json_string_value(json_object_get(j, "task")) : "");
	json_decref(j);
	st->q[(st->head + st->n) % st->cap] = r;
	st->n++;
}

/*
 * Write a line for the agent: a request (or a child's task) as its input
 * envelope; anything else is not for an ADR-007 agent, and is dropped.
 */
static int
dialect_adr007_encode(struct agent *a, void *state, const char *line,
    size_t len, enum dialect_kind kind)
{
	char	*in, why[256];
	size_t	 ilen;

	if (kind != DK_REQUEST && kind != DK_TASK) {
		log_debug("agent %s: not sent (the agent protocol has no place "
		    "for it): %.*s", a->id, (int)(len < 120 ? len : 120), line);
		return 1;
	}
	if ((in = adr007_input(line, len, &adr007_dflt, &ilen, why,
	    sizeof why)) == NULL) {
		/*
		 * Every valid envelope makes an input envelope (fuzz_adr007
		 * asserts it), so this is our bug; but the request came from a
		 * peer, so it costs that request alone: not sent, it ends by
		 * the agent's timeout, and the log says why.
		 */
		log_warnx("agent %s: a request could not be written as an "
		    "input envelope (%s); not sent", a->id, why);
		auditlog_event("rejected", a->id, NULL, "code", "not_sent",
		    "path", "", "reason", why, NULL);
		return 1;
	}
	dialect_adr007_push(state, line, len);
	agent_send(a, in, ilen);
	free(in);
	return 1;
}

/*
 * Read one line: an output envelope becomes the reply to the oldest
 * request; a JSON line that breaks a rule is invalid (invalid_output,
 * naming its field); a line that is not JSON is garbage.
 */
static void
dialect_adr007_decode(struct agent *a, void *state, struct dialect_frame *f,
    const char *line, size_t len)
{
	struct adr007_state	*st = state;
	struct adr007_error	 err;
	struct adr007_req	 r = { NULL, NULL };
	char			*made;
	size_t			 mlen;

	f->line = line;
	f->len = len;
	if (jscan_run(f->js, line, len) != 0) {
		f->type = DF_GARBAGE;
		f->err.code = "invalid_json";
		f->err.path[0] = '\0';
		snprintf(f->err.msg, sizeof f->err.msg, "invalid JSON at byte "
		    "%zu: %s", f->js->err_off, f->js->err != NULL ?
		    f->js->err : "syntax error");
		return;
	}
	if (st->n > 0)
		dialect_adr007_pop(st, &r);
	made = adr007_reply(line, len, a->id, r.intent != NULL ? r.intent :
	    "execute", r.task != NULL ? r.task : "", &mlen, &err);
	free(r.intent);
	free(r.task);
	if (made == NULL) {
		f->type = DF_INVALID;
		f->err.code = "invalid_output";
		strlcpy(f->err.path, err.field, sizeof f->err.path);
		strlcpy(f->err.msg, err.msg, sizeof f->err.msg);
		f->id = NULL;
		return;
	}
	f->made = made;
	f->line = made;
	f->len = mlen;
	if (jscan_run(f->js, made, mlen) != 0 ||
	    envelope_check(f->js, made, mlen, &f->env, &f->err) != 0)
		fatalx("agent %s: the reply made of an output envelope is "
		    "invalid: %s", a->id, f->err.msg);
	f->type = DF_ENVELOPE;
}
