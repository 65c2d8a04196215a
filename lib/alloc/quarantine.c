/*
 * quarantine.c - check mode's quarantine of freed huge blocks (huge.c
 * sends them here, under JPSYNC_CHECK).
 *
 * With JPSYNC_CHECK a freed huge mapping is not unmapped at once: it is made
 * inaccessible (its pages go back), so that a write after free faults where
 * it happens instead of landing in a later mapping, and a second free of it
 * is known to be a double free.  The oldest go when a new one comes and
 * there are HQ_N, or their ranges would pass HQ_BYTES (address space only:
 * the pages are gone).  Each keeps the block's size and the stack ids of
 * its allocation and free, so that check mode's fault handler (check_fault.c)
 * can say whose block an access fell into, and a double free where the
 * block was first freed.
 *
 * The mmap that makes it inaccessible can fail: past vm.max_map_count (it
 * may have to split a mapping the block shares with its neighbours, and mmap
 * refuses any call once the count is over the limit) or out of kernel
 * memory.  Then the block's pages go back with madvise, which never adds a
 * mapping, and it enters the ring all the same: its addresses stay ours, so
 * nothing is handed out there and a second free is still a double free; only
 * an access after free no longer faults (it reads zeros).  That weaker check
 * is counted (jp__huge_unprotected, in the JPSYNC_STATS table) and said once
 * on stderr; free's caller keeps its errno (alloc.c).
 */
#include "segment.h"
#include "huge.h"
#include "quarantine.h"
#include "base/os.h"

#include <stdatomic.h>
#define HQ_N	64
/* At most this much address space held: a block's pages go back when it
 * enters, only its range stays reserved (no memory, one map entry), but a
 * 32-bit process has little of it.  A block bigger than that alone still
 * enters, alone. */
#define HQ_BYTES	(sizeof(void *) < 8 ? (size_t)64 << 20 : (size_t)1 << 30)
static struct {
	/* Written under the huge lock, read without it by check mode's fault
	 * handler (jp__huge_freed_at): relaxed atomics, and base last. */
	uintptr_t base;
	size_t size;
	const void *user;
	size_t req;
	uint32_t alloc_site, free_site;
} hq[HQ_N];				/* oldest first (huge lock) */
static unsigned hq_n;
static size_t hq_bytes;
static _Atomic uint64_t hq_unprotected;

static void unprotected(void *base, size_t size)
{
	static atomic_flag said = ATOMIC_FLAG_INIT;

	jp__os_decommit(base, size);
	/* relaxed: a statistic. */
	atomic_fetch_add_explicit(&hq_unprotected, 1, memory_order_relaxed);
	if (!atomic_flag_test_and_set_explicit(&said, memory_order_relaxed))
		jp__os_puts(2, "jpsync: check mode: cannot make a freed block inaccessible "
			    "(mmap failed: the map-count limit, vm.max_map_count, or out of "
			    "memory); freed blocks above 256 KiB are still never reused while "
			    "quarantined, but an access after free no longer faults\n");
}

uint64_t jp__huge_unprotected(void)
{
	return atomic_load_explicit(&hq_unprotected, memory_order_relaxed);
}

/* Entry i, for the lock-free reader: its range cleared first. */
static void hq_set(unsigned i, uintptr_t base, size_t size, const void *user, size_t req,
		   uint32_t alloc_site, uint32_t free_site)
{
	__atomic_store_n(&hq[i].base, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&hq[i].size, size, __ATOMIC_RELAXED);
	__atomic_store_n(&hq[i].user, user, __ATOMIC_RELAXED);
	__atomic_store_n(&hq[i].req, req, __ATOMIC_RELAXED);
	__atomic_store_n(&hq[i].alloc_site, alloc_site, __ATOMIC_RELAXED);
	__atomic_store_n(&hq[i].free_site, free_site, __ATOMIC_RELAXED);
	/* release: a reader that sees the range sees the rest (on this
	 * thread, the handler's case, any order would do). */
	__atomic_store_n(&hq[i].base, base, __ATOMIC_RELEASE);
}

/* Huge block h, its header still readable, enters the quarantine. */
void jp__huge_quarantine(struct jp_huge *h)
{
	void *base = h->base, *old[HQ_N];
	size_t size = h->map_size, old_size[HQ_N];
	const void *user = jp__huge_user(h);
	size_t req = h->req;
	uint32_t alloc_site = h->alloc_site, free_site = h->free_site;
	unsigned nold = 0;

	if (jp__os_protect_none(base, size) != 0)
		unprotected(base, size);
	jp__mapped_sub(size);
	jp__lock(&jp__huge_lock);
	/* Room, by count and by bytes: the oldest go (unmapped below, out
	 * of the lock). */
	while (hq_n > 0 && (hq_n == HQ_N || hq_bytes + size > HQ_BYTES)) {
		old[nold] = (void *)hq[0].base;
		old_size[nold++] = hq[0].size;
		hq_bytes -= hq[0].size;
		hq_n--;
		for (unsigned i = 0; i < hq_n; i++)
			hq_set(i, hq[i + 1].base, hq[i + 1].size, hq[i + 1].user,
			       hq[i + 1].req, hq[i + 1].alloc_site, hq[i + 1].free_site);
		hq_set(hq_n, 0, 0, NULL, 0, 0, 0);
	}
	hq_set(hq_n++, (uintptr_t)base, size, user, req, alloc_site, free_site);
	hq_bytes += size;
	jp__unlock(&jp__huge_lock);
	for (unsigned i = 0; i < nold; i++)
		jp__os_unmap(old[i], old_size[i]);
}

static void hq_get(unsigned i, struct jp_huge_freed *f)
{
	if (f == NULL)
		return;
	f->user = __atomic_load_n(&hq[i].user, __ATOMIC_RELAXED);
	f->req = __atomic_load_n(&hq[i].req, __ATOMIC_RELAXED);
	f->alloc_site = __atomic_load_n(&hq[i].alloc_site, __ATOMIC_RELAXED);
	f->free_site = __atomic_load_n(&hq[i].free_site, __ATOMIC_RELAXED);
}

bool jp__huge_freed(const void *p, struct jp_huge_freed *f)
{
	bool found = false;

	jp__lock(&jp__huge_lock);
	for (unsigned i = 0; i < hq_n && !found; i++)
		if (hq[i].user == p) {
			found = true;
			hq_get(i, f);
		}
	jp__unlock(&jp__huge_lock);
	return found;
}

bool jp__huge_freed_at(uintptr_t a, struct jp_huge_freed *f)
{
	for (unsigned i = 0; i < HQ_N; i++) {
		/* acquire: pairs with hq_set's release of the range. */
		uintptr_t b = __atomic_load_n(&hq[i].base, __ATOMIC_ACQUIRE);
		size_t n = __atomic_load_n(&hq[i].size, __ATOMIC_RELAXED);

		if (b == 0 || a < b || a - b >= n)
			continue;
		hq_get(i, f);
		/* The same range still: the record was not replaced meanwhile. */
		if (__atomic_load_n(&hq[i].base, __ATOMIC_RELAXED) == b)
			return true;
	}
	return false;
}
