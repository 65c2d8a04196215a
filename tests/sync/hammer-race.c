/*
 * hammer-race.c - does jp_hammer force races?  (make check-hammer)
 *
 * Runs the example of jp_hammer(3) - every thread increments a plain int
 * and an atomic one, 100,000 times - 10 times with jp_hammer_rounds (a
 * meeting every 100 iterations, the form the page shows) and 10 times with
 * jp_hammer alone, and counts the runs that lost increments of the plain
 * int.  It asserts that the page's form loses increments in at least 9 of
 * 10 runs and that the atomic counter never loses one; jp_hammer alone is
 * reported.  How often a race shows is a property of the machine (its
 * CPUs, its load) as much as of the harness, so this is a separate target
 * and not part of make check; it prints the load average it ran under.
 *
 * Exit 0 when the assertions hold, 1 when not, 77 where it cannot mean
 * anything: one CPU, valgrind (which runs one thread at a time) and
 * ThreadSanitizer (which reports the race instead, and slows it down).
 */
#include <jpsync/hammer.h>

#include "testutil.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define RUNS 10
#define ITERS 100000
#define ROUND 100

static int plain;		/* the data race, as in the page */
static _Atomic int counted;

static void bump(void *ctx, unsigned thread, uint64_t iter)
{
	(void)ctx; (void)thread; (void)iter;
	plain++;
	atomic_fetch_add(&counted, 1);
}

/* Runs with lost increments out of RUNS; *atomic_lost: runs where the
 * atomic counter was short (never, if the harness is sound). */
static int lossy_runs(unsigned n, uint64_t round, int *atomic_lost)
{
	int lossy = 0;

	*atomic_lost = 0;
	for (int r = 0; r < RUNS; r++) {
		plain = 0;
		atomic_store(&counted, 0);
		if (jp_hammer_rounds(n, ITERS, round, bump, NULL) != 0) {
			fprintf(stderr, "hammer-race: jp_hammer_rounds failed\n");
			exit(1);
		}
		lossy += plain != (int)(n * ITERS);
		*atomic_lost += atomic_load(&counted) != (int)(n * ITERS);
	}
	return lossy;
}

int main(void)
{
	unsigned n = jp_hw_threads();
	int with_rounds, alone, lost_a, lost_b;
	double load[3] = { 0, 0, 0 };
	FILE *f;

	if (jp_test_tsan()) {
		puts("check-hammer: not run here (ThreadSanitizer build: it reports the race instead)");
		return 77;
	}
	if (jp_test_on_valgrind()) {
		puts("check-hammer: not run here (valgrind runs one thread at a time)");
		return 77;
	}
	if (n < 2) {
		puts("check-hammer: not run here (one CPU: no two threads run at once)");
		return 77;
	}
	f = fopen("/proc/loadavg", "r");
	if (f != NULL) {
		if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
			load[0] = load[1] = load[2] = 0;
		fclose(f);
	}
	with_rounds = lossy_runs(n, ROUND, &lost_a);
	alone = lossy_runs(n, 0, &lost_b);
	printf("check-hammer: %u threads x %d increments, load average %.2f %.2f %.2f\n",
	       n, ITERS, load[0], load[1], load[2]);
	printf("  jp_hammer_rounds(round %d): lost increments in %d of %d runs (at least 9 asserted)\n",
	       ROUND, with_rounds, RUNS);
	printf("  jp_hammer:                  lost increments in %d of %d runs (reported)\n",
	       alone, RUNS);
	printf("  atomic counter short in %d runs (0 asserted)\n", lost_a + lost_b);
	return with_rounds >= 9 && lost_a + lost_b == 0 ? 0 : 1;
}
