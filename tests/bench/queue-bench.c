/*
 * queue-bench.c - throughput of bounded queues: jp_spsc/jp_mpsc/jp_mpmc,
 * Concurrency Kit's ck_ring (spsc, mpsc, mpmc) and a pthread_mutex ring;
 * and the CPU time of a jp_mpsc/jp_mpmc caller blocked for a while.
 *
 *   queue-bench IMPL KIND PRODUCERS CONSUMERS ITEMS [BATCH [pin]]
 *   queue-bench wait SECONDS
 *
 * IMPL is jpsync, ck_ring or pthread_mutex; KIND spsc, mpsc or mpmc.  Each
 * producer pushes ITEMS pointer-sized elements; consumers pop until the
 * producers have finished and the queue is empty.  All implementations use
 * the same policy: try, spin a little and then yield the processor when the
 * queue is full or empty (ck_ring cannot block), so the numbers compare the
 * rings, not the sleeping.  BATCH (default 1): elements per call; jpsync
 * moves them with push_bulk/pop_bulk, ck_ring and the mutex ring, which have
 * no batch call, with BATCH single calls in a row.
 * PRODUCERS and CONSUMERS both 0: one thread pushes and pops (one_thread).
 * "pin" after BATCH: each thread on its own CPU, in turn (pin()).
 * Prints "VALUE PEAK_RSS_KB" (million elements per second), or exits 2
 * when the sum of what was popped is wrong, 77 when IMPL is not built in.
 *
 * wait: one thread per case below blocks for SECONDS in a blocking call
 * with a deadline, all at once, each on its own queue; prints one line per
 * case, "CASE CPU_PERCENT", the CPU time of the blocked thread
 * (getrusage RUSAGE_THREAD, user + system) over its wall time.  Exits 2
 * when a call does not end in ETIMEDOUT.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* RUSAGE_THREAD */
#endif
#include <jpsync/queue.h>

#include <errno.h>

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
	unsigned batch;
	pthread_barrier_t start;
	_Atomic int done;		/* every producer has finished */
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

/* Pop up to n into v; how many. */
static size_t popn(struct bench *b, void **v, size_t n)
{
	size_t k = 0;

	if (b->impl[0] == 'j' && n > 1) {
		switch (b->kind) {
		case SPSC: return jp_spsc_pop_bulk(b->jq, v, n);
		case MPSC: return jp_mpsc_pop_bulk(b->jq, v, n);
		default: return jp_mpmc_pop_bulk(b->jq, v, n);
		}
	}
	while (k < n && pop1(b, &v[k]))
		k++;
	return k;
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

/* Push all n of v: jpsync's push_bulk, else single calls. */
static void pushn(struct bench *b, void **v, size_t n, unsigned *fails)
{
	size_t k = 0;

	while (k < n) {
		size_t m;

		if (b->impl[0] == 'j' && n > 1) {
			switch (b->kind) {
			case SPSC: m = jp_spsc_push_bulk(b->jq, v + k, n - k); break;
			case MPSC: m = jp_mpsc_push_bulk(b->jq, v + k, n - k); break;
			default: m = jp_mpmc_push_bulk(b->jq, v + k, n - k); break;
			}
		} else {
			m = push1(b, v[k]);
		}
		if (m == 0)
			backoff(fails);
		k += m;
	}
}

static void *producer(void *arg)
{
	struct bench *b = arg;
	void *v[64];
	unsigned fails = 0;

	pthread_barrier_wait(&b->start);
	for (uint64_t i = 1; i <= b->items; i += b->batch) {
		size_t n = b->items - i + 1 < b->batch ? b->items - i + 1 : b->batch;

		for (size_t k = 0; k < n; k++)
			v[k] = (void *)(uintptr_t)(i + k);
		pushn(b, v, n, &fails);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	struct bench *b = arg;
	uint64_t sum = 0;
	unsigned fails = 0;
	void *v[64];

	pthread_barrier_wait(&b->start);
	for (;;) {
		/* done before the pop: then an empty queue stays empty. */
		int done = atomic_load(&b->done);
		size_t n = popn(b, v, b->batch);

		if (n == 0) {
			if (done)
				break;
			backoff(&fails);
			continue;
		}
		for (size_t k = 0; k < n; k++)
			sum += (uintptr_t)v[k];
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

/* ---- wait: the CPU time of a blocked caller ---------------------------- */

enum wcase { MPSC_POP_STARTED, MPSC_POP_EMPTY, MPMC_PUSH_STARTED,
	     MPMC_PUSH_FULL, MPMC_POP_STARTED, MPMC_POP_EMPTY, NWCASES };

static const char *const wnames[NWCASES] = {
	"mpsc_pop_behind_started_push", "mpsc_pop_empty",
	"mpmc_push_behind_started_pop", "mpmc_push_full",
	"mpmc_pop_behind_started_push", "mpmc_pop_empty",
};

struct waiter {
	enum wcase c;
	void *q;
	double seconds;
	int r;
	double cpu, wall;
};

static double tv_s(struct timeval tv)
{
	return tv.tv_sec + tv.tv_usec / 1e6;
}

static void *blocked(void *arg)
{
	struct waiter *w = arg;
	struct timespec dl;
	struct rusage r0, r1;
	double t0;
	void *v = &w->r;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += (time_t)w->seconds;
	dl.tv_nsec += (long)((w->seconds - (time_t)w->seconds) * 1e9);
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	getrusage(RUSAGE_THREAD, &r0);
	t0 = now_s();
	switch (w->c) {
	case MPSC_POP_STARTED:
	case MPSC_POP_EMPTY:
		w->r = jp_mpsc_pop(w->q, &v, &dl);
		break;
	case MPMC_PUSH_STARTED:
	case MPMC_PUSH_FULL:
		w->r = jp_mpmc_push(w->q, &v, &dl);
		break;
	default:
		w->r = jp_mpmc_pop(w->q, &v, &dl);
		break;
	}
	w->wall = now_s() - t0;
	getrusage(RUSAGE_THREAD, &r1);
	w->cpu = tv_s(r1.ru_utime) - tv_s(r0.ru_utime) + tv_s(r1.ru_stime) - tv_s(r0.ru_stime);
	return NULL;
}

/* Each case on a queue of capacity 1: behind a started slot this thread
 * holds until the end, full, or empty. */
static int wait_bench(double seconds)
{
	struct waiter w[NWCASES];
	jp_queue_slot_t sl[NWCASES];
	pthread_t t[NWCASES];
	void *one = &w[0];
	int bad = 0;

	for (int c = 0; c < NWCASES; c++) {
		int mp = c <= MPSC_POP_EMPTY;

		w[c].c = (enum wcase)c;
		w[c].seconds = seconds;
		w[c].q = mp ? (void *)jp_mpsc_create(1, sizeof(void *))
			    : (void *)jp_mpmc_create(1, sizeof(void *));
		if (w[c].q == NULL)
			return 1;
		switch (c) {
		case MPSC_POP_STARTED:
			if (jp_mpsc_try_push_start(w[c].q, &sl[c]) != 0)
				return 1;
			break;
		case MPMC_POP_STARTED:
			if (jp_mpmc_try_push_start(w[c].q, &sl[c]) != 0)
				return 1;
			break;
		case MPMC_PUSH_STARTED:
			if (jp_mpmc_try_push(w[c].q, &one) != 0 ||
			    jp_mpmc_try_pop_start(w[c].q, &sl[c]) != 0)
				return 1;
			break;
		case MPMC_PUSH_FULL:
			if (jp_mpmc_try_push(w[c].q, &one) != 0)
				return 1;
			break;
		default:
			break;
		}
	}
	for (int c = 0; c < NWCASES; c++)
		if (pthread_create(&t[c], NULL, blocked, &w[c]) != 0)
			return 1;
	for (int c = 0; c < NWCASES; c++) {
		pthread_join(t[c], NULL);
		if (w[c].r != ETIMEDOUT) {
			fprintf(stderr, "queue-bench: wait %s: returned %d, not ETIMEDOUT\n",
				wnames[c], w[c].r);
			bad = 1;
		}
		printf("%s %.3f\n", wnames[c], 100 * w[c].cpu / w[c].wall);
	}
	/* The started slots are finished, as the API requires, then freed. */
	for (int c = 0; c < NWCASES; c++) {
		switch (c) {
		case MPSC_POP_STARTED: jp_mpsc_push_finish(w[c].q, &sl[c]); break;
		case MPMC_POP_STARTED: jp_mpmc_push_finish(w[c].q, &sl[c]); break;
		case MPMC_PUSH_STARTED: jp_mpmc_pop_finish(w[c].q, &sl[c]); break;
		default: break;
		}
		if (c <= MPSC_POP_EMPTY)
			jp_mpsc_destroy(w[c].q);
		else
			jp_mpmc_destroy(w[c].q);
	}
	return bad ? 2 : 0;
}

/*
 * "pin": thread i runs on the i-th allowed CPU (modulo
 * their number), so a producer and a consumer never share a core.  Left
 * to the scheduler on 2 busy cores, the pair sometimes shares one and
 * takes turns: no cache line moves, and the run measures the calls, not
 * the ring (the two modes of the spsc 1:1 row, doc/bench-costs.md).
 */
static void pin(pthread_t *t, unsigned n)
{
	cpu_set_t allowed, one;
	int cpus[CPU_SETSIZE], ncpu = 0;

	if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
		return;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[ncpu++] = c;
	for (unsigned i = 0; i < n && ncpu > 0; i++) {
		CPU_ZERO(&one);
		CPU_SET(cpus[i % (unsigned)ncpu], &one);
		pthread_setaffinity_np(t[i], sizeof one, &one);
	}
}

/*
 * PRODUCERS and CONSUMERS 0: one thread pushes half a ring and pops it
 * back, ITEMS elements in all: the cost of the calls themselves, with no
 * cache line moving between cores (ck_ring's calls are inlined here,
 * jpsync's go through the shared library's PLT, as in a user's program).
 */
static int one_thread(struct bench *b)
{
	uint64_t sum = 0;
	double t0, t1;
	struct rusage ru;
	void *v[64];
	uint64_t i;

	if ((CAP / 2) % b->batch != 0)
		return 1;
	t0 = now_s();
	for (i = 0; i < b->items; i += CAP / 2) {
		unsigned fails = 0;

		for (uint64_t k = 1; k <= CAP / 2; k += b->batch) {
			for (size_t j = 0; j < b->batch; j++)
				v[j] = (void *)(uintptr_t)(k + j);
			pushn(b, v, b->batch, &fails);
		}
		for (size_t k = 0; k < CAP / 2; ) {
			size_t n = popn(b, v, b->batch);

			if (n == 0)
				return 2;
			for (size_t j = 0; j < n; j++)
				sum += (uintptr_t)v[j];
			k += n;
		}
	}
	t1 = now_s();
	getrusage(RUSAGE_SELF, &ru);
	if (sum == 0)
		return 2;
	printf("%.3f %ld\n", (double)i / (t1 - t0) / 1e6, ru.ru_maxrss);	/* i: elements moved */
	return 0;
}

int main(int argc, char **argv)
{
	struct bench b;
	unsigned np, nc;
	pthread_t t[64];
	double t0, t1;
	struct rusage ru;
	int pinned;

	if (argc == 3 && !strcmp(argv[1], "wait"))
		return wait_bench(atof(argv[2]) > 0 ? atof(argv[2]) : 2.0);
	if (argc < 6 || argc > 8 || (argc == 8 && strcmp(argv[7], "pin") != 0)) {
		fprintf(stderr, "usage: %s jpsync|ck_ring|pthread_mutex spsc|mpsc|mpmc PRODUCERS CONSUMERS ITEMS [BATCH [pin]]\n"
			"       %s wait SECONDS\n", argv[0], argv[0]);
		return 1;
	}
	memset(&b, 0, sizeof b);
	b.impl = argv[1];
	b.kind = !strcmp(argv[2], "spsc") ? SPSC : !strcmp(argv[2], "mpsc") ? MPSC : MPMC;
	np = (unsigned)atoi(argv[3]);
	nc = (unsigned)atoi(argv[4]);
	b.items = strtoull(argv[5], NULL, 10);
	b.batch = argc >= 7 ? (unsigned)atoi(argv[6]) : 1;
	pinned = argc == 8;
	if ((np == 0) != (nc == 0) || np + nc > 64 || b.batch == 0 || b.batch > 64)
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
	if (np == 0)
		return one_thread(&b);
	pthread_barrier_init(&b.start, NULL, np + nc + 1);
	for (unsigned i = 0; i < np; i++)
		pthread_create(&t[i], NULL, producer, &b);
	for (unsigned i = 0; i < nc; i++)
		pthread_create(&t[np + i], NULL, consumer, &b);
	if (pinned)
		pin(t, np + nc);
	/* The clock starts before the release: a thread released first may
	 * run to the end before this one is scheduled again. */
	t0 = now_s();
	pthread_barrier_wait(&b.start);
	for (unsigned i = 0; i < np; i++)
		pthread_join(t[i], NULL);
	atomic_store(&b.done, 1);
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
