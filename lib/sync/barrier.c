/*
 * barrier.c - jp_barrier: a reusable barrier on one futex word.
 *
 * "round" counts completed rounds and is the futex word; "arrived" counts
 * the threads of the current round.  A thread reads round, then adds
 * itself to arrived.  The thread that makes arrived equal to count is the
 * serial one: it resets arrived to 0, then advances round (release) and
 * wakes the sleepers if any registered (park.h's pairing: they register in
 * "waiters" before their last look at round, and the kernel compares round
 * under its lock).  The others wait until round moves.
 *
 * Why reading round before arriving is enough: the round cannot complete
 * without this thread, so the value read is the current round's.  Why the
 * reset cannot be lost: a thread of the next round arrives only after it
 * saw round move, which the serial thread did after the reset.
 *
 * Race detectors: under valgrind, and in a process that runs
 * ThreadSanitizer (the library need not be instrumented), each thread
 * publishes on the barrier's address before it arrives and receives from
 * it after it leaves.
 */
#include "sync.h"
#include "base/park.h"

#include <jpsync/barrier.h>

#include <errno.h>
#include <limits.h>

#define BARRIER_SPIN 200

_Static_assert(sizeof(jp_barrier_t) == 32, "jp_barrier_t is 32 bytes (ABI)");

static inline _Atomic uint32_t *word(uint32_t *p)
{
	return (_Atomic uint32_t *)(void *)p;
}

JP_EXPORT int jp_barrier_init(jp_barrier_t *b, unsigned count)
{
	if (count == 0 || count > JP_BARRIER_COUNT_MAX)
		return EINVAL;
	/* relaxed: initialisation precedes sharing the barrier. */
	atomic_store_explicit(word(&b->count), count, memory_order_relaxed);
	atomic_store_explicit(word(&b->arrived), 0, memory_order_relaxed);
	atomic_store_explicit(word(&b->round), 0, memory_order_relaxed);
	atomic_store_explicit(word(&b->waiters), 0, memory_order_relaxed);
	for (unsigned i = 0; i < JP_ARRAY_SIZE(b->reserved); i++)
		b->reserved[i] = 0;
	return 0;
}

JP_EXPORT void jp_barrier_destroy(jp_barrier_t *b)
{
	(void)b;	/* nothing to release */
}

static JP_NOINLINE void wait_round(jp_barrier_t *b, uint32_t seen)
{
	_Atomic uint32_t *round = word(&b->round);
	unsigned spin = jp__park_may_spin() ? BARRIER_SPIN : 0;

	for (unsigned i = 0; i < spin; i++) {
		/* acquire: the serial thread's advance, and all before it. */
		if (atomic_load_explicit(round, memory_order_acquire) != seen)
			return;
		jp_cpu_relax();
	}
	jp__park_register(word(&b->waiters));
	/* seq_cst: the last look, after registering (park.h). */
	while (atomic_load(round) == seen)
		jp__park_wait(round, seen, NULL);
	jp__park_leave(word(&b->waiters));
}

JP_EXPORT int jp_barrier_wait(jp_barrier_t *b)
{
	/* relaxed: the count is set before the barrier is shared. */
	uint32_t count = atomic_load_explicit(word(&b->count), memory_order_relaxed);
	uint32_t seen, a;
	bool vg = false;

	if (count == 0 || count > JP_BARRIER_COUNT_MAX)
		return EINVAL;
	/* relaxed: see jp__sync_mode_get. */
	if (jp_unlikely(atomic_load_explicit(&jp__sync_mode, memory_order_relaxed) != JP_SYNC_PLAIN) &&
	    (jp__sync_mode_get() & JP_SYNC_RACE_TOOLS)) {
		vg = true;
		JP_BENIGN_RACE(&b->arrived, 3 * sizeof b->arrived, "jp_barrier words, accessed atomically");
		jp__hb_before(b);
	}
	/* acquire: pairs with the advance of the round we are leaving. */
	seen = atomic_load_explicit(word(&b->round), memory_order_acquire);
	/* acq_rel: the serial thread acquires every arrival before it. */
	a = atomic_fetch_add_explicit(word(&b->arrived), 1, memory_order_acq_rel) + 1;
	if (a == count) {
		/* relaxed: published by the release of the advance below. */
		atomic_store_explicit(word(&b->arrived), 0, memory_order_relaxed);
		/* seq_cst: releases the round, and is the waker's half of the
		 * pairing before the load of waiters. */
		atomic_fetch_add(word(&b->round), 1);
		if (atomic_load(word(&b->waiters)) != 0)
			jp__park_wake(word(&b->round), INT_MAX);
	} else {
		wait_round(b, seen);
	}
	if (vg)
		jp__hb_after(b);
	return a == count ? JP_BARRIER_SERIAL_THREAD : 0;
}
