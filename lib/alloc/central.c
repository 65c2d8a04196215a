/*
 * central.c - the shared lists of each size class, one set per shard: the
 * spans that have free blocks, and the transfer chains.
 *
 * A thread cache (tcache.c) that runs empty takes a batch of blocks from
 * its shard's lists of that class, and one that overflows gives blocks
 * back, under the class lock.  A bin that overflows gives its blocks back
 * as one transfer chain, kept whole (up to JP_XFER_SLOTS chains and
 * XFER_BYTES per class and shard), and a bin that runs empty takes a whole
 * chain back in one step (the front of one too long for it): a block freed
 * by a consumer thread reaches a producer with no look at a span's free
 * map.  Otherwise blocks go back to the spans they came from, and an
 * empty bin is refilled from the spans (of its own shard, or, when none
 * has room, one adopted from a shard whose threads have all exited:
 * shard.c).  Nothing is popped without the lock, so there is no ABA to
 * guard against.
 *
 * A span whose blocks are all back is given to its segment (one empty
 * one-slice span is kept per class and shard, so that a class that keeps
 * emptying and refilling its last span does not churn), where any class
 * can take its slices.  The chains of a shard whose last thread exits, and
 * every chain before a new segment is mapped, go back to their spans, so
 * that no chain keeps a span from its segment for long.
 *
 * A span keeps its free blocks in a map of a bit per block (its segment's
 * freemap), not in a list through the blocks: a refill takes the lowest
 * free blocks first, reading each at an address the map gives, so the
 * reads of one refill overlap instead of each waiting for the link in the
 * block before (a list in the order of the frees cost a cache miss per
 * block, one after the other: 17% of a program that drops and rebuilds a
 * std::map), and the bin then hands them out in address order.  Low
 * addresses first also leave the high blocks of a span free together.
 *
 * Damage found on the way, at no cost to the fast paths: every block free
 * in its span carries the double-free key in its word 1 and 0 in its word
 * 0 (both written here), and a block of a class the
 * thread caches never hold (above 32 KiB: each free comes here at once)
 * also a guard pattern in its next 48 bytes and its last 32.  The refill
 * that takes a block from the span checks them (free_block_check), so a
 * write after free, or an overflow or underflow of a neighbour that ran
 * into a free block, ends the process with the block and the bytes named,
 * where it used to go unseen.  A free block in a
 * thread's cache or on a transfer chain has the key too (a block carved
 * for a refill gets it here): the cache's pop checks it (jp__bin_pop), and
 * a refill that takes a chain checks each block whose link it follows
 * (chain_block_check), so an overflow over them is reported before a
 * damaged link is followed (jp__free_block_damaged); their other bytes
 * are not checked (JPSYNC_CHECK checks every block).
 */
#include "alloc_init.h"
#include "central.h"
#include "segment.h"
#include "sizeclass.h"
#include "counter.h"
#include "base/os.h"

#include <limits.h>
#include <string.h>

struct jp_central jp__central[JP_NSHARDS][JP_NCLASSES];

/* Classes above JP_BIN_BLOCK_MAX have guards in their free blocks: the
 * thread caches never hold them, so every free passes here.  The head
 * guard runs from after words 0 and 1 to the block's 64th byte (48 bytes,
 * 56 on a 32-bit target), as jp_alloc(3) says. */
#define GUARD_HEAD	(64 - 2 * sizeof(void *))
#define GUARD_TAIL	32	/* bytes at the end of the block */
#define GUARD_BYTE	0x5b

/* The most that a class's transfer chains of one shard may hold. */
#define XFER_BYTES	((size_t)64 << 10)

void jp__central_init(void)
{
	for (unsigned a = 0; a < JP_NSHARDS; a++)
		for (uint32_t c = 0; c < JP_NCLASSES; c++) {
			jp__lock_init(&jp__central[a][c].lock);
			JP_BENIGN_RACE(&jp__central[a][c].nxfer, sizeof(uint32_t),
				       "read without the lock by jp__central_drain");
		}
	jp__shard_init();
}

/* The free map of span s (struct jp_segment). */
static uint64_t *span_map(const struct jp_span *s)
{
	struct jp_segment *seg = (struct jp_segment *)((uintptr_t)s & ~(uintptr_t)JP_SEG_MASK);

	return seg->freemap[s - seg->spans];
}

/* The index of block b in span s, by a multiplication: (divc >> 32) + 1
 * exceeds 2^32 / bsize by at most 1, which, times a block's offset (a
 * span is at most 1 MiB), never carries into the integer part: exact for
 * the start of a block, which is all the callers pass. */
static uint32_t block_index(const struct jp_span *s, uintptr_t b)
{
	return (uint32_t)(((uint64_t)(b - jp__span_start(s)) * ((s->divc >> 32) + 1)) >> 32);
}

static struct jp_span *span_new(struct jp_central *k, unsigned shard, uint32_t cls,
			       bool may_map)
{
	const struct jp_class *kc = &jp__classes[cls];
	struct jp_span *s = jp__span_alloc(kc->nslices, may_map);

	if (s == NULL)
		return NULL;
	__atomic_store_n(&s->shard, (uint8_t)shard, __ATOMIC_RELAXED);
	/* An adoption rewrites it under two class locks that a reader may
	 * not hold (jp__span_shard); valgrind's race detectors do not see
	 * atomic accesses as synchronisation. */
	JP_BENIGN_RACE(&s->shard, sizeof s->shard, "a span's shard, read as a hint");
	s->prof_tab = (uint8_t)shard;	/* kept through adoptions */
	s->cls = cls;
	s->bsize = kc->bsize;
	s->nblocks = kc->nblocks;
	s->bump = jp__span_start(s);
	s->bump_end = jp__span_start(s) + (uintptr_t)kc->nblocks * kc->bsize;
	memset(span_map(s), 0, ((size_t)kc->nblocks + 63) / 64 * sizeof(uint64_t));
	s->nfree = 0;
	s->scan = 0;
	s->used = 0;
	s->binoff = cls * JP_BIN_BYTES;
	s->divc = UINT64_MAX / kc->bsize + 2;
	s->limit = (uint64_t)kc->nblocks * (s->divc * kc->bsize);
	jp__span_publish(s);
	k->nspans++;
	k->empty_spans++;
	jp__span_link(k, s);
	return s;
}

/* Lock the class lock of the shard span s is under (*shard: it), which
 * an adoption may change until that lock is held. */
static struct jp_central *lock_span_shard(const struct jp_span *s, uint32_t cls,
					  unsigned *shard)
{
	for (;;) {
		unsigned a = jp__span_shard(s);
		struct jp_central *k = &jp__central[a][cls];

		jp__lock(&k->lock);
		if (jp__span_shard(s) == a) {
			*shard = a;
			return k;
		}
		jp__unlock(&k->lock);	/* adopted meanwhile */
	}
}

static void xfer_drain_all(void);

static bool guarded(const struct jp_span *s)
{
	return s->bsize > JP_BIN_BLOCK_MAX && !jp__settings.check;	/* check.c fills its own */
}

/* Offsets [lo, hi) of block b that are not GUARD_BYTE widen [*first, *last]. */
static void guard_scan(const unsigned char *b, size_t lo, size_t hi,
		       long long *first, long long *last)
{
	for (size_t i = lo; i < hi; i++)
		if (b[i] != GUARD_BYTE) {
			if (*first > (long long)i)
				*first = (long long)i;
			*last = (long long)i;
		}
}

/* The bytes of word 1 of a free block where diff (its word 1 xor the key)
 * is not zero widen [*first, *last]. */
static void key_scan(uintptr_t diff, long long *first, long long *last)
{
	for (unsigned i = 0; i < sizeof diff; i++)
		if ((diff >> (8 * i) & 0xff) != 0) {
			if (*first > (long long)(sizeof diff + i))
				*first = (long long)(sizeof diff + i);
			*last = (long long)(sizeof diff + i);
		}
}

/* The note of every report of a damaged free block. */
#define DAMAGE_NOTE "a write after free, or an overflow or underflow of a neighbour"

/*
 * Found by a bin's pop or a refill that takes a transfer chain (see
 * jp__bin_pop): word 1 of free block b is not the key.  Its link may be
 * damaged too: it is good when NULL or a block of b's class (in any span:
 * a bin's blocks come from many).  b itself is a block: it was reached
 * through links that passed, or is a bin's head.
 */
void jp__free_block_damaged(const void *b, uintptr_t diff)
{
	const struct jp_span *s = jp__span_of((uintptr_t)b);
	uintptr_t next = ((const uintptr_t *)b)[0];
	long long first = LLONG_MAX, last = -1;

	key_scan(diff, &first, &last);
	if (next != 0) {
		const struct jp_span *t = NULL;

		if ((next >> JP_SEG_SHIFT) < JP_REG_N &&
		    jp__reg_get(next) == JP_REG_SMALL &&
		    ((struct jp_segment *)(next & ~(uintptr_t)JP_SEG_MASK))->magic ==
		    JP_SEG_MAGIC)
			t = jp__span_of(next);
		if (t == NULL || t->cls != s->cls || !jp__is_block(t, next))
			first = 0;
	}
	jp__die_block("write into the free block", b, s->bsize, first, last, DAMAGE_NOTE);
}

/* A free block of a transfer chain, before a refill follows its link. */
static void chain_block_check(const void *b)
{
	uintptr_t d = ((const uintptr_t *)b)[1] ^ jp__settings.key;

	if (jp_unlikely(d != 0))
		jp__free_block_damaged(b, d);
}

/*
 * Block b is taken from the free map of span s (class lock held): its key,
 * its word 0 and, for a guarded class, its guards must be as the free left
 * them.  Dies naming the bytes otherwise.
 */
static void free_block_check(const struct jp_span *s, const unsigned char *b)
{
	uintptr_t word0 = ((const uintptr_t *)(const void *)b)[0];
	uintptr_t key = ((const uintptr_t *)(const void *)b)[1];
	long long first = LLONG_MAX, last = -1;

	/* The byte loop only for a damaged key: most blocks are intact. */
	if (jp_unlikely(key != jp__settings.key))
		key_scan(key ^ jp__settings.key, &first, &last);
	/* Word 0: 0, as jp__central_put left it. */
	if (word0 != 0) {
		first = 0;
		if (last < (long long)sizeof word0 - 1)
			last = (long long)sizeof word0 - 1;
	}
	if (guarded(s)) {
		JP_VG_DEFINED(b + 2 * sizeof(void *), GUARD_HEAD);
		JP_VG_DEFINED(b + s->bsize - GUARD_TAIL, GUARD_TAIL);
		guard_scan(b, 2 * sizeof(void *), 2 * sizeof(void *) + GUARD_HEAD, &first, &last);
		guard_scan(b, s->bsize - GUARD_TAIL, s->bsize, &first, &last);
	}
	if (last >= 0)
		jp__die_block("write into the free block", b, s->bsize, first, last, DAMAGE_NOTE);
}

/* Take free blocks of span s, lowest first, until got reaches want or
 * the span has none left; link them behind *tail; return the new got. */
static uint32_t take_free(struct jp_span *s, uint32_t want, uint32_t got, void ***tail)
{
	uint64_t *map = span_map(s);
	uintptr_t start = jp__span_start(s);
	uint32_t w = s->scan, taken = 0, words = (s->nblocks + 63) / 64;

	/* The bits below nblocks are exact (span_new clears them, a block
	 * freed twice is refused by jp__central_put), so nfree runs out
	 * before the words do. */
	while (got < want && taken < s->nfree && w < words) {
		uint64_t bits = map[w];

		while (bits != 0 && got < want) {
			unsigned char *b = (unsigned char *)start +
				((size_t)w * 64 + (unsigned)__builtin_ctzll(bits)) * s->bsize;

			bits &= bits - 1;
			/* memcheck: ours again (words 0 and 1) until
			 * MALLOCLIKE hands it out. */
			JP_VG_DEFINED(b, 2 * sizeof(void *));
			free_block_check(s, b);
			**tail = b;
			*tail = (void **)b;
			got++;
			taken++;
		}
		map[w] = bits;
		if (bits == 0)
			w++;
	}
	s->nfree -= taken;
	s->scan = w;
	s->used += taken;
	return got;
}

/* A transfer chain of at most fit blocks comes whole, however long; else
 * the blocks come from the spans (central.h). */
uint32_t jp__central_take(unsigned shard, uint32_t cls, uint32_t want,
			  uint32_t fit, void **out, void **last, uint32_t *credit)
{
	struct jp_central *k = &jp__central[shard][cls];
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
		/* The refill follows its link at once (the others are
		 * checked as the bin pops them).  A chain's blocks count as
		 * out of the spans already. */
		chain_block_check(c.head);
		*out = c.head;
		*last = NULL;
		return c.n;
	}
	if (k->nxfer > 0) {
		/* Only chains too long for this bin: take the front of the
		 * newest, so that chains nobody can take whole still go. */
		struct jp_chain *c = &k->xfer[k->nxfer - 1];
		void *b = c->head;

		for (got = 1; got < want; got++) {
			chain_block_check(b);
			b = *(void **)b;
		}
		chain_block_check(b);
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

		if (s == NULL)
			s = jp__span_adopt(k, shard, cls);
		if (s == NULL && (s = span_new(k, shard, cls, drained)) == NULL) {
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
		if (s->nfree > 0)
			got = take_free(s, want, got, &tail);
		while (got < want) {
			if (s->bump < s->bump_end) {
				b = (void *)s->bump;
				s->bump += s->bsize;
				JP_VG_DEFINED(b, 2 * sizeof(void *));
				/* A carved block may hold a stale key or
				 * pattern from an earlier life of the span;
				 * the key, as every block in a bin has (see
				 * jp__bin_pop; check mode wants 0). */
				((uintptr_t *)b)[1] = jp__settings.check ? 0 : jp__settings.key;
			} else
				break;
			*tail = b;
			tail = (void **)b;
			s->used++;
			got++;
		}
		if (s->nfree == 0 && s->bump >= s->bump_end)
			jp__span_unlink(k, s);	/* full: back in on a free */
	}
	k->used_blocks += got;
	jp__unlock(&k->lock);
	jp__live_add_local(credit, (uint64_t)got * jp__classes[cls].bsize);
	*out = head;
	*last = (void *)tail;
	return got;
}

/*
 * Return the first n blocks of the chain head of class cls, linked through
 * word 0, to their spans, under the lock of each span's shard (taken once
 * per run of blocks of the same shard: a thread's own blocks, or a run of
 * another's).  Returns the rest of the chain (the link of the n-th block).
 */
void *jp__central_put(uint32_t cls, void *head, size_t n, uint32_t *credit)
{
	struct jp_central *k = NULL;
	unsigned cur = JP_NSHARDS;
	uint64_t moved = 0;

	for (size_t i = 0; i < n; i++) {
		void *b = head;
		struct jp_span *s = jp__span_of((uintptr_t)b);
		uint64_t *word, bit;
		uint32_t idx;

		head = *(void **)b;
		if (jp__span_shard(s) != cur) {
			if (k != NULL) {
				k->used_blocks -= moved;
				jp__unlock(&k->lock);
			}
			k = lock_span_shard(s, cls, &cur);
			moved = 0;
		}
		idx = block_index(s, (uintptr_t)b);
		word = &span_map(s)[idx / 64];
		bit = (uint64_t)1 << (idx % 64);
		if (jp_unlikely(*word & bit)) {
			/* Free in its span already: a double free that a
			 * thread's cache hid from the check at the free. */
			jp__unlock(&k->lock);
			jp__die_ptr("double free", b);
		}
		*word |= bit;
		*(void **)b = NULL;
		/* The key here, whatever the block's way back: a block a
		 * refill carved, kept in a bin and flushed unused has none. */
		((uintptr_t *)b)[1] = jp__settings.key;
		s->nfree++;
		if (idx / 64 < s->scan)
			s->scan = idx / 64;
		if (guarded(s)) {
			memset((char *)b + 2 * sizeof(void *), GUARD_BYTE, GUARD_HEAD);
			memset((char *)b + s->bsize - GUARD_TAIL, GUARD_BYTE, GUARD_TAIL);
		}
		JP_VG_FREELIKE(b);
		moved++;
		if (!s->in_list)
			jp__span_link(k, s);
		if (--s->used == 0) {
			/* JPSYNC_CHECK keeps every span: a freed block
			 * stays where check mode can find it again (its
			 * next allocation checks the fill, a second free is
			 * a double free), until jp_alloc_trim. */
			if (!jp__settings.check && (k->empty_spans >= 1 || s->nslices > 1)) {
				/* Keep one empty span per class of one-slice
				 * spans; give the others to their segment for
				 * any class (with 8 shards, kept spans of up
				 * to 1 MiB of every big class would add up). */
				jp__span_unlink(k, s);
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
	/* Once for the whole chain (a decrease sets no peak, so one add per
	 * shard would tell nothing more). */
	if (n > 0)
		jp__live_add_local(credit, -(uint64_t)n * jp__classes[cls].bsize);
	return head;
}

/* Send the transfer chains of shard a back to their spans. */
void jp__central_drain(unsigned a)
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
			jp__central_put(cls, c[j].head, c[j].n, NULL);
	}
}

static void xfer_drain_all(void)
{
	for (unsigned a = 0; a < JP_NSHARDS; a++)
		jp__central_drain(a);
}

/*
 * Keep the chain on the transfer chains of the shard of its first block,
 * if there is room and a thread of that shard to take them (the chains of
 * a shard are undone when its last thread exits).  all: nothing to cut.
 */
void *jp__central_keep(uint32_t cls, void *head, uint32_t n, bool all)
{
	unsigned shard = jp__span_shard(jp__span_of((uintptr_t)head));
	struct jp_central *k = &jp__central[shard][cls];
	uint64_t bs = jp__classes[cls].bsize;
	void *rest = NULL;

	/* relaxed: a hint; a chain kept just as the shard's last thread
	 * exits waits for the shard's next thread, or jp_alloc_trim. */
	if (jp__shard_threads(shard) == 0)
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

/* Is p on a transfer chain of its class (in any shard: a chain goes to
 * the shard of its first block), or free in its span's map?  (The
 * double-free check.) */
bool jp__central_holds(void *p, struct jp_span *s)
{
	struct jp_central *k;
	unsigned shard;
	bool found = false;

	for (unsigned a = 0; a < JP_NSHARDS && !found; a++) {
		struct jp_central *x = &jp__central[a][s->cls];

		jp__lock(&x->lock);
		for (uint32_t i = 0; i < x->nxfer && !found; i++) {
			uint64_t n = 0;

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
	k = lock_span_shard(s, s->cls, &shard);
	if (jp__is_block(s, (uintptr_t)p)) {
		uint32_t idx = block_index(s, (uintptr_t)p);

		found = (span_map(s)[idx / 64] >> (idx % 64)) & 1;
	}
	jp__unlock(&k->lock);
	return found;
}

size_t jp__central_trim(void)
{
	size_t total = 0;

	xfer_drain_all();
	for (unsigned i = 0; i < JP_NSHARDS * JP_NCLASSES; i++) {
		struct jp_central *k = &jp__central[i / JP_NCLASSES][i % JP_NCLASSES];
		struct jp_span *s, *next;

		jp__lock(&k->lock);
		for (s = k->spans; s != NULL; s = next) {
			next = s->next;
			if (s->used == 0) {
				jp__span_unlink(k, s);
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
