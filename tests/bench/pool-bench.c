/*
 * pool-bench.c - object pools and the 3-stage pipeline.
 *
 *   pool-bench getput IMPL THREADS OPS
 *     IMPL: jp_pool (the shared per-CPU stacks only), jp_pool_tc
 *     (JP_POOL_THREAD_CACHE, jp_pool_get/jp_pool_put), jp_pool_local (the
 *     same pool through the thread's jp_pool_local handle, inline get and
 *     put), jpsync (jp_alloc/jp_free, when the allocator is built in),
 *     glibc (malloc/free) or mutex_list (a free list of the same objects
 *     under one pthread_mutex, the baseline of the uncached pool).  Each
 *     thread does OPS times: take a 64-byte object, write it, give it
 *     back.  Prints million get+put pairs per second of each thread's CPU
 *     time (the machine is shared: wall time would measure the scheduler).
 *
 *   pool-bench pairs IMPL N
 *     N get+put pairs on one thread, nothing else (for callgrind).
 *
 *   pool-bench pipeline IMPL PAIRS ITEMS
 *     IMPL jpsync: each producer takes an object from a thread-cached
 *     jp_pool, fills it and pushes it through a jp_spsc queue to its
 *     consumer, which reads it and puts it back in the pool.  IMPL
 *     glibc_mutex: the same with malloc/free and a pthread_mutex +
 *     pthread_cond ring.  Prints million items per second in all.
 *
 * Output: "VALUE PEAK_RSS_KB"; exit 2 when a check fails, 77 when IMPL is
 * not built in.
 */
#include <jpsync/pool.h>
#include <jpsync/queue.h>

#if defined(__has_include)
# if __has_include(<jpsync/alloc.h>)
#  include <jpsync/alloc.h>
#  define HAVE_JP_ALLOC 1
# endif
#endif

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define OBJ 64
#define QCAP 256

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- get/put ------------------------------------------------------------- */

enum { GP_POOL, GP_TC, GP_ALLOC, GP_GLIBC, GP_LOCAL, GP_MUTEX };

/* The baseline: a free list threaded through the objects, under a mutex. */
struct mlist {
	pthread_mutex_t m;
	void *head;
	unsigned char *mem;
};

static int mlist_init(struct mlist *l, size_t n)
{
	pthread_mutex_init(&l->m, NULL);
	l->mem = aligned_alloc(64, n * OBJ);
	if (l->mem == NULL)
		return -1;
	l->head = NULL;
	for (size_t i = n; i-- > 0;) {
		*(void **)(void *)(l->mem + i * OBJ) = l->head;
		l->head = l->mem + i * OBJ;
	}
	return 0;
}

static inline void *mlist_get(struct mlist *l)
{
	void *o;

	pthread_mutex_lock(&l->m);
	o = l->head;
	if (o != NULL)
		l->head = *(void **)o;
	pthread_mutex_unlock(&l->m);
	return o;
}

static inline void mlist_put(struct mlist *l, void *o)
{
	pthread_mutex_lock(&l->m);
	*(void **)o = l->head;
	l->head = o;
	pthread_mutex_unlock(&l->m);
}

struct gp {
	int impl;
	jp_pool_t *pool;
	struct mlist ml;
	uint64_t ops;
	pthread_barrier_t start;
	_Atomic int bad;
	_Atomic unsigned ncpu;
	double cpu[64];		/* each thread's CPU seconds */
};

static void *gp_thread(void *arg)
{
	struct gp *g = arg;

	struct timespec c0, c1;

	jp_pool_local_t *h = g->impl == GP_LOCAL ? jp_pool_local(g->pool) : NULL;

	if (g->impl == GP_LOCAL && h == NULL) {
		atomic_store(&g->bad, 1);
		pthread_barrier_wait(&g->start);
		return NULL;
	}
	pthread_barrier_wait(&g->start);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	for (uint64_t i = 0; i < g->ops; i++) {
		volatile unsigned char *o;

		switch (g->impl) {
		case GP_LOCAL:
			o = jp_pool_local_get(h);
			if (o == NULL) {
				atomic_store(&g->bad, 1);
				return NULL;
			}
			o[0] = (unsigned char)i;
			jp_pool_local_put(h, (void *)o);
			break;
		case GP_MUTEX:
			o = mlist_get(&g->ml);
			if (o == NULL) {
				atomic_store(&g->bad, 1);
				return NULL;
			}
			o[8] = (unsigned char)i;
			mlist_put(&g->ml, (void *)o);
			break;
		case GP_POOL: case GP_TC:
			o = jp_pool_get(g->pool);
			if (o == NULL) {
				atomic_store(&g->bad, 1);
				return NULL;
			}
			o[0] = (unsigned char)i;
			jp_pool_put(g->pool, (void *)o);
			break;
#ifdef HAVE_JP_ALLOC
		case GP_ALLOC:
			o = jp_alloc(OBJ);
			o[0] = (unsigned char)i;
			jp_free((void *)o);
			break;
#endif
		default:
			o = malloc(OBJ);
			o[0] = (unsigned char)i;
			free((void *)o);
			break;
		}
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	g->cpu[atomic_fetch_add(&g->ncpu, 1)] =
		(c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) / 1e9;
	return NULL;
}

/* The implementation's number, -77 when it is not built in, -1 unknown. */
static int impl_of(const char *impl)
{
	static const char *const names[] = {
		[GP_POOL] = "jp_pool", [GP_TC] = "jp_pool_tc", [GP_ALLOC] = "jpsync",
		[GP_GLIBC] = "glibc", [GP_LOCAL] = "jp_pool_local", [GP_MUTEX] = "mutex_list",
	};

	for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++) {
		if (strcmp(impl, names[i]) != 0)
			continue;
#ifndef HAVE_JP_ALLOC
		if (i == GP_ALLOC)
			return -77;
#endif
		return i;
	}
	return -1;
}

static int gp_setup(struct gp *g)
{
	if (g->impl == GP_POOL || g->impl == GP_TC || g->impl == GP_LOCAL) {
		g->pool = jp_pool_create(OBJ, 4096, g->impl == GP_POOL ? 0 : JP_POOL_THREAD_CACHE);
		return g->pool == NULL ? -1 : 0;
	}
	if (g->impl == GP_MUTEX)
		return mlist_init(&g->ml, 4096);
	return 0;
}

static void gp_teardown(struct gp *g)
{
	if (g->pool != NULL)
		jp_pool_destroy(g->pool);
	free(g->ml.mem);
}

/* N get+put pairs on this thread alone: what callgrind counts. */
static int pairs(const char *impl, uint64_t n)
{
	struct gp g;
	jp_pool_local_t *h = NULL;

	memset(&g, 0, sizeof g);
	g.impl = impl_of(impl);
	if (g.impl < 0)
		return g.impl == -77 ? 77 : 1;
	if (gp_setup(&g) != 0)
		return 1;
	if (g.impl == GP_LOCAL)
		h = jp_pool_local(g.pool);
	/* One loop per implementation, so that only the pair is counted (and
	 * the loop: 3 instructions). */
#define PAIRS(get, put) \
	for (uint64_t i = 0; i < n; i++) { \
		void *o = get; \
		__asm__ __volatile__("" : : "r"(o) : "memory"); \
		put; \
	}
	switch (g.impl) {
	case GP_LOCAL: PAIRS(jp_pool_local_get(h), jp_pool_local_put(h, o)); break;
	case GP_MUTEX: PAIRS(mlist_get(&g.ml), mlist_put(&g.ml, o)); break;
	case GP_POOL: case GP_TC: PAIRS(jp_pool_get(g.pool), jp_pool_put(g.pool, o)); break;
#ifdef HAVE_JP_ALLOC
	case GP_ALLOC: PAIRS(jp_alloc(OBJ), jp_free(o)); break;
#endif
	default: PAIRS(malloc(OBJ), free(o)); break;
	}
#undef PAIRS
	gp_teardown(&g);
	return 0;
}

static int getput(const char *impl, unsigned threads, uint64_t ops, double *value)
{
	struct gp g;
	pthread_t t[64];
	double t0, t1;

	memset(&g, 0, sizeof g);
	g.ops = ops;
	g.impl = impl_of(impl);
	if (g.impl < 0)
		return g.impl == -77 ? 77 : 1;
	if (gp_setup(&g) != 0)
		return 1;
	pthread_barrier_init(&g.start, NULL, threads + 1);
	for (unsigned i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, gp_thread, &g);
	pthread_barrier_wait(&g.start);
	t0 = now_s();
	for (unsigned i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	t1 = now_s();
	(void)t0; (void)t1;
	gp_teardown(&g);
	if (atomic_load(&g.bad))
		return 2;
	/*
	 * Per thread, over the CPU time each thread used: on a shared machine
	 * with fewer cores than threads, wall time measures the scheduler.
	 * Contention (cache lines bouncing, lock waits) still shows, as CPU.
	 */
	double sum = 0;
	for (unsigned i = 0; i < threads; i++)
		sum += g.cpu[i];
	*value = (double)ops * threads / sum / 1e6;
	return 0;
}

/* ---- the pipeline ---------------------------------------------------------- */

struct mq {			/* the baseline: a mutex + condition ring */
	pthread_mutex_t m;
	pthread_cond_t not_empty, not_full;
	size_t head, tail;
	void *slot[QCAP];
};

static void mq_push(struct mq *q, void *v)
{
	pthread_mutex_lock(&q->m);
	while (q->tail - q->head == QCAP)
		pthread_cond_wait(&q->not_full, &q->m);
	q->slot[q->tail++ % QCAP] = v;
	pthread_cond_signal(&q->not_empty);
	pthread_mutex_unlock(&q->m);
}

static void *mq_pop(struct mq *q)
{
	void *v;

	pthread_mutex_lock(&q->m);
	while (q->tail == q->head)
		pthread_cond_wait(&q->not_empty, &q->m);
	v = q->slot[q->head++ % QCAP];
	pthread_cond_signal(&q->not_full);
	pthread_mutex_unlock(&q->m);
	return v;
}

struct pipe_pair {
	struct pipe *p;
	jp_spsc_t *jq;
	struct mq mq;
	uint64_t sum;
};

struct pipe {
	int jp;
	jp_pool_t *pool;
	uint64_t items;
	pthread_barrier_t start;
	_Atomic int bad;
};

static void *pipe_producer(void *arg)
{
	struct pipe_pair *pp = arg;
	struct pipe *p = pp->p;

	pthread_barrier_wait(&p->start);
	for (uint64_t i = 1; i <= p->items; i++) {
		uint64_t *o;

		if (p->jp) {
			while ((o = jp_pool_get(p->pool)) == NULL)
				sched_yield();
		} else {
			o = malloc(OBJ);
		}
		o[0] = i;
		o[1] = ~i;
		if (p->jp)
			jp_spsc_push(pp->jq, &o, NULL);
		else
			mq_push(&pp->mq, o);
	}
	return NULL;
}

static void *pipe_consumer(void *arg)
{
	struct pipe_pair *pp = arg;
	struct pipe *p = pp->p;
	uint64_t sum = 0;

	pthread_barrier_wait(&p->start);
	for (uint64_t i = 1; i <= p->items; i++) {
		uint64_t *o;

		if (p->jp)
			jp_spsc_pop(pp->jq, &o, NULL);
		else
			o = mq_pop(&pp->mq);
		if (o[1] != ~o[0])
			atomic_store(&p->bad, 1);
		sum += o[0];
		if (p->jp)
			jp_pool_put(p->pool, o);
		else
			free(o);
	}
	pp->sum = sum;
	return NULL;
}

static int pipeline(const char *impl, unsigned pairs, uint64_t items, double *value)
{
	struct pipe p;
	struct pipe_pair pp[32];
	pthread_t t[64];
	double t0, t1;

	if (pairs == 0 || pairs > 32)
		return 1;
	memset(&p, 0, sizeof p);
	memset(pp, 0, sizeof pp);
	p.items = items;
	if (!strcmp(impl, "jpsync")) {
		p.jp = 1;
		p.pool = jp_pool_create(OBJ, 2 * QCAP * pairs + 1024, JP_POOL_THREAD_CACHE);
		if (p.pool == NULL)
			return 1;
	} else if (strcmp(impl, "glibc_mutex") != 0) {
		return 1;
	}
	pthread_barrier_init(&p.start, NULL, 2 * pairs + 1);
	for (unsigned i = 0; i < pairs; i++) {
		pp[i].p = &p;
		if (p.jp) {
			pp[i].jq = jp_spsc_create(QCAP, sizeof(void *));
		} else {
			pthread_mutex_init(&pp[i].mq.m, NULL);
			pthread_cond_init(&pp[i].mq.not_empty, NULL);
			pthread_cond_init(&pp[i].mq.not_full, NULL);
		}
		pthread_create(&t[2 * i], NULL, pipe_producer, &pp[i]);
		pthread_create(&t[2 * i + 1], NULL, pipe_consumer, &pp[i]);
	}
	pthread_barrier_wait(&p.start);
	t0 = now_s();
	for (unsigned i = 0; i < 2 * pairs; i++)
		pthread_join(t[i], NULL);
	t1 = now_s();
	for (unsigned i = 0; i < pairs; i++) {
		if (pp[i].sum != items * (items + 1) / 2)
			atomic_store(&p.bad, 1);
		if (p.jp)
			jp_spsc_destroy(pp[i].jq);
	}
	if (p.pool != NULL)
		jp_pool_destroy(p.pool);
	if (atomic_load(&p.bad))
		return 2;
	*value = (double)pairs * items / (t1 - t0) / 1e6;
	return 0;
}

int main(int argc, char **argv)
{
	double value = 0;
	struct rusage ru;
	int r;

	if (argc == 4 && !strcmp(argv[1], "pairs"))
		return pairs(argv[2], strtoull(argv[3], NULL, 10));
	if (argc != 5) {
		fprintf(stderr, "usage: %s getput jp_pool|jp_pool_tc|jp_pool_local|jpsync|glibc|mutex_list THREADS OPS\n"
			"       %s pipeline jpsync|glibc_mutex PAIRS ITEMS\n"
			"       %s pairs IMPL N\n", argv[0], argv[0], argv[0]);
		return 1;
	}
	if (!strcmp(argv[1], "getput"))
		r = getput(argv[2], (unsigned)atoi(argv[3]), strtoull(argv[4], NULL, 10), &value);
	else if (!strcmp(argv[1], "pipeline"))
		r = pipeline(argv[2], (unsigned)atoi(argv[3]), strtoull(argv[4], NULL, 10), &value);
	else
		r = 1;
	if (r != 0) {
		if (r == 2)
			fprintf(stderr, "pool-bench: %s %s: check failed\n", argv[1], argv[2]);
		return r;
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("%.3f %ld\n", value, ru.ru_maxrss);
	return 0;
}
