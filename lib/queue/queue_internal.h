/*
 * queue_internal.h - what spsc.c, mpsc.c and mpmc.c share: sizing and
 * mapping of a ring, element copies, and the parking of blocked callers
 * (queue_wait.c).
 *
 * Counters.  head and tail are 64-bit positions that only grow (2^63
 * operations do not wrap in practice); the slot of position p is p & mask.
 * Bit 63 of tail is the "closed" flag: jp_*_close sets it with one atomic OR,
 * and every producer publishes its position with a compare-exchange on tail,
 * which therefore fails once the queue is closed.  So a push either lands
 * before the close (and the consumers will see it) or returns EPIPE; a
 * consumer that finds head == (tail & ~CLOSED) with the bit set knows
 * nothing more can come and returns EPIPE.
 *
 * Parking.  A blocked caller spins a little, then sleeps on a channel of
 * park.h (a futex word "seq", an event counter, and a count of registered
 * waiters), by the parking protocol written there: the waiter registers,
 * reads seq, re-checks the indices (and the slot it waits for: a caller
 * behind a slot another thread has claimed and not finished sleeps too,
 * see mpring.h for that window), sleeps; the waker publishes (an RMW or
 * store on tail/head or on a slot, seq_cst or fenced), reads the count and, when it is
 * not 0, takes every registration and wakes every sleeper, who register
 * again if they still have to wait.  So while a woken thread is on its
 * way, later operations see no waiter and make no system call: one wake-up
 * per sleep, not one per element.  When nobody waits, the waker pays one
 * load of a line that nobody writes.  On x86 the seq_cst RMWs and loads
 * cost nothing extra; the seq_cst store of a single consumer's head is an
 * xchg.
 */
#ifndef JP_QUEUE_INTERNAL_H
#define JP_QUEUE_INTERNAL_H

#include "base/jp_internal.h"
#include "base/os.h"
#include "base/park.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#define JP__Q_CLOSED (UINT64_C(1) << 63)
#define JP__Q_POS(t) ((t) & ~JP__Q_CLOSED)

/* Copy one element; pointer-sized elements (the common case) inline. */
static inline void jp__qcopy(void *dst, const void *src, size_t n)
{
	if (jp_likely(n == sizeof(void *)))
		memcpy(dst, src, sizeof(void *));
	else
		memcpy(dst, src, n);
}

/*
 * Asymmetric fences (SPSC).  The single producer and the single consumer
 * publish with plain release stores, which the CPU may let a later load
 * pass; the Dekker pairs above then need a full fence on both sides.  When
 * membarrier(2) is available, the fast side (the one publishing elements)
 * keeps only a compiler barrier and the slow side (a caller about to sleep,
 * close) runs jp__os_membarrier(), which forces a full barrier on every
 * running thread of the process: whichever order the fast side's store and
 * load executed in, one of them is ordered against the slow side's (the
 * sys_membarrier technique of userspace-rcu).  Without membarrier (old
 * kernels, seccomp, valgrind) both sides use seq_cst fences.
 * jp__park_asym (park.h) is decided once, by a constructor of the library.
 */

static inline void jp__q_fast_fence(void)
{
	if (jp_likely(jp__park_asym))
		atomic_signal_fence(memory_order_seq_cst);	/* compiler only, see above */
	else
		atomic_thread_fence(memory_order_seq_cst);
}

static inline void jp__q_slow_fence(void)
{
	if (jp__park_asym)
		jp__os_membarrier();
	else
		atomic_thread_fence(memory_order_seq_cst);
}

/*
 * A bulk call that moves nothing says why in errno, with the error number
 * the single-element call returns (EAGAIN full or empty, EPIPE closed,
 * EINVAL); the 1.0 return value, a count, stays as it was.  Only this
 * path writes errno: a call that moves elements leaves it alone.
 */
static inline size_t jp__qbulk_none(int why)
{
	errno = why;
	return 0;
}

typedef int (*jp__qtry_fn)(void *q, void *elem);
typedef bool (*jp__qsleep_fn)(const void *q);

/* ---- queue_wait.c ------------------------------------------------------ */

/*
 * Block until try_op(q, elem) returns something other than EAGAIN, the
 * deadline passes (ETIMEDOUT) or the deadline is malformed (EINVAL).
 * may_sleep(q) re-checks the indices (and, for the multi-producer rings,
 * the slot the caller needs: mpring.h) with seq_cst loads and says whether
 * nothing can change without a wake-up on c (false when the queue is
 * closed, or the caller could go on).  A slot another caller has claimed
 * and not finished is a reason to sleep: its finish wakes c.  asym: the
 * wakers publish with plain stores (SPSC, and the slots of mpring.h), so
 * the re-check follows jp__q_slow_fence().
 */
int jp__qblock(void *q, struct jp__park_chan *c, jp__qtry_fn try_op,
	       jp__qsleep_fn may_sleep, void *elem,
	       const struct timespec *deadline, bool asym);

/*
 * A waiting call: a bad deadline is EINVAL before anything else, then one
 * try_op(q, arg) (the whole call when it does not return EAGAIN: EINVAL
 * for a NULL q), then jp__qblock on the channel chan_off bytes into q.
 * Inlined, so the first try is a direct call.
 */
static inline __attribute__((always_inline)) int
jp__qwait(void *q, size_t chan_off, jp__qtry_fn try_op, jp__qsleep_fn may_sleep,
	  void *arg, const struct timespec *deadline, bool asym)
{
	int r;

	if (jp_unlikely(jp__deadline_check(deadline) != 0))
		return EINVAL;
	r = try_op(q, arg);
	if (jp_likely(r != EAGAIN))
		return r;
	return jp__qblock(q, (struct jp__park_chan *)(void *)((char *)q + chan_off), try_op,
			  may_sleep, arg, deadline, asym);
}

/*
 * Map a queue: a header of hdr bytes followed by a ring of capacity slots of
 * slot_overhead + elem_size bytes rounded up to align.  Returns the mapping
 * (zeroed) with *cap (power of two), *stride and *bytes filled, or NULL with
 * errno EINVAL (bad sizes) or ENOMEM (more than the machine's memory, or no
 * mapping).
 */
void *jp__qmap(size_t hdr, size_t capacity, size_t elem_size,
	       size_t slot_overhead, size_t align, size_t *cap,
	       size_t *stride, size_t *bytes);
void jp__qunmap(void *q, size_t bytes);

#endif /* JP_QUEUE_INTERNAL_H */
