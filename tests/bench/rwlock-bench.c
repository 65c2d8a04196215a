/*
 * rwlock-bench.c - reader-writer locks under a read-mostly load (driven by
 * tests/bench/rwlock-bench.sh; see doc/benchmarks.md).
 *
 *   rwlock-bench mix WRITE_PCT IMPL THREADS SECONDS [CS]
 *       Every thread loops for SECONDS: with probability WRITE_PCT/100 it
 *       takes the write lock and adds one to each of the 8 words of a
 *       shared table (one cache line); otherwise it takes a read lock and
 *       reads the 8 words, which must all be equal (a torn table fails the
 *       run); either way it then does CS steps (default 0) of work inside
 *       the lock: a dependent loop through a volatile, about one step per
 *       few cycles, so CS is the critical section's length in such steps
 *       (the workload is named writes-Ppct-csCS when CS is not 0).  Then
 *       it does about 50 ns of private work (a dependent multiply chain)
 *       outside the lock.  Prints the throughput (million
 *       lock+unlock pairs per second, all threads), the same per second
 *       of the threads' CPU time (what the work cost, whatever else runs
 *       on the machine: spinning counts, sleeping does not) and the
 *       spread (the fewest acquisitions a thread made over the most).
 *   rwlock-bench pairs IMPL N
 *       N uncontended read lock+unlock pairs on one thread (for callgrind).
 *   rwlock-bench avail IMPL
 *       Exit 0 when IMPL is built in, 2 when not.
 *
 * IMPL: jp_rwlock, pthread_rwlock (glibc's default, reader-preferring),
 * pthread_rwlock_wp (glibc's PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP),
 * ck_rwlock (Concurrency Kit 0.7's writer-preferring spin lock; when
 * <ck_rwlock.h> was found and this is not a sanitizer build).
 *
 * Output: CSV rows "benchmark,workload,threads,implementation,value,unit,
 * better,peak_rss_kb" (the driver adds the repetition).  A failed check
 * prints FAILED as the value and exits 1.
 */
#define _GNU_SOURCE
#include <jpsync/rwlock.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
# define SANITIZED 1
#elif defined(__has_feature)
# if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#  define SANITIZED 1
# endif
#endif
#if defined(__has_include) && !defined(SANITIZED)
# if __has_include(<ck_rwlock.h>)
#  include <ck_rwlock.h>
#  define HAVE_CK 1
# endif
#endif

enum impl { JP, PT, PTW, CK, NIMPL };
static const char *const impl_names[NIMPL] = {
	"jp_rwlock", "pthread_rwlock", "pthread_rwlock_wp", "ck_rwlock",
};

static struct {
	_Alignas(64) jp_rwlock_t jp;
	_Alignas(64) pthread_rwlock_t pt;
#ifdef HAVE_CK
	_Alignas(64) ck_rwlock_t ck;
#endif
	_Alignas(64) uint64_t table[8];		/* under the lock */
	_Alignas(64) uint64_t writes;		/* under the write lock */
} L;

static enum impl impl;
static unsigned write_pct;
static unsigned cs_steps;		/* work inside the lock */
static _Atomic int go, stop, torn;
static _Atomic unsigned ready;

struct worker {
	_Alignas(64) uint64_t ops, wops, seed, sink;
	double cpu;		/* the thread's CPU seconds in the run */
	pthread_t thread;
};

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void lock_init(void)
{
	pthread_rwlockattr_t a;

	jp_rwlock_init(&L.jp);
	pthread_rwlockattr_init(&a);
	if (impl == PTW)
		pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&L.pt, &a);
	pthread_rwlockattr_destroy(&a);
#ifdef HAVE_CK
	ck_rwlock_init(&L.ck);
#endif
}

static inline void rd_lock(void)
{
	switch (impl) {
	case JP: jp_rwlock_rdlock(&L.jp); break;
	case PT: case PTW: pthread_rwlock_rdlock(&L.pt); break;
#ifdef HAVE_CK
	case CK: ck_rwlock_read_lock(&L.ck); break;
#endif
	default: abort();
	}
}

static inline void rd_unlock(void)
{
	switch (impl) {
	case JP: jp_rwlock_unlock(&L.jp); break;
	case PT: case PTW: pthread_rwlock_unlock(&L.pt); break;
#ifdef HAVE_CK
	case CK: ck_rwlock_read_unlock(&L.ck); break;
#endif
	default: abort();
	}
}

static inline void wr_lock(void)
{
	switch (impl) {
	case JP: jp_rwlock_wrlock(&L.jp); break;
	case PT: case PTW: pthread_rwlock_wrlock(&L.pt); break;
#ifdef HAVE_CK
	case CK: ck_rwlock_write_lock(&L.ck); break;
#endif
	default: abort();
	}
}

static inline void wr_unlock(void)
{
	switch (impl) {
	case JP: jp_rwlock_unlock(&L.jp); break;
	case PT: case PTW: pthread_rwlock_unlock(&L.pt); break;
#ifdef HAVE_CK
	case CK: ck_rwlock_write_unlock(&L.ck); break;
#endif
	default: abort();
	}
}

static inline uint64_t next_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/*
 * CS steps of work inside the lock: each step loads and stores a volatile
 * that the next step depends on, so the compiler can neither drop nor
 * batch the steps.
 */
static inline uint64_t inside(uint64_t x)
{
	volatile uint64_t v = x;

	for (unsigned i = 0; i < cs_steps; i++)
		v = v + 1;
	return v;
}

static void *mix_worker(void *arg)
{
	struct worker *w = arg;
	uint64_t ops = 0, wops = 0, sink = 0, seed = w->seed;
	double c0;

	atomic_fetch_add(&ready, 1);
	while (!atomic_load_explicit(&go, memory_order_acquire))
		;
	c0 = thread_cpu_s();
	/* relaxed: stop is a hint to finish; the join publishes the counts. */
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t r = next_rand(&seed);

		if (r % 100 < write_pct) {
			wr_lock();
			for (int i = 0; i < 8; i++)
				L.table[i]++;
			L.writes++;
			sink += inside(r);
			wr_unlock();
			wops++;
		} else {
			uint64_t first;
			bool bad = false;

			rd_lock();
			first = L.table[0];
			for (int i = 1; i < 8; i++)
				bad |= L.table[i] != first;
			sink += inside(first);
			rd_unlock();
			if (bad)
				atomic_store(&torn, 1);
		}
		/* About 50 ns of private work: a dependent multiply chain. */
		for (int i = 0; i < 16; i++)
			r = r * 6364136223846793005u + 1442695040888963407u;
		sink += r;
		ops++;
	}
	w->cpu = thread_cpu_s() - c0;
	w->ops = ops;
	w->wops = wops;
	w->sink = sink;
	return NULL;
}

static long peak_rss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int run_mix(unsigned threads, double seconds)
{
	struct worker *w;
	uint64_t total = 0, wtotal = 0, min_ops = UINT64_MAX, max_ops = 0, t0, t1;
	double cpu = 0;
	struct timespec nap;
	char wl[32];

	if (threads == 0 || threads > 1024 || !(seconds > 0) || write_pct > 100) {
		fprintf(stderr, "rwlock-bench: bad arguments\n");
		return 2;
	}
	if (cs_steps == 0)
		snprintf(wl, sizeof wl, "writes-%upct", write_pct);
	else
		snprintf(wl, sizeof wl, "writes-%upct-cs%u", write_pct, cs_steps);
	w = aligned_alloc(64, threads * sizeof *w);
	if (w == NULL)
		return 1;
	memset(w, 0, threads * sizeof *w);
	lock_init();
	for (unsigned i = 0; i < threads; i++) {
		w[i].seed = 0x9e3779b97f4a7c15u * (i + 1);
		if (pthread_create(&w[i].thread, NULL, mix_worker, &w[i]) != 0) {
			fprintf(stderr, "rwlock-bench: pthread_create failed\n");
			return 1;
		}
	}
	while (atomic_load(&ready) != threads)
		usleep(100);
	t0 = now_ns();
	atomic_store_explicit(&go, 1, memory_order_release);
	nap.tv_sec = (time_t)seconds;
	nap.tv_nsec = (long)((seconds - (double)nap.tv_sec) * 1e9);
	while (nanosleep(&nap, &nap) != 0 && errno == EINTR)
		;
	atomic_store(&stop, 1);
	for (unsigned i = 0; i < threads; i++) {
		pthread_join(w[i].thread, NULL);
		total += w[i].ops;
		wtotal += w[i].wops;
		cpu += w[i].cpu;
		if (w[i].ops < min_ops)
			min_ops = w[i].ops;
		if (w[i].ops > max_ops)
			max_ops = w[i].ops;
	}
	t1 = now_ns();
	if (atomic_load(&torn) || L.writes != wtotal || L.table[7] != wtotal) {
		printf("rwlock,%s,%u,%s,FAILED,,,%ld\n", wl, threads, impl_names[impl], peak_rss_kb());
		fprintf(stderr, "rwlock-bench: %s: %s\n", impl_names[impl],
			atomic_load(&torn) ? "a reader saw a torn table" : "lost writes");
		return 1;
	}
	printf("rwlock,%s,%u,%s,%.3f,Mops/s,higher,%ld\n", wl, threads, impl_names[impl],
	       (double)total / ((double)(t1 - t0) / 1e3), peak_rss_kb());
	printf("rwlock,%s-cpu,%u,%s,%.3f,Mops/cpu-s,higher,%ld\n", wl, threads, impl_names[impl],
	       cpu > 0 ? (double)total / cpu / 1e6 : 0.0, peak_rss_kb());
	printf("rwlock,%s-spread,%u,%s,%.3f,min/max,higher,%ld\n", wl, threads, impl_names[impl],
	       max_ops ? (double)min_ops / (double)max_ops : 0.0, peak_rss_kb());
	free(w);
	return 0;
}

static int run_pairs(uint64_t n)
{
	lock_init();
	for (uint64_t i = 0; i < n; i++) {
		rd_lock();
		rd_unlock();
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: rwlock-bench mix WRITE_PCT IMPL THREADS SECONDS [CS]\n"
			"       rwlock-bench pairs IMPL N\n"
			"       rwlock-bench avail IMPL\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *name;
	int i;

	if (argc < 3)
		return usage();
	name = argv[strcmp(argv[1], "mix") == 0 ? 3 : 2];
	if (strcmp(argv[1], "mix") == 0 && argc != 6 && argc != 7)
		return usage();
	for (i = 0; i < NIMPL; i++)
		if (strcmp(name, impl_names[i]) == 0)
			break;
	if (i == NIMPL) {
		fprintf(stderr, "rwlock-bench: unknown implementation %s\n", name);
		return 2;
	}
	impl = (enum impl)i;
#ifndef HAVE_CK
	if (impl == CK) {
		if (strcmp(argv[1], "avail") != 0)
			fprintf(stderr, "rwlock-bench: ck_rwlock is not built in\n");
		return 2;
	}
#endif
	if (strcmp(argv[1], "avail") == 0)
		return 0;
	if (strcmp(argv[1], "pairs") == 0 && argc == 4)
		return run_pairs(strtoull(argv[3], NULL, 10));
	if (strcmp(argv[1], "mix") == 0) {
		write_pct = (unsigned)strtoul(argv[2], NULL, 10);
		cs_steps = argc == 7 ? (unsigned)strtoul(argv[6], NULL, 10) : 0;
		return run_mix((unsigned)strtoul(argv[4], NULL, 10), strtod(argv[5], NULL));
	}
	return usage();
}
