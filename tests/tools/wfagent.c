/*
 * wfagent: a scriptable agent for the workflow regress scripts (wf-*.sh).
 *
 * It answers each request envelope with one reply whose trace.parents
 * names the request.  What the reply says (its intent, confidence, next
 * actions) and how the agent misbehaves around it are set by options.
 * Options before the first --when apply to every request; options after
 * "--when INTENT" apply only to requests with that intent and override
 * the general ones.  Notices, messages, child results and JSON-RPC
 * responses are recorded and otherwise ignored; pings are answered.
 *
 * Whole-agent options:
 *   --record FILE     append "start PID", "recv LINE" for every line read,
 *                     "reply ID" after each reply and "eof" to FILE
 *   --handshake MS    wait MS milliseconds, then send map/connect
 *   --unsolicited     at start (after the handshake), write one envelope
 *                     that answers nothing (no trace.parents)
 *
 * Per-request options (general, or after --when INTENT):
 *   --intent I        the reply's intent (default: the request's)
 *   --score X         confidence.score (default 0.9); "none": no confidence
 *   --next I[:TASK]   add a next action (repeatable; a --when section's
 *                     first --next replaces the general list)
 *   --text T          content.text (default "INTENT by AGENT_ID")
 *   --error           reply with content.type error
 *   --garbage N       write N lines that are not JSON before the reply
 *   --bad KIND        write an invalid envelope before the reply: "score"
 *                     (confidence.score 7) or "task" (no task member)
 *   --delay MS        wait MS milliseconds before replying
 *   --wait-file FILE  before replying (and before --delay), wait until
 *                     FILE exists, so a script decides when the reply goes
 *   --slower MS       wait MS milliseconds more per instance number above
 *                     one (CORRAL_AGENT_ID "name.N"), so instances differ
 *   --hang            never reply
 *   --no-parents      leave trace.parents out of the reply
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "tool.h"

#define NEXT_MAX	16
#define NSECT		12	/* general + 10 intents + spare */

static const char *const intents[] = {
	"plan", "decompose", "execute", "route", "retrieve", "analyze",
	"summarize", "reflect", "finalize", "tool.call", NULL
};

struct rule {
	const char	*intent;
	const char	*score;
	const char	*text;
	const char	*next[NEXT_MAX];
	int		 nnext;
	int		 next_set;
	int		 error;
	int		 garbage;
	const char	*bad;
	long		 delay;
	long		 slower;
	const char	*wait_file;
	int		 hang;
	int		 no_parents;
};

static struct rule	 rules[NSECT];	/* [0] general, [1 + i] intents[i] */
static const char	*record_path;
#define record(...)	tool_record(record_path, __VA_ARGS__)
static long		 handshake_ms = -1;
static int		 unsolicited;
static const char	*agent_id = "?";
static long		 nreplies;
static long		 instance = 1;

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: wfagent [--record FILE] [--handshake MS] "
	    "[--unsolicited] [RULE...] [--when INTENT RULE...]...\n"
	    "RULE: --intent I | --score X|none | --next I[:TASK] | --text T | "
	    "--error | --garbage N | --bad score|task | --delay MS | "
	    "--wait-file FILE | --slower MS | --hang | "
	    "--no-parents\n");
	exit(64);
}

static int
intent_index(const char *s)
{
	int	i;

	for (i = 0; intents[i] != NULL; i++)
		if (strcmp(intents[i], s) == 0)
			return i;
	return -1;
}

/* Write a JSON value as one line on stdout. */
static void
emit(json_t *j)
{
	char	*s;

	s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(15));
	if (s == NULL)
		exit(70);
	tool_write_all(1, s, strlen(s));
	tool_write_all(1, "\n", 1);
	free(s);
}

/* The effective value of a rule field: the intent's section, else general. */
#define PICK(sect, field, unset) \
	((sect) != NULL && (sect)->field != (unset) ? (sect)->field : \
	    rules[0].field)

/* Build and write the reply to a request. */
static void
answer(json_t *req)
{
	const char	*rintent, *id, *intent, *score, *text, *bad, *const *next;
	struct rule	*sect = NULL;
	json_t		*r, *trace, *actions, *a;
	char		 buf[256], *colon;
	int		 i, n, nnext;

	rintent = json_string_value(json_object_get(req, "intent"));
	id = json_string_value(json_object_get(json_object_get(req, "trace"),
	    "id"));
	if (rintent != NULL && (i = intent_index(rintent)) >= 0 &&
	    rules[1 + i].intent != (const char *)-1)
		sect = &rules[1 + i];
	if (PICK(sect, hang, -1) > 0)
		return;
	if (PICK(sect, wait_file, NULL) != NULL)
		while (access(PICK(sect, wait_file, NULL), F_OK) != 0)
			tool_msleep(20);
	if (PICK(sect, delay, -1) > 0 || PICK(sect, slower, -1) > 0)
		tool_msleep((PICK(sect, delay, -1) > 0 ?
		    PICK(sect, delay, -1) : 0) + (instance - 1) *
		    (PICK(sect, slower, -1) > 0 ? PICK(sect, slower, -1) : 0));
	n = PICK(sect, garbage, -1);
	for (i = 0; i < n; i++) {
		snprintf(buf, sizeof buf, "garbage line %d from %s, not JSON\n",
		    i + 1, agent_id);
		tool_write_all(1, buf, strlen(buf));
	}
	bad = PICK(sect, bad, NULL);
	if (bad != NULL) {
		/* Invalid, but with the request's parent: still not a reply. */
		if (strcmp(bad, "score") == 0)
			r = json_pack("{s:s, s:s, s:s, s:s, s:{s:s}, s:{s:f}}",
			    "protocol", "multiagent-1.0", "role", "agent",
			    "intent", "finalize", "task", "bad score",
			    "content", "type", "text", "confidence", "score",
			    7.0);
		else
			r = json_pack("{s:s, s:s, s:s, s:{s:s}}",
			    "protocol", "multiagent-1.0", "role", "agent",
			    "intent", "finalize", "content", "type", "text");
		if (id != NULL)
			json_object_set_new(r, "trace", json_pack("{s:[s]}",
			    "parents", id));
		emit(r);
		json_decref(r);
	}

	intent = PICK(sect, intent, NULL);
	if (intent == NULL)
		intent = rintent != NULL ? rintent : "finalize";
	text = PICK(sect, text, NULL);
	if (text == NULL) {
		snprintf(buf, sizeof buf, "%s by %s", rintent != NULL ?
		    rintent : "?", agent_id);
		text = buf;
	}
	r = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:s, s:s, s:{s:s, s:s}}",
	    "protocol", "multiagent-1.0", "role", "agent",
	    "agent", "id", agent_id, "name", "wfagent", "model", "test",
	    "intent", intent, "task", rintent != NULL ? rintent : "reply",
	    "content", "type", PICK(sect, error, -1) > 0 ? "error" : "text",
	    "text", text);
	if (r == NULL)
		exit(70);
	score = PICK(sect, score, NULL);
	if (score == NULL)
		score = "0.9";
	if (strcmp(score, "none") != 0)
		json_object_set_new(r, "confidence", json_pack("{s:f}",
		    "score", strtod(score, NULL)));
	if (sect != NULL && sect->next_set) {
		next = sect->next;
		nnext = sect->nnext;
	} else {
		next = rules[0].next;
		nnext = rules[0].nnext;
	}
	if (nnext > 0) {
		actions = json_array();
		for (i = 0; i < nnext; i++) {
			snprintf(buf, sizeof buf, "%s", next[i]);
			if ((colon = strchr(buf, ':')) != NULL)
				*colon++ = '\0';
			a = json_pack("{s:s, s:s}", "intent", buf, "task",
			    colon != NULL ? colon : "next step");
			json_array_append_new(actions, a);
		}
		json_object_set_new(r, "outputs", json_pack("{s:o}",
		    "next_actions", actions));
	}
	trace = json_object();
	if (id != NULL && PICK(sect, no_parents, -1) <= 0)
		json_object_set_new(trace, "parents", json_pack("[s]", id));
	if (json_object_size(trace) > 0)
		json_object_set_new(r, "trace", trace);
	else
		json_decref(trace);
	emit(r);
	json_decref(r);
	nreplies++;
	record("reply %s", id != NULL ? id : "-");
}

/* Handle one line read on stdin. */
static void
handle(const char *line)
{
	json_t		*j, *kind, *id;
	json_error_t	 e;
	const char	*m;
	char		*s;

	record("recv %s", line);
	if (*line == '\0')
		return;
	if ((j = json_loads(line, 0, &e)) == NULL)
		return;
	if (json_object_get(j, "jsonrpc") != NULL) {
		m = json_string_value(json_object_get(j, "method"));
		id = json_object_get(j, "id");
		if (m != NULL && strcmp(m, "ping") == 0 && id != NULL) {
			json_t *r = json_pack("{s:s, s:O, s:{}}", "jsonrpc",
			    "2.0", "id", id, "result");
			s = json_dumps(r, JSON_COMPACT);
			tool_write_all(1, s, strlen(s));
			tool_write_all(1, "\n", 1);
			free(s);
			json_decref(r);
		}
		json_decref(j);
		return;
	}
	kind = json_object_get(json_object_get(j, "corral"), "kind");
	if (json_is_string(kind) && strcmp(json_string_value(kind), "task") !=
	    0) {
		json_decref(j);
		return;	/* notice, message, child result: never answered */
	}
	answer(j);
	json_decref(j);
}

/* Set one per-request option in section r; returns 0 if it was one. */
static int
rule_option(struct rule *r, int argc, char **argv, int *ip)
{
	const char	*o = argv[*ip];
	int		 i = *ip;

#define ARG() (i + 1 < argc ? argv[++i] : (usage(), (char *)NULL))
	if (strcmp(o, "--intent") == 0) {
		r->intent = ARG();
		if (intent_index(r->intent) < 0)
			usage();
	} else if (strcmp(o, "--score") == 0)
		r->score = ARG();
	else if (strcmp(o, "--text") == 0)
		r->text = ARG();
	else if (strcmp(o, "--next") == 0) {
		if (r->nnext == NEXT_MAX)
			usage();
		r->next[r->nnext++] = ARG();
		r->next_set = 1;
	} else if (strcmp(o, "--error") == 0)
		r->error = 1;
	else if (strcmp(o, "--garbage") == 0)
		r->garbage = atoi(ARG());
	else if (strcmp(o, "--bad") == 0) {
		r->bad = ARG();
		if (strcmp(r->bad, "score") != 0 && strcmp(r->bad, "task") != 0)
			usage();
	} else if (strcmp(o, "--delay") == 0)
		r->delay = atol(ARG());
	else if (strcmp(o, "--wait-file") == 0)
		r->wait_file = ARG();
	else if (strcmp(o, "--slower") == 0)
		r->slower = atol(ARG());
	else if (strcmp(o, "--hang") == 0)
		r->hang = 1;
	else if (strcmp(o, "--no-parents") == 0)
		r->no_parents = 1;
	else
		return -1;
#undef ARG
	*ip = i;
	return 0;
}

int
main(int argc, char **argv)
{
	struct rule	*cur = &rules[0];
	struct pollfd	 pfd;
	char		*buf = NULL, *nl, *start;
	size_t		 len = 0, cap = 0;
	ssize_t		 n;
	int		 i, k;
	const char	*e;

	/* Sections other than the general one start "unset". */
	for (k = 1; k < NSECT; k++) {
		rules[k].intent = (const char *)-1;
		rules[k].error = rules[k].garbage = rules[k].hang = -1;
		rules[k].delay = rules[k].slower = -1;
		rules[k].no_parents = -1;
	}
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--record") == 0 && i + 1 < argc)
			record_path = argv[++i];
		else if (strcmp(argv[i], "--handshake") == 0 && i + 1 < argc)
			handshake_ms = atol(argv[++i]);
		else if (strcmp(argv[i], "--unsolicited") == 0)
			unsolicited = 1;
		else if (strcmp(argv[i], "--when") == 0 && i + 1 < argc) {
			if ((k = intent_index(argv[++i])) < 0)
				usage();
			cur = &rules[1 + k];
			cur->intent = NULL;	/* the section exists now */
		} else if (rule_option(cur, argc, argv, &i) != 0)
			usage();
	}
	if ((e = getenv("CORRAL_AGENT_ID")) != NULL) {
		const char *dot = strrchr(e, '.');

		agent_id = e;
		if (dot != NULL && dot[1] >= '1' && dot[1] <= '9')
			instance = atol(dot + 1);
	}
	record("start %ld", (long)getpid());

	if (handshake_ms >= 0) {
		tool_msleep(handshake_ms);
		record("connect");
		static const char hs[] = "{\"jsonrpc\":\"2.0\",\"id\":1,"
		    "\"method\":\"map/connect\",\"params\":{\"name\":"
		    "\"wfagent\"}}\n";
		tool_write_all(1, hs, sizeof hs - 1);
	}
	if (unsolicited) {
		json_t *u = json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s}}",
		    "protocol", "multiagent-1.0", "role", "agent", "intent",
		    "analyze", "task", "nobody asked", "content", "type",
		    "text", "text", "unsolicited");
		emit(u);
		json_decref(u);
		record("unsolicited");
	}

	for (;;) {
		pfd.fd = 0;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, -1) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (cap - len < 65536) {
			cap = cap ? cap * 2 : 131072;
			if ((buf = realloc(buf, cap)) == NULL)
				exit(70);
		}
		n = read(0, buf + len, cap - len - 1);
		if (n == -1 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		start = buf;
		while ((nl = memchr(start, '\n', len - (size_t)(start - buf))) !=
		    NULL) {
			*nl = '\0';
			handle(start);
			start = nl + 1;
		}
		len -= (size_t)(start - buf);
		memmove(buf, start, len);
	}
	record("eof");
	free(buf);
	return 0;
}
