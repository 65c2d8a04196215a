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
 *   alloc-helper check-double-closed  the same after closing stderr (as
 *                                coreutils' close_stdout does at exit)
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
#include "alloc-helper.h"

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

void *volatile sink;	/* where a block escapes to (alloc-helper.h) */

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

/*
 * refill-order (run with JPSYNC_CACHE_N=1 and JPSYNC_MAG_SIZE=1, so that
 * nearly every block goes back to its span and every refill takes one):
 * 256 blocks of 48 bytes freed lowest address first come back lowest
 * address first, from the span's free map (central.c).  A span's free
 * list gave them back newest first.  Prints the first block out of order.
 */
#define ORDER_N		256
#define ORDER_TAIL	200	/* the last ones: past the bin and the chains */

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;

	return (x > y) - (x < y);
}

static int refill_order(void)
{
	static void *p[ORDER_N];

	for (int i = 0; i < ORDER_N; i++)
		if ((p[i] = jp_alloc(48)) == NULL)
			return 2;
	qsort(p, ORDER_N, sizeof p[0], cmp_ptr);
	for (int i = 0; i < ORDER_N; i++)
		jp_free(p[i]);
	for (int i = 0; i < ORDER_N; i++)
		if ((p[i] = jp_alloc(48)) == NULL)
			return 2;
	for (int i = ORDER_N - ORDER_TAIL + 1; i < ORDER_N; i++)
		if ((uintptr_t)p[i] <= (uintptr_t)p[i - 1]) {
			fprintf(stderr, "allocation %d at %p after %p\n", i, p[i], p[i - 1]);
			return 1;
		}
	for (int i = 0; i < ORDER_N; i++)
		jp_free(p[i]);
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
	if (strcmp(mode, "refill-order") == 0)
		return refill_order();
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
	if (strcmp(mode, "check-double") == 0 || strcmp(mode, "check-double-closed") == 0) {
		p = noted(jp_alloc(100));
		if (mode[12] == '-')
			close(2);
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
