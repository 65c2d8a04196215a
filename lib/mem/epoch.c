/*
 * epoch.c - jp_epoch: epoch-based reclamation.
 *
 * The epoch object holds a global epoch counter G.  Each thread that uses it
 * has a record (perthread.h) with its local word: 0 outside, (E << 1) | 1
 * inside, where E is the G it read when it entered; nested enters only count.
 *
 * retire(ptr) tags ptr with the G it reads after the caller unlinked ptr,
 * and keeps it in the thread's limbo list.  G moves from g to g + 1 only
 * when every thread inside has local epoch g.  A pointer tagged t is freed
 * once G >= t + 2: a reader that could hold it entered before the unlink, so
 * it read G <= t and stored its local word before loading the pointer; while
 * it stays inside, G cannot pass its epoch + 1 <= t + 1.
 *
 * The memory orders that make "before" hold:
 *  - enter: the store of the local word, then a seq_cst fence, then (in the
 *    caller) the loads of shared pointers.  Without the fence the loads may
 *    be performed before the store is visible (store->load reordering, even
 *    on x86), and a reclaimer scanning the records would miss the reader.
 *  - retire and synchronize start with a seq_cst fence, pairing with the
 *    reader's: either the reader's pointer load sees the unlink, or the
 *    scan after our fence sees the reader's local word.
 *  - exit stores 0 with release; the scans load with acquire, so the
 *    reader's accesses to the object happen before free_fn runs.
 *
 * G moves only in advance_from(), after a scan that found nobody inside
 * with an older epoch.  synchronize() drives G two steps past the value it
 * read at the call, waiting between scans: every reader inside at the call
 * has left by then.  It holds no lock while it waits (a reader may block on
 * a lock of its own before it can leave).
 *
 * This is the library's only epoch implementation: the allocator's design
 * needs none.
 */
#include "base/jp_internal.h"
#include "base/lock.h"
#include "base/os.h"
#include "base/perthread.h"

#include <jpsync/epoch.h>

#include <errno.h>
#include <stdbool.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#define LIMBO_COLLECT 64	/* retired pointers per thread before a collection */

struct limbo {
	struct limbo *next;
	void *ptr;
	void (*fn)(void *);
	uint64_t tag;
};

struct ep_rec {
	struct jp__pt_rec rec;
	unsigned nest;			/* owner thread only */
	struct jp__lock lock;		/* protects limbo (barrier takes others') */
	struct limbo *limbo;
	size_t nlimbo;
	_Alignas(JP_CACHELINE) _Atomic uint64_t local;
};

struct jp_epoch {
	struct jp__pt_hub *hub;
	uint64_t hub_id;
	struct limbo *orphans;		/* of exited threads, under hub->lock */
	_Alignas(JP_CACHELINE) _Atomic uint64_t global;
};

static struct ep_rec *rec_of(jp_epoch_t *e)
{
	struct ep_rec *r;

	if (jp_likely(jp__pt_tls.id == e->hub_id))
		return (struct ep_rec *)jp__pt_tls.rec;
	r = (struct ep_rec *)jp__pt_get_slow(e->hub);
	if (r == NULL)
		jp__die("jp_epoch: out of memory for a thread's record");
	return r;
}

static void ep_rec_init(struct jp__pt_rec *rec)
{
	struct ep_rec *r = (struct ep_rec *)rec;

	jp__lock_init(&r->lock);
	atomic_init(&r->local, 0);
	JP_BENIGN_RACE(&r->local, sizeof r->local, "reader word, accessed atomically");
}

/* Called under the hub lock when a thread with a record exits. */
static void ep_thread_exit(void *owner, struct jp__pt_rec *rec)
{
	struct jp_epoch *e = owner;
	struct ep_rec *r = (struct ep_rec *)rec;
	struct limbo *l = r->limbo;

	while (l != NULL) {
		struct limbo *next = l->next;

		l->next = e->orphans;
		e->orphans = l;
		l = next;
	}
	r->limbo = NULL;
	r->nlimbo = 0;
	JP_HB_RELEASE(&r->local);
	atomic_store_explicit(&r->local, 0, memory_order_release);	/* as exit */
}

JP_EXPORT jp_epoch_t *jp_epoch_create(void)
{
	struct jp_epoch *e;
	void *m;

	if (posix_memalign(&m, JP_CACHELINE, sizeof *e) != 0) {
		errno = ENOMEM;
		return NULL;
	}
	e = m;
	e->orphans = NULL;
	atomic_init(&e->global, 1);
	JP_BENIGN_RACE(&e->global, sizeof e->global, "epoch counter, accessed atomically");
	e->hub = jp__pt_hub_new(e, sizeof(struct ep_rec), ep_rec_init, ep_thread_exit);
	if (e->hub == NULL) {
		free(e);
		errno = ENOMEM;
		return NULL;
	}
	e->hub_id = e->hub->id;
	return e;
}

JP_EXPORT void jp_epoch_enter(jp_epoch_t *e)
{
	struct ep_rec *r = rec_of(e);

	if (r->nest++ == 0) {
		/* seq_cst load: see retire's comment on why a stale G is safe
		 * but an unordered one is not. */
		uint64_t g = atomic_load(&e->global);

		/* relaxed: ordered by the fence that follows. */
		atomic_store_explicit(&r->local, g << 1 | 1, memory_order_relaxed);
		/* The store of the local word before the caller's loads of
		 * shared pointers (store->load: needs a full fence). */
		atomic_thread_fence(memory_order_seq_cst);
	}
}

JP_EXPORT void jp_epoch_exit(jp_epoch_t *e)
{
	struct ep_rec *r = rec_of(e);

	if (jp_unlikely(r->nest == 0))
		jp__die("jp_epoch_exit without jp_epoch_enter");
	if (--r->nest == 0) {
		JP_HB_RELEASE(&r->local);
		/* release: the reader's accesses happen before any free_fn
		 * that a scanner's acquire load of this word lets run. */
		atomic_store_explicit(&r->local, 0, memory_order_release);
	}
}

/* Is the reader r inside with an epoch older than g? */
static bool holds_back(struct ep_rec *r, uint64_t g)
{
	/* acquire: pairs with exit's release store. */
	uint64_t l = atomic_load_explicit(&r->local, memory_order_acquire);

	if ((l & 1) && (l >> 1) < g)
		return true;
	JP_HB_ACQUIRE(&r->local);	/* its earlier sections are over */
	return false;
}

/*
 * Move G from g to g + 1 if no thread inside holds it back: the only way G
 * ever moves, so "G >= t + 2" always means two clean scans since t.
 * Returns true if G is now past g (by us or by someone else).
 */
static bool advance_from(jp_epoch_t *e, uint64_t g, bool block)
{
	struct jp__pt_rec *x;

	if (block)
		jp__lock(&e->hub->lock);
	else if (!jp__trylock(&e->hub->lock))
		return false;
	atomic_thread_fence(memory_order_seq_cst);	/* pairs with enter's fence */
	for (x = e->hub->recs; x != NULL; x = x->onext)
		if (holds_back((struct ep_rec *)x, g))
			break;
	if (x == NULL) {
		JP_HB_RELEASE(&e->global);	/* what the scan saw, to the freers */
		atomic_compare_exchange_strong(&e->global, &g, g + 1);
	}
	jp__unlock(&e->hub->lock);
	return x == NULL;
}

static void try_advance(jp_epoch_t *e)
{
	advance_from(e, atomic_load(&e->global), false);
}

static void run_list(struct limbo *l)
{
	while (l != NULL) {
		struct limbo *next = l->next;

		l->fn(l->ptr);
		free(l);
		l = next;
	}
}

/* Take the entries of *list with tag + 2 <= g (all if g is UINT64_MAX). */
static struct limbo *take_ripe(struct limbo **list, size_t *count, uint64_t g)
{
	struct limbo *ripe = NULL, **pp = list;

	while (*pp != NULL) {
		struct limbo *l = *pp;

		if (g == UINT64_MAX || l->tag + 2 <= g) {
			*pp = l->next;
			l->next = ripe;
			ripe = l;
			if (count != NULL)
				(*count)--;
		} else {
			pp = &l->next;
		}
	}
	return ripe;
}

static void collect(jp_epoch_t *e, struct ep_rec *r)
{
	struct limbo *ripe, *orph = NULL;
	uint64_t g;

	try_advance(e);
	g = atomic_load(&e->global);
	JP_HB_ACQUIRE(&e->global);
	jp__lock(&r->lock);
	ripe = take_ripe(&r->limbo, &r->nlimbo, g);
	jp__unlock(&r->lock);
	if (jp__trylock(&e->hub->lock)) {
		orph = take_ripe(&e->orphans, NULL, g);
		jp__unlock(&e->hub->lock);
	}
	/* The free functions run with no lock held. */
	run_list(ripe);
	run_list(orph);
}

JP_EXPORT void jp_epoch_retire(jp_epoch_t *e, void *ptr, void (*free_fn)(void *))
{
	struct ep_rec *r = rec_of(e);
	struct limbo *l = malloc(sizeof *l);
	bool full;

	if (l == NULL)
		jp__die("jp_epoch_retire: out of memory");
	/* The caller's unlink of ptr before our load of G, and before any
	 * later scan: pairs with the readers' fence in enter. */
	atomic_thread_fence(memory_order_seq_cst);
	l->ptr = ptr;
	l->fn = free_fn != NULL ? free_fn : free;
	l->tag = atomic_load(&e->global);
	jp__lock(&r->lock);
	l->next = r->limbo;
	r->limbo = l;
	full = ++r->nlimbo >= LIMBO_COLLECT;
	jp__unlock(&r->lock);
	if (full)
		collect(e, r);
}

static void pause_a_bit(unsigned *spins)
{
	if (++*spins < 64) {
		sched_yield();
	} else {
		struct timespec ts = { 0, *spins < 256 ? 50000 : 1000000 };

		nanosleep(&ts, NULL);
	}
}

JP_EXPORT void jp_epoch_synchronize(jp_epoch_t *e)
{
	struct ep_rec *self = rec_of(e);
	uint64_t g0;
	unsigned spins = 0;

	if (self->nest != 0)
		jp__die("jp_epoch_synchronize inside jp_epoch_enter/exit would wait for itself");
	atomic_thread_fence(memory_order_seq_cst);	/* the caller's unlinks before the scans */
	/*
	 * Readers inside now have epochs <= g0.  G reaches g0 + 2 only through
	 * a scan that found no reader inside with an epoch below g0 + 1: by
	 * then every one of them has left.  The lock is held for one scan at a
	 * time, never while waiting (a reader may be waiting for a lock of its
	 * own before it can leave).
	 */
	g0 = atomic_load(&e->global);
	for (;;) {
		uint64_t g = atomic_load(&e->global);

		if (g >= g0 + 2)
			break;
		if (!advance_from(e, g, true))
			pause_a_bit(&spins);
	}
	JP_HB_ACQUIRE(&e->global);
}

/* Detach every pending entry: this epoch's records' and the orphans'. */
static struct limbo *take_all(jp_epoch_t *e)
{
	struct limbo *all = NULL;

	jp__lock(&e->hub->lock);
	for (struct jp__pt_rec *x = e->hub->recs; x != NULL; x = x->onext) {
		struct ep_rec *r = (struct ep_rec *)x;
		struct limbo *l;

		jp__lock(&r->lock);
		l = take_ripe(&r->limbo, &r->nlimbo, UINT64_MAX);
		jp__unlock(&r->lock);
		while (l != NULL) {
			struct limbo *next = l->next;

			l->next = all;
			all = l;
			l = next;
		}
	}
	while (e->orphans != NULL) {
		struct limbo *l = e->orphans;

		e->orphans = l->next;
		l->next = all;
		all = l;
	}
	jp__unlock(&e->hub->lock);
	return all;
}

JP_EXPORT void jp_epoch_barrier(jp_epoch_t *e)
{
	/* Pending at the call: retired after their unlink, so any reader
	 * holding one is inside now, and synchronize waits for it. */
	struct limbo *all = take_all(e);

	jp_epoch_synchronize(e);
	run_list(all);
}

JP_EXPORT void jp_epoch_destroy(jp_epoch_t *e)
{
	if (e == NULL)
		return;
	jp_epoch_barrier(e);
	jp__pt_hub_kill(e->hub);
	free(e);
}
