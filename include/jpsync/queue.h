/*
 * jpsync/queue.h - bounded queues of fixed-size elements.
 *
 * Three kinds, the concurrency contract in the name:
 *   jp_spsc_t  one producer thread, one consumer thread; wait-free.
 *   jp_mpsc_t  any number of producers, one consumer.
 *   jp_mpmc_t  any number of producers and consumers.
 * MPSC and MPMC are rings of slots each carrying a sequence number (Vyukov's
 * bounded queue); producer and consumer indices live on separate cache lines.
 *
 * Vocabulary: the capacity is rounded up to a power of two; an element is
 * elem_size bytes copied in and out (a pointer is the common case and has a
 * fast path).  try_push/try_pop never block; push/pop spin briefly, then
 * sleep in the kernel until they can proceed, the absolute CLOCK_MONOTONIC
 * deadline passes (ETIMEDOUT; NULL waits forever) or the queue is closed.
 * After close, push fails at once with EPIPE and pop returns what is left,
 * then EPIPE.  Functions returning int return 0 or an errno value.
 * push_bulk/pop_bulk return how many elements they moved; when that is 0
 * for n > 0 they set errno to the single-element call's answer: EAGAIN
 * (full/empty), EPIPE (closed; pop: closed and empty) or EINVAL.
 *
 * Which calls may run at the same time (the same queue):
 *   spsc: one thread in {try_push, push, push_bulk} and one thread in
 *         {try_pop, pop, pop_bulk}; close, size and capacity from any thread
 *         at any time; destroy alone.
 *   mpsc: any threads in {try_push, push, push_bulk}, one thread in
 *         {try_pop, pop, pop_bulk}; close, size, capacity any time.
 *   mpmc: any threads in any call but destroy.
 *
 * In-place slots (1.1): *_push_start hands out the slot of the next free
 * position, *_push_finish publishes what the caller built in it; *_pop_start
 * hands out the oldest element where it lies, *_pop_finish frees its slot.
 * The start calls return what try_push/push and try_pop/pop return; a
 * started slot must be finished, once, by the thread that started it, and
 * soon: until then the calls behind it wait (close of an SPSC queue too).
 * slot->elem is elem_size bytes aligned to the largest power of two, up to
 * 8, that divides elem_size.  A start counts as the push or pop in the
 * table above.  A started slot cannot be given back; SPSC: one started
 * push and one started pop at a time (close waits for the push's finish);
 * MPSC: one started pop.  MPSC/MPMC callers behind a started slot spin
 * briefly, then sleep until its finish.
 */
#ifndef JPSYNC_QUEUE_H
#define JPSYNC_QUEUE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An in-place slot, filled by the start calls; pos is the queue's. */
typedef struct jp_queue_slot {
	void *elem;
	uint64_t pos;
} jp_queue_slot_t;

/* ---- jp_spsc: single-producer single-consumer (wait-free) */
typedef struct jp_spsc jp_spsc_t;
jp_spsc_t *jp_spsc_create(size_t capacity, size_t elem_size);
void   jp_spsc_destroy(jp_spsc_t *q);
int    jp_spsc_try_push(jp_spsc_t *q, const void *elem);  /* 0, EAGAIN full, EPIPE closed */
int    jp_spsc_try_pop(jp_spsc_t *q, void *elem);         /* 0, EAGAIN empty, EPIPE closed and empty */
int    jp_spsc_push(jp_spsc_t *q, const void *elem, const struct timespec *deadline);
int    jp_spsc_pop(jp_spsc_t *q, void *elem, const struct timespec *deadline);
size_t jp_spsc_push_bulk(jp_spsc_t *q, const void *elems, size_t n);  /* how many went in */
size_t jp_spsc_pop_bulk(jp_spsc_t *q, void *elems, size_t n);
void   jp_spsc_close(jp_spsc_t *q);
size_t jp_spsc_size(const jp_spsc_t *q);
size_t jp_spsc_capacity(const jp_spsc_t *q);
/* 1.1: in-place slots */
int    jp_spsc_try_push_start(jp_spsc_t *q, jp_queue_slot_t *slot);
int    jp_spsc_push_start(jp_spsc_t *q, jp_queue_slot_t *slot, const struct timespec *deadline);
void   jp_spsc_push_finish(jp_spsc_t *q, jp_queue_slot_t *slot);
int    jp_spsc_try_pop_start(jp_spsc_t *q, jp_queue_slot_t *slot);
int    jp_spsc_pop_start(jp_spsc_t *q, jp_queue_slot_t *slot, const struct timespec *deadline);
void   jp_spsc_pop_finish(jp_spsc_t *q, jp_queue_slot_t *slot);

/* ---- jp_mpsc: multi-producer single-consumer (per-slot sequence numbers) */
typedef struct jp_mpsc jp_mpsc_t;
jp_mpsc_t *jp_mpsc_create(size_t capacity, size_t elem_size);
void   jp_mpsc_destroy(jp_mpsc_t *q);
int    jp_mpsc_try_push(jp_mpsc_t *q, const void *elem);  /* 0, EAGAIN full, EPIPE closed */
int    jp_mpsc_try_pop(jp_mpsc_t *q, void *elem);         /* 0, EAGAIN empty, EPIPE closed and empty */
int    jp_mpsc_push(jp_mpsc_t *q, const void *elem, const struct timespec *deadline);
int    jp_mpsc_pop(jp_mpsc_t *q, void *elem, const struct timespec *deadline);
size_t jp_mpsc_push_bulk(jp_mpsc_t *q, const void *elems, size_t n);  /* how many went in */
size_t jp_mpsc_pop_bulk(jp_mpsc_t *q, void *elems, size_t n);
void   jp_mpsc_close(jp_mpsc_t *q);
size_t jp_mpsc_size(const jp_mpsc_t *q);
size_t jp_mpsc_capacity(const jp_mpsc_t *q);
/* 1.1: in-place slots */
int    jp_mpsc_try_push_start(jp_mpsc_t *q, jp_queue_slot_t *slot);
int    jp_mpsc_push_start(jp_mpsc_t *q, jp_queue_slot_t *slot, const struct timespec *deadline);
void   jp_mpsc_push_finish(jp_mpsc_t *q, jp_queue_slot_t *slot);
int    jp_mpsc_try_pop_start(jp_mpsc_t *q, jp_queue_slot_t *slot);
int    jp_mpsc_pop_start(jp_mpsc_t *q, jp_queue_slot_t *slot, const struct timespec *deadline);
void   jp_mpsc_pop_finish(jp_mpsc_t *q, jp_queue_slot_t *slot);

/* ---- jp_mpmc: multi-producer multi-consumer (per-slot sequence numbers) */
typedef struct jp_mpmc jp_mpmc_t;
jp_mpmc_t *jp_mpmc_create(size_t capacity, size_t elem_size);
void   jp_mpmc_destroy(jp_mpmc_t *q);
int    jp_mpmc_try_push(jp_mpmc_t *q, const void *elem);  /* 0, EAGAIN full, EPIPE closed */
int    jp_mpmc_try_pop(jp_mpmc_t *q, void *elem);         /* 0, EAGAIN empty, EPIPE closed and empty */
int    jp_mpmc_push(jp_mpmc_t *q, const void *elem, const struct timespec *deadline);
int    jp_mpmc_pop(jp_mpmc_t *q, void *elem, const struct timespec *deadline);
size_t jp_mpmc_push_bulk(jp_mpmc_t *q, const void *elems, size_t n);  /* how many went in */
size_t jp_mpmc_pop_bulk(jp_mpmc_t *q, void *elems, size_t n);
void   jp_mpmc_close(jp_mpmc_t *q);
size_t jp_mpmc_size(const jp_mpmc_t *q);
size_t jp_mpmc_capacity(const jp_mpmc_t *q);
/* 1.1: in-place slots */
int    jp_mpmc_try_push_start(jp_mpmc_t *q, jp_queue_slot_t *slot);
int    jp_mpmc_push_start(jp_mpmc_t *q, jp_queue_slot_t *slot, const struct timespec *deadline);
void   jp_mpmc_push_finish(jp_mpmc_t *q, jp_queue_slot_t *slot);
int    jp_mpmc_try_pop_start(jp_mpmc_t *q, jp_queue_slot_t *slot);
int    jp_mpmc_pop_start(jp_mpmc_t *q, jp_queue_slot_t *slot, const struct timespec *deadline);
void   jp_mpmc_pop_finish(jp_mpmc_t *q, jp_queue_slot_t *slot);

#ifdef __cplusplus
}
#endif

#endif /* JPSYNC_QUEUE_H */
