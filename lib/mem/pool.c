/*
 * pool.c - jp_pool: fixed-size objects from a fixed capacity.
 *
 * The objects live in one mapping (demand-paged: an object's memory is
 * touched first by its user).  Free objects are on a lock-free stack of
 * 32-bit indices whose links live in a separate array, so the pool never
 * writes into a free object.  Link i is stored xor (i + 1), so that the
 * fresh, all-zero array already chains every index to the next and the
 * last to cap (none): creating a pool writes no link, and costs no memory
 * for them until they are used, whatever the capacity.  The top of a stack is a 64-bit word holding
 * the index (+1, 0 = empty) and a 32-bit tag bumped by every change, so a
 * compare-exchange cannot succeed on a top that was popped and pushed back
 * in between (ABA).  A batch moves with one compare-exchange: a chain is
 * linked privately and pushed whole; a pop walks up to n links from the top
 * and swings the top past them (the walk may read links that another thread
 * is rewriting, but then the tag has changed and the exchange fails).
 *
 * There is one such stack per CPU (a "shard", up to SHARDS_MAX, each top on
 * a cache line of its own), and a thread uses the one of the CPU it runs on
 * (os.h's jp__os_cpu; a hash of the thread when the CPU cannot be read):
 * a put goes there, a get takes from there first and then from the others
 * in turn.  Threads on different CPUs then touch different lines, where a
 * single top made every get and put of every thread a compare-exchange on
 * one line bouncing between the CPUs.  A get that finds every shard empty
 * reads every top again and reports ENOMEM only when none has changed
 * since it found it empty (the tags make equal tops mean "not touched"),
 * so all were empty at one instant: an object moved from a shard not yet
 * searched to one already searched cannot make it fail.
 *
 * With JP_POOL_THREAD_CACHE each thread has a record (perthread.h) with a
 * small array of object pointers: get and put touch only that array, with no
 * lock and no atomic instruction; an empty cache takes a batch from the
 * stack, a full one gives the older half back.  The record goes back to the
 * stack when its thread exits.  Under JPSYNC_CHECK nothing is cached, so
 * that the checks see every get and put.
 *
 * The record's cache is also a public handle (jp_pool_local, JPSYNC_1.1):
 * pool.h's inline jp_pool_local_get and _put pop and push its array
 * themselves and call jp_pool_local_refill and _flush only when it is empty
 * or full.  Why an inline handle rather than exported get and put: the
 * README's "Design choices of 1.1".  Its price is that the handle's first three
 * members are frozen ABI.
 */
#include "base/jp_internal.h"
#include "base/options.h"
#include "base/os.h"
#include "base/perthread.h"

#include <jpsync/pool.h>

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX
#define TC_MAX 64		/* most objects one thread's cache holds */
#define SHARDS_MAX 64

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

/* A thread's cache; h is the handle jp_pool_local gives out (pool.h). */
struct pool_tc {
	struct jp__pt_rec rec;
	jp_pool_local_t h;
	void *objs[TC_MAX];
};

_Static_assert(offsetof(jp_pool_local_t, top) == 0 &&
	       offsetof(jp_pool_local_t, end) == sizeof(void *) &&
	       offsetof(jp_pool_local_t, slot) == 2 * sizeof(void *),
	       "jp_pool_local_t's inline members are ABI (pool.h)");

/* Objects in a thread's cache. */
static inline size_t tc_count(const struct pool_tc *tc)
{
	return (size_t)(tc->h.top - tc->objs);
}

static inline void *obj_at(const struct jp_pool *p, uint32_t i)
{
	return p->base + (size_t)i * p->stride;
}

static inline uint32_t index_of(const struct jp_pool *p, const void *obj)
{
	size_t off = (size_t)((const unsigned char *)obj - p->base);

	return (uint32_t)(p->shift ? off >> p->shift : off / p->stride);
}

/* ---- the shared stacks --------------------------------------------------- */

/* The shard of the calling thread's CPU (see the top). */
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

/* The links, stored xor (i + 1) (see the top).  relaxed, both: the top's
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

/* Pop up to n indices into out[]; returns how many.  When it returns 0,
 * *empty is the (empty) top it saw. */
static size_t stack_pop(struct jp_pool *p, struct pool_shard *s, uint32_t *out, size_t n,
			uint64_t *empty)
{
	/* acquire: see the links written before the push that made this top. */
	uint64_t top = atomic_load_explicit(&s->top, memory_order_acquire);

	for (;;) {
		uint32_t i = (uint32_t)top;
		size_t k = 0;
		uint64_t nt;

		if (i == 0) {
			*empty = top;
			return 0;
		}
		i -= 1;
		while (k < n && i != NONE) {
			out[k++] = i;
			/* May be stale; then the tag check fails below. */
			i = link_get(p, i);
			if (i >= p->cap)
				i = NONE;	/* the end (cap), or a torn walk */
		}
		nt = ((top >> 32) + 1) << 32 | (i == NONE ? 0 : (uint64_t)i + 1);
		/* acquire on success: the objects' last user's writes (before
		 * its release push) happen before ours. */
		if (atomic_compare_exchange_weak_explicit(&s->top, &top, nt,
							  memory_order_acquire,
							  memory_order_acquire)) {
			JP_HB_ACQUIRE(&s->top);
			return k;
		}
	}
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

/* Push n objects (pointers) back as one chain. */
static void push_objs(struct jp_pool *p, void *const *objs, size_t n)
{
	uint32_t first, prev;

	if (n == 0)
		return;
	first = prev = index_of(p, objs[0]);
	for (size_t k = 1; k < n; k++) {
		uint32_t i = index_of(p, objs[k]);

		link_set(p, prev, i);	/* a private chain */
		prev = i;
	}
	stack_push(p, &p->shards[home_shard(p)], first, prev);
}

/* Up to n objects: from the home shard, then from the others in turn. */
static size_t pop_objs(struct jp_pool *p, void **objs, size_t n)
{
	uint32_t idx[TC_MAX];
	uint64_t seen[SHARDS_MAX];
	unsigned home = home_shard(p), mask = p->nshards - 1;
	size_t got = 0;

	if (n == 0)
		return 0;
	for (;;) {
		for (unsigned k = 0; k <= mask && got < n; k++) {
			struct pool_shard *s = &p->shards[(home + k) & mask];
			size_t want, j;

			do {
				want = n - got < TC_MAX ? n - got : TC_MAX;
				j = stack_pop(p, s, idx, want, &seen[k]);
				for (size_t i = 0; i < j; i++)
					objs[got + i] = obj_at(p, idx[i]);
				got += j;
			} while (j == want && got < n);
		}
		if (got > 0 || mask == 0)
			return got;
		/* Every shard was empty when looked at: ENOMEM only if none has
		 * changed since, so that all were empty at once (see the top). */
		unsigned k = 0;

		/* acquire: a changed top is popped from at once, as above. */
		while (k <= mask &&
		       atomic_load_explicit(&p->shards[(home + k) & mask].top,
					    memory_order_acquire) == seen[k])
			k++;
		if (k > mask)
			return 0;
	}
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

/* ---- thread caches ------------------------------------------------------- */

/* A new record (zeroed): its handle. */
static void tc_init(struct jp__pt_rec *rec)
{
	struct pool_tc *tc = (struct pool_tc *)rec;
	struct jp_pool *p = rec->hub->owner;

	tc->h.slot = tc->h.top = tc->objs;
	/* No room under JPSYNC_CHECK: the checks see every call. */
	tc->h.end = tc->objs + (p->check ? 0 : p->tc_size);
	tc->h.pool = p;
}

/* Objects leave a thread's cache for the shared stacks. */
static void give_back(struct jp_pool *p, void *const *objs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		check_range(p, objs[i]);
	push_objs(p, objs, n);
}

static void tc_thread_exit(void *owner, struct jp__pt_rec *rec)
{
	struct pool_tc *tc = (struct pool_tc *)rec;

	give_back(owner, tc->objs, tc_count(tc));
	tc->h.top = tc->objs;
}

static inline struct pool_tc *tc_get(struct jp_pool *p)
{
	if (jp_likely(jp__pt_tls.id == p->hub_id))
		return (struct pool_tc *)jp__pt_tls.rec;
	return (struct pool_tc *)jp__pt_get_slow(p->hub);
}

/* The calling thread's cache, or NULL when p has none or checks every call
 * (JPSYNC_CHECK caches nothing, so that every get and put is seen). */
static inline struct pool_tc *tc_cache(struct jp_pool *p)
{
	return p->hub != NULL && !p->check ? tc_get(p) : NULL;
}

/* From the cache, refilled with a batch when empty: NULL, ENOMEM. */
static void *cache_get(struct jp_pool *p, struct pool_tc *tc)
{
	if (tc->h.top == tc->objs)
		tc->h.top = tc->objs + pop_objs(p, tc->objs, p->tc_batch);
	if (tc->h.top == tc->objs) {
		errno = ENOMEM;
		return NULL;
	}
	return *--tc->h.top;
}

/* Into the cache; a full one gives its older half back first. */
static void cache_put(struct jp_pool *p, struct pool_tc *tc, void *obj)
{
	if (tc_count(tc) == p->tc_size) {
		/* Give the older half back; keep the recently used. */
		size_t half = p->tc_size / 2;

		give_back(p, tc->objs, half);
		memmove(tc->objs, tc->objs + half, (p->tc_size - half) * sizeof(void *));
		tc->h.top -= half;
	}
	*tc->h.top++ = obj;
}

/* One object straight from the shared stacks: NULL, ENOMEM.  The home
 * shard first, without pop_objs' loops; they search the others. */
static void *shared_get(struct jp_pool *p)
{
	uint32_t i;
	void *obj;

	if (jp_likely(pop_one(p, &p->shards[home_shard(p)], &i)))
		return mark_got(p, obj_at(p, i));
	if (pop_objs(p, &obj, 1) == 0) {
		errno = ENOMEM;
		return NULL;
	}
	return mark_got(p, obj);
}

/* One object straight back to the home shard. */
static inline __attribute__((always_inline)) void shared_put(struct jp_pool *p, void *obj)
{
	uint32_t i = index_of(p, obj);

	stack_push(p, &p->shards[home_shard(p)], i, i);
}

/* ---- public -------------------------------------------------------------- */

JP_EXPORT jp_pool_t *jp_pool_create(size_t obj_size, size_t capacity, unsigned flags)
{
	struct jp_pool *p;
	size_t cap = 1, stride, objs, align, meta, head, page = jp__os_page_size();
	unsigned nshards;
	void *m;

	if (obj_size == 0 || capacity == 0 || capacity > ((size_t)1 << 31) ||
	    JP_SIZE_ABOVE_POW2(obj_size, 40) || obj_size > SIZE_MAX / 4 ||
	    (flags & ~JP_POOL_THREAD_CACHE)) {
		errno = EINVAL;
		return NULL;
	}
	while (cap < capacity)
		cap <<= 1;
	stride = (obj_size + 15) & ~(size_t)15;
	align = stride & -stride;	/* the largest power of two dividing it */
	for (nshards = 1; nshards < jp__os_cpu_count() && nshards < SHARDS_MAX && nshards < cap;)
		nshards <<= 1;
	head = (sizeof *p + JP_CACHELINE - 1) & ~(size_t)(JP_CACHELINE - 1);
	/* The objects and the bookkeeping (a link and a flag byte per object),
	 * each rounded up to pages, must fit size_t: on a 32-bit target a
	 * capacity of 2^24 objects of 256 bytes does not. */
	if (__builtin_mul_overflow(stride, cap, &objs) || objs > SIZE_MAX - page ||
	    __builtin_mul_overflow(cap, sizeof(uint32_t) + 1, &meta) ||
	    __builtin_add_overflow(meta, head + nshards * sizeof(struct pool_shard), &meta) ||
	    meta > SIZE_MAX - page) {
		errno = EINVAL;
		return NULL;
	}
	meta = (meta + page - 1) & ~(page - 1);
	/* Demand-paged, but never more than the machine could hold (as the
	 * queues, queue_wait.c). */
	if (meta > jp__os_mem_bytes() || objs > jp__os_mem_bytes() - meta) {
		errno = ENOMEM;
		return NULL;
	}
	if (jp__os_map(&m, meta) != 0) {
		errno = ENOMEM;
		return NULL;
	}
	p = m;
	p->stride = stride;
	p->cap = cap;
	p->meta_bytes = meta;
	p->limit = objs;
	p->fast_id = UINT64_MAX;
	p->obj_bytes = (objs + page - 1) & ~(page - 1);
	if ((align > page ? jp__os_map_aligned(&m, p->obj_bytes, align)
			  : jp__os_map(&m, p->obj_bytes)) != 0) {
		jp__os_unmap(p, meta);
		errno = ENOMEM;
		return NULL;
	}
	p->base = m;
	p->shards = (struct pool_shard *)(void *)((unsigned char *)p + head);
	p->nshards = nshards;
	p->next = (_Atomic uint32_t *)(void *)(p->shards + nshards);
	p->state = (_Atomic uint8_t *)(void *)(p->next + cap);
	p->shift = (stride & (stride - 1)) == 0 ? (unsigned)__builtin_ctzl(stride) : 0;
	p->flags = flags;
	p->check = jp__options()->check;
	p->plain = !(flags & JP_POOL_THREAD_CACHE) && !p->check;
	/* The links are all zero: every index chained to the next (see the top). */
	JP_BENIGN_RACE(p->next, cap * sizeof(uint32_t), "free-stack links, accessed atomically");
	JP_BENIGN_RACE(p->state, cap, "JPSYNC_CHECK flags, accessed atomically");
	/* Shard k starts with the k-th of nshards equal runs of indices. */
	for (unsigned k = 0; k < nshards; k++) {
		size_t lo = cap / nshards * k, hi = lo + cap / nshards;

		atomic_init(&p->shards[k].top, (uint64_t)lo + 1);	/* tag 0 */
		if (hi < cap)
			link_set(p, (uint32_t)hi - 1, NONE);
		JP_BENIGN_RACE(&p->shards[k].top, sizeof p->shards[k].top,
			       "free-stack top, accessed atomically");
	}
	p->tc_size = cap / 4 < 2 ? 2 : cap / 4 > TC_MAX ? TC_MAX : cap / 4;
	p->tc_batch = p->tc_size / 2;
	if (flags & JP_POOL_THREAD_CACHE) {
		p->hub = jp__pt_hub_new(p, sizeof(struct pool_tc), tc_init, tc_thread_exit);
		if (p->hub == NULL) {
			jp__os_unmap(p->base, p->obj_bytes);
			jp__os_unmap(p, meta);
			errno = ENOMEM;
			return NULL;
		}
		p->hub_id = p->hub->id;
		if (!p->check)
			p->fast_id = p->hub_id;
	}
	return p;
}

JP_EXPORT void jp_pool_destroy(jp_pool_t *p)
{
	if (p == NULL)
		return;
	if (p->hub != NULL)
		jp__pt_hub_kill(p->hub);	/* no thread-exit callback after this */
	jp__os_unmap(p->base, p->obj_bytes);
	jp__os_unmap(p, p->meta_bytes);
}

/* Everything but a thread cache's hit: a pool without a cache first (its
 * own short path), then the rest.  Out of line, so that the cache's hit
 * in jp_pool_get saves no registers. */
static JP_NOINLINE void *get_slow(jp_pool_t *p)
{
	struct pool_tc *tc;
	uint32_t i;

	if (jp_likely(p != NULL && p->plain) &&
	    jp_likely(pop_one(p, &p->shards[home_shard(p)], &i)))
		return obj_at(p, i);
	if (jp_unlikely(p == NULL)) {
		errno = EINVAL;
		return NULL;
	}
	if (p->hub == NULL || p->check)
		return shared_get(p);
	tc = tc_get(p);
	return tc != NULL ? cache_get(p, tc) : shared_get(p);
}

/*
 * The common path: the calling thread's cache is the last per-thread record
 * it used and is not empty.  A load and compare of a thread-local word, a
 * load and store of the count: no lock, no atomic.  Everything else,
 * including JPSYNC_CHECK, is in get_slow.
 */
JP_EXPORT void *jp_pool_get(jp_pool_t *p)
{
	if (jp_likely(p != NULL && jp__pt_tls.id == p->fast_id)) {
		struct pool_tc *tc = (struct pool_tc *)jp__pt_tls.rec;
		void **t = tc->h.top;

		if (jp_likely(t != tc->objs)) {
			tc->h.top = --t;
			return *t;
		}
	}
	return get_slow(p);
}

/* Everything but a thread cache's hit, as get_slow. */
static JP_NOINLINE void put_slow(jp_pool_t *p, void *obj)
{
	struct pool_tc *tc;

	if (jp_likely(p != NULL && p->plain && obj != NULL)) {
		check_range(p, obj);
		shared_put(p, obj);
		return;
	}
	if (jp_unlikely(p == NULL || obj == NULL))
		return;
	check_put(p, obj);
	tc = p->hub == NULL || p->check ? NULL : tc_get(p);
	if (tc != NULL)
		cache_put(p, tc, obj);
	else
		shared_put(p, obj);
}

/* The common path, as jp_pool_get; the range check is always made (a
 * pointer from elsewhere would corrupt the free stack). */
JP_EXPORT void jp_pool_put(jp_pool_t *p, void *obj)
{
	if (jp_likely(p != NULL && jp__pt_tls.id == p->fast_id)) {
		struct pool_tc *tc = (struct pool_tc *)jp__pt_tls.rec;
		void **t = tc->h.top;

		if (jp_likely(t != tc->h.end &&
			      (uintptr_t)obj - (uintptr_t)p->base < p->limit)) {
			*t = obj;
			tc->h.top = t + 1;
			return;
		}
	}
	put_slow(p, obj);
}

JP_EXPORT size_t jp_pool_get_batch(jp_pool_t *p, void **objs, size_t n)
{
	size_t got = 0;

	if (p == NULL || objs == NULL) {
		errno = EINVAL;
		return 0;
	}
	struct pool_tc *tc = tc_cache(p);

	while (tc != NULL && tc->h.top != tc->objs && got < n)
		objs[got++] = *--tc->h.top;
	got += pop_objs(p, objs + got, n - got);
	for (size_t i = 0; i < got; i++)
		mark_got(p, objs[i]);
	if (got < n)
		errno = ENOMEM;
	return got;
}

JP_EXPORT void jp_pool_put_batch(jp_pool_t *p, void *const *objs, size_t n)
{
	if (p == NULL || objs == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		if (objs[i] != NULL)
			check_put(p, objs[i]);
	struct pool_tc *tc = tc_cache(p);

	while (tc != NULL && n > 0 && tc->h.top != tc->h.end) {
		if (*objs != NULL)
			*tc->h.top++ = *objs;
		objs++;
		n--;
	}
	/* The rest as chains of at most TC_MAX, skipping NULLs. */
	while (n > 0) {
		void *chunk[TC_MAX];
		size_t k = 0;

		while (n > 0 && k < TC_MAX) {
			if (*objs != NULL)
				chunk[k++] = *objs;
			objs++;
			n--;
		}
		push_objs(p, chunk, k);
	}
}

JP_EXPORT size_t jp_pool_capacity(const jp_pool_t *p)
{
	return p == NULL ? 0 : p->cap;
}

/* ---- the per-thread handle (JPSYNC_1.1) --------------------------------- */

JP_EXPORT jp_pool_local_t *jp_pool_local(jp_pool_t *p)
{
	struct pool_tc *tc;

	if (p == NULL || p->hub == NULL) {
		errno = EINVAL;
		return NULL;
	}
	tc = tc_get(p);
	if (tc == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	return &tc->h;
}

static inline struct pool_tc *tc_of(jp_pool_local_t *h)
{
	return (struct pool_tc *)(void *)((unsigned char *)h - offsetof(struct pool_tc, h));
}

JP_EXPORT void *jp_pool_local_refill(jp_pool_local_t *h)
{
	struct jp_pool *p = h->pool;

	return p->check ? shared_get(p) : cache_get(p, tc_of(h));
}

JP_EXPORT void jp_pool_local_flush(jp_pool_local_t *h, void *obj)
{
	struct jp_pool *p = h->pool;

	if (obj == NULL)
		return;
	check_put(p, obj);
	if (p->check)
		shared_put(p, obj);
	else
		cache_put(p, tc_of(h), obj);
}
