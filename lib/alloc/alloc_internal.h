/*
 * alloc_internal.h - the functions and globals the allocator's files
 * share, grouped by the file that defines them.  The types and the
 * geometry are in alloc_types.h, the lock in lock.h.
 *
 * Calls go one way:
 *
 *   alloc.c (public API, fast paths), alloc_init.c (start-up)
 *     -> check.c (JPSYNC_CHECK; check_fault.c, its fault handler)
 *     -> tcache.c (thread caches)
 *     -> central.c (shared per-class lists, transfer chains)
 *     -> segment.c, huge.c (where memory comes from; quarantine.c, check
 *        mode's freed huge blocks)
 *     -> os.c
 *
 * with sizeclass.c and lock.c as leaves anyone may call, alloc_fork.c
 * (the fork handlers) and alloc_stats.c (statistics) beside them,
 * reading each layer's state.
 */
#ifndef JP_ALLOC_INTERNAL_H
#define JP_ALLOC_INTERNAL_H

#include "alloc_types.h"
#include "base/os.h"

#include <jpsync/alloc.h>

#pragma GCC visibility push(hidden)	/* see alloc_types.h */

/* ---- "alloc_init.c" --------------------------------------------------- */

extern _Atomic int jp__alloc_state;	/* 0 none, 1 running, 2 ready */
void jp__alloc_init_slow(void);
/* Start the allocator unless this thread is starting it (alloc_fork.c). */
void jp__alloc_start_for_fork(void);

/* Make sure the allocator is set up (every path that can be the first). */
static inline void jp__alloc_ready(void)
{
	if (atomic_load_explicit(&jp__alloc_state, memory_order_acquire) != 2)
		jp__alloc_init_slow();
}

/* ---- "sizeclass.c" ---------------------------------------------------- */

extern struct jp_class jp__classes[JP_NCLASSES];
extern const uint16_t jp__class_lookup[JP_LOOKUP_MAX + 1];	/* bin offsets */
void jp__sizeclass_init(void);

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

/* Smallest class that holds size bytes aligned to align (<= 64 KiB), or
 * JP_NCLASSES.  Spans start at 64 KiB boundaries, so block k of a class
 * sits at k * bsize from one: aligned to the power of two that divides
 * bsize. */
static inline uint32_t jp__aligned_class(size_t size, size_t align)
{
	uint32_t cls = jp__size_class(size < align ? align : size);

	while (cls < JP_NCLASSES && (jp__class_size(cls) & (align - 1)) != 0)
		cls++;
	return cls;
}

/* ---- "check.c" -------------------------------------------------------- */

/*
 * JPSYNC_CHECK=1: every allocation goes here, off the fast paths (the
 * caches are off in check mode).  A finding prints one line and aborts,
 * or, when jp__check_hook is set, goes to the hook and the operation
 * carries on without the damaged block (for tests and fuzzers).
 */
struct jp_check_report {
	const char *what;	/* "overflow past the end", "double free", ... */
	const void *ptr;	/* the block (its user pointer) */
	size_t size;		/* its requested size; SIZE_MAX: unknown */
	long long first, last;	/* bytes changed, as offsets from ptr; first >
				 * last when there are none to name */
};
extern void (*jp__check_hook)(const struct jp_check_report *r);

/* A checked block of n bytes at alignment align (a power of two); zero:
 * its bytes are zero.  NULL with errno ENOMEM. */
void *jp__check_alloc(size_t n, size_t align, bool zero);
/* Check and free p (any pointer but NULL). */
void jp__check_free(void *p);
/* free_sized in check mode: size must be the size asked for (the last
 * realloc's, calloc's product), or it is reported; then the block is freed. */
void jp__check_free_sized(void *p, size_t size);
/* check_fault.c: install, once, the handler that names an access to a
 * quarantined huge block (at the first huge free). */
void jp__check_fault_install(void);
/* p's requested size (what is the misuse's name if p is not a block). */
size_t jp__check_usable(const void *p, const char *what);
/* realloc of p (not NULL) to m > 0 bytes. */
void *jp__check_realloc(void *p, size_t m);
/* Whether blk (a block of bs bytes) is live; its user's bytes at *user, *n
 * of them, allocated at stack id *site (the leak report's walk). */
bool jp__check_live(const unsigned char *blk, size_t bs, uintptr_t *user, size_t *n,
		    uint32_t *site);

/* ---- "tcache.c" ------------------------------------------------------- */

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
/* Is p a free block (in h's bin, on a chain or on its span's list)? */
bool jp__block_is_free(struct jp_heap *h, void *p, struct jp_span *s);

/* Free block b of a bin or a transfer chain has diff (not 0) between its
 * word 1 and the key: dies naming the damaged bytes of its words 0 and 1
 * (central.c). */
_Noreturn JP_COLD void jp__free_block_damaged(const void *b, uintptr_t diff);
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

	__asm__("xorq %2, %0" : "+m"(*w), "=@ccz"(zero) : "r"(jp__ag.key));
	return zero;
#else
	*w ^= jp__ag.key;
	return *w == 0;
#endif
}

/* Pop a block off bin b, or NULL when it is empty; dies on damage. */
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

/* ---- "prof.c" --------------------------------------------------------- */

extern struct jp__lock jp__prof_lock;
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

/* ---- "central.c" ------------------------------------------------------ */

extern struct jp_central jp__central[JP_NSHARDS][JP_NCLASSES];
extern unsigned jp__nshards;		/* in use */
void jp__central_init(void);
/*
 * Take up to want blocks of class cls from shard, linked through word 0
 * into *out (*last: the last block, whose link is garbage, or NULL when
 * the chain ends in a NULL link already).  A transfer chain of at most fit
 * blocks comes whole.  Returns the count, 0 when out of memory.
 */
uint32_t jp__central_take(unsigned shard, uint32_t cls, uint32_t want,
			  uint32_t fit, void **out, void **last);
/* Return the first n blocks of chain head to their spans; returns the
 * rest of the chain. */
void *jp__central_put(uint32_t cls, void *head, size_t n);
/* Keep the first n blocks of chain head whole as a transfer chain (all:
 * exactly n blocks ending in a NULL link); returns the rest, or head when
 * it was not kept. */
void *jp__central_keep(uint32_t cls, void *head, uint32_t n, bool all);
/* Is p on a transfer chain of its class, or on the free list of s? */
bool jp__central_holds(void *p, struct jp_span *s);
/* A thread's heap joins the shard with the fewest threads (returned), or
 * leaves its shard; the last to leave sends the shard's chains back to
 * their spans. */
unsigned jp__shard_join(void);
void jp__shard_leave(unsigned shard);
/* The live heaps of a shard now (a statistic: relaxed). */
unsigned jp__shard_threads(unsigned shard);
/* Send every chain back and give entirely free spans to their segments. */
size_t jp__central_trim(void);

/* ---- "segment.c" ------------------------------------------------------ */

extern uint8_t jp__registry[JP_REG_N];
extern struct jp_span jp__no_span;
extern struct jp__lock jp__seg_lock;
void jp__segment_init(void);
void jp__reg_set(uintptr_t a, uint8_t v);
/* jp__os_map_aligned, for memory the registry describes: a mapping
 * (partly) above 2^JP_VA_BITS is unmapped again and gives ENOMEM. */
int jp__map_registered(void **p, size_t size, size_t align);

/* Whether every 4 MiB chunk of [a, a + len) has a registry byte. */
static inline bool jp__reg_covers(uintptr_t a, size_t len)
{
	return len != 0 && a <= UINTPTR_MAX - (len - 1) &&
	       ((a + (len - 1)) >> JP_SEG_SHIFT) < JP_REG_N;
}
/* Under a class lock; NULL when there is no room (and !may_map) or no
 * memory. */
struct jp_span *jp__span_alloc(uint32_t nslices, bool may_map);
void jp__span_release(struct jp_span *s);
size_t jp__segment_trim(void);
/* Before a new mapping for a huge block: the dirty slices above the
 * budget go back first. */
void jp__segment_purge_before_map(void);
void jp__mapped_add(size_t n);
void jp__mapped_sub(size_t n);
void jp__trimmed_add(size_t n);
/* Every madvise that gives pages back goes through here, to be counted
 * (decommits, decommit_bytes in jp_alloc_stats). */
void jp__decommit(void *addr, size_t size);

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

/* ---- "huge.c" --------------------------------------------------------- */

extern struct jp__lock jp__huge_lock;
void jp__huge_init(void);
void *jp__huge_alloc(size_t size, size_t align, bool zero);
void jp__huge_free(struct jp_huge *h);
struct jp_huge *jp__huge_of(const void *p);	/* NULL if not a huge block */
/* Resize in place or by moving pages; NULL: the caller copies. */
void *jp__huge_realloc(struct jp_huge *h, size_t size);
size_t jp__huge_trim(void);	/* empties the huge cache */
/* ---- "quarantine.c" (check mode's freed huge blocks) ---- */
/* Huge block h, freed, its header still readable, is kept inaccessible. */
void jp__huge_quarantine(struct jp_huge *h);
/* A huge block freed lately, kept inaccessible (check mode's quarantine). */
struct jp_huge_freed {
	const void *user;	/* the pointer the program had */
	size_t req;		/* its requested size */
	uint32_t alloc_site, free_site;	/* stack ids (base/stack.h) */
};
/* Was p a huge block that was freed lately?  Its record into *f (may be
 * NULL). */
bool jp__huge_freed(const void *p, struct jp_huge_freed *f);
/* Does address a lie in the mapping of a huge block freed lately?  Without
 * a lock, for a signal handler (racy reads: a record being replaced may be
 * missed, never misread as another's, as the range is read first and
 * checked again last). */
bool jp__huge_freed_at(uintptr_t a, struct jp_huge_freed *f);
/* Freed huge blocks check mode could not make inaccessible (the stats). */
uint64_t jp__huge_unprotected(void);

static inline void *jp__huge_user(const struct jp_huge *h)
{
	return (char *)h->base + h->user_off;
}

/* ---- "alloc_fork.c" --------------------------------------------------- */

/* Register the fork handlers (once: at load, or at the start when
 * malloc comes first). */
void jp__fork_init(void);

/* ---- "alloc_stats.c" -------------------------------------------------- */

void jp__stats_collect(struct jp_alloc_stats *st, uint64_t *class_miss);
/* The same from the stats signal's handler (interrupted): false, and *st
 * partly filled, when the interrupted code holds a lock it needs. */
bool jp__stats_gather(struct jp_alloc_stats *st, uint64_t *class_miss, bool interrupted);
/* ---- "stats_table.c" -------------------------------------------------- */
/* The table into fd, as text or JSON (JP_STATS_TEXT, JP_STATS_JSON): 0 or
 * errno; interrupted, a one-line note when the figures cannot be had. */
int jp__stats_print(int fd, bool interrupted, int format);
/* Keep the counts of a heap whose thread exits (heap lock). */
void jp__stats_fold(const struct jp_heap *h);
void jp__stats_init(void);	/* at start: keep a copy of stderr */
/* Bytes out of the spans (blocks taken by bins) or in huge mappings grew
 * by delta (modulo 2^64: a decrease is a negative delta); the peak of the
 * sum follows.  Called where those change: refills and returns to the
 * spans (central.c), huge blocks (huge.c). */
void jp__live_add(uint64_t delta);

/* ---- "os.c" (the allocator's block at its end) ------------------------ */

/* Give the pages of [addr, addr + size) back and make it inaccessible (it
 * stays reserved). */
int jp__os_protect_none(void *addr, size_t size);
/* Make the range inaccessible (access false) or readable and writable
 * again, its pages kept. */
int jp__os_protect(void *addr, size_t size, bool access);
int jp__os_dup_high(int fd, int min, uint64_t id[2]);
int jp__os_fd_is(int fd, const uint64_t id[2]);

#pragma GCC visibility pop

#endif /* JP_ALLOC_INTERNAL_H */
