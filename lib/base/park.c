/*
 * park.c - the parking protocol of park.h: the deadline test, the decision
 * whether waiters spin, the futex wait that a signal does not end (and the
 * count of sleeps), channels.
 */
#include "park.h"
#include "os.h"

#include <limits.h>

bool jp__deadline_passed(const struct timespec *deadline)
{
	struct timespec now;

	if (deadline == NULL)
		return false;
	if (deadline->tv_sec < 0)
		return true;	/* before the clock's epoch: always past */
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > deadline->tv_sec ||
	       (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec);
}

bool jp__park_may_spin(void)
{
	/* 0: not decided yet; 1: no; 2: yes.  relaxed: one value, the same
	 * whoever computes it. */
	static _Atomic int may_spin;
	int v = atomic_load_explicit(&may_spin, memory_order_relaxed);

	if (jp_unlikely(v == 0)) {
		v = jp__os_cpu_count() > 1 && !JP_ON_VALGRIND() ? 2 : 1;
		if (JP_ON_VALGRIND())
			JP_BENIGN_RACE(&may_spin, sizeof may_spin, "jpsync spin decision");
		atomic_store_explicit(&may_spin, v, memory_order_relaxed);
	}
	return v == 2;
}

/*
 * Asymmetric fences.  The queues and jp_mutex keep a compiler barrier on
 * their fast side (a store followed by a load: publishing an element,
 * releasing the lock) and run membarrier(2) on their slow side (a caller
 * about to sleep, close), which orders the fast side's store and load
 * against it (the sys_membarrier technique of userspace-rcu).
 */
bool jp__park_asym;

bool jp__park_asym_setup(void)
{
	/*
	 * Under valgrind the threads run one at a time and the tools do not
	 * know membarrier; ThreadSanitizer does not model it.  Use fences.
	 * Registering again is harmless, so two threads may both come here.
	 */
#ifndef JP_TSAN
	if (!jp__park_asym && !JP_ON_VALGRIND() && jp__os_membarrier_init() == 0)
		jp__park_asym = true;
#endif
	return jp__park_asym;
}

/* At load time, before any thread exists (a library dlopen()ed by a
 * threaded program: before dlopen returns, so before any call into it). */
__attribute__((constructor)) static void asym_ctor(void)
{
	jp__park_asym_setup();
}

_Atomic unsigned long jp__park_sleeps;

int jp__park_wait(const _Atomic uint32_t *word, uint32_t seen,
		  const struct timespec *deadline)
{
	int r;

	/* The kernel refuses a negative tv_sec (EINVAL); it is simply past. */
	if (deadline != NULL && deadline->tv_sec < 0)
		return ETIMEDOUT;
	/*
	 * An interrupted wait is issued again with the same absolute
	 * deadline: if the word moved meanwhile the kernel says so (EAGAIN)
	 * and we return 0, so no wake-up is lost and none is invented.
	 */
	/* relaxed: a count for tests, ordered with nothing. */
	atomic_fetch_add_explicit(&jp__park_sleeps, 1, memory_order_relaxed);
	do
		r = jp__futex_wait(word, seen, deadline);
	while (r == EINTR);
	return r == ETIMEDOUT ? ETIMEDOUT : 0;
}

int jp__park_wake(const _Atomic uint32_t *word, int n)
{
	return jp__futex_wake(word, n);
}

void jp__park_chan_init(struct jp__park_chan *c)
{
	atomic_init(&c->seq, 0);
	atomic_init(&c->waiters, 0);
	JP_BENIGN_RACE(&c->seq, sizeof c->seq, "futex word, accessed atomically");
	JP_BENIGN_RACE(&c->waiters, sizeof c->waiters, "waiter count, accessed atomically");
}

void jp__park_chan_bump(struct jp__park_chan *c)
{
	/* seq_cst: after the waker's change of the state (park.h). */
	atomic_fetch_add(&c->seq, 1);
	jp__futex_wake(&c->seq, INT_MAX);
}
