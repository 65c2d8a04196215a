/*
 * sem.c - jp_sem: a counting semaphore on one futex word.
 *
 * The count is the futex word: a waiter sleeps while it reads 0, so the
 * kernel's compare under its lock is the re-check of park.h's pairing.
 * Waiters count themselves in "waiters" before they look at the count for
 * the last time; a post adds to the count (a seq_cst read-modify-write)
 * and then reads waiters, and makes a system call only when somebody is
 * registered.  A post wakes one sleeper, which takes the count itself; if
 * a newcomer took it first, the sleeper finds 0 and sleeps again (no
 * hand-off, so the count never sits reserved for a thread that is not
 * running).
 *
 * Overflow: the count never exceeds JP_SEM_VALUE_MAX; a post that finds
 * it there returns EOVERFLOW and changes nothing.
 *
 * Race detectors: under valgrind, and in a process that runs
 * ThreadSanitizer (the library need not be instrumented), a post publishes
 * on the semaphore's address and a successful wait receives from it:
 * helgrind and drd do not see atomics as synchronisation, and TSan does
 * not see an uninstrumented library's.
 */
#include "sync.h"
#include "base/park.h"

#include <jpsync/sem.h>

#include <errno.h>

#define SEM_SPIN 100

_Static_assert(sizeof(jp_sem_t) == 16, "jp_sem_t is 16 bytes (ABI)");

static inline _Atomic uint32_t *value_of(const jp_sem_t *s)
{
	return (_Atomic uint32_t *)(void *)&((jp_sem_t *)s)->value;
}

static inline _Atomic uint32_t *waiters_of(jp_sem_t *s)
{
	return (_Atomic uint32_t *)(void *)&s->waiters;
}

/* Under helgrind, drd or ThreadSanitizer (sync.h's mode). */
static inline bool race_tools(void)
{
	/* relaxed: see jp__sync_mode_get; PLAIN is the only fast answer. */
	return jp_unlikely(atomic_load_explicit(&jp__sync_mode, memory_order_relaxed) != JP_SYNC_PLAIN) &&
	       (jp__sync_mode_get() & JP_SYNC_RACE_TOOLS);
}

static inline void vg_words(jp_sem_t *s)
{
	JP_BENIGN_RACE(&s->value, 2 * sizeof s->value, "jp_sem words, accessed atomically");
}

/* Take one if the count is not zero. */
static inline bool take(_Atomic uint32_t *v)
{
	/* relaxed: the compare-exchange decides. */
	uint32_t c = atomic_load_explicit(v, memory_order_relaxed);

	while (c != 0) {
		/* acquire: the post that made the count happens before us. */
		if (atomic_compare_exchange_weak_explicit(v, &c, c - 1, memory_order_acquire,
							  memory_order_relaxed))
			return true;
	}
	return false;
}

static JP_NOINLINE int wait_slow(jp_sem_t *s, const struct timespec *deadline)
{
	_Atomic uint32_t *v = value_of(s);
	unsigned spin = jp__park_may_spin() ? SEM_SPIN : 0;
	int r = 0;

	if (deadline != NULL && jp__deadline_passed(deadline))
		return ETIMEDOUT;	/* the caller's take was the one attempt */
	for (unsigned i = 0; i < spin; i++) {
		jp_cpu_relax();
		/* relaxed: a hint; take decides. */
		if (atomic_load_explicit(v, memory_order_relaxed) != 0 && take(v))
			return 0;
	}
	jp__park_register(waiters_of(s));
	while (!take(v)) {
		/* The count is the word: sleep while it is 0 (park.h). */
		if (jp__park_wait(v, 0, deadline) == ETIMEDOUT) {
			r = take(v) ? 0 : ETIMEDOUT;
			break;
		}
	}
	jp__park_leave(waiters_of(s));
	return r;
}

static inline int sem_wait(jp_sem_t *s, const struct timespec *deadline)
{
	bool vg = race_tools();
	int r = 0;

	if (vg)
		vg_words(s);
	if (!take(value_of(s)))
		r = wait_slow(s, deadline);
	if (r == 0 && vg)
		jp__hb_after(s);
	return r;
}

JP_EXPORT int jp_sem_init(jp_sem_t *s, unsigned value)
{
	if (value > JP_SEM_VALUE_MAX)
		return EINVAL;
	/* relaxed: initialisation precedes sharing the semaphore. */
	atomic_store_explicit(value_of(s), value, memory_order_relaxed);
	atomic_store_explicit(waiters_of(s), 0, memory_order_relaxed);
	s->reserved[0] = s->reserved[1] = 0;
	return 0;
}

JP_EXPORT void jp_sem_destroy(jp_sem_t *s)
{
	(void)s;	/* nothing to release */
}

JP_EXPORT int jp_sem_post(jp_sem_t *s)
{
	_Atomic uint32_t *v = value_of(s);
	/* relaxed: the compare-exchange decides. */
	uint32_t c = atomic_load_explicit(v, memory_order_relaxed);

	if (race_tools()) {
		vg_words(s);
		jp__hb_before(s);
	}
	do {
		if (c >= JP_SEM_VALUE_MAX)
			return EOVERFLOW;
		/* seq_cst: the waker's half of park.h's pairing (then the
		 * load of waiters), and the release of what we did before. */
	} while (!atomic_compare_exchange_weak(v, &c, c + 1));
	if (atomic_load(waiters_of(s)) != 0)
		jp__park_wake(v, 1);
	return 0;
}

JP_EXPORT void jp_sem_wait(jp_sem_t *s)
{
	sem_wait(s, NULL);
}

JP_EXPORT int jp_sem_trywait(jp_sem_t *s)
{
	bool vg = race_tools();

	if (vg)
		vg_words(s);
	if (!take(value_of(s)))
		return EAGAIN;
	if (vg)
		jp__hb_after(s);
	return 0;
}

JP_EXPORT int jp_sem_timedwait(jp_sem_t *s, const struct timespec *deadline)
{
	if (jp__deadline_check(deadline) != 0)
		return EINVAL;
	return sem_wait(s, deadline);
}

JP_EXPORT unsigned jp_sem_value(const jp_sem_t *s)
{
	/* relaxed: a snapshot; it orders nothing. */
	return atomic_load_explicit(value_of(s), memory_order_relaxed);
}
