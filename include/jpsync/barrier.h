/*
 * jpsync/barrier.h - jp_barrier, a reusable thread barrier.
 *
 * A jp_barrier_t makes a fixed number of threads wait for each other: each
 * jp_barrier_wait returns once that many threads have called it, and the
 * barrier is then ready for the next round.  One thread of each round, the
 * last to arrive, is told so (JP_BARRIER_SERIAL_THREAD), as
 * pthread_barrier_wait does.  Everything each thread did before its
 * jp_barrier_wait happens before what every thread does after it returns.
 *
 * Waiters spin briefly and then sleep in the kernel (the library's one
 * parking protocol).  A jp_barrier_t is 32 bytes, 4-byte aligned,
 * statically initialised with JP_BARRIER_INIT(count) or by
 * jp_barrier_init; the reserved words must stay zero.  Size and layout are
 * part of the ABI (libjpsync 1.1); jp_barrier_destroy releases nothing.
 *
 * What may run concurrently (on one barrier):
 *
 *   call                        with jp_barrier_wait       with init/destroy
 *   jp_barrier_wait             yes (count threads a round) no
 *   jp_barrier_init/destroy     no                         no
 *
 * Added in libjpsync 1.1 (JPSYNC_1.1).
 */
#ifndef JPSYNC_BARRIER_H
#define JPSYNC_BARRIER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct jp_barrier {
	uint32_t count;		/* threads per round */
	uint32_t arrived;	/* threads in the current round so far */
	uint32_t round;		/* rounds completed; the futex word */
	uint32_t waiters;	/* threads that may be asleep */
	uint32_t reserved[4];	/* zero */
} jp_barrier_t;
#define JP_BARRIER_INIT(count) { (count), 0, 0, 0, { 0, 0, 0, 0 } }
#define JP_BARRIER_SERIAL_THREAD (-1)
#define JP_BARRIER_COUNT_MAX 2147483647u

/* 0, or EINVAL when count is 0 or above JP_BARRIER_COUNT_MAX. */
int  jp_barrier_init(jp_barrier_t *b, unsigned count);
void jp_barrier_destroy(jp_barrier_t *b);
/* JP_BARRIER_SERIAL_THREAD in one thread of each round, 0 in the others;
 * EINVAL for a barrier whose count is 0 or above JP_BARRIER_COUNT_MAX. */
int  jp_barrier_wait(jp_barrier_t *b);

#ifdef __cplusplus
}
#endif

#endif /* JPSYNC_BARRIER_H */
