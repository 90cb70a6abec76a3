/*
 * Fuzz corral resume's reading of an audit log (resume.c): whatever the
 * file holds (lines that are not JSON, members of the wrong type, runs
 * that claim to resume others, renamed ids that point anywhere, a torn
 * last line), the reader never crashes, says why when it refuses, and
 * counts no path sent a negative number of times, and remembers only
 * sessions an adapter can take (non-empty strings under 256 bytes).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char	 path[] = "fuzz-resume.ndjson";	/* in cwd */
	static FILE		*devnull;
	struct resume_log	 rl;
	const char		*k;
	json_t			*v;
	char			 why[1200];
	FILE			*f;

	if (devnull == NULL && (devnull = fopen("/dev/null", "w")) == NULL)
		abort();
	if ((f = fopen(path, "w")) == NULL)
		abort();
	if (size > 0 && fwrite(data, 1, size, f) != size)
		abort();
	fclose(f);
	why[0] = '\0';
	if (resume_read(&rl, path, devnull, why, sizeof why) != 0 &&
	    why[0] == '\0')
		abort();
	json_object_foreach(rl.paths, k, v)
		if (json_integer_value(json_object_get(v, "sent")) < 0)
			abort();
	json_object_foreach(rl.sessions, k, v)
		if (!json_is_string(v) || json_string_length(v) == 0 ||
		    json_string_length(v) >= 256)
			abort();
	resume_free(&rl);
	return 0;
}
