/* test-mutex.c - jp_mutex: exclusion, trylock, timedlock. */
#include <jpsync/hammer.h>
#include <jpsync/mutex.h>

#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * A deadline one second in the past (jp_test_deadline_ms takes no negative
 * delay: its tv_nsec could go below 0).
 */
static void past_deadline(struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec -= 1;
}

static void test_layout(void)
{
	jp_mutex_t m = JP_MUTEX_INIT;
	jp_cond_t c = JP_COND_INIT;

	CU_ASSERT_EQUAL(sizeof(jp_mutex_t), 4);
	CU_ASSERT_EQUAL(sizeof(jp_cond_t), 4);
	CU_ASSERT_EQUAL(m.word, 0);
	CU_ASSERT_EQUAL(c.seq, 0);
}

/* ---- a plain counter under the mutex is exact ------------------------- */

struct counter {
	jp_mutex_t m;
	uint64_t n;		/* plain: the mutex is what protects it */
	uint64_t per_thread[64];
};

static void count_body(void *ctx, unsigned thread, uint64_t iter)
{
	struct counter *c = ctx;

	(void)iter;
	jp_mutex_lock(&c->m);
	c->n++;
	c->per_thread[thread % 64]++;
	jp_mutex_unlock(&c->m);
}

static void test_counter_exact(void)
{
	static const unsigned threads[] = { 1, 2, 4, 8, 17 };

	for (unsigned i = 0; i < sizeof threads / sizeof threads[0]; i++) {
		struct counter c = { .m = JP_MUTEX_INIT };
		uint64_t iters = jp_test_scaled(40000, 200);

		CU_ASSERT_EQUAL_FATAL(jp_hammer(threads[i], iters, count_body, &c), 0);
		CU_ASSERT_EQUAL(c.n, threads[i] * iters);
		CU_ASSERT_EQUAL(c.m.word, 0);	/* free, and nobody recorded asleep */
	}
}

/* Lock, trylock and timedlock mixed on one mutex: still exact. */
static void mixed_body(void *ctx, unsigned thread, uint64_t iter)
{
	struct counter *c = ctx;
	struct timespec d;

	switch ((iter + thread) % 3) {
	case 0:
		jp_mutex_lock(&c->m);
		break;
	case 1:
		while (jp_mutex_trylock(&c->m) != 0)
			sched_yield();
		break;
	default:
		jp_test_deadline_ms(&d, 10);
		while (jp_mutex_timedlock(&c->m, &d) != 0)
			jp_test_deadline_ms(&d, 10);
		break;
	}
	c->n++;
	jp_mutex_unlock(&c->m);
}

static void test_mixed_exact(void)
{
	struct counter c;
	uint64_t iters = jp_test_scaled(20000, 100);

	jp_mutex_init(&c.m);
	c.n = 0;
	CU_ASSERT_EQUAL_FATAL(jp_hammer(6, iters, mixed_body, &c), 0);
	CU_ASSERT_EQUAL(c.n, 6 * iters);
	jp_mutex_destroy(&c.m);
}

/* ---- trylock ---------------------------------------------------------- */

struct holder {
	jp_mutex_t *m;
	_Atomic int state;	/* 1: holding; 2: asked to release; 3: releasing */
	long hold_ms;		/* > 0: release by itself after this long */
};

static void *hold_thread(void *arg)
{
	struct holder *h = arg;

	jp_mutex_lock(h->m);
	atomic_store(&h->state, 1);
	if (h->hold_ms > 0) {
		usleep((useconds_t)h->hold_ms * 1000);
	} else {
		while (atomic_load(&h->state) != 2)
			usleep(1000);
	}
	atomic_store(&h->state, 3);	/* 3 before the unlock: the locker sees it */
	jp_mutex_unlock(h->m);
	return NULL;
}

static void start_holder(pthread_t *t, struct holder *h)
{
	CU_ASSERT_EQUAL_FATAL(pthread_create(t, NULL, hold_thread, h), 0);
	while (atomic_load(&h->state) != 1)
		usleep(500);
}

static void test_trylock(void)
{
	jp_mutex_t m = JP_MUTEX_INIT;
	struct holder h = { .m = &m };
	pthread_t t;

	CU_ASSERT_EQUAL(jp_mutex_trylock(&m), 0);
	CU_ASSERT_EQUAL(jp_mutex_trylock(&m), EBUSY);	/* not recursive */
	jp_mutex_unlock(&m);

	start_holder(&t, &h);
	CU_ASSERT_EQUAL(jp_mutex_trylock(&m), EBUSY);
	atomic_store(&h.state, 2);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(jp_mutex_trylock(&m), 0);
	jp_mutex_unlock(&m);
}

/* ---- timedlock -------------------------------------------------------- */

static void test_timedlock_expires(void)
{
	jp_mutex_t m = JP_MUTEX_INIT;
	struct holder h = { .m = &m };
	struct timespec d;
	pthread_t t;
	double t0, t1;

	start_holder(&t, &h);
	t0 = now_s();
	jp_test_deadline_ms(&d, 50);
	CU_ASSERT_EQUAL(jp_mutex_timedlock(&m, &d), ETIMEDOUT);
	t1 = now_s();
	CU_ASSERT(t1 - t0 >= 0.049);
	/* A deadline already past: at once. */
	past_deadline(&d);
	CU_ASSERT_EQUAL(jp_mutex_timedlock(&m, &d), ETIMEDOUT);
	/* A malformed deadline, when it would have to wait. */
	d.tv_nsec = 1000000000L;
	CU_ASSERT_EQUAL(jp_mutex_timedlock(&m, &d), EINVAL);
	d.tv_nsec = -1;
	CU_ASSERT_EQUAL(jp_mutex_timedlock(&m, &d), EINVAL);
	atomic_store(&h.state, 2);
	pthread_join(t, NULL);
	/* The mutex still works after timed-out waiters left their mark. */
	CU_ASSERT_EQUAL(jp_mutex_trylock(&m), 0);
	jp_mutex_unlock(&m);
	CU_ASSERT_EQUAL(m.word, 0);
}

static void test_timedlock_succeeds(void)
{
	jp_mutex_t m = JP_MUTEX_INIT;
	struct holder h = { .m = &m, .hold_ms = 30 };
	struct timespec d;
	pthread_t t;

	/* Free: succeeds at once, even with a deadline in the past or NULL. */
	past_deadline(&d);
	CU_ASSERT_EQUAL(jp_mutex_timedlock(&m, &d), 0);
	jp_mutex_unlock(&m);
	CU_ASSERT_EQUAL(jp_mutex_timedlock(&m, NULL), 0);
	jp_mutex_unlock(&m);

	/* Held for 30 ms, released well before the deadline. */
	start_holder(&t, &h);
	jp_test_deadline_ms(&d, 10000);
	CU_ASSERT_EQUAL(jp_mutex_timedlock(&m, &d), 0);
	CU_ASSERT_EQUAL(atomic_load(&h.state), 3);
	jp_mutex_unlock(&m);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(m.word, 0);
}

/* ---- a waiter asleep in the kernel is woken by unlock ----------------- */

static void test_sleeper_woken(void)
{
	jp_mutex_t m = JP_MUTEX_INIT;
	struct holder h = { .m = &m, .hold_ms = 50 };
	pthread_t t;

	start_holder(&t, &h);
	jp_mutex_lock(&m);	/* spins, then sleeps until the holder leaves */
	CU_ASSERT_EQUAL(atomic_load(&h.state), 3);
	jp_mutex_unlock(&m);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(m.word, 0);
}

/* ---- a free word that is not 0 ------------------------------------------ */

/*
 * A mutex is free with the sleepers' flag still set for a moment during
 * an unlock (mutex.c): every way to lock takes it then, timedlock with a
 * past deadline included ("a free mutex is taken even when the deadline
 * has passed", jp_mutex(3)).  The word's value 0x100 is the flag alone,
 * whatever the byte order.
 */
static void test_free_with_sleepers_flag(void)
{
	struct timespec past = { 0, 0 };
	jp_mutex_t m = JP_MUTEX_INIT;

	m.word = 0x100;
	CU_ASSERT_EQUAL(jp_mutex_timedlock(&m, &past), 0);
	CU_ASSERT_EQUAL(jp_mutex_trylock(&m), EBUSY);
	jp_mutex_unlock(&m);
	CU_ASSERT_EQUAL(m.word, 0);

	m.word = 0x100;
	CU_ASSERT_EQUAL(jp_mutex_trylock(&m), 0);
	jp_mutex_unlock(&m);
	CU_ASSERT_EQUAL(m.word, 0);

	m.word = 0x100;
	jp_mutex_lock(&m);
	CU_ASSERT_EQUAL(jp_mutex_timedlock(&m, &past), ETIMEDOUT);
	jp_mutex_unlock(&m);
	CU_ASSERT_EQUAL(m.word, 0);
}

/* ---- hand-overs that begin on an uncontended word --------------------- */

/*
 * Every round, the main thread takes the mutex uncontended (so its unlock
 * is the store of mutex.c), the other thread then locks it and, when the
 * hold is long, sleeps; the unlock must wake it.  A lost wake-up shows as
 * an ETIMEDOUT of the 10 s timedlock, not as a hang.  The holds vary from
 * none to 200 us, so that the waiter marks SLEEPERS at every point of the
 * unlock.
 */
struct rounds {
	jp_mutex_t m;
	_Atomic unsigned go, done;
	unsigned n, failed;
};

static void *round_waiter(void *arg)
{
	struct rounds *r = arg;

	for (unsigned i = 1; i <= r->n; i++) {
		struct timespec dl;

		while (atomic_load(&r->go) != i)
			sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &dl);
		dl.tv_sec += 10;
		if (jp_mutex_timedlock(&r->m, &dl) != 0) {
			r->failed = i;
			atomic_store(&r->done, r->n);
			return NULL;
		}
		jp_mutex_unlock(&r->m);
		atomic_store(&r->done, i);
	}
	return NULL;
}

static void test_handover_rounds(void)
{
	struct rounds r = { .m = JP_MUTEX_INIT };
	pthread_t t;

	r.n = (unsigned)jp_test_scaled(2000, 200);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, round_waiter, &r), 0);
	for (unsigned i = 1; i <= r.n && r.failed == 0; i++) {
		unsigned hold = (i * 2654435761u) >> 24;	/* 0-255 */

		jp_mutex_lock(&r.m);
		atomic_store(&r.go, i);
		if (hold > 64)
			usleep((hold - 64) % 200);
		else
			for (unsigned k = 0; k < hold * 8; k++)
				atomic_signal_fence(memory_order_seq_cst);
		jp_mutex_unlock(&r.m);
		while (atomic_load(&r.done) < i)
			sched_yield();
	}
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(r.failed, 0);
	/* Quiescent, the word is free with no sleeper marked. */
	CU_ASSERT_EQUAL(r.m.word, 0);
}

int main(void)
{
	CU_TestInfo tests[] = {
		{ "layout and static initialisers", test_layout },
		{ "counter exact at 1, 2, 4, 8, 17 threads", test_counter_exact },
		{ "lock, trylock, timedlock mixed: exact", test_mixed_exact },
		{ "trylock returns EBUSY when held", test_trylock },
		{ "timedlock expires with ETIMEDOUT", test_timedlock_expires },
		{ "timedlock succeeds before its deadline", test_timedlock_succeeds },
		{ "a sleeping locker is woken by unlock", test_sleeper_woken },
		{ "a free word with the sleepers' flag is taken", test_free_with_sleepers_flag },
		{ "hand-overs begun on an uncontended word lose no wake-up", test_handover_rounds },
		CU_TEST_INFO_NULL,
	};
	CU_SuiteInfo suites[] = {
		{ "jp_mutex", NULL, NULL, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};

	return jp_test_run(suites);
}
