/*
 * test-prof.c - the heap profile's sampler (white-box: links the core
 * library): -ln(u) without libm, the mean of its intervals, and the
 * statistics' counts kept exact while the profile arms the bins' counts,
 * and which frees a sampled block sends through the profile.
 */
#include "alloc/alloc_init.h"
#include "alloc/prof.h"
#include "alloc/segment.h"
#include "alloc/sizeclass.h"
#include "alloc/tcache.h"
#include "testutil.h"

#include <CUnit/CUnit.h>
#include <jpsync/alloc.h>
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LN2 0.69314718055994530942

static double dabs(double x)
{
	return x < 0 ? -x : x;
}

/* -ln(r / 2^64) at powers of two and between them. */
static void test_exp1(void)
{
	CU_ASSERT(dabs(jp__prof_exp1((uint64_t)1 << 63) - LN2) < 1e-6);
	CU_ASSERT(dabs(jp__prof_exp1((uint64_t)1 << 62) - 2 * LN2) < 1e-6);
	CU_ASSERT(dabs(jp__prof_exp1(1) - 64 * LN2) < 1e-6);
	/* u = 3/4: -ln(0.75) = 0.28768207245178 */
	CU_ASSERT(dabs(jp__prof_exp1((uint64_t)3 << 62) - 0.28768207245178) < 1e-6);
	/* u = 0.1 (r rounded): 2.302585 */
	CU_ASSERT(dabs(jp__prof_exp1(1844674407370955162ULL) - 2.302585092994) < 1e-6);
}

/* -ln(r / 2^64) the slow way: ln of the mantissa by the series of
 * 2 atanh((f - 1) / (f + 1)) to its 41st power, in long double. */
static long double ln_ref(uint64_t r)
{
	int e = 0;
	long double f = (long double)r, t, t2, term, sum = 0;

	while (f >= 2) {
		f /= 2;
		e++;
	}
	t = (f - 1) / (f + 1);
	t2 = t * t;
	term = t;
	for (int k = 1; k <= 41; k += 2) {
		sum += term / k;
		term *= t2;
	}
	return (64 - e) * (long double)LN2 - 2 * sum;
}

/* Everywhere (a fixed stream of 2^18 values and every power of two): the
 * table and cubic within 1e-8 of the slow way. */
static void test_exp1_sweep(void)
{
	uint64_t x = 88172645463325252ULL;
	double worst = 0;

	for (unsigned i = 0; i < (1u << 18) + 64; i++) {
		uint64_t r;
		double d;

		if (i < 64)
			r = (uint64_t)1 << i;
		else {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			r = x >> (x & 63);	/* every magnitude */
		}
		if (r == 0)
			continue;
		d = dabs((double)(jp__prof_exp1(r) - ln_ref(r)));
		if (d > worst)
			worst = d;
	}
	CU_ASSERT(worst < 1e-8);
}

/*
 * The intervals of an exponential distribution of mean m: their mean is m
 * and their standard deviation m too, so the mean of n = 400000 draws has
 * a standard error of m / sqrt(n), 0.16% of m: within 1% of m is over 6 of
 * them.  And the fraction above m is exp(-1) = 0.3679 (standard error
 * 0.08%; 0.5% allowed).  The generator's seed is fixed: the same draws on
 * every run.
 */
static void test_interval_mean(void)
{
	const uint64_t mean = (uint64_t)512 << 10;
	const unsigned n = 400000;
	uint64_t state = 12345, above = 0;
	double sum = 0;

	for (unsigned i = 0; i < n; i++) {
		uint64_t v = jp__prof_interval(&state, mean);

		CU_ASSERT_FATAL(v >= 1);
		sum += (double)v;
		above += v > mean;
	}
	CU_ASSERT(dabs(sum / n / (double)mean - 1) < 0.01);
	CU_ASSERT(dabs((double)above / n - 0.36787944) < 0.005);
}

enum { N = 200000 };

/* In a thread of its own: its heap is made, and armed, with the profile
 * on (main switches it on after the allocator's start). */
static void *churn(void *arg)
{
	static void *keep[1000];

	(void)arg;
	for (unsigned i = 0; i < N; i++) {
		unsigned k = i % 1000;

		if (keep[k] != NULL)
			jp_free(keep[k]);
		keep[k] = jp_alloc(16 + (i % 7) * 48);
		if (keep[k] == NULL)
			return keep;	/* not NULL: failed */
	}
	for (unsigned k = 0; k < 1000; k++)
		jp_free(keep[k]);
	return NULL;
}

/* With the profile on, the bins' counts are armed and carried (about one
 * sample per 4 KiB here, so thousands of carries); the blocks handed out
 * stay exact (nalloc_hi + the count). */
static void test_counts_exact(void)
{
	struct jp_alloc_stats a, b;
	pthread_t t;
	void *r = NULL;

	CU_ASSERT_EQUAL_FATAL(jp_alloc_stats(&a, sizeof a), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, churn, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_join(t, &r), 0);
	CU_ASSERT_PTR_NULL(r);
	CU_ASSERT_EQUAL_FATAL(jp_alloc_stats(&b, sizeof b), 0);
	CU_ASSERT_EQUAL(b.allocs - a.allocs, N);
}

/* Whether a free of p takes jp_free's fast path (which never calls the
 * profile): its slice's view says p is a block. */
static bool free_is_fast(void *p)
{
	return jp__slice_block_test(jp__slice_of((uintptr_t)p), (uintptr_t)p);
}

enum { SPAN_BLOCKS = 64 };

/*
 * A block sampled in a span of several slices (16 KiB blocks: 2 slices
 * of 4 blocks) sends only the frees of its own slice, from it up,
 * through the profile: a block of the same span in the other slice is
 * freed on the fast path and the samples stay as they were; the sampled
 * block's free drops its sample, and its slice is fast again.  (In a
 * thread of its own: the test arms its bin by hand, with the rate
 * changed meanwhile.)
 */
static void *sampled_slice(void *arg)
{
	const uint64_t rate = jp__settings.prof_rate;
	uint32_t cls = jp__size_class(16384);
	void *blk[SPAN_BLOCKS], *p, *q = NULL;
	size_t live0;
	unsigned n = 0;
	int *ok = arg;

	/* This thread's heap, armed for no sample for a long while, and
	 * blocks of the span below p. */
	jp__settings_w.prof_rate = (uint64_t)1 << 40;
	while (n < 2 && (blk[n] = jp_alloc(16384)) != NULL)
		n++;
	/* The next block of the class is sampled (rate 1: every block),
	 * then none for a long while. */
	jp__settings_w.prof_rate = 1;
	jp__prof_bin_arm(&jp__tls_heap->bins[cls], cls);
	live0 = jp__prof_nlive();
	p = jp_alloc(16384);
	jp__settings_w.prof_rate = (uint64_t)1 << 40;
	jp__prof_bin_arm(&jp__tls_heap->bins[cls], cls);
	jp__settings_w.prof_rate = rate;
	if (p == NULL || jp__prof_nlive() != live0 + 1 || jp__classes[cls].nslices < 2)
		return NULL;
	/* A block of p's span that starts in another slice. */
	while (q == NULL && n < SPAN_BLOCKS) {
		void *b = jp_alloc(16384);

		if (b == NULL)
			break;
		blk[n++] = b;
		if (jp__span_of((uintptr_t)b) == jp__span_of((uintptr_t)p) &&
		    ((uintptr_t)b ^ (uintptr_t)p) >> JP_SLICE_SHIFT != 0)
			q = b;
	}
	*ok = q != NULL;
	ok[1] = !free_is_fast(p);	/* p's slice: through the profile */
	ok[2] = q != NULL && free_is_fast(q);
	ok[6] = 1;
	for (unsigned i = 0; i < n; i++)	/* in p's slice: from p up */
		if (((uintptr_t)blk[i] ^ (uintptr_t)p) >> JP_SLICE_SHIFT == 0 &&
		    free_is_fast(blk[i]) != ((uintptr_t)blk[i] < (uintptr_t)p))
			ok[6] = 0;
	for (unsigned i = 0; i < n; i++)
		jp_free(blk[i]);
	ok[3] = jp__prof_nlive() == live0 + 1;	/* q was not p */
	jp_free(p);
	ok[4] = jp__prof_nlive() == live0;
	ok[5] = free_is_fast(p) || jp__span_of((uintptr_t)p)->used == 0;
	return NULL;
}

static void test_sampled_slice(void)
{
	int ok[7] = { 0 };
	pthread_t t;

	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, sampled_slice, ok), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_join(t, NULL), 0);
	CU_ASSERT(ok[0]);	/* the setting up worked */
	CU_ASSERT(ok[1]);	/* the sampled block's slice is slow */
	CU_ASSERT(ok[2]);	/* the other slice of its span is fast */
	CU_ASSERT(ok[6]);	/* in its slice, the blocks from it up are slow */
	CU_ASSERT(ok[3]);	/* its free left the samples alone */
	CU_ASSERT(ok[4]);	/* the sampled block's free dropped its sample */
	CU_ASSERT(ok[5]);	/* and made its slice fast again */
}

enum { MANY = 3000 };

/* Every block sampled (rate 1): the table of live samples grows from its
 * 1024 slots past 4096 with every sample found again at its free. */
static void *many_samples(void *arg)
{
	static void *blk[MANY];
	size_t live0 = jp__prof_nlive();
	int *ok = arg;

	ok[0] = ok[1] = 1;
	for (unsigned i = 0; i < MANY; i++)
		if ((blk[i] = jp_alloc(64)) == NULL)
			ok[0] = 0;
	ok[0] = ok[0] && jp__prof_nlive() == live0 + MANY;
	/* In another order than they came (each slot moved by the shifts
	 * of others' removals). */
	for (unsigned i = 0; i < MANY; i++)
		jp_free(blk[(i * 7) % MANY]);
	ok[1] = jp__prof_nlive() == live0;
	return NULL;
}

static void test_many_samples(void)
{
	const uint64_t rate = jp__settings.prof_rate;
	int ok[2] = { 0 };
	pthread_t t;

	jp__settings_w.prof_rate = 1;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, many_samples, ok), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_join(t, NULL), 0);
	jp__settings_w.prof_rate = rate;
	CU_ASSERT(ok[0]);	/* every block is a live sample */
	CU_ASSERT(ok[1]);	/* and every free dropped its own */
}

enum { SWAP_N = 2000 };

struct swap {
	void *blk[2][SWAP_N];
	unsigned id;
	int failed;
};

/* Thread id allocates into blk[id]: many samples (the rate is 64 bytes),
 * recorded by both threads at once. */
static void *swap_alloc(void *arg)
{
	struct swap *sw = arg;
	unsigned id = __atomic_fetch_add(&sw->id, 1, __ATOMIC_RELAXED);

	for (unsigned i = 0; i < SWAP_N; i++)
		if ((sw->blk[id][i] = jp_alloc(16 + (i % 64) * 16)) == NULL)
			__atomic_store_n(&sw->failed, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* Thread id frees the other's blocks: sampled blocks freed on a thread
 * that did not record them, both threads at once. */
static void *swap_free(void *arg)
{
	struct swap *sw = arg;
	unsigned id = __atomic_fetch_add(&sw->id, 1, __ATOMIC_RELAXED);

	for (unsigned i = 0; i < SWAP_N; i++)
		jp_free(sw->blk[1 - id][i]);
	return NULL;
}

static void run_pair(void *(*fn)(void *), struct swap *sw)
{
	pthread_t t[2];

	sw->id = 0;
	for (unsigned k = 0; k < 2; k++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[k], NULL, fn, sw), 0);
	for (unsigned k = 0; k < 2; k++)
		CU_ASSERT_EQUAL_FATAL(pthread_join(t[k], NULL), 0);
}

/* Samples recorded on two threads at once and freed, at once, on the
 * other one: every one is dropped. */
static void test_samples_across_threads(void)
{
	static struct swap sw;
	const uint64_t rate = jp__settings.prof_rate;
	size_t live0 = jp__prof_nlive();

	jp__settings_w.prof_rate = 64;
	run_pair(swap_alloc, &sw);
	jp__settings_w.prof_rate = rate;
	CU_ASSERT_FATAL(!sw.failed);
	CU_ASSERT(jp__prof_nlive() > live0 + SWAP_N / 4);
	run_pair(swap_free, &sw);
	CU_ASSERT_EQUAL(jp__prof_nlive(), live0);
}

/*
 * A span keeps its samples' table when another shard adopts it.  The
 * first thread's blocks are sampled into its shard's table; it exits and
 * half its blocks are freed; a second thread, of another shard, adopts
 * those spans, and its own samples there, its frees and the frees of the
 * first thread's other blocks must all meet the samples where they are.
 * Fails if a sample's table follows the span's current shard: the first
 * thread's last blocks are then looked for in the second shard's table,
 * and their samples stay live.
 */
enum { ADOPT_N = 2000, ADOPT_SIZE = 184 };

struct adopt {
	void *first[ADOPT_N], *second[ADOPT_N / 2];
	sem_t first_done, second_in, go;
	unsigned adopted;
	int failed;
};

static void *adopt_first(void *arg)
{
	struct adopt *a = arg;

	for (size_t i = 0; i < ADOPT_N; i++)
		if ((a->first[i] = jp_alloc(ADOPT_SIZE)) == NULL)
			a->failed = 1;
	sem_post(&a->first_done);
	while (sem_wait(&a->second_in) != 0)
		;		/* exits once the second has a shard of its own */
	return NULL;
}

static void *adopt_second(void *arg)
{
	struct adopt *a = arg;

	jp_free(jp_alloc(16));	/* joins a shard */
	sem_post(&a->second_in);
	while (sem_wait(&a->go) != 0)
		;
	for (size_t i = 0; i < ADOPT_N / 2; i++) {
		if ((a->second[i] = jp_alloc(ADOPT_SIZE)) == NULL) {
			a->failed = 1;
			continue;
		}
		/* A span made for another shard: adopted. */
		if (jp__span_of((uintptr_t)a->second[i])->prof_tab != jp__tls_heap->shard)
			a->adopted++;
	}
	for (size_t i = 0; i < ADOPT_N / 2; i++)
		jp_free(a->second[i]);
	return NULL;
}

static void test_samples_in_adopted_span(void)
{
	static struct adopt a;
	const uint64_t rate = jp__settings.prof_rate;
	size_t live0 = jp__prof_nlive();
	pthread_t t1, t2;

	sem_init(&a.first_done, 0, 0);
	sem_init(&a.second_in, 0, 0);
	sem_init(&a.go, 0, 0);
	jp__settings_w.prof_rate = 64;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t1, NULL, adopt_first, &a), 0);
	while (sem_wait(&a.first_done) != 0)
		;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t2, NULL, adopt_second, &a), 0);
	pthread_join(t1, NULL);
	for (size_t i = 0; i < ADOPT_N; i += 2)
		jp_free(a.first[i]);
	jp_thread_flush();
	sem_post(&a.go);
	pthread_join(t2, NULL);
	jp__settings_w.prof_rate = rate;
	CU_ASSERT_FATAL(!a.failed);
	CU_ASSERT(a.adopted > 0);	/* the case happened */
	for (size_t i = 1; i < ADOPT_N; i += 2)
		jp_free(a.first[i]);
	jp_thread_flush();
	CU_ASSERT_EQUAL(jp__prof_nlive(), live0);
	sem_destroy(&a.first_done);
	sem_destroy(&a.second_in);
	sem_destroy(&a.go);
}

/*
 * A stats signal that lands in a thread holding one table's lock, while
 * another thread writes a profile and, holding the tables below it, waits
 * for that one: the handler writes no profile (it says why) instead of
 * waiting for the writer, which waits for it.  Hangs (and alarm ends it)
 * when the handler takes the tables one by one.  The profiles go to a
 * directory of their own (JPSYNC_HEAP_PROFILE is not set here: the names
 * are ".<pid>.<seq>.heap").
 */
static void *profile_writer(void *arg)
{
	(void)arg;
	jp__prof_on_signal();
	return NULL;
}

static void test_signal_profile_no_deadlock(void)
{
	char dir[] = "/tmp/jpsync-prof-XXXXXX", cwd[4096], path[4200], buf[256];
	struct jp__lock *mine = jp__prof_lock_at(3);
	unsigned said = 0, files = 0;
	struct dirent *e;
	pthread_t t;
	DIR *d;

	CU_ASSERT_FATAL(getcwd(cwd, sizeof cwd) != NULL && mkdtemp(dir) != NULL);
	CU_ASSERT_FATAL(chdir(dir) == 0);
	alarm(60);
	jp__lock(mine);		/* the code the signal interrupts */
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, profile_writer, NULL), 0);
	/* The writer holds tables 0 to 2, and waits for 3. */
	while (atomic_load(&jp__prof_lock_at(2)->owner) == 0)
		sched_yield();
	jp__prof_on_signal();	/* the handler, in this thread */
	jp__unlock(mine);
	pthread_join(t, NULL);
	alarm(0);
	CU_ASSERT_FATAL((d = opendir(".")) != NULL);
	while ((e = readdir(d)) != NULL) {
		FILE *f;

		if (e->d_name[0] != '.' || strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		files++;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if ((f = fopen(path, "r")) != NULL) {
			if (fgets(buf, sizeof buf, f) != NULL && strstr(buf, "interrupted") != NULL)
				said++;
			fclose(f);
		}
		unlink(path);
	}
	closedir(d);
	CU_ASSERT(chdir(cwd) == 0);
	rmdir(dir);
	CU_ASSERT_EQUAL(files, 2);	/* the writer's, and the handler's */
	CU_ASSERT_EQUAL(said, 1);	/* which says it wrote none */
}

static CU_TestInfo prof_tests[] = {
	{ "-ln(u) without libm is exact to 1e-6", test_exp1 },
	{ "-ln(u) is within 1e-8 everywhere", test_exp1_sweep },
	{ "intervals are exponential with the rate as mean", test_interval_mean },
	{ "blocks handed out stay exact with the counts armed", test_counts_exact },
	{ "only the sampled block's slice frees through the profile", test_sampled_slice },
	{ "the live samples' table grows and keeps every sample", test_many_samples },
	{ "samples recorded and freed on other threads", test_samples_across_threads },
	{ "an adopted span's samples stay in their table", test_samples_in_adopted_span },
	{ "a profile from a signal never waits for a writer", test_signal_profile_no_deadlock },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ "heap profile sampler", NULL, NULL, NULL, NULL, prof_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	int rc;

	/* The allocator started, then the profile on (as JPSYNC_HEAP_PROFILE
	 * does at the start) for the heaps made from now on. */
	jp_free(jp_alloc(1));
	jp__settings_w.prof_rate = 4096;
	jp__settings_w.prof = 1;
	rc = jp_test_run(suites);
	jp__settings_w.prof = 0;	/* no profile at exit */
	return rc;
}
