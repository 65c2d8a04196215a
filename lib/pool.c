/*
 * pool.c - jp_pool: fixed-size objects from a fixed capacity.
 *
 * The objects live in one mapping (demand-paged: an object's memory is
 * touched first by its user).  Free objects are on a lock-free stack of
 * 32-bit indices whose links live in a separate array, so the pool never
 * writes into a free object.  Link i is stored xor (i + 1), so that the
 * fresh, all-zero array already chains every index to the next and the
 * last to cap (none): creating a pool writes no link, and costs no memory
 * for them until they are used, whatever the capacity.  The top of the stack is a 64-bit word holding
 * the index (+1, 0 = empty) and a 32-bit tag bumped by every change, so a
 * compare-exchange cannot succeed on a top that was popped and pushed back
 * in between (ABA).  A batch moves with one compare-exchange: a chain is
 * linked privately and pushed whole; a pop walks up to n links from the top
 * and swings the top past them (the walk may read links that another thread
 * is rewriting, but then the tag has changed and the exchange fails).
 *
 * With JP_POOL_THREAD_CACHE each thread has a record (perthread.h) with a
 * small array of object pointers: get and put touch only that array, with no
 * lock and no atomic instruction; an empty cache takes a batch from the
 * stack, a full one gives the older half back.  The record goes back to the
 * stack when its thread exits.
 */
#include "jp_internal.h"
#include "options.h"
#include "os.h"
#include "perthread.h"

#include <jpsync/pool.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX
#define TC_MAX 64		/* most objects one thread's cache holds */

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
	size_t tc_size, tc_batch;	/* thread cache slots, objects per batch */
	size_t limit;			/* cap * stride */
	struct jp__pt_hub *hub;
	uint64_t hub_id;
	/* hub_id when the cache can serve get/put without checks; otherwise
	 * UINT64_MAX, which no thread-local id ever equals. */
	uint64_t fast_id;
	_Alignas(JP_CACHELINE) _Atomic uint64_t top;	/* tag << 32 | (index + 1) */
};

struct pool_tc {
	struct jp__pt_rec rec;
	size_t n;
	void *objs[TC_MAX];
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

/* ---- the shared stack ---------------------------------------------------- */

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
static void stack_push(struct jp_pool *p, uint32_t first, uint32_t last)
{
	/* relaxed: a guess validated by the exchange. */
	uint64_t top = atomic_load_explicit(&p->top, memory_order_relaxed);
	uint64_t nt;

	JP_HB_RELEASE(&p->top);
	do {
		uint32_t t = (uint32_t)top;

		link_set(p, last, t ? t - 1 : NONE);
		nt = ((top >> 32) + 1) << 32 | ((uint64_t)first + 1);
		/* release: the link above and the user's writes to the objects
		 * happen before the getter's acquire. */
	} while (!atomic_compare_exchange_weak_explicit(&p->top, &top, nt,
							memory_order_release,
							memory_order_relaxed));
}

/* Pop up to n indices into out[]; returns how many. */
static size_t stack_pop(struct jp_pool *p, uint32_t *out, size_t n)
{
	/* acquire: see the links written before the push that made this top. */
	uint64_t top = atomic_load_explicit(&p->top, memory_order_acquire);

	for (;;) {
		uint32_t i = (uint32_t)top;
		size_t k = 0;
		uint64_t nt;

		if (i == 0)
			return 0;
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
		if (atomic_compare_exchange_weak_explicit(&p->top, &top, nt,
							  memory_order_acquire,
							  memory_order_acquire)) {
			JP_HB_ACQUIRE(&p->top);
			return k;
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
	stack_push(p, first, prev);
}

static size_t pop_objs(struct jp_pool *p, void **objs, size_t n)
{
	uint32_t idx[TC_MAX];
	size_t got = 0;

	while (got < n) {
		size_t want = n - got < TC_MAX ? n - got : TC_MAX;
		size_t k = stack_pop(p, idx, want);

		for (size_t j = 0; j < k; j++)
			objs[got + j] = obj_at(p, idx[j]);
		got += k;
		if (k < want)
			break;
	}
	return got;
}

/* ---- checks -------------------------------------------------------------- */

static inline void check_put(struct jp_pool *p, void *obj)
{
	size_t off = (size_t)((unsigned char *)obj - p->base);

	/* Always: a pointer outside the pool would corrupt the free stack. */
	if (jp_unlikely(off >= p->limit))
		jp__die_ptr("jp_pool_put of a pointer not from this pool", obj);
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

static void tc_thread_exit(void *owner, struct jp__pt_rec *rec)
{
	struct pool_tc *tc = (struct pool_tc *)rec;

	push_objs(owner, tc->objs, tc->n);
	tc->n = 0;
}

static inline struct pool_tc *tc_get(struct jp_pool *p)
{
	if (jp_likely(jp__pt_tls.id == p->hub_id))
		return (struct pool_tc *)jp__pt_tls.rec;
	return (struct pool_tc *)jp__pt_get_slow(p->hub);
}

/* ---- public -------------------------------------------------------------- */

JP_EXPORT jp_pool_t *jp_pool_create(size_t obj_size, size_t capacity, unsigned flags)
{
	struct jp_pool *p;
	size_t cap = 1, stride, align, meta, page = jp__os_page_size();
	void *m;

	if (obj_size == 0 || capacity == 0 || capacity > ((size_t)1 << 31) ||
	    obj_size > ((size_t)1 << 40) || (flags & ~JP_POOL_THREAD_CACHE)) {
		errno = EINVAL;
		return NULL;
	}
	while (cap < capacity)
		cap <<= 1;
	stride = (obj_size + 15) & ~(size_t)15;
	if (stride > SIZE_MAX / cap - page) {
		errno = EINVAL;
		return NULL;
	}
	align = stride & -stride;	/* the largest power of two dividing it */
	meta = sizeof *p + cap * sizeof(uint32_t) + cap;
	meta = (meta + page - 1) & ~(page - 1);
	/* Demand-paged, but never more than the machine could hold (as the
	 * queues, queue_wait.c). */
	if (stride * cap > jp__os_mem_bytes() - meta) {
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
	p->limit = stride * cap;
	p->fast_id = UINT64_MAX;
	p->obj_bytes = (stride * cap + page - 1) & ~(page - 1);
	if ((align > page ? jp__os_map_aligned(&m, p->obj_bytes, align)
			  : jp__os_map(&m, p->obj_bytes)) != 0) {
		jp__os_unmap(p, meta);
		errno = ENOMEM;
		return NULL;
	}
	p->base = m;
	p->next = (_Atomic uint32_t *)(void *)(p + 1);
	p->state = (_Atomic uint8_t *)(void *)(p->next + cap);
	p->shift = (stride & (stride - 1)) == 0 ? (unsigned)__builtin_ctzl(stride) : 0;
	p->flags = flags;
	p->check = jp__options()->check;
	/* The links are all zero: every index chained to the next (see the top). */
	JP_BENIGN_RACE(p->next, cap * sizeof(uint32_t), "free-stack links, accessed atomically");
	JP_BENIGN_RACE(p->state, cap, "JPSYNC_CHECK flags, accessed atomically");
	atomic_init(&p->top, 1);	/* index 0, tag 0 */
	JP_BENIGN_RACE(&p->top, sizeof p->top, "free-stack top, accessed atomically");
	p->tc_size = cap / 4 < 2 ? 2 : cap / 4 > TC_MAX ? TC_MAX : cap / 4;
	p->tc_batch = p->tc_size / 2;
	if (flags & JP_POOL_THREAD_CACHE) {
		p->hub = jp__pt_hub_new(p, sizeof(struct pool_tc), NULL, tc_thread_exit);
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

static JP_NOINLINE void *get_slow(jp_pool_t *p)
{
	void *obj;

	if (jp_unlikely(p == NULL)) {
		errno = EINVAL;
		return NULL;
	}
	if (p->hub != NULL) {
		struct pool_tc *tc = tc_get(p);

		if (jp_likely(tc != NULL)) {
			if (tc->n == 0)
				tc->n = pop_objs(p, tc->objs, p->tc_batch);
			if (tc->n > 0)
				return mark_got(p, tc->objs[--tc->n]);
			errno = ENOMEM;
			return NULL;
		}
	}
	if (pop_objs(p, &obj, 1) == 0) {
		errno = ENOMEM;
		return NULL;
	}
	return mark_got(p, obj);
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
		size_t n = tc->n;

		if (jp_likely(n != 0)) {
			tc->n = n - 1;
			return tc->objs[n - 1];
		}
	}
	return get_slow(p);
}

static JP_NOINLINE void put_slow(jp_pool_t *p, void *obj)
{
	if (jp_unlikely(p == NULL || obj == NULL))
		return;
	check_put(p, obj);
	if (p->hub != NULL) {
		struct pool_tc *tc = tc_get(p);

		if (jp_likely(tc != NULL)) {
			if (tc->n == p->tc_size) {
				/* Give the older half back; keep the recently used. */
				size_t half = p->tc_size / 2;

				push_objs(p, tc->objs, half);
				memmove(tc->objs, tc->objs + half, (tc->n - half) * sizeof(void *));
				tc->n -= half;
			}
			tc->objs[tc->n++] = obj;
			return;
		}
	}
	push_objs(p, &obj, 1);
}

/* The common path, as jp_pool_get; the range check is always made (a
 * pointer from elsewhere would corrupt the free stack). */
JP_EXPORT void jp_pool_put(jp_pool_t *p, void *obj)
{
	if (jp_likely(p != NULL && jp__pt_tls.id == p->fast_id)) {
		struct pool_tc *tc = (struct pool_tc *)jp__pt_tls.rec;
		size_t n = tc->n;

		if (jp_likely(n < p->tc_size &&
			      (uintptr_t)obj - (uintptr_t)p->base < p->limit)) {
			tc->objs[n] = obj;
			tc->n = n + 1;
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
	if (p->hub != NULL) {
		struct pool_tc *tc = tc_get(p);

		while (tc != NULL && tc->n > 0 && got < n)
			objs[got++] = tc->objs[--tc->n];
	}
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
	if (p->hub != NULL) {
		struct pool_tc *tc = tc_get(p);

		while (tc != NULL && n > 0 && tc->n < p->tc_size) {
			if (*objs != NULL)
				tc->objs[tc->n++] = *objs;
			objs++;
			n--;
		}
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
