/*
 * arena.c - jp_arena: a bump allocator for one thread, and one per thread.
 *
 * An arena is one demand-paged mapping: the header, then the bytes handed
 * out by moving a cursor.  There is no per-object free; reset moves the
 * cursor back.  The cursor is a plain variable: an arena belongs to one
 * thread at a time.  Sharing one cursor between threads with an atomic
 * fetch-and-add is correct but slow (every allocation fights over one cache
 * line; the reference measurement has it below plain malloc from two threads
 * on), so jp_arena_local() gives each thread an arena of its own instead.
 */
#include "base/jp_internal.h"
#include "base/os.h"
#include "base/thread_exit.h"

#include <jpsync/pool.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>

/* The size of each thread's jp_arena_local() arena (demand-paged). */
#define JP_ARENA_LOCAL_BYTES ((size_t)1 << 20)

struct jp_arena {
	unsigned char *base;
	size_t size;		/* bytes usable from base */
	size_t used;		/* the cursor */
	size_t map_bytes;
};

#define HDR ((sizeof(struct jp_arena) + JP_CACHELINE - 1) & ~(size_t)(JP_CACHELINE - 1))

JP_EXPORT jp_arena_t *jp_arena_create(size_t bytes)
{
	size_t page = jp__os_page_size(), total;
	struct jp_arena *a;
	void *m;

	if (bytes == 0 || bytes > SIZE_MAX / 2 - HDR - page) {
		errno = EINVAL;
		return NULL;
	}
	total = (HDR + bytes + page - 1) & ~(page - 1);
	if (jp__os_map(&m, total) != 0) {
		errno = ENOMEM;
		return NULL;
	}
	a = m;
	a->base = (unsigned char *)m + HDR;
	a->size = total - HDR;
	a->used = 0;
	a->map_bytes = total;
	return a;
}

JP_EXPORT void *jp_arena_alloc(jp_arena_t *a, size_t size, size_t align)
{
	uintptr_t cur, at;

	if (a == NULL || align == 0 || (align & (align - 1)) != 0) {
		errno = EINVAL;
		return NULL;
	}
	cur = (uintptr_t)a->base + a->used;
	at = (cur + align - 1) & ~(uintptr_t)(align - 1);
	if (at < cur || at - (uintptr_t)a->base > a->size ||
	    size > a->size - (at - (uintptr_t)a->base)) {
		errno = ENOMEM;
		return NULL;
	}
	a->used = at - (uintptr_t)a->base + size;
	return (void *)at;
}

JP_EXPORT void jp_arena_reset(jp_arena_t *a)
{
	if (a != NULL)
		a->used = 0;
}

JP_EXPORT void jp_arena_destroy(jp_arena_t *a)
{
	if (a != NULL)
		jp__os_unmap(a, a->map_bytes);
}

/* ---- one arena per thread ------------------------------------------------ */

static __thread jp_arena_t *local_arena __attribute__((tls_model("initial-exec")));

static void local_exit(void *a)
{
	local_arena = NULL;
	jp_arena_destroy(a);
}

JP_EXPORT jp_arena_t *jp_arena_local(void)
{
	jp_arena_t *a = local_arena;

	if (jp_likely(a != NULL))
		return a;
	a = jp_arena_create(JP_ARENA_LOCAL_BYTES);
	if (a == NULL)
		return NULL;
	if (jp__thread_exit_arm(JP__EXIT_ARENA, local_exit, a) != 0) {
		jp_arena_destroy(a);
		errno = ENOMEM;
		return NULL;
	}
	local_arena = a;
	return a;
}
