/*
 * alloc_fork.c - fork() in a threaded program leaves a working allocator
 * in the child: the prepare handler takes every allocator lock, in the
 * lock order (lock.h), so that the child's copy of every list is
 * consistent; the parent's handler releases them, the child's resets them.
 *
 * A lock this very thread holds (fork from a signal handler that
 * interrupted the allocator) is left alone: waiting for it would deadlock,
 * and the interrupted code finishes its work after the handler returns.
 *
 * Forks nest: a signal handler that runs while this thread is inside a
 * fork (its prepare handler holding some or all of the locks, or its parent
 * handler releasing them) may fork again.  So each lock records the depth
 * of the fork that took it (taken_at), and a parent handler releases the
 * locks of its own depth only: the nested fork takes none that the outer
 * one holds (they are this thread's), and leaves the outer one's record
 * alone.  (A single bitmap, cleared by every prepare, lost the outer
 * fork's locks: its parent handler released none and the next malloc
 * waited for itself.)  Forks of different threads do not interleave: the C
 * library runs one fork's handlers at a time (glibc's atfork_lock), so
 * nesting happens in one thread, and plain variables serve.
 *
 * The handlers are registered at load time, before any thread allocates:
 * registered by the first allocation, a thread that allocated while
 * another one was registering them could hold a lock at a fork that took
 * none, and the child would wait for it forever.  And the prepare handler
 * finishes the allocator's start first, for the same reason (a child that
 * inherits a start another thread began never ends it).  A process forking
 * while its threads made their first allocations lost 1 child in 10 to
 * either (the fork-at-start case of tests/alloc/test-alloc-fork).
 * Registered first, the allocator's prepare handler runs last and its
 * parent and child handlers first (the C library runs them in those
 * orders), so a program's own handlers may allocate.
 */
#include "alloc_init.h"
#include "tcache.h"
#include "central.h"
#include "segment.h"
#include "huge.h"
#include "sizeclass.h"
#include "prof.h"
#include "base/os.h"

#include <pthread.h>

#define NCLASS_LOCKS	(JP_NSHARDS * JP_NCLASSES)
#define NLOCKS		(NCLASS_LOCKS + 3 + JP_PROF_TABS)

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
	case 2:
		return &jp__heap_lock;
	default:
		return jp__prof_lock_at(i - NCLASS_LOCKS - 3);	/* leaves: last */
	}
}

/* The depth of the fork whose prepare took each lock (0: none); the depth
 * of the fork whose handlers run now (1: not nested). */
static uint8_t taken_at[NLOCKS];
static unsigned depth;

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
	jp__alloc_start_for_fork();

	int threaded = &__libc_single_threaded == NULL || !__libc_single_threaded;

	threaded = threaded && have_io_list_lock();
	/* relaxed: read back by this thread (parent) or its only copy (child). */
	atomic_store_explicit(&stdio_locked, threaded, memory_order_relaxed);
	if (threaded)
		_IO_list_lock();
	/* A handler may interrupt us anywhere here and fork: it sees our
	 * locks held by this thread and leaves them (and their record)
	 * alone.  A lock taken but not yet recorded is one too. */
	unsigned d = ++depth;

	for (unsigned i = 0; i < NLOCKS; i++)
		if (jp__lock_for_fork(lock_at(i)))
			taken_at[i] = (uint8_t)d;
}

static void atfork_parent(void)
{
	unsigned d = depth;

	for (unsigned i = NLOCKS; i-- > 0;)
		if (taken_at[i] == d) {
			/* Record first: a nested fork between the two then
			 * sees the lock held and not its own to release. */
			taken_at[i] = 0;
			jp__unlock(lock_at(i));
		}
	depth = d - 1;
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
	for (unsigned i = 0; i < NLOCKS; i++) {
		jp__lock_reset(lock_at(i));
		if (taken_at[i] == depth)
			taken_at[i] = 0;
	}
	/* Locks of an outer fork that a nested one interrupted stay on
	 * record: that fork's parent handler, which runs in this process when
	 * the signal handler returns, releases them (free already: a no-op). */
	depth--;
	if (atomic_load_explicit(&stdio_locked, memory_order_relaxed))
		_IO_list_resetlock();
	/* A child that lives on (a daemon) must not hold the parent's
	 * stderr open: a caller that reads it to its end would wait for
	 * the child.  The child reports on its own fd 2. */
	jp__report_forget();
}

void jp__fork_init(void)
{
	static atomic_flag registered = ATOMIC_FLAG_INIT;

	/* pthread_atfork may allocate, and a first allocation comes back
	 * here: once. */
	if (!atomic_flag_test_and_set(&registered))
		pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

__attribute__((constructor)) static void fork_init_at_load(void)
{
	jp__fork_init();
}
