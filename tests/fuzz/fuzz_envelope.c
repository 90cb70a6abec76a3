/*
 * Fuzz envelope validation and the builders: whatever jscan accepts goes
 * through envelope_check; for valid envelopes, every envelope corral
 * builds from it (filled, reflected, marked, next actions) must be valid
 * JSON and a valid envelope again.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* Abort unless s is a valid envelope. */
static void
fuzz_must_be_envelope(struct jscan *js, const char *s, size_t len)
{
	struct env		env;
	struct env_error	err;

	if (jscan_run(js, s, len) != 0)
		abort();
	if (envelope_check(js, s, len, &env, &err) != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct jscan	*js;
	struct env		 env;
	struct env_error	 err;
	const char		*s = (const char *)data;
	char			*out, *copy;
	size_t			 len;
	int			 e, n = 0;

	if (js == NULL)
		js = jscan_create(4);
	if (size > 1 << 16)
		return 0;
	if (jscan_run(js, s, size) != 0 ||
	    envelope_check(js, s, size, &env, &err) != 0) {
		jscan_trim(js);
		return 0;
	}
	copy = xmemdup0(s, size);

	if ((out = envelope_fill(js, copy, size, &env, "fz-1", "fz-0",
	    &len)) != NULL) {
		fuzz_must_be_envelope(js, out, len);
		free(out);
	}
	jscan_run(js, copy, size);
	envelope_check(js, copy, size, &env, &err);
	out = envelope_reflect(js, copy, size, &env, "fz-2", "fz-\"1\\",
	    "plan", 1, &len);
	fuzz_must_be_envelope(js, out, len);
	free(out);

	jscan_run(js, copy, size);
	envelope_check(js, copy, size, &env, &err);
	out = envelope_mark(js, copy, size, "{\"kind\":\"notice\"}", &len);
	fuzz_must_be_envelope(js, out, len);
	free(out);

	jscan_run(js, copy, size);
	envelope_check(js, copy, size, &env, &err);
	if (env.next_actions != -1) {
		struct jscan *js2 = jscan_create(4);
		for (e = jscan_first(js, env.next_actions); e != -1 && n < 8;
		    e = jscan_next(js, env.next_actions, e), n++) {
			out = envelope_action(js, copy, e, "fz-3", "fz-1",
			    "\"ctx\"", 5, &len);
			fuzz_must_be_envelope(js2, out, len);
			free(out);
		}
		jscan_free(js2);
	}
	free(copy);
	jscan_trim(js);
	return 0;
}
