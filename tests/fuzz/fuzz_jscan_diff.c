/*
 * Differential fuzzing of corral's JSON scanner against jansson: jscan
 * must accept exactly what json_loadb(..., JSON_REJECT_DUPLICATES) accepts.
 *
 * Inputs holding a NUL byte are skipped: jansson 2.14 loses a NUL that
 * follows a character it had to put back (so "[1\0]" loads), while corral
 * never scans such a line at all: the framer rejects any line with a NUL.
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct jscan	*js;
	json_error_t		 e;
	json_t			*j;
	int			 ours, theirs;

	if (js == NULL)
		js = jscan_create(4);
	if (size > 1 << 16 || memchr(data, '\0', size) != NULL)
		return 0;
	ours = jscan_run(js, (const char *)data, size) == 0;
	j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &e);
	theirs = j != NULL;
	if (j != NULL)
		json_decref(j);
	if (ours != theirs)
		abort();
	jscan_trim(js);
	return 0;
}
