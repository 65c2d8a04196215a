/*
 * test-alloc-fork.c - fork() and jp_alloc(3): while other threads allocate,
 * from signal handlers, nested in other forks, racing stdio; and dlopen by
 * a program not linked with libjpsync (black-box, through the shared
 * library; some cases run tests/alloc/alloc-helper).
 */
#define _GNU_SOURCE	/* fopencookie, mincore */
#include <jpsync/alloc.h>
#include <jpsync/hammer.h>

#include "testutil.h"
#include "alloc-testutil.h"
#include "fork-reap.h"

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
 * fork() while blocks are freed remotely: one thread allocates blocks of
 * 16 bytes to 4 KiB and hands them through a small ring to another, which
 * frees them (every free a remote one, into the shared lists).  Each child
 * allocates 2000 blocks of the same sizes, writes its index into each and
 * reads them all back: the lists the fork caught half-way hand out no
 * block twice.
 */
#define PASS_RING 64
static struct {
	pthread_mutex_t lock;
	unsigned head, tail;
	void *slot[PASS_RING];	/* global: see fork_blocks */
} pass = { .lock = PTHREAD_MUTEX_INITIALIZER };
static _Atomic int pass_stop;

static void *pass_producer(void *arg)
{
	unsigned i = 0;

	(void)arg;
	while (!atomic_load(&pass_stop)) {
		void *p = jp_alloc(16 + (i++ * 131u) % 4080);

		pthread_mutex_lock(&pass.lock);
		if (pass.head - pass.tail < PASS_RING) {
			pass.slot[pass.head++ % PASS_RING] = p;
			p = NULL;
		}
		pthread_mutex_unlock(&pass.lock);
		if (p != NULL) {	/* full: wait for the consumer */
			jp_free(p);
			sched_yield();
		}
	}
	return NULL;
}

static void *pass_consumer(void *arg)
{
	(void)arg;
	while (!atomic_load(&pass_stop)) {
		void *p = NULL;

		pthread_mutex_lock(&pass.lock);
		if (pass.tail != pass.head)
			p = pass.slot[pass.tail++ % PASS_RING];
		pthread_mutex_unlock(&pass.lock);
		if (p != NULL)
			jp_free(p);
		else
			sched_yield();
	}
	return NULL;
}

static void test_fork_during_remote_frees(void)
{
	pthread_t t[2];
	int forks = (int)jp_test_scaled(40, 3);

	atomic_store(&pass_stop, 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t[0], NULL, pass_producer, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t[1], NULL, pass_consumer, NULL), 0);
	for (int f = 0; f < forks; f++) {
		int st;
		pid_t pid = fork();

		CU_ASSERT_FATAL(pid >= 0);
		if (pid == 0) {
			static uint64_t *blk[2000];
			int bad = 0;

			alarm(20);	/* a deadlock fails the test, not the run */
			for (unsigned i = 0; i < 2000; i++) {
				blk[i] = jp_alloc(16 + (i * 131u) % 4080);
				if (blk[i] == NULL)
					jp_test_fork_exit(2);
				blk[i][0] = i;
			}
			for (unsigned i = 0; i < 2000; i++) {
				bad += blk[i][0] != i;
				jp_free(blk[i]);
			}
			jp_test_fork_exit(bad == 0 ? 0 : 1);	/* see fork_blocks */
		}
		CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
		CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	atomic_store(&pass_stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	while (pass.tail != pass.head)
		jp_free(pass.slot[pass.tail++ % PASS_RING]);
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
	int saved = errno;

	(void)sig;
	if (jp_fork_and_reap() != 0)
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

/*
 * fork() while other threads make the process's first allocations: each
 * run of the helper is a new process, whose allocator starts (and, in
 * 1.1, registered its fork handlers) under the forks.  A child then waited
 * forever, in 1 process in 10, for a lock or a start that a thread it does
 * not have held.
 */
static void test_fork_at_start(void)
{
	int runs = jp_test_on_valgrind() ? 2 : (int)jp_test_scaled(60, 20), failed = 0;

	for (int r = 0; r < runs; r++) {
		struct jp_child_result res;

		run_helper("fork-at-start", NULL, NULL, &res);
		if (!(res.exited && res.status == 0 && strcmp(res.err, "bad 0\n") == 0)) {
			if (failed++ == 0)
				printf("\n  run %d: exited %d status %d signal %d: %s\n", r,
				       res.exited, res.status, res.sig, res.err);
		}
	}
	CU_ASSERT_EQUAL(failed, 0);
	if (failed != 0)
		printf("  %d of %d runs had a child that failed\n", failed, runs);
}

/* Run tests/alloc/NAME, a program not linked with libjpsync, on the
 * built library; it must exit 0. */
static void run_unlinked(const char *name)
{
	char prog[4096], lib[4096];
	struct exec_arg e = { prog, lib, { NULL } };
	struct jp_child_result res;

	snprintf(prog, sizeof prog, "%s/tests/alloc/%s", builddir(), name);
	snprintf(lib, sizeof lib, "%s/lib/.libs/libjpsync.so.1", builddir());
	CU_ASSERT_EQUAL_FATAL(jp_test_child(exec_child, &e, &res), 0);
	CU_ASSERT(res.exited && res.status == 0);
	if (!(res.exited && res.status == 0))
		printf("\n%s\n", res.err);
}

static void test_dlopen_by_unlinked_program(void)
{
	run_unlinked("alloc-dlopen");
}

/* dlclose of the library while a thread that freed remotely with it
 * lives: the thread's exit and the blocks stay sound (alloc-dlclose.c;
 * a SIGSEGV at the thread's exit before -z nodelete). */
static void test_dlclose_while_threads_live(void)
{
	run_unlinked("alloc-dlclose");
}

/* fork from a signal handler that interrupts the allocator's start in
 * the thread making it (alloc-start-fork.c; it waited for itself forever
 * when the start was marked running before it was marked as this
 * thread's, seen under qemu-i386 in the case above). */
static void test_fork_in_handler_during_start(void)
{
	run_unlinked("alloc-start-fork");
}

static CU_TestInfo fork_tests[] = {
	{ "fork while other threads allocate", test_fork_while_allocating },
	{ "fork from a signal handler that interrupted the allocator", test_fork_in_signal_handler },
	{ "fork from a signal handler that interrupted the allocator's start", test_fork_in_handler_during_start },
	{ "fork from a signal handler inside another fork's prepare handler", test_fork_nested_in_prepare },
	{ "stress: forks nested at random points of other forks", test_fork_nested_stress },
	{ "stress: fork while 6 threads are inside the allocator", test_fork_threads_in_malloc },
	{ "fork while other threads make the first allocations", test_fork_at_start },
	{ "fork while blocks are freed by another thread than their own", test_fork_during_remote_frees },
	{ "dlopen by a program not linked with libjpsync", test_dlopen_by_unlinked_program },
	{ "dlclose while a thread that freed remotely lives", test_dlclose_while_threads_live },
	{ "fork() racing getline and fflush(NULL) in other threads: no deadlock", test_fork_stdio },
	{ NULL, NULL },
};

static CU_SuiteInfo suites[] = {
	{ "alloc-fork", NULL, NULL, NULL, NULL, fork_tests },
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
		jp_test_unregister(fork_tests, test_fork_in_signal_handler,
				   "sanitizers and valgrind: fork in a signal handler");
		jp_test_unregister(fork_tests, test_fork_nested_stress,
				   "sanitizers and valgrind: fork in a signal handler");
		jp_test_unregister(fork_tests, test_fork_in_handler_during_start,
				   "sanitizers and valgrind: fork in a signal handler");
	}
	if (jp_test_sanitized())
		/* The helper itself is built with the sanitizer here. */
		jp_test_unregister(fork_tests, test_fork_nested_in_prepare,
				   "sanitizers: fork in a signal handler");
	if (jp_test_sanitized()) {
		/* The sanitizer runtime must come first in an unlinked program. */
		jp_test_unregister(fork_tests, test_dlopen_by_unlinked_program,
				   "sanitizer build: the runtime must load first");
		jp_test_unregister(fork_tests, test_dlclose_while_threads_live,
				   "sanitizer build: the runtime must load first");
	}
	if (jp_test_on_drd()) {
		/* After the fork stress, every lock's happens-before
		 * annotation costs drd milliseconds: the memory cases that
		 * followed it (when test-alloc was one program) took more than
		 * 20 minutes each in CI (vgdb: always in the annotation); with
		 * the stress left out that suite took 106 s.  memcheck and
		 * helgrind run it. */
		jp_test_unregister(fork_tests, test_fork_threads_in_malloc,
				   "drd: makes every later lock annotation slow");
	}
	if (jp_test_emulated()) {
		/* qemu-user aborts now and then when a guest forks while other
		 * guest threads run ("cpu_exec: assertion failed: (cpu ==
		 * current_cpu)"), a bug of the emulator that other projects'
		 * suites meet too.  The fork cases with one thread stay. */
		jp_test_unregister(fork_tests, test_fork_while_allocating,
				   "qemu-user: fork while threads run aborts the emulator");
		jp_test_unregister(fork_tests, test_fork_threads_in_malloc,
				   "qemu-user: fork while threads run aborts the emulator");
		jp_test_unregister(fork_tests, test_fork_stdio,
				   "qemu-user: fork while threads run aborts the emulator");
		jp_test_unregister(fork_tests, test_fork_at_start,
				   "qemu-user: fork while threads run aborts the emulator");
		jp_test_unregister(fork_tests, test_fork_during_remote_frees,
				   "qemu-user: fork while threads run aborts the emulator");
	}
	return jp_test_run(suites);
}
