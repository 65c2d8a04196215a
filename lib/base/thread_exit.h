/*
 * thread_exit.h - the library's one pthread key, and what runs when a
 * thread that used the library exits.
 *
 * Each part that keeps state per thread owns a slot below.  A thread that
 * creates such state arms its slot with a pointer to it; when the thread
 * exits, the key's destructor runs the armed slots' hooks in the order of
 * the slots, each once, and disarms them.  A hook that runs code which arms
 * a slot again (a free that needs a thread cache after the allocator's hook
 * gave it back) makes the destructor run again, as POSIX runs a key's
 * destructor again when its value is set during destruction.
 *
 * The slots are named here, base's one piece of knowledge about the parts
 * above it: the order is a property of the whole library, not of one part.
 * The allocator's goes last, because every other hook frees memory.
 *
 * The key is made at load time (a constructor: before any thread can race
 * for it, and so that helgrind and drd, which do not see pthread_once's
 * futex as synchronisation, see it written first), or by the first arm if
 * malloc runs before the library's constructors (LD_PRELOAD), when the
 * process has one thread.
 */
#ifndef JP_THREAD_EXIT_H
#define JP_THREAD_EXIT_H

#include "jp_internal.h"

enum jp__exit_slot {
	JP__EXIT_LOCKDEP,	/* sync/lockdep.c: the held-lock stack, reported */
	JP__EXIT_PERTHREAD,	/* base/perthread.c: pool caches, epoch records */
	JP__EXIT_ARENA,		/* mem/arena.c: jp_arena_local's arena */
	JP__EXIT_HEAP,		/* alloc/tcache.c: the thread cache, last */
	JP__EXIT_NSLOTS
};

/* Run fn(arg) when the calling thread exits (arg != NULL), replacing what
 * the slot held; arg NULL disarms it.  Returns 0, or an errno value when
 * the key could not be made or set (the hook will then not run).  Async
 * re-entry: pthread_setspecific may allocate the first time a thread arms
 * a slot, so a caller arms after its own per-thread state is in place. */
int jp__thread_exit_arm(enum jp__exit_slot slot, void (*fn)(void *), void *arg);

/* Make the key now, if it is not made (the allocator calls this once it
 * can serve the allocations pthread_key_create may make). */
void jp__thread_exit_init(void);

#endif /* JP_THREAD_EXIT_H */
