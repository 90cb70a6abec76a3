/*
 * Fuzz the ADR-007 codec: whatever an agent writes, adr007_reply either
 * refuses it naming a field, or makes a reply that is a valid envelope
 * which reads back (adr007_read) as what the agent said; any envelope
 * read as an output envelope gives one that has all five members; any
 * valid envelope as a request gives an input envelope with its four
 * (never none: the dialect relies on it).
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* Abort unless o is an output envelope: its five members, typed. */
static void
fuzz_must_be_output(json_t *o)
{
	if (!json_is_boolean(json_object_get(o, "success")) ||
	    !json_is_string(json_object_get(o, "summary")) ||
	    !json_is_array(json_object_get(o, "artifacts")) ||
	    !json_is_array(json_object_get(o, "notes")) ||
	    !json_is_string(json_object_get(o, "recommendation")))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct adr007_defaults d = { "fuzz", NULL };
	static struct jscan		*js;
	struct adr007_error		 err;
	struct env			 env;
	struct env_error		 eerr;
	const char			*s = (const char *)data;
	json_t				*o, *in;
	char				*r, why[256];
	size_t				 len;

	if (js == NULL)
		js = jscan_create(4);
	if (size > 65536)
		return 0;
	if ((r = adr007_reply(s, size, "agent", "execute", "t", &len,
	    &err)) != NULL) {
		if (jscan_run(js, r, len) != 0 ||
		    envelope_check(js, r, len, &env, &eerr) != 0)
			abort();
		if ((o = adr007_read(r, len, &err)) == NULL)
			abort();
		fuzz_must_be_output(o);
		json_decref(o);
		free(r);
	} else if (err.msg[0] == '\0')
		abort();	/* a refusal says why */
	if (jscan_run(js, s, size) != 0 ||
	    envelope_check(js, s, size, &env, &eerr) != 0)
		return 0;
	if ((o = adr007_read(s, size, &err)) != NULL) {
		fuzz_must_be_output(o);
		json_decref(o);
	}
	/* Every valid envelope is a request an ADR-007 agent can be given. */
	if ((r = adr007_input(s, size, &d, &len, why, sizeof why)) == NULL)
		abort();
	if ((in = json_loadb(r, len, 0, NULL)) == NULL ||
	    !json_is_object(json_object_get(in, "context")) ||
	    !json_is_object(json_object_get(in, "paths")) ||
	    !json_is_object(json_object_get(in, "task")) ||
	    !json_is_array(json_object_get(in, "prior_context")))
		abort();
	json_decref(in);
	free(r);
	return 0;
}
