/*
 * alloc_init.h - what alloc_init.c owns: the allocator's settings, fixed
 * at start, and the start-up state; with them the memcheck requests that
 * the settings switch on, and the fork handlers' set-up (alloc_fork.c),
 * which start-up calls.
 *
 * The settings are written once, by the thread that starts the allocator
 * (jp__alloc_init_slow), before the state says "ready"; every other file
 * reads them through jp__settings, a const view, so that a write from
 * elsewhere does not compile.
 */
#ifndef JP_ALLOC_INIT_H
#define JP_ALLOC_INIT_H

#include "base/jp_internal.h"

#include <stdatomic.h>
#include <stdbool.h>

/* Hidden, so that the fast paths reach the globals directly, not through
 * the GOT (the library is built with -fvisibility=hidden, which covers
 * definitions only). */
#pragma GCC visibility push(hidden)

/* The key and the flags the allocation and free paths test are in the
 * first 16 bytes, and the whole of it in one cache line of its own, which
 * nothing writes after start: the counts that change often live with
 * their layers (segment.h, huge.h), away from it. */
struct jp_alloc_settings {
	uintptr_t key;			/* double-free key */
	uint8_t nocache;		/* memcheck, check or TSan: caches of 0 */
	uint8_t check;			/* JPSYNC_CHECK (or JPSYNC_LEAKS) */
	uint8_t leaks;			/* JPSYNC_LEAKS: the report at exit (leaks.c) */
	uint8_t free_sites;		/* check mode keeps the stacks of frees */
	uint8_t vg;			/* running on memcheck */
	uint8_t tsan;			/* TSan runs, this library not built for it */
	uint8_t prof;			/* JPSYNC_HEAP_PROFILE: sampling on (prof.c) */
	uint64_t prof_rate;		/* JPSYNC_HEAP_PROFILE_RATE */
	uint64_t prof_interval;		/* JPSYNC_HEAP_PROFILE_INTERVAL (0: none) */
	uint64_t mag_size;
	uint64_t cache_n;
	uint64_t cache_bytes;		/* all threads' bins may grow by this */
	uint64_t madvise_min;
} JP_ALIGNED_CL;
_Static_assert(sizeof(struct jp_alloc_settings) == JP_CACHELINE,
	       "the settings fill more than one cache line");

/* The object itself: written by jp__alloc_init_slow only (and by the unit
 * tests, which set a field before they exercise it). */
extern struct jp_alloc_settings jp__settings_w;
/* What everyone reads: the same object, read-only. */
#define jp__settings	(*(const struct jp_alloc_settings *)&jp__settings_w)

extern _Atomic int jp__alloc_state;	/* 0 none, 1 running, 2 ready */
void jp__alloc_init_slow(void);
/* Start the allocator unless this thread is starting it (alloc_fork.c). */
void jp__alloc_start_for_fork(void);

/* Make sure the allocator is set up (every path that can be the first). */
static inline void jp__alloc_ready(void)
{
	if (atomic_load_explicit(&jp__alloc_state, memory_order_acquire) != 2)
		jp__alloc_init_slow();
}

/* alloc_fork.c: register the fork handlers (once: at load, or at the
 * start when malloc comes first). */
void jp__fork_init(void);

/* ---- memcheck ------------------------------------------------------- */

#if defined(HAVE_VALGRIND_MEMCHECK_H) && defined(HAVE_VALGRIND_HELGRIND_H) && \
	!defined(JP_NO_VALGRIND)
# define JP_HAVE_MEMCHECK 1
# include <valgrind/memcheck.h>
/* Each request is a dozen instructions even outside valgrind: only when
 * memcheck runs (jp__settings.vg, tested once at start). */
# define JP_VG_ONLY(req)	do { if (jp_unlikely(jp__settings.vg)) { req; } } while (0)
# define JP_VG_MALLOCLIKE(p, n, zeroed) \
	JP_VG_ONLY(VALGRIND_MALLOCLIKE_BLOCK(p, n, 0, zeroed))
# define JP_VG_FREELIKE(p)	JP_VG_ONLY(VALGRIND_FREELIKE_BLOCK(p, 0))
# define JP_VG_RESIZE(p, o, n)	JP_VG_ONLY(VALGRIND_RESIZEINPLACE_BLOCK(p, o, n, 0))
# define JP_VG_DEFINED(p, n)	JP_VG_ONLY(VALGRIND_MAKE_MEM_DEFINED(p, n))
# define JP_VG_NOACCESS(p, n)	JP_VG_ONLY(VALGRIND_MAKE_MEM_NOACCESS(p, n))
#else
# define JP_VG_MALLOCLIKE(p, n, zeroed) ((void)(p))
# define JP_VG_FREELIKE(p)	((void)(p))
# define JP_VG_RESIZE(p, o, n)	((void)(p))
# define JP_VG_DEFINED(p, n)	((void)(p))
# define JP_VG_NOACCESS(p, n)	((void)(p))
#endif

#pragma GCC visibility pop

#endif /* JP_ALLOC_INIT_H */
