/* test-options.c - the JPSYNC_* parser (lib/base/options.c), white-box. */
#include "base/options.h"

#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_parse_bool(void)
{
	static const char *const yes[] = { "1", "yes", "on", "true", "YES", "On" };
	static const char *const no[] = { "0", "no", "off", "false", "NO", "Off" };
	static const char *const bad[] = { "", "2", "y", "enable", "1 ", " 0", "-1", "onn" };
	bool b;

	for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
		b = false;
		CU_ASSERT_EQUAL(jp__parse_bool(yes[i], &b), 0);
		CU_ASSERT_TRUE(b);
	}
	for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
		b = true;
		CU_ASSERT_EQUAL(jp__parse_bool(no[i], &b), 0);
		CU_ASSERT_FALSE(b);
	}
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		b = true;
		CU_ASSERT_EQUAL(jp__parse_bool(bad[i], &b), EINVAL);
		CU_ASSERT_TRUE(b);	/* untouched */
	}
}

/* JPSYNC_STATS_FORMAT: text (the default) or json, any case; anything
 * else one warning, the default kept. */
static void test_stats_format(void)
{
	struct jp_options o;
	char *json[] = { "JPSYNC_STATS_FORMAT=json", NULL };
	char *upper[] = { "JPSYNC_STATS_FORMAT=JSON", NULL };
	char *text[] = { "JPSYNC_STATS_FORMAT=json", "JPSYNC_STATS_FORMAT=Text", NULL };
	char *bad[] = { "JPSYNC_STATS_FORMAT=json", "JPSYNC_STATS_FORMAT=xml", NULL };
	char *empty[] = { "JPSYNC_STATS_FORMAT=", NULL };

	CU_ASSERT_EQUAL(jp__options_parse(&o, NULL, -1), 0);
	CU_ASSERT_EQUAL(o.stats_format, JP_STATS_TEXT);
	CU_ASSERT_EQUAL(jp__options_parse(&o, json, -1), 0);
	CU_ASSERT_EQUAL(o.stats_format, JP_STATS_JSON);
	CU_ASSERT_EQUAL(jp__options_parse(&o, upper, -1), 0);
	CU_ASSERT_EQUAL(o.stats_format, JP_STATS_JSON);
	CU_ASSERT_EQUAL(jp__options_parse(&o, text, -1), 0);
	CU_ASSERT_EQUAL(o.stats_format, JP_STATS_TEXT);
	CU_ASSERT_EQUAL(jp__options_parse(&o, bad, -1), 1);
	CU_ASSERT_EQUAL(o.stats_format, JP_STATS_JSON);	/* the earlier value kept */
	CU_ASSERT_EQUAL(jp__options_parse(&o, empty, -1), 1);
	CU_ASSERT_EQUAL(o.stats_format, JP_STATS_TEXT);
}

/* JPSYNC_STATS_SIGNAL's values: names with or without SIG, any case,
 * numbers of signals that can be caught, off; not KILL, STOP or a fault. */
static void test_parse_signal(void)
{
	int sig = -1;

	CU_ASSERT_EQUAL(jp__parse_signal("USR2", &sig), 0);
	CU_ASSERT_EQUAL(sig, SIGUSR2);
	CU_ASSERT_EQUAL(jp__parse_signal("sigusr1", &sig), 0);
	CU_ASSERT_EQUAL(sig, SIGUSR1);
	CU_ASSERT_EQUAL(jp__parse_signal("1", &sig), 0);
	CU_ASSERT_EQUAL(sig, SIGHUP);
	CU_ASSERT_EQUAL(jp__parse_signal("off", &sig), 0);
	CU_ASSERT_EQUAL(sig, 0);
	CU_ASSERT_EQUAL(jp__parse_signal("0", &sig), 0);
	CU_ASSERT_EQUAL(sig, 0);
	{
		char rt[16];

		snprintf(rt, sizeof rt, "%d", SIGRTMIN + 1);
		CU_ASSERT_EQUAL(jp__parse_signal(rt, &sig), 0);
		CU_ASSERT_EQUAL(sig, SIGRTMIN + 1);
	}
	sig = -1;
	CU_ASSERT_EQUAL(jp__parse_signal("KILL", &sig), EINVAL);
	CU_ASSERT_EQUAL(jp__parse_signal("9", &sig), EINVAL);
	CU_ASSERT_EQUAL(jp__parse_signal("STOP", &sig), EINVAL);
	CU_ASSERT_EQUAL(jp__parse_signal("SEGV", &sig), EINVAL);
	CU_ASSERT_EQUAL(jp__parse_signal("USR3", &sig), EINVAL);
	CU_ASSERT_EQUAL(jp__parse_signal("", &sig), EINVAL);
	CU_ASSERT_EQUAL(jp__parse_signal("12x", &sig), EINVAL);
	CU_ASSERT_EQUAL(jp__parse_signal("99999999999999999999", &sig), EINVAL);
	/* A name or a number (jpsync(7)): "SIG" goes only before a name. */
	CU_ASSERT_EQUAL(jp__parse_signal("SIG1", &sig), EINVAL);
	CU_ASSERT_EQUAL(jp__parse_signal("sig10", &sig), EINVAL);
	CU_ASSERT_EQUAL(jp__parse_signal("SIG", &sig), EINVAL);
	CU_ASSERT_EQUAL(sig, -1);
}

static void test_parse_size(void)
{
	struct { const char *s; uint64_t v; } good[] = {
		{ "0", 0 }, { "42", 42 }, { "4K", 4096 }, { "4k", 4096 },
		{ "2M", 2u << 20 }, { "1G", 1u << 30 }, { "3KiB", 3072 },
		{ "5MB", 5u << 20 }, { "18446744073709551615", UINT64_MAX },
		{ "16777216G", 1ULL << 54 },
	};
	static const char *const bad[] = {
		"", "K", "-1", "+4", "4X", "4 K", "4KK", " 4", "0x10", "1.5M",
		"18446744073709551616", "17179869184G", "4Kb2",
	};
	uint64_t v;

	for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
		v = 7;
		CU_ASSERT_EQUAL(jp__parse_size(good[i].s, &v), 0);
		CU_ASSERT_EQUAL(v, good[i].v);
	}
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		v = 7;
		CU_ASSERT_EQUAL(jp__parse_size(bad[i], &v), EINVAL);
		CU_ASSERT_EQUAL(v, 7);
	}
}

/* Parse env and capture the warnings written to the fd. */
static int parse_capture(struct jp_options *o, char *const *env, char *out, size_t cap)
{
	int fds[2], n;
	ssize_t got;

	CU_ASSERT_FATAL(pipe(fds) == 0);
	n = jp__options_parse(o, env, fds[1]);
	close(fds[1]);
	got = read(fds[0], out, cap - 1);
	out[got > 0 ? got : 0] = '\0';
	close(fds[0]);
	return n;
}

static void test_defaults(void)
{
	struct jp_options o;
	char *env[] = { "PATH=/bin", "HOME=/root", NULL };
	char out[1024];

	CU_ASSERT_EQUAL(parse_capture(&o, env, out, sizeof out), 0);
	CU_ASSERT_STRING_EQUAL(out, "");
	CU_ASSERT_EQUAL(o.cache_n, 4096);
	CU_ASSERT_EQUAL(o.cache_bytes, 4194304);	/* 4 MiB */
	CU_ASSERT_EQUAL(o.mag_size, 16);
	CU_ASSERT_EQUAL(o.madvise_min, 4096);
	CU_ASSERT_FALSE(o.check);
	CU_ASSERT_FALSE(o.verbose);
	CU_ASSERT_FALSE(o.lockdep);
	CU_ASSERT_EQUAL(o.stats, JP_STATS_NONE);
	/* No environment at all: the same defaults. */
	memset(&o, 0xa5, sizeof o);
	CU_ASSERT_EQUAL(jp__options_parse(&o, NULL, -1), 0);
	CU_ASSERT_EQUAL(o.cache_n, 4096);
	CU_ASSERT_EQUAL(o.cache_bytes, 4194304);
	CU_ASSERT_EQUAL(o.mag_size, 16);
}

static void test_every_variable(void)
{
	struct jp_options o;
	char *env[] = {
		"JPSYNC_CACHE_N=64", "JPSYNC_CACHE_BYTES=64K", "JPSYNC_MAG_SIZE=8",
		"JPSYNC_MADVISE_MIN=64K", "JPSYNC_CHECK=yes", "JPSYNC_STATS=1", "JPSYNC_VERBOSE=on",
		"JPSYNC_LOCKDEP=1", "JPSYNC_TEST_SCALE=0.1", NULL,
	};
	char out[1024];

	CU_ASSERT_EQUAL(parse_capture(&o, env, out, sizeof out), 0);
	CU_ASSERT_STRING_EQUAL(out, "");
	CU_ASSERT_EQUAL(o.cache_n, 64);
	CU_ASSERT_EQUAL(o.cache_bytes, 65536);
	CU_ASSERT_EQUAL(o.mag_size, 8);
	CU_ASSERT_EQUAL(o.madvise_min, 65536);
	CU_ASSERT_TRUE(o.check);
	CU_ASSERT_TRUE(o.verbose);
	CU_ASSERT_TRUE(o.lockdep);
	CU_ASSERT_EQUAL(o.stats, JP_STATS_STDERR);
}

static void test_off_and_paths(void)
{
	struct jp_options o;
	char *env[] = { "JPSYNC_MADVISE_MIN=off", "JPSYNC_STATS=/tmp/jp-stats.txt", NULL };
	char *env2[] = { "JPSYNC_STATS=no", "JPSYNC_MADVISE_MIN=OFF", NULL };
	char out[1024];

	CU_ASSERT_EQUAL(parse_capture(&o, env, out, sizeof out), 0);
	CU_ASSERT_EQUAL(o.madvise_min, UINT64_MAX);
	CU_ASSERT_EQUAL(o.stats, JP_STATS_FILE);
	CU_ASSERT_STRING_EQUAL(o.stats_path, "/tmp/jp-stats.txt");
	CU_ASSERT_EQUAL(parse_capture(&o, env2, out, sizeof out), 0);
	CU_ASSERT_EQUAL(o.stats, JP_STATS_NONE);
	CU_ASSERT_EQUAL(o.madvise_min, UINT64_MAX);
}

/* JPSYNC_CACHE_BYTES: 0 (bins never grow) up to 1T = 1024G. */
static void test_cache_bytes_range(void)
{
	struct jp_options o;
	char *zero[] = { "JPSYNC_CACHE_BYTES=0", NULL };
	char *top[] = { "JPSYNC_CACHE_BYTES=1024G", NULL };
	char *bytes[] = { "JPSYNC_CACHE_BYTES=1099511627776", NULL };
	char *over[] = { "JPSYNC_CACHE_BYTES=1099511627777", NULL };
	char *mib[] = { "JPSYNC_CACHE_BYTES=16MiB", NULL };
	char out[1024];

	CU_ASSERT_EQUAL(parse_capture(&o, zero, out, sizeof out), 0);
	CU_ASSERT_STRING_EQUAL(out, "");
	CU_ASSERT_EQUAL(o.cache_bytes, 0);
	CU_ASSERT_EQUAL(o.cache_n, 4096);	/* the others untouched */
	CU_ASSERT_EQUAL(parse_capture(&o, top, out, sizeof out), 0);
	CU_ASSERT_EQUAL(o.cache_bytes, 1ULL << 40);
	CU_ASSERT_EQUAL(parse_capture(&o, bytes, out, sizeof out), 0);
	CU_ASSERT_EQUAL(o.cache_bytes, 1ULL << 40);
	CU_ASSERT_EQUAL(parse_capture(&o, mib, out, sizeof out), 0);
	CU_ASSERT_EQUAL(o.cache_bytes, 16ULL << 20);
	CU_ASSERT_EQUAL(parse_capture(&o, over, out, sizeof out), 1);
	CU_ASSERT_EQUAL(o.cache_bytes, 4194304);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "jpsync: warning: JPSYNC_CACHE_BYTES='1099511627777': out of range"));
}

static void test_malformed_values_warn_and_keep_default(void)
{
	struct jp_options o;
	char *env[] = {
		"JPSYNC_CACHE_N=lots", "JPSYNC_MAG_SIZE=0", "JPSYNC_MADVISE_MIN=4Q",
		"JPSYNC_CHECK=maybe", "JPSYNC_STATS=", "JPSYNC_VERBOSE=2",
		"JPSYNC_LOCKDEP=", "JPSYNC_CACHE_N=999999999999999999999",
		"JPSYNC_CACHE_BYTES=lots", "JPSYNC_CACHE_BYTES=1025G", NULL,
	};
	char out[4096];

	CU_ASSERT_EQUAL(parse_capture(&o, env, out, sizeof out), 10);
	CU_ASSERT_EQUAL(o.cache_n, 4096);
	CU_ASSERT_EQUAL(o.cache_bytes, 4194304);
	CU_ASSERT_EQUAL(o.mag_size, 16);
	CU_ASSERT_EQUAL(o.madvise_min, 4096);
	CU_ASSERT_FALSE(o.check);
	CU_ASSERT_FALSE(o.verbose);
	CU_ASSERT_FALSE(o.lockdep);
	CU_ASSERT_EQUAL(o.stats, JP_STATS_NONE);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "jpsync: warning: JPSYNC_CACHE_N='lots': not a number"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "JPSYNC_MAG_SIZE='0': out of range"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "JPSYNC_MADVISE_MIN='4Q': not a size"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "JPSYNC_CHECK='maybe': not a boolean"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "JPSYNC_STATS='': empty"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "JPSYNC_VERBOSE='2'"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "JPSYNC_LOCKDEP=''"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "jpsync: warning: JPSYNC_CACHE_BYTES='lots': not a number"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "JPSYNC_CACHE_BYTES='1025G': out of range"));
	/* one line per warning */
	int lines = 0;
	for (const char *p = out; *p; p++)
		lines += *p == '\n';
	CU_ASSERT_EQUAL(lines, 10);

	/* A refused value leaves what was there: an earlier good value, not
	 * the default and not the value clamped to the range (JPSYNC_CACHE_N's
	 * default is also its maximum, so the test above cannot tell). */
	char *env2[] = {
		"JPSYNC_CACHE_N=64", "JPSYNC_CACHE_N=4097",
		"JPSYNC_CACHE_BYTES=64K", "JPSYNC_CACHE_BYTES=1025G", NULL,
	};
	CU_ASSERT_EQUAL(parse_capture(&o, env2, out, sizeof out), 2);
	CU_ASSERT_EQUAL(o.cache_n, 64);
	CU_ASSERT_EQUAL(o.cache_bytes, 65536);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "JPSYNC_CACHE_N='4097': out of range"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "JPSYNC_CACHE_BYTES='1025G': out of range"));
}

static void test_unknown_variable_warns(void)
{
	struct jp_options o;
	char *env[] = { "JPSYNC_CACHEN=64", "JPSYNC_BENCH_REPS=3", "JPSYNC_=1",
			"NOT_JPSYNC_X=1", "JPSYNC_TEST_TIMEOUT=60", NULL };
	char out[1024];

	CU_ASSERT_EQUAL(parse_capture(&o, env, out, sizeof out), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "jpsync: warning: JPSYNC_CACHEN: unknown variable"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "jpsync: warning: JPSYNC_: unknown variable"));
	CU_ASSERT_PTR_NULL(strstr(out, "BENCH_REPS"));
	CU_ASSERT_PTR_NULL(strstr(out, "TEST_TIMEOUT"));
	CU_ASSERT_EQUAL(o.cache_n, 4096);
}

static void test_long_values_do_not_overflow(void)
{
	struct jp_options o;
	static char big[8192];
	char *env[] = { big, NULL };
	char out[4096];

	memset(big, 'x', sizeof big - 1);
	memcpy(big, "JPSYNC_STATS=", 13);
	CU_ASSERT_EQUAL(parse_capture(&o, env, out, sizeof out), 1);
	CU_ASSERT_EQUAL(o.stats, JP_STATS_NONE);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "file name too long"));
	CU_ASSERT(strlen(out) < 400);
}

/*
 * A statistics file name may be as long as the system allows (PATH_MAX
 * bytes with its NUL), not 255: a deep build or temporary directory is
 * valid.  One byte more is refused.
 */
static void test_stats_path_up_to_path_max(void)
{
	struct jp_options o;
	static char ok[13 + PATH_MAX], over[13 + PATH_MAX + 1];
	char *env_ok[] = { ok, NULL }, *env_over[] = { over, NULL };
	char out[4096];

	memcpy(ok, "JPSYNC_STATS=/", 14);
	memset(ok + 14, 'd', PATH_MAX - 2);	/* 1 + PATH_MAX - 2 = PATH_MAX - 1 bytes */
	CU_ASSERT_EQUAL(parse_capture(&o, env_ok, out, sizeof out), 0);
	CU_ASSERT_EQUAL(o.stats, JP_STATS_FILE);
	CU_ASSERT_EQUAL(strlen(o.stats_path), PATH_MAX - 1);
	CU_ASSERT_EQUAL(memcmp(o.stats_path, ok + 13, PATH_MAX - 1), 0);

	memcpy(over, ok, sizeof ok);
	over[13 + PATH_MAX - 1] = 'd';		/* PATH_MAX bytes: no room for the NUL */
	CU_ASSERT_EQUAL(parse_capture(&o, env_over, out, sizeof out), 1);
	CU_ASSERT_EQUAL(o.stats, JP_STATS_NONE);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "file name too long"));
}

/*
 * JPSYNC_STATS (and jpsync-run --stats=, the same row): the boolean
 * spellings switch the table on or off; a number that is not one of them
 * is refused rather than taken as a file name (a file named 2 is ./2).
 */
static void test_stats_values(void)
{
	static const char *const on[] = { "1", "yes", "on", "true", "YES", "On" };
	static const char *const off[] = { "0", "no", "off", "false", "OFF" };
	static const char *const refused[] = { "2", "10", "01", "-1", "+1" };
	const struct jp_option_desc *d = NULL;
	struct jp_options o;
	char why[160];

	for (size_t i = 0; i < jp__option_count; i++)
		if (strcmp(jp__option_table[i].name, "STATS") == 0)
			d = &jp__option_table[i];
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
		jp__options_parse(&o, NULL, -1);
		CU_ASSERT_PTR_NULL(jp__option_value(&o, d, on[i], why, sizeof why));
		CU_ASSERT_EQUAL(o.stats, JP_STATS_STDERR);
	}
	for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) {
		jp__options_parse(&o, NULL, -1);
		o.stats = JP_STATS_STDERR;
		CU_ASSERT_PTR_NULL(jp__option_value(&o, d, off[i], why, sizeof why));
		CU_ASSERT_EQUAL(o.stats, JP_STATS_NONE);
	}
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		const char *bad;

		jp__options_parse(&o, NULL, -1);
		bad = jp__option_value(&o, d, refused[i], why, sizeof why);
		CU_ASSERT_PTR_NOT_NULL(bad);
		if (bad != NULL)
			CU_ASSERT_PTR_NOT_NULL(strstr(bad, "./"));
		CU_ASSERT_EQUAL(o.stats, JP_STATS_NONE);
	}
	/* The spelling a file named 1 takes; a name with a digit is a name. */
	jp__options_parse(&o, NULL, -1);
	CU_ASSERT_PTR_NULL(jp__option_value(&o, d, "./1", why, sizeof why));
	CU_ASSERT_EQUAL(o.stats, JP_STATS_FILE);
	CU_ASSERT_STRING_EQUAL(o.stats_path, "./1");
	CU_ASSERT_PTR_NULL(jp__option_value(&o, d, "run2.txt", why, sizeof why));
	CU_ASSERT_STRING_EQUAL(o.stats_path, "run2.txt");
}

/* A hostile value or name is one line: control characters and backslashes
 * shown as \xHH and \\, not written (tests/fuzz/corpus/options/regress-*). */
static void test_warning_is_one_line(void)
{
	struct jp_options o;
	char *env[] = { "JPSYNC_MAG_SIZE=8\njpsync: warning: forged",
			"JPSYNC_\033[2J=1", "JPSYNC_CHECK=a\\b\177", NULL };
	char out[4096];

	CU_ASSERT_EQUAL(parse_capture(&o, env, out, sizeof out), 3);
	CU_ASSERT_STRING_EQUAL(out,
		"jpsync: warning: JPSYNC_MAG_SIZE='8\\x0ajpsync: warning: forged': "
		"not a number (1 to 1024); default kept\n"
		"jpsync: warning: JPSYNC_\\x1b[2J: unknown variable, ignored "
		"(see jpsync(7))\n"
		"jpsync: warning: JPSYNC_CHECK='a\\\\b\\x7f': not a boolean "
		"(use 1/yes/on or 0/no/off); default kept\n");
	CU_ASSERT_EQUAL(o.mag_size, 16);
}

/* A statistics file name with a control character would print (VERBOSE,
 * jpsync-run --print-env) as more than one variable: refused. */
static void test_stats_file_control_character(void)
{
	struct jp_options o;
	char *env[] = { "JPSYNC_STATS=/tmp/x\nJPSYNC_CHECK=1", NULL };
	char *tab[] = { "JPSYNC_STATS=/tmp/a\tb", NULL };
	char out[1024];

	CU_ASSERT_EQUAL(parse_capture(&o, env, out, sizeof out), 1);
	CU_ASSERT_EQUAL(o.stats, JP_STATS_NONE);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "a control character in the file name"));
	CU_ASSERT_EQUAL(parse_capture(&o, tab, out, sizeof out), 1);
	CU_ASSERT_EQUAL(o.stats, JP_STATS_NONE);
}

static void test_print_effective(void)
{
	struct jp_options o;
	char *env[] = { "JPSYNC_MADVISE_MIN=off", "JPSYNC_CACHE_N=8",
			"JPSYNC_CACHE_BYTES=0", NULL };
	int fds[2];
	char out[2048];
	ssize_t n;

	jp__options_parse(&o, env, -1);
	CU_ASSERT_FATAL(pipe(fds) == 0);
	jp__options_print(&o, fds[1]);
	close(fds[1]);
	n = read(fds[0], out, sizeof out - 1);
	out[n > 0 ? n : 0] = '\0';
	close(fds[0]);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "jpsync: JPSYNC_CACHE_N=8\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "jpsync: JPSYNC_CACHE_BYTES=0\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "jpsync: JPSYNC_MADVISE_MIN=off\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "jpsync: JPSYNC_MAG_SIZE=16\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "jpsync: JPSYNC_STATS=0\n"));
}

/* The process-wide parse reads the real environment once. */
static void process_options_child(void *arg)
{
	const struct jp_options *o;
	(void)arg;

	setenv("JPSYNC_CACHE_N", "12", 1);
	setenv("JPSYNC_MAG_SIZE", "bogus", 1);
	setenv("JPSYNC_CACHE_BYTES", "2M", 1);
	o = jp__options();
	if (o->cache_n != 12 || o->mag_size != 16 || o->cache_bytes != 2u << 20)
		_exit(1);
	setenv("JPSYNC_CACHE_N", "99", 1);	/* read once: no effect now */
	if (jp__options()->cache_n != 12 || jp__options() != o)
		_exit(2);
	_exit(0);
}

static void test_process_options_read_once(void)
{
	struct jp_child_result r;

	CU_ASSERT_EQUAL_FATAL(jp_test_child(process_options_child, NULL, &r), 0);
	CU_ASSERT_EQUAL(r.exited, 1);
	CU_ASSERT_EQUAL(r.status, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "JPSYNC_MAG_SIZE='bogus'"));
}

/* The table that jpsync-run is built from: every row has a flag and help,
 * no flag or name twice, and jp__option_value agrees with the parse of the
 * same value from an environment (jpsync-run checks with the one, the
 * program reads with the other). */
static void test_table_drives_jpsync_run(void)
{
	static const char *const values[] = {
		"0", "1", "16", "1K", "4K", "5K", "1024G", "1025G", "off", "yes",
		"lots", "", "/tmp/x", "-1", "18446744073709551615",
	};

	CU_ASSERT(jp__option_count >= 8);
	for (size_t i = 0; i < jp__option_count; i++) {
		const struct jp_option_desc *d = &jp__option_table[i];
		char range[128];

		CU_ASSERT_PTR_NOT_NULL(d->flag);
		CU_ASSERT_PTR_NOT_NULL(d->help);
		CU_ASSERT((d->arg == NULL) == (d->kind == JP_OPT_BOOL));
		for (size_t j = 0; j < i; j++) {
			CU_ASSERT(strcmp(d->flag, jp__option_table[j].flag) != 0);
			CU_ASSERT(strcmp(d->name, jp__option_table[j].name) != 0);
		}
		jp__option_range(d, range, sizeof range);
		CU_ASSERT((range[0] != '\0') ==
			  (d->kind == JP_OPT_SIZE || d->kind == JP_OPT_SIZE_OFF ||
			   d->kind == JP_OPT_FORMAT));
		for (size_t v = 0; v < sizeof values / sizeof *values; v++) {
			struct jp_options a, b;
			char entry[128], why[160];
			char *env[] = { entry, NULL };
			const char *bad;
			int warnings;

			jp__options_parse(&a, NULL, -1);
			bad = jp__option_value(&a, d, values[v], why, sizeof why);
			snprintf(entry, sizeof entry, "JPSYNC_%s=%s", d->name, values[v]);
			warnings = jp__options_parse(&b, env, -1);
			CU_ASSERT_EQUAL(warnings, bad != NULL);
			CU_ASSERT(memcmp(&a, &b, sizeof a) == 0);
		}
	}
	/* The count options take K too: 1K blocks is 1024. */
	{
		struct jp_options o;
		char why[160];

		jp__options_parse(&o, NULL, -1);
		CU_ASSERT_PTR_NULL(jp__option_value(&o, &jp__option_table[0], "1K", why, sizeof why));
		CU_ASSERT_EQUAL(o.cache_n, 1024);
		CU_ASSERT_STRING_EQUAL(jp__option_value(&o, &jp__option_table[0], "5K", why, sizeof why),
				       "out of range (1 to 4096)");
	}
}

static CU_TestInfo options_tests[] = {
	{ "the table: one row per variable and jpsync-run option", test_table_drives_jpsync_run },
	{ "booleans: 1/yes/on/true and 0/no/off/false only", test_parse_bool },
	{ "signals: names, numbers and off; not KILL, STOP or a fault", test_parse_signal },
	{ "JPSYNC_STATS_FORMAT: text or json, any case", test_stats_format },
	{ "sizes: K/M/G suffixes, overflow and garbage refused", test_parse_size },
	{ "defaults with no JPSYNC_ variables", test_defaults },
	{ "every variable of the design is parsed", test_every_variable },
	{ "off and file names", test_off_and_paths },
	{ "JPSYNC_CACHE_BYTES: 0 to 1T", test_cache_bytes_range },
	{ "malformed values: one warning each, default kept", test_malformed_values_warn_and_keep_default },
	{ "unknown JPSYNC_ names warn, test/bench names do not", test_unknown_variable_warns },
	{ "an 8 KiB value is refused without overflow", test_long_values_do_not_overflow },
	{ "a warning is one line, its bytes shown", test_warning_is_one_line },
	{ "a statistics file name has no control character", test_stats_file_control_character },
	{ "a statistics file name may be PATH_MAX - 1 bytes long", test_stats_path_up_to_path_max },
	{ "statistics: on/off spellings, numbers refused, ./1 a file", test_stats_values },
	{ "effective options print as NAME=value", test_print_effective },
	{ "the process environment is read once", test_process_options_read_once },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ "options", NULL, NULL, NULL, NULL, options_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return jp_test_run(suites);
}
