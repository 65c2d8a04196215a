/*
 * test-queue-park.c - white-box: a caller of jp_mpsc or jp_mpmc blocked
 * behind a slot another thread has claimed and not finished sleeps on the
 * queue's channel (park.h's count of sleeps, jp__park_sleeps, moves) and is
 * woken by the slot's finish; and a jp_hammer run of that wake path, which
 * counts the wake-ups that did not come (the lost-wake-up window of
 * lib/queue/mpring.h).  Bounded in operations: every wait below is a
 * bounded number of sched_yield() calls, never a clock.
 */
#include "base/park.h"
#include "queue/mpring.h"

#include <jpsync/hammer.h>
#include <jpsync/queue.h>

#include "queue-kinds.h"
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Yields the test waits at most for another thread to get somewhere. */
#define PATIENCE 2000000u

static const struct qops *kind(const char *name)
{
	for (size_t k = 0; k < NKINDS; k++)
		if (strcmp(kinds[k].name, name) == 0)
			return &kinds[k];
	return NULL;
}

/* jp_mpsc and jp_mpmc are a struct jp__mpring and nothing else (mpring.h). */
static struct jp__mpring *ring(void *q)
{
	return q;
}

static void far_deadline(struct timespec *dl)
{
	clock_gettime(CLOCK_MONOTONIC, dl);
	dl->tv_sec += 3600;	/* never reached: only the deadline path is taken */
}

/* ---- one blocked caller sleeps and is woken -------------------------------- */

struct blocked {
	const struct qops *o;
	void *q;
	int push;			/* the blocked call: push (else pop) */
	int timed;			/* with a deadline */
	uint64_t v;
	int r;
	_Atomic int done;
};

static void *blocked_call(void *arg)
{
	struct blocked *b = arg;
	struct timespec dl;

	far_deadline(&dl);
	if (b->push) {
		b->v = 7;
		b->r = b->o->push(b->q, &b->v, b->timed ? &dl : NULL);
	} else {
		b->r = b->o->pop(b->q, &b->v, b->timed ? &dl : NULL);
	}
	atomic_store(&b->done, 1);
	return NULL;
}

/* Yield until *flag or the counter moves past from; whether it did. */
static int wait_for(_Atomic int *flag, unsigned long from)
{
	for (unsigned i = 0; i < PATIENCE; i++) {
		if (flag != NULL ? atomic_load(flag) != 0
				 : atomic_load_explicit(&jp__park_sleeps, memory_order_relaxed) > from)
			return 1;
		sched_yield();
	}
	return 0;
}

/*
 * push 0: a consumer blocks in pop behind a push this thread started; push
 * 1: a producer blocks in push (capacity 1, full) behind a pop this thread
 * started.  The blocked caller must sleep (the count of sleeps moves while
 * it is blocked) and return once the slot is finished.
 */
static void blocked_sleeps(const char *name, int push, int timed)
{
	struct blocked b;
	jp_queue_slot_t sl;
	pthread_t t;
	unsigned long before;
	int slept;
	uint64_t one = 1;

	memset(&b, 0, sizeof b);
	b.o = kind(name);
	b.push = push;
	b.timed = timed;
	b.q = b.o->create(1, sizeof(uint64_t));
	CU_ASSERT_FATAL(b.q != NULL);
	if (push) {
		CU_ASSERT_EQUAL_FATAL(b.o->try_push(b.q, &one), 0);
		CU_ASSERT_EQUAL_FATAL(b.o->try_pop_start(b.q, &sl), 0);
	} else {
		CU_ASSERT_EQUAL_FATAL(b.o->try_push_start(b.q, &sl), 0);
	}
	before = atomic_load_explicit(&jp__park_sleeps, memory_order_relaxed);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, blocked_call, &b), 0);
	slept = wait_for(NULL, before);
	if (!slept)
		printf("\n  %s_%s%s behind a started slot never slept\n", name,
		       push ? "push" : "pop", timed ? " (deadline)" : "");
	CU_ASSERT(slept);
	CU_ASSERT_EQUAL(atomic_load(&b.done), 0);	/* it waits for the slot */
	/* Finish the slot: the blocked call must be woken. */
	if (push) {
		CU_ASSERT_EQUAL(*(uint64_t *)sl.elem, 1);
		b.o->pop_finish(b.q, &sl);
	} else {
		*(uint64_t *)sl.elem = 42;
		b.o->push_finish(b.q, &sl);
	}
	if (!wait_for(&b.done, 0)) {
		/* Lost: wake it the hard way so that the test ends. */
		printf("\n  %s_%s%s not woken by the slot's finish\n", name,
		       push ? "push" : "pop", timed ? " (deadline)" : "");
		CU_FAIL("blocked caller not woken");
		b.o->close(b.q);
	}
	CU_ASSERT_EQUAL(pthread_join(t, NULL), 0);
	CU_ASSERT_EQUAL(b.r, 0);
	if (push) {
		CU_ASSERT_EQUAL(b.o->size(b.q), 1);
		CU_ASSERT_EQUAL(b.o->try_pop(b.q, &one), 0);
		CU_ASSERT_EQUAL(one, 7);
	} else {
		CU_ASSERT_EQUAL(b.v, 42);
	}
	b.o->destroy(b.q);
}

static void test_pop_behind_started_push(void)
{
	for (int timed = 0; timed < 2; timed++) {
		blocked_sleeps("mpsc", 0, timed);
		blocked_sleeps("mpmc", 0, timed);
	}
}

static void test_push_behind_started_pop(void)
{
	for (int timed = 0; timed < 2; timed++) {
		blocked_sleeps("mpmc", 1, timed);
		blocked_sleeps("mpsc", 1, timed);
	}
}

/* ---- the wake path, hammered ------------------------------------------------ */

/*
 * Pairs of threads, each pair on its own queue of capacity 1: the holder
 * starts a slot, holds it for a varying number of spins (so that the
 * waiter reaches every point of its spin, registration, re-check and
 * sleep), finishes it, and waits (a bounded number of yields) for the
 * waiter's acknowledgement.  Pair kinds: a consumer waiting behind a
 * started push (mpsc, mpmc) and a producer waiting behind a started pop
 * (mpmc).  A wake-up that did not come is counted and the waiter rescued
 * by a bump of the channel (as a close would), so that a broken ordering
 * shows as a count, not a hang.
 */
#define PAIRS 3
#define HOLD_MAX 4096

struct pair {
	const struct qops *o;
	void *q;
	int push;			/* the waiter pushes (else pops) */
	_Atomic uint64_t ack;
	_Atomic unsigned lost;
	_Atomic int bad;
};

static struct pair pairs[PAIRS];

static void holder(struct pair *p, uint64_t i)
{
	jp_queue_slot_t sl;
	struct jp__park_chan *c = p->push ? &ring(p->q)->not_full : &ring(p->q)->not_empty;

	if ((p->push ? p->o->pop_start(p->q, &sl, NULL) : p->o->push_start(p->q, &sl, NULL)) != 0) {
		atomic_store(&p->bad, 1);
		return;
	}
	/* Spin (the waiter runs on the other CPU): 0 to a few tens of
	 * microseconds, in small steps, around the time the waiter takes to
	 * spin, register and re-check. */
	for (uint64_t k = (i * 1103515245u) % HOLD_MAX; k > 0; k--)
		jp_cpu_relax();
	if (p->push) {
		if (*(uint64_t *)sl.elem != i)	/* the waiter's push of i - 1 ... */
			atomic_store(&p->bad, 2);
		p->o->pop_finish(p->q, &sl);
	} else {
		*(uint64_t *)sl.elem = i;
		p->o->push_finish(p->q, &sl);
	}
	for (unsigned k = 0; atomic_load(&p->ack) <= i; k++) {
		if (k == PATIENCE / 10) {
			atomic_fetch_add(&p->lost, 1);
			jp__park_chan_bump(c);	/* rescue */
		}
		sched_yield();
	}
}

static void waiter(struct pair *p, uint64_t i)
{
	struct timespec dl;
	uint64_t v = i + 1;
	int r;

	far_deadline(&dl);
	if (p->push)
		r = p->o->push(p->q, &v, (i & 1) ? &dl : NULL);
	else
		r = p->o->pop(p->q, &v, (i & 1) ? &dl : NULL);
	if (r != 0 || (!p->push && v != i))
		atomic_store(&p->bad, 3);
	atomic_store(&p->ack, i + 1);
}

static void hammer_body(void *ctx, unsigned thread, uint64_t iter)
{
	struct pair *p = ctx;

	if (atomic_load(&p->bad))
		return;
	if (thread & 1)
		waiter(p, iter);
	else
		holder(p, iter);
}

static void test_hammer_wake(void)
{
	static const char *const names[PAIRS] = { "mpsc", "mpmc", "mpmc" };
	unsigned lost = 0;
	uint64_t iters = jp_test_scaled(8000, 100);

	/* Under valgrind threads run one at a time; under qemu slowly. */
	if (jp_test_on_valgrind() || getenv("JP_EMULATOR") != NULL)
		iters = 100;
	for (unsigned n = 0; n < PAIRS; n++) {
		struct pair *p = &pairs[n];
		uint64_t zero = 0;

		memset(p, 0, sizeof *p);
		p->o = kind(names[n]);
		p->push = n == 2;
		p->q = p->o->create(1, sizeof(uint64_t));
		CU_ASSERT_FATAL(p->q != NULL);
		if (p->push)	/* full: the holder's first pop takes 0 */
			CU_ASSERT_EQUAL_FATAL(p->o->try_push(p->q, &zero), 0);
	}
	/* One pair at a time: on a machine of 2 CPUs, the two really race. */
	for (unsigned n = 0; n < PAIRS; n++)
		CU_ASSERT_EQUAL(jp_hammer(2, iters, hammer_body, &pairs[n]), 0);
	for (unsigned n = 0; n < PAIRS; n++) {
		unsigned l = atomic_load(&pairs[n].lost);

		if (l != 0)
			printf("\n  %s %s: %u of %llu wake-ups lost\n", names[n],
			       pairs[n].push ? "push" : "pop", l, (unsigned long long)iters);
		lost += l;
		CU_ASSERT_EQUAL(atomic_load(&pairs[n].bad), 0);
		pairs[n].o->destroy(pairs[n].q);
	}
	CU_ASSERT_EQUAL(lost, 0);
}

int main(void)
{
	CU_TestInfo tests[] = {
		{ "a pop behind a started push sleeps and is woken", test_pop_behind_started_push },
		{ "a push behind a started pop sleeps and is woken", test_push_behind_started_pop },
		{ "hammer: no wake-up behind a started slot is lost", test_hammer_wake },
		CU_TEST_INFO_NULL,
	};
	CU_SuiteInfo suites[] = {
		{ "queue-park", NULL, NULL, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};
	return jp_test_run(suites);
}
