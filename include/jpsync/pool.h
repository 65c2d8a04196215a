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
