/*
 * jpsync/rwlock.h - jp_rwlock, a phase-fair reader-writer lock.
 *
 * Many readers or one writer.  Neither side starves the other: a writer
 * that arrives stops new readers from entering and waits only for the
 * readers already inside; readers that arrive while a writer is present
 * wait only for that one writer, and enter before the next one.  Writers
 * among themselves queue on a jp_mutex-like word.  Waiters spin briefly,
 * then sleep in the kernel (the library's one parking protocol).
 *
 * A jp_rwlock_t is 32 bytes, 4-byte aligned, statically initialised with
 * JP_RWLOCK_INIT (all zero) or by jp_rwlock_init, and holds no other
 * resource.  Its size and layout are part of the ABI (libjpsync 1.1): four
 * 32-bit words in use and four reserved, which must stay zero.
 *
 * Vocabulary: "rin" counts readers that arrived (in units of 0x1000) and
 * carries the present writer's phase; "rout" counts readers that left;
 * "wlock" is the writers' lock word; "wticket" is the present writer's
 * view of rin.  A thread must not read-lock a lock it already holds: with
 * a writer waiting in between, that deadlocks (lock-order checking reports
 * it).
 *
 * What may run concurrently (on one lock):
 *
 *   call                            with lock/try/timed/unlock   with init/destroy
 *   jp_rwlock_rdlock & co.          yes                          no
 *   jp_rwlock_wrlock & co.          yes                          no
 *   jp_rwlock_unlock                yes (by a holder)            no
 *   jp_rwlock_init/destroy          no                           no
 *
 * Every deadline is an absolute time on CLOCK_MONOTONIC (jp_deadline_after
 * makes one); NULL waits forever.  Functions returning int return 0 or an
 * errno value and leave errno alone.  Added in libjpsync 1.1 (JPSYNC_1.1).
 */
#ifndef JPSYNC_RWLOCK_H
#define JPSYNC_RWLOCK_H

#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct jp_rwlock {
	uint32_t rin;		/* readers arrived, and the writer's phase */
	uint32_t rout;		/* readers departed */
	uint32_t wlock;		/* the writers' lock word */
	uint32_t wticket;	/* the present writer's ticket */
	uint32_t reserved[4];	/* zero */
} jp_rwlock_t;
#define JP_RWLOCK_INIT { 0, 0, 0, 0, { 0, 0, 0, 0 } }

/* The most read locks held at once; one more is EAGAIN. */
#define JP_RWLOCK_READERS_MAX 524287u

void jp_rwlock_init(jp_rwlock_t *rw);
void jp_rwlock_destroy(jp_rwlock_t *rw);
/* 0, or EAGAIN when JP_RWLOCK_READERS_MAX read locks are held. */
int  jp_rwlock_rdlock(jp_rwlock_t *rw);
/* 0, EBUSY when a writer holds or waits, EAGAIN as jp_rwlock_rdlock. */
int  jp_rwlock_tryrdlock(jp_rwlock_t *rw);
/* 0, ETIMEDOUT, EINVAL for a bad deadline, EAGAIN as jp_rwlock_rdlock. */
int  jp_rwlock_timedrdlock(jp_rwlock_t *rw, const struct timespec *deadline);
void jp_rwlock_wrlock(jp_rwlock_t *rw);
/* 0, or EBUSY when another writer or any reader holds it. */
int  jp_rwlock_trywrlock(jp_rwlock_t *rw);
/* 0, ETIMEDOUT once the deadline has passed, EINVAL for a bad deadline. */
int  jp_rwlock_timedwrlock(jp_rwlock_t *rw, const struct timespec *deadline);
/* Releases the read or write lock the caller holds. */
void jp_rwlock_unlock(jp_rwlock_t *rw);

#ifdef __cplusplus
}
#endif

#endif /* JPSYNC_RWLOCK_H */
