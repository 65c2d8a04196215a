/* hello.c: jp_alloc, a jp_mutex and a jp_mpmc queue (README, "A C example"). */
#include <jpsync.h>
#include <pthread.h>
#include <stdio.h>

static jp_mpmc_t *q;                        /* a queue of pointers */
static jp_mutex_t lock = JP_MUTEX_INIT;
static long sum;

static void *worker(void *arg) {
	long *n;
	while (jp_mpmc_pop(q, &n, NULL) == 0) { /* NULL: no deadline; EPIPE: closed */
		jp_mutex_lock(&lock);
		sum += *n;
		jp_mutex_unlock(&lock);
		jp_free(n);                         /* freed by another thread: fine */
	}
	return arg;
}

int main(void) {
	pthread_t t[2];
	q = jp_mpmc_create(64, sizeof(long *));
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (long i = 1; i <= 1000; i++) {
		long *n = jp_alloc(sizeof *n);      /* jpsync's allocator */
		*n = i;
		jp_mpmc_push(q, &n, NULL);
	}
	jp_mpmc_close(q);                       /* the workers drain it, then stop */
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	jp_mpmc_destroy(q);
	printf("sum %ld\n", sum);               /* sum 500500 */
	return 0;
}
