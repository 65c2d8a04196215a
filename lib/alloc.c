/*
 * alloc.c - the public allocation functions, their fast paths, the checks
 * of every free, JPSYNC_CHECK and the initialisation.
 *
 * Fast paths (no lock, no atomic, no call):
 *   jp_alloc(n <= 1 KiB): class from a table, pop the thread's bin.
 *   jp_free(p): registry byte of p's 4 MiB chunk says "segment"; the span
 *   of p's slice says p is the start of a block (offset below the span's
 *   limit and a multiple of the block size, by one multiplication); the
 *   block's second word is not the double-free key; the bin has room: push.
 * Everything else (an empty or full bin, a first call in a thread, sizes
 * above 1 KiB, huge blocks, misuse) goes to the slow paths here and in
 * tcache.c.
 *
 * Double free: a freed block's second word holds jp__ag.key, a random
 * per-process value, and jp_alloc clears it when it hands the block out.
 * A free that finds the key confirms by looking for the block in the
 * thread's bin and its span's free list (as glibc's tcache does) before it
 * reports, so a program that happens to store the key is not killed.
 */
#include "alloc_internal.h"
#include "options.h"

#include <errno.h>
#include <string.h>

struct jp_alloc_globals jp__ag;
_Atomic int jp__alloc_state;

/* JPSYNC_CHECK: a checked block is [size][magic][user data][canary...]. */
#define CHECK_HDR	16
#define CHECK_EXTRA	24	/* header + 8 bytes of canary at least */
#define CHECK_MAGIC	((uintptr_t)0x6a7063686b6c6976ULL)
#define CHECK_FILL	0xdf	/* freed blocks */
#define CHECK_CANARY	0xab	/* past the requested size */

/*
 * Memcheck, not just any valgrind tool: only memcheck needs every block
 * announced (and so no thread cache); callgrind must count the real fast
 * paths, and helgrind and drd are served by the lock annotations.  A
 * memcheck-only request returns 0 for defined memory; other tools return
 * the default we pass.
 */
static bool on_memcheck(void)
{
#ifdef JP_HAVE_MEMCHECK
	int probe = 0;

	if (!RUNNING_ON_VALGRIND)
		return false;
	return VALGRIND_DO_CLIENT_REQUEST_EXPR(1, VG_USERREQ__CHECK_MEM_IS_DEFINED,
					       &probe, sizeof probe, 0, 0, 0) == 0;
#else
	return false;
#endif
}

void jp__alloc_init_slow(void)
{
	int z = 0;

	if (atomic_compare_exchange_strong(&jp__alloc_state, &z, 1)) {
		const struct jp_options *o = jp__options();
		uintptr_t key;

		jp__os_random(&key, sizeof key);
		/* Odd: never a block pointer, so a free list link is never
		 * taken for the key. */
		jp__ag.key = key | 1;
		jp__ag.anyvg = JP_ON_VALGRIND();
		jp__ag.vg = on_memcheck();
		jp__ag.check = o->check && !jp__ag.vg;
		jp__ag.nocache = jp__ag.vg || jp__ag.check;
		jp__ag.cache_n = o->cache_n;
		jp__ag.cache_bytes = o->cache_bytes;
		jp__ag.mag_size = o->mag_size;
		jp__ag.madvise_min = o->madvise_min;
		jp__tcache_init();
		jp__stats_init();
		/* release: the tables above are seen by every thread that
		 * reads the state (acquire). */
		atomic_store_explicit(&jp__alloc_state, 2, memory_order_release);
		jp__tcache_init_late();
		return;
	}
	/* Phase 1 above allocates nothing, so this is another thread. */
	while (atomic_load_explicit(&jp__alloc_state, memory_order_acquire) != 2)
		jp_cpu_relax();
}

/*
 * The allocator's own lock (it cannot use jp_mutex: it must not depend on
 * the other components, and fork handling needs the owner).  Spin a little
 * (critical sections are short), then sleep on seq.
 */
void jp__lock_slow(struct jp__lock *l, uintptr_t me)
{
	uintptr_t z;

	for (int i = 0; i < 100; i++) {
		z = 0;
		/* acquire: pairs with the store in jp__unlock. */
		if (atomic_load_explicit(&l->owner, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_weak_explicit(&l->owner, &z, me,
				memory_order_acquire, memory_order_relaxed))
			return;
		jp_cpu_relax();
	}
	for (;;) {
		uint32_t seq;

		/* seq_cst: announce ourselves before the last look at the
		 * owner, so that a releaser either sees us and bumps seq, or
		 * released before our look and we take the lock. */
		atomic_fetch_add(&l->waiters, 1);
		seq = atomic_load(&l->seq);
		z = 0;
		if (atomic_compare_exchange_strong(&l->owner, &z, me)) {
			atomic_fetch_sub(&l->waiters, 1);
			return;
		}
		jp__futex_wait(&l->seq, seq, NULL);
		atomic_fetch_sub(&l->waiters, 1);
	}
}

void jp__unlock_wake(struct jp__lock *l)
{
	atomic_fetch_add(&l->seq, 1);
	jp__futex_wake(&l->seq, 1);
}

static struct jp_heap *heap(void)
{
	struct jp_heap *h = jp__heap_get();

	if (h == NULL)
		errno = ENOMEM;
	return h;
}

/* ---- JPSYNC_CHECK --------------------------------------------------- */

static void *check_alloc(struct jp_heap *h, size_t n)
{
	uint32_t cls = jp__size_class(n + CHECK_EXTRA);
	size_t bs = jp__class_size(cls);
	unsigned char *blk = jp__class_alloc(h, cls);

	if (blk == NULL)
		return NULL;
	if (((uintptr_t *)blk)[1] == jp__ag.key) {
		/* It was freed with JPSYNC_CHECK: still all fill? */
		for (size_t i = CHECK_HDR; i < bs; i++)
			if (blk[i] != CHECK_FILL)
				jp__die_ptr("write after free", blk + CHECK_HDR);
	}
	((uintptr_t *)blk)[0] = n;
	((uintptr_t *)blk)[1] = CHECK_MAGIC;
	memset(blk + CHECK_HDR + n, CHECK_CANARY, bs - CHECK_HDR - n);
	return blk + CHECK_HDR;
}

/* Is user pointer p a checked block of span s?  Then its block. */
static unsigned char *check_block(struct jp_span *s, uintptr_t a)
{
	if (!jp__ag.check || a - CHECK_HDR < jp__span_start(s) ||
	    !jp__is_block(s, a - CHECK_HDR))
		return NULL;
	return (unsigned char *)(a - CHECK_HDR);
}

static void check_free(unsigned char *blk, struct jp_span *s)
{
	unsigned char *p = blk + CHECK_HDR;
	uintptr_t w1 = ((uintptr_t *)blk)[1];
	size_t n = ((uintptr_t *)blk)[0], bs = s->bsize;

	if (w1 == jp__ag.key && jp__block_is_free(jp__tls_heap, blk, s))
		jp__die_ptr("double free", p);
	if (w1 != CHECK_MAGIC || n > bs - CHECK_EXTRA)
		jp__die_ptr("invalid free", p);
	for (size_t i = CHECK_HDR + n; i < bs; i++)
		if (blk[i] != CHECK_CANARY)
			jp__die_ptr("overflow past the end", p);
	memset(blk + CHECK_HDR, CHECK_FILL, bs - CHECK_HDR);
	jp__free_block(jp__heap_get(), blk, s);
}

/* ---- allocation ----------------------------------------------------- */

static void *small_alloc(uint32_t cls)
{
	struct jp_heap *h = heap();
	void *p;

	if (h == NULL)
		return NULL;
	p = jp__class_alloc(h, cls);
	if (p != NULL && jp__ag.vg) {
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

	if (atomic_load_explicit(&jp__alloc_state, memory_order_acquire) != 2)
		jp__alloc_init_slow();
	p = jp__huge_alloc(size, align, zero);
	if (p != NULL && jp__ag.vg)
		JP_VG_MALLOCLIKE(p, jp__huge_of(p)->usable, 1);
	return p;
}

JP_NOINLINE void *jp__alloc_slow(size_t size)
{
	if (size <= JP_MAX_SMALL) {
		if (atomic_load_explicit(&jp__alloc_state, memory_order_acquire) != 2)
			jp__alloc_init_slow();
		if (jp__ag.check && size <= JP_MAX_SMALL - CHECK_EXTRA) {
			struct jp_heap *h = heap();

			return h == NULL ? NULL : check_alloc(h, size);
		}
		return small_alloc(jp__size_class(size));
	}
	return huge_alloc(size, 0, false);
}

JP_EXPORT void *jp_alloc(size_t size)
{
	struct jp_heap *h = jp__tls_heap;

	if (jp_likely(size <= JP_LOOKUP_MAX)) {
		struct jp_bin *b = (struct jp_bin *)((char *)h +
			jp__class_lookup[size]);
		void **blk = b->head;

		if (jp_likely(blk != NULL)) {
			b->head = blk[0];
			JP_CNT_ADD(b->cn, JP_CN_ALLOC);
			blk[1] = NULL;	/* not the double-free key */
			return blk;
		}
	}
	return jp__alloc_slow(size);
}

JP_EXPORT void *jp_calloc(size_t nmemb, size_t size)
{
	size_t n;
	void *p;

	if (__builtin_mul_overflow(nmemb, size, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	/* A huge block's pages are fresh or given back: zero already. */
	if (n > JP_MAX_SMALL)
		return huge_alloc(n, 0, true);
	p = jp_alloc(n);
	if (p != NULL)
		memset(p, 0, n);
	return p;
}

/* Smallest class that holds size bytes aligned to align (<= 64 KiB). */
static uint32_t aligned_class(size_t size, size_t align)
{
	uint32_t cls = jp__size_class(size < align ? align : size);

	/* Spans start at 64 KiB boundaries, so block k of a class sits at
	 * k * bsize from one: aligned to the power of two that divides bsize. */
	while (cls < JP_NCLASSES && (jp__class_size(cls) & (align - 1)) != 0)
		cls++;
	return cls;
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
	if (alignment <= JP_SLICE_SIZE && size <= JP_MAX_SMALL) {
		if (atomic_load_explicit(&jp__alloc_state, memory_order_acquire) != 2)
			jp__alloc_init_slow();
		cls = aligned_class(size, alignment);
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

JP_NOINLINE void jp__free_slow(void *p)
{
	uintptr_t a = (uintptr_t)p;
	struct jp_huge *hg;
	unsigned r;

	if (p == NULL)
		return;
	if ((a >> JP_SEG_SHIFT) >= JP_REG_N)
		jp__die_ptr("invalid free", p);
	r = jp__reg_get(a);
	if (r == JP_REG_SMALL) {
		struct jp_span *s = jp__span_of(a);
		unsigned char *cb;

		if (jp__is_block(s, a)) {
			if (((uintptr_t *)p)[1] == jp__ag.key &&
			    jp__block_is_free(jp__tls_heap, p, s))
				jp__die_ptr("double free", p);
			if (jp__ag.check && ((uintptr_t *)p)[1] == CHECK_MAGIC)
				jp__die_ptr("invalid free", p);
			jp__free_block(jp__heap_get(), p, s);
			return;
		}
		cb = check_block(s, a);
		if (cb != NULL) {
			check_free(cb, s);
			return;
		}
		jp__die_ptr("invalid free", p);
	}
	hg = jp__huge_of(p);
	if (hg == NULL)
		jp__die_ptr("invalid free", p);
	if (jp__ag.vg)
		JP_VG_FREELIKE(p);
	jp__huge_free(hg);
}

JP_EXPORT void jp_free(void *p)
{
	uintptr_t a = (uintptr_t)p;

	if (jp_likely((a >> JP_SEG_SHIFT) < JP_REG_N &&
		      jp__reg_get(a) == JP_REG_SMALL)) {
		const struct jp_slice *sl = jp__slice_of(a);

		if (jp_likely(jp__block_test(sl->nstart, sl->divc, sl->limit, a) &&
			      ((uintptr_t *)p)[1] != jp__ag.key)) {
			struct jp_bin *b = (struct jp_bin *)
				((char *)jp__tls_heap + sl->binoff);

			if (jp_likely(JP_CN_CREDIT(JP_CNT_LOAD(b->cn)) != 0)) {
				((void **)p)[0] = b->head;
				((uintptr_t *)p)[1] = jp__ag.key;
				b->head = p;
				JP_CNT_ADD(b->cn, -(uint64_t)1);
				return;
			}
		}
	}
	jp__free_slow(p);
}

/* ---- sizes ---------------------------------------------------------- */

/* Usable size of p; 0 for NULL; dies on a pointer that is not ours. */
static size_t usable(const void *p, const char *what)
{
	uintptr_t a = (uintptr_t)p;
	struct jp_huge *hg;

	if (p == NULL)
		return 0;
	if ((a >> JP_SEG_SHIFT) >= JP_REG_N)
		jp__die_ptr(what, p);
	if (jp__reg_get(a) == JP_REG_SMALL) {
		struct jp_span *s = jp__span_of(a);
		unsigned char *cb;

		if (jp__is_block(s, a))
			return s->bsize;
		cb = check_block(s, a);
		if (cb != NULL && ((uintptr_t *)cb)[1] == CHECK_MAGIC)
			return ((uintptr_t *)cb)[0];
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

JP_EXPORT void jp_free_sized(void *ptr, size_t size)
{
	if (ptr != NULL && size > usable(ptr, "invalid free"))
		jp__die_ptr("invalid free_sized (size larger than the block)", ptr);
	jp_free(ptr);
}

JP_EXPORT size_t jp_good_size(size_t size)
{
	size_t page = jp__os_page_size();

	if (size <= JP_MAX_SMALL)
		return jp__class_size(jp__size_class(size));
	if (size > ((size_t)1 << 46))
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
	old = usable(ptr, "invalid realloc");
	if (jp__reg_get((uintptr_t)ptr) == JP_REG_SMALL) {
		/* In place while the block is not more than twice too big
		 * (checked blocks always move: their canary moves with n). */
		if (size <= old && (old <= 64 || size > old / 2) &&
		    jp__is_block(jp__span_of((uintptr_t)ptr), (uintptr_t)ptr))
			return ptr;
		/* Growing past REALLOC_MAP_MIN: a mapping of its own, so
		 * that the next growth moves pages (mremap) instead of
		 * copying bytes.  Bounded in number: each is a mapping. */
		if (size > old && size >= REALLOC_MAP_MIN && !jp__ag.check &&
		    atomic_load_explicit(&jp__ag.huge_count, memory_order_relaxed) <
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
		q = jp__huge_realloc(hg, size);
		if (q != NULL)
			return q;
		if (size > ((size_t)1 << 46)) {
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
	 * What goes back is counted in jp__ag.trimmed where it goes: the
	 * flush and the release of empty spans may purge dirty slices or
	 * unmap a segment on their own, besides the purge, the unmapping of
	 * empty segments and of the huge cache here.  relaxed: a statistic;
	 * another thread's purge meanwhile is counted too, and was given back.
	 */
	t0 = atomic_load_explicit(&jp__ag.trimmed, memory_order_relaxed);
	jp_thread_flush();
	jp__classes_trim();
	jp__huge_trim();
	jp__segment_trim();
	return (size_t)(atomic_load_explicit(&jp__ag.trimmed, memory_order_relaxed) - t0);
}
