/*
 * queue_wait.c - parking blocked queue callers (on a channel of park.h),
 * and the mapping of rings.  See queue_internal.h for the protocol.
 */
#include "queue_internal.h"

#include <pthread.h>
#include <sched.h>

/* Tries before parking: long enough to catch a partner that is running on
 * another core, short enough not to burn a time slice on a shared machine. */
#define JP__Q_SPIN 64
/* Then a few yields: when the partner shares our core (more threads than
 * cores), it gets to run and make room without a sleep and a wake-up. */
#define JP__Q_YIELDS 8

int jp__qblock(void *q, struct jp__park_chan *c, jp__qtry_fn try_op,
	       jp__qsleep_fn may_sleep, void *elem,
	       const struct timespec *deadline, bool asym)
{
	int r;

	/* The caller made the one attempt a past deadline allows (park.h). */
	if (jp__deadline_passed(deadline))
		return ETIMEDOUT;
	for (;;) {
		uint32_t s;
		bool sleep;
		int w = 0;

		/* Spin first, and again after every wake-up: a partner running
		 * on another core usually makes room within a few tries. */
		for (unsigned i = 0; i < JP__Q_SPIN + JP__Q_YIELDS; i++) {
			r = try_op(q, elem);
			if (r != EAGAIN)
				return r;
			if (i < JP__Q_SPIN)
				jp_cpu_relax();
			else
				sched_yield();
		}
		/* The waiter's half of park.h's pairing; the registration is
		 * taken back by the waker (jp__park_chan_wake). */
		s = jp__park_enter(&c->waiters, &c->seq);	/* BEFORE the re-check */
		if (asym)
			jp__q_slow_fence();	/* see queue_internal.h */
		sleep = may_sleep(q);		/* the re-check, seq_cst loads */
		if (sleep)
			w = jp__park_wait(&c->seq, s, deadline);
		if (w == ETIMEDOUT) {
			/* One last try: an element may have come with the deadline. */
			r = try_op(q, elem);
			return r == EAGAIN ? ETIMEDOUT : r;
		}
		/*
		 * Not asleep: the re-check saw room, an element, a close or
		 * an index that moved (a slot claimed and not yet finished
		 * is a reason to sleep: its finish wakes us, mpring.h).
		 * The spin above tries again; it does not look at the clock.
		 */
		if (!sleep && jp__deadline_passed(deadline)) {
			r = try_op(q, elem);
			return r == EAGAIN ? ETIMEDOUT : r;
		}
	}
}

void *jp__qmap(size_t hdr, size_t capacity, size_t elem_size,
	       size_t slot_overhead, size_t align, size_t *cap,
	       size_t *stride, size_t *bytes)
{
	size_t c = 1, s, total, page = jp__os_page_size();
	void *m;
	int r;

	/* Positions are 63-bit; keep the capacity far below that, and where
	 * size_t has 32 bits, low enough to round up to a power of two. */
	if (capacity == 0 || elem_size == 0 || JP_SIZE_ABOVE_POW2(capacity, 40) ||
	    capacity > SIZE_MAX / 2 + 1 || elem_size > SIZE_MAX / 4) {
		errno = EINVAL;
		return NULL;
	}
	while (c < capacity)
		c <<= 1;
	s = (slot_overhead + elem_size + align - 1) & ~(align - 1);
	hdr = (hdr + JP_CACHELINE - 1) & ~(size_t)(JP_CACHELINE - 1);
	if (s > (SIZE_MAX - hdr - page) / c) {
		errno = EINVAL;
		return NULL;
	}
	total = (hdr + s * c + page - 1) & ~(page - 1);
	/*
	 * The ring is demand-paged and nothing writes its slots before they
	 * are used, so creation is quick at any size; but a ring larger than
	 * the machine's memory could never be filled: refuse it now rather
	 * than let the OOM killer decide later.
	 */
	if (total > jp__os_mem_bytes()) {
		errno = ENOMEM;
		return NULL;
	}
	r = jp__os_map(&m, total);
	if (r != 0) {
		errno = ENOMEM;
		return NULL;
	}
	*cap = c;
	*stride = s;
	*bytes = total;
	return m;
}

void jp__qunmap(void *q, size_t bytes)
{
	jp__os_unmap(q, bytes);
}
