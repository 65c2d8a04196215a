/*
 * segment.c - where the small blocks' memory comes from and goes back to:
 * segments, the spans carved from them, the registry, the purging of free
 * pages, and the counts of memory mapped and given back (huge blocks'
 * included), and of the bytes out of the spans and in huge blocks (live)
 * with their peak.
 *
 * Small blocks live in spans of 4 MiB segments (see segment.h).  A
 * segment keeps a 64-bit map of the slices in use; a released span's
 * slices become free for any class at once.  Their pages are given back to
 * the OS (madvise) lazily, by age: freed slices stay "dirty" (resident), and
 * every purge tick (PURGE_TICK_NS, looked at whenever a span is taken or
 * released) gives back those that were dirty at the tick before and still
 * are, so a slice goes back after one to two ticks of disuse, and unmaps
 * the segments that were empty at the tick before and still are, but one
 * (the spare).  A program whose free memory goes up and down within a tick
 * (a producer ahead of its consumers, threads that come and go) then pays
 * no madvise, munmap, mmap and page fault for each swing, which cost more
 * than the work they hold memory for; one that stops using memory has it
 * back within two ticks.  Above the budget (DIRTY_BUDGET, or a quarter of
 * the segments' bytes if more), the old dirty slices go at once, then the
 * young.  A span is carved where it costs least: in a segment in use
 * before an empty one (which can then be unmapped), and from dirty slices
 * before purged ones (no page faults, no more resident pages).  (Blocks
 * above the largest class: huge.c.)
 *
 * Every segment and huge block is entered in the registry (one byte per
 * 4 MiB of address space below 2^JP_VA_BITS, a zero-filled array of which
 * only the pages for addresses in use are ever touched), so that free() can tell our
 * pointers from others without dereferencing them.
 */
#include "alloc_init.h"
#include "segment.h"
#include "base/os.h"

#include <errno.h>
#include <string.h>

uint8_t jp__registry[JP_REG_N];
struct jp__lock jp__seg_lock;

/* Slices of free spans and the header point here: no offset is a block. */
struct jp_span jp__no_span = { .nstart = 0, .limit = 0, .divc = 1 };

/* Written here alone (jp__mapped_add and the rest below); the others read
 * it through jp__map_counts.  Its own cache line: it changes at every
 * mapping and madvise, and shares no line with what the fast paths read. */
static struct jp_map_counts map_counts JP_ALIGNED_CL;
const struct jp_map_counts *const jp__map_counts = &map_counts;

/*
 * The bytes out of the spans plus the huge blocks' (live), and the most
 * they have been (peak): one counter for both kinds, so that the peak is
 * that of their sum at one moment, not a sum of separate peaks (which was
 * 65 MiB too low for a program that held a 65 MiB block and freed it before
 * exit, or too high for one that moved from small to huge blocks).  Its own
 * cache line: it changes at every refill, and jp__settings is read on the
 * fast paths.  relaxed: statistics; each add's result is the sum at one point
 * of the counter's modification order, so the peak is a sum that existed.
 */
static struct {
	_Atomic uint64_t live, peak;
} JP_ALIGNED_CL live_bytes;

void jp__live_add(uint64_t delta)
{
	uint64_t v = atomic_fetch_add_explicit(&live_bytes.live, delta,
					       memory_order_relaxed) + delta;
	uint64_t p = atomic_load_explicit(&live_bytes.peak, memory_order_relaxed);

	/* A decrease wraps to above any peak: it is told by its sign bit (no
	 * process holds 2^63 bytes). */
	if ((int64_t)delta <= 0)
		return;
	while (v > p && !atomic_compare_exchange_weak_explicit(&live_bytes.peak, &p, v,
			memory_order_relaxed, memory_order_relaxed))
		;
}

uint64_t jp__live_peak(void)
{
	return atomic_load_explicit(&live_bytes.peak, memory_order_relaxed);
}

static struct jp_segment *segments;	/* every segment (segment lock) */
static uint64_t used_slices;		/* in spans, all segments (segment lock) */
static uint64_t dirty_bytes;		/* free but resident (segment lock) */
static uint64_t tick_ns;		/* the last purge tick (segment lock) */
static _Atomic bool over_budget;	/* dirty_bytes above dirty_budget() */
#ifndef DIRTY_BUDGET
#define DIRTY_BUDGET	((uint64_t)8 << 20)
#endif
#ifndef PURGE_TICK_NS
#define PURGE_TICK_NS	1000000000ull	/* a second */
#endif

void jp__segment_init(void)
{
	jp__lock_init(&jp__seg_lock);
	JP_BENIGN_RACE(&over_budget, sizeof over_budget, "a hint, read without the lock");
}

void jp__reg_set(uintptr_t a, uint8_t v)
{
	/* relaxed: see jp__reg_get. */
	/* helgrind and drd do not see atomics; the byte is ordered by the
	 * hand-off of the block it describes (see jp__reg_get). */
	JP_BENIGN_RACE(&jp__registry[a >> JP_SEG_SHIFT], 1, "allocator registry");
	__atomic_store_n(&jp__registry[a >> JP_SEG_SHIFT], v, __ATOMIC_RELAXED);
}

int jp__map_registered(void **p, size_t size, size_t align)
{
	void *m;

	if (jp__os_map_aligned(&m, size, align) != 0)
		return ENOMEM;
	if (!jp__reg_covers((uintptr_t)m, size)) {
		jp__os_unmap(m, size);
		return ENOMEM;
	}
	*p = m;
	return 0;
}

void jp__mapped_add(size_t n)
{
	/* relaxed: statistics only. */
	uint64_t m = atomic_fetch_add_explicit(&map_counts.mapped, n,
					       memory_order_relaxed) + n;
	uint64_t p = atomic_load_explicit(&map_counts.peak_mapped, memory_order_relaxed);

	while (m > p && !atomic_compare_exchange_weak_explicit(&map_counts.peak_mapped,
			&p, m, memory_order_relaxed, memory_order_relaxed))
		;
}

void jp__mapped_sub(size_t n)
{
	atomic_fetch_sub_explicit(&map_counts.mapped, n, memory_order_relaxed);
}

void jp__trimmed_add(size_t n)
{
	atomic_fetch_add_explicit(&map_counts.trimmed, n, memory_order_relaxed);
}

void jp__decommit(void *addr, size_t size)
{
	jp__os_decommit(addr, size);
	atomic_fetch_add_explicit(&map_counts.decommits, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&map_counts.decommit_bytes, size, memory_order_relaxed);
}

static struct jp_segment *segment_new(void)
{
	struct jp_segment *seg;
	void *p;

	if (jp__map_registered(&p, JP_SEG_SIZE, JP_SEG_SIZE) != 0)
		return NULL;
	jp__mapped_add(JP_SEG_SIZE);
	seg = p;
	seg->magic = JP_SEG_MAGIC;
	seg->used_bits = 1;	/* slice 0: this header */
	seg->dirty_bits = 0;
	seg->old_bits = 0;
	seg->empty_old = 0;
	for (unsigned i = 0; i < JP_NSLICES; i++)
		seg->slice_span[i] = &jp__no_span;
	seg->next = segments;
	seg->prev = NULL;
	if (segments != NULL)
		segments->prev = seg;
	segments = seg;
	jp__reg_set((uintptr_t)seg, JP_REG_SMALL);
	return seg;
}

static void segment_free(struct jp_segment *seg)
{
	if (seg->prev != NULL)
		seg->prev->next = seg->next;
	else
		segments = seg->next;
	if (seg->next != NULL)
		seg->next->prev = seg->prev;
	dirty_bytes -= (uint64_t)__builtin_popcountll(seg->dirty_bits) * JP_SLICE_SIZE;
	jp__reg_set((uintptr_t)seg, JP_REG_NONE);
	jp__os_unmap(seg, JP_SEG_SIZE);
	jp__mapped_sub(JP_SEG_SIZE);
}

/* The lowest index of n consecutive clear bits in used, or -1. */
static int find_run(uint64_t used, unsigned n)
{
	uint64_t m = ~used;

	for (unsigned i = 1; i < n && m != 0; i++)
		m &= ~used >> i;
	if (n > 1)
		m &= ~0ULL >> (n - 1);	/* the run must end inside the map */
	return m == 0 ? -1 : __builtin_ctzll(m);
}

static uint64_t run_mask(unsigned first, unsigned n)
{
	return (n >= 64 ? ~0ULL : ((1ULL << n) - 1)) << first;
}

/* Give back the pages of the dirty slices bits of seg; returns the bytes. */
static size_t purge_bits(struct jp_segment *seg, uint64_t bits)
{
	size_t total = 0;

	bits &= seg->dirty_bits;
	seg->dirty_bits &= ~bits;
	seg->old_bits &= ~bits;
	while (bits != 0) {
		unsigned first = (unsigned)__builtin_ctzll(bits), n = 0;

		while (first + n < 64 && (bits >> (first + n) & 1))
			n++;
		jp__decommit((char *)seg + (size_t)first * JP_SLICE_SIZE,
				(size_t)n * JP_SLICE_SIZE);
		total += (size_t)n * JP_SLICE_SIZE;
		bits &= ~run_mask(first, n);
	}
	dirty_bytes -= total;
	jp__trimmed_add(total);
	return total;
}

/* Give back the dirty slices of every segment (only those dirty at the
 * last tick: old_only); returns the bytes. */
static size_t purge(bool old_only)
{
	size_t total = 0;

	for (struct jp_segment *seg = segments; seg != NULL; seg = seg->next)
		total += purge_bits(seg, old_only ? seg->old_bits : seg->dirty_bits);
	return total;
}

/* Unmap the empty segments (only those empty at the last tick too:
 * old_only), keeping one as the spare unless all go; returns the bytes
 * that were resident. */
static size_t unmap_empty(bool old_only, bool keep_spare)
{
	struct jp_segment *seg, *next;
	size_t total = 0, res;

	for (seg = segments; seg != NULL; seg = next) {
		next = seg->next;
		if (seg->used_bits != 1 || (old_only && !seg->empty_old))
			continue;
		if (keep_spare) {
			keep_spare = false;
			continue;
		}
		/* Its resident pages: its dirty slices (the others were
		 * purged and counted). */
		res = (size_t)__builtin_popcountll(seg->dirty_bits) * JP_SLICE_SIZE;
		jp__trimmed_add(res);
		total += res;
		segment_free(seg);
	}
	return total;
}

static uint64_t dirty_budget(void)
{
	uint64_t b = used_slices * JP_SLICE_SIZE / 4;

	return b > DIRTY_BUDGET ? b : DIRTY_BUDGET;
}

/* The purge tick, when one is due, and the budget (segment lock): above
 * it the old generation goes at once; the young one waits for its tick
 * (it is what a program that swings is about to take again). */
static void purge_maybe(void)
{
	uint64_t now = jp__os_now_ns();

	if (now - tick_ns >= PURGE_TICK_NS) {
		tick_ns = now;
		purge(true);
		unmap_empty(true, true);
		for (struct jp_segment *seg = segments; seg != NULL; seg = seg->next) {
			seg->old_bits = seg->dirty_bits;
			seg->empty_old = seg->used_bits == 1;
		}
	}
	if (dirty_bytes > dirty_budget())
		purge(true);
	/* relaxed: a hint for jp__segment_purge_before_map, which looks
	 * again under the lock. */
	atomic_store_explicit(&over_budget, dirty_bytes > dirty_budget(),
			      memory_order_relaxed);
}

/* The footprint is about to grow by a new mapping that the dirty slices
 * could not serve: above the budget, they all go first, so that RSS does
 * not hold both (segment lock). */
static void purge_before_map(void)
{
	if (dirty_bytes > dirty_budget())
		purge(false);
	atomic_store_explicit(&over_budget, false, memory_order_relaxed);
}

void jp__segment_purge_before_map(void)
{
	if (!atomic_load_explicit(&over_budget, memory_order_relaxed))
		return;
	jp__lock(&jp__seg_lock);
	purge_before_map();
	jp__unlock(&jp__seg_lock);
}

/* How good a place for a span the free run at first of seg is: 0 best. */
static int run_rank(const struct jp_segment *seg, int first, unsigned n)
{
	uint64_t m = run_mask((unsigned)first, n);

	return (seg->used_bits == 1 ? 2 : 0) + ((seg->dirty_bits & m) == m ? 0 : 1);
}

struct jp_span *jp__span_alloc(uint32_t nslices, bool may_map)
{
	struct jp_segment *seg = NULL;
	struct jp_span *s;
	uint64_t mask;
	int first = -1, best = 4;

	jp__lock(&jp__seg_lock);
	/* The best run: a dirty one (its pages are there: no faults, no new
	 * resident pages) of a segment in use (an empty one can go). */
	for (struct jp_segment *g = segments; g != NULL && best > 0; g = g->next) {
		int f = find_run(g->used_bits | ~g->dirty_bits, nslices), r;

		if (f < 0 && (f = find_run(g->used_bits, nslices)) < 0)
			continue;
		r = run_rank(g, f, nslices);
		if (r < best) {
			best = r;
			seg = g;
			first = f;
		}
	}
	if (seg == NULL) {
		if (may_map)
			purge_before_map();
		seg = may_map ? segment_new() : NULL;
		if (seg == NULL) {
			jp__unlock(&jp__seg_lock);
			return NULL;
		}
		first = find_run(seg->used_bits, nslices);
	}
	mask = run_mask((unsigned)first, nslices);
	seg->used_bits |= mask;
	used_slices += nslices;
	seg->empty_old = 0;
	dirty_bytes -= (uint64_t)__builtin_popcountll(seg->dirty_bits & mask) * JP_SLICE_SIZE;
	seg->dirty_bits &= ~mask;
	seg->old_bits &= ~mask;
	s = &seg->spans[first];
	memset(s, 0, sizeof *s);
	s->slice = (uint16_t)first;
	s->nslices = (uint16_t)nslices;
	s->nstart = -((uintptr_t)seg + (size_t)first * JP_SLICE_SIZE);
	s->divc = 1;	/* no block until the class sets the span up */
	for (unsigned i = 0; i < nslices; i++)
		seg->slice_span[first + i] = s;
	purge_maybe();
	jp__unlock(&jp__seg_lock);
	return s;
}

void jp__span_release(struct jp_span *s)
{
	/* The span lives in its segment's header. */
	struct jp_segment *seg = (struct jp_segment *)((uintptr_t)s & ~(uintptr_t)JP_SEG_MASK);
	unsigned first = s->slice, n = s->nslices;
	uint64_t mask = run_mask(first, n);
	size_t bytes = (size_t)n * JP_SLICE_SIZE;

	jp__lock(&jp__seg_lock);
	for (unsigned i = 0; i < n; i++)
		seg->slice_span[first + i] = &jp__no_span;
	s->limit = 0;
	jp__span_publish(s);
	seg->used_bits &= ~mask;
	used_slices -= n;
	if (jp__settings.madvise_min != UINT64_MAX && bytes >= jp__settings.madvise_min) {
		seg->dirty_bits |= mask;
		dirty_bytes += bytes;
	}
	purge_maybe();
	jp__unlock(&jp__seg_lock);
}

size_t jp__segment_trim(void)
{
	size_t total;

	jp__lock(&jp__seg_lock);
	total = unmap_empty(false, false);
	total += purge(false);
	jp__unlock(&jp__seg_lock);
	return total;
}
