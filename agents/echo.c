/*
 * echo: answers every request with an envelope that echoes its content.
 *
 * The benchmarks (tests/bench/) run it behind corral and behind a raw
 * relay, so it has to cost as little as possible: it finds the few
 * top-level members it needs with a structural skip (no tree, no
 * validation), splices the reply from the request's own bytes, and batches
 * its output, flushing only when its input pipe has run dry.  It uses libc
 * only.
 *
 *   echo [--low N] [--handshake] [--spawn D [--child NAME]]
 *
 * Every Nth reply (default 10; 0 never) reports confidence 0.3 instead of
 * 0.9, so corral sends it for reflection.  --handshake sends map/connect
 * first, for agents configured with `ready: handshake`.  Lines with
 * "jsonrpc" get no answer except a ping; notices, child results and
 * messages get none either.  --spawn D starts a chain of D descendants for
 * the benchmark's sub-agent tree: the agent spawns one visible child of
 * entry NAME (default node) that is kept after its task, the task's text
 * "spawn:D-1" tells that child to do the same, and so on down to 0.
 */

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ECHO_READ_MIN	(1024 * 1024)
#define ECHO_FLUSH	(256 * 1024)

struct span {
	const char	*p;	/* NULL when absent */
	size_t		 len;
};

static char		*in, *out;
static size_t		 incap, inhead, intail, outcap, outlen;
static unsigned long	 low_every = 10, nreplies;
static char		 agent_id[48] = "echo";
static char		 stamp[32];
static time_t		 stamp_sec = -1;
static const char	*child_entry = "node";

/* Write everything buffered, or exit if stdout is gone. */
static void
out_flush(void)
{
	size_t	off = 0;
	ssize_t	n;

	while (off < outlen) {
		n = write(STDOUT_FILENO, out + off, outlen - off);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			_exit(errno == EPIPE ? 0 : 1);
		}
		off += (size_t)n;
	}
	outlen = 0;
}

/* Append bytes to the output buffer. */
static void
out_add(const void *p, size_t n)
{
	if (outlen + n > outcap) {
		while (outlen + n > outcap)
			outcap = outcap ? outcap * 2 : ECHO_FLUSH * 2;
		if ((out = realloc(out, outcap)) == NULL)
			_exit(1);
	}
	memcpy(out + outlen, p, n);
	outlen += n;
}

#define OUT_LIT(s)	out_add(s, sizeof(s) - 1)

/* Return the end of the string that starts at the quote p, or NULL. */
static const char *
skip_string(const char *p, const char *end)
{
	const char	*q, *b;

	for (p++; p < end; p = q + 1) {
		if ((q = memchr(p, '"', (size_t)(end - p))) == NULL)
			return NULL;
		/* Escaped only if an odd number of backslashes precede it. */
		for (b = q; b > p && b[-1] == '\\'; b--)
			;
		if (((q - b) & 1) == 0)
			return q + 1;
	}
	return NULL;
}

/* Return the end of the JSON value at p (which starts with no blank). */
static const char *
skip_value(const char *p, const char *end)
{
	int	depth = 0;

	if (p >= end)
		return NULL;
	if (*p == '"')
		return skip_string(p, end);
	if (*p != '{' && *p != '[') {
		while (p < end && *p != ',' && *p != '}' && *p != ']' &&
		    *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
			p++;
		return p;
	}
	for (; p < end; p++) {
		switch (*p) {
		case '"':
			if ((p = skip_string(p, end)) == NULL)
				return NULL;
			p--;
			break;
		case '{':
		case '[':
			depth++;
			break;
		case '}':
		case ']':
			if (--depth == 0)
				return p + 1;
			break;
		}
	}
	return NULL;
}

/* Skip blanks. */
static const char *
skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

/*
 * Walk the members of the object at p, filling vals[i] for each key in
 * keys (raw, quoted, e.g. "\"id\"").  Returns -1 if p is not an object
 * this scanner can walk.
 */
static int
members(const char *p, const char *end, const char *const *keys,
    struct span *vals, int nkeys)
{
	const char	*k, *ke, *v, *ve;
	int		 i;

	for (i = 0; i < nkeys; i++)
		vals[i].p = NULL;
	p = skip_ws(p, end);
	if (p >= end || *p != '{')
		return -1;
	p = skip_ws(p + 1, end);
	if (p < end && *p == '}')
		return 0;
	while (p < end) {
		if (*p != '"' || (ke = skip_string(p, end)) == NULL)
			return -1;
		k = p;
		p = skip_ws(ke, end);
		if (p >= end || *p != ':')
			return -1;
		v = skip_ws(p + 1, end);
		if ((ve = skip_value(v, end)) == NULL)
			return -1;
		for (i = 0; i < nkeys; i++)
			if ((size_t)(ke - k) == strlen(keys[i]) &&
			    memcmp(k, keys[i], (size_t)(ke - k)) == 0) {
				vals[i].p = v;
				vals[i].len = (size_t)(ve - v);
			}
		p = skip_ws(ve, end);
		if (p < end && *p == ',') {
			p = skip_ws(p + 1, end);
			continue;
		}
		if (p < end && *p == '}')
			return 0;
		return -1;
	}
	return -1;
}

/* Return nonzero if span s is exactly the JSON string lit (quoted). */
static int
span_is(struct span s, const char *lit)
{
	return s.p != NULL && s.len == strlen(lit) &&
	    memcmp(s.p, lit, s.len) == 0;
}

/* Refresh the cached RFC 3339 timestamp once a second. */
static const char *
timestamp(void)
{
	struct timespec	ts;
	struct tm	tm;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	if (ts.tv_sec != stamp_sec) {
		stamp_sec = ts.tv_sec;
		gmtime_r(&stamp_sec, &tm);
		strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
	}
	return stamp;
}

/* Answer a control frame: only a ping with an id gets a response. */
static void
control(const struct span *v)
{
	if (!span_is(v[1], "\"ping\"") || v[2].p == NULL)
		return;
	OUT_LIT("{\"jsonrpc\":\"2.0\",\"id\":");
	out_add(v[2].p, v[2].len);
	OUT_LIT(",\"result\":{}}\n");
}

/* Spawn one visible child that is kept, told to spawn depth more. */
static void
spawn_child(unsigned long depth)
{
	char	buf[96];
	int	n;

	OUT_LIT("{\"jsonrpc\":\"2.0\",\"id\":\"spawn\",\"method\":"
	    "\"map/agents/spawn\",\"params\":{\"agent\":\"");
	out_add(child_entry, strlen(child_entry));
	OUT_LIT("\",\"keep\":true,\"visible\":true,\"task\":{\"protocol\":"
	    "\"multiagent-1.0\",\"role\":\"agent\",\"intent\":\"execute\","
	    "\"task\":\"grow the tree\",\"content\":{\"type\":\"text\",");
	n = snprintf(buf, sizeof buf, "\"text\":\"spawn:%lu\"}}}}\n", depth);
	out_add(buf, (size_t)n);
	out_flush();
}

/* A task whose text is "spawn:D" asks for D more levels below us. */
static void
spawn_asked(struct span content)
{
	static const char	mark[] = "\"text\":\"spawn:";
	const char		*p;
	unsigned long		 d;

	if (content.p == NULL || (p = memmem(content.p, content.len, mark,
	    sizeof mark - 1)) == NULL)
		return;
	d = strtoul(p + sizeof mark - 1, NULL, 10);
	if (d > 0)
		spawn_child(d - 1);
}

/* Handle one line (without its newline). */
static void
line(const char *p, size_t len)
{
	static const char *const top[] = { "\"jsonrpc\"", "\"method\"",
	    "\"id\"", "\"intent\"", "\"content\"", "\"trace\"",
	    "\"corral\"" };
	static const char *const kind[] = { "\"kind\"" };
	static const char *const tid[] = { "\"id\"" };
	const char	*end = p + len, *ts;
	struct span	 v[7], k = { NULL, 0 }, t = { NULL, 0 };
	char		 buf[96];
	int		 n;

	if (members(p, end, top, v, 7) != 0)
		return;
	if (v[0].p != NULL) {
		control(v);
		return;
	}
	if (v[6].p != NULL && members(v[6].p, v[6].p + v[6].len, kind, &k,
	    1) == 0 && (span_is(k, "\"notice\"") ||
	    span_is(k, "\"child_result\"") || span_is(k, "\"message\"")))
		return;
	if (span_is(k, "\"task\""))
		spawn_asked(v[4]);
	t.p = NULL;
	if (v[5].p != NULL)
		(void)members(v[5].p, v[5].p + v[5].len, tid, &t, 1);

	nreplies++;
	OUT_LIT("{\"protocol\":\"multiagent-1.0\",\"role\":\"agent\","
	    "\"agent\":{\"id\":\"");
	out_add(agent_id, strlen(agent_id));
	OUT_LIT("\",\"name\":\"echo\",\"model\":\"echo\"},\"timestamp\":\"");
	ts = timestamp();
	out_add(ts, strlen(ts));
	OUT_LIT("\",\"intent\":");
	if (v[3].p != NULL)
		out_add(v[3].p, v[3].len);
	else
		OUT_LIT("\"execute\"");
	OUT_LIT(",\"task\":\"echo\",\"content\":");
	if (v[4].p != NULL)
		out_add(v[4].p, v[4].len);
	else
		OUT_LIT("{\"type\":\"text\",\"text\":\"\"}");
	if (low_every > 0 && nreplies % low_every == 0)
		OUT_LIT(",\"confidence\":{\"score\":0.3}");
	else
		OUT_LIT(",\"confidence\":{\"score\":0.9}");
	OUT_LIT(",\"trace\":{");
	if (t.p != NULL && t.len > 0 && *t.p == '"') {
		OUT_LIT("\"parents\":[");
		out_add(t.p, t.len);
		OUT_LIT("],");
	}
	n = snprintf(buf, sizeof buf, "\"id\":\"%s-%lu\"}}\n", agent_id,
	    nreplies);
	out_add(buf, (size_t)n);
	if (outlen >= ECHO_FLUSH)
		out_flush();
}

/* Return nonzero if stdin has bytes waiting. */
static int
input_waiting(void)
{
	struct pollfd	pfd = { STDIN_FILENO, POLLIN, 0 };

	return poll(&pfd, 1, 0) == 1;
}

/* Keep [A-Za-z0-9._-] of s, at most 40 bytes: it goes into JSON as is. */
static void
set_agent_id(const char *s)
{
	size_t	n = 0;

	for (; *s != '\0' && n < 40; s++)
		if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' ||
		    *s == '-')
			agent_id[n++] = *s;
	agent_id[n] = '\0';
	if (n == 0)
		snprintf(agent_id, sizeof agent_id, "echo%ld", (long)getpid());
}

int
main(int argc, char **argv)
{
	const char	*e, *nl;
	ssize_t		 n;
	size_t		 room, from;
	unsigned long	 spawn = 0;
	int		 i, handshake = 0;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--low") == 0 && i + 1 < argc)
			low_every = strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--handshake") == 0)
			handshake = 1;
		else if (strcmp(argv[i], "--spawn") == 0 && i + 1 < argc)
			spawn = strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--child") == 0 && i + 1 < argc)
			child_entry = argv[++i];
		else {
			fprintf(stderr, "usage: echo [--low N] [--handshake] "
			    "[--spawn D [--child NAME]]\n");
			return 2;
		}
	}
	if ((e = getenv("CORRAL_AGENT_ID")) != NULL)
		set_agent_id(e);
	else
		set_agent_id("");
	if (handshake) {
		OUT_LIT("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"map/connect\","
		    "\"params\":{\"name\":\"echo\"}}\n");
		out_flush();
	}
	if (spawn > 0)
		spawn_child(spawn - 1);

	incap = ECHO_READ_MIN;
	if ((in = malloc(incap)) == NULL)
		return 1;
	for (;;) {
		/* Keep at least ECHO_READ_MIN free; grow for long lines. */
		if (inhead > 0 && (inhead == intail || incap - intail <
		    ECHO_READ_MIN)) {
			memmove(in, in + inhead, intail - inhead);
			intail -= inhead;
			inhead = 0;
		}
		if (incap - intail < ECHO_READ_MIN / 2) {
			incap *= 2;
			if ((in = realloc(in, incap)) == NULL)
				return 1;
		}
		room = incap - intail;
		n = read(STDIN_FILENO, in + intail, room);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (n == 0)
			break;
		/* Only the new bytes can hold the next newline. */
		from = intail;
		intail += (size_t)n;
		while ((nl = memchr(in + from, '\n', intail - from)) != NULL) {
			line(in + inhead, (size_t)(nl - (in + inhead)));
			from = inhead = (size_t)(nl - in) + 1;
		}
		/* A short read drained the pipe; else ask before flushing. */
		if (outlen > 0 && ((size_t)n < room || !input_waiting()))
			out_flush();
	}
	if (intail > inhead)
		line(in + inhead, intail - inhead);
	out_flush();
	return 0;
}
