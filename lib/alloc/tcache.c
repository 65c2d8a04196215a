/*
 * tcache.c - thread caches ("heaps"): per size class a bin of free blocks
 * that only its thread touches, their growth, their flush, and thread exit.
 *
 * A free pushes onto the bin of the freeing thread, whichever thread
 * allocated the block (no atomics on the fast paths in alloc.c).  A bin is
 * bounded: it starts small and grows (bin_overflow) for a thread that both
 * empties and overfills it, within JPSYNC_CACHE_N blocks and the thread's
 * share of JPSYNC_CACHE_BYTES.  An empty bin is refilled with a batch from
 * its shard's shared lists (central.c: a magazine of JPSYNC_MAG_SIZE, or
 * more for a grown bin), and a full one gives blocks back there, as one
 * transfer chain when it can.  So a block freed by another thread travels
 * back in a batch with one lock round trip, and no memory is stranded in a
 * thread that allocates but never frees.
 *
 * Thread exit (a pthread key destructor) flushes the heap and puts it on a
 * free list for the next thread: 10,000 short threads reuse a handful of
 * heaps.  Heaps are mmap'ed, never in static TLS: the thread-local state is
 * one initial-exec pointer, jp__tls_heap.
 */
#include "alloc_init.h"
#include "tcache.h"
#include "central.h"
#include "segment.h"
#include "sizeclass.h"
#include "prof.h"
#include "counter.h"
#include "base/os.h"
#include "base/options.h"
#include "base/thread_exit.h"

#include <errno.h>
#include <string.h>

static _Atomic unsigned live_heaps;	/* written under the heap lock */

/* Bin limits (see jp__tcache_init and bin_overflow). */
#define BIN_START	32
#define BIN_START_BYTES	((size_t)16 << 10)	/* blocks up to BIN_SMALL */
#define BIN_SMALL	1024
#define BIN_START_BYTES_BIG ((size_t)4 << 10)	/* bigger ones */
#define BIN_MAX_BYTES	((size_t)512 << 10)
#define REFILL_MAX	256
static uint32_t bin_start[JP_NCLASSES];	/* a new bin's limit, in blocks */
static uint32_t bin_ceiling[JP_NCLASSES];	/* the most a bin may grow to */

/* A thread with no heap yet points here: no block, no room, so both fast
 * paths fall through to the slow ones, which create the heap. */
struct jp_heap jp__empty_heap = { .is_empty = 1 };
__thread struct jp_heap *jp__tls_heap
	__attribute__((tls_model("initial-exec"))) = &jp__empty_heap;

struct jp__lock jp__heap_lock;
struct jp_heap *jp__heaps;		/* live heaps (heap lock) */
static struct jp_heap *free_heaps;	/* heaps of exited threads */
static char *heap_chunk;		/* carving heaps from here */
static size_t heap_chunk_left;

/* The counts of exited threads' heaps (heap lock). */
static uint64_t dead_alloc[JP_NCLASSES], dead_free[JP_NCLASSES],
	dead_miss[JP_NCLASSES];

uint64_t jp__bin_counts(const struct jp_heap *h, uint32_t c,
			uint64_t *nalloc, uint64_t *nfree)
{
	const struct jp_bin *b = &h->bins[c];
	uint64_t cn = JP_CNT_LOAD(b->cn);
	uint64_t count = JP_CNT_LOAD(b->max) - JP_CN_CREDIT(cn);

	*nalloc = JP_CN_NALLOC(cn) + JP_CNT_LOAD(b->nalloc_hi);
	*nfree = count - JP_CNT_LOAD(b->nrefill) + *nalloc +
		 JP_CNT_LOAD(h->nflush[c]);
	return count;
}

/* Keep the counts of a heap whose thread exits (heap lock). */
static void heap_fold(const struct jp_heap *h)
{
	for (uint32_t c = 0; c < JP_NCLASSES; c++) {
		uint64_t nalloc, nfree;

		jp__bin_counts(h, c, &nalloc, &nfree);
		dead_alloc[c] += nalloc;
		dead_free[c] += nfree;
		dead_miss[c] += JP_CNT_LOAD(h->nmiss[c]);
	}
}

void jp__heap_dead_counts(uint32_t c, uint64_t *nalloc, uint64_t *nfree,
			  uint64_t *nmiss)
{
	*nalloc = dead_alloc[c];
	*nfree = dead_free[c];
	*nmiss = dead_miss[c];
}

static void heap_destroy(void *arg);

void jp__tcache_init(void)
{
	uint64_t cache_n = jp__settings.cache_n;

	for (uint32_t c = 0; c < JP_NCLASSES; c++) {
		size_t bs = jp__classes[c].bsize;
		uint64_t start, max;

		/*
		 * A bin starts at BIN_START blocks and BIN_START_BYTES (blocks
		 * of up to 1 KiB; 4 KiB of bigger ones, one block at least:
		 * a thread's bins of 1 to 32 KiB blocks would otherwise hold
		 * 200 KiB, multiplied by the threads), and
		 * grows (bin_overflow) up to JPSYNC_CACHE_N blocks and
		 * BIN_MAX_BYTES.  Blocks above JP_BIN_BLOCK_MAX are not cached:
		 * with many threads, cached big blocks would dominate RSS, and
		 * a lock round trip is cheap next to filling such a block.
		 */
		start = (bs <= BIN_SMALL ? BIN_START_BYTES : BIN_START_BYTES_BIG) / bs;
		if (start > BIN_START)
			start = BIN_START;
		max = BIN_MAX_BYTES / bs;
		if (max > cache_n)
			max = cache_n;
		if (start > max)
			start = max;
		if (start < 1)
			start = 1;
		if (max < start)
			max = start;
		if (jp__settings.nocache || bs > JP_BIN_BLOCK_MAX)
			start = max = 0;
		bin_start[c] = (uint32_t)start;
		bin_ceiling[c] = (uint32_t)max;
	}
	jp__lock_init(&jp__heap_lock);
	JP_BENIGN_RACE(&live_heaps, sizeof live_heaps, "atomic count of heaps");
}

/* Blocks to bring into bin b at a refill: a magazine, more for a bin that
 * has grown (fewer lock round trips for a thread that allocates in bulk). */
static uint32_t refill_want(const struct jp_bin *b)
{
	uint64_t want = jp__settings.mag_size, quarter = b->max / 4;

	if (quarter > REFILL_MAX)
		quarter = REFILL_MAX;
	if (want < quarter)
		want = quarter;
	if (want > b->max)
		want = b->max;
	return want < 1 ? 1 : (uint32_t)want;
}

/* ---- heaps ------------------------------------------------------------ */

void jp__tcache_init_late(void)
{
	/* pthread_key_create may allocate: by now the allocator is ready. */
	jp__thread_exit_init();
}

struct jp_heap *jp__heap_get(void)
{
	struct jp_heap *h = jp__tls_heap;

	/* The allocator is set up: the callers (alloc.c, check.c) hold a
	 * block or made sure. */
	if (jp_likely(!h->is_empty))
		return h;
	jp__lock(&jp__heap_lock);
	h = free_heaps;
	if (h != NULL)
		free_heaps = h->next;
	else {
		size_t sz = (sizeof *h + JP_CACHELINE - 1) & ~(size_t)(JP_CACHELINE - 1);

		if (heap_chunk_left < sz) {
			void *p;

			if (jp__os_map(&p, 256 * 1024) != 0) {
				jp__unlock(&jp__heap_lock);
				return NULL;
			}
			jp__mapped_add(256 * 1024);
			heap_chunk = p;
			heap_chunk_left = 256 * 1024;
		}
		h = (struct jp_heap *)heap_chunk;
		heap_chunk += sz;
		heap_chunk_left -= sz;
	}
	memset(h, 0, sizeof *h);
	/* Only its thread touches a heap, except the statistics, which read
	 * its counters racily on purpose (see JP_CNT_LOAD). */
	JP_BENIGN_RACE(h, sizeof *h, "thread cache counters read by stats");
	for (uint32_t c = 0; c < JP_NCLASSES; c++) {
		h->bins[c].cn = bin_start[c];
		h->bins[c].max = bin_start[c];
		if (jp__settings.prof)
			jp__prof_bin_arm(&h->bins[c], c);
	}
	h->live = 1;
	atomic_store_explicit(&live_heaps, atomic_load_explicit(&live_heaps,
			      memory_order_relaxed) + 1, memory_order_relaxed);
	h->shard = (uint8_t)jp__shard_join();
	h->next = jp__heaps;
	h->prev = NULL;
	if (jp__heaps != NULL)
		jp__heaps->prev = h;
	jp__heaps = h;
	jp__unlock(&jp__heap_lock);
	/* Set before arming, which may allocate (pthread_setspecific). */
	jp__tls_heap = h;
	jp__thread_exit_arm(JP__EXIT_HEAP, heap_destroy, h);
	return h;
}

/*
 * Give the n newest blocks of bin cls back: as one transfer chain if
 * whole is set and there is room (a bin that overflows; the blocks' cache
 * lines stay where they are until a refill takes them), else to their
 * spans (a thread's exit or flush: spans that empty can be released).
 */
static void bin_give_back(struct jp_heap *h, uint32_t cls, uint32_t n,
			  bool whole)
{
	struct jp_bin *b = &h->bins[cls];
	bool all = n == b->max - JP_CN_CREDIT(JP_CNT_LOAD(b->cn));
	void *rest;

	if (n == 0)
		return;
	JP_CNT_ADD(b->cn, n);
	JP_CNT_ADD(h->nflush[cls], n);
	if (whole && (rest = jp__central_keep(cls, b->head, n, all)) != b->head) {
		b->head = rest;
		return;
	}
	b->head = jp__central_put(cls, b->head, n, &h->live_credit);
}

/* How many bytes each thread's bins may grow by: an equal share of
 * JPSYNC_CACHE_BYTES among the threads that have a cache now. */
static uint64_t heap_budget(void)
{
	unsigned n = atomic_load_explicit(&live_heaps, memory_order_relaxed);

	return jp__settings.cache_bytes / (n < 1 ? 1 : n);
}

static void bin_set_max(struct jp_heap *h, struct jp_bin *b, uint32_t max,
			uint32_t bsize)
{
	uint64_t cn = JP_CNT_LOAD(b->cn);
	uint32_t count = b->max - JP_CN_CREDIT(cn);

	h->grown = h->grown + (uint64_t)max * bsize - (uint64_t)b->max * bsize;
	JP_CNT_SET(b->max, max);	/* read by the statistics */
	JP_CNT_SET(b->cn, (cn & ~(uint64_t)0xffff) + (max - count));
}

/*
 * A free found bin cls full.  A bin that has also run dry since its last
 * overflow is both emptied and filled by this thread: it doubles (up to
 * its class's ceiling and the thread's share of JPSYNC_CACHE_BYTES), so
 * that a thread that allocates and frees in bulk stops going to the shared
 * lists.  Otherwise the blocks go back: all of them from a bin that only
 * fills (a thread that frees what others allocate), the newer half from
 * one that has no room to grow; and a bin of a heap above its budget (more
 * threads now) halves its limit first.
 */
static void bin_overflow(struct jp_heap *h, uint32_t cls)
{
	struct jp_bin *b = &h->bins[cls];
	const struct jp_class *k = &jp__classes[cls];
	uint64_t budget = heap_budget();
	uint32_t max = b->max, count = max;
	bool dry = b->dry;

	b->dry = 0;
	if (dry && max < bin_ceiling[cls] && h->grown < budget) {
		/* Double, within the class's ceiling and the budget. */
		uint64_t inc = max, room = (budget - h->grown) / k->bsize;

		if (inc > bin_ceiling[cls] - max)
			inc = bin_ceiling[cls] - max;
		if (inc > room)
			inc = room;
		if (inc > 0) {
			bin_set_max(h, b, max + (uint32_t)inc, k->bsize);
			return;
		}
	}
	if (h->grown > budget && max > bin_start[cls]) {
		uint32_t dec = max / 2;

		if (max - dec < bin_start[cls])
			dec = max - bin_start[cls];
		max -= dec;
	}
	bin_give_back(h, cls, count - (dry ? max / 2 : 0), true);
	if (max != b->max)
		bin_set_max(h, b, max, k->bsize);
}

void jp__heap_flush(struct jp_heap *h)
{
	if (h->is_empty)
		return;
	for (uint32_t c = 0; c < JP_NCLASSES; c++)
		bin_give_back(h, c, h->bins[c].max -
			      JP_CN_CREDIT(JP_CNT_LOAD(h->bins[c].cn)), false);
}

static void heap_destroy(void *arg)
{
	struct jp_heap *h = arg;
	unsigned shard = h->shard;

	jp__heap_flush(h);
	jp__live_flush(&h->live_credit);
	jp__tls_heap = &jp__empty_heap;
	jp__lock(&jp__heap_lock);
	heap_fold(h);	/* keep the counts of a heap that goes away */
	h->live = 0;
	atomic_store_explicit(&live_heaps, atomic_load_explicit(&live_heaps,
			      memory_order_relaxed) - 1, memory_order_relaxed);
	if (h->prev != NULL)
		h->prev->next = h->next;
	else
		jp__heaps = h->next;
	if (h->next != NULL)
		h->next->prev = h->prev;
	h->next = free_heaps;
	free_heaps = h;
	jp__unlock(&jp__heap_lock);
	jp__shard_leave(shard);
}

void *jp__class_alloc(struct jp_heap *h, uint32_t cls)
{
	struct jp_bin *b = &h->bins[cls];
	void *blk = b->head, *chain, *tail;
	uint32_t got;
	bool due;

	if (blk != NULL)
		return jp__bin_pop(h, b);
	/* Blocks too big to cache come from shard 0 whoever asks: they
	 * are few per span, and spread over the shards their spans would
	 * rarely empty (a lock round trip is cheap next to such a block). */
	got = jp__central_take(jp__classes[cls].bsize > JP_BIN_BLOCK_MAX ? 0 : h->shard,
			       cls, refill_want(b), b->max, &chain, &tail, &h->live_credit);
	if (got == 0) {
		errno = ENOMEM;
		return NULL;
	}
	blk = chain;
	if (got > 1) {
		b->head = *(void **)blk;
		if (tail != NULL)
			*(void **)tail = NULL;
		JP_CNT_ADD(b->cn, -(uint64_t)(got - 1));
	}
	JP_CNT_ADD(b->nrefill, got);
	due = jp__cn_add(b, (uint64_t)1 << 16);
	/* Fold the 48-bit count into a full one now and then.  Not a count
	 * the heap profile armed (2^48 - k: bits 62 and 63 set), which its
	 * carry folds (prof.c). */
	if ((JP_CNT_LOAD(b->cn) >> 62) == 1) {
		JP_CNT_ADD(b->nalloc_hi, JP_CN_NALLOC(JP_CNT_LOAD(b->cn)));
		JP_CNT_SET(b->cn, JP_CN_CREDIT(JP_CNT_LOAD(b->cn)));
	}
	JP_CNT_ADD(h->nmiss[cls], 1);
	b->dry = 1;	/* the bin may grow at its next overflow */
	/* Not the double-free key any more (JPSYNC_CHECK looks at it first:
	 * jp__check_alloc overwrites it). */
	if (!jp__settings.check)
		((void **)blk)[1] = NULL;
	if (jp_unlikely(due))
		return jp__prof_bin_due(h, b, blk);
	return blk;
}

/* The key is checked; h is NULL when no heap could be made. */
void jp__free_block(struct jp_heap *h, void *p, struct jp_span *s)
{
	uint32_t cls = s->cls;
	struct jp_bin *b;

	((uintptr_t *)p)[1] = jp__settings.key;
	if (h == NULL) {
		/* No heap for this thread (out of memory): straight back. */
		jp__central_put(cls, p, 1, NULL);
		return;
	}
	b = &h->bins[cls];
	if (b->max == 0) {
		/* No cache (valgrind, JPSYNC_CHECK, or the empty heap of a
		 * thread that exits): straight back. */
		JP_CNT_ADD(h->nflush[cls], 1);
		jp__central_put(cls, p, 1, h->is_empty ? NULL : &h->live_credit);
		return;
	}
	if (b->head == NULL && jp__span_shard(s) != h->shard) {
		/*
		 * A block from another shard into an empty bin: a thread's
		 * first free of the class, typically of what the thread that
		 * started it allocated.  Kept, it would be this thread's next
		 * block of the class, on a cache line of blocks its owner may
		 * still write (passive false sharing, mimalloc-bench's
		 * cache-scratch); it goes back to its span, and this thread
		 * takes blocks of its own shard.  (An empty bin is reached
		 * here only by a new heap: the fast path fills the others.)
		 */
		JP_CNT_ADD(h->nflush[cls], 1);
		jp__central_put(cls, p, 1, &h->live_credit);
		return;
	}
	if (JP_CN_CREDIT(JP_CNT_LOAD(b->cn)) == 0)
		bin_overflow(h, cls);
	*(void **)p = b->head;
	b->head = p;
	JP_CNT_ADD(b->cn, -(uint64_t)1);
}

bool jp__block_is_free(struct jp_heap *h, void *p, struct jp_span *s)
{
	if (!h->is_empty) {
		struct jp_bin *b = &h->bins[s->cls];
		uint64_t count = b->max - JP_CN_CREDIT(b->cn), n = 0;

		for (void *q = b->head; q != NULL && n < count; q = *(void **)q, n++)
			if (q == p)
				return true;
	}
	return jp__central_holds(p, s);
}
