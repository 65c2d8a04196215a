/*
 * test-sem.c - jp_sem: counting, overflow, try and timed waits, a limit on
 * threads inside, producers and consumers.
 */
#include <jpsync/deadline.h>
#include <jpsync/hammer.h>
#include <jpsync/sem.h>

#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_layout(void)
{
	jp_sem_t a = JP_SEM_INIT(3), b;
	static const unsigned char zero[sizeof(jp_sem_t)];

	CU_ASSERT_EQUAL(sizeof(jp_sem_t), 16);
	CU_ASSERT_EQUAL(_Alignof(jp_sem_t), 4);
	CU_ASSERT_EQUAL(a.value, 3);
	CU_ASSERT_EQUAL(jp_sem_value(&a), 3);
	memset(&b, 0xa5, sizeof b);
	CU_ASSERT_EQUAL(jp_sem_init(&b, 0), 0);
	CU_ASSERT(memcmp(&b, zero, sizeof b) == 0);
	jp_sem_destroy(&b);
}

static void test_count_and_overflow(void)
{
	jp_sem_t s;

	CU_ASSERT_EQUAL(jp_sem_init(&s, JP_SEM_VALUE_MAX + 1u), EINVAL);
	CU_ASSERT_EQUAL(jp_sem_init(&s, 0), 0);
	CU_ASSERT_EQUAL(jp_sem_trywait(&s), EAGAIN);
	CU_ASSERT_EQUAL(jp_sem_post(&s), 0);
	CU_ASSERT_EQUAL(jp_sem_post(&s), 0);
	CU_ASSERT_EQUAL(jp_sem_value(&s), 2);
	CU_ASSERT_EQUAL(jp_sem_trywait(&s), 0);
	jp_sem_wait(&s);
	CU_ASSERT_EQUAL(jp_sem_trywait(&s), EAGAIN);
	CU_ASSERT_EQUAL(jp_sem_value(&s), 0);

	/* At the maximum a post is refused and changes nothing. */
	CU_ASSERT_EQUAL(jp_sem_init(&s, JP_SEM_VALUE_MAX), 0);
	CU_ASSERT_EQUAL(jp_sem_post(&s), EOVERFLOW);
	CU_ASSERT_EQUAL(jp_sem_value(&s), JP_SEM_VALUE_MAX);
	CU_ASSERT_EQUAL(jp_sem_trywait(&s), 0);
	CU_ASSERT_EQUAL(jp_sem_post(&s), 0);
	CU_ASSERT_EQUAL(jp_sem_post(&s), EOVERFLOW);
	CU_ASSERT_EQUAL(jp_sem_value(&s), JP_SEM_VALUE_MAX);
}

static void test_timedwait(void)
{
	jp_sem_t s = JP_SEM_INIT(0);
	struct timespec d;
	double t0;

	t0 = now_s();
	jp_deadline_after(&d, 50000000);
	CU_ASSERT_EQUAL(jp_sem_timedwait(&s, &d), ETIMEDOUT);
	CU_ASSERT(now_s() - t0 >= 0.049);
	clock_gettime(CLOCK_MONOTONIC, &d);
	d.tv_sec -= 1;
	CU_ASSERT_EQUAL(jp_sem_timedwait(&s, &d), ETIMEDOUT);
	d.tv_sec = -5;
	CU_ASSERT_EQUAL(jp_sem_timedwait(&s, &d), ETIMEDOUT);
	/* A count present is taken even with a past deadline. */
	CU_ASSERT_EQUAL(jp_sem_post(&s), 0);
	CU_ASSERT_EQUAL(jp_sem_timedwait(&s, &d), 0);
	CU_ASSERT_EQUAL(jp_sem_post(&s), 0);
	CU_ASSERT_EQUAL(jp_sem_timedwait(&s, NULL), 0);
	/* A malformed deadline is EINVAL, even with a count present. */
	CU_ASSERT_EQUAL(jp_sem_post(&s), 0);
	d.tv_sec = 0;
	d.tv_nsec = 1000000000L;
	CU_ASSERT_EQUAL(jp_sem_timedwait(&s, &d), EINVAL);
	d.tv_nsec = -1;
	CU_ASSERT_EQUAL(jp_sem_timedwait(&s, &d), EINVAL);
	CU_ASSERT_EQUAL(jp_sem_value(&s), 1);
}

/* ---- a sleeping waiter is woken by a post -------------------------------- */

/* Failures seen on other threads (CUnit is not thread-safe: asserted on
 * the main thread). */
static _Atomic unsigned thread_failures;

struct poster {
	jp_sem_t *s;
	long after_ms;
	_Atomic int posted;
};

static void *post_later(void *arg)
{
	struct poster *p = arg;

	usleep((useconds_t)p->after_ms * 1000);
	atomic_store(&p->posted, 1);
	if (jp_sem_post(p->s) != 0)
		atomic_fetch_add(&thread_failures, 1);
	return NULL;
}

static void test_sleeper_woken(void)
{
	jp_sem_t s = JP_SEM_INIT(0);
	struct poster p = { .s = &s, .after_ms = 50 };
	struct timespec d;
	pthread_t t;

	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, post_later, &p), 0);
	jp_sem_wait(&s);
	CU_ASSERT_EQUAL(atomic_load(&p.posted), 1);
	pthread_join(t, NULL);
	atomic_store(&p.posted, 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, post_later, &p), 0);
	jp_deadline_after(&d, 10000000000);
	CU_ASSERT_EQUAL(jp_sem_timedwait(&s, &d), 0);
	CU_ASSERT_EQUAL(atomic_load(&p.posted), 1);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(jp_sem_value(&s), 0);
	CU_ASSERT_EQUAL(atomic_load(&thread_failures), 0);
}

/* ---- at most N threads inside ----------------------------------------------- */

#define LIMIT 3

struct limiter {
	jp_sem_t s;
	_Atomic unsigned inside, most;
	uint64_t work[LIMIT];		/* plain: each slot is one thread's at a time */
	_Atomic unsigned slot_busy[LIMIT];
	_Atomic int bad;
};

static void limit_body(void *ctx, unsigned thread, uint64_t iter)
{
	struct limiter *l = ctx;
	struct timespec d;
	unsigned in, m;

	switch ((iter + thread) % 3) {
	case 0:
		jp_sem_wait(&l->s);
		break;
	case 1:
		while (jp_sem_trywait(&l->s) != 0)
			sched_yield();
		break;
	default:
		jp_deadline_after(&d, 2000000);
		while (jp_sem_timedwait(&l->s, &d) != 0)
			jp_deadline_after(&d, 2000000);
		break;
	}
	in = atomic_fetch_add(&l->inside, 1) + 1;
	m = atomic_load(&l->most);
	while (in > m && !atomic_compare_exchange_weak(&l->most, &m, in))
		;
	if (in > LIMIT)
		atomic_store(&l->bad, 1);
	/* Take a free slot and touch its plain counter: a race detector sees
	 * the semaphore order the slot's users. */
	for (unsigned i = 0; i < LIMIT; i++) {
		unsigned z = 0;

		if (atomic_compare_exchange_strong(&l->slot_busy[i], &z, 1)) {
			l->work[i]++;
			atomic_store(&l->slot_busy[i], 0);
			break;
		}
	}
	atomic_fetch_sub(&l->inside, 1);
	if (jp_sem_post(&l->s) != 0)
		atomic_store(&l->bad, 1);
}

static void test_limit(void)
{
	static const unsigned threads[] = { 2, 4, 8, 17 };

	for (unsigned i = 0; i < sizeof threads / sizeof threads[0]; i++) {
		struct limiter l = { .s = JP_SEM_INIT(LIMIT) };
		uint64_t iters = jp_test_scaled(20000, 100), total = 0;

		CU_ASSERT_EQUAL_FATAL(jp_hammer(threads[i], iters, limit_body, &l), 0);
		CU_ASSERT_EQUAL(atomic_load(&l.bad), 0);
		CU_ASSERT(atomic_load(&l.most) <= LIMIT);
		CU_ASSERT_EQUAL(jp_sem_value(&l.s), LIMIT);
		for (unsigned k = 0; k < LIMIT; k++)
			total += l.work[k];
		CU_ASSERT_EQUAL(total, threads[i] * iters);
	}
}

/* ---- producers and consumers: every post is taken once ---------------------- */

struct pc {
	jp_sem_t items;
	_Atomic uint64_t produced, consumed, bad;
};

static void pc_body(void *ctx, unsigned thread, uint64_t iter)
{
	struct pc *p = ctx;

	(void)iter;
	if (thread % 2 == 0) {
		atomic_fetch_add(&p->produced, 1);
		if (jp_sem_post(&p->items) != 0)
			atomic_fetch_add(&p->bad, 1);
	} else {
		jp_sem_wait(&p->items);
		atomic_fetch_add(&p->consumed, 1);
	}
}

static void test_producers_consumers(void)
{
	struct pc p = { .items = JP_SEM_INIT(0) };
	uint64_t iters = jp_test_scaled(50000, 200);

	CU_ASSERT_EQUAL_FATAL(jp_hammer(6, iters, pc_body, &p), 0);
	CU_ASSERT_EQUAL(atomic_load(&p.bad), 0);
	CU_ASSERT_EQUAL(atomic_load(&p.produced), 3 * iters);
	CU_ASSERT_EQUAL(atomic_load(&p.consumed), 3 * iters);
	CU_ASSERT_EQUAL(jp_sem_value(&p.items), 0);
	CU_ASSERT_EQUAL(p.items.waiters, 0);
}

int main(void)
{
	CU_TestInfo tests[] = {
		{ "layout, static initialiser, init", test_layout },
		{ "counting; a post at the maximum is EOVERFLOW", test_count_and_overflow },
		{ "timedwait: deadlines, EINVAL, a present count", test_timedwait },
		{ "a sleeping waiter is woken by post", test_sleeper_woken },
		{ "at most N threads inside, all waits mixed", test_limit },
		{ "producers and consumers: every post taken once", test_producers_consumers },
		CU_TEST_INFO_NULL,
	};
	CU_SuiteInfo suites[] = {
		{ "jp_sem", NULL, NULL, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};

	return jp_test_run(suites);
}
