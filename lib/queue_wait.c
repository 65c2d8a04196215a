/*
 * queue_wait.c - parking blocked queue callers on a futex word, and the
 * mapping of rings.  See queue_internal.h for the protocol.
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

static bool deadline_passed(const struct timespec *deadline)
{
	struct timespec now;

	if (deadline == NULL)
		return false;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > deadline->tv_sec ||
	       (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec);
}

int jp__qblock(void *q, struct jp__qchan *c, jp__qtry_fn try_op,
	       jp__qsleep_fn may_sleep, void *elem,
	       const struct timespec *deadline, bool asym)
{
	int r;

	if (deadline != NULL &&
	    (deadline->tv_nsec < 0 || deadline->tv_nsec >= 1000000000L))
		return EINVAL;
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
		/* seq_cst, both: the waiter's half of the Dekker pair.  The
		 * registration is taken back by the waker (queue_internal.h). */
		atomic_fetch_add(&c->waiters, 1);
		s = atomic_load(&c->seq);	/* read BEFORE the re-check */
		if (asym)
			jp__q_slow_fence();	/* see queue_internal.h */
		sleep = may_sleep(q);		/* the re-check, seq_cst loads */
		if (sleep)
			w = jp__futex_wait(&c->seq, s, deadline);
		if (w == ETIMEDOUT) {
			/* One last try: an element may have come with the deadline. */
			r = try_op(q, elem);
			return r == EAGAIN ? ETIMEDOUT : r;
		}
		if (w != 0)
			return w;
		if (!sleep) {
			/*
			 * Another caller has claimed a slot and not yet
			 * finished copying: it will, without telling us, so
			 * give it the CPU rather than sleep.
			 */
			if (deadline_passed(deadline)) {
				r = try_op(q, elem);
				return r == EAGAIN ? ETIMEDOUT : r;
			}
			sched_yield();
		}
	}
}

bool jp__q_asym;
bool jp__q_on_valgrind;

/* At load time, before any thread exists: see arena.c. */
__attribute__((constructor)) static void asym_init(void)
{
	/*
	 * Under valgrind the threads run one at a time and the tools do not
	 * know membarrier; ThreadSanitizer does not model it.  Use fences.
	 */
	jp__q_on_valgrind = JP_ON_VALGRIND();
#ifndef JP_TSAN
	if (!jp__q_on_valgrind && jp__os_membarrier_init() == 0)
		jp__q_asym = true;
#endif
}


void jp__qchan_init(struct jp__qchan *c)
{
	atomic_init(&c->seq, 0);
	atomic_init(&c->waiters, 0);
	JP_BENIGN_RACE(&c->seq, sizeof c->seq, "futex word, accessed atomically");
	JP_BENIGN_RACE(&c->waiters, sizeof c->waiters, "waiter count, accessed atomically");
}

void jp__qchan_wake_all(struct jp__qchan *c)
{
	atomic_fetch_add(&c->seq, 1);
	jp__futex_wake(&c->seq, 0x7fffffff);
}

void *jp__qmap(size_t hdr, size_t capacity, size_t elem_size,
	       size_t slot_overhead, size_t align, size_t *cap,
	       size_t *stride, size_t *bytes)
{
	size_t c = 1, s, total, page = jp__os_page_size();
	void *m;
	int r;

	/* Positions are 63-bit; keep the capacity far below that. */
	if (capacity == 0 || elem_size == 0 || capacity > ((size_t)1 << 40) ||
	    elem_size > SIZE_MAX / 4) {
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
