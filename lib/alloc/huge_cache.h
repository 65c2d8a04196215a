/*
 * huge_cache.h - what huge_cache.c owns: the huge cache, freed huge blocks'
 * mappings kept with their pages for huge.c's later blocks (taken whole,
 * split, grown or moved, or lending their pages to a block made of
 * several), and its bound.  Every function takes the huge lock
 * itself.
 */
#ifndef JP_HUGE_CACHE_H
#define JP_HUGE_CACHE_H

#include "base/jp_internal.h"
#include "segment.h"

#include <stdbool.h>
#include <stddef.h>

#pragma GCC visibility push(hidden)	/* see alloc_init.h */

/*
 * The head of every cached mapping, JP_HC_GUARD bytes (the block's header
 * page and its first 60 KiB), is inaccessible while it is cached, so that a
 * write after free there (a zero-fill of the block, a write to its first
 * fields) faults where it happens, as glibc's unmapped chunks do.  Only the
 * head: protecting a whole mapping costs the kernel a walk of its resident
 * pages at each free and each reuse (12% more CPU time in malloc-large's
 * loop); a head costs the same for any size.
 */
#define JP_HC_GUARD	((size_t)64 << 10)
/* A block of total bytes keeps the spare of its mapping beyond it up to
 * this; above, that spare goes back to the cache (4 MiB blocks and up:
 * none). */
#define JP_HC_TAIL(total)	((total) < JP_SEG_SIZE ? JP_SEG_SIZE : 0)

/* The segment boundary at or past total: where a cached mapping taken for
 * total bytes is split, its tail going back to the cache. */
static inline size_t jp__hcache_split_at(size_t total)
{
	return (total + JP_SEG_SIZE - 1) & ~(size_t)JP_SEG_MASK;
}

/* Take the smallest cached mapping that fits total bytes (split: one the
 * caller may split), or with smaller, when none does, the biggest smaller
 * one: its base (*size, and *res of it resident at most), or NULL. */
void *jp__hcache_take(size_t total, bool split, bool smaller, size_t *size, size_t *res);
/* Keep a mapping (res bytes of it resident at most); false: it does not
 * fit, the caller unmaps. */
bool jp__hcache_put(void *base, size_t size, size_t res);
/* Move a mapping's pages to a fresh 4 MiB-aligned mapping of total bytes:
 * 0, or an errno with *p untouched. */
int jp__hcache_move(void **p, size_t size, size_t total);
/* Unmap a piece that has left the cache, its pages counted as given back. */
void jp__hcache_unmap_piece(void *src, size_t len, size_t res);
/* Fill [at, end) with cached mappings' pages: the bytes filled from at. */
size_t jp__hcache_gather(char *at, char *end);
/* Unmap every cached mapping: the bytes that were resident. */
size_t jp__hcache_trim(void);

#pragma GCC visibility pop

#endif /* JP_HUGE_CACHE_H */
