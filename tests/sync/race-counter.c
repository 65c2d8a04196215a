/*
 * race-counter.c - the program tests/sync/check-race-detectors.sh hands to
 * helgrind, drd and ThreadSanitizer.  Two threads add to a plain counter
 * and pass a message through a jp_cond.  Built with -DLOCKED the counter
 * is under a jp_mutex and every detector must stay silent; built without,
 * the counter is a deliberate data race that every detector must report.
 */
#include <jpsync/mutex.h>
#include <pthread.h>
#include <stdio.h>

#define ITERS 2000

static jp_mutex_t m = JP_MUTEX_INIT;
static jp_cond_t c = JP_COND_INIT;
static long counter;		/* protected by m only with -DLOCKED */
static long message;		/* protected by m */
static int have_message;	/* protected by m */

static void *work(void *arg)
{
	(void)arg;
	for (int i = 0; i < ITERS; i++) {
#ifdef LOCKED
		jp_mutex_lock(&m);
		counter++;
		jp_mutex_unlock(&m);
#else
		counter++;
#endif
	}
	return NULL;
}

static void *consumer(void *arg)
{
	long *got = arg;

	jp_mutex_lock(&m);
	while (!have_message)
		jp_cond_wait(&c, &m);
	*got = message;
	jp_mutex_unlock(&m);
	return NULL;
}

int main(void)
{
	pthread_t t[3];
	long got = 0;

	pthread_create(&t[0], NULL, work, NULL);
	pthread_create(&t[1], NULL, work, NULL);
	pthread_create(&t[2], NULL, consumer, &got);
	jp_mutex_lock(&m);
	message = 42;
	have_message = 1;
	jp_cond_signal(&c);
	jp_mutex_unlock(&m);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("counter %ld of %d, message %ld\n", counter, 2 * ITERS, got);
	return got == 42 ? 0 : 1;
}
