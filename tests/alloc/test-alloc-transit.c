/*
 * test-alloc-transit.c - jp_alloc(3)'s memory between threads: blocks in
 * transit on the transfer chains, the room an exited thread leaves
 * (orphaned) and its adoption, one class's memory serving another, and
 * rings of 64 and 300 threads handing blocks around (black-box, through
 * the shared library; split from test-alloc-threads.c).
 *
 * Sizes scale with JPSYNC_TEST_SCALE.
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

/* ---- memory in transit ------------------------------------------------- */

/* The blocks a thread frees and another allocated: passed by pointer. */
struct handover {
	void **blocks;
	size_t n, step;		/* free blocks[0], blocks[step], ... */
	size_t size;		/* (alloc_own) allocate n blocks of size first */
	struct jp_alloc_stats after;	/* taken before the thread exits */
	int failed;
};

static void *free_some(void *arg)
{
	struct handover *h = arg;

	if (h->size != 0)
		for (size_t i = 0; i < h->n; i++)
			if ((h->blocks[i] = jp_alloc(h->size)) == NULL)
				h->failed = 1;
	for (size_t i = 0; i < h->n; i += h->step) {
		jp_free(h->blocks[i]);
		h->blocks[i] = NULL;
	}
	/* No CUnit assertion in a thread: CUnit is not thread-safe. */
	if (jp_alloc_stats(&h->after, sizeof h->after) != 0)
		h->failed = 1;
	return NULL;
}

/*
 * Blocks this thread allocated and another freed wait on the shared
 * transfer chains of this thread's shard (in_transit) until this thread
 * allocates them again.  Fails on a library without the field (version 2:
 * in_transit is reserved, 0).
 */
#define HANDOVER_N 512
#define HANDOVER_SIZE 96	/* a class the rest of the program leaves alone */
static void test_in_transit(void)
{
	struct jp_alloc_stats before, after;
	struct handover h = { .n = HANDOVER_N, .step = 1 };
	void *again[HANDOVER_N];
	pthread_t t;

	h.blocks = jp_calloc(HANDOVER_N, sizeof *h.blocks);
	CU_ASSERT_FATAL(h.blocks != NULL);
	for (size_t i = 0; i < HANDOVER_N; i++)
		CU_ASSERT_FATAL((h.blocks[i] = jp_alloc(HANDOVER_SIZE)) != NULL);
	jp_thread_flush();
	stats(&before);
	CU_ASSERT_EQUAL(before.version, JP_ALLOC_STATS_VERSION);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, free_some, &h), 0);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(h.failed, 0);
	/* The freeing thread's cache overflowed as whole chains, kept for
	 * this thread: at least one chain, at most the 64 KiB a class's
	 * chains of one shard may hold (central.c, jp_alloc_stats(3)). */
	CU_ASSERT(h.after.in_transit >= before.in_transit + HANDOVER_SIZE);
	CU_ASSERT(h.after.in_transit <= before.in_transit + HANDOVER_N * HANDOVER_SIZE);
	CU_ASSERT(h.after.in_transit - before.in_transit <= 64 * 1024);
	/* The chains outlive the thread that freed them. */
	stats(&after);
	CU_ASSERT_EQUAL(after.in_transit, h.after.in_transit);
	/* Allocating the class again takes them back. */
	for (size_t i = 0; i < HANDOVER_N; i++)
		CU_ASSERT_FATAL((again[i] = jp_alloc(HANDOVER_SIZE)) != NULL);
	stats(&after);
	CU_ASSERT(after.in_transit <= before.in_transit);
	for (size_t i = 0; i < HANDOVER_N; i++)
		jp_free(again[i]);
	jp_free(h.blocks);
}

/*
 * A thread that exits leaving blocks it allocated in use (here, handed to
 * this thread) leaves the free room of their spans in a shard no thread
 * uses: orphaned, until those blocks come back and the spans empty.
 */
#define ORPHAN_N 2000
#define ORPHAN_SIZE 112
static void test_orphaned(void)
{
	struct jp_alloc_stats before, after;
	struct handover h = { .n = ORPHAN_N, .step = 2, .size = ORPHAN_SIZE };
	pthread_t t;

	h.blocks = jp_calloc(ORPHAN_N, sizeof *h.blocks);
	CU_ASSERT_FATAL(h.blocks != NULL);
	jp_thread_flush();
	stats(&before);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, free_some, &h), 0);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL_FATAL(h.failed, 0);
	stats(&after);
	/* This thread is the only other one, in another shard (a new thread
	 * joins the shard with the fewest): the room of the half it freed,
	 * at least, is left where only a thread of that shard can use it
	 * (not more than before plus that: the thread may have filled room
	 * that earlier threads of the shard left). */
	CU_ASSERT(after.orphaned >= ORPHAN_N / 2 * ORPHAN_SIZE);
	CU_ASSERT(after.span_free >= after.orphaned);
	for (size_t i = 1; i < ORPHAN_N; i += 2)
		jp_free(h.blocks[i]);
	jp_thread_flush();
	stats(&after);
	/* Their spans emptied and went back to their segments, but for one
	 * empty span a class keeps per shard (64 KiB). */
	CU_ASSERT(after.orphaned <= before.orphaned + 64 * 1024);
	CU_ASSERT_EQUAL(after.in_use, before.in_use);
	jp_free(h.blocks);
}

/*
 * A thread that starts while another runs joins another shard.  When the
 * first exits, the room its blocks leave as they are freed stays in its
 * shard, which no thread uses now; the second thread, whose own shard has
 * no span of that class with room, adopts those spans instead of carving
 * fresh ones: the room orphaned goes down and nothing more is mapped.
 * Fails without jp__span_adopt (shard.c): orphaned stays where it was and
 * the second thread maps new spans.
 */
#define ADOPT_N 4000
#define ADOPT_SIZE 184		/* a class the rest of the program leaves alone */
struct adopt {
	void **blocks;
	sem_t first_done, second_in, go;
	struct jp_alloc_stats before, after;
	int failed;
};

static void *adopt_first(void *arg)
{
	struct adopt *a = arg;

	for (size_t i = 0; i < ADOPT_N; i++)
		if ((a->blocks[i] = jp_alloc(ADOPT_SIZE)) == NULL)
			a->failed = 1;
	sem_post(&a->first_done);
	while (sem_wait(&a->second_in) != 0)
		;		/* exits only once the second has its shard */
	return NULL;
}

static void *adopt_second(void *arg)
{
	struct adopt *a = arg;
	void **mine = jp_calloc(ADOPT_N / 2, sizeof *mine);	/* joins a shard */

	sem_post(&a->second_in);
	while (sem_wait(&a->go) != 0)
		;
	if (mine == NULL || jp_alloc_stats(&a->before, sizeof a->before) != 0)
		a->failed = 1;
	for (size_t i = 0; mine != NULL && i < ADOPT_N / 2; i++)
		if ((mine[i] = jp_alloc(ADOPT_SIZE)) == NULL)
			a->failed = 1;
	if (jp_alloc_stats(&a->after, sizeof a->after) != 0)
		a->failed = 1;
	for (size_t i = 0; mine != NULL && i < ADOPT_N / 2; i++)
		jp_free(mine[i]);
	jp_free(mine);
	return NULL;
}

static void test_orphaned_adopted(void)
{
	struct adopt *a = jp_calloc(1, sizeof *a);
	pthread_t t1, t2;
	uint64_t room = ADOPT_N / 2 * (uint64_t)ADOPT_SIZE;

	CU_ASSERT_FATAL(a != NULL);
	CU_ASSERT_FATAL((a->blocks = jp_calloc(ADOPT_N, sizeof *a->blocks)) != NULL);
	sem_init(&a->first_done, 0, 0);
	sem_init(&a->second_in, 0, 0);
	sem_init(&a->go, 0, 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t1, NULL, adopt_first, a), 0);
	while (sem_wait(&a->first_done) != 0)
		;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t2, NULL, adopt_second, a), 0);
	pthread_join(t1, NULL);
	/* Every other block back: half the room of the first thread's
	 * spans is free, in a shard no thread uses. */
	for (size_t i = 0; i < ADOPT_N; i += 2)
		jp_free(a->blocks[i]);
	jp_thread_flush();
	sem_post(&a->go);
	pthread_join(t2, NULL);
	CU_ASSERT_EQUAL_FATAL(a->failed, 0);
	CU_ASSERT(a->before.orphaned >= room);
	/* The second thread allocated as much as was orphaned: adopted, the
	 * spans' room left the dead shard (at least half of it: the rest
	 * may be in spans it did not need), and no new span was mapped. */
	CU_ASSERT(a->after.orphaned + room / 2 <= a->before.orphaned);
	CU_ASSERT(a->after.mapped <= a->before.mapped);
	if (a->after.orphaned + room / 2 > a->before.orphaned || a->after.mapped > a->before.mapped)
		printf("\n  orphaned %llu -> %llu, mapped %llu -> %llu\n",
		       (unsigned long long)a->before.orphaned, (unsigned long long)a->after.orphaned,
		       (unsigned long long)a->before.mapped, (unsigned long long)a->after.mapped);
	for (size_t i = 1; i < ADOPT_N; i += 2)
		jp_free(a->blocks[i]);
	sem_destroy(&a->first_done);
	sem_destroy(&a->second_in);
	sem_destroy(&a->go);
	jp_free(a->blocks);
	jp_free(a);
}

/* A thread that frees many blocks of one class, then allocates another
 * class: the spans of the first go back to their segments and serve the
 * second, so the process maps no more than it did. */
static void test_class_memory_reused(void)
{
	size_t bytes = mem_size(16), n1 = bytes / 64, n2 = bytes / 1000;
	void **b = jp_calloc(n1, sizeof *b);
	struct jp_alloc_stats st1, st2;

	CU_ASSERT_FATAL(b != NULL);
	for (size_t i = 0; i < n1; i++)
		CU_ASSERT_FATAL((b[i] = jp_alloc(64)) != NULL);
	for (size_t i = 0; i < n1; i++)
		jp_free(b[i]);
	jp_thread_flush();
	stats(&st1);
	for (size_t i = 0; i < n2; i++)
		CU_ASSERT_FATAL((b[i] = jp_alloc(1000)) != NULL);
	stats(&st2);
	CU_ASSERT(st2.peak_mapped <= st1.peak_mapped + MiB);
	for (size_t i = 0; i < n2; i++)
		jp_free(b[i]);
	jp_free(b);
}

/*
 * nthreads threads in a ring: each round, each thread allocates blocks and
 * hands them to the next, which frees them.  Round after round, the memory
 * in transit and mapped stays where the first rounds put it.
 */
#define RING_BLOCKS 32
struct ring_run {
	unsigned nthreads, rounds;
	pthread_barrier_t bar;
	void **slots;		/* RING_BLOCKS per thread: what it frees next */
	struct jp_alloc_stats *st;	/* after each round (thread 0) */
	_Atomic int failed;
};
struct ring_arg {
	struct ring_run *r;
	unsigned id;
};

static void *ring_thread(void *arg)
{
	struct ring_arg *a = arg;
	struct ring_run *r = a->r;
	void **mine = &r->slots[(size_t)a->id * RING_BLOCKS];
	void **next = &r->slots[(size_t)((a->id + 1) % r->nthreads) * RING_BLOCKS];
	void *made[RING_BLOCKS];

	for (unsigned round = 0; round < r->rounds; round++) {
		for (unsigned i = 0; i < RING_BLOCKS; i++) {
			size_t n = 16 + (size_t)((a->id * 31u + i * 97u + round) % 500);

			if ((made[i] = jp_alloc(n)) == NULL)
				atomic_store(&r->failed, 1);
			else
				memset(made[i], (int)i, 16);
		}
		pthread_barrier_wait(&r->bar);	/* the slots are free */
		memcpy(next, made, sizeof made);
		pthread_barrier_wait(&r->bar);	/* the slots are full */
		for (unsigned i = 0; i < RING_BLOCKS; i++)
			jp_free(mine[i]);
		if (pthread_barrier_wait(&r->bar) == PTHREAD_BARRIER_SERIAL_THREAD &&
		    jp_alloc_stats(&r->st[round], sizeof r->st[round]) != 0)
			atomic_store(&r->failed, 1);
		pthread_barrier_wait(&r->bar);	/* the round is counted */
	}
	return NULL;
}

static void ring_bounded(unsigned nthreads)
{
	struct ring_run r = { .nthreads = nthreads };
	struct ring_arg *args = jp_calloc(nthreads, sizeof *args);
	pthread_t *t = jp_calloc(nthreads, sizeof *t);
	struct jp_alloc_stats first, last;
	unsigned made = 0;

	r.rounds = (unsigned)jp_test_scaled(jp_test_on_valgrind() ? 6 : 40, 6);
	r.slots = jp_calloc((size_t)nthreads * RING_BLOCKS, sizeof *r.slots);
	r.st = jp_calloc(r.rounds, sizeof *r.st);
	CU_ASSERT_FATAL(args != NULL && t != NULL && r.slots != NULL && r.st != NULL);
	CU_ASSERT_EQUAL_FATAL(pthread_barrier_init(&r.bar, NULL, nthreads), 0);
	for (unsigned i = 0; i < nthreads; i++) {
		args[i] = (struct ring_arg){ &r, i };
		if (pthread_create(&t[i], NULL, ring_thread, &args[i]) != 0)
			break;
		made++;
	}
	CU_ASSERT_EQUAL_FATAL(made, nthreads);
	for (unsigned i = 0; i < made; i++)
		pthread_join(t[i], NULL);
	CU_ASSERT_EQUAL(atomic_load(&r.failed), 0);
	first = r.st[2];
	last = r.st[r.rounds - 1];
	/* Each round moves nthreads * 32 blocks of up to 516 bytes (up to
	 * 5 MiB at 300 threads): what waits between threads and what is
	 * mapped must not grow with the rounds. */
	CU_ASSERT(last.mapped <= first.mapped + 8 * MiB);
	CU_ASSERT(last.in_transit <= first.in_transit + 2 * MiB);
	CU_ASSERT(last.in_transit <= last.mapped);
	pthread_barrier_destroy(&r.bar);
	jp_free(r.st);
	jp_free(r.slots);
	jp_free(t);
	jp_free(args);
}

static void test_ring_64(void)
{
	ring_bounded(64);
}

static void test_ring_300(void)
{
	ring_bounded(jp_test_on_valgrind() ? 100 : 300);
}

static CU_TestInfo transit_tests[] = {
	{ "blocks another thread freed are in transit until taken", test_in_transit },
	{ "an exited thread's spans are orphaned until they empty", test_orphaned },
	{ "a thread adopts the spans an exited thread left", test_orphaned_adopted },
	{ "a class's freed memory serves another class", test_class_memory_reused },
	{ "64 threads handing blocks around stay bounded", test_ring_64 },
	{ "300 threads handing blocks around stay bounded", test_ring_300 },
	{ NULL, NULL },
};

static CU_SuiteInfo suites[] = {
	{ "alloc-transit", NULL, NULL, NULL, NULL, transit_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	/*
	 * A case that cannot run here is not registered, rather than run as
	 * an empty pass; each one left out prints a line naming it and why.
	 */
	if (jp_test_on_memcheck()) {
		/* memcheck keeps no thread caches (a freed block must die at
		 * once): the behaviour is not there.  helgrind and drd run it. */
		jp_test_unregister(transit_tests, test_in_transit,
				   "memcheck: no thread caches, so no transfer chains");
	}
	if (jp_test_on_drd()) {
		/* drd serialises the threads and compares vector clocks of
		 * all of them at each barrier: rounds of 64 and 300 threads
		 * take many minutes.  helgrind and TSan run them. */
		jp_test_unregister(transit_tests, test_ring_64,
				   "drd: barriers of 64 threads take minutes");
		jp_test_unregister(transit_tests, test_ring_300,
				   "drd: barriers of 300 threads take minutes");
	}
	return jp_test_run(suites);
}
