/*
 * tcache.c - thread caches (heaps), the shared per-class span lists, and
 * what happens at thread exit and fork.
 *
 * A thread's heap holds, per size class, a LIFO list of free blocks that
 * only that thread touches (no atomics on the fast paths in alloc.c).  A
 * free pushes onto the list of the freeing thread, whichever thread
 * allocated the block.  The list is bounded: it starts small and grows
 * (bin_overflow) for a thread that both empties and overfills it, within
 * JPSYNC_CACHE_N blocks and the thread's share of JPSYNC_CACHE_BYTES.  When
 * it is full, the blocks it gives back stay linked as one transfer chain
 * on the class's shared lists (up to JP_XFER_SLOTS chains and XFER_BYTES
 * per class and arena; the chains of an arena whose last thread exits are
 * undone), and an empty list takes a whole chain back in one step (the
 * front of one too long for it); otherwise blocks go back to the spans
 * they came from, under the class lock, and an empty list is refilled
 * with a batch (JPSYNC_MAG_SIZE, or more for a grown list) from the
 * spans.  So a block freed by another thread travels back in a batch with
 * one lock round trip, with no ABA to guard against (nothing is popped
 * without the lock), and no memory is stranded in a thread that allocates
 * but never frees.
 *
 * A span whose blocks are all back is given to its segment (one empty
 * one-slice span is kept per class and arena so that a class that keeps
 * emptying and refilling its last span does not churn), where any class
 * can take its slices.
 *
 * Thread exit (a pthread key destructor) flushes the heap and puts it on a
 * free list for the next thread: 10,000 short threads reuse a handful of
 * heaps.  Heaps are mmap'ed, never in static TLS: the thread-local state is
 * one initial-exec pointer, jp__tls_heap.
 */
#include "alloc_internal.h"
#include "options.h"

#include <errno.h>
#include <string.h>

struct jp_class jp__classes[JP_NCLASSES];
struct jp_central jp__central[JP_NARENAS][JP_NCLASSES];
static unsigned narenas = 1;		/* in use: 4 per CPU, at most 8 */
static unsigned next_arena;		/* heap lock */
static _Atomic unsigned live_heaps;	/* written under the heap lock */
static _Atomic unsigned arena_heaps[JP_NARENAS];	/* the same, per arena */

/* Bin limits (see jp__tcache_init and bin_overflow). */
#define BIN_START	32
#define BIN_START_BYTES	((size_t)16 << 10)	/* blocks up to BIN_SMALL */
#define BIN_SMALL	1024
#define BIN_START_BYTES_BIG ((size_t)4 << 10)	/* bigger ones */
#define BIN_MAX_BYTES	((size_t)512 << 10)
#define BIN_BLOCK_MAX	((size_t)32 << 10)
#define REFILL_MAX	256
/* The most that a class's transfer chains of one arena may hold. */
#define XFER_BYTES	((size_t)64 << 10)
/* Bin offsets by request size, for sizes up to JP_LOOKUP_MAX: indexed by
 * the size itself, so that jp_alloc needs no rounding before the load. */
#define L(i) ((uint16_t)(JP_SIZE_CLASS_C((i) * 16ull) * sizeof(struct jp_bin)))
#define X16(i) L(i), L(i), L(i), L(i), L(i), L(i), L(i), L(i), \
	L(i), L(i), L(i), L(i), L(i), L(i), L(i), L(i)
const uint16_t jp__class_lookup[JP_LOOKUP_MAX + 1] = {
	L(0), X16(1), X16(2), X16(3), X16(4), X16(5), X16(6), X16(7),
	X16(8), X16(9), X16(10), X16(11), X16(12), X16(13), X16(14),
	X16(15), X16(16), X16(17), X16(18), X16(19), X16(20), X16(21),
	X16(22), X16(23), X16(24), X16(25), X16(26), X16(27), X16(28),
	X16(29), X16(30), X16(31), X16(32), X16(33), X16(34), X16(35),
	X16(36), X16(37), X16(38), X16(39), X16(40), X16(41), X16(42),
	X16(43), X16(44), X16(45), X16(46), X16(47), X16(48), X16(49),
	X16(50), X16(51), X16(52), X16(53), X16(54), X16(55), X16(56),
	X16(57), X16(58), X16(59), X16(60), X16(61), X16(62), X16(63),
	X16(64)
};
#undef X16
#undef L

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
uint64_t jp__dead_alloc[JP_NCLASSES], jp__dead_free[JP_NCLASSES],
	jp__dead_miss[JP_NCLASSES];

static pthread_key_t heap_key;
static _Atomic int key_state;		/* 0 none, 1 creating, 2 ready */
static _Atomic uintptr_t key_creator;

static void heap_destroy(void *arg);

/* ---- size classes -------------------------------------------------- */

void jp__tcache_init(void)
{
	uint64_t cache_n = jp__ag.cache_n;

	for (uint32_t c = 0; c < JP_NCLASSES; c++) {
		struct jp_class *k = &jp__classes[c];
		size_t bs = jp__class_size(c);
		uint64_t start, max;

		k->bsize = (uint32_t)bs;
		if (bs <= 8192)
			k->nslices = 1;
		else {
			k->nslices = (uint32_t)((bs * 8 + JP_SLICE_SIZE - 1) / JP_SLICE_SIZE);
			if (k->nslices > JP_SPAN_MAX_SLICES)
				k->nslices = JP_SPAN_MAX_SLICES;
		}
		k->nblocks = (uint32_t)((size_t)k->nslices * JP_SLICE_SIZE / bs);
		/*
		 * A bin starts at BIN_START blocks and BIN_START_BYTES (blocks
		 * of up to 1 KiB; 4 KiB of bigger ones, one block at least:
		 * a thread's bins of 1 to 32 KiB blocks would otherwise hold
		 * 200 KiB, multiplied by the threads), and
		 * grows (bin_overflow) up to JPSYNC_CACHE_N blocks and
		 * BIN_MAX_BYTES.  Blocks above BIN_BLOCK_MAX are not cached:
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
		if (jp__ag.nocache || bs > BIN_BLOCK_MAX)
			start = max = 0;
		k->cache_start = (uint32_t)start;
		k->cache_max = (uint32_t)max;
	}
	/* The lock words are atomics, which helgrind and drd do not see;
	 * the locks' happens-before annotations order what they protect. */
	for (unsigned a = 0; a < JP_NARENAS; a++)
		for (uint32_t c = 0; c < JP_NCLASSES; c++) {
			JP_BENIGN_RACE(&jp__central[a][c].lock, sizeof(struct jp__lock),
				       "lock word");
			JP_BENIGN_RACE(&jp__central[a][c].nxfer, sizeof(uint32_t),
				       "read without the lock by xfer_drain");
		}
	narenas = jp__os_cpu_count() * 4;
	if (narenas < 1)
		narenas = 1;
	if (narenas > JP_NARENAS)
		narenas = JP_NARENAS;
	JP_BENIGN_RACE(&jp__seg_lock, sizeof(struct jp__lock), "lock word");
	JP_BENIGN_RACE(&jp__heap_lock, sizeof(struct jp__lock), "lock word");
	JP_BENIGN_RACE(&live_heaps, sizeof live_heaps, "atomic count of heaps");
	JP_BENIGN_RACE(arena_heaps, sizeof arena_heaps, "atomic counts of heaps");
}

/* Blocks to bring into bin b at a refill: a magazine, more for a bin that
 * has grown (fewer lock round trips for a thread that allocates in bulk). */
static uint32_t refill_want(const struct jp_bin *b)
{
	uint64_t want = jp__ag.mag_size, quarter = b->max / 4;

	if (quarter > REFILL_MAX)
		quarter = REFILL_MAX;
	if (want < quarter)
		want = quarter;
	if (want > b->max)
		want = b->max;
	return want < 1 ? 1 : (uint32_t)want;
}

static void span_link(struct jp_central *k, struct jp_span *s)
{
	s->prev = NULL;
	s->next = k->spans;
	if (k->spans != NULL)
		k->spans->prev = s;
	k->spans = s;
	s->in_list = 1;
}

static void span_unlink(struct jp_central *k, struct jp_span *s)
{
	if (s->prev != NULL)
		s->prev->next = s->next;
	else
		k->spans = s->next;
	if (s->next != NULL)
		s->next->prev = s->prev;
	s->in_list = 0;
}

static struct jp_span *span_new(struct jp_central *k, unsigned arena, uint32_t cls,
			       bool may_map)
{
	const struct jp_class *kc = &jp__classes[cls];
	struct jp_span *s = jp__span_alloc(kc->nslices, may_map);

	if (s == NULL)
		return NULL;
	s->arena = (uint8_t)arena;
	s->cls = cls;
	s->bsize = kc->bsize;
	s->nblocks = kc->nblocks;
	s->bump = jp__span_start(s);
	s->bump_end = jp__span_start(s) + (uintptr_t)kc->nblocks * kc->bsize;
	s->free = NULL;
	s->used = 0;
	s->binoff = cls * (uint32_t)sizeof(struct jp_bin);
	s->divc = UINT64_MAX / kc->bsize + 2;
	s->limit = (uint64_t)kc->nblocks * (s->divc * kc->bsize);
	jp__span_publish(s);
	k->nspans++;
	k->empty_spans++;
	span_link(k, s);
	return s;
}

static void xfer_drain_all(void);

/*
 * Take up to want blocks of class cls, linked through word 0 (the last
 * one, *last, has a garbage link; *last is NULL when the chain ends in a
 * NULL link already); returns the count, 0 when out of memory.  A
 * transfer chain of at most fit blocks comes whole, however long; else
 * the blocks come from the spans.
 */
static uint32_t class_take(unsigned arena, uint32_t cls, uint32_t want,
			   uint32_t fit, void **out, void **last)
{
	struct jp_central *k = &jp__central[arena][cls];
	void *head = NULL, **tail = &head;
	uint32_t got = 0;
	bool drained = false;

	jp__lock(&k->lock);
	for (uint32_t i = k->nxfer; i-- > 0;) {
		struct jp_chain c = k->xfer[i];

		if (c.n > fit)
			continue;	/* from a grown bin: another may take it */
		JP_CNT_SET(k->nxfer, k->nxfer - 1);
		memmove(&k->xfer[i], &k->xfer[i + 1], (k->nxfer - i) * sizeof c);
		k->xfer_blocks -= c.n;
		jp__unlock(&k->lock);
		*out = c.head;
		*last = NULL;
		return c.n;
	}
	if (k->nxfer > 0) {
		/* Only chains too long for this bin: take the front of the
		 * newest, so that chains nobody can take whole still go. */
		struct jp_chain *c = &k->xfer[k->nxfer - 1];
		void *b = c->head;

		for (got = 1; got < want; got++)
			b = *(void **)b;
		*out = c->head;
		*last = b;
		c->head = *(void **)b;
		c->n -= got;
		k->xfer_blocks -= got;
		jp__unlock(&k->lock);
		return got;
	}
	while (got < want) {
		struct jp_span *s = k->spans;
		void *b;

		if (s == NULL && (s = span_new(k, arena, cls, drained)) == NULL) {
			if (drained)
				break;	/* out of memory */
			/*
			 * No room left in the segments.  Before a new one is
			 * mapped, the transfer chains go back to their spans:
			 * their blocks may be all that keeps some spans from
			 * being given to their segments for this class.
			 */
			jp__unlock(&k->lock);
			xfer_drain_all();
			drained = true;
			jp__lock(&k->lock);
			continue;
		}
		if (s->used == 0)
			k->empty_spans--;
		while (got < want) {
			if (s->free != NULL) {
				b = s->free;
				/* memcheck: ours again (words 0 and 1) until
				 * MALLOCLIKE hands it out. */
				JP_VG_DEFINED(b, 2 * sizeof(void *));
				s->free = *(void **)b;
			} else if (s->bump < s->bump_end) {
				b = (void *)s->bump;
				s->bump += s->bsize;
				JP_VG_DEFINED(b, 2 * sizeof(void *));
				/* A carved block may hold a stale key or
				 * pattern from an earlier life of the span. */
				if (jp__ag.check)
					((uintptr_t *)b)[1] = 0;
			} else
				break;
			*tail = b;
			tail = (void **)b;
			s->used++;
			got++;
		}
		if (s->free == NULL && s->bump >= s->bump_end)
			span_unlink(k, s);	/* full: back in on a free */
	}
	k->used_blocks += got;
	if (k->used_blocks > k->peak_used_blocks)
		k->peak_used_blocks = k->used_blocks;
	jp__unlock(&k->lock);
	*out = head;
	*last = (void *)tail;
	return got;
}

/*
 * Return the first n blocks of the chain head of class cls, linked through
 * word 0, to their spans, under the lock of each span's arena (taken once
 * per run of blocks of the same arena: a thread's own blocks, or a run of
 * another's).  Returns the rest of the chain (the link of the n-th block).
 */
static void *class_put_chain(uint32_t cls, void *head, size_t n)
{
	struct jp_central *k = NULL;
	unsigned cur = JP_NARENAS;
	uint64_t moved = 0;

	for (size_t i = 0; i < n; i++) {
		void *b = head;
		struct jp_span *s = jp__span_of((uintptr_t)b);

		head = *(void **)b;
		if (s->arena != cur) {
			if (k != NULL) {
				k->used_blocks -= moved;
				jp__unlock(&k->lock);
			}
			cur = s->arena;
			k = &jp__central[cur][cls];
			moved = 0;
			jp__lock(&k->lock);
		}
		*(void **)b = s->free;
		s->free = b;
		JP_VG_FREELIKE(b);
		moved++;
		if (!s->in_list)
			span_link(k, s);
		if (--s->used == 0) {
			if (k->empty_spans >= 1 || s->nslices > 1) {
				/* Keep one empty span per class of one-slice
				 * spans; give the others to their segment for
				 * any class (with 8 arenas, kept spans of up
				 * to 1 MiB of every big class would add up). */
				span_unlink(k, s);
				k->nspans--;
				jp__span_release(s);
			} else
				k->empty_spans++;
		}
	}
	if (k != NULL) {
		k->used_blocks -= moved;
		jp__unlock(&k->lock);
	}
	return head;
}

/* Send the transfer chains of arena a back to their spans. */
static void xfer_drain(unsigned a)
{
	for (uint32_t cls = 0; cls < JP_NCLASSES; cls++) {
		struct jp_central *k = &jp__central[a][cls];
		struct jp_chain c[JP_XFER_SLOTS];
		uint32_t n;

		/* Read without the lock: most classes have no chain, and a
		 * drain before each new segment should cost next to nothing
		 * then.  A chain kept meanwhile waits for the next drain. */
		if (JP_CNT_LOAD(k->nxfer) == 0)
			continue;
		jp__lock(&k->lock);
		n = k->nxfer;
		memcpy(c, k->xfer, n * sizeof c[0]);
		JP_CNT_SET(k->nxfer, 0);
		k->xfer_blocks = 0;
		jp__unlock(&k->lock);
		for (uint32_t j = 0; j < n; j++)
			class_put_chain(cls, c[j].head, c[j].n);
	}
}

static void xfer_drain_all(void)
{
	for (unsigned a = 0; a < JP_NARENAS; a++)
		xfer_drain(a);
}

/* ---- heaps ------------------------------------------------------------ */

static void key_init(void)
{
	int z = 0;

	if (atomic_compare_exchange_strong(&key_state, &z, 1)) {
		/* relaxed: read only by this same thread (re-entry). */
		atomic_store_explicit(&key_creator, (uintptr_t)pthread_self(),
				      memory_order_relaxed);
		/* pthread_key_create and pthread_atfork may allocate: by
		 * now the allocator is ready for it. */
		if (pthread_key_create(&heap_key, heap_destroy) != 0) {
			atomic_store(&key_state, 3);
			return;
		}
		pthread_atfork(jp__atfork_prepare, jp__atfork_parent,
			       jp__atfork_child);
		atomic_store(&key_state, 2);
		return;
	}
	/* Another thread is creating the key: wait, so that our heap gets
	 * its destructor.  The creating thread itself gets here when the
	 * calls above allocate; it must not wait for itself. */
	while (atomic_load(&key_state) == 1 &&
	       atomic_load_explicit(&key_creator, memory_order_relaxed) !=
	       (uintptr_t)pthread_self())
		jp_cpu_relax();
}

void jp__tcache_init_late(void)
{
	key_init();
}

struct jp_heap *jp__heap_get(void)
{
	struct jp_heap *h = jp__tls_heap;

	if (jp_likely(!h->is_empty))
		return h;
	if (atomic_load_explicit(&jp__alloc_state, memory_order_acquire) != 2)
		jp__alloc_init_slow();
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
		h->bins[c].cn = jp__classes[c].cache_start;
		h->bins[c].max = jp__classes[c].cache_start;
	}
	h->live = 1;
	atomic_store_explicit(&live_heaps, atomic_load_explicit(&live_heaps,
			      memory_order_relaxed) + 1, memory_order_relaxed);
	h->arena = (uint8_t)(next_arena++ % narenas);
	atomic_store_explicit(&arena_heaps[h->arena], atomic_load_explicit(
			      &arena_heaps[h->arena], memory_order_relaxed) + 1,
			      memory_order_relaxed);
	h->next = jp__heaps;
	h->prev = NULL;
	if (jp__heaps != NULL)
		jp__heaps->prev = h;
	jp__heaps = h;
	jp__unlock(&jp__heap_lock);
	/* Set before pthread_setspecific, which may allocate. */
	jp__tls_heap = h;
	if (atomic_load(&key_state) != 2)
		key_init();
	if (atomic_load(&key_state) == 2)
		pthread_setspecific(heap_key, h);
	return h;
}

/*
 * Keep the first n blocks of the chain head of class cls whole, on the
 * transfer chains of the arena of its first block, if there is room and a
 * thread of that arena to take them (the chains of an arena are undone
 * when its last thread exits).  all: the chain has n blocks and ends in a
 * NULL link (a whole bin), so there is nothing to cut.  Returns the rest
 * of the chain, or head itself when it was not kept.
 */
static void *xfer_put(uint32_t cls, void *head, uint32_t n, bool all)
{
	unsigned arena = jp__span_of((uintptr_t)head)->arena;
	struct jp_central *k = &jp__central[arena][cls];
	uint64_t bs = jp__classes[cls].bsize;
	void *rest = NULL;

	/* relaxed: a hint; a chain kept just as the arena's last thread
	 * exits waits for the arena's next thread, or jp_alloc_trim. */
	if (atomic_load_explicit(&arena_heaps[arena], memory_order_relaxed) == 0)
		return head;
	jp__lock(&k->lock);
	if (k->nxfer == JP_XFER_SLOTS || (k->xfer_blocks + n) * bs > XFER_BYTES) {
		/* Full: the blocks' own cache lines are hot here, the
		 * chains' are not; the blocks go to their spans. */
		jp__unlock(&k->lock);
		return head;
	}
	if (!all) {
		void *tail = head;

		for (uint32_t i = 1; i < n; i++)
			tail = *(void **)tail;
		rest = *(void **)tail;
		*(void **)tail = NULL;
	}
	k->xfer[k->nxfer] = (struct jp_chain){ head, n };
	JP_CNT_SET(k->nxfer, k->nxfer + 1);
	k->xfer_blocks += n;
	jp__unlock(&k->lock);
	return rest;
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
	if (whole && (rest = xfer_put(cls, b->head, n, all)) != b->head) {
		b->head = rest;
		return;
	}
	b->head = class_put_chain(cls, b->head, n);
}

/* How many bytes each thread's bins may grow by: an equal share of
 * JPSYNC_CACHE_BYTES among the threads that have a cache now. */
static uint64_t heap_budget(void)
{
	unsigned n = atomic_load_explicit(&live_heaps, memory_order_relaxed);

	return jp__ag.cache_bytes / (n < 1 ? 1 : n);
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
 * its class's cache_max and the thread's share of JPSYNC_CACHE_BYTES), so
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
	if (dry && max < k->cache_max && h->grown < budget) {
		/* Double, within the class's ceiling and the budget. */
		uint64_t inc = max, room = (budget - h->grown) / k->bsize;

		if (inc > k->cache_max - max)
			inc = k->cache_max - max;
		if (inc > room)
			inc = room;
		if (inc > 0) {
			bin_set_max(h, b, max + (uint32_t)inc, k->bsize);
			return;
		}
	}
	if (h->grown > budget && max > k->cache_start) {
		uint32_t dec = max / 2;

		if (max - dec < k->cache_start)
			dec = max - k->cache_start;
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

static void heap_fold(struct jp_heap *h)
{
	/* Under the heap lock: keep the counts of a heap that goes away. */
	for (uint32_t c = 0; c < JP_NCLASSES; c++) {
		struct jp_bin *b = &h->bins[c];
		uint64_t count = b->max - JP_CN_CREDIT(b->cn);
		uint64_t nalloc = JP_CN_NALLOC(b->cn) + b->nalloc_hi;
		uint64_t frees = count - b->nrefill + nalloc + h->nflush[c];

		jp__dead_alloc[c] += nalloc;
		jp__dead_free[c] += frees;
		jp__dead_miss[c] += h->nmiss[c];
	}
}

static void heap_destroy(void *arg)
{
	struct jp_heap *h = arg;
	unsigned arena = h->arena, left;

	jp__heap_flush(h);
	jp__tls_heap = &jp__empty_heap;
	jp__lock(&jp__heap_lock);
	heap_fold(h);
	h->live = 0;
	atomic_store_explicit(&live_heaps, atomic_load_explicit(&live_heaps,
			      memory_order_relaxed) - 1, memory_order_relaxed);
	left = atomic_load_explicit(&arena_heaps[arena], memory_order_relaxed) - 1;
	atomic_store_explicit(&arena_heaps[arena], left, memory_order_relaxed);
	if (h->prev != NULL)
		h->prev->next = h->next;
	else
		jp__heaps = h->next;
	if (h->next != NULL)
		h->next->prev = h->prev;
	h->next = free_heaps;
	free_heaps = h;
	jp__unlock(&jp__heap_lock);
	/* No thread of this arena left to take its chains (xfer_put keeps
	 * no more there until one comes). */
	if (left == 0)
		xfer_drain(arena);
}

/* ---- slow paths ------------------------------------------------------ */

/* A block of class cls for heap h: from its bin, else a batch refill. */
void *jp__class_alloc(struct jp_heap *h, uint32_t cls)
{
	struct jp_bin *b = &h->bins[cls];
	void *blk = b->head, *chain, *tail;
	uint32_t got;

	if (blk != NULL) {
		b->head = *(void **)blk;
		JP_CNT_ADD(b->cn, JP_CN_ALLOC);
		((void **)blk)[1] = NULL;
		return blk;
	}
	/* Blocks too big to cache come from arena 0 whoever asks: they
	 * are few per span, and spread over the arenas their spans would
	 * rarely empty (a lock round trip is cheap next to such a block). */
	got = class_take(jp__classes[cls].bsize > BIN_BLOCK_MAX ? 0 : h->arena,
			 cls, refill_want(b), b->max, &chain, &tail);
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
	JP_CNT_ADD(b->cn, (uint64_t)1 << 16);
	/* Fold the 48-bit count into a full one now and then. */
	if (JP_CNT_LOAD(b->cn) >= ((uint64_t)1 << 62)) {
		JP_CNT_ADD(b->nalloc_hi, JP_CN_NALLOC(JP_CNT_LOAD(b->cn)));
		JP_CNT_SET(b->cn, JP_CN_CREDIT(JP_CNT_LOAD(b->cn)));
	}
	JP_CNT_ADD(h->nmiss[cls], 1);
	b->dry = 1;	/* the bin may grow at its next overflow */
	/* Not the double-free key any more (JPSYNC_CHECK looks at it first:
	 * check_alloc overwrites it). */
	if (!jp__ag.check)
		((void **)blk)[1] = NULL;
	return blk;
}

/* Free a valid small block p of span s into heap h (the key is checked;
 * h may be NULL when no heap could be made). */
void jp__free_block(struct jp_heap *h, void *p, struct jp_span *s)
{
	uint32_t cls = s->cls;
	struct jp_bin *b;

	((uintptr_t *)p)[1] = jp__ag.key;
	if (h == NULL) {
		/* No heap for this thread (out of memory): straight back. */
		class_put_chain(cls, p, 1);
		return;
	}
	b = &h->bins[cls];
	if (b->max == 0) {
		/* No cache (valgrind, JPSYNC_CHECK): straight back. */
		JP_CNT_ADD(h->nflush[cls], 1);
		class_put_chain(cls, p, 1);
		return;
	}
	if (JP_CN_CREDIT(JP_CNT_LOAD(b->cn)) == 0)
		bin_overflow(h, cls);
	*(void **)p = b->head;
	b->head = p;
	JP_CNT_ADD(b->cn, -(uint64_t)1);
}

/* Is p on the free list of bin, or of its span?  (double-free check) */
bool jp__block_is_free(struct jp_heap *h, void *p, struct jp_span *s)
{
	struct jp_central *k = &jp__central[s->arena][s->cls];
	bool found = false;
	uint64_t n = 0;

	if (!h->is_empty) {
		struct jp_bin *b = &h->bins[s->cls];
		uint64_t count = b->max - JP_CN_CREDIT(b->cn);

		for (void *q = b->head; q != NULL && n < count; q = *(void **)q, n++)
			if (q == p)
				return true;
	}
	/* The transfer chains of the class, in every arena (a chain goes to
	 * the arena of its first block). */
	for (unsigned a = 0; a < JP_NARENAS && !found; a++) {
		struct jp_central *x = &jp__central[a][s->cls];

		jp__lock(&x->lock);
		for (uint32_t i = 0; i < x->nxfer && !found; i++) {
			n = 0;
			for (void *q = x->xfer[i].head; q != NULL && n < x->xfer[i].n;
			     q = *(void **)q, n++)
				if (q == p) {
					found = true;
					break;
				}
		}
		jp__unlock(&x->lock);
	}
	if (found)
		return true;
	jp__lock(&k->lock);
	n = 0;
	for (void *q = s->free; q != NULL && n < s->nblocks; n++) {
		void *next;

		if (q == p) {
			found = true;
			break;
		}
		JP_VG_DEFINED(q, sizeof(void *));
		next = *(void **)q;
		if (jp__ag.vg)
			JP_VG_NOACCESS(q, sizeof(void *));
		q = next;
	}
	jp__unlock(&k->lock);
	return found;
}

size_t jp__classes_trim(void)
{
	size_t total = 0;

	xfer_drain_all();
	for (unsigned i = 0; i < JP_NARENAS * JP_NCLASSES; i++) {
		struct jp_central *k = &jp__central[i / JP_NCLASSES][i % JP_NCLASSES];
		struct jp_span *s, *next;

		jp__lock(&k->lock);
		for (s = k->spans; s != NULL; s = next) {
			next = s->next;
			if (s->used == 0) {
				span_unlink(k, s);
				k->nspans--;
				k->empty_spans--;
				total += (size_t)s->nslices * JP_SLICE_SIZE;
				jp__span_release(s);
			}
		}
		jp__unlock(&k->lock);
	}
	return total;
}

/* ---- fork ------------------------------------------------------------- */

/*
 * Take every lock before fork so that the child gets consistent lists.  A
 * lock this very thread holds (fork from a signal handler that interrupted
 * the allocator) is left alone: waiting for it would deadlock, and the
 * interrupted code finishes its work after the handler returns.
 */
#define NLOCKS (JP_NARENAS * JP_NCLASSES + 2)
static uint64_t held_by_us[(NLOCKS + 63) / 64];

static void lock_for_fork(struct jp__lock *l, unsigned i)
{
	if (atomic_load_explicit(&l->owner, memory_order_relaxed) ==
	    (uintptr_t)pthread_self()) {
		held_by_us[i / 64] |= 1ULL << (i % 64);
		return;
	}
	jp__lock(l);
}

static void unlock_after_fork(struct jp__lock *l, unsigned i)
{
	if (held_by_us[i / 64] & (1ULL << (i % 64)))
		return;
	jp__unlock(l);
}

/*
 * fork and stdio.  glibc's fork runs the prepare handlers before it takes
 * the stdio list lock.  So: thread A forks and holds the allocator's locks;
 * thread B, inside fflush(NULL), holds the list lock and waits for the
 * lock of a FILE that thread C holds in getline; C's getline calls the
 * allocator (a read function of fopencookie, or malloc through the preload
 * module) and waits for A; A waits for the list lock.  jemalloc 5.3 and
 * tcmalloc 2.10 hang there.  glibc's malloc takes its locks after the list
 * lock, the order restored here: prepare takes the list lock first (glibc
 * exports _IO_list_lock, a recursive lock, for this: a fork from a signal
 * handler that interrupted fflush(NULL) in this thread takes it again),
 * the parent handler drops it and the child's resets it, as glibc's fork
 * does for its own.  Weak: on a C library without them, nothing to order.
 */
extern void _IO_list_lock(void) __attribute__((weak));
extern void _IO_list_unlock(void) __attribute__((weak));
extern void _IO_list_resetlock(void) __attribute__((weak));
extern char __libc_single_threaded __attribute__((weak));

/*
 * Whether prepare took the list lock.  Like glibc's fork, not in a process
 * that has only ever had one thread: nobody can race it there.  Once set
 * it stays set (a process does not become single-threaded again), and
 * concurrent forks of a threaded process are serialised by the list lock;
 * atomic only so that two preparing threads may both write 1.
 */
static _Atomic int stdio_locked;

static bool have_io_list_lock(void)
{
	return &_IO_list_lock != NULL && &_IO_list_unlock != NULL &&
	       &_IO_list_resetlock != NULL;
}

void jp__atfork_prepare(void)
{
	int threaded = &__libc_single_threaded == NULL || !__libc_single_threaded;

	threaded = threaded && have_io_list_lock();
	/* relaxed: read back by this thread (parent) or its only copy (child). */
	atomic_store_explicit(&stdio_locked, threaded, memory_order_relaxed);
	if (threaded)
		_IO_list_lock();
	memset(held_by_us, 0, sizeof held_by_us);
	for (unsigned i = 0; i < JP_NARENAS * JP_NCLASSES; i++)
		lock_for_fork(&jp__central[i / JP_NCLASSES][i % JP_NCLASSES].lock, i);
	lock_for_fork(&jp__seg_lock, NLOCKS - 2);
	lock_for_fork(&jp__heap_lock, NLOCKS - 1);
}

void jp__atfork_parent(void)
{
	unlock_after_fork(&jp__heap_lock, NLOCKS - 1);
	unlock_after_fork(&jp__seg_lock, NLOCKS - 2);
	for (unsigned i = JP_NARENAS * JP_NCLASSES; i-- > 0;)
		unlock_after_fork(&jp__central[i / JP_NCLASSES][i % JP_NCLASSES].lock, i);
	if (atomic_load_explicit(&stdio_locked, memory_order_relaxed))
		_IO_list_unlock();
}

static void reset_lock(struct jp__lock *l)
{
	/* relaxed: the child has one thread. */
	atomic_store_explicit(&l->owner, 0, memory_order_relaxed);
	atomic_store_explicit(&l->waiters, 0, memory_order_relaxed);
	atomic_store_explicit(&l->seq, 0, memory_order_relaxed);
}

void jp__atfork_child(void)
{
	/*
	 * Only this thread exists now: every lock is free again, also one
	 * that the code this thread interrupted (fork from a signal handler)
	 * holds, so that the child can allocate, as with the C library's
	 * malloc; the interrupted code's unlock, if the handler returns,
	 * finds it free.
	 */
	reset_lock(&jp__heap_lock);
	reset_lock(&jp__seg_lock);
	for (unsigned i = 0; i < JP_NARENAS * JP_NCLASSES; i++)
		reset_lock(&jp__central[i / JP_NCLASSES][i % JP_NCLASSES].lock);
	if (atomic_load_explicit(&stdio_locked, memory_order_relaxed))
		_IO_list_resetlock();
}
