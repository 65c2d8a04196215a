/*
 * test-alloc-misuse.c - jp_alloc(3) misused: invalid and double frees,
 * free_sized with a wrong size, and the damage default mode finds off the
 * fast paths; each case aborts in a child (black-box, through the shared
 * library).
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

/* ---- misuse ------------------------------------------------------------ */

/* A static of this program: not a block of ours. */
static const size_t sizes[] = { 0, 1, 7, 8 };

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
	jp_thread_flush();	/* now free in its span, not in the cache */
	jp_free(p);
}

/*
 * A double free that the first free's bin hides: this thread frees p into
 * its bin; another thread frees it again (its check cannot see this
 * thread's bin) and flushes it to its span; this thread's flush then
 * brings p to a span where it is free already.  With a free list per span
 * p went on it twice, unseen, and two later allocations got it.
 */
static void *free_and_flush(void *p)
{
	jp_free(p);
	jp_thread_flush();
	return NULL;
}

static void do_double_free_hidden(void *p)
{
	pthread_t t;

	jp_free(p);
	if (pthread_create(&t, NULL, free_and_flush, p) != 0 || pthread_join(t, NULL) != 0)
		return;
	jp_thread_flush();
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
	expect_die(do_double_free_hidden, p, "double free", p);
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

/* 1 MiB past a block, over blocks that are free in their spans: the
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
	/* Into their spans: jp_thread_flush alone leaves the transfer
	 * chains the frees above made as the bin overflowed, which a refill
	 * takes whole, unchecked (jp_alloc(3) promises the spans only), and
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
	struct jp_child_result res;
	size_t lo = SIZE_MAX, hi = 0;
	int end = 0, n = ov_small_setup();

	CU_ASSERT_FATAL(n > 0);
	b = ov_a + jp_usable_size(ov_a);
	CU_ASSERT_FATAL(ov_small[0] == b);
	/* Words 0 and 1 (the link and the random key): bytes 0 to 15, or 0
	 * to 7 where a word has 4; fewer where a byte of them happened to be
	 * 'A' already (CI saw "0 to 14": a key whose top byte was 0x41), but
	 * never a whole word. */
	snprintf(want, sizeof want, "jpsync: write into the free block of 0x%lx (%zu bytes): "
		 "bytes ", (unsigned long)(uintptr_t)b, jp_usable_size(b));
	CU_ASSERT_EQUAL_FATAL(jp_test_child(overflow_1m_bin, b, &res), 0);
	CU_ASSERT(res.signaled && res.sig == SIGABRT);
	CU_ASSERT_EQUAL(strncmp(res.err, want, strlen(want)), 0);
	CU_ASSERT(sscanf(res.err + strlen(want), "%zu to %zu changed (a write after free, "
			 "or an overflow or underflow of a neighbour)\n%n", &lo, &hi, &end) == 2);
	CU_ASSERT(lo < sizeof(void *) && hi >= sizeof(void *) && hi < 2 * sizeof(void *));
	CU_ASSERT(end > 0 && res.err[strlen(want) + (size_t)end] == '\0');
	if (!(res.signaled && res.sig == SIGABRT))
		printf("\n  got: %s\n", res.err);
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

static CU_TestInfo misuse_tests[] = {
	{ "invalid free: stack address", test_invalid_free_stack },
	{ "invalid free: the C library's pointer, a static", test_invalid_free_foreign },
	{ "invalid free: offset, unaligned, past the end", test_invalid_free_offset_and_unaligned },
	{ "double free (in the cache, flushed, on a transfer chain, hidden by another thread's cache)", test_double_free },
	{ "free_sized: a size above the block, offset, foreign", test_free_sized_misuse },
	{ "free_sized: double free", test_free_sized_double },
	{ "default mode: 32-byte overflow, underflow, write after free of large blocks", test_default_large_damage },
	{ "default mode: 32-byte underflow of a huge block", test_default_huge_underflow },
	{ "default mode: 1 MiB overflow past a block, over free blocks", test_default_overflow_1m },
	{ "default mode: 1 MiB overflow over a block in a thread's bin", test_default_overflow_1m_bin },
	{ "default mode: 1 MiB overflow over blocks on transfer chains", test_default_overflow_1m_chain },
	{ "default mode: a damaged segment header", test_default_segment_header },
	{ "default mode: a free into an unmapped region", test_default_free_unmapped },
	{ NULL, NULL },
};

static CU_SuiteInfo suites[] = {
	{ "alloc-misuse", NULL, NULL, NULL, NULL, misuse_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	/*
	 * A case that cannot run here is not registered, rather than run as
	 * an empty pass; each one left out prints a line naming it and why.
	 */
	if (jp_test_on_memcheck()) {
		/* Reading the freed block is what memcheck reports (it catches
		 * the double free itself): not a clean run. */
		jp_test_unregister(misuse_tests, test_double_free,
				   "memcheck: it reports the read of the freed block");
		jp_test_unregister(misuse_tests, test_free_sized_double,
				   "memcheck: it reports the read of the freed block");
	}
	return jp_test_run(suites);
}
