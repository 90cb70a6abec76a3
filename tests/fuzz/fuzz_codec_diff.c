/*
 * Differential fuzzing of the codecs' two ways of translating a line
 * (src/codec.c): from the scanner's tape, and with jansson.  The first
 * byte of an input picks the dialect and the direction (an agent's line
 * decoded, or one of corral's lines encoded for the agent); both ways
 * must make the same line and remember the same requests
 * (tests/unit/codec-diff.h says what "the same" is).
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "../unit/codec-diff.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct codec_state	*tape[2], *tree[2];
	char				 why[512];
	int				 d;

	if (tape[0] == NULL) {
		log_init(0);
		protocol_set_run("fuzz");
		tape[0] = codec_create(&codec_bus_ops, "b");
		tree[0] = codec_create(&codec_bus_ops, "b");
		tape[1] = codec_create(&codec_agentmessage_ops, "b");
		tree[1] = codec_create(&codec_agentmessage_ops, "b");
	}
	/* The framer never hands over a line with a NUL byte. */
	if (size < 1 || size > 1 << 16 || memchr(data + 1, '\0', size - 1))
		return 0;
	d = data[0] & 1;
	if (!codec_diff(tape[d], tree[d], (const char *)data + 1, size - 1,
	    (data[0] >> 1) & 1, why, sizeof why))
		abort();
	jscan_drain();
	return 0;
}
