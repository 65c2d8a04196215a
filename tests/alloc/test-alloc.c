/*
 * test-alloc.c - jp_alloc(3), black-box, through the shared library: the
 * basic API and its sizes, and the statistics struct and table.
 *
 * One case per behaviour of jp_alloc(3) and design.md's "The allocator".
 * The other suites of the allocator are test-alloc-threads.c,
 * test-alloc-fork.c, test-alloc-memory.c, test-alloc-misuse.c and
 * test-alloc-env.c; what they share is in alloc-testutil.c.
 */
#define _GNU_SOURCE	/* fopencookie, mincore */
#include <jpsync/alloc.h>
#include <jpsync/hammer.h>

#include "testutil.h"
#include "alloc-testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- basic semantics ------------------------------------------------- */

static const size_t sizes[] = {
	0, 1, 7, 8, 15, 16, 17, 24, 31, 32, 33, 48, 63, 64, 65, 80, 100, 127,
	128, 129, 200, 255, 256, 257, 500, 1000, 1023, 1024, 1025, 2000, 4095,
	4096, 4097, 8191, 8192, 10000, 30000, 65535, 65536, 65537, 100000,
	200000, 262143, 262144, 262145, 300000, 1000000, 5000000,
};

static void test_aligned_16(void)
{
	for (size_t i = 0; i < JP_ARRAY_LEN(sizes); i++) {
		void *p[8];

		for (int k = 0; k < 8; k++) {
			p[k] = jp_alloc(sizes[i]);
			CU_ASSERT_PTR_NOT_NULL_FATAL(p[k]);
			CU_ASSERT_EQUAL((uintptr_t)p[k] % 16, 0);
		}
		for (int k = 0; k < 8; k++)
			jp_free(p[k]);
	}
}

static void test_usable_size_writable(void)
{
	for (size_t i = 0; i < JP_ARRAY_LEN(sizes); i++) {
		unsigned char *p = jp_alloc(sizes[i]), *q = jp_alloc(sizes[i]);
		size_t u = jp_usable_size(p);

		CU_ASSERT_FATAL(p != NULL && q != NULL);
		CU_ASSERT(u >= sizes[i]);
		memset(p, 0xa5, u);
		memset(q, 0x5a, jp_usable_size(q));
		/* Writing all of p did not touch its neighbour. */
		CU_ASSERT_EQUAL(q[0], 0x5a);
		CU_ASSERT_EQUAL(p[u - 1 + (u == 0)], u ? 0xa5 : p[0]);
		jp_free(p);
		jp_free(q);
	}
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 31 + seed);
}

static bool same(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(i * 31 + seed))
			return false;
	return true;
}

static void test_realloc_keeps_contents(void)
{
	static const size_t steps[] = {
		1, 16, 40, 100, 1000, 5000, 70000, 262144, 300000, 2 * MiB,
		9 * MiB, 30 * MiB, 3 * MiB, 100000, 3000, 50, 10,
	};
	unsigned char *p = jp_alloc(1);
	size_t have = 1;

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	fill(p, 1, 7);
	for (size_t i = 0; i < JP_ARRAY_LEN(steps); i++) {
		size_t n = steps[i], keep = have < n ? have : n;
		unsigned char *q = jp_realloc(p, n);

		CU_ASSERT_PTR_NOT_NULL_FATAL(q);
		CU_ASSERT(jp_usable_size(q) >= n);
		CU_ASSERT(same(q, keep, 7));
		fill(q, n, 7);
		p = q;
		have = n;
	}
	jp_free(p);
}

static void test_realloc_in_place_and_moved(void)
{
	unsigned char *p = jp_alloc(100), *q;
	size_t u = jp_usable_size(p);

	/* Growing within the usable size, and shrinking a little, stay. */
	fill(p, 100, 3);
	CU_ASSERT_PTR_EQUAL(jp_realloc(p, u), p);
	CU_ASSERT_PTR_EQUAL(jp_realloc(p, 90), p);
	CU_ASSERT(same(p, 90, 3));
	/* Growing past it moves, with the contents. */
	q = jp_realloc(p, 10000);
	CU_ASSERT_PTR_NOT_EQUAL(q, p);
	CU_ASSERT(same(q, 90, 3));
	/* Shrinking a lot moves to a smaller class. */
	p = jp_realloc(q, 20);
	CU_ASSERT(same(p, 20, 3));
	CU_ASSERT(jp_usable_size(p) < 10000);
	jp_free(p);
	/* A huge block grows in place or by moving its pages (mremap). */
	p = jp_alloc(8 * MiB);
	fill(p, 8 * MiB, 9);
	q = jp_realloc(p, 64 * MiB);
	CU_ASSERT_PTR_NOT_NULL_FATAL(q);
	CU_ASSERT(same(q, 8 * MiB, 9));
	q = jp_realloc(q, 5 * MiB);
	CU_ASSERT(same(q, 5 * MiB, 9));
	CU_ASSERT(jp_usable_size(q) >= 5 * MiB);
	jp_free(q);
	/* realloc(NULL) allocates. */
	p = jp_realloc(NULL, 50);
	CU_ASSERT_PTR_NOT_NULL(p);
	jp_free(p);
}

/* jp_realloc(ptr, 0), ptr not NULL: ptr is freed and NULL returned, as
 * glibc's realloc does, with errno untouched; small, large and huge blocks,
 * and jp_reallocarray with either count 0. */
static void realloc_zero_frees(size_t n, int how)
{
	struct jp_alloc_stats st0, st1;
	unsigned char *p = jp_alloc(n), *q;
	size_t u;

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	memset(p, 0x3c, n);
	u = jp_usable_size(p);
	stats(&st0);
	errno = EDOM;
	q = how == 0 ? jp_realloc(p, 0)
	  : how == 1 ? jp_reallocarray(p, 0, 16) : jp_reallocarray(p, 16, 0);
	CU_ASSERT_EQUAL(errno, EDOM);
	stats(&st1);
	CU_ASSERT_PTR_NULL(q);
	CU_ASSERT_EQUAL(st1.frees, st0.frees + 1);
	if (n <= 256 * 1024) {
		CU_ASSERT_EQUAL(st1.in_use + u, st0.in_use);
	} else {
		CU_ASSERT_EQUAL(st1.huge_count + 1, st0.huge_count);
	}
}

static void test_realloc_zero_frees(void)
{
	static const size_t zsizes[] = { 1, 100, 5000, 70000, 2 * MiB };
	void *a, *b;

	for (size_t i = 0; i < JP_ARRAY_LEN(zsizes); i++)
		for (int how = 0; how < 3; how++)
			realloc_zero_frees(zsizes[i], how);
	/* With ptr NULL it is still jp_alloc(0): unique and freeable. */
	a = jp_realloc(NULL, 0);
	b = jp_reallocarray(NULL, 0, 16);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_PTR_NOT_EQUAL(a, b);
	jp_free(a);
	jp_free(b);
}

/* realloc growth past 64 KiB: a mapping of its own (huge_count), contents
 * kept through growth in place and moves, and back to a small block when
 * it shrinks below 64 KiB. */
static void test_realloc_growth_maps(void)
{
	struct jp_alloc_stats a, b, c;
	unsigned char *p = jp_alloc(1000);
	const size_t steps[] = { 48 << 10, 100 << 10, 200 << 10, 1 << 20, 5 << 20 };
	size_t have = 1000;

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	for (size_t k = 0; k < have; k++)
		p[k] = (unsigned char)(0x5a + k % 7);
	stats(&a);
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		p = jp_realloc(p, steps[i]);
		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		CU_ASSERT(jp_usable_size(p) >= steps[i]);
		for (size_t k = 0; k < have; k += 997)
			CU_ASSERT_EQUAL_FATAL(p[k], (unsigned char)(0x5a + k % 7));
		for (size_t k = have; k < steps[i]; k++)
			p[k] = (unsigned char)(0x5a + k % 7);
		have = steps[i];
		if (i == 1) {
			stats(&b);
			CU_ASSERT_EQUAL(b.huge_count, a.huge_count + 1);
		}
	}
	p = jp_realloc(p, 1000);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	for (size_t k = 0; k < 1000; k++)
		CU_ASSERT_EQUAL_FATAL(p[k], (unsigned char)(0x5a + k % 7));
	stats(&c);
	CU_ASSERT_EQUAL(c.huge_count, a.huge_count);
	jp_free(p);
}

static void test_calloc_zero_on_reuse(void)
{
	for (size_t i = 0; i < JP_ARRAY_LEN(sizes); i++) {
		size_t n = sizes[i];
		unsigned char *p[4], *z;
		bool zero = true;

		for (int k = 0; k < 4; k++) {
			p[k] = jp_alloc(n);
			memset(p[k], 0xff, jp_usable_size(p[k]));
		}
		for (int k = 0; k < 4; k++)
			jp_free(p[k]);
		/* These reuse the dirty blocks just freed. */
		for (int k = 0; k < 4; k++) {
			z = jp_calloc(1, n);
			CU_ASSERT_PTR_NOT_NULL_FATAL(z);
			for (size_t j = 0; j < n; j++)
				zero &= z[j] == 0;
			p[k] = z;
		}
		CU_ASSERT(zero);
		for (int k = 0; k < 4; k++)
			jp_free(p[k]);
	}
	/* calloc(n, m) for n * m of a few classes */
	for (size_t n = 1; n < 2000; n = n * 3 + 1) {
		unsigned char *a = jp_calloc(n, 3);
		bool zero = true;

		for (size_t j = 0; j < n * 3; j++)
			zero &= a[j] == 0;
		CU_ASSERT(zero);
		jp_free(a);
	}
}

static void test_overflow_enomem(void)
{
	void *p = jp_alloc(10);

	errno = 0;
	CU_ASSERT_PTR_NULL(jp_calloc(SIZE_MAX / 2, 3));
	CU_ASSERT_EQUAL(errno, ENOMEM);
	errno = 0;
	CU_ASSERT_PTR_NULL(jp_calloc(JP_TEST_BIG(33), JP_TEST_BIG(33)));
	CU_ASSERT_EQUAL(errno, ENOMEM);
	errno = 0;
	CU_ASSERT_PTR_NULL(jp_reallocarray(p, SIZE_MAX / 4, 8));
	CU_ASSERT_EQUAL(errno, ENOMEM);
	/* p is intact after a failed reallocarray */
	CU_ASSERT(jp_usable_size(p) >= 10);
	p = jp_reallocarray(p, 10, 10);
	CU_ASSERT_PTR_NOT_NULL(p);
	CU_ASSERT(jp_usable_size(p) >= 100);
	jp_free(p);
}

static void test_too_large_enomem(void)
{
	static const size_t big[] = {
		SIZE_MAX, SIZE_MAX - 4096, SIZE_MAX / 2 + 1, JP_TEST_BIG(60), JP_TEST_BIG(50),
	};
	void *p = jp_alloc(100);

	for (size_t i = 0; i < JP_ARRAY_LEN(big); i++) {
		errno = 0;
		CU_ASSERT_PTR_NULL(jp_alloc(big[i]));
		CU_ASSERT_EQUAL(errno, ENOMEM);
		errno = 0;
		CU_ASSERT_PTR_NULL(jp_realloc(p, big[i]));
		CU_ASSERT_EQUAL(errno, ENOMEM);
		errno = 0;
		CU_ASSERT_PTR_NULL(jp_alloc_aligned(4096, big[i]));
		CU_ASSERT_EQUAL(errno, ENOMEM);
		CU_ASSERT_EQUAL(jp_good_size(big[i]), 0);
	}
	CU_ASSERT(jp_usable_size(p) >= 100);	/* realloc left it alone */
	jp_free(p);
}

static void test_alloc_zero_unique(void)
{
	void *p[100];

	for (int i = 0; i < 100; i++) {
		p[i] = jp_alloc(0);
		CU_ASSERT_PTR_NOT_NULL_FATAL(p[i]);
		for (int j = 0; j < i; j++)
			CU_ASSERT_PTR_NOT_EQUAL(p[i], p[j]);
	}
	for (int i = 0; i < 100; i++)
		jp_free(p[i]);
}

static void test_null(void)
{
	jp_free(NULL);
	jp_free_sized(NULL, 10);
	CU_ASSERT_EQUAL(jp_usable_size(NULL), 0);
}

static void test_aligned_every_power(void)
{
	static const size_t asizes[] = { 0, 1, 24, 100, 1000, 5000, 70000, 300000, 3 * MiB };

	for (size_t a = 1; a <= 2 * MiB; a *= 2) {
		for (size_t i = 0; i < JP_ARRAY_LEN(asizes); i++) {
			size_t n = asizes[i];
			void *p = jp_alloc_aligned(a, n), *q = NULL;

			CU_ASSERT_PTR_NOT_NULL_FATAL(p);
			CU_ASSERT_EQUAL((uintptr_t)p % a, 0);
			CU_ASSERT((uintptr_t)p % 16 == 0);
			CU_ASSERT(jp_usable_size(p) >= n);
			memset(p, 1, n);
			jp_free(p);
			if (a < sizeof(void *))
				continue;	/* EINVAL: see the next case */
			CU_ASSERT_EQUAL(jp_posix_memalign(&q, a, n), 0);
			CU_ASSERT_PTR_NOT_NULL_FATAL(q);
			CU_ASSERT_EQUAL((uintptr_t)q % a, 0);
			memset(q, 2, n);
			jp_free(q);
		}
	}
	/* Above 2 MiB the alignment holds too. */
	for (size_t a = 4 * MiB; a <= 16 * MiB; a *= 2) {
		void *p = jp_alloc_aligned(a, 100);

		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		CU_ASSERT_EQUAL((uintptr_t)p % a, 0);
		CU_ASSERT_EQUAL(jp_usable_size(p) >= 100, 1);
		jp_free(p);
	}
}

/*
 * A 0-byte request at an alignment of 4 MiB or more: its header takes a
 * whole 4 MiB, and the mapping used to end where the block began, so the
 * pointer (and its registry entry) fell on the next 4 MiB of the address
 * space, often a segment of small blocks that then read as invalid.
 * Fuzzing found it (tests/fuzz/corpus/alloc/regress-aligned-zero-*).
 */
static void test_aligned_zero_bytes_huge_alignment(void)
{
	/* Check mode gives exactly the size asked for (its guards do the
	 * rest); by default a huge 0-byte block owns a byte. */
	const char *chk = getenv("JPSYNC_CHECK");
	size_t least = chk != NULL && chk[0] != '\0' && strcmp(chk, "0") != 0 ? 0 : 1;

	for (size_t a = 64 * 1024; a <= 16 * MiB; a *= 2) {
		void *small = jp_alloc(100), *zero = jp_alloc(0);
		void *p = jp_alloc_aligned(a, 0), *q = NULL;

		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		CU_ASSERT_EQUAL((uintptr_t)p % a, 0);
		/* Inside its own mapping: at least a byte of it is the block's. */
		CU_ASSERT(jp_usable_size(p) >= least);
		CU_ASSERT_EQUAL(jp_posix_memalign(&q, a, 0), 0);
		CU_ASSERT_PTR_NOT_NULL_FATAL(q);
		CU_ASSERT(jp_usable_size(q) >= least);
		/* The small blocks next to them are still theirs. */
		CU_ASSERT(jp_usable_size(small) >= 100);
		CU_ASSERT(jp_usable_size(zero) < 64 * 1024);
		jp_free(zero);
		jp_free(small);
		jp_free(q);
		jp_free(p);
	}
}

static void test_aligned_not_power(void)
{
	static const size_t bad[] = { 0, 3, 24, 48, 100, 4095, 4097, 3 * MiB };
	void *q = (void *)&q;

	for (size_t i = 0; i < JP_ARRAY_LEN(bad); i++) {
		errno = 0;
		CU_ASSERT_PTR_NULL(jp_alloc_aligned(bad[i], 10));
		CU_ASSERT_EQUAL(errno, EINVAL);
		CU_ASSERT_EQUAL(jp_posix_memalign(&q, bad[i], 10), EINVAL);
		CU_ASSERT_PTR_EQUAL(q, (void *)&q);	/* untouched */
	}
}

/* POSIX (and glibc): posix_memalign wants a power of two multiple of
 * sizeof(void *); aligned_alloc takes any power of two. */
static void test_posix_memalign_below_pointer(void)
{
	void *q = (void *)&q, *p;

	for (size_t a = 1; a < sizeof(void *); a *= 2) {
		errno = EDOM;
		CU_ASSERT_EQUAL(jp_posix_memalign(&q, a, 10), EINVAL);
		CU_ASSERT_PTR_EQUAL(q, (void *)&q);	/* untouched */
		CU_ASSERT_EQUAL(errno, EDOM);		/* reported, not set */
		p = jp_alloc_aligned(a, 10);
		CU_ASSERT_PTR_NOT_NULL(p);
		jp_free(p);
	}
	CU_ASSERT_EQUAL(jp_posix_memalign(&q, sizeof(void *), 10), 0);
	CU_ASSERT_PTR_NOT_EQUAL_FATAL(q, (void *)&q);
	CU_ASSERT_EQUAL((uintptr_t)q % sizeof(void *), 0);
	jp_free(q);
}

static void test_good_size_is_usable_size(void)
{
	for (size_t n = 0; n < 300000; n += n < 2048 ? 1 : n / 7) {
		void *p = jp_alloc(n);

		CU_ASSERT_EQUAL_FATAL(jp_good_size(n), jp_usable_size(p));
		jp_free(p);
	}
	for (size_t i = 0; i < JP_ARRAY_LEN(sizes); i++) {
		void *p = jp_alloc(sizes[i]);

		CU_ASSERT_EQUAL(jp_good_size(sizes[i]), jp_usable_size(p));
		CU_ASSERT(jp_good_size(sizes[i]) >= sizes[i]);
		jp_free(p);
	}
}

/*
 * Blocks of 1 to 32 KiB come from the thread cache too (the fast path
 * computes their class): a block freed is the next one of its class, with
 * no refill.
 */
static void test_cache_serves_up_to_32k(void)
{
	static const size_t n[] = { 1025, 3000, 8192, 20000, 32768 };
	struct jp_alloc_stats st0, st1;

	for (size_t i = 0; i < JP_ARRAY_LEN(n); i++) {
		void *p = jp_alloc(n[i]), *q;

		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		jp_free(p);
		stats(&st0);
		for (int k = 0; k < 100; k++) {
			q = jp_alloc(n[i]);
			CU_ASSERT_PTR_EQUAL(q, p);
			jp_free(q);
		}
		stats(&st1);
		CU_ASSERT_EQUAL(st1.cache_misses, st0.cache_misses);
		CU_ASSERT(st1.cache_hits >= st0.cache_hits + 100);
	}
}

static void test_free_sized(void)
{
	for (size_t i = 0; i < JP_ARRAY_LEN(sizes); i++) {
		void *p = jp_alloc(sizes[i]);

		jp_free_sized(p, sizes[i]);
	}
}

/* ---- statistics ---------------------------------------------------------- */

static void test_stats_struct(void)
{
	struct jp_alloc_stats st0, st1;
	unsigned char small[sizeof(struct jp_alloc_stats)];
	void *p[100];

	CU_ASSERT_EQUAL(jp_alloc_stats(NULL, sizeof st0), EINVAL);
	CU_ASSERT_EQUAL(jp_alloc_stats(&st0, 8), EINVAL);
	stats(&st0);
	CU_ASSERT_EQUAL(st0.size, sizeof st0);
	CU_ASSERT_EQUAL(st0.version, JP_ALLOC_STATS_VERSION);
	CU_ASSERT(st0.nclasses > 0 && st0.nclasses <= JP_ALLOC_STATS_CLASSES);
	for (int i = 0; i < 100; i++)
		p[i] = jp_alloc(64);
	stats(&st1);
	CU_ASSERT(st1.allocs >= st0.allocs + 100);
	CU_ASSERT(st1.in_use >= st0.in_use + 100 * 64);
	CU_ASSERT(st1.peak_in_use >= st1.in_use);
	CU_ASSERT(st1.mapped >= st1.in_use);
	CU_ASSERT(st1.peak_mapped >= st1.mapped);
	CU_ASSERT(st1.threads >= 1);
	for (uint32_t c = 1; c < st1.nclasses; c++)
		CU_ASSERT(st1.class_size[c] > st1.class_size[c - 1]);
	for (int i = 0; i < 100; i++)
		jp_free(p[i]);
	stats(&st0);
	CU_ASSERT(st0.frees >= st1.frees + 100);
	CU_ASSERT_EQUAL(st0.in_use + 100 * 64, st1.in_use);
	/* An older, shorter struct: only its bytes are written. */
	memset(small, 0xee, sizeof small);
	CU_ASSERT_EQUAL(jp_alloc_stats((struct jp_alloc_stats *)small, 40), 0);
	CU_ASSERT_EQUAL(((struct jp_alloc_stats *)small)->size, 40);
	CU_ASSERT_EQUAL(small[40], 0xee);
	CU_ASSERT_EQUAL(small[sizeof small - 1], 0xee);
	/* A newer, longer one: ours is filled, size says how much. */
	{
		unsigned char big[sizeof(struct jp_alloc_stats) + 64];

		CU_ASSERT_EQUAL(jp_alloc_stats((struct jp_alloc_stats *)big, sizeof big), 0);
		CU_ASSERT_EQUAL(((struct jp_alloc_stats *)big)->size, sizeof st0);
	}
}

static void test_stats_print(void)
{
	char buf[16384];
	int fds[2];
	ssize_t n;
	void *p = jp_alloc(100);
	const size_t touched = 8 * MiB;
	char *big = jp_alloc(touched);
	struct table_process tp;
	struct timespec t0, t1, pause = { 0, 100000000 };

	jp_free(p);
	/* The process lines below: a peak RSS of the bytes touched at least,
	 * an elapsed time of the 0.1 s slept at least (and of all the time
	 * this test measures: the library was loaded before it). */
	CU_ASSERT_PTR_NOT_NULL_FATAL(big);
	memset(big, 1, touched);
	jp_free(big);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	nanosleep(&pause, NULL);
	CU_ASSERT_EQUAL_FATAL(pipe(fds), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);	/* before the table's time */
	CU_ASSERT_EQUAL(jp_alloc_stats_print(fds[1]), 0);
	close(fds[1]);
	n = read(fds[0], buf, sizeof buf - 1);
	close(fds[0]);
	CU_ASSERT_FATAL(n > 0);
	buf[n] = '\0';
	/* The process, from the kernel. */
	if (table_process(buf, &tp)) {
		double waited = (double)(t1.tv_sec - t0.tv_sec) +
				(double)(t1.tv_nsec - t0.tv_nsec) / 1e9;

		CU_ASSERT_PTR_NOT_NULL(strstr(tp.name, "test-alloc"));
		CU_ASSERT_EQUAL(tp.pid, (long)getpid());
		CU_ASSERT(tp.elapsed >= 0.1);
		CU_ASSERT(tp.elapsed + 0.001 >= waited);
		CU_ASSERT(tp.elapsed < 86400.0);
		CU_ASSERT(tp.user + tp.sys > 0.0);
		CU_ASSERT(tp.max_rss >= touched);
		CU_ASSERT(tp.minflt > 0);
		if (!(tp.elapsed + 0.001 >= waited && tp.max_rss >= touched))
			printf("\nwaited %.3f s, touched %zu bytes:\n%s\n", waited, touched, buf);
	}
	/* A one-line summary in human units first. */
	{
		char want[96], *nl = strchr(buf, '\n');

		snprintf(want, sizeof want, "jpsync allocator statistics (pid %d): ", (int)getpid());
		CU_ASSERT_EQUAL(strncmp(buf, want, strlen(want)), 0);
		CU_ASSERT_FATAL(nl != NULL);
		*nl = '\0';
		CU_ASSERT_PTR_NOT_NULL(strstr(buf, " in use (peak "));
		CU_ASSERT_PTR_NOT_NULL(strstr(buf, " mapped (peak "));
		CU_ASSERT_PTR_NOT_NULL(strstr(buf, " MiB mapped"));
		CU_ASSERT_PTR_NOT_NULL(strstr(buf, " from thread caches"));
		*nl = '\n';
	}
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\n  in use  "));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\n  mapped, peak  "));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\n  frees  "));
	/* The class table's columns are labelled. */
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\n  class  block size    allocations          frees  blocks in use   hit%\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "         112 "));	/* class of 100 */
	CU_ASSERT_EQUAL(jp_alloc_stats_print(-1), EBADF);
}

static CU_TestInfo alloc_tests[] = {
	{ "every block is aligned to 16 bytes", test_aligned_16 },
	{ "usable size >= n and all of it writable", test_usable_size_writable },
	{ "realloc keeps contents, small and huge, both ways", test_realloc_keeps_contents },
	{ "realloc in place and moved", test_realloc_in_place_and_moved },
	{ "realloc growth past 64 KiB gets a mapping of its own", test_realloc_growth_maps },
	{ "realloc(p, 0) frees p, returns NULL, errno untouched", test_realloc_zero_frees },
	{ "calloc is zero, also on reused blocks", test_calloc_zero_on_reuse },
	{ "calloc/reallocarray overflow: NULL, ENOMEM", test_overflow_enomem },
	{ "a request too large: NULL, ENOMEM", test_too_large_enomem },
	{ "jp_alloc(0) is unique and freeable", test_alloc_zero_unique },
	{ "free(NULL) does nothing, usable_size(NULL) is 0", test_null },
	{ "aligned alloc for every power of two 1 B .. 16 MiB", test_aligned_every_power },
	{ "aligned alloc: not a power of two is EINVAL", test_aligned_not_power },
	{ "aligned alloc of 0 bytes at 64 KiB .. 16 MiB alignment", test_aligned_zero_bytes_huge_alignment },
	{ "posix_memalign: alignment below sizeof(void *) is EINVAL", test_posix_memalign_below_pointer },
	{ "good_size(n) is the usable size of jp_alloc(n)", test_good_size_is_usable_size },
	{ "free_sized with the allocated size", test_free_sized },
	{ "the thread cache serves blocks up to 32 KiB", test_cache_serves_up_to_32k },
	{ "stats struct: fields, sizes, errors", test_stats_struct },
	{ "stats print: the table", test_stats_print },
	{ NULL, NULL },
};

static CU_SuiteInfo suites[] = {
	{ "alloc", NULL, NULL, NULL, NULL, alloc_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	/*
	 * A case that cannot run here is not registered, rather than run as
	 * an empty pass; each one left out prints a line naming it and why.
	 */
	if (jp_test_on_memcheck()) {
		/* memcheck keeps no thread caches (a freed block must die at
		 * once): the behaviour is not there.  helgrind and drd run it. */
		jp_test_unregister(alloc_tests, test_cache_serves_up_to_32k,
				   "memcheck: no thread caches");
	}
	return jp_test_run(suites);
}
