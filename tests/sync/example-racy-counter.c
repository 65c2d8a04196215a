/*
 * example-racy-counter.c - what jp_hammer is for (an example, not a test).
 *
 * A plain int incremented from every thread loses increments: ++ is a load,
 * an add and a store, and other threads slip in between.  jp_hammer releases
 * all threads at once, so the loss shows on nearly every run.  The atomic
 * counter next to it is exact.
 *
 *   ./tests/sync/example-racy-counter [threads [iterations]]
 */
#include <jpsync/hammer.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static volatile int plain;		/* volatile does not make ++ atomic */
static _Atomic int atomic_counter;

static void bump(void *ctx, unsigned thread, uint64_t iter)
{
	(void)ctx; (void)thread; (void)iter;
	plain++;
	atomic_fetch_add_explicit(&atomic_counter, 1, memory_order_relaxed);
}

int main(int argc, char **argv)
{
	unsigned threads = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 0;
	uint64_t iters = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000;
	int err;

	if (threads == 0)
		threads = jp_hw_threads() < 2 ? 2 : jp_hw_threads();
	err = jp_hammer(threads, iters, bump, NULL);
	if (err != 0) {
		fprintf(stderr, "jp_hammer: error %d\n", err);
		return 1;
	}
	printf("%u threads x %llu increments, expected %llu\n", threads,
	       (unsigned long long)iters, (unsigned long long)threads * iters);
	printf("  plain int:   %d (lost %lld)\n", plain,
	       (long long)(threads * iters) - plain);
	printf("  atomic int:  %d (lost %lld)\n", atomic_load(&atomic_counter),
	       (long long)(threads * iters) - atomic_load(&atomic_counter));
	return 0;
}
