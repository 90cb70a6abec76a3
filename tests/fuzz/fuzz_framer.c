/*
 * Fuzz the line framer: the input is cut into chunks of sizes taken from
 * its own bytes, and what comes out must be exactly the lines of the whole
 * input (split at '\n', '\r' dropped, empty lines skipped), with lines
 * over the maximum reported instead and lines with a NUL flagged.  Half
 * the inputs are read as a channel reads them: the rest of a long line
 * straight into the reader's room (ndjson_reader_room).
 */

#include <stdlib.h>
#include <string.h>

#include "corral.h"

#define FUZZ_MAX	200

struct expect {
	const char	*data;
	size_t		 len;
	size_t		 pos;	/* where the next expected line starts */
	int		 finished;
};

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* Return the next line of the input the framer should hand out. */
static int
fuzz_next_line(struct expect *x, const char **line, size_t *len, int *kind)
{
	const char	*nl;
	size_t		 l;

	for (;;) {
		if (x->pos >= x->len)
			return 0;
		nl = memchr(x->data + x->pos, '\n', x->len - x->pos);
		if (nl == NULL && !x->finished)
			return 0;
		l = (nl != NULL ? (size_t)(nl - x->data) : x->len) - x->pos;
		*line = x->data + x->pos;
		x->pos += l + (nl != NULL);
		if (l > 0 && (*line)[l - 1] == '\r')
			l--;
		if (l == 0)
			continue;
		*len = l;
		if (l > FUZZ_MAX)
			*kind = NDJSON_TOOLONG;
		else if (memchr(*line, '\0', l) != NULL)
			*kind = NDJSON_NUL;
		else
			*kind = NDJSON_LINE;
		return 1;
	}
}

/* Check each line the framer hands out against the expected one. */
static void
fuzz_line(void *arg, enum ndjson_kind kind, char *line, size_t len,
    size_t extra)
{
	struct expect	*x = arg;
	const char	*want;
	size_t		 wlen;
	int		 wkind;

	if (!fuzz_next_line(x, &want, &wlen, &wkind))
		abort();	/* a line that should not exist */
	if ((int)kind != wkind)
		abort();
	if (kind == NDJSON_LINE && (len != wlen || memcmp(line, want, len)))
		abort();
	if (kind == NDJSON_LINE && len > FUZZ_MAX)
		abort();	/* never forwarded over the maximum */
	/* A line too long comes with its first bytes, no more. */
	if (kind == NDJSON_TOOLONG && (len != (wlen < NDJSON_HEAD ? wlen :
	    NDJSON_HEAD) || memcmp(line, want, len) != 0))
		abort();
	(void)extra;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ndjson_reader	 r;
	struct expect		 x = { (const char *)data, size, 0, 0 };
	char			*copy, *room;
	size_t			 off = 0, chunk, i = 0, roomlen;
	int			 room_mode;

	if (size > 1 << 16)
		return 0;
	copy = xmalloc(size + 1);
	memcpy(copy, data, size);
	ndjson_reader_init(&r, FUZZ_MAX, 0);
	/* Half the inputs: read into the reader's room when it has one. */
	room_mode = size > 0 && (data[size - 1] & 1);
	while (off < size) {
		chunk = 1 + (size_t)data[i++ % size] % 97;
		if (chunk > size - off)
			chunk = size - off;
		if (room_mode && (room = ndjson_reader_room(&r, chunk,
		    &roomlen)) != NULL) {
			memcpy(room, copy + off, roomlen);
			ndjson_feed_room(&r, roomlen, fuzz_line, &x);
			off += roomlen;
			continue;
		}
		ndjson_feed(&r, copy + off, chunk, fuzz_line, &x);
		off += chunk;
	}
	x.finished = 1;
	ndjson_finish(&r, fuzz_line, &x);
	{
		const char *l;
		size_t ll;
		int k;

		if (fuzz_next_line(&x, &l, &ll, &k))
			abort();	/* a line was lost */
	}
	free(copy);
	return 0;
}
