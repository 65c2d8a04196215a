/*
 * huge.c - blocks above the largest class: each has a mapping of its own,
 * 4 MiB-aligned with a header page before the block (or, for a bigger
 * alignment, a header 4 MiB before it), entered in the registry so that
 * free() finds the header by masking the pointer.  realloc grows and
 * shrinks them with mremap; a few freed mappings are kept for reuse (the
 * huge cache).  Under the huge lock, which is never held with another.
 * The counts of huge blocks are kept here too (jp__huge_counts).
 */
#include "alloc_init.h"
#include "segment.h"
#include "huge.h"
#include "quarantine.h"
#include "base/os.h"

#include <errno.h>
#include <string.h>

struct jp__lock jp__huge_lock;

/* Written by huge_count and huge_bytes_add alone; read through
 * jp__huge_counts. */
static struct jp_huge_counts hcounts;
const struct jp_huge_counts *const jp__huge_counts = &hcounts;

/*
 * The HUGE_GUARD bytes before every huge block hold HUGE_GUARD_BYTE (in
 * its header page, or in the alignment padding): an underflow of the block
 * is found at its free or realloc, as glibc finds one that damages a
 * chunk's header.  (JPSYNC_CHECK writes a longer canary of its own.)
 */
#define HUGE_GUARD	64
#define HUGE_GUARD_BYTE	0x5c

static void guard_set(const struct jp_huge *h)
{
	if (!jp__settings.check)
		memset((char *)jp__huge_user(h) - HUGE_GUARD, HUGE_GUARD_BYTE, HUGE_GUARD);
}

/* Dies naming the bytes of the guard that changed. */
static void guard_check(const struct jp_huge *h)
{
	const unsigned char *u = jp__huge_user(h);
	long long first = 0, last = -1;

	if (jp__settings.check)
		return;
	for (int i = -HUGE_GUARD; i < 0; i++)
		if (u[i] != HUGE_GUARD_BYTE) {
			if (last == -1 || first > i)
				first = i;
			last = i;
		}
	if (first <= last)
		jp__die_block("underflow before the start", u, h->usable, first, last,
			      "of a block above 256 KiB");
}

void jp__huge_init(void)
{
	jp__lock_init(&jp__huge_lock);
}
/* The huge blocks' bytes grew by delta (modulo 2^64, as a shrink is a
 * negative delta): their own figure, and the live bytes whose peak
 * jp_alloc_stats reports. */
static void huge_bytes_add(uint64_t delta)
{
	atomic_fetch_add_explicit(&hcounts.bytes, delta, memory_order_relaxed);
	jp__live_add(delta);
}

static void huge_count(struct jp_huge *h, int dir)
{
	if (dir > 0) {
		atomic_fetch_add_explicit(&hcounts.count, 1, memory_order_relaxed);
		huge_bytes_add(h->map_size);
		atomic_fetch_add_explicit(&hcounts.allocs, 1, memory_order_relaxed);
	} else {
		atomic_fetch_sub_explicit(&hcounts.count, 1, memory_order_relaxed);
		huge_bytes_add(-(uint64_t)h->map_size);
		atomic_fetch_add_explicit(&hcounts.frees, 1, memory_order_relaxed);
	}
}

/* Offset of the block in its mapping, for an alignment. */
static size_t huge_offset(size_t align)
{
	return align <= JP_HUGE_HDR ? JP_HUGE_HDR : align;
}

/* ---- the huge cache ----------------------------------------------------
 *
 * A freed huge block whose mapping is 4 MiB-aligned with the block one page
 * in (every alignment up to a page) is kept, up to HC_N mappings and
 * hcache_limit() bytes, so that a program that allocates and frees blocks
 * above the largest class (realloc growth across 256 KiB, buffers of a
 * request) does not pay a fresh mmap (over-map and two trims), page faults
 * and a munmap each time.  A mapping is taken for a request it fits with at
 * most the request and a segment to spare.  A mapping unused for HC_AGE_NS
 * is unmapped at the next huge operation, the oldest go when a new one
 * does not fit within hcache_limit(), and jp_alloc_trim() unmaps them all.
 * Cached mappings are off the registry: a free of one is an invalid free.
 *
 * No page is given back (madvise) on the way in or out of the cache: the
 * cache's memory goes back by munmap, when a mapping ages out or is pushed
 * out.  Giving pages back when a mapping was cached (above 4 MiB resident
 * in all) or taken (beyond the new block), as ecd067f did, made every
 * block of mimalloc-bench's malloc-large and every restart of a realloc
 * growth chain fault in again, at once, the pages just given back: one
 * madvise per allocation, 2.6x slower than 1.0.0.  What the
 * cached mappings keep resident is bounded by hcache_limit(), which
 * shrinks with what the program maps, so a program that frees most of
 * its heap keeps at most about 11 MiB there until the mappings age out.
 *
 * A new block takes the smallest cached mapping it fits in, and a mapping
 * a segment or more longer than the block is split: from the first
 * segment boundary past the block, the tail is a mapping of its own (4 MiB-
 * aligned like every cached one), and goes back to the cache with its
 * pages.  What is left beyond the block is not kept for long in a block of
 * 4 MiB or more: the mapping is cut to the block (the tail's pages go
 * with it), since malloc-large's 5-25 MiB blocks would hold the difference
 * for their lives.  Below 4 MiB the spare stays, for realloc growth to find
 * resident.  A mapping is not taken for a request for which it would keep
 * more than HC_KEEP times the request resident: it waits for a bigger
 * request, or its age.  When no cached mapping fits, the biggest smaller
 * one is grown where it is or, when something follows it, its pages are
 * moved (mremap, neither copied nor faulted) to a new place that has room:
 * either way they serve the block's start, and only the rest faults in.
 * Split and move made malloc-large's loop fault in 1.7 times fewer pages
 * (2.92 million against 1.70), at 4% less peak RSS; before, a mapping more
 * than twice the request was passed over and one that could not grow in
 * place went back to the cache, and the request mapped fresh pages.
 */
/* 32, not 8: mimalloc-bench's mstress frees huge blocks in bursts that
 * overflowed 8 entries (327 misses and 319 evictions in one run, each a
 * fresh mapping and a munmap); the byte bound, not the count, bounds the
 * pages kept. */
#define HC_N		32
#define HC_MAX		((size_t)64 << 20)
#define HC_FLOOR	((size_t)8 << 20)
#define HC_AGE_NS	2000000000ull
#define HC_KEEP		8
#define HC_TAIL(total)	((total) < JP_SEG_SIZE ? JP_SEG_SIZE : 0)
/*
 * The head of every cached mapping, HC_GUARD bytes (the block's header page
 * and its first 60 KiB), is inaccessible while it is cached, so that a
 * write after free there (a zero-fill of the block, a write to its first
 * fields) faults where it happens, as glibc's unmapped chunks do.  Only the
 * head: protecting a whole mapping costs the kernel a walk of its resident
 * pages at each free and each reuse (12% more CPU time in malloc-large's
 * loop); a head costs the same for any size.
 */
#define HC_GUARD	((size_t)64 << 10)
static struct {
	void *base;
	size_t size;
	size_t res;		/* resident at most: bytes from base */
	uint64_t when;
} hcache[HC_N];				/* oldest first */
static unsigned hcache_n;
static size_t hcache_bytes;

/* At most 8 MiB plus a sixteenth of what is mapped, and never above 64 MiB:
 * its mappings keep their pages, so this bounds the RSS it adds (a quarter
 * let malloc-large's loop peak 1.10x as high as 1.0.0, which had no cache;
 * a sixteenth, 1.03x). */
static size_t hcache_limit(void)
{
	size_t m = (size_t)atomic_load_explicit(&jp__map_counts->mapped, memory_order_relaxed);
	size_t l = HC_FLOOR + m / 16;

	return l < HC_MAX ? l : HC_MAX;
}

/* A cached mapping (res of its bytes resident) may serve a request of
 * total bytes. */
static bool hcache_fits(size_t size, size_t res, size_t total)
{
	return size >= total && size - total <= total + JP_SEG_SIZE &&
	       res / HC_KEEP <= total;
}

/* The segment boundary at or past total: where a cached mapping taken for
 * total bytes is split, its tail going back to the cache. */
static size_t hcache_split_at(size_t total)
{
	return (total + JP_SEG_SIZE - 1) & ~(size_t)JP_SEG_MASK;
}

/* A cached mapping may serve a request of total bytes and be split: it is
 * big enough, and the part the block keeps holds at most HC_KEEP times
 * total resident. */
static bool hcache_splits(size_t size, size_t res, size_t total)
{
	size_t keep = hcache_split_at(total);

	return size >= total && (res < keep ? res : keep) / HC_KEEP <= total;
}

/* The bytes at the head of a cached mapping of size bytes that are kept
 * inaccessible: HC_GUARD at most. */
static size_t hcache_guard(size_t size)
{
	return size < HC_GUARD ? size : HC_GUARD;
}

/* Unmap entry i (huge lock); returns the bytes. */
static size_t hcache_drop(unsigned i)
{
	void *base = hcache[i].base;
	size_t size = hcache[i].size, res = hcache[i].res;

	hcache_bytes -= size;
	hcache_n--;
	memmove(&hcache[i], &hcache[i + 1], (hcache_n - i) * sizeof hcache[0]);
	jp__os_unmap(base, size);
	jp__mapped_sub(size);
	/* Its resident pages go back with it (the others were counted when
	 * they were given back). */
	jp__trimmed_add(res);
	return size;
}

/* Unmap the mappings unused for HC_AGE_NS (huge lock). */
static void hcache_expire(uint64_t now)
{
	while (hcache_n > 0 && now - hcache[0].when > HC_AGE_NS)
		hcache_drop(0);
}

/* Take the smallest cached mapping that fits total bytes (with split, as
 * hcache_splits says: the caller splits off its tail), or with smaller,
 * when none does, the biggest smaller one (to be grown or moved): its base
 * (its size in *size, how much of it may be resident in *res), or NULL. */
static void *hcache_take(size_t total, bool split, bool smaller, size_t *size, size_t *res)
{
	void *base = NULL;
	int best = -1;

	if (jp__settings.nocache)
		return NULL;
	jp__lock(&jp__huge_lock);
	hcache_expire(jp__os_now_ns());
	for (unsigned i = 0; i < hcache_n; i++)
		if ((split ? hcache_splits(hcache[i].size, hcache[i].res, total)
			   : hcache_fits(hcache[i].size, hcache[i].res, total)) &&
		    (best < 0 || hcache[i].size < hcache[best].size))
			best = (int)i;
	for (unsigned i = 0; i < hcache_n && smaller && best < 0; i++)
		if (hcache[i].size < total) {
			best = (int)i;
			for (unsigned j = i + 1; j < hcache_n; j++)
				if (hcache[j].size < total &&
				    hcache[j].size > hcache[best].size)
					best = (int)j;
		}
	if (best >= 0) {
		base = hcache[best].base;
		*size = hcache[best].size;
		*res = hcache[best].res;
		hcache_bytes -= *size;
		hcache_n--;
		memmove(&hcache[best], &hcache[best + 1],
			(hcache_n - (unsigned)best) * sizeof hcache[0]);
	}
	jp__unlock(&jp__huge_lock);
	/* Its head accessible again first (HC_GUARD): the mapping is then
	 * one area again, which mremap needs to grow or move it.  When it
	 * cannot be, the mapping goes and the request is a miss. */
	if (base != NULL && jp__os_protect(base, hcache_guard(*size), true) != 0) {
		jp__os_unmap(base, *size);
		jp__mapped_sub(*size);
		jp__trimmed_add(*res);
		base = NULL;
	}
	return base;
}

/* Keep a freed mapping, of which res bytes may be resident; false when it
 * does not fit (the caller unmaps). */
static bool hcache_put(void *base, size_t size, size_t res)
{
	uint64_t now;

	if (jp__settings.nocache || size > hcache_limit())
		return false;
	/* Its head inaccessible while cached (HC_GUARD).  Best effort: a
	 * mapping that cannot be protected (the map-count limit) is cached
	 * as it is, and taking one always makes the head accessible. */
	(void)jp__os_protect(base, hcache_guard(size), false);
	now = jp__os_now_ns();
	jp__lock(&jp__huge_lock);
	hcache_expire(now);
	/* Room: the oldest go. */
	while (hcache_n > 0 && (hcache_n == HC_N || hcache_bytes + size > hcache_limit()))
		hcache_drop(0);
	hcache[hcache_n].base = base;
	hcache[hcache_n].size = size;
	hcache[hcache_n].res = res;
	hcache[hcache_n].when = now;
	hcache_n++;
	hcache_bytes += size;
	jp__unlock(&jp__huge_lock);
	return true;
}

/* Move the size bytes of mapping *p to a fresh 4 MiB-aligned mapping of
 * total (> size) bytes: its pages move (mremap, no copy and no fault), the
 * rest is new.  0, or an errno with *p untouched. */
static int hcache_move(void **p, size_t size, size_t total)
{
	void *dest;

	if (jp__map_registered(&dest, total, JP_SEG_SIZE) != 0)
		return ENOMEM;
	if (jp__os_move(*p, size, total, dest) != 0) {
		jp__os_unmap(dest, total);
		return ENOMEM;
	}
	jp__mapped_add(total);
	jp__mapped_sub(size);	/* the old place is unmapped by the move */
	*p = dest;
	return 0;
}

/* Unmap every cached mapping; returns the bytes that were resident,
 * counted as given back by hcache_drop. */
static size_t hcache_trim(void)
{
	size_t total = 0;

	jp__lock(&jp__huge_lock);
	while (hcache_n > 0) {
		total += hcache[0].res;
		hcache_drop(0);
	}
	jp__unlock(&jp__huge_lock);
	return total;
}

void *jp__huge_alloc(size_t size, size_t align, bool zero)
{
	size_t page = jp__os_page_size();
	size_t off = huge_offset(align), total, msize;
	size_t map_align = align > JP_SEG_SIZE ? align : JP_SEG_SIZE, res = 0;
	struct jp_huge *h;
	char *base, *user;
	void *p;

	if (size > SIZE_MAX - off - page || off + size > JP_ALLOC_MAX) {
		errno = ENOMEM;
		return NULL;
	}
	/* A 0-byte block still owns a byte: with off a page multiple (every
	 * alignment above a page), the mapping would end where the block
	 * begins, and the block's registry entry would land on whatever
	 * follows it. */
	if (size == 0)
		size = 1;
	total = (off + size + page - 1) & ~(page - 1);
	p = off == JP_HUGE_HDR ? hcache_take(total, true, true, &msize, &res) : NULL;
	if (p != NULL && msize < total) {
		/* Smaller: grown where it is, or its pages moved to a fresh
		 * aligned mapping of total bytes; either way they serve the
		 * block's start and only the rest faults in.  When neither
		 * works, back to the cache and a fresh mapping. */
		if (jp__os_resize(p, msize, total) == 0) {
			jp__mapped_add(total - msize);
			msize = total;
		} else if (hcache_move(&p, msize, total) == 0) {
			msize = total;
		} else {
			if (!hcache_put(p, msize, res)) {
				jp__os_unmap(p, msize);
				jp__mapped_sub(msize);
				jp__trimmed_add(res);
			}
			p = NULL;
		}
	}
	if (p != NULL) {
		/* A segment or more past the first segment boundary beyond
		 * the block: that tail is a mapping of its own (4 MiB-aligned,
		 * as every cached one), and goes back to the cache with its
		 * pages; unmapped if it does not fit there. */
		size_t end = hcache_split_at(total);

		if (msize >= end + JP_SEG_SIZE) {
			size_t tres = res > end ? res - end : 0;

			if (!hcache_put((char *)p + end, msize - end, tres)) {
				jp__os_unmap((char *)p + end, msize - end);
				jp__mapped_sub(msize - end);
				jp__trimmed_add(tres);
			}
			msize = end;
			if (res > end)
				res = end;
		}
		/* Resident pages beyond the block above HC_TAIL(total) go
		 * with the mapping's tail (see the cache's comment). */
		if (res > total + HC_TAIL(total) &&
		    jp__os_resize(p, msize, total) == 0) {
			jp__mapped_sub(msize - total);
			jp__trimmed_add(res - total);	/* the cut tail's pages */
			msize = total;
			res = total;
		}
	}
	if (p != NULL) {
		/* A calloc gets zeros: the block's pages that may hold old
		 * bytes are cleared here rather than given back, which would
		 * fault them in again at the caller's first touch; those
		 * beyond res were never written, or given back. */
		if (zero && res > off)
			memset((char *)p + off, 0, (res < total ? res : total) - off);
		if (res < total)
			res = total;
	} else {
		jp__segment_purge_before_map();
		if (jp__map_registered(&p, total, map_align) != 0) {
			errno = ENOMEM;
			return NULL;
		}
		msize = total;
		res = total;
		jp__mapped_add(total);
	}
	base = p;
	user = base + off;
	if (off < JP_SEG_SIZE) {
		h = (struct jp_huge *)base;
		jp__reg_set((uintptr_t)user, JP_REG_HUGE);
	} else {
		h = (struct jp_huge *)(user - JP_SEG_SIZE);
		jp__reg_set((uintptr_t)user, JP_REG_HUGE_PREV);
	}
	h->magic = JP_HUGE_MAGIC;
	h->base = base;
	h->map_size = msize;
	h->user_off = (size_t)(user - base);
	h->usable = total - off;
	h->dirty = res;
	guard_set(h);
	huge_count(h, 1);
	return user;
}

struct jp_huge *jp__huge_of(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	unsigned r = jp__reg_get(a);
	struct jp_huge *h;

	if (r == JP_REG_HUGE)
		h = (struct jp_huge *)(a & ~(uintptr_t)JP_SEG_MASK);
	else if (r == JP_REG_HUGE_PREV)
		h = (struct jp_huge *)((a & ~(uintptr_t)JP_SEG_MASK) - JP_SEG_SIZE);
	else
		return NULL;
	if (h->magic != JP_HUGE_MAGIC || jp__huge_user(h) != p)
		return NULL;
	return h;
}

void jp__huge_free(struct jp_huge *h)
{
	void *base = h->base;
	size_t total = h->map_size, res = h->dirty;
	bool cacheable = h->user_off == JP_HUGE_HDR;

	guard_check(h);
	huge_count(h, -1);
	h->magic = 0;
	jp__reg_set((uintptr_t)jp__huge_user(h), JP_REG_NONE);
	if (jp__settings.check) {
		jp__huge_quarantine(h);
		return;
	}
	if (cacheable && hcache_put(base, total, res))
		return;
	jp__os_unmap(base, total);
	jp__mapped_sub(total);
	/* The mapping's pages that may be resident go back with it. */
	jp__trimmed_add(res);
}

size_t jp__huge_trim(void)
{
	return hcache_trim();
}

void *jp__huge_realloc(struct jp_huge *h, size_t size)
{
	size_t page = jp__os_page_size();
	size_t off = h->user_off;
	size_t total, cur, old = h->map_size, csize, cres;
	void *dest;

	guard_check(h);
	if (size > SIZE_MAX - off - page || off + size > JP_ALLOC_MAX) {
		errno = ENOMEM;
		return NULL;
	}
	/* A 0-byte block still owns a byte: with off a page multiple (every
	 * alignment above a page), the mapping would end where the block
	 * begins, and the block's registry entry would land on whatever
	 * follows it. */
	if (size == 0)
		size = 1;
	total = (off + size + page - 1) & ~(page - 1);
	cur = off + h->usable;
	if (total == cur)
		return jp__huge_user(h);
	if (off != JP_HUGE_HDR || jp__settings.vg)
		return NULL;	/* the caller copies */
	if (total > cur && total <= old) {
		/* Inside the mapping (taken from the cache larger than the
		 * request): its pages may hold a former block's bytes, which
		 * realloc owes nothing. */
		h->usable = total - off;
		if (h->dirty < total)
			h->dirty = total;
		return jp__huge_user(h);
	}
	if (jp__os_resize(h->base, old, total) == 0) {
		/* In uint64_t: a shrink is a negative delta, modulo 2^64, not 2^32. */
		huge_bytes_add((uint64_t)total - old);
		if (total > old)
			jp__mapped_add(total - old);
		else {
			jp__mapped_sub(old - total);
			jp__trimmed_add(old - total);	/* unmapped by the shrink */
		}
		h->map_size = total;
		h->usable = total - off;
		/* Grown: resident up to the block at most; shrunk: the pages
		 * beyond total went with the mapping's tail. */
		if (total > old || h->dirty > total)
			h->dirty = total;
		return jp__huge_user(h);
	}
	/* Move the pages (no copy) to a cached mapping, or a fresh 4 MiB-
	 * aligned one.  mremap replaces the first total bytes of dest; the
	 * rest of a cached one stays mapped, part of the block's mapping. */
	dest = hcache_take(total, false, false, &csize, &cres);
	if (dest == NULL) {
		if (jp__map_registered(&dest, total, JP_SEG_SIZE) != 0)
			return NULL;
		csize = total;
		cres = 0;
		jp__mapped_add(total);
	}
	jp__reg_set((uintptr_t)jp__huge_user(h), JP_REG_NONE);
	if (jp__os_move(h->base, old, total, dest) != 0) {
		jp__reg_set((uintptr_t)jp__huge_user(h), JP_REG_HUGE);
		jp__os_unmap(dest, csize);
		jp__mapped_sub(csize);
		return NULL;
	}
	jp__mapped_sub(old);	/* the old place is unmapped by the move */
	h = dest;
	h->base = dest;
	jp__reg_set((uintptr_t)jp__huge_user(h), JP_REG_HUGE);
	huge_bytes_add((uint64_t)csize - old);
	h->map_size = csize;
	h->usable = total - off;
	/* The moved pages, and the cached mapping's beyond them. */
	h->dirty = cres > total ? cres : total;
	return jp__huge_user(h);
}
