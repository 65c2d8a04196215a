/*
 * lock.h - the library's internal lock (lock.c), in lib/base: it depends on
 * nothing but the OS door (os.h), so every part can take it.
 *
 * The allocator cannot use jp_mutex: a part does not depend on another
 * (doc/layout.md), and its fork handlers need to know who holds a lock.  So the
 * lock word is the holder's pthread_self() (0: free), set by the one
 * compare-and-swap that takes the lock and cleared by the one store that
 * releases it: a fork handler that runs in a signal handler can tell, at
 * any instruction, whether the code it interrupted holds the lock (it must
 * not wait for it then).  Sleepers wait on a separate futex word, seq,
 * which a releaser that sees waiters makes odd, a wake pending, and wakes
 * one; the next waiter to look at the owner makes it even again, and until
 * then releases wake no one (lock.c; tests/base/model-lock.py).
 *
 * Lock order (who may take which while holding which): a class lock of one
 * shard at a time (central.c), then the segment lock (segment.c), then the
 * heap lock (tcache.c).  The huge lock (huge.c) is never held together
 * with another.
 */
#ifndef JP_LOCK_H
#define JP_LOCK_H

#include "jp_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

/* Hidden declarations too (-fvisibility=hidden covers definitions only),
 * so that calls and the globals are reached directly, not through the
 * PLT or the GOT. */
#pragma GCC visibility push(hidden)

struct jp__lock {
	_Atomic uintptr_t owner;	/* pthread_self() of the holder, or 0 */
	_Atomic uint32_t waiters;	/* threads in the slow path */
	_Atomic uint32_t seq;		/* futex word: odd while a wake is pending */
};

/* Set once at start when a race detector that does not see this library's
 * atomics runs (any valgrind tool; ThreadSanitizer with the library not
 * built for it): the lock then announces happens-before to it. */
extern uint8_t jp__lock_annotate;
/* Decide jp__lock_annotate (at load time; the allocator calls it again
 * when malloc runs before the constructors). */
void jp__lock_setup(void);

void jp__lock_slow(struct jp__lock *l, uintptr_t me);
void jp__unlock_wake(struct jp__lock *l);

static inline void jp__lock(struct jp__lock *l)
{
	uintptr_t z = 0, me = (uintptr_t)pthread_self();

	/* acquire: what the previous holder wrote is visible to us. */
	if (!atomic_compare_exchange_strong_explicit(&l->owner, &z, me,
			memory_order_acquire, memory_order_relaxed))
		jp__lock_slow(l, me);
	if (jp_unlikely(jp__lock_annotate))
		jp__hb_after(l);
}

static inline void jp__unlock(struct jp__lock *l)
{
	if (jp_unlikely(jp__lock_annotate))
		jp__hb_before(l);
	/* seq_cst, not just release: the load of waiters below must not be
	 * ordered before this store (Dekker with jp__lock_slow). */
	atomic_store(&l->owner, 0);
	if (atomic_load(&l->waiters) != 0)
		jp__unlock_wake(l);
}

/* Take l if it is free, without waiting; true when taken. */
static inline bool jp__trylock(struct jp__lock *l)
{
	uintptr_t z = 0;

	if (!atomic_compare_exchange_strong_explicit(&l->owner, &z, (uintptr_t)pthread_self(),
			memory_order_acquire, memory_order_relaxed))
		return false;
	if (jp_unlikely(jp__lock_annotate))
		jp__hb_after(l);
	return true;
}

/* Tell helgrind and drd that the lock word itself is raced on purpose
 * (a zeroed struct jp__lock is a free lock; this adds only that). */
void jp__lock_init(struct jp__lock *l);

/*
 * For fork (alloc_fork.c).  jp__lock_for_fork takes l unless this very
 * thread holds it already (fork from a signal handler that interrupted the
 * allocator: waiting would deadlock, and the interrupted code finishes its
 * work after the handler returns); it returns true when it took it, and
 * only then may the parent's handler release it.  jp__lock_reset frees l
 * in the child, where only the forking thread exists.
 */
bool jp__lock_for_fork(struct jp__lock *l);
/* Whether the calling thread holds l (a signal handler's question). */
bool jp__lock_mine(const struct jp__lock *l);
void jp__lock_reset(struct jp__lock *l);

#pragma GCC visibility pop

#endif /* JP_LOCK_H */
