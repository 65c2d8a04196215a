/*
 * cond.c - jp_cond: a sequence-counter futex condition variable.
 *
 * The word counts signals.  A waiter reads it while holding the mutex,
 * releases the mutex and sleeps in FUTEX_WAIT until the word differs from
 * what it read.  Signal and broadcast add one to the word and wake one or
 * every sleeper.  No wakeup is lost: a signal that lands after the waiter
 * read the word but before it went to sleep changes the word, and the
 * kernel then refuses to put the waiter to sleep (it compares the word
 * under its own lock).  A signal made before the waiter read the word is
 * not meant for it: the predicate the waiter checked under the mutex
 * already reflects whatever the signaller changed under that mutex.
 *
 * Wake-ups may be spurious (a signal that raced with a new waiter, a
 * broadcast, a signal aimed at another waiter, the counter wrapping after
 * 2^32 signals); callers loop on their predicate, as with pthread_cond_wait.
 *
 * Waiters count themselves in the proxy state of the condition variable's
 * address (wait.c's table: the struct has no room of its own), under the
 * mutex and before they read the counter; signal and broadcast advance the
 * counter, then look at the count and make no system call when it is 0:
 * the parking protocol of park.h, with the counter as the word.
 * A signaller that changed the predicate under the mutex took the mutex
 * after any waiter that saw the old predicate had counted itself, so it
 * sees the count.  States shared with other objects only over-count.
 *
 * A wait with a mutex that is not locked is misuse, reported and aborted
 * at once (a load of the word, before anything else); under JPSYNC_CHECK=1
 * or JPSYNC_LOCKDEP=1 a mutex locked by another thread is too (the held
 * stacks of lockdep.c): otherwise the wait would release the other
 * thread's lock.
 *
 * Nothing is requeued: woken waiters take the mutex with jp_mutex_lock, so
 * the mutex word is marked as having sleepers when they contend, and
 * unlock keeps waking them.
 */
#include "sync.h"
#include "base/os.h"
#include "base/park.h"

#include <errno.h>
#include <limits.h>

static int cond_wait(jp_cond_t *c, jp_mutex_t *m, const struct timespec *deadline, void *pc,
		     const char *call)
{
	_Atomic uint32_t *w = jp__cond_word(c);
	_Atomic uint32_t *waiters;
	int mode = jp__sync_mode_get();
	uint32_t seq;
	int r;

	/* relaxed: the caller's own lock, if it holds it, is all we ask about. */
	if (!jp__mutex_word_locked(jp__mutex_word(m)))
		jp__sync_misuse(call, c, m, "the mutex is not locked");
	if ((mode & JP_SYNC_OWNERS) && !jp__lockdep_holds(m))
		jp__sync_misuse(call, c, m, "the mutex is not held by this thread");
	if (jp__deadline_check(deadline) != 0)
		return EINVAL;
	if (jp__deadline_passed(deadline))
		return ETIMEDOUT;	/* at once, the mutex still held */
	waiters = jp__wait_cond_waiters(c);
	jp__park_register(waiters);
	if (mode & JP_SYNC_VALGRIND)
		JP_BENIGN_RACE(&c->seq, sizeof c->seq, "jp_cond futex word");
	/*
	 * relaxed: the mutex orders this read against every signaller that
	 * changed the predicate under the mutex, and the kernel compares the
	 * word again under its own lock before sleeping.
	 */
	seq = atomic_load_explicit(w, memory_order_relaxed);
	jp__mutex_unlock_at(m, pc);
	r = jp__park_wait(w, seq, deadline);
	jp__park_leave(waiters);
	jp__mutex_lock_at(m, pc);
	if (mode & JP_SYNC_RACE_TOOLS)
		jp__hb_after(c);
	return r;
}

static void cond_wake(jp_cond_t *c, int n)
{
	_Atomic uint32_t *w = jp__cond_word(c);

	if (jp__sync_mode_get() & JP_SYNC_RACE_TOOLS) {
		JP_BENIGN_RACE(&c->seq, sizeof c->seq, "jp_cond futex word");
		jp__hb_before(c);
	}
	/*
	 * seq_cst, both: the counter moves before the waiter count is read,
	 * the pairing of the waiter's count-then-read (see the top).
	 */
	atomic_fetch_add(w, 1);
	if (atomic_load(jp__wait_cond_waiters(c)) != 0) {
		jp__wait_count_wake();
		jp__park_wake(w, n);
	}
}

JP_EXPORT void jp_cond_init(jp_cond_t *c)
{
	/* relaxed: initialisation precedes sharing the condition variable. */
	atomic_store_explicit(jp__cond_word(c), 0, memory_order_relaxed);
}

JP_EXPORT void jp_cond_destroy(jp_cond_t *c)
{
	(void)c;	/* nothing to release: the word is all there is */
}

JP_EXPORT int jp_cond_wait(jp_cond_t *c, jp_mutex_t *m)
{
	return cond_wait(c, m, NULL, __builtin_return_address(0), "jp_cond_wait");
}

JP_EXPORT int jp_cond_timedwait(jp_cond_t *c, jp_mutex_t *m, const struct timespec *deadline)
{
	return cond_wait(c, m, deadline, __builtin_return_address(0), "jp_cond_timedwait");
}

JP_EXPORT void jp_cond_signal(jp_cond_t *c)
{
	cond_wake(c, 1);
}

JP_EXPORT void jp_cond_broadcast(jp_cond_t *c)
{
	cond_wake(c, INT_MAX);
}
