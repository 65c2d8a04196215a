/*
 * race-rwlock.c - the 1.1 primitives for tests/sync/check-race-detectors.sh.
 * Plain memory handed between threads by a jp_rwlock (writers write a
 * table, readers read it), a jp_sem (a producer fills a slot, a consumer
 * reads it) and a jp_barrier (each thread writes its cell, all read every
 * cell after the barrier).  Built with -DLOCKED every detector must stay
 * silent.  Built without, the readers also write the table under their
 * read lock: a data race between two readers, which every detector must
 * report (the rwlock orders readers after writers, never with each other).
 */
#include <jpsync/barrier.h>
#include <jpsync/rwlock.h>
#include <jpsync/sem.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>

#define ITERS 500
#define N 3

static jp_rwlock_t rw = JP_RWLOCK_INIT;
static long table[4];			/* under rw */
static jp_sem_t full = JP_SEM_INIT(0), empty = JP_SEM_INIT(1);
static long slot;			/* handed over by the semaphores */
static jp_barrier_t bar = JP_BARRIER_INIT(N);
static long cell[N];			/* ordered by the barrier */

#ifndef LOCKED
/*
 * In its first rounds each reader waits, under its read lock, until the
 * other has written too: the two writes then overlap for certain.  (Left
 * to the scheduler, a writer's lock between them ordered the two in some
 * runs, and ThreadSanitizer rightly saw no race.)  Relaxed flags order
 * nothing for the detectors; the wait is bounded, for a writer-preferring
 * lock may keep the other reader out.
 */
static _Atomic int here[N - 1];

static void meet(long me, int round)
{
	atomic_store_explicit(&here[me], round + 1, memory_order_relaxed);
	for (int k = 0; k < 2000 &&
	     atomic_load_explicit(&here[1 - me], memory_order_relaxed) < round + 1; k++)
		sched_yield();
}
#endif

static void *reader(void *arg)
{
	long sum = 0, me = (long)arg;

	for (int i = 0; i < ITERS; i++) {
		jp_rwlock_rdlock(&rw);
		sum += table[i % 4];
#ifndef LOCKED
		table[0] = sum;		/* the deliberate race */
		if (i < 20)
			meet(me, i);
#endif
		jp_rwlock_unlock(&rw);
	}
	/* Three threads meet at the barrier: every cell written before. */
	cell[me] = sum;
	jp_barrier_wait(&bar);
	for (int i = 0; i < N; i++)
		sum += cell[i];
	jp_barrier_wait(&bar);
	return (void *)sum;
}

static void *producer(void *arg)
{
	(void)arg;
	for (long i = 1; i <= ITERS; i++) {
		jp_sem_wait(&empty);
		slot = i;
		jp_sem_post(&full);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[N + 1];
	long got = 0;

	for (long i = 0; i < N - 1; i++)
		pthread_create(&t[i], NULL, reader, (void *)i);
	pthread_create(&t[N], NULL, producer, NULL);
	for (int i = 0; i < ITERS; i++) {
		jp_rwlock_wrlock(&rw);
		table[i % 4]++;
		jp_rwlock_unlock(&rw);
		jp_sem_wait(&full);
		got += slot;
		jp_sem_post(&empty);
	}
	cell[N - 1] = got;
	jp_barrier_wait(&bar);
	for (int i = 0; i < N; i++)
		got += cell[i] > 0;
	jp_barrier_wait(&bar);
	for (int i = 0; i < N - 1; i++)
		pthread_join(t[i], NULL);
	pthread_join(t[N], NULL);
	printf("got %ld\n", got);
	return 0;
}
