/*
 * leaks_stop.c - the leak report's first step: stop every other thread at
 * exit, so that its stack and registers are scanned as they are, and let
 * them go once the scan is over (leaks.c says the whole of it).
 *
 * Each thread of /proc/self/task but this one gets LEAKS_SIG (tgkill,
 * through the OS door); the handler stores its registers (the ucontext)
 * and its stack pointer in a slot, says so, and sleeps on a futex until
 * the scan is over.  A thread that blocks LEAKS_SIG (its SigBlk in /proc:
 * a worker thread that blocks every signal, as xz's and many servers' do)
 * is not sent it: a helper process stops it with ptrace and copies its
 * registers and stack pointer into a slot (os_trace.c), so that the report
 * neither waits for an answer that cannot come nor misses a pointer the
 * thread holds only in a register.  A thread that answers neither way (no
 * ptrace here, or stuck, or its mask changed after it was read: then
 * LEAKS_WAIT_MS passes) is counted as not scanned.  A zombie thread (one
 * that exited, a main thread after pthread_exit) is neither.
 */
#include "leaks.h"
#include "base/os.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#define LEAKS_SIG	(SIGRTMAX - 2)
#define LEAKS_WAIT_MS	2000	/* for all threads to answer */

static _Atomic uint32_t lk_hold;	/* 1 while the scan runs */
static _Atomic uint32_t lk_answered;	/* threads that answered */
/* The threads that block LEAKS_SIG (jp__leaks_stop), for ptrace. */
static int lk_blocked[LEAKS_THREADS];
static unsigned lk_nblocked;

#define SIG_BIT(s)	((uint64_t)1 << ((s) - 1))
/* Mapped at the first stop and never unmapped: a thread that answers
 * late may still write its slot. */
struct jp__leaks_slot *jp__leaks_slots;

static void lk_handler(int sig, siginfo_t *si, void *ucv)
{
	int saved = errno;
	volatile uintptr_t here = 0;
	uint32_t i = atomic_fetch_add_explicit(&lk_answered, 1, memory_order_relaxed);

	(void)sig;
	(void)si;
	if (i < LEAKS_THREADS) {
		jp__leaks_slots[i].tid = jp__os_gettid();
		jp__leaks_slots[i].sp = (uintptr_t)&here;
		memcpy(&jp__leaks_slots[i].uc, ucv, sizeof jp__leaks_slots[i].uc);
		/* release: the scanner reads the slot after it sees ready. */
		atomic_store_explicit(&jp__leaks_slots[i].ready, 1, memory_order_release);
	}
	jp__futex_wake(&lk_answered, 1);
	while (atomic_load_explicit(&lk_hold, memory_order_acquire) != 0)
		jp__futex_wait(&lk_hold, 1, NULL);
	errno = saved;
}

/* Signal every other thread that does not block the signal (the others
 * are kept for jp__leaks_trace); returns how many were sent the signal. */
unsigned jp__leaks_stop(void)
{
	int tids[LEAKS_THREADS], self = jp__os_gettid();
	int n = jp__os_tasks(tids, LEAKS_THREADS);
	unsigned sent = 0;
	struct sigaction sa;

	lk_nblocked = 0;
	if (n <= 1)
		return 0;
	if (jp__os_map((void **)&jp__leaks_slots, sizeof(struct jp__leaks_slot) * LEAKS_THREADS) != 0)
		return 0;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = lk_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	sigaction(LEAKS_SIG, &sa, NULL);
	/* release: a handler that reads 1 (acquire) also sees the slots
	 * mapped and the handler installed. */
	atomic_store_explicit(&lk_hold, 1, memory_order_release);
	for (int i = 0; i < n && i < LEAKS_THREADS; i++) {
		uint64_t blocked = 0;
		bool zombie = false;

		if (tids[i] == self)
			continue;
		/* A thread that exited (a main thread after pthread_exit)
		 * has nothing left to scan, and answers nothing. */
		if (jp__os_task_state(tids[i], &blocked, &zombie) && zombie)
			continue;
		if (blocked & SIG_BIT(LEAKS_SIG))
			lk_blocked[lk_nblocked++] = tids[i];
		else if (jp__os_tgkill(tids[i], LEAKS_SIG) == 0)
			sent++;
	}
	return sent;
}

unsigned jp__leaks_trace(unsigned *tried, int *err)
{
	struct jp_os_regs *t;
	size_t size = (size_t)lk_nblocked * sizeof *t;
	unsigned traced = 0;

	*tried = lk_nblocked;
	*err = 0;
	if (lk_nblocked == 0)
		return 0;
	if (jp__os_map((void **)&t, size) != 0) {
		*err = ENOMEM;
		return 0;
	}
	/*
	 * Their interrupted calls are restarted, not ended by EINTR, which
	 * a thread that blocks our signal does not expect from us.  Not only
	 * for threads that block every signal: one in sigwaitinfo shows the
	 * signals it waits for as unblocked while it waits.  (A call that a
	 * signal of the thread's own interrupted at the very moment of the
	 * stop is restarted after its handler instead of ending in EINTR.)
	 */
	for (unsigned i = 0; i < lk_nblocked; i++)
		t[i] = (struct jp_os_regs){ .tid = lk_blocked[i], .flags = JP_OS_TRACE_RESTART };
	jp__os_trace_stop(t, lk_nblocked);
	for (unsigned i = 0; i < lk_nblocked; i++) {
		uint32_t k;

		if (t[i].err == EPERM) {
			uint64_t blocked;
			bool zombie = false;

			/* A thread that became a zombie after its status was
			 * read refuses ptrace with EPERM. */
			if (!jp__os_task_state(t[i].tid, &blocked, &zombie) || zombie)
				t[i].err = ESRCH;
		}
		if (t[i].err == ESRCH) {
			(*tried)--;	/* it exited meanwhile: nothing to scan */
			continue;
		}
		if (t[i].err != 0) {
			if (*err == 0)
				*err = t[i].err;
			continue;
		}
		/* A slot as the handler fills one: the registers are
		 * scanned as words wherever they lie in it. */
		k = atomic_fetch_add_explicit(&lk_answered, 1, memory_order_relaxed);
		if (k >= LEAKS_THREADS)
			break;
		jp__leaks_slots[k].tid = t[i].tid;
		jp__leaks_slots[k].sp = t[i].sp;
		memcpy(&jp__leaks_slots[k].uc, t[i].regs,
		       t[i].nbytes < sizeof jp__leaks_slots[k].uc ? t[i].nbytes
								 : sizeof jp__leaks_slots[k].uc);
		atomic_store_explicit(&jp__leaks_slots[k].ready, 1, memory_order_release);
		traced++;
	}
	jp__os_unmap(t, size);
	return traced;
}

unsigned jp__leaks_nslots(void)
{
	uint32_t n = atomic_load_explicit(&lk_answered, memory_order_acquire);

	return n < LEAKS_THREADS ? n : LEAKS_THREADS;
}

/* Wait for the sent threads to answer, LEAKS_WAIT_MS at most; returns
 * how many did. */
unsigned jp__leaks_wait(unsigned sent)
{
	uint64_t end = jp__os_now_ns() + (uint64_t)LEAKS_WAIT_MS * 1000000;
	uint32_t got;

	while ((got = atomic_load_explicit(&lk_answered, memory_order_acquire)) < sent) {
		uint64_t now = jp__os_now_ns(), at = now + 10000000;
		struct timespec dl;

		if (now >= end)
			break;
		/* jp__futex_wait's deadline is on CLOCK_MONOTONIC, as
		 * jp__os_now_ns. */
		dl.tv_sec = (time_t)(at / 1000000000);
		dl.tv_nsec = (long)(at % 1000000000);
		jp__futex_wait(&lk_answered, got, &dl);
	}
	return got < sent ? got : sent;
}

void jp__leaks_release(void)
{
	jp__os_trace_release();
	atomic_store_explicit(&lk_hold, 0, memory_order_release);
	jp__futex_wake(&lk_hold, INT_MAX);
}
