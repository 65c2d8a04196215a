/*
 * jpsync/hammer.h - the race-forcing test harness.
 *
 * jp_hammer() starts a number of threads, holds every one of them at a single
 * gate and releases them together, within microseconds, so that they reach
 * the code under test in the same instant; jp_hammer_rounds() also has them
 * meet again every few iterations.  A race that happens once in a million natural runs
 * happens on almost every run.  It is what libjpsync's own stress tests use.
 *
 * Vocabulary: a "thread index" runs from 0 to threads - 1; an "iteration"
 * from 0 to iters - 1.  The body is called once for each pair.
 */
#ifndef JPSYNC_HAMMER_H
#define JPSYNC_HAMMER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*jp_hammer_fn)(void *ctx, unsigned thread, uint64_t iter);

/*
 * Run body(ctx, t, i) for every t < threads and i < iters, each thread
 * running its iterations in order, all threads released at once.  threads 0
 * means jp_hw_threads().  Returns 0, EINVAL (body is NULL), or the errno
 * value of a thread that could not be started (after joining the others,
 * which then run no iteration).
 */
int jp_hammer(unsigned threads, uint64_t iters, jp_hammer_fn body, void *ctx);

/*
 * The same, and every `round` iterations the threads meet again and are
 * released together, so that a short body collides with the other threads
 * over and over rather than only at the start: each thread calls the body
 * for iterations 0 .. round - 1, waits until every thread has, goes on with
 * round .. 2 round - 1, and so on.  round 0 means no meeting after the start
 * (jp_hammer).  Added in libjpsync 1.1 (JPSYNC_1.1).
 */
int jp_hammer_rounds(unsigned threads, uint64_t iters, uint64_t round,
		     jp_hammer_fn body, void *ctx);

/* The number of online CPUs, or 4 when it cannot be told. */
unsigned jp_hw_threads(void);

#ifdef __cplusplus
}
#endif

#endif /* JPSYNC_HAMMER_H */
