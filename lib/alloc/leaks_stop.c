/*
 * leaks_stop.c - the leak report's first step: stop every other thread at
 * exit, so that its stack and registers are scanned as they are, and let
 * them go once the scan is over (leaks.c says the whole of it).
 *
 * Each thread of /proc/self/task but this one gets LEAKS_SIG (tgkill,
 * through the OS door); the handler stores its registers (the ucontext)
 * and its stack pointer in a slot, says so, and sleeps on a futex until
 * the scan is over.  A thread that does not answer within LEAKS_WAIT_MS
 * (it blocks the signal, or is stuck) is counted as not scanned.
 */
#include "leaks.h"
#include "base/os.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <ucontext.h>

#define LEAKS_SIG	(SIGRTMAX - 2)
#define LEAKS_WAIT_MS	2000	/* for all threads to answer */

static _Atomic uint32_t lk_hold;	/* 1 while the scan runs */
static _Atomic uint32_t lk_answered;	/* threads that answered */
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

/* Signal every other thread; returns how many were sent the signal. */
unsigned jp__leaks_stop(void)
{
	int tids[LEAKS_THREADS], self = jp__os_gettid();
	int n = jp__os_tasks(tids, LEAKS_THREADS);
	unsigned sent = 0;
	struct sigaction sa;

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
	for (int i = 0; i < n && i < LEAKS_THREADS; i++)
		if (tids[i] != self && jp__os_tgkill(tids[i], LEAKS_SIG) == 0)
			sent++;
	return sent;
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
	atomic_store_explicit(&lk_hold, 0, memory_order_release);
	jp__futex_wake(&lk_hold, INT_MAX);
}
