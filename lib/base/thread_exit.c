/*
 * thread_exit.c - the one pthread key and its destructor (thread_exit.h).
 */
#include "thread_exit.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

struct exit_tls {
	void (*fn[JP__EXIT_NSLOTS])(void *);
	void *arg[JP__EXIT_NSLOTS];
	bool key_set;		/* the key's value is set for this thread */
};
static __thread struct exit_tls exit_tls __attribute__((tls_model("initial-exec")));

static pthread_key_t exit_key;
static _Atomic int key_state;		/* 0 none, 1 making, 2 made, 3 failed */
static _Atomic uintptr_t key_maker;

static void run_hooks(void *unused)
{
	(void)unused;
	exit_tls.key_set = false;
	for (int s = 0; s < JP__EXIT_NSLOTS; s++) {
		void *arg = exit_tls.arg[s];

		if (arg == NULL)
			continue;
		exit_tls.arg[s] = NULL;
		exit_tls.fn[s](arg);
	}
}

void jp__thread_exit_init(void)
{
	uintptr_t none = 0, me = (uintptr_t)pthread_self();

	/* Claimed by writing our identity in one step, so that a re-entry
	 * from this thread at any point after the claim (an allocation, a
	 * signal handler) sees the key as its own and does not wait for
	 * itself (as in alloc_init.c). */
	if (atomic_compare_exchange_strong(&key_maker, &none, me)) {
		atomic_store(&key_state, 1);
		/* pthread_key_create may allocate, and the allocation may
		 * come back here (key_maker lets it through). */
		atomic_store(&key_state,
			     pthread_key_create(&exit_key, run_hooks) == 0 ? 2 : 3);
		return;
	}
	/* Another thread is making the key: wait, so that this thread's
	 * hooks run; the maker itself passes (it is inside its own call).
	 * Spin a little, then yield: the maker may share our CPU, or (under
	 * valgrind) need the one thread that runs at a time. */
	for (unsigned spins = 0; atomic_load(&key_state) < 2 &&
	     atomic_load_explicit(&key_maker, memory_order_relaxed) != me; spins++) {
		if (spins < 64)
			jp_cpu_relax();
		else
			sched_yield();
	}
}

/* At load time: see the top of thread_exit.h. */
__attribute__((constructor)) static void thread_exit_ctor(void)
{
	jp__thread_exit_init();
}

int jp__thread_exit_arm(enum jp__exit_slot slot, void (*fn)(void *), void *arg)
{
	exit_tls.fn[slot] = fn;
	exit_tls.arg[slot] = arg;
	if (arg == NULL || exit_tls.key_set)
		return 0;
	if (atomic_load(&key_state) != 2)
		jp__thread_exit_init();
	if (atomic_load(&key_state) != 2)
		return atomic_load(&key_state) == 3 ? EAGAIN : 0;
	/* Set before pthread_setspecific, which may allocate and arm again. */
	exit_tls.key_set = true;
	if (pthread_setspecific(exit_key, &exit_tls) != 0) {
		exit_tls.key_set = false;
		return ENOMEM;
	}
	return 0;
}
