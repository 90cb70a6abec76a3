/*
 * Stateful fuzzing of the engine: scripted agents and a corral serve
 * client drive the real engine, routing, lifecycle, sub-agent trees and
 * control plane, in process.
 *
 * The rule held: no input from an agent or a client reaches fatal or
 * abort, and every accepted request ends in exactly one outcome.
 *
 * The input is a script.  Its first byte picks one of five workflows;
 * then come steps, each an opcode byte, a length byte and that many bytes
 * of parameters (a parameter read past them is 0, its default).  The
 * opcode's letter names it (upper or lower case; the other byte values
 * stand for the common steps):
 *
 *   C  the client writes an envelope (built from the parameters)
 *   J  the client writes a JSON-RPC frame
 *   K  the client writes raw bytes
 *   R  an agent replies to one of its requests (an envelope, or its
 *      dialect's answer)
 *   A  an agent writes a control frame (spawn, send, stop, get, ...)
 *   W  an agent writes raw bytes on its stdout (a dialect agent: raw
 *      bytes, or one of its dialect's messages)
 *   E  an agent's process exits (status, and which comes first)
 *   B  trouble: a pipe closes, SIGSTOP/SIGCONT, stubbornness, a stderr
 *      line, a handshake
 *   T  a timer runs out (any active timer of an agent, request or job)
 *   L  the loop runs once without blocking
 *
 * Envelopes are mostly valid, with hostile contents: strings from a
 * dictionary (quotes, backslashes, control characters, multi-byte and
 * invalid UTF-8, \u escapes and lone surrogates, hostile paths, ids of
 * the agents), numbers from a table (huge, negative, out of range), one
 * structural damage now and then.
 *
 * Two agents of the fifth workflow speak other dialects (docs/dialects.md):
 * "bus" the collaboration bus, "am" AgentMessage.  Their R step writes
 * the answer to the request it picks, in their dialect: a bus RESPONSE
 * with its correlationId and a status (SUCCESS, ERROR, TIMEOUT, or any
 * word), an AgentMessage TASK_COMPLETE or TASK_FAILED with its task_id;
 * its kind byte from 0xc0 up makes it another kind instead.  Their W step
 * writes raw bytes when its first byte is below 0x40, else one of the
 * dialect's other kinds (byte % kinds) about the request it picks: bus
 * PUBLISH to a topic, BROADCAST, REQUEST (to corral's routes, an agent,
 * a capability, the registry's find), SUBSCRIBE, UNSUBSCRIBE, REGISTER,
 * HEARTBEAT; AgentMessage TASK_HANDOFF (and its answer), HELP_REQUEST,
 * HELP_RESPONSE, STATUS_UPDATE, ERROR_REPORT, TASK_UPDATE, HEARTBEAT,
 * TASK_ASSIGNMENT, SUBSCRIBE, REGISTRY_QUERY, a publish to a topic.
 * Contents come from the same dictionaries; message ids are new, one of
 * a few (so some are redeliveries) or any string; a damage byte from
 * 0xf0 up breaks the message (not an object, no type or a number, an
 * unknown type, an id, correlation id, priority or destination of the
 * wrong type, the body a string, metadata an array, a key twice, the
 * line cut short).
 *
 * Agents are started the supervisor's way (lifecycle_start), but spawn.c
 * is replaced here: this file defines every function spawn.c exports, so
 * the linker never takes spawn.o from the core library.  A fake process is
 * three pipes and a pid above any pid_max, so the signals corral sends it
 * reach nobody.  The harness plays the process: it reads what corral
 * writes to it, writes its stdout lines into the pipe, and ends it by
 * closing its pipes and handing its exit status to proc_waited, as the
 * child watcher does.  It obeys signals as the kernel would: SIGKILL (the
 * agent is KILLING) ends it, SIGTERM (TERMINATING) too unless the script
 * made it stubborn, and so does EOF on its stdin; a suspended one reports
 * being stopped.  Time passes only when the script says: the loop runs only in
 * an L step, and a timer fires only in a T step (or at the end).
 *
 * After every step: every line corral wrote to an agent or to serve's
 * stdout is JSON (jansson, duplicate keys refused), every envelope among
 * them is valid, every line to a dialect agent that is no JSON-RPC frame
 * is that dialect's message as docs/dialects.md says corral writes it (a
 * bus header with type and messageId, and a body; an AgentMessage's id,
 * timestamp, from, to and type, a payload and metadata), the client gets
 * no requests (notifications map/message and map/event only), every
 * JSON-RPC request got exactly one response, no
 * input got more than one answer, and accepted == replied + errored +
 * expired + live requests.  At the end of the input the supervisor shuts
 * down the real way (supervisor_shutdown, the processes exit as asked,
 * stop timers run out); then no request or job is left, every input line
 * got exactly one line back, every audit-log line is JSON, and
 * LeakSanitizer looks for leaks.
 *
 * The workflows (fz_init): workers (two instances, children with a
 * restart strategy, a circuit breaker), a critic serving reflect, a
 * planner that needs a handshake and has a budget, a catalogue entry to
 * spawn and one whose command is missing; reflection, next_actions,
 * retries without delay, a workspace in a private temporary directory,
 * inline spawns and tree limits.  They differ in their limits, in which
 * routes exist, and in the shutdown order.  The fifth (first byte 4, 9,
 * ...) adds the bus agent (routes retrieve and summarize, capability
 * code-review, topic progress, heartbeats) and the AgentMessage agent
 * (analyze, summarize and finalize, capability analysis, topic news);
 * the live agents are then worker.1, worker.2, critic, planner, bus and
 * am, in that order, for the step's agent byte.
 *
 * The seeds in tests/fuzz/corpus/engine/ are hand-made scripts that
 * reach reflection, next_actions, spawn, map/send, artifacts, restarts,
 * handshakes and retries; those named dialect-* reach the dialect agents
 * (a request to each and its answer, an error and a timeout, a handoff,
 * a help request, publishing, a bus request routed to the AgentMessage
 * agent, the other kinds, redeliveries), and some are findings.  CORRAL_FUZZ_VERBOSE=1 prints every line
 * written either way, with corral's log at -vv:
 *
 *   CORRAL_FUZZ_VERBOSE=1 build-fuzz/fuzz/fuzz_engine -runs=1 FILE
 */

#include <sys/ioctl.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CORRAL_WHITEBOX	/* looks into every module's part of an agent */
#include "corral.h"

#define FZ_MAX_INPUT	(1 << 16)
#define FZ_MAX_STEPS	256
#define FZ_VARIANTS	5
#define FZ_PROCS	48
#define FZ_PID_BASE	0x40000000	/* above any pid_max: nobody's pid */
#define FZ_MEMBERS	20
#define FZ_TIMERS	1024

#define FZ_EXITED(code)		((code) << 8)
#define FZ_STOPPED(sig)		(((sig) << 8) | 0x7f)
#define FZ_CONTINUED		0xffff

#define LIT(w, s)	ndjson_writer_add((w), (s), sizeof(s) - 1)

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* A fake agent process: its ends of the three pipes. */
struct fz_proc {
	int			 used;
	pid_t			 pid;
	int			 in;		/* read end of its stdin */
	int			 out;		/* write end of its stdout */
	int			 err;		/* write end of its stderr */
	int			 exited;	/* its end was played */
	int			 stubborn;	/* ignores SIGTERM and EOF */
	int			 stopped;	/* reported stopped (suspended) */
	int			 stdin_eof;
	int			 dialect;	/* FZ_ENVELOPE, FZ_BUS, FZ_AM */
	struct ndjson_reader	 rd;		/* what corral writes to it */
	struct ndjson_reader	 mirror;	/* what it writes, framed */
	uint64_t		 expect;	/* JSON-RPC requests it made */
	uint64_t		 responses;	/* responses it got */
};

/* A step's parameters: reading past them gives 0, the default. */
struct fz_rd {
	const uint8_t	*p;
	size_t		 n;
};

/* What the harness keeps: across inputs (the workflows) and within one. */
static struct {
	int			 ready;
	int			 verbose;	/* CORRAL_FUZZ_VERBOSE set */
	struct workflow		*wfs[FZ_VARIANTS];
	struct workflow		*wf;
	char			 dir[PATH_MAX];
	char			 audit[PATH_MAX + 16];
	char			 ws[PATH_MAX + 16];
	struct fz_proc		 procs[FZ_PROCS];
	pid_t			 next_pid;
	int			 stdin_w;	/* serve's stdin: we write */
	int			 stdout_r;	/* serve's stdout: we read */
	struct ndjson_reader	 stdout_rd;
	struct peer		 client;
	int			 ending;	/* shutting down: stdin ignored */
	uint64_t		 inputs;	/* client lines owed one answer */
	uint64_t		 outputs;	/* envelopes on serve's stdout */
	uint64_t		 expect;	/* client requests owed a response */
	uint64_t		 responses;
	unsigned int		 rpc_seq;
	struct jscan		*js;
	struct ndjson_writer	 line;		/* the line being built */
} fz;

static void	fz_envelope(struct ndjson_writer *, struct fz_rd *, int,
		    const char *);

/* Report a broken rule and abort, so libFuzzer keeps the input. */
static void __attribute__((format(printf, 1, 2), noreturn))
fz_fail(const char *fmt, ...)
{
	va_list	ap;

	fprintf(stderr, "fuzz_engine: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	abort();
}

/* ---- Reading the script. ---- */

static unsigned int
fz_u8(struct fz_rd *r)
{
	if (r->n == 0)
		return 0;
	r->n--;
	return *r->p++;
}

/* Take up to *n bytes of the parameters (fewer at their end). */
static const char *
fz_take(struct fz_rd *r, size_t *n)
{
	const char	*p = (const char *)r->p;

	if (*n > r->n)
		*n = r->n;
	r->p += *n;
	r->n -= *n;
	return p;
}

/* ---- Hostile text. ---- */

struct fz_word {
	const char	*s;
	size_t		 len;
};
#define WD(s)	{ s, sizeof(s) - 1 }

/* Valid UTF-8 text, escaped as a careful writer would. */
static const struct fz_word fz_words[] = {
	WD("t"), WD(""), WD("a"), WD("\""), WD("\\"), WD("\"\\\"\\"),
	WD("\n"), WD("\r\n"), WD("\t"), WD("\x01"), WD("\x1f"), WD("\x7f"),
	WD("\b\f"), WD("caf\xc3\xa9"), WD("\xe2\x82\xac"),
	WD("\xf0\x9f\x98\x80"), WD("\xef\xbf\xbd"), WD("\xef\xbb\xbf"),
	WD("\xe2\x80\xa8\xe2\x80\xa9"), WD("\xf4\x8f\xbf\xbf"),
	WD("plan"), WD("decompose"), WD("execute"), WD("route"),
	WD("retrieve"), WD("analyze"), WD("summarize"), WD("reflect"),
	WD("finalize"), WD("tool.call"), WD("*"), WD("Plan"),
	WD("worker"), WD("worker.1"), WD("worker.2"), WD("critic"),
	WD("planner"), WD("helper"), WD("flaky"), WD("corral"),
	WD("corral-serve"), WD("helper-1"), WD("worker-inline-2"),
	WD("lead"), WD("user"), WD("agent"), WD("system"), WD("tool"),
	WD("../x"), WD("/etc/passwd"), WD("a/../../b"), WD("out/report.md"),
	WD("."), WD("a/"), WD("./a"), WD("a//b"), WD("..."), WD(".."),
	WD("dir/"), WD("report.md"), WD("a/./b/../c"), WD("//"),
	WD("x/y/z/w/v/u/t/s/r/q/p/o/n/m/l/k/j/i/h/g/f/e/d/c/b/a.txt"),
	WD("notice"), WD("task"), WD("child_result"), WD("message"),
	WD("2025-10-10T12:34:56Z"), WD("2025-10-10T12:34:56.123+02:00"),
	WD("2025-13-40T25:61:61Z"), WD("yesterday"),
	WD("id-with-63-bytes-0123456789012345678901234567890123456789012345"),
	WD("id-with-64-bytes-01234567890123456789012345678901234567890123456"),
	WD("id-with-65-bytes-012345678901234567890123456789012345678901234567"),
	WD("%s%n%x%%"), WD("$(id)"), WD("null"), WD("{}"), WD("[]"),
	WD("{\"a\":1}"), WD("map/agents/spawn"), WD("map/send"),
	WD("\"},\"intent\":\"finalize"), WD("\\u0000"), WD("\\\"\\\\"),
	WD("multiagent-1.0"), WD("high"), WD("urgent"), WD("create"),
	WD("update"), WD("permanent"), WD("temporary"), WD("transient"),
	WD("inline-tool"), WD("missing-tool"), WD("busy-tool"),
};

/* JSON escapes, written as they are between the quotes. */
static const struct fz_word fz_escapes[] = {
	WD("\\u0000"), WD("\\ud800"), WD("\\udc00"), WD("\\ud83d\\ude00"),
	WD("\\u00e9"), WD("\\u001f"), WD("\\/"), WD("\\\""), WD("\\\\"),
	WD("\\u0022"), WD("\\u005c"), WD("\\udfff\\ud800"), WD("\\x41"),
	WD("\\u12"), WD("\\uD83D\\uDE00"), WD("\\u0074ask"), WD("\\ufffd"),
	WD("\\ud800\\u0041"), WD("\\b\\f\\n\\r\\t"), WD("\\"),
};

/* Invalid UTF-8, put between the quotes as it is. */
static const struct fz_word fz_invalid[] = {
	WD("\x80"), WD("\xbf"), WD("x\xc3"), WD("\xe2\x82"),
	WD("\xf0\x9f\x98"), WD("\xc0\xaf"), WD("\xe0\x80\xaf"),
	WD("\xed\xa0\x80"), WD("\xed\xbf\xbf"), WD("\xf4\x90\x80\x80"),
	WD("\xff"), WD("\xfe\xff"), WD("\xf8\x88\x80\x80\x80"), WD("\xc3"),
};

/* Numbers as JSON text: valid ones first, then hostile ones. */
static const char *const fz_numbers[] = {
	"0", "1", "0.9", "0.1", "0.5", "0.49", "0.4999999999999999",
	"0.5000000000000001", "1.0", "0.0", "-0", "2", "3", "4", "5", "100",
	"1000", "60000", "3600000", "2.5", "-1", "-0.5", "1e3", "1E-3",
	"1e308", "4.9e-324", "1e-400", "9007199254740993",
	"9223372036854775807", "-9223372036854775808", "0.3", "7", "1e2",
	"12345.678", "1.7976931348623157e308", "8.98846567431158e307",
#define FZ_VALID_NUMBERS	36
	"1e309", "-1e309", "18446744073709551616", "-9223372036854775809",
	"01", "1.", "+1", ".5", "NaN", "-", "1e", "0x10", "\"0.9\"", "null",
	"true", "[]", "{}",
};

static const char *const fz_intents[] = {
	"plan", "decompose", "execute", "route", "retrieve", "analyze",
	"summarize", "reflect", "finalize", "tool.call",
};

#define NITEMS(a)	(sizeof(a) / sizeof((a)[0]))

/*
 * Write bytes as a JSON string.  mode 0 escapes as a careful writer
 * would (bytes above 0x7f kept), 1 also escapes those as \u00XX (so the
 * text stays valid whatever the bytes), 2 escapes nothing.
 */
static void
fz_quote(struct ndjson_writer *w, const char *s, size_t n, int mode)
{
	static const char	hex[] = "0123456789abcdef";
	unsigned char		c;
	char			esc[6];
	size_t			i;

	LIT(w, "\"");
	for (i = 0; i < n; i++) {
		c = (unsigned char)s[i];
		if (mode != 2 && (c == '"' || c == '\\')) {
			esc[0] = '\\';
			esc[1] = (char)c;
			ndjson_writer_add(w, esc, 2);
		} else if (mode != 2 && (c < 0x20 || (mode == 1 && c >= 0x7f))) {
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			ndjson_writer_add(w, esc, 6);
		} else
			ndjson_writer_add(w, s + i, 1);
	}
	LIT(w, "\"");
}

/*
 * Write a string chosen by the script: 0 the default, then words of the
 * dictionary, escapes, raw bytes of the script (escaped, half-escaped or
 * not at all), invalid UTF-8, or a long string.
 */
static void
fz_str(struct ndjson_writer *w, struct fz_rd *r, const char *dflt)
{
	const struct fz_word	*wd;
	unsigned int		 v = fz_u8(r), i, reps;
	const char		*s;
	size_t			 n;

	if (v == 0) {
		fz_quote(w, dflt, strlen(dflt), 0);
	} else if (v < 0xa0) {
		wd = &fz_words[(v - 1) % NITEMS(fz_words)];
		fz_quote(w, wd->s, wd->len, 0);
	} else if (v < 0xb8) {
		wd = &fz_escapes[(v - 0xa0) % NITEMS(fz_escapes)];
		LIT(w, "\"");
		ndjson_writer_add(w, wd->s, wd->len);
		LIT(w, "\"");
	} else if (v < 0xe8) {
		n = v - 0xb8;
		s = fz_take(r, &n);
		fz_quote(w, s, n, v % 8 == 7 ? 2 : v % 8 == 6 ? 0 : 1);
	} else if (v < 0xf6) {
		wd = &fz_invalid[(v - 0xe8) % NITEMS(fz_invalid)];
		LIT(w, "\"a");
		ndjson_writer_add(w, wd->s, wd->len);
		LIT(w, "b\"");
	} else {
		/* Long: a word of the dictionary again and again. */
		wd = &fz_words[fz_u8(r) % NITEMS(fz_words)];
		reps = (v - 0xf5) * 2048 / (unsigned int)(wd->len + 1);
		LIT(w, "\"");
		for (i = 0; i < reps; i++) {
			if (wd->len == 0 || wd->s[0] == '"' || wd->s[0] == '\\' ||
			    (unsigned char)wd->s[0] < 0x20)
				LIT(w, "x");
			else
				ndjson_writer_add(w, wd->s, wd->len);
			LIT(w, "-");
		}
		LIT(w, "\"");
	}
}

/* Write a number: 0 the default, then the table (hostile ones last). */
static void
fz_num(struct ndjson_writer *w, struct fz_rd *r, const char *dflt)
{
	unsigned int	v = fz_u8(r);
	const char	*s;

	if (v == 0)
		s = dflt;
	else if (v < 0xe8)
		s = fz_numbers[(v - 1) % FZ_VALID_NUMBERS];
	else
		s = fz_numbers[FZ_VALID_NUMBERS + (v - 0xe8) %
		    (NITEMS(fz_numbers) - FZ_VALID_NUMBERS)];
	ndjson_writer_add(w, s, strlen(s));
}

/* Write an intent: 0 the default, then every intent, then any string. */
static void
fz_intent(struct ndjson_writer *w, struct fz_rd *r, const char *dflt)
{
	unsigned int	v = fz_u8(r);

	if (v == 0)
		fz_quote(w, dflt, strlen(dflt), 0);
	else if (v < 0xf0)
		fz_quote(w, fz_intents[(v - 1) % NITEMS(fz_intents)],
		    strlen(fz_intents[(v - 1) % NITEMS(fz_intents)]), 0);
	else
		fz_str(w, r, "nonsense");
}

/* Write the id of an existing agent (by index), or any string. */
static void
fz_agent_id(struct ndjson_writer *w, struct fz_rd *r)
{
	struct agent	*a;
	unsigned int	 v = fz_u8(r), n = 0, k;

	if (v >= 0xe0) {
		fz_str(w, r, "nobody");
		return;
	}
	for (a = agent_first(); a != NULL; a = agent_next(a))
		n++;
	if (n == 0) {
		LIT(w, "\"nobody\"");
		return;
	}
	k = v % n;
	for (a = agent_first(); k > 0; a = agent_next(a))
		k--;
	fz_quote(w, a->id, strlen(a->id), 0);
}

/* ---- Envelopes. ---- */

#define FZ_INPUT	0	/* a client's input */
#define FZ_REPLY	1	/* an agent's reply */
#define FZ_INNER	2	/* a spawn's task, or a map/send payload */

/* Damages: one structural fault in an otherwise valid envelope. */
enum {
	D_NONE, D_NO_PROTOCOL, D_BAD_PROTOCOL, D_BAD_ROLE, D_NO_ROLE,
	D_NO_TASK, D_TASK_NUMBER, D_NO_CONTENT, D_CONTENT_ARRAY,
	D_BAD_CTYPE, D_BAD_INTENT, D_NO_INTENT, D_DUP_KEY, D_SCORE_RANGE,
	D_NO_SCORE, D_BAD_TIMESTAMP, D_LONG_ID, D_EMPTY_ID, D_PARENTS_OBJ,
	D_PARENT_NUMBER, D_ACTIONS_OBJ, D_ACTION_INTENT, D_ACTION_NO_TASK,
	D_ARGS_ARRAY, D_ART_PATH_NUMBER, D_ART_BAD_OP, D_BAD_PRIORITY,
	D_BAD_TTL, D_CORRAL_STRING, D_NEGATIVE_COST, D_NOT_OBJECT,
	D_ESCAPED_KEY, D_TEXT_NUMBER
};

/* Start a member of the envelope being built: "key": */
static struct ndjson_writer *
fz_member(struct ndjson_writer *m, size_t *n, const char *key)
{
	struct ndjson_writer	*w = &m[*n];

	ndjson_writer_init(w, 0, 1);
	fz_quote(w, key, strlen(key), 0);
	LIT(w, ":");
	(*n)++;
	return w;
}

/* content: a type, text, and for some types data. */
static void
fz_content(struct ndjson_writer *w, struct fz_rd *r, int dmg)
{
	static const char *const types[] = { "text", "code", "json",
	    "tool_result", "error" };
	unsigned int	v = fz_u8(r);

	if (dmg == D_CONTENT_ARRAY) {
		LIT(w, "[]");
		return;
	}
	LIT(w, "{\"type\":");
	if (dmg == D_BAD_CTYPE)
		fz_str(w, r, "prose");
	else
		fz_quote(w, types[v % 8 < 5 ? v % 8 : 0],
		    strlen(types[v % 8 < 5 ? v % 8 : 0]), 0);
	LIT(w, ",\"text\":");
	if (dmg == D_TEXT_NUMBER)
		fz_num(w, r, "42");
	else
		fz_str(w, r, "the text");
	if (v % 8 == 4 || v % 8 == 2 || v >= 0x80) {
		LIT(w, ",\"data\":{\"code\":");
		fz_str(w, r, "oops");
		LIT(w, ",\"category\":");
		fz_str(w, r, "INTERNAL");
		LIT(w, ",\"message\":");
		fz_str(w, r, "it broke");
		LIT(w, ",\"n\":");
		fz_num(w, r, "1");
		LIT(w, "}");
	}
	LIT(w, "}");
}

/* confidence: {score, rationale?, risks?}; 0 means the kind's default. */
static int
fz_confidence(struct ndjson_writer *m, size_t *n, struct fz_rd *r, int kind,
    int dmg)
{
	struct ndjson_writer	*w;
	unsigned int		 v = fz_u8(r);

	if (dmg != D_SCORE_RANGE && dmg != D_NO_SCORE &&
	    ((v == 0 && kind != FZ_REPLY) || v == 1))
		return 0;
	w = fz_member(m, n, "confidence");
	LIT(w, "{");
	if (dmg == D_NO_SCORE)
		LIT(w, "\"rationale\":\"none\"");
	else if (dmg == D_SCORE_RANGE)
		LIT(w, "\"score\":1.5");
	else if (v == 0)
		LIT(w, "\"score\":0.9");
	else if (v == 2)
		LIT(w, "\"score\":0.2");
	else if (v == 3)
		LIT(w, "\"score\":0.49");
	else if (v == 4)
		LIT(w, "\"score\":0.5");
	else {
		LIT(w, "\"score\":");
		fz_num(w, r, "0.3");
		if (v & 8) {
			LIT(w, ",\"rationale\":");
			fz_str(w, r, "because");
		}
		if (v & 16) {
			LIT(w, ",\"risks\":[");
			fz_str(w, r, "risk");
			LIT(w, "]");
		}
	}
	LIT(w, "}");
	return 1;
}

/*
 * args.ttl_ms of a next action: not from the number table.  corral does
 * not check it (its scanner records args without their members), yet
 * copies it into the request it builds as inputs.parameters.ttl_ms, which
 * its own validator refuses when it is negative or not a number.  That
 * fault is known and not fixed here; this keeps the target from finding
 * it again.
 */
static void
fz_ttl(struct ndjson_writer *w, struct fz_rd *r)
{
	static const char *const ttls[] = { "3600000", "0", "1", "60000",
	    "0.5", "1e308", "1.7976931348623157e308" };
	const char	*t = ttls[fz_u8(r) % NITEMS(ttls)];

	ndjson_writer_add(w, t, strlen(t));
}

/* outputs: next_actions and artifacts. */
static void
fz_outputs(struct ndjson_writer *m, size_t *n, struct fz_rd *r, int dmg)
{
	struct ndjson_writer	*w;
	unsigned int		 v = fz_u8(r), k, i, ops;
	int			 comma = 0;

	if (v == 0 && dmg != D_ACTIONS_OBJ && dmg != D_ACTION_INTENT &&
	    dmg != D_ACTION_NO_TASK && dmg != D_ARGS_ARRAY &&
	    dmg != D_ART_PATH_NUMBER && dmg != D_ART_BAD_OP)
		return;
	w = fz_member(m, n, "outputs");
	LIT(w, "{");
	k = v & 3;
	if (k > 0 || dmg == D_ACTIONS_OBJ || dmg == D_ACTION_INTENT ||
	    dmg == D_ACTION_NO_TASK || dmg == D_ARGS_ARRAY) {
		LIT(w, "\"next_actions\":");
		if (dmg == D_ACTIONS_OBJ)
			LIT(w, "{}");
		else {
			LIT(w, "[");
			if (k == 0)
				k = 1;
			for (i = 0; i < k; i++) {
				if (i > 0)
					LIT(w, ",");
				LIT(w, "{\"intent\":");
				if (dmg == D_ACTION_INTENT && i == k - 1)
					LIT(w, "\"ponder\"");
				else
					fz_intent(w, r, "execute");
				if (dmg != D_ACTION_NO_TASK || i != k - 1) {
					LIT(w, ",\"task\":");
					fz_str(w, r, "next step");
				}
				if (dmg == D_ARGS_ARRAY && i == k - 1)
					LIT(w, ",\"args\":[]");
				else if (v & 4) {
					LIT(w, ",\"args\":{\"ttl_ms\":");
					fz_ttl(w, r);
					LIT(w, ",\"q\":");
					fz_str(w, r, "arg");
					LIT(w, "}");
				}
				LIT(w, "}");
			}
			LIT(w, "]");
		}
		comma = 1;
	}
	if ((v & 0x18) || dmg == D_ART_PATH_NUMBER || dmg == D_ART_BAD_OP) {
		if (comma)
			LIT(w, ",");
		LIT(w, "\"artifacts\":[");
		ops = v >> 5;
		LIT(w, "{\"path\":");
		if (dmg == D_ART_PATH_NUMBER)
			LIT(w, "7");
		else
			fz_str(w, r, "out/report.md");
		LIT(w, ",\"content\":");
		fz_str(w, r, "# Report\n");
		if (dmg == D_ART_BAD_OP)
			LIT(w, ",\"operation\":\"delete\"");
		else if (ops & 1)
			LIT(w, ",\"operation\":\"create\"");
		else if (ops & 2)
			LIT(w, ",\"operation\":\"update\"");
		LIT(w, "}");
		if (v & 0x10) {
			LIT(w, ",{\"kind\":\"text\",\"name\":");
			fz_str(w, r, "note");
			LIT(w, ",\"inline\":");
			fz_str(w, r, "inline text");
			LIT(w, ",\"uri\":null}");
		}
		if (ops & 4) {
			LIT(w, ",{\"path\":");
			fz_str(w, r, "../escape");
			LIT(w, ",\"content\":\"x\"}");
		}
		LIT(w, "]");
	}
	LIT(w, "}");
}

/* trace: id, parents, tags, cost, as the flags say. */
static void
fz_trace(struct ndjson_writer *m, size_t *n, struct fz_rd *r, unsigned int f,
    int kind, const char *parent, int dmg)
{
	struct ndjson_writer	*w;
	int			 id, parents, extra, cost, comma = 0;

	id = (f & 1) || dmg == D_LONG_ID || dmg == D_EMPTY_ID;
	parents = (kind == FZ_REPLY && parent != NULL && !(f & 2)) ||
	    (kind != FZ_REPLY && (f & 2)) || dmg == D_PARENTS_OBJ ||
	    dmg == D_PARENT_NUMBER;
	extra = (f & 4) != 0;
	cost = (f & 8) || dmg == D_NEGATIVE_COST;
	if (!id && !parents && !cost && !(f & 0x80))
		return;
	w = fz_member(m, n, "trace");
	LIT(w, "{");
	if (id) {
		LIT(w, "\"id\":");
		if (dmg == D_LONG_ID)
			LIT(w, "\"a-trace-id-that-is-far-too-long-for-corral-"
			    "to-keep-0123456789abcdef\"");
		else if (dmg == D_EMPTY_ID)
			LIT(w, "\"\"");
		else
			fz_str(w, r, "input-1");
		comma = 1;
	}
	if (parents) {
		if (comma)
			LIT(w, ",");
		LIT(w, "\"parents\":");
		if (dmg == D_PARENTS_OBJ)
			LIT(w, "{}");
		else {
			LIT(w, "[");
			if (extra) {
				fz_str(w, r, "other");
				LIT(w, ",");
			}
			if (dmg == D_PARENT_NUMBER)
				LIT(w, "1");
			else if (parent != NULL)
				fz_quote(w, parent, strlen(parent), 0);
			else
				fz_str(w, r, "p-1");
			LIT(w, "]");
		}
		comma = 1;
	}
	if (cost) {
		if (comma)
			LIT(w, ",");
		LIT(w, "\"tags\":[");
		fz_str(w, r, "tag");
		LIT(w, "],\"cost\":{\"input_tokens\":");
		if (dmg == D_NEGATIVE_COST)
			LIT(w, "-5");
		else
			fz_num(w, r, "10");
		LIT(w, ",\"output_tokens\":");
		fz_num(w, r, "20");
		LIT(w, ",\"usd\":");
		fz_num(w, r, "0.01");
		LIT(w, "}");
	}
	LIT(w, "}");
}

/*
 * Build an envelope of the given kind into w.  parent: the request a
 * reply answers.  Members come in an order the script picks.
 */
static void
fz_envelope(struct ndjson_writer *w, struct fz_rd *r, int kind,
    const char *parent)
{
	struct ndjson_writer	 m[FZ_MEMBERS], *x;
	unsigned int		 d = fz_u8(r), f = fz_u8(r), order = fz_u8(r);
	size_t			 n = 0, i, k;
	int			 dmg = d >= 0xe0 ? (int)(d & 0x1f) + 1 : D_NONE;

	if (dmg == D_NOT_OBJECT) {
		LIT(w, "[\"multiagent-1.0\"]");
		return;
	}
	if (dmg != D_NO_PROTOCOL) {
		x = fz_member(m, &n, "protocol");
		if (dmg == D_BAD_PROTOCOL)
			fz_str(x, r, "multiagent-2.0");
		else
			LIT(x, "\"multiagent-1.0\"");
	}
	if (dmg != D_NO_ROLE) {
		x = fz_member(m, &n, "role");
		if (dmg == D_BAD_ROLE)
			fz_str(x, r, "boss");
		else if (kind == FZ_INPUT)
			LIT(x, "\"user\"");
		else
			LIT(x, "\"agent\"");
	}
	if (dmg != D_NO_INTENT) {
		x = fz_member(m, &n, "intent");
		if (dmg == D_BAD_INTENT)
			LIT(x, "\"ponder\"");
		else
			fz_intent(x, r, kind == FZ_REPLY ? "finalize" :
			    "execute");
	}
	if (dmg != D_NO_TASK) {
		x = fz_member(m, &n, dmg == D_ESCAPED_KEY ? "\\u0074ask" :
		    "task");
		if (dmg == D_TASK_NUMBER)
			fz_num(x, r, "3");
		else
			fz_str(x, r, "Do the thing");
	}
	if (dmg != D_NO_CONTENT)
		fz_content(fz_member(m, &n, "content"), r, dmg);
	(void)fz_confidence(m, &n, r, kind, dmg);
	fz_outputs(m, &n, r, dmg);
	fz_trace(m, &n, r, f, kind, parent, dmg);
	if ((f & 0x10) || dmg == D_BAD_PRIORITY) {
		x = fz_member(m, &n, "priority");
		if (dmg == D_BAD_PRIORITY)
			LIT(x, "7");
		else if (f & 0x20)
			fz_num(x, r, "4");
		else
			fz_str(x, r, "high");
	}
	if (((f & 0x30) == 0x30 && kind == FZ_INPUT) || dmg == D_BAD_TTL) {
		x = fz_member(m, &n, "ttl_ms");
		if (dmg == D_BAD_TTL)
			LIT(x, "-5");
		else
			fz_num(x, r, "3600000");
	}
	if ((f & 0x40) || dmg == D_BAD_TIMESTAMP) {
		x = fz_member(m, &n, "timestamp");
		if (dmg == D_BAD_TIMESTAMP)
			LIT(x, "\"2025-02-30T10:00:00\"");
		else
			fz_str(x, r, "2025-10-10T12:34:56Z");
	}
	if ((f & 0xc0) == 0xc0 || dmg == D_CORRAL_STRING) {
		/* A forged corral member, and an agent object. */
		x = fz_member(m, &n, "corral");
		if (dmg == D_CORRAL_STRING)
			LIT(x, "\"mine\"");
		else {
			LIT(x, "{\"kind\":");
			fz_str(x, r, "task");
			LIT(x, ",\"retry_count\":");
			fz_num(x, r, "99");
			LIT(x, ",\"reflect\":{\"of\":");
			fz_str(x, r, "x");
			LIT(x, ",\"round\":7}}");
		}
		x = fz_member(m, &n, "agent");
		LIT(x, "{\"id\":");
		fz_str(x, r, "me");
		LIT(x, ",\"name\":\"me\",\"model\":\"m\"}");
		x = fz_member(m, &n, "x-extension");
		fz_str(x, r, "ext");
	}
	if (dmg == D_DUP_KEY) {
		x = fz_member(m, &n, "task");
		LIT(x, "\"again\"");
	}

	LIT(w, "{");
	for (i = 0; i < n; i++) {
		k = (i + order) % n;
		if (order & 0x80)
			k = n - 1 - k;
		if (i > 0)
			LIT(w, ",");
		ndjson_writer_add(w, m[k].buf, m[k].tail);
	}
	LIT(w, "}");
	for (i = 0; i < n; i++)
		ndjson_writer_free(&m[i]);
}

/* ---- JSON-RPC frames. ---- */

static const char *const fz_methods[] = {
	CORRAL_M_SPAWN, CORRAL_M_SEND, CORRAL_M_CONNECT, CORRAL_M_PING,
	CORRAL_M_LIST, CORRAL_M_GET, CORRAL_M_STOP, CORRAL_M_SUSPEND,
	CORRAL_M_RESUME, CORRAL_M_DISCONNECT, "map/nope",
};

/* params of map/agents/spawn. */
static void
fz_spawn_params(struct ndjson_writer *w, struct fz_rd *r)
{
	static const char *const entries[] = { "helper", "worker", "flaky",
	    "critic", "planner", "bus", "am" };
	unsigned int	who = fz_u8(r), t = fz_u8(r), f = fz_u8(r), i, n;
	/* The dialect agents' entries only where the workflow has them. */
	unsigned int	ne = fz.wf->nagents > 5 ? 7 : 5;

	LIT(w, "{");
	switch (who % 8) {
	case 5:
		LIT(w, "\"agent\":");
		fz_str(w, r, "nobody");
		break;
	case 6:
	case 7:
		LIT(w, "\"cmd\":[");
		fz_str(w, r, "inline-tool");
		n = who >> 6;
		for (i = 0; i < n; i++) {
			LIT(w, ",");
			if (i == 2)
				LIT(w, "7");
			else
				fz_str(w, r, "--arg");
		}
		LIT(w, "]");
		break;
	default:
		LIT(w, "\"agent\":");
		fz_quote(w, entries[who % ne], strlen(entries[who % ne]), 0);
		break;
	}
	switch (t % 8) {
	case 0:
	case 1:
	case 2:
		LIT(w, ",\"task\":");
		fz_envelope(w, r, FZ_INNER, NULL);
		break;
	case 3:
	case 4:
		LIT(w, ",\"task\":");
		fz_str(w, r, "Look into it");
		break;
	case 5:
		LIT(w, ",\"task\":");
		fz_num(w, r, "5");
		break;
	default:
		break;	/* no task */
	}
	if (f & 1) {
		LIT(w, ",\"limits\":{\"depth\":");
		fz_num(w, r, "1");
		LIT(w, ",\"children\":");
		fz_num(w, r, "1");
		LIT(w, ",\"budget\":{\"tokens\":");
		fz_num(w, r, "100");
		LIT(w, ",\"cost\":");
		fz_num(w, r, "0.5");
		LIT(w, ",\"time\":");
		fz_num(w, r, "60");
		LIT(w, "}}");
	}
	if (f & 2) {
		LIT(w, ",\"timeout\":");
		fz_num(w, r, "30");
	}
	if (f & 4)
		LIT(w, ",\"keep\":true");
	if (f & 8)
		LIT(w, ",\"visible\":true");
	if (f & 16) {
		LIT(w, ",\"restart\":");
		fz_str(w, r, "permanent");
	}
	LIT(w, "}");
}

/* An address of map/send. */
static void
fz_address(struct ndjson_writer *w, struct fz_rd *r)
{
	unsigned int	v = fz_u8(r);

	switch (v % 12) {
	case 0:
		fz_agent_id(w, r);
		break;
	case 1:
		LIT(w, "{\"agent\":");
		fz_agent_id(w, r);
		LIT(w, "}");
		break;
	case 2:
		LIT(w, "{\"participant\":");
		fz_agent_id(w, r);
		LIT(w, "}");
		break;
	case 3:
		LIT(w, "{\"agents\":[");
		fz_agent_id(w, r);
		LIT(w, ",");
		fz_agent_id(w, r);
		LIT(w, ",");
		fz_str(w, r, "ghost");
		LIT(w, ",3]}");
		break;
	case 4:
		LIT(w, "{\"parent\":true}");
		break;
	case 5:
		LIT(w, "{\"children\":true}");
		break;
	case 6:
		LIT(w, "{\"siblings\":true}");
		break;
	case 7:
		LIT(w, "{\"descendants\":true}");
		break;
	case 8:
		LIT(w, "{\"ancestors\":true}");
		break;
	case 9:
		LIT(w, "{\"role\":");
		fz_str(w, r, "critic");
		LIT(w, "}");
		break;
	case 10:
		fz_str(w, r, "ghost");
		break;
	default:
		LIT(w, "{}");
		break;
	}
}

/*
 * Build a JSON-RPC frame: jsonrpc, an id of some type (or none), a method
 * and its params.
 */
static void
fz_frame(struct ndjson_writer *w, struct fz_rd *r, int client)
{
	unsigned int	 mv = fz_u8(r), idv = fz_u8(r), shape = fz_u8(r);
	const char	*method;
	char		 num[32];

	LIT(w, "{");
	if (shape == 0xff)
		LIT(w, "\"jsonrpc\":\"1.0\"");
	else
		LIT(w, "\"jsonrpc\":\"2.0\"");
	switch (idv % 10) {
	case 0:
	case 1:
		snprintf(num, sizeof num, ",\"id\":%u", ++fz.rpc_seq);
		ndjson_writer_add(w, num, strlen(num));
		break;
	case 2:
		LIT(w, ",\"id\":");
		fz_str(w, r, "req-1");
		break;
	case 3:
		break;		/* a notification */
	case 4:
		LIT(w, ",\"id\":null");
		break;
	case 5:
		/*
		 * Not from the number table: corral echoes an id through
		 * jansson with 15 significant digits (CORRAL_JSON_FLAGS), so
		 * an id of DBL_MAX comes back as 1.79769313486232e+308,
		 * which no reader takes.  That fault is known and not fixed
		 * here; this keeps the target from finding it again.
		 */
		LIT(w, ",\"id\":-1.5e300");
		break;
	case 6:
		LIT(w, ",\"id\":{\"x\":1}");
		break;
	case 7:
		LIT(w, ",\"id\":[1]");
		break;
	default:
		LIT(w, ",\"id\":7");
		break;
	}
	if (client)
		mv = mv < 0x80 ? (mv % 2 == 0 ? 3 : 2) : mv;
	if (mv % 16 == 13) {
		LIT(w, ",\"result\":{}}");
		return;
	}
	if (mv % 16 == 14) {
		LIT(w, ",\"error\":{\"code\":1,\"message\":\"no\"}}");
		return;
	}
	if (mv % 16 == 15) {
		LIT(w, ",\"method\":7}");
		return;
	}
	LIT(w, ",\"method\":");
	if (mv % 16 == 12) {
		fz_str(w, r, "map/else");
		method = "";
	} else {
		method = fz_methods[(mv % 16) % NITEMS(fz_methods)];
		fz_quote(w, method, strlen(method), 0);
	}
	if (shape == 0xfe) {
		LIT(w, ",\"params\":\"x\"}");
		return;
	}
	if (shape == 0xfd) {
		LIT(w, "}");
		return;
	}
	LIT(w, ",\"params\":");
	if (strcmp(method, CORRAL_M_SPAWN) == 0)
		fz_spawn_params(w, r);
	else if (strcmp(method, CORRAL_M_SEND) == 0) {
		LIT(w, "{\"to\":");
		fz_address(w, r);
		if (shape & 1)
			LIT(w, ",\"message\":");
		else
			LIT(w, ",\"envelope\":");
		if (shape & 2)
			fz_str(w, r, "not an envelope");
		else
			fz_envelope(w, r, FZ_INNER, NULL);
		LIT(w, "}");
	} else if (strcmp(method, CORRAL_M_GET) == 0 ||
	    strcmp(method, CORRAL_M_STOP) == 0 ||
	    strcmp(method, CORRAL_M_SUSPEND) == 0 ||
	    strcmp(method, CORRAL_M_RESUME) == 0) {
		if (shape & 1)
			LIT(w, "{\"id\":");
		else
			LIT(w, "{\"agentId\":");
		fz_agent_id(w, r);
		LIT(w, "}");
	} else if (shape & 1)
		LIT(w, "[]");
	else
		LIT(w, "{}");
	LIT(w, "}");
}

/* ---- Dialect agents: bus messages and AgentMessages. ---- */

#define FZ_ENVELOPE	0	/* what a proc speaks */
#define FZ_BUS		1
#define FZ_AM		2

/* Addresses a dialect agent may write. */
static const char *const fz_dests[] = {
	"", "corral", "worker.1", "agent:worker.2", "capability:code-review",
	"capability:analysis", "capability:nobody", "critic", "bus", "am",
	"registry", "topic:progress", "topic:news", "*", "ghost",
	"agent:", "capability:", "topic:",
};

/* Write one of the addresses, or any string. */
static void
fz_dest(struct ndjson_writer *w, struct fz_rd *r, const char *dflt)
{
	unsigned int	v = fz_u8(r);

	if (v == 0)
		fz_quote(w, dflt, strlen(dflt), 0);
	else if (v < 0xe0)
		fz_quote(w, fz_dests[v % NITEMS(fz_dests)],
		    strlen(fz_dests[v % NITEMS(fz_dests)]), 0);
	else
		fz_str(w, r, "ghost");
}

/*
 * A message id: new each time (the default), one of a few (so messages
 * are sent again, and dropped as redeliveries), or any string.
 */
static void
fz_msgid(struct ndjson_writer *w, struct fz_rd *r)
{
	static unsigned int	seq;
	unsigned int		v = fz_u8(r);
	char			id[32];

	if (v >= 0xe0) {
		fz_str(w, r, "m-x");
		return;
	}
	if (v > 0 && v < 0x40)
		snprintf(id, sizeof id, "m-%u", v & 7);
	else
		snprintf(id, sizeof id, "u-%u", ++seq);
	fz_quote(w, id, strlen(id), 0);
}

/* The id of the request answered, or a hostile one. */
static void
fz_task_id(struct ndjson_writer *w, struct fz_rd *r, const char *parent)
{
	if (parent != NULL && fz_u8(r) < 0xe0)
		fz_quote(w, parent, strlen(parent), 0);
	else
		fz_str(w, r, "late-or-unknown");
}

/* A value of any JSON type, from the dictionaries. */
static void
fz_value(struct ndjson_writer *w, struct fz_rd *r)
{
	switch (fz_u8(r) % 6) {
	case 0:
		fz_str(w, r, "the result");
		break;
	case 1:
		fz_num(w, r, "1");
		break;
	case 2:
		LIT(w, "{\"k\":");
		fz_str(w, r, "v");
		LIT(w, ",\"n\":");
		fz_num(w, r, "2");
		LIT(w, "}");
		break;
	case 3:
		LIT(w, "[");
		fz_str(w, r, "a");
		LIT(w, ",null,true]");
		break;
	case 4:
		LIT(w, "null");
		break;
	default:
		LIT(w, "{\"verified\":true}");
		break;
	}
}

/* Write one of a list of words, or (0xf0 and above) any string. */
static void
fz_pick_word(struct ndjson_writer *w, struct fz_rd *r,
    const char *const *words, size_t n)
{
	unsigned int	v = fz_u8(r);

	if (v >= 0xf0)
		fz_str(w, r, words[0]);
	else
		fz_quote(w, words[v % n], strlen(words[v % n]), 0);
}
#define FZ_WORD(w, r, a)	fz_pick_word((w), (r), (a), NITEMS(a))

/* Damages of a dialect message. */
enum {
	DD_NONE, DD_NOT_OBJECT, DD_NO_TYPE, DD_TYPE_NUMBER, DD_BAD_TYPE,
	DD_ID_NUMBER, DD_CORR_NUMBER, DD_BODY_STRING, DD_META_ARRAY,
	DD_PRIO_NUMBER, DD_DUP_KEY, DD_CUT, DD_EMPTY, DD_HEADER_ARRAY,
	DD_TO_NUMBER, DD_ERROR_STRING
};

/* Bus message kinds the harness writes. */
enum {
	BK_RESPONSE, BK_PUBLISH, BK_BROADCAST, BK_REQUEST, BK_FIND,
	BK_SUBSCRIBE, BK_UNSUBSCRIBE, BK_REGISTER, BK_HEARTBEAT, BK_N
};

/* The body of a bus message of kind k. */
static void
fz_bus_body(struct ndjson_writer *w, struct fz_rd *r, int k, int dmg)
{
	static const char *const statuses[] = { "SUCCESS", "ERROR",
	    "TIMEOUT", "SUCCESS", "PENDING" };
	static const char *const codes[] = { "TIMEOUT", "UNAVAILABLE",
	    "REJECTED", "INTERNAL", "rate_limit", "" };
	static const char *const topics[] = { "progress", "news", "" };

	if (dmg == DD_BODY_STRING) {
		fz_str(w, r, "body");
		return;
	}
	LIT(w, "{");
	switch (k) {
	case BK_RESPONSE:
		LIT(w, "\"status\":");
		FZ_WORD(w, r, statuses);
		LIT(w, ",\"result\":");
		fz_value(w, r);
		LIT(w, ",\"error\":");
		if (dmg == DD_ERROR_STRING)
			fz_str(w, r, "broken");
		else {
			LIT(w, "{\"code\":");
			FZ_WORD(w, r, codes);
			LIT(w, ",\"message\":");
			fz_str(w, r, "it broke");
			LIT(w, ",\"retryable\":true,\"retryAfter\":");
			fz_num(w, r, "100");
			LIT(w, "}");
		}
		LIT(w, ",\"confidence\":");
		fz_num(w, r, "0.9");
		break;
	case BK_PUBLISH:
	case BK_BROADCAST:
		LIT(w, "\"event\":");
		fz_str(w, r, "Done");
		LIT(w, ",\"data\":");
		fz_value(w, r);
		break;
	case BK_REQUEST:
		LIT(w, "\"action\":");
		fz_intent(w, r, "execute");
		LIT(w, ",\"payload\":");
		fz_value(w, r);
		LIT(w, ",\"context\":{\"sessionId\":");
		fz_str(w, r, "s-1");
		LIT(w, "},\"responseRequired\":true");
		break;
	case BK_FIND:
		LIT(w, "\"action\":\"find\",\"payload\":{\"capability\":");
		fz_dest(w, r, "code-review");
		LIT(w, ",\"status\":");
		fz_str(w, r, "idle");
		LIT(w, "}");
		break;
	case BK_SUBSCRIBE:
	case BK_UNSUBSCRIBE:
		LIT(w, "\"topic\":");
		FZ_WORD(w, r, topics);
		break;
	case BK_REGISTER:
		LIT(w, "\"capabilities\":[");
		fz_str(w, r, "code-review");
		LIT(w, "],\"version\":\"1\",\"name\":");
		fz_str(w, r, "bus");
		break;
	default:
		break;
	}
	LIT(w, "}");
}

/*
 * A bus agent's message of kind k: parent is the request a RESPONSE
 * answers (NULL: none named).  The header's members stand in "header",
 * or at the top level (the short form).
 */
static void
fz_bus(struct ndjson_writer *w, struct fz_rd *r, int k, const char *parent)
{
	static const char *const types[] = { "RESPONSE", "PUBLISH",
	    "BROADCAST", "REQUEST", "REQUEST", "SUBSCRIBE", "UNSUBSCRIBE",
	    "REGISTER", "HEARTBEAT" };
	static const char *const dests[] = { "", "topic:progress",
	    "*", "corral", "registry", "topic:news", "topic:news", "", "" };
	unsigned int	 d = fz_u8(r), f = fz_u8(r);
	int		 dmg = d >= 0xf0 ? (int)(d & 0xf) : DD_NONE;
	int		 shortform = (f & 1) != 0;

	if (dmg == DD_NOT_OBJECT) {
		LIT(w, "[\"RESPONSE\"]");
		return;
	}
	if (dmg == DD_EMPTY) {
		LIT(w, "{}");
		return;
	}
	if (dmg == DD_HEADER_ARRAY) {
		LIT(w, "{\"header\":[],\"body\":{}}");
		return;
	}
	if (shortform)
		LIT(w, "{");
	else
		LIT(w, "{\"header\":{");
	LIT(w, "\"type\":");
	if (dmg == DD_NO_TYPE)
		LIT(w, "null");
	else if (dmg == DD_TYPE_NUMBER)
		LIT(w, "7");
	else if (dmg == DD_BAD_TYPE)
		fz_str(w, r, "NOPE");
	else
		fz_quote(w, types[k], strlen(types[k]), 0);
	LIT(w, ",\"messageId\":");
	if (dmg == DD_ID_NUMBER)
		LIT(w, "12");
	else
		fz_msgid(w, r);
	if (k == BK_RESPONSE && (parent != NULL || (f & 2))) {
		LIT(w, ",\"correlationId\":");
		if (dmg == DD_CORR_NUMBER)
			LIT(w, "3");
		else
			fz_task_id(w, r, parent);
	}
	if (dests[k][0] != '\0') {
		LIT(w, ",\"destination\":");
		if (dmg == DD_TO_NUMBER)
			LIT(w, "5");
		else
			fz_dest(w, r, dests[k]);
	}
	if (f & 4) {
		LIT(w, ",\"priority\":");
		if (dmg == DD_PRIO_NUMBER)
			LIT(w, "9");
		else
			fz_num(w, r, "3");
		LIT(w, ",\"ttl\":");
		fz_num(w, r, "30000");
	}
	if (f & 8) {
		LIT(w, ",\"source\":");
		fz_str(w, r, "agent-analyzer");
		LIT(w, ",\"timestamp\":");
		fz_str(w, r, "2026-01-10T14:30:00Z");
	}
	if (dmg == DD_DUP_KEY)
		LIT(w, ",\"type\":\"HEARTBEAT\"");
	if (!shortform)
		LIT(w, "}");
	LIT(w, ",\"body\":");
	fz_bus_body(w, r, k, dmg);
	if (f & 16) {
		LIT(w, ",\"trace\":{\"traceId\":");
		fz_str(w, r, "t1");
		LIT(w, ",\"spanId\":\"s1\"}");
	}
	if (dmg != DD_CUT)
		LIT(w, "}");
}

/* AgentMessage kinds the harness writes. */
enum {
	AK_COMPLETE, AK_FAILED, AK_HANDOFF, AK_HANDOFF_ANSWER, AK_HELP,
	AK_HELP_ANSWER, AK_STATUS, AK_ERROR_REPORT, AK_UPDATE, AK_HEARTBEAT,
	AK_ASSIGN, AK_SUBSCRIBE, AK_REGISTRY, AK_PUBLISH, AK_N
};

/* An error's type and severity, from the dictionaries. */
static void
fz_am_error(struct ndjson_writer *w, struct fz_rd *r)
{
	static const char *const types[] = { "INTERNAL_ERROR", "TIMEOUT",
	    "RATE_LIMIT", "NETWORK_ERROR", "VALIDATION_ERROR",
	    "AUTHENTICATION_ERROR", "RESOURCE_EXHAUSTED",
	    "EXTERNAL_SERVICE_ERROR", "SOMETHING_ELSE", "" };
	static const char *const severities[] = { "high", "low", "medium",
	    "critical", "HIGH", "" };

	LIT(w, "\"error_type\":");
	FZ_WORD(w, r, types);
	LIT(w, ",\"severity\":");
	FZ_WORD(w, r, severities);
	LIT(w, ",\"message\":");
	fz_str(w, r, "it broke");
}

/* The payload's members of a message that ends or moves a task. */
static void
fz_am_task(struct ndjson_writer *w, struct fz_rd *r, int k,
    const char *parent)
{
	switch (k) {
	case AK_COMPLETE:
		LIT(w, "\"task_id\":");
		fz_task_id(w, r, parent);
		LIT(w, ",\"result\":");
		fz_value(w, r);
		LIT(w, ",\"confidence\":");
		fz_num(w, r, "0.9");
		break;
	case AK_FAILED:
		LIT(w, "\"task_id\":");
		fz_task_id(w, r, parent);
		LIT(w, ",\"error\":{");
		fz_am_error(w, r);
		LIT(w, ",\"retryable\":false}");
		break;
	case AK_HANDOFF:
		LIT(w, "\"task_id\":");
		fz_task_id(w, r, parent);
		LIT(w, ",\"from_agent\":\"am\",\"to_agent\":");
		fz_dest(w, r, "worker.1");
		LIT(w, ",\"reason\":");
		fz_str(w, r, "CAPABILITY_LIMIT");
		LIT(w, ",\"context\":{\"history\":[]},\"constraints\":"
		    "{\"required_capabilities\":[");
		fz_dest(w, r, "code-review");
		LIT(w, "]}");
		break;
	case AK_HANDOFF_ANSWER:
		LIT(w, "\"task_id\":");
		fz_task_id(w, r, parent);
		if (fz_u8(r) & 1)
			LIT(w, ",\"accepted\":true,\"agent_id\":");
		else
			LIT(w, ",\"accepted\":false,\"agent_id\":");
		fz_str(w, r, "am");
		break;
	default:
		break;
	}
}

/* The payload of an AgentMessage of kind k about the task parent. */
static void
fz_am_payload(struct ndjson_writer *w, struct fz_rd *r, int k,
    const char *parent)
{
	static const char *const help[] = { "CODE_REVIEW", "analysis",
	    "code_review", "NOBODY", "" };
	static const char *const urgency[] = { "medium", "high", "low",
	    "critical", "" };
	static const char *const answers[] = { "DIRECT_ANSWER",
	    "UNABLE_TO_HELP", "" };
	static const char *const topics[] = { "progress", "news", "" };

	LIT(w, "{");
	switch (k) {
	case AK_COMPLETE:
	case AK_FAILED:
	case AK_HANDOFF:
	case AK_HANDOFF_ANSWER:
		fz_am_task(w, r, k, parent);
		break;
	case AK_HELP:
		LIT(w, "\"requester_id\":\"am\",\"task_id\":");
		fz_task_id(w, r, parent);
		LIT(w, ",\"help_type\":");
		FZ_WORD(w, r, help);
		LIT(w, ",\"description\":");
		fz_str(w, r, "is this ambiguous?");
		LIT(w, ",\"urgency\":");
		FZ_WORD(w, r, urgency);
		break;
	case AK_HELP_ANSWER:
		LIT(w, "\"request_id\":");
		fz_task_id(w, r, parent);
		LIT(w, ",\"responder_id\":\"am\",\"response_type\":");
		FZ_WORD(w, r, answers);
		LIT(w, ",\"content\":");
		fz_str(w, r, "the answer");
		break;
	case AK_STATUS:
		LIT(w, "\"agent_id\":\"am\",\"status\":{\"state\":");
		fz_str(w, r, "BUSY");
		LIT(w, ",\"error_rate\":");
		fz_num(w, r, "0.05");
		LIT(w, "},\"resource_usage\":{\"tokens_used\":");
		fz_num(w, r, "12000");
		LIT(w, ",\"cost_usd\":");
		fz_num(w, r, "0.42");
		LIT(w, "},\"health_metrics\":{\"success_rate\":");
		fz_num(w, r, "0.95");
		LIT(w, "},\"current_tasks\":[");
		fz_task_id(w, r, parent);
		LIT(w, "]");
		break;
	case AK_ERROR_REPORT:
		if (fz_u8(r) < 0xc0) {
			LIT(w, "\"task_id\":");
			fz_task_id(w, r, parent);
			LIT(w, ",");
		}
		LIT(w, "\"error_id\":");
		fz_str(w, r, "err-1");
		LIT(w, ",");
		fz_am_error(w, r);
		break;
	case AK_UPDATE:
	case AK_PUBLISH:
		LIT(w, "\"task_id\":");
		fz_task_id(w, r, parent);
		LIT(w, ",\"progress\":");
		fz_value(w, r);
		LIT(w, ",\"message\":");
		fz_str(w, r, "halfway");
		break;
	case AK_ASSIGN:
		LIT(w, "\"task_type\":");
		fz_intent(w, r, "execute");
		LIT(w, ",\"description\":");
		fz_str(w, r, "Do the thing");
		LIT(w, ",\"input\":");
		fz_value(w, r);
		break;
	case AK_SUBSCRIBE:
		LIT(w, "\"topic\":");
		FZ_WORD(w, r, topics);
		break;
	case AK_REGISTRY:
		LIT(w, "\"capability\":");
		fz_dest(w, r, "code-review");
		break;
	default:
		break;
	}
	LIT(w, "}");
}

/* An AgentMessage agent's message of kind k about the task parent. */
static void
fz_am(struct ndjson_writer *w, struct fz_rd *r, int k, const char *parent)
{
	static const char *const types[] = { "TASK_COMPLETE", "TASK_FAILED",
	    "TASK_HANDOFF", "TASK_HANDOFF", "HELP_REQUEST", "HELP_RESPONSE",
	    "STATUS_UPDATE", "ERROR_REPORT", "TASK_UPDATE", "HEARTBEAT",
	    "TASK_ASSIGNMENT", "SUBSCRIBE", "REGISTRY_QUERY", "TASK_UPDATE" };
	static const char *const tos[] = { "", "", "", "", "", "", "", "",
	    "", "", "corral", "topic:news", "", "topic:progress" };
	static const char *const prios[] = { "normal", "low", "high",
	    "critical", "urgent" };
	unsigned int	 d = fz_u8(r), f = fz_u8(r);
	int		 dmg = d >= 0xf0 ? (int)(d & 0xf) : DD_NONE;

	if (dmg == DD_NOT_OBJECT) {
		LIT(w, "[\"TASK_COMPLETE\"]");
		return;
	}
	if (dmg == DD_EMPTY || dmg == DD_HEADER_ARRAY) {
		LIT(w, "{}");
		return;
	}
	LIT(w, "{\"id\":");
	if (dmg == DD_ID_NUMBER)
		LIT(w, "12");
	else
		fz_msgid(w, r);
	LIT(w, ",\"type\":");
	if (dmg == DD_NO_TYPE)
		LIT(w, "null");
	else if (dmg == DD_TYPE_NUMBER)
		LIT(w, "7");
	else if (dmg == DD_BAD_TYPE)
		fz_str(w, r, "NOPE");
	else
		fz_quote(w, types[k], strlen(types[k]), 0);
	if (f & 1) {
		LIT(w, ",\"from\":");
		fz_str(w, r, "am");
		LIT(w, ",\"timestamp\":");
		fz_str(w, r, "2026-01-10T14:30:00Z");
	}
	LIT(w, ",\"to\":");
	if (dmg == DD_TO_NUMBER)
		LIT(w, "5");
	else
		fz_dest(w, r, tos[k]);
	LIT(w, ",\"payload\":");
	if (dmg == DD_BODY_STRING)
		fz_str(w, r, "payload");
	else
		fz_am_payload(w, r, k, parent);
	if ((f & 2) || dmg == DD_META_ARRAY || dmg == DD_PRIO_NUMBER ||
	    dmg == DD_CORR_NUMBER) {
		LIT(w, ",\"metadata\":");
		if (dmg == DD_META_ARRAY)
			LIT(w, "[]");
		else {
			LIT(w, "{\"correlation_id\":");
			if (dmg == DD_CORR_NUMBER)
				LIT(w, "3");
			else
				fz_task_id(w, r, parent);
			LIT(w, ",\"priority\":");
			if (dmg == DD_PRIO_NUMBER)
				LIT(w, "2");
			else
				FZ_WORD(w, r, prios);
			LIT(w, ",\"ttl_ms\":");
			fz_num(w, r, "60000");
			LIT(w, ",\"retry_count\":");
			fz_num(w, r, "0");
			LIT(w, ",\"max_retries\":3}");
		}
	}
	if (dmg == DD_DUP_KEY)
		LIT(w, ",\"type\":\"HEARTBEAT\"");
	if (dmg != DD_CUT)
		LIT(w, "}");
}

/*
 * A dialect agent's message: kind < 0x100 picks one of the kinds, and
 * FZ_ANSWER the answer to a request (a RESPONSE, a TASK_COMPLETE or
 * TASK_FAILED).
 */
#define FZ_ANSWER	0x100
static void
fz_dialect_msg(struct ndjson_writer *w, struct fz_rd *r, int dialect,
    unsigned int kind, const char *parent)
{
	if (dialect == FZ_BUS)
		fz_bus(w, r, kind == FZ_ANSWER ? BK_RESPONSE :
		    (int)(kind % BK_N), parent);
	else if (kind == FZ_ANSWER)
		fz_am(w, r, fz_u8(r) & 1 ? AK_FAILED : AK_COMPLETE, parent);
	else
		fz_am(w, r, (int)(kind % AK_N), parent);
}

/* ---- Checking what corral writes. ---- */

/*
 * Whether a JSON-RPC frame is owed an answer (docs/protocol.md): a
 * request is, and so is an invalid one without an id (answered with id
 * null); a valid notification and a response are not.
 */
static int
fz_rpc_owed(json_t *j)
{
	json_t	*m, *v, *p;

	if (!json_is_object(j))
		return 1;
	m = json_object_get(j, "method");
	if (m == NULL && (json_object_get(j, "result") != NULL ||
	    json_object_get(j, "error") != NULL))
		return 0;
	if (json_object_get(j, "id") != NULL)
		return 1;
	v = json_object_get(j, "jsonrpc");
	p = json_object_get(j, "params");
	return !json_is_string(v) || strcmp(json_string_value(v), "2.0") != 0 ||
	    !json_is_string(m) || (p != NULL && !json_is_object(p) &&
	    !json_is_array(p));
}

/*
 * How corral must treat a line read from a peer: 0 not a control frame,
 * 1 a control frame that gets no response, 2 one owed a response line.
 * An object with "jsonrpc" is a control frame, and so is a line that
 * begins with '[' (a batch, JSON or not), whose answers are one line: a
 * batch not JSON, empty or of more than 128 is one error; else one array
 * when any member is owed an answer.
 */
static int
fz_rpc_kind(const char *line, size_t len)
{
	json_error_t	 e;
	json_t		*j, *m;
	size_t		 i = 0, k;
	int		 kind = 0;

	if (memchr(line, '\0', len) != NULL)
		return 0;
	while (i < len && (line[i] == ' ' || line[i] == '\t' ||
	    line[i] == '\r'))
		i++;
	j = json_loadb(line, len, CORRAL_JSON_LOAD, &e);
	if (i < len && line[i] == '[') {
		kind = j == NULL || json_array_size(j) == 0 ||
		    json_array_size(j) > 128 ? 2 : 1;
		json_array_foreach(j, k, m)
			if (fz_rpc_owed(m))
				kind = 2;
	} else if (json_is_object(j) && json_object_get(j, "jsonrpc") != NULL)
		kind = fz_rpc_owed(j) ? 2 : 1;
	json_decref(j);
	return kind;
}

/* Return nonzero if s is one of the error categories. */
static int
fz_category(const char *s)
{
	return s != NULL && (strcmp(s, "TIMEOUT") == 0 ||
	    strcmp(s, "UNAVAILABLE") == 0 || strcmp(s, "REJECTED") == 0 ||
	    strcmp(s, "INTERNAL") == 0);
}

/*
 * Return nonzero for an envelope corral made itself (an error or a
 * notice): from agent "corral", with an id of this run.  Envelopes it
 * forwards may say anything.
 */
static int
fz_ours(json_t *j)
{
	const char	*id, *run = protocol_run_id();
	json_t		*agent = json_object_get(j, "agent");

	id = json_string_value(json_object_get(json_object_get(j, "trace"),
	    "id"));
	return json_is_string(json_object_get(agent, "name")) &&
	    strcmp(json_string_value(json_object_get(agent, "name")),
	    "corral") == 0 && id != NULL && strncmp(id, run, strlen(run)) == 0 &&
	    id[strlen(run)] == '-';
}

/* Return 0 if j is a well-formed JSON-RPC response, else -1. */
static int
fz_check_response(const char *who, json_t *j)
{
	json_t	*d;

	if (!json_is_object(j) || !json_is_string(json_object_get(j,
	    "jsonrpc")) || strcmp(json_string_value(json_object_get(j,
	    "jsonrpc")), "2.0") != 0 || json_object_get(j, "method") != NULL ||
	    json_object_get(j, "id") == NULL ||
	    (json_object_get(j, "result") == NULL) ==
	    (json_object_get(j, "error") == NULL))
		return -1;
	if ((d = json_object_get(j, "error")) != NULL &&
	    (!json_is_integer(json_object_get(d, "code")) ||
	    !json_is_string(json_object_get(d, "message"))))
		return -1;
	return 0;
}

/* Whether member key of o is a string. */
static int
fz_has_string(json_t *o, const char *key)
{
	return json_is_string(json_object_get(o, key));
}

/*
 * Check a message corral wrote to a dialect agent (docs/dialects.md): a
 * bus message has a header with its type and messageId, and a body; an
 * AgentMessage its id, timestamp, from, to and type, a payload and
 * metadata.
 */
static void
fz_check_dialect(const char *who, json_t *j, const char *line, size_t len,
    int dialect)
{
	json_t	*h = json_object_get(j, "header");
	int	 ok;

	if (dialect == FZ_BUS)
		ok = json_is_object(h) && fz_has_string(h, "type") &&
		    fz_has_string(h, "messageId") &&
		    json_is_object(json_object_get(j, "body"));
	else
		ok = fz_has_string(j, "id") && fz_has_string(j, "timestamp") &&
		    fz_has_string(j, "from") && fz_has_string(j, "to") &&
		    fz_has_string(j, "type") &&
		    json_object_get(j, "payload") != NULL &&
		    json_is_object(json_object_get(j, "metadata"));
	if (!ok)
		fz_fail("%s: corral wrote a malformed %s message: %.*s", who,
		    dialect == FZ_BUS ? "bus" : "AgentMessage",
		    (int)(len > 2000 ? 2000 : len), line);
}

/*
 * Check a line corral wrote to who, an agent speaking dialect.  Returns
 * 1 for a JSON-RPC response, 2 for a JSON-RPC request or notification,
 * 0 for an envelope or a dialect's message.
 */
static int
fz_check_line(const char *who, const char *line, size_t len, int serve,
    int dialect)
{
	struct env		 env;
	struct env_error	 err;
	json_error_t		 e;
	json_t			*j, *c, *d, *p;
	size_t			 i;
	int			 kind = 0;

	if (fz.verbose)
		fprintf(stderr, "> %s: %.*s\n", who, (int)(len > 500 ? 500 :
		    len), line);
	if ((j = json_loadb(line, len, CORRAL_JSON_LOAD, &e)) == NULL)
		fz_fail("%s: corral wrote invalid JSON (%s): %.*s", who, e.text,
		    (int)(len > 2000 ? 2000 : len), line);
	if (json_is_array(j)) {
		/* A batch's answers: responses, one line. */
		json_array_foreach(j, i, c)
			if (fz_check_response(who, c) != 0)
				fz_fail("%s: a batch's answer that is no "
				    "response: %.*s", who, (int)len, line);
		json_decref(j);
		return 1;
	}
	if (!json_is_object(j))
		fz_fail("%s: corral wrote a line that is not an object: %.*s",
		    who, (int)(len > 2000 ? 2000 : len), line);
	if (json_object_get(j, "jsonrpc") != NULL) {
		if (!json_is_string(json_object_get(j, "jsonrpc")) ||
		    strcmp(json_string_value(json_object_get(j, "jsonrpc")),
		    "2.0") != 0)
			fz_fail("%s: a frame without jsonrpc 2.0: %.*s", who,
			    (int)len, line);
		if (json_object_get(j, "method") != NULL) {
			if (!json_is_string(json_object_get(j, "method")))
				fz_fail("%s: a frame with a bad method", who);
			kind = 2;
		} else {
			if (fz_check_response(who, j) != 0)
				fz_fail("%s: a malformed response: %.*s", who,
				    (int)len, line);
			kind = 1;
		}
		json_decref(j);
		return kind;
	}
	if (dialect != FZ_ENVELOPE) {
		fz_check_dialect(who, j, line, len, dialect);
		json_decref(j);
		return 0;
	}
	if (jscan_run(fz.js, line, len) != 0)
		fz_fail("%s: jscan refuses what jansson took: %s", who,
		    fz.js->err);
	if (envelope_check(fz.js, line, len, &env, &err) != 0)
		fz_fail("%s: corral wrote an invalid envelope (%s: %s): %.*s",
		    who, err.path, err.msg, (int)(len > 2000 ? 2000 : len),
		    line);
	c = json_object_get(j, "content");
	if (env.ctype == CT_ERROR && fz_ours(j)) {
		d = json_object_get(c, "data");
		if (!json_is_string(json_object_get(d, "code")) ||
		    !fz_category(json_string_value(json_object_get(d,
		    "category"))) ||
		    !json_is_string(json_object_get(d, "message")))
			fz_fail("%s: a malformed error envelope: %.*s", who,
			    (int)len, line);
	} else if (serve) {
		/* A result names what it answers. */
		p = json_object_get(json_object_get(j, "trace"), "parents");
		if (!json_is_array(p) || json_array_size(p) == 0)
			fz_fail("%s: a result without trace.parents: %.*s",
			    who, (int)(len > 2000 ? 2000 : len), line);
	}
	jscan_trim(fz.js);
	json_decref(j);
	return 0;
}

/*
 * Whether a frame corral wrote to the client is a notification it may
 * send a client (docs/protocol.md): map/message (the result of a task
 * the client spawned, a message sent to it) and map/event.
 */
static int
fz_client_notification(const char *line, size_t len)
{
	json_t		*j = json_loadb(line, len, 0, NULL), *msg;
	const char	*m = json_string_value(json_object_get(j, "method"));
	int		 ok;

	msg = json_object_get(json_object_get(j, "params"), "message");
	ok = m != NULL && json_object_get(j, "id") == NULL &&
	    ((strcmp(m, CORRAL_M_MESSAGE) == 0 && json_is_object(msg) &&
	    json_is_string(json_object_get(msg, "id")) &&
	    json_is_string(json_object_get(msg, "from"))) ||
	    strcmp(m, CORRAL_M_EVENT) == 0);
	json_decref(j);
	return ok;
}

/* A line corral wrote on serve's stdout. */
static void
fz_stdout_line(void *arg, enum ndjson_kind kind, char *line, size_t len,
    size_t extra)
{
	int	k;

	if (kind != NDJSON_LINE)
		fz_fail("stdout: corral wrote a line with a NUL or too long");
	k = fz_check_line("stdout", line, len, 1, FZ_ENVELOPE);
	if (k == 1)
		fz.responses++;
	else if (k == 0)
		fz.outputs++;
	else if (!fz_client_notification(line, len))
		fz_fail("stdout: corral sent the client a request: %.*s",
		    (int)len, line);
}

/* A line corral wrote to an agent. */
static void
fz_agent_stdin_line(void *arg, enum ndjson_kind kind, char *line, size_t len,
    size_t extra)
{
	struct fz_proc	*fp = arg;

	if (kind != NDJSON_LINE)
		fz_fail("agent stdin: corral wrote a line with a NUL or too "
		    "long");
	if (fz_check_line(fp->dialect == FZ_BUS ? "bus agent stdin" :
	    fp->dialect == FZ_AM ? "agentmessage agent stdin" :
	    "agent stdin", line, len, 0, fp->dialect) == 1)
		fp->responses++;
}

/* A line the harness wrote as an agent, as corral will frame it. */
static void
fz_mirror_line(void *arg, enum ndjson_kind kind, char *line, size_t len,
    size_t extra)
{
	struct fz_proc	*fp = arg;

	if (kind == NDJSON_LINE && fz_rpc_kind(line, len) == 2)
		fp->expect++;
}

/* ---- The fake processes (spawn.c replaced). ---- */

/* Nothing to set up: no process is ever started. */
void
spawn_init(const struct workflow *wf, int pidns)
{
	(void)wf;
	(void)pidns;
}

/* No control socket is handed to the fake processes. */
void
spawn_set_control(const char *path)
{
	(void)path;
}

/* Every command is found (spawn_argv decides what starts). */
char *
spawn_find(const char *cmd, const struct workflow *wf, const char *path)
{
	(void)wf;
	(void)path;
	return xstrdup(cmd);
}

/* No signals to block around a clone that never happens. */
void
spawn_block_signals(sigset_t *old)
{
	sigemptyset(old);
}

/* See spawn_block_signals. */
void
spawn_restore_signals(const sigset_t *old)
{
	(void)old;
}

/*
 * Start a fake process: three pipes and an unused pid.  A command named
 * "missing..." (or empty) is not found, "busy..." fails as if out of
 * processes, and so does running out of fake processes.
 */
int
spawn_argv(const struct agent_conf *ac, char *const *argv, const char *id,
    const char *token, char *const *env, struct spawn_result *sr)
{
	struct fz_proc	*fp = NULL;
	int		 in[2], out[2], err[2];
	size_t		 i;

	(void)id;
	(void)token;
	(void)env;
	memset(sr, 0, sizeof *sr);
	sr->in = sr->out = sr->err = -1;
	if (argv == NULL || argv[0] == NULL || argv[0][0] == '\0' ||
	    strncmp(argv[0], "missing", 7) == 0) {
		sr->error = ENOENT;
		snprintf(sr->what, sizeof sr->what, "exec %s", argv != NULL &&
		    argv[0] != NULL ? argv[0] : "");
		return -1;
	}
	for (i = 0; i < FZ_PROCS && fp == NULL; i++)
		if (!fz.procs[i].used)
			fp = &fz.procs[i];
	if (fp == NULL || strncmp(argv[0], "busy", 4) == 0) {
		sr->error = EAGAIN;
		snprintf(sr->what, sizeof sr->what, "clone");
		return -1;
	}
	if (pipe2(in, O_CLOEXEC | O_NONBLOCK) == -1)
		fz_fail("pipe2: %s", strerror(errno));
	if (pipe2(out, O_CLOEXEC | O_NONBLOCK) == -1)
		fz_fail("pipe2: %s", strerror(errno));
	if (pipe2(err, O_CLOEXEC | O_NONBLOCK) == -1)
		fz_fail("pipe2: %s", strerror(errno));
	memset(fp, 0, sizeof *fp);
	fp->used = 1;
	fp->pid = fz.next_pid++;
	fp->in = in[0];
	fp->out = out[1];
	fp->err = err[1];
	if (ac->protocol != NULL && strcmp(ac->protocol, "bus") == 0)
		fp->dialect = FZ_BUS;
	else if (ac->protocol != NULL && strcmp(ac->protocol,
	    "agentmessage") == 0)
		fp->dialect = FZ_AM;
	ndjson_reader_init(&fp->rd, 1 << 26, 0);
	ndjson_reader_init(&fp->mirror, ac->max_line, 0);
	sr->pid = sr->hostpid = fp->pid;
	sr->in = in[1];
	sr->out = out[0];
	sr->err = err[0];
	return 0;
}

/* The agent whose process fp is, while corral holds it. */
static struct agent *
fz_agent_of(const struct fz_proc *fp)
{
	struct agent	*a;

	for (a = agent_first(); a != NULL; a = agent_next(a))
		if (a->proc.p.pid == fp->pid && (a->flags & AGENT_RUNNING))
			return a;
	return NULL;
}

/* Forget a fake process. */
static void
fz_proc_free(struct fz_proc *fp)
{
	if (fp->in != -1)
		close(fp->in);
	if (fp->out != -1)
		close(fp->out);
	if (fp->err != -1)
		close(fp->err);
	ndjson_reader_free(&fp->rd);
	ndjson_reader_free(&fp->mirror);
	memset(fp, 0, sizeof *fp);
}

/* Bytes waiting in a pipe. */
static int
fz_pending(int fd)
{
	int	n = 0;

	if (fd == -1 || ioctl(fd, FIONREAD, &n) == -1)
		return 0;
	return n;
}

/* Let corral read what waits in an agent's stdout, as the loop would. */
static int
fz_feed_read(struct fz_proc *fp)
{
	struct agent	*a;
	int		 i, fed = 0;

	for (i = 0; i < 64; i++) {
		if ((a = fz_agent_of(fp)) == NULL ||
		    !ev_is_active(&a->proc.io.rw) ||
		    fz_pending(a->proc.io.rfd) == 0)
			break;
		ev_feed_event(LOOP, &a->proc.io.rw, EV_READ);
		ev_invoke_pending(LOOP);
		fed = 1;
	}
	return fed;
}

/* Write bytes on an agent's stdout; corral reads them at once. */
static void
fz_agent_write(struct fz_proc *fp, const char *data, size_t len)
{
	ssize_t	n;
	size_t	off = 0;

	if (fz.verbose)
		fprintf(stderr, "< agent pid %ld: %.*s", (long)fp->pid,
		    (int)(len > 500 ? 500 : len), data);

	while (fp->out != -1 && off < len) {
		n = write(fp->out, data + off, len - off);
		if (n > 0) {
			ndjson_feed(&fp->mirror, (char *)data + off, (size_t)n,
			    fz_mirror_line, fp);
			off += (size_t)n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		/* Full: corral reads, or (paused) the rest is dropped. */
		if (n == -1 && errno == EAGAIN && fz_feed_read(fp))
			continue;
		break;
	}
	(void)fz_feed_read(fp);
}

/* Hand the agent an exit (or stop) status, as libev would. */
static void
fz_status(struct fz_proc *fp, int status)
{
	struct agent	*a = fz_agent_of(fp);

	if (a == NULL || !(a->proc.p.flags & PROC_LIVE))
		return;
	proc_waited(fp->pid, status);
	ev_invoke_pending(LOOP);
}

/* Close the process's stdout and/or stderr; corral sees EOF. */
static void
fz_close_output(struct fz_proc *fp, int out, int err)
{
	struct agent	*a;
	int		 i;

	if (out && fp->out != -1) {
		ndjson_finish(&fp->mirror, fz_mirror_line, fp);
		close(fp->out);
		fp->out = -1;
	}
	if (err && fp->err != -1) {
		close(fp->err);
		fp->err = -1;
	}
	for (i = 0; i < 64; i++) {
		if ((a = fz_agent_of(fp)) == NULL)
			return;
		if (out && ev_is_active(&a->proc.io.rw))
			ev_feed_event(LOOP, &a->proc.io.rw, EV_READ);
		else if (err && proc_err_open(&a->proc.p))
			proc_err_read(&a->proc.p);
		else
			return;
		ev_invoke_pending(LOOP);
	}
}

/* The process ends: its pipes close and its status is reaped. */
static void
fz_exit(struct fz_proc *fp, int status, int status_first)
{
	if (fp->exited)
		return;
	fp->exited = 1;
	if (status_first)
		fz_status(fp, status);
	fz_close_output(fp, 1, 1);
	if (!status_first)
		fz_status(fp, status);
}

/* Read what corral wrote to a process's stdin. */
static int
fz_read_stdin(struct fz_proc *fp)
{
	static char	buf[1 << 16];
	ssize_t		n;
	int		progress = 0;

	while (fp->in != -1) {
		n = read(fp->in, buf, sizeof buf);
		if (n > 0) {
			ndjson_feed(&fp->rd, buf, (size_t)n,
			    fz_agent_stdin_line, fp);
			progress = 1;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == 0) {
			/*
			 * EOF.  A last line cut short is allowed: a stuck
			 * peer's queue is dropped when its stdin is closed.
			 */
			close(fp->in);
			fp->in = -1;
			fp->stdin_eof = 1;
			progress = 1;
		}
		break;
	}
	return progress;
}

/*
 * Play every process for a moment: read its stdin, and obey what corral
 * did to it (closed its stdin, signals, suspension).
 */
static int
fz_procs_run(void)
{
	struct fz_proc	*fp;
	struct agent	*a;
	size_t		 i;
	int		 progress = 0;

	for (i = 0; i < FZ_PROCS; i++) {
		fp = &fz.procs[i];
		if (!fp->used)
			continue;
		progress |= fz_read_stdin(fp);
		if ((a = fz_agent_of(fp)) == NULL) {
			/* corral let go of it (it ended, or was abandoned). */
			fz_proc_free(fp);
			progress = 1;
			continue;
		}
		if (fp->exited)
			continue;
		if (a->life.state == AS_KILLING) {
			fz_exit(fp, SIGKILL, 0);
			progress = 1;
		} else if (a->life.state == AS_TERMINATING && !fp->stubborn) {
			fz_exit(fp, SIGTERM, 1);
			progress = 1;
		} else if (fp->stdin_eof && !fp->stubborn) {
			fz_exit(fp, FZ_EXITED(0), 0);
			progress = 1;
		} else if (a->life.state == AS_SUSPENDED && !fp->stopped) {
			fp->stopped = 1;
			fz_status(fp, FZ_STOPPED(SIGSTOP));
			progress = 1;
		} else if (a->life.state != AS_SUSPENDED && fp->stopped) {
			fp->stopped = 0;
			fz_status(fp, FZ_CONTINUED);
			progress = 1;
		}
	}
	return progress;
}

/* Live processes, and the one the script picks. */
static struct fz_proc *
fz_pick(struct fz_rd *r)
{
	struct fz_proc	*live[FZ_PROCS];
	size_t		 i, n = 0;
	unsigned int	 v = fz_u8(r);

	for (i = 0; i < FZ_PROCS; i++)
		if (fz.procs[i].used && !fz.procs[i].exited &&
		    fz_agent_of(&fz.procs[i]) != NULL)
			live[n++] = &fz.procs[i];
	return n == 0 ? NULL : live[v % n];
}

/* ---- Serve's stdin and stdout. ---- */

/* A line corral serve reads (what supervisor_stdin_line does). */
static void
fz_stdin_line(struct chan *c, enum ndjson_kind kind, char *line, size_t len,
    size_t extra)
{
	int	k;

	if (fz.ending)
		return;
	k = kind == NDJSON_LINE ? fz_rpc_kind(line, len) : 0;
	if (k == 0)
		fz.inputs++;
	else if (k == 2)
		fz.expect++;
	dialect_input(&fz.client, line, len, kind, extra);
}

/* serve's stdout drained (what supervisor_stdout_drained does). */
static void
fz_stdout_drained(struct chan *c, int arg)
{
	supervisor_stdin_pause(STDIN_P_STDOUT, 0);
}

/* Let corral read its stdin, as the loop would, while it reads. */
static int
fz_feed_stdin(void)
{
	struct chan	*c = supervisor_stdio();
	int		 i, fed = 0;

	for (i = 0; i < 64; i++) {
		if (!ev_is_active(&c->rw) || fz_pending(c->rfd) == 0)
			break;
		ev_feed_event(LOOP, &c->rw, EV_READ);
		ev_invoke_pending(LOOP);
		fed = 1;
	}
	return fed;
}

/* The client writes bytes on corral serve's stdin. */
static void
fz_client_write(const char *data, size_t len)
{
	ssize_t	n;
	size_t	off = 0;

	if (fz.verbose)
		fprintf(stderr, "< client: %.*s", (int)(len > 500 ? 500 : len),
		    data);

	while (off < len) {
		n = write(fz.stdin_w, data + off, len - off);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN && fz_feed_stdin())
			continue;
		break;
	}
	(void)fz_feed_stdin();
}

/* Read what corral serve wrote on stdout. */
static int
fz_read_stdout(void)
{
	static char	buf[1 << 16];
	ssize_t		n;
	int		progress = 0;

	for (;;) {
		n = read(fz.stdout_r, buf, sizeof buf);
		if (n > 0) {
			ndjson_feed(&fz.stdout_rd, buf, (size_t)n,
			    fz_stdout_line, NULL);
			progress = 1;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		break;
	}
	return progress;
}

/*
 * Run the watchers the loop would run now that the harness read and
 * wrote: writers whose pipe has room again, readers with bytes waiting.
 */
static int
fz_feed_io(void)
{
	struct chan	*c = supervisor_stdio();
	struct agent	*a;
	int		 fed = 0;

	if (c->ww != NULL && ev_is_active(c->ww) && fz_pending(c->wfd) == 0) {
		ev_feed_event(LOOP, c->ww, EV_WRITE);
		fed = 1;
	}
	for (a = agent_first(); a != NULL; a = agent_next(a))
		if (a->proc.io.ww != NULL && ev_is_active(a->proc.io.ww) &&
		    fz_pending(a->proc.io.wfd) == 0) {
			ev_feed_event(LOOP, a->proc.io.ww, EV_WRITE);
			fed = 1;
		}
	if (fed)
		ev_invoke_pending(LOOP);
	fed |= fz_feed_stdin();
	for (a = agent_first(); a != NULL; a = agent_next(a))
		if (ev_is_active(&a->proc.io.rw) &&
		    fz_pending(a->proc.io.rfd) > 0) {
			ev_feed_event(LOOP, &a->proc.io.rw, EV_READ);
			ev_invoke_pending(LOOP);
			fed = 1;
			break;	/* the list may have changed */
		}
	return fed;
}

/* ---- The invariants. ---- */

/* The outcome counters must balance with the requests still alive. */
static void
fz_check_stats(void)
{
	const struct engine_stats	*st = engine_stats_get();

	if (st->accepted != st->replied + st->errored + st->expired +
	    st->live_msgs)
		fz_fail("accepted %llu != replied %llu + errored %llu + "
		    "expired %llu + live %llu",
		    (unsigned long long)st->accepted,
		    (unsigned long long)st->replied,
		    (unsigned long long)st->errored,
		    (unsigned long long)st->expired,
		    (unsigned long long)st->live_msgs);
}

/* Check what must hold between steps. */
static void
fz_check(void)
{
	struct fz_proc	*fp;
	struct agent	*a;
	size_t		 i;

	fz_check_stats();
	if (fz.responses != fz.expect)
		fz_fail("client: %llu JSON-RPC requests got %llu responses",
		    (unsigned long long)fz.expect,
		    (unsigned long long)fz.responses);
	if (fz.outputs > fz.inputs)
		fz_fail("client: %llu inputs got %llu answers",
		    (unsigned long long)fz.inputs,
		    (unsigned long long)fz.outputs);
	for (i = 0; i < FZ_PROCS; i++) {
		fp = &fz.procs[i];
		if (!fp->used || (a = fz_agent_of(fp)) == NULL)
			continue;
		if ((a->flags & AGENT_DEAD) || !agent_writable(a)) {
			/* Responses to it are dropped: nothing to hold. */
			fp->expect = fp->responses;
			continue;
		}
		if (fz_pending(a->proc.io.rfd) > 0 ||
		    ndjson_reader_pending(&fp->mirror))
			continue;	/* corral has not read it all yet */
		if (fp->responses != fp->expect)
			fz_fail("agent %s: %llu JSON-RPC requests got %llu "
			    "responses", a->id,
			    (unsigned long long)fp->expect,
			    (unsigned long long)fp->responses);
	}
}

/*
 * Let corral and the processes do what follows from a step, as the loop
 * would before it blocks again, then check.
 */
static void
fz_pump(void)
{
	int	round, progress;

	for (round = 0; round < 64; round++) {
		chan_flush_all();
		/* The rest of a read a reader stopped in (chan.c's timer). */
		progress = chan_resume_pending();
		progress |= fz_read_stdout();
		progress |= fz_procs_run();
		progress |= fz_feed_io();
		agent_reap_dead(0);
		if (!progress)
			break;
	}
	chan_flush_all();
	(void)fz_read_stdout();
	fz_check();
}

/* ---- Timers. ---- */

/* Collect the active timers the script can make run out. */
static size_t
fz_timers(ev_timer **t, size_t max)
{
	struct agent	*a;
	struct msg	*m;
	struct job	*jobs[64];
	size_t		 n = 0, nj = 0, i;

#define FZ_ADD(x) do {							\
	if (ev_is_active(x) && n < max)					\
		t[n++] = (x);						\
} while (0)
#define FZ_MSG(m) do {							\
	FZ_ADD(&(m)->timer);						\
	if ((m)->job != NULL) {						\
		for (i = 0; i < nj && jobs[i] != (m)->job; i++)		\
			;						\
		if (i == nj && nj < NITEMS(jobs)) {			\
			jobs[nj++] = (m)->job;				\
			FZ_ADD(&(m)->job->deadline_w);			\
		}							\
	}								\
} while (0)

	for (a = agent_first(); a != NULL; a = agent_next(a)) {
		if (a->life.life_w != NULL)
			FZ_ADD(a->life.life_w);
		if (a->life.more != NULL)
			FZ_ADD(&a->life.more->recover_w);
		if (a->breaker != NULL)
			FZ_ADD(&a->breaker->timer);
		if (a->budget != NULL)
			FZ_ADD(&a->budget->timer);
		if (a->proc.p.pipe_w != NULL)
			FZ_ADD(&a->proc.p.pipe_w->w);
	}
	/* In flight, waiting in a queue, or for a retry. */
	for (m = engine_live_next(NULL); m != NULL; m = engine_live_next(m))
		FZ_MSG(m);
#undef FZ_MSG
#undef FZ_ADD
	return n;
}

/* Make a timer run out now, as libev does: one-shot timers stop first. */
static void
fz_fire(ev_timer *w)
{
	if (w->repeat == 0.)
		ev_timer_stop(LOOP, w);
	ev_feed_event(LOOP, w, EV_TIMER);
	ev_invoke_pending(LOOP);
}

/* ---- Steps. ---- */

enum {
	OP_CLIENT_ENV, OP_CLIENT_RPC, OP_CLIENT_RAW, OP_REPLY, OP_AGENT_RPC,
	OP_AGENT_RAW, OP_EXIT, OP_TROUBLE, OP_TIMER, OP_LOOP
};

/* Opcode byte & 31 to step: the letters, and the common steps between. */
static const unsigned char fz_ops[32] = {
	['A' & 31] = OP_AGENT_RPC, ['B' & 31] = OP_TROUBLE,
	['C' & 31] = OP_CLIENT_ENV, ['E' & 31] = OP_EXIT,
	['J' & 31] = OP_CLIENT_RPC, ['K' & 31] = OP_CLIENT_RAW,
	['L' & 31] = OP_LOOP, ['R' & 31] = OP_REPLY, ['T' & 31] = OP_TIMER,
	['W' & 31] = OP_AGENT_RAW,
	[0] = OP_REPLY, ['D' & 31] = OP_CLIENT_ENV, ['F' & 31] = OP_TIMER,
	['G' & 31] = OP_REPLY, ['H' & 31] = OP_AGENT_RPC,
	['I' & 31] = OP_CLIENT_ENV, ['M' & 31] = OP_REPLY,
	['N' & 31] = OP_AGENT_RPC, ['O' & 31] = OP_CLIENT_ENV,
	['P' & 31] = OP_REPLY, ['Q' & 31] = OP_EXIT,
	['S' & 31] = OP_REPLY, ['U' & 31] = OP_CLIENT_ENV,
	['V' & 31] = OP_REPLY, ['X' & 31] = OP_TROUBLE,
	['Y' & 31] = OP_AGENT_RPC, ['Z' & 31] = OP_TIMER,
	[27] = OP_REPLY, [28] = OP_CLIENT_ENV, [29] = OP_AGENT_RPC,
	[30] = OP_REPLY, [31] = OP_LOOP,
};

/* Start a line in the builder. */
static struct ndjson_writer *
fz_line(void)
{
	fz.line.head = fz.line.tail = 0;
	return &fz.line;
}

/* Raw bytes: the parameters, repeated to make long lines if asked. */
static void
fz_raw(struct ndjson_writer *w, struct fz_rd *r, unsigned int flags)
{
	const char	*s;
	size_t		 n = r->n, reps, i;

	s = fz_take(r, &n);
	reps = (flags >> 1) & 7 ? (size_t)64 * ((flags >> 1) & 7) : 1;
	for (i = 0; i < reps; i++)
		ndjson_writer_add(w, s, n);
	if (!(flags & 1))
		LIT(w, "\n");
}

/* The id of the k-th request the agent of fp works on (or the last). */
static const char *
fz_inflight(struct fz_proc *fp, unsigned int k)
{
	struct agent	*a = fz_agent_of(fp);
	struct msg	*m;

	if (a == NULL)
		return NULL;
	for (m = engine_inflight_first(a); m != NULL;
	    m = engine_inflight_next(m))
		if (k-- == 0 || TAILQ_NEXT(m, entry) == NULL)
			return m->id;
	return NULL;
}

/* An agent replies to one of its requests (or to none). */
static void
fz_reply(struct fz_rd *r)
{
	struct ndjson_writer	*w = fz_line();
	struct fz_proc		*fp = fz_pick(r);
	struct agent		*a;
	struct msg		*m;
	unsigned int		 k = fz_u8(r), mode = fz_u8(r);
	const char		*parent = NULL;

	if (fp == NULL || (a = fz_agent_of(fp)) == NULL)
		return;
	for (m = engine_inflight_first(a); m != NULL;
	    m = engine_inflight_next(m))
		if (k-- == 0 || TAILQ_NEXT(m, entry) == NULL)
			break;
	if (m != NULL)
		parent = m->id;
	switch (mode % 8) {
	case 1:
		parent = NULL;	/* no parents: the oldest request */
		break;
	case 2:
		parent = "late-or-unknown";
		break;
	default:
		break;
	}
	if (fp->dialect == FZ_ENVELOPE)
		fz_envelope(w, r, FZ_REPLY, parent);
	else {
		/* Mostly the answer, now and then another kind. */
		k = fz_u8(r);
		fz_dialect_msg(w, r, fp->dialect, k < 0xc0 ? FZ_ANSWER : k,
		    parent);
	}
	LIT(w, "\n");
	fz_agent_write(fp, w->buf, w->tail);
	if (mode % 8 == 3)	/* the same reply twice */
		fz_agent_write(fp, w->buf, w->tail);
}

/* Trouble with a process. */
static void
fz_trouble(struct fz_rd *r)
{
	struct fz_proc		*fp = fz_pick(r);
	struct ndjson_writer	*w;
	unsigned int		 v = fz_u8(r);

	if (fp == NULL || fp->exited)
		return;
	switch (v % 8) {
	case 0:		/* it closes its stdout and runs on */
		fz_close_output(fp, 1, 0);
		break;
	case 1:		/* it closes its stdin */
		if (fp->in != -1) {
			close(fp->in);
			fp->in = -1;
		}
		break;
	case 2:
		fz_status(fp, FZ_STOPPED(SIGSTOP));
		break;
	case 3:
		fz_status(fp, FZ_CONTINUED);
		break;
	case 4:
		fp->stubborn = !fp->stubborn;
		break;
	case 5:		/* it exits; something holds its pipes */
		fz_status(fp, FZ_EXITED(v >> 4));
		break;
	case 6:		/* a line on stderr */
		w = fz_line();
		fz_raw(w, r, fz_u8(r) & 0x0e);
		if (fp->err != -1 && write(fp->err, w->buf, w->tail) > 0) {
			struct agent *a = fz_agent_of(fp);

			if (a != NULL && proc_err_open(&a->proc.p)) {
				proc_err_read(&a->proc.p);
				ev_invoke_pending(LOOP);
			}
		}
		break;
	default:	/* its handshake */
		w = fz_line();
		LIT(w, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":"
		    "\"map/connect\",\"params\":{}}\n");
		fz_agent_write(fp, w->buf, w->tail);
		break;
	}
}

/* Run one step of the script. */
static void
fz_step(unsigned int op, struct fz_rd *r)
{
	static const int	 statuses[] = { FZ_EXITED(0), FZ_EXITED(1),
	    SIGKILL, SIGTERM, SIGSEGV, FZ_EXITED(127) };
	struct ndjson_writer	*w = fz_line();
	struct fz_proc		*fp;
	ev_timer		*timers[FZ_TIMERS];
	size_t			 n;
	unsigned int		 v;

	switch (fz_ops[op & 31]) {
	case OP_CLIENT_ENV:
		fz_envelope(w, r, FZ_INPUT, NULL);
		LIT(w, "\n");
		fz_client_write(w->buf, w->tail);
		break;
	case OP_CLIENT_RPC:
		fz_frame(w, r, 1);
		LIT(w, "\n");
		fz_client_write(w->buf, w->tail);
		break;
	case OP_CLIENT_RAW:
		fz_raw(w, r, fz_u8(r));
		fz_client_write(w->buf, w->tail);
		break;
	case OP_REPLY:
		fz_reply(r);
		break;
	case OP_AGENT_RPC:
		if ((fp = fz_pick(r)) == NULL)
			break;
		fz_frame(w, r, 0);
		LIT(w, "\n");
		fz_agent_write(fp, w->buf, w->tail);
		break;
	case OP_AGENT_RAW:
		if ((fp = fz_pick(r)) == NULL)
			break;
		if (fp->dialect != FZ_ENVELOPE && (v = fz_u8(r)) >= 0x40) {
			fz_dialect_msg(w, r, fp->dialect, v, fz_inflight(fp,
			    fz_u8(r)));
			LIT(w, "\n");
		} else
			fz_raw(w, r, fz_u8(r));
		fz_agent_write(fp, w->buf, w->tail);
		break;
	case OP_EXIT:
		if ((fp = fz_pick(r)) == NULL)
			break;
		v = fz_u8(r);
		fz_exit(fp, statuses[v % NITEMS(statuses)], (v & 0x80) != 0);
		break;
	case OP_TROUBLE:
		fz_trouble(r);
		break;
	case OP_TIMER:
		if ((n = fz_timers(timers, FZ_TIMERS)) > 0)
			fz_fire(timers[fz_u8(r) % n]);
		break;
	default:
		ev_run(LOOP, EVRUN_NOWAIT);
		break;
	}
}

/* ---- One input: set up, run the script, shut down, check. ---- */

/* The longest line serve reads (what supervisor_stdio_start computes). */
static size_t
fz_stdin_max(void)
{
	size_t	max = CORRAL_MAX_LINE_DEFAULT, i;

	for (i = 0; i < fz.wf->nagents; i++)
		if (fz.wf->agents[i].max_line > max)
			max = fz.wf->agents[i].max_line;
	if (fz.wf->stdin_max_line != 0)
		max = fz.wf->stdin_max_line;
	return max;
}

/* Set up the supervisor for corral serve and start the agents. */
static void
fz_begin(unsigned int variant)
{
	static const struct chan_ops	 stdio_ops = { .line = fz_stdin_line,
	    .drain = fz_stdout_drained };
	const struct workflow	*wf;
	struct chan		*c;
	struct agent		*a;
	int			 in[2], out[2];
	size_t			 i;
	unsigned int		 k;

	memset(fz.procs, 0, sizeof fz.procs);
	fz.next_pid = FZ_PID_BASE;
	fz.ending = 0;
	fz.inputs = fz.outputs = fz.expect = fz.responses = 0;
	fz.wf = fz.wfs[variant % FZ_VARIANTS];
	wf = fz.wf;
	supervisor_setup(wf, MODE_SERVE);

	if (workspace_open(wf) != 0)
		fz_fail("workspace_open: %s", strerror(errno));

	if (pipe2(in, O_CLOEXEC | O_NONBLOCK) == -1 ||
	    pipe2(out, O_CLOEXEC | O_NONBLOCK) == -1)
		fz_fail("pipe2: %s", strerror(errno));
	(void)fcntl(out[1], F_SETPIPE_SZ, 1 << 20);
	fz.stdin_w = in[1];
	fz.stdout_r = out[0];
	c = supervisor_stdio();
	chan_init(c, "stdin", in[0], out[1], fz_stdin_max(), NULL);
	c->ops = &stdio_ops;
	fz.client.name = "corral-serve";
	fz.client.agent = NULL;
	fz.client.chan = c;
	fz.client.role = PEER_CLIENT;
	ndjson_reader_init(&fz.stdout_rd, 1 << 26, 0);

	/* As supervisor_start_agents does. */
	for (i = 0; i < wf->nagents; i++) {
		if (!wf->agents[i].autostart)
			continue;
		for (k = 1; k <= wf->agents[i].instances; k++) {
			a = lifecycle_create(&wf->agents[i], k, NULL);
			route_add_agent(a);
			if (lifecycle_start(a) == 0)
				budget_set(a, wf->agents[i].budget_tokens,
				    wf->agents[i].budget_cost,
				    wf->agents[i].budget_time);
		}
	}
	chan_start(c);
	fz_pump();
}

/* Describe every agent, for a failure report. */
static void
fz_dump(void)
{
	struct agent	*a;
	struct msg	*m;

	for (a = agent_first(); a != NULL; a = agent_next(a)) {
		fprintf(stderr, "  agent %s: %s, running %d, outstanding %u, "
		    "direct %d, flags %#x, life flags %#x\n", a->id,
		    lifecycle_state_name(a->life.state),
		    (a->flags & AGENT_RUNNING) != 0, a->life.outstanding,
		    !TAILQ_EMPTY(&a->slot.direct), a->flags, a->life.flags);
		for (m = engine_live_next(NULL); m != NULL;
		    m = engine_live_next(m))
			if (m->where == MSG_QUEUED && m->target == a)
				fprintf(stderr, "    waits: %s (kind %d)\n",
				    m->id, m->kind);
		for (m = engine_inflight_first(a); m != NULL;
	    m = engine_inflight_next(m))
			fprintf(stderr, "    in flight: %s (kind %d)\n", m->id,
			    m->kind);
	}
}

/*
 * Check every line of the audit log, then empty it for the next input.
 * It stays open across inputs: its writer thread is costly to start.
 */
static void
fz_check_audit(void)
{
	json_error_t	 e;
	json_t		*j;
	FILE		*f;
	char		*line = NULL;
	size_t		 cap = 0;
	ssize_t		 n;

	auditlog_flush();
	if ((f = fopen(fz.audit, "r+")) == NULL)
		fz_fail("%s: %s", fz.audit, strerror(errno));
	while ((n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] != '\n')
			fz_fail("audit log: a line without its newline");
		if ((j = json_loadb(line, (size_t)n - 1, CORRAL_JSON_LOAD,
		    &e)) == NULL)
			fz_fail("audit log: invalid JSON (%s): %.*s", e.text,
			    (int)(n > 2000 ? 2000 : n), line);
		if (!json_is_integer(json_object_get(j, "seq")) ||
		    !json_is_string(json_object_get(j, "ev")))
			fz_fail("audit log: no seq or ev: %s", line);
		json_decref(j);
	}
	free(line);
	if (ftruncate(fileno(f), 0) == -1)
		fz_fail("%s: %s", fz.audit, strerror(errno));
	fclose(f);
}

/* Remove everything under a directory (the workspace between inputs). */
static void
fz_empty_dir(int dfd)
{
	DIR		*d;
	struct dirent	*de;
	int		 sub;

	if ((d = fdopendir(dfd)) == NULL) {
		close(dfd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0)
			continue;
		if ((sub = openat(dirfd(d), de->d_name, O_RDONLY |
		    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) != -1) {
			fz_empty_dir(sub);
			(void)unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
		}
	}
	closedir(d);
}

/*
 * Shut down the real way, let the processes go as asked and the stop
 * timers run out, then check that everything has its one outcome and
 * free all.
 */
static void
fz_end(void)
{
	const struct engine_stats	*st;
	struct agent			*a;
	size_t				 i;
	int				 round, fd;

	fz.ending = 1;
	supervisor_shutdown(0);
	for (round = 0; round < 64; round++) {
		fz_pump();
		if (!supervisor_any_alive() && agent_count_running() == 0)
			break;
		/* Time passes: grace periods and backoffs run out. */
		for (a = agent_first(); a != NULL; a = agent_next(a))
			if (a->life.life_w != NULL &&
			    ev_is_active(a->life.life_w) &&
			    !(a->life.flags & LF_HB)) {
				fz_fire(a->life.life_w);
				break;
			}
	}
	if (supervisor_any_alive() || agent_count_running() != 0) {
		fz_dump();
		fz_fail("the shutdown did not end: %u agents still running",
		    agent_count_running());
	}
	fz_pump();
	st = engine_stats_get();
	if (st->live_msgs != 0 || engine_jobs_count() != 0 ||
	    route_queued_count() != 0) {
		fz_dump();
		fz_fail("after the shutdown: %llu requests and %u jobs left, "
		    "%u queued", (unsigned long long)st->live_msgs,
		    engine_jobs_count(), route_queued_count());
	}
	if (fz.outputs != fz.inputs)
		fz_fail("client: %llu inputs got %llu answers",
		    (unsigned long long)fz.inputs,
		    (unsigned long long)fz.outputs);

	agent_reap_dead(1);
	for (i = 0; i < FZ_PROCS; i++)
		if (fz.procs[i].used)
			fz_proc_free(&fz.procs[i]);
	chan_close(supervisor_stdio());
	(void)fz_read_stdout();
	ndjson_reader_free(&fz.stdout_rd);
	close(fz.stdout_r);
	close(fz.stdin_w);
	fz_check_audit();
	workspace_close();
	if ((fd = open(fz.ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1)
		fz_empty_dir(fd);
	jscan_drain();
}

/* ---- Once per process. ---- */

/* The workflow, with blanks the variants fill. */
static const char fz_yaml[] =
    "name: fuzz-engine\n"
    "agents:\n"
    "  worker:\n"
    "    cmd: [worker]\n"
    "    instances: 2\n"
    "    max_inflight: 2\n"
    "    max_line: 16KiB\n"
    "    timeout: 1h\n"
    "    heartbeat: 1h\n"
    "    restart: {policy: permanent, max: 2, within: 1h}\n"
    "    children: {max: 3, depth: 2, strategy: %s}\n"
    "    breaker: {failures: 2, reset: 1h, probes: 1}\n"
    "  critic:\n"
    "    cmd: [critic]\n"
    "    role: critic\n"
    "    max_inflight: 1\n"
    "    timeout: 1h\n"
    "  planner:\n"
    "    cmd: [planner]\n"
    "    role: lead\n"
    "    ready: handshake\n"
    "    max_inflight: 2\n"
    "    timeout: none\n"
    "    restart: temporary\n"
    "    budget: {tokens: 5000, cost: 1}\n"
    "  helper:\n"
    "    cmd: [helper]\n"
    "    autostart: false\n"
    "    role: helper\n"
    "    timeout: 1h\n"
    "    restart: {policy: transient, max: 1}\n"
    "    budget: {tokens: 2000}\n"
    "  flaky:\n"
    "    cmd: [missing-flaky]\n"
    "    autostart: false\n"
    "%s"
    "routes:\n"
    "%s"
    "reflection: {below: 0.5, max_rounds: %d, missing: %s}\n"
    "limits: {max_steps: %d, max_depth: 4, max_queue: %d, "
    "max_inflight: %d, max_agents: 16, tree_depth: 3, tree_children: 4, "
    "deadline: 1h, budget: {tokens: %d, cost: 50}}\n"
    "retry: {max: %d, initial: 0, factor: 1, max_delay: 0}\n"
    "inline_spawn: %s\n"
    "shutdown: %s\n"
    "%s%s%s";

static const char fz_routes_all[] =
    "  \"*\": worker\n"
    "  reflect: critic\n"
    "  plan: planner\n"
    "  finalize: [critic, helper]\n"
    "  summarize: helper\n"
    "  analyze: flaky\n";

static const char fz_routes_some[] =
    "  execute: worker\n"
    "  reflect: [critic, worker]\n"
    "  plan: planner\n"
    "  finalize: worker\n";

static const char fz_routes_dialects[] =
    "  \"*\": worker\n"
    "  reflect: critic\n"
    "  plan: planner\n"
    "  retrieve: bus\n"
    "  analyze: am\n"
    "  summarize: [bus, am]\n"
    "  finalize: [am, critic]\n";

/* The dialect agents of the fifth workflow. */
static const char fz_agents_dialects[] =
    "  bus:\n"
    "    cmd: [bus]\n"
    "    protocol: bus\n"
    "    max_inflight: 2\n"
    "    timeout: 1h\n"
    "    heartbeat: 1h\n"
    "    capabilities: [code-review]\n"
    "    subscribe: [progress]\n"
    "    restart: {policy: permanent, max: 2, within: 1h}\n"
    "  am:\n"
    "    cmd: [am]\n"
    "    protocol: agentmessage\n"
    "    max_inflight: 2\n"
    "    max_line: 16KiB\n"
    "    timeout: 1h\n"
    "    heartbeat: 1h\n"
    "    capabilities: [analysis]\n"
    "    subscribe: [news]\n"
    "    restart: {policy: transient, max: 1}\n";

/* Remove the private directory at exit. */
static void
fz_cleanup(void)
{
	int	fd;

	if (fz.dir[0] == '\0')
		return;
	if ((fd = open(fz.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1)
		fz_empty_dir(fd);
	(void)rmdir(fz.dir);
}

/* Make the private directory and load the five workflows. */
static void
fz_init(void)
{
	static const struct {
		const char	*strategy;
		const char	*agents;	/* more agents */
		const char	*routes;
		int		 rounds;
		const char	*missing;
		int		 steps, queue, inflight, tokens, retries;
		const char	*inline_spawn, *shutdown;
		int		 workspace;
	} v[FZ_VARIANTS] = {
		{ "one_for_all", "", fz_routes_all, 2, "accept", 12, 6, 6,
		    100000, 2, "true", "sequential", 1 },
		{ "rest_for_one", "", fz_routes_all, 1, "reflect", 6, 3, 4,
		    100000, 0, "true", "parallel", 1 },
		{ "one_for_one", "", fz_routes_some, 3, "accept", 30, 10, 8,
		    100000, 1, "false", "sequential", 0 },
		{ "one_for_all", "", fz_routes_all, 1, "reflect", 2, 1, 2, 50,
		    2, "true", "parallel", 1 },
		{ "one_for_one", fz_agents_dialects, fz_routes_dialects, 2,
		    "reflect", 20, 8, 8, 100000, 1, "true", "sequential", 1 },
	};
	struct config_error	 err;
	char			 text[8192], path[PATH_MAX + 32];
	const char		*tmp = getenv("TMPDIR");
	int			 i, len;

	/* LOOP is the default loop unchecked: make it before anyone uses it. */
	if (ev_default_loop(0) == NULL)
		fz_fail("no default loop");
	fz.verbose = getenv("CORRAL_FUZZ_VERBOSE") != NULL;
	log_init(fz.verbose ? 2 : 0);
	snprintf(fz.dir, sizeof fz.dir, "%s/corral-fuzz-engine.XXXXXX",
	    tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
	if (mkdtemp(fz.dir) == NULL)
		fz_fail("mkdtemp %s: %s", fz.dir, strerror(errno));
	atexit(fz_cleanup);
	snprintf(fz.audit, sizeof fz.audit, "%s/audit.log", fz.dir);
	snprintf(fz.ws, sizeof fz.ws, "%s/ws", fz.dir);
	snprintf(path, sizeof path, "%s/workflow.yaml", fz.dir);
	for (i = 0; i < FZ_VARIANTS; i++) {
		len = snprintf(text, sizeof text, fz_yaml, v[i].strategy,
		    v[i].agents, v[i].routes, v[i].rounds, v[i].missing, v[i].steps,
		    v[i].queue, v[i].inflight, v[i].tokens, v[i].retries,
		    v[i].inline_spawn, v[i].shutdown,
		    v[i].workspace ? "workspace: " : "",
		    v[i].workspace ? fz.ws : "",
		    v[i].workspace ? "\n" : "");
		if (len < 0 || (size_t)len >= sizeof text)
			fz_fail("workflow text too long");
		if ((fz.wfs[i] = config_load_string(text, (size_t)len, path,
		    &err)) == NULL)
			fz_fail("workflow %d: %d:%d: %s", i, err.line,
			    err.column, err.msg);
		/* As corral serve --max-line 16KiB. */
		fz.wfs[i]->stdin_max_line = 16384;
	}
	if (auditlog_open(fz.audit, path) != 0)
		fz_fail("auditlog_open %s: %s", fz.audit, strerror(errno));
	fz.js = jscan_create(4);
	ndjson_writer_init(&fz.line, 0, 1);
	fz.ready = 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_rd	in = { data, size }, step;
	unsigned int	op, steps = 0;
	size_t		len;

	if (size > FZ_MAX_INPUT)
		return 0;
	if (!fz.ready)
		fz_init();
	if (fz.verbose)
		fprintf(stderr, "=== input of %zu bytes\n", size);
	fz_begin(fz_u8(&in));
	while (in.n > 0 && steps++ < FZ_MAX_STEPS) {
		op = fz_u8(&in);
		len = fz_u8(&in);
		step.p = (const uint8_t *)fz_take(&in, &len);
		step.n = len;
		fz_step(op, &step);
		fz_pump();
	}
	fz_end();
	return 0;
}
