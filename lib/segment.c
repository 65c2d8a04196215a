/*
 * segment.c - where the small blocks' memory comes from and goes back to:
 * segments, the spans carved from them, the registry and the purging of
 * free pages.
 *
 * Small blocks live in spans of 4 MiB segments (see alloc_types.h).  A
 * segment keeps a 64-bit map of the slices in use; a released span's
 * slices become free for any class at once, and are given back to the OS
 * (madvise) lazily: freed slices stay "dirty" (resident) up to a budget or
 * a second, so that a class that frees and re-allocates a span does not pay
 * a page fault per page each time.  An empty segment is unmapped, but one
 * is kept as a spare.  (Blocks above the largest class: huge.c.)
 *
 * Every segment and huge block is entered in the registry (one byte per
 * 4 MiB of address space, a 32 MiB zero-filled array of which only the
 * pages for addresses in use are ever touched), so that free() can tell our
 * pointers from others without dereferencing them.
 */
#include "alloc_internal.h"

#include <errno.h>
#include <string.h>

uint8_t jp__registry[JP_REG_N];
struct jp__lock jp__seg_lock;

/* Slices of free spans and the header point here: no offset is a block. */
struct jp_span jp__no_span = { .nstart = 0, .limit = 0, .divc = 1 };

static struct jp_segment *segments;	/* every segment (segment lock) */
static uint64_t dirty_bytes;		/* free but resident (segment lock) */
static uint64_t last_purge_ns;
#define DIRTY_BUDGET	((uint64_t)8 << 20)
#define PURGE_EVERY_NS	1000000000ull

void jp__segment_init(void)
{
	jp__lock_init(&jp__seg_lock);
}

void jp__reg_set(uintptr_t a, uint8_t v)
{
	/* relaxed: see jp__reg_get. */
	/* helgrind and drd do not see atomics; the byte is ordered by the
	 * hand-off of the block it describes (see jp__reg_get). */
	JP_BENIGN_RACE(&jp__registry[a >> JP_SEG_SHIFT], 1, "allocator registry");
	__atomic_store_n(&jp__registry[a >> JP_SEG_SHIFT], v, __ATOMIC_RELAXED);
}

void jp__mapped_add(size_t n)
{
	/* relaxed: statistics only. */
	uint64_t m = atomic_fetch_add_explicit(&jp__ag.mapped, n,
					       memory_order_relaxed) + n;
	uint64_t p = atomic_load_explicit(&jp__ag.peak_mapped, memory_order_relaxed);

	while (m > p && !atomic_compare_exchange_weak_explicit(&jp__ag.peak_mapped,
			&p, m, memory_order_relaxed, memory_order_relaxed))
		;
}

void jp__mapped_sub(size_t n)
{
	atomic_fetch_sub_explicit(&jp__ag.mapped, n, memory_order_relaxed);
}

void jp__trimmed_add(size_t n)
{
	atomic_fetch_add_explicit(&jp__ag.trimmed, n, memory_order_relaxed);
}

static struct jp_segment *segment_new(void)
{
	struct jp_segment *seg;
	void *p;

	if (jp__os_map_aligned(&p, JP_SEG_SIZE, JP_SEG_SIZE) != 0)
		return NULL;
	jp__mapped_add(JP_SEG_SIZE);
	seg = p;
	seg->magic = JP_SEG_MAGIC;
	seg->used_bits = 1;	/* slice 0: this header */
	seg->dirty_bits = 0;
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

/* Give the pages of every dirty slice back; returns the bytes. */
static size_t purge_all(void)
{
	size_t total = 0;

	for (struct jp_segment *seg = segments; seg != NULL; seg = seg->next) {
		uint64_t d = seg->dirty_bits;

		while (d != 0) {
			unsigned first = (unsigned)__builtin_ctzll(d), n = 0;

			while (first + n < 64 && (d >> (first + n) & 1))
				n++;
			jp__os_decommit((char *)seg + (size_t)first * JP_SLICE_SIZE,
					(size_t)n * JP_SLICE_SIZE);
			total += (size_t)n * JP_SLICE_SIZE;
			d &= ~run_mask(first, n);
		}
		seg->dirty_bits = 0;
	}
	dirty_bytes = 0;
	last_purge_ns = jp__os_now_ns();
	jp__trimmed_add(total);
	return total;
}

struct jp_span *jp__span_alloc(uint32_t nslices, bool may_map)
{
	struct jp_segment *seg;
	struct jp_span *s;
	uint64_t mask;
	int first = -1;

	jp__lock(&jp__seg_lock);
	for (seg = segments; seg != NULL; seg = seg->next) {
		first = find_run(seg->used_bits, nslices);
		if (first >= 0)
			break;
	}
	if (seg == NULL) {
		seg = may_map ? segment_new() : NULL;
		if (seg == NULL) {
			jp__unlock(&jp__seg_lock);
			return NULL;
		}
		first = find_run(seg->used_bits, nslices);
	}
	mask = run_mask((unsigned)first, nslices);
	seg->used_bits |= mask;
	dirty_bytes -= (uint64_t)__builtin_popcountll(seg->dirty_bits & mask) * JP_SLICE_SIZE;
	seg->dirty_bits &= ~mask;
	s = &seg->spans[first];
	memset(s, 0, sizeof *s);
	s->slice = (uint16_t)first;
	s->nslices = (uint16_t)nslices;
	s->nstart = -((uintptr_t)seg + (size_t)first * JP_SLICE_SIZE);
	s->divc = 1;	/* no block until the class sets the span up */
	for (unsigned i = 0; i < nslices; i++)
		seg->slice_span[first + i] = s;
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
	uint64_t now;

	jp__lock(&jp__seg_lock);
	for (unsigned i = 0; i < n; i++)
		seg->slice_span[first + i] = &jp__no_span;
	s->limit = 0;
	jp__span_publish(s);
	seg->used_bits &= ~mask;
	if (seg->used_bits == 1) {
		/* Empty: unmap it, unless it is the only free room left. */
		bool spare = false;

		for (struct jp_segment *o = segments; o != NULL; o = o->next)
			if (o != seg && o->used_bits == 1) {
				spare = true;
				break;
			}
		if (spare) {
			/* Its resident pages: this span's, and the dirty
			 * ones (the others were purged and counted). */
			jp__trimmed_add(bytes + (size_t)__builtin_popcountll(seg->dirty_bits) *
				    JP_SLICE_SIZE);
			segment_free(seg);
			jp__unlock(&jp__seg_lock);
			return;
		}
	}
	if (jp__ag.madvise_min != UINT64_MAX && bytes >= jp__ag.madvise_min) {
		seg->dirty_bits |= mask;
		dirty_bytes += bytes;
		now = jp__os_now_ns();
		if (dirty_bytes > DIRTY_BUDGET || now - last_purge_ns > PURGE_EVERY_NS)
			purge_all();
	}
	jp__unlock(&jp__seg_lock);
}

size_t jp__segment_trim(void)
{
	size_t total, unmapped = 0;
	struct jp_segment *seg, *next;

	jp__lock(&jp__seg_lock);
	for (seg = segments; seg != NULL; seg = next) {
		next = seg->next;
		if (seg->used_bits == 1) {
			/* The pages it still holds: those dirty slices. */
			size_t res = (size_t)__builtin_popcountll(seg->dirty_bits) * JP_SLICE_SIZE;

			segment_free(seg);
			jp__trimmed_add(res);
			unmapped += res;
		}
	}
	total = purge_all() + unmapped;
	jp__unlock(&jp__seg_lock);
	return total;
}
