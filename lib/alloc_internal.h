/*
 * alloc_internal.h - the allocator's types and the functions its files
 * share (alloc.c, segment.c, tcache.c, alloc_stats.c).
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
 *            freed mappings are kept for reuse (the huge cache, segment.c).
 *   heap     a thread's cache: per class, a LIFO list ("bin") of free blocks
 *            touched by that thread only, bounded in length.  Bins exchange
 *            blocks with the shared per-class span lists in batches, under
 *            the class lock.
 *   registry one byte per 4 MiB chunk of the 47-bit address space saying
 *            what starts there; it lets free() reject a pointer that is not
 *            ours before dereferencing anything.
 *
 * Lock order: a class lock (of one arena at a time), then the segment lock
 * (jp__seg_lock), then the heap lock.
 */
#ifndef JP_ALLOC_INTERNAL_H
#define JP_ALLOC_INTERNAL_H

#include "jp_internal.h"
#include "os.h"

#include <jpsync/alloc.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

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

/* ---- geometry ------------------------------------------------------ */

#define JP_SEG_SHIFT	22
#define JP_SEG_SIZE	((size_t)1 << JP_SEG_SHIFT)		/* 4 MiB */
#define JP_SEG_MASK	(JP_SEG_SIZE - 1)
#define JP_SLICE_SHIFT	16
#define JP_SLICE_SIZE	((size_t)1 << JP_SLICE_SHIFT)		/* 64 KiB */
#define JP_NSLICES	(JP_SEG_SIZE / JP_SLICE_SIZE)		/* 64 */
#define JP_SPAN_MAX_SLICES 16
#define JP_HUGE_HDR	4096	/* the header page before a huge block */

/* The registry covers user space of 47 bits: 2^25 chunks of 4 MiB. */
#define JP_REG_BITS	(47 - JP_SEG_SHIFT)
#define JP_REG_N	((size_t)1 << JP_REG_BITS)
enum {
	JP_REG_NONE = 0,
	JP_REG_SMALL = 1,	/* a segment of spans starts here */
	JP_REG_HUGE = 2,	/* a huge block's header starts here */
	JP_REG_HUGE_PREV = 3,	/* a huge block whose header starts 4 MiB before */
};

#define JP_NCLASSES	52
#define JP_MAX_SMALL	((size_t)256 << 10)	/* the largest class */
#define JP_LOOKUP_MAX	1024	/* classes of sizes up to this by table */

/* ---- globals, set once at start ---------------------------------- */

struct jp_alloc_globals {
	uintptr_t key;			/* double-free key */
	uint8_t nocache;		/* valgrind or check: caches of 0 */
	uint8_t check;			/* JPSYNC_CHECK */
	uint8_t vg;			/* running on memcheck */
	uint8_t anyvg;			/* running on any valgrind tool */
	uint64_t mag_size;
	uint64_t cache_n;
	uint64_t cache_bytes;		/* all threads' bins may grow by this */
	uint64_t madvise_min;
	_Atomic uint64_t mapped, peak_mapped, trimmed;
	_Atomic uint64_t huge_count, huge_bytes, huge_allocs, huge_frees;
	_Atomic uint64_t huge_peak;
};

extern struct jp_alloc_globals jp__ag;

/* ---- locks ------------------------------------------------------------
 *
 * The lock word is the holder's pthread_self() (0: free), set by the one
 * compare-and-swap that takes the lock and cleared by the one store that
 * releases it, so a fork handler that runs in a signal handler can tell,
 * at any instruction, whether the code it interrupted holds the lock (it
 * must not wait for it then).  Sleepers wait on a separate futex word,
 * seq, which the releaser bumps when it sees a sleeper.
 */
struct jp__lock {
	_Atomic uintptr_t owner;	/* pthread_self() of the holder, or 0 */
	_Atomic uint32_t waiters;	/* threads in the slow path */
	_Atomic uint32_t seq;		/* futex word: bumped by a releaser */
};

void jp__lock_slow(struct jp__lock *l, uintptr_t me);
void jp__unlock_wake(struct jp__lock *l);

static inline void jp__lock(struct jp__lock *l)
{
	uintptr_t z = 0, me = (uintptr_t)pthread_self();

	/* acquire: what the previous holder wrote is visible to us. */
	if (!atomic_compare_exchange_strong_explicit(&l->owner, &z, me,
			memory_order_acquire, memory_order_relaxed))
		jp__lock_slow(l, me);
	if (jp_unlikely(jp__ag.anyvg))
		JP_HB_AFTER(l);
}

static inline void jp__unlock(struct jp__lock *l)
{
	if (jp_unlikely(jp__ag.anyvg))
		JP_HB_BEFORE(l);
	/* seq_cst, not just release: the load of waiters below must not be
	 * ordered before this store (Dekker with jp__lock_slow). */
	atomic_store(&l->owner, 0);
	if (atomic_load(&l->waiters) != 0)
		jp__unlock_wake(l);
}

/* ---- segments and spans -------------------------------------------- */

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
	uint8_t arena;		/* whose lists it is on */
};

/*
 * What the fast path of jp_free reads of the span a slice belongs to, kept
 * per slice in the segment header (jp__span_publish), so that it is one
 * load from the address instead of two (slice -> span -> fields).
 */
struct jp_slice {
	uintptr_t nstart;	/* as in the span */
	uint64_t divc;
	uint64_t limit;		/* 0: no block starts in this slice's span */
	uint64_t binoff;
};

struct jp_segment {
	uint64_t magic;
	struct jp_segment *next, *prev;	/* list of segments (segment lock) */
	uint64_t used_bits;	/* slices in spans (bit 0: the header) */
	uint64_t dirty_bits;	/* free slices that still hold pages */
	/* The span of each slice (a dummy for free slices and the header). */
	struct jp_span *slice_span[JP_NSLICES];
	struct jp_slice slices[JP_NSLICES];	/* the same, for jp_free */
	struct jp_span spans[JP_NSLICES];
};

struct jp_huge {
	uint64_t magic;
	void *base;		/* the mapping */
	size_t map_size;
	size_t user_off;	/* the block is at base + user_off (an offset,
				 * not a pointer: see jp_span.nstart) */
	size_t usable;
};

#define JP_SEG_MAGIC	0x6a7073796e637365ULL
#define JP_HUGE_MAGIC	0x6a7073796e636875ULL

/* ---- size classes -------------------------------------------------- */

struct jp_class {		/* what a class is (set at start) */
	uint32_t bsize;
	uint32_t nslices;	/* per span */
	uint32_t nblocks;	/* per span */
	uint32_t cache_start;	/* a new bin's limit, in blocks */
	uint32_t cache_max;	/* the most a bin may grow to */
};

/*
 * The shared lists of a class, one set per arena.  Threads are spread over
 * JP_NARENAS arenas when their cache is made, so that threads refilling
 * and flushing the same class do not all queue on one lock.  A span
 * belongs to one arena; a block goes back to its span's arena, whichever
 * thread frees it.
 */
#define JP_NARENAS	8
/*
 * A chain of free blocks that a bin gave back whole, kept as it is so that
 * another bin of the arena refills from it in one step (tcmalloc's
 * transfer cache): a block a consumer thread frees reaches a producer with
 * no walk of its span's free list under the lock.  Its blocks still count
 * as used in their spans (and in used_blocks).
 */
#define JP_XFER_SLOTS	8
struct jp_chain {
	void *head;		/* linked through word 0, the n-th link NULL */
	uint32_t n;
};

struct jp_central {
	struct jp__lock lock;
	struct jp_span *spans;	/* spans with free blocks (or empty) */
	uint32_t empty_spans;	/* of them, entirely free */
	uint32_t nxfer;		/* chains in xfer */
	uint64_t xfer_blocks;	/* blocks in them */
	uint64_t used_blocks;	/* blocks out of spans */
	uint64_t peak_used_blocks;
	uint64_t nspans;	/* spans held */
	struct jp_chain xfer[JP_XFER_SLOTS];
} JP_ALIGNED_CL;

/* ---- thread caches --------------------------------------------------- */

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
	uint8_t arena;			/* where its bins refill and flush */
};

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

#define JP_CN_ALLOC	(((uint64_t)1 << 16) + 1)	/* one handed out */
#define JP_CN_CREDIT(cn)	((cn) & 0xffff)
#define JP_CN_NALLOC(cn)	((cn) >> 16)

/* ---- globals ------------------------------------------------------ */


extern struct jp_class jp__classes[JP_NCLASSES];
extern struct jp_central jp__central[JP_NARENAS][JP_NCLASSES];
extern const uint16_t jp__class_lookup[JP_LOOKUP_MAX + 1];	/* bin offsets */
extern uint8_t jp__registry[JP_REG_N];
extern struct jp_span jp__no_span;
extern struct jp_heap jp__empty_heap;
extern __thread struct jp_heap *jp__tls_heap
	__attribute__((tls_model("initial-exec")));

/*
 * The size class of n as a constant expression, so that the lookup table
 * (which the fast path of jp_alloc reads before any initialisation, so it
 * must not be written at run time) is built by the compiler from the same
 * formula as jp__size_class.  (n - 1) | 1: the same top bit, and never 0.
 */
#define JP_MSB_C(x)	(63 - __builtin_clzll((unsigned long long)(x)))
#define JP_SIZE_CLASS_C(n) \
	((n) <= 64 ? ((n) == 0 ? 0u : (unsigned)(((n) - 1) >> 4)) : \
	 (unsigned)(4 * (JP_MSB_C(((n) - 1) | 1) - 6) + \
		    (((n) - 1) >> (JP_MSB_C(((n) - 1) | 1) - 2))))

/* The class of a request of n bytes: 16 bytes apart up to 64, then four
 * per power of two (2^b < n <= 2^(b+1)). */
static inline uint32_t jp__size_class(size_t n)
{
	return JP_SIZE_CLASS_C(n);
}

static inline size_t jp__class_size(uint32_t cls)
{
	if (cls < 4)
		return 16 * (size_t)(cls + 1);
	return (size_t)(cls % 4 + 5) << (cls / 4 + 3);
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

/* "os.c" (the allocator's block at its end) */
int jp__os_resize(void *addr, size_t old_size, size_t new_size);
int jp__os_move(void *old_addr, size_t old_size, size_t new_size, void *dest);
int jp__os_dup_high(int fd, int min, uint64_t id[2]);	/* the alloc2 block */
int jp__os_fd_is(int fd, const uint64_t id[2]);

/* "alloc.c" */
void jp__alloc_init_slow(void);
extern _Atomic int jp__alloc_state;	/* 0 none, 1 running, 2 ready */

/* "segment.c" */
extern struct jp__lock jp__seg_lock;
/* Under a class lock; NULL when there is no room (and !may_map) or no
 * memory. */
struct jp_span *jp__span_alloc(uint32_t nslices, bool may_map);
void jp__span_release(struct jp_span *s);
void *jp__huge_alloc(size_t size, size_t align, bool zero);
size_t jp__huge_trim(void);	/* empties the huge cache */
void jp__huge_free(struct jp_huge *h);
struct jp_huge *jp__huge_of(const void *p);	/* NULL if not a huge block */
void *jp__huge_realloc(struct jp_huge *h, size_t size);
size_t jp__segment_trim(void);
void jp__mapped_add(size_t n);
void jp__mapped_sub(size_t n);

/* "tcache.c" */
struct jp_heap *jp__heap_get(void);	/* the caller's heap, created */
void *jp__alloc_slow(size_t size);
void *jp__class_alloc(struct jp_heap *h, uint32_t cls);
void jp__free_slow(void *p);
void jp__free_block(struct jp_heap *h, void *p, struct jp_span *s);
void jp__heap_flush(struct jp_heap *h);
bool jp__block_is_free(struct jp_heap *h, void *p, struct jp_span *s);
size_t jp__classes_trim(void);
void jp__tcache_init(void);
void jp__tcache_init_late(void);
void jp__atfork_prepare(void);
void jp__atfork_parent(void);
void jp__atfork_child(void);
extern struct jp__lock jp__heap_lock;
extern struct jp_heap *jp__heaps;
extern uint64_t jp__dead_alloc[JP_NCLASSES], jp__dead_free[JP_NCLASSES],
	jp__dead_miss[JP_NCLASSES];

/* "alloc_stats.c" */
void jp__stats_collect(struct jp_alloc_stats *st, uint64_t *class_miss);
void jp__stats_init(void);	/* at start: keep a copy of stderr */

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
		seg->slices[i].nstart = s->nstart;
		seg->slices[i].divc = s->divc;
		seg->slices[i].limit = s->limit;
		seg->slices[i].binoff = s->binoff;
	}
}

static inline uintptr_t jp__span_start(const struct jp_span *s)
{
	return -s->nstart;
}

static inline void *jp__huge_user(const struct jp_huge *h)
{
	return (char *)h->base + h->user_off;
}

/* The test of jp__is_block on its fields (the span's, or a slice's copy). */
static inline bool jp__block_test(uintptr_t nstart, uint64_t divc, uint64_t limit,
				  uintptr_t a)
{
	return (a + nstart) * divc < limit;
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

#endif /* JP_ALLOC_INTERNAL_H */
