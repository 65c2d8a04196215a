/*
 * sync.h - what sync_mode.c, mutex.c, cond.c, wait.c, lockdep.c and the 1.1 primitives
 * (rwlock.c, sem.c, barrier.c) share.
 *
 * Vocabulary:
 *   the "sync mode" - decided once per process (jp__sync_mode, in
 *     sync_mode.c): PLAIN, or
 *     PLAIN with LOCKDEP (JPSYNC_LOCKDEP=1), CHECK (JPSYNC_CHECK=1: misuse
 *     that needs to know the owner aborts), VALGRIND (running under
 *     helgrind or drd: emit the happens-before client requests) and/or
 *     TSAN (the process runs ThreadSanitizer: tell it too, jp__tsan_on)
 *     and/or NO_ASYM (no membarrier(2): mutex.c).  The fast paths
 *     test "mode != PLAIN" and nothing else, so with both off they cost one
 *     predictable branch; 0 (UNKNOWN) also takes the slow branch, which
 *     decides the mode.
 *   a "pc" - the code address that called the public function
 *     (__builtin_return_address(0)), recorded by lockdep.
 */
#ifndef JP_SYNC_H
#define JP_SYNC_H

#include "base/jp_internal.h"

#include <jpsync/mutex.h>
#include <stdatomic.h>
#include <stdbool.h>

#define JP_SYNC_UNKNOWN  0
#define JP_SYNC_PLAIN    1
#define JP_SYNC_LOCKDEP  2
#define JP_SYNC_VALGRIND 4
#define JP_SYNC_TSAN     8
#define JP_SYNC_CHECK    16
/* No asymmetric fences (park.h: jp__park_asym): jp_mutex's unlock is an
 * exchange, taken on the checked branch (mutex.c). */
#define JP_SYNC_NO_ASYM  32
/* Either: keep each thread's stack of held locks (lockdep.c). */
#define JP_SYNC_OWNERS (JP_SYNC_LOCKDEP | JP_SYNC_CHECK)
/* Either detector: emit the happens-before annotations (jp__hb_*). */
#define JP_SYNC_RACE_TOOLS (JP_SYNC_VALGRIND | JP_SYNC_TSAN)

/* The 32-bit words of the public structs, seen as the atomics they are. */
static inline _Atomic uint32_t *jp__mutex_word(jp_mutex_t *m)
{
	return (_Atomic uint32_t *)(void *)&m->word;
}

static inline _Atomic uint32_t *jp__cond_word(jp_cond_t *c)
{
	return (_Atomic uint32_t *)(void *)&c->seq;
}

/* ---- "sync_mode.c" ------------------------------------------------------ */

extern JP_HIDDEN _Atomic int jp__sync_mode;
/* Decide the mode (options, valgrind) and return it. */
int jp__sync_mode_init(void);

/* The current mode, deciding it on first use. */
static inline int jp__sync_mode_get(void)
{
	/* relaxed: the mode is a single value, written once (idempotently). */
	int mode = atomic_load_explicit(&jp__sync_mode, memory_order_relaxed);

	return jp_likely(mode != JP_SYNC_UNKNOWN) ? mode : jp__sync_mode_init();
}

/* For the white-box tests: turn lock-order checking on or off. */
void jp__sync_force_lockdep(bool on);
/* For the white-box tests: turn JPSYNC_CHECK's owner checks on or off. */
void jp__sync_force_check(bool on);

/*
 * Misuse of a lock that no valid program makes: print one line,
 * "jpsync: CALL(0xOBJ): WHY" (or "CALL(0xOBJ, 0xOBJ2): WHY" when obj2 is
 * not NULL), through jp__die, and abort.
 */
_Noreturn void jp__sync_misuse(const char *call, const void *obj, const void *obj2,
			       const char *why) JP_COLD;

/* ---- "mutex.c" ---------------------------------------------------------- */

/* Lock and unlock as the public calls do, with the caller's pc given. */
void jp__mutex_lock_at(jp_mutex_t *m, void *pc);
void jp__mutex_unlock_at(jp_mutex_t *m, void *pc);


/*
 * The lock-word protocol of mutex.c alone (spin, park, wake one), with no
 * checking or annotation: for a lock built on it (rwlock.c).  lock returns
 * 0, or ETIMEDOUT once the (valid) deadline has passed; a past deadline
 * allows one attempt.
 */
int  jp__mutex_word_lock(_Atomic uint32_t *w, const struct timespec *deadline);
bool jp__mutex_word_trylock(_Atomic uint32_t *w);
/* Whether the word is locked (a free word need not be 0: mutex.c). */
bool jp__mutex_word_locked(_Atomic uint32_t *w);
void jp__mutex_word_unlock(_Atomic uint32_t *w);

/* ---- "lockdep.c" -------------------------------------------------------- */

/* What is taken: a jp_mutex, or a jp_rwlock for reading or for writing. */
#define JP__LD_MUTEX 0
#define JP__LD_READ  1
#define JP__LD_WRITE 2

/* Before blocking on lock: record the order against what the thread holds. */
void jp__lockdep_before_lock(const void *lock, int kind, void *pc);
/* lock was acquired (by lock, timedlock or trylock). */
void jp__lockdep_acquired(const void *lock, int kind, void *pc);
/*
 * lock is being released; reports a lock the thread does not hold (under
 * JP_SYNC_CHECK: misuse, abort).  Returns false when it reported, true
 * when the thread holds lock or cannot tell.
 */
bool jp__lockdep_release(const void *lock, int kind, void *pc);
/* lock is destroyed: forget the orders it took part in. */
void jp__lockdep_destroy(const void *lock);
/* Does the calling thread hold lock?  True also when it cannot tell (its
 * stack could not be mapped, or is deeper than it records). */
bool jp__lockdep_holds(const void *lock);

/* ---- "wait.c" ----------------------------------------------------------- */

/* FUTEX_WAKE calls made by jp_notify_* and jp_cond_*, for the white-box tests. */
uint64_t jp__wait_wake_calls(void);
/* How many times jp_wait spun before it parked or returned, in the calling
 * thread (wait.c). */
uint64_t jp__wait_spins(void);
/* Count a FUTEX_WAKE call (cond.c). */
void jp__wait_count_wake(void);
/*
 * The waiter count of the proxy state of a jp_cond (shared with the other
 * objects of that state: an over-count, never an under-count).
 */
_Atomic uint32_t *jp__wait_cond_waiters(const void *cond);
/* The index of the proxy state of addr, for the white-box tests. */
unsigned jp__wait_state_index(const void *addr);

#endif /* JP_SYNC_H */
