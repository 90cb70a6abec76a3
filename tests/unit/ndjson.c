/*
 * Unit tests of the NDJSON framing (src/ndjson.c): the bounded line reader
 * and the queued writer.
 *
 * The reader must hand out the same lines whatever chunks the pipe
 * delivers, drop an over-long line whole and report its exact size, never
 * hold more than max_line bytes for an endless line, and carry on with the
 * next line.  The writer must deliver every byte in order through partial
 * writes to a non-blocking pipe.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "corral.h"

/* One event the reader reported. */
struct event {
	enum ndjson_kind	 kind;
	char			*data;	/* a copy of the line, or NULL */
	size_t			 len;
	size_t			 arg;
};

/* Everything the reader reported, in order. */
struct events {
	struct event	*ev;
	size_t		 n;
	size_t		 cap;
};

/* The reader's callback: record the event with a copy of its bytes. */
static void
record(void *arg, enum ndjson_kind kind, char *line, size_t len, size_t extra)
{
	struct events	*e = arg;
	struct event	*ev;

	if (e->n == e->cap) {
		e->cap = e->cap ? e->cap * 2 : 16;
		e->ev = realloc(e->ev, e->cap * sizeof *e->ev);
		assert_non_null(e->ev);
	}
	ev = &e->ev[e->n++];
	ev->kind = kind;
	ev->len = len;
	ev->arg = extra;
	ev->data = NULL;
	if (line != NULL) {
		ev->data = malloc(len + 1);
		assert_non_null(ev->data);
		memcpy(ev->data, line, len);
		ev->data[len] = '\0';
	}
}

/* Forget recorded events. */
static void
events_clear(struct events *e)
{
	size_t	i;

	for (i = 0; i < e->n; i++)
		free(e->ev[i].data);
	e->n = 0;
}

/* Free recorded events. */
static void
events_free(struct events *e)
{
	events_clear(e);
	free(e->ev);
	e->ev = NULL;
	e->cap = 0;
}

/* Assert that event i is a complete line with exactly these bytes. */
static void
assert_line(const struct events *e, size_t i, const char *want, size_t len)
{
	if (i >= e->n)
		fail_msg("event %zu missing (only %zu)", i, e->n);
	assert_int_equal(e->ev[i].kind, NDJSON_LINE);
	assert_int_equal(e->ev[i].len, len);
	assert_memory_equal(e->ev[i].data, want, len);
}

/* Feed a whole buffer through the reader, split at the given offsets. */
static void
feed_split(struct ndjson_reader *r, const char *data, size_t n,
    const size_t *cuts, size_t ncuts, struct events *e)
{
	char	*copy;
	size_t	 i, from = 0, to;

	/* The reader may write into its input, as chan.c's buffer allows. */
	copy = malloc(n + 1);
	assert_non_null(copy);
	memcpy(copy, data, n);
	for (i = 0; i <= ncuts; i++) {
		to = i < ncuts ? cuts[i] : n;
		if (to > from)
			ndjson_feed(r, copy + from, to - from, record, e);
		from = to;
	}
	free(copy);
}

/* A deterministic PRNG (xorshift64*) for random chunkings. */
static uint64_t rng_state;

/* Return a random number below n. */
static size_t
rng(size_t n)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (size_t)((rng_state * 2685821657736338717ULL) >> 11) % n;
}

/* The stream most tests feed: the lines it holds are in stream_lines. */
static const char stream[] =
	"{\"a\":1}\n"
	"\n"
	"{\"b\":\"two\"}\r\n"
	"\r\n"
	"x\n"
	"{\"c\":[1,2,3],\"d\":\"with\\r inside\"}\n"
	"\n\n\n"
	"last line without newline";
static const char *const stream_lines[] = {
	"{\"a\":1}",
	"{\"b\":\"two\"}",
	"x",
	"{\"c\":[1,2,3],\"d\":\"with\\r inside\"}",
	"last line without newline",
};
#define NSTREAM_LINES	(sizeof stream_lines / sizeof stream_lines[0])

/* Check that the events are exactly the stream's lines. */
static void
assert_stream_lines(const struct events *e)
{
	size_t	i;

	assert_int_equal(e->n, NSTREAM_LINES);
	for (i = 0; i < NSTREAM_LINES; i++)
		assert_line(e, i, stream_lines[i], strlen(stream_lines[i]));
}

/* Splitting the stream in two at every offset gives the same lines. */
static void
test_every_split_point(void **state)
{
	struct ndjson_reader	r;
	struct events		e = { 0 };
	size_t			n = sizeof stream - 1, cut;

	for (cut = 0; cut <= n; cut++) {
		ndjson_reader_init(&r, 1024, 0);
		feed_split(&r, stream, n, &cut, 1, &e);
		ndjson_finish(&r, record, &e);
		assert_stream_lines(&e);
		events_clear(&e);
		ndjson_reader_free(&r);
	}
	events_free(&e);
}

/* Splitting the stream in three at every pair of offsets, too. */
static void
test_every_pair_of_split_points(void **state)
{
	struct ndjson_reader	r;
	struct events		e = { 0 };
	size_t			n = sizeof stream - 1, cuts[2];

	for (cuts[0] = 0; cuts[0] <= n; cuts[0]++) {
		for (cuts[1] = cuts[0]; cuts[1] <= n; cuts[1]++) {
			ndjson_reader_init(&r, 1024, 0);
			feed_split(&r, stream, n, cuts, 2, &e);
			ndjson_finish(&r, record, &e);
			assert_stream_lines(&e);
			events_clear(&e);
			ndjson_reader_free(&r);
		}
	}
	events_free(&e);
}

/* Random chunkings with fixed seeds, over a long stream of varied lines. */
static void
test_random_chunkings(void **state)
{
	struct ndjson_reader	 r;
	struct events		 e = { 0 };
	char			*data, line[600];
	size_t			 n = 0, cap = 1 << 20, nlines = 0, i, k, len;
	size_t			*cuts, ncuts;
	uint64_t		 seed;
	char			**want;

	data = malloc(cap);
	want = calloc(2000, sizeof *want);
	assert_non_null(data);
	assert_non_null(want);
	rng_state = 42;
	for (i = 0; i < 2000; i++) {
		len = rng(10) == 0 ? 0 : 1 + rng(sizeof line - 1);
		for (k = 0; k < len; k++)
			line[k] = (char)('!' + rng(90));
		memcpy(data + n, line, len);
		n += len;
		if (rng(4) == 0)
			data[n++] = '\r';
		data[n++] = '\n';
		if (len > 0)
			want[nlines++] = strndup(line, len);
	}
	cuts = calloc(n, sizeof *cuts);
	assert_non_null(cuts);
	for (seed = 1; seed <= 40; seed++) {
		rng_state = seed * 0x9e3779b97f4a7c15ULL;
		/* Small chunks for some seeds, pipe-sized ones for others. */
		for (ncuts = 0, k = 0;;) {
			k += 1 + rng(seed % 4 == 0 ? 8 : seed % 4 == 1 ? 100 :
			    seed % 4 == 2 ? 4096 : 65536);
			if (k >= n)
				break;
			cuts[ncuts++] = k;
		}
		ndjson_reader_init(&r, 1024, 0);
		feed_split(&r, data, n, cuts, ncuts, &e);
		assert_false(ndjson_reader_pending(&r));
		ndjson_finish(&r, record, &e);
		assert_int_equal(e.n, nlines);
		for (i = 0; i < nlines; i++)
			assert_line(&e, i, want[i], strlen(want[i]));
		events_clear(&e);
		ndjson_reader_free(&r);
	}
	for (i = 0; i < nlines; i++)
		free(want[i]);
	free(want);
	free(cuts);
	free(data);
	events_free(&e);
}

/* Ten thousand lines in one chunk all come out, in order. */
static void
test_many_lines_in_one_chunk(void **state)
{
	struct ndjson_reader	 r;
	struct events		 e = { 0 };
	char			*data, want[32];
	size_t			 n = 0, i;

	data = malloc(10000 * 32);
	assert_non_null(data);
	for (i = 0; i < 10000; i++)
		n += (size_t)sprintf(data + n, "{\"n\":%zu}\n", i);
	ndjson_reader_init(&r, 64, 0);
	ndjson_feed(&r, data, n, record, &e);
	assert_int_equal(e.n, 10000);
	for (i = 0; i < 10000; i++) {
		snprintf(want, sizeof want, "{\"n\":%zu}", i);
		assert_line(&e, i, want, strlen(want));
	}
	assert_false(ndjson_reader_pending(&r));
	ndjson_reader_free(&r);
	events_free(&e);
	free(data);
}

/* A 300 kB line fed one byte at a time arrives whole and intact. */
static void
test_line_split_across_many_reads(void **state)
{
	struct ndjson_reader	 r;
	struct events		 e = { 0 };
	size_t			 n = 300000, i;
	char			*data;

	data = malloc(n + 1);
	assert_non_null(data);
	for (i = 0; i < n; i++)
		data[i] = (char)('a' + i % 26);
	data[n] = '\n';
	ndjson_reader_init(&r, CORRAL_MAX_LINE_DEFAULT, 0);
	for (i = 0; i <= n; i++) {
		ndjson_feed(&r, data + i, 1, record, &e);
		if (i < n) {
			assert_int_equal(e.n, 0);
			assert_true(ndjson_reader_pending(&r));
		}
	}
	assert_int_equal(e.n, 1);
	assert_line(&e, 0, data, n);
	/* The big buffer is not kept after the line is out. */
	assert_false(ndjson_reader_pending(&r));
	assert_true(r.cap <= 65536);
	ndjson_reader_free(&r);
	events_free(&e);
	free(data);
}

/* CRLF endings are stripped; lone CRs inside a line stay; empty lines vanish. */
static void
test_crlf_and_empty_lines(void **state)
{
	struct ndjson_reader	r;
	struct events		e = { 0 };
	char			data[] = "\n\r\n\n{\"a\":\"b\"}\r\n a\rb \r\n\r\r\n";

	ndjson_reader_init(&r, 100, 0);
	ndjson_feed(&r, data, sizeof data - 1, record, &e);
	ndjson_finish(&r, record, &e);
	assert_int_equal(e.n, 3);
	assert_line(&e, 0, "{\"a\":\"b\"}", 9);
	assert_line(&e, 1, " a\rb ", 5);
	/* "\r\r\n": only the last CR belongs to the ending. */
	assert_line(&e, 2, "\r", 1);
	ndjson_reader_free(&r);
	events_free(&e);
}

/* Build a line of n bytes of filler, then the ending. */
static char *
make_line(size_t n, const char *ending, size_t *total)
{
	char	*s;
	size_t	 i, el = strlen(ending);

	s = malloc(n + el + 1);
	assert_non_null(s);
	for (i = 0; i < n; i++)
		s[i] = (char)('0' + i % 10);
	memcpy(s + n, ending, el + 1);
	*total = n + el;
	return s;
}

/* Feed data in chunks of size step (the whole of it when step is 0). */
static void
feed_steps(struct ndjson_reader *r, char *data, size_t n, size_t step,
    struct events *e)
{
	size_t	off, len;

	if (step == 0)
		step = n;
	for (off = 0; off < n; off += len) {
		len = n - off < step ? n - off : step;
		ndjson_feed(r, data + off, len, record, e);
	}
}

/* A line of exactly max bytes is delivered, with or without a CR. */
static void
test_line_exactly_at_max(void **state)
{
	static const size_t steps[] = { 0, 1, 7, 64 };
	static const char *const endings[] = { "\n", "\r\n" };
	struct ndjson_reader	 r;
	struct events		 e = { 0 };
	size_t			 i, k, total;
	char			*s;

	for (k = 0; k < 2; k++) {
		for (i = 0; i < sizeof steps / sizeof steps[0]; i++) {
			s = make_line(64, endings[k], &total);
			ndjson_reader_init(&r, 64, 0);
			feed_steps(&r, s, total, steps[i], &e);
			assert_int_equal(e.n, 1);
			assert_line(&e, 0, s, 64);
			events_clear(&e);
			ndjson_reader_free(&r);
			free(s);
		}
	}
	events_free(&e);
}

/*
 * A line one byte over max is dropped with its exact size, whatever the
 * chunking, and the next line still arrives intact.
 */
static void
test_line_over_max_dropped(void **state)
{
	static const size_t steps[] = { 0, 1, 3, 16, 64, 65, 1000 };
	static const size_t sizes[] = { 65, 66, 100, 129, 5000 };
	struct ndjson_reader	 r;
	struct events		 e = { 0 };
	size_t			 i, k, total;
	char			*s, *both;
	const char		*next = "{\"next\":true}\n";

	for (k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		for (i = 0; i < sizeof steps / sizeof steps[0]; i++) {
			s = make_line(sizes[k], "\n", &total);
			both = malloc(total + strlen(next) + 1);
			assert_non_null(both);
			memcpy(both, s, total);
			strcpy(both + total, next);
			ndjson_reader_init(&r, 64, 0);
			feed_steps(&r, both, total + strlen(next), steps[i], &e);
			if (e.n != 2 || e.ev[0].kind != NDJSON_TOOLONG ||
			    e.ev[0].arg != sizes[k])
				fail_msg("line of %zu bytes in steps of %zu: %zu "
				    "events, first kind %d size %zu", sizes[k],
				    steps[i], e.n, e.n ? (int)e.ev[0].kind : -1,
				    e.n ? e.ev[0].arg : 0);
			/* Its first bytes, to say which request it was. */
			assert_int_equal(strlen(e.ev[0].data), sizes[k] <
			    NDJSON_HEAD ? sizes[k] : NDJSON_HEAD);
			assert_memory_equal(e.ev[0].data, s,
			    strlen(e.ev[0].data));
			assert_line(&e, 1, next, strlen(next) - 1);
			events_clear(&e);
			ndjson_reader_free(&r);
			free(s);
			free(both);
		}
	}
	events_free(&e);
}

/*
 * The CR of a CRLF ending does not count towards the reported size either
 * (docs/protocol.md: "the \r and \n do not count").
 */
static void
test_over_max_size_excludes_cr(void **state)
{
	static const size_t steps[] = { 0, 1, 10 };
	static const size_t sizes[] = { 65, 66, 200 };
	struct ndjson_reader	 r;
	struct events		 e = { 0 };
	size_t			 i, k, total;
	char			*s;
	int			 bad = 0;

	for (k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		for (i = 0; i < sizeof steps / sizeof steps[0]; i++) {
			s = make_line(sizes[k], "\r\n", &total);
			ndjson_reader_init(&r, 64, 0);
			feed_steps(&r, s, total, steps[i], &e);
			if (e.n != 1 || e.ev[0].kind != NDJSON_TOOLONG ||
			    e.ev[0].arg != sizes[k]) {
				print_message("a %zu-byte line with CRLF in steps "
				    "of %zu: %zu events, reported as %zu bytes\n",
				    sizes[k], steps[i], e.n, e.n ? e.ev[0].arg : 0);
				bad++;
			}
			events_clear(&e);
			ndjson_reader_free(&r);
			free(s);
		}
	}
	events_free(&e);
	assert_int_equal(bad, 0);
}

/* A line holding a NUL byte is reported with the NUL's offset, not passed on. */
static void
test_nul_byte_reported(void **state)
{
	static const size_t steps[] = { 0, 1, 5 };
	struct ndjson_reader	r;
	struct events		e = { 0 };
	char			data[] = "{\"a\":\"x\0y\"}\n\0\n{\"ok\":1}\n";
	size_t			i;

	for (i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		ndjson_reader_init(&r, 100, 0);
		feed_steps(&r, data, sizeof data - 1, steps[i], &e);
		assert_int_equal(e.n, 3);
		assert_int_equal(e.ev[0].kind, NDJSON_NUL);
		assert_int_equal(e.ev[0].arg, 7);
		assert_int_equal(e.ev[0].len, 11);
		assert_int_equal(e.ev[1].kind, NDJSON_NUL);
		assert_int_equal(e.ev[1].arg, 0);
		assert_line(&e, 2, "{\"ok\":1}", 8);
		events_clear(&e);
		ndjson_reader_free(&r);
	}
	events_free(&e);
}

/*
 * The line's end and its first NUL byte are found wherever they fall:
 * lines of every length up to 300 bytes (over the 32, 64 and 128 bytes
 * the framing searches at once), each with no NUL, one NUL, or two, at
 * every offset, between two good lines in one chunk.
 */
static void
test_nul_every_offset(void **state)
{
	struct ndjson_reader	r;
	struct events		e = { 0 };
	char			buf[700];
	size_t			len, at, n, second, k, cut;

	for (len = 1; len <= 300; len++) {
		for (at = 0; at <= len; at++) {
			/* at == len: no NUL; else one at at, maybe one more. */
			second = at + 33 < len ? at + 33 : len;
			memcpy(buf, "{}\n", 3);
			n = 3;
			memset(buf + n, 'x', len);
			if (at < len)
				buf[n + at] = '\0';
			if (second < len)
				buf[n + second] = '\0';
			n += len;
			memcpy(buf + n, "\n[]\n", 4);
			n += 4;
			ndjson_reader_init(&r, 1000, 0);
			ndjson_feed(&r, buf, n, record, &e);
			assert_int_equal(e.n, 3);
			assert_line(&e, 0, "{}", 2);
			assert_int_equal(e.ev[1].len, len);
			if (at < len) {
				assert_int_equal(e.ev[1].kind, NDJSON_NUL);
				assert_int_equal(e.ev[1].arg, at);
			} else
				assert_int_equal(e.ev[1].kind, NDJSON_LINE);
			assert_line(&e, 2, "[]", 2);
			events_clear(&e);
			ndjson_reader_free(&r);
			/* The line in two reads: cut at, after, before the NUL. */
			for (k = 0; k < 3; k++) {
				cut = 3 + (k == 0 ? at : k == 1 ? at + 1 : at / 2);
				if (cut >= n)
					continue;
				ndjson_reader_init(&r, 1000, 0);
				ndjson_feed(&r, buf, cut, record, &e);
				ndjson_feed(&r, buf + cut, n - cut, record, &e);
				assert_int_equal(e.n, 3);
				assert_int_equal(e.ev[1].kind, at < len ?
				    NDJSON_NUL : NDJSON_LINE);
				if (at < len)
					assert_int_equal(e.ev[1].arg, at);
				events_clear(&e);
				ndjson_reader_free(&r);
			}
		}
	}
	events_free(&e);
}

/*
 * Only a newline and a NUL byte stop a line: every other byte value, at
 * every place of the 32, 64 and 128 bytes searched at once, is part of
 * it (the search takes a byte's minimum with the byte xor '\n', 0 only
 * for those two; bytes such as 0x8a, 0x80 or 0x0b must not pass for
 * them).  Lines of every length up to 300, each in two alignments, with
 * a NUL byte in the line that follows, in the same block or the next.
 */
static void
test_stop_every_byte(void **state)
{
	struct ndjson_reader	r;
	struct events		e = { 0 };
	char			buf[700], want[300];
	size_t			len, n, i, shift, phase, nulat;
	unsigned char		b;

	for (len = 1; len <= 300; len++) {
		for (shift = 0; shift < 2; shift++) {
			phase = (len * 7 + shift * 101) % 254;
			n = 0;
			if (shift)
				buf[n++] = ' ';	/* a line of one space first */
			buf[n++] = '\n';
			for (i = 0; i < len; i++) {
				/* 1..255 without '\n', from a phase of its own. */
				b = (unsigned char)(1 + (phase + i) % 254);
				if (b >= '\n')
					b++;
				if (b == '\r' && i == len - 1)
					b = 'z';	/* a "\r\n" ending */
				want[i] = (char)b;
				buf[n++] = (char)b;
			}
			buf[n++] = '\n';
			nulat = len % 70;
			memset(buf + n, 'y', 80);
			buf[n + nulat] = '\0';
			n += 80;
			buf[n++] = '\n';
			ndjson_reader_init(&r, 1000, 0);
			ndjson_feed(&r, buf, n, record, &e);
			assert_int_equal(e.n, shift ? 3 : 2);
			if (shift)
				assert_line(&e, 0, " ", 1);
			assert_line(&e, shift, want, len);
			assert_int_equal(e.ev[shift + 1].kind, NDJSON_NUL);
			assert_int_equal(e.ev[shift + 1].len, 80);
			assert_int_equal(e.ev[shift + 1].arg, nulat);
			events_clear(&e);
			ndjson_reader_free(&r);
		}
	}
	events_free(&e);
}

/* At end of stream, a last line without newline is delivered. */
static void
test_finish_delivers_last_line(void **state)
{
	struct ndjson_reader	r;
	struct events		e = { 0 };
	char			a[] = "{\"one\":1}\n{\"tw", b[] = "o\":2}";
	char			c[] = "{\"cr\":3}\r";

	ndjson_reader_init(&r, 100, 0);
	ndjson_feed(&r, a, sizeof a - 1, record, &e);
	ndjson_feed(&r, b, sizeof b - 1, record, &e);
	assert_int_equal(e.n, 1);
	assert_true(ndjson_reader_pending(&r));
	ndjson_finish(&r, record, &e);
	assert_int_equal(e.n, 2);
	assert_line(&e, 1, "{\"two\":2}", 9);
	assert_false(ndjson_reader_pending(&r));
	/* Finishing again reports nothing more. */
	ndjson_finish(&r, record, &e);
	assert_int_equal(e.n, 2);
	ndjson_reader_free(&r);
	events_clear(&e);

	/* A final CR is part of the ending. */
	ndjson_reader_init(&r, 100, 0);
	ndjson_feed(&r, c, sizeof c - 1, record, &e);
	ndjson_finish(&r, record, &e);
	assert_int_equal(e.n, 1);
	assert_line(&e, 0, "{\"cr\":3}", 8);
	ndjson_reader_free(&r);
	events_free(&e);
}

/* A too-long last line without newline is reported at finish. */
static void
test_finish_reports_long_last_line(void **state)
{
	struct ndjson_reader	 r;
	struct events		 e = { 0 };
	size_t			 total;
	char			*s;

	s = make_line(1000, "", &total);
	ndjson_reader_init(&r, 64, 0);
	feed_steps(&r, s, total, 100, &e);
	assert_int_equal(e.n, 0);
	ndjson_finish(&r, record, &e);
	assert_int_equal(e.n, 1);
	assert_int_equal(e.ev[0].kind, NDJSON_TOOLONG);
	assert_int_equal(e.ev[0].arg, 1000);
	ndjson_reader_free(&r);
	events_free(&e);
	free(s);
}

/*
 * An endless line is never delivered and its bytes are not held: after
 * the overflow the reader keeps no buffer at all, yet still counts.
 */
static void
test_endless_line_not_held(void **state)
{
	struct ndjson_reader	r;
	struct events		e = { 0 };
	char			chunk[4096], tail[] = "xyz\n{\"after\":1}\n";
	size_t			i, fed = 0;

	memset(chunk, 'q', sizeof chunk);
	ndjson_reader_init(&r, 65536, 0);
	for (i = 0; i < 2560; i++) {		/* 10 MiB */
		ndjson_feed(&r, chunk, sizeof chunk, record, &e);
		fed += sizeof chunk;
		assert_int_equal(e.n, 0);
		if (fed > 65537)
			assert_true(r.cap == 0 && r.buf == NULL);
		assert_true(r.cap <= 2 * 65536);
		assert_true(ndjson_reader_pending(&r));
	}
	ndjson_feed(&r, tail, sizeof tail - 1, record, &e);
	assert_int_equal(e.n, 2);
	assert_int_equal(e.ev[0].kind, NDJSON_TOOLONG);
	assert_int_equal(e.ev[0].arg, fed + 3);
	assert_line(&e, 1, "{\"after\":1}", 11);
	assert_false(ndjson_reader_pending(&r));
	ndjson_reader_free(&r);
	events_free(&e);
}

/*
 * The head of a line too long is held only while that line is being
 * dropped; a reader freed in the middle of one starts clean when it is
 * fed again.
 */
static void
test_head_only_while_dropping(void **state)
{
	struct ndjson_reader	r;
	struct events		e = { 0 };
	char			big[] = "0123456789abcdef", tail[] = "xyz\n";

	ndjson_reader_init(&r, 8, 0);
	assert_null(r.head);
	ndjson_feed(&r, big, sizeof big - 1, record, &e);
	assert_non_null(r.head);
	ndjson_feed(&r, tail, sizeof tail - 1, record, &e);
	assert_int_equal(e.n, 1);
	assert_int_equal(e.ev[0].kind, NDJSON_TOOLONG);
	assert_int_equal(e.ev[0].arg, 19);
	assert_int_equal(e.ev[0].len, 19);
	assert_memory_equal(e.ev[0].data, "0123456789abcdefxyz", 19);
	assert_null(r.head);
	events_clear(&e);

	ndjson_feed(&r, big, sizeof big - 1, record, &e);
	ndjson_reader_free(&r);
	assert_false(ndjson_reader_pending(&r));
	ndjson_feed(&r, tail, sizeof tail - 1, record, &e);
	assert_int_equal(e.n, 1);
	assert_line(&e, 0, "xyz", 3);
	ndjson_reader_free(&r);
	events_free(&e);
}

/*
 * Truncate mode (stderr): a long line gives its first max bytes once as
 * NDJSON_CUT, the rest is skipped, and NUL bytes are passed through.
 */
static void
test_truncate_mode(void **state)
{
	static const size_t steps[] = { 0, 1, 10, 100 };
	static const size_t sizes[] = { 33, 34, 100, 10000 };
	struct ndjson_reader	 r;
	struct events		 e = { 0 };
	size_t			 i, k, total, j;
	char			*s, nul[] = "a\0b\n";

	for (k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		for (i = 0; i < sizeof steps / sizeof steps[0]; i++) {
			s = make_line(sizes[k], "\nshort\n", &total);
			ndjson_reader_init(&r, 32, 1);
			feed_steps(&r, s, total, steps[i], &e);
			ndjson_finish(&r, record, &e);
			if (e.n != 2 || e.ev[0].kind != NDJSON_CUT)
				fail_msg("%zu bytes in steps of %zu: %zu events",
				    sizes[k], steps[i], e.n);
			assert_int_equal(e.ev[0].len, 32);
			assert_memory_equal(e.ev[0].data, s, 32);
			assert_line(&e, 1, "short", 5);
			for (j = 0; j < e.n; j++)
				assert_int_not_equal(e.ev[j].kind,
				    NDJSON_TOOLONG);
			events_clear(&e);
			ndjson_reader_free(&r);
			free(s);
		}
	}
	ndjson_reader_init(&r, 32, 1);
	ndjson_feed(&r, nul, sizeof nul - 1, record, &e);
	assert_line(&e, 0, "a\0b", 3);
	ndjson_reader_free(&r);
	events_free(&e);
}

/* Watermarks: full at or above high, drained at or below low. */
static void
test_writer_watermarks(void **state)
{
	struct ndjson_writer	w;
	char			buf[100];

	memset(buf, 'x', sizeof buf);
	ndjson_writer_init(&w, 10, 50);
	assert_int_equal(ndjson_writer_queued(&w), 0);
	assert_true(ndjson_writer_drained(&w));
	assert_false(ndjson_writer_full(&w));
	ndjson_writer_add(&w, buf, 10);
	assert_true(ndjson_writer_drained(&w));
	ndjson_writer_add(&w, buf, 1);
	assert_false(ndjson_writer_drained(&w));
	assert_false(ndjson_writer_full(&w));
	ndjson_writer_add(&w, buf, 38);
	assert_int_equal(ndjson_writer_queued(&w), 49);
	assert_false(ndjson_writer_full(&w));
	ndjson_writer_line(&w, buf, 0);		/* just the newline */
	assert_int_equal(ndjson_writer_queued(&w), 50);
	assert_true(ndjson_writer_full(&w));
	ndjson_writer_free(&w);
}

/* Read everything currently in a non-blocking pipe into out. */
static size_t
drain_pipe(int fd, char *out, size_t cap)
{
	ssize_t	n;
	size_t	got = 0;

	while (got < cap && (n = read(fd, out + got, cap - got)) > 0)
		got += (size_t)n;
	return got;
}

/*
 * Flushing into a full non-blocking pipe stops at EAGAIN with the rest
 * queued; the reader gets every byte, in order, across partial writes,
 * while new lines keep being queued.
 */
static void
test_writer_partial_writes(void **state)
{
	struct ndjson_writer	 w;
	char			*expect, *got, line[200];
	size_t			 elen = 0, glen = 0, len, i, k, before;
	int			 fds[2], rc, saw_eagain = 0;

	assert_int_equal(pipe(fds), 0);
	assert_int_equal(util_set_nonblock(fds[0], 1), 0);
	assert_int_equal(util_set_nonblock(fds[1], 1), 0);
	expect = malloc(4 << 20);
	got = malloc(4 << 20);
	assert_non_null(expect);
	assert_non_null(got);
	rng_state = 7;
	ndjson_writer_init(&w, 4096, 65536);
	for (i = 0; i < 20000; i++) {
		len = (size_t)snprintf(line, sizeof line, "{\"seq\":%zu,\"pad\":\"",
		    i);
		for (k = rng(150); k > 0; k--)
			line[len++] = (char)('a' + rng(26));
		line[len++] = '"';
		line[len++] = '}';
		ndjson_writer_line(&w, line, len);
		memcpy(expect + elen, line, len);
		elen += len;
		expect[elen++] = '\n';
		if (i % 50 == 49) {
			before = w.written;
			rc = ndjson_writer_flush(&w, fds[1]);
			assert_true(rc == 0 || rc == 1);
			assert_int_equal(ndjson_writer_queued(&w) == 0, rc == 0);
			assert_true(w.written >= before);
			if (rc == 1)
				saw_eagain = 1;
			/* Read only sometimes, so the pipe fills up. */
			if (rng(3) == 0)
				glen += drain_pipe(fds[0], got + glen,
				    (4 << 20) - glen);
		}
	}
	while ((rc = ndjson_writer_flush(&w, fds[1])) == 1)
		glen += drain_pipe(fds[0], got + glen, (4 << 20) - glen);
	assert_int_equal(rc, 0);
	glen += drain_pipe(fds[0], got + glen, (4 << 20) - glen);
	assert_true(saw_eagain);
	assert_int_equal(w.written, elen);
	assert_int_equal(glen, elen);
	assert_memory_equal(got, expect, elen);
	assert_true(ndjson_writer_drained(&w));
	ndjson_writer_free(&w);
	close(fds[0]);
	close(fds[1]);
	free(expect);
	free(got);
}

/* Flushing to a pipe with no reader is an error (EPIPE), not a hang. */
static void
test_writer_broken_pipe(void **state)
{
	struct ndjson_writer	w;
	int			fds[2];
	void			(*old)(int);

	old = signal(SIGPIPE, SIG_IGN);
	assert_int_equal(pipe(fds), 0);
	close(fds[0]);
	ndjson_writer_init(&w, 0, 100);
	ndjson_writer_line(&w, "{}", 2);
	errno = 0;
	assert_int_equal(ndjson_writer_flush(&w, fds[1]), -1);
	assert_int_equal(errno, EPIPE);
	assert_int_equal(ndjson_writer_queued(&w), 3);
	ndjson_writer_free(&w);
	close(fds[1]);
	signal(SIGPIPE, old);
}

/* After a burst of big lines is flushed, the writer's buffer is given back. */
static void
test_writer_releases_big_buffer(void **state)
{
	struct ndjson_writer	 w;
	char			*big, *sink;
	int			 fds[2], rc;
	size_t			 got = 0, n = 3 << 20;

	big = malloc(n);
	sink = malloc(n + 1);
	assert_non_null(big);
	assert_non_null(sink);
	memset(big, 'b', n);
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(util_set_nonblock(fds[0], 1), 0);
	assert_int_equal(util_set_nonblock(fds[1], 1), 0);
	ndjson_writer_init(&w, 1024, 1 << 20);
	ndjson_writer_line(&w, big, n);
	assert_true(ndjson_writer_full(&w));
	while ((rc = ndjson_writer_flush(&w, fds[1])) == 1)
		got += drain_pipe(fds[0], sink + got, n + 1 - got);
	assert_int_equal(rc, 0);
	got += drain_pipe(fds[0], sink + got, n + 1 - got);
	assert_int_equal(got, n + 1);
	assert_int_equal(sink[n], '\n');
	assert_true(w.cap <= 1024 * 1024);
	/* And it still works afterwards. */
	ndjson_writer_line(&w, "{}", 2);
	assert_int_equal(ndjson_writer_flush(&w, fds[1]), 0);
	assert_int_equal(drain_pipe(fds[0], sink, 10), 3);
	assert_memory_equal(sink, "{}\n", 3);
	ndjson_writer_free(&w);
	close(fds[0]);
	close(fds[1]);
	free(big);
	free(sink);
}

/*
 * The channel's queue: watermarks count what is queued, and an empty
 * queue holds no memory.
 */
static void
test_queue_watermarks(void **state)
{
	struct ndjson_queue	q;
	char			buf[100];

	memset(buf, 'x', sizeof buf);
	ndjson_queue_init(&q, 10, 50);
	assert_int_equal(ndjson_queue_len(&q), 0);
	assert_true(ndjson_queue_drained(&q));
	assert_false(ndjson_queue_full(&q));
	ndjson_queue_line(&q, buf, 10);
	assert_false(ndjson_queue_drained(&q));
	ndjson_queue_line(&q, buf, 38);
	assert_int_equal(ndjson_queue_len(&q), 50);
	assert_true(ndjson_queue_full(&q));
	ndjson_queue_free(&q);
	assert_null(q.first);
	assert_int_equal(ndjson_queue_len(&q), 0);
}

/*
 * Lines of every size, from a few bytes to several chunks, go through a
 * non-blocking pipe that fills up, while more are queued: the reader
 * gets every byte in order, and the queue, once empty, holds nothing.
 */
static void
test_queue_partial_writes(void **state)
{
	struct ndjson_queue	 q;
	char			*expect, *got, *line;
	size_t			 elen = 0, glen = 0, len, i, k, cap = 64 << 20;
	int			 fds[2], rc, saw_eagain = 0;

	assert_int_equal(pipe(fds), 0);
	assert_int_equal(util_set_nonblock(fds[0], 1), 0);
	assert_int_equal(util_set_nonblock(fds[1], 1), 0);
	expect = malloc(cap);
	got = malloc(cap);
	line = malloc(300000);
	assert_non_null(expect);
	assert_non_null(got);
	assert_non_null(line);
	rng_state = 11;
	ndjson_queue_init(&q, 4096, 65536);
	for (i = 0; i < 3000; i++) {
		len = rng(20) == 0 ? rng(300000) : rng(700);
		for (k = 0; k < len; k++)
			line[k] = (char)('a' + (i + k) % 26);
		ndjson_queue_line(&q, line, len);
		memcpy(expect + elen, line, len);
		elen += len;
		expect[elen++] = '\n';
		if (rng(8) == 0) {
			rc = ndjson_queue_flush(&q, fds[1]);
			assert_true(rc == 0 || rc == 1);
			assert_int_equal(ndjson_queue_len(&q) == 0, rc == 0);
			assert_int_equal(q.first == NULL, rc == 0);
			if (rc == 1)
				saw_eagain = 1;
			if (rng(3) == 0)
				glen += drain_pipe(fds[0], got + glen,
				    cap - glen);
		}
	}
	while ((rc = ndjson_queue_flush(&q, fds[1])) == 1)
		glen += drain_pipe(fds[0], got + glen, cap - glen);
	assert_int_equal(rc, 0);
	glen += drain_pipe(fds[0], got + glen, cap - glen);
	assert_true(saw_eagain);
	assert_int_equal(glen, elen);
	assert_memory_equal(got, expect, elen);
	assert_null(q.first);
	assert_null(q.last);
	ndjson_queue_free(&q);
	close(fds[0]);
	close(fds[1]);
	free(expect);
	free(got);
	free(line);
}

/* A queue to a pipe with no reader fails (EPIPE) and keeps its bytes. */
static void
test_queue_broken_pipe(void **state)
{
	struct ndjson_queue	q;
	int			fds[2];
	void			(*old)(int);

	old = signal(SIGPIPE, SIG_IGN);
	assert_int_equal(pipe(fds), 0);
	close(fds[0]);
	ndjson_queue_init(&q, 0, 100);
	ndjson_queue_line(&q, "{}", 2);
	errno = 0;
	assert_int_equal(ndjson_queue_flush(&q, fds[1]), -1);
	assert_int_equal(errno, EPIPE);
	assert_int_equal(ndjson_queue_len(&q), 3);
	ndjson_queue_free(&q);
	close(fds[1]);
	signal(SIGPIPE, old);
}

/* A callback that records, and stops the chunk after some lines. */
struct room_rec {
	struct ndjson_reader	*r;
	struct events		*e;
	int			 stops;
};

/* Record a line, and stop the reader after one line in three. */
static void
record_maybe_stop(void *arg, enum ndjson_kind kind, char *line, size_t len,
    size_t extra)
{
	struct room_rec	*rr = arg;

	record(rr->e, kind, line, len, extra);
	if (rr->stops && rng(3) == 0)
		ndjson_reader_stop(rr->r);
}

/*
 * Reading the rest of a long line straight into the reader's room, as a
 * channel does, hands out exactly what feeding the same bytes in chunks
 * does: long lines, lines too long, lines with a NUL byte or a "\r\n",
 * small lines between them, and a reader stopped between lines.
 */
static void
test_room_same_lines(void **state)
{
	struct ndjson_reader	 r;
	struct events		 want = { 0 }, e = { 0 };
	struct room_rec		 rr = { &r, &e, 0 };
	char			*data, *chunk, *room;
	size_t			 n = 0, cap = 16 << 20, len, i, k, off, take;
	size_t			 roomlen, used = 0;
	uint64_t		 seed;

	data = malloc(cap);
	chunk = malloc(1 << 18);
	assert_non_null(data);
	assert_non_null(chunk);
	rng_state = 5;
	for (i = 0; i < 300; i++) {
		len = rng(3) == 0 ? rng(600) : 20000 + rng(130000);
		for (k = 0; k < len; k++)
			data[n + k] = (char)('!' + rng(90));
		if (len > 0 && rng(10) == 0)
			data[n + rng(len)] = '\0';
		n += len;
		if (rng(5) == 0)
			data[n++] = '\r';
		data[n++] = '\n';
	}
	/* What feeding it in chunks hands out. */
	ndjson_reader_init(&r, 100000, 0);
	for (off = 0; off < n; off += take) {
		take = 1 + rng(65536);
		if (take > n - off)
			take = n - off;
		memcpy(chunk, data + off, take);
		ndjson_feed(&r, chunk, take, record, &want);
	}
	ndjson_finish(&r, record, &want);
	ndjson_reader_free(&r);
	for (seed = 1; seed <= 6; seed++) {
		rng_state = seed * 0x9e3779b97f4a7c15ULL;
		rr.stops = seed % 2 == 0;
		ndjson_reader_init(&r, 100000, 0);
		for (off = 0; off < n; off += take) {
			/* The rest of a stopped chunk goes first. */
			while (ndjson_reader_held(&r))
				ndjson_resume(&r, record_maybe_stop, &rr);
			take = 1 + rng(seed % 3 == 0 ? 300 : 1 << 18);
			if (take > n - off)
				take = n - off;
			if ((room = ndjson_reader_room(&r, take, &roomlen)) !=
			    NULL) {
				assert_true(roomlen > 0 && roomlen <= take);
				take = roomlen;
				memcpy(room, data + off, take);
				ndjson_feed_room(&r, take, record_maybe_stop,
				    &rr);
				used++;
				continue;
			}
			memcpy(chunk, data + off, take);
			ndjson_feed(&r, chunk, take, record_maybe_stop, &rr);
		}
		while (ndjson_reader_held(&r))
			ndjson_resume(&r, record_maybe_stop, &rr);
		ndjson_finish(&r, record, &e);
		assert_int_equal(e.n, want.n);
		for (i = 0; i < e.n; i++) {
			assert_int_equal(e.ev[i].kind, want.ev[i].kind);
			assert_int_equal(e.ev[i].len, want.ev[i].len);
			assert_int_equal(e.ev[i].arg, want.ev[i].arg);
			assert_memory_equal(e.ev[i].data, want.ev[i].data,
			    e.ev[i].len);
		}
		events_clear(&e);
		ndjson_reader_free(&r);
	}
	assert_true(used > 100);
	events_free(&want);
	events_free(&e);
	free(data);
	free(chunk);
}

/* Where test_room_queue_takes_line's callback writes its lines. */
struct room_out {
	struct ndjson_queue	 q;	/* every line */
	struct ndjson_queue	 q2;	/* every line too, dropped often */
	int			 fd;
	size_t			 n;
};

/* Queue a line twice; write one queue, drop the other, now and then. */
static void
room_out_line(void *arg, enum ndjson_kind kind, char *line, size_t len,
    size_t extra)
{
	struct room_out	*o = arg;

	assert_int_equal(kind, NDJSON_LINE);
	ndjson_queue_line(&o->q, line, len);
	ndjson_queue_line(&o->q2, line, len);
	/* Written, or dropped, while the line is still being handled. */
	if (o->n % 3 == 0)
		(void)ndjson_queue_flush(&o->q, o->fd);
	if (o->n % 2 == 0)
		ndjson_queue_free(&o->q2);
	o->n++;
}

/*
 * Feed n bytes of data to a new reader in chunks of random size, into
 * its room when it offers room, cb queueing the lines for the pipe fds
 * (and writing them when it likes), the pipe drained into got (cap at
 * most) as it goes.  Returns the bytes read from the pipe.
 */
static size_t
feed_through(const char *data, size_t n, ndjson_line_cb cb, void *arg,
    int fds[2], char *got, size_t cap)
{
	struct ndjson_reader	 r;
	static char		 chunk[65536];
	char			*room;
	size_t			 gn = 0, off, take, roomlen;

	ndjson_reader_init(&r, 1 << 20, 0);
	for (off = 0; off < n; off += take) {
		take = 1 + rng(sizeof chunk);
		if (take > n - off)
			take = n - off;
		if ((room = ndjson_reader_room(&r, take, &roomlen)) != NULL) {
			take = roomlen;
			memcpy(room, data + off, take);
			ndjson_feed_room(&r, take, cb, arg);
		} else {
			memcpy(chunk, data + off, take);
			ndjson_feed(&r, chunk, take, cb, arg);
		}
		gn += drain_pipe(fds[0], got + gn, cap - gn);
	}
	ndjson_finish(&r, cb, arg);
	ndjson_reader_free(&r);
	return gn;
}

/* Write queue q to the pipe fds to its end; returns the bytes drained. */
static size_t
flush_through(struct ndjson_queue *q, int fds[2], char *got, size_t cap)
{
	size_t	gn = 0;
	int	rc;

	while ((rc = ndjson_queue_flush(q, fds[1])) == 1)
		gn += drain_pipe(fds[0], got + gn, cap - gn);
	assert_int_equal(rc, 0);
	return gn + drain_pipe(fds[0], got + gn, cap - gn);
}

/*
 * The long-line tests' lines: what is fed (data, n bytes), what must come
 * out (want, wn bytes), where it is read back (got), and the nonblocking
 * pipe between.
 */
struct long_io {
	char	*data, *want, *got;
	size_t	 n, wn, cap;
	int	 fds[2];
};

/* Make a long_io of 8 MiB buffers and its pipe. */
static void
long_io_open(struct long_io *io)
{
	io->cap = 8 << 20;
	io->n = io->wn = 0;
	io->data = malloc(io->cap);
	io->want = malloc(io->cap);
	io->got = malloc(io->cap);
	assert_non_null(io->data);
	assert_non_null(io->want);
	assert_non_null(io->got);
	assert_int_equal(pipe(io->fds), 0);
	assert_int_equal(util_set_nonblock(io->fds[0], 1), 0);
	assert_int_equal(util_set_nonblock(io->fds[1], 1), 0);
}

/* Add a random line of len letters, ended by "\r\n" when cr, else "\n". */
static void
long_io_line(struct long_io *io, size_t len, int cr)
{
	size_t	k;

	for (k = 0; k < len; k++)
		io->data[io->n + k] = (char)('a' + rng(26));
	memcpy(io->want + io->wn, io->data + io->n, len);
	io->wn += len;
	io->want[io->wn++] = '\n';
	io->n += len;
	if (cr)
		io->data[io->n++] = '\r';
	io->data[io->n++] = '\n';
}

/* Close a long_io's pipe and free its buffers. */
static void
long_io_close(struct long_io *io)
{
	close(io->fds[0]);
	close(io->fds[1]);
	free(io->data);
	free(io->want);
	free(io->got);
}

/*
 * A queue takes over the buffer of a long line read into the reader's
 * room instead of copying it, and gives it back once written: written
 * or dropped while the line is handled, with a "\r\n" ending, with the
 * next lines in the same buffer, every byte arrives as it was sent.
 */
static void
test_room_queue_takes_line(void **state)
{
	struct room_out		 o;
	struct long_io		 io;
	size_t			 gn, len, i;

	long_io_open(&io);
	rng_state = 3;
	for (i = 0; i < 40; i++) {
		len = i % 4 == 3 ? 1 + rng(100) : 40000 + rng(200000);
		long_io_line(&io, len, i % 5 == 1);
	}
	memset(&o, 0, sizeof o);
	ndjson_queue_init(&o.q, 0, 1 << 30);
	ndjson_queue_init(&o.q2, 0, 1 << 30);
	o.fd = io.fds[1];
	gn = feed_through(io.data, io.n, room_out_line, &o, io.fds, io.got,
	    io.cap);
	gn += flush_through(&o.q, io.fds, io.got + gn, io.cap - gn);
	assert_int_equal(o.n, 40);
	assert_int_equal(gn, io.wn);
	assert_memory_equal(io.got, io.want, io.wn);
	ndjson_queue_free(&o.q);
	ndjson_queue_free(&o.q2);
	long_io_close(&io);
}

/* Where test_queue_shared_line's callback writes its lines. */
struct shared_out {
	struct ndjson_queue	 q;	/* every line */
	struct ndjson_queue	 q2;	/* every line too, dropped often */
	struct ndjson_buf	*kept[4]; /* owners that let go later */
	int			 fd;
	size_t			 n;
	size_t			 taken;	/* lines that were the reader's buffer */
};

/*
 * Keep a long line as a request does (a shared line, the reader's buffer
 * when it can be), queue it by reference to two queues and short lines
 * as copies; the owner lets go at once, or some lines later, the queues
 * are written or dropped meanwhile.
 */
static void
shared_out_line(void *arg, enum ndjson_kind kind, char *line, size_t len,
    size_t extra)
{
	struct shared_out	*o = arg;
	struct ndjson_buf	*b;
	size_t			 k;

	(void)extra;
	assert_int_equal(kind, NDJSON_LINE);
	if (len < 1024) {
		ndjson_queue_line(&o->q, line, len);
		ndjson_queue_line(&o->q2, line, len);
	} else {
		b = ndjson_buf_new(line, len);
		assert_memory_equal(b->p, line, len);
		assert_int_equal(b->p[len], '\0');
		assert_true(b->cap >= len + 1);
		o->taken += b->taken;
		ndjson_buf_offer(b, 1);
		ndjson_queue_line(&o->q, b->p, b->len);
		ndjson_queue_line(&o->q2, b->p, b->len);
		ndjson_buf_offer(NULL, 0);
		/* Refer to it, not copy it: the queue holds its capacity. */
		assert_int_equal(b->refs, 3);
		k = o->n % 4;
		ndjson_buf_put(o->kept[k]);
		o->kept[k] = NULL;
		if (o->n % 3 == 0)
			ndjson_buf_put(b);	/* its request ended at once */
		else
			o->kept[k] = b;
	}
	if (o->n % 3 == 1)
		(void)ndjson_queue_flush(&o->q, o->fd);
	if (o->n % 2 == 0)
		ndjson_queue_free(&o->q2);
	o->n++;
}

/*
 * A long line shared by its owner and the queues it is written to
 * (ndjson_buf) arrives whole and in order among copied lines, however
 * the pipe takes it (a line's newline written apart from it), whoever
 * lets go first; the reader's buffer is the line's when it was read in
 * place.  Under the sanitizers, a buffer freed while still queued fails.
 */
static void
test_queue_shared_line(void **state)
{
	struct shared_out	 o;
	struct long_io		 io;
	size_t			 gn, len, i;

	long_io_open(&io);
	rng_state = 5;
	for (i = 0; i < 60; i++) {
		len = i % 3 == 2 ? 1 + rng(100) : i % 7 == 0 ?
		    1024 + rng(4000) : 40000 + rng(200000);
		long_io_line(&io, len, i % 5 == 1);
	}
	memset(&o, 0, sizeof o);
	ndjson_queue_init(&o.q, 0, 1 << 30);
	ndjson_queue_init(&o.q2, 0, 1 << 30);
	o.fd = io.fds[1];
	/* A pipe that takes what it takes: newlines written apart. */
	gn = feed_through(io.data, io.n, shared_out_line, &o, io.fds, io.got,
	    io.cap);
	/* The owners let go of the lines still kept before they are out. */
	for (i = 0; i < 4; i++)
		ndjson_buf_put(o.kept[i]);
	gn += flush_through(&o.q, io.fds, io.got + gn, io.cap - gn);
	assert_int_equal(o.n, 60);
	assert_true(o.taken > 0);
	assert_int_equal(gn, io.wn);
	assert_memory_equal(io.got, io.want, io.wn);
	ndjson_queue_free(&o.q);
	ndjson_queue_free(&o.q2);
	long_io_close(&io);
}

/* Forward lines shorter than below to a queue nobody writes. */
struct held_out {
	struct ndjson_queue	q;
	size_t			below;
};

static void
held_out_line(void *arg, enum ndjson_kind kind, char *line, size_t len,
    size_t extra)
{
	struct held_out	*o = arg;

	(void)extra;
	if (kind == NDJSON_LINE && len < o->below)
		ndjson_queue_line(&o->q, line, len);
}

/* Feed as chan_read_cb does: into the reader's room when it offers it. */
static void
held_feed(struct ndjson_reader *r, const char *data, size_t n,
    struct held_out *o)
{
	static char	 chunk[65536];
	char		*room;
	size_t		 roomlen, take, off;

	for (off = 0; off < n; off += take) {
		take = n - off < sizeof chunk ? n - off : sizeof chunk;
		if ((room = ndjson_reader_room(r, take, &roomlen)) != NULL) {
			take = roomlen;
			memcpy(room, data + off, take);
			ndjson_feed_room(r, take, held_out_line, o);
		} else {
			memcpy(chunk, data + off, take);
			ndjson_feed(r, chunk, take, held_out_line, o);
		}
	}
}

/*
 * A queue holds at most twice what it counts, plus one partly filled
 * chunk, however long lines arrive: a line of 33 KB read in two parts
 * (its buffer grown to 128 KiB), or after a 1 MiB line that was not
 * forwarded left its buffer for the next long line; and a reader never
 * takes a kept buffer bigger than its own limit allows.
 */
static void
test_queue_holds_what_it_counts(void **state)
{
	struct ndjson_reader	 r, small;
	struct held_out		 o;
	char			*big, *s;
	size_t			 i, bign = (1 << 20) - 100, sn = 33000;

	(void)state;
	big = malloc(bign + 1);
	s = malloc(sn + 1);
	assert_non_null(big);
	assert_non_null(s);
	memset(big, 'b', bign);
	big[bign] = '\n';
	memset(s, 's', sn);
	s[sn] = '\n';
	for (int spares = 0; spares < 2; spares++) {
		memset(&o, 0, sizeof o);
		ndjson_queue_init(&o.q, 0, 1U << 30);
		o.below = 65536;
		ndjson_reader_init(&r, 1 << 20, 0);
		for (i = 0; i < 32; i++) {
			if (spares)
				held_feed(&r, big, bign + 1, &o);
			held_feed(&r, s, 32800, &o);
			held_feed(&r, s + 32800, sn + 1 - 32800, &o);
		}
		assert_int_equal(ndjson_queue_len(&o.q), 32 * (sn + 1));
		assert_true(ndjson_queue_held(&o.q) <=
		    2 * ndjson_queue_len(&o.q) + 65536 + 1024);
		ndjson_queue_free(&o.q);
		ndjson_reader_free(&r);
	}
	/* A big line's buffer kept; a reader of at most 1 KiB does not take it. */
	memset(&o, 0, sizeof o);
	ndjson_queue_init(&o.q, 0, 1U << 30);
	ndjson_reader_init(&r, 4 << 20, 0);
	held_feed(&r, big, bign + 1, &o);
	ndjson_reader_init(&small, 1024, 0);
	held_feed(&small, s, 900, &o);
	assert_true(small.cap <= 2 * (1024 + 2));
	ndjson_reader_free(&small);
	ndjson_reader_free(&r);
	ndjson_queue_free(&o.q);
	free(big);
	free(s);
}

/* The stopping callback: record, then stop the chunk after each line. */
struct stopper {
	struct ndjson_reader	*r;
	struct events		*e;
};

static void
record_stop(void *arg, enum ndjson_kind kind, char *line, size_t len,
    size_t extra)
{
	struct stopper	*st = arg;

	record(st->e, kind, line, len, extra);
	ndjson_reader_stop(st->r);
}

/*
 * A reader stopped after each line hands out one line per feed or
 * resume, in order, across chunks: what the chunk held after the stop
 * (whole lines, a too-long line, a partial line) waits in the reader.
 */
static void
test_stop_and_resume(void **state)
{
	struct ndjson_reader	 r;
	struct events		 e = { 0 };
	struct stopper		 st = { &r, &e };
	char			 a[] = "one\ntwo\n0123456789abc\nthr";
	char			 b[] = "ee\nfour\n";
	size_t			 n;

	ndjson_reader_init(&r, 8, 0);
	ndjson_feed(&r, a, sizeof a - 1, record_stop, &st);
	assert_int_equal(e.n, 1);
	assert_line(&e, 0, "one", 3);
	assert_true(ndjson_reader_held(&r));
	assert_true(ndjson_reader_pending(&r));
	ndjson_resume(&r, record_stop, &st);
	assert_int_equal(e.n, 2);
	assert_line(&e, 1, "two", 3);
	ndjson_resume(&r, record_stop, &st);
	assert_int_equal(e.n, 3);
	assert_int_equal(e.ev[2].kind, NDJSON_TOOLONG);
	assert_int_equal(e.ev[2].arg, 13);
	/* Only the partial "thr" is left: held no more, still pending. */
	ndjson_resume(&r, record_stop, &st);
	assert_int_equal(e.n, 3);
	assert_false(ndjson_reader_held(&r));
	assert_true(ndjson_reader_pending(&r));
	ndjson_feed(&r, b, sizeof b - 1, record_stop, &st);
	assert_int_equal(e.n, 4);
	assert_line(&e, 3, "three", 5);
	assert_true(ndjson_reader_held(&r));
	ndjson_resume(&r, record_stop, &st);
	assert_line(&e, 4, "four", 4);
	assert_false(ndjson_reader_held(&r));
	assert_false(ndjson_reader_pending(&r));
	/* Resuming with nothing held hands out nothing. */
	n = e.n;
	ndjson_resume(&r, record_stop, &st);
	assert_int_equal(e.n, n);
	ndjson_reader_free(&r);
	events_free(&e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_split_point),
		cmocka_unit_test(test_every_pair_of_split_points),
		cmocka_unit_test(test_random_chunkings),
		cmocka_unit_test(test_many_lines_in_one_chunk),
		cmocka_unit_test(test_line_split_across_many_reads),
		cmocka_unit_test(test_crlf_and_empty_lines),
		cmocka_unit_test(test_line_exactly_at_max),
		cmocka_unit_test(test_line_over_max_dropped),
		cmocka_unit_test(test_over_max_size_excludes_cr),
		cmocka_unit_test(test_nul_byte_reported),
		cmocka_unit_test(test_nul_every_offset),
		cmocka_unit_test(test_stop_every_byte),
		cmocka_unit_test(test_finish_delivers_last_line),
		cmocka_unit_test(test_head_only_while_dropping),
		cmocka_unit_test(test_finish_reports_long_last_line),
		cmocka_unit_test(test_endless_line_not_held),
		cmocka_unit_test(test_truncate_mode),
		cmocka_unit_test(test_stop_and_resume),
		cmocka_unit_test(test_writer_watermarks),
		cmocka_unit_test(test_writer_partial_writes),
		cmocka_unit_test(test_writer_broken_pipe),
		cmocka_unit_test(test_writer_releases_big_buffer),
		cmocka_unit_test(test_queue_watermarks),
		cmocka_unit_test(test_queue_partial_writes),
		cmocka_unit_test(test_queue_broken_pipe),
		cmocka_unit_test(test_room_same_lines),
		cmocka_unit_test(test_room_queue_takes_line),
		cmocka_unit_test(test_queue_shared_line),
		cmocka_unit_test(test_queue_holds_what_it_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
