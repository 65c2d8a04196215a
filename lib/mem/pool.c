/*
 * pool.c - jp_pool: fixed-size objects from a fixed capacity.  This file
 * owns the pool itself: create, destroy, capacity, and the shared free
 * stacks' out-of-line half (batch pops and pushes, the search of every
 * shard); pool_internal.h lays out the pool and its stacks, pool_cache.c
 * has the per-thread caches and every call that may use one (get, put,
 * the batches, jp_pool_local).
 *
 * There is one free stack per CPU (a "shard", up to SHARDS_MAX, each top on
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
 */
#include "pool_internal.h"

#include "base/options.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define SHARDS_MAX 64

/* ---- the shared stacks --------------------------------------------------- */

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

/* Push n objects (pointers) back as one chain. */
void jp__pool_push_objs(struct jp_pool *p, void *const *objs, size_t n)
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
size_t jp__pool_pop_objs(struct jp_pool *p, void **objs, size_t n)
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

/* One object straight from the shared stacks: NULL, ENOMEM.  The home
 * shard first, without jp__pool_pop_objs' loops; they search the others. */
void *jp__pool_shared_get(struct jp_pool *p)
{
	uint32_t i;
	void *obj;

	if (jp_likely(pop_one(p, &p->shards[home_shard(p)], &i)))
		return mark_got(p, obj_at(p, i));
	if (jp__pool_pop_objs(p, &obj, 1) == 0) {
		errno = ENOMEM;
		return NULL;
	}
	return mark_got(p, obj);
}

/* ---- the pool ------------------------------------------------------------ */

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
	/* The links are all zero: every index chained to the next (pool_internal.h). */
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
		p->hub = jp__pool_cache_hub_new(p);
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

JP_EXPORT size_t jp_pool_capacity(const jp_pool_t *p)
{
	return p == NULL ? 0 : p->cap;
}

