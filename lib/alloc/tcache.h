/*
 * tcache.h - what tcache.c owns: the thread caches ("heaps"), one per
 * thread, each a bin of free blocks per size class; the list of heaps and
 * its lock; and the inline pop of a bin that jp_alloc's fast path is made
 * of (alloc.c).
 *
 * Vocabulary:
 *   heap     a thread's cache: per class, a LIFO list ("bin") of free
 *            blocks touched by that thread only, bounded in length.
 */
#ifndef JP_TCACHE_H
#define JP_TCACHE_H

#include "alloc_init.h"
#include "central.h"
#include "counter.h"
#include "prof.h"
#include "sizeclass.h"

#include <stdbool.h>

#pragma GCC visibility push(hidden)	/* see alloc_init.h */

struct jp_span;

struct jp_bin {
	void *head;		/* free blocks, linked through word 0 */
	/* Bits 0-15: the credit, how many more blocks the bin may take
	 * (max - length; JPSYNC_CACHE_N is at most 4096); bits 16-63:
	 * blocks handed out.  One word, so that an allocation updates both
	 * with one add. */
	uint64_t cn;
	uint32_t max;		/* the bin's limit now (see bin_overflow) */
	uint32_t dry;		/* 1: ran dry since its last overflow */
	uint64_t nalloc_hi;	/* handed out, folded from cn (48-bit wrap) */
	uint64_t nrefill;	/* blocks brought in from the class */
};
_Static_assert(sizeof(struct jp_bin) == JP_BIN_BYTES, "sizeclass.h's bin size");

struct jp_heap {
	struct jp_bin bins[JP_NCLASSES];	/* first: bin offsets are heap offsets */
	uint64_t nflush[JP_NCLASSES];	/* blocks sent back to the class */
	uint64_t nmiss[JP_NCLASSES];	/* refills */
	struct jp_heap *next, *prev;	/* all heaps (heap lock) */
	uint64_t grown;			/* bytes the bins grew above their start */
	uint8_t live;
	uint8_t is_empty;		/* the static empty heap */
	uint8_t shard;			/* where its bins refill and flush */
	uint32_t live_credit;		/* see jp__live_add_local */
};

#define JP_CN_ALLOC	(((uint64_t)1 << 16) + 1)	/* one handed out */
#define JP_CN_CREDIT(cn)	((cn) & 0xffff)
#define JP_CN_NALLOC(cn)	((cn) >> 16)

extern __thread struct jp_heap *jp__tls_heap
	__attribute__((tls_model("initial-exec")));
extern struct jp_heap jp__empty_heap;
extern struct jp__lock jp__heap_lock;
extern struct jp_heap *jp__heaps;	/* live heaps (heap lock) */
void jp__tcache_init(void);
void jp__tcache_init_late(void);	/* once the allocator works */
/* The caller's heap, created on first use; NULL when out of memory. */
struct jp_heap *jp__heap_get(void);
/* A block of class cls for heap h: from its bin, else a refill. */
void *jp__class_alloc(struct jp_heap *h, uint32_t cls);
/* Free a valid small block p of span s into heap h (NULL: no heap). */
void jp__free_block(struct jp_heap *h, void *p, struct jp_span *s);
void jp__heap_flush(struct jp_heap *h);
/* Is p a free block (in h's bin, on a chain or free in its span)? */
bool jp__block_is_free(struct jp_heap *h, void *p, struct jp_span *s);
/* For the statistics (heap lock held): what bin c of live heap h handed
 * out and took back, returning its length; the same counts summed over
 * the heaps whose threads exited. */
uint64_t jp__bin_counts(const struct jp_heap *h, uint32_t c,
			uint64_t *nalloc, uint64_t *nfree);
void jp__heap_dead_counts(uint32_t c, uint64_t *nalloc, uint64_t *nfree,
			  uint64_t *nmiss);

/*
 * Every block in a bin holds the double-free key in its word 1 (a free
 * writes it, a refill brings in only blocks that have it), and the pop
 * clears it.  This does both at once: word 1 ^= key, true when that left
 * 0.  Anything else is damage (an overflow that ran over the free block,
 * a write after free), found before the block's link is followed.  On
 * x86-64, one xor into memory whose flags are the answer: the pop costs
 * one more instruction than a plain store of 0 (and a load of the key).
 */
static inline bool jp__bin_key_clear(void *blk)
{
	uintptr_t *w = (uintptr_t *)blk + 1;
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
	bool zero;

	__asm__("xorq %2, %0" : "+m"(*w), "=@ccz"(zero) : "r"(jp__settings.key));
	return zero;
#else
	*w ^= jp__settings.key;
	return *w == 0;
#endif
}

/*
 * Add add to the bin's count word; true when it carried out of bit 63:
 * the heap profile's countdown ran out and this block is sampled
 * (prof.c arms the count; the carry never happens with sampling off, as
 * the count is folded long before).
 */
static inline bool jp__cn_add(struct jp_bin *b, uint64_t add)
{
#if defined(__x86_64__) && !defined(JP_TSAN) && \
	(defined(__clang__) ? __clang_major__ >= 11 : __GNUC__ >= 11)
	/* The add to memory the compiler emits for the plain count, and its
	 * carry: one instruction more (the builtin below loads, adds, stores
	 * and branches: three more, callgrind counts). */
	__asm__ goto("addq %1, %0\n\tjc %l[carried]" : "+m"(b->cn) : "er"(add) : "cc" : carried);
	return false;
carried:
	return true;
#else
	uint64_t cn;
	bool carry = __builtin_add_overflow(JP_CNT_LOAD(b->cn), add, &cn);

	JP_CNT_SET(b->cn, cn);
	return carry;
#endif
}

/* Pop a block off bin b, or NULL when it is empty; dies on damage. */
static inline void *jp__bin_pop(struct jp_heap *h, struct jp_bin *b)
{
	void **blk = b->head;

	if (jp_likely(blk != NULL)) {
		if (jp_unlikely(!jp__bin_key_clear(blk)))
			jp__free_block_damaged(blk, ((uintptr_t *)blk)[1]);
		b->head = blk[0];
		if (jp_unlikely(jp__cn_add(b, JP_CN_ALLOC)))
			return jp__prof_bin_due(h, b, blk);
	}
	return blk;
}

#pragma GCC visibility pop

#endif /* JP_TCACHE_H */
