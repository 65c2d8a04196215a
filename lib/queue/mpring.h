/*
 * mpring.h - the bounded multi-producer ring with per-slot sequence numbers
 * (Vyukov), shared by mpsc.c and mpmc.c: its layout (struct jp__mpring, the
 * first and only member of struct jp_mpsc and struct jp_mpmc) and the body
 * of every public function, as static inline helpers.  Each of the two
 * files writes its public functions out by name, a line or two calling
 * these; the helpers of the consumer side take a const bool mc, a constant
 * at every call (false in mpsc.c: the single consumer owns head; true in
 * mpmc.c: consumers claim positions with a compare-exchange on head), so
 * the compiler folds it and each queue's code is what it would be if it
 * were written for that queue alone.
 *
 * Each slot starts with a 64-bit sequence number.  For position p in slot
 * p & mask: seq == 2p means the slot is free for the producer of p; seq ==
 * 2p + 1 means the element of p is published for its consumer, who frees the
 * slot for position p + capacity by storing seq = 2(p + capacity).  (Vyukov
 * uses p and p + 1; doubling keeps "published for p" and "free for p + 1"
 * apart when the capacity is 1.)  The slot stores seq - 2(p & mask), the
 * same for every position of a slot but the lap (seq_free and seq_full
 * below): a fresh ring, all zero, is every slot free for its first
 * position, so creating a queue writes no slot and costs no memory until
 * the slots are used, whatever the capacity.  A producer
 * claims p with a compare-exchange on tail (which also carries the closed
 * bit, see queue_internal.h), copies, and publishes with a release store of
 * seq; a consumer reads seq with acquire, so the copy into the slot happened
 * before its copy out.
 *
 * Parking behind a started slot.  A caller blocks on the slot that its next
 * position needs: a consumer of head h on slot h & mask until its producer
 * publishes it (seq_full(h)), a producer of tail t on slot t & mask until
 * the consumer of t - capacity frees it (seq_free(t)).  That slot may be
 * claimed by a thread that has not finished (a copy in flight, a started
 * in-place slot, a preempted thread): the indices then say "not empty"
 * or "not full" and yet nothing can be moved.  Such a caller parks on the
 * queue's channel like one that finds the queue empty or full, and the
 * store that finishes the slot (publish(), release_slot()) is what wakes
 * it.  The window to close, with the waiter W and the finishing thread F:
 *
 *     W: re-checks the slot: not finished      F: stores the slot's seq
 *                                              F: reads the waiter count: 0
 *     W: registers, sleeps                     (nobody to wake: W sleeps on)
 *
 * and its mirror, the one a CPU produces by itself: F's store waits in its
 * store buffer while F's later load of the count runs ahead, so F reads 0
 * before W registers while W's re-check still reads the old seq.  Closed
 * with park.h's pairing, the same as for empty and full: W registers
 * (seq_cst RMW) BEFORE it reads the channel word and re-checks (seq_cst
 * loads of head or tail and of the slot's seq); F stores the slot's seq,
 * then a fence, then loads the count (finished()).  The slot's store stays
 * a plain release store and the fence is queue_internal.h's asymmetric
 * one: a compiler barrier on F's side, membarrier(2) on W's (jp__qwait's
 * asym, true for both directions here), or seq_cst fences on both where
 * membarrier is missing.  Either W's re-check sees the finished slot and W
 * does not sleep, or F sees the registration and wakes W.  The re-check
 * reads the index again after the slot: another caller of the same side
 * may have taken the position meanwhile (mpmc), and W must then try again
 * rather than sleep on a slot that is no longer its own.
 */
#ifndef JP_MPRING_H
#define JP_MPRING_H

#include "queue_internal.h"

#include <jpsync/queue.h>

/* Helpers that are a public function's body (or its hot part): inlined,
 * so that mc folds and the one-element calls are specialised (n == 1). */
#define MPRING_INLINE static inline __attribute__((always_inline))

/* A queue's header; the ring of slots follows it in the same mapping. */
struct jp__mpring {
	unsigned char *ring;
	size_t mask;
	size_t esize;
	size_t stride;
	size_t bytes;
	_Alignas(JP_CACHELINE) _Atomic uint64_t tail;	/* bit 63: closed */
	_Alignas(JP_CACHELINE) _Atomic uint64_t head;
	struct jp__park_chan not_empty JP_ALIGNED_CL;
	struct jp__park_chan not_full JP_ALIGNED_CL;
};

static inline _Atomic uint64_t *slot_seq(const struct jp__mpring *q, uint64_t pos)
{
	return (_Atomic uint64_t *)(void *)(q->ring + (pos & q->mask) * q->stride);
}

/* The stored sequence numbers of position pos: free for it, published. */
static inline uint64_t seq_free(const struct jp__mpring *q, uint64_t pos)
{
	return 2 * (pos & ~(uint64_t)q->mask);
}

static inline uint64_t seq_full(const struct jp__mpring *q, uint64_t pos)
{
	return seq_free(q, pos) + 1;
}

static inline unsigned char *slot_data(const struct jp__mpring *q, uint64_t pos)
{
	return q->ring + (pos & q->mask) * q->stride + sizeof(uint64_t);
}


/* The body of jp_mpsc_create and jp_mpmc_create: the header, NULL with errno. */
static inline struct jp__mpring *mpring_create(size_t capacity, size_t elem_size)
{
	size_t cap, stride, bytes;
	struct jp__mpring *q;

	q = jp__qmap(sizeof *q, capacity, elem_size, sizeof(uint64_t),
		     sizeof(uint64_t), &cap, &stride, &bytes);
	if (q == NULL)
		return NULL;
	q->ring = (unsigned char *)q + ((sizeof *q + JP_CACHELINE - 1) & ~(size_t)(JP_CACHELINE - 1));
	q->mask = cap - 1;
	q->esize = elem_size;
	q->stride = stride;
	q->bytes = bytes;
	/*
	 * The mapping is zero: every slot is free for its first position.
	 * The whole ring in one annotation, not one per slot, so that a ring
	 * is created at once under valgrind too: the sequence numbers are
	 * atomics, and the element copies are ordered by the happens-before
	 * annotations of publish() and release_slot().
	 */
	JP_BENIGN_RACE(q->ring, cap * stride, "queue slots: atomic sequence numbers");
	atomic_init(&q->tail, 0);
	atomic_init(&q->head, 0);
	JP_BENIGN_RACE(&q->tail, sizeof q->tail, "index, accessed atomically");
	JP_BENIGN_RACE(&q->head, sizeof q->head, "index, accessed atomically");
	jp__park_chan_init(&q->not_empty);
	jp__park_chan_init(&q->not_full);
	return q;
}

static inline void mpring_destroy(struct jp__mpring *q)
{
	if (q != NULL)
		jp__qunmap(q, q->bytes);
}

/*
 * Claim up to n consecutive free positions from tail; returns how many
 * (0: full, or closed with *closed set) and the first in *first.
 */
MPRING_INLINE size_t claim_push(struct jp__mpring *q, size_t n, uint64_t *first, bool *closed)
{
	/* relaxed: a guess, validated by the slot's seq and the CAS. */
	uint64_t pos = atomic_load_explicit(&q->tail, memory_order_relaxed);

	*closed = false;
	for (;;) {
		size_t k = 0;

		if (pos & JP__Q_CLOSED) {
			*closed = true;
			return 0;
		}
		/* acquire: the consumer's copy out of the slot happened before. */
		while (k < n && k <= q->mask &&
		       atomic_load_explicit(slot_seq(q, pos + k), memory_order_acquire) == seq_free(q, pos + k))
			k++;
		if (k == 0) {
			uint64_t t = atomic_load(&q->tail);

			if (t == pos)
				return 0;	/* full */
			pos = t;
			continue;
		}
		/* seq_cst: the waker's half of the Dekker pair with a sleeping
		 * consumer; fails if another producer moved tail or close set
		 * the bit. */
		if (atomic_compare_exchange_weak(&q->tail, &pos, pos + k)) {
			*first = pos;
			return k;
		}
	}
}

/*
 * Happens-before of a slot, for the race detectors: ThreadSanitizer gets
 * the slot itself (the copy in happens before that element's copy out, and
 * nothing more); valgrind's tools get one object per direction, tail for
 * elements published, head for slots freed, because drd slows down
 * faster than the work grows with one object per slot (2 producers and a
 * consumer of 1,000 / 3,000 elements: 5.1 / 19 s, against 1.1 / 1.8 s).
 */
static JP_COLD void slot_hb_announce(const struct jp__mpring *q, uint64_t pos, const void *side,
				     bool release)
{
	if (release) {
		JP_HB_BEFORE(side);
		if (jp__tsan_on())
			__tsan_release(slot_seq(q, pos));
	} else {
		if (jp__tsan_on())
			__tsan_acquire(slot_seq(q, pos));
		JP_HB_AFTER(side);
	}
}

static inline void slot_hb_release(const struct jp__mpring *q, uint64_t pos, const void *side)
{
	if (jp_unlikely(jp__annotate))
		slot_hb_announce(q, pos, side, true);
}

static inline void slot_hb_acquire(const struct jp__mpring *q, uint64_t pos, const void *side)
{
	if (jp_unlikely(jp__annotate))
		slot_hb_announce(q, pos, side, false);
}

static inline void publish(struct jp__mpring *q, uint64_t pos)
{
	slot_hb_release(q, pos, &q->tail);
	/* release: the copy into the slot happens before the consumer's read. */
	atomic_store_explicit(slot_seq(q, pos), seq_full(q, pos), memory_order_release);
}

/*
 * After a slot's finishing store (publish() or release_slot(), plain
 * release stores): the fast half of the asymmetric fence, then the waker's
 * half of park.h's pairing on c (see the opening comment).  When nobody
 * waits: a compiler barrier and one load of a line nobody writes.
 */
static inline void finished(struct jp__park_chan *c)
{
	jp__q_fast_fence();
	jp__park_chan_wake_fenced(c);
}

/*
 * The one-element calls in two halves, around the copy: the start claims
 * a position and fills *slot; publish() (push) or release_slot() and
 * popped() (pop) give it to the other side.  try_push/try_pop copy in
 * between; the in-place slot calls of 1.1 let the caller do it.  A started
 * push holds its claimed position (consumers of it and of later positions
 * wait for the finish, as they wait for a copy in flight); a started pop
 * holds the slot until its finish frees it.
 */
MPRING_INLINE int try_push_start(struct jp__mpring *q, jp_queue_slot_t *slot)
{
	uint64_t pos;
	bool closed;

	if (jp_unlikely(q == NULL || slot == NULL))
		return EINVAL;
	if (claim_push(q, 1, &pos, &closed) == 0)
		return closed ? EPIPE : EAGAIN;
	slot_hb_acquire(q, pos, &q->head);
	slot->elem = slot_data(q, pos);
	slot->pos = pos;
	return 0;
}

MPRING_INLINE int mpring_try_push(struct jp__mpring *q, const void *elem)
{
	jp_queue_slot_t s;
	int r;

	if (jp_unlikely(elem == NULL))
		return EINVAL;
	r = try_push_start(q, &s);
	if (r != 0)
		return r;
	jp__qcopy(s.elem, elem, q->esize);
	publish(q, s.pos);
	finished(&q->not_empty);
	return 0;
}

MPRING_INLINE size_t mpring_push_bulk(struct jp__mpring *q, const void *elems, size_t n)
{
	uint64_t pos;
	bool closed;
	size_t k;

	if (n == 0)
		return 0;
	if (q == NULL || elems == NULL)
		return jp__qbulk_none(EINVAL);
	k = claim_push(q, n, &pos, &closed);
	if (k == 0)
		return jp__qbulk_none(closed ? EPIPE : EAGAIN);
	for (size_t i = 0; i < k; i++) {
		slot_hb_acquire(q, pos + i, &q->head);
		memcpy(slot_data(q, pos + i), (const unsigned char *)elems + i * q->esize, q->esize);
		publish(q, pos + i);
	}
	finished(&q->not_empty);
	return k;
}

/*
 * Claim up to n consecutive published positions from head; 0 when none is
 * published, with *status EAGAIN or (closed and drained) EPIPE.  mc: the
 * consumers claim with a compare-exchange on head; without it the single
 * consumer owns head.
 */
MPRING_INLINE size_t claim_pop(struct jp__mpring *q, size_t n, uint64_t *first, int *status,
			       const bool mc)
{
	/* relaxed: a guess, validated by the slot's seq and the CAS. */
	uint64_t pos = atomic_load_explicit(&q->head, memory_order_relaxed);

	for (;;) {
		size_t k = 0;

		/* acquire: the producer's copy into the slot happened before. */
		while (k < n && k <= q->mask &&
		       atomic_load_explicit(slot_seq(q, pos + k), memory_order_acquire) == seq_full(q, pos + k))
			k++;
		if (k == 0) {
			uint64_t t = atomic_load(&q->tail);

			*status = EAGAIN;
			if (JP__Q_POS(t) == pos && (t & JP__Q_CLOSED))
				*status = EPIPE;	/* nothing claimed, nothing can be */
			else if (mc && atomic_load(&q->head) != pos) {
				pos = atomic_load(&q->head);
				continue;
			}
			return 0;
		}
		/* seq_cst: the waker's half of the Dekker pair with a sleeping
		 * producer (see queue_internal.h). */
		if (mc && !atomic_compare_exchange_weak(&q->head, &pos, pos + k))
			continue;
		*first = pos;
		return k;
	}
}

static inline void release_slot(struct jp__mpring *q, uint64_t pos)
{
	slot_hb_release(q, pos, &q->head);
	/* release: our copy out happens before the next producer's copy in. */
	atomic_store_explicit(slot_seq(q, pos), seq_free(q, pos + q->mask + 1),
			      memory_order_release);
}

/*
 * A single consumer's head moves past the k positions from pos.  release:
 * the slots' release before head moves.  The single consumer publishes
 * head with a plain store and pays no locked instruction (which would wait
 * for the slot's sequence store to reach memory); its half of the Dekker
 * pair with a sleeping producer is the asymmetric fence of
 * queue_internal.h, like SPSC.
 */
static void popped_single(struct jp__mpring *q, uint64_t pos, size_t k)
{
	atomic_store_explicit(&q->head, pos + k, memory_order_release);
	finished(&q->not_full);
}

/*
 * After a pop of k positions from pos, their slots freed: wake a producer
 * waiting for room, or for one of these slots (the opening comment).
 */
MPRING_INLINE void popped(struct jp__mpring *q, uint64_t pos, size_t k, const bool mc)
{
	if (mc)
		finished(&q->not_full);	/* after release_slot()'s store */
	else
		popped_single(q, pos, k);
}

MPRING_INLINE int try_pop_start(struct jp__mpring *q, jp_queue_slot_t *slot, const bool mc)
{
	uint64_t pos;
	int status;

	if (jp_unlikely(q == NULL || slot == NULL))
		return EINVAL;
	if (claim_pop(q, 1, &pos, &status, mc) == 0)
		return status;
	slot_hb_acquire(q, pos, &q->tail);
	slot->elem = slot_data(q, pos);
	slot->pos = pos;
	return 0;
}

MPRING_INLINE int mpring_try_pop(struct jp__mpring *q, void *elem, const bool mc)
{
	jp_queue_slot_t s;
	int r;

	if (jp_unlikely(elem == NULL))
		return EINVAL;
	r = try_pop_start(q, &s, mc);
	if (r != 0)
		return r;
	jp__qcopy(elem, s.elem, q->esize);
	release_slot(q, s.pos);
	popped(q, s.pos, 1, mc);
	return 0;
}

MPRING_INLINE size_t mpring_pop_bulk(struct jp__mpring *q, void *elems, size_t n, const bool mc)
{
	uint64_t pos;
	int status;
	size_t k;

	if (n == 0)
		return 0;
	if (q == NULL || elems == NULL)
		return jp__qbulk_none(EINVAL);
	k = claim_pop(q, n, &pos, &status, mc);
	if (k == 0)
		return jp__qbulk_none(status);
	for (size_t i = 0; i < k; i++) {
		slot_hb_acquire(q, pos + i, &q->tail);
		memcpy((unsigned char *)elems + i * q->esize, slot_data(q, pos + i), q->esize);
		release_slot(q, pos + i);
	}
	popped(q, pos, k, mc);
	return k;
}

/*
 * The re-checks of a parking caller, seq_cst loads after its registration
 * and the slow fence (the opening comment): true when the slot the caller
 * needs is not finished and the index still points at it, so that only a
 * finishing store (which wakes the channel) or a close (which bumps it)
 * can let the caller on.
 */
static inline bool push_may_sleep(const void *qv)
{
	struct jp__mpring *q = (struct jp__mpring *)qv;
	uint64_t t = atomic_load(&q->tail);

	if (t & JP__Q_CLOSED)
		return false;
	if (atomic_load(slot_seq(q, t)) == seq_free(q, t))
		return false;		/* room: try again */
	return atomic_load(&q->tail) == t;
}

static inline bool pop_may_sleep(const void *qv)
{
	struct jp__mpring *q = (struct jp__mpring *)qv;
	uint64_t h = atomic_load(&q->head);
	uint64_t t;

	if (atomic_load(slot_seq(q, h)) == seq_full(q, h))
		return false;		/* published: try again */
	t = atomic_load(&q->tail);
	if ((t & JP__Q_CLOSED) && JP__Q_POS(t) == h)
		return false;		/* closed and drained: EPIPE */
	return atomic_load(&q->head) == h;
}

/*
 * The blocking calls: try_op(q, arg) (a queue's try_push, try_pop or slot
 * start, through a void * wrapper) until it does not return EAGAIN, parked
 * on not_full or not_empty.  The wakers finish slots with plain release
 * stores (finished()), so both directions re-check after the asymmetric
 * fence (jp__qwait's asym).
 */
MPRING_INLINE int mpring_wait_push(void *q, jp__qtry_fn try_op, void *arg,
				   const struct timespec *deadline, const bool mc)
{
	(void)mc;
	return jp__qwait(q, offsetof(struct jp__mpring, not_full), try_op, push_may_sleep,
			 arg, deadline, true);
}

MPRING_INLINE int mpring_wait_pop(void *q, jp__qtry_fn try_op, void *arg,
				  const struct timespec *deadline)
{
	return jp__qwait(q, offsetof(struct jp__mpring, not_empty), try_op, pop_may_sleep,
			 arg, deadline, true);
}

/* The finishes' check that a slot is as its start left it: a second
 * finish, or most slots of another queue, is not (a documented abort). */
static inline bool slot_started(const struct jp__mpring *q, const jp_queue_slot_t *slot,
				bool full)
{
	uint64_t seq;

	if (jp_unlikely(q == NULL || slot == NULL))
		return false;
	seq = full ? seq_full(q, slot->pos) : seq_free(q, slot->pos);
	return slot->elem == slot_data(q, slot->pos) &&
	       atomic_load_explicit(slot_seq(q, slot->pos), memory_order_relaxed) == seq;
}

/* The finishes past that check. */
MPRING_INLINE void mpring_push_finish(struct jp__mpring *q, const jp_queue_slot_t *slot)
{
	publish(q, slot->pos);
	finished(&q->not_empty);
}

MPRING_INLINE void mpring_pop_finish(struct jp__mpring *q, const jp_queue_slot_t *slot,
				     const bool mc)
{
	release_slot(q, slot->pos);
	popped(q, slot->pos, 1, mc);
}

static inline void mpring_close(struct jp__mpring *q)
{
	if (q == NULL)
		return;
	atomic_fetch_or(&q->tail, JP__Q_CLOSED);
	jp__park_chan_bump(&q->not_empty);
	jp__park_chan_bump(&q->not_full);
}

static inline size_t mpring_size(const struct jp__mpring *q)
{
	uint64_t h, t;

	if (q == NULL)
		return 0;
	h = atomic_load(&((struct jp__mpring *)q)->head);
	t = JP__Q_POS(atomic_load(&((struct jp__mpring *)q)->tail));
	if (t <= h)
		return 0;
	return t - h > q->mask + 1 ? q->mask + 1 : (size_t)(t - h);
}

static inline size_t mpring_capacity(const struct jp__mpring *q)
{
	return q == NULL ? 0 : q->mask + 1;
}

#endif /* JP_MPRING_H */
