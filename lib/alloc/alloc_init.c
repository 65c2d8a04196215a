/*
 * alloc_init.c - the allocator's start-up: its settings (alloc_init.h:
 * the options it reads, the double-free key, which valgrind tool, if any,
 * runs it), written here once and read-only after, and the set-up of each
 * layer, once, by the first thread that allocates.
 *
 * Start-up must survive re-entry: the dynamic loader, dlsym and
 * pthread_key_create may call malloc before the allocator is ready.  So
 * phase 1 (the tables) allocates nothing and ends with the state "ready";
 * phase 2 (the thread-exit key and the fork handlers) may allocate, and
 * its allocations find the allocator ready.  (Both are made at load time
 * as well, by constructors, so phase 2 does work only when malloc comes
 * before them.)
 */
#include "alloc_init.h"
#include "tcache.h"
#include "central.h"
#include "segment.h"
#include "huge.h"
#include "sizeclass.h"
#include "stats.h"
#include "prof.h"
#include "base/os.h"
#include "base/options.h"

#include <pthread.h>
#include <sched.h>

struct jp_alloc_settings jp__settings_w;
_Atomic int jp__alloc_state;
/* pthread_self() of the thread that starts the allocator. */
static _Atomic uintptr_t starter;

/*
 * Memcheck, not just any valgrind tool: only memcheck needs every block
 * announced (and so no thread cache); callgrind must count the real fast
 * paths, and helgrind and drd are served by the lock annotations.  A
 * memcheck-only request returns 0 for defined memory; other tools return
 * the default we pass.
 */
static bool on_memcheck(void)
{
#ifdef JP_HAVE_MEMCHECK
	int probe = 0;

	if (!RUNNING_ON_VALGRIND)
		return false;
	return VALGRIND_DO_CLIENT_REQUEST_EXPR(1, VG_USERREQ__CHECK_MEM_IS_DEFINED,
					       &probe, sizeof probe, 0, 0, 0) == 0;
#else
	return false;
#endif
}

void jp__alloc_init_slow(void)
{
	uintptr_t none = 0, me = (uintptr_t)pthread_self();

	/* The start is claimed by writing our identity, in one step: a
	 * signal handler that interrupts this thread right after the claim
	 * and forks must see the start as its own (jp__alloc_start_for_fork).
	 * Claimed by a state of 1 first and the identity a store later, a
	 * handler that came between the two waited forever for itself (the
	 * fork-in-handler case under qemu-i386, whose signals arrive between
	 * translated blocks). */
	if (atomic_compare_exchange_strong(&starter, &none, me)) {
		const struct jp_options *o = jp__options();
		uintptr_t key;

		atomic_store(&jp__alloc_state, 1);

		/* The statistics' elapsed time counts from here when a
		 * preloaded malloc runs before the constructors. */
		jp__os_mark_load();
		jp__os_random(&key, sizeof key);
		/* Odd: never a block pointer, so a free list link is never
		 * taken for the key. */
		jp__settings_w.key = key | 1;
		jp__settings_w.vg = on_memcheck();
		/* The leak report finds live blocks by check mode's
		 * headers.  Not under a sanitizer: its scan reads
		 * memory (stack redzones) the sanitizer forbids. */
#if !defined(JP_ASAN) && !defined(JP_TSAN)
		jp__settings_w.leaks = o->leaks && !jp__settings_w.vg;
#endif
		jp__settings_w.check = (o->check || jp__settings_w.leaks) && !jp__settings_w.vg;
		/* The leak report needs where blocks were allocated, not
		 * where they were freed: a capture per free saved. */
		jp__settings_w.free_sites = o->check;
		/* A library built with -fsanitize=thread needs none of it:
		 * TSan sees its lock and lists. */
#ifndef JP_TSAN
		jp__settings_w.tsan = jp__tsan_on();
#endif
		/* The locks announce happens-before to a detector that does
		 * not see the atomics: without it, a heap handed from an exited
		 * thread to a new one (tcache.c) looks like a race on the heap.
		 * (Here too: malloc may run before the constructors.) */
		jp__lock_setup();
		jp__settings_w.nocache = jp__settings_w.vg || jp__settings_w.check ||
					 jp__settings_w.tsan;
		jp__settings_w.cache_n = o->cache_n;
		jp__settings_w.cache_bytes = o->cache_bytes;
		jp__settings_w.mag_size = o->mag_size;
		jp__settings_w.madvise_min = o->madvise_min;
		/* Not in check mode: its own paths take every call. */
		jp__settings_w.prof = o->heap_profile[0] != '\0' && !jp__settings_w.check;
		jp__settings_w.prof_rate = o->heap_profile_rate;
		jp__settings_w.prof_interval = o->heap_profile_interval;
		jp__sizeclass_init();
		jp__segment_init();
		jp__huge_init();
		jp__central_init();
		jp__tcache_init();
		jp__stats_init();
		jp__prof_init();
		/* For the leak report at exit, and check mode's reports of
		 * misuse, which may come after the program closed stderr. */
		if (jp__settings_w.check)
			jp__report_keep();
		/* release: the tables above are seen by every thread that
		 * reads the state (acquire). */
		atomic_store_explicit(&jp__alloc_state, 2, memory_order_release);
		jp__tcache_init_late();
		jp__fork_init();
		return;
	}
	/* Phase 1 above allocates nothing, so this is another thread.  Spin
	 * a little, then yield: the starter may share our CPU, or (under
	 * valgrind) need the one thread that runs at a time. */
	for (unsigned spins = 0;
	     atomic_load_explicit(&jp__alloc_state, memory_order_acquire) != 2; spins++) {
		if (spins < 64)
			jp_cpu_relax();
		else
			sched_yield();
	}
}

/*
 * For fork's prepare handler: a child must not inherit a start that
 * another thread has begun, or its first allocation would wait forever
 * for a thread it does not have.  So the forking thread finishes the
 * start, or makes it, first.  Phase 1 takes no lock and phase 2 finds its
 * work done at load time, so nothing here waits for the forking thread.
 * A start that this very thread began (a fork from a signal handler that
 * interrupted it) is left alone: waiting would never end.
 */
void jp__alloc_start_for_fork(void)
{
	/* relaxed: only this thread's own claim can make it equal to us. */
	if (atomic_load_explicit(&jp__alloc_state, memory_order_acquire) == 2 ||
	    atomic_load_explicit(&starter, memory_order_relaxed) == (uintptr_t)pthread_self())
		return;
	jp__alloc_init_slow();
}

/*
 * Under helgrind and drd, start the allocator at load time, in the thread
 * that loads the library, before any thread of the program exists: the
 * tools do not see the atomics by which two threads that allocate first at
 * the same moment agree on who sets it up, and reported the tables as
 * raced.  Natively nothing changes: the first allocation starts it.
 */
__attribute__((constructor)) static void alloc_init_under_valgrind(void)
{
	if (JP_ON_VALGRIND())
		jp__alloc_ready();
}
