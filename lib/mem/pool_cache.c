/*
 * pool_cache.c - jp_pool's per-thread caches (JP_POOL_THREAD_CACHE) and
 * every call that may use one: get, put, the batches, and the cache as a
 * public handle (jp_pool_local).  The shared free stacks are pool.c's and
 * pool_internal.h's.
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
#include "pool_internal.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

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
	jp__pool_push_objs(p, objs, n);
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
		tc->h.top = tc->objs + jp__pool_pop_objs(p, tc->objs, p->tc_batch);
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

/* For jp_pool_create: the records of p's caches, with their exit hook. */
struct jp__pt_hub *jp__pool_cache_hub_new(struct jp_pool *p)
{
	return jp__pt_hub_new(p, sizeof(struct pool_tc), tc_init, tc_thread_exit);
}

/* ---- get and put --------------------------------------------------------- */

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
		return jp__pool_shared_get(p);
	tc = tc_get(p);
	return tc != NULL ? cache_get(p, tc) : jp__pool_shared_get(p);
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
	got += jp__pool_pop_objs(p, objs + got, n - got);
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
		jp__pool_push_objs(p, chunk, k);
	}
}

/* ---- the per-thread handle (JPSYNC_1.1) ---------------------------------- */

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

	return p->check ? jp__pool_shared_get(p) : cache_get(p, tc_of(h));
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
