/*
 * check_fault.c - check mode's SIGSEGV and SIGBUS handler: an access to a
 * freed huge block, named.
 *
 * A freed huge block stays mapped without access in quarantine.c, so
 * an access to it faults.  Without more, the program dies of a bare SIGSEGV;
 * this handler, installed at the first free of a huge block (so never in a
 * program that frees none, and after any sanitizer's runtime has started),
 * says whose block it was, where it was allocated and freed, and aborts.
 * Any other fault goes where it would have gone: to the handler that was
 * there before, or to the default action (the handler puts it back and
 * returns, and the access faults again; a signal that was sent, not a
 * fault, is raised again).  A handler the program installs later replaces
 * this one, and wins.
 *
 * No alternate stack of our own: an access after free does not overflow
 * the stack, and SA_ONSTACK uses the program's if it set one (a stack
 * overflow that reached the handler there goes on to the program's
 * handler).  What runs here is async-signal-safe but for one call: the
 * quarantine is read without a lock, the report is formatted into a buffer
 * on the stack and written with write(2), then abort(); naming the frames
 * (jp__stack_put_pc) calls dladdr, which takes the dynamic loader's lock: a
 * fault inside the loader while it holds it would hang here instead of
 * aborting, a risk taken for names in the report.
 */
#include "check.h"
#include "quarantine.h"
#include "base/os.h"
#include "base/stack.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

static struct sigaction fault_old[2];	/* SIGSEGV's, SIGBUS's */

static void fault(int sig, siginfo_t *si, void *uc)
{
	struct sigaction *old = &fault_old[sig == SIGBUS];
	struct jp_huge_freed f;
	int saved = errno;

	if (si != NULL && si->si_code > 0 &&
	    jp__huge_freed_at((uintptr_t)si->si_addr, &f)) {
		long long at = (long long)((uintptr_t)si->si_addr - (uintptr_t)f.user);
		char note[48], num[24];
		size_t len = 0;

		note[0] = '\0';
#if defined(__s390__) || defined(__s390x__)
		/* s390 reports the page of a fault, not its byte. */
		jp__str_add(note, sizeof note, &len, "access in the page from byte ");
		jp__str_add(note, sizeof note, &len, at < 0 ? "-" : "");
#else
		jp__str_add(note, sizeof note, &len, at < 0 ? "access at byte -" :
							 "access at byte ");
#endif
		jp__str_add(note, sizeof note, &len,
			    jp__fmt_u64(num, at < 0 ? (uint64_t)-at : (uint64_t)at));
		jp__die_block_at("use after free", f.user, f.req, 1, 0, note,
				 f.alloc_site, f.free_site);
	}
	if (old->sa_flags & SA_SIGINFO) {
		old->sa_sigaction(sig, si, uc);
	} else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
		old->sa_handler(sig);
	} else {
		/* The default action (a fault cannot be ignored: the kernel
		 * kills for one whose signal is ignored).  Blocked until we
		 * return, so a sent one is raised again. */
		sigaction(sig, old, NULL);
		if (si == NULL || si->si_code <= 0)
			raise(sig);
	}
	errno = saved;
}

void jp__check_fault_install(void)
{
	static atomic_flag done = ATOMIC_FLAG_INIT;
	struct sigaction sa;

	/* relaxed: two threads freeing their first huge blocks at once,
	 * one installs; the other's block is protected all the same. */
	if (atomic_flag_test_and_set_explicit(&done, memory_order_relaxed))
		return;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = fault;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &fault_old[0]);
	sigaction(SIGBUS, &sa, &fault_old[1]);
}
