/*
 * sync-bench.c - the lock and wait/notify benchmarks of libjpsync
 * (driven by tests/bench/sync-bench.sh; see doc/benchmarks.md).
 *
 *   sync-bench lock WORKLOAD IMPL THREADS SECONDS
 *       WORKLOAD short (empty critical section), mixed (~100 pause
 *       instructions inside it) or fairness (every acquisition timed).
 *       Prints the throughput (short, mixed) or the average wait to
 *       acquire (fairness), and the spread of acquisitions per thread
 *       (the fewest a thread made divided by the most: 1 is perfectly
 *       fair, 0 is a starved thread) and the fewest divided by the mean.
 *   sync-bench pairs IMPL N
 *       N uncontended lock+unlock pairs on one thread (for callgrind).
 *   sync-bench notify jp_wait ROUNDS handshake|burst
 *       17 threads each wait on their own one-byte flag, 64 bytes apart;
 *       one thread sets and notifies each in turn, ROUNDS times (the
 *       scenario of libstdc++ PR 115955), waiting for each waiter to
 *       answer (handshake) or for all of them after the round (burst).  Prints CPU time and wall time
 *       per notify.
 *   sync-bench avail IMPL
 *       Exit 0 when IMPL is built in, 2 when not.
 *
 * IMPL: jp_mutex, pthread_mutex, pthread_spin, ck_spinlock_fas,
 * ck_spinlock_mcs, and two controls that the driver does not run,
 * ttas_store and ttas_rmw (see ttas_lock); ck_spinlock_fas and
 * ck_spinlock_mcs when <ck_spinlock.h> was found and this is not a
 * sanitizer build (Concurrency Kit's inline assembly is opaque to the
 * sanitizers).
 *
 * Output: CSV rows "benchmark,workload,threads,implementation,value,unit,
 * better,peak_rss_kb" (the driver adds the repetition).  A failed
 * correctness check prints FAILED as the value and exits 1.
 */
#define _GNU_SOURCE
#include <jpsync/mutex.h>
#include <jpsync/wait.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
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
# if __has_include(<ck_spinlock.h>)
#  include <ck_spinlock.h>
#  define HAVE_CK 1
# endif
#endif

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

enum impl { JP, PTM, SPIN, FAS, MCS, TTAS, TTAS_RMW, NIMPL };
static const char *const impl_names[NIMPL] = {
	"jp_mutex", "pthread_mutex", "pthread_spin", "ck_spinlock_fas", "ck_spinlock_mcs",
	"ttas_store", "ttas_rmw",
};

struct lock {
	_Alignas(64) jp_mutex_t jp;
	_Alignas(64) pthread_mutex_t pm;
	_Alignas(64) pthread_spinlock_t sp;
	_Alignas(64) _Atomic uint32_t ttas;
#ifdef HAVE_CK
	_Alignas(64) ck_spinlock_fas_t fas;
	_Alignas(64) ck_spinlock_mcs_t mcs;
#endif
};

static struct lock the_lock;

/* Per-thread state (the MCS queue node lives here). */
struct worker {
	_Alignas(64) unsigned id;
	uint64_t ops;
	uint64_t wait_ns;
#ifdef HAVE_CK
	ck_spinlock_mcs_context_t node;
#endif
	pthread_t thread;
};

static enum impl impl;
static int workload;		/* 0 short, 1 mixed, 2 fairness */
static _Atomic int go, stop;
static _Atomic unsigned ready;
static uint64_t protected_count;	/* under the lock: the correctness check */

static void lock_init(void)
{
	jp_mutex_init(&the_lock.jp);
	pthread_mutex_init(&the_lock.pm, NULL);
	pthread_spin_init(&the_lock.sp, PTHREAD_PROCESS_PRIVATE);
#ifdef HAVE_CK
	ck_spinlock_fas_init(&the_lock.fas);
	ck_spinlock_mcs_init(&the_lock.mcs);
#endif
}

/*
 * Two controls that differ in one thing: a test-and-test-and-set spinlock
 * (exchange to take, spin on a load with pause while taken) released by a
 * plain store (ttas_store, as every spinlock) or by an exchange (ttas_rmw,
 * the read-modify-write a futex lock's unlock needs to see sleepers).
 */
static inline void ttas_lock(_Atomic uint32_t *l)
{
	while (atomic_exchange_explicit(l, 1, memory_order_acquire) != 0)
		while (atomic_load_explicit(l, memory_order_relaxed) != 0)
			relax();
}

static inline void do_lock(struct worker *w)
{
	switch (impl) {
	case TTAS: case TTAS_RMW: ttas_lock(&the_lock.ttas); break;
	case JP: jp_mutex_lock(&the_lock.jp); break;
	case PTM: pthread_mutex_lock(&the_lock.pm); break;
	case SPIN: pthread_spin_lock(&the_lock.sp); break;
#ifdef HAVE_CK
	case FAS: ck_spinlock_fas_lock(&the_lock.fas); break;
	case MCS: ck_spinlock_mcs_lock(&the_lock.mcs, &w->node); break;
#endif
	default: (void)w; abort();
	}
}

static inline void do_unlock(struct worker *w)
{
	switch (impl) {
	case TTAS: atomic_store_explicit(&the_lock.ttas, 0, memory_order_release); break;
	case TTAS_RMW: (void)atomic_exchange_explicit(&the_lock.ttas, 0, memory_order_release); break;
	case JP: jp_mutex_unlock(&the_lock.jp); break;
	case PTM: pthread_mutex_unlock(&the_lock.pm); break;
	case SPIN: pthread_spin_unlock(&the_lock.sp); break;
#ifdef HAVE_CK
	case FAS: ck_spinlock_fas_unlock(&the_lock.fas); break;
	case MCS: ck_spinlock_mcs_unlock(&the_lock.mcs, &w->node); break;
#endif
	default: (void)w; abort();
	}
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *lock_worker(void *arg)
{
	struct worker *w = arg;
	uint64_t ops = 0, wait_ns = 0;

	atomic_fetch_add(&ready, 1);
	while (!atomic_load_explicit(&go, memory_order_acquire))
		relax();
	/* relaxed: stop is a hint to finish; the join publishes the counts. */
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (workload == 2) {
			uint64_t t0 = now_ns();

			do_lock(w);
			wait_ns += now_ns() - t0;
		} else {
			do_lock(w);
		}
		protected_count++;
		if (workload == 1)
			for (int i = 0; i < 100; i++)
				relax();
		do_unlock(w);
		ops++;
	}
	w->ops = ops;
	w->wait_ns = wait_ns;
	return NULL;
}

static long peak_rss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static int find_impl(const char *name)
{
	for (int i = 0; i < NIMPL; i++)
		if (strcmp(name, impl_names[i]) == 0)
			return i;
	return -1;
}

static bool built_in(enum impl i)
{
#ifdef HAVE_CK
	(void)i;
	return true;
#else
	return i != FAS && i != MCS;
#endif
}

static int run_lock(const char *wl, unsigned threads, double seconds)
{
	static const char *const wls[] = { "short", "mixed", "fairness" };
	struct worker *w;
	uint64_t total = 0, min_ops = UINT64_MAX, max_ops = 0, wait = 0, t0, t1;
	double spread;
	struct timespec nap;

	workload = -1;
	for (int i = 0; i < 3; i++)
		if (strcmp(wl, wls[i]) == 0)
			workload = i;
	if (workload < 0 || threads == 0 || threads > 1024 || !(seconds > 0)) {
		fprintf(stderr, "sync-bench: bad lock arguments\n");
		return 2;
	}
	w = aligned_alloc(64, threads * sizeof *w);
	if (w == NULL)
		return 1;
	memset(w, 0, threads * sizeof *w);
	lock_init();
	for (unsigned i = 0; i < threads; i++) {
		w[i].id = i;
		if (pthread_create(&w[i].thread, NULL, lock_worker, &w[i]) != 0) {
			fprintf(stderr, "sync-bench: pthread_create failed\n");
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
		wait += w[i].wait_ns;
		if (w[i].ops < min_ops)
			min_ops = w[i].ops;
		if (w[i].ops > max_ops)
			max_ops = w[i].ops;
	}
	t1 = now_ns();
	spread = max_ops ? (double)min_ops / (double)max_ops : 0;
	if (protected_count != total) {
		printf("lock,%s,%u,%s,FAILED,,,%ld\n", wl, threads, impl_names[impl], peak_rss_kb());
		fprintf(stderr, "sync-bench: %s lost updates: %llu of %llu\n", impl_names[impl],
			(unsigned long long)protected_count, (unsigned long long)total);
		return 1;
	}
	if (workload == 2)
		printf("lock,fairness-wait,%u,%s,%.1f,ns,lower,%ld\n", threads, impl_names[impl],
		       total ? (double)wait / (double)total : 0.0, peak_rss_kb());
	else
		printf("lock,%s,%u,%s,%.3f,Mops/s,higher,%ld\n", wl, threads, impl_names[impl],
		       (double)total / ((double)(t1 - t0) / 1e3), peak_rss_kb());
	printf("lock,%s-spread,%u,%s,%.3f,min/max,higher,%ld\n",
	       workload == 2 ? "fairness" : wl, threads, impl_names[impl], spread, peak_rss_kb());
	/* The fewest a thread made against the mean (no thread starved: at
	 * least 0.5). */
	printf("lock,%s-fewest,%u,%s,%.3f,min/mean,higher,%ld\n",
	       workload == 2 ? "fairness" : wl, threads, impl_names[impl],
	       total ? (double)min_ops * threads / (double)total : 0.0, peak_rss_kb());
	free(w);
	return 0;
}

static int run_pairs(uint64_t n)
{
	struct worker w;

	memset(&w, 0, sizeof w);
	lock_init();
	for (uint64_t i = 0; i < n; i++) {
		do_lock(&w);
		do_unlock(&w);
	}
	return 0;
}

static int usage(void);

/* ---- the 17-waiter scenario -------------------------------------------- */

/*
 * handshake: the notifier sets one flag, notifies it and waits until its
 * waiter has cleared it, then goes to the next flag.  burst: the notifier
 * sets and notifies every flag, then waits until all 17 waiters have
 * cleared theirs (counted in acks; the last one wakes the notifier).
 * A notify that also wakes the waiters of other flags (a shared wait
 * state) costs each of them a wake-up and a sleep: CPU time per notify
 * shows it.  In a burst, those waiters often find their own flag already
 * set, so the herd costs less there.
 */
#define WAITERS 17

struct flag {
	_Alignas(64) _Atomic unsigned char set;
};

static struct flag flags[WAITERS];
static _Alignas(64) _Atomic uint32_t acks;
static uint64_t rounds;
static bool burst;

static void *flag_waiter(void *arg)
{
	struct flag *f = arg;
	unsigned char zero = 0;

	for (uint64_t r = 0; r < rounds; r++) {
		while (atomic_load(&f->set) == 0)
			jp_wait((const void *)&f->set, &zero, 1, NULL);
		atomic_store(&f->set, 0);
		if (!burst)
			jp_notify_one((const void *)&f->set);
		else if (atomic_fetch_add(&acks, 1) + 1 == (uint32_t)((r + 1) * WAITERS))
			jp_notify_one((const void *)&acks);
	}
	return NULL;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* Context switches of the whole process (every thread), voluntary and not. */
static double csw(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_nvcsw + (double)ru.ru_nivcsw;
}

static int run_notify(uint64_t n, const char *how)
{
	pthread_t t[WAITERS];
	uint64_t t0, t1;
	double c0, c1, s0, s1, notifies;
	uint32_t a;

	unsigned char one = 1;

	rounds = n;
	burst = strcmp(how, "burst") == 0;
	if (!burst && strcmp(how, "handshake") != 0)
		return usage();
	for (int i = 0; i < WAITERS; i++)
		if (pthread_create(&t[i], NULL, flag_waiter, &flags[i]) != 0)
			return 1;
	usleep(20000);		/* let them all go to sleep */
	t0 = now_ns();
	c0 = cpu_s();
	s0 = csw();
	for (uint64_t r = 0; r < rounds; r++) {
		for (int i = 0; i < WAITERS; i++) {
			atomic_store(&flags[i].set, 1);
			jp_notify_one((const void *)&flags[i].set);
			while (!burst && atomic_load(&flags[i].set) != 0)
				jp_wait((const void *)&flags[i].set, &one, 1, NULL);
		}
		while (burst && (a = atomic_load(&acks)) != (uint32_t)((r + 1) * WAITERS))
			jp_wait((const void *)&acks, &a, 4, NULL);
	}
	t1 = now_ns();
	c1 = cpu_s();
	s1 = csw();
	for (int i = 0; i < WAITERS; i++)
		pthread_join(t[i], NULL);
	notifies = (double)rounds * WAITERS;
	printf("notify-17,%s-cpu-per-notify,18,jp_wait,%.3f,us,lower,%ld\n",
	       how, (c1 - c0) * 1e6 / notifies, peak_rss_kb());
	printf("notify-17,%s-latency-per-notify,18,jp_wait,%.3f,us,lower,%ld\n",
	       how, (double)(t1 - t0) / 1e3 / notifies, peak_rss_kb());
	printf("notify-17,%s-csw-per-notify,18,jp_wait,%.3f,switches,lower,%ld\n",
	       how, (s1 - s0) / notifies, peak_rss_kb());
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: sync-bench lock short|mixed|fairness IMPL THREADS SECONDS\n"
			"       sync-bench pairs IMPL N\n"
			"       sync-bench notify jp_wait ROUNDS handshake|burst\n"
			"       sync-bench avail IMPL\n");
	return 2;
}

int main(int argc, char **argv)
{
	int i;

	if (argc < 3)
		return usage();
	if (strcmp(argv[1], "notify") == 0) {
		if (argc != 5 || strcmp(argv[2], "jp_wait") != 0)
			return usage();
		return run_notify(strtoull(argv[3], NULL, 10), argv[4]);
	}
	i = find_impl(argv[strcmp(argv[1], "lock") == 0 ? 3 : 2]);
	if (argc < 4 && strcmp(argv[1], "avail") != 0)
		return usage();
	if (i < 0) {
		fprintf(stderr, "sync-bench: unknown implementation\n");
		return 2;
	}
	impl = (enum impl)i;
	if (strcmp(argv[1], "avail") == 0)
		return built_in(impl) ? 0 : 2;
	if (!built_in(impl)) {
		fprintf(stderr, "sync-bench: %s is not built in\n", impl_names[impl]);
		return 2;
	}
	if (strcmp(argv[1], "pairs") == 0)
		return run_pairs(strtoull(argv[3], NULL, 10));
	if (strcmp(argv[1], "lock") == 0 && argc == 6)
		return run_lock(argv[2], (unsigned)strtoul(argv[4], NULL, 10), strtod(argv[5], NULL));
	return usage();
}
