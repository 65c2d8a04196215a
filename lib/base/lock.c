/*
 * lock.c - the allocator's internal lock: its slow paths and the helpers
 * fork handling needs (the protocol is described in lock.h).
 *
 * Critical sections are short (a list push or pop, a batch of blocks), so
 * a waiter spins a little before it sleeps.
 */
#include "lock.h"
#include "os.h"

uint8_t jp__lock_annotate;

void jp__lock_setup(void)
{
#ifdef JP_TSAN
	/* A library built with -fsanitize=thread: TSan sees the atomics. */
	jp__lock_annotate = JP_ON_VALGRIND();
#else
	/* TSan does not see an uninstrumented library's atomics either. */
	jp__lock_annotate = JP_ON_VALGRIND() || jp__tsan_on();
#endif
}

__attribute__((constructor)) static void lock_ctor(void)
{
	jp__lock_setup();
}

void jp__lock_slow(struct jp__lock *l, uintptr_t me)
{
	uintptr_t z;

	for (int i = 0; i < 100; i++) {
		z = 0;
		/* acquire: pairs with the store in jp__unlock. */
		if (atomic_load_explicit(&l->owner, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_weak_explicit(&l->owner, &z, me,
				memory_order_acquire, memory_order_relaxed))
			return;
		jp_cpu_relax();
	}
	for (;;) {
		uint32_t seq;

		/* seq_cst: announce ourselves before the last look at the
		 * owner, so that a releaser either sees us and wakes one of
		 * us, or released before our look and we take the lock. */
		atomic_fetch_add(&l->waiters, 1);
		seq = atomic_load(&l->seq);
		/* A wake is pending (seq odd): we may be the waiter it woke,
		 * and we are about to look at the owner, so the next release
		 * may wake another.  Cleared before that look, so that the
		 * release of a holder that beats us to the lock sees it
		 * clear. */
		while ((seq & 1) != 0 &&
		       !atomic_compare_exchange_weak(&l->seq, &seq, seq + 1))
			;
		if ((seq & 1) != 0)
			seq++;
		z = 0;
		if (atomic_compare_exchange_strong(&l->owner, &z, me)) {
			atomic_fetch_sub(&l->waiters, 1);
			return;
		}
		jp__futex_wait(&l->seq, seq, NULL);
		atomic_fetch_sub(&l->waiters, 1);
	}
}

/*
 * One wake at a time: seq odd means a wake was sent and no waiter has come
 * back to look at the owner since.  A release then leaves the sleepers be:
 * that waiter will look after this release's store.  Before, every
 * release made a futex call until the woken thread ran: with 4 threads on
 * 2 cores, 80 calls per sleep (xmalloc-test: 135,000 FUTEX_WAKE a second
 * for 1,700 waits).
 */
void jp__unlock_wake(struct jp__lock *l)
{
	uint32_t seq = atomic_load(&l->seq);

	while ((seq & 1) == 0)
		if (atomic_compare_exchange_weak(&l->seq, &seq, seq + 1)) {
			jp__futex_wake(&l->seq, 1);
			return;
		}
}

void jp__lock_init(struct jp__lock *l)
{
	/* The lock words are atomics, which helgrind and drd do not see;
	 * the happens-before annotations order what the lock protects. */
	JP_BENIGN_RACE(l, sizeof *l, "lock word");
}

bool jp__lock_mine(const struct jp__lock *l)
{
	/* relaxed: only our own earlier store can make it equal to us. */
	return atomic_load_explicit(&l->owner, memory_order_relaxed) ==
	       (uintptr_t)pthread_self();
}

bool jp__lock_for_fork(struct jp__lock *l)
{
	if (jp__lock_mine(l))
		return false;
	jp__lock(l);
	return true;
}

void jp__lock_reset(struct jp__lock *l)
{
	/* relaxed: the child has one thread. */
	atomic_store_explicit(&l->owner, 0, memory_order_relaxed);
	atomic_store_explicit(&l->waiters, 0, memory_order_relaxed);
	atomic_store_explicit(&l->seq, 0, memory_order_relaxed);
}
