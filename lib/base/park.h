/*
 * park.h - the library's one parking protocol (park.c): how a thread that
 * has to wait for another sleeps on a 32-bit futex word until an absolute
 * CLOCK_MONOTONIC deadline, and how the other wakes it; the deadline
 * checks every timed call makes; whether a waiter may spin before it
 * sleeps (jp__park_may_spin: not on one CPU, not under valgrind); and the
 * count of sleeps the tests read.  Every blocking call of the
 * synchronisation and queue layers parks here: jp_mutex (mutex.c: the lock
 * word is the futex), jp_cond (cond.c), jp_rwlock (rwlock.c), jp_sem
 * (sem.c), jp_barrier (barrier.c), jp_wait (wait.c), blocked queue callers
 * (spsc.c, queue_wait.c) and jp_hammer's start (hammer.c); a new primitive
 * parks here too, so that deadlines, signals and the no-lost-wake-up
 * argument exist once.  (The internal lock, lock.c beside this file, is the
 * one exception: it sleeps on a futex word of its own through os.h, as it
 * never has a deadline, and a fork handler must see who holds it.)
 *
 * Vocabulary:
 *   word     - a 32-bit futex word.  A waiter sleeps while the word still
 *              holds the value it saw; a waker changes the word (or the
 *              state the word stands for) and then wakes.
 *   count    - how many waiters have registered for a word, so that a
 *              waker with nobody registered makes no system call.
 *   channel  - a word used as an event counter together with its count
 *              (struct jp__park_chan), for waits on a condition that is not
 *              itself a 32-bit word (a queue's indices, a proxied object).
 *   deadline - an absolute CLOCK_MONOTONIC time; NULL waits forever.
 *
 * Deadlines, the same in every timed call of the library:
 *   - a tv_nsec outside 0..999999999 is EINVAL, checked first
 *     (jp__deadline_check), before the call does anything else;
 *   - a deadline already past - a negative tv_sec included, which an
 *     underflowing computation easily produces - allows exactly one
 *     attempt (a free mutex is taken, a present element returned); then the
 *     call returns ETIMEDOUT at once: the blocking path asks
 *     jp__deadline_passed() before it spins or yields;
 *   - a signal neither ends a wait early nor late: jp__park_wait re-issues
 *     an interrupted wait (EINTR) with the same absolute deadline, so the
 *     caller sees it only as time passing.
 *
 * The pairing that loses no wake-up (Dekker's store-buffering pattern):
 *
 *     waiter                                waker
 *     count += 1            (seq_cst RMW)   change the state   (seq_cst, or
 *     seen = word           (seq_cst)         a store + seq_cst fence)
 *     re-check the state    (seq_cst)       n = count          (seq_cst)
 *     jp__park_wait(word, seen, deadline)   if (n) word += 1, jp__park_wake
 *     count -= 1  (unless the waker took the registrations)
 *
 * Either the waiter's re-check sees the new state and it does not sleep,
 * or the waker sees the registration and moves the word, which the waiter
 * read before its re-check, so the kernel (which compares the word under
 * its own lock) refuses to let it sleep or wakes it.  A word that is
 * itself the state (a mutex word, a 32-bit jp_wait object) needs no
 * event counter: the waker's change of the word is the bump.
 *
 * Wakers choose one of two policies, by what they wake:
 *   - wake n and let the woken count themselves out (jp__park_leave): a
 *     notify_one must leave the other sleepers registered (wait.c, cond.c);
 *   - take every registration and wake everyone (jp__park_chan_wake):
 *     while the woken are on their way, later wakers see nobody and make no
 *     system call, one wake-up per sleep rather than per event (queues).
 *     A waiter that leaves on its own (a timeout) then leaves its
 *     registration behind: it costs the next waker one futex_wake, never a
 *     missed one.
 */
#ifndef JP_PARK_H
#define JP_PARK_H

#include "jp_internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

/* ---- deadlines --------------------------------------------------------- */

/* 0, or EINVAL when deadline->tv_nsec is out of range (NULL is valid). */
static inline int jp__deadline_check(const struct timespec *deadline)
{
	if (deadline != NULL &&
	    jp_unlikely(deadline->tv_nsec < 0 || deadline->tv_nsec >= 1000000000L))
		return EINVAL;
	return 0;
}

/* True when the (valid) deadline is not in the future; NULL never passes. */
bool jp__deadline_passed(const struct timespec *deadline);

/* ---- spinning before parking ------------------------------------------ */

/*
 * Whether a waiter may spin a little before it parks: true on a machine
 * with more than one CPU, outside valgrind (which runs one thread at a
 * time, so spinning only delays the thread being waited for).  Decided
 * once.  The primitives bound their spins themselves (rwlock.c, sem.c,
 * barrier.c); jp_mutex has its own budget and a cap on
 * its spinners (mutex.c).
 */
bool jp__park_may_spin(void);

/*
 * Asymmetric fences (park.c): true when the process is registered for
 * membarrier(2), so that a fast side may keep a compiler barrier where a
 * full fence would otherwise be needed, its slow side running
 * jp__os_membarrier() (not under valgrind, nor in a ThreadSanitizer
 * build).  Decided by a constructor, at load time; jp__park_asym_setup
 * decides it (again) and returns it, for a caller that may come first.
 */
extern JP_HIDDEN bool jp__park_asym;
bool jp__park_asym_setup(void);

/* ---- the futex word ------------------------------------------------------ */

/*
 * Sleep while *word == seen, until woken or until the (valid) deadline.
 * Returns 0 when woken, when *word was not seen, or spuriously: the caller
 * re-checks its condition.  Returns ETIMEDOUT once the deadline has passed
 * (at once for a negative tv_sec).  Never returns for a signal.  Dies
 * (jp__die) only for a fault a valid object cannot produce: a word that is
 * not mapped or not aligned.
 */
int jp__park_wait(const _Atomic uint32_t *word, uint32_t seen,
		  const struct timespec *deadline);

/*
 * How many times jp__park_wait has gone to the kernel to sleep, in the whole
 * process (relaxed, counted on the slow path only): a white-box count for
 * the tests that check a blocked caller sleeps rather than spins
 * (tests/queue/test-queue-park.c).  Not exported.
 */
extern JP_HIDDEN _Atomic unsigned long jp__park_sleeps;

/* Wake at most n sleepers of word (INT_MAX: all); returns how many woke. */
int jp__park_wake(const _Atomic uint32_t *word, int n);

/* ---- counts and channels ------------------------------------------------- */

struct jp__park_chan {
	_Atomic uint32_t seq;		/* the word: an event counter */
	_Atomic uint32_t waiters;	/* the count */
};

/* The waiter's first half: register on count (a word that is itself the
 * state needs nothing more: the kernel compares it). */
static inline void jp__park_register(_Atomic uint32_t *count)
{
	/* seq_cst: the waiter's half of the pairing above. */
	atomic_fetch_add(count, 1);
}

/* The same, for an event-counter word: register, then read the word. */
static inline uint32_t jp__park_enter(_Atomic uint32_t *count,
				      const _Atomic uint32_t *word)
{
	jp__park_register(count);
	/* seq_cst: read after the registration (the pairing above). */
	return atomic_load(word);
}

/* The waiter is done (woken, timed out, or it found no need to sleep). */
static inline void jp__park_leave(_Atomic uint32_t *count)
{
	/* relaxed: leaving only spares a later waker its system call. */
	atomic_fetch_sub_explicit(count, 1, memory_order_relaxed);
}

/* The waker's half, after its seq_cst change of the state: wake n of the
 * sleepers of an event-counter word, if anybody is registered. */
static inline void jp__park_bump_wake(_Atomic uint32_t *word, int n)
{
	/* release: a waiter that reads the new value sees the change. */
	atomic_fetch_add_explicit(word, 1, memory_order_release);
	jp__park_wake(word, n);
}

void jp__park_chan_init(struct jp__park_chan *c);
/* Move the word and wake every sleeper of c (a close wakes everyone). */
void jp__park_chan_bump(struct jp__park_chan *c);

/*
 * The waker's half for a channel whose sleepers are all woken, after the
 * waker's seq_cst change of the state: when anybody registered, take every
 * registration and wake them all.  When nobody waits this is one load of a
 * line nobody writes.
 */
static inline void jp__park_chan_wake(struct jp__park_chan *c)
{
	/* seq_cst: the load must not pass the change before it (park.h). */
	if (jp_likely(atomic_load(&c->waiters) == 0))
		return;
	if (atomic_exchange(&c->waiters, 0) != 0)
		jp__park_chan_bump(c);
}

/* The same, for a waker whose change of the state was a plain store that
 * the caller has already ordered before this load (a fence). */
static inline void jp__park_chan_wake_fenced(struct jp__park_chan *c)
{
	/* relaxed: ordered after the change by the caller's fence. */
	if (jp_likely(atomic_load_explicit(&c->waiters, memory_order_relaxed) == 0))
		return;
	if (atomic_exchange(&c->waiters, 0) != 0)
		jp__park_chan_bump(c);
}

#endif /* JP_PARK_H */
