/* test-queue.c - jp_spsc, jp_mpsc and jp_mpmc. */
#include <jpsync/hammer.h>
#include <jpsync/queue.h>

#include "queue-kinds.h"
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define JP_TEST_NOINLINE __attribute__((noinline))

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- single-threaded behaviour ---------------------------------------- */

static void test_fifo_and_capacity(void)
{
	for (size_t k = 0; k < NKINDS; k++) {
		const struct qops *o = &kinds[k];
		static const size_t sizes[] = { 1, 3, 8, 24, 100 };

		for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
			size_t es = sizes[s];
			void *q = o->create(5, es);
			unsigned char in[100], out[100];

			CU_ASSERT_FATAL(q != NULL);
			CU_ASSERT_EQUAL(o->capacity(q), 8);
			/* Several laps, so positions wrap around the ring. */
			for (int lap = 0; lap < 3; lap++) {
				for (int i = 0; i < 8; i++) {
					memset(in, lap * 16 + i, es);
					CU_ASSERT_EQUAL(o->try_push(q, in), 0);
				}
				CU_ASSERT_EQUAL(o->try_push(q, in), EAGAIN);
				CU_ASSERT_EQUAL(o->size(q), 8);
				for (int i = 0; i < 8; i++) {
					memset(in, lap * 16 + i, es);
					memset(out, 0xee, sizeof out);
					CU_ASSERT_EQUAL(o->try_pop(q, out), 0);
					CU_ASSERT(memcmp(in, out, es) == 0);
					CU_ASSERT_EQUAL(out[es < 100 ? es : 99], es < 100 ? 0xee : out[99]);
				}
				CU_ASSERT_EQUAL(o->try_pop(q, out), EAGAIN);
				CU_ASSERT_EQUAL(o->size(q), 0);
			}
			o->destroy(q);
		}
		/* Capacity 1 and 2 are kept as they are. */
		void *q1 = o->create(1, sizeof(void *)), *q2 = o->create(2, sizeof(void *));
		CU_ASSERT_FATAL(q1 != NULL && q2 != NULL);
		CU_ASSERT_EQUAL(o->capacity(q1), 1);
		CU_ASSERT_EQUAL(o->capacity(q2), 2);
		void *p = &p;
		CU_ASSERT_EQUAL(o->try_push(q1, &p), 0);
		CU_ASSERT_EQUAL(o->try_push(q1, &p), EAGAIN);
		o->destroy(q1);
		o->destroy(q2);
	}
}

static void test_bad_arguments(void)
{
	for (size_t k = 0; k < NKINDS; k++) {
		const struct qops *o = &kinds[k];
		struct timespec bad = { 0, 1000000000L };
		long v = 1;
		void *q;

		errno = 0;
		CU_ASSERT_PTR_NULL(o->create(0, 8));
		CU_ASSERT_EQUAL(errno, EINVAL);
		errno = 0;
		CU_ASSERT_PTR_NULL(o->create(8, 0));
		CU_ASSERT_EQUAL(errno, EINVAL);
		errno = 0;
		CU_ASSERT_PTR_NULL(o->create(SIZE_MAX, 8));
		CU_ASSERT_EQUAL(errno, EINVAL);
		errno = 0;
		CU_ASSERT_PTR_NULL(o->create(8, SIZE_MAX));
		CU_ASSERT_EQUAL(errno, EINVAL);
		errno = 0;
		CU_ASSERT_PTR_NULL(o->create(JP_TEST_BIG(40), JP_TEST_BIG(40)));
		CU_ASSERT_EQUAL(errno, EINVAL);
		CU_ASSERT_EQUAL(o->try_push(NULL, &v), EINVAL);
		CU_ASSERT_EQUAL(o->try_pop(NULL, &v), EINVAL);
		CU_ASSERT_EQUAL(o->push(NULL, &v, NULL), EINVAL);
		CU_ASSERT_EQUAL(o->pop(NULL, &v, NULL), EINVAL);
		CU_ASSERT_EQUAL(o->push_bulk(NULL, &v, 1), 0);
		CU_ASSERT_EQUAL(o->pop_bulk(NULL, &v, 1), 0);
		CU_ASSERT_EQUAL(o->size(NULL), 0);
		CU_ASSERT_EQUAL(o->capacity(NULL), 0);
		o->close(NULL);
		o->destroy(NULL);
		q = o->create(1, sizeof v);
		CU_ASSERT_FATAL(q != NULL);
		CU_ASSERT_EQUAL(o->try_push(q, NULL), EINVAL);
		CU_ASSERT_EQUAL(o->pop(q, &v, &bad), EINVAL);		/* empty: waits */
		CU_ASSERT_EQUAL(o->push(q, &v, NULL), 0);
		CU_ASSERT_EQUAL(o->push(q, &v, &bad), EINVAL);		/* full: waits */
		o->destroy(q);						/* one left in it */
	}
}

/*
 * Huge capacities, in a child that SIGALRM kills after 10 s: 2^20 and 2^30
 * slots are created at once and cost no memory until used (or, where the
 * machine is smaller than the ring, fail with ENOMEM), and 2^40 is ENOMEM
 * at once: more than any machine's memory.  (Creation used to write every
 * slot's sequence number: 34 s and 16 GiB for 2^30, the OOM killer for
 * 2^40.)
 */
static void huge_child(void *arg)
{
	const struct qops *o = arg;
	static const unsigned shifts[] = { 20, 30, 40 };

	alarm(10);
	for (size_t i = 0; i < sizeof shifts / sizeof shifts[0]; i++) {
		long rss = jp_test_rss_kb(), v = 42;
		double t0 = now_s();
		void *q;

		errno = 0;
		q = o->create(JP_TEST_BIG(shifts[i]), sizeof(long));
		t0 = now_s() - t0;
		fprintf(stderr, "%s 2^%u: %s (errno %d), %.3f ms, RSS +%ld KiB\n", o->name,
			shifts[i], q ? "created" : "NULL", errno, t0 * 1e3, jp_test_rss_kb() - rss);
		if (t0 > 1.0 || jp_test_rss_kb() - rss > 64 * 1024)
			_exit(10 + (int)i);
		/* Where size_t has 32 bits, 2^30 slots of 8 bytes and more
		 * cannot be represented: EINVAL, as the page says. */
		if (q == NULL && errno != ENOMEM &&
		    !(errno == EINVAL && sizeof(size_t) < 8 && shifts[i] >= 30))
			_exit(20 + (int)i);
		if (shifts[i] == 40 && q != NULL)
			_exit(30);
		if (q != NULL) {
			for (int k = 0; k < 1000; k++)
				if (o->try_push(q, &v) != 0)
					_exit(40);
			for (int k = 0; k < 1000; k++)
				if (o->try_pop(q, &v) != 0 || v != 42)
					_exit(41);
			if (o->try_pop(q, &v) != EAGAIN)
				_exit(42);
			o->destroy(q);
		}
	}
	_exit(0);
}

static void test_huge_capacity(void)
{
	for (size_t k = 0; k < NKINDS; k++) {
		struct jp_child_result r;

		CU_ASSERT_EQUAL_FATAL(jp_test_child(huge_child, (void *)&kinds[k], &r), 0);
		printf("\n%s", r.err);
		if (!r.exited || r.status != 0)
			printf("  %s: %s %d\n", kinds[k].name, r.exited ? "exit" : "signal",
			       r.exited ? r.status : r.sig);
		CU_ASSERT(r.exited && r.status == 0);
	}
}

static void test_timeouts_expire(void)
{
	for (size_t k = 0; k < NKINDS; k++) {
		const struct qops *o = &kinds[k];
		void *q = o->create(2, sizeof(long));
		struct timespec dl;
		long v = 7;
		double t0;

		CU_ASSERT_FATAL(q != NULL);
		t0 = now_s();
		jp_test_deadline_ms(&dl, 50);
		CU_ASSERT_EQUAL(o->pop(q, &v, &dl), ETIMEDOUT);
		CU_ASSERT(now_s() - t0 >= 0.049);
		CU_ASSERT_EQUAL(o->push(q, &v, NULL), 0);
		CU_ASSERT_EQUAL(o->push(q, &v, NULL), 0);
		t0 = now_s();
		jp_test_deadline_ms(&dl, 50);
		CU_ASSERT_EQUAL(o->push(q, &v, &dl), ETIMEDOUT);
		CU_ASSERT(now_s() - t0 >= 0.049);
		/* A deadline in the past still takes what is there. */
		jp_test_deadline_ms(&dl, -10);
		CU_ASSERT_EQUAL(o->pop(q, &v, &dl), 0);
		CU_ASSERT_EQUAL(v, 7);
		o->destroy(q);
	}
}

static void test_bulk(void)
{
	for (size_t k = 0; k < NKINDS; k++) {
		const struct qops *o = &kinds[k];
		void *q = o->create(8, sizeof(int));
		int in[20], out[20];

		CU_ASSERT_FATAL(q != NULL);
		for (int i = 0; i < 20; i++)
			in[i] = i;
		CU_ASSERT_EQUAL(o->push_bulk(q, in, 5), 5);
		CU_ASSERT_EQUAL(o->pop_bulk(q, out, 3), 3);
		CU_ASSERT(out[0] == 0 && out[1] == 1 && out[2] == 2);
		/* 2 left: room for 6, and the copy wraps around the ring. */
		CU_ASSERT_EQUAL(o->push_bulk(q, in + 5, 10), 6);
		CU_ASSERT_EQUAL(o->push_bulk(q, in, 1), 0);
		CU_ASSERT_EQUAL(o->size(q), 8);
		CU_ASSERT_EQUAL(o->pop_bulk(q, out, 20), 8);
		for (int i = 0; i < 8; i++)
			CU_ASSERT_EQUAL(out[i], i + 3);
		CU_ASSERT_EQUAL(o->pop_bulk(q, out, 20), 0);
		CU_ASSERT_EQUAL(o->push_bulk(q, in, 0), 0);
		CU_ASSERT_EQUAL(o->push_bulk(q, in, 3), 3);
		o->close(q);
		CU_ASSERT_EQUAL(o->push_bulk(q, in, 3), 0);
		CU_ASSERT_EQUAL(o->try_push(q, in), EPIPE);
		CU_ASSERT_EQUAL(o->pop_bulk(q, out, 2), 2);
		CU_ASSERT_EQUAL(o->try_pop(q, out), 0);
		CU_ASSERT_EQUAL(out[0], 2);
		CU_ASSERT_EQUAL(o->try_pop(q, out), EPIPE);
		CU_ASSERT_EQUAL(o->pop(q, out, NULL), EPIPE);
		o->destroy(q);
	}
}

/*
 * A bulk call that moves nothing says why in errno, as the single-element
 * calls say it in their return value: EAGAIN full or empty, EPIPE closed
 * (pop: closed and drained), EINVAL for a NULL queue or array.  A call that
 * moves elements, or n == 0, leaves errno alone.
 */
#define BULK_ERRNO(call, want) do {					\
		errno = 12345;						\
		CU_ASSERT_EQUAL((call), 0);				\
		CU_ASSERT_EQUAL(errno, (want));				\
		if (errno != (want))					\
			fprintf(stderr, "%s: %s: errno %d, not %s\n",	\
				o->name, #call, errno, #want);		\
	} while (0)

static void test_bulk_says_why(void)
{
	for (size_t k = 0; k < NKINDS; k++) {
		const struct qops *o = &kinds[k];
		void *q = o->create(4, sizeof(int));
		int in[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, out[8];

		CU_ASSERT_FATAL(q != NULL);
		BULK_ERRNO(o->push_bulk(NULL, in, 1), EINVAL);
		BULK_ERRNO(o->pop_bulk(NULL, out, 1), EINVAL);
		BULK_ERRNO(o->push_bulk(q, NULL, 1), EINVAL);
		BULK_ERRNO(o->pop_bulk(q, NULL, 1), EINVAL);
		BULK_ERRNO(o->pop_bulk(q, out, 8), EAGAIN);		/* empty */
		BULK_ERRNO(o->push_bulk(q, in, 0), 12345);		/* n == 0 */
		BULK_ERRNO(o->pop_bulk(q, out, 0), 12345);
		errno = 12345;
		CU_ASSERT_EQUAL(o->push_bulk(q, in, 8), 4);		/* short: no error */
		CU_ASSERT_EQUAL(errno, 12345);
		BULK_ERRNO(o->push_bulk(q, in, 8), EAGAIN);		/* full */
		errno = 12345;
		CU_ASSERT_EQUAL(o->pop_bulk(q, out, 2), 2);
		CU_ASSERT_EQUAL(errno, 12345);
		o->close(q);
		BULK_ERRNO(o->push_bulk(q, in, 1), EPIPE);		/* closed, room left */
		BULK_ERRNO(o->push_bulk(q, in, 0), 12345);
		errno = 12345;
		CU_ASSERT_EQUAL(o->pop_bulk(q, out, 8), 2);		/* closed: drains */
		CU_ASSERT(out[0] == 3 && out[1] == 4);
		CU_ASSERT_EQUAL(errno, 12345);
		BULK_ERRNO(o->pop_bulk(q, out, 8), EPIPE);		/* closed and drained */
		BULK_ERRNO(o->pop_bulk(q, out, 1), EPIPE);
		o->destroy(q);
		/* Closed while full: push says closed, not full. */
		q = o->create(2, sizeof(int));
		CU_ASSERT_FATAL(q != NULL);
		CU_ASSERT_EQUAL(o->push_bulk(q, in, 2), 2);
		o->close(q);
		BULK_ERRNO(o->push_bulk(q, in, 1), EPIPE);
		o->destroy(q);
	}
}

/* ---- in-place slots (1.1) ---------------------------------------------- */

/*
 * Elements built in their slots come out as they went in, in order, with
 * the 1.0 calls and the slot calls mixed; full, closed, a past or bad
 * deadline and NULL arguments answer as try_push/push/try_pop/pop do.
 */
static void test_slots(void)
{
	static const size_t sizes[] = { 1, 3, 8, 24, 100 };

	for (size_t k = 0; k < NKINDS; k++) {
		const struct qops *o = &kinds[k];

		for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
			size_t es = sizes[z], align = es & -es;
			unsigned char in[100], out[100];
			struct timespec past = { -5, 0 }, bad = { 0, -1 };
			jp_queue_slot_t sl;
			void *q = o->create(4, es);

			CU_ASSERT_FATAL(q != NULL);
			if (align > 8)
				align = 8;
			for (unsigned i = 0; i < 4; i++) {
				memset(in, (int)(i + 1), es);
				if (i % 2) {
					CU_ASSERT_EQUAL(o->try_push(q, in), 0);
					continue;
				}
				CU_ASSERT_EQUAL_FATAL(i ? o->push_start(q, &sl, NULL)
						      : o->try_push_start(q, &sl), 0);
				CU_ASSERT_EQUAL((uintptr_t)sl.elem % align, 0);
				memcpy(sl.elem, in, es);
				o->push_finish(q, &sl);
			}
			CU_ASSERT_EQUAL(o->size(q), 4);
			CU_ASSERT_EQUAL(o->try_push_start(q, &sl), EAGAIN);
			CU_ASSERT_EQUAL(o->push_start(q, &sl, &past), ETIMEDOUT);
			CU_ASSERT_EQUAL(o->push_start(q, &sl, &bad), EINVAL);
			for (unsigned i = 0; i < 4; i++) {
				memset(in, (int)(i + 1), es);
				if (i % 2 == 0) {
					CU_ASSERT_EQUAL(o->try_pop(q, out), 0);
					CU_ASSERT_EQUAL(memcmp(out, in, es), 0);
					continue;
				}
				CU_ASSERT_EQUAL_FATAL(i == 1 ? o->try_pop_start(q, &sl)
						      : o->pop_start(q, &sl, &past), 0);
				CU_ASSERT_EQUAL(memcmp(sl.elem, in, es), 0);
				o->pop_finish(q, &sl);
			}
			CU_ASSERT_EQUAL(o->size(q), 0);
			CU_ASSERT_EQUAL(o->try_pop_start(q, &sl), EAGAIN);
			CU_ASSERT_EQUAL(o->pop_start(q, &sl, &past), ETIMEDOUT);
			CU_ASSERT_EQUAL(o->pop_start(q, &sl, &bad), EINVAL);
			/* A started push survives a close; the pop drains it. */
			CU_ASSERT_EQUAL(o->try_push_start(q, &sl), 0);
			memset(sl.elem, 0x5a, es);
			if (o->multi_prod)	/* SPSC: close waits for the finish */
				o->close(q);
			o->push_finish(q, &sl);
			if (!o->multi_prod)
				o->close(q);
			CU_ASSERT_EQUAL(o->try_push_start(q, &sl), EPIPE);
			CU_ASSERT_EQUAL(o->push_start(q, &sl, NULL), EPIPE);
			CU_ASSERT_EQUAL(o->pop_start(q, &sl, NULL), 0);
			CU_ASSERT_EQUAL(((unsigned char *)sl.elem)[es - 1], 0x5a);
			o->pop_finish(q, &sl);
			CU_ASSERT_EQUAL(o->try_pop_start(q, &sl), EPIPE);
			CU_ASSERT_EQUAL(o->pop_start(q, &sl, NULL), EPIPE);
			o->destroy(q);
		}
		CU_ASSERT_EQUAL(o->try_push_start(NULL, &(jp_queue_slot_t){ 0 }), EINVAL);
		CU_ASSERT_EQUAL(o->push_start(NULL, &(jp_queue_slot_t){ 0 }, NULL), EINVAL);
		CU_ASSERT_EQUAL(o->try_pop_start(NULL, &(jp_queue_slot_t){ 0 }), EINVAL);
		CU_ASSERT_EQUAL(o->pop_start(NULL, &(jp_queue_slot_t){ 0 }, NULL), EINVAL);
		void *q = o->create(2, 8);
		CU_ASSERT_FATAL(q != NULL);
		CU_ASSERT_EQUAL(o->try_push_start(q, NULL), EINVAL);
		CU_ASSERT_EQUAL(o->pop_start(q, NULL, NULL), EINVAL);
		o->destroy(q);
	}
}

/* A slot finished twice, or never started: the documented abort. */
struct slot_misuse {
	const struct qops *o;
	int pop;
};

static void child_slot_twice(void *arg)
{
	const struct slot_misuse *m = arg;
	jp_queue_slot_t sl;
	uint64_t v = 1;
	void *q = m->o->create(4, sizeof v);

	if (m->pop) {
		m->o->try_push(q, &v);
		m->o->try_pop_start(q, &sl);
		m->o->pop_finish(q, &sl);
		m->o->pop_finish(q, &sl);
	} else {
		m->o->try_push_start(q, &sl);
		m->o->push_finish(q, &sl);
		m->o->push_finish(q, &sl);
	}
	_exit(0);
}

static void test_slot_misuse(void)
{
	for (size_t k = 0; k < NKINDS; k++)
		for (int pop = 0; pop < 2; pop++) {
			struct slot_misuse m = { &kinds[k], pop };
			struct jp_child_result r;
			char want[128];

			snprintf(want, sizeof want,
				 "jpsync: jp_%s_%s_finish: the slot was not started on this queue",
				 kinds[k].name, pop ? "pop" : "push");
			CU_ASSERT_EQUAL_FATAL(jp_test_child(child_slot_twice, &m, &r), 0);
			CU_ASSERT(r.signaled && r.sig == SIGABRT);
			CU_ASSERT_PTR_NOT_NULL(strstr(r.err, want));
		}
}

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
		{ "FIFO order, capacity rounding, any element size", test_fifo_and_capacity },
		{ "bad arguments give EINVAL", test_bad_arguments },
		{ "capacities 2^20, 2^30, 2^40: at once, no memory, or ENOMEM", test_huge_capacity },
		{ "timeouts expire with ETIMEDOUT", test_timeouts_expire },
		{ "bulk operations move as many as fit", test_bulk },
		{ "bulk operations that move nothing say why in errno", test_bulk_says_why },
		{ "every element once, blocking, capacities 1 2 64", test_exactly_once_blocking },
		{ "every element once, try and yield", test_exactly_once_try },
		{ "every element once, bulk", test_exactly_once_bulk },
		{ "every element once, in-place slots, blocking and try", test_exactly_once_slots },
		{ "in-place slots: order, full, closed, timeouts, bad arguments", test_slots },
		{ "in-place slots: a finish of a slot not started aborts", test_slot_misuse },
		{ "close wakes every blocked caller, nothing lost", test_close_wakes_blocked },
		{ "close while elements flow loses nothing", test_close_while_flowing },
		CU_TEST_INFO_NULL,
	};
	CU_SuiteInfo suites[] = {
		{ "queue", NULL, NULL, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};
	if (jp_test_on_valgrind())
		jp_test_unregister(tests, test_huge_capacity,
				   "valgrind: its address space holds no 16 GiB ring");
	else if (jp_test_emulated())
		/* qemu-user keeps flags for every page of a guest mapping:
		 * mapping 2^30 slots takes it 0.5-1 s and 50-100 MB. */
		jp_test_unregister(tests, test_huge_capacity,
				   "qemu-user: its per-page bookkeeping of a 16 GiB ring");
	return jp_test_run(suites);
}
