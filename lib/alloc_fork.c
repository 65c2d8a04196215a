/*
 * alloc_fork.c - fork() in a threaded program leaves a working allocator
 * in the child: the prepare handler takes every allocator lock, in the
 * lock order (lock.h), so that the child's copy of every list is
 * consistent; the parent's handler releases them, the child's resets them.
 *
 * A lock this very thread holds (fork from a signal handler that
 * interrupted the allocator) is left alone: waiting for it would deadlock,
 * and the interrupted code finishes its work after the handler returns.
 */
#include "alloc_internal.h"

#include <pthread.h>
#include <string.h>

#define NCLASS_LOCKS	(JP_NSHARDS * JP_NCLASSES)
#define NLOCKS		(NCLASS_LOCKS + 3)

/* Every lock, in the order they are taken. */
static struct jp__lock *lock_at(unsigned i)
{
	if (i < NCLASS_LOCKS)
		return &jp__central[i / JP_NCLASSES][i % JP_NCLASSES].lock;
	switch (i - NCLASS_LOCKS) {
	case 0:
		return &jp__seg_lock;
	case 1:
		return &jp__huge_lock;
	default:
		return &jp__heap_lock;
	}
}

/* The locks prepare took (not those this thread already held). */
static uint64_t taken[(NLOCKS + 63) / 64];

/*
 * fork and stdio.  glibc's fork runs the prepare handlers before it takes
 * the stdio list lock.  So: thread A forks and holds the allocator's locks;
 * thread B, inside fflush(NULL), holds the list lock and waits for the
 * lock of a FILE that thread C holds in getline; C's getline calls the
 * allocator (a read function of fopencookie, or malloc through the preload
 * module) and waits for A; A waits for the list lock.  jemalloc 5.3 and
 * tcmalloc 2.10 hang there.  glibc's malloc takes its locks after the list
 * lock, the order restored here: prepare takes the list lock first (glibc
 * exports _IO_list_lock, a recursive lock, for this: a fork from a signal
 * handler that interrupted fflush(NULL) in this thread takes it again),
 * the parent handler drops it and the child's resets it, as glibc's fork
 * does for its own.  Weak: on a C library without them, nothing to order.
 */
extern void _IO_list_lock(void) __attribute__((weak));
extern void _IO_list_unlock(void) __attribute__((weak));
extern void _IO_list_resetlock(void) __attribute__((weak));
extern char __libc_single_threaded __attribute__((weak));

/*
 * Whether prepare took the list lock.  Like glibc's fork, not in a process
 * that has only ever had one thread: nobody can race it there.  Once set
 * it stays set (a process does not become single-threaded again), and
 * concurrent forks of a threaded process are serialised by the list lock;
 * atomic only so that two preparing threads may both write 1.
 */
static _Atomic int stdio_locked;

static bool have_io_list_lock(void)
{
	return &_IO_list_lock != NULL && &_IO_list_unlock != NULL &&
	       &_IO_list_resetlock != NULL;
}

static void atfork_prepare(void)
{
	int threaded = &__libc_single_threaded == NULL || !__libc_single_threaded;

	threaded = threaded && have_io_list_lock();
	/* relaxed: read back by this thread (parent) or its only copy (child). */
	atomic_store_explicit(&stdio_locked, threaded, memory_order_relaxed);
	if (threaded)
		_IO_list_lock();
	memset(taken, 0, sizeof taken);
	for (unsigned i = 0; i < NLOCKS; i++)
		if (jp__lock_for_fork(lock_at(i)))
			taken[i / 64] |= 1ULL << (i % 64);
}

static void atfork_parent(void)
{
	for (unsigned i = NLOCKS; i-- > 0;)
		if (taken[i / 64] & (1ULL << (i % 64)))
			jp__unlock(lock_at(i));
	if (atomic_load_explicit(&stdio_locked, memory_order_relaxed))
		_IO_list_unlock();
}

static void atfork_child(void)
{
	/*
	 * Only this thread exists now: every lock is free again, also one
	 * that the code this thread interrupted (fork from a signal handler)
	 * holds, so that the child can allocate, as with the C library's
	 * malloc; the interrupted code's unlock, if the handler returns,
	 * finds it free.
	 */
	for (unsigned i = 0; i < NLOCKS; i++)
		jp__lock_reset(lock_at(i));
	if (atomic_load_explicit(&stdio_locked, memory_order_relaxed))
		_IO_list_resetlock();
}

void jp__fork_init(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}
