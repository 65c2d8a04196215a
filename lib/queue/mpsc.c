/*
 * mpsc.c - the bounded multi-producer single-consumer queue: Vyukov's ring
 * with per-slot sequence numbers; the one consumer owns head and moves it
 * with a plain store, no compare-exchange.
 *
 * The ring and the bodies of these functions are mpring.h's: each function
 * is written out here by name and passes the helpers MULTI_CONSUMER
 * (false), which the compiler folds.
 */
#include "mpring.h"

#define MULTI_CONSUMER false

/* A queue is its ring: the header mpring.h lays out. */
struct jp_mpsc {
	struct jp__mpring r;
};

/* q's ring (its first member): NULL stays NULL, for the calls' EINVAL. */
static inline struct jp__mpring *ring(const struct jp_mpsc *q)
{
	return (struct jp__mpring *)q;
}

JP_EXPORT struct jp_mpsc *jp_mpsc_create(size_t capacity, size_t elem_size)
{
	return (struct jp_mpsc *)mpring_create(capacity, elem_size);
}

JP_EXPORT void jp_mpsc_destroy(struct jp_mpsc *q)
{
	mpring_destroy(ring(q));
}

JP_EXPORT int jp_mpsc_try_push(struct jp_mpsc *q, const void *elem)
{
	return mpring_try_push(ring(q), elem);
}

JP_EXPORT size_t jp_mpsc_push_bulk(struct jp_mpsc *q, const void *elems, size_t n)
{
	return mpring_push_bulk(ring(q), elems, n);
}

JP_EXPORT int jp_mpsc_try_pop(struct jp_mpsc *q, void *elem)
{
	return mpring_try_pop(ring(q), elem, MULTI_CONSUMER);
}

JP_EXPORT size_t jp_mpsc_pop_bulk(struct jp_mpsc *q, void *elems, size_t n)
{
	return mpring_pop_bulk(ring(q), elems, n, MULTI_CONSUMER);
}

/* The blocking calls' tries, as jp__qwait calls them. */
static int try_push_v(void *q, void *elem) { return jp_mpsc_try_push(q, elem); }
static int try_pop_v(void *q, void *elem) { return jp_mpsc_try_pop(q, elem); }
static int try_push_start_v(void *q, void *slot) { return try_push_start(ring(q), slot); }
static int try_pop_start_v(void *q, void *slot)
{
	return try_pop_start(ring(q), slot, MULTI_CONSUMER);
}

JP_EXPORT int jp_mpsc_push(struct jp_mpsc *q, const void *elem, const struct timespec *deadline)
{
	return mpring_wait_push(q, try_push_v, (void *)elem, deadline, MULTI_CONSUMER);
}

JP_EXPORT int jp_mpsc_pop(struct jp_mpsc *q, void *elem, const struct timespec *deadline)
{
	return mpring_wait_pop(q, try_pop_v, elem, deadline);
}

JP_EXPORT int jp_mpsc_try_push_start(struct jp_mpsc *q, jp_queue_slot_t *slot)
{
	return try_push_start(ring(q), slot);
}

JP_EXPORT int jp_mpsc_push_start(struct jp_mpsc *q, jp_queue_slot_t *slot,
				 const struct timespec *deadline)
{
	return mpring_wait_push(q, try_push_start_v, slot, deadline, MULTI_CONSUMER);
}

JP_EXPORT void jp_mpsc_push_finish(struct jp_mpsc *q, jp_queue_slot_t *slot)
{
	if (jp_unlikely(!slot_started(ring(q), slot, false)))
		jp__die("jp_mpsc_push_finish: the slot was not started on this queue");
	mpring_push_finish(ring(q), slot);
}

JP_EXPORT int jp_mpsc_try_pop_start(struct jp_mpsc *q, jp_queue_slot_t *slot)
{
	return try_pop_start(ring(q), slot, MULTI_CONSUMER);
}

JP_EXPORT int jp_mpsc_pop_start(struct jp_mpsc *q, jp_queue_slot_t *slot,
				const struct timespec *deadline)
{
	return mpring_wait_pop(q, try_pop_start_v, slot, deadline);
}

JP_EXPORT void jp_mpsc_pop_finish(struct jp_mpsc *q, jp_queue_slot_t *slot)
{
	if (jp_unlikely(!slot_started(ring(q), slot, true)))
		jp__die("jp_mpsc_pop_finish: the slot was not started on this queue");
	mpring_pop_finish(ring(q), slot, MULTI_CONSUMER);
}

JP_EXPORT void jp_mpsc_close(struct jp_mpsc *q)
{
	mpring_close(ring(q));
}

JP_EXPORT size_t jp_mpsc_size(const struct jp_mpsc *q)
{
	return mpring_size(ring(q));
}

JP_EXPORT size_t jp_mpsc_capacity(const struct jp_mpsc *q)
{
	return mpring_capacity(ring(q));
}
