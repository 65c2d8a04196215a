/*
 * stack.h - where the program was: stack capture, a depot of captured
 * stacks and the one printer of a code address (stack.c), for the reports
 * of check mode (lib/alloc/check.c) and lockdep (lib/sync/lockdep.c).
 *
 * Vocabulary: a pc is a return address (the instruction after a call); a
 * stack is up to JP_STACK_MAX pcs, innermost first; a stack id is the
 * depot's 32-bit name for a stack, 0 meaning "no stack" (none captured,
 * the depot full or not mapped).
 *
 * Everything here may run inside malloc: nothing allocates.  Capture is
 * built on the toolchain's unwinder (_Unwind_Backtrace from libgcc_s); on
 * x86_64 a walk that caches each return address's CFA rule, read from the
 * FDE that the unwinder finds, goes first (stack.c says why and how).  The
 * unwinder may itself call malloc the first time it looks at an object (an
 * object whose frames were registered at run time); a thread-local guard
 * makes a capture that starts inside another capture return 0 frames, so
 * that malloc -> capture -> unwinder -> malloc ends at the second capture.
 * The depot is one fixed table mapped through the OS door on first use,
 * filled without a lock (a slot is claimed with one compare-and-swap), so
 * a fork at any instruction leaves the child a usable depot.
 */
#ifndef JP_STACK_H
#define JP_STACK_H

#include "jp_internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Hidden declarations too (-fvisibility=hidden covers definitions only),
 * so that calls and the globals are reached directly, not through the
 * PLT or the GOT. */
#pragma GCC visibility push(hidden)

#define JP_STACK_MAX	16

/* ---- capture ------------------------------------------------------------ */

/*
 * Up to max (<= JP_STACK_MAX) pcs of the caller's stack into pcs, the
 * caller's own frame first (pcs[0] is in the function that called this),
 * after skipping skip frames.  With self true, every frame of this
 * library's own object at the top of the stack is skipped first, so that
 * the first pc is the caller of the library's entry point.  Returns how
 * many pcs were stored: 0 when called inside another capture on this
 * thread (see above).
 */
unsigned jp__stack_capture(uintptr_t *pcs, unsigned max, unsigned skip, bool self);

/* Test hook: when set, called inside each capture, the guard held (a test
 * checks there that a nested capture returns 0 frames). */
extern void (*jp__stack_hook)(void);

/* Test hook: which walk a capture takes.  0 (the default): the cached
 * walk, and the unwinder where that walk cannot go; JP_STACK_UNWINDER:
 * the unwinder only; JP_STACK_CACHED: the cached walk only (0 frames
 * where it would give up).  Only x86_64 has the cached walk. */
#define JP_STACK_UNWINDER	1
#define JP_STACK_CACHED		2
extern int jp__stack_mode;

/* ---- the depot ---------------------------------------------------------- */

/* The id of the n pcs at pcs (the same stack, the same id); 0 when n is 0
 * or the depot is full or cannot be mapped. */
uint32_t jp__stack_depot_put(const uintptr_t *pcs, unsigned n);
/* The stack of id: up to max of its pcs into pcs; returns how many (0 for
 * an id the depot does not hold). */
unsigned jp__stack_depot_get(uint32_t id, uintptr_t *pcs, unsigned max);

/* ---- the printer -------------------------------------------------------- */

/*
 * Append pc to the message in buf (cap bytes, *len used; jp__str_add):
 * "symbol+0xoff (0xpc)" when the dynamic symbol table names the code,
 * "file(+0xoff) (0xpc)" when it does not (a static function, or a program
 * not linked with -rdynamic), or "0xpc".  Returns true for the file form
 * (the caller may tell the reader how to resolve it).
 */
bool jp__stack_put_pc(char *buf, size_t cap, size_t *len, uintptr_t pc);

#pragma GCC visibility pop

#endif /* JP_STACK_H */
