/*
 * corral run --trace (and serve's): one line on stderr for each envelope
 * that goes to an agent or comes from one, for a person watching the
 * messages flow without --log and jq:
 *
 *   corral: 12:00:01.234 planner -> corral: plan 4bfec8-2 (re 4bfec8-1)
 *       "One step: count the words."
 *
 * The time, who sent it and who gets it, its intent, its trace id and
 * the request it answers, and the start of its text (its task when it
 * has none), escaped: an agent's bytes never reach the terminal as they
 * are.  Off, it costs one test per envelope.
 */

#include <string.h>
#include <time.h>

#include "corral.h"

#define TRACE_CUT	72	/* characters of text shown */

static int		 trace_enabled;
static struct jscan	*trace_js;

/* Turn tracing on or off. */
void
trace_enable(int on)
{
	trace_enabled = on;
	if (on && trace_js == NULL)
		trace_js = jscan_create(4);
}

/* Is tracing on? */
int
trace_on(void)
{
	return trace_enabled;
}

/*
 * Copy the string member key of object obj into buf, escaped and cut to
 * cut characters ("..." marks a cut); empty when there is none.
 */
static void
trace_member(const char *line, int obj, const char *key, char *buf,
    size_t len, size_t cut)
{
	const char	*s;
	size_t		 n, k;
	int		 t;

	buf[0] = '\0';
	if (obj == -1 || (t = jscan_get(trace_js, line, obj, key)) == -1 ||
	    trace_js->tok[t].type != JT_STRING)
		return;
	s = jscan_text(trace_js, line, t, &n);
	k = util_utf8_cut(s, n, cut);
	log_escape(buf, len - 4, s, k);
	if (k < n)
		strlcat(buf, "...", len);
}

/* The first string of array member key of obj, as trace_member does. */
static void
trace_first(const char *line, int obj, const char *key, char *buf,
    size_t len)
{
	const char	*s;
	size_t		 n;
	int		 a, e;

	buf[0] = '\0';
	if (obj == -1 || (a = jscan_get(trace_js, line, obj, key)) == -1 ||
	    trace_js->tok[a].type != JT_ARRAY ||
	    (e = jscan_first(trace_js, a)) == -1 ||
	    trace_js->tok[e].type != JT_STRING)
		return;
	s = jscan_text(trace_js, line, e, &n);
	log_escape(buf, len, s, n);
}

/*
 * Print one line for an envelope from one party to another (agent ids,
 * or "corral", "user", "stdin", a client's name).
 */
void
trace_envelope(const char *from, const char *to, const char *line,
    size_t len)
{
	struct timespec	 ts;
	struct tm	 tm;
	char		 when[16], intent[64], id[200], re[200], type[32];
	char		 text[TRACE_CUT * 4 + 16];
	int		 t, c;

	if (!trace_enabled || jscan_run(trace_js, line, len) != 0 ||
	    trace_js->tok[0].type != JT_OBJECT)
		return;
	trace_member(line, 0, "intent", intent, sizeof intent, 32);
	t = JSCAN_GET(trace_js, line, 0, "trace");
	if (t != -1 && trace_js->tok[t].type != JT_OBJECT)
		t = -1;
	trace_member(line, t, "id", id, sizeof id, 48);
	trace_first(line, t, "parents", re, sizeof re);
	c = JSCAN_GET(trace_js, line, 0, "content");
	if (c != -1 && trace_js->tok[c].type != JT_OBJECT)
		c = -1;
	trace_member(line, c, "type", type, sizeof type, 16);
	trace_member(line, c, "text", text, sizeof text, TRACE_CUT);
	if (text[0] == '\0')
		trace_member(line, 0, "task", text, sizeof text, TRACE_CUT);
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof when, "%H:%M:%S", &tm);
	log_trace("%s.%03ld %s -> %s: %s %s%s%s%s %s\"%s\"", when,
	    ts.tv_nsec / 1000000, from, to, intent[0] != '\0' ? intent : "-",
	    id[0] != '\0' ? id : "-", re[0] != '\0' ? " (re " : "", re,
	    re[0] != '\0' ? ")" : "", strcmp(type, "error") == 0 ?
	    "error: " : "", text);
}
