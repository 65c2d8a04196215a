/*
 * test-check.c - JPSYNC_CHECK=1 (lib/alloc/check.c), white-box: the allocator
 * linked in (libjpsync-core.la), check mode switched on before its first
 * allocation, and jp__check_hook set so that findings are counted here
 * instead of aborting the suite.  (test-alloc-env runs the check-mode
 * aborting path and its exact message in child processes.)
 *
 * Correct use of every kind never draws a finding: aligned blocks of every
 * alignment and size followed by plain ones of the same size (what made
 * check mode cry "write after free"), realloc between every kind, calloc,
 * zero bytes.  Every kind of damage draws exactly the finding it should,
 * naming the block, its requested size and the bytes: a one-byte overflow
 * and underflow on every size class, aligned blocks and huge blocks, a
 * write after free, a double free, a foreign and an interior pointer.
 */
#include "alloc/alloc_init.h"
#include "alloc/check.h"
#include "alloc/segment.h"
#include "alloc/sizeclass.h"

#include "testutil.h"

#include <jpsync/alloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)

static struct jp_check_report last;
static char last_what[64];
static int findings;

static void hook(const struct jp_check_report *r)
{
	last = *r;
	snprintf(last_what, sizeof last_what, "%s", r->what);
	last.what = last_what;
	findings++;
}

/* Expect exactly one finding since the last call, of this kind. */
static void expect(const char *what, const void *ptr, size_t size,
		   long long first, long long lastb)
{
	CU_ASSERT_EQUAL(findings, 1);
	CU_ASSERT_STRING_EQUAL(last_what, what);
	CU_ASSERT_PTR_EQUAL(last.ptr, ptr);
	CU_ASSERT_EQUAL(last.size, size);
	CU_ASSERT_EQUAL(last.first, first);
	CU_ASSERT_EQUAL(last.last, lastb);
	if (findings != 1 || strcmp(last_what, what) != 0 || last.first != first)
		printf("\n  wanted %s at %lld..%lld of %zu bytes, got %d: %s at %lld..%lld of %zu\n",
		       what, first, lastb, size, findings, last_what, last.first,
		       last.last, last.size);
	findings = 0;
}

/* Does check mode give n bytes at alignment a a huge block (check.c)? */
static bool huge(size_t n, size_t a)
{
	size_t off = a > 32 ? a : 32;

	return a > JP_SLICE_SIZE || n > JP_MAX_SMALL - off - 8;
}

/* Sizes on both sides of every class boundary, and huge ones. */
static size_t sizes[200];
static size_t nsizes;

static void make_sizes(void)
{
	nsizes = 0;
	sizes[nsizes++] = 0;
	sizes[nsizes++] = 1;
	for (uint32_t c = 0; c < JP_NCLASSES && nsizes < 190; c++) {
		size_t bs = jp__class_size(c);

		if (bs > 40)
			sizes[nsizes++] = bs - 40;
		sizes[nsizes++] = bs - 1;
	}
	sizes[nsizes++] = JP_MAX_SMALL;
	sizes[nsizes++] = JP_MAX_SMALL + 1;
	sizes[nsizes++] = 3 * MiB + 5;
	sizes[nsizes++] = 5 * MiB;
}

/* ---- no false positives ----------------------------------------------- */

static void test_aligned_then_plain(void)
{
	/* A reported false alarm: memalign(64, 1000) + free + malloc(1000),
	 * 100 times, at sizes 100-5000 and alignments 32 and 64. */
	for (size_t align = 32; align <= 64; align *= 2)
		for (size_t n = 100; n <= 5000; n += 100)
			for (int i = 0; i < 100; i++) {
				char *p = jp_alloc_aligned(align, n), *q;

				CU_ASSERT_FATAL(p != NULL && (uintptr_t)p % align == 0);
				memset(p, 0x11, n);
				jp_free(p);
				q = jp_alloc(n);
				CU_ASSERT_FATAL(q != NULL);
				memset(q, 0x22, n);
				jp_free(q);
			}
	CU_ASSERT_EQUAL(findings, 0);
}

static void test_every_alignment_and_size(void)
{
	void *keep[64];
	int k = 0;

	for (size_t align = 1; align <= 8 * MiB; align *= 2)
		for (size_t i = 0; i < nsizes; i += 3) {
			size_t n = sizes[i];
			char *p = jp_alloc_aligned(align, n);

			CU_ASSERT_FATAL(p != NULL);
			CU_ASSERT((uintptr_t)p % align == 0);
			CU_ASSERT_EQUAL(jp_usable_size(p), n);
			memset(p, 0x33, n);
			if (k < 64 && i % 2 == 0)
				keep[k++] = p;	/* freed later, out of order */
			else
				jp_free(p);
			/* A plain block of the size right after. */
			p = jp_alloc(n);
			memset(p, 0x44, n);
			jp_free(p);
		}
	while (k > 0)
		jp_free(keep[--k]);
	CU_ASSERT_EQUAL(findings, 0);
}

static void test_realloc_every_kind(void)
{
	static const size_t steps[] = {
		1, 24, 100, 1000, 4000, 40000, JP_MAX_SMALL - 50, JP_MAX_SMALL + 10,
		2 * MiB, 9 * MiB, 300000, 5000, 17, 0,
	};
	unsigned char *p = jp_alloc_aligned(256, 50);
	size_t have = 50;

	memset(p, 7, have);
	for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
		size_t n = steps[i];

		p = jp_realloc(p, n);
		if (n == 0) {
			CU_ASSERT_PTR_NULL(p);	/* freed */
			break;
		}
		CU_ASSERT_FATAL(p != NULL);
		for (size_t j = 0; j < (have < n ? have : n); j++)
			if (p[j] != (unsigned char)(7 + i))
				CU_FAIL_FATAL("realloc lost contents");
		CU_ASSERT_EQUAL(jp_usable_size(p), n);
		memset(p, 7 + (int)i + 1, n);
		have = n;
	}
	p = jp_calloc(1000, 3);
	for (int j = 0; j < 3000; j++)
		CU_ASSERT_EQUAL_FATAL(p[j], 0);
	jp_free(p);
	p = jp_calloc(1, 5 * MiB);
	CU_ASSERT_EQUAL(p[5 * MiB - 1], 0);
	jp_free_sized(p, 5 * MiB);
	CU_ASSERT_EQUAL(findings, 0);
}

static void test_realloc_same_size_in_place(void)
{
	for (size_t i = 0; i < nsizes; i++) {
		size_t n = sizes[i];
		char *p = jp_alloc(n), *q;

		memset(p, 1, n);
		q = jp_realloc(p, n == 0 ? 1 : n);
		CU_ASSERT_PTR_EQUAL(q, p);
		if (n > 1) {
			/* Shrinking by one byte stays, and the byte freed
			 * is canary again: writing it is an overflow. */
			q = jp_realloc(p, n - 1);
			CU_ASSERT_PTR_EQUAL(q, p);
			CU_ASSERT_EQUAL(jp_usable_size(p), n - 1);
		}
		jp_free(p);
	}
	CU_ASSERT_EQUAL(findings, 0);
}

/* ---- what it catches -------------------------------------------------- */

static void test_overflow_one_byte_every_size(void)
{
	for (size_t a = 16; a <= 4096; a *= 16)
		for (size_t i = 0; i < nsizes; i++) {
			size_t n = sizes[i];
			unsigned char *p = jp_alloc_aligned(a, n);

			p[n] ^= 0x40;	/* the bug */
			jp_free(p);
			expect("overflow past the end", p, n, (long long)n, (long long)n);
		}
}

static void test_underflow_one_byte_every_size(void)
{
	for (size_t a = 16; a <= 4096; a *= 16)
		for (size_t i = 0; i < nsizes; i++) {
			size_t n = sizes[i];
			unsigned char *p = jp_alloc_aligned(a, n);

			p[-1] ^= 0x40;	/* the bug */
			jp_free(p);
			expect("underflow before the start", p, n, -1, -1);
		}
}

static void test_underflow_into_the_header(void)
{
	unsigned char *p = jp_alloc(100);

	memset(p - 32, 'A', 32);	/* through the canary into the header */
	jp_free(p);
	expect("underflow before the start", p, SIZE_MAX, -32, -1);
}

static void test_overflow_found_by_realloc(void)
{
	unsigned char *p = jp_alloc(300);

	p[301] = 0;
	CU_ASSERT_PTR_NULL(jp_realloc(p, 5000));
	expect("overflow past the end", p, 300, 301, 301);
	p = jp_alloc(300);
	CU_ASSERT_EQUAL(jp_usable_size(p), 300);
	p[-3] = 0;
	CU_ASSERT_EQUAL(jp_usable_size(p), 0);
	expect("underflow before the start", p, 300, -3, -3);
}

static void test_write_after_free(void)
{
	for (size_t i = 0; i < nsizes; i++) {
		size_t n = sizes[i];
		unsigned char *p = jp_alloc(n), *q[64];
		int k = 0;

		if (n < 8 || huge(n, 16))
			continue;	/* huge ones: the fault, below */
		jp_free(p);
		p[n / 2] ^= 1;	/* the bug */
		/* The next allocations of the class take it again (a refill
		 * takes the lowest free blocks of the span first). */
		while (findings == 0 && k < 64)
			q[k++] = jp_alloc(n);
		expect("write after free", p, n, (long long)(n / 2), (long long)(n / 2));
		while (k > 0)
			jp_free(q[--k]);
	}
}

static void huge_write_after_free(void *arg)
{
	unsigned char *p = jp_alloc(3 * MiB);

	(void)arg;
	jp_free(p);
	p[100] = 1;	/* the bug: faults in the quarantine */
	_exit(0);
}

/* s390 reports the page of a fault, not its byte (check_fault.c). */
#if defined(__s390__) || defined(__s390x__)
# define HUGE_UAF_NOTE "(3145728 bytes) (access in the page from byte "
#else
# define HUGE_UAF_NOTE "(3145728 bytes) (access at byte 100)"
#endif

static void test_huge_write_after_free_faults(void)
{
	struct jp_child_result res;

	CU_ASSERT_EQUAL_FATAL(jp_test_child(huge_write_after_free, NULL, &res), 0);
	/* Check mode's fault handler names it (the hook is for findings
	 * an operation can return from; a fault is not one) and aborts;
	 * a sanitizer runtime whose handler ran first exits itself. */
	CU_ASSERT((res.signaled && res.sig == SIGABRT &&
		   strstr(res.err, "jpsync: use after free of 0x") != NULL &&
		   strstr(res.err, HUGE_UAF_NOTE) != NULL) ||
		  (jp_test_sanitized() && res.exited && res.status != 0 &&
		   strstr(res.err, "SEGV") != NULL));
	if (!(res.signaled && res.sig == SIGABRT))
		printf("\nsignal %d, exit %d: %s\n", res.sig, res.status, res.err);
}

static void test_double_free(void)
{
	for (size_t i = 0; i < nsizes; i++) {
		size_t n = sizes[i];
		void *p = jp_alloc(n);

		jp_free(p);
		jp_free(p);	/* the bug */
		/* a huge one's size from the quarantine's record */
		expect("double free", p, n, 1, 0);
	}
}

static void test_foreign_and_interior_free(void)
{
	char local[64];
	void *g = malloc(100);	/* the C library's */
	char *p = jp_alloc(100), *h = jp_alloc(5 * MiB);

	jp_free(local);
	expect("invalid free", local, SIZE_MAX, 1, 0);
	jp_free(g);
	expect("invalid free", g, SIZE_MAX, 1, 0);
	free(g);
	jp_free(p + 16);
	expect("invalid free", p + 16, SIZE_MAX, 1, 0);
	jp_free(h + 4096);
	expect("invalid free", h + 4096, SIZE_MAX, 1, 0);
	CU_ASSERT_EQUAL(jp_usable_size(p + 1), 0);
	expect("invalid pointer to jp_usable_size", p + 1, SIZE_MAX, 1, 0);
	jp_free(p);
	jp_free(h);
	CU_ASSERT_EQUAL(findings, 0);
}

static CU_TestInfo ok_tests[] = {
	{ "aligned block freed, plain block of its size: no finding", test_aligned_then_plain },
	{ "every alignment 1 B .. 8 MiB and every class: no finding", test_every_alignment_and_size },
	{ "realloc between every kind, calloc, free_sized: no finding", test_realloc_every_kind },
	{ "realloc to the same or one byte less stays in place", test_realloc_same_size_in_place },
	CU_TEST_INFO_NULL,
};

static CU_TestInfo catch_tests[] = {
	{ "a one-byte overflow, every class, aligned and huge", test_overflow_one_byte_every_size },
	{ "a one-byte underflow, every class, aligned and huge", test_underflow_one_byte_every_size },
	{ "a 32-byte underflow through the header", test_underflow_into_the_header },
	{ "damage found by realloc and usable_size", test_overflow_found_by_realloc },
	{ "a write after free, every small class", test_write_after_free },
	{ "a write after free of a huge block faults, and is named", test_huge_write_after_free_faults },
	{ "a double free, every class and huge", test_double_free },
	{ "a foreign or interior pointer", test_foreign_and_interior_free },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ "check-ok", NULL, NULL, NULL, NULL, ok_tests },
	{ "check-catches", NULL, NULL, NULL, NULL, catch_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	/* Before the allocator's first call: check mode is read once. */
	setenv("JPSYNC_CHECK", "1", 1);
	jp__check_hook = hook;
	jp_free(jp_alloc(1));
	if (!jp__settings.check) {
		/* memcheck switches check mode off (it checks itself). */
		printf("SKIP: check mode is off here (valgrind's memcheck)\n");
		return 77;
	}
	make_sizes();
	return jp_test_run(suites);
}
