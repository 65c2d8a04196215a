/*
 * hammer.c - the race-forcing harness.
 *
 * Every thread is created first and parked on one start word; once all exist
 * the word is set and every thread is woken at once, so they all reach the
 * body in the same instant (the harness of seeds/000).  Threads park in the
 * kernel (futex) rather than spinning, so that creating 300 threads on a
 * 2-core machine is not slowed down by the ones already waiting; after the
 * wake they spin nowhere.
 */
#include "jp_internal.h"
#include "os.h"
#include "park.h"

#include <jpsync/hammer.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

enum { START_WAIT = 0, START_GO = 1, START_ABORT = 2 };

struct hammer_run {
	_Atomic uint32_t start;
	uint64_t iters;
	jp_hammer_fn body;
	void *ctx;
};

struct hammer_thread {
	struct hammer_run *run;
	unsigned index;
	pthread_t tid;
};

static void *hammer_main(void *arg)
{
	struct hammer_thread *t = arg;
	struct hammer_run *run = t->run;
	uint32_t s;

	while ((s = atomic_load_explicit(&run->start, memory_order_acquire)) == START_WAIT)
		jp__park_wait(&run->start, START_WAIT, NULL);
	/* The releasing store and this load order the start for valgrind too. */
	JP_HB_AFTER(&run->start);
	if (s == START_ABORT)
		return NULL;
	for (uint64_t i = 0; i < run->iters; i++)
		run->body(run->ctx, t->index, i);
	return NULL;
}

JP_EXPORT unsigned jp_hw_threads(void)
{
	unsigned n = jp__os_cpu_count();
	return n != 0 ? n : 4;
}

JP_EXPORT int jp_hammer(unsigned threads, uint64_t iters, jp_hammer_fn body, void *ctx)
{
	struct hammer_run *run;
	struct hammer_thread *ts;
	unsigned started = 0;
	int err = 0;

	if (body == NULL)
		return EINVAL;
	if (threads == 0)
		threads = jp_hw_threads();
	/*
	 * The run lives on the heap, not on this stack frame: valgrind's drd
	 * drops the annotation of the start word when the block is freed, but
	 * not when a stack frame is reused (it then mistook a later mutex at
	 * the same address for it).
	 */
	run = calloc(1, sizeof *run);
	ts = calloc(threads, sizeof *ts);
	if (run == NULL || ts == NULL) {
		free(run);
		free(ts);
		return ENOMEM;
	}
	atomic_init(&run->start, START_WAIT);
	run->iters = iters;
	run->body = body;
	run->ctx = ctx;
	JP_BENIGN_RACE(&run->start, sizeof run->start, "jp_hammer start word (atomic)");

	for (; started < threads; started++) {
		ts[started].run = run;
		ts[started].index = started;
		err = pthread_create(&ts[started].tid, NULL, hammer_main, &ts[started]);
		if (err != 0)
			break;
	}
	JP_HB_BEFORE(&run->start);
	atomic_store_explicit(&run->start, err == 0 ? START_GO : START_ABORT,
			      memory_order_release);
	jp__park_wake(&run->start, INT_MAX);
	for (unsigned i = 0; i < started; i++)
		pthread_join(ts[i].tid, NULL);
	JP_HB_FORGET(&run->start);
	free(run);
	free(ts);
	return err;
}
