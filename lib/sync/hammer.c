/*
 * hammer.c - the race-forcing harness.
 *
 * Every thread is created first and sleeps at the "exist" gate until the
 * creating thread has made them all; then they meet at the start gate, and
 * the last one to arrive there opens it, so that all of them run the body
 * from the same instant (the harness of seeds/000).  With rounds, the
 * threads meet at a gate again every `round` iterations, so that a short
 * body collides over and over instead of once at the start.
 *
 * Sleeping until all exist matters on a busy machine: a thread that spun
 * while the others were being created and scheduled (milliseconds when
 * other programs hold the CPUs) would have spent its time slice by the
 * time the last one came, and be preempted just as the gate opened; woken
 * together, they spin only for the spread of their wake-ups.
 *
 * A gate is waited at by spinning on its word, so that a waiter leaves
 * within a cache-line transfer of the opening (parking in the kernel and
 * being woken costs tens of microseconds to milliseconds per thread, which
 * is longer than most bodies run).  Spinning is bounded twice, so that 300
 * threads on 2 CPUs still start and do not starve the thread creating them:
 *   - at most one thread fewer than there are CPUs spins at a time (one at
 *     least); the others park at once (the parking protocol of park.h on
 *     the gate's word, counted in `sleepers`).  When there are more threads
 *     than CPUs, the ones that cannot be running anyway are the ones asleep;
 *   - a spinner parks after JP_HAMMER_SPIN_NS (the start) or
 *     JP_HAMMER_ROUND_SPIN_NS (a round), when the others are slow to come.
 * Under valgrind, which runs one thread at a time, nobody spins.
 *
 * Each thread is bound to one CPU of the caller's affinity mask, thread i
 * to the (i mod n)-th, from its creation: left to itself, the scheduler of
 * a busy machine often queues a new thread on the CPU where another one is
 * spinning, and then the two run one after the other, never at once.
 */
#include "base/jp_internal.h"	/* config.h: _GNU_SOURCE, for pthread_attr_setaffinity_np */
#include "base/os.h"
#include "base/park.h"

#include <jpsync/hammer.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

/* How long a thread spins at the start gate, and at a round's. */
#define JP_HAMMER_SPIN_NS	(20 * 1000 * 1000)
#define JP_HAMMER_ROUND_SPIN_NS	(1000 * 1000)

struct gate {
	_Atomic uint32_t word;		/* generation: moves when the gate opens */
	_Atomic uint32_t arrived;	/* threads at the gate, this generation */
	_Atomic uint32_t sleepers;	/* threads parked on word */
};

struct hammer_run {
	struct gate exist;		/* opened by jp_hammer_rounds, once */
	struct gate start;
	struct gate round;
	_Alignas(JP_CACHELINE) _Atomic uint32_t spinners;	/* threads spinning */
	_Atomic bool aborted;		/* a thread could not be started */
	unsigned threads;
	unsigned max_spinners;
	uint64_t iters, per_round;
	jp_hammer_fn body;
	void *ctx;
};

struct hammer_thread {
	struct hammer_run *run;
	unsigned index;
	pthread_t tid;
};

static void gate_init(struct gate *g)
{
	atomic_init(&g->word, 0);
	atomic_init(&g->arrived, 0);
	atomic_init(&g->sleepers, 0);
	JP_BENIGN_RACE(g, sizeof *g, "jp_hammer gate (atomics)");
}

/* Open g (its generation was gen): every thread waiting there leaves. */
static void gate_open(struct gate *g, uint32_t gen)
{
	JP_HB_RELEASE(g);
	/* seq_cst: before the load of sleepers (park.h's pairing). */
	atomic_store(&g->word, gen + 1);
	if (atomic_load(&g->sleepers) != 0)
		jp__park_wake(&g->word, INT_MAX);
}

/* Wait until g's word is no longer gen: spin if a spinner's place is free
 * (for at most spin_ns; 0: never spin), else park. */
static void gate_wait(struct hammer_run *run, struct gate *g, uint32_t gen, uint64_t spin_ns)
{
	/* relaxed, all: a place among the spinners is a hint, not a lock. */
	if (spin_ns != 0 &&
	    atomic_fetch_add_explicit(&run->spinners, 1, memory_order_relaxed) < run->max_spinners) {
		uint64_t t0 = 0;

		for (unsigned i = 1;; i++) {
			/* acquire: what the opener did before opening. */
			if (atomic_load_explicit(&g->word, memory_order_acquire) != gen) {
				atomic_fetch_sub_explicit(&run->spinners, 1, memory_order_relaxed);
				JP_HB_ACQUIRE(g);
				return;
			}
			jp_cpu_relax();
			if ((i & 1023) == 0) {
				uint64_t now = jp__os_now_ns();

				if (t0 == 0)
					t0 = now;
				else if (now - t0 > spin_ns)
					break;
			}
		}
	}
	if (spin_ns != 0)
		atomic_fetch_sub_explicit(&run->spinners, 1, memory_order_relaxed);
	jp__park_register(&g->sleepers);
	while (atomic_load(&g->word) == gen)
		jp__park_wait(&g->word, gen, NULL);
	jp__park_leave(&g->sleepers);
	JP_HB_ACQUIRE(g);
}

/*
 * Arrive at g, one of n, at its generation gen (each thread counts the
 * openings it passed, so it needs no read that could see a later one); the
 * last to arrive opens it.
 */
static void gate_pass(struct hammer_run *run, struct gate *g, uint32_t gen, unsigned n,
		      uint64_t spin_ns)
{
	JP_HB_RELEASE(g);
	if (atomic_fetch_add(&g->arrived, 1) + 1 == n) {
		/* Reset before opening: a thread that leaves arrives at the
		 * next generation only after it has seen the opening. */
		atomic_store_explicit(&g->arrived, 0, memory_order_relaxed);
		gate_open(g, gen);
		JP_HB_ACQUIRE(g);	/* the others' arrivals, as for a waiter */
		return;
	}
	gate_wait(run, g, gen, spin_ns);
}

static void *hammer_main(void *arg)
{
	struct hammer_thread *t = arg;
	struct hammer_run *run = t->run;
	uint64_t round = run->per_round;
	uint32_t gen = 0;

	/* Asleep until every thread exists (the top); then the start, which
	 * opens once: generation 0. */
	gate_wait(run, &run->exist, 0, 0);
	if (atomic_load_explicit(&run->aborted, memory_order_relaxed))
		return NULL;	/* relaxed: written before the gate opened */
	gate_pass(run, &run->start, 0, run->threads, JP_HAMMER_SPIN_NS);
	for (uint64_t i = 0, next = round; i < run->iters; i++) {
		if (i == next) {
			gate_pass(run, &run->round, gen++, run->threads, JP_HAMMER_ROUND_SPIN_NS);
			next += round;
		}
		run->body(run->ctx, t->index, i);
	}
	return NULL;
}

/* Bind the next thread made with attr to the k-th CPU of allowed. */
static void pin_to(pthread_attr_t *attr, const cpu_set_t *allowed, unsigned k)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (CPU_ISSET(c, allowed) && k-- == 0) {
			CPU_SET(c, &one);
			break;
		}
	}
	pthread_attr_setaffinity_np(attr, sizeof one, &one);	/* a hint: failure is harmless */
}

JP_EXPORT unsigned jp_hw_threads(void)
{
	unsigned n = jp__os_cpu_count();
	return n != 0 ? n : 4;
}

JP_EXPORT int jp_hammer_rounds(unsigned threads, uint64_t iters, uint64_t round,
			       jp_hammer_fn body, void *ctx)
{
	struct hammer_run *run;
	struct hammer_thread *ts;
	unsigned started = 0, cpus = jp__os_cpu_count(), ncpus = 0;
	pthread_attr_t attr;
	cpu_set_t allowed;
	bool pin;
	int err = 0;

	if (body == NULL)
		return EINVAL;
	if (threads == 0)
		threads = jp_hw_threads();
	/*
	 * The run lives on the heap, not on this stack frame: valgrind's drd
	 * drops the annotation of the gates when the block is freed, but
	 * not when a stack frame is reused (it then mistook a later mutex at
	 * the same address for it).
	 */
	if (posix_memalign((void **)&run, JP_CACHELINE, sizeof *run) != 0)
		run = NULL;
	ts = calloc(threads, sizeof *ts);
	if (run == NULL || ts == NULL) {
		free(run);
		free(ts);
		return ENOMEM;
	}
	gate_init(&run->exist);
	gate_init(&run->start);
	gate_init(&run->round);
	atomic_init(&run->spinners, 0);
	atomic_init(&run->aborted, false);
	JP_BENIGN_RACE(&run->spinners, sizeof run->spinners, "jp_hammer spinners (atomic)");
	run->threads = threads;
	run->max_spinners = JP_ON_VALGRIND() || cpus < 2 ? 0 : cpus - 1;
	run->iters = iters;
	run->per_round = round != 0 ? round : UINT64_MAX;
	run->body = body;
	run->ctx = ctx;

	pin = !JP_ON_VALGRIND() && pthread_attr_init(&attr) == 0;
	if (pin && (pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed) != 0 ||
		    (ncpus = (unsigned)CPU_COUNT(&allowed)) < 2)) {
		pthread_attr_destroy(&attr);
		pin = false;
	}
	for (; started < threads; started++) {
		ts[started].run = run;
		ts[started].index = started;
		if (pin)
			pin_to(&attr, &allowed, started % ncpus);
		err = pthread_create(&ts[started].tid, pin ? &attr : NULL, hammer_main,
				     &ts[started]);
		if (err != 0)
			break;
	}
	if (pin)
		pthread_attr_destroy(&attr);
	/* relaxed: the opening publishes it. */
	atomic_store_explicit(&run->aborted, err != 0, memory_order_relaxed);
	gate_open(&run->exist, 0);
	for (unsigned i = 0; i < started; i++)
		pthread_join(ts[i].tid, NULL);
	JP_HB_FORGET(&run->exist);
	JP_HB_FORGET(&run->start);
	JP_HB_FORGET(&run->round);
	free(run);
	free(ts);
	return err;
}

JP_EXPORT int jp_hammer(unsigned threads, uint64_t iters, jp_hammer_fn body, void *ctx)
{
	return jp_hammer_rounds(threads, iters, 0, body, ctx);
}
