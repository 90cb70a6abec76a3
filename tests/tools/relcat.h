/*
 * relcat.h: the catalogue of hostile lines shared by relgen (corral
 * serve's stdin) and relagent (an agent's stdout), for the rel-hostile-*
 * regress scripts.
 *
 * Every entry is one line (no '\n' inside) that corral must refuse with
 * exactly one error: invalid JSON of every kind, or valid JSON that is no
 * envelope.  None is a JSON-RPC frame and none is empty, so each one gets
 * exactly one error line on corral serve, or one notice to an agent.
 */

#ifndef RELCAT_H
#define RELCAT_H

#include <stdlib.h>
#include <string.h>

/* A line of the catalogue: its bytes and length (it may hold NUL). */
struct relcat_line {
	const char	*name;
	char		*data;
	size_t		 len;
};

#define RELCAT_MAX	64
#define RELCAT_DEEP	100000	/* nesting depth of the deep entries */

static struct relcat_line	relcat[RELCAT_MAX];
static size_t			relcat_n;

/* Add a line given as a string of known length. */
static void
relcat_addn(const char *name, const char *s, size_t len)
{
	struct relcat_line	*l = &relcat[relcat_n++];

	l->name = name;
	l->data = malloc(len + 1);
	if (l->data == NULL)
		abort();
	memcpy(l->data, s, len);
	l->data[len] = '\0';
	l->len = len;
}

static void
relcat_add(const char *name, const char *s)
{
	relcat_addn(name, s, strlen(s));
}

/* Add open repeated depth times, then close repeated depth times. */
static void
relcat_nest(const char *name, const char *open, const char *mid,
    const char *close, size_t depth)
{
	size_t	ol = strlen(open), ml = strlen(mid), cl = strlen(close), i;
	char	*buf, *p;

	buf = malloc(depth * (ol + cl) + ml + 1);
	if (buf == NULL)
		abort();
	p = buf;
	for (i = 0; i < depth; i++, p += ol)
		memcpy(p, open, ol);
	memcpy(p, mid, ml);
	p += ml;
	for (i = 0; i < depth; i++, p += cl)
		memcpy(p, close, cl);
	relcat_addn(name, buf, (size_t)(p - buf));
	free(buf);
}

/* Binary garbage: len pseudo-random bytes, none of them '\n'. */
static void
relcat_garbage(const char *name, size_t len, unsigned int seed)
{
	char	*buf;
	size_t	 i;

	buf = malloc(len);
	if (buf == NULL)
		abort();
	for (i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		buf[i] = (char)((seed >> 16) & 0xff);
		if (buf[i] == '\n')
			buf[i] = '\x01';
	}
	/* Never a line that is empty once a final '\r' is dropped. */
	buf[0] = '\x80';
	relcat_addn(name, buf, len);
	free(buf);
}

#define ENV_HEAD "{\"protocol\":\"multiagent-1.0\",\"role\":\"user\"," \
	"\"intent\":\"plan\","
#define ENV_CONTENT "\"content\":{\"type\":\"text\"}"

/* Build the catalogue (once). */
static void
relcat_init(void)
{
	char	big[12000];

	if (relcat_n > 0)
		return;
	/* Truncated. */
	relcat_add("truncated-object", "{\"protocol\":\"multiagent-1.0\",\"role\":\"user\"");
	relcat_add("truncated-string", "{\"protocol\":\"multiagent-1.0\",\"ta");
	relcat_add("truncated-escape", ENV_HEAD "\"task\":\"a\\u12");
	relcat_add("open-brace", "{");
	/* Not objects, or not envelopes. */
	relcat_add("array", "[1,2,3]");
	relcat_add("string", "\"just a string\"");
	relcat_add("number", "42");
	relcat_add("null", "null");
	relcat_add("true", "true");
	relcat_add("empty-object", "{}");
	/* Wrong types. */
	relcat_add("protocol-number", "{\"protocol\":1,\"role\":\"user\",\"intent\":\"plan\",\"task\":\"t\"," ENV_CONTENT "}");
	relcat_add("task-number", ENV_HEAD "\"task\":5," ENV_CONTENT "}");
	relcat_add("content-string", ENV_HEAD "\"task\":\"t\",\"content\":\"text\"}");
	relcat_add("role-unknown", "{\"protocol\":\"multiagent-1.0\",\"role\":\"robot\",\"intent\":\"plan\",\"task\":\"t\"," ENV_CONTENT "}");
	relcat_add("intent-unknown", "{\"protocol\":\"multiagent-1.0\",\"role\":\"user\",\"intent\":\"dance\",\"task\":\"t\"," ENV_CONTENT "}");
	relcat_add("priority-bad", ENV_HEAD "\"task\":\"t\"," ENV_CONTENT ",\"priority\":9}");
	relcat_add("ttl-negative", ENV_HEAD "\"task\":\"t\"," ENV_CONTENT ",\"ttl_ms\":-5}");
	relcat_add("score-too-big", ENV_HEAD "\"task\":\"t\"," ENV_CONTENT ",\"confidence\":{\"score\":2}}");
	relcat_add("trace-id-too-long", ENV_HEAD "\"task\":\"t\"," ENV_CONTENT ",\"trace\":{\"id\":\"0123456789012345678901234567890123456789012345678901234567890123\"}}");
	relcat_add("timestamp-bad", ENV_HEAD "\"task\":\"t\"," ENV_CONTENT ",\"timestamp\":\"yesterday\"}");
	/* Deep nesting. */
	relcat_nest("deep-arrays", "[", "", "]", RELCAT_DEEP);
	relcat_nest("deep-objects", "{\"a\":", "1", "}", RELCAT_DEEP);
	relcat_nest("deep-unclosed", "[", "", "", RELCAT_DEEP);
	/* Huge numbers. */
	relcat_add("real-overflow", ENV_HEAD "\"task\":\"t\",\"content\":{\"type\":\"text\",\"data\":1e999999}}");
	relcat_add("int-overflow", ENV_HEAD "\"task\":\"t\",\"content\":{\"type\":\"text\",\"data\":123456789012345678901234567890}}");
	relcat_add("neg-int-overflow", ENV_HEAD "\"task\":\"t\",\"content\":{\"type\":\"text\",\"data\":-9223372036854775809}}");
	memset(big, '9', sizeof big);
	memcpy(big, "{\"n\":", 5);
	big[sizeof big - 2] = '9';
	big[sizeof big - 1] = '}';
	relcat_addn("digits-12k", big, sizeof big);
	relcat_add("number-syntax", ENV_HEAD "\"task\":\"t\",\"content\":{\"type\":\"text\",\"data\":01}}");
	/* Invalid UTF-8. */
	relcat_add("utf8-ff", ENV_HEAD "\"task\":\"t\xff\xfe\"," ENV_CONTENT "}");
	relcat_add("utf8-overlong", ENV_HEAD "\"task\":\"\xc0\xaf\"," ENV_CONTENT "}");
	relcat_add("utf8-truncated", ENV_HEAD "\"task\":\"\xe2\x82\"," ENV_CONTENT "}");
	relcat_add("utf8-surrogate", ENV_HEAD "\"task\":\"\xed\xa0\x80\"," ENV_CONTENT "}");
	relcat_add("utf8-in-key", "{\"\xff\":1}");
	/* Lone surrogates. */
	relcat_add("lone-high", ENV_HEAD "\"task\":\"\\ud800\"," ENV_CONTENT "}");
	relcat_add("lone-low", ENV_HEAD "\"task\":\"\\udc00\"," ENV_CONTENT "}");
	relcat_add("high-then-ascii", ENV_HEAD "\"task\":\"\\ud800\\u0041\"," ENV_CONTENT "}");
	/* NUL bytes. */
	relcat_addn("raw-nul", ENV_HEAD "\"task\":\"a\0b\"," ENV_CONTENT "}",
	    sizeof(ENV_HEAD "\"task\":\"a\0b\"," ENV_CONTENT "}") - 1);
	relcat_addn("nul-first", "\0{}", 3);
	relcat_add("escaped-nul", ENV_HEAD "\"task\":\"\\u0000\"," ENV_CONTENT "}");
	/* Duplicate keys. */
	relcat_add("dup-top", "{\"protocol\":\"multiagent-1.0\",\"protocol\":\"multiagent-1.0\",\"role\":\"user\",\"intent\":\"plan\",\"task\":\"t\"," ENV_CONTENT "}");
	relcat_add("dup-nested", ENV_HEAD "\"task\":\"t\",\"content\":{\"type\":\"text\",\"type\":\"text\"}}");
	relcat_add("dup-escaped", "{\"a\":1,\"\\u0061\":2}");
	/* Other syntax. */
	relcat_add("trailing-garbage", ENV_HEAD "\"task\":\"t\"," ENV_CONTENT "} x");
	relcat_add("two-values", "{}{}");
	relcat_add("control-char", ENV_HEAD "\"task\":\"a\x01" "b\"," ENV_CONTENT "}");
	relcat_add("bad-escape", ENV_HEAD "\"task\":\"\\q\"," ENV_CONTENT "}");
	relcat_add("single-quotes", "{'protocol':'multiagent-1.0'}");
	relcat_add("trailing-comma", "{\"a\":1,}");
	relcat_add("nan", "{\"a\":NaN}");
	relcat_add("comment", "{\"a\":1} // no");
	/* Binary garbage. */
	relcat_garbage("garbage-4k", 4096, 1);
	relcat_garbage("garbage-64k", 65536, 2);
}

#endif
