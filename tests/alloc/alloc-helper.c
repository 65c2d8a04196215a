/*
 * alloc-helper.c - small programs for the test-alloc suites and check-alloc-valgrind.sh
 * that need an environment of their own (options are read once per
 * process) or a tool around them.
 *
 *   alloc-helper check-ok        JPSYNC_CHECK=1: normal use must pass
 *   alloc-helper check-aligned   JPSYNC_CHECK=1: aligned blocks freed, then
 *                                plain ones of the same size (must pass)
 *   alloc-helper check-realloc   JPSYNC_CHECK=1: realloc of every kind, in
 *                                place at the same size (must pass)
 *   alloc-helper check-uaf       a write into a freed block, then reuse
 *   alloc-helper check-overflow  a write past the requested size, then free
 *   alloc-helper check-underflow a write before the block, then free
 *   alloc-helper check-overflow-huge  one byte past a huge block of 300000
 *   alloc-helper check-overflow-256k  one byte past a block of 256 KiB
 *   alloc-helper check-double    a double free
 *   alloc-helper check-sites     a double free of a block allocated in
 *                                alloc_here() and first freed in
 *                                free_here() (linked with -rdynamic, so
 *                                that check mode's report names them)
 *   alloc-helper check-foreign   a free of a stack address
 *   alloc-helper check-free-sized  jp_free_sized of a block of 100 bytes
 *                                with 101 (-small: 99; -huge: 300000 bytes
 *                                freed with 299999)
 *   alloc-helper check-uaf-huge  a write into a freed block of 300000 bytes
 *                                (at byte 5000: its second page)
 *   alloc-helper check-double-huge  a double free of a block of 300000 bytes
 *   alloc-helper check-wild      a huge block freed, then a write to an
 *                                address never mapped: a plain SIGSEGV
 *   alloc-helper check-wild-own  the same, with the program's own SIGSEGV
 *                                handler installed first: it runs (exit 3)
 *   alloc-helper check-free-sized-ok  every way of asking for a block,
 *                                freed with the size asked (must pass)
 *   alloc-helper fork-nested     a signal handler forks inside a fork's
 *                                prepare handler (before the allocator's);
 *                                then parent and children allocate
 *   alloc-helper fork-nested-stress  $FORKS forks in a loop while a 100 us
 *                                timer's handler forks too, landing now
 *                                and then inside the loop's fork handlers
 *   alloc-helper fork-at-start   two threads make the process's first
 *                                allocations while the main thread forks
 *                                20 times; each child allocates; prints
 *                                "bad <children that failed>"
 * The check-* cases that must abort print "ptr=<the block>" on stderr
 * first, so that the test can compare the whole message.
 *   alloc-helper stats           a few allocations (JPSYNC_STATS at exit)
 *   alloc-helper stats-process   touches 16 MiB, sleeps 0.2 s, spends 0.05 s
 *                                of CPU, prints "pid=<its pid>" on stderr
 *                                (JPSYNC_STATS at exit: the process lines)
 *   alloc-helper stats-signal    raises SIGUSR2 twice (JPSYNC_STATS_SIGNAL=USR2:
 *                                a table each time)
 *   alloc-helper stats-signal-own installs its own SIGUSR2 handler, raises
 *                                it, prints "handled" (the program wins)
 *   alloc-helper stats-signal-storm  allocates and frees for 0.3 s under a
 *                                SIGALRM every 200 us (JPSYNC_STATS_SIGNAL=ALRM:
 *                                the handler interrupts the allocator, its
 *                                locks held too); prints "done"
 *   alloc-helper stats-exact     small and huge blocks in known amounts:
 *                                checks in use, its peak and given back
 *                                exactly; prints "FAIL: ..." lines
 *   alloc-helper leak            loses one block (memcheck must see it)
 *   alloc-helper use-after-free  reads a freed block (memcheck must see it)
 *   alloc-helper clean           allocates and frees everything
 *   alloc-helper bulk            BULK_THREADS threads allocate and free in
 *                                bulk, then all wait: prints the bytes
 *                                cached and the threads on stderr
 */
#include <jpsync/alloc.h>

#include <stdbool.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

static void *volatile sink;

static int check_ok(void)
{
	void *p[1000];

	for (int r = 0; r < 3; r++) {
		for (int i = 0; i < 1000; i++) {
			size_t n = (size_t)(i * 37 % 3000);

			p[i] = jp_alloc(n);
			if (p[i] == NULL || jp_usable_size(p[i]) < n)
				return 1;
			memset(p[i], 0x5a, n);
		}
		for (int i = 0; i < 1000; i += 2) {
			/* i == 0: realloc to 0 bytes frees, returns NULL */
			p[i] = jp_realloc(p[i], (size_t)i * 3);
			if ((p[i] == NULL) != (i == 0))
				return 1;
			if (p[i] != NULL)
				memset(p[i], 1, (size_t)i * 3);
		}
		for (int i = 0; i < 1000; i++)
			jp_free(p[i]);
	}
	p[0] = jp_calloc(10, 10);
	for (int i = 0; i < 100; i++)
		if (((unsigned char *)p[0])[i] != 0)
			return 1;
	jp_free(p[0]);
	p[0] = jp_alloc_aligned(256, 100);
	if (p[0] == NULL || (uintptr_t)p[0] % 256 != 0)
		return 1;
	jp_free(p[0]);
	return 0;
}

/* check-free-sized-ok: a block freed with the size it was asked for,
 * whichever call asked: check mode must say nothing. */
static int check_free_sized_ok(void)
{
	static const size_t sizes[] = { 0, 1, 15, 16, 17, 100, 1000, 4096, 65536,
					(256 << 10) - 48, 256 << 10, 300000, 5 << 20 };
	size_t n = sizeof sizes / sizeof sizes[0];
	void *p;

	for (size_t i = 0; i < n; i++) {
		size_t sz = sizes[i];

		jp_free_sized(jp_alloc(sz), sz);
		jp_free_sized(jp_calloc(sz, 3), sz * 3);
		jp_free_sized(jp_calloc(3, sz), 3 * sz);
		jp_free_sized(jp_reallocarray(NULL, 5, sz), 5 * sz);
		jp_free_sized(jp_alloc_aligned(64, sz), sz);
		jp_free_sized(jp_alloc_aligned(8192, sz), sz);
		if (jp_posix_memalign(&p, 4096, sz) != 0)
			return 1;
		jp_free_sized(p, sz);
		/* realloc from and to every size: in place or moved, the
		 * size to free is the last one asked for */
		for (size_t j = 0; j < n; j++) {
			if (sizes[j] == 0)
				continue;
			p = jp_alloc(sz);
			p = jp_realloc(p, sizes[j]);
			if (p == NULL)
				return 1;
			jp_free_sized(p, sizes[j]);
			if (sizes[j] < 2)
				continue;	/* to 0 bytes: freed */
			p = jp_alloc(sizes[j]);
			p = jp_reallocarray(p, 2, sizes[j] / 2);
			if (p == NULL)
				return 1;
			jp_free_sized(p, 2 * (sizes[j] / 2));
		}
	}
	jp_free_sized(NULL, 12);
	return 0;
}

/* bulk: every thread has made its cache before any bin can grow, and all
 * caches are alive when the statistics are read. */
#define BULK_THREADS	16
#define BULK_BLOCKS	4096
static pthread_barrier_t bulk_start, bulk_end, bulk_read;

static void *bulk_thread(void *arg)
{
	static void *blk[BULK_THREADS][BULK_BLOCKS];
	void **b = blk[(uintptr_t)arg];

	jp_free(jp_alloc(80));
	pthread_barrier_wait(&bulk_start);
	for (int r = 0; r < 20; r++) {
		for (int i = 0; i < BULK_BLOCKS; i++)
			if ((b[i] = jp_alloc(80)) == NULL)
				abort();
		for (int i = 0; i < BULK_BLOCKS; i++)
			jp_free(b[i]);
	}
	pthread_barrier_wait(&bulk_end);
	pthread_barrier_wait(&bulk_read);
	return NULL;
}

static int bulk(void)
{
	pthread_t t[BULK_THREADS];
	struct jp_alloc_stats st;

	pthread_barrier_init(&bulk_start, NULL, BULK_THREADS);
	pthread_barrier_init(&bulk_end, NULL, BULK_THREADS + 1);
	pthread_barrier_init(&bulk_read, NULL, BULK_THREADS + 1);
	for (uintptr_t i = 0; i < BULK_THREADS; i++)
		if (pthread_create(&t[i], NULL, bulk_thread, (void *)i) != 0)
			return 1;
	pthread_barrier_wait(&bulk_end);
	if (jp_alloc_stats(&st, sizeof st) != 0)
		return 1;
	fprintf(stderr, "cached=%llu threads=%llu\n", (unsigned long long)st.cached,
		(unsigned long long)st.threads);
	pthread_barrier_wait(&bulk_read);
	for (int i = 0; i < BULK_THREADS; i++)
		pthread_join(t[i], NULL);
	return 0;
}

/* memalign(64, 1000) + free + malloc(1000), 100 times, sizes 100-5000,
 * alignments 32 and 64: check mode took the aligned block, which it had
 * not written, for a freed checked one (jpsync 1.1.0 before the fix). */
static int check_aligned(void)
{
	for (size_t align = 32; align <= 64; align *= 2)
		for (size_t n = 100; n <= 5000; n += 100)
			for (int i = 0; i < 100; i++) {
				char *p = jp_alloc_aligned(align, n), *q;

				if (p == NULL || (uintptr_t)p % align != 0)
					return 1;
				memset(p, 1, 16);	/* the header only, as gcc */
				jp_free(p);
				q = jp_alloc(n);
				if (q == NULL)
					return 1;
				memset(q, 2, n);
				jp_free(q);
			}
	return 0;
}

/* realloc from and to every kind; to the same size stays in place. */
static int check_realloc(void)
{
	static const size_t steps[] = { 10, 100, 5000, 200000, 262144, 300000,
					4 << 20, 100000, 64, 1 };
	unsigned char *p = jp_alloc_aligned(64, 40), *q;
	size_t have = 40;

	memset(p, 0, have);
	for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
		p = jp_realloc(p, steps[i]);
		if (p == NULL)
			return 1;
		for (size_t j = 0; j < (have < steps[i] ? have : steps[i]); j++)
			if (p[j] != (unsigned char)i)
				return 2;
		memset(p, (int)i + 1, steps[i]);
		have = steps[i];
		q = jp_realloc(p, have);
		if (q != p)
			return 3;	/* the same size: in place */
	}
	jp_free(p);
	return 0;
}

/*
 * fork-nested.  The helper's own prepare handler is registered after the
 * allocator's (which the library registers when it is loaded), so it runs
 * before it: the nested fork comes before the allocator takes its locks.
 * (A fork nested inside the allocator's locks is fork-nested-stress's: its
 * timer's signal is delivered as fork returns, after every prepare
 * handler.  Registering this one first, from the executable's preinit
 * function, crashed at start on s390x.)  It raises a signal whose
 * handler forks again (in a single-threaded process, where glibc's own
 * fork takes no lock).  Parent and both children must then allocate.
 */
static volatile sig_atomic_t nested_armed, nested_bad;

static void exercise(void)
{
	void *p[64];

	for (int i = 0; i < 64; i++)
		p[i] = jp_alloc((size_t)(i * 523));
	for (int i = 0; i < 64; i++)
		jp_free(p[i]);
	jp_free(jp_alloc(1 << 20));	/* huge: the huge lock */
	jp_thread_flush();		/* the class locks */
	jp_alloc_trim();		/* the segment lock */
}

/* Fork a child that exercises the allocator and exits; true if it did. */
static bool fork_exercise(void)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		exercise();
		_exit(0);
	}
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	       WEXITSTATUS(st) == 0;
}

static void nested_fork(int sig)
{
	int saved = errno;

	(void)sig;
	if (!fork_exercise())
		nested_bad = 1;
	errno = saved;
}

static void prepare_raises(void)
{
	if (nested_armed) {
		nested_armed = 0;	/* not again in the nested fork */
		raise(SIGUSR1);
	}
}

static int fork_nested(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = nested_fork;
	sigemptyset(&sa.sa_mask);
	if (pthread_atfork(prepare_raises, NULL, NULL) != 0 ||
	    sigaction(SIGUSR1, &sa, NULL) != 0)
		return 2;
	alarm(30);	/* a deadlock ends by SIGALRM */
	exercise();
	for (int r = 0; r < 20; r++) {
		nested_armed = 1;
		if (!fork_exercise())
			return 3;
		exercise();	/* the parent: every lock free again */
	}
	return nested_bad ? 4 : 0;
}

/*
 * fork-nested-stress: single-threaded (a process that ever had a thread
 * deadlocks in glibc's own fork when a handler of a fork forks), forks in a
 * loop while a 100 us CPU-time timer's handler forks as well.  The signal
 * is blocked except around fork(), so that the handler's fork lands inside
 * the loop's fork (the kernel delivers it as fork returns: after the
 * prepare handlers took the locks, before the parent handlers release
 * them) or just before it, and never inside the allocator's own code: a
 * child forked from a handler that interrupted malloc itself inherits a
 * half-done operation (as with any malloc; POSIX allows such a child only
 * async-signal-safe calls), which is not what this tests.
 */
static volatile sig_atomic_t nest_forks, nest_inside, in_fork;

static void timer_fork(int sig)
{
	if (in_fork)
		nest_inside++;
	nested_fork(sig);
	nest_forks++;
}

static void mark_in_fork(void)
{
	in_fork = 1;	/* registered after the allocator's: runs before it */
}


static void mark_out_of_fork(void)
{
	in_fork = 0;
}

static int fork_nested_stress(void)
{
	const char *e = getenv("FORKS");
	int forks = e != NULL ? atoi(e) : 300, bad = 0;
	struct sigaction sa;
	struct itimerval it = { { 0, 100 }, { 0, 100 } }, off = { { 0, 0 }, { 0, 0 } };
	sigset_t prof;

	alarm(120);	/* a deadlock ends by SIGALRM */
	sigemptyset(&prof);
	sigaddset(&prof, SIGPROF);
	sigprocmask(SIG_BLOCK, &prof, NULL);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = timer_fork;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (pthread_atfork(mark_in_fork, NULL, NULL) != 0 ||
	    sigaction(SIGPROF, &sa, NULL) != 0)
		return 2;
	exercise();	/* the allocator's handlers, then ours: */
	if (pthread_atfork(NULL, mark_out_of_fork, mark_out_of_fork) != 0)
		return 2;
	setitimer(ITIMER_PROF, &it, NULL);
	for (int f = 0; f < forks; f++) {
		int st = 0;
		pid_t pid;

		sigprocmask(SIG_UNBLOCK, &prof, NULL);
		pid = fork();
		sigprocmask(SIG_BLOCK, &prof, NULL);
		if (pid == 0) {
			setitimer(ITIMER_PROF, &off, NULL);
			exercise();
			_exit(0);
		}
		while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bad++;
		exercise();
	}
	setitimer(ITIMER_PROF, &off, NULL);
	fprintf(stderr, "forks %d nested %d (inside a fork %d) bad %d/%d\n", forks,
		(int)nest_forks, (int)nest_inside, bad, (int)nested_bad);
	return bad == 0 && !nested_bad ? 0 : 1;
}

/* ---- fork-at-start ---------------------------------------------------- */

/* The allocator starts while the main thread forks: the child must find
 * it started (or not begun) and its locks free. */
static _Atomic int start_go, start_stop;
static void *start_blocks[2][64];	/* global: see test-alloc-fork's fork_blocks */

static void *start_thread(void *arg)
{
	void **p = start_blocks[(uintptr_t)arg];

	while (!atomic_load(&start_go))
		;
	while (!atomic_load(&start_stop)) {
		for (int i = 0; i < 64; i++)
			p[i] = jp_alloc((size_t)(16 + i * 40));
		for (int i = 0; i < 64; i++)
			jp_free(p[i]);
	}
	return NULL;
}

static int fork_at_start(void)
{
	pthread_t t[2];
	int bad = 0;

	for (uintptr_t i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, start_thread, (void *)i) != 0)
			return 2;
	atomic_store(&start_go, 1);	/* no jp_alloc in this process before */
	for (int f = 0; f < 20; f++) {
		int st;
		pid_t pid = fork();

		if (pid == 0) {
			alarm(10);	/* a deadlock ends by SIGALRM */
			for (int i = 0; i < 100; i++)
				jp_free(jp_alloc((size_t)(16 + i * 40)));
			_exit(0);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			bad++;
	}
	atomic_store(&start_stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	fprintf(stderr, "bad %d\n", bad);
	return 0;
}

/* ---- stats-signal-own ------------------------------------------------ */

static volatile sig_atomic_t own_handled;

static void own_handler(int sig)
{
	(void)sig;
	own_handled = 1;
}

/* ---- stats-signal-storm ---------------------------------------------- */

/* Sizes that refill and flush thread caches and take the huge path, so
 * that signals land while the allocator holds its locks. */
static int stats_signal_storm(void)
{
	struct itimerval every = { { 0, 200 }, { 0, 200 } }, stop = { { 0, 0 }, { 0, 0 } };
	struct timespec t0, t;
	static void *b[512];

	clock_gettime(CLOCK_MONOTONIC, &t0);
	setitimer(ITIMER_REAL, &every, NULL);
	do {
		for (int i = 0; i < 512; i++)
			b[i] = jp_alloc((size_t)(i % 7 == 0 ? 300000 : 16 + i * 24));
		for (int i = 0; i < 512; i++)
			jp_free(b[i]);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 300000000L);
	setitimer(ITIMER_REAL, &stop, NULL);
	fprintf(stderr, "done\n");
	return 0;
}

/* ---- stats-process --------------------------------------------------- */

/* What the table's process lines must show at least (test-alloc-env.c
 * checks them): 16 MiB resident at once, 0.2 s asleep, 0.05 s of CPU. */
static int stats_process(void)
{
	const size_t touched = (size_t)16 << 20;
	struct timespec pause = { 0, 200000000 }, cpu;
	volatile unsigned long spin = 0;
	char *p = jp_alloc(touched);

	if (p == NULL)
		return 1;
	memset(p, 1, touched);
	sink = p;
	jp_free(p);
	nanosleep(&pause, NULL);
	do {
		for (int i = 0; i < 100000; i++)
			spin++;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
	} while (cpu.tv_sec == 0 && cpu.tv_nsec < 50000000);
	fprintf(stderr, "pid=%ld\n", (long)getpid());
	return 0;
}

/* ---- stats-exact ----------------------------------------------------- */

static int exact_bad;

static void exact_eq(const char *what, unsigned long long got, unsigned long long want)
{
	if (got != want) {
		fprintf(stderr, "FAIL: %s: %llu, expected %llu (%+lld)\n", what, got, want,
			(long long)(got - want));
		exact_bad = 1;
	}
}

static void exact_stats(struct jp_alloc_stats *st)
{
	if (jp_alloc_stats(st, sizeof *st) != 0) {
		fprintf(stderr, "FAIL: jp_alloc_stats\n");
		exit(1);
	}
}

/* The mapping of a huge block of n bytes: a header page, the block,
 * rounded to pages (jp_alloc(3): "huge blocks"). */
static unsigned long long huge_map(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (4096 + n + page - 1) / page * page;
}

/*
 * One thread, no block freed by another, so nothing is on a transfer chain:
 * bytes in use plus bytes in the thread's cache are the bytes out of the
 * spans, and the peak is the most of those plus huge blocks at one moment.
 * Blocks of this program only come from jp_alloc (stdio uses glibc's
 * malloc), so every figure is known.
 */
static int stats_exact(void)
{
	enum { NSMALL = 1000, SMALL = 1000 };
	const size_t big = (size_t)65 << 20, mid = (size_t)8 << 20;
	struct jp_alloc_stats st0, st1, st2;
	unsigned long long small_bytes, t0, held;
	void *small[NSMALL], *h, *hs[9];
	size_t got;

	/* Nothing cached, nothing dirty: what goes back below is ours. */
	jp_alloc_trim();
	exact_stats(&st0);

	/* 1. The peak: 65 MiB held with a thousand small blocks, all freed
	 * before the figures are read (the "peak 1.0 MiB"). */
	for (int i = 0; i < NSMALL; i++)
		small[i] = jp_alloc(SMALL);
	small_bytes = (unsigned long long)jp_usable_size(small[0]) * NSMALL;
	h = jp_alloc(big);
	exact_stats(&st1);
	held = st1.in_use + st1.cached;	/* out of the spans, plus huge */
	exact_eq("in use, holding", st1.in_use, st0.in_use + small_bytes + huge_map(big));
	exact_eq("huge bytes, holding", st1.huge_bytes, huge_map(big));
	exact_eq("peak, holding", st1.peak_in_use, held);
	jp_free(h);
	for (int i = 0; i < NSMALL; i++)
		jp_free(small[i]);
	exact_stats(&st2);
	exact_eq("in use, all freed", st2.in_use, st0.in_use);
	exact_eq("peak, all freed", st2.peak_in_use, held);
	/* 65 MiB does not fit the huge cache (at most 64 MiB): unmapped at
	 * its free, every page of it given back. */
	exact_eq("given back, 65 MiB freed", st2.trimmed - st1.trimmed, huge_map(big));

	/* 2. A shrink in place (mremap) gives back the tail. */
	jp_alloc_trim();
	exact_stats(&st1);
	h = jp_alloc(mid);
	h = jp_realloc(h, (size_t)1 << 20);
	exact_stats(&st2);
	exact_eq("given back, 8 MiB shrunk to 1 MiB", st2.trimmed - st1.trimmed,
		 huge_map(mid) - huge_map((size_t)1 << 20));
	exact_eq("huge bytes, shrunk", st2.huge_bytes, huge_map((size_t)1 << 20));
	jp_free(h);

	/* 3. The huge cache keeps 8 freed mappings, their pages resident (8
	 * of 300 KiB are within its 4 MiB): the ninth pushes the oldest out,
	 * unmapped with its resident pages, which count as given back. */
	jp_alloc_trim();
	exact_stats(&st1);
	for (int i = 0; i < 9; i++)
		hs[i] = jp_alloc(300 << 10);
	for (int i = 0; i < 9; i++)
		jp_free(hs[i]);
	exact_stats(&st2);
	exact_eq("given back, one of 9 mappings out of the huge cache",
		 st2.trimmed - st1.trimmed, huge_map(300 << 10));
	/* jp_alloc_trim's count is the figure's growth: the 8 cached ones. */
	t0 = st2.trimmed;
	got = jp_alloc_trim();
	exact_stats(&st2);
	exact_eq("given back by jp_alloc_trim", st2.trimmed - t0, got);
	if (got < 8 * huge_map(300 << 10))
		exact_eq("jp_alloc_trim, at least the 8 cached", got, 8 * huge_map(300 << 10));
	return exact_bad;
}

/* check-wild: an address nothing is mapped at (volatile: the compiler
 * knows nothing of it). */
static int *volatile wild = (int *)16;

static void own_segv(int sig)
{
	(void)sig;
	write(2, "own handler\n", 12);
	_exit(3);
}

static void *noted(void *p)
{
	fprintf(stderr, "ptr=%p\n", p);
	return p;
}

/* check-sites: the two sites the report must name.  Not static, so that
 * the dynamic symbol table names them; the empty asm keeps each call a
 * call (not a jump, which would leave the function off the stack). */
#ifdef __clang__
#define SITE __attribute__((noinline, used))
#else
#define SITE __attribute__((noinline, noclone, used))
#endif
void *alloc_here(size_t n);
void free_here(void *p);

SITE void *alloc_here(size_t n)
{
	void *p = jp_alloc(n);

	__asm__ volatile("" ::: "memory");
	return p;
}

SITE void free_here(void *p)
{
	jp_free(p);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	unsigned char *p;

	if (strcmp(mode, "bulk") == 0)
		return bulk();
	if (strcmp(mode, "check-ok") == 0)
		return check_ok();
	if (strcmp(mode, "fork-nested") == 0)
		return fork_nested();
	if (strcmp(mode, "fork-nested-stress") == 0)
		return fork_nested_stress();
	if (strcmp(mode, "fork-at-start") == 0)
		return fork_at_start();
	if (strcmp(mode, "check-aligned") == 0)
		return check_aligned();
	if (strcmp(mode, "setenv-check") == 0) {
		/* jp_alloc(3): each variable is read when the allocator
		 * starts, so a program may set one before its first call. */
		setenv("JPSYNC_CHECK", "1", 1);
		p = jp_alloc(10);
		/* check mode's usable size is the size asked */
		fprintf(stderr, "usable=%zu\n", jp_usable_size(p));
		jp_free(p);
		return 0;
	}
	if (strcmp(mode, "check-realloc") == 0)
		return check_realloc();
	if (strcmp(mode, "check-uaf") == 0) {
		p = noted(jp_alloc(100));
		jp_free(p);
		p[50] = 1;		/* the bug */
		for (int i = 0; i < 100; i++)
			sink = jp_alloc(100);
		return 0;
	}
	if (strcmp(mode, "check-overflow") == 0) {
		p = noted(jp_alloc(100));
		p[100] = 1;		/* the bug */
		jp_free(p);
		return 0;
	}
	if (strcmp(mode, "check-underflow") == 0) {
		p = noted(jp_alloc(100));
		p[-1] = 1;		/* the bug */
		jp_free(p);
		return 0;
	}
	if (strcmp(mode, "check-overflow-huge") == 0) {
		p = noted(jp_alloc(300000));
		p[300000] = 1;		/* the bug */
		jp_free(p);
		return 0;
	}
	if (strcmp(mode, "check-overflow-256k") == 0) {
		p = noted(jp_alloc(256 << 10));
		p[256 << 10] = 1;	/* the bug */
		jp_free(p);
		return 0;
	}
	if (strcmp(mode, "check-double") == 0) {
		p = noted(jp_alloc(100));
		jp_free(p);
		jp_free(p);		/* the bug */
		return 0;
	}
	if (strcmp(mode, "check-sites") == 0) {
		p = noted(alloc_here(100));
		free_here(p);
		jp_free(p);		/* the bug */
		return 0;
	}
	if (strcmp(mode, "check-free-sized") == 0) {
		/* 101 bytes fit the block (its class holds more), so only
		 * check mode, which knows the request, can tell. */
		p = noted(jp_alloc(100));
		jp_free_sized(p, 101);	/* the bug */
		return 0;
	}
	if (strcmp(mode, "check-free-sized-small") == 0) {
		/* smaller than asked: within the block, and the fast path's
		 * test (size <= the block's) lets it through by default */
		p = noted(jp_alloc(100));
		jp_free_sized(p, 99);	/* the bug */
		return 0;
	}
	if (strcmp(mode, "check-free-sized-huge") == 0) {
		p = noted(jp_alloc(300000));
		jp_free_sized(p, 299999);	/* the bug */
		return 0;
	}
	if (strcmp(mode, "check-uaf-huge") == 0) {
		p = noted(jp_alloc(300000));
		jp_free(p);
		((volatile unsigned char *)p)[5000] = 1;	/* the bug */
		return 0;
	}
	if (strcmp(mode, "check-double-huge") == 0) {
		p = noted(alloc_here(300000));
		free_here(p);
		jp_free(p);		/* the bug */
		return 0;
	}
	if (strcmp(mode, "check-wild") == 0) {
		/* check mode's fault handler is installed by now; a fault
		 * outside its quarantine is the program's own crash */
		jp_free(jp_alloc(300000));
		*wild = 1;		/* the bug */
		return 0;
	}
	if (strcmp(mode, "check-wild-own") == 0) {
		/* the program's handler, installed first, still gets its
		 * own faults */
		struct sigaction sa;

		memset(&sa, 0, sizeof sa);
		sa.sa_handler = own_segv;
		sigaction(SIGSEGV, &sa, NULL);
		jp_free(jp_alloc(300000));
		*wild = 1;		/* the bug */
		return 0;
	}
	if (strcmp(mode, "check-free-sized-ok") == 0)
		return check_free_sized_ok();
	if (strcmp(mode, "check-foreign") == 0) {
		char local[16];

		jp_free(noted(local));	/* the bug */
		return 0;
	}
	if (strcmp(mode, "stats") == 0 || strcmp(mode, "clean") == 0) {
		for (int i = 0; i < 1000; i++) {
			p = jp_alloc((size_t)i);
			jp_free(p);
		}
		p = jp_alloc(1 << 20);
		jp_free(p);
		return 0;
	}
	if (strcmp(mode, "stats-exact") == 0)
		return stats_exact();
	if (strcmp(mode, "stats-process") == 0)
		return stats_process();
	if (strcmp(mode, "stats-signal") == 0) {
		p = jp_alloc(1000);
		raise(SIGUSR2);
		jp_free(p);
		raise(SIGUSR2);
		return 0;
	}
	if (strcmp(mode, "stats-signal-storm") == 0)
		return stats_signal_storm();
	if (strcmp(mode, "stats-signal-own") == 0) {
		signal(SIGUSR2, own_handler);
		raise(SIGUSR2);
		if (own_handled)
			fprintf(stderr, "handled\n");
		return 0;
	}
	if (strcmp(mode, "stats-close-stderr") == 0) {
		/* As cat and sort do (close_stdout); then another file takes
		 * number 2: the table must still reach the first stderr. */
		p = jp_alloc(1000);
		jp_free(p);
		close(2);
		{
			/* Another file takes number 2 (dup2: fd 0 may be
			 * closed too when the test runs without stdin). */
			int fd = open("/dev/null", O_WRONLY);

			if (fd < 0 || (fd != 2 && dup2(fd, 2) != 2))
				return 3;
			if (fd != 2)
				close(fd);
		}
		return 0;
	}
	if (strcmp(mode, "leak") == 0) {
		sink = jp_alloc(4242);
		memset(sink, 1, 4242);
		sink = NULL;	/* the bug: lost */
		return 0;
	}
	if (strcmp(mode, "use-after-free") == 0) {
		volatile unsigned char *q = jp_alloc(64);

		q[0] = 1;
		jp_free((void *)q);
		return q[10] == 42;	/* the bug */
	}
	fprintf(stderr, "usage: alloc-helper MODE\n");
	return 2;
}
