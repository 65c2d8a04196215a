/* test-cond.c - jp_cond with jp_mutex: no lost wakeups, timeouts (white-box: counts wakes). */
#include <jpsync/hammer.h>
#include <jpsync/mutex.h>

#include "sync/sync.h"
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* ---- producer/consumer through a small ring: every item arrives -------- */

#define RING 8

struct pc {
	jp_mutex_t m;
	jp_cond_t not_empty, not_full;
	uint64_t ring[RING];
	unsigned head, tail, count;
	unsigned producers, consumers;
	uint64_t per_producer;
	unsigned producers_done;
	uint64_t sum, items;		/* what the consumers took */
};

static void pc_body(void *ctx, unsigned thread, uint64_t iter)
{
	struct pc *p = ctx;

	(void)iter;
	if (thread < p->producers) {
		for (uint64_t i = 1; i <= p->per_producer; i++) {
			jp_mutex_lock(&p->m);
			while (p->count == RING)
				jp_cond_wait(&p->not_full, &p->m);
			p->ring[p->head] = i;
			p->head = (p->head + 1) % RING;
			p->count++;
			jp_cond_signal(&p->not_empty);
			jp_mutex_unlock(&p->m);
		}
		jp_mutex_lock(&p->m);
		p->producers_done++;
		jp_cond_broadcast(&p->not_empty);	/* consumers may now finish */
		jp_mutex_unlock(&p->m);
	} else {
		jp_mutex_lock(&p->m);
		for (;;) {
			while (p->count == 0 && p->producers_done < p->producers)
				jp_cond_wait(&p->not_empty, &p->m);
			if (p->count == 0)
				break;
			p->sum += p->ring[p->tail];
			p->items++;
			p->tail = (p->tail + 1) % RING;
			p->count--;
			/* signal with the mutex released half of the time */
			if (p->items & 1) {
				jp_cond_signal(&p->not_full);
			} else {
				jp_mutex_unlock(&p->m);
				jp_cond_signal(&p->not_full);
				jp_mutex_lock(&p->m);
			}
		}
		jp_mutex_unlock(&p->m);
	}
}

static void run_pc(unsigned producers, unsigned consumers)
{
	struct pc *p = calloc(1, sizeof *p);
	uint64_t n = jp_test_scaled(20000, 100);

	CU_ASSERT_FATAL(p != NULL);
	jp_mutex_init(&p->m);
	jp_cond_init(&p->not_empty);
	jp_cond_init(&p->not_full);
	p->producers = producers;
	p->consumers = consumers;
	p->per_producer = n;
	CU_ASSERT_EQUAL_FATAL(jp_hammer(producers + consumers, 1, pc_body, p), 0);
	CU_ASSERT_EQUAL(p->items, producers * n);
	CU_ASSERT_EQUAL(p->sum, producers * (n * (n + 1) / 2));
	CU_ASSERT_EQUAL(p->count, 0);
	jp_cond_destroy(&p->not_empty);
	jp_cond_destroy(&p->not_full);
	jp_mutex_destroy(&p->m);
	free(p);
}

static void test_producer_consumer(void)
{
	run_pc(1, 1);
	run_pc(3, 2);
	run_pc(2, 5);
}

/* ---- the lost wakeup of a wait without a predicate, avoided ------------ */

struct flag {
	jp_mutex_t m;
	jp_cond_t c;
	int ready;
	_Atomic int waiting;
	_Atomic int done;
};

static void *late_waiter(void *arg)
{
	struct flag *f = arg;

	usleep(20000);			/* arrive after the signal */
	jp_mutex_lock(&f->m);
	while (!f->ready)		/* the predicate loop: never sleeps here */
		jp_cond_wait(&f->c, &f->m);
	jp_mutex_unlock(&f->m);
	atomic_store(&f->done, 1);
	return NULL;
}

static void test_signal_before_wait(void)
{
	struct flag f = { .m = JP_MUTEX_INIT, .c = JP_COND_INIT };
	pthread_t t;

	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, late_waiter, &f), 0);
	jp_mutex_lock(&f.m);
	f.ready = 1;
	jp_mutex_unlock(&f.m);
	jp_cond_signal(&f.c);		/* nobody is listening yet */
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(atomic_load(&f.done), 1);
}

/* ---- broadcast wakes every waiter -------------------------------------- */

static void *flag_waiter(void *arg)
{
	struct flag *f = arg;

	jp_mutex_lock(&f->m);
	atomic_fetch_add(&f->waiting, 1);
	while (!f->ready)
		jp_cond_wait(&f->c, &f->m);
	jp_mutex_unlock(&f->m);
	atomic_fetch_add(&f->done, 1);
	return NULL;
}

static void test_broadcast(void)
{
	struct flag f = { .m = JP_MUTEX_INIT, .c = JP_COND_INIT };
	pthread_t t[6];

	for (int i = 0; i < 6; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, flag_waiter, &f), 0);
	while (atomic_load(&f.waiting) != 6)
		usleep(1000);
	jp_mutex_lock(&f.m);		/* every waiter is now inside jp_cond_wait */
	f.ready = 1;
	jp_cond_broadcast(&f.c);
	jp_mutex_unlock(&f.m);
	for (int i = 0; i < 6; i++)
		pthread_join(t[i], NULL);
	CU_ASSERT_EQUAL(atomic_load(&f.done), 6);
}

/* ---- timedwait ------------------------------------------------------- */

static void test_timedwait_expires(void)
{
	jp_mutex_t m = JP_MUTEX_INIT;
	jp_cond_t c = JP_COND_INIT;
	struct timespec d, t0, t1;
	int r;

	jp_mutex_lock(&m);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	jp_test_deadline_ms(&d, 40);
	do
		r = jp_cond_timedwait(&c, &m, &d);
	while (r == 0);			/* spurious wakeups are allowed */
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CU_ASSERT_EQUAL(r, ETIMEDOUT);
	CU_ASSERT((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) >= 39000000L);
	/* The mutex is held again on return: trylock from here fails. */
	CU_ASSERT_EQUAL(jp_mutex_trylock(&m), EBUSY);
	d.tv_nsec = 2000000000L;
	CU_ASSERT_EQUAL(jp_cond_timedwait(&c, &m, &d), EINVAL);
	CU_ASSERT_EQUAL(jp_mutex_trylock(&m), EBUSY);	/* still held */
	jp_mutex_unlock(&m);
}

struct timed {
	jp_mutex_t m;
	jp_cond_t c;
	int ready;
	int result;
};

static void *timed_waiter(void *arg)
{
	struct timed *t = arg;
	struct timespec d;

	jp_test_deadline_ms(&d, 10000);
	jp_mutex_lock(&t->m);
	t->result = 0;
	while (!t->ready && t->result == 0)
		t->result = jp_cond_timedwait(&t->c, &t->m, &d);
	jp_mutex_unlock(&t->m);
	return NULL;
}

static void test_timedwait_signalled(void)
{
	struct timed t = { .m = JP_MUTEX_INIT, .c = JP_COND_INIT };
	pthread_t th;

	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, timed_waiter, &t), 0);
	usleep(20000);
	jp_mutex_lock(&t.m);
	t.ready = 1;
	jp_cond_signal(&t.c);
	jp_mutex_unlock(&t.m);
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(t.result, 0);
	CU_ASSERT_EQUAL(t.ready, 1);
}

/* ---- ping-pong: strict alternation through one condition variable ----- */

struct pingpong {
	jp_mutex_t m;
	jp_cond_t c;
	unsigned turn;
	unsigned threads;
	uint64_t rounds;
	uint64_t moves;
};

static void pp_body(void *ctx, unsigned thread, uint64_t iter)
{
	struct pingpong *p = ctx;

	(void)iter;
	jp_mutex_lock(&p->m);
	while (p->turn != thread)
		jp_cond_wait(&p->c, &p->m);
	p->moves++;
	p->turn = (p->turn + 1) % p->threads;
	jp_cond_broadcast(&p->c);
	jp_mutex_unlock(&p->m);
}

static void test_turns(void)
{
	struct pingpong p = { .m = JP_MUTEX_INIT, .c = JP_COND_INIT, .threads = 4 };
	uint64_t iters = jp_test_scaled(3000, 50);

	CU_ASSERT_EQUAL_FATAL(jp_hammer(4, iters, pp_body, &p), 0);
	CU_ASSERT_EQUAL(p.moves, 4 * iters);
	CU_ASSERT_EQUAL(p.turn, 0);
}

/* ---- nobody waits: no system call -------------------------------------- */

static void test_no_waiters_no_syscall(void)
{
	jp_cond_t c[64];
	uint64_t before = jp__wait_wake_calls();

	for (int i = 0; i < 64; i++) {
		jp_cond_init(&c[i]);
		jp_cond_signal(&c[i]);
		jp_cond_broadcast(&c[i]);
	}
	CU_ASSERT_EQUAL(jp__wait_wake_calls(), before);
	/* ... but the counter moved, so a waiter that read it before is safe. */
	CU_ASSERT_EQUAL(c[0].seq, 2);
}

int main(void)
{
	CU_TestInfo tests[] = {
		{ "producers and consumers lose no item", test_producer_consumer },
		{ "signal before the wait: the predicate loop returns", test_signal_before_wait },
		{ "broadcast wakes every waiter", test_broadcast },
		{ "timedwait returns ETIMEDOUT, mutex held", test_timedwait_expires },
		{ "timedwait returns 0 when signalled", test_timedwait_signalled },
		{ "threads take turns through one condvar", test_turns },
		{ "signal and broadcast with no waiter make no system call", test_no_waiters_no_syscall },
		CU_TEST_INFO_NULL,
	};
	CU_SuiteInfo suites[] = {
		{ "jp_cond", NULL, NULL, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};

	return jp_test_run(suites);
}
