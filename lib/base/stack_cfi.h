/*
 * stack_cfi.h - the walk state of a capture (stack.c) and the cached walk
 * that goes first on x86_64 (stack_cfi.c).  Both run inside malloc: nothing
 * allocates.
 */
#ifndef JP_STACK_CFI_H
#define JP_STACK_CFI_H

#include "jp_internal.h"

#include <stdbool.h>
#include <stdint.h>

/* Hidden declarations too (-fvisibility=hidden covers definitions only),
 * so that calls are direct, not through the PLT. */
#pragma GCC visibility push(hidden)

/* A capture under way: up to max pcs into pcs, n so far; skip more
 * frames to pass; with self, the frames in [lo, hi) (this library's code)
 * at the top of the stack are passed too. */
struct jp__stack_walk {
	uintptr_t *pcs;
	unsigned max, n, skip;
	bool self;
	uintptr_t lo, hi;
};

/* Frame pc of the walk w: skipped, passed (this library's), or recorded.
 * True when the walk is done (the outermost frame, or max recorded). */
static inline bool jp__stack_walk_add(struct jp__stack_walk *w, uintptr_t pc)
{
	if (pc == 0)
		return true;
	if (w->skip > 0) {
		w->skip--;
		return false;
	}
	if (w->self) {
		if (pc >= w->lo && pc < w->hi)
			return false;
		w->self = false;
	}
	w->pcs[w->n++] = pc;
	return w->n == w->max;
}

/* The table of size bytes that *slot points to, mapped (zeroed) and
 * published by the first caller (the others' mappings go back); NULL when
 * out of memory.  race: the detectors' note for its words, or NULL. */
void *jp__stack_table(void *_Atomic *slot, size_t size, const char *race);

#if defined(__x86_64__) && defined(__GNUC__)
#define JP_STACK_CFI 1
/*
 * Walk from fp, the frame pointer of jp__stack_capture (which has one:
 * it takes __builtin_frame_address(0)), filling w as the unwinder's walk
 * would.  Returns true when done; false when a frame needs the unwinder
 * (w is then partly filled: the caller starts again).
 */
bool jp__stack_cfi_walk(struct jp__stack_walk *w, void *fp);
/* For tests: how many rules were computed (not found in the table). */
extern _Atomic unsigned long jp__stack_cfi_computed;
#else
#define JP_STACK_CFI 0
#endif

#pragma GCC visibility pop

#endif /* JP_STACK_CFI_H */
