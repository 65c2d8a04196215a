/*
 * test-alloc-memory.c - jp_alloc(3) gives memory back: trim, RSS, the huge
 * cache, decommit, idle return, spans shared between threads (black-box,
 * through the shared library).
 *
 * Cases that measure RSS skip their ratio assertions under valgrind and the
 * sanitizers (shadow memory distorts RSS) but still run the functions.
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
		/* Under qemu-user (arm64, 2026-12-04) the RSS after the trim
		 * stayed about 60 MiB up with os.c's aligned-mapping hint and
		 * not without it; a plain program mapping at a hint did not
		 * show it, and the cause in the emulator was not found.  RSS
		 * is the emulator's there (test-alloc-threads leaves out its
		 * RSS case for the same reason); the guest's mapping is gone,
		 * as page_unmapped and the mapped figure above say. */
		if (!jp_test_emulated())
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
 * Taking a mapping from the huge cache gives no pages back: a
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
 * pages resident (no madvise on the way in or out); the next
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
	/* Past the mapping's head, which the cache keeps inaccessible (and
	 * which qemu-user's mincore then calls unmapped). */
	CU_ASSERT_FALSE(page_unmapped(p + n / 2));	/* the cache holds the mapping */
	CU_ASSERT(resident_bytes(p + (64 << 10), n - (64 << 10)) >= n / 2);
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
 * A cached mapping bigger than a request by a segment (4 MiB) and more is
 * split at the segment boundary past the block: the block takes its start,
 * the tail goes back to the cache with its pages and serves the next
 * block.  (Before, a mapping more than twice the request was passed over
 * and the request mapped fresh pages: malloc-large's 5-25 MiB blocks
 * faulted in 1.7 times as many pages.)
 */
static void test_huge_cache_splits(void)
{
	size_t big = 8 * MiB, small = MiB, mid = 3 * MiB;
	char *p, *q, *r;

	jp_alloc_trim();
	p = jp_alloc(big);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	memset(p, 1, big);
	jp_free(p);		/* cached, resident */
	q = jp_alloc(small);
	CU_ASSERT_PTR_EQUAL(q, p);	/* the start of the cached mapping */
	r = jp_alloc(mid);
	CU_ASSERT_PTR_EQUAL(r, p + 4 * MiB);	/* its tail */
	if (r != NULL)
		CU_ASSERT(resident_bytes(r, mid) >= mid - 4096);
	jp_free(q);
	jp_free(r);
	jp_alloc_trim();
}

/*
 * A cached mapping smaller than a request that cannot grow where it is
 * (another mapping follows it) has its pages moved to a new place big
 * enough (mremap), so that they serve the block's start; before, the
 * request mapped fresh pages and faulted them all in.
 */
static void test_huge_cache_moves_pages(void)
{
	size_t n = 2 * MiB, m = 3 * MiB, page = (size_t)sysconf(_SC_PAGESIZE);
	char *p, *q, *end;
	void *block;

	jp_alloc_trim();
	p = jp_alloc(n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	memset(p, 1, n);
	jp_free(p);		/* cached: [p - a page, p + n) */
	end = p + ((n + page - 1) & ~(page - 1));
	/* Where the kernel (or an emulator) does not honour the flag, the
	 * page lands elsewhere: it blocks nothing, and the mapping may grow
	 * where it is, which keeps the pages too. */
	block = mmap(end, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	q = jp_alloc(m);
	CU_ASSERT_PTR_NOT_NULL_FATAL(q);
	CU_ASSERT(resident_bytes(q, n) >= n);	/* the pages came along */
	if (block == end)
		CU_ASSERT(page_unmapped(p));	/* and left their old place */
	jp_free(q);
	if (block != MAP_FAILED)
		munmap(block, page);
	jp_alloc_trim();
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

static CU_TestInfo memory_tests[] = {
	{ "trim after 1 GiB in small blocks: RSS < 10% of peak", test_trim_gives_back },
	{ "jp_alloc_trim returns the bytes given back, as the RSS drop", test_trim_returns_bytes },
	{ "memory freed in one class serves another", test_cross_class_reuse },
	{ "transfer chains do not keep spans from another class", test_chains_release_spans },
	{ "huge blocks are unmapped on free (beyond the cache, or by the trim)", test_huge_unmapped_on_free },
	{ "the huge cache: a freed mapping serves the next huge block", test_huge_cache_reuse },
	{ "the huge cache keeps a big block's mapping and pages; calloc of it is zero", test_huge_cache_keeps_pages },
	{ "a cached mapping is not taken for a block 8 times smaller than its pages", test_huge_cache_bounds_spare },
	{ "a cached mapping is split: its tail serves the next block", test_huge_cache_splits },
	{ "a cached mapping that cannot grow in place moves its pages", test_huge_cache_moves_pages },
	{ "realloc growth chains of huge blocks make no madvise", test_realloc_chain_no_decommit },
	{ "malloc-large's loop (5-25 MiB blocks): no madvise, RSS bounded", test_large_loop_no_decommit },
	{ "memory freed and taken again within a second stays resident", test_swings_keep_pages },
	{ "memory freed and left goes back within two seconds", test_idle_memory_goes_back },
	{ "threads that come and go share spans", test_thread_churn_shares_spans },
	{ "a thread's first free of another's block: no shared cache line", test_first_free_no_false_sharing },
	{ NULL, NULL },
};

static CU_SuiteInfo suites[] = {
	{ "alloc-memory", NULL, NULL, NULL, NULL, memory_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	/*
	 * A case that cannot run here is not registered, rather than run as
	 * an empty pass; each one left out prints a line naming it and why.
	 */
	if (jp_test_on_drd()) {
		/* The memory cases took more than 20 minutes each in CI under
		 * drd (every lock annotation slow). */
		jp_test_unregister(memory_tests, test_trim_gives_back,
				   "drd: 130,000 annotated frees, minutes");
	}
	if (jp_test_on_memcheck()) {
		/* memcheck keeps no huge cache (a freed block must die at
		 * once): the behaviour is not there.  helgrind and drd run these. */
		jp_test_unregister(memory_tests, test_huge_cache_reuse,
				   "memcheck: no huge cache");
		jp_test_unregister(memory_tests, test_huge_cache_keeps_pages,
				   "memcheck: no huge cache");
		jp_test_unregister(memory_tests, test_huge_cache_bounds_spare,
				   "memcheck: no huge cache");
		jp_test_unregister(memory_tests, test_huge_cache_splits,
				   "memcheck: no huge cache");
		jp_test_unregister(memory_tests, test_huge_cache_moves_pages,
				   "memcheck: no huge cache");
		jp_test_unregister(memory_tests, test_realloc_chain_no_decommit,
				   "memcheck: no huge cache");
		jp_test_unregister(memory_tests, test_large_loop_no_decommit,
				   "memcheck: no huge cache");
	}
	return jp_test_run(suites);
}
