/*
 * leaks.h - JPSYNC_LEAKS: the leak report at exit (leaks.c).
 *
 * Vocabulary: a live block is one check mode's header calls live
 * (check.c); a root is memory the program reaches without the heap: the
 * writable mappings of every loaded object (data, bss, TLS, anonymous
 * mappings) and the stacks and saved registers of its threads; a block is
 * reachable when a root or a reachable block holds an aligned word that
 * points into its bytes (an interior pointer counts, as in LeakSanitizer);
 * a leak is a live block that is not reachable.  A leak is indirect when
 * another leak holds a word that points into it, direct otherwise; of the
 * leaks that only cycles of leaks reach, blocks that lead them are counted
 * direct too (the first in address order that no earlier one reaches, as
 * valgrind's memcheck picks them; LeakSanitizer would call them all
 * indirect), so that every leaked structure shows at least one direct
 * leak.  Which block leads depends on the addresses, and a cycle entered
 * from another cycle may keep a lead of its own: the direct count may be
 * higher than the number of dropped structures, never lower.
 */
#ifndef JP_LEAKS_H
#define JP_LEAKS_H

#include "base/jp_internal.h"

#pragma GCC visibility push(hidden)

#include <stdatomic.h>
#include <ucontext.h>

#define LEAKS_THREADS	1024	/* threads stopped at most */

/* A live block (lo to hi: the user's bytes, at least one) or a range the
 * scan leaves out (site and marked unused). */
struct lk_range {
	uintptr_t lo, hi;
	uint32_t site;
	uint32_t marked;	/* LK_ flags; none: a direct leak */
};

#define LK_REACHED	1u	/* reachable from the roots */
#define LK_INDIRECT	2u	/* a leak that another leak points into */
#define LK_COVERED	4u	/* reached from a direct leak (leaks.c's classify) */

/* One allocation stack's leaks of one kind. */
struct lk_group {
	uint64_t bytes, blocks;
	uint32_t site;
	uint32_t indirect;	/* 1: indirect leaks, listed after the direct */
};

/* leaks_report.c: a heapsort by less (qsort may allocate: glibc's merge
 * sort does); and the report of the n blocks of v, reached and leaked (v
 * is reordered; groups has room for n), on stderr, with the number of
 * threads not stopped and the errno value that kept ptrace from stopping
 * one (0: none).  Returns the number of leaked blocks. */
typedef bool (*jp__lk_less)(const void *a, const void *b);
void jp__leaks_sort(void *v, size_t n, size_t size, jp__lk_less less);
uint64_t jp__leaks_print(struct lk_range *v, size_t n, struct lk_group *groups,
			 unsigned unscanned, int trace_err);

/* A stopped thread, as its signal handler saw it. */
struct jp__leaks_slot {
	_Atomic uint32_t ready;
	int tid;
	uintptr_t sp;
	ucontext_t uc;		/* its registers: scanned with the slot */
};

/* leaks_stop.c: the slots (LEAKS_THREADS of them, mapped at the first
 * stop); signal every other thread that does not block the signal and
 * return how many were sent it; wait for them (a bounded time) and return
 * how many answered; stop the threads that block it with ptrace, setting
 * *tried to how many there were and *err to the first errno value that
 * refused one, and return how many stopped; the slots filled, for the
 * scan; let them all go. */
extern struct jp__leaks_slot *jp__leaks_slots;
unsigned jp__leaks_stop(void);
unsigned jp__leaks_wait(unsigned sent);
unsigned jp__leaks_trace(unsigned *tried, int *err);
unsigned jp__leaks_nslots(void);
void jp__leaks_release(void);

/* Scan, print the report on stderr and give the exit status it asks for:
 * 0 when nothing leaked or JPSYNC_LEAKS_EXITCODE is 0. */
int jp__leaks_report(void);

#pragma GCC visibility pop

#endif /* JP_LEAKS_H */
