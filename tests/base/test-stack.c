/* test-stack.c - stack capture, the depot and the printer
 * (lib/base/stack.c), white-box.  Linked with -rdynamic so that dladdr
 * names this program's functions. */
#include "base/os.h"
#include "base/stack.h"
#include "base/stack_cfi.h"

#include "testutil.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#ifdef __clang__
#define FRAME __attribute__((noinline, used))
#else
#define FRAME __attribute__((noinline, noclone, used))
#endif

/* Not static: in the dynamic symbol table, so dladdr names them. */
unsigned frame_inner(uintptr_t *pcs, unsigned max);
unsigned frame_middle(uintptr_t *pcs, unsigned max);
unsigned frame_outer(uintptr_t *pcs, unsigned max);

/* The empty asm after each call keeps the call from becoming a jump. */
FRAME unsigned frame_inner(uintptr_t *pcs, unsigned max)
{
	unsigned n = jp__stack_capture(pcs, max, 0, false);

	__asm__ volatile("" ::: "memory");
	return n;
}

FRAME unsigned frame_middle(uintptr_t *pcs, unsigned max)
{
	unsigned n = frame_inner(pcs, max);

	__asm__ volatile("" ::: "memory");
	return n;
}

FRAME unsigned frame_outer(uintptr_t *pcs, unsigned max)
{
	unsigned n = frame_middle(pcs, max);

	__asm__ volatile("" ::: "memory");
	return n;
}

/* A frame whose CFA is computed from rbp (its stack size is known only at
 * run time), and a chain longer than JP_STACK_MAX. */
unsigned frame_alloca(uintptr_t *pcs, unsigned max);
unsigned frame_deep(uintptr_t *pcs, unsigned max);

FRAME unsigned frame_alloca(uintptr_t *pcs, unsigned max)
{
	volatile char *b = __builtin_alloca(16 + 8 * (size_t)max);
	unsigned n;

	b[0] = 1;
	n = frame_outer(pcs, max);
	__asm__ volatile("" ::"r"(b) : "memory");
	return n;
}

static int deep_left;

FRAME unsigned frame_deep(uintptr_t *pcs, unsigned max)
{
	unsigned n;

	if (deep_left-- > 0)
		n = frame_deep(pcs, max);
	else
		n = frame_alloca(pcs, max);
	__asm__ volatile("" ::: "memory");
	return n;
}

/* The name of the function that the return address pc lies in. */
static const char *name_of(uintptr_t pc)
{
	Dl_info info;

	/* pc - 1: the call, not what follows it. */
	if (dladdr((void *)(pc - 1), &info) == 0 || info.dli_sname == NULL)
		return "?";
	return info.dli_sname;
}

static void test_capture_names_callers_in_order(void)
{
	uintptr_t pcs[JP_STACK_MAX];
	unsigned n = frame_outer(pcs, JP_STACK_MAX);

	CU_ASSERT_FATAL(n >= 3);
	CU_ASSERT_STRING_EQUAL(name_of(pcs[0]), "frame_inner");
	CU_ASSERT_STRING_EQUAL(name_of(pcs[1]), "frame_middle");
	CU_ASSERT_STRING_EQUAL(name_of(pcs[2]), "frame_outer");
}

static void test_capture_max_and_skip(void)
{
	uintptr_t all[JP_STACK_MAX], two[2], pcs[JP_STACK_MAX];

	CU_ASSERT_FATAL(frame_outer(all, JP_STACK_MAX) >= 3);
	CU_ASSERT_EQUAL(frame_outer(two, 2), 2);
	CU_ASSERT_STRING_EQUAL(name_of(two[0]), "frame_inner");
	CU_ASSERT_STRING_EQUAL(name_of(two[1]), "frame_middle");
	/* skip 1 from here: the first pc is this function's caller's. */
	CU_ASSERT(jp__stack_capture(pcs, JP_STACK_MAX, 1, false) >= 1);
	CU_ASSERT_STRING_NOT_EQUAL(name_of(pcs[0]), "test_capture_max_and_skip");
	CU_ASSERT_EQUAL(jp__stack_capture(pcs, 0, 0, false), 0);
}

static unsigned nested_n = 99;
static int nested_calls;

static void nested_capture(void)
{
	uintptr_t pcs[JP_STACK_MAX];

	nested_calls++;
	nested_n = jp__stack_capture(pcs, JP_STACK_MAX, 0, false);
}

static void test_nested_capture_returns_nothing(void)
{
	uintptr_t pcs[JP_STACK_MAX];
	unsigned n;

	jp__stack_hook = nested_capture;
	n = frame_outer(pcs, JP_STACK_MAX);
	jp__stack_hook = NULL;
	CU_ASSERT_EQUAL(nested_calls, 1);
	CU_ASSERT_EQUAL(nested_n, 0);
	CU_ASSERT(n >= 3);	/* the outer capture is whole */
	/* and the guard is down again */
	CU_ASSERT(frame_outer(pcs, JP_STACK_MAX) >= 3);
}

static void test_depot_same_stack_same_id(void)
{
	uintptr_t a[JP_STACK_MAX], b[JP_STACK_MAX], got[JP_STACK_MAX];
	unsigned na = 0, nb;
	uint32_t ids[2];

	/* Twice the same three frames (the callers of frame_outer differ). */
	for (int i = 0; i < 2; i++) {
		na = frame_outer(a, 3);
		ids[i] = jp__stack_depot_put(a, na);
	}
	CU_ASSERT_EQUAL_FATAL(na, 3);
	CU_ASSERT_NOT_EQUAL(ids[0], 0);
	CU_ASSERT_EQUAL(ids[0], ids[1]);
	CU_ASSERT_EQUAL(jp__stack_depot_get(ids[0], got, JP_STACK_MAX), na);
	CU_ASSERT_EQUAL(memcmp(got, a, na * sizeof *a), 0);
	/* another stack (called from elsewhere), another id */
	nb = frame_middle(b, JP_STACK_MAX);
	CU_ASSERT_NOT_EQUAL(jp__stack_depot_put(b, nb), ids[0]);
	CU_ASSERT_EQUAL(jp__stack_depot_put(b, nb), jp__stack_depot_put(b, nb));
	/* a prefix of a stack is another stack */
	CU_ASSERT_NOT_EQUAL(jp__stack_depot_put(a, na - 1), ids[0]);
	/* get: at most max, nothing for ids the depot does not hold */
	CU_ASSERT_EQUAL(jp__stack_depot_get(ids[0], got, 2), 2);
	CU_ASSERT_EQUAL(jp__stack_depot_get(0, got, JP_STACK_MAX), 0);
	CU_ASSERT_EQUAL(jp__stack_depot_get(UINT32_MAX, got, JP_STACK_MAX), 0);
	CU_ASSERT_EQUAL(jp__stack_depot_put(a, 0), 0);
}

/*
 * The cached walk (x86_64) must give the unwinder's frames exactly.  Each
 * comparison captures from one call site in each mode: the unwinder alone,
 * the default (the cached walk, falling back to the unwinder), and where
 * the cached walk should manage alone, the cached walk alone.  Returns
 * the number of differences (CUnit asserts only on the main thread).
 */
/* A loop the compiler must not unroll: each capture in it has one return
 * address, whatever the iteration. */
#if defined(__clang__)
# define NO_UNROLL _Pragma("clang loop unroll(disable)")
#elif defined(__GNUC__)
# define NO_UNROLL _Pragma("GCC unroll 1")
#else
# define NO_UNROLL
#endif

static int compare_walks(unsigned (*fn)(uintptr_t *, unsigned), unsigned max,
			 unsigned min, bool cached_alone)
{
	static const int modes[3] = { JP_STACK_UNWINDER, 0, JP_STACK_CACHED };
	uintptr_t pcs[3][JP_STACK_MAX];
	unsigned n[3];
	int bad = 0;

	for (int rep = 0; rep < 2; rep++) {	/* the second: from the cache */
		/* One call site for the three: a loop unrolled would give
		 * each capture its own return address here. */
		NO_UNROLL
		for (int i = 0; i < 3; i++) {
			jp__stack_mode = modes[i];
			deep_left = 20;
			n[i] = fn(pcs[i], max);
		}
		jp__stack_mode = 0;
		bad += n[0] < min;
		bad += n[1] != n[0] || memcmp(pcs[1], pcs[0], n[0] * sizeof(uintptr_t)) != 0;
#ifdef __x86_64__
		if (cached_alone)
			bad += n[2] != n[0] ||
			       memcmp(pcs[2], pcs[0], n[0] * sizeof(uintptr_t)) != 0;
#else
		(void)cached_alone;
#endif
	}
	return bad;
}

static void test_cached_walk_gives_the_unwinders_frames(void)
{
	CU_ASSERT_EQUAL(compare_walks(frame_outer, JP_STACK_MAX, 3, true), 0);
	CU_ASSERT_EQUAL(compare_walks(frame_outer, 2, 2, true), 0);
	CU_ASSERT_EQUAL(compare_walks(frame_alloca, JP_STACK_MAX, 4, true), 0);
	CU_ASSERT_EQUAL(compare_walks(frame_deep, JP_STACK_MAX, JP_STACK_MAX, true), 0);
}

static void *thread_compare(void *arg)
{
	/* up to the thread's outermost frame (clone's, whose return
	 * address is undefined) */
	*(int *)arg = compare_walks(frame_outer, JP_STACK_MAX, 3, true);
	return NULL;
}

static void test_cached_walk_in_a_thread(void)
{
	pthread_t t;
	int bad = -1;

	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, thread_compare, &bad), 0);
	CU_ASSERT_EQUAL(pthread_join(t, NULL), 0);
	CU_ASSERT_EQUAL(bad, 0);
}

static int signal_bad = -1;

static void on_signal(int sig)
{
	(void)sig;
	/* Through the signal frame: the cached walk hands over to the
	 * unwinder, which must give the same frames. */
	signal_bad = compare_walks(frame_outer, JP_STACK_MAX, 5, false);
}

static void test_cached_walk_through_a_signal_frame(void)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	CU_ASSERT_EQUAL_FATAL(sigaction(SIGUSR1, &sa, &old), 0);
	raise(SIGUSR1);
	sigaction(SIGUSR1, &old, NULL);
	CU_ASSERT_EQUAL(signal_bad, 0);
}

static int first_subs(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(unsigned long long *)arg = info->dlpi_subs;
	return 1;
}

/* An object unloaded (its code may be replaced by another's at the same
 * address): the cached rules are computed again, and the frames still
 * match the unwinder's. */
static void test_an_unload_drops_the_cached_rules(void)
{
#if JP_STACK_CFI
	uintptr_t pcs[JP_STACK_MAX];
	unsigned long long subs0 = 0, subs1 = 0;
	unsigned long computed[3];
	unsigned n = 0;
	void *h;

	/* One call site for the three captures (as in compare_walks); an
	 * unload before the third. */
	NO_UNROLL
	for (int i = 0; i < 3; i++) {
		if (i == 2) {
			dl_iterate_phdr(first_subs, &subs0);
			h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
			if (h != NULL)
				dlclose(h);
			dl_iterate_phdr(first_subs, &subs1);
		}
		n = frame_outer(pcs, JP_STACK_MAX);
		computed[i] = atomic_load(&jp__stack_cfi_computed);
	}
	CU_ASSERT_FATAL(n >= 4);
	/* Nothing unloaded, or two of these pcs share a slot of the table
	 * (each capture computes again): nothing to conclude.  Else every
	 * rule looked up is computed again: one per pc but the last (the
	 * walk stops at max before looking it up).  (The compiler may have
	 * given the third capture a call site of its own: one more.) */
	if (subs1 != subs0 && computed[1] == computed[0])
		CU_ASSERT(computed[2] - computed[1] >= n - 1);
	CU_ASSERT_EQUAL(compare_walks(frame_outer, JP_STACK_MAX, 3, true), 0);
#endif
}

static void test_put_pc_format(void)
{
	uintptr_t pcs[JP_STACK_MAX];
	char line[256];
	size_t len = 0;

	CU_ASSERT_FATAL(frame_outer(pcs, JP_STACK_MAX) >= 1);
	line[0] = '\0';
	CU_ASSERT_FALSE(jp__stack_put_pc(line, sizeof line, &len, pcs[0]));
	CU_ASSERT_EQUAL(strncmp(line, "frame_inner+0x", 14), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(line, " (0x"));
	CU_ASSERT_EQUAL(len, strlen(line));
	len = 0;
	CU_ASSERT_FALSE(jp__stack_put_pc(line, sizeof line, &len, 0));
	CU_ASSERT_STRING_EQUAL(line, "0x0");
}

static CU_TestInfo stack_tests[] = {
	{ "capture names the callers, innermost first", test_capture_names_callers_in_order },
	{ "capture stops at max and skips frames", test_capture_max_and_skip },
	{ "a capture inside a capture returns no frames", test_nested_capture_returns_nothing },
	{ "the depot gives one stack one id", test_depot_same_stack_same_id },
	{ "a pc prints as symbol+0xoff (0xpc)", test_put_pc_format },
	{ "the cached walk gives the unwinder's frames", test_cached_walk_gives_the_unwinders_frames },
	{ "the cached walk gives them in a thread", test_cached_walk_in_a_thread },
	{ "a signal frame hands the walk to the unwinder", test_cached_walk_through_a_signal_frame },
	{ "an unload drops the cached rules", test_an_unload_drops_the_cached_rules },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ "stack", NULL, NULL, NULL, NULL, stack_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return jp_test_run(suites);
}
