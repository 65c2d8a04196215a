/*
 * wait.c - jp_wait / jp_notify_one / jp_notify_all: wait until a value in
 * memory changes.
 *
 * Every object maps to a "state" of a table of JP_WAIT_STATES cache-line
 * sized states, by a hash of its address (the hash of libstdc++'s fix for
 * PR115955: the address xor a per-process random seed, the high half folded
 * into the low, a multiply by 2^64/phi, and the high bits folded down again;
 * the table index is the top bits of the product).  4096 states make two of
 * 64 waiters on distinct objects share a state with probability about
 * 1/4096 each: rarely, and harmlessly.
 *
 * A state holds:
 *   direct - waiters asleep on their object itself: an aligned 32-bit object
 *            is its own futex, so a notify wakes exactly its waiters;
 *   proxy  - waiters of 1-, 2- and 8-byte objects, asleep on seq;
 *   seq    - the proxy futex word, advanced by every notify of an object
 *            that maps here and has proxy waiters;
 *   cond   - waiters of the jp_conds that map here (cond.c), so that a
 *            signal with nobody waiting makes no system call either.
 * A notify reads the counts and makes no system call when they are zero.
 *
 * Why no wakeup is lost: the parking protocol of park.h, with the count
 * "direct" or "proxy" and the word the object itself or seq.  The
 * notifier's caller stores the new value; the notifier issues a seq_cst
 * fence and reads the counts.  A proxy waiter reads seq before its last
 * look at the object, so a notify between the look and the sleep is not
 * lost either.
 *
 * Shared proxies: when objects A and B share a state, notify_one(A) could
 * wake a B waiter and leave A's asleep.  So a proxy notify_one wakes one
 * sleeper only when the state has exactly one proxy waiter (then it is the
 * only one there is to wake); with more, it wakes every sleeper of the
 * state, and each re-checks its own object and goes back to sleep if it is
 * unchanged.  Direct waiters never share: the kernel keys them by address.
 */
#include "sync.h"
#include "base/os.h"
#include "base/park.h"

#include <errno.h>
#include <jpsync/wait.h>
#include <limits.h>
#include <sched.h>
#include <string.h>

#define JP_WAIT_BITS	12
#define JP_WAIT_STATES	(1u << JP_WAIT_BITS)

struct wait_state {
	_Atomic uint32_t seq;
	_Atomic uint32_t proxy;
	_Atomic uint32_t direct;
	_Atomic uint32_t cond;		/* jp_cond waiters (cond.c) */
} JP_ALIGNED_CL;

_Static_assert(sizeof(struct wait_state) == JP_CACHELINE, "one state per cache line");

static struct wait_state wait_table[JP_WAIT_STATES];
static _Atomic uint64_t wait_seed;	/* 0: not drawn yet; then odd */
static _Atomic uint64_t wake_calls;

static JP_NOINLINE uint64_t seed_init(void)
{
	uint64_t s = 0, z = 0;

	jp__os_random(&s, sizeof s);
	s |= 1;		/* never 0, which means "not drawn" */
	if (JP_ON_VALGRIND()) {
		JP_BENIGN_RACE(&wait_seed, sizeof wait_seed, "jp_wait seed, written once");
		JP_BENIGN_RACE(wait_table, sizeof wait_table, "jp_wait states: atomics");
	}
	/* relaxed: the seed is a lone value; the first one stored wins. */
	if (!atomic_compare_exchange_strong_explicit(&wait_seed, &z, s, memory_order_relaxed,
						     memory_order_relaxed))
		s = z;
	return s;
}

static inline struct wait_state *state_for(const void *addr)
{
	/* relaxed: see seed_init. */
	uint64_t x = atomic_load_explicit(&wait_seed, memory_order_relaxed);

	if (jp_unlikely(x == 0))
		x = seed_init();
	x ^= (uintptr_t)addr;
	x ^= x >> 33;
	x *= UINT64_C(0x9e3779b97f4a7c15);	/* 2^64 / phi */
	x ^= x >> 31;
	x *= UINT64_C(0x9e3779b97f4a7c15);
	return &wait_table[x >> (64 - JP_WAIT_BITS)];
}

static inline uint64_t load_obj(const void *addr, size_t size)
{
	switch (size) {
	case 1: return __atomic_load_n((const uint8_t *)addr, __ATOMIC_SEQ_CST);
	case 2: return __atomic_load_n((const uint16_t *)addr, __ATOMIC_SEQ_CST);
	case 4: return __atomic_load_n((const uint32_t *)addr, __ATOMIC_SEQ_CST);
	default: return __atomic_load_n((const uint64_t *)addr, __ATOMIC_SEQ_CST);
	}
}

static inline uint64_t load_expected(const void *p, size_t size)
{
	uint8_t b; uint16_t h; uint32_t w; uint64_t d;

	switch (size) {
	case 1: memcpy(&b, p, 1); return b;
	case 2: memcpy(&h, p, 2); return h;
	case 4: memcpy(&w, p, 4); return w;
	default: memcpy(&d, p, 8); return d;
	}
}

/*
 * Spinning before parking.  A waiter whose object changes within a few
 * microseconds (a thread answering it on the other core, or one that gets
 * the core when we yield it) is cheaper caught by a short spin than by a
 * sleep and a wake-up: while it spins it is not registered, so the notify
 * finds nobody to wake and makes no system call either.  The spin is
 * WAIT_SPIN pauses (only where jp__park_may_spin) and then WAIT_YIELDS
 * calls to sched_yield, which give the core to the thread we wait for
 * when it shares ours.  A spin that ends in a sleep anyway costs the
 * waiter CPU for nothing, so each thread counts its spins that failed in
 * a row (spin_misses): after WAIT_MISSES of them it parks at once, but
 * for one wait in WAIT_PROBE, which spins to find out whether its waits
 * became short again.  Measured on 2 cores with tests/bench/sync-bench's
 * 17 waiters (7 interleaved runs, medians, doc/benchmarks.md): a burst of
 * notifies took 4.3 us of CPU each instead of 12.4, one by one 16.6
 * instead of 16.1; with 1 or 2 yields the burst gained little (12.9, 6.4),
 * and spinning before every wait cost the one-by-one row 15%.
 */
#define WAIT_SPIN	16
#define WAIT_YIELDS	4
#define WAIT_MISSES	2
#define WAIT_PROBE	16

static __thread uint8_t spin_misses __attribute__((tls_model("initial-exec")));
static __thread uint8_t spin_skips __attribute__((tls_model("initial-exec")));
/* Spins this thread began, for the tests: a thread-local count, so a
 * busy jp_wait writes no line that other cores share. */
static __thread uint64_t spins __attribute__((tls_model("initial-exec")));

/* Spin while the object holds want; false when it changed meanwhile. */
static bool spin_while(const void *addr, size_t size, uint64_t want)
{
	unsigned pauses = jp__park_may_spin() ? WAIT_SPIN : 0;

	if (spin_misses >= WAIT_MISSES && ++spin_skips % WAIT_PROBE != 0)
		return true;
	spins++;
	for (unsigned i = 0; load_obj(addr, size) == want; i++) {
		if (i == pauses + WAIT_YIELDS) {
			if (spin_misses < WAIT_MISSES)
				spin_misses++;
			return true;
		}
		if (i < pauses)
			jp_cpu_relax();
		else
			sched_yield();
	}
	spin_misses = 0;
	return false;
}

uint64_t jp__wait_spins(void)
{
	return spins;
}

/* Park until the object no longer holds want (0), or the deadline passes
 * (ETIMEDOUT). */
static int park_while(struct wait_state *s, const void *addr, size_t size, uint64_t want,
		      const struct timespec *deadline)
{
	int r = 0;

	while (load_obj(addr, size) == want) {
		if (size == 4) {
			/* The object is its own word (park.h). */
			jp__park_register(&s->direct);
			r = jp__park_wait((const _Atomic uint32_t *)addr, (uint32_t)want, deadline);
			jp__park_leave(&s->direct);
		} else {
			uint32_t seq = jp__park_enter(&s->proxy, &s->seq);

			if (load_obj(addr, size) == want)
				r = jp__park_wait(&s->seq, seq, deadline);
			jp__park_leave(&s->proxy);
		}
		if (r == ETIMEDOUT)
			return ETIMEDOUT;
	}
	return 0;
}

JP_EXPORT int jp_wait(const void *addr, const void *expected, size_t size,
		      const struct timespec *deadline)
{
	struct wait_state *s;
	uint64_t want;
	int mode, r = 0;

	if (addr == NULL || expected == NULL)
		return EINVAL;
	if (size != 1 && size != 2 && size != 4 && size != 8)
		return EINVAL;
	if (((uintptr_t)addr & (size - 1)) != 0)
		return EINVAL;
	if (jp__deadline_check(deadline) != 0)
		return EINVAL;
	mode = jp__sync_mode_get();
	if (mode & JP_SYNC_VALGRIND)
		JP_BENIGN_RACE(addr, size, "jp_wait object: read atomically");
	want = load_expected(expected, size);
	s = state_for(addr);
	if (load_obj(addr, size) == want && jp__deadline_passed(deadline))
		return ETIMEDOUT;	/* the one attempt was the load */
	if (spin_while(addr, size, want))
		r = park_while(s, addr, size, want, deadline);
	if (mode & JP_SYNC_RACE_TOOLS)
		jp__hb_after(addr);
	return r;
}

static void notify(const void *addr, int all)
{
	struct wait_state *s;
	uint32_t direct, proxy;

	if (addr == NULL)
		return;
	if (jp__sync_mode_get() & JP_SYNC_RACE_TOOLS)
		jp__hb_before(addr);
	s = state_for(addr);
	/* seq_cst: the notifier's half of the pattern above. */
	atomic_thread_fence(memory_order_seq_cst);
	/* relaxed: ordered by the fence. */
	direct = atomic_load_explicit(&s->direct, memory_order_relaxed);
	proxy = atomic_load_explicit(&s->proxy, memory_order_relaxed);
	if (direct != 0 && ((uintptr_t)addr & 3) == 0) {
		/* relaxed: a statistic for the tests. */
		atomic_fetch_add_explicit(&wake_calls, 1, memory_order_relaxed);
		jp__park_wake((const _Atomic uint32_t *)addr, all ? INT_MAX : 1);
	}
	if (proxy != 0) {
		atomic_fetch_add_explicit(&wake_calls, 1, memory_order_relaxed);
		jp__park_bump_wake(&s->seq, all || proxy > 1 ? INT_MAX : 1);
	}
}

JP_EXPORT void jp_notify_one(const void *addr)
{
	notify(addr, 0);
}

JP_EXPORT void jp_notify_all(const void *addr)
{
	notify(addr, 1);
}

_Atomic uint32_t *jp__wait_cond_waiters(const void *cond)
{
	return &state_for(cond)->cond;
}

void jp__wait_count_wake(void)
{
	/* relaxed: a statistic for the tests. */
	atomic_fetch_add_explicit(&wake_calls, 1, memory_order_relaxed);
}

uint64_t jp__wait_wake_calls(void)
{
	/* relaxed: a statistic. */
	return atomic_load_explicit(&wake_calls, memory_order_relaxed);
}

unsigned jp__wait_state_index(const void *addr)
{
	return (unsigned)(state_for(addr) - wait_table);
}
