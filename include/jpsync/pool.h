/*
 * jpsync/pool.h - object pools and bump arenas.
 *
 * jp_pool_t hands out objects of one size from a fixed capacity (a power of
 * two), each aligned to at least 16 bytes and to the natural alignment of
 * obj_size (its largest power-of-two divisor).  get and put, and their batch
 * forms, may be called from any thread.  With JP_POOL_THREAD_CACHE each
 * thread keeps a small cache of objects and touches the shared pool only to
 * take or give back a batch, so the common path takes no lock and no atomic
 * instruction; a thread's cache goes back to the pool when the thread exits.
 * jp_pool_local() gives a thread a handle on that cache whose get and put
 * are inline (see below).
 *
 * jp_arena_t is a bump allocator for one thread: alloc moves a cursor, reset
 * frees everything at once, there is no per-object free.  jp_arena_local()
 * gives each thread its own arena, freed when the thread exits.
 */
#ifndef JPSYNC_POOL_H
#define JPSYNC_POOL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct jp_pool jp_pool_t;
#define JP_POOL_THREAD_CACHE 1u
jp_pool_t *jp_pool_create(size_t obj_size, size_t capacity, unsigned flags);
void   jp_pool_destroy(jp_pool_t *p);
void  *jp_pool_get(jp_pool_t *p);                         /* NULL, ENOMEM when exhausted */
void   jp_pool_put(jp_pool_t *p, void *obj);
size_t jp_pool_get_batch(jp_pool_t *p, void **objs, size_t n);
void   jp_pool_put_batch(jp_pool_t *p, void *const *objs, size_t n);
size_t jp_pool_capacity(const jp_pool_t *p);

/*
 * A thread's handle on a pool with JP_POOL_THREAD_CACHE (libjpsync 1.1,
 * JPSYNC_1.1): jp_pool_local(p) returns the calling thread's cache of p,
 * and jp_pool_local_get / jp_pool_local_put, inline below, serve it with a
 * handful of instructions and no call, no lookup and no atomic
 * instruction; only an empty or a full cache calls into the library
 * (jp_pool_local_refill, jp_pool_local_flush).  The cache is the one
 * jp_pool_get and jp_pool_put use on that thread, so the calls mix freely.
 *
 * Only the thread that called jp_pool_local may use the handle, until it
 * exits (its cached objects then go back to the pool) or the pool is
 * destroyed.  Objects still move freely: any thread may put an object
 * that another thread got.
 *
 * The inline put does not check that obj came from the pool: the check is
 * made when the object leaves the cache for the shared pool (a flush, the
 * thread's exit), which then aborts with "jp_pool_put of a pointer not from
 * this pool"; with JPSYNC_CHECK=1 every put is checked at once.
 *
 * Because get and put are inline, the first three members are part of the
 * ABI (libjpsync 1.1 and every later 1.x): the cache is slot[0 .. top),
 * and a put may fill it up to end.  The library may add members after
 * reserved, never before.  top == slot == end turns the inline paths off
 * (JPSYNC_CHECK: every call then goes through the checks).
 */
typedef struct jp_pool_local {
	void **top;		/* one past the last cached object */
	void **end;		/* the end of the slots a put may fill */
	void **slot;		/* the first slot */
	jp_pool_t *pool;
	void *reserved[4];
} jp_pool_local_t;

/* The calling thread's handle on p; NULL with errno EINVAL when p is NULL
 * or has no thread cache, ENOMEM when the cache cannot be made. */
jp_pool_local_t *jp_pool_local(jp_pool_t *p);
/* What jp_pool_local_get calls when the cache is empty: NULL, ENOMEM
 * when the pool is exhausted. */
void *jp_pool_local_refill(jp_pool_local_t *h);
/* What jp_pool_local_put calls when the cache is full (NULL is ignored;
 * a pointer not from the pool aborts). */
void  jp_pool_local_flush(jp_pool_local_t *h, void *obj);

#if defined(__GNUC__) || defined(__clang__)
# define JP_POOL_LIKELY_(x) __builtin_expect(!!(x), 1)
#else
# define JP_POOL_LIKELY_(x) (x)
#endif

/* An object from the calling thread's cache: NULL, ENOMEM when exhausted. */
static inline void *jp_pool_local_get(jp_pool_local_t *h)
{
	void **t = h->top;

	if (JP_POOL_LIKELY_(t != h->slot)) {
		h->top = --t;
		return *t;
	}
	return jp_pool_local_refill(h);
}

/* Give obj back to the calling thread's cache. */
static inline void jp_pool_local_put(jp_pool_local_t *h, void *obj)
{
	void **t = h->top;

	if (JP_POOL_LIKELY_(t != h->end)) {
		*t = obj;
		h->top = t + 1;
		return;
	}
	jp_pool_local_flush(h, obj);
}

typedef struct jp_arena jp_arena_t;
jp_arena_t *jp_arena_create(size_t bytes);
void  *jp_arena_alloc(jp_arena_t *a, size_t size, size_t align);  /* NULL, ENOMEM when full */
void   jp_arena_reset(jp_arena_t *a);
void   jp_arena_destroy(jp_arena_t *a);
jp_arena_t *jp_arena_local(void);

#ifdef __cplusplus
}
#endif

#endif /* JPSYNC_POOL_H */
