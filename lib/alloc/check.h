/*
 * check.h - check mode (JPSYNC_CHECK, JPSYNC_LEAKS): what check.c owns
 * (the checked blocks: their headers, canaries and fill, and the findings'
 * messages) and what check_fault.c owns (the fault handler that names an
 * access to a quarantined huge block, quarantine.h).  The API layer
 * (alloc.c) hands every call to check.c when jp__settings.check is set.
 */
#ifndef JP_CHECK_H
#define JP_CHECK_H

#include "base/jp_internal.h"

#include <stdbool.h>

#pragma GCC visibility push(hidden)	/* see alloc_init.h */

/* ---- "check.c" -------------------------------------------------------- */

/*
 * JPSYNC_CHECK=1: every allocation goes here, off the fast paths (the
 * caches are off in check mode).  A finding prints one line and aborts,
 * or, when jp__check_hook is set, goes to the hook and the operation
 * carries on without the damaged block (for tests and fuzzers).
 */
struct jp_check_report {
	const char *what;	/* "overflow past the end", "double free", ... */
	const void *ptr;	/* the block (its user pointer) */
	size_t size;		/* its requested size; SIZE_MAX: unknown */
	long long first, last;	/* bytes changed, as offsets from ptr; first >
				 * last when there are none to name */
};
extern void (*jp__check_hook)(const struct jp_check_report *r);

/* A checked block of n bytes at alignment align (a power of two); zero:
 * its bytes are zero.  NULL with errno ENOMEM. */
void *jp__check_alloc(size_t n, size_t align, bool zero);
/* Check and free p (any pointer but NULL). */
void jp__check_free(void *p);
/* free_sized in check mode: size must be the size asked for (the last
 * realloc's, calloc's product), or it is reported; then the block is freed. */
void jp__check_free_sized(void *p, size_t size);
/* p's requested size (what is the misuse's name if p is not a block). */
size_t jp__check_usable(const void *p, const char *what);
/* realloc of p (not NULL) to m > 0 bytes. */
void *jp__check_realloc(void *p, size_t m);
/* Whether blk (a block of bs bytes) is live; its user's bytes at *user, *n
 * of them, allocated at stack id *site (the leak report's walk). */
bool jp__check_live(const unsigned char *blk, size_t bs, uintptr_t *user, size_t *n,
		    uint32_t *site);

/* ---- "check_fault.c" ------------------------------------------------- */

/* Install, once, the handler that names an access to a quarantined huge
 * block (at the first huge free). */
void jp__check_fault_install(void);

#pragma GCC visibility pop

#endif /* JP_CHECK_H */
