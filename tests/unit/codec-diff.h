/*
 * The codecs translate the per-message kinds from the scanner's tape and
 * everything else with jansson (src/codec.c); both ways must make the
 * same lines.  codec_diff runs one line through a codec that may use the
 * tape and one that may not (cs->slow), and compares what they made and
 * what they remember.  Shared by tests/unit/codec.c and
 * tests/fuzz/fuzz_codec_diff.c.
 *
 * Two lines are the same when they hold the same JSON values: integers
 * exactly, other numbers by value to 15 significant digits (the tape
 * copies 30000 where jansson writes 30000.0, and an agent's 17 digits
 * where jansson writes 15), except what is made fresh for each line: a
 * timestamp, and a message id corral makes (the run id and a number).
 */

#include <stdio.h>
#include <string.h>

/*
 * Are two numbers the same as corral writes them?  The tape copies an
 * agent's digits; jansson writes 15 significant digits, so 5.8222222222222220
 * comes out 5.82222222222222 (docs/protocol.md, "Numbers").
 */
static int
codec_diff_num(double a, double b)
{
	char	sa[32], sb[32];

	if (a == b)
		return 1;
	snprintf(sa, sizeof sa, "%.15g", a);
	snprintf(sb, sizeof sb, "%.15g", b);
	return strcmp(sa, sb) == 0;
}

/* Are two values the same, as corral's lines go?  why says where not. */
static int
codec_diff_same(json_t *a, json_t *b, const char *key, char *why,
    size_t whylen)
{
	const char	*k, *run = protocol_run_id();
	json_t		*v;
	size_t		 i, n = strlen(run);

	if (json_is_integer(a) && json_is_integer(b) ?
	    json_integer_value(a) == json_integer_value(b) :
	    json_is_number(a) && json_is_number(b) &&
	    codec_diff_num(json_number_value(a), json_number_value(b)))
		return 1;
	if (json_is_string(a) && json_is_string(b) && key != NULL &&
	    strcmp(key, "timestamp") == 0)
		return 1;
	if (json_is_string(a) && json_is_string(b) && n > 0 &&
	    strncmp(json_string_value(a), run, n) == 0 &&
	    strncmp(json_string_value(b), run, n) == 0 &&
	    json_string_value(a)[n] == '-' && json_string_value(b)[n] == '-')
		return 1;
	if (json_is_object(a) && json_is_object(b)) {
		if (json_object_size(a) != json_object_size(b)) {
			snprintf(why, whylen, "%s: %zu members against %zu",
			    key != NULL ? key : "top", json_object_size(a),
			    json_object_size(b));
			return 0;
		}
		json_object_foreach(a, k, v)
			if (!codec_diff_same(v, json_object_get(b, k), k, why,
			    whylen))
				return 0;
		return 1;
	}
	if (json_is_array(a) && json_is_array(b) &&
	    json_array_size(a) == json_array_size(b)) {
		json_array_foreach(a, i, v)
			if (!codec_diff_same(v, json_array_get(b, i), key, why,
			    whylen))
				return 0;
		return 1;
	}
	if (a != NULL && b != NULL && json_equal(a, b))
		return 1;
	snprintf(why, whylen, "%s differs", key != NULL ? key : "top");
	return 0;
}

/* Are two lines the same (both NULL is)? */
static int
codec_diff_lines(const char *a, const char *b, char *why, size_t whylen)
{
	json_t	*ja, *jb;
	int	 same;

	if (a == NULL || b == NULL) {
		snprintf(why, whylen, "one way made %s, the other %s",
		    a != NULL ? a : "nothing", b != NULL ? b : "nothing");
		return a == b;
	}
	ja = json_loads(a, 0, NULL);
	jb = json_loads(b, 0, NULL);
	if (ja == NULL || jb == NULL) {
		snprintf(why, whylen, "not JSON: %s", ja == NULL ? a : b);
		same = 0;
	} else
		same = codec_diff_same(ja, jb, NULL, why, whylen);
	json_decref(ja);
	json_decref(jb);
	return same;
}

/* Do two rings of codecs hold the same? */
static int
codec_diff_ring(const struct codec_ring *a, const struct codec_ring *b,
    const char *what, char *why, size_t whylen)
{
	size_t	i;

	if (a->next != b->next) {
		snprintf(why, whylen, "remembered %zu %s against %zu", a->next,
		    what, b->next);
		return 0;
	}
	for (i = 0; i < CODEC_RING; i++)
		if (strcmp(a->e[i].id, b->e[i].id) != 0 ||
		    strcmp(a->e[i].intent, b->e[i].intent) != 0 ||
		    strcmp(a->e[i].kind, b->e[i].kind) != 0) {
			snprintf(why, whylen, "remembered %s/%s/%s against "
			    "%s/%s/%s", a->e[i].id, a->e[i].intent,
			    a->e[i].kind, b->e[i].id, b->e[i].intent,
			    b->e[i].kind);
			return 0;
		}
	return 1;
}

/* Do two codecs remember the same requests and message ids? */
static int
codec_diff_states(struct codec_state *a, struct codec_state *b, char *why,
    size_t whylen)
{
	return codec_diff_ring(&a->reqs, &b->reqs, "requests", why, whylen) &&
	    codec_diff_ring(&a->seen, &b->seen, "message ids", why, whylen);
}

/*
 * One line through both codecs, decoded (encode 0) or encoded: 1 when
 * they made and remember the same, else 0 with why.
 */
static int
codec_diff(struct codec_state *tape, struct codec_state *tree,
    const char *line, size_t len, int encode, char *why, size_t whylen)
{
	struct codec_error	 ea, eb;
	char			*a = NULL, *b = NULL;
	size_t			 la = 0, lb = 0;
	int			 ra, rb, same;

	tree->slow = 1;
	if (encode) {
		a = codec_encode_line(tape, line, len, &la);
		b = codec_encode_line(tree, line, len, &lb);
		same = codec_diff_lines(a, b, why, whylen);
	} else {
		ra = codec_decode_line(tape, line, len, &a, &la, &ea);
		rb = codec_decode_line(tree, line, len, &b, &lb, &eb);
		if (ra != rb) {
			snprintf(why, whylen, "decoded %d against %d", ra, rb);
			same = 0;
		} else if (ra < 0)
			same = strcmp(ea.path, eb.path) == 0 &&
			    strcmp(ea.msg, eb.msg) == 0;
		else
			same = ra == 1 || codec_diff_lines(a, b, why, whylen);
	}
	if (same && a != NULL && strlen(a) != la) {
		snprintf(why, whylen, "a length that is not the line's");
		same = 0;
	}
	free(a);
	free(b);
	return same && codec_diff_states(tape, tree, why, whylen);
}
