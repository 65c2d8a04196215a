/*
 * mpmc.c - the bounded multi-producer multi-consumer queue: Vyukov's ring
 * with per-slot sequence numbers, producers and consumers both claiming
 * positions with a compare-exchange.
 *
 * The ring and the bodies of these functions are mpring.h's: each function
 * is written out here by name and passes the helpers MULTI_CONSUMER
 * (true), which the compiler folds.
 */
#include "mpring.h"

#define MULTI_CONSUMER true

/* A queue is its ring: the header mpring.h lays out. */
struct jp_mpmc {
	struct jp__mpring r;
};

/* q's ring (its first member): NULL stays NULL, for the calls' EINVAL. */
static inline struct jp__mpring *ring(const struct jp_mpmc *q)
{
	return (struct jp__mpring *)q;
}

JP_EXPORT struct jp_mpmc *jp_mpmc_create(size_t capacity, size_t elem_size)
{
	return (struct jp_mpmc *)mpring_create(capacity, elem_size);
}

JP_EXPORT void jp_mpmc_destroy(struct jp_mpmc *q)
{
	mpring_destroy(ring(q));
}

JP_EXPORT int jp_mpmc_try_push(struct jp_mpmc *q, const void *elem)
{
	return mpring_try_push(ring(q), elem);
}

JP_EXPORT size_t jp_mpmc_push_bulk(struct jp_mpmc *q, const void *elems, size_t n)
{
	return mpring_push_bulk(ring(q), elems, n);
}

JP_EXPORT int jp_mpmc_try_pop(struct jp_mpmc *q, void *elem)
{
	return mpring_try_pop(ring(q), elem, MULTI_CONSUMER);
}

JP_EXPORT size_t jp_mpmc_pop_bulk(struct jp_mpmc *q, void *elems, size_t n)
{
	return mpring_pop_bulk(ring(q), elems, n, MULTI_CONSUMER);
}

/* The blocking calls' tries, as jp__qwait calls them. */
static int try_push_v(void *q, void *elem) { return jp_mpmc_try_push(q, elem); }
static int try_pop_v(void *q, void *elem) { return jp_mpmc_try_pop(q, elem); }
static int try_push_start_v(void *q, void *slot) { return try_push_start(ring(q), slot); }
static int try_pop_start_v(void *q, void *slot)
{
	return try_pop_start(ring(q), slot, MULTI_CONSUMER);
}

JP_EXPORT int jp_mpmc_push(struct jp_mpmc *q, const void *elem, const struct timespec *deadline)
{
	return mpring_wait_push(q, try_push_v, (void *)elem, deadline, MULTI_CONSUMER);
}

JP_EXPORT int jp_mpmc_pop(struct jp_mpmc *q, void *elem, const struct timespec *deadline)
{
	return mpring_wait_pop(q, try_pop_v, elem, deadline);
}

JP_EXPORT int jp_mpmc_try_push_start(struct jp_mpmc *q, jp_queue_slot_t *slot)
{
	return try_push_start(ring(q), slot);
}

JP_EXPORT int jp_mpmc_push_start(struct jp_mpmc *q, jp_queue_slot_t *slot,
				 const struct timespec *deadline)
{
	return mpring_wait_push(q, try_push_start_v, slot, deadline, MULTI_CONSUMER);
}

JP_EXPORT void jp_mpmc_push_finish(struct jp_mpmc *q, jp_queue_slot_t *slot)
{
	if (jp_unlikely(!slot_started(ring(q), slot, false)))
		jp__die("jp_mpmc_push_finish: the slot was not started on this queue");
	mpring_push_finish(ring(q), slot);
}

JP_EXPORT int jp_mpmc_try_pop_start(struct jp_mpmc *q, jp_queue_slot_t *slot)
{
	return try_pop_start(ring(q), slot, MULTI_CONSUMER);
}

JP_EXPORT int jp_mpmc_pop_start(struct jp_mpmc *q, jp_queue_slot_t *slot,
				const struct timespec *deadline)
{
	return mpring_wait_pop(q, try_pop_start_v, slot, deadline);
}

JP_EXPORT void jp_mpmc_pop_finish(struct jp_mpmc *q, jp_queue_slot_t *slot)
{
	if (jp_unlikely(!slot_started(ring(q), slot, true)))
		jp__die("jp_mpmc_pop_finish: the slot was not started on this queue");
	mpring_pop_finish(ring(q), slot, MULTI_CONSUMER);
}

JP_EXPORT void jp_mpmc_close(struct jp_mpmc *q)
{
	mpring_close(ring(q));
}

JP_EXPORT size_t jp_mpmc_size(const struct jp_mpmc *q)
{
	return mpring_size(ring(q));
}

JP_EXPORT size_t jp_mpmc_capacity(const struct jp_mpmc *q)
{
	return mpring_capacity(ring(q));
}
