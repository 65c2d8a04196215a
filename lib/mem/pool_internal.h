/*
 * pool_internal.h - what pool.c and pool_cache.c share: struct jp_pool,
 * the index arithmetic, and the inline halves of the shared free stacks
 * and of the checks, which the fast paths of both files use.
 *
 * The objects live in one mapping (demand-paged: an object's memory is
 * touched first by its user).  Free objects are on lock-free stacks of
 * 32-bit indices whose links live in a separate array, so the pool never
 * writes into a free object.  Link i is stored xor (i + 1), so that the
 * fresh, all-zero array already chains every index to the next and the
 * last to cap (none): creating a pool writes no link, and costs no memory
 * for them until they are used, whatever the capacity.  The top of a
 * stack is a 64-bit word holding the index (+1, 0 = empty) and a 32-bit
 * tag bumped by every change, so a compare-exchange cannot succeed on a
 * top that was popped and pushed back in between (ABA).  A batch moves
 * with one compare-exchange: a chain is linked privately and pushed whole;
 * a pop walks up to n links from the top and swings the top past them (the
 * walk may read links that another thread is rewriting, but then the tag
 * has changed and the exchange fails).  There is one stack per CPU (a
 * shard; pool.c says how they are searched).
 */
#ifndef JP_POOL_INTERNAL_H
#define JP_POOL_INTERNAL_H

#include "base/jp_internal.h"
#include "base/os.h"
#include "base/perthread.h"

#include <jpsync/pool.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define NONE UINT32_MAX
#define TC_MAX 64		/* most objects one thread's cache holds */

struct pool_shard {
	_Alignas(JP_CACHELINE) _Atomic uint64_t top;	/* tag << 32 | (index + 1) */
};

struct jp_pool {
	unsigned char *base;		/* the objects */
	size_t stride;			/* bytes per object, a multiple of 16 */
	size_t cap;
	size_t obj_bytes;		/* size of the objects' mapping */
	size_t meta_bytes;		/* size of this struct's mapping */
	_Atomic uint32_t *next;		/* links of the free stack */
	_Atomic uint8_t *state;		/* JPSYNC_CHECK: 1 while handed out */
	unsigned shift;			/* log2(stride) when a power of two, else 0 */
	unsigned flags;
	bool check;
	bool plain;			/* no thread cache, no checks: get and put go
					 * straight to the home shard */
	size_t tc_size, tc_batch;	/* thread cache slots, objects per batch */
	size_t limit;			/* cap * stride */
	struct jp__pt_hub *hub;
	uint64_t hub_id;
	/* hub_id when the cache can serve get/put without checks; otherwise
	 * UINT64_MAX, which no thread-local id ever equals. */
	uint64_t fast_id;
	struct pool_shard *shards;	/* nshards (a power of two) free stacks */
	unsigned nshards;
};

static inline void *obj_at(const struct jp_pool *p, uint32_t i)
{
	return p->base + (size_t)i * p->stride;
}

static inline uint32_t index_of(const struct jp_pool *p, const void *obj)
{
	size_t off = (size_t)((const unsigned char *)obj - p->base);

	return (uint32_t)(p->shift ? off >> p->shift : off / p->stride);
}

/* ---- the shared stacks: the inline halves (pool.c has the rest) ---------- */

/* The shard of the calling thread's CPU (pool.c's opening comment). */
static inline unsigned home_shard(const struct jp_pool *p)
{
	int cpu = jp__os_cpu();
	uint64_t h;

	if (jp_likely(cpu >= 0))
		return (unsigned)cpu & (p->nshards - 1);
	/* No CPU number: spread the threads by the address of their TLS. */
	h = (uint64_t)(uintptr_t)&jp__pt_tls * UINT64_C(0x9e3779b97f4a7c15);
	return (unsigned)(h >> 40) & (p->nshards - 1);
}

/* The links, stored xor (i + 1) (see above).  relaxed, both: the top's
 * exchange orders them. */
static inline uint32_t link_get(const struct jp_pool *p, uint32_t i)
{
	return atomic_load_explicit(&p->next[i], memory_order_relaxed) ^ (i + 1);
}

static inline void link_set(struct jp_pool *p, uint32_t i, uint32_t next)
{
	atomic_store_explicit(&p->next[i], next ^ (i + 1), memory_order_relaxed);
}

/* Push the chain first..last (already linked) with one compare-exchange. */
static inline __attribute__((always_inline)) void stack_push(struct jp_pool *p, struct pool_shard *s, uint32_t first, uint32_t last)
{
	/* relaxed: a guess validated by the exchange. */
	uint64_t top = atomic_load_explicit(&s->top, memory_order_relaxed);
	uint64_t nt;

	JP_HB_RELEASE(&s->top);
	do {
		uint32_t t = (uint32_t)top;

		link_set(p, last, t ? t - 1 : NONE);
		nt = ((top >> 32) + 1) << 32 | ((uint64_t)first + 1);
		/* release: the link above and the user's writes to the objects
		 * happen before the getter's acquire. */
	} while (!atomic_compare_exchange_weak_explicit(&s->top, &top, nt,
							memory_order_release,
							memory_order_relaxed));
}

/* The one-object pop of get (stack_pop without its walk): false when empty. */
static inline bool pop_one(struct jp_pool *p, struct pool_shard *s, uint32_t *out)
{
	/* acquire: as in stack_pop. */
	uint64_t top = atomic_load_explicit(&s->top, memory_order_acquire);

	for (;;) {
		uint32_t i = (uint32_t)top, next;
		uint64_t nt;

		if (i == 0)
			return false;
		next = link_get(p, i - 1);	/* may be stale: then the exchange fails */
		nt = ((top >> 32) + 1) << 32 | (next < p->cap ? (uint64_t)next + 1 : 0);
		/* acquire on success: as in stack_pop. */
		if (atomic_compare_exchange_weak_explicit(&s->top, &top, nt, memory_order_acquire,
							  memory_order_acquire)) {
			JP_HB_ACQUIRE(&s->top);
			*out = i - 1;
			return true;
		}
	}
}

/* One object straight back to the home shard. */
static inline __attribute__((always_inline)) void shared_put(struct jp_pool *p, void *obj)
{
	uint32_t i = index_of(p, obj);

	stack_push(p, &p->shards[home_shard(p)], i, i);
}

/* ---- checks -------------------------------------------------------------- */

/* Always, before an object joins a free stack: a pointer outside the
 * pool would corrupt it.  (Inline handle puts are checked here, when the
 * object leaves the thread's cache.) */
static inline void check_range(struct jp_pool *p, void *obj)
{
	if (jp_unlikely((size_t)((unsigned char *)obj - p->base) >= p->limit))
		jp__die_ptr("jp_pool_put of a pointer not from this pool", obj);
}

static inline void check_put(struct jp_pool *p, void *obj)
{
	size_t off = (size_t)((unsigned char *)obj - p->base);

	check_range(p, obj);
	if (jp_unlikely(p->check)) {
		if (off % p->stride != 0)
			jp__die_ptr("jp_pool_put of a pointer not from this pool", obj);
		if (atomic_exchange_explicit(&p->state[off / p->stride], 0,
					     memory_order_relaxed) != 1)	/* a flag, orders nothing */
			jp__die_ptr("jp_pool_put of an object already in the pool", obj);
	}
}

static inline void *mark_got(struct jp_pool *p, void *obj)
{
	if (jp_unlikely(p->check))
		atomic_store_explicit(&p->state[index_of(p, obj)], 1, memory_order_relaxed);	/* a flag */
	return obj;
}

/* ---- pool.c -------------------------------------------------------------- */

/* Push n objects (pointers) back to the home shard as one chain. */
void jp__pool_push_objs(struct jp_pool *p, void *const *objs, size_t n);
/* Up to n objects: from the home shard, then from the others in turn. */
size_t jp__pool_pop_objs(struct jp_pool *p, void **objs, size_t n);
/* One object straight from the shared stacks: NULL, ENOMEM. */
void *jp__pool_shared_get(struct jp_pool *p);

/* ---- pool_cache.c -------------------------------------------------------- */

/* The per-thread records of p's caches (JP_POOL_THREAD_CACHE); NULL, no memory. */
struct jp__pt_hub *jp__pool_cache_hub_new(struct jp_pool *p);

#endif /* JP_POOL_INTERNAL_H */
