/*
 * mutex.c - jp_mutex: a three-state futex mutex.
 *
 * The word is 0 (free), 1 (locked, nobody asleep) or 2 (locked, and a
 * thread may be asleep in FUTEX_WAIT on it).  Lock is one compare-exchange
 * 0 -> 1 when free.  Otherwise the locker spins a bounded number of times
 * while the word says "locked, nobody asleep" (the owner is probably running
 * and about to release), then exchanges in 2 and sleeps until the exchange
 * returns 0.  Unlock exchanges in 0 and calls FUTEX_WAKE only when it took
 * away a 2, so an uncontended lock/unlock pair makes no system call.
 *
 * Spinning is bounded so that an over-subscribed machine (more runnable
 * threads than CPUs, where the owner is likely preempted) does not burn
 * CPU: nobody spins on a single CPU or under valgrind; at most one thread
 * fewer than the CPUs spins at a time (the others sleep at once); a thread
 * stops spinning as soon as the word says someone is asleep (the lock is
 * then contended enough that the owner hands over through the kernel
 * anyway); and the spin is at most JP_MUTEX_SPIN pause instructions, with
 * the checks of the word spaced out (see spin()).
 *
 * Starvation: a thread woken by unlock competes with newcomers; a newcomer
 * that finds the word at 2 does not spin but sleeps, and a woken thread
 * spins before it sleeps again, so the woken one usually wins (the spread
 * of acquisitions per thread is reported by tests/bench/sync-bench).
 *
 * Misuse that a valid program never makes aborts, through jp__sync_misuse
 * (one line naming the call and the mutex), where the check costs the fast
 * path nothing: unlock of a mutex that is not locked (the exchange's old
 * value is compared with 1 instead of 2: the same instructions), destroy
 * of a locked one (a load in destroy).  An unlock by a thread that does not
 * hold the mutex needs its owner, which the word has no room for: under
 * JPSYNC_CHECK=1 (and JPSYNC_LOCKDEP=1) each thread's stack of held locks
 * (lockdep.c) tells, on the slow path.
 *
 * The slow path (jp__sync_mode != PLAIN) adds the valgrind happens-before
 * requests, the lock-order checking of lockdep.c and, in a process that
 * runs ThreadSanitizer (jp__tsan_on: the library itself need not be
 * instrumented), the __tsan_mutex_* annotations of every lock and unlock.
 */
#include "sync.h"
#include "base/options.h"
#include "base/os.h"
#include "base/park.h"

#include <errno.h>
#include <limits.h>
#include <string.h>


/*
 * Spinning (lock_slow).  A locker that finds the mutex held, and nobody
 * asleep on it, spins at most JP_MUTEX_SPIN pause instructions, checking
 * the word after 1, 2, 4, ... and then every JP_MUTEX_SPIN_STEP pauses:
 * an owner that releases and re-takes the lock at once keeps its cache
 * line instead of losing it to every check (a spinner that reads the word
 * after each pause takes the line away from the owner between its lock
 * and its unlock, and the unlock then waits for it).  At most
 * spinners_max threads of the process spin at once (one fewer than the
 * CPUs): the others sleep at once, so that with more runnable threads
 * than CPUs the spinners do not take the CPU from the owner.
 */
#define JP_MUTEX_SPIN 4096
#define JP_MUTEX_SPIN_STEP 64

static _Atomic unsigned spin_limit = UINT_MAX;	/* UINT_MAX: not decided yet */
static _Atomic unsigned spinners, spinners_max;	/* threads in spin(); at most */

/* Under valgrind, before any thread can race for them: the spin limit and
 * the spinners' cap are written once, with the same value, by whoever
 * comes first, and read racily on purpose. */
__attribute__((constructor)) static void spin_vars_annotate(void)
{
	if (JP_ON_VALGRIND()) {
		JP_BENIGN_RACE(&spin_limit, sizeof spin_limit, "jpsync spin limit");
		JP_BENIGN_RACE(&spinners_max, sizeof spinners_max, "jpsync spinners' cap");
	}
}

static unsigned spin_limit_get(void)
{
	/* relaxed: one value, the same whoever computes it. */
	unsigned n = atomic_load_explicit(&spin_limit, memory_order_relaxed);

	if (jp_unlikely(n == UINT_MAX)) {
		unsigned cpus = jp__os_cpu_count();

		n = cpus > 1 && !JP_ON_VALGRIND() ? JP_MUTEX_SPIN : 0;
		atomic_store_explicit(&spinners_max, cpus > 1 ? cpus - 1 : 0,
				      memory_order_relaxed);
		atomic_store_explicit(&spin_limit, n, memory_order_relaxed);
	}
	return n;
}

/* Take a free mutex, leaving want (1, or 2 for a thread that may have
 * others asleep behind it) in the word. */
static inline bool try_take(_Atomic uint32_t *w, uint32_t want)
{
	uint32_t z = 0;

	/* acquire: the critical section must not start before we own it. */
	return atomic_compare_exchange_strong_explicit(w, &z, want, memory_order_acquire,
						       memory_order_relaxed);
}

static inline bool try_acquire(_Atomic uint32_t *w)
{
	return try_take(w, 1);
}

/*
 * Spin while the word says "locked, nobody asleep" (the owner is probably
 * running), as the comment at JP_MUTEX_SPIN says.  Returns true once the
 * lock is ours (taken 0 -> want), false when the budget ran out, the word
 * showed a sleeper (the hand-over goes through the kernel then) or too
 * many threads spin already.
 */
static bool spin(_Atomic uint32_t *w, uint32_t want)
{
	unsigned limit = spin_limit_get(), spent = 0, step = 1;
	bool won = false;
	uint32_t v;

	/* relaxed, all three: a count for a tuning decision, not a lock. */
	if (limit == 0 || atomic_load_explicit(&spinners, memory_order_relaxed) >=
			  atomic_load_explicit(&spinners_max, memory_order_relaxed))
		return false;
	atomic_fetch_add_explicit(&spinners, 1, memory_order_relaxed);
	while (spent < limit) {
		/* relaxed: only a hint; the compare-exchange does the acquiring. */
		v = atomic_load_explicit(w, memory_order_relaxed);
		if (v == 0) {
			if (try_take(w, want)) {
				won = true;
				break;
			}
		} else if (v == 2 && want == 1) {
			break;		/* sleepers: the hand-over goes through the kernel */
		}
		for (unsigned k = 0; k < step; k++)
			jp_cpu_relax();
		spent += step;
		if (step < JP_MUTEX_SPIN_STEP)
			step *= 2;
	}
	atomic_fetch_sub_explicit(&spinners, 1, memory_order_relaxed);
	return won;
}

/*
 * Spin (above), then sleep.  Returns 0 once the lock is ours, ETIMEDOUT
 * when the deadline passed first.
 */
static JP_NOINLINE int lock_slow(_Atomic uint32_t *w, const struct timespec *deadline)
{
	uint32_t v;
	int r;

	/* A deadline already past: the caller's attempt was the one. */
	if (deadline != NULL && jp__deadline_passed(deadline))
		return ETIMEDOUT;
	if (spin(w, 1))
		return 0;
	/* acquire: as try_acquire (the exchange may be what takes the lock). */
	v = atomic_exchange_explicit(w, 2, memory_order_acquire);
	while (v != 0) {
		r = jp__park_wait(w, 2, deadline);
		if (r == ETIMEDOUT)
			return ETIMEDOUT;
		/*
		 * Woken (or the word moved): spin before sleeping again, so
		 * that a newcomer does not keep stealing the lock from the
		 * thread the unlock chose to wake.  2, not 1, in both takes:
		 * others may still be asleep behind us.
		 */
		if (spin(w, 2))
			return 0;
		v = atomic_exchange_explicit(w, 2, memory_order_acquire);
	}
	return 0;
}

/* The word was not 1 at unlock: wake a sleeper, or report the misuse. */
static JP_NOINLINE void unlock_not_1(_Atomic uint32_t *w, uint32_t old, const char *call,
				     const void *obj)
{
	if (jp_likely(old == 2))
		jp__park_wake(w, 1);
	else if (old == 0)
		jp__sync_misuse(call, obj, NULL, "not locked");
	else
		jp__sync_misuse(call, obj, NULL, "not a mutex (corrupted or never initialised)");
}

/*
 * call and obj name the misuse in a report.  The old value is compared with
 * 1 (the uncontended case) rather than 2, so that telling "not locked" from
 * "sleepers to wake" costs the fast path no instruction.
 */
static inline void unlock_raw(_Atomic uint32_t *w, const char *call, const void *obj)
{
	/* release: the critical section happens before the next owner's. */
	uint32_t old = atomic_exchange_explicit(w, 0, memory_order_release);

	if (jp_unlikely(old != 1))
		unlock_not_1(w, old, call, obj);
}

/*
 * The slow branch of lock and timedlock: mode is not PLAIN.  flags: the
 * ThreadSanitizer flags of the attempt (JP_TSAN_TRY_LOCK for timedlock).
 */
static JP_NOINLINE int lock_checked(jp_mutex_t *m, void *pc, const struct timespec *deadline,
				    unsigned flags)
{
	_Atomic uint32_t *w = jp__mutex_word(m);
	int mode = jp__sync_mode_get();
	int r = 0;

	if (mode & JP_SYNC_TSAN)
		__tsan_mutex_pre_lock(m, flags);
	if (mode & JP_SYNC_VALGRIND)
		JP_BENIGN_RACE(&m->word, sizeof m->word, "jp_mutex futex word");
	if (mode & JP_SYNC_LOCKDEP)
		jp__lockdep_before_lock(m, JP__LD_MUTEX, pc);
	if (!try_acquire(w))
		r = lock_slow(w, deadline);
	if (r == 0) {
		if (mode & JP_SYNC_VALGRIND)
			JP_HB_AFTER(m);
		if (mode & JP_SYNC_OWNERS)
			jp__lockdep_acquired(m, JP__LD_MUTEX, pc);
	}
	if (mode & JP_SYNC_TSAN)
		__tsan_mutex_post_lock(m, flags | (r == 0 ? 0 : JP_TSAN_TRY_LOCK_FAILED), 0);
	return r;
}

static JP_NOINLINE void unlock_checked(jp_mutex_t *m, void *pc)
{
	int mode = jp__sync_mode_get();

	/*
	 * An unlock by a thread that does not hold the mutex: JPSYNC_CHECK
	 * aborts in jp__lockdep_release; lockdep alone reports it, and the
	 * unlock then releases nothing, as jp_rwlock's (the holder keeps its
	 * mutex; released, its own unlock would abort with "not locked").
	 */
	if ((mode & JP_SYNC_OWNERS) && !jp__lockdep_release(m, JP__LD_MUTEX, pc))
		return;
	if (mode & JP_SYNC_TSAN)
		__tsan_mutex_pre_unlock(m, 0);
	if (mode & JP_SYNC_VALGRIND) {
		JP_BENIGN_RACE(&m->word, sizeof m->word, "jp_mutex futex word");
		JP_HB_BEFORE(m);
	}
	unlock_raw(jp__mutex_word(m), "jp_mutex_unlock", m);
	if (mode & JP_SYNC_TSAN)
		__tsan_mutex_post_unlock(m, 0);
}

/* relaxed, both: see jp__sync_mode_get. */
static inline bool plain_mode(void)
{
	return jp_likely(atomic_load_explicit(&jp__sync_mode, memory_order_relaxed) == JP_SYNC_PLAIN);
}

/*
 * The fast paths, written plain branch first, each ending in its own
 * return: in that shape GCC reads the caller's pc (PC, a macro so that
 * __builtin_return_address is evaluated in the public function's frame)
 * only on the checked branch.  Written "if (!plain) checked(pc); else ...",
 * it hoisted the load of the return address above the branch, one
 * instruction on every uncontended lock and unlock (callgrind: 26 -> 24
 * per pair in a loop that does nothing else).
 */
#define LOCK_AT(m, PC)							\
	do {								\
		if (plain_mode()) {					\
			if (jp_likely(try_acquire(jp__mutex_word(m))))	\
				return;					\
			lock_slow(jp__mutex_word(m), NULL);		\
			return;						\
		}							\
		lock_checked(m, (PC), NULL, 0);				\
	} while (0)

#define UNLOCK_AT(m, PC)						\
	do {								\
		if (plain_mode()) {					\
			unlock_raw(jp__mutex_word(m), "jp_mutex_unlock", m); \
			return;						\
		}							\
		unlock_checked(m, (PC));				\
	} while (0)

JP_EXPORT void jp_mutex_init(jp_mutex_t *m)
{
	/* relaxed: initialisation precedes sharing the mutex with others. */
	atomic_store_explicit(jp__mutex_word(m), 0, memory_order_relaxed);
	if (jp__sync_mode_get() & JP_SYNC_TSAN)
		__tsan_mutex_create(m, 0);
}

JP_EXPORT void jp_mutex_destroy(jp_mutex_t *m)
{
	int mode = jp__sync_mode_get();

	/* relaxed: a valid caller made every unlock happen before the destroy. */
	if (atomic_load_explicit(jp__mutex_word(m), memory_order_relaxed) != 0)
		jp__sync_misuse("jp_mutex_destroy", m, NULL, "locked");

	if (mode & JP_SYNC_LOCKDEP)
		jp__lockdep_destroy(m);
	if (mode & JP_SYNC_TSAN)
		__tsan_mutex_destroy(m, 0);
}

JP_EXPORT void jp_mutex_lock(jp_mutex_t *m)
{
	LOCK_AT(m, __builtin_return_address(0));
}

JP_EXPORT void jp_mutex_unlock(jp_mutex_t *m)
{
	UNLOCK_AT(m, __builtin_return_address(0));
}

static JP_NOINLINE int trylock_checked(jp_mutex_t *m, void *pc)
{
	int mode = jp__sync_mode_get();
	bool ok;

	if (mode & JP_SYNC_TSAN)
		__tsan_mutex_pre_lock(m, JP_TSAN_TRY_LOCK);
	ok = try_acquire(jp__mutex_word(m));
	if (mode & JP_SYNC_VALGRIND)
		JP_BENIGN_RACE(&m->word, sizeof m->word, "jp_mutex futex word");
	if (ok && (mode & JP_SYNC_VALGRIND))
		JP_HB_AFTER(m);
	if (ok && (mode & JP_SYNC_OWNERS))
		jp__lockdep_acquired(m, JP__LD_MUTEX, pc);
	if (mode & JP_SYNC_TSAN)
		__tsan_mutex_post_lock(m, JP_TSAN_TRY_LOCK | (ok ? 0 : JP_TSAN_TRY_LOCK_FAILED), 0);
	return ok ? 0 : EBUSY;
}

JP_EXPORT int jp_mutex_trylock(jp_mutex_t *m)
{
	if (!plain_mode())
		return trylock_checked(m, __builtin_return_address(0));
	return try_acquire(jp__mutex_word(m)) ? 0 : EBUSY;
}

JP_EXPORT int jp_mutex_timedlock(jp_mutex_t *m, const struct timespec *deadline)
{
	if (jp__deadline_check(deadline) != 0)
		return EINVAL;
	if (!plain_mode())
		return lock_checked(m, __builtin_return_address(0), deadline, JP_TSAN_TRY_LOCK);
	if (try_acquire(jp__mutex_word(m)))
		return 0;
	return lock_slow(jp__mutex_word(m), deadline);
}

void jp__mutex_lock_at(jp_mutex_t *m, void *pc)
{
	LOCK_AT(m, pc);
}

void jp__mutex_unlock_at(jp_mutex_t *m, void *pc)
{
	UNLOCK_AT(m, pc);
}

/*
 * The lock-word protocol alone, without lockdep, valgrind or TSan, for a
 * lock built on it that annotates itself (rwlock.c: the writers' word).
 */
int jp__mutex_word_lock(_Atomic uint32_t *w, const struct timespec *deadline)
{
	return try_acquire(w) ? 0 : lock_slow(w, deadline);
}

bool jp__mutex_word_trylock(_Atomic uint32_t *w)
{
	return try_acquire(w);
}

void jp__mutex_word_unlock(_Atomic uint32_t *w)
{
	unlock_raw(w, "jp_rwlock_unlock", w);
}
