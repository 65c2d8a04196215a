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
 * Parking.  A blocked caller spins a little, then sleeps on a channel: a
 * 32-bit futex word "seq" (an event counter) and a count of waiters.  The
 * classic sequence, which loses no wake-up:
 *
 *     waiter                              waker
 *     waiters += 1         (seq_cst)      publish: RMW or store on tail/head
 *     s = seq                                      (seq_cst)
 *     re-check the indices (seq_cst)      if (waiters != 0)  (seq_cst load)
 *     futex_wait(&seq, s)                     seq += 1, futex_wake(&seq)
 *
 * Both sides are a store followed by a load of the other side's variable
 * (Dekker): with all four seq_cst, at least one side sees the other, so
 * either the waiter's re-check sees the new index and does not sleep, or the
 * waker sees waiters != 0 and bumps seq, which the waiter read before its
 * re-check, so futex_wait returns at once or is woken.  When nobody waits
 * the waker pays one load of a line that nobody writes: no system call.
 * On x86 the seq_cst RMWs and loads cost nothing extra; the seq_cst store of
 * the single consumer's head is an xchg.
 */
#ifndef JP_QUEUE_INTERNAL_H
#define JP_QUEUE_INTERNAL_H

#include "jp_internal.h"
#include "os.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#define JP__Q_CLOSED (UINT64_C(1) << 63)
#define JP__Q_POS(t) ((t) & ~JP__Q_CLOSED)

struct jp__qchan {
	_Atomic uint32_t seq;		/* event counter, the futex word */
	_Atomic uint32_t waiters;	/* callers between registering and leaving */
} JP_ALIGNED_CL;

/* Called after the caller's seq_cst publication: wake up to n sleepers. */
static inline void jp__qchan_wake(struct jp__qchan *c, size_t n)
{
	/* seq_cst: the load must not pass the publication before it (Dekker). */
	if (jp_likely(atomic_load(&c->waiters) == 0))
		return;
	atomic_fetch_add(&c->seq, 1);
	jp__futex_wake(&c->seq, n > 0x7fffffff ? 0x7fffffff : (int)n);
}

/* Copy one element; pointer-sized elements (the common case) inline. */
static inline void jp__qcopy(void *dst, const void *src, size_t n)
{
	if (jp_likely(n == sizeof(void *)))
		memcpy(dst, src, sizeof(void *));
	else
		memcpy(dst, src, n);
}

typedef int (*jp__qtry_fn)(void *q, void *elem);
typedef bool (*jp__qsleep_fn)(const void *q);

/* ---- queue_wait.c ------------------------------------------------------ */

/*
 * Block until try_op(q, elem) returns something other than EAGAIN, the
 * deadline passes (ETIMEDOUT) or the deadline is malformed (EINVAL).
 * may_sleep(q) re-checks the indices with seq_cst loads and says whether
 * nothing can change without a wake-up on c (false when the queue is closed
 * or an operation is in flight).
 */
int jp__qblock(void *q, struct jp__qchan *c, jp__qtry_fn try_op,
	       jp__qsleep_fn may_sleep, void *elem,
	       const struct timespec *deadline);
/* Initialise a channel (and tell valgrind its words are atomics). */
void jp__qchan_init(struct jp__qchan *c);
/* Wake every sleeper (close). */
void jp__qchan_wake_all(struct jp__qchan *c);

/*
 * Map a queue: a header of hdr bytes followed by a ring of capacity slots of
 * slot_overhead + elem_size bytes rounded up to align.  Returns the mapping
 * (zeroed) with *cap (power of two), *stride and *bytes filled, or NULL with
 * errno EINVAL (bad sizes) or ENOMEM.
 */
void *jp__qmap(size_t hdr, size_t capacity, size_t elem_size,
	       size_t slot_overhead, size_t align, size_t *cap,
	       size_t *stride, size_t *bytes);
void jp__qunmap(void *q, size_t bytes);

#endif /* JP_QUEUE_INTERNAL_H */
