/*
 * relgen: input generator for the rel-* regress scripts.
 *
 *   relgen env N [options]     N multiagent-1.0 envelopes, one a line
 *       --id PREFIX            trace.id PREFIX<k> (default "in-")
 *       --start K              first k (default 1)
 *       --size BYTES           pad content.text so each line is ~BYTES long
 *       --intent I             the intent (default plan)
 *       --task T               the task (default "ok")
 *       --every K TASK         every Kth envelope (k % K == 0) gets TASK
 *       --priority P           a "priority" member (number or name);
 *                              "cycle" gives k % 5
 *       --ttl MS               a top-level "ttl_ms"
 *       --rate R               at most R lines a second (paced writes)
 *   relgen hostile [--names]   the catalogue of hostile lines (relcat.h),
 *                              or just their names, one a line
 *   relgen line BYTES [--nonl] one line of BYTES 'a' bytes (not JSON),
 *                              without its newline with --nonl
 *   relgen flood N [TEXT]      N short lines TEXT (default "{}")
 *
 * Output goes to stdout with plain blocking writes; EPIPE ends it quietly.
 * "--tag ANYTHING" anywhere is ignored: the scripts pass their directory
 * so that their cleanup finds a writer that is still blocked.
 */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "relcat.h"

#include "tool.h"

static void
usage(void)
{
	fprintf(stderr, "usage: relgen env N [--id P] [--start K] [--size B] "
	    "[--intent I] [--task T] [--every K TASK] [--priority P] "
	    "[--ttl MS] [--rate R]\n"
	    "       relgen hostile [--names]\n"
	    "       relgen line BYTES [--nonl]\n"
	    "       relgen flood N [TEXT]\n");
	exit(64);
}

/* Write all of buf to stdout; exit quietly when the reader is gone. */
static void
out(const void *buf, size_t len)
{
	const char	*p = buf;
	ssize_t		 n;

	while (len > 0) {
		n = write(1, p, len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			exit(errno == EPIPE ? 0 : 1);
		}
		p += n;
		len -= (size_t)n;
	}
}

static void
sleep_until(double t)
{
	double		d = t - tool_mono();
	struct timespec	ts;

	if (d <= 0)
		return;
	ts.tv_sec = (time_t)d;
	ts.tv_nsec = (long)((d - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static int
gen_env(int argc, char **argv)
{
	const char	*id = "in-", *intent = "plan", *task = "ok";
	const char	*every_task = NULL, *prio = NULL;
	long		 n, start = 1, size = 0, every = 0, ttl = -1, k;
	double		 rate = 0, t0;
	char		 head[1024], tail[512], pbuf[64], *pad = NULL;
	int		 i, hl, tl;
	size_t		 padlen = 0;

	if (argc < 1)
		usage();
	n = atol(argv[0]);
	for (i = 1; i < argc; i++) {
#define ARG() (i + 1 < argc ? argv[++i] : (usage(), (char *)NULL))
		if (strcmp(argv[i], "--id") == 0)
			id = ARG();
		else if (strcmp(argv[i], "--start") == 0)
			start = atol(ARG());
		else if (strcmp(argv[i], "--size") == 0)
			size = atol(ARG());
		else if (strcmp(argv[i], "--intent") == 0)
			intent = ARG();
		else if (strcmp(argv[i], "--task") == 0)
			task = ARG();
		else if (strcmp(argv[i], "--every") == 0) {
			every = atol(ARG());
			every_task = ARG();
		} else if (strcmp(argv[i], "--priority") == 0)
			prio = ARG();
		else if (strcmp(argv[i], "--ttl") == 0)
			ttl = atol(ARG());
		else if (strcmp(argv[i], "--rate") == 0)
			rate = atof(ARG());
		else
			usage();
	}
	if (size > 0) {
		padlen = (size_t)size;
		if ((pad = malloc(padlen)) == NULL)
			return 1;
		memset(pad, 'x', padlen);
	}
	t0 = tool_mono();
	for (k = start; k < start + n; k++) {
		const char *tk = every > 0 && k % every == 0 ? every_task : task;

		pbuf[0] = '\0';
		if (prio != NULL && strcmp(prio, "cycle") == 0)
			snprintf(pbuf, sizeof pbuf, ",\"priority\":%ld", k % 5);
		else if (prio != NULL && prio[0] >= '0' && prio[0] <= '9')
			snprintf(pbuf, sizeof pbuf, ",\"priority\":%s", prio);
		else if (prio != NULL)
			snprintf(pbuf, sizeof pbuf, ",\"priority\":\"%s\"", prio);
		hl = snprintf(head, sizeof head, "{\"protocol\":\"multiagent-1.0\","
		    "\"role\":\"user\",\"intent\":\"%s\",\"task\":\"%s\","
		    "\"content\":{\"type\":\"text\",\"text\":\"", intent, tk);
		tl = snprintf(tail, sizeof tail, "\"},\"trace\":{\"id\":\"%s%ld\"}"
		    "%s", id, k, pbuf);
		if (ttl >= 0)
			tl += snprintf(tail + tl, sizeof tail - (size_t)tl,
			    ",\"ttl_ms\":%ld", ttl);
		tl += snprintf(tail + tl, sizeof tail - (size_t)tl, "}\n");
		out(head, (size_t)hl);
		/* --size counts the line without its newline. */
		if (pad != NULL && padlen + 1 > (size_t)(hl + tl))
			out(pad, padlen + 1 - (size_t)(hl + tl));
		out(tail, (size_t)tl);
		if (rate > 0)
			sleep_until(t0 + (double)(k - start + 1) / rate);
	}
	free(pad);
	return 0;
}

static int
gen_hostile(int argc, char **argv)
{
	size_t	i;
	int	names = argc > 0 && strcmp(argv[0], "--names") == 0;

	relcat_init();
	for (i = 0; i < relcat_n; i++) {
		if (names) {
			out(relcat[i].name, strlen(relcat[i].name));
		} else
			out(relcat[i].data, relcat[i].len);
		out("\n", 1);
	}
	return 0;
}

static int
gen_line(int argc, char **argv)
{
	static char	buf[65536];
	long long	n;
	size_t		c;

	if (argc < 1)
		usage();
	n = atoll(argv[0]);
	memset(buf, 'a', sizeof buf);
	while (n > 0) {
		c = n > (long long)sizeof buf ? sizeof buf : (size_t)n;
		out(buf, c);
		n -= (long long)c;
	}
	if (!(argc > 1 && strcmp(argv[1], "--nonl") == 0))
		out("\n", 1);
	return 0;
}

static int
gen_flood(int argc, char **argv)
{
	static char	buf[65536];
	const char	*text = argc > 1 ? argv[1] : "{}";
	size_t		 tl = strlen(text), used = 0;
	long		 n, k;

	if (argc < 1 || tl + 1 > sizeof buf)
		usage();
	n = atol(argv[0]);
	for (k = 0; k < n; k++) {
		if (used + tl + 1 > sizeof buf) {
			out(buf, used);
			used = 0;
		}
		memcpy(buf + used, text, tl);
		used += tl;
		buf[used++] = '\n';
	}
	out(buf, used);
	return 0;
}

int
main(int argc, char **argv)
{
	int	i, j;

	signal(SIGPIPE, SIG_IGN);
	for (i = j = 1; i < argc; i++) {
		if (strcmp(argv[i], "--tag") == 0 && i + 1 < argc) {
			i++;
			continue;
		}
		argv[j++] = argv[i];
	}
	argc = j;
	argv[argc] = NULL;
	if (argc < 2)
		usage();
	if (strcmp(argv[1], "env") == 0)
		return gen_env(argc - 2, argv + 2);
	if (strcmp(argv[1], "hostile") == 0)
		return gen_hostile(argc - 2, argv + 2);
	if (strcmp(argv[1], "line") == 0)
		return gen_line(argc - 2, argv + 2);
	if (strcmp(argv[1], "flood") == 0)
		return gen_flood(argc - 2, argv + 2);
	usage();
	return 64;
}
