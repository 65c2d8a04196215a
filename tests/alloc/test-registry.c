/*
 * test-registry.c - the allocator's block registry on any address width
 * (white-box: links the core library).
 *
 * The registry has one byte per 4 MiB chunk below 2^JP_VA_BITS, the
 * target's user address width (alloc/segment.h).  x86-64 and qemu-user on it
 * never place a mapping above 2^47, so the edges are tested with synthetic
 * addresses: the top chunk of the space has its byte, a pointer there or
 * above is an invalid free and never a read out of the array, a range that
 * leaves the space is refused (the test a new mapping must pass), and every
 * mapping this process really has lies below the width.
 */
#include "alloc/segment.h"
#include "testutil.h"

#include <CUnit/CUnit.h>
#include <jpsync/alloc.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The first address above the space, or 0 where the space is all of
 * uintptr_t (32-bit targets). */
static uintptr_t space_end(void)
{
	return JP_VA_BITS >= sizeof(uintptr_t) * 8 ? 0
		: (uintptr_t)((uint64_t)1 << (JP_VA_BITS % 64));
}

/* An address 64 bytes into the top chunk of the space. */
static uintptr_t top_chunk(void)
{
	return space_end() - JP_SEG_SIZE + 64;	/* wraps to the top on 32-bit */
}

static void test_geometry(void)
{
	CU_ASSERT(JP_VA_BITS >= 32 && JP_VA_BITS <= 64);
	CU_ASSERT(JP_VA_BITS <= sizeof(uintptr_t) * 8);
	CU_ASSERT_EQUAL((uint64_t)JP_REG_N, (uint64_t)1 << (JP_VA_BITS - JP_SEG_SHIFT));
	CU_ASSERT_EQUAL(sizeof jp__registry, JP_REG_N);
	/* Half the space, and representable in size_t on every width. */
	CU_ASSERT_EQUAL((uint64_t)JP_ALLOC_MAX, ((uint64_t)1 << (JP_VA_BITS - 1)) - 1);
	CU_ASSERT((uint64_t)JP_ALLOC_MAX <= PTRDIFF_MAX);
#if defined(__x86_64__) && !defined(__ILP32__)
	CU_ASSERT_EQUAL(JP_VA_BITS, 47);
#elif defined(__aarch64__) && !defined(__ILP32__)
	CU_ASSERT_EQUAL(JP_VA_BITS, 48);
#elif defined(__s390x__)
	CU_ASSERT_EQUAL(JP_VA_BITS, 47);
#elif defined(__i386__)
	CU_ASSERT_EQUAL(JP_VA_BITS, 32);
#endif
}

static void test_covers_edges(void)
{
	uintptr_t top = top_chunk() - 64, end = space_end();

	CU_ASSERT(jp__reg_covers(0, JP_SEG_SIZE));
	CU_ASSERT(jp__reg_covers(top, JP_SEG_SIZE));
	CU_ASSERT(jp__reg_covers(top + JP_SEG_SIZE - 1, 1));
	CU_ASSERT_FALSE(jp__reg_covers(top, 0));
	/* Past the end of uintptr_t: refused, not wrapped around. */
	CU_ASSERT_FALSE(jp__reg_covers(UINTPTR_MAX, 2));
	CU_ASSERT_FALSE(jp__reg_covers(UINTPTR_MAX - 15, SIZE_MAX));
	if (end != 0) {
		/* A mapping that reaches or starts above 2^JP_VA_BITS, as a
		 * kernel with a wider space could place one. */
		CU_ASSERT_FALSE(jp__reg_covers(top, JP_SEG_SIZE + 1));
		CU_ASSERT_FALSE(jp__reg_covers(end, 1));
		CU_ASSERT_FALSE(jp__reg_covers(end, JP_SEG_SIZE));
		CU_ASSERT_FALSE(jp__reg_covers(end << 1, JP_SEG_SIZE));
		CU_ASSERT_FALSE(jp__reg_covers(UINTPTR_MAX & ~JP_SEG_MASK, JP_SEG_SIZE));
	} else {
		CU_ASSERT(jp__reg_covers(UINTPTR_MAX & ~JP_SEG_MASK, JP_SEG_SIZE));
	}
}

static void test_top_byte(void)
{
	uintptr_t top = top_chunk();

	CU_ASSERT_EQUAL(jp__reg_get(top), JP_REG_NONE);
	jp__reg_set(top, JP_REG_HUGE_PREV);
	CU_ASSERT_EQUAL(jp__reg_get(top), JP_REG_HUGE_PREV);
	CU_ASSERT_EQUAL(jp__registry[JP_REG_N - 1], JP_REG_HUGE_PREV);
	jp__reg_set(top, JP_REG_NONE);
	CU_ASSERT_EQUAL(jp__registry[JP_REG_N - 1], JP_REG_NONE);
	/* The byte below is the next chunk's. */
	CU_ASSERT_EQUAL(jp__reg_get(top - JP_SEG_SIZE), JP_REG_NONE);
}

static uintptr_t bad_ptr;

static void free_bad(void *arg)
{
	(void)arg;
	jp_free((void *)bad_ptr);
	_exit(0);		/* not reached: an invalid free aborts */
}

static void usable_bad(void *arg)
{
	(void)arg;
	(void)jp_usable_size((void *)bad_ptr);
	_exit(0);
}

static void expect_invalid(void (*fn)(void *), uintptr_t p, const char *what)
{
	struct jp_child_result r;
	char want[128];

	bad_ptr = p;
	snprintf(want, sizeof want, "jpsync: %s of 0x%" PRIxPTR "\n", what, p);
	CU_ASSERT_EQUAL_FATAL(jp_test_child(fn, NULL, &r), 0);
	CU_ASSERT(r.signaled && r.sig == SIGABRT);
	CU_ASSERT_STRING_EQUAL(r.err, want);
	if (strcmp(r.err, want) != 0)
		printf("\n  got '%s' for %#" PRIxPTR "\n", r.err, p);
}

static void test_high_pointers_are_invalid(void)
{
	uintptr_t end = space_end();

	expect_invalid(free_bad, top_chunk(), "invalid free");
	expect_invalid(usable_bad, top_chunk(), "invalid pointer to jp_usable_size");
	if (end != 0) {
		expect_invalid(free_bad, end + 64, "invalid free");
		expect_invalid(free_bad, (end << 4) | 64, "invalid free");
		expect_invalid(usable_bad, end + 64, "invalid pointer to jp_usable_size");
	}
	expect_invalid(free_bad, UINTPTR_MAX & ~(uintptr_t)15, "invalid free");
}

/* Every mapping of this process, and the allocator's own, lies in the space
 * the registry covers: the width is right for the machine it runs on (on
 * arm64 or s390x hardware, not only under qemu). */
static void test_real_mappings_fit(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned n = 0;
	void *small = jp_alloc(64), *huge = jp_alloc((size_t)8 << 20);

	CU_ASSERT_PTR_NOT_NULL_FATAL(small);
	CU_ASSERT_PTR_NOT_NULL_FATAL(huge);
	CU_ASSERT(jp__reg_covers((uintptr_t)small, 64));
	CU_ASSERT(jp__reg_covers((uintptr_t)huge, (size_t)8 << 20));
	CU_ASSERT_EQUAL(jp__reg_get((uintptr_t)small), JP_REG_SMALL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	while (fgets(line, sizeof line, f) != NULL) {
		uintmax_t lo, hi;

		/* x86-64's legacy vsyscall page sits at 0xffffffffff600000
		 * in every process: no mapping mmap hands out. */
		if (strstr(line, "[vsyscall]") != NULL)
			continue;
		if (sscanf(line, "%jx-%jx", &lo, &hi) != 2)
			continue;
		n++;
		CU_ASSERT(jp__reg_covers((uintptr_t)lo, (size_t)(hi - lo)));
		if (!jp__reg_covers((uintptr_t)lo, (size_t)(hi - lo)))
			printf("\n  above 2^%d: %s", JP_VA_BITS, line);
	}
	fclose(f);
	CU_ASSERT(n > 5);
	jp_free(small);
	jp_free(huge);
}

static void test_alloc_max(void)
{
	errno = 0;
	CU_ASSERT_PTR_NULL(jp_alloc(JP_ALLOC_MAX + 1));
	CU_ASSERT_EQUAL(errno, ENOMEM);
	CU_ASSERT_EQUAL(jp_good_size(JP_ALLOC_MAX + 1), 0);
	CU_ASSERT(jp_good_size((size_t)1 << 20) >= (size_t)1 << 20);
}

static CU_TestInfo registry_tests[] = {
	{ "one byte per 4 MiB chunk of the target's address width", test_geometry },
	{ "a range is covered up to the last chunk, never past it", test_covers_edges },
	{ "the top chunk of the space has its byte", test_top_byte },
	{ "a pointer in the top chunk or above: invalid, no fault", test_high_pointers_are_invalid },
	{ "every mapping of the process lies below the width", test_real_mappings_fit },
	{ "the largest request is half the space, ENOMEM above", test_alloc_max },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ "registry", NULL, NULL, NULL, NULL, registry_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return jp_test_run(suites);
}
