/*
 * jpsync/mutex.h - jp_mutex, a futex mutex, and jp_cond, a futex condition
 * variable used with it.
 *
 * Both are one 32-bit word that a caller may place anywhere (statically
 * initialised with JP_MUTEX_INIT / JP_COND_INIT, or with the _init
 * functions).  Their size and layout are part of the ABI: a jp_mutex_t is
 * exactly 4 bytes, a jp_cond_t exactly 4 bytes, and neither needs
 * jp_*_destroy to release anything.
 *
 * Vocabulary: the mutex "word" holds two flags in bytes of their own,
 * locked and some thread may be asleep waiting for it (0: free, never
 * locked or left so by its last unlock; jp_mutex(3)).  The condition
 * variable's "seq" is a counter that every signal and broadcast advances;
 * a waiter sleeps until it moves.
 *
 * What may run concurrently (on one object):
 *
 *   call                      with lock/trylock/timedlock/unlock   with init/destroy
 *   jp_mutex_lock & co.       yes                                  no
 *   jp_mutex_init/destroy     no                                   no
 *   jp_cond_wait/timedwait    yes (each caller holds its mutex)    no
 *   jp_cond_signal/broadcast  yes (with or without the mutex held) no
 *
 * Every deadline is an absolute time on CLOCK_MONOTONIC; NULL waits
 * forever.  Functions returning int return 0 or an errno value and leave
 * errno alone.
 */
#ifndef JPSYNC_MUTEX_H
#define JPSYNC_MUTEX_H

#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct jp_mutex { uint32_t word; } jp_mutex_t;
#define JP_MUTEX_INIT { 0 }

void jp_mutex_init(jp_mutex_t *m);
void jp_mutex_destroy(jp_mutex_t *m);
void jp_mutex_lock(jp_mutex_t *m);
/* 0, or EBUSY when another thread (or this one) holds the mutex. */
int  jp_mutex_trylock(jp_mutex_t *m);
/* 0, ETIMEDOUT once the deadline has passed, EINVAL for a bad deadline. */
int  jp_mutex_timedlock(jp_mutex_t *m, const struct timespec *deadline);
void jp_mutex_unlock(jp_mutex_t *m);

typedef struct jp_cond { uint32_t seq; } jp_cond_t;
#define JP_COND_INIT { 0 }

void jp_cond_init(jp_cond_t *c);
void jp_cond_destroy(jp_cond_t *c);
/* Called with m held; returns with m held.  May wake spuriously: loop. */
int  jp_cond_wait(jp_cond_t *c, jp_mutex_t *m);
/* As jp_cond_wait; ETIMEDOUT once the deadline has passed. */
int  jp_cond_timedwait(jp_cond_t *c, jp_mutex_t *m, const struct timespec *deadline);
void jp_cond_signal(jp_cond_t *c);
void jp_cond_broadcast(jp_cond_t *c);

#ifdef __cplusplus
}
#endif

#endif /* JPSYNC_MUTEX_H */
