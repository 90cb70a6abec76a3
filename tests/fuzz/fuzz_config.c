/*
 * Fuzz the workflow-file loader: any input either loads (then is checked
 * as corral check, run and serve check it, and prints back in normalized
 * form) or fails with a message.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct workflow		*wf;
	struct config_error	 err;
	char			*buf = NULL;
	size_t			 blen = 0;
	FILE			*f;

	if (size > 1 << 15)
		return 0;
	wf = config_load_string((const char *)data, size, "/fuzz/wf.yaml",
	    &err);
	if (wf == NULL) {
		if (err.msg[0] == '\0')
			abort();	/* every failure says why */
		return 0;
	}
	f = open_memstream(&buf, &blen);
	(void)config_check(wf, CONFIG_CHECK_START, f);
	config_print(f, wf);
	fclose(f);
	config_free(wf);
	free(buf);
	return 0;
}
