/* test-lock.c - the internal lock (lib/base/lock.c), white-box: mutual
 * exclusion under jp_hammer with some long holds; a holder that keeps the
 * lock until all the others have spun out wakes them all, through the
 * futex word, by its releases; trylock and the fork helpers. */
#include "base/lock.h"

#include "testutil.h"

#include <jpsync/hammer.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

static struct jp__lock lk;

struct shared {
	uint64_t a, b;		/* written only under lk */
	_Atomic int inside;	/* threads inside at once */
	_Atomic int overlap;	/* times two were inside */
};

static void pause_ns(long ns)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < ns);
}

static void exclusive_body(void *ctx, unsigned thread, uint64_t iter)
{
	struct shared *s = ctx;
	uint64_t a;

	(void)thread;
	jp__lock(&lk);
	if (atomic_fetch_add_explicit(&s->inside, 1, memory_order_relaxed) != 0)
		atomic_fetch_add_explicit(&s->overlap, 1, memory_order_relaxed);
	a = s->a;
	/* Every 32nd hold is long (50 us): the others spin out and sleep. */
	if (iter % 32 == 0)
		pause_ns(50000);
	s->a = a + 1;
	s->b += 2;
	atomic_fetch_sub_explicit(&s->inside, 1, memory_order_relaxed);
	jp__unlock(&lk);
}

static void test_exclusion_under_contention(void)
{
	static struct shared s;
	unsigned threads = jp_hw_threads() < 4 ? 4 : 8;
	uint64_t iters = jp_test_scaled(4000, 200);

	CU_ASSERT_EQUAL_FATAL(jp_hammer(threads, iters, exclusive_body, &s), 0);
	CU_ASSERT_EQUAL(s.a, threads * iters);
	CU_ASSERT_EQUAL(s.b, 2 * threads * iters);
	CU_ASSERT_EQUAL(atomic_load(&s.overlap), 0);
	/* Whether a waiter spun out and slept here depends on the
	 * scheduler (under an emulator the threads may never overlap):
	 * test_sleepers_all_woken checks the sleeping path for certain. */
	CU_ASSERT_EQUAL(atomic_load(&lk.owner), 0);
	CU_ASSERT_EQUAL(atomic_load(&lk.waiters), 0);
}

/* Sleepers behind one holder: each release wakes the next, whoever the
 * kernel picks, until all have had the lock; none is left asleep. */
static _Atomic unsigned handed;

static void *take_once(void *arg)
{
	(void)arg;
	jp__lock(&lk);
	atomic_fetch_add(&handed, 1);
	jp__unlock(&lk);
	return NULL;
}

/* Wait (at most 60 s, for an emulator) until n threads are in the
 * lock's sleeping loop; true when they are. */
static bool wait_waiters(unsigned n)
{
	for (long i = 0; i < 60L * 1000; i++) {
		if (atomic_load(&lk.waiters) == n)
			return true;
		pause_ns(1000000);
	}
	return false;
}

static void test_sleepers_all_woken(void)
{
	enum { N = 6 };
	pthread_t t[N];
	int rounds = (int)jp_test_scaled(40, 4);

	for (int r = 0; r < rounds; r++) {
		atomic_store(&handed, 0);
		jp__lock(&lk);
		for (int i = 0; i < N; i++)
			CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, take_once, NULL), 0);
		uint32_t seq0 = atomic_load(&lk.seq);

		/* Hold until every one has spun out and announced itself
		 * (waiters counts only the threads past the spin). */
		CU_ASSERT_FATAL(wait_waiters(N));
		CU_ASSERT_EQUAL(atomic_load(&handed), 0);
		jp__unlock(&lk);
		/* The release saw them and sent a wake through the futex
		 * word: this fails if the sleeping path is never taken. */
		CU_ASSERT(atomic_load(&lk.seq) != seq0);
		for (int i = 0; i < N; i++)
			pthread_join(t[i], NULL);
		CU_ASSERT_EQUAL(atomic_load(&handed), N);
	}
	CU_ASSERT_EQUAL(atomic_load(&lk.waiters), 0);
}

static void test_trylock_and_fork_helpers(void)
{
	CU_ASSERT_TRUE(jp__trylock(&lk));
	CU_ASSERT_FALSE(jp__trylock(&lk));
	/* Held by this thread: the fork helper must not wait for it. */
	CU_ASSERT_FALSE(jp__lock_for_fork(&lk));
	jp__unlock(&lk);
	CU_ASSERT_TRUE(jp__lock_for_fork(&lk));
	jp__unlock(&lk);
	jp__lock(&lk);
	jp__lock_reset(&lk);
	CU_ASSERT_EQUAL(atomic_load(&lk.owner), 0);
	CU_ASSERT_TRUE(jp__trylock(&lk));
	jp__unlock(&lk);
}

static CU_TestInfo lock_tests[] = {
	{ "mutual exclusion under contention, long holds", test_exclusion_under_contention },
	{ "sleepers behind one holder are all woken", test_sleepers_all_woken },
	{ "trylock and the fork helpers", test_trylock_and_fork_helpers },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ "internal lock", NULL, NULL, NULL, NULL, lock_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	jp__lock_init(&lk);
	return jp_test_run(suites);
}
