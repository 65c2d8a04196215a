/*
 * test-prof.c - the heap profile's sampler (white-box: links the core
 * library): -ln(u) without libm, the mean of its intervals, and the
 * statistics' counts kept exact while the profile arms the bins' counts.
 */
#include "alloc/alloc_init.h"
#include "alloc/prof.h"
#include "testutil.h"

#include <CUnit/CUnit.h>
#include <jpsync/alloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LN2 0.69314718055994530942

static double dabs(double x)
{
	return x < 0 ? -x : x;
}

/* -ln(r / 2^64) at powers of two and between them. */
static void test_exp1(void)
{
	CU_ASSERT(dabs(jp__prof_exp1((uint64_t)1 << 63) - LN2) < 1e-6);
	CU_ASSERT(dabs(jp__prof_exp1((uint64_t)1 << 62) - 2 * LN2) < 1e-6);
	CU_ASSERT(dabs(jp__prof_exp1(1) - 64 * LN2) < 1e-6);
	/* u = 3/4: -ln(0.75) = 0.28768207245178 */
	CU_ASSERT(dabs(jp__prof_exp1((uint64_t)3 << 62) - 0.28768207245178) < 1e-6);
	/* u = 0.1 (r rounded): 2.302585 */
	CU_ASSERT(dabs(jp__prof_exp1(1844674407370955162ULL) - 2.302585092994) < 1e-6);
}

/*
 * The intervals of an exponential distribution of mean m: their mean is m
 * and their standard deviation m too, so the mean of n = 400000 draws has
 * a standard error of m / sqrt(n), 0.16% of m: within 1% of m is over 6 of
 * them.  And the fraction above m is exp(-1) = 0.3679 (standard error
 * 0.08%; 0.5% allowed).  The generator's seed is fixed: the same draws on
 * every run.
 */
static void test_interval_mean(void)
{
	const uint64_t mean = (uint64_t)512 << 10;
	const unsigned n = 400000;
	uint64_t state = 12345, above = 0;
	double sum = 0;

	for (unsigned i = 0; i < n; i++) {
		uint64_t v = jp__prof_interval(&state, mean);

		CU_ASSERT_FATAL(v >= 1);
		sum += (double)v;
		above += v > mean;
	}
	CU_ASSERT(dabs(sum / n / (double)mean - 1) < 0.01);
	CU_ASSERT(dabs((double)above / n - 0.36787944) < 0.005);
}

enum { N = 200000 };

/* In a thread of its own: its heap is made, and armed, with the profile
 * on (main switches it on after the allocator's start). */
static void *churn(void *arg)
{
	static void *keep[1000];

	(void)arg;
	for (unsigned i = 0; i < N; i++) {
		unsigned k = i % 1000;

		if (keep[k] != NULL)
			jp_free(keep[k]);
		keep[k] = jp_alloc(16 + (i % 7) * 48);
		if (keep[k] == NULL)
			return keep;	/* not NULL: failed */
	}
	for (unsigned k = 0; k < 1000; k++)
		jp_free(keep[k]);
	return NULL;
}

/* With the profile on, the bins' counts are armed and carried (about one
 * sample per 4 KiB here, so thousands of carries); the blocks handed out
 * stay exact (nalloc_hi + the count). */
static void test_counts_exact(void)
{
	struct jp_alloc_stats a, b;
	pthread_t t;
	void *r = NULL;

	CU_ASSERT_EQUAL_FATAL(jp_alloc_stats(&a, sizeof a), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, churn, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_join(t, &r), 0);
	CU_ASSERT_PTR_NULL(r);
	CU_ASSERT_EQUAL_FATAL(jp_alloc_stats(&b, sizeof b), 0);
	CU_ASSERT_EQUAL(b.allocs - a.allocs, N);
}

static CU_TestInfo prof_tests[] = {
	{ "-ln(u) without libm is exact to 1e-6", test_exp1 },
	{ "intervals are exponential with the rate as mean", test_interval_mean },
	{ "blocks handed out stay exact with the counts armed", test_counts_exact },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ "heap profile sampler", NULL, NULL, NULL, NULL, prof_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	int rc;

	/* The allocator started, then the profile on (as JPSYNC_HEAP_PROFILE
	 * does at the start) for the heaps made from now on. */
	jp_free(jp_alloc(1));
	jp__settings_w.prof_rate = 4096;
	jp__settings_w.prof = 1;
	rc = jp_test_run(suites);
	jp__settings_w.prof = 0;	/* no profile at exit */
	return rc;
}
