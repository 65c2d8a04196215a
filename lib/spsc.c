/*
 * spsc.c - the bounded single-producer single-consumer queue.
 *
 * A plain ring: the producer copies the element into slot tail & mask and
 * publishes it by moving tail; the consumer copies it out and frees the slot
 * by moving head.  Each side keeps a private copy of the other side's index
 * and reloads it only when the ring looks full (producer) or empty
 * (consumer), so in steady state neither touches the other's cache line per
 * element.  Every operation finishes in a bounded number of steps: the only
 * compare-exchange (the producer's publication, see queue_internal.h) can
 * fail only because the queue was closed, and then the push returns EPIPE.
 */
#include "queue_internal.h"

#include <jpsync/queue.h>

struct jp_spsc {
	unsigned char *ring;
	size_t mask;
	size_t esize;
	size_t bytes;		/* of the mapping, header included */
	/* The producer's line. */
	_Alignas(JP_CACHELINE) _Atomic uint64_t tail;	/* bit 63: closed */
	uint64_t head_cache;	/* the producer's copy of head */
	/* The consumer's line. */
	_Alignas(JP_CACHELINE) _Atomic uint64_t head;
	uint64_t tail_cache;	/* the consumer's copy of tail, without the bit */
	struct jp__qchan not_empty;	/* consumers sleep here */
	struct jp__qchan not_full;	/* producers sleep here */
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
	atomic_init(&q->tail, 0);
	atomic_init(&q->head, 0);
	JP_BENIGN_RACE(&q->tail, sizeof q->tail, "index, accessed atomically");
	JP_BENIGN_RACE(&q->head, sizeof q->head, "index, accessed atomically");
	jp__qchan_init(&q->not_empty);
	jp__qchan_init(&q->not_full);
	return q;
}

JP_EXPORT void jp_spsc_destroy(jp_spsc_t *q)
{
	if (q != NULL)
		jp__qunmap(q, q->bytes);
}

JP_EXPORT int jp_spsc_try_push(jp_spsc_t *q, const void *elem)
{
	uint64_t t;

	if (jp_unlikely(q == NULL || elem == NULL))
		return EINVAL;
	/* relaxed: only the producer moves tail; the CAS below catches close. */
	t = atomic_load_explicit(&q->tail, memory_order_relaxed);
	if (jp_unlikely(t & JP__Q_CLOSED))
		return EPIPE;
	if (jp_unlikely(t - q->head_cache > q->mask)) {
		/* acquire: the consumer's copy out of the slot happened before. */
		q->head_cache = atomic_load_explicit(&q->head, memory_order_acquire);
		JP_HB_AFTER(&q->head);
		if (t - q->head_cache > q->mask)
			return EAGAIN;
	}
	jp__qcopy(q->ring + (t & q->mask) * q->esize, elem, q->esize);
	JP_HB_BEFORE(&q->tail);
	/* seq_cst: publishes the slot and is the waker's half of the Dekker
	 * pair with a sleeping consumer (queue_internal.h). */
	if (jp_unlikely(!atomic_compare_exchange_strong(&q->tail, &t, t + 1)))
		return EPIPE;	/* only close changes tail under us */
	jp__qchan_wake(&q->not_empty, 1);
	return 0;
}

JP_EXPORT int jp_spsc_try_pop(jp_spsc_t *q, void *elem)
{
	uint64_t h;

	if (jp_unlikely(q == NULL || elem == NULL))
		return EINVAL;
	/* relaxed: only the consumer moves head. */
	h = atomic_load_explicit(&q->head, memory_order_relaxed);
	if (h == q->tail_cache) {
		/* acquire: the producer's copy into the slot happened before. */
		uint64_t t = atomic_load_explicit(&q->tail, memory_order_acquire);

		JP_HB_AFTER(&q->tail);
		q->tail_cache = JP__Q_POS(t);
		if (h == q->tail_cache)
			return (t & JP__Q_CLOSED) ? EPIPE : EAGAIN;
	}
	jp__qcopy(elem, q->ring + (h & q->mask) * q->esize, q->esize);
	JP_HB_BEFORE(&q->head);
	/* seq_cst: store then load of waiters in the wake (Dekker). */
	atomic_store(&q->head, h + 1);
	jp__qchan_wake(&q->not_full, 1);
	return 0;
}

static int try_push_v(void *q, void *elem) { return jp_spsc_try_push(q, elem); }
static int try_pop_v(void *q, void *elem) { return jp_spsc_try_pop(q, elem); }

static bool push_may_sleep(const void *qv)
{
	const struct jp_spsc *q = qv;
	uint64_t t = atomic_load(&((struct jp_spsc *)q)->tail);
	uint64_t h = atomic_load(&((struct jp_spsc *)q)->head);

	return !(t & JP__Q_CLOSED) && t - h > q->mask;
}

static bool pop_may_sleep(const void *qv)
{
	const struct jp_spsc *q = qv;
	uint64_t t = atomic_load(&((struct jp_spsc *)q)->tail);
	uint64_t h = atomic_load(&((struct jp_spsc *)q)->head);

	return !(t & JP__Q_CLOSED) && t == h;
}

JP_EXPORT int jp_spsc_push(jp_spsc_t *q, const void *elem,
			   const struct timespec *deadline)
{
	int r = jp_spsc_try_push(q, elem);

	if (jp_likely(r != EAGAIN))
		return r;
	return jp__qblock(q, &q->not_full, try_push_v, push_may_sleep,
			  (void *)elem, deadline);
}

JP_EXPORT int jp_spsc_pop(jp_spsc_t *q, void *elem,
			  const struct timespec *deadline)
{
	int r = jp_spsc_try_pop(q, elem);

	if (jp_likely(r != EAGAIN))
		return r;
	return jp__qblock(q, &q->not_empty, try_pop_v, pop_may_sleep, elem,
			  deadline);
}

JP_EXPORT size_t jp_spsc_push_bulk(jp_spsc_t *q, const void *elems, size_t n)
{
	uint64_t t;
	size_t room, k, first;

	if (q == NULL || elems == NULL || n == 0)
		return 0;
	t = atomic_load_explicit(&q->tail, memory_order_relaxed);	/* as try_push */
	if (t & JP__Q_CLOSED)
		return 0;
	room = q->mask + 1 - (size_t)(t - q->head_cache);
	if (room < n) {
		q->head_cache = atomic_load_explicit(&q->head, memory_order_acquire);
		JP_HB_AFTER(&q->head);
		room = q->mask + 1 - (size_t)(t - q->head_cache);
	}
	k = n < room ? n : room;
	if (k == 0)
		return 0;
	first = q->mask + 1 - (size_t)(t & q->mask);
	if (first > k)
		first = k;
	memcpy(q->ring + (t & q->mask) * q->esize, elems, first * q->esize);
	memcpy(q->ring, (const unsigned char *)elems + first * q->esize,
	       (k - first) * q->esize);
	JP_HB_BEFORE(&q->tail);
	if (!atomic_compare_exchange_strong(&q->tail, &t, t + k))	/* seq_cst, as try_push */
		return 0;
	jp__qchan_wake(&q->not_empty, k);
	return k;
}

JP_EXPORT size_t jp_spsc_pop_bulk(jp_spsc_t *q, void *elems, size_t n)
{
	uint64_t h;
	size_t avail, k, first;

	if (q == NULL || elems == NULL || n == 0)
		return 0;
	h = atomic_load_explicit(&q->head, memory_order_relaxed);	/* as try_pop */
	avail = (size_t)(q->tail_cache - h);
	if (avail < n) {
		q->tail_cache = JP__Q_POS(atomic_load_explicit(&q->tail, memory_order_acquire));
		JP_HB_AFTER(&q->tail);
		avail = (size_t)(q->tail_cache - h);
	}
	k = n < avail ? n : avail;
	if (k == 0)
		return 0;
	first = q->mask + 1 - (size_t)(h & q->mask);
	if (first > k)
		first = k;
	memcpy(elems, q->ring + (h & q->mask) * q->esize, first * q->esize);
	memcpy((unsigned char *)elems + first * q->esize, q->ring,
	       (k - first) * q->esize);
	JP_HB_BEFORE(&q->head);
	atomic_store(&q->head, h + k);	/* seq_cst, as try_pop */
	jp__qchan_wake(&q->not_full, k);
	return k;
}

JP_EXPORT void jp_spsc_close(jp_spsc_t *q)
{
	if (q == NULL)
		return;
	atomic_fetch_or(&q->tail, JP__Q_CLOSED);
	jp__qchan_wake_all(&q->not_empty);
	jp__qchan_wake_all(&q->not_full);
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
