/*
 * alloc_types.h - the allocator's geometry and types: a leaf that every
 * allocator file includes (the functions they share are declared in
 * alloc_internal.h, grouped by the file that defines them).
 *
 * Vocabulary:
 *   segment  4 MiB of address space aligned to 4 MiB.  Its first 64 KiB
 *            slice holds the segment header; the other 63 slices are
 *            handed out as spans.  A pointer finds its segment with a mask.
 *   slice    64 KiB, the unit in which a segment is divided.
 *   span     1 to 16 consecutive slices of one segment that hold blocks of
 *            one size class.  Its metadata lives in the segment header, so
 *            blocks carry no header: ptr -> segment -> slice -> span -> class.
 *   class    one of JP_NCLASSES block sizes, four per power of two, 16 bytes
 *            apart at least, all multiples of 16 (16 ... 256 KiB).
 *   huge     a block above the largest class: its own mapping, with a header
 *            page at the start of the 4 MiB chunk it begins in.  A few
 *            freed mappings are kept for reuse (the huge cache, huge.c).
 *   heap     a thread's cache (tcache.c): per class, a LIFO list ("bin") of
 *            free blocks touched by that thread only, bounded in length.
 *   shard    one of JP_NSHARDS sets of shared per-class lists (central.c):
 *            the spans with free blocks and the transfer chains.  Threads
 *            are spread over the shards so that threads refilling and
 *            flushing the same class do not all queue on one lock.  (Not
 *            the public jp_arena, a bump allocator.)
 *   registry one byte per 4 MiB chunk of the user address space
 *            (JP_VA_BITS) saying what starts there; it lets free() reject a pointer that is not
 *            ours before dereferencing anything (segment.c).
 */
#ifndef JP_ALLOC_TYPES_H
#define JP_ALLOC_TYPES_H

#include "base/jp_internal.h"
#include "base/lock.h"

#include <stdatomic.h>
#include <stdbool.h>

/* Hidden, so that the fast paths reach the globals directly, not through
 * the GOT (the library is built with -fvisibility=hidden, which covers
 * definitions only). */
#pragma GCC visibility push(hidden)

/* ---- geometry ------------------------------------------------------ */

#define JP_SEG_SHIFT	22
#define JP_SEG_SIZE	((size_t)1 << JP_SEG_SHIFT)		/* 4 MiB */
#define JP_SEG_MASK	(JP_SEG_SIZE - 1)
#define JP_SLICE_SHIFT	16
#define JP_SLICE_SIZE	((size_t)1 << JP_SLICE_SHIFT)		/* 64 KiB */
#define JP_NSLICES	(JP_SEG_SIZE / JP_SLICE_SIZE)		/* 64 */
#define JP_SPAN_MAX_SLICES 16
/* The header before a huge block: 4 KiB, whatever the page size (with
 * bigger pages the block starts inside the mapping's first page). */
#define JP_HUGE_HDR	((size_t)4 << 10)

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

#define JP_NCLASSES	52
#define JP_MAX_SMALL	((size_t)256 << 10)	/* the largest class */
#define JP_LOOKUP_MAX	1024	/* classes of sizes up to this by table */
#define JP_BIN_BLOCK_MAX ((size_t)32 << 10)	/* bigger blocks are not cached */
#define JP_NSHARDS	8	/* at most; 4 per CPU are used */

/* ---- globals, set once at start (alloc_init.c) ---------------------- */

struct jp_alloc_globals {
	uintptr_t key;			/* double-free key */
	uint8_t nocache;		/* memcheck, check or TSan: caches of 0 */
	uint8_t check;			/* JPSYNC_CHECK (or JPSYNC_LEAKS) */
	uint8_t leaks;			/* JPSYNC_LEAKS: the report at exit (leaks.c) */
	uint8_t free_sites;		/* check mode keeps the stacks of frees */
	uint8_t vg;			/* running on memcheck */
	uint8_t tsan;			/* TSan runs, this library not built for it */
	uint8_t prof;			/* JPSYNC_HEAP_PROFILE: sampling on (prof.c) */
	uint64_t prof_rate;		/* JPSYNC_HEAP_PROFILE_RATE */
	uint64_t prof_interval;		/* JPSYNC_HEAP_PROFILE_INTERVAL (0: none) */
	uint64_t mag_size;
	uint64_t cache_n;
	uint64_t cache_bytes;		/* all threads' bins may grow by this */
	uint64_t madvise_min;
	_Atomic uint64_t mapped, peak_mapped, trimmed;
	_Atomic uint64_t decommits, decommit_bytes;
	_Atomic uint64_t huge_count, huge_bytes, huge_allocs, huge_frees;
};

extern struct jp_alloc_globals jp__ag;

/* ---- memcheck ------------------------------------------------------- */

#if defined(HAVE_VALGRIND_MEMCHECK_H) && defined(HAVE_VALGRIND_HELGRIND_H) && \
	!defined(JP_NO_VALGRIND)
# define JP_HAVE_MEMCHECK 1
# include <valgrind/memcheck.h>
/* Each request is a dozen instructions even outside valgrind: only when
 * memcheck runs (jp__ag.vg, tested once at start). */
# define JP_VG_ONLY(req)	do { if (jp_unlikely(jp__ag.vg)) { req; } } while (0)
# define JP_VG_MALLOCLIKE(p, n, zeroed) \
	JP_VG_ONLY(VALGRIND_MALLOCLIKE_BLOCK(p, n, 0, zeroed))
# define JP_VG_FREELIKE(p)	JP_VG_ONLY(VALGRIND_FREELIKE_BLOCK(p, 0))
# define JP_VG_RESIZE(p, o, n)	JP_VG_ONLY(VALGRIND_RESIZEINPLACE_BLOCK(p, o, n, 0))
# define JP_VG_DEFINED(p, n)	JP_VG_ONLY(VALGRIND_MAKE_MEM_DEFINED(p, n))
# define JP_VG_NOACCESS(p, n)	JP_VG_ONLY(VALGRIND_MAKE_MEM_NOACCESS(p, n))
#else
# define JP_VG_MALLOCLIKE(p, n, zeroed) ((void)(p))
# define JP_VG_FREELIKE(p)	((void)(p))
# define JP_VG_RESIZE(p, o, n)	((void)(p))
# define JP_VG_DEFINED(p, n)	((void)(p))
# define JP_VG_NOACCESS(p, n)	((void)(p))
#endif

/*
 * Counters a thread updates on its own and other threads read for the
 * statistics: relaxed atomics under ThreadSanitizer, plain accesses
 * otherwise (an aligned 64-bit load or store does not tear on the targets
 * we build for, and a slightly stale count is fine in a statistic).
 */
#ifdef JP_TSAN
# define JP_CNT_LOAD(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)
# define JP_CNT_SET(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#else
# define JP_CNT_LOAD(x)		(x)
# define JP_CNT_SET(x, v)	((x) = (v))
#endif
#define JP_CNT_ADD(x, v)	JP_CNT_SET(x, JP_CNT_LOAD(x) + (v))

/* ---- segments and spans (segment.c) --------------------------------- */

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
	void *free;		/* freed blocks, linked through word 0 */
	uintptr_t bump;		/* next never-used block ... */
	uintptr_t bump_end;	/* ... up to here */
	uint32_t used;		/* blocks out of the span (caches and users) */
	uint32_t nblocks;
	struct jp_span *next, *prev;	/* in the class's list of spans */
	uint16_t slice;		/* first slice index */
	uint16_t nslices;
	uint8_t in_list;	/* linked in the class's list */
	uint8_t shard;		/* whose lists it is on */
	uint32_t nsampled;	/* its blocks in the heap profile (prof.c;
				 * under its lock) */
	/* A filter of those blocks' addresses (jp__prof_bit): a free whose
	 * bit is clear is not sampled.  Set under the profile's lock,
	 * cleared with the last sample; read relaxed by free_slow. */
	uint64_t sampled_mask;
};

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
	struct jp_span spans[JP_NSLICES];
};

#define JP_SEG_MAGIC	0x6a7073796e637365ULL

/* ---- huge blocks (huge.c) ------------------------------------------- */

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

/* ---- size classes (sizeclass.c) ------------------------------------- */

struct jp_class {		/* what a class is (set at start) */
	uint32_t bsize;
	uint32_t nslices;	/* per span */
	uint32_t nblocks;	/* per span */
};

/* ---- shared per-class lists (central.c) ----------------------------- */

/*
 * A chain of free blocks that a bin gave back whole, kept as it is so that
 * another bin of the shard refills from it in one step (tcmalloc's
 * transfer cache): a block a consumer thread frees reaches a producer with
 * no walk of its span's free list under the lock.  Its blocks still count
 * as used in their spans (and in used_blocks).
 */
#define JP_XFER_SLOTS	8
struct jp_chain {
	void *head;		/* linked through word 0, the n-th link NULL */
	uint32_t n;
};

/* The shared lists of one class in one shard.  A span belongs to one
 * shard; a block goes back to its span's shard, whichever thread frees it. */
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

/* ---- thread caches (tcache.c) --------------------------------------- */

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

struct jp_heap {
	struct jp_bin bins[JP_NCLASSES];	/* first: bin offsets are heap offsets */
	uint64_t nflush[JP_NCLASSES];	/* blocks sent back to the class */
	uint64_t nmiss[JP_NCLASSES];	/* refills */
	struct jp_heap *next, *prev;	/* all heaps (heap lock) */
	uint64_t grown;			/* bytes the bins grew above their start */
	uint8_t live;
	uint8_t is_empty;		/* the static empty heap */
	uint8_t shard;			/* where its bins refill and flush */
};

#define JP_CN_ALLOC	(((uint64_t)1 << 16) + 1)	/* one handed out */
#define JP_CN_CREDIT(cn)	((cn) & 0xffff)
#define JP_CN_NALLOC(cn)	((cn) >> 16)

#pragma GCC visibility pop

#endif /* JP_ALLOC_TYPES_H */
