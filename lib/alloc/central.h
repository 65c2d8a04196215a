/*
 * central.h - what central.c owns: the shared per-class lists of each
 * shard (the spans with free blocks and the transfer chains), under one
 * lock per class and shard, and the shards threads join.
 *
 * Vocabulary:
 *   shard    one of JP_NSHARDS sets of shared per-class lists.  Threads
 *            are spread over the shards so that threads refilling and
 *            flushing the same class do not all queue on one lock.  (Not
 *            the public jp_arena, a bump allocator.)
 */
#ifndef JP_CENTRAL_H
#define JP_CENTRAL_H

#include "base/jp_internal.h"
#include "base/lock.h"
#include "sizeclass.h"
#include "segment.h"

#include <stdbool.h>

#pragma GCC visibility push(hidden)	/* see alloc_init.h */

#define JP_NSHARDS	8	/* at most; 4 per CPU are used */

/*
 * A chain of free blocks that a bin gave back whole, kept as it is so that
 * another bin of the shard refills from it in one step (tcmalloc's
 * transfer cache): a block a consumer thread frees reaches a producer with
 * no look at its span's free map under the lock.  Its blocks still count
 * as used in their spans (and in used_blocks).
 */
#define JP_XFER_SLOTS	8
struct jp_chain {
	void *head;		/* linked through word 0, the n-th link NULL */
	uint32_t n;
};

/* The shared lists of one class in one shard.  A span belongs to one
 * shard; a block goes back to its span's shard, whichever thread frees it.
 * A thread whose shard has no span of a class with room adopts one from a
 * shard no thread uses before it carves a new one (jp__span_shard). */
struct jp_central {
	struct jp__lock lock;
	struct jp_span *spans;	/* spans with free blocks (or empty) */
	uint32_t empty_spans;	/* of them, entirely free */
	uint32_t nxfer;		/* chains in xfer */
	uint64_t xfer_blocks;	/* blocks in them */
	uint64_t used_blocks;	/* blocks out of spans */
	uint64_t nspans;	/* spans held */
	struct jp_chain xfer[JP_XFER_SLOTS];
} JP_ALIGNED_CL;

extern struct jp_central jp__central[JP_NSHARDS][JP_NCLASSES];

/* Link span s into, or out of, the list of spans of k (its lock held). */
static inline void jp__span_link(struct jp_central *k, struct jp_span *s)
{
	s->prev = NULL;
	s->next = k->spans;
	if (k->spans != NULL)
		k->spans->prev = s;
	k->spans = s;
	s->in_list = 1;
}

static inline void jp__span_unlink(struct jp_central *k, struct jp_span *s)
{
	if (s->prev != NULL)
		s->prev->next = s->next;
	else
		k->spans = s->next;
	if (s->next != NULL)
		s->next->prev = s->prev;
	s->in_list = 0;
}

extern unsigned jp__nshards;		/* in use */
void jp__central_init(void);
/*
 * Take up to want blocks of class cls from shard, linked through word 0
 * into *out (*last: the last block, whose link is garbage, or NULL when
 * the chain ends in a NULL link already).  A transfer chain of at most fit
 * blocks comes whole.  Returns the count, 0 when out of memory.
 */
uint32_t jp__central_take(unsigned shard, uint32_t cls, uint32_t want,
			  uint32_t fit, void **out, void **last, uint32_t *credit);
/* Return the first n blocks of chain head to their spans; returns the
 * rest of the chain.  credit: the caller's thread cache's share of the
 * live bytes (jp__live_add_local), which both count through, or NULL. */
void *jp__central_put(uint32_t cls, void *head, size_t n, uint32_t *credit);
/* Keep the first n blocks of chain head whole as a transfer chain (all:
 * exactly n blocks ending in a NULL link); returns the rest, or head when
 * it was not kept. */
void *jp__central_keep(uint32_t cls, void *head, uint32_t n, bool all);
/* Is p on a transfer chain of its class, or free in the map of s? */
bool jp__central_holds(void *p, struct jp_span *s);
/* Send the transfer chains of shard a back to their spans. */
void jp__central_drain(unsigned a);

/* ---- the shards (shard.c) ---- */
/* Decide jp__nshards (from the CPU count); once, at start. */
void jp__shard_init(void);
/* A thread's heap joins the shard with the fewest threads (returned), or
 * leaves its shard; the last to leave sends the shard's chains back to
 * their spans. */
unsigned jp__shard_join(void);
void jp__shard_leave(unsigned shard);
/* The live heaps of a shard now (a hint, read relaxed). */
unsigned jp__shard_threads(unsigned shard);
/* Shard shard has no span of class cls with room (k, its lists, locked):
 * a span with room taken from a shard no thread uses and linked into k's
 * list, or NULL. */
struct jp_span *jp__span_adopt(struct jp_central *k, unsigned shard, uint32_t cls);
/* Send every chain back and give entirely free spans to their segments. */
size_t jp__central_trim(void);

/* Free block b of a bin or a transfer chain has diff (not 0) between its
 * word 1 and the key: dies naming the damaged bytes of its words 0 and 1. */
_Noreturn JP_COLD void jp__free_block_damaged(const void *b, uintptr_t diff);

#pragma GCC visibility pop

#endif /* JP_CENTRAL_H */
