/*
 * jpsync/sem.h - jp_sem, a counting semaphore.
 *
 * A jp_sem_t holds a count: jp_sem_post adds one, jp_sem_wait takes one,
 * waiting while it is zero.  The count never exceeds JP_SEM_VALUE_MAX: a
 * post that would pass it fails with EOVERFLOW and changes nothing, so an
 * unbalanced producer is told, not wrapped around.
 *
 * Waiters spin briefly and then sleep in the kernel (the library's one
 * parking protocol).  A jp_sem_t is 16 bytes, 4-byte aligned, statically
 * initialised with JP_SEM_INIT(value) or by jp_sem_init; the reserved
 * words must stay zero.  Size and layout are part of the ABI (libjpsync
 * 1.1); jp_sem_destroy releases nothing.
 *
 * What may run concurrently (on one semaphore):
 *
 *   call                                  with post/wait/...   with init/destroy
 *   jp_sem_post/wait/trywait/timedwait     yes                  no
 *   jp_sem_value                           yes                  no
 *   jp_sem_init/destroy                    no                   no
 *
 * Every deadline is an absolute time on CLOCK_MONOTONIC (jp_deadline_after
 * makes one); NULL waits forever.  Functions returning int return 0 or an
 * errno value and leave errno alone.  Added in libjpsync 1.1 (JPSYNC_1.1).
 */
#ifndef JPSYNC_SEM_H
#define JPSYNC_SEM_H

#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct jp_sem {
	uint32_t value;		/* the count; the futex word */
	uint32_t waiters;	/* threads that may be asleep */
	uint32_t reserved[2];	/* zero */
} jp_sem_t;
#define JP_SEM_INIT(value) { (value), 0, { 0, 0 } }
#define JP_SEM_VALUE_MAX 2147483647u

/* 0, or EINVAL when value > JP_SEM_VALUE_MAX. */
int  jp_sem_init(jp_sem_t *s, unsigned value);
void jp_sem_destroy(jp_sem_t *s);
/* 0, or EOVERFLOW when the count is JP_SEM_VALUE_MAX (it is unchanged). */
int  jp_sem_post(jp_sem_t *s);
void jp_sem_wait(jp_sem_t *s);
/* 0, or EAGAIN when the count is zero. */
int  jp_sem_trywait(jp_sem_t *s);
/* 0, ETIMEDOUT once the deadline has passed, EINVAL for a bad deadline. */
int  jp_sem_timedwait(jp_sem_t *s, const struct timespec *deadline);
/* The count at some instant during the call. */
unsigned jp_sem_value(const jp_sem_t *s);

#ifdef __cplusplus
}
#endif

#endif /* JPSYNC_SEM_H */
