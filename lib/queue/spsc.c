/*
 * spsc.c - the bounded single-producer single-consumer queue.
 *
 * A plain ring: the producer copies the element into slot tail & mask and
 * publishes it with a release store of tail; the consumer copies it out and
 * frees the slot with a release store of head.  Each side keeps a private
 * copy of the other side's index and reloads it only when the ring looks
 * full (producer) or empty (consumer), so in steady state neither touches
 * the other's cache line per element, and neither executes a locked
 * instruction: the fences that parking and closing need are asymmetric
 * (queue_internal.h), paid by the thread about to sleep or closing.  Every
 * call but the blocking push/pop (and push_start/pop_start) finishes in a
 * bounded number of steps, and close, which waits for a push in progress
 * (a started push: until its finish).
 *
 * Closing.  Bit 63 of tail is the closed flag, set by close() once no push
 * can succeed any more; a consumer that sees it with head == tail has every
 * element.  Only the producer stores tail, with plain stores, so close()
 * cannot simply set the bit while a push is under way (the push's store
 * would erase it, or the consumer would see the bit before the element).
 * Instead each push brackets itself with a "busy" word on the producer's
 * own cache line and reads close_req first:
 *
 *     push                              close
 *     busy = 1                          close_req = 1
 *     (fast fence)                      slow fence (membarrier)
 *     if (close_req) EPIPE              wait until busy == 0
 *     ... store tail ...                set the bit in tail, wake everyone
 *     busy = 0 (release)
 *
 * A push that read close_req == 0 stored busy = 1 before the slow fence
 * took effect on its CPU, so close() sees busy == 1 and waits for it (its
 * tail store is then visible); every later push reads close_req == 1 and
 * touches nothing.  When close() sets the bit, no push can store tail again.
 */
#include "queue_internal.h"

#include <jpsync/queue.h>

#include <sched.h>

struct jp_spsc {
	unsigned char *ring;
	size_t mask;
	size_t esize;
	size_t bytes;		/* of the mapping, header included */
	_Atomic int close_req;	/* set once by close, read by the producer */
	/*
	 * The producer's private line: nobody else reads it but close.  busy
	 * used to share tail's line; a consumer polling an empty ring then
	 * took that line back between the push's three stores (busy, tail,
	 * busy), up to three transfers per element where one is needed.
	 */
	_Alignas(JP_CACHELINE) _Atomic int busy;	/* 1 while a push runs (see close) */
	uint64_t head_cache;	/* the producer's copy of head */
	/* The producer's published line: tail alone. */
	_Alignas(JP_CACHELINE) _Atomic uint64_t tail;	/* bit 63: closed */
	/* The consumer's line: head and the consumer's private copy. */
	_Alignas(JP_CACHELINE) _Atomic uint64_t head;
	uint64_t tail_cache;	/* the consumer's copy of tail, without the bit */
	struct jp__park_chan not_empty JP_ALIGNED_CL;	/* the consumer sleeps here */
	struct jp__park_chan not_full JP_ALIGNED_CL;	/* the producer sleeps here */
};

JP_EXPORT jp_spsc_t *jp_spsc_create(size_t capacity, size_t elem_size)
{
	size_t cap, stride, bytes;
	struct jp_spsc *q;

	q = jp__qmap(sizeof *q, capacity, elem_size, 0, 1, &cap, &stride, &bytes);
	if (q == NULL)
		return NULL;
	q->ring = (unsigned char *)q + ((sizeof *q + JP_CACHELINE - 1) & ~(size_t)(JP_CACHELINE - 1));
	q->mask = cap - 1;
	q->esize = elem_size;
	q->bytes = bytes;
	atomic_init(&q->close_req, 0);
	atomic_init(&q->busy, 0);
	JP_BENIGN_RACE(&q->busy, sizeof q->busy, "flag, accessed atomically");
	atomic_init(&q->tail, 0);
	atomic_init(&q->head, 0);
	JP_BENIGN_RACE(&q->close_req, sizeof q->close_req, "flag, accessed atomically");
	JP_BENIGN_RACE(&q->tail, sizeof q->tail, "index, accessed atomically");
	JP_BENIGN_RACE(&q->head, sizeof q->head, "index, accessed atomically");
	jp__park_chan_init(&q->not_empty);
	jp__park_chan_init(&q->not_full);
	return q;
}

JP_EXPORT void jp_spsc_destroy(jp_spsc_t *q)
{
	if (q != NULL)
		jp__qunmap(q, q->bytes);
}

/*
 * The fast path's rare branches, out of line.  Inlined, a valgrind client
 * request (the detectors' annotations) builds a 48-byte block on the
 * stack, and the wake-up calls into park.c: the compiler then gave every
 * try_push and try_pop a frame and six saved registers, whether a detector
 * runs or not (5.3 ns per push+pop on one thread against ck_ring's 1.2).
 * Cold and not inlined, they cost the common path one predictable branch.
 */
static JP_COLD void hb_release(const void *obj)
{
	jp__hb_before(obj);
}

static JP_COLD void hb_acquire(const void *obj)
{
	jp__hb_after(obj);
}

#define Q_HB_RELEASE(obj) do { if (jp_unlikely(jp__annotate)) hb_release(obj); } while (0)
#define Q_HB_ACQUIRE(obj) do { if (jp_unlikely(jp__annotate)) hb_acquire(obj); } while (0)

/* Returns 0, so that the fast paths below end in a jump to it. */
static JP_COLD int wake_cold(struct jp__park_chan *c)
{
	jp__park_chan_wake_fenced(c);
	return 0;
}

/* park.h's wake-up, its first load inline (after the caller's fence). */
static inline bool has_waiters(struct jp__park_chan *c)
{
	/* relaxed: as in jp__park_chan_wake_fenced, which re-reads it. */
	return jp_unlikely(atomic_load_explicit(&c->waiters, memory_order_relaxed) != 0);
}

static inline void wake(struct jp__park_chan *c)
{
	if (has_waiters(c))
		wake_cold(c);
}

/* A push starts: announce it, then look for a close (see the top). */
static inline bool push_begin(struct jp_spsc *q)
{
	/* relaxed, both: ordered by the fence and close's membarrier. */
	atomic_store_explicit(&q->busy, 1, memory_order_relaxed);
	jp__q_fast_fence();	/* the store of busy before the load of close_req */
	if (jp_likely(!atomic_load_explicit(&q->close_req, memory_order_relaxed)))
		return true;
	atomic_store_explicit(&q->busy, 0, memory_order_release);
	return false;
}

/* A push ends; after a publication, wake a sleeping consumer. */
static inline void push_end(struct jp_spsc *q, bool published)
{
	/* release: our tail store before close's acquire load of busy. */
	atomic_store_explicit(&q->busy, 0, memory_order_release);
	if (published) {
		jp__q_fast_fence();	/* the store of tail before the load of waiters */
		wake(&q->not_empty);
	}
}

/*
 * The one-element calls in two halves, around the copy: the start claims
 * the slot and fills *slot, the publish (push) or release (pop) gives it
 * to the other side.  try_push/try_pop copy in between; the in-place slot
 * calls of 1.1 let the caller do it.  A started push keeps busy set, so
 * close waits for its finish as for a copy in flight.
 */
static inline __attribute__((always_inline)) int
try_push_start(struct jp_spsc *q, jp_queue_slot_t *slot)
{
	uint64_t t;

	if (jp_unlikely(q == NULL || slot == NULL))
		return EINVAL;
	if (jp_unlikely(!push_begin(q)))
		return EPIPE;
	/* relaxed: only the producer stores tail until close sets bit 63. */
	t = atomic_load_explicit(&q->tail, memory_order_relaxed);
	if (jp_unlikely(t & JP__Q_CLOSED)) {
		push_end(q, false);
		return EPIPE;
	}
	if (jp_unlikely(t - q->head_cache > q->mask)) {
		/* acquire: the consumer's copy out of the slot happened before. */
		q->head_cache = atomic_load_explicit(&q->head, memory_order_acquire);
		Q_HB_ACQUIRE(&q->head);
		if (t - q->head_cache > q->mask) {
			push_end(q, false);
			return EAGAIN;
		}
	}
	slot->elem = q->ring + (t & q->mask) * q->esize;
	slot->pos = t;
	return 0;
}

static inline __attribute__((always_inline)) int
try_pop_start(struct jp_spsc *q, jp_queue_slot_t *slot)
{
	uint64_t h;

	if (jp_unlikely(q == NULL || slot == NULL))
		return EINVAL;
	/* relaxed: only the consumer moves head. */
	h = atomic_load_explicit(&q->head, memory_order_relaxed);
	if (h == q->tail_cache) {
		/* acquire: the producer's copy into the slot happened before. */
		uint64_t t = atomic_load_explicit(&q->tail, memory_order_acquire);

		Q_HB_ACQUIRE(&q->tail);
		q->tail_cache = JP__Q_POS(t);
		if (h == q->tail_cache)
			return (t & JP__Q_CLOSED) ? EPIPE : EAGAIN;
	}
	slot->elem = q->ring + (h & q->mask) * q->esize;
	slot->pos = h;
	return 0;
}

/* release: the copy into the slot before the consumer's acquire. */
static inline void push_publish(struct jp_spsc *q, uint64_t pos)
{
	Q_HB_RELEASE(&q->tail);
	atomic_store_explicit(&q->tail, pos + 1, memory_order_release);
	push_end(q, true);
}

/* After the consumer's release store of head: wake a sleeping producer. */
static inline void consumed(struct jp_spsc *q)
{
	jp__q_fast_fence();	/* the store of head before the load of waiters */
	wake(&q->not_full);
}

/* release: our copy out before the producer reuses the slot. */
static inline void pop_release(struct jp_spsc *q, uint64_t pos)
{
	Q_HB_RELEASE(&q->head);
	atomic_store_explicit(&q->head, pos + 1, memory_order_release);
	consumed(q);
}

/* Any element size, under a detector, and every error. */
static __attribute__((noinline)) int try_push_any(struct jp_spsc *q, const void *elem)
{
	jp_queue_slot_t s;
	int r;

	if (jp_unlikely(elem == NULL))
		return EINVAL;
	r = try_push_start(q, &s);
	if (jp_unlikely(r != 0))
		return r;
	jp__qcopy(s.elem, elem, q->esize);
	push_publish(q, s.pos);
	return 0;
}

static __attribute__((noinline)) int try_pop_any(struct jp_spsc *q, void *elem)
{
	jp_queue_slot_t s;
	int r;

	if (jp_unlikely(elem == NULL))
		return EINVAL;
	r = try_pop_start(q, &s);
	if (r != 0)
		return r;
	jp__qcopy(elem, s.elem, q->esize);
	pop_release(q, s.pos);
	return 0;
}

/*
 * try_push and try_pop of a pointer-sized element with no detector
 * running: the steps of try_push_any/try_pop_any (the same loads, stores
 * and orders, commented there), written so that the common path makes no
 * call.  Every other case jumps to the general function.  A library built
 * with -fsanitize=thread takes the fast path too: ThreadSanitizer sees its
 * atomics and checks it; the annotations are for the detectors that
 * cannot (valgrind's, and TSan over a library not built for it).
 */
#ifdef JP_TSAN
# define Q_ANNOTATED() false
#else
# define Q_ANNOTATED() jp__annotate
#endif

JP_EXPORT int jp_spsc_try_push(jp_spsc_t *q, const void *elem)
{
	uint64_t t;

	if (jp_unlikely(q == NULL || elem == NULL || q->esize != sizeof(void *) || Q_ANNOTATED()))
		return try_push_any(q, elem);
	if (jp_unlikely(!push_begin(q)))
		return EPIPE;
	t = atomic_load_explicit(&q->tail, memory_order_relaxed);
	/*
	 * A closed tail (bit 63) looks full too: one test for both.  (After
	 * push_begin the bit cannot be set, see the top; tested as in
	 * try_push_start all the same.)
	 */
	if (jp_unlikely(t - q->head_cache > q->mask)) {
		if (t & JP__Q_CLOSED) {
			push_end(q, false);
			return EPIPE;
		}
		q->head_cache = atomic_load_explicit(&q->head, memory_order_acquire);
		if (t - q->head_cache > q->mask) {
			push_end(q, false);
			return EAGAIN;
		}
	}
	memcpy(q->ring + (t & q->mask) * sizeof(void *), elem, sizeof(void *));
	atomic_store_explicit(&q->tail, t + 1, memory_order_release);
	atomic_store_explicit(&q->busy, 0, memory_order_release);
	jp__q_fast_fence();
	if (has_waiters(&q->not_empty))
		return wake_cold(&q->not_empty);
	return 0;
}

JP_EXPORT int jp_spsc_try_pop(jp_spsc_t *q, void *elem)
{
	uint64_t h;

	if (jp_unlikely(q == NULL || elem == NULL || q->esize != sizeof(void *) || Q_ANNOTATED()))
		return try_pop_any(q, elem);
	h = atomic_load_explicit(&q->head, memory_order_relaxed);
	if (h == q->tail_cache) {
		uint64_t t = atomic_load_explicit(&q->tail, memory_order_acquire);

		q->tail_cache = JP__Q_POS(t);
		if (h == q->tail_cache)
			return (t & JP__Q_CLOSED) ? EPIPE : EAGAIN;
	}
	memcpy(elem, q->ring + (h & q->mask) * sizeof(void *), sizeof(void *));
	atomic_store_explicit(&q->head, h + 1, memory_order_release);
	jp__q_fast_fence();
	if (has_waiters(&q->not_full))
		return wake_cold(&q->not_full);
	return 0;
}

static int try_push_v(void *q, void *elem) { return jp_spsc_try_push(q, elem); }
static int try_pop_v(void *q, void *elem) { return jp_spsc_try_pop(q, elem); }

/* The re-checks of a parking caller, after jp__q_slow_fence. */
static bool push_may_sleep(const void *qv)
{
	struct jp_spsc *q = (struct jp_spsc *)qv;
	uint64_t t = atomic_load(&q->tail);
	uint64_t h = atomic_load(&q->head);

	return !(t & JP__Q_CLOSED) && !atomic_load(&q->close_req) && t - h > q->mask;
}

static bool pop_may_sleep(const void *qv)
{
	struct jp_spsc *q = (struct jp_spsc *)qv;
	uint64_t t = atomic_load(&q->tail);
	uint64_t h = atomic_load(&q->head);

	return !(t & JP__Q_CLOSED) && t == h;
}

JP_EXPORT int jp_spsc_push(jp_spsc_t *q, const void *elem,
			   const struct timespec *deadline)
{
	return jp__qwait(q, offsetof(struct jp_spsc, not_full), try_push_v, push_may_sleep,
			 (void *)elem, deadline, true);
}

JP_EXPORT int jp_spsc_pop(jp_spsc_t *q, void *elem,
			  const struct timespec *deadline)
{
	return jp__qwait(q, offsetof(struct jp_spsc, not_empty), try_pop_v, pop_may_sleep,
			 elem, deadline, true);
}

JP_EXPORT size_t jp_spsc_push_bulk(jp_spsc_t *q, const void *elems, size_t n)
{
	uint64_t t;
	size_t room, k, first;

	if (n == 0)
		return 0;
	if (q == NULL || elems == NULL)
		return jp__qbulk_none(EINVAL);
	if (!push_begin(q))
		return jp__qbulk_none(EPIPE);
	t = atomic_load_explicit(&q->tail, memory_order_relaxed);	/* as try_push */
	if (t & JP__Q_CLOSED) {
		push_end(q, false);
		return jp__qbulk_none(EPIPE);
	}
	room = q->mask + 1 - (size_t)(t - q->head_cache);
	if (room < n) {
		q->head_cache = atomic_load_explicit(&q->head, memory_order_acquire);
		Q_HB_ACQUIRE(&q->head);
		room = q->mask + 1 - (size_t)(t - q->head_cache);
	}
	k = n < room ? n : room;
	if (k == 0) {
		push_end(q, false);
		return jp__qbulk_none(EAGAIN);
	}
	first = q->mask + 1 - (size_t)(t & q->mask);
	if (first > k)
		first = k;
	memcpy(q->ring + (t & q->mask) * q->esize, elems, first * q->esize);
	memcpy(q->ring, (const unsigned char *)elems + first * q->esize,
	       (k - first) * q->esize);
	Q_HB_RELEASE(&q->tail);
	atomic_store_explicit(&q->tail, t + k, memory_order_release);	/* as try_push */
	push_end(q, true);
	return k;
}

JP_EXPORT size_t jp_spsc_pop_bulk(jp_spsc_t *q, void *elems, size_t n)
{
	uint64_t h, t = 0;
	size_t avail, k, first;

	if (n == 0)
		return 0;
	if (q == NULL || elems == NULL)
		return jp__qbulk_none(EINVAL);
	h = atomic_load_explicit(&q->head, memory_order_relaxed);	/* as try_pop */
	avail = (size_t)(q->tail_cache - h);
	if (avail < n) {
		t = atomic_load_explicit(&q->tail, memory_order_acquire);
		Q_HB_ACQUIRE(&q->tail);
		q->tail_cache = JP__Q_POS(t);
		avail = (size_t)(q->tail_cache - h);
	}
	k = n < avail ? n : avail;
	if (k == 0)	/* avail was 0 < n: t was loaded */
		return jp__qbulk_none((t & JP__Q_CLOSED) ? EPIPE : EAGAIN);
	first = q->mask + 1 - (size_t)(h & q->mask);
	if (first > k)
		first = k;
	memcpy(elems, q->ring + (h & q->mask) * q->esize, first * q->esize);
	memcpy((unsigned char *)elems + first * q->esize, q->ring,
	       (k - first) * q->esize);
	Q_HB_RELEASE(&q->head);
	atomic_store_explicit(&q->head, h + k, memory_order_release);	/* as try_pop */
	consumed(q);
	return k;
}

static int try_push_start_v(void *q, void *slot) { return try_push_start(q, slot); }
static int try_pop_start_v(void *q, void *slot) { return try_pop_start(q, slot); }

JP_EXPORT int jp_spsc_try_push_start(jp_spsc_t *q, jp_queue_slot_t *slot)
{
	return try_push_start(q, slot);
}

JP_EXPORT int jp_spsc_push_start(jp_spsc_t *q, jp_queue_slot_t *slot,
				 const struct timespec *deadline)
{
	return jp__qwait(q, offsetof(struct jp_spsc, not_full), try_push_start_v, push_may_sleep,
			 slot, deadline, true);
}

JP_EXPORT void jp_spsc_push_finish(jp_spsc_t *q, jp_queue_slot_t *slot)
{
	/* relaxed: only the producer stores tail (close waits for busy). */
	if (jp_unlikely(q == NULL || slot == NULL ||
			!atomic_load_explicit(&q->busy, memory_order_relaxed) ||
			slot->pos != atomic_load_explicit(&q->tail, memory_order_relaxed) ||
			slot->elem != q->ring + (slot->pos & q->mask) * q->esize))
		jp__die("jp_spsc_push_finish: the slot was not started on this queue");
	push_publish(q, slot->pos);
}

JP_EXPORT int jp_spsc_try_pop_start(jp_spsc_t *q, jp_queue_slot_t *slot)
{
	return try_pop_start(q, slot);
}

JP_EXPORT int jp_spsc_pop_start(jp_spsc_t *q, jp_queue_slot_t *slot,
				const struct timespec *deadline)
{
	return jp__qwait(q, offsetof(struct jp_spsc, not_empty), try_pop_start_v, pop_may_sleep,
			 slot, deadline, true);
}

JP_EXPORT void jp_spsc_pop_finish(jp_spsc_t *q, jp_queue_slot_t *slot)
{
	/* relaxed: only the consumer moves head; tail_cache is its own. */
	if (jp_unlikely(q == NULL || slot == NULL ||
			slot->pos != atomic_load_explicit(&q->head, memory_order_relaxed) ||
			slot->elem != q->ring + (slot->pos & q->mask) * q->esize))
		jp__die("jp_spsc_pop_finish: the slot was not started on this queue");
	pop_release(q, slot->pos);
}

/* The protocol and why no push is lost: see the top of this file. */
JP_EXPORT void jp_spsc_close(jp_spsc_t *q)
{
	unsigned spins = 0;

	if (q == NULL)
		return;
	atomic_store(&q->close_req, 1);
	jp__q_slow_fence();
	/* acquire: the push's store of tail before its busy = 0. */
	while (atomic_load_explicit(&q->busy, memory_order_acquire)) {
		if (++spins < 64)
			jp_cpu_relax();
		else
			sched_yield();	/* the producer was preempted mid-push */
	}
	Q_HB_ACQUIRE(&q->busy);
	atomic_fetch_or(&q->tail, JP__Q_CLOSED);
	jp__park_chan_bump(&q->not_empty);
	jp__park_chan_bump(&q->not_full);
}

JP_EXPORT size_t jp_spsc_size(const jp_spsc_t *q)
{
	uint64_t h, t;

	if (q == NULL)
		return 0;
	h = atomic_load(&((struct jp_spsc *)q)->head);
	t = JP__Q_POS(atomic_load(&((struct jp_spsc *)q)->tail));
	return t > h ? (size_t)(t - h) : 0;
}

JP_EXPORT size_t jp_spsc_capacity(const jp_spsc_t *q)
{
	return q == NULL ? 0 : q->mask + 1;
}
