/*
 * test-rwlock.c - jp_rwlock: exclusion, shared reading, try and timed
 * calls, neither side starved, the reader limit, lock-order checking.
 */
#include <jpsync/deadline.h>
#include <jpsync/hammer.h>
#include <jpsync/mutex.h>
#include <jpsync/rwlock.h>

#include "sync/sync.h"
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void past_deadline(struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec -= 1;
}

/* Failures seen on other threads (CUnit is not thread-safe: asserted on
 * the main thread, by each case that starts threads). */
static _Atomic unsigned thread_failures;

/* No reader holds or waits: every arrival has left or was taken back. */
static void assert_idle(const jp_rwlock_t *rw)
{
	CU_ASSERT_EQUAL(rw->rin & 0xfffff000u, rw->rout & 0xfffff000u);
	CU_ASSERT_EQUAL(rw->rin & 0x2u, 0);	/* no writer present */
	CU_ASSERT_EQUAL(rw->wlock, 0);
	CU_ASSERT_EQUAL(rw->wticket, 0);
}

static void test_layout(void)
{
	jp_rwlock_t a = JP_RWLOCK_INIT, b;
	static const unsigned char zero[sizeof(jp_rwlock_t)];

	CU_ASSERT_EQUAL(sizeof(jp_rwlock_t), 32);
	CU_ASSERT_EQUAL(_Alignof(jp_rwlock_t), 4);
	CU_ASSERT(memcmp(&a, zero, sizeof a) == 0);
	memset(&b, 0xa5, sizeof b);
	jp_rwlock_init(&b);
	CU_ASSERT(memcmp(&b, zero, sizeof b) == 0);
	CU_ASSERT_EQUAL(jp_rwlock_rdlock(&b), 0);
	jp_rwlock_unlock(&b);
	jp_rwlock_wrlock(&b);
	jp_rwlock_unlock(&b);
	assert_idle(&b);
	jp_rwlock_destroy(&b);
}

/* ---- exclusion under contention ----------------------------------------- */

/*
 * Writers change a and b one after the other, with time in between;
 * readers check that they are equal.  Every fourth iteration writes; the
 * calls are mixed: plain, try (retried) and timed (retried).
 */
struct shared {
	jp_rwlock_t rw;
	uint64_t a, b;			/* plain: the lock protects them */
	uint64_t writes;
	_Atomic uint64_t torn, readers_in, max_readers;
};

static void lock_mode(struct shared *s, bool write, unsigned how)
{
	struct timespec d;

	switch (how % 3) {
	case 0:
		if (write)
			jp_rwlock_wrlock(&s->rw);
		else if (jp_rwlock_rdlock(&s->rw) != 0)
			atomic_fetch_add(&thread_failures, 1);
		break;
	case 1:
		while ((write ? jp_rwlock_trywrlock(&s->rw) : jp_rwlock_tryrdlock(&s->rw)) != 0)
			sched_yield();
		break;
	default:
		jp_deadline_after(&d, 2000000);
		while ((write ? jp_rwlock_timedwrlock(&s->rw, &d)
			      : jp_rwlock_timedrdlock(&s->rw, &d)) != 0)
			jp_deadline_after(&d, 2000000);
		break;
	}
}

static void rw_body(void *ctx, unsigned thread, uint64_t iter)
{
	struct shared *s = ctx;
	bool write = (iter + thread) % 4 == 0;

	lock_mode(s, write, (unsigned)(iter / 4 + thread));
	if (write) {
		s->a++;
		for (int i = 0; i < 20; i++)
			jp_cpu_relax();
		s->b++;
		s->writes++;
	} else {
		uint64_t in = atomic_fetch_add(&s->readers_in, 1) + 1, m;

		if (s->a != s->b)
			atomic_fetch_add(&s->torn, 1);
		m = atomic_load(&s->max_readers);
		while (in > m && !atomic_compare_exchange_weak(&s->max_readers, &m, in))
			;
		atomic_fetch_sub(&s->readers_in, 1);
	}
	jp_rwlock_unlock(&s->rw);
}

static void test_exclusion(void)
{
	static const unsigned threads[] = { 1, 2, 4, 8, 17 };

	for (unsigned i = 0; i < JP_ARRAY_SIZE(threads); i++) {
		struct shared s = { .rw = JP_RWLOCK_INIT };
		uint64_t iters = jp_test_scaled(20000, 100);
		uint64_t expect = 0;

		CU_ASSERT_EQUAL_FATAL(jp_hammer(threads[i], iters, rw_body, &s), 0);
		for (unsigned t = 0; t < threads[i]; t++)
			for (uint64_t it = 0; it < iters; it++)
				expect += (it + t) % 4 == 0;
		CU_ASSERT_EQUAL(atomic_load(&s.torn), 0);
		CU_ASSERT_EQUAL(s.a, expect);
		CU_ASSERT_EQUAL(s.b, expect);
		CU_ASSERT_EQUAL(s.writes, expect);
		assert_idle(&s.rw);
	}
}

/* ---- readers share the lock ----------------------------------------------- */

struct holder {
	jp_rwlock_t *rw;
	bool write;
	_Atomic int state;	/* 1: holding; 2: asked to release; 3: released */
	long hold_ms;		/* > 0: release by itself after this long */
};

static void *hold_thread(void *arg)
{
	struct holder *h = arg;

	if (h->write)
		jp_rwlock_wrlock(h->rw);
	else if (jp_rwlock_rdlock(h->rw) != 0)
		atomic_fetch_add(&thread_failures, 1);
	atomic_store(&h->state, 1);
	if (h->hold_ms > 0) {
		usleep((useconds_t)h->hold_ms * 1000);
	} else {
		while (atomic_load(&h->state) != 2)
			usleep(1000);
	}
	atomic_store(&h->state, 3);
	jp_rwlock_unlock(h->rw);
	return NULL;
}

static void start_holder(pthread_t *t, struct holder *h)
{
	CU_ASSERT_EQUAL_FATAL(pthread_create(t, NULL, hold_thread, h), 0);
	while (atomic_load(&h->state) != 1)
		usleep(500);
}

static void release_holder(pthread_t t, struct holder *h)
{
	atomic_store(&h->state, 2);
	pthread_join(t, NULL);
}

static void test_try(void)
{
	jp_rwlock_t rw = JP_RWLOCK_INIT;
	struct holder r = { .rw = &rw }, w = { .rw = &rw, .write = true };
	pthread_t t;

	/* A reader holds: more readers get in, writers do not. */
	start_holder(&t, &r);
	CU_ASSERT_EQUAL(jp_rwlock_tryrdlock(&rw), 0);
	jp_rwlock_unlock(&rw);
	CU_ASSERT_EQUAL(jp_rwlock_rdlock(&rw), 0);
	jp_rwlock_unlock(&rw);
	CU_ASSERT_EQUAL(jp_rwlock_trywrlock(&rw), EBUSY);
	/* The failed trywrlock left nothing behind: readers still enter. */
	CU_ASSERT_EQUAL(jp_rwlock_tryrdlock(&rw), 0);
	jp_rwlock_unlock(&rw);
	release_holder(t, &r);
	assert_idle(&rw);

	/* A writer holds: nobody else gets in. */
	start_holder(&t, &w);
	CU_ASSERT_EQUAL(jp_rwlock_tryrdlock(&rw), EBUSY);
	CU_ASSERT_EQUAL(jp_rwlock_trywrlock(&rw), EBUSY);
	release_holder(t, &w);
	assert_idle(&rw);

	/* Free: both succeed, and a writer excludes the caller's own try. */
	CU_ASSERT_EQUAL(jp_rwlock_trywrlock(&rw), 0);
	CU_ASSERT_EQUAL(jp_rwlock_tryrdlock(&rw), EBUSY);
	jp_rwlock_unlock(&rw);
	assert_idle(&rw);
}

/* ---- deadlines -------------------------------------------------------------- */

static void test_timed(void)
{
	jp_rwlock_t rw = JP_RWLOCK_INIT;
	struct holder r = { .rw = &rw }, w = { .rw = &rw, .write = true };
	struct timespec d;
	pthread_t t;
	double t0;

	/* Free: taken even with a past or NULL deadline. */
	past_deadline(&d);
	CU_ASSERT_EQUAL(jp_rwlock_timedrdlock(&rw, &d), 0);
	jp_rwlock_unlock(&rw);
	CU_ASSERT_EQUAL(jp_rwlock_timedwrlock(&rw, &d), 0);
	jp_rwlock_unlock(&rw);
	CU_ASSERT_EQUAL(jp_rwlock_timedwrlock(&rw, NULL), 0);
	jp_rwlock_unlock(&rw);
	/* A malformed deadline is EINVAL, even when the lock is free. */
	d.tv_nsec = 1000000000L;
	CU_ASSERT_EQUAL(jp_rwlock_timedrdlock(&rw, &d), EINVAL);
	CU_ASSERT_EQUAL(jp_rwlock_timedwrlock(&rw, &d), EINVAL);
	d.tv_nsec = -1;
	CU_ASSERT_EQUAL(jp_rwlock_timedwrlock(&rw, &d), EINVAL);
	assert_idle(&rw);

	/* A reader holds: a timed writer gives up at its deadline. */
	start_holder(&t, &r);
	t0 = now_s();
	jp_deadline_after(&d, 50000000);
	CU_ASSERT_EQUAL(jp_rwlock_timedwrlock(&rw, &d), ETIMEDOUT);
	CU_ASSERT(now_s() - t0 >= 0.049);
	past_deadline(&d);
	CU_ASSERT_EQUAL(jp_rwlock_timedwrlock(&rw, &d), ETIMEDOUT);
	/* ... and readers are not held back by the writer that left. */
	CU_ASSERT_EQUAL(jp_rwlock_tryrdlock(&rw), 0);
	jp_rwlock_unlock(&rw);
	release_holder(t, &r);
	assert_idle(&rw);

	/* A writer holds: a timed reader gives up, and takes its arrival back. */
	start_holder(&t, &w);
	t0 = now_s();
	jp_deadline_after(&d, 50000000);
	CU_ASSERT_EQUAL(jp_rwlock_timedrdlock(&rw, &d), ETIMEDOUT);
	CU_ASSERT(now_s() - t0 >= 0.049);
	past_deadline(&d);
	CU_ASSERT_EQUAL(jp_rwlock_timedrdlock(&rw, &d), ETIMEDOUT);
	CU_ASSERT_EQUAL(jp_rwlock_timedwrlock(&rw, &d), ETIMEDOUT);
	release_holder(t, &w);
	assert_idle(&rw);
	/* The next writer does not wait for the readers that gave up. */
	jp_deadline_after(&d, 5000000000);
	CU_ASSERT_EQUAL(jp_rwlock_timedwrlock(&rw, &d), 0);
	jp_rwlock_unlock(&rw);
	assert_idle(&rw);
}

/* A sleeping writer is woken by the last reader; sleeping readers by the writer. */
static void test_sleepers_woken(void)
{
	jp_rwlock_t rw = JP_RWLOCK_INIT;
	struct holder r = { .rw = &rw, .hold_ms = 50 }, w = { .rw = &rw, .write = true, .hold_ms = 50 };
	pthread_t t;

	start_holder(&t, &r);
	jp_rwlock_wrlock(&rw);
	CU_ASSERT_EQUAL(atomic_load(&r.state), 3);
	jp_rwlock_unlock(&rw);
	pthread_join(t, NULL);
	start_holder(&t, &w);
	CU_ASSERT_EQUAL(jp_rwlock_rdlock(&rw), 0);
	CU_ASSERT_EQUAL(atomic_load(&w.state), 3);
	jp_rwlock_unlock(&rw);
	pthread_join(t, NULL);
	assert_idle(&rw);
}

/* ---- starvation -------------------------------------------------------------- */

/*
 * Threads of one kind take turns so that the lock is never free of them:
 * each holds it for hold_us and re-takes it at once.  A thread of the
 * other kind must still get in, within the (generous) deadline.  A
 * reader-preferring lock (glibc's default pthread_rwlock) starves the
 * writer of the first case; a writer-preferring one starves the reader of
 * the second.
 */
struct stream {
	jp_rwlock_t rw;
	bool write;
	unsigned hold_us;
	_Atomic int stop;
	_Atomic uint64_t rounds;
};

static void *stream_thread(void *arg)
{
	struct stream *s = arg;

	while (!atomic_load(&s->stop)) {
		if (s->write)
			jp_rwlock_wrlock(&s->rw);
		else if (jp_rwlock_rdlock(&s->rw) != 0)
			atomic_fetch_add(&thread_failures, 1);
		usleep(s->hold_us);
		jp_rwlock_unlock(&s->rw);
		atomic_fetch_add(&s->rounds, 1);
	}
	return NULL;
}

static void starve_case(bool writers_stream)
{
	struct stream s = { .rw = JP_RWLOCK_INIT, .write = writers_stream, .hold_us = 2000 };
	pthread_t t[4];
	struct timespec d;
	int got = 0, tries = 5;

	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, stream_thread, &s), 0);
	while (atomic_load(&s.rounds) < 8)
		usleep(1000);
	for (int i = 0; i < tries; i++) {
		jp_deadline_after(&d, 10000000000);	/* 10 s: far more than a phase */
		if ((writers_stream ? jp_rwlock_timedrdlock(&s.rw, &d)
				    : jp_rwlock_timedwrlock(&s.rw, &d)) == 0) {
			got++;
			jp_rwlock_unlock(&s.rw);
		}
		usleep(3000);
	}
	atomic_store(&s.stop, 1);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	CU_ASSERT_EQUAL(got, tries);
	assert_idle(&s.rw);
}

static void test_writer_not_starved(void)
{
	starve_case(false);
}

static void test_reader_not_starved(void)
{
	starve_case(true);
}

/*
 * Phase-fairness, measured: with readers always inside, a writer that
 * arrives waits only for the readers already in (about one hold), not
 * for the stream; and a reader behind a stream of writers waits for about
 * one write phase.  The bound is loose (the machine is shared); a lock
 * that let the stream go on would wait until the deadline above.
 */
static void test_phase_bounded(void)
{
	struct stream s = { .rw = JP_RWLOCK_INIT, .write = false, .hold_us = 5000 };
	pthread_t t[4];
	double worst = 0;

	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, stream_thread, &s), 0);
	while (atomic_load(&s.rounds) < 8)
		usleep(1000);
	for (int i = 0; i < 5; i++) {
		double t0 = now_s(), dt;

		jp_rwlock_wrlock(&s.rw);
		dt = now_s() - t0;
		jp_rwlock_unlock(&s.rw);
		if (dt > worst)
			worst = dt;
		usleep(2000);
	}
	atomic_store(&s.stop, 1);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("\n    writer behind 4 streaming readers (5 ms holds): worst wait %.1f ms\n",
	       worst * 1e3);
	CU_ASSERT(worst < (jp_test_on_valgrind() || jp_test_sanitized() ? 5.0 : 1.0));
}

/* ---- the reader limit ---------------------------------------------------------- */

static void test_reader_limit(void)
{
	jp_rwlock_t rw = JP_RWLOCK_INIT;
	struct timespec d;
	uint32_t n;

	for (n = 0; n < JP_RWLOCK_READERS_MAX; n++)
		if (jp_rwlock_rdlock(&rw) != 0)
			break;
	CU_ASSERT_EQUAL(n, JP_RWLOCK_READERS_MAX);
	CU_ASSERT_EQUAL(jp_rwlock_rdlock(&rw), EAGAIN);
	CU_ASSERT_EQUAL(jp_rwlock_tryrdlock(&rw), EAGAIN);
	jp_deadline_after(&d, 1000000);
	CU_ASSERT_EQUAL(jp_rwlock_timedrdlock(&rw, &d), EAGAIN);
	CU_ASSERT_EQUAL(jp_rwlock_trywrlock(&rw), EBUSY);
	while (n-- > 0)
		jp_rwlock_unlock(&rw);
	assert_idle(&rw);
	CU_ASSERT_EQUAL(jp_rwlock_trywrlock(&rw), 0);
	jp_rwlock_unlock(&rw);
	assert_idle(&rw);
}

/* ---- lock-order checking ------------------------------------------------------- */

static unsigned count(const char *s, const char *pat)
{
	unsigned n = 0;

	for (const char *p = s; (p = strstr(p, pat)) != NULL; p += strlen(pat))
		n++;
	return n;
}

static jp_rwlock_t la = JP_RWLOCK_INIT;
static jp_mutex_t lb = JP_MUTEX_INIT;

/* Read A then lock B in one place; lock B then write A in another. */
static void child_inversion(void *arg)
{
	(void)arg;
	jp__sync_force_lockdep(true);
	jp_rwlock_rdlock(&la);
	jp_mutex_lock(&lb);
	jp_mutex_unlock(&lb);
	jp_rwlock_unlock(&la);
	jp_mutex_lock(&lb);
	jp_rwlock_wrlock(&la);
	jp_rwlock_unlock(&la);
	jp_mutex_unlock(&lb);
}

static void child_consistent(void *arg)
{
	(void)arg;
	jp__sync_force_lockdep(true);
	for (int i = 0; i < 3; i++) {
		jp_rwlock_rdlock(&la);
		jp_mutex_lock(&lb);
		jp_mutex_unlock(&lb);
		jp_rwlock_unlock(&la);
		jp_rwlock_wrlock(&la);
		jp_mutex_lock(&lb);
		jp_mutex_unlock(&lb);
		jp_rwlock_unlock(&la);
	}
}

static void child_recursive_read(void *arg)
{
	(void)arg;
	jp__sync_force_lockdep(true);
	jp_rwlock_rdlock(&la);
	jp_rwlock_rdlock(&la);
	jp_rwlock_unlock(&la);
	jp_rwlock_unlock(&la);
}

static void test_lockdep(void)
{
	struct jp_child_result r;

	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_inversion, NULL, &r), 0);
	/* ThreadSanitizer sees the rwlock too, reports the inversion itself
	 * and exits with 66; lockdep's report is still checked. */
	CU_ASSERT(r.exited && (r.status == 0 || (jp_test_tsan() && r.status == 66)));
	CU_ASSERT_EQUAL(count(r.err, "jpsync: lockdep: lock order inversion between rwlock"), 1);
	CU_ASSERT_EQUAL(count(r.err, " (read)"), 1);
	CU_ASSERT_EQUAL(count(r.err, " (write)"), 1);
	CU_ASSERT(strstr(r.err, "can deadlock") != NULL);
	/* What the child printed, when lockdep's report is not there once
	 * (ThreadSanitizer's own "lock-order-inversion" may be there too). */
	if (count(r.err, "jpsync: lockdep: lock order inversion between") != 1)
		printf("\n%.2000s\n", r.err);

	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_consistent, NULL, &r), 0);
	CU_ASSERT(r.exited && r.status == 0);
	CU_ASSERT_STRING_EQUAL(r.err, "");

	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_recursive_read, NULL, &r), 0);
	CU_ASSERT(r.exited && r.status == 0);
	CU_ASSERT_EQUAL(count(r.err, "self-deadlock once a writer waits"), 1);
}

static void test_thread_failures(void)
{
	CU_ASSERT_EQUAL(atomic_load(&thread_failures), 0);
}

int main(void)
{
	CU_TestInfo tests[] = {
		{ "layout, static initialiser, init", test_layout },
		{ "exclusion exact at 1, 2, 4, 8, 17 threads, all calls mixed", test_exclusion },
		{ "readers share; try calls return EBUSY", test_try },
		{ "timed calls: deadlines, EINVAL, give up cleanly", test_timed },
		{ "sleeping readers and writers are woken", test_sleepers_woken },
		{ "a writer is not starved by streaming readers", test_writer_not_starved },
		{ "a reader is not starved by streaming writers", test_reader_not_starved },
		{ "a writer waits about one read phase", test_phase_bounded },
		{ "the reader limit is EAGAIN", test_reader_limit },
		{ "lockdep: read-write inversion, recursion", test_lockdep },
		{ "no thread saw a call fail", test_thread_failures },
		CU_TEST_INFO_NULL,
	};
	CU_SuiteInfo suites[] = {
		{ "jp_rwlock", NULL, NULL, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};

	if (jp_test_on_valgrind())
		jp_test_unregister(tests, test_reader_limit,
				   "a million lock calls take minutes under valgrind");
	else if (jp_test_sanitized())
		jp_test_unregister(tests, test_reader_limit,
				   "ThreadSanitizer tracks every lock a thread holds");
	return jp_test_run(suites);
}
