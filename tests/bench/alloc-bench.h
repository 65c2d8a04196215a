/*
 * alloc-bench.h - what alloc-bench's driver (alloc-bench.c: options,
 * threads, timing, the result line) and its workloads (alloc-bench-work.c)
 * share: a run's parameters and state (struct bench), a row of the
 * workload table (struct workload), and the helpers every workload
 * allocates, fills and checks its blocks with.  The helpers are static
 * inline so that a workload's loop inlines them, as it did when the
 * program was one file.
 */
#ifndef ALLOC_BENCH_H
#define ALLOC_BENCH_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	/* Before the threads start, not timed; may be NULL.  It may raise
	 * b->threads, set b->ops_unit and build what the threads share;
	 * non-zero when the workload cannot run (it said why on stderr). */
	int (*setup)(struct bench *b);
	void (*teardown)(struct bench *b);	/* after the threads; may be NULL */
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

	/* b->ops is rounded down to a multiple of this (setup may set it;
	 * 0 means b->threads), so that every thread does the same work */
	uint64_t ops_unit;
};

/* The workloads (alloc-bench-work.c), in the order usage() lists them. */
extern const struct workload alloc_bench_workloads[];
extern const size_t alloc_bench_nworkloads;

/* ---------------------------------------------------------------- helpers */

static inline void fail(const char *what, const void *p, size_t n)
{
	fprintf(stderr, "alloc-bench: CHECK FAILED: %s (block %p, %zu bytes)\n",
		what, p, n);
	fflush(stderr);
	_exit(1);
}

#ifdef ALLOC_BENCH_GUARD
/*
 * alloc-bench-guard: the same workloads with a model of what catching an
 * underflow or overflow of every block in the default mode would cost
 * (README, "What the checks catch"): each block gets a 16-byte header (its
 * size and a canary) and an 8-byte trailing canary, written at malloc and
 * realloc, checked at free and realloc.  So the allocator sees every
 * request 24 bytes larger, as it would if it kept the header itself.  The
 * C++ workloads (sized, unsized) are refused: their operator new is not
 * wrapped.  After every include: the macros rename the calls below them.
 */
#define GUARD_HEAD 16
#define GUARD_TAIL 8
#define GUARD_KEY 0x5bd1e9955bd1e995ULL

static inline uint64_t guard_word(const unsigned char *base, size_t n)
{
	return GUARD_KEY ^ (uint64_t)(uintptr_t)base ^ n;
}

static inline void *guard_put(unsigned char *base, size_t n)
{
	uint64_t h[2] = { n, guard_word(base, n) };

	memcpy(base, h, sizeof h);
	memcpy(base + GUARD_HEAD + n, &h[1], GUARD_TAIL);
	return base + GUARD_HEAD;
}

/* The block's base, after checking both canaries (dies naming which). */
static inline unsigned char *guard_check(void *p)
{
	unsigned char *base = (unsigned char *)p - GUARD_HEAD;
	uint64_t h[2], t;

	memcpy(h, base, sizeof h);
	if (h[1] != guard_word(base, (size_t)h[0]))
		fail("guard: underflow (header canary changed)", p, (size_t)h[0]);
	memcpy(&t, base + GUARD_HEAD + h[0], sizeof t);
	if (t != h[1])
		fail("guard: overflow (trailing canary changed)", p, (size_t)h[0]);
	return base;
}

static inline void *guard_malloc(size_t n)
{
	unsigned char *base;

	if (n > SIZE_MAX - GUARD_HEAD - GUARD_TAIL)
		return NULL;
	base = (malloc)(n + GUARD_HEAD + GUARD_TAIL);
	return base == NULL ? NULL : guard_put(base, n);
}

static inline void guard_free(void *p)
{
	if (p != NULL)
		(free)(guard_check(p));
}

static inline void *guard_realloc(void *p, size_t n)
{
	unsigned char *base;

	if (p == NULL)
		return guard_malloc(n);
	if (n > SIZE_MAX - GUARD_HEAD - GUARD_TAIL)
		return NULL;
	base = (realloc)(guard_check(p), n + GUARD_HEAD + GUARD_TAIL);
	return base == NULL ? NULL : guard_put(base, n);
}

#define malloc(n) guard_malloc(n)
#define free(p) guard_free(p)
#define realloc(p, n) guard_realloc(p, n)
#endif /* ALLOC_BENCH_GUARD */

static inline void *xmalloc(size_t n)
{
	void *p = malloc(n);

	if (p == NULL)
		fail("malloc returned NULL", NULL, n);
	return p;
}

static inline uint64_t rnd(uint64_t *s)
{
	/* xorshift64*: cheap, and each thread has its own state. */
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static inline uint64_t seed_for(unsigned id)
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

static inline uint32_t check_word(uint32_t n, unsigned tag)
{
	return (n * 2654435761u) ^ tag;
}

static inline void put_header(unsigned char *p, size_t n, unsigned tag)
{
	uint32_t h[2] = { (uint32_t)n, check_word((uint32_t)n, tag) };

	memcpy(p, h, sizeof h);
}

static inline void fill(void *p, size_t n, unsigned tag)
{
	memset(p, (int)tag, n);
	put_header(p, n, tag);
}

static inline void touch(void *p, size_t n, unsigned tag)
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
static inline size_t check(const void *p, size_t n)
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
static inline void fill_head(void *p, size_t n, unsigned tag)
{
	memset(p, (int)tag, n < 128 ? n : 128);
	((unsigned char *)p)[n - 1] = (unsigned char)tag;
	put_header(p, n, tag);
}

/* Check and free what a slot holds, if anything. */
static inline void release(void **slot)
{
	if (*slot != NULL) {
		check(*slot, 0);
		free(*slot);
		*slot = NULL;
	}
}

static inline void release_all(void **slot, size_t count)
{
	for (size_t k = 0; k < count; k++)
		release(&slot[k]);
}

static inline unsigned next_tag(unsigned *t)
{
	*t = (*t + 1) & 0xff;
	return *t;
}

#endif /* ALLOC_BENCH_H */
