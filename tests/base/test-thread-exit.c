/* test-thread-exit.c - the one thread-exit path (lib/base/thread_exit.c),
 * white-box: hooks run at thread exit in the order of their slots, once
 * each, only where armed; a hook that arms a slot again makes them run
 * again; a disarmed slot does not run. */
#include "base/thread_exit.h"

#include "testutil.h"

#include <pthread.h>
#include <string.h>

/* What ran, in order: the slot numbers, by the exiting thread (joined
 * before it is read). */
static int ran[32], nran;
static int tokens[JP__EXIT_NSLOTS];

static void record(void *arg)
{
	if (nran < (int)JP_ARRAY_SIZE(ran))
		ran[nran++] = (int)((int *)arg - tokens);
}

/* The arena's hook arms the heap's slot again, as a free after the
 * allocator's hook would. */
static int rearmed;

static void record_and_rearm(void *arg)
{
	record(arg);
	if (!rearmed++)
		jp__thread_exit_arm(JP__EXIT_HEAP, record, &tokens[JP__EXIT_HEAP]);
}

static int arm_errors;	/* CUnit is not thread-safe: the main thread asserts */

static void *arm_reversed(void *mode)
{
	int m = (int)(intptr_t)mode;

	/* Armed last slot first: the order must come from the slots. */
	for (int s = JP__EXIT_NSLOTS - 1; s >= 0; s--)
		if (jp__thread_exit_arm((enum jp__exit_slot)s, record, &tokens[s]) != 0)
			arm_errors++;
	if (m == 1)	/* disarm one */
		jp__thread_exit_arm(JP__EXIT_PERTHREAD, record, NULL);
	if (m == 2)	/* re-arm from a hook */
		jp__thread_exit_arm(JP__EXIT_HEAP, record_and_rearm, &tokens[JP__EXIT_HEAP]);
	return NULL;
}

static void run_thread(int mode)
{
	pthread_t t;

	nran = 0;
	rearmed = 0;
	arm_errors = 0;
	memset(ran, -1, sizeof ran);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, arm_reversed, (void *)(intptr_t)mode), 0);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(arm_errors, 0);
}

static void test_order(void)
{
	run_thread(0);
	CU_ASSERT_EQUAL(nran, JP__EXIT_NSLOTS);
	for (int s = 0; s < JP__EXIT_NSLOTS && s < nran; s++)
		CU_ASSERT_EQUAL(ran[s], s);
}

static void test_disarmed(void)
{
	run_thread(1);
	CU_ASSERT_EQUAL(nran, JP__EXIT_NSLOTS - 1);
	for (int i = 0; i < nran; i++)
		CU_ASSERT_NOT_EQUAL(ran[i], JP__EXIT_PERTHREAD);
}

static void test_rearmed_runs_again(void)
{
	run_thread(2);
	/* lockdep, perthread, arena, heap (re-arms heap), heap again */
	CU_ASSERT_EQUAL(nran, JP__EXIT_NSLOTS + 1);
	CU_ASSERT_EQUAL(ran[JP__EXIT_NSLOTS - 1], JP__EXIT_HEAP);
	CU_ASSERT_EQUAL(ran[JP__EXIT_NSLOTS], JP__EXIT_HEAP);
}

static void test_main_thread_unarmed(void)
{
	/* Arming with NULL from a thread that never armed sets no key and
	 * reports no error. */
	CU_ASSERT_EQUAL(jp__thread_exit_arm(JP__EXIT_ARENA, record, NULL), 0);
}

static CU_TestInfo exit_tests[] = {
	{ "hooks run at exit in slot order, once each", test_order },
	{ "a disarmed slot does not run", test_disarmed },
	{ "a slot armed again by a hook runs again", test_rearmed_runs_again },
	{ "disarming an unarmed slot is harmless", test_main_thread_unarmed },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ "thread-exit", NULL, NULL, NULL, NULL, exit_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return jp_test_run(suites);
}
