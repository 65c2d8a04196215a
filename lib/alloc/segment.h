/*
 * segment.h - what segment.c owns: the geometry of segments, slices and
 * spans, their structures, the registry, the segment lock, and the
 * counts of memory mapped from and given back to the OS (which huge.c
 * updates through the functions here too); with the inline lookups from
 * an address to its segment, span and slice that the fast paths use.
 *
 * Vocabulary:
 *   segment  4 MiB of address space aligned to 4 MiB.  Its first 64 KiB
 *            slice holds the segment header; the other 63 slices are
 *            handed out as spans.  A pointer finds its segment with a mask.
 *   slice    64 KiB, the unit in which a segment is divided.
 *   span     1 to 16 consecutive slices of one segment that hold blocks of
 *            one size class.  Its metadata lives in the segment header, so
 *            blocks carry no header: ptr -> segment -> slice -> span -> class.
 *   registry one byte per 4 MiB chunk of the user address space
 *            (JP_VA_BITS) saying what starts there; it lets free() reject a
 *            pointer that is not ours before dereferencing anything.
 */
#ifndef JP_SEGMENT_H
#define JP_SEGMENT_H

#include "base/jp_internal.h"
#include "base/lock.h"

#include <stdatomic.h>
#include <stdbool.h>

#pragma GCC visibility push(hidden)	/* see alloc_init.h */

/* ---- geometry ------------------------------------------------------ */

#define JP_SEG_SHIFT	22
#define JP_SEG_SIZE	((size_t)1 << JP_SEG_SHIFT)		/* 4 MiB */
#define JP_SEG_MASK	(JP_SEG_SIZE - 1)
#define JP_SLICE_SHIFT	16
#define JP_SLICE_SIZE	((size_t)1 << JP_SLICE_SHIFT)		/* 64 KiB */
#define JP_NSLICES	(JP_SEG_SIZE / JP_SLICE_SIZE)		/* 64 */
#define JP_SPAN_MAX_SLICES 16

/*
 * JP_VA_BITS: the user address width of the target, as far as mappings
 * made without an address hint go (the allocator gives none): the kernel
 * places those below 2^47 on x86-64 (5-level paging only above a hint),
 * ppc64 (128 TiB) and riscv64 (sv48), below 2^48 on arm64 (52 bits only
 * above a hint) and below 2^42 on s390x (room to 47 here, for no more
 * cost: the registry's pages are touched only where mappings are).  Other
 * 64-bit targets get 48; 32-bit targets the whole space.  The registry has
 * one byte per 4 MiB chunk below that: 1 KiB on 32-bit, 32 MiB at 47 bits,
 * 64 MiB at 48, of which only the pages for addresses in use are touched.
 * A mapping the kernel places above is given back, ENOMEM
 * (jp__map_registered): never a registry write out of bounds.
 */
#if UINTPTR_MAX <= 0xffffffffu
# define JP_VA_BITS	32
#elif defined(__x86_64__) || defined(__powerpc64__) || defined(__s390x__) || \
	(defined(__riscv) && __riscv_xlen == 64)
# define JP_VA_BITS	47
#else
# define JP_VA_BITS	48
#endif
#define JP_REG_BITS	(JP_VA_BITS - JP_SEG_SHIFT)
#define JP_REG_N	((size_t)1 << JP_REG_BITS)
/* The largest request: under half the address space (PTRDIFF_MAX on
 * 32-bit targets, as glibc; 64 TiB at 47 bits), a size the kernel could
 * never map anyway. */
#define JP_ALLOC_MAX	(((size_t)1 << (JP_VA_BITS - 1)) - 1)
enum {
	JP_REG_NONE = 0,
	JP_REG_SMALL = 1,	/* a segment of spans starts here */
	JP_REG_HUGE = 2,	/* a huge block's header starts here */
	JP_REG_HUGE_PREV = 3,	/* a huge block whose header starts 4 MiB before */
};

/* ---- segments, spans and slices ------------------------------------- */

struct jp_span {
	/* What free() reads, in the first cache line. */
	/* Minus the address of block 0: not a pointer, so that memcheck's
	 * leak scan does not take the segment header for a reference to the
	 * block (a lost block 0 must be "definitely lost"). */
	uintptr_t nstart;
	uint64_t limit;		/* see jp__is_block */
	uint64_t divc;		/* see jp__is_block */
	uint32_t binoff;	/* cls * sizeof(struct jp_bin) */
	uint32_t bsize;
	uint32_t cls;		/* size class */
	/* The rest is under the class lock. */
	uint32_t nfree;		/* blocks set in its free map (central.c) */
	uint32_t scan;		/* no free-map word below this has a bit set */
	uintptr_t bump;		/* next never-used block ... */
	uintptr_t bump_end;	/* ... up to here */
	uint32_t used;		/* blocks out of the span (caches and users) */
	uint32_t nblocks;
	struct jp_span *next, *prev;	/* in the class's list of spans */
	uint16_t slice;		/* first slice index */
	uint16_t nslices;
	uint8_t in_list;	/* linked in the class's list */
	uint8_t shard;		/* whose lists it is on (jp__span_shard) */
	uint8_t prof_tab;	/* the heap profile's table of its samples:
				 * the shard it was made for (prof.c) */
	uint32_t nsampled;	/* its blocks in the heap profile (prof.c;
				 * under its profile table's lock) */
	/* A filter of those blocks' addresses (jp__prof_bit): a free whose
	 * bit is clear is not sampled.  Set under its profile table's lock,
	 * cleared with the last sample; read relaxed by free_generic. */
	uint64_t sampled_mask;
};

/*
 * The shard whose lists and lock a span is under.  It changes only when a
 * thread adopts the span from a shard no thread uses, with the class locks
 * of both shards held (shard.c); so it is read relaxed as a hint without
 * a lock, and is final while the lock of the shard it names is held.
 */
static inline unsigned jp__span_shard(const struct jp_span *s)
{
	return __atomic_load_n(&s->shard, __ATOMIC_RELAXED);
}

/*
 * What the fast path of jp_free reads of the span a slice belongs to, kept
 * per slice in the segment header (jp__span_publish), so that it is one
 * load from the address instead of two (slice -> span -> fields).
 */
struct jp_slice {
	/* The span's nstart, its low 32 bits: a pointer into the span is
	 * less than 1 MiB above block 0, so its offset is the 32-bit sum
	 * (jp__slice_block_test). */
	uint32_t nstart32;
	uint32_t binoff;
	uint64_t divc;
	uint64_t limit;		/* 0: no block starts in this slice's span */
	/* For jp_free_sized, 64 bits wide so that the size (a size_t) is
	 * compared with it in memory: one instruction, not a load and a
	 * compare. */
	uint64_t bsize;
};

#define JP_FREEMAP_WORDS	(JP_SLICE_SIZE / 16 / 64)

struct jp_segment {
	uint64_t magic;
	struct jp_segment *next, *prev;	/* list of segments (segment lock) */
	uint64_t used_bits;	/* slices in spans (bit 0: the header) */
	uint64_t dirty_bits;	/* free slices that still hold pages */
	uint64_t old_bits;	/* of them, dirty at the last purge tick */
	uint8_t empty_old;	/* empty at the last purge tick */
	/* The span of each slice (a dummy for free slices and the header). */
	struct jp_span *slice_span[JP_NSLICES];
	struct jp_slice slices[JP_NSLICES];	/* the same, for jp_free */
	/* Sampled blocks (heap profile) that start in each slice: while
	 * not 0, the slice's limit is 0 and its frees take the slow path
	 * (prof.c; under the lock of their span's profile table). */
	uint16_t prof_nsampled[JP_NSLICES];
	struct jp_span spans[JP_NSLICES];
	/* The free blocks of the span that starts at each slice, a bit per
	 * block (central.c; under the span's class lock).  A span has at
	 * most JP_SLICE_SIZE / 16 blocks: bigger blocks span more slices. */
	uint64_t freemap[JP_NSLICES][JP_FREEMAP_WORDS] JP_ALIGNED_CL;
};

_Static_assert(sizeof(struct jp_segment) <= JP_SLICE_SIZE,
	       "a segment's header fits in its first slice");

#define JP_SEG_MAGIC	0x6a7073796e637365ULL

extern uint8_t jp__registry[JP_REG_N];
extern struct jp_span jp__no_span;
extern struct jp__lock jp__seg_lock;
void jp__segment_init(void);
void jp__reg_set(uintptr_t a, uint8_t v);
/* jp__os_map_aligned, for memory the registry describes: a mapping
 * (partly) above 2^JP_VA_BITS is unmapped again and gives ENOMEM. */
int jp__map_registered(void **p, size_t size, size_t align);

/* Under a class lock; NULL when there is no room (and !may_map) or no
 * memory. */
struct jp_span *jp__span_alloc(uint32_t nslices, bool may_map);
void jp__span_release(struct jp_span *s);
size_t jp__segment_trim(void);
/* Before a new mapping for a huge block: the dirty slices above the
 * budget go back first. */
void jp__segment_purge_before_map(void);

/* ---- memory mapped and given back ----------------------------------- */

/*
 * Counted by the functions below, where segments and huge mappings are
 * made, unmapped and decommitted; read (relaxed: statistics, limits) by
 * alloc_stats.c, the huge cache's limit and jp_alloc_trim through the
 * const view jp__map_counts.
 */
struct jp_map_counts {
	_Atomic uint64_t mapped, peak_mapped;	/* bytes */
	_Atomic uint64_t trimmed;	/* bytes given back by a trim */
	_Atomic uint64_t decommits, decommit_bytes;	/* madvise calls */
};
extern const struct jp_map_counts *const jp__map_counts;
void jp__mapped_add(size_t n);
void jp__mapped_sub(size_t n);
void jp__trimmed_add(size_t n);
/* Every madvise that gives pages back goes through here, to be counted
 * (decommits, decommit_bytes in jp_alloc_stats). */
void jp__decommit(void *addr, size_t size);
/* Bytes out of the spans (blocks taken by bins) or in huge mappings grew
 * by delta (modulo 2^64: a decrease is a negative delta); the peak of the
 * sum follows.  Called where those change: refills and returns to the
 * spans (central.c), huge blocks (huge.c); the peak is read by the
 * statistics. */
void jp__live_add(uint64_t delta);
uint64_t jp__live_peak(void);

/*
 * A thread's share of the live bytes, counted in steps: every thread that
 * moves blocks in and out of the spans adding to one shared counter made
 * its cache line the hottest of a program whose threads hand blocks to
 * each other (xmalloc-test ran 16% faster without it).  A thread cache keeps a
 * credit, bytes already added to the live counter but not yet out of the
 * spans, between 0 and 2 * JP_LIVE_STEP: a refill within it touches
 * nothing shared, and the counter moves by at least a step.  The counter
 * is thus the bytes out of the spans plus every live thread cache's
 * credit, never less; jp__live_flush gives a cache's credit back when its
 * thread exits.  credit NULL: no thread cache, the counter itself.
 */
#define JP_LIVE_STEP	((uint64_t)64 << 10)
static inline void jp__live_add_local(uint32_t *credit, uint64_t delta)
{
	uint64_t c;

	if (credit == NULL) {
		jp__live_add(delta);
		return;
	}
	c = *credit;
	if ((int64_t)delta >= 0) {
		if (c >= delta) {
			*credit = (uint32_t)(c - delta);
			return;
		}
		jp__live_add(delta - c + JP_LIVE_STEP);
		*credit = (uint32_t)JP_LIVE_STEP;
	} else {
		c -= delta;	/* plus the bytes back in the spans */
		if (c > 2 * JP_LIVE_STEP) {
			jp__live_add(-(c - JP_LIVE_STEP));
			c = JP_LIVE_STEP;
		}
		*credit = (uint32_t)c;	/* at most 2 * JP_LIVE_STEP */
	}
}

static inline void jp__live_flush(uint32_t *credit)
{
	if (*credit != 0)
		jp__live_add(-(uint64_t)*credit);
	*credit = 0;
}

/* ---- the lookups ---------------------------------------------------- */

/* Whether every 4 MiB chunk of [a, a + len) has a registry byte. */
static inline bool jp__reg_covers(uintptr_t a, size_t len)
{
	return len != 0 && a <= UINTPTR_MAX - (len - 1) &&
	       ((a + (len - 1)) >> JP_SEG_SHIFT) < JP_REG_N;
}

static inline unsigned jp__reg_get(uintptr_t a)
{
	/* relaxed: a block's segment is registered before the block is
	 * handed out, and the block reaches another thread only through
	 * synchronisation of its own. */
#ifdef JP_TSAN
	return __atomic_load_n(&jp__registry[a >> JP_SEG_SHIFT], __ATOMIC_RELAXED);
#else
	/* A byte: a plain load is as good as a relaxed one, and lets the
	 * compiler fold it into the compare of the fast path. */
	return jp__registry[a >> JP_SEG_SHIFT];
#endif
}

/* The segment of a pointer whose chunk the registry marks small; dies when
 * its header is damaged (an overflow from the memory below it): the slow
 * paths look before they follow the header's pointers. */
static inline struct jp_segment *jp__segment_checked(uintptr_t a)
{
	struct jp_segment *seg = (struct jp_segment *)(a & ~(uintptr_t)JP_SEG_MASK);

	if (jp_unlikely(seg->magic != JP_SEG_MAGIC))
		jp__die_block("damaged segment header", seg, SIZE_MAX, 0, 7,
			      "an overflow from the memory below it");
	return seg;
}

/* Span of a pointer known to be in a small segment. */
static inline struct jp_span *jp__span_of(uintptr_t a)
{
	struct jp_segment *seg = (struct jp_segment *)(a & ~(uintptr_t)JP_SEG_MASK);

	return seg->slice_span[(a >> JP_SLICE_SHIFT) & (JP_NSLICES - 1)];
}

/* The fast-path view of the span of a pointer known to be in a segment. */
static inline const struct jp_slice *jp__slice_of(uintptr_t a)
{
	struct jp_segment *seg = (struct jp_segment *)(a & ~(uintptr_t)JP_SEG_MASK);

	return &seg->slices[(a >> JP_SLICE_SHIFT) & (JP_NSLICES - 1)];
}

/* Copy the fields of span s that jp_free reads into its slices (under the
 * lock that set them: its class's, or the segment lock). */
static inline void jp__span_publish(const struct jp_span *s)
{
	struct jp_segment *seg = (struct jp_segment *)((uintptr_t)s & ~(uintptr_t)JP_SEG_MASK);

	for (unsigned i = s->slice; i < (unsigned)s->slice + s->nslices; i++) {
		seg->slices[i].nstart32 = (uint32_t)s->nstart;
		seg->slices[i].divc = s->divc;
		seg->slices[i].limit = s->limit;
		seg->slices[i].binoff = s->binoff;
		seg->slices[i].bsize = s->bsize;
	}
}

static inline uintptr_t jp__span_start(const struct jp_span *s)
{
	return -s->nstart;
}

/* The test of jp__is_block on its fields (the span's, or a slice's copy). */
static inline bool jp__block_test(uintptr_t nstart, uint64_t divc, uint64_t limit,
				  uintptr_t a)
{
	return (a + nstart) * divc < limit;
}

/* jp__block_test on a slice's copy: the offset of a from block 0 is below
 * 1 MiB (a is in the span), so its low 32 bits are the whole of it. */
static inline bool jp__slice_block_test(const struct jp_slice *sl, uintptr_t a)
{
	return (uint64_t)(uint32_t)((uint32_t)a + sl->nstart32) * sl->divc < sl->limit;
}

/* True when a is the start of a block of span s. */
static inline bool jp__is_block(const struct jp_span *s, uintptr_t a)
{
	/*
	 * One multiplication tests both "a multiple of bsize" and "below the
	 * last block" (after Lemire, Kaser and Kurz, "Faster remainder by
	 * direct computation").  With c = floor((2^64-1)/d) + 2 and
	 * e = c*d - 2^64 (d <= e < 2d), the product m = off*c mod 2^64 is
	 * k*e for off = k*d, and at least c (far above any k*e of a span)
	 * for any other off < 2^32; so off is block k < nblocks exactly
	 * when m < nblocks*e, stored as limit.  Spans are at most 1 MiB and
	 * a >= start (the slice belongs to the span), so off < 2^32.  Free
	 * slices point to a span with limit 0: nothing is a block there.
	 */
	return jp__block_test(s->nstart, s->divc, s->limit, a);
}

#pragma GCC visibility pop

#endif /* JP_SEGMENT_H */
