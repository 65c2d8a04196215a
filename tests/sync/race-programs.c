/*
 * race-programs.c - programs a user writes with the library, handed to the
 * race detectors by tests/sync/check-race-detectors.sh: ThreadSanitizer with
 * this program built with -fsanitize=thread and the library as built (not
 * instrumented, as a distribution ships it), helgrind and drd with both as
 * built.  Every correct program must be reported clean, every racy one
 * must be reported.
 *
 *   race-programs NAME [N]
 *
 * Correct: workqueue (jp_mutex + jp_cond), spsc (a pipeline with deadlines,
 * 40-byte elements), mpsc (a logger: 2 producers of 64-byte messages),
 * mpmc (fan-out with bulk calls), pool (a thread-cached pool, objects put
 * back on another thread), arena (jp_arena_local per request), epoch (a
 * lock-free stack whose popped nodes are retired), wait (jp_wait/notify
 * guarding plain data), rounds (jp_hammer_rounds: a round reads what the
 * others wrote in the round before), alloc (jp_alloc blocks freed on
 * another thread and reused by a third), heap-reuse (a thread that
 * starts allocating only after another has exited: it gets the exited
 * thread's cache from the allocator's list, with no synchronisation of
 * the program's own between the two).  Racy: racy-counter (plain++
 * under jp_hammer), racy-queue (a producer writes a message after pushing
 * it), racy-alloc (two threads write one jp_alloc block).  N scales the work (default 1000 items).  Exit 0 when the program
 * computed the right answer.
 */
#include <jpsync.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The epoch program's stack publishes a node with a CAS. */
#include "publish.h"

static long n_items = 1000;

static int fail(const char *what)
{
	fprintf(stderr, "race-programs: %s\n", what);
	return 1;
}

static void start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	if (pthread_create(t, NULL, fn, arg) != 0) {
		fprintf(stderr, "race-programs: pthread_create failed\n");
		exit(2);
	}
}

/* ---- workqueue: a mutex + condition variable work queue -------------------- */

struct job {
	struct job *next;
	long input, output;
};

static jp_mutex_t wq_lock = JP_MUTEX_INIT;
static jp_cond_t wq_cond = JP_COND_INIT;
static struct job *wq_head;
static int wq_done;
static long wq_sum;		/* under wq_lock */

static void *wq_worker(void *arg)
{
	(void)arg;
	for (;;) {
		struct job *j;

		jp_mutex_lock(&wq_lock);
		while (wq_head == NULL && !wq_done)
			jp_cond_wait(&wq_cond, &wq_lock);
		j = wq_head;
		if (j != NULL)
			wq_head = j->next;
		jp_mutex_unlock(&wq_lock);
		if (j == NULL)
			return NULL;
		j->output = j->input * 2;	/* outside the lock: the job is ours */
		jp_mutex_lock(&wq_lock);
		wq_sum += j->output;
		jp_mutex_unlock(&wq_lock);
		free(j);
	}
}

static int run_workqueue(void)
{
	pthread_t t[3];
	long want = 0;

	for (int i = 0; i < 3; i++)
		start(&t[i], wq_worker, NULL);
	for (long i = 0; i < n_items; i++) {
		struct job *j = malloc(sizeof *j);

		j->input = i;		/* written before the lock publishes it */
		want += 2 * i;
		jp_mutex_lock(&wq_lock);
		j->next = wq_head;
		wq_head = j;
		jp_cond_signal(&wq_cond);
		jp_mutex_unlock(&wq_lock);
	}
	jp_mutex_lock(&wq_lock);
	wq_done = 1;
	jp_cond_broadcast(&wq_cond);
	jp_mutex_unlock(&wq_lock);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	return wq_sum == want ? 0 : fail("workqueue: wrong sum");
}

/* ---- spsc: a pipeline with deadlines, elements by value --------------------- */

struct sample {
	long seq;
	double value[4];
};

static jp_spsc_t *pipe_q;

static void *spsc_producer(void *arg)
{
	(void)arg;
	for (long i = 0; i < n_items; i++) {
		struct sample s = { i, { (double)i, 0, 0, 0 } };
		struct timespec d;

		do
			jp_deadline_after(&d, 10 * 1000 * 1000);
		while (jp_spsc_push(pipe_q, &s, &d) == ETIMEDOUT);
	}
	jp_spsc_close(pipe_q);
	return NULL;
}

static int run_spsc(void)
{
	pthread_t t;
	struct sample s;
	long next = 0;
	int r;

	pipe_q = jp_spsc_create(16, sizeof(struct sample));
	start(&t, spsc_producer, NULL);
	for (;;) {
		struct timespec d;

		jp_deadline_after(&d, 10 * 1000 * 1000);
		r = jp_spsc_pop(pipe_q, &s, &d);
		if (r == ETIMEDOUT)
			continue;
		if (r != 0)
			break;
		if (s.seq != next++ || s.value[0] != (double)s.seq)
			return fail("spsc: out of order");
	}
	pthread_join(t, NULL);
	jp_spsc_destroy(pipe_q);
	return r == EPIPE && next == n_items ? 0 : fail("spsc: lost elements");
}

/* ---- mpsc: a logger, two producers of 64-byte messages ------------------- */

struct message {
	int producer;
	long seq;
	char text[48];
};

static jp_mpsc_t *log_q;

static void *mpsc_producer(void *arg)
{
	int id = (int)(long)arg;

	for (long i = 0; i < n_items; i++) {
		struct message m;

		m.producer = id;
		m.seq = i;
		snprintf(m.text, sizeof m.text, "message %ld of %d", i, id);
		if (jp_mpsc_push(log_q, &m, NULL) != 0)
			return NULL;
	}
	return NULL;
}

static int run_mpsc(void)
{
	pthread_t t[2];
	long next[2] = { 0, 0 };
	struct message m;

	log_q = jp_mpsc_create(64, sizeof(struct message));
	for (long i = 0; i < 2; i++)
		start(&t[i], mpsc_producer, (void *)i);
	for (long got = 0; got < 2 * n_items; got++) {
		char want[48];

		if (jp_mpsc_pop(log_q, &m, NULL) != 0)
			return fail("mpsc: pop failed");
		snprintf(want, sizeof want, "message %ld of %d", m.seq, m.producer);
		if (m.seq != next[m.producer]++ || strcmp(m.text, want) != 0)
			return fail("mpsc: wrong message");
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	jp_mpsc_destroy(log_q);
	return 0;
}

/* ---- mpmc: fan-out with bulk calls ---------------------------------------- */

struct work {
	long id;
	long *result;		/* the consumer writes it, main reads it */
};

static jp_mpmc_t *fan_q;
static _Atomic long fan_sum;

static void *mpmc_producer(void *arg)
{
	long *results = arg;
	struct work batch[8];

	for (long i = 0; i < n_items; i += 8) {
		size_t k = 0, sent = 0;

		for (long j = i; j < i + 8 && j < n_items; j++) {
			batch[k].id = j;
			batch[k].result = &results[j];
			k++;
		}
		while (sent < k) {
			size_t m = jp_mpmc_push_bulk(fan_q, batch + sent, k - sent);

			if (m == 0)
				jp_mpmc_push(fan_q, &batch[sent++], NULL);	/* wait for room */
			sent += m;
		}
	}
	return NULL;
}

static void *mpmc_consumer(void *arg)
{
	struct work batch[8];

	(void)arg;
	for (;;) {
		size_t k = jp_mpmc_pop_bulk(fan_q, batch, 8);

		if (k == 0) {
			if (jp_mpmc_pop(fan_q, &batch[0], NULL) != 0)
				return NULL;	/* closed and drained */
			k = 1;
		}
		for (size_t i = 0; i < k; i++) {
			*batch[i].result = batch[i].id + 1;
			atomic_fetch_add(&fan_sum, 1);
		}
	}
}

static int run_mpmc(void)
{
	pthread_t p[2], c[2];
	long *results = calloc(2 * (size_t)n_items, sizeof *results);

	fan_q = jp_mpmc_create(32, sizeof(struct work));
	for (int i = 0; i < 2; i++)
		start(&c[i], mpmc_consumer, NULL);
	for (int i = 0; i < 2; i++)
		start(&p[i], mpmc_producer, results + i * n_items);
	for (int i = 0; i < 2; i++)
		pthread_join(p[i], NULL);
	jp_mpmc_close(fan_q);
	for (int i = 0; i < 2; i++)
		pthread_join(c[i], NULL);
	for (long i = 0; i < 2 * n_items; i++)
		if (results[i] != i % n_items + 1)
			return fail("mpmc: a result is missing");
	free(results);
	jp_mpmc_destroy(fan_q);
	return atomic_load(&fan_sum) == 2 * n_items ? 0 : fail("mpmc: wrong count");
}

/* ---- pool: objects handed to another thread and put back there ------------ */

static jp_pool_t *obj_pool;
static jp_mpmc_t *hand_q;

static void *pool_user(void *arg)
{
	long *obj;

	(void)arg;
	while (jp_mpmc_pop(hand_q, &obj, NULL) == 0) {
		if (obj[1] != obj[0] * 3)
			exit(fail("pool: wrong object contents"));
		obj[1] = -1;		/* written by this thread before the put */
		jp_pool_put(obj_pool, obj);
	}
	return NULL;
}

static int run_pool(void)
{
	pthread_t t;

	obj_pool = jp_pool_create(2 * sizeof(long), 64, JP_POOL_THREAD_CACHE);
	hand_q = jp_mpmc_create(16, sizeof(long *));
	start(&t, pool_user, NULL);
	for (long i = 0; i < n_items; i++) {
		long *obj;

		while ((obj = jp_pool_get(obj_pool)) == NULL)
			sched_yield();	/* all out: the user puts them back */
		obj[0] = i;		/* a reused object: the user wrote it last */
		obj[1] = 3 * i;
		jp_mpmc_push(hand_q, &obj, NULL);
	}
	jp_mpmc_close(hand_q);
	pthread_join(t, NULL);
	jp_mpmc_destroy(hand_q);
	jp_pool_destroy(obj_pool);
	return 0;
}

/* ---- arena: per-request arenas on short-lived threads ------------------- */

static void *arena_request(void *arg)
{
	long n = *(long *)arg;

	for (long r = 0; r < 20; r++) {
		jp_arena_t *a = jp_arena_local();
		long *v;

		if (a == NULL)
			exit(fail("arena: jp_arena_local failed"));
		v = jp_arena_alloc(a, (size_t)n * sizeof *v, 16);
		for (long i = 0; i < n; i++)
			v[i] = i + r;
		for (long i = 0; i < n; i++)
			if (v[i] != i + r)
				exit(fail("arena: wrong contents"));
		jp_arena_reset(a);
	}
	return NULL;
}

static int run_arena(void)
{
	long n = 256;

	for (int round = 0; round < 8; round++) {
		pthread_t t[2];

		for (int i = 0; i < 2; i++)
			start(&t[i], arena_request, &n);
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
	}
	return 0;
}

/* ---- epoch: a lock-free stack, popped nodes retired -------------------------- */

struct node {
	struct node *next;
	long value;
};

static jp_epoch_t *ep;
static _Atomic(struct node *) stack_top;
static _Atomic int readers_stop;

static void *epoch_reader(void *arg)
{
	long seen = 0;

	(void)arg;
	while (!atomic_load(&readers_stop)) {
		jp_epoch_enter(ep);
		struct node *first = atomic_load(&stack_top);

		RECEIVE(&stack_top);
		for (struct node *n = first; n != NULL; n = n->next)
			seen += n->value >= 0;
		jp_epoch_exit(ep);
		/*
		 * The reader spins until main is done: give main the CPU.
		 * Valgrind runs one thread at a time, and with its default
		 * lock a spinner could keep taking it back (drd once ran this
		 * program for 6 minutes); TSan loses no overlap by it.
		 */
		sched_yield();
	}
	return (void *)seen;
}

static int run_epoch(void)
{
	pthread_t t;

	ep = jp_epoch_create();
	start(&t, epoch_reader, NULL);
	for (long i = 0; i < n_items; i++) {
		struct node *n = malloc(sizeof *n), *top;

		n->value = i;
		n->next = atomic_load(&stack_top);
		PUBLISH(&stack_top);
		while (!atomic_compare_exchange_weak(&stack_top, &n->next, n))
			;
		if (i % 2 == 1) {
			/* Pop one and retire it: a reader may still look at it. */
			top = atomic_load(&stack_top);
			while (top != NULL && !atomic_compare_exchange_weak(&stack_top, &top, top->next))
				;
			if (top != NULL)
				jp_epoch_retire(ep, top, free);	/* readers may still see it */
		}
	}
	atomic_store(&readers_stop, 1);
	pthread_join(t, NULL);
	jp_epoch_barrier(ep);
	for (struct node *n = atomic_load(&stack_top), *next; n != NULL; n = next) {
		next = n->next;
		free(n);
	}
	jp_epoch_destroy(ep);
	return 0;
}

/* ---- wait: jp_wait / jp_notify guarding plain data --------------------------- */

static _Atomic unsigned char turn;	/* 0: main's, 1: the helper's */
static long shared_data;		/* plain: the turn orders it */

static void *wait_helper(void *arg)
{
	unsigned char zero = 0;

	(void)arg;
	for (long i = 0; i < n_items; i++) {
		/* jp_wait first, also when the turn has come already: valgrind's
		 * tools see its return ordered after the notify, but not the
		 * program's own atomic load. */
		do
			jp_wait(&turn, &zero, 1, NULL);
		while (atomic_load(&turn) == 0);
		shared_data += 1;
		atomic_store(&turn, 0);
		jp_notify_one(&turn);
	}
	return NULL;
}

static int run_wait(void)
{
	pthread_t t;
	unsigned char one = 1;

	start(&t, wait_helper, NULL);
	for (long i = 0; i < n_items; i++) {
		shared_data += 1;
		atomic_store(&turn, 1);
		jp_notify_one(&turn);
		do
			jp_wait(&turn, &one, 1, NULL);
		while (atomic_load(&turn) == 1);
	}
	pthread_join(t, NULL);
	return shared_data == 2 * n_items ? 0 : fail("wait: wrong count");
}

/* ---- rounds: what a round reads was written in the round before ------------ */

#define ROUND_THREADS 2
#define ROUND 10
static long round_slot[ROUND_THREADS][2];	/* plain: the rounds order them */
static _Atomic int round_bad;

static void round_body(void *ctx, unsigned thread, uint64_t iter)
{
	uint64_t r = iter / ROUND;

	(void)ctx;
	if (iter % ROUND != 0)
		return;
	/* Read the other's slot of the round before, write ours of this one. */
	if (r > 0 && round_slot[1 - thread][(r - 1) % 2] != (long)(r - 1))
		atomic_store(&round_bad, 1);
	round_slot[thread][r % 2] = (long)r;
}

static int run_rounds(void)
{
	if (jp_hammer_rounds(ROUND_THREADS, (uint64_t)n_items, ROUND, round_body, NULL) != 0)
		return fail("rounds: jp_hammer_rounds failed");
	return atomic_load(&round_bad) ? fail("rounds: a round began early") : 0;
}

/* ---- alloc: blocks freed on another thread and reused by a third ---------- */

static jp_mpmc_t *freed_q;

static void *alloc_freer(void *arg)
{
	long *b;

	(void)arg;
	while (jp_mpmc_pop(freed_q, &b, NULL) == 0) {
		if (b[0] != b[7])
			exit(fail("alloc: wrong block contents"));
		b[7] = 0;
		jp_free(b);
	}
	return NULL;
}

static void *alloc_reuser(void *arg)
{
	(void)arg;
	for (long i = 0; i < n_items; i++) {
		long *b = jp_alloc(8 * sizeof *b);	/* perhaps one freed by the freer */

		for (int k = 0; k < 8; k++)
			b[k] = -i;
		jp_free(b);
	}
	return NULL;
}

static int run_alloc(void)
{
	pthread_t f, u;

	freed_q = jp_mpmc_create(64, sizeof(long *));
	start(&f, alloc_freer, NULL);
	start(&u, alloc_reuser, NULL);
	for (long i = 0; i < n_items; i++) {
		long *b = jp_alloc(8 * sizeof *b);

		for (int k = 0; k < 8; k++)
			b[k] = i;
		jp_mpmc_push(freed_q, &b, NULL);
	}
	jp_mpmc_close(freed_q);
	pthread_join(f, NULL);
	pthread_join(u, NULL);
	jp_thread_flush();
	jp_mpmc_destroy(freed_q);
	return 0;
}

/* ---- heap-reuse: a thread's cache handed to a later thread ---------------- */

/*
 * The first thread tells the second its kernel thread id through a pipe,
 * and the second waits until /proc no longer lists that thread: all
 * through raw system calls, because ThreadSanitizer orders the calls of
 * its read, write and open interceptors on a file descriptor, which would
 * hide the very hand-off this program is about.
 */
static int reuse_pipe[2];

static void *reuse_first(void *arg)
{
	long tid = syscall(SYS_gettid);

	(void)arg;
	for (long i = 0; i < n_items; i++)
		jp_free(jp_alloc((size_t)(16 + i % 200)));
	if (syscall(SYS_write, reuse_pipe[1], &tid, sizeof tid) != sizeof tid)
		exit(fail("heap-reuse: write to the pipe failed"));
	return NULL;		/* its cache goes back to the allocator */
}

static void *reuse_second(void *arg)
{
	struct timespec ms = { 0, 1000000 };
	char path[64];
	long tid, fd;
	int i;

	(void)arg;
	if (syscall(SYS_read, reuse_pipe[0], &tid, sizeof tid) != sizeof tid)
		exit(fail("heap-reuse: read from the pipe failed"));
	snprintf(path, sizeof path, "/proc/self/task/%ld", tid);
	for (i = 0; i < 10000; i++) {	/* 10 s at most */
		fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_DIRECTORY);
		if (fd < 0)
			break;
		syscall(SYS_close, fd);
		nanosleep(&ms, NULL);
	}
	if (i == 10000)
		exit(fail("heap-reuse: the first thread did not exit"));
	for (long k = 0; k < n_items; k++) {
		char *b = jp_alloc((size_t)(16 + k % 200));

		memset(b, 1, 16);
		jp_free(b);
	}
	return NULL;
}

static int run_heap_reuse(void)
{
	pthread_t a, b;

	if (pipe(reuse_pipe) != 0)
		return fail("heap-reuse: pipe failed");
	start(&a, reuse_first, NULL);
	start(&b, reuse_second, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}

/* ---- the racy ones ------------------------------------------------------------ */

static long racy;

static void racy_body(void *ctx, unsigned thread, uint64_t iter)
{
	(void)ctx; (void)thread; (void)iter;
	racy++;			/* the data race */
}

static int run_racy_counter(void)
{
	jp_hammer_rounds(2, (uint64_t)n_items, 10, racy_body, NULL);
	return 0;
}

static jp_mpsc_t *racy_q;

static void *racy_consumer(void *arg)
{
	long *m;
	long sum = 0;

	(void)arg;
	while (jp_mpsc_pop(racy_q, &m, NULL) == 0)
		sum += m[0];	/* races with the producer's late write */
	return (void *)sum;
}

static int run_racy_queue(void)
{
	pthread_t t;
	long *msgs = calloc((size_t)n_items, sizeof *msgs);

	racy_q = jp_mpsc_create(8, sizeof(long *));
	start(&t, racy_consumer, NULL);
	for (long i = 0; i < n_items; i++) {
		long *m = &msgs[i];

		jp_mpsc_push(racy_q, &m, NULL);
		msgs[i] = i;	/* the bug: written after it was handed over */
	}
	jp_mpsc_close(racy_q);
	pthread_join(t, NULL);
	free(msgs);
	jp_mpsc_destroy(racy_q);
	return 0;
}

static long *racy_block;

static void *racy_writer(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100; i++)
		racy_block[i % 8] = i;	/* races with main's writes */
	return NULL;
}

static int run_racy_alloc(void)
{
	pthread_t t;

	racy_block = jp_alloc(8 * sizeof *racy_block);
	start(&t, racy_writer, NULL);
	for (int i = 0; i < 100; i++)
		racy_block[i % 8] = -i;
	pthread_join(t, NULL);
	jp_free(racy_block);
	return 0;
}

static const struct {
	const char *name;
	int (*run)(void);
} programs[] = {
	{ "workqueue", run_workqueue }, { "spsc", run_spsc }, { "mpsc", run_mpsc },
	{ "mpmc", run_mpmc }, { "pool", run_pool }, { "arena", run_arena },
	{ "epoch", run_epoch }, { "wait", run_wait }, { "rounds", run_rounds },
	{ "alloc", run_alloc }, { "heap-reuse", run_heap_reuse },
	{ "racy-counter", run_racy_counter },
	{ "racy-queue", run_racy_queue }, { "racy-alloc", run_racy_alloc },
};

int main(int argc, char **argv)
{
	if (argc > 2)
		n_items = atol(argv[2]);
	if (argc < 2 || n_items <= 0) {
		fprintf(stderr, "usage: race-programs NAME [N]\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof programs / sizeof programs[0]; i++)
		if (strcmp(argv[1], programs[i].name) == 0)
			return programs[i].run();
	fprintf(stderr, "race-programs: no program %s\n", argv[1]);
	return 2;
}
