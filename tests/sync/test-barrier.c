/*
 * test-barrier.c - jp_barrier: rounds that nobody leaves early, one serial
 * thread a round, reuse, sleepers woken, bad counts.
 */
#include <jpsync/barrier.h>
#include <jpsync/hammer.h>

#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#define MAXT 32

static void test_layout_and_counts(void)
{
	jp_barrier_t a = JP_BARRIER_INIT(4), b, z = JP_BARRIER_INIT(0);
	static const unsigned char zero[sizeof(jp_barrier_t)];

	CU_ASSERT_EQUAL(sizeof(jp_barrier_t), 32);
	CU_ASSERT_EQUAL(_Alignof(jp_barrier_t), 4);
	CU_ASSERT_EQUAL(a.count, 4);
	memset(&b, 0xa5, sizeof b);
	CU_ASSERT_EQUAL(jp_barrier_init(&b, 0), EINVAL);
	CU_ASSERT_EQUAL(jp_barrier_init(&b, JP_BARRIER_COUNT_MAX + 1u), EINVAL);
	CU_ASSERT_EQUAL(jp_barrier_init(&b, 1), 0);
	CU_ASSERT_EQUAL(b.count, 1);
	b.count = 0;
	CU_ASSERT(memcmp(&b, zero, sizeof b) == 0);
	CU_ASSERT_EQUAL(jp_barrier_wait(&z), EINVAL);
	/* One thread a round: every wait is the serial one, and returns. */
	CU_ASSERT_EQUAL(jp_barrier_init(&b, 1), 0);
	for (int i = 0; i < 5; i++)
		CU_ASSERT_EQUAL(jp_barrier_wait(&b), JP_BARRIER_SERIAL_THREAD);
	jp_barrier_destroy(&b);
}

/*
 * Each round: write your slot, wait, read every slot (all must hold this
 * round), wait again (so nobody writes the next round while others read).
 * The slots are plain memory: a race detector checks the barrier orders
 * them.  Exactly one serial thread in each of the two waits of a round.
 */
struct rounds {
	jp_barrier_t b;
	uint64_t slot[MAXT];
	unsigned threads;
	_Atomic uint64_t serial, bad;
};

static void round_body(void *ctx, unsigned thread, uint64_t iter)
{
	struct rounds *r = ctx;

	r->slot[thread] = iter + 1;
	if (jp_barrier_wait(&r->b) == JP_BARRIER_SERIAL_THREAD)
		atomic_fetch_add(&r->serial, 1);
	for (unsigned i = 0; i < r->threads; i++)
		if (r->slot[i] != iter + 1)
			atomic_fetch_add(&r->bad, 1);
	if (jp_barrier_wait(&r->b) == JP_BARRIER_SERIAL_THREAD)
		atomic_fetch_add(&r->serial, 1);
}

static void test_rounds(void)
{
	static const unsigned threads[] = { 2, 3, 4, 8, 17 };

	for (unsigned i = 0; i < sizeof threads / sizeof threads[0]; i++) {
		struct rounds r = { .threads = threads[i] };
		uint64_t iters = jp_test_scaled(3000, 50);

		CU_ASSERT_EQUAL_FATAL(jp_barrier_init(&r.b, threads[i]), 0);
		CU_ASSERT_EQUAL_FATAL(jp_hammer(threads[i], iters, round_body, &r), 0);
		CU_ASSERT_EQUAL(atomic_load(&r.bad), 0);
		CU_ASSERT_EQUAL(atomic_load(&r.serial), 2 * iters);
		CU_ASSERT_EQUAL(r.b.arrived, 0);
		CU_ASSERT_EQUAL(r.b.round, (uint32_t)(2 * iters));
		CU_ASSERT_EQUAL(r.b.waiters, 0);
	}
}

/* ---- a sleeping thread is woken by the last arrival ------------------------- */

struct late {
	jp_barrier_t *b;
	_Atomic int arrived;
	int ret;
};

static void *arrive_late(void *arg)
{
	struct late *l = arg;

	usleep(50000);
	atomic_store(&l->arrived, 1);
	l->ret = jp_barrier_wait(l->b);
	return NULL;
}

static void test_sleeper_woken(void)
{
	jp_barrier_t b = JP_BARRIER_INIT(2);
	struct late l = { .b = &b };
	pthread_t t;
	int mine;

	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, arrive_late, &l), 0);
	mine = jp_barrier_wait(&b);
	CU_ASSERT_EQUAL(atomic_load(&l.arrived), 1);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(mine, 0);	/* the late thread was the serial one */
	CU_ASSERT_EQUAL(l.ret, JP_BARRIER_SERIAL_THREAD);
}

int main(void)
{
	CU_TestInfo tests[] = {
		{ "layout, static initialiser, bad counts", test_layout_and_counts },
		{ "rounds at 2, 3, 4, 8, 17 threads: nobody leaves early", test_rounds },
		{ "a sleeping thread is woken by the last arrival", test_sleeper_woken },
		CU_TEST_INFO_NULL,
	};
	CU_SuiteInfo suites[] = {
		{ "jp_barrier", NULL, NULL, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};

	return jp_test_run(suites);
}
