/* test-pool.c - jp_pool, with and without the thread cache. */
#include <jpsync/hammer.h>
#include <jpsync/pool.h>
#include <jpsync/queue.h>

#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const unsigned modes[] = { 0, JP_POOL_THREAD_CACHE };

static void test_alignment_and_capacity(void)
{
	static const struct { size_t size, align; } cases[] = {
		{ 1, 16 }, { 24, 16 }, { 48, 16 }, { 64, 64 }, { 96, 32 },
		{ 128, 128 }, { 4096, 4096 }, { 8192, 8192 }, { 100, 16 },
	};

	for (size_t m = 0; m < 2; m++) {
		for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
			jp_pool_t *p = jp_pool_create(cases[c].size, 10, modes[m]);
			void *objs[16];

			CU_ASSERT_FATAL(p != NULL);
			CU_ASSERT_EQUAL(jp_pool_capacity(p), 16);
			for (int i = 0; i < 16; i++) {
				objs[i] = jp_pool_get(p);
				CU_ASSERT_FATAL(objs[i] != NULL);
				CU_ASSERT_EQUAL((uintptr_t)objs[i] % cases[c].align, 0);
				memset(objs[i], i, cases[c].size);	/* all of it is ours */
				for (int j = 0; j < i; j++)
					CU_ASSERT(objs[j] != objs[i]);
			}
			for (int i = 0; i < 16; i++)
				CU_ASSERT_EQUAL(*(unsigned char *)objs[i], i);	/* no overlap */
			jp_pool_put_batch(p, objs, 16);
			jp_pool_destroy(p);
		}
	}
}

static void test_exhaustion(void)
{
	for (size_t m = 0; m < 2; m++) {
		jp_pool_t *p = jp_pool_create(32, 64, modes[m]);
		void *objs[64], *extra[8];

		CU_ASSERT_FATAL(p != NULL);
		for (int i = 0; i < 64; i++)
			CU_ASSERT_FATAL((objs[i] = jp_pool_get(p)) != NULL);
		errno = 0;
		CU_ASSERT_PTR_NULL(jp_pool_get(p));
		CU_ASSERT_EQUAL(errno, ENOMEM);
		errno = 0;
		CU_ASSERT_EQUAL(jp_pool_get_batch(p, extra, 8), 0);
		CU_ASSERT_EQUAL(errno, ENOMEM);
		jp_pool_put(p, objs[5]);
		CU_ASSERT_PTR_EQUAL(jp_pool_get(p), objs[5]);
		jp_pool_put_batch(p, objs, 64);
		/* Batches: 40 then 24 then none. */
		void *b[64];
		CU_ASSERT_EQUAL(jp_pool_get_batch(p, b, 40), 40);
		CU_ASSERT_EQUAL(jp_pool_get_batch(p, b + 40, 40), 24);
		jp_pool_put_batch(p, b, 64);
		jp_pool_put(p, NULL);			/* ignored, as free(NULL) */
		jp_pool_destroy(p);
	}
}

static void test_bad_arguments(void)
{
	errno = 0;
	CU_ASSERT_PTR_NULL(jp_pool_create(0, 8, 0));
	CU_ASSERT_EQUAL(errno, EINVAL);
	errno = 0;
	CU_ASSERT_PTR_NULL(jp_pool_create(8, 0, 0));
	CU_ASSERT_EQUAL(errno, EINVAL);
	errno = 0;
	CU_ASSERT_PTR_NULL(jp_pool_create(8, SIZE_MAX, 0));
	CU_ASSERT_EQUAL(errno, EINVAL);
	errno = 0;
	CU_ASSERT_PTR_NULL(jp_pool_create(SIZE_MAX, 8, 0));
	CU_ASSERT_EQUAL(errno, EINVAL);
	errno = 0;
	CU_ASSERT_PTR_NULL(jp_pool_create(8, 8, 0x80));
	CU_ASSERT_EQUAL(errno, EINVAL);
	/* Each argument in range, the objects together beyond size_t.  Where
	 * size_t has 32 bits these are 32-byte objects x 2^31 and 272-byte
	 * objects x 2^24 (2^32 + 2^28 bytes), which used to wrap to a pool of
	 * 256 MiB holding 2^24 objects. */
	errno = 0;
	CU_ASSERT_PTR_NULL(jp_pool_create((SIZE_MAX >> 31) + 17, (size_t)1 << 31, 0));
	CU_ASSERT_EQUAL(errno, EINVAL);
	errno = 0;
	CU_ASSERT_PTR_NULL(jp_pool_create((SIZE_MAX >> 24) + 17, (size_t)1 << 24, 0));
	CU_ASSERT_EQUAL(errno, EINVAL);
	errno = 0;
	CU_ASSERT_PTR_NULL(jp_pool_get(NULL));
	CU_ASSERT_EQUAL(errno, EINVAL);
	CU_ASSERT_EQUAL(jp_pool_capacity(NULL), 0);
	jp_pool_put(NULL, NULL);
	jp_pool_destroy(NULL);
}

/*
 * Huge capacities, in a child that SIGALRM kills after 10 s: created at
 * once with no memory spent until objects are used, or ENOMEM when the
 * machine could never hold them (EINVAL when the address space could not).  (Creation used to write every link of
 * the free stack: 3 s and 4 GiB for 2^30.)
 */
static void huge_child(void *arg)
{
	static const unsigned shifts[] = { 20, 30, 31 };
	(void)arg;

	alarm(10);
	for (size_t i = 0; i < sizeof shifts / sizeof shifts[0]; i++) {
		for (unsigned flags = 0; flags <= JP_POOL_THREAD_CACHE; flags++) {
			long rss = jp_test_rss_kb();
			struct timespec t0, t1;
			void *objs[100];
			double ms;
			jp_pool_t *p;

			clock_gettime(CLOCK_MONOTONIC, &t0);
			errno = 0;
			p = jp_pool_create(16, (size_t)1 << shifts[i], flags);
			clock_gettime(CLOCK_MONOTONIC, &t1);
			ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
			fprintf(stderr, "pool 2^%u flags %u: %s (errno %d), %.3f ms, RSS +%ld KiB\n",
				shifts[i], flags, p ? "created" : "NULL", errno, ms, jp_test_rss_kb() - rss);
			if (ms > 1000 || jp_test_rss_kb() - rss > 64 * 1024)
				_exit(10 + (int)i);
			/* EINVAL where 16 x 2^k bytes exceed size_t (32-bit). */
			if (p == NULL && errno != ENOMEM &&
			    !(errno == EINVAL && ((size_t)1 << shifts[i]) > SIZE_MAX / 16))
				_exit(20 + (int)i);
			if (p == NULL)
				continue;
			for (int k = 0; k < 100; k++)
				if ((objs[k] = jp_pool_get(p)) == NULL)
					_exit(30);
			for (int k = 1; k < 100; k++)
				if (objs[k] == objs[k - 1])
					_exit(31);
			jp_pool_put_batch(p, objs, 100);
			jp_pool_destroy(p);
		}
	}
	_exit(0);
}

static void test_huge_capacity(void)
{
	struct jp_child_result r;

	CU_ASSERT_EQUAL_FATAL(jp_test_child(huge_child, NULL, &r), 0);
	printf("\n%s", r.err);
	CU_ASSERT(r.exited && r.status == 0);
}

/* The stamp test of the harness: no object is handed to two threads at once. */
struct stamp {
	jp_pool_t *p;
	_Atomic uint64_t collisions, misses;
};

static void stamp_body(void *ctx, unsigned thread, uint64_t iter)
{
	struct stamp *s = ctx;
	uint64_t *o;

	while ((o = jp_pool_get(s->p)) == NULL) {
		atomic_fetch_add(&s->misses, 1);
		sched_yield();
	}
	o[0] = thread;
	o[1] = iter;
	sched_yield();
	if (o[0] != thread || o[1] != iter)
		atomic_fetch_add(&s->collisions, 1);
	jp_pool_put(s->p, o);
}

static void test_stamp(void)
{
	uint64_t iters = jp_test_scaled(20000, 100);

	for (size_t m = 0; m < 2; m++) {
		struct stamp s;

		memset(&s, 0, sizeof s);
		/* Fewer objects than a thread cache per thread would like. */
		s.p = jp_pool_create(64, 32, modes[m]);
		CU_ASSERT_FATAL(s.p != NULL);
		CU_ASSERT_EQUAL(jp_hammer(8, iters, stamp_body, &s), 0);
		CU_ASSERT_EQUAL(atomic_load(&s.collisions), 0);
		jp_pool_destroy(s.p);
	}
}

/* Batches moving between threads. */
static void batch_body(void *ctx, unsigned thread, uint64_t iter)
{
	struct stamp *s = ctx;
	uint64_t *o[5];
	size_t n = jp_pool_get_batch(s->p, (void **)o, 5);

	for (size_t i = 0; i < n; i++) {
		o[i][0] = thread;
		o[i][1] = iter;
	}
	sched_yield();
	for (size_t i = 0; i < n; i++)
		if (o[i][0] != thread || o[i][1] != iter)
			atomic_fetch_add(&s->collisions, 1);
	jp_pool_put_batch(s->p, (void *const *)o, n);
}

static void test_batch_stamp(void)
{
	uint64_t iters = jp_test_scaled(10000, 100);

	for (size_t m = 0; m < 2; m++) {
		struct stamp s;
		void *all[64];

		memset(&s, 0, sizeof s);
		s.p = jp_pool_create(64, 64, modes[m]);
		CU_ASSERT_FATAL(s.p != NULL);
		CU_ASSERT_EQUAL(jp_hammer(6, iters, batch_body, &s), 0);
		CU_ASSERT_EQUAL(atomic_load(&s.collisions), 0);
		/* Nothing lost: the hammer threads have exited. */
		CU_ASSERT_EQUAL(jp_pool_get_batch(s.p, all, 64), 64);
		jp_pool_destroy(s.p);
	}
}

/* After 100 threads took and returned objects and exited, all is back. */
static void *take_and_return(void *arg)
{
	jp_pool_t *p = arg;
	void *o[5];

	for (int i = 0; i < 5; i++)
		o[i] = jp_pool_get(p);
	for (int i = 0; i < 5; i++)
		jp_pool_put(p, o[i]);
	return o[0];
}

static void test_thread_exit_returns_cache(void)
{
	jp_pool_t *p = jp_pool_create(32, 256, JP_POOL_THREAD_CACHE);
	void *all[256];

	CU_ASSERT_FATAL(p != NULL);
	for (int i = 0; i < 100; i++) {
		pthread_t t;
		void *r;

		CU_ASSERT_FATAL(pthread_create(&t, NULL, take_and_return, p) == 0);
		pthread_join(t, &r);
		CU_ASSERT(r != NULL);
	}
	CU_ASSERT_EQUAL(jp_pool_get_batch(p, all, 256), 256);
	jp_pool_put_batch(p, all, 256);
	jp_pool_destroy(p);
}

/* Threads that hold caches outlive the pool: their exit must not touch it. */
struct outlive {
	jp_pool_t *p;
	pthread_barrier_t used, destroyed;
};

static void *use_then_wait(void *arg)
{
	struct outlive *o = arg;
	void *obj = jp_pool_get(o->p);

	jp_pool_put(o->p, obj);
	pthread_barrier_wait(&o->used);
	pthread_barrier_wait(&o->destroyed);
	/* A new pool, maybe at the same address: a fresh cache, not the old. */
	jp_pool_t *q = jp_pool_create(64, 8, JP_POOL_THREAD_CACHE);
	void *x = jp_pool_get(q);
	jp_pool_put(q, x);
	jp_pool_destroy(q);
	return x;
}

static void test_destroy_before_thread_exit(void)
{
	struct outlive o;
	pthread_t t[4];

	o.p = jp_pool_create(64, 64, JP_POOL_THREAD_CACHE);
	CU_ASSERT_FATAL(o.p != NULL);
	pthread_barrier_init(&o.used, NULL, 5);
	pthread_barrier_init(&o.destroyed, NULL, 5);
	for (int i = 0; i < 4; i++)
		CU_ASSERT_FATAL(pthread_create(&t[i], NULL, use_then_wait, &o) == 0);
	pthread_barrier_wait(&o.used);
	jp_pool_destroy(o.p);
	pthread_barrier_wait(&o.destroyed);
	for (int i = 0; i < 4; i++) {
		void *r;

		pthread_join(t[i], &r);
		CU_ASSERT(r != NULL);
	}
	pthread_barrier_destroy(&o.used);
	pthread_barrier_destroy(&o.destroyed);
}

/* ---- misuse is caught ---------------------------------------------------- */

static void put_foreign(void *arg)
{
	jp_pool_t *p = jp_pool_create(64, 8, (unsigned)(uintptr_t)arg);
	static char elsewhere[64];

	jp_pool_put(p, elsewhere);
}

static void test_foreign_put_aborts(void)
{
	struct jp_child_result r;

	for (size_t m = 0; m < 2; m++) {
		CU_ASSERT_FATAL(jp_test_child(put_foreign, (void *)(uintptr_t)modes[m], &r) == 0);
		CU_ASSERT(r.signaled && r.sig == SIGABRT);
		CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "jp_pool_put of a pointer not from this pool"));
	}
}

/* ---- the per-thread handle (jp_pool_local) ------------------------------- */

static void test_local_basic(void)
{
	jp_pool_t *plain = jp_pool_create(64, 64, 0);
	jp_pool_t *p = jp_pool_create(64, 64, JP_POOL_THREAD_CACHE);
	jp_pool_local_t *h;
	void *o[65];

	CU_ASSERT_FATAL(plain != NULL && p != NULL);
	errno = 0;
	CU_ASSERT_PTR_NULL(jp_pool_local(plain));
	CU_ASSERT_EQUAL(errno, EINVAL);
	errno = 0;
	CU_ASSERT_PTR_NULL(jp_pool_local(NULL));
	CU_ASSERT_EQUAL(errno, EINVAL);
	h = jp_pool_local(p);
	CU_ASSERT_FATAL(h != NULL);
	CU_ASSERT_PTR_EQUAL(jp_pool_local(p), h);	/* one handle per thread */
	CU_ASSERT_PTR_EQUAL(h->pool, p);
	/* A cache, except under JPSYNC_CHECK=1 (tests/sync/check-sync-check.sh),
	 * whose checks see every get and put. */
	if (getenv("JPSYNC_CHECK") == NULL)
		CU_ASSERT(h->end > h->slot);
	CU_ASSERT_PTR_EQUAL(h->top, h->slot);
	/* Every object, each once, then ENOMEM. */
	for (int i = 0; i < 64; i++) {
		o[i] = jp_pool_local_get(h);
		CU_ASSERT_FATAL(o[i] != NULL);
		CU_ASSERT((uintptr_t)o[i] % 64 == 0);
		for (int j = 0; j < i; j++)
			CU_ASSERT_PTR_NOT_EQUAL(o[i], o[j]);
	}
	errno = 0;
	CU_ASSERT_PTR_NULL(jp_pool_local_get(h));
	CU_ASSERT_EQUAL(errno, ENOMEM);
	CU_ASSERT_PTR_NULL(jp_pool_get(p));
	/* Back through the handle and through jp_pool_put, mixed; NULL ignored. */
	for (int i = 0; i < 64; i++) {
		if (i % 2)
			jp_pool_local_put(h, o[i]);
		else
			jp_pool_put(p, o[i]);
	}
	jp_pool_local_put(h, NULL);
	for (int i = 0; i < 64; i++) {
		o[i] = i % 3 ? jp_pool_local_get(h) : jp_pool_get(p);
		CU_ASSERT(o[i] != NULL);
	}
	CU_ASSERT_PTR_NULL(jp_pool_local_get(h));
	jp_pool_put_batch(p, o, 64);
	CU_ASSERT_EQUAL(jp_pool_get_batch(p, o, 65), 64);
	jp_pool_destroy(plain);
	jp_pool_destroy(p);
}

/* Objects taken through one thread's handle and put through another's
 * (handed over through a jp_spsc queue), then the threads exit: everything
 * is back in the pool. */
struct relay {
	jp_pool_t *p;
	jp_spsc_t *q;
	_Atomic int bad;
	uint64_t items;
};

static void *relay_producer(void *arg)
{
	struct relay *r = arg;
	jp_pool_local_t *h = jp_pool_local(r->p);

	for (uint64_t i = 0; i < r->items; i++) {
		uint64_t *o;

		while ((o = jp_pool_local_get(h)) == NULL)
			sched_yield();
		o[0] = i;
		if (jp_spsc_push(r->q, &o, NULL) != 0)
			atomic_store(&r->bad, 1);
	}
	return NULL;
}

static void *relay_consumer(void *arg)
{
	struct relay *r = arg;
	jp_pool_local_t *h = jp_pool_local(r->p);

	for (uint64_t i = 0; i < r->items; i++) {
		uint64_t *o;

		if (jp_spsc_pop(r->q, &o, NULL) != 0 || o[0] != i)
			atomic_store(&r->bad, 1);
		jp_pool_local_put(h, o);
	}
	return NULL;
}

static void test_local_across_threads(void)
{
	struct relay r;
	pthread_t t[2];
	void *all[256];

	memset(&r, 0, sizeof r);
	r.p = jp_pool_create(64, 256, JP_POOL_THREAD_CACHE);
	r.q = jp_spsc_create(16, sizeof(void *));
	r.items = jp_test_scaled(100000, 1000);
	CU_ASSERT_FATAL(r.p != NULL && r.q != NULL);
	CU_ASSERT_FATAL(pthread_create(&t[0], NULL, relay_producer, &r) == 0);
	CU_ASSERT_FATAL(pthread_create(&t[1], NULL, relay_consumer, &r) == 0);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	CU_ASSERT_EQUAL(atomic_load(&r.bad), 0);
	/* Both caches went back when their threads exited. */
	CU_ASSERT_EQUAL(jp_pool_get_batch(r.p, all, 256), 256);
	jp_spsc_destroy(r.q);
	jp_pool_destroy(r.p);
}

/* The stamp test through handles, one per hammer thread. */
struct local_stamp {
	jp_pool_t *p;
	jp_pool_local_t *h[8];		/* each slot written by its own thread */
	_Atomic uint64_t collisions;
};

static void local_stamp_body(void *ctx, unsigned thread, uint64_t iter)
{
	struct local_stamp *s = ctx;
	jp_pool_local_t *h = s->h[thread];
	uint64_t *o;

	if (h == NULL)
		h = s->h[thread] = jp_pool_local(s->p);
	while ((o = jp_pool_local_get(h)) == NULL)
		sched_yield();
	o[0] = thread;
	o[1] = iter;
	sched_yield();
	if (o[0] != thread || o[1] != iter)
		atomic_fetch_add(&s->collisions, 1);
	jp_pool_local_put(h, o);
}

static void test_local_stamp(void)
{
	struct local_stamp s;
	void *all[32];

	memset(&s, 0, sizeof s);
	s.p = jp_pool_create(64, 32, JP_POOL_THREAD_CACHE);
	CU_ASSERT_FATAL(s.p != NULL);
	CU_ASSERT_EQUAL(jp_hammer(8, jp_test_scaled(20000, 100), local_stamp_body, &s), 0);
	CU_ASSERT_EQUAL(atomic_load(&s.collisions), 0);
	CU_ASSERT_EQUAL(jp_pool_get_batch(s.p, all, 32), 32);
	jp_pool_destroy(s.p);
}

/*
 * A foreign pointer put through a handle is caught when it leaves the
 * thread's cache: when the cache overflows, or when the thread exits.
 */
static char elsewhere[64];

static void local_put_foreign_then_fill(void *arg)
{
	jp_pool_t *p = jp_pool_create(64, 256, JP_POOL_THREAD_CACHE);
	jp_pool_local_t *h = jp_pool_local(p);
	void *o[256];

	(void)arg;
	jp_pool_local_put(h, elsewhere);
	for (int i = 0; i < 256; i++)
		o[i] = jp_pool_get(p);
	for (int i = 0; i < 256; i++)
		jp_pool_local_put(h, o[i]);	/* the older half flushes, elsewhere first */
	_exit(0);
}

static void *foreign_then_exit(void *arg)
{
	jp_pool_local_put(jp_pool_local(arg), elsewhere);
	return NULL;		/* the thread's cache goes back: checked */
}

static void local_put_foreign_then_exit(void *arg)
{
	jp_pool_t *p = jp_pool_create(64, 16, JP_POOL_THREAD_CACHE);
	pthread_t t;

	(void)arg;
	pthread_create(&t, NULL, foreign_then_exit, p);
	pthread_join(t, NULL);
	_exit(0);
}

static void test_local_foreign_put_aborts(void)
{
	void (*cases[])(void *) = { local_put_foreign_then_fill, local_put_foreign_then_exit };
	struct jp_child_result r;

	for (int i = 0; i < 2; i++) {
		CU_ASSERT_FATAL(jp_test_child(cases[i], NULL, &r) == 0);
		CU_ASSERT(r.signaled && r.sig == SIGABRT);
		CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "jp_pool_put of a pointer not from this pool"));
	}
}

/*
 * JPSYNC_CHECK is read once per process, so the checked cases run in a new
 * image of this program (see main) with the variable set.
 */
static const char *self_path;

static void exec_checked(void *arg)
{
	setenv("JPSYNC_CHECK", "1", 1);
	jp_test_execv(self_path, (char *[]){ (char *)self_path, (char *)arg, NULL });
	_exit(99);
}

static int checked_case(const char *which)
{
	bool local = strstr(which, "local") != NULL;
	jp_pool_t *p = jp_pool_create(48, 8, strstr(which, "cache") || local ? JP_POOL_THREAD_CACHE : 0);
	jp_pool_local_t *h = local ? jp_pool_local(p) : NULL;
	char *o = local ? jp_pool_local_get(h) : jp_pool_get(p);

	if (local && (h->end != h->slot || h->top != h->slot))
		return 3;		/* the inline paths would skip the checks */
	if (strstr(which, "inside")) {
		if (local)
			jp_pool_local_put(h, o + 8);
		else
			jp_pool_put(p, o + 8);		/* inside the pool, not an object */
	} else if (local) {
		jp_pool_local_put(h, o);
		jp_pool_local_put(h, o);		/* twice */
	} else {
		jp_pool_put(p, o);
		jp_pool_put(p, o);		/* twice */
	}
	return 0;
}

static void test_checked_misuse_aborts(void)
{
	static const char *cases[] = { "--inside", "--twice", "--inside-cache", "--twice-cache",
				       "--inside-local", "--twice-local" };
	struct jp_child_result r;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		CU_ASSERT_FATAL(jp_test_child(exec_checked, (void *)cases[i], &r) == 0);
		CU_ASSERT(r.signaled && r.sig == SIGABRT);
		CU_ASSERT_PTR_NOT_NULL(strstr(r.err, strstr(cases[i], "twice")
				? "jp_pool_put of an object already in the pool"
				: "jp_pool_put of a pointer not from this pool"));
	}
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return checked_case(argv[1]);
	self_path = "/proc/self/exe";
	(void)argv;

	CU_TestInfo tests[] = {
		{ "objects aligned, capacity rounded up", test_alignment_and_capacity },
		{ "exhaustion gives ENOMEM, batches", test_exhaustion },
		{ "bad arguments give EINVAL", test_bad_arguments },
		{ "capacities 2^20, 2^30, 2^31: at once, no memory, or ENOMEM", test_huge_capacity },
		{ "stamp test: no object handed to two threads", test_stamp },
		{ "stamp test with batches, nothing lost", test_batch_stamp },
		{ "thread exit returns the thread cache", test_thread_exit_returns_cache },
		{ "pool destroyed before its threads exit", test_destroy_before_thread_exit },
		{ "foreign put aborts", test_foreign_put_aborts },
		{ "JPSYNC_CHECK catches bad and double puts", test_checked_misuse_aborts },
		{ "jp_pool_local: one handle, every object once, mixes with get/put",
		  test_local_basic },
		{ "jp_pool_local: objects cross threads, caches return at exit",
		  test_local_across_threads },
		{ "jp_pool_local: stamp test, no object handed to two threads", test_local_stamp },
		{ "jp_pool_local: a foreign put aborts when it leaves the cache",
		  test_local_foreign_put_aborts },
		CU_TEST_INFO_NULL,
	};
	CU_SuiteInfo suites[] = {
		{ "pool", NULL, NULL, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};

	if (jp_test_on_valgrind())
		/* The exec'd image would run outside valgrind: nothing to
		 * learn that the native run does not. */
		jp_test_unregister(tests, test_checked_misuse_aborts,
				   "valgrind: the checked program runs outside it");
	if (jp_test_on_valgrind())
		jp_test_unregister(tests, test_huge_capacity,
				   "valgrind: its address space holds no 16 GiB pool");
	else if (jp_test_emulated())
		/* qemu-user keeps flags for every page of a guest mapping. */
		jp_test_unregister(tests, test_huge_capacity,
				   "qemu-user: its per-page bookkeeping of a 16 GiB pool");
	return jp_test_run(suites);
}
