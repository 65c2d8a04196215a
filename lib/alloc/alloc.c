/*
 * alloc.c - the public allocation functions, their fast paths and the
 * checks of every free (start-up is in alloc_init.c).
 *
 * Fast paths (no lock, no atomic, no call):
 *   jp_alloc(n <= 1 KiB): class from a table, pop the thread's bin; up to
 *   32 KiB (the biggest blocks bins keep), the class by its formula.  The
 *   pop clears the block's key and checks that it was there, in one
 *   instruction on x86-64 (jp__bin_key_clear): damage found there is
 *   reported (bin_damaged) before the block's link is followed.
 *   jp_free(p): registry byte of p's 4 MiB chunk says "segment"; the span
 *   of p's slice says p is the start of a block (offset below the span's
 *   limit and a multiple of the block size, by one multiplication); the
 *   block's second word is not the double-free key; the bin has room: push.
 * Everything else (an empty or full bin, a first call in a thread, sizes
 * above 32 KiB, huge blocks, misuse) goes to alloc_generic and
 * free_generic here, and from there to the thread cache (tcache.c) or the
 * huge blocks (huge.c).  With JPSYNC_CHECK every call goes to check.c (the
 * bins are off, so the fast paths always fall through): the test of
 * jp__settings.check is on the generic paths only.
 *
 * ThreadSanitizer: in a process that runs it with this library not
 * instrumented (jp__settings.tsan) the bins are off as under memcheck, so every
 * call reaches the generic paths, and there a block's free is announced as
 * happening before its next allocation (tsan_put, tsan_got): the two may
 * be on different threads, and TSan sees neither the allocator's lock nor
 * its lists.  Per block, so that the program's own races stay visible.
 * (A library built with -fsanitize=thread is seen whole and keeps its
 * caches.)
 *
 * Double free: a freed block's second word holds jp__settings.key, a random
 * per-process value, and jp_alloc clears it when it hands the block out.
 * A free that finds the key confirms by looking for the block in the
 * thread's bin, on the transfer chains and in its span's free map (as
 * glibc's tcache looks in its lists) before it reports, so a program that
 * happens to store the key is not killed.  A block freed twice that the
 * first thread's bin hid is found when the second of the two reaches its
 * span (jp__central_put).
 */
#include "alloc_init.h"
#include "check.h"
#include "tcache.h"
#include "central.h"
#include "segment.h"
#include "huge.h"
#include "sizeclass.h"
#include "prof.h"
#include "counter.h"
#include "base/os.h"

#include <jpsync/alloc.h>

#include <errno.h>
#include <string.h>

/* See the top: a block's free happens before its next allocation. */
static inline void *tsan_got(void *p)
{
	if (jp_unlikely(jp__settings.tsan) && p != NULL)
		__tsan_acquire(p);
	return p;
}

static inline void tsan_put(void *p)
{
	if (jp_unlikely(jp__settings.tsan))
		__tsan_release(p);
}

static struct jp_heap *heap(void)
{
	struct jp_heap *h = jp__heap_get();

	if (h == NULL)
		errno = ENOMEM;
	return h;
}

/* ---- allocation ----------------------------------------------------- */

static void *small_alloc(uint32_t cls)
{
	struct jp_heap *h = heap();
	void *p;

	if (h == NULL)
		return NULL;
	p = tsan_got(jp__class_alloc(h, cls));
	if (p != NULL && jp__settings.vg) {
		JP_VG_MALLOCLIKE(p, jp__classes[cls].bsize, 0);
		/* Word 1 (zero now) is read by every free for the
		 * double-free key: defined, or memcheck would complain of
		 * our check instead of the program's bugs. */
		JP_VG_DEFINED((char *)p + sizeof(void *), sizeof(void *));
	}
	return p;
}

static void *huge_alloc(size_t size, size_t align, bool zero)
{
	void *p;

	jp__alloc_ready();
	if (jp__settings.check)
		return tsan_got(jp__check_alloc(size, align, zero));
	p = tsan_got(jp__huge_alloc(size, align, zero));
	if (p != NULL && jp__settings.vg)
		JP_VG_MALLOCLIKE(p, jp__huge_of(p)->usable, 1);
	if (p != NULL && jp__settings.prof) {
		struct jp_huge *hg = jp__huge_of(p);

		hg->sampled = jp__prof_huge(p, hg->usable);
	}
	return p;
}

/* Everything but a request that its bin serves. */
static JP_NOINLINE void *alloc_generic(size_t size)
{
	if (size <= JP_MAX_SMALL) {
		jp__alloc_ready();
		if (jp__settings.check)
			return tsan_got(jp__check_alloc(size, 16, false));
		return small_alloc(jp__size_class(size));
	}
	return huge_alloc(size, 0, false);
}

/* The block at the head of the bin of size failed jp__bin_key_clear (its
 * word 1 holds the difference now).  Found again from the size alone, and
 * declared as returning a block, so that jp_alloc reaches it by a jump
 * with nothing to move: it never returns. */
static JP_COLD void *bin_damaged(size_t size)
{
	struct jp_heap *h = jp__tls_heap;
	void **p = size <= JP_LOOKUP_MAX ?
		((struct jp_bin *)((char *)h + jp__class_lookup[size]))->head :
		h->bins[jp__size_class(size)].head;

	jp__free_block_damaged(p, ((uintptr_t *)p)[1]);
}

JP_EXPORT void *jp_alloc(size_t size)
{
	struct jp_bin *b;
	uintptr_t off;
	void **p;

	if (jp_likely(size <= JP_LOOKUP_MAX))
		off = jp__class_lookup[size];
	else if (size <= JP_BIN_BLOCK_MAX)
		/* Bigger ones that bins keep: the class by its formula. */
		off = jp__size_class(size) * sizeof(struct jp_bin);
	else
		return alloc_generic(size);
	b = (struct jp_bin *)((char *)jp__tls_heap + off);
	/* jp__bin_pop, with damage reached by a jump. */
	p = b->head;
	if (jp_unlikely(p == NULL))
		return alloc_generic(size);
	if (jp_unlikely(!jp__bin_key_clear(p)))
		return bin_damaged(size);
	b->head = p[0];
	/* The carry: a heap profile sample (prof.c); never with it off. */
	if (jp_unlikely(jp__cn_add(b, JP_CN_ALLOC)))
		return jp__prof_bin_due(jp__tls_heap, b, p);
	return p;
}

JP_EXPORT void *jp_calloc(size_t nmemb, size_t size)
{
	size_t n;
	void *p;

	if (__builtin_mul_overflow(nmemb, size, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	/* A huge block: huge_alloc clears what a cached mapping may hold. */
	if (n > JP_MAX_SMALL)
		return huge_alloc(n, 0, true);
	p = jp_alloc(n);
	if (p != NULL)
		memset(p, 0, n);
	return p;
}

JP_EXPORT void *jp_alloc_aligned(size_t alignment, size_t size)
{
	uint32_t cls;

	if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
		errno = EINVAL;
		return NULL;
	}
	if (alignment <= 16)
		return jp_alloc(size);
	jp__alloc_ready();
	if (jp__settings.check)
		return tsan_got(jp__check_alloc(size, alignment, false));
	if (alignment <= JP_SLICE_SIZE && size <= JP_MAX_SMALL) {
		cls = jp__aligned_class(size, alignment);
		if (cls < JP_NCLASSES)
			return small_alloc(cls);
	}
	return huge_alloc(size, alignment, false);
}

JP_EXPORT int jp_posix_memalign(void **memptr, size_t alignment, size_t size)
{
	void *p;
	int saved = errno, err;

	if (memptr == NULL)
		return EINVAL;
	/* POSIX (and glibc): a power of two multiple of sizeof(void *).
	 * jp_alloc_aligned keeps taking every power of two from 1. */
	if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0)
		return EINVAL;
	p = jp_alloc_aligned(alignment, size);
	if (p == NULL) {
		err = errno;
		errno = saved;
		return err;
	}
	*memptr = p;
	return 0;
}

/* ---- free ----------------------------------------------------------- */

/* Push p on this thread's bin at binoff when the bin has room, as the
 * fast path does; false when it has none (or the thread has no heap yet,
 * or its bins are off). */
static inline bool bin_push(void *p, uint32_t binoff)
{
	struct jp_bin *b = (struct jp_bin *)((char *)jp__tls_heap + binoff);

	if (jp_likely(JP_CN_CREDIT(JP_CNT_LOAD(b->cn)) != 0)) {
		((void **)p)[0] = b->head;
		((uintptr_t *)p)[1] = jp__settings.key;
		b->head = p;
		JP_CNT_ADD(b->cn, -(uint64_t)1);
		return true;
	}
	return false;
}

/*
 * Everything but a valid small block whose bin has room; and misuse.
 * errno is kept, as POSIX.1-2024 asks of free: what free does below may call
 * munmap, madvise or mmap (a span's or a huge block's pages given back,
 * check mode's quarantine), and a failure of one of those is no failure of
 * free; a profile table's lock may wait on a futex.  Saved around those calls
 * only: the blocks the heap profile sends here only to be pushed (prof.c)
 * make no system call, as on the fast path.
 */
static JP_NOINLINE void free_generic(void *p)
{
	uintptr_t a = (uintptr_t)p;
	struct jp_huge *hg;
	int saved;

	if (p == NULL)
		return;
	tsan_put(p);
	if (jp__settings.check) {
		saved = errno;
		jp__check_free(p);
		errno = saved;
		return;
	}
	if ((a >> JP_SEG_SHIFT) >= JP_REG_N)
		jp__die_ptr("invalid free", p);
	if (jp__reg_get(a) == JP_REG_SMALL) {
		struct jp_span *s;

		jp__segment_checked(a);
		s = jp__span_of(a);
		if (!jp__is_block(s, a))
			jp__die_ptr("invalid free", p);
		if (((uintptr_t *)p)[1] == jp__settings.key &&
		    jp__block_is_free(jp__tls_heap, p, s))
			jp__die_ptr("double free", p);
		/* Those are mostly blocks the fast path would have pushed,
		 * sent here by a sampled block of their slice (prof.c): its
		 * push, when the bin has room. */
		if (jp__settings.prof && (__atomic_load_n(&s->sampled_mask, __ATOMIC_RELAXED) &
				    jp__prof_bit(a)) != 0) {
			saved = errno;
			jp__prof_free(p, s);
			errno = saved;
		}
		if (bin_push(p, s->binoff))
			return;
		saved = errno;
		jp__free_block(jp__heap_get(), p, s);
		errno = saved;
		return;
	}
	hg = jp__huge_of(p);
	if (hg == NULL)
		jp__die_ptr("invalid free", p);
	if (jp__settings.vg)
		JP_VG_FREELIKE(p);
	saved = errno;
	if (hg->sampled)
		jp__prof_free(p, NULL);
	jp__huge_free(hg);
	errno = saved;
}

/*
 * The fast path of jp_free and jp_free_sized: a valid small block whose
 * bin has room is pushed; false sends the caller to the slow path.  With
 * sized, a size above the block's (misuse) goes there too: the slice
 * keeps the block size, 64 bits wide, beside the fields the free reads,
 * so the size costs a compare with memory and its branch (two
 * instructions) and no lookup.  That is as cheap as the size gets here:
 * it cannot stand in for any test of the plain free (the registry byte,
 * the block test, the key all check the pointer, which the size says
 * nothing about), and the class it names would cost a bounds test and a
 * table load to save the one load of binoff (alloc-pair, doc/benchmarks.md).
 */
static inline bool free_fast(void *p, size_t size, const bool sized)
{
	uintptr_t a = (uintptr_t)p, chunk = a >> JP_SEG_SHIFT;

	if (jp_likely(chunk < JP_REG_N && jp__reg_get(a) == JP_REG_SMALL)) {
		const struct jp_slice *sl;

		/* The segment is the chunk number shifted back: the compiler
		 * would mask a copy of a instead (one more instruction),
		 * unless it forgets where chunk came from. */
		__asm__("" : "+r"(chunk));
		sl = &((struct jp_segment *)(chunk << JP_SEG_SHIFT))->
			slices[(a >> JP_SLICE_SHIFT) & (JP_NSLICES - 1)];
		/* And the slice's address as one value: left to itself, the
		 * compiler may index each field from the segment anew (three
		 * more instructions in jp_free). */
		__asm__("" : "+r"(sl));

		if (jp_likely(jp__slice_block_test(sl, a) &&
			      (!sized || size <= sl->bsize) &&
			      ((uintptr_t *)p)[1] != jp__settings.key))
			return bin_push(p, sl->binoff);
	}
	return false;
}

JP_EXPORT void jp_free(void *p)
{
	if (!free_fast(p, 0, false))
		free_generic(p);
}

/* ---- sizes ---------------------------------------------------------- */

/* Usable size of p; 0 for NULL; dies on a pointer that is not ours. */
static size_t usable(const void *p, const char *what)
{
	uintptr_t a = (uintptr_t)p;
	struct jp_huge *hg;

	if (p == NULL)
		return 0;
	if (jp__settings.check)
		return jp__check_usable(p, what);
	if ((a >> JP_SEG_SHIFT) >= JP_REG_N)
		jp__die_ptr(what, p);
	if (jp__reg_get(a) == JP_REG_SMALL) {
		struct jp_span *s;

		jp__segment_checked(a);
		s = jp__span_of(a);
		if (jp__is_block(s, a))
			return s->bsize;
		jp__die_ptr(what, p);
	}
	hg = jp__huge_of(p);
	if (hg == NULL)
		jp__die_ptr(what, p);
	return hg->usable;
}

JP_EXPORT size_t jp_usable_size(const void *ptr)
{
	return usable(ptr, "invalid pointer to jp_usable_size");
}

static JP_NOINLINE void free_sized_generic(void *ptr, size_t size)
{
	/* Check mode knows the size asked for, and any other is misuse, a
	 * smaller one too (check.c); free's errno rule holds as for free. */
	if (jp__settings.check && ptr != NULL) {
		int saved = errno;

		tsan_put(ptr);
		jp__check_free_sized(ptr, size);
		errno = saved;
		return;
	}
	if (ptr != NULL && size > usable(ptr, "invalid free"))
		jp__die_ptr("invalid free_sized (size larger than the block)", ptr);
	free_generic(ptr);
}

JP_EXPORT void jp_free_sized(void *ptr, size_t size)
{
	if (!free_fast(ptr, size, true))
		free_sized_generic(ptr, size);
}

JP_EXPORT size_t jp_good_size(size_t size)
{
	size_t page = jp__os_page_size();

	if (size <= JP_MAX_SMALL)
		return jp__class_size(jp__size_class(size));
	if (size > JP_ALLOC_MAX)
		return 0;
	return (size + page - 1) & ~(page - 1);
}

/* ---- realloc -------------------------------------------------------- */

#define REALLOC_MAP_MIN	((size_t)64 << 10)
#define REALLOC_MAP_MAX	1024	/* huge blocks live, at most, to grow so */

JP_EXPORT void *jp_realloc(void *ptr, size_t size)
{
	size_t old;
	void *q;
	int saved;

	if (ptr == NULL)
		return jp_alloc(size);
	if (size == 0) {
		/* As glibc's realloc (REALLOC_ZERO_BYTES_FREES), which the
		 * preload module promises: free ptr, return NULL.  NULL here
		 * is no failure, so errno stays as it was. */
		saved = errno;
		jp_free(ptr);
		errno = saved;
		return NULL;
	}
	if (jp__settings.check) {
		tsan_put(ptr);
		return tsan_got(jp__check_realloc(ptr, size));
	}
	old = usable(ptr, "invalid realloc");
	if (jp__reg_get((uintptr_t)ptr) == JP_REG_SMALL) {
		/* In place while the block is not more than twice too big. */
		if (size <= old && (old <= 64 || size > old / 2))
			return ptr;
		/* Growing past REALLOC_MAP_MIN: a mapping of its own, so
		 * that the next growth moves pages (mremap) instead of
		 * copying bytes.  Bounded in number: each is a mapping. */
		if (size > old && size >= REALLOC_MAP_MIN &&
		    atomic_load_explicit(&jp__huge_counts->count, memory_order_relaxed) <
		    REALLOC_MAP_MAX) {
			q = huge_alloc(size, 0, false);
			if (q == NULL)
				return NULL;
			memcpy(q, ptr, old);
			jp_free(ptr);
			return q;
		}
	} else if (size >= REALLOC_MAP_MIN) {
		struct jp_huge *hg = jp__huge_of(ptr);

		if (size <= old && size > old / 2)
			return ptr;
		tsan_put(ptr);
		/* A moved or resized block is no longer the one sampled; the
		 * new one is drawn afresh at its new size, as an allocation
		 * (a block kept out of the draw would leave the profile). */
		if (hg->sampled) {
			jp__prof_free(ptr, NULL);
			hg->sampled = 0;
		}
		q = jp__huge_realloc(hg, size);
		if (q != NULL) {
			if (jp__settings.prof) {
				hg = jp__huge_of(q);
				hg->sampled = jp__prof_huge(q, hg->usable);
			}
			return tsan_got(q);
		}
		if (size > JP_ALLOC_MAX) {
			errno = ENOMEM;
			return NULL;
		}
	}
	q = jp_alloc(size);
	if (q == NULL)
		return NULL;
	memcpy(q, ptr, old < size ? old : size);
	jp_free(ptr);
	return q;
}

JP_EXPORT void *jp_reallocarray(void *ptr, size_t nmemb, size_t size)
{
	size_t n;

	if (__builtin_mul_overflow(nmemb, size, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	return jp_realloc(ptr, n);
}

/* ---- giving back ---------------------------------------------------- */

JP_EXPORT void jp_thread_flush(void)
{
	jp__heap_flush(jp__tls_heap);
}

JP_EXPORT size_t jp_alloc_trim(void)
{
	uint64_t t0;

	if (atomic_load_explicit(&jp__alloc_state, memory_order_acquire) != 2)
		return 0;
	/*
	 * What goes back is counted in jp__map_counts->trimmed where it goes: the
	 * flush and the release of empty spans may purge dirty slices or
	 * unmap a segment on their own, besides the purge, the unmapping of
	 * empty segments and of the huge cache here.  relaxed: a statistic;
	 * another thread's purge meanwhile is counted too, and was given back.
	 */
	t0 = atomic_load_explicit(&jp__map_counts->trimmed, memory_order_relaxed);
	jp_thread_flush();
	jp__central_trim();
	jp__huge_trim();
	jp__segment_trim();
	return (size_t)(atomic_load_explicit(&jp__map_counts->trimmed, memory_order_relaxed) - t0);
}
