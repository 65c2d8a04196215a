/*
 * shard.c - the shards: which one a thread's heap joins, how many heaps
 * each has, and the adoption of the spans that a shard whose threads have
 * all exited still holds.
 *
 * Threads are spread over up to JP_NSHARDS sets of shared lists (central.c)
 * so that threads refilling and flushing the same class do not all queue
 * on one lock.  A span belongs to one shard, and only a thread of that
 * shard refills from it; the counts of heaps here say which shards have
 * none, so that their spans can be adopted by the others.
 */
#include "central.h"
#include "segment.h"
#include "base/os.h"

#include <limits.h>
#include <stdatomic.h>

unsigned jp__nshards = 1;		/* in use: 4 per CPU, at most 8 */
/* Live heaps per shard. */
static _Atomic unsigned shard_heaps[JP_NSHARDS];

void jp__shard_init(void)
{
	jp__nshards = jp__os_cpu_count() * 4;
	if (jp__nshards < 1)
		jp__nshards = 1;
	if (jp__nshards > JP_NSHARDS)
		jp__nshards = JP_NSHARDS;
	JP_BENIGN_RACE(shard_heaps, sizeof shard_heaps, "atomic counts of heaps");
}

/*
 * The shard with the fewest threads, the lowest-numbered of those, joined:
 * threads spread over the shards, and a program whose threads come and go
 * keeps to the same few shards, whose spans already hold its blocks (a
 * round robin would leave partly used spans of every class in every shard).
 * relaxed: the counts are hints, and for jp__central_keep; a drain is
 * ordered by the class locks it takes.
 */
unsigned jp__shard_join(void)
{
	unsigned best = 0, least = UINT_MAX;

	for (unsigned a = 0; a < jp__nshards; a++) {
		unsigned n = atomic_load_explicit(&shard_heaps[a], memory_order_relaxed);

		if (n < least) {
			least = n;
			best = a;
		}
	}
	atomic_fetch_add_explicit(&shard_heaps[best], 1, memory_order_relaxed);
	return best;
}

unsigned jp__shard_threads(unsigned shard)
{
	return atomic_load_explicit(&shard_heaps[shard], memory_order_relaxed);
}

void jp__shard_leave(unsigned shard)
{
	/* No thread of this shard left to take its chains (jp__central_keep
	 * keeps no more there until one comes). */
	if (atomic_fetch_sub_explicit(&shard_heaps[shard], 1, memory_order_relaxed) == 1)
		jp__central_drain(shard);
}

/*
 * Shard shard has no span of class cls with room (k, its lists, locked):
 * take one that has room from a shard no thread uses, linked into k's
 * list, or NULL.  A thread that exits while blocks of its spans are in use
 * leaves their room in its shard, and their frees come back there; until
 * a thread joins that shard again, nobody else could use it, and threads
 * elsewhere carved fresh spans beside it (test_orphaned_adopted in
 * tests/alloc/test-alloc-transit.c makes such a shard).
 * The other shard's lock is only tried: holding two class locks while
 * waiting for one could deadlock against another adopter, or the fork
 * handler; a shard whose lock is busy is passed over.  Both locks are
 * held while the span's shard changes (jp__span_shard).
 */
struct jp_span *jp__span_adopt(struct jp_central *k, unsigned shard, uint32_t cls)
{
	for (unsigned a = 0; a < jp__nshards; a++) {
		struct jp_central *o = &jp__central[a][cls];
		struct jp_span *s;

		/* relaxed: a hint; a thread that joins shard a just now only
		 * finds one span fewer there. */
		if (a == shard || atomic_load_explicit(&shard_heaps[a], memory_order_relaxed) != 0 ||
		    !jp__trylock(&o->lock))
			continue;
		s = o->spans;
		if (s != NULL) {
			jp__span_unlink(o, s);
			o->nspans--;
			o->used_blocks -= s->used;
			if (s->used == 0)
				o->empty_spans--;
			__atomic_store_n(&s->shard, (uint8_t)shard, __ATOMIC_RELAXED);
			k->nspans++;
			k->used_blocks += s->used;
			if (s->used == 0)
				k->empty_spans++;
			jp__span_link(k, s);
		}
		jp__unlock(&o->lock);
		if (s != NULL)
			return s;
	}
	return NULL;
}
