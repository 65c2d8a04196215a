/*
 * jpsync/wait.h - wait until a value in memory changes, and wake the
 * threads waiting on it (what C++20 calls atomic wait/notify).
 *
 * jp_wait() sleeps while the 1-, 2-, 4- or 8-byte object at addr still
 * holds the value at expected.  An aligned 32-bit object is its own futex;
 * any other object sleeps on a "proxy state" chosen by hashing its address
 * into a table of cache-line-sized states.  Each state counts its waiters,
 * so jp_notify_one() and jp_notify_all() with nobody waiting make no system
 * call.  Objects whose addresses share a state may see spurious wake-ups,
 * never lost ones.
 *
 * What may run concurrently: every call with every other, on the same or
 * on different objects.  The object itself must be written with atomic
 * stores (C11 atomics or __atomic builtins) by the threads that change it.
 *
 * The deadline is an absolute time on CLOCK_MONOTONIC; NULL waits forever.
 */
#ifndef JPSYNC_WAIT_H
#define JPSYNC_WAIT_H

#include <stddef.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * 0 (the value changed, or a wake-up that may be spurious: re-check the
 * value), ETIMEDOUT, or EINVAL (size not 1, 2, 4 or 8; addr not aligned to
 * size; addr or expected NULL; deadline's tv_nsec out of range).
 */
int  jp_wait(const void *addr, const void *expected, size_t size,
	     const struct timespec *deadline);
void jp_notify_one(const void *addr);
void jp_notify_all(const void *addr);

#ifdef __cplusplus
}
#endif

#endif /* JPSYNC_WAIT_H */
