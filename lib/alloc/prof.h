/*
 * prof.h - what prof.c owns: the heap profile (JPSYNC_HEAP_PROFILE), its
 * sampling countdowns in the bins, its samples and their tables' locks.  The
 * allocation and free paths call in here only when a sample is due or a
 * span holds sampled blocks (see prof.c).
 */
#ifndef JP_PROF_H
#define JP_PROF_H

#include "base/jp_internal.h"
#include "base/lock.h"

#include <stdbool.h>

#pragma GCC visibility push(hidden)	/* see alloc_init.h */

struct jp_heap;
struct jp_bin;
struct jp_span;

/* The samples' tables, one per shard of the allocator (prof.c), each
 * with its lock: a leaf; the fork handlers take them last, in index
 * order.  jp__prof_init readies the locks, at start. */
#define JP_PROF_TABS	8
void jp__prof_init(void);
struct jp__lock *jp__prof_lock_at(unsigned i);
/* Set b's count so that it carries at the next sampled block of cls. */
void jp__prof_bin_arm(struct jp_bin *b, uint32_t cls);
/* The block p of bin b of heap h (this thread's) is sampled: record it,
 * re-arm; returns p. */
JP_COLD void *jp__prof_bin_due(struct jp_heap *h, struct jp_bin *b, void *p);
/* A huge block of usable bytes was allocated (sampling on): true when
 * it is sampled (its header's sampled flag, for its free). */
bool jp__prof_huge(void *p, uint64_t usable);
/* The bit of block address a in its span's sampled_mask. */
static inline uint64_t jp__prof_bit(uintptr_t a)
{
	return (uint64_t)1 << ((uint64_t)(a >> 4) * 0x9e3779b97f4a7c15ULL >> 58);
}
/* p (of span s, NULL for a huge block) is being freed: drop its sample. */
void jp__prof_free(void *p, struct jp_span *s);
/* The stats signal: a profile, if sampling is on (async-signal-safe). */
void jp__prof_on_signal(void);
/* The sampler, for the unit test: -ln(u) of u = r / 2^64, and an interval
 * of mean bytes drawn from the generator state. */
double jp__prof_exp1(uint64_t r);
uint64_t jp__prof_interval(uint64_t *state, uint64_t mean);
/* An interval of the rate's mean, from this thread's generator. */
uint64_t jp__prof_draw(void);
/* The samples live now, for the unit test. */
size_t jp__prof_nlive(void);

#pragma GCC visibility pop

#endif /* JP_PROF_H */
