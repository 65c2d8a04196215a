/* test-arena.c - jp_arena and jp_arena_local. */
#include <jpsync/hammer.h>
#include <jpsync/pool.h>

#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void test_alignment(void)
{
	jp_arena_t *a = jp_arena_create(1 << 16);
	unsigned char *prev_end = NULL;

	CU_ASSERT_FATAL(a != NULL);
	for (size_t align = 1; align <= 8192; align <<= 1) {
		for (size_t size = 0; size < 40; size += 13) {
			unsigned char *p = jp_arena_alloc(a, size, align);

			CU_ASSERT_FATAL(p != NULL);
			CU_ASSERT_EQUAL((uintptr_t)p % align, 0);
			if (prev_end != NULL)
				CU_ASSERT(p >= prev_end);	/* no overlap */
			memset(p, 0xab, size);
			prev_end = p + size;
		}
	}
	jp_arena_destroy(a);
}

static void test_full_and_reset(void)
{
	jp_arena_t *a = jp_arena_create(1000);	/* rounded up to a page */
	void *first, *p;
	size_t n = 0;

	CU_ASSERT_FATAL(a != NULL);
	first = jp_arena_alloc(a, 100, 8);
	CU_ASSERT_FATAL(first != NULL);
	while ((p = jp_arena_alloc(a, 100, 8)) != NULL)
		n++;
	CU_ASSERT_EQUAL(errno, ENOMEM);
	CU_ASSERT(n >= 8);
	errno = 0;
	CU_ASSERT_PTR_NULL(jp_arena_alloc(a, SIZE_MAX, 1));
	CU_ASSERT_EQUAL(errno, ENOMEM);
	CU_ASSERT_PTR_NULL(jp_arena_alloc(a, 1, JP_TEST_BIG(62)));
	jp_arena_reset(a);
	CU_ASSERT_PTR_EQUAL(jp_arena_alloc(a, 100, 8), first);
	jp_arena_destroy(a);
}

static void test_bad_arguments(void)
{
	jp_arena_t *a = jp_arena_create(4096);

	errno = 0;
	CU_ASSERT_PTR_NULL(jp_arena_create(0));
	CU_ASSERT_EQUAL(errno, EINVAL);
	errno = 0;
	CU_ASSERT_PTR_NULL(jp_arena_create(SIZE_MAX));
	CU_ASSERT_EQUAL(errno, EINVAL);
	errno = 0;
	CU_ASSERT_PTR_NULL(jp_arena_alloc(a, 8, 3));
	CU_ASSERT_EQUAL(errno, EINVAL);
	errno = 0;
	CU_ASSERT_PTR_NULL(jp_arena_alloc(a, 8, 0));
	CU_ASSERT_EQUAL(errno, EINVAL);
	errno = 0;
	CU_ASSERT_PTR_NULL(jp_arena_alloc(NULL, 8, 8));
	CU_ASSERT_EQUAL(errno, EINVAL);
	jp_arena_reset(NULL);
	jp_arena_destroy(NULL);
	jp_arena_destroy(a);
}

/* The stamp test of the harness on each thread's own arena. */
struct stamp {
	_Atomic uint64_t collisions;
	_Atomic uintptr_t arenas[16];
};

static void stamp_body(void *ctx, unsigned thread, uint64_t iter)
{
	struct stamp *s = ctx;
	jp_arena_t *a = jp_arena_local();
	uint32_t *p;

	if (a == NULL) {
		atomic_fetch_add(&s->collisions, 1);
		return;
	}
	if (iter == 0)
		atomic_store(&s->arenas[thread], (uintptr_t)a);
	if ((p = jp_arena_alloc(a, 64, 16)) == NULL) {
		jp_arena_reset(a);	/* bulk free, then retry */
		p = jp_arena_alloc(a, 64, 16);
	}
	p[0] = thread;
	p[1] = (uint32_t)iter;
	sched_yield();
	if (p[0] != thread || p[1] != (uint32_t)iter)
		atomic_fetch_add(&s->collisions, 1);
	if (jp_arena_local() != a)
		atomic_fetch_add(&s->collisions, 1);
}

static void test_local_stamp(void)
{
	struct stamp s;

	memset(&s, 0, sizeof s);
	/* Enough iterations that each arena fills and is reset. */
	CU_ASSERT_EQUAL(jp_hammer(8, jp_test_scaled(40000, 200), stamp_body, &s), 0);
	CU_ASSERT_EQUAL(atomic_load(&s.collisions), 0);
	for (int i = 0; i < 8; i++)
		for (int j = 0; j < i; j++)
			CU_ASSERT(atomic_load(&s.arenas[i]) != atomic_load(&s.arenas[j]));
}

static void *local_user(void *arg)
{
	jp_arena_t *a = jp_arena_local();
	(void)arg;
	return a != NULL ? jp_arena_alloc(a, 100000, 64) : NULL;
}

static void test_local_freed_at_exit(void)
{
	/* 200 threads of 1 MiB each: freed at exit (memcheck checks leaks). */
	for (int i = 0; i < 200; i++) {
		pthread_t t;
		void *r;

		CU_ASSERT_FATAL(pthread_create(&t, NULL, local_user, NULL) == 0);
		pthread_join(t, &r);
		CU_ASSERT(r != NULL);
	}
	CU_ASSERT_PTR_NOT_NULL(jp_arena_local());
	CU_ASSERT_PTR_EQUAL(jp_arena_local(), jp_arena_local());
}

int main(void)
{
	CU_TestInfo tests[] = {
		{ "any power-of-two alignment", test_alignment },
		{ "full gives ENOMEM, reset starts over", test_full_and_reset },
		{ "bad arguments give EINVAL", test_bad_arguments },
		{ "stamp test on jp_arena_local", test_local_stamp },
		{ "jp_arena_local is per thread, freed at exit", test_local_freed_at_exit },
		CU_TEST_INFO_NULL,
	};
	CU_SuiteInfo suites[] = {
		{ "arena", NULL, NULL, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};
	return jp_test_run(suites);
}
