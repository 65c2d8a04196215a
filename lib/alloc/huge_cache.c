/*
 * huge_cache.c - the huge cache: freed huge blocks' mappings kept, with
 * their pages, for later huge blocks (huge.c).  Under the huge lock, which
 * is never held with another.
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
 * pages.  What is left beyond the block is not kept by a block of 4 MiB
 * or more, since malloc-large's 5-25 MiB blocks would hold the difference
 * for their lives: it goes back to the cache too, as a mapping of its own
 * (not 4 MiB-aligned, so never a block's place, only pages to lend, see
 * below).  Below 4 MiB the spare stays, for realloc growth to find
 * resident.  A mapping is not taken for a request for which it would keep
 * more than HC_KEEP times the request resident: it waits for a bigger
 * request, or its age.  When no cached mapping fits, the biggest smaller
 * one is grown where it is or, when something follows it, its pages are
 * moved (mremap, neither copied nor faulted) to a new place that has room:
 * either way they serve the block's start.  The rest of the block, or all
 * of it when nothing was taken, is made of other cached mappings' pages,
 * moved in the same way (jp__hcache_gather), and only what the cache cannot
 * cover faults in: the way glibc and tcmalloc serve a big block from
 * memory already resident in their heaps, where a block is joined from
 * free neighbours; here the neighbours need not be adjacent.
 * Split and move made malloc-large's loop fault in 1.7 times fewer pages
 * (2.92 million against 1.70), at 4% less peak RSS; gathering, with the
 * tails kept, a bound of a quarter and 64 entries, 9.3 times fewer again
 * (183 thousand, as many as tcmalloc), at the same peak RSS
 * (doc/bench-costs.md).
 */
#include "alloc_init.h"
#include "segment.h"
#include "huge.h"
#include "huge_cache.h"
#include "base/os.h"

#include <errno.h>
#include <string.h>

/* 64, not 8: mimalloc-bench's mstress frees huge blocks in bursts that
 * overflowed 8 entries (327 misses and 319 evictions in one run, each a
 * fresh mapping and a munmap), and the tails that blocks leave make more
 * entries (with 32, malloc-large's loop pushed out 232 MiB for want of an
 * entry, and faulted in 205 thousand pages instead of 183); the byte
 * bound, not the count, bounds the pages kept. */
#define HC_N		64
#define HC_MAX		((size_t)128 << 20)
#define HC_FLOOR	((size_t)8 << 20)
#define HC_AGE_NS	2000000000ull
#define HC_KEEP		8
static struct {
	void *base;
	size_t size;
	size_t res;		/* resident at most: bytes from base */
	uint64_t when;
} hcache[HC_N];				/* oldest first */
static unsigned hcache_n;
static size_t hcache_bytes;

/* At most 8 MiB plus a quarter of what is mapped, and never above 128 MiB:
 * its mappings keep their pages, so this bounds the RSS it adds above the
 * live blocks.  Before blocks were gathered from several mappings, a
 * quarter let malloc-large's loop peak 1.10x as high as 1.0.0, which had
 * no cache, and a sixteenth was kept; now the cache's pages serve the
 * next blocks instead of waiting beside fresh ones, the loop peaks no
 * higher with a quarter than with a sixteenth (410 MB), and faults in
 * 205 thousand pages instead of 1.03 million (an eighth: 488 thousand;
 * all three with 32 entries). */
static size_t hcache_limit(void)
{
	size_t m = (size_t)atomic_load_explicit(&jp__map_counts->mapped, memory_order_relaxed);
	size_t l = HC_FLOOR + m / 4;

	return l < HC_MAX ? l : HC_MAX;
}

/* A cached mapping (res of its bytes resident) may serve a request of
 * total bytes. */
static bool hcache_fits(size_t size, size_t res, size_t total)
{
	return size >= total && size - total <= total + JP_SEG_SIZE &&
	       res / HC_KEEP <= total;
}

/* A cached mapping may serve a request of total bytes and be split: it is
 * big enough, and the part the block keeps holds at most HC_KEEP times
 * total resident. */
static bool hcache_splits(size_t size, size_t res, size_t total)
{
	size_t keep = jp__hcache_split_at(total);

	return size >= total && (res < keep ? res : keep) / HC_KEEP <= total;
}

/* The bytes at the head of a cached mapping of size bytes that are kept
 * inaccessible: JP_HC_GUARD at most. */
static size_t hcache_guard(size_t size)
{
	return size < JP_HC_GUARD ? size : JP_HC_GUARD;
}

/* Entry i may hold a block where it is: its base is 4 MiB-aligned (a tail
 * cut from a block is cached for its pages alone, see jp__hcache_gather). */
static bool hcache_aligned(unsigned i)
{
	return ((uintptr_t)hcache[i].base & JP_SEG_MASK) == 0;
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
void *jp__hcache_take(size_t total, bool split, bool smaller, size_t *size, size_t *res)
{
	void *base = NULL;
	int best = -1;

	if (jp__settings.nocache)
		return NULL;
	jp__lock(&jp__huge_lock);
	hcache_expire(jp__os_now_ns());
	for (unsigned i = 0; i < hcache_n; i++)
		if (hcache_aligned(i) &&
		    (split ? hcache_splits(hcache[i].size, hcache[i].res, total)
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
	/* Its head accessible again first (JP_HC_GUARD): the mapping is then
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
bool jp__hcache_put(void *base, size_t size, size_t res)
{
	uint64_t now;

	if (jp__settings.nocache || size > hcache_limit())
		return false;
	/* Its head inaccessible while cached (JP_HC_GUARD).  Best effort: a
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
int jp__hcache_move(void **p, size_t size, size_t total)
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

/* Drop a piece of len bytes at src (res of them may be resident) that has
 * left the cache: unmapped, its pages given back. */
void jp__hcache_unmap_piece(void *src, size_t len, size_t res)
{
	jp__os_unmap(src, len);
	jp__mapped_sub(len);
	jp__trimmed_add(res);
}

/*
 * Fill [at, end) of a block's mapping with cached mappings' pages, moved
 * (mremap: page tables move, no byte is copied and no page faults in),
 * front to back, so that only what the cache cannot cover is fresh zero
 * pages.  A mapping at least JP_HC_GUARD longer than what is still needed
 * gives its tail (the smallest such one, the rest of it stays cached);
 * else the biggest that fits moves whole.  Returns the bytes filled from
 * at: they hold old bytes.
 */
size_t jp__hcache_gather(char *at, char *end)
{
	char *start = at;

	while (at < end && !jp__settings.nocache) {
		size_t need = (size_t)(end - at), len, res = 0;
		char *src = NULL;
		int tail = -1, whole = -1;

		jp__lock(&jp__huge_lock);
		for (unsigned i = 0; i < hcache_n; i++) {
			size_t sz = hcache[i].size;

			if (sz >= need + JP_HC_GUARD) {
				if (tail < 0 || sz < hcache[tail].size)
					tail = (int)i;
			} else if (sz <= need && (whole < 0 || sz > hcache[whole].size)) {
				whole = (int)i;
			}
		}
		if (tail >= 0) {
			/* The entry keeps its head (and its age). */
			len = need;
			hcache[tail].size -= len;
			src = (char *)hcache[tail].base + hcache[tail].size;
			if (hcache[tail].res > hcache[tail].size) {
				res = hcache[tail].res - hcache[tail].size;
				hcache[tail].res = hcache[tail].size;
			}
		} else if (whole >= 0) {
			src = hcache[whole].base;
			len = hcache[whole].size;
			res = hcache[whole].res;
			hcache_n--;
			memmove(&hcache[whole], &hcache[whole + 1],
				(hcache_n - (unsigned)whole) * sizeof hcache[0]);
		}
		if (src != NULL)
			hcache_bytes -= len;
		jp__unlock(&jp__huge_lock);
		if (src == NULL)
			break;
		/* A whole mapping's head accessible again first: mremap moves
		 * one area. */
		if (whole >= 0 && jp__os_protect(src, hcache_guard(len), true) != 0) {
			jp__hcache_unmap_piece(src, len, res);
			continue;
		}
		if (jp__os_move(src, len, len, at) != 0) {
			jp__hcache_unmap_piece(src, len, res);
			break;
		}
		jp__mapped_sub(len);	/* at's range was counted already */
		at += len;
	}
	return (size_t)(at - start);
}

/* Unmap every cached mapping; returns the bytes that were resident,
 * counted as given back by hcache_drop. */
size_t jp__hcache_trim(void)
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
