/*
 * alloc-bench.c - allocator throughput and peak RSS, one workload per run.
 *
 * The program calls plain malloc/free/realloc; the allocator under test is
 * chosen by whoever runs it (LD_PRELOAD of jpsync's preload module or of a
 * peer, nothing for glibc).  tests/bench/alloc-bench.sh runs it for every
 * implementation, interleaved, and collects the result lines.
 *
 *   alloc-bench -w WORKLOAD [-t THREADS] [-n OPS] [-s SCALE]
 *
 * Workloads (an "op" is one allocation call: malloc or realloc):
 *   balanced     the reference benchmark of the design (003): 80, 48, 256
 *                and 128-byte objects filled with memset, kept in a slot
 *                array and replaced at random, plus a 1-32 KiB block churn
 *                (one page-touching large allocation per 8 small ones)
 *   alloc-heavy  rounds of 4096 80-byte blocks allocated and memset, then
 *                all freed at once (stresses the refill and flush paths)
 *   small        tight malloc/free pairs of 16-256 bytes
 *   xthread      producers allocate batches of 16-512-byte blocks, hand
 *                them through a mutex/condvar queue to consumers, which
 *                free them (every free is a remote free)
 *   larson       each thread replaces random slots (16-512 bytes) of the
 *                array it holds and every 1024 ops swaps that array with a
 *                random one of a shared pool, so it frees blocks that other
 *                threads allocated
 *   realloc      chains of realloc growth from 16 bytes to 256 KiB, four
 *                chains interleaved per thread, new bytes filled each step
 *
 * The shapes of mimalloc-bench where jpsync trailed in 1.1, each written
 * after the program it stands for:
 *   sized        larson-sized: random slots of 1024 (16-512 bytes)
 *                replaced, allocated with C++ operator new and freed with
 *                sized operator delete(p, n), resolved at run time
 *   unsized      the same with plain operator delete(p): sized against
 *                unsized free in one allocator
 *   xsizes       xmalloc-test -s -1: half the threads produce batches of
 *                1024 blocks of 19 sizes from 8 bytes to 4 KiB (each size
 *                equally often, so most blocks are small), the first 128
 *                bytes written; one shared queue hands them to the other
 *                half, which free them
 *   falseshare   cache-scratch: the main thread allocates one 8-byte block
 *                per thread, side by side; each thread frees the one it is
 *                given, then allocates 8-byte blocks, writes (and reads
 *                back) each one 64 times over and frees it.  An allocator that hands a
 *                thread the block it freed puts the threads' blocks on one
 *                cache line (passive false sharing)
 *   shortmixed   cfrac, espresso: a window of 64 live blocks of 16 bytes to
 *                1 KiB (log-uniform: as many 16-31 as 512-1023), filled,
 *                a random one replaced per op
 *
 * Work is fixed in total (OPS, default per workload, times SCALE) and split
 * evenly between the threads, so a run takes about as long at 300 threads
 * as at 1 and shows how throughput scales on the machine's cores.  All
 * threads start together behind a barrier and wait for each other at the end
 * (so every thread's cache is alive at once when peak RSS is taken); the
 * time is measured between the two barriers.
 *
 * Every block is filled with a pattern when allocated and checked before it
 * is freed; a mismatch (two live blocks overlapping, a block handed out
 * twice, contents lost by realloc) or a NULL from malloc prints
 * "alloc-bench: CHECK FAILED: ..." and exits 1.
 *
 * Output, one line on stdout:
 *   alloc-bench: workload=W threads=T ops=N seconds=S ops_per_sec=R
 *     peak_rss_kb=K [delete=LIBRARY] malloc=LIBRARY
 * where LIBRARY is the object that defines the malloc this process uses
 * (and for sized and unsized the operator delete it calls), so the driver
 * can tell that an LD_PRELOAD took effect.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* Keep the compiler from pairing a malloc with its free and deleting both
 * (GCC removes unused malloc/free pairs): the pointer escapes to "memory". */
#define ESCAPE(p) __asm__ volatile("" : : "r"(p) : "memory")

struct bench;
typedef void (*work_fn)(struct bench *b, unsigned id);

struct workload {
	const char *name;
	uint64_t default_ops;	/* total, for about 0.2-1 s on glibc, 1 thread */
	work_fn run;
	work_fn prepare;	/* before the start barrier, not timed; may be NULL */
};

struct queue;

struct bench {
	const struct workload *w;
	unsigned threads;
	uint64_t ops;		/* total */
	pthread_barrier_t ready, start, end;

	/* xthread, xsizes */
	unsigned nqueues;
	struct queue *queues;
	unsigned producers;
	unsigned batch;		/* blocks per batch */

	/* larson */
	size_t lslots;
	void ***pool;		/* threads arrays of lslots blocks */
	void ***held;		/* per thread: the array it holds */
	pthread_mutex_t pool_lock;

	/* falseshare: the block main allocated for each thread */
	void **given;

	/* sized, unsized: C++ operator new and delete, as the process binds
	 * them (the preloaded allocator's, or libstdc++'s over malloc) */
	void *(*op_new)(size_t);
	void (*op_delete)(void *);
	void (*op_delete_sized)(void *, size_t);
	const char *delete_provider;
};

/* ---------------------------------------------------------------- helpers */

static void fail(const char *what, const void *p, size_t n)
{
	fprintf(stderr, "alloc-bench: CHECK FAILED: %s (block %p, %zu bytes)\n",
		what, p, n);
	fflush(stderr);
	_exit(1);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);

	if (p == NULL)
		fail("malloc returned NULL", NULL, n);
	return p;
}

static uint64_t rnd(uint64_t *s)
{
	/* xorshift64*: cheap, and each thread has its own state. */
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static uint64_t seed_for(unsigned id)
{
	return 0x9E3779B97F4A7C15ULL * (id + 1) | 1;
}

/*
 * The pattern: the first 8 bytes hold the size and a check word that
 * encodes the tag byte; the rest is the tag byte (all of it for a "filled"
 * block; for a "touched" large block only the byte after the header, one
 * byte per page and the last byte, which is what makes its pages resident).
 * check() reads only the header, the byte after it and the last byte, so a
 * consumer that knows nothing about the block can verify it.
 */
#define HDR 8

static uint32_t check_word(uint32_t n, unsigned tag)
{
	return (n * 2654435761u) ^ tag;
}

static void put_header(unsigned char *p, size_t n, unsigned tag)
{
	uint32_t h[2] = { (uint32_t)n, check_word((uint32_t)n, tag) };

	memcpy(p, h, sizeof h);
}

static void fill(void *p, size_t n, unsigned tag)
{
	memset(p, (int)tag, n);
	put_header(p, n, tag);
}

static void touch(void *p, size_t n, unsigned tag)
{
	unsigned char *c = p;

	for (size_t off = 4096; off < n; off += 4096)
		c[off] = (unsigned char)tag;
	c[HDR] = (unsigned char)tag;
	c[n - 1] = (unsigned char)tag;
	put_header(p, n, tag);
}

/* Verify the block and return its size (n is 0 when the caller does not
 * know it). */
static size_t check(const void *p, size_t n)
{
	const unsigned char *c = p;
	uint32_t h[2];
	unsigned tag;

	memcpy(h, c, sizeof h);
	if (n != 0 && h[0] != n)
		fail("size header overwritten", p, n);
	n = h[0];
	if (n < HDR || n > (64u << 20))
		fail("size header overwritten", p, n);
	tag = h[1] ^ (uint32_t)(n * 2654435761u);
	if (tag > 255)
		fail("pattern overwritten", p, n);
	if (n > HDR && (c[HDR] != tag || c[n - 1] != tag))
		fail("pattern overwritten", p, n);
	return n;
}

/* The header, the first 128 bytes and the last byte (xmalloc-test writes
 * the first 128): what check() reads, at a cost that does not grow with n. */
static void fill_head(void *p, size_t n, unsigned tag)
{
	memset(p, (int)tag, n < 128 ? n : 128);
	((unsigned char *)p)[n - 1] = (unsigned char)tag;
	put_header(p, n, tag);
}

/* Check and free what a slot holds, if anything. */
static void release(void **slot)
{
	if (*slot != NULL) {
		check(*slot, 0);
		free(*slot);
		*slot = NULL;
	}
}

static void release_all(void **slot, size_t count)
{
	for (size_t k = 0; k < count; k++)
		release(&slot[k]);
}

static unsigned next_tag(unsigned *t)
{
	*t = (*t + 1) & 0xff;
	return *t;
}

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
static int cxx_operators(struct bench *b)
{
	void *h = RTLD_DEFAULT, *nw, *del, *dels;
	Dl_info info;

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

/* ------------------------------------------------------------------ main */

static const struct workload workloads[] = {
	{ "balanced", 8000000, run_balanced, NULL },
	{ "alloc-heavy", 8000000, run_alloc_heavy, NULL },
	{ "small", 20000000, run_small, NULL },
	{ "xthread", 4000000, run_xthread, NULL },
	{ "larson", 4000000, run_larson, prepare_larson },
	{ "realloc", 100000, run_realloc, NULL },
	{ "sized", 6000000, run_sized, NULL },
	{ "unsized", 6000000, run_unsized, NULL },
	{ "xsizes", 2000000, run_xsizes, NULL },
	{ "falseshare", 1000000, run_falseshare, NULL },
	{ "shortmixed", 8000000, run_shortmixed, NULL },
};

struct worker {
	struct bench *b;
	unsigned id;
	pthread_t tid;
};

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct bench *b = wk->b;

	if (b->w->prepare != NULL)
		b->w->prepare(b, wk->id);
	pthread_barrier_wait(&b->ready);
	pthread_barrier_wait(&b->start);
	b->w->run(b, wk->id);
	pthread_barrier_wait(&b->end);
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: alloc-bench -w WORKLOAD [-t THREADS] [-n OPS] [-s SCALE]\n"
		"workloads:");
	for (size_t i = 0; i < sizeof workloads / sizeof workloads[0]; i++)
		fprintf(f, " %s", workloads[i].name);
	fprintf(f, "\nOPS is the total number of allocations (default per workload),\n"
		"scaled by SCALE (default 1); it is split between the THREADS.\n");
}

static const char *malloc_provider(void)
{
	Dl_info info;
	void *sym = dlsym(RTLD_DEFAULT, "malloc");

	if (sym != NULL && dladdr(sym, &info) != 0 && info.dli_fname != NULL &&
	    info.dli_fname[0] != '\0')
		return info.dli_fname;
	return "unknown";
}

int main(int argc, char **argv)
{
	struct bench b;
	const char *wname = NULL;
	unsigned long threads = 1;
	double scale = 1.0;
	uint64_t ops = 0;
	struct worker *wk;
	pthread_attr_t attr;
	struct rusage ru;
	double t0, t1;
	int c;

	memset(&b, 0, sizeof b);
	while ((c = getopt(argc, argv, "w:t:n:s:h")) != -1) {
		char *end;

		switch (c) {
		case 'w':
			wname = optarg;
			break;
		case 't':
			errno = 0;
			threads = strtoul(optarg, &end, 10);
			if (errno || *end || threads < 1 || threads > 4096) {
				fprintf(stderr, "alloc-bench: bad thread count '%s'\n", optarg);
				return 2;
			}
			break;
		case 'n':
			errno = 0;
			ops = strtoull(optarg, &end, 10);
			if (errno || *end || ops < 1) {
				fprintf(stderr, "alloc-bench: bad op count '%s'\n", optarg);
				return 2;
			}
			break;
		case 's':
			scale = strtod(optarg, &end);
			if (*end || !(scale > 0) || scale > 1e6) {
				fprintf(stderr, "alloc-bench: bad scale '%s'\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (wname == NULL || optind != argc) {
		usage(stderr);
		return 2;
	}
	for (size_t i = 0; i < sizeof workloads / sizeof workloads[0]; i++)
		if (strcmp(workloads[i].name, wname) == 0)
			b.w = &workloads[i];
	if (b.w == NULL) {
		fprintf(stderr, "alloc-bench: unknown workload '%s'\n", wname);
		usage(stderr);
		return 2;
	}

	b.threads = (unsigned)threads;
	if (b.w->run == run_xthread || b.w->run == run_xsizes) {
		/* At least one producer and one consumer: 1 thread means a pair. */
		b.producers = b.threads >= 2 ? b.threads / 2 : 1;
		b.threads = b.threads >= 2 ? b.threads : 2;
		b.nqueues = b.w->run == run_xthread ? b.producers : 1;
		b.batch = b.w->run == run_xthread ? XT_BATCH : XS_BATCH;
		b.queues = xmalloc(b.nqueues * sizeof *b.queues);
		for (unsigned q = 0; q < b.nqueues; q++) {
			memset(&b.queues[q], 0, sizeof b.queues[q]);
			pthread_mutex_init(&b.queues[q].lock, NULL);
			pthread_cond_init(&b.queues[q].nonempty, NULL);
			pthread_cond_init(&b.queues[q].nonfull, NULL);
		}
		for (unsigned p = 0; p < b.producers; p++)
			b.queues[p % b.nqueues].producers_left++;
	}
	if (b.w->run == run_larson) {
		b.lslots = LARSON_LIVE / (2 * b.threads);
		if (b.lslots < 16)
			b.lslots = 16;
		b.pool = xmalloc(b.threads * sizeof *b.pool);
		b.held = xmalloc(b.threads * sizeof *b.held);
		pthread_mutex_init(&b.pool_lock, NULL);
	}
	if (b.w->run == run_falseshare) {
		/* Side by side, from this thread, as cache-scratch's main does. */
		b.given = xmalloc(b.threads * sizeof *b.given);
		for (unsigned i = 0; i < b.threads; i++) {
			b.given[i] = xmalloc(FS_SIZE);
			fill(b.given[i], FS_SIZE, i & 0xff);
		}
	}
	if ((b.w->run == run_sized || b.w->run == run_unsized) &&
	    cxx_operators(&b) != 0)
		return 1;

	b.ops = ops != 0 ? ops : (uint64_t)(b.w->default_ops * scale);
	if (b.ops < b.threads)
		b.ops = b.threads;
	if (b.w->run == run_alloc_heavy && b.ops < (uint64_t)HEAVY_N * b.threads)
		b.ops = (uint64_t)HEAVY_N * b.threads;	/* one round each */
	else if (b.w->run == run_alloc_heavy)
		b.ops -= b.ops % ((uint64_t)HEAVY_N * b.threads);
	else if (b.w->run == run_xthread || b.w->run == run_xsizes)
		b.ops -= b.ops % b.producers;	/* what the threads really do */
	else
		b.ops -= b.ops % b.threads;

	pthread_barrier_init(&b.ready, NULL, b.threads + 1);
	pthread_barrier_init(&b.start, NULL, b.threads + 1);
	pthread_barrier_init(&b.end, NULL, b.threads + 1);
	wk = xmalloc(b.threads * sizeof *wk);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 512 * 1024);
	for (unsigned i = 0; i < b.threads; i++) {
		int e;

		wk[i].b = &b;
		wk[i].id = i;
		e = pthread_create(&wk[i].tid, &attr, worker_main, &wk[i]);
		if (e != 0) {
			fprintf(stderr, "alloc-bench: pthread_create: %s\n", strerror(e));
			return 1;
		}
	}
	pthread_attr_destroy(&attr);
	pthread_barrier_wait(&b.ready);
	t0 = now();
	pthread_barrier_wait(&b.start);
	pthread_barrier_wait(&b.end);
	t1 = now();
	for (unsigned i = 0; i < b.threads; i++)
		pthread_join(wk[i].tid, NULL);

	if (b.w->run == run_larson) {
		for (unsigned i = 0; i < b.threads; i++) {
			for (size_t k = 0; k < b.lslots; k++) {
				check(b.pool[i][k], 0);
				free(b.pool[i][k]);
			}
			free(b.pool[i]);
		}
		free(b.pool);
		free(b.held);
	}
	free(b.queues);
	free(b.given);
	free(wk);

	getrusage(RUSAGE_SELF, &ru);
	printf("alloc-bench: workload=%s threads=%lu ops=%" PRIu64
	       " seconds=%.6f ops_per_sec=%.0f peak_rss_kb=%ld%s%s malloc=%s\n",
	       b.w->name, threads, b.ops, t1 - t0,
	       t1 > t0 ? (double)b.ops / (t1 - t0) : 0.0, ru.ru_maxrss,
	       b.delete_provider != NULL ? " delete=" : "",
	       b.delete_provider != NULL ? b.delete_provider : "",
	       malloc_provider());
	return 0;
}
