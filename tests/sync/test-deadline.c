/*
 * test-deadline.c - every timed call of the library and its deadline: a
 * negative tv_sec or any past deadline allows one attempt and is otherwise
 * ETIMEDOUT at once, a tv_nsec out of range is EINVAL, a signal neither
 * ends a wait early nor late, a deadline far in the future still wakes.
 *
 * The timed calls: jp_{spsc,mpsc,mpmc}_{push,pop}, jp_wait (1-, 4- and
 * 8-byte objects), jp_mutex_timedlock, jp_cond_timedwait,
 * jp_rwlock_timed{rd,wr}lock and jp_sem_timedwait, each behind one table
 * (struct timed) so that every case runs on each.
 */
#define _GNU_SOURCE
#include <jpsync/mutex.h>
#include <jpsync/queue.h>
#include <jpsync/rwlock.h>
#include <jpsync/sem.h>
#include <jpsync/wait.h>

#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- the objects ---------------------------------------------------------- */

/*
 * An object of one timed call.  block() puts it where the call must wait
 * (an empty queue for a pop, a full one for a push, a held mutex, a value
 * equal to the expected one), release() - from another thread - makes the
 * waiting call succeed, ready() puts it where the call succeeds at once.
 * call() may run on another thread than the test's: it asserts nothing
 * (CUnit is not thread-safe) and returns what it found.
 */
struct obj {
	void *q;
	jp_mutex_t m;
	jp_cond_t c;
	jp_rwlock_t rw;
	bool rw_hold_write;	/* the rwlock holder writes (else it reads) */
	jp_sem_t js;
	_Alignas(8) unsigned char val[8];
	/* The mutex case: a thread that holds m until released. */
	pthread_t holder;
	sem_t hold, unhold;
	bool held;
};

struct timed {
	const char *name;
	int (*call)(struct obj *o, const struct timespec *d);
	void (*make)(struct obj *o);
	void (*block)(struct obj *o);
	void (*release)(struct obj *o);		/* from another thread */
	void (*ready)(struct obj *o);		/* NULL: no call succeeds at once */
	void (*destroy)(struct obj *o);
};

static const long one = 1;

#define JP_ARRAY_SIZE_T(a) (sizeof(a) / sizeof((a)[0]))

/* Queues: capacity 1, long elements. */
#define QUEUE(k) \
static void k##_make(struct obj *o) { o->q = jp_##k##_create(1, sizeof(long)); } \
static void k##_destroy(struct obj *o) { jp_##k##_destroy(o->q); } \
static void k##_drain(struct obj *o) { long v; while (jp_##k##_try_pop(o->q, &v) == 0) ; } \
static void k##_fill(struct obj *o) { k##_drain(o); CU_ASSERT(jp_##k##_try_push(o->q, &one) == 0); } \
static int k##_pop(struct obj *o, const struct timespec *d) { long v = 0; int r = jp_##k##_pop(o->q, &v, d); \
	return r == 0 && v != one ? -2 : r; } \
static int k##_push(struct obj *o, const struct timespec *d) { return jp_##k##_push(o->q, &one, d); } \
static void k##_pop_release(struct obj *o) { long v; CU_ASSERT(jp_##k##_pop(o->q, &v, NULL) == 0); } \
static void k##_push_release(struct obj *o) { CU_ASSERT(jp_##k##_push(o->q, &one, NULL) == 0); }
QUEUE(spsc)
QUEUE(mpsc)
QUEUE(mpmc)

/* jp_wait on an object of 1, 4 or 8 bytes; blocked while it is 0. */
#define WAIT(n, T) \
static int wait##n(struct obj *o, const struct timespec *d) { T zero = 0; \
	return jp_wait(o->val, &zero, n, d); } \
static void wait##n##_block(struct obj *o) { __atomic_store_n((T *)(void *)o->val, 0, __ATOMIC_SEQ_CST); } \
static void wait##n##_ready(struct obj *o) { __atomic_store_n((T *)(void *)o->val, 1, __ATOMIC_SEQ_CST); } \
static void wait##n##_release(struct obj *o) { wait##n##_ready(o); jp_notify_all(o->val); }
WAIT(1, uint8_t)
WAIT(4, uint32_t)
WAIT(8, uint64_t)

static void nothing(struct obj *o) { (void)o; }

/* The mutex: held by a thread of its own, so that release() can unlock it
 * from the thread that locked it. */
static void *holder_main(void *arg)
{
	struct obj *o = arg;

	jp_mutex_lock(&o->m);
	sem_post(&o->hold);
	while (sem_wait(&o->unhold) != 0)
		;
	jp_mutex_unlock(&o->m);
	return NULL;
}

static void mutex_make(struct obj *o)
{
	jp_mutex_init(&o->m);
	sem_init(&o->hold, 0, 0);
	sem_init(&o->unhold, 0, 0);
	o->held = false;
}

static void mutex_release(struct obj *o)
{
	if (o->held) {
		sem_post(&o->unhold);
		pthread_join(o->holder, NULL);
		o->held = false;
	}
}

static void mutex_block(struct obj *o)
{
	mutex_release(o);
	CU_ASSERT_FATAL(pthread_create(&o->holder, NULL, holder_main, o) == 0);
	while (sem_wait(&o->hold) != 0)
		;
	o->held = true;
}

static void mutex_destroy(struct obj *o)
{
	mutex_release(o);
	jp_mutex_destroy(&o->m);
	sem_destroy(&o->hold);
	sem_destroy(&o->unhold);
}

static int mutex_call(struct obj *o, const struct timespec *d)
{
	int r = jp_mutex_timedlock(&o->m, d);

	if (r == 0)
		jp_mutex_unlock(&o->m);
	return r;
}

/* The condition variable: always blocks; a signal releases it. */
static void cond_make(struct obj *o)
{
	jp_mutex_init(&o->m);
	jp_cond_init(&o->c);
	o->val[0] = 0;
}

static void cond_destroy(struct obj *o)
{
	jp_cond_destroy(&o->c);
	jp_mutex_destroy(&o->m);
}

static void cond_block(struct obj *o)
{
	jp_mutex_lock(&o->m);
	o->val[0] = 0;
	jp_mutex_unlock(&o->m);
}

static void cond_release(struct obj *o)
{
	jp_mutex_lock(&o->m);
	o->val[0] = 1;
	jp_cond_broadcast(&o->c);
	jp_mutex_unlock(&o->m);
}

/*
 * One timed wait for the predicate val[0] != 0: 0 when it holds after the
 * wait, else what timedwait returned, or -1 for a return with neither the
 * predicate nor ETIMEDOUT (nobody else signals this condition variable, so
 * a wait that returns 0 without the predicate ended early).
 */
static int cond_call(struct obj *o, const struct timespec *d)
{
	int r;

	jp_mutex_lock(&o->m);
	r = o->val[0] != 0 ? 0 : jp_cond_timedwait(&o->c, &o->m, d);
	if (o->val[0] != 0)
		r = 0;
	else if (r == 0)
		r = -1;
	jp_mutex_unlock(&o->m);
	return r;
}

/* The rwlock: held by a thread of its own for writing (blocks a timed
 * reader) or for reading (blocks a timed writer); released as the mutex. */
static void *rw_holder_main(void *arg)
{
	struct obj *o = arg;

	if (o->rw_hold_write)
		jp_rwlock_wrlock(&o->rw);
	else
		jp_rwlock_rdlock(&o->rw);
	sem_post(&o->hold);
	while (sem_wait(&o->unhold) != 0)
		;
	jp_rwlock_unlock(&o->rw);
	return NULL;
}

static void rw_make(struct obj *o, bool hold_write)
{
	jp_rwlock_init(&o->rw);
	o->rw_hold_write = hold_write;
	sem_init(&o->hold, 0, 0);
	sem_init(&o->unhold, 0, 0);
	o->held = false;
}

static void rwr_make(struct obj *o) { rw_make(o, true); }
static void rww_make(struct obj *o) { rw_make(o, false); }

static void rw_block(struct obj *o)
{
	mutex_release(o);
	CU_ASSERT_FATAL(pthread_create(&o->holder, NULL, rw_holder_main, o) == 0);
	while (sem_wait(&o->hold) != 0)
		;
	o->held = true;
}

static void rw_destroy(struct obj *o)
{
	mutex_release(o);
	jp_rwlock_destroy(&o->rw);
	sem_destroy(&o->hold);
	sem_destroy(&o->unhold);
}

static int rwr_call(struct obj *o, const struct timespec *d)
{
	int r = jp_rwlock_timedrdlock(&o->rw, d);

	if (r == 0)
		jp_rwlock_unlock(&o->rw);
	return r;
}

static int rww_call(struct obj *o, const struct timespec *d)
{
	int r = jp_rwlock_timedwrlock(&o->rw, d);

	if (r == 0)
		jp_rwlock_unlock(&o->rw);
	return r;
}

/* The semaphore: blocked at 0; a post releases it. */
static void sem_make(struct obj *o) { CU_ASSERT(jp_sem_init(&o->js, 0) == 0); }
static void sem_block(struct obj *o) { while (jp_sem_trywait(&o->js) == 0) ; }
static void sem_release(struct obj *o) { CU_ASSERT(jp_sem_post(&o->js) == 0); }
static void sem_ready(struct obj *o) { sem_block(o); sem_release(o); }
static void sem_done(struct obj *o) { jp_sem_destroy(&o->js); }
static int sem_call(struct obj *o, const struct timespec *d) { return jp_sem_timedwait(&o->js, d); }

static const struct timed calls[] = {
	{ "jp_spsc_pop", spsc_pop, spsc_make, spsc_drain, spsc_push_release, spsc_fill, spsc_destroy },
	{ "jp_spsc_push", spsc_push, spsc_make, spsc_fill, spsc_pop_release, spsc_drain, spsc_destroy },
	{ "jp_mpsc_pop", mpsc_pop, mpsc_make, mpsc_drain, mpsc_push_release, mpsc_fill, mpsc_destroy },
	{ "jp_mpsc_push", mpsc_push, mpsc_make, mpsc_fill, mpsc_pop_release, mpsc_drain, mpsc_destroy },
	{ "jp_mpmc_pop", mpmc_pop, mpmc_make, mpmc_drain, mpmc_push_release, mpmc_fill, mpmc_destroy },
	{ "jp_mpmc_push", mpmc_push, mpmc_make, mpmc_fill, mpmc_pop_release, mpmc_drain, mpmc_destroy },
	{ "jp_wait (1 byte)", wait1, nothing, wait1_block, wait1_release, wait1_ready, nothing },
	{ "jp_wait (4 bytes)", wait4, nothing, wait4_block, wait4_release, wait4_ready, nothing },
	{ "jp_wait (8 bytes)", wait8, nothing, wait8_block, wait8_release, wait8_ready, nothing },
	{ "jp_mutex_timedlock", mutex_call, mutex_make, mutex_block, mutex_release, mutex_release,
	  mutex_destroy },
	{ "jp_cond_timedwait", cond_call, cond_make, cond_block, cond_release, NULL, cond_destroy },
	{ "jp_rwlock_timedrdlock", rwr_call, rwr_make, rw_block, mutex_release, mutex_release,
	  rw_destroy },
	{ "jp_rwlock_timedwrlock", rww_call, rww_make, rw_block, mutex_release, mutex_release,
	  rw_destroy },
	{ "jp_sem_timedwait", sem_call, sem_make, sem_block, sem_release, sem_ready, sem_done },
};
#define NCALLS (sizeof calls / sizeof calls[0])

static struct obj the_obj;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const struct timespec negative[] = {
	{ -1, 0 }, { -1, 999999999 }, { -1000000, 500 },
	{ (time_t)((sizeof(time_t) == 8) ? INT64_MIN : INT32_MIN), 0 },
};

/* ---- negative and past deadlines ------------------------------------------ */

/* In a child (the old futex layer aborted): exit 0 when every negative
 * deadline gives ETIMEDOUT on a blocked object, else the index + 10. */
static void negative_child(void *arg)
{
	const struct timed *t = arg;
	struct obj *o = &the_obj;

	memset(o, 0, sizeof *o);
	t->make(o);
	t->block(o);
	for (size_t i = 0; i < JP_ARRAY_SIZE_T(negative); i++)
		if (t->call(o, &negative[i]) != ETIMEDOUT)
			_exit(10 + (int)i);
	t->release(o);
	t->destroy(o);
	_exit(0);
}

static void test_negative_deadline(void)
{
	for (size_t k = 0; k < NCALLS; k++) {
		struct jp_child_result r;

		CU_ASSERT_EQUAL_FATAL(jp_test_child(negative_child, (void *)&calls[k], &r), 0);
		if (!r.exited || r.status != 0)
			printf("\n  %s with a negative tv_sec: %s %d: %s", calls[k].name,
			       r.exited ? "exit" : "signal", r.exited ? r.status : r.sig, r.err);
		CU_ASSERT(r.exited && r.status == 0);
	}
}

/* A past deadline on an object ready at once: the one attempt succeeds. */
static void test_past_deadline_one_attempt(void)
{
	struct obj *o = &the_obj;

	for (size_t k = 0; k < NCALLS; k++) {
		const struct timed *t = &calls[k];
		struct timespec past;

		if (t->ready == NULL)
			continue;	/* a condition variable always waits */
		memset(o, 0, sizeof *o);
		t->make(o);
		t->ready(o);
		for (size_t i = 0; i < JP_ARRAY_SIZE_T(negative); i++) {
			CU_ASSERT_EQUAL(t->call(o, &negative[i]), 0);
			t->ready(o);
		}
		clock_gettime(CLOCK_MONOTONIC, &past);
		past.tv_sec -= 1;
		CU_ASSERT_EQUAL(t->call(o, &past), 0);
		t->destroy(o);
	}
}

/*
 * "At once": no spin and no yield before the clock is read.  The test and
 * a thread that never sleeps share one CPU, so a yield costs a slice of
 * the busy thread (milliseconds); every call must return well within one
 * (the best of five tries, against one other program's preemption).
 */
static _Atomic int busy_stop;

static void *busy_main(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&busy_stop, memory_order_relaxed))
		;
	return NULL;
}

static void test_past_deadline_at_once(void)
{
	cpu_set_t old, one_cpu;
	pthread_t busy;
	int cpu = -1;
	struct obj *o = &the_obj;

	CU_ASSERT_FATAL(sched_getaffinity(0, sizeof old, &old) == 0);
	for (int i = 0; i < CPU_SETSIZE && cpu < 0; i++)
		if (CPU_ISSET(i, &old))
			cpu = i;
	CPU_ZERO(&one_cpu);
	CPU_SET(cpu, &one_cpu);
	CU_ASSERT_FATAL(sched_setaffinity(0, sizeof one_cpu, &one_cpu) == 0);
	atomic_store(&busy_stop, 0);
	CU_ASSERT_FATAL(pthread_create(&busy, NULL, busy_main, NULL) == 0);
	usleep(20000);		/* the busy thread is running */
	for (size_t k = 0; k < NCALLS; k++) {
		const struct timed *t = &calls[k];
		double best = 1e9;

		memset(o, 0, sizeof *o);
		t->make(o);
		t->block(o);
		for (int rep = 0; rep < 5; rep++) {
			struct timespec past;
			double t0;
			int r;

			clock_gettime(CLOCK_MONOTONIC, &past);
			past.tv_nsec = 0;
			t0 = now_s();
			r = t->call(o, &past);
			t0 = now_s() - t0;
			CU_ASSERT_EQUAL(r, ETIMEDOUT);
			if (t0 < best)
				best = t0;
		}
		printf("\n  %-20s past deadline: ETIMEDOUT in %.1f us (best of 5)",
		       t->name, best * 1e6);
		CU_ASSERT(best < 0.0005);
		if (k + 1 == NCALLS)
			printf("\n");
		t->release(o);
		t->destroy(o);
	}
	atomic_store(&busy_stop, 1);
	pthread_join(busy, NULL);
	sched_setaffinity(0, sizeof old, &old);
}

/* ---- malformed deadlines ---------------------------------------------- */

static void test_bad_nsec(void)
{
	static const struct timespec bad[] = {
		{ 0, -1 }, { 0, 1000000000 }, { 1, LONG_MAX }, { -1, -1 }, { 0, LONG_MIN },
	};
	struct obj *o = &the_obj;

	for (size_t k = 0; k < NCALLS; k++) {
		const struct timed *t = &calls[k];

		memset(o, 0, sizeof *o);
		t->make(o);
		/* Blocked, and (where it can be) ready: EINVAL either way, and
		 * nothing taken. */
		t->block(o);
		for (size_t i = 0; i < JP_ARRAY_SIZE_T(bad); i++)
			CU_ASSERT_EQUAL(t->call(o, &bad[i]), EINVAL);
		t->release(o);
		if (t->ready != NULL) {
			t->ready(o);
			for (size_t i = 0; i < JP_ARRAY_SIZE_T(bad); i++)
				CU_ASSERT_EQUAL(t->call(o, &bad[i]), EINVAL);
			/* still there: one attempt (a past deadline) succeeds */
			CU_ASSERT_EQUAL(t->call(o, &negative[0]), 0);
		}
		t->destroy(o);
	}
}

/* ---- signals --------------------------------------------------------------- */

static _Atomic unsigned signals_seen;

static void on_signal(int sig)
{
	(void)sig;
	atomic_fetch_add_explicit(&signals_seen, 1, memory_order_relaxed);
}

struct caller {
	const struct timed *t;
	struct obj *o;
	const struct timespec *deadline;
	_Atomic int running, done;
	int result;
	double returned;		/* when the call returned */
};

static void *caller_main(void *arg)
{
	struct caller *c = arg;

	atomic_store(&c->running, 1);
	c->result = c->t->call(c->o, c->deadline);
	c->returned = now_s();
	atomic_store(&c->done, 1);
	return NULL;
}

/* Make t's object, block it, and start a thread that calls t on it. */
static void caller_start(struct caller *c, const struct timed *t,
			 const struct timespec *deadline, pthread_t *th)
{
	memset(&the_obj, 0, sizeof the_obj);
	memset(c, 0, sizeof *c);
	t->make(&the_obj);
	t->block(&the_obj);
	c->t = t;
	c->o = &the_obj;
	c->deadline = deadline;
	CU_ASSERT_FATAL(pthread_create(th, NULL, caller_main, c) == 0);
}

/*
 * The caller waits (timed: 150 ms, 400 ms under valgrind; or untimed) while another thread sends
 * it a signal every 2 ms through a handler without SA_RESTART.  A timed
 * call returns ETIMEDOUT, not before its deadline and not a second after;
 * an untimed one returns only after release().
 */
static void signal_storm(const struct timed *t, bool timed)
{
	struct sigaction sa, old;
	struct timespec d;
	struct caller c;
	pthread_t th;
	double start, released = 0;
	/* Longer under valgrind, which runs one thread at a time. */
	const long wait_ms = jp_test_on_valgrind() ? 400 : 150;
	/* In whole milliseconds first: on i386's x87, (long)(0.15 * 1000)
	 * is 149, and the waits were asked for 149 ms. */
	const double wait_s = wait_ms / 1e3;
	unsigned sent = 0;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;	/* no SA_RESTART: the futex sees EINTR */
	sigemptyset(&sa.sa_mask);
	CU_ASSERT_FATAL(sigaction(SIGUSR1, &sa, &old) == 0);
	atomic_store(&signals_seen, 0);
	start = now_s();
	jp_test_deadline_ms(&d, wait_ms);
	caller_start(&c, t, timed ? &d : NULL, &th);
	while (!atomic_load(&c.running))
		usleep(100);
	while (!atomic_load(&c.done) && now_s() - start < wait_s + 1.0 + (timed ? 0 : 5.0)) {
		if (pthread_kill(th, SIGUSR1) == 0)
			sent++;
		usleep(2000);
		if (!timed && released == 0 && now_s() - start >= wait_s && sent >= 10) {
			released = now_s();
			t->release(&the_obj);
		}
	}
	if (!atomic_load(&c.done)) {
		/* Still waiting a second after its deadline: late. */
		CU_FAIL("the call did not return a second after its deadline");
		t->release(&the_obj);
	}
	pthread_join(th, NULL);
	if (timed) {
		if (c.result != ETIMEDOUT || c.returned - start < wait_s)
			printf("\n  %s: returned %d after %.1f ms of a %.0f ms deadline, %u signals",
			       t->name, c.result, (c.returned - start) * 1e3, wait_s * 1e3,
			       atomic_load(&signals_seen));
		CU_ASSERT_EQUAL(c.result, ETIMEDOUT);
		CU_ASSERT(c.returned - start >= wait_s);
		t->release(&the_obj);
	} else {
		if (c.result != 0 || c.returned < released)
			printf("\n  %s (no deadline): returned %d before it was released",
			       t->name, c.result);
		CU_ASSERT_EQUAL(c.result, 0);
		CU_ASSERT(released > 0 && c.returned >= released);
	}
	/* Signals sent while the waiter is not running collapse into one, so
	 * fewer are seen than sent; ThreadSanitizer runs the handler late,
	 * outside the wait (the signal still interrupts it, through TSan's
	 * own handler). */
	CU_ASSERT(timed ? sent >= 2 : sent >= 10);	/* a loaded machine sends fewer */
	if (!jp_test_sanitized())
		CU_ASSERT(atomic_load(&signals_seen) > 0);
	t->destroy(&the_obj);
	sigaction(SIGUSR1, &old, NULL);
}

static void test_signals_timed(void)
{
	for (size_t k = 0; k < NCALLS; k++)
		signal_storm(&calls[k], true);
}

static void test_signals_untimed(void)
{
	for (size_t k = 0; k < NCALLS; k++)
		signal_storm(&calls[k], false);
}

/* ---- far deadlines ----------------------------------------------------- */

/* The largest deadline there is still waits, and is woken. */
static void test_far_deadline(void)
{
	struct timespec far;

	far.tv_sec = (time_t)((sizeof(time_t) == 8) ? INT64_MAX : INT32_MAX);
	far.tv_nsec = 999999999;
	for (size_t k = 0; k < NCALLS; k++) {
		const struct timed *t = &calls[k];
		struct caller c;
		pthread_t th;

		caller_start(&c, t, &far, &th);
		usleep(20000);
		CU_ASSERT_EQUAL(atomic_load(&c.done), 0);	/* still waiting */
		t->release(&the_obj);
		pthread_join(th, NULL);
		CU_ASSERT_EQUAL(c.result, 0);
		t->destroy(&the_obj);
	}
}

int main(void)
{
	CU_TestInfo tests[] = {
		{ "negative tv_sec: ETIMEDOUT, no abort", test_negative_deadline },
		{ "past deadline, object ready: the one attempt succeeds",
		  test_past_deadline_one_attempt },
		{ "past deadline: ETIMEDOUT before any spin or yield", test_past_deadline_at_once },
		{ "tv_nsec out of range: EINVAL, nothing taken", test_bad_nsec },
		{ "signals end no timed wait early or late", test_signals_timed },
		{ "signals end no untimed wait", test_signals_untimed },
		{ "the largest deadline waits and is woken", test_far_deadline },
		CU_TEST_INFO_NULL,
	};
	CU_SuiteInfo suites[] = {
		{ "deadlines of every timed call", NULL, NULL, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};

	if (jp_test_on_valgrind())
		jp_test_unregister(tests, test_past_deadline_at_once,
				   "valgrind: it runs one thread at a time, the timing means nothing");
	return jp_test_run(suites);
}
