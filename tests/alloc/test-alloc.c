/*
 * test-alloc.c - jp_alloc(3), black-box, through the shared library.
 *
 * One case per behaviour of jp_alloc(3) and design.md's "The allocator".  Stress cases run
 * through jp_hammer; sizes scale with JPSYNC_TEST_SCALE.  Cases that
 * measure RSS skip their ratio assertions under valgrind and the
 * sanitizers (shadow memory distorts RSS) but still run the functions.
 * Cases that need their own environment run tests/alloc/alloc-helper.
 */
#define _GNU_SOURCE	/* fopencookie */
#include <jpsync/alloc.h>
#include <jpsync/hammer.h>

#include "testutil.h"

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

#define MiB ((size_t)1 << 20)
#define JP_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static bool rss_checks(void)
{
	return !jp_test_on_valgrind() && !jp_test_sanitized();
}

/* Bytes for a memory test: scaled, and smaller again where RSS is not
 * asserted (valgrind, sanitizers: slow, and their shadow distorts RSS). */
static size_t mem_size(size_t mib)
{
	size_t n = (size_t)jp_test_scaled(mib, 8) * MiB;

	return rss_checks() ? n : n / 4;
}

static size_t rss_now(void)
{
	char buf[128];
	ssize_t n;
	unsigned long size = 0, res = 0;
	int fd = open("/proc/self/statm", O_RDONLY);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%lu %lu", &size, &res) != 2)
		return 0;
	return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

static void stats(struct jp_alloc_stats *st)
{
	CU_ASSERT_EQUAL_FATAL(jp_alloc_stats(st, sizeof *st), 0);
}

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

/* ---- threads --------------------------------------------------------- */

/* Producer thread 2k hands blocks to consumer 2k+1 through a ring (a
 * mutex, so that helgrind and drd see the hand-off too). */
#define RING 1024
struct ring {
	pthread_mutex_t lock;
	uint64_t head, tail;
	void *slot[RING];
};

struct xfer {
	struct ring *rings;
	_Atomic uint64_t bad;
};

static void xfer_body(void *ctx, unsigned t, uint64_t i)
{
	struct xfer *x = ctx;
	struct ring *r = &x->rings[t / 2];

	if (t % 2 == 0) {
		size_t n = 16 + (i * 40503u) % 700;
		uint64_t *p = jp_alloc(n);

		p[0] = i;
		p[1] = n;
		for (;;) {
			pthread_mutex_lock(&r->lock);
			if (r->head - r->tail < RING)
				break;
			pthread_mutex_unlock(&r->lock);
			sched_yield();
		}
		r->slot[i % RING] = p;
		r->head = i + 1;
		pthread_mutex_unlock(&r->lock);
	} else {
		uint64_t *p;

		for (;;) {
			pthread_mutex_lock(&r->lock);
			if (r->head > i)
				break;
			pthread_mutex_unlock(&r->lock);
			sched_yield();
		}
		p = r->slot[i % RING];
		r->tail = i + 1;
		pthread_mutex_unlock(&r->lock);
		if (p[0] != i || jp_usable_size(p) < p[1])
			atomic_fetch_add(&x->bad, 1);
		jp_free(p);
	}
}

static void test_cross_thread_frees(void)
{
	unsigned pairs = 2;
	uint64_t iters = jp_test_scaled(1000000, 2000);
	struct xfer x = { 0 };
	struct jp_alloc_stats before, after;

	x.rings = jp_calloc(pairs, sizeof *x.rings);
	for (unsigned i = 0; i < pairs; i++)
		pthread_mutex_init(&x.rings[i].lock, NULL);
	jp_thread_flush();
	stats(&before);
	CU_ASSERT_EQUAL_FATAL(jp_hammer(2 * pairs, iters, xfer_body, &x), 0);
	CU_ASSERT_EQUAL(atomic_load(&x.bad), 0);
	jp_thread_flush();
	stats(&after);
	/* Every block came back: the threads' caches went at their exit. */
	CU_ASSERT_EQUAL(after.in_use, before.in_use);
	CU_ASSERT(after.frees - before.frees >= pairs * iters);
	for (unsigned i = 0; i < pairs; i++)
		pthread_mutex_destroy(&x.rings[i].lock);
	jp_free(x.rings);
}

static void *churn_thread(void *arg)
{
	void *p[16];

	(void)arg;
	for (int i = 0; i < 16; i++) {
		p[i] = jp_alloc((size_t)(16 << (i % 10)));
		memset(p[i], 1, 16);
	}
	for (int i = 0; i < 16; i++)
		jp_free(p[i]);
	return NULL;
}

static void churn(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		pthread_t t;

		CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, churn_thread, NULL), 0);
		pthread_join(t, NULL);
	}
}

static void test_thread_churn_rss_flat(void)
{
	unsigned n = (unsigned)jp_test_scaled(jp_test_on_valgrind() ? 2000 : 10000, 100);
	size_t rss1, rss2;
	struct jp_alloc_stats st1, st2;

	churn(n / 10);
	rss1 = rss_now();
	stats(&st1);
	churn(n - n / 10);
	rss2 = rss_now();
	stats(&st2);
	/* No heap left behind by the exited threads, no memory kept. */
	CU_ASSERT_EQUAL(st2.threads, st1.threads);
	CU_ASSERT_EQUAL(st2.in_use, st1.in_use);
	CU_ASSERT(st2.mapped <= st1.mapped + 8 * MiB);
	if (rss_checks())
		CU_ASSERT(rss2 <= rss1 + 4 * MiB);
}

static void *exit_with_cache(void *arg)
{
	void *p[20];

	for (int i = 0; i < 20; i++)
		p[i] = jp_alloc(48);
	for (int i = 0; i < 20; i++)
		jp_free(p[i]);
	/* No CUnit assertion in a thread: CUnit is not thread-safe. */
	if (jp_alloc_stats(arg, sizeof(struct jp_alloc_stats)) != 0)
		memset(arg, 0, sizeof(struct jp_alloc_stats));
	return NULL;
}

static void test_thread_exit_returns_cache(void)
{
	struct jp_alloc_stats before, during, after;
	pthread_t t;

	jp_thread_flush();
	stats(&before);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, exit_with_cache, &during), 0);
	pthread_join(t, NULL);
	stats(&after);
	if (!jp_test_on_memcheck())	/* memcheck: no thread caches */
		CU_ASSERT(during.cached > before.cached);
	CU_ASSERT_EQUAL(during.threads, before.threads + 1);
	CU_ASSERT_EQUAL(after.threads, before.threads);
	CU_ASSERT_EQUAL(after.cached, before.cached);
	CU_ASSERT_EQUAL(after.in_use, before.in_use);
}

static void test_thread_flush(void)
{
	struct jp_alloc_stats st;
	void *p = jp_alloc(200);

	jp_free(p);
	jp_thread_flush();
	stats(&st);
	CU_ASSERT_EQUAL(st.cached, 0);
}

/*
 * A thread that allocates and frees in bulk: its bin grows until a whole
 * round fits (no refill from the shared lists in the later rounds), and
 * the round stays cached.
 */
#define GROW_BLOCKS 2048
struct grow_res {
	struct jp_alloc_stats before, after;
	int failed;
};

static void *grow_rounds(void *arg)
{
	struct grow_res *g = arg;
	void **b = calloc(GROW_BLOCKS, sizeof *b);

	if (b == NULL) {
		g->failed = 1;
		return NULL;
	}
	for (int r = 0; r < 12; r++) {
		if (r == 8 && jp_alloc_stats(&g->before, sizeof g->before) != 0)
			g->failed = 1;
		for (int i = 0; i < GROW_BLOCKS; i++)
			if ((b[i] = jp_alloc(80)) == NULL)
				g->failed = 1;
			else
				memset(b[i], r, 80);
		for (int i = 0; i < GROW_BLOCKS; i++)
			jp_free(b[i]);
	}
	if (jp_alloc_stats(&g->after, sizeof g->after) != 0)
		g->failed = 1;
	free(b);
	return NULL;
}

static void test_bin_grows(void)
{
	struct grow_res g = { .failed = 0 };
	pthread_t t;

	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, grow_rounds, &g), 0);
	pthread_join(t, NULL);
	CU_ASSERT_FALSE(g.failed);
	CU_ASSERT_EQUAL(g.after.cache_misses, g.before.cache_misses);
	CU_ASSERT(g.after.cache_hits - g.before.cache_hits >= 4 * GROW_BLOCKS);
	CU_ASSERT(g.after.cached >= (uint64_t)GROW_BLOCKS * 80);
}

static void run_helper(const char *mode, const char *env0, const char *env1,
		       struct jp_child_result *res);

/*
 * Bulk rounds under contention: every thread allocates a batch (64 to 1024
 * blocks of 16 bytes to 2 KiB), fills and checks it, frees half itself and
 * swaps the other half with a shared mailbox, freeing whatever batch
 * another thread left there.  Bins grow, overflow with other threads'
 * blocks and shrink as the budget is shared; nothing may be lost or
 * handed out twice, and everything goes back.
 */
#define BULK_SLOTS 4
struct bulk_batch {
	unsigned n;
	unsigned char tag;
	size_t size;
	unsigned char *p[];
};

struct bulk {
	/* A mutex, not an atomic exchange: helgrind and drd must see the
	 * hand-off of the blocks. */
	pthread_mutex_t lock;
	struct bulk_batch *mailbox[BULK_SLOTS];
	_Atomic uint64_t bad;
};

static bool bulk_ok(const unsigned char *p, size_t size, unsigned char tag)
{
	return p[0] == tag && p[size / 2] == tag && p[size - 1] == tag;
}

static void bulk_free_batch(struct bulk *m, struct bulk_batch *b, unsigned from)
{
	for (unsigned i = from; i < b->n; i++) {
		if (!bulk_ok(b->p[i], b->size, b->tag))
			atomic_fetch_add(&m->bad, 1);
		jp_free(b->p[i]);
	}
	jp_free(b);
}

static void bulk_body(void *ctx, unsigned t, uint64_t iter)
{
	struct bulk *m = ctx;
	uint64_t r = (iter + 1) * 6364136223846793005ull + t * 1442695040888963407ull;
	unsigned n = 64u << (r >> 61 & 3), half = n / 2;
	size_t size = 16 + (size_t)(r >> 20) % 2033;
	struct bulk_batch *b = jp_alloc(sizeof *b + n * sizeof b->p[0]), *old;

	if (b == NULL) {
		atomic_fetch_add(&m->bad, 1);
		return;
	}
	b->n = n;
	b->size = size;
	b->tag = (unsigned char)(r >> 40 | 1);
	for (unsigned i = 0; i < n; i++) {
		if ((b->p[i] = jp_alloc(size)) == NULL) {
			atomic_fetch_add(&m->bad, 1);
			b->n = i;
			bulk_free_batch(m, b, 0);
			return;
		}
		memset(b->p[i], b->tag, size);
	}
	/* The first half: freed here; the second: to whoever comes next. */
	for (unsigned i = 0; i < half; i++) {
		if (!bulk_ok(b->p[i], size, b->tag))
			atomic_fetch_add(&m->bad, 1);
		jp_free(b->p[i]);
	}
	memmove(b->p, b->p + half, (n - half) * sizeof b->p[0]);
	b->n = n - half;
	pthread_mutex_lock(&m->lock);
	old = m->mailbox[(t + iter) % BULK_SLOTS];
	m->mailbox[(t + iter) % BULK_SLOTS] = b;
	pthread_mutex_unlock(&m->lock);
	if (old != NULL)
		bulk_free_batch(m, old, 0);
	if (t == 0 && iter % 4 == 0) {
		/* Statistics and trims while chains of blocks of several
		 * arenas come and go: in_use stays within what is mapped
		 * (it once wrapped below zero). */
		struct jp_alloc_stats st;

		if (jp_alloc_stats(&st, sizeof st) != 0 || st.in_use > st.mapped)
			atomic_fetch_add(&m->bad, 1);
		if (iter % 16 == 0)
			jp_alloc_trim();
	}
}

static void test_bulk_under_contention(void)
{
	struct jp_alloc_stats before, after;
	struct bulk *m;

	jp_thread_flush();
	stats(&before);
	m = jp_calloc(1, sizeof *m);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	pthread_mutex_init(&m->lock, NULL);
	CU_ASSERT_EQUAL_FATAL(jp_hammer(8, jp_test_scaled(400, 20), bulk_body, m), 0);
	for (unsigned i = 0; i < BULK_SLOTS; i++) {
		struct bulk_batch *b = m->mailbox[i];

		if (b != NULL)
			bulk_free_batch(m, b, 0);
	}
	CU_ASSERT_EQUAL(atomic_load(&m->bad), 0);
	pthread_mutex_destroy(&m->lock);
	jp_free(m);
	jp_thread_flush();
	stats(&after);
	/* The hammer's threads have exited: their caches went back. */
	CU_ASSERT_EQUAL(after.threads, before.threads);
	CU_ASSERT_EQUAL(after.cached, 0);
	CU_ASSERT_EQUAL(after.in_use, before.in_use);
}

/* Bytes cached by alloc-helper bulk (16 threads of 4096-block rounds of
 * 80 bytes, all alive) under env. */
static uint64_t bulk_cached(const char *env)
{
	struct jp_child_result res;
	unsigned long long cached = 0, threads = 0;
	const char *line;

	run_helper("bulk", env, NULL, &res);
	CU_ASSERT(res.exited && res.status == 0);
	line = strstr(res.err, "cached=");
	CU_ASSERT_PTR_NOT_NULL_FATAL(line);
	CU_ASSERT_EQUAL(sscanf(line, "cached=%llu threads=%llu", &cached, &threads), 2);
	CU_ASSERT(threads >= 16);
	return cached;
}

static void test_cache_bytes_bound(void)
{
	/* Each bin starts at 32 blocks (2,560 bytes here); the main thread
	 * and the C library's own allocations hold a little besides. */
	const uint64_t start = 17 * 32 * 80 + (64 << 10);
	uint64_t c;

	c = bulk_cached("JPSYNC_CACHE_BYTES=0");
	CU_ASSERT(c <= start);
	c = bulk_cached("JPSYNC_CACHE_BYTES=1M");
	CU_ASSERT(c <= (1 << 20) + start);
	/* Room for every thread's whole round: nearly all of it stays
	 * cached.  Not quite all: a bin that took a whole transfer chain
	 * (another thread's overflow) in an early round may overflow in a
	 * late one and give back half; so one thread's round of slack. */
	c = bulk_cached("JPSYNC_CACHE_BYTES=64M");
	CU_ASSERT(c <= (64 << 20) + start);
	if (!jp_test_on_valgrind())
		CU_ASSERT(c >= 15 * 4096 * 80);
}

/* A stress mix: threads allocate blocks of random sizes, keep some,
 * check their contents, free them. */
struct mix {
	void *keep[16][64];
	_Atomic uint64_t bad;
};

static void mix_body(void *ctx, unsigned t, uint64_t i)
{
	struct mix *m = ctx;
	unsigned slot = (unsigned)(i * 7919u % 64);
	unsigned char *old = m->keep[t][slot];
	uint64_t r = (i + 1) * 6364136223846793005ull + t;
	size_t n = (r >> 33) % (r % 17 == 0 ? 300000 : 2000);

	if (old != NULL) {
		size_t on = jp_usable_size(old);

		if (on > 0 && (old[0] != (unsigned char)t || old[on - 1] != (unsigned char)t))
			atomic_fetch_add(&m->bad, 1);
		jp_free(old);
	}
	old = jp_alloc(n);
	if (old == NULL) {
		atomic_fetch_add(&m->bad, 1);
		return;
	}
	memset(old, (int)t, jp_usable_size(old));
	m->keep[t][slot] = old;
}

static void test_stress_mixed_sizes(void)
{
	struct mix *m = jp_calloc(1, sizeof *m);

	CU_ASSERT_EQUAL_FATAL(jp_hammer(8, jp_test_scaled(20000, 500), mix_body, m), 0);
	CU_ASSERT_EQUAL(atomic_load(&m->bad), 0);
	for (int t = 0; t < 16; t++)
		for (int s = 0; s < 64; s++)
			jp_free(m->keep[t][s]);
	jp_free(m);
}

/* fork() while other threads allocate: the child allocates and exits. */
static _Atomic int fork_stop;
/* Global, not on the stacks: in the child, whose copies of these threads
 * do not run, memcheck still sees most blocks as reachable.  One that a
 * thread held only in a register at the fork (between jp_alloc's return
 * and the store) is lost there, so the child ends through
 * jp_test_fork_exit, which skips the leak check. */
static void *fork_blocks[2][32];

static void *fork_noise(void *arg)
{
	while (!atomic_load(&fork_stop)) {
		void **p = fork_blocks[(uintptr_t)arg];

		for (int i = 0; i < 32; i++)
			p[i] = jp_alloc((size_t)(i * 97));
		for (int i = 0; i < 32; i++)
			jp_free(p[i]);
		sched_yield();	/* noise, not a hog of the 2 CPUs */
	}
	return NULL;
}

static void test_fork_while_allocating(void)
{
	pthread_t t[2];
	int forks = (int)jp_test_scaled(40, 3);

	atomic_store(&fork_stop, 0);
	for (int i = 0; i < 2; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, fork_noise,
						     (void *)(uintptr_t)i), 0);
	for (int f = 0; f < forks; f++) {
		int st;
		pid_t pid = fork();

		CU_ASSERT_FATAL(pid >= 0);
		if (pid == 0) {
			void *p[100];

			alarm(20);	/* a deadlock fails the test, not the run */
			for (int i = 0; i < 100; i++)
				p[i] = jp_alloc((size_t)(i * 33));
			for (int i = 0; i < 100; i++)
				jp_free(p[i]);
			jp_test_fork_exit(0);	/* see fork_blocks */
		}
		CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
		CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	atomic_store(&fork_stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
}

/*
 * fork() racing getline and fflush(NULL) in other threads, in a program
 * linked to libjpsync (not through the preload module).  Thread C reads a
 * stream whose read function allocates and flushes its cache (class locks)
 * while getline holds the FILE's lock; thread B runs fflush(NULL), which
 * takes the stdio list lock and then each FILE's lock; the main thread
 * forks.  If the allocator's prepare handler took its locks before glibc's
 * fork takes the list lock, A would wait for B, B for C and C for A.
 * The case runs in a child with an alarm: a deadlock ends it by SIGALRM.
 */
static _Atomic int stdio_stop;

/* Global, not on the readers' stacks: in a forked child, whose copies of
 * the readers do not run, memcheck must still see these reachable. */
static void *stdio_blocks[2][9];
static char *stdio_lines[2];

static ssize_t stdio_cookie_read(void *c, char *buf, size_t n)
{
	static const char line[] = "a line of text\n";
	void **p = stdio_blocks[(uintptr_t)c];

	for (int i = 0; i < 8; i++)
		p[i] = jp_alloc((size_t)(100 + i * 900));
	for (int i = 0; i < 8; i++)
		jp_free(p[i]);
	p[8] = jp_alloc(300 << 10);	/* huge: the segment lock */
	jp_free(p[8]);
	jp_thread_flush();		/* the class locks */
	if (n > sizeof line - 1)
		n = sizeof line - 1;
	memcpy(buf, line, n);
	return (ssize_t)n;
}

static void *stdio_reader(void *arg)
{
	cookie_io_functions_t io = { .read = stdio_cookie_read };
	FILE *f = fopencookie(arg, "r", io);
	char **line = &stdio_lines[(uintptr_t)arg];
	size_t n = 0;

	if (f == NULL)
		return (void *)1;
	setvbuf(f, NULL, _IOFBF, 16);	/* a read (and allocation) per line */
	while (!atomic_load(&stdio_stop)) {
		if (getline(line, &n, f) < 0)
			break;
		/* valgrind runs one thread at a time: let the forks run
		 * (a sleep hands valgrind's lock over; a yield may not). */
		if (jp_test_on_valgrind())
			usleep(1000);
	}
	free(*line);
	*line = NULL;
	fclose(f);
	return NULL;
}

static void *stdio_flusher(void *arg)
{
	(void)arg;
	while (!atomic_load(&stdio_stop)) {
		fflush(NULL);
		if (jp_test_on_valgrind())
			usleep(1000);
		else
			sched_yield();
	}
	return NULL;
}

static void fork_stdio_case(void *arg)
{
	int forks = *(int *)arg, bad = 0;
	pthread_t t[3];

	/* Only a deadlock should reach it: drd on a busy machine took over
	 * 120 seconds once. */
	alarm(jp_test_on_valgrind() ? 600 : 30);
	atomic_store(&stdio_stop, 0);
	pthread_create(&t[0], NULL, stdio_reader, (void *)(uintptr_t)0);
	pthread_create(&t[1], NULL, stdio_reader, (void *)(uintptr_t)1);
	pthread_create(&t[2], NULL, stdio_flusher, NULL);
	for (int f = 0; f < forks; f++) {
		int st;
		pid_t pid = fork();

		if (pid == 0) {
			/* Both the allocator and stdio were left consistent. */
			void *p = jp_alloc(5000);

			memset(p, 1, 5000);
			jp_free(p);
			jp_free(jp_alloc(300 << 10));
			fflush(NULL);
			jp_test_fork_exit(0);	/* as fork_blocks says */
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			bad++;
	}
	atomic_store(&stdio_stop, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	fprintf(stderr, "forks %d bad %d\n", forks, bad);
	exit(bad == 0 ? 0 : 1);
}

static void test_fork_stdio(void)
{
	struct jp_child_result res;
	int forks = jp_test_on_valgrind() ? 3 : (int)jp_test_scaled(100, 10);

	CU_ASSERT_EQUAL_FATAL(jp_test_child(fork_stdio_case, &forks, &res), 0);
	CU_ASSERT(!res.signaled);	/* SIGALRM: a deadlock */
	CU_ASSERT(res.exited && res.status == 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(res.err, "bad 0"));
}

/* fork() from a signal handler that interrupted the allocator in the same
 * thread: the atfork handlers must not wait for a lock the interrupted
 * code holds. */
static volatile sig_atomic_t sig_forks, sig_bad, sig_want;

static void fork_in_handler(int sig)
{
	int st, saved = errno;
	pid_t pid;

	(void)sig;
	pid = fork();
	if (pid == 0)
		_exit(0);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0)
		sig_bad = 1;
	/* A fork can take longer than the timer's period: stop it here, or
	 * the handler would run back to back forever. */
	if (++sig_forks >= sig_want) {
		struct itimerval off = { { 0, 0 }, { 0, 0 } };

		setitimer(ITIMER_REAL, &off, NULL);
	}
	errno = saved;
}

static void test_fork_in_signal_handler(void)
{
	struct sigaction sa, old;
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } }, off = { { 0, 0 }, { 0, 0 } };
	int want = (int)jp_test_scaled(200, 10);
	void *p[100];

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = fork_in_handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	CU_ASSERT_EQUAL_FATAL(sigaction(SIGALRM, &sa, &old), 0);
	sig_forks = 0;
	sig_bad = 0;
	sig_want = want;
	setitimer(ITIMER_REAL, &it, NULL);
	/* Refills and flushes (under the class locks) all the time. */
	while (sig_forks < want) {
		for (int i = 0; i < 100; i++)
			p[i] = jp_alloc((size_t)(16 + (i % 3) * 200));
		for (int i = 0; i < 100; i++)
			jp_free(p[i]);
		jp_thread_flush();
	}
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &old, NULL);
	CU_ASSERT_EQUAL(sig_bad, 0);
}

/*
 * Stress: fork while 6 threads are inside the allocator (small, large and
 * huge blocks, realloc, frees of other threads' blocks, flushes and trims):
 * thread 0 forks every few rounds; the child allocates in every class and
 * on a new thread of its own, and exits; the parent goes on.
 */
#define FX_THREADS	6
/* ThreadSanitizer does not let the child of a threaded process start a
 * thread ("not supported. Dying").  Under AddressSanitizer a child failed
 * once in CI (2026-12-01, with other builds loading the machine; not seen
 * in 6 runs under load since, so its status was not known: the case now
 * prints it).  The child's only calls into the sanitizer's runtime are
 * pthread_create and pthread_join, which take the runtime's own locks; we
 * have not checked whether GCC 12's libasan holds those across fork.  So
 * the child's thread is left out there too: the fork through our
 * allocator, while the parent's threads are inside it, is what the case
 * tests. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
# define FX_NO_CHILD_THREAD 1
#elif defined(__has_feature)
# if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#  define FX_NO_CHILD_THREAD 1
# endif
#endif
#define FX_SLOTS	64
struct fork_mix {
	void *_Atomic slot[FX_THREADS][FX_SLOTS];
	_Atomic int bad, forks;
};

static void *fx_child_thread(void *arg)
{
	void *p[100];

	(void)arg;
	for (int i = 0; i < 100; i++)
		p[i] = jp_alloc((size_t)(i * 2711));
	for (int i = 0; i < 100; i++)
		jp_free(p[i]);
	return NULL;
}

static void fx_child(void)
{
	pthread_t t;
	void *p;

	alarm(20);
	fx_child_thread(NULL);
	p = jp_realloc(jp_alloc(100), 3 << 20);
	jp_free(p);
#ifndef FX_NO_CHILD_THREAD
	if (pthread_create(&t, NULL, fx_child_thread, NULL) != 0 ||
	    pthread_join(t, NULL) != 0)
		_exit(2);
#else
	(void)t;
#endif
	jp_alloc_trim();
	jp_test_fork_exit(0);	/* the parent's threads' blocks are lost here */
}

static void fx_body(void *ctx, unsigned thread, uint64_t iter)
{
	struct fork_mix *m = ctx;
	unsigned other = (thread + 1) % FX_THREADS;
	size_t n = (iter * 7919 + thread * 131) % 6 == 0 ? 300000 + iter % 5000 :
		   (size_t)((iter * 2654435761u) % 70000);
	void *p = jp_alloc(n), *q;

	if (p == NULL) {
		atomic_store(&m->bad, 1);
		return;
	}
	memset(p, (int)thread, n < 256 ? n : 256);
	p = jp_realloc(p, n / 2 + 1);
	/* Hand it to the next thread's slot: that thread frees it. */
	q = atomic_exchange(&m->slot[other][iter % FX_SLOTS], p);
	jp_free(q);
	if (iter % 64 == 0)
		jp_thread_flush();
	if (iter % 512 == 0)
		jp_alloc_trim();
	if (thread == 0 && iter % 16 == 0) {
		int st;
		pid_t pid = fork();

		if (pid == 0)
			fx_child();
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0) {
			int none = 0;

			/* The first failed child's wait status, for the report. */
			atomic_compare_exchange_strong(&m->bad, &none,
						       pid < 0 ? -1 : 0x10000 | (st & 0xffff));
		}
		atomic_fetch_add(&m->forks, 1);
	}
}

static void test_fork_threads_in_malloc(void)
{
	struct fork_mix *m = calloc(1, sizeof *m);

	CU_ASSERT_FATAL(m != NULL);
	CU_ASSERT_EQUAL_FATAL(jp_hammer(FX_THREADS, jp_test_scaled(2000, 64), fx_body, m), 0);
	CU_ASSERT_EQUAL(atomic_load(&m->bad), 0);
	if (atomic_load(&m->bad) > 0x10000 - 1) {
		int st = atomic_load(&m->bad) & 0xffff;

		printf("\n  a child failed: %s %d\n", WIFEXITED(st) ? "exit status" : "signal",
		       WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	} else if (atomic_load(&m->bad) != 0) {
		printf("\n  %s\n", atomic_load(&m->bad) < 0 ? "fork failed" : "jp_alloc failed");
	}
	CU_ASSERT(atomic_load(&m->forks) > 0);
	for (int t = 0; t < FX_THREADS; t++)
		for (int i = 0; i < FX_SLOTS; i++)
			jp_free(m->slot[t][i]);
	free(m);
}

/* ---- helper programs ------------------------------------------------- */

static char helper_path[4096];

static const char *builddir(void)
{
	const char *b = getenv("top_builddir");

	return b != NULL ? b : ".";
}

struct exec_arg {
	const char *prog;
	const char *arg1;
	const char *env[4];	/* NAME=value to set, NULL-terminated */
};

static void exec_child(void *p)
{
	struct exec_arg *e = p;

	for (int i = 0; e->env[i] != NULL; i++)
		putenv((char *)e->env[i]);
	jp_test_execv(e->prog, (char *[]){ (char *)e->prog, (char *)e->arg1, NULL });
	fprintf(stderr, "exec %s: %s\n", e->prog, strerror(errno));
	_exit(126);
}

static void run_helper(const char *mode, const char *env0, const char *env1,
		       struct jp_child_result *res)
{
	struct exec_arg e = { helper_path, mode, { env0, env1, NULL } };

	snprintf(helper_path, sizeof helper_path, "%s/tests/alloc/alloc-helper", builddir());
	CU_ASSERT_EQUAL_FATAL(jp_test_child(exec_child, &e, res), 0);
}

static void test_fork_nested_in_prepare(void)
{
	struct jp_child_result res;

	run_helper("fork-nested", NULL, NULL, &res);
	CU_ASSERT(res.exited && res.status == 0);	/* SIGALRM: deadlock */
	if (!(res.exited && res.status == 0))
		printf("\nexited %d status %d signal %d\n", res.exited, res.status, res.sig);
}

/* The helper: a single-threaded process (one that ever had a thread
 * deadlocks in glibc's fork itself when a handler of a fork forks). */
static void test_fork_nested_stress(void)
{
	struct jp_child_result res;
	char env[64];

	snprintf(env, sizeof env, "FORKS=%d", (int)jp_test_scaled(300, 20));
	run_helper("fork-nested-stress", env, NULL, &res);
	CU_ASSERT(res.exited && res.status == 0);	/* SIGALRM: deadlock */
	CU_ASSERT_PTR_NOT_NULL(strstr(res.err, " bad 0/0"));
	if (!(res.exited && res.status == 0))
		printf("\nexited %d status %d signal %d: %s\n", res.exited, res.status,
		       res.sig, res.err);
}

static void test_dlopen_by_unlinked_program(void)
{
	char prog[4096], lib[4096];
	struct exec_arg e = { prog, lib, { NULL } };
	struct jp_child_result res;

	snprintf(prog, sizeof prog, "%s/tests/alloc/alloc-dlopen", builddir());
	snprintf(lib, sizeof lib, "%s/lib/.libs/libjpsync.so.1", builddir());
	CU_ASSERT_EQUAL_FATAL(jp_test_child(exec_child, &e, &res), 0);
	CU_ASSERT(res.exited && res.status == 0);
	if (!(res.exited && res.status == 0))
		printf("\n%s\n", res.err);
}

static void test_check_ok(void)
{
	struct jp_child_result res;

	run_helper("check-ok", "JPSYNC_CHECK=1", NULL, &res);
	CU_ASSERT(res.exited && res.status == 0);
	CU_ASSERT_EQUAL(res.err[0], '\0');
}

static void test_check_aligned_then_plain(void)
{
	struct jp_child_result res;

	run_helper("check-aligned", "JPSYNC_CHECK=1", NULL, &res);
	CU_ASSERT(res.exited && res.status == 0);
	CU_ASSERT_EQUAL(res.err[0], '\0');
	if (!(res.exited && res.status == 0))
		printf("\n%s\n", res.err);
}

static void test_check_realloc(void)
{
	struct jp_child_result res;

	run_helper("check-realloc", "JPSYNC_CHECK=1", NULL, &res);
	CU_ASSERT(res.exited && res.status == 0);
	CU_ASSERT_EQUAL(res.err[0], '\0');
	if (!(res.exited && res.status == 0))
		printf("\nexit %d: %s\n", res.status, res.err);
}

/*
 * A check-mode abort: the helper printed "ptr=<p>" first; the message must
 * be exactly "jpsync: <what> of <p><rest>".
 */
static void expect_check_abort(const char *mode, const char *what, const char *rest)
{
	struct jp_child_result res;
	char want[256];
	void *p = NULL;

	run_helper(mode, "JPSYNC_CHECK=1", NULL, &res);
	CU_ASSERT(res.signaled && res.sig == SIGABRT);
	CU_ASSERT_FATAL(sscanf(res.err, "ptr=%p", &p) == 1);
	snprintf(want, sizeof want, "ptr=%p\njpsync: %s of 0x%lx%s\n", p, what,
		 (unsigned long)(uintptr_t)p, rest);
	CU_ASSERT_STRING_EQUAL(res.err, want);
}

static void test_check_write_after_free(void)
{
	expect_check_abort("check-uaf", "write after free", " (100 bytes): byte 50 changed");
}

static void test_check_overflow(void)
{
	expect_check_abort("check-overflow", "overflow past the end",
			   " (100 bytes): byte 100 changed");
	expect_check_abort("check-overflow-256k", "overflow past the end",
			   " (262144 bytes): byte 262144 changed");
	expect_check_abort("check-overflow-huge", "overflow past the end",
			   " (300000 bytes): byte 300000 changed");
}

static void test_check_underflow(void)
{
	expect_check_abort("check-underflow", "underflow before the start",
			   " (100 bytes): byte -1 changed");
}

static void test_check_double_free(void)
{
	expect_check_abort("check-double", "double free", " (100 bytes)");
}

static void test_check_foreign_free(void)
{
	expect_check_abort("check-foreign", "invalid free", "");
}

/* A size above the request but within the block: free_sized in check
 * mode compares it with the request. */
static void test_check_free_sized(void)
{
	expect_check_abort("check-free-sized",
			   "invalid free_sized (size larger than the block)", "");
}

static void test_stats_at_exit(void)
{
	struct jp_child_result res;
	char path[256], buf[8192];
	char env[300];
	ssize_t n;
	int fd;

	run_helper("stats", "JPSYNC_STATS=1", NULL, &res);
	CU_ASSERT(res.exited && res.status == 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(res.err, "jpsync allocator statistics"));
	CU_ASSERT_PTR_NOT_NULL(strstr(res.err, "in use"));
	CU_ASSERT_PTR_NOT_NULL(strstr(res.err, "mapped"));
	CU_ASSERT_PTR_NOT_NULL(strstr(res.err, "hit%"));

	/* A program that closes stderr before exit (cat, sort): the table
	 * goes to the copy of stderr the allocator made at start. */
	run_helper("stats-close-stderr", "JPSYNC_STATS=1", NULL, &res);
	CU_ASSERT(res.exited && res.status == 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(res.err, "jpsync allocator statistics"));

	snprintf(path, sizeof path, "%s/test-alloc-stats.%d", P_tmpdir, (int)getpid());
	snprintf(env, sizeof env, "JPSYNC_STATS=%s", path);
	unlink(path);
	run_helper("stats", env, NULL, &res);
	CU_ASSERT(res.exited && res.status == 0);
	CU_ASSERT_PTR_NULL(strstr(res.err, "statistics"));
	fd = open(path, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	unlink(path);
	CU_ASSERT_FATAL(n > 0);
	buf[n] = '\0';
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "jpsync allocator statistics"));
}

/*
 * In use, its peak and given back, to the byte, in a fresh process
 * (the peak is a process's): a thousand small blocks and 65 MiB held at
 * once then freed, an 8 MiB block shrunk in place, nine huge blocks
 * through the huge cache.  The helper prints what differs.
 */
static void test_stats_exact(void)
{
	struct jp_child_result res;

	run_helper("stats-exact", NULL, NULL, &res);
	CU_ASSERT(res.exited && res.status == 0);
	CU_ASSERT_STRING_EQUAL(res.err, "");
	if (!(res.exited && res.status == 0))
		printf("\nexit %d: %s\n", res.status, res.err);
}

static void test_unknown_variable_warns_once(void)
{
	struct jp_child_result res;
	const char *first;

	run_helper("stats", "JPSYNC_NO_SUCH_KNOB=1", "JPSYNC_CACHE_N=lots", &res);
	CU_ASSERT(res.exited && res.status == 0);
	first = strstr(res.err, "JPSYNC_NO_SUCH_KNOB");
	CU_ASSERT_PTR_NOT_NULL_FATAL(first);
	CU_ASSERT_PTR_NULL(strstr(first + 1, "JPSYNC_NO_SUCH_KNOB"));
	first = strstr(res.err, "JPSYNC_CACHE_N");
	CU_ASSERT_PTR_NOT_NULL_FATAL(first);
	CU_ASSERT_PTR_NULL(strstr(first + 1, "JPSYNC_CACHE_N"));
}

static void test_tuning_variables(void)
{
	struct jp_child_result res;

	run_helper("check-ok", "JPSYNC_CACHE_N=1", "JPSYNC_MAG_SIZE=1", &res);
	CU_ASSERT(res.exited && res.status == 0);
	run_helper("check-ok", "JPSYNC_CACHE_N=4096", "JPSYNC_MADVISE_MIN=off", &res);
	CU_ASSERT(res.exited && res.status == 0);
	CU_ASSERT_EQUAL(res.err[0], '\0');
}

/* ---- the edges of size_t, free and errno (tests/alloc/alloc-edges.c) ---- */

static char edges_path[4096];

/* alloc-edges MODE in an environment of its own (up to three NAME=value);
 * its exit status, 77 where it could not run. */
static int run_edges(const char *mode, const char *env0, const char *env1,
		     const char *env2, struct jp_child_result *res)
{
	struct exec_arg e = { edges_path, mode, { env0, env1, env2, NULL } };

	snprintf(edges_path, sizeof edges_path, "%s/tests/alloc/alloc-edges", builddir());
	CU_ASSERT_EQUAL_FATAL(jp_test_child(exec_child, &e, res), 0);
	if (!(res->exited && (res->status == 0 || res->status == 77)))
		printf("\nalloc-edges %s (%s %s %s): exit %d signal %d: %s\n", mode,
		       env0 ? env0 : "", env1 ? env1 : "", env2 ? env2 : "",
		       res->status, res->sig, res->err);
	return res->exited ? res->status : -1;
}

/* The environments every walk runs in: default, check mode, and the cache
 * and magazine at their minimum and their maximum (lib/base/options.c). */
static const char *const edge_envs[][3] = {
	{ NULL, NULL, NULL },
	{ "JPSYNC_CHECK=1", NULL, NULL },
	{ "JPSYNC_CACHE_N=1", "JPSYNC_MAG_SIZE=1", NULL },
	{ "JPSYNC_CACHE_N=4096", "JPSYNC_MAG_SIZE=1024", NULL },
	{ "JPSYNC_CHECK=1", "JPSYNC_CACHE_N=1", "JPSYNC_MAG_SIZE=1" },
};

/*
 * Every size from SIZE_MAX - 65536 to SIZE_MAX through every jp_ entry
 * point, with an old block of every class and a huge one: NULL and ENOMEM
 * (EINVAL for a bad alignment), the old blocks untouched and freeable.
 * Check mode's realloc returned the old block for sizes within 40 bytes of
 * SIZE_MAX (its size sum wrapped) before 1.2.
 */
static void test_edges_of_size_t(void)
{
	struct jp_child_result res;

	for (unsigned i = 0; i < sizeof edge_envs / sizeof edge_envs[0]; i++) {
		CU_ASSERT_EQUAL(run_edges("walk", edge_envs[i][0], edge_envs[i][1],
					  edge_envs[i][2], &res), 0);
		CU_ASSERT_EQUAL(res.err[0], '\0');
	}
}

/* free keeps errno: blocks of every class, many of one, huge ones (cached,
 * unmapped, and in check mode quarantined and evicted). */
static void test_free_keeps_errno(void)
{
	struct jp_child_result res;

	for (unsigned i = 0; i < sizeof edge_envs / sizeof edge_envs[0]; i++) {
		CU_ASSERT_EQUAL(run_edges("free-errno", edge_envs[i][0], edge_envs[i][1],
					  edge_envs[i][2], &res), 0);
		CU_ASSERT_EQUAL(res.err[0], '\0');
	}
}

/*
 * At the process's map-count limit: free keeps errno (check mode's
 * quarantine cannot map over a freed huge block there: before 1.2 free left
 * errno ENOMEM and the block readable and writable), allocations work or
 * fail with ENOMEM, old blocks stay intact; check mode says so once and
 * counts it.
 */
static void test_map_count_limit(void)
{
	struct jp_child_result res;
	int rc;

	rc = run_edges("map-limit", NULL, NULL, NULL, &res);
	CU_ASSERT(rc == 0 || rc == 77);
	CU_ASSERT_EQUAL(res.err[0], '\0');
	rc = run_edges("map-limit", "JPSYNC_CHECK=1", "JPSYNC_STATS=1", NULL, &res);
	CU_ASSERT(rc == 0 || rc == 77);
	if (rc == 0) {
		const char *m = "jpsync: check mode: cannot make a freed block inaccessible";
		const char *first = strstr(res.err, m), *line;

		CU_ASSERT_PTR_NOT_NULL(first);
		CU_ASSERT(first == NULL || strstr(first + 1, m) == NULL);
		/* The two blocks freed at the limit, counted in the stats
		 * table; the one freed after it was protected. */
		line = strstr(res.err, "\n  check mode ");
		CU_ASSERT_PTR_NOT_NULL_FATAL(line);
		CU_ASSERT_EQUAL(strtoull(line + strlen("\n  check mode "), NULL, 10), 2);
	}
	if (rc == 77)
		printf("\nmap-count limit not reached here: %s\n", res.err);
}

/* ---- misuse ------------------------------------------------------------ */

static char expected[128];

static void expect_die(void (*fn)(void *), void *arg, const char *what, const void *ptr)
{
	struct jp_child_result res;

	snprintf(expected, sizeof expected, "jpsync: %s of 0x%lx\n", what,
		 (unsigned long)(uintptr_t)ptr);
	CU_ASSERT_EQUAL_FATAL(jp_test_child(fn, arg, &res), 0);
	CU_ASSERT(res.signaled && res.sig == SIGABRT);
	CU_ASSERT_STRING_EQUAL(res.err, expected);
}

static void do_free(void *p)
{
	jp_free(p);
}

static void do_double_free(void *p)
{
	jp_free(p);
	jp_free(p);
}

static void do_double_free_flushed(void *p)
{
	jp_free(p);
	jp_thread_flush();	/* now on its span's list, not in the cache */
	jp_free(p);
}

/* In a thread of its own (whose bin never ran dry): free v[0..32], so
 * that the bin overflows at the 33rd and gives back the 32 it holds, v[0]
 * among them, as one transfer chain. */
static void *free_33(void *arg)
{
	void **v = arg;

	for (int i = 0; i < 33; i++)
		jp_free(v[i]);
	return NULL;
}

static void do_double_free_transferred(void *p)
{
	void *v[33];
	pthread_t t;

	v[0] = p;
	for (int i = 1; i < 33; i++)
		v[i] = jp_alloc(64);
	jp_alloc_trim();	/* no transfer chains from before: room for one */
	if (pthread_create(&t, NULL, free_33, v) != 0)
		return;
	pthread_join(t, NULL);
	jp_free(p);	/* found on the chain */
}

static void test_invalid_free_stack(void)
{
	char local[64] = { 0 };

	expect_die(do_free, local, "invalid free", local);
}

static void test_invalid_free_foreign(void)
{
	void *p = calloc(1, 100);	/* the C library's, not ours */

	expect_die(do_free, p, "invalid free", p);
	free(p);
	expect_die(do_free, (void *)&sizes[3], "invalid free", &sizes[3]);
}

static void test_invalid_free_offset_and_unaligned(void)
{
	char *p = jp_alloc(64), *h = jp_alloc(4 * MiB), *hdr;

	expect_die(do_free, p + 16, "invalid free", p + 16);
	expect_die(do_free, p + 1, "invalid free", p + 1);
	/* Into the header of p's segment: no span there. */
	hdr = (char *)((uintptr_t)p & ~(uintptr_t)(4 * MiB - 1)) + 64;
	expect_die(do_free, hdr, "invalid free", hdr);
	expect_die(do_free, h + 4096, "invalid free", h + 4096);
	expect_die(do_free, h + 1, "invalid free", h + 1);
	jp_free(p);
	jp_free(h);
}

/* free_sized with one byte more than the block holds. */
static void do_free_sized_over(void *p)
{
	jp_free_sized(p, jp_usable_size(p) + 1);
}

/* Sizes whose low 32 bits (2^32 + 64: 64) or whose sum with the block's
 * start (SIZE_MAX) look small: the whole size_t is compared. */
static void do_free_sized_wide(void *p)
{
	jp_free_sized(p, (size_t)(((uint64_t)1 << 32) + 64));	/* 64-bit only */
}

static void do_free_sized_max(void *p)
{
	jp_free_sized(p, SIZE_MAX);
}

static void do_free_sized_twice(void *p)
{
	jp_free_sized(p, 64);
	jp_free_sized(p, 64);
}

static void do_free_sized_offset(void *p)
{
	jp_free_sized((char *)p + 16, 16);
}

/*
 * free_sized checks what free checks (foreign and offset pointers; double
 * frees: the next case), and a size above the block's is misuse; any size up to the
 * usable size frees the block: small (the fast path), above 32 KiB (not
 * cached), huge.
 */
static void test_free_sized_misuse(void)
{
	static const size_t n[] = { 64, 3000, 40000, 5 * MiB };
	char local[64] = { 0 };
	void *small[64], *q;

	for (size_t i = 0; i < JP_ARRAY_LEN(n); i++) {
		void *p = jp_alloc(n[i]);

		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		expect_die(do_free_sized_over, p,
			   "invalid free_sized (size larger than the block)", p);
		if (SIZE_MAX > UINT32_MAX)
			expect_die(do_free_sized_wide, p,
				   "invalid free_sized (size larger than the block)", p);
		expect_die(do_free_sized_max, p,
			   "invalid free_sized (size larger than the block)", p);
		jp_free_sized(p, jp_usable_size(p));
		/* Smaller than asked: the block still goes back to its own
		 * class (the size picks no bin), so a request of the
		 * smaller size is never given it. */
		p = jp_alloc(n[i]);
		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		jp_free_sized(p, 1);
		for (int k = 0; k < 64; k++) {
			small[k] = jp_alloc(1);
			CU_ASSERT_PTR_NOT_EQUAL(small[k], p);
		}
		for (int k = 0; k < 64; k++)
			jp_free(small[k]);
		q = jp_alloc(n[i]);
		CU_ASSERT_PTR_NOT_NULL_FATAL(q);
		CU_ASSERT(jp_usable_size(q) >= n[i]);
		jp_free(q);
	}
	{
		void *p = jp_alloc(64);

		expect_die(do_free_sized_offset, p, "invalid free", (char *)p + 16);
		jp_free_sized(p, 64);
	}
	expect_die(do_free_sized_offset, local, "invalid free", local + 16);
}

static void test_free_sized_double(void)
{
	void *p = jp_alloc(64);

	expect_die(do_free_sized_twice, p, "double free", p);
	jp_free_sized(p, 64);
}

static void test_double_free(void)
{
	void *p, *q;

	p = jp_alloc(64);
	q = jp_alloc(3000);

	expect_die(do_double_free, p, "double free", p);
	expect_die(do_double_free, q, "double free", q);
	expect_die(do_double_free_flushed, p, "double free", p);
	expect_die(do_double_free_transferred, p, "double free", p);
	jp_free(p);
	jp_free(q);
}

/* ---- default mode: damage found off the fast paths ---------------------- */

/* Run fn(arg) in a child; it must abort with exactly want (or, want_prefix
 * set, a message starting with want). */
static void expect_abort_msg(void (*fn)(void *), void *arg, const char *want,
			     bool want_prefix)
{
	struct jp_child_result res;

	CU_ASSERT_EQUAL_FATAL(jp_test_child(fn, arg, &res), 0);
	CU_ASSERT(res.signaled && res.sig == SIGABRT);
	if (want_prefix) {
		CU_ASSERT_EQUAL(strncmp(res.err, want, strlen(want)), 0);
	} else {
		CU_ASSERT_STRING_EQUAL(res.err, want);
	}
	if (!(res.signaled && res.sig == SIGABRT) ||
	    strncmp(res.err, want, strlen(want)) != 0)
		printf("\n  wanted: %s  got (exited %d/%d, signal %d): %s\n", want,
		       res.exited, res.status, res.sig, res.err);
}

#define LARGE	100000	/* class 112 KiB: never in a thread cache */

/* Allocate large blocks until one is followed by another in its span; both
 * stay allocated (the caller frees them). */
static void large_pair(char **p, char **q)
{
	for (int i = 0; i < 64; i++) {
		*p = jp_alloc(LARGE);
		*q = jp_alloc(LARGE);
		if (*q == *p + jp_usable_size(*p))
			return;
		jp_free(*p);
		jp_free(*q);
	}
	CU_FAIL_FATAL("no two adjacent large blocks");
}

static void take_large_until_abort(void)
{
	for (int i = 0; i < 1000; i++)
		if (jp_alloc(LARGE) == NULL)
			_exit(3);
	_exit(0);	/* nothing found: the test fails */
}

static char *dm_p, *dm_q;

static void overflow_32_large(void *arg)
{
	(void)arg;
	jp_free(dm_q);
	memset(dm_p + jp_usable_size(dm_p), 'A', 32);	/* the bug */
	take_large_until_abort();
}

static void underflow_32_large(void *arg)
{
	(void)arg;
	jp_free(dm_p);
	memset(dm_q - 32, 'A', 32);	/* the bug */
	take_large_until_abort();
}

static void write_after_free_large(void *arg)
{
	(void)arg;
	jp_free(dm_p);
	memset(dm_p, 'A', 64);		/* the bug */
	take_large_until_abort();
}

static void test_default_large_damage(void)
{
	char want[256];
	size_t bs;

	large_pair(&dm_p, &dm_q);
	bs = jp_usable_size(dm_p);
	snprintf(want, sizeof want, "jpsync: write into the free block of 0x%lx (%zu bytes): "
		 "bytes 0 to 31 changed (a write after free, or an overflow or underflow "
		 "of a neighbour)\n", (unsigned long)(uintptr_t)dm_q, bs);
	expect_abort_msg(overflow_32_large, NULL, want, false);
	snprintf(want, sizeof want, "jpsync: write into the free block of 0x%lx (%zu bytes): "
		 "bytes %zu to %zu changed (a write after free, or an overflow or underflow "
		 "of a neighbour)\n", (unsigned long)(uintptr_t)dm_p, bs, bs - 32, bs - 1);
	expect_abort_msg(underflow_32_large, NULL, want, false);
	snprintf(want, sizeof want, "jpsync: write into the free block of 0x%lx (%zu bytes): "
		 "bytes 0 to 63 changed (a write after free, or an overflow or underflow "
		 "of a neighbour)\n", (unsigned long)(uintptr_t)dm_p, bs);
	expect_abort_msg(write_after_free_large, NULL, want, false);
	jp_free(dm_p);
	jp_free(dm_q);
}

static void underflow_32_huge(void *arg)
{
	(void)arg;
	memset(dm_p - 32, 'A', 32);	/* the bug */
	jp_free(dm_p);
	_exit(0);
}

static void test_default_huge_underflow(void)
{
	char want[256];

	dm_p = jp_alloc(MiB);
	snprintf(want, sizeof want, "jpsync: underflow before the start of 0x%lx (%zu bytes): "
		 "bytes -32 to -1 changed (of a block above 256 KiB)\n",
		 (unsigned long)(uintptr_t)dm_p, jp_usable_size(dm_p));
	expect_abort_msg(underflow_32_huge, NULL, want, false);
	jp_free(dm_p);
}

/* 1 MiB past a block, over blocks that are free on their spans' lists: the
 * refill that takes one of them again finds it. */
static void *ov_blocks[3000];

static void overflow_1m(void *arg)
{
	char *p = arg;

	memset(p, 'A', MiB + 1000);	/* the bug */
	for (int i = 0; i < 3000; i++)
		ov_blocks[i] = jp_alloc(1000);
	_exit(0);
}

static void test_default_overflow_1m(void)
{
	char *p = NULL;
	int keep = -1;

	/* A 1000-byte block with 1.1 MiB of its own segment above it. */
	for (int i = 0; i < 3000; i++) {
		ov_blocks[i] = jp_alloc(1000);
		if (keep < 0 && i < 1000 &&
		    (((uintptr_t)ov_blocks[i] | (4 * MiB - 1)) + 1) - (uintptr_t)ov_blocks[i] >
		    MiB + 100000)
			keep = i;
	}
	CU_ASSERT_FATAL(keep >= 0);
	p = ov_blocks[keep];
	for (int i = 0; i < 3000; i++)
		if (i != keep)
			jp_free(ov_blocks[i]);
	/* Onto their spans' lists: jp_thread_flush alone leaves the transfer
	 * chains the frees above made as the bin overflowed, which a refill
	 * takes whole, unchecked (jp_alloc(3) promises the lists only), and
	 * on i386 one of them lay in the overflow: SIGSEGV, not the report. */
	jp_alloc_trim();
	expect_abort_msg(overflow_1m, p, "jpsync: write into the free block of 0x", true);
	jp_free(p);
}

/*
 * 1 MiB past a 32-byte block, over free blocks in a thread's bin or on a
 * transfer chain: the pop (or the refill that takes the chain) finds the
 * key in word 1 changed, before the link is followed.  glibc reports the
 * same ("malloc(): unaligned tcache chunk detected"); jp_alloc used to
 * follow the link and die of SIGSEGV at a later jp_alloc.
 */
#define OV_N	4000
static char *ov_a, *ov_small[OV_N];

/* Does p have more than 1 MiB of its own segment above it? */
static bool room_above(const void *p)
{
	return (((uintptr_t)p | (4 * MiB - 1)) + 1) - (uintptr_t)p > MiB + 4096;
}

/* ov_a: a 32-byte block with room above it; ov_small[0..n): the 32-byte
 * blocks above it within 1 MiB (allocated); the others are freed. */
static int ov_small_setup(void)
{
	int n = 0;

	for (int i = 0; i < OV_N; i++)
		ov_small[i] = jp_alloc(32);
	ov_a = NULL;
	for (int i = 0; i < OV_N && ov_a == NULL; i++)
		if (room_above(ov_small[i]) && i + 1 < OV_N &&
		    ov_small[i + 1] == ov_small[i] + jp_usable_size(ov_small[i]))
			ov_a = ov_small[i];
	CU_ASSERT_FATAL(ov_a != NULL);
	for (int i = 0; i < OV_N; i++) {
		if (ov_small[i] == ov_a)
			continue;
		if (ov_small[i] > ov_a && ov_small[i] < ov_a + MiB - 64)
			ov_small[n++] = ov_small[i];
		else
			jp_free(ov_small[i]);
	}
	return n;
}

static void overflow_1m_bin(void *arg)
{
	char *b = arg;

	jp_free(b);			/* the bin's head */
	memset(ov_a, 'A', MiB);		/* the bug */
	(void)!jp_alloc(32);
	(void)!jp_alloc(32);
	_exit(0);
}

static void test_default_overflow_1m_bin(void)
{
	char want[256], *b;
	int n = ov_small_setup();

	CU_ASSERT_FATAL(n > 0);
	b = ov_a + jp_usable_size(ov_a);
	CU_ASSERT_FATAL(ov_small[0] == b);
	/* Words 0 and 1: bytes 0 to 15, or 0 to 7 where a word has 4. */
	snprintf(want, sizeof want, "jpsync: write into the free block of 0x%lx (%zu bytes): "
		 "bytes 0 to %zu changed (a write after free, or an overflow or underflow "
		 "of a neighbour)\n", (unsigned long)(uintptr_t)b, jp_usable_size(b),
		 2 * sizeof(void *) - 1);
	expect_abort_msg(overflow_1m_bin, b, want, false);
	for (int i = 0; i < n; i++)
		jp_free(ov_small[i]);
	jp_free(ov_a);
	jp_alloc_trim();
}

static void overflow_1m_chain(void *arg)
{
	(void)arg;
	memset(ov_a, 'A', MiB);		/* the bug */
	for (int i = 0; i < OV_N; i++)
		(void)!jp_alloc(32);
	_exit(0);
}

static void test_default_overflow_1m_chain(void)
{
	int n = ov_small_setup();

	CU_ASSERT_FATAL(n > 256);
	/* Freed in one go, the bin overflows into transfer chains; the
	 * flush sends the bin's blocks to their spans and leaves the
	 * chains, which the next refill takes first. */
	for (int i = 0; i < n; i++)
		jp_free(ov_small[i]);
	jp_thread_flush();
	expect_abort_msg(overflow_1m_chain, NULL, "jpsync: write into the free block of 0x", true);
	jp_free(ov_a);
	jp_alloc_trim();
}

/* A damaged segment header (an overflow from the memory below it). */
static void damaged_segment(void *arg)
{
	char *p = arg;

	memset((void *)((uintptr_t)p & ~(uintptr_t)(4 * MiB - 1)), 0, 4096);	/* the bug */
	jp_free(p);
	_exit(0);
}

static void test_default_segment_header(void)
{
	char *p = jp_alloc(64), want[200];

	snprintf(want, sizeof want, "jpsync: damaged segment header of 0x%lx: bytes 0 to 7 "
		 "changed (an overflow from the memory below it)\n",
		 (unsigned long)((uintptr_t)p & ~(uintptr_t)(4 * MiB - 1)));
	expect_abort_msg(damaged_segment, p, want, false);
	jp_free(p);
}

/* A free of a pointer into a region that was unmapped: a mapping of the
 * program's, a huge block freed (and unmapped, or in the huge cache), a
 * segment given back by jp_alloc_trim. */
static void test_default_free_unmapped(void)
{
	void *m = mmap(NULL, MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *h = jp_alloc(8 * MiB), *seg[2000];

	CU_ASSERT_FATAL(m != MAP_FAILED);
	munmap(m, MiB);
	expect_die(do_free, (char *)m + 64, "invalid free", (char *)m + 64);
	jp_free(h);
	expect_die(do_free, h, "invalid free", h);
	jp_alloc_trim();
	expect_die(do_free, h, "invalid free", h);
	for (int i = 0; i < 2000; i++)
		seg[i] = jp_alloc(20000);
	for (int i = 0; i < 2000; i++)
		jp_free(seg[i]);
	jp_alloc_trim();
	expect_die(do_free, seg[1000], "invalid free", seg[1000]);
}

/* ---- memory goes back ---------------------------------------------------- */

/* Allocate total bytes in blocks of n, linked through their first word. */
static void **chain_alloc(size_t total, size_t n)
{
	void **head = NULL;

	for (size_t got = 0; got < total; got += n) {
		void **p = jp_alloc(n);

		if (p == NULL)
			break;
		memset(p, 0x11, n);
		*p = head;
		head = p;
	}
	return head;
}

static void chain_free(void **head)
{
	while (head != NULL) {
		void **next = *head;

		jp_free(head);
		head = next;
	}
}

static void test_trim_gives_back(void)
{
	size_t total = mem_size(1024);
	size_t base, peak, after;
	struct jp_alloc_stats st0, st1;
	void **a, **b;

	jp_alloc_trim();
	stats(&st0);
	base = rss_now();
	a = chain_alloc(total / 2, 64);
	b = chain_alloc(total / 2, 200);
	peak = rss_now();
	chain_free(a);
	chain_free(b);
	jp_alloc_trim();
	after = rss_now();
	stats(&st1);
	/* Given back: by madvise over time or by the trim. */
	CU_ASSERT(st1.trimmed - st0.trimmed >= total / 2);
	if (rss_checks()) {
		CU_ASSERT(peak - base >= total * 9 / 10);
		CU_ASSERT(after < base + (peak - base) / 10);
		if (total >= 1024 * MiB)
			CU_ASSERT(after < peak / 10);
	}
}

/* jp_alloc_trim() returns the bytes it gave back: the RSS it dropped. */
static void test_trim_returns_bytes(void)
{
	size_t total = 8 * MiB, before, after, got;
	void **a, *h;

	jp_alloc_trim();
	a = chain_alloc(total / 2, 1024);
	h = jp_alloc(2 * MiB);	/* kept by the huge cache when freed */
	memset(h, 1, 2 * MiB);
	chain_free(a);
	a = chain_alloc(total / 2, 96);
	chain_free(a);
	jp_free(h);
	before = rss_now();
	got = jp_alloc_trim();
	after = rss_now();
	/* Most of it was free and resident (a part may have gone back by
	 * madvise within the second already). */
	CU_ASSERT(got > 0);
	CU_ASSERT(got >= total / 4);
	if (rss_checks()) {
		size_t drop = before > after ? before - after : 0;

		printf("(gave back %zu KiB, RSS down %zu KiB) ", got >> 10, drop >> 10);
		CU_ASSERT(drop >= got / 4 * 3);
		CU_ASSERT(drop <= got + 2 * MiB);
	}
	/* Nothing left to give back. */
	CU_ASSERT(jp_alloc_trim() < MiB);
}

static void test_cross_class_reuse(void)
{
	size_t total = mem_size(256);
	size_t base, rss1, rss2, peak;
	void **a;

	jp_alloc_trim();
	base = rss_now();
	a = chain_alloc(total, 32);
	rss1 = rss_now();
	chain_free(a);
	a = chain_alloc(total, 4096);
	rss2 = rss_now();
	chain_free(a);
	peak = rss1 > rss2 ? rss1 : rss2;
	if (rss_checks())
		CU_ASSERT(peak - base <= total * 13 / 10 + 4 * MiB);
	jp_alloc_trim();
}

/* Free the n blocks of v in a shuffled order (a consumer thread). */
struct shuffled {
	void **v;
	size_t n;
};

static void *free_shuffled(void *arg)
{
	struct shuffled *a = arg;
	uint64_t s = 88172645463325252ull;

	for (size_t i = a->n - 1; i > 0; i--) {
		size_t j;
		void *t;

		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		j = (size_t)(s % (i + 1));
		t = a->v[i];
		a->v[i] = a->v[j];
		a->v[j] = t;
	}
	for (size_t i = 0; i < a->n; i++)
		jp_free(a->v[i]);
	return NULL;
}

/*
 * Blocks that another thread freed in random order sit on transfer chains
 * of the allocating thread's arena, a few hundred of them, one in almost
 * every span of their class.  Before a new segment is mapped for another
 * class, the chains go back, so the spans they kept serve that class.
 */
static void test_chains_release_spans(void)
{
	struct shuffled a = { .n = (8 * MiB) / 64 };
	size_t m = (6 * MiB) / 4096;
	struct jp_alloc_stats st0, st1;
	void **w = malloc(m * sizeof *w);
	pthread_t t;

	a.v = malloc(a.n * sizeof *a.v);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a.v);
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	jp_alloc_trim();	/* little spare room in the segments */
	for (size_t i = 0; i < a.n; i++)
		CU_ASSERT_PTR_NOT_NULL_FATAL(a.v[i] = jp_alloc(64));
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, free_shuffled, &a), 0);
	pthread_join(t, NULL);
	jp_thread_flush();
	stats(&st0);
	for (size_t i = 0; i < m; i++)
		CU_ASSERT_PTR_NOT_NULL_FATAL(w[i] = jp_alloc(4096));
	stats(&st1);
	/* The 8 MiB of 64-byte spans serve the 6 MiB of 4 KiB blocks: no
	 * new segment. */
	CU_ASSERT(st1.mapped < st0.mapped + 4 * MiB);
	for (size_t i = 0; i < m; i++)
		jp_free(w[i]);
	free(w);
	free(a.v);
	jp_alloc_trim();
}

/* mincore fails with ENOMEM on a page that is not mapped. */
static bool page_unmapped(const void *p)
{
	unsigned char vec[1];

	errno = 0;
	return mincore((void *)((uintptr_t)p & ~(uintptr_t)4095), 4096, vec) == -1 &&
	       errno == ENOMEM;
}

/*
 * A freed huge block is unmapped at once when it is above the huge cache's
 * bound (64 MiB at most), and by jp_alloc_trim() when the cache kept it.
 */
static void test_huge_unmapped_on_free(void)
{
	size_t n = rss_checks() ? 64 * MiB : 16 * MiB;
	size_t big = 65 * MiB;
	struct jp_alloc_stats st0, st1, st2;
	size_t r0, r1, r2;
	char *p;

	jp_alloc_trim();	/* an empty huge cache */
	stats(&st0);
	r0 = rss_now();
	/* Above any bound of the cache: unmapped by the free. */
	p = jp_alloc(big);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	p[0] = 1;
	p[big - 1] = 1;
	jp_free(p);
	CU_ASSERT(page_unmapped(p));
	CU_ASSERT(page_unmapped(p + big - 1));
	stats(&st1);
	CU_ASSERT_EQUAL(st1.mapped, st0.mapped);

	p = jp_alloc(n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	memset(p, 1, n);
	r1 = rss_now();
	stats(&st1);
	CU_ASSERT_EQUAL(st1.huge_count, st0.huge_count + 1);
	CU_ASSERT(st1.mapped >= st0.mapped + n);
	jp_free(p);
	stats(&st2);
	CU_ASSERT_EQUAL(st2.huge_count, st0.huge_count);
	/* Unmapped now, or kept by the cache until the trim. */
	CU_ASSERT(jp_alloc_trim() >= (page_unmapped(p) ? 0 : n));
	r2 = rss_now();
	stats(&st2);
	CU_ASSERT_EQUAL(st2.mapped, st0.mapped);
	CU_ASSERT(page_unmapped(p));
	CU_ASSERT(page_unmapped(p + n - 1));
	if (rss_checks()) {
		CU_ASSERT(r1 >= r0 + n * 9 / 10);
		CU_ASSERT(r2 <= r0 + MiB);
	}
}

/* A freed huge block's mapping serves the next one: same place, no new
 * mapping; calloc still gets zeros; realloc growth moves into it. */
static void test_huge_cache_reuse(void)
{
	struct jp_alloc_stats st0, st1;
	unsigned char *p, *q, *r;
	bool zero = true;

	jp_alloc_trim();
	p = jp_alloc(2 * MiB);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	memset(p, 0xab, 2 * MiB);
	jp_free(p);
	stats(&st0);
	q = jp_alloc(2 * MiB - 4096);
	stats(&st1);
	CU_ASSERT_PTR_EQUAL(q, p);
	CU_ASSERT_EQUAL(st1.mapped, st0.mapped);
	CU_ASSERT(jp_usable_size(q) == jp_good_size(2 * MiB - 4096));
	jp_free(q);
	q = jp_calloc(1, MiB + 5);
	CU_ASSERT_PTR_EQUAL_FATAL(q, p);
	for (size_t i = 0; i < jp_usable_size(q); i++)
		zero &= q[i] == 0;
	CU_ASSERT(zero);
	/* A smaller request than the cached mapping, grown within it. */
	memset(q, 7, MiB + 5);
	r = jp_realloc(q, 2 * MiB);
	CU_ASSERT_PTR_EQUAL(r, q);
	CU_ASSERT(r[0] == 7 && r[MiB + 4] == 7);
	memset(r, 8, 2 * MiB);
	jp_free(r);
	/* Growth: in place, or into the cached mapping; no new mapping. */
	jp_alloc_trim();
	p = jp_alloc(3 * MiB);
	q = jp_alloc(MiB);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(q);
	memset(q, 6, MiB);
	jp_free(p);	/* cached: 3 MiB and a page */
	stats(&st0);
	r = jp_realloc(q, 3 * MiB - 8192);
	stats(&st1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT(r == q || r == p);
	CU_ASSERT(st1.mapped <= st0.mapped + 2 * MiB);
	CU_ASSERT(r[0] == 6 && r[MiB - 1] == 6);
	memset(r, 1, 3 * MiB - 8192);
	jp_free(r);
	CU_ASSERT(jp_alloc_trim() > 0);
}

/*
 * Taking a mapping from the huge cache gives no pages back (issue 26): a
 * realloc growth chain that restarts in a freed chain's mapping, or a
 * block freed and a like one allocated, would otherwise madvise pages
 * away and fault them in again at once.  Only huge blocks here, after a
 * trim: the segment layer's purge tick (its own clock) has nothing to
 * give back, and the huge cache gives memory back by unmapping, so any
 * decommit counted in these loops is one made on the way.
 */
static void test_realloc_chain_no_decommit(void)
{
	/* Four interleaved chains, as alloc-bench's realloc workload, from
	 * 320 KiB (just above the largest class) up to 2, 6, 16 and 64 MiB,
	 * x1.5 a step, the new bytes written; freed at the top, restarted. */
	static const size_t top[4] = { 2 * MiB, 6 * MiB, 16 * MiB, 64 * MiB };
	size_t div = rss_checks() ? 1 : 4;
	struct jp_alloc_stats st0, st1;
	struct {
		unsigned char *p;
		size_t n;
	} c[4] = { { NULL, 0 } };

	jp_alloc_trim();
	stats(&st0);
	for (unsigned i = 0; i < 240; i++) {
		unsigned k = i % 4;
		int tag = (int)k + 1;

		if (c[k].p == NULL) {
			c[k].n = 320 << 10;
			c[k].p = jp_alloc(c[k].n);
			CU_ASSERT_PTR_NOT_NULL_FATAL(c[k].p);
			memset(c[k].p, tag, c[k].n);
		} else if (c[k].n >= top[k] / div) {
			CU_ASSERT_EQUAL(c[k].p[c[k].n - 1], tag);
			jp_free(c[k].p);
			c[k].p = NULL;
		} else {
			size_t n = c[k].n + c[k].n / 2;
			unsigned char *p = jp_realloc(c[k].p, n);

			CU_ASSERT_PTR_NOT_NULL_FATAL(p);
			CU_ASSERT_EQUAL(p[0], tag);
			CU_ASSERT_EQUAL(p[c[k].n - 1], tag);
			memset(p + c[k].n, tag, n - c[k].n);
			c[k].p = p;
			c[k].n = n;
		}
	}
	stats(&st1);
	for (unsigned k = 0; k < 4; k++)
		jp_free(c[k].p);
	CU_ASSERT_EQUAL(st1.decommits - st0.decommits, 0);
	CU_ASSERT_EQUAL(st1.decommit_bytes - st0.decommit_bytes, 0);
	jp_alloc_trim();
}

/*
 * mimalloc-bench's malloc-large: 20 live blocks of 5-25 MiB, each written
 * whole, one freed and another allocated at a time.  No decommit (see
 * above), and RSS within what is live plus what the huge cache may keep
 * resident (8 MiB and a sixteenth of what is mapped: 33 MiB here) and a
 * block's spare: 1.0.0 unmapped every freed block, and this loop peaked
 * 25 MiB above its live blocks when the fix was made.
 */
static void test_large_loop_no_decommit(void)
{
	size_t div = rss_checks() ? 1 : 4;
	size_t live = 0, base, peak = 0, sz[20];
	struct jp_alloc_stats st0, st1;
	unsigned char *p[20];
	uint32_t x = 2463534242u;

	jp_alloc_trim();
	base = rss_now();
	stats(&st0);
	for (unsigned i = 0; i < 20 + 60; i++) {
		unsigned k = i < 20 ? i : 0;
		size_t r;

		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		if (i >= 20) {
			k = x % 20;
			live -= sz[k];
			jp_free(p[k]);
		}
		r = (5 * MiB + (size_t)(x >> 8) % (20 * MiB)) / div;
		p[k] = jp_alloc(r);
		CU_ASSERT_PTR_NOT_NULL_FATAL(p[k]);
		memset(p[k], (int)i, r);
		sz[k] = r;
		live += r;
		if (rss_checks()) {
			size_t now = rss_now();

			if (now > base + live && now - base - live > peak)
				peak = now - base - live;
		}
	}
	stats(&st1);
	for (unsigned k = 0; k < 20; k++)
		jp_free(p[k]);
	CU_ASSERT_EQUAL(st1.decommits - st0.decommits, 0);
	CU_ASSERT_EQUAL(st1.decommit_bytes - st0.decommit_bytes, 0);
	if (rss_checks()) {
		printf("(RSS above the live blocks: %zu MiB at most) ", peak / MiB);
		CU_ASSERT(peak <= 48 * MiB);
	}
	jp_alloc_trim();
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

	jp_free(p);
	CU_ASSERT_EQUAL_FATAL(pipe(fds), 0);
	CU_ASSERT_EQUAL(jp_alloc_stats_print(fds[1]), 0);
	close(fds[1]);
	n = read(fds[0], buf, sizeof buf - 1);
	close(fds[0]);
	CU_ASSERT_FATAL(n > 0);
	buf[n] = '\0';
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

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Resident pages of [p, p + n), by mincore. */
static size_t resident_bytes(const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095;
	size_t pages = ((uintptr_t)p + n - a + 4095) / 4096, res = 0;
	unsigned char *vec = malloc(pages);

	if (vec == NULL || mincore((void *)a, pages * 4096, vec) != 0) {
		free(vec);
		return SIZE_MAX;
	}
	for (size_t i = 0; i < pages; i++)
		res += vec[i] & 1;
	free(vec);
	return res * 4096;
}

/*
 * A big block that goes to the huge cache leaves its mapping there and its
 * pages resident (no madvise on the way in or out: issue 26); the next
 * block of the size takes the mapping, and a calloc of it still gets
 * zeros.  The trim unmaps it.
 */
static void test_huge_cache_keeps_pages(void)
{
	size_t n = 6 * MiB;
	struct jp_alloc_stats st0, st1;
	bool zero = true;
	char *p, *q;

	jp_alloc_trim();
	p = jp_alloc(n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	memset(p, 1, n);
	stats(&st0);
	jp_free(p);
	CU_ASSERT_FALSE(page_unmapped(p));	/* the cache holds the mapping */
	CU_ASSERT(resident_bytes(p, n) >= n / 2);
	q = jp_calloc(1, n);
	stats(&st1);
	CU_ASSERT_PTR_EQUAL_FATAL(q, p);
	for (size_t i = 0; i < n; i++)
		zero &= q[i] == 0;
	CU_ASSERT(zero);
	CU_ASSERT_EQUAL(st1.decommits, st0.decommits);
	jp_free(q);
	CU_ASSERT(jp_alloc_trim() >= n);
	CU_ASSERT(page_unmapped(p));
}

/*
 * A cached mapping with resident pages more than 8 times a request is not
 * taken for it (the block would hold them, out of the cache's bound, for
 * its life): the request gets a mapping of its own; a request within the
 * bound takes the cached one, resident pages and all.
 */
static void test_huge_cache_bounds_spare(void)
{
	size_t big = 4 * MiB, small = 320 << 10, mid = MiB;
	char *p, *q, *r;

	jp_alloc_trim();
	p = jp_alloc(big);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	memset(p, 1, big);
	jp_free(p);		/* cached, resident */
	q = jp_alloc(small);
	CU_ASSERT_PTR_NOT_NULL_FATAL(q);
	CU_ASSERT_PTR_NOT_EQUAL(q, p);
	CU_ASSERT(resident_bytes(p, big) >= big / 2);	/* still cached */
	r = jp_alloc(mid);
	CU_ASSERT_PTR_EQUAL(r, p);
	CU_ASSERT(r[0] == 1 || r[0] == 0);	/* readable */
	jp_free(q);
	jp_free(r);
	jp_alloc_trim();
}

/*
 * Memory a program frees and takes again within a second (a producer
 * ahead of its consumers, a phase that repeats) stays resident, even
 * above the 8 MiB floor of the dirty budget: no madvise, and no page
 * faults, for each swing.  Four swings of 16 MiB within a second see at
 * most one purge tick, which can take at most what was freed before it
 * and is still free (one swing).  A little more has been seen once,
 * under qemu-aarch64 (17,728 KiB for 16 MiB swings): probably a tick that
 * unmapped emptied segments, so that the next swing mapped new ones and
 * the dirty slices went first (purge_before_map, above the budget); the
 * bound allows half a swing more.  The 1.0 code gave back every swing
 * above 8 MiB, twice a swing in all.
 * (A machine too slow for four swings in a second says so and checks
 * nothing.)
 */
static void test_swings_keep_pages(void)
{
	size_t total = rss_checks() ? 16 * MiB : 4 * MiB;
	struct jp_alloc_stats st0, st1;
	double t0, took;
	void **a;

	jp_alloc_trim();
	stats(&st0);
	t0 = now_s();
	for (int i = 0; i < 4; i++) {
		a = chain_alloc(total, 64);
		chain_free(a);
		jp_thread_flush();
	}
	took = now_s() - t0;
	stats(&st1);
	printf("(%.2f s, %zu KiB given back) ", took,
	       (size_t)(st1.trimmed - st0.trimmed) >> 10);
	if (took < 0.9) {
		CU_ASSERT(st1.trimmed - st0.trimmed < total + total / 2);
	} else {
		printf("(too slow to tell) ");
	}
	jp_alloc_trim();
}

/*
 * Memory freed and not taken again goes back within two purge ticks
 * (two seconds) once the allocator runs again: its pages by madvise,
 * its empty segments unmapped (one is kept as the spare).
 */
static void test_idle_memory_goes_back(void)
{
	size_t total = mem_size(32) < 8 * MiB ? 8 * MiB : mem_size(32);
	struct jp_alloc_stats st0, st1, st2;
	void **a;
	bool back = false;

	jp_alloc_trim();
	stats(&st0);
	a = chain_alloc(total, 128);
	stats(&st1);
	chain_free(a);
	jp_thread_flush();
	for (int i = 0; i < 40 && !back; i++) {
		void *p;

		usleep(150 * 1000);
		/* Some work for the allocator: a span of 320 KiB taken and
		 * released (blocks above 32 KiB are not cached). */
		p = jp_alloc(40000);
		jp_free(p);
		stats(&st2);
		/* All but what the span above and the transfer chains keep
		 * (a few spans of 64 KiB). */
		back = st2.trimmed - st0.trimmed >= total - 2 * MiB &&
		       st2.mapped <= st0.mapped + 8 * MiB;
	}
	CU_ASSERT(st1.mapped >= st0.mapped + total / 2);
	CU_ASSERT(back);
	jp_alloc_trim();
}

/* The thread of test_first_free_no_false_sharing: frees the block it is
 * given, then allocates one of the same size. */
static void *free_then_alloc(void *arg)
{
	void **v = arg;

	jp_free(v[0]);
	v[1] = jp_alloc(16);
	return NULL;
}

/*
 * A thread's first free of a block another thread allocated does not
 * make that block the thread's next one: it would share a cache line with
 * the blocks its owner still writes (passive false sharing, as in
 * mimalloc-bench's cache-scratch).
 */
static void test_first_free_no_false_sharing(void)
{
	void *mine[4], *v[2];
	pthread_t t;

	for (int i = 0; i < 4; i++)
		mine[i] = jp_alloc(16);
	v[0] = jp_alloc(16);
	CU_ASSERT_PTR_NOT_NULL_FATAL(v[0]);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, free_then_alloc, v), 0);
	pthread_join(t, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(v[1]);
	CU_ASSERT_NOT_EQUAL((uintptr_t)v[1] / 64, (uintptr_t)v[0] / 64);
	for (int i = 0; i < 4; i++) {
		CU_ASSERT_NOT_EQUAL((uintptr_t)v[1] / 64, (uintptr_t)mine[i] / 64);
		jp_free(mine[i]);
	}
	jp_free(v[1]);
}

/* A thread that keeps one block of each of the one-slice classes. */
static void *keep_one_per_class(void *arg)
{
	void **v = arg;

	for (size_t i = 0; i < 32; i++)
		v[i] = jp_alloc(i < 4 ? 16 * (i + 1) : (size_t)(i % 4 + 5) << (i / 4 + 3));
	return NULL;
}

/*
 * Threads that come and go, one at a time, each leaving a block of 32
 * classes live: they keep to the same shard, so their blocks share spans
 * (a round robin over the shards would give each thread spans of its
 * own: 8 x 32 x 64 KiB).
 */
static void test_thread_churn_shares_spans(void)
{
	enum { T = 16 };
	void *v[T][32];
	struct jp_alloc_stats st0, st1;

	jp_alloc_trim();
	stats(&st0);
	for (int t = 0; t < T; t++) {
		pthread_t th;

		CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, keep_one_per_class, v[t]), 0);
		pthread_join(th, NULL);
	}
	stats(&st1);
	CU_ASSERT(st1.mapped <= st0.mapped + 8 * MiB);
	for (int t = 0; t < T; t++)
		for (int i = 0; i < 32; i++) {
			CU_ASSERT_PTR_NOT_NULL(v[t][i]);
			jp_free(v[t][i]);
		}
	jp_alloc_trim();
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

static CU_TestInfo thread_tests[] = {
	{ "cross-thread frees at scale (producers/consumers)", test_cross_thread_frees },
	{ "thread churn leaves RSS flat", test_thread_churn_rss_flat },
	{ "a thread that exits returns its cache", test_thread_exit_returns_cache },
	{ "jp_thread_flush empties the caller's cache", test_thread_flush },
	{ "a bin grows for a thread that allocates and frees in bulk", test_bin_grows },
	{ "bulk rounds with remote frees from 8 threads", test_bulk_under_contention },
	{ "stress: mixed sizes from 8 threads", test_stress_mixed_sizes },
	{ "fork while other threads allocate", test_fork_while_allocating },
	{ "fork from a signal handler that interrupted the allocator", test_fork_in_signal_handler },
	{ "fork from a signal handler inside another fork's prepare handler", test_fork_nested_in_prepare },
	{ "stress: forks nested at random points of other forks", test_fork_nested_stress },
	{ "stress: fork while 6 threads are inside the allocator", test_fork_threads_in_malloc },
	{ "dlopen by a program not linked with libjpsync", test_dlopen_by_unlinked_program },
	{ NULL, NULL },
};

static CU_TestInfo memory_tests[] = {
	{ "trim after 1 GiB in small blocks: RSS < 10% of peak", test_trim_gives_back },
	{ "jp_alloc_trim returns the bytes given back, as the RSS drop", test_trim_returns_bytes },
	{ "memory freed in one class serves another", test_cross_class_reuse },
	{ "transfer chains do not keep spans from another class", test_chains_release_spans },
	{ "fork() racing getline and fflush(NULL) in other threads: no deadlock", test_fork_stdio },
	{ "huge blocks are unmapped on free (beyond the cache, or by the trim)", test_huge_unmapped_on_free },
	{ "the huge cache: a freed mapping serves the next huge block", test_huge_cache_reuse },
	{ "the huge cache keeps a big block's mapping and pages; calloc of it is zero", test_huge_cache_keeps_pages },
	{ "a cached mapping is not taken for a block 8 times smaller than its pages", test_huge_cache_bounds_spare },
	{ "realloc growth chains of huge blocks make no madvise", test_realloc_chain_no_decommit },
	{ "malloc-large's loop (5-25 MiB blocks): no madvise, RSS bounded", test_large_loop_no_decommit },
	{ "memory freed and taken again within a second stays resident", test_swings_keep_pages },
	{ "memory freed and left goes back within two seconds", test_idle_memory_goes_back },
	{ "threads that come and go share spans", test_thread_churn_shares_spans },
	{ "a thread's first free of another's block: no shared cache line", test_first_free_no_false_sharing },
	{ NULL, NULL },
};

static CU_TestInfo misuse_tests[] = {
	{ "invalid free: stack address", test_invalid_free_stack },
	{ "invalid free: the C library's pointer, a static", test_invalid_free_foreign },
	{ "invalid free: offset, unaligned, past the end", test_invalid_free_offset_and_unaligned },
	{ "double free (in the cache, flushed, on a transfer chain)", test_double_free },
	{ "free_sized: a size above the block, offset, foreign", test_free_sized_misuse },
	{ "free_sized: double free", test_free_sized_double },
	{ "default mode: 32-byte overflow, underflow, write after free of large blocks", test_default_large_damage },
	{ "default mode: 32-byte underflow of a huge block", test_default_huge_underflow },
	{ "default mode: 1 MiB overflow past a block, over free blocks", test_default_overflow_1m },
	{ "default mode: 1 MiB overflow over a block in a thread's bin", test_default_overflow_1m_bin },
	{ "default mode: 1 MiB overflow over blocks on transfer chains", test_default_overflow_1m_chain },
	{ "default mode: a damaged segment header", test_default_segment_header },
	{ "default mode: a free into an unmapped region", test_default_free_unmapped },
	{ "JPSYNC_CHECK=1: a correct program runs", test_check_ok },
	{ "JPSYNC_CHECK=1: aligned blocks, then plain ones of their size", test_check_aligned_then_plain },
	{ "JPSYNC_CHECK=1: realloc of every kind, in place at the same size", test_check_realloc },
	{ "JPSYNC_CHECK=1: write after free", test_check_write_after_free },
	{ "JPSYNC_CHECK=1: overflow past the end (small, 256 KiB, huge)", test_check_overflow },
	{ "JPSYNC_CHECK=1: underflow before the start", test_check_underflow },
	{ "JPSYNC_CHECK=1: double free", test_check_double_free },
	{ "JPSYNC_CHECK=1: foreign free", test_check_foreign_free },
	{ "JPSYNC_CHECK=1: free_sized above the requested size", test_check_free_sized },
	{ "JPSYNC_STATS=1 and =path print at exit", test_stats_at_exit },
	{ "stats: in use, peak and given back exact, huge blocks freed", test_stats_exact },
	{ "an unknown or malformed JPSYNC_ variable warns once", test_unknown_variable_warns_once },
	{ "tuning variables at their limits", test_tuning_variables },
	{ "every size from SIZE_MAX - 65536 fails with ENOMEM, old blocks intact", test_edges_of_size_t },
	{ "free keeps errno (every class, huge, check mode's quarantine)", test_free_keeps_errno },
	{ "at the map-count limit: free keeps errno, check mode degrades", test_map_count_limit },
	{ "JPSYNC_CACHE_BYTES bounds what the caches grow by", test_cache_bytes_bound },
	{ NULL, NULL },
};

static CU_SuiteInfo suites[] = {
	{ "alloc", NULL, NULL, NULL, NULL, alloc_tests },
	{ "alloc-threads", NULL, NULL, NULL, NULL, thread_tests },
	{ "alloc-memory", NULL, NULL, NULL, NULL, memory_tests },
	{ "alloc-misuse", NULL, NULL, NULL, NULL, misuse_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	/*
	 * A case that cannot run here is not registered, rather than run as
	 * an empty pass; each one left out prints a line naming it and why.
	 */
	if (jp_test_sanitized() || jp_test_on_valgrind()) {
		/* fork() from a handler that interrupted the allocator: the
		 * sanitizer runtimes and valgrind intercept fork and signal
		 * delivery themselves; this is checked natively. */
		jp_test_unregister(thread_tests, test_fork_in_signal_handler,
				   "sanitizers and valgrind: fork in a signal handler");
		jp_test_unregister(thread_tests, test_fork_nested_stress,
				   "sanitizers and valgrind: fork in a signal handler");
	}
	if (jp_test_sanitized())
		/* The helper itself is built with the sanitizer here. */
		jp_test_unregister(thread_tests, test_fork_nested_in_prepare,
				   "sanitizers: fork in a signal handler");
	if (jp_test_sanitized())
		/* At the map-count limit the sanitizer runtime's own mmap
		 * fails, and it dies of that before the allocator is asked. */
		jp_test_unregister(misuse_tests, test_map_count_limit,
				   "sanitizers: their runtime cannot map at the map-count limit");
	if (jp_test_sanitized())
		/* The sanitizer runtime must come first in an unlinked program. */
		jp_test_unregister(thread_tests, test_dlopen_by_unlinked_program,
				   "sanitizer build: the runtime must load first");
	if (jp_test_on_drd()) {
		/* After the fork stress, every lock's happens-before
		 * annotation costs drd milliseconds, and the memory cases that
		 * follow took more than 20 minutes each in CI (vgdb: always
		 * in the annotation); with the stress left out the whole suite
		 * takes 106 s.  memcheck and helgrind run both. */
		jp_test_unregister(thread_tests, test_fork_threads_in_malloc,
				   "drd: makes every later lock annotation slow");
		jp_test_unregister(memory_tests, test_trim_gives_back,
				   "drd: 130,000 annotated frees, minutes");
	}
	if (jp_test_on_memcheck()) {
		/* memcheck keeps no thread caches and no huge cache (a freed
		 * block must die at once): the behaviour is not there.
		 * helgrind and drd run these. */
		jp_test_unregister(thread_tests, test_bin_grows,
				   "memcheck: no thread caches");
		jp_test_unregister(alloc_tests, test_cache_serves_up_to_32k,
				   "memcheck: no thread caches");
		jp_test_unregister(memory_tests, test_huge_cache_reuse,
				   "memcheck: no huge cache");
		jp_test_unregister(memory_tests, test_huge_cache_keeps_pages,
				   "memcheck: no huge cache");
		jp_test_unregister(alloc_tests, test_stats_exact,
				   "memcheck: no thread caches, no huge cache");
		jp_test_unregister(memory_tests, test_huge_cache_bounds_spare,
				   "memcheck: no huge cache");
		jp_test_unregister(memory_tests, test_realloc_chain_no_decommit,
				   "memcheck: no huge cache");
		jp_test_unregister(memory_tests, test_large_loop_no_decommit,
				   "memcheck: no huge cache");
		/* Reading the freed block is what memcheck reports (it catches
		 * the double free itself): not a clean run. */
		jp_test_unregister(misuse_tests, test_double_free,
				   "memcheck: it reports the read of the freed block");
		jp_test_unregister(misuse_tests, test_free_sized_double,
				   "memcheck: it reports the read of the freed block");
	}
	if (jp_test_on_valgrind()) {
		/* The exec'd helper would run without valgrind: nothing to
		 * learn that the native run does not. */
		jp_test_unregister(misuse_tests, test_check_write_after_free,
				   "valgrind: the helper runs outside it");
	}
	if (jp_test_emulated()) {
		/* RSS is the emulator process's: each guest thread is a host
		 * thread with qemu's own state, which outlives it. */
		jp_test_unregister(thread_tests, test_thread_churn_rss_flat,
				   "qemu-user: RSS counts the emulator's per-thread memory");
		/* qemu-user aborts now and then when a guest forks while other
		 * guest threads run ("cpu_exec: assertion failed: (cpu ==
		 * current_cpu)"), a bug of the emulator that other projects'
		 * suites meet too.  The fork cases with one thread stay. */
		jp_test_unregister(thread_tests, test_fork_while_allocating,
				   "qemu-user: fork while threads run aborts the emulator");
		jp_test_unregister(thread_tests, test_fork_threads_in_malloc,
				   "qemu-user: fork while threads run aborts the emulator");
		jp_test_unregister(memory_tests, test_fork_stdio,
				   "qemu-user: fork while threads run aborts the emulator");
	}
	return jp_test_run(suites);
}
