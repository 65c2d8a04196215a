/*
 * jpsync/deadline.h - absolute deadlines for the timed calls.
 *
 * Every timed call of libjpsync (jp_mutex_timedlock, jp_cond_timedwait,
 * jp_wait, the queues' push and pop) takes an absolute deadline on
 * CLOCK_MONOTONIC, so that a wait interrupted and resumed, or split into
 * several waits, still ends at the same instant.  jp_deadline_after builds
 * one from a relative timeout.  Added in libjpsync 1.1 (JPSYNC_1.1).
 */
#ifndef JPSYNC_DEADLINE_H
#define JPSYNC_DEADLINE_H

#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Set *out to CLOCK_MONOTONIC now plus ns nanoseconds.  A sum that would
 * not fit in a struct timespec is clamped to the latest time it can hold
 * (a wait that never times out in practice).  Returns 0, or EINVAL when
 * out is NULL.
 */
int jp_deadline_after(struct timespec *out, uint64_t ns);

#ifdef __cplusplus
}
#endif

#endif /* JPSYNC_DEADLINE_H */
