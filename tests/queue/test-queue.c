/*
 * test-queue.c - jp_spsc, jp_mpsc and jp_mpmc, what one thread sees: order,
 * capacity, arguments, timeouts, bulk calls and in-place slots.  Many
 * threads at once (every element exactly once, close waking blocked
 * callers): test-queue-threads.c.
 */
#include <jpsync/queue.h>

#include "queue-kinds.h"
#include "testutil.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/*
 * Pointer-sized elements take jp_spsc's call-free path (spsc.c): full,
 * wrap-around, closed with room left and closed when full (EPIPE, not
 * EAGAIN), drained.
 */
static void test_pointer_calls(void)
{
	static int objs[8];

	for (size_t k = 0; k < NKINDS; k++) {
		const struct qops *o = &kinds[k];
		void *q = o->create(4, sizeof(void *)), *full = o->create(2, sizeof(void *));
		void *p;

		CU_ASSERT_FATAL(q != NULL && full != NULL);
		for (int round = 0; round < 3; round++) {	/* positions 0-11: wraps twice */
			for (int i = 0; i < 4; i++) {
				p = &objs[i];
				CU_ASSERT_EQUAL(o->try_push(q, &p), 0);
			}
			p = &objs[4];
			CU_ASSERT_EQUAL(o->try_push(q, &p), EAGAIN);
			for (int i = 0; i < 4; i++) {
				p = NULL;
				CU_ASSERT_EQUAL(o->try_pop(q, &p), 0);
				CU_ASSERT_PTR_EQUAL(p, &objs[i]);
			}
			CU_ASSERT_EQUAL(o->try_pop(q, &p), EAGAIN);
		}
		p = &objs[5];
		CU_ASSERT_EQUAL(o->try_push(q, &p), 0);
		o->close(q);
		CU_ASSERT_EQUAL(o->try_push(q, &p), EPIPE);	/* room left */
		p = NULL;
		CU_ASSERT_EQUAL(o->try_pop(q, &p), 0);
		CU_ASSERT_PTR_EQUAL(p, &objs[5]);
		CU_ASSERT_EQUAL(o->try_pop(q, &p), EPIPE);

		p = &objs[6];
		CU_ASSERT_EQUAL(o->try_push(full, &p), 0);
		CU_ASSERT_EQUAL(o->try_push(full, &p), 0);
		o->close(full);
		CU_ASSERT_EQUAL(o->try_push(full, &p), EPIPE);	/* full and closed */
		CU_ASSERT_EQUAL(o->try_pop(full, &p), 0);
		CU_ASSERT_EQUAL(o->try_push(full, &p), EPIPE);	/* room again, closed */
		CU_ASSERT_EQUAL(o->try_pop(full, &p), 0);
		CU_ASSERT_EQUAL(o->try_pop(full, &p), EPIPE);
		o->destroy(q);
		o->destroy(full);
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

int main(void)
{
	CU_TestInfo tests[] = {
		{ "FIFO order, capacity rounding, any element size", test_fifo_and_capacity },
		{ "bad arguments give EINVAL", test_bad_arguments },
		{ "capacities 2^20, 2^30, 2^40: at once, no memory, or ENOMEM", test_huge_capacity },
		{ "pointer-sized calls: full, wrap-around, closed, drained", test_pointer_calls },
		{ "timeouts expire with ETIMEDOUT", test_timeouts_expire },
		{ "bulk operations move as many as fit", test_bulk },
		{ "bulk operations that move nothing say why in errno", test_bulk_says_why },
		{ "in-place slots: order, full, closed, timeouts, bad arguments", test_slots },
		{ "in-place slots: a finish of a slot not started aborts", test_slot_misuse },
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
