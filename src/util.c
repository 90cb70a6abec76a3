/*
 * Small helpers shared by several modules: durations and sizes as the
 * workflow file writes them, timestamps, exit statuses, descriptors.
 */

#include <sys/resource.h>
#include <sys/wait.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "corral.h"

/*
 * Parse a duration: a number of seconds, or a number with one of the units
 * ms, s, m, h.  Returns 0 and sets *out, or -1.
 */
int
util_parse_duration(const char *s, double *out)
{
	char	*end;
	double	 v;

	if (strcmp(s, "none") == 0 || strcmp(s, "off") == 0) {
		*out = 0;	/* no limit */
		return 0;
	}
	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno != 0 || v < 0 || !isfinite(v))
		return -1;
	while (*end == ' ')
		end++;
	if (*end == '\0' || strcmp(end, "s") == 0)
		;
	else if (strcmp(end, "ms") == 0)
		v /= 1000.0;
	else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
		v *= 60.0;
	else if (strcmp(end, "h") == 0)
		v *= 3600.0;
	else
		return -1;
	*out = v;
	return 0;
}

/*
 * Parse a size: a number of bytes, or a number with one of the units
 * KiB, MiB, GiB (also K, M, G, KB, MB, GB as binary multiples).
 */
int
util_parse_size(const char *s, size_t *out)
{
	char			*end;
	unsigned long long	 v, mult = 1;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	while (*end == ' ')
		end++;
	if (*end == '\0' || strcmp(end, "B") == 0)
		mult = 1;
	else if (strcasecmp(end, "k") == 0 || strcmp(end, "KiB") == 0 ||
	    strcasecmp(end, "KB") == 0)
		mult = 1024ULL;
	else if (strcasecmp(end, "m") == 0 || strcmp(end, "MiB") == 0 ||
	    strcasecmp(end, "MB") == 0)
		mult = 1024ULL * 1024;
	else if (strcasecmp(end, "g") == 0 || strcmp(end, "GiB") == 0 ||
	    strcasecmp(end, "GB") == 0)
		mult = 1024ULL * 1024 * 1024;
	else
		return -1;
	if (v > SIZE_MAX / mult)
		return -1;
	*out = (size_t)(v * mult);
	return 0;
}

/* Format a duration the way the workflow file would write it. */
void
util_format_duration(char *buf, size_t len, double d)
{
	if (d == 0)
		snprintf(buf, len, "0s");
	else if (d < 1 && fmod(d * 1000, 1) < 1e-9)
		snprintf(buf, len, "%gms", d * 1000);
	else if (d >= 3600 && fmod(d, 3600) == 0)
		snprintf(buf, len, "%gh", d / 3600);
	else if (d >= 60 && fmod(d, 60) == 0)
		snprintf(buf, len, "%gm", d / 60);
	else
		snprintf(buf, len, "%gs", d);
}

/* Format a size with the largest binary unit that divides it. */
void
util_format_size(char *buf, size_t len, size_t n)
{
	if (n != 0 && n % (1024UL * 1024 * 1024) == 0)
		snprintf(buf, len, "%zuGiB", n / (1024UL * 1024 * 1024));
	else if (n != 0 && n % (1024UL * 1024) == 0)
		snprintf(buf, len, "%zuMiB", n / (1024UL * 1024));
	else if (n != 0 && n % 1024 == 0)
		snprintf(buf, len, "%zuKiB", n / 1024);
	else
		snprintf(buf, len, "%zu", n);
}

/* Write the current UTC time as RFC 3339 with milliseconds. */
void
util_rfc3339(char *buf, size_t len)
{
	/* The date and time of the last second asked for: one a message. */
	static _Thread_local time_t	last = -1;
	static _Thread_local char	secs[32];
	struct timespec			ts;
	struct tm			tm;
	char				out[40];
	size_t				n;
	long				ms;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (ts.tv_sec != last) {
		gmtime_r(&ts.tv_sec, &tm);
		if (strftime(secs, sizeof secs, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
			secs[0] = '\0';
		last = ts.tv_sec;
	}
	n = strlcpy(out, secs, sizeof out - 6);
	ms = ts.tv_nsec / 1000000;
	out[n] = '.';
	out[n + 1] = (char)('0' + ms / 100);
	out[n + 2] = (char)('0' + ms / 10 % 10);
	out[n + 3] = (char)('0' + ms % 10);
	out[n + 4] = 'Z';
	out[n + 5] = '\0';
	strlcpy(buf, out, len);
}

/*
 * Does the word x hold decimal digits where pat has '0' and pat's own
 * bytes elsewhere?  mask has 0xF0 at a digit and 0xFF at a literal: the
 * first test leaves 0x30-0x3F at a digit; add has 6 there, which takes
 * 0x3A-0x3F (past '9') out of that sixteen, and no byte can carry.
 */
static inline int
util_word_is(uint64_t x, const char pat[8], const unsigned char mask[8],
    const unsigned char add[8])
{
	uint64_t	p, m, a;

	memcpy(&p, pat, 8);
	memcpy(&m, mask, 8);
	memcpy(&a, add, 8);
	return (x & m) == (p & m) && ((x + a) & m) == (p & m);
}

/*
 * Is the head of a date-time, YYYY-MM-DDTHH:MM:SS (w0 and w1 hold its
 * bytes 0-7 and 11-18), a real date and time?  The digits and literals
 * are checked a word at a time, not byte by byte.  Out of line: the
 * common case, the head seen last, needs none of its registers.
 */
static int __attribute__((noinline))
util_rfc3339_head(const char *s, uint64_t w0, uint64_t w1)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31,
	    30, 31 };
	static const char date[8] = "0000-00-", clock[8] = "00:00:00";
	static const unsigned char dmask[8] = { 0xF0, 0xF0, 0xF0, 0xF0, 0xFF,
	    0xF0, 0xF0, 0xFF }, dadd[8] = { 6, 6, 6, 6, 0, 6, 6, 0 };
	static const unsigned char cmask[8] = { 0xF0, 0xF0, 0xFF, 0xF0, 0xF0,
	    0xFF, 0xF0, 0xF0 }, cadd[8] = { 6, 6, 0, 6, 6, 0, 6, 6 };
	int	year, mon, day, hh, mm, ss;

	if (!util_word_is(w0, date, dmask, dadd) ||
	    !util_word_is(w1, clock, cmask, cadd) ||
	    (unsigned char)(s[8] - '0') > 9 || (unsigned char)(s[9] - '0') > 9 ||
	    (s[10] != 'T' && s[10] != 't' && s[10] != ' '))
		return 0;
	year = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 +
	    (s[3] - '0');
	mon = (s[5] - '0') * 10 + (s[6] - '0');
	day = (s[8] - '0') * 10 + (s[9] - '0');
	hh = (s[11] - '0') * 10 + (s[12] - '0');
	mm = (s[14] - '0') * 10 + (s[15] - '0');
	ss = (s[17] - '0') * 10 + (s[18] - '0');
	if (mon < 1 || mon > 12 || day < 1 || day > mdays[mon - 1] ||
	    hh > 23 || mm > 59 || ss > 60)
		return 0;
	if (mon == 2 && day == 29 && !((year % 4 == 0 && year % 100 != 0) ||
	    year % 400 == 0))
		return 0;
	return 1;
}

/*
 * Check an RFC 3339 date-time: YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM).
 * 't' and 'z' are accepted too, as RFC 3339 allows.  Every envelope has
 * one, and the envelopes of one second share their head (to the
 * second): a head equal byte for byte to the last one found valid is not
 * read again.
 */
int
util_rfc3339_valid(const char *s, size_t n)
{
	/* Starts as a valid head, so that it needs no flag. */
	static _Thread_local char	last[20] = "1970-01-01T00:00:00";
	uint64_t			a0, a1, a2, b0, b1, b2;
	size_t				i;

	if (n < 20)
		return 0;
	/* Bytes 0-7, 8-15 and 11-18: the head's 19, in three words. */
	memcpy(&a0, s, 8);
	memcpy(&a1, s + 8, 8);
	memcpy(&a2, s + 11, 8);
	memcpy(&b0, last, 8);
	memcpy(&b1, last + 8, 8);
	memcpy(&b2, last + 11, 8);
	if (((a0 ^ b0) | (a1 ^ b1) | (a2 ^ b2)) != 0) {
		if (!util_rfc3339_head(s, a0, a2))
			return 0;
		memcpy(last, s, 19);
	}
	i = 19;
	if (i < n && s[i] == '.') {
		i++;
		if (i >= n || s[i] < '0' || s[i] > '9')
			return 0;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
	}
	if (i < n && (s[i] == 'Z' || s[i] == 'z'))
		return i + 1 == n;
	if (i < n && (s[i] == '+' || s[i] == '-')) {
		if (n - i != 6 || (unsigned char)(s[i + 1] - '0') > 9 ||
		    (unsigned char)(s[i + 2] - '0') > 9 || s[i + 3] != ':' ||
		    (unsigned char)(s[i + 4] - '0') > 9 ||
		    (unsigned char)(s[i + 5] - '0') > 9)
			return 0;
		return (s[i + 1] - '0') * 10 + (s[i + 2] - '0') <= 23 &&
		    (s[i + 4] - '0') * 10 + (s[i + 5] - '0') <= 59;
	}
	return 0;
}

/* Seconds on the monotonic clock. */
double
util_mono(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Return d varied randomly by up to +/- fraction of itself. */
double
util_jitter(double d, double fraction)
{
	double	r = (double)arc4random_uniform(1000001) / 1000000.0;

	return d * (1.0 - fraction + 2.0 * fraction * r);
}

/* Return a signal's name without the SIG prefix. */
const char *
util_signame(int sig)
{
	static char	buf[16];
	const char	*s = sigabbrev_np(sig);

	if (s != NULL)
		return s;
	snprintf(buf, sizeof buf, "%d", sig);
	return buf;
}

/* Describe a wait status for a person: "exit status 1", "signal KILL". */
void
util_describe_status(char *buf, size_t len, int status)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %s%s",
		    util_signame(WTERMSIG(status)),
		    WCOREDUMP(status) ? " (core dumped)" : "");
	else
		snprintf(buf, len, "status 0x%x", status);
}

/* Set or clear O_NONBLOCK. */
int
util_set_nonblock(int fd, int on)
{
	int	fl;

	if ((fl = fcntl(fd, F_GETFL)) == -1)
		return -1;
	fl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
	return fcntl(fd, F_SETFL, fl);
}

/* Set FD_CLOEXEC. */
int
util_set_cloexec(int fd)
{
	int	fl;

	if ((fl = fcntl(fd, F_GETFD)) == -1)
		return -1;
	return fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
}

/* Raise the soft limit on open files to the hard limit: agents need three. */
void
util_raise_nofile(void)
{
	struct rlimit	rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* "00" to "99": two decimal digits at 2 * n, for writers of numbers. */
const char util_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930"
    "31323334353637383940414243444546474849505152535455565758596061"
    "62636465666768697071727374757677787980818283848586878889909192"
    "93949596979899";

/* Write v in decimal at p; returns the number of digits. */
size_t
util_u64(char *p, uint64_t v)
{
	const char		*pairs = util_pairs;
	char			tmp[24], *e = tmp + sizeof tmp, *q = e;
	size_t			n, i;

	/* Two digits per division: sequence numbers go on every record. */
	while (v >= 100) {
		q -= 2;
		memcpy(q, pairs + 2 * (v % 100), 2);
		v /= 100;
	}
	if (v >= 10) {
		q -= 2;
		memcpy(q, pairs + 2 * v, 2);
	} else
		*--q = (char)('0' + v);
	n = (size_t)(e - q);
	for (i = 0; i < n; i++)
		p[i] = q[i];
	return n;
}

/*
 * Return the length of the valid UTF-8 character at p (n bytes there), or
 * 0 when it is not one: overlong, a surrogate, beyond U+10FFFF, cut short.
 */
size_t
util_utf8_len(const unsigned char *p, size_t n)
{
	unsigned char	c = p[0];
	uint32_t	v;
	size_t		len, i;

	if (c < 0x80)
		return 1;
	if (c < 0xC2 || c > 0xF4)
		return 0;
	if (c <= 0xDF) {
		len = 2;
		v = c & 0x1F;
	} else if (c <= 0xEF) {
		len = 3;
		v = c & 0x0F;
	} else {
		len = 4;
		v = c & 0x07;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		v = (v << 6) | (p[i] & 0x3F);
	}
	if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF) ||
	    (len == 3 && v < 0x800) || (len == 4 && v < 0x10000))
		return 0;
	return len;
}

/*
 * The length of the first n bytes of s or less, cut at most at max and
 * never inside a UTF-8 character.
 */
size_t
util_utf8_cut(const char *s, size_t n, size_t max)
{
	const unsigned char	*p = (const unsigned char *)s;

	if (n <= max)
		return n;
	/* Back over continuation bytes to the start of a character. */
	while (max > 0 && (p[max] & 0xC0) == 0x80)
		max--;
	return max;
}

/* Return nonzero if n bytes at s are valid UTF-8; else set *bad. */
int
util_utf8_valid(const char *s, size_t n, size_t *bad)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 i = 0, len;

	while (i < n) {
		if ((len = util_utf8_len(p + i, n - i)) == 0) {
			*bad = i;
			return 0;
		}
		i += len;
	}
	return 1;
}

/*
 * The edit distance of a and b: letters inserted, deleted, replaced, or two
 * swapped.  SIZE_MAX for words longer than 32 bytes.
 */
size_t
util_distance(const char *a, const char *b)
{
	unsigned char	d[33][33];
	size_t		la = strlen(a), lb = strlen(b), i, j, c, v;

	if (la > 32 || lb > 32)
		return SIZE_MAX;
	for (i = 0; i <= la; i++)
		d[i][0] = (unsigned char)i;
	for (j = 0; j <= lb; j++)
		d[0][j] = (unsigned char)j;
	for (i = 1; i <= la; i++) {
		for (j = 1; j <= lb; j++) {
			c = a[i - 1] != b[j - 1];
			v = d[i - 1][j - 1] + c;
			if (d[i - 1][j] + 1U < v)
				v = d[i - 1][j] + 1U;
			if (d[i][j - 1] + 1U < v)
				v = d[i][j - 1] + 1U;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1U < v)
				v = d[i - 2][j - 2] + 1U;
			d[i][j] = (unsigned char)v;
		}
	}
	return d[la][lb];
}

/* Is a word d edits away from word near enough to be what was meant? */
int
util_near(const char *word, size_t d)
{
	return d <= (strlen(word) <= 3 ? 1U : 2U);
}

/*
 * The word of words (NULL-terminated) nearest to word, when it is near
 * enough to be a typing slip (util_near); else NULL.
 */
const char *
util_nearest(const char *word, const char *const *words)
{
	const char	*best = NULL;
	size_t		 d, bestd = SIZE_MAX;

	for (; *words != NULL; words++)
		if ((d = util_distance(word, *words)) < bestd) {
			bestd = d;
			best = *words;
		}
	return best != NULL && util_near(word, bestd) ? best : NULL;
}

/* Whether a code point reorders or hides text on a terminal. */
static int
util_vis_bidi(uint32_t v)
{
	return v == 0x061C || v == 0x200E || v == 0x200F ||
	    (v >= 0x202A && v <= 0x202E) || (v >= 0x2066 && v <= 0x2069);
}

/*
 * A string from a peer made safe to print on a terminal (allocated):
 * printable ASCII and UTF-8 characters pass, and every other byte (C0
 * and C1 controls, DEL, bytes that are not UTF-8, and the characters
 * that reorder text) is written \ooo, as vis(3) does, \n, \r and \t
 * as such.  So an agent's words cannot move the cursor, retitle the
 * window, clear the screen or fake a line.  A backslash is left alone,
 * so that escaping twice changes nothing: this is for people to read,
 * not to decode.
 */
char *
util_vis(const char *s, size_t n)
{
	const unsigned char	*p = (const unsigned char *)s;
	char			*out, *o;
	size_t			 i = 0, len, k;
	uint32_t		 v;

	o = out = xreallocarray(NULL, n + 1, 4);
	while (i < n) {
		len = util_utf8_len(p + i, n - i);
		if (len == 1 && p[i] >= 0x20 && p[i] != 0x7f) {
			*o++ = (char)p[i++];
			continue;
		}
		if (len > 1) {
			v = p[i] & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
			for (k = 1; k < len; k++)
				v = (v << 6) | (p[i + k] & 0x3F);
			if (v >= 0xA0 && !util_vis_bidi(v)) {
				memcpy(o, p + i, len);
				o += len;
				i += len;
				continue;
			}
		} else
			len = 1;
		for (k = 0; k < len; k++, i++) {
			if (p[i] == '\n' || p[i] == '\r' || p[i] == '\t') {
				*o++ = '\\';
				*o++ = p[i] == '\n' ? 'n' : p[i] == '\r' ? 'r' : 't';
				continue;
			}
			*o++ = '\\';
			*o++ = (char)('0' + (p[i] >> 6));
			*o++ = (char)('0' + ((p[i] >> 3) & 7));
			*o++ = (char)('0' + (p[i] & 7));
		}
	}
	*o = '\0';
	return out;
}

/*
 * Make every string in a JSON value (members of objects and arrays,
 * keys too) safe to print on a terminal, in place (util_vis): what the
 * terminal views print comes from agents and must not drive the terminal.
 */
void
util_vis_json(json_t *j)
{
	json_t		*v, *copy;
	const char	*k;
	char		*s, *ks;
	size_t		 i;
	void		*tmp;

	if (json_is_array(j)) {
		json_array_foreach(j, i, v) {
			if (json_is_string(v)) {
				s = util_vis(json_string_value(v),
				    json_string_length(v));
				json_array_set_new(j, i, json_string_nocheck(s));
				free(s);
			} else
				util_vis_json(v);
		}
		return;
	}
	if (!json_is_object(j))
		return;
	/* Keys cannot change in place: rebuild the object. */
	copy = json_object();
	json_object_foreach_safe(j, tmp, k, v) {
		ks = util_vis(k, strlen(k));
		if (json_is_string(v)) {
			s = util_vis(json_string_value(v),
			    json_string_length(v));
			json_object_set_new_nocheck(copy, ks,
			    json_string_nocheck(s));
			free(s);
		} else {
			util_vis_json(v);
			json_object_set_nocheck(copy, ks, v);
		}
		free(ks);
	}
	json_object_clear(j);
	json_object_update(j, copy);
	json_decref(copy);
}
