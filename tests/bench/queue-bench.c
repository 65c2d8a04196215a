/*
 * queue-bench.c - throughput of bounded queues: jp_spsc/jp_mpsc/jp_mpmc,
 * Concurrency Kit's ck_ring (spsc, mpsc, mpmc) and a pthread_mutex ring.
 *
 *   queue-bench IMPL KIND PRODUCERS CONSUMERS ITEMS
 *
 * IMPL is jpsync, ck_ring or pthread_mutex; KIND spsc, mpsc or mpmc.  Each
 * producer pushes ITEMS pointer-sized elements; consumers pop until they
 * get an end marker, which the main thread pushes (one per consumer) after
 * the producers have finished.  All implementations use the same policy:
 * try, spin a little and then yield the processor when the queue is full or
 * empty (ck_ring cannot block), so the numbers compare the rings, not the
 * sleeping.
 * Prints "VALUE PEAK_RSS_KB" (million elements per second), or exits 2
 * when the sum of what was popped is wrong, 77 when IMPL is not built in.
 */
#include <jpsync/queue.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* ck_ring is header-only; Concurrency Kit's inline assembly gives false
 * positives under the sanitizers, so it is left out of those builds. */
#if defined(__has_include) && !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
# if __has_include(<ck_ring.h>)
#  include <ck_ring.h>
#  define HAVE_CK 1
# endif
#endif

#define CAP 1024

enum kind { SPSC, MPSC, MPMC };

struct mutex_ring {
	pthread_mutex_t m;
	size_t head, tail;
	void *slot[CAP];
};

struct bench {
	const char *impl;
	enum kind kind;
	void *jq;
#ifdef HAVE_CK
	struct ck_ring ck;
	struct ck_ring_buffer *ckbuf;
#endif
	struct mutex_ring mr;
	uint64_t items;
	pthread_barrier_t start;
	_Atomic uint64_t sum;
};

static int push1(struct bench *b, void *v)
{
	if (b->impl[0] == 'j') {
		switch (b->kind) {
		case SPSC: return jp_spsc_try_push(b->jq, &v) == 0;
		case MPSC: return jp_mpsc_try_push(b->jq, &v) == 0;
		default: return jp_mpmc_try_push(b->jq, &v) == 0;
		}
	}
#ifdef HAVE_CK
	if (b->impl[0] == 'c') {
		switch (b->kind) {
		case SPSC: return ck_ring_enqueue_spsc(&b->ck, b->ckbuf, v);
		case MPSC: return ck_ring_enqueue_mpsc(&b->ck, b->ckbuf, v);
		default: return ck_ring_enqueue_mpmc(&b->ck, b->ckbuf, v);
		}
	}
#endif
	int ok = 0;

	pthread_mutex_lock(&b->mr.m);
	if (b->mr.tail - b->mr.head < CAP) {
		b->mr.slot[b->mr.tail++ % CAP] = v;
		ok = 1;
	}
	pthread_mutex_unlock(&b->mr.m);
	return ok;
}

static int pop1(struct bench *b, void **v)
{
	if (b->impl[0] == 'j') {
		switch (b->kind) {
		case SPSC: return jp_spsc_try_pop(b->jq, v) == 0;
		case MPSC: return jp_mpsc_try_pop(b->jq, v) == 0;
		default: return jp_mpmc_try_pop(b->jq, v) == 0;
		}
	}
#ifdef HAVE_CK
	if (b->impl[0] == 'c') {
		switch (b->kind) {
		case SPSC: return ck_ring_dequeue_spsc(&b->ck, b->ckbuf, v);
		case MPSC: return ck_ring_dequeue_mpsc(&b->ck, b->ckbuf, v);
		default: return ck_ring_dequeue_mpmc(&b->ck, b->ckbuf, v);
		}
	}
#endif
	int ok = 0;

	pthread_mutex_lock(&b->mr.m);
	if (b->mr.tail != b->mr.head) {
		*v = b->mr.slot[b->mr.head++ % CAP];
		ok = 1;
	}
	pthread_mutex_unlock(&b->mr.m);
	return ok;
}

/* The same back-off for every implementation: spin a little (the partner
 * is usually running on the other core), then give the processor away. */
static void backoff(unsigned *fails)
{
	if (++*fails < 128) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	} else {
		*fails = 0;
		sched_yield();
	}
}

static void *producer(void *arg)
{
	struct bench *b = arg;

	unsigned fails = 0;

	pthread_barrier_wait(&b->start);
	for (uint64_t i = 1; i <= b->items; i++)
		while (!push1(b, (void *)(uintptr_t)i))
			backoff(&fails);
	return NULL;
}

static void *consumer(void *arg)
{
	struct bench *b = arg;
	uint64_t sum = 0;
	unsigned fails = 0;
	void *v;

	pthread_barrier_wait(&b->start);
	for (;;) {
		if (!pop1(b, &v)) {
			backoff(&fails);
			continue;
		}
		if (v == NULL)
			break;		/* the end marker */
		sum += (uintptr_t)v;
	}
	atomic_fetch_add(&b->sum, sum);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct bench b;
	unsigned np, nc;
	pthread_t t[64];
	double t0, t1;
	struct rusage ru;

	if (argc != 6) {
		fprintf(stderr, "usage: %s jpsync|ck_ring|pthread_mutex spsc|mpsc|mpmc PRODUCERS CONSUMERS ITEMS\n", argv[0]);
		return 1;
	}
	memset(&b, 0, sizeof b);
	b.impl = argv[1];
	b.kind = !strcmp(argv[2], "spsc") ? SPSC : !strcmp(argv[2], "mpsc") ? MPSC : MPMC;
	np = (unsigned)atoi(argv[3]);
	nc = (unsigned)atoi(argv[4]);
	b.items = strtoull(argv[5], NULL, 10);
	if (np == 0 || nc == 0 || np + nc > 64)
		return 1;
	if (!strcmp(b.impl, "jpsync")) {
		b.jq = b.kind == SPSC ? (void *)jp_spsc_create(CAP, sizeof(void *))
		     : b.kind == MPSC ? (void *)jp_mpsc_create(CAP, sizeof(void *))
		     : (void *)jp_mpmc_create(CAP, sizeof(void *));
		if (b.jq == NULL)
			return 1;
	} else if (!strcmp(b.impl, "ck_ring")) {
#ifdef HAVE_CK
		b.ckbuf = calloc(CAP, sizeof *b.ckbuf);
		ck_ring_init(&b.ck, CAP);
#else
		return 77;
#endif
	} else if (!strcmp(b.impl, "pthread_mutex")) {
		pthread_mutex_init(&b.mr.m, NULL);
	} else {
		return 1;
	}
	pthread_barrier_init(&b.start, NULL, np + nc + 1);
	for (unsigned i = 0; i < np; i++)
		pthread_create(&t[i], NULL, producer, &b);
	for (unsigned i = 0; i < nc; i++)
		pthread_create(&t[np + i], NULL, consumer, &b);
	pthread_barrier_wait(&b.start);
	t0 = now_s();
	for (unsigned i = 0; i < np; i++)
		pthread_join(t[i], NULL);
	/* The end markers.  For SPSC the main thread becomes the producer
	 * only after the producer has finished (joined). */
	for (unsigned i = 0; i < nc; i++)
		while (!push1(&b, NULL))
			sched_yield();
	for (unsigned i = 0; i < nc; i++)
		pthread_join(t[np + i], NULL);
	t1 = now_s();
	getrusage(RUSAGE_SELF, &ru);
	if (atomic_load(&b.sum) != np * (b.items * (b.items + 1) / 2)) {
		fprintf(stderr, "queue-bench: %s %s: wrong sum\n", b.impl, argv[2]);
		return 2;
	}
	printf("%.3f %ld\n", (double)np * b.items / (t1 - t0) / 1e6, ru.ru_maxrss);
	return 0;
}
