/* selftest-bench: a tiny benchmark program that exercises the benchmark
 * report's plumbing (tests/bench/report.sh) in `make check`, so the report
 * is tested without running the real, slow, load-sensitive benchmarks.
 * Its driver, tests/bench/selftest-bench.sh, follows the driver contract of
 * doc/benchmarks.md and is a minimal template for a real driver.
 *
 *   selftest-bench WORKLOAD THREADS IMPLEMENTATION
 *
 * prints one line "VALUE PEAK_RSS_KB" and exits 0, or exits 1 when the
 * run's correctness check fails.  Workloads:
 *
 *   count      THREADS threads each add 1 to a counter ITERS times; VALUE is
 *              increments per second (measured, load-dependent).  jpsync
 *              counts in a thread-local variable and adds once at the end,
 *              peer_mutex takes a pthread mutex per increment, peer_atomic
 *              does an atomic fetch-add per increment.  The check: the
 *              final count is exactly THREADS * ITERS.
 *   footprint  THREADS threads each allocate and touch BLOCKS blocks of a
 *              size that depends on the implementation (jpsync 64 KiB,
 *              peer_mutex 96 KiB, peer_atomic 128 KiB); VALUE is the bytes
 *              requested, deterministic, so the plumbing test can check
 *              medians and ratios exactly.
 *
 * JPSYNC_SELFTEST_FAIL=IMPL makes IMPL's runs fail their check (exit 1),
 * to test that a failure reaches the report.  JPSYNC_BENCH_QUICK=1 makes
 * the counting loop tiny. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

enum impl { IMPL_JPSYNC, IMPL_MUTEX, IMPL_ATOMIC };

static enum impl impl;
static unsigned long iters;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long locked_count;
static atomic_ulong atomic_count;
static atomic_int go;

#define BLOCKS 256

static void *count_thread(void *arg)
{
	unsigned long local = 0;

	(void)arg;
	/* Released together so the threads contend for the whole run. */
	while (!atomic_load_explicit(&go, memory_order_acquire))
		;
	for (unsigned long i = 0; i < iters; i++) {
		switch (impl) {
		case IMPL_JPSYNC:
			local++;
			/* Keep the loop from collapsing into one add. */
			__asm__ volatile("" : "+r"(local));
			break;
		case IMPL_MUTEX:
			pthread_mutex_lock(&lock);
			locked_count++;
			pthread_mutex_unlock(&lock);
			break;
		case IMPL_ATOMIC:
			atomic_fetch_add(&atomic_count, 1);
			break;
		}
	}
	if (impl == IMPL_JPSYNC)
		atomic_fetch_add(&atomic_count, local);
	return NULL;
}

/* KiB, not bytes: the peak RSS of the three must differ clearly (by more
 * than the report's 25% threshold for an RSS table), even on top of a
 * sanitizer's baseline. */
static size_t block_size(void)
{
	return (impl == IMPL_JPSYNC ? 64 : impl == IMPL_MUTEX ? 96 : 128) * 1024;
}

static void *footprint_thread(void *arg)
{
	char **blocks = malloc(BLOCKS * sizeof *blocks);
	size_t size = block_size();
	unsigned long touched = 0;

	(void)arg;
	if (!blocks)
		return NULL;
	for (int i = 0; i < BLOCKS; i++) {
		blocks[i] = malloc(size);
		if (!blocks[i])
			break;
		memset(blocks[i], i, size);
		touched += size;
	}
	for (int i = 0; i < BLOCKS && blocks[i]; i++)
		free(blocks[i]);
	free(blocks);
	atomic_fetch_add(&atomic_count, touched);
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	const char *fail = getenv("JPSYNC_SELFTEST_FAIL");
	const char *quick = getenv("JPSYNC_BENCH_QUICK");
	pthread_t tid[64];
	struct rusage ru;
	int threads, counting;
	unsigned long expect;
	double t0, elapsed, value;

	if (argc != 4 || (threads = atoi(argv[2])) < 1 || threads > 64) {
		fprintf(stderr, "usage: selftest-bench count|footprint THREADS(1-64) "
			"jpsync|peer_mutex|peer_atomic\n");
		return 2;
	}
	if (!strcmp(argv[3], "jpsync"))
		impl = IMPL_JPSYNC;
	else if (!strcmp(argv[3], "peer_mutex"))
		impl = IMPL_MUTEX;
	else if (!strcmp(argv[3], "peer_atomic"))
		impl = IMPL_ATOMIC;
	else {
		fprintf(stderr, "selftest-bench: unknown implementation '%s'\n", argv[3]);
		return 2;
	}
	if (!strcmp(argv[1], "count"))
		counting = 1;
	else if (!strcmp(argv[1], "footprint"))
		counting = 0;
	else {
		fprintf(stderr, "selftest-bench: unknown workload '%s'\n", argv[1]);
		return 2;
	}
	iters = quick && !strcmp(quick, "1") ? 20000 : 2000000;

	for (int i = 0; i < threads; i++)
		if (pthread_create(&tid[i], NULL, counting ? count_thread : footprint_thread,
				   NULL)) {
			perror("selftest-bench: pthread_create");
			return 1;
		}
	t0 = now();
	atomic_store_explicit(&go, 1, memory_order_release);
	for (int i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	elapsed = now() - t0;

	if (counting) {
		unsigned long got = atomic_load(&atomic_count) + locked_count;

		expect = (unsigned long)threads * iters;
		if (got != expect || (fail && !strcmp(fail, argv[3]))) {
			fprintf(stderr, "selftest-bench: count %lu, expected %lu\n", got, expect);
			return 1;
		}
		value = expect / (elapsed > 1e-9 ? elapsed : 1e-9);
	} else {
		expect = (unsigned long)threads * BLOCKS * block_size();
		if (atomic_load(&atomic_count) != expect || (fail && !strcmp(fail, argv[3]))) {
			fprintf(stderr, "selftest-bench: touched %lu bytes, expected %lu\n",
				atomic_load(&atomic_count), expect);
			return 1;
		}
		value = expect;
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("%.0f %ld\n", value, ru.ru_maxrss);
	return 0;
}
