/*
 * mutex.c - jp_mutex: a futex mutex whose uncontended unlock is a store.
 *
 * The word holds two flags, each in a byte of its own: LOCKED and
 * SLEEPERS (a thread may be asleep in FUTEX_WAIT on the word).  So the
 * word is 0 (free), LOCKED (locked, nobody asleep), LOCKED|SLEEPERS, or,
 * for a moment during an unlock, SLEEPERS (free, a sleeper to wake).  Lock
 * is one compare-exchange 0 -> LOCKED when free.  Otherwise the locker
 * spins a bounded number of times while nobody is asleep (the owner is
 * probably running and about to release), then exchanges in
 * LOCKED|SLEEPERS and sleeps until the exchange finds LOCKED clear.  An
 * unlock that finds SLEEPERS clears the word and wakes one sleeper, which
 * marks it again when it takes the lock (others may still sleep), as a
 * three-state futex mutex does.
 *
 * The unlock.  With nobody asleep (the word is LOCKED alone) the unlock
 * stores 0 in the LOCKED byte and then loads the SLEEPERS byte, with no
 * fence between: the CPU may let that load pass the store, as a
 * spinlock's unlock would.  The lost wake-up that could follow (a locker
 * marks SLEEPERS after the load, and sleeps before the store is seen) is
 * closed from the sleeper's side (lock_slow): the first sleep after
 * marking a word that was LOCKED alone is a nap of at most 1 ms, after
 * which the locker finds the lock free and takes it, and it runs
 * membarrier(2), a full barrier on every running thread, before it sleeps
 * again without a bound; after the barrier, either the store is visible
 * (FUTEX_WAIT returns at once) or the unlocker had not stored yet, and its
 * load sees SLEEPERS.  A locker that finds SLEEPERS set sleeps without a
 * bound: the one who set it naps or fenced.  So an uncontended pair is one
 * compare-exchange and one store, as a test-and-set spinlock's (7.2 ns
 * against 6.6 in a loop on 2026-12-06; 12.2 with a locked exchange as the
 * unlock), and the barrier, which costs 1-50 us and interrupts the other
 * running threads of the process, is paid only by a thread that sleeps
 * more than the nap behind one owner (a barrier at every first sleep cost
 * 5-19% of sync-bench's mixed throughput at 2-16 threads on 2 cores).
 * Where membarrier is missing (old kernels, seccomp, a ThreadSanitizer
 * build: the sync mode's NO_ASYM) and on the checked paths, every unlock
 * is an atomic exchange, and no barrier is needed; under valgrind, which
 * runs one thread at a time in program order, the store needs none.
 * tests/sync/model-mutex.py explores this protocol in every interleaving
 * of 3 and 4 threads under x86-TSO, and fails without the nap, the
 * barrier or the timed lock's hand-over (give_up_unfenced): keep it in
 * step.
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
 * that finds SLEEPERS set does not spin but sleeps, and a woken thread
 * spins before it sleeps again, so the woken one usually wins (the spread
 * of acquisitions per thread is reported by tests/bench/sync-bench).
 *
 * Misuse that a valid program never makes aborts, through jp__sync_misuse
 * (one line naming the call and the mutex), where the check costs the fast
 * path nothing: unlock of a mutex that is not locked (the unlock's load
 * of the word, compared with LOCKED, sends every other value to the slow
 * path, which tells sleepers to wake from misuse), destroy of a locked one
 * (a load in destroy).  An unlock by a thread that does not
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

/* The word's flags, and the bytes that hold them (a byte store to LOCKED
 * leaves SLEEPERS as it is). */
#define LOCKED		0x001u
#define SLEEPERS	0x100u
#define BOTH		(LOCKED | SLEEPERS)

/* The byte of the word that holds bits 8 * byte to 8 * byte + 7 of its
 * value, accessed with the __atomic builtins: a character type may alias
 * the word, an _Atomic uint8_t may not. */
static inline unsigned char *flag_byte(_Atomic uint32_t *w, unsigned byte)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return (unsigned char *)(void *)w + byte;
#else
	return (unsigned char *)(void *)w + 3 - byte;
#endif
}

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

/* Take a free mutex whose word was seen as v, leaving want (LOCKED, or
 * BOTH for a thread that may have others asleep behind it) in the word;
 * SLEEPERS, if set, stays set. */
static inline bool try_take(_Atomic uint32_t *w, uint32_t v, uint32_t want)
{
	/* acquire: the critical section must not start before we own it. */
	return atomic_compare_exchange_strong_explicit(w, &v, want | (v & SLEEPERS),
						       memory_order_acquire, memory_order_relaxed);
}

static inline bool try_acquire(_Atomic uint32_t *w)
{
	return try_take(w, 0, LOCKED);
}

/* trylock: also takes a mutex that is free with a sleeper still to be woken
 * (its unlocker is between its store and its wake), which try_acquire,
 * the lock's first attempt, leaves to the slow path. */
static inline bool try_lock(_Atomic uint32_t *w)
{
	uint32_t v = 0;

	if (atomic_compare_exchange_strong_explicit(w, &v, LOCKED, memory_order_acquire,
						    memory_order_relaxed))
		return true;
	return !(v & LOCKED) && try_take(w, v, LOCKED);
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
		if (!(v & LOCKED)) {
			if (try_take(w, v, want)) {
				won = true;
				break;
			}
		} else if ((v & SLEEPERS) && want == LOCKED) {
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
 * Sleeping after marking a word that was LOCKED alone (its owner may
 * unlock with the store, and may be between its store and its load of
 * SLEEPERS).  The first sleep after such a mark is bounded (MARK_NAP_NS):
 * if the unlock missed the mark, the sleeper wakes by itself, finds the
 * mutex free and takes it.  Only a thread that must sleep again while the
 * mark is still unfenced runs membarrier(2) first (fence), which makes
 * that unlocker see the mark or makes its unlock visible: so a barrier is
 * paid only when the mutex is held longer than the nap, and not at every
 * contention episode.  A locker that finds SLEEPERS already set sleeps
 * without a bound: the thread that set it without a barrier naps, then
 * takes the mutex or fences.  When the barrier fails (it does not, once
 * registered), every sleep stays bounded.
 */
#define MARK_NAP_NS 1000000

/* Whether a mark of a word that was LOCKED alone needs a barrier: the
 * store unlock may run (under valgrind it needs none: the sync mode's
 * comment). */
static bool fence_needed(void)
{
	return !(jp__sync_mode_get() & JP_SYNC_NO_ASYM) && !JP_ON_VALGRIND();
}

static bool fence(void)
{
	return jp__os_membarrier() == 0;
}

/* Sleep while the word is BOTH: until deadline, or, when nap, at most
 * MARK_NAP_NS.  0, or ETIMEDOUT at the deadline. */
static int sleep_on(_Atomic uint32_t *w, const struct timespec *deadline, bool nap)
{
	struct timespec soon;

	if (!nap)
		return jp__park_wait(w, BOTH, deadline);
	clock_gettime(CLOCK_MONOTONIC, &soon);
	soon.tv_nsec += MARK_NAP_NS;
	if (soon.tv_nsec >= 1000000000) {
		soon.tv_sec++;
		soon.tv_nsec -= 1000000000;
	}
	if (deadline != NULL && (deadline->tv_sec < soon.tv_sec ||
	    (deadline->tv_sec == soon.tv_sec && deadline->tv_nsec < soon.tv_nsec)))
		return jp__park_wait(w, BOTH, deadline);
	jp__park_wait(w, BOTH, &soon);
	return 0;
}

/*
 * A timed lock gives up with its mark unfenced: the unlock it slept
 * behind may have missed the mark, and the threads that slept behind it
 * (they found SLEEPERS set) rely on it.  It hands that duty to one of
 * them, as an unlock would: SLEEPERS cleared, one sleeper woken, which
 * marks the word again (and naps, if it finds the word LOCKED alone) or
 * finds it free and takes it.  No barrier is needed, so a failing
 * membarrier cannot lose the hand-over.
 */
static void give_up_unfenced(_Atomic uint32_t *w)
{
	/* relaxed: the flag hands over nothing but itself. */
	if (atomic_fetch_and_explicit(w, ~SLEEPERS, memory_order_relaxed) & SLEEPERS)
		jp__park_wake(w, 1);
}

/*
 * Spin (above), then sleep.  Returns 0 once the lock is ours, ETIMEDOUT
 * when the deadline passed first.
 */
static JP_NOINLINE int lock_slow(_Atomic uint32_t *w, const struct timespec *deadline)
{
	bool unfenced = false, napped = false;
	uint32_t v;
	int r;

	/* A deadline already past: one attempt, which takes a free word even
	 * with SLEEPERS set (try_acquire, the caller's, wants it 0). */
	if (deadline != NULL && jp__deadline_passed(deadline))
		return try_lock(w) ? 0 : ETIMEDOUT;
	if (spin(w, LOCKED))
		return 0;
	/* acquire: as try_acquire (the exchange may be what takes the lock). */
	v = atomic_exchange_explicit(w, BOTH, memory_order_acquire);
	while (v & LOCKED) {
		if (v == LOCKED && fence_needed()) {
			unfenced = true;	/* a new mark, on a word LOCKED alone */
			napped = false;
		}
		if (unfenced && napped && fence())
			unfenced = false;
		r = sleep_on(w, deadline, unfenced);
		napped = unfenced;
		if (r == ETIMEDOUT) {
			if (unfenced)
				give_up_unfenced(w);
			return ETIMEDOUT;
		}
		/*
		 * Woken (or the word moved, or the nap ended): spin before
		 * sleeping again, so that a newcomer does not keep stealing
		 * the lock from the thread the unlock chose to wake.  BOTH,
		 * not LOCKED, in both takes: others may still be asleep
		 * behind us.
		 */
		if (spin(w, BOTH))
			return 0;
		v = atomic_exchange_explicit(w, BOTH, memory_order_acquire);
	}
	return 0;
}

/*
 * LOCKED was cleared (by unlock_store) with SLEEPERS set: clear SLEEPERS
 * and wake one sleeper, which marks the word again when it takes the lock
 * (others may still sleep), as a three-state futex mutex does.  Nobody is
 * woken when an unlock cleared the flag first: it woke one itself.
 */
static JP_NOINLINE void wake_sleeper(_Atomic uint32_t *w)
{
	/* relaxed: the flag hands over nothing but itself. */
	if (atomic_fetch_and_explicit(w, ~SLEEPERS, memory_order_relaxed) & SLEEPERS)
		jp__park_wake(w, 1);
}

/* The word, seen as old when LOCKED was cleared, was not LOCKED alone:
 * wake a sleeper, or report the misuse. */
static void unlocked_from(_Atomic uint32_t *w, uint32_t old, const char *call,
			  const void *obj)
{
	if (jp_likely(old == BOTH))
		jp__park_wake(w, 1);
	else if (old == 0 || old == SLEEPERS)
		jp__sync_misuse(call, obj, NULL, "not locked");
	else
		jp__sync_misuse(call, obj, NULL, "not a mutex (corrupted or never initialised)");
}

/*
 * The unlock of the checked paths, of a process without membarrier, and
 * of a word with sleepers: LOCKED cleared by an atomic read-modify-write,
 * which a sleeper needs no barrier against.  call and obj name the misuse
 * in a report; the old value is compared with LOCKED, so that telling "not
 * locked" from "sleepers to wake" costs the uncontended case nothing.
 */
static inline void unlock_rmw(_Atomic uint32_t *w, const char *call, const void *obj)
{
	/* release: the critical section happens before the next owner's. */
	uint32_t old = atomic_exchange_explicit(w, 0, memory_order_release);

	if (jp_unlikely(old != LOCKED))
		unlocked_from(w, old, call, obj);
}

static JP_NOINLINE void unlock_rmw_slow(_Atomic uint32_t *w, const char *call, const void *obj)
{
	unlock_rmw(w, call, obj);
}

/*
 * The unlock of the plain mode: with the word LOCKED alone, a store, and a
 * load of SLEEPERS (the comment at the top); otherwise unlock_rmw.
 */
static inline void unlock_store(_Atomic uint32_t *w, const char *call, const void *obj)
{
	/* relaxed: only the owner clears LOCKED, and a SLEEPERS set after
	 * this load is seen by the load below (the comment at the top). */
	uint32_t v = atomic_load_explicit(w, memory_order_relaxed);

	if (jp_unlikely(v != LOCKED)) {
		unlock_rmw_slow(w, call, obj);
		return;
	}
	/* release: the critical section happens before the next owner's. */
	__atomic_store_n(flag_byte(w, 0), 0, __ATOMIC_RELEASE);
	/* Compiler only: a sleeper's membarrier orders the load (above). */
	atomic_signal_fence(memory_order_seq_cst);
	/* relaxed: see the comment at the top. */
	if (jp_unlikely(__atomic_load_n(flag_byte(w, 1), __ATOMIC_RELAXED) != 0))
		wake_sleeper(w);
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
	unlock_rmw(jp__mutex_word(m), "jp_mutex_unlock", m);
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
			unlock_store(jp__mutex_word(m), "jp_mutex_unlock", m); \
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
	if (jp__mutex_word_locked(jp__mutex_word(m)))
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
	ok = try_lock(jp__mutex_word(m));
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
	return try_lock(jp__mutex_word(m)) ? 0 : EBUSY;
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

bool jp__mutex_word_locked(_Atomic uint32_t *w)
{
	/* relaxed: a valid caller made every unlock happen before. */
	return (atomic_load_explicit(w, memory_order_relaxed) & LOCKED) != 0;
}

bool jp__mutex_word_trylock(_Atomic uint32_t *w)
{
	return try_lock(w);
}

void jp__mutex_word_unlock(_Atomic uint32_t *w)
{
	if (plain_mode())
		unlock_store(w, "jp_rwlock_unlock", w);
	else
		unlock_rmw(w, "jp_rwlock_unlock", w);
}
