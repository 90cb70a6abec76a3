/*
 * Unit tests of the small helpers in src/util.c: the duration and size
 * syntax of workflow files, RFC 3339 timestamps in envelopes, and the
 * digits of integers.  JSON string escaping is tested in jsonw.c.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "corral.h"

/* Durations in seconds, or with ms, s, m, min or h. */
static void
test_parse_duration_valid(void **state)
{
	static const struct {
		const char	*text;
		double		 secs;
	} cases[] = {
		{ "30", 30 }, { "30s", 30 }, { "500ms", 0.5 }, { "2m", 120 },
		{ "2min", 120 }, { "1h", 3600 }, { "0", 0 }, { "0s", 0 },
		{ "1.5s", 1.5 }, { "0.25", 0.25 }, { "10ms", 0.01 },
		{ "1.5h", 5400 }, { "30 s", 30 }, { "86400", 86400 },
	};
	size_t	i;
	double	d;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		d = -1;
		if (util_parse_duration(cases[i].text, &d) != 0)
			fail_msg("\"%s\" rejected", cases[i].text);
		if (fabs(d - cases[i].secs) > 1e-9)
			fail_msg("\"%s\" is %g s, expected %g", cases[i].text, d,
			    cases[i].secs);
	}
}

/* Malformed durations are refused and leave the output alone. */
static void
test_parse_duration_invalid(void **state)
{
	static const char *const bad[] = { "", "s", "ms", "abc", "-1", "-1s",
	    "10x", "5 sec", "30ss", "1d", "nan", "inf", "1e400",
	    "infinity", "2m30s", "1,5s", "s30" };
	size_t	i;
	double	d;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		d = 123;
		if (util_parse_duration(bad[i], &d) == 0)
			fail_msg("\"%s\" accepted as %g s", bad[i], d);
		assert_true(d == 123);
	}
}

/* Sizes in bytes or with binary units. */
static void
test_parse_size_valid(void **state)
{
	static const struct {
		const char	*text;
		size_t		 bytes;
	} cases[] = {
		{ "65536", 65536 }, { "0", 0 }, { "10B", 10 },
		{ "64KiB", 65536 }, { "64K", 65536 }, { "64k", 65536 },
		{ "64KB", 65536 }, { "1MiB", 1048576 }, { "1M", 1048576 },
		{ "1m", 1048576 }, { "1MB", 1048576 }, { "256MiB", 268435456 },
		{ "1GiB", 1073741824 }, { "2G", 2147483648UL },
		{ "1 MiB", 1048576 },
		{ "17179869183GiB", 17179869183UL * 1073741824UL },
		{ "18446744073709551615", 18446744073709551615UL },
	};
	size_t	i, n;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		n = 1;
		if (util_parse_size(cases[i].text, &n) != 0)
			fail_msg("\"%s\" rejected", cases[i].text);
		if (n != cases[i].bytes)
			fail_msg("\"%s\" is %zu bytes, expected %zu",
			    cases[i].text, n, cases[i].bytes);
	}
}

/* Malformed and overflowing sizes are refused. */
static void
test_parse_size_invalid(void **state)
{
	static const char *const bad[] = { "", "KiB", "-1", "+1", " 1",
	    "1.5M", "1TiB", "1T", "1 MiBx", "1Mi", "1KiBB", "0x10", "ten",
	    "18446744073709551616", "99999999999999999999999",
	    "18014398509481984KiB", "17179869184GiB", "17592186044416MiB" };
	size_t	i, n;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		n = 123;
		if (util_parse_size(bad[i], &n) == 0)
			fail_msg("\"%s\" accepted as %zu bytes", bad[i], n);
		assert_int_equal(n, 123);
	}
}

/* What `corral check` prints for durations and sizes reads back the same. */
static void
test_format_round_trip(void **state)
{
	static const double durs[] = { 0, 0.001, 0.01, 0.1, 0.25, 0.5, 1, 1.5,
	    2, 30, 59, 60, 90, 120, 3599, 3600, 5400, 7200, 86400 };
	static const struct {
		double		 secs;
		const char	*text;
	} dfmt[] = {
		{ 0, "0s" }, { 0.5, "500ms" }, { 1, "1s" }, { 1.5, "1.5s" },
		{ 60, "1m" }, { 90, "90s" }, { 3600, "1h" }, { 7200, "2h" },
	};
	static const size_t sizes[] = { 0, 1, 64, 1000, 1024, 65536, 65537,
	    1048576, 268435456, 1073741824, 3221225472UL };
	static const struct {
		size_t		 bytes;
		const char	*text;
	} sfmt[] = {
		{ 0, "0" }, { 100, "100" }, { 65536, "64KiB" },
		{ 1048576, "1MiB" }, { 1073741824, "1GiB" }, { 1536, "1536" },
	};
	char	buf[64];
	double	d;
	size_t	i, n;

	for (i = 0; i < sizeof durs / sizeof durs[0]; i++) {
		util_format_duration(buf, sizeof buf, durs[i]);
		assert_int_equal(util_parse_duration(buf, &d), 0);
		if (fabs(d - durs[i]) > 1e-9 * (1 + durs[i]))
			fail_msg("%g s prints as %s, which reads as %g", durs[i],
			    buf, d);
	}
	for (i = 0; i < sizeof dfmt / sizeof dfmt[0]; i++) {
		util_format_duration(buf, sizeof buf, dfmt[i].secs);
		assert_string_equal(buf, dfmt[i].text);
	}
	for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		util_format_size(buf, sizeof buf, sizes[i]);
		assert_int_equal(util_parse_size(buf, &n), 0);
		assert_int_equal(n, sizes[i]);
	}
	for (i = 0; i < sizeof sfmt / sizeof sfmt[0]; i++) {
		util_format_size(buf, sizeof buf, sfmt[i].bytes);
		assert_string_equal(buf, sfmt[i].text);
	}
}

/* Check one timestamp by its C string. */
static int
ts_valid(const char *s)
{
	return util_rfc3339_valid(s, strlen(s));
}

/* RFC 3339 date-times corral accepts in envelopes. */
static void
test_rfc3339_valid(void **state)
{
	static const char *const good[] = {
		"2026-11-22T12:40:00Z",
		"2025-10-10T12:34:56Z",
		"2026-11-22T12:40:00.5+01:00",
		"2026-11-22T12:40:00.123456789Z",
		"2026-11-22T12:40:00-05:30",
		"2026-11-22t12:40:00z",
		"2026-11-22 12:40:00Z",
		"2024-02-29T00:00:00Z",
		"2000-02-29T00:00:00Z",
		"1990-12-31T23:59:60Z",
		"2026-01-31T23:59:59+23:59",
		"0001-01-01T00:00:00Z",
		"2026-04-30T00:00:00Z",
	};
	size_t	i;

	for (i = 0; i < sizeof good / sizeof good[0]; i++)
		if (!ts_valid(good[i]))
			fail_msg("\"%s\" rejected", good[i]);
}

/* Malformed and impossible date-times are refused. */
static void
test_rfc3339_invalid(void **state)
{
	static const char *const bad[] = {
		"",
		"2026-11-22",
		"2026-11-22T12:40:00",			/* no zone */
		"2026-11-22T12:40Z",
		"2026-02-30T00:00:00Z",			/* Feb 30 */
		"2023-02-29T00:00:00Z",			/* not a leap year */
		"1900-02-29T00:00:00Z",			/* century */
		"2026-04-31T00:00:00Z",
		"2026-11-22T24:00:00Z",
		"2026-11-22T12:60:00Z",
		"2026-11-22T12:40:61Z",
		"2026-13-01T00:00:00Z",
		"2026-00-10T00:00:00Z",
		"2026-11-00T00:00:00Z",
		"2026-11-32T00:00:00Z",
		"2026-11-22T12:40:00.Z",
		"2026-11-22T12:40:00+0100",
		"2026-11-22T12:40:00+01",
		"2026-11-22T12:40:00+24:00",
		"2026-11-22T12:40:00+01:60",
		"2026-11-22T12:40:00Zjunk",
		"2026-11-22T12:40:00Z ",
		"2026-4-01T00:00:00Z",
		"2026/11/22T12:40:00Z",
		"2026-11-22X12:40:00Z",
		"2026-11-22T12-40-00Z",
		"26-11-22T12:40:00Z",
		"2026-11-22T12:40:00UTC",
		"2026-1a-22T12:40:00Z",
		"+2026-11-22T12:40:00Z",
	};
	size_t	i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (ts_valid(bad[i]))
			fail_msg("\"%s\" accepted", bad[i]);
}

/* Only n bytes are read: the timestamp need not be NUL-terminated. */
static void
test_rfc3339_length(void **state)
{
	const char	*s = "2026-11-22T12:40:00Zxyz";

	assert_true(util_rfc3339_valid(s, 20));
	assert_false(util_rfc3339_valid(s, 19));
	assert_false(util_rfc3339_valid(s, 21));
	assert_false(util_rfc3339_valid(s, 5));
}

/*
 * The grammar of util_rfc3339_valid read byte by byte, the plainest way:
 * the reference its word-at-a-time checks must agree with on every input.
 */
static int
ts_ref_digits(const char *s, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

static int
ts_ref(const char *s, size_t n)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31,
	    30, 31 };
	int	year, mon, day, hh, mm, ss;
	size_t	i;

	if (n < 20 || !ts_ref_digits(s, 4) || s[4] != '-' ||
	    !ts_ref_digits(s + 5, 2) || s[7] != '-' ||
	    !ts_ref_digits(s + 8, 2) ||
	    (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
	    !ts_ref_digits(s + 11, 2) || s[13] != ':' ||
	    !ts_ref_digits(s + 14, 2) || s[16] != ':' ||
	    !ts_ref_digits(s + 17, 2))
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
		if (n - i != 6 || !ts_ref_digits(s + i + 1, 2) ||
		    s[i + 3] != ':' || !ts_ref_digits(s + i + 4, 2))
			return 0;
		return (s[i + 1] - '0') * 10 + (s[i + 2] - '0') <= 23 &&
		    (s[i + 4] - '0') * 10 + (s[i + 5] - '0') <= 59;
	}
	return 0;
}

/* Check one input against the reference, from a buffer of exactly n. */
static void
ts_same(const char *s, size_t n)
{
	char	*copy = malloc(n > 0 ? n : 1);
	int	 got, want;

	assert_non_null(copy);
	memcpy(copy, s, n);
	got = util_rfc3339_valid(copy, n) != 0;
	want = ts_ref(copy, n);
	free(copy);
	if (got != want)
		fail_msg("\"%.*s\" (%zu bytes): %s, the grammar says %s",
		    (int)n, s, n, got ? "valid" : "invalid", want ? "valid" :
		    "invalid");
}

/*
 * The same verdicts as the grammar read byte by byte, for every byte
 * value at every place of timestamps with and without fractions and
 * offsets, every two digits of each number (months, days, hours, minutes,
 * seconds with the leap second, offsets), every year on February 28 and
 * 29, and every cut of each form.
 */
static void
test_rfc3339_same_verdicts(void **state)
{
	static const char *const seeds[] = {
		"2026-11-27T05:00:00Z", "2026-11-27T05:00:00.123456Z",
		"2026-11-27T05:00:00.123Z", "2026-11-27t05:00:00z",
		"2026-11-27 05:00:00+05:30", "2026-11-27T05:00:00.5-23:59",
		"1990-12-31T23:59:60Z", "2024-02-29T00:00:00Z",
		"2026-11-27T05:00:00.1+00:00", "2026-11-27T05:00:00.Z",
		"2026-11-27T05:00:00", "0000-01-01T00:00:00Z",
		"9999-12-31T23:59:59.999999999Z",
	};
	static const size_t pairs[] = { 0, 2, 5, 8, 11, 14, 17 };
	char	buf[64];
	size_t	i, j, k, n;
	int	c, y;

	for (i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
		n = strlen(seeds[i]);
		for (k = 0; k <= n; k++)
			ts_same(seeds[i], k);
		for (j = 0; j < n; j++) {
			for (c = 0; c < 256; c++) {
				memcpy(buf, seeds[i], n);
				buf[j] = (char)c;
				ts_same(buf, n);
			}
		}
		for (j = 0; j < sizeof pairs / sizeof pairs[0]; j++) {
			for (c = 0; c < 100; c++) {
				memcpy(buf, seeds[i], n);
				buf[pairs[j]] = (char)('0' + c / 10);
				buf[pairs[j] + 1] = (char)('0' + c % 10);
				ts_same(buf, n);
			}
		}
		/* The offset's hours and minutes, where there is one. */
		for (j = n >= 6 ? n - 5 : 0; n >= 26 && j < n; j += 3) {
			for (c = 0; c < 100; c++) {
				memcpy(buf, seeds[i], n);
				buf[j] = (char)('0' + c / 10);
				buf[j + 1] = (char)('0' + c % 10);
				ts_same(buf, n);
			}
		}
	}
	for (y = 0; y <= 9999; y++) {
		snprintf(buf, sizeof buf, "%04d-02-29T12:00:00Z", y);
		ts_same(buf, strlen(buf));
		snprintf(buf, sizeof buf, "%04d-02-28T12:00:00Z", y);
		ts_same(buf, strlen(buf));
	}
}

/* The timestamps corral writes are themselves valid. */
static void
test_rfc3339_now(void **state)
{
	char	buf[64];

	util_rfc3339(buf, sizeof buf);
	assert_true(ts_valid(buf));
	assert_int_equal(buf[strlen(buf) - 1], 'Z');
}

/* util_u64 writes the same digits as printf for every width. */
static void
test_u64_digits(void **state)
{
	char		 got[32], want[32];
	uint64_t	 v, p10 = 1;
	size_t		 n;
	int		 k, d;

	(void)state;
	for (k = 0; k < 20; k++) {
		for (d = -1; d <= 1; d++) {
			v = p10 + (uint64_t)d;
			if (k == 0 && d == -1)
				v = 0;
			n = util_u64(got, v);
			got[n] = '\0';
			snprintf(want, sizeof want, "%llu", (unsigned long long)v);
			assert_string_equal(got, want);
		}
		if (k < 19)
			p10 *= 10;
	}
	n = util_u64(got, UINT64_MAX);
	got[n] = '\0';
	assert_string_equal(got, "18446744073709551615");
	for (v = 0; v < 100000; v += 7) {
		n = util_u64(got, v);
		got[n] = '\0';
		snprintf(want, sizeof want, "%llu", (unsigned long long)v);
		assert_string_equal(got, want);
	}
}

/* vis ONE: what util_vis makes of a string. */
static void
check_vis(const char *in, size_t n, const char *want)
{
	char	*got = util_vis(in, n);

	assert_string_equal(got, want);
	free(got);
}

/*
 * A peer's string printed on a terminal cannot drive it: controls (C0,
 * DEL, C1), bytes that are not UTF-8 and text reordering are escaped;
 * printable text and UTF-8 pass; escaping twice changes nothing.
 */
static void
test_vis(void **state)
{
	json_t	*j;
	char	*s;

	(void)state;
#define VIS(in, want)	check_vis(in, sizeof(in) - 1, want)
	VIS("plain text: 1 + 1", "plain text: 1 + 1");
	VIS("\033]0;owned\a\033[2J\033[31mFAKE ALERT",
	    "\\033]0;owned\\007\\033[2J\\033[31mFAKE ALERT");
	VIS("a\nb\rc\td\177e", "a\\nb\\rc\\td\\177e");
	VIS("nul\0x", "nul\\000x");
	VIS("caf\xc3\xa9 \xe2\x9c\x93", "caf\xc3\xa9 \xe2\x9c\x93");
	/* C1 CSI as UTF-8, a bare 8-bit CSI, a right-to-left override. */
	VIS("\xc2\x9b" "2J", "\\302\\233" "2J");
	VIS("\x9b", "\\233");
	VIS("ab\xe2\x80\xae" "cd", "ab\\342\\200\\256" "cd");
	VIS("back\\slash", "back\\slash");
	/* Twice is once. */
	VIS("\\033]0;x\\007", "\\033]0;x\\007");
#undef VIS

	j = json_pack("{s:s, s:[s, {s:s}], s:i}", "lastError", "\033[2Jx",
	    "list", "\007", "k\033", "v\033", "n", 3);
	util_vis_json(j);
	s = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
	assert_string_equal(s, "{\"lastError\":\"\\\\033[2Jx\",\"list\":"
	    "[\"\\\\007\",{\"k\\\\033\":\"v\\\\033\"}],\"n\":3}");
	free(s);
	json_decref(j);
}

/*
 * protocol_new_id: "<run>-<n>", n counting from 1 after protocol_set_run,
 * cut to the buffer it is given as a string of that size would be, for
 * runs of every length it keeps (15 bytes) and buffers of 1 to 40 bytes.
 */
static void
test_new_id(void **state)
{
	char		 run[20], want[64], buf[64];
	size_t		 rl, len;
	unsigned int	 n;

	for (rl = 0; rl <= 17; rl++) {
		memset(run, 'a' + (int)rl, rl);
		run[rl] = '\0';
		protocol_set_run(run);
		n = 0;
		for (len = 1; len <= 40; len++) {
			n++;
			snprintf(want, len, "%.15s-%u", run, n);
			memset(buf, 'x', sizeof buf);
			assert_ptr_equal(protocol_new_id(buf, len), buf);
			assert_string_equal(buf, want);
		}
	}
	protocol_set_run("corral");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_duration_valid),
		cmocka_unit_test(test_parse_duration_invalid),
		cmocka_unit_test(test_parse_size_valid),
		cmocka_unit_test(test_parse_size_invalid),
		cmocka_unit_test(test_format_round_trip),
		cmocka_unit_test(test_rfc3339_valid),
		cmocka_unit_test(test_rfc3339_invalid),
		cmocka_unit_test(test_rfc3339_length),
		cmocka_unit_test(test_rfc3339_now),
		cmocka_unit_test(test_rfc3339_same_verdicts),
		cmocka_unit_test(test_u64_digits),
		cmocka_unit_test(test_vis),
		cmocka_unit_test(test_new_id),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
