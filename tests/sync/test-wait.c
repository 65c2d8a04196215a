/* test-wait.c - jp_wait, jp_notify_one, jp_notify_all (white-box: counts wakes). */
#include <jpsync/hammer.h>
#include <jpsync/wait.h>

#include "sync/sync.h"
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
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

/* An object of any size, stored and loaded atomically. */
static void store(void *addr, size_t size, uint64_t v)
{
	switch (size) {
	case 1: __atomic_store_n((uint8_t *)addr, (uint8_t)v, __ATOMIC_SEQ_CST); break;
	case 2: __atomic_store_n((uint16_t *)addr, (uint16_t)v, __ATOMIC_SEQ_CST); break;
	case 4: __atomic_store_n((uint32_t *)addr, (uint32_t)v, __ATOMIC_SEQ_CST); break;
	default: __atomic_store_n((uint64_t *)addr, v, __ATOMIC_SEQ_CST); break;
	}
}

static uint64_t load(const void *addr, size_t size)
{
	switch (size) {
	case 1: return __atomic_load_n((const uint8_t *)addr, __ATOMIC_SEQ_CST);
	case 2: return __atomic_load_n((const uint16_t *)addr, __ATOMIC_SEQ_CST);
	case 4: return __atomic_load_n((const uint32_t *)addr, __ATOMIC_SEQ_CST);
	default: return __atomic_load_n((const uint64_t *)addr, __ATOMIC_SEQ_CST);
	}
}

/* A waiter for "value at addr is no longer old". */
struct waiter {
	void *addr;
	size_t size;
	uint64_t old;
	long timeout_ms;	/* 0: none */
	int result;
	uint64_t seen;
	_Atomic int started, done;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	struct timespec d;
	uint64_t old = w->old;
	/* The expected value as an object of the waited size (on a big-endian
	 * target a uint64_t's first bytes are its high ones). */
	_Alignas(8) unsigned char expected[8];
	int r;

	store(expected, w->size, old);
	atomic_store(&w->started, 1);
	if (w->timeout_ms)
		jp_test_deadline_ms(&d, w->timeout_ms);
	do {
		r = jp_wait(w->addr, expected, w->size, w->timeout_ms ? &d : NULL);
	} while (r == 0 && load(w->addr, w->size) == old);
	w->result = r;
	w->seen = load(w->addr, w->size);
	atomic_store(&w->done, 1);
	return NULL;
}

static const size_t sizes[] = { 1, 2, 4, 8 };

static void test_each_size(void)
{
	static union { uint64_t align; unsigned char b[64]; } obj;

	for (unsigned i = 0; i < 4; i++) {
		for (int all = 0; all < 2; all++) {
			size_t sz = sizes[i];
			uint64_t old = UINT64_C(0x0102030405060708) & (sz == 8 ? ~0ull : (1ull << (8 * sz)) - 1);
			struct waiter w = { .addr = obj.b + 8, .size = sz, .old = old };
			pthread_t t;

			store(w.addr, sz, old);
			CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, wait_thread, &w), 0);
			while (!atomic_load(&w.started))
				usleep(500);
			usleep(10000);		/* very likely asleep by now */
			CU_ASSERT_EQUAL(atomic_load(&w.done), 0);
			store(w.addr, sz, old + 1);
			if (all)
				jp_notify_all(w.addr);
			else
				jp_notify_one(w.addr);
			pthread_join(t, NULL);
			CU_ASSERT_EQUAL(w.result, 0);
			CU_ASSERT_EQUAL(w.seen, old + 1);
		}
	}
}

static void test_timeout(void)
{
	static _Alignas(8) unsigned char obj[16];

	for (unsigned i = 0; i < 4; i++) {
		uint64_t zero = 0, t0 = now_ns();
		struct timespec d;

		memset(obj, 0, sizeof obj);
		jp_test_deadline_ms(&d, 30);
		CU_ASSERT_EQUAL(jp_wait(obj, &zero, sizes[i], &d), ETIMEDOUT);
		CU_ASSERT(now_ns() - t0 >= 29000000u);
		/* Past deadline: at once. */
		past_deadline(&d);
		CU_ASSERT_EQUAL(jp_wait(obj, &zero, sizes[i], &d), ETIMEDOUT);
	}
}

static void test_changed_before_wait(void)
{
	static _Alignas(8) unsigned char obj[16];
	_Alignas(8) unsigned char expected[8];

	for (unsigned i = 0; i < 4; i++) {
		uint64_t t0 = now_ns();

		memset(obj, 0, sizeof obj);
		store(obj, sizes[i], 6);
		store(expected, sizes[i], 5);
		jp_notify_one(obj);	/* nobody waits: the notify is not stored */
		CU_ASSERT_EQUAL(jp_wait(obj, expected, sizes[i], NULL), 0);
		CU_ASSERT(now_ns() - t0 < 1000000000u);
	}
}

static void test_einval(void)
{
	static _Alignas(8) unsigned char obj[16];
	uint64_t e = 0;
	struct timespec bad = { .tv_sec = 0, .tv_nsec = 1000000000L };

	CU_ASSERT_EQUAL(jp_wait(obj, &e, 3, NULL), EINVAL);
	CU_ASSERT_EQUAL(jp_wait(obj, &e, 0, NULL), EINVAL);
	CU_ASSERT_EQUAL(jp_wait(obj, &e, 16, NULL), EINVAL);
	CU_ASSERT_EQUAL(jp_wait(obj + 1, &e, 2, NULL), EINVAL);
	CU_ASSERT_EQUAL(jp_wait(obj + 2, &e, 4, NULL), EINVAL);
	CU_ASSERT_EQUAL(jp_wait(obj + 4, &e, 8, NULL), EINVAL);
	CU_ASSERT_EQUAL(jp_wait(NULL, &e, 4, NULL), EINVAL);
	CU_ASSERT_EQUAL(jp_wait(obj, NULL, 4, NULL), EINVAL);
	CU_ASSERT_EQUAL(jp_wait(obj, &e, 4, &bad), EINVAL);
	bad.tv_nsec = -1;
	CU_ASSERT_EQUAL(jp_wait(obj, &e, 1, &bad), EINVAL);
	jp_notify_one(NULL);		/* harmless */
	jp_notify_all(NULL);
}

static void test_no_waiters_no_syscall(void)
{
	static _Alignas(8) unsigned char obj[256];
	uint64_t before = jp__wait_wake_calls();

	for (unsigned i = 0; i < 256; i++) {
		jp_notify_one(obj + i);
		jp_notify_all(obj + i);
	}
	CU_ASSERT_EQUAL(jp__wait_wake_calls(), before);
}

/* ---- many waiters on distinct objects 64 bytes apart ------------------- */

#define MANY 64

struct slot {
	_Alignas(64) _Atomic unsigned char flag;
};

static void test_many_objects(void)
{
	static struct slot slots[MANY];
	static struct waiter w[MANY];
	pthread_t t[MANY];
	unsigned n = (unsigned)jp_test_scaled(MANY, 8), states = 0;
	static unsigned char used[4096];

	if (n > MANY)
		n = MANY;
	memset(used, 0, sizeof used);
	for (unsigned i = 0; i < n; i++) {
		unsigned s = jp__wait_state_index(&slots[i].flag);

		CU_ASSERT(s < 4096);
		states += !used[s % 4096];
		used[s % 4096] = 1;
		atomic_store(&slots[i].flag, 0);
		memset(&w[i], 0, sizeof w[i]);
		w[i].addr = (void *)&slots[i].flag;
		w[i].size = 1;
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, wait_thread, &w[i]), 0);
	}
	/* Distinct objects almost always get distinct states. */
	CU_ASSERT(states + 3 >= n);
	for (unsigned i = 0; i < n; i++)
		while (!atomic_load(&w[i].started))
			usleep(200);
	/* Wake them in turn: each notify wakes its own waiter. */
	for (unsigned i = 0; i < n; i++) {
		atomic_store(&slots[i].flag, 1);
		jp_notify_one((const void *)&slots[i].flag);
		pthread_join(t[i], NULL);
		CU_ASSERT_EQUAL(w[i].result, 0);
		for (unsigned j = i + 1; j < n; j++)
			CU_ASSERT_EQUAL(atomic_load(&w[j].done), 0);
	}
}

/* ---- two objects forced onto one proxy state --------------------------- */

static void test_shared_state(void)
{
	static _Alignas(64) unsigned char pool[1 << 16];
	unsigned char *a = NULL, *b = NULL;
	static unsigned short owner[4096];
	struct waiter wa, wb, wa2;
	pthread_t ta, tb, ta2;

	/* Find two bytes that hash to one state (birthday: a few hundred tries). */
	memset(owner, 0xff, sizeof owner);
	for (unsigned i = 0; i < sizeof pool / 8 && a == NULL; i++) {
		unsigned s = jp__wait_state_index(pool + 8 * i);

		if (owner[s] != 0xffff) {
			a = pool + 8 * owner[s];
			b = pool + 8 * i;
		} else {
			owner[s] = (unsigned short)i;
		}
	}
	CU_ASSERT_FATAL(a != NULL && b != NULL);
	CU_ASSERT_EQUAL(jp__wait_state_index(a), jp__wait_state_index(b));
	*a = 0;
	*b = 0;
	memset(&wa, 0, sizeof wa);
	memset(&wb, 0, sizeof wb);
	memset(&wa2, 0, sizeof wa2);
	wa.addr = a; wa.size = 1;
	wa2.addr = a; wa2.size = 1;
	wb.addr = b; wb.size = 1;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&tb, NULL, wait_thread, &wb), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&ta, NULL, wait_thread, &wa), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&ta2, NULL, wait_thread, &wa2), 0);
	while (!atomic_load(&wa.started) || !atomic_load(&wb.started) || !atomic_load(&wa2.started))
		usleep(500);
	usleep(20000);
	/* notify_one(a) must reach an a waiter even though b's shares the state. */
	__atomic_store_n(a, 1, __ATOMIC_SEQ_CST);
	jp_notify_one(a);
	jp_notify_one(a);
	pthread_join(ta, NULL);
	pthread_join(ta2, NULL);
	CU_ASSERT_EQUAL(wa.result, 0);
	CU_ASSERT_EQUAL(wa2.result, 0);
	/* ... and b's waiter, whose value did not change, is still waiting. */
	usleep(10000);
	CU_ASSERT_EQUAL(atomic_load(&wb.done), 0);
	__atomic_store_n(b, 1, __ATOMIC_SEQ_CST);
	jp_notify_all(b);
	pthread_join(tb, NULL);
	CU_ASSERT_EQUAL(wb.result, 0);
}

/* ---- stress: a turnstile of threads passing a counter ------------------ */

struct turn {
	size_t size;
	unsigned threads;
	_Alignas(8) unsigned char obj[8];
	_Atomic uint64_t passes;
};

static void turn_body(void *ctx, unsigned thread, uint64_t iter)
{
	struct turn *t = ctx;
	uint64_t mine = (iter * t->threads + thread), cur;
	uint64_t mask = t->size == 8 ? ~0ull : (1ull << (8 * t->size)) - 1;

	mine &= mask;
	while ((cur = load(t->obj, t->size)) != mine) {
		/* expected is an object of the waited size, not a uint64_t:
		 * its first bytes are the high ones on a big-endian target. */
		_Alignas(8) unsigned char expected[8];

		store(expected, t->size, cur);
		jp_wait(t->obj, expected, t->size, NULL);
	}
	/* relaxed: counted, checked after the join */
	atomic_fetch_add_explicit(&t->passes, 1, memory_order_relaxed);
	store(t->obj, t->size, (mine + 1) & mask);
	jp_notify_all(t->obj);
}

static void test_turnstile(void)
{
	for (unsigned i = 0; i < 4; i++) {
		struct turn t = { .size = sizes[i], .threads = 3 };
		uint64_t iters = jp_test_scaled(2000, 30);

		CU_ASSERT_EQUAL_FATAL(jp_hammer(3, iters, turn_body, &t), 0);
		CU_ASSERT_EQUAL(t.passes, 3 * iters);
	}
}

/* ---- spinning before parking backs off --------------------------------- */

/*
 * A thread whose waits all end in a sleep spins before its first two, and
 * then before one wait in 16 only (wait.c: WAIT_MISSES, WAIT_PROBE).  Run
 * in a thread of its own, whose count of failed spins starts at 0; nothing
 * else in this program waits meanwhile.
 */
#define BACKOFF_WAITS 34

static void *backoff_thread(void *arg)
{
	static _Alignas(8) unsigned char obj[8];
	uint64_t *spun = arg, before = jp__wait_spins();
	unsigned char zero = 0;

	for (unsigned i = 0; i < BACKOFF_WAITS; i++) {
		struct timespec d;

		jp_test_deadline_ms(&d, 1);
		if (jp_wait(obj, &zero, 1, &d) != ETIMEDOUT)
			return NULL;
	}
	*spun = jp__wait_spins() - before;
	return NULL;
}

static void test_spin_backs_off(void)
{
	uint64_t spun = UINT64_MAX;
	pthread_t t;

	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, backoff_thread, &spun), 0);
	pthread_join(t, NULL);
	/* 2 spins, then waits 3 to 34 count 32 skips: probes at 16 and 32. */
	CU_ASSERT_EQUAL(spun, 2 + (BACKOFF_WAITS - 2) / 16);
}

int main(void)
{
	CU_TestInfo tests[] = {
		{ "each size: wait, then notify_one/notify_all", test_each_size },
		{ "deadline: ETIMEDOUT", test_timeout },
		{ "value changed before the wait: returns at once", test_changed_before_wait },
		{ "bad size, alignment, pointer, deadline: EINVAL", test_einval },
		{ "notify with no waiters makes no system call", test_no_waiters_no_syscall },
		{ "waiters on 64 objects 64 bytes apart, woken in turn", test_many_objects },
		{ "objects sharing a proxy state lose no wakeup", test_shared_state },
		{ "turnstile of 3 threads on each size", test_turnstile },
		{ "a thread whose waits end asleep stops spinning", test_spin_backs_off },
		CU_TEST_INFO_NULL,
	};
	CU_SuiteInfo suites[] = {
		{ "jp_wait", NULL, NULL, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};

	return jp_test_run(suites);
}
