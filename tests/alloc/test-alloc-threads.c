/*
 * test-alloc-threads.c - jp_alloc(3) from many threads: cross-thread frees,
 * thread caches, bulk rounds, stress (black-box, through the shared
 * library).  Memory in transit between threads: test-alloc-transit.c.
 *
 * Stress cases run through jp_hammer; sizes scale with JPSYNC_TEST_SCALE.
 */
#define _GNU_SOURCE	/* fopencookie, mincore */
#include <jpsync/alloc.h>
#include <jpsync/hammer.h>

#include "testutil.h"
#include "alloc-testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
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

/* ---- threads --------------------------------------------------------- */

/* Producer thread 2k hands blocks to consumer 2k+1 through a ring (a
 * mutex, so that helgrind and drd see the hand-off too). */
#define RING 1024
struct ring {
	pthread_mutex_t lock;
	uint64_t head, tail;
	void *slot[RING];
};

struct xfer {
	struct ring *rings;
	_Atomic uint64_t bad;
};

static void xfer_body(void *ctx, unsigned t, uint64_t i)
{
	struct xfer *x = ctx;
	struct ring *r = &x->rings[t / 2];

	if (t % 2 == 0) {
		size_t n = 16 + (i * 40503u) % 700;
		uint64_t *p = jp_alloc(n);

		p[0] = i;
		p[1] = n;
		for (;;) {
			pthread_mutex_lock(&r->lock);
			if (r->head - r->tail < RING)
				break;
			pthread_mutex_unlock(&r->lock);
			sched_yield();
		}
		r->slot[i % RING] = p;
		r->head = i + 1;
		pthread_mutex_unlock(&r->lock);
	} else {
		uint64_t *p;

		for (;;) {
			pthread_mutex_lock(&r->lock);
			if (r->head > i)
				break;
			pthread_mutex_unlock(&r->lock);
			sched_yield();
		}
		p = r->slot[i % RING];
		r->tail = i + 1;
		pthread_mutex_unlock(&r->lock);
		if (p[0] != i || jp_usable_size(p) < p[1])
			atomic_fetch_add(&x->bad, 1);
		jp_free(p);
	}
}

static void test_cross_thread_frees(void)
{
	unsigned pairs = 2;
	uint64_t iters = jp_test_scaled(1000000, 2000);
	struct xfer x = { 0 };
	struct jp_alloc_stats before, after;

	x.rings = jp_calloc(pairs, sizeof *x.rings);
	for (unsigned i = 0; i < pairs; i++)
		pthread_mutex_init(&x.rings[i].lock, NULL);
	jp_thread_flush();
	stats(&before);
	CU_ASSERT_EQUAL_FATAL(jp_hammer(2 * pairs, iters, xfer_body, &x), 0);
	CU_ASSERT_EQUAL(atomic_load(&x.bad), 0);
	jp_thread_flush();
	stats(&after);
	/* Every block came back: the threads' caches went at their exit. */
	CU_ASSERT_EQUAL(after.in_use, before.in_use);
	CU_ASSERT(after.frees - before.frees >= pairs * iters);
	for (unsigned i = 0; i < pairs; i++)
		pthread_mutex_destroy(&x.rings[i].lock);
	jp_free(x.rings);
}

static void *churn_thread(void *arg)
{
	void *p[16];

	(void)arg;
	for (int i = 0; i < 16; i++) {
		p[i] = jp_alloc((size_t)(16 << (i % 10)));
		memset(p[i], 1, 16);
	}
	for (int i = 0; i < 16; i++)
		jp_free(p[i]);
	return NULL;
}

static void churn(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		pthread_t t;

		CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, churn_thread, NULL), 0);
		pthread_join(t, NULL);
	}
}

static void test_thread_churn_rss_flat(void)
{
	unsigned n = (unsigned)jp_test_scaled(jp_test_on_valgrind() ? 2000 : 10000, 100);
	size_t rss1, rss2;
	struct jp_alloc_stats st1, st2;

	churn(n / 10);
	rss1 = rss_now();
	stats(&st1);
	churn(n - n / 10);
	rss2 = rss_now();
	stats(&st2);
	/* No heap left behind by the exited threads, no memory kept. */
	CU_ASSERT_EQUAL(st2.threads, st1.threads);
	CU_ASSERT_EQUAL(st2.in_use, st1.in_use);
	CU_ASSERT(st2.mapped <= st1.mapped + 8 * MiB);
	if (rss_checks())
		CU_ASSERT(rss2 <= rss1 + 4 * MiB);
}

static void *exit_with_cache(void *arg)
{
	void *p[20];

	for (int i = 0; i < 20; i++)
		p[i] = jp_alloc(48);
	for (int i = 0; i < 20; i++)
		jp_free(p[i]);
	/* No CUnit assertion in a thread: CUnit is not thread-safe. */
	if (jp_alloc_stats(arg, sizeof(struct jp_alloc_stats)) != 0)
		memset(arg, 0, sizeof(struct jp_alloc_stats));
	return NULL;
}

static void test_thread_exit_returns_cache(void)
{
	struct jp_alloc_stats before, during, after;
	pthread_t t;

	jp_thread_flush();
	stats(&before);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, exit_with_cache, &during), 0);
	pthread_join(t, NULL);
	stats(&after);
	if (!jp_test_on_memcheck())	/* memcheck: no thread caches */
		CU_ASSERT(during.cached > before.cached);
	CU_ASSERT_EQUAL(during.threads, before.threads + 1);
	CU_ASSERT_EQUAL(after.threads, before.threads);
	CU_ASSERT_EQUAL(after.cached, before.cached);
	CU_ASSERT_EQUAL(after.in_use, before.in_use);
}

static void test_thread_flush(void)
{
	struct jp_alloc_stats st;
	void *p = jp_alloc(200);

	jp_free(p);
	jp_thread_flush();
	stats(&st);
	CU_ASSERT_EQUAL(st.cached, 0);
}

/*
 * A thread that allocates and frees in bulk: its bin grows until a whole
 * round fits (no refill from the shared lists in the later rounds), and
 * the round stays cached.
 */
#define GROW_BLOCKS 2048
struct grow_res {
	struct jp_alloc_stats before, after;
	int failed;
};

static void *grow_rounds(void *arg)
{
	struct grow_res *g = arg;
	void **b = calloc(GROW_BLOCKS, sizeof *b);

	if (b == NULL) {
		g->failed = 1;
		return NULL;
	}
	for (int r = 0; r < 12; r++) {
		if (r == 8 && jp_alloc_stats(&g->before, sizeof g->before) != 0)
			g->failed = 1;
		for (int i = 0; i < GROW_BLOCKS; i++)
			if ((b[i] = jp_alloc(80)) == NULL)
				g->failed = 1;
			else
				memset(b[i], r, 80);
		for (int i = 0; i < GROW_BLOCKS; i++)
			jp_free(b[i]);
	}
	if (jp_alloc_stats(&g->after, sizeof g->after) != 0)
		g->failed = 1;
	free(b);
	return NULL;
}

static void test_bin_grows(void)
{
	struct grow_res g = { .failed = 0 };
	pthread_t t;

	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, grow_rounds, &g), 0);
	pthread_join(t, NULL);
	CU_ASSERT_FALSE(g.failed);
	CU_ASSERT_EQUAL(g.after.cache_misses, g.before.cache_misses);
	CU_ASSERT(g.after.cache_hits - g.before.cache_hits >= 4 * GROW_BLOCKS);
	CU_ASSERT(g.after.cached >= (uint64_t)GROW_BLOCKS * 80);
}

/*
 * Bulk rounds under contention: every thread allocates a batch (64 to 1024
 * blocks of 16 bytes to 2 KiB), fills and checks it, frees half itself and
 * swaps the other half with a shared mailbox, freeing whatever batch
 * another thread left there.  Bins grow, overflow with other threads'
 * blocks and shrink as the budget is shared; nothing may be lost or
 * handed out twice, and everything goes back.
 */
#define BULK_SLOTS 4
struct bulk_batch {
	unsigned n;
	unsigned char tag;
	size_t size;
	unsigned char *p[];
};

struct bulk {
	/* A mutex, not an atomic exchange: helgrind and drd must see the
	 * hand-off of the blocks. */
	pthread_mutex_t lock;
	struct bulk_batch *mailbox[BULK_SLOTS];
	_Atomic uint64_t bad;
};

static bool bulk_ok(const unsigned char *p, size_t size, unsigned char tag)
{
	return p[0] == tag && p[size / 2] == tag && p[size - 1] == tag;
}

static void bulk_free_batch(struct bulk *m, struct bulk_batch *b, unsigned from)
{
	for (unsigned i = from; i < b->n; i++) {
		if (!bulk_ok(b->p[i], b->size, b->tag))
			atomic_fetch_add(&m->bad, 1);
		jp_free(b->p[i]);
	}
	jp_free(b);
}

static void bulk_body(void *ctx, unsigned t, uint64_t iter)
{
	struct bulk *m = ctx;
	uint64_t r = (iter + 1) * 6364136223846793005ull + t * 1442695040888963407ull;
	unsigned n = 64u << (r >> 61 & 3), half = n / 2;
	size_t size = 16 + (size_t)(r >> 20) % 2033;
	struct bulk_batch *b = jp_alloc(sizeof *b + n * sizeof b->p[0]), *old;

	if (b == NULL) {
		atomic_fetch_add(&m->bad, 1);
		return;
	}
	b->n = n;
	b->size = size;
	b->tag = (unsigned char)(r >> 40 | 1);
	for (unsigned i = 0; i < n; i++) {
		if ((b->p[i] = jp_alloc(size)) == NULL) {
			atomic_fetch_add(&m->bad, 1);
			b->n = i;
			bulk_free_batch(m, b, 0);
			return;
		}
		memset(b->p[i], b->tag, size);
	}
	/* The first half: freed here; the second: to whoever comes next. */
	for (unsigned i = 0; i < half; i++) {
		if (!bulk_ok(b->p[i], size, b->tag))
			atomic_fetch_add(&m->bad, 1);
		jp_free(b->p[i]);
	}
	memmove(b->p, b->p + half, (n - half) * sizeof b->p[0]);
	b->n = n - half;
	pthread_mutex_lock(&m->lock);
	old = m->mailbox[(t + iter) % BULK_SLOTS];
	m->mailbox[(t + iter) % BULK_SLOTS] = b;
	pthread_mutex_unlock(&m->lock);
	if (old != NULL)
		bulk_free_batch(m, old, 0);
	if (t == 0 && iter % 4 == 0) {
		/* Statistics and trims while chains of blocks of several
		 * arenas come and go: in_use stays within what is mapped
		 * (it once wrapped below zero). */
		struct jp_alloc_stats st;

		if (jp_alloc_stats(&st, sizeof st) != 0 || st.in_use > st.mapped)
			atomic_fetch_add(&m->bad, 1);
		if (iter % 16 == 0)
			jp_alloc_trim();
	}
}

static void test_bulk_under_contention(void)
{
	struct jp_alloc_stats before, after;
	struct bulk *m;

	jp_thread_flush();
	stats(&before);
	m = jp_calloc(1, sizeof *m);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	pthread_mutex_init(&m->lock, NULL);
	CU_ASSERT_EQUAL_FATAL(jp_hammer(8, jp_test_scaled(400, 20), bulk_body, m), 0);
	for (unsigned i = 0; i < BULK_SLOTS; i++) {
		struct bulk_batch *b = m->mailbox[i];

		if (b != NULL)
			bulk_free_batch(m, b, 0);
	}
	CU_ASSERT_EQUAL(atomic_load(&m->bad), 0);
	pthread_mutex_destroy(&m->lock);
	jp_free(m);
	jp_thread_flush();
	stats(&after);
	/* The hammer's threads have exited: their caches went back. */
	CU_ASSERT_EQUAL(after.threads, before.threads);
	CU_ASSERT_EQUAL(after.cached, 0);
	CU_ASSERT_EQUAL(after.in_use, before.in_use);
}

/* A stress mix: threads allocate blocks of random sizes, keep some,
 * check their contents, free them. */
struct mix {
	void *keep[16][64];
	_Atomic uint64_t bad;
};

static void mix_body(void *ctx, unsigned t, uint64_t i)
{
	struct mix *m = ctx;
	unsigned slot = (unsigned)(i * 7919u % 64);
	unsigned char *old = m->keep[t][slot];
	uint64_t r = (i + 1) * 6364136223846793005ull + t;
	size_t n = (r >> 33) % (r % 17 == 0 ? 300000 : 2000);

	if (old != NULL) {
		size_t on = jp_usable_size(old);

		if (on > 0 && (old[0] != (unsigned char)t || old[on - 1] != (unsigned char)t))
			atomic_fetch_add(&m->bad, 1);
		jp_free(old);
	}
	old = jp_alloc(n);
	if (old == NULL) {
		atomic_fetch_add(&m->bad, 1);
		return;
	}
	memset(old, (int)t, jp_usable_size(old));
	m->keep[t][slot] = old;
}

static void test_stress_mixed_sizes(void)
{
	struct mix *m = jp_calloc(1, sizeof *m);

	CU_ASSERT_EQUAL_FATAL(jp_hammer(8, jp_test_scaled(20000, 500), mix_body, m), 0);
	CU_ASSERT_EQUAL(atomic_load(&m->bad), 0);
	for (int t = 0; t < 16; t++)
		for (int s = 0; s < 64; s++)
			jp_free(m->keep[t][s]);
	jp_free(m);
}

/*
 * A thread allocates blocks, publishes them and exits while the main
 * thread is freeing them: remote frees to the cache and lists of a thread
 * that is going or gone.  Nothing is lost or handed out twice: afterwards
 * the live count is back where it was, and blocks allocated again are
 * distinct (each keeps the index written into it).
 */
#define EXIT_BLOCKS 600

/* Published under a mutex, so that helgrind and drd see the hand-off. */
struct exiting {
	pthread_mutex_t lock;
	void *blk[EXIT_BLOCKS];
	unsigned published;
};

static unsigned exiting_published(struct exiting *e)
{
	unsigned n;

	pthread_mutex_lock(&e->lock);
	n = e->published;
	pthread_mutex_unlock(&e->lock);
	return n;
}

static void *exiting_thread(void *arg)
{
	struct exiting *e = arg;

	for (unsigned i = 0; i < EXIT_BLOCKS; i++) {
		uint64_t *p = jp_alloc(16 + (i * 37u) % 2000);

		p[0] = i;
		pthread_mutex_lock(&e->lock);
		e->blk[i] = p;
		e->published = i + 1;
		pthread_mutex_unlock(&e->lock);
	}
	return NULL;	/* and exits, while the main thread frees */
}

static void test_thread_exit_during_remote_frees(void)
{
	/* 40 rounds allocate about 24 MiB in all: were the blocks freed into
	 * an exited thread's keeping lost, the mapped memory would grow by
	 * that much.  Under valgrind, a few rounds for the race detectors. */
	unsigned rounds = jp_test_on_valgrind() ? 4 : 40, bad = 0;
	struct jp_alloc_stats a, b;
	uint64_t *again[EXIT_BLOCKS];
	struct exiting *e = jp_calloc(1, sizeof *e);

	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	pthread_mutex_init(&e->lock, NULL);
	CU_ASSERT_EQUAL_FATAL(jp_alloc_stats(&a, sizeof a), 0);
	for (unsigned r = 0; r < rounds; r++) {
		pthread_t t;
		unsigned freed = 0;

		e->published = 0;	/* no thread runs: the last was joined */
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, exiting_thread, e), 0);
		while (freed < EXIT_BLOCKS) {
			unsigned n = exiting_published(e);

			for (; freed < n; freed++) {
				if (*(uint64_t *)e->blk[freed] != freed)
					bad++;
				jp_free(e->blk[freed]);
			}
			if (freed < EXIT_BLOCKS)
				sched_yield();
		}
		pthread_join(t, NULL);
	}
	for (unsigned i = 0; i < EXIT_BLOCKS; i++) {
		again[i] = jp_alloc(16 + (i * 37u) % 2000);
		again[i][0] = i;
	}
	for (unsigned i = 0; i < EXIT_BLOCKS; i++) {
		bad += again[i][0] != i;
		jp_free(again[i]);
	}
	CU_ASSERT_EQUAL_FATAL(jp_alloc_stats(&b, sizeof b), 0);
	CU_ASSERT_EQUAL(bad, 0);
	/* Every block of the rounds freed: the allocations and frees since
	 * the start match (this thread's jp_calloc is still live). */
	CU_ASSERT_EQUAL(b.allocs - a.allocs, b.frees - a.frees);
	if (!jp_test_on_valgrind())
		CU_ASSERT(b.mapped <= a.mapped + 8 * MiB);
	pthread_mutex_destroy(&e->lock);
	jp_free(e);
}


static CU_TestInfo thread_tests[] = {
	{ "cross-thread frees at scale (producers/consumers)", test_cross_thread_frees },
	{ "thread churn leaves RSS flat", test_thread_churn_rss_flat },
	{ "a thread that exits returns its cache", test_thread_exit_returns_cache },
	{ "jp_thread_flush empties the caller's cache", test_thread_flush },
	{ "a bin grows for a thread that allocates and frees in bulk", test_bin_grows },
	{ "bulk rounds with remote frees from 8 threads", test_bulk_under_contention },
	{ "stress: mixed sizes from 8 threads", test_stress_mixed_sizes },
	{ "a thread exits while another frees its blocks", test_thread_exit_during_remote_frees },
	{ NULL, NULL },
};

static CU_SuiteInfo suites[] = {
	{ "alloc-threads", NULL, NULL, NULL, NULL, thread_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	/*
	 * A case that cannot run here is not registered, rather than run as
	 * an empty pass; each one left out prints a line naming it and why.
	 */
	if (jp_test_on_memcheck()) {
		/* memcheck keeps no thread caches and no huge cache (a freed
		 * block must die at once): the behaviour is not there.
		 * helgrind and drd run these. */
		jp_test_unregister(thread_tests, test_bin_grows,
				   "memcheck: no thread caches");
	}
	if (jp_test_emulated()) {
		/* RSS is the emulator process's: each guest thread is a host
		 * thread with qemu's own state, which outlives it. */
		jp_test_unregister(thread_tests, test_thread_churn_rss_flat,
				   "qemu-user: RSS counts the emulator's per-thread memory");
	}
	return jp_test_run(suites);
}
