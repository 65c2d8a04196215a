/*
 * rwlock.c - jp_rwlock: a phase-fair reader-writer lock.
 *
 * The protocol is Brandenburg and Anderson's phase-fair ticket lock
 * (PF-T, "Spin-Based Reader-Writer Synchronization for Multiprocessor
 * Real-Time Systems", 2010), with two changes: writers queue among
 * themselves on a jp_mutex lock word (mutex.c) instead of a ticket pair,
 * and every wait spins briefly and then parks (park.h).
 *
 *   rin      bits 12..31: readers that arrived (RINC each);
 *            bit 1 PRES: a writer is present (waiting for readers, or
 *            holding the lock); bits 2..11: the present or last writer's
 *            phase number; bit 0 RPARK: readers may be asleep on rin.
 *   rout     bits 12..31: readers that left (RINC each); bit 0 WPARK: the
 *            present writer may be asleep on rout.
 *   wlock    the writers' mutex word (mutex.c's protocol).
 *   wticket  the rin count the present writer waits rout to reach, with
 *            WHOLD (bit 0) once it holds the lock.
 *
 * A reader arrives by adding RINC to rin.  When the value it replaced has
 * no PRES it is in: one atomic instruction.  Otherwise it waits until the
 * writer bits of rin change - that writer's phase is over - and then it is
 * in, even if the next writer has arrived meanwhile: that writer's ticket
 * counts it, so the writer waits for it.  A reader leaves by adding RINC to
 * rout.
 *
 * A writer takes wlock, then adds PRES and a new phase number to rin; from
 * then on arriving readers wait.  The count it replaced (its ticket) is
 * every reader that arrived before it; it waits until rout has counted as
 * many departures.  Unlock clears PRES (the waiting readers go in) and
 * releases wlock (the next writer goes on to wait for them).  So a writer
 * waits for at most one phase of readers and readers wait for at most one
 * writer: neither side starves the other.
 *
 * Why readers enter when the bits change at all, and why a phase number
 * rather than PF-T's one bit: a reader that arrived in writer A's phase
 * may look again only after A left and B arrived; B's ticket counts the
 * reader, so it must enter, and it does, because B's phase number differs
 * from A's.  B cannot finish its phase before the reader leaves, so with
 * untimed waits no third phase can bring A's bits back.  A writer that
 * times out (timedwrlock) leaves without that wait, and the next writer
 * takes the next number; the 10-bit number makes a waiting reader confuse
 * phases only after 1023 writers in a row have timed out while it was
 * preempted, and even then it only waits for the writer of the moment.
 *
 * Timeouts.  A writer that times out waiting for readers clears PRES and
 * releases wlock, as unlock does.  A reader that times out waiting for a
 * writer was counted in rin after that writer's ticket, and no later
 * writer may count it: it takes its arrival back (rin -= RINC) with a
 * compare-exchange that succeeds only while the same phase is present; if
 * the phase has ended meanwhile, it is in and returns 0 instead.
 *
 * Parking (park.h's pairing, with the state word as the futex word):
 * a reader sets RPARK with a read-modify-write that also tells it whether
 * the phase is still on, then sleeps on rin expecting that value; unlock
 * clears PRES and RPARK in one read-modify-write and wakes every sleeper
 * when RPARK was set.  The writer stores its ticket, sets WPARK on rout the
 * same way and sleeps on rout; the reader whose departure makes rout equal
 * the ticket wakes it.
 *
 * Race detectors, all on the branch the fast paths take when sync.h's mode
 * is not PLAIN.  Valgrind: the lock's words are benign races (accessed
 * atomically); a writer's unlock publishes happens-before on &rin (to
 * readers and the next writer), a reader's on &rout (to the next writer),
 * so readers are not ordered with each other.  ThreadSanitizer (library
 * instrumented or not): every lock and unlock is told as a mutex's, with
 * the read flag for readers.  lockdep.c records read and write acquisitions.
 *
 * Kept over two rivals measured in the same runs (rwlock-bench, 2 shared
 * cores; doc/bench-costs.md).  Per CPU-second against glibc's default rwlock
 * in two runs: 1.11x or more in 22 of 24 cells with empty critical sections,
 * 0.78-1.35x with 100 steps inside, 0.89-1.07x with 1,000, where the work
 * inside costs ~20x a whole empty iteration.  A writer that first spins up
 * to 200 pauses for the readers to drain lost 13 of 18 cells; one that lets
 * 4 generations of readers pass first won and lost cells with no pattern;
 * a BRAVO-style read bias was 0.67-1.17x with writers present.
 *
 * Misuse.  Destroy of a lock that a reader or writer holds or waits for
 * aborts, always (in_use: three loads in destroy, nothing elsewhere).  An
 * unlock by a thread that holds neither lock is told by the thread's stack
 * of held locks (lockdep.c), kept under JPSYNC_CHECK and JPSYNC_LOCKDEP
 * only: the words count readers, they do not name them, so by default
 * such an unlock goes unseen (it releases a holder's lock, or miscounts).
 */
#include "sync.h"
#include "base/park.h"

#include <jpsync/rwlock.h>

#include <errno.h>
#include <limits.h>

#define RPARK	0x1u
#define PRES	0x2u
#define PHASE1	0x4u			/* one step of the phase number */
#define PHASES	0xffcu			/* bits 2..11 */
#define WBITS	(PRES | PHASES)		/* what a waiting reader watches */
#define RINC	0x1000u
#define COUNT	0xfffff000u		/* the counters of rin and rout */
#define WPARK	0x1u			/* rout */
#define WHOLD	0x1u			/* wticket */

/* Pause instructions a waiter spins before it parks. */
#define RW_SPIN	200

/* Half the counter's range, so that a difference of two counts has a sign. */
_Static_assert(JP_RWLOCK_READERS_MAX == (1u << 19) - 1, "rwlock.h's limit");
_Static_assert(sizeof(jp_rwlock_t) == 32, "jp_rwlock_t is 32 bytes (ABI)");

static inline _Atomic uint32_t *rin_of(jp_rwlock_t *rw)
{
	return (_Atomic uint32_t *)(void *)&rw->rin;
}

static inline _Atomic uint32_t *rout_of(jp_rwlock_t *rw)
{
	return (_Atomic uint32_t *)(void *)&rw->rout;
}

static inline _Atomic uint32_t *wlock_of(jp_rwlock_t *rw)
{
	return (_Atomic uint32_t *)(void *)&rw->wlock;
}

static inline _Atomic uint32_t *wticket_of(jp_rwlock_t *rw)
{
	return (_Atomic uint32_t *)(void *)&rw->wticket;
}

/* ---- readers -------------------------------------------------------------- */

static JP_NOINLINE void wake_writer(jp_rwlock_t *rw, uint32_t rout_now)
{
	/*
	 * acquire: the writer stored its ticket before the release part of
	 * the read-modify-write that set WPARK, which our departure read.
	 */
	atomic_thread_fence(memory_order_acquire);
	/* relaxed: ordered by the fence. */
	if ((rout_now & COUNT) == (atomic_load_explicit(wticket_of(rw), memory_order_relaxed) & COUNT))
		jp__park_wake(rout_of(rw), 1);
}

/* A reader that was in leaves. */
static inline void rd_depart(jp_rwlock_t *rw)
{
	/* release: our reads happen before the next writer's writes. */
	uint32_t v = atomic_fetch_add_explicit(rout_of(rw), RINC, memory_order_release);

	if (jp_unlikely(v & WPARK))
		wake_writer(rw, v + RINC);
}

/*
 * A reader that arrived with the writer bits w and must not go in (timed
 * out, or too many readers): take the arrival back while the same phase is
 * present, so no writer's ticket counts it.  Returns 0 when that worked,
 * 1 when the phase has changed, so the reader is in after all.
 */
static int rd_abandon(jp_rwlock_t *rw, uint32_t w)
{
	/* relaxed: the compare-exchange decides. */
	uint32_t v = atomic_load_explicit(rin_of(rw), memory_order_relaxed);

	while ((v & WBITS) == w) {
		/* relaxed: we take back an arrival; nothing is published. */
		if (atomic_compare_exchange_weak_explicit(rin_of(rw), &v, v - RINC,
							  memory_order_relaxed,
							  memory_order_relaxed))
			return 0;
	}
	/* acquire: the writer's unlock that changed the bits. */
	atomic_thread_fence(memory_order_acquire);
	return 1;
}

/* Whether in (rin before an arrival) and out (rout, read after it) say that
 * JP_RWLOCK_READERS_MAX read locks are held or waited for.  out may count
 * readers that arrived after in was read and have left: then it is few. */
static inline bool too_many(uint32_t in, uint32_t out)
{
	return (int32_t)((in & COUNT) - (out & COUNT)) >= (int32_t)(JP_RWLOCK_READERS_MAX << 12);
}

/*
 * Arrive: add RINC to rin.  Returns what rin held before (acquire: the
 * last writer's unlock, a release on rin, happens before our critical
 * section), and in *out a reading of rout taken after it.
 */
static inline uint32_t rd_arrive(jp_rwlock_t *rw, uint32_t *out)
{
	uint32_t v = atomic_fetch_add_explicit(rin_of(rw), RINC, memory_order_acquire);

	/* relaxed: a stale (smaller) count only over-counts the holders. */
	*out = atomic_load_explicit(rout_of(rw), memory_order_relaxed);
	return v;
}

static int rd_wait(jp_rwlock_t *rw, uint32_t w, const struct timespec *deadline);

/*
 * After an arrival that found a writer present or too many readers: wait
 * for the phase to end (0), or give up, leaving no arrival behind
 * (EAGAIN, ETIMEDOUT).
 */
static JP_NOINLINE int rd_arrived(jp_rwlock_t *rw, uint32_t v, uint32_t out,
				  const struct timespec *deadline)
{
	if (too_many(v, out)) {
		if (rd_abandon(rw, v & WBITS) != 0)
			rd_depart(rw);	/* a writer counted it: leave properly */
		return EAGAIN;
	}
	return (v & PRES) ? rd_wait(rw, v & WBITS, deadline) : 0;
}

/* Wait until the phase w is over.  0 once in; ETIMEDOUT with no arrival left. */
static int rd_wait(jp_rwlock_t *rw, uint32_t w, const struct timespec *deadline)
{
	_Atomic uint32_t *rin = rin_of(rw);
	unsigned spin = jp__park_may_spin() ? RW_SPIN : 0;
	uint32_t v;

	if (deadline != NULL && jp__deadline_passed(deadline))
		return rd_abandon(rw, w) ? 0 : ETIMEDOUT;
	for (unsigned i = 0; i < spin; i++) {
		/* acquire: the writer's unlock that ends the phase. */
		if ((atomic_load_explicit(rin, memory_order_acquire) & WBITS) != w)
			return 0;
		jp_cpu_relax();
	}
	for (;;) {
		/* seq_cst: the sleeper's half of the pairing (park.h); it also
		 * reads whether the phase is still on. */
		v = atomic_fetch_or(rin, RPARK);
		if ((v & WBITS) != w)
			return 0;
		if (jp__park_wait(rin, v | RPARK, deadline) == ETIMEDOUT)
			return rd_abandon(rw, w) ? 0 : ETIMEDOUT;
	}
}

/* ---- writers -------------------------------------------------------------- */

/* Announce a new phase; returns the ticket (the readers that arrived before). */
static inline uint32_t wr_announce(jp_rwlock_t *rw)
{
	_Atomic uint32_t *rin = rin_of(rw);
	/* relaxed: only writers change the phase bits, and we hold wlock. */
	uint32_t cur = atomic_load_explicit(rin, memory_order_relaxed);
	uint32_t next = ((cur & PHASES) + PHASE1) & PHASES;

	/*
	 * acq_rel: arriving readers see PRES after this (its place in rin's
	 * modification order decides which readers the ticket counts); the
	 * phase field changes by addition without a carry out of it.
	 */
	return atomic_fetch_add_explicit(rin, PRES + next - (cur & PHASES),
					 memory_order_acq_rel) & COUNT;
}

/* End the phase: waiting readers go in, the next writer goes on. */
static inline void wr_release(jp_rwlock_t *rw)
{
	uint32_t v;

	/* relaxed: read only by this thread and by departures with WPARK set. */
	atomic_store_explicit(wticket_of(rw), 0, memory_order_relaxed);
	/* release: our writes happen before the readers' and the next writer's. */
	v = atomic_fetch_and_explicit(rin_of(rw), ~(PRES | RPARK), memory_order_release);
	if (v & RPARK)
		jp__park_wake(rin_of(rw), INT_MAX);
	jp__mutex_word_unlock(wlock_of(rw));
}

/* Wait until every reader of the ticket has left: 0, or ETIMEDOUT. */
static JP_NOINLINE int wr_wait(jp_rwlock_t *rw, uint32_t ticket, const struct timespec *deadline)
{
	_Atomic uint32_t *rout = rout_of(rw);
	unsigned spin = jp__park_may_spin() ? RW_SPIN : 0;
	uint32_t v;
	int r = 0;

	for (unsigned i = 0; i < spin; i++) {
		/* acquire: the readers' departures (release) happen before us. */
		if ((atomic_load_explicit(rout, memory_order_acquire) & COUNT) == ticket)
			return 0;
		jp_cpu_relax();
	}
	/* relaxed: published by the read-modify-write that sets WPARK. */
	atomic_store_explicit(wticket_of(rw), ticket, memory_order_relaxed);
	for (;;) {
		/* seq_cst: the sleeper's half; also reads the departures. */
		v = atomic_fetch_or(rout, WPARK);
		if ((v & COUNT) == ticket)
			break;
		if (jp__park_wait(rout, v | WPARK, deadline) == ETIMEDOUT) {
			/* acquire: as above, for a last look. */
			if ((atomic_load_explicit(rout, memory_order_acquire) & COUNT) != ticket)
				r = ETIMEDOUT;
			break;
		}
	}
	/* relaxed: only this writer sets or reads WPARK for itself. */
	atomic_fetch_and_explicit(rout, ~WPARK, memory_order_relaxed);
	return r;
}

static int wr_lock(jp_rwlock_t *rw, const struct timespec *deadline)
{
	uint32_t ticket;
	int r;

	r = jp__mutex_word_lock(wlock_of(rw), deadline);
	if (r != 0)
		return r;
	ticket = wr_announce(rw);
	/* acquire: the departures of the readers of the ticket. */
	if ((atomic_load_explicit(rout_of(rw), memory_order_acquire) & COUNT) != ticket) {
		if (deadline != NULL && jp__deadline_passed(deadline))
			r = ETIMEDOUT;
		else
			r = wr_wait(rw, ticket, deadline);
		if (r != 0) {
			wr_release(rw);
			return r;
		}
	}
	/* relaxed: read by this thread's unlock (and as a hint by departures). */
	atomic_store_explicit(wticket_of(rw), ticket | WHOLD, memory_order_relaxed);
	return 0;
}

/* ---- the checked branch: valgrind, ThreadSanitizer, lockdep ------------ */

/* ThreadSanitizer's flag for a read lock (<sanitizer/tsan_interface.h>). */
#define JP_TSAN_READ_LOCK (1u << 3)

static inline bool checked(void)
{
	/* relaxed: see jp__sync_mode_get. */
	return jp_unlikely(atomic_load_explicit(&jp__sync_mode, memory_order_relaxed) != JP_SYNC_PLAIN);
}

static void vg_words(jp_rwlock_t *rw)
{
	JP_BENIGN_RACE(&rw->rin, 4 * sizeof rw->rin, "jp_rwlock words, accessed atomically");
}

/* Before an attempt of kind JP__LD_READ or _WRITE; tsan: the TSan flags
 * (read, try); may_block: an attempt that can wait, which lockdep orders. */
static JP_NOINLINE void before(jp_rwlock_t *rw, int kind, unsigned tsan, bool may_block, void *pc)
{
	int mode = jp__sync_mode_get();

	if (mode & JP_SYNC_TSAN)
		__tsan_mutex_pre_lock(rw, tsan);
	if (mode & JP_SYNC_VALGRIND)
		vg_words(rw);
	if ((mode & JP_SYNC_LOCKDEP) && may_block)
		jp__lockdep_before_lock(rw, kind, pc);
}

/* After the attempt, which returned r. */
static JP_NOINLINE void after(jp_rwlock_t *rw, int kind, unsigned tsan, int r, void *pc)
{
	int mode = jp__sync_mode_get();

	if (r == 0 && (mode & JP_SYNC_VALGRIND)) {
		vg_words(rw);
		JP_HB_AFTER(&rw->rin);
		if (kind == JP__LD_WRITE)
			JP_HB_AFTER(&rw->rout);
	}
	if (r == 0 && (mode & JP_SYNC_OWNERS))
		jp__lockdep_acquired(rw, kind, pc);
	if (mode & JP_SYNC_TSAN)
		__tsan_mutex_post_lock(rw, tsan | (r == 0 ? 0 : JP_TSAN_TRY_LOCK_FAILED), 0);
}

/* ---- public --------------------------------------------------------------- */

JP_EXPORT void jp_rwlock_init(jp_rwlock_t *rw)
{
	/* relaxed: initialisation precedes sharing the lock. */
	atomic_store_explicit(rin_of(rw), 0, memory_order_relaxed);
	atomic_store_explicit(rout_of(rw), 0, memory_order_relaxed);
	atomic_store_explicit(wlock_of(rw), 0, memory_order_relaxed);
	atomic_store_explicit(wticket_of(rw), 0, memory_order_relaxed);
	for (unsigned i = 0; i < JP_ARRAY_SIZE(rw->reserved); i++)
		rw->reserved[i] = 0;
	if (jp__sync_mode_get() & JP_SYNC_TSAN)
		__tsan_mutex_create(rw, 0);
}

/*
 * Whether a reader or a writer holds rw or waits for it.  A lock nobody
 * uses has counted as many departures as arrivals (a reader that gives up
 * takes its arrival back), no writer present and its writers' word free.
 * relaxed: a valid caller made every unlock happen before the destroy.
 */
static bool in_use(jp_rwlock_t *rw)
{
	uint32_t in = atomic_load_explicit(rin_of(rw), memory_order_relaxed);
	uint32_t out = atomic_load_explicit(rout_of(rw), memory_order_relaxed);

	return (in & PRES) || ((in ^ out) & COUNT) != 0 ||
	       jp__mutex_word_locked(wlock_of(rw));
}

JP_EXPORT void jp_rwlock_destroy(jp_rwlock_t *rw)
{
	int mode = jp__sync_mode_get();

	if (in_use(rw))
		jp__sync_misuse("jp_rwlock_destroy", rw, NULL, "locked");

	if (mode & JP_SYNC_LOCKDEP)
		jp__lockdep_destroy(rw);
	if (mode & JP_SYNC_TSAN)
		__tsan_mutex_destroy(rw, 0);
}

/* A read lock with the checks and annotations. */
static JP_NOINLINE int rdlock_checked(jp_rwlock_t *rw, const struct timespec *deadline, void *pc)
{
	unsigned tsan = JP_TSAN_READ_LOCK | (deadline != NULL ? JP_TSAN_TRY_LOCK : 0);
	uint32_t v, out;
	int r = 0;

	before(rw, JP__LD_READ, tsan, true, pc);
	v = rd_arrive(rw, &out);
	if (jp_unlikely((v & PRES) || too_many(v, out)))
		r = rd_arrived(rw, v, out, deadline);
	after(rw, JP__LD_READ, tsan, r, pc);
	return r;
}

/* The common read lock, kept small: no writer present, checks off.  One
 * atomic addition and a load of the same cache line. */
static inline __attribute__((always_inline)) int rdlock(jp_rwlock_t *rw,
							  const struct timespec *deadline,
							  void *pc)
{
	if (jp_likely(!checked())) {
		uint32_t out, v = rd_arrive(rw, &out);

		if (jp_likely(!(v & PRES) && !too_many(v, out)))
			return 0;
		return rd_arrived(rw, v, out, deadline);
	}
	return rdlock_checked(rw, deadline, pc);
}

JP_EXPORT int jp_rwlock_rdlock(jp_rwlock_t *rw)
{
	return rdlock(rw, NULL, __builtin_return_address(0));
}

JP_EXPORT int jp_rwlock_timedrdlock(jp_rwlock_t *rw, const struct timespec *deadline)
{
	if (jp__deadline_check(deadline) != 0)
		return EINVAL;
	return rdlock(rw, deadline, __builtin_return_address(0));
}

static int try_rd(jp_rwlock_t *rw)
{
	_Atomic uint32_t *rin = rin_of(rw);
	/* relaxed: the compare-exchange decides. */
	uint32_t v = atomic_load_explicit(rin, memory_order_relaxed), out;

	for (;;) {
		if (v & PRES)
			return EBUSY;
		/* relaxed: as in rd_arrive. */
		out = atomic_load_explicit(rout_of(rw), memory_order_relaxed);
		if (too_many(v, out))
			return EAGAIN;
		/* acquire: as rd_arrive. */
		if (atomic_compare_exchange_weak_explicit(rin, &v, v + RINC, memory_order_acquire,
							  memory_order_relaxed))
			return 0;
	}
}

JP_EXPORT int jp_rwlock_tryrdlock(jp_rwlock_t *rw)
{
	unsigned tsan = JP_TSAN_READ_LOCK | JP_TSAN_TRY_LOCK;
	int r;

	if (jp_likely(!checked()))
		return try_rd(rw);
	before(rw, JP__LD_READ, tsan, false, __builtin_return_address(0));
	r = try_rd(rw);
	after(rw, JP__LD_READ, tsan, r, __builtin_return_address(0));
	return r;
}

JP_EXPORT void jp_rwlock_wrlock(jp_rwlock_t *rw)
{
	if (jp_likely(!checked())) {
		wr_lock(rw, NULL);
		return;
	}
	before(rw, JP__LD_WRITE, 0, true, __builtin_return_address(0));
	wr_lock(rw, NULL);
	after(rw, JP__LD_WRITE, 0, 0, __builtin_return_address(0));
}

JP_EXPORT int jp_rwlock_timedwrlock(jp_rwlock_t *rw, const struct timespec *deadline)
{
	int r;

	if (jp__deadline_check(deadline) != 0)
		return EINVAL;
	if (jp_likely(!checked()))
		return wr_lock(rw, deadline);
	before(rw, JP__LD_WRITE, JP_TSAN_TRY_LOCK, true, __builtin_return_address(0));
	r = wr_lock(rw, deadline);
	after(rw, JP__LD_WRITE, JP_TSAN_TRY_LOCK, r, __builtin_return_address(0));
	return r;
}

static int try_wr(jp_rwlock_t *rw)
{
	uint32_t ticket;

	if (!jp__mutex_word_trylock(wlock_of(rw)))
		return EBUSY;
	ticket = wr_announce(rw);
	/* acquire: as in wr_lock. */
	if ((atomic_load_explicit(rout_of(rw), memory_order_acquire) & COUNT) != ticket) {
		wr_release(rw);		/* readers are in: back out */
		return EBUSY;
	}
	/* relaxed: as in wr_lock. */
	atomic_store_explicit(wticket_of(rw), ticket | WHOLD, memory_order_relaxed);
	return 0;
}

JP_EXPORT int jp_rwlock_trywrlock(jp_rwlock_t *rw)
{
	int r;

	if (jp_likely(!checked()))
		return try_wr(rw);
	before(rw, JP__LD_WRITE, JP_TSAN_TRY_LOCK, false, __builtin_return_address(0));
	r = try_wr(rw);
	after(rw, JP__LD_WRITE, JP_TSAN_TRY_LOCK, r, __builtin_return_address(0));
	return r;
}

/* Unlock with the checks and annotations. */
static JP_NOINLINE void unlock_checked(jp_rwlock_t *rw, bool writer, void *pc)
{
	int mode = jp__sync_mode_get();
	int kind = writer ? JP__LD_WRITE : JP__LD_READ;

	/*
	 * An unlock by a thread that holds neither lock: JPSYNC_CHECK aborts
	 * in jp__lockdep_release; lockdep alone reports it, and the unlock
	 * then releases nothing (it would release another thread's lock, or
	 * count a departure nobody made, and the next writer would wait for
	 * ever).
	 */
	if ((mode & JP_SYNC_OWNERS) && !jp__lockdep_release(rw, kind, pc))
		return;
	if (mode & JP_SYNC_TSAN)
		__tsan_mutex_pre_unlock(rw, writer ? 0 : JP_TSAN_READ_LOCK);
	if (mode & JP_SYNC_VALGRIND) {
		vg_words(rw);
		JP_HB_BEFORE(writer ? (void *)&rw->rin : (void *)&rw->rout);
	}
	if (writer)
		wr_release(rw);
	else
		rd_depart(rw);
	if (mode & JP_SYNC_TSAN)
		__tsan_mutex_post_unlock(rw, writer ? 0 : JP_TSAN_READ_LOCK);
}

JP_EXPORT void jp_rwlock_unlock(jp_rwlock_t *rw)
{
	/*
	 * relaxed: WHOLD is set only while a writer holds the lock, and then
	 * no reader does; the holder reads what it (or, for a reader, the
	 * writer whose unlock it acquired) stored.
	 */
	bool writer = atomic_load_explicit(wticket_of(rw), memory_order_relaxed) & WHOLD;

	if (jp_likely(!checked())) {
		if (writer)
			wr_release(rw);
		else
			rd_depart(rw);
		return;
	}
	unlock_checked(rw, writer, __builtin_return_address(0));
}
