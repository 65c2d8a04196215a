/*
 * test-queue-threads.c - jp_spsc, jp_mpsc and jp_mpmc under many threads:
 * every element arrives exactly once with producers and consumers racing
 * (blocking, try, bulk and in-place slot calls), and close wakes every
 * blocked caller and loses nothing.  What one thread sees: test-queue.c.
 */
#include <jpsync/hammer.h>
#include <jpsync/queue.h>

#include "queue-kinds.h"
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define JP_TEST_NOINLINE __attribute__((noinline))

/* ---- every element exactly once, under contention ---------------------- */

struct stress {
	const struct qops *o;
	void *q;
	unsigned producers, consumers;
	uint64_t per_producer;
	int mode;			/* 0 blocking, 1 try + yield, 2 bulk,
				 * 3 in-place slots blocking, 4 slots try + yield */
	_Atomic unsigned producers_left;
	_Atomic uint64_t *seen;		/* producers * per_producer counters */
	_Atomic int bad;		/* out of order or out of range */
	_Atomic uint64_t popped;
};

static void stress_body(void *ctx, unsigned thread, uint64_t iter)
{
	struct stress *s = ctx;
	(void)iter;

	if (thread < s->producers) {
		uint64_t base = (uint64_t)thread << 32;

		for (uint64_t i = 0; i < s->per_producer;) {
			uint64_t v[8];
			size_t n = 0, k;

			if (s->mode == 2) {
				while (n < 8 && i + n < s->per_producer) {
					v[n] = base | (i + n);
					n++;
				}
				k = s->o->push_bulk(s->q, v, n);
				if (k == 0) {
					if (errno != EAGAIN)	/* open until every producer is done */
						atomic_store(&s->bad, 1);
					if (atomic_load(&s->bad))
						break;	/* the consumers may have left */
					sched_yield();
				}
				i += k;
				continue;
			}
			v[0] = base | i;
			if (s->mode >= 3) {
				jp_queue_slot_t sl;
				int r = s->mode == 3 ? s->o->push_start(s->q, &sl, NULL)
						     : s->o->try_push_start(s->q, &sl);

				if (r == EAGAIN && s->mode == 4) {
					sched_yield();
					continue;
				}
				if (r != 0) {
					atomic_store(&s->bad, 1);
				} else {
					memcpy(sl.elem, v, sizeof v[0]);
					s->o->push_finish(s->q, &sl);
				}
			} else if (s->mode == 1) {
				int r = s->o->try_push(s->q, v);

				if (r == EAGAIN) {
					sched_yield();
					continue;
				}
				if (r != 0)
					atomic_store(&s->bad, 1);
			} else if (s->o->push(s->q, v, NULL) != 0) {
				atomic_store(&s->bad, 1);
			}
			i++;
		}
		if (atomic_fetch_sub(&s->producers_left, 1) == 1)
			s->o->close(s->q);
		return;
	}
	/* A consumer: the last value seen from each producer, to check order. */
	uint64_t *last = calloc(s->producers, sizeof *last);
	uint64_t v[8];

	for (;;) {
		size_t n = 1;
		int r;

		if (s->mode == 2) {
			n = s->o->pop_bulk(s->q, v, 8);
			if (n == 0) {
				if (errno == EPIPE)
					break;
				if (errno != EAGAIN) {
					atomic_store(&s->bad, 1);
					break;
				}
				/* Mixed with the single-element calls. */
				r = s->o->try_pop(s->q, v);
				if (r == EPIPE)
					break;
				if (r == EAGAIN) {
					sched_yield();
					continue;
				}
				n = 1;
			}
		} else if (s->mode >= 3) {
			jp_queue_slot_t sl;

			r = s->mode == 3 ? s->o->pop_start(s->q, &sl, NULL)
					 : s->o->try_pop_start(s->q, &sl);
			if (r == EAGAIN && s->mode == 4) {
				sched_yield();
				continue;
			}
			if (r == EPIPE)
				break;
			if (r != 0) {
				atomic_store(&s->bad, 1);
				break;
			}
			memcpy(v, sl.elem, sizeof v[0]);
			s->o->pop_finish(s->q, &sl);
		} else if (s->mode == 1) {
			r = s->o->try_pop(s->q, v);
			if (r == EAGAIN) {
				sched_yield();
				continue;
			}
			if (r == EPIPE)
				break;
		} else {
			r = s->o->pop(s->q, v, NULL);
			if (r == EPIPE)
				break;
			if (r != 0) {
				atomic_store(&s->bad, 1);
				break;
			}
		}
		for (size_t j = 0; j < n; j++) {
			uint64_t p = v[j] >> 32, i = v[j] & 0xffffffffu;

			if (p >= s->producers || i >= s->per_producer) {
				atomic_store(&s->bad, 1);
				continue;
			}
			/* FIFO per producer, as seen by one consumer. */
			if (last[p] > i)	/* last[p] is the previous index + 1 */
				atomic_store(&s->bad, 2);
			last[p] = i + 1;
			atomic_fetch_add(&s->seen[p * s->per_producer + i], 1);
			atomic_fetch_add(&s->popped, 1);
		}
	}
	free(last);
}

static void run_stress(const struct qops *o, unsigned prod, unsigned cons,
		       size_t capacity, uint64_t per, int mode)
{
	struct stress s;
	uint64_t wrong = 0;

	memset(&s, 0, sizeof s);
	s.o = o;
	s.q = o->create(capacity, sizeof(uint64_t));
	s.producers = prod;
	s.consumers = cons;
	s.per_producer = per;
	s.mode = mode;
	atomic_init(&s.producers_left, prod);
	s.seen = calloc(prod * per, sizeof *s.seen);
	CU_ASSERT_FATAL(s.q != NULL && s.seen != NULL);
	CU_ASSERT_EQUAL(jp_hammer(prod + cons, 1, stress_body, &s), 0);
	for (uint64_t i = 0; i < prod * per; i++)
		wrong += atomic_load(&s.seen[i]) != 1;
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT_EQUAL(atomic_load(&s.bad), 0);
	CU_ASSERT_EQUAL(atomic_load(&s.popped), prod * per);
	CU_ASSERT_EQUAL(o->size(s.q), 0);
	o->destroy(s.q);
	free(s.seen);
}

static void stress_kind(const struct qops *o, int mode)
{
	unsigned prods = o->multi_prod ? 4 : 1, conss = o->multi_cons ? 3 : 1;
	uint64_t per = jp_test_scaled(mode == 0 || mode == 3 ? 4000 : 20000, 50);

	/* Under valgrind threads run one at a time and every yield is a
	 * scheduling round: a few hundred elements exercise every path. */
	if (jp_test_on_valgrind() && per > 200)
		per = 200;
	static const size_t caps[] = { 1, 2, 64 };

	for (size_t c = 0; c < 3; c++)
		run_stress(o, prods, conss, caps[c], per / (c < 2 ? 2 : 1), mode);
}

static void test_exactly_once_blocking(void)
{
	for (size_t k = 0; k < NKINDS; k++)
		stress_kind(&kinds[k], 0);
}

static void test_exactly_once_try(void)
{
	for (size_t k = 0; k < NKINDS; k++)
		stress_kind(&kinds[k], 1);
}

static void test_exactly_once_slots(void)
{
	for (size_t k = 0; k < NKINDS; k++) {
		stress_kind(&kinds[k], 3);
		stress_kind(&kinds[k], 4);
	}
}

static void test_exactly_once_bulk(void)
{
	for (size_t k = 0; k < NKINDS; k++)
		stress_kind(&kinds[k], 2);
}

/* ---- close wakes every blocked caller, nothing lost ---------------------- */

/*
 * pthread_create from a frame 4 KiB deeper than the stress cases' jp_hammer
 * frame: drd remembers the happens-before annotation jp_hammer puts on its
 * (stack) start word, and reports "not a mutex" when its own pthread_create
 * wrapper later places a mutex at that same stack address.
 */
static JP_TEST_NOINLINE int spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
	volatile char pad[4096];
	int r;

	pad[0] = 0;
	r = pthread_create(t, NULL, fn, arg);
	pad[1] = pad[0];	/* keeps the frame (no tail call) */
	return r;
}

struct closer {
	const struct qops *o;
	void *q;
	_Atomic int started;
	_Atomic uint64_t pushed, popped;
	_Atomic int bad;
};

static void *blocked_pusher(void *arg)
{
	struct closer *c = arg;
	uint64_t v = 1;

	atomic_fetch_add(&c->started, 1);
	for (;;) {
		int r = c->o->push(c->q, &v, NULL);

		if (r == EPIPE)
			break;
		if (r != 0)
			atomic_store(&c->bad, 1);
		else
			atomic_fetch_add(&c->pushed, 1);
	}
	return NULL;
}

static void *blocked_popper(void *arg)
{
	struct closer *c = arg;
	uint64_t v;

	atomic_fetch_add(&c->started, 1);
	for (;;) {
		int r = c->o->pop(c->q, &v, NULL);

		if (r == EPIPE)
			break;
		if (r != 0)
			atomic_store(&c->bad, 1);
		else
			atomic_fetch_add(&c->popped, 1);
	}
	return NULL;
}

/* The bulk calls, racing a close: they stop on EPIPE, and only on it. */
static void bulk_move(struct closer *c, bool push)
{
	uint64_t v[3] = { 1, 1, 1 };

	atomic_fetch_add(&c->started, 1);
	for (;;) {
		size_t k = push ? c->o->push_bulk(c->q, v, 3) : c->o->pop_bulk(c->q, v, 3);

		if (k == 0 && errno == EPIPE)
			break;
		if (k == 0 && errno != EAGAIN) {
			atomic_store(&c->bad, 1);
			break;
		}
		if (k == 0)
			sched_yield();
		atomic_fetch_add(push ? &c->pushed : &c->popped, k);
	}
}

static void *bulk_pusher(void *arg) { bulk_move(arg, true); return NULL; }
static void *bulk_popper(void *arg) { bulk_move(arg, false); return NULL; }

static void close_case(const struct qops *o, int producers_side)
{
	struct closer c;
	pthread_t t[4];
	unsigned n = producers_side ? (o->multi_prod ? 4 : 1) : (o->multi_cons ? 4 : 1);
	uint64_t v, drained = 0;

	memset(&c, 0, sizeof c);
	c.o = o;
	c.q = o->create(2, sizeof(uint64_t));
	CU_ASSERT_FATAL(c.q != NULL);
	for (unsigned i = 0; i < n; i++)
		CU_ASSERT_FATAL(spawn(&t[i],
				producers_side ? blocked_pusher : blocked_popper, &c) == 0);
	while (atomic_load(&c.started) < (int)n)
		sched_yield();
	usleep(30000);		/* let them fill the queue (or find it empty) and park */
	o->close(c.q);
	for (unsigned i = 0; i < n; i++)
		pthread_join(t[i], NULL);	/* a lost wake-up hangs here */
	while (o->try_pop(c.q, &v) == 0)
		drained++;
	CU_ASSERT_EQUAL(o->try_pop(c.q, &v), EPIPE);
	CU_ASSERT_EQUAL(atomic_load(&c.bad), 0);
	if (producers_side)
		CU_ASSERT_EQUAL(atomic_load(&c.pushed), drained);	/* nothing lost */
	o->destroy(c.q);
}

static void test_close_wakes_blocked(void)
{
	for (size_t k = 0; k < NKINDS; k++) {
		close_case(&kinds[k], 1);
		close_case(&kinds[k], 0);
	}
}

/*
 * Close while elements flow: every push that returned 0 is popped.  Odd
 * rounds use the bulk calls, which must see the close as EPIPE.
 */
static void close_racing(const struct qops *o, int bulk)
{
	struct closer c;
	pthread_t t[8];
	unsigned np = o->multi_prod ? 3 : 1, nc = o->multi_cons ? 3 : 1;

	memset(&c, 0, sizeof c);
	c.o = o;
	c.q = o->create(4, sizeof(uint64_t));
	CU_ASSERT_FATAL(c.q != NULL);
	for (unsigned i = 0; i < np; i++)
		CU_ASSERT_FATAL(spawn(&t[i], bulk ? bulk_pusher : blocked_pusher, &c) == 0);
	for (unsigned i = 0; i < nc; i++)
		CU_ASSERT_FATAL(spawn(&t[np + i], bulk ? bulk_popper : blocked_popper, &c) == 0);
	while (atomic_load(&c.started) < (int)(np + nc))
		sched_yield();
	usleep(5000);
	o->close(c.q);
	for (unsigned i = 0; i < np + nc; i++)
		pthread_join(t[i], NULL);
	CU_ASSERT_EQUAL(atomic_load(&c.bad), 0);
	CU_ASSERT_EQUAL(atomic_load(&c.pushed), atomic_load(&c.popped));
	if (atomic_load(&c.pushed) != atomic_load(&c.popped))
		fprintf(stderr, "%s: pushed %llu, popped %llu\n", o->name,
			(unsigned long long)atomic_load(&c.pushed),
			(unsigned long long)atomic_load(&c.popped));
	o->destroy(c.q);
}

static void test_close_while_flowing(void)
{
	unsigned rounds = jp_test_on_valgrind() ? 2 : (unsigned)jp_test_scaled(10, 2);

	for (size_t k = 0; k < NKINDS; k++)
		for (unsigned r = 0; r < rounds; r++)
			close_racing(&kinds[k], r & 1);
}

int main(void)
{
	CU_TestInfo tests[] = {
		{ "every element once, blocking, capacities 1 2 64", test_exactly_once_blocking },
		{ "every element once, try and yield", test_exactly_once_try },
		{ "every element once, bulk", test_exactly_once_bulk },
		{ "every element once, in-place slots, blocking and try", test_exactly_once_slots },
		{ "close wakes every blocked caller, nothing lost", test_close_wakes_blocked },
		{ "close while elements flow loses nothing", test_close_while_flowing },
		CU_TEST_INFO_NULL,
	};
	CU_SuiteInfo suites[] = {
		{ "queue-threads", NULL, NULL, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};
	return jp_test_run(suites);
}
