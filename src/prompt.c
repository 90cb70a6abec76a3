/*
 * The question corral run asks on its terminal when a step escalates
 * (docs/steps.md, "A person in the loop"): answer and retry, proceed
 * anyway, or abort the run.  The log has already shown the step's
 * summary, notes and artifacts; this asks, reads the answer from stdin
 * and gives it to the step module, as corral answer would.
 *
 * It asks only when stdin and stderr are both terminals.  One question
 * at a time: more escalations wait their turn, and one answered from
 * elsewhere (corral answer, a MAP client) is taken off.  stdin stays in
 * the terminal's line mode and is read only when it is readable, so a
 * read never blocks the loop and nothing changes the terminal for the
 * shell after corral.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"

#define PROMPT_LINE	4096	/* bytes of one answer */

enum prompt_stage {
	PROMPT_IDLE,
	PROMPT_CHOICE,		/* [a]nswer, [p]roceed, a[b]ort? */
	PROMPT_TEXT		/* the answer's text */
};

static int			 prompt_on;
static enum prompt_stage	 prompt_stage;
static ev_io			 prompt_w;
static json_t			*prompt_queue;	/* escalations, oldest first */
static char			 prompt_buf[PROMPT_LINE];
static size_t			 prompt_len;

static void	prompt_read_cb(struct ev_loop *, ev_io *, int);

/* Ask on the terminal from now on, if enabled and there is one. */
void
prompt_init(int enabled)
{
	prompt_stop();
	prompt_on = enabled && isatty(STDIN_FILENO) && isatty(STDERR_FILENO);
	prompt_queue = json_array();
	prompt_stage = PROMPT_IDLE;
	prompt_len = 0;
	ev_io_init(&prompt_w, prompt_read_cb, STDIN_FILENO, EV_READ);
}

/* Return nonzero if corral asks on its terminal. */
int
prompt_active(void)
{
	return prompt_on;
}

/* Stop asking (the run is over). */
void
prompt_stop(void)
{
	if (ev_is_active(&prompt_w))
		ev_io_stop(LOOP, &prompt_w);
	if (prompt_stage != PROMPT_IDLE)
		progress_hold(0);
	prompt_stage = PROMPT_IDLE;
	json_decref(prompt_queue);
	prompt_queue = NULL;
}

/* Put the question for the oldest escalation on the terminal. */
static void
prompt_show(void)
{
	json_t	*q = json_array_get(prompt_queue, 0);

	if (q == NULL) {
		prompt_stage = PROMPT_IDLE;
		ev_io_stop(LOOP, &prompt_w);
		progress_hold(0);
		return;
	}
	progress_hold(1);
	fprintf(stderr, "corral: step %s of job %s needs your answer.\n"
	    "[a]nswer and retry, [p]roceed anyway, a[b]ort the run? ",
	    json_string_value(json_object_get(q, "step")),
	    json_string_value(json_object_get(q, "jobId")));
	fflush(stderr);
	prompt_stage = PROMPT_CHOICE;
	if (!ev_is_active(&prompt_w))
		ev_io_start(LOOP, &prompt_w);
}

/* A step escalated: ask now, or after the questions before it. */
void
prompt_ask(json_t *info)
{
	if (!prompt_on || prompt_queue == NULL)
		return;
	json_array_append(prompt_queue, info);
	if (prompt_stage == PROMPT_IDLE)
		prompt_show();
}

/*
 * An escalation is over (answered here or elsewhere, or its job ended,
 * why says): its question goes.  One on the terminal now is followed by
 * the next.
 */
void
prompt_cancel(const char *job, const char *step, const char *why)
{
	json_t	*q;
	size_t	 i;

	if (prompt_queue == NULL)
		return;
	json_array_foreach(prompt_queue, i, q) {
		if (strcmp(json_string_value(json_object_get(q, "jobId")),
		    job) == 0 && strcmp(json_string_value(json_object_get(q,
		    "step")), step) == 0)
			break;
	}
	if (i == json_array_size(prompt_queue))
		return;
	json_array_remove(prompt_queue, i);
	if (i == 0 && prompt_stage != PROMPT_IDLE) {
		if (strcmp(why, STEP_JOB_ENDED) == 0)
			fprintf(stderr, "\ncorral: step %s of job %s waits no "
			    "more: %s.\n", step, job, why);
		else
			fprintf(stderr, "\ncorral: step %s of job %s was "
			    "answered elsewhere (%s).\n", step, job, why);
		prompt_show();
	}
}

/*
 * Give the answer to the step module; say so if it was refused.  Then the
 * next question, unless the answer itself led to one already.
 */
static void
prompt_answer(int action, const char *text)
{
	json_t	*q = json_incref(json_array_get(prompt_queue, 0));
	char	 job[CORRAL_ID_MAX], why[256];

	prompt_stage = PROMPT_IDLE;	/* no "answered elsewhere" for it */
	if (step_answer(json_string_value(json_object_get(q, "jobId")),
	    json_string_value(json_object_get(q, "step")), action, text,
	    "terminal", job, sizeof job, why, sizeof why) != 0) {
		fprintf(stderr, "corral: %s\n", why);
		if (json_array_get(prompt_queue, 0) == q)
			json_array_remove(prompt_queue, 0);
	}
	json_decref(q);
	if (prompt_stage == PROMPT_IDLE)
		prompt_show();
}

/* One line the person typed, without its newline. */
static void
prompt_line(char *line)
{
	while (*line == ' ' || *line == '\t')
		line++;
	if (prompt_stage == PROMPT_TEXT) {
		if (*line == '\0') {
			fprintf(stderr, "Your answer (one line): ");
			return;
		}
		prompt_answer(STEP_RETRY, line);
		return;
	}
	switch (*line) {
	case 'a':
	case 'A':
		prompt_stage = PROMPT_TEXT;
		fprintf(stderr, "Your answer: ");
		break;
	case 'p':
	case 'P':
		prompt_answer(STEP_PROCEED, NULL);
		break;
	case 'b':
	case 'B':
		prompt_answer(STEP_ABORT, NULL);
		break;
	default:
		fprintf(stderr, "[a]nswer and retry, [p]roceed anyway, a[b]ort "
		    "the run? ");
		break;
	}
	fflush(stderr);
}

/* stdin is readable: take what the terminal has, a line at a time. */
static void
prompt_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	char	*nl;
	ssize_t	 n;
	size_t	 used;

	n = read(STDIN_FILENO, prompt_buf + prompt_len, sizeof prompt_buf - 1 -
	    prompt_len);
	if (n <= 0) {
		/* The terminal is gone: answers come from elsewhere. */
		ev_io_stop(loop, w);
		prompt_on = 0;
		prompt_stage = PROMPT_IDLE;
		progress_hold(0);
		return;
	}
	prompt_len += (size_t)n;
	prompt_buf[prompt_len] = '\0';
	while ((nl = strchr(prompt_buf, '\n')) != NULL) {
		*nl = '\0';
		if (nl > prompt_buf && nl[-1] == '\r')
			nl[-1] = '\0';
		used = (size_t)(nl - prompt_buf) + 1;
		prompt_line(prompt_buf);
		memmove(prompt_buf, prompt_buf + used, prompt_len - used + 1);
		prompt_len -= used;
		if (prompt_stage == PROMPT_IDLE)
			break;
	}
	if (prompt_len == sizeof prompt_buf - 1)
		prompt_len = 0;		/* a line too long: dropped */
}
