/*
 * alloc-helper-stats.c - alloc-helper's statistics modes that need more
 * than a few lines: stats-signal-own's handler, stats-signal-storm,
 * stats-process and stats-exact (alloc-helper.c's opening comment says
 * what each does).
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

/* ---- stats-signal-own ------------------------------------------------ */

volatile sig_atomic_t own_handled;

void own_handler(int sig)
{
	(void)sig;
	own_handled = 1;
}

/* ---- stats-signal-storm ---------------------------------------------- */

/* Sizes that refill and flush thread caches and take the huge path, so
 * that signals land while the allocator holds its locks. */
int stats_signal_storm(void)
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
int stats_process(void)
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

/* The peak counts each thread's live bytes in steps: up to this much
 * above the bytes held, per thread with a cache (jp_alloc(3),
 * peak_in_use). */
#define PEAK_SLACK	((unsigned long long)128 << 10)

static void exact_within(const char *what, unsigned long long got,
			 unsigned long long lo, unsigned long long hi)
{
	if (got < lo || got > hi) {
		fprintf(stderr, "FAIL: %s: %llu, expected %llu to %llu (%+lld)\n", what,
			got, lo, hi, (long long)(got - lo));
		exact_bad = 1;
	}
}

static void *churn_thread(void *arg)
{
	void *b[400];

	(void)arg;
	/* 400 KiB through the cache: refills, overflows, the thread's
	 * credit in the live count. */
	for (int i = 0; i < 400; i++)
		b[i] = jp_alloc(1000);
	for (int i = 0; i < 400; i++)
		jp_free(b[i]);
	return NULL;
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
int stats_exact(void)
{
	enum { NSMALL = 1000, SMALL = 1000 };
	const size_t big = (size_t)65 << 20, mid = (size_t)8 << 20;
	struct jp_alloc_stats st0, st1, st2;
	unsigned long long small_bytes, t0, held;
	void *small[NSMALL], *h, *hold, *hs[65];
	size_t got;

	/* Nothing cached, nothing dirty: what goes back below is ours. */
	jp_alloc_trim();
	exact_stats(&st0);

	/* 1. The peak: 65 MiB held with a thousand small blocks, all freed
	 * before the figures are read.  A peak that summed each class's own
	 * peak with the huge bytes live at the call said 1.0 MiB here. */
	for (int i = 0; i < NSMALL; i++)
		small[i] = jp_alloc(SMALL);
	small_bytes = (unsigned long long)jp_usable_size(small[0]) * NSMALL;
	h = jp_alloc(big);
	exact_stats(&st1);
	held = st1.in_use + st1.cached;	/* out of the spans, plus huge */
	exact_eq("in use, holding", st1.in_use, st0.in_use + small_bytes + huge_map(big));
	exact_eq("huge bytes, holding", st1.huge_bytes, huge_map(big));
	exact_within("peak, holding", st1.peak_in_use, held, held + PEAK_SLACK);
	jp_free(h);
	for (int i = 0; i < NSMALL; i++)
		jp_free(small[i]);
	exact_stats(&st2);
	exact_eq("in use, all freed", st2.in_use, st0.in_use);
	exact_eq("peak, all freed", st2.peak_in_use, st1.peak_in_use);
	/* 65 MiB does not fit the huge cache (8 MiB and a quarter of what is
	 * mapped, about 25 MiB here): unmapped at its free, every page of it
	 * given back. */
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

	/* 3. The huge cache keeps 64 freed mappings, their pages resident
	 * (64 of 260 KiB, 16.5 MiB, are within its bound of 8 MiB and a
	 * quarter of what is mapped, which counts them and a 64 MiB block
	 * held, never touched): the 65th pushes the oldest out, unmapped
	 * with its resident pages, which count as given back. */
	jp_alloc_trim();
	hold = jp_alloc((size_t)64 << 20);
	exact_stats(&st1);
	for (int i = 0; i < 65; i++)
		hs[i] = jp_alloc(260 << 10);
	for (int i = 0; i < 65; i++)
		jp_free(hs[i]);
	exact_stats(&st2);
	exact_eq("given back, one of 65 mappings out of the huge cache",
		 st2.trimmed - st1.trimmed, huge_map(260 << 10));
	/* jp_alloc_trim's count is the figure's growth: the 64 cached ones. */
	t0 = st2.trimmed;
	got = jp_alloc_trim();
	exact_stats(&st2);
	exact_eq("given back by jp_alloc_trim", st2.trimmed - t0, got);
	if (got < 64 * huge_map(260 << 10))
		exact_eq("jp_alloc_trim, at least the 64 cached", got, 64 * huge_map(260 << 10));
	jp_free(hold);

	/* 4. Threads that come and go leave nothing in the live count: each
	 * gives its credit back as it exits.  Were 100 threads' credits left
	 * behind, a peak above everything before would be up to 12.5 MiB
	 * too high; it is the bytes held, and the one thread's step. */
	for (int i = 0; i < 100; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, churn_thread, NULL) != 0 ||
		    pthread_join(t, NULL) != 0) {
			fprintf(stderr, "FAIL: pthread_create\n");
			return 1;
		}
	}
	jp_alloc_trim();
	h = jp_alloc((size_t)200 << 20);	/* above every peak so far */
	exact_stats(&st1);
	held = st1.in_use + st1.cached;
	exact_within("peak after 100 threads came and went", st1.peak_in_use, held,
		     held + PEAK_SLACK);
	jp_free(h);
	return exact_bad;
}
