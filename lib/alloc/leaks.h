/*
 * leaks.h - JPSYNC_LEAKS: the leak report at exit (leaks.c).
 *
 * Vocabulary: a live block is one check mode's header calls live
 * (check.c); a root is memory the program reaches without the heap: the
 * writable mappings of every loaded object (data, bss, TLS, anonymous
 * mappings) and the stacks and saved registers of its threads; a block is
 * reachable when a root or a reachable block holds an aligned word that
 * points into its bytes (an interior pointer counts, as in LeakSanitizer);
 * a leak is a live block that is not reachable.
 */
#ifndef JP_LEAKS_H
#define JP_LEAKS_H

#include "base/jp_internal.h"

#pragma GCC visibility push(hidden)

#include <stdatomic.h>
#include <ucontext.h>

#define LEAKS_THREADS	1024	/* threads stopped at most */

/* A stopped thread, as its signal handler saw it. */
struct jp__leaks_slot {
	_Atomic uint32_t ready;
	int tid;
	uintptr_t sp;
	ucontext_t uc;		/* its registers: scanned with the slot */
};

/* leaks_stop.c: the slots (LEAKS_THREADS of them, mapped at the first
 * stop); signal every other thread and return how many were sent the
 * signal; wait for them (a bounded time) and return how many answered;
 * let them go. */
extern struct jp__leaks_slot *jp__leaks_slots;
unsigned jp__leaks_stop(void);
unsigned jp__leaks_wait(unsigned sent);
void jp__leaks_release(void);

/* Scan, print the report on stderr and give the exit status it asks for:
 * 0 when nothing leaked or JPSYNC_LEAKS_EXITCODE is 0. */
int jp__leaks_report(void);

#pragma GCC visibility pop

#endif /* JP_LEAKS_H */
