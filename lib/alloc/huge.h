/*
 * huge.h - what huge.c owns: blocks above the largest class, each in a
 * mapping of its own with a header page at the start of the 4 MiB chunk it
 * begins in; the huge lock (taken by the cache of freed mappings kept for
 * reuse, huge_cache.h); and the counts of huge blocks, read by
 * alloc_stats.c and realloc.
 * (Check mode's quarantine of freed huge blocks is quarantine.c's, in
 * check.h.)
 */
#ifndef JP_HUGE_H
#define JP_HUGE_H

#include "base/jp_internal.h"
#include "base/lock.h"

#include <stdatomic.h>
#include <stdbool.h>

#pragma GCC visibility push(hidden)	/* see alloc_init.h */

/* The header before a huge block: 4 KiB, whatever the page size (with
 * bigger pages the block starts inside the mapping's first page). */
#define JP_HUGE_HDR	((size_t)4 << 10)

struct jp_huge {
	uint64_t magic;
	void *base;		/* the mapping */
	size_t map_size;
	size_t user_off;	/* the block is at base + user_off (an offset,
				 * not a pointer: see jp_span.nstart) */
	size_t usable;
	size_t req;		/* the requested size (check mode) */
	uint32_t alloc_site;	/* its allocation's stack id (check mode) */
	uint32_t free_site;	/* its free's, set just before (check mode) */
	uint8_t sampled;	/* in the heap profile (prof.c) */
	size_t dirty;		/* bytes from base that may be resident: the
				 * huge cache sheds no pages when it hands a
				 * mapping out, so more than the block's */
};

#define JP_HUGE_MAGIC	0x6a7073796e636875ULL

extern struct jp__lock jp__huge_lock;
void jp__huge_init(void);
void *jp__huge_alloc(size_t size, size_t align, bool zero);
void jp__huge_free(struct jp_huge *h);
struct jp_huge *jp__huge_of(const void *p);	/* NULL if not a huge block */
/* Resize in place or by moving pages; NULL: the caller copies. */
void *jp__huge_realloc(struct jp_huge *h, size_t size);
size_t jp__huge_trim(void);	/* empties the huge cache */

static inline void *jp__huge_user(const struct jp_huge *h)
{
	return (char *)h->base + h->user_off;
}

/* Huge blocks live and their mappings' bytes, and how many were allocated
 * and freed: updated by huge.c alone, read (relaxed) through this const
 * view. */
struct jp_huge_counts {
	_Atomic uint64_t count, bytes;
	_Atomic uint64_t allocs, frees;
};
extern const struct jp_huge_counts *const jp__huge_counts;

#pragma GCC visibility pop

#endif /* JP_HUGE_H */
