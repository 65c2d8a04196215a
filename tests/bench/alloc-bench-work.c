/*
 * alloc-bench-work.c - alloc-bench's workloads, one section each, and the
 * table the driver picks them from.  alloc-bench.c's opening comment says
 * what each workload does and what it stands for.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "alloc-bench.h"

#include <dlfcn.h>

/* --------------------------------------------------------------- balanced */

#define BAL_SLOTS 512
#define BAL_LARGE_SLOTS 4
#define BAL_LARGE_EVERY 8

static void run_balanced(struct bench *b, unsigned id)
{
	static const size_t sizes[4] = { 80, 48, 256, 128 };
	void *slot[BAL_SLOTS] = { 0 };
	void *large[BAL_LARGE_SLOTS] = { 0 };
	uint64_t s = seed_for(id), ops = b->ops / b->threads;
	unsigned tag = id;

	for (uint64_t i = 0; i < ops; i++) {
		if (i % BAL_LARGE_EVERY == BAL_LARGE_EVERY - 1) {
			uint64_t r = rnd(&s);
			unsigned k = (unsigned)(r % BAL_LARGE_SLOTS);
			size_t n = 1024 + (size_t)((r >> 16) % (31 * 1024 + 1));

			release(&large[k]);
			large[k] = xmalloc(n);
			touch(large[k], n, next_tag(&tag));
		} else {
			unsigned k = (unsigned)(rnd(&s) % BAL_SLOTS);
			size_t n = sizes[i & 3];

			release(&slot[k]);
			slot[k] = xmalloc(n);
			fill(slot[k], n, next_tag(&tag));
		}
	}
	release_all(slot, BAL_SLOTS);
	release_all(large, BAL_LARGE_SLOTS);
}

/* ------------------------------------------------------------ alloc-heavy */

#define HEAVY_N 4096
#define HEAVY_SIZE 80

static void run_alloc_heavy(struct bench *b, unsigned id)
{
	void **blk = xmalloc(HEAVY_N * sizeof *blk);
	uint64_t rounds = b->ops / b->threads / HEAVY_N;
	unsigned tag = id;

	if (rounds == 0)
		rounds = 1;
	for (uint64_t r = 0; r < rounds; r++) {
		for (unsigned i = 0; i < HEAVY_N; i++) {
			blk[i] = xmalloc(HEAVY_SIZE);
			fill(blk[i], HEAVY_SIZE, next_tag(&tag));
		}
		for (unsigned i = 0; i < HEAVY_N; i++) {
			check(blk[i], HEAVY_SIZE);
			free(blk[i]);
		}
	}
	free(blk);
}

/* Whole rounds: one at least per thread. */
static int setup_alloc_heavy(struct bench *b)
{
	b->ops_unit = (uint64_t)HEAVY_N * b->threads;
	return 0;
}

/* ------------------------------------------------------------------ small */

static void run_small(struct bench *b, unsigned id)
{
	static const size_t sizes[8] = { 16, 24, 32, 48, 64, 96, 128, 256 };
	uint64_t ops = b->ops / b->threads;

	for (uint64_t i = 0; i < ops; i++) {
		uint64_t *p = xmalloc(sizes[i & 7]);

		p[0] = i ^ id;
		ESCAPE(p);
		if (p[0] != (i ^ id))
			fail("word overwritten", p, sizes[i & 7]);
		free(p);
	}
}

/* ---------------------------------------------------------------- xthread */

#define XT_BATCH 64
#define XT_QCAP 16

struct batch {
	unsigned n;
	void *blk[];		/* b->batch of them */
};

/* A bounded FIFO of batches under one mutex: the lock is taken once per
 * batch (64 or 1024 blocks), so the benchmark measures the allocator, not
 * the queue. */
struct queue {
	pthread_mutex_t lock;
	pthread_cond_t nonempty, nonfull;
	struct batch *ring[XT_QCAP];
	unsigned head, count, producers_left;
	char pad[64];
};

static void q_push(struct queue *q, struct batch *bt)
{
	pthread_mutex_lock(&q->lock);
	while (q->count == XT_QCAP)
		pthread_cond_wait(&q->nonfull, &q->lock);
	q->ring[(q->head + q->count) % XT_QCAP] = bt;
	q->count++;
	pthread_cond_signal(&q->nonempty);
	pthread_mutex_unlock(&q->lock);
}

/* NULL once every producer of the queue is done and it is empty. */
static struct batch *q_pop(struct queue *q)
{
	struct batch *bt = NULL;

	pthread_mutex_lock(&q->lock);
	while (q->count == 0 && q->producers_left > 0)
		pthread_cond_wait(&q->nonempty, &q->lock);
	if (q->count > 0) {
		bt = q->ring[q->head];
		q->head = (q->head + 1) % XT_QCAP;
		q->count--;
		pthread_cond_signal(&q->nonfull);
	}
	pthread_mutex_unlock(&q->lock);
	return bt;
}

static void q_producer_done(struct queue *q)
{
	pthread_mutex_lock(&q->lock);
	q->producers_left--;
	pthread_cond_broadcast(&q->nonempty);
	pthread_mutex_unlock(&q->lock);
}

/* xmalloc-test's sizes, with 3072 and 4096 added: each equally likely. */
static const size_t xs_sizes[] = {
	8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024,
	1536, 2048, 3072, 4096
};
#define XS_NSIZES (sizeof xs_sizes / sizeof xs_sizes[0])
#define XS_BATCH 1024

/* Threads 0..producers-1 produce into queue id % nqueues; the others
 * consume from queue (id - producers) % nqueues.  xthread: 16-512 bytes,
 * all filled, 64 to a batch, a queue per producer; xsizes: xs_sizes, the
 * head filled, 1024 to a batch, one queue (main sets batch and nqueues). */
static void transfer(struct bench *b, unsigned id, int many)
{
	if (id < b->producers) {
		struct queue *q = &b->queues[id % b->nqueues];
		uint64_t s = seed_for(id), left = b->ops / b->producers;
		unsigned tag = id;

		while (left > 0) {
			struct batch *bt = xmalloc(offsetof(struct batch, blk) +
						   b->batch * sizeof bt->blk[0]);

			bt->n = left < b->batch ? (unsigned)left : b->batch;
			for (unsigned i = 0; i < bt->n; i++) {
				size_t n;

				if (many) {
					n = xs_sizes[rnd(&s) % XS_NSIZES];
					bt->blk[i] = xmalloc(n);
					fill_head(bt->blk[i], n, next_tag(&tag));
				} else {
					n = 16 + (size_t)(rnd(&s) % 497);
					bt->blk[i] = xmalloc(n);
					fill(bt->blk[i], n, next_tag(&tag));
				}
			}
			left -= bt->n;
			q_push(q, bt);
		}
		q_producer_done(q);
	} else {
		struct queue *q = &b->queues[(id - b->producers) % b->nqueues];
		struct batch *bt;

		while ((bt = q_pop(q)) != NULL) {
			for (unsigned i = 0; i < bt->n; i++) {
				check(bt->blk[i], 0);
				free(bt->blk[i]);
			}
			free(bt);
		}
	}
}

static void run_xthread(struct bench *b, unsigned id)
{
	transfer(b, id, 0);
}

static void run_xsizes(struct bench *b, unsigned id)
{
	transfer(b, id, 1);
}

/* At least one producer and one consumer: 1 thread means a pair. */
static int setup_transfer(struct bench *b)
{
	b->producers = b->threads >= 2 ? b->threads / 2 : 1;
	b->threads = b->threads >= 2 ? b->threads : 2;
	b->nqueues = b->w->run == run_xthread ? b->producers : 1;
	b->batch = b->w->run == run_xthread ? XT_BATCH : XS_BATCH;
	b->queues = xmalloc(b->nqueues * sizeof *b->queues);
	for (unsigned q = 0; q < b->nqueues; q++) {
		memset(&b->queues[q], 0, sizeof b->queues[q]);
		pthread_mutex_init(&b->queues[q].lock, NULL);
		pthread_cond_init(&b->queues[q].nonempty, NULL);
		pthread_cond_init(&b->queues[q].nonfull, NULL);
	}
	for (unsigned p = 0; p < b->producers; p++)
		b->queues[p % b->nqueues].producers_left++;
	b->ops_unit = b->producers;	/* what the threads really do */
	return 0;
}

static void teardown_transfer(struct bench *b)
{
	free(b->queues);
}

/* ----------------------------------------------------------------- larson */

#define LARSON_LIVE 32768	/* blocks alive in all arrays together */
#define LARSON_HANDOFF 1024

static void **larson_array(struct bench *b, unsigned id)
{
	void **a = xmalloc(b->lslots * sizeof *a);
	uint64_t s = seed_for(id + 7777);
	unsigned tag = id;

	for (size_t k = 0; k < b->lslots; k++) {
		size_t n = 16 + (size_t)(rnd(&s) % 497);

		a[k] = xmalloc(n);
		fill(a[k], n, next_tag(&tag));
	}
	return a;
}

static void prepare_larson(struct bench *b, unsigned id)
{
	b->held[id] = larson_array(b, id);
	b->pool[id] = larson_array(b, id + b->threads);
}

static void run_larson(struct bench *b, unsigned id)
{
	uint64_t s = seed_for(id), ops = b->ops / b->threads;
	void **a = b->held[id];
	unsigned tag = id;

	for (uint64_t i = 0; i < ops; i++) {
		uint64_t r = rnd(&s);
		size_t k = (size_t)(r % b->lslots);
		size_t n = 16 + (size_t)((r >> 20) % 497);

		check(a[k], 0);
		free(a[k]);
		a[k] = xmalloc(n);
		fill(a[k], n, next_tag(&tag));
		if (i % LARSON_HANDOFF == LARSON_HANDOFF - 1) {
			unsigned j = (unsigned)((r >> 40) % b->threads);
			void **mine = a;

			pthread_mutex_lock(&b->pool_lock);
			a = b->pool[j];
			b->pool[j] = mine;
			pthread_mutex_unlock(&b->pool_lock);
		}
	}
	/* Free the array it ends with; the pool is freed by main, untimed. */
	for (size_t k = 0; k < b->lslots; k++) {
		check(a[k], 0);
		free(a[k]);
	}
	free(a);
	b->held[id] = NULL;
}

static int setup_larson(struct bench *b)
{
	b->lslots = LARSON_LIVE / (2 * b->threads);
	if (b->lslots < 16)
		b->lslots = 16;
	b->pool = xmalloc(b->threads * sizeof *b->pool);
	b->held = xmalloc(b->threads * sizeof *b->held);
	pthread_mutex_init(&b->pool_lock, NULL);
	return 0;
}

static void teardown_larson(struct bench *b)
{
	for (unsigned i = 0; i < b->threads; i++) {
		for (size_t k = 0; k < b->lslots; k++) {
			check(b->pool[i][k], 0);
			free(b->pool[i][k]);
		}
		free(b->pool[i]);
	}
	free(b->pool);
	free(b->held);
}

/* ---------------------------------------------------------------- realloc */

#define RE_CHAINS 4
#define RE_MAX (256u * 1024)

static void run_realloc(struct bench *b, unsigned id)
{
	struct {
		unsigned char *p;
		size_t n;
		unsigned tag;
	} c[RE_CHAINS];
	uint64_t ops = b->ops / b->threads;
	unsigned tag = id;

	memset(c, 0, sizeof c);
	for (uint64_t i = 0; i < ops; i++) {
		unsigned k = (unsigned)(i % RE_CHAINS);

		if (c[k].p == NULL) {
			c[k].n = 16;
			c[k].tag = next_tag(&tag);
			c[k].p = xmalloc(c[k].n);
			memset(c[k].p, (int)c[k].tag, c[k].n);
		} else if (c[k].n >= RE_MAX) {
			if (c[k].p[0] != c[k].tag || c[k].p[c[k].n - 1] != c[k].tag)
				fail("realloc lost contents", c[k].p, c[k].n);
			free(c[k].p);
			c[k].p = NULL;
			i--;	/* the free is not an op; allocate again */
		} else {
			size_t old = c[k].n, n = old + old / 2 + 16;
			unsigned char *p = realloc(c[k].p, n);

			if (p == NULL)
				fail("realloc returned NULL", c[k].p, n);
			/* The old bytes must have moved with the block. */
			if (p[0] != c[k].tag || p[old / 2] != c[k].tag ||
			    p[old - 1] != c[k].tag)
				fail("realloc lost contents", p, old);
			memset(p + old, (int)c[k].tag, n - old);
			c[k].p = p;
			c[k].n = n;
		}
	}
	for (unsigned k = 0; k < RE_CHAINS; k++)
		free(c[k].p);
}

/* ------------------------------------------------------- sized, unsized */

#define SZ_SLOTS 1024

static void cxx_delete(struct bench *b, void *p, int sized)
{
	size_t n = check(p, 0);	/* the size the caller knows, as in C++ */

	if (sized)
		b->op_delete_sized(p, n);
	else
		b->op_delete(p);
}

static void sized_or_not(struct bench *b, unsigned id, int sized)
{
	void *slot[SZ_SLOTS] = { 0 };
	uint64_t s = seed_for(id), ops = b->ops / b->threads;
	unsigned tag = id;

	for (uint64_t i = 0; i < ops; i++) {
		uint64_t r = rnd(&s);
		unsigned k = (unsigned)(r % SZ_SLOTS);
		size_t n = 16 + (size_t)((r >> 20) % 497);

		if (slot[k] != NULL)
			cxx_delete(b, slot[k], sized);
		slot[k] = b->op_new(n);	/* throws rather than return NULL */
		fill(slot[k], n, next_tag(&tag));
	}
	for (unsigned k = 0; k < SZ_SLOTS; k++)
		if (slot[k] != NULL)
			cxx_delete(b, slot[k], sized);
}

static void run_sized(struct bench *b, unsigned id)
{
	sized_or_not(b, id, 1);
}

static void run_unsized(struct bench *b, unsigned id)
{
	sized_or_not(b, id, 0);
}

/* The mangled name of operator BASE (new: "_Znw", delete: "_ZdlPv") with
 * size_t arguments ARGS of them. */
static void *cxx_sym(void *h, const char *base, int args)
{
	const char *z = _Generic((size_t)0, unsigned int: "j",
				 unsigned long: "m", default: "y");
	char name[32];

	snprintf(name, sizeof name, "%s%s", base, args ? z : "");
	return dlsym(h, name);
}

/* C++ operator new and delete as a C++ program gets them: the preloaded
 * allocator's where it defines them, else libstdc++'s, over malloc and
 * free (loaded here: this C program is not linked with it). */
static int setup_cxx(struct bench *b)
{
	void *h = RTLD_DEFAULT, *nw, *del, *dels;
	Dl_info info;

#ifdef ALLOC_BENCH_GUARD
	fprintf(stderr, "alloc-bench-guard: %s calls C++ operator new, which "
		"the guard does not wrap\n", b->w->name);
	return -1;
#endif
	if (cxx_sym(h, "_Znw", 1) == NULL) {
		h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL);
		if (h == NULL) {
			fprintf(stderr, "alloc-bench: %s needs C++ operator new: "
				"none defined and %s\n", b->w->name, dlerror());
			return -1;
		}
	}
	nw = cxx_sym(h, "_Znw", 1);
	del = cxx_sym(h, "_ZdlPv", 0);
	dels = cxx_sym(h, "_ZdlPv", 1);
	if (nw == NULL || del == NULL || dels == NULL) {
		fprintf(stderr, "alloc-bench: %s: C++ operator new, delete or "
			"sized delete not found\n", b->w->name);
		return -1;
	}
	memcpy(&b->op_new, &nw, sizeof nw);
	memcpy(&b->op_delete, &del, sizeof del);
	memcpy(&b->op_delete_sized, &dels, sizeof dels);
	b->delete_provider = "unknown";
	if (dladdr(b->w->run == run_sized ? dels : del, &info) != 0 &&
	    info.dli_fname != NULL && info.dli_fname[0] != '\0')
		b->delete_provider = info.dli_fname;
	return 0;
}

/* ------------------------------------------------------------- falseshare */

#define FS_SIZE 8
#define FS_PASSES 64

/* main allocated b->given[] before the threads started. */
static void run_falseshare(struct bench *b, unsigned id)
{
	uint64_t ops = b->ops / b->threads;

	check(b->given[id], FS_SIZE);
	free(b->given[id]);
	for (uint64_t i = 0; i < ops; i++) {
		volatile unsigned char *p = xmalloc(FS_SIZE);

		/* Each byte written and read back, as cache-scratch does: on a
		 * line another core writes, the loads stall as well. */
		for (unsigned j = 0; j < FS_PASSES; j++)
			for (unsigned k = 0; k < FS_SIZE; k++) {
				unsigned char v = (unsigned char)(j + k + id);

				p[k] = v;
				if (p[k] != v)
					fail("pattern overwritten", (void *)p, FS_SIZE);
			}
		free((void *)p);
	}
}

/* Side by side, from the main thread, as cache-scratch's main does. */
static int setup_falseshare(struct bench *b)
{
	b->given = xmalloc(b->threads * sizeof *b->given);
	for (unsigned i = 0; i < b->threads; i++) {
		b->given[i] = xmalloc(FS_SIZE);
		fill(b->given[i], FS_SIZE, i & 0xff);
	}
	return 0;
}

static void teardown_falseshare(struct bench *b)
{
	free(b->given);		/* the blocks: each thread freed its own */
}

/* ------------------------------------------------------------- shortmixed */

#define SM_WINDOW 64

static void run_shortmixed(struct bench *b, unsigned id)
{
	void *slot[SM_WINDOW] = { 0 };
	uint64_t s = seed_for(id), ops = b->ops / b->threads;
	unsigned tag = id;

	for (uint64_t i = 0; i < ops; i++) {
		uint64_t r = rnd(&s);
		unsigned k = (unsigned)(r % SM_WINDOW);
		size_t e = (size_t)16 << ((r >> 8) % 6);	/* 16 .. 512 */
		size_t n = e + (size_t)((r >> 16) % e);		/* e .. 2e-1 */

		release(&slot[k]);
		slot[k] = xmalloc(n);
		fill(slot[k], n, next_tag(&tag));
	}
	release_all(slot, SM_WINDOW);
}

/* ------------------------------------------------------------------ table */

const struct workload alloc_bench_workloads[] = {
	{ "balanced", 8000000, run_balanced, NULL, NULL, NULL },
	{ "alloc-heavy", 8000000, run_alloc_heavy, NULL, setup_alloc_heavy, NULL },
	{ "small", 20000000, run_small, NULL, NULL, NULL },
	{ "xthread", 4000000, run_xthread, NULL, setup_transfer, teardown_transfer },
	{ "larson", 4000000, run_larson, prepare_larson, setup_larson, teardown_larson },
	{ "realloc", 100000, run_realloc, NULL, NULL, NULL },
	{ "sized", 6000000, run_sized, NULL, setup_cxx, NULL },
	{ "unsized", 6000000, run_unsized, NULL, setup_cxx, NULL },
	{ "xsizes", 2000000, run_xsizes, NULL, setup_transfer, teardown_transfer },
	{ "falseshare", 1000000, run_falseshare, NULL, setup_falseshare, teardown_falseshare },
	{ "shortmixed", 8000000, run_shortmixed, NULL, NULL, NULL },
};
const size_t alloc_bench_nworkloads = sizeof alloc_bench_workloads / sizeof alloc_bench_workloads[0];
