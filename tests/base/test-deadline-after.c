/* test-deadline-after.c - jp_deadline_after, against the shared library
 * (test-deadline.c: the timed calls and their deadlines). */
#include <jpsync/deadline.h>
#include <jpsync/mutex.h>

#include "testutil.h"

#include <errno.h>
#include <stdint.h>
#include <time.h>

static uint64_t ts_ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return ts_ns(&t);
}

/* now + ns, between a clock reading before the call and one after. */
static void check_after(uint64_t ns)
{
	struct timespec d;
	uint64_t before = now_ns(), after;

	CU_ASSERT_EQUAL_FATAL(jp_deadline_after(&d, ns), 0);
	after = now_ns();
	CU_ASSERT(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L);
	CU_ASSERT(ts_ns(&d) >= before + ns);
	CU_ASSERT(ts_ns(&d) <= after + ns);
}

static void test_now_plus_ns(void)
{
	static const uint64_t cases[] = {
		0, 1, 999, 999999999, 1000000000, 1000000001, 1999999999,
		123456789012ull, 3600ull * 1000000000u,
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		check_after(cases[i]);
	/* Every carry of the nanoseconds into the seconds. */
	for (uint64_t ns = 999000000; ns < 1001000000; ns += 7919)
		check_after(ns);
}

static void test_huge_timeout_does_not_wrap(void)
{
	struct timespec d;
	uint64_t before = now_ns();

	CU_ASSERT_EQUAL_FATAL(jp_deadline_after(&d, UINT64_MAX), 0);
	CU_ASSERT(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L);
	/* Later than now whatever time_t's width: no wrap to the past. */
	CU_ASSERT(d.tv_sec > 0);
	CU_ASSERT((uint64_t)d.tv_sec >= before / 1000000000u);
	if (sizeof(time_t) == 8) {
		/* 2^64 ns is 584 years: it fits, exactly. */
		CU_ASSERT((uint64_t)d.tv_sec >= before / 1000000000u +
			  UINT64_MAX / 1000000000u);
	} else {
		/* 32-bit time_t: clamped to the latest time it holds. */
		CU_ASSERT_EQUAL(d.tv_nsec, 999999999L);
	}
}

static void test_null_is_einval(void)
{
	CU_ASSERT_EQUAL(jp_deadline_after(NULL, 1000), EINVAL);
}

/* What the helper is for: a timed call that gives up when it says. */
static void test_timed_call_honours_it(void)
{
	jp_mutex_t m = JP_MUTEX_INIT;
	struct timespec d;
	uint64_t t0;

	jp_mutex_lock(&m);
	CU_ASSERT_EQUAL_FATAL(jp_deadline_after(&d, 20 * 1000000u), 0);
	t0 = now_ns();
	CU_ASSERT_EQUAL(jp_mutex_timedlock(&m, &d), ETIMEDOUT);
	/* It did not give up before the deadline (no bound on how late). */
	CU_ASSERT(now_ns() >= ts_ns(&d));
	CU_ASSERT(now_ns() - t0 >= 19 * 1000000u);
	jp_mutex_unlock(&m);
	/* A deadline far away on a free mutex: taken at once. */
	CU_ASSERT_EQUAL_FATAL(jp_deadline_after(&d, UINT64_MAX), 0);
	CU_ASSERT_EQUAL(jp_mutex_timedlock(&m, &d), 0);
	jp_mutex_unlock(&m);
}

static CU_TestInfo deadline_tests[] = {
	{ "now + ns, every carry into the seconds", test_now_plus_ns },
	{ "UINT64_MAX ns neither wraps nor overflows", test_huge_timeout_does_not_wrap },
	{ "NULL out is EINVAL", test_null_is_einval },
	{ "a timed lock ends at the deadline it builds", test_timed_call_honours_it },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ "deadline", NULL, NULL, NULL, NULL, deadline_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return jp_test_run(suites);
}
