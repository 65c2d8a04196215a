/* test-lockdep.c - lock-order checking (white-box: turns it on in a child). */
#define _GNU_SOURCE	/* dl_iterate_phdr, memmem */
#include <jpsync/hammer.h>
#include <jpsync/mutex.h>

#include "sync/sync.h"
#include "testutil.h"

#include <ctype.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * ThreadSanitizer sees jp_mutex too (its annotations), and reports the
 * deliberate inversion and the unlock by a wrong thread itself, exiting
 * with 66: accepted in the TSan build, where lockdep's report is still
 * checked.
 */
#if defined(__SANITIZE_THREAD__)
# define TSAN_BUILD 1
#elif defined(__has_feature)
# if __has_feature(thread_sanitizer)
#  define TSAN_BUILD 1
# endif
#endif
#ifdef TSAN_BUILD
# define MISUSE_OK(r) ((r).exited && ((r).status == 0 || (r).status == 66))
#else
# define MISUSE_OK(r) ((r).exited && (r).status == 0)
#endif

static jp_mutex_t ma = JP_MUTEX_INIT, mb = JP_MUTEX_INIT, mc = JP_MUTEX_INIT;

static unsigned count(const char *hay, const char *needle)
{
	unsigned n = 0;

	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

static bool has_addr(const char *err, const void *p)
{
	char hex[32];

	snprintf(hex, sizeof hex, "%p", p);
	return strstr(err, hex) != NULL;
}

static void *a_then_b(void *arg)
{
	(void)arg;
	jp_mutex_lock(&ma);
	jp_mutex_lock(&mb);
	jp_mutex_unlock(&mb);
	jp_mutex_unlock(&ma);
	return NULL;
}

static void *b_then_a(void *arg)
{
	(void)arg;
	jp_mutex_lock(&mb);
	jp_mutex_lock(&ma);
	jp_mutex_unlock(&ma);
	jp_mutex_unlock(&mb);
	return NULL;
}

static void run_thread(void *(*fn)(void *))
{
	pthread_t t;

	if (pthread_create(&t, NULL, fn, NULL) == 0)
		pthread_join(t, NULL);
}

/* The blog's inversion, taken one thread after the other: no deadlock. */
static void child_inversion(void *arg)
{
	(void)arg;
	jp__sync_force_lockdep(true);
	for (int i = 0; i < 3; i++) {
		run_thread(a_then_b);
		run_thread(b_then_a);
	}
}

static void test_inversion_reported(void)
{
	struct jp_child_result r;

	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_inversion, NULL, &r), 0);
	CU_ASSERT(MISUSE_OK(r));
	CU_ASSERT_EQUAL(count(r.err, "jpsync: lockdep: lock order inversion"), 1);
	CU_ASSERT(has_addr(r.err, &ma));
	CU_ASSERT(has_addr(r.err, &mb));
	/* Both acquisitions of both orders, each with its code address. */
	CU_ASSERT_EQUAL(count(r.err, "lockdep:     while holding mutex"), 2);
	CU_ASSERT(count(r.err, " (0x") >= 4);
	CU_ASSERT(strstr(r.err, "can deadlock") != NULL);
}

static char self_path[4096];	/* defined below */

/* The main program's load bias, found without dladdr: dl_iterate_phdr. */
static int bias_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uintptr_t *)data = (uintptr_t)info->dlpi_addr;
	return 1;	/* the first object is the program */
}

/*
 * a_then_b and b_then_a are static: the dynamic symbol table cannot name
 * them, so each site is "file(+0xoff) (0xpc)", with the offset from the
 * program's load bias that addr2line takes, and one hint line.  (The
 * report used to print "file+0xoff", an offset from the mapping's start
 * that addr2line could not use for a fixed-address program.)
 */
static void test_inversion_sites_for_addr2line(void)
{
	struct jp_child_result r;
	uintptr_t bias = 0;
	unsigned sites = 0;

	dl_iterate_phdr(bias_cb, &bias);
	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_inversion, NULL, &r), 0);
	CU_ASSERT(MISUSE_OK(r));
	for (const char *p = r.err; (p = strstr(p, "(+0x")) != NULL; p++) {
		unsigned long long off, pc;
		const char *name = p;

		if (!isxdigit((unsigned char)p[4]))
			continue;	/* the hint's "file(+0xoff)" */
		if (sscanf(p, "(+%llx) (%llx)", &off, &pc) != 2) {
			CU_FAIL("a site without its run-time address");
			continue;
		}
		sites++;
		CU_ASSERT_EQUAL(pc - off, bias);
		/* In one of the two functions that took the locks. */
		CU_ASSERT((pc > (uintptr_t)a_then_b && pc < (uintptr_t)a_then_b + 512) ||
			  (pc > (uintptr_t)b_then_a && pc < (uintptr_t)b_then_a + 512));
		/* After the program's file name. */
		while (name > r.err && name[-1] != ' ')
			name--;
		CU_ASSERT(strncmp(name, self_path, strlen(self_path)) == 0 ||
			  memmem(name, (size_t)(p - name), "test-lockdep", 12) != NULL);
	}
	CU_ASSERT_EQUAL(sites, 4);
	CU_ASSERT_EQUAL(count(r.err, "addr2line -f -e file +0xoff; link with -rdynamic for names"), 1);
	if (sites != 4 || getenv("JP_TEST_SHOW") != NULL)
		fprintf(stderr, "\n%s", r.err);
}

/*
 * The same through the environment: the child runs this program again
 * with JPSYNC_LOCKDEP=1 and --inversion (see main), as a user would.
 */
static char self_path[4096];

static void child_exec_env(void *arg)
{
	(void)arg;
	setenv("JPSYNC_LOCKDEP", "1", 1);
	/* The path valgrind reports for /proc/self/exe: the program, not valgrind. */
	jp_test_execv(self_path, (char *[]){ "test-lockdep", "--inversion", NULL });
	fprintf(stderr, "exec failed\n");
}

static void test_inversion_from_environment(void)
{
	struct jp_child_result r;

	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_exec_env, NULL, &r), 0);
	CU_ASSERT(MISUSE_OK(r));
	CU_ASSERT_EQUAL(count(r.err, "jpsync: lockdep: lock order inversion"), 1);
	CU_ASSERT_EQUAL(count(r.err, "lockdep:     while holding mutex"), 2);
}

static void consistent_body(void *ctx, unsigned thread, uint64_t iter)
{
	(void)ctx; (void)iter;
	jp_mutex_lock(&ma);
	if (thread & 1) {
		jp_mutex_lock(&mb);
		jp_mutex_lock(&mc);
		jp_mutex_unlock(&mc);
		jp_mutex_unlock(&mb);
	} else {
		jp_mutex_lock(&mc);
		jp_mutex_unlock(&mc);
	}
	jp_mutex_unlock(&ma);
}

static void child_consistent(void *arg)
{
	jp_cond_t c = JP_COND_INIT;
	struct timespec d;

	(void)arg;
	jp__sync_force_lockdep(true);
	jp_hammer(4, 200, consistent_body, NULL);
	/* A timed condition wait releases and retakes its mutex: no report. */
	jp_mutex_lock(&ma);
	jp_test_deadline_ms(&d, 5);
	while (jp_cond_timedwait(&c, &ma, &d) == 0)
		;
	jp_mutex_unlock(&ma);
	/* trylock nested inside another mutex is fine as well */
	jp_mutex_lock(&mb);
	if (jp_mutex_trylock(&mc) == 0)
		jp_mutex_unlock(&mc);
	jp_mutex_unlock(&mb);
}

static void test_consistent_silent(void)
{
	struct jp_child_result r;

	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_consistent, NULL, &r), 0);
	CU_ASSERT(r.exited && r.status == 0);
	CU_ASSERT_STRING_EQUAL(r.err, "");
}

/* After destroy, the orders a mutex took part in are forgotten. */
static void child_destroyed(void *arg)
{
	jp_mutex_t x, y;

	(void)arg;
	jp__sync_force_lockdep(true);
	jp_mutex_init(&x);
	jp_mutex_init(&y);
	jp_mutex_lock(&x);
	jp_mutex_lock(&y);
	jp_mutex_unlock(&y);
	jp_mutex_unlock(&x);
	jp_mutex_destroy(&x);
	jp_mutex_destroy(&y);
	/* The same memory, new mutexes, the other order: no report. */
	jp_mutex_init(&x);
	jp_mutex_init(&y);
	jp_mutex_lock(&y);
	jp_mutex_lock(&x);
	jp_mutex_unlock(&x);
	jp_mutex_unlock(&y);
}

static void test_destroy_forgets(void)
{
	struct jp_child_result r;

	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_destroyed, NULL, &r), 0);
	CU_ASSERT(r.exited && r.status == 0);
	CU_ASSERT_STRING_EQUAL(r.err, "");
}

static void *take_a(void *arg)
{
	(void)arg;
	jp_mutex_lock(&ma);
	return NULL;		/* exits holding ma */
}

static void child_unlock_not_held(void *arg)
{
	(void)arg;
	jp__sync_force_lockdep(true);
	run_thread(take_a);	/* also: a thread exits holding ma */
	jp_mutex_unlock(&ma);	/* this thread never took it */
}

static void test_unlock_not_held(void)
{
	struct jp_child_result r;

	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_unlock_not_held, NULL, &r), 0);
	CU_ASSERT(MISUSE_OK(r));
	CU_ASSERT_EQUAL(count(r.err, "exits holding mutex"), 1);
	CU_ASSERT_EQUAL(count(r.err, "that it does not hold"), 1);
	CU_ASSERT(has_addr(r.err, &ma));
	/* Two reports naming static functions by offset; the hint once. */
	CU_ASSERT_EQUAL(count(r.err, "test-lockdep(+0x"), 2);
	CU_ASSERT_EQUAL(count(r.err, "link with -rdynamic for names"), 1);
}

static void child_self(void *arg)
{
	(void)arg;
	jp__sync_force_lockdep(true);
	jp_mutex_lock(&mc);
	/* Would deadlock if it went on to lock; lockdep reports before. */
	jp__lockdep_before_lock(&mc, JP__LD_MUTEX, NULL);
	jp_mutex_unlock(&mc);
}

static void test_self_deadlock(void)
{
	struct jp_child_result r;

	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_self, NULL, &r), 0);
	CU_ASSERT(r.exited && r.status == 0);
	CU_ASSERT_EQUAL(count(r.err, "self-deadlock"), 1);
}

/* fork while another thread is inside lockdep: the child can still lock. */
static _Atomic int fork_stop;

static void *nest_loop(void *arg)
{
	(void)arg;
	while (!atomic_load(&fork_stop)) {
		jp_mutex_lock(&ma);
		jp_mutex_lock(&mb);
		jp_mutex_unlock(&mb);
		jp_mutex_unlock(&ma);
	}
	return NULL;
}

static void child_fork(void *arg)
{
	pthread_t t;
	int bad = 0, forks = (int)jp_test_scaled(300, 20);

	(void)arg;
	jp__sync_force_lockdep(true);
	if (pthread_create(&t, NULL, nest_loop, NULL) != 0)
		return;
	for (int i = 0; i < forks; i++) {
		int st;
		pid_t pid = fork();

		if (pid == 0) {
			/* Not ma or mb: the other thread may hold them at the fork. */
			jp_mutex_t local = JP_MUTEX_INIT;

			alarm(10);	/* a deadlocked child fails, not hangs */
			jp_mutex_lock(&mc);
			jp_mutex_lock(&local);	/* nested: goes through lockdep's lock */
			jp_mutex_unlock(&local);
			jp_mutex_unlock(&mc);
			_exit(0);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			if (bad++ == 0)
				fprintf(stderr, "forked child: status 0x%x\n", pid < 0 ? -1 : st);
		}
	}
	atomic_store(&fork_stop, 1);
	pthread_join(t, NULL);
	if (bad)
		fprintf(stderr, "%d forked children failed\n", bad);
}

static void test_fork(void)
{
	struct jp_child_result r;

	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_fork, NULL, &r), 0);
	CU_ASSERT(r.exited && r.status == 0);
	CU_ASSERT_STRING_EQUAL(r.err, "");
	if (r.err[0] != '\0')
		printf("\n%.2000s\n", r.err);
}

/* Lockdep on does not change what the mutex does. */
struct counter {
	jp_mutex_t m;
	uint64_t n;
};

static void count_body(void *ctx, unsigned thread, uint64_t iter)
{
	struct counter *c = ctx;

	(void)thread; (void)iter;
	jp_mutex_lock(&c->m);
	c->n++;
	jp_mutex_unlock(&c->m);
}

static void child_counter(void *arg)
{
	struct counter c = { .m = JP_MUTEX_INIT };
	uint64_t iters = *(uint64_t *)arg;

	jp__sync_force_lockdep(true);
	jp_hammer(4, iters, count_body, &c);
	if (c.n != 4 * iters)
		fprintf(stderr, "counter %llu, expected %llu\n",
			(unsigned long long)c.n, (unsigned long long)(4 * iters));
}

static void test_counter_with_lockdep(void)
{
	struct jp_child_result r;
	uint64_t iters = jp_test_scaled(20000, 100);

	CU_ASSERT_EQUAL_FATAL(jp_test_child(child_counter, &iters, &r), 0);
	CU_ASSERT(r.exited && r.status == 0);
	CU_ASSERT_STRING_EQUAL(r.err, "");
}

int main(int argc, char **argv)
{
	CU_TestInfo tests[] = {
		{ "two-lock inversion: one report, both sites", test_inversion_reported },
		{ "JPSYNC_LOCKDEP=1 in the environment turns it on", test_inversion_from_environment },
		{ "unnamed sites: file(+0xoff) for addr2line, and a hint", test_inversion_sites_for_addr2line },
		{ "consistent order, cond waits, trylock: silent", test_consistent_silent },
		{ "destroy forgets the orders of a mutex", test_destroy_forgets },
		{ "unlock not held, exit holding: reported", test_unlock_not_held },
		{ "locking a mutex already held: reported", test_self_deadlock },
		{ "a counter stays exact with lockdep on", test_counter_with_lockdep },
		{ "fork while lockdep is busy: the child can lock", test_fork },
		CU_TEST_INFO_NULL,
	};
	CU_SuiteInfo suites[] = {
		{ "lockdep", NULL, NULL, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};

	ssize_t len = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
	if (len > 0)
		self_path[len] = '\0';
	if (argc == 2 && strcmp(argv[1], "--inversion") == 0) {
		/* Lock-order checking from JPSYNC_LOCKDEP alone: no forcing. */
		for (int i = 0; i < 2; i++) {
			run_thread(a_then_b);
			run_thread(b_then_a);
		}
		return 0;
	}

	bool no_fork_case = jp_test_on_valgrind() || JP_ON_VALGRIND() ||
			    getenv("VALGRIND") != NULL;

#ifdef TSAN_BUILD
	no_fork_case = true;
#endif
	if (no_fork_case) {
		/*
		 * Not registered under ThreadSanitizer, where a forked child of
		 * this multi-threaded process now and then hangs inside the fork
		 * handlers, nor under helgrind/drd, where the serialised threads
		 * let the busy thread starve the forking one for many minutes.
		 * The fork handlers are checked natively and under ASan.
		 */
		jp_test_unregister(tests, test_fork,
				   "valgrind or ThreadSanitizer: the fork starves or hangs");
	} else if (jp_test_emulated()) {
		/* qemu-user aborts now and then when a guest forks while
		 * another guest thread runs (test-alloc-fork.c says more). */
		jp_test_unregister(tests, test_fork,
				   "qemu-user: fork while threads run aborts the emulator");
	}
	return jp_test_run(suites);
}
