/*
 * huge.c - blocks above the largest class: each has a mapping of its own,
 * 4 MiB-aligned with a header page before the block (or, for a bigger
 * alignment, a header 4 MiB before it), entered in the registry so that
 * free() finds the header by masking the pointer.  realloc grows and
 * shrinks them with mremap; freed mappings are kept for reuse by the huge
 * cache (huge_cache.c), of whose pages a new block is made when it can.
 * The counts of huge blocks are kept here too (jp__huge_counts).
 */
#include "alloc_init.h"
#include "segment.h"
#include "huge.h"
#include "huge_cache.h"
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

/* The bytes to map for a block of size at offset off, whole pages; 0 and
 * ENOMEM when that is more than jp_alloc serves.  A 0-byte block still
 * owns a byte: with off a page multiple (every alignment above a page),
 * the mapping would end where the block begins, and the block's registry
 * entry would land on whatever follows it. */
static size_t huge_total(size_t off, size_t size)
{
	size_t page = jp__os_page_size();

	if (size > SIZE_MAX - off - page || off + size > JP_ALLOC_MAX) {
		errno = ENOMEM;
		return 0;
	}
	if (size == 0)
		size = 1;
	return (off + size + page - 1) & ~(page - 1);
}

void *jp__huge_alloc(size_t size, size_t align, bool zero)
{
	size_t off = huge_offset(align), total, msize;
	size_t map_align = align > JP_SEG_SIZE ? align : JP_SEG_SIZE, res = 0;
	size_t from = 0, got = 0;	/* the block's [from, from + got): gathered */
	struct jp_huge *h;
	char *base, *user;
	void *p;

	if ((total = huge_total(off, size)) == 0)
		return NULL;
	p = off == JP_HUGE_HDR ? jp__hcache_take(total, true, true, &msize, &res) : NULL;
	if (p != NULL && msize < total) {
		/* Smaller: grown where it is (4 MiB-aligned ones), or its
		 * pages moved to a fresh aligned mapping of total bytes;
		 * either way they serve the block's start, other cached
		 * mappings' pages the rest (jp__hcache_gather), and only what is
		 * still missing faults in.  When neither works, back to the
		 * cache and a fresh mapping. */
		if (((uintptr_t)p & JP_SEG_MASK) == 0 && jp__os_resize(p, msize, total) == 0) {
			jp__mapped_add(total - msize);
		} else if (jp__hcache_move(&p, msize, total) != 0) {
			if (!jp__hcache_put(p, msize, res))
				jp__hcache_unmap_piece(p, msize, res);
			p = NULL;
		}
		if (p != NULL) {
			from = msize;
			msize = total;
		}
	} else if (p != NULL) {
		/* A segment or more past the first segment boundary beyond
		 * the block: that tail is a mapping of its own (4 MiB-aligned,
		 * as every cached one), and goes back to the cache with its
		 * pages; unmapped if it does not fit there. */
		size_t end = jp__hcache_split_at(total);

		from = total;
		if (msize >= end + JP_SEG_SIZE) {
			size_t tres = res > end ? res - end : 0;

			if (!jp__hcache_put((char *)p + end, msize - end, tres))
				jp__hcache_unmap_piece((char *)p + end, msize - end, tres);
			msize = end;
			if (res > end)
				res = end;
		}
		/* Resident pages beyond the block above JP_HC_TAIL(total) leave
		 * it (see huge_cache.c): the cache keeps them, as a
		 * mapping of their own that lends its pages to a later block
		 * (jp__hcache_gather), unless they are no more than its guard. */
		if (res > total + JP_HC_TAIL(total)) {
			if (msize - total <= JP_HC_GUARD ||
			    !jp__hcache_put((char *)p + total, msize - total, res - total))
				jp__hcache_unmap_piece((char *)p + total, msize - total,
						   res - total);
			msize = total;
			res = total;
		}
	}
	if (p == NULL) {
		jp__segment_purge_before_map();
		if (jp__map_registered(&p, total, map_align) != 0) {
			errno = ENOMEM;
			return NULL;
		}
		msize = total;
		res = 0;
		jp__mapped_add(total);
	}
	if (from < total)
		got = jp__hcache_gather((char *)p + from, (char *)p + total);
	if (zero) {
		/* A calloc gets zeros: the block's pages that may hold old
		 * bytes (the cached mapping's first res, the gathered ones)
		 * are cleared here rather than given back, which would fault
		 * them in again at the caller's first touch; the others were
		 * never written, or given back. */
		size_t lo = from > off ? from : off;

		if (res > off)
			memset((char *)p + off, 0, (res < total ? res : total) - off);
		if (from + got > lo)
			memset((char *)p + lo, 0, from + got - lo);
	}
	if (res < total)
		res = total;
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
	if (cacheable && jp__hcache_put(base, total, res))
		return;
	jp__os_unmap(base, total);
	jp__mapped_sub(total);
	/* The mapping's pages that may be resident go back with it. */
	jp__trimmed_add(res);
}

size_t jp__huge_trim(void)
{
	return jp__hcache_trim();
}

void *jp__huge_realloc(struct jp_huge *h, size_t size)
{
	size_t off = h->user_off;
	size_t total, cur, old = h->map_size, csize, cres;
	void *dest;

	guard_check(h);
	if ((total = huge_total(off, size)) == 0)
		return NULL;
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
	dest = jp__hcache_take(total, false, false, &csize, &cres);
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
