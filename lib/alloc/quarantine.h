/*
 * quarantine.h - what quarantine.c owns: check mode's freed huge blocks,
 * kept inaccessible for a while so that a use after free faults and is
 * named (check_fault.c).  It sits beside huge.c, which hands it the blocks
 * it frees in check mode, below check.c, which looks blocks up here.
 */
#ifndef JP_QUARANTINE_H
#define JP_QUARANTINE_H

#include "base/jp_internal.h"

#include <stdbool.h>

#pragma GCC visibility push(hidden)	/* see alloc_init.h */

struct jp_huge;

/* Huge block h, freed, its header still readable, is kept inaccessible. */
void jp__huge_quarantine(struct jp_huge *h);
/* A huge block freed lately, kept inaccessible (check mode's quarantine). */
struct jp_huge_freed {
	const void *user;	/* the pointer the program had */
	size_t req;		/* its requested size */
	uint32_t alloc_site, free_site;	/* stack ids (base/stack.h) */
};
/* Was p a huge block that was freed lately?  Its record into *f (may be
 * NULL). */
bool jp__huge_freed(const void *p, struct jp_huge_freed *f);
/* Does address a lie in the mapping of a huge block freed lately?  Without
 * a lock, for a signal handler (racy reads: a record being replaced may be
 * missed, never misread as another's, as the range is read first and
 * checked again last). */
bool jp__huge_freed_at(uintptr_t a, struct jp_huge_freed *f);
/* Freed huge blocks check mode could not make inaccessible (the stats). */
uint64_t jp__huge_unprotected(void);

#pragma GCC visibility pop

#endif /* JP_QUARANTINE_H */
